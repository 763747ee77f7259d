"""cocotb testbench of the paced TX engine (hdl/tx.py ``Tx(pacing=True)``, block ``tx_paced``)
against its cycle model (models/tx.py ``TxCycleModel(pacing=True)``), under Verilator
(docs/spec/hw-tx.md MR-TX-249).

The engine's verification stack of tb/tx.py with the pacer's write port: the driver is
:class:`metaroce.models.tx_pace_cases.PacedTxDriver` (templates, work requests, a host memory on
the AXI read port, the lossy receiver's ACKs, the pacer's opens and rate writes), the checkers
MR-TX-150's (every work request completes) and MR-TX-237's (no packet decided and no frame out
before its bounds); the comparison is the lockstep core of :mod:`metaroce.tb.lockstep`.

``tx_paced_lockstep``: ``TXP_WRS`` random work requests (seed ``TXP_SEED``, payloads up to
6 MTUs), connection 0 opened at ``TXP_RATE`` Mb/s (default 5,000: its full frame's gap about 446
cycles, more than the data path's time for a frame, so the pacer binds), connection 1 at the line
rate, rate writes in 1 % of the cycles; idle cycles, backpressure on every output, random AXI
read latency, lost frames and their resends. Results to ``TXP_OUT`` (JSON) if set.
``TXP_PACE_IGNORED=1`` (negative control): the model without the scheduler's pacing condition
against the paced RTL, which must mismatch.

``tx_paced_bench``: a row of ``metaroce bench tx_paced --sim verilator`` (MR-TX-250, the driver
of :mod:`metaroce.benches.tx_paced`). Results to ``TXP_BENCH_OUT``.
"""
from __future__ import annotations

import json
import os
import time

import cocotb

from metaroce.models import tx_cases as xc
from metaroce.models import tx_pace_cases as pc
from metaroce.models.tx import SMALL

from .lockstep import drive
from .tx import _harness as tx_harness, _sem, _width


async def _harness(dut, width, *, first=True, pace_ignored=False):
    """tb/tx.py's harness with the paced model; ``pace_ignored``: the model with the scheduler's
    condition left out (negative control)."""
    return await tx_harness(dut, width, first=first, pacing=True, pace_ignored=pace_ignored)


@cocotb.test()
async def tx_paced_lockstep(dut):
    width = _width(dut)
    seed = int(os.environ.get("TXP_SEED", "1"))
    rate = int(os.environ.get("TXP_RATE", "5000"))
    # MR-TX-249's negative control: TXP_PACE_IGNORED=1 steps the model without the condition
    model, h = await _harness(dut, width,
                              pace_ignored=os.environ.get("TXP_PACE_IGNORED") == "1")
    items, lay = xc.traffic(_sem(), int(os.environ.get("TXP_WRS", "30")), seed=seed,
                            max_len=6 * SMALL["mtu"])
    drv = pc.PacedTxDriver(model.lay, width, items, lay,
                           xc.templates(SMALL["conns"], SMALL["paths"]), seed=seed, loss=0.1,
                           mtu=SMALL["mtu"], rates=[rate, 0], p_rate=0.01,
                           rate_choices=(rate, 2 * rate, 0))
    t0 = time.perf_counter()
    n = await drive(h, drv, busy=model.busy)
    wall = time.perf_counter() - t0
    summary = xc.check(_sem(), items, drv)
    r = pc.check_paced(model.paced, SMALL["mtu"])
    spacing = pc.check_spacing(model.paced)
    f = pc.check_frames_left(model.paced, drv.res["left"])
    assert h.mismatches == 0
    out = os.environ.get("TXP_OUT")
    if out:
        with open(out, "w") as fh:
            json.dump({"work_requests": len(items), "cycles": n, "frames": summary["frames"],
                       "retransmits": summary["retransmits"], "lost": drv.res["lost"],
                       "completions": len(drv.res["cqe"]), "packets": r["packets"],
                       "charged": r["charged"], "moved": r["moved"],
                       "early": len(r["early"]), "forced": len(r["forced"]),
                       "charges_in_order": r["charges_in_order"],
                       "decided_early": len(spacing), "frames_early": len(f["early"]),
                       "frames_left": f["frames"], "same_count": f["same_count"],
                       "pace_writes": len(drv.res["pace_writes"]),
                       "lockstep_cycles_per_s": round(n / wall) if wall else None,
                       "mismatches": h.mismatches}, fh)


@cocotb.test()
async def tx_paced_bench(dut):
    """MR-TX-250: a row of ``metaroce bench tx_paced --sim verilator``: rate ``TXP_BENCH_RATE``
    (one rate a simulation: a second reset in the same one would leave the RTL's unreset
    payload registers, which the fresh model has at 0, and the lockstep compares them)."""
    from metaroce.benches import tx_paced as bench
    width = _width(dut)
    n = int(os.environ.get("TXP_BENCH_PACKETS", "8"))
    rate = int(os.environ.get("TXP_BENCH_RATE", "5000"))
    model, h = await _harness(dut, width)
    drv = bench.driver(model.lay, width, n, rate,
                       int(os.environ.get("TXP_BENCH_BYTES", "0")) or None)
    t0 = time.perf_counter()
    cycles = await drive(h, drv, busy=model.active)
    row = bench.row(drv, width, rate, cycles, time.perf_counter() - t0, h.mismatches,
                    "verilator")
    out = os.environ.get("TXP_BENCH_OUT")
    if out:
        with open(out, "w") as fh:
            json.dump({"rows": [row]}, fh)
