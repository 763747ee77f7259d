"""RX engine, first slice: connection and path context, per-packet checks, receive window and
SACK, ACK/NAK requests, placement commands and payload steering (docs/spec/hw-rx.md, MR-RX-*).

``Rx(width=512, *, conns=4096, paths=8, keys=1024)`` (MR-RX-001). Ports (MR-RX-002), all
``amaranth.lib.stream`` except the counter read port:

============== ===== =====================================================================
port           dir   meaning
============== ===== =====================================================================
s_meta         in    parser metadata (models.parser.META_LAYOUT), one record per frame
s_payload      in    parser payload beats {data, keep, last} of frames with payload
s_cfg          in    configuration writes {table, addr, data} (MR-RX-060)
m_ack          out   ACK/NAK requests for the TX side (MR-RX-030, MR-RX-031)
m_place        out   placement commands {conn, addr, length} of accepted writes (MR-RX-032)
m_data         out   the payload beats of accepted writes, in command order (MR-RX-033)
reg_addr/data  in/out 64-bit counter read, one cycle after the address (MR-RX-050)
============== ===== =====================================================================

Pipeline (MR-RX-040): the cycle a record is taken its connection and key rows are read (the
addresses are bits of the record); S1 runs the checks that need no sequence state and reads
the path row; S2 forwards the last path-row write over the read data (MR-RX-042), classifies
the PSN, updates the window, decides the ACK and writes the row back, and pushes the outputs
into their queues; S3..S5 count. The path table is read and written once per packet, so back-to-back
packets of one path go at one per cycle with no stall.

Golden model: :class:`metaroce.models.rx.RxCycleModel`, cycle by cycle on every port.
"""
from amaranth.hdl import Array, Cat, Const, Module, Mux, Signal
from amaranth.lib import data, fifo, memory, stream, wiring
from amaranth.lib.wiring import In, Out

from ..models import protocol as P
from ..models.parser import META_LAYOUT
from ..models.rx import (ACK_EVERY_RESET, COUNTER_BITS, CTR_ABANDONED, CTR_ACKS, CTR_CE,
                         CTR_NAKS, CTR_PLACED_BYTES, FIFO_DEPTH, MTU_LOG2_RESET, N_COUNTERS,
                         NAK_OF, TABLE_CONN, TABLE_GLOBAL, TABLE_KEY, TABLE_PATH, RxCode,
                         layouts, payload_layout)
from ..models.wire import Op

__all__ = ["Rx", "rx_256x4"]


def _first_zero(bits, n):
    """Index of the lowest 0 of ``bits[:n]`` (``n`` if none), as a balanced tree."""
    if n == 1:
        return Mux(bits[0], 1, 0)
    h = n // 2
    lo, hi = bits[:h], bits[h:n]
    return Mux(lo.all(), h + _first_zero(hi, n - h), _first_zero(lo, h))


def _popcount(bits):
    vals = [bits[i] for i in range(len(bits))]
    while len(vals) > 1:
        vals = [vals[i] + vals[i + 1] if i + 1 < len(vals) else vals[i] for i in range(0, len(vals), 2)]
    return vals[0]


def _popcount_sum(values):
    """The sum of a list of Values as a balanced adder tree."""
    while len(values) > 1:
        values = [values[i] + values[i + 1] if i + 1 < len(values) else values[i]
                  for i in range(0, len(values), 2)]
    return values[0]


def _add_prefix(a, b):
    """``a + b`` (``len(a) + 1`` bits) with a Kogge-Stone carry tree instead of a ripple chain:
    log2(n) prefix steps, 5 LUT levels at 16 bits where the generic flow's ripple adder takes 7
    (MR-RX-046)."""
    n = len(a)
    g = [a[i] & b[i] for i in range(n)]
    p = [a[i] ^ b[i] for i in range(n)]
    G, Pp = list(g), list(p)
    d = 1
    while d < n:
        G, Pp = ([G[i] | (Pp[i] & G[i - d]) if i >= d else G[i] for i in range(n)],
                 [Pp[i] & Pp[i - d] if i >= d else Pp[i] for i in range(n)])
        d *= 2
    carries = [Const(0, 1)] + G
    return Cat(*[p[i] ^ carries[i] for i in range(n)], carries[n])


LIMB = 16


def _address_limbs(base, va, offset):
    """MR-RX-046, first half (S1): ``base + va + offset`` as a carry-save pair (one LUT level),
    then each 16-bit limb of that pair summed on its own: four 17-bit limb sums whose carries
    are resolved in S2 (:func:`_address_resolve`)."""
    off = offset.as_unsigned()
    x = base ^ va ^ off
    y = Cat(Const(0, 1), ((base & va) | (base & off) | (va & off))[:63])
    return [_add_prefix(x[k:k + LIMB], y[k:k + LIMB]) for k in range(0, 64, LIMB)]


def _address_resolve(limbs):
    """MR-RX-046, second half (S2): each limb plus the carry out of the limbs below it (a carry
    crosses a limb whose sum is all ones), the limbs' increments computed alongside."""
    out = []
    carry = Const(0, 1)
    for s in limbs:
        low = s[:LIMB]
        out.append(Mux(carry, (low + 1)[:LIMB], low))
        carry = s[LIMB] | (low.all() & carry)
    return Cat(*out)


def _piece_counter(m, name, nbits, inc, piece=LIMB):
    """An ``nbits`` counter adding 1 in the cycles ``inc`` is true, in ``piece``-bit pieces: a
    piece counts when ``inc`` and every lower piece is all ones, read from registered flags, so
    no carry crosses a piece (MR-RX-047). Returns the count and the all-ones flags."""
    count = Signal(nbits, name=name)
    ones = []
    for j, lo in enumerate(range(0, nbits, piece)):
        part = count[lo:lo + piece]
        carry_in = Cat(inc, *ones).all()
        with m.If(carry_in):
            m.d.sync += part.eq(part + 1)
        if lo + piece < nbits:
            full = Signal(name=f"{name}_ones{j}")
            with m.If(carry_in):
                m.d.sync += full.eq(part == (1 << len(part)) - 2)
            ones.append(full)
    return count, ones


def _wide_inc_counter(m, name, nbits, inc, piece=LIMB):
    """An ``nbits`` counter adding ``inc`` (at most ``piece`` bits) every cycle (MR-RX-047):
    the low piece adds it with a prefix adder; its carry is registered and counted into the
    upper pieces (:func:`_piece_counter`) in the next cycle. The value read adds the carry
    still pending, piece by piece with the upper pieces' all-ones flags, so a read always sees
    every increment of the cycles before."""
    low = Signal(piece, name=f"{name}_low")
    carry = Signal(name=f"{name}_carry")
    total = _add_prefix(low, Cat(inc, Const(0, piece))[:piece])
    m.d.sync += [low.eq(total[:piece]), carry.eq(total[piece])]
    high, ones = _piece_counter(m, f"{name}_high", nbits - piece, carry, piece)
    parts = [low]
    en = carry
    for j, lo in enumerate(range(0, nbits - piece, piece)):
        part = high[lo:lo + piece]
        parts.append(Mux(en, (part + 1)[:len(part)], part))
        if j < len(ones):
            en = en & ones[j]
    return Cat(*parts)


class Rx(wiring.Component):
    """The RX engine's first slice (docs/spec/hw-rx.md)."""

    def __init__(self, width=512, *, conns=4096, paths=8, keys=1024):
        if width not in (64, 128, 256, 512):
            raise ValueError(f"width must be 64, 128, 256 or 512, not {width!r}")
        self.width = width
        self.lay = lay = layouts(conns, paths, keys)
        beat = payload_layout(width)
        super().__init__({
            "s_meta": In(stream.Signature(META_LAYOUT)),
            "s_payload": In(stream.Signature(beat)),
            "s_cfg": In(stream.Signature(lay.cfg)),
            "m_ack": Out(stream.Signature(lay.ack)),
            "m_place": Out(stream.Signature(lay.place)),
            "m_data": Out(stream.Signature(beat)),
            "reg_addr": In(range(32)),
            "reg_data": Out(COUNTER_BITS),
        })

    def elaborate(self, platform):
        m = Module()
        lay = self.lay
        cb, pb, kb = lay.conn_bits, lay.path_bits, lay.key_bits

        m.submodules.conn_mem = conn_mem = memory.Memory(shape=lay.conn.size, depth=lay.conns, init=[])
        m.submodules.key_mem = key_mem = memory.Memory(shape=lay.key.size, depth=lay.keys, init=[])
        m.submodules.path_mem = path_mem = memory.Memory(shape=lay.path.size,
                                                         depth=lay.conns * lay.paths, init=[])
        conn_rd, conn_wr = conn_mem.read_port(), conn_mem.write_port()
        key_rd, key_wr = key_mem.read_port(), key_mem.write_port()
        path_rd, path_wr = path_mem.read_port(), path_mem.write_port()

        m.submodules.ack_q = ack_q = fifo.SyncFIFO(width=lay.ack.size, depth=FIFO_DEPTH)
        m.submodules.place_q = place_q = fifo.SyncFIFO(width=lay.place.size, depth=FIFO_DEPTH)
        m.submodules.steer_q = steer_q = fifo.SyncFIFO(width=1, depth=FIFO_DEPTH)

        # -- global registers (MR-RX-060)
        ack_every = Signal(4, init=ACK_EVERY_RESET)
        mtu_log2 = Signal(4, init=MTU_LOG2_RESET)

        # -- input: credits for every queue (MR-RX-041), row reads from the record's bits
        s1_valid = Signal()
        s2_valid = Signal()
        inflight = s1_valid + s2_valid
        meta_ready = Signal()
        m.d.comb += meta_ready.eq((ack_q.level + inflight < FIFO_DEPTH)
                                  & (place_q.level + inflight < FIFO_DEPTH)
                                  & (steer_q.level + inflight < FIFO_DEPTH))
        m.d.comb += self.s_meta.ready.eq(meta_ready)
        take = self.s_meta.valid & meta_ready
        inm = self.s_meta.payload
        m.d.comb += [conn_rd.addr.eq(inm.bth.dest_qp[:cb]), key_rd.addr.eq(inm.reth.rkey[:kb])]

        s1 = Signal(META_LAYOUT)
        m.d.sync += s1_valid.eq(take)
        with m.If(take):
            m.d.sync += s1.eq(inm)

        # -- S1: checks that need no sequence state, in the order of MR-SEC-007 (MR-RX-020)
        conn = data.View(lay.conn, conn_rd.data)
        key = data.View(lay.key, key_rd.data)
        bth, mrdh, reth = s1.bth, s1.mrdh, s1.reth
        plen = s1.payload_len
        mtu = Signal(17)
        m.d.comb += mtu.eq(Const(1, 17) << mtu_log2)
        end = Signal(33)
        m.d.comb += end.eq(mrdh.offset + plen)
        chunk_bad = (((mrdh.offset & (mtu - 1)) != 0) | (end > mrdh.msg_len)
                     | ((plen != mtu) & (end != mrdh.msg_len)) | ((plen == 0) & (mrdh.msg_len != 0)))
        hit = key.valid & (key.rkey == reth.rkey)
        access_bad = ~hit | ~key.access[1]          # ACCESS_REMOTE_WRITE
        assert P.ACCESS_REMOTE_WRITE == 1 << 1
        bounds_bad = (reth.va + mrdh.msg_len) > key.length
        is_write = (bth.opcode == Op.MR_WRITE) | (bth.opcode == Op.MR_WRITE_IMM)
        s1_code = Signal(4)
        s1_bad = Signal()
        checks = [
            (s1.drop, RxCode.PARSER_DROP),
            (~is_write, RxCode.NOT_HANDLED),
            ((bth.dest_qp[cb:] != 0) | ~conn.valid, RxCode.NO_CONNECTION),
            (bth.pkey != conn.pkey, RxCode.BAD_PKEY),
            (mrdh.path > conn.n_paths_m1, RxCode.BAD_PATH),
            (mrdh.stream > conn.n_streams_m1, RxCode.STREAM),
            (chunk_bad, RxCode.CHUNK),
            (reth.dma_len != mrdh.msg_len, RxCode.LENGTH),
            (access_bad, RxCode.ACCESS),
            (bounds_bad, RxCode.BOUNDS),
        ]
        with m.If(checks[0][0]):
            m.d.comb += [s1_bad.eq(1), s1_code.eq(checks[0][1])]
        for cond, code in checks[1:]:
            with m.Elif(cond):
                m.d.comb += [s1_bad.eq(1), s1_code.eq(code)]
        s1_row = Cat(mrdh.path[:pb], bth.dest_qp[:cb])
        m.d.comb += path_rd.addr.eq(s1_row)

        s2_bad = Signal()
        s2_code = Signal(4)
        s2_conn = Signal(cb)
        s2_path = Signal(8)
        s2_row = Signal(cb + pb)
        s2_psn = Signal(24)
        s2_ack_req = Signal()
        s2_ce = Signal()
        s2_sport = Signal(16)
        s2_plen = Signal(16)
        s2_addr_limbs = [Signal(LIMB + 1, name=f"s2_addr_limb{k}") for k in range(64 // LIMB)]
        s2_steer = Signal()
        m.d.sync += [
            s2_valid.eq(s1_valid), s2_bad.eq(s1_bad), s2_code.eq(s1_code),
            s2_conn.eq(bth.dest_qp[:cb]), s2_path.eq(mrdh.path), s2_row.eq(s1_row),
            s2_psn.eq(bth.psn), s2_ack_req.eq(bth.ack_req), s2_ce.eq(s1.ip.ecn == 3),
            s2_sport.eq(s1.udp.sport), s2_plen.eq(plen),
            *[r.eq(v) for r, v in zip(s2_addr_limbs, _address_limbs(key.base, reth.va, mrdh.offset))],
            s2_steer.eq(~s1.drop & (plen != 0)),
        ]

        # -- S2: the path row with forwarding (MR-RX-042), window, ACK policy (MR-RX-024..031)
        wb_valid = Signal()
        wb_addr = Signal(cb + pb)
        wb_data = Signal(lay.path.size)
        fwd = wb_valid & (wb_addr == s2_row)
        row = data.View(lay.path, Mux(fwd, wb_data, path_rd.data))
        dist = Signal(24)
        m.d.comb += dist.eq(s2_psn - row.cum)
        behind = dist[23]
        outside = ~behind & (dist > P.RX_WINDOW)
        sack_idx = Signal(8)
        m.d.comb += sack_idx.eq(dist - 1)
        in_sack = (dist >= 1) & (dist <= P.SACK_BITS) & row.sack.bit_select(sack_idx, 1)
        dup = behind | (~outside & in_sack)
        new = ~behind & ~outside & ~in_sack
        # rx_accept: bit 0 of `acc` stands for cum itself; a PSN beyond the bitmap slides it
        n_acc = 2 * P.SACK_BITS + 1
        slide = dist > P.SACK_BITS
        shift = Signal(9)
        m.d.comb += shift.eq(dist - P.SACK_BITS)
        fill = Signal(n_acc)
        m.d.comb += fill.eq(Mux(slide, (Const(1, n_acc + 1) << shift) - 1, 0))
        acc = Signal(n_acc)
        m.d.comb += acc.eq(Cat(Const(0, 1), row.sack) | (Const(1, n_acc) << dist[:10]) | fill)
        ones = Signal(range(n_acc + 1))
        m.d.comb += ones.eq(_first_zero(acc, n_acc))
        new_cum = Signal(24)
        new_sack = Signal(P.SACK_BITS)
        m.d.comb += [new_cum.eq(row.cum + ones), new_sack.eq((acc >> ones)[1:P.SACK_BITS + 1])]
        gap = s2_psn != row.high
        dh = Signal(24)
        m.d.comb += dh.eq(s2_psn - row.high)
        new_high = Mux(dh[23], row.high, (s2_psn + 1)[:24])
        onset = s2_ce & ~row.prev_ce
        ce_new = Signal(16)
        m.d.comb += ce_new.eq(Mux(row.ce == 0xFFFF, 0xFFFF, row.ce + s2_ce))
        pending = Signal(4)
        m.d.comb += pending.eq(row.pending + 1)
        ack_now = s2_ack_req | gap | (pending >= ack_every) | onset

        ok = s2_valid & ~s2_bad
        accepted = ok & new
        duplicate = ok & dup
        out_nak = ok & outside
        nrow = Signal(lay.path)
        m.d.comb += nrow.eq(row)
        with m.If(duplicate):
            m.d.comb += [nrow.ce.eq(0), nrow.pending.eq(0)]
        with m.Elif(accepted):
            m.d.comb += [nrow.cum.eq(new_cum), nrow.sack.eq(new_sack), nrow.high.eq(new_high),
                         nrow.prev_ce.eq(s2_ce)]
            with m.If(ack_now):
                m.d.comb += [nrow.ce.eq(0), nrow.pending.eq(0)]
            with m.Else():
                m.d.comb += [nrow.ce.eq(ce_new), nrow.pending.eq(pending),
                             nrow.last_psn.eq(s2_psn), nrow.last_sport.eq(s2_sport)]

        # ACK/NAK request (MR-RX-030, MR-RX-031)
        static_nak = Signal()
        nak_reason = Signal(8)
        with m.Switch(s2_code):
            for code, reason in NAK_OF.items():
                if code != RxCode.PSN_WINDOW:
                    with m.Case(code):
                        m.d.comb += [static_nak.eq(1), nak_reason.eq(reason)]
        ackw = Signal(lay.ack)
        is_nak = (s2_valid & s2_bad & static_nak) | out_nak
        send_ack = duplicate | (accepted & ack_now)
        m.d.comb += [ackw.conn.eq(s2_conn), ackw.path.eq(s2_path), ackw.psn.eq(s2_psn),
                     ackw.sport.eq(s2_sport)]
        with m.If(is_nak):
            m.d.comb += [ackw.nak.eq(1), ackw.reason.eq(Mux(out_nak, NAK_OF[RxCode.PSN_WINDOW], nak_reason))]
        with m.Elif(duplicate):
            m.d.comb += [ackw.cum.eq(row.cum), ackw.sack.eq(row.sack), ackw.ce_count.eq(row.ce),
                         ackw.ece.eq(row.ce != 0)]
        with m.Else():
            m.d.comb += [ackw.cum.eq(new_cum), ackw.sack.eq(new_sack), ackw.ce_count.eq(ce_new),
                         ackw.ece.eq(ce_new != 0)]
        m.d.comb += [ack_q.w_en.eq(is_nak | send_ack), ack_q.w_data.eq(ackw)]

        placew = Signal(lay.place)
        m.d.comb += [placew.conn.eq(s2_conn), placew.addr.eq(_address_resolve(s2_addr_limbs)), placew.length.eq(s2_plen),
                     place_q.w_data.eq(placew), place_q.w_en.eq(accepted & (s2_plen != 0)),
                     steer_q.w_data.eq(accepted), steer_q.w_en.eq(s2_valid & s2_steer)]

        # -- configuration writes and the path-row write port (MR-RX-060, MR-RX-042)
        cfg = self.s_cfg.payload
        cfg_ready = ~ok
        m.d.comb += self.s_cfg.ready.eq(cfg_ready)
        cfg_take = self.s_cfg.valid & cfg_ready
        with m.If(cfg_take & (cfg.table == TABLE_GLOBAL)):
            m.d.sync += [ack_every.eq(cfg.data[0:4]), mtu_log2.eq(cfg.data[4:8])]
        m.d.comb += [
            conn_wr.en.eq(cfg_take & (cfg.table == TABLE_CONN)), conn_wr.addr.eq(cfg.addr[:cb]),
            conn_wr.data.eq(cfg.data[:lay.conn.size]),
            key_wr.en.eq(cfg_take & (cfg.table == TABLE_KEY)), key_wr.addr.eq(cfg.addr[:kb]),
            key_wr.data.eq(cfg.data[:lay.key.size]),
            path_wr.en.eq(ok | (cfg_take & (cfg.table == TABLE_PATH))),
            path_wr.addr.eq(Mux(ok, s2_row, cfg.addr[:cb + pb])),
            path_wr.data.eq(Mux(ok, nrow.as_value(), cfg.data[:lay.path.size])),
        ]
        m.d.sync += [wb_valid.eq(path_wr.en), wb_addr.eq(path_wr.addr), wb_data.eq(path_wr.data)]

        # -- outputs
        m.d.comb += [
            self.m_ack.valid.eq(ack_q.r_rdy), self.m_ack.payload.eq(ack_q.r_data),
            ack_q.r_en.eq(self.m_ack.ready),
            self.m_place.valid.eq(place_q.r_rdy), self.m_place.payload.eq(place_q.r_data),
            place_q.r_en.eq(self.m_place.ready),
        ]
        # payload steering (MR-RX-033): each payload packet's beats go out or are dropped
        have = steer_q.r_rdy
        head = steer_q.r_data[0]
        pay = self.s_payload
        m.d.comb += [
            pay.ready.eq(have & (~head | self.m_data.ready)),
            self.m_data.valid.eq(have & head & pay.valid),
            self.m_data.payload.eq(pay.payload),
            steer_q.r_en.eq(pay.valid & pay.ready & pay.payload.last),
        ]

        # -- S3..S5: counters (MR-RX-050). The abandoned holes are a popcount of up to 256
        # bits: S3 counts groups of 16, S4 sums them, S5 adds every counter's increment.
        s3_valid = Signal()
        s3_hot = Signal(len(RxCode))
        s3_ack = Signal()
        s3_nak = Signal()
        s3_ce = Signal()
        s3_ab_mask = Signal(P.SACK_BITS)
        s3_ab_shift = Signal(9)
        s3_placed = Signal(16)
        final = Mux(s2_bad, s2_code, Mux(outside, RxCode.PSN_WINDOW,
                                           Mux(dup, RxCode.DUPLICATE, RxCode.ACCEPTED)))
        m.d.sync += [
            s3_valid.eq(s2_valid), s3_hot.eq(Const(1, len(RxCode)) << final), s3_ack.eq(send_ack),
            s3_nak.eq(is_nak), s3_ce.eq(accepted & s2_ce),
            s3_ab_mask.eq(Mux(accepted & slide, Cat(Const(0, 1), row.sack)[:P.SACK_BITS] & fill[:P.SACK_BITS], 0)),
            s3_ab_shift.eq(Mux(accepted & slide, shift, 0)),
            s3_placed.eq(Mux(accepted, s2_plen, 0)),
        ]
        groups = P.SACK_BITS // 16
        s4 = [Signal(5, name=f"s4_pop{i}") for i in range(groups)]
        s4_valid, s4_hot, s4_ack, s4_nak, s4_ce = (Signal.like(x, name="s4" + x.name[2:]) for x in
                                                   (s3_valid, s3_hot, s3_ack, s3_nak, s3_ce))
        s4_shift, s4_placed = Signal.like(s3_ab_shift), Signal.like(s3_placed)
        m.d.sync += [s4[i].eq(_popcount(s3_ab_mask[16 * i:16 * i + 16])) for i in range(groups)]
        m.d.sync += [s4_valid.eq(s3_valid), s4_hot.eq(s3_hot), s4_ack.eq(s3_ack), s4_nak.eq(s3_nak),
                     s4_ce.eq(s3_ce), s4_shift.eq(s3_ab_shift), s4_placed.eq(s3_placed)]
        s5_valid, s5_hot, s5_ack, s5_nak, s5_ce = (Signal.like(x, name="s5" + x.name[2:]) for x in
                                                   (s4_valid, s4_hot, s4_ack, s4_nak, s4_ce))
        s5_ab, s5_placed = Signal(9), Signal.like(s4_placed)
        m.d.sync += [s5_valid.eq(s4_valid), s5_hot.eq(s4_hot), s5_ack.eq(s4_ack), s5_nak.eq(s4_nak),
                     s5_ce.eq(s4_ce), s5_ab.eq(s4_shift - _popcount_sum(s4)), s5_placed.eq(s4_placed)]
        # MR-RX-047: no 64-bit carry chain in a counter. A +1 counter counts in 16-bit pieces,
        # a piece counting when every lower piece is all ones (registered flags); a counter with
        # a wide increment adds it into its low piece and hands that add's carry to its upper
        # pieces (a +1 counter) in the next cycle; its read-out adds a carry still pending.
        values = [None] * N_COUNTERS
        for i in range(len(RxCode)):
            values[i] = _piece_counter(m, f"ctr{i}", COUNTER_BITS, s5_valid & s5_hot[i])[0]
        for i, inc in ((CTR_ACKS, s5_ack), (CTR_NAKS, s5_nak), (CTR_CE, s5_ce)):
            values[i] = _piece_counter(m, f"ctr{i}", COUNTER_BITS, s5_valid & inc)[0]
        for i, inc in ((CTR_ABANDONED, s5_ab), (CTR_PLACED_BYTES, s5_placed)):
            values[i] = _wide_inc_counter(m, f"ctr{i}", COUNTER_BITS, Mux(s5_valid, inc, 0))
        counters = Array(values)
        m.d.sync += self.reg_data.eq(Mux(self.reg_addr < N_COUNTERS, counters[self.reg_addr], 0))
        return m


def rx_256x4(width=512):
    """The small instance: 256 connections x 4 paths (MR-RX-001)."""
    return Rx(width, conns=256, paths=4, keys=256)
