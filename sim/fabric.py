"""Discrete-event fabric simulator: event loop, links, switches, hosts (docs/spec/fabric.md).

The event loop is a plain ``heapq`` of ``(time, seq, fn, arg)`` tuples. SimPy 4.1.2 was measured
on this machine at 1.1 M events/s (processes) and 1.4 M events/s (raw callbacks) against 2.7 M
events/s for the bare heap, so the heap stays (no dependency, 2x faster; docs/spec/fabric.md).

Model (MR-FAB-ids are in docs/spec/fabric.md):

* A frame on a link occupies it for ``(wire_len + 24) * 8 / rate`` seconds: the codec's wire
  length (Ethernet header to ICRC) plus FCS (4), preamble+SFD (8) and inter-frame gap (12)
  (MR-FAB-001); it arrives ``delay`` seconds after its last bit left (MR-FAB-002).
* A switch output port is a FIFO with a byte buffer: a frame that does not fit is dropped at the
  tail (MR-FAB-010); an ECN-capable frame (ECT(0)/ECT(1)) that finds more than ``ecn_threshold``
  bytes queued is marked CE (``ip.ecn = 3``) (MR-FAB-011). Queue occupancy counts the frame being
  serialised until its last bit has left.
* A switch picks among equal-cost next hops by a CRC-32 of the UDP 5-tuple (source and
  destination IP, source and destination port, protocol) and a per-switch seed (MR-FAB-012);
  the choice is stable for a given 5-tuple, so a path's entropy (UDP source port) picks its route.
* A host has one NIC port per plane and pulls ``ep.next_packet(now)`` whenever a port is free;
  the frame goes out on plane ``plane_of(frame)`` (MR-FAB-020, see :func:`plane_of`); a frame
  for a busy port waits in that port's FIFO. When the
  endpoint has nothing to send the host sleeps until ``ep.next_wakeup(now)``.
"""
from __future__ import annotations

import copy
import heapq
import ipaddress
import struct
import zlib
from collections import deque

from metaroce.models import codec
from metaroce.models.codec import DecodeError, wire_len


#: FCS 4 + preamble/SFD 8 + inter-frame gap 12 bytes per frame on the wire (MR-FAB-001).
FRAME_OVERHEAD = 24


class Sim:
    """The event loop: ``at(t, fn, arg)`` schedules ``fn(arg)``; ``run()`` executes in time order.

    Events at the same time run in the order they were scheduled (FIFO), so a run is
    deterministic.
    """

    def __init__(self):
        self.now = 0.0
        self._q = []
        self._seq = 0
        self.events = 0
        self.stopped = False

    def at(self, t, fn, arg=None):
        if t < self.now:
            t = self.now
        self._seq += 1
        heapq.heappush(self._q, (t, self._seq, fn, arg))

    def after(self, dt, fn, arg=None):
        self.at(self.now + dt, fn, arg)

    def stop(self):
        """Make :meth:`run` return after the current event."""
        self.stopped = True

    def pending(self):
        return len(self._q)

    def run(self, until=float("inf"), max_events=None):
        """Run events until the queue is empty, ``until`` is reached, :meth:`stop` is called or
        ``max_events`` have run. Returns the number of events run by this call."""
        q = self._q
        pop = heapq.heappop
        n = 0
        limit = max_events if max_events is not None else -1
        self.stopped = False
        while q and not self.stopped and n != limit:
            ev = q[0]
            if ev[0] > until:
                self.now = until
                break
            pop(q)
            self.now = ev[0]
            ev[2](ev[3])
            n += 1
        else:
            if not q and until != float("inf") and self.now < until:
                self.now = until
        self.events += n
        return n


_IP_INT = {}


def ip_int(addr):
    """The integer of an IP address string (cached; the hash runs on every switch hop)."""
    v = _IP_INT.get(addr)
    if v is None:
        v = _IP_INT[addr] = int(ipaddress.ip_address(addr))
    return v


def ecmp_hash(frame, seed=0):
    """CRC-32 of the UDP 5-tuple and a switch seed (MR-FAB-012). Stable across runs and hosts."""
    ip = frame.ip
    u = frame.udp
    key = struct.pack("!QQQQHHBI", ip_int(ip.src) >> 64, ip_int(ip.src) & 0xFFFFFFFFFFFFFFFF,
                      ip_int(ip.dst) >> 64, ip_int(ip.dst) & 0xFFFFFFFFFFFFFFFF,
                      u.sport, u.dport, ip.proto, seed & 0xFFFFFFFF)
    return zlib.crc32(key)


def plane_of(frame, planes):
    """The plane a host sends ``frame`` on (MR-FAB-020).

    A ``frame.plane`` attribute set by the endpoint wins. Otherwise a MetaRoCE frame goes on
    plane ``path % planes`` (path from MRDH, MRAH or MRNH) and a RoCEv2 frame on
    ``dest_qp % planes`` (one QP, one path, one plane). A path's data and its ACKs share a plane.
    The endpoint spreads many connections over the planes itself: each connection starts its
    path rotation at its own id (MR-CONN-004).
    """
    if planes == 1:
        return 0
    p = getattr(frame, "plane", None)
    if p is not None:
        return p % planes
    h = frame.mrdh or frame.mrah or frame.mrnh
    if h is not None:
        return h.path % planes
    return frame.bth.dest_qp % planes


def _copy_frame(frame):
    """A copy whose IP header can be changed without touching the original (CE marks, dups)."""
    f = copy.copy(frame)
    f.ip = copy.copy(frame.ip)
    return f


class Link:
    """A unidirectional link: carries a frame ``delay`` seconds after its last bit was sent.

    Applies its :class:`~metaroce.sim.faults.Faults`, can be taken down and up, and can capture
    what it delivers to a pcap :class:`~metaroce.models.pcap.Writer`.
    """

    def __init__(self, sim, name, rate_bps, delay, dst, dst_port=0, faults=None, plane=0):
        if rate_bps <= 0 or delay < 0:
            raise ValueError(f"link {name}: rate must be > 0 and delay >= 0")
        self.sim = sim
        self.name = name
        self.rate = float(rate_bps)
        self.delay = float(delay)
        self.dst = dst
        self.dst_port = dst_port
        self.plane = plane
        self.up = True
        self.pcap = None
        self.stats = {"frames": 0, "bytes": 0, "delivered": 0, "lost": 0, "down_drops": 0,
                      "duplicated": 0, "delayed": 0, "corrupted": 0}
        self.faults = None
        self._rng = None
        self.set_faults(faults)

    def set_faults(self, faults):
        # Each link gets its own copy: the burst channel's state is per link.
        self.faults = copy.copy(faults) if (faults is not None and faults.active()) else None
        self._rng = faults.rng_for(self.name) if self.faults else None

    def ser_time(self, size):
        return (size + FRAME_OVERHEAD) * 8.0 / self.rate

    def carry(self, frame, ser):
        """Called when ``frame`` starts serialising; schedules its arrival (or its loss)."""
        st = self.stats
        st["frames"] += 1
        st["bytes"] += frame._wl
        if not self.up:
            st["down_drops"] += 1
            return
        t = self.sim.now + ser + self.delay
        fl = self.faults
        if fl is None:
            self.sim.at(t, self._arrive, frame)
            return
        rng = self._rng
        if fl.lose(rng, frame.bth.opcode):
            st["lost"] += 1
            return
        if fl.corrupt and rng.random() < fl.corrupt:
            st["corrupted"] += 1
            data = bytearray(codec.encode(_copy_frame(frame)))
            bit = rng.randrange(14 * 8, len(data) * 8)   # IP header onward
            data[bit >> 3] ^= 1 << (bit & 7)
            frame = bytes(data)
        d = fl.extra_delay(rng)
        if d:
            st["delayed"] += 1
        self.sim.at(t + d, self._arrive, frame)
        if fl.duplicate and rng.random() < fl.duplicate:
            st["duplicated"] += 1
            dup = frame if isinstance(frame, bytes) else _copy_frame(frame)
            self.sim.at(t + d + ser, self._arrive, dup)

    def _arrive(self, frame):
        if not self.up:
            self.stats["down_drops"] += 1
            return
        self.stats["delivered"] += 1
        if self.pcap is not None:
            data = frame if isinstance(frame, bytes) else codec.encode(_copy_frame(frame))
            self.pcap.write(data, self.sim.now)
        if isinstance(frame, bytes):
            self.dst.receive_bytes(frame, self.dst_port)
        else:
            self.dst.receive(frame, self.dst_port)


class OutPort:
    """A switch output port: FIFO with drop-tail buffer and ECN marking (MR-FAB-010, -011)."""

    def __init__(self, sim, link, buffer_bytes=None, ecn_threshold=None):
        self.sim = sim
        self.link = link
        self.buffer = buffer_bytes
        self.ecn_threshold = ecn_threshold
        self.q = deque()
        self.qbytes = 0
        self.busy = False
        self.stats = {"enqueued": 0, "drops": 0, "marked": 0, "peak_bytes": 0}
        self.drop_times = None      # set to a list to record the time of every drop
        self.qlog = None            # set to a list to record (time, queued bytes) at each enqueue

    def enqueue(self, frame):
        size = frame._wl
        st = self.stats
        if self.buffer is not None and self.qbytes + size > self.buffer:
            st["drops"] += 1
            if self.drop_times is not None:
                self.drop_times.append(self.sim.now)
            return
        thr = self.ecn_threshold
        if thr is not None and self.qbytes > thr and frame.ip.ecn in (1, 2):
            frame = _copy_frame(frame)
            frame.ip.ecn = 3
            st["marked"] += 1
        st["enqueued"] += 1
        self.q.append(frame)
        self.qbytes += size
        if self.qbytes > st["peak_bytes"]:
            st["peak_bytes"] = self.qbytes
        if self.qlog is not None:
            self.qlog.append((self.sim.now, self.qbytes))
        if not self.busy:
            self._start()

    def _start(self):
        self.busy = True
        frame = self.q[0]
        ser = self.link.ser_time(frame._wl)
        self.link.carry(frame, ser)
        self.sim.at(self.sim.now + ser, self._done)

    def _done(self, _):
        frame = self.q.popleft()
        self.qbytes -= frame._wl
        if self.q:
            self._start()
        else:
            self.busy = False


class Switch:
    """Output-queued switch: route by destination IP, ECMP by 5-tuple hash (MR-FAB-012)."""

    def __init__(self, sim, name, seed=0):
        self.sim = sim
        self.name = name
        self.seed = zlib.crc32(f"{seed}:{name}".encode())
        self.ports = []
        self.routes = {}        # dst IP -> tuple of OutPort (equal cost)
        self.stats = {"rx": 0, "no_route": 0, "fcs_drops": 0}

    def add_port(self, port):
        self.ports.append(port)
        return port

    def add_route(self, dst_ip, ports):
        self.routes[dst_ip] = tuple(ports)

    def receive(self, frame, in_port):
        self.stats["rx"] += 1
        hops = self.routes.get(frame.ip.dst)
        if not hops:
            self.stats["no_route"] += 1
            return
        if len(hops) == 1:
            hops[0].enqueue(frame)
        else:
            hops[ecmp_hash(frame, self.seed) % len(hops)].enqueue(frame)

    def receive_bytes(self, data, in_port):
        # A corrupted frame fails the FCS check at the switch (the FCS is not modelled bit by
        # bit): it is dropped here. Corruption that reaches a host is checked by the ICRC.
        self.stats["fcs_drops"] += 1


class NicPort:
    """One NIC port (one plane) of a host: a small FIFO in front of the link."""

    def __init__(self, host, index, link):
        self.host = host
        self.index = index
        self.link = link
        self.q = deque()
        self.busy = False

    def start(self, frame):
        self.busy = True
        ser = self.link.ser_time(frame._wl)
        self.link.carry(frame, ser)
        self.host.sim.at(self.host.sim.now + ser, self._done)

    def _done(self, _):
        h = self.host
        if self.q:
            h._queued -= 1
            self.start(self.q.popleft())
        else:
            self.busy = False
            h._free += 1
        h.pump()


class Host:
    """A host: one endpoint behind one NIC port per plane (MR-FAB-020).

    ``ep`` is anything with the endpoint contract's transport side (``next_packet``,
    ``next_wakeup``, ``receive``, ``poll_cq``). Completions are polled after every event that may
    produce them and kept in ``completions`` as ``(time, completion)``; ``on_completion`` (if
    set) is called with ``(host, time, completion)``.
    """

    def __init__(self, sim, name, addr, ep=None):
        self.sim = sim
        self.name = name
        self.addr = addr
        self.ep = ep
        self.nics = []
        self._free = 0
        self._queued = 0
        self._wake_t = None
        self.completions = []
        self.on_completion = None
        self.rx_hook = None     # rx_hook(frame, now): measurement tap on every delivered frame
        self.tx_hook = None     # tx_hook(frame, now): tap on every frame the endpoint sends
        self.stats = {"tx": 0, "rx": 0, "decode_drops": 0, "corrupt_undetected": 0,
                      "decode_reasons": {}}

    def add_nic(self, link):
        nic = NicPort(self, len(self.nics), link)
        self.nics.append(nic)
        self._free += 1
        return nic

    def kick(self):
        """Ask the endpoint for packets now (call after posting work)."""
        self.sim.at(self.sim.now, self._kick)

    def _kick(self, _):
        self.pump()
        self._poll()

    def pump(self):
        ep = self.ep
        if ep is None:
            return
        now = self.sim.now
        nics = self.nics
        planes = len(nics)
        cap = planes
        while self._free > 0 and self._queued < cap:
            f = ep.next_packet(now)
            if f is None:
                self._arm(now)
                return
            f._wl = wire_len(f)
            self.stats["tx"] += 1
            if self.tx_hook is not None:
                self.tx_hook(f, now)
            nic = nics[plane_of(f, planes)]
            if nic.busy:
                nic.q.append(f)
                self._queued += 1
            else:
                self._free -= 1
                nic.start(f)

    def _arm(self, now):
        t = self.ep.next_wakeup(now)
        if t is None:
            return
        if t <= now:
            t = now + 1e-9      # the endpoint asked for "now" but had nothing: retry shortly
        if self._wake_t is None or t < self._wake_t:
            self._wake_t = t
            self.sim.at(t, self._wake, t)

    def _wake(self, t):
        if self._wake_t != t:
            return
        self._wake_t = None
        self.pump()
        self._poll()

    def _poll(self):
        comps = self.ep.poll_cq()
        if comps:
            now = self.sim.now
            for c in comps:
                self.completions.append((now, c))
                if self.on_completion is not None:
                    self.on_completion(self, now, c)

    def receive(self, frame, in_port):
        self.stats["rx"] += 1
        ep = self.ep
        if ep is None:
            return
        if self.rx_hook is not None:
            self.rx_hook(frame, self.sim.now)
        ep.receive(frame, self.sim.now)
        self._poll()
        if self._free:
            self.pump()

    def receive_bytes(self, data, in_port):
        """A corrupted frame: decode it as the NIC would (ICRC checked) (MR-FAB-034)."""
        try:
            frame = codec.decode(data)
        except DecodeError as e:
            st = self.stats
            st["decode_drops"] += 1
            r = e.reason.label
            st["decode_reasons"][r] = st["decode_reasons"].get(r, 0) + 1
            return
        # The flipped bit was in a field no check covers (e.g. a masked BTH bit or the unused
        # IPv4 UDP checksum): the frame is still valid and is delivered.
        self.stats["corrupt_undetected"] += 1
        frame._wl = len(data)
        self.receive(frame, in_port)
