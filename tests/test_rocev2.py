"""The RoCEv2 RC go-back-N baseline (models/rocev2.py) over the loopback (MR-GBN-001, MR-GBN-002,
MR-GBN-003, MR-GBN-004, MR-GBN-005, MR-GBN-006, MR-GBN-007, MR-GBN-008, MR-GBN-009, MR-GBN-010,
MR-GBN-011, MR-GBN-012)."""
import collections
import random

import pytest

from metaroce.models.codec import AETH, BTH, IP, RETH, UDP, make
from metaroce.models.endpoint import Status, WcOpcode
from metaroce.models.loopback import LoopFaults, Loopback
from metaroce.models.rocev2 import AETH_NAK_ACCESS, AETH_NAK_SEQ, RoceEndpoint
from metaroce.models.wire import Op

A, B = "10.0.0.1", "10.0.0.2"
MTU = 1024


def pair(streams=1, **kw):
    kw.setdefault("mtu", MTU)
    kw.setdefault("line_rate_bps", 100e9)
    kw.setdefault("base_rtt", 4e-6)
    a, b = RoceEndpoint(A, **kw), RoceEndpoint(B, **kw)
    ca = a.connect(10, B, 20, streams=streams)
    cb = b.connect(20, A, 10, streams=streams)
    return a, b, ca, cb


def write_run(n, faults=None, seed=0, until=1.0, **kw):
    a, b, ca, cb = pair(**kw)
    src = bytearray(random.Random(seed).randbytes(n))
    dst = bytearray(n)
    ca.post_write(0, a.reg_mr(src), 0, n, 0, b.reg_mr(dst), wr_id=1)
    lb = Loopback(a, b, faults=faults, seed=seed, delay=1.5e-6)
    lb.run(until=until)
    return a, b, src, dst, lb


def test_lossless_write():
    """MR-GBN-001, MR-GBN-002: RC WRITE FIRST/MIDDLE/LAST, one completion, no retransmission."""
    ops = collections.Counter()
    a, b, ca, cb = pair()
    n = 300 * MTU + 5
    src = bytearray(random.Random(1).randbytes(n))
    dst = bytearray(n)
    ca.post_write(0, a.reg_mr(src), 0, n, 0, b.reg_mr(dst), wr_id=1)
    lb = Loopback(a, b, faults=LoopFaults(drop_if=lambda f, now: ops.update([Op(f.bth.opcode)]) and False))
    lb.run()
    assert dst == src
    assert [(c.wr_id, c.status) for c in lb.completions[0]] == [(1, Status.SUCCESS)]
    assert ops[Op.RC_WRITE_FIRST] == 1 and ops[Op.RC_WRITE_LAST] == 1
    assert ops[Op.RC_WRITE_MIDDLE] == 299 and ops[Op.RC_ACK] > 0
    assert a.stats["retransmitted"] == 0
    # MR-GBN-011: ACKs are coalesced (AckReq every 16 packets and on the last one).
    assert ops[Op.RC_ACK] <= 301 // 16 + 2


@pytest.mark.parametrize("loss", [0.01, 0.1])
def test_correct_under_loss(loss):
    """MR-GBN-004, MR-GBN-005: go-back-N delivers intact data under loss, with NAKs and rewinds."""
    a, b, src, dst, lb = write_run(400 * MTU, LoopFaults(loss=loss), seed=3)
    assert dst == src
    assert [(c.wr_id, c.status) for c in lb.completions[0]] == [(1, Status.SUCCESS)]
    assert b.stats["naks_sent"] >= 1 and a.stats["nak_psn_sequence"] >= 1
    assert b.stats["drop_out_of_sequence"] > 0
    assert a.stats["retransmitted"] > lb.stats["lost"]      # go-back-N resends more than it lost


def test_one_nak_per_gap():
    """MR-GBN-004: one sequence-error NAK for a gap; later out-of-order packets dropped silently."""
    dropped = []

    def drop_psn5(f, now):
        if f.bth.opcode != Op.RC_ACK and f.bth.psn == 5 and not dropped:
            dropped.append(now)
            return True
        return False
    a, b, src, dst, lb = write_run(40 * MTU, LoopFaults(drop_if=drop_psn5))
    assert dst == src
    assert b.stats["naks_sent"] == 1
    assert b.stats["drop_out_of_sequence"] >= 10
    assert a.stats["retransmitted"] == b.stats["drop_out_of_sequence"] + 1


def test_nak_rewinds_requester():
    """MR-GBN-005: a NAK(0x60, ePSN) acknowledges everything before ePSN and rewinds to it."""
    a, b, ca, cb = pair()
    src = bytearray(20 * MTU)
    ca.post_write(0, a.reg_mr(src), 0, len(src), 0, 0x100, wr_id=1)
    sent = [a.next_packet(0.0) for _ in range(10)]
    assert [f.bth.psn for f in sent] == list(range(10))
    nak = make(Op.RC_ACK, ip=IP(src=B, dst=A), bth=BTH(dest_qp=10, psn=4), aeth=AETH(AETH_NAK_SEQ, 0))
    a.receive(nak, 1e-6)
    f = a.next_packet(1e-6)
    assert f.bth.psn == 4 and f.bth.opcode == Op.RC_WRITE_MIDDLE
    assert a.stats["retransmitted"] == 1


def test_tail_loss_needs_ack_timeout():
    """MR-GBN-006: a lost last packet is recovered only by the 4.096 us x 2^t ACK timeout."""
    dropped = []

    def drop_last(f, now):
        if f.bth.opcode == Op.RC_WRITE_LAST and not dropped:
            dropped.append(now)
            return True
        return False
    a, b, src, dst, lb = write_run(20 * MTU, LoopFaults(drop_if=drop_last), timeout_exp=5)
    assert dst == src and a.stats["timeouts"] == 1
    assert lb.last_completion > 4.096e-6 * 2 ** 5
    assert a.params()["ack_timeout_us"] == pytest.approx(4.096 * 32)


def test_retry_exceeded():
    """MR-GBN-008, MR-GBN-009: a dead path exhausts retry_cnt: RETRY_EXC_ERR, later WRs flushed."""
    a, b, ca, cb = pair(retry_cnt=2, timeout_exp=3)
    src = bytearray(4 * MTU)
    ka, kb = a.reg_mr(src), b.reg_mr(bytearray(4 * MTU))
    ca.post_write(0, ka, 0, MTU, 0, kb, wr_id=1)
    ca.post_write(0, ka, 0, MTU, 0, kb, wr_id=2)
    lb = Loopback(a, b, faults_ab=LoopFaults(loss=1.0), faults_ba=LoopFaults())
    lb.run(until=0.01)
    assert [(c.wr_id, c.status) for c in lb.completions[0]] == [
        (1, Status.RETRY_EXC_ERR), (2, Status.REM_OP_ERR)]
    assert a.stats["timeouts"] == 3


def test_bad_rkey_nak_access():
    """MR-GBN-003, MR-SEC-004: a bad R_Key is NAKed remote access error (0x62); memory untouched."""
    a, b, ca, cb = pair()
    mem = bytearray(4 * MTU)
    kb = b.reg_mr(mem)
    ca.post_write(0, a.reg_mr(bytearray(b"\x77" * MTU)), 0, MTU, 0, kb + 5, wr_id=1)
    lb = Loopback(a, b)
    lb.run(until=1e-3)
    assert [(c.wr_id, c.status) for c in lb.completions[0]] == [(1, Status.REM_ACCESS_ERR)]
    assert mem == bytearray(4 * MTU)
    assert b.stats["drop_access"] == 1 and b.stats["naks_sent"] == 1


def test_out_of_bounds_nak_access():
    """MR-GBN-003, MR-SEC-005: a write past the region is NAKed before any byte is placed."""
    b = RoceEndpoint(B, mtu=MTU)
    mem = bytearray(MTU)
    kb = b.reg_mr(mem)
    b.connect(20, A, 10)
    f = make(Op.RC_WRITE_ONLY, b"\x01" * 16, ip=IP(src=A, dst=B), udp=UDP(sport=0xC001),
             bth=BTH(dest_qp=20, psn=0), reth=RETH(MTU - 8, kb, 16))
    b.receive(f, 0.0)
    out = b.next_packet(0.0)
    assert out.bth.opcode == Op.RC_ACK and out.aeth.syndrome == AETH_NAK_ACCESS
    assert mem == bytearray(MTU)


def test_sends_and_streams_as_qps():
    """MR-GBN-001, MR-GBN-002: sends with immediates on 3 streams (3 QPs), under 3% loss."""
    a, b, ca, cb = pair(streams=3)
    rng = random.Random(7)
    src = bytearray(rng.randbytes(30 * 5000))
    rbuf = bytearray(len(src))
    ka, kr = a.reg_mr(src), b.reg_mr(rbuf)
    expect = collections.defaultdict(list)
    for i in range(30):
        s = i % 3
        n = rng.randrange(5000)
        cb.post_recv(s, kr, i * 5000, 5000, wr_id=100 + i)
        ca.post_send(s, ka, i * 5000, n, wr_id=i, imm=i if i % 2 else None)
        expect[s].append((100 + i, n, i if i % 2 else None))
    lb = Loopback(a, b, faults=LoopFaults(loss=0.03), seed=2)
    lb.run(until=1.0)
    assert sorted(c.wr_id for c in lb.completions[0]) == list(range(30))
    got = collections.defaultdict(list)
    for c in lb.completions[1]:
        assert c.opcode == WcOpcode.RECV
        got[c.stream].append((c.wr_id, c.byte_len, c.imm))
    assert dict(got) == dict(expect)
    for i in range(30):
        n = expect[i % 3][i // 3][1]
        assert rbuf[i * 5000:i * 5000 + n] == src[i * 5000:i * 5000 + n]


@pytest.mark.parametrize("kind", ["reorder", "duplicate", "corrupt", "ack_loss"])
def test_faults(kind):
    """MR-GBN-004, MR-GBN-005, MR-GBN-006, MR-GBN-007: intact data and one completion under each
    fault kind."""
    faults = {"reorder": LoopFaults(reorder=0.05, reorder_delay=3e-6),
              "duplicate": LoopFaults(duplicate=0.1),
              "corrupt": LoopFaults(corrupt=0.03),
              "ack_loss": LoopFaults(ctrl_loss=0.3)}[kind]
    a, b, src, dst, lb = write_run(50 * MTU, faults, seed=4, timeout_exp=4)
    assert dst == src
    assert [(c.wr_id, c.status) for c in lb.completions[0]] == [(1, Status.SUCCESS)]


def test_window_at_least_bdp():
    """MR-GBN-010: the outstanding window is at least one bandwidth-delay product."""
    ep = RoceEndpoint(A, mtu=4096, line_rate_bps=400e9, base_rtt=10e-6, window_bdp=1.0)
    assert ep.window_pkts * 4096 >= 400e9 / 8 * 10e-6
    assert RoceEndpoint(A).params()["dcqcn"] is False


def test_rnr_retry():
    """MR-GBN-002: a send without a receive gets an RNR NAK and is retried after the RNR delay."""
    a, b, ca, cb = pair()
    src = bytearray(b"q" * 2000)
    rbuf = bytearray(2000)
    ca.post_send(0, a.reg_mr(src), 0, 2000, wr_id=1)
    lb = Loopback(a, b)
    lb.run(until=20e-6)
    assert a.stats["nak_rnr"] >= 1
    cb.post_recv(0, b.reg_mr(rbuf), 0, 2000, wr_id=2)
    lb.run(until=1e-3)
    assert rbuf == src
    assert [c.wr_id for c in lb.completions[1]] == [2]


def test_rnr_retry_exceeded():
    """MR-GBN-013, MR-GBN-009: with rnr_retry < 7 a send whose receive never comes completes
    RNR_RETRY_EXC_ERR after that many RNR NAKs, and the QP flushes its other work requests;
    with 7 it keeps retrying (IBTA)."""
    a, b, ca, cb = pair(rnr_retry=3, rnr_delay=5e-6)
    src = bytearray(b"q" * 2000)
    k = a.reg_mr(src)
    ca.post_send(0, k, 0, 2000, wr_id=1)
    ca.post_send(0, k, 0, 2000, wr_id=2)
    lb = Loopback(a, b)
    lb.run(until=1e-3)
    assert [(c.wr_id, c.status) for c in lb.completions[0]] == [
        (1, Status.RNR_RETRY_EXC_ERR), (2, Status.REM_OP_ERR)]
    assert a.stats["nak_rnr"] == 4
    a, b, ca, cb = pair(rnr_delay=5e-6)
    ca.post_send(0, a.reg_mr(src), 0, 2000, wr_id=1)
    lb = Loopback(a, b)
    lb.run(until=1e-3)
    assert lb.completions[0] == [] and a.stats["nak_rnr"] > 20
    with pytest.raises(ValueError):
        RoceEndpoint(A, rnr_retry=8)


def test_frames_encode_and_decode():
    """MR-GBN-002, MR-GBN-003: the baseline's RC frames (writes, sends, ACK, NAK) survive
    codec.encode/decode with their ICRC."""
    from metaroce.models import codec
    frames = []

    def tap(f, now):
        frames.append(f)
        return f.bth.opcode == Op.RC_WRITE_MIDDLE and f.bth.psn == 2 and \
            sum(1 for g in frames if g.bth.psn == 2) == 1
    a, b, ca, cb = pair()
    src = bytearray(random.Random(9).randbytes(6 * MTU))
    ka, kb = a.reg_mr(src), b.reg_mr(bytearray(6 * MTU))
    cb.post_recv(0, kb, 0, 6 * MTU, wr_id=1)
    ca.post_write(0, ka, 0, 5 * MTU, 0, kb, wr_id=1)
    ca.post_write(0, ka, 0, 7, 0, kb, wr_id=2, imm=0xDEADBEEF)
    ca.post_send(0, ka, 0, 2 * MTU + 1, wr_id=3, imm=4)
    lb = Loopback(a, b, faults=LoopFaults(drop_if=tap))
    lb.run(until=0.01)
    ops = {Op(f.bth.opcode) for f in frames}
    assert {Op.RC_WRITE_FIRST, Op.RC_WRITE_MIDDLE, Op.RC_WRITE_LAST, Op.RC_WRITE_ONLY_IMM,
            Op.RC_SEND_FIRST, Op.RC_SEND_LAST_IMM, Op.RC_ACK} <= ops
    assert any(f.aeth is not None and f.aeth.syndrome == AETH_NAK_SEQ for f in frames)
    for f in frames:
        g = codec.decode(codec.encode(f))
        assert g.icrc_ok
        assert (g.bth.opcode, g.bth.psn, g.bth.dest_qp, g.bth.ack_req) == \
            (f.bth.opcode, f.bth.psn, f.bth.dest_qp, f.bth.ack_req)
        assert g.reth == f.reth and g.aeth == f.aeth and g.imm == f.imm
        assert bytes(g.payload) == bytes(f.payload)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(20))
def test_random_fault_sweep(seed):
    """MR-GBN-004, MR-GBN-005, MR-GBN-006, MR-GBN-007: random fault mixes on 1 or 3 QPs with
    writes, sends and immediates; intact memory, completions exactly once and in order."""
    from test_endpoint import Workload
    rng = random.Random(seed)
    faults = LoopFaults(loss=rng.choice([0, 0.01, 0.05]), ctrl_loss=rng.choice([0, 0.1]),
                        reorder=rng.choice([0, 0.05]), duplicate=rng.choice([0, 0.05]),
                        corrupt=rng.choice([0, 0.02]), ce=rng.choice([0, 0.2]))
    streams = rng.choice([1, 3])
    a, b, ca, cb = pair(streams=streams, timeout_exp=4)
    w = Workload(a, b, ca, cb, seed=seed, nmsg=30, streams=streams)
    lb = Loopback(a, b, faults=faults, seed=seed, delay=1.5e-6)
    lb.run(until=2.0)
    w.check(lb)
