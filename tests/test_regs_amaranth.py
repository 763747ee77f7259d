"""Register block RTL (hdl/regs.py) against its model (models/regs.py) in the Amaranth simulator.

Every output port is compared on every cycle by the lockstep core shared with the Verilator
testbenches (tb/lockstep.py), driven by the block's one driver (models/regs_cases.py: AW and W
in random order, random delays, random BREADY/RREADY and ``m_cfg`` ready, moving counters);
then the responses, read data and records are checked by the one checker against the register
file replaying the accesses one at a time.
"""
import random

import pytest

from metaroce.hdl.regs import Regs
from metaroce.models import regs_cases as rc
from metaroce.models.regs import RegsCycleModel, register_map
from metaroce.models.rx import layouts
from metaroce.tb.lockstep import run_amaranth, verilog_ports

SMALL = (256, 4, 256)


def run_lockstep(items, *, inst=SMALL, seed=0, check=True, **kw):
    """RTL and model on the same inputs, every output compared every cycle (MR-REG-050)."""
    dut = Regs(conns=inst[0], paths=inst[1], keys=inst[2])
    model = RegsCycleModel(*inst)
    drv = rc.Driver(items, seed=seed, sources=model.sources, **kw)
    core = run_amaranth(dut, model, drv, busy=model.busy)
    assert core.mismatches == 0
    if check:
        rc.check(drv.items, drv.res, drv.ctr, model.lay)
    return drv


def test_verilog_port_names():
    """MR-REG-002: the Verilog ports are exactly the model's ports plus clk and rst."""
    ports = verilog_ports(Regs(conns=256, paths=4, keys=256), "regs")
    names = RegsCycleModel(256, 4, 256).port_names()
    assert ports == set(names["inputs"]) | set(names["outputs"]) | {"clk", "rst"}
    assert {"parser_reg_addr", "parser_reg_data", "tx_reg_addr", "tx_reg_data"} <= ports


def test_parameters_follow_the_rx_instance():
    """MR-REG-001: the block's record is the RX instance's ``s_cfg`` layout; bad sizes are refused
    as the RX engine refuses them."""
    for inst in (SMALL, (4096, 8, 1024)):
        dut = Regs(conns=inst[0], paths=inst[1], keys=inst[2])
        assert dut.m_cfg.payload.shape() == layouts(*inst).cfg
        dut._MustUse__silence = True            # not elaborated here
    with pytest.raises(ValueError):
        Regs(conns=100)


@pytest.mark.parametrize("shape", ["none", "both", "bp"])
def test_map_walk_and_counters(shape):
    """MR-REG-004, MR-REG-010/011/012, MR-REG-020..024, MR-REG-030/031/032, MR-REG-040..043: every register at reset, writes with
    strobes and read-back (hw-rx.md MR-RX-315: each byte loaded by its own strobe), SLVERR cases
    and the ERROR bits, commits, counter pairs; with idle cycles and backpressure on every
    channel."""
    rm = register_map(layouts(*SMALL))
    rng = random.Random(4)
    items = rc.map_walk(rm, rng) + rc.counter_reads(rm, rng)
    p_idle, p_bp = rc.SHAPES[shape]
    run_lockstep(items, seed=5, p_idle=p_idle, p_bp=p_bp)


def test_rows_and_random_mix():
    """MR-REG-020..022, MR-REG-040: RX rows written through the window, then a random mix."""
    rm = register_map(layouts(*SMALL))
    run_lockstep(rc.standard_items(rm, seed=2, n_random=250), seed=2, p_idle=0.3, p_bp=0.4)


def test_overlapped_channels():
    """MR-REG-040, MR-REG-041: reads and writes in flight at once on their own channels."""
    rm = register_map(layouts(*SMALL))
    items = rc.random_accesses(rm, random.Random(8), 300, safe_reads=True)
    drv = run_lockstep(items, seed=8, p_idle=0.2, p_bp=0.3, overlap=True)
    spans = drv.res["span"]
    w = [spans[i] for i, it in enumerate(items) if isinstance(it, rc.Write)]
    r = [spans[i] for i, it in enumerate(items) if isinstance(it, rc.Read)]
    assert any(a[0] <= b[1] and b[0] <= a[1] for a, b in zip(w, r)), "no write and read overlapped"


def test_default_instance():
    """MR-REG-001: the engine's instance (4,096 x 8, 1,024 keys) runs the same stack."""
    rm = register_map(layouts(4096, 8, 1024))
    run_lockstep(rc.standard_items(rm, seed=3, n_random=60), inst=(4096, 8, 1024), seed=3)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(10, 16))
def test_random_sweep(seed):
    """MR-REG-050: longer random runs, every shape, sequential and overlapped."""
    rm = register_map(layouts(*SMALL))
    shape = list(rc.SHAPES)[seed % len(rc.SHAPES)]
    p_idle, p_bp = rc.SHAPES[shape]
    run_lockstep(rc.standard_items(rm, seed=seed, n_random=1500), seed=seed, p_idle=p_idle, p_bp=p_bp)
    items = rc.random_accesses(rm, random.Random(seed), 1500, safe_reads=True)
    run_lockstep(items, seed=seed, p_idle=p_idle, p_bp=p_bp, overlap=True)
