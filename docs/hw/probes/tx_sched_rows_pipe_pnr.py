"""srow31: ``RowPipe`` (MR-TXS-220/221/237) placed and routed on the ECP5-85 (``sim.pnr``):
512 rows (4,096 x 2,383 bits does not fit its block RAM) of the row scheduler's 2,383 bits,
S2's update the stand-in of tx_sched_rows_pipe_synth.py. The pipeline's own Fmax (the
forwards, the memory's read into S1's select), not the scheduler's: S2's real logic is not
in it. Run from the repository root:

    .venv/bin/python docs/hw/probes/tx_sched_rows_pipe_pnr.py [ROWS] [MHZ]

Prints one JSON object."""
import json
import sys

from metaroce.hdl.tx_sched_rows import RowPipe
from metaroce.sim import pnr, synth
from metaroce.sim.verilator import generate_verilog

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from tx_sched_rows_pipe_synth import ARG, WIDTH, xor_arg  # noqa: E402


def main(argv):
    rows = int(argv[1]) if len(argv) > 1 else 512
    mhz = float(argv[2]) if len(argv) > 2 else 125.0
    text, _ = synth.drop_zero_memory_init(
        generate_verilog(RowPipe(rows, WIDTH, ARG, xor_arg), "row_pipe"))
    rep = pnr.place_and_route(text, "row_pipe", freq_mhz=mhz)
    out = {k: v for k, v in rep.to_json().items() if k != "critical_path"}
    out["critical_path_steps"] = len(rep.critical_path)
    out["critical_path_ends"] = [rep.critical_path[0], rep.critical_path[-1]] if rep.critical_path else []
    print(json.dumps(dict(out, rows=rows, width=WIDTH), indent=1, default=str))


if __name__ == "__main__":
    main(sys.argv)
