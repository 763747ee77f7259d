"""Depth probe of one registered add in MR-FLOW-010's generic flow, the scheduler's two adder
forms (hw-tx-sched.md MR-TXS-038): ``_Arith(carry_chain=False)`` (the prefix tree) against
``carry_chain=True`` (a plain ``+``), a signed register of N bits plus an 11-bit one (a room
and a packet's bytes), then a mux into a register. Not part of the design. Run from the
repository root:

    .venv/bin/python docs/hw/probes/tx_adder_levels.py [N ...]

Prints one JSON object per form and width: reg-to-reg levels and LUTs."""
import json
import sys

from amaranth.hdl import Module, Mux, Signal, signed
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from metaroce.hdl.tx_sched import _Arith
from metaroce.sim import synth
from metaroce.sim.verilator import generate_verilog


class OneAdd(wiring.Component):
    def __init__(self, carry_chain, n):
        self.carry_chain, self.n = carry_chain, n
        super().__init__({"a": In(signed(n)), "b": In(11), "sel": In(1), "o": Out(signed(n))})

    def elaborate(self, platform):
        m = Module()
        a, b, sel, o = Signal(signed(self.n)), Signal(11), Signal(), Signal(signed(self.n))
        m.d.sync += [a.eq(self.a), b.eq(self.b), sel.eq(self.sel)]
        m.d.sync += o.eq(Mux(sel, _Arith(m, self.carry_chain).add(a, b), 77))
        m.d.comb += self.o.eq(o)
        return m


def main():
    for n in [int(x) for x in sys.argv[1:]] or [13, 26, 32]:
        for carry_chain in (False, True):
            rep = synth.lut_levels(generate_verilog(OneAdd(carry_chain, n), "one_add"), "one_add")
            print(json.dumps({"bits": n, "form": "+" if carry_chain else "prefix",
                              "reg_to_reg": rep.reg_to_reg, "luts": rep.luts}))


if __name__ == "__main__":
    main()
