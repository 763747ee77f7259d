"""cocotb testbench of the paced TX engine (hdl/tx.py ``Tx(pacing=True)``, block ``tx_paced``)
against its cycle model (models/tx.py ``TxCycleModel(pacing=True)``), under Verilator
(docs/spec/hw-tx.md MR-TX-249).

The engine's verification stack of tb/tx.py with the pacer's write port: the driver is
:class:`metaroce.models.tx_pace_cases.PacedTxDriver` (templates, work requests, a host memory on
the AXI read port, the lossy receiver's ACKs, the pacer's opens and rate writes), the checkers
MR-TX-150's (every work request completes) and MR-TX-237's (no packet decided and no frame out
before its bounds); the comparison is the lockstep core of :mod:`metaroce.tb.lockstep`.

``tx_paced_lockstep``: ``TXP_WRS`` random work requests (seed ``TXP_SEED``, payloads up to
6 MTUs), connection 0 opened at ``TXP_RATE`` Mb/s (default 5,000: its full frame's gap about 446
cycles, more than the data path's time for a frame, so the pacer binds), connection 1 at the line
rate, rate writes in 1 % of the cycles; idle cycles, backpressure on every output, random AXI
read latency, lost frames and their resends. Results to ``TXP_OUT`` (JSON) if set.
``TXP_PACE_IGNORED=1`` (negative control): the model without the scheduler's pacing condition
against the paced RTL, which must mismatch.

``TXP_ROWS=1`` (block ``tx_rows_paced``, MR-TX-386..388): the model with the row scheduler
(``models.tx_rows_paced``), then the rows' replay (MR-TXS-341); ``TXP_PRATE`` (default 0.01) the
share of cycles with a rate write, ``TXP_MAXLEN`` (default 6 MTUs) the longest payload,
``TXP_RETIME`` (default 0) the share of those that also set
the time (MR-TXS-167: re-timing writes in flight, MR-TXS-371's situation); ``TXP_MODEL`` the
model's switches, ``name=0|1`` comma-separated (``retime_hold=0``: the rows without
MR-TXS-372's hold, MR-TX-388's negative control). :func:`case` builds the run from the knobs
without a simulator (the Amaranth cross-checks build the same run). At a mismatch the row names
its cycle and signal and the test fails.

``tx_paced_bench``: a row of ``metaroce bench tx_paced --sim verilator`` (MR-TX-250, the driver
of :mod:`metaroce.benches.tx_paced`). Results to ``TXP_BENCH_OUT``.
"""
from __future__ import annotations

import json
import os
import time
from types import SimpleNamespace

import cocotb

from metaroce.models import tx_cases as xc
from metaroce.models import tx_pace_cases as pc
from metaroce.models.tx import SMALL, TxCycleModel

from .lockstep import Lockstep, Mismatch, drive, model_port_lists, write_out
from .tx import _harness as tx_harness, _sem, _width
from .tx_sched_rows import model_knobs


async def _harness(dut, width, *, first=True, pace_ignored=False):
    """tb/tx.py's harness with the paced model; ``pace_ignored``: the model with the scheduler's
    condition left out (negative control)."""
    return await tx_harness(dut, width, first=first, pacing=True, pace_ignored=pace_ignored)


def case(env=None, width=64):
    """MR-TX-249, MR-TX-387: the run the knobs of ``env`` (default ``os.environ``) name: the
    model, the driver and the work requests. Simulator-free (tests/test_tx_rows_paced.py's
    Amaranth cross-checks build the same run from the same knobs)."""
    env = os.environ if env is None else env
    seed = int(env.get("TXP_SEED", "1"))
    rate = int(env.get("TXP_RATE", "5000"))
    knobs = model_knobs(env.get("TXP_MODEL"))
    # MR-TX-249's negative control: TXP_PACE_IGNORED=1 steps the model without the condition
    if env.get("TXP_PACE_IGNORED") == "1":
        knobs["pace_ignored"] = True
    rows = env.get("TXP_ROWS") == "1"
    if rows:
        from metaroce.models.tx_rows_paced import tx_rows_paced_model_small
        model = tx_rows_paced_model_small(width, **knobs)
    else:
        model = TxCycleModel(width, **SMALL, pacing=True, **knobs)
    items, lay = xc.traffic(_sem(), int(env.get("TXP_WRS", "30")), seed=seed,
                            max_len=int(env.get("TXP_MAXLEN", 6 * SMALL["mtu"])))
    drv = pc.PacedTxDriver(model.lay, width, items, lay,
                           xc.templates(SMALL["conns"], SMALL["paths"]), seed=seed, loss=0.1,
                           mtu=SMALL["mtu"], rates=[rate, 0],
                           p_rate=float(env.get("TXP_PRATE", "0.01")),
                           rate_choices=(rate, 2 * rate, 0),
                           p_retime=float(env.get("TXP_RETIME", "0")))
    # MR-TX-389: the charges' and time writes' cycles for MR-TX-237's bounds
    return SimpleNamespace(model=model, drv=drv, items=items, knobs=knobs, rows=rows,
                           times=pc.PaceTimes(model.paced))


def _n_bounds(per):
    return sum(len(b) for v in per.values() for _, b in v)


def figures(c, cycles, mismatches, wall=None):
    """The JSON row of a finished run ``c`` (:func:`case`): MR-TX-150's checker and MR-TX-237's
    (a)..(c) (asserted: every work request completes, no packet decided and no frame out
    before its bounds), the rows' replay (MR-TXS-341), then the counts."""
    model, drv = c.model, c.drv
    summary = xc.check(_sem(), c.items, drv)
    r = pc.check_paced(model.paced, SMALL["mtu"])
    spacing = pc.check_spacing(model.paced, c.times)
    f = pc.check_frames_left(model.paced, drv.res["left"], c.times)
    assert not r["early"] and not spacing and not f["early"], (r["early"], spacing, f["early"])
    # MR-TX-389: a forced charge only after a write with a time moved pace_until on
    forced_alone = pc.forced_withoutwrite_out("TXP_OUT", model.paced, c.times)
    assert not forced_alone, forced_alone
    row = {"work_requests": len(c.items), "cycles": cycles, "frames": summary["frames"],
           "retransmits": summary["retransmits"], "lost": drv.res["lost"],
           "completions": len(drv.res["cqe"]), "packets": r["packets"],
           "charged": r["charged"], "moved": r["moved"],
           "early": len(r["early"]), "forced": len(r["forced"]),
           "charges_in_order": r["charges_in_order"],
           "decided_early": len(spacing), "frames_early": len(f["early"]),
           "frames_left": f["frames"], "same_count": f["same_count"],
           "pace_writes": len(drv.res["pace_writes"]),
           "retimes": sum(1 for _, w in drv.res["pace_writes"] if w["set_time"]),
           # MR-TX-389: tail probes' frames (no packets) and the bounds (b) a write voided
           "probes_left": len(drv.res.get("probes_left", ())),
           "bounds_voided": _n_bounds(pc._bounds(model.paced))
           - _n_bounds(pc._bounds(model.paced, c.times)),
           "lockstep_cycles_per_s": round(cycles / wall) if wall else None,
           "mismatches": mismatches, "rows": c.rows, "model": c.knobs}
    if c.rows:
        from metaroce.models.tx_sched_rows import replay
        replay(model.sched)
        row.update(ops=dict(model.sched.counts), held_sched=model.sched.held_sched)
    return row


@cocotb.test()
async def tx_paced_lockstep(dut):
    """MR-TX-249 (block ``tx_paced``), MR-TX-387/388 (``tx_rows_paced``, ``TXP_ROWS=1``): the
    paced engine's RTL and its cycle model in lockstep, every output every cycle."""
    c = case(width=_width(dut))
    ins, outs = model_port_lists(c.model)
    h = Lockstep(dut, c.model, ins, outs, on_cycle=c.times)
    for name in ins:
        getattr(dut, name).value = 0
    await h.start(monitor=False)
    t0 = time.perf_counter()
    try:
        n = await drive(h, c.drv, busy=c.model.busy)
    except Mismatch as e:
        # MR-TX-388: the failing run names where (compared with the Amaranth lockstep's)
        if c.rows:
            write_out("TXP_OUT", {"mismatch": {"cycle": e.cycle, "signal": e.signal}, "model": c.knobs,
                    "completions": len(c.drv.res["cqe"]), "work_requests": len(c.items)})
        raise
    wall = time.perf_counter() - t0
    assert h.mismatches == 0
    write_out("TXP_OUT", figures(c, n, h.mismatches, wall))


@cocotb.test()
async def tx_paced_bench(dut):
    """MR-TX-250: a row of ``metaroce bench tx_paced --sim verilator``: rate ``TXP_BENCH_RATE``
    (one rate a simulation: a second reset in the same one would leave the RTL's unreset
    payload registers, which the fresh model has at 0, and the lockstep compares them)."""
    from metaroce.benches import tx_paced as bench
    width = _width(dut)
    n = int(os.environ.get("TXP_BENCH_PACKETS", "8"))
    rate = int(os.environ.get("TXP_BENCH_RATE", "5000"))
    model, h = await _harness(dut, width)
    drv = bench.driver(model.lay, width, n, rate,
                       int(os.environ.get("TXP_BENCH_BYTES", "0")) or None)
    t0 = time.perf_counter()
    cycles = await drive(h, drv, busy=model.active)
    row = bench.row(drv, width, rate, cycles, time.perf_counter() - t0, h.mismatches,
                    "verilator")
    out = os.environ.get("TXP_BENCH_OUT")
    if out:
        with open(out, "w") as fh:
            json.dump({"rows": [row]}, fh)
