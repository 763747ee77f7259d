"""A payload read error names its message by slot and lap (MR-TXS-411, MR-TXS-412, MR-TX-451,
MR-TX-452): a report that comes after its message completed and its slot was taken again is
ignored, not charged to the slot's next message. The TX's cycle model alone here; the RTL in
lockstep under Verilator in tests/test_tx_rtl.py (``test_tx_rtl_late_read_error``) and in the
scheduler's and data path's Amaranth locksteps (their failure drivers draw either lap)."""
import pytest

from metaroce.models import tx_cases as xc
from metaroce.models import tx_sched_cases as tc
from metaroce.models.driver import run_alone
from metaroce.models.tx import SMALL, TxCycleModel
from metaroce.models.tx_sched import SMALL as SCHED_SMALL
from metaroce.models.tx_sched import STATUS_LOC_PROT_ERR, TxSchedModel

_SCHED = ("chunk_window", "mtu", "cwnd", "conn_window", "path_pkts", "ack_every", "resend_depth")


def _sem():
    return TxSchedModel(SMALL["conns"], SMALL["streams"], SMALL["paths"], SMALL["depth"],
                        **{k: SMALL[k] for k in _SCHED})


def test_fail_names_the_entry_of_its_lap():
    """MR-TXS-411/412: a frame request carries its entry's lap; a failure with that lap fails
    the entry, one with the other lap (the slot's previous message's) fails nothing."""
    sem = TxSchedModel(**SCHED_SMALL)
    assert sem.wr(tc.wr_item(0, 0, 3000, wr_id=1)) is None
    frame, sent = sem.apply(sem.decide())
    assert frame["lap"] == sent["lap"] == 0
    other = {"conn": 0, "slot": frame["slot"], "status": STATUS_LOC_PROT_ERR, "lap": 1}
    assert sem.fail_targets(other) == []
    own = dict(other, lap=frame["lap"])
    [(e, status)] = sem.fail_targets(own)
    assert e["wr_id"] == 1 and status == STATUS_LOC_PROT_ERR


def _late_fail_run(*, ignore_lap=False, seed=6, ns=400):
    """The TX model through :func:`tx_cases.late_fail_batch`; the failures whose slot names a
    live entry of the other lap counted (``late``, :func:`tx_cases.watch_late_fails`). With
    ``ignore_lap`` the scheduler's model fails the slot's entry whatever the lap (the wrong
    form)."""
    width = 64
    model = TxCycleModel(width, **SMALL)
    late = xc.watch_late_fails(model.sched.sem, ignore_lap=ignore_lap)
    items, rsps, drv = xc.late_fail_batch(_sem(), SMALL, model.lay, width, seed=seed,
                                          ns_per_cycle=ns)
    drv.sem = model.sched.sem
    run_alone(model, drv, busy=model.busy)
    return items, rsps, drv, late


def test_late_read_error_is_ignored():
    """MR-TXS-412, MR-TX-451, MR-TX-452: at 400 ns a cycle (RTOs of 100 cycles) a read error
    comes after its message completed and its slot holds the stream's next message; it is
    ignored (the next message completes with status 0), and every probe's read fails as its
    packet's did. MR-TXS-448: the TX's default unit (late ACKs flagged, MR-TXS-445): the run
    until late44 (seed 1 at 200 ns) stopped at 25 of 31 completions (MR-TXS-447's liveness
    limit, removed by live46: ``test_late_fail_batch_completes_where_it_stopped``), this one
    (seed 6 at 400 ns) completes."""
    items, rsps, drv, late = _late_fail_run()
    assert late, "the run has a read error of a slot's previous message"
    s = xc.check(_sem(), items, drv, rsps)
    assert s["probes"] > 0


@pytest.mark.slow
def test_late_read_error_wrong_form_fails():
    """MR-TXS-412 (negative control, ~5 CPU s): the failure applied to the slot's entry
    whatever its lap charges the read error to the next message: the checker's status fails."""
    items, rsps, drv, late = _late_fail_run(ignore_lap=True)
    assert late
    with pytest.raises(AssertionError, match="status 4, want 0"):
        xc.check(_sem(), items, drv, rsps)


#: MR-TXS-447's stopped runs: the batch's run until late44, and stale45's sweep's nine
#: (docs/hw/probes/stale_sweep45.py 1-12 400,160: 15 to 29 of 31 completions on main 07757f2)
_STOPPED = [(1, 200), (1, 400), (7, 400), (9, 400), (11, 400), (1, 160), (2, 160), (10, 160),
            (11, 160), (12, 160)]


@pytest.mark.slow
@pytest.mark.parametrize("seed,ns", _STOPPED)
def test_late_fail_batch_completes_where_it_stopped(seed, ns):
    """MR-TX-521, MR-TXS-491..494 (live46; ~5 CPU s each): the TX model on
    :func:`tx_cases.late_fail_batch` at the runs that stopped on MR-TXS-447's liveness limit (a
    path's RTT above its RTO: every packet of a chunk timed out first) completes every work
    request, the checker passing (each with its own status, every frame as the endpoint
    would send it): the late ACKs' chunks are counted. Their Verilator lockstep:
    ``docs/hw/probes/stale_sweep45.py`` ``--rtl`` (docs/hw/tx-results.md live46). MR-TX-507,
    MR-TXS-489 (live47): the same with the paths' quiet counts (MR-TXS-495), whose default cap
    these runs do not reach."""
    items, rsps, drv, _ = _late_fail_run(seed=seed, ns=ns)
    assert len(drv.res["cqe"]) == len(items)
    xc.check(_sem(), items, drv, rsps)


def _report_order_run(acked_delay=0, seed=6, ns=400):
    """The TX model on ``late_fail_batch`` with the unit's report pushes logged in order (the
    acknowledged queue's and the lost queue's, one walker: one push a cycle) and the register
    scheduler's takes (its ``events``); ``acked_delay`` (the wrong form of MR-TX-505): the
    acknowledged queue's pushes land that many cycles late, a slower queue than the lost
    one's. Returns (pushes, takes) as lists of "a"/"r"."""
    from collections import deque
    width = 64
    model = TxCycleModel(width, **SMALL)
    pushes = []
    for kind, q in (("a", model.rtx.acked_q), ("r", model.rtx.resend_q)):
        line = deque()

        def update(pop, push, value=0, _orig=q.update, _kind=kind, _line=line):
            if push:
                pushes.append(_kind)
            if _kind == "a" and acked_delay:
                _line.append((push, value))
                push, value = _line.popleft() if len(_line) > acked_delay else (False, 0)
            return _orig(pop, push, value)
        q.update = update
    sched = model.sched
    items, rsps, drv = xc.late_fail_batch(_sem(), SMALL, model.lay, width, seed=seed,
                                          ns_per_cycle=ns)
    drv.sem = sched.sem
    run_alone(model, drv, busy=model.busy)
    takes = [{"acked": "a", "resend": "r"}[e[0]] for e in sched.events
             if e[0] in ("acked", "resend")]
    return pushes, takes


def _lost_taken_before_earlier_acked(pushes, takes):
    """The lost reports taken while an acknowledged report pushed before them was not yet
    taken (each queue is a FIFO: the k-th take of a kind is its k-th push)."""
    before, n_a = [], 0
    for kind in pushes:                 # the acknowledged pushes before each lost push
        if kind == "a":
            n_a += 1
        else:
            before.append(n_a)
    bad, taken_a, taken_r = 0, 0, 0
    for kind in takes:
        if kind == "a":
            taken_a += 1
        else:
            bad += taken_a < before[taken_r]
            taken_r += 1
    return bad


@pytest.mark.slow
@pytest.mark.parametrize("form", ["tx", "acked_slow"])
def test_reports_taken_in_the_units_order(form):
    """MR-TX-505, hw-tx-sched.md MR-TXS-497 (live47; ~5 CPU s each): through the TX the
    register scheduler never takes a lost report before an acknowledged report the unit pushed
    before it (the order MR-TXS-496's count rests on), on the late/fail batch (seed 6 at
    400 ns: late ACKs, timeouts and gap losses). Negative control (``acked_slow``: the
    acknowledged queue 20 cycles slower than the lost one): some lost report overtakes."""
    pushes, takes = _report_order_run(acked_delay=20 if form == "acked_slow" else 0)
    assert pushes.count("a") > 30 and pushes.count("r") > 10
    assert sorted(takes) == sorted(pushes)          # every report taken
    bad = _lost_taken_before_earlier_acked(pushes, takes)
    assert (bad > 0) == (form == "acked_slow"), bad
