"""The slowest register and block-RAM paths of an ECP5 netlist as ``synth_ecp5`` mapped it, with
the path into each (not part of the design). As ``ecp5_mapped_depth.py`` (the same cell delays,
no wire delay: a ranking, not a timing), but a block RAM's output starts at its clock-to-out
(4,260 ps, the results pages' routed paths) and a flip-flop's at 0, so the paths that start at a
table's read data rank as the routed ones did (session 29: the message table's read data into
S4's decision registers). Prints the sinks' arrival histogram and, per register (first sink of
each), the arrival, the LUT4/CCU2C levels and the path back to its start.

    .venv/bin/python docs/hw/probes/ecp5_mapped_paths.py DIR/mapped.json [N]
"""
import collections
import json

from ecp5_mapped_depth import drivers, net_names, path_arrivals, run, sink_pins

EBR_CLK_TO_OUT_PS = 4260


def trace(bit, arrival, cells, driver, names):
    """The worst path into ``bit``, sink first: each net's name and its driver's cell type."""
    path = []
    while bit is not None:
        path.append(f"{names.get(bit, '?')[:48]}<{cells[driver[bit]]['type'] if bit in driver else '-'}>")
        a = arrival(bit)
        bit = a[2] if a is not None else None
    return path


def main(argv):
    d = json.load(open(argv[1]))
    n = int(argv[2]) if len(argv) > 2 else 15
    top = [m for m in d["modules"].values() if m.get("attributes", {}).get("top")][0]
    cells, names = top["cells"], net_names(top, prefer_named=False)
    driver = drivers(cells)
    arrival = path_arrivals(cells, driver, lambda b, t: EBR_CLK_TO_OUT_PS if t == "DP16KD" else 0)
    sinks = [((arrival(b) or (0, 0))[:2], c["type"], cn, p, b) for cn, c, p, b in sink_pins(cells)]
    sinks.sort(key=lambda s: s[0], reverse=True)
    hist = collections.Counter(s[0][0] // 500 * 500 for s in sinks)
    print("sinks by arrival (ps, 500 ps buckets):", dict(sorted(hist.items())))
    seen = set()
    for (ps, lv), typ, cn, p, b in sinks:
        reg = cn.split("_TRELLIS")[0]
        if reg in seen:
            continue
        seen.add(reg)
        path = trace(b, arrival, cells, driver, names)
        start = path[-1]
        print(f"{ps:6d} ps {lv:3d} lv  {typ}.{p}  {reg[:50]}  from {start}")
        print("    " + " <- ".join(dict.fromkeys(path)))
        if len(seen) >= n:
            break


if __name__ == "__main__":
    run(main)
