"""rows43 (issue 12; not part of the design): the row scheduler's structural depth before LUT
mapping: ``metaroce synth``'s levels flow up to ``techmap; opt -fast`` (no ``abc``: every fine
gate one level, names kept), the deepest gate paths into each group of sinks with the named
nets they pass, to find which logic the LUT levels' deepest path is (abc's area recovery
stretches every path of the mapped netlist to the deepest, so the mapped netlist does not say).
Run from the repository root:

    .venv/bin/python docs/hw/probes/rows43_gates.py [--hdl FILE] [--min N] [--reuse] [CONNSxPATHS]

(default 64x8, MIN 30 gate levels; ``--hdl`` as ``lvl42_rows_depth.py``'s; the netlist in
~/.cache/metaroce/synth/rows43-gates-TAG-CONNSxPATHS)."""
import json
import re
import sys

from levels_by_sink import back_chain, node_depths, sink_graph
from lvl42_rows_depth import TOP, dut, rows_probe_args

from metaroce.sim import synth as S
from metaroce.sim.verilator import generate_rtlil


def main(argv):
    args, cls, tag, c, p = rows_probe_args(argv, __doc__, [
        ("--min", dict(type=int, default=30)), ("--reuse", dict(action="store_true"))])
    work = S.default_work_root() / f"rows43-gates-{tag}-{args.inst}"
    if not (args.reuse and (work / "levels.json").exists()):
        text = generate_rtlil(dut(cls, c, p, args.width, False), TOP, drop_zero_init=True)
        script = (S.levels_script(TOP, "rtlil").replace("abc -lut 6\n", "")
                  .replace("delete t:$mem_v2\n", "").replace("tee -q -o ltp.txt ltp -noff\n", ""))
        proc = S._run_yosys(S.yosys_command(), work, text, "levels.ys", script, 3600, "rtlil")
        if proc.returncode != 0:
            sys.exit(proc.stderr[-2000:])
    mod = json.loads((work / "levels.json").read_text())["modules"][TOP]
    names = S._bit_names(mod)
    nodes, sinks = sink_graph(mod)
    driver, depth, parent = node_depths(nodes)

    def path(b):
        bits, src = back_chain(b, driver, parent)
        out, last = [], None
        for x in bits:     # one entry a signal, with its depth
            n = names.get(x)
            if n and not n.startswith("$") and re.sub(r"\[\d+\]$", "", n) != last:
                out.append(f"{n}@{depth[driver[x]]}")
                last = re.sub(r"\[\d+\]$", "", n)
        out.append(names.get(src, "?") if isinstance(src, int) else "const")
        return out[::-1]

    groups = {}
    for b, label in sinks:
        v = depth[driver[b]] if b in driver else 0
        g = re.sub(r"\[\d+\]$", "", label)
        if v > groups.get(g, (-1, None))[0]:
            groups[g] = (v, b)
    for g, (v, b) in sorted(groups.items(), key=lambda kv: -kv[1][0]):
        if v >= args.min:
            print(v, g, "  <-  ", " > ".join(path(b)), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
