"""``bench simspeed``: the fabric simulator's own speed, with and without a protocol.

Runs the same topology (``--hosts`` hosts on one leaf-spine plane, 2 leaves x 4 spines, 400 Gb/s,
10 us) three ways: (``fabric``) every sender blasts ``--packets`` pre-built 4 KiB write frames
with no protocol, so only the event loop, links and switches run; (``metaroce``) and
(``rocev2``) one write of the same size per sender with the endpoints.
Rows: ``mode``, ``packets`` (frames put on the wire by hosts), ``events``, ``wall_s``,
``pkts_per_s`` (simulated packets per wall-clock second), ``events_per_s``, ``cpu_s`` and
``pkts_per_cpu_s`` (per CPU second of the process: on a shared machine wall time also counts
the time other jobs held the core), ``hops_per_packet`` (links crossed per packet, 4 when nothing is dropped), ``drops``.

With ``--count`` every run is traced (``sys.settrace`` opcode events inside ``Sim.run``, about 20x
slower) and the rows add ``bytecodes_per_packet`` and ``calls_per_packet`` (Python function
calls): the simulator's cost per packet in a measure that does not depend on the machine or its
load (C-level work such as dict lookups and allocation is not weighed). Use a few hundred packets.
"""
from __future__ import annotations

import sys
import time

from ._common import endpoint_cfg

HELP = "simulator speed: packets and events per wall-clock second, fabric alone and with endpoints"


def add_arguments(p):
    p.add_argument("--hosts", type=int, default=8)
    p.add_argument("--packets", type=int, default=20000, help="data packets per sender")
    p.add_argument("--count", action="store_true",
                   help="count Python bytecodes and calls per packet (deterministic, about 20x slower)")


class _Blaster:
    """Sends ``n`` frames cycling over ``frames`` (sprayed entropies), nothing else: no
    protocol, so only the fabric's cost is measured."""

    def __init__(self, frames, n):
        self.frames, self.n = frames, n

    def next_packet(self, now):
        if self.n <= 0:
            return None
        self.n -= 1
        return self.frames[self.n % len(self.frames)]

    def next_wakeup(self, now):
        return None

    def receive(self, frame, now):
        pass

    def poll_cq(self, max_entries=None):
        return []


class BytecodeCounter:
    """Counts the Python bytecodes (``ops``) and calls (``calls``) run inside :meth:`run`
    (``sys.settrace`` opcode events): work in a measure that does not depend on the machine or
    its load. :meth:`wrap` counts everything a simulator's ``run`` does."""

    def __init__(self):
        self.ops = self.calls = 0

    def run(self, fn, *a, **k):
        sys.settrace(self._call)
        try:
            return fn(*a, **k)
        finally:
            sys.settrace(None)

    def wrap(self, sim):
        run = sim.run
        sim.run = lambda *a, **k: self.run(run, *a, **k)
        return self

    def _call(self, frame, event, arg):
        self.calls += 1
        frame.f_trace_opcodes = True
        frame.f_trace_lines = False
        return self._local

    def _local(self, frame, event, arg):
        if event == "opcode":
            self.ops += 1
        return self._local


def one_run(job):
    from metaroce.models import codec, wire
    from metaroce.sim.harness import Flow, run_writes
    from metaroce.sim.topology import Fabric

    n = job["hosts"]
    fab = Fabric(n, leaves=2, spines=4, rate_bps=400e9, rtt=10e-6)
    counter = BytecodeCounter().wrap(fab.sim) if job.get("count") else None
    if job["mode"] == "fabric":
        for i in range(0, n - 1, 2):
            frames = []
            for k in range(64):
                f = codec.make(wire.Op.MR_WRITE, bytes(4096), mrdh=codec.MRDH(), reth=codec.RETH())
                f.ip = codec.IP(src=fab.hosts[i].addr, dst=fab.hosts[i + 1].addr)
                f.udp = codec.UDP(sport=wire.ENTROPY_BASE + k)
                frames.append(f)
            fab.hosts[i].ep = _Blaster(frames, job["packets"])
            fab.hosts[i + 1].ep = _Blaster([], 0)
            fab.hosts[i].kick()
        t0 = time.perf_counter()
        c0 = time.process_time()
        fab.sim.run()
        wall = time.perf_counter() - t0
        cpu = time.process_time() - c0
        packets = sum(h.tx for h in fab.hosts)
        events = fab.sim.events
    else:
        flows = [Flow(i, i + 1, job["packets"] * 4096, paths=8) for i in range(0, n - 1, 2)]
        res = run_writes(fab, flows, job["mode"], cfg=endpoint_cfg(job["mode"], 400e9, 10e-6), until=1.0)
        wall, packets, events, cpu = res.wall, res.packets, res.events, res.cpu
    hops = sum(ln.frames for ln in fab.links.values()) / max(packets, 1)
    row = {"mode": job["mode"], "packets": packets, "events": events, "wall_s": round(wall, 3),
           "pkts_per_s": round(packets / wall), "events_per_s": round(events / wall),
           "cpu_s": round(cpu, 3), "pkts_per_cpu_s": round(packets / cpu) if cpu > 0 else 0,
           "hops_per_packet": hops, "drops": fab.switch_drops()}
    if counter is not None:
        # every packet of the run, the closing sim.run of run_writes included
        total = sum(h.tx for h in fab.hosts)
        row["bytecodes_per_packet"] = round(counter.ops / total)
        row["calls_per_packet"] = round(counter.calls / total, 2)
    return row


def run(args, ui):
    from metaroce.cli import CliError
    if args.hosts < 2 or args.packets < 1:
        raise CliError("--hosts must be >= 2 and --packets >= 1")
    jobs = [{"mode": m, "hosts": args.hosts, "packets": args.packets, "count": args.count}
            for m in ("fabric", "metaroce", "rocev2")]
    rows = ui.map(one_run, jobs, label="simspeed runs")
    return {"rows": rows, "title": f"bench simspeed: {args.hosts // 2} senders x {args.packets} packets, "
                                   "one leaf-spine plane (2 x 4), 400 Gb/s"}
