"""Depth probe of the congestion window block, not part of the design: the registers of
``Cwnd`` by their deepest input path in LUT levels, in two mappings of MR-FLOW-010's generic
flow: ABC for depth alone (``tx_depth_by_register.py``'s script: every register at its own
depth) and the flow's own ``abc -lut 6`` (what ``metaroce synth``'s ``lut_levels`` measures).
Run from the repository root:

    .venv/bin/python docs/hw/probes/cwnd_depth_by_register.py [--hints] [--top N]
"""
import argparse
import json
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from tx_depth_by_register import depths, script  # noqa: E402

from metaroce.blocks import scratch_dir  # noqa: E402
from metaroce.hdl.cwnd import cwnd_hinted_small, cwnd_small  # noqa: E402
from metaroce.sim import synth  # noqa: E402
from metaroce.sim.verilator import generate_verilog  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hints", action="store_true", help="the hinted block (MR-CW-060)")
    ap.add_argument("--top", type=int, default=30)
    a = ap.parse_args()
    top = "cwnd"
    design = cwnd_hinted_small() if a.hints else cwnd_small()
    text = synth.drop_zero_memory_init(generate_verilog(design, top))[0]
    out = {"hints": a.hints}
    for label, ys in (("depth_only", script(top)),
                      ("flow", synth.levels_script(top).replace("delete t:$mem_v2\n", "")
                       .replace("tee -q -o ltp.txt ltp -noff\n", ""))):
        work = Path(tempfile.mkdtemp(prefix="depth-", dir=scratch_dir()))
        (work / "design.v").write_text(text)
        (work / "levels.ys").write_text(ys)
        subprocess.run([*synth.yosys_command(), "-q", "-l", "yosys.log", "-s", "levels.ys"],
                       cwd=work, check=True, capture_output=True)
        rows = depths(json.loads((work / "levels.json").read_text())["modules"][top])
        hist = defaultdict(int)
        for _, v in rows:
            hist[v] += 1
        out[label] = {"registers_by_depth": dict(sorted(hist.items())), "deepest": rows[:a.top]}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
