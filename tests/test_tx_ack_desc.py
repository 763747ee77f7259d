"""One frame builder for data and ACK frames (docs/spec/hw-tx.md section 2.13, MR-TX-280..285;
hw-engine.md section 5j, MR-ENG-282..287): the TX data path with ``ack_desc`` (``TxData``) against
``TxDataCycleModel(ack_desc=True)`` in lockstep, ACK and NAK descriptors offered at random between
WRITE, SEND and atomic frame requests, random backpressure and AXI latencies; the frames are the
builder's bytes of their descriptors; the wrong order (data first) fails."""
import random

import pytest

from metaroce.hdl.tx import TxData, Tx, tx_small
from metaroce.models import tx_cases as xc
from metaroce.models.dma_read_cases import Layout
from metaroce.models.engine import ack_desc
from metaroce.models.frame_builder import builder_bytes, pack_desc, unpack_desc
from metaroce.models.tx import (ACK_DESC_INPUTS, ACK_DESC_OUTPUTS, KIND_DEPTH, SMALL, TxCycleModel,
                                TxDataCycleModel)
from metaroce.tb.lockstep import Mismatch, run_amaranth

_DATA = {k: SMALL[k] for k in ("conns", "streams", "paths", "depth", "pool", "outstanding")}


def _ack_descs(tmpls, n, seed):
    """``n`` ACK/NAK descriptors (MR-ENG-133's) of random records over the connections."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        c = rng.randrange(len(tmpls))
        nak = int(rng.random() < 0.3)
        rec = {"nak": nak, "conn": c, "path": rng.randrange(4), "psn": rng.randrange(1 << 24),
               "reason": rng.randrange(4) if nak else 0, "cum": rng.randrange(1 << 24),
               "sack": rng.getrandbits(64), "ce_count": rng.choice([0, 0, 5]), "ece": 0,
               "sport": 0xC000 + rng.randrange(1 << 12)}
        out.append(ack_desc(rec, tmpls[c]))
    return out


class AckDataDriver(xc.DataDriver):
    """The data path's driver (MR-TX-151) with ACK descriptors offered on ``s_ack_desc`` at
    random cycles (held until taken, as a stream)."""

    def __init__(self, *a, acks, p_ack=0.15, **kw):
        super().__init__(*a, **kw)
        self.acks, self.ai, self.ack_offer, self.p_ack = list(acks), 0, None, p_ack
        self.limit += 2_000 * len(self.acks)
        self.order = []                 # "a" / "d" per frame out, in order

    @property
    def sent_all(self):
        return (self.i >= len(self.reqs) and self.ai >= len(self.acks)
                and len(self.res["raw"]) == len(self.reqs) + len(self.acks))

    def inputs(self):
        inp = super().inputs()
        inp["s_ack_desc__valid"], inp["s_ack_desc__payload"] = 0, 0
        if self._phase:
            return inp
        if self.ack_offer is None and self.ai < len(self.acks) and self.rng.random() < self.p_ack:
            self.ack_offer = self.acks[self.ai]
        if self.ack_offer is not None:
            inp["s_ack_desc__valid"] = 1
            inp["s_ack_desc__payload"] = pack_desc(self.ack_offer)
        return inp

    def observe(self, inp, out):
        if not self._phase and self.ack_offer is not None and out["s_ack_desc__ready"]:
            self.ack_offer = None
            self.ai += 1
        super().observe(inp, out)


def _run(seed, *, n_req=10, n_ack=12, p_bp=0.3, model_kw=None, rtl=True):
    model = TxDataCycleModel(64, **_DATA, ack_desc=True, **(model_kw or {}))
    mem = Layout(8192)
    reqs = xc.data_requests(model.lay, n_req, mem, seed=seed, max_len=300, atomics=0.2)
    tmpls = xc.templates(2, 4)
    acks = _ack_descs(tmpls, n_ack, seed)
    drv = AckDataDriver(model.lay, 64, reqs, mem, tmpls, seed=seed, acks=acks, p_bp=p_bp)
    stats = {"both": 0}

    def on_cycle(cycle, ins, outs):
        # an ACK descriptor offered while the join stage's waits: the arbitration decides
        stats["both"] += bool(ins.get("s_ack_desc__valid") and model.join.desc[0])
    if rtl:
        core = run_amaranth(TxData(64, **_DATA, ack_desc=True), model, drv, busy=model.busy,
                            on_cycle=on_cycle)
    else:
        core = None
        while not drv.finished:
            inp = drv.inputs()
            drv.observe(inp, model.step(inp))
            drv.settle(model.busy)
    return core, drv, reqs, tmpls, acks, stats


def test_one_builder_lockstep():
    """MR-TX-280..282, MR-TX-284: ACK and NAK descriptors between data frame requests (writes,
    sends, atomics), backpressure on ``m_axis``, random AXI latency: 0 mismatches; the frames
    out are the data frames in order and the ACK frames in order (the builder's bytes of each
    descriptor, MR-TXF-003), merged; no read error is reported (an ACK frame's end leaves the
    error queue alone)."""
    core, drv, reqs, tmpls, acks, stats = _run(4)
    assert core.mismatches == 0 and stats["both"] > 0
    raw = drv.res["raw"]
    ack_bytes = [builder_bytes(unpack_desc(pack_desc(d)), b"") for d in acks]
    data_bytes = xc.expected_data_frames(reqs, tmpls, drv.mem, 4)
    got_acks = [f for f in raw if f in ack_bytes]
    got_data = [f for f in raw if f not in ack_bytes]
    assert got_acks == ack_bytes and got_data == data_bytes
    assert not any(drv.res["tuser"]) and not drv.res["fail"]


def test_one_builder_orders_ack_first():
    """MR-TX-281, MR-TX-284's negative control: the model with the data descriptor first
    (``ack_first=False``) against the same RTL mismatches."""
    with pytest.raises(Mismatch, match="s_ack_desc__ready|m_axis"):
        _run(4, model_kw={"ack_first": False})


def test_one_builder_ports_and_tx_alone_unchanged():
    """MR-TX-280: ``s_ack_desc`` only with ``ack_desc`` (``tx`` alone keeps its ports and its
    model's); the kind queue's depth (MR-TX-282)."""
    blocks = [tx_small(), Tx(64, **SMALL, ack_desc=True), TxData(64, **_DATA, ack_desc=True)]
    for blk in blocks:          # built for their signatures only, never elaborated
        blk._MustUse__silence = True
        for sub in ("sched", "rtx", "data", "cwnd"):
            if hasattr(blk, sub):
                getattr(blk, sub)._MustUse__silence = True
    assert "s_ack_desc" not in blocks[0].signature.members
    assert "s_ack_desc" in blocks[1].signature.members
    assert "s_ack_desc" in blocks[2].signature.members
    plain = TxCycleModel(64, **SMALL).port_names()
    both = TxCycleModel(64, **SMALL, ack_desc=True).port_names()
    assert not set(ACK_DESC_INPUTS) & set(plain["inputs"])
    assert both["inputs"] == plain["inputs"] + ACK_DESC_INPUTS
    assert both["outputs"] == plain["outputs"] + ACK_DESC_OUTPUTS
    assert KIND_DEPTH == 16


@pytest.mark.parametrize("seed", [5, 6])
def test_one_builder_model_frames(seed):
    """MR-TX-280..283 on the model alone (more seeds, heavier backpressure): every frame out, the
    ACK frames the builder's bytes of their descriptors, in order."""
    _, drv, reqs, tmpls, acks, _ = _run(seed, n_req=16, n_ack=20, p_bp=0.6, rtl=False)
    ack_bytes = [builder_bytes(unpack_desc(pack_desc(d)), b"") for d in acks]
    raw = drv.res["raw"]
    assert [f for f in raw if f in ack_bytes] == ack_bytes
    assert [f for f in raw if f not in ack_bytes] == xc.expected_data_frames(reqs, tmpls, drv.mem, 4)


@pytest.mark.parametrize("ack", [False, True])
def test_builder_fields_cover_the_descriptors(ack):
    """MR-TX-508, MR-TX-509: every field the join stage's descriptor sets (``desc_of``) is among the
    builder's ``desc_fields`` (it takes the others as 0, MR-TXF-072), and with ``ack_desc`` every
    field an ACK descriptor may set (the shared and the ACK-only ones); the TX's model gives its
    builder those fields (the RTL likewise, hdl/tx.py; their locksteps compare them)."""
    from metaroce.models.tx import ACK_ONLY_DESC_FIELDS, SHARED_DESC_FIELDS, builder_fields, desc_of, layouts
    lay = layouts()
    fr = {n: 1 for n, _ in lay.sched.frame}
    t = {n: 1 for n, _ in lay.cfg}
    given = set(builder_fields(lay, ack))
    assert set(desc_of(fr, t, 4)) <= given
    assert (set(SHARED_DESC_FIELDS) | set(ACK_ONLY_DESC_FIELDS) <= given) == ack
    assert TxCycleModel(64, ack_desc=ack).data.fb.desc_fields == given
