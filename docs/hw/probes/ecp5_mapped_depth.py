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


def arrivals(mod):
    """Each sink pin's (delay, levels) and its cell, type, port and net name."""
    cells = mod["cells"]
    names = {}
    for n, net in mod["netnames"].items():
        if not n.startswith("$"):
            for i, b in enumerate(net["bits"]):
                if isinstance(b, int):
                    names.setdefault(b, f"{n}[{i}]")
    driver = {}
    for cn, c in cells.items():
        for p, bits in c["connections"].items():
            if c["port_directions"].get(p) == "output":
                for b in bits:
                    if isinstance(b, int):
                        driver[b] = cn
    arr = {}

    def arrival(b):
        # recursive over the cone (run in a thread with a large stack, main()); a loop through
        # logic is cut where it closes
        if b in arr:
            return arr[b]
        cn = driver.get(b)
        arr[b] = (0, 0)
        if cn is None or cells[cn]["type"] not in DELAY_PS:
            return arr[b]
        c, best = cells[cn], (0, 0)
        t = c["type"]
        for p, bits in c["connections"].items():
            if c["port_directions"].get(p) != "input":
                continue
            carry = t == "CCU2C" and p == "CIN"
            for ib in bits:
                if isinstance(ib, int):
                    a = arrival(ib)
                    best = max(best, (a[0] + (CARRY_PS if carry else DELAY_PS[t]),
                                      a[1] + (0 if carry or t not in LEVEL_CELLS else 1)))
        arr[b] = best
        return best

    out = []
    for cn, c in cells.items():
        if c["type"] in DELAY_PS:
            continue
        for p, bits in c["connections"].items():
            if c["port_directions"].get(p) != "input" or p.startswith("CLK") or p == "WCK":
                continue
            for b in bits:
                if isinstance(b, int):
                    out.append((arrival(b), c["type"], cn, p, names.get(b, "")))
    return out


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
    import threading
    sys.setrecursionlimit(1_000_000)
    threading.stack_size(512 * 1024 * 1024)
    th = threading.Thread(target=main, args=(sys.argv,))
    th.start()
    th.join()
