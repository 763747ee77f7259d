"""rows43 (issue 12; not part of the design): the row scheduler's LUT levels into each field of
the row written back (``pipe.wb_row``), with the named nets on each field's deepest path, read from a netlist that
``lvl42_rows_depth.py`` kept (no Yosys run). Run from the repository root after
``lvl42_rows_depth.py [--hdl FILE] CONNSxPATHS``:

    .venv/bin/python docs/hw/probes/rows43_fields.py [--hdl FILE] [--min N] [--sink PREFIX] CONNSxPATHS [--width W]

(TAG as ``lvl42_rows_depth.py``'s: ``cur`` or FILE's name; default sink ``pipe.wb_row``, MIN
12). The mapped netlist's levels are stretched by abc's area recovery (every path up to the
deepest); ``rows43_gates.py`` shows the structure before mapping."""
import argparse
import json
import sys
from pathlib import Path

from levels_by_sink import node_depths, sink_graph
from lvl42_rows_depth import dut, field_names, load

from metaroce.hdl.tx_sched_rows import TxSchedRows
from metaroce.sim import synth as S

TOP = "tx_sched_rows"


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("inst", nargs="?", default="64x8")
    ap.add_argument("--width", type=int, default=512)
    ap.add_argument("--min", type=int, default=12)
    ap.add_argument("--hdl", type=Path)
    ap.add_argument("--sink", action="append")
    args = ap.parse_args(argv)
    cls = load(args.hdl) if args.hdl else TxSchedRows
    tag = args.hdl.stem if args.hdl else "cur"
    c, p = map(int, args.inst.split("x"))
    work = S.default_work_root() / f"lvl42-rows-{tag}-{args.inst}-w{args.width}"
    mod = json.loads((work / "levels.json").read_text())["modules"][TOP]
    d = dut(cls, c, p, args.width, False)
    fields = {"pipe.wb_row": field_names(d.rl.row)}
    names = S._bit_names(mod)
    nodes, sinks = sink_graph(mod)
    driver, depth, parent = node_depths(nodes)

    def path(b):
        out = []
        while isinstance(b, int) and b in driver:
            n = names.get(b)
            if n and not n.startswith("$abc"):
                out.append(n)
            b = parent[driver[b]]
        out.append(names.get(b, "?") if isinstance(b, int) else "const")
        return out[::-1]

    best = {}
    for b, label in sinks:
        for pre in args.sink or fields:
            if label.startswith(pre + "["):
                i = int(label[len(pre) + 1:-1])
                f = fields.get(pre, [])
                key = (pre, f[i] if i < len(f) else str(i))
                v = depth[driver[b]] if b in driver else 0
                if v > best.get(key, (-1, None))[0]:
                    best[key] = (v, b)
    for (pre, f), (v, b) in sorted(best.items(), key=lambda kv: -kv[1][0]):
        if v >= args.min:
            print(v, pre, f, "  <-  ", " > ".join(path(b)))


if __name__ == "__main__":
    main(sys.argv[1:])
