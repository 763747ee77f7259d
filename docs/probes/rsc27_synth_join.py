"""rsc27 (docs/hw/engine-results.md): RspJoin with and without its queue of frees (the engine's new
logic, MR-ENG-241/252), synthesized with the project's flow (metaroce.sim.synth.synthesize)."""
import json
from amaranth.back import verilog
from metaroce.hdl.engine import RspJoin
from metaroce.models.engine import engine_layouts, rsp_free_depth
from metaroce.models.rx import SMALL, layouts
from metaroce.sim import synth
lay = engine_layouts().sched
cfg = layouts(2, 4, 256, streams=SMALL["streams"]).cfg
out = {}
for name, depth in (("rsp_join", 0), ("rsp_join_frees", rsp_free_depth(2, 8))):
    dut = RspJoin(lay.rsp, lay.rsp_done, cfg_layout=cfg, free_depth=depth)
    text = verilog.convert(dut, name=name)
    rep = synth.synthesize(text, name, use_cache=False)
    lv = synth.lut_levels(text, name, use_cache=False)
    out[name] = {"free_depth": depth, "luts": rep.luts, "ffs": rep.ffs, "lutram": rep.total.lutram,
                 "brams": rep.brams, "lut_levels": lv.lut_levels, "yosys": rep.yosys}
print(json.dumps(out, indent=1))
