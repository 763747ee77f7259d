"""cocotb testbench of the engine's receive half (hdl/engine.py) against its composed cycle
model (models/engine.py), under Verilator (MR-ENG-110).

The one verification stack: stimulus, driver, host memory and checker are
:mod:`metaroce.models.engine_cases` (shared with the Amaranth-simulator test), the comparison
is the lockstep core of :mod:`metaroce.tb.lockstep` (:func:`drive`: every output compared
every cycle), with ``registered_outputs``: every output of the top is a flip-flop or a function
of flip-flops (MR-ENG-103), which the loop checks (it raises ``CombinationalOutput`` when an
output moves with the cycle's inputs).

``engine_endpoint_traffic``
    the reference endpoint's real traffic (``ENGINE_BYTES``, faults ``ENGINE_LOSS``,
    ``ENGINE_REORDER``, ``ENGINE_DUP``, ``ENGINE_HOSTILE`` forged writes, seed ``ENGINE_SEED``)
    as MAC beats with random idle cycles; the setup through AXI4-Lite; random ready on every
    output (``ENGINE_BP``) and B latency 1..``ENGINE_LATENCY`` cycles; then the checker: the
    host memory and the ACK/NAK stream equal the receiving endpoint's; then ``ENGINE_LINE_PACKETS``
    back-to-back writes of one path (``ENGINE_LINE_PLEN`` bytes each) with every output ready,
    whose MAC beats must be taken one per cycle (MR-ENG-112). Results to ``ENGINE_OUT`` (JSON)
    if set.

Instance: ``ENGINE_CONNS``, ``ENGINE_PATHS``, ``ENGINE_KEYS``, ``ENGINE_STREAMS``,
``ENGINE_OUTSTANDING`` (default the small one, ``engine_rx_256x4``: 256 x 4, 256 keys, 4
streams, 32 outstanding).
"""
from __future__ import annotations

import json
import os
import time

import cocotb

from metaroce.models import engine_cases as ec
from metaroce.models.engine import EngineRxModel
from metaroce.models.rx import SMALL as RX_SMALL

from .lockstep import Lockstep, drive, model_port_lists


def _env(name, default, kind=int):
    return kind(os.environ.get(name, default))


@cocotb.test()
async def engine_endpoint_traffic(dut):
    width = len(dut.s_axis__tdata)
    conns, paths, keys = _env("ENGINE_CONNS", 256), _env("ENGINE_PATHS", 4), _env("ENGINE_KEYS", 256)
    streams = _env("ENGINE_STREAMS", RX_SMALL["streams"])
    seed = _env("ENGINE_SEED", 1)
    model = EngineRxModel(width, conns, paths, keys, streams=streams,
                          outstanding=_env("ENGINE_OUTSTANDING", 32))
    ins, outs = model_port_lists(model)
    h = Lockstep(dut, model, ins, outs)
    for name in ins:
        getattr(dut, name).value = 0
    await h.start(monitor=False)
    run = ec.engine_traffic(conns, paths, keys, streams=streams, nbytes=_env("ENGINE_BYTES", 16384),
                            loss=_env("ENGINE_LOSS", 0.05, float), reorder=_env("ENGINE_REORDER", 0.2, float),
                            dup=_env("ENGINE_DUP", 0.05, float), seed=seed,
                            hostile=_env("ENGINE_HOSTILE", 10))
    bp = _env("ENGINE_BP", 0.3, float)
    drv = ec.Driver(width, run, seed=seed, p_idle=0.2, p_bp=bp, latency=(1, _env("ENGINE_LATENCY", 40)))
    t0 = time.perf_counter()
    n = await drive(h, drv, busy=model.busy, registered_outputs=True)
    wall = time.perf_counter() - t0
    summary = ec.check(run, drv)
    out = os.environ.get("ENGINE_OUT")
    if out:
        with open(out, "w") as f:
            json.dump({"width": width, "connections": conns, "paths": paths, "cycles": n,
                       "lockstep_cycles_per_s": round(n / wall) if wall else None,
                       "mismatches": h.mismatches, **summary}, f)
    assert h.mismatches == 0 and n >= drv.cycles
    # MR-ENG-112: then back-to-back writes of one path with every output ready: one MAC beat
    # per cycle (the same engine, its rows for this setup written again through AXI4-Lite)
    line = ec.line_rate_run(conns, paths, keys, streams=streams, n=_env("ENGINE_LINE_PACKETS", 32),
                            plen=_env("ENGINE_LINE_PLEN", 64), seed=seed + 1)
    drv2 = ec.Driver(width, line, seed=seed + 1, p_idle=0.0, p_bp=0.0, latency=(1, 20))
    await drive(h, drv2, busy=model.busy, registered_outputs=True)
    rate = ec.check_line_rate(line, drv2)
    if out:
        with open(out) as f:
            row = json.load(f)
        row.update({"line_rate_beats": rate["beats"], "line_rate_cycles": rate["cycles"],
                    "mismatches": h.mismatches})
        with open(out, "w") as f:
            json.dump(row, f)
    assert h.mismatches == 0
