"""``bench frame_builder``: the TX frame builder under Verilator, in lockstep with its cycle
model (docs/spec/hw-tx-frame.md, MR-TXF-040, MR-TXF-046).

Per width and payload size: back-to-back MR_WRITE frames over IPv4, no idle cycles or
backpressure. ``beats_per_cycle`` is beats out / cycles from the first to the last beat (1.0:
line rate); ``frames_per_cycle`` the same for frames; ``latency_cycles`` the cycles from a
descriptor taken to its first beat on ``m_axis`` (builder idle); ``lockstep_cycles_per_s`` the
simulation speed of a random mix with idle cycles and backpressure (RTL under Verilator, the
model stepped and every output compared every cycle, per wall second); ``mismatches`` must be
0. One cached build and one simulator run per width.
"""
from __future__ import annotations

from ._common import verilator_rows, widths_and_sizes

HELP = "TX frame builder under Verilator: beats/frames per cycle per payload size, latency"



def add_arguments(p):
    p.add_argument("--widths", default="64,512", help="comma-separated widths (default 64,512)")
    p.add_argument("--sizes", default="0,64,256,1024", help="payload bytes per frame, 0..16383 "
                                                            "(default 0,64,256,1024)")
    p.add_argument("--frames", type=int, default=32, help="frames per burst (default 32)")


def one_run(job):
    width, sizes, frames = job
    return verilator_rows("frame_builder", width, "frame_builder_bench", {
        "TXF_BENCH_SIZES": ",".join(map(str, sizes)), "TXF_BENCH_FRAMES": str(frames)},
        out_var="TXF_BENCH_OUT")


def run(args, ui):
    from ..cli import CliError
    widths, sizes = widths_and_sizes(args, 0, 16383, "payload size")
    if args.frames < 2:
        raise CliError("--frames must be 2 or more")
    jobs = [(w, tuple(sizes), args.frames) for w in widths]
    rows = [r for rs in ui.map(one_run, jobs, label="frame builder runs") for r in rs]
    return {
        "rows": rows,
        "title": "TX frame builder under Verilator (lockstep with the model): back-to-back frames",
        "columns": ["width", "payload_bytes", "frame_bytes", "frames", "beats_per_cycle",
                    "frames_per_cycle", "latency_cycles", "lockstep_cycles_per_s", "mismatches"],
        "summary": {"line_rate_from_256": all(r["beats_per_cycle"] == 1.0 for r in rows
                                              if r["payload_bytes"] >= 256),
                    "mismatches": sum(r["mismatches"] for r in rows)},
    }
