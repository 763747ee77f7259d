"""ABC9's wide-LUT covers in a mapped ECP5 netlist (issue 13: a netlist rewrite of them was not
adopted, MR-FLOW-029 maps to LUT4s instead; docs/hw/fpga-build.md): every tree of PFUMX / L6MUX21 cells (a LUT5, LUT6 or LUT7:
2, 4 or 8 LUT4s) whose output feeds no L6MUX21, by the number of nets its function depends on
(a LUT4 input tied to a constant counts as that constant). A tree whose function has k inputs
needs 2**(k-4) LUT4s at best (1 for k <= 4); a tree with more could be rebuilt smaller by a
netlist rewrite. nextpnr takes an L6MUX21 only with both inputs from a PFUMX or an L6MUX21
(``ecp5/pack.cc``, ``pack_lut5xs``), so only whole trees can shrink. Also prints, for the LUT7
trees, the input counts of their two LUT6 halves.

    .venv/bin/python docs/hw/probes/engine_lut_trees.py mapped.json [TOP]
"""
import collections
import json
import sys

MUX = {"PFUMX": ("ALUT", "BLUT", "C0"), "L6MUX21": ("D1", "D0", "SD")}


def _int(v):
    return v if isinstance(v, int) else int(v, 2)


def main(path, top="board_top"):
    mod = json.load(open(path))["modules"][top]
    cells = mod["cells"]
    driver, users, l6_fed = {}, collections.Counter(), set()
    for n, c in cells.items():
        for p, bits in c["connections"].items():
            for b in bits:
                if not isinstance(b, int):
                    continue
                if c["port_directions"][p] == "output":
                    driver[b] = n
                else:
                    users[b] += 1
                    if c["type"] == "L6MUX21" and p in ("D0", "D1"):
                        l6_fed.add(b)

    def support(n):
        """The nets the function of the tree under ``n`` depends on, its LUT4 count, or None."""
        c = cells[n]
        if c["type"] == "LUT4":
            init = _int(c["parameters"]["INIT"])
            sup = set()
            for k, x in enumerate("ABCD"):
                v = c["connections"][x][0]
                if v in ("0", "1"):
                    continue
                if any((init >> i & 1) != (init >> (i ^ 1 << k) & 1) for i in range(16)):
                    if not isinstance(v, int):
                        return None
                    sup.add(v)
            return sup, 1
        one, zero, sel = MUX[c["type"]]
        s = c["connections"][sel][0]
        if not isinstance(s, int):
            return None
        sup, luts = {s}, 0
        for p in (one, zero):
            b = c["connections"][p][0]
            if not isinstance(b, int) or users[b] != 1 or b not in driver:
                return None
            sub = support(driver[b])
            if sub is None:
                return None
            sup |= sub[0]
            luts += sub[1]
        return sup, luts

    hist, halves = collections.Counter(), collections.Counter()
    for n, c in cells.items():
        if c["type"] not in MUX or c["connections"]["Z"][0] in l6_fed:
            continue
        r = support(n)
        if r is None:
            hist["not clean"] += 1
            continue
        k, luts = len(r[0]), r[1]
        hist[(luts, k)] += 1
        if luts == 8:
            for p in ("D0", "D1"):
                halves[len(support(driver[c["connections"][p][0]])[0])] += 1
    saving = sum(v * max(0, luts - (1 << max(0, k - 4))) for (luts, k), v in
                 ((key, v) for key, v in hist.items() if key != "not clean"))
    print("trees (LUT4s, inputs): count")
    for key, v in sorted(hist.items(), key=str):
        print(f"  {key}: {v}")
    print("LUT7 trees' LUT6 halves by inputs:", dict(sorted(halves.items())))
    print("LUT4s a rewrite of whole trees would save:", saving)


if __name__ == "__main__":
    main(*sys.argv[1:])
