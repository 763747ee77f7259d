"""MR-TXS-447's liveness limit (late44): the TX model on ``tx_cases.late_fail_batch``'s traffic
at several seeds and clock periods, each run to a cycle limit; prints per run whether it
completed (and passed ``tx_cases.check``) with its cycles, the read errors of a slot's previous
message it met (``late``, MR-TXS-412) and its probes, or the driver's error (no progress: late
ACKs' chunks are not counted, and every packet of a chunk timed out before its ACK).

    .venv/bin/python -W ignore docs/hw/probes/late44_liveness.py LIMIT NS[,NS...] SEED...
    .venv/bin/python -W ignore docs/hw/probes/late44_liveness.py 15000 160,200,300,400 1 2 3 4 5 6 7 8

late44: 10 of those 32 runs make no progress within 15,000 cycles; seed 6 at 400 ns completes
(8,123 cycles, two late read errors, 14 probes): the run of tests/test_tx_fail_lap.py now.
"""
import sys

from metaroce.models import tx_cases as xc
from metaroce.models.driver import run_alone
from metaroce.models.tx import SMALL, TxCycleModel
from metaroce.models.tx_sched import TxSchedModel

_SCHED = ("chunk_window", "mtu", "cwnd", "conn_window", "path_pkts", "ack_every", "resend_depth")


def _sem():
    return TxSchedModel(SMALL["conns"], SMALL["streams"], SMALL["paths"], SMALL["depth"],
                        **{k: SMALL[k] for k in _SCHED})


def main(argv):
    limit, periods, seeds = int(argv[0]), [int(x) for x in argv[1].split(",")], argv[2:]
    for ns in periods:
        for seed in (int(s) for s in seeds):
            model = TxCycleModel(64, **SMALL)
            late = xc.watch_late_fails(model.sched.sem)
            items, rsps, drv = xc.late_fail_batch(_sem(), SMALL, model.lay, 64, seed=seed,
                                                  ns_per_cycle=ns)
            drv.sem = model.sched.sem
            drv.limit = limit
            try:
                run_alone(model, drv, busy=model.busy)
                s = xc.check(_sem(), items, drv, rsps)
                print(ns, seed, "ok", drv.res["cycles"], "late", len(late), "probes", s["probes"],
                      flush=True)
            except AssertionError as e:
                print(ns, seed, "error", repr(e)[:120], "late", len(late), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
