"""The pacing model's verification against the reference endpoint (docs/spec/hw-cwnd.md
MR-CW-094/095): :func:`pacer_trace` runs the incast traces of MR-CW-056 (and the same incast
with the endpoint's default configuration: announcements, first windows, the phase rules) and
records, per connection, every event that moves the endpoint's next send time as
:class:`~metaroce.models.pacer.Pacer`'s events with ``Connection.pace_until`` after it;
:func:`replay` runs them through a Pacer per connection and compares after every event.

The endpoint is wrapped, not edited: ``_next_frame`` (a data frame sent, or the pulls ended
without one), ``_on_ack`` (the sample and the ACK), ``_first_lost`` (the pull's count),
``_probe_send`` and ``_verdict`` (the reroute verdict, read from ``path_on_timeout``).
"""
from __future__ import annotations

import random
from contextlib import contextmanager

from . import protocol as P
from .cwnd_cases import Driver
from .pacer import Flags, Pacer
from .rx import pack, unpack

#: MR-CW-094: the incast scenarios (MR-CW-056's two, and "incast_default": the four-sender
#: incast with the endpoint's default configuration).
SCENARIOS = ("incast", "incast6", "incast_default", "incast8_default")


@contextmanager
def recording():
    """MR-CW-094: while in the context, every ``Connection`` of the reference endpoint records
    its pacing events into the yielded list as ``(conn, local_id, kind, args, pace_until)``:
    ``kind`` a :class:`Pacer` method, ``pace_until`` the endpoint's after it (``None`` for an
    ACK's sample, compared after the ACK that carries it; ``verdict``: a timeout that is not a
    reroute, which must move nothing)."""
    from metaroce.models import endpoint as E
    from metaroce.models.codec import wire_len

    events, conns, pull = [], {}, {}
    C = E.Connection
    orig = {n: getattr(C, n) for n in ("_next_frame", "_on_ack", "_first_lost", "_probe_send",
                                       "_verdict")}

    def ci(conn):
        return conns.setdefault(id(conn), (len(conns), conn.local_id))

    def emit(conn, kind, *args):
        c, lid = ci(conn)
        events.append((c, lid, kind, args, conn.pace_until))

    def next_frame(self, now):
        st = self.ep.stats
        pulled = self.pulled
        seen = (st["data_packets_sent"], st["retransmitted"] + st["aborts_sent"])
        f = orig["_next_frame"](self, now)
        if st["data_packets_sent"] != seen[0]:
            emit(self, "sent", now, self.last_wl,
                 st["retransmitted"] + st["aborts_sent"] != seen[1])
        elif pulled and not self.pulled:
            emit(self, "skip_pulls")
        return f

    def first_lost(self, p):
        st = self.ep.stats
        n0 = st["first_window_resends"]
        orig["_first_lost"](self, p)
        pull[id(self)] = st["first_window_resends"] - n0

    def on_ack(self, a, now, bth_psn=0):
        st = self.ep.stats
        sample = pkts = None
        if a.path < len(self.paths) and self.receipt_key is None:
            p = self.paths[a.path]
            n, acked = P.sack_resolve(p.floor, p.next_psn, a.cum_psn, a.sack)
            rec = p.rec(a.trigger_psn & 0xFFFFFF) if n > 0 else None
            if rec is not None and not rec.probe and not rec.free:
                sample = now - rec.t
            pkts = sum(1 for j in range(max(0, n)) if (acked >> j) & 1
                       and p.ring[(p.floor + j) & E.RING_MASK] is not None)
        seen = (st["acks_received"], st["acks_stale"])
        pull[id(self)] = 0
        orig["_on_ack"](self, a, now, bth_psn)
        if (st["acks_received"], st["acks_stale"]) != (seen[0] + 1, seen[1]):
            return          # dropped or stale (MR-SEC-151): no pacing state moved
        assert pkts is not None, "a receipt key: the trace's sample is not read"
        if sample is not None:
            c, lid = ci(self)
            events.append((c, lid, "sample", (now, sample), None))
        emit(self, "ack", now, a.rate_mbps, pkts, pull[id(self)])

    def probe_send(self, p, psn, rec, now):
        free = rec.free
        orig["_probe_send"](self, p, psn, rec, now)
        emit(self, "probe", now, wire_len(self.ep._ctrl[-1]), free)

    def verdict(self, p, now):
        seen = []
        f0 = P.path_on_timeout

        def spy(*a, **k):
            seen.append(f0(*a, **k))
            return seen[-1]
        P.path_on_timeout = spy
        try:
            orig["_verdict"](self, p, now)
        finally:
            P.path_on_timeout = f0
        emit(self, "timeout" if seen and seen[0] == P.PATH_REROUTE else "verdict", now)

    for n, f in (("_next_frame", next_frame), ("_on_ack", on_ack), ("_first_lost", first_lost),
                 ("_probe_send", probe_send), ("_verdict", verdict)):
        setattr(C, n, f)
    try:
        yield events
    finally:
        for n, f in orig.items():
            setattr(C, n, f)


def config_of(ep):
    """The pacing configuration of endpoint ``ep`` (MR-CW-081)."""
    return {"line_mbps": int(ep.line_rate_bps // 1_000_000), "base_rtt_ns": ep._base_rtt_ns,
            "mtu": ep.mtu, "seed": ep.seed,
            "flags": Flags(announce=ep.announce, ack_phase=ep.ack_phase,
                           probe_turn=ep.probe_turn, lost_first_turn=ep.lost_first_turn,
                           spread_once=ep.spread_once, count_wait=ep.count_wait)}


def pacer_trace(scenario="incast", *, until=0.05, size=4 << 20, seed=1, switches=None):
    """Run ``scenario`` (:data:`SCENARIOS`) and return ``(config, events)``: the engine's
    configuration (:func:`config_of`) and the events of :func:`recording`. ``switches``: the
    endpoint's pacing switches to change (``ack_phase``, ``probe_turn``, ``spread_once``,
    ``lost_first_turn``, ``count_wait``)."""
    from metaroce.sim.harness import Flow, run_writes
    from metaroce.sim.topology import Fabric

    if scenario in ("incast", "incast_default"):
        fab = Fabric(8, leaves=2, spines=2, rate_bps=100e9, rtt=10e-6, seed=seed)
        flows = [Flow(k, 7, size, start=k * 20e-6, paths=4) for k in range(4)]
    elif scenario == "incast6":
        fab = Fabric(10, leaves=2, spines=2, rate_bps=100e9, rtt=10e-6, seed=seed)
        flows = [Flow(k, 9, size // 2, start=k * 20e-6, paths=2) for k in range(6)]
    elif scenario == "incast8_default":
        fab = Fabric(10, leaves=2, spines=2, rate_bps=100e9, rtt=10e-6, seed=seed)
        flows = [Flow(k, 9, size // 2, start=k * 5e-6, paths=2) for k in range(8)]
    else:
        raise ValueError(f"scenario {scenario!r}: one of {SCENARIOS}")
    ep_cfg = {} if scenario.endswith("_default") else dict(first_window=0, announce=False,
                                                          mtu=4096)
    ep_cfg.update(switches or {})
    with recording() as events:
        res = run_writes(fab, flows, "metaroce", cfg=ep_cfg, until=until, seed=seed)
    assert res.all_done
    return config_of(fab.hosts[0].ep), events


def replay(config, events, pacer=Pacer, *, shift=0):
    """MR-CW-094: the events through a ``pacer`` per connection (opened at time ``shift``);
    returns ``(checked, mismatches)``: the events whose endpoint time was compared, and the
    first few mismatches ``(index, event, model's pace_until)``. ``shift`` adds to every time
    (mod 2^32: the traces across the counter's wrap, MR-CW-083). A ``verdict`` event (a timeout
    that is not a reroute) is checked to move nothing."""
    pacers, bad, n = {}, [], 0
    timed = {"sent", "ack", "probe", "timeout", "verdict", "sample"}
    for i, (c, lid, kind, args, want) in enumerate(events):
        pc = pacers.get(c)
        if pc is None:
            pc = pacers[c] = pacer(line_mbps=config["line_mbps"], base_rtt_ns=config["base_rtt_ns"],
                                   mtu=config["mtu"], conn_id=lid, seed=config["seed"],
                                   flags=config["flags"], t_open=shift)
        if kind in timed:
            args = ((args[0] + shift) & P.TIME_MASK,) + tuple(args[1:])
        if kind != "verdict":
            getattr(pc, kind)(*args)
        if want is None:
            continue
        n += 1
        if pc.pace_until != (want + shift) & P.TIME_MASK:
            bad.append((i, events[i], pc.pace_until))
            if len(bad) >= 5:
                break
    return n, bad


def _frames(ep, now, n=256):
    out = []
    for _ in range(n):
        f = ep.next_packet(now)
        if f is None:
            break
        out.append(f)
    return out


def _pull_receiver(rx, mtu, kw, peers):
    """The pull cases' receiver: ``peers`` connections (QPs 20.., peers 10.0.0.1..) and a region."""
    import random

    from metaroce.models.endpoint import Endpoint
    b = Endpoint(rx, rng=random.Random(2), **kw)
    for i in range(peers):
        b.connect(20 + i, f"10.0.0.{i + 1}", 10, paths=4)
    b.reg_mr(bytearray(8 * mtu))
    return b


def _two_writers(rx, mtu, kw):
    """The pull cases' senders A (10.0.0.1) and B (10.0.0.2), each one 8-MTU WRITE to ``rx``:
    ``(ep_a, (ep_b, conn_b), (A's announcement, A's first packet, B's announcement))``; B's first
    packet is taken and dropped (lost)."""
    import random

    from metaroce.models.endpoint import Endpoint
    eps = []
    for addr, peer in (("10.0.0.1", 20), ("10.0.0.2", 21)):
        ep = Endpoint(addr, rng=random.Random(1), **kw)
        c = ep.connect(10, rx, peer, paths=4)
        src = bytearray(random.Random(3).randbytes(8 * mtu))
        c.post_write(0, ep.reg_mr(src), 0, len(src), 0, 0x1234, wr_id=1)
        eps.append((ep, c))
    (ep_a, _), (ep_b, cb) = eps
    a_ann, a_first = _frames(ep_a, 0.0)[:2]
    b_ann, _b_first = _frames(ep_b, 0.0)
    return ep_a, (ep_b, cb), (a_ann, a_first, b_ann)


def pull_case(after_paced=False):
    """MR-CW-095: MR-CC-027's pull (the set-up of tests/test_announce.py): two senders announce
    to one receiver, B's first data packet is lost, the receiver's quiet port pulls it; B takes
    the answer, then the pull: its resend goes at once outside the pacing, which runs on from
    it (``after_paced``: B sent a paced frame first, so the resend waits for its turn, the pull
    owed nothing). MR-CC-027 alone: every endpoint with ``count_wait`` off (on by default,
    MR-CC-036 holds the pull a base RTT; :func:`pull_wait_case` is the defaults' timeline).
    Returns ``(config, events)`` of B's connection."""
    from metaroce.models.wire import MrahFlag

    rx, mtu = "10.0.0.9", 1024
    kw = dict(mtu=mtu, line_rate_bps=100e9, base_rtt=4e-6, count_wait=False)
    b = _pull_receiver(rx, mtu, kw, 4)
    with recording() as events:
        ep_a, (ep_b, cb), (a_ann, a_first, b_ann) = _two_writers(rx, mtu, kw)
        t0 = 1e-6
        for f in (a_ann, a_first, b_ann):
            b.receive(f, t0)
        (answer,) = [f for f in _frames(b, t0) if f.ip.dst == "10.0.0.2"]
        (pull,) = _frames(b, t0 + 2e-6)
        assert pull.mrah.flags & MrahFlag.FIRST_LOST
        t1 = t0 + 2e-6
        ep_b.receive(answer, t1)
        if after_paced:
            _frames(ep_b, cb.pace_until * 1e-9)
            t2 = cb.pace_until * 1e-9 - 10e-9
        else:
            t2 = (int(t1 * 1e9) + cb.pace_until) // 2 * 1e-9
        ep_b.receive(pull, t2)
        _frames(ep_b, t2)
        for _ in range(4):                      # paced on
            _frames(ep_b, cb.pace_until * 1e-9)
    assert ep_b.stats["first_window_resends"] == 1
    return config_of(ep_b), [e for e in events if e[1] == 10 and e[0] == 1]


def pull_wait_case():
    """MR-CW-095: MR-CC-027's pull with the endpoints' defaults (``count_wait``, MR-CC-035/036;
    the set-up of tests/test_announce.py's ``test_pull_after_a_paced_answer_meets_the_first_paced_frame``):
    32 senders announce to one receiver, A's first data packet arrives, B's is lost, the other
    30 send nothing. B, answered on a short path, sends its first paced frame one base RTT after
    its first frame; the receiver's pull, held a base RTT after the paced answers, arrives after
    it and owes nothing: B's resend takes its next turn. Returns ``(config, events)`` of B's
    connection."""
    from metaroce.models.codec import BTH, IP, UDP, Eth, Frame
    from metaroce.models.wire import MR_ANNOUNCE, MrahFlag

    rx, mtu = "10.0.0.9", 1024
    kw = dict(mtu=mtu, line_rate_bps=100e9, base_rtt=4e-6)
    b = _pull_receiver(rx, mtu, kw, 32)
    with recording() as events:
        ep_a, (ep_b, cb), (a_ann, a_first, b_ann) = _two_writers(rx, mtu, kw)
        t0 = 1e-6
        for f in (a_ann, a_first, b_ann):
            b.receive(f, t0)
        for i in range(2, 32):
            b.receive(Frame(eth=Eth(), ip=IP(src=f"10.0.0.{i + 1}", dst=rx, ecn=0),
                            udp=UDP(sport=0xC000 | i % 4),
                            bth=BTH(opcode=MR_ANNOUNCE, pkey=0xFFFF, dest_qp=20 + i, ack_req=1,
                                    psn=i % 4)), t0)
        to_b = [f for f in _frames(b, t0) if f.ip.dst == "10.0.0.2"]
        pull = next(f for f in _frames(b, t0 + 4e-6 + 1e-9) if f.mrah.flags & MrahFlag.FIRST_LOST)
        assert pull.ip.dst == "10.0.0.2"
        for f in to_b:
            ep_b.receive(f, t0 + 0.5e-6)
        turn = cb.pace_until
        _frames(ep_b, turn * 1e-9)                  # the first paced frame
        t2 = max(t0 + 4.5e-6, (turn + 10) * 1e-9)
        ep_b.receive(pull, t2)
        for _ in range(4):                          # the resend at its turn, then paced on
            _frames(ep_b, cb.pace_until * 1e-9)
    assert ep_b.stats["first_window_resends"] == 1 and cb.blind_t0 + 4000 <= turn
    return config_of(ep_b), [e for e in events if e[1] == 10 and e[0] == 1]


def lost_first_case(on=True):
    """MR-CW-095: MR-CC-033 (the set-up of tests/test_cc.py): a paced announcing sender whose
    first window was lost whole and which sent nothing since the answer resends it at its timer
    once its blind release has passed (``on``; off, at its phase-spread turn). Returns
    ``(config, events)`` of the sender's connection."""
    import random

    from metaroce.models.codec import BTH, IP, UDP, Eth, Frame
    from metaroce.models.endpoint import Endpoint
    from metaroce.models.wire import MR_ANNOUNCE

    rx, mtu = "10.0.0.9", 1024
    kw = dict(mtu=mtu, line_rate_bps=100e9, base_rtt=4e-6)
    b = Endpoint(rx, rng=random.Random(2), **kw)
    for i in range(64):
        b.connect(20 + i, f"10.0.0.{i + 1}", 10, paths=4)
    with recording() as events:
        ep = Endpoint("10.0.0.64", rng=random.Random(1), lost_first_turn=on, rto_initial=8e-6,
                      **kw)
        c = ep.connect(10, rx, 83, paths=4)
        c.post_write(0, ep.reg_mr(bytearray(8 * mtu)), 0, 8 * mtu, 0, 0x1234, wr_id=1)
        t0 = 1e-6
        for i in range(63):
            b.receive(Frame(eth=Eth(), ip=IP(src=f"10.0.0.{i + 1}", dst=rx, ecn=0),
                            udp=UDP(sport=0xC000), bth=BTH(opcode=MR_ANNOUNCE, pkey=0xFFFF,
                                                           dest_qp=20 + i, ack_req=1, psn=0)), t0)
        ann, _first = _frames(ep, t0)
        b.receive(ann, t0)                  # the first data packet is lost
        (answer,) = [f for f in _frames(b, t0) if f.ip.dst == "10.0.0.64"]
        ep.receive(answer, t0 + 4e-6)
        timer = c.blind_t0 + c.rto_initial_ns
        _frames(ep, timer * 1e-9)
        for _ in range(4):
            _frames(ep, c.pace_until * 1e-9)
    assert ep.stats["timeouts"] >= 1
    return config_of(ep), [e for e in events if e[1] == 10]


# -- the per-frame part's lockstep (MR-CW-098) ------------------------------------------------

def frame_items(conns, n, *, seed=0, line_mbps=100_000, t0=(1 << 32) - 2_000_000,
                mtu_wl=4186, p_short=0.3):
    """MR-CW-098: ``n`` records for the per-frame part: every connection opened first (a
    write with its time), then frames (``now`` advancing from ``t0`` across the counter's wrap,
    some before the next send time, some forced) and writes (rates 0, 1, around and above the
    line rate, the field's largest, random; some with a time). MR-CW-102: a frame's ``wl`` is
    ``mtu_wl`` but in ``p_short`` of them: a shorter or longer one (a header's 74 bytes, one
    byte either side of ``mtu_wl``, the field's largest, random)."""
    from .pacer import RATE_BITS, WL_BITS
    rng = random.Random(seed)
    edge = [0, 1, 2, line_mbps - 1, line_mbps, line_mbps + 1, (1 << RATE_BITS) - 1]
    now = t0

    def rate():
        return rng.choice(edge) if rng.random() < 0.3 else rng.randrange(1_000, line_mbps)
    items = [("write", {"conn": c, "rate": rate(), "set_time": 1, "time": now & P.TIME_MASK})
             for c in range(conns)]
    for _ in range(n):
        now += rng.choice([0, 1, rng.randrange(200), rng.randrange(20_000),
                           rng.randrange(100_000)])
        c = rng.randrange(conns)
        if rng.random() < 0.15:
            items.append(("write", {"conn": c, "rate": rate(), "set_time": int(rng.random() < 0.5),
                                    "time": (now + rng.randrange(-5_000, 50_000)) & P.TIME_MASK}))
        else:
            wl = mtu_wl
            if rng.random() < p_short:
                wl = (min(rng.choice([74, mtu_wl - 1, mtu_wl + 1, (1 << WL_BITS) - 1]),
                          (1 << WL_BITS) - 1)
                      if rng.random() < 0.3 else rng.randrange(74, mtu_wl))
            items.append(("frame", {"conn": c, "now": now & P.TIME_MASK,
                                    "force": int(rng.random() < 0.1), "wl": wl}))
    return items


class FrameDriver(Driver):
    """Sources for ``s_write`` and ``s_frame`` (one record offered at a time, in order, idle
    cycles), a sink for ``m_turn`` with random backpressure; ``config`` the static inputs
    (``mtu_wl``, ``line_mbps``)."""

    def __init__(self, lay, items, config, *, seed=0, p_idle=0.2, p_bp=0.3):
        super().__init__(lay, items, config, seed=seed, p_idle=p_idle, p_bp=p_bp)
        self.res = {"taken": [], "turns": []}

    @property
    def sent_all(self):
        return self.i >= len(self.items)

    def _stuck(self):
        return f"(record {self.i} of {len(self.items)})"

    def inputs(self):
        rng = self.rng
        ins = {"s_write__valid": 0, "s_write__payload": 0, "s_frame__valid": 0,
               "s_frame__payload": 0, "m_turn__ready": int(rng.random() >= self.p_bp)}
        ins.update(self.config)
        # MR-CW-097: the static inputs three cycles before the first record (the dividend's
        # register stages)
        if (self._offer is None and not self.sent_all and self.cycle >= 3
                and rng.random() >= self.p_idle):
            self._offer = self.items[self.i]
        if self._offer is not None:
            kind, rec = self._offer
            ins[f"s_{kind}__valid"] = 1
            ins[f"s_{kind}__payload"] = pack(self.lay[kind], rec)
        return ins

    def observe(self, ins, outs):
        if self._readout_observe(outs):
            return
        for port in ("s_write", "s_frame"):
            if ins[port + "__valid"] and outs[port + "__ready"]:
                self.res["taken"].append(self._offer)
                self._offer = None
                self.i += 1
        if outs["m_turn__valid"] and ins["m_turn__ready"]:
            self.res["turns"].append(unpack(self.lay["turn"], outs["m_turn__payload"]))
        self.cycle += 1


def check_frames(conns, config, taken, turns):
    """MR-CW-098: one turn per frame taken, in order, each ``PacerFrameModel``'s replaying the
    records as taken; returns counts of the turns taken, refused and forced, and of the short
    frames of a paced connection taking theirs (MR-CW-102)."""
    from .pacer import PacerFrameModel
    sem = PacerFrameModel(conns, **config)
    want, short = [], 0
    for kind, rec in taken:
        if kind == "write":
            sem.write(rec)
        else:
            due = not P.time_lt(rec["now"], sem.pace_until[rec["conn"]])
            short += sem.short(rec) and (rec["force"] or due)
            want.append((rec, sem.frame(rec)))
    assert len(turns) == len(want), (len(turns), len(want))
    counts = {"ok": 0, "refused": 0, "forced": 0, "short": short}
    for k, ((rec, w), got) in enumerate(zip(want, turns)):
        assert got == w, f"frame {k} {rec}: got {got}, expected {w}"
        counts["ok" if w["ok"] else "refused"] += 1
        counts["forced"] += rec["force"] and w["ok"]
    return counts


def split_replay(config, events, mtu_wl, *, write_time=True):
    """MR-CW-099: the split of MR-CW-082 on a trace: per connection the per-frame part
    (``PacerFrameModel``) takes every full-MTU frame (``wl`` = ``mtu_wl``) whose gap is the
    kept one (no queue stretch, not a pulled resend); every other event goes to a ``Pacer`` (the
    other owners' rules), which writes the per-frame part's rate and, when it moved it, its next
    send time (``s_write`` with ``set_time``). Returns ``{"checked", "frames", "writes",
    "other_frames", "bad"}``: the per-frame part's ``pace_until`` against the endpoint's after
    every event (``bad``: the first few mismatches). ``write_time`` False (a negative control):
    the writes carry the rate only."""
    from .pacer import PacerFrameModel
    pacers, parts = {}, {}
    res = {"checked": 0, "frames": 0, "writes": 0, "other_frames": 0, "bad": []}
    for i, (c, lid, kind, args, want) in enumerate(events):
        if c not in pacers:
            pacers[c] = Pacer(line_mbps=config["line_mbps"], base_rtt_ns=config["base_rtt_ns"],
                              mtu=config["mtu"], conn_id=lid, seed=config["seed"],
                              flags=config["flags"])
            parts[c] = PacerFrameModel(1, mtu_wl=mtu_wl, line_mbps=config["line_mbps"])
            parts[c].write({"conn": 0, "rate": 0, "set_time": 1, "time": 0})    # the open
        pc, part = pacers[c], parts[c]
        before = (pc.pace_until, pc.state["rate"])
        mine = (kind == "sent" and args[1] == mtu_wl and not (pc.state["pulled"] and args[2])
                and pc._gap(mtu_wl) == P.pacing_gap_ns(mtu_wl, pc.state["rate"]))
        if kind != "verdict":
            getattr(pc, kind)(*args)
        if mine:
            turn = part.frame({"conn": 0, "now": args[0] & P.TIME_MASK, "force": 0,
                               "wl": args[1]})
            assert turn["ok"] or not part.paced[0], (i, events[i])
            res["frames"] += 1
        else:
            res["other_frames"] += kind == "sent"
            if (pc.pace_until, pc.state["rate"]) != before or kind == "sent":
                part.write({"conn": 0, "rate": pc.state["rate"], "set_time": int(write_time),
                            "time": pc.pace_until})
                res["writes"] += 1
        if want is None:
            continue
        res["checked"] += 1
        if part.pace_until[0] != want & P.TIME_MASK:
            res["bad"].append((i, events[i], part.pace_until[0]))
            if len(res["bad"]) >= 5:
                break
    return res
