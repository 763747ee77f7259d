"""Placement DMA RTL (hdl/dma_write.py) against its model (models/dma_write.py) in the Amaranth
simulator.

Every output port is compared on every cycle by the lockstep core shared with the Verilator
testbench (tb/lockstep.py), driven by the block's one driver (models/dma_write_cases.py: idle
cycles on both inputs, random backpressure on AW, W and m_done, random B latency up to 300
cycles, error responses); then the one checker compares the host memory image, the bursts and
the done records with the rules.
"""

import pytest
from amaranth.hdl import Fragment, Module
from amaranth.lib import wiring

from metaroce.hdl.dma_write import DmaWrite
from metaroce.hdl.rx import Rx
from metaroce.models import dma_write_cases as dc
from metaroce.models.dma_write import DmaWriteCycleModel
from metaroce.tb.lockstep import run_amaranth, verilog_ports


def run_lockstep(width, lay, cmds, *, conns=256, seed=0, max_burst=256, outstanding=256, **kw):
    """RTL and model on the same inputs, every output compared every cycle, then the checker
    (MR-DMA-050); returns the driver."""
    dut = DmaWrite(width, conns=conns, max_burst=max_burst, outstanding=outstanding)
    model = DmaWriteCycleModel(width, conns, max_burst=max_burst, outstanding=outstanding)
    drv = dc.Driver(width, lay, cmds, conns=conns, seed=seed, max_burst=max_burst, **kw)
    core = run_amaranth(dut, model, drv, busy=drv.busy_with(model.busy))
    assert core.mismatches == 0
    dc.check(width, lay, cmds, drv, conns=conns, max_burst=max_burst)
    return drv


def test_verilog_port_names():
    """MR-DMA-002: the Verilog ports are exactly the model's ports plus clk and rst."""
    ports = verilog_ports(DmaWrite(64, conns=256), "dma_write")
    names = DmaWriteCycleModel.port_names()
    assert ports == set(names["inputs"]) | set(names["outputs"]) | {"clk", "rst"}


def test_connects_to_rx():
    """MR-DMA-002: s_place and s_data are the RX engine's m_place and m_data (wiring.connect)."""
    for width in (64, 512):
        m = Module()
        m.submodules.rx = rx = Rx(width, conns=256, paths=4, keys=256)
        m.submodules.dma = dma = DmaWrite(width, conns=256)
        wiring.connect(m, rx.m_place, dma.s_place)
        wiring.connect(m, rx.m_data, dma.s_data)
        Fragment.get(m, None)


def test_bad_parameters():
    """MR-DMA-001: width 64..512, max_burst a power of two up to 256, outstanding 2..4096."""
    for kw in ({"max_burst": 3}, {"max_burst": 512}, {"outstanding": 1}, {"conns": 100},
               {"axi_id": 16}):
        with pytest.raises(ValueError):
            DmaWrite(64, **kw)
    with pytest.raises(ValueError):
        DmaWrite(96)


@pytest.mark.parametrize("width,max_burst", [(64, 256), (128, 16), (512, 256), (256, 2)])
def test_directed(width, max_burst):
    """MR-DMA-010..013, MR-DMA-020..022, MR-DMA-030: every start lane, boundary ends and
    crossings, zero and maximum lengths, with idle cycles, backpressure and random B latency."""
    lay, cmds = dc.directed_cases(width, max_burst=max_burst)
    run_lockstep(width, lay, cmds, seed=width, max_burst=max_burst)


@pytest.mark.parametrize("width,seed", [(64, 1), (512, 2)])
def test_random(width, seed):
    """MR-DMA-010..013, MR-DMA-020..022, MR-DMA-030, MR-DMA-040..044: random commands, some
    answered SLVERR/DECERR (done with error 1, no
    byte written), few outstanding slots so the queue fills; random ``bid`` values, which the
    block does not read (MR-DMA-031). hw-parser.md MR-HW-089/090: the in-flight queue a
    BufferedQueue, the AW and W command queues SyncQueues, the model's queues unchanged."""
    lay, cmds = dc.random_cases(width, 60, seed=seed)
    run_lockstep(width, lay, cmds, seed=seed, outstanding=4, p_idle=0.3, p_bp=0.4, p_axi=0.4,
                 bid_noise=True)


@pytest.mark.parametrize("width,length,offset", [(512, 64, 0), (64, 64, 0), (512, 1500, 3)])
def test_line_rate(width, length, offset):
    """MR-DMA-042/043: AXI always ready and 200 cycles of B latency: one write beat per cycle,
    and one command per cycle for one-beat commands, with no stall from the latency."""
    lay, cmds = dc.stream_cases(width, 64, length, offset=offset)
    drv = run_lockstep(width, lay, cmds, p_idle=0, p_bp=0, p_axi=0, latency=(200, 200))
    w = drv.res["w_cycles"]
    assert w[-1] - w[0] + 1 == len(w)
    if length == width // 8 and offset == 0:
        assert len(w) == 64
