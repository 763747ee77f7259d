"""Bounded, fixed-width state and work requests that always complete (docs/spec/engine.md)."""
import pytest

from metaroce.benches.simspeed import BytecodeCounter
from metaroce.models import protocol as P
from metaroce.models import records as R
from metaroce.models.endpoint import Endpoint, Status
from metaroce.models.loopback import LoopFaults, Loopback

A, B = "10.0.0.1", "10.0.0.2"
NS = 1e9


def _pair(paths=4, streams=2, mem=1 << 20, **kw):
    a = Endpoint(A, mtu=1024, line_rate_bps=100e9, base_rtt=3e-6, **kw)
    b = Endpoint(B, mtu=1024, line_rate_bps=100e9, base_rtt=3e-6, **kw)
    src, dst = bytearray(mem), bytearray(mem)
    for i in range(0, mem, 7):
        src[i] = (i * 31) & 0xFF
    ka, kb = a.reg_mr(src), b.reg_mr(dst)
    ca = a.connect(10, B, 20, paths=paths, streams=streams)
    cb = b.connect(20, A, 10, paths=paths, streams=streams)
    return a, b, ca, cb, ka, kb, src, dst


def _shape(c):
    """Every per-connection container's slot count (MR-ENG-029)."""
    return {
        "path_rings": [len(p.ring) for p in c.paths],
        "tx_slots": len(c.free_slots) + sum(c.s_slots),
        "streams": (len(c.ssq), len(c.stx), len(c.rx), len(c.msg_next), len(c.send_seq)),
    }


def _occupancy(c):
    """What the bounded containers hold now: each must stay under its limit."""
    ep = c.ep
    return {
        "rx_open": len(c.rx_open) <= ep.max_rx_msgs,
        "retx": len(c.retx) <= 2 * sum(P.SEND_WINDOW for _ in c.paths),
        "started": sum(c.s_slots) <= ep.max_tx_msgs,
        "pool": ep._rtx_used <= ep.max_outstanding,
        "sq": all(len(q) <= ep.sq_depth for q in c.ssq),
        "recvs": all(len(s.recvs) <= ep.sq_depth for s in c.rx),
        "rsp": len(c.rsp) <= c.rsp_used <= ep.max_rd_atomic,            # MR-VERB-005
        "rd_out": len(c.rd_out) <= ep.max_tx_msgs,
    }


def _pack_state(c, now):
    """MR-ENG-029: the connection's state fits the engine's records (times in ns)."""
    t = lambda x: max(0, x) & ((1 << R.TIME_BITS) - 1)   # the endpoint's times are ns (MR-ENG-050)
    d = lambda x: x or 0            # the RTT estimator is already integer ns (MR-ENG-052)
    for p in c.paths:
        R.fits(R.PATH_TX, entropy=p.entropy, gen=p.gen & 0xFF, state=p.state, next_psn=p.next_psn,
               floor=p.floor, live=p.live, inflight=p.inflight, cwnd=int(p.cwnd), srtt=d(p.srtt),
               rttvar=d(p.rttvar), min_rtt=d(p.min_rtt), backoff_log2=p.backoff.bit_length() - 1,
               consec_to=min(p.consec_to, 15), last_ack=t(p.last_ack), since_req=p.since_req,
               ce_acc=p.ce_acc, ack_acc=p.ack_acc, next_dec=t(p.next_dec))
        assert all(isinstance(v, int) for v in (p.cwnd, p.rttvar, p.srtt or 0, p.min_rtt or 0))
        assert all(isinstance(v, int) for v in (p.last_ack, p.last_ece, p.next_dec, p.xwit, p.xslack,
                                                p.deadline or 0, p.probe_interval))
        assert all(isinstance(r.t, int) for r in p.records())
        R.fits(R.PATH_RX, cum=p.rx_cum, sack=p.rx_sack, high=p.rx_high, ce=min(p.rx_ce, 0xFFFF),
               pending=p.rx_pending, prev_ce=int(p.rx_prev_ce))
        for rec in p.records():
            R.fits(R.RTX, tx_slot=rec.msg.slot or 0, chunk=max(rec.idx, 0), t_sent=t(rec.t), nbytes=rec.nbytes,
                   lost=int(rec.lost), probe=int(rec.probe), req=int(rec.req), free=int(rec.free),
                   abort=int(rec.idx < 0))
    for m in c.rx_open.values():
        R.fits(R.RX_MSG, stream=m.stream, msg=m.msg, msg_len=m.msg_len, placed=m.placed,
               chunk_base=m.chunk_base, chunk_bits=m.chunk_bits, done=int(m.done), aborted=int(m.aborted))
    for s in c.rx:
        R.fits(R.STREAM, rx_next_deliver=s.next_deliver, recv_next=s.recv_next,
               rx_aborted=s.aborted, flush_to=s.flush_to)
    for q in c.ssq:
        for m in q:
            R.fits(R.TX_MSG, stream=m.stream, msg=m.msg, length=m.length, nchunks=m.nchunks,
                   next_chunk=m.next_chunk, ack_base=m.ack_base, ack_bits=m.ack_bits,
                   done=int(m.done), status=int(m.status), abort=m.abort)
    R.fits(R.CONN_KEY, valid=int(c.receipt_key is not None),
           receipt_key=int.from_bytes(c.receipt_key or bytes(16), "big"))
    R.fits(R.CONN_TX, inflight=c.inflight, window=int(c.window), ramp=int(c.ramp),
           rate_mbps=int(c.rate_bps / 1e6) if c.rate_bps < c.ep.line_rate_bps else 0,
           retx_count=len(c.retx), cwnd_sum=c.cwnd_sum, cut_debt=c.cut_debt, cut_end=t(c.cut_end),
           cut_left=max(0, c.cut_left),             # MR-CC-011, MR-CC-013
           answered=int(c.answered), blind_t0=t(max(0, c.blind_t0)), blind_bytes=c.blind_bytes)  # MR-CC-016
    assert all(isinstance(v, int) for v in (c.cwnd_sum, c.cut_debt, c.cut_left))
    R.fits(R.CONN_RX, rx_iv_bytes=c.rx_iv_bytes, rx_iv_prev=c.rx_iv_prev,
           rx_iv_epoch=max(0, c.rx_iv_epoch) & 0xFF,      # MR-CC-012
           rx_hint_age=c.rx_hint_age)                      # MR-CC-017


def _traffic(kind, seed):
    a, b, ca, cb, ka, kb, src, dst = _pair()
    if kind == "small":
        ca.post_write(0, ka, 0, 100, 0, kb, wr_id=1)
        faults = None
    elif kind == "large":
        for i in range(3):
            ca.post_write(i % 2, ka, 0, 1 << 20, 0, kb, wr_id=i)
        faults = LoopFaults(loss=0.05, reorder=0.02, duplicate=0.02)
    elif kind == "verbs":   # READs both ways, atomics, under loss, duplication, ACK loss
        atom = bytearray(64)
        kt = b.reg_mr(atom)
        for i in range(60):
            off = (i * 8192) % (1 << 19)
            if i % 3 == 0:
                ca.post_read(i % 2, ka, off, 8192, off, kb, wr_id=i)
            elif i % 3 == 1:
                cb.post_read(i % 2, kb, off, 5000, off, ka, wr_id=i)
            else:
                ca.post_atomic(i % 2, "fetch_add", ka, off, 8 * (i % 8), kt, wr_id=i, add=i)
        faults = LoopFaults(loss=0.03, duplicate=0.05, ctrl_loss=0.05, reorder=0.05)
    elif kind == "aborts":  # failures in mid-stream: bad keys, sends without receives (RNR)
        for i in range(120):
            s = i % 2
            if i % 5 == 0:
                ca.post_write(s, ka, 0, 3000, 0, kb ^ 0x10, wr_id=i, imm=i)
            elif i % 5 == 1:
                ca.post_send(s, ka, 0, 3000, wr_id=i)       # no receive is ever posted
            else:
                ca.post_write(s, ka, 4096 * i, 4096, 4096 * i, kb, wr_id=i, imm=i)
        faults = LoopFaults(loss=0.03, duplicate=0.05, ctrl_loss=0.05, reorder=0.05)
    else:   # many messages, hostile duplicates and corruption, lost ACKs
        for i in range(200):
            ca.post_write(i % 2, ka, (i * 4096) % (1 << 19), 4096, (i * 4096) % (1 << 19), kb, wr_id=i)
        faults = LoopFaults(loss=0.03, duplicate=0.05, corrupt=0.02, ctrl_loss=0.05, reorder=0.05)
    lb = Loopback(a, b, faults=faults, seed=seed, delay=1.5e-6)
    shapes = []
    orig = b.receive

    def watch(frame, now):
        orig(frame, now)
        assert all(_occupancy(c).values() for c in (ca, cb)), _occupancy(cb)
    b.receive = watch
    lb.run(until=0.5)
    if kind == "aborts":
        # MR-ERR-020..022: every request completes on both sides, in stream order
        st = {c.wr_id: c.status for c in lb.completions[0]}
        assert len(st) == 120 and all(
            st[i] == (Status.REM_ACCESS_ERR if i % 5 == 0 else Status.RNR_RETRY_EXC_ERR if i % 5 == 1
                      else Status.SUCCESS) for i in range(120)), \
            {i: s.name for i, s in st.items() if s != (Status.REM_ACCESS_ERR if i % 5 == 0 else
                                                         Status.RNR_RETRY_EXC_ERR if i % 5 == 1 else Status.SUCCESS)}
        rx = [(c.imm, c.status) for c in lb.completions[1]]
        assert sorted(i for i, s in rx if s == Status.SUCCESS) == [i for i in range(120) if i % 5 > 1]
        assert [i for i, s in rx if s == Status.REM_ABORT_ERR] == [None] * 24     # bad-key writes
        assert [s.flush_to for s in cb.rx] == [12, 12]      # the 12 sends of each stream (RNR)
        assert not cb.rx_open and len(ca.free_slots) == a.max_tx_msgs
    if kind == "verbs":
        assert len(lb.completions[0]) + len(lb.completions[1]) == 60
        assert all(c.status == Status.SUCCESS for c in lb.completions[0] + lb.completions[1]), \
            [(c.wr_id, c.status.name, c.opcode.name) for c in lb.completions[0] + lb.completions[1] if c.status]
    for c in (ca, cb):
        shapes.append(_shape(c))
        _pack_state(c, lb.now)
    return shapes, lb, a


@pytest.mark.parametrize("seed", [1, 2])
def test_state_bounded_under_any_traffic(seed):
    """MR-ENG-004, MR-ENG-029, MR-ENG-012, MR-ENG-013, MR-ENG-015: one small write, three 1 MiB
    writes under loss, and 200 writes under loss, duplication, corruption and ACK loss leave every
    per-connection container with the same slot counts; every occupancy stays under its limit
    at every arrival, and the state packs into the engine's records."""
    results = [_traffic(k, seed) for k in ("small", "large", "hostile")]
    assert results[0][0] == results[1][0] == results[2][0]
    for _, lb, a in results:
        assert a.stats["completions"] == len(lb.completions[0]) >= 1
        assert all(c.status == Status.SUCCESS for c in lb.completions[0])


def test_state_bounded_with_reads_and_atomics():
    """MR-ENG-029, MR-ENG-031, MR-VERB-005, MR-VERB-006: READs in both directions and atomics under loss,
    duplication and ACK loss keep the same slot counts as one small write, the responder
    resources and started requests stay under their bounds at every arrival, and all complete."""
    small = _traffic("small", 3)
    verbs = _traffic("verbs", 3)
    assert small[0] == verbs[0]


def test_hostile_chunk_beyond_window_nak():
    """MR-ENG-012: a chunk beyond the receiver's chunk window is NAKed INVALID_REQUEST, not tracked."""
    from metaroce.models.codec import BTH, IP, MRDH, RETH, UDP, Eth, Frame
    from metaroce.models.wire import MrdhFlag, NakReason, Op
    a, b, ca, cb, ka, kb, src, dst = _pair(mem=64 << 20)
    off = b.chunk_window * 1024
    f = Frame(eth=Eth(), ip=IP(src=A, dst=B, ecn=2), udp=UDP(sport=0xC001),
              bth=BTH(opcode=Op.MR_WRITE, dest_qp=20, psn=0),
              mrdh=MRDH(1, 0, 0, 0, 0, off, 32 << 20), reth=RETH(0, kb, 32 << 20), payload=b"x" * 1024)
    b.receive(f, 0.0)
    nak = b.next_packet(0.0)
    assert nak.mrnh.reason == NakReason.INVALID_REQUEST and cb.rx_open == {}
    assert bytes(dst[off:off + 1024]) == bytes(1024)
    f.mrdh = MRDH(1, MrdhFlag.FIRST, 0, 0, 0, off - 1024, 32 << 20)
    f.bth.psn = 1
    b.receive(f, 0.0)
    assert len(cb.rx_open) == 1 and b.stats["drop_invalid_request"] == 1


def test_rx_message_slots_bounded():
    """MR-ENG-015, MR-SEC-006: a peer opening more messages than max_rx_msgs gets INVALID_REQUEST."""
    from metaroce.models.codec import BTH, IP, MRDH, RETH, UDP, Eth, Frame
    from metaroce.models.wire import NakReason, Op
    a, b, ca, cb, ka, kb, src, dst = _pair(max_rx_msgs=3)
    naks = []
    for k in range(5):      # messages 1..5 of stream 0 (0 never arrives): each stays open
        f = Frame(eth=Eth(), ip=IP(src=A, dst=B, ecn=2), udp=UDP(sport=0xC001),
                  bth=BTH(opcode=Op.MR_WRITE, dest_qp=20, psn=k),
                  mrdh=MRDH(1, 0, 0, 0, k + 1, 0, 4096), reth=RETH(0, kb, 4096), payload=b"y" * 1024)
        b.receive(f, 0.0)
        while (g := b.next_packet(0.0)) is not None:
            if g.mrnh is not None:
                naks.append((k, g.mrnh.reason))
    assert len(cb.rx_open) == 2     # messages 1, 2 (3 is max_rx_msgs ahead of message 0)
    assert naks == [(2, NakReason.INVALID_REQUEST), (3, NakReason.INVALID_REQUEST),
                    (4, NakReason.INVALID_REQUEST)]


def test_tx_slots_limit_started_messages():
    """MR-ENG-013, MR-ENG-008: at most max_tx_msgs messages are started; the rest wait and all
    complete, in posting order."""
    a, b, ca, cb, ka, kb, src, dst = _pair(max_tx_msgs=2, streams=1)
    seen = []
    orig = a.next_packet

    def watch(now):
        f = orig(now)
        seen.append(sum(ca.s_slots))
        return f
    a.next_packet = watch
    for i in range(6):
        ca.post_write(0, ka, i * 2048, 2048, i * 2048, kb, wr_id=i)
    lb = Loopback(a, b, delay=1.5e-6)
    lb.run(until=0.01)
    assert max(seen) == 2
    assert [c.wr_id for c in lb.completions[0]] == list(range(6))
    assert dst[:6 * 2048] == src[:6 * 2048]


# -- every work request completes (MR-ENG-040..042) ---------------------------------------------

def _post_two(ca, ka, kb):
    ca.post_write(0, ka, 0, 64 << 10, 0, kb, wr_id=1)
    ca.post_write(1, ka, 0, 4096, 0, kb, wr_id=2)


def test_all_paths_dead_retry_exceeded():
    """MR-ENG-040: with every route dead the work requests complete RETRY_EXC_ERR within
    wr_timeout of the last progress (here: from the first packet)."""
    a, b, ca, cb, ka, kb, src, dst = _pair(rto_max=200e-6)
    _post_two(ca, ka, kb)
    lb = Loopback(a, b, delay=1.5e-6, routes=4, faults=LoopFaults(dead_routes=frozenset(range(4))))
    lb.run(until=0.05)
    got = {c.wr_id: c.status for c in lb.completions[0]}
    assert got == {1: Status.RETRY_EXC_ERR, 2: Status.RETRY_EXC_ERR}
    assert a.wr_timeout == 7 * 200e-6
    assert lb.last_completion <= a.wr_timeout + 1e-6
    assert a.stats["retry_exceeded"] == 1


def test_peer_never_answers_retry_exceeded():
    """MR-ENG-040: a peer without the connection drops everything silently (MR-ERR-005); the
    sender still completes, with RETRY_EXC_ERR, and a later request completes again."""
    a = Endpoint(A, mtu=1024, line_rate_bps=100e9, base_rtt=3e-6, wr_timeout=500e-6)
    b = Endpoint(B, mtu=1024, line_rate_bps=100e9, base_rtt=3e-6)
    ka = a.reg_mr(bytearray(1 << 16))
    ca = a.connect(10, B, 20, paths=2)
    ca.post_write(0, ka, 0, 8192, 0, 0x100, wr_id=7)
    lb = Loopback(a, b, delay=1.5e-6)
    lb.run(until=0.01)
    assert [(c.wr_id, c.status) for c in lb.completions[0]] == [(7, Status.RETRY_EXC_ERR)]
    assert lb.last_completion <= 500e-6 + 1e-6
    assert b.stats["drop_no_connection"] > 0
    ca.post_write(0, ka, 0, 100, 0, 0x100, wr_id=8)
    lb.run(until=0.02)
    assert [(c.wr_id, c.status) for c in lb.completions[0]][-1] == (8, Status.RETRY_EXC_ERR)


def test_mismatched_initial_psn_retry_exceeded():
    """MR-ENG-040: ends that disagree on the initial PSN never make progress; the work request
    fails instead of retrying forever."""
    a = Endpoint(A, mtu=1024, line_rate_bps=100e9, base_rtt=3e-6, initial_psn=0, wr_timeout=300e-6)
    b = Endpoint(B, mtu=1024, line_rate_bps=100e9, base_rtt=3e-6, initial_psn=1 << 20)
    ka, kb = a.reg_mr(bytearray(8192)), b.reg_mr(bytearray(8192))
    ca = a.connect(10, B, 20, paths=2)
    b.connect(20, A, 10, paths=2)
    ca.post_write(0, ka, 0, 8192, 0, kb, wr_id=3)
    lb = Loopback(a, b, delay=1.5e-6)
    lb.run(until=0.01)
    assert [(c.wr_id, c.status) for c in lb.completions[0]] == [(3, Status.RETRY_EXC_ERR)]


def test_rnr_retry_exceeded_and_delay():
    """MR-ENG-041, MR-PLC-005: no receive posted: the send is retried every rnr_delay, and after
    rnr_retry RNR NAKs it completes RNR_RETRY_EXC_ERR; a later send that finds its receive lands.
    MR-REL-012 (on by default, MR-REL-013) does not double the RNR resends."""
    a, b, ca, cb, ka, kb, src, dst = _pair(rnr_delay=20e-6, rnr_retry=3)
    ca.post_send(0, ka, 0, 3000, wr_id=5)
    lb = Loopback(a, b, delay=1.5e-6)
    lb.run(until=0.01)
    assert [(c.wr_id, c.status) for c in lb.completions[0]] == [(5, Status.RNR_RETRY_EXC_ERR)]
    assert 3 * 20e-6 <= lb.last_completion <= 4 * (20e-6 + 10e-6)
    assert a.stats["nak_rnr"] <= 4 * 3          # 3 chunks, at most 4 rounds: no NAK storm
    assert a.resend_twice and a.stats["resends_doubled"] == 0
    # MR-ERR-020..022: the failed send keeps its receive sequence (0) and its abort reached the
    # receiver: the receive posted for it completes REM_ABORT_ERR at once, and the next send,
    # the stream's second, lands in the second receive posted and completes on both sides.
    assert a.stats["aborts_acked"] == 1 and b.stats["aborts_received"] == 1
    cb.post_recv(0, kb, 0, 4096, wr_id=9)
    cb.post_recv(0, kb, 4096, 4096, wr_id=10)
    ca.post_send(0, ka, 0, 3000, wr_id=6)
    lb.run(until=0.02)
    assert lb.completions[0][-1].wr_id == 6 and lb.completions[0][-1].status == Status.SUCCESS
    assert [(c.wr_id, c.status) for c in lb.completions[1]] == [(9, Status.REM_ABORT_ERR),
                                                                (10, Status.SUCCESS)]
    assert dst[4096:4096 + 3000] == src[:3000] and dst[:3000] == bytes(3000)


def test_rnr_then_receive_posted_succeeds():
    """MR-ENG-041: a receive posted within the retries lets the send complete."""
    a, b, ca, cb, ka, kb, src, dst = _pair(rnr_delay=20e-6)
    ca.post_send(0, ka, 0, 3000, wr_id=5)
    lb = Loopback(a, b, delay=1.5e-6)
    lb.run(until=50e-6)
    cb.post_recv(0, kb, 0, 4096, wr_id=9)
    lb.run(until=0.01)
    assert [(c.wr_id, c.status) for c in lb.completions[0]] == [(5, Status.SUCCESS)]
    assert dst[:3000] == src[:3000]


@pytest.mark.parametrize("kw,needle", [
    ({"rto_max": 0}, "rto_max"), ({"rto_max": -1e-3}, "rto_max"), ({"beta": 0}, "beta"),
    ({"beta": 1.0}, "beta"), ({"beta": 1.5}, "beta"), ({"line_rate_bps": 1e18}, "line_rate_bps"),
    ({"line_rate_bps": 0}, "line_rate_bps"), ({"max_rx_msgs": 0}, "max_rx_msgs"),
    ({"max_tx_msgs": 0}, "max_tx_msgs"), ({"mtu": 1001}, "mtu"), ({"mtu": 0}, "mtu"),
    ({"base_rtt": 0}, "base_rtt"), ({"ack_every": 0}, "ack_every"), ({"rto_min": 2e-3}, "rto_min"),
    ({"retry_cnt": 0}, "retry_cnt"), ({"wr_timeout": 0}, "wr_timeout"), ({"rnr_retry": -1}, "rnr_retry"),
    ({"first_window": -1}, "first_window"), ({"initial_psn": 1 << 24}, "initial_psn"),
    ({"max_paths": 257}, "max_paths"), ({"sq_depth": 0}, "sq_depth"), ({"ack_delay": -1}, "ack_delay"),
    ({"max_window_bdp": 0}, "max_window_bdp"), ({"beta": float("nan")}, "beta"),
])
def test_constructor_arguments_checked(kw, needle):
    """MR-ENG-042: every bad constructor argument is a ValueError naming it."""
    with pytest.raises(ValueError, match=needle):
        Endpoint(A, **kw)


def test_connect_and_queue_limits():
    """MR-ENG-011, MR-ENG-014, MR-ENG-007: connect beyond the engine's paths/streams and posts
    beyond the queue depth are refused with ValueError, creating no state."""
    a = Endpoint(A, max_paths=8, max_streams=4, sq_depth=2)
    k = a.reg_mr(bytearray(64))
    with pytest.raises(ValueError, match="paths"):
        a.connect(1, B, 2, paths=9)
    with pytest.raises(ValueError, match="streams"):
        a.connect(1, B, 2, streams=5)
    c = a.connect(1, B, 2, paths=8, streams=4)
    c.post_write(0, k, 0, 8, 0, 0, wr_id=1)
    c.post_write(0, k, 0, 8, 0, 0, wr_id=2)
    with pytest.raises(ValueError, match="send queue"):
        c.post_write(0, k, 0, 8, 0, 0, wr_id=3)
    c.post_recv(1, k, 0, 8, wr_id=4)
    c.post_recv(1, k, 0, 8, wr_id=5)
    with pytest.raises(ValueError, match="receive queue"):
        c.post_recv(1, k, 0, 8, wr_id=6)


def test_outstanding_record_pool_bounds_sending():
    """MR-ENG-013: with the record pool full the sender waits (counted) until an ACK frees a
    record, on any connection; the pool never overflows and every write completes."""
    a, b, ca, cb, ka, kb, src, dst = _pair(max_outstanding=6)
    cb2 = b.connect(21, A, 11, paths=4)
    ca2 = a.connect(11, B, 21, paths=4)
    ca.post_write(0, ka, 0, 200 << 10, 0, kb, wr_id=1)
    ca2.post_write(0, ka, 200 << 10, 200 << 10, 200 << 10, kb, wr_id=2)
    high = []
    orig = a.next_packet

    def watch(now):
        f = orig(now)
        high.append(a._rtx_used)
        return f
    a.next_packet = watch
    lb = Loopback(a, b, delay=1.5e-6, faults=LoopFaults(loss=0.02), seed=4)
    lb.run(until=0.05)
    assert sorted(c.wr_id for c in lb.completions[0]) == [1, 2]
    assert max(high) == 6 and a.stats["rtx_pool_full"] > 0 and a._rtx_used == 0
    assert dst[:400 << 10] == src[:400 << 10]
    assert cb2.rx_open == {}


def test_state_bounded_with_aborts():
    """MR-ENG-029, MR-ERR-020, MR-ERR-021, MR-ERR-022: 120 writes and sends on two streams, every
    fifth refused for its key and every fifth a send that never finds a receive, under loss,
    duplication, reordering and ACK loss: every request completes on both sides, the failed
    ones are aborted, and the slot counts, occupancies and record fields stay those of one small
    write."""
    small = _traffic("small", 4)
    aborts = _traffic("aborts", 4)
    assert small[0] == aborts[0]
    assert aborts[2].stats["aborts_acked"] == 48


def _work_per_frame(msgs, pkts, loss=0.0, seed=1):
    """Bytecodes per frame (data and ACK/NAK) of ``msgs`` writes of ``pkts`` MTU packets each."""
    a, b, ca, cb, ka, kb, src, dst = _pair(mem=msgs * pkts * 1024)
    for i in range(msgs):
        off = i * pkts * 1024
        ca.post_write(i % 2, ka, off, pkts * 1024, off, kb, wr_id=i)
    lb = Loopback(a, b, delay=1.5e-6, seed=seed, faults=LoopFaults(loss=loss))
    count = BytecodeCounter()
    count.run(lb.run, until=0.5)
    assert dst == src and sorted(c.wr_id for c in lb.completions[0]) == list(range(msgs))
    assert all(c.status == Status.SUCCESS for c in lb.completions[0])
    return count.ops / lb.stats["frames"]


@pytest.mark.parametrize("loss", [0.0, 0.02])
def test_work_per_packet_does_not_grow_with_traffic(loss):
    """MR-ENG-003, MR-ENG-004: the work per packet is bounded; it does not grow with the
    number of messages outstanding (4 -> 32 writes of 16 packets) or with the PSNs a message
    spans (64 -> 1,024 packets in one write), with or without loss. Measured in bytecodes per
    frame of the whole loop (endpoints and link), within 10 %: a per-packet scan of the
    messages or of the PSNs sent would multiply it."""
    few, many = _work_per_frame(4, 16, loss), _work_per_frame(32, 16, loss)
    short, long_ = _work_per_frame(1, 64, loss), _work_per_frame(1, 1024, loss)
    assert many <= 1.1 * few, (few, many)
    assert long_ <= 1.1 * short, (short, long_)
