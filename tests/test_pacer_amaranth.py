"""Pacing's per-frame part (hdl/pacer.py ``PacerFrame``, docs/spec/hw-cwnd.md MR-CW-093,
MR-CW-097/098) against its cycle model (models/pacer.py ``PacerFrameCycleModel``): every output
compared every cycle by the lockstep core (tb/lockstep.py) in the Amaranth simulator, with idle
cycles and random backpressure; then the checker; negative controls (wrong forms) mismatch."""
import pytest

from metaroce.hdl.pacer import PacerFrame
from metaroce.models import pacer as pm
from metaroce.models import pacer_cases as pc
from metaroce.models import protocol as P
from metaroce.tb.lockstep import Mismatch, run_amaranth, verilog_ports


def _run(conns, n, seed, config, **kw):
    items = pc.frame_items(conns, n, seed=seed, line_mbps=config["line_mbps"],
                           mtu_wl=config["mtu_wl"])
    model = pm.PacerFrameCycleModel(64, conns)
    drv = pc.FrameDriver(model.lay, items, config, seed=seed)
    core = run_amaranth(PacerFrame(conns, **kw), model, drv, busy=model.busy)
    return core, drv, items


@pytest.mark.parametrize("conns, seed, mtu_wl, line", [
    (16, 1, 4186, 100_000),
    # the 1- and 4-connection instances and the extreme frame lengths (the default run keeps
    # the registered instance)
    pytest.param(1, 2, 1114, 400_000, marks=pytest.mark.slow),
    pytest.param(4, 3, 8191, 25_000, marks=pytest.mark.slow)])
def test_pacer_frame_lockstep(conns, seed, mtu_wl, line):
    """MR-CW-098, MR-CW-093, MR-CW-097, MR-CW-102: writes (rates 0, 1, around and above the
    line rate, the field's largest; with and without a time) and frames (before, at and after
    the next send time, forced, across the 32-bit wrap; 30 % of another wire length than
    ``mtu_wl``) with idle cycles and backpressure: 0 mismatches; the turns are
    ``PacerFrameModel``'s; the kept gap is ``protocol.pacing_gap_ns``'s."""
    config = {"mtu_wl": mtu_wl, "line_mbps": line}
    core, drv, items = _run(conns, 300, seed, config)
    assert core.mismatches == 0
    counts = pc.check_frames(conns, config, drv.res["taken"], drv.res["turns"])
    assert counts["ok"] > 100 and counts["refused"] > 5 and counts["forced"] > 5
    assert counts["short"] > 20             # MR-CW-102: short frames of paced connections
    nows = [r["now"] for k, r in items if k == "frame"]
    assert min(nows) < 1 << 20 and max(nows) > (1 << 32) - (1 << 20)    # across the wrap
    sem = pm.PacerFrameModel(conns, **config)
    sem.write({"conn": 0, "rate": 1, "set_time": 0, "time": 0})
    assert sem.gap[0] == P.pacing_gap_ns(mtu_wl, 1) and sem.paced[0]
    sem.write({"conn": 0, "rate": 0, "set_time": 0, "time": 0})
    assert not sem.paced[0]


@pytest.mark.parametrize("wrong", ["floor", "plain_max", "kept_gap"])
def test_pacer_frame_wrong_forms_mismatch(wrong):
    """MR-CW-098, MR-CW-103: negative controls: the gap rounded down instead of up, max(next,
    now) as plain integers instead of on the wrapping counter, and the kept gap for every frame
    (no short frame's division), each mismatch the cycle model."""
    with pytest.raises(Mismatch):
        _run(16, 300, 1, {"mtu_wl": 4186, "line_mbps": 100_000}, wrong=wrong)


def test_pacer_frame_latencies():
    """MR-CW-097: a frame's turn is valid ``LAT_FRAME`` cycles after it was taken; a write keeps
    the block busy ``BUSY_WRITE`` cycles; the write is taken first."""
    model = pm.PacerFrameCycleModel(64, 2)
    lay = model.lay
    from metaroce.models.rx import pack
    cfg = {"mtu_wl": 4186, "line_mbps": 100_000}
    w = pack(lay["write"], {"conn": 1, "rate": 1000, "set_time": 1, "time": 50})
    f = pack(lay["frame"], {"conn": 1, "now": 60, "force": 0, "wl": 4186})
    out = model.step(dict(cfg, s_write__valid=1, s_write__payload=w, s_frame__valid=1,
                          s_frame__payload=f))
    assert out["s_write__ready"] == 1 and out["s_frame__ready"] == 0
    for _ in range(pm.BUSY_WRITE):
        assert model.step(dict(cfg, s_frame__valid=1, s_frame__payload=f))["s_frame__ready"] == 0
    assert model.step(dict(cfg, s_frame__valid=1, s_frame__payload=f))["s_frame__ready"] == 1
    outs = [model.step(dict(cfg, m_turn__ready=1)) for _ in range(pm.LAT_FRAME + 1)]
    assert [o["m_turn__valid"] for o in outs] == [0] * (pm.LAT_FRAME - 1) + [1, 0]


def test_pacer_frame_short_latency_and_gap():
    """MR-CW-100, MR-CW-101: a frame of a paced connection whose ``wl`` is not ``mtu_wl`` has its
    turn ``LAT_SHORT`` = 34 cycles after it was taken and its own gap (``pacing_gap_ns(wl,
    rate)``); a frame of ``mtu_wl`` the kept gap in ``LAT_FRAME``; a short frame of a connection
    not paced ``LAT_FRAME`` and no move."""
    from metaroce.models.rx import pack, unpack
    cfg = {"mtu_wl": 1114, "line_mbps": 400_000}
    assert pm.LAT_SHORT == 34
    for rate, wl, lat, pu in [(20_000, 602, pm.LAT_SHORT, 60 + P.pacing_gap_ns(602, 20_000)),
                              (20_000, 1114, pm.LAT_FRAME, 60 + P.pacing_gap_ns(1114, 20_000)),
                              (0, 602, pm.LAT_FRAME, 50)]:
        model = pm.PacerFrameCycleModel(64, 2)
        lay = model.lay
        w = pack(lay["write"], {"conn": 1, "rate": rate, "set_time": 1, "time": 50})
        model.step(dict(cfg, s_write__valid=1, s_write__payload=w))
        for _ in range(pm.BUSY_WRITE):
            model.step(cfg)
        f = pack(lay["frame"], {"conn": 1, "now": 60, "force": 0, "wl": wl})
        assert model.step(dict(cfg, s_frame__valid=1, s_frame__payload=f))["s_frame__ready"]
        outs = [model.step(dict(cfg, m_turn__ready=1)) for _ in range(lat + 1)]
        assert [o["m_turn__valid"] for o in outs] == [0] * (lat - 1) + [1, 0]
        assert unpack(lay["turn"], outs[lat - 1]["m_turn__payload"])["pace_until"] == pu


def test_pacer_frame_rate():
    """MR-CW-097: frames offered back to back with the turns taken at once: one taken every
    ``LAT_FRAME`` + 1 = 7 cycles."""
    from metaroce.models.rx import pack
    model = pm.PacerFrameCycleModel(64, 2)
    f = pack(model.lay["frame"], {"conn": 0, "now": 60, "force": 0, "wl": 4186})
    ins = {"mtu_wl": 4186, "line_mbps": 100_000, "s_frame__valid": 1, "s_frame__payload": f,
           "m_turn__ready": 1}
    takes = [c for c in range(70) if model.step(ins)["s_frame__ready"]]
    assert takes == list(range(0, 70, pm.LAT_FRAME + 1))


def test_pacer_frame_verilog_port_names():
    """MR-CW-097: the Verilog ports of the registered block are the cycle model's plus clk and
    rst."""
    from metaroce.hdl.pacer import pacer_frame_small
    ports = verilog_ports(pacer_frame_small(), "pacer_frame")
    names = pm.PacerFrameCycleModel.port_names()
    assert ports == set(names["inputs"]) | set(names["outputs"]) | {"clk", "rst"}


def test_pacer_frame_lockstep_carry_form():
    """MR-CW-097/098: the carry-chain form of the adds and compares (``carry_chain=True``: what
    ``metaroce pnr`` places) in lockstep with the same cycle model: 0 mismatches."""
    config = {"mtu_wl": 4186, "line_mbps": 100_000}
    core, drv, _ = _run(16, 150, 4, config, carry_chain=True)
    assert core.mismatches == 0
    assert pc.check_frames(16, config, drv.res["taken"], drv.res["turns"])["ok"] > 50
