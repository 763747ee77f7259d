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

With ``--where`` (implies ``--count``) the rows say where the work goes instead: per mode and
part, ``bytecodes_per_packet``, ``calls_per_packet`` and ``share`` of the run's bytecodes. Parts:
``event loop`` (``Sim``), ``links and switches`` (``Link``, ``OutPort``, ``Switch``), ``hosts
and NICs`` (``Host``, ``NicPort``), and the endpoint's entry points with everything they call
(timers that fall due included): ``endpoint: data received`` and ``endpoint: ACK received``
(``receive`` of a data frame or of an ACK/NAK), ``endpoint: data sent`` and ``endpoint: ACK
sent`` (``next_packet`` returning a data frame or an ACK/NAK), ``endpoint: idle polls``
(``next_packet`` returning nothing, ``next_wakeup``, ``poll_cq``); ``other`` is the rest (the
workload's callbacks). The summary's ``top_functions`` lists, per mode, the functions with the
most bytecodes of their own.
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
    p.add_argument("--where", action="store_true",
                   help="rows per part of the simulator: where the bytecodes go (implies --count)")


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


_ENTRY = {"receive", "next_packet", "next_wakeup", "poll_cq"}
_FABRIC_PART = {"Sim": "event loop", "Link": "links and switches", "OutPort": "links and switches",
                "Switch": "links and switches", "Host": "hosts and NICs", "NicPort": "hosts and NICs"}


def _is_data(frame):
    """A data frame (payload or MetaRoCE data header), not an ACK, NAK or other control frame."""
    return bool(getattr(frame, "payload", None)) or getattr(frame, "mrdh", None) is not None


class CostSplit(BytecodeCounter):
    """:class:`BytecodeCounter` that also books every bytecode and call to a part of the
    simulator (``--where``) and to the function that ran it."""

    def __init__(self):
        super().__init__()
        self.parts = {}         # part -> [bytecodes, calls]
        self.funcs = {}         # (file, function) -> own bytecodes
        self._stack = []        # per active frame: (account, endpoint entry frame or None, code)

    def _call(self, frame, event, arg):
        code = frame.f_code
        top = self._stack[-1] if self._stack else None
        if top is not None and top[1] is not None:
            acct, entry = top[0], top[1]        # inside an endpoint entry point: its account
        elif (code.co_name in _ENTRY and not code.co_filename.endswith("fabric.py")
              and top is not None and top[2].co_filename.endswith("fabric.py")):
            acct, entry = [0, 0], frame         # the host calls its endpoint
        else:
            slf = frame.f_locals.get("self")
            part = _FABRIC_PART.get(type(slf).__name__, "other") if (
                code.co_filename.endswith("fabric.py")) else "other"
            acct, entry = self.parts.setdefault(part, [0, 0]), None
        acct[1] += 1
        self._stack.append((acct, entry, code))
        return super()._call(frame, event, arg)

    def _local(self, frame, event, arg):
        if event == "opcode":
            self.ops += 1
            acct, _, code = self._stack[-1]
            acct[0] += 1
            key = (code.co_filename.rsplit("/", 1)[-1], code.co_name)
            self.funcs[key] = self.funcs.get(key, 0) + 1
        elif event == "return":
            acct, entry, code = self._stack.pop()
            if entry is frame:          # an endpoint entry point returns: booked by its result
                if code.co_name == "receive":
                    part = "data received" if _is_data(frame.f_locals.get("frame")) else "ACK received"
                elif code.co_name == "next_packet":
                    part = "idle polls" if arg is None else "data sent" if _is_data(arg) else "ACK sent"
                else:
                    part = "idle polls"
                booked = self.parts.setdefault("endpoint: " + part, [0, 0])
                booked[0] += acct[0]
                booked[1] += acct[1]
        return self._local


def one_run(job):
    from metaroce.models import codec, wire
    from metaroce.sim.harness import Flow, run_writes
    from metaroce.sim.topology import Fabric

    n = job["hosts"]
    fab = Fabric(n, leaves=2, spines=4, rate_bps=400e9, rtt=10e-6)
    counter = None
    if job.get("count"):
        counter = (CostSplit() if job.get("where") else BytecodeCounter()).wrap(fab.sim)
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
    if job.get("where"):
        row["parts"] = {k: (v[0] / total, v[1] / total) for k, v in counter.parts.items()}
        top = sorted(counter.funcs.items(), key=lambda kv: -kv[1])[:15]
        row["top_functions"] = {f"{f}:{fn}": round(v / total) for (f, fn), v in top}
    return row


def _where_rows(rows):
    """``--where``: one row per mode and part, largest first."""
    out = []
    for r in rows:
        for part, (ops, calls) in sorted(r["parts"].items(), key=lambda kv: -kv[1][0]):
            out.append({"mode": r["mode"], "part": part, "bytecodes_per_packet": round(ops),
                        "calls_per_packet": round(calls, 2),
                        "share": round(ops / r["bytecodes_per_packet"], 3)})
    return out


def run(args, ui):
    from metaroce.cli import CliError
    if args.hosts < 2 or args.packets < 1:
        raise CliError("--hosts must be >= 2 and --packets >= 1")
    where = getattr(args, "where", False)
    jobs = [{"mode": m, "hosts": args.hosts, "packets": args.packets, "count": args.count or where,
             "where": where} for m in ("fabric", "metaroce", "rocev2")]
    rows = ui.map(one_run, jobs, label="simspeed runs")
    if where:
        return {"rows": _where_rows(rows),
                "summary": {"bytecodes_per_packet": {r["mode"]: r["bytecodes_per_packet"] for r in rows},
                            "top_functions": {r["mode"]: r["top_functions"] for r in rows}},
                "title": f"bench simspeed --where: {args.hosts // 2} senders x {args.packets} packets, "
                         "Python bytecodes per simulated packet by part of the simulator"}
    return {"rows": rows, "title": f"bench simspeed: {args.hosts // 2} senders x {args.packets} packets, "
                                   "one leaf-spine plane (2 x 4), 400 Gb/s"}
