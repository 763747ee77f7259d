"""The share-out in the TX's windows (docs/spec/hw-tx.md section 2.11b, MR-TX-300..308;
hw-cwnd.md MR-CW-123/124): the retransmit unit's verdicts carry the health bits they were
decided on (``Retransmit(verdict_health=True)``), the TX join gives them to the windows built
with the share-out (``Tx(verdicts=True)``, ``share_out`` on by default with verdicts): the unit
in lockstep with its model and a wrong form, the TX model's down-path run, the TX in lockstep
(slow) and its negative control, and the endpoint's "verdicts" trace with the unit's health
rule in the TX join's order."""
import pytest

from metaroce.models import cwnd_cases as cc
from metaroce.models import protocol as P
from metaroce.models import retransmit_cases as rc
from metaroce.models import tx_cases as xc
from metaroce.models.driver import run_alone
from metaroce.models.retransmit import SMALL as RTX_SMALL
from metaroce.models.retransmit import RetransmitCycleModel, recent
from metaroce.models.retransmit import layouts as rtx_layouts
from metaroce.models.rx import unpack
from metaroce.models.tx import SMALL, TxCycleModel, layouts

from test_tx_verdicts import RTO_NS, StateWatch, check_follow, down_run, follow, tx_join_form

PROBE_TIMERS = {"rto_ns": 3000, "retry_limit": 3, "slot_log2": 8}


def test_options_and_layouts():
    """MR-TX-300, MR-TX-301, MR-CW-123: ``healthy`` on the unit's probe item only with the
    option, last; the TX's share-out (the unit's option and the windows') on by default with
    verdicts, refused without them; ``health_wrong`` only with the share-out."""
    plain, health = rtx_layouts(*RTX_SMALL), rtx_layouts(*RTX_SMALL, health=True)
    assert "healthy" not in dict(plain.probe.members)
    assert list(dict(health.probe.members))[-1] == "healthy"
    assert health.probe.size == plain.probe.size + RTX_SMALL[1]
    assert TxCycleModel(64, **SMALL, verdicts=True).share_out
    assert not TxCycleModel(64, **SMALL, verdicts=True, share_out=False).share_out
    assert not TxCycleModel(64, **SMALL).share_out
    assert "healthy" in dict(layouts(verdicts=True, share_out=True).rtx.probe.members)
    with pytest.raises(ValueError):
        TxCycleModel(64, **SMALL, share_out=True)
    from metaroce.hdl.tx import Tx
    t = Tx(64, **SMALL, verdicts=True)
    assert t.share_out and t.cwnd.share_out and t.rtx.verdict_health
    u = Tx(64, **SMALL, verdicts=True, share_out=False)
    assert not (u.share_out or u.cwnd.share_out or u.rtx.verdict_health)
    assert not Tx(64, **SMALL).rtx.verdict_health
    with pytest.raises(ValueError):
        Tx(64, **SMALL, share_out=True)
    with pytest.raises(ValueError):
        Tx(64, **SMALL, verdicts=True, share_out=False, health_wrong=True)


# -- MR-TX-302: the unit with the health bits on its verdicts, in lockstep

def _unit_run(items, *, ages, dut_cls=None, seed=3, **kw):
    from metaroce.hdl.retransmit import Retransmit
    from metaroce.tb.lockstep import run_amaranth
    conns, paths, pool = RTX_SMALL
    dut = (dut_cls or Retransmit)(64, conns=conns, paths=paths, pool=pool, ages=ages,
                                  verdict_health=True, **PROBE_TIMERS)
    model = RetransmitCycleModel(64, conns, paths, pool, ages=ages, verdict_health=True,
                                 **PROBE_TIMERS)
    drv = rc.Driver(model.lay, items, seed=seed, **kw)
    core = run_amaranth(dut, model, drv, busy=model.busy)
    assert core.mismatches == 0
    rc.check_items(model, items, drv.res)
    return [unpack(model.lay.probe, w) for w in drv.res["probe"]]


def _stale_health_items():
    """Connection 9: path 0 acknowledged at once (its RTT sample a few ns), path 1's packet
    lost, path 2 acknowledged before each of path 1's expiries (no RTT sample: the trigger PSN
    not among the acknowledged, srtt0's 4 RTTs): the first expiry a tail probe, the second a
    timeout whose verdict (SUSPECT) has path 2 healthy and path 0 not (its raw bit set, its
    progress older than its 4 RTTs)."""
    c = 9
    return [rc.sent_item(c, 0, 0), rc.ack_item(c, 0, 1, 0, psn=0), rc.sent_item(c, 1, 0),
            rc.wait_item(2900), rc.sent_item(c, 2, 0), rc.ack_item(c, 2, 1, 0, psn=5),
            rc.wait_item(2900), rc.sent_item(c, 2, 1), rc.ack_item(c, 2, 2, 0, psn=9),
            rc.wait_item(14000)]


def test_unit_verdict_health_lockstep():
    """MR-TX-300, MR-TX-302: the directed run with the ages (one other path's progress aged
    out, one recent) with the option on both: 0 mismatches (m_probe compared every cycle),
    every item the replay's (the bits ``RetransmitModel.health_now`` gives at the expiry, the
    path's own cleared); the tail probe's bits 0, the SUSPECT's the recent path's alone."""
    got = _unit_run(_stale_health_items(), ages=True, p_idle=0.0, p_bp=0.3, ns_per_cycle=4,
                    idle_ns=4)
    assert [(x["path"], x["to"], x["verdict"], x["healthy"]) for x in got][:2] == [
        (1, 0, 0, 0), (1, 1, P.PATH_SUSPECT, 0b100)], got


@pytest.mark.slow
def test_unit_verdict_health_lockstep_traffic():
    """MR-TX-302: ``test_lockstep_tail_probes``' traffic (a black-holed path, lost ACKs,
    backpressure on m_probe; no ages) with the option on both: 0 mismatches, every item the
    replay's; verdicts with health bits made, tail probes' 0, no item with its own path's bit.
    (Slow: 300 items, about 30 s at load 13.)"""
    items = rc.traffic(*RTX_SMALL, 300, seed=3, black_hole=6, rto_ns=3000, ack_loss=0.125,
                       shared=2)
    got = _unit_run(items, ages=False, p_idle=0.2, p_bp=0.4)
    assert any(x["to"] and x["healthy"] for x in got)
    assert all(x["healthy"] == 0 for x in got if not x["to"])
    assert all(not (x["healthy"] >> (x["path"] & 3)) & 1 for x in got)


def test_unit_verdict_health_wrong_form_fails():
    """MR-TX-302's negative control: the RTL giving the raw health bits (the ages left out of
    the item, the verdict still aged) fails the directed run's lockstep."""
    from metaroce.tb.lockstep import Mismatch, wrong_form
    cls = wrong_form("retransmit", "v[:lay.paths] & rec & ~path_bit",
                     "v[:lay.paths] & ~path_bit").Retransmit
    try:
        _unit_run(_stale_health_items(), ages=True, dut_cls=cls, p_idle=0.0, p_bp=0.3,
                  ns_per_cycle=4, idle_ns=4)
    except (Mismatch, AssertionError):
        return
    raise AssertionError("the wrong form passed")


# -- MR-TX-303: the TX model's down-path run with the share-out

def _model_run(share_out=True):
    items, lay, kw = down_run()
    model = TxCycleModel(64, **SMALL, verdicts=True, rto_ns=RTO_NS, share_out=share_out)
    drv = xc.Driver(model.lay, 64, items, lay, xc.templates(SMALL["conns"], SMALL["paths"]), **kw)
    watch = StateWatch(model, drv)
    run_alone(model, drv, on_cycle=watch)
    assert len(drv.res["cqe"]) == len(items) and all(c["status"] == 0 for c in drv.res["cqe"])
    return drv, model, watch


def check_shares(model):
    """MR-TX-303: path 1's SUSPECT reaches the windows with the unit's health bits (the other
    three paths, acknowledged within their 4 RTTs) and its window is shared out: after its own
    update, one per healthy path, each its window before plus path 1's // 3 (below the cap).
    Returns the number of share updates."""
    sus = [r for k, r in model.cw_log if k == "path" and not r["restore"]
           and r["verdict"] == P.PATH_SUSPECT]
    assert [(r["path"], r["healthy"]) for r in sus] == [(1, 0b1101)], sus
    ups = [e[1] for e in model.sched.events if e[0] == "cwnd" and e[1]["conn"] == 0]
    last = {}
    for k, u in enumerate(ups):
        if (u["path"] == 1 and k + 3 < len(ups) and [x["path"] for x in ups[k + 1:k + 4]] == [0, 2, 3]
                and 1 in last):
            part = last[1] // 3
            assert [x["cwnd"] for x in ups[k + 1:k + 4]] == [
                min(last[q] + part, xc.CC_CAP) for q in (0, 2, 3)]
            return 3
        last[u["path"]] = u["cwnd"]
    raise AssertionError("no share-out after path 1's SUSPECT")


def test_down_path_share_out_model():
    """MR-TX-259's run with the share-out (model): MR-TX-259's checks hold, and path 1's window
    is shared out to the three healthy paths at its SUSPECT (``check_shares``); without the
    share-out the verdict's bits are 0 and no window changes but path 1's."""
    drv, model, watch = _model_run()
    check_follow(model, watch)
    assert check_shares(model) == 3
    drv0, model0, _ = _model_run(share_out=False)
    assert all(r["healthy"] == 0 for k, r in model0.cw_log if k == "path")
    with pytest.raises(AssertionError):
        check_shares(model0)


# -- MR-TX-304: the TX in lockstep (the Amaranth simulator)

def tx_lockstep(down=None, **dut_kw):
    from metaroce.hdl.tx import Tx
    from metaroce.tb.lockstep import run_amaranth
    items, lay, kw = down_run()
    if down is not None:
        kw["down"] = down
    model = TxCycleModel(64, **SMALL, verdicts=True, rto_ns=RTO_NS)
    drv = xc.Driver(model.lay, 64, items, lay, xc.templates(SMALL["conns"], SMALL["paths"]), **kw)
    watch = StateWatch(model, drv)
    dut = Tx(64, **SMALL, verdicts=True, rto_ns=RTO_NS, **dut_kw)
    core = run_amaranth(dut, model, drv, busy=model.busy, on_cycle=watch)
    return drv, model, watch, core


# MR-TX-354: the register scheduler with its kept record (MR-TX-351) in the join
@pytest.mark.slow
def test_tx_share_out_lockstep():
    """MR-TX-304, MR-TX-301: ``Tx(verdicts=True)`` (the share-out on) against ``TxCycleModel(verdicts=True)``
    on MR-TX-259's run (idle cycles, backpressure on every output, AXI latency): 0 mismatches,
    MR-TX-259's checks, path 1's window shared out at its SUSPECT."""
    drv, model, watch, core = tx_lockstep()
    assert core.mismatches == 0
    check_follow(model, watch)
    assert check_shares(model) == 3


@pytest.mark.slow
@pytest.mark.parametrize("wrong", ["health_wrong", "no_share_out"])
def test_tx_share_out_wrong_forms_fail(wrong):
    """MR-TX-304's negative controls: the RTL giving the windows the health bits one path over
    (``health_wrong``), or built without the share-out, mismatches the model (at path 1's
    SUSPECT: the shares go to other paths, or none)."""
    from metaroce.tb.lockstep import Mismatch
    kw = {"health_wrong": True} if wrong == "health_wrong" else {"share_out": False}
    with pytest.raises(Mismatch):
        tx_lockstep(**kw)


# -- MR-TX-306/307: the restore after its ACK's event

#: MR-TX-307: MR-TX-259's run with path 0 down instead: its restore's ACK event is still in
#: the unit when the scheduler restores (the restore first without the hold)
DOWN0 = {(0, 0): (200, 1500)}


def _order_run(hold):
    from tx_restore_order import classify
    items, lay, kw = down_run()
    kw["down"] = DOWN0
    model = TxCycleModel(64, **SMALL, verdicts=True, rto_ns=RTO_NS, restore_after_ack=hold)
    drv = xc.Driver(model.lay, 64, items, lay, xc.templates(SMALL["conns"], SMALL["paths"]), **kw)
    watch = StateWatch(model, drv)
    run_alone(model, drv, on_cycle=watch)
    assert len(drv.res["cqe"]) == len(items) and all(c["status"] == 0 for c in drv.res["cqe"])
    assert watch.compared > 1000 and watch.differ == 0, watch.first
    assert [p["active"] for p in model.cwnd.sem.path[0]] == [1] * SMALL["paths"]
    return classify(model.cw_log)


def test_restore_after_ack_model():
    """MR-TX-306, MR-TX-307 (model): with path 0 down the restore reaches the windows after its
    ACK's event with the hold (the default), before it without; both complete every work
    request with the windows' active bits the scheduler's states on every settled cycle."""
    import sys
    sys.path.insert(0, "docs/hw/probes")
    assert TxCycleModel(64, **SMALL, verdicts=True).restore_after_ack
    with pytest.raises(ValueError):
        TxCycleModel(64, **SMALL, verdicts=True, share_out=False, restore_after_ack=True)
    from metaroce.hdl.tx import Tx
    assert Tx(64, **SMALL, verdicts=True).restore_after_ack
    assert not Tx(64, **SMALL, verdicts=True, share_out=False).restore_after_ack
    with pytest.raises(ValueError):
        Tx(64, **SMALL, verdicts=True, share_out=False, restore_after_ack=True)
    assert _order_run(True) == {"ack_first": 1, "restore_first": 0}
    assert _order_run(False) == {"ack_first": 0, "restore_first": 1}


@pytest.mark.slow
def test_tx_restore_after_ack_lockstep():
    """MR-TX-307: the path-0-down run in lockstep (the Amaranth simulator, every output every
    cycle, backpressure): 0 mismatches, the restore after its ACK's event; negative control:
    the RTL without the hold (``restore_after_ack=False``) mismatches the model with it."""
    import sys
    sys.path.insert(0, "docs/hw/probes")
    from tx_restore_order import classify
    from metaroce.tb.lockstep import Mismatch
    drv, model, watch, core = tx_lockstep(down=DOWN0)
    assert core.mismatches == 0 and len(drv.res["cqe"]) == 4
    assert classify(model.cw_log) == {"ack_first": 1, "restore_first": 0}
    with pytest.raises(Mismatch):
        tx_lockstep(down=DOWN0, restore_after_ack=False)


# -- MR-TX-305: the endpoint's "verdicts" trace with the unit's health rule

@pytest.fixture(scope="module")
def timed_trace():
    """MR-CW-113's trace and the time of each verdict (the endpoint's ``_verdict`` wrapped
    beneath ``endpoint_trace``'s own wrapper: one call per verdict record, in their order)."""
    from metaroce.models import endpoint as E
    orig, times = E.Connection._verdict, []

    def timed(self, p, now):
        times.append(now)
        return orig(self, p, now)

    E.Connection._verdict = timed
    try:
        trace = cc.endpoint_trace(scenario="verdicts", verdicts=True)
    finally:
        E.Connection._verdict = orig
    return trace, times


def unit_health(items, times, paths=4):
    """MR-TX-305: the trace's verdicts with ``healthy`` by the unit's rule (MR-TX-163/203): a
    path's bit set by an ACK event acknowledging packets (dated, with its srtt), cleared by
    its own timeout (a verdict), recent while ``now`` is within 4 srtt of its progress; the
    verdict's own path cleared. Returns the items and the number whose bits differ from the
    endpoint's."""
    bits, t_ack, srtt = {}, {}, {}
    out, differ, k = [], 0, 0
    for kind, r in items:
        if kind == "ack" and r["pkts"]:
            key = (r["conn"], r["path"])
            bits[key], t_ack[key], srtt[key] = 1, r["now"], r["srtt"]
        if kind == "path" and not r["restore"]:
            now = int(times[k])
            k += 1
            h = 0
            for q in range(paths):
                key = (r["conn"], q)
                if q != r["path"] and bits.get(key) and recent(t_ack[key], srtt[key], now):
                    h |= 1 << q
            differ += h != r["healthy"]
            bits[(r["conn"], r["path"])] = 0
            r = dict(r, healthy=h)
        out.append((kind, r))
    assert k == len(times)
    return out, differ


def test_endpoint_trace_unit_health_in_the_tx_join(timed_trace):
    """MR-TX-305, MR-TX-308, MR-CW-124: the trace with the unit's health bits in the TX join's order (each restore
    before its ACK's event, MR-TX-260) through the windows with the share-out: the active bits
    the endpoint's after every kept record, W's mean relative difference from the endpoint's
    under a fifth of the join's without the share-out (MR-TX-260's 2.95 %); the unit's bits
    are the endpoint's on most verdicts. MR-TX-308: with each restore after its ACK's event
    (MR-TX-306) the difference is under a tenth of that (measured: 0)."""
    (config, items, expected), times = timed_trace
    uitems, differ = unit_health(items, times)
    nverd = sum(k == "path" and not r["restore"] for k, r in items)
    its, exps = tx_join_form(uitems, expected, keep_healthy=True)
    n, d, rel, last = follow(config, its, exps, share_out=True)
    n0, d0, rel0, _ = follow(config, *tx_join_form(items, expected))
    e_its, e_exps = tx_join_form(items, expected, keep_healthy=True)
    rel_ep = follow(config, e_its, e_exps, share_out=True)[2]
    # MR-TX-308: each restore after its ACK's event (MR-TX-306's hold): the endpoint's order
    n1, d1, rel1, last1 = follow(config, uitems, expected, share_out=True)
    print(f"\nverdicts {nverd}, unit bits differ {differ}; W mean rel diff: join without "
          f"share-out {rel0:.4%}, endpoint's bits {rel_ep:.4%}, unit's bits {rel:.4%}, "
          f"unit's bits with the restores after their ACKs' events {rel1:.4%}")
    assert n == n0 > 2500 and d == d0 == 0
    assert differ * 4 < nverd
    assert 0 < rel * 5 < rel0, (rel, rel0)
    assert all(all(a) for a in last.values())
    assert n1 == n and d1 == 0 and rel1 * 10 < rel, (rel1, rel)
