"""cocotb testbench: the engine's receive half (hdl/engine.py) under Verilator in a closed loop
with a model sender over the model fabric (MR-ENG-120..).

The loop is :class:`metaroce.models.cosim.Cosim` (simulator-independent): the sender endpoint
writes through the lossy, multipath fabric into the RTL's ``s_axis``; the RTL's ``m_ack``
records become ACK/NAK frames (the endpoint's own encoding) back through the fabric to the
sender; the host memory is an AXI4 slave in the driver. The RTL is driven by the fast loop of
:mod:`metaroce.tb.lockstep` (:func:`drive`, ``registered_outputs``: MR-ENG-103). With
``COSIM_LOCKSTEP=1`` the composed cycle model :class:`~metaroce.models.engine.EngineRxModel`
runs alongside and every output is compared every cycle (``mismatches`` counts them); without
it (the default: the model costs about ten times the RTL's evaluation) nothing is compared and
``mismatches`` is null.

``engine_cosim`` (``engine_tx_cosim``, ``engine_peer_cosim``, ``engine_pair_cosim``, ``engine_endpoint_cosim``)
    one closed-loop run, configured by ``COSIM_CONFIG`` (JSON of
    :class:`~metaroce.models.cosim.Config` fields; the instance's ``conns``/``paths``/``keys``
    must be the build's); results (:meth:`Cosim.result` plus ``mismatches``, ``lockstep``,
    ``wall_s``, ``cycles_per_s``) to ``COSIM_OUT`` (JSON); fails unless ``ok``.
"""
from __future__ import annotations

import json
import os
import time

import cocotb

from metaroce.models.cosim import Config, Cosim
from metaroce.models.cosim_tx import TxCosim, tx_model
from metaroce.models.engine import EngineRxModel

from .lockstep import Lockstep, drive, model_port_lists


def _mirror(core):
    """A compare that compares nothing (lockstep off): counts the cycle, returns the outputs."""
    def compare(ins, outs):
        core.cycle += 1
        return outs
    return compare


def _config(width):
    raw = json.loads(os.environ.get("COSIM_CONFIG", "{}"))
    if "latency" in raw:
        raw["latency"] = tuple(raw["latency"])
    return Config(**{**raw, "width": width}), os.environ.get("COSIM_LOCKSTEP", "0") == "1"


def _p_bp():
    """MR-ENG-153: ``COSIM_P_BP``, the backpressure of the engines' outputs and host memories
    in a run of two engines (default 0)."""
    return float(os.environ.get("COSIM_P_BP", "0"))


def _engine_kw(cfg):
    """The engine model's options of the run: the row scheduler (``COSIM_ROWS``), the rate hints
    (``cfg.hints``, MR-ENG-319: the block ``engine_hints``)."""
    return {"rows": _rows(), **({"hints": True} if cfg.hints is not None else {}),
            **({"rx_hint": True} if cfg.rx_hint else {})}


def _rows():
    """MR-ENG-298: ``COSIM_ROWS``, the engine under test built with the row scheduler (the
    block ``engine_rows``): its model too (default 0)."""
    return os.environ.get("COSIM_ROWS", "0") == "1"


async def _run(dut, model, drv, lockstep, busy, *, registered):
    """The loop on the RTL (with the model alongside when ``lockstep``); the result to
    ``COSIM_OUT``; fails unless ``ok`` and, with lockstep, 0 mismatches."""
    ins, outs = model_port_lists(model)
    h = Lockstep(dut, model, ins, outs)
    if not lockstep:
        h.core.compare = _mirror(h.core)
    for name in ins:
        getattr(dut, name).value = 0
    await h.start(monitor=False)
    t0 = time.perf_counter()
    # records wider than a data beat change at most once per record: read on change only
    watch = [n for n in outs if len(getattr(dut, n)) > 64]
    n = await drive(h, drv, busy=busy if lockstep else None, registered_outputs=registered,
                    watch=watch)
    wall = time.perf_counter() - t0
    res = drv.result()
    res.update({"lockstep": lockstep, "mismatches": h.mismatches if lockstep else None,
                "total_cycles": n, "wall_s": round(wall, 2),
                "cycles_per_s": round(n / wall) if wall else None})
    out = os.environ.get("COSIM_OUT")
    if out:
        with open(out, "w") as f:
            json.dump(res, f)
    assert res["ok"], f"closed loop failed: {json.dumps({k: v for k, v in res.items() if k != 'config'})}"
    assert not lockstep or h.mismatches == 0


@cocotb.test()
async def engine_cosim(dut):
    """The receive half (``engine_rx_256x4``) receiving from a model sender (MR-ENG-120)."""
    width = len(dut.s_axis__tdata)
    cfg, lockstep = _config(width)
    model = EngineRxModel(width, cfg.conns, cfg.paths, cfg.keys, streams=cfg.streams, outstanding=32)
    await _run(dut, model, Cosim(cfg), lockstep, model.busy, registered=True)


@cocotb.test()
async def engine_tx_cosim(dut):
    """The TX half (the block ``tx``) sending to a model receiver (MR-ENG-125)."""
    width = len(dut.m_axis__tdata)
    cfg, lockstep = _config(width)
    model = tx_model(width)
    await _run(dut, model, TxCosim(cfg), lockstep, model.active, registered=True)


@cocotb.test()
async def engine_peer_cosim(dut):
    """Two whole engines over the fabric (MR-ENG-138): the RTL (the block ``engine``) on ``h1``,
    its cycle model as the peer engine on ``h0``."""
    from metaroce.models.cosim_engine import PeerCosim
    from metaroce.models.engine import EngineModel
    width = len(dut.m_axis__tdata)
    cfg, lockstep = _config(width)
    model = EngineModel(width, **_engine_kw(cfg))
    await _run(dut, model, PeerCosim(cfg, p_bp=_p_bp()), lockstep, model.active, registered=True)


@cocotb.test()
async def engine_pair_cosim(dut):
    """Two whole engines over the fabric, both the RTL (MR-ENG-138): the pair build of the block
    ``engine`` (``h0__``/``h1__`` ports), :class:`EnginePairModel` alongside with lockstep."""
    from metaroce.models.cosim_engine import PeerCosim
    from metaroce.models.engine import EnginePairModel
    width = len(dut.h0__m_axis__tdata)
    cfg, lockstep = _config(width)
    model = EnginePairModel(width, **_engine_kw(cfg))
    await _run(dut, model, PeerCosim(cfg, pair=True, progress=_progress(), p_bp=_p_bp()), lockstep,
               model.active, registered=True)


@cocotb.test()
async def engine_endpoint_cosim(dut):
    """The whole engine against a model endpoint over the fabric, data both ways (MR-ENG-139):
    one instance of the pair build (``h1`` with ``COSIM_DIRECTION`` rx, ``h0`` with tx), the
    other idle; :class:`EnginePairModel` alongside with lockstep."""
    from metaroce.models.cosim_engine import EndpointCosim
    from metaroce.models.engine import EnginePairModel
    width = len(dut.h0__m_axis__tdata)
    cfg, lockstep = _config(width)
    model = EnginePairModel(width, **_engine_kw(cfg))
    drv = EndpointCosim(cfg, os.environ.get("COSIM_DIRECTION", "rx"), pair=True)
    await _run(dut, model, drv, lockstep, model.active, registered=True)


def _progress():
    """A long run's progress lines (``PeerCosim.snapshot`` with the wall time and the rate so
    far) into the simulation's log, which stays readable while it runs."""
    t0 = time.perf_counter()

    def show(snap):
        wall = time.perf_counter() - t0
        snap.update(wall_s=round(wall, 1), cycles_per_s=round(snap["cycle"] / wall) if wall else None)
        print("cosim progress " + json.dumps(snap), flush=True)
    return show
