"""Depth probe, not part of the design: MR-FLOW-010's generic flow with ABC mapping for depth
alone (``if -K 6 -F 0 -A 0``: no area recovery, so a path is not stretched up to the design's
deepest), then each register's deepest input path in LUT levels, the deepest first. ABC's
default mapping recovers area on every path shallower than the deepest, so the one path
``lut_levels`` names is one of many at that depth; this lists which registers are there on
their own. Run from the repository root:

    .venv/bin/python docs/hw/probes/tx_depth_by_register.py [sched|tx] [--width W] [--top N]
"""
import argparse
import json
import re
import subprocess
import tempfile
from collections import defaultdict
from pathlib import Path

from metaroce.blocks import scratch_dir
from metaroce.hdl.tx_sched import tx_sched_small
from metaroce.sim import synth
from metaroce.sim.verilator import generate_verilog

ABC = "+strash;dch,-f;if,-K,6,-F,0,-A,0"


def script(top):
    return synth.levels_script(top).replace("abc -lut 6", f"abc -lut 6 -script {ABC}") \
        .replace("delete t:$mem_v2\n", "").replace("tee -q -o ltp.txt ltp -noff\n", "")


def depths(mod):
    names = synth._bit_names(mod)
    drv, ins_of, sinks = {}, {}, []
    for name, cell in mod["cells"].items():
        dirs, conns = cell.get("port_directions", {}), cell["connections"]
        ins = [b for p, bs in conns.items() if dirs.get(p) == "input" for b in bs if isinstance(b, int)]
        outs = [b for p, bs in conns.items() if dirs.get(p) == "output" for b in bs if isinstance(b, int)]
        if cell["type"].startswith(synth._FF_PREFIXES) or cell["type"].startswith("$mem"):
            q = outs[0] if outs else None
            sinks += [(b, names.get(q, name)) for p, bs in conns.items()
                      if dirs.get(p) == "input" and p not in ("C", "CLK", "RD_CLK", "WR_CLK")
                      for b in bs if isinstance(b, int)]
        else:
            for b in outs:
                drv[b] = name
            ins_of[name] = ins
    memo = {}

    def d(b):
        c = drv.get(b)
        if c is None:
            return 0
        if c not in memo:
            memo[c] = 1 + max((d(x) for x in ins_of[c]), default=0)
        return memo[c]
    import sys
    sys.setrecursionlimit(100000)
    per_reg = defaultdict(int)
    for b, reg in sinks:
        per_reg[re.sub(r"\[\d+\]$", "", reg)] = max(per_reg[re.sub(r"\[\d+\]$", "", reg)], d(b))
    return sorted(per_reg.items(), key=lambda kv: -kv[1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("part", choices=("sched", "tx"), nargs="?", default="sched")
    ap.add_argument("--width", type=int, default=64)
    ap.add_argument("--top", type=int, default=30)
    ap.add_argument("--verilog", help="the part's Verilog from a file (another commit's)")
    a = ap.parse_args()
    if a.verilog:
        design = None
    elif a.part == "sched":
        design = tx_sched_small(a.width)
    else:
        from metaroce.hdl.tx import tx_small
        design = tx_small(a.width)
    text = (Path(a.verilog).read_text() if design is None
            else synth.drop_zero_memory_init(generate_verilog(design, a.part))[0])
    work = Path(tempfile.mkdtemp(prefix="depth-", dir=scratch_dir()))
    (work / "design.v").write_text(text)
    (work / "levels.ys").write_text(script(a.part))
    subprocess.run([*synth.yosys_command(), "-q", "-l", "yosys.log", "-s", "levels.ys"],
                   cwd=work, check=True, capture_output=True)
    mod = json.loads((work / "levels.json").read_text())["modules"][a.part]
    rows = depths(mod)
    hist = defaultdict(int)
    for _, v in rows:
        hist[v] += 1
    print(json.dumps({"part": a.part, "width": a.width, "registers_by_depth": dict(sorted(hist.items())),
                      "deepest": rows[:a.top], "work": str(work)}))


if __name__ == "__main__":
    main()
