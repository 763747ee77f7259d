"""The engine's receive half (hdl/engine.py) against its composed model (models/engine.py) in
the Amaranth simulator, and its payload repacker alone against the repacker's model.

The engine run is the issue's key check at a small size (MR-ENG-110): the reference endpoint's
real traffic (a sender endpoint through the model fabric with loss, reordering and duplication,
forged writes among the frames, a few frames that are not RoCE) as MAC beats, the setup written
through AXI4-Lite, random ready on every output and random B latency of the host memory; every
output compared every cycle; at the end the host memory and the ACK/NAK stream equal the
receiving endpoint's, byte for byte.
"""
import random

import pytest
from amaranth.hdl import Module
from amaranth.sim import Simulator

from metaroce.hdl.engine import EngineRx, PayloadPack, engine_rx_256x4
from metaroce.models import engine_cases as ec
from metaroce.models.engine import EngineRxModel, PackModel, engine_rx_model_256x4
from metaroce.models.parser import OVERFLOW_COUNTER
from metaroce.models.rx import unpack, payload_layout
from metaroce.tb.lockstep import run_amaranth, verilog_ports


def _pack_packets(rng, nb, n):
    """Payload packets as the parser sends them (MR-HW-030): the bytes of each in the lanes of
    a frame whose payload starts at a random lane, other lanes holding other bytes."""
    out = []
    for _ in range(n):
        length = rng.choice([1, 2, nb - 1, nb, nb + 1, 2 * nb, 3 * nb - 1, rng.randint(1, 5 * nb)])
        start = rng.randrange(nb)
        payload = bytes(rng.getrandbits(8) for _ in range(length))
        frame = bytearray(rng.getrandbits(8) for _ in range(start + length + nb))
        frame[start:start + length] = payload
        beats = []
        first, last = start // nb, (start + length - 1) // nb
        for b in range(first, last + 1):
            keep = 0
            for j in range(nb):
                if start <= b * nb + j < start + length:
                    keep |= 1 << j
            beats.append((int.from_bytes(frame[b * nb:(b + 1) * nb], "little"), keep, int(b == last)))
        out.append((payload, beats))
    return out


@pytest.mark.parametrize("width", [64, 128])
def test_payload_pack_lockstep(width):
    """MR-ENG-104: the repacker against its model, every output every cycle, under random idle
    input and random output ready; the packets come out packed from lane 0, byte-exact, with
    ``keep`` the bytes' lanes and ``last`` on each packet's last beat."""
    nb = width // 8
    rng = random.Random(width)
    packets = _pack_packets(rng, nb, 120)
    beats = [b for _, bs in packets for b in bs]
    dut = PayloadPack(width)
    model = PackModel(width)
    lay = payload_layout(width)
    got, cur = [], bytearray()
    m = Module()
    m.submodules.dut = dut

    async def bench(ctx):
        nonlocal cur
        i = 0
        idle = 0
        for _ in range(40 * len(beats) + 100):
            valid = int(i < len(beats) and rng.random() >= 0.25)
            data, keep, last = beats[i] if i < len(beats) else (0, 0, 0)
            ready = int(rng.random() >= 0.35)
            ctx.set(dut.s_axis.tvalid, valid)
            ctx.set(dut.s_axis.tdata, data)
            ctx.set(dut.s_axis.tkeep, keep)
            ctx.set(dut.s_axis.tlast, last)
            ctx.set(dut.m_payload.ready, ready)
            want = model.outputs()
            assert ctx.get(dut.m_payload.valid) == want["valid"]
            if want["valid"]:
                assert ctx.get(dut.m_payload.payload.as_value()) == want["payload"]
                if ready:
                    b = unpack(lay, want["payload"])
                    assert b["keep"] & (b["keep"] + 1) == 0, "keep is not a run from lane 0"
                    cur += b["data"].to_bytes(nb, "little")[:b["keep"].bit_length()]
                    if b["last"]:
                        got.append(bytes(cur))
                        cur = bytearray()
            in_ready = model.step(valid, data, keep, last, ready)
            assert ctx.get(dut.s_axis.tready) == in_ready
            if valid and in_ready:
                i += 1
            idle = idle + 1 if i == len(beats) and not model.busy() else 0
            if idle > 3:
                break
            await ctx.tick()

    sim = Simulator(m)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    assert got == [p for p, _ in packets]


def test_bad_parameters():
    """MR-ENG-100: a bad value raises the ValueError of the block that takes it."""
    for args, kw in (((100,), {}), ((64,), {"conns": 100}), ((64,), {"paths": 3}),
                     ((64,), {"max_frame": 20}), ((64,), {"outstanding": 1})):
        with pytest.raises(ValueError):
            EngineRx(*args, **kw)


def test_small_instances_have_the_small_rx_streams():
    """MR-ENG-100, MR-ENG-130, MR-RX-001: the small receive half (``engine_rx_256x4``) and the
    whole engine's receive half build the RX engine of ``rx_256x4`` (``models.rx.SMALL``: 4
    streams per connection), and their models the same."""
    from metaroce.hdl.engine import Engine
    from metaroce.hdl.rx import rx_256x4
    from metaroce.models.engine import EngineModel
    from metaroce.models.rx import SMALL
    assert SMALL["streams"] == 4
    assert engine_rx_256x4(64).rx.lay == rx_256x4(64).lay
    assert engine_rx_256x4(64).lay.streams == engine_rx_model_256x4(64).lay.streams == SMALL["streams"]
    assert Engine(64).rx_half.lay.streams == EngineModel(64).rx.lay.streams == SMALL["streams"]
    assert EngineRx(64, conns=256, paths=4, keys=256, streams=2).lay.streams == 2


def test_verilog_port_names():
    """MR-ENG-101: the Verilog ports are exactly the model's ports plus clk and rst."""
    ports = verilog_ports(EngineRx(64, conns=256, paths=4, keys=256, max_frame=2048, outstanding=8),
                          "engine_rx")
    names = EngineRxModel(64, 256, 4, 256).port_names()
    assert ports == set(names["inputs"]) | set(names["outputs"]) | {"clk", "rst"}
    assert not any(p.startswith(("parser_reg", "tx_reg")) for p in ports)     # MR-ENG-105


@pytest.mark.parametrize("width", [64, pytest.param(512, marks=pytest.mark.slow)])
def test_engine_endpoint_traffic_amaranth(width):
    """MR-ENG-110, MR-ENG-102: the reference endpoint's traffic through the joined RTL in
    lockstep with the composed model; the host memory and the ACK/NAK stream equal the
    receiving endpoint's, the completion records its completions (MR-RX-087), the counters the
    blocks' models'."""
    run = ec.engine_traffic(nbytes=2048 if width == 64 else 8192, seed=5, hostile=10, n_bypass=2,
                            imm=1.0)
    dut = engine_rx_256x4(width)
    model = engine_rx_model_256x4(width)
    drv = ec.Driver(width, run, seed=5, p_idle=0.2, p_bp=0.3)
    core = run_amaranth(dut, model, drv, busy=model.busy)
    assert core.mismatches == 0 and core.cycle == drv.cycles > 1000
    summary = ec.check(run, drv)
    assert summary["acks_equal"] and summary["memory_equal"]
    assert summary["cqes_equal"] and summary["cqes"] > 0          # MR-RX-087 through the top
    assert summary["traffic"]["lost"] + summary["traffic"]["duplicated"] > 0
    assert summary["outcomes"]["ACCEPTED"] > 0 and summary["outcomes"]["PSN_WINDOW"] > 0


@pytest.mark.slow
def test_engine_every_counter_amaranth():
    """MR-ENG-105, MR-REG-030/031/033: the joined RTL (registers, parser, RX engine, DMA) in
    lockstep with the composed model on :func:`engine_cases.counter_run`: every RX counter and
    every parser counter but the overflow drops moves and reads back through ``s_axil`` (LO then
    HI) as the RX model and the frames' verdicts count it, the receive and READ rows written
    through ``s_axil`` between the frames, random idle and backpressure."""
    run = ec.counter_run()
    dut = engine_rx_256x4(64)
    model = engine_rx_model_256x4(64)
    drv = ec.Driver(64, run, seed=3, p_idle=0.2, p_bp=0.3)
    core = run_amaranth(dut, model, drv, busy=model.busy)
    assert core.mismatches == 0 and core.cycle == drv.cycles > 10000
    assert min(ec.check_counters(run, drv)) > 0
    assert min(drv.parser_counters[:OVERFLOW_COUNTER]) > 0       # MR-REG-033


@pytest.mark.slow
def test_engine_atomics_never_hold_the_rx_amaranth():
    """MR-ENG-158..167, MR-ENG-220 (the items with the RX's placement marks, the fence at them):
    atomic requests among the endpoint's writes through the joined RTL with
    the atomic executor (``EngineRx(atomics=True)``) in lockstep with the composed model: 0
    mismatches; requests, completions and placements are the endpoint's, the host memory the
    receiving endpoint's after its atomics, every result row the original value it answered."""
    run, n_atomic = ec.atomic_traffic(4096, 3, executor=True)
    assert n_atomic >= 3
    dut = engine_rx_256x4(64, atomics=True)
    model = engine_rx_model_256x4(64, atomics=True)
    drv = ec.Driver(64, run, seed=3, p_idle=0.2, p_bp=0.3)
    core = run_amaranth(dut, model, drv, busy=model.busy)
    assert core.mismatches == 0
    summary = ec.check(run, drv)
    assert summary["acks_equal"] and summary["cqes_equal"] and summary["memory_equal"]
    assert summary["rows_equal"] >= 2 and model.atom.executed >= 2
