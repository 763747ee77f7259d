"""The deepest paths of a mapped ECP5 netlist from chosen registers only (not part of the design):
as ``ecp5_mapped_paths.py`` (cell delays, no wire delay), but a path starts only at a flip-flop
whose output net's name matches START (a regular expression), so the depth of one loop shows
(rxt36: from S5's registers into S4's path row, MR-RX-293). Prints, per sink register matching
SINK (first sink bit of each), the arrival, the LUT4/CCU2C levels and the path back to its start.

    .venv/bin/python docs/hw/probes/ecp5_mapped_from.py DIR/mapped.json START SINK [N]
"""
import json
import re

from ecp5_mapped_depth import drivers, net_names, path_arrivals, run, sink_pins
from ecp5_mapped_paths import trace


def main(argv):
    d = json.load(open(argv[1]))
    start_re, sink_re = re.compile(argv[2]), re.compile(argv[3])
    n = int(argv[4]) if len(argv) > 4 else 10
    top = [m for m in d["modules"].values() if m.get("attributes", {}).get("top")][0]
    cells, names = top["cells"], net_names(top, prefer_named=False)
    driver = drivers(cells)

    def start(b, t):
        return 0 if t == "TRELLIS_FF" and start_re.match(names.get(b, "")) else None
    arrival = path_arrivals(cells, driver, start)
    sinks = []
    for cn, c, p, b in sink_pins(cells):
        if c["type"] == "TRELLIS_FF" and sink_re.match(cn):
            a = arrival(b)
            if a is not None:
                sinks.append((a[:2], cn, p, b))
    sinks.sort(key=lambda s: s[0], reverse=True)
    print(f"{len(sinks)} sink pins of {argv[3]!r} reached from {argv[2]!r}")
    seen = set()
    for (ps, lv), cn, p, b in sinks:
        reg = cn.split("_TRELLIS")[0]
        if reg in seen:
            continue
        seen.add(reg)
        path = trace(b, arrival, cells, driver, names)
        print(f"{ps:6d} ps {lv:3d} lv  {p}  {reg[:50]}  from {path[-1]}")
        print("    " + " <- ".join(dict.fromkeys(path)))
        if len(seen) >= n:
            break


if __name__ == "__main__":
    run(main)
