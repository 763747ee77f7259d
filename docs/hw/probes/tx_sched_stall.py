"""The TX scheduler's cycle model alone on ``test_lockstep_path_states``'s traffic (issue 12):
which seeds finish, and for each that stalls, the state it stalls in.

The run: ``tx_sched_cases.traffic(TxSchedModel(**SMALL), 40, seed=S)`` through the driver with
``seed=S, p_idle=0.2, p_bp=0.4, loss=0.6, p_cwnd=0.05, cwnd_hi=8000`` (``_path_state_run``).
For a stalled run it prints the lost report held in ``s_resend``'s boundary register (``br``)
and in the skid (``rs``), and per connection its resend FIFO's entries, chunks not yet sent,
and per path ``(state, col, inflight, pkts, cwnd)`` (state 0 active, 1 probing).

    .venv/bin/python docs/hw/probes/tx_sched_stall.py [--lost-waits] [SEED | A-B | A,B,C ...]  # default 1..20

With ``--lost-waits`` the cycle model takes the rule before MR-TXS-240 (the negative control
of MR-TXS-246: a lost report waits for its FIFO's room).

Found (stk31): the stalls are one circular wait. The held lost report's connection has its
resend FIFO full (MR-TXS-021/034: the report waits for room); the FIFO drains only by resends,
which only an active path takes (MR-TXS-117: a probing path never a resend); the connection's
only active path is collapsed (MR-TXS-115, one MTU) and its flight is the held report's own
packet, which only that report's MR-TXS-020 release would free. Other connections' lost reports
wait behind it in the skid.

Fixed (dl32, hw-tx-sched.md section 18, MR-TXS-240..247): a lost report never waits for its
FIFO's room; a full FIFO's chunk is kept in its entry's lost-not-queued set and refilled.
``1-100``: every seed finishes and passes the checker (a finished run prints its refills).
"""
import sys

from _seeds import parse_seeds
from metaroce.models import tx_sched_cases as tc
from metaroce.models.driver import run_alone
from metaroce.models.tx_sched import SMALL, TxSchedCycleModel, TxSchedModel


def run(seed, lost_waits=False):
    items = tc.traffic(TxSchedModel(**SMALL), 40, seed=seed)
    model = TxSchedCycleModel(64, **SMALL, lost_waits=lost_waits)
    drv = tc.Driver(model.lay, items, seed=seed, p_idle=0.2, p_bp=0.4, loss=0.6, p_cwnd=0.05,
                    cwnd_hi=8000)
    try:
        run_alone(model, drv)
    except AssertionError as e:
        return model, drv, str(e)
    return model, drv, None


def main(seeds, lost_waits=False):
    for seed in seeds:
        model, drv, err = run(seed, lost_waits)
        if err is None:
            # dl32: the checker's verdict too, and the refills (MR-TXS-243) the run took
            tc.check(TxSchedModel(**SMALL), tc.traffic(TxSchedModel(**SMALL), 40, seed=seed),
                     drv.res)
            fills = sum(1 for e in model.events if e[0] == "refill")
            print(f"seed {seed}: finished, {drv.res['cycles']} cycles, {len(drv.res['cqe'])} "
                  f"completions, {fills} refills, checked, "
                  f"verdicts {dict(sorted(drv.res['verdicts'].items()))}")
            continue
        sem = model.sem
        held = [(k, (r["conn"], r["path"], r["slot"], r["chunk"]))
                for k, r in (("br", model.br), ("rs", model.rs)) if r]
        print(f"seed {seed}: STALLED: {err}; held lost reports (conn, path, slot, chunk): {held}")
        for c in range(sem.conns if hasattr(sem, "conns") else len(sem.conn)):
            paths = sem.path[c * sem.paths:(c + 1) * sem.paths]
            print(f"  conn {c}: resend FIFO {len(sem.conn[c]['retx'])} of {sem.resend_depth}, "
                  f"unsent {sem.conn[c]['unsent']}, paths "
                  f"{[(p['state'], p['col'], p['inflight'], p['pkts'], p['cwnd']) for p in paths]}")


if __name__ == "__main__":
    main(parse_seeds(sys.argv[1:], range(1, 21)), "--lost-waits" in sys.argv)
