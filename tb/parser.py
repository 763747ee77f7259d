"""cocotb testbench of the RX parser (hdl/parser.py) against its cycle model
(models/parser.py), under Verilator, with the generic lockstep harness (tb/lockstep.py).

Every cycle: cocotbext-axi drives ``s_axis`` (random idle cycles in the ``idle`` shape),
``m_payload`` and ``m_bypass`` are drained by sinks with random backpressure and
``m_meta__ready`` is randomised (``bp`` shape), ``reg_addr`` walks the counters at random; the model steps with the sampled inputs and every output is compared
(MR-HW-001..060).  At the end of a run, beyond cycle equality, each frame's outcome is
checked against the codec (:func:`metaroce.models.codec.decode`, the one decoder) and,
for scapy-built frames, against scapy's own field values: the meta record's fields, the
payload bytes, the bypass bytes, the drop reason, and the counters read through
``reg_addr``/``reg_data``.

cocotb tests here:

``parser_lockstep`` (parametrised: ``shape`` = idle / bp (backpressure) / both; select one
    with ``COCOTB_TEST_FILTER=parser_lockstep/shape=both``)
    the case list of :mod:`metaroce.tb.parser_cases` (``PARSER_RANDOM`` random and
    ``PARSER_MUTATED`` mutated frames, seed ``PARSER_SEED``, random payloads up to
    ``PARSER_MAX_PAYLOAD`` bytes), then :func:`check_batch` and :func:`check_counters`.
``parser_line_rate``
    back-to-back valid frames, no backpressure: one beat accepted per cycle.
``parser_replay`` (only with ``METAROCE_REPLAY_PCAP``)
    the frames of a pcap; results to ``METAROCE_REPLAY_OUT`` (JSON) for ``metaroce replay``.
``parser_bench`` (only with ``METAROCE_BENCH_OUT``)
    beats per cycle, latency and simulation speed per packet size (``metaroce bench parser``).
"""
from __future__ import annotations

import ipaddress
import json
import os
import random
import time

import cocotb
from cocotb.triggers import RisingEdge

from metaroce.models import codec, wire
from metaroce.models.wire import Reason

from . import parser_cases as pc
from .lockstep import Lockstep, model_port_lists
from .streams import ReadyRandomiser, axis_sink, axis_source

# Traffic shapes: random idle cycles on the input, random backpressure ("bp") on the outputs.
SHAPES = {"none": (0.0, 0.0), "idle": (0.3, 0.0), "bp": (0.0, 0.5), "both": (0.25, 0.4)}
N_COUNTERS = 9  # one per Reason code (MR-HW-060)
EXT_NAMES = ("reth", "aeth", "imm", "atomicack", "mrdh", "mrsh", "mrah", "mrnh")


def _model(width):
    from metaroce.models.parser import ParserModel
    return ParserModel(width)


class RegPoller:
    """Drives ``reg_addr`` with a random counter index every cycle (exercising the read
    path in lockstep); :meth:`read_all` then reads every counter."""

    def __init__(self, dut, rng):
        self.dut = dut
        self.rng = rng
        dut.reg_addr.value = 0
        self._task = cocotb.start_soon(self._run())

    async def _run(self):
        edge = RisingEdge(self.dut.clk)
        while True:
            await edge
            self.dut.reg_addr.value = self.rng.randrange(16)

    async def read_all(self, h: Lockstep) -> list[int]:
        self._task.cancel()
        out = []
        for i in range(N_COUNTERS):
            await RisingEdge(self.dut.clk)
            self.dut.reg_addr.value = i
            await h.cycles(2)           # reg_data follows reg_addr one cycle later
            out.append(int(self.dut.reg_data.value))
        return out


class Run:
    """Lockstep runs of the parser over batches of frames (one set of drivers, one reset).

    ``await run.start()``, then ``batch = await run.send(cases)`` as often as needed (each
    batch waits until every frame came out), then ``await run.finish()`` (reads the
    counters, stops comparing).
    """

    def __init__(self, dut, *, idle=0.0, backpressure=0.0, seed=1, stop_on_mismatch=True,
                 poll_regs=True):
        self.dut = dut
        self.width = len(dut.s_axis__tdata)
        self.rng = random.Random(seed)
        self.model = _model(self.width)
        self.max_frame = getattr(self.model, "max_frame", 9216)
        ins, outs = model_port_lists(self.model)
        self.accept_log: list[tuple[int, int]] = []   # (cycle, tlast) of accepted input beats
        self.meta_new_cycles: list[int] = []          # cycles where a new meta record shows
        self._prev_meta_held = 0
        self.h = Lockstep(dut, self.model, ins, outs, transfers=["m_meta"],
                          stop_on_mismatch=stop_on_mismatch, on_cycle=self._on_cycle)
        self.src = axis_source(dut, "s_axis", dut.clk, dut.rst, pause=idle, rng=self.rng)
        self.pay = axis_sink(dut, "m_payload", dut.clk, dut.rst, pause=backpressure, rng=self.rng)
        self.byp = axis_sink(dut, "m_bypass", dut.clk, dut.rst, pause=backpressure, rng=self.rng)
        self.meta_ready = ReadyRandomiser(dut.m_meta__ready, dut.clk, pause=backpressure, rng=self.rng)
        self.regs = RegPoller(dut, self.rng) if poll_regs else None
        if not poll_regs:
            dut.reg_addr.value = 0
        self.counters: list[int] | None = None
        self.sim_cycles = 0
        self.wall = 0.0
        self.pay_expected = 0   # accepted frames with a payload, from the meta records

    def _on_cycle(self, cycle, ins, outs):
        if ins["s_axis__tvalid"] and outs["s_axis__tready"]:
            self.accept_log.append((cycle, ins["s_axis__tlast"]))
        mv = outs["m_meta__valid"]
        if mv and ins["m_meta__ready"]:
            m = self.model.meta_to_dict(outs["m_meta__data"])
            self.pay_expected += int(not m["drop"] and bool(m["payload_len"]))
        if mv and not self._prev_meta_held:
            self.meta_new_cycles.append(cycle)
        # a record still held next cycle is the same record; after a transfer it is new
        self._prev_meta_held = mv and not ins["m_meta__ready"]

    async def start(self):
        await self.h.start()
        return self

    async def send(self, cases: list[pc.Case]) -> "Batch":
        from cocotbext.axi import AxiStreamFrame
        h = self.h
        b = Batch(self, cases)
        t0 = time.perf_counter()
        c0 = h.cycle
        meta0 = len(h.transfers["m_meta"])
        pe0 = self.pay_expected
        n_frames = len(cases)
        nb = self.width // 8
        beats = sum(-(-len(c.data) // nb) for c in cases)
        for case in cases:
            n = len(case.data)
            await self.src.send(AxiStreamFrame(case.data, tuser=[0] * (n - 1) + [int(case.mac_error)]))
        # generous for the slowest traffic shape, yet a hang fails in bounded time (MR-HW-053)
        limit = 40 * beats + 100 * n_frames + 2000
        await h.wait_until(lambda: len(h.transfers["m_meta"]) - meta0 + self.byp.count() >= n_frames
                           and self.src.idle(), timeout_cycles=limit,
                           what=f"{n_frames} frames through the parser")
        # every accepted frame with a payload has its payload frame out
        await h.wait_until(lambda: self.pay.count() >= self.pay_expected - pe0, limit,
                           "payload frames out")
        await h.cycles(4)
        b.wall = time.perf_counter() - t0
        b.sim_cycles = h.cycle - c0
        self.wall += b.wall
        self.sim_cycles += b.sim_cycles
        b.collect()
        return b

    async def finish(self):
        if self.regs is not None:
            self.counters = await self.regs.read_all(self.h)
        await self.h.cycles(2)
        self.h.stop()
        return self


class Batch:
    """What one :meth:`Run.send` produced: per-frame outcomes, accepted beats, meta cycles."""

    def __init__(self, run: Run, cases):
        self.run = run
        self.cases = cases
        self.acc0 = len(run.accept_log)
        self.meta0 = len(run.h.transfers["m_meta"])
        self.mnew0 = len(run.meta_new_cycles)
        self.wall = 0.0
        self.sim_cycles = 0

    def collect(self):
        run = self.run
        self.accept_log = run.accept_log[self.acc0:]
        self.meta_new_cycles = run.meta_new_cycles[self.mnew0:]
        self.metas = [run.model.meta_to_dict(d["data"]) for _, d in run.h.transfers["m_meta"][self.meta0:]]
        self.byps = []
        while not run.byp.empty():
            self.byps.append(bytes(run.byp.recv_nowait().tdata))
        self.pays = []
        while not run.pay.empty():
            self.pays.append(bytes(run.pay.recv_nowait().tdata))
        self.outcomes, self.extra = self._match()

    def _match(self):
        return match_outputs(self.cases, self.metas, self.byps, self.pays, self.run.max_frame)

    def span(self):
        """Cycles from the first to the last accepted input beat (inclusive)."""
        acc = self.accept_log
        return (acc[-1][0] - acc[0][0] + 1) if acc else 0

    def latencies(self):
        """Cycles from each frame's last accepted beat to its meta record (non-bypass
        frames, in order)."""
        lasts = [c for c, last in self.accept_log if last]
        lasts = [c for c, case in zip(lasts, self.cases)
                 if expected_reason(case, self.run.max_frame) != Reason.NOT_ROCE]
        return [mv - lc for lc, mv in zip(lasts, self.meta_new_cycles)]


def match_outputs(cases, metas, byps, pays, max_frame=9216):
    """Pair the parser's outputs with the input frames, in order.

    Per case: ``(verdict, reason, meta dict or None, payload bytes or None, bypass bytes or
    None)``, verdict one of accepted / dropped / bypassed / missing; then the numbers of
    unmatched (meta, bypass, payload) outputs.  Bypassed frames are expected where the codec
    says ``not_roce``; every other frame must have a meta record, and accepted frames with
    a payload one payload frame.
    """
    out = []
    mi = bi = pi = 0
    for case in cases:
        exp = expected_reason(case, max_frame)
        if exp == Reason.NOT_ROCE and bi < len(byps):
            out.append(("bypassed", Reason.NOT_ROCE, None, None, byps[bi]))
            bi += 1
            continue
        if mi >= len(metas):
            out.append(("missing", None, None, None, None))
            continue
        meta = metas[mi]
        mi += 1
        reason = reason_of(meta["reason"])
        payload = None
        if not meta["drop"] and meta["payload_len"]:
            payload = pays[pi] if pi < len(pays) else None
            pi += 1
        out.append(("dropped" if meta["drop"] else "accepted", reason, meta, payload, None))
    return out, (len(metas) - mi, len(byps) - bi, len(pays) - pi)


def reason_of(value) -> Reason:
    """A Reason from the meta record's reason (``meta_to_dict`` gives the label)."""
    if isinstance(value, str):
        return Reason[value.upper()]
    return Reason(value)


expected_reason = pc.expected_reason


def _mac_int(s):
    return int(s.replace(":", ""), 16)


def _ip_int(s):
    return int(ipaddress.ip_address(s))


def expected_meta(f: codec.Frame, data: bytes) -> dict:
    """The meta record fields an accepted frame must carry, from the codec's Frame."""
    v6 = f.ip.version == 6
    vlan = f.eth.vlan is not None
    l4 = 14 + (4 if vlan else 0) + (40 if v6 else 20)
    hlen = wire.ext_len(f.bth.opcode)
    exp = {
        "drop": 0, "ipv6": int(v6), "vlan_present": int(vlan),
        "frame_len": len(data),
        "payload_offset": l4 + 8 + 12 + hlen,
        "payload_len": len(f.payload),
        "eth": {"dst": _mac_int(f.eth.dst), "src": _mac_int(f.eth.src),
                "pcp": f.eth.pcp if vlan else 0, "dei": f.eth.dei if vlan else 0,
                "vlan": f.eth.vlan if vlan else 0},
        "ip": {"dscp": f.ip.dscp, "ecn": f.ip.ecn, "ttl": f.ip.ttl,
               "ident": 0 if v6 else f.ip.ident, "flow_label": f.ip.flow_label if v6 else 0,
               "src": _ip_int(f.ip.src), "dst": _ip_int(f.ip.dst)},
        "udp": {"sport": f.udp.sport},
        "bth": {k: int(v) for k, v in vars(f.bth).items()},
    }
    for name in ("reth", "aeth", "atomicack", "mrdh", "mrsh", "mrah", "mrnh"):
        h = getattr(f, name)
        if h is not None:
            exp[name] = dict(vars(h))
    if f.imm is not None:
        exp["imm"] = f.imm
    return exp


def _diff(exp, got, path=""):
    """Differences between an expected (sub)dict and the record (keys of ``exp`` only)."""
    out = []
    if isinstance(exp, dict):
        if not isinstance(got, dict):
            return [f"{path}: expected {exp}, got {got!r}"]
        for k, v in exp.items():
            if k not in got:
                out.append(f"{path}.{k}: missing in the record")
            else:
                out += _diff(v, got[k], f"{path}.{k}" if path else k)
    elif int(exp) != int(got):
        out.append(f"{path}: expected {exp:#x}, got {int(got):#x}")
    return out


def oracle_meta(oracle: dict) -> dict:
    """The meta fields scapy's packet says (for scapy-built frames)."""
    exp = {
        "eth": {"dst": _mac_int(oracle["eth"]["dst"]), "src": _mac_int(oracle["eth"]["src"]),
                "vlan": oracle["eth"]["vlan"] or 0},
        "ipv6": int(oracle["ip"]["version"] == 6),
        "ip": {"src": _ip_int(oracle["ip"]["src"]), "dst": _ip_int(oracle["ip"]["dst"]),
               "dscp": oracle["ip"]["dscp"], "ecn": oracle["ip"]["ecn"]},
        "udp": {"sport": oracle["udp"]["sport"]},
        "bth": dict(oracle["bth"]),
        "payload_len": len(oracle["payload"]),
    }
    for name in ("reth", "aeth", "mrdh", "mrsh", "mrah", "mrnh"):
        if name in oracle:
            exp[name] = dict(oracle[name])
    if "imm" in oracle:
        exp["imm"] = oracle["imm"]
    return exp


def check_batch(b: Batch) -> tuple[list[str], list[int]]:
    """Every frame's fate and fields against the codec / scapy.  Returns the problems
    (empty when all is right) and the expected per-reason tally of the batch."""
    problems = []
    tally = [0] * N_COUNTERS
    for case, (verdict, reason, meta, payload, byp) in zip(b.cases, b.outcomes):
        exp = expected_reason(case, b.run.max_frame)
        tally[int(exp)] += 1
        where = f"{case.name} ({len(case.data)} bytes)"
        if verdict == "missing":
            problems.append(f"{where}: no meta record and no bypass frame")
            continue
        if exp == Reason.NOT_ROCE:
            if verdict != "bypassed":
                problems.append(f"{where}: expected bypass, got {verdict} {reason.label}")
            elif byp != case.data:
                problems.append(f"{where}: bypass bytes differ from the input frame")
            continue
        if reason != exp:
            problems.append(f"{where}: expected {exp.label}, got {verdict} {reason.label}")
            continue
        if exp != Reason.NONE:
            if not meta["drop"]:
                problems.append(f"{where}: reason {reason.label} without the drop flag")
            continue
        f = codec.decode(case.data)
        problems += [f"{where}: codec: {d}" for d in _diff(expected_meta(f, case.data), meta)]
        present = {h for h in EXT_NAMES if h in meta}
        want = {h for h in wire.HEADERS[f.bth.opcode] if h != "cnp"}
        if present != want:
            problems.append(f"{where}: headers present {sorted(present)}, expected {sorted(want)}")
        if case.oracle is not None:
            problems += [f"{where}: scapy: {d}" for d in _diff(oracle_meta(case.oracle), meta)]
            if payload is not None and payload != case.oracle["payload"]:
                problems.append(f"{where}: scapy: payload bytes differ")
        if f.payload and payload != f.payload:
            problems.append(f"{where}: payload bytes differ "
                            f"({0 if payload is None else len(payload)} vs {len(f.payload)})")
    if any(b.extra):
        problems.append(f"unexpected extra outputs: {b.extra[0]} meta, {b.extra[1]} bypass, "
                        f"{b.extra[2]} payload frames")
    return problems, tally


def check_counters(run: Run, tally: list[int]) -> list[str]:
    """The counters read through reg_addr/reg_data against the expected tally."""
    if run.counters is None or run.counters == tally:
        return []
    names = [Reason(i).label for i in range(N_COUNTERS)]
    return ["counters " + ", ".join(f"{n}={g} (expected {e})"
                                    for n, g, e in zip(names, run.counters, tally) if g != e)]


def _cases_from_env():
    seed = int(os.environ.get("PARSER_SEED", "1"))
    return pc.all_cases(int(os.environ.get("PARSER_RANDOM", "200")),
                        int(os.environ.get("PARSER_MUTATED", "200")), seed=seed,
                        max_payload=int(os.environ.get("PARSER_MAX_PAYLOAD", "300")))


def _seed():
    return int(os.environ.get("COCOTB_RANDOM_SEED", os.environ.get("PARSER_SEED", "1")))


# ---------------------------------------------------------------------------------------
# cocotb tests

@cocotb.parametrize(shape=["idle", "bp", "both"])
@cocotb.test(skip=bool(os.environ.get("METAROCE_REPLAY_PCAP") or os.environ.get("METAROCE_BENCH_OUT")))
async def parser_lockstep(dut, shape):
    """MR-HW-001..060: the case list (every opcode, every drop reason, bypass, scapy,
    random and mutated) through RTL and model in lockstep with zero mismatches; fields,
    payload, bypass bytes and counters right."""
    cases = _cases_from_env()
    idle, bp = SHAPES[shape]
    run = await Run(dut, idle=idle, backpressure=bp, seed=_seed()).start()
    b = await run.send(cases)
    await run.finish()
    problems, tally = check_batch(b)
    problems += check_counters(run, tally)
    dut._log.info("%s: %d frames, %d cycles, %.0f cycles/s", shape, len(cases), run.sim_cycles,
                  run.sim_cycles / max(run.wall, 1e-9))
    assert run.h.mismatches == 0
    assert not problems, f"{len(problems)} problem(s):\n" + "\n".join(problems[:30])


def line_rate_frame(size: int) -> bytes:
    """A frame of exactly ``size`` bytes for the line-rate runs (MR-HW-052: 60 bytes to
    ``max_frame``).  From 62 bytes (the smallest RoCE frame, an IPv4 RC ACK) a valid RoCE
    frame, Ethernet padding (ignored after the IP packet) making up the 1-3 bytes the pad
    rule cannot; 60 and 61 bytes can only be non-RoCE frames, which go to the bypass."""
    if size < 60:
        raise ValueError("the smallest Ethernet frame (without FCS) is 60 bytes")
    if size < 62:
        return bytes.fromhex("020000000002020000000001") + b"\x08\x06" + bytes(size - 14)
    n = size - 58 - 16 - 16          # MR_WRITE: MRDH + RETH
    if size < 66:
        f = pc.frame(wire.Op.RC_ACK)
    elif n < 0:
        f = pc.frame(wire.Op.RC_SEND_ONLY, bytes((size - 58) & ~3))
    else:
        f = pc.frame(wire.Op.MR_WRITE, bytes((i * 13) & 0xFF for i in range(n & ~3)))
    data = codec.encode(f)
    return data + bytes(size - len(data))


async def line_rate_rows(dut, sizes, frames_per_size, *, check=True, stop_on_mismatch=True):
    """One row per size: back-to-back valid frames of that size, no backpressure."""
    run = await Run(dut, seed=1, poll_regs=False, stop_on_mismatch=stop_on_mismatch).start()
    rows = []
    for size in sizes:
        mm0 = run.h.mismatch_cycles
        n = frames_per_size(size)
        cases = [pc.Case(f"rate-{size}-{i}", line_rate_frame(size)) for i in range(n)]
        b = await run.send(cases)
        lat = b.latencies()
        span = b.span()
        rows.append({"packet_bytes": size, "frames": n, "beats": len(b.accept_log), "cycles": span,
                     "beats_per_cycle": len(b.accept_log) / span if span else 0.0,
                     "latency_cycles": max(lat) if lat else None,
                     "latency_min_cycles": min(lat) if lat else None,
                     "first_beat_to_meta_cycles": (b.meta_new_cycles[0] - b.accept_log[0][0])
                     if b.meta_new_cycles else None,
                     "sim_cycles": b.sim_cycles, "wall_s": b.wall,
                     "sim_cycles_per_s": b.sim_cycles / max(b.wall, 1e-9),
                     "mismatches": run.h.mismatch_cycles - mm0,
                     "problems": check_batch(b)[0] if check else []})
        await run.h.cycles(8)       # a gap between sizes
    await run.finish()
    return rows


@cocotb.test(skip=bool(os.environ.get("METAROCE_REPLAY_PCAP") or os.environ.get("METAROCE_BENCH_OUT")))
async def parser_line_rate(dut):
    """MR-HW-052 line rate: without backpressure, back-to-back frames are accepted at one
    beat per cycle, for every frame length mod the beat width (from 60 bytes), 1500 and
    9000 bytes; MR-HW-050: the meta record follows the last beat after a fixed latency."""
    nb = len(dut.s_axis__tdata) // 8
    step = 1 if nb <= 16 else 3
    sizes = sorted(set(range(60, 62 + nb + 2, step)) | {61, 62 + nb - 1, 62 + nb, 1500, 9000})
    rows = await line_rate_rows(dut, sizes, lambda s: 4 if s < 2000 else 2)
    bad = [(r["packet_bytes"], round(r["beats_per_cycle"], 4)) for r in rows if r["beats_per_cycle"] != 1.0]
    problems = [p for r in rows for p in r["problems"]]
    assert all(r["mismatches"] == 0 for r in rows)
    assert not problems, problems[:10]
    assert not bad, f"beats per cycle below 1.0 at sizes {bad}"
    # MR-HW-050: a fixed pipeline, so the same last-beat-to-meta latency for every frame
    lat = {r["packet_bytes"]: (r["latency_min_cycles"], r["latency_cycles"]) for r in rows
           if r["latency_cycles"] is not None}
    assert len({v for pair in lat.values() for v in pair}) == 1, lat
    assert next(iter(lat.values()))[0] == 10, lat     # MR-HW-050: meta 10 cycles after the last beat
    dut._log.info("last beat -> meta latency: %d cycles", next(iter(lat.values()))[0])


@cocotb.test(skip=not os.environ.get("METAROCE_BENCH_OUT"))
async def parser_bench(dut):
    """``metaroce bench parser``: rows per packet size into METAROCE_BENCH_OUT (JSON)."""
    sizes = [int(x) for x in os.environ["METAROCE_BENCH_SIZES"].split(",")]
    min_bytes = int(os.environ.get("METAROCE_BENCH_BYTES", "40000"))
    rows = await line_rate_rows(dut, sizes, lambda s: max(4, -(-min_bytes // s)),
                                stop_on_mismatch=False)
    for r in rows:
        r["problems"] = r["problems"][:5]
    with open(os.environ["METAROCE_BENCH_OUT"], "w") as fh:
        json.dump({"width": len(dut.s_axis__tdata), "rows": rows}, fh)


@cocotb.test(skip=not os.environ.get("METAROCE_REPLAY_PCAP"))
async def parser_replay(dut):
    """``metaroce replay parser FILE.pcap``: the capture in lockstep, counting (not raising
    on) mismatches; per-frame outcomes into METAROCE_REPLAY_OUT (JSON)."""
    from metaroce.models import pcap
    records = pcap.read(os.environ["METAROCE_REPLAY_PCAP"])
    cases = [pc.Case(f"frame-{i}", rec.data) for i, rec in enumerate(records, 1)]
    idle = float(os.environ.get("METAROCE_REPLAY_IDLE", "0"))
    bp = float(os.environ.get("METAROCE_REPLAY_BACKPRESSURE", "0"))
    run = await Run(dut, idle=idle, backpressure=bp, seed=_seed(), stop_on_mismatch=False).start()
    sendable = [c for c in cases if c.data]      # an empty record is no AXI-Stream frame
    b = await run.send(sendable)
    await run.finish()
    problems, tally = check_batch(b)
    problems += check_counters(run, tally)
    by_case = {id(c): o for c, o in zip(sendable, b.outcomes)}
    frames = []
    for case in cases:
        verdict, reason, meta, payload, byp = by_case.get(id(case), ("empty", None, None, None, None))
        frames.append({"verdict": verdict, "reason": None if reason is None else reason.label,
                       "expected": expected_reason(case, run.max_frame).label if case.data else None,
                       "payload_ok": None if payload is None else _payload_ok(case, payload),
                       "bypass_ok": None if byp is None else byp == case.data})
    span = b.span()
    result = {"frames": frames, "mismatches": run.h.mismatch_cycles,
              "mismatch_signals": run.h.mismatches, "mismatch_reports": run.h.reports,
              "cycles": run.sim_cycles, "beats": len(b.accept_log), "beat_span": span,
              "beats_per_cycle": (len(b.accept_log) / span) if span else None,
              "counters": run.counters, "problems": problems, "extra_outputs": list(b.extra),
              "wall_s": run.wall}
    with open(os.environ["METAROCE_REPLAY_OUT"], "w") as fh:
        json.dump(result, fh)


def _payload_ok(case, payload):
    try:
        return codec.decode(case.data).payload == payload
    except codec.DecodeError:
        return False
