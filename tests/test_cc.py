"""Coupled multipath congestion control and demand-aware max-min hints (MR-CC-011..013)."""
import copy

import pytest

from metaroce.models import protocol as P
from metaroce.models.endpoint import Endpoint
from metaroce.sim.scenario import load_scenario, run_scenario, shipped_scenarios

MTU = 4096


# -- pure functions ------------------------------------------------------------------------------

def test_coupled_increase_is_one_mtu_per_rtt_whatever_the_paths():
    """MR-CC-011, MR-CC-002: a window's worth of ACKs grows a connection by one MTU in total,
    whether its window is on one path or spread over eight."""
    total = 64 * MTU
    one, _ = P.aimd_fx(total, total, 0, False, mtu=MTU, cwnd_min=MTU, cwnd_max=1 << 23)
    assert one - total == MTU
    per = total // 8
    grown = 0
    for _ in range(8):      # each path acknowledges its own window once
        w, _ = P.aimd_fx(per, per, 0, False, mtu=MTU, cwnd_min=64, cwnd_max=1 << 23,
                         cwnd_sum=total, sum_max=1 << 23)
        grown += w - per
    assert grown == MTU
    # uncoupled (each path on its own window), eight paths grew eight times as fast
    w, _ = P.aimd_fx(per, per, 0, False, mtu=MTU, cwnd_min=64, cwnd_max=1 << 23)
    assert 8 * (w - per) == 8 * MTU
    # no increase once the paths together hold the connection's cap
    w, _ = P.aimd_fx(per, per, 0, False, mtu=MTU, cwnd_min=64, cwnd_max=1 << 23,
                     cwnd_sum=total, sum_max=total)
    assert w == per


def test_path_window_floor():
    """MR-CC-011: the paths of a connection may together fall to one MTU (64 bytes each at least)."""
    assert P.path_window_floor(MTU, 1) == MTU
    assert P.path_window_floor(MTU, 8) * 8 == MTU
    assert P.path_window_floor(MTU, 256) == 64


def test_coupled_cut_counts_marks_not_path_fractions():
    """MR-CC-013: the cut is beta x MTU per marked packet, so one path and 64 paths are cut alike;
    what a small path window cannot take becomes debt; the epoch's budget bounds it."""
    beta = P.Q_ONE // 2
    # one path, 32 packets acknowledged, 8 marked: DCTCP's beta x 8/32 x cwnd
    w, debt = P.coupled_cut_fx(32 * MTU, 8, MTU, MTU, beta, 1 << 30)
    assert w == 32 * MTU - 4 * MTU and debt == 0
    # 64 paths of half an MTU each; 8 of them saw one marked packet each
    cut = debt_total = 0
    for _ in range(8):
        w, debt = P.coupled_cut_fx(MTU // 2, 1, MTU // 64, MTU, beta, 1 << 30)
        cut += MTU // 2 - w
        debt_total += debt
    assert cut + debt_total == 4 * MTU and debt_total > 0
    # the budget left in the connection's RTT caps the cut
    w, debt = P.coupled_cut_fx(32 * MTU, 32, MTU, MTU, beta, 3 * MTU)
    assert w == 29 * MTU and debt == 0


def test_demand_limited_needs_margin():
    """MR-CC-012: limited only when clearly below the level offered (7/8 and two packets)."""
    pkt = MTU + 114
    level_mbps, iv = 200_000, 10_000            # 200 Gb/s over 10 us: 250,000 bytes
    assert P.demand_limited(pkt, level_mbps, iv, pkt)                 # a 3 Gb/s trickle
    assert not P.demand_limited(240_000, level_mbps, iv, pkt)         # at its share
    assert not P.demand_limited(215_000, level_mbps, iv, pkt)         # within 1/8 + 2 packets
    # at 128 senders a share is ~2.6 packets per interval: nobody near it is limited
    share = 400_000 // 128
    assert not P.demand_limited(pkt, share, 3 * 10_000 // 1, pkt)


def test_fair_level_water_fills():
    """MR-CC-012: the limited senders' rate is left out and the rest is shared; never below the
    equal share, equal to MR-CC-005's share without limited senders."""
    line = 400e9
    assert P.fair_level_mbps(line, 2) == P.fair_share_mbps(line, 2) == 200_000
    assert P.fair_level_mbps(line, 2, n_limited=1, limited_mbps=3_300) == 400_000 - 3_300
    assert P.fair_level_mbps(line, 4, n_limited=1, limited_mbps=10_000) == (400_000 - 10_000) // 3
    # a limited sender that uses more than the equal share leaves the others the equal share
    assert P.fair_level_mbps(line, 3, n_limited=2, limited_mbps=390_000) == P.fair_share_mbps(line, 3)
    assert P.fair_level_mbps(line, 1, n_limited=0) == 0           # a lone sender: no limit
    # the drain term of MR-CC-005 still applies
    assert P.fair_level_mbps(line, 2, 1.0, 1, 3_300) == int(line * (1 - P.DRAIN_GAIN) / 1e6) - 3_300


# -- endpoints on the simulated fabric -----------------------------------------------------------

def _rates(stem, overrides=None, size=None, repeat=None):
    """Run a shipped fairness scenario and return each flow's payload rate (Gb/s) while all were
    active, from 20 base RTTs after the last start to one before the first completion."""
    (path,) = [p for p in shipped_scenarios() if p.stem == stem]
    sc = copy.deepcopy(load_scenario(path))
    for fl in sc["flows"]:
        fl.update((overrides or {}).get(fl["name"], {}))
        if size and fl["repeat"] == 1:
            fl["size"] = size
        if repeat and fl["repeat"] > 1:
            fl["repeat"] = repeat
    bins = []

    def setup(fab, info):
        key = info["flow_of"]
        bins.extend([] for _ in info["flows"])

        def hook(frame, now):
            if frame.payload:
                i = key.get((frame.ip.src, frame.bth.dest_qp))
                if i is not None:
                    bins[i].append((now, len(frame.payload)))
        for h in fab.hosts:
            h.rx_hook = hook

    res = run_scenario(sc, setup=setup)
    assert res["delivered_ok"] and res["all_done"]
    rtt = sc["topology"]["rtt_us"] * 1e-6
    t_a = max(r["start_s"] for r in res["flows"]) + 20 * rtt
    t_b = min(r["start_s"] + r["fct_s"] for r in res["flows"]) - rtt
    assert t_b > t_a + 10 * rtt
    return {r["name"]: sum(n for t, n in bins[i] if t_a <= t < t_b) * 8 / (t_b - t_a) / 1e9
            for i, r in enumerate(res["flows"])}


def test_trickle_leaves_bulk_the_rest():
    """MR-CC-012: a 3.3 Gb/s trickle into the bulk sender's receiver costs the bulk only what the
    trickle uses (line rate / 2 before: 193 of 389 Gb/s)."""
    from metaroce.benches._common import payload_rate
    r = _rates("fair_trickle_bulk", repeat=45)
    cap = payload_rate(400e9, MTU) / 1e9
    assert r["trickle"] == pytest.approx(4096 * 8 / 10e3, rel=0.1)
    assert r["bulk"] >= 0.95 * (cap - r["trickle"])


@pytest.mark.parametrize("paths", [8, 64])
def test_multipath_takes_no_more_than_single_path(paths):
    """MR-CC-011, MR-CC-013: a 1-path and a multipath connection on one core link share it about
    equally (uncoupled per-path AIMD gave 8 paths 289 of 333 Gb/s)."""
    r = _rates("fair_core_paths", {"multi_path": {"paths": paths}}, size=12 << 20)
    one, multi = r["one_path"], r["multi_path"]
    assert multi <= 1.15 * one and one <= 1.15 * multi
    assert one + multi > 0.75 * 389


def test_paced_connection_sprays_in_proportion_to_windows():
    """MR-CC-011 (d), MR-CONN-004: a connection paced by a hint keeps fewer bytes on a path whose
    window was cut; with equal windows it is the plain round robin."""
    def sent_per_path(cut):
        a = Endpoint("10.0.0.1", mtu=MTU)
        Endpoint("10.0.0.2", mtu=MTU)
        c = a.connect(1, "10.0.0.2", 1, paths=4)
        c.ss = False
        c.window = 1 << 22
        c.rate_bps = 100e9                      # paced by a hint, MR-CC-006
        for p in c.paths:
            p.cwnd = 16 * MTU
        c.paths[0].cwnd = cut
        c._sum_windows()
        src = bytearray(40 * MTU)
        c.post_write(0, a.reg_mr(src), 0, len(src), 0, 1, wr_id=1)
        count = [0] * 4
        t = 0.0
        while t < 20e-6:
            f = a.next_packet(t)
            if f is not None and f.mrdh is not None:
                count[f.mrdh.path] += 1
            t += 0.05e-6
        return count
    even = sent_per_path(16 * MTU)
    assert max(even) - min(even) <= 1
    skew = sent_per_path(4 * MTU)
    assert skew[0] <= 5 and min(skew[1:]) >= 10 and sum(skew) == sum(even)


def test_initial_timer_spread_and_bounded():
    """MR-CC-014: the pre-sample timer is rto_initial x [1, 1.25), different across connections."""
    vals = {P.initial_rto_ns(40_000, cid) for cid in range(64)}
    assert min(vals) >= 40_000 and max(vals) < 50_000 and len(vals) > 16
    assert P.initial_rto_ns(40_000, 7, seed=1) == P.initial_rto_ns(40_000, 7, seed=1)


def test_first_window_lost_whole_resends_one_packet():
    """MR-CC-014, MR-PATH-001: every packet of a first window dropped: after the timer one packet
    is resent, and only the receiver's answer lets more go."""
    a = Endpoint("10.0.0.1", mtu=MTU)
    c = a.connect(3, "10.0.0.2", 3, paths=2)
    src = bytearray(8 * MTU)
    c.post_write(0, a.reg_mr(src), 0, len(src), 0, 1, wr_id=1)
    first = [f for f in iter(lambda: a.next_packet(0.0), None)]
    assert len(first) == 2                      # MR-CC-008: the first window, both dropped
    t, resent = 0.0, []
    while t < 100e-6 and not resent:
        t += 0.5e-6
        resent = [f for f in iter(lambda: a.next_packet(t), None) if f.mrdh is not None]
    assert t >= c.rto_initial_ns / 1e9 and len(resent) == 1
    assert a.stats["timeouts"] >= 1 and c.window == MTU
    for _ in range(20):                         # nothing more until an ACK
        t += 1e-6
        assert all(f.mrdh is None for f in iter(lambda: a.next_packet(t), None))


def test_queue_paced_rate():
    """MR-CC-015: the hinted rate scaled by 1.5 base RTT / RTT sample when that is below 1."""
    assert P.queue_paced_mbps(1_000, 10_000, 0) == 1_000
    assert P.queue_paced_mbps(1_000, 10_000, 15_000) == 1_000
    assert P.queue_paced_mbps(1_000, 10_000, 30_000) == 500
    assert P.queue_paced_mbps(1, 10_000, 1_000_000) == P.MIN_RATE_MBPS


def test_slow_start_sizes_windows_to_the_measured_rtt():
    """MR-CC-008, MR-CC-011: a lone 8-path sender on a fabric whose RTT (30 us) is three times
    the configured base RTT (10 us) still fills the link: slow start runs to one BDP at the
    measured RTT and the path windows grow with it (a base-RTT BDP alone gave about a third of
    the line rate, regrown by one MTU per RTT)."""
    from metaroce.sim.harness import Flow, run_writes
    from metaroce.sim.topology import Fabric
    fab = Fabric(2, rate_bps=400e9, rtt=30e-6, seed=1)
    size = 16 << 20
    res = run_writes(fab, [Flow(0, 1, size, paths=8)], "metaroce",
                     cfg={"mtu": MTU, "base_rtt": 10e-6}, seed=1, until=0.1)
    assert res.delivered_ok and res.all_done
    (f,) = res.flows
    assert size * 8 / f.t_done / 1e9 > 0.6 * 389        # 273 Gb/s; 132 before
