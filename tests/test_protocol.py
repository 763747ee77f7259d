"""Pure protocol functions (models/protocol.py) against small reference models.

Each test cites the transport requirements it checks (docs/spec/transport.md).
"""
import random

import pytest
from hypothesis import given, settings, strategies as st

from metaroce.models import protocol as P
from metaroce.models.wire import NakReason

M = P.PSN_MOD
EDGES = [0, 1, P.PSN_HALF - 1, P.PSN_HALF, P.PSN_HALF + 1, M - 2, M - 1]
psns = st.one_of(st.sampled_from(EDGES), st.integers(0, M - 1))


# ---------------------------------------------------------------------------------------------
# PSN arithmetic

@given(psns, st.integers(-P.PSN_HALF, P.PSN_HALF - 1))
def test_psn_add_dist_roundtrip(a, n):
    """MR-SEQ-001, MR-SEQ-002: dist(a, a+n) == n for every n in the half space, across the wrap."""
    b = P.psn_add(a, n)
    assert 0 <= b < M
    assert P.psn_dist(a, b) == n


@given(psns, psns)
def test_psn_after_matches_wire_definition(a, b):
    """MR-WIRE-055, MR-SEQ-002: "a is after b" exactly when 0 < (a - b) mod 2^24 < 2^23."""
    assert P.psn_lt(b, a) == (0 < (a - b) % M < 2 ** 23)


@given(psns, psns)
def test_psn_order_antisymmetric(a, b):
    """MR-SEQ-002: exactly one of a<b, b<a, a==b, except at distance 2^23 (both behind)."""
    d = P.psn_dist(a, b)
    assert -P.PSN_HALF <= d < P.PSN_HALF
    if a == b:
        assert not P.psn_lt(a, b) and P.psn_le(a, b)
    elif (b - a) % M == P.PSN_HALF:
        assert not P.psn_lt(a, b) and not P.psn_lt(b, a)
        assert P.psn_dist(a, b) == P.psn_dist(b, a) == -P.PSN_HALF
    else:
        assert P.psn_lt(a, b) != P.psn_lt(b, a)
        assert P.psn_dist(b, a) == -d


def test_psn_edges():
    """MR-SEQ-001, MR-SEQ-002: the wrap points 0, 2^23-1, 2^23, 2^24-1."""
    assert P.psn_add(M - 1, 1) == 0
    assert P.psn_dist(M - 1, 0) == 1
    assert P.psn_dist(0, M - 1) == -1
    assert P.psn_lt(M - 1, 0)
    assert P.psn_lt(0, P.PSN_HALF - 1)
    assert P.psn_dist(0, P.PSN_HALF) == -P.PSN_HALF      # exactly half: behind
    assert not P.psn_lt(0, P.PSN_HALF)
    assert P.psn_lt(P.PSN_HALF, M - 1)
    assert P.psn_dist(P.PSN_HALF - 1, P.PSN_HALF) == 1


# ---------------------------------------------------------------------------------------------
# Receiver window: rx_classify / rx_accept against a set model

class RxModel:
    """Reference receiver: the set of PSNs received, plus the abandoned ones (MR-SEQ-008)."""

    def __init__(self, base):
        self.cum = base        # absolute (unwrapped) next expected
        self.done = set()      # absolute PSNs received or abandoned

    def accept(self, a):
        if a > self.cum + P.SACK_BITS:
            for x in range(self.cum, a - P.SACK_BITS):
                self.done.add(x)
        self.done.add(a)
        while self.cum in self.done:
            self.cum += 1

    def sack(self):
        return sum(1 << i for i in range(P.SACK_BITS) if self.cum + 1 + i in self.done)


@settings(max_examples=150, deadline=None)
@given(psns, st.lists(st.integers(0, 700), min_size=1, max_size=120))
def test_rx_accept_matches_set_model(base, offsets):
    """MR-SEQ-004, MR-SEQ-005, MR-SEQ-006, MR-SEQ-007, MR-SEQ-008: cum/SACK after arrivals equal a
    set model; slide abandons only old holes."""
    cum, sack = base, 0
    model = RxModel(0)
    for off in offsets:
        a = model.cum + off - 100          # some behind, most ahead, some too far
        psn = (base + a) % M
        cls = P.rx_classify(cum, sack, psn)
        if a < model.cum or a in model.done:
            assert cls == P.RX_DUP
            continue
        if a - model.cum > P.RX_WINDOW:
            assert cls == P.RX_OUT
            continue
        assert cls == P.RX_NEW
        cum, sack, _ = P.rx_accept(cum, sack, psn)
        model.accept(a)
        assert cum == (base + model.cum) % M
        assert sack == model.sack()
        assert sack < 1 << P.SACK_BITS


def test_rx_slide_counts_abandoned():
    """MR-SEQ-008: a PSN 300 ahead slides the window by 44 and abandons those 44 holes."""
    cum, sack, ab = P.rx_accept(10, 0, 10 + 300)
    assert ab == 44 and cum == 10 + 44
    assert sack == 1 << 255
    assert P.rx_classify(cum, sack, 10 + 300) == P.RX_DUP
    assert P.rx_classify(10, 0, 10 + P.RX_WINDOW + 1) == P.RX_OUT
    assert P.rx_classify(10, 0, 10 + P.RX_WINDOW) == P.RX_NEW


def test_rx_window_across_wrap():
    """MR-SEQ-005, MR-SEC-003: window checks across 2^24 - 1 -> 0."""
    cum = M - 2
    assert P.rx_classify(cum, 0, M - 3) == P.RX_DUP
    cum, sack, _ = P.rx_accept(cum, 0, 1)          # hole at M-2, M-1, 0
    assert cum == M - 2 and sack == 0b100
    cum, sack, _ = P.rx_accept(cum, sack, M - 2)
    assert cum == M - 1 and sack == 0b10
    cum, sack, _ = P.rx_accept(cum, sack, M - 1)
    cum, sack, _ = P.rx_accept(cum, sack, 0)
    assert cum == 2 and sack == 0


# ---------------------------------------------------------------------------------------------
# Sender: sack_resolve

@settings(max_examples=200, deadline=None)
@given(psns, st.integers(1, 255), st.data())
def test_sack_resolve_matches_model(floor, outstanding, data):
    """MR-REL-001, MR-REL-002: acked = arrived; lost = every unacked PSN below the highest arrival."""
    arrived = data.draw(st.lists(st.booleans(), min_size=outstanding, max_size=outstanding))
    # Receiver view: PSNs before `floor` were all resolved; its cum may be anywhere <= floor.
    lag = data.draw(st.integers(0, 5))
    model = RxModel(-lag)
    for x in range(-lag, 0):
        model.accept(x)
    for j, got in enumerate(arrived):
        if got:
            model.accept(j)
    cum = (floor + model.cum) % M
    sack = model.sack()
    next_psn = (floor + outstanding) % M
    n, acked = P.sack_resolve(floor, next_psn, cum, sack)
    hi = max((j for j, g in enumerate(arrived) if g), default=-1)
    assert n == hi + 1
    for j in range(n):
        assert bool(acked >> j & 1) == arrived[j]
    assert acked >> n == 0


def test_sack_resolve_stale_and_bad():
    """MR-REL-001, MR-ERR-010: a stale ACK resolves nothing; an ACK of unsent PSNs is bad."""
    assert P.sack_resolve(100, 110, 90, 0) == (0, 0)
    assert P.sack_resolve(100, 110, 100, 0) == (0, 0)
    assert P.sack_resolve(100, 110, 111, 0)[0] == -1
    assert P.sack_resolve(100, 110, 105, 1 << 5)[0] == -1    # SACKs PSN 111
    n, acked = P.sack_resolve(100, 110, 105, 1 << 4)         # SACKs 110? no: 105+1+4 = 110
    assert n == -1
    n, acked = P.sack_resolve(100, 110, 105, 1 << 3)         # SACKs 109; 105..108 lost
    assert n == 10 and acked == 0b1000011111


def test_sack_resolve_across_wrap():
    """MR-SEQ-001, MR-REL-002: resolution across the 2^24 wrap."""
    floor = M - 3
    n, acked = P.sack_resolve(floor, 5, M - 1, 0b101)        # arrived M-3, M-2, 0, 2
    assert n == 6
    assert acked == 0b101011


def test_send_window():
    """MR-SEQ-006: at most 256 unresolved PSNs per path."""
    assert P.send_window_open(M - 10, (M - 10 + 255) % M)
    assert not P.send_window_open(M - 10, (M - 10 + 256) % M)


# ---------------------------------------------------------------------------------------------
# RTT, RTO, congestion control, fair share

@given(st.lists(st.floats(1e-7, 1e-3), min_size=1, max_size=50))
def test_rtt_and_rto_bounds(samples):
    """MR-REL-005, MR-REL-006: srtt stays within the samples' range; RTO >= 1.5 srtt, clamped."""
    srtt, var = None, 0.0
    for s in samples:
        srtt, var = P.rtt_update(srtt, var, s)
        assert min(samples) * 0.999 <= srtt <= max(samples) * 1.001
        assert var >= 0
        r = P.rto_value(srtt, var, rto_min=2e-6, rto_max=1e-3)
        assert r == pytest.approx(min(1e-3, max(1.5 * srtt, srtt + 4 * var, 2e-6)))
        assert r >= min(1e-3, srtt)
    assert P.rto_value(None, 0.0, initial=40e-6) == 40e-6


@given(st.floats(4096, 1e7), st.integers(0, 10**6), st.floats(0, 1), st.booleans())
def test_aimd_properties(cwnd, acked, ce, may):
    """MR-CC-002, MR-CC-003, MR-CC-004: bounded; grows without CE; shrinks only with CE and once per
    RTT."""
    new, dec = P.aimd(cwnd, acked, ce, may, mtu=4096, cwnd_min=4096, cwnd_max=1e7)
    assert 4096 <= new <= 1e7
    if ce == 0:
        assert not dec and new >= cwnd
        if acked:
            assert new <= cwnd + 4096 * acked / cwnd + 1e-6
    elif may:
        assert dec and new <= cwnd
        assert new >= max(4096, cwnd * 0.5) - 1e-6
    else:
        assert not dec and new == cwnd


def test_aimd_loss_alone_does_not_shrink():
    """MR-CC-004: no CE marks, nothing acked (loss): the window does not change."""
    assert P.aimd(50000.0, 0, 0.0, True, mtu=4096, cwnd_min=4096, cwnd_max=1e6) == (50000.0, False)


@pytest.mark.parametrize("n", [2, 8, 128, 4000])
def test_fair_share(n):
    """MR-CC-005: without CE marks the whole line rate split evenly over the active senders, in
    Mb/s (pacing counts every wire byte, so the hints add up to the line rate, none left idle)."""
    r = P.fair_share_mbps(400e9, n)
    assert r == max(1, int(400e3 / n))
    assert r * n <= 400e3 and r * n > 400e3 - n


def test_fair_share_single_sender_unlimited():
    """MR-CC-005: with one active sender (or none) the hint is 0, no limit, marks or not."""
    assert P.fair_share_mbps(400e9, 1) == 0
    assert P.fair_share_mbps(400e9, 1, 1.0) == 0
    assert P.fair_share_mbps(400e9, 0) == 0
    assert P.fair_share_mbps(100e9, 10**9) == 1


def test_predicted_senders():
    """MR-CC-010: while new senders arrive, the count is raised by their arrival rate (new
    senders per packet time) over the horizon; fewer than two new senders predict nothing."""
    assert P.predicted_senders(1, 1, 16, 61) == 1           # a lone sender: no guess
    assert P.predicted_senders(5, 0, 16, 61) == 5
    assert P.predicted_senders(2, 2, 16, 61) == 2 + int(2 * 61 / 16)
    assert P.predicted_senders(100, 16, 16, 61) == 161      # every arrival new: one per packet time
    # More new senders per packet time never predicts fewer senders.
    assert all(P.predicted_senders(10, k, 16, 61) <= P.predicted_senders(10, k + 1, 16, 61)
               for k in range(16))


@given(st.integers(1, 5000), st.floats(0, 1))
def test_fair_share_drains_marked_queue(n, f):
    """MR-CC-005: the drain term cuts the share by DRAIN_GAIN x the CE fraction: never more than
    DRAIN_GAIN (below the 10 % fairness tolerance), never above the share."""
    r = P.fair_share_mbps(400e9, n, f)
    if n == 1:
        assert r == 0           # a lone sender is never limited by the hint
        return
    share = 400e3 / n
    assert 1 <= r <= max(1, share)
    assert r >= int(share * (1 - P.DRAIN_GAIN)) or r == 1
    assert abs(r - max(1, share * (1 - P.DRAIN_GAIN * f))) <= 1


def test_fair_share_recovers_when_marks_stop():
    """MR-CC-005: the hint is a function of the last interval only: once a standing queue has
    drained below the ECN threshold (no marks), the full share comes back; it never ratchets."""
    hints = [P.fair_share_mbps(400e9, 128, f) for f in (0.0, 1.0, 1.0, 1.0, 0.3, 0.0)]
    assert hints[0] == 3125 and hints[-1] == 3125
    assert hints[1] == hints[2] == hints[3] == int(400e3 * (1 - P.DRAIN_GAIN) / 128)
    assert hints[3] < hints[4] < hints[5]


def test_hinted_window_cap():
    """MR-CC-007: while hinted, a path window is capped at twice the hinted BDP share, at least
    one MTU."""
    assert P.hinted_window_cap(100e9, 10e-6, 4, 4096) == pytest.approx(2 * 100e9 / 8 * 10e-6 / 4)
    assert P.hinted_window_cap(1e9, 10e-6, 8, 4096) == 4096


def test_hinted_conn_window():
    """MR-CC-007: the connection window while hinted is 1.5 hinted BDPs, at least two MTUs."""
    assert P.hinted_conn_window(100e9, 10e-6, 4096) == pytest.approx(1.5 * 100e9 / 8 * 10e-6)
    assert P.hinted_conn_window(1e9, 10e-6, 4096) == 2 * 4096


def test_xpath_deadline():
    """MR-REL-009: due by min RTT + queueing now + allowance after its send time; a negative
    queueing estimate counts as none."""
    assert P.xpath_deadline(1e-6, 10e-6, 3e-6, 2.5e-6) == pytest.approx(16.5e-6)
    assert P.xpath_deadline(1e-6, 10e-6, -3e-6, 2.5e-6) == pytest.approx(13.5e-6)


def test_hinted_window():
    """MR-CC-007: the hinted rate's BDP over the base RTT, split over the paths."""
    assert P.hinted_window(100e9, 10e-6, 4) == pytest.approx(100e9 / 8 * 10e-6 / 4)


def test_pacing_gap():
    """MR-CC-006: a paced sender waits (wire_len + 24) * 8 / rate between frames."""
    assert P.pacing_gap(4096, 100e9) == pytest.approx((4096 + 24) * 8 / 100e9)


# ---------------------------------------------------------------------------------------------
# Path management

def test_path_on_timeout():
    """MR-PATH-001, MR-PATH-002, MR-PATH-003: ECN -> congestion; no ECN -> new entropy; with healthy
    siblings the
    path is suspected, then retired after retire_after timeouts in a row."""
    assert P.path_on_timeout(1, True, True) == P.PATH_KEEP
    assert P.path_on_timeout(4, True, True) == P.PATH_KEEP
    assert P.path_on_timeout(1, False, True) == P.PATH_SUSPECT
    assert P.path_on_timeout(2, False, True, retire_after=3) == P.PATH_SUSPECT
    assert P.path_on_timeout(3, False, True, retire_after=3) == P.PATH_RETIRE
    assert P.path_on_timeout(1, False, False) == P.PATH_REROUTE
    assert P.path_on_timeout(5, False, False, retire_after=3) == P.PATH_REROUTE


@given(st.integers(0, 2**40))
def test_entropy_range(seed):
    """MR-PATH-002, MR-WIRE-041: entropies are UDP source ports 0xC000-0xFFFF."""
    e = P.entropy_for(seed)
    assert 0xC000 <= e <= 0xFFFF


def test_entropy_spreads():
    """MR-PATH-002: consecutive seeds give distinct ports (a reroute really moves)."""
    assert len({P.entropy_for(i) for i in range(256)}) > 240


# ---------------------------------------------------------------------------------------------
# Placement checks

def test_check_chunk():
    """MR-PLC-003, MR-EXO-002: chunks are MTU-aligned and MTU-sized except the last."""
    assert P.check_chunk(0, 4096, 10000, 4096) is None
    assert P.check_chunk(8192, 1808, 10000, 4096) is None
    assert P.check_chunk(0, 0, 0, 4096) is None
    assert P.check_chunk(100, 4096, 10000, 4096) == NakReason.INVALID_REQUEST
    assert P.check_chunk(4096, 1000, 10000, 4096) == NakReason.INVALID_REQUEST
    assert P.check_chunk(8192, 4096, 10000, 4096) == NakReason.INVALID_REQUEST
    assert P.check_chunk(0, 0, 10, 4096) == NakReason.INVALID_REQUEST


@given(st.integers(0, 10000), st.integers(0, 10000), st.integers(0, 10000))
def test_check_access_bounds(region, va, length):
    """MR-SEC-004, MR-SEC-005: inside the region passes; one byte outside is BOUNDS."""
    r = P.check_access(region, P.ACCESS_ALL, P.ACCESS_REMOTE_WRITE, va, length)
    assert (r is None) == (va + length <= region)
    if r is not None:
        assert r == NakReason.BOUNDS


def test_check_access_key_and_rights():
    """MR-SEC-004: unknown key or a region without remote write is ACCESS."""
    assert P.check_access(None, 0, P.ACCESS_REMOTE_WRITE, 0, 1) == NakReason.ACCESS
    assert P.check_access(100, P.ACCESS_LOCAL_WRITE, P.ACCESS_REMOTE_WRITE, 0, 1) == NakReason.ACCESS
    assert P.check_access(100, P.ACCESS_ALL, P.ACCESS_REMOTE_WRITE, 0, 100) is None


def test_check_stream_and_seq():
    """MR-SEC-002, MR-EXO-004: stream range; 32-bit message order across the wrap."""
    assert P.check_stream(0, 1) is None
    assert P.check_stream(1, 1) == NakReason.STREAM
    assert P.check_stream(-1, 4) == NakReason.STREAM
    assert P.seq_lt32(0xFFFFFFFF, 0)
    assert not P.seq_lt32(0, 0xFFFFFFFF)
    assert not P.seq_lt32(5, 5)


def test_rx_admit_is_classify_then_accept():
    """MR-SEQ-005..008, MR-SEC-003: ``rx_admit`` (the receiver's one call per data packet) gives
    ``rx_classify``'s class and, for a new PSN only, ``rx_accept``'s state; a duplicate or a PSN
    beyond the window leaves the state as given."""
    cum, sack = 100, 0b1011 << 3
    for psn in list(range(90, 100 + P.RX_WINDOW + 3)) + [P.PSN_MASK, 5]:
        cls, c2, s2, ab = P.rx_admit(cum, sack, psn)
        assert cls == P.rx_classify(cum, sack, psn)
        if cls == P.RX_NEW:
            assert (c2, s2, ab) == P.rx_accept(cum, sack, psn)
        else:
            assert (c2, s2, ab) == (cum, sack, 0)


def test_check_packet_is_stream_then_chunk():
    """MR-SEC-002, MR-PLC-003: ``check_packet`` (the receiver's one call per data packet) is
    ``check_stream``'s verdict first, then ``check_chunk``'s."""
    for stream in (-1, 0, 1, 3, 4):
        for off, ln, msg_len in ((0, 4096, 10000), (8192, 1808, 10000), (0, 0, 0), (100, 4096, 10000),
                                 (4096, 1000, 10000), (8192, 4096, 10000), (0, 0, 10)):
            want = P.check_stream(stream, 4) or P.check_chunk(off, ln, msg_len, 4096)
            assert P.check_packet(stream, 4, off, ln, msg_len, 4096) == want


@given(st.one_of(st.none(), st.integers(0, 1 << 30)), st.integers(0, 1 << 30), st.integers(0, 1 << 20),
       st.integers(0, 1 << 24), st.integers(1, 1 << 20))
def test_rto_and_aimd_written_out_are_the_formulas(srtt, rttvar, rto_min, span, mtu):
    """MR-REL-006, MR-CC-011, MR-ENG-052/053: ``rto_value_ns`` and ``aimd_fx``'s increase, with
    their min and max written out (every ACK), are the formulas with the builtins."""
    rto_max = rto_min + span
    q = 3 * P.Q_ONE // 2
    want = 40_000 if srtt is None else min(rto_max, max((q * srtt) >> P.Q, srtt + 4 * rttvar, rto_min))
    assert P.rto_value_ns(srtt, rttvar, min_rtts_q=q, rto_min=rto_min, rto_max=rto_max) == want
    cwnd, acked, cmax = rttvar + 1, rto_min + 1, rto_max + mtu
    for csum, smax in ((None, None), (srtt, None), (srtt, span), (cwnd // 2, cwnd)):
        total = cwnd if csum is None else max(cwnd, int(csum))
        want = min(cmax, cwnd + (mtu * acked) // max(1, total)) if smax is None or total < smax else cwnd
        got = P.aimd_fx(cwnd, acked, 0, False, mtu=mtu, cwnd_min=1, cwnd_max=cmax, cwnd_sum=csum,
                        sum_max=smax)
        assert got == (want, False)


def test_msg_window_is_seq_lt32_and_the_bound():
    """MR-EXO-004, MR-SEC-006: ``msg_window`` (the receiver's one call per data packet) says
    delivered exactly when ``seq_lt32(msg, next_deliver)``, beyond exactly when the message is
    ``bound`` or more ahead and not behind, across the 32-bit wrap and the half-space edge."""
    import random
    rng = random.Random(27)
    edges = [0, 1, 2, 0x7FFFFFFF, 0x80000000, 0x80000001, 0xFFFFFFFE, 0xFFFFFFFF]
    cases = [(nd, (nd + d) & 0xFFFFFFFF) for nd in edges + [12345] for d in edges + [3, 4, 5]]
    cases += [(rng.getrandbits(32), rng.getrandbits(32)) for _ in range(2000)]
    for nd, msg in cases:
        for bound in (1, 4, 64, 0x80000000):
            w = P.msg_window(msg, nd, bound)
            behind = P.seq_lt32(msg, nd)
            beyond = ((msg - nd) & 0xFFFFFFFF) >= bound and not behind
            assert (w == P.MSG_DELIVERED) == behind
            assert (w == P.MSG_BEYOND) == beyond == P.msg_beyond(msg, nd, bound)
            assert (w == P.MSG_WITHIN) == (not behind and not beyond)

# ---------------------------------------------------------------------------------------------
# Integer time and fixed-point arithmetic (MR-ENG-050..053)

def test_time_counter_half_space():
    """MR-ENG-050: 32-bit ns counters compare across the wrap."""
    assert P.to_ns(1.5e-6) == 1500
    assert P.time_lt(P.TIME_MASK - 5, 10) and not P.time_lt(10, P.TIME_MASK - 5)
    assert P.time_dist(P.TIME_MASK, 0) == 1 and P.time_dist(0, P.TIME_MASK) == -1


@pytest.mark.parametrize("seed", range(5))
def test_rtt_and_rto_in_ns_track_the_float_rule(seed):
    """MR-ENG-052, MR-REL-005, MR-REL-006: the integer estimator stays within a few ns of the
    float one over a random sample sequence, and so does the RTO."""
    rng = random.Random(seed)
    fs = fv = None
    ins, inv = None, 0
    for _ in range(500):
        s = rng.uniform(8e-6, 40e-6)
        fs, fv = P.rtt_update(fs, 0.0 if fv is None else fv, s)
        ins, inv = P.rtt_update_ns(ins, inv, P.to_ns(s))
        assert abs(ins - fs * 1e9) <= 8 and abs(inv - fv * 1e9) <= 8
        f_rto = P.rto_value(fs, fv, rto_min=2e-6, rto_max=1e-3)
        i_rto = P.rto_value_ns(ins, inv, rto_min=2000, rto_max=1_000_000)
        assert abs(i_rto - f_rto * 1e9) <= 40
    assert P.rto_value_ns(None, 0, initial=40_000) == 40_000
    assert P.rto_value_ns(10**7, 0, rto_max=1_000_000) == 1_000_000


@pytest.mark.parametrize("cwnd,acked,ce,pkts", [(100_000, 4096, 0, 1), (100_000, 16384, 2, 4),
                                                  (5000, 4096, 4, 4), (2_000_000, 40960, 1, 10)])
def test_aimd_fixed_point_tracks_the_float_rule(cwnd, acked, ce, pkts):
    """MR-ENG-053, MR-CC-002, MR-CC-003: the Q16 AIMD is within 2 bytes plus the Q16 rounding
    of the fractions (2^-14 of the window) of the float AIMD."""
    f, fdec = P.aimd(float(cwnd), acked, ce / pkts, True, mtu=4096, cwnd_min=4096, cwnd_max=4e6)
    i, idec = P.aimd_fx(cwnd, acked, P.ce_fraction_q(ce, pkts), True, mtu=4096, cwnd_min=4096,
                        cwnd_max=4_000_000)
    assert isinstance(i, int) and idec == fdec and abs(i - f) <= 2 + cwnd * 2 ** -14
    assert P.aimd_fx(cwnd, 0, 0, True, mtu=4096, cwnd_min=4096, cwnd_max=4_000_000) == (cwnd, False)


def test_pacing_gap_ns_rounds_up():
    """MR-ENG-053, MR-CC-006: the integer gap is the float gap rounded up to a whole ns."""
    for n, mbps in ((4186, 400_000), (64, 3125), (9000, 1)):
        g = P.pacing_gap_ns(n, mbps)
        exact = P.pacing_gap(n, mbps * 1e6) * 1e9
        assert exact <= g < exact + 1


def test_atomic_apply():
    """MR-VERB-010: fetch-and-add wraps modulo 2^64; compare-and-swap writes only on equality."""
    assert P.atomic_apply(False, 2**64 - 1, 2, 0) == 1
    assert P.atomic_apply(False, 5, 0, 99) == 5
    assert P.atomic_apply(True, 7, 9, 7) == 9
    assert P.atomic_apply(True, 7, 9, 8) == 7
    assert P.ACCESS_ALL & P.ACCESS_REMOTE_ATOMIC        # MR-VERB-011
