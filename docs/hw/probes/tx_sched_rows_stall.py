"""The row scheduler's model (``TxSchedRowsModel``) alone on stk31's traffic (the driver settings
of ``tx_sched_stall.py``: 40 work requests, ``p_idle=0.2, p_bp=0.4, loss=0.6, p_cwnd=0.05,
cwnd_hi=8000``), rdl32 (hw-tx-sched.md section 16h, MR-TXS-256..263): which seeds finish (the
register scheduler's checker and the replay, MR-TXS-230, on each) and which stall.

    .venv/bin/python docs/hw/probes/tx_sched_rows_stall.py [--lost-waits] [--old] [--wrs=N]
        [--storm=P] [SEED | A-B | A,B,C ...]

``--lost-waits``: MR-TXS-217's old rule (a lost report refused while its FIFO is full; the
negative control of MR-TXS-261): seed 35 stalls. ``--old``: the rule before MR-TXS-266 (a
suspicion or retirement may take a connection's last active path, MR-TXS-290's negative
control). ``--wrs=80``: pst32's setting (the Verilator lockstep's ``TXS_WRS=80 TXS_LOSS=0.6
TXS_PCWND=0.05 TXS_RSPS=0``, without its tail probes, which the rows do not take yet).
``--storm=0.1``: the driver's own verdicts besides the unit's in that share of the cycles
(``tx_sched_cases.VerdictStorm``, MR-TXS-267), which meet a connection's last active path.
"""
import sys

from _seeds import parse_seeds
from metaroce.models import tx_sched_cases as tc
from metaroce.models.driver import run_alone
from metaroce.models.tx_sched import SMALL, TxSchedModel
from metaroce.models.tx_sched_rows import TxSchedRowsModel, replay


def run(seed, lost_waits=False, n=40, old=False, storm=0.0):
    items = tc.traffic(TxSchedModel(**SMALL), n, seed=seed)
    model = TxSchedRowsModel(64, **SMALL, lost_waits=lost_waits, last_active_kept=not old)
    kw = dict(seed=seed, p_idle=0.2, p_bp=0.4, loss=0.6, p_cwnd=0.05, cwnd_hi=8000)
    drv = (tc.VerdictStorm(model.lay, items, p_verdict=storm, **kw) if storm
           else tc.Driver(model.lay, items, **kw))
    if storm:
        drv.limit = 10_000 + 100 * n        # a stall ends the run sooner
    try:
        run_alone(model, drv)
    except AssertionError as e:
        return model, drv, items, str(e)
    return model, drv, items, None


def main(seeds, lost_waits=False, n=40, old=False, storm=0.0):
    stalls, kept = [], 0
    for seed in seeds:
        model, drv, items, err = run(seed, lost_waits, n, old, storm)
        kept += model.kept
        if err is None:
            tc.check(TxSchedModel(**SMALL), items, drv.res)
            replay(model)
            print(f"seed {seed}: finished, {drv.res['cycles']} cycles, {len(drv.res['cqe'])} "
                  f"completions, {model.refills} refills, {model.kept} verdicts kept as "
                  f"reroutes, checked, replayed")
            continue
        stalls.append(seed)
        print(f"seed {seed}: STALLED: {err[:200]}")
    print(f"stalls: {stalls} ({len(stalls)} of {len(seeds)}); verdicts kept as reroutes: {kept}")


if __name__ == "__main__":
    opt = dict(a[2:].split("=") for a in sys.argv[1:] if a.startswith("--") and "=" in a)
    main(parse_seeds(sys.argv[1:], range(1, 21)), "--lost-waits" in sys.argv,
         int(opt.get("wrs", 40)), "--old" in sys.argv, float(opt.get("storm", 0)))
