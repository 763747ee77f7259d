"""Path verdicts and the congestion windows (docs/spec/hw-cwnd.md section 8, MR-CW-106..115):
the ``s_path`` records (the retransmit unit's KEEP / REROUTE / SUSPECT / RETIRE, the scheduler's
restore) in ``CwndModel`` against the reference endpoint's windows after its own verdicts, and
``Cwnd(..., verdicts=True)`` in lockstep with its cycle model (random backpressure, negative
controls)."""
import collections
import os

import pytest

from metaroce.hdl.cwnd import Cwnd, cwnd_small, cwnd_verdicts_small
from metaroce.models import cwnd_cases as cc
from metaroce.models import protocol as P
from metaroce.models.cwnd import (LAT_ACK, LAT_PATH, LAT_RAISE, SMALL, CwndCycleModel, CwndModel)
from metaroce.tb.lockstep import AmaranthSim, Mismatch, verilog_ports

CFG = {"mtu": 1024, "beta_q": P.Q_ONE // 2 + 3, "cap": 60_000}
KEEP, REROUTE, SUSPECT, RETIRE = P.PATH_KEEP, P.PATH_REROUTE, P.PATH_SUSPECT, P.PATH_RETIRE


@pytest.fixture(scope="module")
def trace():
    return cc.endpoint_trace(scenario="verdicts", verdicts=True)


def _conn(sem, share=20_000, floor=256, windows=(10_000, 8_000, 6_000, 300)):
    for k, w in enumerate(windows):
        sem.setup(cc.setup_item(0, k, w, floor, 1, open_=int(k == 0), fresh=1, share=share)[1])


def _v(sem, path, verdict=0, **kw):
    return sem.verdict(cc.verdict_item(0, path, verdict, **kw)[1])


def _ack(sem, path, pkts=1, ce=0, now=1_000):
    return sem.ack(cc.ack_item(0, path, pkts * 1024, pkts, ce, now, 10_000)[1])


def test_verdict_semantics():
    """MR-CW-106..111: KEEP halves down to the floor; REROUTE is one MTU and collapsed, the next
    ACK with packets clears the bit and, without a CE mark, raises the window to the initial
    share first (the share at least the floor); SUSPECT/RETIRE take an active path out of W
    (shared out to the healthy paths with ``share_out``, each at most the cap), nothing on an
    inactive one; restore gives the share back; W follows every change of an active window."""
    sem = CwndModel(**SMALL, verdicts=True, **CFG)
    _conn(sem)
    assert _v(sem, 0, KEEP) == {"conn": 0, "path": 0, "cwnd": 5_000, "wsum": 19_300, "debt": 0}
    assert _v(sem, 3, KEEP)["cwnd"] == 256                          # 150 below the floor
    u = _v(sem, 1, REROUTE)
    assert u["cwnd"] == 1024 and u["wsum"] == 5_000 + 1024 + 6_000 + 256
    assert sem.path[0][1]["collapsed"] == 1
    _ack(sem, 1, pkts=0)                                            # resolves nothing: kept
    assert sem.path[0][1]["collapsed"] == 1
    u = _ack(sem, 1, pkts=2, ce=1)                                  # a CE mark: no raise
    assert sem.path[0][1]["collapsed"] == 0 and u["cwnd"] < 20_000
    _v(sem, 1, REROUTE)
    u = _ack(sem, 1, pkts=1, now=2_000)                             # clean: raised, then grows
    w1 = 20_000 + 1024 * 1024 // (5_000 + 20_000 + 6_000 + 256)    # W with the raised window
    assert u["cwnd"] == w1 == 20_033
    assert u["wsum"] == 5_000 + w1 + 6_000 + 256 and sem.path[0][1]["collapsed"] == 0
    u = _v(sem, 2, SUSPECT, healthy=0b1011)                         # 2,000 to each of 0, 1, 3
    assert u["cwnd"] == 6_000 and u["wsum"] == 7_000 + 22_033 + 2_256
    assert [q["cwnd"] for q in sem.path[0]] == [7_000, 22_033, 6_000, 2_256]
    assert _v(sem, 2, RETIRE, healthy=0b1011)["wsum"] == u["wsum"]  # inactive: nothing
    u = _v(sem, 2, restore=1)
    assert u["cwnd"] == 20_000 and u["wsum"] == 7_000 + 22_033 + 20_000 + 2_256
    sem.config(1024, CFG["beta_q"], 22_500)                         # the cap bounds a share
    _v(sem, 2, SUSPECT, healthy=0b0010)
    assert sem.path[0][1]["cwnd"] == 22_500
    blk = CwndModel(**SMALL, verdicts=True, share_out=False, **CFG)
    _conn(blk)
    assert _v(blk, 2, RETIRE, healthy=0b1011)["wsum"] == 10_000 + 8_000 + 300
    assert [q["cwnd"] for q in blk.path[0]] == [10_000, 8_000, 6_000, 300]
    _conn(blk, share=100)                                           # the share at least the floor
    assert _v(blk, 0, restore=1)["cwnd"] == 256


def test_verdict_trace_equals_endpoint(trace):
    """MR-CW-113: the endpoint's "verdicts" trace (a spine's downlink down 300 us, then a
    receiver's link 100 us): every kind of verdict, restores and a collapsed path raised; after
    every record with the endpoint's state, the model's windows, W, debt, active and collapsed
    bits are the endpoint's."""
    config, items, expected = trace
    kinds = collections.Counter(("restore" if r["restore"] else r["verdict"]) if k == "path" else k
                                for k, r in items)
    assert kinds["ack"] > 2000 and kinds["restore"] >= 4
    assert all(kinds[v] > 0 for v in (KEEP, REROUTE, SUSPECT, RETIRE)), kinds
    n = cc.run_trace(CwndModel(conns=4, paths=4, verdicts=True), config, items, expected,
                     verdicts=True)
    assert n > 2500


def test_verdict_trace_negative_controls(trace, monkeypatch):
    """MR-CW-114: the model without the share-out (the block's, MR-CW-112), with the setup
    writes' share at the floor (no raise of a collapsed window, the endpoint's ``wmin``) or
    KEEP without the floor differs from the endpoint on the trace."""
    config, items, expected = trace

    def differs(items, **kw):
        with pytest.raises(AssertionError):
            cc.run_trace(CwndModel(conns=4, paths=4, verdicts=True, **kw), config, items,
                         expected, verdicts=True)

    differs(items, share_out=False)
    differs([(k, dict(r, share=r["floor"]) if k == "setup" else r) for k, r in items])
    monkeypatch.setattr(P, "keep_window", lambda cwnd, floor: cwnd // 2)
    differs(items)


def _lockstep(sim, items, params=SMALL, seed=0, model=None, **kw):
    model = model or CwndCycleModel(64, **params, verdicts=True)
    drv = cc.Driver(model.lay, items, CFG, seed=seed, **kw)
    core = sim.run(model, drv, busy=model.busy)
    return core, drv


def test_verdict_lockstep_random():
    """MR-CW-112, MR-CW-115: random setup writes (shares, some below the floor), ACK events and
    verdicts of each kind and restores, idle cycles and backpressure on ``m_update``: 0
    mismatches, every update the block's semantics' (no share-out); negative controls: a cycle
    model with KEEP without the floor, or without the collapsed window's raise, mismatches."""
    items = cc.traffic(CwndModel(**SMALL, verdicts=True), 150, seed=4, verdicts=True)
    kinds = {("restore" if r["restore"] else r["verdict"]) for k, r in items if k == "path"}
    assert kinds == {KEEP, REROUTE, SUSPECT, RETIRE, "restore"}
    sim = AmaranthSim(Cwnd(64, **SMALL, verdicts=True))
    core, drv = _lockstep(sim, items, seed=4, p_idle=0.3, p_bp=0.5)
    assert core.mismatches == 0
    res = cc.check(CwndModel(**SMALL, verdicts=True, share_out=False), CFG, drv.res["taken"],
                   drv.res["updates"])
    assert res["acks"] > 100 and res["records"] - res["acks"] > 25

    class NoRaise(CwndModel):
        def ack(self, e):
            self.path[e["conn"]][e["path"]]["collapsed"] = 0
            return super().ack(e)

    # directed: windows near the floor halved, a rerouted path's clean ACK
    short = [cc.setup_item(1, k, 300, 256, 1, open_=int(k == 0), fresh=1, share=20_000)
             for k in range(4)]
    short += [cc.verdict_item(1, 0, KEEP), cc.verdict_item(1, 1, REROUTE),
              cc.ack_item(1, 1, 1024, 1, 0, 5_000, 10_000), cc.verdict_item(1, 1, KEEP)]
    assert _lockstep(sim, short)[0].mismatches == 0
    bad = CwndCycleModel(64, **SMALL, verdicts=True)
    bad.sem = NoRaise(**SMALL, verdicts=True, share_out=False)
    with pytest.raises(Mismatch):
        _lockstep(sim, short, model=bad)
    orig = P.keep_window
    try:
        P.keep_window = lambda cwnd, floor: cwnd // 2
        with pytest.raises(Mismatch):
            _lockstep(sim, short)
    finally:
        P.keep_window = orig


@pytest.mark.slow
@pytest.mark.parametrize("params, n, seed", [(SMALL, 2000, 5), (dict(conns=4, paths=8), 600, 6)])
def test_verdict_lockstep_random_long(params, n, seed):
    """MR-CW-115 (slow): longer random runs, the small and a 4 x 8 instance: 0 mismatches."""
    items = cc.traffic(CwndModel(**params, verdicts=True), n, seed=seed, verdicts=True)
    core, drv = _lockstep(AmaranthSim(Cwnd(64, **params, verdicts=True)), items, params=params,
                          seed=seed, p_idle=0.2, p_bp=0.4)
    assert core.mismatches == 0
    cc.check(CwndModel(**params, verdicts=True, share_out=False), CFG, drv.res["taken"],
             drv.res["updates"])


@pytest.mark.slow
def test_verdict_lockstep_endpoint_trace(trace):
    """MR-CW-115 (slow): the endpoint's whole "verdicts" trace through the RTL: 0 mismatches."""
    config, items, _ = trace
    params = dict(conns=4, paths=4)
    model = CwndCycleModel(64, **params, verdicts=True)
    drv = cc.Driver(model.lay, items, config, seed=3, p_idle=0.05, p_bp=0.1)
    core = AmaranthSim(Cwnd(64, **params, verdicts=True)).run(model, drv, busy=model.busy)
    assert core.mismatches == 0
    res = cc.check(CwndModel(**params, verdicts=True, share_out=False), config,
                   drv.res["taken"], drv.res["updates"])
    assert res["records"] == len(items)


def test_verdict_options():
    """MR-CW-106, MR-CW-112: the port only with ``verdicts`` (the default block's ports and
    latencies unchanged); not with ``hints``; a verdict's update LAT_PATH after, a collapsed
    path's event LAT_RAISE more."""
    plain, with_port = cwnd_small(), cwnd_verdicts_small()
    plain._MustUse__silence = with_port._MustUse__silence = True    # not elaborated here
    assert not hasattr(plain, "s_path") and hasattr(with_port, "s_path")
    with pytest.raises(ValueError):
        Cwnd(64, **SMALL, hints=True, verdicts=True)
    m = CwndCycleModel(64, **SMALL, verdicts=True)
    assert m.port_names()["inputs"][-2:] == ["s_path__valid", "s_path__payload"]
    assert (LAT_PATH, LAT_RAISE, LAT_ACK) == (5, 2, 28)


@pytest.mark.slow
def test_verdict_verilog_port_names():
    """MR-CW-106: the Verilog ports are the cycle model's plus clk and rst."""
    names = CwndCycleModel(64, **SMALL, verdicts=True).port_names()
    assert verilog_ports(cwnd_verdicts_small(), "cwnd_verdicts") == (
        set(names["inputs"]) | set(names["outputs"]) | {"clk", "rst"})


@pytest.mark.slow
def test_verdict_rtl_lockstep_verilator():
    """MR-CW-115 (slow): the block ``cwnd_verdicts`` under Verilator (tb/cwnd.py
    ``verdicts_lockstep``): random events with verdicts and restores, 0 mismatches."""
    from metaroce import blocks
    from metaroce.sim import verilator as vl
    from metaroce.tb import build as tb_build
    b = tb_build.build(blocks.get("cwnd_verdicts"), 64)
    env = {"CW_ACKS": os.environ.get("CW_ACKS", "400"), "CW_SEED": os.environ.get("CW_SEED", "7")}
    row = vl.run_one(b, "metaroce.tb.cwnd", "verdicts_lockstep", env, out_var="CW_OUT")
    assert row["mismatches"] == 0 and row["acks"] >= 300 and row["verdicts"] >= 30
