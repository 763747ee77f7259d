"""The paced scheduler in the TX top (docs/spec/hw-tx.md section 2.9, MR-TX-232..239):
``Tx(pacing=True)`` (hdl/tx.py: ``PacedTxSched`` in the scheduler's place) and its cycle model
``TxCycleModel(pacing=True)`` (models/tx.py), driven by the engine's driver with the pacer's
write port (``tx_pace_cases.PacedTxDriver``); the lockstep in the Amaranth simulator."""
import pytest

from metaroce.hdl.tx import Tx
from metaroce.hdl.tx_pace import PacedTxSched
from metaroce.hdl.tx_sched import TxSched
from metaroce.models import tx_cases as xc
from metaroce.models import tx_pace_cases as pc
from metaroce.models.dma_read_cases import Layout
from metaroce.models.driver import run_alone
from metaroce.models.tx import INPUTS, OUTPUTS, SMALL, TxCycleModel
from metaroce.models.tx_pace import PACE_INPUTS, PACE_OUTPUTS
from metaroce.models.tx_sched import TxSchedModel
from metaroce.models.tx_sched_cases import wr_item
from metaroce.tb.lockstep import Mismatch, run_amaranth
from metaroce.tb.lockstep import flat_port_names

_SCHED = ("chunk_window", "mtu", "cwnd", "conn_window", "path_pkts", "ack_every", "resend_depth")
#: MR-TX-236: connection 0 opened at 5 Gb/s (a full frame's gap 1,821 ns, about 456 cycles: more
#: than the data path's time for a frame, so the pacer binds), connection 1 at the line rate;
#: rate writes in 1 % of the cycles from these rates
PACE = dict(rates=[5_000, 0], p_rate=0.01, rate_choices=(5_000, 10_000, 0))


def _sem():
    return TxSchedModel(SMALL["conns"], SMALL["streams"], SMALL["paths"], SMALL["depth"],
                        **{k: SMALL[k] for k in _SCHED})


#: MR-TX-236: the default lockstep's pacing: connection 0 at 50 Gb/s (a full frame's gap 183 ns,
#: 46 cycles), no rate writes after the opens, no loss
SHORT = dict(rates=[50_000, 0], p_rate=0.0)


def _short():
    """MR-TX-236: the default lockstep's work: a 3-MTU WRITE on connection 0 (paced: its second
    and third packets wait for the pacer's time) and a 1-MTU WRITE on connection 1."""
    mtu = SMALL["mtu"]
    mem = Layout(4 * mtu + 4096)
    return [wr_item(0, 0, 3 * mtu, wr_id=0, laddr=mem.base),
            wr_item(1, 0, mtu, wr_id=1, laddr=mem.base + 3 * mtu + 64)], mem


def _run(seed, n, *, rtl=False, dut_kw=None, **model_kw):
    items, mem = (_short() if n is None else
                  xc.traffic(_sem(), n, seed=seed, max_len=6 * SMALL["mtu"]))
    model = TxCycleModel(64, **SMALL, pacing=True, **model_kw)
    drv = pc.PacedTxDriver(model.lay, 64, items, mem, xc.templates(2, 4), seed=seed,
                           loss=0.0 if n is None else 0.1, mtu=SMALL["mtu"],
                           **(SHORT if n is None else PACE))
    if n is None:
        # the default run ends with its 4 frames out (MR-TX-152 (a)), not with the completions
        drv.expect_frames = 4
    core = None
    if rtl:
        core = run_amaranth(Tx(64, **SMALL, pacing=True, **(dut_kw or {})), model, drv,
                            busy=model.busy if n else (lambda: False))
    else:
        run_alone(model, drv)
    return model, drv, items, core


def test_pacing_off_ports_unchanged():
    """MR-TX-232..235: without ``pacing`` (the default) the TX top's scheduler
    is ``TxSched`` and its ports and the model's are MR-TX-103's; with it the scheduler is
    ``PacedTxSched`` and both add ``s_pace_write``, ``mtu_wl`` and ``line_mbps`` (the RTL's
    flattened ports equal the model's names); ``pace_ignored`` without ``pacing`` is refused."""
    plain, paced = Tx(64, **SMALL), Tx(64, **SMALL, pacing=True)
    assert type(plain.sched) is TxSched and isinstance(paced.sched, PacedTxSched)
    assert TxCycleModel.port_names() == {"inputs": list(INPUTS), "outputs": list(OUTPUTS)}
    assert TxCycleModel(64, **SMALL).port_names() == TxCycleModel.port_names()
    names = TxCycleModel(64, **SMALL, pacing=True).port_names()
    assert names == {"inputs": list(INPUTS) + PACE_INPUTS, "outputs": list(OUTPUTS) + PACE_OUTPUTS}
    assert flat_port_names(plain.signature) == set(INPUTS) | set(OUTPUTS)
    assert flat_port_names(paced.signature) == set(names["inputs"]) | set(names["outputs"])
    for cls in (Tx, TxCycleModel):
        with pytest.raises(ValueError):
            cls(64, **SMALL, pace_ignored=True)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_model_paced_frames_not_early(seed):
    """MR-TX-234, MR-TX-236, MR-TX-237: the paced engine's model (connection 0 at 5 Gb/s,
    random traffic with losses, idle cycles, backpressure, rate writes): no packet decided before
    its bounds (its connection's ``pace_until`` in the pacer then, and the one its connection's
    previous charge set), each charged full-MTU packet once and in order, and every frame on
    ``m_axis`` left at a ``now`` not before its packet's bounds; every work request completes
    (MR-TX-150's checker)."""
    check_paced_run(*_run(seed, 12)[:3])


def check_paced_run(model, drv, items):
    """test_model_paced_frames_not_early's checks of a paced TX model's run of ``items``."""
    r = pc.check_paced(model.paced, SMALL["mtu"])
    assert r["early"] == [] and r["forced"] == [] and r["charges_in_order"]
    assert r["charged"] >= 4 and r["moved"] >= 3
    assert pc.check_spacing(model.paced) == []
    f = pc.check_frames_left(model.paced, drv.res["left"])
    assert f["early"] == [] and f["same_count"] and f["frames"] == r["packets"]
    xc.check(_sem(), items, drv)


def test_model_condition_ignored_sends_early():
    """MR-TX-238, negative control: the engine's model with the scheduler's pacing condition
    left out (``pace_ignored``) decides packets before their bounds and sends frames on
    ``m_axis`` before them on seeds 1 and 3 of ``test_model_paced_frames_not_early``, and
    decides one early in the default lockstep's run."""
    for seed in (1, 3):
        model, drv, _, _ = _run(seed, 12, pace_ignored=True)
        assert pc.check_spacing(model.paced), seed
        assert pc.check_frames_left(model.paced, drv.res["left"])["early"], seed
    assert pc.check_spacing(_run(1, None, pace_ignored=True)[0].paced)


def _check_lockstep(model, drv, items, core, completions=True):
    assert core.mismatches == 0
    if completions:
        xc.check(_sem(), items, drv)
    r = pc.check_paced(model.paced, SMALL["mtu"])
    assert r["early"] == [] and r["forced"] == [] and r["charges_in_order"] and r["moved"]
    assert pc.check_spacing(model.paced) == []
    f = pc.check_frames_left(model.paced, drv.res["left"])
    assert f["early"] == [] and f["same_count"]
    return r


def test_lockstep_paced_tx_short():
    """MR-TX-236, MR-TX-237, MR-TX-239: the paced TX top (RTL) against its cycle model in the
    Amaranth simulator, every output every cycle, random backpressure on every output and AXI latency,
    the pacer's opens: the default run's work (:func:`_short`) until its 4 frames are out: 0
    mismatches; connection 0's second and third packets each decided 2 cycles after the first
    cycle at or past their ``pace_until`` (the pacer binds; the scheduler's MR-TXS-163 timing
    in the engine)."""
    model, drv, items, core = _run(1, None, rtl=True)
    r = _check_lockstep(model, drv, items, core, completions=False)
    assert r["charged"] == 4 and len(drv.res["frames"]) == 4
    waited = [(now - pu) // 4 for c, now, pu, _ in model.paced.packets if c == 0][1:]
    assert waited == [2, 2]


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_lockstep_paced_tx(seed):
    """MR-TX-236, MR-TX-237, MR-TX-254: the lockstep on the random runs of
    ``test_model_paced_frames_not_early`` (12 work requests, losses, idle cycles, rate writes;
    short last chunks, READs and atomics of the paced connection, each charged its own gap):
    0 mismatches, no packet nor frame before its bounds. (Slow: about 2,500 cycles each.)"""
    _check_lockstep(*_run(seed, 12, rtl=True))


def test_lockstep_condition_ignored_fails():
    """MR-TX-238, negative control: the RTL with the condition left out (``Tx(pacing=True,
    pace_ignored=True)``) mismatches the paced model on the default lockstep's run."""
    with pytest.raises(Mismatch):
        _run(1, None, rtl=True, dut_kw={"pace_ignored": True})
