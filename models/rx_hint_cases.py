"""Stimulus and the reference of the receiver's hint block (docs/spec/hw-engine.md section 5q,
MR-ENG-334..336): a random loop for the lockstep, directed arrival traces, and the reference
endpoint's share count (``Endpoint._share_note`` / ``_rate_hint``) run on the same arrivals."""
from __future__ import annotations

import random

from .rx import pack
from .rx_hint import RxHintMemModel, RxHintModel, seen_layout

__all__ = ["RandomLoop", "BurstLoop", "TraceLoop", "endpoint_hints", "model_hints", "two_senders",
           "incast_start", "forms_compare"]


class _Loop:
    """One arrival record per cycle at most; ``now`` given by the subclass; static
    configuration. Records the ``hint`` and ``senders`` outputs seen."""

    def __init__(self, conns, line_mbps, share_ns, mtu):
        self.conns, self.lay = conns, seen_layout(conns)
        self.cfg = {"line_mbps": line_mbps, "share_ns": share_ns, "mtu": mtu}
        self.cycle = 0
        self.taken = 0
        self.hints = set()
        self.max_senders = 0

    def _inputs(self, now, rec):
        v = {"now": now, **self.cfg, "s_seen__valid": int(rec is not None),
             "s_seen__payload": pack(self.lay, dict(zip(("conn", "ce", "more"), rec))) if rec else 0}
        return v

    def settle(self, busy):
        """Nothing to wait for: the run is its cycles."""

    def observe(self, inp, out):
        self.cycle += 1
        self.taken += inp["s_seen__valid"]
        self.hints.add(out["hint"])
        self.max_senders = max(self.max_senders, out["senders"])


class _RandomClockLoop(_Loop):
    """``n`` cycles; ``now`` advances 1..16 ns a cycle and one cycle in 500 by 1..3 intervals
    (stale intervals, MR-ENG-331)."""

    def __init__(self, conns, n, seed, line_mbps, share_ns, mtu):
        super().__init__(conns, line_mbps, share_ns, mtu)
        self.rng, self.n, self.now = random.Random(seed), n, 0

    @property
    def finished(self):
        return self.cycle >= self.n

    def _tick(self):
        r = self.rng
        self.now = (self.now + (r.randrange(1, 17) if r.random() > 1 / 500
                                else r.randrange(1, 4) * 2 * self.cfg["share_ns"])) & 0xFFFF_FFFF


class RandomLoop(_RandomClockLoop):
    """MR-ENG-334: ``n`` cycles; an arrival with probability ``p_valid`` (random connection, CE
    one time in four, more due one time in two); ``now`` advances 1..16 ns a cycle and one cycle
    in 500 by 1..3 intervals (stale intervals, MR-ENG-331)."""

    def __init__(self, conns, n=3000, seed=0, p_valid=0.4, line_mbps=10_000, share_ns=300, mtu=64):
        super().__init__(conns, n, seed, line_mbps, share_ns, mtu)
        self.p_valid = p_valid

    def inputs(self):
        r = self.rng
        self._tick()
        rec = ((r.randrange(self.conns), int(r.random() < 0.25), r.randrange(2))
               if r.random() < self.p_valid else None)
        return self._inputs(self.now, rec)


class BurstLoop(_RandomClockLoop):
    """MR-ENG-350: ``n`` cycles of arrivals in bursts: a burst (``burst`` cycles long on
    average) has an arrival every cycle, between bursts one with probability ``p_valid``; an
    arrival is the previous one's connection (back to back when both are in a burst) with
    probability ``p_same``, else one of the active set, which is redrawn (1 to ``conns``
    connections) one cycle in ``phase`` (so that connections stay idle for many intervals and
    come back). ``now`` as :class:`RandomLoop`'s; CE one time in four, more due one in two."""

    def __init__(self, conns, n=4000, seed=0, p_valid=0.2, p_same=0.3, burst=12, phase=400,
                 line_mbps=10_000, share_ns=300, mtu=64):
        super().__init__(conns, n, seed, line_mbps, share_ns, mtu)
        self.p_valid, self.p_same, self.burst, self.phase = p_valid, p_same, burst, phase
        self.active, self.in_burst, self.last = [0], False, 0
        self.back_to_back = 0       # arrivals of the previous cycle's connection, the cycle after
        self._prev = None

    def inputs(self):
        r = self.rng
        self._tick()
        if r.random() < 1 / self.phase:
            self.active = r.sample(range(self.conns), r.randint(1, self.conns))
        if r.random() < 1 / (self.burst if self.in_burst else 4 * self.burst):
            self.in_burst = not self.in_burst
        rec = None
        if self.in_burst or r.random() < self.p_valid:
            conn = self.last if r.random() < self.p_same else r.choice(self.active)
            rec = (conn, int(r.random() < 0.25), r.randrange(2))
            self.back_to_back += self._prev == conn
            self.last = conn
        self._prev = rec[0] if rec else None
        return self._inputs(self.now, rec)


def forms_compare(drv, conns, wrong=None, cfg=None):
    """MR-ENG-349: the flip-flop form's model and the memory form's (``wrong`` its negative
    control) on the arrivals of ``drv`` (a loop of this module); returns the cycles ``t`` whose
    flip-flop outputs ``(hint, senders)`` differ from the memory form's in cycle ``t + 1``, and the
    two models."""
    ff, mem = RxHintModel(conns), RxHintMemModel(conns, wrong)
    lay = drv.lay
    prev, diff = None, []
    from .rx import unpack
    while not drv.finished:
        inp = drv.inputs()
        c = {k: inp[k] for k in ("line_mbps", "share_ns", "mtu")}
        out_ff = (ff.hint, ff.senders())
        if prev is not None and prev != (mem.hint, mem.senders()):
            diff.append(drv.cycle - 1)
        r = unpack(lay, inp["s_seen__payload"])
        for mod in (ff, mem):
            mod.step(inp["s_seen__valid"], r["conn"], r["ce"], r["more"], inp["now"], **c)
        prev = out_ff
        drv.observe(inp, {"hint": out_ff[0], "senders": out_ff[1]})
    return diff, ff, mem


class TraceLoop(_Loop):
    """MR-ENG-335: the arrivals ``trace`` (``(t_ns, conn, ce, more)``, times multiples of
    ``ns_per_cycle``, in order) at their cycles, ``now`` = cycle x ``ns_per_cycle``; ``tail``
    idle cycles after the last. ``before[i]`` is the ``hint`` output at arrival i's cycle (the
    block's hint after arrivals 0..i-1, settled when they are far enough apart); ``final`` the
    hint at the end."""

    def __init__(self, conns, trace, ns_per_cycle=4, tail=200, **cfg):
        super().__init__(conns, **cfg)
        self.at = {t // ns_per_cycle: (c, ce, more) for t, c, ce, more in trace}
        assert len(self.at) == len(trace) and all(t % ns_per_cycle == 0 for t, *_ in trace)
        self.ns, self.n = ns_per_cycle, max(self.at) + 1 + tail
        self.before, self.final = [], None

    @property
    def finished(self):
        return self.cycle >= self.n

    def inputs(self):
        return self._inputs(self.cycle * self.ns, self.at.get(self.cycle))

    def observe(self, inp, out):
        if inp["s_seen__valid"]:
            self.before.append(out["hint"])
        self.final = out["hint"]
        super().observe(inp, out)


class _Conn:
    """The receive-side fields of an endpoint ``Connection`` that its share count reads."""

    def __init__(self, lid, host):
        self.local_id, self.peer_addr = lid, host
        self.rx_more = False
        self.rx_iv_bytes = self.rx_iv_prev = 0
        self.rx_iv_epoch = -2
        self.rx_hint = None
        self.rx_hint_age = 0


def endpoint_hints(trace, conns, *, line_mbps, share_ns, mtu, hosts=None, wire_bytes=1024):
    """MR-ENG-335: the reference endpoint's hint after each arrival of ``trace``: a receiving
    ``Endpoint`` (its line rate ``line_mbps``, base RTT and share interval ``share_ns``, MTU
    ``mtu``) whose ``_share_note`` takes the arrivals of ``conns`` connections (connection i
    from ``hosts[i]``, default one host each), and ``_rate_hint`` after each. Returns a list of
    ``(hint, predicted, limited)``: whether MR-CC-010's prediction or MR-CC-012's limited
    senders acted in that hint (the parts not built, MR-ENG-337)."""
    from .endpoint import Endpoint
    ep = Endpoint("10.0.0.1", mtu=mtu, line_rate_bps=line_mbps * 1e6, base_rtt=share_ns * 1e-9)
    hosts = hosts or [f"10.0.1.{i + 1}" for i in range(conns)]
    cs = [_Conn(i, hosts[i]) for i in range(conns)]
    for c in cs:
        ep._conns[c.local_id] = c
    out = []
    for t, conn, ce, more in trace:
        c = cs[conn]
        c.rx_more = bool(more)
        ep._share_note(c, t, bool(ce), wire_bytes)
        n0 = max(ep._share_prev, len(ep._share_seen))
        out.append((ep._rate_hint(), ep._n_est != n0, ep._n_lim != 0))
    return out


def model_hints(trace, conns, *, ns_per_cycle=4, wrong=None, form="flops", **cfg):
    """MR-ENG-335: :class:`RxHintModel` (``form`` "memory": :class:`RxHintMemModel`,
    MR-ENG-350) on ``trace`` as :class:`TraceLoop` drives it: the hint after each arrival (read
    at the next arrival's cycle, the last one at the end)."""
    drv = TraceLoop(conns, trace, ns_per_cycle, **cfg)
    m = (RxHintMemModel if form == "memory" else RxHintModel)(conns, wrong)
    c = cfg
    while not drv.finished:
        inp = drv.inputs()
        out = {"hint": m.hint, "senders": m.senders()}
        rec = drv.at.get(drv.cycle)
        m.step(int(rec is not None), *(rec or (0, 0, 0)), inp["now"], c["line_mbps"], c["share_ns"], c["mtu"])
        drv.observe(inp, out)
    return drv.before[1:] + [drv.final]


def two_senders(gap_ns=800, start_b=14_000, n=100, seed=2, ce_from=20):
    """MR-ENG-335: two senders into one receiver: A from time 0, B from ``start_b`` (after
    MR-CC-010's window of 16 MTU packet times, so the endpoint predicts nothing), each a packet
    every 2 ``gap_ns`` alternately (``gap_ns`` apart overall, with a jitter of 0..96 ns, times multiples of 8 ns), messages of 4
    packets (more due on the first 3), CE marks one time in three on A's packets from packet
    ``ce_from`` on; then A stops and B alone goes on (the count falls back, the hint to 0)."""
    r = random.Random(seed)
    trace, t, k = [], 0, 0
    while len(trace) < n:
        t += gap_ns + 8 * r.randrange(0, 13)
        if t < start_b:
            conn = 0
        elif len(trace) < 3 * n // 4:
            conn = k % 2
            k += 1
        else:
            conn = 1
        ce = int(conn == 0 and len(trace) >= ce_from and r.random() < 1 / 3)
        trace.append((t, conn, ce, int(len(trace) % 4 != 3)))
    return trace


def incast_start(conns=8, gap_ns=400, n=40):
    """MR-ENG-337: ``conns`` senders from ``conns`` hosts starting together (an incast): the
    endpoint's MR-CC-010 prediction acts (not built in the block)."""
    return [(gap_ns * (i + 1), i % conns, 0, 1) for i in range(n)]
