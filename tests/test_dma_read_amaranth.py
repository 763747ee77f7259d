"""Payload DMA RTL (hdl/dma_read.py) against its model (models/dma_read.py) in the Amaranth
simulator.

Every output port is compared on every cycle by the lockstep core shared with the Verilator
testbench (tb/lockstep.py), driven by the block's one driver (models/dma_read_cases.py: idle
cycles on s_cmd, random backpressure on AR, m_data and m_done, random R latency up to 300
cycles with R gaps, error responses); then the one checker compares the bursts, the payload
beats and the done records with the rules.
"""

import pytest
from amaranth.hdl import Fragment, Module
from amaranth.lib import wiring

from metaroce.hdl.dma_read import DmaRead
from metaroce.hdl.frame_builder import FrameBuilder
from metaroce.models import dma_read_cases as dc
from metaroce.models.dma_read import DmaReadCycleModel
from metaroce.tb.lockstep import run_amaranth, verilog_ports


def run_lockstep(width, lay, cmds, *, conns=256, seed=0, max_burst=256, outstanding=256,
                 rotate=False, dut=None, **kw):
    """RTL and model on the same inputs, every output compared every cycle, then the checker
    (MR-DMR-050); returns the driver. ``rotate``: MR-TX-480's DMA; ``dut``: an RTL in place of
    ``DmaRead``'s (a wrong form)."""
    dut = dut or DmaRead(width, conns=conns, max_burst=max_burst, outstanding=outstanding,
                         rotate=rotate)
    model = DmaReadCycleModel(width, conns, max_burst=max_burst, outstanding=outstanding,
                              rotate=rotate)
    drv = dc.Driver(width, lay, cmds, conns=conns, seed=seed, max_burst=max_burst,
                    rotate=rotate, **kw)
    core = run_amaranth(dut, model, drv, busy=drv.busy_with(model.busy))
    assert core.mismatches == 0
    dc.check(width, lay, cmds, drv, conns=conns, max_burst=max_burst, rotate=rotate)
    return drv


def test_verilog_port_names():
    """MR-DMR-002: the Verilog ports are exactly the model's ports plus clk and rst."""
    ports = verilog_ports(DmaRead(64, conns=256), "dma_read")
    names = DmaReadCycleModel.port_names()
    assert ports == set(names["inputs"]) | set(names["outputs"]) | {"clk", "rst"}


def test_connects_to_frame_builder():
    """MR-DMR-002: m_data is the frame builder's s_payload (wiring.connect)."""
    for width in (64, 512):
        m = Module()
        m.submodules.dma = dma = DmaRead(width, conns=256)
        m.submodules.fb = fb = FrameBuilder(width)
        wiring.connect(m, dma.m_data, fb.s_payload)
        Fragment.get(m, None)


def test_bad_parameters():
    """MR-DMR-001: width 64..512, max_burst a power of two up to 256, outstanding 2..4096."""
    for kw in ({"max_burst": 3}, {"max_burst": 512}, {"outstanding": 1}, {"conns": 100},
               {"axi_id": 16}):
        with pytest.raises(ValueError):
            DmaRead(64, **kw)
    with pytest.raises(ValueError):
        DmaRead(96)


@pytest.mark.parametrize("width,max_burst", [(64, 16), (128, 256), (512, 2)])
def test_directed(width, max_burst):
    """MR-DMR-010..013, MR-DMR-020..022, MR-DMR-030: every start lane, boundary ends and
    crossings, zero and maximum lengths, with idle cycles, backpressure and random R latency
    and gaps."""
    lay, cmds = dc.directed_cases(width, max_burst=max_burst)
    run_lockstep(width, lay, cmds, seed=width, max_burst=max_burst)


# 512 bits in the slow set: the default run's budget (test_random_rotated[512] runs the same
# random traffic through the rotated form there; test_directed and test_line_rate keep 512)
@pytest.mark.parametrize("width,seed", [(64, 1), pytest.param(512, 2, marks=pytest.mark.slow)])
def test_random(width, seed):
    """MR-DMR-010..013, MR-DMR-020..022, MR-DMR-030/031, MR-DMR-040..045: random commands, some
    answered SLVERR/DECERR (done with error 1), 4 outstanding slots so the queue fills;
    random ``rid`` and ``rlast``, which the block does not read."""
    lay, cmds = dc.random_cases(width, 40, seed=seed)
    run_lockstep(width, lay, cmds, seed=seed, outstanding=4, p_idle=0.3, p_bp=0.4, p_axi=0.4,
                 noise=True)


@pytest.mark.parametrize("width,seed", [pytest.param(64, 3, marks=pytest.mark.slow), (512, 4)])
def test_random_rotated(width, seed):
    """MR-TX-480, MR-TX-481, MR-TX-484: ``DmaRead(rotate=True)``: random commands with random
    lanes, some answered with errors, 4 outstanding slots, idle cycles, backpressure and random
    R latency: 0 mismatches, every payload beat the lane-0 beat with its data and keep rotated
    up by the command's lane (the owed last beats too)."""
    lay, cmds = dc.random_cases(width, 30, seed=seed)
    cmds = dc.with_lanes(cmds, seed)
    assert len({c.lane % (width // 8) for c in cmds}) > 4
    run_lockstep(width, lay, cmds, seed=seed, outstanding=4, p_idle=0.3, p_bp=0.4, p_axi=0.4,
                 rotate=True)


@pytest.mark.slow
def test_random_rotated_wrong_form_fails():
    """MR-TX-484: the rotated DMA with its held mask one lane long (the interval's end at
    ``lane + nb - o + 1``) mismatches its model."""
    from metaroce.tb.lockstep import Mismatch, wrong_form
    mod = wrong_form("dma_read", "x2[\"eh\"].eq(s1 + (nb - o1))", "x2[\"eh\"].eq(s1 + (nb - o1) + 1)")
    lay, cmds = dc.random_cases(64, 30, seed=3)
    with pytest.raises(Mismatch):
        run_lockstep(64, lay, dc.with_lanes(cmds, 3), seed=3, outstanding=4, rotate=True,
                     dut=mod.DmaRead(64, conns=256, outstanding=4, rotate=True))


@pytest.mark.parametrize("width,length,offset", [(512, 64, 0), (512, 64, 7), (64, 100, 3)])
def test_line_rate(width, length, offset):
    """MR-DMR-042/043: AXI always ready and 200 cycles of R latency: one R beat per cycle;
    one payload beat per cycle when no command straddles an extra bus word."""
    lay, cmds = dc.stream_cases(width, 48, length, offset=offset)
    drv = run_lockstep(width, lay, cmds, p_idle=0, p_bp=0, p_axi=0, latency=(200, 200))
    r, b = drv.mem.r_cycles, drv.res["beat_cycles"]
    assert r[-1] - r[0] + 1 == len(r)
    spills = (offset + length) // (width // 8) > (length - 1) // (width // 8)
    if not spills:
        assert b[-1] - b[0] + 1 == len(b)
