"""txr39 (issue 12; not part of the design): ``metaroce synth``'s generic LUT-level run
(``sim.synth.levels_script``, ``abc -lut 6``) on a block, printing the deepest path of each
kind (reg_to_reg, in_to_reg, ...), not only reg_to_reg's, and the ``depth`` deepest sinks of
``kind``, to find which input or register ends the deepest paths.

    .venv/bin/python docs/hw/probes/txr39_levels_paths.py BLOCK WIDTH OUT_DIR [KIND] [N]
"""
import inspect
import json
import sys
from pathlib import Path

from metaroce.blocks import get as get_block
from metaroce.commands.verilog import make_verilog
from metaroce.sim import synth

name, width, out = sys.argv[1], int(sys.argv[2]), Path(sys.argv[3]).resolve()
kind_key = sys.argv[4] if len(sys.argv) > 4 else "in_to_reg"
blk = get_block(name)
work = out / "levels"
if not (work / "levels.json").is_file():
    proc = synth._run_yosys(synth.yosys_command(), work, make_verilog(blk, width, for_synthesis=True),
                            "levels.ys", synth.levels_script(blk.name), 7200)
    assert proc.returncode == 0, proc.stderr[-2000:]
netlist = json.loads((work / "levels.json").read_text())
src = inspect.getsource(synth.analyse_levels)
start = kind_key.split("_to_")[0]
src = (src.replace('if key == "reg_to_reg"', f'if key == "{kind_key}"')
       .replace('parent[i]["reg"]', f'parent[i]["{start}"]'))
ns = dict(vars(synth))
exec(compile(src, "analyse_levels", "exec"), ns)
rep = ns["analyse_levels"](netlist, blk.name)
print(json.dumps({"reg_to_reg": rep.reg_to_reg, "in_to_reg": rep.in_to_reg,
                  "reg_to_out": rep.reg_to_out, "in_to_out": rep.in_to_out}))
print(kind_key, "deepest path:", " ".join(rep.path))
