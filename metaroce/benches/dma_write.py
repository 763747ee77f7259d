"""``bench dma_write``: the placement DMA under Verilator, in lockstep with its cycle model
(docs/spec/hw-dma.md, MR-DMA-042/043).

Per width, command size, start lane and B latency: back-to-back commands with the AXI bus
always ready and every B response coming back ``--latencies`` cycles after its burst.
``w_beats_per_cycle`` is W transfers / cycles from the first to the last (1.0: line rate on the
bus, MR-DMA-042); ``commands_per_cycle`` done records over their span; ``payload_bytes_per_cycle``
payload bytes over the W span (at most the bus width in bytes; less when the realignment
spills into one more beat per command, MR-DMA-021); ``done_latency_cycles`` the least cycles
from a command taken to its done record (B latency included); ``lockstep_cycles_per_s`` the
simulation speed (RTL under Verilator, the model stepped and every output compared every cycle);
``mismatches`` must be 0. Each width is one cached build and one simulator run.
"""
from __future__ import annotations

from ._common import dma_bench_arguments, dma_bench_run

HELP = "placement DMA under Verilator: AXI write beats per cycle, commands per cycle, done latency"


def add_arguments(p):
    dma_bench_arguments(p, "B")


def run(args, ui):
    rows = dma_bench_run(args, ui, block="dma_write", test="dma_bench", env_prefix="DMA_BENCH")
    return {
        "rows": rows,
        "title": "Placement DMA under Verilator (lockstep with the model): back-to-back commands, "
                 "bus always ready",
        "columns": ["width", "pkt_bytes", "offset", "b_latency", "commands", "w_beats_per_cycle",
                    "commands_per_cycle", "payload_bytes_per_cycle", "done_latency_cycles",
                    "lockstep_cycles_per_s", "mismatches"],
        "summary": {"line_rate": all(r["w_beats_per_cycle"] == 1.0 for r in rows),
                    "mismatches": sum(r["mismatches"] for r in rows)},
    }
