"""rxhintmem49 (issue 13; not part of the design): ``RxHint`` mapped to the ECP5 alone with the
build's flow (``sim.pnr.map_ecp5``: LUT4, CCU2C, DP16KD, TRELLIS_FF and nextpnr's COMB estimate),
hw-engine.md MR-ENG-356: ``mem4096`` the block ``rx_hint_4096`` (the memory form), ``flops4096``
the flip-flop form at 4,096 (main's ``rx_hint_4096``), ``small`` the block ``rx_hint``
(``RxHint(2)``, flip-flops), ``mem64``/``flops64`` both forms at ``MEM_FROM``. The xcup figures
are ``metaroce synth rx_hint_4096 --width 64 --json`` (and ``rx_hint``).

    nice -n 10 .venv/bin/python docs/hw/probes/rxhintmem_cost_49.py OUT [NAME ...]
    nice -n 10 .venv/bin/python docs/hw/probes/rxhintmem_cost_49.py --xcup [NAME ...]

``--xcup``: the project's xcup flow instead (``sim.synth.synthesize``: LUT, FF, LUT RAM, block
RAM, DSP), e.g. both forms
at ``MEM_FROM``.
"""
import json
import sys
from pathlib import Path

from metaroce.hdl.rx_hint import RxHint
from metaroce.sim import pnr

PARTS = {"mem4096": (4096, "memory"), "flops4096": (4096, "flops"), "small": (2, "flops"),
         "mem64": (64, "memory"), "flops64": (64, "flops")}


def part(name):
    conns, form = PARTS[name]
    return RxHint(conns, form=form)


if __name__ == "__main__":
    if sys.argv[1] == "--xcup":
        from amaranth.back import verilog

        from metaroce.sim import synth
        for name in sys.argv[2:] or ["mem64", "flops64"]:
            rep = synth.synthesize(verilog.convert(part(name), name="rx_hint"), "rx_hint")
            t = rep.total
            print("ROW", json.dumps({"part": name, "lut": t.luts, "ff": t.ffs, "lutram": t.lutram,
                                     "brams": t.brams, "dsps": t.dsps}), flush=True)
        sys.exit(0)
    out = Path(sys.argv[1])
    for name in sys.argv[2:] or ["small", "mem4096"]:
        conns, form = PARTS[name]
        fig = pnr.ecp5_counts(pnr.map_ecp5(RxHint(conns, form=form), "rx_hint", out / name))
        print("ROW", json.dumps({"part": name, **fig}), flush=True)
