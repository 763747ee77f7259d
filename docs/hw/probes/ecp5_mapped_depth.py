"""The deepest paths of an ECP5 netlist as ``synth_ecp5`` mapped it (not part of the design):
reads a ``mapped.json`` (``metaroce pnr ... --out DIR`` keeps one) and walks every path of
LUT4, PFUMX, L6MUX21 and CCU2C cells between flip-flops, block RAM and ports. Prints the
longest path by an approximate cell delay (ps: a LUT4 379, its slowest input; PFUMX 151;
L6MUX21 148; a CCU2C 379 from its inputs, 127 from CIN to COUT; no wire delay: not ABC9's
model, a ranking), the LUT4/CCU2C levels on it, a histogram of the sinks' arrival times and
the deepest sinks.

Why (rx18, docs/hw/rx-results.md): ABC9 without a delay target maps every output against the
delay of the design's slowest cone, so the cone that sets that delay decides how many wide
LUTs (PFUMX, L6MUX21: two to eight LUT4 positions each) the rest of the design gets; this
names that cone in a mapping.

    .venv/bin/python docs/hw/probes/ecp5_mapped_depth.py DIR/mapped.json [N] [--levels]

``--levels``: the lead's level count instead of the delay (rtt33's tables, rbm34): a LUT4, PFUMX,
L6MUX21 or a CCU2C's entry one level each, a carry (CIN to COUT) none; "ps" is then levels.
"""
import collections
import json
import sys

DELAY_PS = {"LUT4": 379, "PFUMX": 151, "L6MUX21": 148, "CCU2C": 379}
CARRY_PS = 127
LEVEL_CELLS = ("LUT4", "CCU2C")


def net_names(mod, prefer_named=True):
    """{bit: "net[i]"}: the first name without a '$' of each bit (with ``prefer_named`` False, a
    '$' name too where a bit has no other)."""
    names = {}
    for n, net in mod["netnames"].items():
        for i, b in enumerate(net["bits"]):
            if not isinstance(b, int):
                continue
            if not n.startswith("$"):
                if b not in names or names[b].startswith("$"):
                    names[b] = f"{n}[{i}]"
            elif not prefer_named:
                names.setdefault(b, f"{n}[{i}]")
    return names


def drivers(cells):
    """{bit: the name of the cell whose output drives it}."""
    out = {}
    for cn, c in cells.items():
        for p, bits in c["connections"].items():
            if c["port_directions"].get(p) == "output":
                for b in bits:
                    if isinstance(b, int):
                        out[b] = cn
    return out


def path_arrivals(cells, driver, start):
    """``arrival(bit)``: ``(ps, levels, previous bit, cell type, input pin)`` of the slowest path
    of logic cells (:data:`DELAY_PS`) into ``bit``, or None where no path starts. A bit driven by
    anything else (a flip-flop, a block RAM, a port: ``None``) starts a path at ``start(bit,
    type)`` ps, or none where that is None. Recursive over the cone (run in a thread with a
    large stack, :func:`run`); a loop through logic is cut where it closes. The one walk of this
    probe, ``ecp5_mapped_paths.py`` and ``ecp5_path_between.py``."""
    arr = {}

    def arrival(b):
        if b in arr:
            return arr[b]
        arr[b] = None
        cn = driver.get(b)
        t = cells[cn]["type"] if cn is not None else None
        if t not in DELAY_PS:
            s = start(b, t)
            arr[b] = None if s is None else (s, 0, None, t, None)
            return arr[b]
        best, c = None, cells[cn]
        for p, bits in c["connections"].items():
            if c["port_directions"].get(p) != "input":
                continue
            carry = t == "CCU2C" and p == "CIN"
            for ib in bits:
                a = arrival(ib) if isinstance(ib, int) else None
                if a is None:
                    continue
                cand = (a[0] + (CARRY_PS if carry else DELAY_PS[t]),
                        a[1] + (0 if carry or t not in LEVEL_CELLS else 1), ib, t, p)
                if best is None or cand[:2] > best[:2]:
                    best = cand
        arr[b] = best
        return best
    return arrival


def sink_pins(cells):
    """(cell name, cell, port, bit) of every input pin of a cell that is not logic, but clocks."""
    for cn, c in cells.items():
        if c["type"] in DELAY_PS:
            continue
        for p, bits in c["connections"].items():
            if c["port_directions"].get(p) != "input" or p.startswith("CLK") or p == "WCK":
                continue
            for b in bits:
                if isinstance(b, int):
                    yield cn, c, p, b


def arrivals(mod):
    """Each sink pin's (delay, levels) and its cell, type, port and net name."""
    cells, names = mod["cells"], net_names(mod)
    arrival = path_arrivals(cells, drivers(cells), lambda b, t: 0)
    return [((arrival(b) or (0, 0))[:2], c["type"], cn, p, names.get(b, ""))
            for cn, c, p, b in sink_pins(cells)]


def run(main):
    """``main(sys.argv)`` in a thread with a stack deep enough for :func:`path_arrivals`."""
    import threading
    sys.setrecursionlimit(1_000_000)
    threading.stack_size(512 * 1024 * 1024)
    th = threading.Thread(target=main, args=(sys.argv,))
    th.start()
    th.join()


def main(argv):
    if "--levels" in argv:
        argv = [a for a in argv if a != "--levels"]
        global CARRY_PS, LEVEL_CELLS
        DELAY_PS.update(dict.fromkeys(DELAY_PS, 1))
        CARRY_PS, LEVEL_CELLS = 0, tuple(DELAY_PS)
    d = json.load(open(argv[1]))
    n = int(argv[2]) if len(argv) > 2 else 20
    top = [m for m in d["modules"].values() if m.get("attributes", {}).get("top")][0]
    sinks = sorted(arrivals(top), key=lambda s: s[0], reverse=True)
    counts = collections.Counter(c["type"] for c in top["cells"].values())
    print("cells:", {k: counts[k] for k in ("LUT4", "PFUMX", "L6MUX21", "CCU2C", "TRELLIS_FF")})
    print(f"deepest: {sinks[0][0][0]} ps, {max(s[0][1] for s in sinks)} levels")
    hist = collections.Counter(s[0][0] // 500 * 500 for s in sinks)
    print("sinks by arrival (ps, 500 ps buckets):", dict(sorted(hist.items())))
    for (ps, lv), typ, cell, port, net in sinks[:n]:
        print(f"{ps:6d} ps {lv:3d} lv  {typ}.{port}  {net[:60]}  ({cell[:50]})")


if __name__ == "__main__":
    run(main)
