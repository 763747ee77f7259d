"""The engine's receive half, the RX blocks joined (docs/spec/hw-engine.md, MR-ENG-100..), and
the whole engine (``Engine``, MR-ENG-130..: the receive half, the TX half ``hdl.tx.Tx``, the
ACK paths between them, one frame builder for data and ACK frames; see :class:`Engine`).

``EngineRx(width=512, *, conns=4096, paths=8, keys=1024, streams=8, chunk_ring=16,
max_frame=9216, outstanding=256, mac_clock=False, mac_fifo_depth=16, peer_acks=False, tx_counters=False,
responses=False)`` (MR-ENG-100); ``responses=True`` brings the RX engine's ``m_rsp`` out and adds the
engine's own counter window (``eng_reg_addr`` out, ``eng_reg_data`` in, MR-ENG-140/143); ``tx_counters=True``
adds the register block's ``tx_reg_addr`` (out) and ``tx_reg_data`` (in), the TX half's counter
window (MR-ENG-105, MR-REG-034), which ``Engine`` joins to its TX half; ``mac_clock=True`` puts ``s_axis`` in a
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
s_axil         in    AXI4-Lite host registers (MR-REG-002): setup rows, the RX engine's and the
                     parser's counters (MR-ENG-105)
============== ===== =====================================================================

Structure (MR-ENG-102), every join a ``wiring.connect`` of the blocks' own interfaces::

    s_axis -> Parser --m_meta------------------------------> Rx --m_place--> DmaWrite -> m_axi
                |   +--m_payload--> PayloadPack --s_payload-->  |  --m_data--->    +----> m_done
                +--> m_bypass                 Regs --m_cfg--> s_cfg; reg_addr/data
                |                               +-- parser_reg_addr/data (the parser's counters)
                                                                +--> m_ack

:class:`PayloadPack` (MR-ENG-104) moves the parser's payload bytes, which keep the frame's lanes
(MR-HW-030), to lane 0, as the RX engine and the DMA take them (MR-RX-002, MR-DMA-020).

Golden model: :class:`metaroce.models.engine.EngineRxModel`, cycle by cycle on every port.
"""
from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import data, fifo, memory, stream, wiring
from amaranth.lib.wiring import In, Out

from ..models import records
from ..models.dma_write import OUTSTANDING
from ..models.engine import (ACK_FIFO_DEPTH, CQ_DEPTH, CQ_RD_OPS, CQ_REFUSED, CQ_RX_OPCODES, ENG_CTR,
                              ENGINE_CFG_SACK, ENGINE_TX_NAMES, HINT_BITS, HINT_MAX, PSN_BITS, PSN_IGNORED_CTR,
                              RSP_FIFO_DEPTH, WR_FIFO_DEPTH, check_ack_hint_options, check_engine_hint_options,
                              engine_tx_params, rsp_free_depth, check_rx_hint_options)
from ..models.regs import HINT_REG_OF
from ..models.rx_hint import SEEN_OPS
from ..models.frame_builder import DESC_LAYOUT
from ..models.wire import ROCE_PORT, Op
from ..models.rx import (CHUNK_RING, RD_OP_CMP_SWAP, RD_OP_FETCH_ADD, RD_OP_READ, SMALL as RX_SMALL,
                         TABLE_INIT_DEPTH, TABLE_READ, TABLE_RSP_FREE, TABLE_TX_PSN, WC_COMP_SWAP, WC_FETCH_ADD, WC_RDMA_READ, payload_layout)
from ..models.tx_sched import OP_CMP_SWAP, OP_FETCH_ADD, OP_READ
from .atomic import AtomicExec
from .dma_write import DmaWrite
from .parser import Parser, axis_signature
from .regs import Regs
from .rx import Rx
from .rx_hint import RxHint, seen_signature
from .tx import Tx

__all__ = ["EngineRx", "PayloadPack", "engine_rx_256x4", "CqJoin"]


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
                 streams=records.STREAMS, chunk_ring=CHUNK_RING, max_frame=9216, outstanding=OUTSTANDING, mac_clock=False,
                 mac_fifo_depth=16, peer_acks=False, tx_counters=False, responses=False, rd_rows=False,
                 atomics=False, max_rd_atomic=None, pacing=False, cfg_sack=True, interval=1,
                 hint_regs=False):
        self.rd_rows = bool(rd_rows)
        # MR-ENG-338/339: the register block's hint window out, and the arrivals the RX takes
        self.hint_regs = bool(hint_regs)
        # MR-RX-319: the RX's frame interval (the whole engine's, MR-ENG-300)
        self.interval = interval
        # MR-ENG-259: the register block's pacing window, its ports out (the whole engine's TX)
        self.pacing = bool(pacing)
        # MR-ENG-239: the RX's responder resources (hw-rx.md MR-RX-188), freed on s_cfg_eng
        self.max_rd_atomic = max_rd_atomic
        self.atomics = bool(atomics)
        self.peer_acks = bool(peer_acks)
        self.tx_counters = bool(tx_counters)
        self.responses = bool(responses)
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
                               ("rx", lambda: Rx(width, conns=conns, paths=paths, keys=keys, streams=streams,
                                                 chunk_ring=chunk_ring, max_rd_atomic=max_rd_atomic,
                                                 cfg_sack=cfg_sack, interval=interval)),
                               ("dma", lambda: DmaWrite(width, conns=conns, outstanding=outstanding)),
                               ("regs", lambda: Regs.for_rx(self.rx, parser=True, tx=self.tx_counters,
                                                            eng=self.responses, pacing=self.pacing,
                                                            hint=self.hint_regs)),
                               # MR-ENG-158: the atomic executor beside the placement DMA
                               ("atom", lambda: AtomicExec(width, self.rx.lay.atom, self.rx.lay.rsp)
                                if self.atomics else None)):
                setattr(self, name, make())
                if getattr(self, name) is not None:
                    made.append(getattr(self, name))
        except ValueError:
            for blk in made + [self]:       # a rejected design is not an unused one
                blk._MustUse__silence = True
            raise
        self.width = width
        self.lay = self.rx.lay
        sig = lambda blk, name: blk.signature.members[name].signature
        ports = {
            "s_axis": In(sig(self.parser, "s_axis").flip()),
            "m_bypass": Out(sig(self.parser, "m_bypass")),
            "m_ack": Out(sig(self.rx, "m_ack")),
            "m_axi": Out(sig(self.dma, "m_axi")),
            "m_done": Out(sig(self.dma, "m_done")),
            "m_cqe": Out(sig(self.rx, "m_cqe")),
            "s_axil": In(sig(self.regs, "s_axil").flip()),
        }
        if self.tx_counters:
            # MR-ENG-105: the register block's select and value of the TX half's counters
            ports["tx_reg_addr"] = Out(4)
            ports["tx_reg_data"] = In(64)
        if self.peer_acks:
            ports["m_peer_ack"] = Out(sig(self.parser, "m_meta"))     # MR-ENG-131
        if self.responses:
            # MR-ENG-140/143: the RX engine's READ response items, the engine's counter window
            ports["m_rsp"] = Out(sig(self.rx, "m_rsp"))
            ports["eng_reg_addr"] = Out(4)
            ports["eng_reg_data"] = In(64)
        if self.rd_rows:
            # MR-ENG-149: the engine's own configuration writes (the outstanding-read rows)
            ports["s_cfg_eng"] = In(sig(self.rx, "s_cfg").flip())
            # MR-ENG-272: the record the RX engine takes on its s_cfg (RdRows' depths)
            ports["cfg_tap"] = Out(self.rx.lay.cfg)
            ports["cfg_tap_take"] = Out(1)
        if self.atomics:
            # MR-ENG-165: the executor's AXI4 master and its result area's base address
            ports["m_axi_at"] = Out(sig(self.atom, "m_axi"))
            ports["atom_base"] = In(64)
        if self.pacing:
            # MR-ENG-259: the pacing window's write and configuration (MR-REG-065)
            for name in ("m_pace", "pace_mtu_wl", "pace_line_mbps"):
                ports[name] = self.regs.signature.members[name]
        if self.hint_regs:
            for name in HINT_REG_OF:
                ports[name] = self.regs.signature.members[name]
            ports["m_seen"] = Out(seen_signature(conns))
        self.conns = conns
        super().__init__(ports)

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
        if self.pacing:
            wiring.connect(m, regs.m_pace, wiring.flipped(self.m_pace))
            m.d.comb += [self.pace_mtu_wl.eq(regs.pace_mtu_wl),
                         self.pace_line_mbps.eq(regs.pace_line_mbps)]
        if self.peer_acks:
            # MR-ENG-131: the peer's ACK and NAK records to m_peer_ack, the others to the RX engine
            meta, pa = parser.m_meta, self.m_peer_ack
            op = meta.payload.bth.opcode
            to_ack = ~meta.payload.drop & ((op == Op.MR_ACK) | (op == Op.MR_NAK))
            m.d.comb += [rx.s_meta.payload.eq(meta.payload), rx.s_meta.valid.eq(meta.valid & ~to_ack),
                         pa.payload.eq(meta.payload), pa.valid.eq(meta.valid & to_ack),
                         meta.ready.eq(Mux(to_ack, pa.ready, rx.s_meta.ready))]
        else:
            wiring.connect(m, parser.m_meta, rx.s_meta)
        if self.hint_regs:
            self._seen(m, rx)
            m.d.comb += [getattr(self, n).eq(getattr(regs, n)) for n in HINT_REG_OF]
        wiring.connect(m, parser.m_payload, pack.s_axis)
        wiring.connect(m, pack.m_payload, rx.s_payload)
        if self.rd_rows:
            # MR-ENG-149: the engine's row write before the host's (a mux, no register)
            _first_of_two(m, self.s_cfg_eng, regs.m_cfg, rx.s_cfg)
            m.d.comb += [self.cfg_tap.eq(rx.s_cfg.payload),
                         self.cfg_tap_take.eq(rx.s_cfg.valid & rx.s_cfg.ready)]
        else:
            wiring.connect(m, regs.m_cfg, rx.s_cfg)
        if self.atomics:
            _join_atomics(m, self, rx, dma)
        else:
            wiring.connect(m, rx.m_place, dma.s_place)
        wiring.connect(m, rx.m_data, dma.s_data)
        wiring.connect(m, rx.m_ack, wiring.flipped(self.m_ack))
        wiring.connect(m, rx.m_cqe, wiring.flipped(self.m_cqe))
        if self.responses:
            # MR-ENG-140: the READ requests' response items go to the TX half's s_rsp (with the
            # executor's, MR-ENG-160, merged by _join_atomics)
            if not self.atomics:
                wiring.connect(m, rx.m_rsp, wiring.flipped(self.m_rsp))
            m.d.comb += self.eng_reg_addr.eq(regs.eng_reg_addr)
            if self.atomics:
                # MR-ENG-226: the executor's counters beside the response join's (each a register,
                # 0 outside its own indices)
                m.d.comb += [self.atom.reg_addr.eq(regs.eng_reg_addr),
                             regs.eng_reg_data.eq(self.eng_reg_data | self.atom.reg_data)]
            else:
                m.d.comb += regs.eng_reg_data.eq(self.eng_reg_data)
        elif not self.atomics:
            # MR-RX-131: the receive half alone has no TX side: taken and dropped, so that they
            # never hold the RX
            m.d.comb += rx.m_rsp.ready.eq(1)
        if not self.atomics:
            # MR-ENG-156 (without the executor, MR-ENG-158): the items are taken and discarded, so
            # that an atomic never holds the RX (held, the capture of the third would stop the payload)
            m.d.comb += rx.m_atom.ready.eq(1)
        wiring.connect(m, dma.m_axi, wiring.flipped(self.m_axi))
        wiring.connect(m, dma.m_done, wiring.flipped(self.m_done))
        wiring.connect(m, wiring.flipped(self.s_axil), regs.s_axil)
        # MR-ENG-105: every counter through the register block (MR-REG-030/033)
        m.d.comb += [rx.reg_addr.eq(regs.reg_addr), regs.reg_data.eq(rx.reg_data),
                     parser.reg_addr.eq(regs.parser_reg_addr),
                     regs.parser_reg_data.eq(parser.reg_data)]
        if self.tx_counters:
            m.d.comb += [self.tx_reg_addr.eq(regs.tx_reg_addr), regs.tx_reg_data.eq(self.tx_reg_data)]
        return m

    def _seen(self, m, rx):
        """MR-ENG-338: the arrival record of the metadata record the RX takes this cycle (a
        data opcode with an MRDH, not dropped, DestQP a connection): its connection, CE mark
        and whether more of its message is due."""
        s, p = rx.s_meta, rx.s_meta.payload
        op = p.bth.opcode
        data_op = Const(0)
        for code in SEEN_OPS:
            data_op = data_op | (op == code)
        o = self.m_seen
        m.d.comb += [o.valid.eq(s.valid & s.ready & ~p.drop & p.has.mrdh & data_op
                                & (p.bth.dest_qp < self.conns)),
                     o.payload.conn.eq(p.bth.dest_qp), o.payload.ce.eq(p.ip.ecn == 3),
                     o.payload.more.eq(~p.mrdh.flags[0])]      # MrdhFlag.LAST


def _first_of_two(m, first, second, out):
    """Two streams into ``out``, ``first`` before ``second`` (a mux, no register): ``second``
    is taken only in a cycle ``first`` offers nothing (MR-ENG-149, MR-ENG-242)."""
    m.d.comb += [out.valid.eq(first.valid | second.valid),
                 out.payload.eq(Mux(first.valid, first.payload.as_value(), second.payload.as_value())),
                 first.ready.eq(out.ready), second.ready.eq(out.ready & ~first.valid)]


def rx_of_engine(width=64, interval=None):
    """MR-RX-321: the RX as ``Engine(width)`` builds it (2 connections x 4 paths, 256 keys, 4
    streams, the chunk window, the responder bound, no SACK in path writes) at ``interval``
    (default the width's frame interval, MR-ENG-299: 8 at 64 bits), for its lockstep alone."""
    from ..models.engine import ENGINE_CHUNK_WINDOW
    return Rx(width, conns=2, paths=4, keys=256, streams=RX_SMALL["streams"], chunk_ring=ENGINE_CHUNK_WINDOW,
              max_rd_atomic=records.RD_ATOMIC, cfg_sack=ENGINE_CFG_SACK,
              interval=records.interval_of(width, interval))


def engine_rx_256x4(width=512, **kw):
    """The small instance: the RX engine of ``rx_256x4`` (``models.rx.SMALL``: 256 connections x
    4 paths, 256 keys, 4 streams), 32 bursts outstanding."""
    return EngineRx(width, **RX_SMALL, outstanding=32, **kw)


# ------------------------------------------------------------------ the atomic executor's join (MR-ENG-158..)

def _join_atomics(m, top, rx, dma):
    """MR-ENG-160..163: the RX's ``m_atom`` to the executor; the placement commands to the DMA
    through the executor's hold (``hold_place``, a register: no path from the DMA's ready); the
    executor's placement counters from the DMA's intake and done handshakes; its response items
    merged with the RX's READ items onto ``m_rsp``, the RX's first (both valids registers), or
    taken and dropped without a TX side (MR-RX-131's rule)."""
    at = top.atom
    m.submodules.atom = at
    wiring.connect(m, rx.m_atom, at.s_atom)
    wiring.connect(m, at.m_axi, wiring.flipped(top.m_axi_at))
    p, d, hold = rx.m_place, dma.s_place, at.hold_place
    m.d.comb += [d.payload.eq(p.payload), d.valid.eq(p.valid & ~hold), p.ready.eq(d.ready & ~hold),
                 at.place_busy.eq(p.valid), at.place_taken.eq(p.valid & d.ready & ~hold),
                 at.place_done.eq(dma.m_done.valid & top.m_done.ready),
                 at.result_base.eq(top.atom_base)]
    r, a = rx.m_rsp, at.m_rsp
    if top.responses:
        o = top.m_rsp
        m.d.comb += [o.valid.eq(r.valid | a.valid),
                     o.payload.eq(Mux(r.valid, r.payload.as_value(), a.payload.as_value())),
                     r.ready.eq(o.ready), a.ready.eq(o.ready & ~r.valid)]
    else:
        m.d.comb += [r.ready.eq(1), a.ready.eq(1)]


# ------------------------------------------------------------------ the whole engine (MR-ENG-130..)

class AckIn(wiring.Component):
    """MR-ENG-132: the peer's ACK/NAK metadata records (``s_meta``) into the TX half's ``s_ack``
    records (``m_ack``) through a 1-entry SyncFIFO; a record whose DestQP is ``conns`` or more
    is taken and dropped."""

    def __init__(self, conns, meta_sig, ack_layout, *, hints=False, hint_wrong=None):
        self.conns, self.ack_layout = conns, ack_layout
        # MR-ENG-313: the MRAH's rate hint into the record's ``hint`` (the TX with hints);
        # hint_wrong (negative controls only, MR-ENG-322): "drop" (0) or "trunc" (low bits)
        self.hints, self.hint_wrong = check_ack_hint_options(hints, hint_wrong)
        super().__init__({"s_meta": In(meta_sig), "m_ack": Out(stream.Signature(ack_layout))})

    def elaborate(self, platform):
        m = Module()
        s, o = self.s_meta, self.m_ack
        m.submodules.q = q = fifo.SyncFIFO(width=len(o.payload.as_value()), depth=ACK_FIFO_DEPTH)
        p = s.payload
        rec = Signal(self.ack_layout)
        ce = p.mrah.ce_count
        with m.If(p.has.mrah):
            m.d.comb += [rec.nak.eq(p.bth.opcode == Op.MR_NAK), rec.path.eq(p.mrah.path),
                         rec.psn.eq(p.mrah.trigger_psn), rec.cum.eq(p.mrah.cum_psn),
                         rec.sack.eq(p.mrah.sack), rec.ce_count.eq(ce), rec.ece.eq(ce != 0)]
            if self.hints and self.hint_wrong != "drop":
                rate = p.mrah.rate_mbps
                if self.hint_wrong == "trunc":
                    m.d.comb += rec.hint.eq(rate[:HINT_BITS])
                else:           # MR-ENG-313: saturated at 2^19 - 1 (MR-TX-490)
                    m.d.comb += rec.hint.eq(Mux(rate > HINT_MAX, HINT_MAX, rate[:HINT_BITS]))
        with m.Else():
            m.d.comb += [rec.nak.eq(1), rec.path.eq(p.mrnh.path), rec.psn.eq(p.mrnh.psn),
                         rec.reason.eq(p.mrnh.reason)]
        m.d.comb += [rec.conn.eq(p.bth.dest_qp), rec.sport.eq(p.udp.sport),
                     s.ready.eq(q.w_rdy), q.w_data.eq(rec),
                     q.w_en.eq(s.valid & (p.bth.dest_qp < self.conns)),
                     o.valid.eq(q.r_rdy), o.payload.eq(q.r_data), q.r_en.eq(o.ready)]
        return m


class RspJoin(wiring.Component):
    """MR-ENG-140..143: the RX engine's READ response items (``s_rsp``) into the TX half's
    ``s_rsp`` (``m_rsp``) through a 1-entry SyncFIFO; the TX half's ``m_rsp_done`` records
    (``s_done``) always taken and counted in 64-bit counters (``models.engine.ENG_CTR``), read
    by ``reg_addr`` / ``reg_data`` (a register, the previous cycle's select, MR-REG-041).
    MR-ENG-240..242: with ``free_depth`` (and ``cfg_layout``, the RX's ``s_cfg``) each record's
    connection also enters a SyncFIFO of frees whose head leaves on ``m_free`` as a table 7
    write (``TABLE_RSP_FREE``, ``addr`` the connection)."""

    def __init__(self, rsp_layout, done_layout, *, cfg_layout=None, free_depth=0):
        self.free_depth, self.cfg_layout = free_depth, cfg_layout
        ports = {"s_rsp": In(stream.Signature(rsp_layout)),
                 "m_rsp": Out(stream.Signature(rsp_layout)),
                 "s_done": In(stream.Signature(done_layout)),
                 "reg_addr": In(4), "reg_data": Out(64)}
        if free_depth:
            ports["m_free"] = Out(stream.Signature(cfg_layout))
        super().__init__(ports)

    def elaborate(self, platform):
        m = Module()
        s, o, d = self.s_rsp, self.m_rsp, self.s_done
        m.submodules.q = q = fifo.SyncFIFO(width=len(o.payload.as_value()), depth=RSP_FIFO_DEPTH)
        m.d.comb += [s.ready.eq(q.w_rdy), q.w_data.eq(s.payload), q.w_en.eq(s.valid),
                     o.valid.eq(q.r_rdy), o.payload.eq(q.r_data), q.r_en.eq(o.ready), d.ready.eq(1)]
        if self.free_depth:
            # MR-ENG-241: never full when a record comes (a free waiting is a resource counted)
            f = self.m_free
            cb = len(d.payload.conn)
            m.submodules.free_q = fq = fifo.SyncFIFO(width=cb, depth=self.free_depth)
            m.d.comb += [fq.w_data.eq(d.payload.conn), fq.w_en.eq(d.valid),
                         f.valid.eq(fq.r_rdy), f.payload.table.eq(TABLE_RSP_FREE),
                         f.payload.addr.eq(fq.r_data), fq.r_en.eq(f.ready)]
        ctr = [Signal(64, name=f"ctr_{n}") for n, _ in sorted(ENG_CTR.items(), key=lambda kv: kv[1])]
        failed = d.payload.status != 0
        with m.If(s.valid & q.w_rdy):
            m.d.sync += ctr[ENG_CTR["rsp_items"]].eq(ctr[ENG_CTR["rsp_items"]] + 1)
        with m.If(d.valid & ~failed):
            m.d.sync += ctr[ENG_CTR["rsp_done"]].eq(ctr[ENG_CTR["rsp_done"]] + 1)
        with m.If(d.valid & failed):
            m.d.sync += ctr[ENG_CTR["rsp_failed"]].eq(ctr[ENG_CTR["rsp_failed"]] + 1)
        with m.Switch(self.reg_addr):
            for i, c in enumerate(ctr):
                with m.Case(i):
                    m.d.sync += self.reg_data.eq(c)
            with m.Default():
                m.d.sync += self.reg_data.eq(0)
        return m


class PsnInit(wiring.Component):
    """MR-ENG-302..305: the host's initial send PSNs to the TX half. A table 9 record the RX takes
    (``cfg_tap``/``cfg_tap_take``, MR-ENG-272) becomes, in the next cycle, one write ``{conn =
    addr / paths, path = addr mod paths, psn = data[23:0]}`` on ``m_psn`` (the TX half's
    ``s_psn``); ``valid`` and the payload are registers, held until ``ready`` (MR-ENG-316: the
    row scheduler's port is not always ready, MR-TX-500); a table 9 record that comes while a
    write still waits is dropped and counted as ignored. The TX half's ``psn_ignored`` cycles
    are counted (64 bits), read at
    ``reg_addr`` = ``PSN_IGNORED_CTR`` (``reg_data`` a register, the previous cycle's select; 0
    at other indices, so it ORs with RspJoin's). Model: ``models.engine.PsnInitModel``."""

    def __init__(self, cfg_layout, psn_layout):
        super().__init__({"cfg_tap": In(cfg_layout), "cfg_tap_take": In(1),
                          "m_psn": Out(stream.Signature(psn_layout)), "psn_ignored": In(1),
                          "reg_addr": In(4), "reg_data": Out(64)})

    def elaborate(self, platform):
        m = Module()
        tap, o = self.cfg_tap, self.m_psn
        pb, cb = len(o.payload.path), len(o.payload.conn)
        ctr = Signal(64)
        take = self.cfg_tap_take & (tap.table == TABLE_TX_PSN)
        waiting = o.valid & ~o.ready            # MR-ENG-316: the write waits for the TX half
        m.d.sync += [ctr.eq(ctr + self.psn_ignored + (take & waiting)),
                     self.reg_data.eq(Mux(self.reg_addr == PSN_IGNORED_CTR, ctr, 0))]
        with m.If(take & ~waiting):
            m.d.sync += [o.valid.eq(1), o.payload.conn.eq(tap.addr[pb:pb + cb]),
                         o.payload.path.eq(tap.addr[:pb]), o.payload.psn.eq(tap.data[:PSN_BITS])]
        with m.Elif(o.ready):
            m.d.sync += o.valid.eq(0)
        return m


class RdRows(wiring.Component):
    """MR-ENG-148..152: the engine's writer of the RX's outstanding-read rows. ``s_rd`` (the
    scheduler's READ queued) is taken when its row ``{conn, stream, msg mod rd_slots}`` is not
    busy and no write is pending (``ready`` on state and the payload, itself the scheduler's
    register); the row becomes busy and its table-6 write waits in one register for the RX
    (``m_cfg``). ``cqe``/``cqe_take`` (the RX's completion taken by the host) frees the row of
    an RDMA_READ record of the same ``msg``; ``tx_cqe``/``tx_cqe_take`` (the TX half's) the
    row of a failed READ request of the same ``wr_id``. MR-ENG-271..276: ``cfg_tap``/
    ``cfg_tap_take`` (the record the RX engine takes on its ``s_cfg``): a table 8 record sets its
    connection's initiator depth; ``s_rd`` also waits while its connection holds that many rows.
    Model: ``models.engine.RdRowsModel``."""

    def __init__(self, conns, streams, rx_lay, rd_layout, tx_cqe_layout, *, join=False, cap=True):
        self.conns, self.streams, self.rx_lay = conns, streams, rx_lay
        # MR-ENG-203: with the completion join the rows are freed by it (``free``/``free_row``)
        self.join = join
        # MR-ENG-273: False only for a negative control (the depths kept, never applied)
        self.cap = cap
        ports = {"s_rd": In(stream.Signature(rd_layout)), "op": In(3),
                 "m_cfg": Out(stream.Signature(rx_lay.cfg)),
                 "cfg_tap": In(rx_lay.cfg), "cfg_tap_take": In(1)}
        if join:
            ports.update({"free": In(1), "free_row": In(range(max(2, conns * streams * rx_lay.rd_slots)))})
        else:
            ports.update({"cqe": In(rx_lay.cqe), "cqe_take": In(1),
                          "tx_cqe": In(tx_cqe_layout), "tx_cqe_take": In(1)})
        super().__init__(ports)

    def elaborate(self, platform):
        m = Module()
        lay = self.rx_lay
        slots, rdb = lay.rd_slots, lay.rd_bits
        sb = (self.streams - 1).bit_length()
        cb = (self.conns - 1).bit_length()
        rows = self.conns * self.streams * slots
        busy = Signal(rows)
        r_msg = [Signal(32, name=f"rd_msg{i}") for i in range(rows)]
        r_wr = [Signal(16, name=f"rd_wr{i}") for i in range(rows)]
        pend = Signal(lay.cfg)
        pend_valid = Signal()

        def index(conn, strm, msg):
            return Cat(msg[:rdb], strm[:sb], conn[:cb])

        s, o = self.s_rd, self.m_cfg
        p = s.payload
        idx = index(p.conn, p.stream, p.msg)
        # MR-ENG-272/273: per connection its depth (0: the full depth, the reset; a table 8
        # value from the full depth up is stored as 0) and whether it holds fewer rows than it
        per = self.streams * slots
        db = max(1, (per - 1).bit_length())
        under = Signal(self.conns)
        tap = self.cfg_tap
        tap_d = tap.data[:8]
        for c in range(self.conns):
            dep = Signal(db, name=f"init_depth{c}")
            held = sum(busy[c * per + j] for j in range(per))
            m.d.comb += under[c].eq((dep == 0) | (held < dep) | Const(int(not self.cap), 1))
            with m.If(self.cfg_tap_take & (tap.table == TABLE_INIT_DEPTH) & (tap.addr[:cb] == c)):
                m.d.sync += dep.eq(Mux(tap_d >= per, 0, tap_d))
        m.d.comb += [s.ready.eq(~pend_valid & ~busy.bit_select(idx, 1) & under.bit_select(p.conn[:cb], 1)),
                     o.valid.eq(pend_valid), o.payload.eq(pend)]
        take = s.valid & s.ready
        with m.If(o.valid & o.ready):
            m.d.sync += pend_valid.eq(0)
        row = Signal(lay.rd)
        addr = Signal(len(pend.addr))
        # MR-ENG-168: the row's op from the work request's (an atomic's completion opcode)
        m.d.comb += [row.valid.eq(1), row.msg.eq(p.msg), row.base.eq(p.laddr),
                     row.length.eq(p.length), row.wr_id.eq(p.wr_id),
                     row.op.eq(Mux(self.op == OP_CMP_SWAP, RD_OP_CMP_SWAP,
                                   Mux(self.op == OP_FETCH_ADD, RD_OP_FETCH_ADD, RD_OP_READ))),
                     addr.eq(Cat(p.msg[:rdb], p.stream[:records.STREAM_BITS], p.conn))]
        with m.If(take):
            m.d.sync += [pend_valid.eq(1), pend.table.eq(TABLE_READ), pend.addr.eq(addr),
                         pend.data.eq(row)]
        if self.join:
            for i in range(rows):
                with m.If(take & (idx == i)):
                    m.d.sync += busy[i].eq(1)
                with m.If(self.free & (self.free_row == i)):
                    m.d.sync += busy[i].eq(0)
            return m
        # frees: the RX's RDMA_READ record of the row's READ, the TX half's failure of it
        c, t = self.cqe, self.tx_cqe
        c_hit = self.cqe_take & ((c.opcode == WC_RDMA_READ) | (c.opcode == WC_COMP_SWAP)
                                 | (c.opcode == WC_FETCH_ADD)) & ((c.stream >> sb) == 0)
        c_idx = index(c.conn, c.stream, c.msg)
        t_hit = (self.tx_cqe_take & ((t.op == OP_READ) | (t.op == OP_CMP_SWAP) | (t.op == OP_FETCH_ADD))
                 & (t.status != 0) & ((t.stream >> sb) == 0))
        t_base = Cat(t.stream[:sb], t.conn[:cb])
        for i in range(rows):
            with m.If(take & (idx == i)):
                m.d.sync += [busy[i].eq(1), r_msg[i].eq(p.msg), r_wr[i].eq(p.wr_id)]
            free_c = c_hit & (c_idx == i) & (r_msg[i] == c.msg)
            free_t = t_hit & (t_base == (i >> rdb)) & (r_wr[i] == t.wr_id)
            with m.If(busy[i] & (free_c | free_t)):
                m.d.sync += busy[i].eq(0)
        return m


class CqJoin(wiring.Component):
    """MR-ENG-196..205: the completion join: one host completion per work request. ``s_tx`` (the
    TX half's records, always taken) into ``conns x streams`` queues of ``depth``; a READ's
    record takes its stream's oldest READ row (``order``, pushed by ``rd``/``rd_take``, the
    ``m_rd`` transfer) and, successful, waits at its queue's head for the row's RX record
    (``s_rx``, always taken: pending, the same ``msg``); ``m_cqe`` a register loaded round robin
    from the heads that may leave, a READ's with the RX's status, its row freed (``free``,
    ``free_row``); ``wr_hold``: the stream of ``wr_conn``/``wr_stream`` at ``depth`` work
    requests taken (``wr_take``) and not dequeued; ``unmatched`` counts RX records of no pending
    READ. Model: ``models.engine.CqJoinModel``."""

    def __init__(self, conns, streams, rd_slots, cqe_layout, rx_cqe_layout, rd_layout, *,
                 depth=CQ_DEPTH, rd_ops=CQ_RD_OPS):
        assert streams & (streams - 1) == 0 and rd_slots & (rd_slots - 1) == 0
        self.conns, self.streams, self.slots, self.depth = conns, streams, rd_slots, depth
        self.cqe_layout, self.rd_ops = cqe_layout, tuple(rd_ops)
        nrows = conns * streams * rd_slots
        super().__init__({"s_tx": In(stream.Signature(cqe_layout)),
                          "s_rx": In(stream.Signature(rx_cqe_layout)),
                          "rd": In(rd_layout), "rd_take": In(1),
                          "wr_conn": In(max(1, (conns - 1).bit_length())), "wr_stream": In(16),
                          "wr_take": In(1), "wr_hold": Out(1),
                          "m_cqe": Out(stream.Signature(cqe_layout)),
                          "free": Out(1), "free_row": Out(range(max(2, nrows))),
                          "unmatched": Out(32)})

    def elaborate(self, platform):
        m = Module()
        conns, streams, slots, depth = self.conns, self.streams, self.slots, self.depth
        sb = (streams - 1).bit_length()
        cb = (conns - 1).bit_length()
        rdb = (slots - 1).bit_length()
        nq = conns * streams
        nrows = nq * slots
        rw = max(1, rdb)
        entry = data.StructLayout({"rec": self.cqe_layout, "own": 1, "wait": 1, "row": rw})
        qs = []
        for k in range(nq):
            q = fifo.SyncFIFO(width=entry.size, depth=depth)
            o = fifo.SyncFIFO(width=rw, depth=slots)
            m.submodules[f"q{k}"], m.submodules[f"order{k}"] = q, o
            qs.append((q, o))
        count = [Signal(range(depth + 1), name=f"count{k}") for k in range(nq)]
        pend = Signal(nrows)
        rx_in = Signal(nrows)
        r_msg = [Signal(32, name=f"row_msg{i}") for i in range(nrows)]
        r_st = [Signal(5, name=f"row_status{i}") for i in range(nrows)]
        rr = Signal(range(max(2, nq)))
        out = self.m_cqe

        def qindex(conn, strm):
            return Cat(strm[:sb], conn[:cb]) if sb + cb else Const(0, 1)

        # MR-ENG-199: s_wr held at the stream's bound (state and the FIFO head only)
        kw = qindex(self.wr_conn, self.wr_stream)
        for k in range(nq):
            with m.If(kw == k):
                m.d.comb += self.wr_hold.eq(count[k] >= depth)
        # the heads that may leave: not a READ waiting, or its row's RX record in
        heads = [data.View(entry, q.r_data) for q, _ in qs]
        may = Signal(nq)
        for k, (q, _) in enumerate(qs):
            h = heads[k]
            ri = Signal(range(max(2, nrows)), name=f"head_row{k}")
            m.d.comb += ri.eq(k * slots + h.row[:rdb] if rdb else k * slots)
            m.d.comb += may[k].eq(q.r_rdy & (~h.wait | rx_in.bit_select(ri, 1)))
        # round robin from rr: the first that may leave
        rot = Signal(nq)
        m.d.comb += rot.eq(Cat(may, may).bit_select(rr, nq))
        off = Signal(range(max(2, nq)))
        for j in reversed(range(nq)):
            with m.If(rot[j]):
                m.d.comb += off.eq(j)
        pick = Signal(range(max(2, nq)))
        m.d.comb += pick.eq(Mux(rr + off >= nq, rr + off - nq, rr + off))
        free_out = ~out.valid | out.ready
        load = Signal()
        m.d.comb += load.eq(free_out & (may != 0))
        sel = Signal(entry)
        for k in range(nq):
            with m.If(pick == k):
                m.d.comb += sel.eq(heads[k])
        row_i = Signal(range(max(2, nrows)))
        m.d.comb += row_i.eq(pick * slots + (sel.row[:rdb] if rdb else 0))
        rec = Signal(self.cqe_layout)
        m.d.comb += rec.eq(sel.rec)
        with m.If(sel.wait):
            for i in range(nrows):
                with m.If(row_i == i):
                    m.d.comb += rec.status.eq(r_st[i])
        with m.If(free_out):
            m.d.sync += out.valid.eq(load)
        with m.If(load):
            m.d.sync += [out.payload.eq(rec), rr.eq(Mux(pick == nq - 1, 0, pick + 1))]
        m.d.comb += [self.free.eq(load & sel.own), self.free_row.eq(Mux(load & sel.own, row_i, 0))]
        # the TX half's record into its stream's queue; a READ's takes the stream's oldest row
        t = self.s_tx
        tr = t.payload
        kt = qindex(tr.conn, tr.stream)
        refused = Const(0)
        for st in CQ_REFUSED:
            refused = refused | (tr.status == st)
        rd_op = Const(0)
        for op in self.rd_ops:
            rd_op = rd_op | (tr.op == op)
        m.d.comb += t.ready.eq(1)
        for k, (q, o) in enumerate(qs):
            hit = t.valid & (kt == k)
            own = rd_op & ~refused & o.r_rdy
            e = Signal(entry, name=f"push{k}")
            m.d.comb += [e.rec.eq(tr), e.own.eq(own), e.wait.eq(own & (tr.status == 0)),
                         e.row.eq(Mux(own, o.r_data, 0)),
                         q.w_data.eq(e), q.w_en.eq(hit), q.r_en.eq(load & (pick == k)),
                         o.r_en.eq(hit & own)]
        # the READ taken on m_rd: its row pending, its place in the stream's order
        p = self.rd
        kr = qindex(p.conn, p.stream)
        for k, (_, o) in enumerate(qs):
            m.d.comb += [o.w_data.eq(p.msg[:rw] if rdb else 0), o.w_en.eq(self.rd_take & (kr == k))]
        ri_take = Signal(range(max(2, nrows)))
        m.d.comb += ri_take.eq(kr * slots + (p.msg[:rdb] if rdb else 0))
        # the RX's record of a pending READ (the same msg), else counted
        c = self.s_rx
        cr = c.payload
        m.d.comb += c.ready.eq(1)
        ri_rx = Signal(range(max(2, nrows)))
        m.d.comb += ri_rx.eq(qindex(cr.conn, cr.stream) * slots + (cr.msg[:rdb] if rdb else 0))
        in_range = ((cr.stream >> sb) == 0) & ((cr.conn >> cb) == 0 if cb < len(cr.conn) else 1)
        rx_hit = Signal()
        msg_eq = Signal()
        for i in range(nrows):
            with m.If(ri_rx == i):
                m.d.comb += msg_eq.eq(r_msg[i] == cr.msg)
        m.d.comb += rx_hit.eq(c.valid & in_range & pend.bit_select(ri_rx, 1) & msg_eq)
        with m.If(c.valid & ~rx_hit):
            m.d.sync += self.unmatched.eq(self.unmatched + 1)
        for i in range(nrows):
            with m.If(self.rd_take & (ri_take == i)):
                m.d.sync += [pend[i].eq(1), rx_in[i].eq(0), r_msg[i].eq(p.msg)]
            with m.If(rx_hit & (ri_rx == i)):
                m.d.sync += [rx_in[i].eq(1), r_st[i].eq(cr.status)]
            with m.If(self.free & (row_i == i)):
                m.d.sync += [pend[i].eq(0), rx_in[i].eq(0)]
        # the bound's counts: a work request taken in, a record dequeued
        for k in range(nq):
            up = self.wr_take & (kw == k)
            down = load & (pick == k)
            with m.If(up & ~down):
                m.d.sync += count[k].eq(count[k] + 1)
            with m.Elif(down & ~up):
                m.d.sync += count[k].eq(count[k] - 1)
        return m


class AckOut(wiring.Component):
    """MR-ENG-133: the RX engine's ACK/NAK requests (``s_ack``) into frame descriptors
    (``m_desc``), combinationally (no queue: ``s_ack.ready`` is ``m_desc.ready``; the MRAH and
    MRNH fields both from the record, the opcode from ``nak``); the per-connection template
    rows written by ``s_cfg`` (the TX half's layout, MR-TX-121)."""

    def __init__(self, conns, ack_layout, cfg_layout, *, hints=False):
        self.conns, self.cfg_layout, self.hints = conns, cfg_layout, bool(hints)
        ports = {"s_ack": In(stream.Signature(ack_layout)),
                 "s_cfg": In(stream.Signature(cfg_layout)),
                 "m_desc": Out(stream.Signature(DESC_LAYOUT))}
        if self.hints:
            ports["hint"] = In(HINT_BITS)       # MR-ENG-312: the receiver's hint, Mb/s
        super().__init__(ports)

    def elaborate(self, platform):
        m = Module()
        a, o, c = self.s_ack, self.m_desc, self.s_cfg
        m.submodules.tmpl = tmpl = memory.Memory(shape=self.cfg_layout, depth=self.conns, init=[])
        wr = tmpl.write_port()
        rd = tmpl.read_port(domain="comb")
        m.d.comb += [c.ready.eq(1), wr.addr.eq(c.payload.conn), wr.data.eq(c.payload),
                     wr.en.eq(c.valid), rd.addr.eq(a.payload.conn)]
        t, r = rd.data, a.payload
        d = Signal(DESC_LAYOUT)
        m.d.comb += [d.eth_dst.eq(t.eth_dst), d.eth_src.eq(t.eth_src), d.ip_dscp.eq(t.ip_dscp),
                     d.ip_ttl.eq(t.ip_ttl), d.ip_src.eq(t.ip_src), d.ip_dst.eq(t.ip_dst),
                     d.udp_sport.eq(r.sport), d.udp_dport.eq(ROCE_PORT), d.bth_pkey.eq(t.pkey),
                     d.bth_dest_qp.eq(t.dest_qp)]
        # both headers' fields carry the record whatever the opcode: the builder reads only the
        # opcode's headers (MR-TXF-003), and no field is gated by ``nak`` (an AND a bit)
        m.d.comb += [d.bth_opcode.eq(Mux(r.nak, Op.MR_NAK, Op.MR_ACK)),
                     d.mrnh_version.eq(1), d.mrnh_path.eq(r.path), d.mrnh_reason.eq(r.reason),
                     d.mrnh_psn.eq(r.psn),
                     d.mrah_version.eq(1), d.mrah_flags.eq(r.ce_count != 0), d.mrah_path.eq(r.path),
                     d.mrah_ce_count.eq(r.ce_count), d.mrah_cum_psn.eq(r.cum),
                     d.mrah_trigger_psn.eq(r.psn), d.mrah_sack.eq(r.sack)]
        if self.hints:
            m.d.comb += d.mrah_rate_mbps.eq(self.hint)         # MR-ENG-312
        # no queue: the frame builder's descriptor stages buffer, and its ready is a register
        m.d.comb += [a.ready.eq(o.ready), o.valid.eq(a.valid), o.payload.eq(d)]
        return m


class Engine(wiring.Component):
    """MR-ENG-130..136, MR-ENG-282..: the whole engine: the receive half (with the peer's ACKs
    tapped), the TX half and the ACK paths between them; the ACK descriptors go into the TX
    half's one frame builder (docs/spec/hw-engine.md section 5). Ports: the receive half's but ``m_ack`` (MR-ENG-101), ``m_axis`` (MAC transmit),
    the TX half's ``s_wr``, ``s_cfg``, ``m_tx_cqe``, ``m_error``, ``now`` and ``m_axi_rd``
    (MR-ENG-135); the TX half's counters are read through ``s_axil`` (MR-ENG-105, MR-REG-034)::

        s_axis -> EngineRx --(data)--> placement DMA -> m_axi
                     |  +--m_peer_ack--> AckIn --s_ack--> Tx --m_axis--> m_axis
                     |  +--m_rsp--> RspJoin --s_rsp--^  ^ |
                     |                 ^---m_rsp_done---|-+
                     +--m_ack--> AckOut --s_ack_desc----+

    READ responses (MR-ENG-140..144): the receive half's items through :class:`RspJoin` to the
    TX half, whose ``m_rsp_done`` records ``RspJoin`` counts (read through ``s_axil``) and, with
    ``max_rd_atomic`` (the RX's responder resources, default ``records.RD_ATOMIC``), queues as
    table 7 frees to the receive half's ``s_cfg_eng`` after RdRows' row writes (MR-ENG-239..242).

    ``pacing`` (MR-ENG-258/259, default off): the TX half ``Tx(pacing=True)``, its pacer's
    configuration and writes from the register block's pacing window (hw-regs.md MR-REG-062..065),
    joined inside: the same ports.

    ``interval`` (MR-ENG-299/300): the fewest cycles between two frames at the MAC, by default
    ``records.frame_interval(width)`` (8 at 64 bits, 1 at 512); the blocks named in MR-ENG-300
    take their inputs at most once every ``interval`` cycles.

    ``hints`` (MR-ENG-311..313, default off): the receiver's rate hints end to end: the TX half
    ``Tx(hints=True, control=True)`` at interval 1, ``AckIn`` decoding the peer's MRAH hint into
    its ``s_ack``, ``AckOut`` writing the input ``ack_hint_mbps`` into the engine's ACKs; not with
    ``pacing`` or ``rows``.

    ``rows`` (MR-ENG-291, default off): the TX half's scheduler the row scheduler
    (``Tx(rows=True)``, its ``m_rd`` joined as the register scheduler's, MR-TX-333): the same
    ports; not with ``pacing`` (MR-TX-317).

    Golden model: :class:`metaroce.models.engine.EngineModel`."""

    def __init__(self, width=64, *, conns=2, paths=4, keys=256, rx_streams=RX_SMALL["streams"],
                 max_frame=9216, outstanding=32, cq_join=True, max_rd_atomic=records.RD_ATOMIC,
                 pacing=False, rows=False, interval=None, hints=False, hint_wrong=None, rx_hint=False,
                 rx_hint_wrong=None, rx_hint_form=None, **tx_kw):
        kw = engine_tx_params(tx_kw)
        # MR-ENG-311: the rate hints end to end (the TX half Tx(hints=True, control=True), the
        # peer's MRAH hint decoded into its s_ack, the host's hint on the engine's ACKs)
        try:
            self.hints, self.hint_wrong = check_engine_hint_options(hints, hint_wrong, pacing=pacing, rows=rows)
            # MR-ENG-338..340: the receiver's own hint (RxHint), its and the windows' configuration
            # from the register block's hint window
            self.rx_hint = check_rx_hint_options(self.hints, rx_hint, rx_hint_wrong, rx_hint_form)
        except ValueError:
            self._MustUse__silence = True
            raise
        self.rx_hint_wrong = rx_hint_wrong
        # MR-ENG-361: RxHint's form by the connections (MR-ENG-346) unless ``rx_hint_form`` says
        self.hint_block = RxHint(conns, wrong=rx_hint_wrong, form=rx_hint_form) if self.rx_hint else None
        # MR-ENG-299/300: the frame interval its blocks may take (at 64 bits 8 cycles a frame)
        self.interval = records.interval_of(width, interval)
        # MR-ENG-258: the TX half paced (Tx(pacing=True)), its pacer set through s_axil
        self.pacing = bool(pacing)
        # MR-ENG-291: the TX half's row scheduler (Tx(rows=True, rd_rows=True)), the same ports
        self.rows = bool(rows)
        # MR-ENG-239: the RX's responder resources, freed by the TX half's m_rsp_done records
        # (None: unbounded and no frees, the engine before rsc27)
        self.max_rd_atomic = max_rd_atomic
        # MR-ENG-196: one host completion per work request (CqJoin); False: the two records
        self.cq_join = bool(cq_join)
        # MR-ENG-130: the RX chunk ring takes a peer of the same instance's chunk window
        self.rx_half = EngineRx(width, conns=conns, paths=paths, keys=keys, streams=rx_streams,
                                chunk_ring=kw["chunk_window"], max_frame=max_frame,
                                outstanding=outstanding, peer_acks=True, tx_counters=True,
                                responses=True, rd_rows=True, atomics=True, max_rd_atomic=max_rd_atomic,
                                pacing=self.pacing, cfg_sack=ENGINE_CFG_SACK, interval=self.interval,
                                hint_regs=self.rx_hint)
        # MR-ENG-148: the scheduler's READs queued come out, for the rows the engine writes
        # MR-ENG-282: the TX half's one frame builder takes the ACK descriptors too
        # MR-TXS-417, MR-TX-455: the TX half's interval (its scheduler's and retransmit unit's);
        # 1 with pacing or the row scheduler, which do not take one
        tx_interval = 1 if self.pacing or self.rows or self.hints else self.interval     # MR-ENG-311
        # MR-TXS-444: above interval 1 the scheduler's output queues show their memory's head
        # only (MR-TXS-419), unless ``mem_head=False`` is given
        kw.setdefault("mem_head", tx_interval > 1)
        if self.hints:
            kw.update(hints=True, control=True)
        self.tx = Tx(width, conns=conns, paths=paths, rd_rows=True, pacing=self.pacing, ack_desc=True,
                     rows=self.rows, interval=tx_interval, **kw)
        # the scheduler's streams (the paced scheduler, MR-ENG-258, is a join without its own)
        self.tx_streams = kw["streams"]
        self.width, self.conns = width, conns
        sig = lambda blk, name: blk.signature.members[name].signature      # noqa: E731
        ports = {}
        for name, mem in self.rx_half.signature.members.items():
            if name not in _RX_INTERNAL:
                ports[name] = mem
        ports["m_axis"] = Out(sig(self.tx, "m_axis"))
        for name, mem in self.tx.signature.members.items():
            if name not in self._tx_internal():
                ports[ENGINE_TX_NAMES.get(name, name)] = mem
        if self.hints and not self.rx_hint:
            ports["ack_hint_mbps"] = In(HINT_BITS)     # MR-ENG-312: the hint the engine's ACKs carry
        super().__init__(ports)

    def _tx_internal(self):
        """The TX half's ports joined inside; MR-ENG-340: with ``rx_hint`` also the windows'
        configuration (the hint window's)."""
        return _TX_INTERNAL + (tuple(n for n in HINT_REG_OF if n.startswith("cc_")) if self.rx_hint else ())

    def elaborate(self, platform):
        m = Module()
        rxh, tx = self.rx_half, self.tx
        m.submodules.rx_half, m.submodules.tx = rxh, tx
        m.submodules.ack_in = ack_in = AckIn(self.conns, rxh.signature.members["m_peer_ack"].signature,
                                             tx.lay.rtx.ack, hints=self.hints, hint_wrong=self.hint_wrong)
        m.submodules.ack_out = ack_out = AckOut(self.conns, rxh.lay.ack, tx.lay.cfg, hints=self.hints)
        if self.rx_hint:
            # MR-ENG-338..340: the receiver's own hint from the arrivals the RX takes, on the
            # engine's clock; its and the windows' configuration from the hint window
            m.submodules.rx_hint = hb = self.hint_block
            wiring.connect(m, rxh.m_seen, hb.s_seen)
            m.d.comb += [hb.now.eq(self.now), hb.line_mbps.eq(rxh.hint_line_mbps),
                         hb.share_ns.eq(rxh.hint_share_ns), hb.mtu.eq(rxh.hint_mtu),
                         ack_out.hint.eq(hb.hint)]
            m.d.comb += [getattr(tx, n).eq(getattr(rxh, n)) for n in HINT_REG_OF if n.startswith("cc_")]
        elif self.hints:
            m.d.comb += ack_out.hint.eq(self.ack_hint_mbps)     # MR-ENG-312
        # MR-ENG-240/241: with the resources, RspJoin's queue of frees
        free_depth = rsp_free_depth(self.conns, self.max_rd_atomic) if self.max_rd_atomic is not None else 0
        m.submodules.rsp = rsp = RspJoin(tx.lay.sched.rsp, tx.lay.sched.rsp_done,
                                         cfg_layout=rxh.lay.cfg, free_depth=free_depth)
        # MR-ENG-197: with the join, both completion ports are the join's
        joined = ("m_cqe",) if self.cq_join else ()
        for name in self.rx_half.signature.members:
            if name not in _RX_INTERNAL + joined:
                _forward(m, getattr(rxh, name), getattr(self, name), rxh.signature.members[name])
        for name, mem in tx.signature.members.items():
            if name not in self._tx_internal() + ("s_cfg", "s_wr") + joined:
                _forward(m, getattr(tx, name), getattr(self, ENGINE_TX_NAMES.get(name, name)), mem)
        # MR-ENG-105: the TX half's counters through the register block (MR-REG-034)
        m.d.comb += [tx.reg_addr.eq(rxh.tx_reg_addr), rxh.tx_reg_data.eq(tx.reg_data)]
        if self.pacing:
            # MR-ENG-259: the pacing window's writes and configuration to the TX half's pacer
            wiring.connect(m, rxh.m_pace, tx.s_pace_write)
            m.d.comb += [tx.mtu_wl.eq(rxh.pace_mtu_wl), tx.line_mbps.eq(rxh.pace_line_mbps)]
        wiring.connect(m, rxh.m_peer_ack, ack_in.s_meta)
        wiring.connect(m, ack_in.m_ack, tx.s_ack)
        # MR-ENG-140..143: READ responses from the receive half to the TX half, their records counted
        wiring.connect(m, rxh.m_rsp, rsp.s_rsp)
        wiring.connect(m, rsp.m_rsp, tx.s_rsp)
        wiring.connect(m, tx.m_rsp_done, rsp.s_done)
        # MR-ENG-302..305: the host's table 9 rows to the TX half's s_psn, its ignored writes
        # counted in the engine's counter window beside RspJoin's (each 0 at the other's indices)
        m.submodules.psn_init = psn = PsnInit(rxh.lay.cfg, tx.lay.sched.psn)
        m.d.comb += [psn.cfg_tap.eq(rxh.cfg_tap), psn.cfg_tap_take.eq(rxh.cfg_tap_take),
                     psn.psn_ignored.eq(tx.psn_ignored), psn.reg_addr.eq(rxh.eng_reg_addr)]
        wiring.connect(m, psn.m_psn, tx.s_psn)
        m.d.comb += [rsp.reg_addr.eq(rxh.eng_reg_addr), rxh.eng_reg_data.eq(rsp.reg_data | psn.reg_data)]
        # MR-ENG-148..152: the outstanding-read rows written by the engine, freed by the records
        m.submodules.rd_rows = rdr = RdRows(self.conns, self.tx_streams, rxh.lay, tx.lay.sched.rd,
                                            tx.lay.sched.cqe, join=self.cq_join)
        wiring.connect(m, tx.m_rd, rdr.s_rd)
        m.d.comb += rdr.op.eq(tx.s_wr.payload.op)          # MR-ENG-168: m_rd is s_wr's request
        # MR-ENG-272: the host's table 8 rows as the RX engine takes them
        m.d.comb += [rdr.cfg_tap.eq(rxh.cfg_tap), rdr.cfg_tap_take.eq(rxh.cfg_tap_take)]
        # MR-ENG-155: the work requests through a 1-entry FIFO, so that s_wr.ready stays a
        # function of state (the scheduler's ready of a READ depends on the READ's row)
        m.submodules.wr_q = wq = fifo.SyncFIFO(width=len(tx.s_wr.payload.as_value()), depth=WR_FIFO_DEPTH)
        wr_hold = Signal()              # MR-ENG-199: the join's bound (0 without the join)
        m.d.comb += [self.s_wr.ready.eq(wq.w_rdy), wq.w_data.eq(self.s_wr.payload),
                     wq.w_en.eq(self.s_wr.valid), tx.s_wr.valid.eq(wq.r_rdy & ~wr_hold),
                     tx.s_wr.payload.eq(wq.r_data), wq.r_en.eq(tx.s_wr.ready & ~wr_hold)]
        if free_depth:
            # MR-ENG-242: RdRows' row write before the queue's free (a mux of state, no register)
            _first_of_two(m, rdr.m_cfg, rsp.m_free, rxh.s_cfg_eng)
        else:
            wiring.connect(m, rdr.m_cfg, rxh.s_cfg_eng)
        if self.cq_join:
            self._join_completions(m, rxh, tx, rdr, wr_hold)
        else:
            m.d.comb += [rdr.cqe.eq(rxh.m_cqe.payload), rdr.cqe_take.eq(rxh.m_cqe.valid & self.m_cqe.ready),
                         rdr.tx_cqe.eq(tx.m_cqe.payload),
                         rdr.tx_cqe_take.eq(tx.m_cqe.valid & self.m_tx_cqe.ready)]
        # MR-ENG-282/283: the ACK descriptors into the TX half's frame builder, whose frames
        # are the MAC's (no second builder, no arbiter)
        wiring.connect(m, rxh.m_ack, ack_out.s_ack)
        wiring.connect(m, ack_out.m_desc, tx.s_ack_desc)
        wiring.connect(m, tx.m_axis, wiring.flipped(self.m_axis))
        # the template writes go to both the TX half and AckOut (both always ready)
        m.d.comb += [tx.s_cfg.valid.eq(self.s_cfg.valid), tx.s_cfg.payload.eq(self.s_cfg.payload),
                     ack_out.s_cfg.valid.eq(self.s_cfg.valid),
                     ack_out.s_cfg.payload.eq(self.s_cfg.payload),
                     self.s_cfg.ready.eq(tx.s_cfg.ready)]
        return m

    def _join_completions(self, m, rxh, tx, rdr, wr_hold):
        """MR-ENG-196..205: the TX half's records and the RX's requester records (RDMA_READ,
        COMP_SWAP, FETCH_ADD) into CqJoin, always taken; ``m_tx_cqe`` the join's, ``m_cqe`` the
        RX's receive records only; the READ rows freed by the join; ``s_wr`` held at its bound."""
        m.submodules.cq_join = cq = CqJoin(self.conns, self.tx_streams, rxh.lay.rd_slots, tx.lay.sched.cqe,
                                           rxh.lay.cqe, tx.lay.sched.rd)
        rc = rxh.m_cqe
        req = Const(0)
        for op in CQ_RX_OPCODES:
            req = req | (rc.payload.opcode == op)
        m.d.comb += [cq.s_tx.valid.eq(tx.m_cqe.valid), cq.s_tx.payload.eq(tx.m_cqe.payload),
                     tx.m_cqe.ready.eq(1),
                     cq.s_rx.valid.eq(rc.valid & req), cq.s_rx.payload.eq(rc.payload),
                     self.m_cqe.valid.eq(rc.valid & ~req), self.m_cqe.payload.eq(rc.payload),
                     rc.ready.eq(req | self.m_cqe.ready),
                     cq.rd.eq(tx.m_rd.payload), cq.rd_take.eq(tx.m_rd.valid & tx.m_rd.ready),
                     cq.wr_conn.eq(tx.s_wr.payload.conn), cq.wr_stream.eq(tx.s_wr.payload.stream),
                     wr_hold.eq(cq.wr_hold), cq.wr_take.eq(tx.s_wr.valid & tx.s_wr.ready),
                     rdr.free.eq(cq.free), rdr.free_row.eq(cq.free_row)]
        wiring.connect(m, cq.m_cqe, wiring.flipped(self.m_tx_cqe))


#: the halves' ports joined inside the engine (MR-ENG-135)
_RX_INTERNAL = ("m_ack", "m_peer_ack", "tx_reg_addr", "tx_reg_data", "m_rsp", "eng_reg_addr",
                "eng_reg_data", "s_cfg_eng", "m_pace", "pace_mtu_wl", "pace_line_mbps",
                "cfg_tap", "cfg_tap_take", "m_seen") + tuple(HINT_REG_OF)
# MR-ENG-140: the TX half's READ responses come from the receive half, their records to RspJoin;
# MR-ENG-259: its pacer's writes and configuration from the register block; MR-ENG-303: its
# initial PSNs from the host's table 9 rows (PsnInit)
_TX_INTERNAL = ("s_ack", "s_ack_desc", "m_axis", "reg_addr", "reg_data", "s_rsp", "m_rsp_done", "m_rd",
                "s_pace_write", "mtu_wl", "line_mbps", "s_psn", "psn_ignored")


def _forward(m, inner, outer, member):
    """The top's port ``outer`` wired to the block's port ``inner`` (an interface or a signal)."""
    if member.is_port:
        m.d.comb += (outer.eq(inner) if member.flow == Out else inner.eq(outer))
    elif member.flow == Out:
        wiring.connect(m, inner, wiring.flipped(outer))
    else:
        wiring.connect(m, wiring.flipped(outer), inner)


def engine_small(width=64):
    """MR-ENG-130: the block ``engine``: 2 connections x 4 paths, 256 keys, 32 bursts."""
    return Engine(width)


def engine_hints_small(width=64):
    """MR-ENG-311: the block ``engine_hints``: ``engine_small`` with the rate hints end to end."""
    return Engine(width, hints=True)


def engine_rx_hint_small(width=64):
    """MR-ENG-340: the block ``engine_rx_hint``: ``engine_hints`` with the receiver's own hint
    and the hint window."""
    return Engine(width, hints=True, rx_hint=True)


def engine_rows_small(width=64):
    """MR-ENG-295: the block ``engine_rows``: ``engine_small`` with the row scheduler."""
    return Engine(width, rows=True)


#: MR-FLOW-049: the TX half's parameters of ``engine_4096x8`` besides the engine's own: the
#: retransmit pool of ``metaroce.blocks.TX_4096X8`` (16,384 records)
ENGINE_4096X8_TX = dict(pool=16384)


def engine_4096x8(width=512):
    """MR-FLOW-049: the block ``engine_4096x8``: the whole engine at the default configuration's
    table sizes (issue 13): ``engine_rx``'s receive half (4,096 connections x 8 paths, 1,024
    keys, 8 streams, its DMA's bursts) and the row scheduler's TX half (``rows=True``, MR-ENG-291)
    with 16,384 retransmit records; the TX half's other parameters ``engine_small``'s."""
    return Engine(width, conns=records.CONNS, paths=records.PATHS, keys=1024,
                  rx_streams=records.STREAMS, outstanding=OUTSTANDING, rows=True, **ENGINE_4096X8_TX)


def cq_join_small(width=64):
    """MR-ENG-209: the completion join of ``engine_small`` alone (its resources; ``width``
    changes nothing): 2 connections x 2 streams, 2 READ rows a stream, queues of CQ_DEPTH."""
    from ..models.engine import engine_layouts
    from ..models.rx import layouts as rx_layouts
    lay = engine_layouts().sched
    rx_cqe = rx_layouts(2, 4, 256, streams=RX_SMALL["streams"]).cqe
    return CqJoin(2, 2, 2, lay.cqe, rx_cqe, lay.rd)
