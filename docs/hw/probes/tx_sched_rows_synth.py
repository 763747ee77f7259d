"""row32: what the row scheduler's RTL (hdl/tx_sched_rows.py ``TxSchedRows``, hw-tx-sched.md
section 16, MR-TXS-250) costs, ``metaroce synth``'s flow (``sim.synth.synthesize``:
``synth_xilinx -family xcup``, memories inferred as block RAM, not counted as LUTs), per
instance ``CONNSxPATHS`` (the rest MR-TXS-001's small shape: 2 streams x 4 messages, chunk
window 16, 8 resends). The rows' reset contents are left out of the Verilog
(``init_rows=False``: they change no logic, only the text's size). Run from the repository
root:

    .venv/bin/python docs/hw/probes/tx_sched_rows_synth.py [--levels] [--no-forward] [--restores] [--rd-rows] [--pacing] [CONNSxPATHS ...]

(default 4096x8 256x4). Prints one JSON object per instance: LUTs, FFs, block RAMs (RAMB36
equivalents), LUT RAM, and the LUTs of each module of the hierarchy; with ``--levels`` instead
the generic flow's LUT levels (``sim.synth.lut_levels``, 6-LUTs, MR-FLOW-010); with
``--no-forward`` the wrong form without MR-TXS-221/252's forwards (their cost by difference);
with ``--restores`` the block with ``m_restore`` (MR-TXS-284, rowf33); with ``--rd-rows``
the block with ``m_rd`` (MR-TXS-325, rmrd34); with ``--pacing`` the block with the pacing
ports, the ask and late queues (MR-TXS-337..340, rpace35)."""
import json
import sys

from metaroce.hdl.tx_sched_rows import TxSchedRows
from metaroce.models.tx_sched import SMALL
from metaroce.sim import synth
from metaroce.sim.verilator import generate_verilog


def build(conns, paths, levels=False, forward=True, restores=False, rd_rows=False,
          pacing=False):
    dut = TxSchedRows(64, **dict(SMALL, conns=conns, paths=paths), init_rows=False,
                      forward=forward, restores=restores, rd_rows=rd_rows, pacing=pacing)
    text, _ = synth.drop_zero_memory_init(generate_verilog(dut, "tx_sched_rows"))
    if levels:
        lv = synth.lut_levels(text, "tx_sched_rows")
        return {"conns": conns, "paths": paths, "reg_to_reg": lv.reg_to_reg,
                "in_to_reg": lv.in_to_reg, "reg_to_out": lv.reg_to_out,
                "in_to_out": lv.in_to_out, "luts": lv.luts, "path": lv.path,
                "seconds": lv.seconds, "cached": lv.cached}
    rep = synth.synthesize(text, "tx_sched_rows")
    return {"conns": conns, "paths": paths, "forward": forward, "restores": restores,
            "rd_rows": rd_rows, "pacing": pacing, "row_bits": dut.rl.row.size,
            "luts": rep.luts,
            "ffs": rep.ffs, "brams": rep.brams, "urams": rep.total.urams,
            "lutram": rep.total.lutram, "carry": rep.total.carry, "muxf": rep.total.muxf,
            "seconds": rep.seconds, "cached": rep.cached,
            "modules": {k: v.luts for k, v in rep.modules.items()}}


def main(argv):
    levels, forward = "--levels" in argv, "--no-forward" not in argv
    restores, rd_rows = "--restores" in argv, "--rd-rows" in argv
    pacing = "--pacing" in argv
    for inst in [a for a in argv[1:] if not a.startswith("--")] or ["4096x8", "256x4"]:
        c, p = map(int, inst.split("x"))
        print(json.dumps(build(c, p, levels, forward, restores, rd_rows, pacing), default=str), flush=True)


if __name__ == "__main__":
    main(sys.argv)
