"""Payload DMA RTL (hdl/dma_read.py, the registered instance) against its cycle model under
Verilator, every output compared every cycle (MR-DMR-050, tb/dma_read.py): directed and random
commands with idle cycles, backpressure on AR, m_data and m_done, random R latency and gaps,
error responses; back-to-back commands at one R beat per cycle (MR-DMR-042); and
cocotbext-axi's AxiRamRead as the host memory. 64 bits in the default run (one cached build);
512 bits behind ``slow``.

Knobs: DMR_RANDOM (random commands, default 300), DMR_SEED.
"""
import json
import os

import pytest

from metaroce import blocks
from metaroce.sim import verilator as vl
from metaroce.tb import build as tb_build


def _run(width, test, env, out_var=None):
    b = tb_build.build(blocks.get("dma_read"), width)
    return vl.run_one(b, "metaroce.tb.dma_read", test, env, out_var=out_var)


def _lockstep(width, seed, n):
    res = _run(width, "dmr_lockstep", {"DMR_RANDOM": str(n), "DMR_SEED": str(seed)}, "DMR_OUT")
    rows = {r["run"]: r for r in res["runs"]}
    for name in ("stream64+0", "stream64+5", "stream1500+0", "stream1500+5"):
        assert rows[name]["r_beats_per_cycle"] == 1.0
    assert rows["stream1500+0"]["out_beats_per_cycle"] == 1.0
    return rows


def test_dma_read_rtl_lockstep():
    """MR-DMR-010..013, MR-DMR-020..022, MR-DMR-030/031, MR-DMR-040..045, MR-DMR-050: lockstep
    under Verilator at 64 bits with the driver's host memory."""
    rows = _lockstep(64, int(os.environ.get("DMR_SEED", "64")),
                     int(os.environ.get("DMR_RANDOM", "300")))
    assert rows["stream64+0"]["out_beats_per_cycle"] == 1.0


@pytest.mark.slow
def test_dma_read_rtl_axiram():
    """MR-DMR-044, MR-DMR-050: cocotbext-axi's AxiRamRead as the host memory (random pauses on
    AR and R); payload equal to the image, lockstep holds."""
    _run(64, "dmr_axiram", {"DMR_RANDOM": os.environ.get("DMR_RANDOM", "300"),
                            "DMR_SEED": os.environ.get("DMR_SEED", "64")})


def test_bench_dma_read(capsys):
    """MR-DMR-042/043: ``metaroce bench dma_read`` rows (64 bits, tiny run): line rate on R
    with 300 cycles of R latency, 0 mismatches; bad arguments are one-line errors."""
    from metaroce.cli import main
    rc = main(["bench", "dma_read", "--widths", "64", "--sizes", "64,100", "--offsets", "0,3",
               "--latencies", "300", "--commands", "24", "--json", "--no-plot", "--jobs", "1"])
    obj = json.loads(capsys.readouterr().out)
    assert rc == 0 and len(obj["rows"]) == 4
    assert obj["summary"] == {"line_rate": True, "mismatches": 0}
    for r in obj["rows"]:
        assert r["first_beat_latency_cycles"] > 300
    assert main(["bench", "dma_read", "--widths", "96"]) == 2
    err = capsys.readouterr().err
    assert "width 96" in err and len(err.strip().splitlines()) == 1


@pytest.mark.slow
@pytest.mark.parametrize("width,seed", [(512, 12), (64, 11)])
def test_dma_read_rtl_wide_and_long(width, seed):
    """MR-DMR-050: 512 bits, and a long random run (3,000 commands), under Verilator."""
    rows = _lockstep(width, seed, 3000 if width == 64 else 300)
    if width == 512:
        assert rows["stream64+0"]["out_beats_per_cycle"] == 1.0
        _run(512, "dmr_axiram", {"DMR_RANDOM": "300", "DMR_SEED": str(seed)})
