"""Depth probe, not part of the design: the windows block as the TX builds it
(``Cwnd(verdicts=True)``, ``mtu`` the scheduler's constant, ``beta_q`` and ``cap`` ports), by
MR-FLOW-010's levels flow (``metaroce synth``'s ``lut_levels``): the deepest register to
register path and its nets. Run from the repository root:

    .venv/bin/python docs/hw/probes/cwnd_tx_levels.py [--mtu 1024] [--port-mtu] [--share-out] [--tx]
        [--tx --no-share-out]

``--tx`` is ``tx_verdicts`` as built (the windows' share-out on, hw-tx.md MR-TX-300);
``--no-share-out`` with it the TX's join without it (``Tx(verdicts=True, share_out=False)``).
"""
import argparse
import json

from amaranth.hdl import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import flipped

from metaroce.hdl.cwnd import Cwnd
from metaroce.sim import synth
from metaroce.sim.verilator import generate_verilog


class CwndConstMtu(wiring.Component):
    """``Cwnd(verdicts=True)`` with ``mtu`` a constant, as ``Tx(verdicts=True)`` wires it."""

    def __init__(self, mtu, verdicts=True):
        self.mtu_value = mtu
        self.cw = Cwnd(64, verdicts=verdicts)
        sig = self.cw.signature.members
        super().__init__({n: sig[n] for n in sig if n != "mtu"})

    def elaborate(self, platform):
        m = Module()
        m.submodules.cwnd = cw = self.cw
        for n in self.signature.members:
            if n in ("beta_q", "cap"):
                m.d.comb += getattr(cw, n).eq(getattr(self, n))
            else:
                wiring.connect(m, flipped(getattr(self, n)), getattr(cw, n))
        m.d.comb += cw.mtu.eq(self.mtu_value)
        return m


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mtu", type=int, default=1024)
    ap.add_argument("--port-mtu", action="store_true", help="the block alone (mtu a port)")
    ap.add_argument("--tx", action="store_true", help="the whole block tx_verdicts")
    ap.add_argument("--share-out", action="store_true", help="Cwnd(share_out=True), mtu a port")
    ap.add_argument("--no-share-out", action="store_true",
                    help="with --tx: Tx(verdicts=True, share_out=False)")
    a = ap.parse_args()
    top = "cwnd_tx"
    if a.tx:
        from metaroce.hdl.tx import SMALL, Tx
        top = "tx_verdicts"
        design = Tx(64, **SMALL, verdicts=True, share_out=not a.no_share_out)
    elif a.share_out:
        top, design = "cwnd_share_out", Cwnd(64, verdicts=True, share_out=True)
    else:
        design = Cwnd(64, verdicts=True) if a.port_mtu else CwndConstMtu(a.mtu)
    text = synth.drop_zero_memory_init(generate_verilog(design, top))[0]
    rep = synth.lut_levels(text, top)
    print(json.dumps({"top": top, "mtu": None if a.port_mtu or a.share_out else a.mtu, "reg_to_reg": rep.reg_to_reg,
                      "path": rep.path, "luts": rep.luts}, indent=1))


if __name__ == "__main__":
    main()
