"""Real UDP sockets transport on loopback (docs/spec/fabric.md, "UDP transport").

The same endpoint objects that run on the simulated fabric run here over real sockets, bound to
127.0.0.1 only, on ephemeral ports (MR-UDP-001). Conventions (MR-UDP-002..005):

* A datagram's payload is the UDP payload of ``codec.encode(frame)``: BTH through ICRC.
* The ICRC covers the IP addresses and UDP ports, so the sender encodes the frame with the headers
  the receiver will rebuild: IPv4 ``127.0.0.1 -> 127.0.0.1``, identification 0, UDP source port =
  the real port of the socket the datagram leaves from, destination port 4791 (the RoCEv2 port is
  logical here; the real destination port is the peer's ephemeral port). The receiver rebuilds the
  Ethernet/IPv4/UDP headers from the real source port and decodes with ICRC verification; a
  datagram that fails is dropped and counted by reason.
* Each entropy (a path's UDP source port chosen by the endpoint) is sent from its own socket, so
  each path really has its own source port; at most ``max_sockets`` are opened (entropies beyond
  share them round-robin). Everything arrives at the host's one main socket.
* ECN is not carried over loopback: rebuilt frames carry ECT(0).
* ``loss`` drops data frames at the sender before they reach the socket (seeded).

Run as a module, it is the receiving side of ``metaroce transfer``::

    python -m metaroce.sim.udp --role recv --bytes N [--paths P] [--mtu M]

It prints one JSON line ``{"port", "rkey", "va"}``, then reads the sender's ``{"port": p}`` from
stdin, serves until it reads ``done`` (or stdin closes, or ``--timeout``), and prints one JSON line
with the SHA-256 of its memory, its completions and its counters.
"""
from __future__ import annotations

import argparse
import copy
import dataclasses
import hashlib
import json
import os
import random
import select
import socket
import struct
import sys
import time

from metaroce.models import codec, wire
from metaroce.models.codec import DecodeError
from metaroce.models.codec import _ipv4_checksum  # the codec's own IPv4 checksum
from metaroce.models.icrc import icrc_bytes

LOOPBACK = "127.0.0.1"
_LO_PACKED = socket.inet_aton(LOOPBACK)
_ETH = bytes.fromhex("020000000002" "020000000001") + struct.pack("!H", wire.ETHERTYPE_IPV4)
_L2L3 = wire.ETH_HLEN + wire.IPV4_HLEN + wire.UDP_HLEN
DATA_OPS = frozenset(int(op) for op in wire.PAYLOAD_OPS)
SOCK_BUF = 16 << 20


def _big_buffers(sock):
    for opt, force in ((socket.SO_RCVBUF, 33), (socket.SO_SNDBUF, 32)):  # SO_RCVBUFFORCE/SNDBUFFORCE
        try:
            sock.setsockopt(socket.SOL_SOCKET, force, SOCK_BUF)
        except OSError:
            try:
                sock.setsockopt(socket.SOL_SOCKET, opt, SOCK_BUF)
            except OSError:
                pass


def _socket():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    _big_buffers(s)
    s.bind((LOOPBACK, 0))
    s.setblocking(False)
    return s


_HDR = {}


def rebuild(payload, sport):
    """The Ethernet frame a NIC would have received: loopback IPv4/UDP headers around ``payload``
    (BTH through ICRC) with the real source port ``sport`` (MR-UDP-003)."""
    udp_len = wire.UDP_HLEN + len(payload)
    return _l3_header(udp_len) + struct.pack("!HHHH", sport, wire.ROCE_PORT, udp_len, 0) + payload


def wire_payload_reference(frame, sport):
    """BTH..ICRC bytes of ``frame`` as the peer will rebuild it, straight from ``codec.encode``
    (MR-UDP-002): the definition that :func:`wire_payload` must equal byte for byte."""
    g = copy.copy(frame)
    g.eth = codec.Eth()
    g.ip = codec.IP(src=LOOPBACK, dst=LOOPBACK, dscp=frame.ip.dscp, ecn=frame.ip.ecn)
    g.udp = codec.UDP(sport=sport, dport=wire.ROCE_PORT)
    return codec.encode(g)[_L2L3:]


def _l3_header(udp_len):
    l2l3 = _HDR.get(udp_len)
    if l2l3 is None:
        ip = bytearray(struct.pack("!BBHHHBBH4s4s", 0x45, (26 << 2) | 2, wire.IPV4_HLEN + udp_len, 0,
                                   0x4000, 64, wire.IPPROTO_UDP, 0, _LO_PACKED, _LO_PACKED))
        ip[10:12] = struct.pack("!H", _ipv4_checksum(bytes(ip)))
        l2l3 = _HDR[udp_len] = _ETH + bytes(ip)
    return l2l3


def wire_payload(frame, sport):
    """BTH..ICRC bytes of ``frame`` as the peer will rebuild it (MR-UDP-002), built from the
    codec's own header encoders and ICRC without the Ethernet/IP text parsing of a full
    ``codec.encode`` (3x faster); equal to :func:`wire_payload_reference` (tested for every
    opcode). ``frame`` is left unchanged."""
    op = frame.bth.opcode
    payload = frame.payload
    pad = (-len(payload)) % 4
    bth = frame.bth if frame.bth.pad == pad else dataclasses.replace(frame.bth, pad=pad)
    parts = [codec.encode_bth(bth)]
    for name in wire.HEADERS[op]:
        parts.append(codec.encode_ext(name, None if name == "cnp" else getattr(frame, name)))
    parts.append(bytes(payload))
    if pad:
        parts.append(bytes(pad))
    l4 = b"".join(parts)
    udp_len = wire.UDP_HLEN + len(l4) + wire.ICRC_LEN
    l3 = _l3_header(udp_len)[wire.ETH_HLEN:] + struct.pack("!HHHH", sport, wire.ROCE_PORT, udp_len, 0)
    return l4 + icrc_bytes(l3 + l4)


class UdpHost:
    """Drives one endpoint over loopback UDP sockets toward one peer port."""

    def __init__(self, ep, *, peer_port=None, loss=0.0, seed=0, max_sockets=64, batch=64):
        if not 0.0 <= loss < 1.0:
            raise ValueError(f"loss {loss} is not in [0, 1)")
        self.ep = ep
        self.main = _socket()
        self.port = self.main.getsockname()[1]
        self.peer_port = peer_port
        self.loss = loss
        self.rng = random.Random(seed)
        self.max_sockets = max_sockets
        self.batch = batch
        self.socks = {}         # entropy -> socket
        self.pool = []
        self.t0 = time.monotonic()
        self.completions = []
        self.pcap = None        # a pcap Writer: every datagram sent and received, as rebuilt frames
        self.stats = {"tx": 0, "tx_bytes": 0, "rx": 0, "loss_drops": 0, "send_drops": 0,
                      "decode_drops": 0, "decode_reasons": {}}

    def now(self):
        return time.monotonic() - self.t0

    def _sock_for(self, entropy):
        s = self.socks.get(entropy)
        if s is None:
            if len(self.pool) < self.max_sockets:
                s = _socket()
                self.pool.append(s)
            else:
                s = self.pool[len(self.socks) % self.max_sockets]
            self.socks[entropy] = s
        return s

    def close(self):
        for s in self.pool + [self.main]:
            s.close()

    def _send(self, now):
        ep = self.ep
        st = self.stats
        n = 0
        dest = (LOOPBACK, self.peer_port)
        while n < self.batch:
            if n and n % 8 == 0:
                # Take in ACKs between sends: the endpoint's timers must not expire while its
                # ACKs wait unread in our socket buffer.
                self._recv()
                now = self.now()
            f = ep.next_packet(now)
            if f is None:
                break
            n += 1
            if self.loss and f.bth.opcode in DATA_OPS and self.rng.random() < self.loss:
                st["loss_drops"] += 1
                continue
            s = self._sock_for(f.udp.sport)
            sport = s.getsockname()[1]
            data = wire_payload(f, sport)
            try:
                s.sendto(data, dest)
            except (BlockingIOError, InterruptedError):
                st["send_drops"] += 1       # a full socket buffer is a loss the protocol repairs
                continue
            if self.pcap is not None:
                self.pcap.write(rebuild(data, sport), self.now())
            st["tx"] += 1
            st["tx_bytes"] += len(data)
        return n

    def _recv(self):
        ep = self.ep
        st = self.stats
        n = 0
        recv = self.main.recvfrom
        while n < self.batch:
            try:
                data, addr = recv(65536)
            except (BlockingIOError, InterruptedError):
                break
            n += 1
            if addr[0] != LOOPBACK:
                continue
            frame_bytes = rebuild(data, addr[1])
            if self.pcap is not None:
                self.pcap.write(frame_bytes, self.now())
            try:
                f = codec.decode(frame_bytes)
            except DecodeError as e:
                st["decode_drops"] += 1
                r = e.reason.label
                st["decode_reasons"][r] = st["decode_reasons"].get(r, 0) + 1
                continue
            st["rx"] += 1
            ep.receive(f, self.now())
        return n

    def _poll(self):
        for c in self.ep.poll_cq():
            self.completions.append(c)

    def step(self, max_wait=0.005, extra_fds=()):
        """One round: receive what is there, send what the endpoint wants, else sleep until the
        endpoint's next wake-up, a datagram, or ``max_wait``. Returns fds in ``extra_fds`` that
        are readable."""
        got = self._recv()
        sent = self._send(self.now()) if self.peer_port is not None else 0
        self._poll()
        if got or sent:
            if extra_fds:
                r, _, _ = select.select(list(extra_fds), [], [], 0)
                return r
            return []
        now = self.now()
        wake = self.ep.next_wakeup(now)
        wait = max_wait if wake is None else min(max_wait, max(0.0, wake - now))
        r, _, _ = select.select([self.main, *extra_fds], [], [], wait)
        return [x for x in r if x is not self.main]


# ---------------------------------------------------------------------------------------------
# Endpoint construction shared by both sides of `metaroce transfer`.

def make_endpoint(kind="metaroce", **cfg):
    """An endpoint for loopback: address 127.0.0.1, MTU and pacing suited to a software host."""
    if kind == "metaroce":
        from metaroce.models.endpoint import Endpoint as E
    else:
        from metaroce.models.rocev2 import RoceEndpoint as E
    return E(addr=LOOPBACK, **cfg)


def _recv_main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m metaroce.sim.udp")
    ap.add_argument("--role", choices=["recv"], required=True)
    ap.add_argument("--bytes", type=int, required=True)
    ap.add_argument("--paths", type=int, default=8)
    ap.add_argument("--config", default="{}", help="endpoint configuration as JSON")
    ap.add_argument("--timeout", type=float, default=300.0)
    a = ap.parse_args(argv)
    cfg = json.loads(a.config)
    kind = cfg.pop("kind", "metaroce")
    ep = make_endpoint(kind, **cfg)
    mem = bytearray(a.bytes)
    key = ep.reg_mr(mem)
    ep.connect(2, LOOPBACK, 1, paths=a.paths)
    host = UdpHost(ep)
    print(json.dumps({"port": host.port, "rkey": key, "va": 0}), flush=True)
    stdin = sys.stdin.buffer
    line = stdin.readline()
    if not line:
        return 1
    host.peer_port = int(json.loads(line)["port"])
    deadline = time.monotonic() + a.timeout
    fd = stdin.fileno()
    while time.monotonic() < deadline:
        if host.step(extra_fds=(fd,)):
            msg = os.read(fd, 4096)
            if not msg or b"done" in msg:
                break
    ep_stats = getattr(ep, "stats", {})
    out = {"sha256": hashlib.sha256(mem).hexdigest(),
           "completions": [{"wr_id": c.wr_id, "status": str(c.status), "byte_len": c.byte_len}
                           for c in host.completions],
           "transport": host.stats,
           "endpoint": {k: v for k, v in ep_stats.items() if isinstance(v, (int, float))}}
    print(json.dumps(out), flush=True)
    host.close()
    return 0


if __name__ == "__main__":
    sys.exit(_recv_main())
