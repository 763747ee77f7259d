"""Session 44 (issue 12; not part of the design): where the TX's register scheduler parts from its
model in tb/tx.py ``tx_late_fail``'s run (``tx_cases.late_fail_batch``, seed 6 at 400 ns a
cycle), the run of the slow ``tests/test_tx_rtl.py::test_tx_rtl_late_read_error``.

``Tx(64, SMALL)`` against ``TxCycleModel`` in the Amaranth simulator (as the Verilator test,
about a minute), with the scheduler's own ports sampled in the RTL and its model's step inputs
and outputs recorded: prints the TX's mismatch, the first cycle where the scheduler's inputs or
outputs differ, and the ports' valids and the frame/sent handshakes before it.

    .venv/bin/python -W ignore docs/hw/probes/sched_div44.py [SEED] [NS_PER_CYCLE]

Found (main 1f0e246, and b37694e before late44): the scheduler's inputs agree at every cycle up
to 466 and its outputs agree to 466; after the frame queue's one take at 465 (``m_frame`` ready
for one cycle after 25 cycles of backpressure) the RTL pushes the next packet's sent record at
467 (connection 0, path 3, PSN 1) and the model at 468 (connection 1, path 2, PSN 2): another
decision a cycle earlier, on equal inputs. The TX then mismatches on the retransmit unit's
``sent`` counter (``reg_data``) at 472.
"""
import sys

import metaroce.tb.lockstep as L
from metaroce.hdl.tx import Tx
from metaroce.models import tx_cases as xc
from metaroce.models.tx import SMALL, TxCycleModel
from metaroce.tb.lockstep import port_values
from metaroce.tb.tx import _sem


def fields(layout, value, names):
    return {n: (value >> f.offset) & ((1 << f.width) - 1) for n, f in layout if n in names}


def main(argv):
    seed = int(argv[0]) if argv else 6
    ns = int(argv[1]) if len(argv) > 1 else 400
    model = TxCycleModel(64, **SMALL)
    items, rsps, drv = xc.late_fail_batch(_sem(), SMALL, model.lay, 64, seed=seed, ns_per_cycle=ns)
    drv.sem = model.sched.sem
    dut = Tx(64, **SMALL)
    names = model.sched.port_names()
    ins_n, outs_n = names["inputs"], names["outputs"]
    sig = port_values(dut.sched, ins_n + outs_n)
    rtl, mod = [], []

    async def watch(ctx):
        async for _, _, *vals in ctx.tick().sample(*sig.values()):
            rtl.append(dict(zip(sig, vals)))
    step = model.sched.step

    def sched_step(ins):
        out = step(ins)
        mod.append((dict(ins), dict(out)))
        return out
    model.sched.step = sched_step
    try:
        core = L.AmaranthSim(dut).run(model, drv, busy=model.busy, background=[watch])
        print("no mismatch:", core.cycle, "cycles")
    except L.Mismatch as e:
        print(str(e).splitlines()[0])
    first = None
    for c in range(min(len(mod), len(rtl))):
        i, o = mod[c]
        diff = ([n for n in ins_n if n in i and i[n] != rtl[c][n]]
                + [n for n in outs_n if n in o and o[n] != rtl[c][n]])
        if diff:
            first = c
            print("scheduler's first difference at cycle", c, diff[:6])
            break
    if first is None:
        return
    sl = model.lay.sched.sent
    for c in range(max(0, first - 6), first + 2):
        if c >= min(len(mod), len(rtl)):
            break
        i, o = mod[c]
        print(c, "frame ready", i.get("m_frame__ready"),
              "model sent", fields(sl, o["m_sent__payload"], ("conn", "path", "psn")) if o["m_sent__valid"] else "-",
              "rtl sent", fields(sl, rtl[c]["m_sent__payload"], ("conn", "path", "psn")) if rtl[c]["m_sent__valid"] else "-")


if __name__ == "__main__":
    main(sys.argv[1:])
