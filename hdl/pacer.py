"""Pacing, the per-frame part (docs/spec/hw-cwnd.md section 7, MR-CW-093, MR-CW-097/098): per
connection the gap of a full-MTU frame, kept (computed when the connection's rate is written),
and the next send time; a frame offered takes its turn when ``now`` is not before the next send
time (or forced), which then moves a gap on from max(next, now) (MR-CC-006). The rest of the
pacing (the re-timings of a rate change, the blind release, the phase, the samples' stretch,
MR-CW-086..092) is the other owners' (MR-CW-082): they write the next send time through
``s_write``.

=============  ====  =========================================================================
port           dir   meaning
=============  ====  =========================================================================
``s_write``    in    stream ``{conn, rate (19), set_time, time (32)}``: the connection's rate
                     in Mb/s (0: the line rate) and, with ``set_time``, its next send time
``s_frame``    in    stream ``{conn, now (32), force, wl (13)}``: a frame of the connection of
                     ``wl`` wire bytes offered at ``now`` (``force``: it goes whatever the time)
``m_turn``     out   stream ``{conn, ok, pace_until (32)}``: one per frame taken, in order:
                     whether it took the turn and the next send time after it
``mtu_wl``     in    13 bits, a full-MTU data frame's wire length (static, MR-CW-097)
``line_mbps``  in    19 bits, the line rate in Mb/s (static)
=============  ====  =========================================================================

One record at a time: idle, the block takes a write (first) or a frame. A frame: read the
connection's records (synchronous ``lib.memory`` read ports); LOAD (registered); CMP (the
wrapping compare of ``now`` with the next send time, MR-ENG-050, and the later of the two);
ADD_LO and ADD_HI (the later time plus the gap, low half with its carry then the high half,
MR-CW-032's form); FIN (the next send time written, the turn registered); the turn held on
``m_turn`` until taken (``LAT_FRAME`` = 6). A write: CLAMP (the rate's compares with the line
rate), RATE (MR-SEC-151's clamp); ``GAP_BITS`` = 26 cycles of a restoring divider of
(``mtu_wl`` + 24) x 8,000 by the rate (one quotient bit a cycle); GAP (the quotient rounded up);
WFIN (the records written). The dividend is static: three register stages from ``mtu_wl``.
A frame of a paced connection whose ``wl`` is not ``mtu_wl`` (MR-CW-100/101) takes the write's
divider after LOAD: SDVD (its dividend (``wl`` + 24) x 8,000, the adds registered as it is taken
and in LOAD; the connection's clamped rate, kept in the gap record), the 26 division cycles,
GAP, then CMP..FIN with that gap (``LAT_SHORT`` = 34).
Adds and compares are ``hdl.cwnd._CwArith``'s (prefix trees in the generic flow, ``+`` where
the target has a carry chain).
"""
from __future__ import annotations

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import memory, stream, wiring
from amaranth.lib.wiring import In, Out

from metaroce.models import pacer as model
from metaroce.models import protocol as P

from .cwnd import _CwArith

__all__ = ["PacerFrame", "pacer_frame_small"]

_LO = 16                  # the low half of the 32-bit add (MR-CW-032's form)


class PacerFrame(wiring.Component):
    """MR-CW-093, MR-CW-097: the per-frame part of pacing for ``conns`` connections (a power of
    two, 1..65,536). ``carry_chain`` (None: the elaborating platform's) picks the adds' form.
    ``wrong`` (negative controls only): ``"floor"`` rounds the gap down, ``"plain_max"`` takes
    max(next, now) as plain integers (not on the wrapping counter), ``"kept_gap"`` gives every
    frame the kept gap (no short frame's division, MR-CW-103)."""

    def __init__(self, conns=model.FRAME_SMALL["conns"], *, carry_chain=None, wrong=None):
        self.lay = model.frame_layouts(conns)
        self.conns = conns
        self.carry_chain = carry_chain
        self.wrong = wrong
        super().__init__({
            "s_write": In(stream.Signature(self.lay["write"])),
            "s_frame": In(stream.Signature(self.lay["frame"])),
            "m_turn": Out(stream.Signature(self.lay["turn"])),
            "mtu_wl": In(model.WL_BITS),
            "line_mbps": In(model.RATE_BITS),
        })

    def elaborate(self, platform):
        m = Module()
        A = _CwArith(m, getattr(platform, "carry_chain", False) if self.carry_chain is None
                     else self.carry_chain)
        lay, GB, RB, TB = self.lay, model.GAP_BITS, model.RATE_BITS, P.TIME_BITS
        NB = GB                         # the dividend: (8,191 + 24) x 8,000 < 2^26

        m.submodules.time_mem = time_mem = memory.Memory(shape=TB, depth=self.conns, init=[])
        m.submodules.gap_mem = gap_mem = memory.Memory(shape=lay["gap_rec"], depth=self.conns,
                                                       init=[])
        t_rd, g_rd = time_mem.read_port(), gap_mem.read_port()
        t_wr, g_wr = time_mem.write_port(), gap_mem.write_port()

        # the static dividend (mtu_wl + 24) x 8,000 = x << 13 - (x << 7 + x << 6), three stages
        nb = Signal(model.WL_BITS + 1)
        n192 = Signal(model.WL_BITS + 9)
        dividend = Signal(NB)
        m.d.sync += [nb.eq(A.add(Cat(self.mtu_wl, Const(0, 1)), P.WIRE_OVERHEAD, name="nb")),
                     n192.eq(A.add(Cat(Const(0, 6), nb, Const(0, 2)), Cat(Const(0, 7), nb,
                                                                          Const(0, 1)),
                                   name="n192")),
                     dividend.eq(A.sub(Cat(Const(0, 13), nb)[:NB], n192, name="n8000"))]

        # MR-CW-101: a short frame's dividend (wl + 24) x 8,000, the same form in two stages
        # from the frame's wl (nb_f registered as the frame is taken, n192_f in LOAD)
        nb_f = Signal(model.WL_BITS + 1)
        nb_hi = Signal(model.WL_BITS + 1)
        n192_f = Signal(model.WL_BITS + 9)
        sf = Signal()                   # the frame in hand is short, of a paced connection

        wr = Signal(lay["write"])
        fr = Signal(lay["frame"])
        rate = Signal(RB)
        paced = Signal()
        hi = Signal()                   # the rate is the line rate (0, or above it)
        x = Signal(NB)                  # the dividend, shifted out MSB first
        rem = Signal(RB + 1)
        quot = Signal(GB)
        count = Signal(range(GB + 1))
        gap = Signal(GB)
        pu = Signal(TB)                 # the record as read (LOAD)
        g = Signal(lay["gap_rec"])
        late = Signal()                 # now before the next send time (CMP)
        base = Signal(TB)               # the later of the two
        lo = Signal(_LO + 1)
        new = Signal(TB)
        out = Signal(lay["turn"])
        # MR-CW-101: the port's wl + 24 registered every cycle (no enable: no state decode before
        # the add), so in LOAD it is the taken frame's; LOAD keeps it (nb_hi) with the sum of
        # its shifts, for SDVD
        m.d.sync += nb_f.eq(A.add(Cat(self.s_frame.payload.wl, Const(0, 1)), P.WIRE_OVERHEAD,
                                  name="nb_f"))
        m.d.comb += [self.m_turn.payload.eq(out), t_rd.addr.eq(self.s_frame.payload.conn),
                     g_rd.addr.eq(self.s_frame.payload.conn)]

        with m.FSM():
            with m.State("IDLE"):
                m.d.comb += [self.s_write.ready.eq(1),
                             self.s_frame.ready.eq(~self.s_write.valid)]
                with m.If(self.s_write.valid):
                    m.d.sync += wr.eq(self.s_write.payload)
                    m.next = "CLAMP"
                with m.Elif(self.s_frame.valid):
                    m.d.sync += fr.eq(self.s_frame.payload)
                    m.next = "LOAD"
            # -- a write: the kept gap ---------------------------------------------------
            with m.State("CLAMP"):
                h, line = wr.rate, self.line_mbps
                # MR-SEC-151: 0 is the line rate, any other rate within [1, line] (a rate
                # field is at least 1 when not 0); paced below the line rate. The compares
                # here, the clamp's mux in RATE (for depth)
                m.d.sync += [hi.eq((h == 0) | A.gt(h, line, name="hi")),
                             paced.eq((h != 0) & A.gt(line, h, name="paced"))]
                m.next = "RATE"
            with m.State("RATE"):
                m.d.sync += [rate.eq(Mux(hi, self.line_mbps, wr.rate)), x.eq(dividend),
                             rem.eq(0), quot.eq(0), count.eq(GB)]
                m.next = "DIV"
            with m.State("DIV"):
                shifted = Cat(x[NB - 1], rem[:RB])
                diff = A.sub(Cat(shifted, Const(0, 1)), rate, name="ddiff")   # RB + 2 bits
                ge = ~diff[RB + 1]
                m.d.sync += [rem.eq(Mux(ge, diff[:RB + 1], shifted)),
                             quot.eq(Cat(ge, quot[:GB - 1])),
                             x.eq(Cat(Const(0, 1), x[:NB - 1])), count.eq(count - 1)]
                with m.If(count == 1):
                    m.next = "GAP"
            with m.State("GAP"):
                up = Const(0, 1) if self.wrong == "floor" else (rem != 0)
                ceil = A.add(quot, up, name="ceil")
                with m.If(sf):
                    # MR-CW-101: a short frame's own gap, then the frame's path
                    m.d.sync += [g.gap.eq(ceil), sf.eq(0)]
                    m.next = "CMP"
                with m.Else():
                    m.d.sync += gap.eq(ceil)
                    m.next = "WFIN"
            with m.State("WFIN"):
                m.d.comb += [g_wr.addr.eq(wr.conn), g_wr.data.gap.eq(gap),
                             g_wr.data.paced.eq(paced), g_wr.data.rate.eq(rate), g_wr.en.eq(1),
                             t_wr.addr.eq(wr.conn), t_wr.data.eq(wr.time),
                             t_wr.en.eq(wr.set_time)]
                m.next = "IDLE"
            # -- a frame: the turn ------------------------------------------------------------
            with m.State("LOAD"):
                m.d.sync += [pu.eq(t_rd.data), g.eq(g_rd.data), nb_hi.eq(nb_f),
                             n192_f.eq(A.add(Cat(Const(0, 6), nb_f, Const(0, 2)),
                                             Cat(Const(0, 7), nb_f, Const(0, 1)), name="n192_f"))]
                # MR-CW-101: a paced connection's frame of another wire length than mtu_wl takes
                # the division (a connection not paced: its time does not move)
                short = (Const(0, 1) if self.wrong == "kept_gap"
                         else g_rd.data.paced & (fr.wl != self.mtu_wl))
                m.d.sync += sf.eq(short)
                with m.If(short):
                    m.next = "SDVD"
                with m.Else():
                    m.next = "CMP"
            with m.State("SDVD"):
                m.d.sync += [x.eq(A.sub(Cat(Const(0, 13), nb_hi)[:NB], n192_f, name="n8000_f")),
                             rate.eq(g.rate), rem.eq(0), quot.eq(0), count.eq(GB)]
                m.next = "DIV"
            with m.State("CMP"):
                if self.wrong == "plain_max":
                    lt = A.gt(pu, fr.now, name="plt")
                else:
                    lt = A.time_lt(fr.now, pu, name="tlt")
                m.d.sync += [late.eq(lt), base.eq(Mux(lt, pu, fr.now))]
                m.next = "ADD_LO"
            with m.State("ADD_LO"):
                m.d.sync += lo.eq(A.add_lo(base, g.gap, _LO, name="pu_lo"))
                m.next = "ADD_HI"
            with m.State("ADD_HI"):
                m.d.sync += new.eq(A.add_hi(base, g.gap, _LO, lo, name="pu_hi"))
                m.next = "FIN"
            with m.State("FIN"):
                ok = fr.force | ~late
                step = ok & g.paced
                m.d.comb += [t_wr.addr.eq(fr.conn), t_wr.data.eq(new), t_wr.en.eq(step)]
                m.d.sync += [out.conn.eq(fr.conn), out.ok.eq(ok),
                             out.pace_until.eq(Mux(step, new, pu))]
                m.next = "OUT"
            with m.State("OUT"):
                m.d.comb += self.m_turn.valid.eq(1)
                with m.If(self.m_turn.ready):
                    m.next = "IDLE"
        return m


def pacer_frame_small(width=64):
    """MR-CW-097: the registered instance (no data path: ``width`` changes nothing)."""
    return PacerFrame(**model.FRAME_SMALL)
