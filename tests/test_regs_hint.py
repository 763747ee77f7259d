"""The register block's hint window (docs/spec/hw-regs.md section 10, MR-REG-073..076): the map
with and without it, its ports, and ``Regs(hint=True)`` against ``RegsCycleModel(hint=True)``
in the Amaranth simulator (every output every cycle: the window's registers are outputs)."""
import random
import re

import pytest
from amaranth.back import verilog

from metaroce.hdl.regs import Regs
from metaroce.models import regs_cases as rc
from metaroce.models.regs import (HINT_BASE, HINT_OUTPUTS, HINT_REG_OF, PACE_BASE, RegFile, RegsCycleModel,
                                  c_header, markdown_table, register_map)
from metaroce.models.rx import layouts
from metaroce.tb.lockstep import Mismatch, run_amaranth

SMALL = (256, 4, 256)


def test_hint_map():
    """MR-REG-073, MR-REG-074: without ``hint`` (the default) the map, its table and its C header
    are unchanged; with it eight RW registers at 0x3A0..0x3BC after every other one (the
    pacing window's too), resets 0."""
    lay = layouts(*SMALL)
    plain, hinted = register_map(lay, eng=True), register_map(lay, eng=True, hint=True)
    assert register_map(lay, eng=True, hint=False) == plain
    assert "HINT_" not in markdown_table(plain) and "CC_ON" not in c_header(plain)
    extra = hinted.regs[len(plain.regs):]
    assert hinted.regs[:len(plain.regs)] == plain.regs
    assert [(r.name, r.offset, r.width, r.access, r.reset) for r in extra] == [
        ("HINT_LINE_MBPS", HINT_BASE, 19, "RW", 0), ("HINT_SHARE_NS", HINT_BASE + 4, 32, "RW", 0),
        ("HINT_MTU", HINT_BASE + 8, 13, "RW", 0), ("CC_ON", HINT_BASE + 12, 1, "RW", 0),
        ("CC_BETA_Q", HINT_BASE + 16, 17, "RW", 0), ("CC_CAP", HINT_BASE + 20, 24, "RW", 0),
        ("CC_LINE_MBPS", HINT_BASE + 24, 19, "RW", 0), ("CC_BASE_RTT_NS", HINT_BASE + 28, 20, "RW", 0)]
    both = register_map(lay, eng=True, pacing=True, hint=True)
    assert max(r.offset for r in both.regs if r.name.startswith("PACE_")) < HINT_BASE
    assert PACE_BASE < HINT_BASE and max(r.offset for r in extra) < 0x400


@pytest.mark.slow
def test_hint_verilog_ports():
    """MR-REG-075: ``Regs(hint=True)``'s Verilog ports are its model's: the block's plus one
    output per window register (slow: the lockstep below reaches every model port on the RTL)."""
    v = verilog.convert(Regs(conns=256, paths=4, keys=256, eng=True, hint=True), name="regs")
    top = v[v.index("module regs("):]
    top = top[:top.index("endmodule")]
    ports = set(re.findall(r"^\s*(?:input|output)\s+(?:\[[^\]]+\]\s*)?(\w+);", top, re.M))
    names = RegsCycleModel(*SMALL, eng=True, hint=True).port_names()
    assert ports == set(names["inputs"]) | set(names["outputs"]) | {"clk", "rst"}
    assert set(HINT_OUTPUTS) <= ports


def _items(seed, n=50):
    """The window's registers written (random data and strobes) and read back, among row
    writes; a read of each at the end."""
    rm = register_map(layouts(*SMALL), eng=True, hint=True)
    rng = random.Random(seed)
    regs = [rm.get(name) for name in HINT_REG_OF.values()]
    out = []
    for _ in range(n):
        r = rng.choice(regs)
        out.append(rc.Write(r.offset, rng.getrandbits(32), rng.choice([0xF, 0xF, 0x3, 0xC, 0x5]),
                            name=r.name.lower()))
        if rng.random() < 0.5:
            out.append(rc.Read(rng.choice(regs).offset, name="hint.read"))
    return out + rc.standard_items(rm, seed=seed, n_random=20)[:30] + [rc.Read(r.offset) for r in regs]


class _Watch:
    """The window's outputs seen at the end, and whether each took a non-zero value."""

    def __init__(self):
        self.last, self.nonzero = {}, set()

    def __call__(self, cycle, inp, out):
        for n in HINT_OUTPUTS:
            self.last[n] = out[n]
            if out[n]:
                self.nonzero.add(n)


class _Stale(RegsCycleModel):
    """Negative control: a model whose CC_CAP port shows the window's HINT_MTU (a wrong wire)."""

    def outputs(self):
        out = super().outputs()
        out["cc_cap"] = self.rf.value["HINT_MTU"]
        return out


def test_hint_lockstep():
    """MR-REG-076: ``Regs(hint=True)`` and ``RegsCycleModel(hint=True)`` in lockstep (every output
    every cycle; random idle cycles and backpressure on B, R and ``m_cfg``): 0 mismatches; every
    response and read as ``RegFile`` replaying the accesses; each window port ends at its
    register's value and every one took a non-zero value. Negative control: a model wiring
    ``cc_cap`` to another register mismatches."""
    p_idle, p_bp = rc.SHAPES["bp"]
    items = _items(11)
    model = RegsCycleModel(*SMALL, eng=True, hint=True)
    drv = rc.Driver(items, seed=11, sources=model.sources, p_idle=p_idle, p_bp=p_bp)
    watch = _Watch()
    dut = lambda: Regs(conns=SMALL[0], paths=SMALL[1], keys=SMALL[2], eng=True, hint=True)  # noqa: E731
    core = run_amaranth(dut(), model, drv, busy=model.busy, on_cycle=watch)
    assert core.mismatches == 0
    rf = rc.check(drv.items, drv.res, drv.ctr, model.lay, RegFile(model.lay, eng=True, hint=True))
    assert watch.last == {n: rf.value[r] for n, r in HINT_REG_OF.items()}
    assert watch.nonzero == set(HINT_OUTPUTS)
    bad = _Stale(*SMALL, eng=True, hint=True)
    with pytest.raises(Mismatch, match="cc_cap"):
        run_amaranth(dut(), bad, rc.Driver(items, seed=11, sources=bad.sources, p_idle=p_idle, p_bp=p_bp),
                     busy=bad.busy)
