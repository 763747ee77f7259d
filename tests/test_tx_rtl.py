"""The joined TX engine's RTL (hdl/tx.py, the small instance) against its cycle model under
Verilator, every output compared every cycle (MR-TX-150, tb/tx.py): random work requests with
bad ones, template writes, lost frames and their resends (SACK gaps, tail probes and timeouts), idle cycles,
backpressure on every output, random AXI read latency; then the checker. One cached Verilator
build per width. Behind ``slow`` (the scheduler alone builds in tens of minutes on a loaded
machine); the Amaranth lockstep of the data path is in the default run.

Knobs: TX_WRS (work requests, default 40), TX_RSPS (READ responses, default 10), TX_SEED,
TX_MAXLEN.
"""
import os

import pytest

from metaroce import blocks
from metaroce.sim import verilator as vl
from metaroce.tb import build as tb_build


@pytest.mark.slow
@pytest.mark.parametrize("width", [64, 512])
def test_tx_rtl_lockstep(width):
    """MR-TX-150 under Verilator (tb/tx.py ``tx_lockstep``): 0 mismatches, every work request
    completed, resends, losses, READ responses, atomic frames and tail probes (MR-TX-179) in the
    run; MR-TX-485: seed 15 at 512 bits, where seed 1 has no probe."""
    # seed 1 at 64 bits, 15 at 512 (resends, timeouts, tail probes, atomics at each): with the
    # health ages (MR-TX-203) a probe needs another path's progress within 4 srtt of its
    # expiry; at 512 bits seed 1's traffic and ACKs are all over before the driver's clock
    # jump, so no path is healthy at any expiry and every one is a timeout (rot45)
    b = tb_build.build(blocks.get("tx"), width)
    seed = os.environ.get("TX_SEED", {64: "1", 512: "15"}[width])
    env = {"TX_WRS": os.environ.get("TX_WRS", "40"), "TX_RSPS": os.environ.get("TX_RSPS", "10"), "TX_SEED": seed,
           "TX_MAXLEN": os.environ.get("TX_MAXLEN", "2500")}
    row = vl.run_one(b, "metaroce.tb.tx", "tx_lockstep", env, out_var="TX_OUT")
    assert row["mismatches"] == 0 and row["completions"] == row["work_requests"]
    assert row["retransmits"] and row["lost"]
    assert row["rsp_done"] == row["responses"] > 0           # MR-TX-171
    assert row["atomic_frames"] > 0                          # MR-TX-194
    assert row["probes"] > 0                                 # MR-TX-179: tail probes
    print(row)


@pytest.mark.slow
def test_tx_rtl_late_read_error():
    """MR-TXS-412, MR-TX-451, MR-TX-452 under Verilator (tb/tx.py ``tx_late_fail``): a read
    error reported after its message completed and its slot was taken again, ignored by its
    lap in the RTL as in the model: 0 mismatches, every work request completes with its own
    status (the checker)."""
    b = tb_build.build(blocks.get("tx"), 64)
    row = vl.run_one(b, "metaroce.tb.tx", "tx_late_fail", out_var="TX_OUT")
    assert row["mismatches"] == 0 and row["completions"] == row["work_requests"]
    assert row["late"] > 0 and row["probes"] > 0
    print(row)


@pytest.mark.slow
def test_tx_rtl_cc_lockstep():
    """MR-TX-107 under Verilator (tb/tx.py ``tx_cc``): the windows set up, one path's ACKs
    echoing CE: 0 mismatches, that path's window at its floor in the scheduler and the block."""
    b = tb_build.build(blocks.get("tx"), 64)
    row = vl.run_one(b, "metaroce.tb.tx", "tx_cc", out_var="TX_OUT")
    assert row["mismatches"] == 0 and row["completions"] == row["work_requests"]


@pytest.mark.slow
def test_tx_rtl_interval_lockstep():
    """MR-TX-455, MR-TX-456, MR-TXS-417/419 under Verilator: the TX's small instance at the frame
    interval of 64 bits (the block ``tx_interval``: its retransmit unit takes an event every 4
    cycles at most, no forwards; its scheduler's window writes behind the gate) against
    ``TxCycleModel(interval=8)``: tb/tx.py's ``tx_lockstep`` (random traffic, losses, probes,
    backpressure) and ``tx_cc`` (the Cwnd block's updates through the gated s_cwnd, one path's
    window cut to its floor): 0 mismatches each, every work request completed, resends and tail
    probes among them."""
    b = tb_build.build(blocks.get("tx_interval"), 64)
    env = {"TX_WRS": os.environ.get("TX_WRS", "40"), "TX_RSPS": os.environ.get("TX_RSPS", "10"),
           "TX_SEED": os.environ.get("TX_SEED", "1"), "TX_MAXLEN": os.environ.get("TX_MAXLEN", "2500"),
           "TX_INTERVAL": "8"}
    row = vl.run_one(b, "metaroce.tb.tx", "tx_lockstep", env, out_var="TX_OUT")
    print(row)
    assert row["mismatches"] == 0 and row["completions"] == row["work_requests"]
    assert row["retransmits"] and row["lost"] and row["probes"] > 0
    row = vl.run_one(b, "metaroce.tb.tx", "tx_cc", {"TX_INTERVAL": "8"}, out_var="TX_OUT")
    print(row)
    assert row["mismatches"] == 0 and row["completions"] == row["work_requests"]


@pytest.mark.slow
@pytest.mark.parametrize("block,seed", [("tx", 1), ("tx_rows", 2)])
def test_tx_rtl_lockstep_psn_wrap(block, seed):
    """MR-TX-475, MR-TX-476, MR-TX-469..472 under Verilator (tb/tx.py ``tx_lockstep`` with
    ``TX_INIT_PSN=wrap``): every path's initial PSN 1..5 below 2^24 written on ``s_psn``, random
    work requests and READ responses, 15 % loss, idle cycles and backpressure: 0 mismatches,
    every work request completed (the checker: each path's PSNs from its initial PSN), frames
    and resends past the wrap on all 8 paths, the write per connection after the first frame
    ignored (``psn_ignored``, compared every cycle) twice. MR-TX-502: the block ``tx_rows``
    (``Tx(rows=True)``, ``TX_ROWS=1``) likewise (seed 2: test_tx_amaranth's
    ``test_model_psn_wrap[True-2]``)."""
    b = tb_build.build(blocks.get(block), 64)
    env = {"TX_WRS": "40", "TX_RSPS": "10", "TX_SEED": str(seed), "TX_MAXLEN": "2500",
           "TX_INIT_PSN": "wrap", "TX_ROWS": "1" if block == "tx_rows" else "0"}
    row = vl.run_one(b, "metaroce.tb.tx", "tx_lockstep", env, out_var="TX_OUT")
    print(row)
    assert row["mismatches"] == 0 and row["completions"] == row["work_requests"]
    assert row["wrap_paths"] == 8 and row["wrap_resends"] > 0 and row["psn_ignored"] == 2
