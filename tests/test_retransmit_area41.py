"""The retransmit unit's area cuts of session 41 (hdl/retransmit.py; docs/spec/hw-tx.md section
1.5o): the queues' stored items (MR-TX-421) and the probe bits packed in words (MR-TX-422).
Neither changes a cycle: the unit's locksteps (tests/test_retransmit_amaranth.py, the Verilator
one in tests/test_retransmit_rtl.py) run unchanged on them."""
import random

import pytest
from amaranth.hdl import Module, Signal
from amaranth.sim import Simulator

from metaroce.hdl import retransmit as R
from metaroce.models import records
from metaroce.models import retransmit_cases as rc
from metaroce.models.retransmit import SMALL, RetransmitCycleModel, layouts
from metaroce.tb.lockstep import Mismatch, run_amaranth, wrong_form


def _packed_bits_run(packed_bits, depth=64, cycles=600, seed=5):
    """``packed_bits`` (``_packed_bits`` or a wrong form) against a ``depth`` x 1 memory with a
    synchronous read that is not transparent: random writes (a word's bits written on
    consecutive edges, a read of the address being written) and reads; the cycles whose read
    data differs."""
    m = Module()
    rd, wr = packed_bits(m, depth, "bits")
    rng = random.Random(seed)
    ref, bad = [0] * depth, []

    async def bench(ctx):
        for cyc in range(cycles):
            a_w = rng.randrange(depth) if rng.random() < 0.5 else rng.randrange(4)
            a_r = a_w if rng.random() < 0.3 else rng.randrange(depth)
            en, d = rng.random() < 0.7, rng.randrange(2)
            ctx.set(wr.addr, a_w)
            ctx.set(wr.data, d)
            ctx.set(wr.en, en)
            ctx.set(rd.addr, a_r)
            await ctx.tick()
            if ctx.get(rd.data) != ref[a_r]:     # the read of the edge: before its write
                bad.append(cyc)
            if en:
                ref[a_w] = d

    sim = Simulator(m)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    return bad


def test_packed_bits_match_a_bit_memory():
    """MR-TX-422: the probe bits' words of four read and written as a ``depth`` x 1 memory with
    a synchronous, not transparent read: every cycle's read equal, at depths 16 and 64."""
    for depth in (16, 64):
        assert _packed_bits_run(R._packed_bits, depth) == []


PACKED_WRONG = {
    # the write's word from the read port's word (another address): the other bits are lost
    "word_from_read_port": ("wr.data, old.data[i])", "wr.data, r.data[i])"),
    # the word of the edge's write, not the stored word before it (a transparent read)
    "transparent": ("rd.data.eq(r.data.bit_select(rd.addr[:lb], 1))",
                    "rd.data.eq(Mux(wr.en & (wr.addr == rd.addr), wr.data, "
                    "r.data.bit_select(rd.addr[:lb], 1)))"),
    # the bit selected by the word's address bits, not the lane's
    "lane_select": ("r.data.bit_select(rd.addr[:lb], 1)", "r.data.bit_select(rd.addr[lb:lb + lb], 1)"),
}


@pytest.mark.parametrize("wrong", sorted(PACKED_WRONG))
def test_packed_bits_wrong_forms_fail(wrong):
    """MR-TX-422: each wrong form of the packed bits (a write's word from the other read port,
    a transparent read, the lane chosen by the wrong address bits) reads a wrong bit."""
    old, new = PACKED_WRONG[wrong]
    assert _packed_bits_run(wrong_form("retransmit", old, new)._packed_bits), "the wrong form passed"


def test_queues_hold_narrow_items():
    """MR-TX-421: at the engine's parameters (2 x 4, a pool of 256) the job queue holds a job
    without its conn and path (its row's: 9 bits fewer), the reports' and the verdicts' queues a
    path in its 2 bits, the ACK events' queue an srtt in DUR_BITS; the ports keep the model's
    layouts."""
    lay = layouts(2, 4, 256, health=True)
    job = R._stored_layout(lay.job, {"conn": 0, "path": 0})
    assert job.size == lay.job.size - 9 and "conn" not in dict(job) and "path" not in dict(job)
    for name in ("acked", "resend", "error", "probe"):
        st = R._stored_layout(getattr(lay, name), {"path": 2})
        assert st.size == getattr(lay, name).size - 6, name
    ev = R._stored_layout(lay.ackev, {"srtt": records.DUR_BITS})
    assert ev.size == lay.ackev.size - (records.TIME_BITS - records.DUR_BITS)
    u = R.Retransmit(64, conns=2, paths=4, pool=256, verdict_health=True)
    assert u.m_acked.payload.shape() == lay.acked and u.m_ackev.payload.shape() == lay.ackev


NARROW_WRONG = {
    # a report's path in one bit: paths 2 and 3 come out as 0 and 1
    "report_path_short": ('report_st = _stored_layout(lay.acked, {"path": pb})',
                          'report_st = _stored_layout(lay.acked, {"path": pb - 1})'),
    # the walker's path from the row's connection bits
    "walk_path_from_conn": ("w_path.eq(qjob.row[:pb])", "w_path.eq(qjob.row[pb:])"),
}


@pytest.mark.slow
@pytest.mark.parametrize("wrong", sorted(NARROW_WRONG))
def test_queues_narrow_wrong_forms_fail(wrong):
    """MR-TX-421: each wrong form of the narrowed items (a report's path cut to one bit, the
    walker's path taken from the row's connection bits) fails the random lockstep on 4 paths."""
    old, new = NARROW_WRONG[wrong]
    dut = wrong_form("retransmit", old, new).Retransmit(64, conns=SMALL[0], paths=SMALL[1], pool=SMALL[2])
    model = RetransmitCycleModel(64, *SMALL)
    items = rc.traffic(*SMALL, 200, seed=1)
    drv = rc.Driver(model.lay, items, seed=1, p_idle=0.2, p_bp=0.4)
    try:
        core = run_amaranth(dut, model, drv, busy=model.busy)
    except Mismatch:
        return
    assert core.mismatches, "the wrong form passed"


def test_packed_bits_signal_width():
    """MR-TX-422: the ports' address is the bit index's width (``depth`` x 1), the memory a
    quarter of the depth in words of four."""
    m = Module()
    rd, wr = R._packed_bits(m, 256, "bits")
    assert len(rd.addr) == len(wr.addr) == 8 and len(rd.data) == len(wr.data) == 1
    assert isinstance(rd.data, Signal)
