"""The DMA testbenches' shared runs (tb/dma_write.py, tb/dma_read.py): the lockstep sequence
(directed, random, back-to-back streams; MR-DMA-050, MR-DMR-050) and the bench sweep
(MR-DMA-043, MR-DMR-043). What differs per block (cases module, harness, random-run options,
the row of a run, the bus transfers that must come one per cycle) is passed in."""
from __future__ import annotations

import json
import os
import random
import time

import cocotb

from .lockstep import drive
from .streams import random_pause


def env_ints(name, default):
    return [int(x) for x in os.environ.get(name, default).split(",")]


async def lockstep_runs(dut, h, model, dc, *, width, conns, prefix, random_kw, row, line_beats):
    """Run the directed cases, ``<prefix>_RANDOM`` random commands with ``random_kw`` and the
    back-to-back streams of ``<prefix>_STREAM`` sizes (bus always ready, 200 cycles of latency,
    whose ``line_beats(drv)`` cycles must be consecutive), each followed by the checker; rows to
    ``<prefix>_OUT`` (JSON) if set."""
    seed = int(os.environ.get(f"{prefix}_SEED", "1"))
    for name in h.inputs:
        getattr(dut, name).value = 0
    await h.start(monitor=False)
    rows = {"width": width, "runs": []}
    runs = [("directed", *dc.directed_cases(width, conns, seed=seed), {}),
            ("random", *dc.random_cases(width, int(os.environ.get(f"{prefix}_RANDOM", "300")), conns,
                                        seed=seed), random_kw)]
    for size in env_ints(f"{prefix}_STREAM", "64,1500"):
        for offset in (0, 5):
            runs.append((f"stream{size}+{offset}",
                         *dc.stream_cases(width, 128, size, offset=offset, conns=conns),
                         {"p_idle": 0, "p_bp": 0, "p_axi": 0, "latency": (200, 200)}))
    for name, lay, cmds, kw in runs:
        drv = dc.Driver(width, lay, cmds, conns=conns, seed=seed, **kw)
        t0 = time.perf_counter()
        n = await drive(h, drv, busy=drv.busy_with(model.busy), registered_outputs=True)
        wall = time.perf_counter() - t0
        dc.check(width, lay, cmds, drv, conns=conns)
        if name.startswith("stream"):
            beats = line_beats(drv)
            assert beats[-1] - beats[0] + 1 == len(beats), f"{name}: bus beats not one per cycle"
        rows["runs"].append({"run": name, "commands": len(cmds), "cycles": n, **row(cmds, drv),
                             "lockstep_cycles_per_s": round(n / wall) if wall else None})
    assert h.mismatches == 0
    out = os.environ.get(f"{prefix}_OUT")
    if out:
        with open(out, "w") as f:
            json.dump(rows, f)


async def axiram_run(dut, harness, dc, *, width, conns, prefix, ram, channels, quiet, image):
    """A random run (``<prefix>_RANDOM`` / 3 commands, seed ``<prefix>_SEED``) with cocotbext-axi's
    RAM model as the host memory: ``ram()`` makes it, ``image(drv)`` is what it starts with,
    ``channels(ram)`` get random pauses, ``quiet`` inputs start at 0. The driver's memory only
    watches (``passive``); the lockstep samples every port. Returns ``(ram, lay, cmds, drv)``
    after the lockstep and the checker passed."""
    seed = int(os.environ.get(f"{prefix}_SEED", "1"))
    lay, cmds = dc.random_cases(width, int(os.environ.get(f"{prefix}_RANDOM", "300")) // 3, conns,
                                seed=seed + 10, bad_every=0)
    drv = dc.Driver(width, lay, cmds, conns=conns, seed=seed, p_idle=0.3, p_bp=0.3, passive=True)
    model, _, _, h = await harness(dut, on_cycle=lambda c, i, o: drv.observe(i, o))
    mem = ram()
    mem.write(lay.base, image(drv))
    rng = random.Random(seed)
    for ch in channels(mem):
        ch.set_pause_generator(random_pause(0.3, rng, max_run=20))
    for name in quiet:
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
    dc.check(width, lay, cmds, drv, conns=conns)
    assert h.mismatches == 0 and len(drv.res["done"]) == len(cmds)
    return mem, lay, cmds, drv


async def bench_sweep(dut, h, model, dc, *, width, conns, prefix, row):
    """``metaroce bench dma_*``: back-to-back commands of each size (``<prefix>_SIZES``) and
    start lane (``<prefix>_OFFSETS``), the bus always ready and a fixed latency per run
    (``<prefix>_LATENCIES``); ``row(size, offset, latency, n, drv)`` per run, rows to
    ``<prefix>_OUT`` (JSON)."""
    out = os.environ.get(f"{prefix}_OUT")
    if not out:
        return
    nb = width // 8
    for name in h.inputs:
        getattr(dut, name).value = 0
    await h.start(monitor=False)
    n = int(os.environ.get(f"{prefix}_COMMANDS", "256"))
    rows = []
    for lat in env_ints(f"{prefix}_LATENCIES", "200"):
        for size in env_ints(f"{prefix}_SIZES", "64,1500"):
            for offset in env_ints(f"{prefix}_OFFSETS", "0,5"):
                lay, cmds = dc.stream_cases(width, n, size, offset=offset % nb, conns=conns)
                drv = dc.Driver(width, lay, cmds, conns=conns, seed=1, p_idle=0, p_bp=0, p_axi=0,
                                latency=(lat, lat))
                t0 = time.perf_counter()
                cycles = await drive(h, drv, busy=drv.busy_with(model.busy), registered_outputs=True)
                wall = time.perf_counter() - t0
                dc.check(width, lay, cmds, drv, conns=conns)
                rows.append({"width": width, "pkt_bytes": size, "offset": offset % nb,
                             **row(lat, n, size, drv),
                             "lockstep_cycles_per_s": round(cycles / wall) if wall else None,
                             "mismatches": h.mismatches})
    with open(out, "w") as f:
        json.dump({"rows": rows}, f)

