"""The frame interval and its gate (docs/spec/hw-engine.md MR-ENG-299/300): the model's gate and
the RTL's, cycle for cycle, and the engine's default."""
import random

import pytest
from amaranth.hdl import ClockDomain, Module, Signal
from amaranth.sim import Simulator

from metaroce.hdl.queue import interval_ready
from metaroce.models import records as R


def test_frame_interval_values():
    """MR-ENG-299: 60 bytes in beats of the width, at least one cycle."""
    assert [R.frame_interval(w) for w in (8, 32, 64, 128, 256, 512, 1024)] == [60, 15, 8, 4, 2, 1, 1]


def test_interval_of_defaults_to_the_width():
    """MR-ENG-300: the engine's interval is the one given, else the width's."""
    assert [R.interval_of(w) for w in (64, 512)] == [8, 1]
    assert [R.interval_of(64, n) for n in (1, 3)] == [1, 3]


def test_interval_gate_model_shuts_after_a_take():
    """MR-ENG-299: after a take in cycle t the gate is shut in t+1 .. t+N-1, open at t+N."""
    gate = R.IntervalGate(4)
    seen = []
    for cycle in range(10):
        seen.append(gate.open)
        gate.step(gate.open and cycle in (0, 2, 5, 6))
    # taken at 0 (shut 1..3); 2 is refused; taken at 5 (shut 6..8); open again at 9
    assert seen == [True, False, False, False, True, True, False, False, False, True]
    shut = R.IntervalGate(3)
    shut.step(True)
    with pytest.raises(AssertionError):
        shut.step(True)


@pytest.mark.parametrize("interval", [1, 2, 3, 8])
def test_interval_ready_rtl_equals_model(interval):
    """MR-ENG-299: ``hdl.queue.interval_ready`` and ``records.IntervalGate`` give the same gate
    every cycle under random offers (an input that offers a record half of the cycles)."""
    m = Module()
    m.domains.sync = ClockDomain()      # the gate of interval 1 has no register of its own
    valid = Signal()
    took = Signal()
    ready = interval_ready(m, interval, took)
    m.d.comb += took.eq(valid & ready)
    rng = random.Random(interval)
    offers = [rng.random() < 0.5 for _ in range(400)]
    gate = R.IntervalGate(interval)
    counts = {"taken": 0}

    async def bench(ctx):
        for offer in offers:
            ctx.set(valid, offer)
            assert bool(ctx.get(ready)) == gate.open
            taken = offer and gate.open
            assert bool(ctx.get(took)) == taken
            counts["taken"] += taken
            gate.step(taken)
            await ctx.tick()

    sim = Simulator(m)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    # the gate bites: at interval N no more than ceil(400 / N) takes
    assert 0 < counts["taken"] <= -(-400 // interval)


def test_engine_takes_the_width_interval():
    """MR-ENG-300: Engine and EngineModel default to the width's interval and hand it to the
    RX, the retransmit unit and the register scheduler; with the row scheduler or pacing the TX
    half keeps 1; an explicit interval is kept."""
    from metaroce.hdl.engine import Engine
    from metaroce.models.engine import EngineModel
    for eng in (Engine(64), EngineModel(64)):
        assert eng.interval == 8
        rx = eng.rx_half.rx if isinstance(eng, Engine) else eng.rx.rx
        assert rx.interval == eng.tx.interval == eng.tx.sched.interval == eng.tx.rtx.interval == 8
    for eng in (Engine(64, rows=True), EngineModel(64, rows=True)):
        rx = eng.rx_half.rx if isinstance(eng, Engine) else eng.rx.rx
        assert rx.interval == 8 and eng.tx.interval == eng.tx.rtx.interval == 1
    assert Engine(64, interval=1).interval == EngineModel(64, interval=1).interval == 1
    assert Engine(512).interval == EngineModel(512).interval == 1
