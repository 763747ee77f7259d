"""rowlvl47 (issue 12; not part of the design): the schedule op's decision (``TxSchedRows.
_sched_terms``, S1's cone into ``s2_pre``) alone between registers, as ``rows43_cone.py``
builds it, with the LUT levels into each field of the decision record and the row field the
deepest path of each starts at (``abc -lut 6``, ``metaroce synth``'s levels flow). Run from the
repository root:

    .venv/bin/python docs/hw/probes/rowlvl_cone_47.py [--hdl FILE] [--min N] [--gates] [CONNSxPATHS]

(default 64x8, MIN 8; ``--hdl`` as ``lvl42_rows_depth.py``'s; ``--gates``: the flow without
``abc`` (fine gates, names kept, as ``rows43_gates.py``), each field's deepest path with the
named nets it passes; the netlist in ~/.cache/metaroce/synth/rowlvl47-cone-TAG-CONNSxPATHS)."""
import json
import re
import sys

from levels_by_sink import back_chain, node_depths, sink_graph
from lvl42_rows_depth import dut, field_names, rows_probe_args
from rows43_cone import TOP, Cone

from metaroce.sim import synth as S
from metaroce.sim.verilator import generate_rtlil


def main(argv):
    args, cls, tag, c, p = rows_probe_args(argv, __doc__, [("--min", dict(type=int, default=8)),
                                                              ("--gates", dict(action="store_true"))])
    d = dut(cls, c, p, args.width, False)
    d._MustUse__silence = True
    work = S.default_work_root() / f"rowlvl47-cone-{tag}-{args.inst}{'-gates' if args.gates else ''}"
    text = generate_rtlil(Cone(d), TOP, drop_zero_init=True)
    script = S.levels_script(TOP, "rtlil")
    if args.gates:
        script = script.replace("abc -lut 6\n", "")
    proc = S._run_yosys(S.yosys_command(), work, text, "levels.ys", script, 3600, "rtlil")
    if proc.returncode != 0:
        sys.exit(proc.stderr[-2000:])
    netlist = json.loads((work / "levels.json").read_text())
    rep = S.analyse_levels(netlist, TOP)
    print(json.dumps({"inst": args.inst, "tag": tag, "reg_to_reg": rep.reg_to_reg,
                      "luts": rep.luts}))
    mod = netlist["modules"][TOP]
    names = S._bit_names(mod)
    nodes, sinks = sink_graph(mod)
    driver, depth, parent = node_depths(nodes)
    out_f = field_names(d._sched_layout())
    row_f = field_names(d.rl.row)
    # the row register's bits by their net (row[i]) -> the row's field
    best = {}
    for b, label in sinks:
        if not label.startswith("pre[") or b not in driver:
            continue
        f = out_f[int(label[4:-1])]
        v = depth[driver[b]]
        if v > best.get(f, (-1,))[0]:
            bits, src = back_chain(b, driver, parent)
            sname = names.get(src, "?") if isinstance(src, int) else "const"
            hit = re.match(r"row(\$\d+)?\[(\d+)\]$", sname)
            if hit:
                sname = f"{sname} {row_f[int(hit.group(2))]}"
            if args.gates:      # the named nets passed, with their depths
                named = [f"{names[x]}@{depth[driver[x]]}" for x in bits
                         if names.get(x) and not names[x].startswith("$")]
                sname += " > " + " > ".join(named[::-1])
            best[f] = (v, sname)
    for f, (v, src) in sorted(best.items(), key=lambda kv: -kv[1][0]):
        if v >= args.min:
            print(v, f, "<-", src)


if __name__ == "__main__":
    main(sys.argv[1:])
