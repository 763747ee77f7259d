"""Pacing in the row scheduler (docs/spec/hw-tx-sched.md section 16p, MR-TXS-337..346): the
row model with the pacing condition (``TxSchedRowsModel(pacing=True)``) joined with the
per-frame pacer (``PacedTxSchedCycleModel(rows=True)``) on section 14's drivers: the register
scheduler's properties (MR-TXS-165, MR-TXS-178), the replay of its operations with the pacing
events through ``TxSchedModel(pacing=True)``, the register scheduler's paced cycle model on the
same traffic; the RTL (``TxSchedRows(pacing=True)`` in ``PacedTxSched(rows=True)``) in lockstep
with the model; negative controls."""
import pytest

from metaroce.models import pacer as pm
from metaroce.models import tx_pace_cases as pc
from metaroce.models import tx_sched_cases as tc
from metaroce.models.driver import run_alone
from metaroce.models.tx_pace import PacedTxSchedCycleModel
from metaroce.models.tx_sched import OP_WRITE, SMALL, TxSchedModel
from metaroce.models.tx_sched_rows import replay

from test_tx_sched_rows import completions, per_stream_chunks
# the register join's traffic and driver (MR-TXS-167's rate writes, MR-TXS-178's short frames)
from test_tx_pace import RETIME, SHORT, _driver, _items


def queues_hold(model):
    """MR-TXS-339, checked every cycle: each connection at most once in the active and late
    queues, and one with an action on its row (``decide_conn``: due, or a stale head to drop)
    is in the active queue or the pipeline, or waits for its turn (``pend``) or in the late
    queue (``inlq``)."""
    m = model.sched

    def on_cycle(cycle, ins, outs):
        assert len(set(m.active)) == len(m.active)
        assert len({c for c, _ in m.late}) == len(m.late)
        in_pipe = {op.conn for op in m.pipe.ops()}
        for c in range(m.conns):
            if c not in in_pipe and c not in m.active:
                row = m._load(c, m.mem[c])
                if m.sem.decide_conn(0) is not None:
                    assert row["conn"]["pend"] or row["conn"]["inlq"], \
                        f"cycle {cycle}: connection {c} left out"
    return on_cycle


def _run(seed, n=30, drv_kw=None, rows=True, **kw):
    items = _items(seed, n)
    model = PacedTxSchedCycleModel(64, **SMALL, rows=rows, **kw)
    drv = run_alone(model, _driver(model, items, seed, **(drv_kw or {})),
                    on_cycle=queues_hold(model) if rows else None)
    return model, drv, items


def _short_run(seed, rows=True, **kw):
    items = tc.traffic(TxSchedModel(**SMALL), 30, seed=seed, max_len=3 * SMALL["mtu"],
                       sends=0.3, reads=0.15, atomics=0.15)
    rsps = tc.responses(TxSchedModel(**SMALL), 6, seed=seed, max_len=2 * SMALL["mtu"])
    model = PacedTxSchedCycleModel(64, **SMALL, rows=rows, **kw)
    drv = run_alone(model, _driver(model, items, seed, rsps=rsps, **SHORT),
                    on_cycle=queues_hold(model) if rows else None)
    return model, drv, items, rsps


def test_rows_pace_ports():
    """MR-TXS-337: with ``pacing`` the row model has ``TxSched(pacing=True)``'s pacing ports
    (the register scheduler's cycle model's names), the row its pacing fields (36 bits: 2,790
    at 4,096 x 8); without it neither. MR-TXS-481: the initial-PSN port in both."""
    from metaroce.models.tx_sched import TxSchedCycleModel
    from metaroce.models.tx_sched_rows import TxSchedRowsModel, row_layouts
    for pacing in (False, True):
        rows = TxSchedRowsModel(64, **SMALL, pacing=pacing).port_names()
        reg = TxSchedCycleModel(64, **SMALL, pacing=pacing).port_names()
        assert set(rows["inputs"]) == set(reg["inputs"])
        assert set(rows["outputs"]) == set(reg["outputs"])
    big = dict(conns=4096, paths=8)
    assert row_layouts(**big, pacing=True).row.size - row_layouts(**big).row.size == 36
    # MR-TXS-462: 2,547 before; MR-TXS-482: 2,555 before; MR-TXS-490 (live46's 8-bit laps):
    # 2,556 before; MR-TXS-499 (live47's quiet counts, 8 x 10 bits): 2,710 before
    assert row_layouts(**big, pacing=True).row.size == 2790


@pytest.mark.parametrize("seed", [1, pytest.param(2, marks=pytest.mark.slow), pytest.param(3, marks=pytest.mark.slow)])
def test_rows_paced_frames_not_early(seed):
    """MR-TXS-338, MR-TXS-339, MR-TXS-341, MR-TXS-342, MR-TXS-343, MR-TXS-165: the rows joined
    with the pacer (connection 0 at 100 Gb/s,
    random rate writes, random traffic with losses, idle cycles and backpressure): no packet
    before its connection's ``pace_until``, no charge forced, every charge in order, the pacer
    moved the time for some; no connection with an action left out of the queues
    (``queues_hold``); MR-TXS-050's checker; the replay
    with the pacing events (MR-TXS-341); against the register scheduler's paced cycle model on
    the same traffic, each stream's first transmissions and the good completions in order, the
    completions as a multiset (MR-TXS-231)."""
    model, drv, items = _run(seed)
    r = pc.check_paced(model, SMALL["mtu"])
    assert r["early"] == [] and r["forced"] == [] and r["charges_in_order"]
    assert r["charged"] >= 15 and r["moved"] >= 1 and r["packets"] > r["charged"]
    tc.check(TxSchedModel(**SMALL), items, drv.res)
    frames, _ = replay(model.sched)
    assert sum(map(len, frames.values())) == len(drv.res["frames"])
    assert model.sched.counts["turn"] == r["charged"]
    reg, drv2, _ = _run(seed, rows=False)
    assert per_stream_chunks(drv.res) == per_stream_chunks(drv2.res)
    assert completions(drv.res) == completions(drv2.res)


@pytest.mark.parametrize("seed", [1, pytest.param(2, marks=pytest.mark.slow), pytest.param(3, marks=pytest.mark.slow), pytest.param(4, marks=pytest.mark.slow)])
def test_rows_retimed_frames_not_early(seed):
    """MR-TXS-167, MR-TXS-340: with re-timing writes (a time 200 ns before to 600 ns after
    ``now``, as a row operation), no packet before the pacer's ``pace_until``; the replay and
    the checker pass; the join never found ``s_retime`` not ready with a write offered."""
    model, drv, items = _run(seed, drv_kw=RETIME)
    r = pc.check_paced(model, SMALL["mtu"])
    assert r["early"] == [] and r["charges_in_order"]
    assert model.sched.counts["retime"] >= 4 + SMALL["conns"]
    tc.check(TxSchedModel(**SMALL), items, drv.res)
    replay(model.sched)


@pytest.mark.parametrize("seed", [1, pytest.param(2, marks=pytest.mark.slow), pytest.param(3, marks=pytest.mark.slow)])
def test_rows_short_frames_own_gap(seed):
    """MR-TXS-175..178 in the rows: MR-TXS-178's traffic (short last chunks, SENDs, READ
    requests, atomics, READ responses; connection 0 at 20 Gb/s): every packet of the paced
    connection charged and following the one before by its own gap; none early; the line
    rate's short packets not charged; late connections woken from the late queue
    (MR-TXS-339); the replay and the checker pass."""
    model, drv, items, rsps = _short_run(seed)
    assert model.sched.counts["wake"] >= 5
    g = pc.check_gaps(model, SHORT["rates"])
    assert g["close"] == [] and g["pairs"] >= 10 and g["short"] >= 3
    r = pc.check_paced(model, SMALL["mtu"])
    assert r["early"] == [] and r["forced"] == [] and r["charges_in_order"]
    ch = [(c, wl) for (c, _, _, x), wl in zip(model.packets, model.packet_wl) if x]
    assert sum(c == 0 for c, _ in ch) == sum(p[0] == 0 for p in model.packets)
    assert all(wl >= SMALL["mtu"] + 74 for c, wl in ch if c == 1)
    tc.check(TxSchedModel(**SMALL), items, drv.res, rsps=rsps)
    replay(model.sched)


@pytest.mark.parametrize("rate, interval", [(0, 13), (100_000, 29), (50_000, 52)])
def test_rows_turn_timing(rate, interval):
    """MR-TXS-344, MR-TXS-339: one connection alone, one 8-MTU WRITE, no idle cycles, no backpressure, no
    loss: a full-MTU packet every 13 cycles at the line rate (the register scheduler's 9 and
    4 cycles of the turn's and the schedule op's pipeline), paced one every gap rounded up to
    cycles plus 6 (the wake's compare on last cycle's now, the wake op, the schedule op), 6
    cycles after the first cycle whose ``now`` is not before ``pace_until``; the packets are the
    register scheduler's."""
    items = [tc.wr_item(0, 0, 8 * SMALL["mtu"], wr_id=0, op=OP_WRITE)]
    got = []
    for rows in (True, False):
        model = PacedTxSchedCycleModel(64, **SMALL, rows=rows)
        drv = run_alone(model, _driver(model, items, 0, rates=[rate, 0], p_idle=0, p_bp=0,
                                       p_rate=0, loss=0, p_ack=0))
        got.append((model, drv))
    (model, drv), (_, drv2) = got
    assert per_stream_chunks(drv.res) == per_stream_chunks(drv2.res)
    t = [now for _, now, _, _ in model.packets]
    assert len(t) == 8
    assert [(b - a) // 4 for a, b in zip(t[1:], t[2:])] == [interval] * 6
    gap = pm.mtu_gap_ns(pc.mtu_wire(SMALL["mtu"]), rate or pc.LINE_MBPS)
    assert (interval - 6) * 4 >= gap > (interval - 7) * 4 or rate == 0
    if rate:
        assert all(24 <= now - pu < 28 for _, now, pu, _ in model.packets[2:])
        assert model.sched.counts["wake"] >= 6


# ---------------------------------------------------------------- negative controls (model)

@pytest.mark.parametrize("seed", [1, pytest.param(2, marks=pytest.mark.slow)])
def test_rows_condition_ignored_sends_early(seed):
    """MR-TXS-343, negative control: the rows with the condition left out of the schedule op
    (``pace_ignored``) send packets before ``pace_until`` on MR-TXS-178's runs (connection 0
    at 20 Gb/s); a replay against the register scheduler's semantics with the condition
    fails."""
    model, *_ = _short_run(seed, pace_ignored=True)
    assert pc.check_paced(model, SMALL["mtu"])["early"]
    model.sched.pace_ignored = False
    with pytest.raises(AssertionError):
        replay(model.sched)


@pytest.mark.parametrize("seed", [1, pytest.param(2, marks=pytest.mark.slow)])
def test_rows_full_only_charge_too_close(seed):
    """MR-TXS-343, negative control: the first slice's charge (full MTUs only,
    ``pace_full_only``) in the rows: a packet follows a short one closer than its gap."""
    model, *_ = _short_run(seed, pace_full_only=True)
    assert pc.check_gaps(model, SHORT["rates"])["close"]


def test_rows_without_late_queue_stalls():
    """MR-TXS-343, negative control: without the late queue (``late_queue=False``) a paced
    connection whose turn left it late is never woken: test_rows_turn_timing's WRITE at
    50 Gb/s (no reports while it sends) stops after its first packets: the driver's "no
    progress"."""
    items = [tc.wr_item(0, 0, 8 * SMALL["mtu"], wr_id=0, op=OP_WRITE)]
    model = PacedTxSchedCycleModel(64, **SMALL, rows=True, late_queue=False)
    drv = _driver(model, items, 0, rates=[50_000, 0], p_idle=0, p_bp=0, p_rate=0, loss=0,
                  p_ack=0)
    drv.limit = 3000
    with pytest.raises(AssertionError, match="no progress"):
        run_alone(model, drv)
    assert model.sched.counts["wake"] == 0 and len(model.packets) < 8


def test_rows_replay_checks_the_charge():
    """MR-TXS-341, negative control: a charge logged with another time or wire length, or not
    logged, fails the replay."""
    model, _, _ = _run(1, n=8)
    ev = model.sched.events
    k = next(i for i, e in enumerate(ev) if e[0] == "ask")
    for bad in (dict(ev[k][2], now=ev[k][2]["now"] + 4), dict(ev[k][2], wl=ev[k][2]["wl"] + 4)):
        model.sched.events = ev[:k] + [ev[k][:2] + (bad,) + ev[k][3:]] + ev[k + 1:]
        with pytest.raises(AssertionError):
            replay(model.sched)
    model.sched.events = ev[:k] + ev[k + 1:]
    with pytest.raises(AssertionError):
        replay(model.sched)
    model.sched.events = ev
    replay(model.sched)


# ---------------------------------------------------------------- the RTL (MR-TXS-344/345)

def _rtl_lockstep(case, seed=1, n=6, hdl=None, drv_kw=None, **dut_kw):
    """``PacedTxSched(rows=True)`` (``TxSchedRows(pacing=True)`` and ``PacerFrame``) in lockstep
    with ``PacedTxSchedCycleModel(rows=True)``, every output every cycle. ``case``: "short"
    (MR-TXS-178's traffic, connection 0 at 20 Gb/s, READ responses), "retime" (MR-TXS-167's
    writes, connection 0 at 100 Gb/s), "short5" (the short traffic, connection 0 at 5 Gb/s) or
    "alone" (test_rows_turn_timing's WRITE at 50 Gb/s).
    ``hdl``: a wrong form's module; ``drv_kw``: more of the driver's options (MR-TXS-485's
    initial PSNs)."""
    from metaroce.hdl.tx_pace import PacedTxSched
    from metaroce.tb.lockstep import run_amaranth
    rsps = ()
    model = PacedTxSchedCycleModel(64, **SMALL, rows=True)
    if case in ("short", "short5"):
        items = tc.traffic(TxSchedModel(**SMALL), n, seed=seed, max_len=3 * SMALL["mtu"],
                           sends=0.3, reads=0.15, atomics=0.15)
        rsps = tc.responses(TxSchedModel(**SMALL), 2, seed=seed, max_len=2 * SMALL["mtu"])
        # short5: connection 0 at 5 Gb/s (4 wire bytes are 6.4 ns of its gap)
        drv = _driver(model, items, seed, rsps=rsps, **(drv_kw or {}),
                      **dict(SHORT, rates=[5_000, 0]) if case == "short5" else SHORT)
    elif case == "retime":
        items = _items(seed, n)
        drv = _driver(model, items, seed, **(drv_kw or {}), **RETIME)
    else:
        items = [tc.wr_item(0, 0, 8 * SMALL["mtu"], wr_id=0, op=OP_WRITE)]
        drv = _driver(model, items, 0, rates=[50_000, 0], p_idle=0, p_bp=0, p_rate=0, loss=0,
                      p_ack=0)
    cls = hdl.TxSchedRows if hdl is not None else None
    core = run_amaranth(PacedTxSched(64, **SMALL, rows=True, rows_cls=cls, **dut_kw), model,
                        drv, busy=model.busy)
    return core, model, drv, items, rsps


@pytest.mark.parametrize("case, seed, n", [
    ("short", 1, 6), pytest.param("alone", 0, 1, marks=pytest.mark.slow),
    pytest.param("retime", 1, 20, marks=pytest.mark.slow),
    pytest.param("short", 2, 20, marks=pytest.mark.slow)])
def test_rows_rtl_paced(case, seed, n):
    """MR-TXS-345, MR-TXS-342: the RTL join with the rows against its model, every output every cycle,
    random traffic with losses, idle cycles, random backpressure on every output, the pacer's
    opens and (``retime``) re-timing writes: 0 mismatches; then the checker, the replay, no
    packet early, no charge forced, the charges in order, late connections woken."""
    core, model, drv, items, rsps = _rtl_lockstep(case, seed, n)
    assert core.mismatches == 0
    tc.check(TxSchedModel(**SMALL), items, drv.res, rsps=rsps)
    replay(model.sched)
    r = pc.check_paced(model, SMALL["mtu"])
    assert r["early"] == [] and r["charges_in_order"] and r["charged"] >= 6
    assert r["forced"] == [] or case == "retime"
    assert model.sched.counts["wake"] >= 1 or case == "retime"


@pytest.mark.slow      # 33 s and 110 s at load 4: the unpaced rows' lockstep is the default's
@pytest.mark.parametrize("case, seed, n", [("short", 1, 6), ("retime", 2, 20)])
def test_rows_rtl_paced_initial_psns(case, seed, n):
    """MR-TXS-485, MR-TXS-342: the paced join with the rows (``PacedTxSched(rows=True)``: the
    rows' ``s_psn`` passed through) against its model with the initial-PSN writes (every path's
    near 2^24, landed; one per connection after its first frame, ignored): 0 mismatches, the
    checker (each path's PSNs from its initial PSN), the replay, the late writes ignored."""
    from test_tx_sched_rows import psn_case
    core, model, drv, items, rsps = _rtl_lockstep(case, seed, n, drv_kw=psn_case(SMALL, seed))
    assert core.mismatches == 0
    tc.check(TxSchedModel(**SMALL), items, drv.res, rsps=rsps)
    replay(model.sched)
    C, Pn = SMALL["conns"], SMALL["paths"]
    assert model.sched.counts["psn"] == C * Pn + drv.res["psn_ignored"]
    assert drv.res["psn_ignored"] == len({f["conn"] for f in drv.res["frames"]}) >= 1


@pytest.mark.parametrize("old, new, case", [
    # MR-TXS-339: the wake's compare on this cycle's now, not last cycle's (a cycle early)
    ("wake_ok = late_q.nonempty & ~_time_lt(now_r, late_head.seen)",
     "wake_ok = late_q.nonempty & ~_time_lt(self.now, late_head.seen)", "alone"),
    # MR-TXS-160/339: `late` never holds a packet (the due term without the time compare)
    pytest.param("m.d.comb += lt_seen.eq(_time_lt(self.now, cr.seen))",
                 "m.d.comb += lt_seen.eq(0)", "alone", marks=pytest.mark.slow),
    # MR-TXS-339: a connection left late never pushed into the late queue
    pytest.param("m.d.comb += push_late.eq(~refused & armed & ~inlq_pre)",
                 "m.d.comb += push_late.eq(0)", "alone", marks=pytest.mark.slow),
    # MR-TXS-175: the charge's wire length without the payload's padding to 4 bytes
    pytest.param("words = g_nb[2:] + g_nb[:2].any()", "words = g_nb[2:]", "short5",
                 marks=pytest.mark.slow)])
def test_rows_rtl_pace_wrong_forms_fail(old, new, case):
    """MR-TXS-345, negative controls: each wrong form of the rows' pacing mismatches the
    model."""
    from metaroce.tb.lockstep import Mismatch, wrong_form
    hdl = wrong_form("tx_sched_rows", old, new)
    with pytest.raises(Mismatch):
        _rtl_lockstep(case, hdl=hdl)


@pytest.mark.slow
def test_rows_rtl_full_only_fails():
    """MR-TXS-345, negative control: the rows charging the full-MTU packets only
    (``TxSchedRows(pace_full_only=True)``) mismatch the model on MR-TXS-178's traffic."""
    from metaroce.tb.lockstep import Mismatch
    with pytest.raises(Mismatch):
        _rtl_lockstep("short", pace_full_only=True)


def test_rows_rtl_pace_ports():
    """MR-TXS-337, MR-TXS-345: ``TxSchedRows(pacing=True)``'s pacing ports are ``TxSched(pacing=True)``'s
    (the layouts), none without ``pacing``; the join with the rows has the register join's
    ports (MR-TXS-164; MR-TXS-481: the initial-PSN port too)."""
    from metaroce.hdl.tx_pace import PacedTxSched
    from metaroce.hdl.tx_sched import TxSched
    from metaroce.hdl.tx_sched_rows import TxSchedRows
    reg = TxSched(64, **SMALL, pacing=True).signature.members
    rows = TxSchedRows(64, **SMALL, pacing=True).signature.members
    for n in ("m_pace", "s_turn", "s_retime", "line_mbps"):
        assert rows[n].flow == reg[n].flow
        if n != "line_mbps":
            assert rows[n].signature.members["payload"].shape == \
                reg[n].signature.members["payload"].shape
        else:
            assert rows[n].shape == reg[n].shape
        assert n not in TxSchedRows(64, **SMALL).signature.members
    assert set(PacedTxSched(64, **SMALL, rows=True).signature.members) == \
        set(PacedTxSched(64, **SMALL).signature.members)


# ---------------------------------------------------------------- the TX top (MR-TXS-346)

def _tx_run(seed, n, rtl=False):
    """test_tx_top_pace's runs with the rows: ``n`` work requests of MR-TX-236's traffic
    (connection 0 at 5 Gb/s, rate writes, 10 % loss), or (``n`` None) its default work until its
    4 frames are out (connection 0 at 50 Gb/s)."""
    from test_tx_top_pace import _run
    return _run(seed, n, rtl=rtl, dut_kw={"rows": True}, rows=True)


def test_tx_rows_paced_options():
    """MR-TXS-346: ``Tx(rows=True, pacing=True)`` builds the rows joined to the pacer
    (``PacedTxSched`` over ``TxSchedRows``) and its model ``PacedTxSchedCycleModel(rows=True)``
    over ``TxSchedRowsModel``; the ports are the paced engine's; with verdicts refused."""
    from metaroce.hdl.tx import Tx
    from metaroce.hdl.tx_pace import PacedTxSched
    from metaroce.hdl.tx_sched_rows import TxSchedRows
    from metaroce.models.tx import TxCycleModel
    from metaroce.models.tx_sched_rows import TxSchedRowsModel
    model = TxCycleModel(64, **SMALL, pacing=True, rows=True)
    assert isinstance(model.sched, TxSchedRowsModel) and model.sched.pacing
    assert model.port_names() == TxCycleModel(64, **SMALL, pacing=True).port_names()
    t, p = Tx(64, **SMALL, pacing=True, rows=True), Tx(64, **SMALL, pacing=True)
    for blk in (t, p, t.sched, p.sched, t.sched.sched, p.sched.sched, t.sched.pacer,
                p.sched.pacer, t.rtx, p.rtx, t.data, p.data, t.cwnd, p.cwnd):
        blk._MustUse__silence = True        # inspected, not elaborated
    assert isinstance(t.sched, PacedTxSched) and isinstance(t.sched.sched, TxSchedRows)
    assert t.signature == p.signature
    for cls in (Tx, TxCycleModel):
        with pytest.raises(ValueError):
            cls(64, **SMALL, pacing=True, rows=True, verdicts=True)


def test_tx_rows_paced_model():
    """MR-TXS-346: the engine's model with the rows and pacing on MR-TX-236's traffic: no
    packet decided before its bounds, every frame on ``m_axis`` not before them, the charges in
    order, the pacer moved the time; every work request completes (MR-TX-150's checker); the
    rows' replay (MR-TXS-341)."""
    from test_tx_top_pace import check_paced_run
    model, drv, items, _ = _tx_run(1, 12)
    check_paced_run(model, drv, items)
    replay(model.sched)


@pytest.mark.slow
def test_tx_rows_paced_lockstep():
    """MR-TXS-346: ``Tx(rows=True, pacing=True)`` against its cycle model in the Amaranth
    simulator, every output every cycle, random backpressure and AXI latency, on MR-TX-236's
    default work until its 4 frames are out: 0 mismatches, every charge in order, none early,
    connection 0's second and third packets 6 cycles after the first cycle at or past their
    ``pace_until`` (MR-TXS-344)."""
    model, drv, items, core = _tx_run(1, None, rtl=True)
    assert core.mismatches == 0
    r = pc.check_paced(model.paced, SMALL["mtu"])
    assert r["early"] == [] and r["forced"] == [] and r["charges_in_order"] and r["moved"]
    assert r["charged"] == 4 and len(drv.res["frames"]) == 4
    f = pc.check_frames_left(model.paced, drv.res["left"])
    assert f["early"] == [] and f["same_count"]
    waited = [(now - pu) // 4 for c, now, pu, _ in model.paced.packets if c == 0][1:]
    assert waited == [6, 6]
