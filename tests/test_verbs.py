"""RDMA READ and atomics (docs/spec/transport.md, MR-VERB) on the MetaRoCE endpoint and the RoCEv2
baseline, over the loopback (models/loopback.py) with faults."""
import random
import struct

import pytest

from metaroce.models.endpoint import (ACCESS_REMOTE_WRITE, Endpoint, Status,
                                      WcOpcode)
from metaroce.models.loopback import LoopFaults, Loopback
from metaroce.models.wire import Op

A, B = "10.0.0.1", "10.0.0.2"
MTU = 1024


def pair(paths=4, streams=2, **kw):
    kw.setdefault("mtu", MTU)
    kw.setdefault("line_rate_bps", 100e9)
    kw.setdefault("base_rtt", 4e-6)
    a, b = Endpoint(A, **kw), Endpoint(B, **kw)
    ca = a.connect(10, B, 20, paths=paths, streams=streams)
    cb = b.connect(20, A, 10, paths=paths, streams=streams)
    return a, b, ca, cb


def _mem(ep, n, seed=1, access=None):
    buf = bytearray(random.Random(seed).randbytes(n))
    return buf, (ep.reg_mr(buf) if access is None else ep.reg_mr(buf, access))


def test_read_lossless_multi_packet_sprayed():
    """MR-VERB-001, MR-VERB-002, MR-VERB-003: a READ of many MTUs comes back as response packets
    sprayed over the responder's paths and lands in the local buffer; one RDMA_READ completion."""
    a, b, ca, cb = pair()
    remote, rkey = _mem(b, 50_000, seed=2)
    local, lkey = _mem(a, 60_000, seed=3)
    ca.post_read(1, lkey, 1000, 40_000, 5000, rkey, wr_id=7)
    used = set()
    lb = Loopback(a, b, seed=1, delay=1.5e-6)
    lb.tap = None
    orig_next = b.next_packet

    def spy(now):
        f = orig_next(now)
        if f is not None and f.bth.opcode == Op.MR_READ_RESP:
            used.add(f.mrdh.path)
        return f
    b.next_packet = spy
    lb.run(until=0.01)
    txc, rxc = lb.completions
    assert [(c.wr_id, c.status, c.opcode, c.byte_len, c.stream) for c in txc] == \
        [(7, Status.SUCCESS, WcOpcode.RDMA_READ, 40_000, 1)]
    assert rxc == []
    assert local[1000:41_000] == remote[5000:45_000]
    assert used == {0, 1, 2, 3}
    assert a.stats["bytes_placed"] == 40_000


def _run(a, b, until=0.02, seed=1, **kw):
    lb = Loopback(a, b, seed=seed, delay=1.5e-6, **kw)
    lb.run(until=until)
    return lb


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_read_under_loss_exactly_once(seed):
    """MR-VERB-001, MR-VERB-003, MR-EXO-002: READs under 5 % loss both ways, reordering and
    duplicates: every byte lands once, every READ completes once, in posting order per stream."""
    a, b, ca, cb = pair(streams=2)
    remote, rkey = _mem(b, 200_000, seed=seed)
    local, lkey = _mem(a, 200_000, seed=seed + 10)
    rng = random.Random(seed)
    want = []
    for i in range(12):
        n = rng.choice([0, 1, MTU, MTU + 1, rng.randrange(16_000)])
        off = i * 16_000
        ca.post_read(i % 2, lkey, off, n, off, rkey, wr_id=i)
        want.append((i, n, off))
    lb = _run(a, b, until=0.05, seed=seed,
              faults=LoopFaults(loss=0.05, ctrl_loss=0.05, duplicate=0.05, reorder=0.05))
    txc, _ = lb.completions
    assert sorted(c.wr_id for c in txc) == list(range(12))
    for s in (0, 1):
        ids = [c.wr_id for c in txc if c.stream == s]
        assert ids == sorted(ids)
    for c in txc:
        assert c.status == Status.SUCCESS and c.opcode == WcOpcode.RDMA_READ
        assert c.byte_len == want[c.wr_id][1]
    for i, n, off in want:
        assert local[off:off + n] == remote[off:off + n]
    assert lb.stats["lost"] > 0 and b.stats["retransmitted"] + b.stats["probes_sent"] > 0
    assert not ca.rd_out and not cb.rsp and cb.rsp_used == 0


@pytest.mark.parametrize("case", ["no_key", "no_right", "bounds"])
def test_read_refused_completes_with_error(case):
    """MR-VERB-002: a READ with an unknown key, a region without ACCESS_REMOTE_READ, or a range
    outside the region is refused before anything is read, by an ERROR response in its stream's
    order; it completes REM_ACCESS_ERR and the next READ on the stream still works."""
    a, b, ca, cb = pair()
    remote, rkey = _mem(b, 10_000, seed=4)
    wo_buf, wo_key = _mem(b, 10_000, seed=5, access=ACCESS_REMOTE_WRITE)
    local, lkey = _mem(a, 20_000, seed=6)
    before = bytes(local)
    key, va = {"no_key": (0x7777, 0), "no_right": (wo_key, 0), "bounds": (rkey, 9_000)}[case]
    ca.post_read(0, lkey, 0, 2_000, va, key, wr_id=1)
    ca.post_read(0, lkey, 10_000, 3_000, 100, rkey, wr_id=2)
    lb = _run(a, b)
    txc, _ = lb.completions
    assert [(c.wr_id, c.status) for c in txc] == [(1, Status.REM_ACCESS_ERR), (2, Status.SUCCESS)]
    assert local[:2_000] == before[:2_000]
    assert local[10_000:13_000] == remote[100:3_100]
    assert b.stats["requests_refused"] >= 1 and not cb.rsp


def test_read_sees_earlier_write_of_its_stream():
    """MR-VERB-002: a READ executes when its stream's delivery reaches it, so it returns the bytes
    of a WRITE posted before it on the same stream, even when that write's packets are late."""
    a, b, ca, cb = pair(streams=1)
    src, skey = _mem(a, 30_000, seed=7)
    remote, rkey = _mem(b, 30_000, seed=8)
    local, lkey = _mem(a, 30_000, seed=9)
    ca.post_write(0, skey, 0, 20_000, 0, rkey, wr_id=1)
    ca.post_read(0, lkey, 0, 20_000, 0, rkey, wr_id=2)
    lb = _run(a, b, faults=LoopFaults(reorder=0.3, reorder_delay=8e-6, loss=0.05))
    txc, _ = lb.completions
    assert [(c.wr_id, c.status) for c in txc] == [(1, Status.SUCCESS), (2, Status.SUCCESS)]
    assert local[:20_000] == src[:20_000]


def test_read_region_gone_before_execution_gives_error_response():
    """MR-VERB-004: the key is checked again when the READ executes; a region deregistered after
    the request was accepted is answered by an ERROR response and the READ completes
    REM_ACCESS_ERR, with nothing placed."""
    a, b, ca, cb = pair(streams=1)
    remote, rkey = _mem(b, 10_000, seed=10)
    src, skey = _mem(a, 10_000, seed=11)
    local, lkey = _mem(a, 10_000, seed=12)
    before = bytes(local)
    # hold the earlier write's first packet back so the READ waits for delivery
    held = []

    def drop(f, now):
        if f.bth.opcode == Op.MR_WRITE and f.mrdh.offset == 0 and not held:
            held.append(now)
            return True
        if f.bth.opcode == Op.MR_READ and not getattr(drop, "dereg", False):
            drop.dereg = True
            b.dereg_mr(rkey)
        return False
    ca.post_write(0, skey, 0, 8_000, 0, b.reg_mr(bytearray(10_000)), wr_id=1)
    ca.post_read(0, lkey, 0, 4_000, 0, rkey, wr_id=2)
    lb = _run(a, b, faults=LoopFaults(drop_if=drop))
    txc, _ = lb.completions
    assert [(c.wr_id, c.status) for c in txc] == [(1, Status.SUCCESS), (2, Status.REM_ACCESS_ERR)]
    assert bytes(local) == before
    assert not cb.rsp and cb.rsp_used == 0


def _u64(buf, off):
    return int.from_bytes(buf[off:off + 8], "little")


def test_atomics_lossless():
    """MR-VERB-010, MR-VERB-013: fetch-and-add and compare-and-swap on 64-bit little-endian memory
    return the original value in the local buffer and complete FETCH_ADD / COMP_SWAP, byte_len 8."""
    a, b, ca, cb = pair(streams=1)
    remote = bytearray(64)
    remote[8:16] = (2**64 - 3).to_bytes(8, "little")
    remote[16:24] = (1234).to_bytes(8, "little")
    rkey = b.reg_mr(remote)
    local = bytearray(64)
    lkey = a.reg_mr(local)
    ca.post_atomic(0, "fetch_add", lkey, 0, 8, rkey, wr_id=1, add=5)          # wraps mod 2^64
    ca.post_atomic(0, "cmp_swap", lkey, 8, 16, rkey, wr_id=2, compare=1234, swap=99)
    ca.post_atomic(0, "cmp_swap", lkey, 16, 16, rkey, wr_id=3, compare=1234, swap=7)  # fails
    lb = _run(a, b)
    txc, _ = lb.completions
    assert [(c.wr_id, c.status, c.opcode, c.byte_len) for c in txc] == [
        (1, Status.SUCCESS, WcOpcode.FETCH_ADD, 8), (2, Status.SUCCESS, WcOpcode.COMP_SWAP, 8),
        (3, Status.SUCCESS, WcOpcode.COMP_SWAP, 8)]
    assert _u64(remote, 8) == 2 and _u64(local, 0) == 2**64 - 3
    assert _u64(remote, 16) == 99 and _u64(local, 8) == 1234 and _u64(local, 16) == 99
    assert b.stats["atomics_executed"] == 3


@pytest.mark.parametrize("pull", [False, True])
def test_atomic_resent_request_executes_once(pull):
    """MR-VERB-012: the response of a fetch-and-add is lost in the fabric and the ACKs of the
    request too. Without MR-CC-027's pull the requester resends the request: the resend is a
    duplicate of a delivered message and is not executed again; the response is recovered by
    the responder's own retransmission and the requester gets the original value once. With the
    pull (MR-CC-027, the default) the requester, whose port went quiet, pulls the lost response
    first: the atomic still executes once and returns the original value."""
    a, b, ca, cb = pair(streams=1, pull_first_lost=pull)
    remote = bytearray(16)
    remote[0:8] = (1000).to_bytes(8, "little")
    rkey = b.reg_mr(remote)
    local = bytearray(8)
    lkey = a.reg_mr(local)
    dropped = {"resp": 0, "ack": 0}

    def drop(f, now):
        if f.bth.opcode == Op.MR_READ_RESP and not dropped["resp"]:
            dropped["resp"] += 1
            return True
        if f.bth.opcode == Op.MR_ACK and f.ip.src == B and now < 40e-6:
            dropped["ack"] += 1
            return True
        return False
    ca.post_atomic(0, "fetch_add", lkey, 0, 0, rkey, wr_id=1, add=1)
    lb = _run(a, b, faults=LoopFaults(drop_if=drop))
    txc, _ = lb.completions
    assert [(c.wr_id, c.status) for c in txc] == [(1, Status.SUCCESS)]
    assert dropped["resp"] == 1 and dropped["ack"] >= 1
    if pull:
        assert a.stats["first_window_pulls"] >= 1                      # the response was pulled
        assert b.stats["first_window_resends"] >= 1
    else:
        assert a.stats["retransmitted"] + a.stats["probes_sent"] >= 1  # the request was resent
        assert b.stats["duplicate_chunks"] + b.stats["duplicates"] >= 1  # and seen again
    assert b.stats["atomics_executed"] == 1
    assert _u64(remote, 0) == 1001 and _u64(local, 0) == 1000


@pytest.mark.parametrize("seed", [1, 2])
def test_atomics_under_loss_exactly_once(seed):
    """MR-VERB-012: 40 fetch-and-adds under 10 % loss, duplicates and reordering: the counter
    moves by exactly the sum, and the original values returned are exactly the prefix sums."""
    a, b, ca, cb = pair(streams=2)
    remote = bytearray(16)
    rkey = b.reg_mr(remote)
    local = bytearray(8 * 40)
    lkey = a.reg_mr(local)
    for i in range(40):
        ca.post_atomic(i % 2, "fetch_add", lkey, 8 * i, 8, rkey, wr_id=i, add=i + 1)
    lb = _run(a, b, until=0.05, seed=seed,
              faults=LoopFaults(loss=0.1, ctrl_loss=0.1, duplicate=0.05, reorder=0.05))
    txc, _ = lb.completions
    assert sorted(c.wr_id for c in txc) == list(range(40))
    assert all(c.status == Status.SUCCESS for c in txc)
    assert _u64(remote, 8) == sum(range(1, 41))
    assert b.stats["atomics_executed"] == 40
    origs = sorted((_u64(local, 8 * i), i + 1) for i in range(40))
    total = 0
    for orig, add in origs:         # each original value is the sum of the adds before it
        assert orig == total
        total += add


@pytest.mark.parametrize("case, status", [("misaligned", Status.REM_INV_REQ_ERR),
                                          ("no_right", Status.REM_ACCESS_ERR),
                                          ("bounds", Status.REM_ACCESS_ERR)])
def test_atomic_refused(case, status):
    """MR-VERB-011, MR-VERB-002: an atomic needs 8 aligned bytes inside a region registered with
    ACCESS_REMOTE_ATOMIC; otherwise it fails and memory is untouched."""
    a, b, ca, cb = pair(streams=1)
    remote = bytearray(range(32))
    before = bytes(remote)
    rkey = b.reg_mr(remote, ACCESS_REMOTE_WRITE) if case == "no_right" else b.reg_mr(remote)
    local = bytearray(8)
    lkey = a.reg_mr(local)
    va = {"misaligned": 4, "no_right": 0, "bounds": 32}[case]
    ca.post_atomic(0, "fetch_add", lkey, 0, va, rkey, wr_id=1, add=1)
    lb = _run(a, b)
    txc, _ = lb.completions
    assert [(c.wr_id, c.status) for c in txc] == [(1, status)]
    assert bytes(remote) == before and b.stats["atomics_executed"] == 0


def test_responder_resources_bound():
    """MR-VERB-005: a responder answers at most max_rd_atomic requests at once; a request beyond
    is NAKed RNR and resent after the RNR delay, and every READ still completes."""
    a, b, ca, cb = pair(streams=4, max_rd_atomic=2, max_tx_msgs=8)
    remote, rkey = _mem(b, 100_000, seed=20)
    local, lkey = _mem(a, 100_000, seed=21)
    for i in range(8):
        ca.post_read(i % 4, lkey, i * 12_000, 12_000, i * 12_000, rkey, wr_id=i)
    peak = []
    orig = b.receive

    def spy(frame, now):
        orig(frame, now)
        peak.append(cb.rsp_used)
    b.receive = spy
    lb = _run(a, b, until=0.05)
    txc, _ = lb.completions
    assert sorted(c.wr_id for c in txc) == list(range(8))
    assert all(c.status == Status.SUCCESS for c in txc)
    assert local[:96_000] == remote[:96_000]
    assert max(peak) <= 2 and b.stats["rsp_full"] > 0 and a.stats["nak_rnr"] > 0


def test_wire_read_and_atomic_frames():
    """MR-WIRE-076, MR-WIRE-052: the READ and atomic opcodes and their headers round-trip through
    the codec; a READ request carrying payload is malformed; the ERROR flag is MRDH bit 3."""
    from metaroce.models import codec
    from metaroce.models.codec import MRDH, RETH, DecodeError, make
    from metaroce.models.wire import HEADERS, MrdhFlag, Reason
    assert HEADERS[Op.MR_READ] == ("mrdh", "reth") and HEADERS[Op.MR_READ_RESP] == ("mrdh",)
    assert HEADERS[Op.MR_CMP_SWAP] == HEADERS[Op.MR_FETCH_ADD] == ("mrdh", "reth")
    assert MrdhFlag.ERROR == 0x8
    cases = [(Op.MR_READ, b"", dict(mrdh=MRDH(1, 5, 2, 3, 9, 0, 0), reth=RETH(0x40, 0x1234, 9000))),
             (Op.MR_READ_RESP, b"x" * 100, dict(mrdh=MRDH(1, MrdhFlag.ERROR, 1, 3, 9, 0, 100))),
             (Op.MR_CMP_SWAP, struct.pack("!QQ", 7, 8), dict(mrdh=MRDH(1, 5, 0, 0, 1, 0, 16),
                                                            reth=RETH(8, 5, 8))),
             (Op.MR_FETCH_ADD, struct.pack("!Q", 3), dict(mrdh=MRDH(1, 5, 0, 0, 1, 0, 8),
                                                         reth=RETH(16, 5, 8)))]
    for op, payload, hdrs in cases:
        f = make(op, payload, **hdrs)
        g = codec.decode(codec.encode(f))
        assert g.bth.opcode == op and g.payload == payload
        assert g.mrdh == hdrs["mrdh"] and g.reth == hdrs.get("reth")
    bad = make(Op.MR_READ, b"", mrdh=MRDH(1, 5, 0, 0, 1, 0, 0), reth=RETH(0, 5, 8))
    bad.payload = b"abcd"
    with pytest.raises(DecodeError) as e:
        codec.decode(codec.encode(bad))
    assert e.value.reason == Reason.LENGTH


def test_reads_both_ways_do_not_deadlock():
    """MR-VERB-006: both ends post more READs than they have message slots; requests never hold
    the last slot, so responses get one and every READ completes."""
    a, b, ca, cb = pair(streams=2, max_tx_msgs=4)
    ma, ka = _mem(a, 200_000, seed=30)
    mb, kb = _mem(b, 200_000, seed=31)
    sa, sb = bytes(ma), bytes(mb)
    peak = []
    for i in range(20):
        off = i * 5000
        ca.post_read(i % 2, ka, 100_000 + off, 5000, off, kb, wr_id=i)
        cb.post_read(i % 2, kb, 100_000 + off, 5000, off, ka, wr_id=100 + i)
    orig = a.receive

    def spy(frame, now):
        orig(frame, now)
        peak.append(max(ca.rd_slots, cb.rd_slots))
    a.receive = spy
    lb = _run(a, b, until=0.05)
    txa, txb = lb.completions
    assert sorted(c.wr_id for c in txa) == list(range(20))
    assert sorted(c.wr_id for c in txb) == list(range(100, 120))
    assert all(c.status == Status.SUCCESS for c in txa + txb)
    assert ma[100_000:200_000] == sb[:100_000] and mb[100_000:200_000] == sa[:100_000]
    assert max(peak) == 3
    a1, b1, ca1, _ = pair(max_tx_msgs=1)
    with pytest.raises(ValueError, match="max_tx_msgs"):
        ca1.post_read(0, _mem(a1, 8)[1], 0, 8, 0, _mem(b1, 8)[1], wr_id=1)


# ---------------------------------------------------------------------------------------------
# The RoCEv2 baseline (models/rocev2.py)

def roce_pair(streams=1, **kw):
    from metaroce.models.rocev2 import RoceEndpoint
    kw.setdefault("mtu", MTU)
    kw.setdefault("line_rate_bps", 100e9)
    kw.setdefault("base_rtt", 4e-6)
    a, b = RoceEndpoint(A, **kw), RoceEndpoint(B, **kw)
    return a, b, a.connect(10, B, 20, streams=streams), b.connect(20, A, 10, streams=streams)


@pytest.mark.parametrize("loss", [0.0, 0.02])
def test_roce_read_go_back_n(loss):
    """MR-GBN-020, MR-GBN-021, MR-GBN-022: RoCEv2 READs (READ REQUEST 0x0C, responses 0x0D-0x10 in
    PSN order) mixed with writes, with loss: a missing response makes the requester re-issue the
    READ from it; every byte lands once, completions in posting order."""
    a, b, ca, cb = roce_pair(timeout_exp=4)
    remote, rkey = _mem(b, 200_000, seed=40)
    local, lkey = _mem(a, 200_000, seed=41)
    want = []
    for i in range(10):
        off = i * 15_000
        if i % 3 == 2:
            ca.post_write(0, lkey, 150_000 + (i % 5) * 1000, 1000, 190_000, rkey, wr_id=i)
        else:
            n = [0, 1, MTU, 9_999, 14_000][i % 5]
            ca.post_read(0, lkey, off, n, off, rkey, wr_id=i)
            want.append((off, n))
    lb = _run(a, b, until=0.2, faults=LoopFaults(loss=loss))
    txc, _ = lb.completions
    assert [c.wr_id for c in txc] == list(range(10))
    assert all(c.status == Status.SUCCESS for c in txc)
    assert [c.opcode for c in txc if c.wr_id % 3 != 2] == [WcOpcode.RDMA_READ] * len(want)
    for off, n in want:
        assert local[off:off + n] == remote[off:off + n]
    assert b.stats["read_responses_sent"] >= sum(max(1, -(-n // MTU)) for _, n in want)
    if loss:
        assert lb.stats["lost"] > 0 and a.stats["read_reissued"] + a.stats["timeouts"] > 0


def test_roce_read_access_error():
    """MR-GBN-021, MR-GBN-009: a READ with a bad key is NAKed remote access error (0x62): it
    completes REM_ACCESS_ERR and the QP enters the error state."""
    a, b, ca, cb = roce_pair()
    remote, rkey = _mem(b, 1000, seed=42, access=ACCESS_REMOTE_WRITE)
    local, lkey = _mem(a, 1000, seed=43)
    ca.post_read(0, lkey, 0, 100, 0, rkey, wr_id=1)
    lb = _run(a, b)
    txc, _ = lb.completions
    assert [(c.wr_id, c.status) for c in txc] == [(1, Status.REM_ACCESS_ERR)]


@pytest.mark.parametrize("both", [False, True])
def test_roce_atomics_and_saved_result(both):
    """MR-GBN-023, MR-GBN-024, MR-WIRE-065: IBTA FETCH_ADD and COMPARE_SWAP with AtomicETH,
    answered by ATOMIC ACKNOWLEDGE. The first ATOMIC ACK is lost: the requester resends the
    request (same PSN, go-back-N), after its local ACK timeout when the FETCH_ADD is alone, at
    once when the next atomic's ACK shows the gap; the responder does not execute it again but
    sends its saved result, so memory moves once and the original value is right."""
    a, b, ca, cb = roce_pair(timeout_exp=4)
    remote = bytearray(32)
    remote[0:8] = (41).to_bytes(8, "little")
    remote[8:16] = (5).to_bytes(8, "little")
    rkey = b.reg_mr(remote)
    local = bytearray(16)
    lkey = a.reg_mr(local)
    lost = []

    def drop(f, now):
        if f.bth.opcode == Op.RC_ATOMIC_ACK and not lost:
            lost.append(now)
            return True
        return False
    ca.post_atomic(0, "fetch_add", lkey, 0, 0, rkey, wr_id=1, add=1)
    if both:
        ca.post_atomic(0, "cmp_swap", lkey, 8, 8, rkey, wr_id=2, compare=5, swap=77)
    lb = _run(a, b, until=0.05, faults=LoopFaults(drop_if=drop))
    txc, _ = lb.completions
    assert [(c.wr_id, c.status, c.opcode, c.byte_len) for c in txc] == [
        (1, Status.SUCCESS, WcOpcode.FETCH_ADD, 8), (2, Status.SUCCESS, WcOpcode.COMP_SWAP, 8)][:1 + both]
    assert lost and a.stats["retransmitted"] >= 1
    assert (a.stats["timeouts"] >= 1) != both
    assert b.stats["atomic_results_resent"] >= 1 and b.stats["atomics_executed"] == 1 + both
    assert _u64(remote, 0) == 42 and _u64(local, 0) == 41
    if both:
        assert _u64(remote, 8) == 77 and _u64(local, 8) == 5


def test_roce_duplicate_atomic_beyond_saved_results_is_nak():
    """MR-GBN-024: a duplicate atomic older than the responder's saved results is NAKed invalid
    request, never executed again."""
    from metaroce.models.codec import BTH, IP, UDP, AtomicETH, Eth, Frame
    a, b, ca, cb = roce_pair(max_rd_atomic=2)
    remote = bytearray(8)
    rkey = b.reg_mr(remote)

    def atomic(psn):
        return Frame(eth=Eth(), ip=IP(src=A, dst=B, ecn=2), udp=UDP(sport=0xC001),
                     bth=BTH(opcode=Op.RC_FETCH_ADD, dest_qp=20, psn=psn, ack_req=1),
                     atomiceth=AtomicETH(0, rkey, 1, 0))
    for psn in range(3):
        b.receive(atomic(psn), 0.0)
    acks = [b.next_packet(0.0) for _ in range(3)]
    assert [x.atomicack.orig for x in acks] == [0, 1, 2] and _u64(remote, 0) == 3
    b.receive(atomic(2), 1e-6)                  # saved: the result again, not executed
    again = b.next_packet(1e-6)
    assert again.bth.opcode == Op.RC_ATOMIC_ACK and again.atomicack.orig == 2
    b.receive(atomic(0), 2e-6)                  # beyond the 2 saved results: NAK invalid
    nak = b.next_packet(2e-6)
    assert nak.bth.opcode == Op.RC_ACK and nak.aeth.syndrome == 0x61
    assert _u64(remote, 0) == 3 and b.stats["atomics_executed"] == 3


def _agreed_pair(offer_b, **kw):
    """``pair``'s endpoints; ``a`` connects with ``b``'s offer when ``offer_b`` (MR-VERB-015)."""
    kw.setdefault("mtu", MTU)
    kw.setdefault("line_rate_bps", 100e9)
    kw.setdefault("base_rtt", 4e-6)
    a, b = Endpoint(A, **kw), Endpoint(B, **kw)
    ca = a.connect(10, B, 20, paths=4, streams=4, peer_offer=b.open_offer() if offer_b else None)
    cb = b.connect(20, A, 10, paths=4, streams=4, peer_offer=a.open_offer() if offer_b else None)
    return a, b, ca, cb


@pytest.mark.parametrize("agree", [True, False])
def test_initiator_depth_bound(agree):
    """MR-VERB-014..016: ``a`` posts 8 READs on 4 streams to ``b`` with 2 responder
    resources. Connected with ``b``'s offer, ``a``'s initiator depth is 2: after every frame it
    sends, at most 2 READs are started and not answered (the others wait, unsent), the peak is
    2, and every READ completes with success, none failed by RNR retries. Negative control
    (``agree`` False, the bound off: depth 8, MR-VERB-006's 7 slots): more than 2 are started at
    once and the responder NAKs RNR (MR-VERB-005)."""
    a, b, ca, cb = _agreed_pair(agree, max_rd_atomic=2, max_tx_msgs=8)
    assert (ca.tx_msgs, ca.init_rd_atomic, ca.rd_cap) == ((8, 2, 2) if agree else (8, 8, 7))
    remote, rkey = _mem(b, 100_000, seed=20)
    local, lkey = _mem(a, 100_000, seed=21)
    for i in range(8):
        ca.post_read(i % 4, lkey, i * 12_000, 12_000, i * 12_000, rkey, wr_id=i)
    counts = []
    send = a.next_packet

    def spy(now):
        f = send(now)
        counts.append((ca.rd_slots, len(ca.rd_out)))
        return f
    a.next_packet = spy
    lb = _run(a, b, until=0.05)
    txc, _ = lb.completions
    assert sorted(c.wr_id for c in txc) == list(range(8))
    assert all(c.status == Status.SUCCESS for c in txc) and a.stats["rnr_retry_exceeded"] == 0
    assert local[:96_000] == remote[:96_000]
    peak = max(max(c) for c in counts)
    if agree:
        assert peak == 2
    else:
        assert peak > 2 and b.stats["rsp_full"] > 0 and a.stats["nak_rnr"] > 0


def test_initiator_depth_atomics():
    """MR-VERB-014, MR-VERB-016: atomics count in the initiator depth with READs: an endpoint of depth 1
    (its own ``max_init_rd_atomic``, no offer) keeps one of its 6 fetch-adds on 3 streams in
    flight at a time; each executes once (the sum), each completes."""
    a, b, ca, cb = pair(streams=3, max_init_rd_atomic=1)
    assert ca.rd_cap == 1
    target = bytearray(8)
    tkey = b.reg_mr(target)
    res = bytearray(8 * 6)
    rkey = a.reg_mr(res)
    for i in range(6):
        ca.post_atomic(i % 3, "fetch_add", rkey, 8 * i, 0, tkey, wr_id=i, add=1 << i)
    peak = []
    send = a.next_packet

    def spy(now):
        f = send(now)
        peak.append(len(ca.rd_out))
        return f
    a.next_packet = spy
    lb = _run(a, b)
    txc, _ = lb.completions
    assert sorted(c.wr_id for c in txc) == list(range(6)) and all(c.status == Status.SUCCESS for c in txc)
    assert int.from_bytes(target, "little") == 63 and max(peak) == 1


def test_open_limits_agreement():
    """MR-VERB-015, MR-VERB-016: ``protocol.open_limits``: ``max_tx_msgs`` the smaller of the own and the
    peer's ``max_rx_msgs``, the initiator depth the smaller of the own and the peer's
    ``max_rd_atomic``; None on a side: no bound from it; no offer: the own values; a bound below
    1 or not an integer a ValueError. ``Endpoint.open_offer`` is its ``max_rd_atomic`` and
    ``max_rx_msgs``; ``connect(peer_offer=)`` applies the agreement to the connection only
    (the endpoint's own values stay), and MR-VERB-006's check takes the agreed ``max_tx_msgs``."""
    from metaroce.models import protocol as P
    O, L = P.OpenOffer, P.OpenLimits
    assert P.open_limits(8, 8, O(1, 3)) == L(3, 1)
    assert P.open_limits(2, 4, O(8, 8)) == L(2, 4)
    assert P.open_limits(8, 8, None) == L(8, 8)
    assert P.open_limits(8, None, O(None, None)) == L(8, None)
    assert P.open_limits(8, None, O(5, None)) == L(8, 5)
    assert P.open_limits(8, 3, O(None, 16)) == L(8, 3)
    for bad in ((0, 8, None), (8, 0, None), (8, 8, O(0, 8)), (8, 8, O(8, -1)), (8, 8, O(True, 8)),
                (None, 8, None), (8, 2.0, None)):
        with pytest.raises(ValueError):
            P.open_limits(*bad)
    a = Endpoint(A, max_rd_atomic=3, max_rx_msgs=5)
    assert a.open_offer() == O(3, 5)
    b = Endpoint(B, max_tx_msgs=8, max_init_rd_atomic=None)
    c = b.connect(1, A, 2, streams=2, peer_offer=a.open_offer())
    assert (c.tx_msgs, c.init_rd_atomic, c.rd_cap, len(c.free_slots)) == (5, 3, 3, 5)
    assert b.max_tx_msgs == 8 and b.max_init_rd_atomic is None
    assert b.connect(3, A, 4).rd_cap == 7
    one = b.connect(5, A, 6, peer_offer=O(8, 1))
    _, lkey = _mem(b, 64)
    with pytest.raises(ValueError, match="max_tx_msgs"):
        one.post_read(0, lkey, 0, 8, 0, 1, wr_id=1)
    with pytest.raises(ValueError, match="peer_offer"):
        b.connect(7, A, 8, peer_offer=(8, 8))
    for bad in (0, 1.5, True):
        with pytest.raises(ValueError, match="max_init_rd_atomic"):
            Endpoint(A, max_init_rd_atomic=bad)
