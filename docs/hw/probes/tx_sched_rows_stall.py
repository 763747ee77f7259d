"""The row scheduler's model (``TxSchedRowsModel``) alone on stk31's traffic (the driver settings
of ``tx_sched_stall.py``: 40 work requests, ``p_idle=0.2, p_bp=0.4, loss=0.6, p_cwnd=0.05,
cwnd_hi=8000``), rdl32 (hw-tx-sched.md section 16h, MR-TXS-256..263): which seeds finish (the
register scheduler's checker and the replay, MR-TXS-230, on each) and which stall.

    .venv/bin/python docs/hw/probes/tx_sched_rows_stall.py [--lost-waits] [SEED ... | A-B]

``--lost-waits``: MR-TXS-217's old rule (a lost report refused while its FIFO is full; the
negative control of MR-TXS-261): seed 35 stalls.
"""
import sys

from metaroce.models import tx_sched_cases as tc
from metaroce.models.driver import run_alone
from metaroce.models.tx_sched import SMALL, TxSchedModel
from metaroce.models.tx_sched_rows import TxSchedRowsModel, replay


def run(seed, lost_waits=False, n=40):
    items = tc.traffic(TxSchedModel(**SMALL), n, seed=seed)
    model = TxSchedRowsModel(64, **SMALL, lost_waits=lost_waits)
    drv = tc.Driver(model.lay, items, seed=seed, p_idle=0.2, p_bp=0.4, loss=0.6, p_cwnd=0.05,
                    cwnd_hi=8000)
    try:
        run_alone(model, drv)
    except AssertionError as e:
        return model, drv, items, str(e)
    return model, drv, items, None


def main(seeds, lost_waits=False):
    stalls = []
    for seed in seeds:
        model, drv, items, err = run(seed, lost_waits)
        if err is None:
            tc.check(TxSchedModel(**SMALL), items, drv.res)
            replay(model)
            print(f"seed {seed}: finished, {drv.res['cycles']} cycles, {len(drv.res['cqe'])} "
                  f"completions, {model.refills} refills, checked, replayed")
            continue
        stalls.append(seed)
        print(f"seed {seed}: STALLED: {err[:200]}")
    print(f"stalls: {stalls}")


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--lost-waits"]
    rng = [int(a) for a in args if "-" not in a] or range(1, 21)
    for a in args:                                  # "A-B": seeds A..B
        if "-" in a:
            lo, hi = a.split("-")
            rng = range(int(lo), int(hi) + 1)
    main(rng, "--lost-waits" in sys.argv)
