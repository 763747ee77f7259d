"""The TX engine, first joined slice: the scheduler, the retransmit unit, the join stage, the
payload DMA and the frame builder, joined with ``wiring.connect`` (docs/spec/hw-tx.md section 2,
MR-TX-1xx).

``Tx(width=64, *, conns, streams, paths, depth, pool, outstanding, ...)`` (MR-TX-100). Ports
(MR-TX-103):

=========== ===== ======================================================================
port        dir   meaning
=========== ===== ======================================================================
s_wr        in    work requests (the scheduler's ``s_wr``)
s_ack       in    the peer's ACK/NAK records (the RX engine's ``m_ack`` layout, MR-TX-003)
s_cfg       in    per-connection template writes (MR-TX-121)
m_axi       out   AXI4 read master for the payload (the DMA's)
m_axis      out   frames, Ethernet header to ICRC (the frame builder's)
m_cqe       out   completions (the scheduler's; failed messages too, MR-TX-124/125)
m_error     out   retry-limit reports (the retransmit unit's)
s_rsp       in    READ responses to send (the scheduler's ``s_rsp``, MR-TX-171)
m_rsp_done  out   READ responses acknowledged or failed (the scheduler's ``m_rsp_done``)
now         in    the engine's nanosecond clock
reg_addr    in    counter read (``reg_data`` out, a cycle later): the retransmit unit's 0..10,
                  the engine's 11..15 (MR-TX-126)
s_cw_setup  in    the path windows' setup writes (``Cwnd``'s ``s_setup``, MR-TX-105)
cc_on       in    the retransmit unit's ACK events drive the windows (else dropped, MR-TX-106)
cc_beta_q   in    beta in Q16 and the window cap (``cc_cap``): ``Cwnd``'s configuration
s_psn       in    a path's initial PSN {conn, path, psn} (MR-CONN-107, MR-TX-469/470)
psn_ignored out   the ``s_psn`` write of the cycle before was ignored (MR-TX-470)
=========== ===== ======================================================================

With ``pacing`` (MR-TX-232..234; off by default) the scheduler is ``PacedTxSched`` (the
per-frame pacer beside it) and the ports add ``s_pace_write`` (the pacer's writes: the open, a
rate), ``mtu_wl`` and ``line_mbps`` (the pacer's static configuration).

The congestion windows (MR-TX-105/106): the retransmit unit's ``m_ackev`` to ``Cwnd.s_ack``
while ``cc_on``, ``Cwnd.m_update``'s ``conn``, ``path``, ``cwnd`` to the scheduler's
``s_cwnd``. With ``verdicts`` (MR-TX-256..258; off by default) the windows take the path
verdicts too: the unit's ``m_probe`` verdicts forked to ``Cwnd.s_path`` and the scheduler's
restores (``m_restore``) before them; ``s_cw_setup`` carries the share.

With ``rows`` (MR-TX-316..318; off by default) the scheduler is the row scheduler
``TxSchedRows`` (per-connection state in block-RAM rows; not with ``pacing``; with ``rd_rows``
its ``m_rd``, MR-TX-333);
the retry-limit report leaves on ``m_error`` and into its ``s_error`` together (MR-TX-318).
With ``verdicts`` either scheduler's kept verdicts (a suspicion taken as a reroute on a
connection's last active path) reach the windows as REROUTE restores (MR-TX-322, MR-TX-351).
``interval`` (MR-TX-455, default 1): MR-ENG-299's frame interval, handed to the retransmit unit
(MR-TX-453/454).

Golden model: :class:`metaroce.models.tx.TxCycleModel`, cycle by cycle on every port.
"""
from amaranth.hdl import Array, Cat, Const, Module, Mux, Signal
from amaranth.lib import fifo, memory, stream, wiring
from amaranth.lib.wiring import In, Out, flipped

from ..models import cwnd as cwnd_model
from ..models import protocol as P
from ..models import records
from ..models import retransmit as rtx_model
from ..models.frame_builder import DESC_LAYOUT
from ..models.tx import (ACK_ONLY_DESC_FIELDS, builder_fields, ERR_DEPTH, KIND_DEPTH, MRDH_VERSION, SHARED_DESC_FIELDS,
                         SMALL, SRC_LAYOUT, TX_CTR, TX_CTR_BASE, check_hint_options,
                         check_control_options,
                         check_tx_options, header_lane, id_depth, layouts)
from ..models.dma_read import lane_keep
from ..models.tx_sched import GEN_BITS, STATUS_LOC_PROT_ERR
from ..models.wire import ENTROPY_MASK, ROCE_PORT, MrdhFlag, Op
from .cwnd import Cwnd, CwndControl
from .dma_read import DmaRead, axi4_read_signature
from .frame_builder import FrameBuilder
from .counters import wide_counter
from .parser import axis_signature
from .queue import HeadRegFIFO
from .retransmit import Retransmit
from .tx_pace import PacedTxSched
from .tx_sched import TxSched
from .tx_sched_rows import TxSchedRows

__all__ = ["TxJoin", "TxData", "Tx", "tx_small", "tx_paced_small", "tx_verdicts_small",
           "tx_rows_small", "tx_hints_small", "tx_control_small"]

_SCHED_KW = ("chunk_window", "mtu", "cwnd", "conn_window", "path_pkts", "ack_every", "resend_depth")


#: MR-TX-122: the piece width of the join stage's address add
ADDR_PIECE = 4


def _piece_sums(a, b, piece):
    """MR-TX-122, first half (S1): ``a + b`` (``b`` zero-extended to ``len(a)``) cut into
    ``piece``-bit pieces, each summed on its own without and with a carry in: per piece
    ``Cat(sum, carry out, sum + 1, carry out + 1)``; no carry crosses a piece."""
    b = Cat(b, Const(0, len(a) - len(b)))
    return [Cat(a[k:k + piece] + b[k:k + piece], a[k:k + piece] + b[k:k + piece] + 1)
            for k in range(0, len(a), piece)]


def _piece_select(m, pieces, piece):
    """MR-TX-122, second half (S2): the carry into each piece of :func:`_piece_sums` by a
    Kogge-Stone tree over the pieces (a piece's carry out is its plain sum's, or its sum + 1's
    when a carry comes in), then each piece's sum selected by its carry."""
    w = piece + 1
    gen = [Signal(name=f"addr_g{k}") for k in range(len(pieces))]
    prop = [Signal(name=f"addr_p{k}") for k in range(len(pieces))]
    m.d.comb += [x.eq(p[piece]) for x, p in zip(gen, pieces)]
    m.d.comb += [x.eq(p[w + piece]) for x, p in zip(prop, pieces)]
    # (gen, prop) of pieces i-d+1..i: the carry out without and with a carry into the lowest
    d = 1
    while d < len(pieces):
        g2 = [Signal(name=f"addr_g{i}_{d}") for i in range(len(pieces))]
        p2 = [Signal(name=f"addr_p{i}_{d}") for i in range(len(pieces))]
        m.d.comb += [g2[i].eq(Mux(gen[i - d], prop[i], gen[i]) if i >= d else gen[i])
                     for i in range(len(pieces))]
        m.d.comb += [p2[i].eq(Mux(prop[i - d], prop[i], gen[i]) if i >= d else prop[i])
                     for i in range(len(pieces))]
        gen, prop, d = g2, p2, d * 2
    carries = [Const(0, 1)] + gen[:-1]
    return Cat(*[Mux(c, p[w:w + piece], p[:piece]) for c, p in zip(carries, pieces)])


#: MR-TX-533: the template's rows from which its read port is not transparent (MR-FLOW-026's
#: block RAM policy: at least 8 rows)
TMPL_BLOCK_ROWS = 8


class TxJoin(wiring.Component):
    """MR-TX-120..124: the template memory, an input register with the address adds (S1), and
    the fork of a frame request into a read command and a frame descriptor, each in an output
    register (S2), and the commands' messages ``{conn, slot}`` in a queue (``m_id``, one per
    command in order, for the done records); MR-TX-192: the payload sources of the frames with
    payload in a queue (``m_src``, one per such frame in order: the DMA's or the operands);
    MR-TX-229: a skid register before S1 (``s_frame.ready`` from a flip-flop); MR-TX-463: the
    template read synchronously (block RAM), a cycle ahead at the row S1 holds next; MR-TX-530:
    not transparent, S2 waits a cycle after a write to that row."""

    def __init__(self, lay, outstanding=SMALL["outstanding"]):
        self.lay = lay
        self.id_depth = id_depth(outstanding)
        super().__init__({
            "s_frame": In(stream.Signature(lay.sched.frame)),
            "s_cfg": In(stream.Signature(lay.cfg)),
            "m_cmd": Out(stream.Signature(lay.cmd)),
            "m_desc": Out(stream.Signature(DESC_LAYOUT)),
            "m_id": Out(stream.Signature(lay.sched.fail)),
            "m_src": Out(stream.Signature(SRC_LAYOUT)),
        })

    def elaborate(self, platform):
        m = Module()
        lay = self.lay
        m.submodules.tmpl = tmpl = memory.Memory(shape=lay.cfg, depth=lay.conns, init=[])
        wr = tmpl.write_port()
        # MR-TX-463: a synchronous read (block RAM at 4,096 rows), at the address S1 holds in
        # the next cycle; MR-TX-530: not transparent (no forward of the write's row): a write to
        # that row makes S2 wait a cycle instead, so a take still sees every earlier write.
        # MR-TX-533: below 8 rows (flip-flops, MR-FLOW-026) transparent, where the read register
        # folds into the rows' read; the hold makes the two forms' outputs the same.
        rd = tmpl.read_port(transparent_for=(wr,) if lay.conns < TMPL_BLOCK_ROWS else ())
        # MR-TX-121: a template write is always taken and seen from the next cycle on
        m.d.comb += [self.s_cfg.ready.eq(1), wr.addr.eq(self.s_cfg.payload.conn),
                     wr.data.eq(self.s_cfg.payload), wr.en.eq(self.s_cfg.valid)]
        # MR-TX-120: S1 takes a request when it is empty or moving on; S2 (the output registers)
        # takes S1's when both are empty or being taken and the message queue has room
        fr = Signal(lay.sched.frame)
        s1_valid = Signal()
        # MR-TX-122: laddr + offset's 4-bit pieces, each summed with and without a carry in
        s1_pieces = [Signal(2 * (ADDR_PIECE + 1), name=f"s1_addr{k}")
                     for k in range(0, 64, ADDR_PIECE)]
        t = rd.data
        cmd_free = ~self.m_cmd.valid | self.m_cmd.ready
        desc_free = ~self.m_desc.valid | self.m_desc.ready
        # MR-TX-124: the message queue (LUT RAM), pushed with the command
        # MR-TX-369: its head in a register (MR-TX-065): m_fail's {conn, slot} from flip-flops
        # (9 bits a slot: block RAM saved 31 COMB there, rxq36; the register head is for timing)
        m.submodules.ids = ids = HeadRegFIFO(width=lay.sched.fail.size, depth=self.id_depth)
        # MR-TX-192: the payload sources (block RAM, MR-TX-346), pushed with the command for a frame with payload
        m.submodules.srcq = srcq = HeadRegFIFO(width=SRC_LAYOUT.size, depth=self.id_depth, block=True)   # MR-TX-400
        # MR-TX-530/531: the row read this cycle missed last cycle's write to it: no take now
        tmpl_stale = Signal(name="tmpl_stale")
        take = s1_valid & ~tmpl_stale & cmd_free & desc_free & ids.w_rdy & srcq.w_rdy
        s1_free = ~s1_valid | take
        # MR-TX-229: a skid register before S1; s_frame.ready is its emptiness (a flip-flop),
        # so the scheduler's frame queue read no longer waits on S1's move (take); S1 loads
        # from the skid when it holds a request, else from the port, under the same rule
        sk = Signal(lay.sched.frame, name="frame_skid")
        sk_valid = Signal(name="frame_skid_valid")
        m.d.comb += self.s_frame.ready.eq(~sk_valid)
        with m.If(~sk_valid):
            m.d.sync += sk.eq(self.s_frame.payload)
        in_valid = sk_valid | self.s_frame.valid
        m.d.sync += sk_valid.eq(in_valid & ~s1_free)
        inp = Signal(lay.sched.frame, name="s1_in")
        m.d.comb += inp.eq(Mux(sk_valid, sk.as_value(), self.s_frame.payload.as_value()))
        # MR-TX-463: the row of the request S1 holds next cycle (the one it loads, else its own)
        m.d.comb += rd.addr.eq(Mux(in_valid & s1_free, inp.conn, fr.conn))
        m.d.sync += tmpl_stale.eq(wr.en & (wr.addr == rd.addr))
        with m.If(in_valid & s1_free):
            # MR-TX-122: no carry crosses a piece in S1 (the request comes from the
            # scheduler's frame queue read); S2 resolves the carries between the pieces
            m.d.sync += [s1_valid.eq(1), fr.eq(inp)]
            m.d.sync += [r.eq(v) for r, v in
                         zip(s1_pieces, _piece_sums(inp.laddr, inp.mrdh_offset, ADDR_PIECE))]
        with m.Elif(take):
            m.d.sync += s1_valid.eq(0)
        sl = lay.sched
        fid = Signal(sl.fail)
        m.d.comb += [fid.conn.eq(fr.conn), fid.slot.eq(fr.slot),     # MR-TXS-069
                     fid.lap.eq(fr.lap),                                # MR-TX-451
                     ids.w_en.eq(take), ids.w_data.eq(fid),
                     self.m_id.payload.eq(ids.r_data), self.m_id.valid.eq(ids.r_rdy),
                     ids.r_en.eq(self.m_id.ready)]
        # MR-TX-191: an atomic's payload is its operands (MR-TXS-098): no read
        atomic = (fr.bth_opcode == int(Op.MR_CMP_SWAP)) | (fr.bth_opcode == int(Op.MR_FETCH_ADD))
        src = Signal(SRC_LAYOUT)
        # MR-TX-367: the operands as the request has them (the scheduler's are 0 but an
        # atomic's, MR-TXS-099; a DMA entry's are never read): no mux on 128 bits
        m.d.comb += [src.inline.eq(atomic), src.cas.eq(fr.bth_opcode == int(Op.MR_CMP_SWAP)),
                     src.swap.eq(fr.swap), src.compare.eq(fr.compare),
                     srcq.w_en.eq(take & (fr.payload_len != 0)), srcq.w_data.eq(src),
                     self.m_src.payload.eq(srcq.r_data), self.m_src.valid.eq(srcq.r_rdy),
                     srcq.r_en.eq(self.m_src.ready)]
        path = fr.mrdh_path[:max(1, (lay.paths - 1).bit_length())]
        addr = _piece_select(m, s1_pieces, ADDR_PIECE)
        # MR-TXS-121: the path's UDP source port after its generation's new routes
        # (protocol.entropy_next: the template's port for generation 0, else the xor with a
        # table of the step's multiples in the entropy range)
        t_sport = t.sport.word_select(path, 16)
        steps = Array(Const((g * P.ENTROPY_STEP) & ENTROPY_MASK, 14) for g in range(1 << GEN_BITS))
        sport = Mux(fr.gen == 0, t_sport, Cat(t_sport[:14] ^ steps[fr.gen], Const(0b11, 2)))
        # MR-TX-479: the builder's lane of the payload, a constant of the opcode (by lane value)
        lane = Signal(self.lay.cmd.members["lane"], name="s1_lane")
        by_lane = {}
        for op in range(256):
            by_lane.setdefault(header_lane(op), []).append(op)
        with m.Switch(fr.bth_opcode):
            for v, ops in sorted(by_lane.items(), key=lambda kv: -len(kv[1]))[1:]:
                with m.Case(*ops):
                    m.d.comb += lane.eq(v)
            with m.Default():
                m.d.comb += lane.eq(max(by_lane, key=lambda v: len(by_lane[v])))
        with m.If(take):
            m.d.sync += [self.m_cmd.valid.eq(1), self.m_desc.valid.eq(1),
                         # MR-TX-122: the payload's address
                         self.m_cmd.payload.conn.eq(fr.conn),
                         self.m_cmd.payload.addr.eq(addr),
                         self.m_cmd.payload.length.eq(Mux(atomic, 0, fr.payload_len)),
                         self.m_cmd.payload.lane.eq(lane)]
            d = self.m_desc.payload
            m.d.sync += [d.eq(0),
                         d.eth_dst.eq(t.eth_dst), d.eth_src.eq(t.eth_src),
                         d.ip_dscp.eq(t.ip_dscp), d.ip_ecn.eq(t.ip_ecn), d.ip_ttl.eq(t.ip_ttl),
                         d.ip_src.eq(t.ip_src), d.ip_dst.eq(t.ip_dst),
                         d.udp_sport.eq(sport), d.udp_dport.eq(ROCE_PORT),
                         d.bth_pkey.eq(t.pkey), d.bth_dest_qp.eq(t.dest_qp),
                         d.mrdh_version.eq(MRDH_VERSION)]
            for name, _ in lay.sched.frame:
                if name not in ("conn", "laddr", "slot", "lap", "swap", "compare", "gen"):
                    m.d.sync += getattr(d, name).eq(getattr(fr, name))
        with m.Else():
            with m.If(self.m_cmd.ready):
                m.d.sync += self.m_cmd.valid.eq(0)
            with m.If(self.m_desc.ready):
                m.d.sync += self.m_desc.valid.eq(0)
        return m


class TxData(wiring.Component):
    """MR-TX-102: the join stage, the payload DMA and the frame builder; MR-TX-280..282 with
    ``ack_desc``: the port ``s_ack_desc``, descriptors of frames without payload (the engine's
    ACKs) into the same frame builder, ahead of the join stage's."""

    def __init__(self, width=64, *, conns=SMALL["conns"], streams=SMALL["streams"],
                 paths=SMALL["paths"], depth=SMALL["depth"], pool=SMALL["pool"],
                 outstanding=SMALL["outstanding"], id_width=4, ack_desc=False):
        if width not in (64, 128, 256, 512):
            raise ValueError(f"width must be 64, 128, 256 or 512, not {width!r}")
        self.width, self.conns, self.outstanding, self.id_width = width, conns, outstanding, id_width
        self.lay = lay = layouts(conns, streams, paths, depth, pool)
        self.ack_desc = bool(ack_desc)
        # MR-TX-283: the frame on m_axis is an ACK descriptor's (0 without ack_desc)
        self.out_ack = Signal()
        ports = {"s_ack_desc": In(stream.Signature(DESC_LAYOUT))} if self.ack_desc else {}
        super().__init__({**ports,
            "s_frame": In(stream.Signature(lay.sched.frame)),
            "s_cfg": In(stream.Signature(lay.cfg)),
            "m_axi": Out(axi4_read_signature(width, id_width)),
            "m_axis": Out(axis_signature(width, user=True)),
            "m_fail": Out(stream.Signature(lay.sched.fail)),
        })

    def elaborate(self, platform):
        m = Module()
        m.submodules.join = join = TxJoin(self.lay, self.outstanding)
        # MR-TX-483: the DMA rotates each read once, to the builder's lane (MR-TX-480), and the
        # builder takes the beats as they come (MR-TX-482)
        m.submodules.dma = dma = DmaRead(self.width, conns=self.conns,
                                         outstanding=self.outstanding, id_width=self.id_width,
                                         rotate=True)
        # MR-TX-467: IPv4 frames without VLAN only (the join's and AckOut's descriptors)
        # MR-TX-508: given only the fields the join and AckOut drive (the others 0, MR-TXF-072)
        m.submodules.fb = fb = FrameBuilder(self.width, ipv4_only=True, prerotated=True,
                                            desc_fields=builder_fields(self.lay, self.ack_desc))
        wiring.connect(m, flipped(self.s_frame), join.s_frame)
        wiring.connect(m, flipped(self.s_cfg), join.s_cfg)
        wiring.connect(m, join.m_cmd, dma.s_cmd)
        if self.ack_desc:
            self._join_ack_desc(m, join, fb)
        else:
            wiring.connect(m, join.m_desc, fb.s_desc)
        # MR-TX-192: the frame builder's payload from the payload-source queue's head: the
        # operands' beats (beat k of an inline entry) or the DMA's beats, each entry popped by
        # its last beat
        src, dm, fp = join.m_src, dma.m_data, fb.s_payload
        nb = self.width // 8
        ops = Cat(*(v[8 * (7 - j):8 * (8 - j)] for v in (src.payload.swap, src.payload.compare)
                    for j in range(8)))
        cas = src.payload.cas
        k = Signal(name="inline_k")
        inline = src.valid & src.payload.inline
        # MR-TX-483: the operand beats rotated up by the atomic's lane (a constant: wiring)
        lanes = [header_lane(int(op)) % nb for op in (Op.MR_FETCH_ADD, Op.MR_CMP_SWAP)]

        def rotl(v, s):
            w = len(v)
            return Cat(v[w - 8 * s:], v[:w - 8 * s]) if s else v

        def by_op(v):
            return rotl(v, lanes[0]) if lanes[0] == lanes[1] else \
                Mux(cas, rotl(v, lanes[1]), rotl(v, lanes[0]))
        if nb >= 16:
            i_data = by_op(Cat(ops, Const(0, self.width - 128)))
            i_keep = Mux(cas, lane_keep(0xFFFF, lanes[1], nb), lane_keep(0xFF, lanes[0], nb))
            i_last = Const(1, 1)
        else:
            i_data, i_keep, i_last = by_op(Mux(k, ops[64:], ops[:64])), Const(0xFF, 8), k | ~cas
        with m.If(inline):
            m.d.comb += [fp.valid.eq(1), fp.payload.data.eq(i_data), fp.payload.keep.eq(i_keep),
                         fp.payload.last.eq(i_last)]
        with m.Else():
            m.d.comb += [fp.valid.eq(src.valid & dm.valid), fp.payload.eq(dm.payload),
                         dm.ready.eq(src.valid & fp.ready)]
        moved = fp.valid & fp.ready
        m.d.comb += src.ready.eq(moved & fp.payload.last)
        with m.If(moved):
            m.d.sync += k.eq(Mux(fp.payload.last, 0, k + 1))
        wiring.connect(m, dma.m_axi, flipped(self.m_axi))
        # MR-TX-124: each done record pops its command's message; its error bit waits for its
        # frame's last beat (tuser) and a failed read is reported on m_fail; a frame that ends
        # before its record (no payload) leaves a debt, and that record is dropped when it comes
        done, out = dma.m_done, self.m_axis
        # MR-TX-369: the error queue's room (w_rdy) and head from flip-flops (MR-TX-065/073's
        # queue), and the debt's `!= 0` as a register beside it: m_fail.valid is one LUT of
        # flip-flops (the DMA's done queue keeps its head in a register too)
        m.submodules.errq = errq = HeadRegFIFO(width=1, depth=ERR_DEPTH)
        debt = Signal(range(join.id_depth + 1))
        debt_nz = Signal(name="debt_nz")               # debt != 0, every cycle
        err = done.payload.error
        take_ok = debt_nz | errq.w_rdy
        m.d.comb += [self.m_fail.valid.eq(done.valid & err & take_ok),
                     done.ready.eq(take_ok & (~err | self.m_fail.ready))]
        with m.If(self.m_fail.valid):
            m.d.comb += [self.m_fail.payload.conn.eq(join.m_id.payload.conn),
                         self.m_fail.payload.slot.eq(join.m_id.payload.slot),
                         self.m_fail.payload.lap.eq(join.m_id.payload.lap),      # MR-TX-451
                         self.m_fail.payload.status.eq(STATUS_LOC_PROT_ERR)]
        done_take = done.valid & done.ready
        m.d.comb += join.m_id.ready.eq(done_take)
        for name in ("tvalid", "tdata", "tkeep", "tlast"):
            m.d.comb += getattr(out, name).eq(getattr(fb.m_axis, name))
        m.d.comb += [fb.m_axis.tready.eq(out.tready),
                     out.tuser.eq(fb.m_axis.tuser | (fb.m_axis.tlast & errq.r_rdy & errq.r_data
                                                     & ~self.out_ack))]
        # MR-TX-282: an ACK frame's end leaves the error queue and the debt alone
        end = out.tvalid & out.tready & out.tlast & ~self.out_ack
        own = end & ~errq.r_rdy & done_take & ~debt_nz
        m.d.comb += [errq.r_en.eq(end), errq.w_en.eq(done_take & ~debt_nz & ~own),
                     errq.w_data.eq(err)]
        with m.If(end & ~errq.r_rdy & ~own):
            with m.If(~(done_take & debt_nz)):
                m.d.sync += [debt.eq(debt + 1), debt_nz.eq(1)]
        with m.Elif(done_take & debt_nz):
            m.d.sync += [debt.eq(debt - 1), debt_nz.eq(debt != 1)]
        return m


    def _join_ack_desc(self, m, join, fb):
        """MR-TX-281/282: ``s_ack_desc`` and the join stage's ``m_desc`` into the builder's
        ``s_desc``, the ACK descriptor first (a mux, no register; both readies of state: the
        builder's ready is a register, MR-TXF-041), while the kind queue has room; the kind of
        each descriptor taken pushed, popped by its frame's last beat on ``m_axis``."""
        ack, jd, sd, out = self.s_ack_desc, join.m_desc, fb.s_desc, self.m_axis
        m.submodules.kindq = kq = fifo.SyncFIFO(width=1, depth=KIND_DEPTH)
        sel = ack.valid
        # the shared fields by the choice; the MRAH/MRNH fields the ACK's, the rest the join's
        # (each read by one kind of frame only, MR-TXF-003): no mux on those
        for name, _ in DESC_LAYOUT:
            a, j = getattr(ack.payload, name), getattr(jd.payload, name)
            m.d.comb += getattr(sd.payload, name).eq(
                Mux(sel, a, j) if name in SHARED_DESC_FIELDS else a if name in ACK_ONLY_DESC_FIELDS else j)
        m.d.comb += [sd.valid.eq((ack.valid | jd.valid) & kq.w_rdy),
                     ack.ready.eq(sd.ready & kq.w_rdy),
                     jd.ready.eq(sd.ready & kq.w_rdy & ~sel),
                     kq.w_en.eq(sd.valid & sd.ready), kq.w_data.eq(sel),
                     kq.r_en.eq(out.tvalid & out.tready & out.tlast),
                     self.out_ack.eq(kq.r_rdy & kq.r_data)]


class Tx(wiring.Component):
    """MR-TX-100..104: the TX half of the engine (docs/spec/hw-tx.md section 2)."""

    def __init__(self, width=64, *, conns=SMALL["conns"], streams=SMALL["streams"],
                 paths=SMALL["paths"], depth=SMALL["depth"], pool=SMALL["pool"],
                 outstanding=SMALL["outstanding"], rto_ns=rtx_model.RTO_NS,
                 retry_limit=rtx_model.RETRY_LIMIT, slot_log2=rtx_model.SLOT_LOG2, rd_rows=False,
                 pacing=False, pace_ignored=False, verdicts=False, restores=True, ack_desc=False,
                 share_out=None, health_wrong=False, restore_after_ack=None, rows=False,
                 interval=1, mem_head=False, hints=False, hint_dropped=False, psn_plain=False,
                 control=False, control_wrong=None, **sched_kw):
        unknown = set(sched_kw) - set(_SCHED_KW)
        if unknown:
            raise TypeError(f"unknown parameters {sorted(unknown)}")
        # MR-TX-489: the receiver's rate hints in the windows (Cwnd(hints=True)), the control
        # path outside (MR-TX-492..494); hint_dropped (negative control only, MR-TX-497): the
        # unit's event offered with hint 0
        self.hints, self.hint_dropped = check_hint_options(
            hints, hint_dropped, verdicts=verdicts, pacing=pacing, rows=rows, interval=interval)
        # MR-TX-510: the control path inside (CwndControl); control_wrong (MR-TX-514, negative
        # controls only): its RTL changed (MR-CW-133)
        self.control = check_control_options(self.hints, control, control_wrong)
        self.sched_kw = {k: sched_kw.get(k, SMALL[k]) for k in _SCHED_KW}
        # MR-TXS-106: rd_rows brings the scheduler's m_rd out (the engine writes the READ rows)
        self.rd_rows = bool(rd_rows)
        # MR-TX-232: pacing builds the scheduler paced (PacedTxSched: the pacer beside it);
        # pace_ignored (negative control only, MR-TX-238) leaves the condition out of its decision
        self.pacing = bool(pacing)
        if pace_ignored and not self.pacing:
            raise ValueError("pace_ignored needs pacing")
        # MR-TX-256: verdicts joins the unit's path verdicts and the scheduler's restores into
        # the windows (Cwnd(verdicts=True)); restores False (with verdicts: the negative
        # control of MR-TX-261 only) drops the restores instead
        self.verdicts = bool(verdicts)
        if not restores and not self.verdicts:
            raise ValueError("restores=False needs verdicts")
        if self.verdicts and self.pacing:
            raise ValueError("verdicts with pacing is not built")
        self.join_restores = bool(restores)
        # MR-TX-300: the windows' share-out (Cwnd(share_out=True)) fed the unit's health bits
        # on its verdicts; on by default with verdicts (the endpoint's semantics, MR-CW-111).
        # health_wrong (negative control only, MR-TX-304): the bits given one path over
        self.share_out = self.verdicts if share_out is None else bool(share_out)
        if self.share_out and not self.verdicts:
            raise ValueError("share_out needs verdicts")
        if health_wrong and not self.share_out:
            raise ValueError("health_wrong needs share_out")
        self.health_wrong = bool(health_wrong)
        # MR-TX-306: a restore held while the unit has an ACK event not out (so it reaches the
        # windows after its ACK's event, the endpoint's order); on by default with share_out
        self.restore_after_ack = (self.share_out if restore_after_ack is None
                                  else bool(restore_after_ack))
        if self.restore_after_ack and not self.share_out:
            raise ValueError("restore_after_ack needs share_out")
        # MR-TX-316: rows, the row scheduler (TxSchedRows, the same ports) in TxSched's place;
        # MR-TX-317: rows with pacing and the READ rows together not built; MR-TX-333: with the
        # READ rows, the rows' m_rd (MR-TXS-325) joined as the register scheduler's; MR-TXS-346:
        # with pacing, the rows joined to the pacer (PacedTxSched(rows=True))
        self.rows, self.interval, self.mem_head = check_tx_options(
            rows, self.pacing, self.rd_rows, interval, mem_head)
        if self.rows and self.pacing:
            extra = {"pace_ignored": True} if pace_ignored else {}
            self.sched = PacedTxSched(width, rows=True, conns=conns, streams=streams,
                                      paths=paths, depth=depth, **self.sched_kw, **extra)
        elif self.rows:
            self.sched = TxSchedRows(width, conns=conns, streams=streams, paths=paths,
                                     depth=depth, restores=self.verdicts, rd_rows=self.rd_rows,
                                     **self.sched_kw)
        else:
            sched_cls = PacedTxSched if self.pacing else TxSched
            extra = {"pace_ignored": True} if pace_ignored else {}
            if self.verdicts:
                extra["restores"] = True
            if self.interval > 1:
                extra["interval"] = self.interval
            if self.mem_head:
                extra["mem_head"] = True
            self.sched = sched_cls(width, conns=conns, streams=streams, paths=paths,
                                   depth=depth, rd_rows=self.rd_rows, **self.sched_kw, **extra)
        # MR-TX-179: the unit's tail probes on, its m_probe joined to the scheduler's s_probe
        self.rtx = Retransmit(width, conns=conns, paths=paths, pool=pool, rto_ns=rto_ns,
                              retry_limit=retry_limit, slot_log2=slot_log2, probes=True,
                              verdict_health=self.share_out, interval=interval,     # MR-TX-455
                              hints=self.hints,                                      # MR-TX-491
                              psn_plain=psn_plain)      # MR-TX-477: negative control only
        # MR-TX-280: ack_desc adds s_ack_desc (the engine's ACK descriptors into the one builder)
        self.ack_desc = bool(ack_desc)
        self.data = TxData(width, conns=conns, streams=streams, paths=paths, depth=depth,
                           pool=pool, outstanding=outstanding, ack_desc=self.ack_desc)
        # MR-TX-105: the congestion windows (paths <= 8, MR-CW-001)
        # MR-TX-518: with the control path inside, the windows' band unit is shared with it
        self.cwnd = Cwnd(width, conns, paths, verdicts=self.verdicts, share_out=self.share_out,
                         hints=self.hints, band_client=self.control)
        self.width = width
        self.lay = lay = layouts(conns, streams, paths, depth, pool, verdicts=self.verdicts,
                                 share_out=self.share_out, hints=self.hints)   # TxData's when all off
        rd_port = {"m_rd": Out(stream.Signature(lay.sched.rd))} if self.rd_rows else {}
        # MR-TX-233: the pacer's writes and configuration, the paced scheduler's own ports
        if self.pacing:
            ps = self.sched.signature.members
            rd_port.update({n: ps[n] for n in ("s_pace_write", "mtu_wl", "line_mbps")})
        if self.ack_desc:
            rd_port["s_ack_desc"] = self.data.signature.members["s_ack_desc"]
        if self.control:
            # MR-TX-511: the control path inside; only the band's configuration
            self.cw_ctl = CwndControl(conns, paths, wrong=control_wrong, band_port=True)
            rd_port.update({"cc_line_mbps": In(cwnd_model.RATE_BITS),
                            "cc_base_rtt_ns": In(cwnd_model.RTT_BITS)})
        elif self.hints:
            # MR-TX-492: the control path's ports and the band's configuration
            def seen(layout):
                return Out(wiring.Signature({"payload": Out(layout), "valid": Out(1)}))
            rd_port.update({"s_cw_ack": In(stream.Signature(lay.cw.ack)), "cw_release": In(1),
                            "cc_line_mbps": In(cwnd_model.RATE_BITS),
                            "cc_base_rtt_ns": In(cwnd_model.RTT_BITS),
                            "m_cw_ev": seen(lay.cw.ack), "m_cw_upd": seen(lay.cw.update)})
        super().__init__({**rd_port,
            "s_wr": In(stream.Signature(lay.sched.wr)),
            "s_ack": In(stream.Signature(lay.rtx.ack)),
            "s_cfg": In(stream.Signature(lay.cfg)),
            "m_axi": Out(axi4_read_signature(width, 4)),
            "m_axis": Out(axis_signature(width, user=True)),
            "m_cqe": Out(stream.Signature(lay.sched.cqe)),
            "m_error": Out(stream.Signature(lay.rtx.error)),
            # MR-TX-171: READ responses (the responder side), the scheduler's ports
            "s_rsp": In(stream.Signature(lay.sched.rsp)),
            "m_rsp_done": Out(stream.Signature(lay.sched.rsp_done)),
            "s_cw_setup": In(stream.Signature(lay.cw.setup)),
            "cc_on": In(1),
            "cc_beta_q": In(cwnd_model.BETA_BITS),
            "cc_cap": In(cwnd_model.WIN_BITS),
            "now": In(records.TIME_BITS),
            "reg_addr": In(4),
            "reg_data": Out(rtx_model.COUNTER_BITS),
            # MR-TX-469/470: the paths' initial PSNs (the register scheduler's port)
            "s_psn": In(stream.Signature(lay.sched.psn)),
            "psn_ignored": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        sched, rtx, dp = self.sched, self.rtx, self.data
        m.submodules.sched, m.submodules.rtx, m.submodules.data = sched, rtx, dp
        m.submodules.cwnd = cw = self.cwnd
        # MR-TX-106: the unit's ACK events to the windows while cc_on (dropped otherwise: a
        # gate, so not wiring.connect; the layouts are one, MR-TX-070), the windows' updates
        # to the scheduler's path windows by the fields it takes (MR-TXS-028)
        ev, cc_on = rtx.m_ackev, self.cc_on
        if self.hints:
            self._join_hints(m, cc_on)
            m.d.comb += [cw.mtu.eq(self.sched_kw["mtu"]), cw.beta_q.eq(self.cc_beta_q),
                         cw.cap.eq(self.cc_cap)]
        else:
            m.d.comb += [cw.s_ack.payload.eq(ev.payload), cw.s_ack.valid.eq(ev.valid & cc_on),
                         ev.ready.eq(cw.s_ack.ready | ~cc_on),
                         cw.mtu.eq(self.sched_kw["mtu"]), cw.beta_q.eq(self.cc_beta_q),
                         cw.cap.eq(self.cc_cap)]
        upd, sc = cw.m_update, sched.s_cwnd
        m.d.comb += [sc.valid.eq(upd.valid), upd.ready.eq(sc.ready),
                     sc.payload.conn.eq(upd.payload.conn), sc.payload.path.eq(upd.payload.path),
                     sc.payload.cwnd.eq(upd.payload.cwnd)]
        if not self.control:
            wiring.connect(m, flipped(self.s_cw_setup), cw.s_setup)
        # MR-TX-101: the blocks' own ports, joined
        wiring.connect(m, sched.m_sent, rtx.s_sent)
        wiring.connect(m, rtx.m_acked, sched.s_acked)
        wiring.connect(m, rtx.m_resend, sched.s_resend)
        if self.verdicts:
            self._join_verdicts(m, cc_on)
        else:
            wiring.connect(m, rtx.m_probe, sched.s_probe)          # MR-TX-179
        wiring.connect(m, sched.m_frame, dp.s_frame)
        # MR-TX-124/125: the data path's read errors and the retransmit unit's retry-limit
        # reports (as they leave on m_error) fail messages in the scheduler
        wiring.connect(m, dp.m_fail, sched.s_fail)
        if not self.rows:
            m.d.comb += [sched.s_error.valid.eq(rtx.m_error.valid & self.m_error.ready),
                         sched.s_error.payload.eq(rtx.m_error.payload)]
        else:
            # MR-TX-318: the rows' s_fail and s_error share one boundary register: a retry-limit
            # report leaves on m_error and into s_error together, while s_error is ready and no
            # read failure is offered
            err_go = Signal(name="err_go")
            m.d.comb += [err_go.eq(sched.s_error.ready & ~dp.m_fail.valid),
                         sched.s_error.valid.eq(rtx.m_error.valid & self.m_error.ready & err_go),
                         sched.s_error.payload.eq(rtx.m_error.payload),
                         self.m_error.valid.eq(rtx.m_error.valid & err_go),
                         self.m_error.payload.eq(rtx.m_error.payload),
                         rtx.m_error.ready.eq(self.m_error.ready & err_go)]
        wiring.connect(m, flipped(self.s_wr), sched.s_wr)
        # MR-TX-469/470, MR-TX-500: the scheduler's initial-PSN port (the rows' too)
        wiring.connect(m, flipped(self.s_psn), sched.s_psn)
        m.d.comb += self.psn_ignored.eq(sched.psn_ignored)
        if self.rd_rows:
            wiring.connect(m, sched.m_rd, flipped(self.m_rd))
        if self.pacing:
            wiring.connect(m, flipped(self.s_pace_write), sched.s_pace_write)
            m.d.comb += [sched.mtu_wl.eq(self.mtu_wl), sched.line_mbps.eq(self.line_mbps)]
        wiring.connect(m, flipped(self.s_rsp), sched.s_rsp)
        wiring.connect(m, sched.m_rsp_done, flipped(self.m_rsp_done))
        wiring.connect(m, flipped(self.s_ack), rtx.s_ack)
        wiring.connect(m, flipped(self.s_cfg), dp.s_cfg)
        if self.ack_desc:
            wiring.connect(m, flipped(self.s_ack_desc), dp.s_ack_desc)
        wiring.connect(m, dp.m_axi, flipped(self.m_axi))
        wiring.connect(m, dp.m_axis, flipped(self.m_axis))
        wiring.connect(m, sched.m_cqe, flipped(self.m_cqe))
        if not self.rows:
            wiring.connect(m, rtx.m_error, flipped(self.m_error))
        m.d.comb += [sched.now.eq(self.now), rtx.now.eq(self.now), rtx.reg_addr.eq(self.reg_addr)]
        # MR-TX-126: the engine's counters from its ports' transfers: increments registered, then
        # counted in 8-bit pieces (as MR-TX-040); the read registered like the unit's
        axis, fr, cqe = self.m_axis, sched.m_frame, self.m_cqe
        end = axis.tvalid & axis.tready & axis.tlast
        cqe_taken = cqe.valid & cqe.ready
        # MR-TX-283: frames counts the data frames (an ACK frame is the receive half's)
        events = {"frames": end & ~dp.out_ack, "frames_bad": end & ~dp.out_ack & axis.tuser,
                  "resends": fr.valid & fr.ready & ((fr.payload.mrdh_flags & int(MrdhFlag.RETX)) != 0),
                  "completions": cqe_taken, "completions_err": cqe_taken & (cqe.payload.status != 0)}
        ctr = []
        for name in TX_CTR:
            late = Signal(name=f"inc_late_{name}")
            m.d.sync += late.eq(events[name])
            ctr.append(wide_counter(m, f"ctr_{name}", rtx_model.COUNTER_BITS, late, chunk=8))
        own = Signal(rtx_model.COUNTER_BITS)
        addr_late = Signal.like(self.reg_addr)
        k = (self.reg_addr - TX_CTR_BASE)[:3]
        m.d.sync += [own.eq(Mux(self.reg_addr >= TX_CTR_BASE, Array(ctr)[k], 0)),
                     addr_late.eq(self.reg_addr)]
        m.d.comb += self.reg_data.eq(Mux(addr_late >= TX_CTR_BASE, own, rtx.reg_data))
        return m

    def _join_hints(self, m, cc_on):
        """MR-TX-492/493: the control path's event again (``s_cw_ack``) first, else the unit's
        while ``cc_on`` and not held; the windows' takes and updates seen on ``m_cw_ev`` and
        ``m_cw_upd``; the hold set by an update with ``move`` or ``refill`` (the set wins),
        cleared after ``cw_release``."""
        rtx, cw, sc = self.rtx, self.cwnd, self.sched.s_cwnd
        ev, upd = rtx.m_ackev, cw.m_update
        if self.control:
            ctl, release, seen_ev, seen_upd = self._join_control(m)
        else:
            ctl, release = self.s_cw_ack, self.cw_release
            seen_ev, seen_upd = self.m_cw_ev, self.m_cw_upd
        hold = Signal(name="cw_hold")
        head = Signal(self.lay.cw.ack, name="unit_event")
        m.d.comb += head.eq(ev.payload)
        if self.hint_dropped:                   # MR-TX-497: the negative control
            m.d.comb += head.hint.eq(0)
        unit_valid = ev.valid & cc_on & ~hold
        m.d.comb += [cw.s_ack.valid.eq(ctl.valid | unit_valid),
                     cw.s_ack.payload.eq(Mux(ctl.valid, ctl.payload.as_value(), head.as_value())),
                     ctl.ready.eq(cw.s_ack.ready),
                     ev.ready.eq((cw.s_ack.ready & ~ctl.valid & ~hold) | ~cc_on),
                     cw.line_mbps.eq(self.cc_line_mbps), cw.base_rtt_ns.eq(self.cc_base_rtt_ns),
                     seen_ev.valid.eq(cw.s_ack.valid & cw.s_ack.ready),
                     seen_ev.payload.eq(cw.s_ack.payload)]
        upd_go = upd.valid & sc.ready
        m.d.comb += [seen_upd.valid.eq(upd_go), seen_upd.payload.eq(upd.payload)]
        with m.If(upd_go & (upd.payload.move | upd.payload.refill)):
            m.d.sync += hold.eq(1)
        with m.Elif(release):
            m.d.sync += hold.eq(0)

    def _join_control(self, m):
        """MR-TX-511: the control path (``CwndControl``) inside, joined by ``wiring.connect``
        through an interface of its signature: its move writes to the windows' ``s_setup`` ahead
        of the host's ``s_cw_setup``; the windows' takes (events, setup writes) and the updates
        the scheduler takes seen; the configuration the windows'. Returns its event stream, its
        release and the two seen streams (for :meth:`_join_hints`)."""
        m.submodules.cw_ctl = ctl = self.cw_ctl
        cw = self.cwnd
        link = ctl.signature.create(path=("cw_ctl_link",))
        wiring.connect(m, flipped(link), ctl)
        host, own, su = self.s_cw_setup, link.m_setup, cw.s_setup
        m.d.comb += [su.valid.eq(own.valid | host.valid),
                     su.payload.eq(Mux(own.valid, own.payload.as_value(), host.payload.as_value())),
                     own.ready.eq(su.ready), host.ready.eq(su.ready & ~own.valid),
                     link.s_setup.valid.eq(su.valid & su.ready), link.s_setup.payload.eq(su.payload),
                     link.mtu.eq(self.sched_kw["mtu"]), link.line_mbps.eq(self.cc_line_mbps),
                     link.base_rtt_ns.eq(self.cc_base_rtt_ns)]
        # MR-TX-518: its band requests to the windows' unit (MR-CW-145/146)
        breq, bresp = cw.s_band_req, cw.m_band_resp
        m.d.comb += [breq.valid.eq(link.m_band_req.valid), breq.payload.eq(link.m_band_req.payload),
                     link.m_band_req.ready.eq(breq.ready),
                     link.s_band_resp.valid.eq(bresp.valid),
                     link.s_band_resp.payload.eq(bresp.payload),
                     bresp.ready.eq(link.s_band_resp.ready)]
        return link.m_ack, link.release, link.s_ev, link.s_upd

    def _join_verdicts(self, m, cc_on):
        """MR-TX-257/258: the unit's ``m_probe`` forked to the scheduler's ``s_probe`` and, for
        a verdict (``to``), to the windows' ``s_path``; the scheduler's ``m_restore`` to
        ``s_path`` first (the scheduler holds ``s_probe.ready`` low while it offers one,
        MR-TXS-186, so the two never meet); while ``cc_on`` is low both are dropped."""
        rtx, sched, cw = self.rtx, self.sched, self.cwnd
        pr, sp, rs = rtx.m_probe, cw.s_path, sched.m_restore
        to = pr.payload.to
        path_ready = Signal(name="path_ready")
        m.d.comb += path_ready.eq(sp.ready | ~cc_on)
        go = ~to | path_ready
        # the scheduler's item is the unit's low bits (MR-TX-300's healthy is last)
        m.d.comb += [sched.s_probe.payload.eq(pr.payload.as_value()[:len(sched.s_probe.payload.as_value())]),
                     sched.s_probe.valid.eq(pr.valid & go),
                     pr.ready.eq(sched.s_probe.ready & go)]
        r_valid, r_ready = (rs.valid, path_ready) if self.join_restores else (Const(0, 1), 1)
        if self.restore_after_ack and self.join_restores:
            # MR-TX-306: the restore held while the unit has an ACK event not out
            hold = Signal(name="restore_hold")
            m.d.comb += hold.eq(cc_on & rtx.ackev_busy)
            r_valid, r_ready = r_valid & ~hold, r_ready & ~hold
        v_valid = pr.valid & to & sched.s_probe.ready
        pb = self.lay.cw.path_bits
        with m.If(r_valid):
            m.d.comb += [sp.payload.conn.eq(rs.payload.conn), sp.payload.path.eq(rs.payload.path),
                         sp.payload.restore.eq(1)]
            # MR-TX-322/351: a kept verdict's record (the rows' MR-TXS-316, the register
            # scheduler's MR-TXS-347) a restore with REROUTE
            m.d.comb += sp.payload.verdict.eq(Mux(rs.payload.kept, P.PATH_REROUTE, 0))
        with m.Else():
            m.d.comb += [sp.payload.conn.eq(pr.payload.conn), sp.payload.path.eq(pr.payload.path[:pb]),
                         sp.payload.verdict.eq(pr.payload.verdict)]
            if self.share_out:
                # MR-TX-301: the verdict's health bits to the windows' share-out
                h = pr.payload.healthy
                m.d.comb += sp.payload.healthy.eq(h.rotate_left(1) if self.health_wrong else h)
        m.d.comb += [sp.valid.eq((r_valid | v_valid) & cc_on),
                     # the negative control's restores are taken and dropped
                     rs.ready.eq(r_ready)]


def tx_small(width=64):
    """MR-TX-100: the small instance (models.tx.SMALL), the block ``tx``."""
    return Tx(width, **SMALL)


def tx_interval_small(width=64):
    """MR-TX-455/456: the small instance at MR-ENG-299's frame interval of ``width`` (8 at 64
    bits), the block ``tx_interval``."""
    return Tx(width, **SMALL, interval=records.frame_interval(width))


def tx_verdicts_small(width=64):
    """MR-TX-256: the small instance with the path verdicts in the windows, the block
    ``tx_verdicts``."""
    return Tx(width, **SMALL, verdicts=True)


def tx_hints_small(width=64):
    """MR-TX-489: the small instance with the receiver's rate hints in the windows."""
    return Tx(width, **SMALL, hints=True)


def tx_control_small(width=64):
    """MR-TX-510: the small instance with the rate hints and their control path inside."""
    return Tx(width, **SMALL, hints=True, control=True)


def tx_rows_small(width=64):
    """MR-TX-325: the small instance with the row scheduler (MR-TX-316), the block
    ``tx_rows``."""
    return Tx(width, **SMALL, rows=True)


def tx_paced_small(width=64):
    """MR-TX-248: the small instance with pacing (MR-TX-232), the block ``tx_paced``."""
    return Tx(width, **SMALL, pacing=True)
