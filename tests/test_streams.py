"""Independent streams: per-stream send queues and the round-robin scheduler (MR-CONN-002,
MR-ENG-030)."""
import json

from metaroce.cli import main
from metaroce.models.endpoint import Endpoint, Status
from metaroce.models.loopback import Loopback

A, B = "10.0.0.1", "10.0.0.2"
DELAY = 2e-6
RATE = 100e9


def _setup(streams=2, mem=8 << 20, **kw):
    a = Endpoint(A, mtu=4096, line_rate_bps=RATE, base_rtt=2 * DELAY, **kw)
    b = Endpoint(B, mtu=4096, line_rate_bps=RATE, base_rtt=2 * DELAY, **kw)
    src = bytearray(bytes(range(256)) * (mem // 256))
    dst = bytearray(mem)
    ka, kb = a.reg_mr(src), b.reg_mr(dst)
    ca = a.connect(1, B, 1, paths=4, streams=streams)
    b.connect(1, A, 1, paths=4, streams=streams)
    return a, b, ca, ka, kb, src, dst


def _timed(lb, ep):
    """Record each sender completion's time (the loopback polls after every event)."""
    times = {}
    orig = ep.poll_cq

    def poll(*args):
        out = orig(*args)
        for c in out:
            times[c.wr_id] = lb.now
        return out
    ep.poll_cq = poll
    return times


def test_small_message_not_behind_other_stream():
    """MR-CONN-002, MR-ENG-030: a 4 KiB write on stream 1 posted while a 4 MiB write on stream 0
    is in full flow completes within 3 base RTTs plus its serialization; the big write loses
    less than 5 % of its goodput."""
    big = 4 << 20
    t_post = 60e-6                       # the big write is past its start, its window full
    a, b, ca, ka, kb, src, dst = _setup()
    ca.post_write(0, ka, 0, big, 0, kb, wr_id=0)
    lb = Loopback(a, b, delay=DELAY)
    times = _timed(lb, a)
    lb.run(until=t_post)
    assert not lb.completions[0] and ca.s_active
    ca.post_write(1, ka, big, 4096, big, kb, wr_id=1)
    lb.run(until=0.05)
    assert [c.wr_id for c in lb.completions[0]] == [1, 0]
    assert all(c.status == Status.SUCCESS for c in lb.completions[0])
    assert dst[:big + 4096] == src[:big + 4096]
    base_rtt = 2 * DELAY
    assert times[1] - t_post <= 3 * base_rtt + (4096 + 114) * 8 / RATE
    # the big write alone
    a3, b3, ca3, ka3, kb3, _, _ = _setup()
    ca3.post_write(0, ka3, 0, big, 0, kb3, wr_id=0)
    lb3 = Loopback(a3, b3, delay=DELAY)
    alone = _timed(lb3, a3)
    lb3.run(until=0.05)
    assert alone[0] / times[0] >= 0.95


def test_backlogged_streams_alternate_per_packet():
    """MR-ENG-030: two streams with backlogs take turns packet by packet."""
    a, b, ca, ka, kb, src, dst = _setup(streams=3)
    ca.post_write(0, ka, 0, 64 * 4096, 0, kb, wr_id=0)
    ca.post_write(2, ka, 0, 64 * 4096, 1 << 20, kb, wr_id=2)
    order = []
    orig = a.next_packet

    def watch(now):
        f = orig(now)
        if f is not None and f.mrdh is not None and not f.mrdh.flags & 2:   # not a resend
            order.append(f.mrdh.stream)
        return f
    a.next_packet = watch
    lb = Loopback(a, b, delay=DELAY)
    lb.run(until=0.01)
    assert len(lb.completions[0]) == 2
    assert order[:128].count(0) == order[:128].count(2) == 64
    # strictly alternating while both have chunks left
    assert all(order[i] != order[i + 1] for i in range(127))


def test_slots_leave_room_for_other_streams():
    """MR-ENG-013, MR-ENG-030: a stream with many queued messages never takes the last free
    message slot while another stream waits, so the other stream's message starts at once."""
    a, b, ca, ka, kb, src, dst = _setup(max_tx_msgs=4)
    for i in range(20):
        ca.post_write(0, ka, 0, 4096, 0, kb, wr_id=100 + i)
    ca.post_write(1, ka, 0, 4096, 1 << 20, kb, wr_id=1)
    lb = Loopback(a, b, delay=DELAY)
    lb.run(until=0.01)
    ids = [c.wr_id for c in lb.completions[0]]
    assert len(ids) == 21 and ids.index(1) <= 4
    assert [i for i in ids if i >= 100] == list(range(100, 120))


def test_bench_streams_smoke(capsys):
    """MR-ENG-030: ``metaroce bench streams --json`` rows carry the documented fields."""
    rc = main(["bench", "streams", "--big", "2Mi", "--json", "--no-plot", "--jobs", "1"])
    obj = json.loads(capsys.readouterr().out)
    assert rc == 0 and [r["protocol"] for r in obj["rows"]] == ["metaroce", "rocev2"]
    for r in obj["rows"]:
        assert {"protocol", "small_fct_us", "base_rtt_us", "big_goodput_gbps", "delivered_ok"} <= set(r)
        assert r["delivered_ok"] is True and r["small_fct_us"] < 3 * r["base_rtt_us"] + 0.1
    assert main(["bench", "streams", "--small-at", "-1"]) == 2
