"""rowlvl47 (issue 12; not part of the design): the row scheduler's Amaranth locksteps
(tests/test_tx_sched_rows.py ``RTL_CASES``: 2 x 4 and 4 x 8, loss, reports, verdicts, window
writes, 80 % backpressure, idle cycles, 8 connections) run on two versions of
hdl/tx_sched_rows.py against the same row model: each run's cycles to drain and mismatches,
so that a change of the RTL's form shows no change of its cycles. Run from the repository
root:

    .venv/bin/python docs/hw/probes/rowlvl_cycles_47.py [--hdl FILE ...]

(default: this tree's RTL only; each ``--hdl`` as ``lvl42_rows_depth.py``'s, e.g. ``git show
6d7c812:hdl/tx_sched_rows.py > /tmp/rows_main.py``)."""
import argparse
import sys
import types
from pathlib import Path

from metaroce.models import tx_sched_cases as tc
from metaroce.models.tx_sched import SMALL, TxSchedModel
from metaroce.models.tx_sched_rows import TxSchedRowsModel
from metaroce.tb.lockstep import run_amaranth

CASES = [(dict(SMALL), 30, 1, {"p_cwnd": 0.1}),
         (dict(SMALL, conns=4, paths=8), 25, 2, {"p_cwnd": 0.05}),
         (dict(SMALL), 60, 3, {"p_bp": 0.8}),
         (dict(SMALL), 60, 4, {"p_idle": 0.5, "p_cwnd": 0.2, "cwnd_hi": 8000}),
         (dict(SMALL, conns=4, paths=8), 100, 5, {"p_cwnd": 0.05}),
         (dict(SMALL, conns=8), 100, 6, {})]


def load(path, tag):
    """hdl/tx_sched_rows.py at ``path`` as a module (its relative imports this tree's)."""
    mod = types.ModuleType(f"metaroce.hdl._rows_{tag}")
    mod.__package__ = "metaroce.hdl"
    sys.modules[mod.__name__] = mod
    with open(path) as f:
        exec(compile(f.read(), str(path), "exec", dont_inherit=True), mod.__dict__)
    return mod


def run(hdl, prm, n, seed, kw):
    sem = TxSchedModel(**prm)
    items = tc.traffic(sem, n, seed=seed)
    model = TxSchedRowsModel(64, **prm)
    drv = tc.Driver(model.lay, items, seed=seed, **kw)
    core = run_amaranth(hdl.TxSchedRows(64, **prm), model, drv, busy=model.busy)
    tc.check(TxSchedModel(**prm), items, drv.res)
    return core.cycle, core.mismatches, len(drv.res["frames"])


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hdl", type=Path, action="append", default=[])
    args = ap.parse_args(argv)
    from metaroce.hdl import tx_sched_rows
    versions = [("cur", tx_sched_rows)] + [(p.stem, load(p, i)) for i, p in enumerate(args.hdl)]
    for prm, n, seed, kw in CASES:
        row = [f"{prm['conns']}x{prm['paths']} n={n} seed={seed} {kw}"]
        for tag, hdl in versions:
            cyc, mm, frames = run(hdl, prm, n, seed, kw)
            row.append(f"{tag}: {cyc} cycles, {mm} mismatches, {frames} frames")
        print(" | ".join(row), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
