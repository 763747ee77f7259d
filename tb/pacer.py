"""cocotb testbench of pacing's per-frame part (hdl/pacer.py ``PacerFrame``) against its cycle
model (models/pacer.py ``PacerFrameCycleModel``), under Verilator (MR-CW-098).

``pacer_lockstep``: the registered instance (``FRAME_SMALL``); ``PF_N`` random records (seed
``PF_SEED``, ``pacer_cases.frame_items``) with idle cycles and backpressure on ``m_turn``;
every output compared every cycle (:func:`~metaroce.tb.lockstep.drive`), then the checker.
Results to ``PF_OUT`` (JSON) if set.
"""
from __future__ import annotations

import json
import os

import cocotb

from metaroce.models import pacer_cases as pc
from metaroce.models.pacer import FRAME_SMALL, PacerFrameCycleModel

from .lockstep import Lockstep, drive, model_port_lists

CONFIG = {"mtu_wl": 4186, "line_mbps": 100_000}


@cocotb.test()
async def pacer_lockstep(dut):
    """MR-CW-098: the per-frame part against its cycle model: 0 mismatches."""
    seed = int(os.environ.get("PF_SEED", "1"))
    conns = FRAME_SMALL["conns"]
    model = PacerFrameCycleModel(64, conns)
    ins, outs = model_port_lists(model)
    h = Lockstep(dut, model, ins, outs)
    for name in ins:
        getattr(dut, name).value = 0
    await h.start(monitor=False)
    items = pc.frame_items(conns, int(os.environ.get("PF_N", "1000")), seed=seed)
    drv = pc.FrameDriver(model.lay, items, CONFIG, seed=seed)
    n = await drive(h, drv, busy=model.busy)
    counts = pc.check_frames(conns, CONFIG, drv.res["taken"], drv.res["turns"])
    assert h.mismatches == 0
    out = os.environ.get("PF_OUT")
    if out:
        with open(out, "w") as f:
            json.dump(dict(counts, cycles=n, mismatches=h.mismatches), f)
