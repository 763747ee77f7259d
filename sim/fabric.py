"""Discrete-event fabric simulator: event loop, links, switches, hosts (docs/spec/fabric.md).

The event loop is a ``heapq`` of event times with a FIFO bucket per time (:class:`Sim`). SimPy 4.1.2 was measured
on this machine at 1.1 M events/s (processes) and 1.4 M events/s (raw callbacks) against 2.7 M
events/s for the bare heap, so the heap stays (no dependency, 2x faster; docs/spec/fabric.md).

Model (MR-FAB-ids are in docs/spec/fabric.md):

* A frame on a link occupies it for ``(wire_len + 24) * 8 / rate`` seconds: the codec's wire
  length (Ethernet header to ICRC) plus FCS (4), preamble+SFD (8) and inter-frame gap (12)
  (MR-FAB-001); it arrives ``delay`` seconds after its last bit left (MR-FAB-002).
* A switch output port is a FIFO with a byte buffer: a frame that does not fit is dropped at the
  tail (MR-FAB-010); an ECN-capable frame (ECT(0)/ECT(1)) that finds more than ``ecn_threshold``
  bytes queued is marked CE (``ip.ecn = 3``) (MR-FAB-011). Queue occupancy counts the frame being
  serialised until its last bit has left. Acknowledgements, NAKs, CNPs and announcements go
  in a control queue that the port serves first (MR-FAB-019, ``control``).
* A switch picks among equal-cost next hops by a CRC-32 of the UDP 5-tuple (source and
  destination IP, source and destination port, protocol) and a per-switch seed (MR-FAB-012);
  the choice is stable for a given 5-tuple, so a path's entropy (UDP source port) picks its route.
* A host has one NIC port per plane and pulls ``ep.next_packet(now)`` whenever a port is free;
  the frame goes out on plane ``plane_of(frame)`` (MR-FAB-020, see :func:`plane_of`); a frame
  for a busy port waits in that port's FIFO, and only a frame that finds its own port's FIFO full
  (``NIC_TX_FIFO_FRAMES``) stops the host asking (MR-FAB-021). When the
  endpoint has nothing to send the host sleeps until ``ep.next_wakeup(now)``.
"""
from __future__ import annotations

import copy
import dataclasses
import heapq
import ipaddress
import random
import struct
import zlib
from collections import deque

from metaroce.models import codec
from metaroce.models.codec import DecodeError, wire_len
from metaroce.models.wire import MR_ANNOUNCE, Op


heappush = heapq.heappush

#: FCS 4 + preamble/SFD 8 + inter-frame gap 12 bytes per frame on the wire (MR-FAB-001).
FRAME_OVERHEAD = 24

#: MR-FAB-019: the control class a switch port serves before its data queue (acknowledgements,
#: NAKs, CNPs and sender announcements of every protocol: no payload), matched on the BTH opcode
#: as a switch ACL does; frames above CONTROL_MAX_BYTES are never looked at (the hot path's test).
CONTROL_OPS = frozenset({Op.RC_ACK, Op.RC_ATOMIC_ACK, Op.CNP, Op.MR_ACK, Op.MR_NAK, MR_ANNOUNCE})
CONTROL_MAX_BYTES = 256


class Sim:
    """The event loop: ``at(t, fn, arg)`` schedules ``fn(arg)``; ``run()`` executes in time order.

    Events at the same time run in the order they were scheduled (FIFO), so a run is
    deterministic. The queue is a heap of distinct event times (``_t``, plain floats, which
    compare several times faster than ``(time, seq, ...)`` tuples) and, per time, the bucket
    ``_b[t]``: ``[(fn, arg), ...]`` in scheduling order. The order is exactly that of a
    heap of ``(time, seq)`` keys: a bucket is appended to in scheduling order, and an event
    scheduled for the time being run runs after the rest of its bucket. Hot paths push inline
    (:func:`push`). ``pending()`` called from inside an event does not count the rest of the
    running bucket.
    """

    def __init__(self):
        self.now = 0.0
        self._t = []            # heap of the times that have a bucket
        self._b = {}            # time -> [(fn, arg), ...]
        self.events = 0
        self.stopped = False

    def at(self, t, fn, arg=None):
        if t < self.now:
            t = self.now
        b = self._b.get(t)
        if b is None:
            self._b[t] = [(fn, arg)]
            heappush(self._t, t)
        else:
            b.append((fn, arg))

    def after(self, dt, fn, arg=None):
        self.at(self.now + dt, fn, arg)

    def stop(self):
        """Make :meth:`run` return after the current event."""
        self.stopped = True

    def pending(self):
        return sum(len(b) for b in self._b.values())

    def run(self, until=float("inf"), max_events=None):
        """Run events until the queue is empty, ``until`` is reached, :meth:`stop` is called or
        ``max_events`` have run. Returns the number of events run by this call."""
        T = self._t
        B = self._b
        pop = heapq.heappop
        n = 0
        left = -1 if max_events is None or max_events < 0 else max_events     # -1: no limit
        self.stopped = False
        while T and left:
            t = pop(T)
            if t > until:
                heappush(T, t)      # not due: back (the times are distinct, so the order stays)
                self.now = until
                break
            self.now = t
            # The bucket leaves the map before it runs: an event scheduled meanwhile for this
            # time starts a new bucket of the same time, which runs right after (the order of
            # appending to this one), and nothing is counted per event.
            b = B.pop(t)
            if left > 0:
                if len(b) > left:           # the count ends inside: the rest runs next time
                    B[t] = b[left:]
                    heappush(T, t)
                    del b[left:]
                left -= len(b)
            if len(b) == 1:
                # one event at this time (most times): no iterator, nothing to put back (an
                # event that raises is consumed, as below)
                fn, arg = b[0]
                n += 1
                fn(arg)
                if self.stopped:
                    break
                continue
            it = iter(b)
            try:
                for fn, arg in it:
                    fn(arg)
                    if self.stopped:
                        break
                else:
                    n += len(b)
                    continue
            except BaseException:
                self._requeue(t, it)        # the event that raised is consumed, as it was popped
                raise
            n += len(b) - self._requeue(t, it)     # stopped inside a bucket: the rest runs next time
            break
        else:
            # the queue holds nothing before ``until``: the clock moves there (not when the
            # count ran out; max_events=0, which runs nothing, moves it as it always did)
            if (left or not n) and until != float("inf") and self.now < until:
                self.now = until
        self.events += n
        return n

    def _requeue(self, t, it):
        """Put the events ``it`` has not yielded back at the front of time ``t``'s bucket;
        returns how many."""
        rest = list(it)
        if rest:
            b = self._b.get(t)
            if b is None:
                self._b[t] = rest
                heappush(self._t, t)
            else:
                b[:0] = rest
        return len(rest)


def push(sim, t, fn, arg):
    """``sim.at(t, fn, arg)`` for ``t >= sim.now`` without the call (the hot paths inline it)."""
    b = sim._b.get(t)
    if b is None:
        sim._b[t] = [(fn, arg)]
        heappush(sim._t, t)
    else:
        b.append((fn, arg))


_HDR_LEN = {}
_HDR_LEN4 = {}      # opcode -> _HDR_LEN[(opcode, True, 4)]: untagged IPv4 (most frames), no tuple key


def frame_len(frame):
    """``codec.wire_len(frame)`` with the header part memoised per (opcode, VLAN tag, IP
    version): the codec recomputes the extension headers' length on every call, and the host
    asks for it on every frame (tested equal to ``codec.wire_len``)."""
    ip = frame.ip
    key = (frame.bth.opcode, frame.eth.vlan is None, ip.version)
    n = _HDR_LEN.get(key)
    if n is None:
        saved = frame.payload
        frame.payload = b""
        try:
            n = _HDR_LEN[key] = wire_len(frame)
        finally:
            frame.payload = saved
        if key[1] and ip.version == 4:
            _HDR_LEN4[key[0]] = n
    plen = len(frame.payload)
    return n + plen + (-plen) % 4


_IP_INT = {}


def ip_int(addr):
    """The integer of an IP address string (cached; the hash runs on every switch hop)."""
    v = _IP_INT.get(addr)
    if v is None:
        v = _IP_INT[addr] = int(ipaddress.ip_address(addr))
    return v


_ECMP_CACHE = {}


def ecmp_hash(frame, seed=0):
    """CRC-32 of the UDP 5-tuple and a switch seed (MR-FAB-012). Stable across runs and hosts.

    Memoised on the tuple (a run sees few distinct 5-tuples and the hash runs on every hop)."""
    ip = frame.ip
    u = frame.udp
    ck = (ip.src, ip.dst, u.sport, u.dport, ip.proto, seed)
    v = _ECMP_CACHE.get(ck)
    if v is not None:
        return v
    if len(_ECMP_CACHE) > 1 << 20:
        _ECMP_CACHE.clear()
    key = struct.pack("!QQQQHHBI", ip_int(ip.src) >> 64, ip_int(ip.src) & 0xFFFFFFFFFFFFFFFF,
                      ip_int(ip.dst) >> 64, ip_int(ip.dst) & 0xFFFFFFFFFFFFFFFF,
                      u.sport, u.dport, ip.proto, seed & 0xFFFFFFFF)
    v = _ECMP_CACHE[ck] = zlib.crc32(key)
    return v


def fmix32(h):
    """MurmurHash3's 32-bit finaliser. CRC-32 is linear, so two switches' CRCs of one 5-tuple
    differ by a constant and ``crc % n`` picks correlated ports at successive ECMP stages
    (polarisation); a non-linear mix decorrelates them (MR-FAB-016)."""
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & 0xFFFFFFFF
    return h ^ (h >> 16)


#: MR-FAB-021: frames a NIC port's transmit FIFO holds behind the one it is sending. The host's
#: transmit engine stalls (holding the frame) only when a frame finds its own port's FIFO full,
#: never because other ports are busy; see docs/probes/scale_nic_ahead.py.
NIC_TX_FIFO_FRAMES = 8


def plane_of(frame, planes):
    """The plane a host sends ``frame`` on (MR-FAB-020).

    A ``frame.plane`` attribute set by the endpoint wins. Otherwise a MetaRoCE frame goes on
    plane ``path % planes`` (path from MRDH, MRAH or MRNH) and a RoCEv2 frame on
    ``dest_qp % planes`` (one QP, one path, one plane). A path's data and its ACKs share a plane;
    a sender announcement goes on its path's plane (MR-WIRE-084).
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
    if frame.bth.opcode == MR_ANNOUNCE:
        return frame.bth.psn % planes       # MR-WIRE-084: the announcement's PSN is its path
    return frame.bth.dest_qp % planes


_new = object.__new__

_LINK_COUNTERS = ("frames", "bytes", "delivered", "lost", "down_drops", "duplicated", "delayed",
                  "corrupted", "pauses")


def _copy_frame(frame):
    """A copy whose IP header can be changed without touching the original (CE marks, dups).
    ``copy.copy`` of both, done directly. The IP header is copied field by field, in the
    record's order: reading an object's ``__dict__`` makes CPython 3.11 give it a dict of its
    own for good, and the original is the IP record its connection shares with all its frames
    (whose attribute loads then stop specialising); the frame itself is a one-off."""
    f = _new(frame.__class__)
    f.__dict__.update(frame.__dict__)
    ip = frame.ip
    c = _new(ip.__class__)
    c.version = ip.version
    c.src = ip.src
    c.dst = ip.dst
    c.dscp = ip.dscp
    c.ecn = ip.ecn
    c.ttl = ip.ttl
    c.ident = ip.ident
    c.flow_label = ip.flow_label
    c.proto = ip.proto
    f.ip = c
    return f


if tuple(fl.name for fl in dataclasses.fields(codec.IP)) != (
        "version", "src", "dst", "dscp", "ecn", "ttl", "ident", "flow_label", "proto"):
    raise ImportError("fabric: codec.IP's fields changed; update _copy_frame")


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
        self._rate = float(rate_bps)
        self._ser = {}          # frame size -> ser_time(size): every hop needs it (a dict read)
        self.delay = float(delay)
        self.dst = dst
        self.dst_port = dst_port
        self.plane = plane
        self._up = True
        self._hist = []         # (time, up) of every state change, for frames sent ahead
        self._pcap = None
        # an arrival's one test for what most links never have: a pcap, or corrupted frames
        # (bytes, made by carry's faults) that may be on the way
        self._taps = False
        self.src_tx = None      # the OutPort or NicPort that sends on this link (PFC pauses it)
        # counters (``stats``): attributes, which the per-frame paths add to cheaply
        self.frames = self.bytes = self.delivered = self.lost = self.down_drops = 0
        self.duplicated = self.delayed = self.corrupted = self.pauses = 0
        self.faults = None
        self._rng = None
        self.set_faults(faults)
        # the arrival callbacks, bound once: every hop schedules one (loading a method as a
        # value is a lookup and a new bound method each time)
        self._on_arrive = self._arrive
        self._on_arrive_late = self._arrive_late

    def set_faults(self, faults):
        # Each link gets its own copy: the burst channel's state is per link.
        self.faults = copy.copy(faults) if (faults is not None and faults.active()) else None
        self._rng = faults.rng_for(self.name) if self.faults else None

    @property
    def stats(self):
        """The counters, as a dict built on read: ``frames`` and ``bytes`` handed to the link,
        ``delivered``, ``lost``, ``down_drops``, ``duplicated``, ``delayed``, ``corrupted``,
        ``pauses`` (PFC pauses received by its transmitter)."""
        return {k: getattr(self, k) for k in _LINK_COUNTERS}

    @property
    def rate(self):
        """Bits per second (a new rate empties the ``ser_time`` memo)."""
        return self._rate

    @rate.setter
    def rate(self, rate_bps):
        self._rate, self._ser = rate_bps, {}

    @property
    def pcap(self):
        """A :class:`~metaroce.models.pcap.Writer` that gets every frame the link delivers, or None."""
        return self._pcap

    @pcap.setter
    def pcap(self, writer):
        self._pcap = writer
        self._taps = self._taps or writer is not None

    @property
    def up(self):
        return self._up

    @up.setter
    def up(self, state):
        state = bool(state)
        if state != self._up:
            self._up = state
            self._hist.append((self.sim.now, state))

    def _up_at(self, t):
        for when, state in reversed(self._hist):
            if when <= t:
                return state
        return True

    def ser_time(self, size):
        """Seconds on the wire of a ``size``-byte frame (MR-FAB-001); memoised in ``_ser``."""
        ser = self._ser[size] = (size + FRAME_OVERHEAD) * 8.0 / self._rate
        return ser

    def carry(self, frame, ser, start=None):
        """Called when ``frame`` starts serialising, or earlier with its future ``start`` time
        (a FIFO port computes its departures ahead); schedules its arrival (or its loss). A
        frame whose start finds the link down is dropped; so is one arriving while it is down."""
        self.frames += 1
        self.bytes += frame._wl
        sim = self.sim
        if start is None or start <= sim.now:
            if not self._up:
                self.down_drops += 1
                return
            t = sim.now + ser + self.delay
            cb, arg = self._on_arrive, frame
        else:
            t = start + ser + self.delay
            cb, arg = self._on_arrive_late, (frame, start)
        fl = self.faults
        if fl is None:
            b = sim._b.get(t)
            if b is None:
                sim._b[t] = [(cb, arg)]
                heappush(sim._t, t)
            else:
                b.append((cb, arg))
            return
        rng = self._rng
        if fl.lose(rng, frame.bth.opcode):
            self.lost += 1
            return
        if fl.corrupt and rng.random() < fl.corrupt:
            self.corrupted += 1
            data = bytearray(codec.encode(_copy_frame(frame)))
            bit = rng.randrange(14 * 8, len(data) * 8)   # IP header onward
            data[bit >> 3] ^= 1 << (bit & 7)
            frame = bytes(data)
            self._taps = True       # from now on an arrival may be bytes
        d = fl.extra_delay(rng)
        if d:
            self.delayed += 1
        self.sim.at(t + d, cb, frame if cb is self._on_arrive else (frame, start))
        if fl.duplicate and rng.random() < fl.duplicate:
            self.duplicated += 1
            dup = frame if isinstance(frame, bytes) else _copy_frame(frame)
            self.sim.at(t + d + ser, cb, dup if cb is self._on_arrive else (dup, start))

    def _arrive_late(self, arg):
        frame, start = arg
        if self._hist and not self._up_at(start):
            self.down_drops += 1
            return
        # self._arrive(frame), inlined (most frames a switch sends waited behind another)
        if not self._up:
            self.down_drops += 1
            return
        self.delivered += 1
        if self._taps:
            self._deliver_tapped(frame)
            return
        self.dst.receive(frame, self.dst_port)

    def _deliver_tapped(self, frame):
        """Delivery on a link with a pcap or that corrupted frames (``_taps``)."""
        if self._pcap is not None:
            data = frame if isinstance(frame, bytes) else codec.encode(_copy_frame(frame))
            self._pcap.write(data, self.sim.now)
        if type(frame) is bytes:
            self.dst.receive_bytes(frame, self.dst_port)
            return
        self.dst.receive(frame, self.dst_port)

    def _arrive(self, frame):
        if not self._up:
            self.down_drops += 1
            return
        self.delivered += 1
        if self._taps:
            self._deliver_tapped(frame)
            return
        self.dst.receive(frame, self.dst_port)


class SharedBuffer:
    """A switch's shared packet buffer with dynamic thresholds (MR-FAB-013).

    ``total`` bytes are shared by every output port of the switch; a port may queue a frame only
    while its queue stays within ``alpha * (total - used)`` (Choudhury-Hahne), and the whole
    buffer never holds more than ``total`` bytes of lossy traffic.
    """

    def __init__(self, total, alpha):
        if total <= 0 or alpha <= 0:
            raise ValueError("shared buffer needs total > 0 and alpha > 0")
        self.total = int(total)
        self.alpha = float(alpha)
        self.used = 0
        self.peak = 0

    def limit(self):
        """The current per-port queue limit, alpha x free buffer."""
        return self.alpha * max(0, self.total - self.used)


class Red:
    """RED-like ECN marking (MR-FAB-014): probability 0 at or below ``kmin`` queued bytes,
    ``pmax * (q - kmin) / (kmax - kmin)`` between, 1 at or above ``kmax``."""

    def __init__(self, kmin, kmax, pmax):
        if not 0 <= kmin < kmax or not 0 < pmax <= 1:
            raise ValueError("RED needs 0 <= kmin < kmax and 0 < pmax <= 1")
        self.kmin, self.kmax, self.pmax = kmin, kmax, pmax

    def prob(self, q):
        if q <= self.kmin:
            return 0.0
        if q >= self.kmax:
            return 1.0
        return self.pmax * (q - self.kmin) / (self.kmax - self.kmin)


class Pfc:
    """Priority flow control settings of a switch (MR-FAB-015).

    Every ingress port and priority counts the bytes it brought in that are still queued in the
    switch. Above ``xoff`` the switch pauses that priority at the upstream transmitter (after the
    link's delay); at or below ``xon`` it resumes it. Frames of a lossless priority are admitted up
    to ``xoff + headroom`` per ingress port and priority, ignoring the egress limits; the default
    headroom covers what is in flight when the pause takes effect. ``priorities`` is the set of
    lossless 802.1p priorities (None: every priority).
    """

    def __init__(self, xoff, xon, headroom=None, priorities=None):
        if not 0 <= xon <= xoff:
            raise ValueError("PFC needs 0 <= xon <= xoff")
        if headroom is not None and headroom < 0:
            raise ValueError("PFC headroom must be >= 0")
        self.xoff, self.xon, self.headroom = int(xoff), int(xon), headroom
        self.priorities = None if priorities is None else frozenset(priorities)

    def lossless(self, prio):
        return self.priorities is None or prio in self.priorities


def pfc_headroom(rate_bps, delay, mtu_bytes=4096 + 200):
    """Bytes that can still arrive after the pause threshold is crossed: a round trip of the link
    at line rate plus the frame being sent at each end and one that crossed xoff."""
    return int(2 * delay * rate_bps / 8) + 3 * (mtu_bytes + FRAME_OVERHEAD)


class OutPort:
    """A switch output port: FIFO with drop-tail buffer and ECN marking (MR-FAB-010, -011).

    Optional: a :class:`SharedBuffer` (MR-FAB-013), :class:`Red` marking (MR-FAB-014) and PFC
    (MR-FAB-015, set up by :class:`Switch`).
    """

    # Slots, as models/endpoint.py's Connection: over 30 attributes per instance CPython 3.11
    # keeps a dict per port and its lookups do not specialise across ports; ``__dict__`` keeps
    # any other attribute possible.
    __slots__ = ("sim", "control", "cq", "cdeps", "cfree_at", "cbytes", "_on_ctrl", "link", "buffer",
                 "_ecn_threshold", "shared", "_red", "_ecn_q", "_red_rng", "switch", "deps",
                 "free_at", "q", "q_in", "qbytes", "busy", "paused", "enqueued", "drops", "marked",
                 "peak_bytes", "headroom_drops", "drop_times", "qlog", "_fifo", "__dict__",
                 "__weakref__")

    def __init__(self, sim, link, buffer_bytes=None, ecn_threshold=None, *, shared=None, red=None,
                 seed=0, control=False):
        self.sim = sim
        self.control = control      # MR-FAB-019: a strict-priority queue for control frames
        self.cq = deque()           # event mode: queued control frames
        self.cdeps = deque()        # FIFO mode: (end of serialisation, size) of control frames
        self.cfree_at = 0.0         # FIFO mode: when the control frames queued have left
        self.cbytes = 0             # control bytes queued
        self._on_ctrl = False       # event mode: the frame on the wire is a control frame
        self.link = link
        link.src_tx = self
        self.buffer = buffer_bytes
        self._ecn_threshold = ecn_threshold
        self.shared = shared
        self._red = red
        self._ecn_q = None
        self._set_ecn_q()
        self._red_rng = random.Random(f"red:{seed}:{link.name}") if red is not None else None
        self.switch = None          # set by Switch.add_port; PFC accounting lives there
        self.deps = deque()         # FIFO mode: (end of serialisation, size) of queued frames
        self.free_at = 0.0          # FIFO mode: when the link has sent everything queued
        self.q = deque()
        self.q_in = deque()         # PFC: (ingress key, size) of each queued frame, or None
        self.qbytes = 0
        self.busy = False
        self.paused = set()         # priorities paused by the downstream switch (PFC)
        # counters (``stats``): attributes, which the per-frame paths add to cheaply
        self.enqueued = self.drops = self.marked = self.peak_bytes = self.headroom_drops = 0
        self.drop_times = None      # set to a list to record the time of every drop
        self.qlog = None            # set to a list to record (time, queued bytes) at each enqueue
        self._fifo = None
        self.set_fifo(shared is None)

    def set_fifo(self, fifo):
        """FIFO mode (departures computed when queued) or event-driven mode (PFC, shared
        buffer); :meth:`enqueue` runs the mode's method (``Switch.receive`` calls it directly)."""
        self._fifo = fifo

    def _marking(attr, doc):        # a property factory, run in the class body
        """A marking setting whose setter recomputes ``_ecn_q``."""
        def set_(self, v):
            setattr(self, attr, v)
            self._set_ecn_q()
        return property(lambda self: getattr(self, attr), set_, doc=doc)

    ecn_threshold = _marking("_ecn_threshold", "Step marking: CE above this many queued bytes "
                             "(MR-FAB-011); None: no step marking.")
    red = _marking("_red", "RED-like marking (:class:`Red`, MR-FAB-014) instead of the step, or None.")
    del _marking

    def _set_ecn_q(self):
        # the FIFO path's one test: no frame is marked at or below _ecn_q queued bytes
        if self._red is not None:
            self._ecn_q = self._red.kmin
        else:
            self._ecn_q = float("inf") if self._ecn_threshold is None else self._ecn_threshold

    @property
    def stats(self):
        """The counters, as a dict built on read: ``enqueued``, ``drops``, ``marked`` (CE),
        ``peak_bytes`` (largest queue), and ``headroom_drops`` (PFC, MR-FAB-015) once there is one."""
        st = {"enqueued": self.enqueued, "drops": self.drops, "marked": self.marked,
              "peak_bytes": self.peak_bytes}
        if self.headroom_drops:
            st["headroom_drops"] = self.headroom_drops
        return st

    def _drop(self):
        self.drops += 1
        if self.drop_times is not None:
            self.drop_times.append(self.sim.now)

    def enqueue(self, frame, ingress=None):
        """Queue ``frame`` (arrived over link ``ingress``) for this port's link."""
        return self._enqueue_fifo(frame) if self._fifo else self._enqueue_events(frame, ingress)

    def _enqueue_events(self, frame, ingress=None):
        size = frame._wl
        if size <= CONTROL_MAX_BYTES and self.control and frame.bth.opcode in CONTROL_OPS:
            self._control_events(frame, size)
            return
        sw = self.switch
        pfc = sw.pfc if sw is not None else None
        key = None
        if pfc is not None and ingress is not None and pfc.lossless(frame.eth.pcp):
            # Lossless: admitted by the ingress counter alone (MR-FAB-015).
            key = (ingress, frame.eth.pcp)
            if sw.ing.get(key, 0) + size > pfc.xoff + sw.headroom_of(ingress):
                self.headroom_drops += 1
                self._drop()
                return
        else:
            if self.buffer is not None and self.qbytes + size > self.buffer:
                self._drop()
                return
            sb = self.shared
            if sb is not None and (sb.used + size > sb.total
                                   or self.qbytes + size > sb.alpha * (sb.total - sb.used)):
                self._drop()
                return
        if frame.ip.ecn in (1, 2):
            thr = self._ecn_threshold
            red = self._red
            if red is not None:
                p = red.prob(self.qbytes)
                mark = p >= 1.0 or (p > 0.0 and self._red_rng.random() < p)
            else:
                mark = thr is not None and self.qbytes > thr
            if mark:
                frame = _copy_frame(frame)
                frame.ip.ecn = 3
                self.marked += 1
        self.enqueued += 1
        self.q.append(frame)
        self.qbytes += size
        if self.shared is not None:
            sb = self.shared
            sb.used += size
            if sb.used > sb.peak:
                sb.peak = sb.used
        if sw is not None and sw.pfc is not None:
            self.q_in.append(key)
            if key is not None:
                sw.charge(key, size)
        if self.qbytes > self.peak_bytes:
            self.peak_bytes = self.qbytes
        if self.qlog is not None:
            self.qlog.append((self.sim.now, self.qbytes))
        if not self.busy:
            self._start()

    def _enqueue_fifo(self, frame, ingress=None):
        """Without PFC or a shared buffer nothing can hold a queued frame back, so a frame's
        departure is known when it is queued: FIFO after the frames ahead of it. Its arrival is
        scheduled at once and no per-frame "done" event is needed; departed frames leave the
        queue count lazily, at the next arrival (same occupancy as MR-FAB-010/011 define)."""
        now = self.sim.now
        qbytes = self.qbytes
        if qbytes:
            if self.free_at < now:
                # every queued frame has left (an idle port, the common case): the loop below
                # would subtract them all
                qbytes = 0
                self.deps.clear()
            else:
                deps = self.deps
                while deps and deps[0][0] < now:
                    qbytes -= deps.popleft()[1]     # a frame ending just now still counts (as MR-FAB-010)
        size = frame._wl
        if size <= CONTROL_MAX_BYTES and self.control and frame.bth.opcode in CONTROL_OPS:
            self.qbytes = qbytes
            self._control_fifo(frame, size, now)
            return
        if self.buffer is not None and qbytes + size > self.buffer:
            self.qbytes = qbytes
            self._drop()
            return
        if qbytes > self._ecn_q and frame.ip.ecn in (1, 2):
            # above _ecn_q only: no mark at or below the step threshold, nor at or below RED's
            # kmin (probability 0, no draw)
            red = self._red
            if red is not None:
                p = red.prob(qbytes)
                mark = p >= 1.0 or (p > 0.0 and self._red_rng.random() < p)
            else:
                mark = True
            if mark:
                frame = _copy_frame(frame)
                frame.ip.ecn = 3
                self.marked += 1
        self.enqueued += 1
        qbytes += size
        self.qbytes = qbytes
        if qbytes > self.peak_bytes:
            self.peak_bytes = qbytes
        if self.qlog is not None:
            self.qlog.append((now, qbytes))
        link = self.link
        try:
            ser = link._ser[size]         # link.ser_time(size), memoised
        except KeyError:
            ser = link.ser_time(size)
        start = self.free_at if self.free_at > now else now
        end = start + ser
        self.free_at = end
        self.deps.append((end, size))
        if link.faults is not None:
            link.carry(frame, ser, start)
            return
        # Link.carry without faults, inlined (the hot path of every hop).
        link.frames += 1
        link.bytes += size
        sim = self.sim
        if start == now:
            if not link._up:
                link.down_drops += 1
                return
            cb, arg = link._on_arrive, frame
        else:
            cb, arg = link._on_arrive_late, (frame, start)
        t = end + link.delay
        b = sim._b.get(t)
        if b is None:
            sim._b[t] = [(cb, arg)]
            heappush(sim._t, t)
        else:
            b.append((cb, arg))

    def _control_fifo(self, frame, size, now):
        """MR-FAB-019 in FIFO mode: the control frame leaves after the frame on the wire and the
        control frames ahead of it. The data frames already queued keep their computed
        departures; the port's next free time moves by the control frame's serialisation, so
        the data behind it is delayed by it (the link's time is conserved; a queued data frame
        may overlap a control frame on the wire by that frame's few nanoseconds)."""
        cdeps = self.cdeps
        if self.cfree_at < now:
            # every queued control frame has left (the common case), as in _enqueue_fifo
            cbytes = 0
            cdeps.clear()
        else:
            cbytes = self.cbytes
            while cdeps and cdeps[0][0] < now:
                cbytes -= cdeps.popleft()[1]
        if self.buffer is not None and cbytes + size > self.buffer:
            self.cbytes = cbytes
            self._drop()
            return
        deps = self.deps
        start = deps[0][0] if deps else now      # the end of the data frame on the wire
        if start < now:
            start = now
        if self.cfree_at > start:
            start = self.cfree_at
        link = self.link
        try:
            ser = link._ser[size]         # link.ser_time(size), memoised
        except KeyError:
            ser = link.ser_time(size)
        end = start + ser
        self.cfree_at = end
        self.free_at = (self.free_at if self.free_at > now else now) + ser
        cdeps.append((end, size))
        self.cbytes = cbytes + size
        self.enqueued += 1
        if link.faults is not None:
            link.carry(frame, ser, start)
            return
        # Link.carry without faults, inlined as in _enqueue_fifo (every ACK's hop)
        link.frames += 1
        link.bytes += size
        sim = self.sim
        if start <= now:
            if not link._up:
                link.down_drops += 1
                return
            t = now + ser + link.delay
            cb, arg = link._on_arrive, frame
        else:
            t = end + link.delay
            cb, arg = link._on_arrive_late, (frame, start)
        b = sim._b.get(t)
        if b is None:
            sim._b[t] = [(cb, arg)]
            heappush(sim._t, t)
        else:
            b.append((cb, arg))

    def _control_events(self, frame, size):
        """MR-FAB-019 in event mode: a queue served before the data queue, never paused."""
        if self.buffer is not None and self.cbytes + size > self.buffer:
            self._drop()
            return
        sb = self.shared
        if sb is not None:
            if sb.used + size > sb.total:
                self._drop()
                return
            sb.used += size
            if sb.used > sb.peak:
                sb.peak = sb.used
        self.enqueued += 1
        self.cq.append(frame)
        self.cbytes += size
        if not self.busy:
            self._start()

    def _start(self):
        if self.cq:
            frame = self.cq[0]
            self._on_ctrl = True
            self.busy = True
            link = self.link
            ser = (frame._wl + FRAME_OVERHEAD) * 8.0 / link._rate
            link.carry(frame, ser)
            push(self.sim, self.sim.now + ser, self._done, None)
            return
        self._on_ctrl = False
        if not self.q:
            self.busy = False
            return
        frame = self.q[0]
        if self.paused and frame.eth.pcp in self.paused:
            self.busy = False
            return
        self.busy = True
        link = self.link
        ser = (frame._wl + FRAME_OVERHEAD) * 8.0 / link._rate
        link.carry(frame, ser)
        push(self.sim, self.sim.now + ser, self._done, None)

    def _done(self, _):
        if self._on_ctrl:
            size = self.cq.popleft()._wl
            self.cbytes -= size
            if self.shared is not None:
                self.shared.used -= size
            self._start()
            return
        frame = self.q.popleft()
        size = frame._wl
        self.qbytes -= size
        if self.shared is not None:
            self.shared.used -= size
        if self.q_in:
            key = self.q_in.popleft()
            if key is not None:
                self.switch.discharge(key, size)
        if self.q or self.cq:
            self._start()
        else:
            self.busy = False

    def pause(self, prio):
        """PFC XOFF for ``prio`` from the downstream switch: no new frame of it starts."""
        self.paused.add(prio)
        self.link.pauses += 1

    def resume(self, prio):
        self.paused.discard(prio)
        if not self.busy and (self.q or self.cq):
            self._start()


class Switch:
    """Output-queued switch: route by destination IP, ECMP by 5-tuple hash (MR-FAB-012).

    With ``pfc`` (a :class:`Pfc`) it counts bytes per ingress link and priority and pauses the
    upstream transmitter (MR-FAB-015).
    """

    def __init__(self, sim, name, seed=0, pfc=None, mix=False):
        self.sim = sim
        self.mix = mix          # fmix32 the hash (multi-stage ECMP, MR-FAB-016)
        self.name = name
        self.seed = zlib.crc32(f"{seed}:{name}".encode())
        self.ports = []
        self.routes = {}        # dst IP -> tuple of OutPort (equal cost): change by add_route/drop_route
        self._one = {}          # dst IP -> OutPort of the routes with one next hop (no 5-tuple needed)
        self._fwd = {}          # (dst, src, sport, dport, proto) -> OutPort: ECMP routes, cached
        self.rx = self.no_route = self.fcs_drops = self.pauses_sent = 0     # counters (``stats``)
        self.pfc = pfc
        self.ing = {}           # PFC: (ingress link, priority) -> bytes queued in this switch
        self.xoff_sent = set()
        self.peak_ingress = 0

    def add_port(self, port):
        self.ports.append(port)
        port.switch = self
        if self.pfc is not None:
            port.set_fifo(False)    # PFC can hold frames back: event-driven port
        return port

    @property
    def stats(self):
        """The counters, as a dict built on read: ``rx``, ``no_route``, ``fcs_drops``,
        ``pauses_sent``."""
        return {"rx": self.rx, "no_route": self.no_route, "fcs_drops": self.fcs_drops,
                "pauses_sent": self.pauses_sent}

    def add_route(self, dst_ip, ports):
        hops = self.routes[dst_ip] = tuple(ports)
        if len(hops) == 1:
            self._one[dst_ip] = hops[0]
        else:
            self._one.pop(dst_ip, None)
        self._fwd.clear()

    def drop_route(self, dst_ip):
        self._one.pop(dst_ip, None)
        if self.routes.pop(dst_ip, None) is not None:
            self._fwd.clear()

    def headroom_of(self, link):
        hr = self.pfc.headroom
        return pfc_headroom(link.rate, link.delay) if hr is None else hr

    def charge(self, key, size):
        v = self.ing.get(key, 0) + size
        self.ing[key] = v
        if v > self.peak_ingress:
            self.peak_ingress = v
        if v > self.pfc.xoff and key not in self.xoff_sent:
            self.xoff_sent.add(key)
            self._signal(key, True)

    def discharge(self, key, size):
        v = self.ing[key] - size
        self.ing[key] = v
        if v <= self.pfc.xon and key in self.xoff_sent:
            self.xoff_sent.discard(key)
            self._signal(key, False)

    def _signal(self, key, xoff):
        link, prio = key
        tx = getattr(link, "src_tx", None)
        if tx is None:
            return
        self.pauses_sent += xoff
        # The pause frame travels back over the cable's other direction: same delay.
        self.sim.at(self.sim.now + link.delay, tx.pause if xoff else tx.resume, prio)

    def receive(self, frame, in_port=None):
        """``frame`` arrived (over link ``in_port``): queue it on the output port its route
        and ECMP hash pick (MR-FAB-012). Every hop of every frame runs this: the port chosen
        for a 5-tuple is cached until the routes change (add_route, drop_route)."""
        self.rx += 1
        ip = frame.ip
        port = self._one.get(ip.dst)
        if port is None:
            u = frame.udp
            key = (ip.dst, ip.src, u.sport, u.dport, ip.proto)
            port = self._fwd.get(key)
            if port is None:
                port = self._forward(frame, key)
                if port is None:
                    return
        if self.pfc is None:
            # port.enqueue's dispatch, inlined (every hop)
            if port._fifo:
                port._enqueue_fifo(frame)
            else:
                port._enqueue_events(frame)
        else:
            port.enqueue(frame, in_port if isinstance(in_port, Link) else None)

    def _forward(self, frame, key):
        """The output port for ``frame`` (5-tuple ``key``), cached; None without a route."""
        hops = self.routes.get(frame.ip.dst)
        if not hops:
            self.no_route += 1
            return None
        if len(hops) == 1:
            port = hops[0]
        else:
            h = ecmp_hash(frame, self.seed)
            port = hops[(fmix32(h) if self.mix else h) % len(hops)]
        fwd = self._fwd
        if len(fwd) >= 1 << 18:
            fwd.clear()
        fwd[key] = port
        return port

    def receive_bytes(self, data, in_port):
        # A corrupted frame fails the FCS check at the switch (the FCS is not modelled bit by
        # bit): it is dropped here. Corruption that reaches a host is checked by the ICRC.
        self.fcs_drops += 1


class NicPort:
    """One NIC port (one plane) of a host: a FIFO of ``NIC_TX_FIFO_FRAMES`` frames in front of the
    link (MR-FAB-021). PFC pauses from the first switch stop it between frames (MR-FAB-015)."""

    def __init__(self, host, index, link):
        self.host = host
        self.index = index
        self.link = link
        link.src_tx = self
        self.q = deque()
        self.busy = False
        self.paused = set()
        self._done_ev = (self._done, None)  # its "done" event, built once (see Link._on_arrive)

    def start(self, frame):
        self.busy = True
        link = self.link
        size = frame._wl
        try:
            ser = link._ser[size]         # link.ser_time(size), memoised
        except KeyError:
            ser = link.ser_time(size)
        sim = self.host.sim
        if link.faults is not None:
            link.carry(frame, ser)
        else:
            # Link.carry(frame, ser) without faults, inlined (every frame a host sends)
            link.frames += 1
            link.bytes += size
            if link._up:
                ls = link.sim
                t = ls.now + ser + link.delay
                b = ls._b.get(t)
                if b is None:
                    ls._b[t] = [(link._on_arrive, frame)]
                    heappush(ls._t, t)
                else:
                    b.append((link._on_arrive, frame))
            else:
                link.down_drops += 1
        t = sim.now + ser
        b = sim._b.get(t)
        if b is None:
            sim._b[t] = [self._done_ev]
            heappush(sim._t, t)
        else:
            b.append(self._done_ev)

    def blocked(self, frame):
        return self.busy or (self.paused and frame.eth.pcp in self.paused)

    def _done(self, _):
        h = self.host
        q = self.q
        if q and not (self.paused and q[0].eth.pcp in self.paused):
            self.start(q.popleft())
            if h._stalled is self and len(q) <= NIC_TX_FIFO_FRAMES:
                h._stalled = None
        else:
            self.busy = False
            if not q:
                h._free += 1    # free: nothing on the wire and nothing waiting (MR-FAB-021)
        h.pump()

    def pause(self, prio):
        self.paused.add(prio)
        self.link.pauses += 1

    def resume(self, prio):
        self.paused.discard(prio)
        h = self.host
        q = self.q
        if not self.busy and q and q[0].eth.pcp not in self.paused:
            self.start(q.popleft())     # it was not free: its FIFO held this frame
            if h._stalled is self and len(q) <= NIC_TX_FIFO_FRAMES:
                h._stalled = None
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
        self._stalled = None    # the port whose full FIFO stalls the transmit engine (MR-FAB-021)
        self._wake_t = None
        self.completions = []
        self.on_completion = None
        self.rx_hook = None     # rx_hook(frame, now): measurement tap on every delivered frame
        self.tx_hook = None     # tx_hook(frame, now): tap on every frame the endpoint sends
        # Inside the simulator frames travel as codec records; with wire_bytes every frame the
        # endpoint sends is encoded and decoded again (ICRC checked) before it leaves, as bytes
        # would be: a check that the records make the same decisions as the bytes.
        self.wire_bytes = False
        # counters (``stats``): attributes, which the per-frame paths add to cheaply
        self.tx = self.rx = self.decode_drops = self.corrupt_undetected = 0
        self.decode_reasons = {}

    @property
    def stats(self):
        """The counters, as a dict built on read: ``tx``, ``rx`` (frames), ``decode_drops``,
        ``corrupt_undetected`` and ``decode_reasons`` (MR-FAB-034)."""
        return {"tx": self.tx, "rx": self.rx, "decode_drops": self.decode_drops,
                "corrupt_undetected": self.corrupt_undetected, "decode_reasons": self.decode_reasons}

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
        """Take frames from the endpoint while a NIC port is free (nothing on the wire or in its FIFO)
        and no frame waits for room in a full FIFO; when it has nothing, sleep until its
        ``next_wakeup`` (MR-FAB-020, MR-FAB-021)."""
        ep = self.ep
        if ep is None:
            return
        now = self.sim.now
        # what only a frame needs is looked up below it: about half the calls are idle polls
        while self._free > 0 and self._stalled is None:
            f = ep.next_packet(now)
            if f is None:
                # nothing to send: wake at the endpoint's next_wakeup (one call per idle poll,
                # about one per packet, so written here)
                t = ep.next_wakeup(now)
                if t is not None:
                    if t <= now:
                        t = now + 1e-9      # the endpoint asked for "now" but had nothing: retry shortly
                    if self._wake_t is None or t < self._wake_t:
                        self._wake_t = t
                        self.sim.at(t, self._wake, t)
                return
            if self.wire_bytes:
                f = codec.decode(codec.encode(f))
            if f.eth.vlan is None and f.ip.version == 4:
                n = _HDR_LEN4.get(f.bth.opcode)
            else:
                n = _HDR_LEN.get((f.bth.opcode, f.eth.vlan is None, f.ip.version))
            if n is None:
                f._wl = frame_len(f)
            else:                       # frame_len inlined
                plen = len(f.payload)
                f._wl = n + plen + (-plen) % 4
            self.tx += 1
            if self.tx_hook is not None:
                self.tx_hook(f, now)
            nics = self.nics
            nic = nics[0] if len(nics) == 1 else nics[plane_of(f, len(nics))]
            q = nic.q
            if nic.busy or (nic.paused and nic.blocked(f)):
                if not q and not nic.busy:
                    self._free -= 1         # a paused idle port now has its next frame waiting
                q.append(f)
                if len(q) > NIC_TX_FIFO_FRAMES:
                    self._stalled = nic     # FIFO full: the engine holds this frame (MR-FAB-021)
            else:
                if not q:
                    self._free -= 1
                nic.start(f)

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

    def receive(self, frame, in_port=None):
        self.rx += 1
        ep = self.ep
        if ep is None:
            return
        now = self.sim.now
        if self.rx_hook is not None:
            self.rx_hook(frame, now)
        ep.receive(frame, now)
        comps = ep.poll_cq()            # self._poll(), inlined (every frame delivered)
        if comps:
            for c in comps:
                self.completions.append((now, c))
                if self.on_completion is not None:
                    self.on_completion(self, now, c)
        if self._free:
            self.pump()

    def receive_bytes(self, data, in_port):
        """A corrupted frame: decode it as the NIC would (ICRC checked) (MR-FAB-034)."""
        try:
            frame = codec.decode(data)
        except DecodeError as e:
            self.decode_drops += 1
            r = e.reason.label
            self.decode_reasons[r] = self.decode_reasons.get(r, 0) + 1
            return
        # The flipped bit was in a field no check covers (e.g. a masked BTH bit or the unused
        # IPv4 UDP checksum): the frame is still valid and is delivered.
        self.corrupt_undetected += 1
        frame._wl = len(data)
        self.receive(frame, in_port)
