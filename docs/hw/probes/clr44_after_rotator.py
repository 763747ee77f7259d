"""The LUT levels after the ring rotator's multipliers in a mapped ECP5 netlist of the RX
(MR-RX-333/334, issue 11; a probe, not part of the design): paths of LUT4, PFUMX, L6MUX21 and
CCU2C cells (one level each, a carry none: ``ecp5_mapped_depth.py --levels``'s count) that start
at a MULT18X18D's output, into flip-flops, block RAM and ports: the deepest and how many sink
pins sit at each depth, the sinks named. Run on the ``syn/mapped.json`` that
``rxi42_interval.py OUT 8`` leaves, before and after:

    .venv/bin/python docs/hw/probes/clr44_after_rotator.py OUT/syn/mapped.json [N]
"""
import collections
import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import ecp5_mapped_depth as dep  # noqa: E402


def after_mult(mod):
    """Each sink pin reached from a multiplier: (levels, sink type, port, net name)."""
    dep.DELAY_PS.update(dict.fromkeys(dep.DELAY_PS, 1))
    dep.CARRY_PS, dep.LEVEL_CELLS = 0, tuple(dep.DELAY_PS)
    cells, names = mod["cells"], dep.net_names(mod)
    arrival = dep.path_arrivals(cells, dep.drivers(cells), lambda b, t: 0 if t == "MULT18X18D" else None)
    out = []
    for cn, c, p, b in dep.sink_pins(cells):
        a = arrival(b)
        if a is not None and c["type"] != "MULT18X18D":
            # a flip-flop by the register it is (its Q's name), other sinks by the pin's net
            q = c["connections"].get("Q", [None])[0] if c["type"] == "TRELLIS_FF" else None
            out.append((a[1], c["type"], p, names.get(q if isinstance(q, int) else b, "")))
    return out


def main(argv):
    mod = [m for m in json.load(open(argv[1]))["modules"].values() if m.get("attributes", {}).get("top")][0]
    n = int(argv[2]) if len(argv) > 2 else 12
    sinks = sorted(after_mult(mod), reverse=True)
    print("deepest after a multiplier:", sinks[0][0] if sinks else None, "levels")
    print("sink pins by levels:", dict(sorted(collections.Counter(s[0] for s in sinks).items())))
    groups = collections.Counter((s[0], s[1], re.sub(r"\[\d+\]$", "", s[3])) for s in sinks)
    for (lv, typ, net), k in sorted(groups.items(), reverse=True)[:n]:
        print(f"{lv:3d} lv  {typ:12s} {k:5d} pins  {net[:70]}")


if __name__ == "__main__":
    dep.run(main)
