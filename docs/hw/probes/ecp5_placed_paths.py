"""The slowest register -> register paths of a *placed* ECP5 design, by nextpnr's own
pre-routing wire estimate (not part of the design).

nextpnr 0.11 prints only a post-placement Fmax, no critical path, and its ``--report`` after
``--no-route`` holds no path (checked: ``critical_paths`` empty, ``detailed_net_timings``
empty). This reads the design nextpnr wrote after placement (``--no-route --write
placed.json``), takes every arc's delay in the form of ``Arch::predictDelay`` of nextpnr's
ECP5 arch: ``PS_PER_UNIT * (6 + max(dx-5,0) + max(dy-5,0) + 2 * (min(dx,5) + min(dy,5)))`` ps
between the driver's and the sink's tile; 0 on a carry chain FCO -> FCI and into FXA/FXB. The
source read gives 76 ps per unit at speed 8, which overshoots 0.11's printed estimate by 23 % on
both designs tried; 61 (the default; ``PS_PER_UNIT=`` in the environment overrides it) brings
the slowest path within 1 % of nextpnr's figure on the RX (21,715 against 21,801 ps) and 5 %
on a 2,345-cell test design (docs/hw/rx-results.md, "Branch rx19"). It walks every path pin
to pin (F from the LUT inputs and FCI; OFX from them and M, F1, FXA, FXB; FCO from the LUT
inputs and FCI) and prints the slowest endpoints with the path into each: each hop's input
pin, the wire's estimate and its tile distance, the cell and the net names.

Cell delays (ps): a LUT input to F 180 and M/FXA/FXB to OFX 193 (nextpnr's figures in a
routed report), a carry chain 60 per slice; EBR clock-to-out 4,260, flip-flop clock-to-out 400
and setup 200 (the results pages' routed paths), block RAM setup 150. Wires are 84-89 % of the
RX's slowest placed paths, so these only order near ties. A cell with no driven input (the
packer's constants) starts no path.

    .venv/bin/python docs/hw/probes/ecp5_placed_paths.py DIR/placed.json [N] [DIR/nextpnr.log]
"""
import collections
import json
import re
import sys

PS_PER_UNIT = int(__import__("os").environ.get("PS_PER_UNIT", 61))
CLK_TO_Q = {"TRELLIS_FF": 400, "DP16KD": 4260, "TRELLIS_RAMW": 0}
SETUP = {"TRELLIS_FF": 200, "DP16KD": 150, "TRELLIS_COMB": 150, "TRELLIS_RAMW": 150}
COMB_PS = {"F": 180, "OFX": 193, "FCO": 60}
COMB_DEPS = {"F": ("A", "B", "C", "D", "FCI"), "FCO": ("A", "B", "C", "D", "FCI"),
             "OFX": ("A", "B", "C", "D", "M", "F1", "FXA", "FXB")}
# ports of a TRELLIS_COMB that end a path (its LUT-RAM write side), not pass through it
COMB_SINKS = ("WCK", "WRE", "WAD0", "WAD1", "WAD2", "WAD3", "WD", "DI0", "DI1")


def bel_xy(cell):
    m = re.match(r"X(\d+)/Y(\d+)/", cell["attributes"].get("NEXTPNR_BEL", ""))
    return (int(m.group(1)), int(m.group(2))) if m else None


def wire_ps(drv, drv_port, snk, snk_port):
    """nextpnr's ``Arch::predictDelay`` (ECP5), without its same-slice direct-wire zeros."""
    if (drv_port == "FCO" and snk_port == "FCI") or snk_port in ("FXA", "FXB"):
        return 0, 0
    a, b = bel_xy(drv), bel_xy(snk)
    if a is None or b is None:
        return 0, 0
    dx, dy = abs(a[0] - b[0]), abs(a[1] - b[1])
    units = 6 + max(dx - 5, 0) + max(dy - 5, 0) + 2 * (min(dx, 5) + min(dy, 5))
    return PS_PER_UNIT * units, dx + dy


def analyse(path):
    d = json.load(open(path))
    top = [m for m in d["modules"].values() if m.get("attributes", {}).get("top")] or list(d["modules"].values())
    mod = top[0]
    cells = mod["cells"]
    names = {}
    for n, net in mod["netnames"].items():
        for b in net["bits"]:
            if isinstance(b, int) and (b not in names or names[b].startswith("$")):
                names[b] = n
    driver, sinks = {}, collections.defaultdict(list)
    for cn, c in cells.items():
        dirs = c.get("port_directions", {})
        for p, bits in c["connections"].items():
            for b in bits:
                if not isinstance(b, int):
                    continue
                if dirs.get(p) == "output":
                    driver[b] = (cn, p)
                elif dirs.get(p) == "input":
                    sinks[b].append((cn, p))

    def comb(cn):
        c = cells[cn]
        return c["type"] == "TRELLIS_COMB" and c["parameters"].get("MODE") != "RAMW_BLOCK"

    # arrival at each output bit (ps) and the hop into it, pin to pin: F from the LUT inputs
    # (and FCI), OFX from them and M, F1, FXA, FXB (PFUMX, L6MUX21), FCO from the LUT inputs
    # and FCI; a whole-cell arc would close false loops through a slice's paired LUTs
    out_time = {}                                 # bit -> (time at driver output, hop info)
    pins = {}
    for cn, c in cells.items():
        if comb(cn):
            pins[cn] = {p: [b for b in bits if isinstance(b, int) and b in driver]
                        for p, bits in c["connections"].items()
                        if c["port_directions"].get(p) == "input" and p not in COMB_SINKS}

    def arrival(b):
        if b in out_time:
            return out_time[b][0]
        cn, port = driver[b]
        c = cells[cn]
        if not comb(cn):
            out_time[b] = (CLK_TO_Q.get(c["type"], 0), None)
            return out_time[b][0]
        out_time[b] = (0, None)                   # a loop closing here is cut
        best = (-10**9, None)                     # no driven input: a constant, no path
        for p in COMB_DEPS.get(port, ()):
            for ib in pins[cn].get(p, ()):
                dcell, dport = driver[ib]
                w, dist = wire_ps(cells[dcell], dport, c, p)
                t = arrival(ib) + w
                if t > best[0]:
                    best = (t, (ib, p, w, dist))
        out_time[b] = (best[0] + COMB_PS.get(port, 240), (cn, best[1]))
        return out_time[b][0]

    # endpoints: inputs of sequential cells (and a comb cell's LUT-RAM write ports)
    ends = []
    for cn, c in cells.items():
        t = c["type"]
        for p, bits in c["connections"].items():
            if c["port_directions"].get(p) != "input" or p in ("CLK", "CLKA", "CLKB", "WCK"):
                continue
            if comb(cn) and p not in COMB_SINKS:
                continue
            for b in bits:
                if isinstance(b, int) and b in driver:
                    dcell, dport = driver[b]
                    w, dist = wire_ps(cells[dcell], dport, c, p)
                    ends.append((arrival(b) + w + SETUP.get(t, 150), cn, p, b, w, dist))
    ends.sort(key=lambda e: e[0], reverse=True)
    return cells, names, driver, out_time, ends


def trace(cells, names, driver, out_time, b):
    """The hops into bit ``b``: (driver cell, its type, net name, wire ps into the next cell,
    tile distance), from the start register."""
    hops = []
    while b is not None:
        cn, _ = driver[b]
        info = out_time[b][1]
        hops.append((cn, cells[cn]["type"], names.get(b, "?")))
        if info is None or info[1] is None:
            break
        b = info[1][0]
        hops[-1] += (info[1][2], info[1][3], info[1][1])
    return hops[::-1]


def main(argv):
    n = int(argv[2]) if len(argv) > 2 else 10
    cells, names, driver, out_time, ends = analyse(argv[1])
    if len(argv) > 3:
        fm = re.findall(r"Max frequency for clock '[^']*': ([\d.]+) MHz", open(argv[3]).read())
        if fm:
            print(f"nextpnr's post-placement estimate: {fm[-1]} MHz ({1e6 / float(fm[-1]):.0f} ps)")
    print(f"cells {len(cells)}; slowest endpoint {ends[0][0]} ps "
          f"({1e6 / ends[0][0]:.2f} MHz)")
    hist = collections.Counter(e[0] // 2000 * 2000 for e in ends if e[0] >= 0)
    print("endpoints by arrival (ps, 2,000 ps buckets):", dict(sorted(hist.items())))
    shown, seen = 0, set()
    for t, cn, p, b, w, dist in ends:
        hops = trace(cells, names, driver, out_time, b)
        key = (hops[0][0], cn)
        if key in seen:
            continue
        seen.add(key)
        wires = sum(h[3] for h in hops if len(h) > 3) + w
        print(f"\n{t} ps ({1e6 / t:.1f} MHz), wires {wires} ps, {len(hops) - 1} comb cells: "
              f"{hops[0][2]} -> {cells[cn]['type']}.{p} of {cn[:70]}")
        for h in hops:
            into = f"(wire in {h[3]:5d} ps, {h[4]:3d} tiles) {h[5]:>3s}" if len(h) > 3 else " " * 35
            print(f"    {into} {h[1]:12s} {h[2][:90]}")
        print(f"    (wire in {w:5d} ps, {dist:3d} tiles) {cells[cn]['type']}.{p}")
        shown += 1
        if shown >= n:
            break


if __name__ == "__main__":
    import threading
    sys.setrecursionlimit(1_000_000)
    threading.stack_size(512 * 1024 * 1024)     # the arrival recursion is as deep as a path
    th = threading.Thread(target=main, args=(sys.argv,))
    th.start()
    th.join()
