"""rsc27 (docs/hw/engine-results.md): the whole engine at 64 bits with the responder resources
(max_rd_atomic 8, the default) or without (none), synthesized with the project's flow (resources
only, no LUT-levels run). Usage: python docs/probes/rsc27_synth_engine.py 8|none"""
import json, sys, time
from amaranth.back import verilog
from metaroce.hdl.engine import Engine
from metaroce.sim import synth
n = None if sys.argv[1] == "none" else int(sys.argv[1])
t = time.time()
name = f"engine_rsc_{sys.argv[1]}"
text = verilog.convert(Engine(64, max_rd_atomic=n), name=name)
rep = synth.synthesize(text, name, use_cache=False)
print(json.dumps({"max_rd_atomic": n, "luts": rep.luts, "ffs": rep.ffs, "lutram": rep.total.lutram,
                  "brams": rep.brams, "yosys": rep.yosys, "s": round(time.time() - t)}))
