"""Congestion window block, first slice (docs/spec/hw-cwnd.md, MR-CW-*): the per-path window
table and its update on ACK events (MR-CC-002/003/011/013/018), with setup writes.

One record at a time (MR-CW-030): idle, the block takes a setup write (first) or an ACK event
and reads its connection's and path's records (synchronous ``lib.memory`` read ports, their
data registered as read: LOAD); an ACK event then takes a cycle for the accumulators (ACC), one for the products (PROD), three for
the coupled cut (CUT1..3), ``QUOT_BITS / div_bits`` for the increase's restoring division (DIV,
``div_bits`` quotient bits per cycle, 2 by default), two for the increase (GROW1/2), three for the cut debt (DEBT1..3) and
one for the writes of both records (FIN): at most two carry chains a cycle. The update is then
held on ``m_update`` until taken.
The layouts and latencies are the cycle model's (models/cwnd.py).

``Cwnd(..., hints=True)`` (MR-CW-060..066): the second slice's per-event part: the ACK's rate
hint, the band (the unit ``CwndBand`` or the one kept in the connection record), the
acknowledged window clamped to the path cap; hint changes refused and refills reported for the
control path, which writes the moved windows through the setup port (move writes).
"""
from __future__ import annotations

from amaranth.hdl import Cat, Module, Mux, Signal, signed
from amaranth.lib import memory, stream, wiring
from amaranth.lib.wiring import In, Out

from metaroce.models import cwnd as model
from metaroce.models import protocol as P

__all__ = ["Cwnd", "cwnd_small", "cwnd_hinted_small", "CwndBand", "cwnd_band"]


def _time_lt(a, b):
    """MR-ENG-050: ``a`` strictly before ``b`` on the wrapping 32-bit ns counter."""
    d = (b - a)[:P.TIME_BITS]
    return (d != 0) & ~d[P.TIME_BITS - 1]


def _min(a, b):
    return Mux(a < b, a, b)


def _max(a, b):
    return Mux(a > b, a, b)


class Cwnd(wiring.Component):
    """MR-CW-001..005: ``s_ack`` (ACK events), ``s_setup`` (setup writes), ``m_update`` (one
    update per record), and the configuration inputs ``mtu``, ``beta_q``, ``cap`` (static while
    a record is in flight). ``hints`` (MR-CW-060..064): the hinted block: the ACK's rate hint,
    the band unit (MR-CW-059) per hinted event, the acknowledged window clamped to the path
    cap, a hint change refused (``move``), a due refill reported (``refill``), move writes;
    ``line_mbps`` and ``base_rtt_ns`` join the configuration."""

    def __init__(self, width=64, conns=model.SMALL["conns"], paths=model.SMALL["paths"],
                 div_bits=model.DIV_BITS, hints=False):
        if div_bits not in (1, 2):
            self._MustUse__silence = True       # never elaborated: no warning for it
            raise ValueError(f"div_bits={div_bits}: 1 or 2 quotient bits per cycle")
        self.div_bits = div_bits
        self.hints = hints
        self.lay = lay = model.layouts(conns, paths, hints=hints)
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
        super().__init__(ports)

    def elaborate(self, platform):
        m = Module()
        lay = self.lay
        QB = model.QUOT_BITS
        sb = lay.sum_bits
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

        # MR-CW-010/011: LOAD (the records as read), ACC
        crec = Signal(lay.conn_rec)
        prec = Signal(lay.path_rec)
        w = Signal(sb)                          # max(sum of active windows, MTU)
        ce = Signal(model.PKTS_BITS)
        ce_acc = Signal(model.ACC_BITS)
        ack_acc = Signal(model.ACC_BITS)
        end = Signal()
        epoch_due = Signal()                    # now is not before cut_end
        # PROD: the products (beta x MTU is a static product of the configuration)
        beta_mtu = Signal(model.BETA_BITS + model.MTU_BITS)
        want0 = Signal(model.BETA_BITS + model.MTU_BITS + model.ACC_BITS - P.Q)
        left_new = Signal(sb)
        dividend = Signal(model.MTU_BITS + model.BYTES_BITS)
        divisor = Signal(sb)
        inc_ok = Signal()                       # the increase, unless the cut moved the window
        # MR-CW-013: CUT1..3
        cwnd1 = Signal(model.WIN_BITS)
        cut_end = Signal(P.TIME_BITS)
        cut_left = Signal(sb)
        cut_debt = Signal(sb)
        next_dec = Signal(P.TIME_BITS)
        inc = Signal()
        # MR-CW-031: the restoring divider
        rem = Signal(sb + 1)
        quot = Signal(QB)
        sat = Signal()
        count = Signal(range(QB + 1))
        # CUT2/CUT3: the window's part of the cut, the debt
        want = Signal(sb)
        cutting = Signal()
        can = Signal(model.WIN_BITS)            # what the window can give: cwnd - floor, >= 0
        take_cut = Signal(model.WIN_BITS)
        wbase = Signal(sb)                      # wsum without this path's old window
        # GROW1/GROW2: the window after the increase
        grown = Signal(model.WIN_BITS + 2)
        cwnd2 = Signal(model.WIN_BITS)
        # DEBT1..3: the debt from the window, W
        give = Signal(model.WIN_BITS)
        take_debt = Signal(model.WIN_BITS)
        cwnd3 = Signal(model.WIN_BITS)
        debt2 = Signal(sb)
        wsum2 = Signal(sb)

        upd = Signal(lay.update)
        m.d.comb += self.m_update.payload.eq(upd)
        H = self.hints
        if H:
            # MR-CW-060/061: the band unit, the event's rate and band, the path cap's excess
            m.submodules.band = band = CwndBand()
            m.d.comb += [band.line_mbps.eq(self.line_mbps), band.base_rtt_ns.eq(self.base_rtt_ns),
                         band.mtu.eq(self.mtu)]
            rate_r = Signal(model.RATE_BITS)
            hinted = Signal()                   # the band applies to this event
            bcap = Signal.like(band.m_band.payload.cap)
            bsum = Signal.like(band.m_band.payload.sum_floor)
            bwin = Signal(model.WIN_BITS)       # MR-CW-067: the connection window
            over = Signal(model.WIN_BITS)       # the window's excess over the path cap
            wadj = Signal(sb)                   # W without the window (active paths)
            wend = Signal(sb + 1)               # W' of MR-CW-054
            rest = Signal(sb)                   # MR-CW-013: the cut the window cannot take
            # the request straight from registers (not gated by the state: the band's clamp of
            # the hint is two compares already)
            m.d.comb += [band.s_req.payload.hint.eq(ev.hint),
                         band.s_req.payload.n.eq(Mux(crec.n_paths == 0, 1, crec.n_paths))]
        # MR-CW-005: the configuration is static; its product is registered
        m.d.sync += beta_mtu.eq(self.beta_q * self.mtu)

        with m.FSM():
            with m.State("IDLE"):
                m.d.comb += [self.s_setup.ready.eq(1), self.s_ack.ready.eq(~self.s_setup.valid)]
                sp, ap = self.s_setup.payload, self.s_ack.payload
                m.d.comb += [conn_rd.en.eq(1), path_rd.en.eq(1)]
                with m.If(self.s_setup.valid):
                    m.d.comb += [conn_rd.addr.eq(sp.conn), path_rd.addr.eq(path_addr(sp.conn, sp.path))]
                    m.d.sync += su.eq(sp)
                    m.next = "SETUP"
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
                old = Mux(prec.active & ~su.open & ~su.fresh, prec.cwnd, 0)
                cwnd_w = _max(su.cwnd, su.floor)
                opn, clear = su.open, su.open
                if H:
                    # MR-CW-062: a move write: the window as written, W follows; the records
                    # kept but the rate and (debt0) the debt
                    mv = su.move
                    old = Mux(prec.active & (mv | (~su.open & ~su.fresh)), prec.cwnd, 0)
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
                m.d.sync += [
                    cwnd3.eq(cwnd_w),
                    wbase.eq(Mux(opn, 0, crec.wsum) - old),
                    crec.cut_end.eq(Mux(opn, 0, crec.cut_end)),
                    crec.cut_left.eq(Mux(opn, 0, crec.cut_left)),
                    crec.cut_debt.eq(Mux(clear, 0, crec.cut_debt)),
                ]
                m.next = "SETUP2"
            with m.State("SETUP2"):
                act = Mux(su.move, prec.active, su.active) if H else su.active
                m.d.sync += wsum2.eq(wbase + Mux(act, cwnd3, 0))
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
                m.d.sync += [upd.conn.eq(su.conn), upd.path.eq(su.path), upd.cwnd.eq(cwnd3),
                             upd.wsum.eq(_max(wsum2, self.mtu)), upd.debt.eq(crec.cut_debt)]
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
                # the records as read (a block RAM's output goes straight to a register)
                m.d.sync += [crec.eq(cr), prec.eq(pr)]
                m.next = "ACC"
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
                                 hinted.eq(1),
                                 over.eq(Mux(prec.cwnd > crec.bcap, prec.cwnd - crec.bcap, 0))]
                    with m.If(rate_r != crec.rate):
                        # MR-CW-061 (b): a hint change: refused, nothing written; a move is due
                        m.d.sync += [upd.conn.eq(ev.conn), upd.path.eq(ev.path),
                                     upd.cwnd.eq(prec.cwnd), upd.wsum.eq(_max(crec.wsum, self.mtu)),
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
                                     over.eq(Mux(prec.cwnd > b.cap, prec.cwnd - b.cap, 0))]
                        m.next = "CLAMP"
                with m.State("CLAMP"):
                    # MR-CW-053's clamp: the window at most the path cap, W less the excess
                    m.d.sync += [prec.cwnd.eq(prec.cwnd - over),
                                 crec.wsum.eq(crec.wsum - Mux(prec.active, over, 0))]
                    m.next = "ACC"
            with m.State("ACC"):
                # MR-CW-010/011: W, the event's CE count (one per packet), the accumulators and
                # the end of the path's observation window
                ce_now = _min(ev.ce, ev.pkts)
                ce_sum = prec.ce_acc + ce_now
                ack_sum = prec.ack_acc + ev.pkts
                m.d.sync += [
                    w.eq(_max(crec.wsum, self.mtu)),
                    ce.eq(ce_now),
                    ce_acc.eq(Mux(ce_sum > model.ACC_MAX, model.ACC_MAX, ce_sum)),
                    ack_acc.eq(Mux(ack_sum > model.ACC_MAX, model.ACC_MAX, ack_sum)),
                    end.eq((ev.pkts != 0) & ~_time_lt(ev.now, prec.next_dec)),
                    epoch_due.eq(~_time_lt(ev.now, crec.cut_end)),
                ]
                m.next = "PROD"
            with m.State("PROD"):
                # MR-CW-012/013: the cut wanted (beta x MTU x marks), a new epoch's budget
                # (beta x W), the increase's dividend and divisor
                dvs = Mux(crec.multi, _max(prec.cwnd, w), _max(prec.cwnd, 1))
                m.d.sync += [
                    want0.eq((beta_mtu * ce_acc) >> P.Q),
                    left_new.eq((self.beta_q * w) >> P.Q),
                    dividend.eq(self.mtu * ev.bytes),
                    divisor.eq(dvs),
                    # (with hints, the cap compare is CUT1's, on the divisor registered: the
                    # divisor's maximum and this compare in one cycle placed at 124.83 MHz)
                    inc_ok.eq((ev.pkts != 0) & (ce == 0) & (ev.bytes != 0)
                              & (1 if H else (~crec.multi | (dvs < self.cap)))),
                    can.eq(Mux(prec.cwnd > crec.floor, prec.cwnd - crec.floor, 0)),
                    wbase.eq(Mux(prec.active, crec.wsum - prec.cwnd, crec.wsum)),
                ]
                if H:
                    m.d.sync += wadj.eq(w - prec.cwnd)
                m.next = "CUT1"
            with m.State("CUT1"):
                # MR-CW-013: the coupled cut at the end of an observation window with marks:
                # a new epoch's budget, the cut within it
                cut = end & (ce_acc != 0)
                epoch = cut & epoch_due
                left0 = Mux(epoch, left_new, crec.cut_left)
                m.d.sync += [
                    want.eq(Mux(cut, _min(want0, left0), 0)),
                    cutting.eq(cut),
                    cut_left.eq(left0),
                    cut_end.eq(Mux(epoch, (ev.now + ev.srtt)[:P.TIME_BITS], crec.cut_end)),
                    next_dec.eq(Mux(end, (ev.now + ev.srtt)[:P.TIME_BITS], prec.next_dec)),
                    sat.eq(dividend >= (divisor << QB)),
                ]
                if H:
                    m.d.sync += inc_ok.eq(inc_ok & (~crec.multi | (divisor < self.cap)))
                m.next = "CUT2"
            with m.State("CUT2"):
                # MR-CW-013: the window takes the cut down to its floor
                take = _min(want, can)
                m.d.sync += [
                    take_cut.eq(take),
                    cwnd1.eq(prec.cwnd - take),
                    cut_left.eq(cut_left - want),
                    # MR-CW-012: the increase only where the cut left the window as it was
                    inc.eq(inc_ok & (take == 0)),
                ]
                if H:
                    # the part the window cannot take, here (CUT3's subtraction, add and
                    # compare with W in one cycle placed at 124.80 MHz with hints)
                    m.d.sync += rest.eq(Mux(want > can, want - can, 0))
                m.next = "CUT3"
            with m.State("CUT3"):
                # MR-CW-013: the rest is a debt, at most W
                debt_sum = crec.cut_debt + (rest if H else (want - take_cut))
                m.d.sync += [
                    cut_debt.eq(Mux(cutting, _min(w, debt_sum), crec.cut_debt)),
                    rem.eq(dividend >> QB),
                    quot.eq(dividend[:QB]),
                    count.eq(QB // self.div_bits),
                ]
                m.next = "DIV"
            with m.State("DIV"):
                # MR-CW-031: div_bits quotient bits per cycle (each difference's sign is its
                # compare)
                r, q, k = rem, quot, self.div_bits
                for i in range(k):
                    shifted = Cat(q[QB - 1], r)
                    diff = Signal(signed(sb + 3), name=f"diff{i}")
                    m.d.comb += diff.eq(shifted - divisor)
                    ge = ~diff[-1]
                    r = Mux(ge, diff[:sb + 1], shifted)[:sb + 1]
                    q = Cat(ge, q[:QB - 1])
                m.d.sync += [rem.eq(r), quot.eq(q), count.eq(count - 1)]
                with m.If(count == 1):
                    m.next = "GROW1"
            with m.State("GROW1"):
                # MR-CW-012: the increase (a saturated quotient is above any cap) ...
                q = Mux(sat, (1 << (model.WIN_BITS + 1)) - 1, quot[:model.WIN_BITS + 1])
                big = sat | (quot[model.WIN_BITS + 1:] != 0)
                m.d.sync += grown.eq(Mux(big, (1 << (model.WIN_BITS + 1)) - 1, cwnd1 + q))
                m.next = "GROW2"
            with m.State("GROW2"):
                # ... at most the cap
                lim = Mux(hinted, bcap, self.cap) if H else self.cap   # MR-CW-061 (c)
                m.d.sync += cwnd2.eq(Mux(inc, _min(grown, lim), cwnd1))
                m.next = "DEBT1"
            with m.State("DEBT1"):
                # MR-CW-015: the cut debt from this window, down to its floor
                m.d.sync += give.eq(Mux(cwnd2 > crec.floor, cwnd2 - crec.floor, 0))
                m.next = "DEBT2"
            with m.State("DEBT2"):
                m.d.sync += take_debt.eq(Mux(ev.pkts != 0, _min(cut_debt, give), 0))
                m.next = "DEBT3"
            with m.State("DEBT3"):
                c3 = cwnd2 - take_debt
                m.d.sync += [cwnd3.eq(c3), debt2.eq(cut_debt - take_debt),
                             wsum2.eq(Mux(prec.active, wbase + c3, wbase))]
                if H:
                    m.d.sync += wend.eq(Mux(prec.active, wadj + c3, w))
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
                m.d.sync += [upd.conn.eq(ev.conn), upd.path.eq(ev.path), upd.cwnd.eq(cwnd3),
                             upd.wsum.eq(_max(wsum2, self.mtu)), upd.debt.eq(debt2)]
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
                                 upd.refill.eq(hinted & (ev.pkts != 0) & (wend < bsum))]
                m.next = "OUT"
            with m.State("OUT"):
                m.d.comb += self.m_update.valid.eq(1)
                with m.If(self.m_update.ready):
                    m.next = "IDLE"
        return m


def cwnd_small(width=64):
    """The small instance (MR-CW-001): 2 connections x 4 paths."""
    return Cwnd(width, **model.SMALL)


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
