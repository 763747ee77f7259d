"""lvl48: the control path's cost and depth for any version of hdl/cwnd.py (docs/spec/hw-cwnd.md
MR-CW-153): ``metaroce synth``'s report (synth_xilinx xcup, 64 bits, the generic 6-LUT levels
flow) of ``CwndControl`` 2 x 4 with its own band unit and with the band from a port (as
``cwnd_control_synth_47.py``), built from FILE (``git show REV:hdl/cwnd.py > FILE``; loaded
beside this tree's hdl) or this tree's; ``--by-sink``: the band-port block's levels into each
group of sinks (``levels_by_sink``'s reading, memories kept; the netlist in
~/.cache/metaroce/synth/lvl48-cwsink-TAG). Run from the repository root:

    nice -n 10 .venv/bin/python docs/hw/probes/cwnd_control_synth_48.py [--hdl FILE] [--by-sink [MIN]]
"""
import argparse
import importlib
import json
import sys
import types
from pathlib import Path

from levels_by_sink import deepest_by_group

from metaroce.blocks import Block
from metaroce.commands.synth import report
from metaroce.sim import synth as S
from metaroce.sim.verilator import generate_rtlil


def load(path):
    """hdl/cwnd.py from ``path`` as ``metaroce.hdl._cwnd_other`` (its relative imports this
    tree's)."""
    importlib.import_module("metaroce.hdl.cwnd")    # the package's modules loaded first
    mod = types.ModuleType("metaroce.hdl._cwnd_other")
    mod.__package__ = "metaroce.hdl"
    sys.modules[mod.__name__] = mod
    with open(path) as f:
        exec(compile(f.read(), str(path), "exec", dont_inherit=True), mod.__dict__)
    return mod


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hdl", type=Path)
    ap.add_argument("--by-sink", nargs="?", type=int, const=11, default=None)
    args = ap.parse_args(argv)
    modname = "metaroce.hdl.cwnd"
    if args.hdl:
        mod = load(args.hdl)
        modname = mod.__name__
    else:
        import metaroce.hdl.cwnd as mod
    if args.by_sink is not None:
        top = "cwnd_control"
        work = S.default_work_root() / f"lvl48-cwsink-{args.hdl.stem if args.hdl else 'cur'}"
        text = generate_rtlil(mod.CwndControl(conns=2, paths=4, band_port=True), top,
                              drop_zero_init=True)
        script = (S.levels_script(top, "rtlil").replace("delete t:$mem_v2\n", "")
                  .replace("tee -q -o ltp.txt ltp -noff\n", ""))
        proc = S._run_yosys(S.yosys_command(), work, text, "levels.ys", script, 7200, "rtlil")
        if proc.returncode != 0:
            sys.exit(proc.stderr[-2000:])
        netlist = json.loads((work / "levels.json").read_text())
        rep = S.analyse_levels(netlist, top)
        print("reg_to_reg", rep.reg_to_reg, "in_to_reg", rep.in_to_reg, "generic_luts", rep.luts)
        found = deepest_by_group(netlist["modules"][top])
        for g, (v, p) in sorted(found.items(), key=lambda kv: (-kv[1][0], kv[0])):
            if v >= args.by_sink:
                print(v, g, " <- ", " > ".join(p))
        return
    for name, comp in (("cwnd_control", "cwnd_control_small"),
                       ("cwnd_control_band_port", "cwnd_control_band_port_small")):
        b = Block(name=name, component=f"{modname}:{comp}",
                  model="metaroce.models.cwnd_control:cwnd_control_model_small",
                  tb="metaroce.tb.cwnd", help="", widths=(64,))
        r = report(b, 64)
        out = {k: r[k] for k in ("block", "luts", "lutram", "ffs", "dsps", "lut_levels",
                                 "seconds", "cached")}
        out["paths"] = r["lut_levels_paths"]
        out["path"] = r["lut_levels_path"]
        print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
