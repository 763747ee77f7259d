"""The block ``tx_rows`` (``Tx(rows=True)``, docs/spec/hw-tx.md section 2.14) against
``TxCycleModel(rows=True)`` under Verilator (tb/tx.py ``tx_lockstep`` with ``TX_ROWS=1``),
every output compared every cycle (MR-TX-325). One cached Verilator build of the block (tens
of minutes on a loaded machine): behind ``slow``."""
import os

import pytest

from metaroce import blocks
from metaroce.sim import verilator as vl
from metaroce.tb import build as tb_build


@pytest.mark.slow
def test_tx_rows_rtl_lockstep():
    """MR-TX-325: tb/tx.py's random run (40 work requests with bad ones, 10 READ responses,
    15 % loss, idle cycles, backpressure on every output, AXI latency) on ``tx_rows``: 0
    mismatches, every work request completes, resends, READ responses done, atomics' frames."""
    b = tb_build.build(blocks.get("tx_rows"), 64)
    env = {"TX_ROWS": "1", "TX_WRS": os.environ.get("TX_WRS", "40"),
           "TX_RSPS": os.environ.get("TX_RSPS", "10"), "TX_SEED": os.environ.get("TX_SEED", "1"),
           "TX_MAXLEN": os.environ.get("TX_MAXLEN", "2500")}
    row = vl.run_one(b, "metaroce.tb.tx", "tx_lockstep", env, out_var="TX_OUT")
    print(row)
    assert row["mismatches"] == 0 and row["completions"] == row["work_requests"]
    assert row["retransmits"] and row["lost"]
    assert row["rsp_done"] == row["responses"] > 0
    assert row["atomic_frames"] > 0
