"""Retransmit unit RTL (hdl/retransmit.py) against its cycle model (models/retransmit.py) in the
Amaranth simulator: every output port compared on every cycle by the lockstep core shared with
the Verilator testbenches (tb/lockstep.py), driven by the unit's one driver
(models/retransmit_cases.py: idle cycles, random backpressure, counter reads); then the collected
reports and counters are checked against the model run one event at a time (MR-TX-050).
"""
import re

import pytest
from amaranth.back import verilog
from amaranth.hdl import ClockDomain, Module, Value
from amaranth.sim import Simulator

from metaroce.hdl.retransmit import Retransmit, retransmit_256x4
from metaroce.models import retransmit_cases as rc
from metaroce.models.retransmit import SMALL, RetransmitCycleModel
from metaroce.tb.lockstep import Core, drive_amaranth, model_port_lists


def _ports(dut, names):
    sig = {}
    for n in names:
        obj = dut
        for part in n.split("__"):
            obj = getattr(obj, part)
        sig[n] = Value.cast(obj)
    return sig


def run_lockstep(items, *, inst=SMALL, seed=0, **kw):
    """RTL and model on the same inputs, every output compared every cycle (MR-TX-050)."""
    conns, paths, pool = inst
    dut = Retransmit(64, conns=conns, paths=paths, pool=pool)
    top = Module()
    top.domains.sync = ClockDomain()
    top.submodules.dut = dut
    model = RetransmitCycleModel(64, conns, paths, pool)
    ins, outs = model_port_lists(model)
    sig = _ports(dut, ins + outs)
    drv = rc.Driver(model.lay, items, seed=seed, **kw)
    core = Core(model, ins, outs, {n: len(v) for n, v in sig.items()})
    sim = Simulator(top)
    sim.add_clock(1e-8)
    drive_amaranth(sim, core, drv, sig, busy=model.busy)
    sim.run()
    assert core.mismatches == 0
    rc.check(conns, paths, pool, items, drv.res)
    return dict(drv.res, compared=core.cycle)


def test_verilog_port_names():
    """MR-TX-002: the Verilog ports are exactly the model's ports plus clk and rst."""
    v = verilog.convert(retransmit_256x4(), name="retransmit")
    top = v[v.index("module retransmit("):]
    top = top[:top.index("endmodule")]
    ports = set(re.findall(r"^\s*(?:input|output)\s+(?:\[[^\]]+\]\s*)?(\w+);", top, re.M))
    names = RetransmitCycleModel.port_names()
    assert ports == set(names["inputs"]) | set(names["outputs"]) | {"clk", "rst"}


def test_bad_parameters():
    """MR-TX-001: sizes are powers of two; widths 64..512."""
    for kw in ({"conns": 100}, {"paths": 3}, {"pool": 1000}, {"pool": 8}):
        with pytest.raises(ValueError):
            Retransmit(64, **kw)
    with pytest.raises(ValueError):
        Retransmit(100)


@pytest.mark.parametrize("seed", [1, 2])
def test_lockstep_random(seed):
    """MR-TX-020..024, MR-TX-030..036, MR-TX-040, MR-TX-050: random sends and lossy ACKs with stale, bad
    and NAK items, idle cycles and backpressure: 0 mismatches, reports and counters (read
    through reg_addr/reg_data) equal the semantics."""
    items = rc.traffic(*SMALL, 300, seed=seed)
    res = run_lockstep(items, seed=seed, p_idle=0.2, p_bp=0.4)
    assert res["resend"] and res["acked"]


def test_lockstep_reference_endpoint_traffic():
    """MR-TX-051, MR-TX-050: the RTL on the reference endpoint's own sent packets and ACKs (a
    write over the lossy loopback): 0 mismatches, and its reports are the endpoint's
    decisions (test_retransmit_model checks the model against the endpoint)."""
    r = rc.endpoint_run(1)
    res = run_lockstep(r["items"], seed=5, p_idle=0.1, p_bp=0.3)
    lay = RetransmitCycleModel(64, *SMALL).lay
    ends = [d for ds in r["decisions"] for d in ds]
    assert [(x["slot"], x["chunk"]) for x in rc.decode(lay, res["resend"])] == [
        (d.slot, d.chunk) for d in ends if d.kind == "resend"]
    assert len(res["acked"]) == sum(d.kind == "acked" for d in ends)
