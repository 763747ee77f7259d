"""Golden model of the TX engine's pacing (docs/spec/hw-cwnd.md section 7, MR-CW-081..099;
issue 12): a connection's next send time, the reference endpoint's ``Connection.pace_until``
(MR-CC-006, MR-CC-015/016, MR-CC-023/024, MR-CC-027..030, MR-CC-032..034).

:class:`Pacer` is one connection's pacing state as a fixed-width record (:data:`STATE`), with one
method per event that moves it, each named by the unit that owns it in hardware (MR-CW-082):

* ``sent`` (the TX scheduler: a data frame sent, MR-CW-084), ``skip_pulls`` (the scheduler took
  new work while pulled resends were owed, MR-CW-085);
* ``ack`` (the congestion window block, which sees the hint: the rate and its re-timing, the
  first answer, the blind release, the phase, MR-CW-086..089), with the pull that the retransmit
  unit found in it (MR-CW-088);
* ``sample`` (the retransmit unit: an RTT sample, MR-CW-090), ``probe`` (its probes,
  MR-CW-091), ``timeout`` (its verdict on a first window lost whole, MR-CW-092).

Every time is MR-ENG-050's wrapping 32-bit ns and every compare ``protocol.time_lt``; the
integer forms are ``protocol``'s (``pacing_gap_ns``, ``queue_paced_gap_ns``,
``blind_release_ns``, ``phase_k``). ``eligible(now)`` is the scheduler's test.

The per-frame part in RTL (``hdl/pacer.py`` ``PacerFrame``, MR-CW-093/097):
:class:`PacerFrameModel` (its semantics) and :class:`PacerFrameCycleModel` (cycle by cycle, for
the lockstep). models/ never imports hdl/.
"""
from __future__ import annotations

from amaranth.hdl import Shape
from amaranth.lib import data

from . import protocol as P

__all__ = ["Pacer", "STATE", "Flags", "mtu_gap_ns", "RATE_BITS", "WL_BITS", "RTT_BITS",
           "BLIND_BITS", "GAP_BITS", "PULL_BITS", "PacerFrameModel", "PacerFrameCycleModel",
           "frame_layouts", "LAT_FRAME", "LAT_SHORT", "BUSY_WRITE", "FRAME_SMALL",
           "pacer_frame_model_small"]

TIME_BITS = P.TIME_BITS
#: MR-CW-083: field widths: a rate in Mb/s (MR-CW-060's 19 bits); a frame's wire length (at
#: most an MTU of 4,096 with its headers); the latest RTT sample (saturated at 2^24 - 1 ns:
#: 16.7 ms, far above every stretch's cap, MR-CC-020); the blind bytes (the connection window
#: of 4 BDPs of 400 Gb/s x 30 us plus the overhead, below 2^24); a gap (at 1 Mb/s an MTU frame
#: waits 33.6 ms: 26 bits); the pulls owed (at most SEND_WINDOW x paths).
RATE_BITS = 19
WL_BITS = 13
RTT_BITS = 24
BLIND_BITS = 24
GAP_BITS = 26
PULL_BITS = 12

#: MR-CW-083: one connection's record (the TX's per-connection pacing state).
STATE = data.StructLayout({
    "pace_until": TIME_BITS,     # the next paced send time
    "tx": 1, "last_tx": TIME_BITS, "last_wl": WL_BITS,   # the last frame (MR-CC-006/029/032)
    "rate": RATE_BITS,           # Mb/s, the line rate when not hinted
    "rtt_last": RTT_BITS,        # MR-CC-015: the latest sample of any path
    "blind_t0": TIME_BITS, "blind_bytes": BLIND_BITS,    # MR-CC-016 (t0 valid: bytes > 0)
    "answered": 1, "t_answer": TIME_BITS,                # MR-CC-016/027/028
    "spread": 1,                 # MR-CC-023: announced, no data acknowledged yet
    "phase_k": 8,                # MR-CC-023: the connection's phase hash, fixed at open
    "pulled": PULL_BITS,         # MR-CC-027: pulled resends owed, sent outside the pacing
})


_MASK = {k: (1 << Shape.cast(v).width) - 1 for k, v in STATE.members.items()}


class Flags:
    """MR-CW-081: the endpoint's switches of the pacing rules (its configuration), each the
    endpoint's default: ``announce`` (MR-CC-021..024: the spread and the paced probes),
    ``ack_phase`` (MR-CC-028), ``probe_turn`` (MR-CC-032), ``lost_first_turn`` (MR-CC-033),
    ``spread_once`` (MR-CC-034), ``count_wait`` (MR-CC-035)."""

    def __init__(self, announce=True, ack_phase=True, probe_turn=True, lost_first_turn=True,
                 spread_once=True, count_wait=True):
        self.announce, self.ack_phase, self.probe_turn = announce, ack_phase, probe_turn
        self.lost_first_turn, self.spread_once = lost_first_turn, spread_once
        self.count_wait = count_wait


def mtu_gap_ns(mtu_wire_bytes, rate_mbps):
    """MR-CW-093: the gap a full-MTU frame of ``mtu_wire_bytes`` leaves at ``rate_mbps``, the
    per-frame part's kept gap: ``protocol.pacing_gap_ns``."""
    return P.pacing_gap_ns(mtu_wire_bytes, rate_mbps)


def _lt(a, b):
    return P.time_lt(a, b)


def _max(a, b):
    """The later of two wrapping times (MR-ENG-050)."""
    return b if _lt(a, b) else a


def _min(a, b):
    return a if _lt(a, b) else b


class Pacer:
    """One connection's pacing (MR-CW-081..092). ``line_mbps``, ``base_rtt_ns`` and ``mtu``
    are the engine's configuration; ``conn_id`` and ``seed`` give the phase hash k of
    MR-CC-023 (``protocol.phase_k``), kept in the record from the open; ``flags`` the endpoint's
    switches (:class:`Flags`); ``t_open`` the time of the open, the first next send time (the
    endpoint's 0, MR-CW-083). ``state`` is the record (a dict of :data:`STATE`'s fields)."""

    DATA_HDR = 90        # MR-CC-023: a data frame's bytes beyond its payload (the endpoint's)

    def __init__(self, *, line_mbps, base_rtt_ns, mtu, conn_id=0, seed=0, flags=None, t_open=0):
        self.line_mbps, self.base_rtt_ns, self.mtu = line_mbps, base_rtt_ns, mtu
        self.flags = flags or Flags()
        s = {f: 0 for f in STATE.members}
        s.update(pace_until=t_open & P.TIME_MASK, rate=line_mbps, spread=int(self.flags.announce),
                 phase_k=P.phase_k(conn_id, seed))
        self.state = s

    # -- views -----------------------------------------------------------------------------
    @property
    def pace_until(self):
        return self.state["pace_until"]

    def eligible(self, now):
        """MR-CW-084: a paced frame may go at ``now`` (the endpoint's ``pace_until <= now``)."""
        return not _lt(now & P.TIME_MASK, self.state["pace_until"])

    def _paced(self):
        return self.state["rate"] < self.line_mbps

    def _gap(self, wl):
        """MR-CW-084 (MR-CC-006, MR-CC-015/020): the gap after a frame of ``wl`` wire bytes at
        the connection's rate, stretched while hinted by the latest sample."""
        s = self.state
        gap = P.pacing_gap_ns(wl, s["rate"])
        if self._paced():
            gap = P.queue_paced_gap_ns(gap, self.base_rtt_ns, s["rtt_last"])
        return gap

    def _blind_release(self):
        """MR-CC-016 at the connection's rate; ``None`` with no blind bytes. MR-CC-035: an
        announcing connection paced below the line rate not within one base RTT of its first
        frame (``protocol.counted_release_ns`` on wrapping times)."""
        s = self.state
        if not s["blind_bytes"]:
            return None
        rel = P.blind_release_ns(s["blind_t0"], s["blind_bytes"], s["rate"]) & P.TIME_MASK
        fl = self.flags
        if fl.count_wait and fl.announce and self._paced():
            rel = _max(rel, (s["blind_t0"] + self.base_rtt_ns) & P.TIME_MASK)
        return rel

    def _before_answer(self):
        """Nothing paced has gone since the first answer (the endpoint's ``last_tx < t_answer``;
        before an answer, false)."""
        s = self.state
        return bool(s["answered"]) and (not s["tx"] or _lt(s["last_tx"], s["t_answer"]))

    def _set(self, **kw):
        for k, v in kw.items():
            self.state[k] = v & _MASK[k]

    # -- the scheduler's events -------------------------------------------------------------
    def skip_pulls(self):
        """MR-CW-085: the scheduler took new work (not a resend) while pulled resends were
        owed: the pulls end (it then waits for the turn)."""
        self.state["pulled"] = 0

    def sent(self, now, wl, retx=False):
        """MR-CW-084/085: a data frame of ``wl`` wire bytes sent at ``now`` (``retx``: a resend).
        A pulled resend (MR-CC-027) starts the pacing afresh from itself; any other frame of a
        paced connection moves the next send time a gap on from max(next, now)."""
        s = self.state
        now &= P.TIME_MASK
        if s["pulled"] and not retx:
            self.skip_pulls()
        unpaced = bool(s["pulled"]) and retx
        self._set(tx=1, last_tx=now, last_wl=wl)
        if not s["answered"]:                          # MR-CC-016: the blind bytes
            if not s["blind_bytes"]:
                self._set(blind_t0=now)
            self._set(blind_bytes=min((1 << BLIND_BITS) - 1,
                                      s["blind_bytes"] + wl + P.WIRE_OVERHEAD))
        if unpaced:
            self._set(pulled=s["pulled"] - 1, pace_until=now + self._gap(wl))
        elif self._paced():
            self._set(pace_until=_max(s["pace_until"], now) + self._gap(wl))

    # -- the congestion window block's event --------------------------------------------------
    def _retime_rate(self, old_rate):
        """MR-CW-086 (MR-CC-006): a new rate applies from the last frame: the next send time
        becomes at least (a lower rate) or at most (a higher one) the last frame's time plus
        its gap at the new rate."""
        s = self.state
        if s["rate"] != old_rate and s["tx"]:
            end = (s["last_tx"] + self._gap(s["last_wl"])) & P.TIME_MASK
            self._set(pace_until=_max(s["pace_until"], end) if s["rate"] < old_rate
                      else _min(s["pace_until"], end))

    def _blind(self, hint, old_rate, first):
        """MR-CW-087 (MR-CC-016): each new hint (and the first answer's) holds the next frame
        until the blind bytes would have gone at it."""
        s = self.state
        rel = self._blind_release()
        if hint and rel is not None and (s["rate"] != old_rate or first):
            self._set(pace_until=_max(s["pace_until"], rel))

    def _phase(self, now, hint, pkts, old_rate, first):
        """MR-CW-089 (MR-CC-023, MR-CC-028, MR-CC-034): an announcing connection's first paced
        frame: at the first data ACK, one gap after the slot the bottleneck served the first
        window in; before it, on a new hint, the hashed fraction of a gap after the release."""
        s, fl = self.state, self.flags
        if not s["spread"]:
            return
        rel = self._blind_release()
        if pkts:
            self._set(spread=0)
            if fl.ack_phase and hint and self._paced() and self._before_answer():
                at = now - self.base_rtt_ns + P.pacing_gap_ns(s["last_wl"], s["rate"])
                self._set(pace_until=at if rel is None else _max(rel, at & P.TIME_MASK))
        elif hint and self._paced() and (s["rate"] != old_rate or first) and not (
                fl.spread_once and s["answered"] and not self._before_answer()):
            start = now if rel is None else _max(now, rel)
            k = s["phase_k"]
            spread = (P.pacing_gap_ns(self.mtu + self.DATA_HDR, s["rate"]) * k) >> 8
            self._set(pace_until=_max(s["pace_until"], (start + spread) & P.TIME_MASK))

    def ack(self, now, hint, pkts, pulls=0):
        """MR-CW-086..089: an ACK event taken by the connection (after its sample, MR-CW-090):
        ``hint`` its rate hint in Mb/s (0: none), ``pkts`` the packets it newly acknowledged,
        ``pulls`` the first-window packets the retransmit unit declared lost at the receiver's
        pull in it (MR-CC-027; 0 without one)."""
        s = self.state
        now &= P.TIME_MASK
        old_rate = s["rate"]
        self._set(rate=P.clamp_hint_mbps(hint, self.line_mbps))
        self._retime_rate(old_rate)
        first = not s["answered"]
        if first:
            self._set(t_answer=now, answered=1)
        if pulls and self._before_answer():            # MR-CW-088: owed, outside the pacing
            self._set(pulled=min((1 << PULL_BITS) - 1, s["pulled"] + pulls))
        self._blind(hint, old_rate, first)
        self._phase(now, hint, pkts, old_rate, first)

    # -- the retransmit unit's events -------------------------------------------------------
    def sample(self, now, rtt):
        """MR-CW-090 (MR-CC-015, MR-CC-029): an RTT sample ``rtt`` ns taken at ``now`` (not of a
        probe nor of a first-window packet: the unit filters those). It becomes the latest
        sample; if the connection waits exactly the plain gap after its last frame, the wait
        follows the new sample's stretch."""
        s = self.state
        now &= P.TIME_MASK
        rtt = min(rtt, (1 << RTT_BITS) - 1)
        if s["tx"] and _lt(now, s["pace_until"]) and self._paced():
            end = (s["last_tx"] + self._gap(s["last_wl"])) & P.TIME_MASK
            self._set(rtt_last=rtt)
            if s["pace_until"] == end:
                self._set(pace_until=s["last_tx"] + self._gap(s["last_wl"]))
        else:
            self._set(rtt_last=rtt)

    def probe(self, now, wl, first_window):
        """MR-CW-091 (MR-CC-024, MR-CC-030, MR-CC-032): a probe of ``wl`` wire bytes sent at
        ``now`` (``first_window``: of a first-window packet) by a paced announcing connection
        takes a paced turn and, with the turn rule, is the last frame."""
        s, fl = self.state, self.flags
        now &= P.TIME_MASK
        if not (fl.announce and self._paced()):
            return
        if first_window:
            self._set(pace_until=_max(s["pace_until"], now) + self._gap(wl))
        else:
            self._set(pace_until=_max(s["pace_until"], (now + self._gap(wl)) & P.TIME_MASK))
        if fl.probe_turn:
            self._set(tx=1, last_tx=now, last_wl=wl)

    def timeout(self, now):
        """MR-CW-092 (MR-CC-033): a path's timer found no path healthy (the reroute verdict):
        an announcing connection whose first window was lost whole, nothing paced sent since
        the answer, sends its resend now once its blind release has passed."""
        s = self.state
        now &= P.TIME_MASK
        if not (self.flags.lost_first_turn and s["spread"] and self._before_answer()
                and self._paced() and _lt(now, s["pace_until"])):
            return
        rel = self._blind_release()
        if rel is None or not _lt(now, rel):
            self._set(pace_until=now)


# ---------------------------------------------------------------------------------------------
# The per-frame part in RTL (MR-CW-093, MR-CW-097/098): ``hdl/pacer.py`` ``PacerFrame``.

#: MR-CW-097: the instance registered as the block ``pacer_frame``.
FRAME_SMALL = dict(conns=16)
#: MR-CW-097: cycles from the accepting cycle of a frame to its turn's first valid cycle (read;
#: LOAD; CMP; ADD_LO; ADD_HI; FIN), and the cycles a write keeps the block busy after the
#: accepting one (CLAMP; RATE; GAP_BITS division cycles; GAP; WFIN).
LAT_FRAME = 6
BUSY_WRITE = GAP_BITS + 4
#: MR-CW-101: cycles from the accepting cycle of a short frame of a paced connection (``wl`` not
#: ``mtu_wl``) to its turn: the full frame's 6 and its gap's division on the write's path
#: (SDVD: the dividend; GAP_BITS division cycles; GAP: rounded up)
LAT_SHORT = LAT_FRAME + GAP_BITS + 2
FRAME_INPUTS = ["s_write__valid", "s_write__payload", "s_frame__valid", "s_frame__payload",
                "m_turn__ready", "mtu_wl", "line_mbps"]
FRAME_OUTPUTS = ["s_write__ready", "s_frame__ready", "m_turn__valid", "m_turn__payload"]


def frame_layouts(conns=FRAME_SMALL["conns"]):
    """MR-CW-097: the per-frame part's ports: a write ``{conn, rate, set_time, time}``, a frame
    ``{conn, now, force, wl}`` (MR-CW-100: ``wl`` its wire length), its turn ``{conn, ok,
    pace_until}``; the record ``{pace_until}`` and ``{gap, paced, rate}`` (MR-CW-101: the
    clamped rate, for a short frame's gap)."""
    if not (1 <= conns <= 1 << 16) or conns & (conns - 1):
        raise ValueError(f"conns={conns}: a power of two in 1..65,536")
    cb = max(1, (conns - 1).bit_length())
    S = data.StructLayout
    return {"write": S({"conn": cb, "rate": RATE_BITS, "set_time": 1, "time": TIME_BITS}),
            "frame": S({"conn": cb, "now": TIME_BITS, "force": 1, "wl": WL_BITS}),
            "turn": S({"conn": cb, "ok": 1, "pace_until": TIME_BITS}),
            "gap_rec": S({"gap": GAP_BITS, "paced": 1, "rate": RATE_BITS})}


class PacerFrameModel:
    """MR-CW-093: the per-frame part's semantics, one record per call, per connection the kept
    gap of a full-MTU frame, whether the connection is paced, and its next send time
    (``mtu_wl`` the frame's wire length, ``line_mbps`` the line rate: the configuration)."""

    def __init__(self, conns=FRAME_SMALL["conns"], *, mtu_wl=4186, line_mbps=100_000):
        self.lay = frame_layouts(conns)
        self.mtu_wl, self.line_mbps = mtu_wl, line_mbps
        self.pace_until = [0] * conns
        self.gap = [0] * conns
        self.paced = [0] * conns
        self.rate = [0] * conns         # MR-CW-100: the clamped rate, for a short frame's gap

    def write(self, r):
        """MR-CW-093: the connection's rate (``clamp_hint_mbps``: 0 is the line rate) sets its
        kept gap ``mtu_gap_ns(mtu_wl, rate)`` and whether it is paced (below the line rate);
        ``set_time``: its next send time becomes ``time`` (an open, or the control path's
        re-timing, MR-CW-099)."""
        c = r["conn"]
        rate = P.clamp_hint_mbps(r["rate"], self.line_mbps)
        self.gap[c] = mtu_gap_ns(self.mtu_wl, rate) & ((1 << GAP_BITS) - 1)
        self.paced[c] = int(rate < self.line_mbps)
        self.rate[c] = rate
        if r["set_time"]:
            self.pace_until[c] = r["time"]

    def short(self, r):
        """MR-CW-101: the frame takes the division's path: a paced connection's frame whose wire
        length is not ``mtu_wl``."""
        return bool(self.paced[r["conn"]]) and r.get("wl", self.mtu_wl) != self.mtu_wl

    def frame_gap(self, r):
        """MR-CW-100: the gap after the frame: the kept gap for a frame of ``mtu_wl`` wire bytes
        (or of a connection not paced, whose time does not move), else ``pacing_gap_ns(wl,
        rate)`` at the connection's clamped rate (MR-CW-084, the endpoint's ``_gap`` without the
        queue stretch)."""
        c = r["conn"]
        if not self.short(r):
            return self.gap[c]
        return P.pacing_gap_ns(r["wl"], self.rate[c]) & ((1 << GAP_BITS) - 1)

    def frame(self, r):
        """MR-CW-093, MR-CW-100: a frame of ``wl`` wire bytes (default ``mtu_wl``) of the
        connection offered at ``now``: it takes the turn (``ok``) when ``now`` is not before the
        next send time, or ``force`` (a frame that goes whatever the time: a probe of
        MR-CC-024); a frame that takes it moves a paced connection's next send time to
        max(next, now) + its gap (:meth:`frame_gap`). Returns the turn ``{conn, ok,
        pace_until}`` (the next send time after it)."""
        c, now = r["conn"], r["now"]
        pu = self.pace_until[c]
        ok = int(bool(r["force"]) or not _lt(now, pu))
        if ok and self.paced[c]:
            pu = self.pace_until[c] = (_max(pu, now) + self.frame_gap(r)) & P.TIME_MASK
        return {"conn": c, "ok": ok, "pace_until": pu}


class PacerFrameCycleModel:
    """MR-CW-097, cycle by cycle: idle, the block takes a write (first: ``s_frame.ready`` is
    low while ``s_write.valid``) or a frame; a write keeps it busy ``BUSY_WRITE`` cycles after
    the accepting one and answers nothing; a frame's turn is valid ``LAT_FRAME`` cycles after
    (MR-CW-101: ``LAT_SHORT`` for a short frame of a paced connection), held until taken, the
    block idle the cycle after. ``m_turn.payload`` keeps the last turn."""

    def __init__(self, width=64, conns=FRAME_SMALL["conns"]):
        self.sem = PacerFrameModel(conns)
        self.lay = self.sem.lay
        self.wait = 0
        self.busy_w = 0
        self.pending = None
        self.valid = 0
        self.payload = 0

    @staticmethod
    def port_names():
        return {"inputs": list(FRAME_INPUTS), "outputs": list(FRAME_OUTPUTS)}

    def busy(self):
        return self.pending is not None or bool(self.valid) or bool(self.busy_w)

    def step(self, inputs):
        from .rx import pack, unpack
        g = inputs.get
        idle = self.pending is None and not self.valid and not self.busy_w
        wv = g("s_write__valid", 0)
        out = {"s_write__ready": int(idle), "s_frame__ready": int(idle and not wv),
               "m_turn__valid": self.valid, "m_turn__payload": self.payload}
        sem = self.sem
        sem.mtu_wl, sem.line_mbps = g("mtu_wl", 0), g("line_mbps", 0)
        if self.valid:
            if g("m_turn__ready", 0):
                self.valid = 0
        elif self.pending is not None:
            self.wait -= 1
            if self.wait == 0:
                self.valid, self.payload, self.pending = 1, self.pending, None
        elif self.busy_w:
            self.busy_w -= 1
        elif wv:
            sem.write(unpack(self.lay["write"], g("s_write__payload", 0)))
            self.busy_w = BUSY_WRITE
        elif g("s_frame__valid", 0):
            fr = unpack(self.lay["frame"], g("s_frame__payload", 0))
            self.wait = (LAT_SHORT if sem.short(fr) else LAT_FRAME) - 1
            self.pending = pack(self.lay["turn"], sem.frame(fr))
        return out


def pacer_frame_model_small(width=64):
    """MR-CW-097: the registered instance's cycle model."""
    return PacerFrameCycleModel(width, **FRAME_SMALL)
