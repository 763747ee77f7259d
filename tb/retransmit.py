"""cocotb testbench of the retransmit unit (hdl/retransmit.py) against its cycle model
(models/retransmit.py), under Verilator (MR-TX-050).

The unit's one verification stack: traffic, driver and checker are
:mod:`metaroce.models.retransmit_cases` (shared with the model-only and Amaranth-simulator
tests); the comparison is the lockstep core of :mod:`metaroce.tb.lockstep` (:func:`drive`:
every output compared every cycle).

``retransmit_lockstep``: ``RTX_EVENTS`` random sent packets (seed ``RTX_SEED``) over two
connections' paths with their lossy ACKs (1 in 8 lost on the way back), stale, bad and NAK
items and a path that loses everything (a tail probe, MR-TX-162, then timeouts with backoff up
to the retry limit's error report), random idle cycles and backpressure on every output, then the
checker; then a burst of back-to-back ACKs, each taken in one cycle (MR-TX-034). Results to
``RTX_OUT`` (JSON) if set; ``RTX_NS_PER_CYCLE`` the driver's clock (MR-TX-205). Instance: ``RTX_CONNS``, ``RTX_PATHS``, ``RTX_POOL`` (default
256 x 4, 1,024 records); ``RTX_ENGINE=1``: the engine's instance instead (``retransmit_engine``,
MR-TX-456: 2 x 4, 256 records, interval 8), traffic on at most 6 of its 8 paths and the hole,
the burst on one of the others, its ACKs taken one every ``take_gap`` cycles (MR-TX-453).
"""
from __future__ import annotations

import json
import os
import time

import cocotb

from metaroce.models import retransmit_cases as rc
from metaroce.models.retransmit import CTR, RetransmitCycleModel, retransmit_model_engine
from metaroce.models.rx import unpack

from .lockstep import Lockstep, drive, model_port_lists


def _instance():
    return tuple(int(os.environ.get(k, d)) for k, d in (("RTX_CONNS", 256), ("RTX_PATHS", 4),
                                                        ("RTX_POOL", 1024)))


@cocotb.test()
async def retransmit_lockstep(dut):
    conns, paths, pool = _instance()
    seed = int(os.environ.get("RTX_SEED", "1"))
    engine = os.environ.get("RTX_ENGINE") == "1"
    if engine:
        model = retransmit_model_engine(64)         # MR-TX-456
        conns, paths, pool = model.lay.conns, model.lay.paths, model.lay.pool
    else:
        model = RetransmitCycleModel(64, conns, paths, pool)
    gap = model.gate.interval                       # MR-TX-453: stage 0's take gap
    ins, outs = model_port_lists(model)
    h = Lockstep(dut, model, ins, outs)
    for name in ins:
        getattr(dut, name).value = 0
    await h.start(monitor=False)

    # MR-TX-162: two connections' paths, 1 ACK in 8 lost: tail probes, then timeouts
    items = rc.traffic(conns, paths, pool, int(os.environ.get("RTX_EVENTS", "1500")), seed=seed,
                       black_hole=10, ack_loss=0.125, shared=2, rto_ns=model.rto_ns,
                       **({"n_paths": 6} if engine else {}))
    # MR-TX-205: RTX_NS_PER_CYCLE (default 4): with the ages (MR-TX-203) a clock of a few ns per
    # cycle makes every RTT sample tens of ns, so every progress ages out before an expiry
    drv = rc.Driver(model.lay, items, seed=seed, p_idle=0.2, p_bp=0.4,
                    ns_per_cycle=int(os.environ.get("RTX_NS_PER_CYCLE", "4")))
    t0 = time.perf_counter()
    n1 = await drive(h, drv, busy=model.busy)
    wall = time.perf_counter() - t0
    rc.check_items(model, items, drv.res)
    counts = {n: model.counters[i] for n, i in CTR.items()}

    # the engine's 8 rows: the items on a path out of range (refused, MR-TX-021) touch no row
    avoid = [it for it in items if it[0] == "wait" or it[1]["path"] < paths] if engine else items
    burst = rc.ack_burst(conns, paths, pool, seed=seed, avoid=avoid,
                         **({"n_rows": 1, "per_row": 16} if engine else {}))
    drv2 = rc.Driver(model.lay, burst["items"], seed=seed + 1, p_idle=0.0, p_bp=0.0, now0=drv.now)
    n2 = await drive(h, drv2, busy=model.busy)
    acks_taken = [c for c, (k, _) in zip(drv2.res["taken"], burst["items"]) if k == "ack"]
    assert acks_taken[-1] - acks_taken[0] == (len(acks_taken) - 1) * gap, "not one ACK per gap"
    assert h.mismatches == 0
    out = os.environ.get("RTX_OUT")
    if out:
        with open(out, "w") as f:
            json.dump({"connections": conns, "paths": paths, "pool": pool, "events": len(items),
                       "interval": model.interval, "take_gap": gap,
                       "random_cycles": n1, "burst_cycles": n2, "ack_burst": len(acks_taken),
                       "acks_per_cycle": round(len(acks_taken) / (acks_taken[-1] - acks_taken[0] + 1), 3),
                       "records_per_cycle": burst_rate(drv2.res),
                       "lockstep_cycles_per_s": round(n1 / wall) if wall else None,
                       "counters": counts, "ack_events": len(drv.res["ackev"]),
                       # MR-TX-197: m_probe's tail probes and the timeouts' verdicts
                       "probes": sum(1 for w in drv.res["probe"]
                                     if not unpack(model.lay.probe, w)["to"]),
                       "verdicts": sum(1 for w in drv.res["probe"]
                                       if unpack(model.lay.probe, w)["to"]),
                       "mismatches": h.mismatches}, f)


def burst_rate(res):
    """Records resolved per cycle over the burst (acked and resend reports together)."""
    cyc = sorted(res["acked_cycles"] + res["resend_cycles"])
    return round(len(cyc) / (cyc[-1] - cyc[0] + 1), 3) if cyc else None
