"""Session 45 (stale45, issue 12; not part of the design): ``tx_cases.late_fail_batch`` (the
slow ``tests/test_tx_rtl.py::test_tx_rtl_late_read_error``'s run) at other seeds and cycle
times, to look for siblings of section 36's stale resend (docs/spec/hw-tx-sched.md
MR-TXS-460..464): each run on the TX model alone (``models.driver.run_alone``, then the
checker) and, with ``--rtl``, in Verilator lockstep against the TX's RTL (tb/tx.py
``tx_late_fail`` with ``TX_LATE_SEED``/``TX_LATE_NS``; the block ``tx`` at 64 bits, built and
cached by tb/build.py).

    .venv/bin/python -W ignore docs/hw/probes/stale_sweep45.py SEEDS NS [--rtl]

SEEDS and NS: comma lists or ranges (``1-12``, ``160,400``). One line per run: the model's
completions, cycles, whether the checker passed or the run stopped (MR-TXS-447's liveness
limit: no progress within ``LIMIT`` cycles), and with ``--rtl`` the lockstep's mismatches (``stuck`` when the driver's
progress limit ended it, ``FAIL`` with the first line of a mismatch).
"""
import json
import sys
import tempfile
from pathlib import Path

from metaroce.models import tx_cases as xc
from metaroce.models.driver import run_alone
from metaroce.models.tx import SMALL, TxCycleModel
from metaroce.tb.tx import _sem


#: the driver's progress limit (cycles; the batch's own is some 140,000): MR-TXS-447's stuck runs
#: stop here (a run that completes takes some 8,000)
LIMIT = 20_000


def ints(text):
    out = []
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        out += range(int(lo), int(hi or lo) + 1)
    return out


def model_run(seed, ns):
    model = TxCycleModel(64, **SMALL)
    late = xc.watch_late_fails(model.sched.sem)
    items, rsps, drv = xc.late_fail_batch(_sem(), SMALL, model.lay, 64, seed=seed, ns_per_cycle=ns)
    drv.sem = model.sched.sem
    drv.limit = LIMIT
    try:
        run_alone(model, drv, busy=model.busy)
    except AssertionError as e:
        return f"model {len(drv.res['cqe'])}/{len(items)} stopped at {drv.cycle}: {str(e)[:60]}"
    try:
        xc.check(_sem(), items, drv, rsps)
        chk = "checker ok"
    except AssertionError as e:
        chk = f"CHECKER FAILS {str(e)[:80]}"
    return f"model {len(drv.res['cqe'])}/{len(items)} in {drv.cycle} cycles, late {len(late)}, {chk}"


def rtl_run(build, seed, ns):
    from metaroce.sim import verilator as vl
    with tempfile.TemporaryDirectory(prefix="stale45-") as tmp:
        out = Path(tmp) / "row.json"
        env = {"COCOTB_TEST_FILTER": "tx_late_fail$", "TX_OUT": str(out),
               "TX_LATE_SEED": str(seed), "TX_LATE_NS": str(ns), "TX_LATE_LIMIT": str(LIMIT)}
        log = Path(tmp) / "log.txt"
        try:
            vl.run(build, "metaroce.tb.tx", extra_env=env, log_file=str(log), run_dir=tmp)
        except Exception:
            pass
        if out.is_file():
            row = json.loads(out.read_text())
            if row["stuck"]:
                return f"rtl stuck at {row['cycles']}, mismatches {row['mismatches']}"
            return (f"rtl {row['completions']}/{row['work_requests']} in {row['cycles']} cycles, "
                    f"mismatches {row['mismatches']}")
        text = log.read_text() if log.is_file() else ""
        first = next((ln.strip() for ln in text.splitlines() if "mismatch at" in ln), "no row")
        return f"rtl FAIL {first[:160]}"


def main(argv):
    seeds, nss, rtl = ints(argv[0]), ints(argv[1]), "--rtl" in argv
    build = None
    if rtl:
        from metaroce import blocks
        from metaroce.tb import build as tb_build
        build = tb_build.build(blocks.get("tx"), 64)
    for ns in nss:
        for seed in seeds:
            line = f"seed {seed} ns {ns}: {model_run(seed, ns)}"
            if rtl:
                line += f"; {rtl_run(build, seed, ns)}"
            print(line, flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
