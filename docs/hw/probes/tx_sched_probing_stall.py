"""The TX scheduler's cycle model alone on the Verilator lockstep's traffic at ``TXS_WRS=80
TXS_RSPS=0 TXS_LOSS=0.6 TXS_PCWND=0.05`` (tb/tx_sched.py's driver, ``p_probe`` 0.01), seeds
swept: which finish, and for each that stalls, per connection its resend FIFO and per path
``(state, col, inflight, pkts)`` (state 0 active, 1 probing) (pst32, issue 12).

    .venv/bin/python docs/hw/probes/tx_sched_probing_stall.py [--old] [SEED | A-B | A,B,C ...]  # default 5

``--old``: the rule before MR-TXS-290 (a suspicion or retirement may take a connection's last
active path; the negative control of MR-TXS-296).

Found (dl32, pst32): seed 5 stops at 79 of 80 completions: connection 1 has one resend queued,
nothing in flight, its four paths probing. A probing path never takes a resend (MR-TXS-117), the
resend head goes before new chunks (MR-TXS-023), and with nothing in flight no timeout comes.
The endpoint never gets there: it suspects or retires a path only while another is healthy
(active, MR-PATH-001/004). Fixed by MR-TXS-290: a verdict that would leave a connection with no
active path is a reroute.
"""
import sys

from _seeds import parse_seeds
from metaroce.models import tx_sched_cases as tc
from metaroce.models.driver import run_alone
from metaroce.models.tx_sched import SMALL, TxSchedCycleModel, TxSchedModel


def run(seed, old=False, wrs=80):
    model = TxSchedCycleModel(64, **SMALL, last_active_kept=not old)
    items = tc.traffic(model.sem, wrs, seed=seed)
    rsps = tc.responses(model.sem, 0, seed=seed)
    drv = tc.Driver(model.lay, items, seed=seed, p_idle=0.2, p_bp=0.4, loss=0.6, p_cwnd=0.05,
                    cwnd_hi=8000, rsps=rsps, p_probe=0.01)
    try:
        run_alone(model, drv)
    except AssertionError as e:
        return model, drv, items, rsps, str(e)
    return model, drv, items, rsps, None


def main(seeds, old=False):
    stalls, bad = 0, []
    for seed in seeds:
        model, drv, items, rsps, err = run(seed, old)
        if err is None:
            try:
                tc.check(TxSchedModel(**SMALL), items, drv.res, rsps)
                chk = "checked"
            except AssertionError as e:
                chk = f"CHECKER: {str(e)[:60]}"
                bad.append(seed)
            kept = sum(1 for e in model.events if e[0] == "kept")
            print(f"seed {seed}: finished, {drv.res['cycles']} cycles, {len(drv.res['cqe'])} "
                  f"completions, {chk}, verdicts {dict(sorted(drv.res['verdicts'].items()))}, "
                  f"last active kept {kept}")
            continue
        stalls += 1
        sem = model.sem
        print(f"seed {seed}: STALLED: {err}; completions {len(drv.res['cqe'])} of {len(items)}")
        for c in range(len(sem.conn)):
            paths = sem.path[c * sem.paths:(c + 1) * sem.paths]
            print(f"  conn {c}: resend FIFO {len(sem.conn[c]['retx'])} of {sem.resend_depth}, "
                  f"unsent {sem.conn[c]['unsent']}, paths "
                  f"{[(p['state'], p['col'], p['inflight'], p['pkts']) for p in paths]}")
    print(f"stalls: {stalls} of {len(seeds)}; checker failures (finished runs): {bad}")


if __name__ == "__main__":
    main(parse_seeds(sys.argv[1:], [5]), "--old" in sys.argv)
