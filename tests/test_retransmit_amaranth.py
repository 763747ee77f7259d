"""Retransmit unit RTL (hdl/retransmit.py) against its cycle model (models/retransmit.py) in the
Amaranth simulator: every output port compared on every cycle by the lockstep core shared with
the Verilator testbenches (tb/lockstep.py), driven by the unit's one driver
(models/retransmit_cases.py: idle cycles, random backpressure, counter reads); then the collected
reports and counters are checked against the model run one event at a time (MR-TX-050).
"""
import re

import pytest
from amaranth.back import verilog
from amaranth.hdl import Module

from metaroce.hdl.retransmit import Retransmit, retransmit_256x4
from metaroce.models import protocol as P
from metaroce.models import retransmit_cases as rc
from metaroce.models.retransmit import CTR, SMALL, RetransmitCycleModel, layouts
from metaroce.models.rx import unpack
from metaroce.tb.lockstep import Mismatch, run_amaranth, verilog_ports, wrong_form


def run_lockstep(items, *, inst=SMALL, seed=0, timers=None, width=64, ages=False, dut_cls=Retransmit,
                 **kw):
    """RTL and model on the same inputs, every output compared every cycle (MR-TX-050);
    ``timers``: rto_ns, retry_limit, slot_log2 of both; ``ages`` (MR-TX-203/204) of both."""
    conns, paths, pool = inst
    timers = timers or {}
    dut = dut_cls(width, conns=conns, paths=paths, pool=pool, ages=ages, **timers)
    model = RetransmitCycleModel(width, conns, paths, pool, ages=ages, **timers)
    drv = rc.Driver(model.lay, items, seed=seed, **kw)
    core = run_amaranth(dut, model, drv, busy=model.busy)
    assert core.mismatches == 0
    exp = rc.check_items(model, items, drv.res)
    return dict(drv.res, compared=core.cycle, model=model, exp=exp)


def test_verilog_port_names():
    """MR-TX-002: the Verilog ports are exactly the model's ports plus clk and rst."""
    ports = verilog_ports(retransmit_256x4(), "retransmit")
    names = RetransmitCycleModel.port_names()
    assert ports == set(names["inputs"]) | set(names["outputs"]) | {"clk", "rst"}


def test_bad_parameters():
    """MR-TX-001: sizes are powers of two; widths 64..512; MR-TX-062: timer constants in range."""
    for kw in ({"conns": 100}, {"paths": 3}, {"pool": 1000}, {"pool": 8}, {"rto_ns": 0},
               {"rto_ns": 1 << 24}, {"retry_limit": 15}, {"slot_log2": 21}):
        with pytest.raises(ValueError):
            Retransmit(64, **kw)
    with pytest.raises(ValueError):
        Retransmit(100)


@pytest.mark.parametrize("seed", [1, pytest.param(2, marks=pytest.mark.slow)])
def test_lockstep_random(seed):
    """MR-TX-020..024, MR-TX-030..036, MR-TX-040, MR-TX-050, MR-TX-068, MR-TX-070/071: random
    sends and lossy ACKs (SACK bits: the new floor from the top bit registered at the take)
    with stale, bad and NAK items, idle cycles and backpressure (``m_ackev`` included): 0
    mismatches, reports, ACK events and counters (read through reg_addr/reg_data) equal the
    semantics. MR-TX-209/210: the sent packets carry both laps, each report returns its
    record's."""
    items = rc.traffic(*SMALL, 300, seed=seed)
    res = run_lockstep(items, seed=seed, p_idle=0.2, p_bp=0.4)
    assert res["resend"] and res["acked"] and res["ackev"]
    lay = layouts(*SMALL)
    laps = {unpack(lay.acked, w)["lap"] for w in res["acked"] + res["resend"]}
    assert laps == {0, 1}


def test_lockstep_ack_events_held():
    """MR-TX-071: ``m_ackev`` ready one cycle in 20, so its queue fills and the walker holds
    ACKs' last records (and, through the walk queue, ``s_ack``), with the ACK events' srtt
    from RTT samples: 0 mismatches, every event equal to the semantics'."""
    items = rc.traffic(*SMALL, 200, seed=4)
    res = run_lockstep(items, seed=4, p_idle=0.0, p_bp=0.1, p_bp_ev=0.95)
    model = res["model"]
    assert len(res["ackev"]) == model.counters[CTR["acks"]] > 16


def test_lockstep_new_floor_carries():
    """MR-TX-039, MR-TX-037, MR-TX-050, MR-TX-311: the ACK's new floor ``cum + e`` registered in S1a is
    built from a 9-bit add of ``cum``'s low bits and the high part or its increment: one pair
    carrying enough packets that its ACKs' ``cum`` crosses several multiples of 512 (the
    increment taken), with lossy, stale and bad ACKs and backpressure: 0 mismatches; the
    ``sent`` and ``acked`` counters pass 256 (their upper pieces counted by the bank's shared
    increment) and are read at random addresses every cycle."""
    items = rc.traffic(*SMALL, 1400, seed=11, n_paths=1)
    cums = [it[1]["cum"] for it in items if it[0] == "ack" and not it[1]["nak"]]
    assert max(cums) >= 2 * 512                         # the carry into the high part happens
    res = run_lockstep(items, seed=11, p_idle=0.1, p_bp=0.3)
    assert res["acked"] and res["resend"]
    # MR-TX-311: counters past a low piece's wrap (the bank's shared increment), read each cycle
    assert res["model"].counters[CTR["sent"]] > 256 and res["model"].counters[CTR["acked"]] > 256


def _wrap_items(psn0):
    """The unit's random traffic (seed 3, 150 packets) with every pair starting at ``psn0``."""
    return rc.traffic(*SMALL, 150, seed=3, psn0=psn0)


def test_lockstep_psn_wrap():
    """MR-TX-474, MR-TX-471, MR-TX-472: random sends and lossy ACKs (stale, bad, NAK items),
    idle cycles and backpressure, every (connection, path) pair starting 8 PSNs below 2^24
    (the row takes its first packet's PSN), so most packets and ACKs are past the wrap: 0
    mismatches, reports and counters equal the semantics'."""
    items = _wrap_items(P.PSN_MOD - 8)
    sent = [f["psn"] for k, f in items if k == "sent"]
    assert sum(p < 1000 for p in sent) > len(sent) // 2 and max(sent) >= P.PSN_MOD - 8
    res = run_lockstep(items, seed=3, p_idle=0.2, p_bp=0.4)
    assert res["resend"] and len(res["acked"]) > 100
    assert res["model"].counters[CTR["sent_bad"]] > 0      # a wrong PSN past the first refused


@pytest.mark.slow
def test_lockstep_psn_wrap_plain_compare_fails():
    """MR-TX-477: the unit with an ACK's tests as plain unsigned PSN compares
    (``psn_plain``) mismatches the model on MR-TX-474's traffic across the wrap, and not on
    the same traffic from PSN 0."""
    import functools
    plain = functools.partial(Retransmit, psn_plain=True)
    with pytest.raises(Mismatch):
        run_lockstep(_wrap_items(P.PSN_MOD - 8), seed=3, p_idle=0.2, p_bp=0.4, dut_cls=plain)
    run_lockstep(_wrap_items(0), seed=3, p_idle=0.2, p_bp=0.4, dut_cls=plain)


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


@pytest.mark.slow
def test_lockstep_512():
    """MR-TX-001, MR-TX-050: the unit at the engine's 512-bit width (it has no data path, so
    nothing changes): random traffic with a path that loses everything, 0 mismatches."""
    timers = {"rto_ns": 3000, "retry_limit": 3, "slot_log2": 8}
    items = rc.traffic(*SMALL, 300, seed=9, black_hole=6, rto_ns=3000)
    res = run_lockstep(items, seed=9, timers=timers, width=512, p_idle=0.2, p_bp=0.4)
    assert res["resend"] and res["acked"] and res["model"].counters[CTR["timeouts"]]


@pytest.mark.parametrize("seed", [3, pytest.param(4, marks=pytest.mark.slow)])
def test_lockstep_timers(seed):
    """MR-TX-052, MR-TX-060..064, MR-TX-050: the same traffic with a path whose every packet
    is lost and waits past its deadline: tail-loss timeouts through the wheel with backoff, the
    error report beyond the retry limit, timers re-armed from the oldest live record after
    ACKs; 0 mismatches, every timeout due when it fired, no timer left running."""
    timers = {"rto_ns": 3000, "retry_limit": 3, "slot_log2": 8}
    items = rc.traffic(*SMALL, 300, seed=seed, black_hole=6, rto_ns=3000)
    res = run_lockstep(items, seed=seed, timers=timers, p_idle=0.2, p_bp=0.4)
    c = res["model"].counters
    assert c[CTR["timeouts"]] >= 6 and c[CTR["timeout_losses"]] >= 6
    assert len(res["error"]) == c[CTR["errors"]] == 1


def _late_acks_run(dut_cls=Retransmit):
    """``test_lockstep_timers``' traffic at seed 3 with ACKs held back and delivered late
    (``rc.traffic``'s stale ACKs): records a timeout reported lost, acknowledged later; RTL and
    model."""
    timers = {"rto_ns": 3000, "retry_limit": 3, "slot_log2": 8}
    items = rc.traffic(*SMALL, 300, seed=3, black_hole=6, rto_ns=3000)
    return run_lockstep(items, seed=3, timers=timers, p_idle=0.2, p_bp=0.4, dut_cls=dut_cls)


def test_lockstep_late_ack_of_timed_out_record_reported_late():
    """MR-TXS-445, MR-TXS-449, MR-TX-022, MR-TX-063, MR-TX-050: a record a timeout reported
    lost that an ACK acknowledges later is counted (``acked``), freed and reported on
    ``m_acked`` flagged ``late``: the lockstep's traffic has such records (the model's
    ``late_acked``), 0 mismatches, and the reports with their flags equal the semantics'.
    Negative control: ``test_lockstep_late_flag_dropped_mismatches`` (slow)."""
    res = _late_acks_run()
    m = res["model"]
    assert m.late_acked >= 1
    assert m.counters[CTR["acked"]] == len(res["acked"])
    assert sum(unpack(m.lay.acked, w)["late"] for w in res["acked"]) == m.late_acked


@pytest.mark.slow
def test_lockstep_late_flag_dropped_mismatches():
    """MR-TXS-449 (slow: the default run's budget): negative control of
    ``test_lockstep_late_ack_of_timed_out_record_reported_late``: the RTL without the flag (the
    unit before stl43) mismatches."""
    with pytest.raises(Mismatch):
        _late_acks_run(wrong_form("retransmit", "report.late.eq(~w_skip_zero)",
                                  "report.late.eq(0)").Retransmit)


@pytest.mark.slow
def test_lockstep_late_ack_dropped_mismatches():
    """MR-TXS-445, MR-TXS-449: negative control: the RTL that frees a timed-out record's late
    ACK unreported (stl43's ``once``, MR-TXS-440) mismatches the model that reports it late."""
    with pytest.raises(Mismatch):
        _late_acks_run(wrong_form("retransmit", "acked_q.w_en.eq(to_acked)",
                                  "acked_q.w_en.eq(to_acked & w_skip_zero)").Retransmit)


def test_joins_the_rx_engines_ack_stream():
    """MR-TX-003: the unit's s_ack is the RX engine's m_ack flipped, so a peer's RX engine and
    this unit join with wiring.connect (the same layout, the same instance sizes)."""
    from amaranth.lib import wiring

    from metaroce.hdl.rx import Rx
    rx_dut = Rx(64, conns=256, paths=4, keys=256)
    rtx = retransmit_256x4()
    assert rtx.signature.members["s_ack"].signature == rx_dut.signature.members["m_ack"].signature.flip()
    top = Module()
    top.submodules.rx = rx_dut
    top.submodules.rtx = rtx
    wiring.connect(top, rx_dut.m_ack, rtx.s_ack)


def test_lockstep_pool_exhaustion():
    """MR-TX-031, MR-TX-050: a pool of 16 records used up and refilled by ACKs, so that the
    free heads' prefetch (MR-TX-038) runs empty and a freed record is taken again at once:
    0 mismatches, nothing refused."""
    pool = 16
    items = [rc.sent_item(0, 0, i) for i in range(pool)] + [rc.ack_item(0, 0, 2, 0)]
    items += [rc.sent_item(1, 1, 0), rc.sent_item(1, 1, 1)]
    res = run_lockstep(items, inst=(4, 2, pool), seed=1, p_idle=0.0, p_bp=0.0)
    assert res["model"].free_level == 0 and res["model"].counters[CTR["sent_bad"]] == 0
    res = run_lockstep(rc.traffic(4, 2, pool, 150, seed=3), inst=(4, 2, pool), seed=3,
                       p_idle=0.1, p_bp=0.3)
    assert res["acked"]


def _rtt_items():
    """Eight paths' RTT samples: three records sent on each, then two rounds of ACKs whose
    samples are first, then smaller and larger than the first (the estimator's error of both
    signs), some ACKs of different paths a cycle apart while the estimator is busy."""
    rows = [(c, p) for c in range(2) for p in range(4)]
    items = [rc.sent_item(c, p, k, chunk=3 * i + k) for i, (c, p) in enumerate(rows)
             for k in range(3)]
    for k in (0, 1):
        for i, (c, p) in enumerate(rows):
            items += [rc.wait_item(150 + 90 * i * (1 if k == 0 else (-1) ** i)) if i % 3 else
                      ("wait", 0), rc.ack_item(c, p, k + 1, 0, psn=k)]
    return items


def test_lockstep_rtt_estimator():
    """MR-TX-054, MR-TX-050: RTT samples on eight paths (first samples, then second ones
    smaller and larger than the first: the estimator's error of both signs, and ACKs of
    different paths a cycle apart while the estimator is busy), their RTOs into the path rows,
    and the tails' timeouts at ACK + the new RTO: 0 mismatches, every RTO the semantics'
    (protocol.rtt_update_ns / rto_value_ns, the 2 us floor among them), every timeout due."""
    items = _rtt_items()
    # 1-ns wheel slots and 1 ns per cycle: a timeout's cycle is its deadline's, so the RTL's
    # RTO values are compared to the nanosecond, not to a slot
    res = run_lockstep(items, seed=11, timers={"rto_ns": 3000, "retry_limit": 3, "slot_log2": 0},
                       p_idle=0.0, p_bp=0.2, ns_per_cycle=1, idle_ns=1)
    m = res["model"]
    rtos = [e for e in m.events if e[0] == "rto"]
    assert 8 <= len(rtos) < 16 and len({e[4] for e in rtos}) > 4 and min(e[4] for e in rtos) == 2000
    assert m.counters[CTR["timeouts"]] == 8   # one tail per path of _rtt_items


def _lockstep_counting_collisions(mode, items, seed, inst=SMALL):
    """``run_lockstep``'s Amaranth lockstep of a unit built with ``collision_garbage=mode``
    (MR-TX-066), counting per table the cycles whose read data was replaced by garbage."""
    from metaroce.tb.lockstep import run_amaranth
    dut = Retransmit(64, conns=inst[0], paths=inst[1], pool=inst[2], collision_garbage=mode)
    model = RetransmitCycleModel(64, *inst)
    drv = rc.Driver(model.lay, items, seed=seed, p_idle=0.1, p_bp=0.3)
    hits = dict.fromkeys(dut.collision_hits, 0)

    async def count(ctx):
        async for _, _, *vals in ctx.tick().sample(*dut.collision_hits.values()):
            for n, v in zip(hits, vals):
                hits[n] += v
    core = run_amaranth(dut, model, drv, background=[count])
    return core, hits


@pytest.mark.slow
def test_block_ram_collision_reads_unused():
    """MR-TX-066, MR-FLOW-028: a read of the path table, the records, the links or the free
    ring that meets a write of its row is never used: with that read's data inverted in
    simulation the lockstep has 0 mismatches, over traffic with such cycles in every table (a
    pool of 16 records, so records are freed and taken again at once); the negative control
    inverts the reads that meet a write of another row, and the lockstep fails. The tables
    carry the attribute that lets the ECP5 build drop the collision logic."""
    inst = (4, 2, 16)
    items = rc.traffic(*inst, 300, seed=3)
    core, hits = _lockstep_counting_collisions("same", items, 3, inst)
    assert core.mismatches == 0
    assert hits["path"] > 50 and hits["rec"] >= 5 and hits["link"] >= 3 and hits["free"] > 50, hits
    with pytest.raises(Mismatch):
        _lockstep_counting_collisions("other", items, 3, inst)
    v = verilog.convert(Retransmit(64, conns=SMALL[0], paths=SMALL[1], pool=SMALL[2]), name="retransmit")
    for mem in ("path_mem", "rec_mem", "link_mem", "free_mem"):
        assert re.search(r'\(\* metaroce_collision = "x" \*\)\s*(\(\*[^)]*\*\)\s*)*reg \[\d+:0\] '
                         + mem + r' \[', v), mem
    with pytest.raises(ValueError):
        Retransmit(64, collision_garbage="all")



# MR-TX-072's wrong forms of cur_valid's next value, each loaded in place of the RTL by
# replacing its text in hdl/retransmit.py: a move of ct keeps the old slot's bit, an insert
# into slot ct does not set it, the pop of its last path does not clear it
CUR_VALID_WRONG = {
    "move_reads_old_slot": ("slot_valid.bit_select(ct_inc[:sb], 1)", "slot_valid.bit_select(cur, 1)"),
    "insert_not_set": ("Mux(ins_sets_cur, 1, ", "Mux(0, 1, "),
    "clear_left_out": ("Mux(clears_cur, 0, cur_valid)", "cur_valid"),
}


def _retransmit_with(old, new):
    """``Retransmit`` built from hdl/retransmit.py with ``old`` (once in the file) replaced by
    ``new``: a wrong form for a negative control. When ``old`` is not in the unit's file it is
    looked for in hdl/queue.py, and the unit is built on that wrong ``HeadRegFIFO``."""
    import importlib.util
    with open(importlib.util.find_spec("metaroce.hdl.retransmit").origin) as f:
        if old in f.read():
            return wrong_form("retransmit", old, new).Retransmit
    imp = "from .queue import HeadRegFIFO"
    unit = wrong_form("retransmit", imp, imp)       # a fresh copy of the unit's module
    unit.HeadRegFIFO = wrong_form("queue", old, new).HeadRegFIFO
    return unit.Retransmit


def _wheel_cur_valid_run(dut_cls=Retransmit, seed=3, slot_log2=12):
    """The timers' lockstep (``test_lockstep_timers``' traffic) of ``dut_cls`` with an observer
    of the wheel: ``(core, bad, seen)``, ``bad`` the cycles whose ``cur_valid`` differs from
    ``slot_valid[ct mod 64]`` on the RTL's own state, ``seen`` the cycles by how it moved."""
    from metaroce.models.retransmit import WHEEL_SLOTS
    timers = {"rto_ns": 3000, "retry_limit": 3, "slot_log2": slot_log2}
    items = rc.traffic(*SMALL, 300, seed=seed, black_hole=6, rto_ns=3000)
    dut = dut_cls(64, conns=SMALL[0], paths=SMALL[1], pool=SMALL[2], **timers)
    model = RetransmitCycleModel(64, *SMALL, **timers)
    drv = rc.Driver(model.lay, items, seed=seed, p_idle=0.2, p_bp=0.4)
    bad, seen = [], dict.fromkeys(("cycles", "valid", "set", "clear", "moved_onto", "moved"), 0)

    async def watch(ctx):
        pr, last = dut.probe, None
        async for _ in ctx.tick().sample():
            ct, cv, sv = ctx.get(pr["ct"]), ctx.get(pr["cur_valid"]), ctx.get(pr["slot_valid"])
            if cv != (sv >> (ct % WHEEL_SLOTS)) & 1:
                bad.append((seen["cycles"], ct, cv, sv))
            if last is not None:
                moved = ct != last[0]
                seen["moved"] += moved
                seen["moved_onto"] += moved and cv
                seen["set"] += not moved and cv > last[1]
                seen["clear"] += not moved and cv < last[1]
            seen["valid"] += cv
            seen["cycles"] += 1
            last = (ct, cv)
    core = run_amaranth(dut, model, drv, busy=model.busy, background=[watch])
    return core, bad, seen


def test_wheel_cur_valid_registered_exact():
    """MR-TX-072, MR-TX-060, MR-TX-038: the wheel's registered valid bit of slot ct
    (``cur_valid``) equals ``slot_valid[ct mod 64]`` on the RTL's own state in every cycle,
    under the timers' traffic with 4,096 ns slots, longer than the RTO, so inserts land in
    slot ct (and pops empty it, ct steps onto valid slots and past empty ones, jumps to the
    present), and the lockstep with the model has 0 mismatches (the check's take and the
    wheel's moves read the register)."""
    core, bad, seen = _wheel_cur_valid_run()
    assert core.mismatches == 0
    assert not bad, bad[:5]
    assert seen["set"] >= 3 and seen["clear"] >= 10 and seen["moved_onto"] >= 10, seen
    assert seen["moved"] >= 30 and seen["valid"] > 100, seen


@pytest.mark.parametrize("wrong", sorted(CUR_VALID_WRONG))
def test_wheel_cur_valid_wrong_forms_fail(wrong):
    """MR-TX-072: each wrong form of ``cur_valid``'s next value (a move of ct keeping the old
    slot's bit, an insert into slot ct not setting it, the pop of its last path not clearing
    it), loaded in place of the RTL, fails the timers' lockstep or the invariant."""
    try:
        core, bad, _ = _wheel_cur_valid_run(_retransmit_with(*CUR_VALID_WRONG[wrong]))
    except Mismatch:
        return
    assert core.mismatches or bad, "the wrong form passed"


# MR-TX-073's wrong forms, each loaded in place of the RTL (``_retransmit_with``) with the
# traffic that reaches it: a write filling the last slot keeps the room, a pop does not give
# the room back, the expiry flag from the wrong kind, w_trig's flag not following a decrement,
# the estimator's sample taken while it is busy
WALKER_WRONG = {
    # these two are HeadRegFIFO's (hdl/queue.py), the unit's output queues
    "fill_keeps_room": ("ackev", ("Mux(do_w & ~do_r, level != depth - 1, ",
                                  "Mux(do_w & ~do_r, 1, ")),
    "pop_no_room": ("ackev", ("level != depth - 1, do_r | w_rdy)", "level != depth - 1, w_rdy)")),
    "expire_wrong_kind": ("timers", ("w_expire.eq(qjob.kind == JOB_EXPIRE)",
                                     "w_expire.eq(qjob.kind == JOB_WALK)")),
    "trig_flag_stale": ("rtt", ("w_trig.eq(w_trig - 1), w_trig_zero.eq(w_trig == 1)",
                                "w_trig.eq(w_trig - 1)")),
    "start_while_busy": ("rtt", ("e_start.eq(to_acked & (e_stage == 0) & ~prb_rd.data)",
                                 "e_start.eq(to_acked & ~prb_rd.data)")),
}
QUEUES = ("acked_q", "resend_q", "error_q", "ackev_q")


def _walker_flags_run(case, dut_cls=Retransmit):
    """One lockstep of ``dut_cls`` with an observer of MR-TX-073's registers: ``(core, bad,
    seen)``, ``bad`` the cycles where a queue's ``w_rdy`` differs from ``level != 16``, the
    trigger flag from ``w_trig == 0`` or the expiry flag from the kind of the job last taken
    (``job_q``'s head at its take) on the RTL's own state. Cases: ``timers`` (a path losing
    everything: expiry walks; outputs ready one cycle in four), ``ackev`` (``m_ackev`` ready one
    cycle in 20: its queue full), ``rtt`` (RTT samples on eight paths, ACKs a cycle apart while
    the estimator is busy)."""
    from metaroce.models.retransmit import JOB_EXPIRE, JOB_RESTART, OUT_DEPTH
    timers = {"rto_ns": 3000, "retry_limit": 3, "slot_log2": 8}
    kw = {"p_idle": 0.2, "p_bp": 0.75}
    if case == "timers":
        seed, items = 3, rc.traffic(*SMALL, 300, seed=3, black_hole=6, rto_ns=3000)
    elif case == "ackev":
        seed, items, timers = 4, rc.traffic(*SMALL, 200, seed=4), {}
        kw = {"p_idle": 0.0, "p_bp": 0.1, "p_bp_ev": 0.95}
    else:
        items = _rtt_items()
        seed, timers = 11, {"rto_ns": 3000, "retry_limit": 3, "slot_log2": 0}
        kw = {"p_idle": 0.0, "p_bp": 0.2, "ns_per_cycle": 1, "idle_ns": 1}
    dut = dut_cls(64, conns=SMALL[0], paths=SMALL[1], pool=SMALL[2], **timers)
    model = RetransmitCycleModel(64, *SMALL, **timers)
    drv = rc.Driver(model.lay, items, seed=seed, **kw)
    bad = []
    seen = dict.fromkeys(("cycles", "expiry_walk", "trig_to_zero", "starts", "busy_trig")
                         + tuple(f"{q}_full" for q in QUEUES), 0)

    async def watch(ctx):
        pr, last = dut.probe, None
        async for _ in ctx.tick().sample():
            v = {n: ctx.get(s) for n, s in pr.items()}
            why = [q for q in QUEUES if v[f"{q}_w_rdy"] != (v[f"{q}_level"] != OUT_DEPTH)]
            if v["w_trig_zero"] != (v["w_trig"] == 0):
                why.append("w_trig_zero")
            if last is not None:
                took = last["job_r_en"] and last["job_kind"] != JOB_RESTART
                if took and v["w_expire"] != (last["job_kind"] == JOB_EXPIRE):
                    why.append("w_expire")
                if not took and last["w_state"] and v["w_expire"] != last["w_expire"]:
                    why.append("w_expire moved")
                seen["trig_to_zero"] += v["w_trig_zero"] and not last["w_trig_zero"] and not took
            if why:
                bad.append((seen["cycles"], why))
            for q in QUEUES:
                seen[f"{q}_full"] += v[f"{q}_level"] == OUT_DEPTH
            seen["expiry_walk"] += v["w_state"] == 2 and v["w_expire"]
            seen["starts"] += v["e_start"]
            seen["busy_trig"] += v["w_state"] == 2 and v["w_trig_zero"] and v["e_stage"] != 0
            seen["cycles"] += 1
            last = v
    core = run_amaranth(dut, model, drv, busy=model.busy, background=[watch])
    return core, bad, seen


@pytest.mark.parametrize("case", ["timers", "ackev", pytest.param("rtt", marks=pytest.mark.slow)])
def test_walker_flags_registered_exact(case):
    """MR-TX-073, MR-TX-065, MR-TX-054, MR-TX-032: the output queues' registered room equals
    ``level != 16``, the trigger flag ``w_trig == 0`` and the expiry flag the kind of the job
    taken, on the RTL's own state in every cycle, and the lockstep with the model has 0
    mismatches: expiry walks with the outputs mostly stalled (``timers``: the acknowledged
    queue full, the trigger flag set by decrements), the ACK events' queue full (``ackev``),
    RTT samples arriving while the estimator is busy (``rtt``, ``ackev``)."""
    core, bad, seen = _walker_flags_run(case)
    assert core.mismatches == 0
    assert not bad, bad[:5]
    if case == "timers":
        assert seen["expiry_walk"] >= 20 and seen["acked_q_full"] >= 100, seen
        assert seen["trig_to_zero"] >= 3, seen
    elif case == "ackev":
        assert seen["ackev_q_full"] >= 100 and seen["busy_trig"] >= 4, seen
    else:
        assert seen["starts"] >= 8 and seen["busy_trig"] >= 4, seen


@pytest.mark.parametrize("wrong", [pytest.param(w, marks=pytest.mark.slow) if w == "trig_flag_stale" else w
                                   for w in sorted(WALKER_WRONG)])
def test_walker_flags_wrong_forms_fail(wrong):
    """MR-TX-073: each wrong form (a write filling the last slot keeps the room, a pop does not
    give it back, the expiry flag from the wrong kind, the trigger flag not following a
    decrement, the estimator's sample taken while it is busy), loaded in place of the RTL,
    fails the lockstep or the invariants."""
    case, (old, new) = WALKER_WRONG[wrong]
    try:
        core, bad, _ = _walker_flags_run(case, _retransmit_with(old, new))
    except Mismatch:
        return
    assert core.mismatches or bad, "the wrong form passed"


# ------------------------------------------------------------------ tail probes (MR-TX-162..166)

PROBE_TIMERS = {"rto_ns": 3000, "retry_limit": 3, "slot_log2": 8}


@pytest.mark.parametrize("seed", [3, pytest.param(5, marks=pytest.mark.slow)])
def test_lockstep_tail_probes(seed):
    """MR-TX-162..165, MR-TX-050: traffic over two connections' paths with lost ACKs (1 in 8)
    and a path of one of them that loses everything: timers expiring while another path of
    the connection is healthy send tail probes (m_probe compared every cycle, under
    backpressure), the next expiries time out; 0 mismatches, every probe and timeout due and
    of the kind the semantics decides (MR-TX-050's replay)."""
    items = rc.traffic(*SMALL, 300, seed=seed, black_hole=6, rto_ns=3000, ack_loss=0.125, shared=2)
    res = run_lockstep(items, seed=seed, timers=PROBE_TIMERS, p_idle=0.2, p_bp=0.4)
    c = res["model"].counters
    # MR-TX-197: and each timeout's verdict on m_probe (MR-TX-201: counted by kind)
    assert len(res["probe"]) == c[CTR["tail_probes"]] + c[CTR["timeouts"]]
    assert c[CTR["tail_probes"]] >= 5 and c[CTR["timeouts"]] >= 6
    assert c[CTR["timeouts"]] == sum(c[CTR[k]] for k in ("path_keeps", "path_reroutes",
                                                         "paths_suspected", "paths_retired"))
    assert c[CTR["paths_suspected"]] and c[CTR["path_reroutes"]]


def _answered_probe_items():
    """Path 0 of connection 3 acknowledged; path 1's two packets' ACK lost, probed, the probe's
    ACK (triggered by the probed PSN) before the second expiry; then a packet on path 1 lost,
    whose timeout's date shows whether that ACK gave an RTT sample (MR-TX-165)."""
    c, p = 3, 1
    return [rc.sent_item(c, 0, 0), rc.ack_item(c, 0, 1, 0, psn=0), rc.sent_item(c, p, 0),
            rc.sent_item(c, p, 1), rc.wait_item(3000 + 6 * 256), rc.ack_item(c, p, 2, 0, psn=1),
            rc.sent_item(c, p, 2, chunk=9)]


def test_lockstep_tail_probe_answered():
    """MR-TX-162, MR-TX-165, MR-TX-050: the probe answered before the second expiry (no
    timeout), its ACK without an RTT sample, a later tail probed and timed out one RTO (the
    initial one) later: 0 mismatches."""
    res = run_lockstep(_answered_probe_items(), seed=2, timers=PROBE_TIMERS, p_idle=0.0, p_bp=0.2,
                       ns_per_cycle=4, idle_ns=4)
    m = res["model"]
    # the answer's progress clears the probe: the lost tail is probed again, then times out
    assert [e[0] for e in m.events if e[0] in ("probe", "timeout")] == ["probe", "probe", "timeout"]
    assert not [e for e in m.events if e[0] == "rto" and e[2] == 1]


PRB_EN_LINE = "prb_wr.en.eq(prb_sent | (s2_probe & ~s2_to))"
PROBE_BIT_WRONG = {
    # MR-TX-165: the walker's test of the probe bit removed
    "sample_taken": ("e_start.eq(to_acked & (e_stage == 0) & ~prb_rd.data)",
                     "e_start.eq(to_acked & (e_stage == 0))"),
    # MR-TX-242, MR-TX-364: the tail probe's late write dropped (the bit never set)
    "late_write_dropped": (PRB_EN_LINE, "prb_wr.en.eq(prb_sent)"),
    # MR-TX-364: the enable from S2b's flags, a cycle after the address register's event
    "enable_a_cycle_late": (PRB_EN_LINE, "prb_wr.en.eq(prb_sent | (s2b_probe_push & ~s2b_to))"),
    # MR-TX-364: the address by kind swapped (a check's bit at the free head)
    "address_kind_swapped": ("prb_s1.addr.eq(Mux(s1_kind == 3, row.tail, free_head))",
                             "prb_s1.addr.eq(Mux(s1_kind == 3, free_head, row.tail))"),
}


@pytest.mark.parametrize("case", sorted(PROBE_BIT_WRONG))
def test_lockstep_tail_probe_sample_wrong_form_fails(case):
    """MR-TX-165, MR-TX-242, MR-TX-364, MR-TX-366: the RTL taking the probed record's RTT sample
    (the walker's test of its probe bit removed, or the tail probe's write dropped; since
    MR-TX-364 also its enable from S2b's flags, a cycle late, or the address's kinds swapped) fails
    the lockstep of the answered probe (``test_lockstep_tail_probe_answered``, which passes with
    the bit written a cycle after S1b). Without the ages, as its positive test
    (``run_lockstep``'s default): with them path 0's progress has aged out by path 1's expiry
    at these few-ns RTT samples, so path 1 times out instead of being probed."""
    dut_cls = _retransmit_with(*PROBE_BIT_WRONG[case])
    dut = dut_cls(64, conns=SMALL[0], paths=SMALL[1], pool=SMALL[2], ages=False, **PROBE_TIMERS)
    model = RetransmitCycleModel(64, *SMALL, ages=False, **PROBE_TIMERS)
    drv = rc.Driver(model.lay, _answered_probe_items(), seed=2, p_idle=0.0, p_bp=0.2,
                    ns_per_cycle=4, idle_ns=4)
    try:
        core = run_amaranth(dut, model, drv, busy=model.busy)
    except Mismatch:
        return
    assert core.mismatches, "the wrong form passed"


def test_probes_off_leaves_m_probe_idle():
    """MR-TX-166: with ``probes=False`` (the TX top's setting) the same traffic never probes:
    m_probe stays idle, every expiry is a timeout, 0 mismatches against the model with probes
    off."""
    items = rc.traffic(*SMALL, 150, seed=3, black_hole=3, rto_ns=3000, ack_loss=0.125, shared=2)
    conns, paths, pool = SMALL
    dut = Retransmit(64, conns=conns, paths=paths, pool=pool, probes=False, **PROBE_TIMERS)
    model = RetransmitCycleModel(64, conns, paths, pool, probes=False, **PROBE_TIMERS)
    drv = rc.Driver(model.lay, items, seed=3, p_idle=0.2, p_bp=0.4)
    core = run_amaranth(dut, model, drv, busy=model.busy)
    assert core.mismatches == 0
    rc.check_items(model, items, drv.res)
    # MR-TX-197: m_probe carries the timeouts' verdicts only
    assert all(rc.unpack(model.lay.probe, w)["to"] for w in drv.res["probe"])
    assert len(drv.res["probe"]) == model.counters[CTR["timeouts"]] >= 3


def _health_forward_items(gap):
    """MR-TX-163: connection 9's path 1 due while a stream of stale ACKs of its path 0 holds
    the wheel's check back (an ACK goes first, MR-TX-033); the stream ends with path 0's first
    progress (its health bit set) followed by ``gap`` stale ACKs, so the check reaches S1b one
    (``gap`` 0: S1b's forward), two (``gap`` 1: S1a's forward) or three (``gap`` 2: S1a's
    forward of the memory's late write, MR-TX-241) events after that write."""
    c = 9
    items = [rc.sent_item(c, 1, 0), rc.sent_item(c, 0, 0), rc.wait_item(2600)]
    return items + [rc.ack_item(c, 0, 0, 0)] * 200 + [rc.ack_item(c, 0, 1, 0, psn=0)] + \
        [rc.ack_item(c, 0, 1, 0)] * gap


HEALTH_WRONG = {
    # S1b's forward dropped: the health row's, and since MR-TX-365 the registered select's
    0: ("h_fwd = hwb_valid & s1_hsame\n            h_fwd_next = h_write & s1_hsame_next",
        "h_fwd = Const(0, 1)\n            h_fwd_next = Const(0, 1)"),
    1: ("Mux(hwb_valid & s1a_hsame, hwb_data, h_base_in)", "Mux(0, hwb_data, h_base_in)"),
    # MR-TX-241's forward of the write made at the read's own edge dropped
    2: ("Mux(s1a_hsame_prev, hwb_prev, h_base_in)", "h_base_in"),
}


@pytest.mark.parametrize("gap", [0, pytest.param(1, marks=pytest.mark.slow), 2])
def test_health_forwarded(gap):
    """MR-TX-163, MR-TX-035, MR-TX-241: the check right behind the connection's first progress
    sees its health bit (a probe, not a timeout): 0 mismatches; with the forward of that stage
    removed from the RTL (it reads the health memory's old row) the lockstep fails."""
    timers = {"rto_ns": 3000, "retry_limit": 3, "slot_log2": 0}
    kw = {"p_idle": 0.0, "p_bp": 0.0, "ns_per_cycle": 4, "idle_ns": 4}
    res = run_lockstep(_health_forward_items(gap), timers=timers, **kw)
    assert [e[0] for e in res["model"].events if e[0] in ("probe", "timeout")] == ["probe", "timeout"]
    dut = _retransmit_with(*HEALTH_WRONG[gap])(64, conns=SMALL[0], paths=SMALL[1], pool=SMALL[2],
                                                **timers)
    model = RetransmitCycleModel(64, *SMALL, **timers)
    drv = rc.Driver(model.lay, _health_forward_items(gap), **kw)
    try:
        core = run_amaranth(dut, model, drv, busy=model.busy)
    except Mismatch:
        return
    assert core.mismatches, "the wrong form passed"


def test_lockstep_verdict_keep_on_ecn():
    """MR-TX-196, MR-TX-198, MR-TX-201: the connection's ECN bit through the RTL: path 0
    acknowledged with ECE, path 1's packet lost: its tail probe, then the timeout's verdict KEEP
    (congestion) where it would be a suspicion without the bit (``test_lockstep_tail_probes``);
    0 mismatches (m_probe and the counters compared every cycle)."""
    c = 9
    ece = dict(rc.ack_item(c, 0, 1, 0, psn=0)[1], ece=1, ce_count=2)
    items = [rc.sent_item(c, 0, 0), ("ack", ece), rc.sent_item(c, 1, 0), rc.wait_item(14000)]
    res = run_lockstep(items, timers=PROBE_TIMERS, p_idle=0.0, p_bp=0.3)
    got = [rc.unpack(res["model"].lay.probe, w) for w in res["probe"]]
    assert [(x["path"], x["to"], x["verdict"]) for x in got] == [(1, 0, 0), (1, 1, P.PATH_KEEP)]
    cnt = res["model"].counters
    assert cnt[CTR["path_keeps"]] == 1 and cnt[CTR["timeouts"]] == 1


# ------------------------------------------------------------------ health and ECN ages (MR-TX-203..206)

def _with_ece(items, seed, p=0.25):
    """``items`` with a share ``p`` of the ACKs echoing ECE with 1..3 CE marks (MR-TX-204)."""
    import random
    rng = random.Random(seed)
    out = []
    for it in items:
        if it[0] == "ack" and rng.random() < p:
            it = ("ack", dict(it[1], ece=1, ce_count=rng.randrange(1, 4)))
        out.append(it)
    return out


@pytest.mark.parametrize("seed", [3, pytest.param(5, marks=pytest.mark.slow)])
def test_lockstep_ages(seed):
    """MR-TX-203..205, MR-TX-050: ``test_lockstep_tail_probes``' traffic, a quarter of its ACKs
    echoing ECE, with the health and ECN ages on in both: 0 mismatches (m_probe's probes and
    verdicts compared every cycle under backpressure), and the replay's semantics (aged by
    ``RetransmitModel.health_now``/``ecn_now`` at each expiry) decide every probe and verdict."""
    items = _with_ece(rc.traffic(*SMALL, 300, seed=seed, black_hole=6, rto_ns=3000,
                                 ack_loss=0.125, shared=2), seed)
    res = run_lockstep(items, seed=seed, timers=PROBE_TIMERS, ages=True, p_idle=0.2, p_bp=0.4)
    c = res["model"].counters
    assert len(res["probe"]) == c[CTR["tail_probes"]] + c[CTR["timeouts"]]
    # the samples are tens of ns: the echoes and the progress age out within the RTO, so the
    # timeouts are reroutes (the directed test below has the KEEP of a recent echo)
    assert c[CTR["timeouts"]] >= 6 and c[CTR["path_reroutes"]]
    # the RTO events carried the srtt the health memory copies (MR-TX-203)
    assert res["model"].srtt_copy


def _stale_health_items():
    """Connection 9: path 0 acknowledged at once (its RTT sample a few ns: 4 srtt is tens of
    ns), then path 1's packet lost: at its expiry (3 us later) path 0's progress is older
    than its 4 RTTs."""
    c = 9
    return [rc.sent_item(c, 0, 0), rc.ack_item(c, 0, 1, 0, psn=0), rc.sent_item(c, 1, 0),
            rc.wait_item(14000)]


def _recent_ecn_items():
    """Connection 9: path 1's packet lost; 2.5 us later path 0's packet acknowledged with ECE:
    at path 1's expiry (3 us) the echo is within path 1's 4 srtt (srtt0 = 750 ns, no sample),
    path 0's progress is not within its own (a sample of a few ns). Then path 1's next packet
    lost, whose expiry comes long after the echo."""
    c = 9
    ece = dict(rc.ack_item(c, 0, 1, 0, psn=0)[1], ece=1, ce_count=1)
    return [rc.sent_item(c, 1, 0), rc.wait_item(2500), rc.sent_item(c, 0, 0), ("ack", ece),
            rc.wait_item(14000), rc.sent_item(c, 1, 1), rc.wait_item(20000)]


def _verdicts(res):
    return [(x["path"], x["to"], x["verdict"]) for x in
            (rc.unpack(res["model"].lay.probe, w) for w in res["probe"])]


AGES_WRONG = {
    "health": ("return (v[:lay.paths] & rec & ~s1a_path_bit).any()",     # MR-TX-365's form
               "return (v[:lay.paths] & ~s1a_path_bit).any()"),
    "ecn": ("ecn = ecn_raw & ecn_fresh", "ecn = ecn_raw | 0 & ecn_fresh"),
}


@pytest.mark.parametrize("case", ["health", "ecn"])
def test_lockstep_ages_directed(case):
    """MR-TX-203/204: a path whose last progress is older than its 4 RTTs is not healthy (path
    1 times out at once, REROUTE, where without the ages it is tail-probed, then SUSPECT); an
    ECE echo within the timed-out path's 4 RTTs is recent (KEEP at once; without the ages a
    probe first, as path 0's bit is set), one older is not (REROUTE; without the ages KEEP). 0 mismatches; the RTL without that age (MR-TX-205's
    negative control) fails the lockstep."""
    items = _stale_health_items() if case == "health" else _recent_ecn_items()
    kw = {"timers": PROBE_TIMERS, "p_idle": 0.0, "p_bp": 0.3, "ns_per_cycle": 4, "idle_ns": 4}
    aged, plain = run_lockstep(items, ages=True, **kw), run_lockstep(items, **kw)
    if case == "health":
        assert _verdicts(aged) == [(1, 1, P.PATH_REROUTE)]
        assert _verdicts(plain) == [(1, 0, 0), (1, 1, P.PATH_SUSPECT)]
    else:
        assert _verdicts(aged) == [(1, 1, P.PATH_KEEP), (1, 1, P.PATH_REROUTE)]
        assert _verdicts(plain) == [(1, 0, 0), (1, 1, P.PATH_KEEP), (1, 1, P.PATH_KEEP)]
    wrong = _retransmit_with(*AGES_WRONG[case])
    try:
        run_lockstep(items, ages=True, dut_cls=wrong, **kw)
    except (Mismatch, AssertionError):
        return
    raise AssertionError("the wrong form passed")


def test_wheel_increment_as_logic():
    """MR-TX-208: the wheel registers' increment written as logic is ``x + 1`` modulo 2^n for
    every 7-bit value (the wheel's timers' locksteps run it in place)."""
    from amaranth.hdl import Signal as Sig
    from amaranth.sim import Simulator
    from metaroce.hdl.retransmit import _inc
    m = Module()
    x, y = Sig(7), Sig(7)
    m.d.comb += y.eq(_inc(x))
    sim = Simulator(m)
    got = []

    async def bench(ctx):
        for v in range(128):
            ctx.set(x, v)
            got.append(ctx.get(y))
    sim.add_testbench(bench)
    sim.run()
    assert got == [(v + 1) % 128 for v in range(128)]


# ------------------------------------------------------------------ S1b's depth with the ages (MR-TX-211..214)

# MR-TX-365: "another path healthy", each side's OR and the forward select registered
OTHERS_LINE = "others_in = Mux(h_fwd_next, others_of(h_new, rec_wb_in), others_in)"
S1B_DEPTH_WRONG = {
    # MR-TX-211: "another path healthy" from the read row alone (the forward side dropped)
    "others_read_row_only": (OTHERS_LINE, "others_in = others_in"),
    # MR-TX-365: the forward side's OR registered from the forward register (a write late)
    "others_wb_stale": ("others_of(h_new, rec_wb_in)", "others_of(hwb_data, rec_wb)"),
    # MR-TX-365: the select registered from the forward flag before the edge (a cycle late), or
    # without S1b's health write (the write side taken when nothing is written)
    "others_select_late": ("h_fwd_next = h_write & s1_hsame_next", "h_fwd_next = h_fwd"),
    "others_select_without_write": ("h_fwd_next = h_write & s1_hsame_next", "h_fwd_next = s1_hsame_next"),
    # MR-TX-365: each side's OR excluding S1b's own path instead of the path of the event it serves
    "others_path_of_s1b": ("& rec & ~s1a_path_bit", "& rec & ~path_bit"),
    # MR-TX-212: S2a's valid without the job flag (the inflight count short)
    "s2_valid_without_job": ("m.d.comb += s2_valid.eq(s2_job | s2_ins | s2_err | s2_probe)",
                             "m.d.comb += s2_valid.eq(s2_ins | s2_err | s2_probe)"),
    # MR-TX-213: the health row's data by the wrong kind (a timeout writes an ACK's)
    "timeout_writes_ack_data": ("        with m.If(is_ack):\n            # a resolving ACK (MR-TX-163)",
                                "        with m.If(is_ack | is_check):\n            # a resolving ACK (MR-TX-163)"),
}


def _s1b_depth_run(case, dut_cls):
    if case == "others_read_row_only":
        kw = {"p_idle": 0.0, "p_bp": 0.0, "ns_per_cycle": 4, "idle_ns": 4}
        return run_lockstep(_health_forward_items(0), ages=True, dut_cls=dut_cls,
                            timers={"rto_ns": 3000, "retry_limit": 3, "slot_log2": 0}, **kw)
    if case == "s2_valid_without_job":
        items = rc.traffic(*SMALL, 300, seed=1)
        return run_lockstep(items, seed=1, ages=True, dut_cls=dut_cls, p_idle=0.0, p_bp=0.9)
    items = _with_ece(rc.traffic(*SMALL, 300, seed=3, black_hole=6, rto_ns=3000,
                                 ack_loss=0.125, shared=2), 3)
    return run_lockstep(items, seed=3, timers=PROBE_TIMERS, ages=True, dut_cls=dut_cls,
                        p_idle=0.2, p_bp=0.4)


@pytest.mark.parametrize("case", sorted(S1B_DEPTH_WRONG))
def test_s1b_depth_wrong_forms_fail(case):
    """MR-TX-211..214: each run passes with the RTL as built (0 mismatches, ages on) and fails
    with the wrong form: "another path healthy" without the forward side (the check right behind
    the connection's first progress), S2a's valid without the job flag (the take credit's
    inflight count short under heavy backpressure), a timeout writing an ACK's health data.
    MR-TX-365, MR-TX-366 ("another path healthy" registered a cycle ahead, each side's OR and the
    forward select): its forward side from the forward register (a write late), either side
    excluding S1b's own path rather than the path of the event it will serve, the select from
    the forward flag before the edge or without S1b's health write, each fails
    ``test_lockstep_ages``' traffic."""
    _s1b_depth_run(case, Retransmit)
    wrong = _retransmit_with(*S1B_DEPTH_WRONG[case])
    try:
        _s1b_depth_run(case, wrong)
    except (Mismatch, AssertionError):
        return
    raise AssertionError("the wrong form passed")


# ------------------------------------------------------------------ the tables written from registers (MR-TX-240..243)

LATE_WRITE_WRONG = {
    # MR-TX-240: the path table's forward of the write made at the read's own edge dropped
    "path_prev_dropped": ("Mux(s1a_same_prev, wb_prev, base_in)", "base_in"),
    # MR-TX-240: that forward's hit decided against S1b's row instead of the write's
    "path_prev_wrong_row": ("s1a_same_prev.eq(wb_valid & hit(lambda r: r == wb_addr))",
                            "s1a_same_prev.eq(wb_valid & hit(lambda r: r == s1_row))"),
}


@pytest.mark.parametrize("case", sorted(LATE_WRITE_WRONG))
def test_late_write_wrong_forms_fail(case):
    """MR-TX-240, MR-TX-243: the path table written a cycle after S1b from the forward register
    (``test_lockstep_random``'s traffic, seed 1, passes with the RTL as built); with the new
    forward of the write made at the read's edge dropped, or its hit decided on the wrong row,
    the lockstep fails (the read misses that write)."""
    items = rc.traffic(*SMALL, 300, seed=1)
    run_lockstep(items, seed=1, p_idle=0.2, p_bp=0.4)
    wrong = _retransmit_with(*LATE_WRITE_WRONG[case])
    try:
        run_lockstep(items, seed=1, p_idle=0.2, p_bp=0.4, dut_cls=wrong)
    except (Mismatch, AssertionError):
        return
    raise AssertionError("the wrong form passed")


# MR-TX-244's wrong forms (since MR-TX-344 the ages' recent bits, registered where the
# deadlines were): the forward side's not from S1b's write (from S1a's candidate row, or from
# the forward register: a write late), the read side's from the memory's read without S1a's
# forward
AGE_DEADLINE_WRONG = {
    "wb_deadline_stale": ("rec_wb_in.eq(recent_bits(h_new))", "rec_wb_in.eq(recent_bits(hwb_data))"),
    "wb_deadline_unwritten": ("rec_wb_in.eq(recent_bits(h_new))", "rec_wb_in.eq(recent_bits(h_base_in))"),
    "base_deadline_unforwarded": ("rec_base_in.eq(recent_bits(h_base_in))", "rec_base_in.eq(recent_bits(h_rd.data))"),
}


@pytest.mark.parametrize("case", ["wb_deadline_unwritten", "wb_deadline_stale",
                                  pytest.param("base_deadline_unforwarded", marks=pytest.mark.slow)])
def test_age_deadlines_wrong_forms_fail(case):
    """MR-TX-244: the ages' deadlines registered a cycle ahead on both candidate rows: the check
    right behind the connection's first progress (S1b's forward, or S1a's for the read side)
    with the ages on probes (path 0 recent) with the RTL as built, 0 mismatches; with the
    deadline taken from the wrong row (S1a's candidate instead of S1b's write; the read without
    S1a's forward) path 0 is not recent and the lockstep fails. The forward register's
    deadline (a write late) equals S1b's write there (the stale ACKs ahead date path 0 too):
    it fails ``test_lockstep_ages``' traffic (seed 3), whose positive run is that test."""
    if case == "wb_deadline_stale":
        items = _with_ece(rc.traffic(*SMALL, 300, seed=3, black_hole=6, rto_ns=3000,
                                     ack_loss=0.125, shared=2), 3)
        with pytest.raises(Mismatch):
            run_lockstep(items, seed=3, timers=PROBE_TIMERS, ages=True, p_idle=0.2, p_bp=0.4,
                         dut_cls=_retransmit_with(*AGE_DEADLINE_WRONG[case]))
        return
    gap = 0 if case == "wb_deadline_unwritten" else 1
    timers = {"rto_ns": 3000, "retry_limit": 3, "slot_log2": 0}
    kw = {"p_idle": 0.0, "p_bp": 0.0, "ns_per_cycle": 4, "idle_ns": 4}
    res = run_lockstep(_health_forward_items(gap), ages=True, timers=timers, **kw)
    assert [e[0] for e in res["model"].events if e[0] in ("probe", "timeout")][:1] == ["probe"]
    wrong = _retransmit_with(*AGE_DEADLINE_WRONG[case])
    try:
        run_lockstep(_health_forward_items(gap), ages=True, timers=timers, dut_cls=wrong, **kw)
    except (Mismatch, AssertionError):
        return
    raise AssertionError("the wrong form passed")


# ------------------------------------------------------------------ the take's hit flags on each candidate (MR-TX-264..266)

# MR-TX-264's wrong forms: one hit flag of the take compared on the wrong candidate row (the
# others as built), loaded in place of the RTL; the traffic whose lockstep the RTL passes
# (the random lockstep's, seed 1; the timers', seed 1) fails with it
TAKE_HIT_WRONG = {
    # the sent packet's late-write hit (s1a_same_prev) compared on the ACK port's row
    "sent_prev_on_ack_row": ("s1a_same_prev.eq(wb_valid & hit(lambda r: r == wb_addr))",
                             "s1a_same_prev.eq(wb_valid & by_take(*(r == wb_addr for r in "
                             "take_rows[:3] + take_rows[:1])))", "random"),
    # the ACK's S1b hit (s1a_same) compared on the sent packet's row
    "ack_same_on_sent_row": ("s1a_same.eq(s1_valid & hit(lambda r: r == s1_row))",
                             "s1a_same.eq(s1_valid & by_take(*(r == s1_row for r in "
                             "take_rows[3:] + take_rows[1:])))", "random"),
    # the RTO's S1b hit compared on the wheel's row
    "rto_same_on_check_row": ("s1a_same.eq(s1_valid & hit(lambda r: r == s1_row))",
                              "s1a_same.eq(s1_valid & by_take(*(r == s1_row for r in "
                              "take_rows[:1] + take_rows[2:3] + take_rows[2:])))", "random"),
    # the check's health hit (s1a_hsame) compared on the RTO queue's row
    "check_hsame_on_rto_row": ("s1a_hsame.eq(s1_valid & hit(lambda r: r[pb:] == s1_row[pb:]))",
                               "s1a_hsame.eq(s1_valid & by_take(*(r[pb:] == s1_row[pb:] for r in "
                               "take_rows[:2] + take_rows[1:2] + take_rows[3:])))", "timers"),
    # MR-TX-267: the ACK's select without the credit (an ACK offered, not taken, while an RTO
    # or a check is: heavy backpressure)
    "ack_select_without_credit": ("return Mux(ack_take, ack_v, Mux(rto_req, rto_v, ",
                                  "return Mux(self.s_ack.valid, ack_v, Mux(rto_req, rto_v, ", "heavy_bp"),
}


@pytest.mark.parametrize("case", sorted(TAKE_HIT_WRONG))
def test_take_hits_wrong_candidate_fail(case):
    """MR-TX-264, MR-TX-266, MR-TX-267: the take's hit flags are compared on each candidate
    row and selected by the take after the compare; with one flag compared on another
    candidate's row (the sent packet's late-write hit on the ACK's row, the ACK's S1b hit on the
    sent packet's, the RTO's on the wheel's, the check's health hit on the RTO's), or the
    select of the ACK's candidate without the credit, the lockstep fails: on the random traffic
    (seed 1, which the RTL as built passes in ``test_lockstep_random[1]``), the timers' (seed 1)
    or the random traffic under heavy backpressure (seed 1, ``p_bp`` 0.9), the last two run
    here first with the RTL as built: 0 mismatches."""
    old, new, traffic = TAKE_HIT_WRONG[case]
    kw = {"p_idle": 0.2, "p_bp": 0.9 if traffic == "heavy_bp" else 0.4}
    if traffic == "timers":
        items = rc.traffic(*SMALL, 300, seed=1, black_hole=6, rto_ns=3000)
        kw["timers"] = {"rto_ns": 3000, "retry_limit": 3, "slot_log2": 8}
    else:
        items = rc.traffic(*SMALL, 300, seed=1)
    if traffic != "random":
        run_lockstep(items, seed=1, **kw)     # the RTL as built passes (0 mismatches)
    with pytest.raises(Mismatch):
        run_lockstep(items, seed=1, dut_cls=_retransmit_with(old, new), **kw)


# ------------------------------------------------------------------ the health row read in flip-flops (MR-TX-268)

TWO_CONNS = (2, 4, 256)         # the TX's instance (models.tx.SMALL): its health memory is flip-flops
HEALTH_FF_WRONG = {
    # the read without a clock at the take's address, not registered: S1a sees the next take's row
    "address_unregistered": ("m.d.comb += h_rd.addr.eq(h_rd_conn)",
                             "m.d.comb += h_rd.addr.eq(path_rd.addr[pb:])"),
    # the read at S1b's connection
    "address_of_s1b": ("m.d.comb += h_rd.addr.eq(h_rd_conn)", "m.d.comb += h_rd.addr.eq(s1_row[pb:])"),
}


def _two_conns_run(dut_cls=Retransmit):
    items = _with_ece(rc.traffic(*TWO_CONNS, 300, seed=3, black_hole=6, rto_ns=3000,
                                 ack_loss=0.125), 3)
    return run_lockstep(items, inst=TWO_CONNS, seed=3, timers=PROBE_TIMERS, ages=True,
                        dut_cls=dut_cls, p_idle=0.2, p_bp=0.4)


def test_health_read_in_flip_flops():
    """MR-TX-268, MR-TX-241, MR-TX-313, MR-TX-050: with two connections (the TX's instance) the health
    memory is read without a clock at the take's connection, registered; with the ages on,
    tail probes and timeouts over both connections (every read of a row meets writes of it),
    the lockstep has 0 mismatches (the read sees the write of its edge: MR-TX-241's forward
    gives the same row)."""
    assert Retransmit(64, conns=2, paths=4, pool=256).health_read_in_ffs
    assert not Retransmit(64, conns=256, paths=4, pool=1024).health_read_in_ffs
    res = _two_conns_run()
    c = res["model"].counters
    assert c[CTR["timeouts"]] + c[CTR["tail_probes"]] >= 3, c


@pytest.mark.parametrize("case", sorted(HEALTH_FF_WRONG))
def test_health_read_in_flip_flops_wrong_forms_fail(case):
    """MR-TX-268: the read at the take's address not registered (S1a reads the next take's
    connection) or at S1b's connection fails the two-connection lockstep."""
    with pytest.raises(Mismatch):
        _two_conns_run(_retransmit_with(*HEALTH_FF_WRONG[case]))


# ------------------------------------------------------------------ the unit's area at the engine's parameters (MR-TX-309..311, 331/332)

FETCH = "w_bit.eq(Mux(at_neg | at_zero, at_neg, w_sack.bit_select(w_at[:8], 1)))"
BITMAP_WRONG = {
    # MR-TX-309/331: the PSNs below cum not acknowledged (the old shift's zero fill)
    "fill_zeros": (FETCH, "w_bit.eq(Mux(at_neg | at_zero, 0, w_sack.bit_select(w_at[:8], 1)))"),
    # MR-TX-309/331: cum itself acknowledged
    "cum_acked": (FETCH, "w_bit.eq(Mux(at_neg | at_zero, 1, w_sack.bit_select(w_at[:8], 1)))"),
    # MR-TX-331: the SACK not rotated at the load (bit k - 1 read at k - 1: the SACK's bits one off)
    "unrotated": ("w_sack.eq(Cat(qjob.sack[-1], qjob.sack[:-1]))", "w_sack.eq(qjob.sack)"),
    # MR-TX-332: no fetch in the start state (the walk's first record reads the last job's bit)
    "no_start_fetch": ("with m.Elif((w_state == 1) | w_shift):", "with m.Elif(w_shift):"),
}


def _bitmap_run(dut_cls=Retransmit):
    items = rc.traffic(*SMALL, 300, seed=1)
    return run_lockstep(items, seed=1, p_idle=0.2, p_bp=0.4, dut_cls=dut_cls)


def test_bitmap_fetch_past_n_unread():
    """MR-TX-310, MR-TX-332, MR-TX-050: the bit fetched at a walk's last record (bit n, past the
    job's bitmap) made 1 leaves the lockstep at 0 mismatches on ``test_lockstep_random``'s traffic
    (seed 1; the RTL as built passes it there): the walker never reads it."""
    res = _bitmap_run(_retransmit_with(
        FETCH, "w_bit.eq(Mux(w_shift & w_left_one, 1, "
        "Mux(at_neg | at_zero, at_neg, w_sack.bit_select(w_at[:8], 1))))"))
    assert res["acked"] and res["resend"]


@pytest.mark.parametrize("case", ["fill_zeros", pytest.param("cum_acked", marks=pytest.mark.slow),
                                  pytest.param("unrotated", marks=pytest.mark.slow),
                                  pytest.param("no_start_fetch", marks=pytest.mark.slow)])
def test_bitmap_fill_wrong_forms_fail(case):
    """MR-TX-309, MR-TX-331, MR-TX-332: the bitmap read from the job's SACK and floor - cum (1 below
    cum, 0 at cum, then the SACK's bits) passes ``test_lockstep_random``'s traffic (seed 1); a 0
    below cum, a 1 at cum, the SACK's bits one off (not rotated at the load), and no fetch in
    the walker's start state each fail it."""
    with pytest.raises(Mismatch):
        _bitmap_run(_retransmit_with(*BITMAP_WRONG[case]))


def test_walker_load_wins_over_step_wrong_form_fails():
    """MR-TX-312, MR-TX-332: the walker's registers loaded by one flag after its states
    (``test_lockstep_random``'s traffic, seed 1, passes with the RTL as built:
    ``test_bitmap_fetch_past_n_unread``'s run); with the fetch made after the load (a job taken
    beside a walk's last record starts one bit on) the lockstep fails."""
    wrong = _retransmit_with("        with m.Elif((w_state == 1) | w_shift):",
                             "        with m.If((w_state == 1) | w_shift):")
    with pytest.raises(Mismatch):
        _bitmap_run(wrong)


def _two_conns_forward_run(gap, dut_cls=Retransmit):
    """``_health_forward_items(gap)`` moved to connection 1 of the two-connection instance."""
    items = [(k, dict(it, conn=1) if isinstance(it, dict) else it) for k, it in _health_forward_items(gap)]
    timers = {"rto_ns": 3000, "retry_limit": 3, "slot_log2": 0}
    kw = {"p_idle": 0.0, "p_bp": 0.0, "ns_per_cycle": 4, "idle_ns": 4}
    return run_lockstep(items, inst=TWO_CONNS, timers=timers, dut_cls=dut_cls, **kw)


@pytest.mark.parametrize("gap", [1, 2])
def test_health_ffs_without_edge_forward(gap):
    """MR-TX-313, MR-TX-268: the health memory in flip-flops has no forward of the write made at
    the take's edge: the check two events (S1a's forward of S1b's write) or three (the write of
    the read's edge) behind the connection's first progress sees its health bit (a probe, not
    a timeout), 0 mismatches."""
    res = _two_conns_forward_run(gap)
    assert [e[0] for e in res["model"].events if e[0] in ("probe", "timeout")] == ["probe", "timeout"]


@pytest.mark.slow
def test_health_ffs_without_edge_forward_wrong_form_fails():
    """MR-TX-313 (slow: the default run's budget): the negative control of
    ``test_health_ffs_without_edge_forward``: with S1a's forward dropped as well (the read
    alone) the check two events behind fails."""
    wrong = _retransmit_with("            h_base_in = Mux(hwb_valid & s1a_hsame, hwb_data, h_base_in)",
                             "            h_base_in = h_base_in")
    with pytest.raises((Mismatch, AssertionError)):
        _two_conns_forward_run(1, wrong)


# ------------------------------------------------------------------ S1b's row registered (MR-TX-314..315)

S1_ROW_LINE = "m.d.sync += [s1_row.eq(s1a_row), path_bit.eq(Const(1, lay.paths) << s1a_row[:pb])]"
S1_ROW_WRONG = {
    # MR-TX-314: the row loaded from S1b's own registers (the current event's row, a cycle late)
    # instead of S1a's (the next event's)
    "row_from_current": (S1_ROW_LINE, "m.d.sync += [s1_row.eq(row_of(s1_kind, s1_sent, s1_ack, s1a_int_row)), "
                                      "path_bit.eq(Const(1, lay.paths) << s1a_row[:pb])]"),
    # MR-TX-315: the path's one-hot bit loaded from S1b's current row instead of S1a's
    "path_bit_from_current": (S1_ROW_LINE, "m.d.sync += [s1_row.eq(s1a_row), "
                                           "path_bit.eq(Const(1, lay.paths) << s1_row[:pb])]"),
}


def test_s1_row_registered():
    """MR-TX-314, MR-TX-315: S1b's row index and its path's one-hot bit are registers loaded from
    S1a's row: the two-connection (the TX's instance) lockstep with the ages and tail probes on,
    under backpressure, has 0 mismatches (``_two_conns_run``); the random traffic of the small
    instance too (``test_lockstep_random``)."""
    src = open(__import__("metaroce.hdl.retransmit", fromlist=["x"]).__file__).read()
    assert src.count(S1_ROW_LINE) == 1
    res = _two_conns_run()
    c = res["model"].counters
    assert c[CTR["timeouts"]] + c[CTR["tail_probes"]] >= 3, c


@pytest.mark.parametrize("case", sorted(S1_ROW_WRONG))
def test_s1_row_registered_wrong_forms_fail(case):
    """MR-TX-314, MR-TX-315: the row or the path bit loaded from S1b's current row (a cycle late)
    instead of S1a's fails the two-connection lockstep."""
    with pytest.raises(Mismatch):
        _two_conns_run(_retransmit_with(*S1_ROW_WRONG[case]))


# ------------------------------------------------------------------ the ages tested a cycle ahead (MR-TX-343..345)

AGES_AHEAD_LINE = "m.d.comb += rec_base_in.eq(recent_bits(h_base_in))"
# MR-TX-345's wrong form: the recent bits tested in S1b at S1b's clock (on S1b's registered read
# and the forward register, the rows the deadlines of MR-TX-244 were registered from): before
# MR-TX-343 the unit's timing (since MR-TX-365 "another path healthy" is registered beside the
# recent bits, so the form is written on its select)
AGES_AT_S1B = ("m.d.sync += others_aged.eq(others_in)", "m.d.comb += others_aged.eq(Mux(h_fwd, (hwb_data[:lay.paths] & recent_bits(hwb_data) "
                            "& ~path_bit).any(), (h_base[:lay.paths] & recent_bits(h_base) & ~path_bit).any()))")


def _age_edge_items():
    """Connection 9: path 1's packet lost (sent at 0, expiry near 3,148 ns: rto 3,000, the
    wheel's slots 1 ns); path 0 acknowledged at once (srtt 12 ns after its RTO event), then
    again at 3,100 ns, so its progress is recent until 3,100 + 4 x 12 = 3,148 ns: at the
    clock of path 1's check's S1a cycle (3,144) and not at its S1b's (3,148). Found by a sweep
    of the gap over the cycle model alone (4 ns a cycle, no idle, no backpressure)."""
    c = 9
    return [rc.sent_item(c, 1, 0), rc.sent_item(c, 0, 0), rc.ack_item(c, 0, 1, 0, psn=0),
            rc.wait_item(3076), rc.sent_item(c, 0, 1), rc.ack_item(c, 0, 2, 0, psn=1),
            rc.wait_item(14000)]


AGE_EDGE_KW = {"timers": {"rto_ns": 3000, "retry_limit": 3, "slot_log2": 0}, "ages": True,
               "p_idle": 0.0, "p_bp": 0.0, "ns_per_cycle": 4, "idle_ns": 4}


def test_ages_tested_a_cycle_ahead():
    """MR-TX-343, MR-TX-344: path 1's check in S1b at 3,148 ns tests path 0's age at its S1a
    cycle's clock (3,144), where the progress (recent until 3,148) is recent: a tail probe, 0
    mismatches; the replay's semantics at that time (``age_now``) agree, and at S1b's own
    clock they would time the path out (the case is on the edge)."""
    src = open(__import__("metaroce.hdl.retransmit", fromlist=["x"]).__file__).read()
    assert src.count(AGES_AHEAD_LINE) == 1
    res = run_lockstep(_age_edge_items(), **AGE_EDGE_KW)
    ev = [e for e in res["model"].events if e[0] in ("probe", "timeout")]
    assert ev[0] == ("probe", 9, 1, 3148, 3144), ev
    model = res["model"]
    assert model._health_at(9, 3144) & 1 and not model._health_at(9, 3148) & 1


def test_ages_tested_a_cycle_ahead_wrong_form_fails():
    """MR-TX-345: the recent bits tested in S1b at S1b's clock (the timing before MR-TX-343)
    time path 1 out where the model probes: the lockstep fails."""
    wrong = _retransmit_with(*AGES_AT_S1B)
    with pytest.raises(Mismatch):
        run_lockstep(_age_edge_items(), dut_cls=wrong, **AGE_EDGE_KW)


def _carry_chain_dut(dut_cls=Retransmit):
    """``dut_cls`` built with MR-TX-359's carry-chain sums (what the ECP5 build elaborates)."""
    return lambda *a, **kw: dut_cls(*a, carry_chain=True, **kw)


def test_lockstep_carry_chain_sums():
    """MR-TX-359, MR-TX-361, MR-TX-363: the unit with its carry-select sums as plain registered adds (the
    ECP5 platform's form) on MR-TX-054's estimator traffic (every sum of the estimator, the
    bounds in the push stage with the 2 us floor met; the timeouts' insert deadlines, MR-TX-038
    (9)): 0 mismatches, the same RTOs and timeouts as
    ``test_lockstep_rtt_estimator``'s."""
    res = run_lockstep(_rtt_items(), seed=11, timers={"rto_ns": 3000, "retry_limit": 3, "slot_log2": 0},
                       p_idle=0.0, p_bp=0.2, ns_per_cycle=1, idle_ns=1, dut_cls=_carry_chain_dut())
    m = res["model"]
    rtos = [e for e in m.events if e[0] == "rto"]
    assert 8 <= len(rtos) < 16 and len({e[4] for e in rtos}) > 4 and min(e[4] for e in rtos) == 2000
    assert m.counters[CTR["timeouts"]] == 8


CARRY_CHAIN_WRONG = {
    "no_carry_in": ("m.d.sync += total.eq((a - ~b)[:width] if carry_in else (a + b)[:width])",
                    "m.d.sync += total.eq((a + b)[:width])"),
    "no_floor": ("rto_lo, rto_hi = larger < RTO_MIN_NS, larger > RTO_MAX_NS",
                 "rto_lo, rto_hi = larger < 0, larger > RTO_MAX_NS"),
}


@pytest.mark.parametrize("case", sorted(CARRY_CHAIN_WRONG))
def test_lockstep_carry_chain_sums_wrong_form_fails(case):
    """MR-TX-361, MR-TX-363 (negative controls): the carry-chain sums without their carry in
    (the estimator's differences and the ACK's RTT one less), or the push stage's bounds
    without the 2 us floor, fail the same lockstep."""
    bad = _retransmit_with(*CARRY_CHAIN_WRONG[case])
    with pytest.raises(Mismatch):
        run_lockstep(_rtt_items(), seed=11, timers={"rto_ns": 3000, "retry_limit": 3, "slot_log2": 0},
                     p_idle=0.0, p_bp=0.2, ns_per_cycle=1, idle_ns=1, dut_cls=_carry_chain_dut(bad))


def test_ages_edge_carry_chain():
    """MR-TX-360, MR-TX-361: ``test_ages_tested_a_cycle_ahead``'s edge (path 0's progress recent
    until exactly 3,148 ns, tested at 3,144) with the ages' carry-chain form (d = now - t, d's top
    bit xor ``d < 4 srtt``): the same tail probe, 0 mismatches."""
    res = run_lockstep(_age_edge_items(), dut_cls=_carry_chain_dut(), **AGE_EDGE_KW)
    ev = [e for e in res["model"].events if e[0] in ("probe", "timeout")]
    assert ev[0] == ("probe", 9, 1, 3148, 3144), ev


@pytest.mark.slow
def test_ages_edge_carry_chain_wrong_form_fails():
    """MR-TX-361 (slow: the default run's budget): the negative control of
    ``test_ages_edge_carry_chain``: the ages' form without the top bit's xor (every age stale)
    fails."""
    bad = _retransmit_with("return d[tw - 1] ^ ((d[n + 2:tw - 1] == 0) & (d[2:n + 2] < srtt))",
                           "return d[tw - 1] & ((d[n + 2:tw - 1] == 0) & (d[2:n + 2] < srtt))")
    with pytest.raises(Mismatch):
        run_lockstep(_age_edge_items(), dut_cls=_carry_chain_dut(bad), **AGE_EDGE_KW)


@pytest.mark.slow
def test_lockstep_ages_carry_chain():
    """MR-TX-359..361: ``test_lockstep_ages``' traffic (seed 3: probes, verdicts, ECN echoes
    under backpressure) with the carry-chain form of the sums and the ages: 0 mismatches."""
    seed = 3
    items = _with_ece(rc.traffic(*SMALL, 300, seed=seed, black_hole=6, rto_ns=3000,
                                 ack_loss=0.125, shared=2), seed)
    res = run_lockstep(items, seed=seed, timers=PROBE_TIMERS, ages=True, p_idle=0.2, p_bp=0.4,
                       dut_cls=_carry_chain_dut())
    c = res["model"].counters
    assert c[CTR["timeouts"]] >= 6 and c[CTR["path_reroutes"]] and c[CTR["tail_probes"]]


INS_ONEHOT_LINE = "ins_slot.eq(slot_sel), ins_onehot.eq(Const(1, WHEEL_SLOTS) << slot_sel)]"


@pytest.mark.parametrize("case", ["deadline_slot", "slot_plus_one"])
def test_wheel_insert_onehot_wrong_forms_fail(case):
    """MR-TX-362: the insert's one-hot decoded once from the selected slot (``slot_sel``) is what
    ``test_lockstep_timers`` and ``test_wheel_cur_valid_registered_exact`` pass on; its wrong
    forms (the one-hot of the deadline's own slot, a late insert's ``ct`` not selected; the slot
    after the selected one) fail the timers' lockstep."""
    new = {"deadline_slot": "ins_slot.eq(slot_sel), ins_onehot.eq(Const(1, WHEEL_SLOTS) << dl_slot[:sb])]",
           "slot_plus_one": "ins_slot.eq(slot_sel), ins_onehot.eq(Const(1, WHEEL_SLOTS) << (slot_sel + 1)[:sb])]"}
    bad = _retransmit_with(INS_ONEHOT_LINE, new[case])
    timers = {"rto_ns": 3000, "retry_limit": 3, "slot_log2": 8}
    items = rc.traffic(*SMALL, 300, seed=3, black_hole=6, rto_ns=3000)
    with pytest.raises(Mismatch):
        run_lockstep(items, seed=3, timers=timers, p_idle=0.2, p_bp=0.4, dut_cls=bad)
