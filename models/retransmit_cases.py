"""The retransmit unit's one verification stack, simulator-independent part (MR-TX-*).

* :func:`traffic`: a seeded event list (sent packets and the ACKs a lossy receiver returns for
  them, plus stale, bad and NAK items), built against :class:`RetransmitModel` as the sender's
  view so that no path exceeds its PSN window and the pool is never over-committed;
* :class:`Driver`: ``s_sent``/``s_ack`` sources with idle cycles, random backpressure on
  ``m_acked`` and ``m_resend``, the counter read-out at the end, all from a seed;
* :func:`expected`: the items through :class:`RetransmitModel` one at a time (no timing);
  :func:`check`: the events the cycle model applied (sent packets, ACKs and timeouts, in its
  order) replayed through :class:`RetransmitModel`, compared with what the driver collected;
* :func:`endpoint_run`: the reference endpoint as a sender over the loopback with data loss,
  its sends, the ACKs it processed and its decisions on them, for the model to replay.
"""
from __future__ import annotations

import random

from . import protocol as P
from .driver import CounterReadout, run_alone
from .retransmit import (BACKOFF_MAX_LOG2, N_COUNTERS, RTO_NS, STATUS_RETRY_EXC, RetransmitModel,
                         pack, time_due, unpack)


def sent_item(conn, path, psn, slot=0, chunk=0, nbytes=64, req=0, abort=0, t=0, lap=0):
    return ("sent", {"conn": conn, "path": path, "psn": psn, "slot": slot, "chunk": chunk,
                     "nbytes": nbytes, "req": req, "abort": abort, "t_sent": t & 0xFFFFFFFF,
                     "lap": lap})


def ack_item(conn, path, cum, sack, psn=0, nak=0, reason=0):
    return ("ack", {"nak": nak, "conn": conn, "path": path, "psn": psn, "reason": reason,
                    "cum": cum & P.PSN_MASK, "sack": sack, "ce_count": 0, "ece": 0, "sport": 0})


def wait_item(ns):
    """The driver offers nothing until ``ns`` of simulated time have passed."""
    return ("wait", ns)


def traffic(conns, paths, pool, n, *, seed=0, loss=0.1, p_ack=0.35, n_paths=6, bad=True,
            black_hole=0, rto_ns=RTO_NS, ack_loss=0.0, shared=0, psn0=0):
    """``n`` sent packets over ``n_paths`` (connection, path) pairs and the ACKs of a receiver
    that loses each packet with probability ``loss`` (``protocol.rx_accept``); with ``bad``
    also stale ACKs (held back and released later), ACKs covering PSNs never sent, NAKs,
    sent packets with a wrong PSN and out-of-range paths. MR-TX-162: ``ack_loss``, the
    probability that an ACK the receiver sends is lost (the next one repairs it); ``shared``
    > 0 draws the pairs from that many connections, so that several paths of a connection
    carry traffic and a timer that expires while another path is healthy sends a tail probe
    (the black hole's path is then on one of them, its first expiry a probe). MR-TX-471/476:
    ``psn0``, every path's first PSN (its initial PSN: the unit takes a row's first packet's)."""
    rng = random.Random(seed)
    sem = RetransmitModel(conns, paths, pool)
    if shared:
        cs = rng.sample(range(conns), shared)
        pairs = sorted({(rng.choice(cs), rng.randrange(paths)) for _ in range(n_paths)})
    else:
        pairs = sorted({(rng.randrange(conns), rng.randrange(paths)) for _ in range(n_paths)})
    rx = {pr: [psn0, 0] for pr in pairs}                 # receiver: cum, sack (MR-TX-471: psn0)
    # MR-TX-064: a path whose every packet is lost: one packet, then a wait past its deadline,
    # ``black_hole`` times (the backoff doubles each time)
    holes = []
    if black_hole:
        while len(holes) < 1:
            pr = (rng.choice(pairs)[0] if shared else rng.randrange(conns), rng.randrange(paths))
            if pr not in pairs:
                holes.append(pr)
    hole_at = sorted(rng.sample(range(n), min(black_hole, n)))
    hole_psn = psn0
    held = []
    items = []
    t = rng.randrange(1 << 32)
    sent = 0

    def emit_ack(pr):
        if ack_loss and rng.random() < ack_loss:
            return                                       # lost on the way back
        cum, sack = rx[pr]
        it = ack_item(pr[0], pr[1], cum, sack, psn=P.psn_add(cum, -1))
        if bad and rng.random() < 0.1:
            held.append(it)                              # delivered late: stale or partial
        else:
            items.append(it)
            sem.ack(it[1])

    while sent < n:
        if hole_at and sent >= hole_at[0]:
            k = P.psn_add(hole_psn, -psn0)
            hole_at.pop(0)
            items.append(sent_item(holes[0][0], holes[0][1], hole_psn, slot=7, chunk=k, t=t))
            sem.sent(items[-1][1])
            hole_psn = P.psn_add(hole_psn, 1)
            # long enough for the timer at its backoff, plus a slot and the wheel's lag
            # (the first expiry may be a tail probe, MR-TX-162: the timeout one RTO later)
            items.append(wait_item((rto_ns << min(k, BACKOFF_MAX_LOG2)) * (2 if shared and not k else 1)
                                   + 3 * 1024 + 2000))
        pr = rng.choice(pairs)
        st = sem.state(sem.row(*pr))
        t += rng.randrange(1, 50)
        r = rng.random()
        if bad and r < 0.02 and st["based"]:
            items.append(sent_item(pr[0], pr[1], P.psn_add(st["next_psn"], rng.choice([1, -1, 7])),
                                   t=t))                 # a scheduler bug: refused
            sem.sent(items[-1][1])
            continue
        if bad and r < 0.03:
            items.append(ack_item(pr[0], pr[1], P.psn_add(st["next_psn"], rng.randrange(1, 40)), 0))
            sem.ack(items[-1][1])                        # covers PSNs never sent
            continue
        if bad and r < 0.04:
            items.append(ack_item(pr[0], pr[1], 0, 0, psn=st["floor"], nak=1, reason=rng.randrange(1, 8)))
            sem.ack(items[-1][1])
            continue
        if bad and r < 0.045 and paths < 256:
            items.append(ack_item(pr[0], paths + rng.randrange(256 - paths), 0, 0))
            sem.ack(items[-1][1])
            continue
        if held and rng.random() < 0.05:
            it = held.pop(0)
            items.append(it)
            sem.ack(it[1])
            continue
        if sem.used >= pool or not P.send_window_open(st["floor"], st["next_psn"]):
            emit_ack(pr)                                 # the receiver reports; the floor moves
            continue
        psn = st["next_psn"] if st["based"] else psn0     # MR-TX-471: a row's first
        it = sent_item(pr[0], pr[1], psn, slot=rng.randrange(8), chunk=rng.randrange(1 << 20),
                       nbytes=rng.randrange(1 << 13), req=rng.randrange(2),
                       abort=int(rng.random() < 0.02), t=t,
                       lap=(psn >> 1) & 1)      # MR-TX-209: both laps, the rng's draws unchanged
        items.append(it)
        sem.sent(it[1])
        sent += 1
        if rng.random() >= loss:
            cum, sack = rx[pr]
            if P.rx_classify(cum, sack, psn) == P.RX_NEW:
                rx[pr][0], rx[pr][1], _ = P.rx_accept(cum, sack, psn)
        if rng.random() < p_ack:
            emit_ack(pr)
    for pr in pairs:                                     # the final ACKs resolve everything sent
        if rng.random() < 0.5:
            emit_ack(pr)
    items += held
    return items


def expected(conns, paths, pool, items):
    """The decisions and counters of ``items`` through :class:`RetransmitModel`."""
    sem = RetransmitModel(conns, paths, pool)
    acked, resend = [], []
    for kind, f in items:
        if kind == "sent":
            sem.sent(f)
        else:
            for d in sem.ack(f):
                (acked if d.kind == "acked" else resend).append(d)
    return {"acked": acked, "resend": resend, "counters": sem.counters}


def replay(model, events):
    """MR-TX-050: the events a cycle model applied (its ``events``: sent packets, ACKs and
    timeouts, in its order) through :class:`RetransmitModel` with the same constants; a
    timeout must find the path's timer running and due (MR-TX-063). Returns the reports, the
    errors, the counters and the semantics' final state."""
    lay = model.lay
    sem = RetransmitModel(lay.conns, lay.paths, lay.pool, rto_ns=model.rto_ns,
                          retry_limit=model.retry_limit, probes=model.probes,
                          ages=getattr(model, "ages", False))
    acked, resend, errors, late, ackevs, probes = [], [], [], [], [], []
    for ev in events:
        if ev[0] == "sent":
            sem.sent(ev[1])
        elif ev[0] == "ack":
            for d in sem.ack(ev[1], ev[2]):
                (acked if d.kind == "acked" else resend).append(d)
            if sem.ackev is not None:
                ackevs.append(sem.ackev)
        elif ev[0] == "probe":
            # MR-TX-162: the timer was due and the probe's conditions held; MR-TX-343: the
            # ages tested at the clock of the cycle before the expiry's (age_now)
            _, conn, path, now, age_now = ev
            dl = sem.deadline(sem.row(conn, path))
            assert dl is not None and time_due(dl, now), f"early probe of path {conn}.{path}"
            late.append(P.time_dist(dl, now))
            probes.append(pack(lay.probe, {"conn": conn, "path": path,
                                           "psn": sem.probe(conn, path, now, age_now)}))
        elif ev[0] == "rto":
            _, conn, path, sample, rto = ev
            assert sem.rtt_sample(conn, path, sample) == rto, f"RTO of path {conn}.{path}"
            sem.set_rto(conn, path, rto)
        else:
            _, conn, path, now, age_now = ev
            dl = sem.deadline(sem.row(conn, path))
            assert dl is not None and time_due(dl, now), f"early timeout of path {conn}.{path}"
            late.append(P.time_dist(dl, now))
            assert not sem.probes_now(conn, path, age_now), f"timeout of {conn}.{path} where a probe was due"
            # MR-TX-197: the timeout's path verdict leaves on m_probe, in the probes' order;
            # MR-TX-300: with the health bits it was decided on (the other paths')
            hv = ({"healthy": sem.health_now(conn, age_now) & ~(1 << path)}
                  if "healthy" in dict(lay.probe.members) else {})
            probes.append(pack(lay.probe, {"conn": conn, "path": path, "psn": 0, "to": 1,
                                           "verdict": sem.verdict_now(conn, path, age_now), **hv}))
            out, err = sem.timeout(conn, path, age_now)
            resend += out
            if err:
                errors.append(pack(lay.error, {"conn": conn, "path": path,
                                               "status": STATUS_RETRY_EXC}))
    return {"acked": acked, "resend": resend, "errors": errors, "counters": sem.counters,
            "late": late, "sem": sem, "ackev": ackevs, "probes": probes}


def check(model, res):
    """MR-TX-050: what the unit reported equals the semantics on the events it applied, record
    by record, in order; counters equal; and at the end no path has a live record left
    unreported (every one acknowledged, resolved or timed out, MR-TX-063)."""
    lay = model.lay
    exp = replay(model, model.events)

    def norm(ds, lay_):
        return [pack(lay_, {"conn": d.conn, "path": d.path, "slot": d.slot, "chunk": d.chunk,
                            "abort": d.abort, "lap": d.lap,
                            **({"late": d.late} if lay_ is lay.acked else {})}) for d in ds]
    # MR-TXS-445: an acknowledged report's late flag compared with the rest
    assert res["acked"] == norm(exp["acked"], lay.acked), "acknowledged records"
    assert res["resend"] == norm(exp["resend"], lay.resend), "records reported lost"
    assert res["error"] == exp["errors"], "error reports"
    if "probe" in res:
        assert res["probe"] == exp["probes"], "tail probes (MR-TX-162)"
    if "ackev" in res:
        # MR-TX-070: one event per resolving ACK, in ACK order, with what it acknowledged
        # (srtt is the estimator's timing, compared cycle by cycle in the lockstep)
        got = [{k: v for k, v in unpack(lay.ackev, w).items() if k != "srtt"} for w in res["ackev"]]
        assert got == [dict(e, path=e["path"] & (lay.paths - 1)) for e in exp["ackev"]], \
            "ACK events"
    if res.get("counters") is not None:
        assert res["counters"] == exp["counters"], "counters"
    assert not any(st["timer_on"] for st in exp["sem"].path.values()), "a timer still running"
    return exp


def check_items(model, items, res):
    """:func:`check`, and the cycle model applied exactly ``items``' sent packets and ACKs in
    their order (the driver overrides ``t_sent`` with the time it offers a packet)."""
    exp = check(model, res)
    got = [(k, {x: v for x, v in f.items() if x != "t_sent"}) for k, f, *_ in
           (e for e in model.events if e[0] in ("sent", "ack"))]
    want = [(k, {x: v for x, v in f.items() if x != "t_sent"}) for k, f in items if k != "wait"]
    assert got == want, "events applied in item order"
    return exp


class Driver(CounterReadout):
    """Sources for ``s_sent`` and ``s_ack``, sinks for ``m_acked``, ``m_resend`` and
    ``m_error``, the clock ``now`` and ``reg_addr``, from one seed. Items are offered in order,
    one at a time; an idle cycle with probability ``p_idle``; each output ready low with
    probability ``p_bp``. ``now`` starts at ``now0`` and advances ``ns_per_cycle`` per cycle,
    ``idle_ns`` while a wait item runs and once every item is taken (so timers expire in few
    cycles). A sent packet's ``t_sent`` is the ``now`` of the cycle it is offered."""

    def __init__(self, lay, items, *, seed=0, p_idle=0.2, p_bp=0.3, read_counters=True, now0=0,
                 ns_per_cycle=4, idle_ns=997, p_bp_ev=None):
        self.lay = lay
        self.rng = random.Random(seed)
        self.rng_ev = random.Random(seed + 0x5EED)
        self.rng_pr = random.Random(seed + 0x9B0E)     # MR-TX-164: m_probe's backpressure
        self.p_idle, self.p_bp = p_idle, p_bp
        self.p_bp_ev = p_bp if p_bp_ev is None else p_bp_ev
        self.items = list(items)
        self.read_counters = read_counters
        self.now = now0 & P.TIME_MASK
        self.ns_per_cycle, self.idle_ns = ns_per_cycle, idle_ns
        self.wait_until = None
        self.i = 0
        self.presenting = None
        self.cycle = 0
        self.n_counters = N_COUNTERS
        self.quiet_cycles = 3
        waits = sum(f for k, f in self.items if k == "wait") // idle_ns
        self.limit = 4000 + waits + 60 * len(self.items) * (1 + int(10 * p_bp)) + (
            (RTO_NS << BACKOFF_MAX_LOG2) // idle_ns)
        self._readout_reset()
        self.res = {"acked": [], "resend": [], "error": [], "ackev": [], "probe": [], "taken": [],
                    "acked_cycles": [],
                    "resend_cycles": [], "cycles": 0, "counters": None}

    @property
    def sent_all(self):
        return self.i >= len(self.items) and self.presenting is None

    def inputs(self):
        rng = self.rng
        inp = {"s_sent__valid": 0, "s_sent__payload": 0, "s_ack__valid": 0, "s_ack__payload": 0,
               "now": self.now}
        if self._phase:
            inp.update({"m_acked__ready": 1, "m_resend__ready": 1, "m_error__ready": 1,
                        "m_ackev__ready": 1, "m_probe__ready": 1,
                        "reg_addr": self._readout_addr()})
            return inp
        if self.wait_until is not None and P.time_dist(self.wait_until, self.now) >= 0:
            self.wait_until = None
        while (self.presenting is None and self.wait_until is None and self.i < len(self.items)
               and self.items[self.i][0] == "wait"):
            self.wait_until = (self.now + self.items[self.i][1]) & P.TIME_MASK
            self.i += 1
        if self.presenting is None and self.wait_until is None and self.i < len(self.items):
            if self.p_idle == 0 or rng.random() >= self.p_idle:
                kind, f = self.items[self.i]
                if kind == "sent":
                    f = dict(f, t_sent=self.now)
                self.presenting = (kind, f)
        if self.presenting is not None:
            kind, f = self.presenting
            inp[f"s_{kind}__valid"] = 1
            inp[f"s_{kind}__payload"] = pack(self.lay.sent if kind == "sent" else self.lay.ack, f)
        for name in ("m_acked__ready", "m_resend__ready", "m_error__ready"):
            inp[name] = int(rng.random() >= self.p_bp)
        # MR-TX-071: m_ackev's backpressure from a generator of its own (the other draws
        # stay those of the traffic before the port existed)
        inp["m_ackev__ready"] = int(self.rng_ev.random() >= self.p_bp_ev)
        inp["m_probe__ready"] = int(self.rng_pr.random() >= self.p_bp)
        inp["reg_addr"] = rng.randrange(16)
        return inp

    def observe(self, inp, out):
        idle = self.wait_until is not None or self.sent_all
        self.now = (self.now + (self.idle_ns if idle else self.ns_per_cycle)) & P.TIME_MASK
        if self._readout_observe(out):
            return
        res = self.res
        if self.presenting is not None:
            kind = self.presenting[0]
            if out[f"s_{kind}__ready"]:
                self.presenting = None
                self.i += 1
                res["taken"].append(self.cycle)
        for name in ("acked", "resend", "error", "ackev", "probe"):
            if out[f"m_{name}__valid"] and inp[f"m_{name}__ready"]:
                res[name].append(out[f"m_{name}__payload"])
                if name in ("acked", "resend"):
                    res[f"{name}_cycles"].append(self.cycle)
        self.cycle += 1

    def _stuck(self):
        return f"(item {self.i} of {len(self.items)})"


def run_model(model, items, *, seed=0, **kw):
    """:class:`RetransmitCycleModel` alone through the driver; returns the driver's results."""
    drv = Driver(model.lay, items, seed=seed, **kw)
    run_alone(model, drv)
    return drv.res


def decode(lay, words):
    return [unpack(lay.acked, w) for w in words]


def ack_burst(conns, paths, pool, *, seed=0, n_rows=4, per_row=4, avoid=()):
    """MR-TX-034: ``n_rows x per_row`` sent packets on fresh paths (none of the items in
    ``avoid`` touched them), then one ACK per packet, round robin over the rows, each
    acknowledging one more PSN of its path: offered back to back, every ACK is taken in the
    cycle it is offered."""
    rng = random.Random(seed)
    used = {(f["conn"], f["path"] & (paths - 1)) for k, f in avoid if k != "wait"}
    rows = []
    while len(rows) < n_rows:
        pr = (rng.randrange(conns), rng.randrange(paths))
        if pr not in rows and pr not in used:
            rows.append(pr)
    items = [sent_item(c, p, i, slot=i % 8, chunk=i) for i in range(per_row) for c, p in rows]
    items += [ack_item(c, p, i + 1, 0, psn=i) for i in range(per_row) for c, p in rows]
    return {"items": items, "rows": rows}


# ------------------------------------------------------------------ the reference endpoint

def endpoint_run(seed=0, *, paths=2, loss=0.03, nmsg=12, msg_len=40_000, drop_until=60e-6,
                 conn=5, ce=0.0, ep_kw=None, ack_loss=0.0):
    """The reference endpoint (:class:`metaroce.models.endpoint.Endpoint`) sending writes over
    the loopback, with each data frame sent before ``drop_until`` (s) lost with probability
    ``loss`` (later ones are not, so every loss is followed by traffic on its path and is found
    by a SACK gap, MR-REL-002, not by a timer). Returns ``{"items", "decisions", "stats"}``:
    the sent packets and the ACKs its sender processed, in order, as retransmit-unit items
    (connection ``conn``), and per ACK the endpoint's decisions on the records it resolved:
    ``[Decision]`` from its ``_chunk_acked`` (acknowledged) and ``_mark_lost`` (lost).
    ``ce``: the loopback's CE-marking probability per data frame (the ACK items then carry
    the ACKs' ``ce_count`` and ECE); ``ep_kw``: more endpoint arguments. Also ``"cc"``, per
    ACK that resolved records (MR-TX-070: what the congestion windows see), the endpoint's
    ``{path, bytes, pkts, ce, now, srtt, cwnd}`` (its SACK resolution's acknowledged bytes and
    packets, the CE count it takes, its time in ns, the path's srtt and every path window after
    the ACK), and ``"cc_setup"``: the windows, floor and coupling it started with.
    MR-TX-167: ``ack_loss``, the probability that an ACK on the way back is lost; ``"expiries"``,
    each expiry of the sender's tail-loss timer: ``{"at", "path", "now", "kind", "lost"}``, at
    the position ``at`` in ``items`` (before that item), ``kind`` "probe" (a tail probe,
    MR-REL-010), "timeout" (MR-REL-006), "xpath" (a silent-path verdict, MR-REL-009) or None
    (not due yet), ``lost`` the records a timeout declared lost. A probe (a PSN re-sent) is
    not an item: the unit records a PSN once."""
    from .endpoint import ABORT, Endpoint
    from .loopback import LoopFaults, Loopback
    from .retransmit import Decision

    rng = random.Random(seed)
    # MR-REL-013: the retransmit unit of this version does not double resends (MR-REL-012)
    kw = {"mtu": 1024, "line_rate_bps": 100e9, "base_rtt": 4e-6, "resend_twice": False,
          **(ep_kw or {})}
    a, b = Endpoint("10.0.0.1", **kw), Endpoint("10.0.0.2", **kw)
    ca = a.connect(10, "10.0.0.2", 20, paths=paths)
    b.connect(20, "10.0.0.1", 10, paths=paths)
    src = bytearray(rng.randbytes(nmsg * msg_len))
    dst = bytearray(len(src))
    ks, kd = a.reg_mr(src), b.reg_mr(dst)
    for i in range(nmsg):
        ca.post_write(0, ks, i * msg_len, msg_len, i * msg_len, kd, wr_id=i)

    items, decisions, cc = [], [], []
    cc_setup = {"cwnd": [q.cwnd for q in ca.paths], "floor": ca.path_floor,
                "multi": int(len(ca.paths) > 1), "mtu": a.mtu, "beta_q": a._beta_q,
                "cap": int(a.cwnd_max)}
    slot_of = {}
    state = {"now": 0, "in_ack": None, "late": set()}
    orig_next, orig_frame = ca._next_frame, ca._frame
    orig_ack, orig_acked, orig_lost = ca._on_ack, ca._chunk_acked, ca._mark_lost
    orig_timeout, orig_probe_send = ca._on_timeout, ca._probe_send
    expiries = []

    def next_frame(now):
        state["now"] = now
        return orig_next(now)

    def frame(m, i, off, nbytes, p, psn, is_retx, ack_req):
        if state.get("probing"):
            return orig_frame(m, i, off, nbytes, p, psn, is_retx, ack_req)
        slot_of.setdefault((id(m), i), m.slot)
        items.append(sent_item(conn, p.idx, psn, slot=m.slot, chunk=i & 0xFFFFF, nbytes=nbytes,
                               req=int(bool(ack_req)), abort=int(i == ABORT), t=state["now"]))
        return orig_frame(m, i, off, nbytes, p, psn, is_retx, ack_req)

    def on_ack(ack, now, bth_psn=0):
        from .endpoint import _MRAH_ECE, RING_MASK
        it = ack_item(conn, ack.path, ack.cum_psn, ack.sack, psn=ack.trigger_psn)
        ece = int(bool(ack.flags & _MRAH_ECE))
        it[1].update(ce_count=ack.ce_count, ece=ece)
        items.append(it)
        state["in_ack"] = ack.path
        dec = []
        decisions.append(dec)
        pkts = nbytes = n = 0
        if ack.path < len(ca.paths):
            p = ca.paths[ack.path]
            n, acked = P.sack_resolve(p.floor, p.next_psn, ack.cum_psn, ack.sack)
            for j in range(max(0, n)):
                rec = p.ring[(p.floor + j) & RING_MASK]
                if rec is not None and (acked >> j) & 1:
                    pkts += 1
                    nbytes += rec.nbytes
                    if rec.lost:
                        # MR-TXS-445: a record declared lost before, acknowledged late
                        state["late"].add((id(rec.msg), rec.idx))
        try:
            return orig_ack(ack, now, bth_psn)
        finally:
            state["in_ack"] = None
            state["late"].clear()
            if n > 0:
                p = ca.paths[ack.path]
                cc.append({"path": ack.path, "bytes": nbytes, "pkts": pkts,
                           "ce": min(ack.ce_count, pkts) if ece else 0, "now": now,
                           "srtt": ca._srtt_ns(p), "cwnd": [q.cwnd for q in ca.paths]})

    def chunk_acked(m, i):
        if state["in_ack"] is not None:
            decisions[-1].append(Decision("acked", conn, state["in_ack"], slot_of[(id(m), i)],
                                          i & 0xFFFFF, int(i == ABORT),
                                          late=int((id(m), i) in state["late"])))
        return orig_acked(m, i)

    def on_timeout(p, now):
        st = a.stats
        before = (st.get("tail_probes", 0), st.get("timeouts", 0), st.get("xpath_losses", 0))
        ex = {"at": len(items), "path": p.idx, "now": now, "kind": None, "lost": []}
        state["in_to"] = ex["lost"]
        try:
            return orig_timeout(p, now)
        finally:
            state["in_to"] = None
            after = (st.get("tail_probes", 0), st.get("timeouts", 0), st.get("xpath_losses", 0))
            ex["kind"] = next((k for k, b, c in zip(("probe", "timeout", "xpath"), before, after)
                               if c != b), None)
            expiries.append(ex)

    def probe_send(p, psn, rec, now):
        state["probing"] = True
        try:
            return orig_probe_send(p, psn, rec, now)
        finally:
            state["probing"] = False

    def mark_lost(p, rec, requeue=True):
        if state.get("in_to") is not None and not rec.lost:
            state["in_to"].append(Decision("resend", conn, p.idx, slot_of[(id(rec.msg), rec.idx)],
                                           rec.idx & 0xFFFFF, int(rec.idx == ABORT)))
        if state["in_ack"] is not None and not rec.lost:
            decisions[-1].append(Decision("resend", conn, p.idx, slot_of[(id(rec.msg), rec.idx)],
                                          rec.idx & 0xFFFFF, int(rec.idx == ABORT)))
        return orig_lost(p, rec, requeue)

    ca._next_frame, ca._frame = next_frame, frame
    ca._on_ack, ca._chunk_acked, ca._mark_lost = on_ack, chunk_acked, mark_lost
    ca._on_timeout, ca._probe_send = on_timeout, probe_send
    drop_rng = random.Random(seed + 1)

    def drop_if(f, now):
        return f.mrdh is not None and now < drop_until and drop_rng.random() < loss

    lb = Loopback(a, b, faults_ab=LoopFaults(drop_if=drop_if, ce=ce), seed=seed, delay=1.5e-6,
                  faults_ba=LoopFaults(ctrl_loss=ack_loss) if ack_loss else None)
    lb.run(until=0.02)
    assert dst == src, "the transfer completed"
    return {"items": items, "decisions": decisions, "stats": dict(a.stats), "cc": cc,
            "cc_setup": cc_setup, "expiries": expiries}


def endpoint_expiries(r, conn=5):
    """MR-TX-167: ``r`` (:func:`endpoint_run`) replayed through :class:`RetransmitModel` (the
    small instance), with the unit's decision at each expiry of the endpoint's timer: a list of
    ``(endpoint kind, unit kind, endpoint lost, unit lost)``, the unit's kind "probe" or
    "timeout" (``RetransmitModel.expire``), or "off" when its timer is not running. A
    silent-path verdict of the endpoint (MR-REL-009, not in the unit) is applied to the unit as
    a timeout (every live record lost, the path unhealthy) and listed as ("xpath", ...). Also
    returns the per-ACK decisions, to compare with ``r["decisions"]``."""
    from .retransmit import SMALL
    sem = RetransmitModel(*SMALL)
    out, acks = [], []
    ex = list(r["expiries"])
    items = r["items"]
    for i in range(len(items) + 1):
        while ex and ex[0]["at"] == i:
            e = ex.pop(0)
            if e["kind"] is None:
                continue
            st = sem.state(sem.row(conn, e["path"]))
            if not st["timer_on"]:
                out.append((e["kind"], "off", e["lost"], []))
            elif e["kind"] == "xpath":
                out.append(("xpath", "timeout", e["lost"], sem.timeout(conn, e["path"])[0]))
            else:
                res = sem.expire(conn, e["path"], e["now"])
                out.append((e["kind"], res[0], e["lost"], res[1] if res[0] == "timeout" else []))
        if i < len(items):
            kind, f = items[i]
            if kind == "sent":
                sem.sent(f)
            else:
                acks.append(sem.ack(f))
    return out, acks
