"""The path verdicts in the TX top's windows (docs/spec/hw-tx.md section 2.11, MR-TX-256..263;
hw-tx-sched.md section 15, MR-TXS-183..187): the scheduler's restores on ``m_restore``, the
fork of the retransmit unit's verdicts into the windows' ``s_path`` and the restore join, in
the model (the TX model with ``verdicts``, the endpoint's "verdicts" trace in the join's form)
and on the RTL (the Amaranth simulator, every output every cycle)."""
import random

import pytest

from metaroce.models import cwnd_cases as cc
from metaroce.models import tx_cases as xc
from metaroce.models import tx_sched_cases as tc
from metaroce.models.cwnd import CwndModel
from metaroce.models.driver import run_alone
from metaroce.models.rx import unpack
from metaroce.models.tx import SMALL, TxCycleModel, layouts, path_record
from metaroce.models import protocol as P
from metaroce.models.tx_sched import SMALL as SMALL_SCHED
from metaroce.models.tx_sched import (PATH_ACTIVE, RESTORE_INPUTS, RESTORE_OUTPUTS,
                                      TxSchedCycleModel, TxSchedModel)

#: MR-TX-259: the run: connection 0's windows opened with a share of 12,500 bytes, 4 WRITEs of
#: 4 KiB, each ACK 50 cycles after its frame, rto_ns 2,000, path 1's route down 200..1,500
DOWN = {(0, 1): (200, 1500)}
RTO_NS = 2000
SHARE = SMALL["cwnd"]


def down_run(seed=3):
    """MR-TX-259's work, host memory and driver arguments."""
    items, lay = xc.cc_work(SMALL, n=4, length=4096)
    kw = xc.cc_driver_kw(SMALL, True, seed=seed)
    kw.update(ce_paths=set(), ack_delay=50, p_idle=0.2, p_bp=0.3, down=DOWN)
    for s in kw["cw_setups"]:
        s["share"] = SHARE
    return items, lay, kw


def settled(model):
    """No window record in flight: the windows idle, no window write in the scheduler's
    pipeline, no restore or kept record pending (MR-TXS-347), no verdict in the scheduler's
    boundary register nor at the head of the unit's probe queue."""
    s, r = model.sched, model.rtx
    head = unpack(model.lay.rtx.probe, r.probe_q.head)
    return (not model.cwnd.busy() and s.cw_b is None and s.cw_d is None
            and not any(p["rst"] or p["kpt"] for p in s.sem.path)
            and not (s.pb is not None and s.pb["to"])
            and not (r.probe_q.level and head["to"]))


class StateWatch:
    """MR-TX-259: on every settled cycle after the setup writes, the windows' active bits of
    ``conns`` against the scheduler's path states (active or not)."""

    def __init__(self, model, drv, conns=(0,)):
        self.model, self.drv, self.conns = model, drv, conns
        self.compared, self.differ, self.first = 0, 0, None

    def __call__(self, cycle, ins, outs):
        m = self.model
        if self.drv.cw_i < len(self.drv.cw_setups) or not settled(m):
            return
        paths = SMALL["paths"]
        for c in self.conns:
            a = [p["active"] for p in m.cwnd.sem.path[c]]
            b = [int(m.sched.sem.path[c * paths + p]["state"] == PATH_ACTIVE)
                 for p in range(paths)]
            self.compared += 1
            if a != b:
                self.differ += 1
                self.first = self.first or (cycle, c, a, b)


def model_run(restores=True):
    items, lay, kw = down_run()
    model = TxCycleModel(64, **SMALL, verdicts=True, restores=restores, rto_ns=RTO_NS)
    drv = xc.Driver(model.lay, 64, items, lay, xc.templates(SMALL["conns"], SMALL["paths"]), **kw)
    watch = StateWatch(model, drv)
    run_alone(model, drv, on_cycle=watch)
    assert len(drv.res["cqe"]) == len(items) and all(c["status"] == 0 for c in drv.res["cqe"])
    return drv, model, watch


def path_records(model):
    return [r for k, r in model.cw_log if k == "path"]


def check_follow(model, watch):
    """MR-TX-259's checks on the model at the end of the run."""
    recs = path_records(model)
    assert any(r["path"] == 1 and not r["restore"] and r["verdict"] == P.PATH_SUSPECT for r in recs), recs
    assert any(r["path"] == 1 and r["restore"] for r in recs), recs
    assert watch.compared > 1000 and watch.differ == 0, (watch.compared, watch.first)
    cw, sched = model.cwnd.sem, model.sched.sem
    win = [p["cwnd"] for p in cw.path[0]]
    assert [p["active"] for p in cw.path[0]] == [1] * SMALL["paths"]
    assert all(sched.path[p]["state"] == PATH_ACTIVE for p in range(SMALL["paths"]))
    assert cw.conn[0]["wsum"] == sum(win)
    assert [sched.path[p]["cwnd"] for p in range(SMALL["paths"])] == win


def test_options_and_ports():
    """MR-TX-256, MR-TXS-183: the option's layouts and ports; the defaults' ports unchanged;
    verdicts with pacing refused; the restores' control only with verdicts."""
    assert "share" not in dict(layouts().cw.setup.members)
    assert "share" in dict(layouts(verdicts=True).cw.setup.members)
    assert TxCycleModel(64, **SMALL, verdicts=True).port_names() == TxCycleModel.port_names()
    names = TxSchedCycleModel(64, **SMALL_SCHED).port_names()
    assert not set(RESTORE_INPUTS + RESTORE_OUTPUTS) & set(names["inputs"] + names["outputs"])
    r = TxSchedCycleModel(64, **SMALL_SCHED, restores=True).port_names()
    assert r["inputs"] == names["inputs"] + RESTORE_INPUTS
    assert r["outputs"] == names["outputs"] + RESTORE_OUTPUTS
    with pytest.raises(ValueError):
        TxCycleModel(64, **SMALL, verdicts=True, pacing=True)
    with pytest.raises(ValueError):
        TxCycleModel(64, **SMALL, restores=False)
    from metaroce.hdl.tx import Tx
    from metaroce.hdl.tx_sched import TxSched
    assert "m_restore" not in TxSched(64, **SMALL_SCHED).signature.members
    assert "m_restore" in TxSched(64, **SMALL_SCHED, restores=True).signature.members
    with pytest.raises(ValueError):
        Tx(64, **SMALL, verdicts=True, pacing=True)
    with pytest.raises(ValueError):
        Tx(64, **SMALL, restores=False)


def test_path_records():
    """MR-TX-257: a restore's record and a verdict's (``healthy`` 0)."""
    lay = layouts(verdicts=True)
    assert path_record(lay, restore={"conn": 1, "path": 3}) == {
        "conn": 1, "path": 3, "verdict": 0, "restore": 1, "healthy": 0}
    assert path_record(lay, probe={"conn": 0, "path": 2, "psn": 9, "to": 1, "verdict": 3}) == {
        "conn": 0, "path": 2, "verdict": 3, "restore": 0, "healthy": 0}


def test_down_path_model():
    """MR-TX-258, MR-TX-259 (model): path 1's route down: the unit's verdicts (REROUTEs of the
    first timeouts, then path 1 suspected) and the scheduler's restore of path 1 reach the
    windows; on every settled cycle each path's active bit is the scheduler's state; at the end
    all four active in both, W the sum, the scheduler's windows the block's; the update of path
    1's restore is the share."""
    drv, model, watch = model_run()
    check_follow(model, watch)
    log = model.cw_log
    k = next(i for i, (kind, r) in enumerate(log) if kind == "path" and r["restore"])
    assert log[k][1]["path"] == 1
    # the restore's own update: the share, path 1 active again (MR-CW-109)
    ups = [e for e in model.sched.events if e[0] == "cwnd" and e[1]["path"] == 1]
    assert any(u[1]["cwnd"] == SHARE for u in ups)


def test_down_path_model_without_restores():
    """MR-TX-261 (model): without the restores path 1 stays out of W to the end: its active bit
    0 while the scheduler has it active, W the other three windows'."""
    drv, model, watch = model_run(restores=False)
    assert watch.differ > 0
    cw, sched = model.cwnd.sem, model.sched.sem
    assert [p["active"] for p in cw.path[0]] == [1, 0, 1, 1]
    assert sched.path[1]["state"] == PATH_ACTIVE
    assert cw.conn[0]["wsum"] == sum(p["cwnd"] for k, p in enumerate(cw.path[0]) if k != 1)


def random_run(seed, cc_on, verdicts, n=30):
    """MR-TX-263: MR-TX-150's random traffic (both connections, 15 % loss, idle cycles,
    backpressure, the timers' expiries), both connections' windows opened by setup writes."""
    sem = TxSchedModel(**SMALL_SCHED)
    items, lay = xc.traffic(sem, n, seed=seed, max_len=4000)
    setups = xc.cc_setups(SMALL, 0) + xc.cc_setups(SMALL, 1)
    if verdicts:
        setups = [dict(x, share=SHARE) for x in setups]
    model = TxCycleModel(64, **SMALL, verdicts=verdicts)
    drv = xc.Driver(model.lay, 64, items, lay, xc.templates(SMALL["conns"], SMALL["paths"]),
                    seed=seed, loss=0.15, cw_setups=setups,
                    cc={"cc_on": cc_on, "cc_beta_q": P.Q_ONE, "cc_cap": xc.CC_CAP})
    watch = StateWatch(model, drv, conns=(0, 1))
    run_alone(model, drv, on_cycle=watch if verdicts else None)
    xc.check(sem, items, drv)
    return drv, model, watch


@pytest.mark.parametrize("seed", [1, pytest.param(2, marks=pytest.mark.slow),
                                  pytest.param(3, marks=pytest.mark.slow),
                                  pytest.param(5, marks=pytest.mark.slow),
                                  pytest.param(7, marks=pytest.mark.slow)])
def test_random_traffic_model(seed):
    """MR-TX-263 (model): on MR-TX-150's random lossy traffic with ``verdicts`` every work
    request completes and the checker passes, with ``cc_on`` and without; with ``cc_on`` the
    windows' active bits follow the scheduler's states on every settled cycle; with ``cc_on``
    low the frames (bytes and cycles) are the default engine's."""
    drv0, _, _ = random_run(seed, 0, False)
    drv1, _, _ = random_run(seed, 0, True)
    frames = [list(zip(d.res["frame_cycles"], d.res["raw"])) for d in (drv0, drv1)]
    assert frames[0] == frames[1] and drv0.res["timeouts"] > 0
    drv2, model, watch = random_run(seed, 1, True)
    assert watch.compared > 1000 and watch.differ == 0, watch.first


# -- MR-TX-260/261: the endpoint's "verdicts" trace in the TX join's form

@pytest.fixture(scope="module")
def trace():
    return cc.endpoint_trace(scenario="verdicts", verdicts=True)


def tx_join_form(items, expected, keep_healthy=False):
    """MR-TX-260: the trace as the TX join may give it: ``healthy`` 0, and each restore before
    the ACK event it followed (the scheduler restores at the ACK's first acknowledged report,
    the unit's event leaves at the walk's end: the two race; this order is the one further
    from the endpoint's), with the states kept where they were."""
    its = [(k, dict(r, healthy=0) if k == "path" and not keep_healthy else r) for k, r in items]
    exps = list(expected)
    for j, (k, r) in enumerate(its):
        if k == "path" and r["restore"]:
            a = j - 1
            while a >= 0 and its[a][0] == "path":
                a -= 1
            ak, ar = its[a]
            assert ak == "ack" and (ar["conn"], ar["path"]) == (r["conn"], r["path"])
            its.insert(a, its.pop(j))
            exps.insert(a, exps.pop(j))
    return its, exps


def follow(config, items, expected, mode="join", share_out=False):
    """The trace through ``CwndModel(share_out=False)``: ``mode`` "join" (verdicts and
    restores), "no_restores" or "none" (no s_path record: the windows of the TX before the
    join). Returns (records compared, records whose active bits differ from the endpoint's,
    mean relative difference of W, each connection's active bits at the end)."""
    sem = CwndModel(conns=4, paths=4, verdicts=True, share_out=share_out)
    sem.config(**config)
    n = differ = 0
    rel, last = [], {}
    for (k, r), exp in zip(items, expected):
        if k == "setup":
            sem.setup(r)
            continue
        if k == "path":
            if mode == "none" or (mode == "no_restores" and r["restore"]):
                continue
            u = sem.verdict(r)
        else:
            u = sem.ack(r)
        if exp is None:
            continue
        c = r["conn"]
        act = [q["active"] for q in sem.path[c][:len(exp["cwnd"])]]
        n += 1
        differ += act != [int(s == 0) for s in exp["states"]]
        rel.append(abs(u["wsum"] - exp["wsum"]) / exp["wsum"])
        last[c] = act
    return n, differ, sum(rel) / len(rel), last


def test_endpoint_trace_in_the_tx_join(trace):
    """MR-TX-260: the endpoint's "verdicts" trace in the join's form through the block's
    semantics: each path's active bit is the endpoint's after every record with a kept state,
    and W's mean relative difference from the endpoint's is under a third of that without the
    verdicts (the TX before the join) and under a ninth of that without the restores.
    MR-TX-261: without the restores the active bits differ and suspected paths stay out of W
    to the end."""
    config, items, expected = trace
    its, exps = tx_join_form(items, expected)
    assert sum(k == "path" and r["restore"] for k, r in its) >= 4
    n, differ, rel, last = follow(config, its, exps)
    assert n > 2500 and differ == 0
    n0, d0, rel0, _ = follow(config, its, exps, "none")
    n1, d1, rel1, last1 = follow(config, its, exps, "no_restores")
    assert d0 > 0 and d1 > 1000
    assert rel * 3 < rel0 and rel * 9 < rel1, (rel, rel0, rel1)
    assert all(all(a) for a in last.values())
    assert sum(a.count(0) for a in last1.values()) >= 3


def test_endpoint_trace_share_out_in_the_tx_join(trace):
    """MR-TX-273: the trace in the join's order with the endpoint's health bits kept (what the
    join would give if the unit's ``m_probe`` carried them) through the windows with the
    share-out (hw-cwnd.md MR-CW-118): the active bits the endpoint's, W's mean relative
    difference under a fifth of the join's without it; in the endpoint's order, none."""
    config, items, expected = trace
    its, exps = tx_join_form(items, expected, keep_healthy=True)
    assert any(k == "path" and r["healthy"] for k, r in its)
    n, differ, rel, last = follow(config, its, exps, share_out=True)
    n0, d0, rel0, _ = follow(config, *tx_join_form(items, expected))
    assert n == n0 > 2500 and differ == d0 == 0
    assert 0 < rel * 5 < rel0, (rel, rel0)
    assert all(all(a) for a in last.values())
    assert follow(config, items, expected, share_out=True)[2] == 0


# -- MR-TXS-187: the scheduler's restores in lockstep

class RestoreDriver(tc.Driver):
    """The scheduler's driver with ``m_restore.ready`` random (its own generator) and the
    restores taken logged."""

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.r_rng = random.Random(0x5E57)
        self.restores = []

    def inputs(self):
        inp = super().inputs()
        inp["m_restore__ready"] = int(self.r_rng.random() < 0.5)
        return inp

    def observe(self, inp, out):
        if out.get("m_restore__valid") and inp["m_restore__ready"]:
            self.restores.append((self.cycle, out["m_restore__payload"]))
        super().observe(inp, out)


@pytest.mark.slow
def test_sched_restores_lockstep():
    """MR-TXS-183..187: the scheduler with restores against its model in the Amaranth simulator
    on ``test_lockstep_path_states``'s traffic (60 % loss, the timeouts' verdicts, window
    writes, idle cycles, backpressure) with ``m_restore.ready`` random: 0 mismatches on every
    port, the checker passes, restores taken, each naming a path the scheduler holds active
    after the take. (Slow: the scheduler's Amaranth elaboration and 40 work requests, about
    100 s at load 10 on 2 cores.)"""
    from metaroce.hdl.tx_sched import TxSched
    from metaroce.tb.lockstep import run_amaranth
    seed = 1
    items = tc.traffic(TxSchedModel(**SMALL_SCHED), 40, seed=seed)
    model = TxSchedCycleModel(64, **SMALL_SCHED, restores=True)
    drv = RestoreDriver(model.lay, items, seed=seed, p_idle=0.2, p_bp=0.4, loss=0.6,
                        p_cwnd=0.05, cwnd_hi=8000)
    active_after = []

    def on_cycle(cycle, ins, outs):
        if outs.get("m_restore__valid") and ins["m_restore__ready"]:
            r = unpack(model.restore_lay, outs["m_restore__payload"])
            active_after.append(model.sem.path[r["conn"] * model.sem.paths + r["path"]]["state"])

    core = run_amaranth(TxSched(64, **SMALL_SCHED, restores=True), model, drv, busy=model.busy,
                        on_cycle=on_cycle)
    assert core.mismatches == 0
    tc.check(TxSchedModel(**SMALL_SCHED), items, drv.res)
    assert len(drv.restores) >= 3 and active_after == [PATH_ACTIVE] * len(drv.restores)


# -- MR-TX-262/261: the engine with verdicts on the RTL

def tx_lockstep(restores_rtl=True):
    from metaroce.hdl.tx import Tx
    from metaroce.tb.lockstep import run_amaranth
    items, lay, kw = down_run()
    model = TxCycleModel(64, **SMALL, verdicts=True, rto_ns=RTO_NS)
    drv = xc.Driver(model.lay, 64, items, lay, xc.templates(SMALL["conns"], SMALL["paths"]), **kw)
    watch = StateWatch(model, drv)
    dut = Tx(64, **SMALL, verdicts=True, rto_ns=RTO_NS, restores=restores_rtl)
    core = run_amaranth(dut, model, drv, busy=model.busy, on_cycle=watch)
    return drv, model, watch, core


# MR-TX-354: the register scheduler with its kept record (MR-TX-351) in the join
@pytest.mark.slow
def test_tx_verdicts_lockstep():
    """MR-TX-262: the engine with ``verdicts`` against ``TxCycleModel(verdicts=True)`` on
    MR-TX-259's run (idle cycles, backpressure, AXI latency): 0 mismatches, then MR-TX-259's
    checks on the model."""
    drv, model, watch, core = tx_lockstep()
    assert core.mismatches == 0
    assert len(drv.res["cqe"]) == 4
    check_follow(model, watch)


@pytest.mark.slow
def test_tx_verdicts_lockstep_without_restores_fails():
    """MR-TX-261: the RTL with the restores dropped mismatches the model with them (at path 1's
    restore: the windows busy 5 cycles more, ``s_cw_setup.ready``)."""
    from metaroce.tb.lockstep import Mismatch
    with pytest.raises(Mismatch):
        tx_lockstep(restores_rtl=False)


# MR-TX-354: the register scheduler with its kept record (MR-TX-351) in the join
@pytest.mark.slow
def test_tx_verdicts_lockstep_random():
    """MR-TX-262, MR-TX-263 on the RTL: ``test_random_traffic_model[1]``'s run with ``cc_on``
    (both connections, 15 % loss, the timers' expiries, REROUTE verdicts into the windows) in
    lockstep: 0 mismatches, the checker passes, the windows' active bits follow the states."""
    from metaroce.hdl.tx import Tx
    from metaroce.tb.lockstep import run_amaranth
    sem = TxSchedModel(**SMALL_SCHED)
    items, lay = xc.traffic(sem, 30, seed=1, max_len=4000)
    setups = [dict(x, share=SHARE) for x in xc.cc_setups(SMALL, 0) + xc.cc_setups(SMALL, 1)]
    model = TxCycleModel(64, **SMALL, verdicts=True)
    drv = xc.Driver(model.lay, 64, items, lay, xc.templates(SMALL["conns"], SMALL["paths"]),
                    seed=1, loss=0.15, cw_setups=setups,
                    cc={"cc_on": 1, "cc_beta_q": P.Q_ONE, "cc_cap": xc.CC_CAP})
    watch = StateWatch(model, drv, conns=(0, 1))
    core = run_amaranth(Tx(64, **SMALL, verdicts=True), model, drv, busy=model.busy,
                        on_cycle=watch)
    assert core.mismatches == 0
    xc.check(sem, items, drv)
    assert any(k == "path" for k, _ in model.cw_log)
    assert watch.compared > 1000 and watch.differ == 0, watch.first
