"""Intrinsic LUT levels of chosen register groups of a block (not part of the design): the
generic flow of MR-FLOW-010 (the levels script of ``metaroce.sim.synth``) run on the input cone
of each group alone, cut at flip-flops and memory read ports. On the whole netlist abc's area
recovery may stretch any path up to the design's deepest, so the per-sink depths of
``rx_levels_by_sink.py`` below that maximum are upper bounds; a cone alone gives the depth of
its own deepest path.

    .venv/bin/python docs/hw/probes/rx_levels_by_cone.py rx_256x4 64 [--reuse] [--full] SINK...
    .venv/bin/python docs/hw/probes/rx_levels_by_cone.py rx_256x4 64 --mapped SINK...

SINK: the name of a register (the wire its flip-flops drive, e.g. ``msg_row``, ``ctr20_low``).
Work files in ~/.cache/metaroce/synth/bysink-BLOCK-WIDTH (METAROCE_SYNTH_DIR, not under /tmp),
shared with rx_levels_by_sink.py: ``--full`` also writes its levels.json (the whole design mapped
by the same commands), so ``rx_levels_by_sink.py BLOCK WIDTH --reuse`` lists it; ``--reuse``
starts from the pre-mapping netlist (pre.il) of an earlier run. ``--mapped`` instead takes the
LUT netlist rx_levels_by_sink.py left (levels.json) and maps each cone of it again alone (its
LUTs back to gates by ``lut2mux``): no new synthesis; prints the cone's depth in that netlist
and alone.
"""
import re
import subprocess
import sys
import time
from metaroce.sim import synth as S
from metaroce import blocks
from metaroce.commands.verilog import make_verilog

blk, width = sys.argv[1], int(sys.argv[2])
flags = {a for a in sys.argv[3:] if a.startswith("--")}
sinks = [a for a in sys.argv[3:] if not a.startswith("--")]
work = S.default_work_root() / f"bysink-{blk}-{width}"
work.mkdir(parents=True, exist_ok=True)
ycmd = S.yosys_command()


def run(script, name):
    (work / name).write_text(script)
    t = time.time()
    p = subprocess.run(ycmd + ["-q", "-l", name + ".log", "-s", name], cwd=work, capture_output=True, text=True)
    if p.returncode:
        sys.exit(f"{name}: yosys failed: {(p.stdout + p.stderr)[-500:]}")
    return round(time.time() - t)


if "--mapped" in flags:
    lines = ["read_json levels.json", f"hierarchy -top {blk}", "design -save mapped"]
    for sink in sinks:
        tag = re.sub(r"[^A-Za-z0-9_]", "_", sink)
        lines += ["design -load mapped", f"select -set sinks w:{sink} %ci2 t:$_DFF_P_ %i",
                  "setattr -set keep 1 @sinks", "select -set cone @sinks %ci*:-$_DFF_P_[Q]:-$mem_v2[RD_DATA]",
                  "select -set cone @cone @cone %ci1 %u", "delete @cone %n", "opt_clean",
                  f"tee -q -o mapped_{tag}.before ltp -noff", "lut2mux", "abc -lut 6", "opt_clean",
                  f"tee -q -o mapped_{tag}.ltp ltp -noff"]
    print("mapped", run("\n".join(lines) + "\n", "mapped.ys"), "s", flush=True)
    for sink in sinks:
        tag = re.sub(r"[^A-Za-z0-9_]", "_", sink)
        print(S.parse_ltp((work / f"mapped_{tag}.before").read_text()), "->",
              S.parse_ltp((work / f"mapped_{tag}.ltp").read_text()), sink, flush=True)
    sys.exit(0)
if "--reuse" not in flags:
    t = time.time()
    (work / "design.v").write_text(make_verilog(blocks.get(blk), width, for_synthesis=True))
    print("verilog", round(time.time() - t), "s", flush=True)
    prep = S.levels_script(blk).split("abc -lut 6")[0] + "write_rtlil pre.il\n"
    print("prep", run(prep, "prep.ys"), "s", flush=True)
if "--full" in flags:
    print("full", run("read_rtlil pre.il\nabc -lut 6\nopt_clean\nwrite_json levels.json\n", "full.ys"), "s", flush=True)
# a cone: the group's flip-flops (kept), everything driving them back to flip-flop outputs and
# memory read data, and the flip-flops and memories at that border (their outputs the starts)
stop = "-$_DFF_P_[Q]:-$mem_v2[RD_DATA]"
for sink in sinks:
    tag = re.sub(r"[^A-Za-z0-9_]", "_", sink)
    run("\n".join([
        "read_rtlil pre.il",
        f"select -set sinks w:{sink} %ci2 t:$_DFF_P_ %i",
        "setattr -set keep 1 @sinks",
        f"select -set cone @sinks %ci*:{stop}",
        "select -set cone @cone @cone %ci1 %u",
        "delete @cone %n", "opt_clean", "abc -lut 6", "opt_clean",
        f"tee -q -o cone_{tag}.ltp ltp -noff"]) + "\n", f"cone_{tag}.ys")
    print(S.parse_ltp((work / f"cone_{tag}.ltp").read_text()), sink, flush=True)
