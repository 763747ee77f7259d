"""Workloads on the fabric: endpoints on hosts, RDMA writes, integrity and timing (MR-FAB-050).

:func:`run_writes` puts one endpoint of the chosen kind (``metaroce`` or ``rocev2``) on every
host of a :class:`~metaroce.sim.topology.Fabric`, opens one connection per :class:`Flow`, posts
one RDMA write per flow at the flow's start time, runs until every write has completed (or a
time limit), and checks integrity: every receiver region equals its source buffer and every
write completed exactly once with success, with no other completion anywhere (MR-FAB-051).

With ``handshake`` (MetaRoCE only), every endpoint runs behind a
:class:`~metaroce.models.handshake.HandshakeHost` and each flow's connection is opened at the
flow's start by the connection handshake carried as frames through the fabric, with its loss
(MR-CONN-108); the write is posted when the client's session is established, so the flow's
completion time includes the handshake.
"""
from __future__ import annotations

import random
import time
from dataclasses import dataclass, field

import numpy as np

#: Default endpoint configuration per kind; benchmarks override single keys.
DEFAULT_CFG = {"metaroce": {}, "rocev2": {}}


@dataclass
class Flow:
    """One RDMA write of ``nbytes`` from host ``src`` to host ``dst`` posted at ``start``."""
    src: int
    dst: int
    nbytes: int
    start: float = 0.0
    paths: int = 8


@dataclass
class FlowResult:
    flow: Flow
    t_done: float | None
    completions: int
    ok_status: bool
    data_ok: bool

    @property
    def fct(self):
        return None if self.t_done is None else self.t_done - self.flow.start

    @property
    def goodput_bps(self):
        f = self.fct
        return self.flow.nbytes * 8 / f if f else 0.0


@dataclass
class RunResult:
    kind: str
    flows: list
    wall: float
    sim_time: float
    events: int
    packets: int
    stats: dict = field(default_factory=dict)     # summed endpoint counters
    unexpected_completions: int = 0
    meter: "Meter | None" = None
    cpu: float = 0.0        # process CPU seconds of the run (robust on a shared machine)

    @property
    def delivered_ok(self):
        return (self.unexpected_completions == 0
                and all(r.data_ok and r.completions == 1 and r.ok_status for r in self.flows))

    @property
    def all_done(self):
        return all(r.t_done is not None for r in self.flows)

    @property
    def pkts_per_wall_s(self):
        return self.packets / self.wall if self.wall > 0 else 0.0


class Meter:
    """Data payload bytes delivered to receivers per flow per time bin (counts every copy that
    arrives, so it measures arrival rate, not goodput)."""

    def __init__(self, bin_width, n_flows):
        self.w = bin_width
        self.bins = [dict() for _ in range(n_flows)]

    def add(self, flow, t, nbytes):
        b = int(t / self.w)
        d = self.bins[flow]
        d[b] = d.get(b, 0) + nbytes

    def rate(self, flow, b):
        return self.bins[flow].get(b, 0) * 8 / self.w


def make_endpoint(kind, addr, **cfg):
    # MR-SEC-152: a simulation draws its R_Keys from a generator seeded by the run, so every
    # run of a benchmark or scenario is reproducible.
    cfg.setdefault("rng", random.Random(f"{kind}/{addr}/{cfg.get('seed', 0)}"))
    from metaroce.models.baselines import make_endpoint as make
    return make(kind, addr, **cfg)


def _status_ok(c):
    return int(c.status) == 0


def run_writes(fab, flows, kind="metaroce", *, cfg=None, seed=1, until=1.0, meter_bin=None,
               max_wall=None, handshake=None):
    """Run ``flows`` on ``fab`` with endpoints of ``kind``; returns a :class:`RunResult`.
    ``handshake``: None (connections configured out of band) or a dict of
    :class:`~metaroce.models.handshake.HandshakeHost` keywords (``auth``, ``timeout``, ...):
    connections are opened by the handshake through the fabric (MR-CONN-108)."""
    cfg = dict(DEFAULT_CFG.get(kind, {}), **(cfg or {}))
    cfg.setdefault("line_rate_bps", fab.rate_bps * fab.planes)
    cfg.setdefault("base_rtt", fab.rtt)
    if handshake is not None and kind != "metaroce":
        raise ValueError("the connection handshake is MetaRoCE's (kind 'metaroce')")
    sim = fab.sim
    for h in fab.hosts:
        h.ep = make_endpoint(kind, h.addr, **cfg)
        if handshake is not None:
            from metaroce.models.handshake import HandshakeHost
            hs_kw = dict(handshake)
            hs_kw.setdefault("rng", random.Random(f"handshake/{h.addr}/{seed}"))
            h.ep = HandshakeHost(h.ep, **hs_kw)
    rng = np.random.default_rng(seed)
    srcs, dsts, conns = [], [], []
    by_wr = {}
    for i, fl in enumerate(flows):
        s, d = fab.hosts[fl.src], fab.hosts[fl.dst]
        src = bytearray(rng.bytes(fl.nbytes))
        dst = bytearray(fl.nbytes)
        lkey = s.ep.reg_mr(src)
        rkey = d.ep.reg_mr(dst)
        paths = fl.paths if kind == "metaroce" else 1
        if handshake is None:
            c = s.ep.connect(i + 1, d.addr, i + 1, paths=paths)
            d.ep.connect(i + 1, s.addr, i + 1, paths=paths)
        else:
            c = None            # opened by the handshake at the flow's start
        srcs.append(src)
        dsts.append(dst)
        conns.append([c, lkey, rkey])
        by_wr[1000 + i] = i
    done_t = [None] * len(flows)
    ncomp = [0] * len(flows)
    status_ok = [True] * len(flows)
    unexpected = [0]
    remaining = [len(flows)]

    def on_completion(host, t, c):
        i = by_wr.get(c.wr_id)
        if i is None or host is not fab.hosts[flows[i].src]:
            unexpected[0] += 1
            return
        ncomp[i] += 1
        status_ok[i] = status_ok[i] and _status_ok(c)
        if done_t[i] is None:
            done_t[i] = t
            remaining[0] -= 1
            if remaining[0] == 0:
                sim.stop()

    for h in fab.hosts:
        h.on_completion = on_completion

    def post(i):
        c, lkey, rkey = conns[i]
        c.post_write(0, lkey, 0, flows[i].nbytes, 0, rkey, wr_id=1000 + i)
        fab.hosts[flows[i].src].kick()

    def start(i):
        fl = flows[i]

        def connected(conn):
            conns[i][0] = conn
            post(i)
        fab.hosts[fl.src].ep.connect(fab.hosts[fl.dst].addr, paths=fl.paths, on_connected=connected)
        fab.hosts[fl.src].kick()

    for i, fl in enumerate(flows):
        sim.at(fl.start, post if handshake is None else start, i)

    meter = None
    if meter_bin:
        meter = Meter(meter_bin, len(flows))
        key = {(fab.hosts[fl.src].addr, i + 1): i for i, fl in enumerate(flows)}
        for h in {fab.hosts[fl.dst] for fl in flows}:
            def hook(frame, now, _key=key, _m=meter):
                if frame.payload:
                    i = _key.get((frame.ip.src, frame.bth.dest_qp))
                    if i is not None:
                        _m.add(i, now, len(frame.payload))
            h.rx_hook = hook

    t0 = time.perf_counter()
    c0 = time.process_time()
    ev0 = sim.events
    if max_wall is None:
        sim.run(until=until)
    else:
        while remaining[0] and sim.now < until and time.perf_counter() - t0 < max_wall:
            sim.run(until=until, max_events=200_000)
            if sim.stopped or not sim.pending():
                break
    wall = time.perf_counter() - t0
    cpu = time.process_time() - c0
    t_end = sim.now
    events = sim.events - ev0
    packets = sum(h.stats["tx"] for h in fab.hosts)
    # One extra event round lets duplicate completions (a bug) show up.
    sim.run(until=sim.now + 4 * fab.rtt)
    stats = {}
    for h in fab.hosts:
        for k, v in getattr(h.ep, "stats", {}).items():
            if isinstance(v, (int, float)):
                stats[k] = stats.get(k, 0) + v
        if handshake is not None:       # MR-CONN-108
            ep = h.ep
            stats["handshakes_established"] = stats.get("handshakes_established", 0) + sum(
                1 for _, role, _, _ in ep.connected if role == "client")
            stats["handshakes_failed"] = stats.get("handshakes_failed", 0) + len(ep.failed)
            stats["handshake_rejects"] = stats.get("handshake_rejects", 0) + sum(ep.server.rejects.values())
    results = [FlowResult(fl, done_t[i], ncomp[i], status_ok[i], bytes(dsts[i]) == bytes(srcs[i]))
               for i, fl in enumerate(flows)]
    return RunResult(kind, results, wall, t_end, events, packets, stats,
                     unexpected[0], meter, cpu)
