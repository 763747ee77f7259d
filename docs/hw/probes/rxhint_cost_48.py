"""rxhint48 (issue 13; not part of the design): the cost of the receiver's own rate hint
(hw-engine.md MR-ENG-344): ``RxHint`` at the engine's 2 connections and at 4,096, and the
register block as the engine builds it (``Regs.for_rx`` of the engine's receive half, its
parser's, TX half's and engine's counters) without and with the hint window (``hint``). The
project's xcup flow (``sim.synth.synthesize``: LUT, FF).

    nice -n 10 .venv/bin/python docs/hw/probes/rxhint_cost_48.py [NAME ...]
"""
import sys
from pathlib import Path

from metaroce.hdl.regs import Regs
from metaroce.hdl.rx_hint import RxHint
from metaroce.models.rx import SMALL


def part(name):
    if name == "rx_hint":
        return RxHint(2)
    if name == "rx_hint_4096":
        return RxHint(4096)
    # the engine's receive half's register block (2 connections x 4 paths, 256 keys)
    return Regs(conns=2, paths=SMALL["paths"], keys=256, parser=True, tx=True, eng=True,
                hint=name == "regs_hint")


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).parent))
    from engine_hints_cost_47 import xcup_rows
    xcup_rows(part, sys.argv[1:] or ["rx_hint", "rx_hint_4096", "regs", "regs_hint"])
