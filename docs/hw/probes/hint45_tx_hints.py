"""hint45 (MR-TX-496/497): the figures of the TX's hinted windows' run, and where the negative
control's RTL mismatches.

Run: nice -n 5 .venv/bin/python docs/hw/probes/hint45_tx_hints.py [--rtl-negative]

Prints the model run's cycles, ACKs offered, events the windows took from the unit, the control
path's refused events (moves), refills, move writes, releases, the events compared with
CwndModel; with --rtl-negative, also the first mismatch of ``Tx(hints=True, hint_dropped=True)``
against ``TxCycleModel(hints=True)`` (the Amaranth simulator, about 2 min at load 10).
"""
import sys

from metaroce.models import tx_hint_cases as hc
from metaroce.models.driver import run_alone
from metaroce.models.tx import SMALL, TxCycleModel


def model_figures(hint_dropped=False):
    model = TxCycleModel(64, **SMALL, hints=True, hint_dropped=hint_dropped)
    drv, items = hc.make_driver(model)
    run_alone(model, drv)
    ev = sum(1 for k, _ in drv.loop.items if k == "ack")
    try:
        eq = hc.check_hint_run(drv, unit_events=model.unit_events)
    except AssertionError as e:
        eq = f"differs: {str(e)[:160]}"
    return {"hint_dropped": hint_dropped, "cycles": drv.cycle, "acks_offered": drv.n_acks,
            "unit_events": ev, "hinted_events": sum(1 for e in model.unit_events if e["hint"]),
            **drv.control.moves, "ctl_acks": drv.res["ctl_acks"],
            "releases": drv.res["releases"], "completions": len(drv.res["cqe"]),
            "equal_to_CwndModel": eq}


def rtl_negative():
    from metaroce.hdl.tx import Tx
    from metaroce.tb.lockstep import Mismatch, run_amaranth
    model = TxCycleModel(64, **SMALL, hints=True)
    drv, _ = hc.make_driver(model)
    try:
        run_amaranth(Tx(64, **SMALL, hints=True, hint_dropped=True), model, drv, busy=model.busy)
    except Mismatch as e:
        return f"Mismatch at cycle {drv.cycle}: {str(e)[:400]}"
    return "no mismatch"


if __name__ == "__main__":
    print(model_figures())
    print(model_figures(hint_dropped=True))
    if "--rtl-negative" in sys.argv:
        print(rtl_negative())
