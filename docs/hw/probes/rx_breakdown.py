"""Where the RX engine's logic goes, per part of hdl/rx.py (issue 13; not part of the design).

``metaroce synth`` flattens the RX into one module, so its report has no per-part figure. This
probe elaborates the RX with Amaranth's source locations (RTLIL ``src`` attributes), lets Yosys
take it to single-bit gates without LUT mapping (``proc; flatten; opt; wreduce; memory -nomap;
techmap; opt``: the tables stay memories), and counts the gates by the hdl/rx.py line that made
them, grouped by the section of hdl/rx.py the line is in (a ``# --`` comment or a helper
function). A 2:1 mux gate (``$_MUX_``) is one ECP5 LUT4; the 2-input gates are about a third of
one after ABC packs them. The figures are gates, not LUT4s: the shares are what they measure.

    .venv/bin/python docs/hw/probes/rx_breakdown.py [rx_256x4|engine|...] [WIDTH] [--keep DIR] [--reuse]

Helpers called from several places (``_rotate``, ``_add_prefix``, ``_piece_counter``) are
split by their caller's ``name`` where they name signals (the rotators), else reported as one
group.
"""
import collections
import json
import re
import subprocess
import sys
from pathlib import Path

from amaranth.back import rtlil

from metaroce import blocks
from metaroce.sim import synth

RX_PY = Path(__file__).resolve().parents[3] / "hdl" / "rx.py"


def sections(path):
    """(first line, name) of each section of ``path``: a top-level ``def``/``class``, or a
    ``# --`` comment inside ``elaborate``."""
    out = []
    for i, line in enumerate(path.read_text().splitlines(), 1):
        s = line.strip()
        if re.match(r"^(def|class) ", line):
            out.append((i, s.split("(")[0].split(":")[0]))
        elif s.startswith("# --"):
            out.append((i, s[4:].strip()[:60]))
    return out


def section_of(line, secs):
    name = "?"
    for first, n in secs:
        if first > line:
            break
        name = n
    return name


GATE_WEIGHT = {"$_MUX_": 1.0, "$_NMUX_": 1.0, "$_NOT_": 0.0}   # others (2-input): 1/3


def cli(argv):
    """The breakdown probes' command line (also tx_breakdown.py's): the positional arguments and
    ``--keep DIR``'s directory (or ``None``)."""
    args = [a for a in argv[1:] if not a.startswith("--")]
    keep = argv[argv.index("--keep") + 1] if "--keep" in argv else None
    return ([a for a in args if a != keep] if keep else args), keep


def work_dir(argv, keep, default):
    """The netlist's directory (``--keep``'s, else ``default`` in the scratch directory) and
    whether ``--reuse`` takes the netlist already there."""
    work = Path(keep) if keep else blocks.scratch_dir() / default
    work.mkdir(parents=True, exist_ok=True)
    return work, "--reuse" in argv and (work / "gates.json").exists()


def main(argv):
    args, keep = cli(argv)
    name = args[0] if args else "rx_256x4"
    width = int(args[1]) if len(args) > 1 else 64
    work, reuse = work_dir(argv, keep, f"rx_breakdown_{name}_{width}")
    if reuse:
        return report(name, width, work)
    if name == "engine":   # the RX at the whole engine's parameters (engine_rx_ecp5.py's)
        from metaroce.hdl.rx import Rx
        from metaroce.models.engine import ENGINE_CFG_SACK, ENGINE_CHUNK_WINDOW
        from metaroce.models.rx import SMALL
        # MR-ENG-288 (fit32): the engine's RX takes no SACK from path-row writes
        dut = Rx(width, conns=2, paths=4, keys=256, streams=SMALL["streams"],
                 chunk_ring=ENGINE_CHUNK_WINDOW, cfg_sack=ENGINE_CFG_SACK)
    else:
        dut = blocks.get(name).component_factory()(width)
    gate_netlist(dut, name, work)
    report(name, width, work)


def gate_netlist(dut, name, work):
    """``dut`` as Yosys's generic gates before ABC (flattened, memories kept), with the source
    lines as ``src`` attributes: ``work/gates.json`` (also tx_breakdown.py's)."""
    text = rtlil.convert(dut, name=name, emit_src=True)
    (work / "design.il").write_text(text)
    (work / "gates.ys").write_text("\n".join([
        "read_rtlil design.il", f"hierarchy -top {name}", "proc", "flatten", "opt -fast", "wreduce",
        "opt_clean", "memory -nomap", "opt -fast", "techmap", "opt -fast -purge", "opt_clean -purge",
        "tee -q -o stat.txt stat", "write_json gates.json"]) + "\n")
    subprocess.run([*synth.yosys_command(), "-q", "-l", "gates.log", "-s", "gates.ys"], cwd=work,
                   check=True)


def report(name, width, work):
    netlist = json.loads((work / "gates.json").read_text())
    secs = sections(RX_PY)
    by_part = collections.defaultdict(lambda: collections.Counter())
    by_line = collections.Counter()
    ffs = collections.Counter()
    mod = netlist["modules"][name]
    bit_name = {}
    for wire, nn in mod["netnames"].items():
        if not nn.get("hide_name"):
            for b in nn["bits"]:
                bit_name.setdefault(b, wire)
    for cell in mod["cells"].values():
        typ = cell["type"]
        if not typ.startswith("$_") or typ == "$_NOT_":
            continue
        srcs = [s for s in cell.get("attributes", {}).get("src", "").split("|") if "rx.py:" in s]
        line = int(srcs[0].split("rx.py:")[1].split(".")[0].split(":")[0]) if srcs else 0
        if line:
            part = section_of(line, secs)
        else:
            other = cell.get("attributes", {}).get("src", "").split("|")[0]
            part = "other: " + (other.split("/")[-1].split(".")[0] + ".py" if other else "no source")
        if part.startswith("def _") or part.startswith("other"):
            out = bit_name.get(cell["connections"].get("Y", [None])[0], "")
            prefix = re.sub(r"[0-9_]*$", "", out.split(".")[-1].split("[")[0])
            if prefix:
                part = f"{part} -> {prefix}"
        if "DFF" in typ or "SDFF" in typ or "DLATCH" in typ:
            ffs[part] += 1
            continue
        w = GATE_WEIGHT.get(typ, 1 / 3)
        by_part[part][typ] += 1
        by_part[part]["lut4_est"] += w
        by_line[line] += w
    total = sum(c["lut4_est"] for c in by_part.values())
    print(f"{name} at {width} bits: {total:,.0f} LUT4-equivalents (muxes 1, 2-input gates 1/3) "
          f"before ABC; FFs {sum(ffs.values()):,}")
    print(f"{'part':62} {'LUT4 est':>9} {'share':>6} {'MUX':>7} {'2-in':>7} {'FF':>6}")
    for part, c in sorted(by_part.items(), key=lambda kv: -kv[1]["lut4_est"]):
        two = sum(v for k, v in c.items() if k not in ("lut4_est", "$_MUX_", "$_NMUX_"))
        print(f"{part:62} {c['lut4_est']:9,.0f} {100 * c['lut4_est'] / total:5.1f}% "
              f"{c['$_MUX_'] + c['$_NMUX_']:7,} {two:7,} {ffs[part]:6,}")
    print("\nheaviest lines of hdl/rx.py:")
    lines = RX_PY.read_text().splitlines()
    for line, w in by_line.most_common(25):
        src = lines[line - 1].strip()[:90] if line else ""
        print(f"{line:5} {w:8,.0f}  {src}")


if __name__ == "__main__":
    main(sys.argv)
