"""Per-block ECP5 figures of the whole engine from one hierarchical Yosys run (docs/hw/fpga-build.md,
"Where the engine's resources go"). Reads ``stat -json`` of ``synth_ecp5 -noflatten`` and sums each
module into its block (the longest prefix of BLOCKS that names it).

    python docs/hw/probes/engine_blocks.py STAT.json [STAT2.json]   # a second file: before/after columns
"""
import json
import sys

#: block -> Amaranth hierarchy prefix (below the top ``engine``)
BLOCKS = {
    "parser": "rx_half.parser", "pack": "rx_half.pack", "rx": "rx_half.rx",
    "dma_write": "rx_half.dma", "regs": "rx_half.regs", "atomic executor": "rx_half.atom",
    "rx_half (glue)": "rx_half",
    "tx_sched": "tx.sched", "retransmit": "tx.rtx", "cwnd": "tx.cwnd", "tx join": "tx.data.join",
    "dma_read": "tx.data.dma", "frame_builder (TX)": "tx.data.fb", "tx data (glue, errq, kindq)": "tx.data",
    "tx (glue)": "tx",
    # fit32 (session 32): the blocks the whole engine has had since (MR-ENG-140.., 196.., 209)
    "cq_join": "cq_join", "rd_rows": "rd_rows", "rsp_join": "rsp", "wr_q": "wr_q",
    # ack_fb and arb: builds before eng31 (MR-ENG-282: the ACK frames share tx.data.fb since)
    "ack_in": "ack_in", "ack_out": "ack_out", "frame_builder (ACK)": "ack_fb", "arb": "arb",
    "engine (top)": "",
}
CELLS = {"LUT4": "LUT4", "CCU2C": "CCU2C", "TRELLIS_DPR16X4": "DPR16X4", "TRELLIS_FF": "FF",
         "DP16KD": "DP16KD", "PFUMX": "PFUMX", "L6MUX21": "L6MUX21"}


def block_of(module):
    name = module.lstrip("\\")
    name = name[len("engine."):] if name.startswith("engine.") else ""
    best = "engine (top)"
    for blk, prefix in BLOCKS.items():
        if prefix and (name == prefix or name.startswith(prefix + ".")):
            if len(prefix) > len(BLOCKS[best]):
                best = blk
    return best


def per_block(path):
    mods = json.load(open(path))["modules"]
    out = {b: dict.fromkeys(CELLS.values(), 0) for b in BLOCKS}
    for mod, st in mods.items():
        if not (mod.lstrip("\\") == "engine" or mod.lstrip("\\").startswith("engine.")):
            continue
        cells = st.get("num_cells_by_type", {})
        row = out[block_of(mod)]
        for cell, key in CELLS.items():
            row[key] += int(cells.get(cell, 0))
    for row in out.values():
        # COMB slots as nextpnr packs them: a LUT4 one, a CCU2C two, a DPR16X4 six (4 LUT + RAMW pair)
        row["COMB"] = row["LUT4"] + 2 * row["CCU2C"] + 6 * row["DPR16X4"]
    return out


def main(paths):
    tabs = [per_block(p) for p in paths]
    keys = ["LUT4", "CCU2C", "DPR16X4", "FF", "DP16KD", "COMB"]
    head = "| block | " + " | ".join(keys) + " |"
    if len(tabs) == 2:
        head = "| block | " + " | ".join(f"{k} before -> after" for k in keys) + " |"
    print(head)
    print("|---|" + "---:|" * len(keys))
    total = [dict.fromkeys(keys, 0) for _ in tabs]
    for blk in BLOCKS:
        cells = []
        for k in keys:
            vals = [t[blk][k] for t in tabs]
            cells.append(" -> ".join(f"{v:,}" for v in vals))
        for t, tot in zip(tabs, total):
            for k in keys:
                tot[k] += t[blk][k]
        print(f"| {blk} | " + " | ".join(cells) + " |")
    print("| **total** | " + " | ".join(" -> ".join(f"{t[k]:,}" for t in total) for k in keys) + " |")


if __name__ == "__main__":
    main(sys.argv[1:])
