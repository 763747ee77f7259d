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
import sys

from ecp5_mapped_depth import CARRY_PS, DELAY_PS, LEVEL_CELLS


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
    driver = {}
    for cn, c in cells.items():
        for p, bits in c["connections"].items():
            if c["port_directions"].get(p) == "output":
                for b in bits:
                    if isinstance(b, int):
                        driver[b] = (cn, p)
    arr = {}

    def arrival(b):
        """(ps, levels, previous bit, cell type, pin) of the slowest path from a SOURCE
        register to bit b, or None when none reaches it."""
        if b in arr:
            return arr[b]
        arr[b] = None
        dv = driver.get(b)
        if dv is None:
            return None
        cn, _ = dv
        c = cells[cn]
        t = c["type"]
        if t not in DELAY_PS:
            res = (0, 0, None, t, "Q") if src_re.search(names.get(b, "")) else None
            arr[b] = res
            return res
        best = None
        for p, bits in c["connections"].items():
            if c["port_directions"].get(p) != "input":
                continue
            carry = t == "CCU2C" and p == "CIN"
            for ib in bits:
                if not isinstance(ib, int):
                    continue
                a = arrival(ib)
                if a is None:
                    continue
                cand = (a[0] + (CARRY_PS if carry else DELAY_PS[t]),
                        a[1] + (0 if carry or t not in LEVEL_CELLS else 1), ib, t, p)
                if best is None or cand[:2] > best[:2]:
                    best = cand
        arr[b] = best
        return best

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
        while b is not None and arr.get(b) is not None:
            a = arr[b]
            chain.append(f"   {a[3]:>10}.{a[4]:<4} -> {names.get(b, '?').split()[0][:80]}")
            b = a[2]
        for line in reversed(chain):
            print(line)


if __name__ == "__main__":
    import threading
    sys.setrecursionlimit(1_000_000)
    threading.stack_size(512 * 1024 * 1024)
    th = threading.Thread(target=main, args=(sys.argv,))
    th.start()
    th.join()
