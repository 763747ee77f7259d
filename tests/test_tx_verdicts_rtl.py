"""The block ``tx_verdicts`` (``Tx(verdicts=True)``, docs/spec/hw-tx.md section 2.11) against
``TxCycleModel(verdicts=True)`` under Verilator (tb/tx.py ``tx_verdicts``), every output
compared every cycle, with idle cycles, backpressure on every output and random AXI latency
(MR-TX-269..272). One cached Verilator build of the block (tens of minutes on a loaded
machine): every test here is behind ``slow``."""

import pytest

from metaroce import blocks
from metaroce.models import protocol as P
from metaroce.models.tx import SMALL
from metaroce.sim import verilator as vl
from metaroce.tb import build as tb_build


def run(kind, restores=True):
    b = tb_build.build(blocks.get("tx_verdicts"), 64)
    env = {"TX_VERDICTS_RUN": kind, "TX_RESTORES": "1" if restores else "0"}
    row = vl.run_one(b, "metaroce.tb.tx", "tx_verdicts", env, out_var="TX_OUT")
    print(row)
    return row


# MR-TX-354: the register scheduler with its kept record (MR-TX-351) in the join
@pytest.mark.slow
def test_tx_verdicts_rtl_down_path():
    """MR-TX-270, MR-TX-304: the down-path run on the block's instance (the share-out built):
    0 mismatches, every work request completed; path 1 made SUSPECT by its timeouts (with the
    unit's health bits of other paths) and restored (its window the share again);
    at the end every path active in the windows, W the sum of the windows and the scheduler's
    windows the block's."""
    row = run("down")
    assert row["mismatches"] == 0 and row["completions"] == row["work_requests"] == 10
    assert [0, 1, P.PATH_SUSPECT] in row["verdicts"] and [0, 1] in row["restores"]
    # MR-TX-304: the block builds the share-out: the SUSPECT carried the unit's health bits
    k = row["verdicts"].index([0, 1, P.PATH_SUSPECT])
    assert row["healthy"][k] and not row["healthy"][k] & 0b10
    assert row["active"][0] == [1] * SMALL["paths"]
    assert row["wsum"][0] == sum(row["windows"][0])
    assert row["sched_windows"][:SMALL["paths"]] == row["windows"][0]


@pytest.mark.slow
def test_tx_verdicts_rtl_down_path_without_restores_fails():
    """MR-TX-271 (negative control): the same run against the model without the restores
    (``TxCycleModel(verdicts=True, restores=False)``): a mismatch."""
    row = run("down", restores=False)
    assert row["mismatches"] > 0 and row["first_mismatch"] > 500


# MR-TX-354: the register scheduler with its kept record (MR-TX-351) in the join
@pytest.mark.slow
def test_tx_verdicts_rtl_random():
    """MR-TX-272: MR-TX-262's random lossy run with ``cc_on`` on the block: 0 mismatches, the
    checker passes, verdicts reached the windows."""
    row = run("random")
    assert row["mismatches"] == 0 and row["completions"] == row["work_requests"]
    assert row["verdicts"]
