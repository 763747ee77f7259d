"""The row scheduler's RTL (hdl/tx_sched_rows.py ``TxSchedRows``, the small instance: block
``tx_sched_rows``) against its cycle model under Verilator, every output compared every cycle
(MR-TXS-306..309, tb/tx_sched_rows.py): the driver of its Amaranth locksteps (idle cycles,
random backpressure, loss and resends, the timeouts' verdicts, window writes, READ responses,
failures; the verdict storm; stk31's traffic with kept chunks and refills), then the checker;
and a negative control (the model with the rule before MR-TXS-266) failing at the Amaranth
lockstep's cycle and signal. One cached Verilator build. Behind ``slow`` (a build of minutes);
the Amaranth locksteps of the same RTL are tests/test_tx_sched_rows.py's.

Knobs (the main run's): TXR_WRS (work requests, default 200), TXR_SEED (2), TXR_RSPS (8); the
testbench's other knobs (tb/tx_sched_rows.py) as its docstring says.
"""
import json
import os

import pytest

from metaroce.models.tx_sched import SMALL
from metaroce.sim import verilator as vl
from metaroce.tb import build as tb_build
from metaroce.tb import tx_sched_rows as tbr
from metaroce.tb.lockstep import Mismatch

MODULE, TEST = "metaroce.tb.tx_sched_rows", "tx_sched_rows_lockstep"

#: MR-TXS-267's verdict storm (tests/test_tx_sched_rows.py STORM, STORM_SEED: 20 since s1_45,
#: 11 before; 30 work requests)
STORM_ENV = {"TXR_STORM": "0.1", "TXR_SEED": "20", "TXR_WRS": "30"}
#: stk31's traffic (tests/test_tx_sched_rows.py STALL_KW), STALL_SEED (16 since s1_45, 35
#: before): kept chunks and refills
STALL_ENV = {"TXR_SEED": "16", "TXR_WRS": "40", "TXR_PIDLE": "0.2", "TXR_PBP": "0.4",
             "TXR_LOSS": "0.6", "TXR_PCWND": "0.05", "TXR_CWND_HI": "8000"}


def _run(env, out_var="TXR_OUT"):
    """The cached build's lockstep with ``env``'s knobs: its figures (``None`` without
    ``out_var``)."""
    return tb_build.run_block_test("tx_sched_rows", MODULE, TEST, env, out_var=out_var)


def _amaranth(env):
    """MR-TXS-309: the same run (tb/tx_sched_rows.py ``case``) in the Amaranth simulator: the
    core (``cycle``), or the :class:`Mismatch` raised."""
    from metaroce.hdl.tx_sched_rows import TxSchedRows
    from metaroce.tb.lockstep import run_amaranth
    c = tbr.case(env)
    try:
        return run_amaranth(TxSchedRows(64, **SMALL), c.model, c.drv, busy=c.model.busy)
    except Mismatch as e:
        return e


@pytest.mark.slow
def test_tx_sched_rows_rtl_lockstep():
    """MR-TXS-306, MR-TXS-307: the main random run (seed 2, 200 work requests, 8 READ
    responses, 40 % backpressure, 10 % loss, window writes in 20 % of the cycles below 8,000
    bytes): 0 mismatches, every work request and response completed, the checker passes, with
    losses, resends, timeouts and their verdicts, window writes."""
    row = _run({"TXR_WRS": os.environ.get("TXR_WRS", "200"),
                "TXR_SEED": os.environ.get("TXR_SEED", "2"),
                "TXR_RSPS": os.environ.get("TXR_RSPS", "8"),
                "TXR_PBP": "0.4", "TXR_PCWND": "0.2", "TXR_CWND_HI": "8000"})
    assert row["mismatches"] == 0 and row["completions"] == row["work_requests"]
    assert row["rsp_done"] == row["responses"] > 0
    assert row["lost"] and row["retransmits"] and row["timeouts"] and row["verdicts"]
    assert row["cwnd_writes"] and row["atomic_frames"]


@pytest.mark.slow
def test_tx_sched_rows_rtl_lost_not_queued():
    """MR-TXS-307 (MR-TXS-263 under Verilator): stk31's traffic at STALL_SEED (60 % loss, every
    kind of verdict): 0 mismatches, 40 completions, chunks kept and refilled."""
    row = _run(STALL_ENV)
    assert row["mismatches"] == 0 and row["completions"] == row["work_requests"] == 40
    assert row["refills"] >= 1
    assert {"1", "2", "3"} <= set(row["verdicts"]), row["verdicts"]

#: rowf33's tail-probe traffic (tests/test_tx_sched_rows.py PROBE_KW), PROBE_GEN_SEED (5 since
#: s1_45, 4 before): probes on paths whose generation a verdict raised since their packet's
#: first frame
PROBE_ENV = {"TXR_SEED": "5", "TXR_WRS": "40", "TXR_PIDLE": "0.2", "TXR_PBP": "0.4",
             "TXR_LOSS": "0.6", "TXR_PCWND": "0.05", "TXR_CWND_HI": "8000", "TXR_PPROBE": "0.05"}


@pytest.mark.slow
def test_tx_sched_rows_rtl_tail_probes():
    """MR-TXS-307 (MR-TXS-275/277 under Verilator): the driver's random tail probes and the
    unit's at 60 % loss (PROBE_GEN_SEED): 0 mismatches, 40 completions, probes rebuilt into frames and
    the checker passing (each probe its packet's frame with the path's generation now,
    MR-TXS-264); the run's cycles are the Amaranth lockstep's."""
    row = _run(PROBE_ENV)
    assert row["mismatches"] == 0 and row["completions"] == row["work_requests"] == 40
    assert row["ops"]["probe"] and row["probe_frames"] > 0, row
    core = _amaranth(PROBE_ENV)
    assert core.mismatches == 0 and core.cycle == row["cycles"], (core.cycle, row["cycles"])


@pytest.mark.slow
def test_tx_sched_rows_rtl_failures_and_responses():
    """MR-TXS-307 (MR-TXS-253 under Verilator): message and connection failures (``p_fail``
    0.03) with READ responses: 0 mismatches, every work request completes once, some with a
    failure's status."""
    row = _run({"TXR_SEED": "1", "TXR_WRS": "30", "TXR_RSPS": "4", "TXR_PFAIL": "0.03"})
    assert row["mismatches"] == 0 and row["completions"] == 30 and row["rsp_done"] == 4
    assert row["ops"]["fail"] and row["error_cqes"]


@pytest.mark.slow
def test_tx_sched_rows_rtl_last_active():
    """MR-TXS-307, MR-TXS-309 (MR-TXS-266..268 under Verilator): the verdict storm (STORM_SEED):
    0 mismatches, every work request completes, verdicts on a last active path kept as
    reroutes; the run's cycles are the Amaranth lockstep's."""
    row = _run(STORM_ENV)
    assert row["mismatches"] == 0 and row["completions"] == row["work_requests"] == 30
    assert row["kept"] >= 1
    core = _amaranth(STORM_ENV)
    assert core.mismatches == 0 and core.cycle == row["cycles"], (core.cycle, row["cycles"])


@pytest.mark.slow
def test_tx_sched_rows_rtl_wrong_model_fails(tmp_path):
    """MR-TXS-308 (negative control): the model with the rule before MR-TXS-266
    (``last_active_kept=False``) on the storm fails under Verilator, at the cycle and on the
    signal of its Amaranth lockstep's first mismatch."""
    env = dict(STORM_ENV, TXR_MODEL="last_active_kept=0", TXR_OUT=str(tmp_path / "row.json"))
    with pytest.raises(vl.CocotbTestFailure):
        _run(env, out_var=None)
    row = json.loads((tmp_path / "row.json").read_text())
    print(row)
    assert row["model"] == {"last_active_kept": False}
    e = _amaranth(env)
    assert isinstance(e, Mismatch), e
    assert (row["mismatch"]["cycle"], row["mismatch"]["signal"]) == (e.cycle, e.signal)


def test_tx_sched_rows_case_knobs():
    """MR-TXS-306, MR-TXS-308 (default run, the model alone: no simulator): the testbench's run
    from its knobs is the Amaranth locksteps' (the storm at STORM_SEED: 30 completions, two
    verdicts kept as reroutes, as tests/test_tx_sched_rows.py's ``_storm_model``); a model
    switch is ``name=0|1`` and anything else is refused."""
    from metaroce.models.driver import run_alone
    c = tbr.case(STORM_ENV)
    run_alone(c.model, c.drv)
    row = tbr.figures(c, 0, 0, 0)
    assert row["completions"] == 30 and row["kept"] == 2 and row["model"] == {}
    assert tbr.model_knobs("last_active_kept=0,forward=1") == {"last_active_kept": False,
                                                              "forward": True}
    with pytest.raises(ValueError):
        tbr.model_knobs("last_active_kept=false")
    c = tbr.case(dict(STORM_ENV, TXR_MODEL="last_active_kept=0"))
    assert c.model.last_active_kept is False
