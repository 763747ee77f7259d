"""cocotb testbench of the congestion window block (hdl/cwnd.py) against its cycle model
(models/cwnd.py), under Verilator (MR-CW-041).

The block's one verification stack: records, driver and checker are
:mod:`metaroce.models.cwnd_cases` (shared with the model-only and Amaranth-simulator tests);
the comparison is the lockstep core of :mod:`metaroce.tb.lockstep` (:func:`drive`: every
output compared every cycle).

``cwnd_lockstep``: the small instance (models.cwnd.SMALL); ``CW_ACKS`` random ACK events
(seed ``CW_SEED``) with setup writes, random idle cycles and backpressure on ``m_update``,
then the checker. Results to ``CW_OUT`` (JSON) if set.

``hinted_lockstep`` (MR-CW-065): the hinted block with its control path in the loop
(``CwndControl``); ``CW_TRACE`` "random" (the small instance, ``CW_ACKS`` hinted events) or
"incast" / "incast6" (the endpoint's whole trace through the 8 x 4 instance); the windows after
each event and its control path's writes against the unsplit model's (random) or the
endpoint's (``equal`` in the results).
"""
from __future__ import annotations

import json
import os
import time

import cocotb

from metaroce.models import cwnd_cases as cc
from metaroce.models import protocol as P
from metaroce.models.cwnd import SMALL, CwndCycleModel, CwndModel

from .lockstep import Lockstep, drive, model_port_lists

#: The configuration inputs of the run (MR-CW-005): a cap low enough to bind.
CONFIG = {"mtu": 1024, "beta_q": P.Q_ONE // 2, "cap": 60_000}


@cocotb.test()
async def cwnd_lockstep(dut):
    seed = int(os.environ.get("CW_SEED", "1"))
    model = CwndCycleModel(64, **SMALL)
    ins, outs = model_port_lists(model)
    h = Lockstep(dut, model, ins, outs)
    for name in ins:
        getattr(dut, name).value = 0
    await h.start(monitor=False)
    items = cc.traffic(model.sem, int(os.environ.get("CW_ACKS", "400")), seed=seed)
    drv = cc.Driver(model.lay, items, CONFIG, seed=seed, p_idle=0.2, p_bp=0.4)
    t0 = time.perf_counter()
    n = await drive(h, drv, busy=model.busy)
    wall = time.perf_counter() - t0
    summary = cc.check(CwndModel(**SMALL), CONFIG, drv.res["taken"], drv.res["updates"])
    assert h.mismatches == 0
    out = os.environ.get("CW_OUT")
    if out:
        with open(out, "w") as f:
            json.dump({"records": summary["records"], "acks": summary["acks"], "cycles": n,
                       "lockstep_cycles_per_s": round(n / wall) if wall else None,
                       "mismatches": h.mismatches}, f)


@cocotb.test()
async def verdicts_lockstep(dut):
    """MR-CW-115: the block with the path verdicts' port (``cwnd_verdicts``) against
    ``CwndCycleModel(verdicts=True)``: ``CW_ACKS`` random events with verdicts and restores
    (seed ``CW_SEED``), idle cycles, backpressure; then the checker (no share-out)."""
    seed = int(os.environ.get("CW_SEED", "1"))
    model = CwndCycleModel(64, **SMALL, verdicts=True)
    ins, outs = model_port_lists(model)
    h = Lockstep(dut, model, ins, outs)
    for name in ins:
        getattr(dut, name).value = 0
    await h.start(monitor=False)
    items = cc.traffic(model.sem, int(os.environ.get("CW_ACKS", "400")), seed=seed,
                       verdicts=True)
    drv = cc.Driver(model.lay, items, CONFIG, seed=seed, p_idle=0.2, p_bp=0.4)
    n = await drive(h, drv, busy=model.busy)
    summary = cc.check(CwndModel(**SMALL, verdicts=True, share_out=False), CONFIG,
                       drv.res["taken"], drv.res["updates"])
    assert h.mismatches == 0
    out = os.environ.get("CW_OUT")
    if out:
        with open(out, "w") as f:
            json.dump({"records": summary["records"], "acks": summary["acks"], "cycles": n,
                       "verdicts": sum(1 for k, _ in drv.res["taken"] if k == "path"),
                       "mismatches": h.mismatches}, f)


@cocotb.test()
async def band_lockstep(dut):
    """MR-CW-059: the hinted band unit (``CwndBand``) against ``CwndBandCycleModel``: 300
    requests (seed ``CW_SEED``) at 400 Gb/s and a 10 us base RTT, idle cycles, backpressure."""
    from metaroce.models.cwnd import CwndBandCycleModel
    seed = int(os.environ.get("CW_SEED", "1"))
    model = CwndBandCycleModel()
    ins, outs = model_port_lists(model)
    h = Lockstep(dut, model, ins, outs)
    for name in ins:
        getattr(dut, name).value = 0
    await h.start(monitor=False)
    config = {"line_mbps": 400_000, "base_rtt_ns": 10_000, "mtu": 4096}
    drv = cc.BandDriver(model.lay, cc.band_requests(400_000, 300, seed=seed), config, seed=seed)
    n = await drive(h, drv, busy=model.busy)
    summary = cc.check_band(config, drv.res["taken"], drv.res["results"])
    assert h.mismatches == 0
    out = os.environ.get("CW_OUT")
    if out:
        with open(out, "w") as f:
            json.dump({"requests": summary["requests"], "cycles": n,
                       "mismatches": h.mismatches}, f)


#: MR-CW-065: the hinted runs' configuration for random traffic (a cap that binds).
HINT_CONFIG = dict(CONFIG, line_mbps=100_000, base_rtt_ns=10_000)


@cocotb.test()
async def hinted_lockstep(dut):
    from metaroce.models.cwnd import TRACE, CwndControl
    seed = int(os.environ.get("CW_SEED", "1"))
    trace = os.environ.get("CW_TRACE", "random")
    params = SMALL if trace == "random" else TRACE
    model = CwndCycleModel(64, **params, hints=True)
    if trace == "random":
        config = HINT_CONFIG
        items = cc.traffic(CwndModel(**params, **config), int(os.environ.get("CW_ACKS", "400")),
                           seed=seed, hints=True)
        expected = cc.unsplit_expected(params, config, items)     # the unsplit model's
    else:
        config, items, expected = cc.endpoint_trace(scenario=trace)
    ins, outs = model_port_lists(model)
    h = Lockstep(dut, model, ins, outs)
    for name in ins:
        getattr(dut, name).value = 0
    await h.start(monitor=False)
    ctl = CwndControl(**params, **config)
    drv = cc.Driver(model.lay, items, config, seed=seed, p_idle=0.1, p_bp=0.2, control=ctl)
    n = await drive(h, drv, busy=model.busy)
    summary = cc.check(CwndModel(**params, split=True), config, drv.res["taken"],
                       drv.res["updates"])
    assert h.mismatches == 0
    equal = cc.check_after(drv.loop.after, items, expected)
    out = os.environ.get("CW_OUT")
    if out:
        with open(out, "w") as f:
            json.dump({"records": summary["records"], "acks": summary["acks"], "cycles": n,
                       "equal": equal, "mismatches": h.mismatches, **ctl.moves}, f)
