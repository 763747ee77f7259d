"""Area probe, not part of the design: a flattened ECP5 netlist's cells counted by the block
their names carry. Yosys keeps the instance path in a flattened cell's name (``block.tx.sched.
...``), so ``metaroce build engine --stop-after synth``'s ``mapped.json`` (the run directory its
report names) can be split by block without a hierarchical run. COMB is nextpnr's count of
TRELLIS_COMB before packing ("Total LUT4s" of its log): LUT4 + 2 x CCU2C + 6 x DPR16X4 (a
DPR16X4's 4 RAM LUTs and 2 RAMW LUTs; docs/hw/fpga-build.md). Run from the repository root:

    .venv/bin/python docs/hw/probes/ecp5_mapped_by_block.py RUN_DIR/mapped.json [--depth N] [--top TOP]

``--depth`` is the number of name parts a block keeps (2: ``block.tx``; 3: ``block.tx.sched``)."""
import argparse
import json
from collections import Counter, defaultdict

COMB = {"LUT4": 1, "CCU2C": 2, "TRELLIS_DPR16X4": 6}
KINDS = ("LUT4", "CCU2C", "TRELLIS_DPR16X4", "TRELLIS_FF", "DP16KD")


def by_block(cells, depth):
    """{block name: Counter of cell kinds and COMB}."""
    out = defaultdict(Counter)
    for name, cell in cells.items():
        kind = cell["type"]
        if kind not in KINDS:
            continue
        parts = name.split(".")
        key = ".".join(parts[:depth]) if len(parts) > depth else ".".join(parts[:-1]) or "(top)"
        out[key][kind] += 1
        out[key]["COMB"] += COMB.get(kind, 0)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("mapped")
    ap.add_argument("--depth", type=int, default=3)
    ap.add_argument("--top", default="board_top")
    args = ap.parse_args()
    cells = json.load(open(args.mapped))["modules"][args.top]["cells"]
    rows = sorted(by_block(cells, args.depth).items(), key=lambda kv: -kv[1]["COMB"])
    total = Counter()
    print("| block | COMB | LUT4 | CCU2C | DPR16X4 | FF | DP16KD |\n|---|---:|---:|---:|---:|---:|---:|")
    for name, c in rows:
        total.update(c)
        print(f"| {name} | {c['COMB']:,} | " + " | ".join(f"{c[k]:,}" for k in KINDS) + " |")
    print(f"| **total** | **{total['COMB']:,}** | " + " | ".join(f"{total[k]:,}" for k in KINDS) + " |")


if __name__ == "__main__":
    main()
