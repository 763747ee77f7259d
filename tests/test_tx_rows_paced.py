"""The TX top with the row scheduler and pacing as a block of its own, ``tx_rows_paced``
(``Tx(rows=True, pacing=True)``, docs/spec/hw-tx.md section 2.18, MR-TX-386..388): its
registration, and its cocotb/Verilator lockstep (tb/tx_paced.py ``tx_paced_lockstep`` with
``TXP_ROWS=1``: the paced engine's driver, checkers and lockstep core, the rows' model) behind
``slow`` (one Verilator build of the TX, tens of minutes here). The Amaranth lockstep of the
same RTL is tests/test_tx_sched_rows_pace.py's ``test_tx_rows_paced_lockstep`` (MR-TXS-346).
"""
import json

import pytest

from metaroce import blocks
from metaroce.tb import tx_paced as tbp
from metaroce.tb.lockstep import flat_port_names

MODULE, TEST = "metaroce.tb.tx_paced", "tx_paced_lockstep"

#: MR-TX-387's run with re-timing writes in flight (MR-TXS-371's situation): seed 3, 40 work
#: requests of up to 512 bytes, connection 0 at 100 Gb/s, rate writes in 10 % of the cycles,
#: every one with a time (``now`` - 200 to ``now`` + 600 ns); on the model a schedule op held
#: (MR-TXS-372) and, without the hold, connection 0's packets at 81,936 and 487,972 ns before
#: their ``pace_until`` (82,493 and 488,382 ns)
HOLD_ENV = {"TXP_ROWS": "1", "TXP_SEED": "3", "TXP_WRS": "40", "TXP_MAXLEN": "512",
            "TXP_RATE": "100000", "TXP_PRATE": "0.1", "TXP_RETIME": "1.0"}
#: MR-TX-387's second run: MR-TX-249's (tx_paced's seed 1: 30 work requests up to 6 MTUs,
#: connection 0 at 5 Gb/s, the pacer binding, rate writes without a time) with the rows
PACED_ENV = {"TXP_ROWS": "1", "TXP_SEED": "1", "TXP_WRS": "30"}
#: MR-TX-388: the first cycle the model without the hold (``retime_hold=0``) differs from the
#: one with it on HOLD_ENV's run (the driver's cycle; ``reg_data``, the sent counter, one more)
FIRST_DIVERGENCE = (490, "reg_data")


def test_block_registered():
    """MR-TX-386 (no build): the block ``tx_rows_paced``: ``Tx(64, rows=True, pacing=True)``
    (``PacedTxSched`` over ``TxSchedRows(pacing=True)``), its model
    ``TxCycleModel(rows=True, pacing=True)`` with the RTL's flattened ports, which are
    ``tx_paced``'s; width 64 only, the testbench tb/tx_paced.py, the synthesis shares of
    ``tx_paced``; the model's ``retime_hold`` switch (MR-TX-388) reaches the rows' model."""
    from metaroce.hdl.tx import Tx
    from metaroce.hdl.tx_pace import PacedTxSched
    from metaroce.hdl.tx_sched_rows import TxSchedRows
    from metaroce.models.tx_sched_rows import TxSchedRowsModel
    blk = blocks.get("tx_rows_paced")
    assert "tx_rows_paced" in blocks.names() and blk.widths == (64,) and blk.tb == MODULE
    assert blk.shares == blocks.get("tx_paced").shares
    with pytest.raises(ValueError):
        blk.check_width(128)
    dut, model = blk.make_component(64), blk.make_model(64)
    assert isinstance(dut, Tx) and dut.rows and dut.pacing and not dut.rd_rows
    assert isinstance(dut.sched, PacedTxSched) and isinstance(dut.sched.sched, TxSchedRows)
    assert dut.sched.sched.pacing and dut.sched.sched.retime_hold
    assert model.rows and model.pacing and isinstance(model.sched, TxSchedRowsModel)
    assert model.sched.pacing and model.sched.retime_hold
    names = model.port_names()
    assert flat_port_names(dut.signature) == set(names["inputs"]) | set(names["outputs"])
    assert names == blocks.get("tx_paced").make_model(64).port_names()
    assert dut.signature == blocks.get("tx_paced").make_component(64).signature
    assert blk.model_factory()(64, retime_hold=False).sched.retime_hold is False
    for b in (dut, dut.sched, dut.sched.sched, dut.sched.pacer, dut.rtx, dut.data, dut.cwnd):
        b._MustUse__silence = True          # inspected, not elaborated


def test_case_knobs():
    """MR-TX-387 (no simulator): tb/tx_paced.py's ``case`` from the knobs: ``TXP_ROWS=1`` the
    rows' model, ``TXP_MODEL=retime_hold=0`` its wrong form, ``TXP_PRATE``/``TXP_RETIME``/
    ``TXP_MAXLEN`` the driver's writes and work; without them tx_paced's run (MR-TX-249: the
    register scheduler's model, rate writes in 1 % of the cycles, none with a time)."""
    c = tbp.case(HOLD_ENV)
    assert c.rows and c.model.rows and c.model.sched.retime_hold and c.knobs == {}
    assert c.drv.p_rate == 0.1 and c.drv.p_retime == 1.0 and len(c.items) == 40
    assert tbp.case(dict(HOLD_ENV, TXP_MODEL="retime_hold=0")).model.sched.retime_hold is False
    c = tbp.case({})
    assert not c.rows and not c.model.rows and c.model.pacing and len(c.items) == 30
    assert c.drv.p_rate == 0.01 and c.drv.p_retime == 0.0
    assert tbp.case({"TXP_PACE_IGNORED": "1"}).knobs == {"pace_ignored": True}


def test_hold_changes_the_run():
    """MR-TX-388 (no simulator, a few hundred cycles): on HOLD_ENV's run the model with the hold
    and the one without it (fed the same inputs) first differ at cycle 490 on ``reg_data``
    (the packet the hold keeps back): the run meets a re-timing write in flight, so the
    negative control can bite."""
    from metaroce.models.driver import run_alone
    from metaroce.models.tx_rows_paced import tx_rows_paced_model_small
    c = tbp.case(HOLD_ENV)
    old = tx_rows_paced_model_small(64, retime_hold=False)
    outs = c.model.port_names()["outputs"]
    found = []

    class Diverged(Exception):
        pass

    def compare(cycle, inp, out):
        o = old.step(inp)
        diff = [n for n in outs if out.get(n) != o.get(n)]
        if diff:
            found.append((cycle, diff[0]))
            raise Diverged
    with pytest.raises(Diverged):
        run_alone(c.model, c.drv, busy=c.model.busy, on_cycle=compare)
    assert found == [FIRST_DIVERGENCE]
    assert c.model.sched.held_sched == 1 and old.sched.held_sched == 0


def test_bounds_after_time_writes():
    """MR-TX-389 (no simulator): MR-TX-237 (b)'s bound, the ``pace_until`` the connection's
    previous charge set, holds for a packet decided before that charge was taken or after it
    with no write with a time between; a write with a time of the connection taken after the
    charge and not after the packet's decision leaves it out (the write sets ``pace_until``
    outright, MR-TXS-167); a write of the other connection, or one before the take, does not.
    A charge taken forced only after such a write."""
    from types import SimpleNamespace

    from metaroce.models import tx_pace_cases as pc
    # connection 0: packets at 100 and 400 (both charged); the first's charge taken at 120,
    # setting pace_until 500; the second decided at 400 (pace_until in the pacer then 300)
    paced = SimpleNamespace(packets=[(0, 100, 0, True), (0, 400, 300, True)],
                            charges=[(0, 100, 0, 500), (0, 400, 300, 600)])

    def early(writes, take=120):
        times = SimpleNamespace(takes=[take, 420], time_writes=writes)
        return pc.check_spacing(paced, times)
    assert pc.check_spacing(paced) == [(0, 400, 500)] == early([])
    assert early([(0, 300)]) == [] and early([(0, 400)]) == []      # after the take
    assert early([(1, 300)]) == [(0, 400, 500)]                     # another connection's
    assert early([(0, 110)]) == [(0, 400, 500)]                     # before the take
    assert early([(0, 404)]) == [(0, 400, 500)]                     # after the decision
    assert early([(0, 300)], take=410) == [(0, 400, 500)]           # charge not yet taken
    # a forced charge (pace_until 300 at the take, past the packet's 100) only after a write
    forced = SimpleNamespace(packets=paced.packets[:1], charges=[(0, 100, 300, 500)])
    assert pc.forced_without_write(forced, SimpleNamespace(takes=[120], time_writes=[(0, 110)])) == []
    assert pc.forced_without_write(forced, SimpleNamespace(takes=[120], time_writes=[])) == \
        [(0, 100, 300, 500)]
    f = pc.check_frames_left(paced, [(0, 104), (0, 404)], SimpleNamespace(
        takes=[120, 420], time_writes=[(0, 300)]))
    assert f["early"] == [] and f["same_count"]
    assert pc.check_frames_left(paced, [(0, 104), (0, 404)])["early"] == [(0, 404, 500)]


def _run(env, out_var="TXP_OUT"):
    """The cached build's lockstep with ``env``'s knobs: its figures (``None`` without
    ``out_var``)."""
    from metaroce.tb import build as tb_build
    return tb_build.run_block_test("tx_rows_paced", MODULE, TEST, env, out_var=out_var)


@pytest.mark.slow
@pytest.mark.parametrize("seed", [3, 20])
def test_tx_rows_paced_rtl_lockstep(seed):
    """MR-TX-387: HOLD_ENV's run under Verilator (10 % loss, idle cycles, backpressure on every
    output, random AXI read latency, re-timing writes in flight): 0 mismatches (every output,
    so every frame's bytes, each cycle), every work request completes (MR-TX-150's checker:
    each frame's payload the host memory's), no packet decided and no frame out before its
    bounds (MR-TX-237 with MR-TX-389), a schedule op held (MR-TXS-372), the rows' replay.
    Seed 20 (MR-TX-389): a tail probe's frame (kept apart from the packets' frames) and (b)
    bounds left out after writes with a time. (Seed 6 until s1_45: MR-TXS-470's hold moved its
    schedule ops and its run no longer held one by MR-TXS-372; seed 20 is the first of 3..40
    whose run meets all three: 2 probes left, 17 bounds voided, 2 schedule ops held.)"""
    row = _run(dict(HOLD_ENV, TXP_SEED=str(seed)))
    if seed == 20:
        assert row["probes_left"] >= 1 and row["bounds_voided"] >= 1
    assert row["mismatches"] == 0 and row["rows"]
    assert row["completions"] == row["work_requests"] == 40
    # charges taken after a write moved the time on (``forced``) are MR-TXS-167's, not early
    assert row["early"] == row["decided_early"] == row["frames_early"] == 0
    assert row["charges_in_order"] and row["same_count"]
    assert row["held_sched"] >= 1 and row["retimes"] > 100 and row["lost"]
    assert row["ops"]["retime"] >= row["pace_writes"]


@pytest.mark.slow
def test_tx_rows_paced_rtl_lockstep_binding():
    """MR-TX-387: MR-TX-249's run (connection 0 at 5 Gb/s, the pacer binding) with the rows
    under Verilator: 0 mismatches, every work request completes, none early, the pacer moved
    the time."""
    row = _run(PACED_ENV)
    assert row["mismatches"] == 0 and row["completions"] == row["work_requests"] == 30
    assert row["early"] == row["forced"] == row["decided_early"] == row["frames_early"] == 0
    assert row["charges_in_order"] and row["same_count"]
    assert row["charged"] >= 4 and row["moved"] >= 3 and row["lost"]


@pytest.mark.slow
def test_tx_rows_paced_rtl_wrong_model_fails(tmp_path):
    """MR-TX-388 (negative control): the model without MR-TXS-372's hold (``retime_hold=0``,
    pfix36's wrong form) against the RTL on HOLD_ENV's run fails under Verilator, at the cycle
    and on the signal of the Amaranth lockstep's first mismatch (the same run in the Amaranth
    simulator, tb/tx_paced.py ``case``)."""
    from metaroce.hdl.tx_rows_paced import tx_rows_paced_small
    from metaroce.sim import verilator as vl
    from metaroce.tb.lockstep import Mismatch, run_amaranth
    env = dict(HOLD_ENV, TXP_MODEL="retime_hold=0", TXP_OUT=str(tmp_path / "row.json"))
    with pytest.raises(vl.CocotbTestFailure):
        _run(env, out_var=None)
    row = json.loads((tmp_path / "row.json").read_text())
    print(row)
    assert row["model"] == {"retime_hold": False}
    c = tbp.case(env)
    with pytest.raises(Mismatch) as e:
        run_amaranth(tx_rows_paced_small(64), c.model, c.drv, busy=c.model.busy)
    print(e.value.cycle, e.value.signal)
    assert (row["mismatch"]["cycle"], row["mismatch"]["signal"]) == (e.value.cycle, e.value.signal)
    assert e.value.signal == FIRST_DIVERGENCE[1]
