"""Session 45 (stale45, issue 12; not part of the design): the TX schedulers' Amaranth
locksteps on lossy traffic with message and connection failures (``tx_sched_cases.Driver``'s
``p_fail``: a failure in that fraction of cycles, drawn over live slots of either lap), seed by
seed, to look for siblings of section 36's stale resend (docs/spec/hw-tx-sched.md
MR-TXS-460..464) and to count the seeds the rule before it mismatches on. The message failures
carry status 4 (a read error, as the TX's data path sends; the driver's status 0, "fails
nothing", is taken as a failure by the register RTL and not by its model: out of the TX's
contract, stale45's report) and, for the register scheduler, the named live entry's lap (so
that they hit).

    .venv/bin/python -W ignore docs/hw/probes/stale_sched_sweep45.py KIND SEEDS [N P_FAIL LOSS P_CWND]

KIND: ``reg`` (``TxSched`` against ``TxSchedCycleModel``), ``reg_before`` (the register RTL
without MR-TXS-460's mark at the completion: main's rule), ``rows`` (``TxSchedRows`` against
``TxSchedRowsModel``). SEEDS: ``1-20`` or a comma list. N work requests (default 40), P_FAIL
(default 0.03), LOSS (default 0.2), P_CWND (window writes, one in ten 0, default 0.1: resends wait). One line per seed: the cycles, completions, failures and
drops of the model, and the lockstep's verdict (0 mismatches, or the first one).
"""
import sys
from pathlib import Path

import metaroce.tb.lockstep as L
from metaroce.models import tx_sched_cases as tc
from metaroce.models.tx_sched import SMALL, TxSchedCycleModel, TxSchedModel
from metaroce.models.tx_sched_rows import TxSchedRowsModel

sys.path.insert(0, str(Path(__file__).parent))
from stale_sweep45 import ints  # noqa: E402  (the seed ranges, one definition)


class FailDriver(tc.Driver):
    """``tc.Driver`` whose message failures have status 4 and (``sem`` given) the live
    entry's lap."""

    def __init__(self, *a, sem=None, **kw):
        super().__init__(*a, **kw)
        self.sem = sem

    def _offer_fail(self, inp):
        new = self.fail_offer is None
        super()._offer_fail(inp)
        if new and self.fail_offer is not None and self.fail_offer[0] is not None:
            fl, er = self.fail_offer
            fl = dict(fl, status=4)
            if self.sem is not None:
                e = self.sem.entry_of(fl["conn"], fl["slot"])
                fl["lap"] = e["lap"] if e is not None else fl["lap"]
            self.fail_offer = (fl, er)
            inp["s_fail__payload"] = tc.pack(self.lay.fail, fl)


RULE = "with m.If(comp_act & (comp_conn == c) & (rq_slot[c][k][:sdb] == comp_e[:sdb])):"


def main(argv):
    kind, seeds = argv[0], ints(argv[1])
    n = int(argv[2]) if len(argv) > 2 else 40
    p_fail = float(argv[3]) if len(argv) > 3 else 0.03
    loss = float(argv[4]) if len(argv) > 4 else 0.2
    p_cwnd = float(argv[5]) if len(argv) > 5 else 0.1
    if kind == "rows":
        from metaroce.hdl.tx_sched_rows import TxSchedRows
        dut, model_cls = TxSchedRows(64, **SMALL), TxSchedRowsModel
    elif kind == "reg_before":
        dut = L.wrong_form("tx_sched", RULE, "with m.If(0):").TxSched(64, **SMALL)
        model_cls = TxSchedCycleModel
    else:
        from metaroce.hdl.tx_sched import TxSched
        dut, model_cls = TxSched(64, **SMALL), TxSchedCycleModel
    sim = L.AmaranthSim(dut)
    bad = 0
    for seed in seeds:
        items = tc.traffic(TxSchedModel(**SMALL), n, seed=seed)
        model = model_cls(64, **SMALL)
        drv = FailDriver(model.lay, items, seed=seed, loss=loss, p_fail=p_fail, p_bp=0.3,
                         p_cwnd=p_cwnd, cwnd_hi=8000,
                         sem=None if kind == "rows" else model.sem)
        kinds = []
        try:
            core = sim.run(model, drv, busy=model.busy)
            verdict = f"0 mismatches over {core.cycle} cycles"
        except L.Mismatch as e:
            verdict = "MISMATCH " + str(e).splitlines()[0][:150]
            bad += 1
        except AssertionError as e:
            verdict = "driver stopped: " + str(e).splitlines()[0][:100]
        kinds = [e[0] if e[0] != "sched" else (e[3][0] if isinstance(e[3], tuple) else "idle")
                 for e in model.events]
        print(f"{kind} seed {seed}: cqe {len(drv.res['cqe'])}/{len(items)}, fails "
              f"{kinds.count('fail')}, drops {kinds.count('drop')}, completes "
              f"{kinds.count('complete')}; {verdict}", flush=True)
    print(f"{kind}: {bad} of {len(seeds)} seeds mismatched")


if __name__ == "__main__":
    main(sys.argv[1:])
