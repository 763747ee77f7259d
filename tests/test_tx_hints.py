"""The receiver's rate hints in the TX top's windows (docs/spec/hw-tx.md section 2.30,
MR-TX-489..498): the hint on the ACK record and through the retransmit unit to its event, the
hinted windows (``Cwnd(hints=True)``) with their control path outside the TX
(``CwndControl`` in the testbench), in the model and on the RTL (the Amaranth simulator, every
output every cycle)."""
import pytest

from metaroce.models import tx_cases as xc
from metaroce.models import tx_hint_cases as hc
from metaroce.models.driver import run_alone
from metaroce.models.retransmit import layouts as rtx_layouts
from metaroce.models.rx import layouts as rx_layouts
from metaroce.models.tx import (HINT_INPUTS, HINT_OUTPUTS, SMALL, TxCycleModel, layouts)
from metaroce.models.cwnd import RATE_BITS
from metaroce.models.cwnd import layouts as cw_layouts


def test_options_layouts_and_ports():
    """MR-TX-489, MR-TX-490, MR-TX-492, MR-TX-498: the ACK record gains ``hint`` (19 bits,
    last: the other fields keep their bits), the job and the event too, the event exactly the
    hinted windows' ``s_ack``; the default's layouts and ports unchanged; the hinted model's
    ports the default's plus the control path's; hints with verdicts, pacing, rows or an
    interval refused, the negative control only with hints."""
    base, hinted = rtx_layouts(2, 4, 256), rtx_layouts(2, 4, 256, hints=True)
    assert base.ack == rx_layouts(2, 4, 2).ack and "hint" not in dict(base.ackev.members)
    names = [n for n, _ in hinted.ack]
    assert names[-1] == "hint" and hinted.ack.size - base.ack.size == RATE_BITS
    for n, f in base.ack:
        assert hinted.ack[n].offset == f.offset
    assert "hint" in dict(hinted.job.members)
    assert hinted.ackev == cw_layouts(2, 4, hints=True).ack
    assert layouts(hints=True).cw.setup == cw_layouts(2, 4, hints=True).setup
    assert layouts().rtx.ack == base.ack
    m = TxCycleModel(64, **SMALL, hints=True)
    d = TxCycleModel.port_names()
    assert m.port_names() == {"inputs": d["inputs"] + HINT_INPUTS,
                              "outputs": d["outputs"] + HINT_OUTPUTS}
    for bad in ({"verdicts": True}, {"pacing": True}, {"rows": True}, {"interval": 8}):
        with pytest.raises(ValueError):
            TxCycleModel(64, **SMALL, hints=True, **bad)
    with pytest.raises(ValueError):
        TxCycleModel(64, **SMALL, hint_dropped=True)


def model_run(hint_dropped=False, control=False, **run_kw):
    """The hinted TX's model alone on hint45's run; ``control``: its control path inside."""
    model = TxCycleModel(64, **SMALL, hints=True, hint_dropped=hint_dropped, control=control)
    drv, items = hc.make_driver(model, **run_kw)
    run_alone(model, drv)
    assert len(drv.res["cqe"]) == len(items) and all(c["status"] == 0 for c in drv.res["cqe"])
    return drv, model


def check_windows(drv, model):
    """MR-TX-496's checks: refused events, move writes and refills occurred; after every event
    of the unit with its answer the windows are ``CwndModel``'s; the scheduler's path windows
    the windows' at the end."""
    ctl = drv.control
    assert ctl.moves["move"] >= 4 and ctl.moves["refill"] >= 1, ctl.moves
    assert drv.res["ctl_acks"] == ctl.moves["move"]
    n = hc.check_hint_run(drv)
    assert hc.check_hint_run(drv, unit_events=model.unit_events) == n
    acks = sum(1 for k, _ in drv.loop.items if k == "ack")
    assert n == acks > 30
    cw, sched = model.cwnd.sem, model.sched.sem
    win = [p["cwnd"] for p in cw.path[0]]
    assert [sched.path[p]["cwnd"] for p in range(SMALL["paths"])] == win
    assert [q["cwnd"] for q in ctl.path[0]] == win
    return n


def test_hints_closed_loop_model():
    """MR-TX-491, MR-TX-493..496 (model): the TX model with hints and ``CwndControl`` as its
    control path on connection 0's WRITEs (ACKs delayed, path 1 CE-marked, idle cycles,
    backpressure): hint changes refuse events, move writes and refills occur; after every event
    the windows took from the unit, with its answer, the connection's windows, W, debt, rate and
    hinted connection window equal the unsplit ``CwndModel``'s on the same records; the
    scheduler's path windows are the windows' at the end; every work request completes."""
    drv, model = model_run()
    check_windows(drv, model)
    assert drv.res["releases"] >= drv.control.moves["move"]


def test_hints_dropped_model():
    """MR-TX-496's negative control (model): the unit's hint dropped on the way to the windows:
    no event refused, and the windows differ from ``CwndModel``'s on the hinted records (one
    WRITE of the run: the first hint is enough)."""
    drv, model = model_run(hint_dropped=True, n=1)
    assert drv.control.moves["move"] == 0 and drv.res["ctl_acks"] == 0
    assert any(e["hint"] for e in model.unit_events)
    with pytest.raises(AssertionError):
        hc.check_hint_run(drv, unit_events=model.unit_events)



@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2, 3, 5])
def test_hints_random_traffic_model(seed):
    """MR-TX-496 (model, slow): MR-TX-150's random lossy traffic on both connections (sends,
    READs, atomics, bad ones, 15 % loss, the timers' expiries) with hints on every ACK and the
    control path in the loop: every work request completes and the checker passes; hint
    changes move the windows; after every event of the unit the windows of its connection are
    ``CwndModel``'s; the scheduler's windows of both connections are the windows' at the end."""
    model = TxCycleModel(64, **SMALL, hints=True)
    drv, items, sem = hc.random_driver(model, seed)
    run_alone(model, drv)
    xc.check(sem, items, drv)
    assert drv.control.moves["move"] >= 5 and drv.res["timeouts"] > 0
    n = hc.check_hint_run(drv)
    assert n == hc.check_hint_run(drv, unit_events=model.unit_events) > 25
    cw, sched = model.cwnd.sem, model.sched.sem
    for c in range(SMALL["conns"]):
        win = [p["cwnd"] for p in cw.path[c]]
        assert [sched.path[c * SMALL["paths"] + p]["cwnd"] for p in range(SMALL["paths"])] == win

# -- MR-TX-497: the engine with hints on the RTL

def tx_lockstep(hint_dropped_rtl=False):
    from metaroce.hdl.tx import Tx
    from metaroce.tb.lockstep import run_amaranth
    model = TxCycleModel(64, **SMALL, hints=True)
    drv, items = hc.make_driver(model)
    dut = Tx(64, **SMALL, hints=True, hint_dropped=hint_dropped_rtl)
    core = run_amaranth(dut, model, drv, busy=model.busy)
    return drv, model, items, core


@pytest.mark.slow
def test_tx_hints_lockstep():
    """MR-TX-489..497 on the RTL: ``Tx(hints=True)`` against ``TxCycleModel(hints=True)`` on
    MR-TX-496's run (idle cycles, backpressure on every output, AXI latency, ``CwndControl`` in
    the loop through the control path's ports): 0 mismatches on every output every cycle (the
    port names are the model's), every work request completes, then MR-TX-496's checks."""
    drv, model, items, core = tx_lockstep()
    assert core.mismatches == 0
    assert len(drv.res["cqe"]) == len(items) and all(c["status"] == 0 for c in drv.res["cqe"])
    check_windows(drv, model)


@pytest.mark.slow
def test_tx_hints_lockstep_hint_dropped_fails():
    """MR-TX-497's negative control: the RTL with the unit's hint dropped on the way to the
    windows mismatches the model with it (at the first hint: no refused event)."""
    from metaroce.tb.lockstep import Mismatch
    with pytest.raises(Mismatch):
        tx_lockstep(hint_dropped_rtl=True)


def hints_block():
    """MR-TX-497: the hinted small instance for its Verilator build (not a registered block)."""
    from metaroce import blocks
    return blocks.Block(
        name="tx_hints", component="metaroce.hdl.tx:tx_hints_small",
        model="metaroce.models.tx:tx_model_hints_small", tb="metaroce.tb.tx",
        help="TX engine with the receiver's rate hints in its windows (hw-tx.md 2.30)",
        widths=(64,))


@pytest.mark.slow
def test_tx_hints_verilator():
    """MR-TX-497 under Verilator (tb/tx.py ``tx_hints``): MR-TX-496's run on ``Tx(hints=True)``
    against its model, every output every cycle: 0 mismatches, every work request completed,
    every event's windows ``CwndModel``'s, the scheduler's windows the windows'."""
    from metaroce.sim import verilator as vl
    from metaroce.tb import build as tb_build
    b = tb_build.build(hints_block(), 64)
    row = vl.run_one(b, "metaroce.tb.tx", "tx_hints", {"TX_HINTS": "1"}, out_var="TX_OUT")
    print(row)
    assert row["mismatches"] == 0 and row["completions"] == row["work_requests"]
    assert row["equal"] == row["equal_unit"] == row["events"] > 30
    assert row["move"] >= 4 and row["refill"] >= 1
    assert row["sched_windows"] == row["windows"]


@pytest.mark.slow
def test_tx_hints_verilator_hint_dropped_fails():
    """MR-TX-497's negative control under Verilator: the same run against the model with the
    unit's hint dropped (the RTL keeps it): a mismatch."""
    from metaroce.sim import verilator as vl
    from metaroce.tb import build as tb_build
    b = tb_build.build(hints_block(), 64)
    row = vl.run_one(b, "metaroce.tb.tx", "tx_hints", {"TX_HINTS": "1", "TX_HINT_DROPPED": "1"},
                     out_var="TX_OUT")
    print(row)
    assert row["mismatches"] > 0 and row["first_mismatch"] > 100


@pytest.mark.slow
def test_tx_hints_verilator_random():
    """MR-TX-497 under Verilator: ``test_hints_random_traffic_model[1]``'s run (both
    connections, loss, timeouts, hints on every ACK, the control path in the loop): 0
    mismatches, the checker passes, every event's windows ``CwndModel``'s."""
    from metaroce.sim import verilator as vl
    from metaroce.tb import build as tb_build
    b = tb_build.build(hints_block(), 64)
    row = vl.run_one(b, "metaroce.tb.tx", "tx_hints", {"TX_HINTS": "1", "TX_HINTS_RUN": "random"},
                     out_var="TX_OUT")
    print(row)
    assert row["mismatches"] == 0 and row["completions"] == row["work_requests"] == 30
    assert row["equal"] == row["equal_unit"] == row["events"] > 25 and row["move"] >= 5

# -- MR-TX-510..514: the control path inside the TX (Tx(hints=True, control=True))


def control_block():
    """MR-TX-513: the small instance with the control path inside, for its Verilator build
    (not a registered block)."""
    from metaroce import blocks
    return blocks.Block(
        name="tx_control", component="metaroce.hdl.tx:tx_control_small",
        model="metaroce.models.tx:tx_model_control_small", tb="metaroce.tb.tx",
        help="TX engine with the rate hints and their control path inside (hw-tx.md 2.32)",
        widths=(64,))


def test_control_options_and_ports():
    """MR-TX-510/511: ``control`` needs ``hints`` (``control_wrong`` needs ``control``); with it
    the control path's ports are gone, the band's configuration stays; MR-TX-518, MR-CW-145/146:
    the windows' band unit shared with the control path (``band_client`` needs ``hints``)."""
    from metaroce.hdl.tx import Tx
    from metaroce.models.tx import CONTROL_INPUTS
    m = TxCycleModel(64, **SMALL, hints=True, control=True)
    d = TxCycleModel.port_names()
    assert m.port_names() == {"inputs": d["inputs"] + CONTROL_INPUTS, "outputs": d["outputs"]}
    with pytest.raises(ValueError):
        TxCycleModel(64, **SMALL, control=True)
    with pytest.raises(ValueError):
        Tx(64, **SMALL, hints=True, control_wrong="round")
    tx = Tx(64, **SMALL, hints=True, control=True)
    for blk in (tx, tx.sched, tx.rtx, tx.data, tx.cwnd, tx.cw_ctl):
        blk._MustUse__silence = True            # inspected, not elaborated
    members = tx.signature.members
    assert "s_cw_ack" not in members and "m_cw_upd" not in members
    assert "cc_line_mbps" in members
    # MR-TX-518: one band unit, the windows', with the control path as its second client
    assert tx.cwnd.band_client and tx.cw_ctl.band_port
    assert "s_band_req" in tx.cwnd.signature.members and "m_band_req" in tx.cw_ctl.signature.members
    from metaroce.hdl.cwnd import Cwnd
    with pytest.raises(ValueError):
        Cwnd(64, SMALL["conns"], SMALL["paths"], band_client=True)


def check_control_windows(drv, model):
    """MR-TX-513's checks: moves (one scaled) and a refill made by the TX's own control path;
    after every event of the unit with its answer the windows are ``CwndModel``'s; the
    scheduler's windows and the control path's shadows are the windows' at the end."""
    ctl = model.ctl
    mv = ctl.moves
    assert mv["move"] >= 4 and mv["scaled"] >= 1 and mv["refill"] >= 1, mv
    n = hc.check_hint_run(drv, loop=ctl.loop)
    assert hc.check_hint_run(drv, unit_events=model.unit_events, loop=ctl.loop) == n
    assert n == sum(1 for k, _ in ctl.loop.items if k == "ack") > 30
    cw, sched = model.cwnd.sem, model.sched.sem
    win = [p["cwnd"] for p in cw.path[0]]
    assert [sched.path[p]["cwnd"] for p in range(SMALL["paths"])] == win
    assert [q["cwnd"] for q in ctl.control.path[0]] == win
    return n


def test_control_inside_model():
    """MR-TX-512/513 (model): MR-TX-496's run on the TX model with the control path inside:
    every work request completes, the windows are ``CwndModel``'s after every event; MR-TX-515:
    each answer's cycles (the update seen to the release) more than the band unit's and the
    compute's (MR-CW-129)."""
    from metaroce.models.cwnd import LAT_BAND
    from metaroce.models.cwnd_control import move_cycles, refill_cycles
    drv, model = model_run(control=True)
    check_control_windows(drv, model)
    for kind, n in model.ctl.moves["cycles"]:
        least = (move_cycles(SMALL["paths"], False) if kind == "move"
                 else refill_cycles(0, SMALL["paths"]))
        assert n > 1 + LAT_BAND + least + SMALL["paths"], (kind, n)


def tx_control_run(wrong=None):
    """MR-TX-496's run on ``Tx(hints=True, control=True)`` (``control_wrong=wrong``) against the
    model in the Amaranth simulator, with the windows' updates the scheduler takes inside the
    RTL recorded beside (packed, in order)."""
    from metaroce.hdl.tx import Tx
    from metaroce.tb.lockstep import run_amaranth
    model = TxCycleModel(64, **SMALL, hints=True, control=True)
    drv, items = hc.make_driver(model)
    dut = Tx(64, **SMALL, hints=True, control=True, control_wrong=wrong)
    upd = dut.cwnd.m_update
    seen = []

    async def watch(ctx):
        async for _, _, v, r, p in ctx.tick().sample(upd.valid, upd.ready, upd.payload.as_value()):
            if v and r:
                seen.append(p)
    core = run_amaranth(dut, model, drv, busy=model.busy, background=[watch])
    return core, drv, model, items, seen


@pytest.mark.slow
def test_tx_control_lockstep():
    """MR-TX-513 (MR-TX-516's control path, MR-TX-518's one band unit) on the RTL: ``Tx(hints=True, control=True)`` against its model in the Amaranth
    simulator on MR-TX-496's run (idle cycles, backpressure on every output, AXI latency): 0
    mismatches on every output every cycle, every work request completes, every update the RTL's
    windows gave the scheduler the model's (the move writes' windows among them), then the
    model's checks."""
    core, drv, model, items, seen = tx_control_run()
    assert core.mismatches == 0
    assert seen == model.cw_updates and len(seen) > 40
    check_control_windows(drv, model)


@pytest.mark.slow
def test_tx_control_round_caught_inside():
    """MR-TX-514: the TX with the move's quotient rounded up (``control_wrong="round"``): the
    ports match the model on MR-TX-496's run (a byte of a window changes no frame's timing),
    the windows' updates inside differ from the model's at a scaled move's write."""
    core, drv, model, items, seen = tx_control_run("round")
    assert core.mismatches == 0
    assert seen != model.cw_updates


@pytest.mark.slow
def test_tx_control_mul_step_caught_inside():
    """MR-TX-517: the TX with MR-CW-142's serial product testing the multiplier's next bit
    (``control_wrong="mul_step"``): unlike MR-TX-514's rounding, the windows it moves are far
    off and the ports show it (measured: the host's setup ``ready`` at cycle 5,503, where the
    move writes differ)."""
    from metaroce.tb.lockstep import Mismatch
    with pytest.raises(Mismatch):
        tx_control_run("mul_step")


def control_verilator(env):
    from metaroce.sim import verilator as vl
    from metaroce.tb import build as tb_build
    b = tb_build.build(control_block(), 64)
    row = vl.run_one(b, "metaroce.tb.tx", "tx_hints", {"TX_HINTS": "1", "TX_CONTROL": "1", **env},
                     out_var="TX_OUT")
    print(row)
    return row


@pytest.mark.slow
@pytest.mark.parametrize("run", ["directed", "random"])
def test_tx_control_verilator(run):
    """MR-TX-513/517 under Verilator (``tb/tx.py`` ``tx_hints`` with ``TX_CONTROL=1``): MR-TX-496's
    directed and random runs on ``Tx(hints=True, control=True)``: 0 mismatches, every work
    request completed, every event's windows ``CwndModel``'s, moves and a refill made."""
    row = control_verilator({"TX_HINTS_RUN": run})
    assert row["mismatches"] == 0 and row["completions"] == row["work_requests"]
    assert row["equal"] == row["equal_unit"] == row["events"] > 25 and row["move"] >= 4
    if run == "directed":
        assert row["scaled"] >= 1 and row["refill"] >= 1
        assert row["sched_windows"] == row["windows"]


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2])
def test_control_inside_random_model(seed):
    """MR-TX-513 (model, slow): MR-TX-496's random run with the control path inside: every work
    request completes and the checker passes; after every event of the unit the windows of its
    connection are ``CwndModel``'s; moves (scaled ones too) made."""
    model = TxCycleModel(64, **SMALL, hints=True, control=True)
    drv, items, sem = hc.random_driver(model, seed)
    run_alone(model, drv)
    xc.check(sem, items, drv)
    mv = model.ctl.moves
    assert mv["move"] >= 5 and mv["scaled"] >= 1, mv
    assert hc.check_hint_run(drv, loop=model.ctl.loop) > 25
