"""Where the parser's LUTs and carry chains go at the whole engine's parameters (issue 13, rtxa38;
not part of the design): retransmit_breakdown.py's two reports on ``hdl/parser.py``.

The parser as the engine builds it (``EngineRx``: ``Parser(64, max_frame=9216,
drop_on_full=False)``) with Amaranth's source locations, elaborated with the build's platform:
1. the build's flow alone (``synth_ecp5 -noiopad -nowidelut``, flattened, ``stat``): LUT4, CCU2C,
   DPR16X4, FF, DP16KD, COMB = LUT4 + 2 CCU2C + 6 DPR16X4; CCU2C by source line, LUT4s by the
   first flip-flop or memory port they feed;
2. the gate count before ABC by section and line of hdl/parser.py.

    .venv/bin/python docs/hw/probes/parser_breakdown.py [--keep DIR] [--reuse] [--no-map]
"""
import sys
from pathlib import Path

from amaranth.back import rtlil

from metaroce import blocks

import retransmit_breakdown as rb   # the same two reports (a sibling probe)

rb.TOP = "parser"
rb.RTX_PY = rb.ROOT / "hdl" / "parser.py"


def unit():
    """The parser as ``hdl.engine.EngineRx`` makes it at the engine's parameters."""
    from metaroce.hdl.parser import Parser
    return Parser(64, max_frame=9216, drop_on_full=False)


def main(argv):
    keep = argv[argv.index("--keep") + 1] if "--keep" in argv else None
    work = Path(keep) if keep else blocks.scratch_dir() / "parser_breakdown"
    work.mkdir(parents=True, exist_ok=True)
    if not ("--reuse" in argv and (work / "gates.json").exists()):
        from metaroce.sim.pnr import ECP5
        (work / "design.il").write_text(rtlil.convert(unit(), name=rb.TOP, emit_src=True, platform=ECP5))
        (work / rb.RTX_PY.name).write_text(rb.RTX_PY.read_text())
        rb.gates(work, drop_init=True)
        if "--no-map" not in argv:
            rb.mapped(work)
    if (work / "stat.json").exists():
        rb.report_mapped(work)
    rb.report_gates(work)


if __name__ == "__main__":
    main(sys.argv)
