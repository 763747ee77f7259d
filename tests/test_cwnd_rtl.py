"""Congestion window RTL (hdl/cwnd.py, the small instance) against its cycle model under
Verilator, every output compared every cycle (MR-CW-041, tb/cwnd.py): random setup writes and
ACK events, idle cycles and backpressure; then the checker. Behind ``slow`` (a Verilator
build); the Amaranth lockstep of the same RTL is in the default run.

Knobs: CW_ACKS (ACK events, default 400), CW_SEED.
"""
import json
import os

import pytest

from metaroce import blocks
from metaroce.sim import verilator as vl
from metaroce.tb import build as tb_build


@pytest.mark.slow
def test_cwnd_rtl_lockstep(tmp_path):
    b = tb_build.build(blocks.get("cwnd"), 64)
    out = tmp_path / "cw.json"
    env = {"CW_ACKS": os.environ.get("CW_ACKS", "400"), "CW_SEED": os.environ.get("CW_SEED", "7"),
           "CW_OUT": str(out), "COCOTB_TEST_FILTER": "cwnd_lockstep$"}
    results = vl.run(b, "metaroce.tb.cwnd", extra_env=env)
    n_tests, failures, skipped = vl.results_summary(results)
    assert n_tests == 1 and not failures and not skipped
    row = json.loads(out.read_text())
    assert row["mismatches"] == 0 and row["acks"] >= 300
