"""The RX engine's model (models/rx.py) on its own: the packet semantics against the transport's
functions and the cases' intended outcomes, and the cycle model's timing through the one driver."""
import pytest

from metaroce.models import protocol as P
from metaroce.models import rx, rx_cases as rc
from metaroce.models.rx import (CTR_ABANDONED, CTR_ACKS, CTR_CE, CTR_NAKS, CTR_PLACED_BYTES,
                                NAK_OF, TABLE_PATH, RxCode, RxCycleModel, RxModel, layouts, pack,
                                unpack)
from metaroce.models.wire import NakReason

SMALL = (256, 4, 256)


def _model(setup):
    rx = RxModel(*SMALL)
    for w in setup.writes:
        rx.write_cfg(w.table, w.addr, w.value)
    return rx


def test_layouts():
    """MR-RX-001, MR-RX-010..012: row layouts, the path row is records.PATH_RX, bad sizes refused."""
    lay = layouts(*SMALL)
    assert (lay.conn_bits, lay.path_bits, lay.key_bits) == (8, 2, 8)
    assert lay.path.size == 397
    assert {n for n, _ in lay.conn} == {"valid", "pkey", "n_paths_m1", "n_streams_m1"}
    assert lay.ack.size == 1 + 8 + 8 + 24 + 8 + 24 + 256 + 16 + 1 + 16
    for bad in ((100, 4, 256), (256, 3, 256), (256, 1, 256), (256, 4, 1)):
        with pytest.raises(ValueError):
            layouts(*bad)


def test_every_case_gets_its_intended_outcome():
    """MR-RX-020..023, MR-RX-102: the check order; each bad-input class gets its reason, NAKed
    or silent (and a SEND's RNR and RECV_BOUNDS)."""
    s = rc.Setup(*SMALL, seed=4)
    cases = rc.bad_cases(s) + rc.send_cases(s) + rc.read_cases(s, conn=1)
    exp = rc.expected(s.writes + cases, *SMALL)
    seen = set()
    for c, o in zip([c for c in cases if isinstance(c, rc.Case)], exp["outcomes"]):
        assert o.code == c.expect, c.name
        seen.add(o.code)
        if o.code in NAK_OF:
            assert o.ack["nak"] == 1 and o.ack["reason"] == NAK_OF[o.code]
            assert (o.ack["cum"], o.ack["sack"], o.ack["ce_count"]) == (0, 0, 0)     # MR-RX-031
        elif o.code != RxCode.ACCEPTED and o.code != RxCode.DUPLICATE:
            assert o.ack is None
        if o.code != RxCode.ACCEPTED:
            assert o.place is None and not o.steer
    # MR-RX-167: msg_slots only with slot_nak (tests/test_rx_slot_nak.py)
    assert seen >= set(RxCode) - {RxCode.PSN_WINDOW, RxCode.MSG_SLOTS}


def test_rejected_packets_change_no_state():
    """MR-RX-027: after every bad packet (and psn_window) the path rows are as before."""
    s = rc.Setup(*SMALL, seed=6)
    rx = _model(s)
    c = s.conns[0]
    rx.packet(s.write(c, path=0, plen=8).meta)
    rx.packet(s.write(c, path=0, psn=P.psn_add(c.psn[0], 5), plen=8).meta)
    before = dict(rx.path)
    for case in rc.bad_cases(s)[:-3]:
        o = rx.packet(case.meta)
        assert o.code not in (RxCode.ACCEPTED, RxCode.DUPLICATE)
        assert rx.path == before, case.name
    o = rx.packet(s.write(c, path=0, psn=P.psn_add(c.psn[0], 600), plen=8).meta)
    assert o.code == RxCode.PSN_WINDOW and o.ack["reason"] == NakReason.PSN_WINDOW
    assert rx.path == before


def test_window_follows_protocol():
    """MR-RX-024..026: classification and update are protocol.rx_classify/rx_accept; a slide
    beyond 256 counts the abandoned holes; a duplicate ACKs the unchanged window."""
    s = rc.Setup(*SMALL, seed=8)
    rx = _model(s)
    c = s.conns[0]
    base = c.psn[1]
    row = (c.qp << 2) | 1
    cum, sack = base, 0
    for d in (0, 3, 2, 290, 7, 700, 1, 290):
        psn = P.psn_add(base, d)
        cls = P.rx_classify(cum, sack, psn)
        o = rx.packet(s.write(c, path=1, psn=psn, plen=4, ack_req=1).meta)
        if cls == P.RX_NEW:
            cum, sack, ab = P.rx_accept(cum, sack, psn)
            assert o.code == RxCode.ACCEPTED and o.abandoned == ab
        elif cls == P.RX_DUP:
            assert o.code == RxCode.DUPLICATE and o.place is None
        else:
            assert o.code == RxCode.PSN_WINDOW
        st = rx.path[row]
        assert (st["cum"], st["sack"]) == (cum, sack)
        if o.ack and not o.ack["nak"]:
            assert (o.ack["cum"], o.ack["sack"], o.ack["psn"]) == (cum, sack, psn)
    # the slide to base+290 passes base+1..base+33: 33 PSNs, of which 2 and 3 had arrived
    assert rx.counters[CTR_ABANDONED] == 33 - 2


def test_ack_policy_and_ce():
    """MR-RX-028, MR-RX-029, MR-RX-030: ACK on AckReq, gap, CE onset, every ack_every-th packet;
    ce_count counts CE marks since the last ACK; an ACK clears pending and ce."""
    s = rc.Setup(*SMALL, seed=9, ack_every=4)
    rx = _model(s)
    c = s.conns[0]
    acks = []
    for ecn in (2, 2, 2, 2, 3, 3, 3, 2, 2, 3):
        o = rx.packet(s.write(c, path=0, ecn=ecn, plen=4).meta)
        acks.append(None if o.ack is None else (o.ack["ce_count"], o.ack["ece"]))
    # 4th: ack_every; 5th: CE onset (1 mark); 6th..8th pending; 9th: ack_every (the 2 marks of
    # the 6th and 7th); 10th: onset again after unmarked packets
    assert acks == [None, None, None, (0, 0), (1, 1), None, None, None, (2, 1), (1, 1)]
    assert rx.counters[CTR_CE] == 4


def test_placement_address():
    """MR-RX-032: addr = key base + RETH VA + MRDH offset, length = payload bytes."""
    s = rc.Setup(*SMALL, seed=10, mtu_log2=8)
    rx = _model(s)
    c = s.conns[0]
    k = s.keys[1]
    case = s.write(c, path=0, key=k, va=4096, offset=256, plen=100, msg_len=356)
    o = rx.packet(case.meta)
    assert o.code == RxCode.ACCEPTED
    assert o.place == {"conn": c.qp, "addr": (k.base + 4096 + 256) % (1 << 64), "length": 100}
    assert o.steer == 1 and rx.counters[CTR_PLACED_BYTES] == 100


@pytest.mark.parametrize("shape", ["none", "both"])
def test_cycle_model_matches_packet_model(shape):
    """MR-RX-040, MR-RX-041, MR-RX-044, MR-RX-050: the cycle model's outputs, in order, and
    counters equal the packet model's; nothing is dropped under backpressure."""
    s = rc.Setup(*SMALL, seed=12)
    cases = rc.within_slots(s, rc.window_cases(s) + rc.bad_cases(s) + rc.random_traffic(s, 200))     # MR-RX-183
    p_idle, p_bp = rc.SHAPES[shape]
    res = rc.run_model(256, s, cases, seed=5, p_idle=p_idle, p_bp=p_bp)
    assert res["counters"][CTR_ACKS] == len([a for a in res["ack"] if not a & 1])
    assert res["counters"][CTR_NAKS] == len([a for a in res["ack"] if a & 1])


def test_latency_and_credits():
    """MR-RX-040, MR-RX-041, MR-RX-043: an ACK is readable 7 cycles after its record is taken
    (the row stage S0 included);
    with the ACK output stalled, s_meta.ready falls once 16 requests are queued or in flight."""
    s = rc.Setup(*SMALL, seed=13, ack_every=1)
    m = RxCycleModel(64, *SMALL)
    idle = {"s_meta__valid": 0, "s_cfg__valid": 0, "s_payload__valid": 0, "m_ack__ready": 0,
            "m_place__ready": 1, "m_data__ready": 1, "reg_addr": 0}
    for w in s.writes:
        m.step(dict(idle, s_cfg__valid=1, s_cfg__payload=pack(s.lay.cfg, {"table": w.table, "addr": w.addr,
                                                                         "data": w.value})))
    for _ in range(3):
        m.step(idle)
    c = s.conns[0]
    pkts = [s.write(c, path=0, plen=0) for _ in range(40)]
    taken = []
    first_valid = None
    i = 0
    for cycle in range(60):
        inp = dict(idle, s_meta__valid=int(i < len(pkts)), s_meta__payload=pkts[min(i, 39)].meta)
        out = m.step(inp)
        if out["s_meta__ready"] and i < len(pkts):
            taken.append(cycle)
            i += 1
        if out["m_ack__valid"] and first_valid is None:
            first_valid = cycle
    assert first_valid == taken[0] + 7
    assert len(taken) == 16 and taken == list(range(16))


def test_interval_gate_in_the_model():
    """MR-RX-319: at interval 4 the model takes a record, a timer's event or a configuration
    write at most once every 4 cycles: records offered back to back are taken every 4 cycles; a
    configuration write offered with them waits while the gate is shut and, taken, shuts it for
    the records (one may go with a record in its cycle); a due timer's event takes the gate in
    a record's place. At interval 1 the same records go one a cycle."""
    s = rc.Setup(*SMALL, seed=13, ack_every=1)
    idle = {"s_meta__valid": 0, "s_cfg__valid": 0, "s_payload__valid": 0, "m_ack__ready": 1,
            "m_place__ready": 1, "m_data__ready": 1, "reg_addr": 0}

    def cfg(w):
        return pack(s.lay.cfg, {"table": w.table, "addr": w.addr, "data": w.value})
    c = s.conns[0]
    for interval, spacing in ((1, {1}), (4, {4})):
        m = RxCycleModel(64, *SMALL, interval=interval)
        cfg_cycles = []
        for w in s.writes:
            while True:
                out = m.step(dict(idle, s_cfg__valid=1, s_cfg__payload=cfg(w)))
                if out["s_cfg__ready"]:
                    cfg_cycles.append(m.now - 1)
                    break
        assert {b - a for a, b in zip(cfg_cycles, cfg_cycles[1:])} == spacing
        for _ in range(8):
            m.step(idle)
        pkts = [s.write(c, path=0, plen=0) for _ in range(12)]
        taken, i = [], 0
        for cycle in range(80):
            out = m.step(dict(idle, s_meta__valid=int(i < len(pkts)), s_meta__payload=pkts[min(i, 11)].meta))
            if out["s_meta__ready"] and i < len(pkts):
                taken.append(cycle)
                i += 1
        assert len(taken) == 12 and {b - a for a, b in zip(taken, taken[1:])} == spacing
    # a configuration write and records offered together at interval 4: one entry every 4 cycles
    m = RxCycleModel(64, *SMALL, interval=4)
    for w in s.writes:
        while not m.step(dict(idle, s_cfg__valid=1, s_cfg__payload=cfg(w)))["s_cfg__ready"]:
            pass
    for _ in range(8):
        m.step(idle)
    entries = []
    pkts = [s.write(c, path=0, plen=0) for _ in range(4)]
    i, wrote = 0, False
    for cycle in range(40):
        inp = dict(idle, s_meta__valid=int(i < len(pkts)), s_meta__payload=pkts[min(i, 3)].meta,
                   s_cfg__valid=int(not wrote and cycle >= 2), s_cfg__payload=cfg(s.writes[0]))
        out = m.step(inp)
        took_meta = out["s_meta__ready"] and i < len(pkts)
        took_cfg = out["s_cfg__ready"] and inp["s_cfg__valid"]
        if took_meta or took_cfg:
            entries.append(cycle)
        i += int(bool(took_meta))
        wrote |= bool(took_cfg)
    assert wrote and i == len(pkts)
    assert {b - a for a, b in zip(entries, entries[1:])} == {4}
    # the timer's event: ack_delay on, ack_every high, one record arms a timer whose event enters
    # the pipeline; the next record waits behind that event's gate
    m = RxCycleModel(64, *SMALL, interval=4)
    st = rc.Setup(*SMALL, seed=13, ack_every=8, ack_delay=20)
    for w in st.writes:
        while not m.step(dict(idle, s_cfg__valid=1, s_cfg__payload=cfg(w)))["s_cfg__ready"]:
            pass
    assert m.rx.ack_delay == 20
    for _ in range(4):
        m.step(idle)
    assert m.step(dict(idle, s_meta__valid=1, s_meta__payload=st.write(st.conns[0], path=0, plen=0).meta))[
        "s_meta__ready"]
    gate_log = []
    for cycle in range(60):
        fired = m.t_due and m.gate.open
        gate_log.append((fired, m.gate.open))
        m.step(idle)
    fire_at = [k for k, (f, _) in enumerate(gate_log) if f]
    assert len(fire_at) == 1 and not any(o for _, o in gate_log[fire_at[0] + 1:fire_at[0] + 4])


def test_path_config_write():
    """MR-RX-060: a path-row write sets the window (a path reopened at a new PSN)."""
    s = rc.Setup(*SMALL, seed=14)
    rx = _model(s)
    c = s.conns[0]
    w = s.path_write(c.qp, 0, 0x123456)
    assert w.table == TABLE_PATH
    rx.write_cfg(w.table, w.addr, w.value)
    assert unpack(rx.lay.path, w.value)["cum"] == 0x123456
    o = rx.packet(s.write(c, path=0, psn=0x123456, plen=4, ack_req=1).meta)
    assert o.code == RxCode.ACCEPTED and o.ack["cum"] == 0x123457


@pytest.mark.parametrize("seed", [3, 4, 5])
def test_model_matches_reference_endpoint(seed):
    """MR-RX-070, MR-RX-020..033: on the same frames, the model's ACK/NAK requests equal the
    reference endpoint's ACK and NAK frames field by field (path, trigger PSN, cum, SACK, CE
    count, ECE, source port; reason), and its placements give the endpoint's memory image."""
    ep, s = rc.endpoint_setup(seed=seed)
    cases = rc.within_slots(s, rc.window_cases(s) + rc.bad_cases(s) + rc.random_traffic(s, 300, cfg=False, bad=False))
    ref, mem = rc.endpoint_reference(ep, s, cases)
    exp = rc.expected(s.writes + cases, *SMALL)
    assert rc.requests(s, exp["ack"]) == ref
    assert any(r[0] == "nak" for r in ref) and any(r[0] == "ack" and r[5] for r in ref)
    assert rc.memory_image(s, exp["place"], exp["data"]) == mem


@pytest.mark.parametrize("seed,loss,reorder,dup,hostile", [(1, 0.05, 0.1, 0.05, 0), (2, 0.0, 0.3, 0.0, 0),
                                                           (3, 0.1, 0.0, 0.1, 20)])
def test_model_on_endpoint_traffic(seed, loss, reorder, dup, hostile):
    """MR-RX-071: on the frames a reference endpoint received from another one over the model
    fabric (loss, reordering and duplication on the data direction, CE marks; forged writes of
    every bad-input class among them), in arrival order and through the parser's golden model,
    the model's placements give the receiving endpoint's memory and its ACK/NAK requests are
    that endpoint's ACK and NAK frames."""
    s, tr = rc.endpoint_traffic(nbytes=32768, loss=loss, reorder=reorder, dup=dup, seed=seed,
                                hostile=hostile)
    exp = rc.expected(s.writes + tr.cases, *SMALL)
    assert rc.requests(s, exp["ack"]) == tr.acks
    assert rc.memory_image(s, exp["place"], exp["data"]) == tr.memory
    codes = {o.code for o in exp["outcomes"]}
    # the traffic is what it was built to be: faults happened, the windows saw them
    st = tr.stats
    assert st["ce_marked"] > 0 and any(r[0] == "ack" and r[6] for r in tr.acks)
    if loss:
        assert st["lost"] > 0 and st["retransmitted"] > 0
    if dup:
        assert st["duplicated"] > 0 and RxCode.DUPLICATE in codes
    if reorder:
        assert st["delayed"] > 0
    if hostile:
        # MR-RX-184: the forged SEND (a message 2^19 ahead) is msg_slots (NAK INVALID_REQUEST
        # from both, the endpoint's bound at msg_slots), no longer RNR
        assert codes >= set(RxCode) - {RxCode.PARSER_DROP, RxCode.NOT_HANDLED, RxCode.RECV_BOUNDS,
                                       RxCode.RNR}
        assert sum(1 for r in tr.acks if r[0] == "nak") == sum(1 for o in exp["outcomes"]
                                                              if o.ack and o.ack["nak"]) > 0
    assert sum(len(d) for _, _, d in tr.sources) == 32768
    assert sum(len(d) for d in exp["data"]) >= 32768


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(10, 40))
def test_model_on_endpoint_traffic_sweep(seed):
    """MR-RX-071 over 30 seeds and fault mixes (loss up to 15 %, reordering up to 50 %,
    duplication up to 20 %), more connections and bytes: memory image and ACK/NAK stream equal
    the receiving endpoint's."""
    import random
    rng = random.Random(seed)
    s, tr = rc.endpoint_traffic(nbytes=rng.choice([8192, 65536, 131072]), loss=rng.choice([0, 0.02, 0.15]),
                                reorder=rng.choice([0, 0.1, 0.5]), dup=rng.choice([0, 0.05, 0.2]),
                                seed=seed, n_conns=rng.randint(1, 6), n_writes=rng.randint(1, 12),
                                hostile=rng.choice([0, 10, 30]))
    exp = rc.expected(s.writes + tr.cases, *SMALL)
    assert rc.requests(s, exp["ack"]) == tr.acks
    assert rc.memory_image(s, exp["place"], exp["data"]) == tr.memory


@pytest.mark.parametrize("kind", ["slide", "fill"])
def test_slow_update_holds(kind):
    """MR-RX-048, MR-RX-043: a slide or a filled gap holds the pipeline for HOLD_CYCLES cycles
    after its window stage: with every packet sliding, ACKs (ack_every 1) leave one per
    HOLD_CYCLES + 1 cycles; with every second packet filling a gap, two per HOLD_CYCLES + 2.
    is_slow tells the slow updates from the fast ones."""
    from metaroce.models.rx import HOLD_CYCLES, is_slow
    assert is_slow(10, 10 + 257, 11) and is_slow(10, 10, 12)
    assert not is_slow(10, 10 + 256, 10) and not is_slow(10, 10, 11)
    s = rc.Setup(*SMALL, seed=15, ack_every=1)
    cases = rc.burst_slow(s, 24, kind=kind)
    res = rc.run_model(64, s, cases, seed=1, p_idle=0.0, p_bp=0.0)
    cyc = res["ack_cycles"][4:]
    gaps = [b - a for a, b in zip(cyc, cyc[1:])]
    if kind == "slide":
        assert gaps == [HOLD_CYCLES + 1] * len(gaps)
        assert res["counters"][CTR_ABANDONED] == 24      # one hole (cum itself) per slide
    else:
        assert sorted(set(gaps)) == [1, HOLD_CYCLES + 1]
    assert res["counters"][RxCode.ACCEPTED] == 24


def test_serial_hold_cycles():
    """MR-RX-327, MR-RX-328: the hold is serial and 8 cycles long from the frame interval 8 on
    (hold_cycles), 5 below it. A path where every packet slides: at interval 1 the ACKs leave
    one per hold + 1 cycles (the pipeline full behind the hold); at intervals 7 and 8 (one entry
    in the pipeline) the next record waits to the hold's end, so records are taken one per
    hold + 6 cycles: 11 and 14. The outcomes are the same (one abandoned PSN per slide)."""
    from metaroce.models.rx import HOLD_CYCLES, SERIAL_INTERVAL, hold_cycles
    assert [hold_cycles(i) for i in (1, 7, SERIAL_INTERVAL, 16)] == [HOLD_CYCLES, HOLD_CYCLES, 8, 8]
    for interval, spacing in ((1, HOLD_CYCLES + 1), (7, HOLD_CYCLES + 6), (8, 8 + 6)):
        s = rc.Setup(*SMALL, seed=15, ack_every=1)
        res = rc.run_model(64, s, rc.burst_slow(s, 16), seed=1, p_idle=0.0, p_bp=0.0, interval=interval)
        cyc = res["ack_cycles"][4:]
        assert {b - a for a, b in zip(cyc, cyc[1:])} == {spacing}
        if interval > 1:
            taken = res["meta_taken"][-12:]
            assert {b - a for a, b in zip(taken, taken[1:])} == {spacing}
        assert res["counters"][CTR_ABANDONED] == 16 and res["counters"][RxCode.ACCEPTED] == 16


def test_chunk_ring_entry():
    """MR-RX-082: a chunk is new on an empty entry or one holding the chunk one ring length
    before it; its own epoch or a later one (up to 254 later) means it was placed."""
    from metaroce.models.rx import EPOCH_BITS, chunk_new
    placed = 1 << EPOCH_BITS
    assert chunk_new(0, 0) and chunk_new(0, 5)
    assert chunk_new(placed | 4, 5) and chunk_new(placed | 255, 0)      # epoch 255 -> 0 wraps
    assert not chunk_new(placed | 5, 5) and not chunk_new(placed | 6, 5)
    assert not chunk_new(placed | ((5 + 254) & 255), 5)


def test_message_table_cases():
    """MR-RX-080..086: out-of-order and resent chunks, a message done before the one ahead of
    it, a plain WRITE (no record), a zero-length WRITE_IMM, more chunks than the ring, chunks of
    a delivered message, beyond the slots and of another length, a stream reopened through
    table 4: the records leave in message order, each with its message's length and the
    immediate of its last new chunk."""
    from metaroce.models.rx import CTR_CQES, CTR_DUP_CHUNKS, CTR_MSG_REFUSED, WC_RECV_RDMA_WITH_IMM
    s = rc.Setup(*SMALL, seed=3)
    cases = rc.message_cases(s)
    exp = rc.expected(s.writes + cases, *SMALL)
    recs = [unpack(s.lay.cqe, v) for v in exp["cqe"]]
    assert [r["msg"] for r in recs] == [0, 1, 2, 4, 5, 6, 7, 1000]
    assert all(r["opcode"] == WC_RECV_RDMA_WITH_IMM and r["status"] == 0 for r in recs)
    assert recs[4]["length"] == 0 and recs[5]["length"] > 2 * 16 * s.mtu
    assert exp["counters"][CTR_CQES] == 8
    assert exp["counters"][CTR_DUP_CHUNKS] == 5 and exp["counters"][CTR_MSG_REFUSED] == 2
    # the record's length and immediate are its message's: the last new chunk's immediate
    by_name = {c.name: c for c in cases if isinstance(c, rc.Case)}
    from metaroce.models.rx import meta_fields
    assert recs[0]["imm"] == meta_fields(by_name["reord0.1"].meta)["imm"]
    assert recs[0]["length"] == meta_fields(by_name["reord0.1"].meta)["mrdh"]["msg_len"]
    res = rc.run_model(64, s, cases, seed=2, p_idle=0.2, p_bp=0.5)
    assert res["cqe"] == exp["cqe"]


@pytest.mark.parametrize("seed,streams", [(4, 1), (5, None), (6, 2), (7, 1)])
def test_model_completions_equal_endpoint(seed, streams):
    """MR-RX-087: on the reference endpoint's traffic with WRITE_IMMs (loss, reordering,
    duplication: duplicate chunks occur), the model's completion records equal the receiving
    endpoint's completions in order and number, besides the memory image and the ACK stream."""
    s, tr = rc.endpoint_traffic(nbytes=8192, loss=0.05, reorder=0.2, dup=0.05, seed=seed,
                                hostile=10, imm=0.7, n_streams=streams)
    res = rc.run_model(64, s, tr.cases, seed=seed, p_idle=0.2, p_bp=0.4)
    assert rc.requests(s, res["ack"]) == tr.acks
    assert rc.memory_image(s, res["place"], res["data"]) == tr.memory
    assert rc.completions(s, res["cqe"]) == tr.cqes and len(tr.cqes) >= 3


# seed 32 behind `slow` pays for test_serial_hold_cycles in the default run (slide44)
@pytest.mark.parametrize("seed", [31, pytest.param(32, marks=pytest.mark.slow)])
def test_delayed_ack_matches_endpoint(seed):
    """MR-RX-090..094: bursts of writes (ack_every 4, no AckReq) separated by gaps longer than the
    delayed-ACK time: the model's ACK stream, the timer's ACKs in the gaps included, equals the
    reference endpoint's with its ack_delay the same time; without the timer those ACKs are
    missing."""
    from metaroce.models.rx import CTR_ACKS
    cycle = 6.4e-9
    delay = 1000
    ep, s = rc.endpoint_setup(seed=seed, ack_delay_cycles=delay, ack_delay=delay * cycle)
    items = rc.timed_bursts(s, 4, 12, gap=2500, seed=seed)
    res = rc.run_model(64, s, items, seed=2, p_idle=0.1, p_bp=0.3, check_outputs=False)
    ref = rc.endpoint_reference_timed(ep, s, items, cycle)
    assert rc.requests(s, res["ack"]) == ref
    untimed = rc.expected(s.writes + items, *SMALL)
    assert len(ref) > len(untimed["ack"]) and res["counters"][CTR_ACKS] == len(ref)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_model_sends_equal_endpoint(seed):
    """MR-RX-100..104: the SEND cases (RNR before the receive is posted and on a resend,
    RECV_BOUNDS, a duplicate PSN naming no receive, SEND_IMM out of order with a chunk resent, a
    zero-length SEND, a late chunk after its receive row was reposted, the checks before the
    sequence state) on two streams: the model's ACK/NAK requests, memory image and completion
    records equal the reference endpoint's given the same frames and posts; every case has the
    outcome it was built for."""
    ep, s = rc.endpoint_setup(seed=seed, n_streams=2)
    cases = rc.send_cases(s) + rc.send_cases(s, conn=1, stream=1)
    exp = rc.expected(s.writes + cases, *SMALL)
    codes = [o.code for o in exp["outcomes"]]
    assert {RxCode.RNR, RxCode.RECV_BOUNDS, RxCode.DUPLICATE, RxCode.STREAM, RxCode.CHUNK} <= set(codes)
    ref, mem = rc.endpoint_reference(ep, s, cases)
    assert rc.requests(s, exp["ack"]) == ref
    assert rc.memory_image(s, exp["place"], exp["data"]) == mem
    assert rc.completions(s, exp["cqe"]) == [rc.cq_tuple(c) for c in ep.poll_cq()]
    assert len(exp["cqe"]) >= 6
    res = rc.run_model(64, s, cases, seed=seed, p_idle=0.2, p_bp=0.4)
    assert res["cqe"] == exp["cqe"]


@pytest.mark.parametrize("seed,streams,recv_delay", [(1, None, 3e-5), (3, 1, 3e-5), (5, 2, 0.0), (9, None, 0.0)])
def test_model_send_traffic_equal_endpoint(seed, streams, recv_delay):
    """MR-RX-105: the reference endpoint's traffic with SENDs (SEND_IMM among them) and WRITEs
    under loss, reordering and duplication, receives posted late (RNR NAKs and resends) and
    reposted as they complete (recv_slots per stream), forged packets among them: the cycle
    model's ACK/NAK stream, memory image and completion records equal the receiving
    endpoint's."""
    s, tr = rc.endpoint_traffic(nbytes=16384, loss=0.05, reorder=0.2, dup=0.05, seed=seed, hostile=12,
                                imm=0.5, sends=0.7, n_writes=10, n_streams=streams, recv_delay=recv_delay)
    # RNR NAKs from the receives posted late (MR-RX-184: the forged SEND is msg_slots now)
    assert tr.stats["sends"] >= 4 and (tr.stats["rnr_naks"] >= 1 or not recv_delay)
    res = rc.run_model(64, s, tr.items, seed=seed, p_idle=0.2, p_bp=0.4)
    assert rc.requests(s, res["ack"]) == tr.acks
    assert rc.memory_image(s, res["place"], res["data"]) == tr.memory
    assert rc.completions(s, res["cqe"]) == tr.cqes
    assert sum(1 for c in tr.cqes if c[3] == 128) == tr.stats["sends"]


@pytest.mark.parametrize("seed,streams,reads", [(2, None, 0.4), (4, 1, 0.6), (7, 2, 0.3)])
def test_model_read_traffic_equal_endpoint(seed, streams, reads):
    """MR-RX-113: the reference endpoint's traffic with READs the receiving endpoint posts (their
    responses arrive under loss, reordering and duplication, with SENDs, WRITEs and forged
    packets): the cycle model's ACK/NAK stream, memory image (the READ data included) and
    completion records (RDMA_READ with the READ's wr_id) equal the receiving endpoint's."""
    s, tr = rc.endpoint_traffic(nbytes=16384, loss=0.05, reorder=0.2, dup=0.05, seed=seed, hostile=12,
                                imm=0.5, sends=0.2, reads=reads, n_writes=10, n_streams=streams)
    assert tr.stats["reads"] >= 2
    res = rc.run_model(64, s, tr.items, seed=seed, p_idle=0.2, p_bp=0.4)
    assert rc.requests(s, res["ack"]) == tr.acks
    assert rc.memory_image(s, res["place"], res["data"]) == tr.memory
    assert rc.same_completions(rc.completions(s, res["cqe"]), tr.cqes)
    assert sum(1 for c in tr.cqes if c[3] == 2) == tr.stats["reads"]


def test_model_read_cases():
    """MR-RX-110..112: every READ-response case gets the outcome it was built for; the READ of
    three chunks, the zero-length one and the one in the reused row complete once each."""
    s = rc.Setup(*SMALL, seed=3, n_streams=2)
    cases = rc.read_cases(s)
    exp = rc.check(s.writes + cases, rc.run_model(64, s, cases, seed=1, p_idle=0.2, p_bp=0.4), *SMALL)
    assert [c[3] for c in rc.completions(s, exp["cqe"])] == [2, 2, 2]


def test_instance_streams_bound():
    """MR-RX-001, MR-RX-020, MR-RX-060: the small instance holds 4 streams per connection (its
    per-stream tables half the 8-stream ones'); a connection configured with 8
    has streams 4..7 refused (STREAM) and their per-stream rows are not stored."""
    small, full = layouts(**rx.SMALL), layouts(*SMALL)
    assert (small.streams, small.stream_bits, full.streams) == (4, 2, 8)
    assert small.cfg == full.cfg                # the configuration address keeps the 3-bit stream
    s = rc.Setup(**rx.SMALL, seed=21)
    assert all(c.n_streams <= 4 for c in s.conns)
    cases = rc.stream_bound_cases(s)
    exp = rc.check(s.writes + cases, rc.run_model(64, s, cases, seed=2, p_idle=0.2, p_bp=0.3), **rx.SMALL)
    codes = [o.code for o in exp["outcomes"]]
    assert codes == [RxCode.STREAM, RxCode.RNR]
    # the 8-stream instance keeps stream 4's packets and rows, the small one neither
    s8 = rc.Setup(*SMALL, seed=21)
    c = s8.conns[0]
    post = s8.recv_write(c.qp, 4, 0, s8.keys[0].base, 64, 77)
    pkt = s8.write(c, stream=4, plen=8).meta
    for m, code in ((RxModel(*SMALL), RxCode.ACCEPTED), (RxModel(**rx.SMALL), RxCode.STREAM)):
        for w in s8.writes + cases[:1] + [post]:      # cases[0]: the connection with all 8 streams
            m.write_cfg(w.table, w.addr, w.value)
        assert bool(m.recv) == (code == RxCode.ACCEPTED)
        assert m.packet(pkt).code == code


def test_setup_after_teardown_reuses_connections():
    """MR-RX-060, MR-RX-086, MR-RX-101, MR-RX-110: the same endpoint traffic twice on one engine,
    the first setup closed by ``Setup.teardown`` (connections, keys, and the streams' message,
    receive and READ rows put back at reset) before the second reopens the same connection
    numbers: the second batch's ACKs, completions, memory writes and counters equal a fresh
    engine's (left at the first batch's message numbers, its chunks would be duplicates)."""
    lay_args = dict(conns=256, paths=4, keys=256, streams=4)
    model = rx.RxCycleModel(64, **lay_args)
    batches = rc.Batches(64)
    for batch in range(2):
        s, tr = rc.endpoint_traffic(nbytes=4096, loss=0.05, reorder=0.2, dup=0.05, seed=4, hostile=4,
                                    imm=0.7, sends=0.3, reads=0.3, **lay_args)
        drv = batches.run(s, tr.items, model=model, seed=batch, p_idle=0.2, p_bp=0.4)
        exp = rc.check(drv.items, drv.res, *lay_args.values())
        assert len(exp["cqe"]) >= 2 and drv.res["counters"][CTR_PLACED_BYTES] > 0


def test_message_toggle_cases_reach_wide_fields():
    """MR-RX-073, MR-RX-086, MR-RX-101: the coverage stimulus for the message stage's wide
    fields (``rc.message_toggle_cases``) on the cycle model: every item's outcome and output as
    the packet-level model says; per round two WRITE_IMM and two SEND completion records with
    32-bit message numbers and immediates and 64-bit ``wr_id``s, so their high bits move."""
    lay_args = dict(conns=256, paths=4, keys=256, streams=4)
    s = rc.Setup(seed=7, **lay_args)
    cases = rc.message_toggle_cases(s, rounds=4)
    drv = rc.Batches(64).run(s, cases, model=rx.RxCycleModel(64, **lay_args), seed=7, p_idle=0.25, p_bp=0.4)
    rc.check(drv.items, drv.res, *lay_args.values())
    cqes = [rx.unpack(s.lay.cqe, v) for v in drv.res["cqe"]]
    assert len(cqes) >= 4 * 4
    assert max(c["msg"] for c in cqes) >= 1 << 24
    assert any(c["wr_id"] >> 48 for c in cqes) and any(c["with_imm"] and c["imm"] >> 24 for c in cqes)


def test_request_cases_after_a_batch_and_atomic_bins():
    """MR-RX-220: the coverage suite's request classes (``rc.request_cases``) as the second
    batch on one cycle model, after a batch that placed: checked with the first batch's
    placements counted into the atomic items' placement mark (MR-RX-175), every ``atomic``
    bin of the shape hit; checked as if on a fresh engine (``place_base`` 0) the atomic
    stream differs (the negative control)."""
    from metaroce.tb import coverage as cov
    lay_args = dict(conns=256, paths=4, keys=256, streams=4)
    model = rx.RxCycleModel(64, **lay_args)
    batches = rc.Batches(64)
    s1 = rc.Setup(seed=3, **lay_args)
    first = batches.run(s1, rc.burst_same_path(s1, 8, plen=9), model=model, seed=3, p_idle=0.0, p_bp=0.0)
    assert first.place_base == 0 and len(first.res["place"]) == 8
    s2 = rc.Setup(seed=4, **lay_args)
    cases = rc.within_slots(s2, rc.request_cases(s2, 6))
    drv = batches.run(s2, cases, model=model, seed=4, p_idle=0.25, p_bp=0.4)
    assert drv.place_base == 8 and drv.res["atom"]
    exp = rc.check(drv.items, drv.res, *lay_args.values(), place_base=drv.place_base)
    with pytest.raises(AssertionError, match="atom #0"):
        rc.check(drv.items, drv.res, *lay_args.values())
    recs = [c for c in drv.items if isinstance(c, rc.Case)]
    pts = [{"code": o.code.name.lower(), "class": rc.opcode_class(c)} for c, o in zip(recs, exp["outcomes"])]
    table = cov.functional_rx(64, {"none": pts})["bins"]["outcome x class x shape"]
    atomic = [k for k in table if k.split("/")[1] == "atomic"]
    assert len(atomic) == 10 and all(table[k] for k in atomic), [k for k in atomic if not table[k]]


def test_long_messages_above_16k():
    """MR-RX-221, MR-RX-227: ``rc.long_message_cases`` on the cycle model at an MTU of 8,192: every chunk
    accepted; a WRITE_IMM completion above 64 KiB, a SEND_IMM and a READ completion above
    16 KiB, each of its message's whole length; the MTU put back after."""
    from metaroce.models.rx import GLOBAL, TABLE_GLOBAL, WC_RDMA_READ, WC_RECV, WC_RECV_RDMA_WITH_IMM
    lay_args = dict(conns=256, paths=4, keys=256, streams=4)
    s = rc.Setup(seed=9, **lay_args)
    cases = rc.long_message_cases(s)
    drv = rc.Batches(64).run(s, cases, model=rx.RxCycleModel(64, **lay_args), seed=9, p_idle=0.2, p_bp=0.4)
    exp = rc.check(drv.items, drv.res, *lay_args.values())
    assert all(o.code == RxCode.ACCEPTED for o in exp["outcomes"])
    cqes = [unpack(s.lay.cqe, v) for v in drv.res["cqe"]]
    lengths = {c["opcode"]: c["length"] for c in cqes}
    assert len(cqes) == 3 and set(lengths) == {WC_RECV_RDMA_WITH_IMM, WC_RECV, WC_RDMA_READ}
    # MR-RX-227: the READ above 64 KiB (the READ accounting row's placed bits 15 and 16)
    assert lengths[WC_RECV_RDMA_WITH_IMM] > 1 << 16 and lengths[WC_RECV] > 1 << 14 and lengths[WC_RDMA_READ] > 1 << 16
    globs = [unpack(GLOBAL, c.value)["mtu_log2"] for c in cases if isinstance(c, rc.CfgWrite) and c.table == TABLE_GLOBAL]
    assert globs == [13, 8]


def test_long_read_crosses_the_ring():
    """MR-RX-073, MR-RX-082, MR-RX-112: a READ of more chunks than the ring, two chunks resent
    after the ring moved past them (``rc.long_read_cases``): every chunk accepted, the two
    resent counted as duplicate chunks, one RDMA READ completion of the whole length."""
    from metaroce.models.rx import CTR_DUP_CHUNKS, WC_RDMA_READ
    lay_args = dict(conns=256, paths=4, keys=256, streams=4)
    s = rc.Setup(seed=8, **lay_args)
    cases = rc.long_read_cases(s)
    drv = rc.Batches(64).run(s, cases, model=rx.RxCycleModel(64, **lay_args), seed=8, p_idle=0.2, p_bp=0.4)
    exp = rc.check(drv.items, drv.res, *lay_args.values())
    recs = [c for c in drv.items if isinstance(c, rc.Case)]
    assert len(recs) == 2 * s.lay.chunk_ring + 5
    assert all(o.code == RxCode.ACCEPTED for o in exp["outcomes"])
    assert drv.res["counters"][CTR_DUP_CHUNKS] == 2
    cqes = [unpack(s.lay.cqe, v) for v in drv.res["cqe"]]
    assert [c["opcode"] for c in cqes] == [WC_RDMA_READ] and cqes[0]["length"] == unpack(s.lay.rd, cases[0].value)["length"]


def test_high_epoch_chunks():
    """MR-RX-225: ``rc.epoch_cases`` on the cycle model: every chunk of the two open messages
    and of the READ accepted as a new chunk, every ring position at an epoch with bits 2 to 7
    set, four again at the next epoch (one of them wrapped to 0 after the top epoch is
    possible), nothing completed but the reused READ row's one-chunk READ; the READ's and the
    messages' lengths above the chunks'."""
    from metaroce.models.parser import unpack_meta
    from metaroce.models.rx import CTR_DUP_CHUNKS, EPOCH_BITS, WC_RDMA_READ, MsgCode
    lay_args = dict(conns=256, paths=4, keys=256, streams=4)
    s = rc.Setup(seed=11, **lay_args)
    cases = rc.epoch_cases(s)
    drv = rc.Batches(64).run(s, cases, model=rx.RxCycleModel(64, **lay_args), seed=11, p_idle=0.2, p_bp=0.4)
    exp = rc.check(drv.items, drv.res, *lay_args.values())
    recs = [c for c in drv.items if isinstance(c, rc.Case)]
    assert all(o.code == RxCode.ACCEPTED and o.msg == MsgCode.NEW for o in exp["outcomes"])
    ring = s.lay.chunk_ring
    for prefix in ("ep-w0", "ep-w1", "ep-r"):
        chunks = [unpack_meta(c.meta)["mrdh"]["offset"] // s.mtu for c in recs
                  if c.name.startswith(prefix + ".") or (prefix == "ep-r" and c.name[4:].isdigit())]
        assert len(chunks) == ring + 4
        first = chunks[:ring]
        assert sorted(k % ring for k in first) == list(range(ring))
        assert all((k // ring) >> 2 == (1 << EPOCH_BITS) - 1 >> 2 for k in first)
        assert all(((k // ring) - 1) % (1 << EPOCH_BITS) == first_ep for k, first_ep in zip(
            chunks[ring:], [next(f // ring for f in first if f % ring == k % ring) for k in chunks[ring:]]))
    assert drv.res["counters"][CTR_DUP_CHUNKS] == 0
    cqes = [unpack(s.lay.cqe, v) for v in drv.res["cqe"]]
    assert [(c["opcode"], c["length"]) for c in cqes] == [(WC_RDMA_READ, 8)]


def test_high_request_cases():
    """MR-RX-257: ``rc.high_request_cases`` on the cycle model: every request accepted; per
    round the atomics come out as messages n, n + 1 (the fetch-and-add one ahead waited for
    the compare-and-swap, one delivery) and the READ responses as n + 2, n + 3, at the round's
    31-bit message number, each item's host address the key's 64-bit base plus its VA and
    each response's length the request's."""
    from metaroce.models.parser import unpack_meta
    lay_args = dict(conns=256, paths=4, keys=256, streams=4)
    s = rc.Setup(seed=11, **lay_args)
    cases = rc.high_request_cases(s)
    drv = rc.Batches(64).run(s, cases, model=rx.RxCycleModel(64, **lay_args), seed=11, p_idle=0.2, p_bp=0.4)
    exp = rc.check(drv.items, drv.res, *lay_args.values())
    assert len(exp["outcomes"]) == 12 and all(o.code == RxCode.ACCEPTED for o in exp["outcomes"])
    base = next(unpack(s.lay.key, w.value)["base"] for w in cases if isinstance(w, rc.CfgWrite) and w.table == rx.TABLE_KEY)
    assert base >> 32 and base % 8 == 0
    reqs = {c.name: unpack_meta(c.meta) for c in cases if isinstance(c, rc.Case)}
    atoms = [unpack(s.lay.atom_entry, v & ((1 << s.lay.atom_entry.size) - 1)) for v in drv.res["atom"]]
    rsps = [unpack(s.lay.rsp, v & ((1 << s.lay.rsp.size) - 1)) for v in drv.res["rsp"]]
    assert len(atoms) == len(rsps) == 6
    for r in range(3):
        n = reqs[f"hq-cas{r}"]["mrdh"]["msg"]
        assert [a["msg"] for a in atoms[2 * r:2 * r + 2]] == [n, n + 1]
        assert [a["laddr"] for a in atoms[2 * r:2 * r + 2]] == [base + reqs[f"hq-{x}{r}"]["reth"]["va"] for x in ("cas", "fadd")]
        assert [(q["msg"], q["length"]) for q in rsps[2 * r:2 * r + 2]] == [
            (n + 2 + j, reqs[f"hq-rd-{x}{r}"]["reth"]["dma_len"]) for j, x in enumerate("ab")]
        assert [q["laddr"] for q in rsps[2 * r:2 * r + 2]] == [base + reqs[f"hq-rd-{x}{r}"]["reth"]["va"] for x in "ab"]
    assert max(a["msg"] for a in atoms) >> 16 and max(q["length"] for q in rsps) >> 16
