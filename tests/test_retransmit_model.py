"""The retransmit unit's model (models/retransmit.py): its rules against models/protocol.py and
the reference endpoint, and its cycle model against its semantics (docs/spec/hw-tx.md)."""
import pytest

from metaroce.models import protocol as P
from metaroce.models import records
from metaroce.models import retransmit_cases as rc
from metaroce.models import rx
from metaroce.models.retransmit import (CTR, JOB_DEPTH, SMALL, STATUS_RETRY_EXC, Decision,
                                        RetransmitCycleModel, RetransmitModel, layouts)

CONN, PATH = 3, 1


def test_layouts():
    """MR-TX-002, MR-TX-003, MR-TX-010: the ACK port is the RX engine's ACK request layout; a
    pool record carries records.RTX's fields at their widths; the default instance is the
    engine's (MR-ENG-010)."""
    lay = layouts(*SMALL)
    assert lay.ack == rx.layouts(256, 4, 2).ack
    rtx = dict(records.RTX)
    rec = dict(lay.rec)
    assert rec["slot"].width == rtx["tx_slot"].width and rec["chunk"].width == rtx["chunk"].width
    assert rec["t_sent"].width == rtx["t_sent"].width and rec["nbytes"].width == rtx["nbytes"].width
    big = layouts()
    assert (big.conns, big.paths, big.pool) == (records.CONNS, records.PATHS, records.RTX_POOL)
    assert big.ptr_bits == records.POOL_PTR_BITS


def _send(m, psns, path=PATH):
    for psn in psns:
        assert m.sent(rc.sent_item(CONN, path, psn, slot=psn % 8, chunk=100 + psn)[1])


def test_sack_resolution():
    """MR-TX-021..023 (MR-REL-001, MR-REL-002): an ACK resolves the records from the floor to
    the highest PSN it covers; those below cum or SACKed are acknowledged, the others are
    lost, once, in PSN order; later records stay."""
    m = RetransmitModel(*SMALL)
    _send(m, range(10))
    # cum = 3 (PSNs 0..2 arrived), SACK bits 1 and 2: PSNs 5 and 6 arrived
    out = m.ack(rc.ack_item(CONN, PATH, 3, 0b110)[1])
    assert [(d.kind, d.chunk) for d in out] == [
        ("acked", 100), ("acked", 101), ("acked", 102), ("resend", 103), ("resend", 104),
        ("acked", 105), ("acked", 106)]
    assert out[0] == Decision("acked", CONN, PATH, 0, 100)
    assert m.state(m.row(CONN, PATH))["floor"] == 7 and m.used == 3
    assert m.ack(rc.ack_item(CONN, PATH, 3, 0b110)[1]) == []             # the same ACK again
    assert m.counters[CTR["acks_stale"]] == 1
    out = m.ack(rc.ack_item(CONN, PATH, 10, 0)[1])
    assert [(d.kind, d.chunk) for d in out] == [("acked", 107), ("acked", 108), ("acked", 109)]
    assert m.used == 0


def test_first_packet_at_any_psn_starts_the_timer():
    """MR-TX-503, MR-TX-052, MR-TX-471: a row's first packet starts its timer at any PSN (the
    row's "no live record" as it was before the packet), so the packet's loss times out; at
    PSN 0 as before. The form before (the test after moving the floor) left it off."""
    for psn0 in (0, (1 << 24) - 3):
        m = RetransmitModel(*SMALL)
        _send(m, [psn0])
        st = m.state(m.row(CONN, PATH))
        assert (st["floor"], st["timer_on"], m.deadline(m.row(CONN, PATH)) is not None) == \
            (psn0, 1, True)
        out, _ = m.timeout(CONN, PATH)
        assert [(d.kind, d.chunk) for d in out] == [("resend", 100 + psn0)]


def test_bad_acks_and_naks_change_nothing():
    """MR-TX-024 (MR-ERR-010): an ACK covering a PSN never sent, an ACK for a path beyond the
    instance and a NAK are counted and resolve nothing."""
    m = RetransmitModel(*SMALL)
    _send(m, range(4))
    assert m.ack(rc.ack_item(CONN, PATH, 5, 0)[1]) == []
    assert m.ack(rc.ack_item(CONN, PATH, 3, 1)[1]) == []                 # SACKs PSN 4
    assert m.ack(rc.ack_item(CONN, 7, 1, 0)[1]) == []
    assert m.ack(rc.ack_item(CONN, PATH, 0, 0, nak=1, reason=3)[1]) == []
    c = m.counters
    assert (c[CTR["acks_bad"]], c[CTR["naks"]], c[CTR["acks"]]) == (3, 1, 0)
    assert m.state(m.row(CONN, PATH))["floor"] == 0 and m.used == 4


def test_sent_checks():
    """MR-TX-020 (MR-SEQ-006), MR-TX-012: after a path's first packet (MR-TX-471) a sent packet
    is recorded only with the path's next PSN and while fewer than 256 PSNs are unresolved;
    otherwise counted sent_bad, nothing allocated."""
    m = RetransmitModel(*SMALL)
    _send(m, range(1))
    assert not m.sent(rc.sent_item(CONN, PATH, 2)[1])
    _send(m, range(1, P.SEND_WINDOW))
    assert not m.sent(rc.sent_item(CONN, PATH, P.SEND_WINDOW)[1])
    assert not m.sent(rc.sent_item(CONN, 4, 0)[1])                      # path beyond the instance
    assert m.counters[CTR["sent_bad"]] == 3 and m.used == P.SEND_WINDOW
    out = m.ack(rc.ack_item(CONN, PATH, 1, 0)[1])
    assert len(out) == 1 and m.sent(rc.sent_item(CONN, PATH, P.SEND_WINDOW)[1])


def test_first_packet_sets_initial_psn():
    """MR-TX-471, MR-TX-472: a row's first packet is recorded at any PSN (the scheduler's
    initial PSN), which becomes its floor; from there PSNs and ACKs run modulo 2^24 across the
    wrap (a SACK gap resolved past it); a row's second packet at another PSN is refused."""
    m = RetransmitModel(*SMALL)
    first = P.PSN_MOD - 3
    psns = [P.psn_add(first, k) for k in range(8)]
    _send(m, psns)
    st = m.state(m.row(CONN, PATH))
    assert (st["floor"], st["next_psn"], st["based"]) == (first, 5, 1)
    assert not m.sent(rc.sent_item(CONN, PATH, 9)[1])          # not its next PSN
    # the receiver has all but P.PSN_MOD - 1: cum at it, SACK bits for 0..4
    out = m.ack(rc.ack_item(CONN, PATH, P.PSN_MOD - 1, 0b11111)[1])
    kinds = sorted(d.kind for d in out)
    assert kinds == ["acked"] * 7 + ["resend"] and m.state(m.row(CONN, PATH))["floor"] == 5


def test_sack_resolve_is_protocols():
    """MR-TX-021: the resolution is protocol.sack_resolve, including ACKs whose cum lies behind
    the floor with SACK bits above it."""
    m = RetransmitModel(*SMALL)
    _send(m, range(20))
    m.ack(rc.ack_item(CONN, PATH, 6, 0)[1])                                # floor 6
    out = m.ack(rc.ack_item(CONN, PATH, 2, 1 << 10)[1])                    # PSN 13, cum behind
    n, acked = P.sack_resolve(6, 20, 2, 1 << 10)
    assert len(out) == n == 8
    assert [d.kind == "acked" for d in out] == [bool(acked >> j & 1) for j in range(n)]


@pytest.mark.parametrize("seed,p_bp", [(1, 0.0), (2, 0.4), (3, 0.8)])
def test_cycle_model_matches_semantics(seed, p_bp):
    """MR-TX-030..036, MR-TX-010/011: the cycle model (shared pool, free list, linked FIFOs, walker) reports
    the same records in the same order, and counts the same, as the semantics."""
    items = rc.traffic(*SMALL, 500, seed=seed)
    m = RetransmitCycleModel(64, *SMALL)
    res = rc.run_model(m, items, seed=seed, p_idle=0.2, p_bp=p_bp)
    exp = rc.check_items(m, items, res)
    assert exp["resend"] and exp["counters"][CTR["acks_stale"]] and exp["counters"][CTR["acks_bad"]]


def test_pool_exhaustion_backpressure():
    """MR-TX-031: with every record in use no sent packet is taken; the records an ACK frees
    are taken again, and nothing is lost or refused."""
    conns, paths, pool = 4, 2, 16
    m = RetransmitCycleModel(64, conns, paths, pool)
    items = [rc.sent_item(0, 0, i) for i in range(pool)] + [rc.ack_item(0, 0, 2, 0)]
    items += [rc.sent_item(1, 1, 0), rc.sent_item(1, 1, 1)]
    res = rc.run_model(m, items, p_idle=0.0, p_bp=0.0)
    rc.check_items(m, items, res)
    taken = res["taken"]
    assert taken[pool] == taken[pool - 1] + 1                  # the ACK at once
    # the next sent packets wait until the walk has freed the two records
    assert taken[pool + 1] - taken[pool] >= 4
    assert len(taken) == pool + 3 and m.free_level == 0
    assert m.counters[CTR["sent"]] == pool + 2 and m.counters[CTR["sent_bad"]] == 0


def test_ack_burst_one_per_cycle():
    """MR-TX-034: back-to-back ACKs are taken one per cycle while the walk queue has room;
    MR-TX-032: back-to-back walk jobs of one record each take two cycles each (the next job's
    head is read beside the last record)."""
    b = rc.ack_burst(*SMALL, seed=4)
    m = RetransmitCycleModel(64, *SMALL)
    res = rc.run_model(m, b["items"], p_idle=0.0, p_bp=0.0)
    acks = [c for c, (k, _) in zip(res["taken"], b["items"]) if k == "ack"]
    assert len(acks) == 16 <= JOB_DEPTH and acks[-1] - acks[0] == len(acks) - 1
    rc.check_items(m, b["items"], res)
    cyc = res["acked_cycles"]
    assert len(cyc) == 16 and all(b - a == 2 for a, b in zip(cyc[:5], cyc[1:5]))
    # the ACK restarts the timer in the pipeline (MR-TX-052): nothing holds the walker
    assert cyc[-1] - cyc[0] == 2 * 15


# Seeds whose losses are all found by SACK gaps (asserted below): with the 1-packet first
# window (MR-CC-008) seeds 0 and 4 lose a lone first packet, which only a tail probe finds:
# those are compared with the probes' decisions (test_probe_decisions_match_reference_endpoint).
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_model_matches_reference_endpoint(seed):
    """MR-TX-051, MR-TX-021..023: on the reference endpoint's sent packets and the ACKs its
    sender processed (a write over the loopback with data loss), the model resolves exactly
    the records the endpoint resolves on each ACK, acknowledged or lost alike (its
    _chunk_acked and its gap losses, MR-REL-002); the cycle model reports the same."""
    r = rc.endpoint_run(seed)
    st = r["stats"]
    # every loss is found by a SACK gap (MR-REL-002); no timer or cross-path verdict to model
    assert st["gap_losses"] > 5 and not st.get("timeouts") and not st.get("xpath_losses")
    assert not st.get("tail_probes") and not st.get("naks_received")
    m = RetransmitModel(*SMALL)
    got = []
    for kind, f in r["items"]:
        if kind == "sent":
            assert m.sent(f)
        else:
            got.append(m.ack(f))
    assert got == r["decisions"]
    assert sum(d.kind == "resend" for ds in got for d in ds) == st["gap_losses"]
    cm = RetransmitCycleModel(64, *SMALL)
    res = rc.run_model(cm, r["items"], seed=seed, p_bp=0.3)
    rc.check_items(cm, r["items"], res)
    assert not cm.counters[CTR["timeouts"]]


# ------------------------------------------------------------------ timers (MR-TX-052, MR-TX-060..064)

TIMERS = {"rto_ns": 2000, "retry_limit": 2, "slot_log2": 6}
SLOT = 1 << TIMERS["slot_log2"]


def _run_timed(items, **kw):
    """The cycle model on a realistic clock (4 ns per cycle throughout), no backpressure; the
    health bits alone unless ``ages`` (MR-TX-207: these tests' RTT samples are a few ns, so
    every progress ages out long before an expiry)."""
    m = RetransmitCycleModel(64, *SMALL, **TIMERS, probes=kw.pop("probes", True),
                             ages=kw.pop("ages", False))
    res = rc.run_model(m, items, p_idle=0.0, p_bp=kw.pop("p_bp", 0.0), ns_per_cycle=4, idle_ns=4,
                       **kw)
    exp = rc.check_items(m, items, res)
    return m, res, exp


def _sent_times(m):
    return [f["t_sent"] for k, f, *_ in m.events if k == "sent"]


def _timeouts(m):
    return [e[3] for e in m.events if e[0] == "timeout"]


def test_tail_loss_timer():
    """MR-TX-052, MR-TX-061, MR-TX-063 (MR-REL-006): with no ACK the path's timer expires RTO
    after the send time of its oldest live record, within a wheel slot and a few cycles, and
    every live record is reported lost, once, in PSN order; the timer then stops."""
    items = [rc.sent_item(CONN, PATH, i, chunk=10 + i) for i in range(3)]
    m, res, exp = _run_timed(items)
    t0 = _sent_times(m)[0]
    (t_out,) = _timeouts(m)
    assert t0 + TIMERS["rto_ns"] <= t_out <= t0 + TIMERS["rto_ns"] + 2 * SLOT
    assert [x["chunk"] for x in rc.decode(m.lay, res["resend"])] == [10, 11, 12]
    assert m.counters[CTR["timeout_losses"]] == 3 and not res["error"]


def _ack_times(m):
    return [e[2] for e in m.events if e[0] == "ack"]


def _ack_old_trigger(cum):
    """An ACK up to ``cum`` triggered by a PSN the path resolved long ago (a late duplicate):
    no RTT sample (MR-TX-054), so the timer tests below keep the constant RTO."""
    return rc.ack_item(CONN, PATH, cum, 0, psn=(cum - 300) & P.PSN_MASK)


def _rto_events(m):
    return [e[3:] for e in m.events if e[0] == "rto"]


def test_timer_restarts_from_newest_send():
    """MR-TX-052, MR-TX-055 (MR-TX-061): an ACK that resolves the oldest live record, with live
    records left, restarts the timer from the send time of the path's newest record (a bound on
    the oldest live record's, MR-REL-006), not at the ACK's time; records already reported lost
    by a timeout are not reported lost again when an ACK resolves them; MR-TXS-445: they are
    reported acknowledged flagged late (counted ``acked``, freed, on ``m_acked`` with ``late``),
    the records after the lost prefix not flagged."""
    items = [rc.sent_item(CONN, PATH, 0, chunk=1), rc.wait_item(1000),
             rc.sent_item(CONN, PATH, 1, chunk=2), rc.wait_item(500), _ack_old_trigger(1)]
    m, res, exp = _run_timed(items)
    t1, (t_ack,) = _sent_times(m)[1], _ack_times(m)
    (t_out,) = _timeouts(m)
    assert t_ack - t1 >= 500
    assert t1 + TIMERS["rto_ns"] <= t_out <= t1 + TIMERS["rto_ns"] + 2 * SLOT
    assert [x["chunk"] for x in rc.decode(m.lay, res["resend"])] == [2]
    # the late ACK of both: PSN 1 was lost by the timer and is now acknowledged, not lost again
    items2 = items + [rc.wait_item(4000), _ack_old_trigger(2)]
    m2, res2, _ = _run_timed(items2)
    assert len(res2["resend"]) == 1
    assert [(x["chunk"], x["late"]) for x in rc.decode(m2.lay, res2["acked"])] == [(1, 0), (2, 1)]
    assert m2.counters[CTR["acked"]] == 2 and m2.late_acked == 1


def test_tail_loss_found_one_rto_after_its_send():
    """MR-TX-055 (issue 13's tail loss, hw/engine-results.md): the path's newest record lost
    while the ACKs of the records before it keep coming: the timer expires one RTO after the
    lost record's send time, not one RTO after the last ACK (MR-TX-053's restart, a whole
    RTT later)."""
    rto = TIMERS["rto_ns"]
    items = [rc.sent_item(CONN, PATH, i, chunk=i) for i in range(4)]
    items += [rc.wait_item(rto // 4), _ack_old_trigger(2), rc.wait_item(rto // 4),
              _ack_old_trigger(3)]
    m, res, exp = _run_timed(items)
    sent, acks = _sent_times(m), _ack_times(m)
    (t_out,) = _timeouts(m)
    assert acks[-1] - sent[3] >= rto // 2
    assert sent[3] + rto <= t_out <= sent[3] + rto + 2 * SLOT < acks[-1] + rto
    assert [x["chunk"] for x in rc.decode(m.lay, res["resend"])] == [3]


def test_slow_draining_window_no_spurious_timeout():
    """MR-TX-052, MR-TX-054, MR-TX-055 (issue 12): a full window whose ACKs each resolve its
    oldest record but arrive slower than the initial RTO in total (8 records, one ACK every 0.6
    RTO, each triggered by the record it resolves: the last record is acknowledged about 5 RTOs
    after it was sent) never times out, because the RTT samples raise the RTO (RFC 6298, as
    the endpoint's MR-REL-006 timer); its tail, lost, times out one RTO (the estimator's, as
    it stands then) after the newest record's send time."""
    rto = TIMERS["rto_ns"]
    items = [rc.sent_item(CONN, PATH, i, chunk=i) for i in range(8)]
    for k in range(6):
        items += [rc.wait_item(rto * 6 // 10), rc.ack_item(CONN, PATH, k + 1, 0, psn=k)]
    m, res, exp = _run_timed(items)
    sent, acks = _sent_times(m), _ack_times(m)
    assert acks[-1] - sent[6] > 3 * rto
    (t_out,) = _timeouts(m)
    last_rto = _rto_events(m)[-1][1]
    assert t_out > acks[-1] and last_rto > 3 * rto
    assert sent[7] + last_rto <= t_out <= sent[7] + last_rto + 2 * SLOT
    assert [x["chunk"] for x in rc.decode(m.lay, res["acked"])] == list(range(6))
    assert [x["chunk"] for x in rc.decode(m.lay, res["resend"])] == [6, 7]
    assert m.counters[CTR["timeout_losses"]] == 2 and m.counters[CTR["timeouts"]] == 1


def test_backoff_and_retry_limit():
    """MR-TX-061, MR-TX-064 (MR-REL-006, MR-ENG-040): each consecutive timeout doubles the next
    deadline; the timeout beyond the retry limit is reported once on m_error with
    RETRY_EXC_ERR; an ACK that resolves anything resets both."""
    items = []
    for k in range(5):
        items += [rc.sent_item(CONN, PATH, k, chunk=k), rc.wait_item((2000 << k) + 3 * SLOT)]
    items += [_ack_old_trigger(5), rc.sent_item(CONN, PATH, 5, chunk=5)]
    m, res, exp = _run_timed(items)
    sent, outs = _sent_times(m), _timeouts(m)
    assert len(outs) == 6
    for k in range(5):
        dl = sent[k] + (2000 << k)
        assert dl <= outs[k] <= dl + 2 * SLOT, k
    assert outs[5] - sent[5] < 2000 + 2 * SLOT                 # backoff reset by the ACK
    assert [rc.unpack(m.lay.error, e) for e in res["error"]] == [
        {"conn": CONN, "path": PATH, "status": STATUS_RETRY_EXC}]
    assert m.counters[CTR["errors"]] == 1 and m.counters[CTR["timeouts"]] == 6


def test_wheel_many_paths():
    """MR-TX-060: many paths armed at different times expire in deadline order, each within a
    slot of its deadline plus one pop per earlier path; deadlines beyond the wheel's span are
    listed in its last slot and checked again."""
    rows = [(c, p) for c in range(8) for p in range(4)]
    items = []
    for i, (c, p) in enumerate(rows):
        items += [rc.sent_item(c, p, 0, chunk=i), rc.wait_item(37 * (i % 5))]
    timers = dict(TIMERS, rto_ns=20_000)                      # 5 x the wheel's span
    m = RetransmitCycleModel(64, *SMALL, **timers)
    res = rc.run_model(m, items, p_idle=0.0, p_bp=0.3, ns_per_cycle=4, idle_ns=4)
    exp = rc.check_items(m, items, res)
    assert len(_timeouts(m)) == len(rows)
    assert max(exp["late"]) <= 2 * SLOT + 4 * 3 * len(rows)


# ------------------------------------------------------------------ RTT estimator (MR-TX-054)

@pytest.mark.parametrize("rto_ns, rtt", [(2000, 1500), (20_000, 1000)])
def test_rtt_sample_sets_rto(rto_ns, rtt):
    """MR-TX-054 (MR-REL-005/006): an ACK triggered by a record it acknowledges gives the
    sample ACK time - the record's send time; the path's RTO becomes protocol.rto_value_ns of
    the estimator (3 x the first sample here: srtt + 4 x srtt/2), raised above or lowered below
    the initial RTO, and the next timer of the path runs with it."""
    items = [rc.sent_item(CONN, PATH, 0, chunk=0), rc.wait_item(rtt),
             rc.ack_item(CONN, PATH, 1, 0, psn=0), rc.wait_item(100),
             rc.sent_item(CONN, PATH, 1, chunk=1)]
    m = RetransmitCycleModel(64, *SMALL, **dict(TIMERS, rto_ns=rto_ns))
    res = rc.run_model(m, items, p_idle=0.0, p_bp=0.0, ns_per_cycle=4, idle_ns=4)
    rc.check_items(m, items, res)
    (t_ack,), sent = _ack_times(m), _sent_times(m)
    ((sample, rto),) = _rto_events(m)
    assert sample == t_ack - sent[0] and rtt <= sample < rtt + 64
    assert rto == P.rto_value_ns(*P.rtt_update_ns(None, 0, sample)) == 3 * sample
    assert (rto > rto_ns) == (rto_ns == 2000)
    (t_out,) = _timeouts(m)
    assert sent[1] + rto <= t_out <= sent[1] + rto + 2 * SLOT


def test_rtt_sample_only_from_acknowledged_trigger():
    """MR-TX-054: no sample when the trigger PSN is not among the records the ACK resolves (a
    late duplicate's ACK) or is resolved as lost; a chunk resent under a new PSN (MR-REL-003)
    is sampled from the resend's own send time, never the first transmission's (so Karn's
    ambiguity cannot arise)."""
    rto = TIMERS["rto_ns"]
    items = [rc.sent_item(CONN, PATH, 0, chunk=7), rc.sent_item(CONN, PATH, 1, chunk=8),
             rc.wait_item(300),
             # PSN 0 lost, PSN 1 SACKed; the trigger named is PSN 0: resolved lost, no sample
             rc.ack_item(CONN, PATH, 0, 0b1, psn=0), rc.wait_item(300),
             rc.sent_item(CONN, PATH, 2, chunk=7),          # the resend of chunk 7, new PSN
             rc.wait_item(700), rc.ack_item(CONN, PATH, 3, 0, psn=2)]
    m, res, exp = _run_timed(items)
    assert [x["chunk"] for x in rc.decode(m.lay, res["resend"])] == [7]
    sent, acks = _sent_times(m), _ack_times(m)
    ((sample, new_rto),) = _rto_events(m)
    assert sample == acks[1] - sent[2] < acks[1] - sent[0]
    assert new_rto == P.rto_value_ns(*P.rtt_update_ns(None, 0, sample), rto_min=2000)
    assert not _timeouts(m) and new_rto != rto


def test_ack_event_fields():
    """MR-TX-070: one event per resolving ACK: the acknowledged records' bytes and count (the
    record the SACK proves lost counts in neither), the CE count with ECE saturated at 511
    (none without ECE), the ACK's time; MR-TX-071: srtt before any sample is rto_ns / 4,
    then the estimator's. A stale ACK and a NAK emit nothing."""
    from metaroce.models.rx import unpack
    m = RetransmitCycleModel(64, *SMALL)
    items = [rc.sent_item(CONN, PATH, i, nbytes=100 * (i + 1)) for i in range(4)]
    ack = rc.ack_item(CONN, PATH, 2, 0b1)          # PSNs 0, 1 and 3; PSN 2 lost
    ack[1].update(ce_count=600, ece=1)
    plain = rc.ack_item(CONN, PATH, 4, 0)          # stale: everything already resolved
    noece = rc.ack_item(CONN, PATH, 4, 0, nak=1)
    items += [ack, plain, noece]
    items += [rc.sent_item(CONN, PATH, 4, nbytes=7), rc.ack_item(CONN, PATH, 5, 0)]
    items[-1][1].update(ce_count=3, ece=0)
    res = rc.run_model(m, items, p_idle=0.0, p_bp=0.0)
    rc.check_items(m, items, res)
    evs = [unpack(m.lay.ackev, w) for w in res["ackev"]]
    assert [(e["conn"], e["path"], e["bytes"], e["pkts"], e["ce"]) for e in evs] == [
        (CONN, PATH, 100 + 200 + 400, 3, 511), (CONN, PATH, 7, 1, 0)]
    assert evs[0]["now"] < evs[1]["now"]
    # the first ACK's trigger (PSN 0) gave the path's first sample: the second event's srtt
    row = (CONN << m.lay.path_bits) | PATH
    assert evs[0]["srtt"] == 10_000 and evs[1]["srtt"] == m.est[row][0] != 10_000


def test_ack_event_backpressure_holds_acks():
    """MR-TX-071: with m_ackev never ready, 16 events fill its queue; the walker then holds the
    17th ACK's last record, the walk queue fills and s_ack's ready falls; nothing is lost: once
    m_ackev is ready again every event leaves, in ACK order."""
    from metaroce.models.rx import pack, unpack
    m = RetransmitCycleModel(64, *SMALL)
    lay = m.lay
    n = 40
    for i in range(n):                       # one record per PSN, sent while nothing is ACKed
        s = dict(rc.sent_item(CONN, PATH, i, nbytes=i + 1)[1], t_sent=0)
        out = {"s_sent__ready": 0}
        while not out["s_sent__ready"]:
            out = m.step({"s_sent__valid": 1, "s_sent__payload": pack(lay.sent, s),
                          "m_acked__ready": 1, "m_resend__ready": 1})
    taken, cycles, refused = 0, 0, 0
    while taken < n and cycles < 2000:
        a = rc.ack_item(CONN, PATH, taken + 1, 0)[1]
        out = m.step({"s_ack__valid": 1, "s_ack__payload": pack(lay.ack, a),
                      "m_acked__ready": 1, "m_resend__ready": 1, "m_ackev__ready": 0})
        taken += out["s_ack__ready"]
        refused += 1 - out["s_ack__ready"]
        cycles += 1
    assert refused and taken < n and m.ackev_q.level == 16
    got = []
    for _ in range(400):
        out = m.step({"m_acked__ready": 1, "m_resend__ready": 1, "m_ackev__ready": 1})
        if out["m_ackev__valid"]:
            got.append(unpack(lay.ackev, out["m_ackev__payload"]))
    assert [(e["bytes"], e["pkts"]) for e in got] == [(i + 1, 1) for i in range(taken)]


@pytest.mark.parametrize("trig,fresh", [(0, True), (1, True), (2, False), (7, False)])
def test_ack_event_srtt_timing(trig, fresh):
    """MR-TX-071: an ACK resolving 8 records of a path with no sample yet: its own sample
    (the trigger's) is in its event's srtt when the walk's last record comes 6 or more cycles
    after the trigger's (triggers 0 and 1 of 8, no stalls), else the event has srtt0 (triggers
    2 and 7)."""
    from metaroce.models.rx import unpack
    m = RetransmitCycleModel(64, *SMALL)
    items = [rc.sent_item(CONN, PATH, i, nbytes=64) for i in range(8)]
    items.append(rc.ack_item(CONN, PATH, 8, 0, psn=trig))
    res = rc.run_model(m, items, p_idle=0.0, p_bp=0.0)
    rc.check_items(m, items, res)
    (ev,) = [unpack(m.lay.ackev, w) for w in res["ackev"]]
    row = (CONN << m.lay.path_bits) | PATH
    assert ev["pkts"] == 8 and m.est[row][0] != 10_000
    assert ev["srtt"] == (m.est[row][0] if fresh else 10_000)


# ------------------------------------------------------------------ tail probes (MR-TX-162..166)

def _probe_items(answer=None):
    """Path 0 of the connection acknowledged (healthy, MR-TX-163), then two packets on path
    ``PATH`` whose ACK is lost; with ``answer`` (a trigger PSN) the probe's ACK comes after the
    first expiry and before the second."""
    items = [rc.sent_item(CONN, 0, 0, chunk=50), rc.ack_item(CONN, 0, 1, 0, psn=0),
             rc.sent_item(CONN, PATH, 0, chunk=1), rc.sent_item(CONN, PATH, 1, chunk=2)]
    if answer is not None:
        items += [rc.wait_item(TIMERS["rto_ns"] + 6 * SLOT), rc.ack_item(CONN, PATH, 2, 0, psn=answer)]
    return items


def _probes(m):
    return [e[3] for e in m.events if e[0] == "probe"]


def test_tail_probe_then_timeout():
    """MR-TX-162 (MR-REL-010): the first expiry of a path's timer while another path of the
    connection is healthy sends a tail probe (the newest PSN, on m_probe) instead of declaring
    the live records lost, and re-arms the timer one RTO from the probe; the next expiry
    without progress is the timeout, which reports every live record lost."""
    m, res, exp = _run_timed(_probe_items())
    sent = _sent_times(m)
    (t_probe,), (t_out,) = _probes(m), _timeouts(m)
    rto = TIMERS["rto_ns"]
    assert sent[1] + rto <= t_probe <= sent[1] + rto + 2 * SLOT
    assert t_probe + rto <= t_out <= t_probe + rto + 2 * SLOT
    # MR-TX-197: the timeout's verdict follows on m_probe: suspected (path 0 healthy, no ECN)
    assert [rc.unpack(m.lay.probe, w) for w in res["probe"]] == [
        {"conn": CONN, "path": PATH, "psn": 1, "to": 0, "verdict": 0},
        {"conn": CONN, "path": PATH, "psn": 0, "to": 1, "verdict": P.PATH_SUSPECT}]
    assert [x["chunk"] for x in rc.decode(m.lay, res["resend"])] == [1, 2]
    assert (m.counters[CTR["tail_probes"]], m.counters[CTR["timeouts"]]) == (1, 1)
    assert m.counters[CTR["paths_suspected"]] == 1


def test_no_probe_without_healthy_path_or_when_off():
    """MR-TX-162, MR-TX-163, MR-TX-166, MR-TX-197: without another healthy path of the connection (path 0
    never acknowledged), or with ``probes=False``, the first expiry is the timeout."""
    items = [it for it in _probe_items() if it[0] != "ack"]
    # MR-TX-197: m_probe carries the timeout's verdict only: reroute without a healthy path,
    # suspect with path 0 healthy (probes off)
    for its, kw, v in ((items, {}, P.PATH_REROUTE), (_probe_items(), {"probes": False}, P.PATH_SUSPECT)):
        m, res, _ = _run_timed(its, **kw)
        assert not _probes(m)
        assert [x for w in res["probe"] if (x := rc.unpack(m.lay.probe, w))["path"] == PATH] == [
            {"conn": CONN, "path": PATH, "psn": 0, "to": 1, "verdict": v}]
        assert [e[2] for e in m.events if e[0] == "timeout"].count(PATH) == 1
        assert m.counters[CTR["tail_probes"]] == 0


@pytest.mark.parametrize("trigger", [1, 0])
def test_tail_probe_answered(trigger):
    """MR-TX-162, MR-TX-165 (MR-REL-005, MR-REL-010): the probe's ACK arrives before the second
    expiry: no timeout, nothing reported lost. Triggered by the probed PSN (1) the ACK gives no
    RTT sample (the probe re-sent it: ambiguous); triggered by PSN 0, never probed, it does."""
    m, res, _ = _run_timed(_probe_items(answer=trigger))
    assert len(_probes(m)) == 1 and not _timeouts(m) and not res["resend"]
    assert [x["chunk"] for x in rc.decode(m.lay, res["acked"])] == [50, 1, 2]
    samples = [e for e in m.events if e[0] == "rto" and e[2] == PATH]
    assert len(samples) == (0 if trigger == 1 else 1)


def test_probe_health_after_timeout():
    """MR-TX-163: a timeout makes its path unhealthy: a second path's expiry then finds no
    healthy path and times out, until an ACK's progress makes a path healthy again; MR-TX-162: a
    path with a timeout since its progress (not active) is not probed."""
    p2 = 2
    items = _probe_items() + [rc.wait_item(3 * TIMERS["rto_ns"]), rc.sent_item(CONN, p2, 0, chunk=7),
                              rc.wait_item(3 * TIMERS["rto_ns"]), rc.sent_item(CONN, PATH, 2, chunk=3),
                              rc.wait_item(3 * TIMERS["rto_ns"])]
    m, res, _ = _run_timed(items)
    # path 0 healthy: PATH probes, then times out; p2 then probes (path 0 still healthy); PATH,
    # timed out without progress since, times out at once
    kinds = [(e[0], e[2]) for e in m.events if e[0] in ("probe", "timeout")]
    assert kinds == [("probe", PATH), ("timeout", PATH), ("probe", p2), ("timeout", p2),
                     ("timeout", PATH)]


def _endpoint_expiries_agree(r):
    """MR-TX-167: the unit's decision at each of the endpoint's timer expiries (probe or
    timeout, and a timeout's lost records) and on each ACK equals the endpoint's."""
    out, acks = rc.endpoint_expiries(r)
    assert acks == r["decisions"]
    assert [(a, la) for a, b, la, lb in out] == [(b, lb) for a, b, la, lb in out]
    return out


@pytest.mark.parametrize("seed,paths,ack_loss", [(0, 2, 0.0), (4, 2, 0.0), (4, 2, 0.3), (7, 2, 0.3),
                                                 (3, 4, 0.3), (2, 1, 0.3)])
def test_probe_decisions_match_reference_endpoint(seed, paths, ack_loss):
    """MR-TX-162, MR-TX-163, MR-TX-167 (MR-REL-010): the reference endpoint writing over a
    loopback that loses data frames (3 %) and, with ``ack_loss``, ACKs on the way back: at every
    expiry of its tail-loss timer the unit's semantics, fed the same sent packets and ACKs,
    decides as it does: a tail probe where another path is healthy and the path was not probed
    since its progress, else a timeout declaring the same records lost; one path alone never
    probes. Seeds 0 and 4 without ACK loss: a lone first packet lost, found by a probe."""
    r = rc.endpoint_run(seed, paths=paths, ack_loss=ack_loss, loss=0.03,
                        drop_until=1.0 if ack_loss else 60e-6)
    out = _endpoint_expiries_agree(r)
    st = r["stats"]
    assert not st.get("xpath_losses")
    kinds = [a for a, *_ in out]
    assert kinds.count("probe") == st.get("tail_probes", 0) and kinds.count("timeout") == st.get("timeouts", 0)
    assert kinds and (paths > 1 or "probe" not in kinds)
    if (seed, ack_loss) == (7, 0.3):
        assert "timeout" in kinds and "probe" in kinds


@pytest.mark.slow
def test_probe_decisions_match_reference_endpoint_sweep():
    """MR-TX-163, MR-TX-167: the comparison above over 50 seeds each of 1, 2 and 4 paths (ACK
    loss 30 %, data loss 3 % throughout). Runs with a silent-path verdict of the endpoint
    (MR-REL-009, not in the unit) are left out; of the others, all but a few agree on every
    expiry and every ACK, and each that does not diverges first where the endpoint times out
    and the unit probes: the endpoint's other paths were acknowledged, but more than 4 RTTs
    before (MR-TX-163: the unit's health bit has no age)."""
    n = {"probe": 0, "timeout": 0, "runs": 0, "agree": 0, "xpath_runs": 0}
    for paths in (1, 2, 4):
        for seed in range(50):
            r = rc.endpoint_run(seed, paths=paths, ack_loss=0.3, loss=0.03, drop_until=1.0)
            out, acks = rc.endpoint_expiries(r)
            if any(a == "xpath" for a, *_ in out):
                n["xpath_runs"] += 1
                continue
            n["runs"] += 1
            diff = [(a, b) for a, b, la, lb in out if (a, la) != (b, lb)]
            if not diff:
                assert acks == r["decisions"], (paths, seed)
                n["agree"] += 1
            else:
                assert diff[0] == ("timeout", "probe"), (paths, seed, diff)
            for a, *_ in out:
                n[a] += 1
    assert n["runs"] >= 145 and n["agree"] >= n["runs"] - 4, n
    assert n["probe"] > 1000 and n["timeout"] > 100, n


def test_probe_contract_for_the_scheduler():
    """hw-tx-sched.md section 10 (MR-TXS-079..085, the scheduler's part): the unit's side of it.
    MR-TXS-079, MR-TX-179: the TX top (RTL and model) has the unit's probes on, joined to the
    scheduler inside (no m_probe port of the top), its counters at their addresses (MR-TX-181:
    the unit's tail_probes not mapped). MR-TXS-080: the probe names the
    path's newest PSN, whose record (the chunk to re-send) is live in the unit. MR-TXS-081: a
    probe takes no record and no PSN (the unit's pool and next PSN unchanged; the PSN offered
    again on s_sent would be refused). MR-TXS-082: the probe's answer resolves it (the path's
    floor passes it). MR-TXS-084/085 (pacing, the scheduler's verification) have no unit side
    beyond MR-TX-162's timer from the check."""
    from metaroce.hdl.tx import Tx
    from metaroce.models.tx import TX_CTR_BASE, TxCycleModel
    tx, txm = Tx(64), TxCycleModel(64)
    assert tx.rtx.probes and txm.rtx.probes and "m_probe" not in tx.signature.members
    assert TX_CTR_BASE == CTR["tail_probes"] == 11
    m = RetransmitModel(*SMALL)
    _send(m, [0], path=0)
    m.ack(rc.ack_item(CONN, 0, 1, 0, psn=0)[1])
    _send(m, range(3))
    st = m.state(m.row(CONN, PATH))
    used, nxt = m.used, st["next_psn"]
    kind, psn = m.expire(CONN, PATH, 5000)
    assert (kind, psn) == ("probe", 2) and st["recs"][-1]["chunk"] == 102
    assert (m.used, st["next_psn"], m.counters[CTR["sent"]]) == (used, nxt, 4)
    assert not m.sent(rc.sent_item(CONN, PATH, psn)[1])
    m.ack(rc.ack_item(CONN, PATH, 3, 0, psn=2)[1])
    assert P.psn_dist(psn, st["floor"]) > 0 and not st["probed"]


# ------------------------------------------------------------------ path verdicts (MR-TX-196..199, MR-TX-201/202)

def _verdicts(m, path=PATH):
    return [x["verdict"] for w in m if (x := rc.unpack(SMALL_LAY.probe, w))["to"] and x["path"] == path]


SMALL_LAY = RetransmitModel(*SMALL).lay


def test_verdict_keep_on_ecn_and_retire_after_three():
    """MR-TX-196, MR-TX-198, MR-TX-199 (MR-PATH-001..003): path 0 of the connection acknowledged
    with ECE (the connection's ECN bit set): path 1's timeout is congestion (KEEP); an unmarked
    ACK of path 0 clears the bit: the next timeouts of path 1 are suspicions, the third in a row
    (``consec`` 3) a retirement, each timeout's backoff growing as before; a timeout with no
    path healthy (path 0's timed out too) a reroute; the counters by kind (MR-TX-201) sum to
    ``timeouts``."""
    sem = RetransmitModel(*SMALL, probes=False)
    got = []

    def timeout(path=PATH):
        st = sem.state(sem.row(CONN, path))
        b = st["backoff"]
        got.append(sem.verdict_now(CONN, path))
        sem.timeout(CONN, path)
        assert st["backoff"] == min(b + 1, 6)

    sem.sent(rc.sent_item(CONN, 0, 0)[1])
    sem.ack(dict(rc.ack_item(CONN, 0, 1, 0)[1], ece=1, ce_count=1))
    psn = 0
    for _ in range(4):
        sem.sent(rc.sent_item(CONN, PATH, psn)[1])
        psn += 1
        timeout()
        if len(got) == 1:
            sem.sent(rc.sent_item(CONN, 0, 1)[1])
            sem.ack(rc.ack_item(CONN, 0, 2, 0)[1])      # unmarked: the ECN bit cleared
            # progress of path 1 between: its consec restarts (the KEEP counted one)
            sem.ack(rc.ack_item(CONN, PATH, psn, 0)[1])
    sem.sent(rc.sent_item(CONN, 0, 2)[1])
    timeout(0)
    sem.sent(rc.sent_item(CONN, PATH, psn)[1])
    timeout()
    assert got == [P.PATH_KEEP, P.PATH_SUSPECT, P.PATH_SUSPECT, P.PATH_RETIRE, P.PATH_REROUTE,
                   P.PATH_REROUTE]
    c = sem.counters
    assert (c[CTR["path_keeps"]], c[CTR["paths_suspected"]], c[CTR["paths_retired"]],
            c[CTR["path_reroutes"]]) == (1, 2, 1, 2)
    assert sum(c[CTR[k]] for k in ("path_keeps", "paths_suspected", "paths_retired",
                                   "path_reroutes")) == c[CTR["timeouts"]] == 6


def test_cycle_model_verdicts_in_order_with_probes():
    """MR-TX-197, MR-TX-202: on the cycle model the verdicts leave on m_probe in the order of
    their check events, after the path's probe: a probe, then the timeout's SUSPECT (path 0
    healthy); with path 0 never acknowledged a REROUTE at once; the replay's verdicts are
    ``RetransmitModel.verdict_now``'s (check_items compares them)."""
    m, res, _ = _run_timed(_probe_items())
    assert _verdicts(res["probe"]) == [P.PATH_SUSPECT]
    m, res, _ = _run_timed([it for it in _probe_items() if it[0] != "ack"])
    assert _verdicts(res["probe"]) == [P.PATH_REROUTE]


def test_acknowledged_not_late_empties_the_lost_prefix():
    """MR-TX-504 (live47, the fact hw-tx-sched.md MR-TXS-495 rests on): over random sends,
    timeouts and ACKs (cumulative and SACK) of one path, every ACK that reports a record
    acknowledged and not late, or a gap loss, resolved the path's whole lost prefix: after it
    no record a timeout reported lost is left (``lost_upto`` not ahead of ``floor``), and its
    late reports all come before its others (PSN order)."""
    import random
    rng = random.Random(47)
    m = RetransmitModel(*SMALL)
    st = m.state(m.row(CONN, PATH))
    psn, now, checked, late = 0, 0, 0, 0
    for _ in range(3000):
        now += 100
        r = rng.random()
        if r < 0.45 and m.used < m.lay.pool and P.send_window_open(st["floor"], st["next_psn"]):
            assert m.sent(rc.sent_item(CONN, PATH, psn, slot=psn % 8, chunk=psn % 64, t=now)[1])
            psn = P.psn_add(psn, 1)
        elif r < 0.55 and st["timer_on"]:
            m.timeout(CONN, PATH, now)
        elif st["floor"] != st["next_psn"]:
            span = P.psn_dist(st["floor"], st["next_psn"])
            cum = P.psn_add(st["floor"], rng.randrange(span + 1))
            room = P.psn_dist(cum, st["next_psn"]) - 1
            sack = rng.getrandbits(max(0, min(room, 16))) if room > 0 else 0
            out = m.ack(rc.ack_item(CONN, PATH, cum, sack)[1], now=now)
            kinds = [int(d.late) for d in out if d.kind == "acked"]
            late += sum(kinds)
            if any(d.kind == "resend" or not d.late for d in out):
                assert P.psn_dist(st["floor"], st["lost_upto"]) <= 0
                flags = [d.late for d in out]
                assert flags == sorted(flags, reverse=True)     # late ones first
                checked += 1
    assert checked > 50 and late > 20, (checked, late)
