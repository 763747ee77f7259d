"""rows43 (issue 12; not part of the design): the LUT levels of the schedule op's terms alone
(``TxSchedRows._sched_terms``, formed in S2 from the row) between registers: a row register,
the terms, their register, through ``metaroce synth``'s levels flow (``abc -lut 6``), so the cone's own depth
is seen without the rest of the scheduler (abc's area recovery stretches every path of a
netlist to its deepest). Run from the repository root:

    .venv/bin/python docs/hw/probes/rows43_cone.py [--hdl FILE] [CONNSxPATHS]

(default 64x8; ``--hdl`` as ``lvl42_rows_depth.py``'s)."""
import json
import sys

from lvl42_rows_depth import dut, rows_probe_args

from amaranth.hdl import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from metaroce.sim import synth as S
from metaroce.sim.verilator import generate_rtlil

TOP = "rows_cone"


class Cone(wiring.Component):
    def __init__(self, d):
        self.d = d
        super().__init__({"row": In(d.rl.row.size), "pre": Out(d._sched_layout().size)})

    def elaborate(self, platform):
        m = Module()
        row = Signal(self.d.rl.row.size)
        m.d.sync += [row.eq(self.row), self.pre.eq(self.d._sched_terms(m, row))]
        return m


def main(argv):
    args, cls, tag, c, p = rows_probe_args(argv, __doc__)
    d = dut(cls, c, p, args.width, False)
    d._MustUse__silence = True
    work = S.default_work_root() / f"rows43-cone-{tag}-{args.inst}"
    text = generate_rtlil(Cone(d), TOP, drop_zero_init=True)
    script = S.levels_script(TOP, "rtlil")
    proc = S._run_yosys(S.yosys_command(), work, text, "levels.ys", script, 3600, "rtlil")
    if proc.returncode != 0:
        sys.exit(proc.stderr[-2000:])
    rep = S.analyse_levels(json.loads((work / "levels.json").read_text()), TOP)
    print(json.dumps({"inst": args.inst, "tag": tag, "cone": "sched_terms", "reg_to_reg": rep.reg_to_reg,
                      "luts": rep.luts}))


if __name__ == "__main__":
    main(sys.argv[1:])
