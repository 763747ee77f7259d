"""psneng46 (issue 13; not part of the design): the cost of the engine's initial-PSN registers
(hw-engine.md MR-ENG-310): ``PsnInit`` at the small engine's layouts (the whole added logic) and
the register block of the engine (``Regs(conns=2, paths=4, keys=256, eng=True)``) with its
engine counter window of 8 counters (after) against 7 (before, main: the map without
PSN_IGNORED; the block's code is unchanged). Two flows: the project's generic xcup flow
(``sim.synth.synthesize``: LUT, FF) and the ECP5 build's packed counts
(``engine_block_ecp5.packed_row``: TRELLIS_COMB, TRELLIS_FF).

    nice -n 10 .venv/bin/python docs/hw/probes/psn_init_cost_46.py OUT_DIR
"""
import importlib.util
import json
import sys
from pathlib import Path

from amaranth.back import verilog

from metaroce.hdl.engine import PsnInit
from metaroce.hdl.regs import Regs
from metaroce.models import regs as mregs
from metaroce.models.engine import engine_layouts
from metaroce.models.rx import SMALL as RX_SMALL, layouts as rx_layouts
from metaroce.sim import synth

out = Path(sys.argv[1]).resolve()
spec = importlib.util.spec_from_file_location("ebe", str(Path(__file__).with_name("engine_block_ecp5.py")))
ebe = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ebe)


def psn_init():
    return PsnInit(rx_layouts(2, 4, 256, streams=RX_SMALL["streams"]).cfg, engine_layouts().sched.psn)


def regs(before):
    if before:          # main's map: the engine window without PSN_IGNORED
        full = mregs.eng_counter_names
        mregs._NAMES["eng"] = lambda: full()[:-1]
        try:
            return Regs(conns=2, paths=4, keys=256, eng=True)
        finally:
            mregs._NAMES["eng"] = full
    return Regs(conns=2, paths=4, keys=256, eng=True)


rows = {}
for name, make in (("psn_init", psn_init), ("regs_eng_before", lambda: regs(True)),
                   ("regs_eng_after", lambda: regs(False))):
    rep = synth.synthesize(verilog.convert(make(), name=name), name)
    ecp5 = ebe.packed_row(make(), name, out / name)
    rows[name] = {"xcup_lut": rep.luts, "xcup_ff": rep.ffs, "ecp5_comb": ecp5.get("TRELLIS_COMB"),
                  "ecp5_ff": ecp5.get("TRELLIS_FF")}
    print(name, json.dumps(rows[name]), flush=True)
print("ROWS", json.dumps(rows))
