"""The row scheduler's cycle model (models/tx_sched_rows.py, hw-tx-sched.md section 16, "The
row scheduler") through the TX scheduler's driver (models/tx_sched_cases.py: idle
cycles, random backpressure, loss, the loop through the retransmit unit's semantics, path
verdicts, window writes): the checker of the register scheduler (MR-TXS-050), the replay of its
operations through TxSchedModel (MR-TXS-230), the register scheduler's cycle model on the same
seeds (MR-TXS-231), and negative controls without forwarding (MR-TXS-221)."""
import random
from collections import defaultdict, deque

import pytest

from metaroce.models import tx_sched_cases as tc
from metaroce.models.driver import run_alone
from metaroce.models import protocol as P
from metaroce.models.rx import pack, unpack
from metaroce.models.tx_sched import SMALL, TxSchedCycleModel, TxSchedModel
from metaroce.models.tx_sched_rows import (FWD_DISTANCE, PIPE_STAGES, TxSchedRowsModel,
                                           pack_row, replay, row_layouts, unpack_row)
from metaroce.models.wire import MrdhFlag


def per_stream_chunks(res):
    """MR-TXS-231: each stream's first transmissions, in order: (message, offset, length,
    opcode)."""
    d = defaultdict(list)
    for f in res["frames"]:
        if not f["mrdh_flags"] & MrdhFlag.RETX:
            d[(f["conn"], f["mrdh_stream"])].append(
                (f["mrdh_msg"], f["mrdh_offset"], f["payload_len"], f["bth_opcode"]))
    return dict(d)


def completions(res):
    """MR-TXS-231: the good completions per stream in order, and every completion (a multiset)."""
    good = defaultdict(list)
    for c in res["cqe"]:
        if c["status"] == 0:
            good[(c["conn"], c["stream"])].append(c["wr_id"])
    return dict(good), sorted(tuple(sorted(c.items())) for c in res["cqe"])


def run_rows(prm, n, seed, *, forward=True, limit=None, lost_waits=False, **kw):
    """The row model through the driver on ``n`` work requests of ``traffic``; the driver's
    results and the model. Checked every cycle (MR-TXS-212/213/215): a connection is at most
    once in the active queue and at most once in the completion queue; and (up to 8
    connections) every connection with an action (``decide_conn`` on its row) is in the
    active queue or has an operation in the pipeline."""
    m = TxSchedRowsModel(64, **prm, forward=forward, lost_waits=lost_waits)
    items = tc.traffic(TxSchedModel(**dict(prm, conns=min(prm["conns"], 256))), n, seed=seed)
    drv = tc.Driver(m.lay, items, seed=seed, **kw)
    drv.limit = limit or drv.limit

    def on_cycle(cycle, ins, outs):
        assert len(set(m.active)) == len(m.active), "a connection twice in the active queue"
        assert len(set(m.done)) == len(m.done), "a connection twice in the completion queue"
        if prm["conns"] > 8:
            return
        # MR-TXS-213: no connection with an action is out of both the queue and the pipeline
        # (its row in memory is then its state: no operation of it in flight)
        in_pipe = {op.conn for op in m.pipe.ops()}
        for c in range(m.conns):
            if c not in in_pipe and c not in m.active:
                m._load(c, m.mem[c])
                assert m.sem.decide_conn(0) is None, f"cycle {cycle}: connection {c} left out"

    run_alone(m, drv, on_cycle=on_cycle)
    return items, drv.res, m


CASES = [(dict(SMALL), 60, 0, {}), (dict(SMALL, conns=4, paths=8), 50, 2, {"p_cwnd": 0.05}),
         (dict(SMALL, conns=4, cwnd=3000), 40, 5, {}),
         pytest.param(dict(SMALL), 60, 1, {}, marks=pytest.mark.slow),
         pytest.param(dict(SMALL), 60, 3, {}, marks=pytest.mark.slow),
         pytest.param(dict(SMALL, conns=8), 120, 1, {}, marks=pytest.mark.slow),
         pytest.param(dict(SMALL, conns=4, paths=8), 100, 2, {"p_cwnd": 0.05},
                      marks=pytest.mark.slow)]


@pytest.mark.parametrize("prm,n,seed,kw", CASES)
def test_rows_against_register_scheduler(prm, n, seed, kw):
    """MR-TXS-230, MR-TXS-231, MR-TXS-207, MR-TXS-208, MR-TXS-210..217, MR-TXS-220..224: the
    row model on the driver's
    traffic (loss, reports, verdicts, window writes, several connections) passes the register
    scheduler's checker; its operations replayed in order through TxSchedModel give the same
    action, frame request, sent event and completion at every step (so every connection's
    frames in order are the semantics'); against the register scheduler's cycle model on the
    same seed, each stream's first transmissions and good completions are the same in order
    and the completions the same multiset (the interleaving across streams and connections,
    the paths and PSNs follow the cycle timing, MR-TXS-231)."""
    items, res, m = run_rows(prm, n, seed, **kw)
    tc.check(TxSchedModel(**prm), items, res)
    frames, cqes = replay(m)
    assert sum(map(len, frames.values())) == len(res["frames"])
    assert sum(map(len, cqes.values())) == len(res["cqe"])
    reg = TxSchedCycleModel(64, **prm)
    res2 = tc.run_model(reg, items, seed=seed, **kw)
    tc.check(TxSchedModel(**prm), items, res2)
    assert per_stream_chunks(res) == per_stream_chunks(res2)
    assert completions(res) == completions(res2)
    assert res["lost"] + sum(res["verdicts"].values()) > 0 or seed == 0


@pytest.mark.slow
def test_rows_4096_conns_8_paths():
    """MR-TXS-200, MR-TXS-206, MR-TXS-233: the 4,096 x 8 instance (beyond the register scheduler's
    MR-TXS-001 bound) runs the driver's traffic to the checker; the operations replay
    through the semantics of a 256-connection TxSchedModel (the connections named are below
    256 with that seed's draws remapped: here the check is the driver's)."""
    prm = dict(SMALL, conns=4096, paths=8)
    items, res, m = run_rows(prm, 40, 5)
    tc.check(TxSchedModel(**dict(prm, conns=256)), items, res)
    assert len(m.mem) == 4096 and len(res["frames"]) >= 40


#: stk31's traffic (docs/hw/probes/tx_sched_stall.py's driver settings: 60 % loss, path states)
STALL_KW = dict(p_idle=0.2, p_bp=0.4, loss=0.6, p_cwnd=0.05, cwnd_hi=8000)
#: the seed of stk31's traffic whose run stalls under MR-TXS-217's old rule and takes refills
#: under the fixed one (35 until s1_45; MR-TXS-470's hold moved its schedule ops, and 35 no
#: longer stalls: seed 16 is the first of 1..200 that does, with 4 refills)
STALL_SEED = 16
#: the progress limit of the stall seed's runs (cycles): the driver's own (36,000) would make
#: the stall's run long
STALL_LIMIT = 4000


def _stall_case(seed, **kw):
    """The row model on stk31's traffic (40 work requests), checked as MR-TXS-230/231 are: the
    register scheduler's checker, the replay (refills included), and the fixed register
    scheduler's cycle model (MR-TXS-240..244) on the same seed."""
    items, res, m = run_rows(dict(SMALL), 40, seed, **STALL_KW, **kw)
    tc.check(TxSchedModel(**SMALL), items, res)
    replay(m)
    reg = TxSchedCycleModel(64, **SMALL)
    res2 = tc.run_model(reg, items, seed=seed, **STALL_KW)
    tc.check(TxSchedModel(**SMALL), items, res2)
    assert per_stream_chunks(res) == per_stream_chunks(res2)
    assert completions(res) == completions(res2)
    return res, m


def test_rows_lost_not_queued_finishes_stall_seed():
    """MR-TXS-257, MR-TXS-258, MR-TXS-259, MR-TXS-260, MR-TXS-262, MR-TXS-473: stk31's traffic at
    ``STALL_SEED`` (which stalls the rows under MR-TXS-217's old rule) finishes: 40 completions, chunks kept and refilled, the checker, the replay
    (each refill the register scheduler's pick on its connection) and MR-TXS-231 against the
    fixed register scheduler."""
    res, m = _stall_case(STALL_SEED, limit=STALL_LIMIT)
    assert len(res["cqe"]) == 40 and m.refills > 0
    assert sum(1 for e in m.events if e[0] == "refill") == m.refills


@pytest.mark.slow       # since stale45: pays for tests/test_tx_stale_resend.py's two default tests
def test_rows_lost_waits_stalls_stall_seed():
    """MR-TXS-261 (negative control): MR-TXS-217's old rule (``lost_waits``: a lost report
    refused and held while its FIFO is full) stalls on ``STALL_SEED``; the driver's progress
    limit fails the run rather than hanging (a limit of 4,000 cycles)."""
    with pytest.raises(AssertionError, match="no progress after 4001 cycles"):
        run_rows(dict(SMALL), 40, STALL_SEED, lost_waits=True, limit=STALL_LIMIT, **STALL_KW)


@pytest.mark.slow
def test_rows_stall_sweep():
    """MR-TXS-262: seeds 1..100 of stk31's traffic: every run finishes (as
    docs/hw/probes/tx_sched_rows_stall.py 1-100), checked as MR-TXS-230/231."""
    stalls = []
    for seed in range(1, 101):
        try:
            res, m = _stall_case(seed)
        except AssertionError as e:
            if "no progress" not in str(e):
                raise
            stalls.append(seed)
            continue
        assert len(res["cqe"]) == 40
    assert stalls == []


def test_row_widths():
    """MR-TXS-200..206, MR-TXS-233: the row's fields are bounded (a value that does not fit is refused) and
    its width is the sum of the fields': 2,754 bits at 4,096 x 8 with MR-TXS-001's small shape
    (2 streams x 4 messages, chunk window 16, resend FIFO 8); 2,213 with 4 paths; the
    descriptor 400. MR-TXS-256: the entry's lost-not-queued bits, ``chunk_window`` of them
    (140 + 16 = 156), 128 bits of the row at the small shape. MR-TXS-490 (live46): the laps'
    8 bits (the ring pointers', the entries' and the paths' `tail_lap`: 2,520 -> 2,674);
    MR-TXS-482: the connection's ``started`` bit. MR-TXS-499 (live47): the path's 10-bit quiet
    count (2,674 -> 2,754)."""
    rl = row_layouts(conns=4096, streams=2, paths=8, depth=4, chunk_window=16, resend_depth=8)
    sizes = {k: getattr(rl, k).size for k in ("conn", "stream", "entry", "path", "retx", "desc")}
    assert sizes == {"conn": 62, "stream": 94, "entry": 156, "path": 133, "retx": 24,
                     "desc": 400}
    assert rl.entry["lnq"].shape == 16
    assert rl.row.size == 62 + 2 * 94 + 8 * 156 + 8 * 133 + 8 * 24 == 2754
    assert row_layouts(paths=4).row.size == 2213
    m = TxSchedRowsModel(64, **dict(SMALL, conns=4, paths=8))
    row = unpack_row(m.rl, m.mem[3])
    assert row["conn"]["rr"] == 3 and all(p["cwnd"] == SMALL["cwnd"] for p in row["paths"])
    assert pack_row(m.rl, row) == m.mem[3]
    row["paths"][0]["pkts"] = 256
    with pytest.raises(ValueError):
        pack_row(m.rl, row)


def _cwnd_case(gap, forward):
    """Two window writes of connection 0 (paths 0 and 1) taken ``gap`` cycles apart: the row's
    windows after both."""
    m = TxSchedRowsModel(64, **SMALL, forward=forward)
    idle = {"m_frame__ready": 1, "m_sent__ready": 1, "m_cqe__ready": 1}
    for k, w in enumerate(({"conn": 0, "path": 0, "cwnd": 111},
                           {"conn": 0, "path": 1, "cwnd": 222})):
        m.step(dict(idle, s_cwnd__valid=1, s_cwnd__payload=pack(m.lay.cwnd, w)))
        for _ in range(gap - 1 if k == 0 else 0):
            m.step(idle)
    for _ in range(8):
        m.step(idle)
    return [p["cwnd"] for p in unpack_row(m.rl, m.mem[0])["paths"][:2]]


@pytest.mark.parametrize("gap", [1, 2])
def test_forwarding_back_to_back(gap):
    """MR-TXS-221, MR-TXS-232 (negative control): two operations on one connection taken 1 or 2 cycles
    apart (the forwarding distance is 2, the pipeline's stages 2): with forwarding the second
    sees the first's write; without it the second writes back a row that misses it and the
    first write is lost."""
    assert (PIPE_STAGES, FWD_DISTANCE) == (2, 2)
    assert _cwnd_case(gap, True) == [111, 222]
    assert _cwnd_case(gap, False) == [SMALL["cwnd"], 222]
    # far enough apart (the schedule ops they start included) nothing is lost
    assert _cwnd_case(5, False) == [111, 222]


@pytest.mark.parametrize("seed", [0, pytest.param(1, marks=pytest.mark.slow)])
def test_no_forwarding_fails_on_traffic(seed):
    """MR-TXS-221, MR-TXS-232 (negative control): without forwarding the driver's traffic goes wrong
    (a stale row: a PSN again, a chunk lost, or no progress)."""
    with pytest.raises(AssertionError):
        items, res, m = run_rows(dict(SMALL), 60, seed, forward=False, limit=3000)
        tc.check(TxSchedModel(**SMALL), items, res)
        replay(m)


@pytest.mark.parametrize("work_filter", [True, False])
def test_active_queue_round_robin(work_filter):
    """MR-TXS-212..214, MR-TXS-232: three connections with long messages and windows that do
    not bind: the schedule ops take them in turn (one packet per turn, the queue's order). With
    the work term a connection leaves with its last packet and no schedule op finds nothing;
    without it (entry on any operation) each connection's last schedule op finds nothing."""
    prm = dict(SMALL, conns=4, cwnd=(1 << 24) - 1 - 1024, conn_window=(1 << 24) - 1 - 1024,
               path_pkts=255)
    items = [tc.wr_item(c, 0, 8 * 1024, wr_id=c) for c in range(3)]
    m = TxSchedRowsModel(64, **prm, work_filter=work_filter)
    res = tc.run_model(m, items, seed=0, p_idle=0, p_bp=0, loss=0, p_ack=0, p_report_idle=0)
    tc.check(TxSchedModel(**prm), items, res)
    sched = [(c, act) for k, c, f, act, *_ in m.events if k == "sched"]
    sent = [c for c, act in sched if act is not None]
    # from connection 2's first packet on, one packet each per turn in the queue's order
    first = sent[sent.index(2):][:12]
    assert first == [2, 0, 1] * 4
    assert m.idle_sched == len(sched) - len(sent)
    if work_filter:
        assert m.idle_sched == 0
    else:
        assert all([a for c, a in sched if c == k][-1] is None for k in range(3))
        assert m.idle_sched >= 3
    assert not m.active and not m.busy()


def test_read_responses():
    """MR-TXS-209: READ responses on s_rsp take the work request's boundary register and
    operation (into the last stream's ring) and leave their records on m_rsp_done, as the
    register scheduler's (MR-TXS-066..070)."""
    prm = dict(SMALL)
    sem = TxSchedModel(**prm)
    items = tc.traffic(sem, 30, seed=4)
    rsps = tc.responses(sem, 4, seed=4)
    m = TxSchedRowsModel(64, **prm)
    res = tc.run_model(m, items, seed=4, rsps=rsps)
    tc.check(TxSchedModel(**prm), items, res, rsps)
    replay(m)


def test_not_in_this_increment():
    """MR-TXS-235: a message and a connection failure of two connections in one cycle are
    refused, not taken silently (a tail probe is taken since MR-TXS-270)."""
    m = TxSchedRowsModel(64, **SMALL)
    fl = pack(m.lay.fail, {"conn": 0, "slot": 0, "status": 4})
    er = pack(m.lay.error, {"conn": 1, "path": 0, "status": 12})
    with pytest.raises(NotImplementedError):
        m.step({"s_fail__valid": 1, "s_fail__payload": fl, "s_error__valid": 1,
                "s_error__payload": er})


class LaneDriver:
    """Random lane-add operations on few rows (so that ops on one row follow each other at
    distances 1, 2 and more), idle cycles with probability ``p_idle``, for ``n`` cycles."""

    def __init__(self, model, n, seed, p_idle=0.3):
        import random
        self.rng, self.model, self.n, self.p_idle = random.Random(seed), model, n, p_idle
        self.cycle, self.writes = 0, []

    @property
    def finished(self):
        return self.cycle >= self.n and not self.model.busy()

    def inputs(self):
        if self.cycle >= self.n or self.rng.random() < self.p_idle:
            return {"s_op__valid": 0, "s_op__payload": 0}
        r = self.rng
        return {"s_op__valid": 1, "s_op__payload": pack(self.model.op_lay, {
            "conn": r.randrange(self.model.rows), "lane": r.randrange(4), "add": r.randrange(256)})}

    def observe(self, ins, outs):
        if outs["m_wb__valid"]:
            self.writes.append(outs["m_wb__payload"])
        self.cycle += 1

    def settle(self, busy):
        pass


def lane_lockstep(rtl_forward, model_forward, seed=0, n=400, hdl=None, garbage=False):
    from metaroce.hdl import tx_sched_rows
    from metaroce.models.tx_sched_rows import RowPipeLaneModel
    from metaroce.tb.lockstep import Mismatch, run_amaranth
    hdl = hdl or tx_sched_rows
    model = RowPipeLaneModel(4, forward=model_forward)
    drv = LaneDriver(model, n, seed)
    try:
        core = run_amaranth(hdl.RowPipeLane(4, forward=rtl_forward, collision_garbage=garbage),
                            model, drv)
    except Mismatch:
        return None
    return core.mismatches, drv, model


def test_row_pipe_rtl_lockstep():
    """MR-TXS-237, MR-TXS-220, MR-TXS-221: the RTL row pipeline (hdl/tx_sched_rows.py
    ``RowPipe``, lane-add operations on 4 rows, ops on one row 1, 2 and more cycles apart) in
    lockstep with the model's ``RowPipe`` every cycle: 0 mismatches; the rows end as the sum of
    every operation (the pipeline loses none); the RTL without forwarding fails against the
    model with it, and matches the model without it (the model's wrong form is the RTL's)."""
    from metaroce.models.tx_sched_rows import lane_add, lane_init
    mism, drv, model = lane_lockstep(True, True)
    assert mism == 0 and len(drv.writes) > 200
    assert lane_lockstep(False, True) is None
    mism2, _, _ = lane_lockstep(False, False)
    assert mism2 == 0
    # the end rows are every op applied one by one in take order
    drv2 = LaneDriver(model.__class__(4), 400, 0)
    rows = lane_init(4)
    ops = []
    while drv2.cycle < drv2.n:
        i = drv2.inputs()
        if i["s_op__valid"]:
            ops.append(i["s_op__payload"])
        drv2.cycle += 1
    from metaroce.models.rx import unpack
    for p in ops:
        f = unpack(model.op_lay, p)
        rows[f["conn"]] = lane_add(rows[f["conn"]], f["lane"], f["add"])
    assert model.pipe.mem == rows


def frame_cycles(conns_used):
    """The cycles of the frame requests of 16-chunk writes on ``conns_used`` connections,
    windows that do not bind, no reports, every output ready."""
    big = (1 << 24) - 1 - 1024
    m = TxSchedRowsModel(64, **dict(SMALL, conns=4, cwnd=big, conn_window=big, path_pkts=255))
    items = [tc.wr_item(c, 0, 16 * 1024, wr_id=c) for c in range(conns_used)]
    rdy = {"m_frame__ready": 1, "m_sent__ready": 1, "m_cqe__ready": 1}
    k, frames = 0, []
    for cyc in range(200):
        inp = dict(rdy)
        if k < len(items):
            inp.update(s_wr__valid=1, s_wr__payload=pack(m.lay.wr, items[k]))
        out = m.step(inp)
        k += bool(k < len(items) and out["s_wr__ready"])
        if out["m_frame__valid"]:
            frames.append(cyc)
    assert len(frames) == 16 * conns_used
    return frames


def test_throughput():
    """MR-TXS-222: one connection sends a packet every 3 cycles (popped, pushed back at its
    write-back, taken again); three connections together one per cycle but for the schedule
    ops that find nothing at the end (1.08 cycles per frame after the first ten)."""
    one = frame_cycles(1)
    assert {b - a for a, b in zip(one, one[1:])} == {3}
    three = frame_cycles(3)
    gaps = [b - a for a, b in zip(three[10:], three[11:])]
    assert min(gaps) == 1 and sum(gaps) / len(gaps) < 1.1


def test_connection_failure():
    """MR-TXS-207, MR-TXS-211: a connection failure on ``s_error`` is an operation on its row:
    its live messages fail (MR-TXS-027: no chunk more sent, completed with the status once
    nothing is in flight), the other connection's message completes with success; the replay
    through TxSchedModel agrees."""
    from metaroce.models.rx import unpack
    m = TxSchedRowsModel(64, **SMALL)
    rdy = {"m_frame__ready": 1, "m_sent__ready": 1, "m_cqe__ready": 1}
    items = [tc.wr_item(1, 0, 20 * 1024, wr_id=7), tc.wr_item(0, 1, 2 * 1024, wr_id=8)]
    sent, cqes, k = [], [], 0
    for cyc in range(120):
        inp = dict(rdy)
        if k < len(items):
            inp.update(s_wr__valid=1, s_wr__payload=pack(m.lay.wr, items[k]))
        if cyc == 12:
            inp.update(s_error__valid=1, s_error__payload=pack(m.lay.error,
                                                               {"conn": 1, "path": 0, "status": 12}))
        offered = cyc >= 40 and sent and cyc % 2 == 0   # every packet acknowledged, one by one
        if offered:
            s = sent[0]
            inp.update(s_acked__valid=1, s_acked__payload=pack(m.lay.report, {
                "conn": s["conn"], "path": s["path"], "slot": s["slot"], "chunk": s["chunk"],
                "abort": 0, "lap": s["lap"]}))
        out = m.step(inp)
        k += bool(k < len(items) and out["s_wr__ready"])
        if offered and out["s_acked__ready"]:
            sent.pop(0)
        if out["m_sent__valid"]:
            sent.append(unpack(m.lay.sent, out["m_sent__payload"]))
        if out["m_cqe__valid"]:
            cqes.append(unpack(m.lay.cqe, out["m_cqe__payload"]))
    assert sorted((c["wr_id"], c["status"]) for c in cqes) == [(7, 12), (8, 0)]
    frames, _ = replay(m)
    assert 0 < len(frames[1]) < 20 and len(frames[0]) == 2


@pytest.mark.parametrize("old,new", [
    ("fwd_two.eq(s2_valid & take_eq)", "fwd_two.eq(0)"),
    ("fwd_s1.eq(s2_valid & (s2_conn == s1_conn))", "fwd_s1.eq(0)")])
def test_row_pipe_wrong_forms_fail(old, new):
    """MR-TXS-237, MR-TXS-221, MR-TXS-507 (negative controls): the RTL with one of its two
    forwards left out fails the lockstep (MR-TXS-511: the forward into S2 taken without the
    write's valid, on the scheduler's traffic)."""
    from metaroce.tb.lockstep import wrong_form
    assert lane_lockstep(True, True, hdl=wrong_form("tx_sched_rows", old, new)) is None


def test_row_pipe_collision_reads_unused():
    """MR-TXS-237, MR-FLOW-028: the row memory carries the collision attribute: with every read
    that meets a write of its row returning garbage (simulation only), the lockstep still has
    no mismatch (such reads are replaced by the forward); without the forwards it fails."""
    mism, drv, _ = lane_lockstep(True, True, garbage=True)
    assert mism == 0
    assert lane_lockstep(False, False, garbage=True) is None


# ------------------------------------------------------------------ the scheduler's RTL

def rows_lockstep(prm, n, seed, *, forward=True, hdl=None, rsps=0, driver=tc.Driver,
                  model_kw=None, rtl_kw=None, **kw):
    """``hdl/tx_sched_rows.py`` ``TxSchedRows`` in lockstep with ``TxSchedRowsModel`` through
    the driver, every output port compared every cycle (MR-TXS-254). ``model_kw``/``rtl_kw``:
    the model's and the RTL's switches (negative controls). Returns ``(core, driver, model,
    items, rsps)``; Mismatch at the first difference."""
    from metaroce.hdl import tx_sched_rows
    from metaroce.tb.lockstep import run_amaranth
    hdl = hdl or tx_sched_rows
    sem = TxSchedModel(**prm)
    items = tc.traffic(sem, n, seed=seed)
    rs = tc.responses(sem, rsps, seed=seed) if rsps else ()
    model = TxSchedRowsModel(64, **prm, **(model_kw or {}))
    drv = driver(model.lay, items, seed=seed, rsps=rs, **kw)
    core = run_amaranth(hdl.TxSchedRows(64, **prm, forward=forward, **(rtl_kw or {})), model,
                        drv, busy=model.busy)
    return core, drv, model, items, rs


RTL_CASES = [
    # slow since late44: test_rows_rtl_late_reports is the default run's lockstep of this size
    pytest.param(dict(SMALL), 30, 1, {"p_cwnd": 0.1}, marks=pytest.mark.slow),
    pytest.param(dict(SMALL, conns=4, paths=8), 25, 2, {"p_cwnd": 0.05},
                 marks=pytest.mark.slow),
    pytest.param(dict(SMALL), 60, 3, {"p_bp": 0.8}, marks=pytest.mark.slow),
    pytest.param(dict(SMALL), 60, 4, {"p_idle": 0.5, "p_cwnd": 0.2, "cwnd_hi": 8000},
                 marks=pytest.mark.slow),
    pytest.param(dict(SMALL, conns=4, paths=8), 100, 5, {"p_cwnd": 0.05},
                 marks=pytest.mark.slow),
    pytest.param(dict(SMALL, conns=8), 100, 6, {}, marks=pytest.mark.slow)]


@pytest.mark.parametrize("prm,n,seed,kw", RTL_CASES)
def test_rows_rtl_lockstep(prm, n, seed, kw):
    """MR-TXS-250..254: the row scheduler's RTL in lockstep with its cycle model through the
    driver (idle cycles, random backpressure, 10 % loss, reports, timeouts' verdicts, window
    writes; 2 x 4 and 4 x 8): 0 mismatches, and the register scheduler's checker passes
    (MR-TXS-314: with rdep33's terms of MR-TXS-310..313; MR-TXS-436/438/439: with lvl42's
    queue terms, chunk bytes and schedule op's bytes; MR-TXS-455: with rows43's parallel
    forms; MR-TXS-459: with push44's queue tails and forward term; MR-TXS-470..473: with the
    schedule op's decision formed in S1 behind the hold, and no descriptor forward;
    MR-TXS-507/508/509/510/512/513/514: with schedlut49's forward into S2's register, the descriptor's and
    the completion's records formed whatever the op, the chosen path's updates and ACK request
    formed once, the descriptor's fields 0 where the frame carries none)."""
    core, drv, model, items, _ = rows_lockstep(prm, n, seed, **kw)
    assert core.mismatches == 0
    tc.check(TxSchedModel(**prm), items, drv.res)
    assert model.counts["sched"] >= n and model.counts["acked"] and model.counts["complete"]


#: MR-TXS-449: lossy traffic with late ACKs (the driver's ``late_acks``) and the timeouts' verdicts
#: MR-TXS-488: a quiet cap of 2 (MR-TXS-495), so that late reports are counted and refused
_LATE_CASE = (dict(SMALL, late_cap=2), 30, 2, {"late_acks": True, "loss": 0.5, "p_cwnd": 0.05, "cwnd_hi": 8000})


def test_rows_rtl_late_reports():
    """MR-TXS-445, MR-TXS-446, MR-TXS-449: the row scheduler's RTL in lockstep with its model
    with late ACKs (half the receiver's ACKs lost, every other flush timing the paths out before
    it ACKs them): reports flagged late among suspicions and reroutes, 0 mismatches, the
    checker passes. Negative control (slow): ``test_rows_rtl_late_wrong_form_fails``. The
    default run's lockstep of this size (``test_rows_rtl_lockstep``'s first case is slow).
    MR-TXS-500, MR-TXS-501, MR-TXS-502: the RTL's terms formed side by side (no cycle change)
    keep this lockstep and every other against the unchanged row model."""
    prm, n, seed, kw = _LATE_CASE
    core, drv, model, items, _ = rows_lockstep(prm, n, seed, **kw)
    assert core.mismatches == 0
    tc.check(TxSchedModel(**prm), items, drv.res)
    assert drv.res["late"] >= 3 and sum(drv.res["verdicts"].values()) >= 3, \
        (drv.res["late"], dict(drv.res["verdicts"]))
    assert model.counts["sched"] >= n and model.counts["acked"] and model.counts["complete"]
    assert model.sem.late_refused > 0, "MR-TXS-499: some late report refused at the cap"


#: MR-TXS-491's wrong forms of the row RTL: the late report's flight released (MR-TXS-446's
#: wrong form), the late report ignored (the rule before live46)
ROWS_LATE_WRONG = {
    "releases_flight": ("r_rel.eq(r_hit & ~a.late)", "r_rel.eq(r_hit)"),
    "ignored": ("& ~(a.late & (rps.quiet == QCAP))),", "& ~a.late),"),
    # MR-TXS-499: live46's rule, no quiet count; the count never zeroed
    "unguarded": ("& ~(a.late & (rps.quiet == QCAP))),", "),"),
    "never_reset": ("m.d.comb += np_.quiet.eq(0)", "pass"),
}


@pytest.mark.slow
@pytest.mark.parametrize("wrong", sorted(ROWS_LATE_WRONG))
def test_rows_rtl_late_wrong_form_fails(wrong):
    """MR-TXS-446, MR-TXS-491 (negative controls): the row scheduler's RTL releasing a late
    report's flight, or ignoring a late report of the slot's present message, mismatches its
    model."""
    from metaroce.tb.lockstep import Mismatch, wrong_form
    prm, n, seed, kw = _LATE_CASE
    bad = wrong_form("tx_sched_rows", *ROWS_LATE_WRONG[wrong])
    with pytest.raises(Mismatch):
        rows_lockstep(prm, n, seed, hdl=bad, **kw)


@pytest.mark.parametrize("seed,n", [(1, 30), pytest.param(2, 60, marks=pytest.mark.slow),
                                    pytest.param(3, 60, marks=pytest.mark.slow)])
def test_rows_rtl_failures_and_responses(seed, n):
    """MR-TXS-253, MR-TXS-254, MR-TXS-209: with message and connection failures on
    ``s_fail``/``s_error`` (one connection's, alone or together) and READ responses on
    ``s_rsp``: 0 mismatches; every work request completes once (failed ones with their
    status)."""
    core, drv, model, items, rs = rows_lockstep(dict(SMALL), n, seed, rsps=4, p_fail=0.03)
    assert core.mismatches == 0
    assert len(drv.res["cqe"]) == n and len(drv.res["rsp_done"]) == 4
    assert model.counts["fail"] and {4, 12} & {c["status"] for c in drv.res["cqe"]}


@pytest.mark.slow
def test_rows_rtl_refused():
    """MR-TXS-217, MR-TXS-254, MR-TXS-263: refused work requests held and taken again, and lost
    reports on a full FIFO kept and refilled: a 2-entry resend FIFO, 1,100-byte path windows
    and 40 % loss (work requests refused on full rings, lost chunks kept): 0 mismatches. (Seed
    2 since s1_45: MR-TXS-470's hold moved seed 1's schedule ops, and its run no longer
    refilled a kept chunk; seed 2's refuses 11 requests and refills 7 chunks.)"""
    prm = dict(SMALL, resend_depth=2, cwnd=1100)
    refused = {"wr": 0, "lost": 0}
    from metaroce.models import tx_sched_rows as mrows
    orig = mrows.TxSchedRowsModel._apply

    def counting(self, op, word, now):
        r = orig(self, op, word, now)
        if r[6]:
            refused[op.kind] += 1
        return r
    mrows.TxSchedRowsModel._apply = counting
    try:
        core, drv, model, items, rs = rows_lockstep(prm, 40, 2, rsps=6, loss=0.4, p_cwnd=0.05)
    finally:
        mrows.TxSchedRowsModel._apply = orig
    assert core.mismatches == 0 and refused["wr"] and not refused["lost"] and model.refills
    tc.check(TxSchedModel(**prm), items, drv.res, rs)


@pytest.mark.parametrize("seed", [STALL_SEED, pytest.param(3, marks=pytest.mark.slow),
                                  pytest.param(6, marks=pytest.mark.slow)])
def test_rows_rtl_lost_not_queued(seed):
    """MR-TXS-263: the RTL's kept chunks and refills in lockstep with the model on stk31's
    traffic (60 % loss, path states, window writes, random backpressure): 0 mismatches, every
    work request completes; ``STALL_SEED`` takes refills."""
    core, drv, model, items, rs = rows_lockstep(dict(SMALL), 40, seed, **STALL_KW)
    assert core.mismatches == 0 and len(drv.res["cqe"]) == 40
    assert model.refills or seed != STALL_SEED
    tc.check(TxSchedModel(**SMALL), items, drv.res)


def test_rows_rtl_without_forwarding_fails():
    """MR-TXS-254 (negative control): the RTL without MR-TXS-221's forwards (the rows' and the
    descriptors') mismatches the model on the driver's traffic."""
    from metaroce.tb.lockstep import Mismatch
    with pytest.raises(Mismatch):
        rows_lockstep(dict(SMALL), 30, 0, forward=False)


@pytest.mark.parametrize("old,new,kw", [
    # (the descriptor's forward's, MR-TXS-252, gone with it: MR-TXS-472)
    # the queues' head read not transparent (MR-TXS-251): a push into an empty queue is missed
    pytest.param("rd = mem.read_port(transparent_for=(wr,))", "rd = mem.read_port()", {},
                 marks=pytest.mark.slow),
    # the output room without the ops in flight (MR-TXS-216)
    pytest.param("n_cq = (pipe.s1_valid & s1a.cq) + (pipe.s2_valid & s2a.cq)", "n_cq = 0",
                 {"p_bp": 0.8}, marks=pytest.mark.slow),
    pytest.param("n_sched = (pipe.s1_valid & (s1a.kind == K_SCHED)) + (pipe.s2_valid & "
                 "(s2a.kind == K_SCHED))", "n_sched = 0", {"p_bp": 0.8}, marks=pytest.mark.slow),
    # MR-TXS-263: the refill left out (a kept chunk never resent)
    pytest.param("m.d.comb += fill.eq(popped & f_any)", "m.d.comb += fill.eq(0)", "stall",
                 marks=pytest.mark.slow),
    # MR-TXS-263: a full FIFO's lost chunk not kept
    pytest.param("lnq_set = Mux(is_k[K_LOST] & lost_q & r_full, r_bit, 0)", "lnq_set = 0", "stall",
                 marks=pytest.mark.slow),
    # MR-TXS-511: S2's write forwarded into S2's register without its valid (an empty S2's
    # op, kind 0 on a stale argument, applied to the next op's row)
    # (slow: the default run keeps the lane lockstep's control of the forward, MR-TXS-507)
    pytest.param("fwd_s1.eq(s2_valid & (s2_conn == s1_conn))", "fwd_s1.eq(s2_conn == s1_conn)",
                 {}, marks=pytest.mark.slow),
    # MR-TXS-513: a SEND's va loaded (its frame's RETH then carries it)
    pytest.param('keep = {"va": ~send, "rkey": ~send,', 'keep = {"rkey": ~send,', {},
                 marks=pytest.mark.slow)])
def test_rows_rtl_wrong_forms_fail(old, new, kw):
    """MR-TXS-254, MR-TXS-263, MR-TXS-511, MR-TXS-513 (negative controls): each wrong form
    mismatches the model.
    (MR-TXS-502: the full FIFO's kept bit named in MR-TXS-501's report writes, after the
    other kinds')"""
    from metaroce.tb.lockstep import Mismatch, wrong_form
    hdl = wrong_form("tx_sched_rows", old, new)
    with pytest.raises(Mismatch):
        if kw == "stall":
            rows_lockstep(dict(SMALL), 40, STALL_SEED, hdl=hdl, **STALL_KW)
        else:
            rows_lockstep(dict(SMALL), 30, 1, hdl=hdl, **kw)


def psn_case(prm, seed, below=(1, 6)):
    """MR-TXS-485: the driver's initial-PSN writes: every path's a few packets below 2^24
    (``tx_cases.near_wrap``, ``below`` packets), written first; then one write per connection
    after its first frame (it has started: ignored)."""
    from metaroce.models.tx_cases import near_wrap
    return dict(init_psns=near_wrap(prm["conns"], prm["paths"], seed, below), late_psn=True)


@pytest.mark.parametrize("prm,n,seed,below,kw", [
    (dict(SMALL), 30, 1, (1, 6), {"p_cwnd": 0.1}),
    pytest.param(dict(SMALL, conns=4, paths=8), 50, 4, (1, 3), {"p_cwnd": 0.05, "p_bp": 0.6},
                 marks=pytest.mark.slow)])
def test_rows_rtl_initial_psns(prm, n, seed, below, kw):
    """MR-TXS-481..485: the row scheduler's RTL in lockstep with its model through the driver
    with initial-PSN writes (every path's near 2^24, landed; one per connection after its first
    frame, ignored), window writes, loss, idle cycles and backpressure: 0 mismatches; each
    path's PSNs run from its initial PSN across the wrap (the checker); the replay finds every
    write landed exactly when no request of its connection was applied before it; the late
    writes ignored (``psn_ignored`` once each); every connection's frames past the wrap.
    Negative controls: the model with a write landing after its connection started, or with
    every write dropped, mismatches the RTL."""
    from metaroce.hdl.tx_sched_rows import TxSchedRows
    from metaroce.tb.lockstep import AmaranthSim, Mismatch
    sem = TxSchedModel(**prm)
    items = tc.traffic(sem, n, seed=seed)
    sim = AmaranthSim(TxSchedRows(64, **prm))

    def run(**model_kw):
        model = TxSchedRowsModel(64, **prm, **model_kw)
        drv = tc.Driver(model.lay, items, seed=seed, **psn_case(prm, seed, below), **kw)
        return sim.run(model, drv, busy=model.busy), drv, model
    core, drv, model = run()
    assert core.mismatches == 0
    tc.check(sem, items, drv.res)
    replay(model)
    C, Pn = prm["conns"], prm["paths"]
    assert model.counts["psn"] == C * Pn + C and drv.res["psn_ignored"] == C
    wrapped = {(f["conn"], f["mrdh_path"]) for f in drv.res["frames"] if f["bth_psn"] < 1024}
    assert {c for c, _ in wrapped} == set(range(C)), wrapped
    # negative controls on the same build: the model's write landing after its connection
    # started, or dropped, mismatches the RTL
    for wrong in ("always", "dropped"):
        with pytest.raises(Mismatch):
            run(psn_wrong=wrong)


@pytest.mark.slow      # the default's controls: test_rows_rtl_initial_psns' model forms
@pytest.mark.parametrize("old,new", [
    # MR-TXS-483: a write lands after its connection started (the late writes move the PSNs)
    ("with m.Elif(~r.conn.started):", "with m.Else():"),
    # MR-TXS-482: the write dropped (the paths start at 0)
    ("with m.Elif(~r.conn.started):", "with m.Elif(0):")])
def test_rows_rtl_initial_psn_wrong_forms_fail(old, new):
    """MR-TXS-485 (negative controls): each wrong form of the write's landing mismatches the
    model on :func:`test_rows_rtl_initial_psns`' traffic."""
    from metaroce.tb.lockstep import Mismatch, wrong_form
    hdl = wrong_form("tx_sched_rows", old, new)
    with pytest.raises(Mismatch):
        rows_lockstep(dict(SMALL), 30, 1, hdl=hdl, **psn_case(SMALL, 1), p_cwnd=0.1)


def test_rows_rtl_instances():
    """MR-TXS-250, MR-TXS-255, MR-TXS-279, MR-TXS-284: the 4,096 x 8 instance is built (tail probes included) (row 2,754 bits, descriptor
    word 8 records of 400 bits) with the ports of the register scheduler (MR-TXS-002: the same
    names and layouts, without its optional ones; MR-TXS-481: its initial-PSN port too),
    and ``conns`` out of 2..4,096 or not a power of two is refused, as the model's."""
    from metaroce.hdl.tx_sched import TxSched
    from metaroce.hdl.tx_sched_rows import TxSchedRows
    dut = TxSchedRows(64, **dict(SMALL, conns=4096, paths=8), init_rows=False)
    reg = TxSched(64, **dict(SMALL, conns=256, paths=8))
    dut._MustUse__silence = reg._MustUse__silence = True      # built, not elaborated
    assert dut.rl.row.size == 2754 and dut.rl.desc.size * 8 == 3200
    assert set(dut.signature.members) == set(reg.signature.members)
    small, reg_small = TxSchedRows(64, **SMALL), TxSched(64, **SMALL)
    small._MustUse__silence = reg_small._MustUse__silence = True
    assert dict(small.signature.members) == dict(reg_small.signature.members)
    # MR-TXS-284: with restores, the register scheduler's m_restore too; MR-TXS-316/348: the
    # same record {conn, path, kept} in both
    rs, reg_rs = TxSchedRows(64, **SMALL, restores=True), TxSched(64, **SMALL, restores=True)
    rs._MustUse__silence = reg_rs._MustUse__silence = True
    a, b = dict(rs.signature.members), dict(reg_rs.signature.members)
    ra, rb = (x.pop("m_restore").signature.members["payload"].shape for x in (a, b))
    assert a == b and ra == rb and [n for n, _ in ra] == ["conn", "path", "kept"]
    for conns in (1, 3, 8192):
        with pytest.raises(ValueError):
            TxSchedRows(64, **dict(SMALL, conns=conns))


#: MR-TXS-267: the verdict storm's run (30 work requests, a verdict in 10 % of the cycles):
#: connection paths suspected together, the last active one met by verdicts
STORM = dict(p_verdict=0.1)
#: the storm's seed (11 until s1_45; MR-TXS-470's hold moved its schedule ops, and 11 no longer
#: met a verdict on a last active path: seed 20 does, twice, and stalls with the rule before)
STORM_SEED = 20


def _storm_model(seed=STORM_SEED, n=30, **kw):
    items = tc.traffic(TxSchedModel(**SMALL), n, seed=seed)
    m = TxSchedRowsModel(64, **SMALL, **kw)
    drv = tc.VerdictStorm(m.lay, items, seed=seed, **STORM)
    drv.limit = 6000
    run_alone(m, drv)
    return items, drv, m


# ------------------------------------------------------------------ tail probes (rowf33)

#: MR-TXS-276: the tail probes' traffic: the driver's random probes and the unit's at the
#: block's quiet points, 60 % loss (so verdicts raise path generations before some probes)
PROBE_KW = dict(p_idle=0.2, p_bp=0.4, p_cwnd=0.05, cwnd_hi=8000, p_probe=0.05, loss=0.6)
#: the probes' seed with probes of a path whose generation a verdict raised since their
#: packet's first frame (4 until s1_45; MR-TXS-470's hold moved its schedule ops and 4 had
#: none left: seed 5 has one); the seed of the many-probes run without such probes (1 until
#: s1_45, whose run then had 5 probes dropped, below the test's 6: seed 2, 13 of 26)
PROBE_GEN_SEED, PROBE_MANY_SEED = 5, 2


def probe_frames(res):
    """The probe frames among the driver's frames: ``(frame, its packet's first frame)`` (a
    frame whose PSN is not its path's next re-sends an earlier one, MR-TXS-092)."""
    first, nxt, out = {}, {}, []
    for f in res["frames"]:
        key = (f["conn"], f["mrdh_path"])
        if f["bth_psn"] != nxt.get(key, 0):
            out.append((f, first[(*key, f["bth_psn"])]))
            continue
        first[(*key, f["bth_psn"])] = f
        nxt[key] = f["bth_psn"] + 1
    return out


def run_probes(seed, n=40, prm=None, **kw):
    prm = prm or dict(SMALL)
    m = TxSchedRowsModel(64, **prm)
    items = tc.traffic(TxSchedModel(**prm), n, seed=seed)
    res = tc.run_model(m, items, seed=seed, **dict(PROBE_KW, **kw))
    return items, res, m


@pytest.mark.parametrize("seed,kw", [(0, {}), (PROBE_GEN_SEED, {}),
                                     (PROBE_MANY_SEED, {"p_probe": 0.2, "loss": 0.1})])
def test_rows_tail_probes(seed, kw):
    """MR-TXS-270, MR-TXS-271, MR-TXS-272, MR-TXS-273, MR-TXS-274, MR-TXS-276, MR-TXS-278,
    MR-TXS-080, MR-TXS-121: the row model takes the driver's tail probes (random ones, some of an older
    PSN or of a packet ACKed at once, and the unit's): probes rebuild frames and probes are
    dropped; every work request completes; the replay through TxSchedModel finds every
    probe's frame (or drop) the register scheduler's on the same state (MR-TXS-274); each probe
    frame is its packet's first frame with AckReq and RETX set and, where a verdict raised the
    path's generation since (``PROBE_GEN_SEED``: at least one), the path's generation now (MR-TXS-121,
    MR-TXS-248); no sent event for a probe; the register scheduler's checker (MR-TXS-092, its
    probe generations MR-TXS-264's) passes on every seed."""
    items, res, m = run_probes(seed, **kw)
    assert len(res["cqe"]) == len(items)
    pf = [e for e in m.events if e[0] == "probe"]
    hits = sum(1 for e in pf if e[3])
    assert hits > 5 and len(pf) - hits > 5, (len(pf), hits)
    frames, _ = replay(m)
    assert sum(map(len, frames.values())) == len(res["frames"])
    probes = probe_frames(res)
    assert len(probes) == hits and len(res["sent"]) == len(res["frames"]) - hits
    newer = 0
    for f, first in probes:
        want = dict(first, bth_ack_req=1, mrdh_flags=first["mrdh_flags"] | MrdhFlag.RETX,
                    gen=f["gen"])
        assert f == want
        newer += f["gen"] != first["gen"]
    if seed == PROBE_GEN_SEED:
        assert newer > 0 and sum(res["verdicts"].values())
    else:
        assert newer == 0
    tc.check(TxSchedModel(**SMALL), items, res)


def test_rows_probe_first_generation_fails():
    """MR-TXS-276 (negative control): a probe frame carrying its packet's first generation
    (the wrong form of MR-TXS-121 / MR-TXS-248) where a verdict raised it since
    (``PROBE_GEN_SEED``) fails
    the replay; so does a probe frame without RETX."""
    items, res, m = run_probes(PROBE_GEN_SEED)
    frame, first = next((f, fi) for f, fi in probe_frames(res) if f["gen"] != fi["gen"])
    k = next(i for i, e in enumerate(m.events) if e[0] == "probe" and e[4] == frame)
    for wrong in ("gen", "retx"):
        kind, c, f, res_, frame, sent, cqe, now = m.events[k]
        bad = dict(frame, gen=first["gen"]) if wrong == "gen" else dict(
            frame, mrdh_flags=frame["mrdh_flags"] & ~MrdhFlag.RETX)
        m.events[k] = (kind, c, f, res_, bad, sent, cqe, now)
        with pytest.raises(AssertionError, match="probe frame"):
            replay(m)
        m.events[k] = (kind, c, f, res_, frame, sent, cqe, now)
    replay(m)


@pytest.mark.parametrize("prm,n,seed,kw", [
    (dict(SMALL), 16, 0, {}),
    pytest.param(dict(SMALL), 40, PROBE_GEN_SEED, {}, marks=pytest.mark.slow),
    pytest.param(dict(SMALL), 40, 1, {"p_probe": 0.2, "loss": 0.1}, marks=pytest.mark.slow),
    pytest.param(dict(SMALL), 40, 3, {"p_bp": 0.8}, marks=pytest.mark.slow),
    pytest.param(dict(SMALL, conns=4, paths=8), 30, 2, {}, marks=pytest.mark.slow)])
def test_rows_rtl_tail_probes(prm, n, seed, kw):
    """MR-TXS-275, MR-TXS-277: the RTL's tail probes in lockstep with the row model through the
    driver's probes (random ones and the unit's, 60 % loss, window writes, random
    backpressure): 0 mismatches on every port every cycle, probes rebuilt and dropped, every
    work request completing, the replay passing (each probe the register scheduler's;
    MR-TXS-472: the probes' and completions' records read without a descriptor forward);
    ``PROBE_GEN_SEED``:
    probes carrying a generation raised since their packet's first frame."""
    core, drv, model, items, _ = rows_lockstep(prm, n, seed, **dict(PROBE_KW, **kw))
    assert core.mismatches == 0 and len(drv.res["cqe"]) == n
    pf = [e for e in model.events if e[0] == "probe"]
    hits = sum(1 for e in pf if e[3])
    assert hits and len(pf) > hits
    replay(model)
    if seed == PROBE_GEN_SEED:
        assert any(f["gen"] != fi["gen"] for f, fi in probe_frames(drv.res))


@pytest.mark.parametrize("old,new,kw", [
    # a probe frame without RETX (MR-TXS-080: always set)
    ("Mux(resend | is_probe, int(MrdhFlag.RETX), 0)", "Mux(resend, int(MrdhFlag.RETX), 0)", {}),
    # a probe frame with the scheduled path's generation, not its own path's (MR-TXS-121)
    pytest.param("frame.gen.eq(Mux(is_probe, tps.gen, gps.gen))", "frame.gen.eq(gps.gen)",
                 {"seed": PROBE_GEN_SEED, "n": 40}, marks=pytest.mark.slow),
    # the frame room without the probes in flight (MR-TXS-272)
    pytest.param("n_frame = n_sched + n_probe", "n_frame = n_sched",
                 {"p_bp": 0.8, "p_probe": 0.3}, marks=pytest.mark.slow)])
def test_rows_rtl_probe_wrong_forms_fail(old, new, kw):
    """MR-TXS-277 (negative controls): each wrong form of the probe's RTL mismatches the
    model on the probes' traffic."""
    from metaroce.tb.lockstep import Mismatch, wrong_form
    hdl = wrong_form("tx_sched_rows", old, new)
    kw = dict(kw)
    seed, n = kw.pop("seed", 0), kw.pop("n", 16)
    with pytest.raises(Mismatch):
        rows_lockstep(dict(SMALL), n, seed, hdl=hdl, **dict(PROBE_KW, **kw))


@pytest.mark.parametrize("old,new,kw", [
    # MR-TXS-312/512: the ACK request's room without the MTU
    # (seed 8 since s1_45: MR-TXS-470's hold moved seed 1's schedule ops off the case)
    ("Mux(gps.col, mtu, gps.cwnd) - mtu - gps.inflight", "Mux(gps.col, mtu, gps.cwnd) - gps.inflight",
     (30, 8)),
    # MR-TXS-313/510: the chosen path's since_req from path 0's
    pytest.param("Mux(req, 0, gps.since_req + 1)", "Mux(req, 0, r.paths[0].since_req + 1)",
                 (60, 2), marks=pytest.mark.slow),
    # MR-TXS-310: stream 0's bytes whatever stream is chosen
    pytest.param("nb_stream.word_select(n_s, mtu_log2 + 1)", "nb_stream[:mtu_log2 + 1]", (30, 1),
                 marks=pytest.mark.slow),
    # MR-TXS-310: a probe with the schedule op's bytes (rows43: the resend head's are among
    # the schedule op's terms, not S2's own)
    pytest.param("Mux(is_probe, nb_probe, nb_sched)", "Mux(is_probe, nb_sched, nb_sched)", "probe",
                 marks=pytest.mark.slow),
    # MR-TXS-511: the packet's path updates (MR-TXS-510) on path 0's fields whatever path is
    # chosen
    pytest.param("g_infl.eq(plus_nb(gps.inflight))", "g_infl.eq(plus_nb(r.paths[0].inflight))",
                 (30, 1), marks=pytest.mark.slow),
    pytest.param("g_psn1.eq(psn + 1)", "g_psn1.eq(r.paths[0].next_psn + 1)", (30, 1),
                 marks=pytest.mark.slow),
    # MR-TXS-512: the ACK request's bytes term against path 0's room
    pytest.param("Mux(gps.col, mtu, gps.cwnd) - mtu - gps.inflight",
                 "Mux(r.paths[0].col, mtu, r.paths[0].cwnd) - mtu - r.paths[0].inflight",
                 (30, 8), marks=pytest.mark.slow)])
def test_rows_rtl_depth_wrong_forms_fail(old, new, kw):
    """MR-TXS-314, MR-TXS-439, MR-TXS-511 (negative controls): each wrong form of rdep33's
    precomputed terms (MR-TXS-310..313; the schedule op's bytes without the probe's arm,
    MR-TXS-439, the probe's frame still with its own; MR-TXS-510's chosen path's updates)
    mismatches the row model."""
    from metaroce.tb.lockstep import Mismatch, wrong_form
    hdl = wrong_form("tx_sched_rows", old, new)
    with pytest.raises(Mismatch):
        if kw == "probe":
            rows_lockstep(dict(SMALL), 16, 0, hdl=hdl, **PROBE_KW)
        else:
            # 2 paths of 4,000 bytes: the window term decides some requests
            rows_lockstep(dict(SMALL, paths=2, cwnd=4000), *kw, hdl=hdl)


@pytest.mark.parametrize("old,new,kw", [
    # MR-TXS-434: a report's head with its old base (the acknowledgement's move not seen)
    ("Mux(new_ack, ack_fill, re.ack_base >= re.nchunks)", "(re.ack_base >= re.nchunks)",
     (30, 1, {})),
    # MR-TXS-435: a report's work without the lost chunk it queues
    ("after_rep = base | lost_queued", "after_rep = base", (30, 1, {})),
    # MR-TXS-432: a completion op without its stream's next message
    pytest.param("first[s] & (nxt[s] | Cat(", "first[s] & (Cat(", (60, 3, {"p_bp": 0.8}),
                 marks=pytest.mark.slow),
    # MR-TXS-434: a report's window without the chunk's own bit
    pytest.param("Cat(bits[j] | rem_le(j)", "Cat(re.ack_bits[j] | rem_le(j)", (30, 1, {}),
                 marks=pytest.mark.slow),
    # MR-TXS-433: a failure's head with its old status
    pytest.param("failed = (e.status != 0) | fl_hit | (f.er_v & (f.er.status != 0))",
                 "failed = (e.status != 0)", "fail", marks=pytest.mark.slow),
    # MR-TXS-435: a work request's work without its chunks
    pytest.param("(wr_unsent != 0) | rcount_nz)", "rcount_nz)", (30, 1, {}),
                 marks=pytest.mark.slow),
    # MR-TXS-435: a completion's work without its head's unsent chunks taken off
    pytest.param("(st.send == st.done), u_nz | rcount_nz,", "(st.send == st.done), base,",
                 "fail4", marks=pytest.mark.slow),
    # MR-TXS-437: the last chunk a full MTU
    pytest.param("Mux(before, mtu, Mux(", "Mux(before | at, mtu, Mux(", (30, 1, {}),
                 marks=pytest.mark.slow),
    # MR-TXS-435: a new chunk's work without the chunk taken off
    pytest.param("(cr.rcount != 1), cr.unsent != 1)", "(cr.rcount != 1), unsent_nz)", (30, 1, {}),
                 marks=pytest.mark.slow)])
def test_rows_rtl_queue_terms_wrong_forms_fail(old, new, kw):
    """MR-TXS-436, MR-TXS-438 (negative controls): each wrong form of the queues' terms by the
    op's kind (the completion queue's, MR-TXS-431..434; the active queue's, MR-TXS-435) and of
    the chunk's bytes by its place (MR-TXS-437) mismatches the row model."""
    from metaroce.tb.lockstep import Mismatch, wrong_form
    hdl = wrong_form("tx_sched_rows", old, new)
    with pytest.raises(Mismatch):
        if kw in ("fail", "fail4"):
            # seeds 3 and 7 since s1_45 (1 and 4 before: MR-TXS-470's hold moved their
            # schedule ops, and their failures no longer met the wrong terms)
            rows_lockstep(dict(SMALL), 30, 3 if kw == "fail" else 7, hdl=hdl, rsps=4, p_fail=0.1)
        else:
            rows_lockstep(dict(SMALL), kw[0], kw[1], hdl=hdl, **kw[2])


@pytest.mark.parametrize("old,new,kw", [
    # MR-TXS-452: the level with a push and a pop together counted as a push (MR-TXS-459:
    # the ring's level behind the tail register; slow, the tail's wrong form is the default)
    # (stk31's traffic at STALL_SEED: the ring pushed and popped in one cycle)
    pytest.param("level.eq(Mux(push == pop, level,", "level.eq(Mux(~push & ~pop, level,",
                 (40, STALL_SEED, STALL_KW), marks=pytest.mark.slow),
    # MR-TXS-454: a probe's LAST by the schedule op's place
    pytest.param("Mux(~Mux(is_probe, p_before, sp.before)", "Mux(~Mux(is_probe, sp.before, sp.before)",
                 "probe", marks=pytest.mark.slow),
    # MR-TXS-453: the report's flight less an MTU for the last chunk
    pytest.param("Mux(r_at, _sub0(x, r_last), x)", "Mux(r_at, _sub0(x, mtu), x)", "window",
                 marks=pytest.mark.slow),
    # MR-TXS-453: a resend's bytes never above a window's room (MR-TXS-512: the path's room
    # in S2's ACK request, where the windows of this traffic bind; the form in S1's
    # connection-window term, `sel = Mux(resend, g[0], ...)`, is not reached by it)
    pytest.param("(nb_sched > room[:nb_w])", "(Mux(resend, 0, nb_sched) > room[:nb_w])",
                 "window", marks=pytest.mark.slow),
    # MR-TXS-451: stream 0's head's unsent chunks whatever stream completes
    pytest.param("mid.conn.unsent.eq(cpl_u[s][0])", "mid.conn.unsent.eq(cpl_u[0][0])", "fail",
                 marks=pytest.mark.slow),
    # MR-TXS-450: a READ response's status not cleared (the request before it's kept)
    pytest.param("b_wr.err.eq(r.err), w_status.eq(0)]", "b_wr.err.eq(r.err)]", "rsp",
                 marks=pytest.mark.slow)])
def test_rows_rtl_parallel_wrong_forms_fail(old, new, kw):
    """MR-TXS-455 (negative controls): each wrong form of rows43's parallel forms (MR-TXS-450,
    MR-TXS-451, MR-TXS-452, MR-TXS-453, MR-TXS-454) mismatches the row model."""
    from metaroce.tb.lockstep import Mismatch, wrong_form
    hdl = wrong_form("tx_sched_rows", old, new)
    with pytest.raises(Mismatch):
        if kw == "probe":
            rows_lockstep(dict(SMALL), 16, 0, hdl=hdl, **PROBE_KW)
        elif kw == "window":
            # 2 paths of 4,000 bytes, stk31's loss: the windows bind on resends
            rows_lockstep(dict(SMALL, paths=2, cwnd=4000), 40, 3, hdl=hdl, **STALL_KW)
        elif kw == "fail":
            # failures: a stream's message completes with chunks unsent
            rows_lockstep(dict(SMALL), 30, 4, hdl=hdl, rsps=4, p_fail=0.1)
        elif kw == "rsp":
            rows_lockstep(dict(SMALL), 30, 2, hdl=hdl, rsps=8, p_fail=0.03)
        else:
            rows_lockstep(dict(SMALL), kw[0], kw[1], hdl=hdl, **kw[2])


# ------------------------------------------------------------------ restores (rowf33)

class RowsRestoreDriver(tc.Driver):
    """The scheduler's driver with ``m_restore.ready`` random (its own generator), logging per
    path the records the TX top's windows would take, in their order (hw-tx.md MR-TX-258: a
    verdict when ``s_probe`` takes it, a restore when ``m_restore`` is taken)."""

    def __init__(self, lay, items, *, restore_lay, p_rready=0.5, **kw):
        super().__init__(lay, items, **kw)
        self.r_rng, self.p_rready, self.restore_lay = random.Random(0x5E57), p_rready, restore_lay
        self.windows = defaultdict(list)
        self.restores = 0

    def inputs(self):
        inp = super().inputs()
        inp["m_restore__ready"] = int(self.r_rng.random() < self.p_rready)
        return inp

    def observe(self, inp, out):
        pr = self.probe_offer
        if pr is not None and pr.get("to") and out.get("s_probe__ready"):
            self.windows[(pr["conn"], pr["path"])].append(("verdict", pr["verdict"]))
        if out.get("m_restore__valid") and inp["m_restore__ready"]:
            r = unpack(self.restore_lay, out["m_restore__payload"])
            # MR-TXS-316: a kept verdict's record besides the restores
            self.windows[(r["conn"], r["path"])].append(("kept",) if r["kept"] else ("restore",))
            self.restores += 1
        super().observe(inp, out)


def scheduler_order(model):
    """MR-TXS-286: per path, the scheduler's path-state events in the order it applies them
    (``model.events``): a verdict's operation, an acknowledged report's that restored the path."""
    seq = defaultdict(list)
    for kind, c, f, res, *_ in model.events:
        if kind == "verdict" and f["path"] < model.paths:
            seq[(c, f["path"])].append(("verdict", f["verdict"]))
            if res:                     # MR-TXS-316: taken as a reroute, its record follows
                seq[(c, f["path"])].append(("kept",))
        elif kind == "acked" and res:
            seq[(c, f["path"])].append(("restore",))
    return dict(seq)


def windows_order(drv, paths):
    return {k: v for k, v in drv.windows.items() if k[1] < paths}


def run_restores(seed, n=40, *, restore_hold=True, **kw):
    prm = dict(SMALL)
    m = TxSchedRowsModel(64, **prm, restores=True, restore_hold=restore_hold)
    items = tc.traffic(TxSchedModel(**prm), n, seed=seed)
    drv = RowsRestoreDriver(m.lay, items, restore_lay=m.restore_lay, seed=seed,
                            **dict(STALL_KW, **kw))
    run_alone(m, drv)
    return items, drv, m


@pytest.mark.parametrize("old,new,kw", [
    # MR-TXS-456: the tail not in the queue until written (a connection queued a cycle late)
    ("head, nonempty = Mux(mem_ne, rd.data, tail_c), mem_ne | tail_v",
     "head, nonempty = rd.data, mem_ne", (30, 1, {"p_cwnd": 0.1})),
    # MR-TXS-456: the tail written into the ring also when a pop takes it (twice in a queue)
    pytest.param("push.eq(tail_v & ~(self.pop & ~mem_ne))", "push.eq(tail_v)",
                 (30, 1, {"p_cwnd": 0.1}), marks=pytest.mark.slow),
    # MR-TXS-457: the output queues' payload without the tail's data
    pytest.param("self.r_data.eq(Mux(tail_v & at_tail, tail_d, rd.data))",
                 "self.r_data.eq(rd.data)", (30, 1, {"p_cwnd": 0.1}), marks=pytest.mark.slow),
    # MR-TXS-458: the forward's term compared with S1's connection
    pytest.param("by_take(lambda c: c == pipe.s2_conn)", "by_take(lambda c: c == pipe.s1_conn)",
                 (30, 1, {"p_cwnd": 0.1}), marks=pytest.mark.slow)])
def test_rows_rtl_push_wrong_forms_fail(old, new, kw):
    """MR-TXS-459 (negative controls): each wrong form of push44's registered pushes
    (MR-TXS-456's queue tails, MR-TXS-457's output queue tails) and of MR-TXS-458's forward
    term mismatches the unchanged row model."""
    from metaroce.tb.lockstep import Mismatch, wrong_form
    hdl = wrong_form("tx_sched_rows", old, new)
    with pytest.raises(Mismatch):
        rows_lockstep(dict(SMALL), kw[0], kw[1], hdl=hdl, **kw[2])


@pytest.mark.parametrize("model_hold", [False, pytest.param(True, marks=pytest.mark.slow)])
def test_rows_rtl_s1_decision_wrong_forms_fail(model_hold):
    """MR-TXS-470, MR-TXS-471, MR-TXS-473 (negative controls): the RTL without the hold
    (``sched_hold=False``: a schedule op taken right behind an operation of its connection, its
    decision formed in S1 on a row without that operation's write) mismatches the model
    without the hold (the timing before s1_45) and, slow, the model with it; the same traffic
    with the hold holds schedule ops (``sched_waits``, the model alone; the locksteps with the
    hold on both sides are the other tests')."""
    from metaroce.tb.lockstep import Mismatch
    if not model_hold:
        _, res, m = run_rows(dict(SMALL), 30, 0)
        assert m.sched_waits > 0 and len(res["cqe"]) == 30
    with pytest.raises(Mismatch):
        rows_lockstep(dict(SMALL), 30, 0, model_kw={"sched_hold": model_hold},
                      rtl_kw={"sched_hold": False})


def test_rows_last_active_kept():
    """MR-TXS-266, MR-TXS-267: the row model on the verdict storm (``STORM_SEED``) completes every work
    request, passes the register scheduler's checker and the replay (MR-TXS-230, the register
    scheduler with MR-TXS-290 too), and took verdicts on a connection's last active path as
    reroutes."""
    items, drv, m = _storm_model()
    assert len(drv.res["cqe"]) == len(items)
    tc.check(TxSchedModel(**SMALL), items, drv.res)
    replay(m)
    assert m.kept >= 1


def test_rows_last_active_lost_stalls():
    """MR-TXS-269 (negative control): the rule before (``last_active_kept=False``) on the same
    storm leaves a connection with every path probing and a resend queued: no progress."""
    with pytest.raises(AssertionError, match="no progress"):
        _storm_model(last_active_kept=False)


def test_rows_rtl_last_active():
    """MR-TXS-266..268: the row scheduler's RTL in lockstep with its model on the verdict storm
    (``STORM_SEED``) with random backpressure: 0 mismatches, every work request completes, verdicts
    taken as reroutes."""
    core, drv, model, items, _ = rows_lockstep(dict(SMALL), 30, STORM_SEED, driver=tc.VerdictStorm,
                                               **STORM)
    assert len(drv.res["cqe"]) == len(items) and model.kept >= 1
    tc.check(TxSchedModel(**SMALL), items, drv.res)


#: MR-TXS-269's wrong form in the RTL: the rule before MR-TXS-266 (every suspicion probing)
ROWS_LAST_ACTIVE_WRONG = ("m.d.comb += others.eq(Cat(", "m.d.comb += others.eq(1 | Cat(")


def test_rows_rtl_last_active_wrong_form_fails():
    """MR-TXS-269 (negative control): the RTL with the rule before MR-TXS-266 mismatches the
    model on the storm."""
    from metaroce.tb.lockstep import Mismatch, wrong_form
    hdl = wrong_form("tx_sched_rows", *ROWS_LAST_ACTIVE_WRONG)
    with pytest.raises(Mismatch):
        rows_lockstep(dict(SMALL), 30, STORM_SEED, hdl=hdl, driver=tc.VerdictStorm, **STORM)


@pytest.mark.parametrize("seed,kw", [(1, {}), (2, {"p_probe": 0.05})])
def test_rows_restores(seed, kw):
    """MR-TXS-284, MR-TXS-285, MR-TXS-286, MR-TXS-287, MR-TXS-288: the row model with
    ``restores`` on stk31's traffic (60 % loss, the timeouts' verdicts, window writes,
    backpressure, ``m_restore.ready`` random; seed 2 with tail probes too): restores taken;
    the replay finds each where the register scheduler restores a path (an acknowledged report
    of a path not active) and no other; per path, the windows' records (verdicts as
    ``s_probe`` takes them, restores as ``m_restore`` gives them) are in the scheduler's order
    of its operations, so the windows end in the scheduler's path states; every work request
    completes and the checker passes."""
    items, drv, m = run_restores(seed, **kw)
    assert drv.restores >= 3 and len(drv.res["cqe"]) == len(items)
    replay(m)
    assert windows_order(drv, m.paths) == scheduler_order(m)
    if not kw:
        tc.check(TxSchedModel(**SMALL), items, drv.res)


class ScriptDriver:
    """MR-TXS-288: a directed run: each of ``offers`` ``(cycle, port, payload)`` presented
    from its cycle until taken (one at a time per port, in order), the outputs always ready;
    the windows' records logged as :class:`RowsRestoreDriver`'s (``restore_lay`` None: a
    scheduler without restores, no ``m_restore``)."""

    def __init__(self, lay, restore_lay, offers, cycles=80):
        self.lay, self.restore_lay = lay, restore_lay
        self.offers, self.cycles, self.cycle = list(offers), cycles, 0
        self.windows = defaultdict(list)
        self.frames = []

    @property
    def finished(self):
        return self.cycle >= self.cycles

    def _heads(self):
        heads = {}
        for k, (t, port, pay) in enumerate(self.offers):
            if t <= self.cycle and port not in heads:
                heads[port] = k
        return heads

    def inputs(self):
        inp = {k: 0 for k in ("s_wr__valid", "s_wr__payload", "s_acked__valid",
                              "s_acked__payload", "s_resend__valid", "s_resend__payload",
                              "s_cwnd__valid", "s_cwnd__payload", "s_rsp__valid",
                              "s_rsp__payload", "s_probe__valid", "s_probe__payload",
                              "s_fail__valid", "s_fail__payload", "s_error__valid",
                              "s_error__payload")}
        inp.update(now=self.cycle * 4, m_frame__ready=1, m_sent__ready=1, m_cqe__ready=1,
                   m_rsp_done__ready=1)
        if self.restore_lay is not None:
            inp["m_restore__ready"] = 1
        lays = {"s_wr": self.lay.wr, "s_acked": self.lay.report, "s_probe": self.lay.probe,
                "s_resend": self.lay.report}
        for port, k in self._heads().items():
            inp[f"{port}__valid"] = 1
            inp[f"{port}__payload"] = pack(lays[port], self.offers[k][2])
        return inp

    def observe(self, inp, out):
        for port, k in sorted(self._heads().items(), key=lambda x: -x[1]):
            if out[f"{port}__ready"]:
                pay = self.offers.pop(k)[2]
                if port == "s_probe":
                    self.windows[(pay["conn"], pay["path"])].append(("verdict", pay["verdict"]))
        if out.get("m_restore__valid"):
            r = unpack(self.restore_lay, out["m_restore__payload"])
            self.windows[(r["conn"], r["path"])].append(("restore",))
        if out["m_frame__valid"]:
            self.frames.append(unpack(self.lay.frame, out["m_frame__payload"]))
        self.cycle += 1

    def settle(self, busy):
        pass


def restore_race(m):
    """MR-TXS-288: path 0 of connection 0 suspected, its one packet (a 100-byte write) ACKed
    and, the next cycle, suspected again: the ACK's restore and the second verdict race."""
    wr = dict(tc.traffic(TxSchedModel(**SMALL), 1, seed=0)[0], conn=0, stream=0, op=0,
              length=100)
    v = {"conn": 0, "path": 0, "psn": 0, "to": 1, "verdict": P.PATH_SUSPECT}
    ack = {"conn": 0, "path": 0, "slot": 0, "chunk": 0, "abort": 0, "lap": 0}
    return ScriptDriver(m.lay, m.restore_lay, [(0, "s_probe", v), (6, "s_wr", wr),
                                               (30, "s_acked", ack), (31, "s_probe", v)])


@pytest.mark.parametrize("hold", [True, False])
def test_rows_restore_race(hold):
    """MR-TXS-286, MR-TXS-288: the directed race (:func:`restore_race`): with the hold the
    second verdict waits for the restore, so the windows take restore then verdict, the
    scheduler's order, and end with the path probing as the scheduler; without it
    (``restore_hold=False``, the negative control) the windows take the verdict before the
    restore made before it and end with the path active where the scheduler holds it probing."""
    m = TxSchedRowsModel(64, **SMALL, restores=True, restore_hold=hold)
    drv = run_alone(m, restore_race(m))
    assert not drv.offers and len(drv.frames) == 1 and drv.frames[0]["mrdh_path"] == 0
    replay(m)
    want = [("verdict", P.PATH_SUSPECT), ("restore",), ("verdict", P.PATH_SUSPECT)]
    assert scheduler_order(m) == {(0, 0): want}
    if hold:
        assert windows_order(drv, m.paths) == scheduler_order(m)
    else:
        assert drv.windows[(0, 0)] == [want[0], want[2], want[1]]


def ack_then_lost(m):
    """MR-TXS-506: connection 0 sends a message of three chunks; at cycle 40 its chunk 1 is
    reported acknowledged and lost at once (the acknowledged report taken first, the lost one
    the next cycle: right behind it in the pipeline, S2's row the acknowledgement's write), and
    a second message of two chunks is written."""
    wr = dict(tc.traffic(TxSchedModel(**SMALL), 1, seed=0)[0], conn=0, stream=0, op=0,
              length=3 * SMALL["mtu"])
    rep = {"conn": 0, "path": 0, "slot": 0, "chunk": 1, "abort": 0, "lap": 0}
    return ScriptDriver(m.lay, None, [(0, "s_wr", wr), (40, "s_acked", rep),
                                      (40, "s_resend", dict(rep)),
                                      (40, "s_wr", dict(wr, length=2 * SMALL["mtu"]))],
                        cycles=150)


def rows_ack_lost_lockstep(hdl=None):
    """:func:`ack_then_lost` on the RTL (``hdl``'s) against the row model; with the cycles in
    which S2 corrected S1's acknowledgement test for the op just ahead (MR-TXS-504)."""
    from metaroce.hdl import tx_sched_rows
    from metaroce.tb.lockstep import run_amaranth
    m = TxSchedRowsModel(64, **SMALL)
    drv = ack_then_lost(m)
    dut = (hdl or tx_sched_rows).TxSchedRows(64, **SMALL)
    fired = []

    async def watch(ctx):
        async for *_, v in ctx.tick().sample(dut.rep_ahead_ack):
            fired.append(v)
    core = run_amaranth(dut, m, drv, busy=m.busy, background=[watch])
    return core, drv, m, sum(fired)


@pytest.mark.slow
def test_rows_rtl_lost_behind_its_ack():
    """MR-TXS-503..506: a lost report right behind the acknowledgement of its chunk (directed,
    :func:`ack_then_lost`): S1's test, formed without that acknowledgement, corrected in S2
    (once), the chunk not queued, 0 mismatches; the second message's chunks follow at once."""
    core, drv, m, fired = rows_ack_lost_lockstep()
    assert core.mismatches == 0 and fired == 1 and not drv.offers
    assert m.counts["acked"] == 1 and m.counts["lost"] == 1 and len(drv.frames) == 5


@pytest.mark.slow
def test_rows_rtl_lost_behind_its_ack_wrong_form_fails():
    """MR-TXS-506 (negative control): without S2's correction (S1's test alone) the chunk is
    queued again; its resend, dropped as acknowledged, takes a schedule op: the second
    message's frame comes a cycle late (a mismatch on ``m_frame``)."""
    from metaroce.tb.lockstep import Mismatch, wrong_form
    hdl = wrong_form("tx_sched_rows", "rep_acked = sp.rep_acked | ah_hit", "rep_acked = sp.rep_acked")
    with pytest.raises(Mismatch) as e:
        rows_ack_lost_lockstep(hdl)
    assert e.value.signal == "m_frame__payload"


def rows_restore_lockstep(drv_of, *, hdl=None, n=40, seed=1, **kw):
    """``TxSchedRows(restores=True)`` in lockstep with ``TxSchedRowsModel(restores=True)``
    (``m_restore`` compared every cycle with the other ports): ``drv_of(model)`` the driver."""
    from metaroce.hdl import tx_sched_rows
    from metaroce.tb.lockstep import run_amaranth
    hdl = hdl or tx_sched_rows
    m = TxSchedRowsModel(64, **SMALL, restores=True)
    drv = drv_of(m)
    core = run_amaranth(hdl.TxSchedRows(64, **SMALL, restores=True), m, drv, busy=m.busy)
    return core, drv, m


def test_rows_rtl_restore_race():
    """MR-TXS-289: the RTL's restores in lockstep with the model on the directed race
    (:func:`restore_race`): 0 mismatches, the windows' order the scheduler's."""
    core, drv, m = rows_restore_lockstep(restore_race)
    assert core.mismatches == 0 and m.counts["verdict"] == 2
    assert windows_order(drv, m.paths) == scheduler_order(m) and (0, 0) in drv.windows


@pytest.mark.slow
def test_rows_rtl_restore_without_hold_fails():
    """MR-TXS-289 (negative control): the RTL without the hold of ``s_probe`` (MR-TXS-286)
    mismatches the model on the directed race."""
    from metaroce.tb.lockstep import Mismatch, wrong_form
    hdl = wrong_form("tx_sched_rows", "p_hold = ~rst_q.r_rdy & (n_ack == 0) & ~taken[K_ACKED]",
                     "p_hold = Const(1, 1)")
    with pytest.raises(Mismatch):
        rows_restore_lockstep(restore_race, hdl=hdl)


@pytest.mark.slow
@pytest.mark.parametrize("seed,kw", [(1, {}), (2, {"p_probe": 0.05})])
def test_rows_rtl_restores(seed, kw):
    """MR-TXS-289: the RTL with ``restores`` in lockstep with the model on
    :func:`test_rows_restores`'s traffic (40 work requests; seed 2 with tail probes): 0
    mismatches on every port, ``m_restore`` included; restores taken; the windows' order the
    scheduler's."""
    def drv_of(m):
        items = tc.traffic(TxSchedModel(**SMALL), 40, seed=seed)
        return RowsRestoreDriver(m.lay, items, restore_lay=m.restore_lay, seed=seed,
                                 **dict(STALL_KW, **kw))
    core, drv, m = rows_restore_lockstep(drv_of)
    assert core.mismatches == 0 and drv.restores >= 3 and len(drv.res["cqe"]) == 40
    assert windows_order(drv, m.paths) == scheduler_order(m)


# ------------------------------------------------------------------ MR-TXS-271's case

class StepDriver:
    """MR-TXS-271's directed run: ``steps``, each a list of ``(port, payload)`` offered in
    order (one port at a time) and ``ack``: every packet sent in the step acknowledged at once
    (but those of stream 1's slots, never); the next step once the offers are taken and the
    block has been quiet 20 cycles. The outputs always ready."""

    LAYS = ("wr", "cwnd", "report", "probe")

    def __init__(self, lay, steps):
        self.lay, self.steps = lay, [(list(o), a) for o, a in steps]
        self.cycle, self.quiet, self.acks, self.frames = 0, 0, deque(), []

    @property
    def finished(self):
        return not self.steps and self.quiet > 30

    def inputs(self):
        inp = {f"{p}__{k}": 0 for p in ("s_wr", "s_acked", "s_resend", "s_cwnd", "s_rsp",
                                         "s_probe", "s_fail", "s_error")
               for k in ("valid", "payload")}
        inp.update(now=self.cycle * 4, m_frame__ready=1, m_sent__ready=1, m_cqe__ready=1,
                   m_rsp_done__ready=1)
        if self.steps and self.steps[0][0]:
            port, pay = self.steps[0][0][0]
            lay = {"s_wr": self.lay.wr, "s_cwnd": self.lay.cwnd, "s_probe": self.lay.probe}
            inp[f"{port}__valid"], inp[f"{port}__payload"] = 1, pack(lay[port], pay)
        if self.acks:
            inp["s_acked__valid"] = 1
            inp["s_acked__payload"] = pack(self.lay.report, self.acks[0])
        return inp

    def observe(self, inp, out):
        busy = False
        if self.steps and self.steps[0][0]:
            port = self.steps[0][0][0][0]
            if out[f"{port}__ready"]:
                self.steps[0][0].pop(0)
            busy = True
        if self.acks and out["s_acked__ready"]:
            self.acks.popleft()
        if out["m_frame__valid"]:
            self.frames.append(unpack(self.lay.frame, out["m_frame__payload"]))
        if out["m_sent__valid"]:
            s = unpack(self.lay.sent, out["m_sent__payload"])
            if self.steps and self.steps[0][1] and s["slot"] < 4:
                self.acks.append({k: s[k] for k in ("conn", "path", "slot", "chunk", "lap")}
                                 | {"abort": 0})
        busy = busy or self.acks or out["m_frame__valid"] or out["m_sent__valid"] or (
            out["m_cqe__valid"])
        self.quiet = 0 if busy else self.quiet + 1
        if self.steps and not self.steps[0][0] and self.quiet >= 20:
            self.steps.pop(0)
            self.quiet = 0
        self.cycle += 1

    def settle(self, busy):
        pass


def tail_reuse_steps():
    """MR-TXS-271: path 0 of connection 0 carries X (stream 1, never ACKed) then Y (stream 0's
    slot 0, lap 0, ACKed: Y completes) while paths 1..3 are closed; then path 0 closed and the
    others open, stream 0 takes 8 more one-packet messages, all ACKed but the last, which is
    slot 0 at lap 0 again: path 0's newest packet names a live entry of its slot and lap and
    the path has a packet in flight (X); a probe of Y's PSN must be dropped."""
    base = dict(tc.traffic(TxSchedModel(**SMALL), 1, seed=0)[0], conn=0, op=0, length=100)

    def wr(stream, k):
        return ("s_wr", dict(base, stream=stream, wr_id=k))

    def cw(path, w):
        return ("s_cwnd", {"conn": 0, "path": path, "cwnd": w})
    return [([cw(1, 0), cw(2, 0), cw(3, 0)], True), ([wr(1, 0)], True), ([wr(0, 1)], True),
            ([cw(0, 0)] + [cw(p, SMALL["cwnd"]) for p in (1, 2, 3)], True),
            ([wr(0, k) for k in range(2, 9)], True), ([wr(0, 9)], False),
            ([("s_probe", {"conn": 0, "path": 0, "psn": 1, "to": 0, "verdict": 0})], False)]


def test_rows_probe_after_slot_reuse_dropped():
    """MR-TXS-271: the tail-slot case (:func:`tail_reuse_steps`): the row model drops the
    probe (the register scheduler's replay agrees), with the conditions of the case met at the
    end (path 0: next PSN 2, one packet in flight, newest packet at slot 0 lap 0, slot 0 live
    at lap 0 again with one lap bit: lap 2 of LAP_BITS since MR-TXS-490, the lap compare dropping
    it too); the RTL in lockstep: 0 mismatches; the RTL without the work request's clear of
    ``tail_ok`` rebuilds a frame there and mismatches (slow)."""
    m = TxSchedRowsModel(64, **SMALL)
    drv = run_alone(m, StepDriver(m.lay, tail_reuse_steps()))
    pf = [e for e in m.events if e[0] == "probe"]
    assert len(pf) == 1 and not pf[0][3]
    replay(m)
    row = unpack_row(m.rl, m.mem[0])
    p0, e0 = row["paths"][0], row["entries"][0]
    assert (p0["next_psn"], p0["pkts"], p0["tail_slot"], e0["lap"]) == (2, 1, 0, 2)
    assert p0["tail_lap"] == 0
    assert [f["mrdh_path"] for f in drv.frames[:2]] == [0, 0] and len(drv.frames) == 10
    assert row["streams"][0]["tail"] - row["streams"][0]["done"] == 1      # slot 0 live


def tail_reuse_lockstep(hdl=None):
    from metaroce.hdl import tx_sched_rows
    from metaroce.tb.lockstep import run_amaranth
    m = TxSchedRowsModel(64, **SMALL)
    return run_amaranth((hdl or tx_sched_rows).TxSchedRows(64, **SMALL), m,
                        StepDriver(m.lay, tail_reuse_steps()), busy=m.busy)


def test_rows_rtl_probe_after_slot_reuse():
    """MR-TXS-271, MR-TXS-277: the RTL on the tail-slot case: 0 mismatches (the probe dropped)."""
    assert tail_reuse_lockstep().mismatches == 0


@pytest.mark.slow
def test_rows_rtl_probe_after_slot_reuse_without_clear_fails():
    """MR-TXS-271 (negative control): the RTL without the work request's clear of the paths'
    ``tail_ok`` rebuilds a frame of the slot's new message and mismatches the model. Since
    MR-TXS-490 (live46) the case's new message has lap 2, not the tail's 0, and the tail's lap
    compare drops the probe too, so the wrong form also compares one lap bit (as before
    live46): the clear is what drops it once the slot's lap comes round (2^LAP_BITS laps)."""
    import importlib.util
    import types
    from metaroce.tb.lockstep import Mismatch
    spec = importlib.util.find_spec("metaroce.hdl.tx_sched_rows")
    src = open(spec.origin).read()
    edits = [("m.d.comb += mid.paths[p].tail_ok.eq(0)", "pass"),
             ("& (ge.lap == tps.tail_lap) &", "& (ge.lap[0] == tps.tail_lap[0]) &")]
    for a, b in edits:
        assert src.count(a) == 1, a
        src = src.replace(a, b)
    hdl = types.ModuleType("metaroce.hdl._tx_sched_rows_wrong")
    hdl.__package__, hdl.__source__ = "metaroce.hdl", src
    exec(compile(src, spec.origin, "exec", dont_inherit=True), hdl.__dict__)
    with pytest.raises(Mismatch):
        tail_reuse_lockstep(hdl)


#: MR-TXS-497's wrong form: the acknowledged reports after an overtaking lost report zero
#: their paths' quiet counts all the same
ROWS_HUSH_WRONG = ("ta.hush.eq(taken[K_ACKED] & (hush != 0)),", "")


@pytest.mark.slow
@pytest.mark.parametrize("form", ["rtl", "hush_ignored"])
def test_rows_rtl_overtaking_lost_reports(form):
    """MR-TXS-497, MR-TXS-499 (live47): with restores and ``m_restore.ready`` 2 % of cycles
    (acknowledged reports held by MR-TXS-285's restore queue) and late ACKs at a quiet cap of 2,
    lost reports overtake waiting acknowledged ones, and the acknowledged reports taken next
    zero no quiet count: the RTL in lockstep with its model, 0 mismatches, every work request
    completing and the replay agreeing. Negative control (``hush_ignored``): the RTL zeroing
    the counts all the same mismatches."""
    from metaroce.hdl import tx_sched_rows
    from metaroce.tb.lockstep import Mismatch, run_amaranth, wrong_form
    prm = dict(SMALL, late_cap=2)
    seed = 2
    m = TxSchedRowsModel(64, **prm, restores=True)
    items = tc.traffic(TxSchedModel(**prm), 40, seed=seed)
    drv = RowsRestoreDriver(m.lay, items, restore_lay=m.restore_lay, seed=seed, p_rready=0.02,
                            late_acks=True, **STALL_KW)
    hdl = wrong_form("tx_sched_rows", *ROWS_HUSH_WRONG) if form == "hush_ignored" else tx_sched_rows
    dut = hdl.TxSchedRows(64, **prm, restores=True)
    if form == "hush_ignored":
        with pytest.raises(Mismatch):
            run_amaranth(dut, m, drv, busy=m.busy)
        return
    core = run_amaranth(dut, m, drv, busy=m.busy)
    assert core.mismatches == 0 and m.overtakes > 0 and m.sem.late_refused > 0
    assert len(drv.res["cqe"]) == len(items)
    replay(m)
