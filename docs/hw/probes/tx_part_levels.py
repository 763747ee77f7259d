"""Depth probe of the TX engine's parts on their own (hw-tx.md section 2, MR-FLOW-010's generic
LUT-level flow), not part of the design: the Verilog of one part of ``hdl/tx.py`` at the small
instance, then ``metaroce.sim.synth.lut_levels``. Run from the repository root:

    .venv/bin/python docs/hw/probes/tx_part_levels.py PART [--width W]

PART is ``sched`` (TxSched), ``join`` (TxJoin), ``data`` (TxData: join stage, DMA, frame
builder), ``rtx`` (the retransmit unit as ``Tx`` instantiates it). Prints one JSON object: reg-to-reg, in-to-reg, reg-to-out levels and the deepest
reg-to-reg path."""
import argparse
import json

from metaroce.hdl.retransmit import Retransmit
from metaroce.hdl.tx import TxData, TxJoin
from metaroce.hdl.tx_sched import tx_sched_small
from metaroce.models.tx import SMALL, layouts
from metaroce.sim import synth
from metaroce.sim.verilator import generate_verilog

_DATA = {k: SMALL[k] for k in ("conns", "streams", "paths", "depth", "pool", "outstanding")}


def part(name, width):
    if name == "sched":
        return tx_sched_small(width)
    if name == "rtx":
        return Retransmit(width, conns=SMALL["conns"], paths=SMALL["paths"], pool=SMALL["pool"])
    if name == "join":
        return TxJoin(layouts(SMALL["conns"], SMALL["streams"], SMALL["paths"], SMALL["depth"],
                              SMALL["pool"]), SMALL["outstanding"])
    return TxData(width, **_DATA)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("part", choices=("sched", "join", "data", "rtx"))
    ap.add_argument("--width", type=int, default=64)
    a = ap.parse_args()
    text, _ = synth.drop_zero_memory_init(generate_verilog(part(a.part, a.width), a.part))
    rep = synth.lut_levels(text, a.part)
    print(json.dumps({"part": a.part, "width": a.width, "reg_to_reg": rep.reg_to_reg,
                      "in_to_reg": rep.in_to_reg, "reg_to_out": rep.reg_to_out,
                      "path": rep.path, "seconds": round(rep.seconds, 1)}))


if __name__ == "__main__":
    main()
