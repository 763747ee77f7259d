"""The register scheduler's kept record (docs/spec/hw-tx.md section 2.14a, MR-TX-351..;
hw-tx-sched.md section 24, MR-TXS-347..): a suspicion the register scheduler takes as a
reroute on a connection's last active path (MR-TXS-290) reaches the TX's windows as a restore
with REROUTE, as the rows' does (MR-TX-320..322), so the windows' join is one for both."""
import pytest

from metaroce.models import protocol as P
from metaroce.models.tx_sched import PATH_ACTIVE

from test_tx_rows import kept_run, windows_end


def sched_states(model, conn=0):
    paths = model.sched.sem.paths
    return [int(model.sched.sem.path[conn * paths + p]["state"] == PATH_ACTIVE)
            for p in range(paths)]


def test_windows_follow_kept_suspicion_registers():
    """MR-TX-351 (model): MR-TX-320's directed run with the register scheduler: path 3's
    SUSPECT is kept (MR-TXS-290) and its kept record follows it into the windows as a restore
    with REROUTE; at the end every path is active in the windows as in the scheduler, W is the
    sum of the four windows (MR-TX-324's 37,635 against 67,346 before) and the scheduler's
    windows are the block's."""
    model = kept_run(rows=False)
    assert sum(1 for e in model.sched.events if e[0] == "kept") == 1
    recs = [r for k, r in model.cw_log if k == "path" and r["path"] == 3]
    assert [(r["verdict"], r["restore"]) for r in recs] == [
        (P.PATH_SUSPECT, 0), (P.PATH_REROUTE, 1)]
    active, win, wsum = windows_end(model)
    assert active == sched_states(model) == [1, 1, 1, 1]
    assert wsum == sum(win)
    assert [model.sched.sem.path[p]["cwnd"] for p in range(4)] == win


def test_windows_register_scheduler_without_kept_record_differ():
    """MR-TX-324, MR-TX-353 (negative control): the register scheduler without the kept record
    (``kept_out=False``, the block before MR-TXS-347) on the same run leaves path 3 out of the
    windows' W to the end while the scheduler keeps it active and sending."""
    model = kept_run(rows=False, kept_out=False)
    active, win, wsum = windows_end(model)
    assert active == [1, 1, 1, 0] and sched_states(model) == [1, 1, 1, 1]
    assert wsum == sum(win[:3]) < sum(win)
