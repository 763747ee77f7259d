"""The receiver's rate hint (hdl/rx_hint.py ``RxHint``) against its cycle model under Verilator,
every output compared every cycle (docs/spec/hw-engine.md section 5s, MR-ENG-357..360,
tb/rx_hint.py): the memory form at 16 connections (block ``rx_hint_mem``) in the default run,
with its negative control, the flip-flop form (``rx_hint``), the memory form at 4,096
connections (``rx_hint_4096``) and the flip-flop form's negative control behind ``slow``. One cached Verilator build a block. The Amaranth locksteps of
the same RTL are tests/test_rx_hint.py's.

Knobs: RH_N (cycles of the default run, 2,000), RH_SEED (3).
"""
import json
import os

import pytest

from metaroce.sim import verilator as vl
from metaroce.tb import build as tb_build
from metaroce.tb import rx_hint as tbh
from metaroce.tb.lockstep import Mismatch

MODULE, TEST = "metaroce.tb.rx_hint", "rx_hint_lockstep"


def _run(block, env, out_var="RH_OUT"):
    return tb_build.run_block_test(block, MODULE, TEST, env, out_var=out_var)


def _amaranth(block, env):
    """MR-ENG-359: the same run (tb/rx_hint.py ``case``) in the Amaranth simulator: the core,
    or the :class:`Mismatch` raised."""
    from metaroce import blocks
    from metaroce.tb.lockstep import run_amaranth
    model, drv = tbh.case(block, env)
    try:
        return run_amaranth(blocks.get(block).make_component(64), model, drv)
    except Mismatch as e:
        return e


def _wrong_run(block, wrong, tmp_path):
    """MR-ENG-359: the model's wrong form ``wrong`` against the right RTL of ``block``: the
    Verilator run fails, and its row names the cycle and signal of the same run's first mismatch
    in the Amaranth simulator."""
    out = tmp_path / f"{block}-{wrong}.json"
    env = {"RH_WRONG": wrong, "RH_N": "2000", "RH_SEED": "3", "RH_OUT": str(out)}
    with pytest.raises(vl.CocotbTestFailure):
        _run(block, env, out_var=None)
    row = json.loads(out.read_text())
    assert row["wrong"] == wrong
    e = _amaranth(block, env)
    assert isinstance(e, Mismatch), e
    assert (row["mismatch"]["cycle"], row["mismatch"]["signal"]) == (e.cycle, e.signal)
    return row


def test_rx_hint_mem_rtl_lockstep(tmp_path):
    """MR-ENG-357, MR-ENG-358: the memory form (block ``rx_hint_mem``, 16 connections) on
    ``BurstLoop`` (2,000 cycles: bursts of an arrival every cycle, the same connection back to
    back, which the row's forward serves, intervals ended under load, stale ones): 0
    mismatches, with back-to-back arrivals, rollovers, stale intervals, carried senders and
    at least 9 hints. MR-ENG-359, its negative control: the model without the forward
    (MR-ENG-352) fails under Verilator where it fails in the Amaranth simulator (also the
    default run's check that the Verilator lockstep catches a planted bug)."""
    row = _run("rx_hint_mem", {"RH_N": os.environ.get("RH_N", "2000"),
                               "RH_SEED": os.environ.get("RH_SEED", "3")})
    assert row["form"] == "memory" and row["conns"] == 16
    assert row["mismatches"] == 0 and row["taken"] > 600 and row["back_to_back"] > 150
    assert row["rollovers"] > 30 and row["stale"] >= 2 and row["carried"] > 40
    assert row["max_senders"] >= 12 and row["hints"] >= 9
    _wrong_run("rx_hint_mem", "forward", tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("loop", ["burst", "random"])
def test_rx_hint_rtl_lockstep_flops(loop):
    """MR-ENG-357, MR-ENG-358: the flip-flop form (block ``rx_hint``, the engine's 2
    connections) on ``BurstLoop`` and ``RandomLoop`` (3,000 cycles each): 0 mismatches, both
    senders counted, rollovers, stale intervals and carried senders."""
    row = _run("rx_hint", {"RH_LOOP": loop, "RH_N": "3000", "RH_SEED": "7"})
    assert row["form"] == "flops" and row["conns"] == 2
    assert row["mismatches"] == 0 and row["taken"] > 800 and row["max_senders"] == 2
    assert row["rollovers"] > 30 and row["stale"] >= 2 and row["carried"] > 10


@pytest.mark.slow
def test_rx_hint_4096_rtl_lockstep():
    """MR-ENG-360: the block ``rx_hint_4096`` (the memory form at 4,096 connections) on
    ``BurstLoop`` over 4,096 connections (3,000 cycles, the slow Amaranth lockstep's run):
    0 mismatches, more than 100 senders counted."""
    row = _run("rx_hint_4096", {"RH_N": "3000", "RH_SEED": "4", "RH_PHASE": "600"})
    assert row["form"] == "memory" and row["conns"] == 4096
    assert row["mismatches"] == 0 and row["back_to_back"] > 200 and row["max_senders"] > 100


@pytest.mark.slow
def test_rx_hint_rtl_wrong_model_fails_flops(tmp_path):
    """MR-ENG-359 (negative control of the flip-flop form's run): the model counting the
    current interval only (MR-ENG-336) against the right ``rx_hint`` fails under Verilator, at
    the cycle and on the signal of the same run's first mismatch in the Amaranth simulator."""
    _wrong_run("rx_hint", "count", tmp_path)


def test_rx_hint_tb_case():
    """MR-ENG-357 (the model alone: no simulator): the testbench's run takes the block's
    connections and form from its registered model, the wrong form from ``RH_WRONG``; an
    unknown loop is refused. MR-ENG-362: the blocks placed and routed are these, at 64 bits,
    each placed as itself (no smaller ECP5 instance)."""
    for block, conns, form in (("rx_hint", 2, "flops"), ("rx_hint_mem", 16, "memory"),
                               ("rx_hint_4096", 4096, "memory")):
        model, drv = tbh.case(block, {})
        assert (model.m.conns, model.m.form, model.m.wrong, drv.conns) == (conns, form, None, conns)
    model, _ = tbh.case("rx_hint_mem", {"RH_WRONG": "forward"})
    assert model.m.wrong == "forward"
    with pytest.raises(ValueError):
        tbh.case("rx_hint", {"RH_LOOP": "trace"})
    from metaroce import blocks
    for name in ("rx_hint", "rx_hint_mem", "rx_hint_4096"):
        blk = blocks.get(name)
        assert blk.widths == (64,) and blk.pnr_instance is None and blk.tb == MODULE
