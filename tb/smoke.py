"""Toolchain smoke design and its cocotb tests.

``SmokeAccumulator(width)`` is a tiny ``lib.wiring.Component``:

* ``sum``   (``width + 1`` bits) = ``a + b``, registered (one cycle latency);
* ``count`` (``width`` bits) counts cycles with ``en`` high, wraps, cleared by ``rst``.

The cocotb tests below drive it through the Verilator build made by
:mod:`metaroce.sim.verilator` (see ``tests/test_toolchain.py``).  The width is read back
from the port size, so the same tests work for every ``width`` parameter.
"""

import json
import os
import random

import cocotb
from amaranth.hdl import Elaboratable, Module, unsigned
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out
from cocotb.clock import Clock
from cocotb.triggers import FallingEdge, ReadOnly, RisingEdge


class SmokeAccumulator(wiring.Component):
    def __init__(self, width: int = 8):
        self.width = width
        super().__init__({
            "a": In(unsigned(width)),
            "b": In(unsigned(width)),
            "en": In(1),
            "sum": Out(unsigned(width + 1)),
            "count": Out(unsigned(width)),
        })

    def elaborate(self, platform) -> Elaboratable:
        m = Module()
        m.d.sync += self.sum.eq(self.a + self.b)
        with m.If(self.en):
            m.d.sync += self.count.eq(self.count + 1)
        return m


# --------------------------------------------------------------------------------------
# cocotb tests (run inside the simulator)


async def _start(dut) -> int:
    """Start the clock, reset for two cycles, return the data width."""
    Clock(dut.clk, 10, unit="ns").start()
    dut.a.value = 0
    dut.b.value = 0
    dut.en.value = 0
    dut.rst.value = 1
    for _ in range(2):
        await RisingEdge(dut.clk)
    await FallingEdge(dut.clk)
    dut.rst.value = 0
    return len(dut.a)


@cocotb.test()
async def smoke_adder(dut):
    """Registered sum equals a + b one clock later, incl. the carry-out bit."""
    width = await _start(dut)
    assert len(dut.sum) == width + 1
    mask = (1 << width) - 1
    vectors = [(mask, mask), (0, 0), (mask, 1), (1, mask)]
    # cocotb seeds `random` from COCOTB_RANDOM_SEED (printed in the log and results).
    vectors += [(random.randrange(mask + 1), random.randrange(mask + 1)) for _ in range(200)]
    for a, b in vectors:
        dut.a.value = a
        dut.b.value = b
        await RisingEdge(dut.clk)
        await ReadOnly()
        assert int(dut.sum.value) == a + b, f"{a:#x} + {b:#x}: got {int(dut.sum.value):#x}"
        await FallingEdge(dut.clk)
    if out := os.environ.get("METAROCE_SMOKE_OUT"):   # a JSON row, for vl.run_one's test
        with open(out, "w") as fh:
            json.dump({"vectors": len(vectors), "width": width}, fh)


@cocotb.test()
async def smoke_counter(dut):
    """count follows en, wraps at 2**width, and is cleared by the synchronous reset."""
    width = await _start(dut)
    await ReadOnly()
    assert int(dut.count.value) == 0
    await FallingEdge(dut.clk)
    expected = 0
    for _ in range(300):
        en = random.random() < 0.7
        dut.en.value = int(en)
        await RisingEdge(dut.clk)
        await ReadOnly()
        expected = (expected + en) % (1 << width)
        assert int(dut.count.value) == expected
        await FallingEdge(dut.clk)
    if width <= 8:  # run into the wrap-around
        dut.en.value = 1
        for _ in range(1 << width):
            await RisingEdge(dut.clk)
            expected = (expected + 1) % (1 << width)
        await ReadOnly()
        assert int(dut.count.value) == expected
        await FallingEdge(dut.clk)
    dut.rst.value = 1
    await RisingEdge(dut.clk)
    await ReadOnly()
    assert int(dut.count.value) == 0


@cocotb.test(skip=os.environ.get("METAROCE_SMOKE_EXPECT_FAIL") != "1")
async def smoke_must_fail(dut):
    """Deliberately wrong expectation; only runs with METAROCE_SMOKE_EXPECT_FAIL=1, to
    check that a failing cocotb test is reported as a failure by the runner wrapper."""
    await _start(dut)
    dut.a.value = 1
    dut.b.value = 1
    await RisingEdge(dut.clk)
    await ReadOnly()
    assert int(dut.sum.value) == 3, "expected failure: 1 + 1 is not 3"
