"""tb/build.py's cache keys (docs/hw/verification.md): a cached Verilator build or Verilog text
is found from a digest of the sources elaboration reads, without elaborating; so that digest
must change with every source the design depends on, and the pair build's wrapper must be the
engine's ports twice (MR-ENG-138)."""
import re
import sys

from metaroce import blocks
from metaroce.tb import build as tb_build


SMOKE = blocks.Block(name="smoke", component="metaroce.tb.smoke:SmokeAccumulator",
                     model="metaroce.tb.smoke:SmokeAccumulator", tb="metaroce.tb.smoke",
                     help="toolchain smoke design", widths=(8,))


def test_fingerprint_changes_with_every_source(monkeypatch, tmp_path):
    """The key of the engine changes when any source in its import closure changes by one byte
    (each module's file swapped for a copy with a byte more), and with the width; the closure
    holds the TX and RX blocks and the models they take constants from."""
    import importlib
    blk = blocks.get("engine")
    closure = tb_build.import_closure("metaroce.hdl.engine")
    assert {"metaroce.hdl.tx_sched", "metaroce.hdl.retransmit", "metaroce.hdl.rx",
            "metaroce.models.protocol", "metaroce.models.engine", "metaroce.hdl"} <= set(closure)
    assert not any(".tb" in n or "cosim" in n or n.endswith("_cases") for n in closure)
    base = tb_build.block_fingerprint(blk, 64)
    seen = {base, tb_build.block_fingerprint(blk, 512)}
    assert len(seen) == 2
    for name in closure:
        mod = importlib.import_module(name)
        copy = tmp_path / (name + ".py")
        copy.write_bytes(open(mod.__file__, "rb").read() + b"#")
        with monkeypatch.context() as m:
            m.setattr(mod, "__file__", str(copy))
            fp = tb_build.block_fingerprint(blk, 64)
        assert fp not in seen, f"editing {name} left the key as it was"
        seen.add(fp)
    assert tb_build.block_fingerprint(blk, 64) == base


def test_import_closure_finds_every_import(tmp_path, monkeypatch):
    """Relative, absolute, submodule (``from . import x``) and function-level imports are
    followed; a module that is not imported is not in the closure."""
    pkg = tmp_path / "metaroce_fp"
    (pkg / "sub").mkdir(parents=True)
    for f, text in {"__init__.py": "", "a.py": "from . import b\nfrom .sub.c import X\n",
                    "b.py": "def f():\n    import metaroce_fp.d\n", "d.py": "",
                    "e.py": "", "sub/__init__.py": "", "sub/c.py": "from ..e import *\nX = 1\n",
                    "unused.py": ""}.items():
        (pkg / f).write_text(text)
    monkeypatch.syspath_prepend(str(tmp_path))
    assert "metaroce_fp".startswith(tb_build._OWN)      # followed as the project's own
    got = tb_build.import_closure("metaroce_fp.a")
    assert got == ["metaroce_fp", "metaroce_fp.a", "metaroce_fp.b", "metaroce_fp.d",
                   "metaroce_fp.e", "metaroce_fp.sub", "metaroce_fp.sub.c"]


def test_fingerprint_covers_what_elaboration_imports():
    """Every ``metaroce`` module loaded while a block is made and elaborated (a fresh process:
    ``dma_write``, small enough to elaborate here) is in the closure its key hashes."""
    import json
    import subprocess
    code = ("import json, sys; from amaranth.hdl import Fragment; "
            "from metaroce.hdl.dma_write import DmaWrite; Fragment.get(DmaWrite(64), None); "
            "print(json.dumps(sorted(n for n in sys.modules if n.startswith('metaroce'))))")
    loaded = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                       check=True).stdout)
    closure = tb_build.import_closure("metaroce.hdl.dma_write")
    assert "metaroce.hdl.dma_write" in loaded and set(loaded) <= set(closure), set(loaded) - set(closure)


def test_block_fingerprint_of_a_design_outside_the_packages(monkeypatch, tmp_path):
    """A design in ``metaroce.tb`` (the smoke design): its own source is hashed too."""
    import metaroce.tb.smoke as smoke_mod
    before = tb_build.block_fingerprint(SMOKE, 8)
    assert before != tb_build.block_fingerprint(blocks.get("engine"), 8)
    copy = tmp_path / "smoke.py"
    copy.write_text(open(smoke_mod.__file__).read() + "#\n")
    monkeypatch.setattr(smoke_mod, "__file__", str(copy))
    assert tb_build.block_fingerprint(SMOKE, 8) != before


def test_pair_build_is_one_verilator_build(monkeypatch, tmp_path):
    """MR-ENG-138: ``pair_build`` is ``verilator.build`` of the block's component (module
    ``smoke``) with the wrapper beside it (top ``smoke_pair``) and the pair's ``make`` variables
    in ``MAKEFLAGS`` while it builds; the next lookup (a fresh memo) finds it from the
    fingerprint without generating the Verilog; another fingerprint generates it again."""
    import os
    from pathlib import Path
    from metaroce.sim import verilator as vl
    monkeypatch.setenv("METAROCE_BUILD_DIR", str(tmp_path / "sim_build"))
    calls, gen = [], []

    class Runner:
        def build(self, **kw):
            calls.append({**kw, "MAKEFLAGS": os.environ.get("MAKEFLAGS", "")})
            (Path(kw["build_dir"]) / kw["hdl_toplevel"]).write_text("fake")
    monkeypatch.setattr(vl, "_get_runner", Runner)
    real = vl.generate_verilog

    def counting(*a, **kw):
        gen.append(a[1])
        return real(*a, **kw)
    monkeypatch.setattr(vl, "generate_verilog", counting)
    monkeypatch.setattr(tb_build, "_builds", {})
    b = tb_build.pair_build(SMOKE, 8)
    assert not b.cached and b.toplevel == "smoke_pair" and gen == ["smoke"]
    texts = [Path(p).read_text() for p in calls[0]["sources"]]
    assert "module smoke(" in texts[0] and "module smoke_pair(" in texts[1]
    assert calls[0]["hdl_toplevel"] == "smoke_pair"
    assert all(f in calls[0]["MAKEFLAGS"].split() for f in tb_build.PAIR_MAKEFLAGS)
    assert "OPT_SLOW=-O0" not in os.environ.get("MAKEFLAGS", "")      # restored after the build
    monkeypatch.setattr(tb_build, "_builds", {})
    again = tb_build.pair_build(SMOKE, 8)
    assert again.cached and again.build_dir == b.build_dir and gen == ["smoke"] and len(calls) == 1
    monkeypatch.setattr(tb_build, "_builds", {})
    monkeypatch.setattr(tb_build, "block_fingerprint", lambda blk, width: "another")
    third = tb_build.pair_build(SMOKE, 8)
    assert third.cached and third.build_dir == b.build_dir and gen == ["smoke", "smoke"]


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


def test_constant_slices_become_initial():
    """Yosys writes a constant slice of a combinational reg as an ``always @*`` that reads no
    variable, which Verilator never runs (the engine's ACK frames left with UDP port 0): the
    generator turns exactly those into ``initial``, other blocks stay."""
    from amaranth.hdl import Module, Signal
    from amaranth.lib import wiring
    from amaranth.lib.wiring import In, Out
    from metaroce.sim import verilator as vl

    class ConstSlice(wiring.Component):
        a: In(8)
        sel: In(1)
        y: Out(32)

        def elaborate(self, platform):
            m = Module()
            d, r = Signal(32, name="d"), Signal(32, name="r")
            m.d.comb += [d[0:8].eq(self.a), d[8:16].eq(0x12)]
            with m.If(self.sel):
                m.d.comb += d[16:24].eq(self.a)
            with m.Else():
                m.d.comb += d[24:32].eq(self.a)
            m.d.sync += r.eq(d)
            m.d.comb += self.y.eq(r)
            return m

    from amaranth.back import verilog
    raw = verilog.convert(ConstSlice(), name="cs", emit_src=False)
    assert re.search(r"always @\*\n\s*d\[15:8\] = 8'h12;", raw)       # what yosys writes
    text = vl.generate_verilog(ConstSlice(), "cs")
    assert "initial d[15:8] = 8'h12;" in text and not re.search(r"always @\*\n\s*d\[15:8\]", text)
    assert re.search(r"always @\*\n\s*d\[7:0\] = a;", text)
    assert vl.constant_always_to_initial(text) == text
    assert len(text.splitlines()) == len(raw.splitlines()) - 1
