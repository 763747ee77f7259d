"""Payload DMA: read commands fetched from host memory through an AXI4 read master and returned
as payload beats packed from lane 0, the frame builder's ``s_payload`` (docs/spec/hw-dma-read.md,
MR-DMR-*).

``DmaRead(width=512, *, conns=4096, max_burst=256, outstanding=256, id_width=4, axi_id=0,
rotate=False)`` (MR-DMR-001). ``rotate`` (the TX's, MR-TX-480/481): the command carries a
``lane`` and each payload beat leaves rotated up by it (the frame builder's lane), made by one
rotation of the R beats by ``(o - lane) mod nb`` and two lane masks a command. Ports (MR-DMR-002):

============ ===== =======================================================================
port         dir   meaning
============ ===== =======================================================================
s_cmd        in    read commands {conn, addr, length}
m_axi        out   AXI4 read master: AR (id, addr, len, size, burst INCR), R
m_data       out   payload beats {data, keep, last} in command order, packed from lane 0
m_done       out   one record {conn, length, error} per command, with its last payload beat
============ ===== =======================================================================

Structure (MR-DMR-040..045): a command is decoded in two stages into the AR queue. The AR side
splits its head command into bursts, one per cycle into the AR register; its first burst also
pushes the command's R-side entry into the in-flight queue (its depth bounds the commands in
flight). R beats enter a 2-slot queue. The R side realigns: it keeps the previous R beat
rotated down by the address's lane offset and makes a payload beat from the kept beat (low
lanes) and the current one rotated (high lanes); a command whose last payload beat lies in its
last R beat owes that beat, which leaves from the kept beat alone in the next free cycle
(a "flush", overlapped with the next command's first R beat). Every output is a flip-flop or a
function of flip-flops.

Golden model: :class:`metaroce.models.dma_read.DmaReadCycleModel`, cycle by cycle on every port.
"""
from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import data, fifo, stream, wiring
from amaranth.lib.wiring import In, Out

from ..models import records
from ..models.dma_read import (CMD_DEPTH, DONE_DEPTH, INCR, MAX_BURST, OUTSTANDING, R_DEPTH,
                               boundary, check_params, cmd_layout, done_layout, payload_layout)
from .dma_write import _group_ones, _grouped_inc, start_of
from .queue import HeadRegFIFO

__all__ = ["DmaRead", "axi4_read_signature"]


def axi4_read_signature(width, id_width, addr_width=64):
    """An AXI4 read master's AR and R channels (MR-DMR-002), member names as AXI4's."""
    return wiring.Signature({
        "arid": Out(id_width), "araddr": Out(addr_width), "arlen": Out(8), "arsize": Out(3),
        "arburst": Out(2), "arvalid": Out(1), "arready": In(1),
        "rid": In(id_width), "rdata": In(width), "rresp": In(2), "rlast": In(1), "rvalid": In(1),
        "rready": Out(1),
    })


class DmaRead(wiring.Component):
    """The payload DMA (docs/spec/hw-dma-read.md)."""

    def __init__(self, width=512, *, conns=records.CONNS, max_burst=MAX_BURST,
                 outstanding=OUTSTANDING, id_width=4, axi_id=0, rotate=False):
        check_params(width, conns, max_burst, outstanding, id_width, axi_id)
        self.width = width
        self.conns, self.max_burst, self.outstanding = conns, max_burst, outstanding
        self.axi_id = axi_id
        # MR-TX-480: each payload beat rotated up by its command's lane (the TX's builder lane)
        self.rotate = bool(rotate)
        self.cmd = cmd_layout(conns, lane=self.rotate)
        self.done = done_layout(conns)
        super().__init__({
            "s_cmd": In(stream.Signature(self.cmd)),
            "m_axi": Out(axi4_read_signature(width, id_width)),
            "m_data": Out(stream.Signature(payload_layout(width))),
            "m_done": Out(stream.Signature(self.done)),
        })

    def elaborate(self, platform):
        m = Module()
        width, nb = self.width, self.width // 8
        lnb = (nb - 1).bit_length()                 # log2 of the bytes per beat
        bound = boundary(nb, self.max_burst)
        lbd = (bound - 1).bit_length()              # log2 of the burst boundary
        beats_in_bound = bound // nb
        cb = self.done["conn"].width
        axi = self.m_axi

        # -- intake (MR-DMR-040): captured (X0), decoded over two stages (X1, X2) that never
        # stall, pushed into the AR queue; s_cmd.ready counts the stages against its room.
        # MR-TX-481: with rotate, ``o`` holds the R beats' rotation (o - lane) mod nb, and the
        # ends of the command's two lane intervals [lane, lane + n) mod nb (from held: n = nb - o;
        # kept on a last beat: n = (length - 1) mod nb + 1) come along: ``s``, ``eh``, ``el``
        masks = {"s": lnb, "eh": lnb + 1, "el": lnb + 1} if self.rotate else {}
        flight_entry = data.StructLayout({"conn": cb, "length": 16, "o": lnb, "e_m1": lnb,
                                  "n_in": 17 - lnb, "in_zero": 1, "in_one": 1, "spill": 1,
                                  "zero": 1, **masks})
        arcmd = data.StructLayout({"r": flight_entry, "hi": 64 - lbd, "off": lbd, "left": 17 - lbd,
                                   "single": 1, "single_len": 8, "last_len": 8})
        m.submodules.ar_q = ar_q = fifo.SyncFIFO(width=arcmd.size, depth=CMD_DEPTH)

        x0_valid, x1_valid, x2_valid = Signal(), Signal(), Signal()
        inflight = x0_valid + x1_valid + x2_valid
        m.d.comb += self.s_cmd.ready.eq(ar_q.level + inflight < CMD_DEPTH)
        x0 = Signal(self.cmd)
        m.d.sync += [x0_valid.eq(self.s_cmd.valid & self.s_cmd.ready), x0.eq(self.s_cmd.payload)]
        # X1: length - 1, payload beats, spill (one R beat more than payload beats)
        cmd_len = x0.length
        x1 = {n: Signal(w, name=f"x1_{n}") for n, w in
              (("conn", cb), ("length", 16), ("addr", 64), ("lm1", 16), ("n_in", 17 - lnb),
               ("zero", 1), ("spill", 1)) + ((("lane", lnb),) if self.rotate else ())}
        part = cmd_len[:lnb]
        spill = Mux(part == 0, x0.addr[:lnb] != 0, (x0.addr[:lnb] + part) > nb)
        m.d.sync += [x1_valid.eq(x0_valid), x1["conn"].eq(x0.conn), x1["length"].eq(cmd_len),
                     x1["addr"].eq(x0.addr), x1["lm1"].eq(Mux(cmd_len == 0, 0, cmd_len - 1)),
                     x1["n_in"].eq((cmd_len >> lnb) + (part != 0)), x1["zero"].eq(cmd_len == 0),
                     x1["spill"].eq((cmd_len != 0) & spill)]
        if self.rotate:
            m.d.sync += x1["lane"].eq(x0.lane[:lnb])
        # X2: the low part of the last byte's offset (off + length - 1)
        off1 = x1["addr"][:lbd]
        x2 = {n: Signal(w, name=f"x2_{n}") for n, w in
              (("conn", cb), ("length", 16), ("addr", 64), ("lm1_hi", 17 - lbd), ("low", lbd + 1),
               ("e_m1", lnb), ("n_in", 17 - lnb), ("in_one", 1), ("zero", 1), ("spill", 1))
              + ((("rot", lnb), ("s", lnb), ("eh", lnb + 1), ("el", lnb + 1)) if self.rotate else ())}
        m.d.sync += [x2_valid.eq(x1_valid), x2["conn"].eq(x1["conn"]), x2["length"].eq(x1["length"]),
                     x2["addr"].eq(x1["addr"]), x2["lm1_hi"].eq(x1["lm1"][lbd:]),
                     x2["low"].eq(off1 + x1["lm1"][:lbd]), x2["e_m1"].eq(x1["lm1"][:lnb]),
                     x2["n_in"].eq(x1["n_in"]),
                     x2["in_one"].eq(~x1["zero"] & (x1["lm1"][lnb:] == 0)),
                     x2["zero"].eq(x1["zero"]), x2["spill"].eq(x1["spill"])]
        if self.rotate:
            # MR-TX-481: the R beats rotated down by (o - lane) mod nb; lane j (rotated) is
            # lane (j - lane) mod nb of the lane-0 beat: from held when that is below nb - o,
            # kept on a last beat when it is at most (length - 1) mod nb: the intervals' ends
            o1, s1 = x1["addr"][:lnb], x1["lane"]
            m.d.sync += [x2["rot"].eq((o1 - s1)[:lnb]), x2["s"].eq(s1),
                         x2["eh"].eq(s1 + (nb - o1)), x2["el"].eq(s1 + x1["lm1"][:lnb] + 1)]
        carry = x2["low"][lbd]
        ari = Signal(arcmd)
        start_beat = x2["addr"][lnb:lbd] if lbd > lnb else Const(0, 1)
        m.d.comb += [
            ari.r.conn.eq(x2["conn"]), ari.r.length.eq(x2["length"]),
            ari.r.o.eq(x2["rot"] if self.rotate else x2["addr"][:lnb]),
            ari.r.e_m1.eq(x2["e_m1"]), ari.r.n_in.eq(x2["n_in"]), ari.r.in_zero.eq(x2["zero"]),
            ari.r.in_one.eq(x2["in_one"]), ari.r.spill.eq(x2["spill"]), ari.r.zero.eq(x2["zero"]),
            ari.hi.eq(x2["addr"][lbd:]), ari.off.eq(x2["addr"][:lbd]),
            ari.left.eq(x2["lm1_hi"] + carry), ari.single.eq((x2["lm1_hi"] == 0) & ~carry),
            ari.last_len.eq(x2["low"][lnb:lbd] if lbd > lnb else 0),
            ari.single_len.eq((x2["low"][lnb:lbd] if lbd > lnb else 0) - start_beat),
            ar_q.w_en.eq(x2_valid), ar_q.w_data.eq(ari),
        ]
        if self.rotate:
            m.d.comb += [ari.r.s.eq(x2["s"]), ari.r.eh.eq(x2["eh"]), ari.r.el.eq(x2["el"])]

        # -- commands in flight (MR-DMR-043): a queue of R-side entries
        # MR-HW-089: left a SyncFIFOBuffered (LUT RAM): at the engine's parameters a BufferedQueue
        # took 2 DP16KD for no COMB saved in the TX data path
        m.submodules.flight = flight = fifo.SyncFIFOBuffered(width=flight_entry.size, depth=self.outstanding)

        # -- AR side: the head command's bursts, one per cycle (MR-DMR-010..013, MR-DMR-041)
        ar_active = Signal()
        ar = Signal(arcmd)
        ar_first = Signal()
        hi_ones = Signal(-(-(64 - lbd) // 6))       # which 6-bit groups of ar.hi are all ones
        final = ar.single
        burst_len = Mux(ar_first, Mux(final, ar.single_len, ~start_of(ar.off, lnb, lbd)),
                        Mux(final, ar.last_len, beats_in_bound - 1))
        load_ok = ~axi.arvalid | axi.arready
        emit_ar = ar_active & load_ok & (~ar_first | flight.w_rdy)
        m.d.comb += [flight.w_data.eq(ar.r), flight.w_en.eq(emit_ar & ar_first)]
        hi_next, hi_ones_next = _grouped_inc(ar.hi, hi_ones)
        with m.If(emit_ar & ~ar.r.zero):
            m.d.sync += [axi.arvalid.eq(1), axi.araddr.eq(Cat(ar.off, ar.hi)),
                         axi.arlen.eq(burst_len if beats_in_bound > 1 else 0)]
        with m.Elif(axi.arready):
            m.d.sync += axi.arvalid.eq(0)
        with m.If(emit_ar):
            m.d.sync += ar_first.eq(0)
            with m.If(~final):
                m.d.sync += [ar.hi.eq(hi_next), hi_ones.eq(hi_ones_next), ar.off.eq(0),
                             ar.left.eq(ar.left - 1), ar.single.eq(ar.left == 1)]
        ar_need = ~ar_active | (emit_ar & final)
        head = data.View(arcmd, ar_q.r_data)
        m.d.comb += ar_q.r_en.eq(ar_need)
        with m.If(ar_need):
            m.d.sync += ar_active.eq(ar_q.r_rdy)
            with m.If(ar_q.r_rdy):
                m.d.sync += [ar.eq(head), ar_first.eq(1), hi_ones.eq(_group_ones(head.hi))]
        m.d.comb += [axi.arid.eq(self.axi_id), axi.arsize.eq(lnb), axi.arburst.eq(INCR)]

        # -- R beats into a 2-slot queue (registered rready); rid and rlast are not read
        m.submodules.r_q = r_q = fifo.SyncFIFO(width=width + 1, depth=R_DEPTH)
        m.d.comb += [axi.rready.eq(r_q.w_rdy), r_q.w_en.eq(axi.rvalid),
                     r_q.w_data.eq(Cat(axi.rdata, axi.rresp[1]))]
        # MR-TX-369: the done queue's head, room and valid from flip-flops (SyncFIFO's cycles,
        # MR-TX-065's queue): the TX's m_fail starts at them
        m.submodules.done_q = done_q = HeadRegFIFO(width=self.done.size, depth=DONE_DEPTH)

        # -- R side: realign to lane 0, one payload beat per cycle (MR-DMR-020..031, MR-DMR-042)
        cur_active = Signal()
        cur = Signal(flight_entry)
        first = Signal()
        err = Signal()
        held = Signal(width)
        pend = Signal()                             # a command's last payload beat is owed
        # MR-TX-481: the command's lane masks (from held; kept on a last beat), made from its
        # flight entry's interval ends as it is loaded
        cur_hm, cur_lm = Signal(nb, name="cur_hm"), Signal(nb, name="cur_lm")
        pend_rec = Signal(data.StructLayout({"conn": cb, "length": 16, "err": 1, "e_m1": lnb,
                                             **({"lm": nb} if self.rotate else {})}))
        out = self.m_data
        go = done_q.w_rdy
        load_ok = ~out.valid | out.ready
        have_r = r_q.r_rdy
        flush = pend & load_ok & go
        take = (cur_active & ~cur.zero & have_r & go
                & Mux(pend, first & load_ok, first | load_ok))
        emit = take & ~first
        zero_done = cur_active & cur.zero & ~pend & go
        last_r = Mux(cur.spill, cur.in_zero, cur.in_one)
        final_r = last_r & cur.spill                # the last payload beat leaves with it
        bad = r_q.r_data[width]
        # the R beat rotated down by o lanes, as a log shifter
        rdata = r_q.r_data[:width]
        rot = Signal(width)
        m.d.comb += rot.eq((Cat(rdata, rdata) >> Cat(Const(0, 3), cur.o))[:width])
        end_lane = Mux(flush, pend_rec.e_m1, cur.e_m1)
        keep = Signal(nb)
        is_last = flush | final_r
        for j in range(nb):
            if self.rotate:
                # MR-TX-481: the last beat's lanes, the command's (or the owed beat's) mask
                m.d.comb += keep[j].eq(~is_last | Mux(flush, pend_rec.lm[j], cur_lm[j]))
            else:
                m.d.comb += keep[j].eq(~is_last | (j <= end_lane))
        word = Signal(width)
        for j in range(nb):
            sl = slice(8 * j, 8 * j + 8)
            # j < nb - o; MR-TX-481: the command's mask, the same test on the rotated lanes
            from_held = flush | (cur_hm[j] if self.rotate else (cur.o < nb - j))
            m.d.comb += word[sl].eq(Mux(keep[j], Mux(from_held, held[sl], rot[sl]), 0))
        rec = Signal(self.done)
        m.d.comb += [
            rec.conn.eq(Mux(flush, pend_rec.conn, cur.conn)),
            rec.length.eq(Mux(flush, pend_rec.length, Mux(cur.zero, 0, cur.length))),
            rec.error.eq(Mux(flush, pend_rec.err, Mux(cur.zero, 0, err | bad))),
            done_q.w_en.eq(flush | (take & final_r) | zero_done), done_q.w_data.eq(rec),
            r_q.r_en.eq(take),
        ]
        with m.If(flush | emit):
            m.d.sync += [out.valid.eq(1), out.payload.data.eq(word), out.payload.keep.eq(keep),
                         out.payload.last.eq(is_last)]
        with m.Elif(out.ready):
            m.d.sync += out.valid.eq(0)
        with m.If(flush):
            m.d.sync += pend.eq(0)
        with m.If(take):
            m.d.sync += [held.eq(rot), first.eq(0), err.eq(Mux(last_r, 0, err | bad)),
                         cur.n_in.eq(cur.n_in - 1), cur.in_zero.eq(cur.in_one),
                         cur.in_one.eq(cur.n_in == 2)]
            with m.If(last_r & ~cur.spill):
                m.d.sync += [pend.eq(1), pend_rec.conn.eq(cur.conn), pend_rec.length.eq(cur.length),
                             pend_rec.err.eq(err | bad), pend_rec.e_m1.eq(cur.e_m1)]
                if self.rotate:
                    m.d.sync += pend_rec.lm.eq(cur_lm)
        cmd_end = (take & last_r) | zero_done
        cur_need = ~cur_active | cmd_end
        m.d.comb += flight.r_en.eq(cur_need)
        with m.If(cur_need):
            m.d.sync += cur_active.eq(flight.r_rdy)
            with m.If(flight.r_rdy):
                m.d.sync += [cur.eq(flight.r_data), first.eq(1)]
                if self.rotate:
                    f = data.View(flight_entry, flight.r_data)

                    def interval(e):
                        # lanes [s, e) mod nb, e = s + n (1 <= n <= nb): past nb it wraps
                        return Cat(*[Mux(e[lnb], (j >= f.s) | (j < e[:lnb]), (j >= f.s) & (j < e[:lnb]))
                                     for j in range(nb)])
                    m.d.sync += [cur_hm.eq(interval(f.eh)), cur_lm.eq(interval(f.el))]
        m.d.comb += [self.m_done.valid.eq(done_q.r_rdy),
                     self.m_done.payload.eq(Mux(done_q.r_rdy, done_q.r_data, 0)),
                     done_q.r_en.eq(self.m_done.ready)]
        return m
