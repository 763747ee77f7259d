"""The pacer's join into the TX scheduler: driver and checks (docs/spec/hw-tx-sched.md
MR-TXS-165/166). :class:`PacedDriver` is the scheduler's driver of MR-TXS-050 (work requests,
the closed loop through the retransmit unit's semantics and a lossy receiver, idle cycles and
backpressure; ``now`` advancing ``ns_per_cycle`` a cycle) with the pacer's port: every
connection opened (``set_time`` at the driver's ``now``, some at a rate below the line rate),
then rate writes (no time) in a fraction of the cycles. :func:`check_paced` checks MR-TXS-165
on :class:`models.tx_pace.PacedTxSchedCycleModel`'s record. The TX engine's (hw-tx.md
MR-TX-236/237): :class:`PacedTxDriver` (the engine's driver with the same write port, the
mixin :class:`PaceWrites`), :func:`check_spacing` and :func:`check_frames_left`."""
from __future__ import annotations

import random

from . import codec
from . import pacer as pacer_model
from . import protocol as P
from .rx import pack
from .tx_cases import BenchDriver
from .tx_cases import Driver as TxDriver
from .tx_sched_cases import Driver

__all__ = ["PaceWrites", "PacedDriver", "PacedTxDriver", "PacedBenchDriver", "PaceTimes", "forced_without_write", "bench_row", "check_frames_left", "check_spacing",
           "check_paced", "check_gaps", "LINE_MBPS", "mtu_wire"]

#: the line rate of the runs: at 4 ns a cycle and an MTU of 1,024 bytes (1,114 on the wire with
#: 90 bytes of headers) a full frame's gap is 23 ns at the line rate, 92 ns at a quarter of it
LINE_MBPS = 400_000


def mtu_wire(mtu):
    """The pacer's ``mtu_wl`` for the scheduler's MTU: the payload and a data frame's headers
    (``Pacer.DATA_HDR``)."""
    return mtu + pacer_model.Pacer.DATA_HDR


class PaceWrites:
    """MR-TXS-166, MR-TX-236: the pacer's write port on a driver (a mixin before the driver's
    class, whose ``items``, ``i``, ``presenting``, ``now``, ``cycle`` and ``sent_all`` it uses).
    ``rates``: the rate each connection is opened at (Mb/s, 0 the line rate); ``p_rate``: the
    fraction of cycles with a rate write of a random connection, a rate from ``rate_choices``;
    ``p_retime``: the share of those writes that also set the time (MR-TXS-167: ``now`` - 200
    to ``now`` + 600 ns)."""

    def __init__(self, *args, mtu, rates, p_rate=0.01,
                 rate_choices=(0, 100_000, 200_000, 300_000, 400_000, 500_000), open_at=4,
                 p_retime=0.0, **kw):
        super().__init__(*args, **kw)
        lay = self.lay
        self.wl, self.pace_lay = mtu_wire(mtu), pacer_model.frame_layouts(lay.conns)
        self.opens = [{"conn": c, "rate": r, "set_time": 1} for c, r in enumerate(rates)]
        self.p_rate, self.rate_choices, self.open_at = p_rate, rate_choices, open_at
        self.pw_rng = random.Random(kw.get("seed", 0) ^ 0x9ACE)
        self.pw_offer, self.pw_open, self.p_retime = None, False, p_retime
        self.res["pace_writes"] = []

    def inputs(self):
        # the work requests wait for the opens (the first slice's writers write the time only at
        # the open, MR-TXS-166)
        hold = bool(self.opens) or self.pw_open
        rsp = getattr(self, "rsps", None)       # and the READ responses (the scheduler's)
        if hold:
            saved, self.presenting = self.presenting, None
            i, self.i = self.i, len(self.items)
            if rsp:
                ri, self.rsp_i = self.rsp_i, len(rsp)
        inp = super().inputs()
        if hold:
            self.presenting, self.i = saved, i
            if rsp:
                self.rsp_i = ri
        inp.update({"mtu_wl": self.wl, "line_mbps": LINE_MBPS})
        if self.pw_offer is None and self.cycle >= self.open_at:
            r = self.pw_rng
            if self.opens:
                self.pw_offer, self.pw_open = dict(self.opens.pop(0), time=self.now), True
            elif not self.sent_all and r.random() < self.p_rate:
                self.pw_offer = {"conn": r.randrange(self.lay.conns),
                                 "rate": r.choice(self.rate_choices), "set_time": 0, "time": 0}
                if self.p_retime and r.random() < self.p_retime:
                    self.pw_offer.update(set_time=1,
                                         time=(self.now + r.randrange(-200, 600)) & P.TIME_MASK)
        inp["s_pace_write__valid"] = int(self.pw_offer is not None)
        inp["s_pace_write__payload"] = (pack(self.pace_lay["write"], self.pw_offer)
                                        if self.pw_offer is not None else 0)
        return inp

    def observe(self, inp, out):
        if self.pw_offer is not None and out.get("s_pace_write__ready"):
            self.res["pace_writes"].append((self.cycle, self.pw_offer))
            self.pw_offer, self.pw_open = None, False
        super().observe(inp, out)


class PacedDriver(PaceWrites, Driver):
    """MR-TXS-166: the scheduler's driver (MR-TXS-050) with the pacer's write port
    (:class:`PaceWrites`)."""


class PacedTxDriver(PaceWrites, TxDriver):
    """MR-TX-236: the TX engine's driver (``tx_cases.Driver``, MR-TX-150) with the pacer's write
    port (:class:`PaceWrites`); it also keeps each frame's connection and the ``now`` of the
    cycle its last beat left (``res["left"]``, for :func:`check_frames_left`)."""

    def _frame(self, raw, tuser=0):
        f = codec.decode(raw)
        conn = self.qp_conn[f.bth.dest_qp]
        now = (self.now - self.ns_per_cycle) & P.TIME_MASK
        # MR-TX-389: a tail probe's frame (its path's newest PSN again, MR-TX-179) is no
        # scheduler packet (it leaves at once, MR-TXS-084): kept apart from the packets' frames
        if f.mrdh is not None:
            nxt = self.__dict__.setdefault("_next_psn", {})
            key = (conn, f.mrdh.path)
            if key in nxt and f.bth.psn != nxt[key]:
                self.res.setdefault("probes_left", []).append((conn, now))
                super()._frame(raw, tuser)
                return
            nxt[key] = P.psn_add(f.bth.psn, 1)
        self.res.setdefault("left", []).append((conn, now))
        super()._frame(raw, tuser)



class PacedBenchDriver(PaceWrites, BenchDriver):
    """MR-TX-250: ``bench tx_paced``'s run: the TX engine's bench driver (MR-TX-153: no idle
    cycles, no backpressure, an AXI read latency of one cycle, every frame ACKed at once) with
    ``n`` WRITEs of ``nbytes`` (default one MTU: one full-MTU packet each) all of connection 0
    (its streams in turn), connection 0 opened at ``rate`` Mb/s (0: the line rate), connection 1
    at the line rate, no rate writes after the opens; no loss, so no timer need expire: the
    driver never moves ``now`` on while the pacer holds the frames (its quiet rule,
    ``tx_cases.Driver.QUIET``, would), and a run ends on the model's ``active`` (the retransmit
    unit's idle timers not counted)."""

    QUIET = 1 << 30

    def __init__(self, lay, width, n, rate, *, mtu, paths, nbytes=None):
        from .tx_sched import OP_WRITE
        from .tx_sched_cases import wr_item
        nbytes = nbytes or mtu
        super().__init__(lay, width, n, nbytes, paths=paths, mtu=mtu, rates=[rate, 0],
                         p_rate=0.0)
        # the bench driver's items, moved to connection 0 (their payloads where they were)
        self.items = [wr_item(0, k % lay.sched.streams, nbytes, wr_id=k, op=OP_WRITE,
                              laddr=it["laddr"], va=k * nbytes, rkey=1)
                      for k, it in enumerate(self.items)]
        self.wr_bytes = nbytes


def bench_row(drv, width, rate, mtu, cycles, wall, mismatches, sim):
    """MR-TX-250: one row of ``bench tx_paced`` from a finished :class:`PacedBenchDriver` run:
    the kept gap of connection 0's rate (``pacer.mtu_gap_ns`` of a full-MTU frame's wire length;
    0 at the line rate, where the pacer does not space), the frames' spacing on ``m_axis``
    (first beat to first beat, from the second frame on: the first waits for its payload's read)
    in ns, its mean and least, and the wire rate over those frames (``achieved_mbps``: each
    frame's bytes and ``protocol.WIRE_OVERHEAD`` from the second frame's first beat to the last
    one's)."""
    wl = mtu_wire(mtu)
    line = P.clamp_hint_mbps(rate, LINE_MBPS)
    gap = pacer_model.mtu_gap_ns(wl, line) if line < LINE_MBPS else 0
    ns = drv.ns_per_cycle
    fb = drv.first_beats
    steps = [(b - a) * ns for a, b in zip(fb[1:], fb[2:])]
    mean = sum(steps) / len(steps) if steps else None
    bits = sum((len(r) + P.WIRE_OVERHEAD) * 8 for r in drv.res["raw"][1:-1])
    return {"width": width, "rate_mbps": rate, "line_mbps": LINE_MBPS,
            "wr_bytes": drv.wr_bytes, "frame_wire_bytes": wl,
            "gap_ns": gap, "packets": len(fb), "spacing_ns": round(mean) if mean else None,
            "min_spacing_ns": min(steps) if steps else None,
            "achieved_mbps": round(bits * 1000 / sum(steps)) if steps else None,
            "lockstep_cycles_per_s": round(cycles / wall) if wall and sim != "model" else None,
            "mismatches": mismatches, "sim": sim}


class PaceTimes:
    """MR-TX-389: a lockstep's ``on_cycle`` hook (``on_cycle(cycle, inputs, outputs)``) on the
    paced engine: the ``now`` of the cycle the pacer took each charge (``takes``, in the order
    of ``paced.charges``) and of each write with a time it took (``time_writes``:
    ``(conn, now)``)."""

    def __init__(self, paced):
        self.paced, self.takes, self.time_writes = paced, [], []
        self.lay = paced.pace_lay["write"]

    def __call__(self, cycle, inp, out):
        now = inp.get("now", 0)
        while len(self.takes) < len(self.paced.charges):
            self.takes.append(now)
        if inp.get("s_pace_write__valid") and out.get("s_pace_write__ready"):
            from .rx import unpack
            w = unpack(self.lay, inp.get("s_pace_write__payload", 0))
            if w["set_time"]:
                self.time_writes.append((w["conn"], now))


def _bounds(paced, times=None):
    """Per connection, each packet's earliest time: its ``pace_until`` in the pacer when it was
    decided and, for a charged packet after the connection's first, the ``pace_until`` the
    connection's previous charge set (a charge is taken some cycles after its packet's
    decision, so the pacer's time at the decision may not yet hold the previous packet).
    MR-TX-389: with ``times`` (:class:`PaceTimes`), that second bound is left out when a write
    with a time of the connection was taken after that charge and not after the packet's
    decision (the write sets ``pace_until`` outright, MR-TXS-167, earlier too)."""
    after, take = {}, {}
    for i, (c, _, _, a) in enumerate(paced.charges):
        after.setdefault(c, []).append(a)
        if times is not None:
            take.setdefault(c, []).append(times.takes[i])
    per, k = {}, {}
    for c, now, pu, ch in paced.packets:
        b = [pu]
        if ch:
            j = k.get(c, 0)
            k[c] = j + 1
            if 0 < j <= len(after.get(c, ())):
                if times is None or not any(
                        wc == c and P.time_lt(take[c][j - 1], wn) and not P.time_lt(now, wn)
                        for wc, wn in times.time_writes):
                    b.append(after[c][j - 1])
        per.setdefault(c, []).append((now, b))
    return per


def check_spacing(paced, times=None):
    """MR-TX-237: the packets decided before one of their bounds (:func:`_bounds`; ``times``
    MR-TX-389's): ``(conn, now, bound)``."""
    return [(c, now, x) for c, v in _bounds(paced, times).items() for now, b in v for x in b
            if P.time_lt(now, x)]


def forced_without_write(paced, times):
    """MR-TX-389: the charges the pacer took forced (its ``pace_until`` then past the packet's
    ``now``) with no write with a time of the connection taken after the packet's decision and
    not after the charge's take (the only way a charge is forced: MR-TXS-167)."""
    return [ch for i, ch in enumerate(paced.charges) if P.time_lt(ch[1], ch[2]) and not any(
        wc == ch[0] and P.time_lt(ch[1], wn) and not P.time_lt(times.takes[i], wn)
        for wc, wn in times.time_writes)]


def check_frames_left(paced, left, times=None):
    """MR-TX-237: on the TX engine, frame k of a connection on ``m_axis`` (bad ones too) is the
    connection's packet k of the scheduler (the data path keeps the order); it left at a ``now``
    not before that packet's bounds (:func:`_bounds`). ``paced``: the engine model's
    :class:`PacedTxSchedCycleModel`; ``left``: :class:`PacedTxDriver`'s ``res["left"]``.
    Returns the frames early ``(conn, now left, bound)``, the frames and whether each
    connection's frames are its packets in number."""
    per, early, k = _bounds(paced, times), [], {}
    for c, now in left:
        i = k.get(c, 0)
        k[c] = i + 1
        if i < len(per.get(c, ())):
            early += [(c, now, x) for x in per[c][i][1] if P.time_lt(now, x)]
    return {"early": early, "frames": len(left),
            "same_count": set(k) == set(per) and all(k[c] == len(v) for c, v in per.items())}


def check_paced(model, mtu):
    """MR-TXS-165 on a :class:`PacedTxSchedCycleModel` run: every packet left at a ``now`` not
    before its connection's ``pace_until`` in the pacer then; every charge would have taken its
    turn unforced; the full-MTU packets are charged once each, in order, per connection.
    Returns counts (packets, charged, of them the ones the pacer moved the time for, and the
    packets early)."""
    early = [(c, now, pu) for c, now, pu, _ in model.packets if P.time_lt(now, pu)]
    forced = [ch for ch in model.charges if P.time_lt(ch[1], ch[2])]
    conns = {c for c, *_ in model.packets}
    charged = {c: [now for c2, now, _, ch in model.packets if ch and c2 == c] for c in conns}
    taken = {c: [now for c2, now, _, _ in model.charges if c2 == c] for c in conns}
    moved = sum(1 for _, _, b, a in model.charges if a != b)
    return {"packets": len(model.packets), "charged": sum(map(len, charged.values())),
            "moved": moved,
            "early": early, "forced": forced, "charges_in_order": charged == taken}


def check_gaps(model, rates):
    """MR-TXS-178 on a :class:`PacedTxSchedCycleModel` run whose connections kept the rates
    they were opened at (``rates``, Mb/s; 0 the line rate; no rate writes after the opens):
    each packet of a paced connection follows the connection's packet before it by at least
    that one's own gap, ``pacing_gap_ns`` of its wire length at the rate (MR-CW-084, the
    endpoint's charge). Returns ``{"pairs", "short", "close"}``: the pairs checked, those whose
    first packet is shorter than the full MTU's wire length, and the pairs too close
    ``(conn, now, next now, gap)``."""
    per = {}
    for (c, now, _, _), wl in zip(model.packets, model.packet_wl):
        per.setdefault(c, []).append((now, wl))
    res = {"pairs": 0, "short": 0, "close": []}
    for c, v in per.items():
        rate = P.clamp_hint_mbps(rates[c], LINE_MBPS)
        if rate >= LINE_MBPS:
            continue
        for (a, wl), (b, _) in zip(v, v[1:]):
            gap = P.pacing_gap_ns(wl, rate)
            res["pairs"] += 1
            res["short"] += wl < mtu_wire(model.sem.mtu)
            if (b - a) & P.TIME_MASK < gap:
                res["close"].append((c, a, b, gap))
    return res
