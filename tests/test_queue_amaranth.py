"""``hdl/queue.py``'s SyncQueue against ``lib.fifo.SyncFIFO``, cycle for cycle (MR-HW-083..086)."""
import random

import pytest
from amaranth.hdl import Module
from amaranth.lib import fifo
from amaranth.sim import Simulator

from metaroce.hdl.queue import SyncQueue

# (width, depth): the engine's shapes in small (16 and 64 deep, 29 not a power of two) and the
# edges (1 and 2 deep)
SHAPES = [(8, 16), (5, 29), (6, 64), (3, 1), (4, 2), (7, 4)]


def _first_mismatch(width, depth, seed, cycles=600, late=False):
    """Drive a SyncFIFO and a SyncQueue with the same random ``w_en``/``w_data``/``r_en`` (their
    rates drawn anew every 50 cycles, so the queues fill and drain) and compare every output
    every cycle, ``r_data`` while empty too; returns the first difference or None."""
    m = Module()
    m.submodules.ref = ref = fifo.SyncFIFO(width=width, depth=depth)
    m.submodules.dut = dut = SyncQueue(width=width, depth=depth, late=late)
    rng = random.Random(seed)
    outs = ("w_rdy", "r_rdy", "r_data", "level", "w_level", "r_level")
    found = []

    async def bench(ctx):
        p_w = p_r = 0.5
        for cyc in range(cycles):
            if cyc % 50 == 0:
                p_w, p_r = rng.choice([0.1, 0.5, 0.9, 1.0]), rng.choice([0.0, 0.1, 0.5, 0.9, 1.0])
            w_en, r_en, w_data = rng.random() < p_w, rng.random() < p_r, rng.getrandbits(width)
            for q in (ref, dut):
                ctx.set(q.w_en, w_en)
                ctx.set(q.r_en, r_en)
                ctx.set(q.w_data, w_data)
            for name in outs:
                a, b = ctx.get(getattr(ref, name)), ctx.get(getattr(dut, name))
                if a != b:
                    found.append((cyc, name, a, b))
                    return
            await ctx.tick()

    sim = Simulator(m)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    return found[0] if found else None


@pytest.mark.parametrize("width,depth", SHAPES)
def test_sync_queue_same_cycles_as_sync_fifo(width, depth):
    """MR-HW-083, MR-HW-084: SyncQueue's outputs equal SyncFIFO's every cycle (``r_data`` while
    empty too), random writes and reads, full and empty reached."""
    for seed in range(2):
        assert _first_mismatch(width, depth, seed) is None, (width, depth, seed)


@pytest.mark.parametrize("width,depth", [(8, 16), (5, 29), (4, 2)])
def test_sync_queue_without_transparency_fails(width, depth):
    """MR-HW-085 (negative control): the read port not transparent to the write, a word written
    into an empty queue shows a cycle late and the comparison fails on ``r_data``."""
    diff = _first_mismatch(width, depth, 0, late=True)
    assert diff is not None and diff[1] == "r_data", diff

