"""The congestion window block's models (models/cwnd.py, docs/spec/hw-cwnd.md): the semantics
against the reference endpoint's own windows on a real multipath transfer with ECN marks, the
protocol functions it is built on, and the cycle model against the semantics."""
import pytest

from metaroce.models import cwnd_cases as cc
from metaroce.models import protocol as P
from metaroce.models.cwnd import (ACC_MAX, LAT_ACK, LAT_SETUP, SMALL, CwndCycleModel, CwndModel,
                                  check_params, layouts)
from metaroce.models.driver import run_alone
from metaroce.models.rx import pack

CFG = {"mtu": 1024, "beta_q": P.Q_ONE // 2, "cap": 60_000}


@pytest.fixture(scope="module")
def trace():
    return cc.endpoint_trace()


def test_endpoint_trace_windows_equal(trace):
    """MR-CW-040, MR-CW-020, MR-CW-010..015: on the endpoint's own ACK events (3 connections of 4, 2 and 1
    paths sharing a marked spine link, no hints, no slow start), the model's path windows,
    accumulators, cut budget, cut debt and W equal the endpoint's after every ACK, and nothing
    outside the slice moved a window between ACKs."""
    config, items, expected = trace
    n = cc.run_trace(CwndModel(4, 4), config, items, expected)
    acks = [r for k, r in items if k == "ack"]
    assert n == len(acks) > 1000
    assert sum(1 for r in acks if r["ce"]) > 100                       # marks were echoed
    assert sum(1 for e in expected if e and e["cut_debt"]) > 0         # a cut left a debt
    assert {len(e["cwnd"]) for e in expected if e} == {1, 2, 4}


def test_model_tracks_w_as_the_sum_of_active_windows():
    """MR-CW-012, MR-CW-014: after every record W is the sum of the connection's active path
    windows (rewrites, re-opens and inactive paths included), the windows stay within floor and
    cap, and the debt within W."""
    sem = CwndModel(**SMALL, **CFG)
    items = cc.traffic(sem, 3000, seed=11)
    for kind, rec in items:
        (sem.setup if kind == "setup" else sem.ack)(rec)
        c = rec["conn"]
        cs = sem.conn[c]
        if kind == "ack":           # (mid-way through an opening sequence the old slots count)
            assert cs["wsum"] == sum(p["cwnd"] for p in sem.path[c] if p["active"])
            assert all(cs["floor"] <= p["cwnd"] for p in sem.path[c])
            assert 0 <= cs["cut_debt"]
        assert 0 <= cs["cut_left"]


def test_accumulators_saturate_and_reset_at_the_window_end():
    """MR-CW-011: CE and ACK counts add up to 1,023 within a path's observation window and
    restart at its end; one CE mark per packet at most (MR-SEC-151)."""
    sem = CwndModel(1, 2, mtu=1024, beta_q=P.Q_ONE // 2, cap=1 << 20)
    for k in range(2):
        sem.setup(cc.setup_item(0, k, 50_000, 512, 1, open_=int(k == 0), fresh=1)[1])
    sem.ack(cc.ack_item(0, 0, 1024, 1, 0, 100, 10_000)[1])         # ends the first window
    assert sem.path[0][0]["next_dec"] == 10_100
    for t in range(1, 6):
        sem.ack(cc.ack_item(0, 0, 256 * 1024, 256, 300, 100 + t, 10_000)[1])
    ps = sem.path[0][0]
    assert ps["ack_acc"] == ACC_MAX and ps["ce_acc"] == ACC_MAX
    w0 = ps["cwnd"]
    sem.ack(cc.ack_item(0, 0, 1024, 1, 1, 10_100, 10_000)[1])      # the window ends: one cut
    assert ps["ack_acc"] == ps["ce_acc"] == 0
    # beta x 1,023 MTUs wanted, at most beta x W in the epoch: the window to its floor, the
    # rest a debt (at most W)
    w = w0 + 50_000
    assert ps["cwnd"] == 512 and sem.conn[0]["cut_debt"] == (w >> 1) - (w0 - 512)


def test_debt_taken_from_the_next_acknowledged_path():
    """MR-CW-013, MR-CW-015: a cut a floored path cannot take is owed and taken from the next
    path acknowledged, down to its floor; that path's increase comes first."""
    sem = CwndModel(1, 2, mtu=1024, beta_q=P.Q_ONE // 2, cap=1 << 20)
    sem.setup(cc.setup_item(0, 0, 512, 512, 1, open_=1, fresh=1)[1])
    sem.setup(cc.setup_item(0, 1, 40_000, 512, 1, fresh=1)[1])
    sem.ack(cc.ack_item(0, 0, 4 * 1024, 4, 4, 1_000, 10_000)[1])
    assert sem.path[0][0]["cwnd"] == 512 and sem.conn[0]["cut_debt"] == 2048
    sem.ack(cc.ack_item(0, 1, 1024, 1, 0, 1_010, 10_000)[1])
    inc = 1024 * 1024 // (512 + 40_000)
    assert sem.path[0][1]["cwnd"] == 40_000 + inc - 2048 and sem.conn[0]["cut_debt"] == 0
    assert sem.conn[0]["wsum"] == 512 + 40_000 + inc - 2048


def test_times_wrap():
    """MR-CW-011, MR-ENG-050: the observation window and the cut epoch are judged on the
    wrapping 32-bit ns counter."""
    sem = CwndModel(1, 1, mtu=1024, beta_q=P.Q_ONE // 2, cap=1 << 20)
    sem.setup(cc.setup_item(0, 0, 30_000, 1024, 0, open_=1, fresh=1)[1])
    ps = sem.path[0][0]
    # 2^31 - 1 is half the counter after 0 (the initial end): the first window ends
    sem.ack(cc.ack_item(0, 0, 1024, 1, 0, (1 << 31) - 1, (1 << 31) - 4)[1])
    assert ps["next_dec"] == (1 << 32) - 5
    sem.ack(cc.ack_item(0, 0, 1024, 1, 1, (1 << 32) - 6, 10_000)[1])   # before the end: no cut
    assert ps["cwnd"] > 30_000 and ps["ce_acc"] == 1
    w = ps["cwnd"]
    sem.ack(cc.ack_item(0, 0, 1024, 1, 0, 1 << 32 | 3, 10_000)[1])     # wrapped, past the end
    assert ps["cwnd"] == w - 512 and ps["next_dec"] == 10_003 and sem.conn[0]["cut_end"] == 10_003


def test_bad_parameters():
    """MR-CW-001, MR-CW-004: connections and paths are powers of two within the instance's
    range; the large instance's ACK event is 118 bits."""
    for conns, paths in ((3, 4), (2, 16), (0, 1), (1 << 17, 1)):
        with pytest.raises(ValueError):
            check_params(conns, paths)
    lay = layouts(4096, 8)
    assert lay.ack.size == 12 + 3 + 21 + 9 + 9 + 32 + 32


@pytest.mark.parametrize("seed", [1, 2])
def test_cycle_model_against_semantics(seed):
    """MR-CW-030, MR-CW-041: the cycle model with idle cycles and backpressure: one update per
    record, in order, each the semantics' update."""
    m = CwndCycleModel(64, **SMALL)
    drv = cc.Driver(m.lay, cc.traffic(m.sem, 500, seed=seed), CFG, seed=seed)
    run_alone(m, drv)
    res = cc.check(CwndModel(**SMALL), CFG, drv.res["taken"], drv.res["updates"])
    assert res["acks"] > 400


def test_cycle_model_latencies():
    """MR-CW-030: an update is valid LAT_SETUP / LAT_ACK cycles after its record was taken; a
    setup write goes first when both are offered; the next record is taken the cycle after the
    update is."""
    m = CwndCycleModel(64, **SMALL)
    lay = m.lay
    su = pack(lay.setup, cc.setup_item(0, 0, 5000, 256, 1, open_=1, fresh=1)[1])
    ack = pack(lay.ack, cc.ack_item(0, 0, 1024, 1, 0, 5, 100)[1])
    ins = dict(CFG, s_setup__valid=1, s_setup__payload=su, s_ack__valid=1, s_ack__payload=ack,
               m_update__ready=1)
    out = m.step(ins)
    assert out["s_setup__ready"] == 1 and out["s_ack__ready"] == 0
    ins["s_setup__valid"] = 0
    trace = [m.step(ins) for _ in range(LAT_SETUP + LAT_ACK + 2)]
    valid = [k + 1 for k, o in enumerate(trace) if o["m_update__valid"]]
    assert valid == [LAT_SETUP, LAT_SETUP + 1 + LAT_ACK]
    assert trace[LAT_SETUP]["s_ack__ready"] == 1


@pytest.mark.parametrize("scenario, conns, paths", [("incast", 4, 4), ("incast6", 8, 2)])
def test_endpoint_incast_trace_hinted_windows_equal(scenario, conns, paths):
    """MR-CW-056, MR-CW-050..055: on the endpoint's ACK events of an incast (4 senders of 4
    paths; 6 of 2; every sender hinted by the receiver, the hint updated as senders arrive),
    the model's windows,
    accumulators, cut state, W, rate and hinted connection window equal the endpoint's after
    every ACK; the trace moves windows into the band on hint changes, scales them up on higher
    hints, and gives cuts back (the refill)."""
    config, items, expected = cc.endpoint_trace(scenario=scenario)
    sem = CwndModel(conns, paths)
    seen = {"change": 0, "up": 0, "moved": 0, "refill": 0}
    band, refill = sem._band, sem._refill

    def count_band(c, p, hint):
        r0, w0 = sem.conn[c]["rate"], [q["cwnd"] for q in sem.path[c]]
        res = band(c, p, hint)
        r1 = sem.conn[c]["rate"]
        seen["change"] += bool(res) and r1 != r0
        seen["up"] += bool(res) and r0 < r1 < sem.line_mbps
        seen["moved"] += [q["cwnd"] for q in sem.path[c]] != w0
        return res

    def count_refill(*a):
        seen["refill"] += 1
        return refill(*a)

    sem._band, sem._refill = count_band, count_refill
    n = cc.run_trace(sem, config, items, expected)
    acks = [r for k, r in items if k == "ack"]
    assert n == len(acks) > 2000
    assert sum(1 for r in acks if r.get("hint")) > 0.9 * n
    assert sum(1 for r in acks if r["ce"]) > 150
    assert seen["change"] > 50 and seen["up"] > 20 and seen["moved"] > 50
    assert seen["refill"] > 10


def test_hinted_band_rules():
    """MR-CW-053/054: a first hint moves every window into [hw, cap]; an unchanged hint caps the
    acknowledged path; a higher hint scales the windows by the ratio first; a cut below the
    hinted BDP is given back to the calm paths first, the debt forgiven; hint 0 ends it."""
    sem = CwndModel(1, 2, mtu=1024, beta_q=P.Q_ONE // 2, cap=1 << 20, line_mbps=100_000,
                    base_rtt_ns=10_000)
    for k, w in enumerate((200_000, 1_000)):
        sem.setup(cc.setup_item(0, k, w, 512, 1, open_=int(k == 0), fresh=1)[1])
    hw = P.hinted_window_fx(10_000, 10_000, 2)                     # 10 Gb/s: 6,250 per path
    assert hw == 6_250
    sem.ack(cc.ack_item(0, 0, 0, 0, 0, 10, 10_000, hint=10_000)[1])
    assert [p["cwnd"] for p in sem.path[0]] == [2 * hw, hw]
    assert sem.conn[0]["wsum"] == 3 * hw and sem.conn_window(0) == 18_750
    sem.ack(cc.ack_item(0, 1, 0, 0, 0, 11, 10_000, hint=20_000)[1])   # x2, then the new band
    assert [p["cwnd"] for p in sem.path[0]] == [4 * hw, 2 * hw]
    # path 1 marked (its ECE recent), path 0 cut to its floor: W below the hinted BDP, refilled
    sem.ack(cc.ack_item(0, 1, 1024, 1, 1, 20, 10_000, hint=20_000)[1])
    sem.path[0][0]["ce_acc"] = 200
    sem.ack(cc.ack_item(0, 0, 1024, 1, 0, 30, 10_000, hint=20_000)[1])
    assert sem.conn[0]["wsum"] == 4 * hw and sem.conn[0]["cut_debt"] == 0
    assert sem.path[0][1]["cwnd"] == 2 * hw - 512          # its own cut; not calm: not refilled
    # the same cut with path 1 calm (its last echo more than its RTT ago): path 1 gets it first
    sem.path[0][0]["ce_acc"], sem.path[0][0]["cwnd"] = 200, 4 * hw
    sem.conn[0].update(wsum=6 * hw - 512, cut_end=0)
    sem.ack(cc.ack_item(0, 0, 1024, 1, 0, 20_100, 10_000, hint=20_000)[1])
    assert sem.conn[0]["wsum"] == 4 * hw and sem.path[0][1]["cwnd"] > 2 * hw - 512
    sem.ack(cc.ack_item(0, 0, 1024, 1, 0, 40, 10_000)[1])             # hint 0: no band
    assert sem.conn_window(0) is None and sem.conn[0]["rate"] == 100_000


@pytest.mark.parametrize("base_rtt", [10e-6, 6e-6, 12e-6, 2.5e-6])
def test_hinted_window_integer_forms_equal_the_endpoints(base_rtt):
    """MR-CW-051: the integer forms of MR-CC-007 are the endpoint's float forms truncated, for
    every clamped hint up to 400 Gb/s and 1..8 paths."""
    t_ns = P.to_ns(base_rtt)
    for mbps in list(range(1, 5_000)) + list(range(5_000, 400_001, 997)):
        bps = P.clamp_hint_bps(mbps, 400e9)
        assert P.clamp_hint_mbps(mbps, 400_000) * 1_000_000 == bps
        for n in (1, 2, 4, 8):
            assert P.hinted_window_fx(mbps, t_ns, n) == int(P.hinted_window(bps, base_rtt, n))
            assert int(P.hinted_window(bps, base_rtt, n) * n) == mbps * t_ns // 8000
            assert P.hinted_window_cap_fx(mbps, t_ns, n, 4096) == int(
                P.hinted_window_cap(bps, base_rtt, n, 4096))
        assert P.hinted_conn_window_fx(mbps, t_ns, 4096) == int(
            P.hinted_conn_window(bps, base_rtt, 4096))


@pytest.mark.parametrize("seed", [21, 22])
def test_hinted_random_traffic_invariants(seed):
    """MR-CW-050..055 on random hinted traffic (hint changes up and down, to 0, above the line
    rate, by events that resolve nothing; re-opens, rewrites, inactive paths, CE marks): W is
    the sum of the active windows after every record; a hint change leaves every window in
    its band before the event's own update; an event that acknowledges packets on an active
    path of a hinted connection leaves the windows at least the hinted BDP less an MTU (the
    refill, on the endpoint's W of at least an MTU); the connection
    window is the hinted one."""
    line, rtt = 100_000, 10_000
    sem = CwndModel(**SMALL, **CFG, line_mbps=line, base_rtt_ns=rtt)
    items = cc.traffic(sem, 3000, seed=seed, hints=True)
    band = sem._band
    moved = {"change": 0, "refill_floor": 0}

    def checked_band(c, p, hint):
        r0 = sem.conn[c]["rate"]
        res = band(c, p, hint)
        if res and sem.conn[c]["rate"] != r0:
            hw, cap, _ = res
            assert all(hw <= q["cwnd"] <= cap for q in sem.path[c]), (c, hint)
            moved["change"] += 1
        return res

    sem._band = checked_band
    for kind, rec in items:
        (sem.setup if kind == "setup" else sem.ack)(rec)
        c = rec["conn"]
        cs = sem.conn[c]
        if kind != "ack":
            continue
        assert cs["wsum"] == sum(q["cwnd"] for q in sem.path[c] if q["active"])
        r = P.clamp_hint_mbps(rec.get("hint", 0), line)
        assert cs["rate"] == r and cs["hinted"] == int(bool(rec.get("hint")))
        if rec.get("hint"):
            assert sem.conn_window(c) == P.hinted_conn_window_fx(r, rtt, CFG["mtu"])
            if rec["pkts"] and sem.path[c][rec["path"]]["active"]:
                # (the endpoint's shortfall counts W as at least one MTU: the sum of the
                # windows may end up to an MTU below the hinted BDP)
                assert cs["wsum"] + CFG["mtu"] >= r * rtt // 8000
                moved["refill_floor"] += 1
        else:
            assert sem.conn_window(c) is None
    assert moved["change"] > 50 and moved["refill_floor"] > 500
