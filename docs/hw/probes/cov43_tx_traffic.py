"""cov43 (MR-TX-457..460): the TX coverage run's batches on the cycle model alone: each batch of
one traffic shape through ``TxCycleModel`` with its driver, then ``tx_cases.check`` and
``check_counters``, as ``tb/tx.py::tx_coverage`` does beside the RTL; prints cycles, frames,
completions by status, the largest PSN and message length the batch put on the wire, the ACK
kinds taken, and the shape's functional bins missed (MR-TX-418, on the model's events).

    .venv/bin/python docs/hw/probes/cov43_tx_traffic.py [shape] [n] [seed] [wide 0/1]
"""
import sys
import time
from collections import Counter

from metaroce.models import tx_cases as xc
from metaroce.models.driver import run_alone
from metaroce.models.tx import SMALL, TxCycleModel
from metaroce.models.tx_sched import TxSchedModel

_SCHED = ("chunk_window", "mtu", "cwnd", "conn_window", "path_pkts", "ack_every", "resend_depth")


def _sem():
    return TxSchedModel(SMALL["conns"], SMALL["streams"], SMALL["paths"], SMALL["depth"],
                        **{k: SMALL[k] for k in _SCHED})


def main(shape="both", n=20, seed=1, wide=1):
    width = 64
    lay = TxCycleModel(width, **SMALL).lay
    from collections import defaultdict
    from metaroce.tb import coverage as cov
    sd = seed * 100 + xc.shape_index(shape)
    counts = defaultdict(int)
    for name, items, rsps, drv in xc.coverage_batches(_sem(), SMALL, lay, width, shape, n, seed=sd,
                                                      wide=bool(wide)):
        t0 = time.time()
        model = TxCycleModel(width, **SMALL)
        drv.sem = model.sched.sem
        run_alone(model, drv)
        summary = xc.check(_sem(), items, drv, rsps)
        xc.check_counters(drv, summary["probes"])
        fr = drv.res["frames"]
        st = Counter(c["status"] for c in drv.res["cqe"])
        print(f"{shape}/{name}: {drv.cycle} cycles, {len(drv.res['emitted'])} frames, status {dict(st)}, "
              f"psn max {max((f.bth.psn for f in fr), default=0)}, "
              f"msg_len max {max((f.mrdh.msg_len for f in fr if f.mrdh), default=0):#x}, "
              f"acks {dict(drv.ack_kinds)}, summary {summary}, {time.time() - t0:.0f} s")
        for k, v in xc.coverage_counts(model, drv, summary).items():
            counts[k] += v
    f = cov.functional_tx(width, {shape: dict(counts)})
    print(f"{shape}: bins {f['bins_hit']} / {f['bins_total']}, missed {f['missing']}")


if __name__ == "__main__":
    a = sys.argv[1:]
    main(a[0] if a else "both", *(int(x) for x in a[1:]))
