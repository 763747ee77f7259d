"""``bench tx``: the joined TX engine (small instance) in lockstep with its cycle model
(docs/spec/hw-tx.md, MR-TX-153).

Per width and payload size, two runs without idle cycles or backpressure, an AXI read latency
of one cycle: ``n`` one-packet WRITE work requests of one connection and stream posted back
to back, every frame ACKed by a lossless receiver as soon as it is out (the scheduler rotates
the packets over the paths: ``same_path_burst`` is 1); ``packets_per_cycle`` and
``beats_per_cycle`` are frames and beats on ``m_axis`` / cycles from the first beat to the last
(1.0 beats per cycle: line rate); ``latency_cycles`` the least cycles from a work request taken
to its frame's first beat. Then the same frames without ACKs and one cumulative ACK per frame
offered back to back: ``acks_per_cycle`` is those ACKs / cycles from the first taken to the
last (MR-TX-034: one per cycle in bursts of 16). ``lockstep_cycles_per_s`` is the speed of the
first run (RTL and model stepped, every output compared, per wall second); ``mismatches`` must
be 0. ``--sim``: ``amaranth`` (default: the Amaranth simulator), ``verilator`` (the cocotb
testbench tb/tx.py on the cached build) or ``model`` (the cycle model alone: no RTL, no
mismatch count).
"""
from __future__ import annotations

import time

from ._common import model_or_amaranth, verilator_rows, widths_and_sizes

HELP = "TX engine (joined, small instance): packets/beats per cycle, ACKs per cycle, latency"



def add_arguments(p):
    p.add_argument("--widths", default="64,512", help="comma-separated widths (default 64,512)")
    p.add_argument("--sizes", default="256", help="payload bytes per packet, 1..1024 (default 256;"
                                                  " the small instance's MTU is 1,024)")
    p.add_argument("--packets", type=int, default=32, help="work requests per run (default 32)")
    p.add_argument("--sim", default="amaranth", choices=("amaranth", "verilator", "model"),
                   help="simulator of the RTL (default amaranth)")


def measure(width, nbytes, packets, sim):
    """One row (MR-TX-153) with the RTL in ``sim`` (or the model alone)."""
    from metaroce.models import tx_cases as xc
    from metaroce.hdl.tx import tx_small
    from metaroce.models.tx import SMALL, TxCycleModel
    rows = {}
    for kind, cls in (("run", xc.BenchDriver), ("acks", xc.AckBurstDriver)):
        model = TxCycleModel(width, **SMALL)
        drv = cls(model.lay, width, packets, nbytes, paths=SMALL["paths"])
        t0 = time.perf_counter()
        mism = model_or_amaranth(model, drv, sim, lambda: tx_small(width), model.busy)
        wall = time.perf_counter() - t0
        rows[kind] = (drv.row(width, nbytes), drv.cycle, wall, mism)
    r, cycles, wall, mism = rows["run"]
    a, _, _, mism2 = rows["acks"]
    return {"width": width, "connections": SMALL["conns"], "paths": SMALL["paths"],
            "pkt_bytes": nbytes, "same_path_burst": 1, "packets": r["packets"],
            "packets_per_cycle": r["packets_per_cycle"], "beats_per_cycle": r["beats_per_cycle"],
            "latency_cycles": r["latency_cycles"], "acks_per_cycle": a["acks_per_cycle"],
            "lockstep_cycles_per_s": round(cycles / wall) if wall and sim != "model" else None,
            "mismatches": None if mism is None else mism + mism2, "sim": sim}


def one_run(job):
    width, sizes, packets, sim = job
    if sim == "verilator":
        return verilator_rows("tx", width, "tx_bench", {
            "TX_BENCH_BYTES": ",".join(map(str, sizes)), "TX_BENCH_PACKETS": str(packets)},
            out_var="TX_BENCH_OUT")
    return [measure(width, s, packets, sim) for s in sizes]


def run(args, ui):
    from ..cli import CliError
    widths, sizes = widths_and_sizes(args, 1, 1024, "payload size")
    if not 2 <= args.packets <= 64:
        raise CliError("--packets must be in 2..64")
    jobs = [(w, tuple(sizes), args.packets, args.sim) for w in widths]
    rows = [r for rs in ui.map(one_run, jobs, label="tx runs") for r in rs]
    return {
        "rows": rows,
        "title": (f"TX engine, small instance ({args.sim}, in lockstep with the model)"
                  if args.sim != "model" else "TX engine, small instance (the cycle model alone)")
                 + ": back-to-back one-packet writes, no backpressure",
        "columns": ["width", "connections", "paths", "pkt_bytes", "same_path_burst",
                    "packets_per_cycle", "beats_per_cycle", "latency_cycles", "acks_per_cycle",
                    "lockstep_cycles_per_s", "mismatches"],
        "summary": {"mismatches": None if args.sim == "model" else sum(r["mismatches"] for r in rows),
                    "line_rate": all(r["beats_per_cycle"] == 1.0 for r in rows)},
    }
