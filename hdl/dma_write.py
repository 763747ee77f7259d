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
from .queue import BufferedQueue, SyncQueue

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
        bb = max(1, lbd - lnb)                      # bits of a beat index inside a boundary block
        cb = self.done["conn"].width
        axi = self.m_axi

        # -- intake (MR-DMA-040): a command is captured (X0), decoded over two stages (X1, X2)
        # and pushed into the AW and W queues from X2's outputs; the stages never stall, so
        # s_place.ready counts them against the queues' room (adders split so that no stage
        # holds a long carry chain).
        awcmd = data.StructLayout({"conn": cb, "length": 16, "hi": 64 - lbd, "off": lbd,
                                   "left": 17 - lbd, "single": 1, "single_len": 8, "last_len": 8})
        wcmd = data.StructLayout({"o": lnb, "e_m1": lnb, "n_in": 17 - lnb, "in_zero": 1,
                                  "in_one": 1, "spill": 1, "pos": bb, "zero": 1})
        m.submodules.aw_q = aw_q = SyncQueue(width=awcmd.size, depth=CMD_DEPTH)   # MR-HW-090
        m.submodules.w_q = w_q = SyncQueue(width=wcmd.size, depth=CMD_DEPTH)   # MR-HW-090
        m.submodules.d_q = d_q = fifo.SyncFIFO(width=width, depth=DATA_DEPTH)

        x0_valid, x1_valid, x2_valid = Signal(), Signal(), Signal()
        inflight = x0_valid + x1_valid + x2_valid
        m.d.comb += self.s_place.ready.eq((aw_q.level + inflight < CMD_DEPTH)
                                          & (w_q.level + inflight < CMD_DEPTH))
        x0 = Signal(self.place)
        m.d.sync += [x0_valid.eq(self.s_place.valid & self.s_place.ready), x0.eq(self.s_place.payload)]
        # X1: length - 1, input beats, spill
        cmd_len = x0.length
        x1 = {n: Signal(w, name=f"x1_{n}") for n, w in
              (("conn", cb), ("length", 16), ("addr", 64), ("lm1", 16), ("n_in", 17 - lnb),
               ("zero", 1), ("spill", 1))}
        part = cmd_len[:lnb]
        spill = Mux(part == 0, x0.addr[:lnb] != 0, (x0.addr[:lnb] + part) > nb)
        m.d.sync += [x1_valid.eq(x0_valid), x1["conn"].eq(x0.conn), x1["length"].eq(cmd_len),
                     x1["addr"].eq(x0.addr), x1["lm1"].eq(Mux(cmd_len == 0, 0, cmd_len - 1)),
                     x1["n_in"].eq((cmd_len >> lnb) + (part != 0)), x1["zero"].eq(cmd_len == 0),
                     x1["spill"].eq((cmd_len == 0) | spill)]
        # X2: the low part of the last byte's offset (off + length - 1), the end lane
        off1 = x1["addr"][:lbd]
        x2 = {n: Signal(w, name=f"x2_{n}") for n, w in
              (("conn", cb), ("length", 16), ("addr", 64), ("lm1_hi", 17 - lbd), ("low", lbd + 1),
               ("e_m1", lnb), ("n_in", 17 - lnb), ("in_one", 1), ("zero", 1), ("spill", 1))}
        m.d.sync += [x2_valid.eq(x1_valid), x2["conn"].eq(x1["conn"]), x2["length"].eq(x1["length"]),
                     x2["addr"].eq(x1["addr"]), x2["lm1_hi"].eq(x1["lm1"][lbd:]),
                     x2["low"].eq(off1 + x1["lm1"][:lbd]),
                     x2["e_m1"].eq(x1["addr"][:lnb] + x1["lm1"][:lnb]), x2["n_in"].eq(x1["n_in"]),
                     x2["in_one"].eq(~x1["zero"] & (x1["lm1"][lnb:] == 0)),
                     x2["zero"].eq(x1["zero"]), x2["spill"].eq(x1["spill"])]
        # X2 outputs: the burst count, the first and last burst lengths; into the queues
        carry = x2["low"][lbd]
        awi = Signal(awcmd)
        start_beat = x2["addr"][lnb:lbd] if lbd > lnb else Const(0, 1)
        m.d.comb += [
            awi.conn.eq(x2["conn"]), awi.length.eq(x2["length"]), awi.hi.eq(x2["addr"][lbd:]),
            awi.off.eq(x2["addr"][:lbd]), awi.left.eq(x2["lm1_hi"] + carry),
            awi.single.eq((x2["lm1_hi"] == 0) & ~carry),
            awi.last_len.eq(x2["low"][lnb:lbd] if lbd > lnb else 0),
            awi.single_len.eq((x2["low"][lnb:lbd] if lbd > lnb else 0) - start_beat),
            aw_q.w_en.eq(x2_valid), aw_q.w_data.eq(awi),
        ]
        wi = Signal(wcmd)
        m.d.comb += [
            wi.o.eq(x2["addr"][:lnb]), wi.e_m1.eq(x2["e_m1"]), wi.n_in.eq(x2["n_in"]),
            wi.in_zero.eq(x2["zero"]), wi.in_one.eq(x2["in_one"]), wi.spill.eq(x2["spill"]),
            wi.pos.eq(x2["addr"][lnb:lbd] if lbd > lnb else 0), wi.zero.eq(x2["zero"]),
            w_q.w_en.eq(x2_valid), w_q.w_data.eq(wi),
        ]
        m.d.comb += [self.s_data.ready.eq(d_q.w_rdy), d_q.w_en.eq(self.s_data.valid),
                     d_q.w_data.eq(self.s_data.payload.data)]

        # -- outstanding bursts and done records (MR-DMA-030, MR-DMA-043)
        entry = data.StructLayout({"last": 1, "conn": cb, "length": 16})
        m.submodules.burst_q = burst_q = BufferedQueue(width=entry.size, depth=self.outstanding)   # MR-HW-089
        m.submodules.done_q = done_q = fifo.SyncFIFO(width=self.done.size, depth=DONE_DEPTH)

        # -- AW side: the head command's bursts, one per cycle (MR-DMA-010..013, MR-DMA-041)
        aw_active = Signal()
        aw = Signal(awcmd)
        aw_first = Signal()
        hi_ones = Signal(-(-(64 - lbd) // _GROUP))     # which groups of aw.hi are all ones
        final = aw.single                           # kept as "no burst left after this one"
        burst_len = Mux(aw_first, Mux(final, aw.single_len, ~start_of(aw.off, lnb, lbd)),
                        Mux(final, aw.last_len, beats_in_bound - 1))
        load_ok = (~axi.awvalid | axi.awready) & burst_q.w_rdy
        emit_aw = aw_active & load_ok
        burst = Signal(entry)
        m.d.comb += [burst.last.eq(final), burst.conn.eq(aw.conn), burst.length.eq(aw.length),
                     burst_q.w_data.eq(burst), burst_q.w_en.eq(emit_aw)]
        hi_next, hi_ones_next = _grouped_inc(aw.hi, hi_ones)
        with m.If(emit_aw):
            m.d.sync += [axi.awvalid.eq(1), axi.awaddr.eq(Cat(aw.off, aw.hi)),
                         axi.awlen.eq(burst_len if beats_in_bound > 1 else 0)]
            with m.If(~final):
                m.d.sync += [aw.hi.eq(hi_next), hi_ones.eq(hi_ones_next), aw.off.eq(0),
                             aw.left.eq(aw.left - 1), aw.single.eq(aw.left == 1), aw_first.eq(0)]
        with m.Elif(axi.awready):
            m.d.sync += axi.awvalid.eq(0)
        aw_need = ~aw_active | (emit_aw & final)
        head = data.View(awcmd, aw_q.r_data)
        m.d.comb += aw_q.r_en.eq(aw_need)
        with m.If(aw_need):
            m.d.sync += aw_active.eq(aw_q.r_rdy)
            with m.If(aw_q.r_rdy):
                m.d.sync += [aw.eq(head), aw_first.eq(1), hi_ones.eq(_group_ones(head.hi))]
        m.d.comb += [axi.awid.eq(self.axi_id), axi.awsize.eq(lnb), axi.awburst.eq(INCR)]

        # -- W side: realign the payload to the address's lane, one beat per cycle (MR-DMA-020..022)
        w_active = Signal()
        cur = Signal(wcmd)
        first = Signal()
        held = Signal(width)
        need_in = ~cur.in_zero
        emit_w = w_active & (~need_in | d_q.r_rdy) & (~axi.wvalid | axi.wready)
        last_beat = Mux(cur.spill, cur.in_zero, cur.in_one)
        strobe = Signal(nb)
        for j in range(nb):
            m.d.comb += strobe[j].eq(~cur.zero & (~first | (cur.o <= j)) & (~last_beat | (j <= cur.e_m1)))
        # the input beat rotated up by o lanes, as a log shifter (6 stages of 2:1 at 512 bits)
        rot = Signal(width)
        m.d.comb += rot.eq((Cat(d_q.r_data, d_q.r_data) << Cat(Const(0, 3), cur.o))[width:2 * width])
        word = Signal(width)
        for j in range(nb):
            sl = slice(8 * j, 8 * j + 8)
            m.d.comb += word[sl].eq(Mux(strobe[j], Mux(cur.o <= j, rot[sl], held[sl]), 0))
        wlast = last_beat | ((cur.pos == beats_in_bound - 1) if lbd > lnb else 1)
        m.d.comb += d_q.r_en.eq(emit_w & need_in)
        with m.If(emit_w):
            m.d.sync += [axi.wvalid.eq(1), axi.wdata.eq(word), axi.wstrb.eq(strobe),
                         axi.wlast.eq(wlast), first.eq(0), cur.pos.eq(cur.pos + 1)]
            with m.If(need_in):
                m.d.sync += [held.eq(rot), cur.n_in.eq(cur.n_in - 1), cur.in_zero.eq(cur.in_one),
                             cur.in_one.eq(cur.n_in == 2)]
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


#: Bits per group of the address incrementer (one 6-input LUT tests a group).
_GROUP = 6


def start_of(off, lnb, lbd):
    """The beat index of ``off`` inside its boundary block."""
    return off[lnb:lbd] if lbd > lnb else Const(0, 1)


def _group_ones(value):
    """Per group of :data:`_GROUP` bits of ``value``: all ones."""
    return Cat(*[value[i:i + _GROUP].all() for i in range(0, len(value), _GROUP)])


def _grouped_inc(value, ones):
    """``value + 1`` and its group flags, from ``value`` and its registered group flags
    ``ones``: the carry into a group is an AND of the flags below it, so no bit waits for a
    carry chain through every bit below it (a 52-bit ``+ 1`` maps to 11 LUT levels)."""
    bits, flags = [], []
    for g, i0 in enumerate(range(0, len(value), _GROUP)):
        grp = value[i0:i0 + _GROUP]
        cin = ones[:g].all() if g else Const(1, 1)
        for k in range(len(grp)):
            bits.append(grp[k] ^ (cin & (grp[:k].all() if k else Const(1, 1))))
        almost = grp == (1 << len(grp)) - 2
        flags.append(Mux(cin, almost, grp.all()))
    return Cat(*bits), Cat(*flags)
