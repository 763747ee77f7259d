"""cocotb testbench of the joined TX engine (hdl/tx.py) against its cycle model (models/tx.py),
under Verilator (MR-TX-150).

The engine's one verification stack: traffic, driver (template writes, work requests, a host
memory on the AXI read port, the lossy receiver's ACKs back on ``s_ack``) and checker are
:mod:`metaroce.models.tx_cases` (shared with the model-only and Amaranth-simulator tests); the
comparison is the lockstep core of :mod:`metaroce.tb.lockstep` (every output every cycle).

``tx_lockstep``: ``TX_WRS`` random work requests (seed ``TX_SEED``, payloads up to ``TX_MAXLEN``
bytes) with bad ones, random idle cycles and backpressure on every output, random AXI read
latency, lost frames and their resends, then the checker. The instance is the small one
(models.tx.SMALL). Results to ``TX_OUT`` (JSON) if set.

``tx_bench``: the same engine without idle cycles or backpressure, one connection's work
requests of ``TX_BENCH_BYTES`` bytes each (one packet each) offered back to back, every packet
ACKed at once by a lossless receiver: packets, beats and ACKs per cycle over the run, the least
latency from a work request taken to its frame's first beat; then a random lockstep run for
its speed. Results to ``TX_BENCH_OUT``.
"""
from __future__ import annotations

import json
import os
import time

import cocotb

from metaroce.models import tx_cases as xc
from metaroce.models.tx import SMALL, TxCycleModel
from metaroce.models.tx_sched import TxSchedModel

from .lockstep import Lockstep, drive, model_port_lists

_SCHED = ("chunk_window", "mtu", "cwnd", "conn_window", "path_pkts", "ack_every", "resend_depth")


def _sem():
    return TxSchedModel(SMALL["conns"], SMALL["streams"], SMALL["paths"], SMALL["depth"],
                        **{k: SMALL[k] for k in _SCHED})


async def _harness(dut, width):
    model = TxCycleModel(width, **SMALL)
    ins, outs = model_port_lists(model)
    h = Lockstep(dut, model, ins, outs)
    for name in ins:
        getattr(dut, name).value = 0
    await h.start(monitor=False)
    return model, h


def _width(dut):
    return len(dut.m_axis__tdata)


@cocotb.test()
async def tx_lockstep(dut):
    width = _width(dut)
    seed = int(os.environ.get("TX_SEED", "1"))
    model, h = await _harness(dut, width)
    sem = _sem()
    items, lay = xc.traffic(sem, int(os.environ.get("TX_WRS", "40")), seed=seed,
                            max_len=int(os.environ.get("TX_MAXLEN", "2500")))
    drv = xc.Driver(model.lay, width, items, lay, xc.templates(SMALL["conns"], SMALL["paths"]),
                    seed=seed, p_idle=0.2, p_bp=0.3, loss=0.15)
    t0 = time.perf_counter()
    n = await drive(h, drv, busy=model.busy)
    wall = time.perf_counter() - t0
    summary = xc.check(sem, items, drv)
    assert h.mismatches == 0
    out = os.environ.get("TX_OUT")
    if out:
        with open(out, "w") as f:
            json.dump({"work_requests": len(items), "cycles": n, "frames": summary["frames"],
                       "retransmits": summary["retransmits"], "lost": drv.res["lost"],
                       "acks": drv.res["acks"], "timeouts": drv.res["timeouts"],
                       "completions": len(drv.res["cqe"]),
                       "lockstep_cycles_per_s": round(n / wall) if wall else None,
                       "mismatches": h.mismatches}, f)


@cocotb.test()
async def tx_bench(dut):
    from metaroce.models import tx_bench as tb_
    width = _width(dut)
    model, h = await _harness(dut, width)
    rows = []
    for nbytes in [int(x) for x in os.environ.get("TX_BENCH_BYTES", "256").split(",")]:
        rows.append(await tb_.measure_lockstep(h, model, width, nbytes,
                                               int(os.environ.get("TX_BENCH_PACKETS", "64"))))
    out = os.environ.get("TX_BENCH_OUT")
    if out:
        with open(out, "w") as f:
            json.dump(rows, f)
