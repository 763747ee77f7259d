"""cocotb testbench of the receiver's rate hint (hdl/rx_hint.py ``RxHint``, blocks ``rx_hint``,
``rx_hint_mem`` and ``rx_hint_4096``) against its cycle model (models/rx_hint.py
``RxHintCycleModel``) under Verilator (docs/spec/hw-engine.md section 5s, MR-ENG-357..360).

``rx_hint_lockstep``: the block the build is of (its toplevel's name; the connections and form
those of its registered model), driven by a loop of :mod:`metaroce.models.rx_hint_cases` (the
Amaranth locksteps' stimuli: the block has no ready, so no backpressure; idle cycles, bursts of
an arrival every cycle, the same connection back to back, intervals ended under load, stale
ones), every output compared every cycle (:func:`~metaroce.tb.lockstep.drive`).

Knobs (environment): ``RH_LOOP`` (``burst``, default, or ``random``), ``RH_N`` (cycles, 2,000),
``RH_SEED`` (3), ``RH_PHASE`` (``BurstLoop``'s, 400), ``RH_WRONG`` (the model's wrong form,
MR-ENG-336/352: a negative control, MR-ENG-359). Results to ``RH_OUT`` (JSON) if set; at a
mismatch the row names its cycle and signal and the test fails.
"""
from __future__ import annotations

import os

import cocotb

from metaroce import blocks
from metaroce.models import rx_hint_cases as hc
from metaroce.models.rx_hint import RxHintCycleModel

from .lockstep import Lockstep, Mismatch, drive, model_port_lists, write_out


def case(block, env=None):
    """MR-ENG-357: the run the knobs of ``env`` (default ``os.environ``) name on ``block``: its
    model (``RH_WRONG`` its wrong form) and loop. Simulator-free: the Amaranth cross-check of
    tests/test_rx_hint_rtl.py builds the same run."""
    env = os.environ if env is None else env
    ref = blocks.get(block).make_model(64).m
    conns, form = ref.conns, ref.form
    model = RxHintCycleModel(conns, wrong=env.get("RH_WRONG") or None, form=form)
    n, seed = int(env.get("RH_N", "2000")), int(env.get("RH_SEED", "3"))
    loop = env.get("RH_LOOP", "burst")
    if loop == "burst":
        drv = hc.BurstLoop(conns, n=n, seed=seed, phase=int(env.get("RH_PHASE", "400")))
    elif loop == "random":
        drv = hc.RandomLoop(conns, n=n, seed=seed)
    else:
        raise ValueError(f"RH_LOOP: {loop!r} is not burst or random")
    return model, drv


def figures(model, drv, cycles, mismatches):
    """The JSON row of a run: what it exercised (MR-ENG-358's floors)."""
    m = model.m
    return {"conns": m.conns, "form": m.form, "wrong": m.wrong, "cycles": cycles,
            "mismatches": mismatches, "taken": drv.taken,
            "back_to_back": getattr(drv, "back_to_back", 0), "rollovers": m.rollovers,
            "stale": m.stale, "carried": m.carried, "jobs": m.jobs,
            "max_senders": drv.max_senders, "hints": len(drv.hints)}


@cocotb.test()
async def rx_hint_lockstep(dut):
    """MR-ENG-357, MR-ENG-358: RxHint and its cycle model in lockstep, every output every cycle."""
    model, drv = case(dut._name)
    ins, outs = model_port_lists(model)
    h = Lockstep(dut, model, ins, outs)
    for name in ins:
        getattr(dut, name).value = 0
    await h.start(monitor=False)
    try:
        n = await drive(h, drv)
    except Mismatch as e:
        # MR-ENG-359: the failing run names where (compared with the Amaranth lockstep's)
        write_out("RH_OUT", {"mismatch": {"cycle": e.cycle, "signal": e.signal}, "wrong": model.m.wrong})
        raise
    assert h.mismatches == 0
    write_out("RH_OUT", figures(model, drv, n, h.mismatches))
