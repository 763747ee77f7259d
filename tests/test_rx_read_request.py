"""READ requests at the RX engine, the responder side (docs/spec/hw-rx.md section 7d,
MR-RX-126..133): the model against the reference endpoint, the cycle model and the RTL in
lockstep with backpressure on ``m_rsp``."""
import pytest

from metaroce.models import rx_cases as rc
from metaroce.models.rx import RxCode, unpack

DIMS = (256, 4, 256)

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def _cases(seed):
    ep, s = rc.endpoint_setup(seed=seed, n_streams=2, max_rd_atomic=1 << 20)
    cases = (rc.read_request_cases(s) + rc.read_request_cases(s, conn=1, stream=1)
             + rc.random_read_requests(s, 40))
    return ep, s, cases


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_model_read_requests_equal_endpoint(seed):
    """MR-RX-126..133: READ requests (at the delivery point, behind an incomplete WRITE_IMM,
    refused key, range and right, two delivered by one chunk, a duplicate PSN, a resend after
    execution, every malformed kind, random ones in and out of order on several paths): every
    case has the outcome it was built for; the model's ACK/NAK requests, memory image,
    completion records and response items equal the reference endpoint's on the same frames
    (the requests it executes, in order, with their ERROR flag)."""
    ep, s, cases = _cases(seed)
    exp = rc.expected(s.writes + cases, *DIMS)
    for c, o in zip([c for c in cases if isinstance(c, rc.Case)], exp["outcomes"]):
        assert c.expect is None or o.code == c.expect, c.name
    got = []
    ref, mem = rc.endpoint_reference(ep, s, cases, rsps=got)
    assert rc.requests(s, exp["ack"]) == ref
    assert rc.memory_image(s, exp["place"], exp["data"]) == mem
    assert rc.completions(s, exp["cqe"]) == [rc.cq_tuple(c) for c in ep.poll_cq()]
    rsps = rc.responses(s, exp["rsp"])
    assert rsps == got
    errs = sum(r[5] for r in rsps)
    assert errs >= 8 and len(rsps) - errs >= 10
    # the READ behind the WRITE_IMM leaves with that message's completion, after it
    codes = {o.code for o in exp["outcomes"]}
    assert {RxCode.PARSER_DROP, RxCode.LENGTH, RxCode.CHUNK, RxCode.STREAM, RxCode.BAD_PATH, RxCode.NO_CONNECTION,
            RxCode.BAD_PKEY, RxCode.PSN_WINDOW, RxCode.DUPLICATE} <= codes


def test_parser_drops_read_request_with_payload():
    """MR-RX-127: a READ request with payload never reaches the RX's LENGTH check from the
    parser, which drops it (its LENGTH); read_request_cases forges that record past the parser."""
    s = rc.Setup(*DIMS, seed=4)
    case = rc.read_request(s, s.conns[0], 0, msg_len=8, plen=8)
    assert case.drop and case.expect == RxCode.PARSER_DROP


@pytest.mark.parametrize("seed", [0, 3])
def test_cycle_model_read_requests(seed):
    """MR-RX-131, MR-RX-132: the cycle model with idle cycles and backpressure on every output
    (m_rsp at 0.6) gives the packet model's response items, ACKs and counters; a delivery of
    two READs is one bundle shown item by item."""
    _, s, cases = _cases(seed)
    res = rc.run_model(64, s, cases, seed=seed, p_idle=0.2, p_bp={"m_ack__ready": 0.4, "m_place__ready": 0.3,
                                                                "m_data__ready": 0.3, "m_cqe__ready": 0.4,
                                                                "m_rsp__ready": 0.6})
    assert len(res["rsp"]) >= 20
    msgs = [unpack(s.lay.rsp, v)["msg"] for v in res["rsp"]]
    assert len(set(msgs)) > 1


@pytest.mark.slow       # 150 s; the default run has READ requests in Verilator's rx_lockstep and the test below
def test_rtl_read_requests():
    """MR-RX-126..133, MR-RX-070: the READ-request cases and random READ requests in lockstep
    with idle cycles and backpressure on every output (m_rsp at 0.5), 0 mismatches on every
    port every cycle; the outputs and counters as the model says, and the response items,
    ACK/NAK requests and completion records equal the reference endpoint's."""
    from test_rx_amaranth import run_lockstep
    ep, s, cases = _cases(5)
    res = run_lockstep(64, s, cases, seed=5, p_idle=0.2, p_bp={"m_ack__ready": 0.3, "m_place__ready": 0.3,
                                                             "m_data__ready": 0.3, "m_cqe__ready": 0.4,
                                                             "m_rsp__ready": 0.5})
    got = []
    ref, _ = rc.endpoint_reference(ep, s, cases, rsps=got)
    assert rc.requests(s, res["ack"]) == ref
    assert rc.completions(s, res["cqe"]) == [rc.cq_tuple(c) for c in ep.poll_cq()]
    assert rc.responses(s, res["rsp"]) == got and sum(r[5] for r in got) >= 8


@pytest.mark.parametrize("seed,streams", [(1, None), (2, 1), (6, 2)])
def test_model_read_request_traffic_equal_endpoint(seed, streams):
    """MR-RX-133: the reference endpoint's traffic with READs the sender posts to the receiver
    (their requests arrive under loss, reordering and duplication, among WRITEs, WRITE_IMMs,
    SENDs and forged packets; the responses go back): the cycle model's response items equal
    the requests the receiving endpoint executed, in order, and its ACK/NAK stream, memory
    image and completions equal the endpoint's."""
    s, tr = rc.endpoint_traffic(nbytes=16384, loss=0.05, reorder=0.2, dup=0.05, seed=seed, hostile=12,
                                imm=0.5, sends=0.2, read_reqs=0.4, n_writes=12, n_streams=streams)
    assert tr.stats["read_reqs"] >= 2
    res = rc.run_model(64, s, tr.items, seed=seed, p_idle=0.2, p_bp=0.4)
    assert rc.requests(s, res["ack"]) == tr.acks
    assert rc.memory_image(s, res["place"], res["data"]) == tr.memory
    assert rc.same_completions(rc.completions(s, res["cqe"]), tr.cqes)
    assert rc.responses(s, res["rsp"]) == tr.rsps and len(tr.rsps) == tr.stats["read_reqs"]


def test_rtl_read_request_traffic_verilator():
    """MR-RX-133, MR-RX-070: the reference endpoint's traffic with READs the sender posts to the
    receiver (requests under loss, reordering and duplication, among WRITEs, SENDs and forged
    packets) into the 256 x 4 RTL under Verilator, in lockstep with the model with idle cycles
    and backpressure on every output (m_rsp too): 0 mismatches, and the RTL's response items,
    ACK/NAK stream, memory image and completions equal the receiving endpoint's."""
    import json
    from metaroce import blocks
    from metaroce.sim import verilator as vl
    from metaroce.tb import build as tb_build
    b = tb_build.build(blocks.get("rx_256x4"), 64)
    env = {"RX_SEED": "75", "RX_TRAFFIC_BYTES": "16384", "RX_TRAFFIC_LOSS": "0.05",
           "RX_TRAFFIC_REORDER": "0.2", "RX_TRAFFIC_DUP": "0.05", "RX_TRAFFIC_HOSTILE": "8",
           "RX_TRAFFIC_WRITES": "12", "RX_TRAFFIC_IMM": "0.5", "RX_TRAFFIC_SENDS": "0.2",
           "RX_TRAFFIC_READ_REQS": "0.4"}
    row = vl.run_one(b, "metaroce.tb.rx", "rx_endpoint_traffic", env, out_var="RX_TRAFFIC_OUT")
    print(json.dumps(row))
    assert row["mismatches"] == 0 and row["acks_equal"] and row["memory_equal"] and row["completions_equal"]
    assert row["responses_equal"] and row["responses"] == row["traffic"]["read_reqs"] >= 5
    assert row["traffic"]["lost"] > 0 and row["traffic"]["duplicated"] > 0


def test_difference_key_checked_at_arrival():
    """MR-RX-134: a READ request waiting for an earlier message of its stream executes with the
    verdict of its arrival: its key row revoked before it executes, the RX still answers with
    the region's address (err 0) where the endpoint, which checks again (MR-VERB-004), answers
    with an ERROR response."""
    got = []
    s, c, k, exp = rc.key_withdrawn_run(
        lambda s, c, k: rc.read_request(s, c, 1, key=k, va=64, length=32, expect=RxCode.ACCEPTED),
        DIMS, rsps=got)
    assert rc.responses(s, exp["rsp"]) == [(c.qp, 0, 1, (k.base + 64) % (1 << 64), 32, 0)]
    assert got == [(c.qp, 0, 1, 0, 32, 1)]
