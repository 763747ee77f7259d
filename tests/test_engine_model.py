"""The engine's receive half as a composed model (models/engine.py), without RTL: the payload
repacker against the plain rule, the reference endpoint's traffic through the composed block
(the same driver and checker as the Amaranth and Verilator locksteps), line rate."""
import random

import pytest

from metaroce.models import engine_cases as ec
from metaroce.models.engine import PackModel, engine_rx_model_256x4, rotate_down
from metaroce.models.parser import OVERFLOW_COUNTER
from metaroce.models.rx import N_COUNTERS, RxCode, payload_layout, unpack
from metaroce.models.wire import Reason


def test_rotate_down():
    assert rotate_down(0x0706050403020100, 3, 8) == 0x0201000706050403
    assert rotate_down(0x0706050403020100, 0, 8) == 0x0706050403020100


@pytest.mark.parametrize("width", [64, 512])
def test_pack_model_packs_from_lane_zero(width):
    """MR-ENG-104: every packet, whatever its first lane and length, comes out as its bytes
    from lane 0, ``keep`` a run from lane 0, ``last`` on its last beat, one beat per ``nb``
    bytes; with the output always ready a beat is taken every cycle except the one after a
    packet whose last input beat holds bytes for two output beats."""
    nb = width // 8
    rng = random.Random(width)
    pm = PackModel(width)
    lay = payload_layout(width)
    for _ in range(300):
        length = rng.randint(1, 6 * nb)
        start = rng.randrange(nb)
        payload = bytes(rng.getrandbits(8) for _ in range(length))
        frame = bytearray(rng.getrandbits(8) for _ in range(start + length + nb))
        frame[start:start + length] = payload
        first, last = start // nb, (start + length - 1) // nb
        beats = []
        for b in range(first, last + 1):
            keep = sum(1 << j for j in range(nb) if start <= b * nb + j < start + length)
            beats.append((int.from_bytes(frame[b * nb:(b + 1) * nb], "little"), keep, int(b == last)))
        got, out_beats, stalls = bytearray(), 0, 0
        i = 0
        while True:
            o = pm.outputs()
            if o["valid"]:
                b = unpack(lay, o["payload"])
                assert b["keep"] & (b["keep"] + 1) == 0
                got += b["data"].to_bytes(nb, "little")[:b["keep"].bit_length()]
                out_beats += 1
                if b["last"]:
                    pm.step(0, 0, 0, 0, 1)
                    break
            v = beats[i] if i < len(beats) else (0, 0, 0)
            ready = pm.step(int(i < len(beats)), *v, 1)
            if i < len(beats):
                i += ready
                stalls += not ready
        assert bytes(got) == payload and out_beats == -(-length // nb)
        assert stalls == 0


@pytest.mark.parametrize("width,seed", [(64, 1), (128, 2), (512, 3)])
def test_engine_model_endpoint_traffic(width, seed):
    """MR-ENG-110 on the composed model: host memory and ACK/NAK stream equal the receiving
    endpoint's; the requests, counters, bypassed frames and done records the blocks' models'."""
    run = ec.engine_traffic(nbytes=8192, seed=seed, loss=0.08)
    drv, summary = ec.run_model(width, run, seed=seed, p_bp=0.4)
    assert summary["memory_equal"] and summary["acks_equal"]
    assert summary["traffic"]["lost"] > 0 and summary["outcomes"]["ACCEPTED"] > 0
    assert len(drv.res["bypass"]) == 3


def test_engine_model_detects_a_wrong_byte():
    """The checker is not vacuous: one byte of the host memory changed fails the comparison."""
    run = ec.engine_traffic(nbytes=2048, seed=4)
    drv, _ = ec.run_model(64, run, seed=4)
    rkey, va, data = run.traffic.sources[0]
    key = next(x for x in run.setup.keys if x.rkey == rkey)
    drv.mem.image[key.base - run.lay.base + va] ^= 1
    with pytest.raises(AssertionError, match="host memory"):
        ec.check(run, drv)


@pytest.mark.parametrize("width,plen", [(64, 64), (512, 0), (512, 256)])
def test_engine_model_line_rate(width, plen):
    """MR-ENG-112: back-to-back writes of one path, outputs ready: every MAC beat taken in
    consecutive cycles."""
    run = ec.line_rate_run(n=48, plen=plen, seed=width + plen)
    model = engine_rx_model_256x4(width)
    drv = ec.Driver(width, run, seed=1, p_idle=0.0, p_bp=0.0, latency=(1, 20))
    while not drv.finished:
        inp = drv.inputs()
        drv.observe(inp, model.step(inp))
        drv.settle(model.busy)
    r = ec.check_line_rate(run, drv)
    assert r["beats"] == 48 * -(-len(run.cases[0].frame) // (width // 8))


def test_engine_model_every_counter_through_axil():
    """MR-ENG-105, MR-REG-030/031/033, MR-RX-050, MR-HW-060: every RX counter moves (window and
    bad-input cases, SENDs with RNR and RECV_BOUNDS, READ responses with NO_READ, messages) and
    reads back through AXI4-Lite as the RX model counts it, with the receive and READ rows
    written through AXI4-Lite between the frames; every parser counter but the overflow drops
    moves (a drop of each reason, a MAC error, frames that are not RoCE) and reads back through
    AXI4-Lite as the frames' verdicts count it; a counter read wrong fails the check."""
    run = ec.counter_run()
    assert any(kind == "cfg" for kind, _ in run.frames[1:]) and run.frames[0][0] == "case"
    drv = ec.Driver(64, run, seed=3, p_idle=0.2, p_bp=0.3)
    model = engine_rx_model_256x4(64)
    while not drv.finished:
        inp = drv.inputs()
        drv.observe(inp, model.step(inp))
        drv.settle(model.busy)
    got = ec.check_counters(run, drv)
    # MR-RX-185, MR-ENG-236: every counter moved, MSG_SLOTS' too (the RX's slot_nak, on in the engine)
    assert len(got) == N_COUNTERS and min(got) > 0
    # MR-REG-033: every parser counter but the overflow drops (drop_on_full only) moved too
    assert len(drv.parser_counters) == OVERFLOW_COUNTER + 1
    assert min(drv.parser_counters[:OVERFLOW_COUNTER]) > 0 and drv.parser_counters[OVERFLOW_COUNTER] == 0
    r = drv.readout.res["r"]
    k = next(i for i, (j, _, _) in enumerate(r) if j == 2 * (N_COUNTERS + int(Reason.ICRC)))
    r[k] = (r[k][0], r[k][1], r[k][2] + 1)              # the parser's ICRC counter read one more
    with pytest.raises(AssertionError, match="parser counters"):
        ec.check_counters(run, drv)
    r[k] = (r[k][0], r[k][1], r[k][2] - 1)
    k = next(i for i, (j, _, _) in enumerate(r) if j == 2 * int(RxCode.RNR))
    r[k] = (r[k][0], r[k][1], r[k][2] + 1)              # counter RNR's LO word read one more
    with pytest.raises(AssertionError, match="RX counters"):
        ec.check_counters(run, drv)


def test_engine_model_atomics_never_hold_the_rx():
    """MR-ENG-156 (superseded by MR-ENG-158), MR-ENG-167, MR-ENG-220, MR-RX-162: atomic requests among the
    writes (the endpoint's traffic, 5 % loss) executed by the receive half's atomic executor:
    the RX never stops (every ACK/NAK request, completion and placement is the RX model's and
    the endpoint's), the host memory equals the receiving endpoint's (its atomics executed, once
    each, in their place among the writes) and every result row holds the original value the
    endpoint's response carried (MR-ENG-161)."""
    run, n_atomic = ec.atomic_traffic(8192, 3, executor=True)
    drv, summary = ec.run_model(64, run, seed=3, p_bp=0.3)
    assert summary["acks_equal"] and summary["cqes_equal"] and summary["memory_equal"]
    assert summary["rows_equal"] >= 3 and summary["placements"] > 0 and n_atomic >= 3, n_atomic


def test_engine_model_atomic_fence_hazard():
    """MR-ENG-162's hazard at the receive half, MR-ENG-216..218, MR-ENG-220: the endpoint's
    traffic with 80 % atomic requests and slow host memory (B after 150..300 cycles,
    ``engine_cases.atomic_hazard_run``): with the fence at the RX's placement marks the run
    completes (every ACK/NAK request, completion and placement the endpoint's, the memory its
    memory after its atomics, every result row its response's value). Negative control: session
    25's fence (``atomic_cases.OldFence``: an empty intake, then every placement taken) makes
    no progress on the same run (the driver's limit lowered to 30,000 cycles, over 4 times the
    run's ~7,000)."""
    from metaroce.models.atomic_cases import OldFence
    from metaroce.models.driver import run_alone
    from metaroce.models.engine import EngineRxModel
    run = ec.atomic_hazard_run()
    drv, summary = ec.run_model(64, run, seed=3, p_bp=0.3, latency=ec.HAZARD_LATENCY)
    assert summary["acks_equal"] and summary["cqes_equal"] and summary["memory_equal"]
    assert summary["rows_equal"] >= 5 and drv.cycles < 30_000
    lay = run.setup.lay
    model = EngineRxModel(64, lay.conns, lay.paths, lay.keys, streams=lay.streams, outstanding=32,
                          atomics=True)
    model.atom = OldFence(64, model.lay.atom, model.lay.rsp)
    drv = ec.Driver(64, run, seed=3, p_bp=0.3, latency=ec.HAZARD_LATENCY)
    drv.traffic.limit = 30_000
    with pytest.raises(AssertionError, match="no progress"):
        run_alone(model, drv)


def test_engine_model_atomics_negative_control():
    """MR-ENG-167: the same run with an executor that answers a value read after its write (as
    one re-executing on a resend would, MR-VERB-012) fails the result rows' check."""
    from metaroce.models.atomic_cases import Reexecute
    run, _ = ec.atomic_traffic(8192, 3, executor=True)
    with pytest.raises(AssertionError, match="result row"):
        ec.run_model(64, run, seed=3, p_bp=0.3, model_cls=Reexecute)
