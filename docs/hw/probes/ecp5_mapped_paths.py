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
import sys
import threading

DELAY_PS = {"LUT4": 379, "PFUMX": 151, "L6MUX21": 148, "CCU2C": 379}
CARRY_PS = 127
EBR_CLK_TO_OUT_PS = 4260


def main(argv):
    d = json.load(open(argv[1]))
    n = int(argv[2]) if len(argv) > 2 else 15
    top = [m for m in d["modules"].values() if m.get("attributes", {}).get("top")][0]
    cells, names, driver = top["cells"], {}, {}
    for nm, net in top["netnames"].items():
        for i, b in enumerate(net["bits"]):
            if isinstance(b, int) and (b not in names or (names[b].startswith("$") and not nm.startswith("$"))):
                names[b] = f"{nm}[{i}]"
    for cn, c in cells.items():
        for p, bits in c["connections"].items():
            if c["port_directions"].get(p) == "output":
                for b in bits:
                    if isinstance(b, int):
                        driver[b] = cn
    arr, via = {}, {}

    def arrival(b):
        # recursive over the cone; a loop through logic is cut where it closes
        if b in arr:
            return arr[b]
        cn = driver.get(b)
        arr[b] = (0, 0)
        if cn is None:
            return arr[b]
        t = cells[cn]["type"]
        if t == "DP16KD":
            arr[b] = (EBR_CLK_TO_OUT_PS, 0)
            return arr[b]
        if t not in DELAY_PS:
            return arr[b]
        best, prev = (0, 0), None
        for p, bits in cells[cn]["connections"].items():
            if cells[cn]["port_directions"].get(p) != "input":
                continue
            carry = t == "CCU2C" and p == "CIN"
            for ib in bits:
                if isinstance(ib, int):
                    a = arrival(ib)
                    c = (a[0] + (CARRY_PS if carry else DELAY_PS[t]),
                         a[1] + (0 if carry or t not in ("LUT4", "CCU2C") else 1))
                    if c > best:
                        best, prev = c, ib
        arr[b], via[b] = best, prev
        return best

    sinks = []
    for cn, c in cells.items():
        if c["type"] in DELAY_PS:
            continue
        for p, bits in c["connections"].items():
            if c["port_directions"].get(p) != "input" or p.startswith("CLK") or p == "WCK":
                continue
            sinks += [(arrival(b), c["type"], cn, p, b) for b in bits if isinstance(b, int)]
    sinks.sort(key=lambda s: s[0], reverse=True)
    hist = collections.Counter(s[0][0] // 500 * 500 for s in sinks)
    print("sinks by arrival (ps, 500 ps buckets):", dict(sorted(hist.items())))
    seen = set()
    for (ps, lv), typ, cn, p, b in sinks:
        reg = cn.split("_TRELLIS")[0]
        if reg in seen:
            continue
        seen.add(reg)
        path, x = [], b
        while x is not None:
            path.append(f"{names.get(x, '?')[:48]}<{cells[driver[x]]['type'] if x in driver else '-'}>")
            x = via.get(x)
        start = path[-1]
        print(f"{ps:6d} ps {lv:3d} lv  {typ}.{p}  {reg[:50]}  from {start}")
        print("    " + " <- ".join(dict.fromkeys(path)))
        if len(seen) >= n:
            break


if __name__ == "__main__":
    sys.setrecursionlimit(1_000_000)
    threading.stack_size(512 * 1024 * 1024)
    th = threading.Thread(target=main, args=(sys.argv,))
    th.start()
    th.join()
