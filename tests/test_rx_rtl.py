"""RX engine RTL (hdl/rx.py, the 256 x 4 instance) against its cycle model under Verilator,
every output compared every cycle (MR-RX-070, tb/rx.py), at 64 bits (512 bits behind ``slow``;
the Amaranth simulator runs 512 bits in the default run): the window,
bad-input, burst and random cases with idle cycles and backpressure, then a same-path burst
taken at one record per cycle (MR-RX-043). One cached Verilator build per width.

Knobs: RX_RANDOM (random packets, default 400), RX_SEED.
"""
import json
import os

import pytest

from metaroce import blocks
from metaroce.sim import verilator as vl
from metaroce.tb import build as tb_build


@pytest.mark.parametrize("width", [64, pytest.param(512, marks=pytest.mark.slow)])
def test_rx_rtl_lockstep(width, tmp_path):
    b = tb_build.build(blocks.get("rx_256x4"), width)
    out = tmp_path / "rx.json"
    env = {"RX_RANDOM": os.environ.get("RX_RANDOM", "400"), "RX_SEED": os.environ.get("RX_SEED", str(width)),
           "RX_CONNS": "256", "RX_PATHS": "4", "RX_KEYS": "256", "RX_OUT": str(out),
           "COCOTB_TEST_FILTER": "rx_lockstep$"}
    results = vl.run(b, "metaroce.tb.rx", extra_env=env)
    n_tests, failures, skipped = vl.results_summary(results)
    assert n_tests == 1 and not failures and not skipped
    row = json.loads(out.read_text())
    assert row["mismatches"] == 0 and row["packets_per_cycle"] == 1.0


@pytest.mark.parametrize("width", [64, pytest.param(512, marks=pytest.mark.slow)])
def test_rx_rtl_endpoint_traffic(width, tmp_path):
    """MR-RX-071: the reference endpoint's real traffic (a sender endpoint through the model
    fabric with loss, reordering and duplication on the data direction) into the RTL under
    Verilator, in lockstep with the model under random idle cycles and backpressure, forged
    writes among the frames: zero mismatches, the RTL's memory image and ACK/NAK stream equal
    the receiving endpoint's."""
    b = tb_build.build(blocks.get("rx_256x4"), width)
    out = tmp_path / "traffic.json"
    env = {"RX_SEED": str(width + 1), "RX_TRAFFIC_BYTES": "16384" if width == 64 else "49152",
           "RX_TRAFFIC_LOSS": "0.05", "RX_TRAFFIC_REORDER": "0.2", "RX_TRAFFIC_DUP": "0.05",
           "RX_TRAFFIC_HOSTILE": "10",
           "RX_TRAFFIC_OUT": str(out), "COCOTB_TEST_FILTER": "rx_endpoint_traffic$"}
    results = vl.run(b, "metaroce.tb.rx", extra_env=env)
    n_tests, failures, skipped = vl.results_summary(results)
    assert n_tests == 1 and not failures and not skipped
    row = json.loads(out.read_text())
    assert row["mismatches"] == 0 and row["acks_equal"] and row["memory_equal"]
    assert row["traffic"]["lost"] > 0 and row["traffic"]["duplicated"] > 0
    assert row["outcomes"]["DUPLICATE"] > 0 and row["outcomes"]["ACCEPTED"] > 0
    assert row["traffic"]["naks"] > 0 and all(row["outcomes"][k] > 0 for k in ("CHUNK", "ACCESS", "PSN_WINDOW"))
