"""The RX half's parts as ``engine_small(64)`` instantiates them (issue 13, rxm41; a probe, not
part of the design): the register block, the atomic executor, the RX's output queues alone,
written as Verilog for ``engine_block_ecp5.py``'s flow (the build's: ``-nowidelut``, nextpnr's
packing; TRELLIS_COMB = LUT4 + 2 x CCU2C + 6 x DPR16X4).

    .venv/bin/python docs/hw/probes/rxm41_blocks.py BLOCK OUT     (regs | atom | cqe_q | rsp_q)
    .venv/bin/python docs/hw/probes/engine_block_ecp5.py OUT/src.v BLOCK OUT/syn --nowidelut

A few minutes each at load 10 (the RX itself: rxa38_rot_dsp.py ``packed``).
"""
import sys
import warnings
from pathlib import Path

from metaroce.hdl.engine import engine_small
from metaroce.hdl.queue import HeadRegFIFO
from metaroce.sim import synth
from metaroce.sim.pnr import ECP5
from metaroce.sim.verilator import generate_verilog

FIFO_DEPTH = 16


def block(name):
    half = engine_small(64).rx_half
    if name == "regs":
        return half.regs
    if name == "atom":
        return half.atom
    lay = half.rx.lay
    width = {"cqe_q": lay.cqe_bundle.size, "rsp_q": lay.rsp_bundle.size}[name]
    return HeadRegFIFO(width=width, depth=FIFO_DEPTH, block=True)


def main(argv):
    warnings.simplefilter("ignore")      # the engine's other blocks are built, not used
    name, out = argv[1], Path(argv[2])
    out.mkdir(parents=True, exist_ok=True)
    text, _ = synth.drop_zero_memory_init(generate_verilog(block(name), name, platform=ECP5))
    (out / "src.v").write_text(text)
    print(out / "src.v")


if __name__ == "__main__":
    main(sys.argv)
