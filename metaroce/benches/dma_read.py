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

from ._common import parse_list, verilator_rows

HELP = "payload DMA under Verilator: AXI R beats and payload beats per cycle, commands per cycle"

WIDTHS = (64, 128, 256, 512)


def add_arguments(p):
    p.add_argument("--widths", default="64,512", help="comma-separated widths (default 64,512)")
    p.add_argument("--sizes", default="64,1500,4096", help="bytes per command (default 64,1500,4096)")
    p.add_argument("--offsets", default="0,5", help="start lanes (default 0,5)")
    p.add_argument("--latencies", default="200", help="R latencies in cycles (default 200)")
    p.add_argument("--commands", type=int, default=256, help="commands per run (default 256)")


def one_run(job):
    width, sizes, offsets, latencies, commands = job
    return verilator_rows("dma_read", width, "dmr_bench", {
        "DMR_BENCH_SIZES": ",".join(map(str, sizes)), "DMR_BENCH_OFFSETS": ",".join(map(str, offsets)),
        "DMR_BENCH_LATENCIES": ",".join(map(str, latencies)), "DMR_BENCH_COMMANDS": str(commands)},
        out_var="DMR_BENCH_OUT")


def run(args, ui):
    from ..cli import CliError
    try:
        widths = parse_list(args.widths, int)
        sizes = parse_list(args.sizes, int)
        offsets = parse_list(args.offsets, int)
        latencies = parse_list(args.latencies, int)
    except ValueError as e:
        raise CliError(str(e)) from None
    for w in widths:
        if w not in WIDTHS:
            raise CliError(f"width {w} not supported (use {', '.join(map(str, WIDTHS))})")
    if any(not 1 <= s <= 65535 for s in sizes):
        raise CliError("command sizes must be in 1..65535 bytes")
    if any(o < 0 for o in offsets):
        raise CliError("offsets must be 0 or more")
    if any(not 1 <= x <= 100000 for x in latencies):
        raise CliError("latencies must be in 1..100000 cycles")
    if args.commands < 2:
        raise CliError("--commands must be 2 or more")
    jobs = [(w, tuple(sizes), tuple(offsets), tuple(latencies), args.commands) for w in widths]
    rows = [r for rs in ui.map(one_run, jobs, label="dma_read runs") for r in rs]
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
