"""``bench rx``: the RX engine (first slice) under Verilator, in lockstep with its cycle model
(docs/spec/hw-rx.md, MR-RX-043).

Per instance (``--configs``: 256x4 and/or 4096x8), width and payload size: a burst of
back-to-back records of one path without idle cycles or backpressure (``pattern`` in_order:
fast updates); then two bursts of 0-byte records that need slow updates (MR-RX-048):
``slide`` (every record slides the window) and ``fill`` (every second record fills a gap).
``packets_per_cycle`` is records taken / cycles from the first to the last (1.0: one per
cycle, MR-RX-043);
``beats_per_cycle`` the same for the payload beats; ``latency_cycles`` the least cycles from a
record taken to its ACK request transferred (MR-RX-040); ``lockstep_cycles_per_s`` the
simulation speed of a random mix with backpressure (RTL under Verilator, the model stepped
and every output compared every cycle, per wall second); ``mismatches`` must be 0. Each
(instance, width) is one cached build and one simulator run.
"""
from __future__ import annotations

from ._common import parse_list, verilator_rows, widths_and_sizes

HELP = "RX engine under Verilator: packets/beats per cycle of same-path bursts, ACK latency"

CONFIGS = {"256x4": ("rx_256x4", 256, 4, 256, 4), "4096x8": ("rx", 4096, 8, 1024, 8)}


def add_arguments(p):
    p.add_argument("--widths", default="64,512", help="comma-separated widths (default 64,512)")
    p.add_argument("--configs", default="256x4", help="instances: 256x4, 4096x8 (default 256x4)")
    p.add_argument("--sizes", default="0,64,256", help="payload bytes per packet, 0..256 "
                                                       "(default 0,64,256; the MTU is 256)")
    p.add_argument("--packets", type=int, default=256, help="records per burst (default 256)")


def one_run(job):
    config, width, sizes, packets = job
    block, conns, paths, keys, streams = CONFIGS[config]
    return verilator_rows(block, width, "rx_bench", {
        "RX_BENCH_SIZES": ",".join(map(str, sizes)), "RX_BENCH_PACKETS": str(packets),
        "RX_CONNS": str(conns), "RX_PATHS": str(paths), "RX_KEYS": str(keys),
        "RX_STREAMS": str(streams)}, out_var="RX_BENCH_OUT")


def run(args, ui):
    from ..cli import CliError
    widths, sizes = widths_and_sizes(args, 0, 256)
    configs = parse_list(args.configs, str)
    for c in configs:
        if c not in CONFIGS:
            raise CliError(f"config {c!r} not known (use {', '.join(CONFIGS)})")
    if args.packets < 2:
        raise CliError("--packets must be 2 or more")
    jobs = [(c, w, tuple(sizes), args.packets) for c in configs for w in widths]
    rows = [r for rs in ui.map(one_run, jobs, label="rx runs") for r in rs]
    return {
        "rows": rows,
        "title": "RX engine under Verilator (lockstep with the model): same-path bursts, no backpressure",
        "columns": ["width", "connections", "paths", "pattern", "pkt_bytes", "same_path_burst",
                    "packets_per_cycle", "beats_per_cycle", "latency_cycles",
                    "lockstep_cycles_per_s", "mismatches"],
        "summary": {"one_packet_per_cycle": all(r["packets_per_cycle"] == 1.0 for r in rows
                                                if r["pattern"] == "in_order"
                                                and r["pkt_bytes"] * 8 <= r["width"]),
                    "mismatches": sum(r["mismatches"] for r in rows)},
    }
