"""cocotb testbench of the placement DMA (hdl/dma_write.py) against its cycle model
(models/dma_write.py), under Verilator (MR-DMA-050).

The block's one verification stack: cases, driver, host memory and checker are
:mod:`metaroce.models.dma_write_cases` (shared with the Amaranth-simulator tests), the comparison
is the lockstep core of :mod:`metaroce.tb.lockstep`.

cocotb tests here:

``dma_lockstep``
    :func:`~metaroce.tb.lockstep.drive` with ``registered_outputs`` (every output a flip-flop
    or a function of flip-flops, checked): the directed cases, then ``DMA_RANDOM`` random
    commands (seed ``DMA_SEED``) with idle cycles, backpressure on AW, W and m_done, B latency
    1..300 cycles and error responses, each followed by the checker; then back-to-back
    commands of ``DMA_STREAM`` sizes with the bus always ready and 200 cycles of B latency,
    whose write beats must go at one per cycle. Results to ``DMA_OUT`` (JSON) if set.
``dma_axiram``
    the host memory is cocotbext-axi's ``AxiRamWrite`` (the write half of ``AxiRam``; random
    pauses on its AW, W and B channels),
    the lockstep samples every port in ``ReadOnly`` and the driver's memory only watches; the
    end check adds its memory against the expected image.

Instance: the registered block (4,096 connections, 256-beat bursts, 256 outstanding).
"""
from __future__ import annotations


import cocotb

from metaroce.models import dma_write_cases as dc
from metaroce.models.dma_write import DmaWriteCycleModel

from .dma_common import axiram_run, bench_sweep, lockstep_runs
from .lockstep import Lockstep, model_port_lists
from .streams import SEP

CONNS = 4096


def _width(dut):
    return len(dut.m_axi__wdata)


async def _harness(dut, **kw):
    model = DmaWriteCycleModel(_width(dut), CONNS)
    ins, outs = model_port_lists(model)
    h = Lockstep(dut, model, ins, outs, **kw)
    return model, ins, outs, h


@cocotb.test()
async def dma_lockstep(dut):
    model, _, _, h = await _harness(dut)

    def row(cmds, drv):
        w, aw = drv.res["w_cycles"], drv.res["aw_cycles"]
        return {"w_beats_per_cycle": round(len(w) / (w[-1] - w[0] + 1), 4),
                "commands_per_cycle": round(len(cmds) / (drv.res["done_cycles"][-1] - aw[0] + 1), 4)}

    await lockstep_runs(dut, h, model, dc, width=_width(dut), conns=CONNS, prefix="DMA",
                        random_kw={"p_idle": 0.3, "p_bp": 0.4, "p_axi": 0.4}, row=row,
                        line_beats=lambda drv: drv.res["w_cycles"])


@cocotb.test()
async def dma_axiram(dut):
    from cocotbext.axi import AxiWriteBus
    from cocotbext.axi.axi_ram import AxiRamWrite
    ram, lay, cmds, drv = await axiram_run(
        dut, _harness, dc, width=_width(dut), conns=CONNS, prefix="DMA",
        ram=lambda: AxiRamWrite(AxiWriteBus.from_prefix(dut, "m_axi", bus_separator=SEP), dut.clk,
                                dut.rst, size=1 << 48),
        channels=lambda ram: (ram.aw_channel, ram.w_channel, ram.b_channel),
        quiet=("s_place__valid", "s_data__valid", "m_done__ready"), image=lambda drv: drv.mem.initial)
    want = dc.expected_image(lay, drv.mem.initial, cmds)
    assert bytes(ram.read(lay.base, lay.size)) == want, "AxiRamWrite's memory differs from the model's"


@cocotb.test()
async def dma_bench(dut):
    """``metaroce bench dma_write``: :func:`~metaroce.tb.dma_common.bench_sweep` with a fixed B
    latency per run (``DMA_BENCH_*``)."""
    model, _, _, h = await _harness(dut)

    def row(lat, n, size, drv):
        w, done, taken = drv.res["w_cycles"], drv.res["done_cycles"], drv.res["place_taken"]
        return {"b_latency": lat, "commands": n,
                "w_beats_per_cycle": round(len(w) / (w[-1] - w[0] + 1), 4),
                "commands_per_cycle": round(n / (done[-1] - done[0] + 1), 4),
                "payload_bytes_per_cycle": round(n * size / (w[-1] - w[0] + 1), 2),
                "done_latency_cycles": min(d - t for d, t in zip(done, taken))}

    await bench_sweep(dut, h, model, dc, width=_width(dut), conns=CONNS, prefix="DMA_BENCH", row=row)
