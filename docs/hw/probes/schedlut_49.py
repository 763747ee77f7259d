"""schedlut49 (issue 12; not part of the design): the row scheduler's LUTs alone at the
parameters the TX gives it (``Tx(rows=True, conns=C, paths=P)``: ``TxSchedRows(width, C,
streams=2, P, depth=4, restores=False, rd_rows=False)`` with MR-TXS-001's small rest, as
``lvl42_rows_depth.py``'s ``dut``), ``metaroce synth``'s resource flow (``synth_xilinx -family
xcup``, Amaranth's RTLIL, cached by the text), the rows' reset contents left out
(``init_rows=False``: no logic changes). Prints per instance the totals and the LUTs/FFs of
each module of the hierarchy (``pipe`` the row pipeline). Run from the repository root:

    .venv/bin/python docs/hw/probes/schedlut_49.py [--hdl FILE] [CONNSxPATHS ...]

(default 4096x8 64x8; ``--hdl FILE``: ``TxSchedRows`` from another version of
hdl/tx_sched_rows.py, as ``lvl42_rows_depth.py --hdl``)."""
import json
import sys
import time
from pathlib import Path

from lvl42_rows_depth import dut, load

from metaroce.hdl.tx_sched_rows import TxSchedRows
from metaroce.sim import synth as S
from metaroce.sim.verilator import generate_rtlil

TOP = "tx_sched_rows"


def main(argv):
    cls, tag = TxSchedRows, "cur"
    if argv[:1] == ["--hdl"]:
        cls, tag, argv = load(Path(argv[1])), Path(argv[1]).stem, argv[2:]
    for inst in argv or ["4096x8", "64x8"]:
        c, p = map(int, inst.split("x"))
        t = time.time()
        d = dut(cls, c, p, 512, False)
        rep = S.synthesize(generate_rtlil(d, TOP, drop_zero_init=True), TOP, lang="rtlil")
        print(json.dumps({
            "inst": inst, "tag": tag, "row_bits": d.rl.row.size, "luts": rep.luts,
            "ffs": rep.ffs, "brams": rep.brams, "lutram": rep.total.lutram,
            "seconds": round(time.time() - t), "cached": rep.cached,
            "modules": {k: [v.luts, v.ffs] for k, v in sorted(rep.modules.items())}}),
            flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
