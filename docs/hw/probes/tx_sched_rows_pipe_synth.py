"""srow31: what the row pipeline (hdl/tx_sched_rows.py ``RowPipe``, MR-TXS-220/221) costs in
LUTs at the row scheduler's row width (2,383 bits at 4,096 x 8, MR-TXS-206), with and without
its forwards, ``metaroce synth``'s flow (``sim.synth.synthesize``). S2's update here is a
stand-in (the row XOR its 16-bit argument repeated, so no bit of the row is constant): the
difference of the two builds is the forwarding's cost. Run from the repository root:

    .venv/bin/python docs/hw/probes/tx_sched_rows_pipe_synth.py [ROWS]

(default 4096). Prints one JSON object."""
import json
import sys

from amaranth.hdl import Cat

from metaroce.hdl.tx_sched_rows import RowPipe
from metaroce.sim import synth
from metaroce.sim.verilator import generate_verilog

WIDTH, ARG = 2383, 16


def xor_arg(m, row, arg):
    return row ^ Cat(*([arg] * (WIDTH // ARG + 1)))[:WIDTH]


def build(rows, forward):
    text, _ = synth.drop_zero_memory_init(
        generate_verilog(RowPipe(rows, WIDTH, ARG, xor_arg, forward=forward), "row_pipe"))
    rep = synth.synthesize(text, "row_pipe")
    return {"forward": forward, "luts": rep.luts, "ffs": rep.ffs, "seconds": rep.seconds,
            "cached": rep.cached}


def main(argv):
    rows = int(argv[1]) if len(argv) > 1 else 4096
    out = {"rows": rows, "width": WIDTH, "builds": [build(rows, f) for f in (True, False)]}
    out["forwarding_luts"] = out["builds"][0]["luts"] - out["builds"][1]["luts"]
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main(sys.argv)
