"""Area probe, not part of the design (dp44): where the frame builder's LUTs are at a width, in
``metaroce synth``'s flow (Amaranth's RTLIL, ``synth_xilinx -family xcup`` as
``sim.synth.synth_script``, plus ``write_json``). Each LUT (and CARRY4) of the block's own
module is attributed to the registers its output reaches through logic cells only (their
names with indices replaced by ``#``; a clock enable or reset input marked ``.CE``/``.R``; a
submodule or port by its name), as ``ecp5_cells_by_sink.py`` does on the ECP5; a cell shared
by several registers is counted once, under the set of them. Prints the register sets with the
most cells, then the flip-flops per register family. Run from the repository root:

    nice -n 5 .venv/bin/python docs/hw/probes/dp44_fb_by_sink.py WIDTH [--ipv4-only] [--top N] 2>/dev/null"""
import argparse
import json
from collections import Counter

from ecp5_cells_by_sink import _family, bit_names, bit_readers

from metaroce.hdl.frame_builder import FrameBuilder
from metaroce.sim import synth
from metaroce.sim.verilator import generate_rtlil

LOGIC = ("$lut", "CARRY4", "MUXF7", "MUXF8")
FFS = ("FDRE", "FDSE", "FDCE", "FDPE")


def mapped_module(component, name, run, key):
    """``component`` through ``metaroce synth``'s flow as module ``name``, its mapped netlist's
    module (kept in the run directory ``run``-KEY, KEY from the RTLIL and ``key``)."""
    text = generate_rtlil(component, name, drop_zero_init=True)
    work = synth.default_work_root() / f"{run}-{synth.synth_key(text, key)[-20:]}"
    if not (work / "net.json").is_file():
        script = synth.synth_script(name).replace("; ", "\n") + "\nwrite_json net.json\n"
        synth._run_yosys(synth.yosys_command(), work, text, "s.ys",
                         synth.READERS["rtlil"].replace("; ", "\n") + "\n" + script, 7200, "rtlil")
    return json.loads((work / "net.json").read_text())["modules"][name]


def netlist(width, ipv4_only=False):
    return mapped_module(FrameBuilder(width, ipv4_only=ipv4_only), "frame_builder",
                         f"dp44-fb-sink-{width}", "fb")


def logic_sinks(logic, outs, readers, own):
    """{logic cell: frozenset of what it reaches through logic only}: ``own(cell)`` names the
    non-logic readers of the cell's outputs, unioned over its logic readers, depth first
    without recursion (the netlists are deep)."""
    sinks = {}
    for cn in logic:
        stack = [(cn, False)]
        while stack:
            x, done = stack.pop()
            if x in sinks:
                continue
            nxt = [r for b in outs[x] for r, _ in readers[b] if r in logic]
            if done:
                s = own(x)
                for r in nxt:
                    s |= sinks.get(r, frozenset())
                sinks[x] = frozenset(s)
            else:
                stack.append((x, True))
                stack += [(r, False) for r in nxt if r not in sinks]
    return sinks


def by_sink(mod):
    names = bit_names(mod)
    cells = mod["cells"]
    outs = {cn: [b for p, bs in c["connections"].items()
                 if c.get("port_directions", {}).get(p) == "output" for b in bs if isinstance(b, int)]
            for cn, c in cells.items()}
    readers = bit_readers(cells)
    port_of = {b: p for p, v in mod["ports"].items() for b in v["bits"] if isinstance(b, int)}
    logic = {cn for cn, c in cells.items() if c["type"] in LOGIC}
    ffs = Counter()
    for cn, c in cells.items():
        if c["type"] in FFS:
            ffs[_family(names.get(c["connections"]["Q"][0], (cn, 1))[0])] += 1

    def own(x):
        out = set()
        for b in outs[x]:
            for r, p in readers[b]:
                if r in logic:
                    continue
                t = cells[r]["type"]
                if t in FFS:
                    q = cells[r]["connections"]["Q"][0]
                    out.add(_family(names.get(q, (r, 1))[0]) + ("" if p == "D" else "." + p))
                else:
                    out.add(f"{r}.{p}" if not t.startswith("$") else t)
            if b in port_of:
                out.add("port:" + port_of[b])
        return out

    sinks = logic_sinks(logic, outs, readers, own)
    by = Counter()
    for cn in logic:
        s = sinks[cn]
        key = " ".join(sorted(s)) if len(s) <= 3 else f"{len(s)} sinks: " + " ".join(sorted(s)[:3]) + " ..."
        by[key] += cells[cn]["type"] == "$lut"
    return by, ffs


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("width", type=int)
    ap.add_argument("--top", type=int, default=40)
    ap.add_argument("--ipv4-only", action="store_true", help="FrameBuilder(ipv4_only=True), MR-TX-466")
    a = ap.parse_args()
    by, ffs = by_sink(netlist(a.width, a.ipv4_only))
    print(json.dumps({"luts": sum(by.values()), "ffs": sum(ffs.values())}))
    for k, n in by.most_common(a.top):
        print(f"{n:6d}  {k[:200]}")
    print("flip-flops by register family:")
    for k, n in ffs.most_common(a.top):
        print(f"{n:6d}  {k}")
