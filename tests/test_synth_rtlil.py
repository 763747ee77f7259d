"""MR-FLOW-048: `metaroce synth` gives Yosys Amaranth's RTLIL (`read_rtlil`), where it read the
Verilog: the same design (its memories' contents, a block's figures), its own cache entries;
MR-FLOW-049: the whole engine at 4,096 x 8 as a block."""
import json
import subprocess

import pytest
from amaranth.hdl import Module, Signal
from amaranth.lib import memory

from metaroce.sim import synth
from metaroce.sim.verilator import generate_rtlil, generate_verilog

#: a pseudo-random row pattern (a 24-bit multiplicative hash of the row number)
ROWS = [(i * 2654435761) & 0xFFFFFF for i in range(512)]


def _mem_design(rows=ROWS):
    """A zero RAM, a nonzero ROM and a nonzero RAM (512 x 24, written back), each read
    synchronously: the memory kinds the synthesis text carries."""
    m = Module()
    zero = memory.Memory(shape=12, depth=64, init=[])
    table = memory.Memory(shape=8, depth=4, init=[0, 5, 0, 0])
    big = memory.Memory(shape=24, depth=512, init=rows)
    m.submodules.zero, m.submodules.table, m.submodules.big = zero, table, big
    addr, out = Signal(9), Signal(24)
    zr, tr, zw = zero.read_port(), table.read_port(), zero.write_port()
    br, bw = big.read_port(), big.write_port()
    m.d.comb += [zr.addr.eq(addr), tr.addr.eq(addr[:2]), zw.addr.eq(addr), zw.data.eq(addr),
                 zw.en.eq(addr[5]), br.addr.eq(addr), bw.addr.eq(addr + 1), bw.data.eq(br.data + 1),
                 bw.en.eq(addr[0]), out.eq(zr.data + tr.data + br.data)]
    return m, [addr, out]


def _texts(rows=ROWS):
    m, ports = _mem_design(rows)
    verilog, _ = synth.drop_zero_memory_init(generate_verilog(m, "top", ports=ports,
                                                              drop_zero_init=True))
    m, ports = _mem_design(rows)
    return verilog, generate_rtlil(m, "top", ports=ports, drop_zero_init=True)


def _memories(tmp_path, text, lang):
    """``{memid: (WIDTH, SIZE, INIT)}`` of the design as Yosys reads it with ``lang``'s reader
    (``proc; memory -nomap``: each memory one ``$mem_v2`` with its contents)."""
    (tmp_path / ("design.il" if lang == "rtlil" else "design.v")).write_text(text)
    script = "\n".join([*synth.READERS[lang].split("; "), "hierarchy -top top", "proc",
                        "opt_clean", "memory -nomap", "write_json mems.json"]) + "\n"
    (tmp_path / "mems.ys").write_text(script)
    subprocess.run([*synth.yosys_command(), "-q", "-s", "mems.ys"], cwd=tmp_path, check=True,
                   capture_output=True, timeout=600)
    cells = json.loads((tmp_path / "mems.json").read_text())["modules"]["top"]["cells"]
    out = {}
    for cell in cells.values():
        if cell["type"] == "$mem_v2":
            p = cell["parameters"]
            out[p["MEMID"].lstrip("\\")] = (int(p["WIDTH"], 2), int(p["SIZE"], 2), p["INIT"])
    return out


def test_rtlil_reader_same_memory_contents(tmp_path):
    """MR-FLOW-048: read as RTLIL, every memory has the contents and shape it has read as the
    synthesis Verilog (a nonzero ROM, a nonzero 512 x 24 RAM; the zero RAM no initial value
    either way, MR-FLOW-046); the negative control, one row changed, differs."""
    verilog, rtlil = _texts()
    (tmp_path / "v").mkdir(), (tmp_path / "il").mkdir(), (tmp_path / "bad").mkdir()
    by_verilog = _memories(tmp_path / "v", verilog, "verilog")
    by_rtlil = _memories(tmp_path / "il", rtlil, "rtlil")
    assert set(by_verilog) == set(by_rtlil) == {"zero", "table", "big"}
    for name in ("table", "big"):
        assert by_rtlil[name] == by_verilog[name]
    width, size, init = by_rtlil["big"]
    assert (width, size) == (24, 512) and int(init[-24:], 2) == ROWS[0] and int(init[:24], 2) == ROWS[-1]
    assert set(by_rtlil["zero"][2]) == set(by_verilog["zero"][2]) == {"x"}
    bad = list(ROWS)
    bad[300] ^= 1 << 7
    _, wrong = _texts(bad)
    assert _memories(tmp_path / "bad", wrong, "rtlil")["big"] != by_verilog["big"]


def test_synth_key_names_the_reader():
    """MR-FLOW-048: an RTLIL result has its own cache entry (the reader is in the key); a
    Verilog result keeps the entry it had (the key of the four fields as before)."""
    import hashlib
    text = "module m(input a, output b); assign b = a; endmodule"
    old = hashlib.sha256(json.dumps([synth._SCHEMA, text, synth.synth_script("m"),
                                     synth._package_version()]).encode()).hexdigest()[:20]
    assert synth.synth_key(text, "m") == f"m-{old}"
    assert synth.synth_key(text, "m", lang="rtlil") != synth.synth_key(text, "m")
    with pytest.raises(synth.SynthError, match="unknown design language"):
        synth.synth_key(text, "m", lang="vhdl")


def test_synth_figures_same_both_readers(monkeypatch, capsys):
    """MR-FLOW-048: `metaroce synth` of a small block (the toolchain smoke design: adders, a
    register) gives the same LUTs, flip-flops, block RAMs and LUT levels from the RTLIL as from
    the Verilog, and says which reader it used."""
    from metaroce import blocks
    from metaroce.cli import main
    monkeypatch.setitem(blocks.BLOCKS, "smoke", blocks.Block(
        name="smoke", component="metaroce.tb.smoke:SmokeAccumulator",
        model="metaroce.tb.smoke:SmokeAccumulator", tb="metaroce.tb.smoke", help="", widths=(8,)))
    outs = {}
    for reader in ("rtlil", "verilog"):
        assert main(["synth", "smoke", "--width", "8", "--json", "--reader", reader]) == 0
        outs[reader] = json.loads(capsys.readouterr().out)
    il, v = outs["rtlil"], outs["verilog"]
    assert (il["reader"], v["reader"]) == ("read_rtlil", "read_verilog")
    for k in ("luts", "ffs", "brams", "lutram", "dsps", "lut_levels", "lut_levels_paths"):
        assert il[k] == v[k], k
    assert il["luts"] > 0 and il["ffs"] > 0


def test_engine_4096x8_block():
    """MR-FLOW-049: the block engine_4096x8 is the whole engine with engine_rx's receive half
    (4,096 x 8, 1,024 keys, 8 streams) and the row scheduler's TX half, 16,384 records."""
    from metaroce import blocks
    from metaroce.hdl.engine import Engine
    from metaroce.models import records
    blk = blocks.get("engine_4096x8")
    eng = blk.make_component(512)
    assert isinstance(eng, Engine) and eng.rows and eng.tx.rows
    rx, tx = eng.rx_half.lay, eng.tx.lay
    assert (rx.conns, rx.paths, rx.keys, rx.streams) == (records.CONNS, records.PATHS, 1024, records.STREAMS)
    assert (tx.conns, tx.paths, eng.tx.rtx.lay.pool) == (4096, 8, 16384)


def test_pnr_reads_rtlil_on_request(monkeypatch):
    """MR-FLOW-048: `metaroce pnr --reader rtlil` gives nextpnr's Yosys the RTLIL, read with
    synth's reader, then the same mapping lines; the default stays the Verilog."""
    from metaroce import blocks
    from metaroce.commands import pnr as pnr_command
    from metaroce.sim import pnr
    il = pnr.synth_ecp5_script("parser", "rtlil").splitlines()
    v = pnr.synth_ecp5_script("parser").splitlines()
    assert il[:3] == ["read_rtlil design.il", "proc -nomux -norom", "memory_collect"]
    assert v[0] == "read_verilog -sv design.v" and il[3:] == v[1:]
    blk = blocks.Block(name="smoke", component="metaroce.tb.smoke:SmokeAccumulator",
                       model="metaroce.tb.smoke:SmokeAccumulator", tb="", help="", widths=(8,))
    seen = []

    def place_and_route(text, top, **kw):
        seen.append((kw["lang"], text.split("\n", 1)[0]))
        raise pnr.PnrError("stopped here")
    monkeypatch.setattr(pnr, "place_and_route", place_and_route)
    for reader in ("rtlil", "verilog"):
        with pytest.raises(Exception, match="stopped here"):
            pnr_command.report(blk, 8, reader=reader)
    (l1, t1), (l2, t2) = seen
    assert (l1, l2) == ("rtlil", "verilog")
    assert t1.startswith('attribute \\generator "Amaranth"') and t2.startswith("/* Generated by")
