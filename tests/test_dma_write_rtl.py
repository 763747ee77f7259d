"""Placement DMA RTL (hdl/dma_write.py, the registered instance) against its cycle model under
Verilator, every output compared every cycle (MR-DMA-050, tb/dma_write.py), at 64 bits (512 bits
behind ``slow``; the Amaranth simulator runs 512 bits in the default run): directed and random commands with idle cycles, backpressure on every channel, random B
latency and error responses; back-to-back commands at one write beat per cycle (MR-DMA-042);
and cocotbext-axi's AxiRamWrite as the host memory. One cached Verilator build per width.

Knobs: DMA_RANDOM (random commands, default 300), DMA_SEED.
"""
import json
import os

import pytest

from metaroce import blocks
from metaroce.sim import verilator as vl
from metaroce.tb import build as tb_build


@pytest.mark.parametrize("width", [64, pytest.param(512, marks=pytest.mark.slow)])
def test_dma_write_rtl_lockstep(width):
    """MR-DMA-010..013, MR-DMA-020..022, MR-DMA-030, MR-DMA-040..044, MR-DMA-050: lockstep
    under Verilator with the driver's host memory."""
    b = tb_build.build(blocks.get("dma_write"), width)
    env = {"DMA_RANDOM": os.environ.get("DMA_RANDOM", "300"),
           "DMA_SEED": os.environ.get("DMA_SEED", str(width))}
    res = vl.run_one(b, "metaroce.tb.dma_write", "dma_lockstep", env, out_var="DMA_OUT")
    rows = {r["run"]: r for r in res["runs"]}
    assert rows["stream64+0"]["w_beats_per_cycle"] == 1.0
    assert rows["stream1500+5"]["w_beats_per_cycle"] == 1.0


@pytest.mark.parametrize("width", [64, pytest.param(512, marks=pytest.mark.slow)])
def test_dma_write_rtl_axiram(width):
    """MR-DMA-044, MR-DMA-050: cocotbext-axi's AxiRamWrite (AxiRam's write half) as the host
    memory; its memory equals
    the model's image and the lockstep holds."""
    b = tb_build.build(blocks.get("dma_write"), width)
    env = {"DMA_RANDOM": os.environ.get("DMA_RANDOM", "300"),
           "DMA_SEED": os.environ.get("DMA_SEED", str(width))}
    vl.run_one(b, "metaroce.tb.dma_write", "dma_axiram", env)


def test_bench_dma_write(capsys):
    """MR-DMA-042/043: ``metaroce bench dma_write`` rows (64 bits, tiny run): line rate on W
    with 300 cycles of B latency, 0 mismatches; bad arguments are one-line errors."""
    from metaroce.cli import main
    rc = main(["bench", "dma_write", "--widths", "64", "--sizes", "64,100", "--offsets", "0,3",
               "--latencies", "300", "--commands", "24", "--json", "--no-plot", "--jobs", "1"])
    obj = json.loads(capsys.readouterr().out)
    assert rc == 0 and len(obj["rows"]) == 4
    assert obj["summary"] == {"line_rate": True, "mismatches": 0}
    for r in obj["rows"]:
        assert r["done_latency_cycles"] > 300
    assert main(["bench", "dma_write", "--widths", "96"]) == 2
    err = capsys.readouterr().err
    assert "width 96" in err and len(err.strip().splitlines()) == 1


@pytest.mark.slow
@pytest.mark.parametrize("width,seed", [(64, 11), (512, 12)])
def test_dma_write_rtl_long(width, seed):
    """MR-DMA-050: a long random run (3,000 commands) under Verilator, other seeds."""
    b = tb_build.build(blocks.get("dma_write"), width)
    env = {"DMA_RANDOM": "3000", "DMA_SEED": str(seed)}
    vl.run_one(b, "metaroce.tb.dma_write", "dma_lockstep", env, out_var="DMA_OUT")
