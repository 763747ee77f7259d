"""The RX engine's message-slot verdict before the sequence state (docs/spec/hw-rx.md section
7f, MR-RX-167..172): a sender beyond its stream's message slots is NAKed as the reference
endpoint NAKs it (MR-SEC-006), its PSN not accepted; the model against the endpoint, the cycle
model and the RTL in lockstep (Amaranth) with and without backpressure."""
import pytest

from metaroce.models import rx_cases as rc
from metaroce.models.rx import CTR_MSG_REFUSED, MSG_SLOTS, RxCode
from metaroce.models.wire import NakReason

DIMS = (256, 4, 256)

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def _cases(seed):
    ep, s = rc.endpoint_setup(*DIMS, seed=seed, n_streams=1, max_rx_msgs=MSG_SLOTS)
    cases = rc.slot_cases(s) + rc.slot_cases(s, conn=1) + rc.slot_cases(s)
    return ep, s, cases


@pytest.mark.parametrize("seed", [0, 1])
def test_model_slot_verdict_equals_endpoint(seed):
    """MR-RX-167..170: every slot case has its outcome; the ACK/NAK stream (a NAK
    INVALID_REQUEST for a message ``msg_slots`` or 2^31 ahead, a READ request and a SEND among
    them, before the SEND's RNR; LENGTH for another length right behind the chunk that opened
    the message; no ACK naming a refused PSN, and the same PSN accepted once within the slots),
    the memory image and the completions equal the reference endpoint's with its bound at
    ``msg_slots`` on one stream. Without ``slot_nak`` (MR-RX-083) the streams differ: the
    refused PSNs are acknowledged."""
    ep, s, cases = _cases(seed)
    exp = rc.expected(s.writes + cases, *DIMS, slot_nak=True)
    for c, o in zip([c for c in cases if isinstance(c, rc.Case)], exp["outcomes"]):
        assert c.expect is None or o.code == c.expect, c.name
    ref, mem = rc.endpoint_reference(ep, s, cases)
    got = rc.requests(s, exp["ack"])
    assert got == ref
    naks = [r for r in got if r[0] == "nak"]
    assert {r[3] for r in naks} == {int(NakReason.INVALID_REQUEST), int(NakReason.LENGTH)}
    assert rc.memory_image(s, exp["place"], exp["data"]) == mem
    assert rc.completions(s, exp["cqe"]) == [rc.cq_tuple(c) for c in ep.poll_cq()]
    assert exp["counters"][CTR_MSG_REFUSED] == exp["counters"][RxCode.MSG_SLOTS] + sum(
        1 for c in cases if isinstance(c, rc.Case) and c.name.startswith("other-len"))
    # negative control: the refusal after the sequence state acknowledges those PSNs
    off = rc.expected(s.writes + cases, *DIMS, slot_nak=False)
    assert rc.requests(s, off["ack"]) != ref


@pytest.mark.parametrize("seed", [0, 2])
def test_cycle_model_slot_verdict(seed):
    """MR-RX-169: the cycle model with idle cycles and backpressure on every output, and back
    to back, gives the packet model's outputs and counters with ``slot_nak``."""
    _, s, cases = _cases(seed)
    rc.run_model(64, s, cases, seed=seed, p_idle=0.2, p_bp=0.4, slot_nak=True)
    rc.run_model(64, s, cases, seed=seed, p_idle=0.0, p_bp=0.0, slot_nak=True)


def test_message_cases_with_slot_nak():
    """MR-RX-167/168: the message stage's cases with the verdict in S4: the chunk beyond the
    slots is MSG_SLOTS, the chunk of another length LENGTH, both counted as refused chunks."""
    s = rc.Setup(*DIMS, seed=3)
    cases = rc.message_cases(s, slot_nak=True)
    exp = rc.expected(s.writes + cases, *DIMS, slot_nak=True)
    codes = [o.code for o in exp["outcomes"]]
    assert RxCode.MSG_SLOTS in codes and RxCode.LENGTH in codes
    assert exp["counters"][CTR_MSG_REFUSED] == 2
    rc.run_model(64, s, cases, seed=1, p_idle=0.1, p_bp=0.3, slot_nak=True)


@pytest.mark.parametrize("p_idle,p_bp", [(0.0, 0.0), (0.2, 0.4)])
def test_rtl_slot_verdict(p_idle, p_bp):
    """MR-RX-169..171, MR-RX-070, MR-RX-200..202, MR-RX-204..206, MR-RX-269, MR-RX-270,
    MR-RX-272, MR-RX-293..297: the RTL with ``slot_nak`` in
    lockstep with the cycle model (Amaranth, the verdict table poisoned on reads that meet a
    write, MR-RX-119): the slot cases and the message cases, back to back (the verdict of a
    record behind the chunk that opens its message or delivers the messages before it; S4's
    decision for S5 on the row S5's write of the cycle gives) and with idle cycles and
    backpressure; 0 mismatches, outputs and counters as the packet model says."""
    from test_rx_amaranth import run_lockstep
    _, s, cases = _cases(3)
    s2 = rc.Setup(*DIMS, seed=3, mtu_log2=6)
    res = run_lockstep(64, s, cases, seed=4, p_idle=p_idle, p_bp=p_bp, slot_nak=True)
    assert res["counters"][RxCode.MSG_SLOTS] >= 12
    res = run_lockstep(64, s2, rc.message_cases(s2, slot_nak=True), seed=5, p_idle=p_idle, p_bp=p_bp,
                       slot_nak=True)
    assert res["counters"][CTR_MSG_REFUSED] == 2


@pytest.mark.slow       # the form off by default (MR-RX-297), kept checked
def test_rtl_slot_verdict_both_outcomes(monkeypatch):
    """MR-RX-295..297: with S4's verdict taken for both outcomes of S5's write and `y_take` the
    last select (`hdl.rx.SV_LATE_SEL`, off by default), test_rtl_slot_verdict's back-to-back
    lockstep (the slot cases, then the message cases) and the fresh-slot term of
    test_rtl_responder_resources, 0 mismatches."""
    import metaroce.hdl.rx as hdl_rx
    from test_rx_amaranth import run_lockstep
    monkeypatch.setattr(hdl_rx, "SV_LATE_SEL", True)
    _, s, cases = _cases(3)
    res = run_lockstep(64, s, cases, seed=4, p_idle=0.0, p_bp=0.0, slot_nak=True, share=False)
    assert res["counters"][RxCode.MSG_SLOTS] >= 12
    s2 = rc.Setup(*DIMS, seed=3, mtu_log2=6)
    res = run_lockstep(64, s2, rc.message_cases(s2, slot_nak=True), seed=5, p_idle=0.0, p_bp=0.0,
                       slot_nak=True, share=False)
    assert res["counters"][CTR_MSG_REFUSED] == 2
    _, s3 = rc.endpoint_setup(*DIMS, seed=5, n_streams=1, max_rx_msgs=MSG_SLOTS, max_rd_atomic=1)
    cases = rc.resource_cases(s3) + rc.resource_cases(s3, conn=1) + rc.resource_cases(s3)
    res = run_lockstep(64, s3, cases, seed=4, p_idle=0.0, p_bp=0.0, max_rd_atomic=1, share=False)
    assert res["counters"][RxCode.RNR] == 6 and len(res["rsp"]) == 6


def test_rtl_slot_verdict_terms_catch_no_run(monkeypatch):
    """MR-RX-203 (negative control): with S3's verdict terms for S5's write taken as if its
    run delivered nothing (`hdl.rx.SV_S5_RUN` off: next' = S5's row's next), the back-to-back
    lockstep of test_rtl_slot_verdict (the message brought within the slots by the delivery
    of the record two ahead) fails, so that test checks the run's length in the S3 terms."""
    import metaroce.hdl.rx as hdl_rx
    from test_rx_amaranth import run_lockstep
    from metaroce.tb.lockstep import Mismatch
    monkeypatch.setattr(hdl_rx, "SV_S5_RUN", False)
    _, s, cases = _cases(3)
    with pytest.raises(Mismatch):
        run_lockstep(64, s, cases, seed=4, p_idle=0.0, p_bp=0.0, slot_nak=True, share=False)


def test_rtl_slot_verdict_terms_catch_wrong_minus(monkeypatch):
    """MR-RX-273 (negative control of MR-RX-272): with S3's registered `msg - j` taken from the
    record ahead (`hdl.rx.SV_MINUS_WRONG`: S3's record's msg as it moves to S4, not S2's as it
    moves to S3), the back-to-back lockstep of test_rtl_slot_verdict's slot cases fails, so
    that test checks the read candidate's equalities against the registers."""
    import metaroce.hdl.rx as hdl_rx
    from test_rx_amaranth import run_lockstep
    from metaroce.tb.lockstep import Mismatch
    monkeypatch.setattr(hdl_rx, "SV_MINUS_WRONG", True)
    _, s, cases = _cases(3)
    with pytest.raises(Mismatch):
        run_lockstep(64, s, cases, seed=4, p_idle=0.0, p_bp=0.0, slot_nak=True, share=False)


def test_rtl_y_take_reg_catches_wrong_pair(monkeypatch):
    """MR-RX-294 (negative control of MR-RX-293): with the register of S5's write of S4's row
    (`y_take_r`) loaded with the address equality of the pair ahead (`hdl.rx.Y_TAKE_WRONG`: this
    cycle's S5 and S4, not S4 and S3 as they move), the back-to-back lockstep of
    test_rtl_slot_verdict's slot cases (two connections' cases one after another) fails, so
    that test checks the register's next-pair form."""
    import metaroce.hdl.rx as hdl_rx
    from test_rx_amaranth import run_lockstep
    from metaroce.tb.lockstep import Mismatch
    monkeypatch.setattr(hdl_rx, "Y_TAKE_WRONG", True)
    _, s, cases = _cases(3)
    with pytest.raises(Mismatch):
        run_lockstep(64, s, cases, seed=4, p_idle=0.0, p_bp=0.0, slot_nak=True, share=False)


def test_rtl_msg_decision_in_s4_catch_no_forward(monkeypatch):
    """MR-RX-207 (negative control): with S4's decision terms for S5 (MR-RX-204) always taken
    on the row read (`hdl.rx.NX_FWD` off: S5's write of the cycle to S4's record's row not
    taken), the back-to-back lockstep of the message cases (test_rtl_slot_verdict's second run,
    here at 512 bits, the cheaper simulation: each chunk of a message right behind the one
    before, the row it needs S5's write of that cycle) fails, so that test checks the forwarded
    candidate of the registered decision."""
    import metaroce.hdl.rx as hdl_rx
    from test_rx_amaranth import run_lockstep
    from metaroce.tb.lockstep import Mismatch
    monkeypatch.setattr(hdl_rx, "NX_FWD", False)
    s2 = rc.Setup(*DIMS, seed=3, mtu_log2=6)
    with pytest.raises(Mismatch):
        run_lockstep(512, s2, rc.message_cases(s2, slot_nak=True), seed=5, p_idle=0.0, p_bp=0.0,
                     slot_nak=True, share=False)

def test_slot_nak_on_by_default():
    """MR-RX-185: on by default in the RTL, both models and the engine's receive half (RTL and
    model). MR-RX-183: on the generators' stimulus within the slots (``rc.within_slots``: the
    window, bad-input, toggle and random cases) the outputs with and without ``slot_nak`` are
    the same and nothing is refused; negative control: the random traffic as generated opens
    messages it never completes, which ``slot_nak`` NAKs msg_slots."""
    import inspect
    from metaroce.hdl.engine import engine_rx_256x4
    from metaroce.hdl.rx import Rx
    from metaroce.models.engine import engine_rx_model_256x4
    from metaroce.models.rx import MsgCode, RxCycleModel, RxModel
    for cls in (Rx, RxModel, RxCycleModel):
        assert inspect.signature(cls).parameters["slot_nak"].default is True
    assert engine_rx_256x4(64).rx.slot_nak and engine_rx_model_256x4(64).rx.rx.slot_nak
    keys = ("ack", "place", "data", "cqe", "rsp", "atom", "counters")
    for seed in (2, 5):
        s = rc.Setup(*DIMS, seed=seed)
        raw = rc.window_cases(s) + rc.bad_cases(s) + rc.toggle_cases(s) + rc.random_traffic(s, 200)
        cases = rc.within_slots(s, raw)
        on = rc.expected(s.writes + cases, *DIMS)
        off = rc.expected(s.writes + cases, *DIMS, slot_nak=False)
        assert all(on[k] == off[k] for k in keys)
        assert not any(o.code == RxCode.MSG_SLOTS or o.msg == MsgCode.REFUSED for o in off["outcomes"])
        assert any(isinstance(c, rc.CfgWrite) and c.name.startswith("reopen") for c in cases)
    s = rc.Setup(*DIMS, seed=2)
    raw = rc.random_traffic(s, 200)
    assert any(o.code == RxCode.MSG_SLOTS for o in rc.expected(s.writes + raw, *DIMS)["outcomes"])


@pytest.mark.parametrize("kw", [dict(hostile=12, imm=0.5, n_streams=1), dict(sends=0.5, reads=0.2, imm=0.3),
                                dict(read_reqs=0.3, atomic_reqs=0.2, atomics=0.2, n_streams=2)])
def test_endpoint_traffic_within_slots(kw):
    """MR-RX-184: the reference endpoint's traffic (its sender at ``max_tx_msgs`` = msg_slots, the
    receiver's message bound at msg_slots) reaches the RX within its slots: with and without
    ``slot_nak`` the outputs are the same, the receiving endpoint's, and the message table
    refuses nothing but the forged SEND 2^19 messages ahead (``hostile``: NAKed INVALID_REQUEST
    by both with ``slot_nak``, RNR by the RX without)."""
    from metaroce.models.rx import MsgCode
    s, tr = rc.endpoint_traffic(nbytes=16384, loss=0.05, reorder=0.2, dup=0.05, seed=3, **kw)
    on = rc.expected(s.writes + tr.items, *DIMS)
    off = rc.expected(s.writes + tr.items, *DIMS, slot_nak=False)
    assert rc.requests(s, on["ack"]) == tr.acks and rc.memory_image(s, on["place"], on["data"]) == tr.memory
    assert not any(o.msg == MsgCode.REFUSED for o in off["outcomes"])
    forged = sum(1 for o in on["outcomes"] if o.code == RxCode.MSG_SLOTS)
    assert forged == (kw.get("hostile", 0) + 11) // 12
    if not forged:
        assert all(on[k] == off[k] for k in ("ack", "place", "data", "cqe", "rsp", "atom"))


@pytest.mark.parametrize("seed", [0, 1])
def test_model_responder_resources_equal_endpoint(seed):
    """MR-RX-173, MR-RX-174 (the packet model only): with ``max_rd_atomic`` 1, a READ request beyond the
    connection's responder resources is NAKed RNR before the sequence state (its PSN resent
    later is new), an atomic likewise, each accepted after the TX half's free of the resource
    (``TABLE_RSP_FREE``); a copy of an executed request takes none. Outcomes, ACK/NAK stream,
    response and atomic items equal the endpoint's with ``max_rd_atomic`` 1 (its frees by
    ``_rsp_done``). Negative control: unbounded, the RX accepts what the endpoint RNRs."""
    ep, s = rc.endpoint_setup(*DIMS, seed=seed, n_streams=1, max_rx_msgs=MSG_SLOTS, max_rd_atomic=1)
    cases = rc.resource_cases(s) + rc.resource_cases(s, conn=1) + rc.resource_cases(s)
    exp = rc.expected(s.writes + cases, *DIMS, slot_nak=True, max_rd_atomic=1)
    for c, o in zip([c for c in cases if isinstance(c, rc.Case)], exp["outcomes"]):
        assert c.expect is None or o.code == c.expect, c.name
    rsps = []
    ref, _ = rc.endpoint_reference(ep, s, cases, rsps=rsps)
    got = rc.requests(s, exp["ack"])
    assert got == ref
    assert sum(1 for r in got if r[0] == "nak" and r[3] == int(NakReason.RNR)) == 6
    assert rc.responses(s, exp["rsp"]) == rsps and len(rsps) == 6
    unbounded = rc.expected(s.writes + cases, *DIMS, slot_nak=True)
    assert rc.requests(s, unbounded["ack"]) != ref


@pytest.mark.parametrize("seed", [0, 3])
def test_cycle_model_responder_resources(seed):
    """MR-RX-186, MR-RX-187: the cycle model with ``max_rd_atomic`` (the count decided in S4,
    moved by S5's taking record and by the table 7 writes of earlier cycles) gives the packet
    model's outcomes, outputs and counters: the resource cases back to back and with idle
    cycles and backpressure, and random READ and atomic requests with random frees among them
    (``max_rd_atomic`` 1: some RNR, some accepted after a free)."""
    _, s = rc.endpoint_setup(*DIMS, seed=seed, n_streams=1, max_rx_msgs=MSG_SLOTS, max_rd_atomic=1)
    cases = rc.resource_cases(s) + rc.resource_cases(s, conn=1) + rc.resource_cases(s)
    for p_idle, p_bp in ((0.0, 0.0), (0.2, 0.4)):
        res = rc.run_model(64, s, cases, seed=seed, p_idle=p_idle, p_bp=p_bp, max_rd_atomic=1)
        assert res["counters"][RxCode.RNR] == 6
    s = rc.Setup(*DIMS, seed=seed)
    cases = rc.random_resource_traffic(s, 30, p_free=0.1)
    res = rc.run_model(64, s, cases, seed=seed, p_idle=0.1, p_bp=0.3, max_rd_atomic=1)
    assert res["counters"][RxCode.RNR] > 0 and res["counters"][RxCode.ACCEPTED] > 0


@pytest.mark.parametrize("p_idle,p_bp", [(0.0, 0.0), (0.2, 0.4)])
def test_rtl_responder_resources(p_idle, p_bp):
    """MR-RX-188..191, MR-RX-070, MR-RX-296: the RTL with ``max_rd_atomic`` 1 in lockstep with the cycle
    model (Amaranth, the count table poisoned on reads that meet a write, MR-RX-119): the
    resource cases back to back (the second READ right behind the first, which takes the
    resource in S5 in the second's S4 cycle) and with idle cycles and backpressure, then random
    READ and atomic requests with frees among them; 0 mismatches, outputs and counters as the
    packet model says (RNR NAKs before the sequence state, the resends accepted after the
    frees). Its negative control (slow): test_rtl_responder_resources_catch_unbounded_model."""
    from test_rx_amaranth import run_lockstep
    _, s = rc.endpoint_setup(*DIMS, seed=5, n_streams=1, max_rx_msgs=MSG_SLOTS, max_rd_atomic=1)
    cases = rc.resource_cases(s) + rc.resource_cases(s, conn=1) + rc.resource_cases(s)
    res = run_lockstep(64, s, cases, seed=4, p_idle=p_idle, p_bp=p_bp, max_rd_atomic=1)
    assert res["counters"][RxCode.RNR] == 6 and len(res["rsp"]) == 6
    s2 = rc.Setup(*DIMS, seed=3)
    res = run_lockstep(64, s2, rc.random_resource_traffic(s2, 24, p_free=0.1), seed=6, p_idle=p_idle, p_bp=p_bp,
                       max_rd_atomic=1)
    assert res["counters"][RxCode.RNR] > 0 and res["collided"]["rsc"] >= 0


def test_rtl_responder_resources_catch_unbounded_model():
    """MR-RX-188 (negative control of test_rtl_responder_resources): the same RTL (``max_rd_atomic``
    1) against a cycle model without the bound mismatches on the resource cases."""
    import test_rx_amaranth as ta
    from metaroce.hdl.rx import Rx
    from metaroce.models.rx import RxCycleModel
    from metaroce.tb.lockstep import AmaranthSim, Mismatch
    _, s = rc.endpoint_setup(*DIMS, seed=5, n_streams=1, max_rx_msgs=MSG_SLOTS, max_rd_atomic=1)
    lay = s.lay
    dut = Rx(64, conns=lay.conns, paths=lay.paths, keys=lay.keys, streams=lay.streams, max_rd_atomic=1)
    model = RxCycleModel(64, lay.conns, lay.paths, lay.keys, streams=lay.streams)
    s3 = rc.Setup(*DIMS, seed=5, n_streams=1)
    drv = rc.make_driver(64, s3, rc.resource_cases(s3), seed=4, p_idle=0.0, p_bp=0.0)
    with pytest.raises((Mismatch, AssertionError)):
        core, _ = ta.run_rx(AmaranthSim(dut), model, drv)
        assert core.mismatches == 0


@pytest.mark.slow       # a Verilator build of its own instance (tens of minutes on the loaded machine)
def test_rtl_responder_resources_verilator():
    """MR-RX-192: ``rx_256x4_rsc`` (``max_rd_atomic`` 1) under Verilator in lockstep with the
    cycle model (tb.rx.rx_resources): the resource cases and random requests with frees, with
    idle cycles and backpressure, then back to back; 0 mismatches, RNR NAKs among them."""
    import json
    from metaroce import blocks
    from metaroce.sim import verilator as vl
    from metaroce.tb import build as tb_build
    b = tb_build.build(blocks.get("rx_256x4_rsc"), 64)
    row = vl.run_one(b, "metaroce.tb.rx", "rx_resources", {"RX_MAX_RD_ATOMIC": "1"}, out_var="RX_OUT")
    print(json.dumps(row))
    assert row["mismatches"] == 0 and row["rnr"] > 0
