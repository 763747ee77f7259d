"""``bench parser``: the RX parser under Verilator, in lockstep with its cycle model, fed
back-to-back valid frames without backpressure (issue 4, item 8).

Per width and packet size: ``beats_per_cycle`` (input beats accepted / cycles from the
first to the last accepted beat; 1.0 is line rate), ``latency_cycles`` (worst case, from
the cycle a frame's last beat is accepted to the cycle its meta record is valid on
``m_meta``; the parser is store-and-forward, since the ICRC verdict needs the whole frame),
``first_beat_to_meta_cycles`` (first frame: first beat accepted to meta valid),
``lockstep_cycles_per_s`` (lockstep simulation speed: RTL under Verilator, the model stepped
and every output compared every cycle, the traffic driver; per wall second) and
``lockstep_cycles_per_cpu_s`` (per CPU second of the simulator process: the speed on an
unloaded machine), ``mismatches`` (RTL/model, must be 0) and ``problems`` (frames whose outcome
or fields are wrong, must be 0).  Frame sizes are exact (the smallest RoCE frame, an IPv4
RC ACK, is 62 bytes; a few bytes of Ethernet padding make up sizes the 4-byte pad rule
cannot reach).  Each width is one simulator run (and one cached build) in its own process.
Per width a last row (``packet_bytes`` = ``"mixed"``) runs the parser's case suite with idle
cycles, backpressure and tkeep edge cases (``--mixed`` random and as many mutated frames).
"""
from __future__ import annotations

import json
import os
import tempfile

from ._common import WIDTHS, plt, widths_and_sizes

HELP = "RX parser under Verilator: beats per cycle, meta latency, simulation speed per width/size"

SIZES = (60, 62, 64, 65, 128, 256, 512, 1024, 1500, 4096, 9000)


def add_arguments(p):
    p.add_argument("--widths", default=",".join(map(str, WIDTHS)),
                   help="comma-separated data widths (default 64,128,256,512)")
    p.add_argument("--sizes", default=",".join(map(str, SIZES)),
                   help="comma-separated frame sizes in bytes, 60..9216 (default "
                        + ",".join(map(str, SIZES)) + ")")
    p.add_argument("--bytes-per-size", type=int, default=40000,
                   help="send at least this many bytes (and 4 frames) per size (default 40000)")
    p.add_argument("--mixed", type=int, default=100,
                   help="random and mutated frames in the mixed-traffic row (default 100)")


def run_parser_bench(widths, sizes, bytes_per_size=40000, mixed=100):
    """Rows for every (width, size); ``widths`` run one after the other in this process."""
    rows = []
    for w in widths:
        rows += one_width((w, tuple(sizes), bytes_per_size, mixed))
    return rows


def one_width(job):
    """All sizes at one width: one simulator run; returns the rows."""
    width, sizes, min_bytes, mixed = job
    from metaroce import blocks
    from metaroce.sim import verilator as vl
    from metaroce.tb import build as tb_build
    b = tb_build.build(blocks.get("parser"), width)
    root = blocks.scratch_dir()
    with tempfile.TemporaryDirectory(dir=root, prefix=f"bench-w{width}-") as tmp:
        out = os.path.join(tmp, "rows.json")
        env = {"METAROCE_BENCH_OUT": out, "METAROCE_BENCH_SIZES": ",".join(map(str, sizes)),
               "METAROCE_BENCH_BYTES": str(min_bytes), "METAROCE_BENCH_MIXED": str(mixed),
               "COCOTB_TEST_FILTER": "parser_bench$"}
        vl.run(b, "metaroce.tb.parser", extra_env=env, seed=1, run_dir=os.path.join(tmp, "run"),
               log_file=os.path.join(tmp, "sim.log"))
        with open(out) as fh:
            res = json.load(fh)
    rows = []
    for r in res["rows"]:
        rows.append({"width": width, "packet_bytes": r["packet_bytes"],
                     "beats_per_cycle": round(r["beats_per_cycle"], 4),
                     "latency_cycles": r["latency_cycles"],
                     "first_beat_to_meta_cycles": r["first_beat_to_meta_cycles"],
                     "lockstep_cycles_per_s": round(r["lockstep_cycles_per_s"]),
                     "lockstep_cycles_per_cpu_s": round(r["lockstep_cycles_per_cpu_s"]),
                     "frames": r["frames"], "beats": r["beats"], "cycles": r["cycles"],
                     "mismatches": r["mismatches"], "problems": len(r["problems"])})
    m = res["mixed"]
    rows.append({"width": width, "packet_bytes": "mixed", "beats_per_cycle": None,
                 "latency_cycles": None, "first_beat_to_meta_cycles": None,
                 "lockstep_cycles_per_s": round(m["lockstep_cycles_per_s"]),
                 "lockstep_cycles_per_cpu_s": round(m["lockstep_cycles_per_cpu_s"]),
                 "frames": m["frames"], "beats": m["beats"], "cycles": m["sim_cycles"],
                 "mismatches": m["mismatches"], "problems": len(m["problems"])})
    return rows


def run(args, ui):
    from ..cli import CliError
    widths, sizes = widths_and_sizes(args, 60, 9216, "frame size")
    if args.bytes_per_size < 1:
        raise CliError("--bytes-per-size must be positive")
    if args.mixed < 0:
        raise CliError("--mixed must be 0 or more")
    per_width = ui.map(one_width, [(w, tuple(sizes), args.bytes_per_size, args.mixed) for w in widths],
                       label="parser widths")
    rows = [r for rs in per_width for r in rs]
    sized = [r for r in rows if r["packet_bytes"] != "mixed"]

    def plot(path):
        p = plt()
        fig, ax = p.subplots(1, 2, figsize=(11, 4))
        for w in widths:
            rs = [r for r in sized if r["width"] == w]
            xs = [r["packet_bytes"] for r in rs]
            ax[0].plot(xs, [r["beats_per_cycle"] for r in rs], marker="o", label=f"{w} bit")
            lat = [(r["packet_bytes"], r["latency_cycles"]) for r in rs if r["latency_cycles"] is not None]
            ax[1].plot([x for x, _ in lat], [y for _, y in lat], marker="o", label=f"{w} bit")
        for a, t in zip(ax, ("beats accepted per cycle", "last beat -> meta (cycles)")):
            a.set_xscale("log")
            a.set_xlabel("frame bytes")
            a.set_title(t)
            a.grid(True, alpha=0.3)
            a.legend()
        ax[0].set_ylim(0, 1.1)
        ax[1].set_ylim(bottom=0)
        fig.tight_layout()
        fig.savefig(path, dpi=110)
        p.close(fig)

    line_rate = all(r["beats_per_cycle"] == 1.0 for r in sized)
    return {
        "rows": rows,
        "title": "RX parser under Verilator (lockstep with the model), no backpressure",
        "columns": ["width", "packet_bytes", "beats_per_cycle", "latency_cycles",
                    "first_beat_to_meta_cycles", "lockstep_cycles_per_s",
                    "lockstep_cycles_per_cpu_s", "frames", "mismatches", "problems"],
        "summary": {"line_rate_everywhere": line_rate,
                    "lockstep_cycles_per_s": {w: min(r["lockstep_cycles_per_s"] for r in rows
                                                     if r["width"] == w) for w in widths},
                    "lockstep_cycles_per_cpu_s": {w: min(r["lockstep_cycles_per_cpu_s"] for r in rows
                                                         if r["width"] == w) for w in widths},
                    "max_latency_cycles": {w: max((r["latency_cycles"] for r in sized if r["width"] == w
                                                   and r["latency_cycles"] is not None), default=None)
                                           for w in widths},
                    "mismatches": sum(r["mismatches"] for r in rows),
                    "problems": sum(r["problems"] for r in rows)},
        "plot": plot,
    }
