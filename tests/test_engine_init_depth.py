"""The engine's initiator depth per connection (docs/spec/hw-engine.md section 5h, cap29):
RdRows' rows a connection may hold, set by the host's table 8 row at the connection's setup
(the agreement of MR-VERB-015 with the peer's ``max_rd_atomic``)."""
import random

import pytest

from metaroce.models import cosim_engine as ce
from metaroce.models.engine import (EngineModel, RdRowsModel, engine_layouts, init_depth_of,
                                    init_depth_write)
from metaroce.models.rx import SMALL, TABLE_INIT_DEPTH, layouts, pack, unpack

CONNS, STREAMS = 2, 2


def _lays():
    lay = engine_layouts()
    rx_lay = layouts(CONNS, 4, 256, streams=SMALL["streams"])
    return lay, rx_lay


class _RdRowsPorts:
    """``RdRowsModel(join=True)`` on the ports of ``hdl.engine.RdRows(..., join=True)``."""

    def __init__(self, cap=True):
        lay, rx_lay = _lays()
        self.rd_lay = lay.sched.rd
        self.m = RdRowsModel(CONNS, STREAMS, rx_lay, lay.sched.rd, rx_lay.cqe, lay.sched.cqe, join=True)
        self.m.cap = cap
        self.last = 0           # the RTL's register keeps its last row write when not valid

    def port_names(self):
        return {"inputs": ["s_rd__payload", "s_rd__valid", "op", "m_cfg__ready", "free", "free_row",
                           "cfg_tap", "cfg_tap_take"],
                "outputs": ["s_rd__ready", "m_cfg__payload", "m_cfg__valid"]}

    def busy(self):
        return self.m.busy_any()

    def step(self, i):
        ready = self.m.ready(unpack(self.rd_lay, i["s_rd__payload"]))
        v, p = self.m.out()
        p = p if v else self.last
        self.m.step(i["s_rd__valid"], i["s_rd__payload"], ready, i["m_cfg__ready"], 0, 0, 0, 0,
                    i["op"], free=i["free_row"] if i["free"] else None,
                    tap_take=i["cfg_tap_take"], tap=i["cfg_tap"])
        self.last = self.m.pend if self.m.pend is not None else p
        return {"s_rd__ready": ready, "m_cfg__payload": p, "m_cfg__valid": v}


class _RdRowsDriver:
    """Random READs (a payload held until taken, as the scheduler's register), a random
    ``m_cfg.ready``, the join's frees of random busy rows, and on ``cfg_tap`` records the RX
    took: table 8 rows of random depths (0, 1..3, the full 4 and above) and other tables'
    records (which set nothing). An independent check of MR-ENG-273: at each READ taken its
    connection held fewer rows than the depth its last table 8 record set."""

    def __init__(self, seed, cycles=3000):
        self.rng, self.left = random.Random(seed), cycles
        lay, self.rx_lay = _lays()
        self.rd_lay = lay.sched.rd
        self.full = STREAMS * self.rx_lay.rd_slots
        self.busy = set()
        self.depth = [self.full] * CONNS
        self.msg = {}
        self.cur = None
        self.taken = self.capped = self.over = 0
        self.peak = [0] * CONNS
        self.depths_seen = set()

    @property
    def finished(self):
        return self.left <= 0

    def _row(self, r):
        return (r["conn"] * STREAMS + r["stream"]) * self.rx_lay.rd_slots + r["msg"] % self.rx_lay.rd_slots

    def inputs(self):
        r = self.rng
        if self.cur is None and r.random() < 0.7:
            conn, st = r.randrange(CONNS), r.randrange(STREAMS)
            k = (conn, st)
            self.msg[k] = self.msg.get(k, r.getrandbits(8)) + 1
            self.cur = {"conn": conn, "stream": st, "msg": self.msg[k], "laddr": r.getrandbits(64),
                        "length": r.getrandbits(20), "wr_id": r.getrandbits(16)}
        free = self.busy and r.random() < 0.12
        tap = r.random() < 0.04
        table = r.choice([TABLE_INIT_DEPTH] * 4 + [1, 6, 7])
        data = r.choice([0, 1, 1, 2, 2, 3, 4, 5, 255, 256 + 1])
        return {"s_rd__valid": int(self.cur is not None),
                "s_rd__payload": pack(self.rd_lay, self.cur) if self.cur else 0,
                "op": r.randrange(8), "m_cfg__ready": int(r.random() < 0.6),
                "free": int(bool(free)), "free_row": r.choice(sorted(self.busy)) if free else r.randrange(8),
                "cfg_tap_take": int(tap),
                "cfg_tap": pack(self.rx_lay.cfg, {"table": table, "addr": r.randrange(CONNS),
                                                  "data": data})}

    def observe(self, inp, out):
        if self.cur is not None and out["s_rd__ready"]:
            c = self.cur["conn"]
            held = sum(1 for k in self.busy if k // (STREAMS * self.rx_lay.rd_slots) == c)
            self.over += held >= self.depth[c]
            self.busy.add(self._row(self.cur))
            self.peak[c] = max(self.peak[c], held + 1)
            self.taken += 1
            self.cur = None
        elif self.cur is not None:
            c = self.cur["conn"]
            held = sum(1 for k in self.busy if k // (STREAMS * self.rx_lay.rd_slots) == c)
            self.capped += self._row(self.cur) not in self.busy and held >= self.depth[c]
        if inp["free"]:
            self.busy.discard(inp["free_row"])
        if inp["cfg_tap_take"]:
            t = unpack(self.rx_lay.cfg, inp["cfg_tap"])
            if t["table"] == TABLE_INIT_DEPTH:
                self.depth[t["addr"]] = init_depth_of(t["data"], self.full)
                self.depths_seen.add(self.depth[t["addr"]])
        self.left -= 1

    def settle(self, busy):
        pass


def _rd_rows_lockstep(seed=3, cap_rtl=True, cycles=3000):
    from metaroce.hdl.engine import RdRows
    from metaroce.tb.lockstep import run_amaranth
    lay, rx_lay = _lays()
    model = _RdRowsPorts()
    drv = _RdRowsDriver(seed, cycles)
    core = run_amaranth(RdRows(CONNS, STREAMS, rx_lay, lay.sched.rd, lay.sched.cqe, join=True, cap=cap_rtl),
                        model, drv)
    return core, model, drv


def test_init_depth_record():
    """MR-ENG-271, MR-ENG-272, MR-REG-067, MR-REG-069: a table 8 record ``{table 8, addr conn,
    data [7:0] depth}`` (the RX's ``s_cfg`` layout, its table field 4 bits, the register
    block's ``CFG_TABLE`` 4 bits); its reading: 0 (a torn-down row) and every value from the
    full depth up are the full depth, the default of every connection."""
    from metaroce.models.regs import register_map
    _, rx_lay = _lays()
    assert rx_lay.cfg["table"].width == 4
    rec = unpack(rx_lay.cfg, init_depth_write(rx_lay.cfg, 1, 3))
    assert rec == {"table": TABLE_INIT_DEPTH, "addr": 1, "data": 3} and TABLE_INIT_DEPTH == 8
    assert [init_depth_of(v, 4) for v in (0, 1, 2, 3, 4, 5, 255, 256 + 2)] == [4, 1, 2, 3, 4, 4, 4, 2]
    with pytest.raises(ValueError):
        init_depth_write(rx_lay.cfg, 0, 256)
    rmap = register_map(rx_lay)
    assert {r.name: r.width for r in rmap.regs}["CFG_TABLE"] == 4
    assert EngineModel(64).rd.depth == [4, 4]


def test_default_depth_changes_no_ready():
    """MR-ENG-279: at the default (the full depth) the depth term never holds a READ whose row
    is free: for every set of busy rows of a connection and every READ of it whose row is free,
    ``under_depth`` is true, so ``ready`` is MR-ENG-150's; at depth 1 it holds them."""
    from itertools import combinations
    lay, rx_lay = _lays()
    m = RdRowsModel(CONNS, STREAMS, rx_lay, lay.sched.rd, rx_lay.cqe, lay.sched.cqe, join=True)
    rows = range(m.full)
    held_back = 0
    for depth in (m.full, 1):
        m.depth[1] = depth
        for n in range(m.full):
            for busy in combinations(rows, n):
                m.busy = {m.full + k: (0, 0) for k in busy}
                for k in set(rows) - set(busy):
                    rd = {"conn": 1, "stream": k // m.slots, "msg": k % m.slots}
                    assert m.index(1, rd["stream"], rd["msg"]) == m.full + k
                    if depth == m.full:
                        assert m.ready(rd) == 1
                    else:
                        held_back += m.ready(rd) == 0
    assert held_back > 0


def test_rd_rows_depth_lockstep_amaranth():
    """MR-ENG-273, MR-ENG-275: RdRows with the depths (RTL, Amaranth simulator, join mode) in
    lockstep with RdRowsModel, every output every cycle: random READs held until taken, random
    ``m_cfg.ready``, the join's frees of random busy rows, table 8 records of random depths and
    records of other tables on ``cfg_tap``: 0 mismatches; no READ taken while its connection held
    its depth (the driver's own check), READs held by the depth alone, depths 1..4 all set.
    Negative control: RdRows built with the depth ignored (``cap=False``) mismatches on
    ``s_rd__ready``."""
    from metaroce.tb.lockstep import Mismatch
    core, model, drv = _rd_rows_lockstep()
    assert core.mismatches == 0
    assert drv.over == 0 and drv.taken > 200 and drv.capped > 50
    assert drv.depths_seen == {1, 2, 3, 4} and max(drv.peak) == 4
    print("RdRows depth lockstep:", {"cycles": core.cycle, "taken": drv.taken, "held_by_depth": drv.capped,
                                     "model_cap_waits": model.m.cap_waits})
    with pytest.raises(Mismatch, match="s_rd__ready"):
        _rd_rows_lockstep(cap_rtl=False)


def _engine_reads(n_reads, ep_max_rd_atomic, *, cap=True, max_cycles=None, seed=1):
    """The engine as requester: it READs ``n_reads`` pieces of 512 bytes of the reference
    endpoint's memory on 2 streams (no loss; the endpoint READs 4 bytes back) against the
    endpoint with ``max_rd_atomic`` = ``ep_max_rd_atomic`` (its responder resources), the
    engine's depth on the connection agreed from the endpoint's offer and written as its table 8
    row (MR-ENG-274); ``cap`` False: RdRowsModel ignoring it (the negative control). Watches
    the endpoint's responder resources in use after every frame it receives."""
    from metaroce.models import cosim, cosim_tx
    cfg = cosim.Config(**{**cosim_tx.TX_CONFIG, "n_conns": 1, "nbytes": 512 * n_reads, "loss": 0.0,
                          "seed": seed, "verb": "read", "back": 4, "n_writes": n_reads})
    sim = ce.EndpointCosim(cfg, "rx", ep_max_rd_atomic=ep_max_rd_atomic)
    m = EngineModel(cfg.width, **ce.engine_kw(cfg))
    m.rd.cap = cap
    conn, recv = sim.ep._conns[ce.ENDPOINT_QP], sim.ep.receive
    sim.rsp_peak = 0

    def watched(*a, **kw):
        got = recv(*a, **kw)
        sim.rsp_peak = max(sim.rsp_peak, conn.rsp_used)
        return got
    sim.ep.receive = watched
    ce.run_loop(sim, m, m.busy, max_cycles=max_cycles)
    return sim, m


def _check_engine_reads(sim, m, n_reads, depth):
    qp = sim.eng.items[0]["conn"]
    r = sim.result()
    assert r["ok"] and r["sha256_match"] and r["engine"]["reads_completed"] == n_reads, r
    assert sim.init_depth == depth and m.rd.depth[qp] == depth
    assert [(w.table, w.addr, w.value) for w in sim.eng.cfg_writes if w.table == TABLE_INIT_DEPTH] == \
        ([(TABLE_INIT_DEPTH, qp, depth)] if depth < 4 else [])
    # never more than the depth in flight: the engine's rows, the endpoint's resources
    assert m.rd.peak[qp] == depth and sim.rsp_peak <= depth
    assert sim.ep.stats["rnr_retry_exceeded"] == 0 and not m.rd.busy
    figures = {"cycles": r["cycles"], "rnr_naks": sim.ep.stats.get("rsp_full", 0), "peak": m.rd.peak[qp],
               "ep_rsp_peak": sim.rsp_peak, "cycles_held_by_depth": m.rd.cap_waits}
    print(f"engine READs the endpoint, max_rd_atomic {depth}, {n_reads} READs:", figures)
    return figures


@pytest.mark.parametrize("n_reads,depth", [(3, 1), pytest.param(12, 1, marks=pytest.mark.slow),
                                           pytest.param(12, 2, marks=pytest.mark.slow)])
def test_engine_reads_within_the_endpoint_depth(n_reads, depth):
    """MR-ENG-274, MR-ENG-276, MR-REG-068 (3 READs against ``max_rd_atomic`` 1 by default; 12 against 1 and
    2 ``slow``): the engine as requester of READs against the reference endpoint as responder:
    the endpoint offers ``max_rd_atomic`` 1 (2), the engine's depth on the connection is the
    agreement's and its table 8 row is written at the setup; every READ completes (the
    engine's buffer the endpoint's source), the engine never holds more than the depth of rows
    nor the endpoint more resources, no RNR retry exceeded, no row left held."""
    sim, m = _engine_reads(n_reads, depth)
    _check_engine_reads(sim, m, n_reads, depth)


@pytest.mark.slow       # about 40,000 model cycles
def test_engine_reads_beyond_the_depth_without_the_cap():
    """MR-ENG-277, negative control: MR-ENG-276's run (4 READs, the endpoint's ``max_rd_atomic``
    1) with RdRows ignoring its depth: the engine holds 4 rows of the connection at once (its
    build's depth), beyond the agreed 1; the endpoint NAKs RNR the READs beyond its resource."""
    sim, m = _engine_reads(4, 1, cap=False, max_cycles=150_000)
    qp = sim.eng.items[0]["conn"]
    assert m.rd.peak[qp] == 4 and m.rd.depth[qp] == 1
    assert sim.ep.stats.get("rsp_full", 0) >= 3
    print("the depth ignored:", {"cycles": sim.cycle, "rnr_naks": sim.ep.stats.get("rsp_full", 0),
                                 "peak": m.rd.peak[qp]})


@pytest.mark.slow       # the whole engine in the Amaranth simulator: minutes
@pytest.mark.parametrize("depth", [1, 3])
def test_engine_lockstep_amaranth_init_depth(depth):
    """MR-ENG-275, MR-ENG-278: the whole engine's RTL (Amaranth simulator) in lockstep with
    EngineModel, every output every cycle, with backpressure on every output and random AXI
    latencies: the engine READs 3,000 bytes of its own memory in 4 READs over the loopback (2
    a stream) with its connection's table 8 row written at the setup through ``s_axil``: 0
    mismatches, the run's check passes, and the connection never held more than ``depth`` rows
    (READs held by the depth)."""
    from metaroce.hdl.engine import Engine
    from metaroce.tb.lockstep import run_amaranth
    drv, s, region, src = ce.loopback_run(64, 3000, seed=5, loss=0.0, n_writes=4, verb="read",
                                          init_depth=depth)
    model = EngineModel(64, max_frame=2048)
    core = run_amaranth(Engine(64, max_frame=2048), model, drv, busy=model.busy)
    assert core.mismatches == 0
    r = ce.check(drv, region, src)
    qp = s.conns[0].qp
    assert r["reads"] == 4 and model.rd.depth[qp] == depth
    assert model.rd.peak[qp] == depth and model.rd.cap_waits > 0
    print(f"engine lockstep, depth {depth}:", {"cycles": core.cycle, "peak": model.rd.peak[qp],
                                               "cycles_held_by_depth": model.rd.cap_waits})


def test_engine_tx_msgs_against_the_offer():
    """MR-ENG-280: the engine TX's messages of a connection started and not completed are
    bounded by its scheduler's rings (2 streams x depth 2 = 4 at the small engine, MR-ENG-289),
    which no register lowers: within the reference endpoint's offer (its ``max_rx_msgs``, or
    None), not within an engine's own (2, its RX's slots a stream)."""
    from metaroce.models import protocol as P
    from metaroce.models.engine import ENGINE_TX_DEPTH, engine_offer, engine_tx_msgs, engine_tx_msgs_within
    m = EngineModel(64)
    assert engine_tx_msgs(m.tx.sched.sem.streams, m.tx.sched.sem.depth) == 4 and m.tx.sched.sem.depth == ENGINE_TX_DEPTH
    assert engine_tx_msgs_within(P.OpenOffer(8, 8), 2, ENGINE_TX_DEPTH)
    assert engine_tx_msgs_within(None, 2, 4) and engine_tx_msgs_within(P.OpenOffer(8, None), 2, 4)
    assert not engine_tx_msgs_within(m.open_offer(), 2, ENGINE_TX_DEPTH)
    assert m.open_offer() == engine_offer() and m.open_offer().max_rx_msgs == 2


@pytest.mark.slow       # two Yosys runs of RdRows
def test_rd_rows_depth_cost():
    """MR-ENG-281: RdRows of the small engine with the depth against the depth term constant
    true (the registers removed: RdRows as before cap29), the project's xcup flow: 4 FFs more
    (2 connections x 2 bits), at most 20 LUTs more (47 against 33 measured)."""
    from amaranth.back import verilog
    from metaroce.hdl.engine import RdRows
    from metaroce.sim import synth
    lay, rx_lay = _lays()
    reps = {}
    for cap in (False, True):
        text = verilog.convert(RdRows(CONNS, STREAMS, rx_lay, lay.sched.rd, lay.sched.cqe, join=True, cap=cap),
                               name="rd_rows")
        reps[cap] = synth.synthesize(text, "rd_rows")
    assert reps[True].ffs - reps[False].ffs == 4
    assert 0 < reps[True].luts - reps[False].luts <= 20


@pytest.mark.slow       # a stall: runs until max_cycles (about 5 times the good run's 40,548)
def test_engine_reads_stall_without_the_cap():
    """MR-ENG-277: MR-ENG-276's 12 READs against ``max_rd_atomic`` 1 with RdRows ignoring the
    depth: the engine holds 4 rows at once and the run does not finish in 200,000 cycles (with
    the depth: 40,548), MR-ENG-244's stall with the engine as the requester."""
    sims = []

    class Keep(ce.EndpointCosim):
        def __init__(self, *a, **kw):
            super().__init__(*a, **kw)
            sims.append(self)

    orig = ce.EndpointCosim
    ce.EndpointCosim = Keep
    try:
        with pytest.raises(AssertionError, match="not finished"):
            _engine_reads(12, 1, cap=False, max_cycles=200_000)
    finally:
        ce.EndpointCosim = orig
    sim = sims[0]
    done = len(sim.eng.res["read_cqe"])
    assert done < 12 and sim.ep.stats.get("rsp_full", 0) > 8
    print("stall without the depth:", {"reads_completed": done, "rnr_naks": sim.ep.stats.get("rsp_full", 0),
                                       "engine_errors": len(sim.eng.res["errors"]),
                                       "tx_cqe": [c for c in sim.eng.res["tx_cqe"]][:12]})
