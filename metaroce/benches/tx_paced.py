"""``bench tx_paced``: the paced TX engine (block ``tx_paced``, small instance) in lockstep with
its cycle model: how a connection's pacing rate spaces its frames on ``m_axis``
(docs/spec/hw-tx.md MR-TX-250).

Per width and rate, one run without idle cycles or backpressure, an AXI read latency of one
cycle, every frame ACKed at once (``bench tx``'s, MR-TX-153): ``packets`` one-packet full-MTU
WRITE work requests of connection 0, which is opened at the rate (Mb/s of a 400 Gb/s line; 0:
the line rate, not paced). ``gap_ns`` is the pacer's kept gap for the frame's wire length at that
rate; ``spacing_ns`` (mean) and ``min_spacing_ns`` the frames' first beat to first beat from the
second frame on, at 4 ns a cycle; ``achieved_mbps`` the wire rate of the mean spacing. Paced,
the spacing is the gap rounded up to whole cycles plus the join's few cycles (MR-TXS-163), never
less than the gap (``summary.not_early``); at the line rate it is the data path's time for a
frame. ``--sim``: ``amaranth`` (default), ``verilator`` (tb/tx_paced.py on the cached build) or
``model`` (the cycle model alone: no RTL, no mismatch count).
"""
from __future__ import annotations

import time

from ._common import check_widths, model_or_amaranth, parse_list, verilator_rows

HELP = "TX engine with pacing (small instance): frame spacing on m_axis per pacing rate"


def add_arguments(p):
    p.add_argument("--widths", default="64", help="comma-separated widths (default 64)")
    p.add_argument("--rates", default="5000,10000,0",
                   help="connection 0's pacing rates in Mb/s, 0 the line rate (default "
                        "5000,10000,0)")
    p.add_argument("--packets", type=int, default=8, help="work requests per run (default 8)")
    p.add_argument("--wr-bytes", type=int, default=1024,
                   help="bytes per work request, 1..4096 (default 1,024: one full-MTU packet; "
                        "more: a full packet and a shorter last one, which today is not "
                        "charged, hw-tx-sched.md MR-TXS-161)")
    p.add_argument("--sim", default="amaranth", choices=("amaranth", "verilator", "model"),
                   help="simulator of the RTL (default amaranth)")


def driver(lay, width, packets, rate, wr_bytes=None):
    from metaroce.models import tx_pace_cases as pc
    from metaroce.models.tx import SMALL
    return pc.PacedBenchDriver(lay, width, packets, rate, mtu=SMALL["mtu"], paths=SMALL["paths"],
                               nbytes=wr_bytes)


def row(drv, width, rate, cycles, wall, mismatches, sim):
    from metaroce.models import tx_pace_cases as pc
    from metaroce.models.tx import SMALL
    return pc.bench_row(drv, width, rate, SMALL["mtu"], cycles, wall, mismatches, sim)


def measure(width, rate, packets, sim, wr_bytes=None):
    """One row (MR-TX-250) with the RTL in ``sim`` (or the model alone)."""
    from metaroce.hdl.tx import tx_paced_small
    from metaroce.models.tx import SMALL, TxCycleModel
    model = TxCycleModel(width, **SMALL, pacing=True)
    drv = driver(model.lay, width, packets, rate, wr_bytes)
    t0 = time.perf_counter()
    mism = model_or_amaranth(model, drv, sim, lambda: tx_paced_small(width), model.active)
    return row(drv, width, rate, drv.cycle, time.perf_counter() - t0, mism, sim)


def one_run(job):
    width, rates, packets, sim, wr_bytes = job
    if sim == "verilator":          # one simulation a rate (tb/tx_paced.py)
        return [r for rate in rates for r in verilator_rows("tx_paced", width, "tx_paced_bench", {
            "TXP_BENCH_RATE": str(rate), "TXP_BENCH_PACKETS": str(packets),
            "TXP_BENCH_BYTES": str(wr_bytes)}, out_var="TXP_BENCH_OUT")]
    return [measure(width, r, packets, sim, wr_bytes) for r in rates]


def run(args, ui):
    from ..cli import CliError
    try:
        widths, rates = parse_list(args.widths, int), parse_list(args.rates, int)
    except ValueError as e:
        raise CliError(str(e)) from None
    check_widths(widths)
    for r in rates:
        if not 0 <= r < 1 << 19:
            raise CliError(f"rate {r} outside 0..{(1 << 19) - 1} Mb/s")
    if not 3 <= args.packets <= 32:
        raise CliError("--packets must be in 3..32")
    if not 1 <= args.wr_bytes <= 4096:
        raise CliError("--wr-bytes must be in 1..4096")
    jobs = [(w, tuple(rates), args.packets, args.sim, args.wr_bytes) for w in widths]
    rows = [r for rs in ui.map(one_run, jobs, label="tx_paced runs") for r in rs]
    # full-MTU frames only: a shorter last packet goes uncharged (MR-TXS-161), its frame at the
    # data path's spacing
    paced = [r for r in rows if r["gap_ns"] and r["wr_bytes"] == 1024]
    return {
        "rows": rows,
        "title": (f"TX engine with pacing, small instance ({args.sim}"
                  + (", in lockstep with the model)" if args.sim != "model" else ", the model alone)")
                  + ": connection 0's full-MTU writes, no backpressure"),
        "columns": ["width", "rate_mbps", "wr_bytes", "gap_ns", "packets", "spacing_ns", "min_spacing_ns",
                    "achieved_mbps", "lockstep_cycles_per_s", "mismatches"],
        "summary": {"mismatches": None if args.sim == "model" else sum(r["mismatches"] for r in rows),
                    "not_early": all(r["min_spacing_ns"] >= r["gap_ns"] for r in paced)},
    }
