"""hinteng47 (issues 12, 13; not part of the design): the cost of the rate hints in the whole
engine at 64 bits (hw-engine.md MR-ENG-326): what ``Engine(64, hints=True)`` changes against
``Engine(64)``: its TX half (``Tx(hints=True, control=True)`` at interval 1 against the
engine's ``Tx`` at interval 8), and ``AckIn``/``AckOut`` (the hint's decode and write). The
receive half and the engine's other blocks are the same objects in both. The project's xcup flow
(``sim.synth.synthesize``: LUT, FF); ``tx_interval1`` isolates the interval's share (the engine's
TX half at interval 1 without hints).

    nice -n 10 .venv/bin/python docs/hw/probes/engine_hints_cost_47.py [NAME ...]
"""
import json
import sys

from amaranth.back import verilog

from metaroce.hdl.engine import AckIn, AckOut, Engine
from metaroce.sim import synth


def part(name):
    hints = name.endswith("_hints") or name == "tx_hints"
    e = Engine(64, **({"interval": 1} if name == "tx_interval1" else {"hints": True} if hints else {}))
    e._MustUse__silence = e.rx_half._MustUse__silence = True
    if name.startswith("tx"):
        return e.tx
    e.tx._MustUse__silence = True
    rxh, tx = e.rx_half, e.tx
    if name.startswith("ack_in"):       # as Engine.elaborate builds them
        return AckIn(e.conns, rxh.signature.members["m_peer_ack"].signature, tx.lay.rtx.ack, hints=hints)
    return AckOut(e.conns, rxh.lay.ack, tx.lay.cfg, hints=hints)


def xcup_rows(make, names):
    """Each named part's LUT and FF in the xcup flow, printed as they come, then all of them
    (``make(name)`` builds the part; rxhint_cost_48.py uses it too)."""
    rows = {}
    for name in names:
        rep = synth.synthesize(verilog.convert(make(name), name=name), name)
        rows[name] = {"xcup_lut": rep.luts, "xcup_ff": rep.ffs}
        print(name, json.dumps(rows[name]), flush=True)
    print("ROWS", json.dumps(rows))
    return rows


if __name__ == "__main__":
    xcup_rows(part, sys.argv[1:] or ["ack_in", "ack_in_hints", "ack_out", "ack_out_hints", "tx", "tx_hints",
                                     "tx_interval1"])
