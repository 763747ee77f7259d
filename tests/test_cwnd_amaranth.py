"""Congestion window RTL (hdl/cwnd.py) against its cycle model (models/cwnd.py) in the Amaranth
simulator: every output port compared on every cycle by the lockstep core shared with the
Verilator testbench (tb/lockstep.py), driven by the block's one driver (models/cwnd_cases.py:
idle cycles, random backpressure); then the checker (MR-CW-041)."""

import pytest

from metaroce.hdl.cwnd import Cwnd, cwnd_small
from metaroce.models import cwnd_cases as cc
from metaroce.models import protocol as P
from metaroce.models.cwnd import SMALL, CwndCycleModel, CwndModel
from metaroce.tb.lockstep import run_amaranth, verilog_ports


def run_lockstep(items, config, *, params=SMALL, seed=0, div_bits=2, carry_chain=None, **kw):
    dut = Cwnd(64, **params, div_bits=div_bits, carry_chain=carry_chain)
    model = CwndCycleModel(64, **params, div_bits=div_bits)
    drv = cc.Driver(model.lay, items, config, seed=seed, **kw)
    core = run_amaranth(dut, model, drv, busy=model.busy)
    assert core.mismatches == 0
    return cc.check(CwndModel(**params), config, drv.res["taken"], drv.res["updates"])


@pytest.mark.parametrize("params, cap, seed, div_bits", [
    (SMALL, 60_000, 1, 2),
    (SMALL, 60_000, 2, 1),
    (dict(conns=1, paths=1), 30_000, 3, 2),
    (dict(conns=4, paths=8), (1 << 24) - 1, 4, 2),
    pytest.param(SMALL, 20_000, 5, 2, marks=pytest.mark.slow)])
def test_lockstep_random(params, cap, seed, div_bits):
    """MR-CW-001..005, MR-CW-010..016, MR-CW-030/031, MR-CW-041: random setup writes (re-opens,
    rewrites, inactive paths) and ACK events (CE marks beyond the packets, wrapping times,
    saturating quotients, events that resolve nothing), idle cycles and backpressure: 0
    mismatches, every update the semantics'; the divider at two and at one quotient bit per
    cycle."""
    config = {"mtu": 1024, "beta_q": P.Q_ONE // 2 + seed, "cap": cap}
    items = cc.traffic(CwndModel(**params), 120 if seed != 5 else 2000, seed=seed)
    res = run_lockstep(items, config, params=params, seed=seed, p_idle=0.3, p_bp=0.5,
                       div_bits=div_bits)
    assert res["acks"] > 100


def test_lockstep_endpoint_trace():
    """MR-CW-040/041: the first records of the reference endpoint's trace (3 connections of 4, 2
    and 1 paths, CE marks) through the RTL back to back: 0 mismatches."""
    config, items, _ = cc.endpoint_trace()
    res = run_lockstep(items[:150], config, params=dict(conns=4, paths=4), seed=9, p_idle=0.0,
                       p_bp=0.0)
    assert res["acks"] > 100


@pytest.mark.slow
def test_lockstep_endpoint_trace_whole():
    """MR-CW-040/041: the whole endpoint trace through the RTL (slow: about 2,000 events)."""
    config, items, _ = cc.endpoint_trace()
    res = run_lockstep(items, config, params=dict(conns=4, paths=4), seed=10, p_idle=0.1,
                       p_bp=0.2)
    assert res["acks"] > 1000


@pytest.mark.slow
def test_verilog_port_names():
    """MR-CW-002: the Verilog ports are exactly the model's ports plus clk and rst."""
    ports = verilog_ports(cwnd_small(), "cwnd")
    names = CwndCycleModel.port_names()
    assert ports == set(names["inputs"]) | set(names["outputs"]) | {"clk", "rst"}


def test_lockstep_debt_clamped_to_a_smaller_w():
    """MR-CW-013/014, MR-CW-041: a cut with no budget left still clamps the debt to W, which a
    setup write (a path made inactive) made smaller than the debt; the semantics and the RTL
    agree record by record."""
    config = {"mtu": 1024, "beta_q": P.Q_ONE // 2, "cap": 1 << 20}
    items = [cc.setup_item(0, 0, 512, 512, 1, open_=1, fresh=1),
             cc.setup_item(0, 1, 20_000, 512, 1, fresh=1),
             cc.ack_item(0, 0, 256 * 1024, 256, 256, 1_000, 100_000),     # debt 10,256, no budget
             cc.setup_item(0, 1, 20_000, 512, 1, active=0),                 # W falls to 1,024
             cc.ack_item(0, 1, 1024, 1, 1, 2_000, 100_000)]                 # a cut of 0
    sem = CwndModel(**SMALL, **config)
    ups = [(sem.setup if k == "setup" else sem.ack)(r) for k, r in items]
    assert ups[2]["debt"] == 10_256 and ups[3]["wsum"] == 1024
    assert ups[4]["debt"] == 0 and ups[4]["cwnd"] == 20_000 - 1024
    res = run_lockstep(items, config, seed=1, p_idle=0.0, p_bp=0.0)
    assert res["records"] == 5


def test_lockstep_large_instance():
    """MR-CW-001/003, MR-CW-041: the large instance (4,096 connections x 8 paths, tables of
    4,096 and 32,768 records) on connections spread over its table: 0 mismatches."""
    from metaroce.models.cwnd import LARGE
    config = {"mtu": 4096, "beta_q": P.Q_ONE // 2, "cap": (1 << 24) - 1}
    items = cc.traffic(CwndModel(conns=4, paths=8), 60, seed=3, mtu=4096)
    items = [(k, dict(r, conn=r["conn"] * 1000 + 7)) for k, r in items]
    res = run_lockstep(items, config, params=LARGE, seed=3)
    assert res["acks"] > 50


def test_bad_divider():
    """MR-CW-031: the divider takes one or two quotient bits per cycle."""
    for k in (0, 3, 4):
        with pytest.raises(ValueError):
            Cwnd(64, div_bits=k)


@pytest.mark.parametrize("div_bits", [2, 1])
def test_lockstep_carry_form(div_bits):
    """MR-CW-032, MR-CW-041: the block in the form ``metaroce pnr`` elaborates (a target with
    carry chains and multipliers: ``+``, ``*``, a product's second row 0) in lockstep with the
    same cycle model as the generic form: 0 mismatches, every update the semantics'."""
    config = {"mtu": 4096, "beta_q": P.Q_ONE // 2 + 77, "cap": 200_000}
    items = cc.traffic(CwndModel(**SMALL), 100, seed=11, mtu=4096)
    res = run_lockstep(items, config, seed=11, p_idle=0.2, p_bp=0.3, div_bits=div_bits,
                       carry_chain=True)
    assert res["acks"] > 40


def test_arith_forms_agree():
    """MR-CW-032: each of the block's arithmetic forms (the product as two rows, the wide sum
    in two parts, the wrapping time compare, the positive difference, the saturating sum, min
    and max) gives Python's integer value, in the generic (prefix, carry-save) form and the
    carry-chain form, on random operands and the edges (0, all ones, equal times, a half
    turn apart)."""
    import random

    from amaranth.hdl import Module, Signal
    from amaranth.sim import Simulator

    from metaroce.hdl.cwnd import _CwArith
    m = Module()
    a, b, t0, t1, x, y = Signal(21), Signal(13), Signal(32), Signal(32), Signal(10), Signal(9)
    outs = {}
    for form in (False, True):
        A = _CwArith(m, form)
        s, c = A.product(a, b, f"p{form:d}")
        rs, rc = Signal(34, name=f"rs{form:d}"), Signal(34, name=f"rc{form:d}")
        m.d.comb += [rs.eq(s), rc.eq(c)]
        lo = Signal(18, name=f"lo{form:d}")
        m.d.comb += lo.eq(A.add_lo(rs, rc, 17, f"l{form:d}"))
        outs[form] = (A.add_hi(rs, rc, 17, lo, f"h{form:d}"), A.time_lt(t0, t1, f"t{form:d}"),
                      A.pos_sub(a, b, f"d{form:d}"), A.sat_add(x, y, 1023, f"s{form:d}"),
                      A.min(a, b, f"n{form:d}"), A.max(a, b, f"x{form:d}"))
    rng = random.Random(5)
    cases = [(0, 0, 0, 0, 0, 0), ((1 << 21) - 1, (1 << 13) - 1, (1 << 32) - 1, 0, 1023, 511),
             (5, 5, 7, 7, 1000, 24), (1, 2, 0, 1 << 31, 0, 1), (9, 3, 1 << 31, 0, 1023, 1)]
    cases += [(rng.getrandbits(21), rng.getrandbits(13), rng.getrandbits(32),
               rng.getrandbits(32), rng.getrandbits(10), rng.getrandbits(9)) for _ in range(300)]

    async def bench(ctx):
        for va, vb, v0, v1, vx, vy in cases:
            for sig, v in zip((a, b, t0, t1, x, y), (va, vb, v0, v1, vx, vy)):
                ctx.set(sig, v)
            want = (va * vb, int(P.time_lt(v0, v1)), max(va - vb, 0), min(vx + vy, 1023),
                    min(va, vb), max(va, vb))
            for form in (False, True):
                assert tuple(ctx.get(v) for v in outs[form]) == want, (form, va, vb, v0, v1)

    sim = Simulator(m)
    sim.add_testbench(bench)
    sim.run()
