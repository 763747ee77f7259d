"""``m_rd`` in the row scheduler (hw-tx-sched.md section 16m, MR-TXS-325..330): the good READ
or atomic on ``s_wr`` offered with the message number it takes (the register scheduler's port,
MR-TXS-106/107/141), its message number read a cycle ahead from a memory of each stream's
``msg_next``. The model (models/tx_sched_rows.py, ``rd_rows=True``) through the scheduler's
driver with random ``m_rd.ready``, the replay's check of each READ taken (MR-TXS-328), the RTL
(hdl/tx_sched_rows.py) in lockstep, and negative controls."""
import random

import pytest

from metaroce.models import tx_sched_cases as tc
from metaroce.models.driver import run_alone
from metaroce.models.rx import pack, unpack
from metaroce.models.tx_sched import SMALL, TxSchedModel
from metaroce.models.tx_sched_rows import TxSchedRowsModel, replay

#: the opcodes of a READ's and an atomic's request frames (MR-TXS-063, MR-TXS-099)
RD_OPCODES = (0xC6, 0xC8, 0xC9)


class RdDriver(tc.Driver):
    """The scheduler's driver with ``m_rd.ready`` random (``p_rd``, a generator of its own) and,
    in the cycles ``s_wr`` is not valid, another work request's payload on it (so the message
    numbers' read address moves, MR-TXS-326); logs the READs taken on ``m_rd`` and the cycles a
    READ offered waited."""

    def __init__(self, lay, items, *, p_rd=0.5, **kw):
        super().__init__(lay, items, **kw)
        self.rd_rng, self.p_rd = random.Random(0x4D52), p_rd
        self.offered, self.held = [], 0

    def inputs(self):
        inp = super().inputs()
        inp["m_rd__ready"] = int(self.rd_rng.random() < self.p_rd)
        if not inp["s_wr__valid"] and self.items:
            inp["s_wr__payload"] = pack(self.lay.wr, self.rd_rng.choice(self.items))
        return inp

    def observe(self, inp, out):
        if out.get("m_rd__valid"):
            if inp["m_rd__ready"]:
                self.offered.append(unpack(self.lay.rd, out["m_rd__payload"]))
            else:
                # MR-TXS-327: a READ offered and not taken waits at the port
                self.held += 1
                assert not out["s_wr__ready"]
        super().observe(inp, out)


def rd_run(prm, n, seed, *, rtl=False, hdl=None, p_rd=0.5, rsps=4, p_idle=0.6, **kw):
    """The row scheduler with ``rd_rows`` on ``n`` work requests (READs a third of the good
    ones, atomics among the rest) and ``rsps`` READ responses, ``s_wr`` idle in ``p_idle`` of
    the cycles (so a READ often arrives when the register is empty): the model alone, or (``rtl``)
    the RTL in lockstep with it, every output every cycle (``hdl``: a wrong form's module).
    Returns ``(core or None, driver, model, items, responses)``."""
    sem = TxSchedModel(**prm)
    items = tc.traffic(sem, n, seed=seed, reads=0.35)
    rs = tc.responses(sem, rsps, seed=seed) if rsps else ()
    m = TxSchedRowsModel(64, **prm, rd_rows=True)
    drv = RdDriver(m.lay, items, seed=seed, rsps=rs, p_rd=p_rd, p_idle=p_idle, **kw)
    if not rtl:
        run_alone(m, drv)
        return None, drv, m, items, rs
    from metaroce.hdl import tx_sched_rows
    from metaroce.tb.lockstep import run_amaranth
    dut = (hdl or tx_sched_rows).TxSchedRows(64, **prm, rd_rows=True)
    return run_amaranth(dut, m, drv, busy=m.busy), drv, m, items, rs


def good_reads(prm, items):
    """The work requests ``m_rd`` offers: READs and atomics not refused (MR-TXS-011: a stream of
    the instance, a length of at most 2^20 chunks, an atomic's 8; MR-TXS-106, MR-TXS-141)."""
    sem = TxSchedModel(**prm)
    return [w for w in items if w["op"] in (4, 5, 6) and not sem.wr_status(w)]


def check_rd(prm, drv, m, items, rs):
    """The checker (MR-TXS-050), the replay with MR-TXS-328's check of every READ taken, each
    good READ or atomic taken on ``m_rd`` once with the message number its request frame
    carries, READs held by ``m_rd.ready`` and by the read of their message number."""
    tc.check(TxSchedModel(**prm), items, drv.res, rs)
    replay(m)
    sent = {(f["conn"], f["mrdh_stream"], f["mrdh_msg"]) for f in drv.res["frames"]
            if f["bth_opcode"] in RD_OPCODES}
    assert len(drv.offered) == len(good_reads(prm, items)) > 3
    assert {(o["conn"], o["stream"], o["msg"]) for o in drv.offered} == sent
    assert sum(1 for e in m.events if e[0] == "rd") == len(drv.offered)
    assert drv.held and m.rd_held == drv.held


@pytest.mark.parametrize("prm,n,seed,kw", [
    (dict(SMALL), 40, 5, {}),
    (dict(SMALL), 40, 4, {}),
    (dict(SMALL, conns=4, paths=8), 40, 2, {"p_cwnd": 0.05}),
    pytest.param(dict(SMALL, conns=8), 100, 6, {"loss": 0.3}, marks=pytest.mark.slow)])
def test_rows_rd_model(prm, n, seed, kw):
    """MR-TXS-325..328: the model with ``rd_rows`` through the driver (idle cycles, backpressure,
    10 % loss, READ responses, ``m_rd.ready`` half the cycles, other payloads on an idle
    ``s_wr``, idle 60 % of the cycles): every work request completes (the checker), the replay finds each READ taken on
    ``m_rd`` with the fields and message number the register scheduler gives it, each good READ
    and atomic taken once with its request frame's message number, READs held at the port."""
    _, drv, m, items, rs = rd_run(prm, n, seed, **kw)
    check_rd(prm, drv, m, items, rs)
    assert m.rd_stale, "MR-TXS-326: no READ waited for its message number's read"


def test_rows_rd_without_fresh_read_fails():
    """MR-TXS-329 (negative control): the model offering a READ without MR-TXS-326's check that
    last cycle's read was its stream's (the message number of the address read last cycle)
    fails the replay's check of the READs taken (MR-TXS-328)."""
    prm = dict(SMALL)
    sem = TxSchedModel(**prm)
    items = tc.traffic(sem, 40, seed=3, reads=0.35)
    m = TxSchedRowsModel(64, **prm, rd_rows=True)
    m.rd_fresh = lambda payload: True
    drv = RdDriver(m.lay, items, seed=3, p_rd=0.5, p_idle=0.6)
    run_alone(m, drv)
    with pytest.raises(AssertionError, match="m_rd"):
        replay(m)


def test_rows_rd_replay_checks_each_read():
    """MR-TXS-328 (negative controls): the replay fails on a READ taken with another message
    number, and on a good READ applied that was never taken on ``m_rd``."""
    _, drv, m, items, rs = rd_run(dict(SMALL), 30, 5)
    replay(m)
    k = next(i for i, e in enumerate(m.events) if e[0] == "rd")
    ev = m.events[k]
    m.events[k] = ev[:2] + (dict(ev[2], msg=ev[2]["msg"] + 1),) + ev[3:]
    with pytest.raises(AssertionError, match="m_rd"):
        replay(m)
    m.events[k:k + 1] = []
    with pytest.raises(AssertionError, match="m_rd"):
        replay(m)


def test_rows_rd_responses_pass_a_held_read():
    """MR-TXS-327 (MR-TXS-107's reason): with ``m_rd.ready`` always 0 the first good READ waits
    at ``s_wr`` for good, every work request before it completes, and every READ response on
    ``s_rsp`` is still taken, sent and acknowledged (``m_rsp_done``): the hold is at the port,
    never in the work request's register that responses share."""
    prm = dict(SMALL)
    sem = TxSchedModel(**prm)
    items = tc.traffic(sem, 30, seed=5, reads=0.35)
    first = next(i for i, w in enumerate(items) if w in good_reads(prm, items))
    rs = tc.responses(sem, 4, seed=5)
    m = TxSchedRowsModel(64, **prm, rd_rows=True)
    drv = RdDriver(m.lay, items, seed=5, rsps=rs, p_rd=0.0)
    for _ in range(1500):
        inp = drv.inputs()
        out = m.step(inp)
        drv.observe(inp, out)
    assert not drv.offered and drv.held > 1000
    assert len(drv.res["rsp_done"]) == len(rs)
    assert sorted(c["wr_id"] for c in drv.res["cqe"]) == list(range(first))
    assert drv.presenting == items[first] and m.b["wr"] is None


# ------------------------------------------------------------------ the RTL

@pytest.mark.parametrize("prm,n,seed,kw", [
    (dict(SMALL), 16, 12, {}),
    pytest.param(dict(SMALL), 40, 3, {"p_idle": 0.5}, marks=pytest.mark.slow),
    # (seed 1 since s1_45: MR-TXS-470's hold moved seed 2's schedule ops, and no READ of its
    # run waited for its number's read)
    pytest.param(dict(SMALL, conns=4, paths=8), 40, 1, {"p_cwnd": 0.05, "p_rd": 0.2},
                 marks=pytest.mark.slow)])
def test_rows_rtl_rd_rows(prm, n, seed, kw):
    """MR-TXS-325..328, MR-TXS-330: ``TxSchedRows(rd_rows=True)`` in lockstep with the model,
    every output every cycle (``m_rd``'s payload too, valid or not), random ``m_rd.ready``: 0
    mismatches, :func:`check_rd`, and a READ that waited for its number's read (the default
    run: seed 12, 181 cycles, 8 READs and atomics taken, 6 cycles held by ``m_rd.ready``, 1 by
    the read)."""
    core, drv, m, items, rs = rd_run(prm, n, seed, rtl=True, **kw)
    assert core.mismatches == 0
    check_rd(prm, drv, m, items, rs)
    assert m.rd_stale, "MR-TXS-326: no READ waited for its message number's read"


@pytest.mark.parametrize("old,new", [
    # MR-TXS-326: the message number of last cycle's address, whatever the request's
    ("rd_fresh.eq(rd_last == rd_at)", "rd_fresh.eq(1)"),
    # MR-TXS-326: the read misses the write at its edge
    pytest.param("rd_r = rd_mem.read_port(transparent_for=(rd_w,))",
                 "rd_r = rd_mem.read_port()", marks=pytest.mark.slow),
    # MR-TXS-326: the message numbers never written
    pytest.param("rd_w.en.eq(s2_ok & (s2_kind == K_WR)", "rd_w.en.eq(0 & (s2_kind == K_WR)",
                 marks=pytest.mark.slow)])
def test_rows_rtl_rd_wrong_forms_fail(old, new):
    """MR-TXS-330 (negative controls): each wrong form of ``m_rd``'s RTL mismatches the model."""
    from metaroce.tb.lockstep import Mismatch, wrong_form
    hdl = wrong_form("tx_sched_rows", old, new)
    with pytest.raises(Mismatch):
        rd_run(dict(SMALL), 16, 12, rtl=True, hdl=hdl)


def test_rows_rtl_rd_ports():
    """MR-TXS-325: with ``rd_rows`` the row scheduler's ports are the register scheduler's with
    ``rd_rows`` (``m_rd`` its layout), at the small and the 4,096 x 8 instance."""
    from metaroce.hdl.tx_sched import TxSched
    from metaroce.hdl.tx_sched_rows import TxSchedRows
    small, reg = TxSchedRows(64, **SMALL, rd_rows=True), TxSched(64, **SMALL, rd_rows=True)
    big = TxSchedRows(64, **dict(SMALL, conns=4096, paths=8), rd_rows=True, init_rows=False)
    plain = TxSchedRows(64, **SMALL)
    for d in (small, reg, big, plain):
        d._MustUse__silence = True
    # MR-TXS-481: the initial-PSN port in both
    assert dict(small.signature.members) == dict(reg.signature.members)
    assert "m_rd" in big.signature.members and "m_rd" not in plain.signature.members
    assert TxSchedRowsModel(64, **SMALL, rd_rows=True).port_names() == {
        "inputs": [*TxSchedRowsModel(64).port_names()["inputs"], "m_rd__ready"],
        "outputs": [*TxSchedRowsModel(64).port_names()["outputs"], "m_rd__payload",
                    "m_rd__valid"]}
