"""The register scheduler's kept record (docs/spec/hw-tx.md section 2.14a, MR-TX-351..;
hw-tx-sched.md section 24, MR-TXS-347..): a suspicion the register scheduler takes as a
reroute on a connection's last active path (MR-TXS-290) reaches the TX's windows as a restore
with REROUTE, as the rows' does (MR-TX-320..322), so the windows' join is one for both."""
import pytest

from metaroce.models import protocol as P
from metaroce.models import tx_sched_cases as tc
from metaroce.models.driver import run_alone
from metaroce.models.rx import unpack
from metaroce.models.tx_sched import SMALL as SMALL_SCHED
from metaroce.models.tx_sched import PATH_ACTIVE, TxSchedCycleModel, TxSchedModel, restore_layout
from metaroce.models.tx_sched_rows import rows_restore_layout

from test_tx_rows import StormRestores, kept_run, windows_end


def sched_states(model, conn=0):
    paths = model.sched.sem.paths
    return [int(model.sched.sem.path[conn * paths + p]["state"] == PATH_ACTIVE)
            for p in range(paths)]


def test_windows_follow_kept_suspicion_registers():
    """MR-TX-351, MR-TX-352 (model): MR-TX-320's directed run with the register scheduler:
    path 3's SUSPECT is kept (MR-TXS-290) and its kept record follows it into the windows as
    a restore with REROUTE; at the end every path is active in the windows as in the scheduler,
    W is the sum of the four windows (MR-TX-324's 37,635 against 67,346 before) and the
    scheduler's windows are the block's."""
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


# -- MR-TXS-347..352: the kept record at the scheduler's ports

def test_options_and_ports():
    """MR-TXS-348, MR-TXS-350: ``m_restore``'s record is ``{conn, path, kept}``, the rows'
    layout; ``kept_out=False`` keeps the port (its ``kept`` 0)."""
    from metaroce.hdl.tx_sched import TxSched
    assert rows_restore_layout(2, 4) == restore_layout(2, 4)
    assert [n for n, _ in restore_layout(2, 4)] == ["conn", "path", "kept"]
    for kw in ({}, {"kept_out": False}):
        blk = TxSched(64, **SMALL_SCHED, restores=True, **kw)
        blk._MustUse__silence = True            # inspected, not elaborated
        shape = blk.signature.members["m_restore"].signature.members["payload"].shape
        assert shape == restore_layout(SMALL_SCHED["conns"], SMALL_SCHED["paths"])
    assert TxSchedCycleModel(64, **SMALL_SCHED, restores=True).kept_out
    assert not TxSchedCycleModel(64, **SMALL_SCHED, restores=True, kept_out=False).kept_out


def storm(seed=11, n=30, *, rtl=False, hdl_kw=None, **model_kw):
    """MR-TXS-351: the verdict storm (MR-TXS-267: 60 % loss, ``p_verdict`` 0.1, window writes,
    idle cycles, backpressure) with ``m_restore.ready`` random, on the register scheduler with
    restores; the records taken on ``m_restore`` (their ``kept`` bits) and the model."""
    prm = dict(SMALL_SCHED)
    items = tc.traffic(TxSchedModel(**prm), n, seed=seed)
    model = TxSchedCycleModel(64, **prm, restores=True, **model_kw)
    drv = StormRestores(model.lay, items, seed=seed, p_idle=0.2, p_bp=0.4, loss=0.6,
                        p_cwnd=0.05, cwnd_hi=8000, p_verdict=0.1)
    drv.limit = 6000
    taken = []

    def on_cycle(cycle, ins, outs):
        if outs.get("m_restore__valid") and ins["m_restore__ready"]:
            r = unpack(model.restore_lay, outs["m_restore__payload"])
            # MR-TXS-348: taken, the path is active in the scheduler after the edge
            ps = model.sem.path[r["conn"] * model.sem.paths + r["path"]]
            taken.append((r["kept"], ps["state"] == PATH_ACTIVE))
    if rtl:
        from metaroce.hdl.tx_sched import TxSched
        from metaroce.tb.lockstep import run_amaranth
        core = run_amaranth(TxSched(64, **prm, restores=True, **(hdl_kw or {})), model, drv,
                            busy=model.busy, on_cycle=on_cycle)
        assert core.mismatches == 0
    else:
        run_alone(model, drv, on_cycle=on_cycle)
    assert len(drv.res["cqe"]) == len(items)
    tc.check(TxSchedModel(**prm), items, drv.res)
    return model, taken


def kept_verdicts(model):
    return sum(1 for e in model.events if e[0] == "kept")


@pytest.mark.parametrize("seed", [11, 2])
def test_sched_kept_record_model(seed):
    """MR-TXS-347/348/351 (model): on the verdict storm every work request completes and the
    checker passes; one kept record is taken per verdict taken as a reroute, besides the
    restores, each naming a path the scheduler holds active."""
    model, taken = storm(seed)
    kept = [k for k, _ in taken]
    assert kept_verdicts(model) >= 5 and sum(kept) == kept_verdicts(model) and kept.count(0) >= 3
    assert all(active for _, active in taken)


def test_sched_without_kept_record_model():
    """MR-TXS-350 (negative control, model): without the kept record no record has ``kept`` 1
    though verdicts are taken as reroutes."""
    model, taken = storm(11, kept_out=False)
    assert kept_verdicts(model) >= 5 and not any(k for k, _ in taken)


@pytest.mark.slow
def test_sched_rtl_kept_record():
    """MR-TXS-351: ``TxSched(restores=True)`` against its model on the storm's seed 11 in the
    Amaranth simulator, every port every cycle: 0 mismatches, the kept records as in
    ``test_sched_kept_record_model``."""
    model, taken = storm(11, rtl=True)
    assert sum(k for k, _ in taken) == kept_verdicts(model) >= 5


@pytest.mark.slow
def test_sched_rtl_without_kept_record_fails():
    """MR-TXS-352 (negative control): the RTL without the kept bit (``kept_out=False``, the
    block before) mismatches the model with it on the same run."""
    from metaroce.tb.lockstep import Mismatch
    with pytest.raises(Mismatch):
        storm(11, rtl=True, hdl_kw={"kept_out": False})


@pytest.mark.parametrize("seed,kept_out", [(8, False), (18, False), (11, True)])
def test_sched_restore_port_before_the_edge(seed, kept_out):
    """MR-TXS-349: the model's ``m_restore`` in every cycle is the offer on its state before the
    edge (what the RTL's registers give), on the storm's seeds where main's model formed it
    after a verdict had loaded the boundary register (8 and 18, without kept records)."""
    prm = dict(SMALL_SCHED)
    items = tc.traffic(TxSchedModel(**prm), 30, seed=seed)
    model = TxSchedCycleModel(64, **prm, restores=True, kept_out=kept_out)
    drv = StormRestores(model.lay, items, seed=seed, p_idle=0.2, p_bp=0.4, loss=0.6,
                        p_cwnd=0.05, cwnd_hi=8000, p_verdict=0.1)
    drv.limit = 6000
    step, seen = model.step, []

    def checked(inp):
        before = model.restore_outputs()
        out = step(inp)
        seen.append(before[0])
        assert (out["m_restore__valid"], out["m_restore__payload"]) == before
        return out
    model.step = checked
    run_alone(model, drv)
    assert len(drv.res["cqe"]) == len(items) and sum(seen) >= 3
