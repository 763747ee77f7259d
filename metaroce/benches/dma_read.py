"""``bench dma_read``: the payload DMA under Verilator, in lockstep with its cycle model
(docs/spec/hw-dma-read.md, MR-DMR-042/043).

Per width, command size, start lane and R latency: back-to-back commands with the AXI bus
always ready and every burst's first R beat coming ``--latencies`` cycles after its AR.
``r_beats_per_cycle`` is R transfers / cycles from the first to the last (1.0: line rate on the
bus, MR-DMR-042); ``out_beats_per_cycle`` the payload beats on ``m_data`` over their span (less
than the R rate by the one extra R beat of a command whose bytes straddle one more bus word,
MR-DMR-020); ``commands_per_cycle`` done records over their span; ``payload_bytes_per_cycle``
payload bytes over the ``m_data`` span; ``first_beat_latency_cycles`` from the first command
taken to its first payload beat (R latency included); ``lockstep_cycles_per_s`` the simulation
speed; ``mismatches`` must be 0. Each width is one cached build and one simulator run.
"""
from __future__ import annotations

from ._common import dma_bench_arguments, dma_bench_run

HELP = "payload DMA under Verilator: AXI R beats and payload beats per cycle, commands per cycle"


def add_arguments(p):
    dma_bench_arguments(p, "R")


def run(args, ui):
    rows = dma_bench_run(args, ui, block="dma_read", test="dmr_bench", env_prefix="DMR_BENCH")
    return {
        "rows": rows,
        "title": "Payload DMA under Verilator (lockstep with the model): back-to-back commands, "
                 "bus always ready",
        "columns": ["width", "pkt_bytes", "offset", "r_latency", "commands", "r_beats_per_cycle",
                    "out_beats_per_cycle", "commands_per_cycle", "payload_bytes_per_cycle",
                    "first_beat_latency_cycles", "lockstep_cycles_per_s", "mismatches"],
        "summary": {"line_rate": all(r["r_beats_per_cycle"] == 1.0 for r in rows),
                    "mismatches": sum(r["mismatches"] for r in rows)},
    }
