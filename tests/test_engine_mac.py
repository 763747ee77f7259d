"""The receive half with the MAC clock (MR-ENG-106): ``s_axis`` in its own clock domain, the
beats crossed to the core clock in an ``AsyncFIFO``, the parser dropping whole frames that do not
fit. Two clocks in the Amaranth simulator (the lockstep models are single-clock): frames that
are not RoCE arrive back to back at the MAC clock while ``m_bypass`` is mostly stalled, so the
parser's store fills; the MAC is never back-pressured, the frames that come out are whole and
in order, and the frames missing are exactly the parser's overflow count (MR-HW-082).
"""
import random

import pytest
from amaranth.hdl import ClockDomain, Module
from amaranth.sim import Simulator

from metaroce.hdl.engine import EngineRx
from metaroce.models import engine_cases as ec
from metaroce.models.parser import OVERFLOW_COUNTER
from metaroce.models.regs import PARSER_CTR_BASE
from metaroce.models.wire import Reason

WIDTH = 64


def test_mac_clock_parameters():
    """MR-ENG-100, MR-ENG-106: the crossing's parameters are checked."""
    for kw in ({"mac_clock": 1}, {"mac_clock": True, "mac_fifo_depth": 6},
               {"mac_clock": True, "mac_fifo_depth": 2}):
        with pytest.raises(ValueError):
            EngineRx(WIDTH, conns=256, paths=4, keys=256, **kw)


@pytest.mark.parametrize("mac_period,core_period", [
    (6.4e-9, 4e-9), pytest.param(5e-9, 5e-9, marks=pytest.mark.slow)])
def test_mac_clock_drop_on_full(mac_period, core_period):
    """MR-ENG-106: with the core clock at least as fast as the MAC clock, ``s_axis.tready``
    stays high through a burst of frames whose output is stalled 90 % of the cycles; the
    frames that leave on ``m_bypass`` are an in-order subsequence of the input, byte-exact, and
    the parser counts every missing one as an overflow drop and every one that left as
    bypassed (MR-HW-060, MR-HW-082), both read through AXI4-Lite (MR-ENG-105, MR-REG-033)."""
    rng = random.Random(int(mac_period * 1e12))
    frames = ec.bypass_frames(rng, 60)
    nb = WIDTH // 8
    dut = EngineRx(WIDTH, conns=256, paths=4, keys=256, max_frame=256, outstanding=8, mac_clock=True)
    m = Module()
    m.domains.sync = ClockDomain()
    m.domains.mac = ClockDomain()
    m.submodules.dut = dut
    got, cur = [], bytearray()
    state = {"sent": False, "tready_low": 0, "counters": {}}

    async def mac(ctx):
        for _ in range(8):
            await ctx.tick("mac")
        for f in frames:
            n = -(-len(f) // nb)
            for j in range(n):
                chunk = f[j * nb:(j + 1) * nb]
                ctx.set(dut.s_axis.tvalid, 1)
                ctx.set(dut.s_axis.tdata, int.from_bytes(chunk, "little"))
                ctx.set(dut.s_axis.tkeep, (1 << len(chunk)) - 1)
                ctx.set(dut.s_axis.tlast, int(j == n - 1))
                state["tready_low"] += not ctx.get(dut.s_axis.tready)
                await ctx.tick("mac")
        ctx.set(dut.s_axis.tvalid, 0)
        state["sent"] = True

    async def core(ctx):
        nonlocal cur
        ctx.set(dut.m_ack.ready, 1)
        ctx.set(dut.m_done.ready, 1)
        ctx.set(dut.m_cqe.ready, 1)
        quiet = 0
        while quiet < 400:
            ready = int(rng.random() < 0.1) if not state["sent"] else 1
            ctx.set(dut.m_bypass.tready, ready)
            if ctx.get(dut.m_bypass.tvalid) and ready:
                keep = ctx.get(dut.m_bypass.tkeep)
                cur += ctx.get(dut.m_bypass.tdata).to_bytes(nb, "little")[:keep.bit_length()]
                if ctx.get(dut.m_bypass.tlast):
                    got.append(bytes(cur))
                    cur = bytearray()
                quiet = 0
            elif state["sent"]:
                quiet += 1
            await ctx.tick()
        # MR-ENG-105, MR-REG-033: the parser's counters through AXI4-Lite, LO then HI
        bus = dut.s_axil
        for addr in (int(Reason.NOT_ROCE), OVERFLOW_COUNTER):
            halves = []
            for off in (0, 4):
                ctx.set(bus.araddr, PARSER_CTR_BASE + 8 * addr + off)
                ctx.set(bus.arvalid, 1)
                ctx.set(bus.rready, 1)
                while not ctx.get(bus.arready):
                    await ctx.tick()
                await ctx.tick()
                ctx.set(bus.arvalid, 0)
                while not ctx.get(bus.rvalid):
                    await ctx.tick()
                assert ctx.get(bus.rresp) == 0
                halves.append(ctx.get(bus.rdata))
                await ctx.tick()
            state["counters"][addr] = halves[1] << 32 | halves[0]

    sim = Simulator(m)
    sim.add_clock(core_period)
    sim.add_clock(mac_period, domain="mac")
    sim.add_testbench(mac)
    sim.add_testbench(core)
    sim.run()
    assert state["tready_low"] == 0, "the MAC was back-pressured"
    it = iter(frames)
    assert all(any(g == f for f in it) for g in got), "a frame out is not an input frame in order"
    dropped = len(frames) - len(got)
    assert dropped > 0 and len(got) > 0
    assert state["counters"] == {int(Reason.NOT_ROCE): len(got), OVERFLOW_COUNTER: dropped}
