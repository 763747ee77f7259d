"""cocotb testbench of the pacer joined into the TX scheduler (hdl/tx_pace.py ``PacedTxSched``,
block ``tx_sched_paced``) against its cycle model (models/tx_pace.py), under Verilator
(docs/spec/hw-tx-sched.md MR-TXS-166).

``tx_pace_lockstep``: ``TXP_WRS`` random work requests (seed ``TXP_SEED``) through
``tx_pace_cases.PacedDriver`` (connection 0 opened at 100 Gb/s of a 400 Gb/s line, the other at
the line rate, rate writes in ``TXP_PRATE`` (default 3 %) of the cycles, a share ``TXP_RETIME``
(default 0.5) of them with a time, MR-TXS-167; idle cycles, backpressure, losses); every
output compared every cycle, then MR-TXS-050's checker and MR-TXS-165's. Results to ``TXP_OUT``
(JSON) if set.
"""
from __future__ import annotations

import json
import os

import cocotb

from metaroce.models import tx_pace_cases as pc
from metaroce.models import tx_sched_cases as tc
from metaroce.models.tx_pace import PacedTxSchedCycleModel
from metaroce.models.tx_sched import SMALL, TxSchedModel

from .lockstep import Lockstep, drive, model_port_lists


@cocotb.test()
async def tx_pace_lockstep(dut):
    seed = int(os.environ.get("TXP_SEED", "1"))
    model = PacedTxSchedCycleModel(64, **SMALL)
    ins, outs = model_port_lists(model)
    h = Lockstep(dut, model, ins, outs)
    for name in ins:
        getattr(dut, name).value = 0
    await h.start(monitor=False)
    items = tc.traffic(TxSchedModel(**SMALL), int(os.environ.get("TXP_WRS", "200")), seed=seed,
                       max_len=6 * SMALL["mtu"], sends=0.3, reads=0.05, atomics=0.05)
    drv = pc.PacedDriver(model.lay, items, mtu=SMALL["mtu"], rates=[100_000, 0], seed=seed,
                         p_idle=0.2, p_bp=0.4,
                         p_rate=float(os.environ.get("TXP_PRATE", "0.03")),
                         p_retime=float(os.environ.get("TXP_RETIME", "0.5")))
    n = await drive(h, drv, busy=model.busy)
    tc.check(TxSchedModel(**SMALL), items, drv.res)
    r = pc.check_paced(model, SMALL["mtu"])
    assert h.mismatches == 0
    assert not r["early"] and r["charges_in_order"]
    out = os.environ.get("TXP_OUT")
    if out:
        with open(out, "w") as f:
            json.dump({"work_requests": len(items), "cycles": n, "packets": r["packets"],
                       "charged": r["charged"], "moved": r["moved"], "forced": len(r["forced"]),
                       "retimes": sum(1 for _, w in drv.res["pace_writes"] if w["set_time"]),
                       "pace_writes": len(drv.res["pace_writes"]), "mismatches": h.mismatches},
                      f)
