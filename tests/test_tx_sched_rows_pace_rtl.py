"""The row scheduler with pacing under Verilator (docs/spec/hw-tx-sched.md section 16q,
MR-TXS-367..370): the block ``tx_sched_rows_paced`` (``PacedTxSched(rows=True)``, the small
instance) against ``PacedTxSchedCycleModel(rows=True)``, every output compared every cycle, on
the register join's testbench (tb/tx_pace.py with ``TXP_ROWS=1``): its random traffic with
losses, idle cycles, random backpressure on every output and re-timing writes, and MR-TXS-178's
short frames; then the checkers and the rows' replay; a negative control (the model without the
pacing condition) failing at the Amaranth lockstep's cycle and signal. One cached Verilator
build; the Verilator tests behind ``slow`` (a build of minutes). The Amaranth locksteps of the
same RTL are tests/test_tx_sched_rows_pace.py's.
"""
import json

import pytest

from metaroce import blocks
from metaroce.models.driver import run_alone
from metaroce.sim import verilator as vl
from metaroce.tb import build as tb_build
from metaroce.tb import tx_pace as tbp
from metaroce.tb.lockstep import Mismatch

MODULE, TEST = "metaroce.tb.tx_pace", "tx_pace_lockstep"

#: tests/test_tx_sched_rows_pace.py's default RTL lockstep (``_rtl_lockstep("short", 1, 6)``):
#: MR-TXS-178's traffic, 6 work requests and 2 READ responses, connection 0 at 20 Gb/s
SHORT_ENV = {"TXP_ROWS": "1", "TXP_CASE": "short", "TXP_SEED": "1", "TXP_WRS": "6",
             "TXP_RSPS": "2"}


def _run(env, out_var="TXP_OUT"):
    """The cached build's lockstep with ``env``'s knobs: its figures (``None`` without
    ``out_var``)."""
    return tb_build.run_block_test("tx_sched_rows_paced", MODULE, TEST, env, out_var=out_var)


def _amaranth(env):
    """MR-TXS-370: the same run (tb/tx_pace.py ``case``) in the Amaranth simulator: the core
    (``cycle``), or the :class:`Mismatch` raised."""
    from metaroce.hdl.tx_sched_rows_paced import tx_sched_rows_paced_small
    from metaroce.tb.lockstep import run_amaranth
    c = tbp.case(env)
    try:
        return run_amaranth(tx_sched_rows_paced_small(64), c.model, c.drv, busy=c.model.busy)
    except Mismatch as e:
        return e


def test_tx_sched_rows_paced_block_and_case():
    """MR-TXS-367 (default, no simulator): the block's component is ``PacedTxSched(rows=True)``
    at the small shape with the register join's ports, its model the rows' join with the
    model's port names; the testbench's runs from the knobs (the model alone) pass the
    checkers and the replay: the short run is tests/test_tx_sched_rows_pace.py's default RTL
    lockstep's (8 packets charged, a wake); ``TXP_MODEL`` sets the model's switches."""
    from metaroce.hdl.tx_pace import PacedTxSched
    from metaroce.hdl.tx_sched_rows import TxSchedRows
    from metaroce.models.tx_sched_rows import TxSchedRowsModel
    blk = blocks.get("tx_sched_rows_paced")
    dut, model = blk.make_component(64), blk.make_model(64)
    dut._MustUse__silence = dut.sched._MustUse__silence = dut.pacer._MustUse__silence = True
    assert isinstance(dut, PacedTxSched) and isinstance(dut.sched, TxSchedRows)
    assert dut.sched.pacing and dut.sched.conns == 2 and blk.tb == MODULE
    assert isinstance(model.sched, TxSchedRowsModel) and model.sched.pacing
    names = model.port_names()
    assert set(dut.signature.members) == {n.split("__")[0]
                                          for n in names["inputs"] + names["outputs"]
                                          if n not in ("clk", "rst")}
    c = tbp.case(SHORT_ENV)
    run_alone(c.model, c.drv)
    row = tbp.figures(c, 0, 0)
    assert row["rows"] and row["completions"] == 6 and row["charged"] == 8
    assert row["ops"]["wake"] >= 1 and row["gap_pairs"] >= 5 and row["early"] == []
    c = tbp.case(dict(SHORT_ENV, TXP_MODEL="pace_ignored=1"))
    assert c.model.sched.pace_ignored is True
    assert tbp.case({"TXP_WRS": "2"}).model.rows is False     # the register join's block


def _early_in_write_window(early, writes):
    """MR-TXS-371: each packet before the pacer's ``pace_until`` (``early``) left 1 or 2 cycles
    after the pacer took a write with a time of its connection (4 ns a cycle), the time it was
    before: the write's re-timing operation not yet applied at the packet's S2."""
    for conn, now, pu in early:
        assert any(w["conn"] == conn and w["set_time"] and w["time"] == pu
                   and 1 <= now // 4 - cy <= 2 for cy, w in writes), (conn, now, pu)


#: MR-TXS-371's run on the model alone: the random run of 20 work requests at seed 15 (7 until
#: s1_45: MR-TXS-470's hold moved its schedule ops and seed 7's early packet with them; seed 15
#: is the next of 1..40 whose run without MR-TXS-372's hold sends one packet early, and with it
#: holds a schedule op)
RETIME_ENV = {"TXP_ROWS": "1", "TXP_SEED": "15", "TXP_WRS": "20"}


def test_rows_time_write_in_flight_not_early():
    """MR-TXS-165, MR-TXS-372, MR-TXS-373 (the model alone, no simulator): the rows joined with
    the pacer on the random run at ``RETIME_ENV``'s seed (20 work requests, rate writes in 3 %
    of the cycles, half with a time) send no packet before the pacer's ``pace_until``
    (tb/tx_pace.py ``figures``' strict check): the schedule op that sent connection 1's packet
    at 2,244 ns (a cycle or two after a write set its time to 2,603 ns, MR-TXS-371) is held; the replay passes, and
    fails with the hold's mark taken off."""
    c = tbp.case(RETIME_ENV)
    run_alone(c.model, c.drv)
    row = tbp.figures(c, 0, 0)
    assert row["early"] == [] and row["held_sched"] >= 1
    assert row["completions"] == 20
    # MR-TXS-373: the replay told of the hold; without the mark it finds the packet the row
    # did not take
    from metaroce.models.tx_sched_rows import replay
    ev = c.model.sched.events
    c.model.sched.events = [e[:2] + (None,) + e[3:] if e[0] == "sched" and e[2] else e for e in ev]
    with pytest.raises(AssertionError, match="action None"):
        replay(c.model.sched)


def test_rows_time_write_in_flight_wrong_form_early():
    """MR-TXS-374 (negative control): the old behaviour (``TXP_MODEL=retime_hold=0``: no hold)
    on the same run sends connection 1's packet at 2,244 ns before ``pace_until`` 2,603 ns,
    a cycle or two after the write that set that time, and fails the strict check."""
    from metaroce.models import tx_pace_cases as pc
    from metaroce.models.tx_sched import SMALL
    c = tbp.case(dict(RETIME_ENV, TXP_MODEL="retime_hold=0"))
    assert c.model.sched.retime_hold is False
    run_alone(c.model, c.drv)
    early = pc.check_paced(c.model, SMALL["mtu"])["early"]
    assert early == [(1, 2244, 2603)]
    _early_in_write_window(early, c.drv.res["pace_writes"])
    with pytest.raises(AssertionError):
        tbp.figures(c, 0, 0)


@pytest.mark.slow
def test_rows_time_write_in_flight_rtl():
    """MR-TXS-372, MR-TXS-374 (the Amaranth simulator): the block on MR-TXS-371's run:
    0 mismatches, a schedule op held, none early, the replay. The RTL's old behaviour
    (``TxSchedRows(retime_hold=False)``) mismatches the model; with the model's old behaviour
    too it agrees (0 mismatches) and sends the early packet, failing the strict check."""
    from metaroce.hdl.tx_pace import PacedTxSched
    from metaroce.hdl.tx_sched_rows_paced import tx_sched_rows_paced_small
    from metaroce.models.tx_sched import SMALL
    from metaroce.tb.lockstep import run_amaranth
    c = tbp.case(RETIME_ENV)
    core = run_amaranth(tx_sched_rows_paced_small(64), c.model, c.drv, busy=c.model.busy)
    row = tbp.figures(c, core.cycle, core.mismatches)
    assert core.mismatches == 0 and row["early"] == [] and row["held_sched"] >= 1
    old = PacedTxSched(64, **SMALL, rows=True, retime_hold=False)
    c = tbp.case(RETIME_ENV)
    with pytest.raises(Mismatch):
        run_amaranth(old, c.model, c.drv, busy=c.model.busy)
    c = tbp.case(dict(RETIME_ENV, TXP_MODEL="retime_hold=0"))
    old = PacedTxSched(64, **SMALL, rows=True, retime_hold=False)
    core = run_amaranth(old, c.model, c.drv, busy=c.model.busy)
    assert core.mismatches == 0
    with pytest.raises(AssertionError, match="2244"):
        tbp.figures(c, core.cycle, core.mismatches)


@pytest.mark.slow
def test_tx_sched_rows_paced_rtl_lockstep():
    """MR-TXS-368: the main random run (seed 1, 200 work requests: SENDs, READ requests and
    atomics among them, 10 % loss, 20 % idle cycles, 40 % backpressure on every output,
    connection 0 at 100 Gb/s, rate writes in 3 % of the cycles, half of them with a time):
    0 mismatches, every work request completed, the checker, none early, the charges in
    order, the replay; the pacer moved the time, re-timing writes as row operations, wakes.
    MR-TXS-372: no packet early (MR-TXS-371's, connection 0 at 36,532 ns before pace_until
    36,935 ns, gone): schedule ops held while a write with a time was in flight."""
    row = _run({"TXP_ROWS": "1", "TXP_SEED": "1", "TXP_WRS": "200"})
    assert row["mismatches"] == 0 and row["rows"]
    assert row["early"] == [] and row["held_sched"] >= 1
    assert row["completions"] == row["work_requests"] == 200
    assert row["charged"] > 100 and row["moved"] > 10 and row["retimes"] > 20
    assert row["ops"]["retime"] >= row["pace_writes"] and row["ops"]["wake"] > 0


@pytest.mark.slow
def test_tx_sched_rows_paced_rtl_short_frames():
    """MR-TXS-368, MR-TXS-370: MR-TXS-178's traffic (short last chunks, SENDs, READ requests,
    atomics, READ responses; connection 0 at 20 Gb/s): 30 work requests and 6 responses at seed
    2: 0 mismatches, every packet following its connection's one before by its own gap, wakes;
    and tests/test_tx_sched_rows_pace.py's default run under Verilator takes as many cycles as
    in the Amaranth lockstep."""
    row = _run(dict(SHORT_ENV, TXP_SEED="2", TXP_WRS="30", TXP_RSPS="6"))
    assert row["mismatches"] == 0 and row["completions"] == 30 and row["responses"] == 6
    assert row["early"] == []           # no re-timing writes after the opens
    assert row["gap_pairs"] >= 10 and row["short_pairs"] >= 3 and row["ops"]["wake"] >= 5
    row = _run(SHORT_ENV)
    core = _amaranth(SHORT_ENV)
    assert row["mismatches"] == core.mismatches == 0
    assert core.cycle == row["cycles"], (core.cycle, row["cycles"])


@pytest.mark.slow
@pytest.mark.parametrize("knob", ["pace_ignored=1", "pace_full_only=1"])
def test_tx_sched_rows_paced_rtl_wrong_model_fails(knob, tmp_path):
    """MR-TXS-369 (negative controls): the model without the pacing condition
    (``pace_ignored``) or charging the full-MTU packets only (``pace_full_only``, the first
    slice's charge) against the RTL on the short run fails under Verilator, at the cycle and on
    the signal of the Amaranth lockstep's first mismatch."""
    env = dict(SHORT_ENV, TXP_MODEL=knob, TXP_OUT=str(tmp_path / "row.json"))
    with pytest.raises(vl.CocotbTestFailure):
        _run(env, out_var=None)
    row = json.loads((tmp_path / "row.json").read_text())
    print(row)
    assert row["model"] == {knob.split("=")[0]: True}
    e = _amaranth(env)
    assert isinstance(e, Mismatch), e
    assert (row["mismatch"]["cycle"], row["mismatch"]["signal"]) == (e.cycle, e.signal)
