"""TX scheduler, first slice: work requests in, per-stream queues, round robin over connections
and streams with resends first, chunking at the MTU, a PSN per path, path choice by window room;
frame requests and sent events out (docs/spec/hw-tx-sched.md, MR-TXS-*).

``TxSched(width=64, *, conns, streams, paths, depth, chunk_window, mtu, cwnd, conn_window,
path_pkts, ack_every, resend_depth)`` (MR-TXS-001). Ports (MR-TXS-002), all
``amaranth.lib.stream``:

========== ====== ========================================================================
port       dir    meaning
========== ====== ========================================================================
s_wr       in     a work request {op, conn, stream, wr_id, laddr, va, rkey, length, imm}
s_acked    in     the retransmit unit's ``m_acked``: a record acknowledged
s_resend   in     the retransmit unit's ``m_resend``: a record lost, its chunk to resend
m_frame    out    a frame request (the frame builder's descriptor fields the scheduler owns)
m_sent     out    the retransmit unit's ``s_sent``: a data packet was sent
m_cqe      out    a completion {conn, stream, wr_id, status, op, length}
now        in     the engine's nanosecond clock (the sent events' ``t_sent``)
========== ====== ========================================================================

One action per cycle in a fixed priority (MR-TXS-030); every decision is combinational on
registers and LUT RAM; the outputs leave through 4-slot queues (MR-TXS-031).

Golden model: :class:`metaroce.models.tx_sched.TxSchedCycleModel`, cycle by cycle.
"""
from amaranth.hdl import Array, Cat, Const, Module, Mux, Signal
from amaranth.lib import data, fifo, memory, stream, wiring
from amaranth.lib.wiring import In, Out

from ..models import protocol as P
from ..models import records
from ..models.tx_sched import (OP_WRITE_IMM, OUT_DEPTH, SMALL, STATUS_LOC_LEN_ERR,
                               STATUS_LOC_QP_OP_ERR, check_params, layouts)
from ..models.wire import MrdhFlag, Op

__all__ = ["TxSched", "tx_sched_small"]


def _bits(n):
    return max(1, (n - 1).bit_length())


def _first_from(valid, start, n):
    """MR-TXS-023: ``(any, index)`` of the first set bit of ``valid`` (``n`` Values, a power of
    two) at or after ``start``, wrapping (a round-robin pick)."""
    if n == 1:
        return valid[0], Const(0, 1)
    nb = _bits(n)
    vec = Cat(*valid)
    found = Const(0, 1)
    idx = Const(0, nb)
    for k in reversed(range(n)):
        j = (start + k)[:nb]
        v = vec.bit_select(j, 1)
        idx = Mux(v, j, idx)
        found = found | v
    return found, idx


def _first(valid):
    """``(any, index)`` of the lowest set bit of ``valid``."""
    nb = _bits(len(valid))
    found = Const(0, 1)
    idx = Const(0, nb)
    for k in reversed(range(len(valid))):
        idx = Mux(valid[k], k, idx)
        found = found | valid[k]
    return found, idx


class TxSched(wiring.Component):
    """The TX scheduler's first slice (docs/spec/hw-tx-sched.md)."""

    def __init__(self, width=64, *, conns=SMALL["conns"], streams=SMALL["streams"],
                 paths=SMALL["paths"], depth=SMALL["depth"], chunk_window=SMALL["chunk_window"],
                 mtu=SMALL["mtu"], cwnd=SMALL["cwnd"], conn_window=SMALL["conn_window"],
                 path_pkts=SMALL["path_pkts"], ack_every=SMALL["ack_every"],
                 resend_depth=SMALL["resend_depth"]):
        if width not in (64, 128, 256, 512):
            raise ValueError(f"width must be 64, 128, 256 or 512, not {width!r}")
        check_params(conns, streams, paths, depth, chunk_window, mtu, cwnd, conn_window,
                     path_pkts, ack_every, resend_depth)
        self.width = width
        self.conns, self.streams, self.paths, self.depth = conns, streams, paths, depth
        self.chunk_window, self.mtu, self.cwnd, self.conn_window = chunk_window, mtu, cwnd, conn_window
        self.path_pkts, self.ack_every, self.resend_depth = path_pkts, ack_every, resend_depth
        self.lay = lay = layouts(conns, streams, paths, depth)
        super().__init__({
            "s_wr": In(stream.Signature(lay.wr)),
            "s_acked": In(stream.Signature(lay.report)),
            "s_resend": In(stream.Signature(lay.report)),
            "m_frame": Out(stream.Signature(lay.frame)),
            "m_sent": Out(stream.Signature(lay.sent)),
            "m_cqe": Out(stream.Signature(lay.cqe)),
            "now": In(records.TIME_BITS),
        })

    def elaborate(self, platform):
        m = Module()
        lay = self.lay
        C, S, PA, D = self.conns, self.streams, self.paths, self.depth
        W, mtu = self.chunk_window, self.mtu
        mtu_log2 = mtu.bit_length() - 1
        cb, sb, pb, db = lay.conn_bits, _bits(S), _bits(PA), _bits(D)
        sd = S * D                              # message slots per connection
        sdb = _bits(sd) if sd > 1 else 0
        Q, E = C * S, C * sd                    # stream queues, message entries
        ptr_w = db + 1                          # ring pointers: index and wrap bit
        chunk_w = records.CHUNK_BITS + 1
        bytes_w = records.BYTES_BITS
        psn_w = P.wire.PSN_BITS
        rq_b = _bits(self.resend_depth)

        # -- state (MR-TXS-012..014)
        tail = Array(Signal(ptr_w, name=f"tail{q}") for q in range(Q))
        send = Array(Signal(ptr_w, name=f"send{q}") for q in range(Q))
        done = Array(Signal(ptr_w, name=f"done{q}") for q in range(Q))
        msg_next = Array(Signal(32, name=f"msg_next{q}") for q in range(Q))
        e_len = Array(Signal(32, name=f"len{e}") for e in range(E))
        e_nch = Array(Signal(chunk_w, name=f"nch{e}") for e in range(E))
        e_next = Array(Signal(chunk_w, name=f"next{e}") for e in range(E))
        e_base = Array(Signal(chunk_w, name=f"base{e}") for e in range(E))
        e_bits = Array(Signal(W, name=f"bits{e}") for e in range(E))
        desc_lay = data.StructLayout({"imm_op": 1, "wr_id": 16, "laddr": 64, "va": 64, "rkey": 32,
                                      "imm": 32, "msg": 32})
        m.submodules.desc_mem = desc_mem = memory.Memory(shape=desc_lay, depth=E, init=[])
        desc_wr = desc_mem.write_port()
        desc_rd_tx = desc_mem.read_port(domain="comb")
        desc_rd_cq = desc_mem.read_port(domain="comb")
        c_rr = Array(Signal(pb, init=c % PA, name=f"rr{c}") for c in range(C))
        c_srr = Array(Signal(sb, name=f"srr{c}") for c in range(C))
        c_infl = Array(Signal(bytes_w, name=f"cinfl{c}") for c in range(C))
        c_unsent = Array(Signal(24, name=f"unsent{c}") for c in range(C))
        rq_slot = [[Signal(3, name=f"rq{c}_slot{k}") for k in range(self.resend_depth)] for c in range(C)]
        rq_chunk = [[Signal(records.CHUNK_BITS, name=f"rq{c}_chunk{k}") for k in range(self.resend_depth)]
                    for c in range(C)]
        rq_head = Array(Signal(rq_b, name=f"rqh{c}") for c in range(C))
        rq_tail = Array(Signal(rq_b, name=f"rqt{c}") for c in range(C))
        rq_level = Array(Signal(rq_b + 1, name=f"rql{c}") for c in range(C))
        p_psn = Array(Signal(psn_w, name=f"psn{r}") for r in range(C * PA))
        p_infl = Array(Signal(bytes_w, name=f"pinfl{r}") for r in range(C * PA))
        p_pkts = Array(Signal(8, name=f"pkts{r}") for r in range(C * PA))
        p_since = Array(Signal(4, name=f"since{r}") for r in range(C * PA))
        conn_rr = Signal(cb)

        m.submodules.frame_q = frame_q = fifo.SyncFIFO(width=lay.frame.size, depth=OUT_DEPTH)
        m.submodules.sent_q = sent_q = fifo.SyncFIFO(width=lay.sent.size, depth=OUT_DEPTH)
        m.submodules.cqe_q = cqe_q = fifo.SyncFIFO(width=lay.cqe.size, depth=OUT_DEPTH)
        for q, port in ((frame_q, self.m_frame), (sent_q, self.m_sent), (cqe_q, self.m_cqe)):
            m.d.comb += [port.payload.eq(q.r_data), port.valid.eq(q.r_rdy), q.r_en.eq(port.ready)]

        def count(qi):
            return (tail[qi] - done[qi])[:ptr_w]

        def live(qi, idx):
            """MR-TXS-012: ring entry ``idx`` is posted and not completed."""
            return (idx - done[qi][:db])[:db] < count(qi) if D > 1 else count(qi) != 0

        def nbytes_of(length, chunk):
            """MR-CONN-005 (``protocol.chunk_bytes``): min(mtu, length - chunk x mtu)."""
            rem = Signal(33, name=None)
            m.d.comb += rem.eq(length - (chunk << mtu_log2))
            return Mux(rem[mtu_log2:] != 0, mtu, rem[:mtu_log2 + 1])

        def acked_bit(e, chunk):
            d = (chunk - e_base[e])[:chunk_w + 1]
            return d[chunk_w] | e_bits[e].bit_select(d[:_bits(W)], 1)

        # -- the report datapath (MR-TXS-020, MR-TXS-021): one report per cycle
        acked_valid = self.s_acked.valid
        rep = Mux(acked_valid, self.s_acked.payload.as_value(), self.s_resend.payload.as_value())
        rep = data.View(lay.report, rep)
        r_conn, r_path, r_slot, r_chunk = rep.conn, rep.path, rep.slot, rep.chunk
        r_e = Cat(r_slot[:sdb], r_conn) if sdb else r_conn
        r_s = r_slot[db:] if D > 1 else r_slot
        r_qi = Cat(r_s[:sb], r_conn) if S > 1 else r_conn
        r_idx = r_slot[:db] if D > 1 else Const(0, 1)
        r_ok = ((r_path < PA) & ((r_slot >> sdb) == 0 if sdb < 3 else 1)
                & live(r_qi, r_idx) & (r_chunk < e_next[r_e]))
        r_nb = Signal(mtu_log2 + 1)
        m.d.comb += r_nb.eq(nbytes_of(e_len[r_e], r_chunk))
        r_row = Cat(r_path[:pb], r_conn)
        r_was_acked = acked_bit(r_e, r_chunk)
        resend_room = rq_level[self.s_resend.payload.conn] < self.resend_depth
        m.d.comb += self.s_acked.ready.eq(1)
        m.d.comb += self.s_resend.ready.eq(~acked_valid & resend_room)
        take_resend = self.s_resend.ready & self.s_resend.valid
        busy = acked_valid | take_resend

        # -- completions (MR-TXS-022)
        comp_valid = []
        for qi in range(Q):
            e_done = (qi * D) + (done[qi][:db] if D > 1 else 0)
            comp_valid.append((count(qi) != 0) & (e_base[e_done] >= e_nch[e_done]))
        comp_any, comp_q = _first(comp_valid)
        comp_q = comp_q[:_bits(Q)]
        comp_e = Cat(done[comp_q][:db], comp_q) if D > 1 else comp_q
        m.d.comb += desc_rd_cq.addr.eq(comp_e)
        comp = ~busy & cqe_q.w_rdy & comp_any

        # -- work requests (MR-TXS-010, MR-TXS-011)
        wr = self.s_wr.payload
        w_qi = Cat(wr.stream[:sb], wr.conn) if S > 1 else wr.conn
        w_len1 = (wr.length - 1)[:32]
        w_bad_op = (wr.op > OP_WRITE_IMM) | (wr.stream >= S)
        w_bad_len = (wr.length != 0) & ((w_len1 >> (records.CHUNK_BITS + mtu_log2)) != 0)
        w_status = Mux(w_bad_op, STATUS_LOC_QP_OP_ERR, Mux(w_bad_len, STATUS_LOC_LEN_ERR, 0))
        w_nch = Mux(wr.length == 0, 1, (w_len1 >> mtu_log2) + 1)
        w_full = count(w_qi) == D
        w_ok = Mux(w_status != 0, cqe_q.w_rdy, ~w_full)
        m.d.comb += self.s_wr.ready.eq(~busy & ~comp & w_ok)
        take_wr = self.s_wr.ready & self.s_wr.valid

        # -- scheduling: a candidate per connection (MR-TXS-023..025)
        room_out = frame_q.w_rdy & sent_q.w_rdy
        sched = ~busy & ~comp & ~take_wr & room_out
        c_ready, c_drop, c_resend, c_qi, c_idx, c_chunk, c_path, c_nb = [], [], [], [], [], [], [], []
        for c in range(C):
            nonempty = rq_level[c] != 0
            h_slot = Array(rq_slot[c])[rq_head[c]]
            h_chunk = Array(rq_chunk[c])[rq_head[c]]
            h_e = Cat(h_slot[:sdb], Const(c, cb)) if sdb else Const(c, cb)
            h_s = h_slot[db:] if D > 1 else h_slot
            h_qi = Cat(h_s[:sb], Const(c, cb)) if S > 1 else Const(c, cb)
            h_idx = h_slot[:db] if D > 1 else Const(0, 1)
            h_slot_ok = (h_slot >> sdb) == 0 if sdb < 3 else Const(1, 1)
            h_stale = ~(h_slot_ok & live(h_qi, h_idx) & (h_chunk < e_next[h_e])) | acked_bit(h_e, h_chunk)
            # streams: the first from the pointer with a message whose next chunk is in its window
            s_ok = []
            for s in range(S):
                qi = c * S + s
                e_s = qi * D + (send[qi][:db] if D > 1 else 0)
                s_ok.append((send[qi] != tail[qi]) & (e_next[e_s] < e_base[e_s] + W))
            s_any, s_pick = _first_from(s_ok, c_srr[c], S)
            n_qi = Cat(s_pick[:sb], Const(c, cb)) if S > 1 else Const(c, cb)
            n_idx = send[n_qi][:db] if D > 1 else Const(0, 1)
            n_e = Cat(n_idx[:db], n_qi) if D > 1 else n_qi
            is_resend = nonempty & ~h_stale
            drop = nonempty & h_stale
            w_qi_c = Mux(is_resend, h_qi, n_qi)
            w_idx_c = Mux(is_resend, h_idx, n_idx)
            w_e = Mux(is_resend, h_e, n_e)
            w_chunk = Mux(is_resend, h_chunk, e_next[n_e])
            nb = Signal(mtu_log2 + 1, name=f"nb{c}")
            m.d.comb += nb.eq(nbytes_of(e_len[w_e], w_chunk))
            have = is_resend | (~nonempty & s_any)
            win_ok = (c_infl[c] == 0) | ((c_infl[c] + nb) <= self.conn_window)
            p_ok = []
            for p in range(PA):
                row = c * PA + p
                p_ok.append((p_infl[row] < self.cwnd) & (p_pkts[row] < self.path_pkts))
            p_any, p_pick = _first_from(p_ok, c_rr[c], PA)
            c_ready.append(drop | (have & win_ok & p_any))
            c_drop.append(drop)
            c_resend.append(is_resend)
            c_qi.append(w_qi_c)
            c_idx.append(w_idx_c)
            c_chunk.append(w_chunk)
            c_path.append(p_pick)
            c_nb.append(nb)
        any_c, pick = _first_from(c_ready, conn_rr, C)
        pick = pick[:cb]
        go = sched & any_c
        g_drop = Array(c_drop)[pick]
        g_resend = Array(c_resend)[pick]
        g_qi = Array(c_qi)[pick]
        g_idx = Array(c_idx)[pick]
        g_chunk = Array(c_chunk)[pick]
        g_path = Array(c_path)[pick][:pb]
        g_nb = Array(c_nb)[pick]
        g_e = Cat(g_idx[:db], g_qi) if D > 1 else g_qi
        g_s = g_qi[:sb] if S > 1 else Const(0, 1)
        g_row = Cat(g_path, pick)
        packet = go & ~g_drop
        m.d.comb += desc_rd_tx.addr.eq(g_e)
        desc = data.View(desc_lay, desc_rd_tx.data)
        g_len = e_len[g_e]
        g_off = (g_chunk << mtu_log2)[:32]
        psn = p_psn[g_row]
        g_unsent_after = c_unsent[pick] - ~g_resend
        g_rq_after = rq_level[pick] - g_resend
        since_after = p_since[g_row] + 1
        infl_after = p_infl[g_row] + g_nb
        req = ((since_after >= self.ack_every) | (infl_after + mtu > self.cwnd)
               | ((g_unsent_after + g_rq_after) < PA))
        flags = (Mux(g_off == 0, int(MrdhFlag.FIRST), 0)
                 | Mux((g_off + g_nb)[:33] >= g_len, int(MrdhFlag.LAST), 0)
                 | Mux(g_resend, int(MrdhFlag.RETX), 0))
        frame = Signal(lay.frame)
        m.d.comb += [
            frame.conn.eq(pick), frame.laddr.eq(desc.laddr),
            frame.bth_opcode.eq(Mux(desc.imm_op, int(Op.MR_WRITE_IMM), int(Op.MR_WRITE))),
            frame.bth_ack_req.eq(req), frame.bth_psn.eq(psn), frame.mrdh_flags.eq(flags),
            frame.mrdh_path.eq(g_path), frame.mrdh_stream.eq(g_s), frame.mrdh_msg.eq(desc.msg),
            frame.mrdh_offset.eq(g_off), frame.mrdh_msg_len.eq(g_len), frame.reth_va.eq(desc.va),
            frame.reth_rkey.eq(desc.rkey), frame.reth_dma_len.eq(g_len),
            frame.imm_imm.eq(Mux(desc.imm_op, desc.imm, 0)), frame.payload_len.eq(g_nb),
        ]
        sent = Signal(lay.sent)
        m.d.comb += [
            sent.conn.eq(pick), sent.path.eq(g_path), sent.psn.eq(psn),
            sent.slot.eq(Cat(g_idx[:db], g_s[:sb]) if (D > 1 and S > 1) else (g_idx if D > 1 else g_s)),
            sent.chunk.eq(g_chunk), sent.nbytes.eq(g_nb), sent.req.eq(req), sent.abort.eq(0),
            sent.t_sent.eq(self.now),
        ]
        m.d.comb += [frame_q.w_en.eq(packet), frame_q.w_data.eq(frame),
                     sent_q.w_en.eq(packet), sent_q.w_data.eq(sent)]

        # -- the completion stream: completions and refused work requests
        cqe = Signal(lay.cqe)
        cq_desc = data.View(desc_lay, desc_rd_cq.data)
        with m.If(comp):
            m.d.comb += [cqe.conn.eq(comp_q >> sb if S > 1 else comp_q),
                         cqe.stream.eq(comp_q[:sb] if S > 1 else 0),
                         cqe.wr_id.eq(cq_desc.wr_id), cqe.status.eq(0), cqe.op.eq(cq_desc.imm_op),
                         cqe.length.eq(e_len[comp_e])]
        with m.Else():
            m.d.comb += [cqe.conn.eq(wr.conn), cqe.stream.eq(wr.stream), cqe.wr_id.eq(wr.wr_id),
                         cqe.status.eq(w_status), cqe.op.eq(wr.op), cqe.length.eq(wr.length)]
        m.d.comb += [cqe_q.w_en.eq(comp | (take_wr & (w_status != 0))), cqe_q.w_data.eq(cqe)]

        # -- the actions (one per cycle)
        with m.If(busy):
            with m.If(r_ok):
                m.d.sync += [
                    p_infl[r_row].eq(Mux(p_infl[r_row] > r_nb, p_infl[r_row] - r_nb, 0)),
                    p_pkts[r_row].eq(Mux(p_pkts[r_row] != 0, p_pkts[r_row] - 1, 0)),
                    c_infl[r_conn].eq(Mux(c_infl[r_conn] > r_nb, c_infl[r_conn] - r_nb, 0)),
                ]
                with m.If(acked_valid):
                    # MR-EXO-002/003 (protocol.chunk_ack): bit chunk - ack_base, then ack_base
                    # moves over the acknowledged chunks above it
                    d = (r_chunk - e_base[r_e])[:chunk_w + 1]
                    in_win = ~d[chunk_w] & ((d >> _bits(W)) == 0 if W > 1 else 1)
                    onehot = Signal(W)
                    m.d.comb += onehot.eq(Mux(in_win, Const(1, W) << d[:_bits(W)], 0))
                    b = Signal(W + 1)
                    m.d.comb += b.eq(e_bits[r_e] | onehot)
                    ones = Signal(range(W + 1))
                    m.d.comb += ones.eq(W)
                    for k in reversed(range(W)):
                        with m.If(~b[k]):
                            m.d.comb += ones.eq(k)
                    m.d.sync += [e_base[r_e].eq(e_base[r_e] + ones), e_bits[r_e].eq(b >> ones)]
                with m.Elif(~r_was_acked):
                    for c in range(C):
                        with m.If(r_conn == c):
                            for k in range(self.resend_depth):
                                with m.If(rq_tail[c] == k):
                                    m.d.sync += [rq_slot[c][k].eq(r_slot), rq_chunk[c][k].eq(r_chunk)]
                    m.d.sync += [rq_tail[r_conn].eq(rq_tail[r_conn] + 1),
                                 rq_level[r_conn].eq(rq_level[r_conn] + 1)]
        with m.Elif(comp):
            m.d.sync += done[comp_q].eq(done[comp_q] + 1)
        with m.Elif(take_wr):
            with m.If(w_status == 0):
                w_e = Cat(tail[w_qi][:db], w_qi) if D > 1 else w_qi
                m.d.comb += [desc_wr.addr.eq(w_e), desc_wr.en.eq(1),
                             desc_wr.data.eq(Cat(wr.op[0], wr.wr_id, wr.laddr, wr.va, wr.rkey,
                                                 wr.imm, msg_next[w_qi]))]
                m.d.sync += [e_len[w_e].eq(wr.length), e_nch[w_e].eq(w_nch), e_next[w_e].eq(0),
                             e_base[w_e].eq(0), e_bits[w_e].eq(0),
                             tail[w_qi].eq(tail[w_qi] + 1), msg_next[w_qi].eq(msg_next[w_qi] + 1),
                             c_unsent[wr.conn].eq(c_unsent[wr.conn] + w_nch)]
        with m.Elif(go):
            with m.If(g_drop | g_resend):
                m.d.sync += [rq_head[pick].eq(rq_head[pick] + 1), rq_level[pick].eq(rq_level[pick] - 1)]
            with m.If(packet):
                m.d.sync += [p_psn[g_row].eq(psn + 1), p_infl[g_row].eq(infl_after),
                             p_pkts[g_row].eq(p_pkts[g_row] + 1),
                             p_since[g_row].eq(Mux(req, 0, since_after)),
                             c_infl[pick].eq(c_infl[pick] + g_nb),
                             c_rr[pick].eq(g_path + 1), conn_rr.eq(pick + 1)]
                with m.If(~g_resend):
                    m.d.sync += [e_next[g_e].eq(e_next[g_e] + 1), c_unsent[pick].eq(c_unsent[pick] - 1),
                                 c_srr[pick].eq(g_s + 1)]
                    with m.If(e_next[g_e] + 1 == e_nch[g_e]):
                        m.d.sync += send[g_qi].eq(send[g_qi] + 1)
        return m


def tx_sched_small(width=64):
    """The small instance (MR-TXS-001): 2 connections x 2 streams x 4 paths, 4 messages per stream."""
    return TxSched(width, **SMALL)
