"""The row scheduler in the TX (docs/spec/hw-tx.md section 2.14, MR-TX-316..326;
hw-tx-sched.md section 16l, MR-TXS-315..318): ``Tx(..., rows=True)`` against
``TxCycleModel(rows=True)`` (the TX model with the row scheduler is the reference: the rows'
frames and completions differ from the register scheduler's, MR-TXS-224), the retry-limit
report's join (MR-TX-318), and the windows against the rows' last-active rule (MR-TX-320..323:
a suspicion the rows take as a reroute reaches the windows as a restore with REROUTE)."""
import random

import pytest

from metaroce.models import protocol as P
from metaroce.models import tx_cases as xc
from metaroce.models import tx_sched_cases as tc
from metaroce.models.driver import run_alone
from metaroce.models.rx import pack, unpack
from metaroce.models.tx import SMALL, TxCycleModel, layouts, path_record
from metaroce.models.tx_sched import PATH_ACTIVE, TxSchedCycleModel, TxSchedModel
from metaroce.models.tx_sched import SMALL as SMALL_SCHED
from metaroce.models.tx_sched_rows import TxSchedRowsModel, replay, unpack_row

_SCHED = ("chunk_window", "mtu", "cwnd", "conn_window", "path_pkts", "ack_every", "resend_depth")
#: MR-TX-124/125: the failures' instance (the retry limit's error after two timeouts)
_FAIL = dict(SMALL, retry_limit=1)


def sched_sem(params=SMALL):
    return TxSchedModel(params["conns"], params["streams"], params["paths"], params["depth"],
                        **{k: params[k] for k in _SCHED})


def test_options_and_ports():
    """MR-TX-316, MR-TX-317: ``rows`` builds the row scheduler in the register scheduler's
    place, the engine's ports unchanged (with and without verdicts); ``rows`` with pacing and
    the READ rows together refused in the model and the RTL (with the READ rows: MR-TX-333,
    tests/test_tx_rows_rd.py; with pacing: MR-TXS-346); MR-TXS-316: the rows' ``m_restore``
    record has ``kept``."""
    from metaroce.hdl.tx import Tx
    from metaroce.hdl.tx_sched import TxSched
    from metaroce.hdl.tx_sched_rows import TxSchedRows
    assert isinstance(TxCycleModel(64, **SMALL, rows=True).sched, TxSchedRowsModel)
    assert TxCycleModel(64, **SMALL, rows=True).port_names() == TxCycleModel.port_names()
    for bad in (dict(pacing=True, rd_rows=True),):
        with pytest.raises(ValueError):
            TxCycleModel(64, **SMALL, rows=True, **bad)
        with pytest.raises(ValueError):
            Tx(64, **SMALL, rows=True, **bad)
    for kw in ({}, {"verdicts": True}):
        t, r = Tx(64, **SMALL, **kw), Tx(64, **SMALL, rows=True, **kw)
        for blk in (t, r, t.sched, r.sched, t.rtx, r.rtx, t.data, r.data, t.cwnd, r.cwnd):
            blk._MustUse__silence = True        # inspected, not elaborated
        assert isinstance(t.sched, TxSched) and isinstance(r.sched, TxSchedRows)
        assert t.signature == r.signature
    rst = r.sched.signature.members["m_restore"].signature.members["payload"].shape
    assert {n for n, _ in rst} == {"conn", "path", "kept"}


def test_model_lossy():
    """MR-TX-316, MR-TXS-315 (model; its RTL equality is the slow lockstep's): MR-TX-150's
    lossy traffic through the TX model with the rows (the rows' readies read before the edge):
    every work request completes, the checker passes, the rows' operations replay on the
    register scheduler (MR-TXS-230)."""
    sem = sched_sem()
    items, lay = xc.traffic(sem, 10, seed=3, max_len=2500)
    model = TxCycleModel(64, **SMALL, rows=True)
    drv = xc.run_model(model, items, lay, xc.templates(2, 4), seed=3, loss=0.2)
    s = xc.check(sem, items, drv)
    assert s["retransmits"] and s["frames"] >= 10
    replay(model.sched)


def _failure_run(n, seed, *, rtl):
    """``test_tx_amaranth``'s failures with the rows: every third work request's reads fail,
    connection 1 dead (its paths reach the retry limit)."""
    from collections import Counter
    sem = sched_sem()
    items, lay = xc.traffic(sem, n, seed=seed, max_len=1200, bad_reads=3)
    model = TxCycleModel(64, **_FAIL, rows=True)
    kw = dict(seed=seed, loss=0.1, dead=(1,), counters=True)
    if rtl:
        from metaroce.hdl.tx import Tx
        from metaroce.tb.lockstep import run_amaranth
        drv = xc.Driver(model.lay, 64, items, lay, xc.templates(2, 4), **kw)
        core = run_amaranth(Tx(64, **_FAIL, rows=True), model, drv, busy=model.busy)
        assert core.mismatches == 0
    else:
        drv = xc.run_model(model, items, lay, xc.templates(2, 4), **kw)
    xc.check(sem, items, drv)
    xc.check_counters(drv)
    return drv, Counter(c["status"] for c in drv.res["cqe"])


def test_model_failures():
    """MR-TX-318 (model): read failures (LOC_PROT_ERR) and a dead connection's retry-limit
    errors (RETRY_EXC_ERR) with the rows, whose ``s_fail`` and ``s_error`` share one boundary
    register: every report leaves on ``m_error`` once and fails its messages, the checker's
    statuses and the counters hold."""
    drv, st = _failure_run(8, 1, rtl=False)
    assert st[4] and st[12] and st[0] and drv.res["errors"]


@pytest.mark.slow
def test_lockstep_failures_rows_64():
    """MR-TX-318, MR-TX-319: the failures' run on ``Tx(rows=True)`` in lockstep, 0 mismatches."""
    drv, st = _failure_run(6, 1, rtl=True)
    assert st[4] and st[12] and drv.res["errors"]


def lockstep(n, seed, *, params=SMALL, **kw):
    from metaroce.hdl.tx import Tx
    from metaroce.tb.lockstep import run_amaranth
    sem = sched_sem(params)
    items, lay = xc.traffic(sem, n, seed=seed, max_len=1500)
    model = TxCycleModel(64, **params, rows=True)
    drv = xc.Driver(model.lay, 64, items, lay, xc.templates(2, 4), seed=seed, **kw)
    core = run_amaranth(Tx(64, **params, rows=True), model, drv, busy=model.busy)
    assert core.mismatches == 0
    return sem, items, drv, model, core


@pytest.mark.slow
def test_lockstep_rows_64():
    """MR-TX-319: ``Tx(rows=True)`` against ``TxCycleModel(rows=True)`` at 64 bits, the TX
    lockstep's traffic (both connections and streams, bad work requests, idle inputs,
    backpressure on every output, AXI latency, 20 % frame loss with the receiver's ACKs, the
    unit's timers and tail probes): 0 mismatches, every work request completes, the checker
    passes, the rows' operations replay on the register scheduler (MR-TXS-230)."""
    sem, items, drv, model, core = lockstep(16, 1, loss=0.2)
    s = xc.check(sem, items, drv)
    assert s["retransmits"] and drv.res["timeouts"]
    replay(model.sched)


@pytest.mark.slow
def test_lockstep_rows_verdicts_random():
    """MR-TX-319: ``Tx(rows=True, verdicts=True)`` (the share-out, MR-TX-306's hold, the rows'
    restores and kept records into the windows) against its model on MR-TX-262's random run
    (both connections' windows opened, ``cc_on``, 15 % loss, the timers' verdicts): 0
    mismatches, every work request completes, the checker passes, path records reached the
    windows."""
    from metaroce.hdl.tx import Tx
    from metaroce.tb.lockstep import run_amaranth
    sem = sched_sem()
    items, lay = xc.traffic(sem, 20, seed=1, max_len=4000)
    setups = [dict(x, share=SMALL["cwnd"])
              for x in xc.cc_setups(SMALL, 0) + xc.cc_setups(SMALL, 1)]
    model = TxCycleModel(64, **SMALL, verdicts=True, rows=True)
    drv = xc.Driver(model.lay, 64, items, lay, xc.templates(SMALL["conns"], SMALL["paths"]),
                    seed=1, loss=0.15, cw_setups=setups,
                    cc={"cc_on": 1, "cc_beta_q": P.Q_ONE, "cc_cap": xc.CC_CAP})
    core = run_amaranth(Tx(64, **SMALL, verdicts=True, rows=True), model, drv, busy=model.busy)
    assert core.mismatches == 0
    xc.check(sem, items, drv)
    replay(model.sched)
    assert any(k == "path" for k, _ in model.cw_log)


# -- MR-TX-320..323: the windows and the rows' last-active rule

#: MR-TX-320: the directed run: connection 0's windows opened (share 12,500), 4 WRITEs of 4 KiB,
#: each ACK 50 cycles after its frame; paths 0..2's routes down in cycles 100..1,200 (no ACK
#: restores them early); from cycle 200 SUSPECTs of paths 0, 1, 2, 3 put at the tail of the
#: unit's probe queue (each with the other paths healthy), so path 3's meets the last active
#: path (MR-TXS-266/290)
SUSPECT_AT = 200
DOWN = {(0, p): (100, 1200) for p in (0, 1, 2)}


def rows_states(model, conn=0):
    row = unpack_row(model.sched.rl, model.sched.mem[conn])
    return [int(row["paths"][p]["state"] == PATH_ACTIVE) for p in range(SMALL["paths"])]


def kept_run(rows=True, **sched_kw):
    """MR-TX-320's run on the TX model with verdicts (the share-out and MR-TX-306's hold);
    ``rows`` False: the register scheduler. Returns the model."""
    items, lay = xc.cc_work(SMALL, n=4, length=4096)
    kw = xc.cc_driver_kw(SMALL, True, seed=3)
    kw.update(ce_paths=set(), ack_delay=50, p_idle=0.2, p_bp=0.3, down=DOWN)
    for s in kw["cw_setups"]:
        s["share"] = SMALL["cwnd"]
    model = TxCycleModel(64, **SMALL, verdicts=True, rows=rows)
    if sched_kw:
        # the negative controls' scheduler (kept_out=False), rows or registers (MR-TX-353)
        model.sched = (TxSchedRowsModel if rows else TxSchedCycleModel)(
            64, **SMALL_SCHED, restores=True, **sched_kw)
    drv = xc.Driver(model.lay, 64, items, lay, xc.templates(SMALL["conns"], SMALL["paths"]),
                    **kw)
    rtx, todo, cyc = model.rtx, [0, 1, 2, 3], [0]
    step = rtx.step

    def with_suspects(inp):
        out = step(inp)
        cyc[0] += 1
        if cyc[0] >= SUSPECT_AT and todo and rtx.probe_q.level < rtx.probe_q.depth:
            p = todo.pop(0)
            rec = {"conn": 0, "path": p, "psn": 0, "to": 1, "verdict": P.PATH_SUSPECT,
                   "healthy": 0b1111 & ~(1 << p)}
            rtx.probe_q.update(0, 1, pack(model.lay.rtx.probe, rec))
        return out
    rtx.step = with_suspects
    run_alone(model, drv)
    assert len(drv.res["cqe"]) == 4 and not todo
    return model


def windows_end(model, conn=0):
    cw = model.cwnd.sem
    return [p["active"] for p in cw.path[conn]], [p["cwnd"] for p in cw.path[conn]], \
        cw.conn[conn]["wsum"]


def test_windows_follow_kept_suspicion():
    """MR-TX-320..323 (model): path 3's SUSPECT, on connection 0's last active path, is taken
    by the rows as a reroute (MR-TXS-266: kept 1); its kept record (MR-TXS-316) follows the
    SUSPECT into the windows as a restore with REROUTE (MR-TX-321/322), so at the end every
    path is active in the windows as in the rows, W is the sum of the four windows and the
    rows' windows are the block's."""
    model = kept_run()
    assert model.sched.kept == 1
    recs = [r for k, r in model.cw_log if k == "path" and r["path"] == 3]
    assert [(r["verdict"], r["restore"]) for r in recs] == [
        (P.PATH_SUSPECT, 0), (P.PATH_REROUTE, 1)]
    active, win, wsum = windows_end(model)
    assert active == rows_states(model) == [1, 1, 1, 1]
    assert wsum == sum(win)
    row = unpack_row(model.sched.rl, model.sched.mem[0])
    assert [row["paths"][p]["cwnd"] for p in range(4)] == win


def test_windows_without_kept_record_differ():
    """MR-TX-323 (negative control): the rows without the kept record (``kept_out=False``, the
    join before) leave path 3 out of the windows' W to the end of the run while the rows keep it
    active and sending: the harm MR-TX-320 measured."""
    model = kept_run(kept_out=False)
    active, win, wsum = windows_end(model)
    assert active == [1, 1, 1, 0] and rows_states(model) == [1, 1, 1, 1]
    assert wsum == sum(win[:3]) < sum(win)


def test_kept_restore_record():
    """MR-TX-321/322: the join's record of a kept restore; the windows' semantics of it
    (``CwndModel.verdict``): the path active, one MTU, collapsed, W with its MTU (after the
    SUSPECT, the REROUTE's state and W); a plain restore as before (the share, not
    collapsed)."""
    from metaroce.models.cwnd import CwndModel
    lay = layouts(verdicts=True, share_out=True)
    assert path_record(lay, restore={"conn": 1, "path": 2, "kept": 1}) == {
        "conn": 1, "path": 2, "verdict": P.PATH_REROUTE, "restore": 1, "healthy": 0}
    assert path_record(lay, restore={"conn": 1, "path": 2, "kept": 0})["verdict"] == 0
    def opened():
        cw = CwndModel(2, 4, verdicts=True, share_out=True)
        for p in range(4):
            cw.setup({"conn": 0, "path": p, "cwnd": 20_000, "active": 1, "open": int(p == 0),
                      "fresh": 1, "floor": 2048, "multi": 1, "share": 12_500})
        return cw

    def verdict(v):
        return {"conn": 0, "path": 3, "verdict": v, "restore": 0, "healthy": 0}
    ref = opened()
    ref.verdict(verdict(P.PATH_REROUTE))
    for kept in (0, 1):
        cw = opened()
        cw.verdict(verdict(P.PATH_SUSPECT))
        cw.verdict(path_record(lay, restore={"conn": 0, "path": 3, "kept": kept}))
        ps = cw.path[0][3]
        want = (cw.mtu, 1) if kept else (12_500, 0)
        assert (ps["cwnd"], ps["collapsed"], ps["active"]) == want + (1,)
        assert cw.conn[0]["wsum"] == 60_000 + want[0]
        assert (cw.path[0] == ref.path[0] and cw.conn[0] == ref.conn[0]) == bool(kept)


# -- MR-TXS-316..318: the kept record in the rows' RTL

class StormRestores(tc.VerdictStorm):
    """MR-TXS-317: the verdict storm with ``m_restore.ready`` random (its own generator)."""

    def __init__(self, lay, items, **kw):
        super().__init__(lay, items, **kw)
        self.r_rng = random.Random(0x5E57)

    def inputs(self):
        inp = super().inputs()
        inp["m_restore__ready"] = int(self.r_rng.random() < 0.5)
        return inp


def storm_restores(seed=11, n=30, *, rtl=True, hdl=None, **model_kw):
    from metaroce.tb.lockstep import run_amaranth
    prm = dict(SMALL_SCHED)
    items = tc.traffic(TxSchedModel(**prm), n, seed=seed)
    model = TxSchedRowsModel(64, **prm, restores=True, **model_kw)
    drv = StormRestores(model.lay, items, seed=seed, p_idle=0.2, p_bp=0.4, loss=0.6,
                        p_cwnd=0.05, cwnd_hi=8000, p_verdict=0.1)
    drv.limit = 6000
    kept = []
    if rtl:
        if hdl is None:
            from metaroce.hdl import tx_sched_rows as hdl

        def on_cycle(cycle, ins, outs):
            if outs.get("m_restore__valid") and ins["m_restore__ready"]:
                kept.append(unpack(model.restore_lay, outs["m_restore__payload"])["kept"])
        core = run_amaranth(hdl.TxSchedRows(64, **prm, restores=True), model, drv,
                            busy=model.busy, on_cycle=on_cycle)
        assert core.mismatches == 0
    else:
        run_alone(model, drv)
    return items, drv, model, kept


@pytest.mark.slow
def test_rows_rtl_kept_record():
    """MR-TXS-316, MR-TXS-317: the row scheduler with restores on the verdict storm (seed 11)
    in lockstep with its model, ``m_restore`` taken at random: 0 mismatches, every work request
    completes, the checker and the replay pass; a kept record left for every verdict taken as a
    reroute, besides the restores."""
    items, drv, model, kept = storm_restores()
    assert len(drv.res["cqe"]) == len(items)
    tc.check(TxSchedModel(**SMALL_SCHED), items, drv.res)
    replay(model)
    assert model.kept >= 1 and sum(kept) == model.kept and kept.count(0) >= 1


#: MR-TXS-318's wrong form: the RTL without the kept record (the model with it)
KEPT_WRONG = ("kept = s2[\"kept\"] if self.kept_out else Const(0, 1)", "kept = Const(0, 1)")


@pytest.mark.slow
def test_rows_rtl_kept_record_wrong_form_fails():
    """MR-TXS-318 (negative control): the RTL without the kept record mismatches the model on
    the same run."""
    from metaroce.tb.lockstep import Mismatch, wrong_form
    hdl = wrong_form("tx_sched_rows", *KEPT_WRONG)
    with pytest.raises(Mismatch):
        storm_restores(hdl=hdl)


# -- MR-TX-321 in the windows' RTL

#: MR-TX-321's wrong form: the windows' restore with REROUTE as a plain restore (the share, not
#: collapsed), the form before
CWND_WRONG = ("cwnd3.eq(Mux(vr.restore & ~rer, crec.share,", "cwnd3.eq(Mux(vr.restore, crec.share,")


@pytest.mark.slow
@pytest.mark.parametrize("wrong", [False, True])
def test_cwnd_rtl_kept_restore(wrong):
    """MR-TX-321: ``Cwnd(verdicts=True)`` in lockstep with its cycle model on the block's random
    run (``tests/test_cwnd_verdicts.py``'s seed 4, whose default ``test_verdict_lockstep_random``
    is the positive run: restores with each verdict, one of them REROUTE): 0 mismatches;
    negative control: the RTL that takes a REROUTE restore as a plain one (its window the share)
    mismatches. (Slow: minutes each in the Amaranth simulator on a loaded machine.)"""
    from metaroce.hdl import cwnd as cwnd_hdl
    from metaroce.models import cwnd_cases as cc
    from metaroce.models.cwnd import SMALL as CW_SMALL
    from metaroce.models.cwnd import CwndCycleModel, CwndModel
    from metaroce.tb.lockstep import AmaranthSim, Mismatch, wrong_form
    items = cc.traffic(CwndModel(**CW_SMALL, verdicts=True), 150, seed=4, verdicts=True)
    assert any(k == "path" and r["restore"] and r["verdict"] == P.PATH_REROUTE for k, r in items)
    hdl = wrong_form("cwnd", *CWND_WRONG) if wrong else cwnd_hdl
    model = CwndCycleModel(64, **CW_SMALL, verdicts=True)
    cfg = {"mtu": 1024, "beta_q": P.Q_ONE // 2 + 3, "cap": 60_000}
    drv = cc.Driver(model.lay, items, cfg, seed=4, p_idle=0.3, p_bp=0.5)
    sim = AmaranthSim(hdl.Cwnd(64, **CW_SMALL, verdicts=True))
    if wrong:
        with pytest.raises(Mismatch):
            sim.run(model, drv, busy=model.busy)
    else:
        assert sim.run(model, drv, busy=model.busy).mismatches == 0


# -- MR-TX-326: the endpoint's frames, chunk for chunk

def _endpoint_rows_run(seed, initial_psn=None, **kw):
    """``test_tx_amaranth._endpoint_run`` with the rows (model): the endpoint's writes without
    ACKs, the clock stopped, until both block. ``initial_psn`` (MR-TX-501): the endpoint's
    every path's first PSN, written on ``s_psn`` for each path."""
    if initial_psn is not None:
        kw["initial_psn"] = initial_psn
    want, items, lay, image, tmpls, params = xc.endpoint_frames(seed, **kw)
    model = TxCycleModel(64, **dict(params, pool=256, outstanding=16), rows=True)
    init = ({(kw.get("conn", 1), p): initial_psn for p in range(params["paths"])}
            if initial_psn is not None else None)
    drv = xc.Driver(model.lay, 64, items, lay, tmpls, seed=seed, image=image, acks=False,
                    ns_per_cycle=0, expect_frames=len(want), init_psns=init)
    drv.quiet_cycles = 300
    while not drv.finished:
        inp = drv.inputs()
        drv.observe(inp, model.step(inp))
        drv.settle(False)
    return want, drv.res["raw"]


#: MR-TX-326: a frame's fields that do not depend on the path it took
def _chunk_fields(f):
    return (f.eth, f.bth.opcode, f.mrdh.version, f.mrdh.flags, f.mrdh.msg_len, f.reth, f.mrsh,
            f.imm, f.atomiceth, f.payload)


#: MR-TX-326: sends, READs and atomics between writes on each stream (test_tx_amaranth's)
_MIXED = [(0, 1500, None, False), (0, 8, None, "cas"), (0, 2100, None, True),
          (0, 5000, None, "read"), (1, 700, 3, True), (1, 8, None, "fadd"), (1, 1025, None, "read"),
          (1, 3000, 11, False)]


@pytest.mark.parametrize("seed,kw", [(1, dict(streams=2, depth=4, init_window_bdp=2.0)),
                                     (2, dict(streams=2, depth=4, init_window_bdp=2.0,
                                              msgs=_MIXED)),
                                     # MR-TX-501: every path from 2 below 2^24 (both ends)
                                     (2, dict(streams=2, depth=4, init_window_bdp=2.0,
                                              msgs=_MIXED, initial_psn=P.PSN_MOD - 2))])
def test_endpoint_chunks_with_rows(seed, kw):
    """MR-TX-326: on the endpoint's messages without ACKs (MR-TX-152 (a)'s run), the engine
    with the rows (model) sends the endpoint's chunks: the same (stream, message, offset) set,
    each frame's path-independent fields (Ethernet, opcode, MRDH version, flags and message
    length, RETH, MRSH, immediate, atomic header, payload) the endpoint's, every ICRC valid;
    per path the PSNs 0, 1, 2, .. in the order sent and the endpoint's UDP source port. The
    order across streams and the path each chunk takes may differ (MR-TXS-224: on both cases
    the bytes in order are not the endpoint's). MR-TX-501: with ``initial_psn`` (the endpoint's
    and the engine's ``s_psn`` writes) each path's PSNs run from it across the wrap."""
    from collections import defaultdict
    from metaroce.models import codec
    want, got = _endpoint_rows_run(seed, **kw)
    w = {(f.mrdh.stream, f.mrdh.msg, f.mrdh.offset): f for f in map(codec.decode, want)}
    g = [codec.decode(x) for x in got]
    assert len(g) == len(want) >= 3 and all(f.icrc_ok for f in g)
    assert {(f.mrdh.stream, f.mrdh.msg, f.mrdh.offset) for f in g} == set(w)
    for f in g:
        assert _chunk_fields(f) == _chunk_fields(w[(f.mrdh.stream, f.mrdh.msg, f.mrdh.offset)])
    sport = {f.mrdh.path: f.udp.sport for f in w.values()}
    psns = defaultdict(list)
    for f in g:
        psns[f.mrdh.path].append(f.bth.psn)
        assert f.udp.sport == sport.get(f.mrdh.path, f.udp.sport)
    init = kw.get("initial_psn", 0)
    assert all(v == [P.psn_add(init, k) for k in range(len(v))] for v in psns.values())
    assert init == 0 or sum(v[-1] < init for v in psns.values()) >= 2        # across the wrap
