"""cocotb testbench of the TX frame builder (hdl/frame_builder.py) against its cycle model
(models/frame_builder.py), under Verilator (MR-TXF-050).

The block's one verification stack: cases, driver and checker are
:mod:`metaroce.models.frame_builder_cases` (shared with the model-only and Amaranth-simulator
tests), the comparison the lockstep core of :mod:`metaroce.tb.lockstep` (:func:`drive`: every
output compared every cycle).

cocotb tests here:

``frame_builder_lockstep``
    the endpoint-opcode, opcode-table and length cases, ``TXF_RANDOM`` random descriptors
    (seed ``TXF_SEED``) and the frames of ``TXF_EXTRA`` (a JSON file of cases, e.g. the
    reference endpoint's traffic), with random idle cycles on ``s_desc``/``s_payload`` and
    random backpressure on ``m_axis``; then the checker and scapy's ICRC on every frame to
    port 4791; then back-to-back frames of ``TXF_LINE_PAYLOAD`` bytes (default 256) without
    idle or backpressure, which must leave at one beat per cycle (MR-TXF-046). Results to
    ``TXF_OUT`` (JSON) if set.
"""
from __future__ import annotations

import json
import os
import time

import cocotb

from metaroce.models import frame_builder_cases as fc
from metaroce.models.frame_builder import FrameBuilderModel

from .lockstep import Lockstep, drive, model_port_lists


def _extra():
    path = os.environ.get("TXF_EXTRA")
    if not path:
        return []
    with open(path) as f:
        return [fc.Case(c["desc"], bytes.fromhex(c["payload"]), c.get("name", "extra"))
                for c in json.load(f)]


@cocotb.test()
async def frame_builder_lockstep(dut):
    width = len(dut.m_axis__tdata)
    seed = int(os.environ.get("TXF_SEED", "1"))
    model = FrameBuilderModel(width)
    ins, outs = model_port_lists(model)
    h = Lockstep(dut, model, ins, outs)
    for name in ins:
        getattr(dut, name).value = 0
    await h.start(monitor=False)

    cases = (fc.endpoint_ops_cases(width, seed) + fc.opcode_cases(width, seed + 1)
             + fc.length_cases(width, seed + 2) + fc.random_cases(int(os.environ.get("TXF_RANDOM", "100")), seed + 3)
             + _extra())
    drv = fc.Driver(width, cases, seed=seed, p_idle=0.3, p_bp=0.4)
    t0 = time.perf_counter()
    n1 = await drive(h, drv, busy=model.busy)
    wall = time.perf_counter() - t0
    fc.check(cases, drv.res, width)
    oracle = 0
    for c, (frame, _, _) in zip(cases, drv.res["frames"]):
        if c.desc["udp_dport"] == 4791:
            assert fc.scapy_icrc(frame) == frame[-4:], f"{c.name}: scapy's ICRC differs"
            oracle += 1

    # MR-TXF-046, MR-TXF-063: back-to-back frames, no idle, no backpressure: one beat per
    # cycle for IPv4 frames (cut through the output FIFO) and for IPv6 frames of one length
    # (each waits for its checksum while the one before leaves)
    import random

    from metaroce.models.wire import Op
    plen = int(os.environ.get("TXF_LINE_PAYLOAD", "256"))
    rng = random.Random(seed + 4)
    rates = []
    n2 = 0
    for v6, ops in ((0, (Op.MR_WRITE, Op.MR_SEND_IMM, Op.RC_SEND_MIDDLE, Op.MR_READ_RESP)),
                    (1, (Op.MR_WRITE,))):
        line = [fc.case_of_frame(fc._rand_frame(rng, op, plen, v6, rng.randrange(2)))
                for op in ops] * (8 // len(ops) + 1)
        drv2 = fc.Driver(width, line, seed=seed + 5, p_idle=0.0, p_bp=0.0)
        n2 += await drive(h, drv2, busy=model.busy)
        fc.check(line, drv2.res, width)
        bc = drv2.res["beat_cycles"]
        rates.append(len(bc) / (bc[-1] - bc[0] + 1))
    beats_per_cycle = min(rates)
    assert h.mismatches == 0
    out = os.environ.get("TXF_OUT")
    if out:
        with open(out, "w") as f:
            json.dump({"width": width, "cases": len(cases), "scapy_checked": oracle, "random_cycles": n1,
                       "line_cycles": n2, "line_payload": plen, "line_frames": len(line),
                       "beats_per_cycle": round(beats_per_cycle, 4),
                       "lockstep_cycles_per_s": round(n1 / wall) if wall else None,
                       "mismatches": h.mismatches}, f)
    assert beats_per_cycle == 1.0, f"{beats_per_cycle} beats per cycle at {plen}-byte payloads"


@cocotb.test()
async def frame_builder_bench(dut):
    """``metaroce bench frame_builder``: per payload size (``TXF_BENCH_SIZES``), back-to-back
    MR_WRITE frames over IPv4 without idle or backpressure: beats and frames per cycle, latency
    (descriptor taken to first beat out, builder idle); then the random mix with idle cycles and
    backpressure for the lockstep speed. Rows to ``TXF_BENCH_OUT`` (JSON)."""
    out = os.environ.get("TXF_BENCH_OUT")
    if not out:
        return
    import random

    from metaroce.models.wire import Op
    width = len(dut.m_axis__tdata)
    model = FrameBuilderModel(width)
    ins, outs = model_port_lists(model)
    h = Lockstep(dut, model, ins, outs)
    for name in ins:
        getattr(dut, name).value = 0
    await h.start(monitor=False)
    n = int(os.environ.get("TXF_BENCH_FRAMES", "32"))
    rows = []
    for size in [int(x) for x in os.environ.get("TXF_BENCH_SIZES", "0,64,256,1024").split(",")]:
        f = fc._rand_frame(random.Random(size), Op.MR_WRITE, size, 0, 0)
        c = fc.case_of_frame(f)
        one = fc.Driver(width, [c], seed=1, p_idle=0.0, p_bp=0.0)
        await drive(h, one, busy=model.busy)
        latency = one.res["beat_cycles"][0] - one.res["desc_cycles"][0]
        drv = fc.Driver(width, [c] * n, seed=1, p_idle=0.0, p_bp=0.0)
        await drive(h, drv, busy=model.busy)
        fc.check([c] * n, drv.res, width)
        bc = drv.res["beat_cycles"]
        span = bc[-1] - bc[0] + 1
        rows.append({"width": width, "payload_bytes": size, "frame_bytes": len(c.expected()),
                     "frames": n, "beats_per_cycle": round(len(bc) / span, 4),
                     "frames_per_cycle": round(n / span, 4), "latency_cycles": latency})
    cases = fc.random_cases(int(os.environ.get("TXF_RANDOM", "100")), 5)
    drv = fc.Driver(width, cases, seed=3, p_idle=0.2, p_bp=0.4)
    t0 = time.perf_counter()
    cycles = await drive(h, drv, busy=model.busy)
    speed = round(cycles / (time.perf_counter() - t0))
    fc.check(cases, drv.res, width)
    for r in rows:
        r["lockstep_cycles_per_s"] = speed
        r["mismatches"] = h.mismatches
    with open(out, "w") as fh:
        json.dump({"rows": rows}, fh)
