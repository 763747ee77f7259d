"""The engine's receive half: the RX blocks joined (docs/spec/hw-engine.md, MR-ENG-100..).

``EngineRx(width=512, *, conns=4096, paths=8, keys=1024, max_frame=9216, outstanding=256,
mac_clock=False, mac_fifo_depth=16)`` (MR-ENG-100); ``mac_clock=True`` puts ``s_axis`` in a
``mac`` clock domain, crossed to the core clock in an ``AsyncFIFO``, the parser then dropping
whole frames that do not fit instead of back-pressuring (MR-ENG-106). The TX half joins the same top later as its own blocks. Ports (MR-ENG-101):

============== ===== =====================================================================
port           dir   meaning
============== ===== =====================================================================
s_axis         in    MAC receive, AXI4-Stream {tdata, tkeep, tvalid, tready, tlast, tuser}
m_bypass       out   frames that are not RoCE, intact (the parser's m_bypass)
m_ack          out   ACK/NAK requests for the TX side (the RX engine's m_ack, MR-RX-030/031)
m_axi          out   AXI4 write master to host memory (the placement DMA's, MR-DMA-002)
m_done         out   one record per placement after its last B response (MR-DMA-030)
m_cqe          out   completion records of delivered WRITE_IMM messages (the RX engine's, MR-RX-084)
s_axil         in    AXI4-Lite host registers (MR-REG-002): setup rows, RX counters
parser_reg_*   in/out the parser's counters (MR-HW-060), one cycle after the address
============== ===== =====================================================================

Structure (MR-ENG-102), every join a ``wiring.connect`` of the blocks' own interfaces::

    s_axis -> Parser --m_meta------------------------------> Rx --m_place--> DmaWrite -> m_axi
                |   +--m_payload--> PayloadPack --s_payload-->  |  --m_data--->    +----> m_done
                +--> m_bypass                 Regs --m_cfg--> s_cfg; reg_addr/data
                                                                +--> m_ack

:class:`PayloadPack` (MR-ENG-104) moves the parser's payload bytes, which keep the frame's lanes
(MR-HW-030), to lane 0, as the RX engine and the DMA take them (MR-RX-002, MR-DMA-020).

Golden model: :class:`metaroce.models.engine.EngineRxModel`, cycle by cycle on every port.
"""
from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import fifo, stream, wiring
from amaranth.lib.wiring import In, Out

from ..models import records
from ..models.dma_write import OUTSTANDING
from ..models.rx import payload_layout
from .dma_write import DmaWrite
from .parser import Parser, axis_signature
from .regs import Regs
from .rx import Rx

__all__ = ["EngineRx", "PayloadPack", "engine_rx_256x4"]


class PayloadPack(wiring.Component):
    """MR-ENG-104: payload beats in the frame's byte lanes (AXI4-Stream, a packet's bytes a run
    of ``tkeep`` from lane ``s`` on its first beat) to beats packed from lane 0 (``lib.stream``
    ``{data, keep, last}``). Model: :class:`metaroce.models.engine.PackModel`."""

    def __init__(self, width):
        self.width = width
        super().__init__({
            "s_axis": In(axis_signature(width)),
            "m_payload": Out(stream.Signature(payload_layout(width))),
        })

    def elaborate(self, platform):
        m = Module()
        width, nb = self.width, self.width // 8
        lb = (nb - 1).bit_length()
        inp, out = self.s_axis, self.m_payload

        acc = Signal(width)
        acc_n = Signal(lb)
        shift = Signal(lb)
        first = Signal(init=1)
        flush = Signal()

        free = ~out.valid | out.ready
        in_ready = ~flush & free
        m.d.comb += inp.tready.eq(in_ready)

        # lowest and highest lane of the beat's bytes (tkeep is one run of ones)
        lo = Signal(lb)
        hi1 = Signal(lb + 1)                        # highest lane + 1
        for j in reversed(range(nb)):
            with m.If(inp.tkeep[j]):
                m.d.comb += lo.eq(j)
        for j in range(nb):
            with m.If(inp.tkeep[j]):
                m.d.comb += hi1.eq(j + 1)
        s = Signal(lb)
        m.d.comb += s.eq(Mux(first, lo, shift))
        n = Signal(lb + 1)
        m.d.comb += n.eq(hi1 - lo)
        rot = Signal(width)
        m.d.comb += rot.eq(Cat(inp.tdata, inp.tdata).bit_select(Cat(Const(0, 3), s), width))
        low = Signal(nb)                            # lanes below acc_n
        m.d.comb += low.eq((Const(1, nb + 1) << acc_n) - 1)
        comb = Signal(width)
        for j in range(nb):
            m.d.comb += comb[8 * j:8 * j + 8].eq(Mux(low[j], acc[8 * j:8 * j + 8], rot[8 * j:8 * j + 8]))
        total = Signal(lb + 2)
        m.d.comb += total.eq(acc_n + n)
        full = total >= nb
        thermo = Signal(nb)
        m.d.comb += thermo.eq((Const(1, nb + 1) << total[:lb + 1]) - 1)

        with m.If(free):
            m.d.sync += out.valid.eq(0)
        with m.If(flush):
            with m.If(free):
                m.d.sync += [out.valid.eq(1), out.payload.data.eq(acc), out.payload.keep.eq(low),
                             out.payload.last.eq(1), flush.eq(0), acc_n.eq(0), first.eq(1)]
        with m.Elif(inp.tvalid & in_ready):
            m.d.sync += [shift.eq(s), first.eq(inp.tlast)]
            with m.If(full | inp.tlast):
                m.d.sync += [out.valid.eq(1), out.payload.data.eq(comb),
                             out.payload.keep.eq(Mux(full, (1 << nb) - 1, thermo)),
                             out.payload.last.eq(inp.tlast & (total <= nb))]
                with m.If(full):
                    m.d.sync += [acc.eq(rot), acc_n.eq(total - nb)]
                with m.Else():
                    m.d.sync += [acc.eq(comb), acc_n.eq(0)]
                with m.If(inp.tlast & (total > nb)):
                    m.d.sync += [flush.eq(1), first.eq(0)]
                with m.Elif(inp.tlast):
                    m.d.sync += acc_n.eq(0)
            with m.Else():
                m.d.sync += [acc.eq(comb), acc_n.eq(total)]
        return m


class EngineRx(wiring.Component):
    """The engine's receive half (docs/spec/hw-engine.md): parser, payload repacker, RX engine,
    placement DMA and host registers."""

    def __init__(self, width=512, *, conns=records.CONNS, paths=records.PATHS, keys=1024,
                 max_frame=9216, outstanding=OUTSTANDING, mac_clock=False, mac_fifo_depth=16):
        if not isinstance(mac_clock, bool):
            self._MustUse__silence = True
            raise ValueError(f"mac_clock must be a bool, not {mac_clock!r}")
        if not isinstance(mac_fifo_depth, int) or mac_fifo_depth < 4 or mac_fifo_depth & (mac_fifo_depth - 1):
            self._MustUse__silence = True
            raise ValueError(f"mac_fifo_depth must be a power of two >= 4, not {mac_fifo_depth!r}")
        self.mac_clock = mac_clock
        self.mac_fifo_depth = mac_fifo_depth
        made = []
        try:
            for name, make in (("parser", lambda: Parser(width, max_frame=max_frame,
                                                          drop_on_full=mac_clock)),
                               ("pack", lambda: PayloadPack(width)),
                               ("rx", lambda: Rx(width, conns=conns, paths=paths, keys=keys)),
                               ("dma", lambda: DmaWrite(width, conns=conns, outstanding=outstanding)),
                               ("regs", lambda: Regs.for_rx(self.rx))):
                setattr(self, name, make())
                made.append(getattr(self, name))
        except ValueError:
            for blk in made + [self]:       # a rejected design is not an unused one
                blk._MustUse__silence = True
            raise
        self.width = width
        self.lay = self.rx.lay
        sig = lambda blk, name: blk.signature.members[name].signature
        super().__init__({
            "s_axis": In(sig(self.parser, "s_axis").flip()),
            "m_bypass": Out(sig(self.parser, "m_bypass")),
            "m_ack": Out(sig(self.rx, "m_ack")),
            "m_axi": Out(sig(self.dma, "m_axi")),
            "m_done": Out(sig(self.dma, "m_done")),
            "m_cqe": Out(sig(self.rx, "m_cqe")),
            "s_axil": In(sig(self.regs, "s_axil").flip()),
            "parser_reg_addr": In(4),
            "parser_reg_data": Out(64),
        })

    def elaborate(self, platform):
        m = Module()
        m.submodules.parser = parser = self.parser
        m.submodules.pack = pack = self.pack
        m.submodules.rx = rx = self.rx
        m.submodules.dma = dma = self.dma
        m.submodules.regs = regs = self.regs
        if self.mac_clock:
            # MR-ENG-106: s_axis in the "mac" domain, beats cross in an AsyncFIFO; the parser
            # drops whole frames that do not fit (MR-HW-080), so it always takes the FIFO's beats
            sa, pa = self.s_axis, parser.s_axis
            beat = Cat(sa.tdata, sa.tkeep, sa.tlast, sa.tuser)
            m.submodules.mac_fifo = cross = fifo.AsyncFIFO(
                width=len(beat), depth=self.mac_fifo_depth, w_domain="mac", r_domain="sync")
            nb = self.width // 8
            m.d.comb += [cross.w_data.eq(beat), cross.w_en.eq(sa.tvalid), sa.tready.eq(cross.w_rdy),
                         pa.tvalid.eq(cross.r_rdy), cross.r_en.eq(pa.tready),
                         Cat(pa.tdata, pa.tkeep, pa.tlast, pa.tuser).eq(cross.r_data)]
            assert len(pa.tkeep) == nb
        else:
            wiring.connect(m, wiring.flipped(self.s_axis), parser.s_axis)
        wiring.connect(m, parser.m_bypass, wiring.flipped(self.m_bypass))
        wiring.connect(m, parser.m_meta, rx.s_meta)
        wiring.connect(m, parser.m_payload, pack.s_axis)
        wiring.connect(m, pack.m_payload, rx.s_payload)
        wiring.connect(m, regs.m_cfg, rx.s_cfg)
        wiring.connect(m, rx.m_place, dma.s_place)
        wiring.connect(m, rx.m_data, dma.s_data)
        wiring.connect(m, rx.m_ack, wiring.flipped(self.m_ack))
        wiring.connect(m, rx.m_cqe, wiring.flipped(self.m_cqe))
        wiring.connect(m, dma.m_axi, wiring.flipped(self.m_axi))
        wiring.connect(m, dma.m_done, wiring.flipped(self.m_done))
        wiring.connect(m, wiring.flipped(self.s_axil), regs.s_axil)
        m.d.comb += [rx.reg_addr.eq(regs.reg_addr), regs.reg_data.eq(rx.reg_data),
                     parser.reg_addr.eq(self.parser_reg_addr),
                     self.parser_reg_data.eq(parser.reg_data)]
        return m


def engine_rx_256x4(width=512):
    """The small instance: 256 connections x 4 paths, 256 keys, 32 bursts outstanding."""
    return EngineRx(width, conns=256, paths=4, keys=256, outstanding=32)
