"""Retransmit unit, first slice: the shared pool of outstanding-packet records, one linked FIFO
per path in PSN order, ACK resolution (cumulative PSN and 256-bit SACK) and the reports of
acknowledged and lost records (docs/spec/hw-tx.md, section "Retransmit unit", MR-TX-*).

``Retransmit(width=64, *, conns=4096, paths=8, pool=16384)`` (MR-TX-001). Ports (MR-TX-002),
all ``amaranth.lib.stream`` except the counter read port:

============== ====== ===================================================================
port           dir    meaning
============== ====== ===================================================================
s_sent         in     a data packet was sent {conn, path, psn, slot, chunk, nbytes, ...}
s_ack          in     an ACK/NAK of the peer (the RX engine's ``m_ack`` layout)
m_acked        out    a record acknowledged {conn, path, slot, chunk, abort}
m_resend       out    a record proven lost by the SACK {conn, path, slot, chunk, abort}
reg_addr/data  in/out 64-bit counter read, one cycle after the address (MR-TX-040)
============== ====== ===================================================================

Structure (MR-TX-030..036): one path-table pipeline (take, S1 read-modify-write with
forwarding, S2 bitmap) handles one ACK or one sent packet per cycle; an ACK moves the path's
floor at once and leaves a walk job; the walker resolves the job's records from the path's
head at one record per cycle, freeing each into the free list.

Golden model: :class:`metaroce.models.retransmit.RetransmitCycleModel`, cycle by cycle.
"""
from amaranth.hdl import Array, Cat, Const, Module, Mux, Signal
from amaranth.lib import data, fifo, memory, stream, wiring
from amaranth.lib.wiring import In, Out

from ..models import protocol as P
from ..models.retransmit import (COUNTER_BITS, CTR, JOB_DEPTH, N_COUNTERS, OUT_DEPTH, SMALL,
                                 layouts)

__all__ = ["Retransmit", "retransmit_256x4"]


def _bit_length(bits, n):
    """``bits[:n].bit_length()`` as a balanced tree (the highest set bit, plus one)."""
    if n == 1:
        return bits[0]
    h = n // 2
    lo, hi = bits[:h], bits[h:n]
    return Mux(hi.any(), h + _bit_length(hi, n - h), _bit_length(lo, h))


def _low_mask(k, n):
    """``(1 << k) - 1`` on ``n`` bits for ``0 <= k <= n``."""
    return ~(Const((1 << n) - 1, n) << k)[:n]


class Retransmit(wiring.Component):
    """The retransmit unit's first slice (docs/spec/hw-tx.md)."""

    def __init__(self, width=64, *, conns=4096, paths=8, pool=16384):
        if width not in (64, 128, 256, 512):
            raise ValueError(f"width must be 64, 128, 256 or 512, not {width!r}")
        self.width = width
        self.lay = lay = layouts(conns, paths, pool)
        super().__init__({
            "s_sent": In(stream.Signature(lay.sent)),
            "s_ack": In(stream.Signature(lay.ack)),
            "m_acked": Out(stream.Signature(lay.acked)),
            "m_resend": Out(stream.Signature(lay.resend)),
            "reg_addr": In(range(16)),
            "reg_data": Out(COUNTER_BITS),
        })

    def elaborate(self, platform):
        m = Module()
        lay = self.lay
        cb, pb, pw = lay.conn_bits, lay.path_bits, lay.ptr_bits
        rows = lay.conns * lay.paths
        psn_bits = P.wire.PSN_BITS

        m.submodules.path_mem = path_mem = memory.Memory(shape=lay.path.size, depth=rows, init=[])
        m.submodules.head_mem = head_mem = memory.Memory(shape=pw, depth=rows, init=[])
        m.submodules.rec_mem = rec_mem = memory.Memory(shape=lay.rec.size, depth=lay.pool, init=[])
        m.submodules.link_mem = link_mem = memory.Memory(shape=pw, depth=lay.pool, init=[])
        m.submodules.free_mem = free_mem = memory.Memory(shape=pw, depth=lay.pool,
                                                         init=list(range(lay.pool)))
        path_rd, path_wr = path_mem.read_port(), path_mem.write_port()
        head_rd, head_wr = head_mem.read_port(), head_mem.write_port()
        rec_rd, rec_wr = rec_mem.read_port(), rec_mem.write_port()
        link_rd, link_wr = link_mem.read_port(), link_mem.write_port()
        free_wr = free_mem.write_port()
        free_rd = free_mem.read_port(transparent_for=(free_wr,))

        m.submodules.job_q = job_q = fifo.SyncFIFO(width=lay.job.size, depth=JOB_DEPTH)
        m.submodules.acked_q = acked_q = fifo.SyncFIFO(width=lay.acked.size, depth=OUT_DEPTH)
        m.submodules.resend_q = resend_q = fifo.SyncFIFO(width=lay.resend.size, depth=OUT_DEPTH)

        counters = [Signal(COUNTER_BITS, name=f"ctr_{n}") for n in CTR]
        inc = {n: Signal(name=f"inc_{n}") for n in CTR}
        for n, i in CTR.items():
            with m.If(inc[n]):
                m.d.sync += counters[i].eq(counters[i] + 1)

        # -- the free list (MR-TX-031): a ring of free pool indices, full at reset
        free_rd_ptr = Signal(pw)
        free_wr_ptr = Signal(pw)
        free_level = Signal(pw + 1, init=lay.pool)
        free_pop = Signal()
        free_push = Signal()
        m.d.comb += free_rd.addr.eq(free_rd_ptr + free_pop)
        m.d.sync += [free_rd_ptr.eq(free_rd_ptr + free_pop), free_wr_ptr.eq(free_wr_ptr + free_push),
                     free_level.eq(free_level + free_push - free_pop)]
        m.d.comb += [free_wr.en.eq(free_push), free_wr.addr.eq(free_wr_ptr)]
        free_head = free_rd.data

        # -- stage 0: take an ACK, else a sent packet (MR-TX-033)
        s1_ack_valid = Signal()
        s1_sent_valid = Signal()
        s2_valid = Signal()
        inflight = s1_ack_valid + s1_sent_valid + s2_valid
        credit = (job_q.level + inflight) < JOB_DEPTH
        m.d.comb += [
            self.s_ack.ready.eq(credit),
            self.s_sent.ready.eq(credit & ~self.s_ack.valid & (free_level > s1_sent_valid)),
        ]
        ack_take = self.s_ack.valid & self.s_ack.ready
        sent_take = self.s_sent.valid & self.s_sent.ready
        ina, ins = self.s_ack.payload, self.s_sent.payload
        m.d.comb += path_rd.addr.eq(Mux(ack_take, Cat(ina.path[:pb], ina.conn),
                                        Cat(ins.path[:pb], ins.conn)))
        s1_ack = Signal(lay.ack)
        s1_sent = Signal(lay.sent)
        m.d.sync += [s1_ack_valid.eq(ack_take), s1_sent_valid.eq(sent_take)]
        with m.If(ack_take):
            m.d.sync += s1_ack.eq(ina)
        with m.If(sent_take):
            m.d.sync += s1_sent.eq(ins)

        # -- stage 1: the path row with forwarding (MR-TX-035), ACK resolution or append
        s1_row = Signal(cb + pb)
        m.d.comb += s1_row.eq(Mux(s1_ack_valid, Cat(s1_ack.path[:pb], s1_ack.conn),
                                  Cat(s1_sent.path[:pb], s1_sent.conn)))
        wb_valid = Signal()
        wb_addr = Signal(cb + pb)
        wb_data = Signal(lay.path.size)
        fwd = wb_valid & (wb_addr == s1_row)
        row = data.View(lay.path, Mux(fwd, wb_data, path_rd.data))
        nrow = Signal(lay.path)
        m.d.comb += nrow.eq(row)
        row_write = Signal()
        avail = Signal(psn_bits)
        m.d.comb += avail.eq(row.next_psn - row.floor)
        empty = row.floor == row.next_psn

        s2_restart = Signal()
        s2_row = Signal(cb + pb)
        s2_conn = Signal(cb)
        s2_path = Signal(8)
        s2_n = Signal(9)
        s2_dc = Signal(range(-P.SACK_BITS, P.SACK_BITS + 1))
        s2_sack = Signal(P.SACK_BITS)
        s2_ptr = Signal(pw)
        push_job = Signal()

        # sent (MR-TX-020)
        sent_ok = ((s1_sent.psn == row.next_psn) & (s1_sent.path < lay.paths)
                   & (avail < P.SEND_WINDOW))
        record = Signal(lay.rec)
        m.d.comb += [record.slot.eq(s1_sent.slot), record.chunk.eq(s1_sent.chunk),
                     record.t_sent.eq(s1_sent.t_sent), record.nbytes.eq(s1_sent.nbytes),
                     record.req.eq(s1_sent.req), record.abort.eq(s1_sent.abort)]
        m.d.comb += [rec_wr.addr.eq(free_head), rec_wr.data.eq(record),
                     link_wr.addr.eq(row.tail), link_wr.data.eq(free_head)]
        with m.If(s1_sent_valid):
            with m.If(sent_ok):
                m.d.comb += [free_pop.eq(1), rec_wr.en.eq(1), link_wr.en.eq(~empty),
                             inc["sent"].eq(1), row_write.eq(1),
                             nrow.next_psn.eq(row.next_psn + 1), nrow.tail.eq(free_head)]
                with m.If(empty):
                    m.d.comb += push_job.eq(1)
                    m.d.sync += [s2_restart.eq(1), s2_ptr.eq(free_head)]
            with m.Else():
                m.d.comb += inc["sent_bad"].eq(1)

        # ACK (MR-TX-021): protocol.sack_resolve on the row
        dc = Signal(range(-(1 << (psn_bits - 1)), 1 << (psn_bits - 1)))
        m.d.comb += dc.eq((s1_ack.cum - row.floor)[:psn_bits].as_signed())
        bl = Signal(range(P.SACK_BITS + 1))
        m.d.comb += bl.eq(_bit_length(s1_ack.sack, P.SACK_BITS))
        n = Signal(range(-(1 << (psn_bits - 1)), (1 << (psn_bits - 1)) + P.SACK_BITS + 2))
        m.d.comb += n.eq(Mux(s1_ack.sack.any(), dc + bl + 1, dc))
        with m.If(s1_ack_valid):
            with m.If(s1_ack.nak):
                m.d.comb += inc["naks"].eq(1)
            with m.Elif((s1_ack.path >= lay.paths) | (n > avail)):
                m.d.comb += inc["acks_bad"].eq(1)
            with m.Elif(n <= 0):
                m.d.comb += inc["acks_stale"].eq(1)
            with m.Else():
                m.d.comb += [inc["acks"].eq(1), push_job.eq(1), row_write.eq(1),
                             nrow.floor.eq(row.floor + n)]
                m.d.sync += [s2_restart.eq(0), s2_n.eq(n), s2_dc.eq(dc), s2_sack.eq(s1_ack.sack)]
        m.d.sync += [s2_valid.eq(push_job), s2_row.eq(s1_row), s2_conn.eq(s1_ack.conn),
                     s2_path.eq(s1_ack.path)]
        m.d.comb += [path_wr.en.eq(row_write), path_wr.addr.eq(s1_row), path_wr.data.eq(nrow)]
        m.d.sync += [wb_valid.eq(row_write), wb_addr.eq(s1_row), wb_data.eq(nrow)]

        # -- stage 2: the acknowledged bitmap relative to the floor, then the walk job (MR-TX-032)
        amt = Signal(10)
        m.d.comb += amt.eq(P.SACK_BITS - s2_dc)
        shifted = Signal(P.SACK_BITS)
        m.d.comb += shifted.eq((Cat(Const(0, P.SACK_BITS + 1), s2_sack) >> amt)[:P.SACK_BITS])
        below_cum = Mux(s2_dc > 0, _low_mask(s2_dc.as_unsigned()[:9], P.SACK_BITS), 0)
        job = Signal(lay.job)
        m.d.comb += [job.restart.eq(s2_restart), job.row.eq(s2_row), job.conn.eq(s2_conn),
                     job.path.eq(s2_path), job.n.eq(s2_n), job.ptr.eq(s2_ptr),
                     job.acked.eq((shifted | below_cum) & _low_mask(s2_n, P.SACK_BITS))]
        m.d.comb += [job_q.w_en.eq(s2_valid), job_q.w_data.eq(job)]

        # -- the walker (MR-TX-032): one record per cycle from the path's head
        w_state = Signal(2)             # 0 idle, 1 start, 2 walk
        w_row = Signal(cb + pb)
        w_conn = Signal(cb)
        w_path = Signal(8)
        w_n = Signal(9)
        w_left = Signal(9)
        w_acked = Signal(P.SACK_BITS)
        w_cursor = Signal(pw)
        qjob = data.View(lay.job, job_q.r_data)
        rec = data.View(lay.rec, rec_rd.data)
        walk_addr = Signal(pw)
        m.d.comb += [rec_rd.addr.eq(walk_addr), link_rd.addr.eq(walk_addr), head_rd.addr.eq(qjob.row)]
        report = Signal(lay.acked)
        m.d.comb += [report.conn.eq(w_conn), report.path.eq(w_path), report.slot.eq(rec.slot),
                     report.chunk.eq(rec.chunk), report.abort.eq(rec.abort),
                     acked_q.w_data.eq(report), resend_q.w_data.eq(report)]
        with m.Switch(w_state):
            with m.Case(0):
                with m.If(job_q.r_rdy):
                    m.d.comb += job_q.r_en.eq(1)
                    with m.If(qjob.restart):
                        m.d.comb += [head_wr.en.eq(1), head_wr.addr.eq(qjob.row),
                                     head_wr.data.eq(qjob.ptr)]
                    with m.Else():
                        m.d.sync += [w_state.eq(1), w_row.eq(qjob.row), w_conn.eq(qjob.conn),
                                     w_path.eq(qjob.path), w_n.eq(qjob.n), w_acked.eq(qjob.acked)]
            with m.Case(1):
                m.d.comb += walk_addr.eq(head_rd.data)
                m.d.sync += [w_cursor.eq(head_rd.data), w_left.eq(w_n), w_state.eq(2)]
            with m.Case(2):
                is_acked = w_acked[0]
                advance = Mux(is_acked, acked_q.w_rdy, resend_q.w_rdy)
                m.d.comb += walk_addr.eq(Mux(advance, link_rd.data, w_cursor))
                with m.If(advance):
                    m.d.comb += [acked_q.w_en.eq(is_acked), resend_q.w_en.eq(~is_acked),
                                 inc["acked"].eq(is_acked), inc["gap_losses"].eq(~is_acked),
                                 free_push.eq(1), free_wr.data.eq(w_cursor)]
                    m.d.sync += [w_cursor.eq(link_rd.data), w_acked.eq(w_acked >> 1),
                                 w_left.eq(w_left - 1)]
                    with m.If(w_left == 1):
                        m.d.comb += [head_wr.en.eq(1), head_wr.addr.eq(w_row),
                                     head_wr.data.eq(link_rd.data)]
                        m.d.sync += w_state.eq(0)

        # -- outputs and counters (MR-TX-040)
        m.d.comb += [
            self.m_acked.valid.eq(acked_q.r_rdy), self.m_acked.payload.eq(acked_q.r_data),
            acked_q.r_en.eq(self.m_acked.ready),
            self.m_resend.valid.eq(resend_q.r_rdy), self.m_resend.payload.eq(resend_q.r_data),
            resend_q.r_en.eq(self.m_resend.ready),
        ]
        ctr = Array(counters)
        m.d.sync += self.reg_data.eq(Mux(self.reg_addr < N_COUNTERS, ctr[self.reg_addr], 0))
        return m


def retransmit_256x4(width=64):
    """The small instance: 256 connections x 4 paths, a pool of 1,024 records (MR-TX-001)."""
    conns, paths, pool = SMALL
    return Retransmit(width, conns=conns, paths=paths, pool=pool)
