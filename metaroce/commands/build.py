"""``metaroce build [BLOCK] --target ecp5-85|xcvu9p``: a block on a real ECP5-85 board
(placed, routed, timed, bitstream) or mapped for the VU9P with an XDC and a Vivado script
(MR-FLOW-020..027)."""
import json
import sys

HELP = "build a block for an FPGA: ECP5-85 board bitstream, or VU9P resources + Vivado files"

DEFAULT_BLOCK = "parser"
DEFAULT_FREQ = {"ecp5-85": 125.0, "xcvu9p": 250.0}

def add_arguments(p):
    p.add_argument("block", nargs="?", default=DEFAULT_BLOCK,
                   help=f"block name (see metaroce/blocks.py; default {DEFAULT_BLOCK})")
    p.add_argument("--target", default="ecp5-85", metavar="TARGET",
                   help="ecp5-85 (board bitstream) or xcvu9p (resources, XDC, Vivado Tcl); "
                        "default ecp5-85")
    p.add_argument("--width", type=int, default=64, help="datapath width in bits (default 64)")
    p.add_argument("--freq", type=float, metavar="MHZ",
                   help="core clock target (default 125 for ecp5-85, 250 for xcvu9p)")
    p.add_argument("--seed", type=int, default=1, help="placer seed (ecp5-85; default 1)")
    p.add_argument("--out", metavar="DIR",
                   help="keep the run's files (Verilog, logs, report, bitstream, XDC/Tcl) in DIR")
    p.add_argument("--no-kept-check", dest="kept_check", action="store_false",
                   help="ecp5-85: skip the block-kept check (MR-FLOW-023: two extra syntheses, "
                        "the block alone and the wrapper around a stand-in); for big blocks")
    p.add_argument("--router", default=None, metavar="ROUTER",
                   help="ecp5-85: nextpnr's router, router1 or router2 (default router2; "
                        "MR-FLOW-030)")
    p.add_argument("--placer", default=None, metavar="PLACER",
                   help="ecp5-85: nextpnr's placer, heap, static or sa (default heap; "
                        "MR-FLOW-043: static placed the congested whole engine with a fifth "
                        "less wire)")
    p.add_argument("--block-ram-min-depth", type=int, default=None, metavar="ROWS",
                   help="ecp5-85: the least depth of a wide, synchronously read memory that goes "
                        "to block RAM (default 17; shallower ones go to LUT RAM; MR-FLOW-050, MR-FLOW-054)")
    p.add_argument("--stop-after", default=None, metavar="STAGE",
                   help="ecp5-85: stop after the stage synth or place and keep the run "
                        "directory, to go on later with --resume (MR-FLOW-030)")
    p.add_argument("--resume", default=None, metavar="RUN_DIR",
                   help="ecp5-85: go on with a stopped, interrupted or failed build from its "
                        "first stage not done (the run directory its report or error names)")
    p.add_argument("--timeout", type=float, default=None, metavar="SECONDS",
                   help="ecp5-85: limit of each tool's run (Yosys, nextpnr, ecppack), in seconds "
                        "(default 7,200; MR-FLOW-037)")
    p.add_argument("--json", action="store_true", help="print one JSON object")


def report(blk, width, *, target, freq=None, seed=1, out=None, kept_check=True, router=None,
           stop_after=None, resume=None, timeout=None, placer=None, block_ram_min_depth=None):
    """Build ``blk`` at ``width`` for ``target``; return the ``--json`` object."""
    from ..cli import CliError
    from .verilog import make_verilog
    from metaroce.sim import fpga_build, pnr
    if target not in fpga_build.TARGETS:
        raise CliError(f"unknown target {target!r} (known: {', '.join(fpga_build.TARGETS)})")
    freq = DEFAULT_FREQ[target] if freq is None else freq
    if not freq > 0:
        raise CliError(f"--freq must be a positive number of MHz, not {freq:g}")
    staged = {"--router": router, "--stop-after": stop_after, "--resume": resume,
              "--timeout": timeout, "--placer": placer,
              "--block-ram-min-depth": block_ram_min_depth}
    if target == "xcvu9p" and any(v is not None for v in staged.values()):
        used = [k for k, v in staged.items() if v is not None]
        raise CliError(f"{', '.join(used)} {'applies' if len(used) == 1 else 'apply'} "
                       f"to --target ecp5-85 only")
    from .pnr import DEFAULT_TIMEOUT_S, check_timeout
    timeout = DEFAULT_TIMEOUT_S if timeout is None else check_timeout(timeout)
    if router is not None and router not in fpga_build.ROUTERS:
        raise CliError(f"unknown router {router!r} (known: {', '.join(fpga_build.ROUTERS)})")
    if placer is not None and placer not in pnr.PLACERS:
        raise CliError(f"unknown placer {placer!r} (known: {', '.join(pnr.PLACERS)})")
    if block_ram_min_depth is not None:
        try:
            fpga_build.check_block_ram_min_depth(block_ram_min_depth)
        except pnr.PnrError:
            raise CliError(f"--block-ram-min-depth must be 1..65536 rows, "
                           f"not {block_ram_min_depth}") from None
    if stop_after is not None and stop_after not in fpga_build.STAGES[:-1]:
        raise CliError(f"--stop-after takes {' or '.join(fpga_build.STAGES[:-1])}, "
                       f"not {stop_after!r}")
    # the ECP5's carry chain (MR-TXS-038); Vivado's flow gets the generic form
    text = make_verilog(blk, width, for_synthesis=True,
                        platform=pnr.ECP5 if target != "xcvu9p" else None)
    try:
        if target == "xcvu9p":
            rep = fpga_build.build_xcvu9p(text, blk.name, freq_mhz=freq, keep_dir=out)
        else:
            from metaroce.hdl.board_top import block_ports
            ports = block_ports(blk.make_component(width))
            rep = fpga_build.build_ecp5(text, blk.name, ports, freq_mhz=freq, seed=seed,
                                        keep_dir=out, kept_check=kept_check,
                                        router=router or fpga_build.DEFAULT_ROUTER,
                                        stop_after=stop_after, resume=resume, timeout=timeout,
                                        placer=placer or fpga_build.DEFAULT_PLACER,
                                        block_ram_min_depth=(
                                            fpga_build.BLOCK_RAM_MIN_DEPTH
                                            if block_ram_min_depth is None
                                            else block_ram_min_depth))
    except pnr.PnrError as e:
        raise CliError(str(e)) from None
    return {"block": blk.name, "width": width, **rep,
            **({"timeout_s": timeout} if target != "xcvu9p" else {})}


def run(args):
    from .verilog import block_and_width
    blk = block_and_width(args)
    out = report(blk, args.width, target=args.target, freq=args.freq, seed=args.seed,
                 out=args.out, kept_check=args.kept_check, router=args.router,
                 stop_after=args.stop_after, resume=args.resume, timeout=args.timeout,
                 placer=args.placer, block_ram_min_depth=args.block_ram_min_depth)
    if args.json:
        print(json.dumps(out))
        return 0
    from rich.console import Console
    from rich.table import Table
    con = Console(file=sys.stdout)
    t = Table(title=f"{blk.name} at {args.width} bits, {out['target']}")
    t.add_column("figure")
    t.add_column("value", justify="right")
    if out.get("stage") in ("synth", "place"):
        t.add_row("stopped after", out["stage"])
        if out["stage"] == "place":
            est = out["placed_estimate_mhz"]
            t.add_row("Fmax (post-placement estimate)", "none" if est is None else f"{est:.2f} MHz")
            t.add_row("LUT4s / flip-flops / DP16KD", f"{out['luts']} / {out['ffs']} / {out['brams']}")
        t.add_row("go on with", f"--resume {out['run_dir']}")
    elif out["target"] == "xcvu9p":
        t.add_row("LUTs / FFs", f"{out['luts']} / {out['ffs']}")
        t.add_row("BRAM36 / URAM / DSP", f"{out['brams']:g} / {out['urams']} / {out['dsps']}")
        t.add_row("LUT levels (reg to reg)", str(out["lut_levels"]))
        t.add_row("Vivado", out["vivado"])
    else:
        verdict = "met" if out["met"] else "missed"
        t.add_row("board", out["board"])
        t.add_row("Fmax (post-route)",
                  f"{out['fmax_mhz']:.2f} MHz ({verdict} {out['core_mhz']:g} MHz PLL clock)")
        t.add_row("ABC9 delay target", f"{out['abc9_delay_ps']} ps")
        t.add_row("LUT4s (of which carry / RAM)",
                  f"{out['luts']} ({out['carry_luts']} / {out['lutram_luts']})")
        t.add_row("flip-flops / DP16KD / I/O", f"{out['ffs']} / {out['brams']} / {out['ios']}")
        if out["kept"] is None:
            t.add_row("block logic kept", "not checked (--no-kept-check)")
        else:
            kept = ", ".join(f"{k} {v:.3f}" for k, v in out["kept"].items() if v is not None)
            t.add_row("block logic kept", f"{'yes' if out['block_kept'] else 'NO'} ({kept})")
        t.add_row("bitstream", f"{out['bitstream_bytes']} bytes")
        t.add_row("run time", f"{out['seconds']['total']:g} s")
    con.print(t)
    if out["out"]:
        con.print(f"run files: {out['out']}")
    return 0
