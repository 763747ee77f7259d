"""Congestion window RTL (hdl/cwnd.py, the small instance) against its cycle model under
Verilator, every output compared every cycle (MR-CW-041, tb/cwnd.py): random setup writes and
ACK events, idle cycles and backpressure; then the checker. Behind ``slow`` (a Verilator
build); the Amaranth lockstep of the same RTL is in the default run.

Knobs: CW_ACKS (ACK events, default 400), CW_SEED.
"""
import os

import pytest

from metaroce import blocks
from metaroce.sim import verilator as vl
from metaroce.tb import build as tb_build


@pytest.mark.slow
def test_cwnd_rtl_lockstep():
    b = tb_build.build(blocks.get("cwnd"), 64)
    env = {"CW_ACKS": os.environ.get("CW_ACKS", "400"), "CW_SEED": os.environ.get("CW_SEED", "7")}
    row = vl.run_one(b, "metaroce.tb.cwnd", "cwnd_lockstep", env, out_var="CW_OUT")
    assert row["mismatches"] == 0 and row["acks"] >= 300
