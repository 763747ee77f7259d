"""The hinted band unit (hdl/cwnd.py ``CwndBand``, docs/spec/hw-cwnd.md MR-CW-059) in the
Amaranth simulator: every result against MR-CW-051's integer forms (``models.cwnd.band_model``
on ``protocol``), at its fixed latency, with idle cycles and backpressure."""
import random

import pytest
from amaranth.sim import Simulator

from metaroce.hdl.cwnd import CwndBand
from metaroce.models import protocol as P
from metaroce.models.cwnd import LAT_BAND, RATE_BITS, RTT_BITS, band_model
from metaroce.models.rx import pack, unpack


def requests(rng, line, n_req):
    edge = [0, 1, 2, line - 1, line, line + 1, (1 << RATE_BITS) - 1]
    return [(rng.choice(edge) if rng.random() < 0.3 else rng.randrange(1, line + 1),
             rng.randint(1, 8)) for _ in range(n_req)]


def run_band(config, reqs, *, seed=0, p_idle=0.3, p_bp=0.4):
    dut = CwndBand()
    rng = random.Random(seed)
    got, lat = [], []

    async def bench(ctx):
        ctx.set(dut.line_mbps, config["line_mbps"])
        ctx.set(dut.base_rtt_ns, config["base_rtt_ns"])
        ctx.set(dut.mtu, config["mtu"])
        i, t, t_taken = 0, 0, None
        while len(got) < len(reqs):
            assert t < 40 * len(reqs) + 100, "stuck"
            offer = i < len(reqs) and rng.random() >= p_idle
            if offer:
                ctx.set(dut.s_req.payload.as_value(), pack(dut.lay.req, {"hint": reqs[i][0], "n": reqs[i][1]}))
            ctx.set(dut.s_req.valid, int(offer))
            ready = int(rng.random() >= p_bp)
            ctx.set(dut.m_band.ready, ready)
            await ctx.delay(1e-9)
            if offer and ctx.get(dut.s_req.ready):
                i, t_taken = i + 1, t
            if ctx.get(dut.m_band.valid):
                if len(lat) == len(got):
                    lat.append(t - t_taken)
                if ready:
                    got.append(unpack(dut.lay.band, ctx.get(dut.m_band.payload.as_value())))
            await ctx.tick()
            t += 1

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    return got, lat


@pytest.mark.parametrize("line, rtt, mtu, seed", [
    (400_000, 10_000, 4096, 1), (100_000, 10_000, 4096, 2), (100_000, 6_000, 1024, 3),
    (400_000, (1 << RTT_BITS) - 1, 4096, 4), (25_000, 2_500, 256, 5)])
def test_band_unit_equals_the_integer_forms(line, rtt, mtu, seed):
    """MR-CW-059, MR-CW-051: rate, hw, path cap, hinted BDP and connection window of every
    request equal ``protocol``'s integer forms (hints 0, 1, at and above the line rate, the
    field's largest; 1..8 paths; base RTTs up to the field's largest), each result valid
    LAT_BAND cycles after its request was taken and held under backpressure."""
    config = {"line_mbps": line, "base_rtt_ns": rtt, "mtu": mtu}
    rng = random.Random(seed)
    reqs = requests(rng, line, 60)
    got, lat = run_band(config, reqs, seed=seed)
    want = [band_model(h, n, **config) for h, n in reqs]
    assert got == want
    assert set(lat) == {LAT_BAND}
    assert any(h == 0 for h, _ in reqs) and any(h > line for h, _ in reqs)
    assert all(P.hinted_window_fx(w["rate"], rtt, n) == w["hw"] for w, (_, n) in zip(want, reqs))
