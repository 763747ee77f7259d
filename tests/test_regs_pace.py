"""The register block's pacing window (docs/spec/hw-regs.md section 4a, MR-REG-062..066): the
map with and without it, and ``Regs(pacing=True)`` against ``RegsCycleModel(pacing=True)`` in
the Amaranth simulator (every output every cycle, random idle cycles and backpressure on every
channel and on ``m_pace``), checked by the block's checker replaying the accesses."""
import random
import re

import pytest
from amaranth.back import verilog

from metaroce.hdl.regs import Regs
from metaroce.models import regs_cases as rc
from metaroce.models.regs import (PACE_BASE, PACE_INPUTS, PACE_OUTPUTS, RO, RegFile,
                                  RegsCycleModel, c_header, markdown_table, register_map)
from metaroce.models.rx import layouts, unpack
from metaroce.tb.lockstep import Mismatch, run_amaranth

SMALL = (256, 4, 256)


def test_pace_map():
    """MR-REG-062, MR-REG-063: without ``pacing`` (the default) the map, its table and its C
    header are unchanged (no PACE_ register); with it six registers at 0x380..0x394 after every
    other one, resets 0, the commit WO."""
    lay = layouts(*SMALL)
    plain, paced = register_map(lay), register_map(lay, pacing=True)
    assert register_map(lay, pacing=False) == plain
    assert not any(r.name.startswith("PACE_") for r in plain.regs)
    assert "PACE_" not in markdown_table(plain) and "PACE_" not in c_header(plain)
    extra = paced.regs[len(plain.regs):]
    assert paced.regs[:len(plain.regs)] == plain.regs
    assert [(r.name, r.offset, r.width, r.access, r.reset) for r in extra] == [
        ("PACE_MTU_WL", PACE_BASE, 13, "RW", 0), ("PACE_LINE_MBPS", PACE_BASE + 4, 19, "RW", 0),
        ("PACE_CONN", PACE_BASE + 8, 8, "RW", 0), ("PACE_RATE", PACE_BASE + 12, 19, "RW", 0),
        ("PACE_TIME", PACE_BASE + 16, 32, "RW", 0), ("PACE_COMMIT", PACE_BASE + 20, 2, "WO", 0)]
    assert max(r.offset for r in plain.regs if r.access == RO) < PACE_BASE
    # with the engine's counters too (the engine's map): the window is after them
    eng = register_map(lay, eng=True, pacing=True)
    assert max(r.offset for r in eng.regs if not r.name.startswith("PACE_")) < PACE_BASE


def test_pace_commit_semantics():
    """MR-REG-064: a commit with bit 0 and WSTRB[0] sends {PACE_CONN, PACE_RATE, set_time =
    bit 1, PACE_TIME}; without bit 0 or its strobe nothing (OKAY); the window keeps its values."""
    rf = RegFile(layouts(*SMALL), pacing=True)
    m = rf.map
    for name, v in (("PACE_CONN", 5), ("PACE_RATE", 2_500), ("PACE_TIME", 0x1234_5678)):
        assert rf.write(m.get(name).offset, v, 0xF) == (0, None, 0, 0)
    c = m.get("PACE_COMMIT").offset
    assert rf.write(c, 2, 0xF)[1] is None and rf.write(c, 3, 0xE)[1] is None
    assert rf.write(c, 3, 0x1)[1] == "pace"
    assert rf.pace_record() == {"conn": 5, "rate": 2_500, "set_time": 1, "time": 0x1234_5678}
    assert rf.write(c, 1, 0xF)[1] == "pace" and rf.pace_record()["set_time"] == 0
    assert rf.read(c, 0)[0] != 0            # WO: SLVERR


def test_pace_verilog_ports():
    """MR-REG-065: ``Regs(pacing=True)``'s Verilog ports are its model's (the block's and
    ``m_pace``, ``pace_mtu_wl``, ``pace_line_mbps``) plus clk and rst."""
    v = verilog.convert(Regs(conns=256, paths=4, keys=256, pacing=True), name="regs")
    top = v[v.index("module regs("):]
    top = top[:top.index("endmodule")]
    ports = set(re.findall(r"^\s*(?:input|output)\s+(?:\[[^\]]+\]\s*)?(\w+);", top, re.M))
    names = RegsCycleModel(*SMALL, pacing=True).port_names()
    assert ports == set(names["inputs"]) | set(names["outputs"]) | {"clk", "rst"}
    assert set(PACE_INPUTS) | set(PACE_OUTPUTS) <= ports


class _WrongSetTime(RegsCycleModel):
    """Negative control: a model whose pacing commit drops set_time (bit 1)."""

    def outputs(self):
        out = super().outputs()
        if self.pacing:
            out["m_pace__payload"] &= ~(1 << (8 + 19))      # {conn 8, rate 19, set_time, time}
        return out


def _items(seed, n=60):
    rm = register_map(layouts(*SMALL), pacing=True)
    rng = random.Random(seed)
    return rc.pace_items(rm, rng, n) + rc.standard_items(rm, seed=seed, n_random=30)[:40]


@pytest.mark.parametrize("shape", ["none", "bp"])
def test_pace_lockstep(shape):
    """MR-REG-066: ``Regs(pacing=True)`` and ``RegsCycleModel(pacing=True)`` in lockstep (every
    output every cycle; random idle cycles and backpressure on B, R, ``m_cfg`` and ``m_pace``),
    pacing-window accesses mixed with row writes: 0 mismatches, and every response, read and
    pacer write as ``RegFile`` replaying the accesses (MR-REG-064/065); some writes sent with
    and without set_time."""
    p_idle, p_bp = rc.SHAPES[shape]
    items = _items(7)
    model = RegsCycleModel(*SMALL, pacing=True)
    drv = rc.Driver(items, seed=7, sources=model.sources, pacing=True, p_idle=p_idle, p_bp=p_bp)
    core = run_amaranth(Regs(conns=SMALL[0], paths=SMALL[1], keys=SMALL[2], pacing=True), model,
                        drv, busy=model.busy)
    assert core.mismatches == 0
    rc.check(drv.items, drv.res, drv.ctr, model.lay, RegFile(model.lay, pacing=True))
    sent = [unpack(model.pace_lay, v) for v in drv.res["pace"]]
    assert len(sent) >= 3 and {s["set_time"] for s in sent} == {0, 1}


def test_pace_lockstep_wrong_model_fails():
    """MR-REG-066, negative control: the same run against a model that drops set_time
    mismatches."""
    items = _items(7)
    model = _WrongSetTime(*SMALL, pacing=True)
    drv = rc.Driver(items, seed=7, sources=model.sources, pacing=True, p_idle=0.0, p_bp=0.0)
    with pytest.raises(Mismatch):
        run_amaranth(Regs(conns=SMALL[0], paths=SMALL[1], keys=SMALL[2], pacing=True), model, drv,
                     busy=model.busy)
