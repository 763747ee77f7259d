"""The engine's receive half (hdl/engine.py, the 256 x 4 instance) against its composed model
under Verilator (tb/engine.py), on the reference endpoint's real traffic (MR-ENG-110): every
output compared every cycle, random ready on every output, random B latency; the host memory
and the ACK/NAK stream equal the receiving endpoint's, byte for byte. One cached Verilator build
per width; 64 bits in the default run, 512 bits behind ``slow``.
"""

import pytest

from metaroce import blocks
from metaroce.sim import verilator as vl
from metaroce.tb import build as tb_build


def _run(width, **env):
    b = tb_build.build(blocks.get("engine_rx_256x4"), width)
    return vl.run_one(b, "metaroce.tb.engine", "engine_endpoint_traffic", env, out_var="ENGINE_OUT")


def _check(row):
    assert row["mismatches"] == 0 and row["acks_equal"] and row["memory_equal"]
    assert row["traffic"]["lost"] > 0 and row["traffic"]["duplicated"] > 0
    assert row["outcomes"]["ACCEPTED"] > 0 and row["outcomes"]["DUPLICATE"] > 0
    assert all(row["outcomes"][k] > 0 for k in ("ACCESS", "PSN_WINDOW", "CHUNK"))
    assert row["line_rate_beats"] == row["line_rate_cycles"] > 0


def test_engine_rtl_endpoint_traffic():
    """MR-ENG-110, MR-ENG-112: 64 bits, 16 KiB through 5 % loss, 20 % reordering, 5 %
    duplication, 10 forged writes, 30 % backpressure, B latency up to 40 cycles; then a
    same-path burst at one MAC beat per cycle. The joined blocks (MR-ENG-102), every output
    registered (MR-ENG-103, checked by the lockstep loop), setup and counters through
    AXI4-Lite only (MR-ENG-105). For chapter 5: the receive side's per-packet steps run in the
    RTL on on-chip state (MR-ENG-001) and the host's slow path (rows written through the
    registers before the traffic) is never between a packet and its ACK (MR-ENG-002), its blocks connected as MR-ENG-005 draws them, joined by
    valid/ready streams and taking back-to-back packets of one path without a stall
    (MR-ENG-009)."""
    _check(_run(64, ENGINE_SEED="3", ENGINE_BYTES="16384"))


@pytest.mark.slow
@pytest.mark.parametrize("width,bp,latency", [(512, "0.5", "300"), (64, "0.6", "300")])
def test_engine_rtl_endpoint_traffic_slow(width, bp, latency):
    """MR-ENG-110 at 512 bits and under heavy backpressure and long B latency."""
    _check(_run(width, ENGINE_SEED=str(width + 7), ENGINE_BYTES="49152", ENGINE_BP=bp,
                ENGINE_LATENCY=latency, ENGINE_LOSS="0.08"))
