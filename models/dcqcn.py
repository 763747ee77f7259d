"""RoCEv2 RC with DCQCN: the deployed configuration (with PFC in the fabric) as a baseline.

DCQCN (Zhu et al., "Congestion Control for Large-Scale RDMA Deployments", SIGCOMM 2015) has three
parts; this module models the two that live in the NICs (MR-GBN-040..043):

- CP (switch): ECN marking, RED-like, done by the fabric (``ecn.mode = "red"`` in a scenario
  with the paper's Kmin 5 KB, Kmax 200 KB, Pmax 1 %; MR-FAB-014).
- NP (receiver): a CE-marked data packet makes the QP send one CNP (BTH opcode 0x81) to its
  peer, at most one per ``cnp_interval`` per QP.
- RP (sender): a per-QP rate limiter. A CNP cuts the current rate ``rc`` to
  ``rc x (1 - alpha / 2)`` after saving it as the target ``rt``, and raises ``alpha`` by
  ``g``; without CNPs ``alpha`` decays by ``(1 - g)`` every ``alpha_timer``. The rate recovers
  on two clocks, a timer of ``rate_timer`` and a byte counter of ``byte_counter`` bytes: each
  event sets ``rc = (rt + rc) / 2`` after raising ``rt`` by nothing (fast recovery, the first
  ``fast_recovery_steps`` events of both clocks), ``rate_ai`` (additive increase) or
  ``i x rate_hai`` (hyper increase, once both clocks passed F). At line rate the limiter
  is released.

Loss recovery is the go-back-N of :mod:`metaroce.models.rocev2` unchanged (the IBTA timeout
unless ``adaptive_rto`` is given). The fabric is expected to run PFC (lossless), as deployed.
"""
from __future__ import annotations

from .codec import BTH, IP, UDP, Eth, Frame
from .rocev2 import RoceEndpoint
from .wire import Op

#: Frame bytes on the wire beyond the payload of a RoCEv2 data packet, for pacing (Ethernet, IP,
#: UDP, BTH, ICRC, FCS, preamble and gap); the RETH of a first packet is ignored.
_PACING_OVERHEAD = 14 + 20 + 8 + 12 + 4 + 24


class RateLimiter:
    """DCQCN's reaction point for one QP (MR-GBN-041, MR-GBN-042). Rates in bit/s, times in s."""

    __slots__ = ("ep", "line", "rc", "rt", "alpha", "limited", "next_tx", "t_alpha", "t_inc",
                 "timer_events", "byte_events", "bytes")

    def __init__(self, ep):
        self.ep = ep
        self.line = ep.line_rate_bps
        self.rc = self.rt = self.line
        self.alpha = 1.0
        self.limited = False
        self.next_tx = 0.0
        self.t_alpha = self.t_inc = 0.0
        self.timer_events = self.byte_events = 0
        self.bytes = 0

    def on_cnp(self, now):
        """MR-GBN-041: cut the rate, remember the target, raise alpha, restart the clocks."""
        ep = self.ep
        self.advance(now)
        self.limited = True
        self.rt = self.rc
        self.rc = max(ep.min_rate, self.rc * (1 - self.alpha / 2))
        self.alpha = (1 - ep.g) * self.alpha + ep.g
        self.timer_events = self.byte_events = 0
        self.bytes = 0
        self.t_alpha = now + ep.alpha_timer
        self.t_inc = now + ep.rate_timer
        ep.stats["dcqcn_rate_cuts"] += 1

    def advance(self, now):
        """Run the alpha decay and the rate-increase timer up to ``now`` (MR-GBN-042)."""
        if not self.limited:
            return
        ep = self.ep
        while self.t_alpha <= now:
            self.alpha *= 1 - ep.g
            self.t_alpha += ep.alpha_timer
        while self.limited and self.t_inc <= now:
            self.timer_events += 1
            self.t_inc += ep.rate_timer
            self._increase()

    def on_sent(self, now, nbytes):
        """Pace the next packet and count bytes for the byte-counter clock."""
        if not self.limited:
            return
        ep = self.ep
        start = self.next_tx if self.next_tx > now else now
        self.next_tx = start + (nbytes + _PACING_OVERHEAD) * 8 / self.rc
        self.bytes += nbytes
        while self.limited and self.bytes >= ep.byte_counter:
            self.bytes -= ep.byte_counter
            self.byte_events += 1
            self._increase()

    def _increase(self):
        ep = self.ep
        f = ep.fast_recovery_steps
        hi, lo = max(self.timer_events, self.byte_events), min(self.timer_events, self.byte_events)
        if lo > f:
            self.rt += (lo - f) * ep.rate_hai        # hyper increase
        elif hi > f:
            self.rt += ep.rate_ai                    # additive increase
        self.rt = min(self.rt, self.line)
        self.rc = (self.rt + self.rc) / 2            # fast recovery and both increases
        if self.rc >= self.line * 0.999:
            self.rc = self.rt = self.line
            self.limited = False                     # at line rate: limiter released


class DcqcnRoceEndpoint(RoceEndpoint):
    """RoCEv2 RC go-back-N with DCQCN's RP and NP (MR-GBN-040..043); same interface.

    Keyword arguments, defaults from Zhu et al. 2015 (their 40 Gb/s setting), plus
    every :class:`~metaroce.models.rocev2.RoceEndpoint` argument:

    - ``g`` (1/256): alpha gain. ``alpha_timer`` (55 us): alpha decay period.
    - ``cnp_interval`` (50 us): at most one CNP per QP per interval (NP).
    - ``rate_timer`` (55 us), ``byte_counter`` (10 MB): the rate-increase clocks.
    - ``fast_recovery_steps`` (5): F.
    - ``rate_ai`` (40 Mb/s): additive increase; ``rate_hai`` (400 Mb/s): hyper increase, 10 x
      ``rate_ai`` (the ratio of the ConnectX defaults; the paper gives no value we use).
    - ``min_rate`` (100 Mb/s): floor of the rate limiter.
    """

    NAME = "rocev2-dcqcn"

    def __init__(self, addr="10.0.0.1", *, g=1 / 256, alpha_timer=55e-6, cnp_interval=50e-6,
                 rate_timer=55e-6, byte_counter=10_000_000, fast_recovery_steps=5, rate_ai=40e6,
                 rate_hai=400e6, min_rate=100e6, **config):
        super().__init__(addr, **config)
        for name, v in (("g", g), ("alpha_timer", alpha_timer), ("cnp_interval", cnp_interval),
                        ("rate_timer", rate_timer), ("byte_counter", byte_counter),
                        ("rate_ai", rate_ai), ("rate_hai", rate_hai), ("min_rate", min_rate)):
            if not v > 0:
                raise ValueError(f"DCQCN {name} must be > 0, got {v!r}")
        if not 0 < g <= 1:
            raise ValueError(f"DCQCN g must be in (0, 1], got {g!r}")
        if not isinstance(fast_recovery_steps, int) or fast_recovery_steps < 0:
            raise ValueError("DCQCN fast_recovery_steps must be an integer >= 0")
        self.g, self.alpha_timer, self.cnp_interval = float(g), float(alpha_timer), float(cnp_interval)
        self.rate_timer, self.byte_counter = float(rate_timer), int(byte_counter)
        self.fast_recovery_steps = fast_recovery_steps
        self.rate_ai, self.rate_hai, self.min_rate = float(rate_ai), float(rate_hai), float(min_rate)

    def params(self):
        out = super().params()
        out.update(protocol=out["protocol"].replace("rocev2-rc-gbn", "rocev2-rc-gbn-dcqcn"), dcqcn=True,
                   dcqcn_g=self.g, dcqcn_alpha_timer_us=self.alpha_timer * 1e6,
                   dcqcn_cnp_interval_us=self.cnp_interval * 1e6,
                   dcqcn_rate_timer_us=self.rate_timer * 1e6, dcqcn_byte_counter=self.byte_counter,
                   dcqcn_fast_recovery_steps=self.fast_recovery_steps,
                   dcqcn_rate_ai_mbps=self.rate_ai / 1e6, dcqcn_rate_hai_mbps=self.rate_hai / 1e6,
                   dcqcn_min_rate_mbps=self.min_rate / 1e6,
                   models="DCQCN RP/NP of Zhu et al. SIGCOMM 2015; CP = switch RED marking; PFC in the fabric")
        return out

    def connect(self, *args, **kw):
        c = super().connect(*args, **kw)
        for qp in c.qps:
            qp.rp = RateLimiter(self)
            qp.last_cnp = None
        return c

    def _serve(self, qp, now):
        rp = qp.rp
        if rp.limited:
            rp.advance(now)
            if rp.limited and now < rp.next_tx:
                self._push(rp.next_tx, 1, qp)      # ready again when the limiter allows
                return None
        f = qp.next_frame(now)
        if f is not None and f.payload:
            rp.on_sent(now, len(f.payload))
        return f

    def receive(self, frame, now):
        op = frame.bth.opcode
        if op == Op.CNP:
            self._run_timers(now)
            qp = self._qps.get(frame.bth.dest_qp)
            if qp is None or frame.ip.src != qp.peer_addr:
                self._drop("bad_cnp")
                return
            self.stats["cnps_received"] += 1
            qp.rp.on_cnp(now)                       # MR-GBN-041
            return
        if frame.ip.ecn == 3 and frame.payload and op != Op.RC_ACK:
            qp = self._qps.get(frame.bth.dest_qp)
            if qp is not None and frame.ip.src == qp.peer_addr and (
                    qp.last_cnp is None or now - qp.last_cnp >= self.cnp_interval):
                qp.last_cnp = now                   # MR-GBN-040: NP, one CNP per interval
                self._ctrl.append(Frame(eth=Eth(), ip=IP(src=self.addr, dst=qp.peer_addr, ecn=0),
                                        udp=UDP(sport=frame.udp.sport),
                                        bth=BTH(opcode=Op.CNP, dest_qp=qp.peer_qpn, psn=0)))
                self.stats["cnps_sent"] += 1
        super().receive(frame, now)


__all__ = ["DcqcnRoceEndpoint", "RateLimiter"]
