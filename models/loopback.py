"""A tiny deterministic two-endpoint event loop with a seeded fault injector (tests only).

Two endpoints (anything with the endpoint contract's transport side) joined by one link each
way: line-rate serialisation, a fixed one-way delay, and ``routes`` ECMP routes chosen by a
hash of the UDP source port (so a route can die and a path that changes its entropy moves off
it). Each route is FIFO; only the ``reorder`` fault reorders. This is not the fabric
simulator (sim/fabric.py); it exists so the endpoints can be tested on their own.
"""
from __future__ import annotations

import copy
import heapq
import random
from collections import Counter
from dataclasses import dataclass, field

from . import codec
from .wire import PAYLOAD_OPS

_DATA = frozenset(int(o) for o in PAYLOAD_OPS)


@dataclass
class LoopFaults:
    """Fault probabilities per frame (all default to a perfect link).

    ``loss``: data frames lost independently. ``ctrl_loss``: ACK/NAK frames lost.
    ``burst``: ``(p_enter, p_leave)`` of a two-state channel that loses every data frame while
    bad. ``reorder``/``reorder_delay``: a frame held back by up to that many seconds.
    ``duplicate``: a second copy delivered. ``corrupt``: one random bit flipped after
    encoding, then decoded (a decode error is a counted drop). ``ce``: data frames CE-marked.
    ``dead_routes``: routes (0..routes-1) that lose everything between ``dead_from`` and
    ``dead_until``. ``drop_if``: optional predicate ``(frame, now) -> bool`` for targeted loss.
    """
    loss: float = 0.0
    ctrl_loss: float = 0.0
    burst: tuple | None = None
    reorder: float = 0.0
    reorder_delay: float = 5e-6
    duplicate: float = 0.0
    corrupt: float = 0.0
    ce: float = 0.0
    dead_routes: frozenset = frozenset()
    dead_from: float = 0.0
    dead_until: float = float("inf")
    drop_if: object = None
    _bad: bool = field(default=False, repr=False)


class Loopback:
    """Run endpoints ``a`` and ``b`` against each other.

    ``rate_bps`` defaults to each endpoint's ``line_rate_bps``; ``delay`` is one-way
    propagation; ``faults`` applies in both directions (``faults_ab``/``faults_ba`` override).
    Completions are collected in ``self.completions[0 or 1]``.
    """

    def __init__(self, a, b, *, delay=5e-6, rate_bps=None, routes=8, seed=0, faults=None,
                 faults_ab=None, faults_ba=None):
        self.eps = (a, b)
        self.delay = delay
        self.rate = (rate_bps or a.line_rate_bps, rate_bps or b.line_rate_bps)
        self.routes = routes
        self.rng = random.Random(seed)
        f = faults or LoopFaults()
        self.faults = (faults_ab or f, faults_ba or copy.copy(f))
        self.now = 0.0
        self._ev = []
        self._seq = 0
        self._busy = [0.0, 0.0]
        self._wake = [None, None]
        self.completions = ([], [])
        self.stats = Counter()
        self.events = 0
        self.last_completion = None

    def _at(self, t, kind, i, data=None):
        self._seq += 1
        heapq.heappush(self._ev, (t, self._seq, kind, i, data))

    def route_of(self, frame):
        return (frame.udp.sport * 2654435761 >> 7) % self.routes

    def kick(self):
        for i in (0, 1):
            self._at(self.now, 0, i)

    def _pump(self, i):
        now = self.now
        if self._busy[i] > now:
            return
        ep = self.eps[i]
        f = ep.next_packet(now)
        if f is None:
            w = ep.next_wakeup(now)
            if w is not None:
                w = max(w, now + 1e-9)
                if self._wake[i] is None or w < self._wake[i]:
                    self._wake[i] = w
                    self._at(w, 1, i, w)
            return
        ser = codec.wire_len(f) * 8 / self.rate[i]
        self._busy[i] = now + ser
        self._at(now + ser, 0, i)
        self.stats["frames"] += 1
        self._transmit(f, i, now + ser)

    def _transmit(self, f, i, t):
        fl = self.faults[i]
        rng = self.rng
        data = int(f.bth.opcode) in _DATA
        now = self.now
        if fl.dead_routes and fl.dead_from <= now < fl.dead_until and self.route_of(f) in fl.dead_routes:
            self.stats["dead_route_drops"] += 1
            return
        if fl.drop_if is not None and fl.drop_if(f, now):
            self.stats["targeted_drops"] += 1
            return
        if data:
            if fl.loss and rng.random() < fl.loss:
                self.stats["lost"] += 1
                return
            if fl.burst:
                pe, pl = fl.burst
                fl._bad = (rng.random() >= pl) if fl._bad else (rng.random() < pe)
                if fl._bad:
                    self.stats["burst_lost"] += 1
                    return
            if fl.ce and rng.random() < fl.ce:
                f.ip = copy.copy(f.ip)
                f.ip.ecn = 3
        elif fl.ctrl_loss and rng.random() < fl.ctrl_loss:
            self.stats["ctrl_lost"] += 1
            return
        if fl.corrupt and rng.random() < fl.corrupt:
            raw = bytearray(codec.encode(f))
            bit = rng.randrange(14 * 8, len(raw) * 8)
            raw[bit // 8] ^= 1 << (bit % 8)
            try:
                f = codec.decode(bytes(raw))
                self.stats["corrupt_undetected"] += 1
            except codec.DecodeError as e:
                self.stats["corrupt_dropped"] += 1
                self.stats["decode_" + e.reason.label] += 1
                return
        arrive = t + self.delay
        if fl.reorder and rng.random() < fl.reorder:
            arrive += rng.random() * fl.reorder_delay
            self.stats["reordered"] += 1
        self._at(arrive, 2, 1 - i, f)
        if fl.duplicate and rng.random() < fl.duplicate:
            g = copy.copy(f)
            g.ip = copy.copy(f.ip)
            self._at(arrive + rng.random() * 1e-7, 2, 1 - i, g)
            self.stats["duplicated"] += 1

    def run(self, until=1.0, max_events=5_000_000):
        """Run until nothing is pending, simulated ``until`` seconds, or ``max_events``."""
        self.kick()
        ev = self._ev
        while ev and self.events < max_events:
            t, _, kind, i, data = heapq.heappop(ev)
            if t > until:
                heapq.heappush(ev, (t, 0, kind, i, data))
                break
            self.now = t
            self.events += 1
            if kind == 1:
                if self._wake[i] != data:
                    continue
                self._wake[i] = None
            elif kind == 2:
                self.eps[i].receive(data, t)
            self._pump(i)
            cq = self.eps[i].poll_cq()
            if cq:
                self.completions[i].extend(cq)
                self.last_completion = t
        return self.now
