"""RX engine RTL (hdl/rx.py, the 256 x 4 instance) against its cycle model under Verilator,
every output compared every cycle (MR-RX-070, tb/rx.py), at 64 bits (512 bits behind ``slow``;
the Amaranth simulator runs 512 bits in the default run): the window, bad-input, SEND,
READ-response, burst and random cases with idle cycles and backpressure, then a same-path
burst taken at one record per cycle (MR-RX-043) and timed bursts with the delayed-ACK timer
on (MR-RX-090..094); the reference endpoint's traffic with WRITEs,
WRITE_IMMs, SENDs (receives posted late: RNR) and READs. One cached Verilator build per width.

Knobs: RX_RANDOM (random packets, default 400), RX_SEED.
"""
import json
import os

import pytest

from metaroce import blocks
from metaroce.sim import verilator as vl
from metaroce.tb import build as tb_build


@pytest.mark.parametrize("width", [64, pytest.param(512, marks=pytest.mark.slow)])
def test_rx_rtl_lockstep(width):
    b = tb_build.build(blocks.get("rx_256x4"), width)
    env = {"RX_RANDOM": os.environ.get("RX_RANDOM", "400"), "RX_SEED": os.environ.get("RX_SEED", str(width))}
    row = vl.run_one(b, "metaroce.tb.rx", "rx_lockstep", env, out_var="RX_OUT")
    print(json.dumps(row))                  # the figures, with -rP
    assert row["mismatches"] == 0 and row["packets_per_cycle"] == 1.0
    # MR-RX-100..105, MR-RX-110..113: the SEND and READ-response classes ran (two connections of each)
    outcomes = row["outcomes"]
    assert outcomes["RNR"] >= 6 and outcomes["RECV_BOUNDS"] >= 2 and outcomes["NO_READ"] >= 2
    assert row["completions"] >= 12
    assert row["atomics"] >= 30             # MR-RX-157: the atomic cases and random atomics, once each
    assert row["timer_acks_equal"]          # MR-RX-093/094: the delayed-ACK timer's ACKs


def _endpoint_traffic(width, seed, nbytes, sends, reads, streams, *, hostile=10, writes=10):
    """The reference endpoint's traffic (rc.endpoint_traffic with these figures, loss 0.05,
    reordering 0.2, duplication 0.05, WRITE_IMMs half the writes) through the RX under
    Verilator in lockstep with its model (idle cycles 0.2, backpressure 0.4, driver seed
    ``seed``), checked as below; returns the run's figures."""
    b = tb_build.build(blocks.get("rx_256x4"), width)
    env = {"RX_SEED": str(seed), "RX_TRAFFIC_BYTES": str(nbytes),
           "RX_TRAFFIC_LOSS": "0.05", "RX_TRAFFIC_REORDER": "0.2", "RX_TRAFFIC_DUP": "0.05",
           "RX_TRAFFIC_HOSTILE": str(hostile), "RX_TRAFFIC_WRITES": str(writes), "RX_TRAFFIC_IMM": "0.5",
           "RX_TRAFFIC_SENDS": str(sends), "RX_TRAFFIC_READS": str(reads),
           "RX_TRAFFIC_RECV_DELAY": "3e-5" if sends else "0", "RX_TRAFFIC_STREAMS": str(streams or "")}
    row = vl.run_one(b, "metaroce.tb.rx", "rx_endpoint_traffic", env, out_var="RX_TRAFFIC_OUT")
    print(json.dumps(row))                  # the figures, with -rP
    assert row["mismatches"] == 0 and row["acks_equal"] and row["memory_equal"] and row["completions_equal"]
    assert row["traffic"]["lost"] > 0 and row["traffic"]["duplicated"] > 0
    assert row["outcomes"]["ACCEPTED"] > 0
    if sends:
        assert row["traffic"]["sends"] >= 2 and row["outcomes"]["RNR"] == row["traffic"]["rnr_naks"] > 0
    if reads:
        assert row["traffic"]["reads"] >= 1 and row["completions"] >= row["traffic"]["reads"]
    return row


@pytest.mark.parametrize("width,seed,nbytes,sends,reads,streams", [
    (64, 65, 32768, 0.4, 0.3, None),
    pytest.param(64, 66, 49152, 0.0, 0.0, None, marks=pytest.mark.slow),
    pytest.param(64, 67, 49152, 0.5, 0.3, 1, marks=pytest.mark.slow),
    pytest.param(512, 513, 49152, 0.4, 0.3, None, marks=pytest.mark.slow),
])
def test_rx_rtl_endpoint_traffic(width, seed, nbytes, sends, reads, streams):
    """MR-RX-071, MR-RX-105, MR-RX-113: the reference endpoint's real traffic (a sender
    endpoint through the model fabric with loss, reordering and duplication on the data
    direction; WRITEs and WRITE_IMMs, SENDs and SEND_IMMs whose receives are posted late (RNR
    NAKs, resends) and reposted as they complete, READ responses to the receiver's READs) into
    the RTL under Verilator, in lockstep with the model under random idle cycles and
    backpressure, forged writes among the frames: zero mismatches, the RTL's memory image,
    ACK/NAK stream and completion records equal the receiving endpoint's."""
    row = _endpoint_traffic(width, seed, nbytes, sends, reads, streams)
    assert row["outcomes"]["DUPLICATE"] > 0
    assert row["traffic"]["naks"] > 0 and all(row["outcomes"][k] > 0 for k in ("CHUNK", "ACCESS", "PSN_WINDOW"))


def test_rx_rtl_send_traffic_at_64():
    """MR-RX-105, MR-RX-113: test_rx_amaranth.py's default test_rtl_on_send_traffic traffic
    (seed 1: 4,096 bytes, six writes, SENDs 0.4, READs 0.3, one stream, receives 30 us late, 12
    forged packets) at 64 bits under Verilator, the same driver seed: zero mismatches, and the
    RTL's ACK/NAK stream, memory image and completion records equal the receiving endpoint's.
    The Amaranth simulator runs this traffic at 128 bits, where its simulation is cheapest."""
    row = _endpoint_traffic(64, 1, 4096, 0.4, 0.3, 1, hostile=12, writes=6)
    assert row["outcomes"]["RNR"] > 0 and row["traffic"]["reads"] >= 1


@pytest.mark.slow
def test_rx_rtl_engine_interval():
    """MR-RX-321: the RX as the engine builds it (``rx_engine``: 2 connections x 4 paths, chunk
    window 32, the responder bound) at 64 bits, behind its frame interval 8 and without the
    forwards between entries (MR-RX-319/320), in lockstep with its model at interval 8 under
    idle cycles and backpressure, then back to back on one path (taken every 8 cycles), records
    of one path at distances 1 to 3 with path writes among them, slides and filled gaps, and
    the delayed-ACK timer: 0 mismatches (tb/rx.py ``rx_interval``). MR-RX-330: the serial
    hold's boundary runs (``serial_hold_cases``, SACKs sent as packets) in a batch of their own;
    MR-RX-335: with H5's clear taken from the rotator (MR-RX-333). MR-RX-339: with S4's ring
    lookups by the PSN's low bits (MR-RX-338). MR-RX-346: with the ring rotator in mux stages
    and the clear from a register of its output (MR-RX-342, MR-RX-343); MR-RX-349: S4's ring
    lookups made in S3 and registered (MR-RX-347); MR-RX-355: S5's READ-state verdict made in S4
    and registered (MR-RX-352); MR-RX-358: S4's window terms made in S3 and registered
    (MR-RX-356)."""
    b = tb_build.build(blocks.get("rx_engine"), 64)
    env = {"RX_INTERVAL": "8", "RX_SEED": os.environ.get("RX_SEED", "64"), "RX_RANDOM": os.environ.get("RX_RANDOM", "300")}
    row = vl.run_one(b, "metaroce.tb.rx", "rx_interval", env, out_var="RX_INTERVAL_OUT")
    print(json.dumps(row))                  # the figures, with -rP
    assert row["mismatches"] == 0 and row["interval"] == 8 and row["burst_spacing"] == [8]
    assert row["outcomes"]["ACCEPTED"] > 300 and row["timer_acks_equal"]
