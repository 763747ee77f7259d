"""Every work request completes on both sides: the abort of a failed message
(docs/spec/transport.md MR-ERR-020..024, wire.md MR-WIRE-083; issue 8 item 6)."""
import random
from dataclasses import replace

import pytest

from metaroce.models import codec
from metaroce.models.codec import MRDH, make
from metaroce.models.endpoint import Endpoint, Status, WcOpcode
from metaroce.models.loopback import LoopFaults, Loopback
from metaroce.models.security import AuthenticatedHost, SecureChannel
from metaroce.models.wire import MrdhFlag, NakReason, Op

A, B = "10.0.0.1", "10.0.0.2"
MTU = 1024


def _pair(paths=4, streams=2, **kw):
    a = Endpoint(A, mtu=MTU, line_rate_bps=100e9, base_rtt=3e-6, rng=random.Random(1), **kw)
    b = Endpoint(B, mtu=MTU, line_rate_bps=100e9, base_rtt=3e-6, rng=random.Random(2), **kw)
    src = bytearray(random.Random(3).randbytes(1 << 20))
    dst = bytearray(1 << 20)
    ka, kb = a.reg_mr(src), b.reg_mr(dst)
    ca = a.connect(10, B, 20, paths=paths, streams=streams)
    cb = b.connect(20, A, 10, paths=paths, streams=streams)
    return a, b, ca, cb, ka, kb, src, dst


def _is_abort(f):
    return f.mrdh is not None and f.mrdh.flags & MrdhFlag.ERROR and f.bth.opcode != Op.MR_READ_RESP


def test_abort_packet_wire_format():
    """MR-WIRE-083, MR-ERR-020: the abort of a failed send is a data packet with the send's own
    opcode and headers, MRDH flags ERROR|FIRST|LAST, offset 0, msg_len the message's, no
    payload and AckReq; it survives the codec unchanged."""
    a, b, ca, cb, ka, kb, src, dst = _pair(rnr_retry=0, rnr_delay=5e-6)
    ca.post_send(1, ka, 0, 3000, wr_id=1, imm=0xABCD)
    seen = []

    def watch(f, now):
        if _is_abort(f):
            seen.append(f)
        return False
    lb = Loopback(a, b, delay=1.5e-6, faults_ab=LoopFaults(drop_if=watch))
    lb.run(until=0.005)
    assert [(c.wr_id, c.status) for c in lb.completions[0]] == [(1, Status.RNR_RETRY_EXC_ERR)]
    assert len(seen) == 1
    f = codec.decode(codec.encode(seen[0]))
    assert f.bth.opcode == Op.MR_SEND_IMM and f.bth.ack_req == 1
    assert f.mrdh.flags == MrdhFlag.ERROR | MrdhFlag.FIRST | MrdhFlag.LAST
    assert (f.mrdh.stream, f.mrdh.msg, f.mrdh.offset, f.mrdh.msg_len) == (1, 0, 0, 3000)
    assert f.mrsh.recv_seq == 0 and f.imm == 0xABCD and f.payload == b""


def test_failed_write_in_mid_stream_later_work_completes_on_both_sides():
    """MR-ERR-020, MR-ERR-021, MR-ERR-022, MR-EXO-004: a write refused for its key in the middle
    of a stream of writes with immediate and sends, under 5 % data loss: it completes
    REM_ACCESS_ERR, its abort ends it at the receiver (its immediate completes REM_ABORT_ERR),
    and every later work request completes with success on both sides, in order, bytes in
    place; nothing is left open."""
    a, b, ca, cb, ka, kb, src, dst = _pair()
    for i in range(3):
        cb.post_recv(0, kb, 0x40000 + 0x4000 * i, 0x4000, wr_id=100 + i)
    ca.post_write(0, ka, 0, 5000, 0, kb, wr_id=1, imm=1)
    ca.post_write(0, ka, 0, 9000, 0, kb ^ 0x5A5A, wr_id=2, imm=2)     # unknown R_Key
    ca.post_send(0, ka, 0x1000, 9000, wr_id=3)
    ca.post_write(0, ka, 0x8000, 7000, 0x8000, kb, wr_id=4, imm=4)
    ca.post_send(0, ka, 0x3000, 5000, wr_id=5)
    ca.post_write(0, ka, 0x10000, 3000, 0x10000, kb, wr_id=6)
    lb = Loopback(a, b, delay=1.5e-6, faults=LoopFaults(loss=0.05), seed=3)
    lb.run(until=0.01)
    assert [(c.wr_id, c.status) for c in lb.completions[0]] == [
        (1, Status.SUCCESS), (2, Status.REM_ACCESS_ERR), (3, Status.SUCCESS), (4, Status.SUCCESS),
        (5, Status.SUCCESS), (6, Status.SUCCESS)]
    assert [(c.wr_id, c.status, c.opcode, c.imm) for c in lb.completions[1]] == [
        (None, Status.SUCCESS, WcOpcode.RECV_RDMA_WITH_IMM, 1),
        (None, Status.REM_ABORT_ERR, WcOpcode.RECV_RDMA_WITH_IMM, None),
        (100, Status.SUCCESS, WcOpcode.RECV, None),
        (None, Status.SUCCESS, WcOpcode.RECV_RDMA_WITH_IMM, 4),
        (101, Status.SUCCESS, WcOpcode.RECV, None)]
    assert dst[:5000] == src[:5000] and dst[0x8000:0x8000 + 7000] == src[0x8000:0x8000 + 7000]
    assert dst[0x40000:0x40000 + 9000] == src[0x1000:0x1000 + 9000]
    assert dst[0x44000:0x44000 + 5000] == src[0x3000:0x3000 + 5000]
    assert dst[0x10000:0x10000 + 3000] == src[0x10000:0x10000 + 3000]
    assert a.stats["aborts_acked"] == 1 and b.stats["aborts_received"] == 1
    assert not cb.rx_open and not any(ca.ssq) and len(ca.free_slots) == a.max_tx_msgs


def test_retry_exceeded_mid_stream_then_later_work_completes():
    """MR-ERR-020, MR-ERR-022, MR-ERR-023, MR-ENG-040: every route dies in the middle of a stream
    of 40 sends: the started ones complete RETRY_EXC_ERR and are aborted, the ones never sent give
    their sequence numbers back. Once the routes recover, every receive posted for an aborted send
    completes REM_ABORT_ERR, and later sends complete with success on both sides, landing in the
    receives that follow."""
    a, b, ca, cb, ka, kb, src, dst = _pair(wr_timeout=300e-6, rto_max=100e-6)
    for i in range(60):
        cb.post_recv(0, kb, 8192 * i, 8192, wr_id=100 + i)
    dead = dict(dead_routes=frozenset(range(4)), dead_from=10e-6, dead_until=1e-3)
    lb = Loopback(a, b, delay=1.5e-6, routes=4, faults_ab=LoopFaults(**dead),
                  faults_ba=LoopFaults(**dead))
    for i in range(40):
        ca.post_send(0, ka, 0, 8000, wr_id=i)
    lb.run(until=2e-3)
    tx = {c.wr_id: c.status for c in lb.completions[0]}
    assert len(tx) == 40 and set(tx.values()) <= {Status.SUCCESS, Status.RETRY_EXC_ERR}
    failed = sorted(w for w, s in tx.items() if s == Status.RETRY_EXC_ERR)
    assert failed and failed == list(range(failed[0], 40))     # completions in posting order
    started = cb.rx[0].next_deliver        # every started send was delivered, placed or aborted
    rx = [(c.wr_id, c.status) for c in lb.completions[1]]
    assert [w for w, _ in rx] == list(range(100, 100 + started))
    aborted = [w - 100 for w, s in rx if s == Status.REM_ABORT_ERR]
    assert aborted and set(aborted) <= set(failed) and b.stats["aborts_received"] == len(aborted)
    # MR-ERR-023: the sends never sent are given back: the next send is message `started`
    assert ca.msg_next[0] == ca.send_seq[0] == started < 40
    for i in range(40, 43):
        ca.post_send(0, ka, 1000 * i, 8000, wr_id=i)
    lb.run(until=5e-3)
    assert [(c.wr_id, c.status) for c in lb.completions[0][40:]] == [(i, Status.SUCCESS) for i in range(40, 43)]
    assert [(c.wr_id, c.status) for c in lb.completions[1][started:]] == \
        [(100 + started + k, Status.SUCCESS) for k in range(3)]
    for k in range(3):
        off = 8192 * (started + k)
        assert dst[off:off + 8000] == src[1000 * (40 + k):1000 * (40 + k) + 8000]
    assert len(ca.free_slots) == a.max_tx_msgs and not cb.rx_open


def test_lost_aborts_and_their_acks_are_repaired():
    """MR-ERR-020: the first three transmissions of an abort are lost and so are the first ACKs
    that would acknowledge it: the abort is resent (new PSN) until acknowledged, and the stream
    goes on; the message's slot is held until then."""
    a, b, ca, cb, ka, kb, src, dst = _pair()
    lost = {"abort": 0}

    def drop_abort(f, now):
        if _is_abort(f) and lost["abort"] < 3:
            lost["abort"] += 1
            return True
        return False
    lb = Loopback(a, b, delay=1.5e-6, faults_ab=LoopFaults(drop_if=drop_abort),
                  faults_ba=LoopFaults(ctrl_loss=0.3), seed=5)
    ca.post_write(0, ka, 0, 20000, 0, kb ^ 1, wr_id=1)       # refused: unknown key
    ca.post_write(0, ka, 0, 20000, 0, kb, wr_id=2, imm=7)
    lb.run(until=0.01)
    assert [(c.wr_id, c.status) for c in lb.completions[0]] == [(1, Status.REM_ACCESS_ERR), (2, Status.SUCCESS)]
    assert [(c.status, c.imm) for c in lb.completions[1]] == [(Status.SUCCESS, 7)]
    assert lost["abort"] == 3 and a.stats["aborts_sent"] >= 4 and a.stats["aborts_acked"] == 1
    assert dst[:20000] == src[:20000]
    assert len(ca.free_slots) == a.max_tx_msgs


def test_aborted_atomic_is_never_executed():
    """MR-ERR-021, MR-VERB-005: an atomic placed at the responder but waiting behind an
    incomplete write of its stream is aborted when its requester gives up; its abort arrives
    before the write's (the write's first abort is lost): it is never executed and its responder
    resource is free again. (Had the write's abort come first, the atomic would have executed
    before its own abort: RETRY_EXC_ERR leaves the outcome unknown, as in RC.)"""
    a, b, ca, cb, ka, kb, src, dst = _pair(wr_timeout=200e-6)
    target = bytearray(8)
    kt = b.reg_mr(target)
    lost = []

    def drop_chunk(f, now):        # the write's second chunk never arrives, nor its first abort
        if f.mrdh is None or f.bth.opcode != Op.MR_WRITE:
            return False
        if _is_abort(f) and not lost:
            lost.append(f)
            return True
        return f.mrdh.offset == MTU and not _is_abort(f)
    lb = Loopback(a, b, delay=1.5e-6, faults_ab=LoopFaults(drop_if=drop_chunk))
    ca.post_write(0, ka, 0, 4 * MTU, 0, kb, wr_id=1)
    ca.post_atomic(0, "fetch_add", ka, 0x9000, 0, kt, wr_id=2, add=5)
    lb.run(until=0.005)
    assert [(c.wr_id, c.status) for c in lb.completions[0]] == [(1, Status.RETRY_EXC_ERR),
                                                                (2, Status.RETRY_EXC_ERR)]
    assert target == bytes(8) and b.stats["atomics_executed"] == 0
    assert lost and cb.rsp_used == 0 and not cb.rx_open and b.stats["aborts_received"] == 2
    # the stream goes on: a new atomic executes once
    ca.post_atomic(0, "fetch_add", ka, 0x9000, 0, kt, wr_id=3, add=5)
    lb.run(until=0.01)
    assert lb.completions[0][-1].wr_id == 3 and lb.completions[0][-1].status == Status.SUCCESS
    assert int.from_bytes(target, "little") == 5


def _forged_abort(psn, path=0, stream=0, msg=0, msg_len=64 << 10):
    f = make(Op.MR_WRITE, mrdh=MRDH(path=path, flags=MrdhFlag.ERROR | MrdhFlag.FIRST | MrdhFlag.LAST,
                                    stream=stream, msg=msg, offset=0, msg_len=msg_len),
             reth=codec.RETH(0, 0, msg_len))
    f.bth = replace(f.bth, dest_qp=20, psn=psn)
    f.ip = codec.IP(src=A, dst=B)
    return f


@pytest.mark.parametrize("auth", [False, True])
def test_forged_abort_never_yields_false_success(auth):
    """MR-ERR-024, MR-ERR-022, MR-SEC-150: an abort forged in the middle of a 64 KiB write (right
    connection id, a PSN just ahead of the path's window). Without authentication it ends the
    message at the receiver, and every later packet of it is NAKed ABORTED, so the sender
    completes REM_ABORT_ERR, never SUCCESS for bytes not placed; a later write still completes.
    With authentication the forged frame is dropped before the endpoint and the write succeeds."""
    a, b, ca, cb, ka, kb, src, dst = _pair(paths=2)
    n = 64 << 10
    if auth:
        m = bytes(32)
        a = AuthenticatedHost(a, {10: (20, SecureChannel(m, 0, 2))})
        b = AuthenticatedHost(b, {20: (10, SecureChannel(m, 1, 2))})
    sent = {"data": 0, "forged": False}
    lb = None

    def inject(f, now):
        if not sent["forged"]:
            sent["data"] += 1
            if sent["data"] == 12:
                sent["forged"] = True
                lb._at(now + 1e-7, 2, 1, _forged_abort(cb.paths[0].rx_cum))
        return False
    lb = Loopback(a, b, delay=1.5e-6, faults_ab=LoopFaults(drop_if=inject))
    ca.post_write(0, ka, 0, n, 0, kb, wr_id=1)
    lb.run(until=0.005)
    (c1,) = lb.completions[0]
    assert sent["forged"]
    if auth:
        assert c1.status == Status.SUCCESS and dst[:n] == src[:n]
        assert b.drops["unauthenticated"] == 1 and b.ep.stats["aborts_received"] == 0
        return
    assert c1.status == Status.REM_ABORT_ERR and dst[:n] != src[:n]
    assert b.stats["aborts_received"] == 1
    assert a.stats["nak_aborted"] >= 1 and b.stats["drop_aborted"] >= 1
    ca.post_write(0, ka, 0, 8192, 0, kb, wr_id=2)
    lb.run(until=0.01)
    assert [(c.wr_id, c.status) for c in lb.completions[0][1:]] == [(2, Status.SUCCESS)]
    assert dst[:8192] == src[:8192]


def test_aborted_message_memory_is_bounded():
    """MR-ERR-022: a stream remembers only its last max_rx_msgs delivered messages as aborted or
    not (the record's bits): after many aborts its state fits the same fields."""
    a, b, ca, cb, ka, kb, src, dst = _pair(streams=1, rnr_retry=0, rnr_delay=3e-6)
    lb = Loopback(a, b, delay=1.5e-6)
    for i in range(30):
        ca.post_send(0, ka, 0, 100, wr_id=i)          # no receive posted: every send fails RNR
    lb.run(until=0.01)
    assert [c.status for c in lb.completions[0]] == [Status.RNR_RETRY_EXC_ERR] * 30
    st = cb.rx[0]
    assert st.next_deliver == 30 and st.flush_to == 30
    assert st.aborted == (1 << b.max_rx_msgs) - 1
    cb.post_recv(0, kb, 0, 4096, wr_id=99)            # belongs to the first aborted send
    assert [(c.wr_id, c.status) for c in b.poll_cq()] == [(99, Status.REM_ABORT_ERR)]
    assert NakReason.ABORTED == 9


def test_abort_over_udp_later_work_completes_on_both_sides():
    """MR-ERR-020, MR-ERR-022 over loopback UDP (the `metaroce transfer` transport, MR-UDP-001):
    a write refused for its key between writes with immediate completes REM_ACCESS_ERR on the
    sender and REM_ABORT_ERR on the receiver, and every later write completes with success on
    both sides with its bytes in place. Bounded by a step count, not by wall-clock time."""
    from metaroce.commands.transfer import endpoint_config
    from metaroce.sim.udp import LOOPBACK, UdpHost, make_endpoint
    # the transfer's loopback settings; the progress bound far above any stall of a busy machine
    cfg = dict(endpoint_config(MTU), wr_timeout=60.0)
    a = make_endpoint(rng=random.Random(1), **cfg)
    b = make_endpoint(rng=random.Random(2), **cfg)
    src = bytearray(random.Random(4).randbytes(1 << 16))
    dst = bytearray(1 << 16)
    ka, kb = a.reg_mr(src), b.reg_mr(dst)
    ca = a.connect(10, LOOPBACK, 20, paths=2)
    b.connect(20, LOOPBACK, 10, paths=2)
    ha, hb = UdpHost(a, max_sockets=2), UdpHost(b, max_sockets=2)
    ha.peer_port, hb.peer_port = hb.port, ha.port
    try:
        for i in range(5):
            rkey = kb ^ 0x77 if i == 1 else kb
            ha.post_write(ca, 0, ka, 8192 * i, 8000, 8192 * i, rkey, wr_id=i, imm=i)
        for _ in range(20_000):
            ha.step(max_wait=0.002)
            hb.step(max_wait=0.0)
            if len(ha.completions) == 5 and len(hb.completions) == 5:
                break
        assert [(c.wr_id, c.status) for c in ha.completions] == [
            (0, Status.SUCCESS), (1, Status.REM_ACCESS_ERR), (2, Status.SUCCESS),
            (3, Status.SUCCESS), (4, Status.SUCCESS)]
        assert [(c.status, c.imm) for c in hb.completions] == [
            (Status.SUCCESS, 0), (Status.REM_ABORT_ERR, None), (Status.SUCCESS, 2),
            (Status.SUCCESS, 3), (Status.SUCCESS, 4)]
        for i in (0, 2, 3, 4):
            assert dst[8192 * i:8192 * i + 8000] == src[8192 * i:8192 * i + 8000]
        assert dst[8192:8192 + 8000] == bytes(8000)
        assert a.stats["aborts_acked"] == 1
    finally:
        ha.close()
        hb.close()


def test_refused_read_needs_no_abort():
    """MR-ERR-020, MR-VERB-004: a READ refused by its responder (an ERROR response) was delivered
    there, so it completes REM_ACCESS_ERR without an abort packet and frees its slot at once;
    the stream's next work completes."""
    a, b, ca, cb, ka, kb, src, dst = _pair()
    lb = Loopback(a, b, delay=1.5e-6)
    ca.post_read(0, ka, 0, 4096, 0, kb ^ 9, wr_id=1)
    ca.post_write(0, ka, 0, 4096, 0, kb, wr_id=2, imm=3)
    lb.run(until=0.005)
    assert [(c.wr_id, c.status) for c in lb.completions[0]] == [(1, Status.REM_ACCESS_ERR), (2, Status.SUCCESS)]
    assert [(c.status, c.imm) for c in lb.completions[1]] == [(Status.SUCCESS, 3)]
    assert a.stats["aborts_sent"] == 0 and len(ca.free_slots) == a.max_tx_msgs


def test_refused_abort_is_given_up():
    """MR-ERR-020, MR-ENG-015: a receiver configured with fewer message slots than its peer sends
    (max_rx_msgs 2 against max_tx_msgs 8, which MR-ENG-015 forbids) refuses a message too far
    ahead of its delivery point, and then its abort, with INVALID_REQUEST: the sender gives the
    abort up (aborts_refused) and frees the slot instead of resending it forever."""
    a = Endpoint(A, mtu=MTU, line_rate_bps=100e9, base_rtt=3e-6, wr_timeout=300e-6)
    b = Endpoint(B, mtu=MTU, line_rate_bps=100e9, base_rtt=3e-6, max_rx_msgs=2)
    src, dst = bytearray(1 << 16), bytearray(1 << 16)
    ka, kb = a.reg_mr(src), b.reg_mr(dst)
    ca = a.connect(10, B, 20, paths=2)
    b.connect(20, A, 10, paths=2)

    def drop_chunk(f, now):        # message 0 never completes at the receiver
        return f.mrdh is not None and f.mrdh.msg == 0 and f.mrdh.offset == MTU and not _is_abort(f)
    lb = Loopback(a, b, delay=1.5e-6, faults_ab=LoopFaults(drop_if=drop_chunk))
    for i in range(4):
        ca.post_write(0, ka, 0, 2 * MTU, 0, kb, wr_id=i)
    lb.run(until=0.01)
    st = [(c.wr_id, c.status) for c in lb.completions[0]]
    assert st[0] == (0, Status.RETRY_EXC_ERR) and (3, Status.REM_INV_REQ_ERR) in st and len(st) == 4
    assert a.stats["aborts_refused"] >= 1 and len(ca.free_slots) == a.max_tx_msgs


def test_abort_through_the_fabric():
    """MR-ERR-020, MR-ERR-022 on the simulated fabric (leaf-spine, 2 % loss on every frame, aborts
    and ACKs included): a write refused for its key and a send that finds no receive (RNR) in
    the middle of a stream; every work request completes on both hosts, later ones with success
    and their bytes in place."""
    from metaroce.sim.faults import Faults
    from metaroce.sim.harness import make_endpoint
    from metaroce.sim.topology import Fabric
    fab = Fabric(2, leaves=2, spines=2, rate_bps=100e9, rtt=4e-6)
    fab.set_faults(Faults(loss=0.02, direction="both", seed=4))
    ha, hb = fab.hosts
    ha.ep = a = make_endpoint("metaroce", ha.addr, line_rate_bps=100e9, base_rtt=4e-6, mtu=MTU,
                              rnr_retry=1, rnr_delay=10e-6)
    hb.ep = b = make_endpoint("metaroce", hb.addr, line_rate_bps=100e9, base_rtt=4e-6, mtu=MTU)
    src = bytearray(random.Random(6).randbytes(1 << 16))
    dst = bytearray(1 << 16)
    ka, kb = a.reg_mr(src), b.reg_mr(dst)
    ca = a.connect(7, hb.addr, 9, paths=4)
    cb = b.connect(9, ha.addr, 7, paths=4)
    ca.post_write(0, ka, 0, 4000, 0, kb, wr_id=1, imm=1)
    ca.post_write(0, ka, 0, 4000, 0, kb + 1, wr_id=2, imm=2)      # unknown key
    ca.post_send(0, ka, 0x2000, 3000, wr_id=3)                     # no receive yet: RNR
    ca.post_write(0, ka, 0x4000, 9000, 0x4000, kb, wr_id=4, imm=4)
    ha.kick()
    fab.sim.run(until=0.002)
    cb.post_recv(0, kb, 0x8000, 4096, wr_id=100)       # belongs to the aborted send
    cb.post_recv(0, kb, 0x9000, 4096, wr_id=101)
    ca.post_send(0, ka, 0x3000, 3000, wr_id=5)
    ha.kick()
    fab.sim.run(until=0.004)
    assert [(c.wr_id, c.status) for _, c in ha.completions] == [
        (1, Status.SUCCESS), (2, Status.REM_ACCESS_ERR), (3, Status.RNR_RETRY_EXC_ERR),
        (4, Status.SUCCESS), (5, Status.SUCCESS)]
    assert [(c.wr_id, c.status, c.imm) for _, c in hb.completions] == [
        (None, Status.SUCCESS, 1), (None, Status.REM_ABORT_ERR, None), (None, Status.SUCCESS, 4),
        (100, Status.REM_ABORT_ERR, None), (101, Status.SUCCESS, None)]
    assert dst[0x4000:0x4000 + 9000] == src[0x4000:0x4000 + 9000]
    assert dst[0x9000:0x9000 + 3000] == src[0x3000:0x3000 + 3000]
    assert a.stats["aborts_acked"] == 2
