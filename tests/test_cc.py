"""Coupled multipath congestion control and demand-aware max-min hints (MR-CC-011..013)."""
import copy

import pytest

from metaroce.models import protocol as P
from metaroce.models.codec import wire_len
from metaroce.models.endpoint import Endpoint
from metaroce.sim.scenario import load_scenario, run_scenario, shipped_scenarios

MTU = 4096


def _frames(ep, now):
    """Every frame ``ep`` sends at ``now``."""
    return list(iter(lambda: ep.next_packet(now), None))


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
    """MR-CC-011: the paths of a connection may together fall to one MTU, whatever their number
    (a floor of 64 bytes held a 128-path connection at two MTUs, above a single path's floor)."""
    assert P.path_window_floor(MTU, 1) == MTU
    assert P.path_window_floor(MTU, 8) * 8 == MTU
    assert P.path_window_floor(MTU, 128) * 128 == MTU
    assert P.path_window_floor(MTU, 256) * 256 == MTU
    assert P.path_window_floor(256, 256) == 1


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
    a = Endpoint("10.0.0.1", mtu=MTU, first_window=2, announce=False)    # its frames only: no MR-CC-021
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


def test_queue_paced_gap_stretches_by_the_rate_form():
    """MR-CC-015: a sender of a packet or more per 1.5 base RTTs stretches its gap by the sample /
    1.5 base RTTs (the rate form of the hinted connection window); nothing at or below 1.5."""
    assert P.queue_paced_gap_ns(1_000, 10_000, 0) == 1_000
    assert P.queue_paced_gap_ns(1_000, 10_000, 15_000) == 1_000
    assert P.queue_paced_gap_ns(1_000, 10_000, 30_000) == 2_000       # half the rate
    assert P.queue_paced_gap_ns(15_000, 10_000, 30_000) == 30_000     # the two forms meet here


def test_queue_paced_gap_of_a_slow_sender_is_capped_by_the_excess_delay():
    """MR-CC-020: a sender slower than a packet per 1.5 base RTTs postpones its next packet by the
    excess of its sample over 1.5 base RTTs, not by a multiple of its gap."""
    gap = 90_000                                # 1,024 senders at 400 Gb/s: about 9 base RTTs
    assert P.queue_paced_gap_ns(gap, 10_000, 30_000) == gap + 15_000  # rate form: 2 x gap
    assert P.queue_paced_gap_ns(gap, 10_000, 16_000) == gap + 1_000
    assert P.queue_paced_gap_ns(gap, 10_000, 15_000) == gap


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


# -- incast start and coupled cuts (MR-CC-016..018) -----------------------------------------------

def test_blind_release_prices_the_first_window_at_the_hint():
    """MR-CC-016: bytes sent before the receiver answered count as paced at the hint from the
    first frame on."""
    assert P.blind_release_ns(1_000, 4_000, 1_000) == 1_000 + 32_000
    assert P.blind_release_ns(0, 1, 3_000) == 3             # rounded up to whole ns
    assert P.blind_release_ns(0, 8_000, 0) == 8_000 * 8 * 1000  # a hint of 0 is never used


def _incast_receiver(rate, others, mtu=MTU):
    """A receiver B that already sees ``others`` senders (connections of host 10.0.0.3)."""
    b = Endpoint("10.0.0.2", mtu=mtu, line_rate_bps=rate)
    other = Endpoint("10.0.0.3", mtu=mtu, line_rate_bps=rate)
    kb = b.reg_mr(bytearray(64 * mtu))
    ko = other.reg_mr(bytearray(mtu))
    for cid in range(100, 100 + others):
        other.connect(cid, "10.0.0.2", cid + 1000, paths=4).post_write(0, ko, 0, mtu, 0, kb, wr_id=cid)
        b.connect(cid + 1000, other.addr, cid, paths=4)
    for f in iter(lambda: other.next_packet(0.0), None):
        b.receive(f, 1e-6)
    while b.next_packet(1e-6) is not None:
        pass
    return b, kb


def test_first_window_waits_for_its_share_after_the_first_hint():
    """MR-CC-016, MR-CC-008: a sender whose first window (two packets here) went out at t = 0
    gets its first hint at 6 us; it sends nothing more until both packets' time at the hinted
    rate has passed since its first frame (twice the pacing gap; the last-frame rule of MR-CC-006
    alone allowed one gap), then paces at the hint."""
    rate = 400e9
    b, kb = _incast_receiver(rate, 127)
    a = Endpoint("10.0.0.1", mtu=MTU, line_rate_bps=rate, first_window=2, announce=False)   # no MR-CC-021
    ca = a.connect(10, "10.0.0.2", 20, paths=4)
    b.connect(20, "10.0.0.1", 10, paths=4)
    ca.post_write(0, a.reg_mr(bytearray(64 * MTU)), 0, 64 * MTU, 0, kb, wr_id=1)
    first = [a.next_packet(0.0), a.next_packet(0.0)]
    assert all(first) and a.next_packet(0.0) is None
    assert ca.blind_t0 == 0 and ca.blind_bytes == 2 * (wire_len(first[0]) + P.WIRE_OVERHEAD)
    for f in first:
        b.receive(f, 5e-6)
    for g in iter(lambda: b.next_packet(5e-6), None):
        if g.bth.dest_qp == 10:
            a.receive(g, 6e-6)
    hint = P.fair_share_mbps(rate, 128)
    assert ca.rate_bps == hint * 1e6 and ca.answered
    release = P.blind_release_ns(0, ca.blind_bytes, hint)
    assert release > 6_000 + P.pacing_gap_ns(wire_len(first[1]), hint)   # later than the last-frame rule
    sent, t_ns = [], 6_000
    while t_ns < release + 3 * P.pacing_gap_ns(wire_len(first[1]), hint):
        if a.next_packet(t_ns / 1e9) is not None:
            sent.append(t_ns)
        t_ns += 100
    assert sent and sent[0] >= release and sent[0] < release + 200
    assert len(sent) == 2          # then one packet per pacing gap (the hinted window allows 2)


def test_first_window_rtt_sample_does_not_slow_pacing():
    """MR-CC-016, MR-CC-015: an RTT sample of a first-window packet still in flight at the first
    hint measured the first windows' queue, which the blind release pays for: it does not become
    the latest sample that slows the pacing; a later packet's sample does."""
    rate = 400e9
    b, kb = _incast_receiver(rate, 127)
    a = Endpoint("10.0.0.1", mtu=MTU, line_rate_bps=rate, first_window=2, announce=False)   # no MR-CC-021
    ca = a.connect(10, "10.0.0.2", 20, paths=4)
    b.connect(20, "10.0.0.1", 10, paths=4)
    ca.post_write(0, a.reg_mr(bytearray(64 * MTU)), 0, 64 * MTU, 0, kb, wr_id=1)
    f1, f2 = a.next_packet(0.0), a.next_packet(0.0)

    def deliver(f, t_rx, t_ack):
        b.receive(f, t_rx)
        for g in iter(lambda: b.next_packet(t_rx), None):
            if g.bth.dest_qp == 10:
                a.receive(g, t_ack)
    deliver(f1, 5e-6, 6e-6)                     # the first hint
    deliver(f2, 39e-6, 40e-6)                   # 40 us after it left: the first windows' queue
    assert ca.rtt_last == 6_000                 # not 40 us: the pacing is not slowed
    t = 40e-6
    while (f := a.next_packet(t)) is None:
        t += 1e-7
    deliver(f, t + 29e-6, t + 30e-6)            # a packet sent under the hint: its sample counts
    assert ca.rtt_last == pytest.approx(30_000, abs=1)


def test_slow_sender_waits_the_excess_delay_not_a_doubled_gap():
    """MR-CC-020, MR-CC-015: a sender paced at a share of far less than a packet per RTT (the
    receiver sees 127 others: about 3 Gb/s, a gap of about 11 us at 400 Gb/s with a 1 us base
    RTT) whose latest RTT sample is 3 base RTTs when it sends waits its gap plus the sample's excess over 1.5
    base RTTs (1.5 us) before its next packet; the rate form alone would have doubled the gap."""
    rate, base = 400e9, 1e-6
    b, kb = _incast_receiver(rate, 127)
    a = Endpoint("10.0.0.1", mtu=MTU, line_rate_bps=rate, base_rtt=base, first_window=1)
    ca = a.connect(10, "10.0.0.2", 20, paths=1)
    b.connect(20, "10.0.0.1", 10, paths=1)
    ca.post_write(0, a.reg_mr(bytearray(64 * MTU)), 0, 64 * MTU, 0, kb, wr_id=1)

    def deliver(f, t_rx, t_ack):
        b.receive(f, t_rx)
        for g in iter(lambda: b.next_packet(t_rx), None):
            if g.bth.dest_qp == 10:
                a.receive(g, t_ack)

    def next_send(t):
        while (f := a.next_packet(t)) is None:
            t += 1e-8
        return f, t
    f, t = next_send(0.0)
    deliver(f, 0.5e-6, 1e-6)                    # the first hint
    f, t = next_send(1e-6)
    deliver(f, t + 2.5e-6, t + 3e-6)            # a sample of 3 base RTTs under the hint
    assert ca.rtt_last == pytest.approx(3_000, abs=1) and ca.rate_bps < rate / 100
    f2, t2 = next_send(t + 3e-6)                # its gap was set before that sample
    gap = P.pacing_gap_ns(wire_len(f2), int(ca.rate_bps // 1e6))
    assert gap > 10_000
    f3, t3 = next_send(t2)
    assert (t3 - t2) * 1e9 == pytest.approx(gap + 1_500, abs=15)    # not 2 x gap


def test_demand_known_after_two_intervals_under_a_hint():
    """MR-CC-017: a sender's hint age starts at 1 with its first non-zero hint and grows by one
    per interval end (2 bits, saturating); its demand is judged at an end where the age before
    it is 3: the third end after the first hint."""
    assert P.hint_age_next(0) == 0              # never hinted: never judged
    ages = [1]
    for _ in range(4):
        ages.append(P.hint_age_next(ages[-1]))
    assert ages == [1, 2, 3, 3, 3]
    assert [P.demand_known(x) for x in (0, 1, 2, 3)] == [False, False, False, True]


def test_new_sender_is_not_demand_limited_before_its_hint_acts():
    """MR-CC-017, MR-CC-012: a second sender that has just been hinted and sends one packet per
    interval (its first window, or a slow start not yet paced) is not taken as demand-limited:
    the hint stays the equal share until two intervals have ended under its hint; once its
    demand is known, a sender still that far below its share is."""
    rate = 100e9
    b = Endpoint("10.0.0.2", mtu=MTU, line_rate_bps=rate)
    kb = b.reg_mr(bytearray(256 * MTU))
    senders = []
    for i, addr in enumerate(("10.0.0.1", "10.0.0.3")):
        a = Endpoint(addr, mtu=MTU, line_rate_bps=rate, first_window=0)
        c = a.connect(10 + i, "10.0.0.2", 20 + i, paths=1)
        b.connect(20 + i, addr, 10 + i, paths=1)
        c.post_write(0, a.reg_mr(bytearray(256 * MTU)), 0, 256 * MTU, 0, kb, wr_id=i)
        senders.append(a)
    iv = b._share_interval_ns / 1e9
    hints = []
    t = 0.0
    # the bulk sender (10) arrives at its share (every other packet time), the slow one (11)
    # one packet per interval
    tau = MTU * 8 / rate
    slow_next = 0.0
    while t < 8 * iv:
        f = senders[0].next_packet(t)
        if f is not None:
            b.receive(f, t)
        if t >= slow_next:
            g = senders[1].next_packet(t)
            if g is not None:
                b.receive(g, t)
            slow_next += iv
        for ack in iter(lambda: b.next_packet(t), None):
            if ack.bth.dest_qp == 10:
                hints.append((t / iv, ack.mrah.rate_mbps))
            senders[ack.bth.dest_qp - 10].receive(ack, t)
        t += tau / 2
    equal = P.fair_share_mbps(rate, 2)
    early = [h for x, h in hints if 0.5 < x < 3.0]
    late = [h for x, h in hints if x > 5.0]
    assert early and all(h == equal for h in early)
    assert late and all(h > equal for h in late)    # MR-CC-012: then the bulk sender gets more


def test_debt_taken_from_the_next_acknowledged_window():
    """MR-CC-018: a path acknowledged while the connection owes a cut gives its window down to
    its floor, at most the debt."""
    assert P.debt_take(10_000, 64, 3_000) == (7_000, 0)
    assert P.debt_take(1_000, 64, 3_000) == (64, 3_000 - 936)
    assert P.debt_take(64, 64, 3_000) == (64, 3_000)
    assert P.debt_take(5_000, 64, 0) == (5_000, 0)


def test_many_paths_are_cut_like_one():
    """MR-CC-018, MR-CC-013, MR-CC-011: a 64-path connection at a share of a few packets per
    RTT (most path windows near their floor) whose marked path cannot take a cut pays it from
    the next paths acknowledged: its coupled window falls by the cut within those ACKs."""
    a = Endpoint("10.0.0.1", mtu=MTU)
    b = Endpoint("10.0.0.2", mtu=MTU)
    ca = a.connect(1, "10.0.0.2", 1, paths=64)
    b.connect(1, "10.0.0.1", 1, paths=64)
    ca.ss = False
    floor = ca.path_floor
    for k, p in enumerate(ca.paths):
        p.cwnd = floor if k % 2 else 4 * floor       # half the paths at their floor
    ca._sum_windows()
    ca.window = 1 << 22
    src = bytearray(256 * MTU)
    ca.post_write(0, a.reg_mr(src), 0, len(src), 0, b.reg_mr(bytearray(len(src))), wr_id=1)
    ca.cut_debt = 6 * floor
    w0 = ca.cwnd_sum
    sent = []
    while len(sent) < 8 and (f := a.next_packet(0.0)) is not None:
        sent.append(f)
    for f in sent:
        b.receive(f, 5e-6)
    for g in iter(lambda: b.next_packet(5e-6), None):
        a.receive(g, 10e-6)
    assert ca.cut_debt < 6 * floor                    # paid from the acknowledged windows
    assert ca.cwnd_sum <= w0 - (6 * floor - ca.cut_debt) + len(sent) * MTU * MTU // w0 + 8


def test_slow_start_exit_splits_the_ramp_evenly():
    """MR-CC-019, MR-CC-008: when slow start ends without a hint, every path's window is its equal
    share of the ramp (the connection's window until then), whatever paths were acknowledged, so
    a 1-path and a 64-path connection leave slow start with the same coupled window."""
    assert P.ss_exit_path_window(512 * 1024, 64, 64, 1 << 23) == 8 * 1024
    assert P.ss_exit_path_window(100, 64, 64, 1 << 23) == 64           # at least the floor
    assert P.ss_exit_path_window(1 << 30, 1, 4096, 1 << 23) == 1 << 23  # at most the cap
    sums = {}
    for paths in (1, 64):
        a = Endpoint("10.0.0.1", mtu=MTU)
        b = Endpoint("10.0.0.2", mtu=MTU)
        c = a.connect(1, "10.0.0.2", 1, paths=paths)
        b.connect(1, "10.0.0.1", 1, paths=paths)
        src = bytearray(1024 * MTU)
        c.post_write(0, a.reg_mr(src), 0, len(src), 0, b.reg_mr(bytearray(len(src))), wr_id=1)
        t = 0.0
        while c.ss:             # lone sender, no marks: slow start ends at one BDP
            for f in iter(lambda: a.next_packet(t), None):
                b.receive(f, t + 2e-6)
            for g in iter(lambda: b.next_packet(t + 2e-6), None):
                a.receive(g, t + 4e-6)
            t += 4e-6
        share = P.ss_exit_path_window(c.ramp, paths, c.path_floor, a.cwnd_max)
        # the ACKs processed after the exit in the same batch add their (coupled) increase
        assert all(share <= q.cwnd <= share + MTU for q in c.paths)
        sums[paths] = c.cwnd_sum / c.ramp
    assert all(1.0 - 1e-3 <= r <= 1.02 for r in sums.values())


def _probe_asked_before_the_turn():
    """A paced announcing connection (test_announce's) after its second data frame, asked for a
    probe of that frame half a gap before its next paced turn (MR-CC-032)."""
    from test_announce import _paced_sender, frames_of
    b, ep, c, to_ep = _paced_sender()
    (second,) = frames_of(ep, c.pace_until * 1e-9)
    p = c.paths[second.mrdh.path]
    turn = c.pace_until
    now = turn - P.pacing_gap_ns(c.last_wl, int(c.rate_bps // 1e6)) // 2
    assert c._probe_same_psn(p, now)
    return b, ep, c, to_ep, second, p, turn, now


def test_paced_probe_waits_for_its_turn():
    """MR-CC-032: a paced announcing connection's probe of a packet sent under its hint, asked for
    half a gap before its next paced turn, goes at that turn as the turn's frame (the next paced
    frame one gap after it), with the path's timer from then; a second request while it waits
    sends nothing more."""
    from test_announce import frames_of
    b, ep, c, to_ep, second, p, turn, now = _probe_asked_before_the_turn()
    assert c._probe_same_psn(p, now + 1)           # one waits already: no second probe
    assert frames_of(ep, now * 1e-9) == []
    assert frames_of(ep, (turn - 1) * 1e-9) == []
    assert p.deadline == turn + c._rto(p)
    (probe,) = frames_of(ep, turn * 1e-9)
    assert probe.bth.psn == second.bth.psn and probe.mrdh.offset == second.mrdh.offset
    assert c.pace_until == turn + c._gap(wire_len(probe))
    assert (c.last_tx, c.last_wl) == (turn, wire_len(probe))    # re-timed from it
    assert frames_of(ep, (c.pace_until - 1) * 1e-9) == []
    assert ep.stats["probes_sent"] == 1


def test_paced_probe_of_a_first_window_packet_waits_for_its_turn():
    """MR-CC-032 with MR-CC-024: a probe of a first-window packet (its data lost, the
    announcement answered with the share of 64 senders) goes at the connection's next paced turn,
    not at once, and the next paced frame one gap after it."""
    import random
    from test_announce import KW, RX, announcement, frames_of, receiver
    b, _ = receiver(n_conns=64)
    rkey = b.reg_mr(bytearray(16 * 1024))
    ep = Endpoint("10.0.0.64", rng=random.Random(1), **KW)
    c = ep.connect(10, RX, 20 + 63, paths=4)
    c.post_write(0, ep.reg_mr(bytearray(8 * 1024)), 0, 8 * 1024, 0, rkey, wr_id=1)
    t = 1e-6
    for i in range(63):
        b.receive(announcement(f"10.0.0.{i + 1}", 20 + i), t)
    ann, first = frames_of(ep, t)
    b.receive(ann, t)                   # the first data packet is lost
    for f in [f for f in frames_of(b, t, 256) if f.ip.dst == "10.0.0.64"]:
        ep.receive(f, t + 1e-6)
    assert c.rate_bps < ep.line_rate_bps
    turn = c.pace_until
    now = int((t + 2e-6) * 1e9)
    assert turn > now
    p = c.paths[first.mrdh.path]
    assert c._probe_same_psn(p, now)
    assert frames_of(ep, now * 1e-9) == [] and frames_of(ep, (turn - 1) * 1e-9) == []
    (probe,) = frames_of(ep, turn * 1e-9)
    assert probe.bth.psn == first.bth.psn and probe.mrdh.offset == first.mrdh.offset
    assert c.pace_until == turn + c._gap(wire_len(probe))


def test_paced_probe_dropped_when_its_packet_is_acknowledged():
    """MR-CC-032: a waiting probe whose packet is acknowledged before its turn is not sent; the
    turn goes to the next paced frame (new data)."""
    from test_announce import frames_of
    b, ep, c, to_ep, second, p, turn, now = _probe_asked_before_the_turn()
    b.receive(second, now * 1e-9)
    for f in to_ep(now * 1e-9):
        ep.receive(f, (now + 10) * 1e-9)
    (nxt,) = frames_of(ep, turn * 1e-9)
    assert ep.stats["probes_sent"] == 0
    assert nxt.mrdh.offset > second.mrdh.offset


def test_paced_probe_without_the_turn_goes_at_once():
    """MR-CC-032 off (``probe_turn=False``): the probe goes at once (MR-CC-030 alone)."""
    from test_announce import _paced_sender, frames_of
    b, ep, c, to_ep = _paced_sender(probe_turn=False)
    mbps = int(c.rate_bps // 1e6)
    (second,) = frames_of(ep, c.pace_until * 1e-9)
    p = c.paths[second.mrdh.path]
    now = c.pace_until - P.pacing_gap_ns(c.last_wl, mbps) // 2
    assert c._probe_same_psn(p, now)
    (probe,) = frames_of(ep, now * 1e-9)
    assert probe.bth.psn == second.bth.psn


@pytest.mark.parametrize("on", [True, False])
def test_first_window_lost_whole_goes_at_its_timer(on):
    """MR-CC-033: a paced announcing sender whose first window was lost (only its announcement
    arrived) and which has sent nothing since the receiver's answer resends it at its timer, once
    its blind release (MR-CC-016) has passed, not at the phase-spread turn of MR-CC-023, and
    paces on from it; with ``lost_first_turn`` off it waits for that turn."""
    import random

    from metaroce.models.codec import BTH, IP, UDP, Eth, Frame
    from metaroce.models.wire import MR_ANNOUNCE, MrdhFlag
    rx, mtu = "10.0.0.9", 1024
    kw = dict(mtu=mtu, line_rate_bps=100e9, base_rtt=4e-6)

    b = Endpoint(rx, rng=random.Random(2), **kw)
    for i in range(64):
        b.connect(20 + i, f"10.0.0.{i + 1}", 10, paths=4)
    # the initial timer (MR-CC-014) at 2 base RTTs x (1 + k/1024) lands between the blind
    # release and the phase-spread turn of this connection
    ep = Endpoint("10.0.0.64", rng=random.Random(1), lost_first_turn=on, rto_initial=8e-6, **kw)
    c = ep.connect(10, rx, 83, paths=4)
    c.post_write(0, ep.reg_mr(bytearray(8 * mtu)), 0, 8 * mtu, 0, 0x1234, wr_id=1)
    t0 = 1e-6
    for i in range(63):
        b.receive(Frame(eth=Eth(), ip=IP(src=f"10.0.0.{i + 1}", dst=rx, ecn=0), udp=UDP(sport=0xC000),
                        bth=BTH(opcode=MR_ANNOUNCE, pkey=0xFFFF, dest_qp=20 + i, ack_req=1, psn=0)), t0)
    ann, first = _frames(ep, t0)
    assert ann.bth.opcode == MR_ANNOUNCE and first.mrdh.offset == 0
    b.receive(ann, t0)                  # the first data packet is lost
    (answer,) = [f for f in _frames(b, t0) if f.ip.dst == "10.0.0.64"]
    ep.receive(answer, t0 + 4e-6)
    mbps = int(c.rate_bps // 1e6)
    release = P.blind_release_ns(c.blind_t0, c.blind_bytes, mbps)
    turn = c.pace_until
    timer = c.blind_t0 + c.rto_initial_ns
    assert mbps < 100_000 and release < timer < turn       # the case of MR-CC-033
    t = timer * 1e-9
    assert _frames(ep, t - 1e-9) == []
    got = _frames(ep, t)
    assert ep.stats["timeouts"] == 1
    if on:
        (resend,) = got
        assert resend.mrdh.offset == 0 and resend.mrdh.flags & MrdhFlag.RETX
        gap = P.pacing_gap_ns(c.last_wl, mbps)
        assert c.pace_until == timer + gap
    else:
        assert got == []
        (resend,) = _frames(ep, turn * 1e-9)
        assert resend.mrdh.offset == 0 and resend.mrdh.flags & MrdhFlag.RETX


@pytest.mark.parametrize("wait", [True, False])
def test_first_paced_frame_waits_one_base_rtt(wait):
    """MR-CC-035: a sender on a short path is answered while the receiver has counted few
    senders (a high hint whose blind release, MR-CC-016, has passed at once); with
    ``count_wait`` (the default) its first paced frame still waits until one base RTT after its first frame,
    so the receiver's update for the senders counted since (MR-CC-009, a lower hint) arrives
    first and prices its first window at the lower hint; with it off (``count_wait=False``, the
    negative control) the frame leaves at once, under the high hint."""
    import random

    from metaroce.models.codec import BTH, IP, UDP, Eth, Frame
    from metaroce.models.wire import MR_ANNOUNCE
    rx, mtu = "10.0.0.9", 1024
    kw = dict(mtu=mtu, line_rate_bps=100e9, base_rtt=4e-6)

    b = Endpoint(rx, rng=random.Random(2), **kw)
    for i in range(3):
        b.connect(20 + i, f"10.0.0.{i + 1}", 10, paths=4)
        b.receive(Frame(eth=Eth(), ip=IP(src=f"10.0.0.{i + 1}", dst=rx, ecn=0), udp=UDP(sport=0xC000),
                        bth=BTH(opcode=MR_ANNOUNCE, pkey=0xFFFF, dest_qp=20 + i, ack_req=1, psn=0)), 0)
    _frames(b, 0)
    ep = Endpoint("10.0.0.64", rng=random.Random(1), **({} if wait else dict(count_wait=False)),
                  **kw)
    assert ep.count_wait == wait
    c = ep.connect(10, rx, 83, paths=4)
    b.connect(83, "10.0.0.64", 10, paths=4)
    c.post_write(0, ep.reg_mr(bytearray(16 * mtu)), 0, 16 * mtu, 0, 0x1234, wr_id=1)
    t0 = 1e-6
    ann, first = _frames(ep, t0)
    b.receive(ann, t0 + 0.5e-6)         # a short path: a quarter of the base RTT each way
    (answer,) = [f for f in _frames(b, t0 + 0.5e-6) if f.ip.dst == "10.0.0.64"]
    ep.receive(answer, t0 + 1e-6)
    high = int(c.rate_bps // 1e6)
    assert high == 25_000               # four senders counted
    assert P.blind_release_ns(c.blind_t0, c.blind_bytes, high) < round((t0 + 1e-6) * 1e9)
    early = _frames(ep, t0 + 2.5e-6)     # before the update
    # the receiver counts 60 more senders whose announcements came the long way; its update
    # (a repeat of its newest ACK with the lower hint) reaches the sender before one base RTT
    upd = copy.deepcopy(answer)
    upd.mrah.rate_mbps = P.fair_share_mbps(100e9, 64, 0.0)
    ep.receive(upd, t0 + 3e-6)
    low = int(c.rate_bps // 1e6)
    assert low < high // 10
    release = P.blind_release_ns(c.blind_t0, c.blind_bytes, low)
    if wait:
        assert early == [] and c.last_tx == c.blind_t0
        assert c.pace_until >= release      # the first window priced at the lower hint
        assert _frames(ep, (release - 1) * 1e-9) == []
    else:
        assert len(early) == 1 and early[0].mrdh is not None     # sent under the high hint
        assert c.last_tx > c.blind_t0


@pytest.mark.parametrize("once", [True, False])
def test_later_hint_keeps_the_phase_of_a_frame_sent(once):
    """MR-CC-034: once an announcing sender has sent a frame after the receiver's first answer
    (here the resend of its lost first window at its timer, MR-CC-033), a lower hint re-times its
    next frame one gap after that frame (MR-CC-006), with no phase spread of MR-CC-023 on top;
    with ``spread_once`` off the spread is added again from the blind release."""
    import random

    from metaroce.models.codec import BTH, IP, UDP, Eth, Frame
    from metaroce.models.wire import MR_ANNOUNCE
    rx, mtu = "10.0.0.9", 1024
    kw = dict(mtu=mtu, line_rate_bps=100e9, base_rtt=4e-6)

    def announce(b, first, count, t):
        for i in range(first, first + count):
            b.receive(Frame(eth=Eth(), ip=IP(src=f"10.0.{i // 200}.{i % 200 + 1}", dst=rx, ecn=0),
                            udp=UDP(sport=0xC000),
                            bth=BTH(opcode=MR_ANNOUNCE, pkey=0xFFFF, dest_qp=20 + i, ack_req=1,
                                    psn=0)), t)
    b = Endpoint(rx, rng=random.Random(2), **kw)
    for i in range(63):
        b.connect(20 + i, f"10.0.{i // 200}.{i % 200 + 1}", 10, paths=4)
    ep = Endpoint("10.0.1.64", rng=random.Random(1), spread_once=once, rto_initial=8e-6, **kw)
    c = ep.connect(10, rx, 200 + 83, paths=4)
    b.connect(200 + 83, "10.0.1.64", 10, paths=4)
    c.post_write(0, ep.reg_mr(bytearray(8 * mtu)), 0, 8 * mtu, 0, 0x1234, wr_id=1)
    t0 = 1e-6
    announce(b, 0, 63, t0)
    ann, first = _frames(ep, t0)
    b.receive(ann, t0)                  # the first data packet is lost
    (answer,) = [f for f in _frames(b, t0) if f.ip.dst == "10.0.1.64"]
    ep.receive(answer, t0 + 4e-6)
    timer = c.blind_t0 + c.rto_initial_ns
    (resend,) = _frames(ep, timer * 1e-9)        # MR-CC-033 (on by default)
    assert c.last_tx == timer and c.spread
    # the receiver's count grows: a hint update (MR-CC-009, a repeat of its newest ACK with a
    # lower hint) arrives before the resend's data ACK
    upd = copy.deepcopy(answer)
    upd.mrah.rate_mbps = answer.mrah.rate_mbps // 2
    t1 = timer * 1e-9 + 2e-6
    old = c.rate_bps
    ep.receive(upd, t1)
    mbps = int(c.rate_bps // 1e6)
    assert c.rate_bps < old and c.spread
    gap = P.pacing_gap_ns(c.last_wl, mbps)
    if once:
        assert c.pace_until == timer + gap
    else:
        rel = max(round(t1 * 1e9), P.blind_release_ns(c.blind_t0, c.blind_bytes, mbps))
        assert c.pace_until > timer + gap and c.pace_until >= rel
