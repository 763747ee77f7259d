"""Per-sink LUT levels of a block in the generic flow of MR-FLOW-010 (not part of the design):
the deepest path into each register group or memory port, deepest first. Keeps levels.json in
~/.cache/metaroce/synth/bysink-BLOCK-WIDTH (pass --reuse to analyse it again without Yosys).

    .venv/bin/python docs/hw/probes/rx_levels_by_sink.py rx_256x4 64 [MIN_DEPTH] [--reuse]
"""
import json, re, sys, time
from metaroce.sim import synth as S
from metaroce import blocks
from metaroce.commands.verilog import make_verilog

blk, width = sys.argv[1], int(sys.argv[2])
mind = int(sys.argv[3]) if len(sys.argv) > 3 and sys.argv[3].isdigit() else 8
work = S.default_work_root() / f"bysink-{blk}-{width}"
if "--reuse" not in sys.argv:
    t = time.time()
    text = make_verilog(blocks.get(blk), width, for_synthesis=True)
    print("verilog", round(time.time() - t), "s", flush=True)
    script = S.levels_script(blk).replace("delete t:$mem_v2\n", "").replace("tee -q -o ltp.txt ltp -noff\n", "")
    t = time.time()
    p = S._run_yosys(S.yosys_command(), work, text, "levels.ys", script, 7200)
    print("yosys", p.returncode, round(time.time() - t), "s", flush=True)
net = json.loads((work / "levels.json").read_text())
mod = net["modules"][blk]
names = S._bit_names(mod)
nodes, reg_sinks = [], {}
for name, cell in mod["cells"].items():
    ct, conns, dirs = cell["type"], cell["connections"], cell.get("port_directions", {})
    ins = [b for p, bits in conns.items() if dirs.get(p) == "input" for b in bits]
    outs = [b for p, bits in conns.items() if dirs.get(p) == "output" for b in bits]
    if ct.startswith(S._FF_PREFIXES):
        clocks = {b for p in ("C", "CLK") for b in conns.get(p, [])}
        q = next((b for b in outs if isinstance(b, int)), None)
        reg_sinks.update((b, ("ff", q)) for b in ins if isinstance(b, int) and b not in clocks)
    elif ct in ("$mem_v2", "$mem"):
        reg_sinks.update((b, ("mem", name + "." + p)) for p, bits in conns.items()
                         if dirs.get(p) == "input" and p not in ("RD_CLK", "WR_CLK") for b in bits if isinstance(b, int))
    elif outs:
        nodes.append((name, ins, outs))
driver = {b: i for i, (_, _, o) in enumerate(nodes) for b in o if isinstance(b, int)}
sys.setrecursionlimit(100000)
depth, parent = {}, {}
def d(b):
    if not isinstance(b, int) or b not in driver:
        return 0
    i = driver[b]
    if i in depth:
        return depth[i]
    # iterative
    stack = [i]
    while stack:
        j = stack[-1]
        pend = [driver[x] for x in nodes[j][1] if isinstance(x, int) and x in driver and driver[x] not in depth]
        if pend:
            stack.extend(pend); continue
        stack.pop()
        best, par = 0, None
        for x in nodes[j][1]:
            v = depth.get(driver[x], 0) if isinstance(x, int) and x in driver else 0
            if v >= best:
                best, par = v, x
        depth[j], parent[j] = best + 1, par
    return depth[i]
groups = {}
for b, (kind, what) in reg_sinks.items():
    v = d(b)
    g = re.sub(r"\[\d+\]$", "", names.get(what, "?")) if kind == "ff" else what
    if v > groups.get(g, (0, None))[0]:
        groups[g] = (v, b)
def path(b):
    out = []
    while isinstance(b, int) and b in driver:
        out.append(names.get(b, "?")); b = parent[driver[b]]
    out.append(names.get(b, "?") if isinstance(b, int) else "const")
    return list(reversed(out))
for g, (v, b) in sorted(groups.items(), key=lambda x: -x[1][0]):
    if v < mind:
        break
    print(v, g, "  <-  ", " > ".join(path(b)))
