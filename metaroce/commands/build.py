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
    p.add_argument("--json", action="store_true", help="print one JSON object")


def report(blk, width, *, target, freq=None, seed=1, out=None, kept_check=True):
    """Build ``blk`` at ``width`` for ``target``; return the ``--json`` object."""
    from ..cli import CliError
    from .verilog import make_verilog
    from metaroce.sim import fpga_build, pnr
    if target not in fpga_build.TARGETS:
        raise CliError(f"unknown target {target!r} (known: {', '.join(fpga_build.TARGETS)})")
    freq = DEFAULT_FREQ[target] if freq is None else freq
    if not freq > 0:
        raise CliError(f"--freq must be a positive number of MHz, not {freq:g}")
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
                                        keep_dir=out, kept_check=kept_check)
    except pnr.PnrError as e:
        raise CliError(str(e)) from None
    return {"block": blk.name, "width": width, **rep}


def run(args):
    from .verilog import block_and_width
    blk = block_and_width(args)
    out = report(blk, args.width, target=args.target, freq=args.freq, seed=args.seed,
                 out=args.out, kept_check=args.kept_check)
    if args.json:
        print(json.dumps(out))
        return 0
    from rich.console import Console
    from rich.table import Table
    con = Console(file=sys.stdout)
    t = Table(title=f"{blk.name} at {args.width} bits, {out['target']}")
    t.add_column("figure")
    t.add_column("value", justify="right")
    if out["target"] == "xcvu9p":
        t.add_row("LUTs / FFs", f"{out['luts']} / {out['ffs']}")
        t.add_row("BRAM36 / URAM / DSP", f"{out['brams']:g} / {out['urams']} / {out['dsps']}")
        t.add_row("LUT levels (reg to reg)", str(out["lut_levels"]))
        t.add_row("Vivado", out["vivado"])
    else:
        verdict = "met" if out["met"] else "missed"
        t.add_row("board", out["board"])
        t.add_row("Fmax (post-route)",
                  f"{out['fmax_mhz']:.2f} MHz ({verdict} {out['core_mhz']:g} MHz PLL clock)")
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
