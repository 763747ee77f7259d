"""The hinted windows' control path in RTL (docs/spec/hw-cwnd.md section 9, MR-CW-125..133):
``hdl.cwnd.CwndControl`` alone against ``models.cwnd_control.CwndControlCycleModel`` in the
Amaranth simulator, the windows played by ``cwnd_control.WindowsEnv`` (``CwndModel(split=True)``
with random latencies, MR-TX-493's hold, backpressure on the block's outputs)."""
import pytest

from metaroce.hdl.cwnd import CwndControl
from metaroce.models import cwnd_cases as cc
from metaroce.models import protocol as P
from metaroce.models.cwnd import SMALL, CwndModel
from metaroce.models.cwnd_control import (LAT_MOVE_SCALED, REFILL_DIV_BITS,
                                          CwndControlCycleModel, WindowsEnv, move_cycles,
                                          refill_cycles)
from metaroce.tb.lockstep import Mismatch, run_amaranth

CFG = {"mtu": 1024, "beta_q": P.Q_ONE // 2, "cap": 60_000, "line_mbps": 100_000,
       "base_rtt_ns": 10_000}


def run(seed, n, params=SMALL, wrong=None):
    items = cc.traffic(CwndModel(**params, **CFG), n, seed=seed, hints=True)
    model = CwndControlCycleModel(64, **params, mtu=CFG["mtu"], line_mbps=CFG["line_mbps"],
                                  base_rtt_ns=CFG["base_rtt_ns"])
    env = WindowsEnv(model.lay, items, CFG, seed=seed)
    core = run_amaranth(CwndControl(**params, wrong=wrong), model, env, busy=model.busy)
    return core, model, items


def test_cycle_constants():
    """MR-CW-137..140 (MR-CW-129's with one adder): a scaled slot 65 cycles (19 of them the
    product), one not scaled 3; a refill four a slot, six for W' and the shortfall, 36 a calm
    path."""
    assert LAT_MOVE_SCALED == 65 and REFILL_DIV_BITS == 31
    assert move_cycles(4, True) == 260 and move_cycles(4, False) == 12
    assert refill_cycles(3, 4) == 16 + 6 + 3 * 36 + 2


@pytest.mark.parametrize("params, seed, n", [
    (SMALL, 6, 100), pytest.param(SMALL, 4, 300, marks=pytest.mark.slow),
    pytest.param(dict(conns=8, paths=4), 5, 600, marks=pytest.mark.slow),
    pytest.param(dict(conns=2, paths=8), 7, 600, marks=pytest.mark.slow)])
def test_control_lockstep(params, seed, n):
    """MR-CW-125..132, MR-CW-136..141, MR-CW-143, MR-CW-147/148; MR-CW-149..151, MR-CW-153
    (lvl48: the shadows read a cycle ahead, against the unchanged cycle model): random hinted traffic (hint changes up, down, to 0, above the line rate;
    re-opens; CE marks), the windows' updates after random delays, backpressure on ``m_setup``
    and ``m_ack``: 0 mismatches on every output every cycle; scaled and unscaled moves and
    refills with several calm paths made; every item taken in order; after every item and its
    answer the windows, W, debt and rate equal ``CwndModel``'s (unsplit)."""
    core, model, items = run(seed, n, params)
    assert core.mismatches == 0
    mv = model.moves
    assert mv["move"] >= 5 and 1 <= mv["scaled"] < mv["move"] and mv["refill"] >= 5, mv
    assert any(kind == "refill" and c >= refill_cycles(2, params["paths"])
               for kind, c in mv["cycles"])
    loop = model.loop
    assert len(loop.items) == len(items)
    for (k1, r1), (k2, r2) in zip(loop.items, items):
        assert k1 == k2 and all(r1[f] == v for f, v in r2.items())
    got = cc.check_after(loop.after, loop.items, cc.unsplit_expected(params, CFG, loop.items))
    assert got == sum(1 for k, _ in items if k == "ack")


@pytest.mark.parametrize("wrong, seed", [
    ("round", 2), pytest.param("order", 4, marks=pytest.mark.slow), ("mul_step", 2),
    pytest.param("ahead", 2, marks=pytest.mark.slow)])
def test_control_negative(wrong, seed):
    """MR-CW-133: the move's quotient rounded up, or the refill's calm paths served from the
    highest slot; MR-CW-142: the serial product one step short; MR-CW-152: the shadows read
    ahead at the slot in use, not the next: a mismatch on a move write."""
    with pytest.raises(Mismatch) as e:
        run(seed, 300, wrong=wrong)
    assert e.value.signal == "m_setup__payload"


@pytest.mark.slow
def test_control_block_elaborates():
    """MR-CW-134/144: the block the cost probe synthesizes (docs/hw/probes/
    cwnd_control_synth_46.py) elaborates to RTLIL with its shadows (MR-CW-141: the wide ones
    memories) and the band unit; MR-CW-135/136: without a carry chain its one adder is a prefix
    tree (the steps named)."""
    import importlib.util
    import pathlib
    from metaroce.commands.verilog import make_rtlil
    path = pathlib.Path(__file__).parents[1] / "docs/hw/probes/cwnd_control_synth_46.py"
    spec = importlib.util.spec_from_file_location("cwnd_control_synth_46", path)
    probe = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(probe)
    text = make_rtlil(probe.BLOCKS[0], 64)
    assert "sh_cwnd" in text and "sh_last_ece" in text and "band" in text
    assert "sh_active7" in text and "alu_g1" in text and "alu_g16" in text
