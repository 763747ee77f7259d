"""The hinted band unit (hdl/cwnd.py ``CwndBand``, docs/spec/hw-cwnd.md MR-CW-059) against its
cycle model (models/cwnd.py ``CwndBandCycleModel``, on ``protocol``'s integer forms of
MR-CW-051): every output compared every cycle by the lockstep core (tb/lockstep.py), in the
Amaranth simulator (default run) and under Verilator (slow), with idle cycles and
backpressure; then the checker."""
import os

import pytest

from metaroce.blocks import Block
from metaroce.hdl.cwnd import CwndBand
from metaroce.models import cwnd_cases as cc
from metaroce.models import protocol as P
from metaroce.models.cwnd import RTT_BITS, CwndBandCycleModel, band_model
from metaroce.tb.lockstep import run_amaranth

#: The unit has no registry entry (metaroce/blocks.py): the Verilator test makes its Block.
BAND_BLOCK = Block(name="cwnd_band", component="metaroce.hdl.cwnd:cwnd_band",
                   model="metaroce.models.cwnd:band_model_cycles", tb="metaroce.tb.cwnd",
                   help="the congestion window block's hinted band unit (MR-CW-059)",
                   widths=(64,))


@pytest.mark.parametrize("line, rtt, mtu, seed", [
    (400_000, 10_000, 4096, 1), (100_000, 10_000, 4096, 2), (100_000, 6_000, 1024, 3),
    (400_000, (1 << RTT_BITS) - 1, 4096, 4), (25_000, 2_500, 256, 5)])
def test_band_lockstep(line, rtt, mtu, seed):
    """MR-CW-059, MR-CW-051: rate, hw, path cap, hinted BDP and connection window of every
    request (hints 0, 1, at and above the line rate, the field's largest; 1..8 paths; base RTTs
    up to the field's largest) equal ``protocol``'s integer forms, at the cycle model's
    latency: 0 mismatches."""
    config = {"line_mbps": line, "base_rtt_ns": rtt, "mtu": mtu}
    reqs = cc.band_requests(line, 60, seed=seed)
    model = CwndBandCycleModel()
    drv = cc.BandDriver(model.lay, reqs, config, seed=seed)
    core = run_amaranth(CwndBand(), model, drv, busy=model.busy)
    assert core.mismatches == 0
    assert cc.check_band(config, drv.res["taken"], drv.res["results"]) == {"requests": 60}
    assert any(r["hint"] == 0 for r in reqs) and any(r["hint"] > line for r in reqs)
    for r in reqs:
        w = band_model(r["hint"], r["n"], **config)
        assert w["hw"] == P.hinted_window_fx(w["rate"], rtt, r["n"])


@pytest.mark.slow
def test_band_rtl_lockstep():
    """MR-CW-059 under Verilator (tb/cwnd.py ``band_lockstep``): 0 mismatches."""
    from metaroce.sim import verilator as vl
    from metaroce.tb import build as tb_build
    b = tb_build.build(BAND_BLOCK, 64)
    env = {"CW_SEED": os.environ.get("CW_SEED", "7")}
    row = vl.run_one(b, "metaroce.tb.cwnd", "band_lockstep", env, out_var="CW_OUT")
    assert row["mismatches"] == 0 and row["requests"] == 300
