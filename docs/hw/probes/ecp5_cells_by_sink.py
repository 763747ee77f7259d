"""Area probe, not part of the design: where two ECP5 netlists of a block differ. Each logic
cell (LUT4, PFUMX, L6MUX21, CCU2C) of Yosys's ``mapped.json`` (``metaroce pnr BLOCK --out DIR``
keeps it) is attributed to the registers its output reaches through logic cells only (their
names with indices replaced by ``#``; a clock enable or reset input marked ``.CE``/``.LSR``; a
memory or port by its type); the cells are counted per set of registers, and the sets whose
count changed most between the two netlists are printed. A cell shared by several registers is
counted once, under the set of them. Run from the repository root:

    .venv/bin/python docs/hw/probes/ecp5_cells_by_sink.py TOP BEFORE/mapped.json AFTER/mapped.json [--top N]

``TOP`` is the block's module (``tx_sched``, ``tx``: its blocks' cells carry their instance
names, ``sched.``, ``rtx.``)."""
import argparse
import json
import re
import sys
from collections import Counter, defaultdict

LOGIC = ("LUT4", "PFUMX", "L6MUX21", "CCU2C")


def _kind(cell):
    return cell["type"].split("\\")[-1]


def _family(name):
    name = re.sub(r"\[\d+\]", "", name)
    name = re.sub(r"(?<=_)\d+(?=_|$)", "#", name)
    return re.sub(r"\d+$", "#", name)


def bit_names(mod):
    """Each net bit of a Yosys JSON module: ``(name, hidden)``, a visible name preferred."""
    names = {}
    for n, nn in mod["netnames"].items():
        for b in nn["bits"]:
            if isinstance(b, int) and (b not in names or (not nn.get("hide_name", 0) and names[b][1])):
                names[b] = (n, nn.get("hide_name", 0))
    return names


def bit_readers(cells):
    """Each net bit: the ``(cell, input port)`` pairs that read it."""
    readers = defaultdict(list)
    for cn, c in cells.items():
        dirs = c.get("port_directions", {})
        for p, bs in c["connections"].items():
            if dirs.get(p) != "output":
                for b in bs:
                    if isinstance(b, int):
                        readers[b].append((cn, p))
    return readers


def cells_by_sink(path, top):
    """``{set of register families: Counter of cell kinds}`` of ``top`` in ``path``."""
    mod = json.load(open(path))["modules"][top]
    names = bit_names(mod)
    cells = mod["cells"]
    readers = bit_readers(cells)
    port_of = {b: p for p, v in mod.get("ports", {}).items() for b in v["bits"] if isinstance(b, int)}
    logic = {cn for cn, c in cells.items() if _kind(c) in LOGIC}
    sinks = {}

    def own(x):
        """The registers, memories and ports ``x``'s outputs reach directly."""
        out = set()
        for b in _outputs(cells[x]):
            for r, p in readers[b]:
                if r in logic:
                    continue
                if _kind(cells[r]) == "TRELLIS_FF":
                    q = cells[r]["connections"]["Q"][0]
                    out.add(_family(names.get(q, (r, 1))[0]) + ("" if p == "DI" else "." + p))
                else:
                    out.add(f"{_kind(cells[r])}.{p}")
            if b in port_of:
                out.add("port:" + port_of[b])
        return out

    def reach(cn):
        # iterative post-order walk over the logic cells it drives (the cones are deep)
        stack = [(cn, False)]
        while stack:
            x, done = stack.pop()
            if x in sinks:
                continue
            nxt = [r for b in _outputs(cells[x]) for r, _ in readers[b] if r in logic]
            if done:
                out = own(x)
                for r in nxt:
                    out |= sinks.get(r, frozenset())    # a loop, if any, is cut here
                sinks[x] = frozenset(out)
            else:
                stack.append((x, True))
                stack += [(r, False) for r in nxt if r not in sinks]
        return sinks[cn]

    by = defaultdict(Counter)
    for cn in logic:
        s = reach(cn)
        key = " ".join(sorted(s)) if len(s) <= 3 else f"{len(s)} sinks: " + " ".join(sorted(s)[:3]) + " ..."
        by[key][_kind(cells[cn])] += 1
    return by


def _outputs(cell):
    dirs = cell.get("port_directions", {})
    return [b for p, bs in cell["connections"].items() if dirs.get(p) == "output"
            for b in bs if isinstance(b, int)]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("top")
    ap.add_argument("before")
    ap.add_argument("after")
    ap.add_argument("--top", dest="n", type=int, default=30)
    a = ap.parse_args(argv)
    before, after = cells_by_sink(a.before, a.top), cells_by_sink(a.after, a.top)
    total = {k: sum(v.values()) for k, v in before.items()}, {k: sum(v.values()) for k, v in after.items()}
    print(json.dumps({"before_cells": sum(total[0].values()), "after_cells": sum(total[1].values())}))
    keys = sorted(set(total[0]) | set(total[1]),
                  key=lambda k: -abs(total[1].get(k, 0) - total[0].get(k, 0)))
    for k in keys[:a.n]:
        b, f = total[0].get(k, 0), total[1].get(k, 0)
        if b != f:
            print(json.dumps({"change": f - b, "before": b, "after": f,
                              "after_kinds": dict(after.get(k, {})), "registers": k[:300]}))


if __name__ == "__main__":
    sys.exit(main())
