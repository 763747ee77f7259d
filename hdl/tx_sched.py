"""TX scheduler, first slice: work requests in, per-stream queues, round robin over connections
and streams with resends first, chunking at the MTU, a PSN per path, path choice by window room;
frame requests and sent events out (docs/spec/hw-tx-sched.md, MR-TXS-*).

``TxSched(width=64, *, conns, streams, paths, depth, chunk_window, mtu, cwnd, conn_window,
path_pkts, ack_every, resend_depth, carry_chain=None)`` (MR-TXS-001; ``carry_chain`` is
MR-TXS-038's adder form, by default the elaborating platform's ``carry_chain``, else the prefix
form). Ports (MR-TXS-002), all
``amaranth.lib.stream``:

========== ====== ========================================================================
port       dir    meaning
========== ====== ========================================================================
s_wr       in     a work request {op, conn, stream, wr_id, laddr, va, rkey, length, imm, swap,
                  compare} (the last two an atomic's operands, MR-TXS-096)
s_acked    in     the retransmit unit's ``m_acked``: a record acknowledged (a ``late`` one:
                  its path's evidence and its chunk, no flight, MR-TXS-446/491)
s_resend   in     the retransmit unit's ``m_resend``: a record lost, its chunk to resend
m_frame    out    a frame request (the frame builder's descriptor fields the scheduler owns)
m_sent     out    the retransmit unit's ``s_sent``: a data packet was sent
m_cqe      out    a completion {conn, stream, wr_id, status, op, length}
now        in     the engine's nanosecond clock (the sent events' ``t_sent``)
s_fail     in     a message failed {conn, slot, status} (a payload read error; always ready)
s_error    in     a connection failed {conn, path, status} (the retransmit unit's ``m_error``)
s_cwnd     in     a path's window {conn, path, cwnd} (``Cwnd``'s ``m_update`` fields; always
                  ready; MR-TXS-028/029)
s_rsp      in     a READ response to send {conn, stream, msg, laddr, length, err} (MR-TXS-066)
m_rsp_done out    a READ response acknowledged (or failed) {conn, stream, msg, status}
                  (MR-TXS-070)
m_pace     out    with ``pacing``: a full-MTU packet's charge to the pacer {conn, now, force}
                  (PacerFrame's ``s_frame``, MR-TXS-161)
s_turn     in     with ``pacing``: the pacer's turn {conn, ok, pace_until} (MR-TXS-162)
s_retime   in     with ``pacing``: a write the pacer takes {conn, rate, set_time, time}
                  (MR-TXS-167)
s_psn      in     a path row's initial PSN {conn, path, psn} (MR-CONN-107; always ready;
                  MR-TXS-465/466)
psn_ignored out   the write of the cycle before was ignored: its connection had started
                  (MR-TXS-466)
========== ====== ========================================================================

One action per cycle in a fixed priority (MR-TXS-030); every decision is combinational on
registers and LUT RAM but the per-connection scheduling decision, registered and taken the next
cycle by connections left untouched (MR-TXS-033); the reports and the work requests are acted on
from input registers (MR-TXS-034, MR-TXS-037; the reports through a boundary register first,
MR-TXS-046); the completion is tested per stream, picked and taken in three cycles (MR-TXS-045, MR-TXS-035); the outputs leave through 4-slot queues
(MR-TXS-031).

Golden model: :class:`metaroce.models.tx_sched.TxSchedCycleModel`, cycle by cycle.
"""
from amaranth.hdl import Array, Cat, Const, Module, Mux, Signal, Value, signed
from amaranth.lib import data, fifo, memory, stream, wiring
from amaranth.lib.wiring import In, Out

from ..models import protocol as P
from ..models import records
from ..models.pacer import RATE_BITS as pacer_rate_bits
from ..models.pacer import WL_BITS as pacer_wl_bits
from ..models.pacer import frame_layouts as pacer_layouts
from ..models.tx_sched import restore_layout
from ..models.tx_sched import (ATOMIC_LEN, GEN_BITS, OP_READ, OP_READ_RESP, OUT_DEPTH, SMALL, STATUS_LOC_LEN_ERR,
                               STATUS_LOC_QP_OP_ERR, WIRE_HDR, check_params, late_cap_of,
                               layouts)

#: MR-TXS-027: a message's packets in flight (sent, not yet reported), per entry.
OUT_BITS = 16
from ..models.wire import MrdhFlag, Op
from .arith import _Arith, _ext, _named
from .queue import interval_ready
from .muxes import pick as _pick

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


def _rr_onehot(valid, start, n):
    """MR-TXS-023: the round-robin pick of :func:`_first_from` as one-hot bits: ``valid[c]``
    and no valid one before it counting from ``start`` (for each pair of positions "before"
    is a function of ``start`` alone), so an enable is its bit and the registers beside it,
    not a compare after the index's mux chain (MR-TXS-039)."""
    if n == 1:
        return [valid[0]]
    sel = []
    for c in range(n):
        blocked = Const(0, 1)
        for j in range(n):
            if j != c:
                starts = [st for st in range(n) if (j - st) % n < (c - st) % n]
                before = Cat(*(start == st for st in starts)).any() if starts else Const(0, 1)
                blocked = blocked | (valid[j] & before)
        sel.append(valid[c] & ~blocked)
    return sel


def _lowest_zero(v):
    """``(any, index)``: the lowest 0 bit of ``v`` (a power-of-two width) by a tree of halves,
    log2 levels of muxes (MR-TXS-032: the acknowledged-chunk window's count of trailing ones)."""
    n = len(v)
    if n == 2:
        return ~v[0] | ~v[1], v[0]
    lo_any, lo_idx = _lowest_zero(v[:n // 2])
    hi_any, hi_idx = _lowest_zero(v[n // 2:])
    return lo_any | hi_any, Mux(lo_any, Cat(lo_idx, Const(0, 1)), Cat(hi_idx, Const(1, 1)))


def _op_kind(op):
    """MR-TXS-059, MR-TXS-063, MR-TXS-099: the kind bits of a 3-bit ``op``: ``(send, imm,
    read, atomic)`` (SEND/SEND_IMM; WRITE_IMM/SEND_IMM; READ; CMP_SWAP/FETCH_ADD). Bits 0 and 1
    name the immediate and the send only below op 4 (op 5 is 101, op 6 110)."""
    return (op[1] & ~op[2], op[0] & ~op[2], op[2] & ~op[1] & ~op[0], op[2] & (op[0] ^ op[1]))


def _first(valid):
    """``(any, index)`` of the lowest set bit of ``valid``."""
    nb = _bits(len(valid))
    found = Const(0, 1)
    idx = Const(0, nb)
    for k in reversed(range(len(valid))):
        idx = Mux(valid[k], k, idx)
        found = found | valid[k]
    return found, idx


class _StagedQueue:
    """MR-TXS-280: an output queue of ``depth`` entries whose write (the action's decision)
    loads a stage register, the memory written from the stage at the next edge, so every
    enable of the memory, its pointers and its level is a register; the head is the stage's
    entry while the memory holds none, so the port sees the queue of a ``SyncFIFO`` written at
    the decision's edge, cycle for cycle (its payload while empty too: the memory's slot).
    MR-TXS-281: ``room_n``: the entries (memory and stage) below ``depth`` after the edge.
    Ports as ``SyncFIFO``'s: ``w_en``/``w_data`` in, ``r_en``; ``r_rdy``/``r_data``.
    MR-TXS-353: ``late``, a function of the stage's data giving the entry the memory and the
    head take (fields read in the stage's cycle from a synchronous read port); default the
    stage's data. MR-TXS-419: ``stage_head`` False: the memory's head only (the stage is
    never the head: an entry shows a cycle after its stage's)."""

    def __init__(self, m, name, width, depth, late=None, stage_head=True):
        self.w_en, self.w_data = Signal(name=f"{name}_w_en"), Signal(width, name=f"{name}_w_data")
        self.r_en = Signal(name=f"{name}_r_en")
        s_valid, s_data = Signal(name=f"{name}_s_valid"), Signal(width, name=f"{name}_s_data")
        self.s_valid = s_valid
        m.submodules[f"{name}_mem"] = mem = memory.Memory(shape=width, depth=depth, init=[])
        wp, rp = mem.write_port(), mem.read_port(domain="comb")
        pw = max(1, (depth - 1).bit_length())
        w_ptr, r_ptr = Signal(pw, name=f"{name}_w_ptr"), Signal(pw, name=f"{name}_r_ptr")
        level = Signal(range(depth + 1), name=f"{name}_level")      # the memory's entries
        # the stage is the head while the memory holds none (r_ptr is then its slot)
        if stage_head:
            s_head = _named(m, s_valid & (level == 0), f"{name}_s_head")
        s_word = s_data if late is None else _named(m, late(s_data), f"{name}_s_word")
        if stage_head:
            self.r_rdy = _named(m, s_valid | (level != 0), f"{name}_r_rdy")
            self.r_data = _named(m, Mux(s_head, s_word, rp.data), f"{name}_r_data")
        else:
            self.r_rdy = _named(m, level != 0, f"{name}_r_rdy")
            self.r_data = rp.data
        pop = self.r_en & self.r_rdy
        # the stage loads every cycle: it always drains into the memory at the next edge
        m.d.sync += [s_valid.eq(self.w_en), s_data.eq(self.w_data)]
        m.d.comb += [wp.addr.eq(w_ptr), wp.data.eq(s_word), wp.en.eq(s_valid), rp.addr.eq(r_ptr)]
        with m.If(s_valid):
            m.d.sync += w_ptr.eq(w_ptr + 1)
        with m.If(pop):
            m.d.sync += r_ptr.eq(r_ptr + 1)
        m.d.sync += level.eq(level + s_valid - pop)
        # MR-TXS-281: n entries now (level + stage); after the edge n + write - pop < depth
        # (its register is sched_r, MR-TXS-282, so the decision enters no other input here)
        n_full = (level == depth) | ((level == depth - 1) & s_valid)
        n_last = Mux(s_valid, level == depth - 2, level == depth - 1)
        wr_ = self.w_en
        self.room_n = _named(m, Mux(wr_ & ~pop, ~n_last & ~n_full, (~wr_ & pop) | ~n_full),
                             f"{name}_room_n")


def cqe_ports(m, sched, cqe_q, lay):
    """The completion queue's head onto ``m_cqe`` or, with its response bit (the word's top
    bit), onto ``m_rsp_done`` (MR-TXS-040, MR-TXS-070); shared by TxSched and TxSchedRows."""
    cq_head = data.View(lay.cqe, cqe_q.r_data[:lay.cqe.size])
    cq_rsp = cqe_q.r_data[lay.cqe.size]
    m.d.comb += [sched.m_cqe.payload.eq(cq_head), sched.m_cqe.valid.eq(cqe_q.r_rdy & ~cq_rsp),
                 sched.m_rsp_done.valid.eq(cqe_q.r_rdy & cq_rsp),
                 sched.m_rsp_done.payload.conn.eq(cq_head.conn),
                 sched.m_rsp_done.payload.stream.eq(cq_head.stream),
                 sched.m_rsp_done.payload.msg.eq(cq_head.length),
                 sched.m_rsp_done.payload.status.eq(cq_head.status),
                 cqe_q.r_en.eq(Mux(cq_rsp, sched.m_rsp_done.ready, sched.m_cqe.ready))]


def sched_ports(lay):
    """The scheduler's fixed ports on ``layouts(...)`` ``lay`` (MR-TXS-002), shared by
    :class:`TxSched` and the row scheduler (MR-TXS-250: the same ports)."""
    return {
        "s_wr": In(stream.Signature(lay.wr)),
        "s_acked": In(stream.Signature(lay.acked)),            # MR-TXS-445
        "s_resend": In(stream.Signature(lay.report)),
        "m_frame": Out(stream.Signature(lay.frame)),
        "m_sent": Out(stream.Signature(lay.sent)),
        "m_cqe": Out(stream.Signature(lay.cqe)),
        "now": In(records.TIME_BITS),
        "s_fail": In(stream.Signature(lay.fail)),
        "s_error": In(stream.Signature(lay.error)),
        "s_cwnd": In(stream.Signature(lay.cwnd)),
        "s_rsp": In(stream.Signature(lay.rsp)),
        "m_rsp_done": Out(stream.Signature(lay.rsp_done)),
        "s_probe": In(stream.Signature(lay.probe)),
    }


class TxSched(wiring.Component):
    """The TX scheduler's first slice (docs/spec/hw-tx-sched.md)."""

    def __init__(self, width=64, *, conns=SMALL["conns"], streams=SMALL["streams"],
                 paths=SMALL["paths"], depth=SMALL["depth"], chunk_window=SMALL["chunk_window"],
                 mtu=SMALL["mtu"], cwnd=SMALL["cwnd"], conn_window=SMALL["conn_window"],
                 path_pkts=SMALL["path_pkts"], ack_every=SMALL["ack_every"],
                 resend_depth=SMALL["resend_depth"], carry_chain=None, rd_rows=False,
                 pacing=False, pace_ignored=False, restores=False,
                 pace_full_only=False, kept_out=True, interval=1, cw_hold=True, mem_head=False,
                 late_cap=None):
        if width not in (64, 128, 256, 512):
            raise ValueError(f"width must be 64, 128, 256 or 512, not {width!r}")
        # MR-TXS-413: the frame interval (MR-ENG-299); 1 builds none of MR-TXS-414..416
        self.interval = int(interval)
        if self.interval < 1:
            raise ValueError(f"interval must be at least 1, not {interval!r}")
        if self.interval > 1 and pacing:
            raise ValueError("MR-TXS-413: an interval above 1 with pacing is not built")
        # MR-TXS-418: cw_hold=False (negative control only): MR-TXS-415's hold left out
        self.cw_hold = bool(cw_hold)
        # MR-TXS-419: mem_head (interval above 1 only, off by default): the output queues show
        # their memories' heads only
        self.mem_head = bool(mem_head)
        if self.mem_head and self.interval == 1:
            raise ValueError("MR-TXS-419: mem_head needs an interval above 1")
        check_params(conns, streams, paths, depth, chunk_window, mtu, cwnd, conn_window,
                     path_pkts, ack_every, resend_depth, late_cap)
        self.late_cap = late_cap_of(depth, late_cap)        # MR-TXS-495
        self.width = width
        self.carry_chain = carry_chain          # MR-TXS-038: None = the platform's
        self.conns, self.streams, self.paths, self.depth = conns, streams, paths, depth
        self.chunk_window, self.mtu, self.cwnd, self.conn_window = chunk_window, mtu, cwnd, conn_window
        self.path_pkts, self.ack_every, self.resend_depth = path_pkts, ack_every, resend_depth
        self.lay = lay = layouts(conns, streams, paths, depth)
        self.rd_rows = bool(rd_rows)
        # MR-TXS-106: with rd_rows, the READ queued and its row (the engine top's, MR-ENG-148)
        rd_port = {"m_rd": Out(stream.Signature(lay.rd))} if self.rd_rows else {}
        # MR-TXS-159: with pacing, the pacer's ports (hdl/pacer.py PacerFrame's s_frame and
        # m_turn); ``pace_ignored`` (negative controls only): the condition left out
        # ``pace_full_only`` (negative controls only): the full-MTU packets charged only
        self.pacing, self.pace_ignored = bool(pacing), pace_ignored
        # MR-TXS-183: with restores, the acknowledged reports' restores of probing paths on
        # m_restore {conn, path, kept} (the TX top's windows, hw-tx.md MR-TX-256); MR-TXS-347:
        # and the verdicts taken as reroutes (kept 1); kept_out=False (negative control only):
        # not them, the block before (kept always 0)
        self.restores = bool(restores)
        self.kept_out = bool(kept_out)
        if self.restores:
            rd_port["m_restore"] = Out(stream.Signature(restore_layout(conns, paths)))
        self.pace_full_only = pace_full_only
        if self.pacing:
            self.pace_lay = pacer_layouts(conns)
            rd_port.update({"m_pace": Out(stream.Signature(self.pace_lay["frame"])),
                            "s_turn": In(stream.Signature(self.pace_lay["turn"])),
                            # MR-TXS-167: the pacer's writes as it takes them
                            "s_retime": In(stream.Signature(self.pace_lay["write"])),
                            # MR-TXS-177: the line rate, for a write's `paced` bit
                            "line_mbps": In(pacer_rate_bits)})
        # MR-TXS-465/466: the initial-PSN port (the rows' too since MR-TXS-481)
        rd_port.update({"s_psn": In(stream.Signature(lay.psn)), "psn_ignored": Out(1)})
        super().__init__({**rd_port, **sched_ports(lay)})

    def elaborate(self, platform):
        m = Module()
        carry = self.carry_chain
        A = _Arith(m, getattr(platform, "carry_chain", False) if carry is None else carry)
        lay = self.lay
        C, S, PA, D = self.conns, self.streams, self.paths, self.depth
        W, mtu = self.chunk_window, self.mtu
        K = self.conn_window
        mtu_log2 = mtu.bit_length() - 1
        wb = _bits(W)                           # W is a power of two: W = 2^wb
        cb, sb, pb, db = lay.conn_bits, _bits(S), _bits(PA), _bits(D)
        sd = S * D                              # message slots per connection
        sdb = _bits(sd) if sd > 1 else 0
        Q, E = C * S, C * sd                    # stream queues, message entries
        LB = records.LAP_BITS
        ptr_w = db + LB                         # ring pointers: index and lap (MR-TXS-490)
        chunk_w = records.CHUNK_BITS + 1
        bytes_w = records.BYTES_BITS
        psn_w = P.wire.PSN_BITS
        rq_b = _bits(self.resend_depth)
        RD = self.resend_depth
        nb_w = mtu_log2 + 1

        # -- state (MR-TXS-012..014)
        tail = Array(Signal(ptr_w, name=f"tail{q}") for q in range(Q))
        send = Array(Signal(ptr_w, name=f"send{q}") for q in range(Q))
        done = Array(Signal(ptr_w, name=f"done{q}") for q in range(Q))
        # MR-TXS-379: each stream's msg_next and (MR-TXS-058) send_seq, the recv_seq of its next
        # SEND, in LUT RAM (written by the work request's take, one stream a cycle; read
        # combinationally at the intake's stream)
        sq_lay = data.StructLayout({"msg": 32, "rseq": 32})
        m.submodules.seq_mem = seq_mem = memory.Memory(shape=sq_lay, depth=Q, init=[])
        seq_wr, seq_rd = seq_mem.write_port(), seq_mem.read_port(domain="comb")
        # MR-TXS-053: whether the edge gives an entry a new chunk or refills it (MR-TXS-055);
        # MR-TXS-394: each entry's next_chunk is next_mem's row (MR-TXS-378), no register
        e_new_chunk = [Signal(name=f"new_chunk{e}") for e in range(E)]
        e_refill = [Signal(name=f"refill{e}") for e in range(E)]
        # MR-TXS-188: the flags' registered halves (the candidates' new-chunk bits, the work
        # request's entry bits) and their late terms (the step's `act`, `take_wr`), so a read
        # of a flag at an index selects among registers and the late term ANDs after it
        e_new_hot = [Signal(name=f"new_hot{e}") for e in range(E)]
        w_ehot = Signal(E, name="w_ehot")
        take_wr = Signal(name="take_wr")
        act = [Signal(name=f"act{c}") for c in range(C)]

        def edge_flags(e, tag):
            """MR-TXS-188: ``(new, refill)``, the edge's flags ``e_new_chunk``/``e_refill`` of
            entry ``e``: the registered bit read at ``e``, then its connection's step or the
            work request's take."""
            new_act = read(act, e[sdb:], f"new_act_{tag}") if C > 1 else act[0]
            new = new_act & read(e_new_hot, e, f"new_hot_{tag}")
            refill = take_wr & read(list(w_ehot), e, f"wr_hot_{tag}")
            return new, refill
        e_base = Array(Signal(chunk_w, name=f"base{e}") for e in range(E))
        e_bits = Array(Signal(W, name=f"bits{e}") for e in range(E))
        # MR-TXS-383: the windows (ack_base, bits) again in LUT RAM, written by the window's move
        # (wb, one entry a cycle); a refill, which may act at the same edge on another entry,
        # sets the entry's `win_zero` bit instead (its window reads 0 until its next move)
        m.submodules.base_mem = base_mem = memory.Memory(shape=chunk_w, depth=E, init=[])
        m.submodules.bits_mem = bits_mem = memory.Memory(shape=W, depth=E, init=[])
        base_mwr, bits_mwr = base_mem.write_port(), bits_mem.write_port()
        win_zero = Signal(E, init=(1 << E) - 1, name="win_zero")

        def win_read(mem, idx, name):
            """MR-TXS-383: entry ``idx``'s window field from ``mem`` (a read port), 0 while its
            ``win_zero`` bit is set: the register's value."""
            rp = mem.read_port(domain="comb")
            m.d.comb += rp.addr.eq(idx)
            return _named(m, Mux(win_zero.bit_select(idx, 1), 0, rp.data), name)
        # MR-TXS-032: derived registers, kept equal to their definitions by every action
        e_nchm1 = Array(Signal(chunk_w, name=f"nchm1_{e}") for e in range(E))    # nchunks - 1
        # MR-TXS-391: no `left` (nchunks - 1 - next_chunk) register per entry: its tests read
        # next_chunk's and nchunks - 1's copies; `sent_all` is its all-ones (every chunk sent)
        e_sall = Array(Signal(name=f"sent_all{e}") for e in range(E))
        e_ahead = Array(Signal(wb + 1, name=f"ahead{e}") for e in range(E))      # next_chunk - ack_base
        e_lastnb = Array(Signal(nb_w, name=f"lastnb{e}") for e in range(E))     # chunk_bytes of the last chunk
        # left == 0 (MR-TXS-392: 1 at reset, so `nnb` reads lastnb's 0 there)
        e_nlast = Array(Signal(init=1, name=f"nlast{e}") for e in range(E))
        # chunk_bytes of next_chunk (MR-TXS-054); MR-TXS-392: not a register, the last chunk's
        # bytes when next_chunk is the last, else an MTU (what every write of the register was)
        e_nnb = Array(_named(m, Mux(e_nlast[e], e_lastnb[e], mtu), f"nnb{e}") for e in range(E))
        # MR-TXS-027: failed (and its status), packets in flight
        e_fail = Array(Signal(name=f"fail{e}") for e in range(E))
        e_status = Array(Signal(5, name=f"status{e}") for e in range(E))
        e_out = Array(Signal(OUT_BITS, name=f"out{e}") for e in range(E))
        e_idle = Array(Signal(init=1, name=f"idle{e}") for e in range(E))     # out == 0
        # MR-TXS-043: the message's length is read with its descriptor (LUT RAM), not kept
        # in a register per entry; MR-TXS-059: `op` (bit 0 immediate, bit 1 send), a send's
        # recv_seq in the place of its VA; MR-TXS-063: bit 2 READ, its length the READ's
        # MR-TXS-069: a READ response is op 7, the requester's stream in wr_id's place, `err`
        desc_lay = data.StructLayout({"op": 3, "wr_id": 16, "laddr": 64, "va": 64, "rkey": 32,
                                      "imm": 32, "msg": 32, "len": 32, "err": 1})
        # MR-TXS-353: one synchronous read port, at the entry of the cycle's packet or probe,
        # its data the frame queue's stage's (block RAM on the ECP5, MR-FLOW-026); MR-TXS-354:
        # no read the frame takes meets a write of its row (MR-FLOW-028)
        m.submodules.desc_mem = desc_mem = memory.Memory(shape=desc_lay, depth=E, init=[],
                                                         attrs={"metaroce_collision": "x"})
        desc_wr = desc_mem.write_port()
        # MR-TXS-099: an atomic's operands (0 for the other ops) in a memory of their own, read
        # with the frame's descriptor (MR-TXS-353; the completion's memory leaves them out)
        opnd_lay = data.StructLayout({"swap": 64, "compare": 64})
        m.submodules.opnd_mem = opnd_mem = memory.Memory(shape=opnd_lay, depth=E, init=[],
                                                         attrs={"metaroce_collision": "x"})
        opnd_wr = opnd_mem.write_port()
        fr_desc, fr_opnd = desc_mem.read_port(), opnd_mem.read_port()
        # MR-TXS-355: the completion's fields (MR-TXS-043) in a memory of their own, written
        # with the descriptor, read at the registered completion's entry (MR-TXS-035);
        # MR-TXS-357: combinationally (LUT RAM)
        cq_lay = data.StructLayout({"op": 3, "wr_id": 16, "msg": 32, "len": 32})
        m.submodules.cq_mem = cq_mem = memory.Memory(shape=cq_lay, depth=E, init=[])
        cq_wr = cq_mem.write_port()
        desc_rd_cq = cq_mem.read_port(domain="comb")
        if self.pacing:
            # MR-TXS-356: the ops again, for the candidates' wire lengths (MR-TXS-175)
            m.submodules.op_mem = op_mem = memory.Memory(shape=3, depth=E, init=[])
            op_wr = op_mem.write_port()
        c_rr = Array(Signal(pb, init=c % PA, name=f"rr{c}") for c in range(C))
        c_srr = Array(Signal(sb, name=f"srr{c}") for c in range(C))
        c_infl = Array(Signal(bytes_w, name=f"cinfl{c}") for c in range(C))
        # MR-TXS-032: conn_window - inflight, and per path cwnd - mtu - inflight
        c_room = Array(Signal(signed(bytes_w + 2), init=K, name=f"croom{c}") for c in range(C))
        c_unsent = Array(Signal(24, name=f"unsent{c}") for c in range(C))
        rq_slot = [[Signal(3, name=f"rq{c}_slot{k}") for k in range(RD)] for c in range(C)]
        rq_chunk = [[Signal(records.CHUNK_BITS, name=f"rq{c}_chunk{k}") for k in range(RD)]
                    for c in range(C)]
        # MR-TXS-189: the head entry's nb as a register (the candidate's window compares of a
        # resend start at it, not at a RD-way read by the head pointer)
        rq_hnb = [Signal(nb_w, name=f"rqh{c}_nb") for c in range(C)]
        # MR-TXS-032: the entry is stale (its chunk acknowledged since it was queued);
        # MR-TXS-460: or its message completed
        rq_stale = [[Signal(name=f"rq{c}_stale{k}") for k in range(RD)] for c in range(C)]
        # MR-TXS-377: the entries' slot, chunk and LAST again in LUT RAM per connection,
        # written with the registers at the tail, read combinationally at the head (the
        # registers stay for the stale compares of every entry)
        # MR-TXS-381: and the bytes, which only the head's nb register reads (a second port)
        rqm_lay = data.StructLayout({"slot": 3, "chunk": records.CHUNK_BITS, "last": 1,
                                     "nb": nb_w})
        rq_mem_wr, rq_mem_rd, rq_mem_nb = [], [], []
        for c in range(C):
            m.submodules[f"rq_mem{c}"] = rqm = memory.Memory(shape=rqm_lay, depth=RD, init=[])
            rq_mem_wr.append(rqm.write_port())
            rq_mem_rd.append(rqm.read_port(domain="comb"))
            rq_mem_nb.append(rqm.read_port(domain="comb"))

        def rq_nb_at(c, idx, name):
            """MR-TXS-381: connection ``c``'s resend entry ``idx``'s bytes (its memory's
            second read port)."""
            m.d.comb += rq_mem_nb[c].addr.eq(idx)
            return _named(m, rq_mem_nb[c].data.nb, name)
        rq_head = Array(Signal(rq_b, name=f"rqh{c}") for c in range(C))
        rq_tail = Array(Signal(rq_b, name=f"rqt{c}") for c in range(C))
        rq_level = Array(Signal(rq_b + 1, name=f"rql{c}") for c in range(C))
        # MR-TXS-241: per entry its chunks lost and not queued (the FIFO was full), one bit per
        # chunk modulo the chunk window (such a chunk is sent and not acknowledged: it lies in
        # [ack_base, ack_base + W), so its low bits name it)
        e_lnq = Array(Signal(W, name=f"lnq{e}") for e in range(E))
        # MR-TXS-244: the refill decided the cycle before (its entry and bit), and the action
        lq_valid = Signal(name="lq_valid")
        lq_e = Signal(_bits(E), name="lq_e")
        lq_j = Signal(wb, name="lq_j")
        fill = Signal(name="fill")
        lq_conn = lq_e[sdb:] if sdb else lq_e
        p_psn = Array(Signal(psn_w, name=f"psn{r}") for r in range(C * PA))
        p_infl = Array(Signal(bytes_w, name=f"pinfl{r}") for r in range(C * PA))
        p_pkts = Array(Signal(8, name=f"pkts{r}") for r in range(C * PA))
        # MR-TXS-495/498: per path the connection's completions since its last acknowledged
        # report not late, saturating at the cap (its late reports then count nothing)
        QCAP = self.late_cap
        p_quiet = [Signal(QCAP.bit_length(), name=f"quiet{r}") for r in range(C * PA)]
        p_since = Array(Signal(4, name=f"since{r}") for r in range(C * PA))
        p_room = Array(Signal(signed(bytes_w + 2), init=self.cwnd - mtu, name=f"proom{r}")
                       for r in range(C * PA))
        # MR-TXS-028: each path's window, and the window less an MTU (the room's value when the
        # path's flight empties), from the cwnd parameter at reset
        # MR-TXS-389: the windows in LUT RAM (read at the write's row only), a row's bit of
        # cw_set marking it written (until then it reads the cwnd parameter)
        m.submodules.cw_mem = cw_mem = memory.Memory(shape=bytes_w, depth=C * PA, init=[])
        cw_mwr = cw_mem.write_port()
        cw_set = Signal(C * PA, name="cw_set")
        p_cwm = Array(Signal(signed(bytes_w + 2), init=self.cwnd - mtu, name=f"pcwm{r}")
                      for r in range(C * PA))
        conn_rr = Signal(cb)
        # MR-TXS-080: per path row, its newest packet's record (slot, chunk, bytes, FIRST, LAST),
        # written with every packet on the row; `p_tv`: that packet's message has not completed
        # since (cleared by the completion of its entry), so the record still names it
        p_tslot = Array(Signal(3, name=f"tslot{r}") for r in range(C * PA))
        # (MR-TXS-376: the rest of the record in LUT RAM, trec_mem below; the slot kept here
        # too for the completion's per-row compare)
        p_tv = Array(Signal(name=f"tv{r}") for r in range(C * PA))
        # MR-TXS-113: per path row its state (probing, else active; MR-TXS-120: no retired
        # state in this slice) and its collapsed bit (MR-TXS-115: a reroute's window of one
        # MTU until its next ACK)
        p_prb = Array(Signal(name=f"prb{r}") for r in range(C * PA))
        p_col = Array(Signal(name=f"col{r}") for r in range(C * PA))
        # MR-TXS-121: per path row its entropy generation (the join stage's UDP source port)
        p_gen = Array(Signal(GEN_BITS, name=f"gen{r}") for r in range(C * PA))

        # MR-TXS-044: the frame queue holds the frame request's fields that vary, the output
        # rebuilds the rest (the opcode from op and a bit set in every frame, the offset's
        # low bits, the DMA length equal to the message length, the narrow fields' high bits;
        # MR-TXS-059: a send's VA 0 and its recv_seq from the VA's place)
        fq_lay = data.StructLayout({"conn": cb, "laddr": 64, "op_set": 1, "op": 3, "ack_req": 1,
                                    "psn": psn_w, "flags": 4, "path": pb, "stream": 16, "msg": 32,
                                    "chunk": 32 - mtu_log2, "len": 32, "va": 64, "rkey": 32,
                                    "imm": 32, "nb": nb_w, "slot": 3, "lap": LB,  # MR-TXS-411
                                    "swap": 64, "compare": 64,      # MR-TXS-099
                                    "gen": GEN_BITS})               # MR-TXS-121

        def fq_word(s_data):
            """MR-TXS-353: the frame queue's entry in its stage's cycle: the stage's fields and
            the descriptor's and operands' read at the packet's (or probe's) entry."""
            s, w = data.View(fq_lay, s_data), Signal(fq_lay, name="frame_q_word")
            d, o = fr_desc.data, fr_opnd.data
            m.d.comb += [
                w.eq(s), w.laddr.eq(d.laddr), w.op.eq(d.op),
                w.stream.eq(Mux(d.op == OP_READ_RESP, d.wr_id, s.stream)),          # MR-TXS-068
                w.flags.eq(s.flags | Mux(d.err, int(MrdhFlag.ERROR), 0)),          # MR-TXS-068
                w.msg.eq(d.msg), w.len.eq(d.len), w.va.eq(d.va), w.rkey.eq(d.rkey),
                w.imm.eq(Mux(_op_kind(d.op)[1], d.imm, 0)),
                w.swap.eq(o.swap), w.compare.eq(o.compare)]                          # MR-TXS-098
            return w
        # MR-TXS-419: with mem_head the memories' heads only
        frame_q = _StagedQueue(m, "frame_q", fq_lay.size, OUT_DEPTH, late=fq_word,   # MR-TXS-280
                               stage_head=not self.mem_head)
        sent_q = _StagedQueue(m, "sent_q", lay.sent.size, OUT_DEPTH, stage_head=not self.mem_head)
        # MR-TXS-070: the completion queue's entries carry a bit above the completion: a READ
        # response's record, which leaves on m_rsp_done instead of m_cqe
        m.submodules.cqe_q = cqe_q = fifo.SyncFIFO(width=lay.cqe.size + 1, depth=OUT_DEPTH)
        for q, port in ((frame_q, self.m_frame), (sent_q, self.m_sent)):
            m.d.comb += [port.valid.eq(q.r_rdy), q.r_en.eq(port.ready)]
            if q is not frame_q:
                m.d.comb += port.payload.eq(q.r_data)
        cqe_ports(m, self, cqe_q, lay)
        fq_out, fr_out = data.View(fq_lay, frame_q.r_data), self.m_frame.payload
        o_send, _, o_read, o_atomic = _op_kind(fq_out.op)
        # a slot never written (all 0) shows an all-0 frame, as the unpacked ring would
        m.d.comb += [
            fr_out.conn.eq(fq_out.conn), fr_out.laddr.eq(fq_out.laddr),
            # MR-TXS-057: the wire opcode is 0xC0 + op; MR-TXS-063: READ (op 4) 0xC6;
            # MR-TXS-098: CMP_SWAP (op 5) 0xC8, FETCH_ADD (op 6) 0xC9
            fr_out.bth_opcode.eq(Mux(fq_out.op_set, Mux(
                o_atomic, int(Op.MR_CMP_SWAP) | fq_out.op[1],
                int(Op.MR_WRITE) | Cat(fq_out.op[0], fq_out.op[1] | fq_out.op[2], fq_out.op[2])),
                0)),
            fr_out.bth_ack_req.eq(fq_out.ack_req), fr_out.bth_psn.eq(fq_out.psn),
            fr_out.mrdh_flags.eq(fq_out.flags), fr_out.mrdh_path.eq(fq_out.path),
            fr_out.mrdh_stream.eq(fq_out.stream), fr_out.mrdh_msg.eq(fq_out.msg),
            fr_out.mrdh_offset.eq(Cat(Const(0, mtu_log2), fq_out.chunk)),
            # MR-TXS-063: a READ request's 0 (op 4; a response, op 7, its length);
            # MR-TXS-098: an atomic's its operands' bytes (its payload's, 16 or 8)
            fr_out.mrdh_msg_len.eq(Mux(o_read, 0, Mux(o_atomic, fq_out.nb, fq_out.len))),
            fr_out.reth_va.eq(Mux(o_send, 0, fq_out.va)),
            fr_out.mrsh_recv_seq.eq(Mux(o_send, fq_out.va[:32], 0)),
            fr_out.swap.eq(fq_out.swap), fr_out.compare.eq(fq_out.compare),
            fr_out.reth_rkey.eq(fq_out.rkey), fr_out.reth_dma_len.eq(fq_out.len),
            fr_out.imm_imm.eq(fq_out.imm), fr_out.payload_len.eq(fq_out.nb),
            fr_out.slot.eq(fq_out.slot),                                    # MR-TXS-069
            fr_out.lap.eq(fq_out.lap),                                      # MR-TXS-411
            fr_out.gen.eq(fq_out.gen)]                                      # MR-TXS-121

        def room_reg(q, name):
            """MR-TXS-039: ``q.w_rdy`` as a register of its own, set from the queue's level and
            this cycle's write and read (the action's enables then start at registers, not at
            the level's compare)."""
            room = Signal(init=1, name=name)
            wr_, rd_ = q.w_en & q.w_rdy, q.r_en & q.r_rdy
            room_n = _named(m, Mux(wr_ & ~rd_, q.level != OUT_DEPTH - 1,
                                   (~wr_ & rd_) | (q.level != OUT_DEPTH)), f"{name}_n")
            m.d.sync += room.eq(room_n)
            return room, room_n

        cq_room, cq_room_n = room_reg(cqe_q, "cq_room")

        def read(arr, idx, name):
            """``arr[idx]`` read once into a signal (see :func:`_named`), as a tree of 2:1 muxes
            (``hdl.muxes.pick``: an ``Array`` read is a ``$pmux``/``$shiftx``, larger on the ECP5;
            every array here has a power-of-two length, so the index is always in range)."""
            return _named(m, _pick(arr, idx), name)

        def count(t, d):
            """A ring's entries from its ``tail`` and ``done`` pointers."""
            return (t - d)[:ptr_w]

        def live(t, d, idx):
            """MR-TXS-012: ring entry ``idx`` is posted and not completed."""
            return (idx - d[:db])[:db] < count(t, d) if D > 1 else count(t, d) != 0

        def lap_of(d, idx):
            """MR-TXS-142: live ring entry ``idx``'s lap, the top bits of its position (from the
            ring's ``done``: its position is done + (idx - done) mod depth; MR-TXS-490: LAP_BITS
            of them, done's lap plus one when the index is below done's)."""
            if D == 1:
                return d[:LB]
            return (d[db:] + (idx[:db] < d[:db]))[:LB]

        def of_stream(arr, qi, ptr):
            """``arr``'s element of stream ``qi``'s ring entry ``ptr`` (a D-way read)."""
            return _pick(arr[qi * D:(qi + 1) * D], ptr[:db]) if D > 1 else arr[qi]

        def of_conn(arr, c, slot):
            """``arr``'s element of connection ``c``'s entry ``slot`` (a slot-way read)."""
            return _pick(arr[c * sd:(c + 1) * sd], slot[:sdb]) if sdb else arr[c]

        def slot_of(idx, s_):
            """A message slot (MR-TXS-012): stream x depth + ring index."""
            return Cat(idx[:db], s_[:sb])

        # -- the report datapath (MR-TXS-020, MR-TXS-021, MR-TXS-034, MR-TXS-046): a report taken on
        # a port in cycle t waits in the port's boundary register in t+1 with its LAST term and
        # bytes, is taken into the report register with its checks, and is the action of t+2

        def rep_index(r):
            """The report's entry, stream queue, ring index and path row."""
            e = Cat(r.slot[:sdb], r.conn) if sdb else r.conn
            s_ = r.slot[db:] if D > 1 else r.slot
            qi = Cat(s_[:sb], r.conn) if S > 1 else r.conn
            idx = r.slot[:db] if D > 1 else Const(0, 1)
            return e, qi, idx, Cat(r.path[:pb], r.conn)

        # MR-TXS-375: each entry's nchunks - 1 and last chunk's bytes again in LUT RAM, written
        # with the registers (a work request's take, one entry a cycle), read combinationally
        # by the reports' LAST terms (a read port each: 6 COMB a 4 bits, not an E-way mux)
        nl_lay = data.StructLayout({"nchm1": chunk_w, "lastnb": nb_w})
        rep_w = lay.report.size         # MR-TXS-445: s_acked's report fields, below its `late`
        m.submodules.nl_mem = nl_mem = memory.Memory(shape=nl_lay, depth=E, init=[])
        nl_wr = nl_mem.write_port()

        def nl_lastnb(e, name):
            """MR-TXS-382: entry ``e``'s last chunk's bytes from ``nl_mem`` (a read port)."""
            nl = nl_mem.read_port(domain="comb")
            m.d.comb += nl.addr.eq(e)
            return _named(m, nl.data.lastnb, name)

        def nl_read(value, tag):
            """MR-TXS-375: the report's entry's ``nchm1``/``lastnb`` (``nl_mem``'s read) on this
            cycle's state, the LAST term's operands (MR-TXS-046)."""
            e = _named(m, rep_index(data.View(lay.report, value))[0], f"l_e_{tag}")
            nl = nl_mem.read_port(domain="comb")
            m.d.comb += nl.addr.eq(e)
            return _named(m, nl.data.as_value(), f"l_nl_{tag}")

        def last_terms(r, nl_value, tag):
            """MR-TXS-385: the LAST term and bytes (MR-TXS-034) of the boundary register's
            report ``r`` from its registered ``nl_mem`` read: the compare after the register."""
            nl = data.View(nl_lay, nl_value)
            last = _named(m, r.chunk == nl.nchm1, f"{tag}_last")
            return last, _named(m, Mux(last, nl.lastnb, mtu), f"{tag}_nb")

        # MR-TXS-046: the boundary registers. s_acked's is loaded every cycle and always taken
        # next; s_resend's holds its report until taken, its LAST term's operands read again
        # every cycle (a refill while it waits changes them). MR-TXS-385: each holds its entry's
        # nl_mem read, not the compare's result
        ba_valid, ba, ba_nl = Signal(), Signal(lay.acked), Signal(nl_lay, name="ba_nl")
        br_valid, br, br_nl = Signal(), Signal(lay.report), Signal(nl_lay, name="br_nl")
        pa_rep, ba_rep = self.s_acked.payload.as_value()[:rep_w], ba.as_value()[:rep_w]
        m.d.sync += [ba_valid.eq(self.s_acked.valid), ba.eq(self.s_acked.payload),
                     ba_nl.eq(nl_read(pa_rep, "pa"))]
        ba_last, ba_nb = last_terms(ba, ba_nl.as_value(), "ba")
        br_last, br_nb = last_terms(br, br_nl.as_value(), "br")
        acked_valid = ba_valid

        # MR-TXS-053: each boundary register's entry's next_chunk, a register beside it loaded
        # with the value after the edge (the entries' registers read, then the edge's change,
        # MR-TXS-055), so the report's distance starts at registers, not at a 16-way read
        ba_next, br_next = Signal(chunk_w, name="ba_next"), Signal(chunk_w, name="br_next")

        def after_edge(e, now, tag):
            """MR-TXS-055: entry ``e``'s next_chunk after this edge from ``now``, its value
            before it: + 1 for a new chunk, 0 for a refill (the edge's flags read at ``e``)."""
            new, refill = edge_flags(e, tag)
            return Mux(new, A.add(now, 1, name=f"next_more_{tag}"), Mux(refill, 0, now))

        # MR-TXS-378: each entry's next_chunk again in LUT RAM, written with its register (one
        # entry a cycle: a new chunk or a refill, MR-TXS-030), read combinationally by the
        # boundary registers' intakes
        m.submodules.next_mem = next_mem = memory.Memory(shape=chunk_w, depth=E, init=[])
        next_wr = next_mem.write_port()

        def next_after(value, tag):
            """The entry's next_chunk after this edge, for the report ``value`` names: its
            register read at the report's index, then the edge's change (MR-TXS-055)."""
            e = _named(m, rep_index(data.View(lay.report, value))[0], f"n_e_{tag}")
            nx = next_mem.read_port(domain="comb")                  # MR-TXS-378
            m.d.comb += nx.addr.eq(e)
            return after_edge(e, _named(m, nx.data, f"next_{tag}"), tag)

        m.d.sync += ba_next.eq(next_after(pa_rep, "pa"))

        def intake(value, i_next_chunk, tag):
            """A boundary register's report and its checks on this cycle's state, each on its
            own, the pick after them (MR-TXS-034): the entry reads and the distance do not wait
            for the pick. The chunk is also taken as sent when it is its entry's next chunk and
            that is sent at this edge (see rr_ok). ``i_next_chunk``: the entry's next_chunk,
            registered with the report (MR-TXS-053)."""
            r = data.View(lay.report, value)
            i_e, i_qi, i_idx, _ = rep_index(r)
            i_e, i_qi = _named(m, i_e, f"i_e_{tag}"), _named(m, i_qi, f"i_qi_{tag}")
            i_tail = read(tail, i_qi, f"i_tail_{tag}")
            i_done = read(done, i_qi, f"i_done_{tag}")
            # MR-TXS-142: and the entry's lap is the report's (else a late report of the slot's
            # previous message)
            i_base = ((r.path < PA) & ((r.slot >> sdb) == 0 if sdb < 3 else 1)
                      & live(i_tail, i_done, i_idx) & (lap_of(i_done, i_idx) == r.lap))
            # MR-TXS-032: the chunk's distance below next_chunk, saturated at W + 1 (a chunk
            # further down is below ack_base, ahead being at most W)
            i_dist = A.sub(i_next_chunk, r.chunk, f"i_dist_{tag}")
            i_far = ((i_dist >> (wb + 1)) != 0) | (i_dist[wb] & (i_dist[:wb] != 0))
            i_d = Mux(i_far, W + 1, i_dist[:wb + 1])
            # the distance when the next chunk is sent at this edge, next_chunk - (chunk - 1),
            # beside i_dist (chunk - 1 from the payload's register), not i_d + 1 after it
            i_dist1 = A.sub(i_next_chunk, A.sub(r.chunk, 1, f"i_chunk_m1_{tag}"),
                            f"i_dist1_{tag}")
            return {"e": i_e, "base": i_base, "sent": A.gt(i_next_chunk, r.chunk, f"i_sent_{tag}"),
                    "next": r.chunk == i_next_chunk, "far": i_far, "d": i_d,
                    "d1": i_dist1[:wb + 2]}

        in_a, in_r = intake(ba_rep, ba_next, "a"), intake(br.as_value(), br_next, "r")
        inc = data.View(lay.report, _named(m, Mux(acked_valid, ba_rep, br.as_value()),
                                           "inc"))
        i_ = {k: _named(m, Mux(acked_valid, in_a[k], in_r[k]), f"i_{k}") for k in in_a}
        i_e = i_["e"]
        rr_valid = Signal()             # a report in the register: this cycle's action
        rr_lost = Signal()
        rr_late = Signal()              # MR-TXS-491: a late report: its chunk, no flight
        rr = Signal(lay.report)
        rr_ok = Signal()                # not ignored (MR-TXS-020)
        rr_last = Signal()
        rr_nb = Signal(nb_w)
        rr_dist = Signal(wb + 2)        # next_chunk - chunk, saturated at W + 1
        rep = rr
        r_conn, r_slot, r_chunk = rep.conn, rep.slot, rep.chunk
        r_e, r_qi, r_idx, r_row = rep_index(rep)
        r_e, r_row = _named(m, r_e, "r_e"), _named(m, r_row, "r_row")
        r_last, r_nb = rr_last, rr_nb
        # the chunk is at or above ack_base when its distance below next_chunk is at most
        # ahead (next_chunk - ack_base); its bit in the window is then ahead - distance
        # MR-TXS-036: the window of last cycle's acknowledged report moves at this edge; a report
        # of the same entry reads that report's window and frame (the forward)
        wb_valid, wb_e, wb_conn = Signal(), Signal(len(r_e)), Signal(cb)
        wb_b, wb_ahead, wb_base = Signal(W), Signal(wb + 1), Signal(chunk_w)
        fwd = _named(m, wb_valid & (wb_e == r_e), "fwd")
        # MR-TXS-386: r_e's `ahead` (the pending window's when it names r_e) is a register loaded
        # with the report at its intake (below), not a 16-way read after rr
        r_ahead = Signal(wb + 1, name="r_ahead")
        r_bits = _named(m, Mux(fwd, wb_b, win_read(bits_mem, r_e, "e_bits_r")), "r_bits")
        r_base = Mux(fwd, wb_base, win_read(base_mem, r_e, "e_base_r"))
        a_in = _named(m, rr_dist <= r_ahead, "a_in")
        a_lo = _named(m, (r_ahead - rr_dist)[:wb], "a_lo")
        # MR-TXS-047: a lost report's "already acknowledged" test at its intake, on the chunk's
        # place in the window of this cycle (below ack_base, or its bit; the pending window
        # forwarded), registered; the acknowledged report acted on in this cycle is added below
        rr_was_acked = Signal()
        lr_e = in_r["e"]
        # MR-TXS-171: the boundary register's entry's window (`ack_base`, bits) as registers
        # beside it, and whether the pending window (wb) names that entry as a register: the
        # test on each from registers, the forward bit picking last (MR-TXS-172: their loads)
        br_wbase, br_wbits = Signal(chunk_w, name="br_wbase"), Signal(W, name="br_wbits")
        br_wfwd = Signal(name="br_wfwd")

        def lr_test(base, bits, tag):
            """MR-TXS-047's test of br's chunk on the window ``base``/``bits``."""
            below = A.gt(base, br.chunk, f"lr_below_{tag}")
            lo = _named(m, (br.chunk[:wb] - base[:wb])[:wb], f"lr_lo_{tag}")
            return below | bits.bit_select(lo, 1)

        lr_was_acked = _named(m, Mux(br_wfwd, lr_test(wb_base, wb_b, "fwd"),
                                     lr_test(br_wbase, br_wbits, "reg")), "lr_was_acked")
        # MR-TXS-240: a lost report is taken whatever its connection's FIFO holds (a full FIFO's
        # chunk is kept in its entry's set, MR-TXS-241), so its flight is always released
        take_resend = _named(m, br_valid & ~acked_valid, "take_resend")
        m.d.comb += self.s_acked.ready.eq(1)
        # MR-TXS-156: a skid register before the boundary register: s_resend.ready is the skid's
        # emptiness (a flip-flop), so the unit's report queue does not wait on take_resend;
        # the boundary register loads from the skid when it holds a report, else from the port
        sk_valid, sk = Signal(name="rs_sk_valid"), Signal(lay.report, name="rs_sk")
        m.d.comb += self.s_resend.ready.eq(~sk_valid)
        src = _named(m, Mux(sk_valid, sk.as_value(), self.s_resend.payload.as_value()), "rs_src")
        src_valid = sk_valid | self.s_resend.valid
        br_free = ~br_valid | take_resend
        load_r = _named(m, br_free & src_valid, "load_r")
        # MR-TXS-157: the port's report waits in the skid while the boundary register holds one
        m.d.sync += sk_valid.eq(src_valid & ~br_free)
        with m.If(~sk_valid):
            m.d.sync += sk.eq(self.s_resend.payload)
        m.d.sync += [br_valid.eq(load_r | (br_valid & ~take_resend)),
                     br_nl.eq(Mux(load_r, nl_read(src, "pr"), nl_read(br.as_value(), "hr"))),
                     # MR-TXS-055: a held report's entry's next_chunk is br_next itself
                     br_next.eq(Mux(load_r, next_after(src, "pr"),
                                    after_edge(_named(m, rep_index(br)[0], "n_e_hr"), br_next,
                                               "hr")))]
        with m.If(load_r):
            m.d.sync += br.eq(src)
        busy = rr_valid

        # -- path windows (MR-TXS-028, MR-TXS-029, MR-TXS-052): the port's boundary register
        # (cw_b), then the write checked and its change against the path's window registered
        # (cw_d), then written at the next edge with the room's change
        cwl = self.s_cwnd.payload
        cw_b_valid = Signal(name="cw_b_valid")
        cw_b = Signal(lay.cwnd, name="cw_b")
        cw_d_valid = Signal(name="cw_d_valid")
        gated = self.interval > 1
        if gated:
            # MR-TXS-414: the interval gate, and no write in the pipe (registers only)
            cw_take = Signal(name="cw_take")
            cw_ready = _named(m, interval_ready(m, self.interval, cw_take, "cw_wait")
                              & ~cw_b_valid & ~cw_d_valid, "cw_ready")
            m.d.comb += [cw_take.eq(self.s_cwnd.valid & cw_ready), self.s_cwnd.ready.eq(cw_ready)]
            m.d.sync += [cw_b_valid.eq(cw_take), cw_b.eq(cwl)]
        else:
            m.d.comb += self.s_cwnd.ready.eq(1)
            m.d.sync += [cw_b_valid.eq(self.s_cwnd.valid), cw_b.eq(cwl)]
        cw_b_row = _named(m, Cat(cw_b.path[:pb], cw_b.conn) if C > 1 else cw_b.path[:pb], "cw_b_row")
        cw_d_row = Signal(len(cw_b_row), name="cw_d_row")
        cw_d_hot = Signal(C * PA, name="cw_d_hot")
        cw_d_conn = Signal(C, name="cw_d_conn")
        cw_d_cw = Signal(bytes_w, name="cw_d_cw")
        cw_d_cwm = Signal(signed(bytes_w + 2), name="cw_d_cwm")
        cw_d_delta = Signal(signed(bytes_w + 2), name="cw_d_delta")
        # MR-TXS-415: above interval 1 the write waits in cw_d while the cycle's action changes
        # its row (cw_hold, set below); its row and connection bits then name the landing edge
        cw_hold = Signal(name="cw_hold")
        if gated:
            cw_go = _named(m, cw_d_valid & ~cw_hold, "cw_go")
            cw_hot = _named(m, cw_d_hot & ~cw_hold.replicate(C * PA), "cw_hot")
            cw_conn = _named(m, cw_d_conn & ~cw_hold.replicate(C), "cw_conn")
        else:
            cw_go, cw_hot, cw_conn = cw_d_valid, cw_d_hot, cw_d_conn
        cw_lim = (1 << bytes_w) - 1 - mtu
        cw_new = _named(m, Mux(A.gt(cw_b.cwnd, Const(cw_lim, bytes_w), "cw_over"), cw_lim,
                               cw_b.cwnd), "cw_new")
        # the path's window as it is after this edge: the write in cw_d when it names the same
        # path (it is written at this edge)
        cw_rd = cw_mem.read_port(domain="comb")
        m.d.comb += [cw_rd.addr.eq(cw_b_row),
                     cw_mwr.addr.eq(cw_d_row), cw_mwr.en.eq(cw_go), cw_mwr.data.eq(cw_d_cw)]
        m.d.sync += cw_set.eq(cw_set | cw_hot)
        cw_row = _named(m, Mux(cw_set.bit_select(cw_b_row, 1), cw_rd.data,
                               Const(self.cwnd, bytes_w)), "cw_row")
        # MR-TXS-414: above interval 1 cw_d is empty while cw_b holds a write: no forward
        cw_old = (cw_row if gated else
                  _named(m, Mux(cw_d_valid & (cw_d_row == cw_b_row), cw_d_cw, cw_row), "cw_old"))
        cw_delta = A.sub(_ext(cw_new, bytes_w + 2), _ext(cw_old, bytes_w + 2), "cw_delta")
        cw_cwm = A.sub(_ext(cw_new, bytes_w + 2), mtu, "cw_cwm")
        cw_d_load = [cw_d_valid.eq(cw_b_valid), cw_d_row.eq(cw_b_row),
                     cw_d_hot.eq(Cat(*(cw_b_valid & (cw_b_row == r) for r in range(C * PA)))),
                     cw_d_conn.eq(Cat(*(cw_b_valid & (cw_b.conn == c) for c in range(C)))),
                     cw_d_cw.eq(cw_new), cw_d_cwm.eq(cw_cwm), cw_d_delta.eq(cw_delta)]
        if gated:
            with m.If(~cw_hold):                # MR-TXS-415: held
                m.d.sync += cw_d_load
        else:
            m.d.sync += cw_d_load
        # the room of cw_d's path plus the change, for a path no action changes at this edge
        cw_room = A.add(read(p_room, cw_d_row, "cw_room_old"), cw_d_delta, name="cw_room")

        # -- completions (MR-TXS-022)
        comp_valid = []
        for qi in range(Q):
            # every chunk sent (send has passed the oldest entry) and acknowledged (ahead 0); or
            # failed (MR-TXS-027); either with nothing in flight (MR-TXS-492: a late report may
            # acknowledge a chunk whose resend is in flight)
            comp_valid.append(of_stream(e_idle, qi, done[qi])
                              & Mux(of_stream(e_fail, qi, done[qi]), tail[qi] != done[qi],
                                    (send[qi] != done[qi])
                                    & (of_stream(e_ahead, qi, done[qi]) == 0)))
        # MR-TXS-045: each stream's test registered; the pick a cycle later among the streams
        # of connections untouched at the edge, but the completion register's own stream (a
        # connection's state is then the one the tests saw)
        qc_r = Signal(Q, name="qcomp")
        m.d.sync += qc_r.eq(Cat(*comp_valid))
        comp_valid_r, comp_q = Signal(), Signal(_bits(Q))
        touched = Signal(C)
        qc_pick = [qc_r[qi] & ~touched[qi // S] & ~(comp_valid_r & (comp_q == qi))
                   for qi in range(Q)]
        next_any, next_q = _first(qc_pick)
        next_q = _named(m, next_q[:_bits(Q)], "next_comp_q")
        next_e = Cat(read([done[qi][:db] for qi in range(Q)], next_q, "next_comp_done"), next_q) \
            if D > 1 else next_q
        next_e = _named(m, next_e, "next_comp_e")
        # each stream's oldest entry's status, read before the pick selects one (its length is
        # read with the descriptor at the completion, MR-TXS-043)
        q_status = [Mux(of_stream(e_fail, qi, done[qi]), of_stream(e_status, qi, done[qi]), 0)
                    for qi in range(Q)]
        # MR-TXS-027: per stream, its oldest message not sent to its end (only a failed one
        # completes so); the connection's unsent count goes down by its chunks from next_chunk
        # on at the completion's edge (MR-TXS-391: read at the registered completion's entry)
        q_unsent = [send[qi] == done[qi] for qi in range(Q)]
        # MR-TXS-035: the completion is picked with its terms (read on this cycle's state, the
        # same as the tests' for an untouched connection) and registered; the next cycle takes
        # it unless its connection was touched at the edge (its terms are then unchanged)
        comp_e = Signal(len(next_e))
        comp_unsent = Signal()
        comp_status = Signal(5)
        # MR-TXS-048: the registered completion and the completion queue's room, one register
        comp_go = Signal(name="comp_go")
        comp_go_n = _named(m, next_any & cq_room_n, "comp_go_n")
        m.d.sync += [comp_valid_r.eq(next_any), comp_q.eq(next_q), comp_e.eq(next_e),
                     comp_go.eq(comp_go_n),
                     comp_unsent.eq(_pick(q_unsent, next_q)),
                     comp_status.eq(read(q_status, next_q, "next_comp_status"))]
        m.d.comb += desc_rd_cq.addr.eq(comp_e)
        # MR-TXS-391: the picked completion's entry's next_chunk and nchunks - 1, read from
        # their copies (next_mem, nl_mem) at the pick and registered with it (as `left` was)
        comp_nx, comp_nl = next_mem.read_port(domain="comb"), nl_mem.read_port(domain="comb")
        comp_next = Signal(chunk_w, name="comp_next")
        comp_nchm1 = Signal(chunk_w, name="comp_nchm1")
        m.d.comb += [comp_nx.addr.eq(next_e), comp_nl.addr.eq(next_e)]
        m.d.sync += [comp_next.eq(comp_nx.data), comp_nchm1.eq(comp_nl.data.nchm1)]
        comp_conn = comp_q >> sb if S > 1 else comp_q
        # MR-TXS-244: the refill decided last cycle acts unless its connection was touched at
        # the edge between; second in MR-TXS-030's priority (after the report)
        m.d.comb += fill.eq(~busy & lq_valid & ~touched.bit_select(lq_conn, 1))
        comp = _named(m, ~busy & ~fill & comp_go & ~touched.bit_select(comp_conn, 1), "comp")

        # -- work requests (MR-TXS-010, MR-TXS-011, MR-TXS-037): the port's request is decoded
        # and registered with its status, its entry and its ring's fullness (corrected for this
        # edge's action); the register's request is the action
        # MR-TXS-067: a READ response on s_rsp enters the register before a work request, as a
        # request of op 7 on the last stream's ring, its message number its own
        rin = self.s_rsp.payload
        in_rsp = self.s_rsp.valid
        win = Signal(lay.wr, name="win")
        m.d.comb += win.eq(self.s_wr.payload)
        with m.If(in_rsp):
            m.d.comb += [win.op.eq(OP_READ_RESP), win.conn.eq(rin.conn), win.stream.eq(S - 1),
                         win.wr_id.eq(rin.stream), win.laddr.eq(rin.laddr),
                         win.length.eq(Mux(rin.err, 0, rin.length))]
        # MR-TXS-393: a response's VA and rkey are 0 in the descriptor's write (beside a send's,
        # w_rsp), its imm left as s_wr's (the frame reads an imm of ops 1 and 3 only)
        i_wqi = _named(m, Cat(win.stream[:sb], win.conn) if S > 1 else win.conn, "in_wqi")
        in_tail, in_done = read(tail, i_wqi, "in_wtail"), read(done, i_wqi, "in_wdone")
        w_len1 = A.sub(win.length, 1, "w_len1")
        # MR-TXS-011, MR-TXS-061, MR-TXS-096: ops 0..6 are sent; a READ is one chunk of no
        # payload; an atomic one chunk of its operands (its length must be 8: nchunks - 1 is 0)
        w_bad_op = ((win.op == OP_READ_RESP) & ~in_rsp) | ((win.stream >> sb) != 0 if S > 1 else win.stream != 0)
        in_read = win.op == OP_READ
        _, _, _, in_atomic = _op_kind(win.op)
        # MR-TXS-067: a response is never refused (its READ was bounded at the requester)
        w_bad_len = ~in_rsp & Mux(in_atomic, win.length != ATOMIC_LEN, (win.length != 0) & (
            (w_len1 >> (records.CHUNK_BITS + mtu_log2)) != 0))
        in_status = Mux(w_bad_op, STATUS_LOC_QP_OP_ERR, Mux(w_bad_len, STATUS_LOC_LEN_ERR, 0))
        in_nchm1 = Mux((win.length == 0) | in_read, 0, w_len1 >> mtu_log2)[:chunk_w]
        in_low = win.length[:mtu_log2]
        # MR-TXS-097: a compare-and-swap's 16 bytes (a fetch-and-add's 8 are its length's)
        in_lastnb = Mux(in_read, 0, Mux(in_atomic & win.op[0], 16,
                                        Mux(in_low != 0, in_low, Mux(win.length == 0, 0, mtu))))
        in_count = count(in_tail, in_done)
        wr = Signal(lay.wr)                     # the register (MR-TXS-037)
        wq_valid = Signal()
        w_qi = Signal(len(i_wqi), name="w_qi")
        w_status = Signal(5, name="w_status")
        w_bad = Signal(name="w_bad")            # status != 0, registered with it (MR-TXS-039)
        w_nchm1 = Signal(chunk_w, name="w_nchm1")
        w_lastnb = Signal(nb_w, name="w_lastnb")
        w_idx = Signal(db, name="w_idx")        # its ring entry: the stream's tail
        w_full = Signal(name="w_full")          # its ring has no free entry
        w_msg = Signal(32, name="w_msg")        # its message number (MR-TXS-039)
        w_msg1 = Signal(32, name="w_msg1")      # its stream's msg_next after it
        w_rseq = Signal(32, name="w_rseq")      # MR-TXS-058: its recv_seq (a send's)
        w_rseq1 = Signal(32, name="w_rseq1")    # its stream's send_seq after it
        w_rsp = Signal(name="w_rsp")            # MR-TXS-067: a READ response (from s_rsp)
        w_err = Signal(name="w_err")            # and refused at the responder (flag ERROR)
        # MR-TXS-048: "the register holds a request that may act" (a good one with ring room, a
        # refused one with completion-queue room) as one register, from the next values of
        # its terms; and the request's entry, stream and connection as one-hot bits registered
        # with it (0 for a refused one), so the work request's enables start at registers
        w_go = Signal(name="w_go")
        w_qhot = Signal(Q, name="w_qhot")
        w_chot = Signal(C, name="w_chot")
        m.d.comb += take_wr.eq(~busy & ~fill & ~comp & w_go)
        # MR-TXS-107: a good READ on s_wr whose outstanding-read row is not free waits at the
        # port (never in the register, which a READ response must always reach, MR-TXS-067)
        rd_block = Signal(name="rd_block")
        m.d.comb += [self.s_rsp.ready.eq(~wq_valid | take_wr),
                     self.s_wr.ready.eq((~wq_valid | take_wr) & ~in_rsp & ~rd_block)]
        wr_in = self.s_rsp.ready & ((self.s_wr.valid & ~rd_block) | in_rsp)
        # MR-TXS-465/466: a connection has started once a request entered the register for it;
        # an initial-PSN write lands on its row only before (no decision has read the row then:
        # the connection has no work), else it is ignored and said so a cycle later
        c_started = Signal(C, name="c_started")
        pwr = self.s_psn.payload
        psn_ign = Signal(name="psn_ign")
        m.d.comb += [self.s_psn.ready.eq(1), self.psn_ignored.eq(psn_ign)]
        m.d.sync += psn_ign.eq(self.s_psn.valid & c_started.bit_select(pwr.conn, 1))
        with m.If(wr_in):
            m.d.sync += c_started.bit_select(win.conn, 1).eq(1)
        psn_write = self.s_psn.valid & ~c_started.bit_select(pwr.conn, 1)

        # -- scheduling (MR-TXS-023..026, MR-TXS-032): per connection, every term from registers in
        # parallel; the source (resend head or stream pick) chooses among them
        # MR-TXS-282: "no report, completion or work request acts and both output queues have
        # room" as one register, loaded from the next values of its terms (below)
        sched = Signal(init=1, name="sched_r")
        # MR-TXS-049: per stream, "its send message exists, is not failed and has its next chunk
        # in the chunk window" as a register, loaded from the term's value after the edge, so the
        # stream pick starts at registers (not at the send entry's reads)
        q_ok = [Signal(name=f"q_ok{qi}") for qi in range(Q)]
        # MR-TXS-054: per stream, its send entry's nnb (the next chunk's bytes) as a register,
        # loaded with its value after the edge, so the window compares start at registers
        q_nnb = [Signal(nb_w, name=f"q_nnb{qi}") for qi in range(Q)]
        self.probe = {"q_ok": q_ok, "send": send, "tail": tail, "ahead": e_ahead, "fail": e_fail,
                      "wb": wb, "next": [next_mem.data[e] for e in range(E)], "ba": ba, "br": br, "ba_next": ba_next,
                      "br_next": br_next, "ba_valid": ba_valid, "br_valid": br_valid,
                      "q_nnb": q_nnb, "nnb": e_nnb,
                      # MR-TXS-171: br's window registers and the state they stand for
                      "br_wbase": br_wbase, "br_wbits": br_wbits, "br_wfwd": br_wfwd,
                      "base": e_base, "bits": e_bits, "wb_valid": wb_valid, "wb_e": wb_e,
                      "lnq": e_lnq, "lq_valid": lq_valid,
                      # MR-TXS-385/386: the registers and the state they stand for
                      "ba_nl": ba_nl, "br_nl": br_nl, "nchm1": e_nchm1, "lastnb": e_lastnb,
                      "rr": rr, "r_ahead": r_ahead, "wb_ahead": wb_ahead}
        # MR-TXS-160: the pacing condition per connection (registers): no turn asked for and not
        # back (`pend`), not waiting for the last turn's time (`late`)
        if self.pacing:
            pace_pend = Signal(C, name="pace_pend")
            pace_late = Signal(C, name="pace_late")
            pace_due = [_named(m, ~pace_pend[c] & ~pace_late[c], f"pace_due{c}") for c in range(C)]
            if self.pace_ignored:
                pace_due = [Const(1, 1)] * C
        cand = []
        for c in range(C):
            nonempty = rq_level[c] != 0
            m.d.comb += rq_mem_rd[c].addr.eq(rq_head[c])                 # MR-TXS-377
            h_slot = _named(m, rq_mem_rd[c].data.slot, f"h{c}_slot")
            h_chunk = _named(m, rq_mem_rd[c].data.chunk, f"h{c}_chunk")
            h_last = _named(m, rq_mem_rd[c].data.last, f"h{c}_last")
            h_stale = read(rq_stale[c], rq_head[c], f"h{c}_stale")
            h_e = Cat(h_slot[:sdb], Const(c, cb)) if sdb else Const(c, cb)
            h_s = h_slot[db:] if D > 1 else h_slot
            h_qi = Cat(h_s[:sb], Const(c, cb)) if S > 1 else Const(c, cb)
            h_idx = h_slot[:db] if D > 1 else Const(0, 1)
            # MR-TXS-032: every window term of every entry's next chunk and of the resend head
            # from registers in parallel; the stream pick and the source only select among them.
            # The connection window (MR-CC-001) and the AckReq fill term per path (MR-TXS-026)
            # are `bytes <= room` and `bytes > room`.
            c_idle = c_infl[c] == 0
            rows = range(c * PA, (c + 1) * PA)
            h_nb = rq_hnb[c]
            h_fits = c_idle | ~A.gt_room(h_nb, c_room[c], f"h{c}_cgt")
            h_fill = [A.gt_room(h_nb, p_room[row], f"h{c}_pgt{row}") for row in rows]
            # streams: the first from the pointer whose send message exists with its next chunk in
            # the chunk window (ahead < W)
            # the compares per stream, of its send entry's bytes (a D-way read of registers, as
            # deep as the D-way read of per-entry compares it replaces, and S x (1 + PA)
            # compares instead of S x D x (1 + PA): issue 13)
            s_ok, s_nnb, s_fits, s_fill = [], [], [], []
            for s in range(S):
                qi = c * S + s
                # MR-TXS-049: the stream's term is a register (its definition's next value)
                s_ok.append(q_ok[qi])
                s_nnb.append(q_nnb[qi])
                s_fits.append(_named(m, c_idle | ~A.gt_room(s_nnb[s], c_room[c], f"cgt{qi}"),
                                     f"fits{qi}"))
                s_fill.append([_named(m, A.gt_room(s_nnb[s], p_room[row], f"pgt{qi}_{row}"),
                                      f"fill{qi}_{row}") for row in rows])
            s_any, s_pick = _first_from(s_ok, c_srr[c], S)
            s_pick = _named(m, s_pick[:sb], f"spick{c}")

            def by_stream(vals, name):
                return read(vals, s_pick, name) if S > 1 else vals[0]

            n_qi = Cat(s_pick, Const(c, cb)) if S > 1 else Const(c, cb)
            n_idx = (read(send[c * S:(c + 1) * S], s_pick, f"nsend{c}")[:db] if D > 1
                     else Const(0, 1))
            n_e = Cat(n_idx[:db], n_qi) if D > 1 else n_qi
            # the source: the resend head when the FIFO holds one (a stale head is a drop)
            src_qi = Mux(nonempty, h_qi, n_qi)
            src_idx = Mux(nonempty, h_idx, n_idx)
            src_e = _named(m, Mux(nonempty, h_e, n_e), f"src_e{c}")
            # each stream's send entry's terms read before the stream pick selects one
            qs = range(c * S, (c + 1) * S)
            # MR-TXS-394: each stream's send entry's next_chunk, a read port of next_mem each
            s_chunk = []
            for qi in qs:
                nx = next_mem.read_port(domain="comb")
                m.d.comb += nx.addr.eq(Cat(send[qi][:db], Const(qi, _bits(Q))) if D > 1 else qi)
                s_chunk.append(_named(m, nx.data, f"s_chunk{qi}"))
            n_chunk = by_stream(s_chunk, f"n_chunk{c}")
            n_first = by_stream([x == 0 for x in s_chunk], f"n_first{c}")
            n_last = by_stream([of_stream(e_nlast, qi, send[qi]) for qi in qs], f"n_last{c}")
            n_nb = by_stream(s_nnb, f"n_nb{c}")
            src_chunk = _named(m, Mux(nonempty, h_chunk, n_chunk), f"src_chunk{c}")
            src_first = Mux(nonempty, h_chunk == 0, n_first)
            src_last = _named(m, Mux(nonempty, h_last, n_last), f"src_last{c}")
            nb = _named(m, Mux(nonempty, h_nb, n_nb), f"nb{c}")
            fits = Mux(nonempty, h_fits, by_stream(s_fits, f"s_fits{c}"))
            drop = nonempty & (h_stale | of_conn(e_fail, c, h_slot))
            have = Mux(nonempty, ~h_stale, s_any)
            # paths (MR-TXS-025) and the AckReq terms of each (MR-TXS-026)
            p_ok, p_since_req, p_fill = [], [], []
            for p in range(PA):
                row = c * PA + p
                # MR-TXS-052: bytes in flight below the window is room = window - mtu -
                # inflight above -mtu: the room non-negative, or its bits from log2(mtu) up all
                # ones and a low bit set (no compare)
                rm = p_room[row]
                room_ok = ~rm[-1] | (rm[mtu_log2:].all() & rm[:mtu_log2].any())
                # MR-TXS-115: collapsed, the window is one MTU: bytes in flight below it
                room_ok = Mux(p_col[row], (p_infl[row] >> mtu_log2) == 0, room_ok)
                act_ok = (_named(m, room_ok, f"pinfl_ok{row}")
                          & A.gt(Const(self.path_pkts, 8), p_pkts[row], f"pkts_ok{row}"))
                # MR-TXS-117: a probing path takes a packet that is not a resend when it has
                # none in flight
                p_ok.append(_named(m, Mux(p_prb[row], (p_pkts[row] == 0) & ~nonempty, act_ok),
                                   f"p_ok{row}"))
                p_since_req.append((p_since[row] >= self.ack_every - 1) | p_prb[row])
                # MR-TXS-115: the fill term on a window of one MTU: anything in flight after it
                p_fill.append(Mux(p_col[row], nb.any() | p_infl[row].any(),
                                  Mux(nonempty, h_fill[p],
                                      by_stream([f[p] for f in s_fill], f"s_fill{c}_{p}"))))
            # the path pick as one-hot bits (MR-TXS-023's round robin, path 0 when none fits,
            # as the index pick was): the PSN, AckReq terms and row bits are AND-OR reads of
            # them, not a mux tree after the index's mux chain (512 bits: 10 LUT levels from
            # `pinfl` to `cand_psn` before)
            p_any = Cat(*p_ok).any()
            p_hot = _rr_onehot(p_ok, c_rr[c], PA)
            p_hot = [_named(m, h | ~p_any, f"phot{c}_0") if p == 0 else _named(m, h, f"phot{c}_{p}")
                     for p, h in enumerate(p_hot)]
            p_pick = _named(m, Cat(*(Cat(*(p_hot[p] for p in range(PA) if (p >> b) & 1)).any()
                                     for b in range(pb))) if PA > 1 else Const(0, 1),
                            f"ppick{c}")[:pb]

            def by_path(vals, p_hot=p_hot):
                out = Mux(p_hot[0], vals[0], 0)
                for h, v in zip(p_hot[1:], vals[1:]):
                    out = out | Mux(h, v, 0)
                return out
            # after this packet fewer than paths: unsent + resend entries <= paths, on the low
            # bits of unsent (a high bit set is more than paths)
            lo = PA.bit_length()
            left_few = ((c_unsent[c] >> lo) == 0) & ((c_unsent[c][:lo] + rq_level[c]) <= PA)
            req = by_path(p_since_req) | by_path(p_fill) | left_few
            # MR-TXS-039: the source's entry within the connection, and its stream when this is
            # its last chunk, as one-hot bits registered with the candidate (the entries' and
            # streams' enables then select by the pick only)
            e_hot = Cat(*(src_e[:sdb] == k for k in range(sd))) if sdb else Const(1, 1)
            s_hot = (Cat(*((src_qi[:sb] == s) & src_last for s in range(S))) if S > 1
                     else src_last)
            # MR-TXS-041: the path's PSN, read here and registered with the candidate (its
            # connection is untouched until it is used: the row's PSN is unchanged), so the
            # frame queue's write data is the pick's mux of registers; the descriptor is read
            # at the pick's entry into the frame queue's stage (MR-TXS-353)
            src_psn = _named(m, by_path(list(p_psn[c * PA:(c + 1) * PA])), f"src_psn{c}")
            # the enables' registered bits: the entry of a packet, of a new chunk, the stream of
            # a new last chunk, the row of a packet (a drop is a resend: new means no resend)
            pkt_e_hot = Mux(drop, 0, e_hot)
            new_e_hot = Mux(nonempty, 0, e_hot)
            go = have & fits & p_any
            if self.pacing:
                go = go & pace_due[c]                          # MR-TXS-160
            extra = {}
            if self.pacing:
                # MR-TXS-175: the packet's op for its wire length (MR-TXS-356: a copy of the
                # descriptors' ops, read by each candidate)
                op_rd = op_mem.read_port(domain="comb")
                m.d.comb += op_rd.addr.eq(src_e)
                extra["op"] = op_rd.data
            cand.append(dict(**extra, ready=drop | go, drop=drop, resend=nonempty,
                             pkt_e_hot=pkt_e_hot, new_e_hot=new_e_hot,
                             new_last_hot=Mux(nonempty, 0, s_hot),
                             pkt_path_hot=Mux(drop, 0, Cat(*p_hot)),
                             psn=src_psn,
                             gen=by_path(list(p_gen[c * PA:(c + 1) * PA])),     # MR-TXS-121
                             qi=src_qi, idx=src_idx,
                             chunk=src_chunk, last=src_last, first=src_first, path=p_pick,
                             nb=nb, req=req, s=s_pick))
        # MR-TXS-033: the candidates are registered; the pick takes last cycle's, but not those of
        # connections whose state last cycle's action or failures changed
        cand_r = []
        for c, x in enumerate(cand):
            r = {}
            for k, v in x.items():
                r[k] = Signal(len(Value.cast(v)), name=f"cand{c}_{k}")
                m.d.sync += r[k].eq(v)
            cand_r.append(r)
        if self.pacing:
            # MR-TXS-167: a packet's candidate also needs its connection due in this cycle (a
            # re-timing write may have set `late` at the edge since its decision)
            for c, r in enumerate(cand_r):
                r["ready"] = r["ready"] & (r["drop"] | pace_due[c])
        # the pick as one-hot bits; each connection's step enable is its bit and the step's
        # (MR-TXS-039), the index (the fields' mux) encoded from them
        sel = [_named(m, v, f"sel{c}") for c, v in enumerate(
            _rr_onehot([x["ready"] & ~touched[c] & ~qc_r[c * S:(c + 1) * S].any()
                        for c, x in enumerate(cand_r)], conn_rr, C))]
        pick = _named(m, Cat(*(Cat(*(sel[c] for c in range(C) if (c >> b) & 1)).any()
                               for b in range(cb))) if C > 1 else Const(0, 1), "pick")[:cb]
        # -- tail probes (MR-TXS-080..082, MR-TXS-086): the port's boundary register; its probe
        # decided on each cycle's state and registered; the decision of the cycle before acts
        # when the probe's connection was untouched at the edge between (so it is the present
        # state's, as a candidate's, MR-TXS-033), before the scheduling step
        pb_valid = Signal(name="pb_valid")
        pbr = Signal(lay.probe, name="probe_b")
        pd_valid = Signal(name="pd_valid")
        # MR-TXS-283: "the decision in pd acts" as a register (its next value below, with
        # touched's next value)
        probe_go = Signal(name="probe_go")
        probe_act = _named(m, sched & probe_go, "probe_act")
        # MR-TXS-118: a timeout's verdict in the register acts in the cycle after its load
        v_act = _named(m, pb_valid & pbr.to, "v_act")
        probe_ready = ~pb_valid | probe_act | pbr.to
        if self.restores:
            # MR-TXS-186: no probe taken while a restore is offered (a verdict never passes
            # it); the offer (r_valid) below, MR-TXS-184
            r_valid = Signal(name="restore_valid")
            probe_ready = probe_ready & ~r_valid
        m.d.comb += self.s_probe.ready.eq(probe_ready)
        load_pb = self.s_probe.ready & self.s_probe.valid
        m.d.sync += pb_valid.eq(load_pb | (pb_valid & ~probe_act & ~v_act))
        pd_valid_n = _named(m, pb_valid & ~probe_act & ~v_act, "pd_valid_n")
        m.d.sync += pd_valid.eq(pd_valid_n)
        with m.If(load_pb):
            m.d.sync += pbr.eq(self.s_probe.payload)
        pb_row = _named(m, Cat(pbr.path[:pb], pbr.conn), "pb_row")
        # MR-TXS-184/185: per path row a restore not yet given on m_restore (restores only);
        # the row whose verdict is in the boundary register is not offered (the verdict wins);
        # MR-TXS-347/348: and a kept verdict's record (``kpt``), offered after the row's restore
        if self.restores:
            p_rst = [Signal(name=f"rst{r}") for r in range(C * PA)]
            p_kpt = [Signal(name=f"kpt{r}") if self.kept_out else Const(0, 1)
                     for r in range(C * PA)]
            pb_in = _named(m, v_act & ((pbr.path >> pb) == 0), "pb_in")
            r_off = [_named(m, (p_rst[r] | p_kpt[r]) & ~(pb_in & (pb_row == r)), f"rst_off{r}")
                     for r in range(C * PA)]
            r_sel = [_named(m, r_off[r] & ~Cat(*r_off[:r]).any() if r else r_off[r],
                            f"rst_sel{r}") for r in range(C * PA)]
            r_idx = Cat(*(Cat(*(r_sel[r] for r in range(C * PA) if (r >> b) & 1)).any()
                          for b in range((C * PA - 1).bit_length()))) if C * PA > 1 else Const(0, 1)
            r_take = _named(m, r_valid & self.m_restore.ready, "restore_take")
            m.d.comb += [r_valid.eq(Cat(*r_off).any()), self.m_restore.valid.eq(r_valid),
                         self.m_restore.payload.path.eq(r_idx[:pb]),
                         self.m_restore.payload.conn.eq(r_idx[pb:]),
                         self.m_restore.payload.kept.eq(
                             Cat(*(r_sel[r] & ~p_rst[r] for r in range(C * PA))).any()
                             if self.kept_out else 0)]
        # MR-TXS-376: the path rows' newest packet records (slot, chunk, bytes, FIRST, LAST)
        # and that packet's PSN again in LUT RAM, written with the registers by the packet (one
        # row a cycle), read combinationally at the probe's row (not a row-way mux of each)
        tr_lay = data.StructLayout({"slot": 3, "chunk": chunk_w, "nb": nb_w, "first": 1,
                                    "last": 1, "psn": psn_w})
        m.submodules.trec_mem = trec_mem = memory.Memory(shape=tr_lay, depth=C * PA, init=[])
        trec_wr, trec = trec_mem.write_port(), trec_mem.read_port(domain="comb")
        m.d.comb += trec.addr.eq(pb_row)
        pb_slot = _named(m, trec.data.slot, "pb_tslot")
        pb_e = _named(m, Cat(pb_slot[:sdb], pbr.conn) if sdb else pbr.conn, "pb_e")
        # MR-TXS-082: dropped unless the path is in the instance, the PSN is its newest, the
        # path has a packet in flight, the record names a live message and that is not failed
        # (MR-TXS-376: the row's PSN is its newest packet's + 1 once it has sent one, and a row
        # that has not has no packet in flight: the newest packet's PSN is the probe's)
        pb_ok = ((pbr.path >> pb) == 0) & (trec.data.psn == pbr.psn)
        pb_ok = pb_ok & (read(p_pkts, pb_row, "pb_pkts") != 0) & read(p_tv, pb_row, "pb_tv")
        pb_ok = _named(m, pb_ok & ~read(e_fail, pb_e, "pb_fail"), "pb_ok")
        # MR-TXS-353: the probed entry, its descriptor and operands (MR-TXS-098) read when the
        # probe acts
        pd_e = Signal(len(pb_e), name="pd_e")
        pd_ok = Signal(name="pd_ok")
        pd_chunk, pd_nb = Signal(chunk_w, name="pd_chunk"), Signal(nb_w, name="pd_nb")
        pd_first, pd_last, pd_slot = Signal(name="pd_first"), Signal(name="pd_last"), Signal(3, name="pd_slot")
        pd_gen = Signal(GEN_BITS, name="pd_gen")           # MR-TXS-121: the path's entropy now
        # MR-TXS-411: the probed entry's lap (live and the record's when the probe is not
        # dropped: the packet's lap as it was sent)
        pd_lap = Signal(LB, name="pd_lap")
        pb_qi = pb_e[db:] if D > 1 else pb_e
        m.d.sync += pd_lap.eq(lap_of(read(done, pb_qi, "pb_done"), pb_e[:db] if D > 1 else pb_e))
        m.d.sync += pd_gen.eq(read(p_gen, pb_row, "pb_gen"))
        m.d.sync += [pd_ok.eq(pb_ok), pd_e.eq(pb_e), pd_slot.eq(pb_slot),
                     pd_chunk.eq(trec.data.chunk), pd_nb.eq(trec.data.nb),
                     pd_first.eq(trec.data.first), pd_last.eq(trec.data.last)]
        step_ok = _named(m, sched & ~probe_go, "step_ok")
        m.d.comb += [act[c].eq(step_ok & sel[c]) for c in range(C)]
        act_pkt = [_named(m, act[c] & ~x["drop"], f"act_pkt{c}") for c, x in enumerate(cand_r)]
        act_new = [_named(m, act[c] & ~x["resend"], f"act_new{c}") for c, x in enumerate(cand_r)]
        pkt_act = _named(m, Cat(*act_pkt).any(), "pkt_act")
        if gated:
            # MR-TXS-415: the report in the register names cw_d's row, or the cycle's packet
            # leaves on it (pkt_path_hot is 0 for a drop)
            pkt_on = [act[c] & x["pkt_path_hot"][p] & cw_d_hot[c * PA + p]
                      for c, x in enumerate(cand_r) for p in range(PA)]
            if self.cw_hold:
                m.d.comb += cw_hold.eq((cw_d_valid & busy & (r_row == cw_d_row))
                                       | Cat(*pkt_on).any())
        if self.pacing:
            self._pace(m, A, act_pkt, cand_r, pace_pend, pace_late, mtu_log2)

        def g(name):
            return read([x[name] for x in cand_r], pick, f"g_{name}")

        g_resend, g_qi, g_idx, g_chunk = g("resend"), g("qi"), g("idx"), g("chunk")
        g_path, g_nb, req = g("path")[:pb], g("nb"), g("req")
        g_last, g_first = g("last"), g("first")
        g_e = _named(m, Cat(g_idx[:db], g_qi) if D > 1 else g_qi, "g_e")
        g_s = g_qi[:sb] if S > 1 else Const(0, 1)
        psn = g("psn")
        flags = (Mux(g_first, int(MrdhFlag.FIRST), 0) | Mux(g_last, int(MrdhFlag.LAST), 0)
                 | Mux(g_resend, int(MrdhFlag.RETX), 0))       # ERROR from the descriptor: fq_word
        g_slot = slot_of(g_idx, g_s)

        def frame_of(name, conn, flags, req, psn, path, chunk, nb, slot, lap, gen):
            """The frame queue's entry of a packet (MR-TXS-040, MR-TXS-044) less the fields the
            descriptor and operands give in the stage's cycle (MR-TXS-353: ``fq_word``); its
            stream the slot's (a response's is its descriptor's ``wr_id``)."""
            f = Signal(fq_lay, name=name)
            s_ = slot[db:] if D > 1 else slot
            m.d.comb += [
                f.conn.eq(conn), f.op_set.eq(1), f.ack_req.eq(req), f.psn.eq(psn),
                f.flags.eq(flags), f.path.eq(path), f.stream.eq(s_), f.chunk.eq(chunk),
                f.nb.eq(nb), f.slot.eq(slot), f.lap.eq(lap),                        # MR-TXS-411
                f.gen.eq(gen),                                                      # MR-TXS-121
            ]
            return f

        g_lap = _named(m, lap_of(read(done, g_qi, "g_done"), g_idx), "g_lap")     # MR-TXS-142
        frame = frame_of("frame", pick, flags, req, psn, g_path, g_chunk, g_nb, g_slot, g_lap, g("gen"))
        # MR-TXS-376: the packet's record into its row (the picked connection's, its path)
        tw = trec_wr.data
        m.d.comb += [trec_wr.addr.eq(Cat(g_path[:pb], pick)), trec_wr.en.eq(pkt_act),
                     tw.slot.eq(g_slot), tw.chunk.eq(g_chunk), tw.nb.eq(g_nb),
                     tw.first.eq(g_first), tw.last.eq(g_last), tw.psn.eq(psn)]
        sent = Signal(lay.sent)
        m.d.comb += [
            sent.conn.eq(pick), sent.path.eq(g_path), sent.psn.eq(psn),
            sent.slot.eq(g_slot), sent.lap.eq(g_lap),                       # MR-TXS-142
            sent.chunk.eq(g_chunk), sent.nbytes.eq(g_nb), sent.req.eq(req), sent.abort.eq(0),
            sent.t_sent.eq(self.now),
        ]
        # MR-TXS-080: the probed packet's frame as it was, RETX and AckReq set; no sent event
        pflags = (Mux(pd_first, int(MrdhFlag.FIRST), 0) | Mux(pd_last, int(MrdhFlag.LAST), 0)
                  | int(MrdhFlag.RETX))
        pframe = frame_of("probe_frame", pbr.conn, pflags, 1, pbr.psn, pbr.path[:pb],
                          pd_chunk, pd_nb, pd_slot, pd_lap, pd_gen)
        m.d.comb += [frame_q.w_en.eq(pkt_act | (probe_act & pd_ok)),
                     frame_q.w_data.eq(Mux(probe_act, pframe, frame)),
                     # MR-TXS-353: the entry's descriptor and operands into the stage's cycle
                     fr_desc.addr.eq(Mux(probe_act, pd_e, g_e)),
                     fr_opnd.addr.eq(Mux(probe_act, pd_e, g_e)),
                     sent_q.w_en.eq(pkt_act), sent_q.w_data.eq(sent)]

        # -- the completion stream: completions and refused work requests
        cqe = Signal(lay.cqe)
        cq_desc = desc_rd_cq.data
        cq_is_rsp = comp & (cq_desc.op == OP_READ_RESP)
        with m.If(comp):
            # MR-TXS-070: a response's record: the requester's stream, its message number in
            # the length's place
            m.d.comb += [cqe.conn.eq(comp_q >> sb if S > 1 else comp_q),
                         cqe.stream.eq(Mux(cq_is_rsp, cq_desc.wr_id, comp_q[:sb] if S > 1 else 0)),
                         cqe.wr_id.eq(cq_desc.wr_id), cqe.status.eq(comp_status),
                         cqe.op.eq(cq_desc.op),
                         cqe.length.eq(Mux(cq_is_rsp, cq_desc.msg, cq_desc.len))]
        with m.Else():
            m.d.comb += [cqe.conn.eq(wr.conn), cqe.stream.eq(wr.stream), cqe.wr_id.eq(wr.wr_id),
                         cqe.status.eq(w_status), cqe.op.eq(wr.op), cqe.length.eq(wr.length)]
        m.d.comb += [cqe_q.w_en.eq(comp | (take_wr & w_bad)), cqe_q.w_data.eq(Cat(cqe, cq_is_rsp))]

        # -- the actions (one per cycle); each register written by its own index compare, the
        # arithmetic on its own value (no adder after a wide mux)
        # MR-TXS-498: a late report of a path whose quiet count is at the cap is ignored as a
        # report of a slot not live (MR-TXS-020), but for its path's evidence (rep_restore)
        r_qfull = _named(m, Cat(*(q == QCAP for q in p_quiet)).bit_select(r_row, 1), "r_qfull")
        rep_act = _named(m, busy & rr_ok & ~(rr_late & r_qfull), "rep_act")
        ack_act = _named(m, rep_act & ~rr_lost, "ack_act")
        # MR-TXS-491: a late report of the slot's present message acknowledges its chunk
        # (ack_act) and releases no flight (its packet left it with the timeout's lost report)
        rel_act = _named(m, rep_act & ~rr_late, "rel_act")
        lost_act = _named(m, rep_act & rr_lost & ~rr_was_acked & ~read(e_fail, r_e, "r_fail"),
                          "lost_act")
        wr_act = _named(m, take_wr & ~w_bad, "wr_act")
        rep_restore = _named(m, busy & ~rr_lost & ((rep.path >> pb) == 0), "rep_restore")
        comp_act = _named(m, ~busy & comp, "comp_act")
        new_act = _named(m, Cat(*act_new).any(), "new_act")
        # -- lost, not queued (MR-TXS-241..244)
        # the refill's chunk from its entry's ack_base and its bit (the chunk of [ack_base,
        # ack_base + W) whose low bits are the bit), its LAST term (the bit is the last chunk's
        # and that chunk has been sent: `left` all ones, below 2^20 while one is to send) and
        # its bytes; its entry is untouched since the decision, so these are the present's
        # MR-TXS-297: its entry's terms are registers loaded with the decision (below), read
        # at its pick on the decision's state: the refill acts only when its connection was
        # untouched at the edge between, so they equal the terms read at lq_e now (no LUT-RAM
        # read by lq_e, no compare before the carry chain; they matter only when `fill`)
        lq_base = Signal(chunk_w, name="lq_base")      # the entry's ack_base
        lq_lt = Signal(name="lq_lt")                    # lq_j < ack_base's low bits
        lq_last = Signal(name="lq_last")
        lq_lastnb = Signal(nb_w, name="lq_lastnb")
        lq_hi = A.add_c(lq_base[wb:], 0, lq_lt, "lq_hi")
        lq_chunk = _named(m, Cat(lq_j, lq_hi)[:records.CHUNK_BITS], "lq_chunk")
        lq_nb = _named(m, Mux(lq_last, lq_lastnb, mtu), "lq_nb")
        # the decision on this cycle's state: the lowest entry (connection, then slot) with a
        # bit set, not failed, its connection's FIFO not full; that entry's lowest bit (each
        # entry's beside the pick, trees of halves)
        lq_ok = [_named(m, e_lnq[e].any() & ~e_fail[e] & ~rq_level[e // sd][rq_b], f"lq_ok{e}")
                 for e in range(E)]
        lq_any, lq_pick = _lowest_zero(~Cat(*lq_ok))
        lq_pick = _named(m, lq_pick, "lq_pick")     # the reads' selects: each slice re-expanded it
        # named: three reads below would each re-expand every entry's lowest-bit tree
        lq_low = [_named(m, _lowest_zero(~e_lnq[e])[1], f"lq_low{e}") for e in range(E)]
        m.d.sync += [lq_valid.eq(lq_any), lq_e.eq(lq_pick),
                     lq_j.eq(read(lq_low, lq_pick, "lq_j_next"))]
        # MR-TXS-297: each entry's refill terms beside the pick (its lowest bit against its
        # ack_base's low bits; its LAST term), the pick's read of them registered
        lq_lt_e = [lq_low[e] < e_base[e][:wb] for e in range(E)]
        lq_last_e = [(lq_low[e] == e_nchm1[e][:wb]) & e_sall[e] for e in range(E)]
        m.d.sync += [lq_base.eq(win_read(base_mem, lq_pick, "lq_base_next")),
                     lq_lt.eq(read(lq_lt_e, lq_pick, "lq_lt_next")),
                     lq_last.eq(read(lq_last_e, lq_pick, "lq_last_next")),
                     lq_lastnb.eq(nl_lastnb(lq_pick, "lq_lastnb_next"))]
        # each entry's bits: a lost report's chunk set when its FIFO is full (its flight left as
        # any report's, MR-TXS-020); cleared by an acknowledged report of a chunk in the window
        # (a late one below ack_base names a chunk W further, MR-TXS-242) and by the refill; all
        # 0 when a work request refills the entry
        r_full = _named(m, read([lv[rq_b] for lv in rq_level], r_conn, "r_level_full"), "r_full")
        r_hot = _named(m, Const(1, W) << r_chunk[:wb], "r_lnq_hot")
        lq_hot = _named(m, Const(1, W) << lq_j, "lq_hot")
        for e in range(E):
            # MR-TXS-387: lost_act at its own entry: that entry's `fail`, not the 16-way read
            lost_e = rep_act & rr_lost & ~rr_was_acked & ~e_fail[e]
            with m.If(lost_e & r_full & (r_e == e)):
                m.d.sync += e_lnq[e].eq(e_lnq[e] | r_hot)
            with m.If((ack_act & a_in & (r_e == e)) | (fill & (lq_e == e))):
                m.d.sync += e_lnq[e].eq(e_lnq[e] & ~Mux(busy, r_hot, lq_hot))
            with m.If(take_wr & w_ehot[e]):
                m.d.sync += e_lnq[e].eq(0)
        # the acknowledged-chunk window (MR-EXO-002/003, protocol.chunk_ack): bit chunk - ack_base
        # (a sent chunk is below ack_base + W), then ack_base moves over the acknowledged chunks
        # (MR-TXS-036: the bit set and registered with its frame; the move in the next cycle)
        onehot = Signal(W)
        m.d.comb += onehot.eq(Mux(a_in, Const(1, W) << a_lo, 0))
        m.d.sync += [wb_valid.eq(ack_act), wb_e.eq(r_e), wb_conn.eq(r_conn),
                     wb_b.eq(r_bits | onehot), wb_ahead.eq(r_ahead), wb_base.eq(r_base)]
        ones = Signal(range(W + 1))
        z_any, z_idx = _lowest_zero(wb_b)
        m.d.comb += ones.eq(Mux(z_any, z_idx, W))
        b_moved = _named(m, wb_b >> ones, "b_moved")
        base_moved = A.add(wb_base, ones, name="base_moved")
        ahead_moved = _named(m, wb_ahead - ones, "ahead_moved")
        m.d.comb += [base_mwr.addr.eq(wb_e), base_mwr.en.eq(wb_valid), base_mwr.data.eq(base_moved),
                     bits_mwr.addr.eq(wb_e), bits_mwr.en.eq(wb_valid), bits_mwr.data.eq(b_moved)]
        # MR-TXS-172: br's entry's window after this edge (the loaded report's entry, else the
        # held one's, whose registers are their value before it): 0 at a refill, the pending
        # window's move when it names the entry, else as it is; the forward bit: the report
        # acknowledged now names that entry (its window is pending in the next cycle)
        def window_after(e, base, bits, tag):
            refill = edge_flags(e, f"w_{tag}")[1]
            moved = _named(m, wb_valid & (wb_e == e), f"w_moved_{tag}")
            return (Mux(refill, 0, Mux(moved, base_moved, base)),
                    Mux(refill, 0, Mux(moved, b_moved, bits)))

        w_e_pr = _named(m, rep_index(data.View(lay.report, src))[0], "w_e_pr")
        ld_base, ld_bits = window_after(w_e_pr, win_read(base_mem, w_e_pr, "e_base_pr"),
                                        win_read(bits_mem, w_e_pr, "e_bits_pr"), "pr")
        hd_base, hd_bits = window_after(lr_e, br_wbase, br_wbits, "hr")
        m.d.sync += [br_wbase.eq(Mux(load_r, ld_base, hd_base)),
                     br_wbits.eq(Mux(load_r, ld_bits, hd_bits)),
                     br_wfwd.eq(ack_act & Mux(load_r, r_e == w_e_pr, r_e == lr_e))]
        # MR-TXS-034: the report taken into the register, its checks corrected for this edge's
        # action (a completion of its entry; its entry's next chunk sent)
        i_kill = comp_act & (comp_e == i_e)
        i_hit = new_act & (g_e == i_e)
        busy_n = _named(m, acked_valid | take_resend, "busy_n")
        # MR-TXS-386: r_ahead of the next cycle: this report's window when it names the intake's
        # entry (it is the pending window then, MR-TXS-036), else that entry's `ahead` after
        # this edge (its writes' order: the window's move, a refill, a new chunk)
        ia_new, ia_refill = edge_flags(i_e, "ia")
        ia_now = read(e_ahead, i_e, "e_ahead_i")
        ia_after = Mux(ia_new, (ia_now + 1)[:wb + 1],
                       Mux(ia_refill, 0, Mux(wb_valid & (wb_e == i_e), ahead_moved, ia_now)))
        m.d.sync += r_ahead.eq(Mux(ack_act & (r_e == i_e), r_ahead, ia_after))
        m.d.sync += [rr_valid.eq(busy_n), rr_lost.eq(~acked_valid), rr.eq(inc),
                     rr_late.eq(acked_valid & ba.late),
                     rr_ok.eq(i_["base"] & ~i_kill & (i_["sent"] | (i_["next"] & i_hit))),
                     rr_last.eq(Mux(acked_valid, ba_last, br_last)),
                     # MR-TXS-047: and its chunk when the report acted on now acknowledges it
                     rr_was_acked.eq(lr_was_acked
                                     | (ack_act & (r_e == lr_e) & (r_chunk == br.chunk))),
                     rr_nb.eq(Mux(acked_valid, ba_nb, br_nb)),
                     rr_dist.eq(Mux(i_hit & ~i_["far"], i_["d1"], i_["d"]))]
        er_conn = self.s_error.payload.conn
        touched_n = Signal(C, name="touched_n")
        m.d.sync += touched.eq(touched_n)
        for c in range(C):
            m.d.comb += touched_n[c].eq((busy & (r_conn == c)) | (comp_act & (comp_conn == c))
                                      | (take_wr & (wr.conn == c))
                                      | act[c]
                                      | (self.s_fail.valid & (self.s_fail.payload.conn == c))
                                      | (self.s_error.valid & (er_conn == c))
                                      | (wb_valid & (wb_conn == c))
                                      | cw_conn[c]
                                      | (v_act & (pbr.conn == c))           # MR-TXS-118
                                      | (fill & (lq_conn == c)))            # MR-TXS-244
        def rep_or_pkt(v, rep_sub, nb, name):
            """MR-TXS-042: ``v`` after a report of ``r_nb`` bytes (``busy``: less when
            ``rep_sub``, else more) or a packet of ``nb`` (the other way): a report and a packet
            never act in one cycle (MR-TXS-030: a report is the action whenever the register
            holds one), so one add, its operand and carry chosen by ``busy``, a register."""
            n = len(v)
            r_, p_ = _ext(r_nb, n), _ext(nb, n)
            b = Mux(busy, ~r_ if rep_sub else r_, p_ if rep_sub else ~p_)
            return A.add_c(v, b, busy if rep_sub else ~busy, name)

        for c in range(C):
            x = cand_r[c]
            # MR-TXS-384: the packet's row's PSN after it, one add per connection on the
            # candidate's PSN (its row's PSN: the connection is untouched since, MR-TXS-041)
            psn_next = A.add(x["psn"], 1, name=f"psn_next_c{c}")
            for p in range(PA):
                row = c * PA + p
                # the adds beside the enables (an expression under m.If would take the enable in)
                over = A.gt_small(p_infl[row], r_nb, f"pover{row}")
                infl_next = rep_or_pkt(p_infl[row], True, x["nb"], f"pinfl_next{row}")
                # MR-TXS-052: the room takes a window write's change at the same edge (0 when
                # none names the row): rep_or_pkt's operands and the change, one chain
                n_rm = len(p_room[row])
                r_, p_ = _ext(r_nb, n_rm), _ext(x["nb"], n_rm)
                if gated:
                    # MR-TXS-416: no write lands on a row its action changes (MR-TXS-415)
                    room_next = rep_or_pkt(p_room[row], False, x["nb"], f"proom_next{row}")
                    room_empty = p_cwm[row]
                else:
                    room_next = A.add3_c(p_room[row], Mux(busy, r_, ~p_),
                                         Mux(cw_d_hot[row], cw_d_delta, 0), ~busy,
                                         f"proom_next{row}")
                    # the room when the flight empties: the window (the new one) less an MTU
                    room_empty = Mux(cw_d_hot[row], cw_d_cwm, p_cwm[row])
                pkts_next = A.add(p_pkts[row], Cat(Const(1, 1), busy.replicate(7)), name=f"pkts_next{row}")
                with m.If(cw_hot[row]):
                    m.d.sync += [p_cwm[row].eq(cw_d_cwm),
                                 p_room[row].eq(cw_room)]
                # MR-TXS-498: a completion of the connection counts (saturating); an acknowledged
                # report not late acted on zeroes (never in one cycle: one action a cycle)
                with m.If(comp_act & (comp_conn == c) & (p_quiet[row] != QCAP)):
                    m.d.sync += p_quiet[row].eq(p_quiet[row] + 1)
                with m.If(rel_act & ~rr_lost & (r_row == row)):
                    m.d.sync += p_quiet[row].eq(0)
                with m.If(rel_act & (r_row == row)):
                    m.d.sync += [p_infl[row].eq(Mux(over, infl_next, 0)),
                                 p_room[row].eq(Mux(over, room_next, room_empty)),
                                 p_pkts[row].eq(Mux(p_pkts[row] != 0, pkts_next, 0))]
                # MR-TXS-116: an acknowledged report restores the path (active, its window),
                # whether or not it still names a live message
                if self.restores:
                    # MR-TXS-184: cleared when taken; set by the restore of a probing path;
                    # MR-TXS-348: the take is the restore's, else the kept record's
                    with m.If(r_take & r_sel[row]):
                        m.d.sync += p_rst[row].eq(0)
                        if self.kept_out:
                            with m.If(~p_rst[row]):
                                m.d.sync += p_kpt[row].eq(0)
                    with m.If(rep_restore & (r_row == row) & p_prb[row]):
                        m.d.sync += p_rst[row].eq(1)
                with m.If(rep_restore & (r_row == row)):
                    m.d.sync += [p_prb[row].eq(0), p_col[row].eq(0)]
                # MR-TXS-114/115/118: a verdict after it at the same edge (its write wins)
                # MR-TXS-290: another path of the connection active (registers, before the
                # edge); without one a suspicion or retirement is a reroute
                others = (_named(m, Cat(*(~p_prb[c * PA + q] for q in range(PA) if q != p)).any(),
                                 f"others_active{row}") if PA > 1 else Const(0, 1))
                with m.If(v_act & (pb_row == row) & ((pbr.path >> pb) == 0)):
                    with m.Switch(pbr.verdict):
                        # MR-TXS-120: a retirement is a suspicion in this slice
                        with m.Case(P.PATH_SUSPECT, P.PATH_RETIRE):
                            with m.If(others):
                                m.d.sync += p_prb[row].eq(1)
                                if self.restores:
                                    m.d.sync += p_rst[row].eq(0)                   # MR-TXS-185
                                    if self.kept_out:
                                        m.d.sync += p_kpt[row].eq(0)               # MR-TXS-347
                            with m.Else():
                                m.d.sync += p_col[row].eq(1)                       # MR-TXS-290
                                if self.restores and self.kept_out:
                                    m.d.sync += p_kpt[row].eq(1)                   # MR-TXS-347
                            m.d.sync += p_gen[row].eq(p_gen[row] + 1)              # MR-TXS-121
                        with m.Case(P.PATH_REROUTE):
                            m.d.sync += [p_col[row].eq(1), p_gen[row].eq(p_gen[row] + 1)]
                # MR-TXS-080: the completion of the record's message
                with m.If(comp_act & (comp_conn == c) & (p_tslot[row][:sdb] == comp_e[:sdb])):
                    m.d.sync += p_tv[row].eq(0)
                # MR-TXS-465: the initial PSN (never in a cycle of a packet of the row's
                # connection, which has started)
                with m.If(psn_write & (pwr.conn == c) & (pwr.path[:pb] == p if PA > 1 else 1)):
                    m.d.sync += p_psn[row].eq(pwr.psn)
                with m.If(act[c] & x["pkt_path_hot"][p]):
                    m.d.sync += [p_tslot[row].eq(slot_of(x["idx"], x["qi"])), p_tv[row].eq(1)]
                    m.d.sync += [p_psn[row].eq(psn_next), p_infl[row].eq(infl_next),
                                 p_room[row].eq(room_next),
                                 p_pkts[row].eq(pkts_next),
                                 p_since[row].eq(Mux(x["req"], 0, p_since[row] + 1))]
            over = A.gt_small(c_infl[c], r_nb, f"cover{c}")
            c_infl_next = rep_or_pkt(c_infl[c], True, x["nb"], f"cinfl_next{c}")
            c_room_next = rep_or_pkt(c_room[c], False, x["nb"], f"croom_next{c}")
            c_unsent_more = A.add(c_unsent[c], w_nchm1, carry_in=1, name=f"unsent_more{c}")
            # MR-TXS-032: unsent - (left + 1), left = nchunks - 1 - next_chunk of the registered
            # completion's entry, after the register (the connection is untouched since the
            # decision: its count and the entry's are the same); MR-TXS-391: unsent + next_chunk
            # + ~(nchunks - 1), from the copies' reads registered with the completion
            c_unsent_after = A.add3_c(c_unsent[c], comp_next, ~_ext(comp_nchm1, 24), Const(0, 1),
                                      f"unsent_after{c}")
            c_unsent_less = A.sub(c_unsent[c], 1, f"unsent_less{c}")
            with m.If(rel_act & (r_conn == c)):
                m.d.sync += [c_infl[c].eq(Mux(over, c_infl_next, 0)),
                             c_room[c].eq(Mux(over, c_room_next, K))]
            for k in range(RD):
                with m.If(ack_act & (r_conn == c) & (r_slot == rq_slot[c][k])
                          & (r_chunk == rq_chunk[c][k])):
                    m.d.sync += rq_stale[c][k].eq(1)
                # MR-TXS-460: a completion makes its message's queued resends stale (whatever
                # takes the slot next); never beside a push (a completion acts alone)
                with m.If(comp_act & (comp_conn == c) & (rq_slot[c][k][:sdb] == comp_e[:sdb])):
                    m.d.sync += rq_stale[c][k].eq(1)
            # MR-TXS-241/243: a lost report's chunk when the FIFO has room, else a refill's
            # (never both: a report and a refill never act in one cycle, `busy` picks)
            rq_push = (lost_act & (r_conn == c) & ~rq_level[c][rq_b]) | (fill & (lq_conn == c))
            qw = rq_mem_wr[c]                                               # MR-TXS-377
            m.d.comb += [qw.addr.eq(rq_tail[c]), qw.en.eq(rq_push),
                         qw.data.slot.eq(Mux(busy, r_slot, lq_e[:sdb])),
                         qw.data.chunk.eq(Mux(busy, r_chunk, lq_chunk)),
                         qw.data.last.eq(Mux(busy, r_last, lq_last)),
                         qw.data.nb.eq(Mux(busy, r_nb, lq_nb))]
            with m.If(rq_push):
                for k in range(RD):
                    with m.If(rq_tail[c] == k):
                        m.d.sync += [rq_slot[c][k].eq(Mux(busy, r_slot, lq_e[:sdb])),
                                     rq_chunk[c][k].eq(Mux(busy, r_chunk, lq_chunk)),
                                     rq_stale[c][k].eq(0)]
                m.d.sync += [rq_tail[c].eq(rq_tail[c] + 1), rq_level[c].eq(rq_level[c] + 1)]
            with m.If(take_wr & w_chot[c]):
                m.d.sync += c_unsent[c].eq(c_unsent_more)
            # MR-TXS-027: a failed message completed before its last chunk was sent
            with m.If(comp_act & (comp_conn == c) & comp_unsent):
                m.d.sync += c_unsent[c].eq(c_unsent_after)
            with m.If(act[c] & x["resend"]):
                m.d.sync += [rq_head[c].eq(rq_head[c] + 1), rq_level[c].eq(rq_level[c] - 1)]
            # MR-TXS-189: the head's nb after the edge: a report queued into an empty FIFO is
            # the head; a pop makes the entry after the head the head (a report and a step never
            # act in one cycle, MR-TXS-030)
            with m.If(((lost_act & (r_conn == c)) | (fill & (lq_conn == c))) & (rq_level[c] == 0)):
                m.d.sync += rq_hnb[c].eq(Mux(busy, r_nb, lq_nb))
            with m.If(act[c] & x["resend"]):
                m.d.sync += rq_hnb[c].eq(rq_nb_at(c, (rq_head[c] + 1)[:rq_b], f"h{c}_nb_after"))
            with m.If(act_pkt[c]):
                m.d.sync += [c_infl[c].eq(c_infl_next), c_room[c].eq(c_room_next),
                             c_rr[c].eq(x["path"] + 1)]
            with m.If(act_new[c]):
                m.d.sync += [c_unsent[c].eq(c_unsent_less), c_srr[c].eq(x["s"] + 1)]
        with m.If(pkt_act):
            m.d.sync += conn_rr.eq(pick + 1)
        w_e = _named(m, Cat(w_idx[:db], w_qi) if D > 1 else w_qi, "w_e")
        # MR-TXS-378: the copy's write: the step's new chunk at its entry (the candidate's
        # chunk is the entry's next_chunk: its connection is untouched since), else a refill
        m.d.comb += [next_wr.addr.eq(Mux(new_act, g_e, w_e)), next_wr.en.eq(new_act | wr_act),
                     next_wr.data.eq(Mux(new_act, A.add(g_chunk, 1, name="next_mem_more")[:chunk_w],
                                         0))]
        # MR-TXS-067: a response neither takes nor advances msg_next nor send_seq
        # MR-TXS-099: op's bit 1 is a send's below op 4 only (op 6 is a fetch-and-add)
        w_send = _op_kind(wr.op)[0]
        in_send = _op_kind(win.op)[0]
        # MR-TXS-037: the request taken into the register, its entry and fullness corrected for
        # this edge's action (a request of its stream taken, a completion of its stream), and
        # the fullness of a request held kept up to date
        in_wr_hit = wr_act & (w_qi == i_wqi)
        in_comp_hit = comp_act & (comp_q == i_wqi)
        # MR-TXS-039: its message number and the next one, read from its stream's `msg_next`
        # (one further when a request of its stream is acted on at this edge; a request held
        # keeps them: only its own action changes its stream's count)
        in_wr_hit_msg = in_wr_hit & ~w_rsp
        m.d.comb += seq_rd.addr.eq(i_wqi)                                  # MR-TXS-379
        in_msg = _named(m, seq_rd.data.msg, "in_msg")
        in_msg1 = A.add(in_msg, 1, name="in_msg1")
        in_msg2 = A.add(in_msg, 2, name="in_msg2")
        if self.rd_rows:
            # MR-TXS-106: the READ taken from s_wr, with the message number it takes, on m_rd
            # (the engine writes its row); its ready is the row's (MR-TXS-107); MR-TXS-141: an
            # atomic too (its response is a READ response of the row, MR-RX-159)
            rd = self.m_rd
            in_rd = (in_read | in_atomic) & (in_status == 0) & ~in_rsp
            m.d.comb += [rd.valid.eq(self.s_wr.valid & in_rd & (~wq_valid | take_wr)),
                         rd.payload.conn.eq(win.conn), rd.payload.stream.eq(win.stream),
                         rd.payload.msg.eq(Mux(in_wr_hit_msg, in_msg1, in_msg)),
                         rd.payload.laddr.eq(win.laddr), rd.payload.length.eq(win.length),
                         rd.payload.wr_id.eq(win.wr_id), rd_block.eq(in_rd & ~rd.ready)]
        # MR-TXS-058: its recv_seq and the stream's send_seq after it likewise (one further when
        # a send of its stream is acted on at this edge; only a send advances it)
        in_rseq = _named(m, seq_rd.data.rseq, "in_rseq")
        in_rseq1 = A.add(in_rseq, 1, name="in_rseq1")
        in_rseq2 = A.add(in_rseq, 2, name="in_rseq2")
        hit_send = in_wr_hit & w_send
        in_rseq_own = Mux(hit_send, in_rseq1, in_rseq)
        in_rseq_after = Mux(in_send, Mux(hit_send, in_rseq2, in_rseq1), in_rseq_own)
        in_idx = _named(m, (in_tail[:db] + in_wr_hit)[:db], "in_widx")
        in_good = in_status == 0
        # the next values of the register's valid bit, status test and ring fullness (a request
        # held on a full ring: a completion of its stream frees an entry), for w_go
        w_valid_n = Mux(wr_in, 1, wq_valid & ~take_wr)
        w_bad_n = Mux(wr_in, ~in_good, w_bad)
        w_full_n = Mux(wr_in, Mux(in_wr_hit, in_count == D - 1, ~in_comp_hit & (in_count == D)),
                       w_full & ~(comp_act & (comp_q == w_qi)))
        w_go_n = _named(m, w_valid_n & Mux(w_bad_n, cq_room_n, ~w_full_n), "w_go_n")
        m.d.sync += [wq_valid.eq(w_valid_n), w_bad.eq(w_bad_n), w_full.eq(w_full_n),
                     w_go.eq(w_go_n)]
        # MR-TXS-282: sched's next value: comp's and take_wr's from the next values of their
        # registers (comp_go's, touched's at the next completion's connection)
        comp_n = comp_go_n & ~touched_n.bit_select(next_q >> sb if S > 1 else next_q, 1)
        # and the refill's (MR-TXS-244) from lq_valid's and lq_e's next values
        fill_n = lq_any & ~touched_n.bit_select(lq_pick[sdb:] if sdb else lq_pick, 1)
        m.d.sync += sched.eq(~busy_n & ~fill_n & ~comp_n
                             & ~w_go_n & frame_q.room_n & sent_q.room_n)
        # MR-TXS-283: pd valid after the edge means the boundary register kept its probe (it
        # takes none while it holds one that is not a verdict), so pbr.conn is its connection
        m.d.sync += probe_go.eq(pd_valid_n & ~touched_n.bit_select(pbr.conn, 1))
        with m.If(wr_in):
            m.d.sync += [wr.eq(win), w_qi.eq(i_wqi), w_status.eq(in_status),
                         w_nchm1.eq(in_nchm1), w_lastnb.eq(in_lastnb),
                         w_msg.eq(Mux(in_rsp, rin.msg, Mux(in_wr_hit_msg, in_msg1, in_msg))),
                         w_msg1.eq(Mux(in_rsp, Mux(in_wr_hit_msg, in_msg1, in_msg),
                                       Mux(in_wr_hit_msg, in_msg2, in_msg1))),
                         w_rsp.eq(in_rsp), w_err.eq(in_rsp & rin.err),
                         w_rseq.eq(in_rseq_own), w_rseq1.eq(in_rseq_after),
                         w_idx.eq(in_idx),
                         w_ehot.eq(Cat(*((Cat(in_idx, i_wqi) if D > 1 else i_wqi) == e
                                         for e in range(E)))
                                   & in_good.replicate(E)),
                         w_qhot.eq(Cat(*(i_wqi == qi for qi in range(Q))) & in_good.replicate(Q)),
                         w_chot.eq(Cat(*(win.conn == c for c in range(C))) & in_good.replicate(C))]
        # MR-TXS-027: the failures name entries; a dead entry marked is cleared when reused
        fl = self.s_fail.payload
        f_e = Cat(fl.slot[:sdb], fl.conn) if sdb else fl.conn
        # MR-TXS-480: a status of 0 (success) fails nothing, as in the model
        f_ok = (self.s_fail.valid & (fl.status != 0)
                & ((fl.slot >> sdb) == 0 if sdb < 3 else 1))
        er = self.s_error.payload
        m.d.comb += [self.s_fail.ready.eq(1), self.s_error.ready.eq(1)]
        # MR-TXS-099: the operands with the descriptor (0 but an atomic's; the compare value a
        # compare-and-swap's only)
        _, _, _, w_atomic = _op_kind(wr.op)
        m.d.comb += [opnd_wr.addr.eq(w_e), opnd_wr.en.eq(wr_act),
                     opnd_wr.data.eq(Cat(Mux(w_atomic, wr.swap, 0),
                                         Mux(w_atomic & wr.op[0], wr.compare, 0)))]
        m.d.comb += [desc_wr.addr.eq(w_e), desc_wr.en.eq(wr_act),
                     desc_wr.data.eq(Cat(wr.op, wr.wr_id, wr.laddr,
                                         Mux(w_send, w_rseq, Mux(w_rsp, 0, wr.va)),
                                         Mux(w_send | w_rsp, 0, wr.rkey),
                                         wr.imm, w_msg, wr.length, w_err)),
                     # MR-TXS-355: the completion's copy
                     cq_wr.addr.eq(w_e), cq_wr.en.eq(wr_act),
                     cq_wr.data.eq(Cat(wr.op, wr.wr_id, w_msg, wr.length)),
                     # MR-TXS-375: the LAST terms' copy of e_nchm1 and e_lastnb
                     nl_wr.addr.eq(w_e), nl_wr.en.eq(wr_act),
                     nl_wr.data.eq(Cat(w_nchm1, w_lastnb))]
        # MR-TXS-358: the memories' ports for the tests' collision observer
        self.probe.update({"desc_wr_en": desc_wr.en, "desc_wr_addr": desc_wr.addr,
                           "fr_addr": fr_desc.addr, "fq_stage": frame_q.s_valid})
        if self.pacing:
            m.d.comb += [op_wr.addr.eq(w_e), op_wr.en.eq(wr_act), op_wr.data.eq(wr.op)]
        e_hit = []                              # a failure marks the entry at this edge
        # MR-TXS-384: a new chunk's next_chunk + 1, one add per connection on the candidate's
        # chunk (its entry's next_chunk: the connection is untouched since, MR-TXS-033)
        next_more_c = [A.add(x["chunk"], 1, name=f"next_more_c{c}") for c, x in enumerate(cand_r)]
        for e in range(E):
            next_more = next_more_c[e // sd]
            # MR-TXS-391: the chunk after the next one is the last (left == 1): for a new chunk
            # (the only user) next_chunk + 1, the candidate's chunk + 1, is nchunks - 1
            left_one = next_more == e_nchm1[e]
            # MR-TXS-042: - 1 for a report (busy), + 1 for a packet
            out_next = A.add(e_out[e], Cat(Const(1, 1), busy.replicate(OUT_BITS - 1)), name=f"out_next{e}")
            with m.If(wb_valid & (wb_e == e)):
                m.d.sync += [e_base[e].eq(base_moved), e_bits[e].eq(b_moved),
                             e_ahead[e].eq(ahead_moved), win_zero[e].eq(0)]
            qe, ie = divmod(e, D)
            live_e = (live(tail[qe], done[qe], Const(ie, db)) if D > 1
                      else count(tail[qe], done[qe]) != 0)
            # MR-TXS-412: and the entry's lap is the failure's (else its previous message's)
            f_hit = f_ok & (f_e == e) & live_e & (lap_of(done[qe], Const(ie, max(db, 1))) == fl.lap)
            err_hit = self.s_error.valid & (er.status != 0) & (er.conn == e // sd) & live_e
            # a failure names a live entry, a work request fills one not live: never both (MR-TXS-048:
            # the status's enable then leaves out the request's; the request's write of `fail`
            # stays last)
            e_hit.append(_named(m, f_hit | err_hit, f"fhit{e}"))
            with m.If(~e_fail[e] & (f_hit | err_hit)):
                m.d.sync += [e_fail[e].eq(1), e_status[e].eq(Mux(f_hit, fl.status, er.status))]
            with m.If(take_wr & w_ehot[e]):
                m.d.sync += [e_nlast[e].eq(w_nchm1 == 0), e_sall[e].eq(w_nchm1.all()),
                             e_nchm1[e].eq(w_nchm1),
                             e_lastnb[e].eq(w_lastnb), e_base[e].eq(0), win_zero[e].eq(1),
                             e_bits[e].eq(0), e_ahead[e].eq(0), e_fail[e].eq(0), e_out[e].eq(0),
                             e_idle[e].eq(1)]
            with m.If(rel_act & (r_e == e) & ~e_idle[e]):
                m.d.sync += [e_out[e].eq(out_next),
                             e_idle[e].eq(e_out[e] == 1)]
            # the picked candidate's entry: its connection's and its own registered bit
            ce, ke = divmod(e, sd)
            with m.If(act[ce] & cand_r[ce]["pkt_e_hot"][ke]):
                m.d.sync += [e_out[e].eq(out_next), e_idle[e].eq(0)]
            # MR-TXS-053: next_chunk from its input; 0 on a refill, + 1 on a new chunk (never
            # both: one action per cycle), the two flags read by the boundary registers too
            m.d.comb += [e_new_hot[e].eq(cand_r[ce]["new_e_hot"][ke]),
                         e_new_chunk[e].eq(act[ce] & cand_r[ce]["new_e_hot"][ke]),
                         e_refill[e].eq(take_wr & w_ehot[e])]
            # MR-TXS-054: nnb follows nlast and lastnb (MR-TXS-392: a new chunk's nlast is
            # left_one, a refill's nchunks - 1 == 0 with its lastnb)
            with m.If(act[ce] & cand_r[ce]["new_e_hot"][ke]):
                m.d.sync += [e_nlast[e].eq(left_one),
                             e_sall[e].eq(e_nlast[e]),
                             e_ahead[e].eq(e_ahead[e] + 1)]
        # MR-TXS-049: each stream's q_ok after this edge, from the terms of before it, the late
        # enables only picking among them. Its send entry after the edge (no send move): a new
        # chunk of it (ahead + 1; no window move on its connection then: a window moves the
        # cycle after a report of its connection, which touched it), else the window's move,
        # else as it is; not failed and not failed now. A send move (a new last chunk, or a
        # failed message completed before it was sent to its end; neither with a window move on
        # the connection): the entry at send + 1 as it is, not failed now. A work request
        # queued: on an empty ring its fresh entry (ok); else the send entry as above.
        # the moved entry's window shut (`ahead_moved` = W): ahead is at most W and the move
        # takes the window's trailing ones, so only a full window (W) with its oldest chunk
        # unacknowledged (no trailing ones) stays shut; from registers, not after the count
        moved_shut = _named(m, (wb_ahead == W) & ~wb_b[0], "moved_shut")
        for qi in range(Q):
            c, s = divmod(qi, S)
            ents = range(qi * D, (qi + 1) * D)
            sn, tl = send[qi], tail[qi]
            sn1 = (sn + 1)[:ptr_w]
            # MR-TXS-359: the picks on the failed flags alone; this edge's hit (s_fail's,
            # s_error's: late, from the data path across the chip) ANDed after them
            ok_now = [~e_fail[e] for e in ents]
            x_new = _pick([~(e_ahead[e] + 1)[wb] & ok for e, ok in zip(ents, ok_now)], sn[:db])
            x_other = _pick([~Mux(wb_valid & (wb_e == e), moved_shut, e_ahead[e][wb]) & ok
                             for e, ok in zip(ents, ok_now)], sn[:db])
            x_adv = (sn1 != tl) & _pick([~e_ahead[e][wb] & ok for e, ok in zip(ents, ok_now)],
                                        sn1[:db])
            x_new, x_other, x_adv = (_named(m, x_new, f"q_ok_new{qi}"),
                                     _named(m, x_other, f"q_ok_other{qi}"),
                                     _named(m, x_adv, f"q_ok_adv{qi}"))
            has = sn != tl
            # MR-TXS-056: the candidate's new chunk of this stream and its last, from the
            # candidate's registers (true only if the step takes it)
            cand_new = ~cand_r[c]["resend"] & ((cand_r[c]["s"] == s) if S > 1 else 1)
            last_hot = cand_r[c]["new_last_hot"][s] if S > 1 else cand_r[c]["new_last_hot"]
            comp_adv = comp_act & (comp_q == qi) & comp_unsent     # a completion's send move
            adv_t = take_wr & w_qhot[qi]
            # MR-TXS-054: the send entry's nnb after the edge: at send + 1 after a send move.
            # MR-TXS-056: the entries' nnb after a step of this connection (a new chunk of the
            # candidate's entry) and after any other edge (a refill), each read at the entry
            # after the edge; the step's one-hot bit selects last
            def nnb_at(nn, moved):
                return Mux(moved, _pick(nn, sn1[:db]), _pick(nn, sn[:db])) if D > 1 else nn[0]
            nn_step = [Mux(cand_r[c]["new_e_hot"][e - c * sd],
                           Mux(next_more_c[c] == e_nchm1[e], e_lastnb[e], mtu), e_nnb[e])
                       for e in ents]
            nn_rest = [Mux(take_wr & w_ehot[e], Mux(w_nchm1 == 0, w_lastnb, mtu), e_nnb[e])
                       for e in ents]
            nnb_step = _named(m, nnb_at(nn_step, last_hot), f"q_nnb_step{qi}")
            nnb_rest = _named(m, nnb_at(nn_rest, comp_adv), f"q_nnb_rest{qi}")
            m.d.sync += q_nnb[qi].eq(Mux(act[c], nnb_step, nnb_rest))
            # MR-TXS-056: q_ok after a step of this connection and after any other edge (a
            # step excludes a work request's take and a completion), each from registers; the
            # step's one-hot bit selects last
            ok_step = _named(m, Mux(last_hot, x_adv, has & Mux(cand_new, x_new, x_other)),
                             f"q_ok_step{qi}")
            ok_rest = _named(m, Mux(adv_t, ~has | x_other,
                                    Mux(comp_adv, x_adv, has & x_other)), f"q_ok_rest{qi}")
            # MR-TXS-359: the hit at the entry the chosen term reads (send, or send + 1 after
            # a send move); a queued work request's empty ring is ok whatever the hit
            hits = [e_hit[e] for e in ents]
            hit_sn = _named(m, _pick(hits, sn[:db]), f"q_hit{qi}")
            hit_sn1 = _named(m, _pick(hits, sn1[:db]), f"q_hit_adv{qi}")
            hit_at = Mux(act[c], Mux(last_hot, hit_sn1, hit_sn),
                         Mux(adv_t, has & hit_sn, Mux(comp_adv, hit_sn1, hit_sn)))
            m.d.sync += q_ok[qi].eq(Mux(act[c], ok_step, ok_rest) & ~hit_at)
        for qi in range(Q):
            with m.If(take_wr & w_qhot[qi]):
                m.d.sync += tail[qi].eq(tail[qi] + 1)
        m.d.comb += [seq_wr.addr.eq(w_qi), seq_wr.en.eq(wr_act),                # MR-TXS-379
                     seq_wr.data.msg.eq(w_msg1), seq_wr.data.rseq.eq(w_rseq1)]
        for qi in range(Q):
            with m.If(comp_act & (comp_q == qi)):
                m.d.sync += done[qi].eq(done[qi] + 1)
                with m.If(comp_unsent):
                    m.d.sync += send[qi].eq(send[qi] + 1)
            with m.If(act[qi // S] & cand_r[qi // S]["new_last_hot"][qi % S]):
                m.d.sync += send[qi].eq(send[qi] + 1)
        return m

    def _pace(self, m, A, act_pkt, cand_r, pend, late, mtu_log2):
        """MR-TXS-161/162, MR-TXS-175..177: a packet's charge (`pend`, `ask`, its time `t_ask`
        and wire length `wl`; a full MTU, or shorter of a `paced` connection), the request on
        ``m_pace`` (the lowest connection asking, from registers), the turn on ``s_turn`` (`pend`
        cleared, `seen` its time, `late` when the time moved), MR-TXS-167's writes (and
        MR-TXS-177's `paced` from every write), and `late` kept while ``now`` is before
        `seen`."""
        C, TB = self.conns, P.TIME_BITS
        WB = pacer_wl_bits
        ask = Signal(C, name="pace_ask")
        paced = Signal(C, name="pace_paced")
        t_ask = [Signal(TB, name=f"pace_t_ask{c}") for c in range(C)]
        wl = [Signal(WB, name=f"pace_wl{c}") for c in range(C)]
        hdr = Array(Const(WIRE_HDR[op], WB) for op in range(8))
        seen = [Signal(TB, name=f"pace_seen{c}") for c in range(C)]

        def time_lt(a, b, name):
            # MR-ENG-050: a before b, the sign of b - a beside the inequality (hdl.cwnd's form)
            t = TB - 1
            return (a != b) & ~(a[t] ^ b[t] ^ A.gt(a[:t], b[:t], name))
        # the request: the lowest connection asking (a priority pick of registers)
        first = Signal(range(C), name="pace_first")
        for c in reversed(range(C)):
            with m.If(ask[c]):
                m.d.comb += first.eq(c)
        m.d.comb += [self.m_pace.valid.eq(ask.any()), self.m_pace.payload.conn.eq(first),
                     self.m_pace.payload.now.eq(Array(t_ask)[first]),
                     self.m_pace.payload.wl.eq(Array(wl)[first]),
                     self.m_pace.payload.force.eq(1), self.s_turn.ready.eq(1),
                     self.s_retime.ready.eq(1)]
        taken = self.m_pace.valid & self.m_pace.ready
        turn = self.s_turn.payload
        rt = self.s_retime.payload
        # MR-TXS-177: a write's clamped rate below the line rate (0 is the line rate)
        rt_paced = _named(m, (rt.rate != 0) & A.gt(self.line_mbps, rt.rate, "pace_rt_paced"),
                          "pace_rt_paced")
        for c in range(C):
            nb = cand_r[c]["nb"]
            full = nb[mtu_log2]                                  # one MTU: the top bit
            # MR-TXS-176: a full MTU, or shorter of a paced connection
            charge = act_pkt[c] & (full if self.pace_full_only else full | paced[c])
            # MR-TXS-175: the packet's wire length: its op's headers and its bytes padded to 4
            op = cand_r[c]["op"]
            hdr_c = _named(m, hdr[op], f"pace_hdr{c}")
            words = A.add(nb[2:], nb[:2].any(), name=f"pace_words{c}")
            pkt_wl = A.add(hdr_c, Cat(Const(0, 2), words), name=f"pace_pkt_wl{c}")
            back = self.s_turn.valid & (turn.conn == c)
            with m.If(self.s_retime.valid & (rt.conn == c)):
                m.d.sync += paced[c].eq(rt_paced)
            with m.If(charge):
                m.d.sync += [pend[c].eq(1), ask[c].eq(1), t_ask[c].eq(self.now),
                             wl[c].eq(pkt_wl)]
            with m.Else():
                with m.If(taken & (first == c)):
                    m.d.sync += ask[c].eq(0)
            # MR-TXS-167: a write with a time, of a connection with no turn asked for
            retime = (self.s_retime.valid & rt.set_time & (rt.conn == c) & ~pend[c] & ~charge)
            with m.If(back):
                # late when the time moved (then after t_ask, or cleared at the next edge)
                moved = turn.pace_until != seen[c]
                m.d.sync += [pend[c].eq(0), seen[c].eq(turn.pace_until), late[c].eq(moved)]
            with m.Elif(retime):
                m.d.sync += [seen[c].eq(rt.time),
                             late[c].eq(time_lt(self.now, rt.time, f"pace_rt{c}"))]
            with m.Else():
                m.d.sync += late[c].eq(late[c] & time_lt(self.now, seen[c], f"pace_wait{c}"))


def tx_sched_small(width=64):
    """The small instance (MR-TXS-001): 2 connections x 2 streams x 4 paths, 4 messages per stream."""
    return TxSched(width, **SMALL)
