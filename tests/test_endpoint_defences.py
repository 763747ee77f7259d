"""The endpoint's own defences (docs/spec/security.md 5.6 and 5.7): per-connection initial PSNs
(MR-CONN-107), random R_Keys (MR-SEC-152) and ACK consistency (MR-SEC-151)."""
import random
from dataclasses import replace

import pytest

from metaroce.models import protocol as P
from metaroce.models.codec import IP, MRAH, make
from metaroce.models.endpoint import Endpoint, Status
from metaroce.models.loopback import Loopback
from metaroce.models.wire import MrahFlag, Op

A, B = "10.0.0.1", "10.0.0.2"
MTU = 1024
KW = dict(mtu=MTU, line_rate_bps=100e9, base_rtt=4e-6)


def pair(psn_a=None, psn_b=None, b_expects=None, paths=4, **kw):
    a, b = Endpoint(A, rng=random.Random(1), **KW, **kw), Endpoint(B, rng=random.Random(2), **KW, **kw)
    ca = a.connect(10, B, 20, paths=paths, init_psn=psn_a, peer_init_psn=psn_b)
    cb = b.connect(20, A, 10, paths=paths, init_psn=psn_b,
                   peer_init_psn=psn_a if b_expects is None else b_expects)
    return a, b, ca, cb


def write(a, b, ca, n=64 << 10, until=0.01):
    src = bytearray(random.Random(3).randbytes(n))
    dst = bytearray(n)
    ca.post_write(0, a.reg_mr(src), 0, n, 0, b.reg_mr(dst), wr_id=1)
    lb = Loopback(a, b, delay=1.5e-6)
    lb.run(until=until)
    return src, dst, lb


def test_connections_start_at_their_own_initial_psns():
    """MR-CONN-107: every path sends from the connection's local initial PSN and expects the
    peer's; two connections of one endpoint use their own, and the transfer completes."""
    a, b, ca, cb = pair(0xABCDE0, 0x123456)
    other = a.connect(11, B, 21, paths=2)                   # default: the endpoint's initial_psn
    assert all(p.next_psn == p.floor == 0xABCDE0 and p.rx_cum == p.rx_high == 0x123456 for p in ca.paths)
    assert all(p.next_psn == 0 and p.rx_cum == 0 for p in other.paths)
    src, dst, lb = write(a, b, ca)
    assert dst == src
    assert [(c.wr_id, c.status) for c in lb.completions[0]] == [(1, Status.SUCCESS)]
    # the PSNs wrap through 2^24 on the way (MR-SEQ arithmetic modulo 2^24)
    a2, b2, ca2, _ = pair(0xFFFFFE, 0xFFFFFF)
    src, dst, lb = write(a2, b2, ca2)
    assert dst == src and [c.status for c in lb.completions[0]] == [Status.SUCCESS]
    assert all(p.next_psn < 0x1000 for p in ca2.paths)
    with pytest.raises(ValueError):
        a.connect(12, B, 22, init_psn=1 << 24)
    with pytest.raises(ValueError):
        a.connect(13, B, 23, peer_init_psn=-1)


def test_wrong_initial_psn_is_not_accepted():
    """MR-CONN-107: a receiver that expects another initial PSN places nothing: the PSNs are
    outside its window (an old session's or a blind attacker's frames are refused the same way),
    and the write fails with an error status instead of succeeding."""
    a, b, ca, cb = pair(0x400000, 0x000100, b_expects=0x000100 + (1 << 22), wr_timeout=300e-6)
    src, dst, lb = write(a, b, ca, n=8 << 10)
    assert dst == bytearray(len(dst))
    assert [c.status for c in lb.completions[0]] != [Status.SUCCESS]
    assert lb.completions[0] and lb.completions[0][0].status != Status.SUCCESS


def test_rkeys_random_unique_reproducible():
    """MR-SEC-152: reg_mr's R_Keys are 32 random bits (not sequential), unique among live
    registrations, reproducible from the endpoint's rng, and freed by dereg_mr."""
    eps = [Endpoint(A, rng=random.Random(7)) for _ in range(2)]
    keys = [[ep.reg_mr(bytearray(8)) for _ in range(64)] for ep in eps]
    assert keys[0] == keys[1]                               # same rng, same keys
    assert len(set(keys[0])) == 64 and all(0 < k < 1 << 32 for k in keys[0])
    assert sum(k >= 1 << 24 for k in keys[0]) > 48          # uses the high bits
    assert sorted(keys[0]) != keys[0] and all(b - a != 1 for a, b in zip(keys[0], keys[0][1:]))
    ep = eps[0]
    ep.dereg_mr(keys[0][0])
    assert keys[0][0] not in ep._rkeys.live and keys[0][1] in ep._rkeys.live
    # without an rng the keys come from `secrets`: two endpoints do not agree
    assert [Endpoint(A).reg_mr(bytearray(1)) for _ in range(4)] != [Endpoint(A).reg_mr(bytearray(1)) for _ in range(4)]


def test_deregistered_rkey_is_refused():
    """MR-SEC-152, MR-SEC-004: a write to a deregistered R_Key is refused, not placed."""
    a, b, ca, cb = pair(5, 9)
    dst = bytearray(4096)
    key = b.reg_mr(dst)
    b.dereg_mr(key)
    src = bytearray(b"\x5A" * 4096)
    ca.post_write(0, a.reg_mr(src), 0, len(src), 0, key, wr_id=2)
    lb = Loopback(a, b, delay=1.5e-6)
    lb.run(until=0.005)
    assert dst == bytearray(4096)
    assert [c.status for c in lb.completions[0]] == [Status.REM_ACCESS_ERR]


def _sent(a, ca, n):
    """Post one write and collect the data frames the sender puts on the wire at t=0 (not its
    announcement, MR-CC-021)."""
    src = bytearray(n)
    ca.post_write(0, a.reg_mr(src), 0, n, 0, 1, wr_id=3)
    out = []
    while (f := a.next_packet(0.0)) is not None:
        if f.mrdh is not None:
            out.append(f)
    return out


def _mk(path, cum, sack, trigger, ce, rate):
    f = make(Op.MR_ACK, ip=IP(src=B, dst=A),
             mrah=MRAH(path=path, flags=MrahFlag.ECE if ce else 0, ce_count=ce, cum_psn=cum,
                       rate_mbps=rate, trigger_psn=trigger, sack=sack))
    f.bth = replace(f.bth, dest_qp=10)
    return f


def _state(ca):
    return [(p.floor, p.cwnd, p.srtt, p.last_ece) for p in ca.paths], ca.rate_bps, ca.window


def test_ack_for_unsent_psn_is_dropped():
    """MR-SEC-151: an ACK whose cum_psn or SACK bits cover a PSN not yet sent, or that names a
    path the connection does not have, is dropped, counted, and changes no state."""
    psn0 = 0x7FFFF0
    a, b, ca, cb = pair(psn0, 3, paths=2, first_window=0)
    frames = _sent(a, ca, 8 * MTU)
    p0 = [f.bth.psn for f in frames if f.mrdh.path == 0]
    before = _state(ca)
    a.receive(_mk(0, (max(p0) + 2) & P.PSN_MASK, 0, max(p0), 0, 0), 1e-6)        # cum beyond next_psn
    a.receive(_mk(0, psn0, 1 << 200, psn0, 0, 0), 1e-6)                          # SACK beyond it
    a.receive(_mk(5, psn0 + 1, 0, psn0, 0, 0), 1e-6)                             # no such path
    assert a.stats["drop_bad_ack"] == 3 and a.stats["acks_received"] == 0
    assert _state(ca) == before
    a.receive(_mk(0, (max(p0) + 1) & P.PSN_MASK, 0, max(p0), 0, 0), 1e-6)        # exactly what was sent
    assert a.stats["acks_received"] == 1 and ca.paths[0].floor == (max(p0) + 1) & P.PSN_MASK


def test_stale_ack_carries_no_ece_or_hint():
    """MR-SEC-151: an ACK that acknowledges nothing new (an older one, replayed) changes no state:
    its ECE and rate hint are ignored; the repeat of the newest ACK may still update the hint
    (MR-CC-009)."""
    a, b, ca, cb = pair(100, 7, paths=2, first_window=0)
    frames = _sent(a, ca, 8 * MTU)
    p0 = sorted(f.bth.psn for f in frames if f.mrdh.path == 0)
    a.receive(_mk(0, p0[1] + 1, 0, p0[1], 0, 0), 2e-6)                          # acks two
    a.receive(_mk(0, p0[2] + 1, 0, p0[2], 0, 0), 3e-6)                          # acks one more
    before = _state(ca)
    # the first ACK again, now with ECE on every packet and the lowest hint: stale
    a.receive(_mk(0, p0[1] + 1, 0, p0[1], 0xFFFF, 1), 4e-6)
    assert a.stats["acks_stale"] == 1 and _state(ca) == before
    # the newest ACK repeated with a new hint: the hint applies, its ECE does not
    a.receive(_mk(0, p0[2] + 1, 0, p0[2], 0xFFFF, 50_000), 5e-6)
    assert ca.rate_bps == 50e9 and ca.paths[0].last_ece == before[0][0][3]


def test_ce_count_capped_and_hint_clamped():
    """MR-SEC-151: ce_count counts at most the packets the ACK newly acknowledges, and a hint is
    clamped to [minimum rate, line rate]."""
    assert P.clamp_hint_bps(0, 100e9) == 100e9
    assert P.clamp_hint_bps(0xFFFFFFFF, 100e9) == 100e9
    assert P.clamp_hint_bps(1, 100e9) == P.MIN_RATE_MBPS * 1e6
    assert P.fair_share_mbps(100e9, 10 ** 9) == P.MIN_RATE_MBPS
    runs = []
    for ce in (1, 0xFFFF):
        a, b, ca, cb = pair(100, 7, paths=2, first_window=0)
        p0 = sorted(f.bth.psn for f in _sent(a, ca, 64 * MTU) if f.mrdh.path == 0)
        a.receive(_mk(0, p0[0] + 1, 0, p0[0], ce, 0xFFFFFFFF), 2e-6)           # one packet acked
        runs.append(_state(ca))
        assert ca.rate_bps == 100e9
    assert runs[0] == runs[1]           # 65535 CE marks count as the one packet acknowledged


def test_rocev2_qps_start_at_their_initial_psns():
    """MR-CONN-107: the RoCEv2 baseline's QPs take the same initial PSNs (IBTA sq_psn/rq_psn), so
    `metaroce transfer --protocol rocev2` runs on the handshake's; the write wraps through 2^24."""
    from metaroce.models.rocev2 import RoceEndpoint
    kw = dict(mtu=MTU, line_rate_bps=100e9, base_rtt=4e-6)
    a, b = RoceEndpoint(A, rng=random.Random(1), **kw), RoceEndpoint(B, rng=random.Random(2), **kw)
    ca = a.connect(10, B, 20, init_psn=0xFFFFF0, peer_init_psn=77)
    b.connect(20, A, 10, init_psn=77, peer_init_psn=0xFFFFF0)
    src, dst, lb = write(a, b, ca)
    assert dst == src and [c.status for c in lb.completions[0]] == [Status.SUCCESS]
    qp = ca.qps[0]
    assert qp.una == qp.max_psn == (0xFFFFF0 + len(src) // MTU) & P.PSN_MASK
    with pytest.raises(ValueError):
        a.connect(30, B, 40, init_psn=1 << 24)


def test_nak_for_unsent_psn_is_dropped():
    """MR-SEC-151: a NAK for a PSN the path has not yet sent, or for a path that does not exist,
    is dropped and counted and fails nothing; the same NAK for a sent PSN is taken."""
    from metaroce.models.codec import MRNH
    from metaroce.models.wire import NakReason

    def nak(path, psn):
        f = make(Op.MR_NAK, ip=IP(src=B, dst=A), mrnh=MRNH(path=path, reason=NakReason.ACCESS, psn=psn))
        f.bth = replace(f.bth, dest_qp=10)
        return f

    a, b, ca, cb = pair(0xFFFFFE, 3, paths=2, first_window=0)
    p0 = sorted((f.bth.psn for f in _sent(a, ca, 8 * MTU) if f.mrdh.path == 0), key=lambda x: (x - 0xFFFFFE) % (1 << 24))
    nxt = ca.paths[0].next_psn
    a.receive(nak(0, nxt), 1e-6)
    a.receive(nak(0, (nxt + 1000) & P.PSN_MASK), 1e-6)
    a.receive(nak(7, p0[0]), 1e-6)
    assert a.stats["drop_bad_nak"] == 3 and a.stats["naks_received"] == 0
    assert a.poll_cq() == []
    a.receive(nak(0, p0[-1]), 1e-6)
    assert a.stats["naks_received"] == 1
    assert [c.status for c in a.poll_cq()] == [Status.REM_ACCESS_ERR]
