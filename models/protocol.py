"""MetaRoCE protocol logic as small pure functions (docs/spec/transport.md).

This module is the single source of truth for transport semantics: the endpoints
(models/endpoint.py, models/rocev2.py), the cycle models and the HDL retransmit unit and
context table are all checked against these functions. Every function is pure: it takes
plain integers/floats and returns new values, never touching global state.

Conventions: PSNs are 24-bit integers. A SACK bitmap is a Python int whose bit ``i`` stands
for PSN ``cum + 1 + i`` where ``cum`` is the next PSN expected in order (MR-WIRE-073).
"""
from __future__ import annotations

from typing import NamedTuple

from . import wire
from .wire import NakReason

PSN_MOD = wire.PSN_MOD              # 2^24
PSN_MASK = PSN_MOD - 1
PSN_HALF = PSN_MOD >> 1             # 2^23: the half space deciding ahead/behind (MR-SEQ-002)
SACK_BITS = wire.SACK_BITS          # 256 (MR-SEQ-004)
SACK_MASK = (1 << SACK_BITS) - 1
#: MR-SEQ-006: a sender keeps fewer than this many unresolved PSNs on one path.
SEND_WINDOW = SACK_BITS
#: MR-SEQ-007: a receiver accepts PSNs up to this distance ahead of its next expected PSN.
RX_WINDOW = 2 * SACK_BITS

# Memory access rights (MR-PLC-006, MR-SEC-004).
ACCESS_LOCAL_WRITE = 0x1
ACCESS_REMOTE_WRITE = 0x2
ACCESS_REMOTE_READ = 0x4
ACCESS_REMOTE_ATOMIC = 0x8     # MR-VERB-011
ACCESS_ALL = ACCESS_LOCAL_WRITE | ACCESS_REMOTE_WRITE | ACCESS_REMOTE_READ | ACCESS_REMOTE_ATOMIC


# ---------------------------------------------------------------------------------------------
# PSN arithmetic (MR-SEQ-001..003)

def psn_add(a, n):
    """``a + n`` mod 2^24 (MR-SEQ-001)."""
    return (a + n) & PSN_MASK


def psn_dist(a, b):
    """Signed distance from ``a`` to ``b`` in [-2^23, 2^23) (MR-SEQ-002).

    Positive when ``b`` is ahead of ``a``. A distance of exactly 2^23 counts as behind, so
    that of two PSNs exactly half the space apart each is behind the other's view
    consistently: ``psn_dist(a, b) == -2^23`` for both orders.
    """
    d = (b - a) & PSN_MASK
    return d - PSN_MOD if d >= PSN_HALF else d


def psn_lt(a, b):
    """True when ``a`` is strictly behind ``b`` (MR-SEQ-002)."""
    return psn_dist(a, b) > 0


def psn_le(a, b):
    """True when ``a`` is behind ``b`` or equal (MR-SEQ-002)."""
    return a == b or psn_dist(a, b) > 0


def _trailing_ones(x):
    return (~x & (x + 1)).bit_length() - 1


#: The number of consecutive set bits from bit 0 (a bitmap's cumulative edge, MR-ENG-012).
trailing_ones = _trailing_ones


# ---------------------------------------------------------------------------------------------
# Receiver per-path sequence state (MR-SEQ-004..008)

RX_NEW = 0          # first arrival of this PSN: process the packet
RX_DUP = 1          # already seen (or behind the window): drop the payload, ACK at once
RX_OUT = 2          # too far ahead: outside the window, NAK PSN_WINDOW (MR-SEC-003)


def rx_admit(cum, sack, psn):
    """Classify an arriving data PSN against a path's receive state and, for a new one, record
    its arrival (MR-SEQ-005..008, MR-SEC-003): :func:`rx_classify` and :func:`rx_accept` in one
    call (the receiver's every data packet). Returns ``(cls, cum, sack, abandoned)``: for
    :data:`RX_NEW` the state after the arrival, else the state given and 0. Pure: the caller
    stores the new state once it keeps the packet."""
    d = (psn - cum) & PSN_MASK          # psn_dist(cum, psn), written out (every data packet)
    if d >= PSN_HALF:
        return RX_DUP, cum, sack, 0
    if d > RX_WINDOW:
        return RX_OUT, cum, sack, 0
    if d >= 1 and d <= SACK_BITS and (sack >> (d - 1)) & 1:
        return RX_DUP, cum, sack, 0
    b = (sack << 1) | (1 << d)          # bit 0 stands for cum itself
    abandoned = 0
    if d > SACK_BITS:
        s = d - SACK_BITS
        low = (1 << s) - 1
        abandoned = s - bin(b & low).count("1")
        b |= low
    t = (~b & (b + 1)).bit_length() - 1     # _trailing_ones(b), written out (every data packet)
    return RX_NEW, (cum + t) & PSN_MASK, (b >> t) >> 1, abandoned


def rx_classify(cum, sack, psn):
    """Classify an arriving data PSN against a path's receive state (MR-SEQ-005, MR-SEC-003).

    ``cum`` is the next PSN expected in order, ``sack`` the bitmap above it. Returns
    :data:`RX_NEW`, :data:`RX_DUP` (behind ``cum`` or already SACKed) or :data:`RX_OUT`
    (more than :data:`RX_WINDOW` ahead of ``cum``).
    """
    return rx_admit(cum, sack, psn)[0]


def rx_accept(cum, sack, psn):
    """Record the arrival of a new ``psn`` (classified :data:`RX_NEW`) (MR-SEQ-005..008).

    Returns ``(cum, sack, abandoned)``. ``cum`` advances over every PSN received in order.
    When ``psn`` lies beyond the 256-bit bitmap (``cum + 256 < psn <= cum + 512``) the
    window slides (MR-SEQ-008): the oldest holes are abandoned (counted in ``abandoned``) so
    that ``psn`` fits; the sender has already resolved them as lost (MR-SEQ-006). A PSN not
    new leaves the state as it is.
    """
    _, cum, sack, abandoned = rx_admit(cum, sack, psn)
    return cum, sack, abandoned


# ---------------------------------------------------------------------------------------------
# Sender ACK processing (MR-REL-001..004)

def sack_resolve(floor, next_psn, cum, sack):
    """Resolve a path's outstanding PSNs against one ACK (MR-REL-001, MR-REL-002).

    ``floor`` is the oldest PSN the sender has not yet resolved on the path and ``next_psn``
    the next PSN it will send. Returns ``(n, acked)``: the ``n`` PSNs ``floor .. floor+n-1``
    are resolved by this ACK; bit ``j`` of ``acked`` is set when PSN ``floor + j`` arrived
    (below ``cum`` or SACKed), and clear when it is proven lost: a later PSN on the same
    path arrived and each path is delivered in order, so a gap is loss, not reordering.
    Returns ``(0, 0)`` for a stale ACK and ``(-1, 0)`` for an ACK that covers PSNs never
    sent (a bad ACK, dropped by the caller, MR-ERR-010).
    """
    sack &= SACK_MASK
    dc = (cum - floor) & PSN_MASK               # PSNs floor .. cum-1 arrived in order
    if dc >= PSN_HALF:                          # psn_dist(floor, cum), written out (every ACK)
        dc -= PSN_MOD
    # The highest covered PSN is cum - 1, or cum + bit_length(sack) with SACK bits set.
    n = dc + sack.bit_length() + 1 if sack else dc
    if n <= 0:
        return 0, 0
    ds = (next_psn - floor) & PSN_MASK          # psn_dist(floor, next_psn), written out
    if n > (ds - PSN_MOD if ds >= PSN_HALF else ds):
        return -1, 0
    acked = (1 << dc) - 1 if dc > 0 else 0
    sh = dc + 1
    acked |= (sack << sh) if sh >= 0 else (sack >> -sh)
    return n, acked & ((1 << n) - 1)


def send_window_open(floor, next_psn):
    """True when the path may take one more PSN (MR-SEQ-006): fewer than 256 unresolved."""
    return psn_dist(floor, next_psn) < SEND_WINDOW


# ---------------------------------------------------------------------------------------------
# RTT and retransmission timer (MR-REL-005..007)

def rtt_update(srtt, rttvar, sample):
    """One RTT sample into a path's smoothed RTT and variation (RFC 6298 gains) (MR-REL-005).

    ``srtt`` is ``None`` before the first sample. Returns ``(srtt, rttvar)`` in seconds.
    """
    if srtt is None:
        return sample, sample / 2
    err = sample - srtt
    rttvar = 0.75 * rttvar + 0.25 * abs(err)
    return srtt + 0.125 * err, rttvar


def rto_value(srtt, rttvar, *, min_rtts=1.5, rto_min=2e-6, rto_max=1e-3, initial=40e-6):
    """A path's tail-loss timeout in seconds (MR-REL-006).

    ``max(min_rtts * srtt, srtt + 4 * rttvar, rto_min)`` clamped to ``rto_max``: measured in
    round trips of microseconds, never RoCE's milliseconds. ``initial`` before any sample.
    The timer runs from the oldest live packet's send time, so 1.5 RTTs already allow half an
    RTT of lateness on top of the smoothed RTT, which itself includes queueing.
    """
    if srtt is None:
        return initial
    return min(rto_max, max(min_rtts * srtt, srtt + 4 * rttvar, rto_min))


# ---------------------------------------------------------------------------------------------
# Integer time and fixed-point arithmetic for the engine (MR-ENG-050..053)

NS_PER_S = 1_000_000_000
#: MR-ENG-050: absolute times in the engine are 32-bit nanosecond counters (records.TIME_BITS).
TIME_BITS = 32
TIME_MASK = (1 << TIME_BITS) - 1
#: MR-ENG-051: Q-format scale of the fixed-point fractions (beta, CE fraction, RTO multiplier).
Q = 16
Q_ONE = 1 << Q


def to_ns(seconds):
    """Seconds (the transport's float time) to integer nanoseconds, rounded (MR-ENG-050)."""
    return int(round(seconds * NS_PER_S))


def time_dist(a, b):
    """Signed distance in ns from time counter ``a`` to ``b``, in a 2^31 half space (MR-ENG-050)."""
    d = (b - a) & TIME_MASK
    return d - (1 << TIME_BITS) if d >= 1 << (TIME_BITS - 1) else d


def time_lt(a, b):
    """``a`` is strictly earlier than ``b`` on the wrapping 32-bit ns counter (MR-ENG-050)."""
    return time_dist(a, b) > 0


def rtt_update_ns(srtt, rttvar, sample):
    """MR-REL-005 in integers (MR-ENG-052): RFC 6298 gains 1/8 and 1/4 as shifts on nanoseconds.

    ``srtt`` is ``None`` before the first sample. Shifts of negative values round toward minus
    infinity (an arithmetic shift in the RTL), so the estimator never drifts upward by rounding.
    """
    if type(sample) is not int:     # int(sample), without the int type's call for an int (every ACK)
        sample = int(sample)
    if srtt is None:
        return sample, sample >> 1
    err = sample - srtt
    rttvar = rttvar - (rttvar >> 2) + (abs(err) >> 2)
    return srtt + (err >> 3), rttvar


def rto_value_ns(srtt, rttvar, *, min_rtts_q=3 * Q_ONE // 2, rto_min=2_000, rto_max=1_000_000,
                 initial=40_000):
    """MR-REL-006 in integers (MR-ENG-052): ``max(min_rtts x srtt, srtt + 4 rttvar, rto_min)``
    clamped to ``rto_max``, all in ns; ``min_rtts_q`` is the multiplier in Q16 (1.5 = 98304)."""
    if srtt is None:
        return initial
    # min(rto_max, max(...)) written out: the builtins' calls cost more than the tests (every ACK)
    v = (min_rtts_q * srtt) >> Q
    w = srtt + 4 * rttvar
    if w > v:
        v = w
    if rto_min > v:
        v = rto_min
    return v if v < rto_max else rto_max


def aimd_fx(cwnd, acked_bytes, ce_q, may_decrease, *, mtu, cwnd_min, cwnd_max, beta_q=Q_ONE // 2,
            cwnd_sum=None, sum_max=None):
    """MR-CC-002/003/011 in fixed point (MR-ENG-053): integer byte windows, Q16 fractions.

    ``ce_q`` is the CE-marked fraction of the acknowledged packets in Q16 (``Q_ONE`` = all);
    ``beta_q`` the decrease factor in Q16. Decrease: ``cwnd - cwnd x beta x ce``; increase:
    ``mtu x acked / cwnd_sum`` (integer division; the RTL computes it off the packet path with a
    divider or a reciprocal table). ``cwnd_sum`` is the sum of the windows of the connection's
    active paths (MR-CC-011: the coupled increase; ``None`` = this window alone, a single path);
    no increase while it is at least ``sum_max`` (the connection window's cap).
    Returns ``(cwnd, decreased)``; loss alone changes nothing.
    """
    if type(cwnd) is not int:       # int(cwnd); the tests skip the int type's call (every ACK)
        cwnd = int(cwnd)
    if ce_q > 0:
        if not may_decrease:
            return cwnd, False
        cut = (cwnd * ((beta_q * min(Q_ONE, ce_q)) >> Q)) >> Q
        return max(int(cwnd_min), cwnd - cut), True
    if acked_bytes > 0:
        # the min and max of the formula written out, as the builtins' calls cost more (every ACK)
        total = cwnd
        if cwnd_sum is not None:
            s = cwnd_sum if type(cwnd_sum) is int else int(cwnd_sum)
            if s > cwnd:
                total = s
        if sum_max is None or total < sum_max:
            grown = cwnd + (mtu * (acked_bytes if type(acked_bytes) is int else int(acked_bytes))
                            ) // (total if total > 1 else 1)
            cap = cwnd_max if type(cwnd_max) is int else int(cwnd_max)
            cwnd = grown if grown < cap else cap
    return cwnd, False


def coupled_cut_fx(cwnd, ce_count, cwnd_min, mtu, beta_q, cut_left):
    """MR-CC-013: the decrease at the end of a path's observation window (one path RTT) in which
    ``ce_count`` acknowledged packets were CE-marked: ``beta x ce_count x mtu`` bytes, at most
    ``cut_left``, what the connection may still cut in its current RTT (beta x its coupled
    window, MR-CC-011, per RTT, as one path is cut at most by beta x its window per RTT). For a window-limited path
    this is DCTCP's cut, beta x the window's CE fraction x cwnd; counted per mark it is the same
    whether the connection's packets travel on one path or on many (a path may carry less than
    one packet per RTT). Returns ``(cwnd, debt)``: the path's window, not below ``cwnd_min``,
    and the part of the cut it could not take (taken from the connection's next increases)."""
    want = (beta_q * int(ce_count) * mtu) >> Q
    want = max(0, min(want, int(cut_left)))
    new = max(int(cwnd_min), int(cwnd) - want)
    return new, max(0, want - (int(cwnd) - new))


def debt_take(cwnd, cwnd_min, debt):
    """MR-CC-018: a path acknowledged while its connection owes ``debt`` bytes of a cut
    (MR-CC-013) gives up its window down to ``cwnd_min``, at most the debt. Returns
    ``(cwnd, debt)``: the path's window and what the connection still owes."""
    take = max(0, min(int(debt), int(cwnd) - int(cwnd_min)))
    return int(cwnd) - take, int(debt) - take


def ss_exit_path_window(ramp, n_paths, floor, cwnd_max):
    """MR-CC-019: each path's window when slow start ends without a hint: its equal share of
    the ramp, within the path's floor and the window cap."""
    return max(int(floor), min(int(cwnd_max), int(ramp) // max(1, int(n_paths))))


def queue_paced_gap_ns(gap_ns, base_rtt_ns, rtt_ns):
    """MR-CC-015, MR-CC-020: the pacing gap ``gap_ns`` of a hinted connection whose latest RTT
    sample is ``rtt_ns``. Above 1.5 base RTTs the gap is stretched by the rate form of the hinted
    connection window (x the sample / 1.5 base RTTs), but by no more than the sample's excess
    over 1.5 base RTTs: a sender slower than a packet per 1.5 base RTTs postpones its next packet
    by the excess delay its last one measured, so that N such senders together hold back the
    excess queue once, not one whole gap of traffic each."""
    if 2 * rtt_ns <= 3 * base_rtt_ns:
        return gap_ns
    excess2 = 2 * rtt_ns - 3 * base_rtt_ns           # twice the excess delay
    if 2 * gap_ns >= 3 * base_rtt_ns:
        return gap_ns + excess2 // 2                 # the cap: the two forms meet at 1.5 base RTTs
    return gap_ns + gap_ns * excess2 // (3 * base_rtt_ns)


def blind_release_ns(t_first_ns, wire_bytes, rate_mbps):
    """MR-CC-016: the earliest time a connection may send after its first hint ``rate_mbps``,
    when it sent ``wire_bytes`` (frames plus :data:`WIRE_OVERHEAD` each) from ``t_first_ns``
    on before the receiver answered: as if those bytes had been paced at the hint."""
    return int(t_first_ns) + -(-int(wire_bytes) * 8 * 1000 // max(1, int(rate_mbps)))


def counted_release_ns(t_first_ns, wire_bytes, rate_mbps, base_rtt_ns):
    """MR-CC-035: the blind release of MR-CC-016, and not before one base RTT after the first
    frame: until then the receiver may not yet have counted the senders that started with this
    one on longer paths (their announcements take up to half the base RTT to arrive, its update
    at most the other half to come back), so a hint that came sooner may still fall."""
    return max(blind_release_ns(t_first_ns, wire_bytes, rate_mbps), int(t_first_ns) + int(base_rtt_ns))


def initial_rto_ns(rto_initial_ns, conn_id, seed=0):
    """MR-CC-014: a connection's timer before any RTT sample: ``rto_initial`` x (1 + k / 1024),
    ``k`` in 0..255 a hash of the connection id (and the endpoint's seed): up to a quarter
    more."""
    k = (entropy_for(conn_id * 2654435761 + seed) >> 3) & 0xFF
    return rto_initial_ns + ((rto_initial_ns * k) >> 10)


def phase_k(conn_id, seed=0):
    """MR-CC-023, MR-CW-083: the connection's phase hash k in 0..255 of :func:`phase_spread_ns`
    (fixed at the connection's open: the pacing record keeps it)."""
    return entropy_for(conn_id * 2654435761 + seed) & 0xFF


def phase_spread_ns(gap_ns, conn_id, seed=0):
    """MR-CC-023: how long an announcing connection's first paced frame waits beyond its
    release: ``gap_ns`` x k / 256, ``k`` in 0..255 a hash of the connection id (and the
    endpoint's seed, :func:`phase_k`), so that senders answered within nanoseconds of each
    other do not send their paced frames in one burst every gap."""
    return (int(gap_ns) * phase_k(conn_id, seed)) >> 8


def path_window_floor(mtu, n_paths):
    """MR-CC-011: the least window of one of ``n_paths`` paths: MTU / paths (at least 64
    bytes), so that the windows of a connection together fall to one MTU, like a single path."""
    return max(1, mtu // max(1, n_paths))


def initial_path_window(path_floor, bdp, init_window_bdp, n_paths):
    """MR-CC-008, MR-PATH-005, MR-CW-108: a path's share of the initial window: ``bdp`` (bytes)
    x ``init_window_bdp`` over the connection's ``n_paths``, at least ``path_floor``, in whole
    bytes (a restored path's window and the lower bound a collapsed path's next clean ACK
    raises its window to; the block takes it from its setup write)."""
    return int(max(path_floor, bdp * init_window_bdp / n_paths))


def keep_window(cwnd, path_floor):
    """MR-PATH-001, MR-CW-107: a congestion timeout (the KEEP verdict) halves the path's window,
    down to the path floor."""
    return max(path_floor, cwnd // 2)


def shared_window(cwnd, given, n_healthy, cwnd_max):
    """MR-PATH-004, MR-CW-111: a healthy path's window ``cwnd`` after a suspected or retired
    path's window ``given`` is shared out to the ``n_healthy`` healthy paths: its part added, at
    most ``cwnd_max``, in whole bytes. For integer windows and cap this is
    ``min(cwnd_max, cwnd + given // n_healthy)`` (the fraction ``k / n`` of the float share is
    at least 1/8 or 0 exactly), the block's form."""
    return int(min(cwnd_max, cwnd + given / n_healthy))


def ce_fraction_q(ce_count, packets):
    """The CE-marked fraction ``ce_count / packets`` in Q16, at most ``Q_ONE`` (MR-ENG-053)."""
    return min(Q_ONE, (ce_count << Q) // max(1, packets))


def pacing_gap_ns(nbytes, rate_mbps):
    """MR-CC-006 in integers (MR-ENG-053): ns a sender paced at ``rate_mbps`` waits after a frame
    of ``nbytes`` (plus :data:`WIRE_OVERHEAD`), rounded up."""
    return -(-(nbytes + WIRE_OVERHEAD) * 8 * 1000 // rate_mbps)


# ---------------------------------------------------------------------------------------------
# Congestion control (MR-CC-001..006)

def aimd(cwnd, acked_bytes, ce_frac, may_decrease, *, mtu, cwnd_min, cwnd_max, beta=0.5):
    """ECN AIMD update of one window in bytes (MR-CC-002, MR-CC-003).

    Without CE marks the window grows by one MTU per window of acknowledged bytes (additive
    increase). With CE marks (``ce_frac`` = fraction of the acknowledged packets that were
    CE-marked) and ``may_decrease`` (at most one decrease per RTT) it shrinks by
    ``beta * ce_frac`` of itself, DCTCP-style proportional decrease. Returns
    ``(cwnd, decreased)``. Loss alone never shrinks the window: the fabric is lossy by
    assumption and loss is not a congestion signal (MR-CC-004).
    """
    if ce_frac > 0:
        if not may_decrease:
            return cwnd, False
        return max(cwnd_min, cwnd * (1.0 - beta * min(1.0, ce_frac))), True
    if acked_bytes > 0:
        cwnd = min(cwnd_max, cwnd + mtu * acked_bytes / cwnd)
    return cwnd, False


#: MR-CC-006: bytes a frame occupies on the wire beyond ``codec.wire_len``: FCS (4),
#: preamble and start delimiter (8), minimum inter-frame gap (12).
WIRE_OVERHEAD = 24
#: MR-CC-005: the largest cut the receiver's drain term applies to the fair share (all arrivals
#: CE-marked). Kept below the 10 % fairness tolerance, so a draining sender stays near its share.
DRAIN_GAIN = 0.08


#: MR-SEC-151: the least non-zero rate hint, in Mb/s (the floor of :func:`fair_share_mbps`).
MIN_RATE_MBPS = 1


def clamp_hint_bps(rate_mbps, line_rate_bps):
    """MR-SEC-151, MR-CC-006: the rate (b/s) a sender obeys for a hint of ``rate_mbps``: 0 is "no
    limit" (the line rate); any other hint is clamped to [MIN_RATE_MBPS, line rate]."""
    if not rate_mbps:
        return line_rate_bps
    return min(line_rate_bps, max(MIN_RATE_MBPS, rate_mbps) * 1e6)


def fair_share_mbps(line_rate_bps, n_active, ce_frac=0.0, drain=DRAIN_GAIN):
    """The receiver's fair-share rate hint for each active sender, in Mb/s (MR-CC-005).

    The receiver's inbound line rate split evenly over the ``n_active`` senders (the pacing of
    MR-CC-006 counts every wire byte, so the hints add up to exactly the line rate), less a
    drain term ``drain x ce_frac`` (``ce_frac``: fraction of the arrivals CE-marked in the last
    interval). A queue standing above the ECN threshold marks nearly every packet and is drained
    at ``drain`` x the line rate; once it falls below the threshold the marks stop and the hint
    returns to the full share by itself: the hint targets a small standing queue (about the
    marking threshold) and never ratchets down. At least 1 Mb/s.
    With at most one sender the hint is 0, "no limit": a lone sender is bounded by its own
    windows (and its own ECN AIMD); the hint's job is sharing the receiver.
    """
    if n_active <= 1:
        return 0
    rate = line_rate_bps * (1.0 - drain * max(0.0, min(1.0, ce_frac)))
    return max(MIN_RATE_MBPS, int(rate / max(1, n_active) / 1e6))


#: MR-ENG-328: DRAIN_GAIN as the integer ratio the receiver's hint block uses (0.08 = 2/25).
DRAIN_NUM, DRAIN_DEN = 2, 25


def fair_share_fx(line_mbps, n_active, ce=0, pkts=0):
    """MR-CC-005, MR-ENG-329: :func:`fair_share_mbps` in integers, as the engine's receiver
    computes it: the line rate (Mb/s) less the drain term for ``ce`` CE-marked arrivals of the
    previous interval's ``pkts``, over ``n_active`` senders: ``line x (25 pkts - 2 ce) //
    (25 pkts x n)`` (``line // n`` without arrivals), at least MIN_RATE_MBPS; 0 with at most one
    sender. The exact floor of the quotient the float form approximates (MR-ENG-330)."""
    if n_active <= 1:
        return 0
    ce = max(0, min(ce, pkts))
    p = max(1, pkts)
    num = line_mbps * (DRAIN_DEN * p - DRAIN_NUM * ce)
    return max(MIN_RATE_MBPS, num // (DRAIN_DEN * p * n_active))


def share_interval_fx(share_ns, prev, mtu, line_mbps):
    """MR-CC-005, MR-ENG-331: the share interval (ns) after one in which ``prev`` senders were
    counted: ``share_ns`` or two MTU packet times per sender at the line rate, whichever is
    longer (the endpoint's ``_share_iv_of``: 2 prev x mtu x 8 x 10^9 // line b/s)."""
    return max(share_ns, 16_000 * prev * mtu // max(1, line_mbps))

#: MR-CC-012: a sender is demand-limited when what arrived from it in each of the last two
#: intervals, plus DEMAND_MARGIN_PKTS packets, is below DEMAND_FRACTION_Q (Q16, 7/8) of the level
#: it was offered over that interval.
DEMAND_FRACTION_Q = 7 * Q_ONE // 8
#: MR-CC-012: packets of counting resolution (a sender paced at its share may be seen one packet
#: short in an interval), so that a sender near its share is never taken as demand-limited.
DEMAND_MARGIN_PKTS = 2


def demand_limited(arrived_bytes, level_mbps, interval_ns, pkt_bytes):
    """MR-CC-012: a sender from which ``arrived_bytes`` (wire bytes, the larger count of the last
    two intervals of ``interval_ns``) arrived needs less than the level ``level_mbps``: it is
    below 7/8 of the level's bytes over the interval by more than two packets of ``pkt_bytes``."""
    level_bytes = level_mbps * interval_ns // 8000          # Mb/s x ns = 1e-3 bit
    return arrived_bytes + DEMAND_MARGIN_PKTS * pkt_bytes < (level_bytes * DEMAND_FRACTION_Q) >> Q


#: MR-CC-017: a sender's hint age (2 bits) at which its demand is known
HINT_AGE_KNOWN = 3


def hint_age_next(age):
    """MR-CC-017: a sender's hint age when a share interval ends: 0 (never hinted) stays 0,
    otherwise one more, saturating at :data:`HINT_AGE_KNOWN`."""
    return min(HINT_AGE_KNOWN, int(age) + 1) if age else 0


def demand_known(age):
    """MR-CC-017: whether a sender's demand can be judged at the end of a share interval, from
    its hint age before this end is counted: its first non-zero hint went out (age 1) in an
    interval that ended at least two interval ends before this one, so both counts judged (this
    interval's and the one before) were sent under a hint, not by its first window or slow
    start."""
    return int(age) >= HINT_AGE_KNOWN


def fair_level_mbps(line_rate_bps, n_active, ce_frac=0.0, n_limited=0, limited_mbps=0,
                    drain=DRAIN_GAIN):
    """MR-CC-012: the receiver's max-min fair (water-filling) hint, in Mb/s.

    ``n_limited`` of the ``n_active`` senders are demand-limited (:func:`demand_limited`) and
    together use ``limited_mbps``; the others share the rest of the (drained, MR-CC-005) line
    rate: ``(line x (1 - drain x ce) - limited) / (n_active - n_limited)``. Never below the equal
    share :func:`fair_share_mbps` (a limited sender never gets less than before), and equal to it
    without limited senders. Every sender gets the same hint: a limited sender's hint is a
    ceiling it does not reach. With at most one sender the hint is 0, "no limit".
    """
    share = fair_share_mbps(line_rate_bps, n_active, ce_frac, drain)
    if share == 0 or n_limited <= 0:
        return share
    rate_mbps = int(line_rate_bps * (1.0 - drain * max(0.0, min(1.0, ce_frac))) / 1e6)
    rest = (rate_mbps - int(limited_mbps)) // max(1, n_active - n_limited)
    return max(share, rest)


#: MR-CC-010: packet times over which the receiver measures the arrival rate of new senders.
NEW_SENDER_WINDOW = 16
#: MR-CC-010: base RTTs over which the receiver counts senders still to come at that rate.
NEW_SENDER_HORIZON = 0.75


def predicted_senders(n_active, new_recent, window_pkts, horizon_pkts):
    """MR-CC-010: the sender count a fair-share hint is computed for.

    ``n_active`` senders are active (MR-CC-005); ``new_recent`` first packets of senders not
    active before arrived in the last ``window_pkts`` packet times. While new senders keep
    arriving at that rate (an incast whose first packets are still draining from the switch
    queue) the count keeps growing, by ``new_recent / window_pkts`` per packet time over the
    ``horizon_pkts`` (:data:`NEW_SENDER_HORIZON` base RTTs); they are counted now. Fewer than two new senders predict nothing, so a lone sender is never limited by a
    guess.
    """
    if new_recent < 2 or window_pkts <= 0:
        return n_active
    return n_active + int(new_recent * horizon_pkts / window_pkts)


def hinted_window(rate_bps, base_rtt, n_paths):
    """MR-CC-007: the per-path window floor while a rate hint applies: the hinted rate's
    bandwidth-delay product over the base RTT, split over the connection's paths."""
    return rate_bps / 8.0 * base_rtt / n_paths


def hinted_window_cap(rate_bps, base_rtt, n_paths, mtu):
    """MR-CC-007: the per-path window cap while a rate hint applies: twice the hinted window
    (room for a queueing delay of one base RTT), at least one MTU."""
    return max(mtu, 2.0 * hinted_window(rate_bps, base_rtt, n_paths))


#: MR-CC-008: a new connection's window grows by this many times the acknowledged bytes while
#: the receiver reports no other sender (x4 per RTT), until it reaches the initial window.
SLOW_START_GAIN = 3

#: MR-CC-007: bytes in flight a hinted connection may keep, in hinted BDPs over the base RTT.
HINT_WINDOW_SLACK = 1.5


def hinted_conn_window(rate_bps, base_rtt, mtu):
    """MR-CC-007: the connection window while a rate hint applies: :data:`HINT_WINDOW_SLACK`
    hinted BDPs, at least two MTUs (so that a share below one packet per RTT is still met). With every sender at its share, a queue longer than half a
    base RTT makes the windows, not the pacing, set the rate, so the queue drains."""
    return max(2 * mtu, HINT_WINDOW_SLACK * rate_bps / 8.0 * base_rtt)



# MR-CC-007 in integers (MR-ENG-053), for the congestion window block (hw-cwnd.md MR-CW-050..):
# a rate in Mb/s (the hint as clamp_hint_mbps clamps it) and the base RTT in ns. Each is the
# floor of the float form above: where the endpoint compares or truncates a window against
# that form, it gets the same integer (tests/test_cwnd_model.py checks the two forms agree).

def clamp_hint_mbps(rate_mbps, line_mbps):
    """MR-SEC-151, MR-CC-006: :func:`clamp_hint_bps` in Mb/s: 0 ("no limit") is the line rate,
    any other hint is clamped to [MIN_RATE_MBPS, line rate]."""
    if not rate_mbps:
        return line_mbps
    return min(line_mbps, max(MIN_RATE_MBPS, rate_mbps))


def hinted_window_fx(rate_mbps, base_rtt_ns, n_paths):
    """MR-CC-007: ``int(hinted_window(...))``, the per-path floor of the hinted band in bytes."""
    return rate_mbps * base_rtt_ns // (8000 * n_paths)


def hinted_window_cap_fx(rate_mbps, base_rtt_ns, n_paths, mtu):
    """MR-CC-007: ``int(hinted_window_cap(...))``, twice the hinted window, at least one MTU."""
    return max(mtu, 2 * rate_mbps * base_rtt_ns // (8000 * n_paths))


def hinted_conn_window_fx(rate_mbps, base_rtt_ns, mtu):
    """MR-CC-007: ``int(hinted_conn_window(...))``: 1.5 hinted BDPs, at least two MTUs."""
    return max(2 * mtu, 3 * rate_mbps * base_rtt_ns // 16000)


def xpath_deadline(t_sent, min_rtt, queue_delay, allowance):
    """MR-REL-009: the time by which a packet sent at ``t_sent`` on a path whose lowest RTT is
    ``min_rtt`` should have been acknowledged, given the queueing delay ``queue_delay`` seen now
    and a reordering ``allowance``. Once a packet sent later (on any path) is acknowledged and
    this time has passed, the packet is lost."""
    return t_sent + min_rtt + max(0, queue_delay) + allowance


#: MR-REL-011: the lost-ACK estimate's gain (1/16 per expected ACK) and the false-alarm bound a
#: silent-path verdict must meet: the chance that ``k`` ACKs in a row are all lost, at most
#: 2^-13 (Q16: 8), with ``k`` from 2 (MR-REL-009) to :data:`OVERDUE_GROUPS_MAX`.
ACK_LOSS_GAIN_LOG2 = 4
OVERDUE_FALSE_ALARM_Q16 = 8
OVERDUE_GROUPS_MAX = 6


def ack_loss_update(loss_q16, seen, lost):
    """MR-REL-011: the path's lost-ACK fraction (Q16) after an ACK that resolved ``seen + lost``
    packets sent with AckReq: ``seen`` (0 or 1) is the ACK's own trigger, ``lost`` those whose own
    ACK never came. One EWMA step per expected ACK, gain 1/16, integer only."""
    for sample in (1,) * lost + (0,) * seen:
        loss_q16 += ((sample << 16) - loss_q16) >> ACK_LOSS_GAIN_LOG2
    return max(0, min(loss_q16, (1 << 16) - 1))


def overdue_groups(loss_q16):
    """MR-REL-011: how many ACK groups in a row must be overdue before a path is silent
    (MR-REL-009): the least ``k`` >= 2 whose chance of ``k`` lost ACKs in a row, at the measured
    lost-ACK fraction, is at most 2^-13; at most :data:`OVERDUE_GROUPS_MAX`."""
    k = 2
    run = (loss_q16 * loss_q16 + 0xFFFF) >> 16      # rounded up: never optimistic
    while run > OVERDUE_FALSE_ALARM_Q16 and k < OVERDUE_GROUPS_MAX:
        run = (run * loss_q16 + 0xFFFF) >> 16
        k += 1
    return k


HEAD_RESEND_ROUNDS = 2


def head_resend_twice(room_bytes, window_bytes):
    """MR-REL-012: whether a resend of a message's lowest unacknowledged chunk goes out twice:
    the chunk window's room left (bytes beyond the next new chunk) is less than the connection
    sends in :data:`HEAD_RESEND_ROUNDS` loss-recovery rounds (one window each), so a lost copy
    would stall the message before its own resend could be acknowledged."""
    return room_bytes < HEAD_RESEND_ROUNDS * window_bytes


def pacing_gap(nbytes, rate_bps):
    """Seconds a sender paced at ``rate_bps`` waits after a frame of ``wire_len`` ``nbytes``
    (MR-CC-006); the gap counts the frame's :data:`WIRE_OVERHEAD` too."""
    return (nbytes + WIRE_OVERHEAD) * 8.0 / rate_bps


# ---------------------------------------------------------------------------------------------
# Path management (MR-PATH-001..006)

PATH_KEEP = 0       # congestion (ECN seen): keep the route, halve the window
PATH_REROUTE = 1    # no ECN, no healthy sibling: new entropy and halve the window (no information)
PATH_SUSPECT = 2    # no ECN, healthy siblings: new entropy, one probe packet at a time
PATH_RETIRE = 3     # repeated path-specific failure: stop using the path, probe it later


def path_on_timeout(consecutive_timeouts, ecn_recent, others_healthy=True, *, retire_after=3):
    """What a tail-loss timeout means for its path (MR-PATH-001..003).

    ``consecutive_timeouts`` counts this timeout; ``others_healthy`` is true when another
    path of the connection was acknowledged recently. ECN marks mean congestion
    (:data:`PATH_KEEP`). Without ECN the route may have failed, so the path always gets a
    new entropy; when other paths are healthy the failure is specific to this path
    (:data:`PATH_SUSPECT`, then :data:`PATH_RETIRE` after ``retire_after`` timeouts in a row).
    When no path is healthy nothing path-specific can be concluded (:data:`PATH_REROUTE`).
    """
    if ecn_recent:
        return PATH_KEEP
    if not others_healthy:
        return PATH_REROUTE
    if consecutive_timeouts >= retire_after:
        return PATH_RETIRE
    return PATH_SUSPECT


#: MR-PATH-001: a path is healthy while it was acknowledged within its last 4 RTTs; ECN echoes
#: count as recent for as long (MR-TX-203)
HEALTH_RTTS = 4


def recent_until(t, srtt):
    """MR-PATH-001, MR-TX-203: the time (ns) until which an event at ``t`` (a path's last ACK,
    an ECE echo) is recent: ``HEALTH_RTTS`` smoothed RTTs ``srtt`` later."""
    return t + HEALTH_RTTS * srtt


#: MR-TXS-121: the step between a path's entropies after each new-route verdict (odd, so the
#: generations 0..2^14-1 of one port are distinct)
ENTROPY_STEP = 0x1F35


def entropy_next(sport, gen):
    """MR-TXS-121 (MR-PATH-002): a path's UDP source port after ``gen`` new-route verdicts, from
    its template's ``sport``: ``sport`` itself for generation 0, else a port of the entropy
    range (0xC000-0xFFFF) that differs from it and from every other generation's (the
    hardware's form of the endpoint's new ``entropy_for`` seed: an xor with a constant's
    multiple, no multiplier)."""
    if not gen:
        return sport
    return wire.ENTROPY_BASE | ((sport ^ (gen * ENTROPY_STEP)) & wire.ENTROPY_MASK)


def entropy_for(seed):
    """A UDP source port in the entropy range 0xC000-0xFFFF for ``seed`` (MR-PATH-002, MR-WIRE-041)."""
    x = (seed * 0x9E3779B1 + 0x7F4A7C15) & 0xFFFFFFFF
    x ^= x >> 15
    x = (x * 0x2C1B3C6D) & 0xFFFFFFFF
    x ^= x >> 12
    return wire.ENTROPY_BASE | (x & wire.ENTROPY_MASK)


# ---------------------------------------------------------------------------------------------
# Placement and memory protection (MR-PLC-001..006, MR-SEC-001..006)

def chunk_count(length, mtu):
    """MR-CONN-005: the chunks of a message of ``length`` bytes cut at ``mtu``: at least one (a
    zero-length message is one packet without payload)."""
    return max(1, -(-int(length) // mtu))


def chunk_bytes(length, chunk, mtu):
    """MR-CONN-005: the payload bytes of chunk ``chunk`` of a message of ``length`` bytes: bytes
    ``[chunk x mtu, min((chunk + 1) x mtu, length))``."""
    return max(0, min(mtu, int(length) - chunk * mtu))


def chunk_window_open(chunk, ack_base, window):
    """MR-ENG-012: chunk ``chunk`` of a message may be sent while it is below the message's
    lowest unacknowledged chunk ``ack_base`` plus the chunk window."""
    return chunk < ack_base + window


def chunk_ack(ack_base, ack_bits, chunk, window):
    """MR-EXO-002/003 at the sender (MR-ENG-025): chunk ``chunk`` acknowledged. ``ack_bits`` bit
    ``i`` stands for chunk ``ack_base + i`` (``window`` bits); a chunk below ``ack_base`` or
    already set is a duplicate (returned unchanged, ``new`` False); a chunk at or beyond the
    window is never sent (MR-ENG-012) and changes nothing. Returns ``(ack_base, ack_bits,
    new)``: ``ack_base`` moves over the acknowledged chunks above it."""
    d = chunk - ack_base
    if d < 0 or d >= window or (ack_bits >> d) & 1:
        return ack_base, ack_bits, False
    b = ack_bits | (1 << d)
    t = _trailing_ones(b)
    return ack_base + t, b >> t, True


def check_packet(stream, n_streams, offset, length, msg_len, mtu):
    """:func:`check_stream` (MR-SEC-002), then :func:`check_chunk` (MR-PLC-003, MR-EXO-002), in
    one call (the receiver's every data packet). Returns ``None`` or the :class:`NakReason`."""
    if not 0 <= stream < n_streams:
        return NakReason.STREAM
    if offset % mtu or offset + length > msg_len:
        return NakReason.INVALID_REQUEST
    if length != mtu and offset + length != msg_len:
        return NakReason.INVALID_REQUEST
    if length == 0 and msg_len != 0:
        return NakReason.INVALID_REQUEST
    return None


def check_chunk(offset, length, msg_len, mtu):
    """Validate a data packet's place in its message (MR-PLC-003, MR-EXO-002).

    Every packet but the last of a message carries exactly ``mtu`` bytes at an offset that
    is a multiple of ``mtu``, so a chunk is named by its offset and duplicates can never be
    counted twice. Returns ``None`` or :class:`NakReason.INVALID_REQUEST`.
    """
    return check_packet(0, 1, offset, length, msg_len, mtu)


def check_access(region_len, region_access, needed, va, length):
    """Key/bounds check for remote access to a memory region (MR-SEC-004, MR-SEC-005).

    ``region_len`` is ``None`` when the key is unknown. Regions are zero-based: ``va`` is a
    byte offset into the region. Returns ``None`` or :class:`NakReason.ACCESS` (unknown key
    or missing right) / :class:`NakReason.BOUNDS` (range outside the region).
    """
    if region_len is None or (region_access & needed) != needed:
        return NakReason.ACCESS
    if va < 0 or length < 0 or va + length > region_len:
        return NakReason.BOUNDS
    return None


def check_stream(stream, n_streams):
    """MR-SEC-002: a stream id outside the connection's streams is :class:`NakReason.STREAM`."""
    return None if 0 <= stream < n_streams else NakReason.STREAM


def seq_lt32(a, b):
    """``a`` strictly before ``b`` in 32-bit message/receive sequence space (MR-EXO-004)."""
    d = (b - a) & 0xFFFFFFFF
    return 0 < d < 0x80000000


MSG_WITHIN = 0      # msg_window: within the stream's message bound
MSG_BEYOND = 1      # msg_window: ``bound`` or more ahead (MR-SEC-006)
MSG_DELIVERED = 2   # msg_window: behind the next message to deliver, already delivered


def msg_window(msg, next_deliver, bound):
    """MR-EXO-004, MR-SEC-006 (MR-RX-167): where message ``msg`` of a stream whose next message
    to deliver is ``next_deliver`` lies: :data:`MSG_DELIVERED` (strictly before it in 32-bit
    sequence space, :func:`seq_lt32`), :data:`MSG_BEYOND` (``bound`` or more ahead) or
    :data:`MSG_WITHIN`. One call for the receiver's every data packet."""
    d = (msg - next_deliver) & 0xFFFFFFFF
    if d > 0x80000000:          # seq_lt32(msg, next_deliver), written out
        return MSG_DELIVERED
    return MSG_BEYOND if d >= bound else MSG_WITHIN


def msg_beyond(msg, next_deliver, bound):
    """MR-SEC-006 (MR-RX-167): message ``msg`` of a stream whose next message to deliver is
    ``next_deliver`` is beyond the stream's message bound ``bound`` (``bound`` or more ahead;
    a message behind is already delivered, never beyond)."""
    return msg_window(msg, next_deliver, bound) == MSG_BEYOND


def msg_slot_verdict(msg, next_deliver, bound, held):
    """MR-SEC-006, MR-RX-167: the message bound's verdict on a new PSN of message ``msg``, taken
    before any sequence state changes: ``None`` (the message is delivered or within the
    bound and consistent), :data:`NakReason.INVALID_REQUEST` (beyond the bound) or
    :data:`NakReason.LENGTH` (``held``: the open message of that number differs in length or
    opcode; ``False`` when none is open or it matches)."""
    w = msg_window(msg, next_deliver, bound)
    if w == MSG_DELIVERED:
        return None
    if w == MSG_BEYOND:
        return NakReason.INVALID_REQUEST
    return NakReason.LENGTH if held else None


#: MR-ERR-003: NAK reasons after which the sender fails the work request instead of retrying.
FATAL_NAKS = frozenset({NakReason.INVALID_REQUEST, NakReason.ACCESS, NakReason.BOUNDS,
                        NakReason.LENGTH, NakReason.STREAM, NakReason.NO_CONNECTION,
                        NakReason.ABORTED})


# ---------------------------------------------------------------------------------------------
# Atomics (MR-VERB-010..013)

U64_MASK = (1 << 64) - 1


def atomic_apply(op_is_cas, orig, operand, compare):
    """MR-VERB-010: the new value of a 64-bit atomic on ``orig``: fetch-and-add adds ``operand``
    modulo 2^64; compare-and-swap writes ``operand`` (the swap value) when ``orig == compare``.
    The requester always gets ``orig``."""
    if op_is_cas:
        return operand if orig == compare else orig
    return (orig + operand) & U64_MASK


class OpenOffer(NamedTuple):
    """MR-VERB-015: what one side of a connection advertises when the connection opens (the
    slow path's exchange, as RC's responder resources and initiator depth). None: nothing
    advertised, no bound from that side (an engine built without the count, MR-ENG-239)."""
    max_rd_atomic: int | None       # responder resources per connection (MR-VERB-005)
    max_rx_msgs: int | None         # messages it holds open at its receiver (MR-ENG-015, MR-ENG-157)


class OpenLimits(NamedTuple):
    """MR-VERB-015: the requester's bounds on one connection, agreed at its open."""
    max_tx_msgs: int                # messages started and not completed (MR-ENG-013)
    max_init_rd_atomic: int | None  # initiator depth: READ/atomic requests in flight (MR-VERB-014)


def open_limits(max_tx_msgs, max_init_rd_atomic, offer):
    """MR-VERB-015: this side's bounds on a connection from its own configuration and the peer's
    :class:`OpenOffer`: ``max_tx_msgs`` the smaller of its own and the peer's ``max_rx_msgs``
    (MR-ENG-015), the initiator depth the smaller of its own ``max_init_rd_atomic`` and the
    peer's ``max_rd_atomic`` (MR-VERB-014). A None on either side is no bound from that side
    (both None: no initiator depth beyond MR-VERB-006's). ``offer`` None: the peer advertised
    nothing, the own values. ValueError on a bound below 1."""
    for name, v in (("max_tx_msgs", max_tx_msgs), ("max_init_rd_atomic", max_init_rd_atomic),
                    *(((f"peer {k}", v) for k, v in offer._asdict().items()) if offer is not None else ())):
        if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 1):
            raise ValueError(f"{name} must be an integer >= 1 or None, got {v!r}")
    if max_tx_msgs is None:
        raise ValueError("max_tx_msgs must be an integer >= 1, got None")
    if offer is None:
        return OpenLimits(max_tx_msgs, max_init_rd_atomic)

    def least(own, peer):
        return own if peer is None else peer if own is None else min(own, peer)
    return OpenLimits(least(max_tx_msgs, offer.max_rx_msgs), least(max_init_rd_atomic, offer.max_rd_atomic))
