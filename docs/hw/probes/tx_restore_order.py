"""Order probe, not part of the design: in the TX model with verdicts (`TxCycleModel(verdicts=
True)`, the share-out on), does a restore reach the windows before or after its ACK's event
(hw-tx.md MR-TX-260)? A restore is "ack first" when the windows took an ACK event of its path
acknowledging packets since the path's last verdict, else "restore first". Runs MR-TX-259's
down-path run for seeds 1..8 with each of connection 0's four paths down (200..1,500 cycles).
Run from the repository root:

    .venv/bin/python docs/hw/probes/tx_restore_order.py [--no-hold]

``--no-hold``: the join without MR-TX-306's hold (``restore_after_ack=False``).
"""
import sys

sys.path.insert(0, "tests")

import test_tx_verdicts as t                      # noqa: E402
from metaroce.models import tx_cases as xc        # noqa: E402
from metaroce.models.driver import run_alone      # noqa: E402
from metaroce.models.tx import SMALL, TxCycleModel  # noqa: E402


def classify(log):
    n = {"ack_first": 0, "restore_first": 0}
    since = {}
    for k, r in log:
        key = (r["conn"], r["path"])
        if k == "path" and not r["restore"]:
            since[key] = False
        elif k == "ack" and r["pkts"]:
            if key in since:
                since[key] = True
        elif k == "path" and r["restore"]:
            n["ack_first" if since.pop(key, False) else "restore_first"] += 1
    return n


def main():
    hold = "--no-hold" not in sys.argv
    tot = {"ack_first": 0, "restore_first": 0}
    for seed in range(1, 9):
        for path in range(SMALL["paths"]):
            items, lay, kw = t.down_run(seed)
            kw["down"] = {(0, path): (200, 1500)}
            model = TxCycleModel(64, **SMALL, verdicts=True, rto_ns=t.RTO_NS,
                                 restore_after_ack=hold)
            drv = xc.Driver(model.lay, 64, items, lay,
                            xc.templates(SMALL["conns"], SMALL["paths"]), **kw)
            run_alone(model, drv)
            c = classify(model.cw_log)
            print(seed, path, c)
            for k in tot:
                tot[k] += c[k]
    print("total", tot)


if __name__ == "__main__":
    main()
