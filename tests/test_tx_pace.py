"""The pacer joined into the TX scheduler, first slice (docs/spec/hw-tx-sched.md section 14,
MR-TXS-159..166): the scheduler's cycle model with the pacing condition and the per-frame
pacer's cycle model joined (models/tx_pace.py), its property (MR-TXS-165) and the RTL join
(hdl/tx_pace.py) against it in the Amaranth simulator."""
import pytest

from metaroce.hdl.tx_pace import PacedTxSched
from metaroce.hdl.tx_sched import TxSched
from metaroce.models import pacer as pm
from metaroce.models import protocol as P
from metaroce.models import tx_pace_cases as pc
from metaroce.models import tx_sched_cases as tc
from metaroce.models.driver import run_alone
from metaroce.models.tx_pace import PacedTxSchedCycleModel
from metaroce.models.tx_sched import OP_WRITE, SMALL, TxSchedCycleModel, TxSchedModel
from metaroce.tb.lockstep import Mismatch, run_amaranth


def _items(seed, n=30):
    return tc.traffic(TxSchedModel(**SMALL), n, seed=seed, max_len=6 * SMALL["mtu"], sends=0.3,
                      reads=0.05, atomics=0.05)


def _driver(model, items, seed, **kw):
    kw = dict(dict(rates=[100_000, 0], p_idle=0.2, p_bp=0.4, p_rate=0.01), **kw)
    return pc.PacedDriver(model.lay, items, mtu=SMALL["mtu"], seed=seed, **kw)


def _model_run(seed, n=30, drv_kw=None, **kw):
    items = _items(seed, n)
    model = PacedTxSchedCycleModel(64, **SMALL, **kw)
    drv = run_alone(model, _driver(model, items, seed, **(drv_kw or {})))
    return model, drv, items


#: MR-TXS-167's runs: a rate write in 3 % of the cycles, half of them with a time
RETIME = dict(p_rate=0.03, p_retime=0.5)


def test_pacing_off_is_the_block_as_it_was():
    """MR-TXS-159, MR-TXS-167, MR-TXS-181: without ``pacing`` (the default) neither the RTL nor
    the cycle model has the pacer's ports; with it both have ``m_pace``, ``s_turn`` and
    ``s_retime`` of PacerFrame's layouts, and ``line_mbps`` (MR-TXS-177)."""
    plain = TxSchedCycleModel(64, **SMALL).port_names()
    paced = TxSchedCycleModel(64, **SMALL, pacing=True).port_names()
    assert not any("pace" in n or "turn" in n for n in plain["inputs"] + plain["outputs"])
    assert set(paced["inputs"]) - set(plain["inputs"]) == {
        "m_pace__ready", "s_turn__valid", "s_turn__payload", "s_retime__valid",
        "s_retime__payload", "line_mbps"}
    assert set(paced["outputs"]) - set(plain["outputs"]) == {
        "m_pace__valid", "m_pace__payload", "s_turn__ready", "s_retime__ready"}
    assert "m_pace" not in TxSched(64, **SMALL).signature.members
    sig = TxSched(64, **SMALL, pacing=True).signature.members
    lay = pm.frame_layouts(SMALL["conns"])
    assert sig["m_pace"].signature.members["payload"].shape == lay["frame"]
    assert sig["s_turn"].signature.members["payload"].shape == lay["turn"]
    assert sig["s_retime"].signature.members["payload"].shape == lay["write"]


def test_join_ports_are_the_models():
    """MR-TXS-164: the join's ports are the scheduler's, the pacer's write port as
    ``s_pace_write``, ``mtu_wl`` and ``line_mbps``: the model's port names."""
    names = PacedTxSchedCycleModel(64, **SMALL).port_names()
    flat = set()
    for name, member in PacedTxSched(64, **SMALL).signature.members.items():
        if member.is_port:
            flat.add(name)
        else:
            flat |= {f"{name}__{k}" for k in member.signature.members}
    assert flat == set(names["inputs"]) | set(names["outputs"])


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_model_paced_frames_not_early(seed):
    """MR-TXS-160..162, MR-TXS-165: on the joined model (one connection opened below the line
    rate, the other at it, random rate writes, random traffic with losses, idle cycles and
    backpressure): no packet leaves before its connection's ``pace_until`` in the pacer, no
    charge needs its ``force``, every full-MTU packet is charged once, in order, and the pacer
    moved the time for some; every work request completes (MR-TXS-050's checker)."""
    model, drv, items = _model_run(seed)
    r = pc.check_paced(model, SMALL["mtu"])
    assert r["early"] == [] and r["forced"] == [] and r["charges_in_order"]
    assert r["charged"] >= 15 and r["moved"] >= 3 and r["packets"] > r["charged"]
    tc.check(TxSchedModel(**SMALL), items, drv.res)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_model_condition_ignored_sends_early(seed):
    """MR-TXS-165, negative control: the scheduler with the condition left out of its decision
    (``pace_ignored``) sends packets before ``pace_until`` on the same runs. (Whether a charge
    then needs its ``force`` depends on which of the connection's packets' charges the pacer
    sees: one request register per connection, MR-TXS-161, overwritten by the next packet's
    charge; since MR-TXS-176 charges every packet of a paced connection, seeds 2 and 3 have
    none.)"""
    model, _, _ = _model_run(seed, pace_ignored=True)
    r = pc.check_paced(model, SMALL["mtu"])
    assert r["early"] and (r["forced"] or seed != 1)


@pytest.mark.parametrize("rate, interval", [(0, 9), (100_000, 25), (50_000, 48)])
def test_model_turn_timing(rate, interval):
    """MR-TXS-161..163: one connection alone, one 8-MTU WRITE, no idle cycles, no
    backpressure, no loss, no ACKs before the end: at the line rate a full-MTU packet every 9
    cycles (the pacer's round trip); paced, one every gap (92 and 183 ns at 4 ns a cycle)
    rounded up to cycles plus 2, each 2 cycles after the first cycle whose ``now`` is not before
    its ``pace_until``."""
    items = [tc.wr_item(0, 0, 8 * SMALL["mtu"], wr_id=0, op=OP_WRITE)]
    model = PacedTxSchedCycleModel(64, **SMALL)
    run_alone(model, _driver(model, items, 0, rates=[rate, 0], p_idle=0, p_bp=0, p_rate=0,
                             loss=0, p_ack=0))
    t = [now for _, now, _, _ in model.packets]
    assert len(t) == 8
    assert [(b - a) // 4 for a, b in zip(t[1:], t[2:])] == [interval] * 6
    gap = pm.mtu_gap_ns(pc.mtu_wire(SMALL["mtu"]), rate or pc.LINE_MBPS)
    assert (interval - 2) * 4 >= gap > (interval - 3) * 4 or rate == 0
    if rate:
        # the first cycle whose now is not before pace_until, then 2 cycles (decided, taken)
        assert all(8 <= now - pu < 12 for _, now, pu, _ in model.packets[2:])


@pytest.mark.parametrize("rate, interval", [(200_000, 38), (5_000, 74)])
def test_model_short_turn_timing(rate, interval):
    """MR-TXS-180: one connection alone, 8 WRITEs of 64 bytes (154 wire bytes), no idle cycles,
    no backpressure: paced, each short packet's turn is back ``LAT_SHORT`` = 34 cycles after the
    pacer took it, so the packets go one per 38 cycles at most (152 ns: at 200 Gb/s, gap 8 ns)
    or one per gap rounded up to cycles plus 2 (5 Gb/s: 285 ns, 74 cycles); at the line rate
    they are not charged (the data path's pace, 2 cycles)."""
    assert pm.LAT_SHORT == 34
    for r, want in [(rate, interval), (0, 2)]:
        items = [tc.wr_item(0, k % 2, 64, wr_id=k, op=OP_WRITE) for k in range(8)]
        model = PacedTxSchedCycleModel(64, **SMALL)
        run_alone(model, _driver(model, items, 0, rates=[r, 0], p_idle=0, p_bp=0, p_rate=0,
                                 loss=0, p_ack=0))
        t = [now for _, now, _, _ in model.packets]
        assert len(t) == 8 and set(model.packet_wl) == {154}
        steps = [(b - a) // 4 for a, b in zip(t[1:], t[2:])]
        assert steps == [want] * 6 if r else min(steps) == want
        assert (interval - 2) * 4 >= P.pacing_gap_ns(154, rate) > (interval - 3) * 4 or rate > 5_000


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_model_retimed_frames_not_early(seed):
    """MR-TXS-167: with re-timing writes (a time 200 ns before to 600 ns after ``now``) in the
    run, still no packet leaves before its connection's ``pace_until`` in the pacer (a charge
    may now be forced: its frame left before a write moved the time); MR-TXS-050's checker."""
    model, drv, items = _model_run(seed, drv_kw=RETIME)
    r = pc.check_paced(model, SMALL["mtu"])
    assert r["early"] == [] and r["charges_in_order"]
    assert sum(1 for _, w in drv.res["pace_writes"] if w["set_time"]) >= 4 + SMALL["conns"]
    tc.check(TxSchedModel(**SMALL), items, drv.res)


def test_model_retime_not_joined_sends_early():
    """MR-TXS-167, negative control: the pacer's writes kept from the scheduler
    (``retime=False``): packets leave before ``pace_until`` on seeds 1, 3 and 4 of
    ``test_model_retimed_frames_not_early``."""
    early = [len(pc.check_paced(_model_run(seed, drv_kw=RETIME, retime=False)[0],
                                SMALL["mtu"])["early"]) for seed in (1, 3, 4)]
    assert all(early), early


#: MR-TXS-178's runs: connection 0 paced at 20 Gb/s throughout (its full frame's gap 455 ns, a
#: 512-byte packet's 250: longer than the short charge's round trip of 37 cycles), connection 1
#: at the line rate; no rate writes after the opens; READ responses on s_rsp too
SHORT = dict(rates=[20_000, 0], p_rate=0.0)


def _short_run(seed, **kw):
    items = tc.traffic(TxSchedModel(**SMALL), 30, seed=seed, max_len=3 * SMALL["mtu"],
                       sends=0.3, reads=0.15, atomics=0.15)
    rsps = tc.responses(TxSchedModel(**SMALL), 6, seed=seed, max_len=2 * SMALL["mtu"])
    model = PacedTxSchedCycleModel(64, **SMALL, **kw)
    drv = run_alone(model, _driver(model, items, seed, rsps=rsps, **SHORT))
    return model, drv, items, rsps


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_model_short_frames_own_gap(seed):
    """MR-TXS-175..178: random traffic (short last chunks, SENDs, READ requests, atomics, READ
    responses) with losses, idle cycles and backpressure: every packet of the paced connection
    is charged with its wire length and follows the one before by at least that one's own gap
    (``check_gaps``); none leaves before ``pace_until``, no charge forced, charged in order;
    every work request and response completes."""
    model, drv, items, rsps = _short_run(seed)
    g = pc.check_gaps(model, SHORT["rates"])
    assert g["close"] == [] and g["pairs"] >= 10 and g["short"] >= 3
    r = pc.check_paced(model, SMALL["mtu"])
    assert r["early"] == [] and r["forced"] == [] and r["charges_in_order"]
    # the paced connection's packets are all charged, the line rate's short ones not
    ch = [(c, wl) for (c, _, _, x), wl in zip(model.packets, model.packet_wl) if x]
    assert sum(c == 0 for c, _ in ch) == sum(p[0] == 0 for p in model.packets)
    assert all(wl >= SMALL["mtu"] + 74 for c, wl in ch if c == 1)       # full MTUs only
    assert {wl for c, wl in ch if c == 0} >= {90, 74 + 4}        # a READ request, a response
    tc.check(TxSchedModel(**SMALL), items, drv.res, rsps=rsps)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_model_full_only_charge_too_close(seed):
    """MR-TXS-178, negative control: the first slice's charge (full-MTU packets only,
    ``pace_full_only``) on the same runs: a packet follows a short one closer than its gap."""
    model, *_ = _short_run(seed, pace_full_only=True)
    assert pc.check_gaps(model, SHORT["rates"])["close"]


def test_packet_wire_lengths():
    """MR-TXS-175: a packet's wire length is the endpoint's ``wire_len`` of its frame (IPv4,
    untagged): the opcode's headers and the payload padded to 4 bytes."""
    from metaroce.models import codec, tx_sched as ts
    for op in range(8):
        for n in (0, 1, 3, 4, 511, 1024):
            f = codec.make(ts.wire_op(op), bytes(n))
            assert ts.packet_wl(op, n) == codec.wire_len(f) == len(codec.encode(f)), (op, n)
    assert ts.packet_wl(OP_WRITE, SMALL["mtu"]) == pc.mtu_wire(SMALL["mtu"])


def _lockstep(seed, n, dut_kw=None, drv_kw=None):
    items = _items(seed, n)
    model = PacedTxSchedCycleModel(64, **SMALL)
    drv = _driver(model, items, seed, **(drv_kw or {}))
    core = run_amaranth(PacedTxSched(64, **SMALL, **(dut_kw or {})), model, drv, busy=model.busy)
    return core, model, drv, items


@pytest.mark.parametrize("seed, n", [(1, 12), pytest.param(2, 30, marks=pytest.mark.slow),
                                     pytest.param(3, 30, marks=pytest.mark.slow)])
def test_lockstep_paced(seed, n):
    """MR-TXS-159..164, MR-TXS-166: the RTL join (TxSched with pacing and PacerFrame) against
    its cycle model, every output every cycle, random traffic with losses, idle cycles, random
    backpressure on every output, the pacer's opens and rate writes: 0 mismatches; then
    MR-TXS-050's checker and MR-TXS-165's. MR-TXS-356: the candidates' ops (the charges' wire
    lengths) from the ops' copy."""
    core, model, drv, items = _lockstep(seed, n)
    assert core.mismatches == 0
    tc.check(TxSchedModel(**SMALL), items, drv.res)
    r = pc.check_paced(model, SMALL["mtu"])
    assert r["early"] == [] and r["forced"] == [] and r["charges_in_order"] and r["moved"]


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 3])
def test_lockstep_retimed(seed):
    """MR-TXS-167: the RTL join against its model with re-timing writes (MR-TXS-167's runs):
    0 mismatches, no packet early. (Slow: the default lockstep covers the join.)"""
    core, model, drv, items = _lockstep(seed, 30, drv_kw=RETIME)
    assert core.mismatches == 0
    tc.check(TxSchedModel(**SMALL), items, drv.res)
    assert pc.check_paced(model, SMALL["mtu"])["early"] == []


@pytest.mark.slow
def test_lockstep_retime_not_joined_fails():
    """MR-TXS-167, negative control: the RTL join without the writes into ``s_retime``
    (``PacedTxSched(retime=False)``) mismatches the model on seed 1's retimed run."""
    with pytest.raises(Mismatch):
        _lockstep(1, 30, {"retime": False}, RETIME)


@pytest.mark.slow
def test_lockstep_condition_ignored_fails():
    """MR-TXS-166, negative control: the RTL with the condition left out (``pace_ignored``)
    mismatches the model on the default lockstep's run."""
    with pytest.raises(Mismatch):
        _lockstep(1, 12, {"pace_ignored": True})


def _short_lockstep(seed, n, dut_kw=None):
    items = tc.traffic(TxSchedModel(**SMALL), n, seed=seed, max_len=3 * SMALL["mtu"],
                       sends=0.3, reads=0.15, atomics=0.15)
    rsps = tc.responses(TxSchedModel(**SMALL), 2 if n < 12 else 4, seed=seed,
                        max_len=2 * SMALL["mtu"])
    model = PacedTxSchedCycleModel(64, **SMALL)
    drv = _driver(model, items, seed, rsps=rsps, **SHORT)
    core = run_amaranth(PacedTxSched(64, **SMALL, **(dut_kw or {})), model, drv,
                        busy=model.busy)
    return core, model, drv, items, rsps


@pytest.mark.parametrize("seed, n", [(1, 6), pytest.param(2, 30, marks=pytest.mark.slow)])
def test_lockstep_short_frames(seed, n):
    """MR-TXS-175..177, MR-TXS-179: the RTL join against its model on MR-TXS-178's traffic
    (short last chunks, SENDs, READ requests, atomics, READ responses; connection 0 paced at
    20 Gb/s) with losses, idle cycles and random backpressure: 0 mismatches; every packet of
    the paced connection follows the one before by its own gap; MR-TXS-050's checker."""
    core, model, drv, items, rsps = _short_lockstep(seed, n)
    assert core.mismatches == 0
    g = pc.check_gaps(model, SHORT["rates"])
    assert g["close"] == [] and g["short"] >= 3
    tc.check(TxSchedModel(**SMALL), items, drv.res, rsps=rsps)


def test_lockstep_full_only_fails():
    """MR-TXS-179, negative control: the RTL join charging the full-MTU packets only
    (``TxSched(pace_full_only=True)``, the first slice's charge) mismatches the model."""
    with pytest.raises(Mismatch):
        _short_lockstep(1, 6, {"pace_full_only": True})


@pytest.mark.slow
def test_tx_sched_paced_rtl_lockstep():
    """MR-TXS-166, MR-TXS-182: the join under Verilator (tb/tx_pace.py ``tx_pace_lockstep``,
    the block ``tx_sched_paced``): 200 random work requests (short last chunks of the paced
    connection among them, each charged its own gap), rate writes in 3 % of the cycles, half of
    them with a time (MR-TXS-167): 0 mismatches, no packet early."""
    from metaroce.blocks import BLOCKS
    from metaroce.sim import verilator as vl
    from metaroce.tb import build as tb_build
    b = tb_build.build(BLOCKS["tx_sched_paced"], 64)
    row = vl.run_one(b, "metaroce.tb.tx_pace", "tx_pace_lockstep", {"TXP_SEED": "1", "TXP_WRS": "200"},
                     out_var="TXP_OUT")
    assert row["mismatches"] == 0 and row["charged"] > 50 and row["moved"] > 10
    assert row["retimes"] > 20
