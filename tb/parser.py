"""cocotb testbench of the RX parser (hdl/parser.py) against its cycle model
(models/parser.py), under Verilator.

The parser's one verification stack: the cases, the traffic driver and the checker are
:mod:`metaroce.models.parser_cases` (shared with the model-only and Amaranth-simulator
tests), the comparison is the lockstep core of :mod:`metaroce.tb.lockstep`.  Every cycle
the driver sets the inputs (source beats with idle cycles, random ready patterns on
``m_meta``, ``m_payload``, ``m_bypass``, random ``reg_addr``), the model steps with them and
every output is compared (MR-HW-001..060, MR-HW-070); at the end each frame's outcome is
checked against the codec and scapy, and the counters read through ``reg_addr``/``reg_data``
(:func:`~metaroce.models.parser_cases.check`).

cocotb tests here:

``parser_lockstep`` (parametrised: ``shape`` = idle / bp (backpressure) / both; select one
    with ``COCOTB_TEST_FILTER=parser_lockstep/shape=both``)
    :func:`~metaroce.models.parser_cases.suite` (``PARSER_RANDOM`` random and
    ``PARSER_MUTATED`` mutated frames, seed ``PARSER_SEED``, random payloads up to
    ``PARSER_MAX_PAYLOAD`` bytes) with tkeep edge cases, through the fast driven loop.
``parser_axis_boundary``
    the basic case list through cocotbext-axi's AXI4-Stream source and sinks (a third-party
    bus model at the MAC/host boundary), compared every cycle by the lockstep monitor.
``parser_line_rate``
    back-to-back valid frames, no backpressure: one beat accepted per cycle.
``parser_replay`` (only with ``METAROCE_REPLAY_PCAP``)
    the frames of a pcap; results to ``METAROCE_REPLAY_OUT`` (JSON) for ``metaroce replay``.
``parser_bench`` (only with ``METAROCE_BENCH_OUT``)
    beats per cycle, latency and lockstep speed per packet size (``metaroce bench parser``).
``parser_coverage`` (only with ``METAROCE_COVERAGE_OUT``)
    the suite in every traffic shape; per-frame outcomes for functional coverage
    (``metaroce coverage parser``).
"""
from __future__ import annotations

import json
import os
import time

import cocotb

from metaroce.models import codec, wire
from metaroce.models import parser_cases as pc
from metaroce.models.wire import Reason

from .lockstep import Lockstep, Mismatch, drive, model_port_lists
from .streams import ReadyRandomiser, axis_sink, axis_source

SHAPES = pc.SHAPES
#: Outputs read only after a change of value (see lockstep.drive; each is still compared
#: every cycle with its exact value): the meta record (one per frame) always.
WATCH = ("m_meta__payload",)
#: With idle cycles or backpressure, also the output beats' wide data and keep: they hold
#: their value in most cycles (the suite in shape ``both`` at 512 bits: ``m_payload__tdata``
#: changes in 30% of the cycles), and a read of 512 bits costs more than the change
#: notification.  At line rate they change every cycle and are read every cycle.
WATCH_STALLED = WATCH + ("m_payload__tdata", "m_bypass__tdata", "m_payload__tkeep",
                         "m_bypass__tkeep")
_SPECIAL = ("METAROCE_REPLAY_PCAP", "METAROCE_BENCH_OUT", "METAROCE_COVERAGE_OUT")


def _special_run() -> bool:
    return any(os.environ.get(k) for k in _SPECIAL)


def _model(width):
    from metaroce.models.parser import ParserModel, compile_verdicts
    compile_verdicts()          # once per process, before any timed loop
    return ParserModel(width)


class Run:
    """One simulation of the parser in lockstep with its model (one reset): ``await
    run.start()``, then ``res = await run.send(cases, **driver_options)`` as often as needed
    (each batch drives until every frame came out and, with ``read_counters``, the counters
    were read)."""

    def __init__(self, dut, *, seed=1, stop_on_mismatch=True):
        self.dut = dut
        self.width = len(dut.s_axis__tdata)
        self.seed = seed
        self.model = _model(self.width)
        self.max_frame = getattr(self.model, "max_frame", 9216)
        ins, outs = model_port_lists(self.model)
        self.h = Lockstep(dut, self.model, ins, outs, stop_on_mismatch=stop_on_mismatch)
        self.sim_cycles = 0
        self.wall = 0.0
        self._batches = 0
        self._counts = [0] * pc.N_COUNTERS

    async def start(self):
        for name in self.h.inputs:
            if name != "rst":
                getattr(self.dut, name).value = 0
        await self.h.start(monitor=False)
        return self

    async def send(self, cases, *, p_idle=0.0, p_bp=0.0, **kw) -> dict:
        """Drive ``cases``; the result's ``counters`` are this batch's counts (read through
        the registers at its end, minus the counts before it)."""
        self._batches += 1
        drv = pc.Driver(self.width, cases, seed=self.seed * 1000 + self._batches, p_idle=p_idle,
                        p_bp=p_bp, read_counters=True, **kw)
        t0, p0 = time.perf_counter(), time.process_time()
        c0 = self.h.cycle
        # MR-HW-055: every output is a flip-flop, so one trigger per cycle (drive checks it)
        watch = WATCH_STALLED if (p_idle or p_bp) else WATCH
        await drive(self.h, drv, busy=self.model.busy, watch=watch, registered_outputs=True)
        res = drv.res
        res["wall_s"] = time.perf_counter() - t0
        # CPU seconds of the simulator process (Verilator and Python share it): the speed
        # on an unloaded machine, where wall time depends on what else runs
        res["cpu_s"] = time.process_time() - p0
        total = res["counters"]
        wrap = 1 << len(self.dut.reg_data)
        res["counters"] = [(c - b) % wrap for c, b in zip(total, self._counts)]
        self._counts = total
        res["sim_cycles"] = self.h.cycle - c0
        self.wall += res["wall_s"]
        self.sim_cycles += res["sim_cycles"]
        return res

    @property
    def mismatches(self):
        return self.h.mismatch_cycles


def _cases_from_env():
    return pc.suite(int(os.environ.get("PARSER_RANDOM", "200")),
                    int(os.environ.get("PARSER_MUTATED", "200")),
                    seed=int(os.environ.get("PARSER_SEED", "1")),
                    max_payload=int(os.environ.get("PARSER_MAX_PAYLOAD", "300")))


def _seed():
    return int(os.environ.get("COCOTB_RANDOM_SEED", os.environ.get("PARSER_SEED", "1")))


#: tkeep edge cases in the lockstep runs (MR-HW-003): noise where tkeep does not count, and
#: frames ending in a beat with tkeep = 0.
KEEP_EDGES = {"p_keep_noise": 0.1, "p_empty_last": 0.3}


# ---------------------------------------------------------------------------------------
# cocotb tests

@cocotb.parametrize(shape=["idle", "bp", "both"])
@cocotb.test(skip=_special_run())
async def parser_lockstep(dut, shape):
    """MR-HW-001..060, MR-HW-070: the suite (every opcode, every drop reason, bypass, scapy,
    random and mutated, MAC errors on any beat, tkeep edge cases) through RTL and model in
    lockstep with zero mismatches; fields, payload, bypass bytes and counters right."""
    cases = _cases_from_env()
    idle, bp = SHAPES[shape]
    run = await Run(dut, seed=_seed()).start()
    res = await run.send(cases, p_idle=idle, p_bp=bp, **KEEP_EDGES)
    problems, _ = pc.check(cases, res, max_frame=run.max_frame, width=run.width)
    dut._log.info("%s: %d frames, %d cycles, %.0f cycles/s (%.0f per CPU second)", shape,
                  len(cases), run.sim_cycles, run.sim_cycles / max(run.wall, 1e-9),
                  res["sim_cycles"] / max(res["cpu_s"], 1e-9))
    assert run.mismatches == 0
    assert not problems, f"{len(problems)} problem(s):\n" + "\n".join(problems[:30])


@cocotb.test(skip=_special_run())
async def parser_axis_boundary(dut):
    """MR-HW-002, MR-HW-070: at the AXI4-Stream boundary, cocotbext-axi's source and sinks
    (a bus model written apart from this project) with idle cycles and backpressure; the
    lockstep monitor compares every output every cycle; outcomes and counters checked."""
    from cocotbext.axi import AxiStreamFrame
    import random
    width = len(dut.s_axis__tdata)
    nb = width // 8
    rng = random.Random(_seed())
    model = _model(width)
    ins, outs = model_port_lists(model)
    h = Lockstep(dut, model, ins, outs, transfers=["m_meta"])
    src = axis_source(dut, "s_axis", dut.clk, dut.rst, pause=0.25, rng=rng)
    pay = axis_sink(dut, "m_payload", dut.clk, dut.rst, pause=0.4, rng=rng)
    byp = axis_sink(dut, "m_bypass", dut.clk, dut.rst, pause=0.4, rng=rng)
    ReadyRandomiser(dut.m_meta__ready, dut.clk, pause=0.4, rng=rng)
    dut.reg_addr.value = 0
    await h.start()
    cases = [c for c in pc.all_cases() + pc.scapy_cases() if c.data]
    for case in cases:
        n = len(case.data)
        user = [0] * n
        if case.mac_error:
            beat = min(case.mac_error_beat, (n - 1) // nb)
            user[beat * nb:(beat + 1) * nb] = [1] * len(user[beat * nb:(beat + 1) * nb])
        await src.send(AxiStreamFrame(case.data, tuser=user))
    n_frames = len(cases)
    limit = 40 * sum(-(-len(c.data) // nb) for c in cases) + 100 * n_frames + 2000
    await h.wait_until(lambda: len(h.transfers["m_meta"]) + byp.count() >= n_frames and src.idle(),
                       timeout_cycles=limit, what=f"{n_frames} frames through the parser")
    n_pay = sum(1 for _, d in h.transfers["m_meta"]
                if not model.meta_to_dict(d["payload"])["drop"] and model.meta_to_dict(d["payload"])["payload_len"])
    await h.wait_until(lambda: pay.count() >= n_pay, limit, "payload frames out")
    counters = []
    for i in range(pc.N_COUNTERS):          # reg_data follows reg_addr one cycle later
        dut.reg_addr.value = i
        await h.cycles(2)
        counters.append(int(dut.reg_data.value))
    h.stop()
    res = {"meta": [d["payload"] for _, d in h.transfers["m_meta"]],
           "bypass": [bytes(byp.recv_nowait().tdata) for _ in range(byp.count())],
           "payload": [bytes(pay.recv_nowait().tdata) for _ in range(pay.count())],
           "counters": counters}
    problems, _ = pc.check(cases, res, width=width)
    assert h.mismatches == 0
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


def _latencies(cases, res, max_frame):
    """Cycles from each non-bypass frame's last accepted beat to its meta record."""
    lasts = [c for c, last in res["accept_log"] if last]
    lasts = [c for c, case in zip(lasts, cases) if pc.expected_reason(case, max_frame) != Reason.NOT_ROCE]
    return [mv - lc for lc, mv in zip(lasts, res["meta_new_cycles"])]


async def line_rate_rows(dut, sizes, frames_per_size, *, check=True, stop_on_mismatch=True):
    """One row per size: back-to-back valid frames of that size, no backpressure."""
    run = await Run(dut, seed=1, stop_on_mismatch=stop_on_mismatch).start()
    rows = []
    for size in sizes:
        mm0 = run.mismatches
        n = frames_per_size(size)
        cases = [pc.Case(f"rate-{size}-{i}", line_rate_frame(size)) for i in range(n)]
        res = await run.send(cases, poll_regs=False)
        acc = res["accept_log"]
        span = (acc[-1][0] - acc[0][0] + 1) if acc else 0
        lat = _latencies(cases, res, run.max_frame)
        rows.append({"packet_bytes": size, "frames": n, "beats": len(acc), "cycles": span,
                     "beats_per_cycle": len(acc) / span if span else 0.0,
                     "latency_cycles": max(lat) if lat else None,
                     "latency_min_cycles": min(lat) if lat else None,
                     "first_beat_to_meta_cycles": (res["meta_new_cycles"][0] - acc[0][0])
                     if res["meta_new_cycles"] else None,
                     "sim_cycles": res["sim_cycles"], "wall_s": res["wall_s"],
                     "lockstep_cycles_per_s": res["sim_cycles"] / max(res["wall_s"], 1e-9),
                     "lockstep_cycles_per_cpu_s": res["sim_cycles"] / max(res["cpu_s"], 1e-9),
                     "mismatches": run.mismatches - mm0,
                     "problems": pc.check(cases, res, max_frame=run.max_frame, width=run.width)[0]
                     if check else []})
    return rows, run


@cocotb.test(skip=_special_run())
async def parser_line_rate(dut):
    """MR-HW-052 line rate: without backpressure, back-to-back frames are accepted at one
    beat per cycle, for every frame length mod the beat width (from 60 bytes), 1500 and
    9000 bytes; MR-HW-050: the meta record follows the last beat after a fixed latency."""
    nb = len(dut.s_axis__tdata) // 8
    step = 1 if nb <= 16 else 3
    sizes = sorted(set(range(60, 62 + nb + 2, step)) | {61, 62 + nb - 1, 62 + nb, 1500, 9000})
    rows, run = await line_rate_rows(dut, sizes, lambda s: 4 if s < 2000 else 2)
    bad = [(r["packet_bytes"], round(r["beats_per_cycle"], 4)) for r in rows if r["beats_per_cycle"] != 1.0]
    problems = [p for r in rows for p in r["problems"]]
    assert all(r["mismatches"] == 0 for r in rows)
    assert not problems, problems[:10]
    assert not bad, f"beats per cycle below 1.0 at sizes {bad}"
    # MR-HW-050: a fixed pipeline, so the same last-beat-to-meta latency for every frame
    lat = {r["packet_bytes"]: (r["latency_min_cycles"], r["latency_cycles"]) for r in rows
           if r["latency_cycles"] is not None}
    assert len({v for pair in lat.values() for v in pair}) == 1, lat
    # the model's latency (10 cycles, tests/test_parser_model.py), not a number of this bench
    assert next(iter(lat.values()))[0] == pc.meta_latency(run.width, run.max_frame), lat
    dut._log.info("last beat -> meta latency: %d cycles", next(iter(lat.values()))[0])
    # MR-HW-070: the fast loop compares every output in every cycle and names the cycle:
    # a model answer wrong in one output at one cycle is caught there
    core = run.h.core
    for k, signal in enumerate(("m_payload__tkeep", "s_axis__tready", "m_meta__payload", "reg_data")):
        real, target = core._step, core.cycle + 3 + 5 * k

        def wrong(ins, real=real, target=target, signal=signal):
            out = real(ins)
            return {**out, signal: out[signal] ^ 1} if core.cycle == target else out
        core._step = wrong
        try:
            await run.send([pc.Case("probe", line_rate_frame(300))] * 4, poll_regs=False)
        except Mismatch as e:
            assert (e.cycle, e.signal) == (target, signal), (e.cycle, e.signal, target, signal)
            assert f"cycle {target}" in str(e) and "accepted input beat" in str(e), str(e)
        else:
            raise AssertionError(f"a wrong {signal} at cycle {target} went unnoticed")
        finally:
            core._step = real
            core.error = None


@cocotb.test(skip=not os.environ.get("METAROCE_BENCH_OUT"))
async def parser_bench(dut):
    """``metaroce bench parser``: rows per packet size into METAROCE_BENCH_OUT (JSON), and
    the lockstep speed under mixed traffic (the suite, shape ``both``)."""
    sizes = [int(x) for x in os.environ["METAROCE_BENCH_SIZES"].split(",")]
    min_bytes = int(os.environ.get("METAROCE_BENCH_BYTES", "40000"))
    rows, run = await line_rate_rows(dut, sizes, lambda s: max(4, -(-min_bytes // s)),
                                     stop_on_mismatch=False)
    for r in rows:
        r["problems"] = r["problems"][:5]
    # mixed traffic: idle cycles, backpressure, every outcome
    n_mixed = int(os.environ.get("METAROCE_BENCH_MIXED", "100"))
    cases = pc.suite(n_mixed, n_mixed, seed=1)
    idle, bp = SHAPES["both"]
    res = await run.send(cases, p_idle=idle, p_bp=bp, **KEEP_EDGES)
    mixed = {"frames": len(cases), "sim_cycles": res["sim_cycles"], "wall_s": res["wall_s"],
             "beats": res["accepted_beats"],
             "lockstep_cycles_per_s": res["sim_cycles"] / max(res["wall_s"], 1e-9),
             "lockstep_cycles_per_cpu_s": res["sim_cycles"] / max(res["cpu_s"], 1e-9),
             "mismatches": run.mismatches - sum(r["mismatches"] for r in rows),
             "problems": pc.check(cases, res, max_frame=run.max_frame, width=run.width)[0][:5]}
    with open(os.environ["METAROCE_BENCH_OUT"], "w") as fh:
        json.dump({"width": len(dut.s_axis__tdata), "rows": rows, "mixed": mixed}, fh)


@cocotb.test(skip=not os.environ.get("METAROCE_REPLAY_PCAP"))
async def parser_replay(dut):
    """``metaroce replay parser FILE.pcap``: the capture in lockstep, counting (not raising
    on) mismatches; per-frame outcomes into METAROCE_REPLAY_OUT (JSON)."""
    from metaroce.models import pcap
    records = pcap.read(os.environ["METAROCE_REPLAY_PCAP"])
    cases = [pc.Case(f"frame-{i}", rec.data) for i, rec in enumerate(records, 1)]
    idle = float(os.environ.get("METAROCE_REPLAY_IDLE", "0"))
    bp = float(os.environ.get("METAROCE_REPLAY_BACKPRESSURE", "0"))
    run = await Run(dut, seed=_seed(), stop_on_mismatch=False).start()
    sendable = [c for c in cases if c.data]      # an empty record is no AXI-Stream frame
    res = await run.send(sendable, p_idle=idle, p_bp=bp)
    problems, _ = pc.check(sendable, res, max_frame=run.max_frame, width=run.width)
    outcomes, extra = pc.match_outputs(sendable, res, max_frame=run.max_frame, width=run.width)
    by_case = {id(c): o for c, o in zip(sendable, outcomes)}
    frames = []
    for case in cases:
        verdict, reason, meta, payload, byp = by_case.get(id(case), ("empty", None, None, None, None))
        frames.append({"verdict": verdict, "reason": None if reason is None else Reason(reason).label,
                       "expected": pc.expected_reason(case, run.max_frame).label if case.data else None,
                       "payload_ok": None if payload is None else _payload_ok(case, payload),
                       "bypass_ok": None if byp is None else byp == case.data})
    acc = res["accept_log"]
    span = (acc[-1][0] - acc[0][0] + 1) if acc else 0
    result = {"frames": frames, "mismatches": run.h.mismatch_cycles,
              "mismatch_signals": run.h.mismatches, "mismatch_reports": run.h.reports,
              "cycles": run.sim_cycles, "beats": len(acc), "beat_span": span,
              "beats_per_cycle": (len(acc) / span) if span else None,
              "counters": res["counters"], "problems": problems, "extra_outputs": list(extra),
              "wall_s": run.wall}
    with open(os.environ["METAROCE_REPLAY_OUT"], "w") as fh:
        json.dump(result, fh)


def _payload_ok(case, payload):
    try:
        return codec.decode(case.data).payload == payload
    except codec.DecodeError:
        return False


@cocotb.test(skip=not os.environ.get("METAROCE_COVERAGE_OUT"))
async def parser_coverage(dut):
    """``metaroce coverage parser``: the suite in every traffic shape (one reset), every
    output compared every cycle; per-frame outcomes into METAROCE_COVERAGE_OUT (JSON) for
    the functional coverage bins.  Line and toggle coverage come from Verilator's own
    ``coverage.dat`` (a ``--coverage`` build)."""
    n = int(os.environ.get("PARSER_RANDOM", "100"))
    seed = _seed()
    run = await Run(dut, seed=seed, stop_on_mismatch=False).start()
    out = {"width": run.width, "shapes": {}, "mismatches": 0, "problems": [],
           "counts": [0] * pc.N_COUNTERS}
    shapes = os.environ.get("METAROCE_COVERAGE_SHAPES", "none,idle,bp,both").split(",")
    for k, shape in enumerate(shapes):
        cases = pc.suite(n, n, seed=seed + k)
        idle, bp = SHAPES[shape]
        res = await run.send(cases, p_idle=idle, p_bp=bp, **KEEP_EDGES)
        problems, _ = pc.check(cases, res, max_frame=run.max_frame, width=run.width)
        outcomes, _ = pc.match_outputs(cases, res, max_frame=run.max_frame, width=run.width)
        out["problems"] += problems[:10]
        out["counts"] = [a + b for a, b in zip(out["counts"], res["counters"])]
        out["shapes"][shape] = [pc.coverage_point(c, o, b, run.width) for c, o, b in
                                zip(cases, outcomes, res["case_beats"])]
    out["mismatches"] = run.mismatches
    out["mismatch_reports"] = run.h.reports[:3]
    out["cycles"] = run.sim_cycles
    with open(os.environ["METAROCE_COVERAGE_OUT"], "w") as fh:
        json.dump(out, fh)
