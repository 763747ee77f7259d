"""Atomics at the RX engine (docs/spec/hw-rx.md section 7e, MR-RX-151..166): the responder's
checks, sequencing and exactly-once execution point (items on ``m_atom``), the requester's
atomic and ERROR responses; the model against the reference endpoint, the cycle model and the
RTL in lockstep with backpressure on ``m_atom``."""
import pytest

from metaroce.models import rx_cases as rc
from metaroce.models.rx import (MsgCode, RD_OP_WC, WC_COMP_SWAP, WC_FETCH_ADD, WC_RDMA_READ, WC_REM_ACCESS_ERR,
                                RxCode, unpack)

DIMS = (256, 4, 256)
BP = {"m_ack__ready": 0.3, "m_place__ready": 0.3, "m_data__ready": 0.3, "m_cqe__ready": 0.4,
      "m_rsp__ready": 0.3, "m_atom__ready": 0.6}

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def _request_cases(seed):
    ep, s = rc.endpoint_setup(seed=seed, n_streams=2, max_rd_atomic=1 << 20)
    cases = (rc.atomic_request_cases(s) + rc.atomic_request_cases(s, conn=1, stream=1)
             + rc.read_request_cases(s, conn=2))
    return ep, s, cases


def _endpoint_equal(ep, s, cases, res):
    """MR-RX-157: the ACK/NAK stream, completions, READ response items and atomic items equal
    the endpoint's on the same frames; the placements with each atomic item applied at its point
    of the output order (the executor, rc.execute_atomics) give the endpoint's memory and the
    original values its responses carry."""
    got, atoms = [], []
    ref, mem = rc.endpoint_reference(ep, s, cases, rsps=got, atoms=atoms)
    assert rc.requests(s, res["ack"]) == ref
    assert rc.completions(s, res["cqe"]) == [rc.cq_tuple(c) for c in ep.poll_cq()]
    assert rc.responses(s, res["rsp"]) == got
    assert rc.atomics(s, res["atom"]) == [a[:6] for a in atoms]
    # MR-RX-164: each item's operands are its request's (the payload's big-endian words)
    assert [(it["operand"], it["compare"]) for it in (unpack(s.lay.atom, v) for v in res["atom"])] == [
        (int.from_bytes(a[6][:8], "big"), int.from_bytes(a[6][8:16], "big")) for a in atoms]
    exp = rc.expected(s.writes + cases, *DIMS)
    image, done = rc.execute_atomics(s, exp, s.writes + cases)
    assert image == mem
    assert [d[1] for d in done] == [a[7] for a in atoms]
    return atoms


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_model_atomic_requests_equal_endpoint(seed):
    """MR-RX-151..157: atomic requests (at the delivery point, a compare-and-swap behind a
    WRITE_IMM that writes its 8 bytes, refused key, range and right, two delivered by one
    chunk, a duplicate PSN, a resend after execution, every malformed kind) among READ
    requests: every case has the outcome it was built for and the model equals the reference
    endpoint (ACK/NAK stream, completions, items, memory after execution, original values)."""
    ep, s, cases = _request_cases(seed)
    exp = rc.expected(s.writes + cases, *DIMS)
    for c, o in zip([c for c in cases if isinstance(c, rc.Case)], exp["outcomes"]):
        assert c.expect is None or o.code == c.expect, c.name
    atoms = _endpoint_equal(ep, s, cases, exp)
    assert len(atoms) == 14 and sum(a[5] for a in atoms) == 6
    # the compare-and-swap behind the write found the write's bytes and swapped
    behind = [a for a in atoms if a[2] == 2 and a[0] == s.conns[0].qp]
    assert behind and behind[0][4] == 1 and behind[0][7] == behind[0][6][8:16][::-1]
    # nothing of an atomic is placed: its operands are not host bytes (MR-RX-154)
    assert all(o.place is None for c, o in zip(cases, exp["outcomes"])
               if isinstance(c, rc.Case) and c.name.startswith("at-") and not c.name.startswith("at-w"))


def test_model_atomic_and_error_responses():
    """MR-RX-159..161: an atomic response's 8 bytes are placed at its row's buffer and complete
    COMP_SWAP / FETCH_ADD with byte_len 8, once (a duplicate PSN, a copy after completion); a
    response of another length is LENGTH; an ERROR response (msg_len 0) places nothing and
    completes the atomic or READ REM_ACCESS_ERR with the request's length; an ERROR packet with
    msg_len is CHUNK; a second ERROR response is a duplicate chunk."""
    s = rc.Setup(*DIMS, seed=3)
    cases = rc.atomic_response_cases(s)
    exp = rc.expected(s.writes + cases, *DIMS)
    outs = dict(zip([c.name.rstrip("0123456789") for c in cases if isinstance(c, rc.Case)], exp["outcomes"]))
    for c, o in zip([c for c in cases if isinstance(c, rc.Case)], exp["outcomes"]):
        assert o.code == c.expect, c.name
    cq = [unpack(s.lay.cqe, v) for v in exp["cqe"]]
    assert [(c["opcode"], c["status"], c["length"]) for c in cq] == [
        (WC_COMP_SWAP, 0, 8), (WC_FETCH_ADD, 0, 8), (WC_FETCH_ADD, WC_REM_ACCESS_ERR, 8),
        (WC_RDMA_READ, WC_REM_ACCESS_ERR, 3 * s.mtu)]
    assert outs["at-cas"].place["length"] == 8 and outs["at-fadd"].place["length"] == 8
    assert outs["at-error"].place is None and outs["rd-error"].place is None
    assert outs["at-after-done"].msg == MsgCode.DUP and outs["rd-error-again"].msg == MsgCode.DUP
    assert RD_OP_WC[:3] == (WC_RDMA_READ, WC_COMP_SWAP, WC_FETCH_ADD)


@pytest.mark.parametrize("seed", [0, 3])
def test_cycle_model_atomics(seed):
    """MR-RX-155, MR-RX-158, MR-RX-175, MR-RX-176: the cycle model with idle cycles and
    backpressure on every output (m_atom at 0.6) gives the packet model's items (their
    placement marks included), ACKs, completions and counters."""
    ep, s, cases = _request_cases(seed)
    cases = cases + rc.atomic_response_cases(s, conn=2, stream=1)
    res = rc.run_model(64, s, cases, seed=seed, p_idle=0.2, p_bp=BP)
    assert len(res["atom"]) == 14


def test_rtl_atomics():
    """MR-RX-151..161, MR-RX-070: atomic requests (with READ requests) and atomic and ERROR
    responses in lockstep with idle cycles and backpressure on every output (m_atom at 0.6), 0
    mismatches on every port every cycle; outputs and counters as the model says; the RTL's
    ACK/NAK stream, completions and items equal the reference endpoint's."""
    from test_rx_amaranth import run_lockstep
    ep, s, cases = _request_cases(5)
    res = run_lockstep(64, s, cases, seed=5, p_idle=0.2, p_bp=BP)
    assert len(_endpoint_equal(ep, s, cases, res)) == 14
    s2 = rc.Setup(*DIMS, seed=6)
    res = run_lockstep(64, s2, rc.atomic_response_cases(s2) + rc.atomic_response_cases(s2, conn=1, stream=1),
                       seed=6, p_idle=0.2, p_bp=BP)
    assert sorted({unpack(s2.lay.cqe, v)["opcode"] for v in res["cqe"]}) == [WC_RDMA_READ, WC_COMP_SWAP, WC_FETCH_ADD]


def _random_cases(seed, n=60):
    ep, s = rc.endpoint_setup(seed=seed, n_streams=2, max_rd_atomic=1 << 20)
    return ep, s, rc.random_atomics(s, n)


@pytest.mark.parametrize("seed", [0, 1])
def test_model_random_atomics_equal_endpoint(seed):
    """MR-RX-151..157, MR-RX-164: random atomics (slots reused, refusals, duplicates, resends,
    writes between) against the reference endpoint: items, operands, memory after execution,
    original values, ACK/NAK stream."""
    ep, s, cases = _random_cases(seed)
    exp = rc.expected(s.writes + cases, *DIMS)
    atoms = _endpoint_equal(ep, s, cases, exp)
    assert len(atoms) >= 60


@pytest.mark.parametrize("seed", [2, 3])
def test_cycle_model_operands_under_backpressure(seed):
    """MR-RX-163..166: with m_atom nearly always stalled (0.9) and payload beats idle, every
    item still carries its own request's operands (check() compares them with the packet
    model's, taken from the request's payload): an item is shown only after its capture, and a
    capture into a slot's row waits until the items pushed before it have read theirs."""
    _, s, cases = _random_cases(seed)
    res = rc.run_model(64, s, cases, seed=seed, p_idle=0.3, p_bp=dict(BP, m_atom__ready=0.9))
    assert len(res["atom"]) >= 60


@pytest.mark.parametrize("gate", ["capture", "item"])
def test_cycle_model_without_gates_fails(monkeypatch, gate):
    """Negative controls of MR-RX-165/166: a cycle model whose captures do not wait for the
    items pushed before them (``capture``: the steering entry's mark always passed), or whose
    items do not wait for their captures (``item``: the bundle's mark always passed), shows an
    item with another request's operands under m_atom backpressure and idle payload beats,
    which check() catches."""
    from metaroce.models import rx as rxm
    _, s, cases = _random_cases(2)
    real = rxm.RxCycleModel.step
    wrap = 1 << rxm.CAP_COUNT_BITS

    def step(self, inputs):
        if gate == "capture":
            self.aq_read = (self.aq_in + 8) % wrap
        else:
            self.cap_out = (self.cap_in + 8) % wrap
        return real(self, inputs)
    monkeypatch.setattr(rxm.RxCycleModel, "step", step)
    with pytest.raises(AssertionError, match="atom"):
        rc.run_model(64, s, cases, seed=2, p_idle=0.3, p_bp=dict(BP, m_atom__ready=0.9))


def test_cycle_model_placement_mark_one_short_fails(monkeypatch):
    """Negative control of MR-RX-175, MR-RX-176: a cycle model whose bundles' placement marks count one
    placement command fewer (as one leaving the delivering record's own out) gives items that
    differ from the expected ones, which check() catches: the marks are compared."""
    from metaroce.models import rx as rxm
    _, s, cases = _random_cases(2)
    real = rxm.RxCycleModel.step
    mask = (1 << rxm.PLACE_MARK_BITS) - 1

    def step(self, inputs):
        self.place_in = (self.place_in - 1) & mask
        out = real(self, inputs)
        self.place_in = (self.place_in + 1) & mask
        return out
    monkeypatch.setattr(rxm.RxCycleModel, "step", step)
    with pytest.raises(AssertionError, match="atom"):
        rc.run_model(64, s, cases, seed=2, p_idle=0.3, p_bp=BP)


@pytest.mark.slow
def test_rtl_random_atomics_operands():
    """MR-RX-163..166, MR-RX-070: random atomics in lockstep with m_atom nearly always stalled
    (0.85) and idle payload beats: 0 mismatches, every item with its request's operands."""
    from test_rx_amaranth import run_lockstep
    ep, s, cases = _random_cases(7, 40)
    res = run_lockstep(64, s, cases, seed=7, p_idle=0.3, p_bp=dict(BP, m_atom__ready=0.85))
    assert len(_endpoint_equal(ep, s, cases, res)) >= 40


def test_difference_key_checked_at_arrival():
    """MR-RX-162 (as MR-RX-134): an atomic waiting for an earlier message of its stream executes
    with the verdict of its arrival: its key row revoked before it executes, the RX's item
    still names the 8 bytes (err 0) where the endpoint, which checks again (MR-VERB-004),
    answers with an ERROR response."""
    atoms = []
    s, c, k, exp = rc.key_withdrawn_run(
        lambda s, c, k: rc.atomic_request(s, c, 1, cas=False, key=k, va=64, expect=RxCode.ACCEPTED),
        DIMS, atoms=atoms)
    assert rc.atomics(s, exp["atom"]) == [(c.qp, 0, 1, (k.base + 64) % (1 << 64), 0, 0)]
    assert [a[:6] for a in atoms] == [(c.qp, 0, 1, 0, 0, 1)]


def _traffic_equal(s, tr, res):
    """MR-RX-157, MR-RX-159: the run's ACK/NAK stream, completions (the atomics' at the
    requester among them) and READ items equal the receiving endpoint's; its placements with
    its atomic items executed in their order (their own operands) equal the endpoint's memory,
    and the original values its responses carried."""
    assert rc.requests(s, res["ack"]) == tr.acks
    memory, origs = rc.apply_atomics(s, rc.memory_image(s, res["place"], res["data"]), res["atom"])
    assert memory == tr.memory
    assert rc.atomics(s, res["atom"]) == [a[:6] for a in tr.atoms] and origs == [a[7] for a in tr.atoms]
    assert rc.same_completions(rc.completions(s, res["cqe"]), tr.cqes)
    assert rc.responses(s, res["rsp"]) == tr.rsps


@pytest.mark.parametrize("seed,streams", [(1, None), (2, 1), (4, 2)])
def test_model_atomic_traffic_equal_endpoint(seed, streams):
    """MR-RX-157, MR-RX-159: the reference endpoint's traffic with atomics both ways (the
    receiver's, whose responses arrive; the sender's, which the receiver executes) among
    WRITEs, SENDs, READs both ways, under loss, reordering, duplication and forged packets,
    through the cycle model with idle cycles and backpressure: equal to the endpoint."""
    s, tr = rc.endpoint_traffic(nbytes=16384, loss=0.05, reorder=0.2, dup=0.05, seed=seed, hostile=12, imm=0.5,
                                sends=0.1, reads=0.15, read_reqs=0.15, atomics=0.2, atomic_reqs=0.25, n_writes=24,
                                n_streams=streams)
    assert tr.stats["atomics"] >= 2 and tr.stats["atomic_reqs"] >= 2
    res = rc.run_model(64, s, tr.items, seed=seed, p_idle=0.2, p_bp=0.4)
    _traffic_equal(s, tr, res)
    assert sum(1 for v in res["cqe"] if unpack(s.lay.cqe, v)["opcode"] in (WC_COMP_SWAP, WC_FETCH_ADD)) == tr.stats["atomics"]


def test_rtl_atomic_traffic_verilator():
    """MR-RX-157, MR-RX-159, MR-RX-070: that traffic into the 256 x 4 RTL under Verilator in
    lockstep with the model (idle cycles, backpressure on every output, m_atom too): 0
    mismatches; memory after the items' execution, originals, items, ACK/NAK stream and
    completions equal the receiving endpoint's."""
    import json
    from metaroce import blocks
    from metaroce.sim import verilator as vl
    from metaroce.tb import build as tb_build
    b = tb_build.build(blocks.get("rx_256x4"), 64)
    env = {"RX_SEED": "4", "RX_TRAFFIC_BYTES": "16384", "RX_TRAFFIC_LOSS": "0.05",
           "RX_TRAFFIC_REORDER": "0.2", "RX_TRAFFIC_DUP": "0.05", "RX_TRAFFIC_HOSTILE": "8",
           "RX_TRAFFIC_WRITES": "24", "RX_TRAFFIC_IMM": "0.5", "RX_TRAFFIC_SENDS": "0.1",
           "RX_TRAFFIC_READS": "0.15", "RX_TRAFFIC_READ_REQS": "0.15", "RX_TRAFFIC_ATOMICS": "0.2",
           "RX_TRAFFIC_ATOMIC_REQS": "0.25", "RX_TRAFFIC_STREAMS": "2"}
    row = vl.run_one(b, "metaroce.tb.rx", "rx_endpoint_traffic", env, out_var="RX_TRAFFIC_OUT")
    print(json.dumps(row))
    assert row["mismatches"] == 0 and row["acks_equal"] and row["memory_equal"] and row["completions_equal"]
    assert row["responses_equal"] and row["atomics_equal"] and row["atomics"] == row["traffic"]["atomic_reqs"] >= 2
    assert row["traffic"]["atomics"] >= 2 and row["traffic"]["lost"] > 0


@pytest.mark.parametrize("width", [128, 512])
def test_cycle_model_operands_wide(width):
    """MR-RX-163: from 128 bits an atomic's operands are one beat: the cycle model's items
    carry their requests' operands (check() compares them) under m_atom backpressure."""
    _, s, cases = _random_cases(5, 40)
    res = rc.run_model(width, s, cases, seed=5, p_idle=0.3, p_bp=dict(BP, m_atom__ready=0.8))
    assert len(res["atom"]) >= 40


def _atomics_128_cases(*, built_in_order=True):
    """test_rtl_atomics_128's cases: the atomic request cases on connection 1's stream 1, 30
    random atomic pairs, the atomic and ERROR-response cases on connection 2. Each generator
    takes its stream's next message numbers, so they are built in the order they are sent
    (``built_in_order``): built the other way (the random atomics first), the request cases'
    first message is two past their stream's delivery point and the random ones' messages come
    later, and the packet model refuses eleven of them (MSG_SLOTS, MR-RX-167)."""
    ep, s = rc.endpoint_setup(seed=9, n_streams=2, max_rd_atomic=1 << 20)
    if built_in_order:
        cases = rc.atomic_request_cases(s, conn=1, stream=1) + rc.random_atomics(s, 30)
    else:
        rand = rc.random_atomics(s, 30)
        cases = rc.atomic_request_cases(s, conn=1, stream=1) + rand
    return s, cases + rc.atomic_response_cases(s, conn=2)


def _not_as_built(s, cases):
    """The cases whose packet-model outcome (no RTL) is not the one they were built for."""
    lay = s.lay
    exp = rc.expected(s.writes + cases, lay.conns, lay.paths, lay.keys, lay.streams)
    built = [it for it in s.writes + cases if isinstance(it, rc.Case)]
    return {c.name: o.code for c, o in zip(built, exp["outcomes"]) if c.expect is not None and o.code != c.expect}, exp


def test_atomics_128_cases_as_built():
    """MR-RX-151..157, MR-RX-167: test_rtl_atomics_128's case list, through the packet model:
    every case has the outcome it was built for (the request cases' fetch-and-add at the delivery
    point, the atomic behind its WRITE_IMM, the refusals, the duplicates), and the random pairs
    give at least 30 items; the list built out of its send order (the random atomics first)
    fails this check (a negative control)."""
    s, cases = _atomics_128_cases()
    wrong, exp = _not_as_built(s, cases)
    assert wrong == {}
    assert len(exp["atom"]) >= 30
    wrong, _ = _not_as_built(*_atomics_128_cases(built_in_order=False))
    assert wrong.get("at-now") == RxCode.MSG_SLOTS and len(wrong) == 11


@pytest.mark.slow
def test_rtl_atomics_128():
    """MR-RX-163/164, MR-RX-070: the atomic and ERROR-response cases and random atomics at 128
    bits (one beat of operands) in lockstep: 0 mismatches, and the outputs, counters and items
    with their operands as the packet model says (check(): every case's outcome the one it was
    built for, test_atomics_128_cases_as_built)."""
    from test_rx_amaranth import run_lockstep
    s, cases = _atomics_128_cases()
    res = run_lockstep(128, s, cases, seed=9, p_idle=0.2, p_bp=dict(BP, m_atom__ready=0.7))
    assert len(res["atom"]) >= 30
