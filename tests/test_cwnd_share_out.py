"""The share-out in the windows block (docs/spec/hw-cwnd.md section 8.2, MR-CW-118..121):
``Cwnd(verdicts=True, share_out=True)`` in lockstep with ``CwndCycleModel(verdicts=True,
share_out=True)`` (random backpressure), every update the model's with MR-CW-111's share-out;
its negative control (the model without the share-out); the endpoint's "verdicts" trace
through the block."""
import pytest

from metaroce.hdl.cwnd import Cwnd
from metaroce.models import cwnd_cases as cc
from metaroce.models import protocol as P
from metaroce.models.cwnd import (LAT_PATH, LAT_SHARE, LAT_SHARE_DIV, SMALL, CwndCycleModel,
                                  CwndModel)
from metaroce.tb.lockstep import AmaranthSim, Mismatch

CFG = {"mtu": 1024, "beta_q": P.Q_ONE // 2 + 3, "cap": 60_000}
SUSPECT, RETIRE = P.PATH_SUSPECT, P.PATH_RETIRE


def _lockstep(sim, items, params=SMALL, seed=0, model=None, config=CFG, **kw):
    model = model or CwndCycleModel(64, **params, verdicts=True, share_out=True)
    drv = cc.Driver(model.lay, items, config, seed=seed, **kw)
    core = sim.run(model, drv, busy=model.busy)
    return core, drv


def directed():
    """Connection 1's four paths set up; path 0 suspected with paths 0..3 healthy (its own bit
    ignored; path 1 at the cap after its share; path 3 not active: its window shared, W
    without it); then path 1 retired with path 2 healthy (capped), and a SUSPECT of a path not
    active (no share)."""
    ws = (30_000, 50_000, 6_000, 9_000)
    items = [cc.setup_item(1, k, w, 256, 1, open_=int(k == 0), fresh=1, share=20_000)
             for k, w in enumerate(ws)]
    items[3] = cc.setup_item(1, 3, ws[3], 256, 1, active=0, fresh=1, share=20_000)
    items += [cc.verdict_item(1, 0, SUSPECT, healthy=0b1111),
              cc.verdict_item(1, 1, RETIRE, healthy=0b0100),
              cc.verdict_item(1, 0, SUSPECT, healthy=0b0110)]
    return items


def test_share_out_semantics():
    """MR-CW-118: the block's updates of a verdict with a share-out: the path's first (W
    without it), then each healthy path's (its window plus the given window // their count,
    at most the cap; W with each active one's change), as MR-CW-111's model."""
    sem = CwndModel(**SMALL, verdicts=True)
    sem.config(**CFG)
    ups = []
    for kind, r in directed():
        ups.append(sem.setup(r) if kind == "setup" else sem.verdict_updates(r))
    s0, r1, s2 = ups[4:]
    assert [(u["path"], u["cwnd"], u["wsum"]) for u in s0] == [
        (0, 30_000, 56_000), (1, 60_000, 66_000), (2, 16_000, 76_000), (3, 19_000, 76_000)]
    assert [(u["path"], u["cwnd"], u["wsum"]) for u in r1] == [(1, 60_000, 16_000),
                                                              (2, 60_000, 60_000)]
    assert [(u["path"], u["wsum"]) for u in s2] == [(0, 60_000)]          # not active: none
    assert sem.conn[1]["wsum"] == 60_000


def test_share_out_lockstep_random():
    """MR-CW-120: random setup writes, ACK events (80), verdicts with random healthy masks and
    restores, idle cycles and backpressure on ``m_update``: 0 mismatches, every update the
    model's with the share-out (shares made); the directed run too. MR-CW-121: the cycle model
    without the share-out mismatches on the directed run."""
    items = cc.traffic(CwndModel(**SMALL, verdicts=True), 80, seed=4, verdicts=True)
    sim = AmaranthSim(Cwnd(64, **SMALL, verdicts=True, share_out=True))
    core, drv = _lockstep(sim, items, seed=4, p_idle=0.3, p_bp=0.5)
    assert core.mismatches == 0
    res = cc.check(CwndModel(**SMALL, verdicts=True), CFG, drv.res["taken"], drv.res["updates"])
    assert res["acks"] > 60 and res["shares"] >= 5
    core, drv = _lockstep(sim, directed(), seed=1, p_bp=0.5)
    assert core.mismatches == 0
    assert cc.check(CwndModel(**SMALL, verdicts=True), CFG, drv.res["taken"],
                    drv.res["updates"])["shares"] == 4
    with pytest.raises(Mismatch):
        _lockstep(sim, directed(), seed=1, p_bp=0.5,
                  model=CwndCycleModel(64, **SMALL, verdicts=True))


def test_share_out_options():
    """MR-CW-118/119: ``share_out`` only with ``verdicts``; the latencies."""
    with pytest.raises(ValueError):
        Cwnd(64, **SMALL, share_out=True)
    with pytest.raises(ValueError):
        CwndCycleModel(64, **SMALL, share_out=True)
    assert (LAT_PATH, LAT_SHARE_DIV, LAT_SHARE) == (5, 24, 7)


@pytest.mark.slow
def test_share_out_lockstep_endpoint_trace():
    """MR-CW-122 (slow): the endpoint's whole "verdicts" trace through the block with the
    share-out: 0 mismatches, every update the model's with the share-out (whose windows, W and
    active bits are the endpoint's, MR-CW-113)."""
    config, items, expected = cc.endpoint_trace(scenario="verdicts", verdicts=True)
    params = dict(conns=4, paths=4)
    model = CwndCycleModel(64, **params, verdicts=True, share_out=True)
    drv = cc.Driver(model.lay, items, config, seed=3, p_idle=0.05, p_bp=0.1)
    core = AmaranthSim(Cwnd(64, **params, verdicts=True, share_out=True)).run(
        model, drv, busy=model.busy)
    assert core.mismatches == 0
    res = cc.check(CwndModel(**params, verdicts=True), config, drv.res["taken"],
                   drv.res["updates"])
    assert res["records"] == len(items) and res["shares"] > 0
    assert cc.run_trace(CwndModel(**params, verdicts=True), config, items, expected,
                        verdicts=True) > 2500
    print(res)
