"""Congestion window block, first slice (docs/spec/hw-cwnd.md, MR-CW-*): the per-path window
table and its update on ACK events (MR-CC-002/003/011/013/018), with setup writes.

One record at a time (MR-CW-030): idle, the block takes a setup write (first) or an ACK event
and reads its connection's and path's records (synchronous ``lib.memory`` read ports, their
data registered as read: LOAD); an ACK event then takes a cycle for the accumulators (ACC), three
for the products (PROD: carry-save rows; PROD2/PROD3: their sums in two halves, MR-CW-032),
three for the coupled cut (CUT1..3), ``QUOT_BITS / div_bits`` for the increase's restoring
division (DIV, ``div_bits`` quotient bits per cycle, 2 by default), two for the increase
(GROW1/2), three for the cut debt (DEBT1..3) and one for the writes of both records (FIN): one
add, compare or product step a cycle, in the target's form (MR-CW-032). The update is then
held on ``m_update`` until taken.
The layouts and latencies are the cycle model's (models/cwnd.py).

``Cwnd(..., hints=True)`` (MR-CW-060..066): the second slice's per-event part: the ACK's rate
hint, the band (the unit ``CwndBand`` or the one kept in the connection record), the
acknowledged window clamped to the path cap; hint changes refused and refills reported for the
control path, which writes the moved windows through the setup port (move writes).

``Cwnd(..., verdicts=True)`` (MR-CW-106..112): the path verdicts' port ``s_path`` (the
retransmit unit's KEEP / REROUTE / SUSPECT / RETIRE and the scheduler's restore), taken like a
setup write; a rerouted path's ``collapsed`` bit and the connection's initial share, which the
path's next clean ACK raises its window to (two more cycles for that event).
"""
from __future__ import annotations

from types import SimpleNamespace

from amaranth.hdl import Cat, Const, Module, Mux, Signal, Value, signed
from amaranth.lib import memory, stream, wiring
from amaranth.lib.wiring import In, Out

from metaroce.models import cwnd as model
from metaroce.models import protocol as P

from .arith import _Arith, _ext, _named

__all__ = ["Cwnd", "cwnd_small", "cwnd_hinted_small", "cwnd_verdicts_small", "CwndBand", "cwnd_band"]


def _time_lt(a, b):
    """MR-ENG-050: ``a`` strictly before ``b`` on the wrapping 32-bit ns counter."""
    d = (b - a)[:P.TIME_BITS]
    return (d != 0) & ~d[P.TIME_BITS - 1]


def _min(a, b):
    return Mux(a < b, a, b)


def _max(a, b):
    return Mux(a > b, a, b)


class _Unconditional:
    """MR-CW-116: a module's ``d.comb`` stand-in that keeps the statements for the module to
    add outside any ``If`` or FSM state: a step of an add or compare named inside a state is
    otherwise zero in the other states, the state's decode in front of every tree (with a
    constant operand, ``mtu`` in the TX, a ROM of the state)."""

    def __init__(self):
        self.stmts = []
        self.d = self

    @property
    def comb(self):
        return self

    @comb.setter
    def comb(self, value):
        assert value is self

    def __iadd__(self, stmts):
        self.stmts += stmts if isinstance(stmts, (list, tuple)) else [stmts]
        return self


class _CwArith(_Arith):
    """MR-CW-032: the block's adds, compares and products in the form of the target (MR-TXS-038's
    ``_Arith``: prefix trees in the generic flow, ``+`` where the target has a carry chain)."""

    def min(self, a, b, name="min"):
        return Mux(self.gt(a, b, name), b, a)

    def max(self, a, b, name="max"):
        return Mux(self.gt(a, b, name), a, b)

    def lt(self, a, b, name="lt"):
        return self.gt(b, a, name)

    def pos_sub(self, a, b, name="psub"):
        """``max(a - b, 0)``: the subtraction's borrow is the compare (one tree)."""
        n = max(len(a), len(b))
        d = self.sub(Cat(_ext(a, n), Const(0, 1)), _ext(b, n), name)
        return Mux(d[n], 0, d[:n])

    def sat_add(self, a, b, top, name="sadd"):
        """``min(a + b, 2^len(a) - 1)`` for ``top`` = 2^len(a) - 1: the carry out saturates."""
        n = len(a)
        s = self.add(Cat(a, Const(0, 1)), b, name=name)
        return Mux(s[n], top, s[:n])

    def time_lt(self, a, b, name="tlt"):
        """MR-ENG-050's ``a`` strictly before ``b``: the sign of ``b - a`` (its top bit: the top
        bits and the compare of the bits below, whose carry it is) and the inequality side by
        side: no 32-bit sum."""
        t = P.TIME_BITS - 1
        sign = a[t] ^ b[t] ^ self.gt(a[:t], b[:t], name)
        return (a != b) & ~sign

    def add_lo(self, a, b, k, name="add_lo"):
        """MR-CW-032: the low ``k`` bits of ``a + b`` and their carry out (``k + 1`` bits): the
        first cycle of a wide add, the second :meth:`add_hi`."""
        return self.add(Cat(_ext(a, k), Const(0, 1)), _ext(b, k), name=name)

    def add_hi(self, a, b, k, lo, name="add_hi"):
        """The bits from ``k`` up of ``a + b`` (``len(a)`` bits in all), from :meth:`add_lo`'s
        ``lo`` registered: the high parts added with its carry, ``lo``'s sum below them."""
        n = len(a)
        hi = self.add_c(a[k:], _ext(Value.cast(b)[k:], n - k), lo[k], name=name)
        return Cat(lo[:k], hi)

    def product(self, a, b, name="mul"):
        """``a x b`` as two rows whose sum is the product (MR-CW-032: registered, added the
        next cycle): with a carry chain (and the target's multipliers) the product and 0; else
        the partial products reduced by 3:2 compressors, one LUT level each."""
        n = len(a) + len(b)
        if self.carry_chain:
            return _named(self.m, a * b, name), Const(0, n)
        rows = [_ext(Cat(Const(0, i), Mux(b[i], a, 0)), n) for i in range(len(b))]
        k = 0
        while len(rows) > 2:
            nxt = []
            for j in range(0, len(rows) - 2, 3):
                x, y, z = rows[j:j + 3]
                nxt.append(_named(self.m, x ^ y ^ z, f"{name}_s{k}_{j}"))
                nxt.append(_named(self.m, Cat(Const(0, 1), ((x & y) | (x & z) | (y & z))[:n - 1]),
                                  f"{name}_c{k}_{j}"))
            nxt += rows[len(rows) - len(rows) % 3:]
            rows, k = nxt, k + 1
        return rows[0], rows[1]


class Cwnd(wiring.Component):
    """MR-CW-001..005: ``s_ack`` (ACK events), ``s_setup`` (setup writes), ``m_update`` (one
    update per record), and the configuration inputs ``mtu``, ``beta_q``, ``cap`` (static while
    a record is in flight). ``hints`` (MR-CW-060..064): the hinted block: the ACK's rate hint,
    the band unit (MR-CW-059) per hinted event, the acknowledged window clamped to the path
    cap, a hint change refused (``move``), a due refill reported (``refill``), move writes;
    ``line_mbps`` and ``base_rtt_ns`` join the configuration. ``verdicts`` (MR-CW-106..112):
    the path verdicts' port ``s_path`` (not with ``hints``: not built); ``share_out``
    (MR-CW-118..120, with ``verdicts``): a suspected or retired path's window shared out to
    the verdict's healthy paths (MR-CW-111), one update per healthy path after the path's."""

    def __init__(self, width=64, conns=model.SMALL["conns"], paths=model.SMALL["paths"],
                 div_bits=model.DIV_BITS, hints=False, carry_chain=None, verdicts=False,
                 share_out=False, band_client=False):
        if div_bits not in (1, 2):
            self._MustUse__silence = True       # never elaborated: no warning for it
            raise ValueError(f"div_bits={div_bits}: 1 or 2 quotient bits per cycle")
        if verdicts and hints:
            self._MustUse__silence = True
            raise ValueError("verdicts with hints: not built (MR-CW-106)")
        if share_out and not verdicts:
            self._MustUse__silence = True
            raise ValueError("share_out needs verdicts (MR-CW-118)")
        if band_client and not hints:
            self._MustUse__silence = True
            raise ValueError("band_client needs hints (MR-CW-145)")
        self.band_client = band_client
        self.share_out = share_out
        self.div_bits = div_bits
        self.hints = hints
        self.verdicts = verdicts
        self.carry_chain = carry_chain          # MR-CW-032: None = the platform's
        self.lay = lay = model.layouts(conns, paths, hints=hints, verdicts=verdicts)
        self.conns, self.paths = conns, paths
        ports = {
            "s_ack": In(stream.Signature(lay.ack)),
            "s_setup": In(stream.Signature(lay.setup)),
            "m_update": Out(stream.Signature(lay.update)),
            "mtu": In(model.MTU_BITS),
            "beta_q": In(model.BETA_BITS),
            "cap": In(model.WIN_BITS),
        }
        if hints:
            ports.update(line_mbps=In(model.RATE_BITS), base_rtt_ns=In(model.RTT_BITS))
        if band_client:
            # MR-CW-145: a second client of the band unit (the control path's)
            blay = model.band_layouts()
            ports.update(s_band_req=In(stream.Signature(blay.req)),
                         m_band_resp=Out(stream.Signature(blay.band)))
        if verdicts:
            ports["s_path"] = In(stream.Signature(lay.verdict))
        super().__init__(ports)

    def elaborate(self, platform):
        m = Module()
        lay = self.lay
        QB = model.QUOT_BITS
        WB = model.WIN_BITS
        sb = lay.sum_bits
        # MR-CW-032: every add, compare and product in the target's form; MR-CW-116: their
        # named steps assigned outside the FSM (not gated by its state)
        steps = _Unconditional()
        A = _CwArith(steps, getattr(platform, "carry_chain", False) if self.carry_chain is None
                     else self.carry_chain)
        m.submodules.conn_mem = conn_mem = memory.Memory(shape=lay.conn_rec, depth=self.conns,
                                                         init=[])
        m.submodules.path_mem = path_mem = memory.Memory(shape=lay.path_rec,
                                                         depth=self.conns * self.paths, init=[])
        conn_rd, conn_wr = conn_mem.read_port(), conn_mem.write_port()
        path_rd, path_wr = path_mem.read_port(), path_mem.write_port()
        cr, pr = conn_rd.data, path_rd.data

        ev = Signal(lay.ack)
        su = Signal(lay.setup)
        pb = lay.path_bits if self.paths > 1 else 0

        def path_addr(conn, path):
            return Cat(path[:pb], conn) if pb else conn

        # MR-CW-010/011: LOAD (the records as read, the event's CE count), ACC
        crec = Signal(lay.conn_rec)
        prec = Signal(lay.path_rec)
        w = Signal(sb)                          # max(sum of active windows, MTU)
        ce = Signal(model.PKTS_BITS)
        ce_acc = Signal(model.ACC_BITS)
        ack_acc = Signal(model.ACC_BITS)
        end = Signal()
        epoch_due = Signal()                    # now is not before cut_end
        # PROD: the products as two rows each (MR-CW-032); PROD2: their sums
        BM = model.BETA_BITS + model.MTU_BITS
        bm_s, bm_c, beta_mtu = Signal(BM), Signal(BM), Signal(BM)
        bm_lo = Signal(BM // 2 + 1)
        bm_s2, bm_c2 = Signal(BM), Signal(BM)
        WP = model.BETA_BITS + model.MTU_BITS + model.ACC_BITS
        want_s, want_c = Signal(WP), Signal(WP)
        left_s, left_c = Signal(model.BETA_BITS + sb), Signal(model.BETA_BITS + sb)
        DW = model.MTU_BITS + model.BYTES_BITS
        div_s, div_c = Signal(DW), Signal(DW)
        # MR-CW-032: the wide sums in two cycles (the low part and its carry first)
        KW, KL, KD, KT = P.Q, P.Q + 2, DW // 2, P.TIME_BITS // 2
        want_lo, left_lo = Signal(KW + 1), Signal(KL + 1)
        div_lo, t_lo, d3_lo = Signal(KD + 1), Signal(KT + 1), Signal(sb // 2 + 1)
        want0 = Signal(WP - P.Q)
        left_new = Signal(sb)
        dividend = Signal(DW)
        divisor = Signal(sb)
        div3 = Signal(sb + 2)                   # 3 x the divisor (two quotient bits a cycle)
        t_end = Signal(P.TIME_BITS)             # now + srtt
        inc_ok = Signal()                       # the increase, unless the cut moved the window
        # MR-CW-013: CUT1..3
        cwnd1 = Signal(WB)
        cut_end = Signal(P.TIME_BITS)
        cut_left = Signal(sb)
        cut_debt = Signal(sb)
        debt_sum = Signal(sb + 1)
        next_dec = Signal(P.TIME_BITS)
        inc = Signal()
        # MR-CW-031: the restoring divider
        rem = Signal(sb + 1)
        quot = Signal(QB)
        sat = Signal()
        count = Signal(range(QB + 1))
        # CUT2/CUT3: the window's part of the cut, the rest a debt
        want = Signal(sb)
        cutting = Signal()
        can = Signal(WB)                        # what the window can give: cwnd - floor, >= 0
        cwnd_fl = Signal(WB)                    # the window less all it can give
        take_cut = Signal(WB)
        rest = Signal(sb)                       # MR-CW-013: the cut the window cannot take
        wbase = Signal(sb)                      # wsum without this path's old window
        # GROW1/GROW2: the window after the increase
        grown = Signal(WB + 2)
        cwnd2 = Signal(WB)
        # DEBT1..3: the debt from the window, W
        give = Signal(WB)
        wc2 = Signal(sb)                        # wbase + cwnd2
        take_debt = Signal(WB)
        cwnd3 = Signal(WB)
        debt2 = Signal(sb)
        wsum2 = Signal(sb)

        upd = Signal(lay.update)
        m.d.comb += self.m_update.payload.eq(upd)
        H = self.hints
        V = self.verdicts
        floor_ev = crec.floor                   # the floor of an ACK event's cut and debt
        if V:
            # MR-CW-106..108: the verdict taken, the path's new active and collapsed bits, the
            # floor of this event (the share on a collapsed path's clean ACK), the raise
            vr = Signal(lay.verdict)
            vact = Signal()
            vcol = Signal()
            floor_ev = vflr = Signal(WB)
            vup = Signal(WB)
        S = self.share_out
        if S:
            # MR-CW-118/119: the healthy paths still to share to, their count, the divider's
            # quotient (the given window first) and remainder, the path being shared to
            NP = self.paths
            stodo = Signal(NP)
            sn = Signal(3)
            sq = Signal(WB)
            sr = Signal(3)
            scount = Signal(range(WB + 1))
            sk = Signal(range(max(NP, 2)))
            sgrown = Signal(WB + 1)
        if H:
            # MR-CW-060/061: the band unit, the event's rate and band, the path cap's excess
            m.submodules.band = band = unit = CwndBand()
            m.d.comb += [unit.line_mbps.eq(self.line_mbps), unit.base_rtt_ns.eq(self.base_rtt_ns),
                         unit.mtu.eq(self.mtu)]
            if self.band_client:
                band = _band_share(m, unit, self.s_band_req, self.m_band_resp)
            rate_r = Signal(model.RATE_BITS)
            hinted = Signal()                   # the band applies to this event
            bcap = Signal.like(band.m_band.payload.cap)
            bsum = Signal.like(band.m_band.payload.sum_floor)
            bwin = Signal(WB)                   # MR-CW-067: the connection window
            over = Signal(WB)                   # the window's excess over the path cap
            wadj = Signal(sb)                   # W without the window (active paths)
            wadj2 = Signal(sb + 1)              # wadj + cwnd2
            wend = Signal(sb + 1)               # W' of MR-CW-054
            # the request straight from registers (not gated by the state: the band's clamp of
            # the hint is two compares already)
            m.d.comb += [band.s_req.payload.hint.eq(ev.hint),
                         band.s_req.payload.n.eq(Mux(crec.n_paths == 0, 1, crec.n_paths))]
        # MR-CW-005, MR-CW-032: the configuration is static; its product is registered as two
        # rows, then summed
        bs, bc = A.product(self.beta_q, self.mtu, "beta_mtu")
        m.d.sync += [bm_s.eq(bs), bm_c.eq(bc),
                     bm_lo.eq(A.add_lo(bm_s, bm_c, BM // 2, "bm_lo")), bm_s2.eq(bm_s), bm_c2.eq(bm_c),
                     beta_mtu.eq(A.add_hi(bm_s2, bm_c2, BM // 2, bm_lo, "bm_hi"))]

        with m.FSM():
            with m.State("IDLE"):
                m.d.comb += [self.s_setup.ready.eq(1), self.s_ack.ready.eq(~self.s_setup.valid)]
                if V:
                    # MR-CW-106: a verdict after a setup write, before an ACK event
                    m.d.comb += [self.s_path.ready.eq(~self.s_setup.valid),
                                 self.s_ack.ready.eq(~self.s_setup.valid & ~self.s_path.valid)]
                sp, ap = self.s_setup.payload, self.s_ack.payload
                m.d.comb += [conn_rd.en.eq(1), path_rd.en.eq(1)]
                with m.If(self.s_setup.valid):
                    m.d.comb += [conn_rd.addr.eq(sp.conn), path_rd.addr.eq(path_addr(sp.conn, sp.path))]
                    m.d.sync += su.eq(sp)
                    m.next = "SETUP"
                if V:
                    vp = self.s_path.payload
                    with m.Elif(self.s_path.valid):
                        m.d.comb += [conn_rd.addr.eq(vp.conn),
                                     path_rd.addr.eq(path_addr(vp.conn, vp.path))]
                        m.d.sync += vr.eq(vp)
                        m.next = "VLOAD"
                with m.Else():
                    m.d.comb += [conn_rd.addr.eq(ap.conn), path_rd.addr.eq(path_addr(ap.conn, ap.path))]
                    with m.If(self.s_ack.valid):
                        m.d.sync += ev.eq(ap)
                        m.next = "LOAD"
            with m.State("SETUP"):
                # the records as read (a block RAM's output goes straight to a register)
                m.d.sync += [crec.eq(cr), prec.eq(pr)]
                m.next = "SETUP1"
            with m.State("SETUP1"):
                # MR-CW-014: a setup write: the window (at least the floor), W without the
                # slot's old window, the cut state (0 on open)
                old_on = prec.active & ~su.open & ~su.fresh
                cwnd_w = A.max(su.cwnd, su.floor, "su_max")
                opn, clear = su.open, su.open
                if H:
                    # MR-CW-062: a move write: the window as written, W follows; the records
                    # kept but the rate and (debt0) the debt
                    mv = su.move
                    old_on = prec.active & (mv | (~su.open & ~su.fresh))
                    cwnd_w = Mux(mv, su.cwnd, cwnd_w)
                    opn = su.open & ~mv
                    clear = opn | (mv & su.debt0)
                    m.d.sync += [
                        # MR-CW-066: the band kept only by a move write of the same rate
                        crec.bvalid.eq(mv & crec.bvalid & (su.rate == crec.rate)),
                        crec.rate.eq(Mux(mv, su.rate, Mux(su.open, self.line_mbps, crec.rate))),
                        crec.n_paths.eq(Mux(mv, crec.n_paths, Mux(su.open, 0, crec.n_paths)
                                            + ((su.open | su.fresh) & su.active))),
                    ]
                # W without the old window: the difference, then the choice (no mux before the
                # subtraction; an old window counts only without open)
                less = A.sub(crec.wsum, prec.cwnd, "su_less")
                if V:
                    # MR-CW-108: the initial share, at least the floor
                    m.d.sync += crec.share.eq(A.max(su.share, su.floor, "su_share"))
                m.d.sync += [
                    cwnd3.eq(cwnd_w),
                    wbase.eq(Mux(opn, 0, Mux(old_on, less, crec.wsum))),
                    crec.cut_end.eq(Mux(opn, 0, crec.cut_end)),
                    crec.cut_left.eq(Mux(opn, 0, crec.cut_left)),
                    crec.cut_debt.eq(Mux(clear, 0, crec.cut_debt)),
                ]
                m.next = "SETUP2"
            with m.State("SETUP2"):
                act = Mux(su.move, prec.active, su.active) if H else su.active
                m.d.sync += wsum2.eq(Mux(act, A.add(wbase, cwnd3, name="su_wsum"), wbase))
                m.next = "SETUP3"
            with m.State("SETUP3"):
                m.d.comb += [
                    conn_wr.addr.eq(su.conn), conn_wr.en.eq(1),
                    conn_wr.data.wsum.eq(wsum2),
                    conn_wr.data.cut_end.eq(crec.cut_end),
                    conn_wr.data.cut_left.eq(crec.cut_left),
                    conn_wr.data.cut_debt.eq(crec.cut_debt),
                    conn_wr.data.floor.eq(su.floor), conn_wr.data.multi.eq(su.multi),
                    path_wr.addr.eq(path_addr(su.conn, su.path)), path_wr.en.eq(1),
                    path_wr.data.cwnd.eq(cwnd3), path_wr.data.active.eq(su.active),
                ]
                if V:
                    m.d.comb += conn_wr.data.share.eq(crec.share)      # (collapsed 0)
                m.d.sync += [upd.conn.eq(su.conn), upd.path.eq(su.path), upd.cwnd.eq(cwnd3),
                             upd.wsum.eq(A.max(wsum2, self.mtu, "su_weff")),
                             upd.debt.eq(crec.cut_debt)]
                if H:
                    # MR-CW-062: a move write keeps the path's accumulators and window end
                    with m.If(su.move):
                        m.d.comb += [path_wr.data.ce_acc.eq(prec.ce_acc),
                                     path_wr.data.ack_acc.eq(prec.ack_acc),
                                     path_wr.data.next_dec.eq(prec.next_dec),
                                     path_wr.data.active.eq(prec.active),
                                     conn_wr.data.floor.eq(crec.floor),
                                     conn_wr.data.multi.eq(crec.multi)]
                    m.d.comb += [conn_wr.data.rate.eq(crec.rate),
                                 conn_wr.data.n_paths.eq(crec.n_paths),
                                 conn_wr.data.bvalid.eq(crec.bvalid),
                                 conn_wr.data.bcap.eq(crec.bcap), conn_wr.data.bsum.eq(crec.bsum),
                                 conn_wr.data.bwin.eq(crec.bwin)]
                    m.d.sync += [upd.rate.eq(crec.rate), upd.move.eq(0), upd.refill.eq(0),
                                 upd.cwin.eq(0)]
                m.next = "OUT"
            with m.State("LOAD"):
                # the records as read (a block RAM's output goes straight to a register); the
                # event's CE count, one per packet (MR-CW-011)
                ds, dc = A.product(ev.bytes, self.mtu, "div_mul")      # MTU x bytes
                m.d.sync += [crec.eq(cr), prec.eq(pr), ce.eq(A.min(ev.ce, ev.pkts, "ce_now")),
                             div_s.eq(ds), div_c.eq(dc)]
                m.next = "ACC"
                if V:
                    # MR-CW-108: a collapsed path's event takes RAISE1/2 first
                    m.d.sync += vflr.eq(cr.floor)
                    with m.If(pr.collapsed):
                        m.next = "RAISE1"
                if H:
                    # MR-CW-061: the event's rate (MR-SEC-151's clamp); hint 0: as unhinted
                    h = ev.hint
                    m.d.sync += [rate_r.eq(Mux(h == 0, self.line_mbps,
                                               _min(_max(h, P.MIN_RATE_MBPS), self.line_mbps))),
                                 hinted.eq(0)]
                    with m.If(h != 0):
                        m.next = "HINT"
            if H:
                with m.State("HINT"):
                    # MR-CW-066: the band kept in the record, taken unless the unit's is needed
                    m.d.sync += [bcap.eq(crec.bcap), bsum.eq(crec.bsum), bwin.eq(crec.bwin),
                                 hinted.eq(1), over.eq(A.pos_sub(prec.cwnd, crec.bcap, "over_k"))]
                    with m.If(rate_r != crec.rate):
                        # MR-CW-061 (b): a hint change: refused, nothing written; a move is due
                        m.d.sync += [upd.conn.eq(ev.conn), upd.path.eq(ev.path),
                                     upd.cwnd.eq(prec.cwnd),
                                     upd.wsum.eq(A.max(crec.wsum, self.mtu, "mv_weff")),
                                     upd.debt.eq(crec.cut_debt), upd.rate.eq(rate_r),
                                     upd.move.eq(1), upd.refill.eq(0), upd.cwin.eq(0)]
                        m.next = "OUT"
                    with m.Elif(crec.bvalid):
                        m.next = "CLAMP"
                    with m.Else():
                        m.next = "REQ"
                with m.State("REQ"):
                    # MR-CW-061 (c): the band of {hint, max(1, n_paths)} (the unit is idle); a
                    # state of its own: the request's valid is not behind the rate compare
                    m.d.comb += band.s_req.valid.eq(1)
                    m.next = "BAND"
                with m.State("BAND"):
                    m.d.comb += band.m_band.ready.eq(1)
                    b = band.m_band.payload
                    with m.If(band.m_band.valid):
                        m.d.sync += [bcap.eq(b.cap), bsum.eq(b.sum_floor),
                                     bwin.eq(b.conn_window), hinted.eq(1),
                                     over.eq(A.pos_sub(prec.cwnd, b.cap, "over_b"))]
                        m.next = "CLAMP"
                with m.State("CLAMP"):
                    # MR-CW-053's clamp: the window at most the path cap, W less the excess
                    m.d.sync += [prec.cwnd.eq(A.sub(prec.cwnd, over, "clamp_cwnd")),
                                 crec.wsum.eq(A.sub(crec.wsum, Mux(prec.active, over, 0),
                                                    "clamp_wsum"))]
                    m.next = "ACC"
            if V:
                with m.State("RAISE1"):
                    # MR-CW-108: an event with packets and no CE mark on a collapsed path: its
                    # floor is the initial share, the window raised to it (the raise first)
                    clean = (ev.pkts != 0) & (ce == 0)
                    m.d.sync += vup.eq(Mux(clean, A.pos_sub(crec.share, prec.cwnd, "raise_sub"),
                                           0))
                    with m.If(clean):
                        m.d.sync += vflr.eq(crec.share)
                    m.next = "RAISE2"
                with m.State("RAISE2"):
                    m.d.sync += [prec.cwnd.eq(A.add(prec.cwnd, vup, name="raise_add")[:WB]),
                                 crec.wsum.eq(A.add(crec.wsum, Mux(prec.active, vup, 0),
                                                    name="raise_wsum")[:sb])]
                    m.next = "ACC"
                with m.State("VLOAD"):
                    m.d.sync += [crec.eq(cr), prec.eq(pr)]
                    m.next = "VWIN"
                with m.State("VWIN"):
                    # MR-CW-107..110: the path's new window, active and collapsed bits; W
                    # without its old window
                    v = vr.verdict
                    keep = A.max(prec.cwnd[1:], crec.floor, "keep_max")
                    susp = (v == P.PATH_SUSPECT) | (v == P.PATH_RETIRE)
                    # hw-tx.md MR-TX-321: a restore with REROUTE (the scheduler's kept
                    # suspicion) one MTU and collapsed, active
                    rer = v == P.PATH_REROUTE
                    m.d.sync += [
                        cwnd3.eq(Mux(vr.restore & ~rer, crec.share,
                                     Mux(v == P.PATH_KEEP, keep,
                                         Mux(rer, self.mtu, prec.cwnd)))),
                        vact.eq(vr.restore | (prec.active & ~susp)),
                        vcol.eq(rer | (~vr.restore & prec.collapsed)),
                        wbase.eq(Mux(prec.active, A.sub(crec.wsum, prec.cwnd, "v_less"),
                                     crec.wsum)),
                    ]
                    if S:
                        # MR-CW-118: an active path leaving W shares its window to the
                        # verdict's healthy paths other than itself
                        gives = ~vr.restore & susp & prec.active
                        m.d.sync += stodo.eq(Mux(gives, Cat(*[vr.healthy[i] & (vr.path != i)
                                                              for i in range(NP)]), 0))
                    m.next = "VW"
                with m.State("VW"):
                    m.d.sync += wsum2.eq(Mux(vact, A.add(wbase, cwnd3, name="v_wsum"), wbase))
                    if S:
                        # MR-CW-119: the divider's operands: the given window, the count
                        m.d.sync += [sn.eq(sum(stodo[i] for i in range(NP))), sq.eq(prec.cwnd),
                                     sr.eq(0), scount.eq(WB)]
                    m.next = "VFIN"
                with m.State("VFIN"):
                    m.d.comb += [
                        conn_wr.addr.eq(vr.conn), conn_wr.en.eq(1), conn_wr.data.eq(crec),
                        conn_wr.data.wsum.eq(wsum2),
                        path_wr.addr.eq(path_addr(vr.conn, vr.path)), path_wr.en.eq(1),
                        path_wr.data.eq(prec), path_wr.data.cwnd.eq(cwnd3),
                        path_wr.data.active.eq(vact), path_wr.data.collapsed.eq(vcol),
                    ]
                    m.d.sync += [upd.conn.eq(vr.conn), upd.path.eq(vr.path), upd.cwnd.eq(cwnd3),
                                 upd.wsum.eq(A.max(wsum2, self.mtu, "v_weff")),
                                 upd.debt.eq(crec.cut_debt)]
                    if S:
                        m.d.sync += crec.wsum.eq(wsum2)     # W for the shares
                    m.next = "OUT"
                if S:
                    with m.State("SDIV"):
                        # MR-CW-119: the part, the given window // the count, one restoring
                        # quotient bit a cycle (the remainder below the count, at most 6)
                        sh = Cat(sq[WB - 1], sr)
                        ge = sh >= sn
                        m.d.sync += [sr.eq(Mux(ge, sh - sn, sh)[:3]),
                                     sq.eq(Cat(ge, sq[:WB - 1])), scount.eq(scount - 1)]
                        with m.If(scount == 1):
                            m.next = "SNEXT"
                    with m.State("SNEXT"):
                        # MR-CW-118: the lowest healthy path left, read
                        k = Const(0, len(sk))
                        for i in reversed(range(NP)):
                            k = Mux(stodo[i], i, k)
                        m.d.comb += [path_rd.en.eq(1), path_rd.addr.eq(path_addr(vr.conn, k))]
                        m.d.sync += [sk.eq(k), stodo.eq(stodo & (stodo - 1))]
                        m.next = "SLOAD"
                    with m.State("SLOAD"):
                        m.d.sync += prec.eq(pr)
                        m.next = "S1"
                    with m.State("S1"):
                        # MR-CW-111: the window plus the part; W without the old window
                        m.d.sync += [
                            sgrown.eq(A.add(_ext(prec.cwnd, WB + 1), sq, name="sh_add")),
                            wbase.eq(Mux(prec.active, A.sub(crec.wsum, prec.cwnd, "sh_less"),
                                         crec.wsum)),
                        ]
                        m.next = "S2"
                    with m.State("S2"):
                        m.d.sync += cwnd3.eq(A.min(sgrown, _ext(self.cap, WB + 1), "sh_min")[:WB])
                        m.next = "S3"
                    with m.State("S3"):
                        m.d.sync += wsum2.eq(Mux(prec.active, A.add(wbase, cwnd3, name="sh_wsum"),
                                                 wbase))
                        m.next = "SFIN"
                    with m.State("SFIN"):
                        m.d.comb += [
                            conn_wr.addr.eq(vr.conn), conn_wr.en.eq(1), conn_wr.data.eq(crec),
                            conn_wr.data.wsum.eq(wsum2),
                            path_wr.addr.eq(path_addr(vr.conn, sk)), path_wr.en.eq(1),
                            path_wr.data.eq(prec), path_wr.data.cwnd.eq(cwnd3),
                        ]
                        m.d.sync += [crec.wsum.eq(wsum2),
                                     upd.conn.eq(vr.conn), upd.path.eq(sk), upd.cwnd.eq(cwnd3),
                                     upd.wsum.eq(A.max(wsum2, self.mtu, "sh_weff")),
                                     upd.debt.eq(crec.cut_debt)]
                        m.next = "SOUT"
                    with m.State("SOUT"):
                        m.d.comb += self.m_update.valid.eq(1)
                        with m.If(self.m_update.ready):
                            m.next = "SNEXT"
                            with m.If(stodo == 0):
                                m.next = "IDLE"
            with m.State("ACC"):
                # MR-CW-010/011: W, the accumulators and the end of the path's observation
                # window
                m.d.sync += [
                    w.eq(A.max(crec.wsum, self.mtu, "w_eff")),
                    ce_acc.eq(A.sat_add(prec.ce_acc, ce, model.ACC_MAX, "ce_sum")),
                    ack_acc.eq(A.sat_add(prec.ack_acc, ev.pkts, model.ACC_MAX, "ack_sum")),
                    end.eq((ev.pkts != 0) & ~A.time_lt(ev.now, prec.next_dec, "end_lt")),
                    epoch_due.eq(~A.time_lt(ev.now, crec.cut_end, "epoch_lt")),
                    div_lo.eq(A.add_lo(div_s, div_c, KD, "div_lo")),
                ]
                m.next = "PROD"
            with m.State("PROD"):
                # MR-CW-012/013: the products' rows (beta x MTU x marks: the cut wanted; beta x
                # W: a new epoch's budget; MTU x bytes: the increase's dividend), the divisor,
                # what the window can give, W without the path
                dvs = Mux(crec.multi, A.max(prec.cwnd, w, "dvs_max"),
                          Mux(prec.cwnd == 0, 1, prec.cwnd))
                ws, wc = A.product(beta_mtu, ce_acc, "want_mul")
                ls, lc = A.product(w, self.beta_q, "left_mul")
                fl = A.sub(Cat(prec.cwnd, Const(0, 1)), floor_ev, "can_sub")
                m.d.sync += [
                    want_s.eq(ws), want_c.eq(wc), left_s.eq(ls), left_c.eq(lc),
                    dividend.eq(A.add_hi(div_s, div_c, KD, div_lo, "div_hi")),
                    divisor.eq(dvs),
                    inc_ok.eq((ev.pkts != 0) & (ce == 0) & (ev.bytes != 0)),
                    can.eq(Mux(fl[WB], 0, fl[:WB])),
                    cwnd_fl.eq(Mux(fl[WB], prec.cwnd, floor_ev)),
                    wbase.eq(Mux(prec.active, A.sub(crec.wsum, prec.cwnd, "wbase_sub"),
                                 crec.wsum)),
                ]
                if H:
                    m.d.sync += wadj.eq(A.sub(w, prec.cwnd, "wadj_sub"))
                m.next = "PROD2"
            with m.State("PROD2"):
                # MR-CW-032: the products' sums, 3 x the divisor and now + srtt (the epoch's
                # and the window's end) in two cycles each; the cap compare on the divisor
                # registered
                d2 = Cat(Const(0, 1), divisor)
                m.d.sync += [
                    want_lo.eq(A.add_lo(want_s, want_c, KW, "want_lo")),
                    left_lo.eq(A.add_lo(left_s, left_c, KL, "left_lo")),
                    d3_lo.eq(A.add_lo(divisor, d2, sb // 2, "d3_lo")),
                    t_lo.eq(A.add_lo(ev.now, ev.srtt, KT, "t_lo")),
                    inc_ok.eq(inc_ok & (~crec.multi | A.lt(divisor, self.cap, "cap_lt"))),
                ]
                m.next = "PROD3"
            with m.State("PROD3"):
                m.d.sync += [
                    want0.eq(A.add_hi(want_s, want_c, KW, want_lo, "want_hi")[P.Q:]),
                    left_new.eq(A.add_hi(left_s, left_c, KL, left_lo, "left_hi")[P.Q:]),
                    div3.eq(A.add_hi(_ext(divisor, sb + 2), d2, sb // 2, d3_lo, "d3_hi")),
                    t_end.eq(A.add_hi(ev.now, ev.srtt, KT, t_lo, "t_hi")),
                ]
                m.next = "CUT1"
            with m.State("CUT1"):
                # MR-CW-013: the coupled cut at the end of an observation window with marks:
                # a new epoch's budget, the cut within it
                cut = end & (ce_acc != 0)
                epoch = cut & epoch_due
                left0 = Mux(epoch, left_new, crec.cut_left)
                hi = dividend[QB:]                  # MR-CW-031: dividend >= divisor << QB
                m.d.sync += [
                    want.eq(Mux(cut, A.min(want0, left0, "want_min"), 0)),
                    cutting.eq(cut),
                    cut_left.eq(left0),
                    cut_end.eq(Mux(epoch, t_end, crec.cut_end)),
                    next_dec.eq(Mux(end, t_end, prec.next_dec)),
                    sat.eq((divisor[len(hi):] == 0) & ~A.gt(divisor[:len(hi)], hi, "sat_gt")),
                ]
                m.next = "CUT2"
            with m.State("CUT2"):
                # MR-CW-013: the window takes the cut down to its floor (min(want, can) as the
                # compare beside both differences), the rest is a debt
                more = A.gt(want, can, "want_gt")
                m.d.sync += [
                    take_cut.eq(Mux(more, can, want)),
                    cwnd1.eq(Mux(more, cwnd_fl, A.sub(prec.cwnd, want, "cwnd1_sub"))),
                    cut_left.eq(A.sub(cut_left, want, "left_sub")),
                    rest.eq(A.pos_sub(want, can, "rest_sub")),
                    # MR-CW-012: the increase only where the cut left the window as it was
                    inc.eq(inc_ok & ((want == 0) | (can == 0))),
                ]
                m.next = "CUT3"
            with m.State("CUT3"):
                # MR-CW-013: the debt plus the rest (at most W: in the DIV cycles)
                m.d.sync += [
                    debt_sum.eq(A.add(Cat(crec.cut_debt, Const(0, 1)), rest, name="debt_sum")),
                    rem.eq(dividend >> QB),
                    quot.eq(dividend[:QB]),
                    count.eq(QB // self.div_bits),
                ]
                m.next = "DIV"
            with m.State("DIV"):
                # MR-CW-013: the debt at most W (the same value every DIV cycle)
                m.d.sync += cut_debt.eq(Mux(cutting, A.min(w, debt_sum, "debt_min"),
                                            crec.cut_debt))
                # MR-CW-031: div_bits quotient bits per cycle; with two, the three multiples
                # of the divisor subtracted side by side (each difference's sign its compare)
                r, q = rem, quot
                if self.div_bits == 1:
                    sh = Cat(q[QB - 1], r)
                    d1 = A.sub(_ext(sh, sb + 3), divisor, "div_d1")
                    ge = ~d1[sb + 2]
                    m.d.sync += [rem.eq(Mux(ge, d1, sh)[:sb + 1]), quot.eq(Cat(ge, q[:QB - 1]))]
                else:
                    sh = Cat(q[QB - 2], q[QB - 1], r)
                    ds = [A.sub(_ext(sh, sb + 4), dv, f"div_d{j + 1}")
                          for j, dv in enumerate((divisor, Cat(Const(0, 1), divisor), div3))]
                    ge1, ge2, ge3 = (~d[sb + 3] for d in ds)
                    nr = Mux(ge3, ds[2], Mux(ge2, ds[1], Mux(ge1, ds[0], sh)))
                    m.d.sync += [rem.eq(nr[:sb + 1]),
                                 quot.eq(Cat(ge3 | (ge1 & ~ge2), ge2, q[:QB - 2]))]
                m.d.sync += count.eq(count - 1)
                with m.If(count == 1):
                    m.next = "GROW1"
            with m.State("GROW1"):
                # MR-CW-012: the increase (a saturated quotient is above any cap) ...
                big = sat | (quot[WB + 1:] != 0)
                m.d.sync += grown.eq(Mux(big, (1 << (WB + 1)) - 1,
                                         A.add(_ext(cwnd1, WB + 2), quot[:WB + 1], name="grow_add")))
                m.next = "GROW2"
            with m.State("GROW2"):
                # ... at most the cap
                lim = Mux(hinted, bcap, self.cap) if H else self.cap   # MR-CW-061 (c)
                m.d.sync += cwnd2.eq(Mux(inc, A.min(grown, lim, "grow_min"), cwnd1))
                m.next = "DEBT1"
            with m.State("DEBT1"):
                # MR-CW-015: the cut debt from this window, down to its floor; W with the
                # window (less the debt's part in DEBT3)
                m.d.sync += [give.eq(A.pos_sub(cwnd2, floor_ev, "give_sub")),
                             wc2.eq(A.add(wbase, cwnd2, name="wc2_add"))]
                if H:
                    m.d.sync += wadj2.eq(A.add(_ext(wadj, sb + 1), cwnd2, name="wadj2_add"))
                m.next = "DEBT2"
            with m.State("DEBT2"):
                m.d.sync += take_debt.eq(Mux(ev.pkts != 0, A.min(cut_debt, give, "debt_take"), 0))
                m.next = "DEBT3"
            with m.State("DEBT3"):
                m.d.sync += [cwnd3.eq(A.sub(cwnd2, take_debt, "cwnd3_sub")),
                             debt2.eq(A.sub(cut_debt, take_debt, "debt2_sub")),
                             wsum2.eq(Mux(prec.active, A.sub(wc2, take_debt, "wsum2_sub"), wbase))]
                if H:
                    m.d.sync += wend.eq(Mux(prec.active, A.sub(wadj2, take_debt, "wend_sub"), w))
                m.next = "FIN"
            with m.State("FIN"):
                # MR-CW-012: W follows the window; both records written
                m.d.comb += [
                    conn_wr.addr.eq(ev.conn), conn_wr.en.eq(1),
                    conn_wr.data.wsum.eq(wsum2), conn_wr.data.cut_end.eq(cut_end),
                    conn_wr.data.cut_left.eq(cut_left), conn_wr.data.cut_debt.eq(debt2),
                    conn_wr.data.floor.eq(crec.floor), conn_wr.data.multi.eq(crec.multi),
                    path_wr.addr.eq(path_addr(ev.conn, ev.path)), path_wr.en.eq(1),
                    path_wr.data.cwnd.eq(cwnd3),
                    path_wr.data.ce_acc.eq(Mux(end, 0, ce_acc)),
                    path_wr.data.ack_acc.eq(Mux(end, 0, ack_acc)),
                    path_wr.data.next_dec.eq(next_dec), path_wr.data.active.eq(prec.active),
                ]
                if V:
                    # MR-CW-108: an event with packets clears the bit
                    m.d.comb += [conn_wr.data.share.eq(crec.share),
                                 path_wr.data.collapsed.eq(prec.collapsed & (ev.pkts == 0))]
                m.d.sync += [upd.conn.eq(ev.conn), upd.path.eq(ev.path), upd.cwnd.eq(cwnd3),
                             upd.wsum.eq(A.max(wsum2, self.mtu, "upd_weff")), upd.debt.eq(debt2)]
                if H:
                    # MR-CW-061: the rate (the line rate after hint 0); a due refill reported
                    rate_new = Mux(ev.hint == 0, self.line_mbps, crec.rate)
                    m.d.comb += [conn_wr.data.rate.eq(rate_new),
                                 conn_wr.data.n_paths.eq(crec.n_paths),
                                 # MR-CW-066: the band kept after a hinted event, not after 0
                                 conn_wr.data.bvalid.eq(hinted),
                                 conn_wr.data.bcap.eq(bcap), conn_wr.data.bsum.eq(bsum),
                                 conn_wr.data.bwin.eq(bwin)]
                    m.d.sync += [upd.rate.eq(rate_new), upd.move.eq(0),
                                 upd.cwin.eq(Mux(hinted, bwin, 0)),
                                 upd.refill.eq(hinted & (ev.pkts != 0)
                                               & A.lt(wend, bsum, "refill_lt"))]
                m.next = "OUT"
            with m.State("OUT"):
                m.d.comb += self.m_update.valid.eq(1)
                with m.If(self.m_update.ready):
                    m.next = "IDLE"
                    if S:
                        with m.If(stodo != 0):          # MR-CW-118: the share-out follows
                            m.next = "SDIV"
        m.d.comb += steps.stmts
        return m


def _band_share(m, unit, ext_req, ext_resp):
    """MR-CW-145: ``unit`` (a ``CwndBand``) shared by the block (the returned interface, which
    its FSM drives as the unit's) and a client (``ext_req``, ``ext_resp``): the block's request
    first; the answer to whoever's request the unit took last."""
    own = unit.signature.create(path=("band_own",))
    owner = Signal(name="band_client_owns")     # the unit's request taken was the client's
    m.d.comb += [unit.s_req.valid.eq(own.s_req.valid | ext_req.valid),
                 unit.s_req.payload.eq(Mux(own.s_req.valid, own.s_req.payload.as_value(),
                                           ext_req.payload.as_value())),
                 own.s_req.ready.eq(unit.s_req.ready),
                 ext_req.ready.eq(unit.s_req.ready & ~own.s_req.valid),
                 own.m_band.valid.eq(unit.m_band.valid & ~owner),
                 own.m_band.payload.eq(unit.m_band.payload),
                 ext_resp.valid.eq(unit.m_band.valid & owner),
                 ext_resp.payload.eq(unit.m_band.payload),
                 unit.m_band.ready.eq(Mux(owner, ext_resp.ready, own.m_band.ready))]
    with m.If(unit.s_req.valid & unit.s_req.ready):
        m.d.sync += owner.eq(~own.s_req.valid)
    return own


def cwnd_small(width=64):
    """The small instance (MR-CW-001): 2 connections x 4 paths."""
    return Cwnd(width, **model.SMALL)


def cwnd_verdicts_small(width=64):
    """The small instance with the path verdicts' port (MR-CW-106)."""
    return Cwnd(width, **model.SMALL, verdicts=True)


def cwnd_hinted_small(width=64):
    """The hinted block's small instance (MR-CW-060)."""
    return Cwnd(width, **model.SMALL, hints=True)


def cwnd_hinted_trace(width=64):
    """The hinted block's instance for the endpoint's incast traces (MR-CW-065): 8 x 4."""
    return Cwnd(width, **model.TRACE, hints=True)



class CwndBand(wiring.Component):
    """MR-CW-059: the arithmetic of the hinted band (MR-CW-051) for the block's hinted RTL: a
    request ``{hint, n}`` (the ACK's hint, the connection's path count 1..8) gives
    ``{rate, hw, cap, sum_floor, conn_window}``, ``protocol.clamp_hint_mbps``,
    ``hinted_window_fx``, ``hinted_window_cap_fx``, the hinted BDP and
    ``hinted_conn_window_fx``, from one division of r x base RTT by 8,000 x n (a restoring
    divider, two quotient bits a cycle) and small corrections of its remainder. One request at
    a time; the result is held on ``m_band`` until taken. ``line_mbps``, ``base_rtt_ns`` and
    ``mtu`` are static configuration."""

    def __init__(self):
        lay = model.band_layouts()
        self.lay = lay
        super().__init__({
            "s_req": In(stream.Signature(lay.req)),
            "m_band": Out(stream.Signature(lay.band)),
            "line_mbps": In(model.RATE_BITS),
            "base_rtt_ns": In(model.RTT_BITS),
            "mtu": In(model.MTU_BITS),
        })

    def elaborate(self, platform):
        m = Module()
        XB, QB, DB = model.BAND_X_BITS, model.BAND_Q_BITS, model.BAND_D_BITS
        req = Signal(self.lay.req)
        rate = Signal(model.RATE_BITS)
        x = Signal(XB)                  # r x base RTT, shifted out MSB first into the remainder
        d = Signal(DB)                  # 8,000 x n
        pp = [Signal(20, name=f"pp{i}") for i in range(4)]
        pa = Signal(30)
        pb = Signal(30)
        rem = Signal(DB + 1)
        quot = Signal(QB)
        count = Signal(range(XB // 2 + 2))
        cap2 = Signal(QB + 1)
        k = Signal(3)                   # rem // 8,000
        nq = Signal(QB + 3)
        s = Signal(QB + 3)              # the hinted BDP: n x q + k
        s3 = Signal(QB + 5)
        mrem = Signal(13)               # x mod 8,000
        t = Signal(2)                   # 3 x (x mod 8,000) // 8,000
        out = Signal(self.lay.band)
        m.d.comb += self.m_band.payload.eq(out)
        with m.FSM():
            with m.State("IDLE"):
                m.d.comb += self.s_req.ready.eq(1)
                with m.If(self.s_req.valid):
                    h = self.s_req.payload.hint
                    # MR-SEC-151: 0 is the line rate, any other hint within [1, line]
                    m.d.sync += [req.eq(self.s_req.payload),
                                 rate.eq(Mux(h == 0, self.line_mbps,
                                             _min(_max(h, P.MIN_RATE_MBPS), self.line_mbps)))]
                    m.next = "MUL"
            with m.State("MUL"):
                # r x base RTT as four products of at most 10 x 10 bits (each one DSP, no carry
                # chain after it: a 19 x 20 product and its adders in one cycle was the slow path)
                T = self.base_rtt_ns
                m.d.sync += [pp[0].eq(rate[:9] * T[:10]), pp[1].eq(rate[9:] * T[:10]),
                             pp[2].eq(rate[:9] * T[10:]), pp[3].eq(rate[9:] * T[10:]),
                             d.eq(req.n * 8000)]
                m.next = "MUL2"
            with m.State("MUL2"):
                m.d.sync += [pa.eq(pp[0] + (pp[1] << 9)), pb.eq(pp[2] + (pp[3] << 9))]
                m.next = "MUL3"
            with m.State("MUL3"):
                m.d.sync += [x.eq(pa + (pb << 10)), rem.eq(0), quot.eq(0), count.eq(XB // 2)]
                m.next = "DIV"
            with m.State("DIV"):
                r, q, xs = rem, quot, x
                for i in range(2):
                    shifted = Cat(xs[XB - 1], r[:DB])
                    diff = Signal(signed(DB + 3), name=f"bdiff{i}")
                    m.d.comb += diff.eq(shifted - d)
                    ge = ~diff[-1]
                    r = Mux(ge, diff[:DB + 1], shifted)[:DB + 1]
                    q = Cat(ge, q[:QB - 1])
                    xs = Cat(0, xs[:XB - 1])
                m.d.sync += [rem.eq(r), quot.eq(q), x.eq(xs), count.eq(count - 1)]
                with m.If(count == 1):
                    m.next = "POST1"
            with m.State("POST1"):
                kk = sum((rem >= 8000 * j).as_unsigned() for j in range(1, 8))
                m.d.sync += [cap2.eq(Cat((rem << 1) >= d, quot)), k.eq(kk)]
                m.next = "POST2"
            with m.State("POST2"):
                m.d.sync += [nq.eq(quot * req.n), mrem.eq(rem - k * 8000)]
                m.next = "POST3"
            with m.State("POST3"):
                m3 = (mrem << 1) + mrem
                m.d.sync += [s.eq(nq + k),
                             t.eq((m3 >= 8000).as_unsigned() + (m3 >= 16000).as_unsigned())]
                m.next = "POST4"
            with m.State("POST4"):
                # 3 x the sum floor as shift and add (a multiplier here was the slow path)
                m.d.sync += s3.eq((s << 1) + s + t)
                m.next = "POST5"
            with m.State("POST5"):
                m.d.sync += [out.rate.eq(rate), out.hw.eq(quot),
                             out.cap.eq(_max(cap2, self.mtu)), out.sum_floor.eq(s),
                             out.conn_window.eq(_max(s3 >> 1, self.mtu << 1))]
                m.next = "OUT"
            with m.State("OUT"):
                m.d.comb += self.m_band.valid.eq(1)
                with m.If(self.m_band.ready):
                    m.next = "IDLE"
        return m


def cwnd_band(width=64):
    """MR-CW-059: the hinted band unit (no data path: ``width`` changes nothing)."""
    return CwndBand()


class CwndControl(wiring.Component):
    """MR-CW-125..129: the hinted windows' control path in RTL, the peer of
    ``models.cwnd.CwndControl`` (values) and ``models.cwnd_control.CwndControlCycleModel``
    (cycles). It sees the records the windows take (``s_ev``, ``s_setup``) and their updates
    (``s_upd``), keeps the shadows of MR-CW-126 in registers, and answers an update with
    ``move`` or ``refill`` by a sequencer: the band (its own ``CwndBand``), the new windows (a
    serial divider a slot for a scaled move, one a calm path for a refill), the move writes on
    ``m_setup`` one at a time (each update awaited), a move's refused event again on ``m_ack``,
    then ``release``. ``wrong`` (MR-CW-133, negative controls only): ``"round"`` rounds the
    move's quotient up, ``"order"`` serves the refill's calm paths from the highest slot;
    ``"mul_step"`` (MR-CW-142) tests the multiplier's next bit at each product step;
    ``"ahead"`` (MR-CW-152) reads the next slot's shadows at the slot in use.

    serial47 (MR-CW-136..141): one adder for every add, subtraction and compare of an answer,
    the move's product by shift and add, the wide shadows in memories: fewer LUTs, more cycles
    (MR-CW-140). lvl48 (MR-CW-149..151): the shadows read a cycle ahead into operand registers,
    so no memory read reaches the adder (one LUT level less), the cycles unchanged."""

    def __init__(self, conns=model.SMALL["conns"], paths=model.SMALL["paths"], wrong=None,
                 band_port=False):
        if wrong not in (None, "round", "order", "mul_step", "ahead"):
            self._MustUse__silence = True
            raise ValueError(f"wrong={wrong!r}")
        self.wrong = wrong
        self.band_port = band_port
        self.conns, self.paths = conns, paths
        self.lay = lay = model.layouts(conns, paths, hints=True)
        ports = {
            "s_ev": In(stream.Signature(lay.ack)),
            "s_setup": In(stream.Signature(lay.setup)),
            "s_upd": In(stream.Signature(lay.update)),
            "m_setup": Out(stream.Signature(lay.setup)),
            "m_ack": Out(stream.Signature(lay.ack)),
            "release": Out(1),
            "mtu": In(model.MTU_BITS),
            "line_mbps": In(model.RATE_BITS),
            "base_rtt_ns": In(model.RTT_BITS),
        }
        if band_port:
            # MR-CW-146: the band from a unit outside (the windows', MR-CW-145)
            blay = model.band_layouts()
            ports.update(m_band_req=Out(stream.Signature(blay.req)),
                         s_band_resp=In(stream.Signature(blay.band)))
        super().__init__(ports)

    def elaborate(self, platform):
        from amaranth.hdl import Array
        m = Module()
        lay = self.lay
        C, NP = self.conns, self.paths
        WB, RB, TB = model.WIN_BITS, model.RATE_BITS, P.TIME_BITS
        QB = model.BAND_Q_BITS
        MD, RD = model.MOVE_DIV_BITS, model.REFILL_DIV_BITS
        # MR-CW-126: the shadows, one register per connection and slot (or per connection);
        # MR-CW-141: the wide ones (window, srtt, echo time) in memories read without a clock
        # (a write a cycle each, at most: the windows take one record a cycle)
        def regs(n, width, name):
            return [Signal(width, name=f"{name}{i}") for i in range(n)]
        m.submodules.sh_cwnd = cw_mem = memory.Memory(shape=WB, depth=C * NP, init=[])
        m.submodules.sh_srtt = srtt_mem = memory.Memory(shape=TB, depth=C * NP, init=[])
        m.submodules.sh_last_ece = lece_mem = memory.Memory(shape=TB, depth=C * NP, init=[])
        cw_wr, srtt_wr, lece_wr = cw_mem.write_port(), srtt_mem.write_port(), lece_mem.write_port()
        cw_rd, cw_rd_up = cw_mem.read_port(domain="comb"), cw_mem.read_port(domain="comb")
        srtt_rd, lece_rd = srtt_mem.read_port(domain="comb"), lece_mem.read_port(domain="comb")
        act = regs(C * NP, 1, "sh_active")
        eseen = regs(C * NP, 1, "sh_ece_seen")
        rate = regs(C, RB, "sh_rate")
        npaths = regs(C, 4, "sh_n_paths")
        A_act, A_eseen = Array(act), Array(eseen)
        A_rate, A_np = Array(rate), Array(npaths)
        pb = max(1, (NP - 1).bit_length()) if NP > 1 else 0

        def slot(c, k):
            return Cat(Value.cast(k)[:pb], c) if pb else c

        ev, su, up = self.s_ev, self.s_setup, self.s_upd
        m.d.comb += [ev.ready.eq(1), su.ready.eq(1), up.ready.eq(1)]
        evr = Signal(lay.ack)                   # the last event seen
        with m.If(ev.valid):
            e = ev.payload
            i = slot(e.conn, e.path)
            m.d.sync += evr.eq(e)
            m.d.comb += [srtt_wr.addr.eq(i), srtt_wr.data.eq(e.srtt), srtt_wr.en.eq(1)]
            with m.If((e.ce != 0) & (e.pkts != 0)):
                m.d.sync += A_eseen[i].eq(1)
                m.d.comb += [lece_wr.addr.eq(i), lece_wr.data.eq(e.now), lece_wr.en.eq(1)]
        with m.Elif(su.valid & ~su.payload.move):
            s = su.payload
            i = slot(s.conn, s.path)
            n0 = Mux(s.open, 0, A_np[s.conn])
            m.d.sync += [A_act[i].eq(s.active), A_eseen[i].eq(0),
                         A_np[s.conn].eq(n0 + ((s.open | s.fresh) & s.active))]
            m.d.comb += [srtt_wr.addr.eq(i), srtt_wr.data.eq(self.base_rtt_ns), srtt_wr.en.eq(1),
                         lece_wr.addr.eq(i), lece_wr.data.eq(0), lece_wr.en.eq(1)]
        m.d.comb += [cw_wr.addr.eq(slot(up.payload.conn, up.payload.path)),
                     cw_wr.data.eq(up.payload.cwnd), cw_wr.en.eq(up.valid),
                     cw_rd_up.addr.eq(slot(up.payload.conn, up.payload.path))]
        with m.If(up.valid):
            with m.If(~up.payload.move):
                m.d.sync += A_rate[up.payload.conn].eq(up.payload.rate)

        # MR-CW-136..140: one adder for the whole answer (serial47): every add, subtraction and
        # compare of the sequencer is this 33-bit sum of two operands chosen by the state, a
        # subtraction as the complement plus one, its carry out the compare (MR-CW-135's form)
        steps = _Unconditional()
        A = _CwArith(steps, getattr(platform, "carry_chain", False))
        xa = Signal(32)
        xb = Signal(32)
        xsub = Signal()
        xs = Signal(33)                         # xa + xb or xa - xb; xs[32]: carry, xa >= xb
        bx = _named(steps, xb ^ xsub.replicate(32), "alu_b")
        m.d.comb += xs.eq(A.add_c(Cat(xa, Const(0, 1)), Cat(bx, Const(0, 1)), xsub, "alu"))
        ge = xs[32]
        diff_nz = _named(steps, xs[:32] != 0, "alu_nz")

        def alu(a, b, sub):
            m.d.comb += [xa.eq(a), xb.eq(b), xsub.eq(sub)]

        if self.band_port:
            band = SimpleNamespace(s_req=self.m_band_req, m_band=self.s_band_resp)
        else:
            m.submodules.band = band = CwndBand()
            m.d.comb += [band.line_mbps.eq(self.line_mbps),
                         band.base_rtt_ns.eq(self.base_rtt_ns), band.mtu.eq(self.mtu)]
        uc = Signal.like(up.payload.conn)
        upath = Signal.like(up.payload.path)
        urate = Signal(RB)
        ucwnd = Signal(WB)
        umove = Signal()
        old_p = Signal(WB)
        old_rate = Signal(RB)
        hw = Signal(QB)
        cap = Signal(QB + 1)
        sfloor = Signal(QB + 3)
        scaled = Signal()
        newv = [Signal(WB, name=f"new{k}") for k in range(NP)]
        A_new = Array(newv)
        k = Signal(range(NP + 1))
        last = Signal()
        count = Signal(range(MD + 1))
        # MR-CW-137: the product w x r (shift and add, a multiplier bit a cycle: the low bits
        # of mdq the multiplier shifting out, the product's bits shifting in above), then the
        # division (a quotient bit a cycle) in the same register: remainder, dividend then
        # quotient
        mrem = Signal(RB + 1)
        mdq = Signal(MD)
        rrem = Signal(5)
        rdq = Signal(RD)
        rdiv = Signal(4)
        W32 = 32                                # W' and the shortfall, modulo 2^32
        # W before the update (a slot a cycle), then W less the excess, max(., MTU) and W'
        acc = Signal(W32)
        tsum = Signal(TB)                       # the slot's latest echo + srtt, then p's change
        cbase = Signal()                        # the slot's calm test but the time
        exc = Signal(WB)
        start = Signal(WB)
        short = Signal(RD)
        mask = Signal(NP)
        room = Signal(QB + 1)
        give = Signal(RD)

        def start_answer():
            p = up.payload
            m.d.sync += [uc.eq(p.conn), upath.eq(p.path), urate.eq(p.rate), ucwnd.eq(p.cwnd),
                         umove.eq(p.move), old_p.eq(cw_rd_up.data),
                         old_rate.eq(A_rate[p.conn]), k.eq(0)]
            m.next = "BREQ"

        ui = slot(uc, upath)
        ki = slot(uc, k)
        # MR-CW-149: the shadows read a cycle ahead into operand registers (the next slot's in
        # the state before its first), so no memory read reaches the adder in its cycle;
        # MR-CW-150: `pre`, set the cycle before such a state, chooses k + 1: the read address
        # is k's and a register's alone, no state decode
        pre = Signal()
        m.d.sync += pre.eq(0)
        k_rd = Signal.like(k)
        # MR-CW-152 (negative control only): the read ahead at the slot in use, not the next
        step_rd = 0 if self.wrong == "ahead" else 1
        m.d.comb += k_rd.eq(Mux(pre, k + step_rd, k))
        mi = slot(uc, k_rd)
        m.d.comb += [cw_rd.addr.eq(mi), srtt_rd.addr.eq(mi), lece_rd.addr.eq(mi)]
        cw_k = cw_rd.data
        w_op = Signal(WB)                       # the slot's shadow window, read a cycle ahead
        echo_op = Signal(TB)                    # its latest echo time
        srtt_op = Signal(TB)                    # its smoothed RTT

        def read_ahead():
            m.d.sync += [w_op.eq(cw_k), echo_op.eq(lece_rd.data), srtt_op.eq(srtt_rd.data)]
        # MR-CW-141: the new windows read and written at k only (the slot, the calm path
        # picked, p for the rest, the write offered)
        kn = k[:pb] if pb else Const(0, 1)
        new_k = _named(steps, A_new[kn], "new_k")
        # MR-CW-148: one write bus for the new windows, the slot's enable the only per-slot logic
        new_d = Signal(WB)
        new_we = Signal()
        for i, r in enumerate(newv):
            with m.If(new_we & (kn == i)):
                m.d.sync += r.eq(new_d)

        def new_write(value):
            m.d.comb += [new_d.eq(value), new_we.eq(1)]
        m.d.comb += [band.s_req.payload.hint.eq(urate),
                     band.s_req.payload.n.eq(Mux(A_np[uc] == 0, 1, A_np[uc]))]
        # MR-CW-147: the refused event's payload is the last event seen, valid or not
        m.d.comb += self.m_ack.payload.eq(evr)
        set_out = Signal(lay.setup)
        m.d.comb += [set_out.conn.eq(uc), set_out.path.eq(k), set_out.cwnd.eq(new_k),
                     set_out.move.eq(1), set_out.rate.eq(urate), set_out.debt0.eq(~umove)]
        # MR-CW-142 (negative control only): each product step tests the multiplier's next bit
        mul_bit = 1 if self.wrong == "mul_step" else 0

        def next_slot():
            with m.If(k == NP - 1):
                m.d.sync += k.eq(0)
                m.next = "SCAN"
            with m.Else():
                m.d.sync += k.eq(k + 1)
                m.next = "MV"

        with m.FSM():
            with m.State("IDLE"):
                with m.If(up.valid & (up.payload.move | up.payload.refill)):
                    start_answer()
            with m.State("BREQ"):
                m.d.comb += band.s_req.valid.eq(1)
                with m.If(band.s_req.ready):
                    m.next = "BWAIT"
            with m.State("BWAIT"):
                m.d.comb += band.m_band.ready.eq(1)
                read_ahead()                    # slot 0's (k is 0 from the answer's start)
                b = band.m_band.payload
                with m.If(band.m_band.valid):
                    line = self.line_mbps
                    m.d.sync += [hw.eq(b.hw), cap.eq(b.cap), sfloor.eq(b.sum_floor), k.eq(0),
                                 acc.eq(0), mask.eq(0),
                                 scaled.eq((old_rate < urate) & (urate < line)
                                           & (old_rate < line))]
                    with m.If(umove):
                        m.next = "MV"
                    with m.Else():
                        m.next = "RF_SUM"
            # MR-CW-053: per slot, scaled (product, division) or not, then the clamp
            with m.State("MV"):
                with m.If(scaled):
                    m.d.sync += [mdq.eq(urate), count.eq(RB)]
                    m.next = "MMUL"
                with m.Else():
                    m.d.sync += mdq.eq(w_op)
                    m.next = "MCLAMP1"
            with m.State("MMUL"):
                # MR-CW-137: the product's high part plus w if the multiplier's bit is set,
                # shifted down a bit with the multiplier
                alu(mdq[RB:], Mux(mdq[mul_bit], w_op, 0), 0)
                m.d.sync += [mdq.eq(Cat(mdq[1:RB], xs[:WB + 1])), count.eq(count - 1)]
                with m.If(count == 1):
                    m.d.sync += [mrem.eq(0), count.eq(MD)]
                    m.next = "MDIV"
            with m.State("MDIV"):
                sh = Cat(mdq[MD - 1], mrem)
                alu(sh, old_rate, 1)
                r_next = Mux(ge, xs[:RB + 1], sh[:RB + 1])
                m.d.sync += [mrem.eq(r_next), mdq.eq(Cat(ge, mdq[:MD - 1])),
                             count.eq(count - 1)]
                with m.If(count == 1):
                    if self.wrong == "round":           # MR-CW-133: a negative control only
                        m.d.sync += mdq.eq(Cat(ge, mdq[:MD - 1]) + (r_next != 0))
                    m.next = "MCLAMP1"
            with m.State("MCLAMP1"):
                m.d.sync += pre.eq(1)           # MCLAMP2 reads ahead
                # max(w, hw): a bit of w above the adder's 32, or w >= hw
                alu(mdq[:32], hw, 1)
                m.d.sync += mdq.eq(Mux((mdq[32:] != 0) | ge, mdq, hw))
                m.next = "MCLAMP2"
            with m.State("MCLAMP2"):
                read_ahead()                    # the next slot's
                alu(mdq[:32], cap, 1)
                new_write(Mux((mdq[32:] != 0) | ge, cap, mdq))
                next_slot()
            # MR-CW-138: four cycles a slot: W before the update, the echo's time, the calm
            # test's cap, its time
            with m.State("RF_SUM"):
                wk = Mux(k == upath, old_p, w_op)
                alu(acc, Mux(A_act[ki], wk, 0), 0)
                m.d.sync += acc.eq(xs[:W32])
                new_write(w_op)
                m.next = "RF_ECHO"
            with m.State("RF_ECHO"):
                alu(echo_op, srtt_op, 0)
                m.d.sync += tsum.eq(xs[:TB])
                m.next = "RF_CAP"
            with m.State("RF_CAP"):
                m.d.sync += pre.eq(1)           # RF_CALM reads ahead
                alu(w_op, cap, 1)
                m.d.sync += cbase.eq((k != upath) & A_act[ki] & ~ge)
                m.next = "RF_CALM"
            with m.State("RF_CALM"):
                read_ahead()                    # the next slot's
                # MR-ENG-050: the echo's time strictly before now: now - tsum not 0, its sign 0
                alu(evr.now, tsum, 1)
                calm = cbase & (~A_eseen[ki] | (diff_nz & ~xs[TB - 1]))
                m.d.sync += mask.eq(mask | (calm << k)[:NP])
                with m.If(k == NP - 1):
                    m.next = "RF_W1"
                with m.Else():
                    m.d.sync += k.eq(k + 1)
                    m.next = "RF_SUM"
            with m.State("RF_W1"):
                # MR-CW-139: one compare for both: old_p - cap's excess, min(old_p, cap)
                alu(old_p, cap, 1)
                m.d.sync += [exc.eq(Mux(ge, xs[:WB], 0)), start.eq(Mux(ge, cap, old_p))]
                m.next = "RF_W2"
            # MR-CW-148: W, W less the excess, max(., MTU) and W' in acc (W is at least
            # old_p, the excess at most old_p: no wrap), p's change in tsum
            with m.State("RF_W2"):
                alu(acc, exc, 1)
                m.d.sync += acc.eq(Mux(A_act[ui], xs[:W32], acc))
                m.next = "RF_DP"
            with m.State("RF_DP"):
                alu(ucwnd, start, 1)
                m.d.sync += tsum.eq(Mux(A_act[ui], xs[:W32], 0))
                m.next = "RF_W3"
            with m.State("RF_W3"):
                alu(acc, self.mtu, 1)
                m.d.sync += acc.eq(Mux(ge, acc, self.mtu))
                m.next = "RF_W4"
            with m.State("RF_W4"):
                alu(acc, tsum, 0)
                m.d.sync += acc.eq(xs[:W32])
                m.next = "RF_W5"
            with m.State("RF_W5"):
                alu(sfloor, acc, 1)
                m.d.sync += short.eq(xs[:RD])
                m.next = "RF_PICK"
            with m.State("RF_PICK"):
                # the lowest calm slot left (the highest: the negative control)
                order = range(NP - 1, -1, -1) if self.wrong != "order" else range(NP)
                for j in order:
                    with m.If(mask[j]):
                        m.d.sync += k.eq(j)
                cnt = sum(mask[j].as_unsigned() for j in range(NP))
                m.d.sync += [rdiv.eq(cnt), rdq.eq(short), rrem.eq(0), count.eq(RD)]
                with m.If(mask == 0):
                    m.d.sync += k.eq(upath)
                    m.next = "RF_REST"
                with m.Else():
                    m.next = "RF_DIV"
            with m.State("RF_DIV"):
                sh = Cat(rdq[RD - 1], rrem)
                d = Signal(8, name="rdiv_d")
                m.d.comb += d.eq(sh - rdiv)
                dge = ~d[7]
                m.d.sync += [rrem.eq(Mux(dge, d, sh)[:5]), rdq.eq(Cat(dge, rdq[:RD - 1])),
                             count.eq(count - 1)]
                with m.If(count == 1):
                    m.next = "RF_ROOM"
            # MR-CW-054: the give: the room below the cap, the min, the adds (a cycle each)
            with m.State("RF_ROOM"):
                alu(cap, new_k, 1)
                m.d.sync += room.eq(xs[:QB + 1])
                m.next = "RF_MIN"
            with m.State("RF_MIN"):
                alu(room, rdq, 1)
                m.d.sync += give.eq(Mux(ge, rdq, room))
                m.next = "RF_GIVE"
            with m.State("RF_GIVE"):
                alu(new_k, give, 0)
                new_write(xs[:WB])
                m.next = "RF_TAKE"
            with m.State("RF_TAKE"):
                alu(short, give, 1)
                m.d.sync += [short.eq(xs[:RD]), mask.eq(mask & ~(Const(1, NP) << k)[:NP])]
                m.next = "RF_PICK"
            with m.State("RF_REST"):
                alu(new_k, short, 0)
                with m.If(short != 0):
                    new_write(xs[:WB])
                m.d.sync += k.eq(0)
                m.next = "SCAN"
            # MR-CW-128: the writes, a slot a cycle, p's last
            with m.State("SCAN"):
                with m.If(k == NP):
                    m.d.sync += [k.eq(upath), last.eq(1)]
                    m.next = "OFFER"
                with m.Elif((k != upath) & (new_k != cw_k)):
                    m.d.sync += last.eq(0)
                    m.next = "OFFER"
                with m.Else():
                    m.d.sync += k.eq(k + 1)
            with m.State("OFFER"):
                m.d.comb += [self.m_setup.valid.eq(1), self.m_setup.payload.eq(set_out)]
                with m.If(self.m_setup.ready):
                    m.next = "WAIT"
            with m.State("WAIT"):
                with m.If(up.valid):
                    with m.If(~last):
                        m.d.sync += k.eq(k + 1)
                        m.next = "SCAN"
                    with m.Elif(umove):
                        m.next = "OFFER_ACK"
                    with m.Else():
                        m.next = "REL"
            with m.State("OFFER_ACK"):
                m.d.comb += self.m_ack.valid.eq(1)
                with m.If(self.m_ack.ready):
                    m.next = "WAIT_ACK"
            with m.State("WAIT_ACK"):
                with m.If(up.valid):
                    with m.If(up.payload.move | up.payload.refill):
                        start_answer()
                    with m.Else():
                        m.next = "REL"
            with m.State("REL"):
                m.d.comb += self.release.eq(1)
                m.next = "IDLE"
        m.d.comb += steps.stmts
        return m


def cwnd_control_small(width=64):
    """MR-CW-125: the control path's small instance (2 x 4; no data path)."""
    return CwndControl(**model.SMALL)


def cwnd_control_band_port_small(width=64):
    """MR-CW-146: the small instance with the band from a port (as inside the TX, MR-TX-518)."""
    return CwndControl(**model.SMALL, band_port=True)
