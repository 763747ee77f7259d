"""MR-RX-240, MR-ENG-288: ``Rx(cfg_sack=False)`` (the whole engine's RX) stores a path row's
configuration write with an empty SACK ring. RTL and model in lockstep (every output every
cycle, random idle cycles and backpressure) on path rows written with random SACK bitmaps and
then used; the negative control runs the same RTL against the model that keeps the field."""

import random

import pytest

from metaroce.hdl.rx import Rx
from metaroce.models import rx_cases as rc
from metaroce.models.engine import ENGINE_CFG_SACK, EngineModel
from metaroce.models.rx import TABLE_PATH, RxCycleModel, pack
from metaroce.tb.lockstep import AmaranthSim, Mismatch

SMALL = (256, 4, 256)


def _cases(s, seed):
    """Per path: a row with a random SACK bitmap (``cum`` random, ``high`` past the bitmap's top
    bit), then packets at cum, cum + 1, + 2, + 5, + 255, + 300 (each ACKed: the ACK's SACK is
    the ring's), then the row opened again."""
    rng = random.Random(seed)
    c = s.conns[0]
    out = []
    for p in range(s.lay.paths):
        cum = rng.getrandbits(24)
        row = {"cum": cum, "sack": rng.getrandbits(256) | 1 << 7, "high": (cum + 256) % (1 << 24)}
        out.append(rc.CfgWrite(TABLE_PATH, (c.qp << s.lay.path_bits) | p, pack(s.lay.path, row), f"sack{p}"))
        for d in (1, 2, 5, 0, 255, 300):
            out.append(s.write(c, path=p, psn=(cum + d) % (1 << 24), plen=4, name=f"sack{p}+{d}"))
        out.append(s.path_write(c.qp, p, c.psn[p]))
    return out


def _run(rtl_cfg_sack, model_cfg_sack, seed=3):
    s = rc.Setup(*SMALL, seed=seed)
    lay = s.lay
    dut = Rx(64, conns=lay.conns, paths=lay.paths, keys=lay.keys, streams=lay.streams, poison=True,
             cfg_sack=rtl_cfg_sack)
    model = RxCycleModel(64, lay.conns, lay.paths, lay.keys, streams=lay.streams, cfg_sack=model_cfg_sack)
    drv = rc.make_driver(64, s, _cases(s, seed), seed=seed, p_idle=0.2, p_bp=0.3)
    core = AmaranthSim(dut).run(model, drv)
    return core, drv.res


def test_cfg_sack_off_lockstep():
    """MR-RX-240: 0 mismatches with the field off on both sides, ACKs compared every cycle."""
    core, res = _run(False, False)
    assert core.mismatches == 0 and core.cycle > 0
    assert len(res["ack"]) >= 4 * 6


def test_cfg_sack_off_catches_the_field_kept():
    """MR-RX-240's negative control: the RTL without the field against the model with it."""
    with pytest.raises(Mismatch):
        _run(False, True)


@pytest.mark.filterwarnings("ignore::amaranth.hdl.UnusedElaboratable")     # not elaborated here
def test_engine_takes_no_sack_from_path_writes():
    """MR-ENG-288: the whole engine's RX (model and RTL) is built with ``cfg_sack`` off."""
    from metaroce.hdl.engine import Engine
    assert ENGINE_CFG_SACK is False
    assert EngineModel(64).rx.rx.rx.cfg_sack is False
    assert Engine(64).rx_half.rx.cfg_sack is False
