"""Placement DMA: the RX engine's placement commands and payload beats written to host memory
through an AXI4 write master (docs/spec/hw-dma.md, MR-DMA-*).

``DmaWrite(width=512, *, conns=4096, max_burst=256, outstanding=256, id_width=4, axi_id=0)``
(MR-DMA-001). Ports (MR-DMA-002):

============ ===== =======================================================================
port         dir   meaning
============ ===== =======================================================================
s_place      in    placement commands {conn, addr, length}: the RX engine's m_place
s_data       in    payload beats {data, keep, last} in command order: the RX engine's m_data
m_axi        out   AXI4 write master: AW (id, addr, len, size, burst INCR), W, B
m_done       out   one record {conn, length, error} per command, after all its B responses
============ ===== =======================================================================

Structure (MR-DMA-040..044): each command goes into two queues. The AW side splits its head
command into bursts, one per cycle, into the AW register; each burst also enters the
outstanding-burst queue (its depth bounds the bursts in flight). The W side realigns the
payload to the address's byte lane, one beat per cycle into the W register: the previous input
beat is kept rotated, and a write lane takes the current input beat rotated (lanes at or above
the offset) or the kept one (below). B responses pop the outstanding queue and the last burst
of a command pushes its done record. Every output is a flip-flop or a function of flip-flops.

Golden model: :class:`metaroce.models.dma_write.DmaWriteCycleModel`, cycle by cycle on every port.
"""
from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import data, fifo, stream, wiring
from amaranth.lib.wiring import In, Out

from ..models import records
from ..models.dma_write import (CMD_DEPTH, DATA_DEPTH, DONE_DEPTH, INCR, MAX_BURST, OUTSTANDING,
                                boundary, check_params, done_layout, payload_layout,
                                place_layout)

__all__ = ["DmaWrite", "axi4_write_signature"]


def axi4_write_signature(width, id_width, addr_width=64):
    """An AXI4 write master's AW, W and B channels (MR-DMA-002), member names as AXI4's."""
    return wiring.Signature({
        "awid": Out(id_width), "awaddr": Out(addr_width), "awlen": Out(8), "awsize": Out(3),
        "awburst": Out(2), "awvalid": Out(1), "awready": In(1),
        "wdata": Out(width), "wstrb": Out(width // 8), "wlast": Out(1), "wvalid": Out(1),
        "wready": In(1),
        "bid": In(id_width), "bresp": In(2), "bvalid": In(1), "bready": Out(1),
    })


class DmaWrite(wiring.Component):
    """The placement DMA (docs/spec/hw-dma.md)."""

    def __init__(self, width=512, *, conns=records.CONNS, max_burst=MAX_BURST,
                 outstanding=OUTSTANDING, id_width=4, axi_id=0):
        check_params(width, conns, max_burst, outstanding, id_width, axi_id)
        self.width = width
        self.conns, self.max_burst, self.outstanding = conns, max_burst, outstanding
        self.axi_id = axi_id
        self.place = place_layout(conns)
        self.done = done_layout(conns)
        super().__init__({
            "s_place": In(stream.Signature(self.place)),
            "s_data": In(stream.Signature(payload_layout(width))),
            "m_axi": Out(axi4_write_signature(width, id_width)),
            "m_done": Out(stream.Signature(self.done)),
        })

    def elaborate(self, platform):
        m = Module()
        width, nb = self.width, self.width // 8
        lnb = (nb - 1).bit_length()                 # log2 of the bytes per beat
        bound = boundary(nb, self.max_burst)
        lbd = (bound - 1).bit_length()              # log2 of the burst boundary
        beats_in_bound = bound // nb
        axi = self.m_axi
        cb = self.done["conn"].width

        # -- intake: each command into the AW queue and (decoded) the W queue (MR-DMA-040)
        wcmd = data.StructLayout({"o": lnb, "end": lnb + 1, "n_in": 17 - lnb, "n_out_m1": 17 - lnb,
                                  "pos": max(1, lbd - lnb), "zero": 1})
        m.submodules.aw_q = aw_q = fifo.SyncFIFO(width=self.place.size, depth=CMD_DEPTH)
        m.submodules.w_q = w_q = fifo.SyncFIFO(width=wcmd.size, depth=CMD_DEPTH)
        m.submodules.d_q = d_q = fifo.SyncFIFO(width=width, depth=DATA_DEPTH)
        pin = self.s_place.payload
        m.d.comb += self.s_place.ready.eq(aw_q.w_rdy & w_q.w_rdy)
        take = self.s_place.valid & self.s_place.ready
        span = Signal(17)
        m.d.comb += span.eq(pin.addr[:lnb] + pin.length)
        wi = Signal(wcmd)
        m.d.comb += [
            wi.o.eq(pin.addr[:lnb]),
            wi.end.eq((span - 1)[:lnb] + 1),
            wi.n_in.eq((pin.length + (nb - 1)) >> lnb),
            wi.n_out_m1.eq(Mux(span == 0, 0, (span - 1) >> lnb)),
            wi.pos.eq(pin.addr[lnb:lbd] if lbd > lnb else 0),
            wi.zero.eq(pin.length == 0),
            aw_q.w_en.eq(take), aw_q.w_data.eq(pin),
            w_q.w_en.eq(take), w_q.w_data.eq(wi),
        ]
        m.d.comb += [self.s_data.ready.eq(d_q.w_rdy), d_q.w_en.eq(self.s_data.valid),
                     d_q.w_data.eq(self.s_data.payload.data)]

        # -- outstanding bursts and done records (MR-DMA-030, MR-DMA-043)
        entry = data.StructLayout({"last": 1, "conn": cb, "length": 16})
        m.submodules.burst_q = burst_q = fifo.SyncFIFOBuffered(width=entry.size, depth=self.outstanding)
        m.submodules.done_q = done_q = fifo.SyncFIFO(width=self.done.size, depth=DONE_DEPTH)

        # -- AW side: split the command into bursts, one per cycle (MR-DMA-010..013, MR-DMA-041)
        aw_active = Signal()
        aw_hi = Signal(64 - lbd)
        aw_off = Signal(lbd)
        aw_rem = Signal(17)
        aw_conn = Signal(cb)
        aw_len = Signal(16)
        room = Signal(lbd + 1)
        m.d.comb += room.eq(bound - aw_off)
        final = aw_rem <= room
        end_beat = Signal(lbd)
        m.d.comb += end_beat.eq((aw_off + aw_rem - 1)[:lbd])
        start_beat = aw_off[lnb:] if lbd > lnb else Const(0, 1)
        burst_len = Mux(final, (end_beat >> lnb) - start_beat, (beats_in_bound - 1) - start_beat)
        load_ok = (~axi.awvalid | axi.awready) & burst_q.w_rdy
        emit_aw = aw_active & load_ok
        burst = Signal(entry)
        m.d.comb += [burst.last.eq(final), burst.conn.eq(aw_conn), burst.length.eq(aw_len),
                     burst_q.w_data.eq(burst), burst_q.w_en.eq(emit_aw)]
        with m.If(emit_aw):
            m.d.sync += [axi.awvalid.eq(1), axi.awaddr.eq(Cat(aw_off, aw_hi)),
                         axi.awlen.eq(burst_len[:8])]
            with m.If(~final):
                m.d.sync += [aw_hi.eq(aw_hi + 1), aw_off.eq(0), aw_rem.eq(aw_rem - room)]
        with m.Elif(axi.awready):
            m.d.sync += axi.awvalid.eq(0)
        aw_need = ~aw_active | (emit_aw & final)
        head = data.View(self.place, aw_q.r_data)
        m.d.comb += aw_q.r_en.eq(aw_need)
        with m.If(aw_need):
            m.d.sync += aw_active.eq(aw_q.r_rdy)
            with m.If(aw_q.r_rdy):
                m.d.sync += [aw_hi.eq(head.addr[lbd:]), aw_off.eq(head.addr[:lbd]),
                             aw_rem.eq(Mux(head.length == 0, 1, head.length)),
                             aw_conn.eq(head.conn), aw_len.eq(head.length)]
        m.d.comb += [axi.awid.eq(self.axi_id), axi.awsize.eq(lnb), axi.awburst.eq(INCR)]

        # -- W side: realign the payload to the address's lane, one beat per cycle (MR-DMA-020..022)
        w_active = Signal()
        cur = Signal(wcmd)
        first = Signal()
        held = Signal(width)
        need_in = cur.n_in != 0
        emit_w = w_active & (~need_in | d_q.r_rdy) & (~axi.wvalid | axi.wready)
        last_beat = cur.n_out_m1 == 0
        strobe = Signal(nb)
        for j in range(nb):
            m.d.comb += strobe[j].eq(~cur.zero & (~first | (cur.o <= j)) & (~last_beat | (j < cur.end)))
        rot = Signal(width)
        with m.Switch(cur.o):
            for o in range(nb):
                with m.Case(o):
                    m.d.comb += rot.eq(Cat(d_q.r_data[width - 8 * o:], d_q.r_data[:width - 8 * o])
                                       if o else d_q.r_data)
        word = Signal(width)
        for j in range(nb):
            sl = slice(8 * j, 8 * j + 8)
            m.d.comb += word[sl].eq(Mux(strobe[j], Mux(cur.o <= j, rot[sl], held[sl]), 0))
        wlast = last_beat | ((cur.pos == beats_in_bound - 1) if lbd > lnb else 1)
        m.d.comb += d_q.r_en.eq(emit_w & need_in)
        with m.If(emit_w):
            m.d.sync += [axi.wvalid.eq(1), axi.wdata.eq(word), axi.wstrb.eq(strobe),
                         axi.wlast.eq(wlast), first.eq(0), cur.pos.eq(cur.pos + 1),
                         cur.n_out_m1.eq(cur.n_out_m1 - 1)]
            with m.If(need_in):
                m.d.sync += [held.eq(rot), cur.n_in.eq(cur.n_in - 1)]
        with m.Elif(axi.wready):
            m.d.sync += axi.wvalid.eq(0)
        w_need = ~w_active | (emit_w & last_beat)
        m.d.comb += w_q.r_en.eq(w_need)
        with m.If(w_need):
            m.d.sync += w_active.eq(w_q.r_rdy)
            with m.If(w_q.r_rdy):
                m.d.sync += [cur.eq(w_q.r_data), first.eq(1)]

        # -- B: pop the outstanding burst; the command's last burst makes its record (MR-DMA-030)
        err = Signal()
        head_b = data.View(entry, burst_q.r_data)
        m.d.comb += axi.bready.eq(burst_q.r_rdy & done_q.w_rdy)
        take_b = axi.bvalid & axi.bready
        bad = axi.bresp[1]
        rec = Signal(self.done)
        m.d.comb += [rec.conn.eq(head_b.conn), rec.length.eq(head_b.length), rec.error.eq(err | bad),
                     burst_q.r_en.eq(take_b), done_q.w_en.eq(take_b & head_b.last),
                     done_q.w_data.eq(rec)]
        with m.If(take_b):
            m.d.sync += err.eq(Mux(head_b.last, 0, err | bad))
        m.d.comb += [self.m_done.valid.eq(done_q.r_rdy),
                     self.m_done.payload.eq(Mux(done_q.r_rdy, done_q.r_data, 0)),
                     done_q.r_en.eq(self.m_done.ready)]
        return m
