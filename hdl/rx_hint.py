"""The receiver's rate hint (docs/spec/hw-engine.md section 5q, MR-ENG-328..336): the engine's
RX counts its active senders per share interval and computes MR-CC-005's fair share, the hint
its ACKs carry. The model is ``models.rx_hint.RxHintModel``.

=============  ====  =========================================================================
port           dir   meaning
=============  ====  =========================================================================
``s_seen``     in    ``valid`` and ``payload`` ``{conn, ce, more}`` (no ready: always taken): one per data packet the RX
                     takes (MR-ENG-328)
``now``        in    the engine's nanosecond clock (32 bits)
``line_mbps``  in    19 bits, the receiver's capacity in Mb/s (static)
``share_ns``   in    32 bits, the shortest share interval in ns (static)
``mtu``        in    13 bits, the MTU in bytes (static)
``hint``       out   19 bits, the hint in Mb/s (0: no limit), a register
``senders``    out   the sender count N the next hint is for (MR-ENG-329)
=============  ====  =========================================================================

Two forms of the per-connection state (MR-ENG-346, ``form``; the default by ``conns``,
``models.rx_hint.hint_form``): ``"flops"``, three bits a connection in flip-flops (seen in the
current interval, carried from the last one, more of its message due), the count a popcount;
``"memory"`` (section 5r, MR-ENG-346..352), a row a connection in a ``lib.memory`` (the number
of the interval of its latest arrival and its more-due bit), read the cycle the record comes
and written the next, the counts kept as counters: the outputs one cycle behind the flip-flop
form's. The counts, the interval's start and length are registers. One restoring divider
(one quotient bit a cycle, ``DIV_CYCLES`` = 40) computes in turn the interval's length after an
interval ends and the hint after its inputs change (MR-ENG-333).
"""
from __future__ import annotations

from amaranth.hdl import Cat, Const, Module, Mux, ResetSignal, Signal
from amaranth.lib import memory, wiring
from amaranth.lib.wiring import In, Out

from ..models import protocol as P
from ..models.records import TIME_BITS
from ..models.rx_hint import (DIV_CYCLES, EPOCH_BITS, HINT_BITS, MEM_SMALL, NUM_BITS, PKT_BITS, PREP_CYCLES,
                               check_wrong, hint_form, seen_layout)

__all__ = ["RxHint", "seen_signature", "rx_hint_small", "rx_hint_mem_small", "rx_hint_4096"]

_TIME_MAX = (1 << TIME_BITS) - 1


def seen_signature(conns):
    """MR-ENG-328: the arrivals' stream, from its producer's side: ``valid`` and ``payload``
    only (the block takes one every cycle: no ``ready``)."""
    return wiring.Signature({"valid": Out(1), "payload": Out(seen_layout(conns))})


class RxHint(wiring.Component):
    """MR-ENG-328..334 (``wrong``: MR-ENG-336's negative controls, MR-ENG-352's for the memory
    form); ``form``: MR-ENG-346."""

    def __init__(self, conns, *, wrong=None, form=None):
        if conns < 1:
            raise ValueError("conns must be at least 1")
        self.form = hint_form(conns, form)
        check_wrong(self.form, wrong)
        self.conns, self.wrong = conns, wrong
        self.nbits = conns.bit_length()         # 0..conns
        super().__init__({
            "s_seen": In(seen_signature(conns)),
            "now": In(TIME_BITS), "line_mbps": In(HINT_BITS), "share_ns": In(TIME_BITS),
            "mtu": In(13), "hint": Out(HINT_BITS), "senders": Out(self.nbits)})

    def elaborate(self, platform):
        m = Module()
        C, nb = self.conns, self.nbits
        prev = Signal(nb)
        epoch = Signal(TIME_BITS)
        iv_extra = Signal(TIME_BITS)
        pkts, ce_cnt = Signal(PKT_BITS), Signal(PKT_BITS)
        f_pkts, f_ce = Signal(PKT_BITS), Signal(PKT_BITS)
        iv_dirty, hint_dirty = Signal(), Signal()
        hint = Signal(HINT_BITS)

        cur = Signal(nb)
        n = Signal(nb)
        if self.wrong == "count":
            m.d.comb += n.eq(cur)
        else:           # MR-ENG-329: the larger of the two intervals' counts
            m.d.comb += n.eq(Mux(prev > cur, prev, cur))
        m.d.comb += [self.hint.eq(hint), self.senders.eq(n)]

        # -- the divider (MR-ENG-333): num / den, one quotient bit a cycle, after PREP_CYCLES
        # (MR-ENG-363): the operands in registers, their products in 17-bit limbs, the sums
        dw = max(HINT_BITS, 5 + PKT_BITS + nb)     # 25 x pkts x N
        num, den, rem = Signal(NUM_BITS), Signal(dw), Signal(dw + 1)
        cnt = Signal(range(DIV_CYCLES + 1))
        prep = Signal(range(PREP_CYCLES + 1))
        job_iv = Signal()           # the running job: the interval (1) or the hint (0)
        job_zero = Signal()         # the hint job's N <= 1: the hint is 0
        # num = op_a x op_b, den = op_c x op_d: the hint job's line, 25 p - 2 ce, 25 p, N; the
        # interval's prev, 16,000 mtu, line, 1 (constant products as shifts and adds)
        op_a, op_b = Signal(max(HINT_BITS, nb)), Signal(NUM_BITS - HINT_BITS + 8)
        op_c, op_d = Signal(5 + PKT_BITS), Signal(nb)
        num_next = _limb_product(m, op_a, op_b, NUM_BITS)
        den_next = _limb_product(m, op_c, op_d, dw)
        rem2 = Signal(dw + 2)
        take = Signal()
        m.d.comb += [rem2.eq(Cat(num[-1], rem)), take.eq(rem2 >= den)]
        q_next = Cat(take, num[:-1])
        start_iv, start_hint = Signal(), Signal()
        # the hint job's operands, outside the job's start (MR-ENG-364: not behind its decode)
        p, p25, drain_num = Signal(PKT_BITS), Signal(5 + PKT_BITS), Signal(5 + PKT_BITS)
        c = Const(0) if self.wrong == "drain" else f_ce
        m.d.comb += [p.eq(Mux(f_pkts == 0, 1, f_pkts)), p25.eq(_const_product(p, P.DRAIN_DEN)),
                     drain_num.eq(p25 - _const_product(c, P.DRAIN_NUM))]
        with m.If(cnt != 0):
            m.d.sync += [cnt.eq(cnt - 1), num.eq(q_next), rem.eq(Mux(take, rem2 - den, rem2))]
            with m.If(cnt == 1):
                with m.If(job_iv):
                    m.d.sync += iv_extra.eq(Mux(q_next > _TIME_MAX, _TIME_MAX, q_next))
                with m.Else():
                    m.d.sync += hint.eq(Mux(job_zero, 0, Mux(q_next == 0, P.MIN_RATE_MBPS, q_next)))
        with m.Elif(prep == 1):
            m.d.sync += [num.eq(num_next), den.eq(den_next), rem.eq(0), cnt.eq(DIV_CYCLES),
                         prep.eq(0)]
        with m.Elif(prep != 0):
            m.d.sync += prep.eq(prep - 1)
        with m.Elif(iv_dirty):
            m.d.comb += start_iv.eq(1)
            # MR-ENG-331: 16,000 x mtu x prev // line_mbps (two MTU packet times per sender)
            m.d.sync += [op_a.eq(prev), op_b.eq(_const_product(self.mtu, 16_000)),
                         op_c.eq(self.line_mbps), op_d.eq(1), prep.eq(PREP_CYCLES), job_iv.eq(1)]
        with m.Elif(hint_dirty):
            m.d.comb += start_hint.eq(1)
            # MR-ENG-329: line x (25 p - 2 ce) // (25 p N), p at least 1
            m.d.sync += [op_a.eq(self.line_mbps), op_b.eq(drain_num), op_c.eq(p25), op_d.eq(n),
                         prep.eq(PREP_CYCLES),
                         job_iv.eq(0), job_zero.eq((n <= 1) | (self.line_mbps == 0))]

        # -- the arrivals (MR-ENG-330..332): in the memory form one cycle after their record
        s = self.s_seen
        valid, conn, ce, more, now = Signal(), Signal.like(s.payload.conn), Signal(), Signal(), Signal(TIME_BITS)
        if self.form == "flops":
            m.d.comb += [valid.eq(s.valid & (s.payload.conn < C)), conn.eq(s.payload.conn),
                         ce.eq(s.payload.ce), more.eq(s.payload.more), now.eq(self.now)]
        else:
            m.d.sync += [valid.eq(s.valid & (s.payload.conn < C)), conn.eq(s.payload.conn),
                         ce.eq(s.payload.ce), more.eq(s.payload.more), now.eq(self.now)]
        set_iv, set_hint = Signal(), Signal()
        t = Signal(TIME_BITS)
        m.d.comb += t.eq(now - epoch)
        # t >= max(share_ns, iv_extra) (x 2) as two compares side by side (MR-ENG-364)
        roll, stale = Signal(), Signal()
        m.d.comb += [roll.eq((t >= self.share_ns) & (t >= iv_extra)),
                     stale.eq((t >= self.share_ns * 2) & (t >= iv_extra * 2))]
        with m.If(valid):
            with m.If(roll):
                m.d.comb += set_iv.eq(1)
                m.d.sync += [epoch.eq(now), prev.eq(Mux(stale, 0, cur)),
                             f_pkts.eq(Mux(stale, 0, pkts)), f_ce.eq(Mux(stale, 0, ce_cnt))]
            # MR-ENG-332: saturating, CE with it; the sums before the interval's end is known
            # (MR-ENG-364: no adder after it)
            room = pkts != (1 << PKT_BITS) - 1
            with m.If(roll):
                m.d.sync += [pkts.eq(1), ce_cnt.eq(ce)]
            with m.Else():
                m.d.sync += [pkts.eq(Mux(room, pkts + 1, pkts)), ce_cnt.eq(Mux(room, ce_cnt + ce, ce_cnt))]
        new = Signal()          # the arrival's connection is a new sender of the interval
        m.d.comb += set_hint.eq(valid & (roll | new))
        if self.form == "flops":
            self._flops(m, cur, valid, conn, more, roll, stale, new)
        else:
            self._memory(m, cur, valid, conn, more, roll, stale, new)
        m.d.sync += [iv_dirty.eq((iv_dirty & ~start_iv) | set_iv),
                     hint_dirty.eq((hint_dirty & ~start_hint) | set_hint)]
        return m

    def _flops(self, m, cur, valid, conn, more, roll, stale, new):
        """MR-ENG-328/331: three bits a connection; the count a popcount."""
        C = self.conns
        seen, carry, more_bits = Signal(C), Signal(C), Signal(C)

        def popcount(v):
            # a balanced adder tree (a chain of 4,096 terms is too deep to elaborate)
            terms = [v[i] for i in range(C)]
            while len(terms) > 1:
                terms = [a + b for a, b in zip(terms[::2], terms[1::2])] + terms[len(terms) & ~1:]
            return terms[0]

        m.d.comb += cur.eq(popcount(seen))
        bit = Signal(C)
        m.d.comb += bit.eq(Const(1, C) << conn)
        more_now = Signal(C)
        m.d.comb += more_now.eq(Mux(more, more_bits | bit, more_bits & ~bit))
        seen1, carry1 = Signal(C), Signal(C)
        with m.If(valid):
            m.d.comb += [seen1.eq(seen), carry1.eq(carry)]
            with m.If(roll):
                # MR-CC-026: the senders with more due are carried into the next interval once
                m.d.comb += seen1.eq(Mux(stale, 0, seen & ~carry & more_now))
                m.d.comb += carry1.eq(seen1)
            with m.If((seen1 & bit) == 0):
                m.d.sync += [seen.eq(seen1 | bit), carry.eq(carry1)]
                m.d.comb += new.eq(1)
            with m.Else():
                m.d.sync += [seen.eq(seen1), carry.eq(carry1 & ~bit)]
            m.d.sync += more_bits.eq(more_now)

    def _memory(self, m, cur, valid, conn, more, roll, stale, new):
        """MR-ENG-347/348/351: a row a connection ``{more, a}``, read in the record's cycle (its
        address the record's connection) and written in the next (the arrival's), the row
        written in the cycle before forwarded; the counts ``cur`` and ``mc`` kept."""
        C, nb = self.conns, self.nbits
        K = 2 if self.wrong == "epoch" else EPOCH_BITS
        kmask = (1 << K) - 1
        # MR-ENG-347: every row starts two intervals old
        m.submodules.rows = rows = memory.Memory(shape=K + 1, depth=C, init=[(kmask - 1) << 1] * C)
        rd, wr = rows.read_port(), rows.write_port()
        # MR-ENG-354: a memory keeps its rows through a reset; the interval number does not
        # reset but moves two on, so that every row is at least two intervals old
        E, stale_in = Signal(K, reset_less=True), Signal()
        rst = Const(0) if self.wrong == "reset" else ResetSignal()
        mc = Signal(nb)
        cur_r = Signal(nb)
        m.d.comb += cur.eq(cur_r)
        # MR-ENG-351: the forward: the row written in the read's cycle, to the address read
        fwd_hit, fwd_row = Signal(), Signal(K + 1)
        m.d.comb += rd.addr.eq(self.s_seen.payload.conn)
        m.d.sync += [fwd_hit.eq(wr.en & (wr.addr == rd.addr)), fwd_row.eq(wr.data)]
        row = Signal(K + 1)
        if self.wrong == "forward":
            m.d.comb += row.eq(rd.data)
        else:
            m.d.comb += row.eq(Mux(fwd_hit, fwd_row, rd.data))
        m_old, a = row[0], row[1:]
        here, carried = Signal(), Signal()
        m.d.comb += [here.eq(a == E),
                     carried.eq((a == ((E - 1) & kmask)) & m_old & ~stale_in)]
        E_next = Signal(K)
        m.d.comb += E_next.eq(Mux(valid & roll, (E + 1) & kmask, E))
        m.d.comb += [wr.en.eq(valid & ~rst), wr.addr.eq(conn), wr.data.eq(Cat(more, E_next))]
        was_more = here & m_old         # counted in mc
        # the counts' sums from their registers, chosen by the row (MR-ENG-364: no adder after
        # the memory's read)
        mc_up, mc_down, cur_up = Signal(nb), Signal(nb), Signal(nb)
        m.d.comb += [mc_up.eq(mc + 1), mc_down.eq(mc - 1), cur_up.eq(cur_r + 1)]
        with m.If(valid):
            with m.If(roll):
                # MR-ENG-348: the arrived with more due are carried (this one's bit the new):
                # (0 if stale else mc - was_more) + 1
                m.d.sync += [cur_r.eq(Mux(stale, 1, Mux(was_more, mc, mc_up))), mc.eq(more),
                             E.eq(E_next), stale_in.eq(stale)]
            with m.Else():
                m.d.comb += new.eq(~(here | carried))
                # mc + more - was_more
                m.d.sync += [cur_r.eq(Mux(new, cur_up, cur_r)),
                             mc.eq(Mux(more == was_more, mc, Mux(more, mc_up, mc_down)))]
        with m.If(rst):
            m.d.sync += E.eq(E + 2)


def _const_product(x, k):
    """``x`` times the constant ``k`` as shifts and adds (``k``'s signed digits, a tree)."""
    terms, i = [], 0
    while k:
        if k & 1:
            d = 2 - (k & 3)         # the non-adjacent form's digit: 1 or -1
            terms.append((d, i))
            k -= d
        k >>= 1
        i += 1
    pos = [x << i for d, i in terms if d > 0]
    neg = [x << i for d, i in terms if d < 0]

    def tree(vs):
        while len(vs) > 1:
            vs = [a + b for a, b in zip(vs[::2], vs[1::2])] + vs[len(vs) & ~1:]
        return vs[0]
    return tree(pos) - tree(neg) if neg else tree(pos)


def _limb_product(m, a, b, width, limb=17):
    """MR-ENG-363: ``a`` x ``b`` (``width`` bits) a cycle after its operands: the products of
    their ``limb``-bit limbs (each a multiplier of the device's) in registers, and their sum
    (a tree of adds) the next cycle; returns the sum."""
    parts = []
    for i in range(0, len(a), limb):
        for j in range(0, len(b), limb):
            x, y = a[i:i + limb], b[j:j + limb]
            pp = Signal(len(x) + len(y), name=f"pp_{a.name}_{i}_{j}")
            m.d.sync += pp.eq(x * y)
            parts.append(pp << (i + j))
    while len(parts) > 1:
        parts = [x + y for x, y in zip(parts[::2], parts[1::2])] + parts[len(parts) & ~1:]
    out = Signal(width, name=f"prod_{a.name}")
    m.d.comb += out.eq(parts[0])
    return out


def rx_hint_small(width=64):
    """MR-ENG-344: the block ``rx_hint``: the small engine's 2 connections (``width`` unused)."""
    return RxHint(2)


def rx_hint_mem_small(width=64):
    """MR-ENG-357: the block ``rx_hint_mem``: the memory form at 16 connections (``width``
    unused)."""
    return RxHint(MEM_SMALL, form="memory")


def rx_hint_4096(width=64):
    """MR-ENG-344, MR-ENG-346: the block ``rx_hint_4096``: 4,096 connections, the memory form
    (``width`` unused)."""
    return RxHint(4096)
