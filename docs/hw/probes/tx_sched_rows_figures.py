"""srow31: the row scheduler's cycle model against the register scheduler's on the driver's
traffic (models/tx_sched_cases.py): cycles to finish, frames, schedule ops that found nothing.
CPU-independent figures (cycles). Run: .venv/bin/python docs/hw/probes/tx_sched_rows_figures.py"""
from metaroce.models import tx_sched_cases as tc
from metaroce.models.tx_sched import SMALL, TxSchedCycleModel, TxSchedModel
from metaroce.models.tx_sched_rows import TxSchedRowsModel, replay

CASES = [("2x4", dict(SMALL), 60, s, {}) for s in (0, 1, 2, 3)] + [
    ("8x4", dict(SMALL, conns=8), 200, 1, {}), ("16x2", dict(SMALL, conns=16, paths=2), 200, 3, {}),
    ("4x8 cwnd", dict(SMALL, conns=4, paths=8), 150, 2, {"p_cwnd": 0.05})]
print("| case | seed | WRs | row cycles | register cycles | row frames | register frames "
      "| schedule ops (found nothing) | lost | verdicts | without the work term: cycles, "
      "schedule ops (found nothing) |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for name, prm, n, seed, kw in CASES:
    items = tc.traffic(TxSchedModel(**prm), n, seed=seed)
    m = TxSchedRowsModel(64, **prm)
    r = tc.run_model(m, items, seed=seed, **kw)
    tc.check(TxSchedModel(**prm), items, r)
    replay(m)
    reg = TxSchedCycleModel(64, **prm)
    r2 = tc.run_model(reg, items, seed=seed, **kw)
    # MR-TXS-213: the entry on any operation (no work term), for comparison
    m0 = TxSchedRowsModel(64, **prm, work_filter=False)
    r0 = tc.run_model(m0, items, seed=seed, **kw)
    tc.check(TxSchedModel(**prm), items, r0)
    print(f"| {name} | {seed} | {n} | {r['cycles']} | {r2['cycles']} | {len(r['frames'])} | "
          f"{len(r2['frames'])} | {m.counts['sched']} ({m.idle_sched}) | "
          f"{r['lost']} | {sum(r['verdicts'].values())} | {r0['cycles']}, "
          f"{m0.counts['sched']} ({m0.idle_sched}) |")
