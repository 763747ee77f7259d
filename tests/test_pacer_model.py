"""The pacing model (models/pacer.py ``Pacer``, docs/spec/hw-cwnd.md section 7, MR-CW-081..096)
against the reference endpoint's next send time (``Connection.pace_until``) after every event
of the incast traces of MR-CW-056 (and the incast with the endpoint's defaults) and of the
directed cases of MR-CC-027 and MR-CC-033; each rule's negative control (a Pacer without it)
disagrees. The endpoint's defaults include ``count_wait`` (MR-CC-035/036); the default traces
also run with it off (``_nowait``)."""
import collections

import pytest

from metaroce.models import pacer_cases as pc
from metaroce.models import protocol as P
from metaroce.models.pacer import BLIND_BITS, RTT_BITS, STATE, Flags, Pacer

_TRACES = {}


def trace(name):
    """The recorded events of a scenario or directed case, run once per module."""
    if name not in _TRACES:
        cases = {"pull": lambda: pc.pull_case(), "pull_after": lambda: pc.pull_case(True),
                 "pull_wait": lambda: pc.pull_wait_case(),
                 "lost_on": lambda: pc.lost_first_case(True),
                 "lost_off": lambda: pc.lost_first_case(False),
                 "incast_default_nowait": lambda: pc.pacer_trace(
                     "incast_default", switches=dict(count_wait=False))}
        _TRACES[name] = cases[name]() if name in cases else pc.pacer_trace(name)
    return _TRACES[name]


def counting():
    """A Pacer that counts, per rule, the events in which the rule moved the next send time or
    the pulls owed."""
    hits = collections.Counter()

    class Count(Pacer):
        pass
    for m in ("ack", "_retime_rate", "_blind", "_phase", "sample", "probe", "timeout", "sent",
              "skip_pulls"):
        f = getattr(Pacer, m)

        def g(self, *a, _f=f, _m=m):
            before = (self.state["pace_until"], self.state["pulled"])
            r = _f(self, *a)
            hits[_m] += (self.state["pace_until"], self.state["pulled"]) != before
            return r
        setattr(Count, m, g)
    return Count, hits


def paced_in_the_first_rtt(config, events):
    """MR-CC-035 on a trace: the data frames (not resends) a connection sent, after a hint below
    the line rate, sooner than one base RTT after its first data frame: ``(conn, ns after it)``."""
    first, hinted, out = {}, set(), []
    for c, _, kind, args, _ in events:
        if kind == "sent":
            first.setdefault(c, args[0])
            if c in hinted and not args[2] and args[0] < first[c] + config["base_rtt_ns"]:
                out.append((c, args[0] - first[c]))
        elif kind == "ack" and 0 < args[1] < config["line_mbps"]:
            hinted.add(c)
    return out


@pytest.mark.parametrize("scenario", ["incast", "incast6", "incast_default", "incast8_default",
                                      "incast_default_nowait"])
def test_pacer_equals_the_endpoint_on_incast_traces(scenario):
    """MR-CW-094, MR-CW-081, MR-CW-084, MR-CW-086, MR-CW-087, MR-CW-089, MR-CW-090, MR-CW-091: a
    Pacer per connection (the endpoint's configuration and switches), fed
    the endpoint's events (frames sent, ACKs with their samples, probes), has the endpoint's
    next send time after every one of them, to the ns, also with every time shifted across the
    32-bit counter's wrap (MR-CW-083); the traces re-time on rate changes and samples, release
    blind bytes, and (with the defaults) set the first paced frame's phase; with the defaults'
    ``count_wait`` (MR-CC-035) no connection sends a paced frame within one base RTT of its first
    frame (the blind release holds it); with it off (``_nowait``) some do, and probes are paced
    and samples re-time the wait."""
    config, events = trace(scenario)
    Count, hits = counting()
    n, bad = pc.replay(config, events, Count)
    assert bad == [] and n > 5000
    kinds = collections.Counter(e[2] for e in events)
    assert kinds["sent"] >= 3072 and kinds["ack"] >= 2880 and kinds["sample"] > 2800
    assert hits["sent"] > 2800
    early = paced_in_the_first_rtt(config, events)
    if scenario.endswith("_default"):
        # the defaults, count_wait on (recorded: the blind release moved the next send time at
        # 3 of incast_default's 4 senders' answers, 7 of incast8_default's 8; no probe, and no
        # sample re-timed a wait: the first paced frames go after the first windows' ACKs)
        assert config["flags"].announce and config["flags"].count_wait
        assert hits["_blind"] >= 3 and hits["_phase"] >= 3 and hits["_retime_rate"] > 15
        assert early == []                                      # MR-CC-035
    elif scenario.endswith("_nowait"):
        # count_wait off (recorded: 12 paced frames of 2 senders within the first RTT, 7
        # samples re-timed a wait, 2 probes paced)
        assert config["flags"].announce and not config["flags"].count_wait
        assert hits["_retime_rate"] > 25 and hits["sample"] > 4 and hits["_phase"] >= 3
        assert hits["probe"] >= 1 and len(early) >= 4
    else:
        assert hits["_retime_rate"] > 25 and hits["sample"] > 4
        assert hits["_blind"] >= 6 and not config["flags"].announce
    last = max(e[3][0] for e in events if e[2] in ("sent", "ack"))
    assert pc.replay(config, events, shift=(1 << 32) - last // 2) == (n, [])
    # MR-CW-083: no saturation reached: the samples and the blind bytes within their fields
    assert max(e[3][1] for e in events if e[2] == "sent") < 1 << 13
    assert max(e[3][1] for e in events if e[2] == "sample") < (1 << RTT_BITS) - 1
    blind = collections.Counter()
    for c, _, kind, args, _ in events:
        if kind == "sent":
            blind[c] += args[1] + P.WIRE_OVERHEAD       # at most what the blind bytes count
    assert max(blind.values()) < (1 << BLIND_BITS) - 1


@pytest.mark.parametrize("case", ["pull", "pull_after", "pull_wait", "lost_on", "lost_off"])
def test_pacer_equals_the_endpoint_on_directed_cases(case):
    """MR-CW-095, MR-CW-085, MR-CW-088, MR-CW-092: the pulled resend of a first window lost at
    a quiet port goes at once and the pacing runs on from it (owed only when nothing paced went
    since the answer; ``pull``/``pull_after`` with ``count_wait`` off: MR-CC-027 alone;
    ``pull_wait`` with the defaults: the pull, held a base RTT, comes after the first paced
    frame, itself held a base RTT, and owes nothing); a first window lost whole goes at its
    timer after the blind release (with the rule; without it, at the phase turn): the
    endpoint's next send time after every event, also across the counter's wrap."""
    config, events = trace(case)
    Count, hits = counting()
    assert pc.replay(config, events, Count) == (len(events), [])
    kinds = collections.Counter(e[2] for e in events)
    if case == "pull":
        assert hits["ack"] == 2 and kinds["sent"] >= 5     # the pull owed one resend
    if case == "pull_after":
        assert hits["ack"] == 1                            # nothing owed: a paced frame went
    if case == "pull_wait":
        assert config["flags"].count_wait
        (i,) = [i for i, e in enumerate(events) if e[2] == "ack" and e[3][3]]     # the pull
        t_first = min(e[3][0] for e in events if e[2] == "sent")
        paced = [e[3][0] for e in events[:i] if e[2] == "sent"][1:]
        assert paced and paced[0] >= t_first + config["base_rtt_ns"]        # MR-CC-035
        owed = []

        class Owed(Pacer):
            def ack(self, *a):
                Pacer.ack(self, *a)
                owed.append(self.state["pulled"])
        assert pc.replay(config, events, Owed)[1] == [] and max(owed) == 0     # owed nothing
        assert [e[3][2] for e in events[i + 1:] if e[2] == "sent"][0]     # then the resend
    if case.startswith("lost"):
        assert kinds["timeout"] >= 1 and hits["timeout"] == (case == "lost_on")
    assert pc.replay(config, events, shift=(1 << 32) - 5000) == (len(events), [])


class _NoRetime(Pacer):
    def _retime_rate(self, old_rate):
        pass


class _NoBlind(Pacer):
    def _blind(self, *a):
        pass


class _NoPhase(Pacer):
    def _phase(self, *a):
        pass


class _NoSampleRetime(Pacer):
    def sample(self, now, rtt):
        self.state["rtt_last"] = rtt


class _NoStretch(Pacer):
    def _gap(self, wl):
        return P.pacing_gap_ns(wl, self.state["rate"])


class _NoTimeout(Pacer):
    def timeout(self, now):
        pass


class _NoCountWait(Pacer):
    def _blind_release(self):
        fl = self.flags
        self.flags = Flags(fl.announce, fl.ack_phase, fl.probe_turn, fl.lost_first_turn,
                           fl.spread_once, count_wait=False)
        try:
            return Pacer._blind_release(self)
        finally:
            self.flags = fl


class _NoPull(Pacer):
    def ack(self, now, hint, pkts, pulls=0):
        Pacer.ack(self, now, hint, pkts, 0)


@pytest.mark.parametrize("wrong, case", [
    (_NoRetime, "incast"), (_NoBlind, "incast6"), (_NoPhase, "incast_default"),
    (_NoSampleRetime, "incast"), (_NoStretch, "incast6"), (_NoTimeout, "lost_on"),
    (_NoPull, "pull"), (_NoCountWait, "incast_default"), (_NoCountWait, "pull_wait")])
def test_pacer_without_a_rule_disagrees(wrong, case):
    """MR-CW-096: negative controls: a Pacer without the re-timing of a rate change (MR-CC-006),
    the blind release (MR-CC-016), the phase (MR-CC-023/028), the sample's re-timing
    (MR-CC-029), the queue stretch (MR-CC-015), the lost first window's turn (MR-CC-033), the
    pull (MR-CC-027), the wait of one base RTT (MR-CC-035) differs from the endpoint."""
    config, events = trace(case)
    n, bad = pc.replay(config, events, wrong)
    assert bad, wrong.__name__


def test_record_and_phase_hash():
    """MR-CW-083: the record's fields and width (231 bits per connection); the phase hash
    kept is ``protocol.phase_spread_ns``'s."""
    assert sum(1 for v in STATE.members.values() if v == P.TIME_BITS) == 4
    assert STATE.size == 231
    for cid in range(1, 64):
        k = P.phase_k(cid, 7)
        assert P.phase_spread_ns(20_480, cid, 7) == (20_480 * k) >> 8 and 0 <= k < 256
        assert Pacer(line_mbps=100_000, base_rtt_ns=4_000, mtu=1024, conn_id=cid,
                     seed=7).state["phase_k"] == k


def test_scheduler_events():
    """MR-CW-084/085: a frame is eligible from its next send time on (the wrapping compare);
    each paced frame moves it a gap on from max(next, now); at the line rate nothing moves; a
    pulled resend goes outside the pacing and restarts it from itself; new work while pulls
    are owed ends them."""
    # MR-CW-084/085 alone: count_wait off (the default's MR-CC-035 would hold the next send
    # time to the first frame + the base RTT here: test_first_paced_frame_waits_a_base_rtt)
    pc_ = Pacer(line_mbps=100_000, base_rtt_ns=10_000, mtu=4096, flags=Flags(count_wait=False),
                t_open=100)
    pc_.sent(100, 4180)
    assert pc_.pace_until == 100 and pc_.eligible(100)         # line rate: not paced
    pc_.ack(200, 25_000, 1)
    gap = P.pacing_gap_ns(4180, 25_000)
    assert pc_.pace_until == 100 + gap                           # MR-CC-006: from the last frame
    assert not pc_.eligible(99 + gap) and pc_.eligible(100 + gap)
    pc_.sent(150 + gap, 4180)
    assert pc_.pace_until == 150 + 2 * gap
    pc_.sent(160 + gap, 4180)                                   # early (the caller's): still on
    assert pc_.pace_until == 150 + 3 * gap
    pc_.state["pulled"] = 2
    pc_.sent(170 + gap, 4180, retx=True)                         # a pulled resend
    assert pc_.pace_until == 170 + 2 * gap and pc_.state["pulled"] == 1
    pc_.sent(180 + gap, 4180, retx=False)                        # new work ends the pulls
    assert pc_.state["pulled"] == 0 and pc_.pace_until == 170 + 3 * gap
    pc_.state["pulled"] = 1
    pc_.skip_pulls()
    assert pc_.state["pulled"] == 0
    # MR-CW-083: across the counter's wrap, max(next, now) is the later on the counter; the
    # integers' max (the wrong form) would keep the old time
    near = Pacer(line_mbps=100_000, base_rtt_ns=10_000, mtu=4096, flags=Flags(announce=False),
                 t_open=P.TIME_MASK - 10)
    near.ack(P.TIME_MASK - 5, 1_000, 0)
    assert not near.eligible(P.TIME_MASK - 11) and near.eligible(3)
    near.sent(3, 100)
    gap = P.pacing_gap_ns(100, 1_000)
    assert near.pace_until == 3 + gap != (P.TIME_MASK - 10 + gap) & P.TIME_MASK
    assert not near.eligible(2 + gap) and near.eligible(3 + gap)


@pytest.mark.parametrize("scenario", ["incast", "incast6", "incast_default"])
def test_split_per_frame_part_and_writes_equal_the_endpoint(scenario):
    """MR-CW-099, MR-CW-093, MR-CW-082: the split on the traces: the per-frame part
    (``PacerFrameModel``) takes every full-MTU frame whose gap is the kept one (98 % of the
    frames) and the other owners (a ``Pacer``) write its rate and next send time when they move
    them: its ``pace_until`` equals the endpoint's after every event; without the writes' time
    (the rate only) it does not."""
    config, events = trace(scenario)
    res = pc.split_replay(config, events, 4186)
    assert res["bad"] == [] and res["checked"] > 5000
    assert res["frames"] > 0.95 * (res["frames"] + res["other_frames"])
    assert res["writes"] < 0.06 * res["checked"]
    assert pc.split_replay(config, events, 4186, write_time=False)["bad"]


def test_pacer_follows_the_endpoints_switches():
    """MR-CW-081, MR-CW-094: the eight-sender incast with the endpoint's switches of MR-CC-028,
    MR-CC-032, MR-CC-033 and MR-CC-034 off: the Pacer with the endpoint's switches equals it
    after every event; with the default switches it does not."""
    off = dict(ack_phase=False, probe_turn=False, spread_once=False, lost_first_turn=False)
    config, events = pc.pacer_trace("incast8_default", switches=off)
    assert not (config["flags"].ack_phase or config["flags"].spread_once)
    n, bad = pc.replay(config, events)
    assert bad == [] and n > 8000
    assert pc.replay(dict(config, flags=Flags()), events)[1]


def test_first_paced_frame_waits_a_base_rtt():
    """MR-CC-035 (MR-CW-087): with the default flags (``count_wait`` on) an announcing connection
    answered with a hint whose blind release has passed still waits until one base RTT after its
    first frame (plus its phase, MR-CC-023); with ``count_wait`` off it goes at the release and
    its phase; at the line rate no wait."""
    gap = P.pacing_gap_ns(4096 + Pacer.DATA_HDR, 25_000)
    assert Flags().count_wait
    for wait in (True, False):
        pc_ = Pacer(line_mbps=100_000, base_rtt_ns=10_000, mtu=4096,
                    flags=Flags() if wait else Flags(count_wait=False), t_open=100)
        pc_.sent(100, 4180)
        pc_.ack(2_000, 25_000, 0)
        rel = P.blind_release_ns(100, 4180 + P.WIRE_OVERHEAD, 25_000)
        assert rel < 2_000
        if wait:
            assert 100 + 10_000 <= pc_.pace_until <= 100 + 10_000 + gap
        else:
            assert 2_000 <= pc_.pace_until <= 2_000 + gap
    go = Pacer(line_mbps=100_000, base_rtt_ns=10_000, mtu=4096, flags=Flags(count_wait=True),
               t_open=100)
    go.sent(100, 4180)
    go.ack(2_000, 100_000, 0)
    assert go.pace_until < 2_000


def test_frame_model_short_frames_are_the_endpoints_charge():
    """MR-CW-100, MR-CW-104: ``PacerFrameModel`` charged frames of random wire lengths (74 bytes
    to beyond ``mtu_wl``) at random rates equals the model of the endpoint's pacing (``Pacer.sent``,
    MR-CW-084, no queue stretch: no sample) after every frame, across the counter's wrap, the kept
    gap used exactly for ``mtu_wl``; with the kept gap for every frame (``wl`` left out) it does
    not."""
    import random
    from metaroce.models.pacer import PacerFrameModel
    rng = random.Random(7)
    line, mtu_wl = 400_000, 1114
    for _ in range(20):
        rate = rng.choice([1, 999, 20_000, rng.randrange(1, line), line - 1, line, 0])
        ref = Pacer(line_mbps=line, base_rtt_ns=8_000, mtu=1024)
        ref.state["rate"] = P.clamp_hint_mbps(rate, line)
        part, kept = (PacerFrameModel(1, mtu_wl=mtu_wl, line_mbps=line) for _ in range(2))
        now = (1 << 32) - 50_000
        for m in (part, kept):
            m.write({"conn": 0, "rate": rate, "set_time": 1, "time": now & P.TIME_MASK})
        ref.state["pace_until"] = now & P.TIME_MASK
        differ = 0
        for _ in range(50):
            now += rng.choice([0, 10, rng.randrange(5_000)])
            wl = rng.choice([74, 90, 602, mtu_wl, mtu_wl + 4, rng.randrange(74, 8192)])
            ref.sent(now, wl)
            fr = {"conn": 0, "now": now & P.TIME_MASK, "force": 1}
            assert part.frame(dict(fr, wl=wl))["pace_until"] == ref.pace_until
            differ += kept.frame(fr)["pace_until"] != ref.pace_until
        assert bool(differ) == (P.clamp_hint_mbps(rate, line) < line)
