"""rows43 (issue 12; not part of the design): the row scheduler's structural depth before LUT
mapping: ``metaroce synth``'s levels flow up to ``techmap; opt -fast`` (no ``abc``: every fine
gate one level, names kept), the deepest gate paths into each group of sinks with the named
nets they pass, to find which logic the LUT levels' deepest path is (abc's area recovery
stretches every path of the mapped netlist to the deepest, so the mapped netlist does not say).
Run from the repository root:

    .venv/bin/python docs/hw/probes/rows43_gates.py [--hdl FILE] [--min N] [--reuse] [CONNSxPATHS]

(default 64x8, MIN 30 gate levels; ``--hdl`` as ``lvl42_rows_depth.py``'s; the netlist in
~/.cache/metaroce/synth/rows43-gates-TAG-CONNSxPATHS)."""
import argparse
import json
import re
import sys
from pathlib import Path

from levels_by_sink import node_depths, sink_graph
from lvl42_rows_depth import TOP, dut, load

from metaroce.hdl.tx_sched_rows import TxSchedRows
from metaroce.sim import synth as S
from metaroce.sim.verilator import generate_rtlil


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("inst", nargs="?", default="64x8")
    ap.add_argument("--width", type=int, default=512)
    ap.add_argument("--min", type=int, default=30)
    ap.add_argument("--hdl", type=Path)
    ap.add_argument("--reuse", action="store_true")
    args = ap.parse_args(argv)
    cls = load(args.hdl) if args.hdl else TxSchedRows
    tag = args.hdl.stem if args.hdl else "cur"
    c, p = map(int, args.inst.split("x"))
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
        out, last = [], None
        while isinstance(b, int) and b in driver:
            n = names.get(b)
            if n and not n.startswith("$") and re.sub(r"\[\d+\]$", "", n) != last:
                out.append(f"{n}@{depth[driver[b]]}")
                last = re.sub(r"\[\d+\]$", "", n)
            b = parent[driver[b]]
        out.append(names.get(b, "?") if isinstance(b, int) else "const")
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
