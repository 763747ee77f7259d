"""Retransmit unit RTL (hdl/retransmit.py, the 256 x 4 x 1,024 instance) against its cycle
model under Verilator, every output compared every cycle (MR-TX-050, tb/retransmit.py): random
sends and lossy ACKs (ACKs lost too), tail probes (MR-TX-162), timeouts and the retry limit's
error report (MR-TX-060..064), with idle
cycles and backpressure, then a burst of ACKs taken at one per cycle (MR-TX-034). One cached Verilator build.

Knobs: RTX_EVENTS (sent packets, default 1500), RTX_SEED.
"""
import os

import pytest

from metaroce import blocks
from metaroce.sim import verilator as vl
from metaroce.tb import build as tb_build


@pytest.mark.slow
def test_retransmit_rtl_lockstep():
    b = tb_build.build(blocks.get("retransmit_256x4"), 64)
    env = {"RTX_EVENTS": os.environ.get("RTX_EVENTS", "1500"),
           "RTX_SEED": os.environ.get("RTX_SEED", "7"),
           "RTX_CONNS": "256", "RTX_PATHS": "4", "RTX_POOL": "1024",
           # MR-TX-205: RTT samples of microseconds, so the aged health (MR-TX-203) lets probes
           "RTX_NS_PER_CYCLE": os.environ.get("RTX_NS_PER_CYCLE", "256")}
    row = vl.run_one(b, "metaroce.tb.retransmit", "retransmit_lockstep", env, out_var="RTX_OUT")
    assert row["mismatches"] == 0 and row["acks_per_cycle"] == 1.0
    assert row["records_per_cycle"] >= 0.45            # MR-TX-032: n + 1 cycles per job
    c = row["counters"]
    assert c["gap_losses"] and c["timeouts"] >= 10 and c["errors"] == 1 and c["acks_stale"]
    assert row["probes"] == c["tail_probes"] >= 5          # MR-TX-162: lost ACKs, healthy paths
    assert row["verdicts"] == c["timeouts"]                 # MR-TX-197: one per timeout
    assert c["paths_suspected"] and c["path_reroutes"]      # MR-TX-203: aged health both ways


@pytest.mark.slow
def test_retransmit_engine_rtl_lockstep():
    """MR-TX-456, MR-TX-453, MR-TX-454: the unit as the engine builds it (``retransmit_engine``:
    2 x 4, 256 records, interval 8, so stage 0 takes an event every 4 cycles at most and no
    forward is built) against its model under Verilator, random traffic with idle cycles and
    backpressure, then a burst of ACKs offered back to back: 0 mismatches, the ACKs taken one
    every 4 cycles."""
    b = tb_build.build(blocks.get("retransmit_engine"), 64)
    env = {"RTX_EVENTS": os.environ.get("RTX_EVENTS", "1500"),
           "RTX_SEED": os.environ.get("RTX_SEED", "3"), "RTX_ENGINE": "1",
           "RTX_NS_PER_CYCLE": os.environ.get("RTX_NS_PER_CYCLE", "256")}
    row = vl.run_one(b, "metaroce.tb.retransmit", "retransmit_lockstep", env, out_var="RTX_OUT")
    assert row["mismatches"] == 0 and row["interval"] == 8 and row["take_gap"] == 4
    n = row["ack_burst"]                                    # MR-TX-453: one ACK every 4 cycles
    assert n >= 16 and row["acks_per_cycle"] == round(n / ((n - 1) * 4 + 1), 3)
    c = row["counters"]
    assert c["gap_losses"] and c["timeouts"] and c["acks_stale"] and c["acked"] and c["errors"] == 1
    assert c["tail_probes"] and c["paths_suspected"] and c["path_reroutes"]     # MR-TX-162/196
    print(row)
