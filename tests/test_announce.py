"""The sender announcement: MR-CC-021..025 (transport), MR-WIRE-084 (wire), MR-SEC-157 (bounds);
the receiver's count of senders mid-message, MR-CC-026; first windows lost at a quiet port, MR-CC-027,
pulled one per packet time, MR-CC-031; the pacing of the first paced frames and of probes,
MR-CC-028..030."""
import random

import pytest

from metaroce.models import codec
from metaroce.models import protocol as P
from metaroce.models.codec import BTH, IP, UDP, Eth, Frame
from metaroce.models.endpoint import Endpoint
from metaroce.models.loopback import Loopback
from metaroce.models.wire import MR_ANNOUNCE, MrahFlag, MrdhFlag, Op, Reason

RX = "10.0.0.9"
MTU = 1024
KW = dict(mtu=MTU, line_rate_bps=100e9, base_rtt=4e-6)
LINE_MBPS = 100_000


def frames_of(ep, now=0.0, n=64):
    out = []
    for _ in range(n):
        f = ep.next_packet(now)
        if f is None:
            break
        out.append(f)
    return out


def sender(addr="10.0.0.1", local=10, peer=20, paths=4, **kw):
    ep = Endpoint(addr, rng=random.Random(1), **KW, **kw)
    c = ep.connect(local, RX, peer, paths=paths)
    src = bytearray(random.Random(3).randbytes(8 * MTU))
    c.post_write(0, ep.reg_mr(src), 0, len(src), 0, 0x1234, wr_id=1)
    return ep, c


def announcement(src, dest_qp, path=0, pkey=0xFFFF):
    return Frame(eth=Eth(), ip=IP(src=src, dst=RX, ecn=0), udp=UDP(sport=0xC000 | path),
                 bth=BTH(opcode=MR_ANNOUNCE, pkey=pkey, dest_qp=dest_qp, ack_req=1, psn=path))


def receiver(n_conns=4, paths=4, **kw):
    ep = Endpoint(RX, rng=random.Random(2), **KW, **kw)
    conns = [ep.connect(20 + i, f"10.0.0.{i + 1}", 10, paths=paths) for i in range(n_conns)]
    return ep, conns


def test_codec_takes_the_optional_opcode():
    """MR-WIRE-084: BTH and ICRC only, 58 bytes on IPv4; the software decoder takes it and, like
    the RTL parser of this version, drops it as bad_opcode when told to leave optional opcodes out;
    the parser's tables do not list it."""
    f = announcement("10.0.0.1", 77, path=5)
    data = codec.encode(f)
    assert len(data) == codec.wire_len(f) == 14 + 20 + 8 + 12 + 4
    g = codec.decode(data)
    assert (g.bth.opcode, g.bth.dest_qp, g.bth.psn, g.bth.ack_req, g.payload) == (MR_ANNOUNCE, 77, 5, 1, b"")
    assert g.headers() == () and g.mrdh is None and g.icrc_ok
    with pytest.raises(codec.DecodeError) as e:
        codec.decode(data, optional=False)
    assert e.value.reason == Reason.BAD_OPCODE
    assert MR_ANNOUNCE not in set(Op) and "MR_ANNOUNCE" in codec.summary(1, codec.decode_json(1, data))
    with pytest.raises(codec.DecodeError) as e:       # a payload is not allowed (MR-WIRE-081)
        codec.decode(codec.encode(Frame(eth=f.eth, ip=f.ip, udp=f.udp, bth=f.bth, payload=b"1234")))
    assert e.value.reason == Reason.LENGTH


def test_announcement_goes_first_and_changes_no_data_frame():
    """MR-CC-021: one announcement on the first packet's path, then the data frames, the same as
    those of an endpoint that does not announce; the announcement consumes no PSN."""
    ep, c = sender()
    plain, _ = sender(announce=False)
    got, want = frames_of(ep), frames_of(plain)
    assert got[0].bth.opcode == MR_ANNOUNCE and got[0].bth.dest_qp == 20
    assert got[0].bth.psn == got[1].mrdh.path == c.local_id % len(c.paths)
    assert got[0].udp.sport == c.paths[got[0].bth.psn].entropy and got[0].ip.ecn == 0
    assert [codec.encode(f) for f in got[1:]] == [codec.encode(f) for f in want]
    assert sum(f.bth.opcode == MR_ANNOUNCE for f in got) == 1
    assert ep.stats["announcements_sent"] == 1 and "announcements_sent" not in plain.stats


def test_lone_sender_is_told_to_go():
    """MR-CC-022: with ``announce_go`` the only sender counted is answered with the line rate; its
    first window ends at once (no slow start). Without it (the default) the answer carries hint 0
    and slow start goes on."""
    a, c = sender()
    b, _ = receiver(n_conns=1, announce_go=False)
    b.receive(frames_of(a, n=1)[0], 1e-6)
    (ack,) = frames_of(b, 1e-6)
    assert ack.mrah.rate_mbps == 0
    a.receive(ack, 2e-6)
    assert c.ss and a.stats["acks_stale"] == 0
    a, c = sender()
    b, _ = receiver(n_conns=1, announce_go=True)
    ann = frames_of(a, n=1)[0]
    b.receive(ann, 1e-6)
    (ack,) = frames_of(b, 1e-6)
    assert ack.bth.opcode == Op.MR_ACK and ack.mrah.rate_mbps == LINE_MBPS
    assert ack.mrah.path == ann.bth.psn and ack.mrah.cum_psn == 0 and ack.mrah.sack == 0
    assert b.stats["announcements_answered"] == 1
    assert c.ss
    a.receive(ack, 2e-6)
    assert not c.ss and a.stats["acks_stale"] == 0


def test_lone_sender_reaches_its_window_sooner():
    """MR-CC-022: answered "go" a lone sender sends its initial window (one BDP) in its second
    RTT; without it slow start sends 1 + 3 + ... packets per RTT."""
    def sent_by(announce, t_end):
        a = Endpoint("10.0.0.1", rng=random.Random(1), announce=announce, **KW)
        b = Endpoint(RX, rng=random.Random(2), announce=announce, announce_go=announce, **KW)
        ca = a.connect(10, RX, 20, paths=4)
        b.connect(20, "10.0.0.1", 10, paths=4)
        n = 256 * MTU
        src = bytearray(random.Random(4).randbytes(n))
        dst = bytearray(n)
        ca.post_write(0, a.reg_mr(src), 0, n, 0, b.reg_mr(dst), wr_id=1)
        lb = Loopback(a, b, delay=2e-6)
        lb.run(until=t_end)
        if t_end > 1e-3:        # the whole write arrives; data ACKs carry hint 0 (one sender)
            assert dst == src and b._conns[20].rx_hint == 0 and lb.completions[0]
        return a.stats["data_packets_sent"]
    bdp_pkts = 100e9 / 8 * 4e-6 / MTU
    assert sent_by(True, 10e-6) >= bdp_pkts > 2 * sent_by(False, 10e-6)
    sent_by(True, 0.01)


def test_count_and_hints_follow_announcements():
    """MR-CC-022, MR-CC-009: every announcement counts at once; the second sender is answered with
    half the line rate and the first, answered 'go', gets a hint update."""
    b, conns = receiver(n_conns=4, announce_go=True)
    b.receive(announcement("10.0.0.1", 20), 1e-6)
    b.receive(announcement("10.0.0.2", 21, path=1), 1e-6)
    acks = frames_of(b, 1e-6)
    by_dst = {}
    for f in acks:
        by_dst.setdefault(f.ip.dst, []).append(f.mrah.rate_mbps)
    assert by_dst["10.0.0.1"][0] == LINE_MBPS and 0 < by_dst["10.0.0.1"][-1] <= LINE_MBPS // 2
    assert 0 < by_dst["10.0.0.2"][0] <= LINE_MBPS // 2
    assert b._n_est == 2 and not b._fresh          # counted, not predicted (MR-CC-010)
    assert b.stats["hint_updates"] >= 1


def test_forged_announcements_are_bounded():
    """MR-SEC-157: a repeat, an announcement after data, a path out of range, an unknown
    connection or a wrong peer are dropped and counted; however many arrive, the count is at most
    the connections, and each connection is answered once."""
    b, conns = receiver(n_conns=3, paths=4)
    for i in range(100):
        for k in range(3):
            b.receive(announcement(f"10.0.0.{k + 1}", 20 + k, path=i % 4), 1e-6)
        b.receive(announcement("10.0.0.9", 20 + 50 + i), 1e-6)           # no such connection
        b.receive(announcement("10.0.0.7", 20), 1e-6)                   # not the peer
    b.receive(announcement("10.0.0.3", 23), 1e-6)
    st = b.stats
    assert st["announcements_answered"] == 3 and b._n_est <= 3
    assert st["drop_announce_repeat"] == 3 * 99
    assert st["drop_no_connection"] == 101 and st["drop_bad_peer"] == 100
    b2, (c2,) = receiver(n_conns=1, paths=2)
    b2.receive(announcement("10.0.0.1", 20, path=2), 1e-6)
    assert b2.stats["drop_announce_path"] == 1 and c2.rx_hint is None
    # after data has arrived, an announcement is a repeat
    a, c = sender(paths=2)
    b3, (c3,) = receiver(n_conns=1, paths=2)
    b3.reg_mr(bytearray(8 * MTU))
    data = [f for f in frames_of(a) if f.bth.opcode != MR_ANNOUNCE]
    b3.receive(data[0], 1e-6)
    b3.receive(announcement("10.0.0.1", 20), 1e-6)
    assert b3.stats["drop_announce_repeat"] == 1 and b3.stats["announcements_answered"] == 0


def test_endpoint_without_announce_neither_sends_nor_answers():
    """MR-CC-021: ``announce=False`` is the engine's behaviour: no announcement leaves, and one
    that arrives is dropped (the engine's parser drops it as bad_opcode)."""
    ep, _ = sender(announce=False)
    assert all(f.bth.opcode != MR_ANNOUNCE for f in frames_of(ep))
    b, _ = receiver(n_conns=1, announce=False)
    b.receive(announcement("10.0.0.1", 20), 1e-6)
    assert b.stats["drop_unexpected_opcode"] == 1 and frames_of(b) == []


def test_phase_spread_is_a_fraction_of_the_gap():
    """MR-CC-023: k / 256 of the gap, k a hash of the connection id (and seed), spread over it."""
    gap = 20_480
    ks = [P.phase_spread_ns(gap, cid) for cid in range(1, 257)]
    assert all(0 <= k < gap for k in ks)
    assert len(set(ks)) > 128 and min(ks) < gap // 8 and max(ks) > gap * 7 // 8
    assert P.phase_spread_ns(gap, 5, seed=1) == P.phase_spread_ns(gap, 5, seed=1)


def test_stale_hints_updated_at_the_intervals_end():
    """MR-CC-025: 7 senders announced within one interval: the count grew from the last update's 5
    by less than half, so no MR-CC-009 update went out; at the interval's end the senders whose
    hint (r / 5) exceeds r / 7 by more than a quarter get r / 7, the others (r / 6, r / 7) nothing."""
    b, _ = receiver(n_conns=10)
    t0 = 1e-6
    for i in range(7):
        b.receive(announcement(f"10.0.0.{i + 1}", 20 + i, path=i % 4), t0)
    last = {}
    for f in frames_of(b, t0, 256):
        last[f.ip.dst] = f.mrah.rate_mbps
    assert b._bcast_n == 5 and last["10.0.0.1"] == LINE_MBPS // 5
    assert last["10.0.0.6"] == LINE_MBPS // 6 and last["10.0.0.7"] == LINE_MBPS // 7
    before = b.stats["hint_updates"]
    t_end = t0 + 1.5 * b._share_iv * 1e-9           # past the interval, before it goes stale
    b.receive(announcement("10.0.0.9", 28, path=0), t_end)
    got = {}
    for f in frames_of(b, t_end, 256):
        got.setdefault(f.ip.dst, []).append(f.mrah.rate_mbps)
    assert b._bcast_n == 7
    for i in range(1, 6):
        assert got[f"10.0.0.{i}"] == [LINE_MBPS // 7]
    assert "10.0.0.6" not in got and "10.0.0.7" not in got
    # MR-CC-027: no data followed the announcements and the port was quiet, so the first sender
    # was pulled when the timers ran at t_end, before the interval's end: its pull carried r / 7
    # and the update of MR-CC-025 went to the other four
    assert b.stats["first_window_pulls"] == 1
    assert b.stats["hint_updates"] - before == 4


def test_senders_mid_message_counted_one_interval_on():
    """MR-CC-026: at an interval's end, a sender seen in it whose latest data packet left more of
    its message due (A) or that announced and sent nothing since (C) is counted in the next
    interval without a packet; one whose latest packet ended its message (B) is not, and none is
    carried twice (A, silent for a whole interval, leaves the count at the next end)."""
    b, _ = receiver(n_conns=4)
    b.reg_mr(bytearray(8 * MTU))
    a_ann, a_first = frames_of(sender()[0])[:2]
    ep_b = Endpoint("10.0.0.2", rng=random.Random(1), **KW)
    cb = ep_b.connect(10, RX, 21, paths=4)
    cb.post_write(0, ep_b.reg_mr(bytearray(MTU)), 0, MTU, 0, 0x1234, wr_id=1)
    b_ann, b_only = frames_of(ep_b)
    assert not a_first.mrdh.flags & MrdhFlag.LAST and b_only.mrdh.flags & MrdhFlag.LAST
    t0 = 1e-6
    for f in (a_ann, a_first, b_ann, b_only):
        b.receive(f, t0)
    assert b._n_est == 2
    t1 = t0 + 1.5 * b._share_iv * 1e-9             # the interval ends, not stale
    b.receive(announcement("10.0.0.3", 22), t1)     # C
    assert b._share_prev == 2 and 20 in b._share_seen and 21 not in b._share_seen
    t2 = t1 + 1.5 * b._share_iv * 1e-9
    frames_of(b, t2, 256)
    b.receive(announcement("10.0.0.4", 23, path=1), t2)     # D
    # the interval [t1, t2) counted A (carried) and C; the new one carries C, not A again
    assert b._share_prev == 2 and 20 not in b._share_seen and 22 in b._share_seen
    assert b._n_est == 2
    (ans,) = [f for f in frames_of(b, t2, 256) if f.ip.dst == "10.0.0.4"]
    assert ans.mrah.rate_mbps == LINE_MBPS // 2     # without the carry: 0, "no limit"


def _b_first_packet_lost(t0):
    """MR-CC-027's set-up: two senders announce to one receiver; A's first data packet arrives
    at ``t0``, B's is lost. Returns the receiver, B's endpoint and connection, B's lost first
    packet and B's announcement. MR-CC-027 alone: every endpoint with ``count_wait`` off (on by
    default, MR-CC-035/036 would hold the pull and B's first paced frame a base RTT; their own
    tests are below and in tests/test_cc.py)."""
    b, _ = receiver(n_conns=4, count_wait=False)
    b.reg_mr(bytearray(8 * MTU))
    ep_a, _ = sender("10.0.0.1", peer=20, count_wait=False)
    ep_b, cb = sender("10.0.0.2", peer=21, count_wait=False)
    a_ann, a_first = frames_of(ep_a)[:2]
    b_ann, b_first = frames_of(ep_b)
    for f in (a_ann, a_first, b_ann):
        b.receive(f, t0)
    return b, ep_b, cb, b_first, b_ann


def test_first_window_lost_at_a_quiet_port_is_pulled():
    """MR-CC-027: a connection that announced and whose first data packet did not arrive before
    the receiver's port fell quiet (no frame for NEW_SENDER_WINDOW MTU packet times) is pulled
    once: an ACK on the announced path with FIRST_LOST. The sender resends its first-window
    packet at once, outside its pacing, and paces on from it; a connection whose data arrived
    is not pulled. With ``count_wait`` off (the set-up's): MR-CC-027 alone."""
    t0 = 1e-6
    b, ep_b, cb, b_first, b_ann = _b_first_packet_lost(t0)
    assert b_ann.bth.opcode == MR_ANNOUNCE and b_first.mrdh.offset == 0
    answers = frames_of(b, t0)
    (b_answer,) = [f for f in answers if f.ip.dst == "10.0.0.2"]
    assert not b_answer.mrah.flags & MrahFlag.FIRST_LOST
    quiet = P.NEW_SENDER_WINDOW * MTU * 8 / 100e9
    assert frames_of(b, t0 + 0.5 * quiet) == []     # not quiet yet
    pulls = frames_of(b, t0 + 1.1 * quiet)
    assert [(f.ip.dst, f.mrah.flags & MrahFlag.FIRST_LOST) for f in pulls] == [
        ("10.0.0.2", MrahFlag.FIRST_LOST)]
    (pull,) = pulls
    assert pull.mrah.path == b_answer.mrah.path and pull.mrah.cum_psn == b_answer.mrah.cum_psn
    assert b.stats["first_window_pulls"] == 1
    assert frames_of(b, t0 + 10 * quiet) == []      # once
    t1 = t0 + 2e-6
    ep_b.receive(b_answer, t1)
    assert cb.rate_bps < 100e9 and cb.pace_until > int(t1 * 1e9)    # paced: blind release
    assert frames_of(ep_b, t1) == []
    t2 = (int(t1 * 1e9) + cb.pace_until) // 2 * 1e-9     # before its next paced turn
    ep_b.receive(pull, t2)
    (resend,) = frames_of(ep_b, t2)               # at once, then paced again
    assert resend.mrdh.offset == 0 and resend.mrdh.flags & MrdhFlag.RETX
    assert resend.payload == b_first.payload
    assert ep_b.stats["first_window_resends"] == 1 and ep_b.stats["timeouts"] == 0
    assert cb.pace_until >= int(t2 * 1e9) + P.pacing_gap_ns(MTU + 90, int(cb.rate_bps // 1e6)) - 1


@pytest.mark.parametrize("gate", [True, False])
def test_quiet_port_waits_one_base_rtt_after_the_last_announcement(gate):
    """MR-CC-036: with ``count_wait`` (the default) the receiver does not take its port for quiet
    (MR-CC-027) before one base RTT after the latest announcement it counted: B's first data
    packet, late behind a queue on a longer path, arrives half a base RTT after its announcement
    and is not pulled; B's pull, if its packet never came, goes at the last announcement + the
    base RTT. Without it (``count_wait=False``, the negative control) the port is quiet after
    NEW_SENDER_WINDOW packet times and B is pulled though its packet was only late."""
    t0 = 1e-6
    rtt = 16e-6         # the longest path's, longer than the senders' here
    assert Endpoint(RX).count_wait              # on by default

    def rx():
        ep = Endpoint(RX, rng=random.Random(2), **dict(KW, base_rtt=rtt),
                      **({} if gate else dict(count_wait=False)))
        for i in range(4):
            ep.connect(20 + i, f"10.0.0.{i + 1}", 10, paths=4)
        ep.reg_mr(bytearray(8 * MTU))
        return ep
    b = rx()
    ep_a, _ = sender("10.0.0.1", peer=20)
    ep_b, _ = sender("10.0.0.2", peer=21)
    a_ann, a_first = frames_of(ep_a)[:2]
    b_ann, b_first = frames_of(ep_b)
    for f in (a_ann, a_first, b_ann):
        b.receive(f, t0)
    assert not any(f.mrah and f.mrah.flags & MrahFlag.FIRST_LOST for f in frames_of(b, t0))
    quiet = P.NEW_SENDER_WINDOW * MTU * 8 / 100e9
    assert 2 * quiet < rtt / 2
    early = frames_of(b, t0 + 2 * quiet)
    late = t0 + rtt / 2
    b.receive(b_first, late)
    frames_of(b, late)
    if gate:
        assert early == [] and b.stats["first_window_pulls"] == 0
        assert frames_of(b, t0 + 10 * rtt) == [] and b.stats["first_window_pulls"] == 0
    else:
        assert [(f.ip.dst, f.mrah.flags & MrahFlag.FIRST_LOST) for f in early] == [
            ("10.0.0.2", MrahFlag.FIRST_LOST)]
        assert b.stats["first_window_pulls"] == 1
    # B's first packet never comes: the pull waits for the base RTT after the announcement
    b2 = rx()
    for f in (a_ann, a_first, b_ann):
        b2.receive(f, t0)
    frames_of(b2, t0)
    due = t0 + rtt if gate else t0 + quiet
    assert frames_of(b2, due - 0.05 * quiet) == []
    (pull,) = frames_of(b2, due + 1e-9)
    assert pull.ip.dst == "10.0.0.2" and pull.mrah.flags & MrahFlag.FIRST_LOST


def test_lone_sender_is_pulled_without_the_wait():
    """MR-CC-036: only an announcement answered with a paced hint holds the quiet check; a lone
    sender (answered "no limit") whose first data packet is lost is pulled after
    NEW_SENDER_WINDOW packet times, with ``count_wait`` on as off."""
    b, _ = receiver(n_conns=1, count_wait=True)
    ep_a, _ = sender("10.0.0.1", peer=20)
    a_ann = frames_of(ep_a)[0]
    t0 = 1e-6
    b.receive(a_ann, t0)
    (answer,) = frames_of(b, t0)
    assert answer.mrah.rate_mbps == 0
    quiet = P.NEW_SENDER_WINDOW * MTU * 8 / 100e9
    assert frames_of(b, t0 + 0.95 * quiet) == []
    (pull,) = frames_of(b, t0 + quiet + 1e-9)
    assert pull.mrah.flags & MrahFlag.FIRST_LOST and 1.1 * quiet < KW["base_rtt"]


def test_first_window_pull_can_be_turned_off():
    """MR-CC-027: a receiver with ``pull_first_lost`` off answers announcements (MR-CC-022) but
    never pulls, however long its port is quiet."""
    b, _ = receiver(n_conns=2, pull_first_lost=False)
    b.receive(announcement("10.0.0.1", 20), 1e-6)
    assert [f.ip.dst for f in frames_of(b, 1e-6)] == ["10.0.0.1"]
    assert frames_of(b, 1e-3) == [] and b.stats["first_window_pulls"] == 0


def test_pulled_resend_after_a_paced_frame_takes_its_turn():
    """MR-CC-027: a connection that has already sent a paced frame since the receiver's first
    answer resends its pulled first-window packet at its next pacing turn, not at once (two
    packets within one gap would exceed its share). With ``count_wait`` off (the set-up's):
    MR-CC-027 alone; :func:`test_pull_after_a_paced_answer_meets_the_first_paced_frame` is this
    with the defaults."""
    t0 = 1e-6
    b, ep_b, cb, b_first, _ = _b_first_packet_lost(t0)
    (b_answer,) = [f for f in frames_of(b, t0) if f.ip.dst == "10.0.0.2"]
    (pull,) = frames_of(b, t0 + 2e-6)
    assert pull.mrah.flags & MrahFlag.FIRST_LOST
    t1 = t0 + 2e-6
    ep_b.receive(b_answer, t1)
    t_turn = cb.pace_until * 1e-9
    (paced,) = frames_of(ep_b, t_turn)          # its first paced frame, the next chunk
    assert paced.mrdh.offset == MTU and not paced.mrdh.flags & MrdhFlag.RETX
    t2 = t_turn + 10e-9
    ep_b.receive(pull, t2)
    assert ep_b.stats["first_window_resends"] == 1
    assert frames_of(ep_b, t2) == []            # waits for its turn
    (resend,) = frames_of(ep_b, cb.pace_until * 1e-9)
    assert resend.mrdh.offset == 0 and resend.mrdh.flags & MrdhFlag.RETX


def test_pull_after_a_paced_answer_meets_the_first_paced_frame():
    """MR-CC-035, MR-CC-036 with MR-CC-027, the endpoints' defaults (``count_wait`` on): B's first
    data packet is lost. The receiver, its port quiet after NEW_SENDER_WINDOW packet times, pulls
    B only one base RTT after the latest announcement it answered with a paced hint; B, answered
    on a short path with its plain blind release (MR-CC-016) due before one base RTT, sends its
    first paced frame no sooner than one base RTT after its first frame. So the pull finds that
    frame sent: B's resend takes its next paced turn (MR-CC-027's second case), not a slot
    outside the pacing. With ``count_wait`` off (the control,
    :func:`test_first_window_lost_at_a_quiet_port_is_pulled`) the pull comes after
    NEW_SENDER_WINDOW packet times and the resend goes at once."""
    t0 = 1e-6
    base = KW["base_rtt"]
    b, _ = receiver(n_conns=32)
    b.reg_mr(bytearray(8 * MTU))
    ep_a, _ = sender("10.0.0.1", peer=20)
    ep_b, cb = sender("10.0.0.2", peer=21)
    assert b.count_wait and ep_b.count_wait                 # the defaults
    a_ann, a_first = frames_of(ep_a)[:2]
    b_ann, b_first = frames_of(ep_b)                        # B's first frame at 0
    for f in (a_ann, a_first, b_ann):
        b.receive(f, t0)
    for i in range(2, 32):                                  # 30 more senders counted, silent
        b.receive(announcement(f"10.0.0.{i + 1}", 20 + i, path=i % 4), t0)
    to_b = [f for f in frames_of(b, t0, 256) if f.ip.dst == "10.0.0.2"]   # answer, updates
    mbps = to_b[-1].mrah.rate_mbps
    assert 0 < mbps <= LINE_MBPS // 20          # a gap of 2 us and more
    quiet = P.NEW_SENDER_WINDOW * MTU * 8 / 100e9
    assert 2 * quiet < base
    # MR-CC-036: quiet since t0 + quiet, but the paced answers at t0 hold the check a base RTT
    assert frames_of(b, t0 + 2 * quiet) == [] and frames_of(b, t0 + base - 1e-9) == []
    pulls = [f for f in frames_of(b, t0 + base + 1e-9) if f.mrah.flags & MrahFlag.FIRST_LOST]
    assert [f.ip.dst for f in pulls] == ["10.0.0.2"]        # the first silent one, at once
    (pull,) = pulls
    # MR-CC-035: B answered at 1.5 us (a short path, 0.5 us each way); its plain release
    # comes before one base RTT after its first frame, and its first paced frame waits until
    # then (then its phase, MR-CC-023)
    t1 = t0 + 0.5e-6
    for f in to_b:
        ep_b.receive(f, t1)
    rate = int(cb.rate_bps // 1e6)
    assert rate == mbps and cb.blind_t0 == 0
    assert P.blind_release_ns(cb.blind_t0, cb.blind_bytes, rate) < ep_b._base_rtt_ns
    turn = cb.pace_until
    gap = P.pacing_gap_ns(MTU + 90, rate)
    assert cb.blind_t0 + ep_b._base_rtt_ns <= turn < cb.blind_t0 + ep_b._base_rtt_ns + gap
    assert frames_of(ep_b, (turn - 1) * 1e-9) == []
    (paced,) = frames_of(ep_b, turn * 1e-9)
    assert paced.mrdh.offset == MTU and not paced.mrdh.flags & MrdhFlag.RETX
    # the pull, one way from the receiver, arrives after that frame
    t2 = max(t0 + base + 0.5e-6, (turn + 10) * 1e-9)
    assert int(t2 * 1e9) < cb.pace_until
    ep_b.receive(pull, t2)
    assert ep_b.stats["first_window_resends"] == 1
    assert frames_of(ep_b, t2) == []                        # waits for its turn
    (resend,) = frames_of(ep_b, cb.pace_until * 1e-9)
    assert resend.mrdh.offset == 0 and resend.mrdh.flags & MrdhFlag.RETX
    assert resend.payload == b_first.payload


@pytest.mark.parametrize("ack_phase", [True, False])
def test_first_data_ack_sets_the_phase(ack_phase):
    """MR-CC-028: the first ACK of a paced announcing sender's data, arriving before its first
    paced frame, moves that frame to one gap after the bottleneck served its first window
    (now - base RTT + the gap of its last frame, not before the blind release) instead of the
    hashed spread of MR-CC-023; with ``ack_phase`` off the spread stays. MR-CC-028 alone:
    ``count_wait`` off (on by default, MR-CC-035 would hold the release to the first frame + the
    base RTT, 4 us, later than both the ACK's slot and the answer here, and the phase could not
    be told from the release)."""
    t0 = 1e-6
    b, _ = receiver(n_conns=4, count_wait=False)
    rkey = b.reg_mr(bytearray(16 * MTU))
    firsts = []
    for i, kw in enumerate(({}, {"ack_phase": ack_phase})):
        ep = Endpoint(f"10.0.0.{i + 1}", rng=random.Random(1), count_wait=False, **KW, **kw)
        c = ep.connect(10, RX, 20 + i, paths=4)
        c.post_write(0, ep.reg_mr(bytearray(8 * MTU)), 0, 8 * MTU, i * 8 * MTU, rkey, wr_id=1)
        firsts.append(frames_of(ep)[:2])
    ep_b, cb = ep, c
    (a_ann, a_first), (b_ann, b_first) = firsts
    for f in (a_ann, b_ann, a_first, b_first):
        b.receive(f, t0)
    to_b = [f for f in frames_of(b, t0) if f.ip.dst == "10.0.0.2"]
    answer, data_ack = to_b[0], to_b[-1]
    assert answer.mrah.trigger_psn != data_ack.mrah.trigger_psn
    t1 = t0 + 2e-6
    ep_b.receive(answer, t1)
    mbps = int(cb.rate_bps // 1e6)
    assert mbps == LINE_MBPS // 2
    release = P.blind_release_ns(cb.blind_t0, cb.blind_bytes, mbps)
    spread = P.phase_spread_ns(P.pacing_gap_ns(MTU + 90, mbps), cb.local_id, ep_b.seed)
    assert spread > 0 and cb.pace_until == max(int(t1 * 1e9), release) + spread
    t2 = t0 + 5e-6
    ep_b.receive(data_ack, t2)
    now = int(t2 * 1e9)
    if ack_phase:
        assert cb.pace_until == max(release, now - ep_b._base_rtt_ns
                                    + P.pacing_gap_ns(cb.last_wl, mbps))
        assert cb.pace_until < max(int(t1 * 1e9), release) + spread
    else:
        assert cb.pace_until == max(int(t1 * 1e9), release) + spread


def _paced_sender(**kw):
    """A sender paced at the share of 64 senders (a gap longer than the base RTT): the
    receiver counted 63 announcers and it; the receiver's ACKs to it keep that hint."""
    b, _ = receiver(n_conns=64)
    rkey = b.reg_mr(bytearray(16 * MTU))
    ep = Endpoint("10.0.0.64", rng=random.Random(1), **KW, **kw)
    c = ep.connect(10, RX, 20 + 63, paths=4)
    c.post_write(0, ep.reg_mr(bytearray(8 * MTU)), 0, 8 * MTU, 0, rkey, wr_id=1)
    t = 1e-6
    for i in range(63):
        b.receive(announcement(f"10.0.0.{i + 1}", 20 + i), t)
    ann, first = frames_of(ep, t)
    b.receive(ann, t)
    b.receive(first, t)

    def to_ep(now):
        # the 63 announcers send no data, so the receiver would soon count one sender again:
        # its ACKs keep the first hint (that of 64 senders)
        got = [f for f in frames_of(b, now, 256) if f.ip.dst == "10.0.0.64"]
        for f in got:
            f.mrah.rate_mbps = LINE_MBPS // 64
        return got
    for f in to_ep(t):
        ep.receive(f, t + 1e-6)
    return b, ep, c, to_ep


def test_queue_stretch_follows_the_latest_sample():
    """MR-CC-029: a paced sender whose last frame's gap was stretched by a sample of a queue
    (MR-CC-015/020) takes the stretch back when a later sample, arriving before its next turn,
    shows the queue gone: the wait after the last frame follows the latest sample."""
    b, ep, c, to_ep = _paced_sender()
    mbps = int(c.rate_bps // 1e6)
    assert mbps <= LINE_MBPS // 60          # a gap longer than the base RTT
    base = ep._base_rtt_ns
    gap = P.pacing_gap_ns(MTU + 90, mbps)
    assert gap > base
    # the second packet meets a queue: its sample is 3 base RTTs
    t2 = c.pace_until * 1e-9
    (second,) = frames_of(ep, t2)
    b.receive(second, t2 + 2.5 * base * 1e-9)
    t3 = t2 + 3 * base * 1e-9
    for f in to_ep(t2 + 2.5 * base * 1e-9):
        ep.receive(f, t3)
    assert c.rtt_last == 3 * base
    (third,) = frames_of(ep, c.pace_until * 1e-9)
    stretched = c.pace_until - c.last_tx
    assert stretched == P.queue_paced_gap_ns(P.pacing_gap_ns(c.last_wl, mbps), base, 3 * base)
    assert stretched > P.pacing_gap_ns(c.last_wl, mbps)
    # the third packet's ACK, one base RTT later, before the next turn: no queue any more
    t4 = c.last_tx * 1e-9
    b.receive(third, t4 + 0.5 * base * 1e-9)
    for f in to_ep(t4 + 0.5 * base * 1e-9):
        ep.receive(f, t4 + base * 1e-9)
    assert c.rtt_last == base
    assert c.pace_until == c.last_tx + P.pacing_gap_ns(c.last_wl, mbps)


def test_probe_of_a_paced_connection_counts_as_its_paced_frame():
    """MR-CC-030: a paced connection's probe of a packet sent under its hint (not of its first
    window) puts its next paced frame at least one gap after the probe (sent at once here, with
    MR-CC-032's wait for the turn off; with it on, the probe is that turn's frame)."""
    b, ep, c, to_ep = _paced_sender(probe_turn=False)
    mbps = int(c.rate_bps // 1e6)
    t2 = c.pace_until * 1e-9
    (second,) = frames_of(ep, t2)
    p = c.paths[second.mrdh.path]
    turn = c.pace_until
    now = turn - P.pacing_gap_ns(c.last_wl, mbps) // 2      # half a gap before the next turn
    assert c._probe_same_psn(p, now)
    (probe,) = frames_of(ep, now * 1e-9)
    assert probe.bth.psn == second.bth.psn and probe.mrdh.offset == second.mrdh.offset
    assert c.pace_until == now + c._gap(probe.__dict__.get("_wl") or codec.wire_len(probe))
    assert c.pace_until > turn
    assert frames_of(ep, (turn + 1) * 1e-9) == []


def test_pulls_go_one_per_packet_time():
    """MR-CC-031: the connections silent at a quiet port are pulled one per MTU packet time at
    the receiver's line rate, in the order of their announcements. With the defaults
    (``count_wait``, MR-CC-036) the port counts as quiet one base RTT after the last
    announcement answered with a paced hint (here later than NEW_SENDER_WINDOW packet times
    after the last frame); with ``count_wait`` off at NEW_SENDER_WINDOW packet times."""
    for wait in (True, False):
        b, _ = receiver(n_conns=6, **({} if wait else dict(count_wait=False)))
        _pulls_one_per_packet_time(b, wait)


def _pulls_one_per_packet_time(b, wait):
    t0 = 1e-6
    for i in range(6):
        b.receive(announcement(f"10.0.0.{i + 1}", 20 + i), t0)
    answers = frames_of(b, t0, 256)
    assert all(0 < f.mrah.rate_mbps < LINE_MBPS for f in answers[1:])     # paced answers
    pkt = b._pkt_bits_ns // b._rate                 # an MTU packet time at the line rate
    assert b._fresh_ns < b._base_rtt_ns
    # the port falls quiet: MR-CC-027's packet times, or with MR-CC-036 a base RTT after the
    # last paced answer
    t = int(t0 * 1e9) + (b._base_rtt_ns if wait else b._fresh_ns)
    got, times = [], []
    while len(got) < 6:
        assert frames_of(b, (t - 1) * 1e-9) == []
        (pull,) = frames_of(b, t * 1e-9)
        assert pull.mrah.flags & MrahFlag.FIRST_LOST
        got.append(pull.ip.dst)
        times.append(t)
        t = int(round(b.next_wakeup(t * 1e-9) * 1e9))
    assert got == [f"10.0.0.{i + 1}" for i in range(6)]
    assert [b - a for a, b in zip(times, times[1:])] == [pkt] * 5
    assert b.stats["first_window_pulls"] == 6
