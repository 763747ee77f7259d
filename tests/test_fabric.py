"""Fabric simulator: event loop, timing, ECMP, ECN, drop-tail, faults, planes, pcap (MR-FAB-*).

The unit tests drive the fabric with a tiny traffic source of their own (``ToySender`` /
``ToyReceiver``: a selective-repeat write over the endpoint contract's transport side), so they
check the fabric without depending on the protocol's endpoints; ``test_endpoint_*`` at the end run
the real MetaRoCE and RoCEv2 endpoints over every fault kind. Every run that moves data checks that
the receiver's memory equals the source and that every completion arrives exactly once.
"""
import dataclasses
import json
import random
import subprocess
import sys

import pytest

from metaroce.models import codec, pcap, wire
from metaroce.models.codec import MRAH, MRDH, RETH, make, wire_len
from metaroce.sim import fabric
from metaroce.sim.fabric import FRAME_OVERHEAD, Link, OutPort, Sim, ecmp_hash, plane_of
from metaroce.sim.faults import Faults, GilbertElliott
from metaroce.sim.topology import Fabric


# ---------------------------------------------------------------------------------------------
# A toy transport: fixed window, selective repeat, per-packet ACK, fixed retransmission timer.

class ToySender:
    def __init__(self, addr, peer, data, *, mtu=1024, window=16, rto=50e-6, paths=1, base=0):
        self.addr, self.peer, self.data, self.mtu, self.base = addr, peer, data, mtu, base
        self.n = (len(data) + mtu - 1) // mtu
        self.window, self.rto, self.paths = window, rto, paths
        self.next = 0
        self.sent_at = {}       # psn -> time last sent, for unacked packets
        self.acked = set()
        self.retx = []
        self.done = False
        self.cq = []
        self.stats = {"sent": 0, "retransmitted": 0}

    def _frame(self, i):
        off = i * self.mtu
        payload = self.data[off:off + self.mtu]
        path = i % self.paths
        f = make(wire.Op.MR_WRITE, payload,
                 mrdh=MRDH(path=path, offset=off, msg_len=len(self.data)),
                 reth=RETH(va=self.base + off, rkey=1, dma_len=len(payload)))
        f.ip = codec.IP(src=self.addr, dst=self.peer)
        f.udp = codec.UDP(sport=wire.ENTROPY_BASE + path)
        f.bth.psn = i
        return f

    def next_packet(self, now):
        for psn, t in self.sent_at.items():
            if now - t >= self.rto:
                self.sent_at[psn] = now
                self.stats["retransmitted"] += 1
                self.stats["sent"] += 1
                return self._frame(psn)
        if self.next < self.n and len(self.sent_at) < self.window:
            i = self.next
            self.next += 1
            self.sent_at[i] = now
            self.stats["sent"] += 1
            return self._frame(i)
        return None

    def next_wakeup(self, now):
        return min(self.sent_at.values()) + self.rto if self.sent_at else None

    def receive(self, frame, now):
        psn = frame.mrah.cum_psn
        self.sent_at.pop(psn, None)
        self.acked.add(psn)
        if len(self.acked) == self.n and not self.done:
            self.done = True
            self.cq.append(("write", len(self.data)))

    def poll_cq(self, max_entries=None):
        out, self.cq = self.cq, []
        return out


class ToyReceiver:
    def __init__(self, addr, size, mtu=1024, senders=1):
        self.addr = addr
        self.mem = bytearray(size * senders)
        self.mtu = mtu
        self.got = set()
        self.acks = []
        self.cq = []
        self.n = senders * ((size + mtu - 1) // mtu)
        self.ce = 0

    def next_packet(self, now):
        return self.acks.pop(0) if self.acks else None

    def next_wakeup(self, now):
        return None

    def receive(self, frame, now):
        if frame.ip.ecn == 3:
            self.ce += 1
        psn = frame.bth.psn
        if (frame.ip.src, psn) not in self.got:
            self.got.add((frame.ip.src, psn))
            off = frame.reth.va
            self.mem[off:off + len(frame.payload)] = frame.payload
            if len(self.got) == self.n:
                self.cq.append(("recv", len(self.mem)))
        a = make(wire.Op.MR_ACK, mrah=MRAH(path=frame.mrdh.path, cum_psn=psn))
        a.ip = codec.IP(src=self.addr, dst=frame.ip.src, ecn=0)
        a.udp = codec.UDP(sport=frame.udp.sport)
        self.acks.append(a)

    def poll_cq(self, max_entries=None):
        out, self.cq = self.cq, []
        return out


def toy_transfer(fab, size=64 * 1024, mtu=1024, until=0.05, **kw):
    data = random.Random(size).randbytes(size)
    s, r = fab.hosts[0], fab.hosts[-1]
    s.ep = ToySender(s.addr, r.addr, data, mtu=mtu, **kw)
    r.ep = ToyReceiver(r.addr, size, mtu)
    s.kick()
    fab.sim.run(until=until)
    return data, s, r


def check_integrity(data, s, r):
    assert bytes(r.ep.mem) == data
    assert [c for _, c in s.completions] == [("write", len(data))]
    assert [c for _, c in r.completions] == [("recv", len(data))]


# ---------------------------------------------------------------------------------------------
# Event loop and timing

def test_event_loop_order_until_and_stop():
    """MR-FAB-000: events run in time order, same-time events in scheduling order."""
    sim = Sim()
    log = []
    for t, tag in [(3e-6, "c"), (1e-6, "a"), (1e-6, "b"), (5e-6, "e")]:
        sim.at(t, log.append, tag)
    sim.at(4e-6, lambda _: sim.stop())
    sim.run()
    assert log == ["a", "b", "c"] and sim.now == 4e-6
    sim.run(until=4.5e-6)
    assert log == ["a", "b", "c"] and sim.now == 4.5e-6
    sim.run()
    assert log == ["a", "b", "c", "e"]


def test_serialisation_and_propagation_timing():
    """MR-FAB-001/002: a frame takes (wire_len + 24) * 8 / rate per hop plus the link delay."""
    fab = Fabric(2, rate_bps=100e9, rtt=8e-6)
    f = make(wire.Op.MR_WRITE, bytes(4096))
    f.ip = codec.IP(src=fab.hosts[0].addr, dst=fab.hosts[1].addr)
    arrivals = []

    class Once:
        sent = False

        def next_packet(self, now):
            if self.sent:
                return None
            self.sent = True
            return f

        def next_wakeup(self, now):
            return None

        def receive(self, frame, now):
            arrivals.append((now, frame))

        def poll_cq(self, max_entries=None):
            return []

    fab.hosts[0].ep, fab.hosts[1].ep = Once(), Once()
    fab.hosts[1].ep.sent = True
    fab.hosts[0].kick()
    fab.sim.run()
    ser = (wire_len(f) + FRAME_OVERHEAD) * 8 / 100e9
    assert len(arrivals) == 1
    assert arrivals[0][0] == pytest.approx(2 * (ser + 2e-6), rel=1e-12)
    assert wire_len(f) == 14 + 20 + 8 + 12 + 16 + 16 + 4096 + 4


def test_toy_transfer_lossless_line_rate():
    """A window-limited transfer through one switch delivers every byte once, near line rate."""
    fab = Fabric(2, rate_bps=100e9, rtt=8e-6)
    data, s, r = toy_transfer(fab, size=256 * 1024, mtu=4096, window=64)
    check_integrity(data, s, r)
    t_done = s.completions[0][0]
    ideal = 64 * (4096 + 90 + FRAME_OVERHEAD) * 8 / 100e9
    assert ideal < t_done < ideal + 2 * 8e-6 + 1e-6
    assert s.ep.stats["retransmitted"] == 0


def test_multiplane_host_uses_every_port():
    """MR-FAB-020: a host with one NIC port per plane sends on all of them at once: four planes
    carry a window-unlimited write about four times as fast as one."""
    times = {}
    for planes in (1, 4):
        fab = Fabric(2, planes=planes, rate_bps=100e9, rtt=8e-6)
        data, s, r = toy_transfer(fab, size=512 * 1024, mtu=4096, window=128, paths=8)
        check_integrity(data, s, r)
        times[planes] = s.completions[0][0]
        assert all(fab.links[f"h0>p{p}.leaf0"].stats["frames"] == 128 // planes for p in range(planes))
    ideal = 128 * (4096 + 90 + FRAME_OVERHEAD) * 8 / 100e9
    assert times[1] == pytest.approx(ideal + 8e-6, rel=0.05)
    assert times[4] == pytest.approx(ideal / 4 + 8e-6, rel=0.05)


def test_free_port_never_waits_behind_other_ports():
    """MR-FAB-021: a port's FIFO holds NIC_TX_FIFO_FRAMES frames behind the one it sends, and the
    host's transmit engine stalls only on a frame whose own port's FIFO is full: two busy ports
    with full FIFOs do not keep a third idle, and a frame for a full FIFO holds back the frames
    behind it (head of line), though port 2 is free, until that port takes its next frame."""
    from metaroce.benches.simspeed import _Blaster
    d = fabric.NIC_TX_FIFO_FRAMES
    order = [0] * (d + 1) + [1] * (d + 1) + [3, 0, 2, 2]
    fab = Fabric(2, planes=4, rate_bps=100e9, rtt=8e-6)
    frames = []
    for p in order:
        f = make(wire.Op.MR_WRITE, bytes(4096))
        f.ip = codec.IP(src=fab.hosts[0].addr, dst=fab.hosts[1].addr)
        f.plane = p
        frames.append(f)

    h = fab.hosts[0]
    h.ep, fab.hosts[1].ep = _Blaster(frames[::-1], len(frames)), _Blaster([], 0)   # sends in order
    pulled = []
    h.tx_hook = lambda f, now: pulled.append(now)
    h.kick()
    fab.sim.run()
    ser = (wire_len(frames[0]) + FRAME_OVERHEAD) * 8 / 100e9
    n = 2 * (d + 1)
    assert pulled[:n + 2] == [0.0] * (n + 2)        # port 3 starts at once; the next port-0 frame is held
    assert pulled[n + 2:] == pytest.approx([ser, ser], rel=1e-12)   # port 2 waits for port 0's FIFO
    assert [fab.links[f"h0>p{p}.leaf0"].stats["frames"] for p in range(4)] == [d + 2, d + 1, 2, 1]


# ---------------------------------------------------------------------------------------------
# Switch: ECMP, ECN, drop tail

def test_ecmp_hash_is_stable_and_spreads():
    """MR-FAB-012: the 5-tuple hash is a pure function; a flow keeps its route; entropies spread."""
    f = make(wire.Op.MR_WRITE)
    f.ip = codec.IP(src="10.0.0.1", dst="10.0.0.2")
    f.udp = codec.UDP(sport=50000)
    h = ecmp_hash(f, 7)
    assert h == ecmp_hash(dataclasses.replace(f), 7)
    # The value is fixed across processes and Python hash seeds.
    out = subprocess.run([sys.executable, "-c",
                          "from metaroce.models import codec, wire; from metaroce.sim.fabric import ecmp_hash;"
                          "f = codec.make(wire.Op.MR_WRITE); f.ip = codec.IP(src='10.0.0.1', dst='10.0.0.2');"
                          "f.udp = codec.UDP(sport=50000); print(ecmp_hash(f, 7))"],
                         capture_output=True, text=True, check=True, env={"PYTHONHASHSEED": "123"})
    assert int(out.stdout) == h
    assert ecmp_hash(f, 8) != h
    f.udp.sport += 1
    assert ecmp_hash(f, 7) != h
    # In a leaf-spine plane, 32 entropies use all 4 spines, and one entropy only ever one spine.
    fab = Fabric(2, leaves=2, spines=4, rate_bps=100e9, rtt=8e-6)
    data, s, r = toy_transfer(fab, size=128 * 1024, paths=32)
    check_integrity(data, s, r)
    used = [fab.ports[f"p0.leaf0>p0.spine{k}"].stats["enqueued"] for k in range(4)]
    assert all(u > 0 for u in used) and sum(used) == s.ep.stats["sent"]
    fab = Fabric(2, leaves=2, spines=4, rate_bps=100e9, rtt=8e-6)
    data, s, r = toy_transfer(fab, size=64 * 1024, paths=1)
    used = [fab.ports[f"p0.leaf0>p0.spine{k}"].stats["enqueued"] for k in range(4)]
    assert sorted(used)[:3] == [0, 0, 0]
    check_integrity(data, s, r)


class _Sink:
    def __init__(self):
        self.got = []

    def receive(self, frame, port):
        self.got.append(frame)


def _burst_into_port(n, size_payload, buffer_bytes, thr, ecn=2):
    sim = Sim()
    sink = _Sink()
    port = OutPort(sim, Link(sim, "x", 100e9, 1e-6, sink), buffer_bytes, thr)
    frames = []
    for i in range(n):
        f = make(wire.Op.MR_WRITE, bytes(size_payload))
        f.ip.ecn = ecn
        f.bth.psn = i
        f._wl = wire_len(f)
        frames.append(f)
        port.enqueue(f)
    sim.run()
    return port, frames, sink.got


def test_ecn_marks_above_threshold_only_ect():
    """MR-FAB-011: an ECT frame finding more than the threshold queued is marked CE; the
    sender's frame object is not changed; non-ECT frames are never marked."""
    size = wire_len(make(wire.Op.MR_WRITE, bytes(1000)))
    port, frames, got = _burst_into_port(10, 1000, None, 2 * size)
    # Frame k finds k frames queued (the first is still serialising): marked when k*size > 2*size.
    assert [f.ip.ecn for f in got] == [2, 2, 2] + [3] * 7
    assert port.stats["marked"] == 7
    assert all(f.ip.ecn == 2 for f in frames)
    assert [f.bth.psn for f in got] == list(range(10))
    port, frames, got = _burst_into_port(10, 1000, None, 2 * size, ecn=0)
    assert [f.ip.ecn for f in got] == [0] * 10 and port.stats["marked"] == 0


def test_ecn_settings_changed_after_construction_apply():
    """MR-FAB-011/014: the FIFO port tests one precomputed bound (``_ecn_q``) per frame; setting
    ``ecn_threshold`` or ``red`` on a built port (as scenario files do) moves it: no step
    marking at None, the new threshold otherwise, RED's kmin (no draw at or below it)."""
    size = wire_len(make(wire.Op.MR_WRITE, bytes(1000)))
    sim = Sim()
    port = OutPort(sim, Link(sim, "x", 100e9, 1e-6, _Sink()), None, 2 * size)
    assert port.ecn_threshold == 2 * size and port._ecn_q == 2 * size
    port.ecn_threshold = None
    assert port._ecn_q == float("inf")
    for i in range(10):
        port.enqueue(_frame_of(1000))
    assert port.stats["marked"] == 0
    port.ecn_threshold = 0
    port.enqueue(_frame_of(1000))
    assert port.stats["marked"] == 1
    port._red_rng = random.Random(1)
    port.red = Red(10 ** 9, 2 * 10 ** 9, 0.5)      # kmin far above the queue: never marks
    assert port.red.kmin == port._ecn_q == 10 ** 9
    port.enqueue(_frame_of(1000))
    assert port.stats["marked"] == 1 and port._red_rng.random() == random.Random(1).random()
    port.red = None
    assert port._ecn_q == 0


def test_drop_tail_at_finite_buffer():
    """MR-FAB-010: a frame that does not fit the buffer is dropped; earlier frames pass."""
    size = wire_len(make(wire.Op.MR_WRITE, bytes(1000)))
    port, frames, got = _burst_into_port(8, 1000, 5 * size, None)
    assert [f.bth.psn for f in got] == [0, 1, 2, 3, 4]
    assert port.stats["drops"] == 3 and port.stats["peak_bytes"] == 5 * size


def test_incast_queue_builds_and_drops():
    """Eight senders into one receiver port: the receiver's port queues, marks and drops."""
    fab = Fabric(9, rate_bps=100e9, rtt=8e-6, buffer_bytes=64 * 1024, ecn_threshold=16 * 1024)
    size = 32 * 1024
    datas = []
    for i in range(8):
        d = random.Random(i).randbytes(size)
        datas.append(d)
        fab.hosts[i].ep = ToySender(fab.hosts[i].addr, fab.hosts[8].addr, d, window=16, rto=100e-6,
                                    base=i * size)
        fab.hosts[i].kick()
    r = fab.hosts[8]
    r.ep = ToyReceiver(r.addr, size, senders=8)
    fab.sim.run(until=0.05)
    assert bytes(r.ep.mem) == b"".join(datas)
    assert [c for _, c in r.completions] == [("recv", 8 * size)]
    port = fab.ports["p0.leaf0>h8"]
    assert port.stats["drops"] > 0 and port.stats["marked"] > 0
    assert port.stats["peak_bytes"] <= 64 * 1024
    assert all(h.ep.done for h in fab.hosts[:8])
    assert all(len(h.completions) == 1 for h in fab.hosts[:8])


# ---------------------------------------------------------------------------------------------
# Faults (MR-FAB-030..035)

def _lossy(faults, links=("h0>p0.leaf0",), **kw):
    fab = Fabric(2, rate_bps=100e9, rtt=8e-6)
    fab.set_faults(faults, list(links))
    data, s, r = toy_transfer(fab, **kw)
    return fab, data, s, r


def test_random_loss_rate_and_recovery():
    """MR-FAB-030: independent loss at the configured rate on data frames only; data intact."""
    fab, data, s, r = _lossy(Faults(loss=0.1, seed=1), size=512 * 1024)
    check_integrity(data, s, r)
    st = fab.links["h0>p0.leaf0"].stats
    assert 0.05 < st["lost"] / st["frames"] < 0.15
    fab2, *_ = _lossy(Faults(loss=1.0, seed=1), links=("h1>p0.leaf0",), size=8 * 1024)
    assert fab2.links["h1>p0.leaf0"].stats["lost"] == 0       # ACKs pass: data_only


def test_faults_are_reproducible():
    """MR-FAB-030: the same seed gives the same drops; another seed other drops."""
    a = _lossy(Faults(loss=0.1, seed=5), size=128 * 1024)[0].links["h0>p0.leaf0"].stats
    b = _lossy(Faults(loss=0.1, seed=5), size=128 * 1024)[0].links["h0>p0.leaf0"].stats
    c = _lossy(Faults(loss=0.1, seed=6), size=128 * 1024)[0].links["h0>p0.leaf0"].stats
    assert a == b and a != c


def test_gilbert_elliott_bursts():
    """MR-FAB-031: losses come in bursts (runs of consecutive lost frames)."""
    ge = GilbertElliott(p_gb=0.02, p_bg=0.25)
    assert ge.mean_loss() == pytest.approx(0.02 / 0.27)
    f = Faults(burst=ge, seed=3)
    rng = f.rng_for("x")
    lost = [f.lose(rng, wire.Op.MR_WRITE) for _ in range(20000)]
    rate = sum(lost) / len(lost)
    runs = sum(1 for i in range(1, len(lost)) if lost[i] and not lost[i - 1])
    assert 0.05 < rate < 0.10
    assert sum(lost) / runs > 3            # mean burst about 1 / p_bg = 4
    fab, data, s, r = _lossy(Faults(burst=ge, seed=3), size=256 * 1024)
    check_integrity(data, s, r)
    assert fab.links["h0>p0.leaf0"].stats["lost"] > 0


def test_reordering_delivers_out_of_order():
    """MR-FAB-032: held-back frames arrive after later ones; nothing is lost."""
    fab = Fabric(2, rate_bps=100e9, rtt=8e-6)
    fab.set_faults(Faults(reorder=0.2, reorder_delay=5e-6, seed=2), ["h0>p0.leaf0"])
    order = []
    data = random.Random(0).randbytes(64 * 1024)
    s, r = fab.hosts
    s.ep = ToySender(s.addr, r.addr, data, window=32, rto=200e-6)
    r.ep = ToyReceiver(r.addr, len(data))
    orig = r.ep.receive
    r.ep.receive = lambda f, now: (order.append(f.bth.psn), orig(f, now))
    s.kick()
    fab.sim.run(until=0.05)
    check_integrity(data, s, r)
    assert order != sorted(order) and sorted(set(order)) == list(range(64))
    assert fab.links["h0>p0.leaf0"].stats["delayed"] > 0 and s.ep.stats["retransmitted"] == 0


def test_duplication_completes_once():
    """MR-FAB-033: duplicated frames arrive twice; the transfer still completes exactly once."""
    fab, data, s, r = _lossy(Faults(duplicate=0.3, seed=4), size=64 * 1024)
    check_integrity(data, s, r)
    st = fab.links["h0>p0.leaf0"].stats
    assert st["duplicated"] > 5 and st["delivered"] == st["frames"] + st["duplicated"]
    assert fab.hosts[1].stats["rx"] == st["delivered"]


def test_corruption_is_caught_by_the_decoder():
    """MR-FAB-034: a flipped bit reaches the host as bytes; decode drops it with a reason
    (ICRC, IP checksum, ...) and counts it; the transfer recovers by retransmission."""
    fab, data, s, r = _lossy(Faults(corrupt=0.2, seed=9), links=("p0.leaf0>h1",), size=128 * 1024)
    check_integrity(data, s, r)
    hs = fab.hosts[1].stats
    st = fab.links["p0.leaf0>h1"].stats
    assert st["corrupted"] > 10
    assert hs["decode_drops"] + hs["corrupt_undetected"] == st["corrupted"]
    assert hs["decode_drops"] >= 0.8 * st["corrupted"]
    assert "icrc" in hs["decode_reasons"]
    assert s.ep.stats["retransmitted"] >= hs["decode_drops"]
    # Corruption before a switch fails the (not bit-modelled) FCS there: dropped at the switch.
    fab, data, s, r = _lossy(Faults(corrupt=0.2, seed=9), size=64 * 1024)
    check_integrity(data, s, r)
    assert fab.switches["p0.leaf0"].stats["fcs_drops"] == fab.links["h0>p0.leaf0"].stats["corrupted"] > 0


def test_link_down_and_up():
    """MR-FAB-035: frames sent while a link is down are lost; it carries again once up."""
    fab = Fabric(2, rate_bps=100e9, rtt=8e-6)
    fab.link_down("p0.leaf0>h1", at=2e-6, until=30e-6)
    data, s, r = toy_transfer(fab, size=128 * 1024, rto=20e-6)
    check_integrity(data, s, r)
    assert fab.links["p0.leaf0>h1"].stats["down_drops"] > 0
    assert s.completions[0][0] > 30e-6


def test_plane_down_and_up():
    """MR-FAB-035/020: path i goes on plane i % P; a plane that is down
    drops everything on it, other planes carry on; after it is back the transfer completes."""
    fab = Fabric(2, planes=4, rate_bps=100e9, rtt=8e-6)
    fab.plane_down(1, at=0.0, until=40e-6)
    data, s, r = toy_transfer(fab, size=128 * 1024, paths=8, window=32, rto=20e-6)
    check_integrity(data, s, r)
    for p in range(4):
        up = fab.links[f"h0>p{p}.leaf0"].stats
        assert up["frames"] > 0
        assert (up["down_drops"] > 0) == (p == 1)
    assert s.completions[0][0] > 40e-6
    f = make(wire.Op.MR_WRITE, mrdh=MRDH(path=6))
    assert plane_of(f, 4) == 2
    f.bth.dest_qp = 3
    assert plane_of(f, 4) == 2 and plane_of(f, 1) == 0
    f.plane = 3
    assert plane_of(f, 4) == 3


# ---------------------------------------------------------------------------------------------
# pcap capture

def test_pcap_capture_decodes(tmp_path):
    """MR-FAB-040: a captured link's pcap decodes with the codec and with `metaroce decode`;
    CE marks and corrupted frames appear as delivered."""
    fab = Fabric(2, rate_bps=100e9, rtt=8e-6, ecn_threshold=0)
    fab.set_faults(Faults(corrupt=0.1, seed=1), ["p0.leaf0>h1"])
    fab.capture("p0.leaf0>h1", tmp_path / "down.pcap")
    fab.capture("p0.leaf0>h0", tmp_path / "acks.pcap")
    data, s, r = toy_transfer(fab, size=32 * 1024)
    fab.close()
    check_integrity(data, s, r)
    recs = pcap.read(tmp_path / "down.pcap")
    assert len(recs) == fab.links["p0.leaf0>h1"].stats["delivered"]
    ok = bad = ce = 0
    for rec in recs:
        try:
            f = codec.decode(rec.data)
            ok += 1
            ce += f.ip.ecn == 3
            assert f.bth.opcode == wire.Op.MR_WRITE
        except codec.DecodeError:
            bad += 1
    assert bad == fab.hosts[1].stats["decode_drops"] and ok > 0 and ce > 0
    assert all(b.ts >= a.ts for a, b in zip(recs, recs[1:]))
    out = subprocess.run([sys.executable, "-m", "metaroce", "decode", "--json", str(tmp_path / "acks.pcap")],
                         capture_output=True, text=True, check=True)
    objs = [json.loads(x) for x in out.stdout.splitlines()]
    assert objs and all(o["ok"] and o["bth"]["opcode"] == wire.Op.MR_ACK for o in objs)


# ---------------------------------------------------------------------------------------------
# The real endpoints on the fabric under every fault kind (MR-FAB-050/051)

from metaroce.sim.harness import Flow, run_writes  # noqa: E402

FAULTS = {
    "none": lambda fab: None,
    "loss": lambda fab: fab.set_faults(Faults(loss=0.05, seed=1), ["h0>p0.leaf0"]),
    "burst": lambda fab: fab.set_faults(Faults(burst=GilbertElliott(0.01, 0.3), seed=2), ["h0>p0.leaf0"]),
    "reorder": lambda fab: fab.set_faults(Faults(reorder=0.1, reorder_delay=4e-6, seed=3), ["h0>p0.leaf0"]),
    "duplicate": lambda fab: fab.set_faults(Faults(duplicate=0.1, seed=4), ["h0>p0.leaf0", "p0.leaf0>h1"]),
    "corrupt": lambda fab: fab.set_faults(Faults(corrupt=0.05, seed=5), ["p0.leaf0>h1", "p0.leaf0>h0"]),
    "ack_loss": lambda fab: fab.set_faults(Faults(loss=0.05, data_only=False, seed=6), ["h1>p0.leaf0"]),
    "link_down_up": lambda fab: fab.link_down("p0.leaf0>h1", at=20e-6, until=60e-6),
}


@pytest.mark.parametrize("kind", ["metaroce", "rocev2"])
@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_endpoint_write_under_fault(kind, fault):
    """MR-FAB-051 with the endpoints: one 1 MiB write under each fault kind lands intact and
    completes exactly once; a fault that loses frames makes the sender retransmit."""
    fab = Fabric(2, rate_bps=100e9, rtt=8e-6)
    FAULTS[fault](fab)
    res = run_writes(fab, [Flow(0, 1, 1 << 20, paths=4)], kind, until=0.5)
    assert res.all_done and res.delivered_ok, (kind, fault, res.stats)
    if fault in ("loss", "burst", "corrupt", "link_down_up"):
        assert res.stats["retransmitted"] > 0
    if fault == "corrupt":
        assert fab.hosts[1].stats["decode_drops"] > 0


def _xcache_fresh(conn):
    """MR-REL-009's caches of a connection equal a fresh computation: the overdue group count of
    its lost-ACK estimate, and per path the send time of the ``need``-th live AckReq record."""
    from metaroce.models import protocol as P
    loss, need_now = conn.xneed
    assert need_now == P.overdue_groups(loss)
    for p in conn.paths:
        if p.xcache is None:
            continue
        need, t = p.xcache
        sent = [r.t for r in p.records() if r.req and not r.lost]
        assert t == (sent[need - 1] if len(sent) >= need else None), (p.idx, need, t, sent[:need])


@pytest.mark.parametrize("fault", [
    Faults(loss=0.05, seed=1), Faults(loss=0.05, data_only=False, seed=6),
    Faults(reorder=0.1, reorder_delay=4e-6, seed=3)], ids=["loss", "ack_loss", "reorder"])
def test_endpoint_cross_path_caches_stay_exact(fault):
    """The speed-ups of MR-REL-009 (docs/benchmarks.md, simspeed) cache each path's due time
    (``xcache``) and the overdue group count (``xneed``) until their inputs change; before every
    frame a host receives, every cached answer equals a fresh scan of the path's records, under
    data loss, ACK loss and reordering."""
    fab = Fabric(2, leaves=2, spines=4, rate_bps=100e9, rtt=8e-6, spine_skew=1e-6)
    fab.set_faults(fault, ["h0>p0.leaf0", "h1>p0.leaf1"])     # data and ACKs, leaving each host
    checked = [0]

    def hook(frame, now):
        for h in fab.hosts:
            for c in h.ep._conns.values():
                _xcache_fresh(c)
                checked[0] += 1
    for h in fab.hosts:
        h.rx_hook = hook
    res = run_writes(fab, [Flow(0, 1, 1 << 20, paths=8)], "metaroce", until=0.5)
    assert res.all_done and res.delivered_ok and checked[0] > 500
    if fault.loss:
        assert res.stats["retransmitted"] > 0


@pytest.mark.parametrize("kind", ["metaroce", "rocev2"])
def test_endpoint_plane_down_and_up(kind):
    """MR-FAB-035: a plane fails mid-transfer and comes back; every byte lands exactly once."""
    fab = Fabric(2, planes=4, rate_bps=100e9, rtt=8e-6)
    fab.plane_down(1, at=10e-6, until=80e-6)
    res = run_writes(fab, [Flow(0, 1, 2 << 20, paths=8)], kind, until=0.5)
    assert res.all_done and res.delivered_ok, res.stats
    assert fab.links["h0>p1.leaf0"].stats["down_drops"] + fab.links["p1.leaf0>h1"].stats["down_drops"] > 0


def test_endpoints_many_flows_leaf_spine():
    """Four concurrent writes sprayed over a leaf-spine with unequal spine delays: intact."""
    fab = Fabric(8, leaves=2, spines=4, rate_bps=100e9, rtt=8e-6, spine_skew=1e-6)
    flows = [Flow(2 * i, 2 * i + 1, 512 * 1024, paths=16) for i in range(4)]
    res = run_writes(fab, flows, "metaroce", until=0.5)
    assert res.all_done and res.delivered_ok
    assert sum(fab.ports[f"p0.leaf0>p0.spine{k}"].stats["enqueued"] > 0 for k in range(4)) == 4


@pytest.mark.parametrize("kind", ["metaroce", "rocev2"])
def test_missing_bytes_never_complete(kind):
    """MR-FAB-051 (issue item 7): when the receiver's link dies for good mid-transfer, the
    receiver's memory is incomplete and the write never completes successfully."""
    fab = Fabric(2, rate_bps=100e9, rtt=8e-6)
    fab.link_down("p0.leaf0>h1", at=20e-6)
    res = run_writes(fab, [Flow(0, 1, 1 << 20, paths=4)], kind, until=0.01)
    fr = res.flows[0]
    assert not fr.data_ok
    assert fr.completions == 0 or not fr.ok_status
    assert not res.delivered_ok and res.unexpected_completions == 0


def test_endpoint_reordering_across_paths_no_cross_path_loss():
    """MR-REL-009, MR-SEQ-003: spraying over 64 paths through 8 spines whose round trips differ by
    up to 28 us (2.8 base RTTs, as in `bench spray`) reorders packets across paths; the
    cross-path loss bound uses each path's own lowest RTT, so nothing is declared lost and
    nothing is resent."""
    fab = Fabric(4, leaves=2, spines=8, rate_bps=400e9, rtt=10e-6, spine_skew=1e-6, seed=2)
    res = run_writes(fab, [Flow(0, 1, 4 << 20, paths=64), Flow(2, 3, 4 << 20, paths=64)],
                     "metaroce", until=0.5)
    assert res.delivered_ok and res.all_done
    st = res.stats
    assert st.get("xpath_losses", 0) == 0 and st.get("spurious_retransmits", 0) == 0
    assert st.get("retransmitted", 0) == 0 and st.get("timeouts", 0) == 0


def test_endpoint_silent_path_suspected_within_1_5_rtts():
    """MR-REL-009, MR-REL-010, MR-PATH-001, MR-PATH-002, MR-PATH-004: a spine uplink dies
    mid-transfer; the paths hashed onto the dead spine are declared lost and suspected within
    1.5 RTTs of the failure, by the cross-path bound or by their timers (the bound now waits for
    a second silent ACK group, so that one lost ACK costs nothing; on these paths that group
    comes due just after the 1.5-RTT timer); every byte arrives once, with no spurious resend
    but the second copies of MR-REL-012 (on by default, MR-REL-013)."""
    rtt, t_fail = 10e-6, 100e-6
    fab = Fabric(2, leaves=2, spines=4, rate_bps=400e9, rtt=rtt, seed=1)
    fab.link_down("p0.leaf0>p0.spine1", at=t_fail)
    seen = {}

    def look(_=None):
        st = fab.hosts[0].ep.stats
        seen.update(suspected=st["paths_suspected"], timeouts=st["timeouts"], xpath=st["xpath_losses"])
    fab.sim.at(t_fail + 1.5 * rtt, look)
    res = run_writes(fab, [Flow(0, 1, 16 << 20, paths=8)], "metaroce", until=0.5)
    assert res.delivered_ok and res.all_done
    assert fab.links["p0.leaf0>p0.spine1"].stats["down_drops"] > 0
    assert seen["suspected"] > 0 and seen["xpath"] + seen["timeouts"] > 0
    assert res.stats.get("spurious_retransmits", 0) <= res.stats.get("resends_doubled", 0)


def test_endpoint_incast_hint_from_first_ack():
    """MR-CC-005, MR-CC-008, MR-CC-009, MR-CC-010, MR-CC-007: 16 senders start together into one
    receiver: the first windows (2 packets each) fit the switch buffer, every sender is paced at
    the fair share (hint updates as the receiver counts newcomers), so there are no drops, no
    retransmissions, and all finish within a few percent of each other."""
    n = 16
    fab = Fabric(n + 1, rate_bps=100e9, rtt=8e-6, seed=1)
    res = run_writes(fab, [Flow(i, n, 256 << 10, paths=8) for i in range(n)], "metaroce", until=0.5)
    assert res.delivered_ok and res.all_done
    assert fab.switch_drops() == 0 and res.stats.get("retransmitted", 0) == 0
    assert res.stats["hint_updates"] > 0
    fcts = [r.t_done for r in res.flows]
    assert max(fcts) < 1.05 * min(fcts)
    ideal = n * (256 << 10) * 8 / 100e9
    assert max(fcts) < 1.25 * ideal + 3 * 8e-6


def test_endpoint_incast_128_first_rtt_only():
    """MR-CC-010, MR-CC-009, MR-CC-007, MR-CC-008: 128 sender hosts start together into one
    receiver at 400 Gb/s and 10 us (buffer 2 BDP): the receiver counts the senders still
    arriving, so the first senders seen get about their final share and the queue never
    overflows after the first windows (whose 256 packets overfill the buffer by 18 at most); the
    first-window packets lost there do not hold their connection's hinted window, so every
    sender finishes within a few percent of the others, with no spurious resend."""
    n = 128
    fab = Fabric(n + 1, rate_bps=400e9, rtt=10e-6, seed=1)
    port = fab.ports[f"p0.leaf0>h{n}"]
    port.drop_times = []
    res = run_writes(fab, [Flow(i, n, 96 << 10, paths=8) for i in range(n)], "metaroce",
                     cfg={"mtu": 4096, "line_rate_bps": 400e9, "base_rtt": 10e-6}, until=0.5)
    assert res.delivered_ok and res.all_done
    assert port.stats["drops"] <= 18 and all(t < 10e-6 for t in port.drop_times)
    # each drop comes back once: as a resend, or as the tail probe that re-sends it (MR-REL-010)
    assert res.stats.get("retransmitted", 0) + res.stats.get("probes_sent", 0) == port.stats["drops"]
    assert res.stats.get("spurious_retransmits", 0) == 0
    assert res.stats["hint_updates"] > 0
    fcts = [r.t_done for r in res.flows]
    assert max(fcts) < 1.1 * min(fcts)


def test_endpoint_connections_start_on_different_planes():
    """MR-CONN-004, MR-FAB-020: path i goes on plane i % P, and each connection starts its path
    rotation at local_id % paths, so the first packets of 4 connections leave on 4 planes."""
    fab = Fabric(2, planes=4, rate_bps=100e9, rtt=8e-6)
    first = {}

    def tap(f, now):
        if f.mrdh is not None and f.bth.dest_qp not in first:
            first[f.bth.dest_qp] = plane_of(f, 4)
    fab.hosts[0].tx_hook = tap
    res = run_writes(fab, [Flow(0, 1, 64 << 10, paths=8) for _ in range(4)], "metaroce", until=0.5)
    assert res.delivered_ok and res.all_done
    assert sorted(first.values()) == [0, 1, 2, 3]


# ---------------------------------------------------------------------------------------------
# Switch features: shared buffer, RED, PFC, fat tree, reconvergence, fault direction

from metaroce.sim.fabric import Pfc, Red, SharedBuffer  # noqa: E402


def _frame_of(payload, ecn=2, psn=0):
    f = make(wire.Op.MR_WRITE, bytes(payload))
    f.ip.ecn = ecn
    f.bth.psn = psn
    f._wl = wire_len(f)
    return f


def test_shared_buffer_dynamic_threshold():
    """MR-FAB-013: a port queues a frame only while its queue stays within alpha x free shared
    buffer; a second port then gets what the first left free."""
    size = _frame_of(1000)._wl
    for alpha, first, second in ((1.0, 5, 3), (2.0, 7, 2), (0.5, 3, 2)):
        sim = Sim()
        sb = SharedBuffer(10 * size, alpha)
        a = OutPort(sim, Link(sim, "a", 100e9, 1e-6, _Sink()), shared=sb)
        b = OutPort(sim, Link(sim, "b", 100e9, 1e-6, _Sink()), shared=sb)
        for port in (a, b):
            for i in range(10):
                limit = sb.limit()
                assert limit == pytest.approx(alpha * (sb.total - sb.used))
                before = port.qbytes
                port.enqueue(_frame_of(1000, psn=i))
                # Admitted exactly when the queue stays within the limit seen before it.
                assert (port.qbytes > before) == (before + size <= limit)
        assert (a.stats["enqueued"], b.stats["enqueued"]) == (first, second)
        assert sb.used == a.qbytes + b.qbytes
        sim.run()
        assert sb.used == 0 and a.qbytes == b.qbytes == 0


def test_red_marking_probability():
    """MR-FAB-014: RED marks with probability 0 at or below kmin, pmax x (q - kmin) /
    (kmax - kmin) between (pmax / 2 at the midpoint), 1 at or above kmax; never a non-ECT frame."""
    red = Red(10_000, 50_000, 0.2)
    assert red.prob(10_000) == 0 and red.prob(50_000) == 1 and red.prob(30_000) == pytest.approx(0.1)
    sim = Sim()
    port = OutPort(sim, Link(sim, "x", 100e9, 1e-6, _Sink()), red=red, seed=4)

    def hold(q):                        # the queue holds q bytes at every arrival
        port.deps.clear()
        port.free_at = 0.0
        port.qbytes = q

    for q, expect in ((5_000, 0.0), (30_000, 0.1), (60_000, 1.0)):
        marked0 = port.stats["marked"]
        n = 20_000
        for _ in range(n):
            hold(q)
            port.enqueue(_frame_of(100))
        frac = (port.stats["marked"] - marked0) / n
        assert frac == pytest.approx(expect, abs=0.01)
    marked0 = port.stats["marked"]
    hold(60_000)
    port.enqueue(_frame_of(100, ecn=0))
    assert port.stats["marked"] == marked0 and port.stats["enqueued"] == 60_001


class _Blast:
    """Sends ``n`` copies of one frame (ECN not-ECT), no protocol; counts what it receives."""

    def __init__(self, frame=None, n=0):
        self.frame, self.n, self.got = frame, n, 0

    def next_packet(self, now):
        if self.n <= 0:
            return None
        self.n -= 1
        return self.frame

    def next_wakeup(self, now):
        return None

    def receive(self, frame, now):
        self.got += 1

    def poll_cq(self, max_entries=None):
        return []


def _incast_blast(pfc, senders=4, n=300):
    fab = Fabric(senders + 1, rate_bps=100e9, rtt=8e-6, shared_buffer=256 * 1024, alpha=1.0,
                 pfc=pfc)
    dst = fab.hosts[-1]
    dst.ep = _Blast()
    starts, pauses = {}, {}
    for i in range(senders):
        f = make(wire.Op.MR_WRITE, bytes(4096))
        f.ip = codec.IP(src=fab.hosts[i].addr, dst=dst.addr, ecn=0)
        f.udp = codec.UDP(sport=wire.ENTROPY_BASE + i)
        fab.hosts[i].ep = _Blast(f, n)
        nic = fab.hosts[i].nics[0]
        link = nic.link
        starts[i], pauses[i] = [], []

        def carry(frame, ser, _orig=link.carry, _log=starts[i], _sim=fab.sim):
            _log.append(_sim.now)
            _orig(frame, ser)

        def pause(prio, _orig=nic.pause, _log=pauses[i], _sim=fab.sim):
            _log.append(("off", _sim.now))
            _orig(prio)

        def resume(prio, _orig=nic.resume, _log=pauses[i], _sim=fab.sim):
            _log.append(("on", _sim.now))
            _orig(prio)

        link.carry, nic.pause, nic.resume = carry, pause, resume
        fab.hosts[i].kick()
    fab.sim.run(until=0.01)
    return fab, dst, starts, pauses


def test_pfc_lossless_and_paused_port_sends_nothing():
    """MR-FAB-015: with PFC the switch pauses the senders' ports instead of dropping: every frame
    arrives, no switch drops; a paused port starts no frame until it is resumed. Without PFC the
    same incast drops."""
    fab, dst, starts, pauses = _incast_blast(None)
    assert fab.switch_drops() > 0
    pfc = Pfc(xoff=32 * 1024, xon=16 * 1024)
    fab, dst, starts, pauses = _incast_blast(pfc)
    assert fab.switch_drops() == 0
    assert dst.ep.got == 4 * 300
    assert sum(len(p) for p in pauses.values()) > 0
    assert fab.switches["p0.leaf0"].stats["pauses_sent"] > 0
    for i in starts:
        ev = pauses[i]
        intervals = []
        for k, (kind, t) in enumerate(ev):
            if kind == "off":
                end = next((t2 for kind2, t2 in ev[k + 1:] if kind2 == "on"), float("inf"))
                intervals.append((t, end))
        assert intervals
        assert not [t for t in starts[i] for a, b in intervals if a < t < b]
        assert fab.links[f"h{i}>p0.leaf0"].stats["pauses"] == len(intervals)
    # Bytes per ingress port stayed below xoff + headroom.
    sw = fab.switches["p0.leaf0"]
    assert sw.peak_ingress <= pfc.xoff + sw.headroom_of(fab.links["h0>p0.leaf0"])
    assert all(v == 0 for v in sw.ing.values())


def test_pfc_between_switches_pauses_the_upstream_switch_port():
    """MR-FAB-015: a spine congested towards a leaf pauses the leaf's uplink port, which then
    backs up into the hosts; still no drop anywhere."""
    fab = Fabric(8, leaves=2, spines=1, rate_bps=100e9, rtt=8e-6, shared_buffer=512 * 1024,
                 pfc=Pfc(xoff=32 * 1024, xon=16 * 1024))
    dst = fab.hosts[1]              # on leaf 1; hosts 0, 2, 4, 6 on leaf 0
    dst.ep = _Blast()
    for i in (0, 2, 4, 6, 3, 5):    # 3 and 5 share leaf 1 with the receiver
        f = make(wire.Op.MR_WRITE, bytes(4096))
        f.ip = codec.IP(src=fab.hosts[i].addr, dst=dst.addr, ecn=0)
        fab.hosts[i].ep = _Blast(f, 100)
        fab.hosts[i].kick()
    fab.sim.run(until=0.01)
    assert fab.switch_drops() == 0 and dst.ep.got == 600
    assert fab.links["p0.leaf0>p0.spine0"].stats["pauses"] > 0


def test_gilbert_elliott_burst_length_and_rate():
    """MR-FAB-031: over many draws with a fixed seed the loss rate is (p_gb*loss_bad +
    p_bg*loss_good) / (p_gb + p_bg) and bursts last 1 / p_bg frames on average."""
    ge = GilbertElliott(p_gb=0.01, p_bg=0.2)
    f = Faults(burst=ge, seed=11)
    rng = f.rng_for("link")
    lost = [f.lose(rng, wire.Op.MR_WRITE) for _ in range(200_000)]
    bursts = sum(1 for i in range(len(lost)) if lost[i] and (i == 0 or not lost[i - 1]))
    assert sum(lost) / len(lost) == pytest.approx(ge.mean_loss(), rel=0.08)
    assert sum(lost) / bursts == pytest.approx(1 / ge.p_bg, rel=0.08)


def test_fault_direction_data_ack_both():
    """MR-FAB-036: direction picks the frames a loss applies to: data, ACK/NAK/CNP, or both."""
    rng = random.Random(0)
    data, ack = wire.Op.MR_WRITE, wire.Op.MR_ACK
    for direction, lose_data, lose_ack in (("data", True, False), ("ack", False, True), ("both", True, True)):
        f = Faults(loss=1.0, direction=direction)
        assert (f.lose(rng, data), f.lose(rng, ack)) == (lose_data, lose_ack)
    assert Faults(loss=1.0, data_only=False).direction == "both"
    with pytest.raises(ValueError):
        Faults(loss=0.1, direction="acks")
    # On a fabric: ACK-only loss on the receiver's uplink loses ACKs and no data.
    fab, data_bytes, s, r = _lossy(Faults(loss=0.2, direction="ack", seed=2), links=("h1>p0.leaf0",),
                                   size=64 * 1024)
    check_integrity(data_bytes, s, r)
    assert fab.links["h1>p0.leaf0"].stats["lost"] > 0 and fab.links["h0>p0.leaf0"].stats["lost"] == 0


def test_fat_tree_structure_and_transfer():
    """MR-FAB-016: a k=4 fat tree has 16 hosts, 8 edge, 8 aggregation and 4 core switches; an
    inter-pod frame crosses 6 links; ECMP spreads over the aggregation and core switches."""
    fab = Fabric(16, fat_tree_k=4, rate_bps=100e9, rtt=12e-6)
    names = list(fab.switches)
    assert sum(".edge" in n for n in names) == 8 and sum(".agg" in n for n in names) == 8
    assert sum(".core" in n for n in names) == 4 and len(fab.links) == 96
    assert fab.link_delay == pytest.approx(1e-6)
    edge = fab.switches["p0.pod0.edge0"]
    assert len(edge.routes[fab.hosts[15].addr]) == 2 and len(edge.routes[fab.hosts[1].addr]) == 1
    assert len(fab.switches["p0.pod0.agg0"].routes[fab.hosts[15].addr]) == 2
    data, s, r = toy_transfer(fab, size=256 * 1024, paths=16)
    check_integrity(data, s, r)
    frames = s.ep.stats["sent"] + len(data) // 1024     # data + one ACK per data frame
    assert sum(ln.stats["frames"] for ln in fab.links.values()) == 6 * frames
    used = [fab.ports[f"p0.pod0.agg{j}>p0.core{c}"].stats["enqueued"] for j in range(2) for c in (2 * j, 2 * j + 1)]
    assert all(u > 0 for u in used)
    with pytest.raises(ValueError):
        Fabric(17, fat_tree_k=4)


def _reconverge_run(reconverge, fail, until=None, switch=False, complete=True):
    fab = Fabric(2, leaves=2, spines=4, rate_bps=100e9, rtt=8e-6, reconverge=reconverge)
    for port in fab.ports.values():
        port.qlog = []
    if switch:
        fab.switch_down(fail, at=20e-6, until=until)
    else:
        fab.link_down(fail, at=20e-6, until=until)
    data, s, r = toy_transfer(fab, size=1024 * 1024, paths=32, window=64, rto=30e-6, until=0.005)
    if complete:
        check_integrity(data, s, r)
    else:                       # the toy sender never changes entropy: it cannot finish
        assert not s.completions
    return fab


def test_reconvergence_takes_dead_link_out_of_ecmp():
    """MR-FAB-017/035: without reconvergence ECMP keeps hashing onto a dead link; with it, from
    ``reconverge`` after the failure no frame is hashed to it, nor (multi-hop) to a spine that
    lost its link to the destination's leaf; a link back up is used again after the delay."""
    port = "p0.leaf0>p0.spine1"
    fab = _reconverge_run(None, port, complete=False)
    assert max(t for t, _ in fab.ports[port].qlog) > 200e-6
    fab = _reconverge_run(50e-6, port)
    times = [t for t, _ in fab.ports[port].qlog]
    assert any(20e-6 < t < 70e-6 for t in times)            # before the switches learn it
    assert max(times) <= 70e-6 + 1e-12
    assert fab.switches["p0.leaf0"].routes[fab.hosts[1].addr] == tuple(
        fab.ports[f"p0.leaf0>p0.spine{k}"] for k in (0, 2, 3))
    # The far side of spine 1 dies: leaf 0 stops sending towards spine 1 as well.
    fab = _reconverge_run(50e-6, "p0.spine1>p0.leaf1")
    assert max(t for t, _ in fab.ports[port].qlog) <= 70e-6 + 1e-12
    # Down 20..120 us, learnt at 70 and 170 us: used again after 170 us.
    fab = _reconverge_run(50e-6, port, until=120e-6)
    times = [t for t, _ in fab.ports[port].qlog]
    assert not [t for t in times if 70e-6 + 1e-12 < t < 170e-6]
    assert any(t > 170e-6 for t in times)


def test_switch_failure_with_reconvergence():
    """MR-FAB-018/017: a failed switch drops everything; after the delay nobody routes to it."""
    fab = _reconverge_run(50e-6, "p0.spine2", switch=True)
    assert fab.links["p0.leaf0>p0.spine2"].stats["down_drops"] > 0
    assert max(t for t, _ in fab.ports["p0.leaf0>p0.spine2"].qlog) <= 70e-6 + 1e-12


@pytest.mark.parametrize("vlan", [None, 5])
@pytest.mark.parametrize("version", [4, 6])
def test_frame_len_equals_codec_wire_len(vlan, version):
    """MR-FAB-001: the host's memoised frame length is the codec's wire length for every opcode,
    payload length (padding included), VLAN tag and IP version."""
    from metaroce.sim.fabric import frame_len
    for op in wire.Op:
        for n in ((0, 1, 3, 1000, 4096) if op in wire.PAYLOAD_OPS else (0,)):
            f = make(op, bytes(n))
            f.eth.vlan = vlan
            if version == 6:
                f.ip = codec.IP(version=6, src="fd00::1", dst="fd00::2")
            assert frame_len(f) == wire_len(f), (op, n)
            assert f.payload == bytes(n)


@pytest.mark.parametrize("shared", [None, 1 << 20])
def test_queued_frames_starting_while_link_down_are_dropped(shared):
    """MR-FAB-035/010: a frame that starts serialising while its link is down is dropped, one
    arriving while it is down too; the same in the FIFO port (departures computed when queued)
    and the event-driven port (shared buffer)."""
    sim = Sim()
    sink = _Sink()
    link = Link(sim, "x", 100e9, 1e-6, sink)
    port = OutPort(sim, link, shared=None if shared is None else SharedBuffer(shared, 8.0))
    assert port._fifo == (shared is None)
    frames = [_frame_of(1000, psn=i) for i in range(10)]
    ser = link.ser_time(frames[0]._wl)
    for f in frames:
        port.enqueue(f)

    def set_up(state):
        link.up = state
    sim.at(2.5 * ser, set_up, False)
    sim.at(4.5 * ser, set_up, True)
    sim.run()
    assert [f.bth.psn for f in sink.got] == [0, 1, 2, 5, 6, 7, 8, 9]
    assert link.stats["down_drops"] == 2


# ---------------------------------------------------------------------------------------------
# Simulator speed paths: the event loop's time buckets and frames kept as records

def test_event_loop_matches_a_heap_of_time_and_sequence():
    """MR-FAB-000: the bucketed loop runs events in exactly the order of a heap of
    ``(time, sequence)``: same-time events (also those scheduled while their time runs) in
    scheduling order; ``stop`` and ``max_events`` inside a bucket leave the rest for later."""
    import heapq
    rng = random.Random(7)
    times = [rng.choice([0.0, 1e-6, 2e-6, 2.5e-6, 3e-6]) + rng.choice([0.0, 0.0, 1e-7]) for _ in range(300)]

    def drive(at, now):
        log = []

        def ev(tag):
            log.append(tag)
            if tag % 3 == 0 and tag < 2000:           # schedule more, some at the same time
                at(now() + times[tag % len(times)] * (tag % 2), ev, tag + 1000)
        for i, t in enumerate(times):
            at(t, ev, i)
        return log

    ref_q, seq, ref_now = [], [0], [0.0]

    def ref_at(t, fn, arg):
        seq[0] += 1
        heapq.heappush(ref_q, (max(t, ref_now[0]), seq[0], fn, arg))
    ref_log = drive(ref_at, lambda: ref_now[0])
    while ref_q:
        t, _, fn, arg = heapq.heappop(ref_q)
        ref_now[0] = t
        fn(arg)

    sim = Sim()
    log = drive(sim.at, lambda: sim.now)
    assert sim.run(max_events=0) == 0 and not log
    sim.run(max_events=5)               # stops inside the first bucket
    assert len(log) == 5
    sim.at(sim.now, lambda _: sim.stop())
    while sim.pending():
        sim.run(max_events=17)
    assert log == ref_log and sim.events == len(ref_log) + 1

    # without max_events (the bucket leaves the map while it runs): stops inside buckets
    sim = Sim()
    log = drive(sim.at, lambda: sim.now)
    for t in sorted(set(times))[:3]:
        sim.at(t, lambda _: sim.stop())
    runs = 0
    while sim.pending():
        sim.run()
        runs += 1
    assert log == ref_log and sim.events == len(ref_log) + 3 and runs == 4


def test_records_decide_as_the_encoded_bytes():
    """Frames travel through the simulator as codec records (the wire is bytes only at the edge,
    docs/spec/fabric.md): the same lossy leaf-spine run with every frame encoded and decoded
    again at the sending host (``Host.wire_bytes``) gives the same completions, times, endpoint
    counters and link counters, for MetaRoCE and the RoCEv2 baseline."""
    from metaroce.sim.harness import Flow, run_writes

    def run(kind, wire_bytes):
        fab = Fabric(4, leaves=2, spines=2, rate_bps=100e9, rtt=8e-6, spine_skew=0.3e-6)
        fab.set_faults(Faults(loss=0.02, direction="both", reorder=0.02, reorder_delay=1e-6, seed=4))
        for h in fab.hosts:
            h.wire_bytes = wire_bytes
        res = run_writes(fab, [Flow(0, 1, 96 * 4096, paths=4), Flow(2, 3, 64 * 4096, paths=2)], kind,
                         until=0.05)
        assert res.delivered_ok
        return ([r.t_done for r in res.flows], res.events, res.packets, dict(res.stats),
                {k: dict(ln.stats) for k, ln in fab.links.items()})
    for kind in ("metaroce", "rocev2"):
        a, b = run(kind, False), run(kind, True)
        assert a == b, kind
        assert a[3]["retransmitted"] > 0


def test_endpoint_frames_are_the_codec_records():
    """The endpoint builds its data frames and ACKs without the dataclass constructors and shares
    the Ethernet/IP/UDP records of a path: the frames equal the ones the constructors build,
    field by field, and encode to bytes that decode back to them."""
    from metaroce.models.endpoint import Endpoint
    a, b = Endpoint("10.0.0.1"), Endpoint("10.0.0.2")
    src = bytearray(random.Random(3).randbytes(3 * 4096 + 100))
    dst = bytearray(len(src))
    la, rb = a.reg_mr(src), b.reg_mr(dst)
    c = a.connect(1, "10.0.0.2", 2, paths=2)
    b.connect(2, "10.0.0.1", 1, paths=2)
    c.post_write(0, la, 0, len(src), 0, rb, wr_id=1)
    sent = []
    t = 0.0
    while (f := a.next_packet(t)) is not None or t < 1e-5:
        if f is not None:
            sent.append(f)
            b.receive(f, t)
            while (g := b.next_packet(t)) is not None:
                sent.append(g)
                a.receive(g, t)
        t += 1e-7
    assert {g.bth.opcode for g in sent} == {wire.Op.MR_WRITE, wire.Op.MR_ACK, wire.MR_ANNOUNCE} and bytes(dst) == bytes(src)
    for g in sent:
        ref = codec.Frame(eth=codec.Eth(**vars(g.eth)), ip=codec.IP(**vars(g.ip)), udp=codec.UDP(**vars(g.udp)),
                          bth=codec.BTH(**vars(g.bth)),
                          **{k: (None if v is None else type(v)(**vars(v))) if dataclasses.is_dataclass(v) else v
                             for k, v in vars(g).items() if k not in ("eth", "ip", "udp", "bth")})
        assert g == ref and list(vars(g)) == list(vars(ref))
        assert all(list(vars(getattr(g, n))) == list(vars(getattr(ref, n)))
                   for n in ("bth", "mrdh", "mrah") if getattr(g, n) is not None)
        back = codec.decode(codec.encode(g))
        assert dataclasses.replace(back, icrc=None, icrc_ok=None) == g


class _TimedSink:
    def __init__(self, sim):
        self.sim, self.got = sim, []

    def receive(self, frame, port):
        self.got.append((frame.bth.opcode, frame.bth.psn, self.sim.now))


@pytest.mark.parametrize("shared", [None, 10 ** 6])
@pytest.mark.parametrize("control", [True, False])
def test_control_queue_serves_acks_first(control, shared):
    """MR-FAB-019: an ACK (and the announcement, NAK, CNP of any protocol) queued behind data
    leaves right after the frame on the wire; the link's time is conserved (the data frame
    queued after it leaves one ACK serialisation later); without it the ACK waits its turn.
    The same in the FIFO port and the event-driven port (shared buffer)."""
    sim = Sim()
    sink = _TimedSink(sim)
    link = Link(sim, "x", 100e9, 1e-6, sink)
    port = OutPort(sim, link, shared=None if shared is None else SharedBuffer(shared, 8.0),
                   control=control)
    data = [_frame_of(1000, psn=i) for i in range(6)]
    ack = make(wire.Op.MR_ACK, b"", mrah=MRAH(cum_psn=7))
    ack.bth.psn = 99
    ack.ip.ecn = 2
    ack._wl = wire_len(ack)
    assert ack._wl <= fabric.CONTROL_MAX_BYTES and ack.bth.opcode in fabric.CONTROL_OPS
    ser, ser_ack = link.ser_time(data[0]._wl), link.ser_time(ack._wl)
    for f in data[:5]:
        port.enqueue(f)
    sim.at(1.5 * ser, port.enqueue, ack)
    sim.at(1.6 * ser, port.enqueue, data[5])
    sim.run()
    order = [psn for _, psn, _ in sink.got]
    if control:
        assert order == [0, 1, 99, 2, 3, 4, 5]
        assert sink.got[2][2] == pytest.approx(2 * ser + ser_ack + 1e-6)
        assert port.stats["marked"] == 0
    else:
        assert order == [0, 1, 2, 3, 4, 99, 5]
    # every frame's serialisation is on the link once: the last data frame ends at the sum
    assert sink.got[-1][2] == pytest.approx(6 * ser + ser_ack + 1e-6)
    assert port.stats["enqueued"] == 7 and port.stats["drops"] == 0


def test_switch_and_link_memos_follow_route_and_rate_changes():
    """MR-FAB-001, MR-FAB-012: what the hot paths memoise (a route with one next hop, a link's
    serialisation time per size, the taps test of an arrival) follows every change: a route
    from ECMP to one hop and back, a dropped route, a new link rate, a pcap set later. And
    MR-FAB-000: an event that raises alone at its time is consumed; the run goes on after it."""
    sim = Sim()
    sinks = [_Sink() for _ in range(3)]
    links = [Link(sim, f"s{i}", 100e9, 1e-6, sinks[i]) for i in range(3)]
    sw = fabric.Switch(sim, "sw")
    ports = [sw.add_port(OutPort(sim, ln)) for ln in links]

    def send(dst, sport=7):
        f = _frame_of(64)
        f.ip.dst = dst
        f.udp.sport = sport
        sw.receive(f)
        sim.run()
        return [len(s.got) for s in sinks]

    sw.add_route("10.0.0.9", ports[:2])                 # ECMP: by the 5-tuple
    for sport in range(40):
        send("10.0.0.9", sport)
    assert len(sinks[0].got) + len(sinks[1].got) == 40 and sinks[0].got and sinks[1].got
    assert not sinks[2].got
    sw.add_route("10.0.0.9", [ports[2]])                # one hop now, whatever the 5-tuple
    before = [len(s.got) for s in sinks]
    assert send("10.0.0.9", 3) == [before[0], before[1], 1] and send("10.0.0.9", 4)[2] == 2
    sw.add_route("10.0.0.9", [ports[0], ports[1]])     # back to ECMP: the one-hop entry goes
    assert send("10.0.0.9", 5)[2] == 2
    sw.drop_route("10.0.0.9")
    assert send("10.0.0.9", 6)[2] == 2 and sw.no_route == 1

    # a link's rate changed after frames went: the next frame takes the new rate
    ln = links[2]
    sw.add_route("10.0.0.8", [ports[2]])
    size = _frame_of(64)._wl
    assert ln.ser_time(size) == (size + FRAME_OVERHEAD) * 8.0 / 100e9 == ln._ser[size]
    ln.rate = 25e9
    assert ln._ser == {}
    t0 = sim.now
    send("10.0.0.8")
    assert sim.now == pytest.approx(t0 + (size + FRAME_OVERHEAD) * 8.0 / 25e9 + 1e-6, rel=1e-12)

    # a pcap set later sees the next arrival
    class Cap:
        n = 0

        def write(self, data, t):
            Cap.n += 1
    ln.pcap = Cap()
    send("10.0.0.8")
    assert Cap.n == 1 and ln.pcap is not None
    ln.pcap = None
    send("10.0.0.8")
    assert Cap.n == 1

    # one event alone at its time raises: consumed, the later one still runs
    log = []

    def boom(_):
        raise RuntimeError("x")
    t = sim.now
    sim.at(t + 1e-6, boom)
    sim.at(t + 2e-6, log.append, "after")
    with pytest.raises(RuntimeError):
        sim.run()
    assert sim.pending() == 1 and sim.now == t + 1e-6
    sim.run()
    assert log == ["after"]
