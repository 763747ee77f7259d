"""Where the retransmit unit's LUTs and carry chains go at the whole engine's parameters (issue 13,
rtx33; not part of the design).

The unit as the engine builds it (``hdl.engine.Engine(64).tx.rtx``: 2 connections x 4 paths, a
pool of 256, ``ENGINE_RTO_NS``, tail probes, ages) with Amaranth's source locations, then:

1. the build's flow on the unit alone (``synth_ecp5 -noiopad -nowidelut`` in MR-FLOW-026's two
   halves, flattened, ``stat``): LUT4, CCU2C, DPR16X4, FF, DP16KD and COMB = LUT4 + 2 CCU2C +
   6 DPR16X4 (engine_blocks.py's count); the CCU2C cells by the hdl/*.py line of the ``$alu``
   they map (a CCU2C keeps its adder's ``src``): every carry chain with its width; the LUT4s by
   the first flip-flop or memory port they feed (ABC's LUTs keep no ``src``);
2. a gate count without LUT mapping (rx_breakdown.py's: ``proc; flatten; opt; wreduce; memory
   -nomap; techmap``; a 2:1 mux one LUT4, a 2-input gate a third) by section of hdl/retransmit.py
   (a ``# --`` comment or a top-level ``def``/``class``) and by line: where the LUTs are.

    .venv/bin/python docs/hw/probes/retransmit_breakdown.py [--keep DIR] [--reuse] [--no-map] [--ages-off]
        [--no-platform]

Elaborated with ``metaroce.sim.pnr.ECP5`` (the build's platform: MR-TX-359's carry-chain sums,
rtxa36); ``--no-platform``: without a platform (the generic form, as before rtxa36).
"""
import collections
import json
import re
import subprocess
import sys
from pathlib import Path

from amaranth.back import rtlil

from metaroce import blocks
from metaroce.sim import fpga_build, synth

from rx_breakdown import section_of, sections   # the same file sections (a sibling probe)

ROOT = Path(__file__).resolve().parents[3]
RTX_PY = ROOT / "hdl" / "retransmit.py"
TOP = "retransmit"


def unit(ages=True):
    """The retransmit unit of ``engine_small(64)`` (the same object the engine elaborates);
    ``ages=False``: the same parameters without the ages (informative)."""
    from metaroce.hdl.engine import Engine
    from metaroce.hdl.retransmit import Retransmit
    u = Engine(64).tx.rtx
    if ages:
        return u
    lay = u.lay
    return Retransmit(64, conns=lay.conns, paths=lay.paths, pool=lay.pool, rto_ns=u.rto_ns,
                      retry_limit=u.retry_limit, slot_log2=u.slot_log2, probes=u.probes, ages=False,
                      verdict_health=u.verdict_health)


def src_line(attrs, fname=None):
    """The first ``fname:LINE`` of a cell's ``src`` (else the first source named), as
    ``(file, line)``; ``fname`` defaults to the probed file's name (``RTX_PY``)."""
    fname = fname or RTX_PY.name
    srcs = [s for s in attrs.get("src", "").split("|") if s]
    for s in srcs:
        if f"/{fname}:" in s or s.startswith(fname + ":"):
            return fname, int(s.split(f"{fname}:")[1].split(".")[0].split(":")[0])
    if srcs:
        f = srcs[0].split(":")[0].split("/")[-1]
        try:
            return f, int(srcs[0].split(":")[1].split(".")[0])
        except (IndexError, ValueError):
            return f, 0
    return "no source", 0


def mapped(work):
    lines = ["read_rtlil design.il",
             *fpga_build.synth_ecp5_lines(TOP, f"-noiopad {fpga_build.BUILD_SYNTH_OPTIONS}", "mapped.json"),
             "tee -q -o stat.json stat -json"]
    (work / "map.ys").write_text("\n".join(lines) + "\n")
    subprocess.run([*synth.yosys_command(), "-q", "-l", "map.log", "-s", "map.ys"], cwd=work, check=True)


def gates(work, drop_init=False):
    """``drop_init``: the wires' ``init`` dropped after ``proc`` (a gate count, not a netlist: the
    parser's flattened registers meet a constant init and an undefined one, which ``opt_clean``
    rejects)."""
    (work / "gates.ys").write_text("\n".join([
        "read_rtlil design.il", f"hierarchy -top {TOP}", "proc",
        *(["setattr -unset init w:*"] if drop_init else []), "flatten", "opt -fast", "wreduce",
        "opt_clean", "memory -nomap", "opt -fast", "techmap", "opt -fast -purge", "opt_clean -purge",
        "write_json gates.json"]) + "\n")
    subprocess.run([*synth.yosys_command(), "-q", "-l", "gates.log", "-s", "gates.ys"], cwd=work,
                   check=True)


GATE_WEIGHT = {"$_MUX_": 1.0, "$_NMUX_": 1.0, "$_NOT_": 0.0}   # others (2-input): 1/3


def source(work):
    """hdl/retransmit.py as it was elaborated (its copy in ``work``)."""
    return (work / RTX_PY.name) if (work / RTX_PY.name).exists() else RTX_PY


def report_mapped(work):
    st = json.loads((work / "stat.json").read_text())["modules"][f"\\{TOP}"]["num_cells_by_type"]
    cnt = {k: int(st.get(c, 0)) for k, c in (("LUT4", "LUT4"), ("CCU2C", "CCU2C"),
                                               ("DPR16X4", "TRELLIS_DPR16X4"), ("FF", "TRELLIS_FF"),
                                               ("DP16KD", "DP16KD"))}
    cnt["COMB"] = cnt["LUT4"] + 2 * cnt["CCU2C"] + 6 * cnt["DPR16X4"]
    print("mapped (synth_ecp5 -nowidelut, flattened): " + ", ".join(f"{k} {v:,}" for k, v in cnt.items()))
    net = json.loads((work / "mapped.json").read_text())["modules"][TOP]
    lines = source(work).read_text().splitlines()
    by = collections.Counter()
    for cell in net["cells"].values():
        if cell["type"] == "CCU2C":
            by[src_line(cell.get("attributes", {}))] += 1
    print(f"\nCCU2C by source line ({sum(by.values()):,}; 2 bits a cell):")
    for (f, line), n in by.most_common():
        src = lines[line - 1].strip()[:88] if f == RTX_PY.name and line else ""
        print(f"{n:5}  {f}:{line}  {src}")
    sinks = by_sink(net)
    print("\nLUT4 by the first flip-flop or memory port they feed (a LUT shared by several counted "
          "once, at the first found; the name without its index):")
    for name, n in sinks.most_common(45):
        print(f"{n:6,}  {name}")
    return cnt


def by_sink(net):
    """Mapped LUT4s by the first TRELLIS_FF (its Q's name) or memory/RAM cell they reach."""
    bit_name = {}
    for wire, nn in net["netnames"].items():
        if not nn.get("hide_name"):
            for b in nn["bits"]:
                bit_name.setdefault(b, wire)
    cells = net["cells"]
    cons = collections.defaultdict(list)
    for cn, c in cells.items():
        for port, bits in c["connections"].items():
            if c.get("port_directions", {}).get(port) == "input":
                for b in bits:
                    cons[b].append(cn)
    memo = {}

    def sink(cn):
        if cn in memo:
            return memo[cn]
        memo[cn] = "?"
        c = cells[cn]
        if c["type"] == "TRELLIS_FF":
            memo[cn] = "FF " + re.sub(r"\[.*|\$.*", "", bit_name.get(c["connections"]["Q"][0], "?"))
            return memo[cn]
        if c["type"] != "LUT4" and c["type"] != "CCU2C":
            memo[cn] = c["type"] + " " + c.get("attributes", {}).get("src", "").split("|")[0].split("/")[-1]
            return memo[cn]
        outs = [b for port, bits in c["connections"].items()
                if c.get("port_directions", {}).get(port) == "output" for b in bits]
        for b in outs:
            for nxt in cons.get(b, []):
                r = sink(nxt)
                if r != "?":
                    memo[cn] = r
                    return r
        for b in outs:
            if b in bit_name:
                memo[cn] = "wire " + bit_name[b]
                return memo[cn]
        return "?"
    out = collections.Counter()
    sys.setrecursionlimit(100000)
    for cn, c in cells.items():
        if c["type"] == "LUT4":
            out[sink(cn)] += 1
    return out


def report_gates(work):
    netlist = json.loads((work / "gates.json").read_text())
    secs = sections(source(work))
    by_part = collections.defaultdict(collections.Counter)
    by_line = collections.Counter()
    ffs = collections.Counter()
    for cell in netlist["modules"][TOP]["cells"].values():
        typ = cell["type"]
        if not typ.startswith("$_") or typ == "$_NOT_":
            continue
        f, line = src_line(cell.get("attributes", {}))
        part = section_of(line, secs) if f == RTX_PY.name and line else f"other: {f}"
        if "DFF" in typ or "DLATCH" in typ:
            ffs[part] += 1
            continue
        w = GATE_WEIGHT.get(typ, 1 / 3)
        by_part[part]["lut4_est"] += w
        by_part[part]["mux" if typ in ("$_MUX_", "$_NMUX_") else "two"] += 1
        by_line[(f, line)] += w
    total = sum(c["lut4_est"] for c in by_part.values())
    print(f"\ngates (before ABC): {total:,.0f} LUT4-equivalents (a mux 1, a 2-input gate 1/3); "
          f"FFs {sum(ffs.values()):,}")
    print(f"{'part':62} {'LUT4 est':>9} {'share':>6} {'MUX':>6} {'2-in':>6} {'FF':>6}")
    for part, c in sorted(by_part.items(), key=lambda kv: -kv[1]["lut4_est"]):
        print(f"{part:62} {c['lut4_est']:9,.0f} {100 * c['lut4_est'] / total:5.1f}% "
              f"{c['mux']:6,} {c['two']:6,} {ffs[part]:6,}")
    print("\nheaviest lines:")
    lines = source(work).read_text().splitlines()
    for (f, line), w in by_line.most_common(40):
        src = lines[line - 1].strip()[:88] if f == RTX_PY.name and line else ""
        print(f"{w:8,.0f}  {f}:{line}  {src}")


def main(argv):
    keep = argv[argv.index("--keep") + 1] if "--keep" in argv else None
    work = Path(keep) if keep else blocks.scratch_dir() / "retransmit_breakdown"
    work.mkdir(parents=True, exist_ok=True)
    if not ("--reuse" in argv and (work / "gates.json").exists()):
        from metaroce.sim.pnr import ECP5
        platform = None if "--no-platform" in argv else ECP5
        (work / "design.il").write_text(rtlil.convert(unit(ages="--ages-off" not in argv), name=TOP,
                                                      emit_src=True, platform=platform))
        (work / RTX_PY.name).write_text(RTX_PY.read_text())     # the lines the report names
        gates(work)
        if "--no-map" not in argv:
            mapped(work)
    if (work / "stat.json").exists():
        report_mapped(work)
    report_gates(work)


if __name__ == "__main__":
    main(sys.argv)
