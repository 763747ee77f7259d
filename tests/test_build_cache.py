"""tb/build.py's cache keys (docs/hw/verification.md): a cached Verilator build or Verilog text
is found from a digest of the sources elaboration reads, without elaborating; so that digest
must change with every source the design depends on, and the pair build's wrapper must be the
engine's ports twice (MR-ENG-138)."""
import re
import shutil
import sys

from metaroce import blocks
from metaroce.tb import build as tb_build


def _copy_roots(tmp_path):
    roots = {}
    for pkg, root in tb_build.fingerprint_roots().items():
        dst = tmp_path / pkg.replace(".", "_")
        dst.mkdir()
        for p in root.glob("*.py"):
            shutil.copy(p, dst / p.name)
        roots[pkg] = dst
    return roots


def test_fingerprint_changes_with_every_source(tmp_path):
    """A copy of the sources has the package's own fingerprint; appending one byte to any of
    them, adding a file or renaming one changes it."""
    roots = _copy_roots(tmp_path)
    base = tb_build.source_fingerprint(roots)
    assert base == tb_build.source_fingerprint()
    files = sorted(p for r in roots.values() for p in r.glob("*.py"))
    assert len(files) > 40
    seen = {base}
    for p in files:
        text = p.read_bytes()
        p.write_bytes(text + b"#")
        fp = tb_build.source_fingerprint(roots)
        assert fp not in seen, f"editing {p.name} left the fingerprint as it was"
        seen.add(fp)
        p.write_bytes(text)
    assert tb_build.source_fingerprint(roots) == base
    hdl = roots["metaroce.hdl"]
    (hdl / "new_block.py").write_text("X = 1\n")
    assert tb_build.source_fingerprint(roots) != base
    (hdl / "new_block.py").unlink()
    (hdl / "engine.py").rename(hdl / "engine2.py")
    assert tb_build.source_fingerprint(roots) != base


def test_fingerprint_covers_what_the_engine_imports():
    """Every ``metaroce`` module the engine's elaboration can import (its component's module and
    its model's, and what they import) lies in a fingerprinted folder, so no edit to them can
    leave a stale build or Verilog text in use."""
    import importlib
    from pathlib import Path
    blk = blocks.get("engine")
    for spec in (blk.component, blk.model):
        importlib.import_module(spec.split(":")[0])
    folders = {p.resolve() for p in tb_build.fingerprint_roots().values()}
    mods = [m for n, m in sys.modules.items() if n.startswith("metaroce") and getattr(m, "__file__", None)]
    assert any(n == "metaroce.hdl.tx_sched" for n in sys.modules)
    outside = [m.__name__ for m in mods if Path(m.__file__).resolve().parent not in folders
               and not m.__name__.startswith(("metaroce.tb", "metaroce.commands", "metaroce.benches"))]
    assert not outside, outside
    # the design packages must not import the testbenches, whose sources are not hashed
    for m in mods:
        if m.__name__.startswith(("metaroce.hdl", "metaroce.models")):
            src = Path(m.__file__).read_text()
            assert not re.search(r"^\s*(from|import)\s+(\.\.tb|metaroce\.tb)\b", src, re.M), m.__name__


def test_block_fingerprint_keys_name_width_and_outside_module(monkeypatch, tmp_path):
    """The block's key also changes with its width, its name, and (for a design outside the
    fingerprinted packages, such as the smoke design in ``metaroce.tb``) that module's source."""
    eng = blocks.get("engine")
    assert tb_build.block_fingerprint(eng, 64) != tb_build.block_fingerprint(eng, 512)
    smoke = blocks.Block(name="smoke", component="metaroce.tb.smoke:SmokeAccumulator",
                         model="metaroce.tb.smoke:SmokeAccumulator", tb="metaroce.tb.smoke",
                         help="", widths=(8,))
    assert tb_build.block_fingerprint(smoke, 8) != tb_build.block_fingerprint(eng, 8)
    import metaroce.tb.smoke as smoke_mod
    copy = tmp_path / "smoke.py"
    copy.write_bytes(open(smoke_mod.__file__, "rb").read())
    before = tb_build.block_fingerprint(smoke, 8)
    monkeypatch.setattr(smoke_mod, "__file__", str(copy))
    assert tb_build.block_fingerprint(smoke, 8) == before
    copy.write_text(copy.read_text() + "#\n")
    assert tb_build.block_fingerprint(smoke, 8) != before


def test_verilog_text_generated_once_per_fingerprint(monkeypatch, tmp_path):
    """The text is generated on a miss only; a source change (another fingerprint) generates
    it again."""
    from metaroce.sim import verilator as vl
    monkeypatch.setenv("METAROCE_BUILD_DIR", str(tmp_path / "sim_build"))
    smoke = blocks.Block(name="smoke", component="metaroce.tb.smoke:SmokeAccumulator",
                         model="metaroce.tb.smoke:SmokeAccumulator", tb="metaroce.tb.smoke",
                         help="", widths=(8,))
    calls = []
    real = vl.generate_verilog

    def counting(*a, **kw):
        calls.append(a[1])
        return real(*a, **kw)
    monkeypatch.setattr(vl, "generate_verilog", counting)
    t1 = tb_build.verilog_text(smoke, 8)
    assert tb_build.verilog_text(smoke, 8) == t1 and calls == ["smoke"]
    assert "module smoke(" in t1
    monkeypatch.setattr(tb_build, "_fingerprint", "another")
    assert tb_build.verilog_text(smoke, 8) == t1 and len(calls) == 2


def test_pair_wrapper_is_two_instances():
    """MR-ENG-138: the pair top has clk, rst and every port of the block twice (``h0__``,
    ``h1__``), each wired to its own instance; its ports are EnginePairModel's."""
    from metaroce.hdl.board_top import block_ports
    from metaroce.models.engine import EnginePairModel
    from metaroce.sim import verilator as vl
    ports = block_ports(blocks.get("engine").make_component(64))
    text = tb_build.pair_wrapper("engine", ports, "engine_pair")
    names = vl.top_ports([text], "engine_pair")
    model = EnginePairModel(64).port_names()
    assert sorted(names) == sorted(["clk", "rst", *model["inputs"], *model["outputs"]])
    for inst in ("h0", "h1"):
        m = re.search(rf"^  engine {inst} \((.*)\);$", text, re.M)
        conns = dict(re.findall(r"\.(\w+)\((\w+)\)", m.group(1)))
        assert conns == {"clk": "clk", "rst": "rst", **{n: f"{inst}__{n}" for n, _, _ in ports}}
    w = dict((n, w) for n, w, _ in ports)["m_axis__tdata"]
    assert f"output [{w - 1}:0] h1__m_axis__tdata;" in text
