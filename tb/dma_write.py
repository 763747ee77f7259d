"""cocotb testbench of the placement DMA (hdl/dma_write.py) against its cycle model
(models/dma_write.py), under Verilator (MR-DMA-050).

The block's one verification stack: cases, driver, host memory and checker are
:mod:`metaroce.models.dma_write_cases` (shared with the Amaranth-simulator tests), the comparison
is the lockstep core of :mod:`metaroce.tb.lockstep`.

cocotb tests here:

``dma_lockstep``
    :func:`~metaroce.tb.lockstep.drive` with ``registered_outputs`` (every output a flip-flop
    or a function of flip-flops, checked): the directed cases, then ``DMA_RANDOM`` random
    commands (seed ``DMA_SEED``) with idle cycles, backpressure on AW, W and m_done, B latency
    1..300 cycles and error responses, each followed by the checker; then back-to-back
    commands of ``DMA_STREAM`` sizes with the bus always ready and 200 cycles of B latency,
    whose write beats must go at one per cycle. Results to ``DMA_OUT`` (JSON) if set.
``dma_axiram``
    the host memory is cocotbext-axi's ``AxiRamWrite`` (the write half of ``AxiRam``; random
    pauses on its AW, W and B channels),
    the lockstep samples every port in ``ReadOnly`` and the driver's memory only watches; the
    end check adds its memory against the expected image.

Instance: the registered block (4,096 connections, 256-beat bursts, 256 outstanding).
"""
from __future__ import annotations

import json
import os
import random
import time

import cocotb

from metaroce.models import dma_write_cases as dc
from metaroce.models.dma_write import DmaWriteCycleModel

from .lockstep import Lockstep, drive, model_port_lists
from .streams import SEP, random_pause

CONNS = 4096


def _width(dut):
    return len(dut.m_axi__wdata)


async def _harness(dut, **kw):
    model = DmaWriteCycleModel(_width(dut), CONNS)
    ins, outs = model_port_lists(model)
    h = Lockstep(dut, model, ins, outs, **kw)
    return model, ins, outs, h


@cocotb.test()
async def dma_lockstep(dut):
    width = _width(dut)
    seed = int(os.environ.get("DMA_SEED", "1"))
    model, ins, _, h = await _harness(dut)
    for name in ins:
        getattr(dut, name).value = 0
    await h.start(monitor=False)
    rows = {"width": width, "runs": []}
    runs = [("directed", *dc.directed_cases(width, CONNS, seed=seed), {}),
            ("random", *dc.random_cases(width, int(os.environ.get("DMA_RANDOM", "300")), CONNS,
                                        seed=seed), {"p_idle": 0.3, "p_bp": 0.4, "p_axi": 0.4})]
    for size in [int(x) for x in os.environ.get("DMA_STREAM", "64,1500").split(",")]:
        for offset in (0, 5):
            runs.append((f"stream{size}+{offset}", *dc.stream_cases(width, 128, size, offset=offset,
                                                                      conns=CONNS),
                         {"p_idle": 0, "p_bp": 0, "p_axi": 0, "latency": (200, 200)}))
    for name, lay, cmds, kw in runs:
        drv = dc.Driver(width, lay, cmds, conns=CONNS, seed=seed, **kw)
        t0 = time.perf_counter()
        n = await drive(h, drv, busy=drv.busy_with(model.busy), registered_outputs=True)
        wall = time.perf_counter() - t0
        dc.check(width, lay, cmds, drv, conns=CONNS)
        w, aw = drv.res["w_cycles"], drv.res["aw_cycles"]
        row = {"run": name, "commands": len(cmds), "cycles": n,
               "w_beats_per_cycle": round(len(w) / (w[-1] - w[0] + 1), 4),
               "commands_per_cycle": round(len(cmds) / (drv.res["done_cycles"][-1] - aw[0] + 1), 4),
               "lockstep_cycles_per_s": round(n / wall) if wall else None}
        if name.startswith("stream"):
            assert w[-1] - w[0] + 1 == len(w), f"{name}: write beats not one per cycle"
        rows["runs"].append(row)
    assert h.mismatches == 0
    out = os.environ.get("DMA_OUT")
    if out:
        with open(out, "w") as f:
            json.dump(rows, f)


@cocotb.test()
async def dma_axiram(dut):
    from cocotbext.axi import AxiWriteBus
    from cocotbext.axi.axi_ram import AxiRamWrite
    width = _width(dut)
    seed = int(os.environ.get("DMA_SEED", "1"))
    lay, cmds = dc.random_cases(width, int(os.environ.get("DMA_RANDOM", "300")) // 3, CONNS,
                                seed=seed + 10, bad_every=0)
    drv = dc.Driver(width, lay, cmds, conns=CONNS, seed=seed, p_idle=0.3, p_bp=0.3, passive=True)
    model, ins, _, h = await _harness(dut, on_cycle=lambda c, i, o: drv.observe(i, o))
    ram = AxiRamWrite(AxiWriteBus.from_prefix(dut, "m_axi", bus_separator=SEP), dut.clk, dut.rst,
                 size=1 << 48)
    ram.write(lay.base, drv.mem.initial)
    rng = random.Random(seed)
    for ch in (ram.aw_channel, ram.w_channel, ram.b_channel):
        ch.set_pause_generator(random_pause(0.3, rng, max_run=20))
    for name in ("s_place__valid", "s_data__valid", "m_done__ready"):
        getattr(dut, name).value = 0

    async def source():
        from cocotb.triggers import RisingEdge
        edge = RisingEdge(dut.clk)
        writes = {}
        while True:
            await edge
            for name, v in drv.inputs().items():
                if writes.get(name) != v:
                    getattr(dut, name).value = v
                    writes[name] = v

    await h.start()
    cocotb.start_soon(source())
    busy = drv.busy_with(model.busy)
    while not drv.finished:
        await h.cycles(64)
        drv.settle(busy)
    h.check()
    dc.check(width, lay, cmds, drv, conns=CONNS)
    want = dc.expected_image(lay, drv.mem.initial, cmds)
    assert bytes(ram.read(lay.base, lay.size)) == want, "AxiRamWrite's memory differs from the model's"
    assert h.mismatches == 0 and len(drv.res["done"]) == len(cmds)


@cocotb.test()
async def dma_bench(dut):
    """``metaroce bench dma_write``: back-to-back commands of each size (``DMA_BENCH_SIZES``)
    and start lane (``DMA_BENCH_OFFSETS``), the bus always ready and a fixed B latency per run
    (``DMA_BENCH_LATENCIES``); rows to ``DMA_BENCH_OUT`` (JSON)."""
    out = os.environ.get("DMA_BENCH_OUT")
    if not out:
        return
    width = _width(dut)
    nb = width // 8
    model, ins, _, h = await _harness(dut)
    for name in ins:
        getattr(dut, name).value = 0
    await h.start(monitor=False)
    n = int(os.environ.get("DMA_BENCH_COMMANDS", "256"))
    rows = []
    for lat in [int(x) for x in os.environ.get("DMA_BENCH_LATENCIES", "200").split(",")]:
        for size in [int(x) for x in os.environ.get("DMA_BENCH_SIZES", "64,1500").split(",")]:
            for offset in [int(x) for x in os.environ.get("DMA_BENCH_OFFSETS", "0,5").split(",")]:
                lay, cmds = dc.stream_cases(width, n, size, offset=offset % nb, conns=CONNS)
                drv = dc.Driver(width, lay, cmds, conns=CONNS, seed=1, p_idle=0, p_bp=0, p_axi=0,
                                latency=(lat, lat))
                t0 = time.perf_counter()
                cycles = await drive(h, drv, busy=drv.busy_with(model.busy), registered_outputs=True)
                wall = time.perf_counter() - t0
                dc.check(width, lay, cmds, drv, conns=CONNS)
                r = drv.res
                w, done, taken = r["w_cycles"], r["done_cycles"], r["place_taken"]
                rows.append({
                    "width": width, "pkt_bytes": size, "offset": offset % nb, "b_latency": lat,
                    "commands": n, "w_beats_per_cycle": round(len(w) / (w[-1] - w[0] + 1), 4),
                    "commands_per_cycle": round(n / (done[-1] - done[0] + 1), 4),
                    "payload_bytes_per_cycle": round(n * size / (w[-1] - w[0] + 1), 2),
                    "done_latency_cycles": min(d - t for d, t in zip(done, taken)),
                    "lockstep_cycles_per_s": round(cycles / wall) if wall else None,
                    "mismatches": h.mismatches})
    with open(out, "w") as f:
        json.dump({"rows": rows}, f)
