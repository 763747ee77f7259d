"""The paced TX engine as a block of its own, ``tx_paced`` (docs/spec/hw-tx.md MR-TX-248..250):
its registration, its Verilator lockstep (tb/tx_paced.py, behind ``slow``: the engine's
Verilator build is long) and ``bench tx_paced`` (the model's rows in the default run, the
RTL's in the Amaranth simulator and under Verilator behind ``slow``). The Amaranth-simulator
lockstep and its negative control are tests/test_tx_top_pace.py's (MR-TX-236..239)."""
import os

import pytest

from metaroce import blocks
from metaroce.benches import tx_paced as bench
from metaroce.hdl.tx import Tx
from metaroce.hdl.tx_pace import PacedTxSched
from metaroce.models import pacer as pacer_model
from metaroce.models import protocol as P
from metaroce.models import tx_pace_cases as pc
from metaroce.models.driver import run_alone
from metaroce.models.tx import SMALL, TxCycleModel
from metaroce.tb.lockstep import flat_port_names

NS = 4          # the drivers' ns a cycle


def test_block_registered():
    """MR-TX-248: the block ``tx_paced``: the small instance with pacing (``Tx(pacing=True)``,
    the scheduler ``PacedTxSched``), its model ``TxCycleModel(pacing=True)`` with the RTL's
    ports, the testbench tb/tx_paced.py, the pacer's synthesis share, every width."""
    blk = blocks.get("tx_paced")
    assert blk.tb == "metaroce.tb.tx_paced" and blk.widths == (64, 128, 256, 512)
    assert blk.shares["pacer"] == r"^pacer$" and "tx_paced" in blocks.names()
    for width in (64, 512):
        dut, model = blk.make_component(width), blk.make_model(width)
        assert isinstance(dut, Tx) and dut.pacing and isinstance(dut.sched, PacedTxSched)
        assert dut.width == width and model.pacing and model.width == width
        names = model.port_names()
        assert flat_port_names(dut.signature) == set(names["inputs"]) | set(names["outputs"])
        assert {"s_pace_write__valid", "mtu_wl", "line_mbps"} <= set(names["inputs"])
    assert not blocks.get("tx").make_component(64).pacing          # tx stays unpaced


def _model_rows(rates, packets=4, wr_bytes=None, **model_kw):
    rows = []
    for rate in rates:
        model = TxCycleModel(64, **SMALL, pacing=True, **model_kw)
        drv = bench.driver(model.lay, 64, packets, rate, wr_bytes)
        run_alone(model, drv, busy=model.active)
        rows.append(bench.row(drv, 64, rate, drv.cycle, 0, None, "model"))
    return rows


def _expected_spacing(gap):
    """MR-TXS-163 in the engine: a paced frame's packet decided 2 cycles after the first cycle
    whose ``now`` is not before its ``pace_until``; without backpressure the data path keeps the
    spacing: the gap in whole cycles and 2 more."""
    return (-(-gap // NS) + 2) * NS


def _check_paced_row(r, packets=4):
    assert r["packets"] == packets
    assert r["min_spacing_ns"] == r["spacing_ns"] == _expected_spacing(r["gap_ns"])
    assert r["min_spacing_ns"] >= r["gap_ns"]


def test_bench_model_rows():
    """MR-TX-250: ``bench tx_paced``'s rows on the model: at 10 Gb/s (gap 911 ns for 1,114 wire
    bytes, longer than the 64-bit data path's 560 ns a frame) every frame of connection 0 after
    the first is spaced by the gap in whole cycles and 2 more (never less than the gap); at the
    line rate by the data path (140 beats); every work request completes."""
    wl = pc.mtu_wire(SMALL["mtu"])
    r10, line = _model_rows([10_000, 0])
    assert r10["gap_ns"] == 911 == pacer_model.mtu_gap_ns(wl, 10_000)
    _check_paced_row(r10)
    assert line["gap_ns"] == 0 and line["min_spacing_ns"] == -(-wl // 8) * NS


def test_bench_model_condition_ignored_early():
    """MR-TX-250, negative control: with the scheduler's condition left out (``pace_ignored``)
    the bench's frames at 10 Gb/s are spaced by the data path, under the gap
    (``summary.not_early`` would be false)."""
    (r,) = _model_rows([10_000], pace_ignored=True)
    assert r["min_spacing_ns"] < r["gap_ns"]


def test_bench_model_short_last_packet_charged():
    """MR-TX-251, MR-TX-252: WRITEs of 1.5 MTUs at 5 and 10 Gb/s, a full-MTU packet (1,114
    wire bytes) and a 512-byte one (602) each: every packet is charged its own gap, so each
    follows the one before at that one's gap in whole cycles and 2 more (MR-TXS-163): 920 ns
    after a full one at 10 Gb/s, 512 after a short one (its gap 501 ns); the wire rate is at most
    the connection's."""
    rows = _model_rows([5_000, 10_000], packets=8, wr_bytes=1_536)
    for r, rate in zip(rows, (5_000, 10_000)):
        assert r["packets"] == 16 and r["wr_bytes"] == 1_536
        short = _expected_spacing(P.pacing_gap_ns(602, rate))
        full = _expected_spacing(pacer_model.mtu_gap_ns(pc.mtu_wire(SMALL["mtu"]), rate))
        assert r["min_spacing_ns"] == short
        assert r["spacing_ns"] == round((7 * full + 7 * short) / 14)
        assert r["achieved_mbps"] <= rate
    assert [r["achieved_mbps"] for r in rows] == [4_962, 9_855]


def test_bench_model_short_last_packet_uncharged_fails():
    """MR-TX-253, negative control: the charge of full-MTU packets only (the first slice's,
    ``pace_full_only``): the short one is not charged, so the next full one follows it at the
    data path's pace (602 wire bytes, 76 beats) and the wire rate is about 1.4 times the
    connection's (14,544 Mb/s at 10 Gb/s before this slice, MR-TX-250)."""
    (r,) = _model_rows([10_000], packets=8, wr_bytes=1_536, pace_full_only=True)
    assert r["packets"] == 16 and r["wr_bytes"] == 1_536
    assert r["min_spacing_ns"] == -(-602 // 8) * NS
    assert r["achieved_mbps"] > 1.3 * 10_000
    (full,) = _model_rows([10_000])
    assert full["achieved_mbps"] <= 10_000


@pytest.mark.slow
def test_bench_amaranth_rows_are_the_models():
    """MR-TX-250: the RTL in the Amaranth simulator gives the model's rows, 0 mismatches."""
    got = bench.measure(64, 10_000, 4, "amaranth")
    (want,) = _model_rows([10_000])
    assert got["mismatches"] == 0
    for k in ("gap_ns", "packets", "spacing_ns", "min_spacing_ns", "achieved_mbps"):
        assert got[k] == want[k], k


@pytest.mark.slow
def test_bench_amaranth_short_rows_are_the_models():
    """MR-TX-254: with a short last packet (``--wr-bytes 1536``) the RTL in the Amaranth
    simulator gives the model's row at 10 Gb/s, 0 mismatches (the short packets' charges through
    the scheduler and PacerFrame's division in the engine)."""
    got = bench.measure(64, 10_000, 4, "amaranth", 1_536)
    (want,) = _model_rows([10_000], packets=4, wr_bytes=1_536)
    assert got["mismatches"] == 0 and got["packets"] == 8
    for k in ("gap_ns", "packets", "spacing_ns", "min_spacing_ns", "achieved_mbps"):
        assert got[k] == want[k], k
    assert got["achieved_mbps"] <= 10_000


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_tx_paced_rtl_lockstep(seed):
    """MR-TX-249: the paced engine under Verilator (tb/tx_paced.py ``tx_paced_lockstep``): 30
    random work requests, 10 % loss, idle cycles, backpressure on every output, random AXI
    latency, connection 0 at 5 Gb/s, rate writes: 0 mismatches, every work request completes,
    MR-TX-237's properties (no packet decided and no frame out before its bounds)."""
    from metaroce.sim import verilator as vl
    from metaroce.tb import build as tb_build
    b = tb_build.build(blocks.get("tx_paced"), 64)
    env = {"TXP_WRS": os.environ.get("TXP_WRS", "30"), "TXP_SEED": str(seed)}
    row = vl.run_one(b, "metaroce.tb.tx_paced", "tx_paced_lockstep", env, out_var="TXP_OUT")
    print(row)
    assert row["mismatches"] == 0 and row["completions"] == row["work_requests"]
    assert row["early"] == row["forced"] == row["decided_early"] == row["frames_early"] == 0
    assert row["charges_in_order"] and row["same_count"]
    assert row["charged"] >= 4 and row["moved"] >= 3 and row["lost"] and row["pace_writes"] > 2


@pytest.mark.slow
def test_tx_paced_rtl_lockstep_wrong_model_fails(tmp_path):
    """MR-TX-249, negative control under Verilator: the same run (seed 1) against the model
    with the scheduler's pacing condition left out (``pace_ignored``) fails: a mismatch (the
    model sends a packet the RTL holds), no results written."""
    from metaroce.sim import verilator as vl
    from metaroce.tb import build as tb_build
    b = tb_build.build(blocks.get("tx_paced"), 64)
    out = tmp_path / "txp.json"
    env = {"TXP_SEED": "1", "TXP_PACE_IGNORED": "1", "TXP_OUT": str(out),
           "COCOTB_TEST_FILTER": "tx_paced_lockstep$"}
    results = vl.run(b, "metaroce.tb.tx_paced", extra_env=env, log_file=str(tmp_path / "sim.log"),
                     check=False)
    n_tests, failures, skipped = vl.results_summary(results)
    assert n_tests == 1 and len(failures) == 1 and not out.exists()
    # seed 1: at cycle 65, reg_data (the sent counter) 5 in the RTL, 6 in the model
    assert "RTL/model mismatch" in failures[0][1]
    print(failures[0][1])


@pytest.mark.slow
def test_tx_paced_rtl_bench():
    """MR-TX-250: ``bench tx_paced --sim verilator``'s rows at 5 Gb/s (gap 1,821 ns) and the line
    rate are the model's, 0 mismatches; the 5 Gb/s spacing is the gap in whole cycles and 2
    more."""
    from metaroce.benches._common import verilator_rows
    rows = [r for rate in (5_000, 0) for r in verilator_rows(
        "tx_paced", 64, "tx_paced_bench", {"TXP_BENCH_RATE": str(rate), "TXP_BENCH_PACKETS": "6"},
        out_var="TXP_BENCH_OUT")]
    want = _model_rows([5_000, 0], packets=6)
    assert [r["mismatches"] for r in rows] == [0, 0]
    assert rows[0]["gap_ns"] == 1_821
    _check_paced_row(rows[0], packets=6)
    for got, exp in zip(rows, want):
        for k in ("gap_ns", "packets", "spacing_ns", "min_spacing_ns", "achieved_mbps"):
            assert got[k] == exp[k], k


@pytest.mark.slow
def test_tx_paced_rtl_bench_short():
    """MR-TX-255: ``bench tx_paced --sim verilator --wr-bytes 1536``'s row at 5 Gb/s is the
    model's, 0 mismatches, at most the rate."""
    from metaroce.benches._common import verilator_rows
    (row,) = verilator_rows("tx_paced", 64, "tx_paced_bench", {
        "TXP_BENCH_RATE": "5000", "TXP_BENCH_PACKETS": "8", "TXP_BENCH_BYTES": "1536"},
        out_var="TXP_BENCH_OUT")
    (want,) = _model_rows([5_000], packets=8, wr_bytes=1_536)
    assert row["mismatches"] == 0 and row["achieved_mbps"] <= 5_000
    for k in ("gap_ns", "packets", "spacing_ns", "min_spacing_ns", "achieved_mbps"):
        assert row[k] == want[k], k
