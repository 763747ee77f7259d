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

Per connection three bits (seen in the current interval, carried from the last one, more of its
message due); the counts, the interval's start and length are registers. One restoring divider
(one quotient bit a cycle, ``DIV_CYCLES`` = 40) computes in turn the interval's length after an
interval ends and the hint after its inputs change (MR-ENG-333).
"""
from __future__ import annotations

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ..models import protocol as P
from ..models.records import TIME_BITS
from ..models.rx_hint import DIV_CYCLES, HINT_BITS, HINT_WRONG, NUM_BITS, PKT_BITS, seen_layout

__all__ = ["RxHint", "seen_signature", "rx_hint_small", "rx_hint_4096"]

_TIME_MAX = (1 << TIME_BITS) - 1


def seen_signature(conns):
    """MR-ENG-328: the arrivals' stream, from its producer's side: ``valid`` and ``payload``
    only (the block takes one every cycle: no ``ready``)."""
    return wiring.Signature({"valid": Out(1), "payload": Out(seen_layout(conns))})


class RxHint(wiring.Component):
    """MR-ENG-328..334 (``wrong``: MR-ENG-336's negative controls)."""

    def __init__(self, conns, *, wrong=None):
        if conns < 1:
            raise ValueError("conns must be at least 1")
        if wrong not in HINT_WRONG:
            raise ValueError(f"wrong must be one of {HINT_WRONG}")
        self.conns, self.wrong = conns, wrong
        self.nbits = conns.bit_length()         # 0..conns
        super().__init__({
            "s_seen": In(seen_signature(conns)),
            "now": In(TIME_BITS), "line_mbps": In(HINT_BITS), "share_ns": In(TIME_BITS),
            "mtu": In(13), "hint": Out(HINT_BITS), "senders": Out(self.nbits)})

    def elaborate(self, platform):
        m = Module()
        C, nb = self.conns, self.nbits
        seen, carry, more = Signal(C), Signal(C), Signal(C)
        prev = Signal(nb)
        epoch = Signal(TIME_BITS)
        iv_extra = Signal(TIME_BITS)
        pkts, ce = Signal(PKT_BITS), Signal(PKT_BITS)
        f_pkts, f_ce = Signal(PKT_BITS), Signal(PKT_BITS)
        iv_dirty, hint_dirty = Signal(), Signal()
        hint = Signal(HINT_BITS)

        def popcount(v):
            # a balanced adder tree (a chain of 4,096 terms is too deep to elaborate)
            terms = [v[i] for i in range(C)]
            while len(terms) > 1:
                terms = [a + b for a, b in zip(terms[::2], terms[1::2])] + terms[len(terms) & ~1:]
            return terms[0]

        cur = Signal(nb)
        n = Signal(nb)
        m.d.comb += cur.eq(popcount(seen))
        if self.wrong == "count":
            m.d.comb += n.eq(cur)
        else:           # MR-ENG-329: the larger of the two intervals' counts
            m.d.comb += n.eq(Mux(prev > cur, prev, cur))
        m.d.comb += [self.hint.eq(hint), self.senders.eq(n)]

        # -- the divider (MR-ENG-333): num / den, one quotient bit a cycle
        dw = max(HINT_BITS, 5 + PKT_BITS + nb)     # 25 x pkts x N
        num, den, rem = Signal(NUM_BITS), Signal(dw), Signal(dw + 1)
        cnt = Signal(range(DIV_CYCLES + 1))
        job_iv = Signal()           # the running job: the interval (1) or the hint (0)
        job_zero = Signal()         # the hint job's N <= 1: the hint is 0
        rem2 = Signal(dw + 2)
        take = Signal()
        m.d.comb += [rem2.eq(Cat(num[-1], rem)), take.eq(rem2 >= den)]
        q_next = Cat(take, num[:-1])
        start_iv, start_hint = Signal(), Signal()
        with m.If(cnt != 0):
            m.d.sync += [cnt.eq(cnt - 1), num.eq(q_next), rem.eq(Mux(take, rem2 - den, rem2))]
            with m.If(cnt == 1):
                with m.If(job_iv):
                    m.d.sync += iv_extra.eq(Mux(q_next > _TIME_MAX, _TIME_MAX, q_next))
                with m.Else():
                    m.d.sync += hint.eq(Mux(job_zero, 0, Mux(q_next == 0, P.MIN_RATE_MBPS, q_next)))
        with m.Elif(iv_dirty):
            m.d.comb += start_iv.eq(1)
            # MR-ENG-331: 16,000 x mtu x prev // line_mbps (two MTU packet times per sender)
            m.d.sync += [num.eq(self.mtu * prev * 16_000), den.eq(self.line_mbps),
                         rem.eq(0), cnt.eq(DIV_CYCLES), job_iv.eq(1)]
        with m.Elif(hint_dirty):
            m.d.comb += start_hint.eq(1)
            # MR-ENG-329: line x (25 p - 2 ce) // (25 p N), p at least 1
            p = Mux(f_pkts == 0, 1, f_pkts)
            c = Const(0) if self.wrong == "drain" else f_ce
            m.d.sync += [num.eq(self.line_mbps * (p * P.DRAIN_DEN - c * P.DRAIN_NUM)),
                         den.eq(p * P.DRAIN_DEN * n), rem.eq(0), cnt.eq(DIV_CYCLES),
                         job_iv.eq(0), job_zero.eq((n <= 1) | (self.line_mbps == 0))]

        # -- the arrivals (MR-ENG-330..332)
        s = self.s_seen
        set_iv, set_hint = Signal(), Signal()
        bit = Signal(C)
        m.d.comb += bit.eq(Const(1, C) << s.payload.conn)
        more_now = Signal(C)
        m.d.comb += more_now.eq(Mux(s.payload.more, more | bit, more & ~bit))
        t = Signal(TIME_BITS)
        iv = Signal(TIME_BITS)
        m.d.comb += [t.eq(self.now - epoch),
                     iv.eq(Mux(self.share_ns > iv_extra, self.share_ns, iv_extra))]
        roll, stale = Signal(), Signal()
        m.d.comb += [roll.eq(t >= iv), stale.eq(t >= iv * 2)]
        seen1, carry1 = Signal(C), Signal(C)
        with m.If(s.valid & (s.payload.conn < C)):
            m.d.comb += [seen1.eq(seen), carry1.eq(carry)]
            with m.If(roll):
                m.d.comb += [set_iv.eq(1), set_hint.eq(1)]
                m.d.sync += [epoch.eq(self.now), prev.eq(Mux(stale, 0, cur)),
                             f_pkts.eq(Mux(stale, 0, pkts)), f_ce.eq(Mux(stale, 0, ce))]
                # MR-CC-026: the senders with more due are carried into the next interval once
                m.d.comb += seen1.eq(Mux(stale, 0, seen & ~carry & more_now))
                m.d.comb += carry1.eq(seen1)
            with m.If((seen1 & bit) == 0):
                m.d.sync += [seen.eq(seen1 | bit), carry.eq(carry1)]
                m.d.comb += set_hint.eq(1)
            with m.Else():
                m.d.sync += [seen.eq(seen1), carry.eq(carry1 & ~bit)]
            m.d.sync += more.eq(more_now)
            pk0 = Mux(roll, 0, pkts)
            ce0 = Mux(roll, 0, ce)
            with m.If(pk0 != (1 << PKT_BITS) - 1):      # MR-ENG-332: saturating, CE with it
                m.d.sync += [pkts.eq(pk0 + 1), ce.eq(ce0 + s.payload.ce)]
            with m.Else():
                m.d.sync += [pkts.eq(pk0), ce.eq(ce0)]
        m.d.sync += [iv_dirty.eq((iv_dirty & ~start_iv) | set_iv),
                     hint_dirty.eq((hint_dirty & ~start_hint) | set_hint)]
        return m


def rx_hint_small(width=64):
    """MR-ENG-344: the block ``rx_hint``: the small engine's 2 connections (``width`` unused)."""
    return RxHint(2)


def rx_hint_4096(width=64):
    """MR-ENG-344: the block ``rx_hint_4096``: 4,096 connections (``width`` unused)."""
    return RxHint(4096)
