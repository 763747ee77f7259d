"""The hinted windows' control path in hardware, its cycle model (docs/spec/hw-cwnd.md section 9,
MR-CW-125..133; section 10's cycles, MR-CW-137..140, serial47): :class:`CwndControlCycleModel`, the peer of ``hdl.cwnd.CwndControl``, whose
values are ``models.cwnd.CwndControl``'s (the golden control path) and whose cycles are the
RTL sequencer's; :class:`WindowsEnv`, the block-alone testbench's environment (the hinted
windows' semantics with random latencies, the source of records, MR-TX-493's hold).
"""
from __future__ import annotations

import random

from .cwnd import (LAT_BAND, MOVE_DIV_BITS, RATE_BITS, REFILL_DIV_BITS, Closed, CwndControl,
                   CwndModel, layouts)
from .driver import CounterReadout
from .rx import pack, unpack

__all__ = ["CwndControlCycleModel", "WindowsEnv", "MOVE_DIV_BITS", "REFILL_DIV_BITS",
           "LAT_MOVE_SCALED", "LAT_MOVE_SLOT", "LAT_REFILL_CALM", "MUL_STEPS", "REFILL_SLOT",
           "REFILL_W", "INPUTS", "OUTPUTS", "move_cycles", "refill_cycles",
           "cwnd_control_model_small"]

#: MR-CW-137 (MR-CW-129's with one adder): a scaled slot: the slot's state, the product (a
#: multiplier bit a cycle), the division, the clamp in two; a slot not scaled: its state and
#: the clamp
MUL_STEPS = RATE_BITS
LAT_MOVE_SCALED = 3 + MUL_STEPS + MOVE_DIV_BITS
LAT_MOVE_SLOT = 3
#: MR-CW-139: a refill's calm path: the pick, the division, the room, the min, the two adds
LAT_REFILL_CALM = REFILL_DIV_BITS + 5
#: MR-CW-138/139: a refill's cycles a slot (W, the echo's time, the cap, the calm test) and
#: those for W' and the shortfall
REFILL_SLOT = 4
REFILL_W = 6

INPUTS = ["s_ev__valid", "s_ev__payload", "s_setup__valid", "s_setup__payload",
          "s_upd__valid", "s_upd__payload", "m_setup__ready", "m_ack__ready",
          "mtu", "line_mbps", "base_rtt_ns"]
OUTPUTS = ["s_ev__ready", "s_setup__ready", "s_upd__ready", "m_setup__valid",
           "m_setup__payload", "m_ack__valid", "m_ack__payload", "release"]


def move_cycles(paths, scaled):
    """MR-CW-129/137: a move's cycles after the band taken, before the scan."""
    return paths * (LAT_MOVE_SCALED if scaled else LAT_MOVE_SLOT)


def refill_cycles(calm, paths):
    """MR-CW-138/139: a refill's cycles after the band taken, before the scan: four a slot (W,
    the echo's time, the cap, the calm test), six for W' and the shortfall, each calm path's,
    the last pick and the rest."""
    return REFILL_SLOT * paths + REFILL_W + calm * LAT_REFILL_CALM + 2


class CwndControlCycleModel:
    """MR-CW-130: the sequencer cycle by cycle. States: IDLE; BREQ (the band request); BWAIT
    (``LAT_BAND``); CALC (a move's or a refill's cycles, :func:`move_cycles`,
    :func:`refill_cycles`); SCAN (slot ``k``, a cycle each; ``paths``: p); OFFER (a write valid
    until taken); WAIT (its update); OFFER_ACK, WAIT_ACK (the event again); REL (``release``).
    ``control`` (a ``CwndControl``) has the shadows; ``loop`` (``cwnd_cases.Closed``) the items
    from outside in the order taken and the windows after each with its answer."""

    def __init__(self, width=64, conns=2, paths=4, *, mtu=1024, line_mbps=100_000,
                 base_rtt_ns=10_000):
        self.conns, self.paths = conns, paths
        self.lay = layouts(conns, paths, hints=True)
        self.control = CwndControl(conns, paths, mtu=mtu, line_mbps=line_mbps,
                                   base_rtt_ns=base_rtt_ns)
        self.loop = Closed([], self.control)
        self.state = "IDLE"
        self.wait = 0
        self.k = 0
        self.p = 0
        self.plan = {}              # slot -> the write record, of the answer running
        self.kind = None            # "move" or "refill"
        self.cur = None             # the write or event offered
        self.ev = None              # the last event seen
        self.ev_packed = 0          # and as m_ack's payload (MR-CW-147)
        self.moves = {"move": 0, "scaled": 0, "refill": 0, "writes": 0, "cycles": []}
        self._start_cycle = 0
        self.cycle = 0

    @staticmethod
    def port_names():
        return {"inputs": list(INPUTS), "outputs": list(OUTPUTS)}

    def busy(self):
        return self.state != "IDLE"

    def outputs(self):
        lay = self.lay
        off = self.state == "OFFER"
        ack = self.state == "OFFER_ACK"
        return {"s_ev__ready": 1, "s_setup__ready": 1, "s_upd__ready": 1,
                "m_setup__valid": int(off),
                "m_setup__payload": pack(lay.setup, self.cur) if off else 0,
                "m_ack__valid": int(ack),
                # MR-CW-147: the last event seen, valid or not
                "m_ack__payload": self.ev_packed,
                "release": int(self.state == "REL")}

    def _config(self, g):
        ctl = self.control
        ctl.mtu, ctl.line_mbps, ctl.base_rtt_ns = g("mtu", 0), g("line_mbps", 0), g("base_rtt_ns", 0)

    def _start(self, u, writes):
        """An update with move or refill: the answer's writes (``CwndControl.answer``'s) and
        its cycles."""
        ctl = self.control
        self.p = u["path"]
        self.kind = "move" if u["move"] else "refill"
        self.plan = {r["path"]: r for _, r in writes if _ == "setup"}
        self.moves[self.kind] += 1
        if self.kind == "move":
            self.calc = move_cycles(self.paths, ctl.scaled)
            self.moves["scaled"] += int(ctl.scaled)
        else:
            self.calc = refill_cycles(ctl.calm, self.paths)
        self._start_cycle = self.cycle
        self.state = "BREQ"

    def step(self, inputs):
        g = inputs.get
        out = self.outputs()
        self._config(g)
        lay, loop = self.lay, self.loop
        # the records seen: the shadows (CwndControl.record), the loop's items
        if g("s_ev__valid", 0):
            ev = unpack(lay.ack, g("s_ev__payload", 0))
            self.ev, self.ev_packed = ev, g("s_ev__payload", 0)
            self._seen("ack", ev, own=self.state in ("OFFER_ACK", "WAIT_ACK"))
        elif g("s_setup__valid", 0):
            rec = unpack(lay.setup, g("s_setup__payload", 0))
            self._seen("setup", rec, own=bool(rec["move"]))
        writes = []
        upd = None
        if g("s_upd__valid", 0):
            upd = unpack(lay.update, g("s_upd__payload", 0))
            n = len(loop.queue)
            loop.answer(upd)
            writes = loop.queue[:len(loop.queue) - n]
        st = self.state
        if st == "IDLE":
            if upd is not None and (upd["move"] or upd["refill"]):
                self._start(upd, writes)
        elif st == "BREQ":
            self.state, self.wait = "BWAIT", LAT_BAND
        elif st == "BWAIT":
            self.wait -= 1
            if self.wait == 0:
                self.state, self.wait = "CALC", self.calc
        elif st == "CALC":
            self.wait -= 1
            if self.wait == 0:
                self.state, self.k = "SCAN", 0
        elif st == "SCAN":
            k = self.k
            if k == self.paths:
                self.state, self.cur, self.last = "OFFER", self.plan[self.p], True
            elif k != self.p and k in self.plan:
                self.state, self.cur, self.last = "OFFER", self.plan[k], False
            else:
                self.k = k + 1
        elif st == "OFFER":
            if g("m_setup__ready", 0):
                self.state = "WAIT"
                self.moves["writes"] += 1
        elif st == "WAIT":
            if upd is not None:
                if not self.last:
                    self.state, self.k = "SCAN", self.cur["path"] + 1
                elif self.kind == "move":
                    self.state = "OFFER_ACK"
                else:
                    self.state = "REL"
        elif st == "OFFER_ACK":
            if g("m_ack__ready", 0):
                self.state = "WAIT_ACK"
        elif st == "WAIT_ACK":
            if upd is not None:
                if upd["move"] or upd["refill"]:
                    self._record_cycles()
                    self._start(upd, writes)
                else:
                    self.state = "REL"
        elif st == "REL":
            self._record_cycles()
            self.state = "IDLE"
        self.cycle += 1
        return out

    def _record_cycles(self):
        self.moves["cycles"].append((self.kind, self.cycle - self._start_cycle))

    def _seen(self, kind, rec, own):
        """A record the windows took: the control path's own (its queue's head) or an item from
        outside (the loop's next)."""
        loop = self.loop
        if own:
            assert loop.queue and loop.queue[0][0] == kind
            loop.take()
        else:
            loop.items.append((kind, rec))
            loop.take()


class WindowsEnv(CounterReadout):
    """MR-CW-132: the block-alone environment: the hinted windows (``CwndModel(split=True)``,
    one record at a time, each update seen ``1..max_lat`` cycles after the take, the take
    seen on ``s_ev``/``s_setup`` the cycle after it), the items
    (setup writes and events) offered while no answer holds them (MR-TX-493's hold: set by an
    update with move or refill, cleared by ``release``), the control path's records taken
    first (its ``m_setup``, ``m_ack``) with random backpressure ``p_bp``; ``p_idle`` idle
    cycles between items."""

    def __init__(self, lay, items, config, *, seed=0, p_idle=0.2, p_bp=0.3, max_lat=12):
        self.lay = lay
        self.items = list(items)
        self.config = dict(config)
        self.sem = CwndModel(lay.conns, lay.paths, split=True, **config)
        self.rng = random.Random(seed)
        self.p_idle, self.p_bp, self.max_lat = p_idle, p_bp, max_lat
        self.i = 0
        self.flight = None          # (cycles left, update) of the record taken
        self.held = False
        self.cycle = 0
        self.n_counters = 0
        self.read_counters = False
        self.quiet_cycles = 3
        self.limit = 2_000 + 400 * len(self.items)
        self.res = {"taken": [], "updates": []}
        self._taken = None
        self._readout_reset()

    @property
    def sent_all(self):
        return (self.i >= len(self.items) and self.flight is None and not self.held
                and self._taken is None)

    def _stuck(self):
        return f"(item {self.i} of {len(self.items)})"

    def inputs(self):
        rng = self.rng
        ins = {"s_ev__valid": 0, "s_ev__payload": 0, "s_setup__valid": 0, "s_setup__payload": 0,
               "s_upd__valid": 0, "s_upd__payload": 0,
               # the windows take a record only while idle (no update awaited)
               "m_setup__ready": int(self.flight is None and rng.random() >= self.p_bp),
               "m_ack__ready": int(self.flight is None and rng.random() >= self.p_bp)}
        ins.update({k: self.config[k] for k in ("mtu", "line_mbps", "base_rtt_ns")})
        self._item = None
        if self._taken is not None:             # MR-CW-132: the take seen a cycle late
            kind, r = self._taken
            port = "s_ev" if kind == "ack" else "s_setup"
            ins[port + "__valid"] = 1
            ins[port + "__payload"] = pack(getattr(self.lay, kind), r)
        if self.flight is not None:
            left, u = self.flight
            if left == 0:
                ins["s_upd__valid"] = 1
                ins["s_upd__payload"] = pack(self.lay.update, u)
        elif (not self.held and self.i < len(self.items) and rng.random() >= self.p_idle):
            self._item = self.items[self.i]
        return ins

    def observe(self, ins, outs):
        if self._readout_observe(outs):
            return
        lay, sem = self.lay, self.sem
        if ins["s_upd__valid"]:
            u = self.flight[1]
            self.flight = None
            self.held = self.held or bool(u["move"] or u["refill"])
        elif self.flight is not None:
            self.flight = (self.flight[0] - 1, self.flight[1])
        if outs["release"]:
            self.held = False
        # the windows take one record (the control path's first) once the update is out
        rec = None
        if self.flight is None and not ins["s_upd__valid"]:
            if outs["m_setup__valid"] and ins["m_setup__ready"]:
                rec = ("setup", unpack(lay.setup, outs["m_setup__payload"]))
            elif outs["m_ack__valid"] and ins["m_ack__ready"]:
                rec = ("ack", unpack(lay.ack, outs["m_ack__payload"]))
            elif self._item is not None:
                rec = self._item
                self.i += 1
        self._taken = rec
        if rec is not None:
            kind, r = rec
            u = sem.setup(r) if kind == "setup" else sem.ack(r)
            self.res["taken"].append(rec)
            self.res["updates"].append(u)
            self.flight = (self.rng.randrange(1, self.max_lat + 1), u)
        self.cycle += 1


def cwnd_control_model_small(width=64):
    """MR-CW-130: the model of ``hdl.cwnd.cwnd_control_small`` (2 x 4)."""
    return CwndControlCycleModel(width, conns=2, paths=4)
