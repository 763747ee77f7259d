"""Where the TX scheduler's and data path's logic goes at the engine's parameters, by source line
(txa38, issue 13; not part of the design): rx_breakdown.py's method (Amaranth's ``src``
attributes, Yosys to single-bit gates without LUT mapping; a 2:1 mux gate counts 1, a 2-input
gate 1/3) on ``tx_engine_ecp5.part(...)`` (``sched``: TxSched as the engine builds it;
``data``: TxData), grouped by hdl file and line, and by the named signal a gate drives
(its family: digits dropped).

    .venv/bin/python docs/hw/probes/tx_breakdown.py [sched|data] [--keep DIR] [--reuse]
"""
import collections
import importlib.util
import json
import re
import sys
from pathlib import Path

HDL = Path(__file__).resolve().parents[3] / "hdl"
_spec = importlib.util.spec_from_file_location("tx_engine_ecp5", Path(__file__).with_name("tx_engine_ecp5.py"))
tx_engine_ecp5 = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(tx_engine_ecp5)
_spec = importlib.util.spec_from_file_location("rx_breakdown", Path(__file__).with_name("rx_breakdown.py"))
rx_breakdown = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(rx_breakdown)
GATE_WEIGHT = rx_breakdown.GATE_WEIGHT


def main(argv):
    args, keep = rx_breakdown.cli(argv)
    name = args[0] if args else "sched"
    work, reuse = rx_breakdown.work_dir(argv, keep, f"tx_breakdown_{name}")
    if not reuse:
        rx_breakdown.gate_netlist(tx_engine_ecp5.part(name), name, work)
    report(name, work)


def report(name, work):
    mod = json.loads((work / "gates.json").read_text())["modules"][name]
    bit_name = {}
    for wire, nn in mod["netnames"].items():
        if not nn.get("hide_name"):
            for b in nn["bits"]:
                bit_name.setdefault(b, wire)
    by_line, by_fam, ffs = collections.Counter(), collections.Counter(), collections.Counter()
    for cell in mod["cells"].values():
        typ = cell["type"]
        if not typ.startswith("$_") or typ == "$_NOT_":
            continue
        srcs = [s for s in cell.get("attributes", {}).get("src", "").split("|") if "/hdl/" in s]
        where = "?"
        if srcs:
            f, rest = srcs[0].split("/hdl/")[1].split(":", 1)
            where = f"{f}:{int(rest.split('.')[0].split(':')[0])}"
        out = bit_name.get(cell["connections"].get("Q" if "DFF" in typ else "Y", [None])[0], "")
        fam = re.sub(r"\d+", "#", out.split("[")[0]) or "(unnamed)"
        if "DFF" in typ or "DLATCH" in typ:
            ffs[fam] += 1
            continue
        w = GATE_WEIGHT.get(typ, 1 / 3)
        by_line[where] += w
        by_fam[fam] += w
    total = sum(by_line.values())
    print(f"{name}: {total:,.0f} LUT4-equivalents (muxes 1, 2-input gates 1/3) before ABC; "
          f"FFs {sum(ffs.values()):,}")
    print("\nheaviest lines:")
    for where, w in by_line.most_common(45):
        src = ""
        if where != "?":
            f, ln = where.split(":")
            src = (HDL / f).read_text().splitlines()[int(ln) - 1].strip()[:90]
        print(f"{where:22} {w:8,.0f}  {src}")
    print("\nheaviest output-signal families:")
    for fam, w in by_fam.most_common(45):
        print(f"{fam:40} {w:8,.0f}")
    print("\nflip-flops by family:")
    for fam, n in ffs.most_common(30):
        print(f"{fam:40} {n:8,}")


if __name__ == "__main__":
    main(sys.argv)
