"""rows43 (issue 12; not part of the design): the row scheduler's LUT levels into each field of
the row written back (``pipe.wb_row``), with the named nets on each field's deepest path, read from a netlist that
``lvl42_rows_depth.py`` kept (no Yosys run). Run from the repository root after
``lvl42_rows_depth.py [--hdl FILE] CONNSxPATHS``:

    .venv/bin/python docs/hw/probes/rows43_fields.py [--hdl FILE] [--min N] [--sink PREFIX] CONNSxPATHS [--width W]

(TAG as ``lvl42_rows_depth.py``'s: ``cur`` or FILE's name; default sink ``pipe.wb_row``, MIN
12). The mapped netlist's levels are stretched by abc's area recovery (every path up to the
deepest); ``rows43_gates.py`` shows the structure before mapping."""
import json
import sys

from levels_by_sink import back_chain, node_depths, sink_graph
from lvl42_rows_depth import dut, field_names, rows_probe_args

from metaroce.sim import synth as S

TOP = "tx_sched_rows"


def main(argv):
    args, cls, tag, c, p = rows_probe_args(argv, __doc__, [
        ("--min", dict(type=int, default=12)), ("--sink", dict(action="append"))])
    work = S.default_work_root() / f"lvl42-rows-{tag}-{args.inst}-w{args.width}"
    mod = json.loads((work / "levels.json").read_text())["modules"][TOP]
    d = dut(cls, c, p, args.width, False)
    fields = {"pipe.wb_row": field_names(d.rl.row)}
    names = S._bit_names(mod)
    nodes, sinks = sink_graph(mod)
    driver, depth, parent = node_depths(nodes)

    def path(b):
        bits, src = back_chain(b, driver, parent)
        out = [n for n in map(names.get, bits) if n and not n.startswith("$abc")]
        out.append(names.get(src, "?") if isinstance(src, int) else "const")
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
