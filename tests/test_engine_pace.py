"""Pacing at the whole engine, set by the host (docs/spec/hw-engine.md section 5h, MR-ENG-258..266):
``Engine(pacing=True)`` / ``EngineModel(pacing=True)`` (the TX half ``Tx(pacing=True)``, the
pacer's configuration and writes from the register block's pacing window, hw-regs.md
MR-REG-062..066), driven by the engine's loopback (models/cosim_engine.py) with the pacer set up
through AXI4-Lite (``pace_writes``)."""
import pytest

from metaroce.models import cosim_engine as ce
from metaroce.models import tx_pace_cases as pc
from metaroce.models.cosim import run_loop
from metaroce.models.engine import EngineModel

MTU = 1024
#: MR-ENG-260: the engine's line (64 bits at 6.4 ns a cycle) and a full frame's wire length
LINE_MBPS = 10_000
WL = pc.mtu_wire(MTU)
#: MR-ENG-263: connection 1 (the loopback's) at a quarter of the line: a gap of 3,642 ns
RATE = 2_500


def _pace(rate):
    return dict(mtu_wl=WL, line_mbps=LINE_MBPS, rates={0: 0, 1: rate})


def _run(nbytes, *, rate=RATE, pacing=True, pace=True, model_kw=None, rtl=None, **run_kw):
    """The loopback's WRITE of ``nbytes`` (one work request, no loss) on the paced engine's model
    (``pace``: the pacer set up through s_axil); ``rtl``: the Engine to run in lockstep."""
    drv, _, region, src = ce.loopback_run(64, nbytes, seed=3, loss=0.0, n_writes=1,
                                          pace=_pace(rate) if pace else None, **run_kw)
    model = EngineModel(64, max_frame=2048, pacing=pacing, **(model_kw or {}))
    core = None
    if rtl is None:
        run_loop(drv, model, model.active)
    else:
        from metaroce.tb.lockstep import run_amaranth
        core = run_amaranth(rtl, model, drv, busy=model.active)
    return ce.check(drv, region, src), drv, model, core


def _left(drv):
    return [(c, now) for c, now, _ in drv.res["left"]]


def _check_paced(drv, model, frames):
    """MR-ENG-261: frames not before their bounds, every full-MTU packet charged once in order,
    none forced, none decided early; returns check_paced's counts."""
    f = pc.check_frames_left(model.tx.paced, _left(drv))
    assert f["early"] == [] and f["same_count"] and f["frames"] == frames
    r = pc.check_paced(model.tx.paced, MTU)
    assert r["early"] == [] and r["forced"] == [] and r["charges_in_order"]
    assert pc.check_spacing(model.tx.paced) == []
    return r


def test_engine_pace_ports_and_default():
    """MR-ENG-258, MR-ENG-259: the paced engine's ports are the engine's (the pacer is reached
    through s_axil only), RTL and model alike; its TX half is ``Tx(pacing=True)`` and its
    register block has the pacing window; the default builds neither."""
    from metaroce.hdl.engine import Engine
    from metaroce.hdl.tx_pace import PacedTxSched
    from metaroce.hdl.tx_sched import TxSched
    plain, paced = Engine(64), Engine(64, pacing=True)
    assert type(plain.tx.sched) is TxSched and isinstance(paced.tx.sched, PacedTxSched)
    assert not plain.rx_half.regs.pacing and paced.rx_half.regs.pacing
    assert paced.signature.members.keys() == plain.signature.members.keys()
    names = EngineModel(64, pacing=True).port_names()
    assert names == EngineModel(64).port_names()
    flat = set()
    for name, member in paced.signature.members.items():
        flat |= {name} if member.is_port else {f"{name}__{k}" for k in member.signature.members}
    assert flat == set(names["inputs"]) | set(names["outputs"])
    for blk in (plain, paced):
        blk._MustUse__silence = True            # not elaborated here
    assert EngineModel(64).tx.paced is None and EngineModel(64, pacing=True).tx.paced is not None


def test_engine_paced_model():
    """MR-ENG-260, MR-ENG-261, MR-ENG-263: a 4-frame WRITE of connection 1 at 2.5 Gb/s (the pacer
    set through s_axil), random backpressure and memory latencies: placed byte for byte, the
    work request complete, no frame before its bounds, every charge moving the pacer's time, and
    the frames about a gap apart."""
    r, drv, model, _ = _run(4 * MTU)
    c = _check_paced(drv, model, 4)
    assert c["charged"] == 4 and c["moved"] == 4
    gap = -(-(WL + 24) * 8_000 // RATE)
    assert gap == 3_642
    left = [now for _, now in _left(drv)]
    assert left[-1] - left[0] >= 3 * gap - 200          # within the data path's jitter


def test_engine_line_rate_connection_not_slowed():
    """MR-ENG-262: connection 1 opened at the line rate (rate 0): the pacer never moves its time,
    and without backpressure and with fixed latencies its frames leave at the same ``now`` after
    its work request as the unpaced engine's (MR-TXS-444: that one without the memory heads,
    which the paced scheduler does not take: one cycle later each)."""
    kw = dict(rate=0, p_bp=0.0, latency=(1, 1))
    _, drv, model, _ = _run(4 * MTU, **kw)
    assert _check_paced(drv, model, 4)["moved"] == 0
    _, drv0, _, _ = _run(4 * MTU, pacing=False, pace=False, model_kw={"mem_head": False}, **kw)
    rel = lambda d: [now - d.res["wr_at"] for _, now, _ in d.res["left"]]     # noqa: E731
    assert rel(drv) == rel(drv0) and len(rel(drv)) == 4


def test_engine_condition_ignored_sends_early():
    """MR-ENG-263, negative control: the same run on the model with the scheduler's pacing
    condition left out (``pace_ignored``) sends frames before their bounds."""
    _, drv, model, _ = _run(4 * MTU, model_kw={"pace_ignored": True})
    assert pc.check_frames_left(model.tx.paced, _left(drv))["early"]


@pytest.mark.slow
def test_engine_paced_goodput():
    """MR-ENG-266: 16 frames at 2.5 Gb/s, no loss: the paced frames' wire rate between the first
    and the last departure equals the set rate within one frame over the span."""
    _, drv, model, _ = _run(16 * MTU)
    _check_paced(drv, model, 16)
    left = [now for _, now in _left(drv)]
    k = len(left)
    measured = (k - 1) * (WL + 24) * 8 * 1_000 / (left[-1] - left[0])       # Mb/s
    assert abs(measured - RATE) <= RATE / (k - 1), measured


@pytest.mark.slow
def test_engine_paced_lockstep_amaranth():
    """MR-ENG-264: the paced engine (RTL) and its model in lockstep on MR-ENG-263's run: 0
    mismatches; MR-ENG-261's checks."""
    from metaroce.hdl.engine import Engine
    r, drv, model, core = _run(4 * MTU, rtl=Engine(64, max_frame=2048, pacing=True))
    assert core.mismatches == 0
    c = _check_paced(drv, model, 4)
    assert c["moved"] == 4


@pytest.mark.slow
def test_engine_condition_ignored_lockstep_fails():
    """MR-ENG-265, negative control: the RTL with the condition left out mismatches the paced
    model."""
    from metaroce.hdl.engine import Engine
    from metaroce.tb.lockstep import Mismatch
    with pytest.raises(Mismatch):
        _run(4 * MTU, rtl=Engine(64, max_frame=2048, pacing=True, pace_ignored=True))
