"""cocotb testbench of the pacer joined into the TX scheduler (hdl/tx_pace.py ``PacedTxSched``,
block ``tx_sched_paced``; with the row scheduler, block ``tx_sched_rows_paced``) against its
cycle model (models/tx_pace.py), under Verilator (docs/spec/hw-tx-sched.md MR-TXS-166,
MR-TXS-367..370).

``tx_pace_lockstep``: ``TXP_WRS`` random work requests (seed ``TXP_SEED``) through
``tx_pace_cases.PacedDriver`` (connection 0 opened at 100 Gb/s of a 400 Gb/s line, the other at
the line rate, rate writes in ``TXP_PRATE`` (default 3 %) of the cycles, a share ``TXP_RETIME``
(default 0.5) of them with a time, MR-TXS-167; idle cycles, backpressure ``TXP_PBP`` (0.4),
losses); every output compared every cycle, then MR-TXS-050's checker and MR-TXS-165's.
``TXP_CASE=short``: MR-TXS-178's traffic instead (short last chunks, SENDs, READ requests,
atomics, ``TXP_RSPS`` READ responses; connection 0 at ``TXP_RATE`` Mb/s, default 20,000, no rate
writes), then MR-TXS-178's check of the gaps. ``TXP_ROWS=1`` (block ``tx_sched_rows_paced``):
the model with the row scheduler (``PacedTxSchedCycleModel(rows=True)``), then the rows' replay
(MR-TXS-341). ``TXP_MODEL``: the model's switches, ``name=0|1`` comma-separated (negative
controls, e.g. ``pace_ignored=1``, MR-TXS-369). Results to ``TXP_OUT`` (JSON) if set; at a
mismatch the row names its cycle and signal and the test fails.
"""
from __future__ import annotations

import os
from types import SimpleNamespace

import cocotb

from metaroce.models import tx_pace_cases as pc
from metaroce.models import tx_sched_cases as tc
from metaroce.models.tx_pace import PacedTxSchedCycleModel
from metaroce.models.tx_sched import SMALL, TxSchedModel

from .lockstep import Lockstep, Mismatch, drive, model_port_lists, write_out
from .tx_sched_rows import model_knobs


def case(env=None):
    """MR-TXS-367: the run the knobs of ``env`` (default ``os.environ``) name: the model, the
    driver, the work requests and READ responses. Simulator-free: the Amaranth cross-checks
    (tests/test_tx_sched_rows_pace_rtl.py) build the same run from the same knobs."""
    env = os.environ if env is None else env
    seed = int(env.get("TXP_SEED", "1"))
    n = int(env.get("TXP_WRS", "200"))
    knobs = model_knobs(env.get("TXP_MODEL"))
    model = PacedTxSchedCycleModel(64, **SMALL, rows=env.get("TXP_ROWS") == "1", **knobs)
    sem = TxSchedModel(**SMALL)
    kw = dict(mtu=SMALL["mtu"], seed=seed, p_idle=0.2, p_bp=float(env.get("TXP_PBP", "0.4")))
    rsps = ()
    if env.get("TXP_CASE", "random") == "short":
        # MR-TXS-178's traffic (tests/test_tx_pace.py SHORT): the rates kept after the opens
        items = tc.traffic(sem, n, seed=seed, max_len=3 * SMALL["mtu"], sends=0.3, reads=0.15,
                           atomics=0.15)
        n_rsps = int(env.get("TXP_RSPS", "4"))
        rsps = tc.responses(sem, n_rsps, seed=seed, max_len=2 * SMALL["mtu"]) if n_rsps else ()
        rates = [int(env.get("TXP_RATE", "20000")), 0]
        drv = pc.PacedDriver(model.lay, items, rates=rates, rsps=rsps, p_rate=0.0, **kw)
    else:
        items = tc.traffic(sem, n, seed=seed, max_len=6 * SMALL["mtu"], sends=0.3, reads=0.05,
                           atomics=0.05)
        rates = [100_000, 0]
        drv = pc.PacedDriver(model.lay, items, rates=rates,
                             p_rate=float(env.get("TXP_PRATE", "0.03")),
                             p_retime=float(env.get("TXP_RETIME", "0.5")), **kw)
    return SimpleNamespace(model=model, drv=drv, items=items, rsps=rsps, knobs=knobs,
                           rates=rates, short=env.get("TXP_CASE") == "short")


def figures(c, cycles, mismatches):
    """The JSON row of a finished run ``c`` (:func:`case`): MR-TXS-050's checker and
    MR-TXS-165's (MR-TXS-178's with ``short``; the replay with the rows, MR-TXS-341), then the
    counts."""
    model, drv = c.model, c.drv
    tc.check(TxSchedModel(**SMALL), c.items, drv.res, c.rsps)
    r = pc.check_paced(model, SMALL["mtu"])
    # MR-TXS-165 for both joins (the rows' since MR-TXS-372's hold)
    assert r["charges_in_order"] and not r["early"], r["early"]
    row = {"work_requests": len(c.items), "cycles": cycles, "packets": r["packets"],
           "charged": r["charged"], "moved": r["moved"], "forced": len(r["forced"]),
           "retimes": sum(1 for _, w in drv.res["pace_writes"] if w["set_time"]),
           "pace_writes": len(drv.res["pace_writes"]), "mismatches": mismatches,
           "completions": len(drv.res["cqe"]), "rows": model.rows, "model": c.knobs,
           "early": r["early"],
           # the writes with a time: (cycle taken, conn, time)
           "time_writes": [(cy, w["conn"], w["time"]) for cy, w in drv.res["pace_writes"]
                           if w["set_time"]]}
    if c.rsps:
        row["responses"] = len(c.rsps)
    if c.short:
        g = pc.check_gaps(model, c.rates)
        assert g["close"] == []
        row.update(gap_pairs=g["pairs"], short_pairs=g["short"])
    if model.rows:
        from metaroce.models.tx_sched_rows import replay
        replay(model.sched)
        row.update(ops=dict(model.sched.counts), idle_sched=model.sched.idle_sched,
                   held_sched=model.sched.held_sched)
    return row


@cocotb.test()
async def tx_pace_lockstep(dut):
    """MR-TXS-166 (block ``tx_sched_paced``), MR-TXS-367..369 (``tx_sched_rows_paced``,
    ``TXP_ROWS=1``): the join's RTL and its cycle model in lockstep."""
    c = case()
    ins, outs = model_port_lists(c.model)
    h = Lockstep(dut, c.model, ins, outs)
    for name in ins:
        getattr(dut, name).value = 0
    await h.start(monitor=False)
    try:
        n = await drive(h, c.drv, busy=c.model.busy)
    except Mismatch as e:
        # MR-TXS-369: the failing run names where (compared with the Amaranth lockstep's)
        write_out("TXP_OUT", {"mismatch": {"cycle": e.cycle, "signal": e.signal}, "model": c.knobs,
                "completions": len(c.drv.res["cqe"]), "work_requests": len(c.items)})
        raise
    assert h.mismatches == 0
    write_out("TXP_OUT", figures(c, n, h.mismatches))
