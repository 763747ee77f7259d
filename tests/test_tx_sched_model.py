"""The TX scheduler's model (models/tx_sched.py): its semantics on hand-made cases, the cycle
model through the block's driver and checker, and the reference endpoint's sender on the same
work requests (MR-TXS-051)."""
import dataclasses

import pytest

from metaroce.models import protocol as P
from metaroce.models import records
from metaroce.models import tx_sched_cases as tc
from metaroce.models.tx_sched import rsp_item
from metaroce.models.tx_sched import (OP_READ, OP_SEND, OP_SEND_IMM, OP_WRITE, OP_WRITE_IMM, SMALL,
                                      STATUS_LOC_LEN_ERR,
                                      STATUS_LOC_QP_OP_ERR, TxSchedCycleModel, TxSchedModel,
                                      PATH_ACTIVE, PATH_PROBING, PATH_RETIRED)
from metaroce.models.retransmit import CTR, RetransmitModel
from metaroce.models.wire import MrdhFlag


def drain(sem):
    """Every packet the scheduler sends now, without reports."""
    out = []
    while (act := sem.decide()) is not None:
        r = sem.apply(act)
        if r is not None:
            out.append(r)
    return out


def test_chunk_functions():
    """MR-CONN-005, MR-ENG-012, MR-EXO-002: chunk counts and lengths; the acknowledged-chunk
    window moves over the acknowledged chunks and counts each once."""
    assert [P.chunk_count(n, 1024) for n in (0, 1, 1024, 1025, 4096)] == [1, 1, 1, 2, 4]
    assert [P.chunk_bytes(2500, k, 1024) for k in range(3)] == [1024, 1024, 452]
    assert P.chunk_bytes(0, 0, 1024) == 0
    base, bits = 0, 0
    base, bits, new = P.chunk_ack(base, bits, 2, 16)
    assert (base, bits, new) == (0, 0b100, True)
    base, bits, new = P.chunk_ack(base, bits, 2, 16)
    assert not new and (base, bits) == (0, 0b100)
    base, bits, new = P.chunk_ack(base, bits, 0, 16)
    assert (base, bits) == (1, 0b10)
    base, bits, new = P.chunk_ack(base, bits, 1, 16)
    assert (base, bits, new) == (3, 0, True)
    assert P.chunk_ack(base, bits, 3 + 16, 16)[2] is False
    assert P.chunk_window_open(18, 3, 16) and not P.chunk_window_open(19, 3, 16)


def test_bad_work_requests_complete_at_once():
    """MR-TXS-011: an opcode this slice does not send, a stream beyond the instance, a message
    with more chunks than a chunk index names: an error completion at once, nothing queued."""
    sem = TxSchedModel(**dict(SMALL, mtu=256))
    for f, status in ((tc.wr_item(0, 0, 10, wr_id=1, op=7), STATUS_LOC_QP_OP_ERR),
                      (tc.wr_item(1, 2, 10, wr_id=2), STATUS_LOC_QP_OP_ERR),
                      (tc.wr_item(0, 1, (1 << 20) * 256 + 1, wr_id=3), STATUS_LOC_LEN_ERR)):
        assert sem.wr_room(f)
        assert sem.wr(f) == {"conn": f["conn"], "stream": f["stream"], "wr_id": f["wr_id"],
                             "status": status, "op": f["op"], "length": f["length"]}
    assert sem.wr(tc.wr_item(0, 1, (1 << 20) * 256, wr_id=4)) is None
    assert sem.decide() is None or sem.decide()[0] == "packet"


def test_send_receive_sequence_per_stream():
    """MR-TXS-057..059: SEND and SEND_IMM are queued as writes are; each takes its stream's
    receive sequence when queued (writes and refused requests take none; each stream of each
    connection counts on its own; modulo 2^32), and every packet of a send carries it in MRSH
    with the opcode 0xC0 + op, RETH VA and R_Key 0 and the immediate of a SEND_IMM."""
    sem = TxSchedModel(**dict(SMALL, cwnd=1 << 20, conn_window=1 << 20))
    posts = [(0, 0, OP_SEND), (0, 0, OP_WRITE), (0, 0, OP_SEND_IMM), (0, 1, OP_SEND),
             (1, 0, OP_SEND_IMM), (1, 0, OP_WRITE_IMM)]
    for k, (c, s, op) in enumerate(posts):
        assert sem.wr(tc.wr_item(c, s, 2000, wr_id=k, op=op, va=0xAB00 + k, rkey=0x77,
                                 imm=0x1000 + k)) is None
    # refused: an opcode of the next slices, a stream beyond the instance: no sequence taken
    assert sem.wr(tc.wr_item(0, 0, 10, wr_id=9, op=7))["status"] == STATUS_LOC_QP_OP_ERR
    assert sem.wr(tc.wr_item(0, 3, 10, wr_id=10, op=OP_SEND))["status"] == STATUS_LOC_QP_OP_ERR
    assert sem.q[sem.qi(0, 0)]["send_seq"] == 2 and sem.q[sem.qi(0, 1)]["send_seq"] == 1
    want = {0: (0xC2, 0), 1: (0xC0, 0), 2: (0xC3, 1), 3: (0xC2, 0), 4: (0xC3, 0), 5: (0xC1, 0)}
    frames = [fr for fr, _ in drain(sem)]
    assert len(frames) == 2 * len(posts)
    for fr in frames:
        k = next(k for k, (c, s, _) in enumerate(posts)
                 if (c, s) == (fr["conn"], fr["mrdh_stream"])
                 and sum(1 for c2, s2, _ in posts[:k] if (c2, s2) == (c, s)) == fr["mrdh_msg"])
        op = posts[k][2]
        assert (fr["bth_opcode"], fr["mrsh_recv_seq"]) == want[k]
        send = op in (OP_SEND, OP_SEND_IMM)
        assert (fr["reth_va"], fr["reth_rkey"]) == ((0, 0) if send else (0xAB00 + k, 0x77))
        assert fr["reth_dma_len"] == fr["mrdh_msg_len"] == 2000
        assert fr["imm_imm"] == (0x1000 + k if op in (OP_WRITE_IMM, OP_SEND_IMM) else 0)
    # modulo 2^32
    q = sem.q[sem.qi(1, 1)]
    q["send_seq"] = 0xFFFF_FFFF
    sem.wr(tc.wr_item(1, 1, 0, wr_id=11, op=OP_SEND))
    sem.wr(tc.wr_item(1, 1, 0, wr_id=12, op=OP_SEND_IMM))
    assert [e["recv_seq"] for e in q["ring"][:2]] == [0xFFFF_FFFF, 0] and q["send_seq"] == 1


def test_read_request():
    """MR-TXS-061..064: a READ (op 4) is queued as a one-chunk message of no payload: it takes
    its stream's message number and no receive sequence; its frame request is MR_READ (0xC6),
    FIRST and LAST, offset 0, message length 0, the READ's RETH (DMA length the READ's length),
    no payload, no bytes in flight but one packet; a lost report resends it (RETX, a new PSN);
    its acknowledgment completes it with op 4 and the READ's length. Opcode 7 stays refused
    and a READ of more chunks than a chunk index names is refused LOC_LEN_ERR (MR-TXS-011)."""
    sem = TxSchedModel(**dict(SMALL, mtu=256))
    assert sem.wr(tc.wr_item(0, 0, (1 << 20) * 256 + 1, wr_id=7, op=OP_READ))["status"] == \
        STATUS_LOC_LEN_ERR
    assert sem.wr(tc.wr_item(0, 0, 10, wr_id=8, op=7))["status"] == STATUS_LOC_QP_OP_ERR
    assert sem.wr(tc.wr_item(0, 0, 300, wr_id=0, op=OP_SEND, laddr=1)) is None
    assert sem.wr(tc.wr_item(0, 0, 70_000, wr_id=1, op=OP_READ, laddr=0x5000, va=0xABC0,
                             rkey=0x77, imm=0x1234)) is None
    assert sem.wr(tc.wr_item(0, 0, 300, wr_id=2, op=OP_SEND, laddr=2)) is None
    q = sem.q[sem.qi(0, 0)]
    assert q["ring"][1]["msg"] == 1 and q["ring"][1]["nchunks"] == 1 and q["send_seq"] == 2
    out = drain(sem)
    rd = [(fr, st) for fr, st in out if fr["mrdh_msg"] == 1]
    assert len(out) == 5 and len(rd) == 1
    fr, st = rd[0]
    assert fr == {"conn": 0, "laddr": 0x5000, "bth_opcode": 0xC6, "bth_ack_req": fr["bth_ack_req"],
                  "bth_psn": fr["bth_psn"], "mrdh_flags": MrdhFlag.FIRST | MrdhFlag.LAST,
                  "mrdh_path": fr["mrdh_path"], "mrdh_stream": 0, "mrdh_msg": 1, "mrdh_offset": 0,
                  "mrdh_msg_len": 0, "reth_va": 0xABC0, "reth_rkey": 0x77, "reth_dma_len": 70_000,
                  "mrsh_recv_seq": 0, "imm_imm": 0, "payload_len": 0, "slot": 1, "lap": 0, "swap": 0,
                  "compare": 0, "gen": 0}
    assert st["nbytes"] == 0 and st["chunk"] == 0
    p = fr["mrdh_path"]
    ps = sem.path[p]
    assert ps["pkts"] >= 1 and ps["inflight"] == sum(
        s["nbytes"] for f, s in out if f["mrdh_path"] == p)
    # the sends' recv_seq 0 and 1: the READ between them took none
    assert sorted(f["mrsh_recv_seq"] for f, _ in out if f["bth_opcode"] == 0xC2) == [0, 0, 1, 1]
    rep = {"conn": 0, "path": p, "slot": st["slot"], "chunk": 0, "abort": 0}
    assert sem.report(rep, lost=True)
    (fr2, st2), = drain(sem)
    assert fr2["bth_opcode"] == 0xC6 and fr2["mrdh_flags"] == MrdhFlag.FIRST | MrdhFlag.LAST | \
        MrdhFlag.RETX and st2["nbytes"] == 0
    # the first send completes first (posting order), then the READ on its request's ACK
    for f, s in out:
        if f["mrdh_msg"] == 0:
            sem.report({"conn": 0, "path": s["path"], "slot": s["slot"], "chunk": s["chunk"],
                        "abort": 0}, lost=False)
    assert sem.complete(sem.completion())["wr_id"] == 0
    assert sem.completion() is None
    assert sem.report(dict(rep, path=st2["path"]), lost=False)
    assert sem.complete(sem.completion()) == {"conn": 0, "stream": 0, "wr_id": 1, "status": 0,
                                              "op": OP_READ, "length": 70_000}


def test_atomic_request():
    """MR-TXS-096..100: a compare-and-swap (op 5) and a fetch-and-add (op 6) of length 8 are
    queued as one-chunk messages of their operands (16 and 8 bytes): each takes its stream's
    message number and no receive sequence; its frame request is MR_CMP_SWAP (0xC8) or
    MR_FETCH_ADD (0xC9), FIRST and LAST, offset 0, message length and payload the operands'
    bytes, RETH with the request's VA and R_Key and DMA length 8, no immediate, the operands in
    ``swap`` and ``compare`` (a fetch-and-add's compare 0); its bytes count in flight; a lost
    report resends it (RETX, a new PSN); its acknowledgment completes it with its op and length
    8. An atomic of another length is refused LOC_LEN_ERR. MR-TXS-102: its bytes count in its
    path's bytes in flight."""
    from metaroce.models.tx_sched import OP_CMP_SWAP, OP_FETCH_ADD
    sem = TxSchedModel(**dict(SMALL, mtu=256))
    for n in (0, 7, 16, 1 << 31):
        assert sem.wr(tc.wr_item(0, 0, n, wr_id=9, op=OP_CMP_SWAP))["status"] == STATUS_LOC_LEN_ERR
    assert sem.wr(tc.wr_item(0, 0, 300, wr_id=0, op=OP_SEND, laddr=1)) is None
    assert sem.wr(tc.wr_item(0, 0, 8, wr_id=1, op=OP_CMP_SWAP, laddr=0x5000, va=0xABC0, rkey=0x77,
                             imm=0x1234, swap=0x1122334455667788, compare=0x99AA)) is None
    assert sem.wr(tc.wr_item(0, 0, 8, wr_id=2, op=OP_FETCH_ADD, laddr=0x6000, va=0xBC8, rkey=0x78,
                             swap=5, compare=0xDEAD)) is None
    assert sem.wr(tc.wr_item(0, 0, 300, wr_id=3, op=OP_SEND, laddr=2)) is None
    q = sem.q[sem.qi(0, 0)]
    assert [e["nchunks"] for e in q["ring"]] == [2, 1, 1, 2] and q["send_seq"] == 2
    out = drain(sem)
    got = {fr["mrdh_msg"]: (fr, st) for fr, st in out if fr["mrdh_msg"] in (1, 2)}
    assert len(out) == 6
    base = {"conn": 0, "mrdh_flags": MrdhFlag.FIRST | MrdhFlag.LAST, "mrdh_stream": 0,
            "mrdh_offset": 0, "reth_dma_len": 8, "mrsh_recv_seq": 0, "imm_imm": 0}
    for msg, want in ((1, dict(laddr=0x5000, bth_opcode=0xC8, mrdh_msg_len=16, reth_va=0xABC0,
                               reth_rkey=0x77, payload_len=16, slot=1, swap=0x1122334455667788,
                               compare=0x99AA)),
                      (2, dict(laddr=0x6000, bth_opcode=0xC9, mrdh_msg_len=8, reth_va=0xBC8,
                               reth_rkey=0x78, payload_len=8, slot=2, swap=5, compare=0))):
        fr, st = got[msg]
        assert {k: fr[k] for k in {**base, **want}} == {**base, **want}
        assert (st["nbytes"], st["chunk"]) == (want["payload_len"], 0)
    assert sum(p["inflight"] for p in sem.path) == sum(s["nbytes"] for _, s in out) == 2 * 300 + 24
    assert sorted(f["mrsh_recv_seq"] for f, _ in out if f["bth_opcode"] == 0xC2) == [0, 0, 1, 1]
    fr, st = got[2]
    rep = {"conn": 0, "path": st["path"], "slot": st["slot"], "chunk": 0, "abort": 0}
    assert sem.report(rep, lost=True)
    (fr2, st2), = drain(sem)
    assert (fr2["bth_opcode"], fr2["mrdh_flags"], fr2["swap"], st2["nbytes"]) == (
        0xC9, MrdhFlag.FIRST | MrdhFlag.LAST | MrdhFlag.RETX, 5, 8)
    assert fr2["bth_psn"] != fr["bth_psn"] or fr2["mrdh_path"] != fr["mrdh_path"]
    for f, s in out:
        sem.report({"conn": 0, "path": s["path"], "slot": s["slot"], "chunk": s["chunk"],
                    "abort": 0}, lost=False)
    sem.report(dict(rep, path=st2["path"]), lost=False)
    done = []
    while (qi := sem.completion()) is not None:
        done.append(sem.complete(qi))
    assert [(c["wr_id"], c["op"], c["length"], c["status"]) for c in done] == [
        (0, OP_SEND, 300, 0), (1, OP_CMP_SWAP, 8, 0), (2, OP_FETCH_ADD, 8, 0), (3, OP_SEND, 300, 0)]


def drain_n(sem, n):
    """The first ``n`` packets the scheduler sends now, without reports."""
    out = []
    while len(out) < n and (act := sem.decide()) is not None:
        r = sem.apply(act)
        if r is not None:
            out.append(r)
    return out


def test_chunks_streams_paths_and_psns():
    """MR-TXS-023..026, MR-CONN-004/005, MR-ENG-030, MR-SEQ-001: two streams in turn, one
    packet each; each connection's rotation starts at its index mod paths; PSNs per path; the
    frame fields of each chunk."""
    sem = TxSchedModel(**dict(SMALL, cwnd=1 << 20, conn_window=1 << 20))
    sem.wr(tc.wr_item(1, 0, 2500, wr_id=0, op=OP_WRITE_IMM, laddr=100, va=7, rkey=9, imm=5))
    sem.wr(tc.wr_item(1, 1, 1024, wr_id=1, laddr=5000, va=0, rkey=9))
    out = drain(sem)
    got = [(f["mrdh_stream"], f["mrdh_offset"], f["payload_len"], f["mrdh_path"], f["bth_psn"],
            f["mrdh_flags"]) for f, _ in out]
    first, last = int(MrdhFlag.FIRST), int(MrdhFlag.LAST)
    assert got == [(0, 0, 1024, 1, 0, first), (1, 0, 1024, 2, 0, first | last),
                   (0, 1024, 1024, 3, 0, 0), (0, 2048, 452, 0, 0, last)]
    f, s = out[3]
    assert (f["bth_opcode"], f["imm_imm"], f["laddr"], f["reth_va"], f["mrdh_msg_len"]) == (
        0xC1, 5, 100, 7, 2500)
    assert (s["slot"], s["chunk"], s["nbytes"]) == (0, 2, 452)
    # MR-SEQ-009: fewer chunks left than paths: every packet asks for an ACK
    assert [f["bth_ack_req"] for f, _ in out] == [1, 1, 1, 1]


def test_resends_first_and_stale_resends_dropped():
    """MR-REL-003/004, MR-TXS-021, MR-TXS-023: a lost chunk goes before new chunks, on the
    next path of the rotation with a new PSN and RETX; a lost report for a chunk already
    acknowledged is not resent; a message completes when every chunk is acknowledged."""
    sem = TxSchedModel(**dict(SMALL, cwnd=1 << 20, conn_window=1 << 20))
    sem.wr(tc.wr_item(0, 0, 3 * 1024, wr_id=0))
    out = [sem.apply(sem.decide())]
    sem.report({"conn": 0, "path": 0, "slot": 0, "chunk": 0, "abort": 0}, lost=True)
    out.append(sem.apply(sem.decide()))
    assert out[1][0]["mrdh_flags"] & MrdhFlag.RETX and out[1][1]["chunk"] == 0
    assert (out[1][1]["path"], out[1][1]["psn"]) == (1, 0)
    out += drain(sem)
    assert [s["chunk"] for _, s in out] == [0, 0, 1, 2]
    for _, s in out[1:]:
        sem.report({"conn": 0, "path": s["path"], "slot": 0, "chunk": s["chunk"], "abort": 0}, lost=False)
    assert sem.completion() == 0
    assert sem.complete(0)["status"] == 0 and sem.completion() is None
    # a lost report after the chunk was acknowledged through another PSN: nothing to resend
    sem.wr(tc.wr_item(0, 0, 2048, wr_id=1))
    a, b = drain(sem)
    sem.report({"conn": 0, "path": a[1]["path"], "slot": a[1]["slot"], "chunk": 0, "abort": 0}, lost=False)
    assert sem.report({"conn": 0, "path": b[1]["path"], "slot": b[1]["slot"], "chunk": 1, "abort": 0},
                      lost=False)
    assert sem.completion() == 0


def test_late_report_of_a_reused_slot_ignored():
    """MR-TXS-142, MR-TXS-143, MR-TX-209 (issue 12: the engine's atomics loopback at seed 2): a
    message's packet declared lost by a timeout is resent, the resend acknowledged and the
    message completed; the stream's messages take its slot again on the ring's next lap. The
    late ACK of the first packet (the unit reports the timed-out record acknowledged) names the
    slot with the old lap: ignored, the new message stays in flight. Negative control: the
    same report with the new entry's lap (what the slot alone named before) completes it."""
    sem = TxSchedModel(**dict(SMALL, cwnd=1 << 20, conn_window=1 << 20))
    depth = SMALL["depth"]

    def rep(s, **kw):
        return {**{k: s[k] for k in ("conn", "path", "slot", "chunk", "abort", "lap")}, **kw}

    sem.wr(tc.wr_item(0, 0, 100, wr_id=0))
    (_, first), = drain(sem)
    assert (first["slot"], first["lap"]) == (0, 0)
    sem.report(rep(first), lost=True)               # the timeout's report
    (_, again), = drain(sem)
    sem.report(rep(again), lost=False)
    assert sem.complete(sem.completion())["wr_id"] == 0
    for k in range(1, depth + 1):
        sem.wr(tc.wr_item(0, 0, 100, wr_id=k))
        (_, s), = drain(sem)
        if k < depth:
            sem.report(rep(s), lost=False)
            assert sem.complete(sem.completion())["wr_id"] == k
    assert (s["slot"], s["lap"]) == (0, 1)
    assert not sem.report(rep(first), lost=False)
    assert sem.completion() is None and sem.entry_of(0, 0)["out"] == 1
    assert sem.report(rep(first, lap=1), lost=False)
    assert sem.complete(sem.completion())["wr_id"] == depth


def _unit_and_scheduler(conns=SMALL["conns"], paths=SMALL["paths"], late=True, **sem_kw):
    """The scheduler's semantics fed by the retransmit unit's (MR-TX-020..023, MR-TX-063;
    MR-TXS-445's late flag, cleared with ``late`` False: the unit before stl43): each packet
    the scheduler sends is recorded by the unit, the unit's reports go to the scheduler."""
    sem = TxSchedModel(**dict(SMALL, cwnd=1 << 20, conn_window=1 << 20, **sem_kw))
    rtx = RetransmitModel(conns, paths, 64)

    def send():
        (_, s), = drain(sem)
        assert rtx.sent(s)
        return s

    def feed(decisions):
        for d in decisions:
            sem.report({"conn": d.conn, "path": d.path, "slot": d.slot, "chunk": d.chunk,
                        "abort": d.abort, "lap": d.lap, "late": d.late if late else 0},
                       lost=d.kind == "resend")

    def ack(s):
        """The ACK of sent packet ``s`` (and of every earlier PSN of its path)."""
        feed(rtx.ack(rc_ack(s["conn"], s["path"], P.psn_add(s["psn"], 1), 0, psn=s["psn"])[1]))
    return sem, rtx, send, feed, ack


def rc_ack(*a, **kw):
    from metaroce.models import retransmit_cases as rc
    return rc.ack_item(*a, **kw)


@pytest.mark.parametrize("form", ["lap", "identity_ignored"])
def test_timed_out_record_acknowledged_late_leaks_no_flight(form):
    """MR-TXS-440..443, MR-TXS-490/491, MR-TXS-493 (issue 13, stl43: the TX-at-8/RX-at-1 atomics loopback's
    stall at seed 2), the scheduler with the retransmit unit's semantics: message 0's packet A
    (path a) times out and is reported lost (its flight leaves), its resend B is acknowledged and
    message 0 completes; the stream's messages take its ring slot again until one has A's slot
    and a lap equal to A's in its low bit (two laps later: MR-TXS-142's one bit would name A's
    message) and is sent as C; path a is made probing. Then A's late ACK arrives on path a,
    reported flagged late (MR-TXS-445): its lap (LAP_BITS, MR-TXS-490) is not C's entry's, so
    the scheduler takes its path's evidence only: path a restored, no flight released, no chunk
    counted; C then times out and is resent. Negative control (``identity_ignored``: the report
    given C's lap, the stale count the lap guards against, MR-TXS-491): C's chunk is counted
    acknowledged on A's ACK, and when C times out its message completes with nothing resent,
    its packet never acknowledged."""
    sem, rtx, send, feed, ack = _unit_and_scheduler()
    depth = SMALL["depth"]
    sem.wr(tc.wr_item(0, 0, 100, wr_id=0))
    a = send()
    timed_out, error = rtx.timeout(0, a["path"])
    assert not error and [d.kind for d in timed_out] == ["resend"]
    feed(timed_out)                                 # A's flight leaves (MR-TXS-020)
    b = send()
    assert b["path"] != a["path"] and sem.path[a["path"]]["inflight"] == 0
    # path a closed (window 0, MR-TXS-028): no later PSN of it acknowledges A before the late ACK
    sem.set_cwnd(0, a["path"], 0)
    ack(b)
    assert sem.complete(sem.completion())["wr_id"] == 0
    for k in range(1, 2 * depth + 1):
        sem.wr(tc.wr_item(0, 0, 100, wr_id=k))
        c = send()
        if k < 2 * depth:
            ack(c)
            assert sem.complete(sem.completion())["wr_id"] == k
    assert c["slot"] == a["slot"] and c["path"] != a["path"]
    assert c["lap"] != a["lap"] and c["lap"] % 2 == a["lap"] % 2
    sem.path_event({"conn": 0, "path": a["path"], "verdict": P.PATH_SUSPECT})
    assert sem.path[a["path"]]["state"] == PATH_PROBING
    flights = [(ps["inflight"], ps["pkts"]) for ps in sem.path], sem.conn[0]["inflight"]
    e = sem.entry_of(0, c["slot"], c["lap"])
    late_reports = rtx.ack(rc_ack(a["conn"], a["path"], P.psn_add(a["psn"], 1), 0,
                                  psn=a["psn"])[1])
    assert [(d.kind, d.late) for d in late_reports] == [("acked", 1)]
    if form == "identity_ignored":
        late_reports = [dataclasses.replace(d, lap=c["lap"]) for d in late_reports]
    feed(late_reports)                              # A's late ACK
    # MR-TXS-446: its path's evidence: path a restored; no flight released either way
    assert sem.path[a["path"]]["state"] == PATH_ACTIVE and sem.path[a["path"]]["rst"]
    assert ([(ps["inflight"], ps["pkts"]) for ps in sem.path], sem.conn[0]["inflight"]) == flights
    assert rtx.counters[CTR["acked"]] == 2 * depth + 1      # A counted by the unit
    assert sem.completion() is None and sem.path[c["path"]]["inflight"] == 100
    # C times out (its path's timer): reported lost, its flight leaves
    lost_c, _ = rtx.timeout(0, c["path"])
    feed(lost_c)
    if form == "identity_ignored":
        # the wrong form: C's chunk counted on A's ACK, so C is not resent and its message
        # completes with its one packet never acknowledged
        assert sem.chunk_acked(e, 0) and not sem.conn[0]["retx"]
        assert sem.complete(sem.completion())["wr_id"] == 2 * depth
        return
    assert not sem.chunk_acked(e, 0) and sem.completion() is None
    c2 = send()                                     # C's resend
    assert (c2["slot"], c2["lap"], c2["chunk"]) == (c["slot"], c["lap"], 0)
    ack(c2)
    assert sem.complete(sem.completion())["wr_id"] == 2 * depth
    assert all((ps["inflight"], ps["pkts"]) == (0, 0) for ps in sem.path)
    assert sem.conn[0]["inflight"] == 0


def test_lap_widths():
    """MR-TX-520, MR-TXS-490: the lap is ``records.LAP_BITS`` (8) bits in every carrier: the
    unit's sent packet, record and reports, the scheduler's frame request and failure, the row
    scheduler's entry and path; the ring positions count modulo 2^8 x depth. MR-TX-506,
    MR-TXS-499 (live47): the unit's record and reports as live46 made them (the late reports'
    guard is the scheduler's count, no unit field); the row's path has the 10-bit quiet count
    (the cap 1,021 at depth 4)."""
    from metaroce.models import retransmit
    from metaroce.models.tx_sched import layouts
    from metaroce.models.tx_sched_rows import row_layouts
    assert records.LAP_BITS == 8
    ru, lay, rl = retransmit.layouts(8, 4, 256), layouts(), row_layouts()
    for carrier in (ru.sent, ru.rec, ru.resend, ru.acked, lay.frame, lay.fail, lay.acked,
                    rl.entry):
        assert carrier["lap"].width == records.LAP_BITS
    assert rl.path["tail_lap"].width == records.LAP_BITS
    assert (ru.rec.size, ru.sent.size, ru.acked.size) == (78, 113, 44)
    depth = SMALL["depth"]
    assert rl.stream["tail"].width == (depth - 1).bit_length() + records.LAP_BITS
    sem = TxSchedModel(**SMALL)
    assert sem.ring_mod == 256 * depth
    assert sem.late_cap == 256 * depth - depth + 1 == 1021 and rl.path["quiet"].width == 10


@pytest.mark.parametrize("resent", [False, True])
def test_late_report_of_the_present_message_counts_its_chunk(resent):
    """MR-TXS-491/492, MR-TXS-494 (live46: MR-TXS-447's liveness limit): message 0's packet A times out and
    is reported lost (its flight leaves, its chunk queued for resend); then A's late ACK comes
    while message 0 holds the slot (the lap the entry's). The scheduler counts A's chunk
    acknowledged (as the reference endpoint, MR-EXO-002) and releases no flight. ``resent``
    False: the queued resend is dropped (its chunk acknowledged), nothing more is sent and
    the message completes at once. ``resent`` True: the resend B was sent before the late ACK:
    the message waits for B's report (its `out`, MR-TXS-492), completing on it; every path's
    flight 0 at the end (MR-TXS-441's invariant). Negative control: the late report ignored
    (MR-TXS-446's rule before live46): the chunk stays unacknowledged."""
    sem, rtx, send, feed, ack = _unit_and_scheduler()
    sem.wr(tc.wr_item(0, 0, 100, wr_id=0))
    a = send()
    timed_out, _ = rtx.timeout(0, a["path"])
    feed(timed_out)
    assert sem.conn[0]["retx"] and sem.conn[0]["inflight"] == 0
    e = sem.entry_of(0, a["slot"], a["lap"])
    if resent:
        b = send()
        assert b["path"] != a["path"] and e["out"] == 1
    late = rtx.ack(rc_ack(a["conn"], a["path"], P.psn_add(a["psn"], 1), 0, psn=a["psn"])[1])
    assert [(d.kind, d.late) for d in late] == [("acked", 1)]
    # the wrong form (the rule before): a late report taken as one of a slot not live
    wrong = TxSchedModel(**dict(SMALL, cwnd=1 << 20, conn_window=1 << 20))
    assert not wrong.report({**{k: getattr(late[0], k) for k in
                                ("conn", "path", "slot", "chunk", "abort")},
                             "lap": 7, "late": 1}, lost=False)
    flights = [(ps["inflight"], ps["pkts"]) for ps in sem.path], sem.conn[0]["inflight"]
    feed(late)
    assert sem.chunk_acked(e, 0), "MR-TXS-491: the late report's chunk counted"
    assert ([(ps["inflight"], ps["pkts"]) for ps in sem.path], sem.conn[0]["inflight"]) == flights
    if not resent:
        act = sem.decide()
        assert act is not None and act[0] == "drop"     # the queued resend: acknowledged
        sem.apply(act)
        assert sem.decide() is None
        assert sem.complete(sem.completion())["wr_id"] == 0
    else:
        assert sem.completion() is None and e["out"] == 1, "MR-TXS-492: B still in flight"
        ack(b)
        assert sem.complete(sem.completion())["wr_id"] == 0
    assert all((ps["inflight"], ps["pkts"]) == (0, 0) for ps in sem.path)
    assert sem.conn[0]["inflight"] == 0


def test_windows_bind():
    """MR-CC-001, MR-SEQ-006, MR-TXS-025: a path takes a packet only below its window and its
    packet bound; the connection only while the packet fits its window (or nothing is in
    flight)."""
    sem = TxSchedModel(**dict(SMALL, cwnd=1500, conn_window=3000, path_pkts=8))
    sem.wr(tc.wr_item(0, 0, 20 * 1024, wr_id=0))
    out = drain(sem)
    assert [s["path"] for _, s in out] == [0, 1]          # 2 x 1024 in flight; a third would not fit 3000
    sem = TxSchedModel(**dict(SMALL, cwnd=1500, conn_window=1 << 20, path_pkts=8))
    sem.wr(tc.wr_item(0, 0, 20 * 1024, wr_id=0))
    assert [s["path"] for _, s in drain(sem)] == [0, 1, 2, 3, 0, 1, 2, 3]   # each path: 2 x 1024 > 1500
    sem = TxSchedModel(**dict(SMALL, cwnd=1 << 20, conn_window=1 << 20, path_pkts=1))
    sem.wr(tc.wr_item(0, 0, 20 * 1024, wr_id=0))
    assert len(drain(sem)) == 4


@pytest.mark.parametrize("seed", [1, 3, 4])
def test_cycle_model_random(seed):
    """MR-TXS-030/031, MR-TXS-050: the cycle model through the driver (idle cycles, backpressure,
    lossy delivery through the retransmit unit's semantics): the checker passes. (Seeds whose
    runs have tail losses found by the driver's timeouts: seed 2 has none since MR-TXS-035.)"""
    model = TxSchedCycleModel(64, **SMALL)
    items = tc.traffic(model.sem, 200, seed=seed)
    res = tc.run_model(model, items, seed=seed, p_bp=0.4)
    s = tc.check(TxSchedModel(**SMALL), items, res)
    assert s["retransmits"] and res["timeouts"]


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_endpoint_until_blocked(seed):
    """MR-TXS-051: without ACKs, the endpoint's sender and the scheduler send the same frames
    (path, PSN, offset, length, flags, stream, message, opcode, AckReq, RETH, immediate) until
    both block on the windows or the chunk window."""
    r = tc.endpoint_compare(seed, loopback=False, streams=4, depth=2, init_window_bdp=0.2)
    assert r["frames"] >= 5
    r = tc.endpoint_compare(seed, loopback=False, streams=2, depth=4, init_window_bdp=2.0)
    assert r["frames"] >= 3


@pytest.mark.parametrize("seed", [4, 12, 24, 37])
def test_endpoint_over_lossy_loopback(seed):
    """MR-TXS-051, MR-REL-003: the endpoint's writes over the lossy loopback (windows that do
    not bind); each ACK it processed goes through the retransmit unit's semantics and its
    reports to the scheduler: the scheduler's next packet is the endpoint's at every frame,
    resends included; writes, sends and READs mixed (MR-TXS-060, MR-TXS-061..063: the READ
    requests' frames, their resends and the READ data arriving in the requester's buffer). (Seeds whose losses are all found by SACK gaps: tail probes, MR-REL-010,
    are outside the retransmit unit's slice.)"""
    import random
    rng = random.Random(seed)
    kind = tc.kind_rng(seed)         # MR-TXS-060: writes and sends mixed
    rd = tc.read_rng(seed)           # MR-TXS-061: and READs
    msgs = [(s, rng.randrange(30_000, 60_000), rng.choice([None, 7]), kind.random() < 0.5)
            for s in range(2) for _ in range(4)]
    msgs = [(s, n, None, "read") if rd.random() < 0.25 else (s, n, i, k) for s, n, i, k in msgs]
    r = tc.endpoint_compare(seed, msgs=msgs, loopback=True, loss=0.05, drop_until=40e-6,
                            init_window_bdp=100.0, max_window_bdp=100.0)
    assert r["retransmits"] >= 10 and not r["stats"].get("tail_probes")
    assert r["frames"] == r["stats"]["data_packets_sent"]
    assert sum(q["bth_opcode"] == 0xC6 for q in r["requests"]) >= 2        # READ requests


def test_atomic_layouts_keep_the_other_ops_bits():
    """MR-TXS-105, MR-TXS-103: ``s_wr``'s fields of the other ops keep their bit positions (the
    operands are above ``imm``), the frame request's likewise (the operands above ``slot``); the
    widths at the small instance; op 7 is still refused LOC_QP_OP_ERR and ops 0..4 and a
    response carry no operands in their frame requests."""
    from metaroce.models.tx_sched import layouts, rsp_item
    lay = layouts()
    old_wr = ("op", "conn", "stream", "wr_id", "laddr", "va", "rkey", "length", "imm")
    assert [n for n, _ in lay.wr][:len(old_wr)] == list(old_wr)
    assert [n for n, _ in lay.wr][len(old_wr):] == ["swap", "compare"]
    assert lay.wr["swap"].offset == 260 and lay.wr.size == 388
    # MR-TXS-121: and the entropy generation after them (4 bits, 563 from 559)
    assert [n for n, _ in lay.frame][-5:] == ["slot", "swap", "compare", "gen", "lap"]
    # MR-TXS-411: and the entry's lap after it (MR-TXS-490: LAP_BITS)
    assert lay.frame["gen"].offset == 559 and lay.frame.size == 563 + records.LAP_BITS
    sem = TxSchedModel(**dict(SMALL, mtu=256))
    assert sem.wr(tc.wr_item(0, 0, 8, wr_id=1, op=7, swap=1))["status"] == STATUS_LOC_QP_OP_ERR
    for k, op in enumerate((OP_WRITE, OP_WRITE_IMM, OP_SEND, OP_SEND_IMM, OP_READ)):
        assert sem.wr(tc.wr_item(k % 2, k // 2 % 2, 300, wr_id=k, op=op, swap=5, compare=6)) is None
    assert sem.wr(rsp_item({"conn": 1, "stream": 0, "msg": 9, "laddr": 0, "length": 10, "err": 0},
                           sem.streams)) is None
    out = drain(sem)
    assert len(out) == 10 and all((f["swap"], f["compare"]) == (0, 0) for f, _ in out)


def test_atomic_first_frame_names_the_outstanding_read_row():
    """MR-TXS-101 (the response's placement, designed): the first transmission of each atomic
    carries every field of the outstanding-read row but ``wr_id`` (``conn``, ``mrdh_stream``,
    ``mrdh_msg``, ``laddr`` as base, ``reth_dma_len`` 8 as the length of the 8 original bytes);
    and the reference endpoint answers an atomic with an MR_READ_RESP of those 8 bytes
    (little-endian) named by the request's stream and message number."""
    from metaroce.models.tx_sched import OP_FETCH_ADD
    from metaroce.models.endpoint import Endpoint
    sem = TxSchedModel(**dict(SMALL, mtu=256))
    assert sem.wr(tc.wr_item(1, 1, 8, wr_id=4, op=OP_FETCH_ADD, laddr=0x7000, va=16, rkey=3,
                             swap=2)) is None
    (fr, _), = drain(sem)
    assert (fr["conn"], fr["mrdh_stream"], fr["mrdh_msg"], fr["laddr"], fr["reth_dma_len"]) == (
        1, 1, 0, 0x7000, 8) and not fr["mrdh_flags"] & MrdhFlag.RETX
    a, b = Endpoint("10.0.0.1", mtu=1024), Endpoint("10.0.0.2", mtu=1024)
    ca = a.connect(1, "10.0.0.2", 2, paths=1, streams=2)
    cb = b.connect(2, "10.0.0.1", 1, paths=1, streams=2)
    local, region = bytearray(8), bytearray((41).to_bytes(8, "little") + bytes(8))
    ca.post_atomic(1, "fetch_add", a.reg_mr(local), 0, 0, b.reg_mr(region), wr_id=4, add=2)
    from metaroce.models.loopback import Loopback
    seen = []
    orig = cb._frame

    def frame(*args):
        f = orig(*args)
        seen.append(f)
        return f
    cb._frame = frame
    Loopback(a, b, seed=1, delay=1.5e-6).run(until=0.001)
    rsp = [f for f in seen if f.bth.opcode == 0xC7]
    assert [(f.mrdh.stream, f.mrdh.msg, f.payload) for f in rsp] == [(1, 0, (41).to_bytes(8, "little"))]
    assert local == (41).to_bytes(8, "little") and region[:8] == (43).to_bytes(8, "little")


def test_endpoint_atomics_until_blocked():
    """MR-TXS-104, MR-TXS-051 (a): compare-and-swap and fetch-and-add posted between writes,
    sends and a READ on two streams, without ACKs: the scheduler's frame requests are the
    endpoint's field by field until both block, an atomic's operands its frame's payload."""
    msgs = [(0, 1500, None, False), (0, 8, None, "cas"), (0, 2100, None, True),
            (0, 8, None, "fadd"), (1, 700, 3, True), (1, 8, None, "fadd"), (1, 1025, None, "read"),
            (1, 8, None, "cas")]
    r = tc.endpoint_compare(2, msgs=msgs, loopback=False, streams=2, depth=4,
                            init_window_bdp=2.0)
    ops = [q["bth_opcode"] for q in r["requests"]]
    assert ops.count(0xC8) == 2 and ops.count(0xC9) == 2 and r["frames"] >= 10


@pytest.mark.parametrize("seed", [9, 18])
def test_endpoint_atomics_over_lossy_loopback(seed):
    """MR-TXS-100, MR-TXS-104, MR-TXS-051: atomics (a third of the messages, from a generator of
    their own) among writes, sends and READs over the lossy loopback: the scheduler's next
    packet is the endpoint's at every frame, resends included, an atomic's operands its payload
    (compare_frame), one atomic resent with a new PSN; every atomic executed once on the peer's
    region (endpoint_compare). (Seeds whose losses are all found by SACK gaps, as above.)"""
    import random
    rng = random.Random(seed)
    kind, rd, at = tc.kind_rng(seed), tc.read_rng(seed), tc.atomic_rng(seed)
    msgs = [(s, rng.randrange(30_000, 60_000), rng.choice([None, 7]), kind.random() < 0.5)
            for s in range(2) for _ in range(4)]
    msgs = [(s, n, None, "read") if rd.random() < 0.25 else (s, n, i, k) for s, n, i, k in msgs]
    msgs = [(m[0], 8, None, at.choice(("cas", "fadd"))) if at.random() < 0.35 else m
            for m in msgs]
    r = tc.endpoint_compare(seed, msgs=msgs, loopback=True, loss=0.05, drop_until=40e-6,
                            init_window_bdp=100.0, max_window_bdp=100.0)
    assert not r["stats"].get("tail_probes")
    ats = [q for q in r["requests"] if q["bth_opcode"] in (0xC8, 0xC9)]
    assert len(ats) >= 4 and any(q["mrdh_flags"] & MrdhFlag.RETX for q in ats)


def test_registered_candidates_rest_a_connection_one_cycle():
    """MR-TXS-033: a connection whose state changed at an edge (here: it sent a packet) sits out
    the next cycle's pick, so no connection has frames in two consecutive cycles; the other
    connection's registered action fills that cycle, so frames still leave back to back (the
    scheduler before MR-TXS-033 gave 18 same-connection pairs on this traffic)."""
    model = TxSchedCycleModel(64, **SMALL)
    items = tc.traffic(model.sem, 120, seed=1, bad=False)
    drv = tc.Driver(model.lay, items, seed=1, p_idle=0, p_bp=0, loss=0.0)
    frames = []
    while not drv.finished:
        inp = drv.inputs()
        out = model.step(inp)
        if out["m_frame__valid"] and inp["m_frame__ready"]:
            frames.append((drv.cycle, tc.unpack(model.lay.frame, out["m_frame__payload"])["conn"]))
        drv.observe(inp, out)
        drv.settle(model.busy)
    pairs = [(ca == cb) for (a, ca), (b, cb) in zip(frames, frames[1:]) if b == a + 1]
    assert len(frames) > 150 and not any(pairs) and len(pairs) > 50


def test_registered_report_takes_effect_a_cycle_later():
    """MR-TXS-034..036, MR-TXS-045, MR-TXS-046: a report taken on its port in cycle t is in its
    boundary register in t+1, in the report register in t+2 and the action of t+2; its chunk is
    counted in the window at the edge of t+3; its stream's completion test is registered in
    t+4, the completion picked in t+5 and taken in t+6; s_acked stays ready; a lost report
    waits in its boundary register while an acknowledged report is in the other, not for its
    connection's resend FIFO's room (MR-TXS-240; MR-TXS-246: the old rule's wait for it,
    counting a lost report held in the report register, as a negative control) (MR-TXS-156:
    s_resend stays ready, the next report waiting in the skid)."""
    model = TxSchedCycleModel(64, **SMALL)
    lay = model.lay
    wr = tc.wr_item(0, 0, 100, wr_id=5)
    idle = {"m_frame__ready": 1, "m_sent__ready": 1, "m_cqe__ready": 1}
    model.step(dict(idle, s_wr__valid=1, s_wr__payload=tc.pack(lay.wr, wr)))
    for _ in range(3):
        model.step(idle)
    sent = [e for e in model.events if e[0] == "packet"]
    assert len(sent) == 1
    rep = {"conn": 0, "path": sent[0][6], "slot": 0, "chunk": 0, "abort": 0, "lap": 0, "late": 0}
    n = len(model.events)
    out = model.step(dict(idle, s_acked__valid=1, s_acked__payload=tc.pack(lay.acked, rep)))
    assert out["s_acked__ready"] == 1 and model.events[n:] == [] and model.ba == rep
    model.step(idle)
    assert model.events[n:] == [] and model.ba is None and model.rep == (False, rep)
    model.step(idle)
    assert model.events[n:] == [("acked", rep)]
    assert model.win is not None and model.sem.q[0]["ring"][0]["ack_base"] == 0
    model.step(idle)
    assert model.win is None and model.sem.q[0]["ring"][0]["ack_base"] == 1
    assert model.events[n + 1:] == [] and model.comp is None and model.qcomp == []
    model.step(idle)
    assert model.events[n + 1:] == [] and model.comp is None and model.qcomp == [0]
    model.step(idle)
    assert model.events[n + 1:] == [] and model.comp == 0
    model.step(idle)
    assert model.events[n + 1:] == [("complete", 0)]
    # a lost report of connection 0 in the register, its FIFO one short of full
    model.sem.conn[0]["retx"].extend([(0, 0, 1)] * (SMALL["resend_depth"] - 1))
    lost = {k: v for k, v in rep.items() if k != "late"} | {"slot": 1}
    # an acknowledged report in its boundary register goes first: the lost one waits
    model.step(dict(idle, s_acked__valid=1, s_acked__payload=tc.pack(lay.acked, rep),
                    s_resend__valid=1, s_resend__payload=tc.pack(lay.report, lost)))
    assert model.ba == rep and model.br == lost and model.resend_ready() == 1
    assert not model.take_lost()
    model.step(idle)
    assert model.rep == (False, rep) and model.br == lost and model.take_lost()
    # the port takes the next lost report as the held one moves on; MR-TXS-240: it is taken
    # whatever its FIFO holds (full here, the one in the report register about to act)
    model.step(dict(idle, s_resend__valid=1, s_resend__payload=tc.pack(lay.report, lost)))
    assert model.rep == (True, lost) and model.br == lost
    retx = model.sem.conn[0]["retx"]     # (the scheduling steps drop the stale heads meanwhile)
    retx.clear()
    retx.extend([(0, 0, 1)] * SMALL["resend_depth"])
    assert model.take_lost() and model.resend_ready() == 1
    # MR-TXS-246: the rule before MR-TXS-240 (the negative control) waits for the room,
    # counting the lost report of the same connection in the report register
    model.lost_waits = True
    retx.pop()
    assert not model.take_lost()
    model.br = dict(lost, conn=1)
    assert model.take_lost()


def test_resend_skid_keeps_the_boundary_registers_order():
    """MR-TXS-156, MR-TXS-157: s_resend.ready is the skid's emptiness: a lost report offered
    while the boundary register holds one is taken into the skid (the port then not ready), and
    moves into the boundary register at the edge the held one is taken, the port ready again
    in the next cycle; with the boundary register free the port's report goes straight in."""
    model = TxSchedCycleModel(64, **SMALL)
    lay = model.lay
    idle = {"m_frame__ready": 1, "m_sent__ready": 1, "m_cqe__ready": 1}
    acked = {"conn": 0, "path": 0, "slot": 0, "chunk": 0, "abort": 0, "lap": 0, "late": 0}
    a, b, c = ({"conn": 1, "path": 0, "slot": k, "chunk": 0, "abort": 0, "lap": 0} for k in (1, 2, 3))

    def offer(**kw):
        step = dict(idle)
        for port, f in kw.items():
            step.update({f"s_{port}__valid": 1,
                         f"s_{port}__payload": tc.pack(getattr(lay, port, lay.report), f)})
        return step

    # an acknowledged report holds the boundary register's report for a cycle
    out = model.step(offer(acked=acked, resend=a))
    assert out["s_resend__ready"] == 1 and model.br == a and model.rs is None
    out = model.step(offer(resend=b))
    assert out["s_resend__ready"] == 1 and model.br == a and model.rs == b
    assert model.rep == (False, acked) and model.resend_ready() == 0 and model.busy()
    # not ready: c waits at the port; the held report is taken, the skid's moves on
    out = model.step(offer(resend=c))
    assert out["s_resend__ready"] == 0 and model.rep == (True, a) and model.br == b
    assert model.rs is None
    # ready again: c goes straight in as b is taken
    out = model.step(offer(resend=c))
    assert out["s_resend__ready"] == 1 and model.rep == (True, b) and model.br == c
    assert model.rs is None


def test_registered_work_request_is_the_next_cycles_action():
    """MR-TXS-037: a work request taken on s_wr in cycle t is the action of t+1; s_wr stays
    ready while the register's request is taken, so back-to-back requests go through one per
    cycle; a request on a full ring waits in the register (s_wr not ready) until a completion
    frees an entry, and is then the action of the cycle after the completion."""
    model = TxSchedCycleModel(64, **SMALL)
    lay = model.lay
    idle = {"m_frame__ready": 1, "m_sent__ready": 1, "m_cqe__ready": 1}

    def offer(wr):
        return dict(idle, s_wr__valid=1, s_wr__payload=tc.pack(lay.wr, wr))

    wrs = [tc.wr_item(0, 0, 100, wr_id=k) for k in range(6)]
    out = model.step(offer(wrs[0]))
    assert out["s_wr__ready"] == 1 and model.events == [] and model.wq == wrs[0]
    for k in range(1, 5):
        out = model.step(offer(wrs[k]))
        assert out["s_wr__ready"] == 1 and model.events[-1] == ("wr", wrs[k - 1])
    # four messages fill the ring; the fifth waits in the register while they are sent
    assert model.wq == wrs[4]
    for _ in range(10):
        out = model.step(offer(wrs[5]))
        assert out["s_wr__ready"] == 0 and model.wq == wrs[4]
    sent = [e for e in model.events if e[0] == "packet"]
    assert len(sent) == 4 and sum(e[0] == "wr" for e in model.events) == 4
    # the first message's packet acknowledged: it completes, then the held request goes
    rep = {"conn": 0, "path": sent[0][6], "slot": 0, "chunk": 0, "abort": 0, "lap": 0}
    out = model.step(dict(offer(wrs[5]), s_acked__valid=1,
                          s_acked__payload=tc.pack(lay.report, rep)))
    n = len(model.events)
    while not any(e[0] == "complete" for e in model.events[n:]):
        out = model.step(offer(wrs[5]))
        assert out["s_wr__ready"] == 0
    out = model.step(offer(wrs[5]))
    assert model.events[-1] == ("wr", wrs[4]) and out["s_wr__ready"] == 1 and model.wq == wrs[5]


def test_completion_test_registered_and_not_starved_by_sending():
    """MR-TXS-045: a stream's completion test is registered a cycle before the pick, the pick a
    cycle before the completion; a connection sending a long message (a packet every other
    cycle, MR-TXS-033) on one stream still completes its other stream's message while it sends:
    the cycle its registered test is set it takes no scheduling step, so its completion is not
    left out as touched in every cycle."""
    model = TxSchedCycleModel(64, **SMALL)
    lay, mtu = model.lay, SMALL["mtu"]
    idle = {"m_frame__ready": 1, "m_sent__ready": 1, "m_cqe__ready": 1}

    def sent(qi):
        return sum(1 for e in model.events if e[0] == "packet" and e[3] == qi)

    model.step(dict(idle, s_wr__valid=1, s_wr__payload=tc.pack(lay.wr, tc.wr_item(0, 1, 40 * mtu, wr_id=2))))
    while sent(1) < 3:
        model.step(idle)
    model.step(dict(idle, s_wr__valid=1, s_wr__payload=tc.pack(lay.wr, tc.wr_item(0, 0, 100, wr_id=1))))
    while not sent(0):
        model.step(idle)
    short = next(e for e in model.events if e[0] == "packet" and e[3] == 0)
    rep = {"conn": 0, "path": short[6], "slot": 0, "chunk": 0, "abort": 0}
    model.step(dict(idle, s_acked__valid=1, s_acked__payload=tc.pack(lay.report, rep)))
    seen = []                           # (cycle, qcomp before the step, events of the step)
    for cyc in range(40):
        qcomp, touched, n = list(model.qcomp), set(model.touched), len(model.events)
        model.step(idle)
        seen.append((cyc, qcomp, touched, model.events[n:]))
        if ("complete", 0) in model.events:
            break
    done = next(cyc for cyc, _, _, ev in seen if ("complete", 0) in ev)
    first_test = next(cyc for cyc, q, _, _ in seen if 0 in q)
    # the pick the cycle after the registered test, the completion the cycle after the pick
    assert done == first_test + 1
    # no scheduling step of connection 0 in a cycle its registered test is set and untouched
    for _, q, t, ev in seen:
        if q and 0 not in t:
            assert not any(e[0] == "packet" for e in ev)
    # the completion is taken while the long message is being sent: not after its 16-chunk
    # window stalls it (a connection that sends a packet every other cycle is touched at every
    # other edge, so without the rule its picked completion would be left out every time)
    before = sent(1)
    for _ in range(6):
        model.step(idle)
    assert 3 <= before < sent(1) < 16


def test_path_window_shrink_stops_the_path_and_grow_reopens_it():
    """MR-TXS-028, MR-CC-001, MR-TXS-025: a path's window shrunk to its bytes in flight or
    below stops new packets on that path and on no other; grown above them, the path takes
    packets again; a window above the bound of MR-TXS-001 is taken as the bound."""
    sem = TxSchedModel(**dict(SMALL, cwnd=1 << 20, conn_window=1 << 20))
    sem.wr(tc.wr_item(0, 0, 20 * 1024, wr_id=0))
    sem.wr(tc.wr_item(1, 0, 4 * 1024, wr_id=1))
    first = drain_n(sem, 4)
    assert [(s["conn"], s["path"]) for _, s in first] == [(0, 0), (1, 1), (0, 1), (1, 2)]
    # connection 0's path 1 holds 1,024 bytes: a window of 1,024 closes it, 0 closes path 2
    sem.set_cwnd(0, 1, 1024)
    sem.set_cwnd(0, 2, 0)
    mid = drain_n(sem, 8)
    assert [(s["conn"], s["path"]) for _, s in mid] == [(0, 3), (1, 3), (0, 0), (1, 0), (0, 3),
                                                        (0, 0), (0, 3), (0, 0)]
    # grown above its bytes in flight, path 1 takes one packet (its AckReq: the window filled)
    sem.set_cwnd(0, 1, 1025)
    more = drain_n(sem, 6)
    assert [s["path"] for _, s in more] == [1, 3, 0, 3, 0, 3] and more[0][0]["bth_ack_req"]
    sem.set_cwnd(0, 2, (1 << 24) - 1)
    assert sem.path[2]["cwnd"] == (1 << 24) - 1 - SMALL["mtu"]


def test_path_window_fill_term_uses_the_path_window():
    """MR-TXS-026, MR-TXS-028, MR-SEQ-009: the AckReq fill term is on the path's own window:
    with a window of 3 MTUs the packet after which its flight plus an MTU exceeds it (the
    third on that path, which fills it and closes it) asks for an ACK, on the other paths
    (1 MiB) none does."""
    sem = TxSchedModel(**dict(SMALL, cwnd=1 << 20, conn_window=1 << 20, ack_every=15))
    sem.set_cwnd(0, 0, 3 * 1024)
    sem.wr(tc.wr_item(0, 0, 40 * 1024, wr_id=0))
    out = drain_n(sem, 12)
    assert [f["bth_ack_req"] for f, s in out if s["path"] == 0] == [0, 0, 1]
    assert not any(f["bth_ack_req"] for f, s in out if s["path"] != 0)


def test_window_write_takes_effect_two_edges_later():
    """MR-TXS-029, MR-TXS-033: a write on s_cwnd (always ready) in cycle t changes the path's
    window at the edge of t+2, after that cycle's action, and touches its connection there."""
    model = TxSchedCycleModel(64, **SMALL)
    lay = model.lay
    idle = {"m_frame__ready": 1, "m_sent__ready": 1, "m_cqe__ready": 1}
    w = {"conn": 1, "path": 3, "cwnd": 777}
    out = model.step(dict(idle, s_cwnd__valid=1, s_cwnd__payload=tc.pack(lay.cwnd, w)))
    assert out["s_cwnd__ready"] == 1
    row = 1 * SMALL["paths"] + 3
    model.step(idle)
    assert model.sem.path[row]["cwnd"] == SMALL["cwnd"] and model.touched == set()
    model.step(idle)
    assert model.sem.path[row]["cwnd"] == 777 and model.touched == {1}
    assert model.events == [("cwnd", w)] and not model.busy()


def test_window_schedule_closes_one_path_for_a_while():
    """MR-TXS-028/029, MR-CC-001: through the cycle model and the closed loop, a window of 0
    written in cycle 20 for connection 0's path 2 stops its packets from cycle 23 (the write
    acts at the edge of 22) until the window of 1 MiB written in cycle 60 acts (edge of 62);
    the other paths and the other connection send meanwhile, and every work request completes."""
    model = TxSchedCycleModel(64, **SMALL)
    items, writes = tc.window_schedule_case(model.sem)
    drv = tc.WindowSchedule(model.lay, items, writes, seed=0, p_idle=0, p_bp=0.2, loss=0.0)
    pk = tc.packets_by_cycle(model, drv)
    tc.check(TxSchedModel(**SMALL), items, drv.res)
    closed = [(c, p) for k, c, p in pk if 23 <= k <= 62]
    assert (0, 2) not in closed and {(0, 0), (0, 1), (0, 3), (1, 2)} <= set(closed)
    assert any((c, p) == (0, 2) for k, c, p in pk if k < 23)
    assert any((c, p) == (0, 2) for k, c, p in pk if k > 62)


def test_window_storm_writes_meet_the_paths_actions():
    """MR-TXS-029, MR-TXS-052: the storm schedule (connection 0 on path 0 alone, its window
    rewritten in about half the cycles, runs of consecutive writes) makes writes act at the
    edges of that path's packets and reports (the room's third operand) on the cycle model:
    more than 10 of each, and the checker passes. The same schedule runs in lockstep with the
    RTL in test_tx_sched_amaranth.py."""
    model = TxSchedCycleModel(64, **SMALL)
    items, writes = tc.window_storm_case(model.sem)
    hits = {"packet": 0, "report": 0}
    orig = model.step

    def step(inp):
        k = len(model.events)
        out = orig(inp)
        ev = model.events[k:]
        for w in (e[1] for e in ev if e[0] == "cwnd"):
            row = (w["conn"], w["path"])
            hits["packet"] += sum(1 for e in ev if e[0] == "packet" and (e[1], e[6]) == row)
            hits["report"] += sum(1 for e in ev if e[0] in ("acked", "resend")
                                  and (e[1]["conn"], e[1]["path"]) == row)
        return out

    model.step = step
    drv = tc.WindowSchedule(model.lay, items, writes, seed=0, p_idle=0, p_bp=0.2, loss=0.1)
    pk = tc.packets_by_cycle(model, drv)
    tc.check(TxSchedModel(**SMALL), items, drv.res)
    assert hits["packet"] > 10 and hits["report"] > 10
    assert {p for _, c, p in pk if c == 0 and _ >= 3} == {0}


@pytest.mark.parametrize("conns,paths", [(2, 4), (4, 2), (256, 8)])
def test_window_port_is_a_field_subset_of_cwnd_update(conns, paths):
    """MR-TXS-028: s_cwnd's payload is the fields conn, path and cwnd of the Cwnd block's
    m_update (hw-cwnd.md MR-CW-002) with their widths, for the same connections and paths, so
    the join assigns those three fields by name; m_update's wsum and debt are the only fields
    left out."""
    from metaroce.models import cwnd as cw_model
    from metaroce.models.tx_sched import layouts
    upd = dict(cw_model.layouts(conns, paths).update)
    ours = dict(layouts(conns=conns, streams=2, paths=paths, depth=4).cwnd)
    assert set(ours) == {"conn", "path", "cwnd"} and set(upd) - set(ours) == {"wsum", "debt"}
    assert all(ours[k].shape == upd[k].shape for k in ours)


def test_read_row_from_first_frame():
    """MR-TXS-065 (the outstanding-read row, designed): the first transmission of each READ
    request (MR_READ without RETX) carries every field of the RX's table 6 row but ``wr_id``
    (models.rx.layouts().rd: ``msg``, ``base``, ``length``; the row's address from ``conn``,
    ``mrdh_stream`` and ``mrdh_msg``), so the engine top can write the row from it; each READ's
    first frame request comes once, before any resend of it."""
    from collections import defaultdict

    from metaroce.models.rx import layouts as rx_layouts
    model = TxSchedCycleModel(64, **SMALL)
    items = tc.traffic(model.sem, 60, seed=4, reads=0.5)
    res = tc.run_model(model, items, seed=4, p_bp=0.3)
    sem = TxSchedModel(**SMALL)
    posted = defaultdict(list)
    for w in items:
        if sem.wr_status(w) == 0:
            posted[(w["conn"], w["stream"])].append(w)
    want = {(c, s, n): {"msg": n, "base": w["laddr"], "length": w["length"]}
            for (c, s), ws in posted.items() for n, w in enumerate(ws) if w["op"] == OP_READ}
    rows, seen = {}, set()
    for fr in res["frames"]:
        if fr["bth_opcode"] != 0xC6:
            continue
        key = (fr["conn"], fr["mrdh_stream"], fr["mrdh_msg"])
        if not fr["mrdh_flags"] & MrdhFlag.RETX:
            assert key not in seen and key not in rows, "one first transmission per READ"
            rows[key] = {"msg": fr["mrdh_msg"], "base": fr["laddr"], "length": fr["reth_dma_len"]}
        else:
            assert key in rows, "a READ's resend after its first transmission"
        seen.add(key)
    assert len(want) >= 10 and rows == want
    # MR-RX-159: the row's `op` (READ or an atomic) is the frame's opcode
    assert set(rows[next(iter(rows))]) | {"valid", "wr_id", "op"} == set(rx_layouts().rd.members)


def test_read_response_entry():
    """MR-TXS-066..070, MR-TXS-072: a READ response taken from s_rsp is an entry of the last
    stream's ring (shared with that stream's work requests)
    with the requester's message number (the stream's msg_next and send_seq untouched: the
    write after it is message 0 with the next ring entry, so its slot is not msg mod depth,
    MR-TXS-069); its frames are MR_READ_RESP with the requester's stream, message, offsets,
    message length and the local address; a refused one is one packet, FIRST, LAST and ERROR,
    no payload, message length 0; each completes as a record for m_rsp_done (the requester's
    stream, the message number), not a host completion."""
    sem = TxSchedModel(**SMALL)
    S = sem.streams
    r_ok = {"conn": 1, "stream": 0, "msg": 0xDEAD, "laddr": 0x9000, "length": 2100, "err": 0}
    r_err = {"conn": 1, "stream": 1, "msg": 5, "laddr": 0x100, "length": 4000, "err": 1}
    for r in (r_ok, r_err):
        assert sem.wr(rsp_item(r, S)) is None
    assert sem.wr(tc.wr_item(1, S - 1, 10, wr_id=9, op=OP_SEND)) is None
    q = sem.q[sem.qi(1, S - 1)]
    assert (q["tail"], q["msg_next"], q["send_seq"]) == (3, 1, 1)
    out = drain(sem)
    rf = [(f, s) for f, s in out if f["bth_opcode"] == 0xC7]
    b0 = (S - 1) * sem.depth                # the ring's first slot
    assert [(f["mrdh_stream"], f["mrdh_msg"], f["mrdh_offset"], f["payload_len"], f["mrdh_flags"],
             f["mrdh_msg_len"], f["laddr"], f["slot"]) for f, _ in rf] == [
        (0, 0xDEAD, 0, 1024, MrdhFlag.FIRST, 2100, 0x9000, b0),
        (0, 0xDEAD, 1024, 1024, 0, 2100, 0x9000, b0),
        (0, 0xDEAD, 2048, 52, MrdhFlag.LAST, 2100, 0x9000, b0),
        (1, 5, 0, 0, MrdhFlag.FIRST | MrdhFlag.LAST | MrdhFlag.ERROR, 0, 0x100, b0 + 1)]
    assert all((f["reth_va"], f["reth_rkey"], f["mrsh_recv_seq"], f["imm_imm"]) == (0, 0, 0, 0)
               for f, _ in rf)
    send = [f for f, _ in out if f["bth_opcode"] == 0xC2]
    assert [(f["mrdh_msg"], f["mrsh_recv_seq"], f["slot"]) for f in send] == [(0, 0, b0 + 2)]
    for f, s in out:
        sem.report({"conn": s["conn"], "path": s["path"], "slot": s["slot"], "chunk": s["chunk"],
                    "abort": 0}, lost=False)
    done = []
    while (qi := sem.completion()) is not None:
        done.append(sem.complete(qi))
    assert [(d["stream"], d["length"], d.get("rsp", 0)) for d in done] == [
        (0, 0xDEAD, 1), (1, 5, 1), (S - 1, 10, 0)]


@pytest.mark.parametrize("seed,kw", [(1, dict(reads=[(0, 1500), (0, 0), (1, 1025), (1, 3000)],
                                               bad=(3,))), (0, {})])
def test_endpoint_compare_read_responses(seed, kw):
    """MR-TXS-071: the reference endpoint serving a peer's READs over the loopback and the
    scheduler given each response where the endpoint executes the READ: the same frame
    requests field by field (asserted by ``endpoint_responses``), a refused READ's ERROR frame
    among them; every response's record once its chunks are acknowledged."""
    r = tc.endpoint_responses(seed, **kw)
    assert r["frames"] >= len(r["reads"]) and len(r["done"]) == len(r["reads"])
    assert all(q["bth_opcode"] == 0xC7 for q in r["requests"])
    assert bool(kw) == any(q["mrdh_flags"] & MrdhFlag.ERROR for q in r["requests"])


def _two_packets():
    """A write of 8 chunks on connection 0: two packets sent (on paths 0 and 1)."""
    sem = TxSchedModel(**SMALL)
    assert sem.wr(tc.wr_item(0, 0, 8000, wr_id=1, laddr=0x1000, va=0x2000, rkey=9)) is None
    sent = [sem.apply(sem.decide()) for _ in range(2)]
    return sem, sent


def test_probe_resends_the_newest_packet_as_is():
    """MR-TXS-080, MR-TXS-081: a probe of a path's newest PSN gives that packet's frame request
    as it was (same PSN, path, chunk, offset, bytes, fields), AckReq and RETX set; no sent event,
    and no count changes (next PSN, bytes and packets in flight, the connection's flight)."""
    sem, sent = _two_packets()
    (f0, s0), (f1, s1) = sent
    before = ([dict(p) for p in sem.path], [dict(c, retx=list(c["retx"])) for c in sem.conn])
    for f, s in sent:
        pr = sem.probe({"conn": 0, "path": s["path"], "psn": s["psn"]})
        assert pr == dict(f, bth_ack_req=1, mrdh_flags=f["mrdh_flags"] | MrdhFlag.RETX)
    assert ([dict(p) for p in sem.path], [dict(c, retx=list(c["retx"])) for c in sem.conn]) == before


def test_probe_dropped_when_not_the_newest_or_resolved():
    """MR-TXS-082: a probe is dropped (None) when its path is beyond the instance, its PSN is not
    the path's newest, the path has no packet in flight (the probed packet was resolved by a
    report after the unit's check; whichever report took the count to 0, MR-TXS-087), or the
    packet's message failed (MR-TXS-027) or completed."""
    sem, sent = _two_packets()
    f0, s0 = sent[0]
    pr = {"conn": 0, "path": s0["path"], "psn": s0["psn"]}
    assert sem.probe(dict(pr, path=SMALL["paths"])) is None
    assert sem.probe(dict(pr, psn=s0["psn"] + 1)) is None
    # a newer packet on the same path: the probed PSN is not the newest any more
    sem2, _ = _two_packets()
    for _ in range(SMALL["paths"] - 1):
        f, s = sem2.apply(sem2.decide())
    assert s["path"] == s0["path"] and sem2.probe(pr) is None
    assert sem2.probe(dict(pr, psn=s["psn"])) is not None
    # resolved: the report of the path's packet
    rep = {"conn": 0, "path": s0["path"], "slot": s0["slot"], "chunk": s0["chunk"], "abort": 0}
    assert sem.probe(pr) is not None
    sem.report(rep, lost=False)
    assert sem.probe(pr) is None
    # failed
    sem, sent = _two_packets()
    sem.fail(sem.fail_targets({"conn": 0, "slot": s0["slot"], "status": 4, "lap": s0["lap"]}))
    assert sem.probe(pr) is None
    # completed (a message of one chunk, acknowledged): the record names no live message
    sem = TxSchedModel(**SMALL)
    sem.wr(tc.wr_item(0, 0, 100, wr_id=1))
    f, s = sem.apply(sem.decide())
    pr = {"conn": 0, "path": s["path"], "psn": s["psn"]}
    sem.report({"conn": 0, "path": s["path"], "slot": s["slot"], "chunk": 0, "abort": 0},
               lost=False)
    sem.path[s["path"]]["pkts"] = 1             # as if a second report of it were still due
    assert sem.complete(sem.completion())["status"] == 0 and sem.probe(pr) is None


@pytest.mark.parametrize("seed,paths", [(1, 2), (5, 2), (2, 4), (5, 4)])
def test_endpoint_tail_probes(seed, paths):
    """MR-TXS-093 (MR-TXS-080..082, MR-REL-010): the endpoint's writes and sends over a loopback
    that loses 3 % of the data frames and 30 % of the ACKs: at each expiry of its tail-loss
    timer the retransmit unit's semantics decide as it does (a probe, or a timeout whose lost
    records are reported), each probe goes to the scheduler, and every frame of the endpoint,
    its tail probes included, is the scheduler's (descriptor fields; the bytes through the
    data path are MR-TX-180's test)."""
    r = tc.endpoint_probes(seed, paths=paths)
    assert r["probes"] >= 2 and r["frames"] == r["stats"]["data_packets_sent"]
    assert r["probes"] == r["stats"]["tail_probes"]


def test_endpoint_resends_on_tail_probed_paths():
    """MR-TXS-083: the endpoint keeps a tail-probed path active: resends go on it before its
    probe is answered (here one of the 6 resends of seed 2 on 4 paths), and the scheduler, which
    does the same, sends the endpoint's frames; a rule keeping resends off a tail-probed path
    would have differed there."""
    r = tc.endpoint_probes(2, paths=4)
    n, on = tc.resends_on_probed_paths(r["events"])
    assert n and on


@pytest.mark.slow
def test_endpoint_tail_probes_sweep():
    """MR-TXS-093, MR-TXS-125, MR-TX-206: the lost-ACK comparison over seeds 0..49 on 2 and 4
    paths: 95 of the 100 runs agree on every frame (99 before late44's late reports, 97 before
    the health ages, 78 before the path verdicts), tail probes included (435 of them); the
    five left part after a late ACK whose chunk the endpoint counts and the scheduler does not
    (MR-TXS-447: ``Diverged`` "late"; seed 19 on 4 paths among them, which with the chunk
    counted parts at an expiry where the endpoint no longer holds the message of the path's
    newest packet and times out where the unit probes, MR-TX-206)."""
    n = tc.endpoint_probe_sweep(range(50))
    assert n["agree"] >= 95 and n["probes"] >= 430, n
    assert not n.get("other") and n["agree"] + sum(n.get(k, 0) for k in (
        "late", "after_timeout", "health")) == 100, n


@pytest.mark.parametrize("seed", [6, 38])
def test_endpoint_health_ages(seed):
    """MR-TX-203, MR-TX-206: runs on 4 paths that parted before the unit's health age (seed 6:
    the endpoint times out, every other path's last ACK older than its 4 RTTs, where the health
    bits alone probe; seed 38: a reroute at the endpoint, a suspicion on the bits alone) agree
    frame for frame with the ages; without them (``unit_ages=False``) they part again."""
    r = tc.endpoint_probes(seed, paths=4)
    assert r["frames"] == r["stats"]["data_packets_sent"] and r["stats"]["timeouts"]
    with pytest.raises(tc.Diverged):
        tc.endpoint_probes(seed, paths=4, unit_ages=False)


def test_endpoint_probe_of_a_completed_message():
    """MR-TX-206: the one run of the sweep left (seed 19 on 4 paths) parts at an expiry, not at
    an age: the endpoint's newest record on the path belongs to a message it no longer holds,
    so it times out where the unit (which knows no messages) probes. MR-TXS-491 (live46): the
    scheduler counts the late ACK's chunk as the endpoint does, as the unit reports it (flagged
    late), so the run parts there, as with ``late_counted``; until live46 it parted earlier
    (kind "late", frame 169, MR-TXS-447)."""
    for late_counted in (False, True):
        with pytest.raises(tc.Diverged) as e:
            tc.endpoint_probes(19, paths=4, late_counted=late_counted)
        assert e.value.kind == "decision" and "decides probe" in str(e.value)


@pytest.mark.parametrize("seed,paths", [(6, 2), (8, 2), (2, 4), (11, 4)])
def test_endpoint_path_verdicts(seed, paths):
    """MR-TXS-125, MR-TXS-114..117 (MR-PATH-001/002/005): runs of the lost-ACK comparison whose
    endpoint times a path out and suspects it (another path healthy) or reroutes it: the unit's
    verdicts given to the scheduler, every frame after them is the endpoint's (the suspected
    path's one packet at a time with AckReq, no resend on it, its restore by the ACK of its
    packet). These runs parted at the first frame after the timeout before the path states.
    MR-TXS-249: the replay's scheduler keeps the last active path (MR-TXS-290). MR-TXS-491:
    seed 11 on 4 paths has a late ACK (a timed-out packet's) whose chunk the endpoint counts;
    the scheduler counts it too (live46; until then the run parted at frame 179, kind "late",
    MR-TXS-447) and the run agrees to the end."""
    a, _, ca, _ = tc._endpoint_pair(paths, 2)
    assert tc._model_for(a, ca, 2, 2, 4).last_active_kept
    r = tc.endpoint_probes(seed, paths=paths)
    st = r["stats"]
    assert st["timeouts"] and st.get("paths_suspected") and r["frames"] == st["data_packets_sent"]


def _one_path_sem(paths_state=None):
    """A write of 8 chunks on connection 0 of the small instance (4 paths)."""
    sem = TxSchedModel(**SMALL)
    assert sem.wr(tc.wr_item(0, 0, 8000, wr_id=1)) is None
    return sem


def test_suspected_path_one_packet_at_a_time():
    """MR-TXS-113, MR-TXS-114, MR-TXS-116, MR-TXS-117 (MR-PATH-002/005): a SUSPECT verdict makes
    path 0 probing: it takes a new chunk only with nothing in flight, with AckReq, never a
    resend (a resend waits for an active path); an acknowledged report of its packet restores
    it (active); a lost report does not."""
    sem = _one_path_sem()
    sem.path_event({"conn": 0, "path": 0, "verdict": P.PATH_SUSPECT})
    assert sem.path[0]["state"] == PATH_PROBING
    sent = [sem.apply(sem.decide()) for _ in range(6)]
    on0 = [(f, s) for f, s in sent if s["path"] == 0]
    assert len(on0) == 1 and on0[0][0]["bth_ack_req"] == 1
    # only the other paths while its packet is in flight
    assert [s["path"] for _, s in sent] == [0, 1, 2, 3, 1, 2]
    # a lost report: no restore; its resend does not go on path 0 although it is empty
    f0, s0 = on0[0]
    rep = {"conn": 0, "path": 0, "slot": s0["slot"], "chunk": s0["chunk"], "abort": 0}
    sem.report(rep, lost=True)
    assert sem.path[0]["state"] == PATH_PROBING and sem.path[0]["pkts"] == 0
    act = sem.decide()
    assert act[2] == "resend" and act[6] != 0
    for p in (1, 2, 3):                         # every active path full: the resend waits
        sem.path[p]["pkts"] = SMALL["path_pkts"]
    assert sem.decide() is None
    # an acknowledged report of the path's packet (a late ACK): active again
    sem.report(rep, lost=False)
    assert sem.path[0]["state"] == PATH_ACTIVE and sem.path_ok(sem.path[0], True)


def test_late_report_restores_probing_path_releases_no_flight():
    """MR-TXS-446, MR-TXS-447, MR-TXS-491: a late acknowledged report (MR-TXS-445: its record a
    timeout reported lost) of a probing path's packet restores the path (active, its restore
    pending, MR-TXS-116/184), releases no path's or the connection's flight, no packet count,
    keeps its entry's `out` (its resend's), and (since live46) counts its chunk acknowledged.
    Control: the same report not flagged (the unit before stl43) takes the connection's flight
    and the entry's `out` too."""
    def run(late):
        sem = _one_path_sem()
        sem.path_event({"conn": 0, "path": 0, "verdict": P.PATH_SUSPECT})
        sent = [sem.apply(sem.decide()) for _ in range(6)]
        (_, s0), = [(f, s) for f, s in sent if s["path"] == 0]
        rep = {"conn": 0, "path": 0, "slot": s0["slot"], "chunk": s0["chunk"], "abort": 0}
        sem.report(rep, lost=True)              # the timeout's report: its flight leaves
        act = sem.decide()
        assert act[2] == "resend"
        sem.apply(act)                          # its resend on an active path
        e = sem.entry_of(0, s0["slot"])
        before = ([(ps["inflight"], ps["pkts"]) for ps in sem.path], sem.conn[0]["inflight"],
                  e["out"], e["ack_base"], e["ack_bits"])
        sem.report(dict(rep, late=int(late)), lost=False)
        after = ([(ps["inflight"], ps["pkts"]) for ps in sem.path], sem.conn[0]["inflight"],
                 e["out"], e["ack_base"], e["ack_bits"])
        assert sem.path[0]["state"] == PATH_ACTIVE and sem.path[0]["rst"]
        return before, after
    before, after = run(True)
    assert after[:3] == before[:3] and after[3:] != before[3:]
    before, after = run(False)
    assert after[1] < before[1] and after[2] == before[2] - 1 and after[3:] != before[3:]


def test_rerouted_path_window_of_one_mtu():
    """MR-TXS-115: a REROUTE verdict keeps path 0 active with a window of one MTU until its next
    acknowledged report: one packet of 1,024 bytes, then none while it is in flight; its
    AckReq set (the packet fills the window); the state unchanged by the reroute, the window its
    own again after the ACK."""
    sem = _one_path_sem()
    sem.path_event({"conn": 0, "path": 0, "verdict": P.PATH_REROUTE})
    assert sem.path[0]["state"] == PATH_ACTIVE and sem.path[0]["col"]
    sent = [sem.apply(sem.decide()) for _ in range(6)]
    on0 = [(f, s) for f, s in sent if s["path"] == 0]
    assert len(on0) == 1 and on0[0][0]["bth_ack_req"] == 1
    s0 = on0[0][1]
    sem.report({"conn": 0, "path": 0, "slot": s0["slot"], "chunk": s0["chunk"], "abort": 0},
               lost=False)
    assert not sem.path[0]["col"] and sem.window(sem.path[0]) == SMALL["cwnd"]
    # a reroute of a probing path keeps it probing (the endpoint's _verdict)
    sem.path_event({"conn": 0, "path": 1, "verdict": P.PATH_SUSPECT})
    sem.path_event({"conn": 0, "path": 1, "verdict": P.PATH_REROUTE})
    assert sem.path[1]["state"] == PATH_PROBING
    # KEEP changes nothing here (the windows', hw-cwnd.md section 8); beyond the instance ignored
    sem.path_event({"conn": 0, "path": 2, "verdict": P.PATH_KEEP})
    sem.path_event({"conn": 0, "path": SMALL["paths"], "verdict": P.PATH_SUSPECT})
    assert sem.path[2]["state"] == PATH_ACTIVE and not sem.path[2]["col"]


def test_retired_path_probing_with_a_new_entropy():
    """MR-TXS-120, MR-TXS-121 (MR-PATH-003/005): without the unit's probe timer (hw-tx.md section 1.5c) a
    RETIRE verdict makes the path probing at once, with a new entropy (the endpoint reroutes a
    retired path when it probes it): one packet at a time, its frame requests' ``gen`` counted
    up by each new-route verdict (SUSPECT, REROUTE, RETIRE; not KEEP)."""
    sem = _one_path_sem()
    assert sem.apply(sem.decide())[0]["gen"] == 0
    for v, gen in ((P.PATH_SUSPECT, 1), (P.PATH_KEEP, 1), (P.PATH_REROUTE, 2), (P.PATH_RETIRE, 3)):
        sem.path_event({"conn": 0, "path": 1, "verdict": v})
        assert sem.path[1]["gen"] == gen and sem.path[1]["state"] == PATH_PROBING
    sent = [sem.apply(sem.decide()) for _ in range(5)]
    on1 = [f for f, s in sent if s["path"] == 1]
    assert len(on1) == 1 and on1[0]["gen"] == 3 and on1[0]["bth_ack_req"] == 1
    assert all(f["gen"] == 0 for f, s in sent if s["path"] != 1)
    assert PATH_RETIRED not in [p["state"] for p in sem.path]


@pytest.mark.parametrize("verdict", [P.PATH_SUSPECT, P.PATH_RETIRE])
def test_last_active_path_rerouted_not_probing(verdict):
    """MR-TXS-290, MR-TXS-291 (MR-PATH-001/004): suspicions make paths 0..2 probing; the same
    verdict on path 3, the connection's last active path, is a reroute: path 3 stays active,
    collapsed, with a new generation; a resend then goes on it. An ACK of path 0 (restored,
    active) makes a later verdict on path 3 a suspicion again. Without ``last_active_kept``
    (MR-TXS-296's rule before) path 3 probes and the resend finds no path."""
    for kept in (True, False):
        sem = TxSchedModel(**SMALL, last_active_kept=kept)
        assert sem.wr(tc.wr_item(0, 0, 8000, wr_id=1)) is None
        sent = [sem.apply(sem.decide()) for _ in range(4)]
        for p in range(3):
            sem.path_event({"conn": 0, "path": p, "verdict": P.PATH_SUSPECT})
        sem.path_event({"conn": 0, "path": 3, "verdict": verdict})
        ps = sem.path[3]
        assert ps["gen"] == 1
        if not kept:
            assert ps["state"] == PATH_PROBING
        else:
            assert ps["state"] == PATH_ACTIVE and ps["col"] == 1
        # every packet lost: a resend queued, nothing in flight
        for _, s in sent:
            sem.report({"conn": 0, "path": s["path"], "slot": s["slot"], "chunk": s["chunk"],
                        "abort": 0}, lost=True)
        act = sem.decide()
        if not kept:
            assert act is None                  # MR-TXS-245's stall: every path probing
            continue
        assert act[2] == "resend" and act[6] == 3
        sem.path[3]["state"] = PATH_ACTIVE
        sem.path[0]["state"] = PATH_ACTIVE      # an ACK restored path 0 (MR-TXS-116)
        sem.path_event({"conn": 0, "path": 3, "verdict": verdict})
        assert sem.path[3]["state"] == PATH_PROBING


@pytest.mark.parametrize("form", ["guard", "live46"])
def test_late_report_after_a_full_ring_of_laps_counts_nothing(form):
    """MR-TXS-486, MR-TXS-495/496 (live47; issue 12: MR-TXS-493's limitation): message 0's
    packet A (path a) times out and is reported lost, its resend is acknowledged and message 0
    completes; path a's ACKs stop (its window 0: nothing else is sent on it), A waits in its
    lost prefix while the stream takes 2^LAP_BITS x depth messages, the last, C, having A's slot
    and lap (MR-TXS-490's identity wrapped); C is sent on another path. Then A's ACK comes,
    reported late: path a's quiet count (the connection's completions since its last
    acknowledged report not late) is at the cap, so the report changes nothing but its path's
    evidence; C times out, is resent and completes on its own packet's ACK. Negative control
    (``live46``: ``late_guard`` False, the rule without the count): A's report counts C's chunk,
    and on C's timeout C completes with success, its one packet never acknowledged."""
    sem, rtx, send, feed, ack = _unit_and_scheduler(late_guard=form == "guard")
    n = sem.ring_mod
    sem.wr(tc.wr_item(0, 0, 100, wr_id=0))
    a = send()
    timed_out, error = rtx.timeout(0, a["path"])
    assert not error
    feed(timed_out)
    sem.set_cwnd(0, a["path"], 0)
    ack(send())
    assert sem.complete(sem.completion())["wr_id"] == 0
    for k in range(1, n + 1):
        sem.wr(tc.wr_item(0, 0, 100, wr_id=k))
        c = send()
        if k < n:
            ack(c)
            assert sem.complete(sem.completion())["wr_id"] == k
    assert (c["slot"], c["lap"]) == (a["slot"], a["lap"]) and c["path"] != a["path"]
    assert sem.path[a["path"]]["quiet"] == sem.late_cap == n - SMALL["depth"] + 1
    e = sem.entry_of(0, c["slot"], c["lap"])
    late = rtx.ack(rc_ack(a["conn"], a["path"], P.psn_add(a["psn"], 1), 0, psn=a["psn"])[1])
    assert [(d.kind, d.late, d.slot, d.lap) for d in late] == [("acked", 1, c["slot"], c["lap"])]
    feed(late)
    assert sem.path[a["path"]]["state"] == PATH_ACTIVE          # its path's evidence either way
    assert sem.chunk_acked(e, 0) == (form == "live46")
    lost_c, _ = rtx.timeout(0, c["path"])
    feed(lost_c)                                    # C's flight leaves; nothing of it in flight
    if form == "live46":
        # the wrong form: C completes with success on A's acknowledgement
        assert sem.complete(sem.completion()) == {**sem.cqe_of(e, 0)} and e["wr_id"] == n
        return
    assert sem.completion() is None
    c2 = send()
    assert (c2["slot"], c2["lap"], c2["chunk"]) == (c["slot"], c["lap"], 0)
    ack(c2)
    assert sem.complete(sem.completion())["wr_id"] == n
    assert sem.path[c2["path"]]["quiet"] == 1 and sem.path[a["path"]]["quiet"] == sem.late_cap


@pytest.mark.parametrize("completions", [2, 3])
def test_late_report_counts_below_the_quiet_cap(completions):
    """MR-TXS-487, MR-TXS-495 (the bound's edge, ``late_cap`` 3: a smaller cap is as safe):
    message 0 (stream 0) has its packet A time out on path a; the connection completes
    ``completions`` messages of stream 1 (so path a's quiet count is that many: path a has no
    acknowledged report not late since); A's late report then names message 0, still live.
    Below the cap (2) it counts its chunk; at the cap (3) it counts nothing (the count cannot
    tell the present message from one 2^LAP_BITS x depth later: a late chunk given up, never a
    wrong one), and message 0 completes on its resend's ACK either way."""
    sem, rtx, send, feed, ack = _unit_and_scheduler(late_cap=3)
    sem.wr(tc.wr_item(0, 0, 100, wr_id=0))
    a = send()
    feed(rtx.timeout(0, a["path"])[0])
    sem.set_cwnd(0, a["path"], 0)
    e = sem.entry_of(0, a["slot"], a["lap"])
    resend = send()                                 # A's chunk, resent on another path
    assert resend["slot"] == a["slot"] and resend["path"] != a["path"]
    sem.set_cwnd(0, resend["path"], 0)              # no other ACK of its path before its own
    for k in range(completions):
        sem.wr(tc.wr_item(0, 1, 100, wr_id=10 + k))
        ack(send())
        assert sem.complete(sem.completion())["wr_id"] == 10 + k
    assert sem.path[a["path"]]["quiet"] == completions
    feed(rtx.ack(rc_ack(a["conn"], a["path"], P.psn_add(a["psn"], 1), 0, psn=a["psn"])[1]))
    assert sem.chunk_acked(e, 0) == (completions < 3)
    assert sem.completion() is None                 # the resend still in flight (MR-TXS-492)
    ack(resend)
    assert sem.complete(sem.completion())["wr_id"] == 0
