"""The engine's completion join (MR-ENG-196..215, hdl/engine.py ``CqJoin``, model
models/engine.py ``CqJoinModel``): one host completion per work request, a READ's made of its
RX record, each stream's in posting order, the TX half's records always taken, ``s_wr`` held at
the bound."""
import collections
import random

import pytest

from metaroce.models.engine import CQ_DEPTH, CqJoinModel, engine_layouts
from metaroce.models.rx import RD_OP_WC, WC_RDMA_READ, WC_REM_ACCESS_ERR, layouts as rx_layouts, pack, unpack
from metaroce.models.tx_sched import (OP_CMP_SWAP, OP_FETCH_ADD, OP_READ, OP_WRITE, STATUS_LOC_QP_OP_ERR,
                                      STATUS_RETRY_EXC_ERR)

CONNS, STREAMS, SLOTS = 2, 2, 2


def _lays():
    lay = engine_layouts().sched
    return lay, rx_layouts(CONNS, 4, 256, streams=4).cqe


class _CqJoinPorts:
    """``CqJoinModel`` with the RTL block's ports (``hdl.engine.CqJoin``) for the lockstep."""

    def __init__(self, lay, rx_cqe, join_cls=CqJoinModel, **kw):
        self.lay = lay
        self.j = join_cls(CONNS, STREAMS, SLOTS, lay.cqe, rx_cqe, lay.rd, lay.wr, **kw)

    def port_names(self):
        return {"inputs": ["s_tx__payload", "s_tx__valid", "s_rx__payload", "s_rx__valid", "rd", "rd_take",
                           "wr_conn", "wr_stream", "wr_take", "m_cqe__ready"],
                "outputs": ["s_tx__ready", "s_rx__ready", "wr_hold", "m_cqe__payload", "m_cqe__valid",
                            "free", "free_row", "unmatched"]}

    def busy(self):
        return self.j.busy()

    def step(self, i):
        j = self.j
        head = pack(self.lay.wr, {"conn": i["wr_conn"], "stream": i["wr_stream"]})
        out = {"s_tx__ready": 1, "s_rx__ready": 1, "wr_hold": j.hold(head), "m_cqe__valid": j.out[0],
               "m_cqe__payload": j.out[1], "unmatched": j.unmatched}
        j.step(i["wr_take"], head, i["rd_take"], i["rd"], i["s_tx__valid"], i["s_tx__payload"],
               i["s_rx__valid"], i["s_rx__payload"], i["m_cqe__ready"])
        out.update({"free": int(j.free is not None), "free_row": j.free or 0})
        return out


class _HalvesDriver:
    """The TX half and the RX as the join sees them, random and consistent: work requests
    (WRITEs and READs, some refused: a stream beyond the instance) taken within the join's
    bound and a READ only when its row is free (as ``RdRows`` holds it); the TX half's records
    in each stream's ring order (a refused one soon), a READ's request failing now and then
    (RETRY_EXC_ERR); the RX's record of each good READ before or after its TX record (a tenth
    with REM_ACCESS_ERR), of a failed READ sometimes, and records of no READ; the host's ready
    random."""

    def __init__(self, lay, rx_cqe, seed, n_wrs=160, p_ready=0.6, atomics=False):
        self.rng, self.lay, self.rx_cqe = random.Random(seed), lay, rx_cqe
        self.atomics = atomics
        self.n_wrs, self.p_ready = n_wrs, p_ready
        self.posted = 0
        self.msg_next = collections.Counter()
        self.ring = collections.defaultdict(collections.deque)     # k -> WRs awaiting their TX record
        self.refused = collections.deque()
        self.rx_todo = []               # READs whose RX record is still to come
        self.busy_rows = set()
        self.outstanding = collections.Counter()
        self.want = collections.defaultdict(list)   # k -> expected (wr_id, status) in posting order
        self.got = collections.defaultdict(list)
        self.refused_want, self.refused_got = [], []
        self.holds = self.violations = self.bogus = 0
        self.cycle = 0
        self._pending = None

    @property
    def finished(self):
        done = sum(len(v) for v in self.got.values()) + len(self.refused_got)
        return self.posted >= self.n_wrs and done >= self.n_wrs

    def inputs(self):
        r, lay = self.rng, self.lay
        inp = {"s_tx__valid": 0, "s_tx__payload": 0, "s_rx__valid": 0, "s_rx__payload": 0, "rd": 0,
               "rd_take": 0, "wr_take": 0, "m_cqe__ready": int(r.random() < self.p_ready)}
        conn, stream = r.randrange(CONNS), r.randrange(STREAMS)
        bad = r.random() < 0.08
        op = OP_READ if r.random() < 0.45 else OP_WRITE
        if self.atomics and op == OP_READ and r.random() < 0.5:
            op = r.choice([OP_CMP_SWAP, OP_FETCH_ADD])
        k = (conn, stream)
        inp.update({"wr_conn": conn, "wr_stream": stream + (STREAMS if bad else 0)})
        self._pending = None
        row = self.msg_next[k] % SLOTS
        if (self.posted < self.n_wrs and r.random() < 0.5 and self.outstanding[k] < CQ_DEPTH
                and (bad or op == OP_WRITE or (k, row) not in self.busy_rows)):
            wr_id = r.getrandbits(16)
            w = {"wr_id": wr_id, "op": op, "conn": conn, "stream": stream + (STREAMS if bad else 0),
                 "length": 8 if op == OP_READ and r.random() < 0.2 else r.randrange(1, 5000)}
            inp["wr_take"] = 1
            if bad:
                w["status"] = STATUS_LOC_QP_OP_ERR
            else:
                w["msg"] = self.msg_next[k]
                w["status"] = 0
                if op in (OP_READ, OP_CMP_SWAP, OP_FETCH_ADD):
                    w["row"] = row
                    w["fail"] = r.random() < 0.1
                    w["rx_status"] = WC_REM_ACCESS_ERR if r.random() < 0.1 else 0
                    w["rx"] = not w["fail"] or r.random() < 0.5
                    if w["fail"]:
                        w["status"] = STATUS_RETRY_EXC_ERR
                    inp.update({"rd_take": 1, "rd": pack(lay.rd, {"conn": conn, "stream": stream,
                                                                   "msg": w["msg"], "laddr": 0,
                                                                   "length": w["length"], "wr_id": wr_id})})
            self._pending = (k, w)
        # the TX half's record: a refused one soon, or a stream's oldest
        if r.random() < 0.5:
            heads = [kk for kk, q in self.ring.items() if q]
            src = (self.refused if self.refused and (r.random() < 0.5 or not heads)
                   else self.ring[r.choice(heads)] if heads else None)
            if src:
                w = src.popleft()
                inp.update({"s_tx__valid": 1, "s_tx__payload": pack(lay.cqe, {
                    "conn": w["conn"], "stream": w["stream"], "wr_id": w["wr_id"], "status": w["status"],
                    "op": w["op"], "length": w["length"]})})
        # the RX's record of a READ (or of none)
        if r.random() < 0.3 and self.rx_todo:
            w = self.rx_todo.pop(r.randrange(len(self.rx_todo)))
            inp.update({"s_rx__valid": 1, "s_rx__payload": pack(self.rx_cqe, {
                "conn": w["conn"], "stream": w["stream"], "msg": w["msg"], "status": w["rx_status"],
                "opcode": RD_OP_WC[w["op"] - OP_READ], "length": w["length"], "wr_id": w["wr_id"]})})
        elif r.random() < 0.01:
            self.bogus += 1
            inp.update({"s_rx__valid": 1, "s_rx__payload": pack(self.rx_cqe, {
                "conn": r.randrange(CONNS), "stream": r.randrange(4), "msg": r.getrandbits(32),
                "opcode": WC_RDMA_READ})})
        return inp

    def observe(self, inp, out):
        if inp["wr_take"]:
            k, w = self._pending
            self.outstanding[k] += 1
            self.posted += 1
            self.violations += out["wr_hold"]
            if w["stream"] >= STREAMS:
                self.refused.append(w)
                self.refused_want.append(w["wr_id"])
            else:
                self.msg_next[k] += 1
                self.ring[k].append(w)
                self.want[k].append((w["wr_id"], w["status"] or w.get("rx_status", 0)))
                if w["op"] != OP_WRITE:
                    self.busy_rows.add((k, w["row"]))
                    if w["rx"]:
                        self.rx_todo.append(w)
        self.holds += out["wr_hold"]
        if out["free"]:
            f = out["free_row"]
            kk = ((f // SLOTS) // STREAMS, (f // SLOTS) % STREAMS)
            self.busy_rows.discard((kk, f % SLOTS))
        if out["m_cqe__valid"] and inp["m_cqe__ready"]:
            c = unpack(self.lay.cqe, out["m_cqe__payload"])
            k = (c["conn"], c["stream"] % STREAMS)
            self.outstanding[k] -= 1
            if c["stream"] >= STREAMS:
                self.refused_got.append(c["wr_id"])
            else:
                self.got[k].append((c["wr_id"], c["status"]))
        self.cycle += 1
        if self.cycle > 30_000:
            raise AssertionError("the join stopped")

    def settle(self, busy):
        pass


def test_cq_join_lockstep_amaranth():
    """MR-ENG-196..205 (MR-ENG-197, MR-ENG-198, MR-ENG-199, MR-ENG-200, MR-ENG-201, MR-ENG-203,
    MR-ENG-204, MR-ENG-206, MR-ENG-208: refused records out of order; MR-ENG-210, MR-ENG-211):
    CqJoin (RTL, Amaranth simulator) and CqJoinModel in
    lockstep, every output every cycle, on 160 random work requests of 2 connections x 2
    streams (READs and WRITEs, some refused), their TX records in ring order, each READ's RX
    record before or after its TX record (some REM_ACCESS_ERR, some READ requests failed), RX
    records of no READ, and the host's ready random: 0 mismatches; every work request completes
    once, each stream's in posting order, a READ with its RX record's status (its request's
    failure status when it failed); the TX half's and the RX's records always taken; ``s_wr``
    held at the bound (never taken while held); the RX records of no READ counted."""
    from metaroce.hdl.engine import CqJoin
    from metaroce.tb.lockstep import run_amaranth
    lay, rx_cqe = _lays()
    model = _CqJoinPorts(lay, rx_cqe)
    drv = _HalvesDriver(lay, rx_cqe, seed=7, p_ready=0.25)
    core = run_amaranth(CqJoin(CONNS, STREAMS, SLOTS, lay.cqe, rx_cqe, lay.rd), model, drv)
    assert core.mismatches == 0
    assert dict(drv.got) == dict(drv.want)
    assert sorted(drv.refused_got) == sorted(drv.refused_want)
    assert drv.violations == 0 and drv.holds > 0 and model.j.unmatched >= drv.bogus > 0
    assert model.j.joined > 20 and model.j.level_max >= 3


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_cq_join_model_random(seed):
    """MR-ENG-196..205: the model alone on the same random halves (more seeds, faster), with a
    slow host (ready a fifth of the cycles, so the bound holds ``s_wr``): every work request
    once, each stream's in posting order with its joined status."""
    lay, rx_cqe = _lays()
    model = _CqJoinPorts(lay, rx_cqe)
    drv = _HalvesDriver(lay, rx_cqe, seed=seed, n_wrs=300, p_ready=0.2)
    _run_model(model, drv)
    assert dict(drv.got) == dict(drv.want) and sorted(drv.refused_got) == sorted(drv.refused_want)
    assert drv.violations == 0 and drv.holds > 0


def _run_model(model, drv):
    while not drv.finished:
        i = drv.inputs()
        o = model.step(i)
        drv.observe(i, o)


class _LifoFifo:
    """Negative control: a queue that serves its newest entry first."""

    def __init__(self, depth):
        self.items, self.depth = [], depth

    @property
    def level(self):
        return len(self.items)

    @property
    def head(self):
        return self.items[-1]

    def update(self, pop, push, value=0):
        if pop and self.items:
            self.items.pop()
        if push:
            self.items.append(value)


class _ReorderingJoin(CqJoinModel):
    """Negative control: the stream queues serve their newest record first (a join that
    reorders a stream's completions)."""

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.q = [_LifoFifo(self.depth) for _ in self.q]


class _DroppingJoin(CqJoinModel):
    """Negative control: the first READ completion joined is lost."""

    def step(self, *a):
        before = self.joined
        super().step(*a)
        if self.joined == 1 and before == 0:
            self.out = (0, self.out[1])


def test_cq_join_negative_controls():
    """MR-ENG-212, negative controls: a join that reorders a stream's completions (its queues
    served newest first) or drops one (the first READ joined) fails the random halves' check
    (posting order, every work request once)."""
    lay, rx_cqe = _lays()
    model = _CqJoinPorts(lay, rx_cqe, _ReorderingJoin)
    drv = _HalvesDriver(lay, rx_cqe, seed=1, n_wrs=300, p_ready=0.2)
    _run_model(model, drv)
    assert dict(drv.got) != dict(drv.want)
    assert sorted(map(sorted, drv.got.values())) == sorted(map(sorted, drv.want.values()))
    model = _CqJoinPorts(lay, rx_cqe, _DroppingJoin)
    drv = _HalvesDriver(lay, rx_cqe, seed=1, n_wrs=300, p_ready=0.2)
    with pytest.raises(AssertionError, match="stopped"):
        _run_model(model, drv)


def test_cq_join_model_atomics():
    """MR-ENG-207: the atomics joined as READs (``rd_ops`` with CMP_SWAP and FETCH_ADD, their
    RX records COMP_SWAP / FETCH_ADD, MR-RX-159): on the random halves with atomics among the
    READs, every work request once, each stream's in posting order with its joined status (the
    engine's ``CQ_RD_OPS``, the TX half offering the atomics on ``m_rd``, MR-TXS-141)."""
    lay, rx_cqe = _lays()
    model = _CqJoinPorts(lay, rx_cqe, rd_ops=(OP_READ, OP_CMP_SWAP, OP_FETCH_ADD))
    drv = _HalvesDriver(lay, rx_cqe, seed=4, n_wrs=300, p_ready=0.3, atomics=True)
    _run_model(model, drv)
    assert dict(drv.got) == dict(drv.want) and sorted(drv.refused_got) == sorted(drv.refused_want)
    assert model.j.joined > 30
    # negative control: the same traffic with rd_ops READ only is joined wrong (the atomics'
    # records wait for nothing and leave the READ rows' order behind)
    model = _CqJoinPorts(lay, rx_cqe, rd_ops=(OP_READ,))
    drv = _HalvesDriver(lay, rx_cqe, seed=4, n_wrs=300, p_ready=0.3, atomics=True)
    _run_model(model, drv)
    assert dict(drv.got) != dict(drv.want)


def test_cq_join_small_memory():
    """MR-ENG-208/209: the small engine's join (``cq_join_small``): 4 queues of CQ_DEPTH
    entries of 76 bits (the TX record's 73, ``own``, ``wait``, the row's bit) and 4 READ-order
    FIFOs of 2 row bits, its ports those of the lockstep."""
    from metaroce.hdl.engine import cq_join_small
    lay, _ = _lays()
    assert lay.cqe.size == 73
    j = cq_join_small()
    mod = j.elaborate(None)
    names = [f"q{k}" for k in range(4)] + [f"order{k}" for k in range(4)]
    fifos = {n: (mod.submodules[n].width, mod.submodules[n].depth) for n in names}
    for e in [j, mod] + [mod.submodules[n] for n in names]:    # elaborated for their shapes only
        e._MustUse__silence = True
    assert fifos == {**{f"q{k}": (76, CQ_DEPTH) for k in range(4)}, **{f"order{k}": (1, 2) for k in range(4)}}
