"""The hinted congestion window block (docs/spec/hw-cwnd.md section 6, MR-CW-060..065): the
per-event part in RTL (hdl/cwnd.py ``Cwnd(..., hints=True)``), the moves in the control path
(models/cwnd.py ``CwndControl``). The block's one stack: the driver with the control path in
the loop, the checker (``CwndModel(split=True)``), the lockstep core (every output every cycle)
in the Amaranth simulator (default) and under Verilator (slow); and the block with its control
path against the unsplit model and the endpoint's incast traces."""
import os

import pytest

from metaroce import blocks
from metaroce.hdl.cwnd import Cwnd, cwnd_hinted_small
from metaroce.models import cwnd_cases as cc
from metaroce.models import protocol as P
from metaroce.models.cwnd import (LAT_ACK, LAT_MOVE, LAT_SETUP, SMALL, TRACE, CwndControl,
                                  CwndCycleModel, CwndModel, lat_hint)
from metaroce.models.rx import pack
from metaroce.tb.lockstep import run_amaranth, verilog_ports

CFG = {"mtu": 1024, "beta_q": P.Q_ONE // 2, "cap": 60_000, "line_mbps": 100_000,
       "base_rtt_ns": 10_000}


def run_hinted(items, config, *, params=SMALL, seed=0, div_bits=2, **kw):
    dut = Cwnd(64, **params, div_bits=div_bits, hints=True)
    model = CwndCycleModel(64, **params, div_bits=div_bits, hints=True)
    ctl = CwndControl(**params, **config)
    drv = cc.Driver(model.lay, items, config, seed=seed, control=ctl, **kw)
    core = run_amaranth(dut, model, drv, busy=model.busy)
    assert core.mismatches == 0
    res = cc.check(CwndModel(**params, split=True), config, drv.res["taken"],
                   drv.res["updates"])
    return res, drv, ctl


@pytest.mark.parametrize("params, seed, div_bits", [
    (SMALL, 1, 2), pytest.param(SMALL, 2, 1, marks=pytest.mark.slow),
    pytest.param(dict(conns=4, paths=8), 3, 2, marks=pytest.mark.slow)])
def test_hinted_lockstep_random(params, seed, div_bits):
    """MR-CW-060..065: random hinted traffic (hint changes up, down, to 0, above the line rate,
    hint updates that resolve nothing; re-opens, rewrites, inactive paths, CE marks) with idle
    cycles and backpressure, the control path in the loop: 0 mismatches, every update the
    block's semantics'; refused events, move writes and refills all occur; and the block with
    its control path equals the unsplit model after every event."""
    items = cc.traffic(CwndModel(**params, **CFG), 200, seed=seed, hints=True)
    res, drv, ctl = run_hinted(items, CFG, params=params, seed=seed, div_bits=div_bits,
                               p_idle=0.3, p_bp=0.5)
    assert res["acks"] > 190
    assert ctl.moves["move"] >= 4 and ctl.moves["refill"] >= 1
    n = cc.check_after(drv.loop.after, items, cc.unsplit_expected(params, CFG, items))
    assert n > 170


@pytest.mark.parametrize("seed", [21, 22])
def test_closed_loop_equals_unsplit_model(seed):
    """MR-CW-063: the block's semantics with its control path, on 3,000 random hinted events,
    give the unsplit model's windows, W, debt and rate after every event."""
    items = cc.traffic(CwndModel(**SMALL, **CFG), 3000, seed=seed, hints=True)
    ctl = CwndControl(**SMALL, **CFG)
    loop, taken = cc.run_closed(CwndModel(**SMALL, split=True), ctl, items, CFG)
    assert cc.check_after(loop.after, items, cc.unsplit_expected(SMALL, CFG, items)) > 2900
    assert ctl.moves["move"] > 100 and ctl.moves["refill"] > 200
    assert len(taken) == len(items) + ctl.moves["move"] + ctl.moves["writes"]


@pytest.mark.parametrize("scenario", ["incast", "incast6"])
def test_closed_loop_incast_equals_endpoint(scenario):
    """MR-CW-065, MR-CW-067, MR-CW-056: the endpoint's whole incast traces through the block's
    semantics and its control path (the 8 x 4 instance): the windows, W, debt and rate after
    each event and its control path's writes, and the connection window of each hinted event,
    equal the endpoint's."""
    config, items, expected = cc.endpoint_trace(scenario=scenario)
    ctl = CwndControl(**TRACE, **config)
    loop, _ = cc.run_closed(CwndModel(**TRACE, split=True), ctl, items, config)
    n = cc.check_after(loop.after, items, expected)
    assert n == sum(1 for k, _ in items if k == "ack") > 2000
    assert ctl.moves["move"] > 50 and ctl.moves["refill"] > 10


@pytest.mark.parametrize("scenario, n_items", [pytest.param("incast", 230, marks=pytest.mark.slow), ("incast6", 180)])
def test_hinted_lockstep_incast_prefix(scenario, n_items):
    """MR-CW-065: the first records of the endpoint's incast traces (hint changes, refills)
    through the RTL with its control path, back to back: 0 mismatches, and the windows after
    each event equal the endpoint's."""
    config, items, expected = cc.endpoint_trace(scenario=scenario)
    items, expected = items[:n_items], expected[:n_items]
    res, drv, ctl = run_hinted(items, config, params=TRACE, seed=5, p_idle=0.0, p_bp=0.0)
    n = cc.check_after(drv.loop.after, items, expected)
    assert n == res["acks"] - ctl.moves["move"] > 150
    assert ctl.moves["move"] >= 5 and ctl.moves["refill"] >= 3


def test_refused_event_and_move_writes():
    """MR-CW-061 (b), MR-CW-062, MR-CW-064, MR-CW-066, MR-CW-067: a first hint is refused (nothing changes, ``move``
    with the clamped rate) after LAT_MOVE cycles; a move write sets the window as written
    (below the floor too), keeps the accumulators and sets the rate; the event again is hinted
    (LAT_ACK + 32 cycles), its window clamped to the path cap; the next hinted events of that
    rate take the band kept in the record (LAT_ACK + 2), also after a move write of the same
    rate; hint 0 takes LAT_ACK, sets the line rate and drops the band kept."""
    m = CwndCycleModel(64, **SMALL, hints=True)
    lay = m.lay
    recs = [cc.setup_item(0, 0, 90_000, 512, 1, open_=1, fresh=1),
            cc.setup_item(0, 1, 20_000, 512, 1, fresh=1),
            cc.ack_item(0, 0, 1024, 1, 1, 5, 100),                          # CE, no hint
            cc.ack_item(0, 0, 1024, 1, 1, 6, 100, hint=200_000),            # the line rate
            ("setup", {"conn": 0, "path": 0, "cwnd": 100, "move": 1, "rate": 100_000,
                       "debt0": 0}),
            cc.ack_item(0, 0, 1024, 1, 0, 7, 100, hint=40_000),             # a change
            ("setup", {"conn": 0, "path": 0, "cwnd": 80_000, "move": 1, "rate": 40_000,
                       "debt0": 0}),
            cc.ack_item(0, 0, 0, 0, 0, 8, 100, hint=40_000),                # clamped only
            cc.ack_item(0, 1, 1024, 1, 0, 9, 100, hint=40_000),             # the band kept
            ("setup", {"conn": 0, "path": 1, "cwnd": 20_500, "move": 1, "rate": 40_000,
                       "debt0": 1}),                                          # same rate
            cc.ack_item(0, 1, 1024, 1, 0, 10, 100, hint=40_000),            # still kept
            cc.ack_item(0, 1, 1024, 1, 0, 11, 100),                         # hint 0: dropped
            cc.ack_item(0, 1, 1024, 1, 0, 12, 100, hint=40_000)]            # a change again
    ins = dict(CFG, m_update__ready=1, s_ack__valid=0, s_setup__valid=0)
    lats, ups = [], []
    for kind, rec in recs:
        port = "s_setup" if kind == "setup" else "s_ack"
        step = dict(ins, **{port + "__valid": 1,
                            port + "__payload": pack(getattr(lay, kind), rec)})
        assert m.step(step)[port + "__ready"] == 1
        k = 1
        while not (o := m.step(ins))["m_update__valid"]:
            k += 1
        lats.append(k)
        ups.append(o["m_update__payload"])
    sem = CwndModel(**SMALL, split=True, **CFG)
    u, acc = [], []
    for k, r in recs:
        u.append((sem.setup if k == "setup" else sem.ack)(r))
        acc.append(sem.path[0][0]["ce_acc"])
    assert [pack(lay.update, x) for x in u] == ups
    kept = lat_hint(cached=True)
    assert lats == [LAT_SETUP, LAT_SETUP, LAT_ACK, lat_hint(), LAT_SETUP, LAT_MOVE, LAT_SETUP,
                    lat_hint(), kept, LAT_SETUP, kept, LAT_ACK, LAT_MOVE]
    assert lat_hint() == LAT_ACK + 32 and kept == LAT_ACK + 2
    assert u[2]["rate"] == 100_000
    assert u[3]["move"] == 0 and u[3]["rate"] == 100_000     # clamped to the line: no change
    assert u[4]["cwnd"] == 100 and acc[3:5] == [1, 1]        # below the floor; kept
    assert u[5]["move"] == 1 and u[5]["rate"] == 40_000 and u[5]["cwnd"] == 100
    cap = P.hinted_window_cap_fx(40_000, 10_000, 2, 1024)
    assert u[7]["cwnd"] == cap < 80_000 and u[7]["wsum"] == cap + 20_000
    assert u[7]["rate"] == 40_000 and not u[7]["refill"]
    assert u[11]["rate"] == 100_000 and u[12]["move"] == 1
    # MR-CW-067: the hinted events' updates carry the connection window, the others 0
    win = P.hinted_conn_window_fx(40_000, 10_000, 1024)
    assert [x["cwin"] for x in u] == [0, 0, 0, P.hinted_conn_window_fx(100_000, 10_000, 1024),
                                      0, 0, 0, win, win, 0, win, 0, 0]


@pytest.mark.slow       # hint45: the default run's budget (the Verilator lockstep names them too)
def test_hinted_verilog_port_names():
    """MR-CW-060: the hinted block's Verilog ports are its cycle model's plus clk and rst."""
    ports = verilog_ports(cwnd_hinted_small(), "cwnd")
    names = CwndCycleModel(64, **SMALL, hints=True).port_names()
    assert ports == set(names["inputs"]) | set(names["outputs"]) | {"clk", "rst"}
    assert {"line_mbps", "base_rtt_ns"} <= ports


HINT_TRACE_BLOCK = blocks.Block(
    name="cwnd_hinted_trace", component="metaroce.hdl.cwnd:cwnd_hinted_trace",
    model="metaroce.models.cwnd:cwnd_model_hinted_trace", tb="metaroce.tb.cwnd",
    help="the hinted congestion window block, 8 x 4 (MR-CW-065)", widths=(64,))


@pytest.mark.slow
@pytest.mark.parametrize("trace", ["random", "incast", "incast6"])
def test_hinted_rtl_lockstep(trace):
    """MR-CW-065 under Verilator (tb/cwnd.py ``hinted_lockstep``): random hinted traffic (the
    registered block ``cwnd_hinted``) and the endpoint's whole incast traces (8 x 4): 0
    mismatches, the windows after every event equal the unsplit model's (random) or the
    endpoint's."""
    from metaroce.sim import verilator as vl
    from metaroce.tb import build as tb_build
    blk = blocks.get("cwnd_hinted") if trace == "random" else HINT_TRACE_BLOCK
    b = tb_build.build(blk, 64)
    env = {"CW_ACKS": os.environ.get("CW_ACKS", "400"), "CW_SEED": os.environ.get("CW_SEED", "7"),
           "CW_TRACE": trace}
    row = vl.run_one(b, "metaroce.tb.cwnd", "hinted_lockstep", env, out_var="CW_OUT")
    assert row["mismatches"] == 0 and row["move"] > 5 and row["refill"] > 3
    assert row["equal"] > (2000 if trace != "random" else 350)
