"""The whole engine with the row scheduler in its TX half (docs/spec/hw-engine.md section 5m,
MR-ENG-291..298): ``Engine(rows=True)`` and ``EngineModel(rows=True)`` (``Tx(rows=True,
rd_rows=True)``, the rows' ``m_rd`` joined to the engine's RdRows and completion join, hw-tx.md
MR-TX-333): the same ports, the loopbacks and two engines on the model, the RTL in lockstep
(Amaranth simulator, slow)."""
import pytest

from metaroce.models import cosim_engine as ce
from metaroce.models.engine import EngineModel


def test_engine_rows_options_and_ports():
    """MR-ENG-291, MR-ENG-292: ``rows`` builds the TX half with the row scheduler and its
    ``m_rd`` (model and RTL); the engine's ports are unchanged; ``rows`` with ``pacing`` is
    refused (MR-TX-317)."""
    from metaroce.hdl.engine import Engine
    from metaroce.hdl.tx_sched_rows import TxSchedRows
    from metaroce.models.tx_sched_rows import TxSchedRowsModel
    m = EngineModel(64, rows=True)
    assert isinstance(m.tx.sched, TxSchedRowsModel) and m.tx.sched.rd_rows
    assert m.port_names() == EngineModel(64).port_names()
    e, r = Engine(64), Engine(64, rows=True)
    for blk in (e, r, e.tx, r.tx, e.rx_half, r.rx_half):
        blk._MustUse__silence = True            # inspected, not elaborated
    for blk in (e.tx, r.tx):
        for sub in (blk.sched, blk.rtx, blk.data, blk.cwnd):
            sub._MustUse__silence = True
    assert isinstance(r.tx.sched, TxSchedRows) and r.tx.sched.rd_rows
    ports = lambda c: [(p, repr(mem)) for p, mem in c.signature.members.flatten() if mem.is_port]  # noqa: E731
    assert ports(e) == ports(r)
    with pytest.raises(ValueError):
        EngineModel(64, rows=True, pacing=True)


def _loopback_model(nbytes, seed, loss, **kw):
    from metaroce.models.cosim import run_loop
    drv, s, region, src = ce.loopback_run(64, nbytes, seed=seed, loss=loss, **kw)
    m = EngineModel(64, rows=True)
    run_loop(drv, m, m.active)
    return ce.check(drv, region, src), m


@pytest.mark.slow
def test_engine_rows_model_loopback():
    """MR-ENG-293 (MR-ENG-137 with the rows): 6 KiB written to itself at 10 % loss: memory =
    source, every WR complete, frames lost both ways and recovered; the rows' operations replay
    on the register scheduler's semantics (MR-TXS-230)."""
    from metaroce.models.tx_sched_rows import replay
    r, m = _loopback_model(6 * 1024, seed=2, loss=0.1)
    assert r["lost"] > 0 and r["frames_out"] > r["frames_in"]
    replay(m.tx.sched)


def test_engine_rows_model_loopback_reads():
    """MR-ENG-293 (MR-ENG-140..145 with the rows): 3,000 bytes READ by the engine from itself in
    3 READs at 10 % loss: every READ taken on the rows' ``m_rd`` (its row written by RdRows),
    answered, placed and completed once; destination = source; the replay checks each READ
    taken (MR-TXS-328)."""
    from metaroce.models.tx_sched_rows import replay
    r, m = _loopback_model(3000, seed=2, loss=0.1, verb="read")
    assert r["lost"] > 0 and r["reads"] == 3 and r["rsp_frames"] >= 3
    # MR-TXS-331: RdRows' ready from the rows' rd_request, each READ taken once and replayed
    replay(m.tx.sched)
    assert sum(1 for e in m.tx.sched.events if e[0] == "rd") == 3


@pytest.fixture
def rows_engines(monkeypatch):
    """``cosim_engine``'s engines (the engine under test's model and the peer's) with the rows."""
    plain = ce.engine_kw
    monkeypatch.setattr(ce, "engine_kw", lambda cfg: {**plain(cfg), "rows": True})


@pytest.mark.slow
@pytest.mark.parametrize("verb,n_writes", [("write", None), ("read", 12)])
def test_two_engines_model_rows(rows_engines, verb, n_writes):
    """MR-ENG-294 (MR-ENG-138/146 and MR-ENG-290 with the rows, model <-> model): two whole
    engines with the rows over the fabric, 8 KiB from h0 to h1 and 1 KiB back at 5 % loss
    (WRITEs; or READs, 12 each: 6 a stream, 3 times its rows): both memories equal their sources,
    every WR completes, and each host's completions are the reference endpoints' on the same
    work (the digest, MR-ENG-202: per stream in posting order)."""
    from metaroce.models import cosim, cosim_tx
    kw = {"verb": verb} if n_writes is None else {"verb": verb, "n_writes": n_writes}
    cfg = cosim.Config(**{**cosim_tx.TX_CONFIG, "n_conns": 1, "nbytes": 8192, "loss": 0.05,
                          "seed": 3, **kw})
    r = ce.run_peer_model(cfg)
    assert r["ok"] and r["sha256_match"] and r["wrs_completed_ok"]
    ref = ce.run_reference_pair(cfg, *ce.reference_writes(cfg, "peer"))
    assert ref["ok"]
    for h in ("h0", "h1"):
        assert r["engines"][h]["completions_digest"] == ref["completions_digest"][int(h[1])], h
        if verb == "read":
            assert r["engines"][h]["reads_completed"] == n_writes


def _lockstep_rows(nbytes, seed, loss, *, rtl_rows=True, **kw):
    from metaroce.hdl.engine import Engine
    from metaroce.tb.lockstep import run_amaranth
    drv, s, region, src = ce.loopback_run(64, nbytes, seed=seed, loss=loss, **kw)
    model = EngineModel(64, max_frame=2048, rows=True)
    core = run_amaranth(Engine(64, max_frame=2048, rows=rtl_rows), model, drv, busy=model.active)
    return core, drv, region, src, model


@pytest.mark.slow
def test_engine_rows_lockstep_amaranth_short():
    """MR-ENG-295 (MR-ENG-136/137 with the rows): ``Engine(rows=True)`` (Amaranth simulator) and
    ``EngineModel(rows=True)`` in lockstep, every output every cycle, backpressure on every
    output and random AXI latencies: one WRITE of 1,100 bytes to itself (two data frames
    placed, their ACK frames back into the TX half): 0 mismatches."""
    core, drv, region, src, model = _lockstep_rows(1100, 3, 0.0, n_writes=1)
    assert core.mismatches == 0
    r = ce.check(drv, region, src)
    assert r["placements"] >= 2 and r["frames_in"] >= 3 and core.cycle > 500


@pytest.mark.slow
def test_engine_rows_lockstep_amaranth_read():
    """MR-ENG-295 (MR-ENG-140..145 with the rows): the engine READing 1,100 bytes of its own
    memory in one READ over the loopback, RTL and model with the rows in lockstep: the READ
    taken on the rows' ``m_rd`` (RdRows writes its row), answered, placed: 0 mismatches."""
    core, drv, region, src, model = _lockstep_rows(1100, 3, 0.0, n_writes=1, verb="read")
    assert core.mismatches == 0
    r = ce.check(drv, region, src)
    assert r["reads"] == 1 and r["rsp_frames"] >= 2 and model.rsp.ctr[0] == 1


@pytest.mark.slow
def test_engine_rows_lockstep_register_rtl_fails():
    """MR-ENG-296 (negative control): the register scheduler's engine (``Engine(rows=False)``)
    against ``EngineModel(rows=True)`` on the short lockstep's run mismatches: the lockstep sees
    which scheduler the RTL has."""
    from metaroce.tb.lockstep import Mismatch
    with pytest.raises(Mismatch):
        _lockstep_rows(1100, 3, 0.0, n_writes=1, rtl_rows=False)


def test_engine_rows_block():
    """MR-ENG-297: the block ``engine_rows`` builds ``Engine(64, rows=True)`` with the engine's
    shares, its model ``EngineModel(64, rows=True)``."""
    from metaroce import blocks
    blk, eng = blocks.get("engine_rows"), blocks.get("engine")
    assert blk.widths == (64,) and blk.shares == eng.shares
    c = blk.make_component(64)
    c._MustUse__silence = True
    for sub in (c.tx, c.rx_half, c.tx.sched, c.tx.rtx, c.tx.data, c.tx.cwnd):
        sub._MustUse__silence = True
    assert c.rows and c.tx.rows and c.tx.rd_rows
    assert blk.make_model(64).rows


@pytest.mark.slow
def test_two_engines_rows_rtl_lockstep():
    """MR-ENG-298 (MR-ENG-138, MR-ENG-290 with the rows, RTL <-> RTL): the pair build of the
    block ``engine_rows`` under Verilator, two RTL engines with the rows, 16 KiB from h0 to h1
    and 2 KiB back at 5 % loss, ``EnginePairModel(rows=True)`` alongside in lockstep (every output
    of both engines every cycle): 0 mismatches, both memories equal their sources, every WR
    completes, and each host's completions are the reference endpoints' on the same WRITEs."""
    from metaroce.commands.cosim import run_rtl
    from metaroce.models import cosim, cosim_tx
    cfg = cosim.Config(**{**cosim_tx.TX_CONFIG, "n_conns": 1, "nbytes": 16 * 1024, "loss": 0.05,
                          "seed": 3})
    r = run_rtl(cfg, lockstep=True, direction="pair", rows=True)
    assert r["ok"] and r["lockstep"] and r["mismatches"] == 0 and r["wrs_completed_ok"]
    ref = ce.run_reference_pair(cfg, *ce.reference_writes(cfg, "peer"))
    assert ref["ok"]
    for h in ("h0", "h1"):
        assert r["engines"][h]["completions_digest"] == ref["completions_digest"][int(h[1])], h
    with pytest.raises(ValueError):
        run_rtl(cfg, direction="tx", rows=True)
