"""cap29 (hw-engine.md MR-ENG-281): RdRows of the small engine (2 connections x 2 streams x 2
rows, join mode) with the per-connection initiator depth (``cap=True``, the built one) and with
the depth term constant true (``cap=False``: the depth registers unused and removed, RdRows as
before cap29): resources (the project's xcup flow) and LUT levels (MR-FLOW-010's generic flow).

    .venv/bin/python docs/hw/probes/cap29_rdrows_synth.py
"""
import json

from amaranth.back import verilog

from metaroce.hdl.engine import RdRows
from metaroce.models.engine import engine_layouts
from metaroce.models.rx import SMALL, layouts
from metaroce.sim import synth

lay = engine_layouts()
rx_lay = layouts(2, 4, 256, streams=SMALL["streams"])
for cap in (False, True):
    dut = RdRows(2, 2, rx_lay, lay.sched.rd, lay.sched.cqe, join=True, cap=cap)
    text = verilog.convert(dut, name="rd_rows")
    rep = synth.synthesize(text, "rd_rows")
    lev = synth.lut_levels(text, "rd_rows")
    print(json.dumps({"cap": cap, "luts": rep.luts, "ffs": rep.ffs, "lutram": rep.total.lutram,
                      "lut_levels": lev.lut_levels, "reg_to_reg": lev.reg_to_reg,
                      "in_to_out": lev.in_to_out}))
