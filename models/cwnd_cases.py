"""The congestion window block's one verification stack, simulator-independent part (MR-CW-*).

* :func:`endpoint_trace`: the reference endpoint's own ACK events in a real multipath transfer
  with ECN marks through the model fabric (one sender per receiver, so every rate hint is 0;
  ``first_window=0``, so no slow start), as the block's setup writes and ACK events, each ACK
  with the endpoint's window state after it (MR-CW-040);
* :func:`traffic`: seeded setup writes and ACK events for any instance (CE marks, epochs,
  debts, caps, wrapping times, events that resolve nothing);
* :class:`Driver`: offers the records with idle cycles and random backpressure on
  ``m_update`` and collects the updates in the order the block took the records;
* :func:`check`: the updates against :class:`~metaroce.models.cwnd.CwndModel` replaying the
  records in that order (MR-CW-041).
"""
from __future__ import annotations

import random

from . import protocol as P
from .cwnd import HINT_INPUTS, INPUTS, WIN_BITS, Closed, CwndControl, CwndModel
from .driver import CounterReadout
from .rx import pack, unpack

_EP_STATE = ("cwnd", "ce_acc", "ack_acc")


def setup_item(conn, path, cwnd, floor, multi, *, active=1, open_=0, fresh=0, share=None):
    """A setup write; ``share`` (MR-CW-108, the verdicts' layout only) the initial share."""
    rec = {"conn": conn, "path": path, "cwnd": cwnd, "active": active, "open": open_,
           "fresh": fresh, "floor": floor, "multi": multi}
    if share is not None:
        rec["share"] = share
    return ("setup", rec)


def verdict_item(conn, path, verdict=0, *, restore=0, healthy=0):
    """MR-CW-106: a path verdict (``protocol.PATH_*``) or a restore on ``s_path``."""
    return ("path", {"conn": conn, "path": path, "verdict": verdict, "restore": restore,
                     "healthy": healthy})


def ack_item(conn, path, nbytes, pkts, ce, now, srtt, hint=0):
    """An ACK event; ``hint`` (the ACK's rate hint in Mb/s, MR-CW-050) only when not 0: the
    first slice's ACK port has no hint field (the hinted block's, MR-CW-060, has)."""
    rec = {"conn": conn, "path": path, "bytes": nbytes, "pkts": pkts, "ce": ce,
           "now": now & P.TIME_MASK, "srtt": srtt}
    if hint:
        rec["hint"] = hint
    return ("ack", rec)


def endpoint_trace(*, until=0.05, size=4 << 20, seed=1, scenario="mesh", verdicts=False):
    """Run the endpoints and return ``(config, items, expected)``: the block's configuration
    ``{mtu, beta_q, cap, line_mbps, base_rtt_ns}``, its records (each connection's setup writes
    before its first ACK, then its ACK events in the order the endpoints took them) and, per
    ACK item, the endpoint's state after it (``None`` for setup writes): the path windows of its
    connection, the connection's cut state, rate and window.
    ``scenario`` "mesh" (MR-CW-040): three connections (4, 2 and 1 paths) from three hosts of
    one leaf to three of another over one spine link at 100 Gb/s (their shared uplink queues and
    marks; every hint 0). "incast" (MR-CW-056): four senders of 4 paths each on one leaf to one
    receiver on another, started 20 us apart: the receiver's rate hints, their updates as
    senders arrive, cuts on a hinted connection and their refills. "incast6": six senders of
    2 paths, 2 MiB each, started 20 us apart, to one receiver (10 hosts).
    ``verdicts`` (MR-CW-113): the records of the verdicts' layout (setup writes with the initial
    share), with the endpoint's path verdicts (``_verdict``: the action, the healthy paths) and
    restores (a probing path acknowledged) as ``s_path`` records in the order the endpoint made
    them, each with its state after it (an ACK item followed by a restore or a verdict made in
    the same ``_on_ack`` has ``None``); "verdicts" is MR-CW-113's scenario."""
    from metaroce.models import endpoint as E
    from metaroce.sim.harness import Flow, run_writes
    from metaroce.sim.topology import Fabric

    items, expected, conns = [], [], {}
    orig = E.Connection._on_ack
    orig_verdict = E.Connection._verdict
    orig_action = P.path_on_timeout
    inner = []                  # verdicts made inside the running _on_ack
    in_ack = [False]
    action = []

    def state(self):
        mtu = self.ep.mtu
        return {"cwnd": [q.cwnd for q in self.paths], "cut_debt": self.cut_debt,
                "states": [q.state for q in self.paths],
                "collapsed": [int(q.collapsed) for q in self.paths],
                "wsum": max(mtu, sum(q.cwnd for q in self.paths if q.state == E._ACTIVE))}

    def open_conn(self):
        key = id(self)
        if key not in conns:
            conns[key] = len(conns)
            ci = conns[key]
            n = len(self.paths)
            ep = self.ep
            share = (P.initial_path_window(self.path_floor, ep.bdp, ep.init_window_bdp, n)
                     if verdicts else None)
            for k, p in enumerate(self.paths):
                items.append(setup_item(ci, k, p.cwnd, self.path_floor, int(n > 1), open_=int(k == 0),
                                        fresh=1, share=share))
                expected.append(None)
        return conns[key]

    def on_action(*a, **kw):
        action.append(orig_action(*a, **kw))
        return action[-1]

    def on_verdict(self, p, now):
        ci = open_conn(self)
        before = [q.cwnd for q in self.paths]
        healthy = sum(1 << q.idx for q in self._healthy(p, now))
        action.clear()
        orig_verdict(self, p, now)
        exp = dict(state(self), before=before)
        rec = verdict_item(ci, p.idx, action[0], healthy=healthy)
        if in_ack[0]:
            inner.append((rec, exp))
        else:
            items.append(rec)
            expected.append(exp)

    def on_ack(self, a, now, bth_psn=0):
        ci = open_conn(self)
        pkts = nbytes = 0
        if a.path < len(self.paths) and self.receipt_key is None:
            p = self.paths[a.path]
            n, acked = P.sack_resolve(p.floor, p.next_psn, a.cum_psn, a.sack)
            for j in range(max(0, n)):
                rec = p.ring[(p.floor + j) & E.RING_MASK]
                if rec is not None and (acked >> j) & 1:
                    pkts += 1
                    nbytes += rec.nbytes
        before = [q.cwnd for q in self.paths]
        states = [q.state for q in self.paths]
        st = self.ep.stats
        seen = (st["acks_received"], st["acks_stale"])
        inner.clear()
        in_ack[0] = True
        try:
            orig(self, a, now, bth_psn)
        finally:
            in_ack[0] = False
        if a.path >= len(self.paths) or (st["acks_received"], st["acks_stale"]) != (seen[0] + 1, seen[1]):
            assert not inner
            return          # dropped or stale (MR-SEC-151): the endpoint changed no window
        p = self.paths[a.path]
        srtt = self._srtt_ns(p)
        ce = a.ce_count if a.flags & E._MRAH_ECE else 0
        items.append(ack_item(ci, a.path, nbytes, pkts, min(ce, (1 << 9) - 1), now, srtt,
                              a.rate_mbps))
        expected.append({"before": before, "rate_mbps": int(self.rate_bps // 1_000_000),
                         "window": int(self.window), "collapsed": [q.collapsed for q in self.paths], "cwnd": [q.cwnd for q in self.paths],
                         "ce_acc": p.ce_acc, "ack_acc": p.ack_acc, "cut_debt": self.cut_debt,
                         "cut_left": self.cut_left, "hinted": a.rate_mbps, "ss": self.ss,
                         "states": [q.state for q in self.paths],
                         "wsum": max(self.ep.mtu, sum(q.cwnd for q in self.paths
                                                      if q.state == E._ACTIVE))})
        if not verdicts:
            return
        # MR-CW-113: a probing path acknowledged is restored (MR-PATH-005), after the ACK
        restored = [k for k, q in enumerate(self.paths)
                    if states[k] == E._PROBING and q.state == E._ACTIVE]
        rest = [(verdict_item(ci, k, restore=1), None) for k in restored] + inner
        if rest:
            expected[-1] = None
            for rec, exp in rest:
                items.append(rec)
                expected.append(exp)
            if restored and not inner:
                expected[-1] = dict(state(self), before=None)

    E.Connection._on_ack = on_ack
    if verdicts:
        E.Connection._verdict = on_verdict
        P.path_on_timeout = on_action
    try:
        ep_cfg = dict(first_window=0, announce=False, mtu=4096)
        if scenario == "mesh":
            fab = Fabric(6, leaves=2, spines=1, rate_bps=100e9, rtt=10e-6, seed=seed)
            flows = [Flow(0, 1, size, paths=4), Flow(2, 3, size, paths=2),
                     Flow(4, 5, size, paths=1)]
        elif scenario == "incast":
            fab = Fabric(8, leaves=2, spines=2, rate_bps=100e9, rtt=10e-6, seed=seed)
            flows = [Flow(k, 7, size, start=k * 20e-6, paths=4) for k in range(4)]
        elif scenario == "incast6":
            fab = Fabric(10, leaves=2, spines=2, rate_bps=100e9, rtt=10e-6, seed=seed)
            flows = [Flow(k, 9, size // 2, start=k * 20e-6, paths=2) for k in range(6)]
        elif scenario == "verdicts":
            fab, flows = _verdict_fabric(seed, size)
        else:
            raise ValueError(f"scenario {scenario!r}: 'mesh', 'incast', 'incast6' or 'verdicts'")
        res = run_writes(fab, flows, "metaroce", cfg=ep_cfg, until=until, seed=seed)
    finally:
        E.Connection._on_ack = orig
        E.Connection._verdict = orig_verdict
        P.path_on_timeout = orig_action
    ep = fab.hosts[0].ep
    config = {"mtu": ep.mtu, "beta_q": ep._beta_q, "cap": int(ep.cwnd_max),
              "line_mbps": int(ep.line_rate_bps // 1_000_000), "base_rtt_ns": ep._base_rtt_ns}
    assert res.all_done and config["cap"] < 1 << WIN_BITS
    return config, items, expected


def _verdict_fabric(seed, size):
    """MR-CW-113: the "verdicts" scenario's fabric and flows."""
    from metaroce.sim.harness import Flow
    from metaroce.sim.topology import Fabric
    fab = Fabric(6, leaves=2, spines=2, rate_bps=100e9, rtt=10e-6, seed=seed,
                 buffer_bytes=VF["buffer"])
    for name, at, until in VF["down"]:
        fab.link_down(name, at=at, until=until)
    flows = [Flow(0, 1, size, paths=4), Flow(2, 3, size, paths=4), Flow(4, 5, size, paths=2)]
    return fab, flows


#: MR-CW-113: a spine's downlink to the receivers' leaf down for 300 us (the paths through it
#: suspected, retired, restored), then the first receiver's link for 100 us (no path healthy:
#: reroutes)
VF = {"buffer": None, "down": [("p0.spine0>p0.leaf1", 100e-6, 400e-6),
                               ("p0.leaf1>h1", 600e-6, 700e-6)]}


def traffic(sem, n, *, seed=0, mtu=1024, hints=False, verdicts=False):
    """``n`` ACK events with setup writes for the instance of ``sem`` (a :class:`CwndModel`):
    every connection opened first (every path slot written, some inactive), then events with
    random bytes, packets, CE marks (to more than the packets), times advancing by random steps
    from just below the 32-bit wrap, random smoothed RTTs; now and then a connection re-opened
    or a path rewritten, and events that resolve nothing. ``hints`` (MR-CW-050): each
    connection's ACKs carry its current rate hint, which now and then changes (to 0, to a lower
    or higher share, above the line rate), partly by events that resolve nothing (the hint
    updates of MR-CC-009). ``verdicts`` (MR-CW-115): setup writes carry an initial share (some
    below the floor), and path verdicts (each kind, random healthy masks) and restores come
    between the events, a verdict's path often the next event's."""
    rng = random.Random(seed)
    items = []
    floors = {}
    hint = {}
    last_verdict = {}
    line = sem.line_mbps
    shares = [0, 1, line // 64, line // 16, line // 5, line // 3, line // 2, line, 2 * line]

    def open_conn(c):
        n_paths = rng.randint(1, sem.paths)
        floors[c] = (P.path_window_floor(mtu, n_paths), int(n_paths > 1), n_paths)
        floor, multi, _ = floors[c]
        share = (rng.choice([floor // 2, floor] + [rng.randrange(2 * mtu, 30 * mtu)] * 4)
                 if verdicts else None)
        for k in range(sem.paths):
            items.append(setup_item(c, k, rng.choice([floor // 2, floor, rng.randrange(4 * mtu, 40 * mtu)]),
                                    floor, multi, active=int(k < n_paths), open_=int(k == 0),
                                    fresh=1, share=share))

    for c in range(sem.conns):
        open_conn(c)
    now = (1 << 32) - rng.randrange(1, 200_000)
    for _ in range(n):
        r = rng.random()
        c = rng.randrange(sem.conns)
        if r < 0.01:
            open_conn(c)
            continue
        floor, multi, n_paths = floors[c]
        if r < 0.02:
            items.append(setup_item(c, rng.randrange(sem.paths), rng.randrange(1 << 16), floor,
                                    multi, active=rng.randrange(2),
                                    share=rng.randrange(1 << 17) if verdicts else None))
            continue
        if verdicts and r < 0.15:                    # MR-CW-106: a verdict or a restore
            vp = rng.randrange(n_paths)
            items.append(verdict_item(c, vp, rng.randrange(4), restore=int(rng.random() < 0.35),
                                      healthy=rng.randrange(1 << sem.paths)))
            last_verdict[c] = vp
            continue
        now += rng.choice([0, 1, rng.randrange(50), rng.randrange(5_000), rng.randrange(40_000)])
        path = rng.randrange(n_paths) if rng.random() < 0.9 else rng.randrange(sem.paths)
        if c in last_verdict and rng.random() < 0.7:
            path = last_verdict.pop(c)
        pkts = 0 if rng.random() < 0.05 else rng.choice([1, 1, 2, 4, rng.randrange(1, 257)])
        if hints and (c not in hint or rng.random() < 0.05):
            hint[c] = rng.choice(shares + [rng.randrange(1, line)])
            if rng.random() < 0.5:
                pkts = 0                     # MR-CC-009: a hint update resolves nothing
        nbytes = pkts * rng.choice([mtu, mtu, rng.randrange(0, mtu + 1)])
        ce = 0 if rng.random() < 0.6 else rng.randrange(0, min(511, 2 * pkts + 2))
        items.append(ack_item(c, path, min(nbytes, (1 << 21) - 1), pkts, ce, now,
                              rng.choice([5_000, 10_000, rng.randrange(1, 60_000)]),
                              hint.get(c, 0) if hints else 0))
    return items


def run_closed(sem, control, items, config):
    """MR-CW-063: the records through the block's semantics (``CwndModel(split=True)``) with
    its control path, no cycles; returns the :class:`Closed` loop (``after``) and the records as
    taken."""
    sem.config(**config)
    loop, taken = Closed(items, control), []
    while not loop.done:
        kind, rec = loop.peek()
        loop.take()
        taken.append((kind, rec))
        loop.answer(sem.setup(rec) if kind == "setup" else sem.ack(rec))
    return loop, taken


def check_after(after, items, expected):
    """MR-CW-065/067: after each ACK item and its control path's records, the connection's
    windows, W, debt and rate equal ``expected`` (the endpoint's, or the unsplit model's), and
    the event's update carries the hinted connection window (0 when not hinted)."""
    n = 0
    for k, ws, u, ua in after:
        exp = expected[k]
        if exp is None:
            continue
        m = len(exp["cwnd"])
        got = {"cwnd": ws[:m], "wsum": u["wsum"], "cut_debt": u["debt"],
               "rate_mbps": u["rate"], "window": ua["cwin"]}
        want = {f: exp[f] for f in got}
        if not exp["hinted"]:
            want["window"] = 0
        assert got == want, (k, items[k], got, want)
        n += 1
    return n


def unsplit_expected(params, config, items):
    """MR-CW-063/065: per ACK item, the unsplit model's connection state after it (the
    ``expected`` of :func:`check_after` for random traffic)."""
    full = CwndModel(**params, **config)
    out = []
    for kind, rec in items:
        u = (full.setup if kind == "setup" else full.ack)(rec)
        c = rec["conn"]
        out.append(None if kind == "setup" else
                   {"cwnd": [q["cwnd"] for q in full.path[c]], "wsum": u["wsum"],
                    "cut_debt": u["debt"], "rate_mbps": full.conn[c]["rate"],
                    "hinted": full.conn[c]["hinted"], "window": full.conn_window(c)})
    return out


#: the layout of each kind of record (MR-CW-106: a verdict on ``s_path``)
_LAYOUT = {"setup": "setup", "ack": "ack", "path": "verdict"}


class Driver(CounterReadout):
    """Sources for ``s_setup`` and ``s_ack`` (one record offered at a time, in order, with idle
    cycles), a sink for ``m_update`` with random backpressure; ``config`` the static inputs.
    ``control`` (a :class:`~metaroce.models.cwnd.CwndControl`, MR-CW-063): the hinted block's
    control path in the loop (:class:`Closed`)."""

    def __init__(self, lay, items, config, *, seed=0, p_idle=0.2, p_bp=0.3, control=None):
        self.loop = Closed(items, control) if control is not None else None
        self.lay = lay
        self.rng = random.Random(seed)
        self.items = list(items)
        self.config = dict(config)
        self.p_idle, self.p_bp = p_idle, p_bp
        self.i = 0
        self.cycle = 0
        self.n_counters = 0
        self.read_counters = False
        self.quiet_cycles = 3
        self.limit = 1_000 + (60 if control is None else 200) * len(self.items)
        self.res = {"taken": [], "updates": []}
        self._offer = None
        self._readout_reset()

    @property
    def sent_all(self):
        if self.loop is not None:
            return self.loop.done
        return self.i >= len(self.items)

    def _next(self):
        if self.loop is not None:
            return self.loop.peek()
        return None if self.sent_all else self.items[self.i]

    def _stuck(self):
        return f"(record {self.i} of {len(self.items)})"

    def inputs(self):
        rng = self.rng
        ins = {"s_ack__valid": 0, "s_ack__payload": 0, "s_setup__valid": 0,
               "s_setup__payload": 0, "m_update__ready": int(rng.random() >= self.p_bp)}
        if self.lay.verdicts:                        # MR-CW-106
            ins.update(s_path__valid=0, s_path__payload=0)
        ports = HINT_INPUTS if self.lay.hints else INPUTS
        ins.update({k: v for k, v in self.config.items() if k in ports})
        if self._offer is None and rng.random() >= self.p_idle:
            self._offer = self._next()
        if self._offer is not None:
            kind, rec = self._offer
            port = "s_" + kind
            ins[port + "__valid"] = 1
            # MR-CW-050/060: a hinted record fails in pack on the first slice's layout
            ins[port + "__payload"] = pack(getattr(self.lay, _LAYOUT[kind]), rec)
        return ins

    def observe(self, ins, outs):
        if self._readout_observe(outs):
            return
        for port in ("s_setup", "s_ack", "s_path"):
            if ins.get(port + "__valid") and outs[port + "__ready"]:
                self.res["taken"].append(self._offer)
                if self.loop is not None:
                    self.loop.take()
                self._offer = None
                self.i += 1
        if outs["m_update__valid"] and ins["m_update__ready"]:
            self.res["updates"].append(unpack(self.lay.update, outs["m_update__payload"]))
            if self.loop is not None:
                self.loop.answer(self.res["updates"][-1])
        self.cycle += 1


def check(sem, config, taken, updates):
    """MR-CW-041: one update per record taken, each the semantics' update for it (MR-CW-118:
    a verdict's with the share-out, the path's and then one per healthy path)."""
    sem.config(config["mtu"], config["beta_q"], config["cap"], config.get("line_mbps"),
               config.get("base_rtt_ns"))
    wants = []
    for k, (kind, rec) in enumerate(taken):
        ws = (sem.verdict_updates(rec) if kind == "path"
              else [{"setup": sem.setup, "ack": sem.ack}[kind](rec)])
        wants += [(k, kind, rec, w) for w in ws]
    assert len(updates) == len(wants), (len(updates), len(wants))
    for (k, kind, rec, want), got in zip(wants, updates):
        assert got == want, f"record {k} ({kind} {rec}): got {got}, expected {want}"
    return {"records": len(taken), "acks": sum(1 for k, _ in taken if k == "ack"),
            "shares": len(wants) - len(taken)}


def run_trace(sem, config, items, expected, verdicts=False):
    """MR-CW-040: the endpoint trace through the semantics; returns the ACK events compared.
    Asserts, before each ACK, that the endpoint's windows are the model's (nothing outside the
    slice moved them) and, after it, that its windows, accumulators and cut state are too.
    ``verdicts`` (MR-CW-113): the trace has path verdicts and restores (``s_path`` records,
    ``sem.verdict``); after each record with an expected state, the windows, W, debt, active
    and collapsed bits are the endpoint's (its states active and collapsed); returns the
    records compared."""
    sem.config(**config)
    n = 0
    for (kind, rec), exp in zip(items, expected):
        if kind == "setup":
            sem.setup(rec)
            continue
        c = rec["conn"]
        ws = [p["cwnd"] for p in sem.path[c]]
        if verdicts:
            u = sem.verdict(rec) if kind == "path" else sem.ack(rec)
            if exp is None:
                continue
            k = len(exp["cwnd"])
            assert exp["before"] is None or ws[:k] == exp["before"], (n, rec, ws, exp["before"])
            qs = sem.path[c][:k]
            got = {"cwnd": [q["cwnd"] for q in qs], "wsum": u["wsum"], "cut_debt": u["debt"],
                   "active": [q["active"] for q in qs],
                   "collapsed": [q["collapsed"] for q in qs]}
            want = {"cwnd": exp["cwnd"], "wsum": exp["wsum"], "cut_debt": exp["cut_debt"],
                    "active": [int(st == 0) for st in exp["states"]],
                    "collapsed": [int(x) for x in exp["collapsed"]]}
            assert got == want, (n, kind, rec, got, want)
            n += 1
            continue
        ws = [p["cwnd"] for p in sem.path[c]]
        k = len(exp["cwnd"])
        assert not exp["ss"] and not any(exp["states"]) and not any(exp["collapsed"]), (n, exp)
        assert ws[:k] == exp["before"], (n, rec, ws, exp["before"])
        u = sem.ack(rec)
        ps, cs = sem.path[c][rec["path"]], sem.conn[c]
        got = {"cwnd": [p["cwnd"] for p in sem.path[c]][:k], "ce_acc": ps["ce_acc"],
               "ack_acc": ps["ack_acc"], "cut_debt": cs["cut_debt"], "cut_left": cs["cut_left"],
               "wsum": u["wsum"], "rate_mbps": cs["rate"]}
        want = {f: exp[f] for f in got}
        if exp["hinted"]:
            got["window"], want["window"] = sem.conn_window(c), exp["window"]
        assert got == want, (n, rec, got, want)
        n += 1
    return n


__all__ = ["verdict_item", "CwndControl", "Closed", "run_closed", "check_after", "unsplit_expected", "band_requests", "BandDriver", "check_band", "setup_item", "ack_item", "endpoint_trace", "traffic", "Driver", "check", "run_trace",
           "CwndModel"]


def band_requests(line_mbps, n, *, seed=0):
    """MR-CW-059: ``n`` band unit requests ``{hint, n}``: edge hints (0, 1, 2, around and above
    the line rate, the field's largest) and random ones, 1..8 paths."""
    from .cwnd import RATE_BITS
    rng = random.Random(seed)
    edge = [0, 1, 2, line_mbps - 1, line_mbps, line_mbps + 1, (1 << RATE_BITS) - 1]
    return [{"hint": rng.choice(edge) if rng.random() < 0.3 else rng.randrange(1, line_mbps + 1),
             "n": rng.randint(1, 8)} for _ in range(n)]


class BandDriver(Driver):
    """A source for the band unit's ``s_req`` (idle cycles) and a sink for ``m_band`` (random
    backpressure); ``config`` the static inputs (``line_mbps``, ``base_rtt_ns``, ``mtu``)."""

    def __init__(self, lay, reqs, config, *, seed=0, p_idle=0.3, p_bp=0.4):
        super().__init__(lay, reqs, config, seed=seed, p_idle=p_idle, p_bp=p_bp)
        self.limit = 1_000 + 80 * len(self.items)
        self.res = {"taken": [], "results": []}

    def _stuck(self):
        return f"(request {self.i} of {len(self.items)})"

    def inputs(self):
        rng = self.rng
        ins = {"s_req__valid": 0, "s_req__payload": 0,
               "m_band__ready": int(rng.random() >= self.p_bp)}
        ins.update(self.config)
        if self._offer is None and not self.sent_all and rng.random() >= self.p_idle:
            self._offer = self.items[self.i]
        if self._offer is not None:
            ins["s_req__valid"] = 1
            ins["s_req__payload"] = pack(self.lay.req, self._offer)
        return ins

    def observe(self, ins, outs):
        if self._readout_observe(outs):
            return
        if ins["s_req__valid"] and outs["s_req__ready"]:
            self.res["taken"].append(self._offer)
            self._offer = None
            self.i += 1
        if outs["m_band__valid"] and ins["m_band__ready"]:
            self.res["results"].append(unpack(self.lay.band, outs["m_band__payload"]))
        self.cycle += 1


def check_band(config, taken, results):
    """MR-CW-059: one result per request taken, each ``band_model``'s."""
    from .cwnd import band_model
    assert len(results) == len(taken), (len(results), len(taken))
    for k, (req, got) in enumerate(zip(taken, results)):
        want = band_model(req["hint"], req["n"], **config)
        assert got == want, f"request {k} {req}: got {got}, expected {want}"
    return {"requests": len(taken)}
