"""cocotb testbench of the payload DMA (hdl/dma_read.py) against its cycle model
(models/dma_read.py), under Verilator (MR-DMR-050).

The block's one verification stack: cases, driver, host memory and checker are
:mod:`metaroce.models.dma_read_cases` (shared with the Amaranth-simulator tests), the comparison
is the lockstep core of :mod:`metaroce.tb.lockstep`.

cocotb tests here:

``dmr_lockstep``
    :func:`~metaroce.tb.lockstep.drive` with ``registered_outputs``: the directed cases, then
    ``DMR_RANDOM`` random commands (seed ``DMR_SEED``) with idle cycles, backpressure on AR,
    ``m_data`` and ``m_done``, R latency 1..300 cycles with random R gaps, error responses,
    wrong ``rid``/``rlast``, each followed by the checker; then back-to-back commands of
    ``DMR_STREAM`` sizes with the bus always ready and 200 cycles of R latency, whose R beats
    must come at one per cycle. Results to ``DMR_OUT`` (JSON) if set.
``dmr_axiram``
    the host memory is cocotbext-axi's ``AxiRamRead`` (random pauses on its AR and R
    channels); the driver's memory only watches and the checker compares the payload with the
    same image.
``dmr_bench``
    ``metaroce bench dma_read``.

Instance: the registered block (4,096 connections, 256-beat bursts, 256 commands outstanding).
"""
from __future__ import annotations


import cocotb

from metaroce.models import dma_read_cases as dc
from metaroce.models.dma_read import DmaReadCycleModel

from .dma_common import axiram_run, bench_sweep, lockstep_runs
from .lockstep import Lockstep, model_port_lists
from .streams import SEP

CONNS = 4096


def _width(dut):
    return len(dut.m_axi__rdata)


async def _harness(dut, **kw):
    model = DmaReadCycleModel(_width(dut), CONNS)
    ins, outs = model_port_lists(model)
    h = Lockstep(dut, model, ins, outs, **kw)
    return model, ins, outs, h


@cocotb.test()
async def dmr_lockstep(dut):
    model, _, _, h = await _harness(dut)

    def row(cmds, drv):
        r, b = drv.mem.r_cycles, drv.res["beat_cycles"]
        return {"r_beats_per_cycle": round(len(r) / (r[-1] - r[0] + 1), 4) if r else None,
                "out_beats_per_cycle": round(len(b) / (b[-1] - b[0] + 1), 4) if b else None}

    await lockstep_runs(dut, h, model, dc, width=_width(dut), conns=CONNS, prefix="DMR",
                        random_kw={"p_idle": 0.3, "p_bp": 0.4, "p_axi": 0.4, "noise": True},
                        row=row, line_beats=lambda drv: drv.mem.r_cycles)


@cocotb.test()
async def dmr_axiram(dut):
    from cocotbext.axi import AxiReadBus
    from cocotbext.axi.axi_ram import AxiRamRead
    await axiram_run(
        dut, _harness, dc, width=_width(dut), conns=CONNS, prefix="DMR",
        ram=lambda: AxiRamRead(AxiReadBus.from_prefix(dut, "m_axi", bus_separator=SEP), dut.clk,
                               dut.rst, size=1 << 48),
        channels=lambda ram: (ram.ar_channel, ram.r_channel),
        quiet=("s_cmd__valid", "m_data__ready", "m_done__ready"), image=lambda drv: drv.mem.image)


@cocotb.test()
async def dmr_bench(dut):
    """``metaroce bench dma_read``: :func:`~metaroce.tb.dma_common.bench_sweep` with a fixed R
    latency per run (``DMR_BENCH_*``)."""
    model, _, _, h = await _harness(dut)

    def row(lat, n, size, drv):
        r, res = drv.mem.r_cycles, drv.res
        b, done, taken = res["beat_cycles"], res["done_cycles"], res["cmd_taken"]
        return {"r_latency": lat, "commands": n,
                "r_beats_per_cycle": round(len(r) / (r[-1] - r[0] + 1), 4),
                "out_beats_per_cycle": round(len(b) / (b[-1] - b[0] + 1), 4),
                "commands_per_cycle": round(n / (done[-1] - done[0] + 1), 4),
                "payload_bytes_per_cycle": round(n * size / (b[-1] - b[0] + 1), 2),
                "first_beat_latency_cycles": b[0] - taken[0]}

    await bench_sweep(dut, h, model, dc, width=_width(dut), conns=CONNS, prefix="DMR_BENCH", row=row)
