"""The responder resources at the engine (docs/spec/hw-engine.md section 5f):
the TX half's ``m_rsp_done`` records freeing the RX's ``max_rd_atomic`` count through
RspJoin's queue of frees (table 7 writes on the receive half's ``s_cfg_eng``, after RdRows'
row writes and before the host's)."""
import pytest

from metaroce.models import cosim_engine as ce
from metaroce.models import records
from metaroce.models.engine import EngineModel, RspJoinModel, engine_layouts, rsp_free_depth
from metaroce.models.rx import RxCode


def _endpoint_reads(monkeypatch, n_reads, max_rd_atomic, *, join_cls=None, max_cycles=None, seed=1,
                    agree=True):
    """The run of MR-ENG-157's ``test_engine_answers_many_endpoint_reads`` (the endpoint READs
    512-byte pieces of the engine's memory on 2 streams, no loss) against
    ``EngineModel(max_rd_atomic=)``; ``join_cls`` replaces the engine's RspJoinModel class.
    The endpoint's message bound 3 (``max_tx_msgs``, MR-ENG-013, agreed from an offer of 3
    messages): 2 READs of the connection wanted in flight (MR-VERB-006 keeps one slot), within
    the RX's 2 message slots of a stream however they arrive (MR-ENG-157). ``agree``: the offer
    carries the engine's ``max_rd_atomic`` and the endpoint's initiator depth is the agreement's
    (MR-VERB-015, MR-ENG-254); False: the offer carries none (the bound off: the endpoint's own
    8). Run until the engine is idle (its last response's ACK in)."""
    from metaroce.models import cosim, cosim_tx
    from metaroce.models.engine import engine_offer
    cfg = cosim.Config(**{**cosim_tx.TX_CONFIG, "n_conns": 1, "nbytes": 512 * n_reads, "loss": 0.0,
                          "seed": seed, "verb": "read", "back": 4, "n_writes": n_reads})
    offer = engine_offer(max_rd_atomic if agree else None, msg_slots=3)
    sim = ce.EndpointCosim(cfg, "tx", offer=offer)
    m = EngineModel(cfg.width, max_rd_atomic=max_rd_atomic, **ce.engine_kw(cfg))
    if join_cls is not None:
        m.rsp.__class__ = join_cls
    conn, send = sim.ep._conns[ce.ENDPOINT_QP], sim.ep.next_packet
    sim.rd_peak = 0

    def watched(now):
        # the endpoint's READs started and not answered (MR-VERB-014), after every send
        f = send(now)
        sim.rd_peak = max(sim.rd_peak, conn.rd_slots)
        return f
    sim.ep.next_packet = watched
    ce.run_loop(sim, m, m.busy, max_cycles=max_cycles)
    return sim, m


def drain_frees(drv, m, limit=20_000):
    """Step the loop on after its end until every response item the TX half took has its
    record and every record's free was taken by the RX (the run ends at the last completion,
    before the peer's ACK of the last response reaches the TX half). Returns the cycles."""
    j = m.rsp
    for n in range(limit):
        if j.ctr[1] + j.ctr[2] == j.ctr[0] and j.free_q.level == 0 and not j.busy():
            return n
        inp = drv.inputs()
        drv.observe(inp, m.step(inp))
    raise AssertionError(f"frees not drained after {limit} cycles: {j.ctr}, {j.free_q.level} waiting")


def _rx(m):
    """The engine's packet-level RX model (its counters and responder resource counts)."""
    return m.rx.rx.rx


def test_engine_default_resources():
    """MR-ENG-239, MR-ENG-241, MR-ENG-251, MR-ENG-252: the whole engine's RX is built with
    ``max_rd_atomic`` = ``records.RD_ATOMIC`` (8, the endpoint's default: the bound MR-ENG-161's
    rows need) and RspJoin's queue of frees holds ``conns x max_rd_atomic`` (16 entries of the
    connection's 1 bit at the small engine); ``max_rd_atomic=None`` builds neither (the engine
    before the join)."""
    m = EngineModel(64)
    assert m.max_rd_atomic == records.RD_ATOMIC == 8 and _rx(m).max_rd_atomic == 8
    assert m.rsp.free_q.depth == rsp_free_depth(2, 8) == 16
    assert m.lay.sched.rsp_done["conn"].width == 1
    off = EngineModel(64, max_rd_atomic=None)
    assert _rx(off).max_rd_atomic is None and off.rsp.free_q is None and off.rsp.free_out() == (0, 0)


def test_engine_offer_and_requester_check():
    """MR-ENG-253, MR-ENG-256, MR-ENG-257, MR-ENG-274: the engine's offer at a connection's open is its build's: the
    RX's ``max_rd_atomic`` (8; None built without the count) and its message slots (2 a stream)
    as ``max_rx_msgs``; the cosim's endpoint agrees from it ``max_tx_msgs`` 2 (MR-ENG-157's
    value, no longer set by hand: MR-ENG-257's runs unchanged) and the depth 8. As requester the engine keeps at most
    ``rd_slots x streams`` (2 x 2 = 4) READs and atomics of a connection in flight (MR-ENG-150);
    since cap29 its depth on a connection is the agreement's, min(4, the peer's offer) (None:
    4), written as the connection's table 8 row; a peer offering 0 is refused (ValueError)."""
    from metaroce.models import cosim, cosim_tx, protocol as P
    from metaroce.models.engine import engine_init_rd_atomic, engine_offer, engine_peer_check
    m = EngineModel(64)
    assert m.open_offer() == engine_offer() == P.OpenOffer(8, 2)
    assert EngineModel(64, max_rd_atomic=None).open_offer() == P.OpenOffer(None, 2)
    assert m.init_rd_atomic == engine_init_rd_atomic(2, 2) == 4
    assert m.check_peer(P.OpenOffer(8, 8)) == m.check_peer(P.OpenOffer(4, 1)) == 4
    assert m.check_peer(P.OpenOffer(None, None)) == 4
    assert [m.check_peer(P.OpenOffer(k, 8)) for k in (1, 2, 3)] == [1, 2, 3]
    assert engine_peer_check(P.OpenOffer(1, 8), 1, 2) == 1 and engine_peer_check(P.OpenOffer(8, 8), 1, 2) == 2
    with pytest.raises(ValueError, match="max_rd_atomic"):
        m.check_peer(P.OpenOffer(0, 8))
    cfg = cosim.Config(**{**cosim_tx.TX_CONFIG, "n_conns": 1, "nbytes": 2048, "loss": 0.0, "verb": "read",
                          "back": 4, "n_writes": 4})
    sim = ce.EndpointCosim(cfg, "tx")
    conn = sim.ep._conns[ce.ENDPOINT_QP]
    assert sim.offer == m.open_offer() and sim.ep.max_tx_msgs == 8
    assert (conn.tx_msgs, conn.init_rd_atomic, conn.rd_cap) == (2, 8, 1)
    assert sim.init_depth == 4 and not any(w.table == 8 for w in sim.eng.cfg_writes)


def test_engine_rnr_within_the_bound(monkeypatch):
    """MR-ENG-243, MR-ENG-245, MR-ENG-240 on the model: the endpoint READs 12 pieces of the
    engine's memory with up to 2 READs of the connection in flight against the engine with
    ``max_rd_atomic`` 2: a READ sent as its predecessor's response arrived reaches the RX before
    that response's ACK freed its resource and is NAKed RNR (RX counter rnr; the endpoint's
    ``nak_rnr``), resent after the RNR delay (MR-ENG-041) and accepted; every READ is answered
    and completes (the endpoint's buffer equals the engine's source, no RNR retry exceeded, no
    message-slot NAK); once idle every response's record has freed its resource: 12 items, 12
    records, 12 table 7 writes taken, the count at 0, the queue empty."""
    sim, m = _endpoint_reads(monkeypatch, 12, 2)
    assert sim.rd_peak == 2
    r = sim.result()
    assert r["ok"] and r["sha256_match"], r
    assert _rx(m).counters[RxCode.RNR] >= 1 and sim.ep.stats["nak_rnr"] >= 1
    assert sim.ep.stats["rnr_retry_exceeded"] == 0 and _rx(m).counters[RxCode.MSG_SLOTS] == 0
    drain_frees(sim, m)
    assert m.rsp.ctr[0] == m.rsp.ctr[1] == m.rsp.frees == 12 and m.rsp.ctr[2] == 0
    assert not any(_rx(m).rsp_used.values()) and m.rsp.free_q.level == 0


class _DropFrees(RspJoinModel):
    """MR-ENG-248's wrong join: the records are counted but their frees never queued."""

    def _free_push(self, conn):
        return conn

    def step(self, in_valid, item, out_ready, done_valid, done, reg_addr, free_ready=0):
        super().step(in_valid, item, out_ready, done_valid, done, reg_addr, 0)
        self.free_q.level = 0


@pytest.mark.slow       # a stall: runs until max_cycles
def test_engine_stalls_when_frees_are_dropped(monkeypatch):
    """MR-ENG-248, negative control: MR-ENG-245's run with a join that drops the frees: once 2
    READs are taken every later READ is NAKed RNR for ever, and the run does not finish in 4
    times the good run's cycles (about 55,000)."""
    with pytest.raises(AssertionError, match="not finished"):
        _endpoint_reads(monkeypatch, 12, 2, join_cls=_DropFrees, max_cycles=220_000)


@pytest.mark.parametrize("n_reads", [4, pytest.param(12, marks=pytest.mark.slow)])
def test_engine_reads_within_the_agreed_depth(monkeypatch, n_reads):
    """MR-ENG-254, MR-VERB-014, MR-VERB-015 (MR-ENG-244's run with the agreement; 12 READs
    ``slow``, 4 by default): the endpoint wanting 2 READs of the connection in flight
    (``max_tx_msgs`` 3) against the engine with ``max_rd_atomic`` 1, connected with the engine's
    offer: its initiator depth is 1, it never has more than 1 READ started and not answered, and
    every READ completes (the buffer the engine's source, no RNR retry exceeded, no request
    failed, no message-slot NAK); an RNR NAK, if any, is MR-ENG-243's transient one; once idle
    the count is 0 (every READ's resource freed)."""
    sim, m = _endpoint_reads(monkeypatch, n_reads, 1)
    conn = sim.ep._conns[ce.ENDPOINT_QP]
    assert (conn.tx_msgs, conn.init_rd_atomic, conn.rd_cap) == (3, 1, 1)
    assert sim.rd_peak == 1
    r = sim.result()
    assert r["ok"] and r["sha256_match"], r
    assert sim.ep.stats["rnr_retry_exceeded"] == 0 and _rx(m).counters[RxCode.MSG_SLOTS] == 0
    drain_frees(sim, m)
    assert m.rsp.ctr[0] == m.rsp.ctr[1] == m.rsp.frees == n_reads and m.rsp.ctr[2] == 0
    assert not any(_rx(m).rsp_used.values())
    sim.figures = {"cycles": r["cycles"], "rx_rnr": _rx(m).counters[RxCode.RNR],
                   "nak_rnr": sim.ep.stats["nak_rnr"]}
    print(f"agreed depth 1, {n_reads} READs:", sim.figures)


@pytest.mark.slow       # a stall: runs until max_cycles
def test_engine_rnr_stall_beyond_the_bound(monkeypatch):
    """MR-ENG-244 (found, measured), MR-ENG-255 (the negative control of MR-ENG-254): the
    endpoint with 2 READs of the connection in flight against the engine with ``max_rd_atomic``
    1, the offer without it (the bound off: the endpoint's own depth 8): a stream's READ NAKed
    RNR while its later READ, arriving after a free, takes the resource and waits for it at the
    stream's delivery point: every resend of the earlier READ is NAKed RNR, the endpoint fails it
    after its RNR retries (RNR_RETRY_EXC_ERR) and sends aborts the engine's RX does not handle,
    and the run does not finish; the count stays at the bound with no response item left to
    free it."""
    sims = []

    class Keep(ce.EndpointCosim):
        def __init__(self, *a, **kw):
            super().__init__(*a, **kw)
            sims.append(self)

    monkeypatch.setattr(ce, "EndpointCosim", Keep)
    with pytest.raises(AssertionError, match="not finished"):
        _endpoint_reads(monkeypatch, 12, 1, max_cycles=250_000, agree=False)
    ep = sims[0].ep
    assert sims[0].rd_peak == 2
    assert ep.stats["rnr_retry_exceeded"] >= 1 and ep.stats["nak_rnr"] > 8


class _RspFreePorts:
    """``RspJoinModel`` with its queue of frees, on the ports of ``hdl.engine.RspJoin(...,
    free_depth=)`` for the lockstep; ``drop``: a join that loses the records' frees (the
    negative control's model)."""

    def __init__(self, lay, cfg_lay, depth, drop=False):
        self.j = RspJoinModel(lay.rsp_done, cfg_lay=cfg_lay, free_depth=depth)
        self.drop = drop

    def port_names(self):
        return {"inputs": ["s_rsp__payload", "s_rsp__valid", "m_rsp__ready", "s_done__payload",
                           "s_done__valid", "reg_addr", "m_free__ready"],
                "outputs": ["s_rsp__ready", "m_rsp__payload", "m_rsp__valid", "s_done__ready",
                            "reg_data", "m_free__payload", "m_free__valid"]}

    def busy(self):
        return self.j.busy()

    def step(self, i):
        v, head = self.j.out()
        fv, fp = self.j.free_out()
        out = {"s_rsp__ready": self.j.in_ready(), "m_rsp__payload": head, "m_rsp__valid": v,
               "s_done__ready": 1, "reg_data": self.j.reg_data, "m_free__payload": fp, "m_free__valid": fv}
        self.j.step(i["s_rsp__valid"], i["s_rsp__payload"], i["m_rsp__ready"],
                    i["s_done__valid"] and not self.drop, i["s_done__payload"], i["reg_addr"],
                    free_ready=i["m_free__ready"])
        return out


class _RspFreeDriver:
    """Random items and readies; done records of a random connection (a third failed), offered
    only while fewer than ``depth`` frees wait (MR-ENG-241's bound: a waiting free is a resource
    still held, so the TX half never makes more); ``m_free.ready`` random (the RX's
    ``s_cfg.ready`` and RdRows' writes before it). Collects the frees taken."""

    def __init__(self, lay, cfg_lay, depth, seed, cycles=500):
        import random
        from metaroce.models.rx import pack, unpack
        self.rng, self.lay, self.cfg_lay, self.depth = random.Random(seed), lay, cfg_lay, depth
        self.pack, self.unpack, self.left = pack, unpack, cycles
        self.sent, self.freed, self.pending = [], [], 0

    @property
    def finished(self):
        return self.left <= 0

    def inputs(self):
        r, lay = self.rng, self.lay
        done = self.pending < self.depth and r.random() < 0.45
        conn = r.randrange(2)
        return {"s_rsp__valid": int(r.random() < 0.6),
                "s_rsp__payload": self.pack(lay.rsp, {"conn": r.randrange(2), "stream": r.randrange(2),
                                                      "msg": r.getrandbits(32), "laddr": r.getrandbits(64),
                                                      "length": r.getrandbits(20), "err": r.randrange(2)}),
                "m_rsp__ready": int(r.random() < 0.5), "s_done__valid": int(done),
                "s_done__payload": self.pack(lay.rsp_done, {"conn": conn, "stream": r.randrange(2),
                                                            "msg": r.getrandbits(32),
                                                            "status": r.choice([0, 0, 12])}),
                "reg_addr": r.randrange(5), "m_free__ready": int(r.random() < 0.4)}

    def observe(self, inp, out):
        if inp["s_done__valid"]:
            self.sent.append(self.unpack(self.lay.rsp_done, inp["s_done__payload"])["conn"])
            self.pending += 1
        if out["m_free__valid"] and inp["m_free__ready"]:
            self.freed.append(self.unpack(self.cfg_lay, out["m_free__payload"]))
            self.pending -= 1
        self.left -= 1

    def settle(self, busy):
        pass


def _rsp_free_lockstep(drop=False, seed=7):
    from metaroce.hdl.engine import RspJoin
    from metaroce.models.rx import SMALL, layouts
    from metaroce.tb.lockstep import run_amaranth
    lay = engine_layouts().sched
    cfg_lay = layouts(2, 4, 256, streams=SMALL["streams"]).cfg
    depth = rsp_free_depth(2, 2)
    model = _RspFreePorts(lay, cfg_lay, depth, drop=drop)
    drv = _RspFreeDriver(lay, cfg_lay, depth, seed)
    core = run_amaranth(RspJoin(lay.rsp, lay.rsp_done, cfg_layout=cfg_lay, free_depth=depth), model, drv)
    return core, model, drv


def test_rsp_join_frees_lockstep_amaranth():
    """MR-ENG-240..242, MR-ENG-247: RspJoin with its queue of frees (RTL, Amaranth simulator;
    depth ``conns x max_rd_atomic`` = 4 here) in lockstep with RspJoinModel, every output every
    cycle, on random items, done records of random connections (some failed) while fewer than
    the depth wait, and a random ``m_free.ready``: 0 mismatches; every record taken at once
    (``s_done.ready`` 1) and each one's free leaves once, in record order, a table 7 write
    (``TABLE_RSP_FREE``) whose ``addr`` is the record's connection; the queue filled to its
    depth. Negative control: against a model that drops the records' frees, the lockstep
    mismatches."""
    from metaroce.models.rx import TABLE_RSP_FREE
    core, model, drv = _rsp_free_lockstep()
    assert core.mismatches == 0
    n = len(drv.freed)
    assert n > 50 and [f["addr"] for f in drv.freed] == drv.sent[:n] and len(drv.sent) - n == drv.pending
    assert all(f["table"] == TABLE_RSP_FREE and f["data"] == 0 for f in drv.freed)
    assert model.j.free_max == model.j.free_q.depth and model.j.frees == n
    from metaroce.tb.lockstep import Mismatch
    with pytest.raises(Mismatch, match="m_free__valid"):
        _rsp_free_lockstep(drop=True)


@pytest.mark.slow       # the whole engine in the Amaranth simulator: minutes
def test_engine_lockstep_amaranth_resources():
    """MR-ENG-249: the whole engine's RTL with the resources at 8 and RspJoin's queue of frees
    (Amaranth simulator) in lockstep with EngineModel, every output every cycle, with
    backpressure on every output and random AXI latencies: the engine READs 3,000 bytes of its
    own memory in 4 READs over the loopback (2 a stream, all 4 in flight: 4 resources taken);
    0 mismatches, the run's check passes, and the responses' records freed the resources
    (table 7 writes on ``s_cfg_eng`` beside RdRows' row writes)."""
    from metaroce.hdl.engine import Engine
    from metaroce.tb.lockstep import run_amaranth
    drv, s, region, src = ce.loopback_run(64, 3000, seed=5, loss=0.0, n_writes=4, verb="read")
    model = EngineModel(64, max_frame=2048)
    core = run_amaranth(Engine(64, max_frame=2048), model, drv, busy=model.busy)
    assert core.mismatches == 0
    r = ce.check(drv, region, src)
    j = model.rsp
    assert r["reads"] == 4 and j.ctr[0] == 4 and j.frees >= 1
    assert sum(_rx(model).rsp_used.values()) == j.ctr[0] - j.frees
