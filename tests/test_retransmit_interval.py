"""The retransmit unit behind MR-ENG-299's frame interval (docs/spec/hw-tx.md section 1.5p,
MR-TX-453..456): stage 0 takes an event at most every ``take_gap(interval)`` cycles, and the
forwards of events closer than that are not built. RTL against the cycle model in the Amaranth
simulator (every output every cycle, tb/lockstep.py), at the engine's parameters."""
import pytest
from amaranth.back import rtlil

from metaroce.hdl.retransmit import Retransmit, retransmit_engine
from metaroce.models import records
from metaroce.models import retransmit_cases as rc
from metaroce.models.retransmit import RetransmitCycleModel, engine_params, take_gap
from metaroce.tb.lockstep import Mismatch, run_amaranth


def run(interval, n, seed, *, forward_gap=None, model_interval=None, n_paths=4):
    """The engine's instance (2 x 4, 256 records, the engine's RTO) at ``interval``, random
    traffic with idle cycles and backpressure: the driver's result, the take cycles checked."""
    conns, paths, pool, kw = engine_params(64)
    kw = dict(kw, interval=interval)
    dut = Retransmit(64, conns=conns, paths=paths, pool=pool, forward_gap=forward_gap, **kw)
    model = RetransmitCycleModel(64, conns, paths, pool,
                                 **dict(kw, interval=model_interval or interval))
    items = rc.traffic(conns, paths, pool, n, seed=seed, shared=2, ack_loss=0.125, black_hole=4,
                       n_paths=n_paths, rto_ns=model.rto_ns)
    drv = rc.Driver(model.lay, items, seed=seed, p_idle=0.1, p_bp=0.3, ns_per_cycle=256)
    core = run_amaranth(dut, model, drv, busy=model.busy)
    assert core.mismatches == 0
    rc.check_items(model, items, drv.res)
    return drv.res, core.cycle


def test_take_gap_and_engine_instance():
    """MR-TX-453: the take gap is half the frame interval, at least 1; MR-TX-455/456:
    ``retransmit_engine`` is the engine's unit (``Engine(64).tx.rtx``'s parameters) at
    MR-ENG-299's 8 for 64 bits; ``Tx`` and ``TxCycleModel`` hand their interval to the unit; the
    standalone default stays 1."""
    assert [take_gap(n) for n in (1, 2, 3, 4, 8, 16)] == [1, 1, 1, 2, 4, 8]
    from metaroce.hdl.engine import Engine
    from metaroce.hdl.tx import Tx
    from metaroce.models.tx import TxCycleModel
    u, e = Engine(64).tx.rtx, retransmit_engine(64)
    assert e.interval == records.frame_interval(64) == 8 and e.take_gap == 4
    assert (u.lay.conns, u.lay.paths, u.lay.pool, u.rto_ns, u.retry_limit, u.slot_log2, u.probes,
            u.ages) == (e.lay.conns, e.lay.paths, e.lay.pool, e.rto_ns, e.retry_limit,
                        e.slot_log2, e.probes, e.ages)
    assert Tx(64, interval=8).rtx.interval == 8
    assert TxCycleModel(64, interval=8).rtx.gate.interval == 4
    assert Retransmit(64).interval == RetransmitCycleModel(64).interval == Tx(64).rtx.interval == 1


def _signal_names(dut):
    text = rtlil.convert(dut, name="rtx")
    return {n for n in ("wb_prev", "s1a_same", "s1_same", "h_rec_wb", "h_erec_wb", "take_wait") if f"\\{n} " in text or f"\\{n}\n" in text}


@pytest.mark.slow
def test_forwards_built_by_gap():
    """MR-TX-454: at interval 8 (gap 4) no forward and no gate-free take: the RTL has the gate's
    count and none of the forwards' registers; at interval 1 every forward and no gate."""
    conns, paths, pool, kw = engine_params(64)
    at8 = _signal_names(Retransmit(64, conns=conns, paths=paths, pool=pool, **kw))
    at1 = _signal_names(Retransmit(64, conns=conns, paths=paths, pool=pool, **dict(kw, interval=1)))
    assert at8 == {"take_wait"}
    assert at1 == {"wb_prev", "s1a_same", "s1_same", "h_rec_wb", "h_erec_wb"}


def test_lockstep_engine_interval8():
    """MR-TX-453, MR-TX-454, MR-TX-456: the engine's instance at interval 8 against the model,
    random traffic on 4 paths of 2 connections (idle cycles, backpressure, a black-hole path's
    probe and timeouts): 0 mismatches, the reports equal the semantics, no two takes closer
    than 4 cycles and some exactly 4 apart (the gate, not the traffic, spaced them)."""
    res, _ = run(8, 20, 3)
    tk = res["taken"]
    assert min(b - a for a, b in zip(tk, tk[1:])) == 4


@pytest.mark.slow
@pytest.mark.parametrize("interval,seed", [(8, 1), (8, 2), (4, 1), (2, 1)])
def test_lockstep_engine_intervals(interval, seed):
    """MR-TX-453/454: longer random runs at interval 8 (gap 4: no forward), 4 (gap 2: S1b's
    forward of the event just ahead not built, the others kept) and 2 (gap 1: all): 0
    mismatches, takes at least ``take_gap`` apart."""
    res, _ = run(interval, 200, seed, n_paths=6)
    tk = res["taken"]
    assert min(b - a for a, b in zip(tk, tk[1:])) >= take_gap(interval)


def test_forwards_needed_without_the_gate():
    """MR-TX-456's negative control: the RTL without the forwards (``forward_gap=4``) at interval
    1 (no gate: events back to back) against the model at interval 1 mismatches, so the
    lockstep sees a missing forward."""
    with pytest.raises(Mismatch):
        run(1, 40, 3, forward_gap=4)
