"""The congestion windows in the TX top (docs/spec/hw-tx.md MR-TX-105..107): the retransmit
unit's ACK events (MR-TX-070/071) drive the Cwnd block, whose updates are the scheduler's path
windows. An ECN-marked ACK stream on one path shrinks that path's window and holds the path
back; with ``cc_on`` low the same traffic keeps the scheduler's constant windows. The directed
run is models/tx_cases.py's (``cc_work``, ``cc_driver_kw``), shared with tb/tx.py's ``tx_cc``
(Verilator, tests/test_tx_rtl.py)."""
import pytest

from metaroce.models import protocol as P
from metaroce.models import tx_cases as xc
from metaroce.models.tx import SMALL, TxCycleModel

CONN, MARKED = xc.CC_CONN, xc.CC_MARKED


def run(cc_on, *, rtl=False, width=64, interval=1):
    """The directed run; returns the driver and the model at the end (``interval``: the
    scheduler's, MR-TXS-417)."""
    items, lay = xc.cc_work(SMALL)
    model = TxCycleModel(width, **SMALL, interval=interval)
    kw = xc.cc_driver_kw(SMALL, cc_on)
    tmpls = xc.templates(SMALL["conns"], SMALL["paths"])
    if rtl:
        from metaroce.hdl.tx import Tx
        from metaroce.tb.lockstep import run_amaranth
        drv = xc.Driver(model.lay, width, items, lay, tmpls, **kw)
        core = run_amaranth(Tx(width, **SMALL, interval=interval), model, drv, busy=model.busy)
        assert core.mismatches == 0
    else:
        drv = xc.run_model(model, items, lay, tmpls, **kw)
    assert len(drv.res["cqe"]) == len(items) and all(c["status"] == 0 for c in drv.res["cqe"])
    return drv, model


def windows(model):
    """(the scheduler's path windows of CONN, the Cwnd block's)."""
    sched = model.sched.sem.path
    cw = model.cwnd.sem.path[CONN]
    paths = SMALL["paths"]
    return ([sched[CONN * paths + p]["cwnd"] for p in range(paths)],
            [cw[p]["cwnd"] for p in range(paths)])


def second_half(drv):
    """Frames per path in the second half of the run (once the cuts took the window down)."""
    cyc = drv.res["frame_cycles"]
    half = cyc[len(cyc) // 2]
    n = [0] * SMALL["paths"]
    for f, c in zip(drv.res["frames"], cyc):
        if c >= half:
            n[f.mrdh.path] += 1
    return n


def check_marked(drv, model):
    """MR-TX-107: the marked path's window is cut to its floor and the path carries fewer
    packets; the scheduler holds exactly the Cwnd block's windows; an unmarked path's window
    grew (the coupled increase; another may pay the cut's debt, MR-CW-015)."""
    sched_w, cw_w = windows(model)
    assert sched_w == cw_w
    assert sched_w[MARKED] == P.path_window_floor(SMALL["mtu"], SMALL["paths"])
    assert max(w for p, w in enumerate(sched_w) if p != MARKED) > SMALL["cwnd"]
    n = second_half(drv)
    assert all(n[MARKED] * 2 < x for p, x in enumerate(n) if p != MARKED), n
    return n


def test_ecn_marks_shrink_a_path_window_and_hold_it_back():
    """MR-TX-105, MR-TX-106, MR-TX-107 (model): CE echoes on path 1's ACKs cut its window
    (MR-CW-013) down to its floor, the scheduler's window of path 1 is the Cwnd block's, and
    in the second half of the run path 1 carries under half the packets of each other path
    (6 against 14 each); an unmarked window grew by the coupled increase (MR-CW-012)."""
    drv, model = run(True)
    check_marked(drv, model)


def test_cc_off_keeps_the_constant_windows():
    """MR-TX-106: with ``cc_on`` low the ACK events are dropped: the setup writes still set
    the windows (12,500 each, as the reset value), no ACK changes them, and the marked path
    carries its share."""
    drv, model = run(False)
    sched_w, cw_w = windows(model)
    assert sched_w == cw_w == [SMALL["cwnd"]] * SMALL["paths"]
    n = second_half(drv)
    assert max(n) - min(n) <= 1, n


@pytest.mark.slow
@pytest.mark.parametrize("interval", [1, 8])
def test_ecn_marks_lockstep_64(interval):
    """MR-TX-107 on the RTL: the same run in lockstep with the model in the Amaranth simulator
    (every output every cycle): 0 mismatches, and the same cut; MR-TXS-417: also with the
    scheduler at interval 8 (s_cwnd gated, Cwnd's updates waiting on its ready)."""
    drv, model = run(True, rtl=True, interval=interval)
    check_marked(drv, model)


def test_ecn_marks_at_interval_8():
    """MR-TXS-414, MR-TXS-417 (model): the scheduler at interval 8 in the TX top: Cwnd's
    updates wait on s_cwnd's gated ready, none is lost: the scheduler's windows end equal to the
    Cwnd block's, the marked path's cut to its floor."""
    drv, model = run(True, interval=8)
    check_marked(drv, model)
    assert model.sched.interval == 8 and model.sched.cw_gate.interval == 8


@pytest.mark.parametrize("seed", [1, 2])
def test_ack_events_and_windows_equal_the_endpoints(seed):
    """MR-TX-070, MR-TX-107 against the reference endpoint: its sent packets and the ACKs its
    sender processed (a write over the loopback, 3 % loss early, 10 % of data frames CE
    marked, no slow start, no hints) through the retransmit unit's semantics give one event
    per ACK that resolved records with exactly the endpoint's acknowledged bytes, packets and
    CE count; the Cwnd block's semantics fed those events, with the endpoint's time and srtt
    (where the unit's event differs, MR-TX-071), has the endpoint's path windows after every
    ACK, cuts included."""
    from metaroce.models import retransmit_cases as rc
    from metaroce.models.cwnd import CwndModel
    from metaroce.models.retransmit import RetransmitModel
    conn, paths = 5, 2
    r = rc.endpoint_run(seed, paths=paths, ce=0.1, conn=conn,
                        ep_kw={"first_window": 0, "announce": False})
    unit = RetransmitModel(8, paths, 1024)
    evs = []
    for kind, f in r["items"]:
        if kind == "sent":
            unit.sent(f)
        else:
            unit.ack(f)
            if unit.ackev is not None:
                evs.append(unit.ackev)
    want = r["cc"]
    assert [(e["path"], e["bytes"], e["pkts"], min(e["ce"], e["pkts"])) for e in evs] == \
        [(c["path"], c["bytes"], c["pkts"], c["ce"]) for c in want]
    su = r["cc_setup"]
    cw = CwndModel(8, paths, mtu=su["mtu"], beta_q=su["beta_q"], cap=su["cap"])
    for p in range(paths):
        cw.setup({"conn": conn, "path": p, "cwnd": su["cwnd"][p], "active": 1,
                  "open": int(p == 0), "fresh": 1, "floor": su["floor"], "multi": su["multi"]})
    cuts = 0
    for e, c in zip(evs, want):
        before = cw.path[conn][e["path"]]["cwnd"]
        cw.ack(dict(e, conn=conn, now=c["now"] & P.TIME_MASK, srtt=c["srtt"]))
        assert [cw.path[conn][p]["cwnd"] for p in range(paths)] == c["cwnd"]
        cuts += cw.path[conn][e["path"]]["cwnd"] < before
    assert sum(e["ce"] > 0 for e in evs) > 10 and cuts


def test_scheduler_options_not_built_together_are_refused():
    """MR-TX-317, MR-TXS-417, MR-TXS-444: the TX's RTL and model refuse the same option sets
    (one check, ``models.tx.check_tx_options``): the rows with pacing and the READ rows, an
    interval above 1 with the rows or pacing, the memory heads without the register scheduler
    above interval 1; the engine's set (interval 8, memory heads) is kept."""
    from metaroce.hdl.tx import Tx
    from metaroce.models.tx import check_tx_options
    assert check_tx_options(0, False, True, 8, 1) == (False, 8, True)
    bad = [dict(rows=True, pacing=True, rd_rows=True), dict(rows=True, interval=8),
           dict(pacing=True, interval=8), dict(mem_head=True), dict(rows=True, mem_head=True)]
    for kw in bad:
        args = {"rows": False, "pacing": False, "rd_rows": False, "interval": 1, "mem_head": False, **kw}
        with pytest.raises(ValueError):
            check_tx_options(**args)
    with pytest.raises(ValueError, match="MR-TXS-444"):
        TxCycleModel(64, **SMALL, mem_head=True)
    with pytest.raises(ValueError, match="MR-TXS-444"):
        Tx(64, **SMALL, mem_head=True)
    assert Tx(64, **SMALL, interval=8, mem_head=True).mem_head
