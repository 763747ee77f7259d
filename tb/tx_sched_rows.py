"""cocotb testbench of the row scheduler (hdl/tx_sched_rows.py ``TxSchedRows``, the small
instance) against its cycle model (models/tx_sched_rows.py ``TxSchedRowsModel``) under Verilator
(MR-TXS-306..309).

The block's one verification stack, the one of its Amaranth locksteps
(tests/test_tx_sched_rows.py ``rows_lockstep``): traffic, driver (idle cycles, random
backpressure on every output, the loop through the retransmit unit's semantics and a lossy
receiver, the timeouts' path verdicts, window writes, READ responses, failures) and checker are
:mod:`metaroce.models.tx_sched_cases`, built as ``rows_lockstep`` builds them (so a seed's run is
the Amaranth run's, cycle for cycle); the comparison is the register scheduler's
(:func:`metaroce.tb.tx_sched.sched_lockstep`: every output compared every cycle).

``tx_sched_rows_lockstep`` knobs (environment): ``TXR_SEED`` (1), ``TXR_WRS`` (work requests,
60), ``TXR_RSPS`` (READ responses, 0), ``TXR_LOSS`` (0.1), ``TXR_PIDLE`` (0.2), ``TXR_PBP``
(0.3), ``TXR_PCWND`` (0), ``TXR_CWND_HI`` (50,000), ``TXR_PFAIL`` (0), ``TXR_PPROBE`` (the
driver's random tail probes per cycle, 0; MR-TXS-270..279), ``TXR_STORM`` (a
fraction of the cycles with a verdict of the driver's own, :class:`tc.VerdictStorm`; unset: the
plain driver), ``TXR_MODEL`` (the model's knobs, ``name=0|1`` comma-separated, e.g.
``last_active_kept=0``: negative controls, MR-TXS-308). Results to ``TXR_OUT`` (JSON) if set;
at a mismatch the row names its cycle and signal and the test fails.
"""
from __future__ import annotations

import os
from types import SimpleNamespace

import cocotb

from metaroce.models import tx_sched_cases as tc
from metaroce.models.tx_sched import SMALL, TxSchedModel
from metaroce.models.tx_sched_rows import TxSchedRowsModel
from metaroce.models.wire import MrdhFlag

from .lockstep import Mismatch, write_out
from .tx_sched import sched_figures, sched_lockstep


def model_knobs(text):
    """MR-TXS-308: ``"last_active_kept=0,forward=1"`` -> ``{"last_active_kept": False, ...}``
    (booleans only: the model's wrong forms are switches)."""
    out = {}
    for part in filter(None, (text or "").split(",")):
        name, _, value = part.partition("=")
        if value not in ("0", "1"):
            raise ValueError(f"TXR_MODEL: {part!r} is not name=0 or name=1")
        out[name.strip()] = value == "1"
    return out


def case(env=None):
    """MR-TXS-306: the run the knobs of ``env`` (default ``os.environ``) name: the model, the
    driver, the work requests, the READ responses and the model's knobs, built as
    tests/test_tx_sched_rows.py ``rows_lockstep`` builds them. Simulator-free: the Amaranth
    cross-checks of tests/test_tx_sched_rows_rtl.py build the same run from the same knobs."""
    env = os.environ if env is None else env

    def get(name, default, kind=float):
        return kind(env.get(name, default))
    seed = get("TXR_SEED", "1", int)
    knobs = model_knobs(env.get("TXR_MODEL"))
    sem = TxSchedModel(**SMALL)
    items = tc.traffic(sem, get("TXR_WRS", "60", int), seed=seed)
    n_rsps = get("TXR_RSPS", "0", int)
    rsps = tc.responses(sem, n_rsps, seed=seed) if n_rsps else ()
    model = TxSchedRowsModel(64, **SMALL, **knobs)
    kw = dict(seed=seed, rsps=rsps, p_idle=get("TXR_PIDLE", "0.2"), p_bp=get("TXR_PBP", "0.3"),
              loss=get("TXR_LOSS", "0.1"), p_cwnd=get("TXR_PCWND", "0"),
              cwnd_hi=get("TXR_CWND_HI", "50000", int), p_fail=get("TXR_PFAIL", "0"),
              p_probe=get("TXR_PPROBE", "0"))
    storm = env.get("TXR_STORM")
    drv = (tc.VerdictStorm(model.lay, items, p_verdict=float(storm), **kw) if storm
           else tc.Driver(model.lay, items, **kw))
    return SimpleNamespace(model=model, drv=drv, items=items, rsps=rsps, knobs=knobs,
                           p_fail=kw["p_fail"])


def summarize(c):
    """The checker on a finished run ``c`` (:func:`case`): :func:`tc.check` without failures;
    with them (which the checker does not model) each work request completes once, as the
    Amaranth lockstep's MR-TXS-253 case. Returns the checker's summary."""
    drv = c.drv
    if not c.p_fail:
        return tc.check(TxSchedModel(**SMALL), c.items, drv.res, c.rsps)
    assert sorted(x["wr_id"] for x in drv.res["cqe"]) == sorted(w["wr_id"] for w in c.items)
    return {"retransmits": sum(1 for f in drv.res["frames"] if f["mrdh_flags"] & MrdhFlag.RETX),
            "probes": 0}


def figures(c, cycles, wall, mismatches):
    """The JSON row of a finished run: the register scheduler's figures and the rows' own
    (operations applied per kind, refills MR-TXS-258, verdicts kept as reroutes MR-TXS-266,
    schedule ops that found nothing MR-TXS-214, completions with an error status)."""
    m, drv = c.model, c.drv
    row = sched_figures(c.items, drv, c.rsps, summarize(c), cycles, wall, mismatches)
    row.update(ops=dict(m.counts), refills=m.refills, kept=m.kept, idle_sched=m.idle_sched,
               model=c.knobs, error_cqes=sum(1 for x in drv.res["cqe"] if x["status"]))
    return row


@cocotb.test()
async def tx_sched_rows_lockstep(dut):
    """MR-TXS-306, MR-TXS-307: the row scheduler's RTL and its cycle model in lockstep."""
    c = case()
    try:
        h, n, wall = await sched_lockstep(dut, c.model, c.drv)
    except Mismatch as e:
        # MR-TXS-308: the failing run names where (compared with the Amaranth lockstep's)
        write_out("TXR_OUT", {"mismatch": {"cycle": e.cycle, "signal": e.signal}, "model": c.knobs,
                "completions": len(c.drv.res["cqe"]), "work_requests": len(c.items)})
        raise
    assert h.mismatches == 0
    write_out("TXR_OUT", figures(c, n, wall, h.mismatches))
