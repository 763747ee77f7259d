"""The receiver's rate hints in the TX top's windows (docs/spec/hw-tx.md section 2.30,
MR-TX-489..497): the engine's driver whose ACKs carry a hint, with the windows' control path
(``models.cwnd.CwndControl``) in the loop as the host's firmware, and the run of MR-TX-496.

* :class:`HintDriver`: ``tx_cases.Driver`` (MR-TX-150) plus the control path's ports
  (MR-TX-492): each ACK's ``hint`` from a schedule by ACK count; the records the windows take
  (``m_cw_ev``, the setup writes) and their updates (``m_cw_upd``) into a ``cwnd_cases.Closed``
  loop whose items are the host's setup writes and the unit's events, in the order the windows
  took them; the control path's answers (move writes on ``s_cw_setup``, the refused event again
  on ``s_cw_ack``) offered first, ``cw_release`` once an answer is complete.
* :func:`hint_run`: the work, the host memory and the driver's arguments of MR-TX-496's run.
"""
from . import cwnd_cases as cc
from . import protocol as P
from . import tx_cases as xc
from .cwnd import CwndControl
from .rx import pack, unpack
from .tx import SMALL

__all__ = ["HintDriver", "hint_run", "HINTS", "CW_CFG", "check_hint_run"]

#: MR-TX-496: the hint of each ACK from the ACK count on: (first ACK, hint in Mb/s); a first
#: hint, changes up and down, to 0 (the line rate), above the line rate (clamped)
HINTS = ((0, 0), (4, 40_000), (10, 25_000), (16, 60_000), (22, 0), (26, 30_000),
         (32, 150_000), (38, 20_000), (44, 50_000))

#: MR-TX-496: the windows' configuration (the TX's ``cc_*`` inputs): the engine's MTU, beta
#: 1/2, the cap, a 100 Gb/s line, a 10 us base RTT
CW_CFG = {"mtu": SMALL["mtu"], "beta_q": P.Q_ONE // 2, "cap": 60_000, "line_mbps": 100_000,
          "base_rtt_ns": 10_000}


def hint_of(k, hints=HINTS):
    """The hint of the ``k``-th ACK (from 0) by the schedule."""
    h = 0
    for first, v in hints:
        if k >= first:
            h = v
    return h


class HintDriver(xc.Driver):
    """MR-TX-492..496: :class:`tx_cases.Driver` with the hints on the ACKs and the windows'
    control path in the loop (module docstring). ``loop`` (``cwnd_cases.Closed``) has the
    records as the windows took them (``items``: the host's setups and the unit's events) and
    ``after``, the connection's shadow windows after each with its answer."""

    def __init__(self, lay, *args, control, hints=HINTS, **kw):
        super().__init__(lay, *args, **kw)
        # MR-TX-513: ``control`` None: the control path is the TX's own (no ports to serve)
        self.control, self.hints = control, hints
        self.loop = cc.Closed([], control) if control is not None else None
        self.n_acks = 0
        self.held = False           # an update with move or refill seen, not yet released
        self.release = False        # cw_release offered this cycle
        self.offer = None           # the control path's record offered: (kind, record)
        self.res.update(ctl_acks=0, ctl_setups=0, releases=0)

    def _ack(self, conn, path):
        q = self.ack_later if self.ack_delay else self.ack_q
        n = len(q)
        super()._ack(conn, path)
        if len(q) > n:                          # MR-TX-490: the receiver's hint on the ACK
            q[-1]["hint"] = hint_of(self.n_acks, self.hints)
            self.n_acks += 1

    def inputs(self):
        inp = super().inputs()
        if self.loop is None:
            return inp
        inp.update({"s_cw_ack__valid": 0, "s_cw_ack__payload": 0,
                    "cw_release": int(self.release)})
        loop = self.loop
        self.offer = None
        if loop.flight is None and loop.queue and not self._phase:
            kind, rec = self.offer = loop.queue[0]
            if kind == "setup":
                inp["s_cw_setup__valid"] = 1
                inp["s_cw_setup__payload"] = pack(self.lay.cw.setup, rec)
            else:
                inp["s_cw_ack__valid"] = 1
                inp["s_cw_ack__payload"] = pack(self.lay.cw.ack, rec)
        return inp

    def observe(self, inp, out):
        if self.loop is None:
            return super().observe(inp, out)
        loop, lay = self.loop, self.lay
        host_setup = (self.cw_i < len(self.cw_setups) and inp.get("s_cw_setup__valid")
                      and out["s_cw_setup__ready"])
        if self.release:
            self.release, self.held = False, False
            self.res["releases"] += 1
        if out["m_cw_upd__valid"]:
            u = unpack(lay.cw.update, out["m_cw_upd__payload"])
            loop.answer(u)
            self.held = self.held or bool(u["move"] or u["refill"])
        if host_setup:
            loop.items.append(("setup", self.cw_setups[self.cw_i]))
            loop.take()
        elif self.offer is not None and self.offer[0] == "setup" and out["s_cw_setup__ready"]:
            loop.take()
            self.res["ctl_setups"] += 1
        if out["m_cw_ev__valid"]:
            if self.offer is not None and self.offer[0] == "ack":
                assert out["s_cw_ack__ready"]
                loop.take()
                self.res["ctl_acks"] += 1
            else:                               # the unit's event
                assert not loop.queue, "an event of the unit inside an answer"
                loop.items.append(("ack", unpack(lay.cw.ack, out["m_cw_ev__payload"])))
                loop.take()
        # MR-TX-493: the answer complete: release the hold (the next cycle's input)
        if self.held and loop.flight is None and not loop.queue:
            self.release = True
        super().observe(inp, out)

    @property
    def sent_all(self):
        if self.loop is None:
            return super().sent_all
        return super().sent_all and not self.loop.queue and self.loop.flight is None


def hint_run(params=SMALL, *, n=4, length=12 * 1024, seed=3, p_idle=0.2, p_bp=0.3,
             ack_delay=60, p_ack=0.8):
    """MR-TX-496's run: ``n`` WRITEs of ``length`` bytes on connection 0 (its windows opened by
    setup writes), every ACK ``ack_delay`` cycles after its frame, path 1's ACKs CE-marked,
    idle cycles and backpressure; the windows' configuration :data:`CW_CFG`. Returns the work,
    its host memory and the driver's keyword arguments (without ``control``)."""
    items, lay = xc.cc_work(params, n=n, length=length)
    kw = xc.cc_driver_kw(params, True, seed=seed)
    kw.update(p_idle=p_idle, p_bp=p_bp, ack_delay=ack_delay, p_ack=p_ack)
    kw["cc"] = {"cc_on": 1, "cc_beta_q": CW_CFG["beta_q"], "cc_cap": CW_CFG["cap"],
                "cc_line_mbps": CW_CFG["line_mbps"], "cc_base_rtt_ns": CW_CFG["base_rtt_ns"]}
    return items, lay, kw


def make_driver(model, params=SMALL, **run_kw):
    """MR-TX-496: the run's driver with a fresh ``CwndControl``, for ``model``'s layouts (none
    when the model has the control path inside, MR-TX-513)."""
    items, lay, kw = hint_run(params, **run_kw)
    ctl = (None if getattr(model, "control", False)
           else CwndControl(params["conns"], params["paths"], **CW_CFG))
    drv = HintDriver(model.lay, 64, items, lay, xc.templates(params["conns"], params["paths"]),
                     control=ctl, **kw)
    return drv, items


def check_hint_run(drv, params=SMALL, unit_events=None, loop=None):
    """MR-TX-496: after every event the windows took from the unit, with its answer, the
    connection's windows, W, debt, rate and hinted connection window equal ``CwndModel``'s
    (unsplit) on the same records (``unit_events``: with the unit's events as it gave them,
    ``TxCycleModel.unit_events``); returns the events compared."""
    cw = {"conns": params["conns"], "paths": params["paths"]}
    loop = drv.loop if loop is None else loop       # MR-TX-513: the TX model's own
    items = loop.items
    if unit_events is not None:
        # the reference on the unit's events as it gave them (the negative control's drop
        # is on the way to the windows)
        it = iter(unit_events)
        items = [(k, next(it) if k == "ack" else r) for k, r in items]
    return cc.check_after(loop.after, items, cc.unsplit_expected(cw, CW_CFG, items))


def random_driver(model, seed, n=30):
    """MR-TX-496's random run: MR-TX-150's random lossy traffic (``n`` work requests of both
    connections: sends, READs, atomics, bad ones; 15 % loss, idle cycles, backpressure, the
    timers' expiries), both connections' windows opened by setup writes, path 1 of connection
    0 and path 2 of connection 1 CE-marked, the hints of :data:`HINTS` on every ACK. Returns
    the driver, the work and the scheduler's semantics (for ``tx_cases.check``)."""
    from .tx_sched import SMALL as SCHED_SMALL
    from .tx_sched import TxSchedModel
    sem = TxSchedModel(**SCHED_SMALL)
    items, lay = xc.traffic(sem, n, seed=seed, max_len=4000)
    ctl = (None if getattr(model, "control", False)
           else CwndControl(SMALL["conns"], SMALL["paths"], **CW_CFG))
    cc_in = {"cc_on": 1, "cc_beta_q": CW_CFG["beta_q"], "cc_cap": CW_CFG["cap"],
             "cc_line_mbps": CW_CFG["line_mbps"], "cc_base_rtt_ns": CW_CFG["base_rtt_ns"]}
    drv = HintDriver(model.lay, model.width, items, lay,
                     xc.templates(SMALL["conns"], SMALL["paths"]), control=ctl, seed=seed,
                     loss=0.15, cw_setups=xc.cc_setups(SMALL, 0) + xc.cc_setups(SMALL, 1),
                     cc=cc_in, ce_paths={(0, 1), (1, 2)})
    return drv, items, sem
