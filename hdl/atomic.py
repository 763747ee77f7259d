"""The atomic executor at the engine (docs/spec/hw-engine.md section 5d, MR-ENG-158..165,
MR-ENG-216..227).

``AtomicExec(width, atom_layout, rsp_layout, slots=RESULT_SLOTS)``: the RX engine's execution
items on ``s_atom`` (``models.rx.layouts().atom``, MR-RX-155/164), one at a time: after every
placement before the item (up to its placement mark ``pmark``, MR-RX-175) is written
(``place_busy``/``place_taken``/``place_done``, MR-ENG-216), the 8 bytes at ``laddr`` read through ``m_axi`` (AXI4, one full-width beat), the
new value (``protocol.atomic_apply``, MR-VERB-010) written back, the original value written to
the request's result row (``result_base`` + MR-ENG-161's index) and the response item
``{conn, stream, msg, laddr: the row, length 8, err}`` offered on ``m_rsp`` (the TX half's
``s_rsp`` layout): the TX half sends and resends it as an 8-byte READ response from the row,
never from the target (MR-VERB-012). ``hold_place`` stops the DMA's intake at the mark and holds
it to the target write's B response (MR-ENG-163, MR-ENG-217). Counters on ``reg_addr`` /
``reg_data`` (MR-ENG-226). Golden model: ``models.atomic.AtomicExecModel``.
"""
from amaranth.hdl import Array, Cat, Const, Module, Mux, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from ..models import records
from ..models.atomic import ATOM_CTR, ATOM_CTR_BASE, CNT_BITS, RESULT_SLOTS, STATES
from ..models.dma_write import INCR, RESP_OKAY
from .arith import _Arith
from .dma_read import axi4_read_signature
from .dma_write import axi4_write_signature
from .rx import _piece_counter

__all__ = ["AtomicExec", "axi4_signature", "atomic_exec"]


def axi4_signature(width, id_width=4, addr_width=64):
    """An AXI4 master's five channels (MR-ENG-165): the write master's and the read master's."""
    members = dict(axi4_write_signature(width, id_width, addr_width).members)
    members.update(axi4_read_signature(width, id_width, addr_width).members)
    return wiring.Signature(members)


class AtomicExec(wiring.Component):
    """MR-ENG-158..165, MR-ENG-216..: the atomic executor (module docstring)."""

    def __init__(self, width, atom_layout, rsp_layout, slots=RESULT_SLOTS, carry_chain=None):
        if width < 64 or slots < 1 or slots & (slots - 1):
            self._MustUse__silence = True
            raise ValueError(f"width {width} and slots {slots}: width >= 64, slots a power of two")
        self.width, self.slots = width, slots
        # hw-rx.md MR-RX-317: the adds' form: None, the platform's (`carry_chain`); True or False forced
        self.carry_chain = carry_chain
        super().__init__({
            "s_atom": In(stream.Signature(atom_layout)),
            "m_rsp": Out(stream.Signature(rsp_layout)),
            "m_axi": Out(axi4_signature(width)),
            "result_base": In(64),
            "place_busy": In(1), "place_taken": In(1), "place_done": In(1),
            "hold_place": Out(1),
            # MR-ENG-226: the counters, in the engine's counter window (eng_reg_addr)
            "reg_addr": In(4), "reg_data": Out(64),
        })

    def elaborate(self, platform):
        m = Module()
        nb = self.width // 8
        size = (nb - 1).bit_length()
        S = {n: i for i, n in enumerate(STATES)}
        state = Signal(range(len(STATES)))
        item = Signal(self.s_atom.payload.shape())
        fail = Signal()
        rdat = Signal(64)                   # MR-ENG-224: the read beat's lane, registered
        orig = Signal(64)
        new = Signal(64)
        aw_done, w_done = Signal(), Signal()
        taken, done = Signal(CNT_BITS), Signal(CNT_BITS)
        hold = Signal()
        ax, s, o = self.m_axi, self.s_atom, self.m_rsp
        # hw-rx.md MR-RX-317: the target's carry chain where it has one (the ECP5 build), else
        # MR-ENG-224's prefix adders (the generic flow's depth)
        ar = _Arith(m, getattr(platform, "carry_chain", False) if self.carry_chain is None else self.carry_chain)

        # MR-ENG-161, MR-ENG-224: the result row's address, a register of the item and the base
        rb = (self.slots - 1).bit_length()
        sb = records.STREAM_BITS
        idx = Signal(len(item.conn) + sb + rb)
        if rb:
            m.d.comb += idx.eq((item.conn << (sb + rb)) | (item.stream[:sb] << rb) | item.msg[:rb])
        else:
            m.d.comb += idx.eq((item.conn << sb) | item.stream[:sb])
        row = Signal(64)
        m.d.sync += row.eq(ar.add(self.result_base, idx << 3, name="row_next"))
        lane = Signal(range(nb))            # the target's 64-bit lane (laddr is 8-byte aligned)
        wlane = Signal(range(nb))           # the written value's: the target's or the row's
        if nb > 8:
            m.d.comb += [lane.eq(Cat(Const(0, 3), item.laddr[3:size])),
                         wlane.eq(Mux(state == S["AWT"], lane, row[:size]))]

        is_ = lambda n: state == S[n]          # noqa: E731
        m.d.comb += [
            s.ready.eq(is_("IDLE")), self.hold_place.eq(hold),
            o.valid.eq(is_("RSP")),
            o.payload.conn.eq(item.conn), o.payload.stream.eq(item.stream),
            o.payload.msg.eq(item.msg), o.payload.laddr.eq(Mux(fail, 0, row)),
            o.payload.length.eq(8), o.payload.err.eq(fail),
            ax.arid.eq(0), ax.araddr.eq(item.laddr), ax.arlen.eq(0), ax.arsize.eq(size),
            ax.arburst.eq(INCR), ax.arvalid.eq(is_("AR")), ax.rready.eq(is_("R")),
            ax.awid.eq(0), ax.awaddr.eq(Mux(is_("AWT"), item.laddr, row)), ax.awlen.eq(0),
            ax.awsize.eq(size), ax.awburst.eq(INCR),
            ax.awvalid.eq((is_("AWT") | is_("AWR")) & ~aw_done),
            ax.wdata.eq(Mux(is_("AWT"), new, orig) << (wlane * 8)),
            ax.wstrb.eq(0xFF << wlane), ax.wlast.eq(1),
            ax.wvalid.eq((is_("AWT") | is_("AWR")) & ~w_done),
            ax.bready.eq(is_("BT") | is_("BR")),
        ]

        # MR-ENG-216: placements taken by the DMA and their done records, modulo 2^CNT_BITS
        taken_next = Signal(CNT_BITS)
        m.d.comb += taken_next.eq(ar.add(taken, self.place_taken, name="taken_next"))
        m.d.sync += [taken.eq(taken_next), done.eq(ar.add(done, self.place_done, name="done_next"))]

        def reached(count, mark, name):
            """``count`` at or past ``mark`` in the half space (MR-ENG-216)."""
            return ~ar.sub(count, mark, name=name)[CNT_BITS - 1]
        # MR-ENG-217: the intake held once the DMA has taken the placements up to the mark;
        # taken_next - mark from taken - mark (one subtract): at or past it, or one short and a take
        def hold_at(mark, name):
            d = ar.sub(taken, mark, name=name)
            return ~d[CNT_BITS - 1] | (self.place_taken & (d == (1 << CNT_BITS) - 1))
        hold_new = hold_at(s.payload.pmark, "hold_in")
        hold_fence = hold_at(item.pmark, "hold_fence")
        done_reached = reached(done, item.pmark, "done_mark")
        drained = ~self.place_busy & (taken == done)

        # MR-VERB-010, MR-ENG-224: the new value from the registered read (a prefix adder)
        cas = item.cas
        new_val = Signal(64)
        m.d.comb += new_val.eq(Mux(cas, Mux(rdat == item.compare, item.operand, rdat),
                                   ar.add(rdat, item.operand, name="fetch_add")))

        # MR-ENG-226: the counters (pieces of 16 bits, no long carry), read a cycle after reg_addr
        inc = {n: Signal(name=f"inc_{n}") for n in ATOM_CTR}
        ctr = [None] * len(ATOM_CTR)
        for n, i in ATOM_CTR.items():
            ctr[i] = _piece_counter(m, f"ctr_{n}", 64, inc[n])[0]
        sel = Signal(4)
        m.d.comb += sel.eq(self.reg_addr - ATOM_CTR_BASE)
        with m.If((self.reg_addr >= ATOM_CTR_BASE) & (sel < len(ATOM_CTR))):
            m.d.sync += self.reg_data.eq(Array(ctr)[sel[:max(1, (len(ATOM_CTR) - 1).bit_length())]])
        with m.Else():
            m.d.sync += self.reg_data.eq(0)
        m.d.comb += [inc["atom_fence_cycles"].eq(is_("FENCE")),
                     inc["atom_executed"].eq(is_("BT") & ax.bvalid),
                     inc["atom_errors"].eq(is_("RSP") & o.ready & fail),
                     inc["atom_axi_errors"].eq((is_("R") & ax.rvalid & (ax.rresp != RESP_OKAY))
                                               | ((is_("BT") | is_("BR")) & ax.bvalid & (ax.bresp != RESP_OKAY)))]

        aw = aw_done | (ax.awvalid & ax.awready)
        w = w_done | (ax.wvalid & ax.wready)
        with m.Switch(state):
            with m.Case(S["IDLE"]):
                with m.If(s.valid):
                    # MR-ENG-159: a host address not 8-byte aligned is answered ERROR, untouched
                    bad = s.payload.err | (s.payload.laddr[:3] != 0)
                    m.d.sync += [item.eq(s.payload), fail.eq(bad), hold.eq(~bad & hold_new),
                                 state.eq(Mux(bad, S["RSP"], S["FENCE"]))]
            with m.Case(S["FENCE"]):
                with m.If(done_reached | drained):
                    m.d.sync += [hold.eq(1), state.eq(S["AR"])]
                with m.Else():
                    m.d.sync += hold.eq(hold_fence)
            with m.Case(S["AR"]):
                with m.If(ax.arready):
                    m.d.sync += state.eq(S["R"])
            with m.Case(S["R"]):
                with m.If(ax.rvalid):
                    m.d.sync += rdat.eq(ax.rdata.word_select(lane[3:], 64) if nb > 8 else ax.rdata[:64])
                    with m.If(ax.rresp != RESP_OKAY):
                        m.d.sync += [fail.eq(1), hold.eq(0), state.eq(S["RSP"])]
                    with m.Else():
                        m.d.sync += state.eq(S["CALC"])
            with m.Case(S["CALC"]):
                m.d.sync += [orig.eq(rdat), new.eq(new_val), state.eq(S["AWT"])]
            with m.Case(S["AWT"], S["AWR"]):
                with m.If(aw & w):
                    m.d.sync += [aw_done.eq(0), w_done.eq(0),
                                 state.eq(Mux(is_("AWT"), S["BT"], S["BR"]))]
                with m.Else():
                    m.d.sync += [aw_done.eq(aw), w_done.eq(w)]
            with m.Case(S["BT"], S["BR"]):
                with m.If(ax.bvalid):
                    with m.If(ax.bresp != RESP_OKAY):
                        m.d.sync += fail.eq(1)
                    with m.If(is_("BT")):
                        m.d.sync += [hold.eq(0), state.eq(S["AWR"])]
                    with m.Else():
                        m.d.sync += state.eq(S["RSP"])
            with m.Case(S["RSP"]):
                with m.If(o.ready):
                    m.d.sync += state.eq(S["IDLE"])
        return m


def atomic_exec(width=64):
    """The block ``atomic`` (``metaroce synth atomic``): the executor of 4,096 connections."""
    from ..models.rx import layouts
    lay = layouts()
    return AtomicExec(width, lay.atom, lay.rsp)
