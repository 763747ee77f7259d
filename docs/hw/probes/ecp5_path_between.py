"""The deepest mapped path between two groups of registers of an ECP5 netlist (tsc34, issue 12;
not part of the design): reads a ``mapped.json`` (``metaroce pnr ... --out DIR`` keeps one;
``tx_sched_ecp5_map.py`` writes the scheduler's) and, with ``ecp5_mapped_depth.py``'s cell
delays (no wires: a ranking), prints for each sink register bit whose name matches SINK the
slowest path from a register whose Q net matches SOURCE, cell by cell (type, input pin, output
net), the deepest first. Names are Yosys's (``sched.`` in the block ``tx``).

    .venv/bin/python docs/hw/probes/ecp5_path_between.py DIR/mapped.json SOURCE SINK [N]

SOURCE and SINK are regular expressions searched in net names (``'^lq_e'``, ``'rq0_chunk'``).
"""
import json
import re

from ecp5_mapped_depth import DELAY_PS, drivers, path_arrivals, run


def main(argv):
    d = json.load(open(argv[1]))
    src_re, sink_re = re.compile(argv[2]), re.compile(argv[3])
    n = int(argv[4]) if len(argv) > 4 else 5
    mod = [m for m in d["modules"].values() if m.get("attributes", {}).get("top")][0]
    cells = mod["cells"]
    aliases = {}
    for nm, net in mod["netnames"].items():
        for i, b in enumerate(net["bits"]):
            if isinstance(b, int):
                aliases.setdefault(b, []).append(nm if len(net["bits"]) == 1 else f"{nm}[{i}]")
    # every alias is matched; the shortest one without a '$' is shown
    names = {b: " ".join(sorted(v, key=lambda k: (k.lstrip("\\").startswith("$"), len(k)))) for b, v in aliases.items()}
    # a path starts only at a SOURCE register's output
    arrival = path_arrivals(cells, drivers(cells),
                            lambda b, t: 0 if t is not None and src_re.search(names.get(b, "")) else None)

    sinks = []
    for cn, c in cells.items():
        if c["type"] in DELAY_PS:
            continue
        qn = " ".join(names.get(b, "") for p, bits in c["connections"].items()
                      if c["port_directions"].get(p) == "output" for b in bits if isinstance(b, int))
        if not sink_re.search(qn) and not sink_re.search(cn):
            continue
        for p, bits in c["connections"].items():
            if c["port_directions"].get(p) != "input" or p.startswith("CLK"):
                continue
            for b in bits:
                if isinstance(b, int):
                    a = arrival(b)
                    if a is not None:
                        sinks.append((a[:2], qn or cn, p, b))
    sinks.sort(reverse=True)
    print(f"{len(sinks)} sink pins reached from {argv[2]!r}")
    for (ps, lv), qn, p, b in sinks[:n]:
        print(f"== {ps} ps, {lv} levels -> {qn.split()[0][:70]}.{p}")
        chain = []
        while b is not None and arrival(b) is not None:
            a = arrival(b)
            chain.append(f"   {a[3]:>10}.{a[4] or 'Q':<4} -> {names.get(b, '?').split()[0][:80]}")
            b = a[2]
        for line in reversed(chain):
            print(line)


if __name__ == "__main__":
    run(main)
