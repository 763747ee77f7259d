"""Real UDP sockets transport on loopback (docs/spec/fabric.md, "UDP transport").

The same endpoint objects that run on the simulated fabric run here over real sockets, bound to
127.0.0.1 only, on ephemeral ports (MR-UDP-001). Conventions (MR-UDP-002..009):

* A datagram's payload is the UDP payload of ``codec.encode(frame)``: BTH through ICRC.
* The ICRC covers the IP addresses and UDP ports, so the sender encodes the frame with the headers
  the receiver will rebuild: IPv4 ``127.0.0.1 -> 127.0.0.1``, identification 0, UDP source port =
  the real port of the socket the datagram leaves from, destination port 4791 (the RoCEv2 port is
  logical here; the real destination port is the peer's ephemeral port). The receiver rebuilds the
  Ethernet/IPv4/UDP headers from the real source port and decodes with ICRC verification; a
  datagram that fails is dropped and counted by reason.
* Each entropy (a path's UDP source port chosen by the endpoint) is sent from its own socket, so
  each path really has its own source port; at most ``max_sockets`` are open (one per path in
  ``metaroce transfer``; a new entropy beyond closes the least recently used). Everything arrives
  at the host's one main socket, the only one with a big receive buffer; every open socket is read
  (MR-UDP-004, MR-UDP-006).
* A closed peer port (ICMP port unreachable on a connected send socket) raises
  :class:`PeerUnreachable`; a write the wire cannot carry is refused when posted (MR-UDP-007/008).
* ECN is not carried over loopback: rebuilt frames carry ECT(0).
* ``loss`` drops data frames at the sender before they reach the socket (seeded).
* Security (docs/spec/security.md): the two sides connect with the handshake (MR-CONN-100..107)
  on the wire; with authentication on (the default) a :class:`~metaroce.models.security.AuthenticatedHost`
  seals every frame the endpoint sends and opens every frame that arrives, before the endpoint
  sees it (MR-SEC-140/141). Dropped frames are counted by reason in ``stats["auth_drops"]``.

Run as a module, it is the receiving side of ``metaroce transfer``::

    python -m metaroce.sim.udp --role recv --bytes N [--paths P] [--mtu M]

It prints one JSON line ``{"port", "rkey", "va"}``, then reads the sender's
``{"port": p, "auth": bool, "encrypt": bool, "psk": hex or null}`` from stdin (the pre-shared key
of the handshake travels over the pipe, out of reach of other local processes), answers the
sender's handshake request on the wire, serves until it reads ``done`` (or stdin closes, or
``--timeout``), and prints one JSON line with the SHA-256 of its memory, its completions and its
counters.
"""
from __future__ import annotations

import argparse
import collections
import copy
import dataclasses
import hashlib
import json
import os
import random
import resource
import selectors
import socket
import struct
import sys
import time

from metaroce.models import codec, wire
from metaroce.models import handshake as hs
from metaroce.models.security import AuthenticatedHost
from metaroce.models.codec import DecodeError
from metaroce.models.codec import _ipv4_checksum  # the codec's own IPv4 checksum
from metaroce.models.icrc import icrc_bytes

LOOPBACK = "127.0.0.1"
_LO_PACKED = socket.inet_aton(LOOPBACK)
_ETH = bytes.fromhex("020000000002" "020000000001") + struct.pack("!H", wire.ETHERTYPE_IPV4)
_L2L3 = wire.ETH_HLEN + wire.IPV4_HLEN + wire.UDP_HLEN
DATA_OPS = frozenset(int(op) for op in wire.PAYLOAD_OPS)
SOCK_BUF = 16 << 20


class TransportError(Exception):
    """The socket transport cannot go on (a frame that cannot be encoded, the peer gone)."""


class PeerUnreachable(TransportError):
    """The peer's port is closed: the kernel answered a datagram with ICMP port unreachable
    (MR-UDP-007)."""


def _set_buffer(sock, opt, force):
    # SO_RCVBUFFORCE/SO_SNDBUFFORCE pass the sysctl cap where the process may (CAP_NET_ADMIN).
    for o in (force, opt):
        try:
            sock.setsockopt(socket.SOL_SOCKET, o, SOCK_BUF)
            return
        except OSError:
            pass


def _socket(*, receive_buffer):
    """A non-blocking UDP socket on 127.0.0.1 (MR-UDP-001) with a big send buffer, and a big
    receive buffer only where ``receive_buffer`` (the one socket traffic is sent to, MR-UDP-006)."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    _set_buffer(s, socket.SO_SNDBUF, 32)
    if receive_buffer:
        _set_buffer(s, socket.SO_RCVBUF, 33)
    s.bind((LOOPBACK, 0))
    s.setblocking(False)
    return s


def check_write(length, remote_va, rkey, imm=None):
    """Refuse an RDMA write whose fields the wire cannot carry (MR-UDP-008): RETH VA 64 bits
    (the whole range [VA, VA + length) included), R_Key and DMA length 32 bits, ImmDt 32 bits.
    Raises ``ValueError`` naming the field, before anything is posted."""
    for name, v in (("length", length), ("remote_va", remote_va), ("rkey", rkey)):
        if not isinstance(v, int) or isinstance(v, bool):
            raise ValueError(f"{name} must be an integer, not {v!r}")
    if not 0 <= length < 1 << 32:
        raise ValueError(f"length {length} does not fit the 32-bit DMA length")
    if not 0 <= remote_va < 1 << 64:
        raise ValueError(f"remote_va {remote_va:#x} does not fit the 64-bit RETH VA")
    if remote_va + length > 1 << 64:
        raise ValueError(f"remote_va {remote_va:#x} + length {length} runs past 2^64")
    if not 0 <= rkey < 1 << 32:
        raise ValueError(f"rkey {rkey:#x} does not fit the 32-bit R_Key")
    if imm is not None and not (isinstance(imm, int) and 0 <= imm < 1 << 32):
        raise ValueError(f"imm {imm!r} does not fit the 32-bit ImmDt")


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
    for name in wire.headers_of(op):        # MR-WIRE-084: the announcement has none
        parts.append(codec.encode_ext(name, None if name == "cnp" else getattr(frame, name)))
    parts.append(bytes(payload))
    if pad:
        parts.append(bytes(pad))
    l4 = b"".join(parts)
    udp_len = wire.UDP_HLEN + len(l4) + wire.ICRC_LEN
    l3 = _l3_header(udp_len)[wire.ETH_HLEN:] + struct.pack("!HHHH", sport, wire.ROCE_PORT, udp_len, 0)
    return l4 + icrc_bytes(l3 + l4)


class UdpHost:
    """Drives one endpoint over loopback UDP sockets toward one peer port.

    Sockets (MR-UDP-004, MR-UDP-006): ``main`` receives everything the peer sends; each entropy
    sends from its own socket, connected to the peer's port, opened when first used. At most
    ``max_sockets`` are open: a new entropy beyond that closes the least recently used one.
    Every open socket is read: a connected socket only takes datagrams from the peer, and an ICMP
    port unreachable on one raises :class:`PeerUnreachable` (MR-UDP-007).
    """

    def __init__(self, ep, *, peer_port=None, loss=0.0, seed=0, max_sockets=64, batch=64):
        if not 0.0 <= loss < 1.0:
            raise ValueError(f"loss {loss} is not in [0, 1)")
        if not 1 <= max_sockets <= 1024:
            raise ValueError(f"max_sockets {max_sockets} is not in 1..1024")
        self.ep = ep
        self.sel = selectors.DefaultSelector()
        self.main = _socket(receive_buffer=True)
        self.sel.register(self.main, selectors.EVENT_READ)
        self.port = self.main.getsockname()[1]
        self.peer_port = peer_port
        self.loss = loss
        self.rng = random.Random(seed)
        self.max_sockets = max_sockets
        self.batch = batch
        self.socks = collections.OrderedDict()     # entropy -> (socket, its port), oldest use first
        self._extra = set()                         # caller's fds registered in ``sel``
        self.t0 = time.monotonic()
        self.completions = []
        self.pcap = None        # a pcap Writer: every datagram sent and received, as rebuilt frames
        #: MR-SEC-140: an AuthenticatedHost-like guard (``seal``, ``open``, ``drops``), or None
        #: for an unauthenticated connection.
        self.guard = None
        #: MR-CONN-100: called with each handshake frame (and ``now``); None drops them.
        self.on_handshake = None
        self.stats = {"tx": 0, "tx_bytes": 0, "rx": 0, "loss_drops": 0, "send_drops": 0,
                      "decode_drops": 0, "decode_reasons": {}, "sockets_opened": 1, "sockets_open_max": 1,
                      "auth_drops": {}, "handshake_rx": 0, "handshake_tx": 0}

    def now(self):
        return time.monotonic() - self.t0

    def sockets(self):
        """Every open socket (all of them are read)."""
        return [self.main] + [s for s, _ in self.socks.values()]

    def _sock_for(self, entropy):
        """(socket, its port) that datagrams of ``entropy`` leave from."""
        entry = self.socks.get(entropy)
        if entry is not None:
            self.socks.move_to_end(entropy)
            return entry
        if self.peer_port is None:
            raise TransportError("no peer port yet")
        if len(self.socks) >= self.max_sockets:
            _, (old, _) = self.socks.popitem(last=False)
            self.sel.unregister(old)
            old.close()
        s = _socket(receive_buffer=False)
        s.connect((LOOPBACK, self.peer_port))
        self.sel.register(s, selectors.EVENT_READ)
        entry = self.socks[entropy] = (s, s.getsockname()[1])
        st = self.stats
        st["sockets_opened"] += 1
        st["sockets_open_max"] = max(st["sockets_open_max"], 1 + len(self.socks))
        return entry

    def close(self):
        for s in self.sockets():
            s.close()
        self.socks.clear()
        self.sel.close()

    def _unreachable(self, err):
        return PeerUnreachable(f"peer {LOOPBACK}:{self.peer_port} unreachable ({err.strerror or err})")

    def _send(self, now):
        ep = self.ep
        st = self.stats
        n = 0
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
            if self.guard is not None:
                f = self.guard.seal(f)      # MR-SEC-110
                if f is None:
                    continue
            s, sport = self._sock_for(f.udp.sport)
            try:
                data = wire_payload(f, sport)
            except (struct.error, OverflowError, ValueError, TypeError) as e:
                raise TransportError(f"cannot encode a {wire.Op(f.bth.opcode).name} frame: {e}") from None
            try:
                s.send(data)
            except (BlockingIOError, InterruptedError):
                st["send_drops"] += 1       # a full socket buffer is a loss the protocol repairs
                continue
            except ConnectionRefusedError as e:
                raise self._unreachable(e) from None
            if self.pcap is not None:
                self.pcap.write(rebuild(data, sport), self.now())
            st["tx"] += 1
            st["tx_bytes"] += len(data)
        return n

    def _recv(self, sock=None):
        ep = self.ep
        st = self.stats
        n = 0
        recv = (self.main if sock is None else sock).recvfrom
        while n < self.batch:
            try:
                data, addr = recv(65536)
            except (BlockingIOError, InterruptedError):
                break
            except ConnectionRefusedError as e:
                raise self._unreachable(e) from None
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
            if f.bth.opcode in wire.CONN_OPS:
                st["handshake_rx"] += 1
                if self.on_handshake is not None:
                    self.on_handshake(f, self.now())
                continue
            if self.guard is not None:
                f = self.guard.open(f)      # MR-SEC-140: checked before any state changes
                if f is None:
                    st["auth_drops"] = dict(self.guard.drops)
                    continue
            st["rx"] += 1
            ep.receive(f, self.now())
        return n

    def send_frame(self, f):
        """Send one frame outside the endpoint (a handshake frame, MR-CONN-100)."""
        s, sport = self._sock_for(f.udp.sport)
        data = wire_payload(f, sport)
        try:
            s.send(data)
        except (BlockingIOError, InterruptedError):
            self.stats["send_drops"] += 1      # the handshake's retries repair it
            return
        except ConnectionRefusedError as e:
            raise self._unreachable(e) from None
        if self.pcap is not None:
            self.pcap.write(rebuild(data, sport), self.now())
        self.stats["handshake_tx"] += 1

    def _poll(self):
        for c in self.ep.poll_cq():
            self.completions.append(c)

    def post_write(self, conn, stream, lkey, loffset, length, remote_va, rkey, wr_id, imm=None):
        """``conn.post_write`` after :func:`check_write` (MR-UDP-008): a write the wire cannot
        carry is refused here, not by a crash in the middle of the transfer."""
        check_write(length, remote_va, rkey, imm)
        conn.post_write(stream, lkey, loffset, length, remote_va, rkey, wr_id, imm=imm)

    def _ready(self, timeout, extra_fds):
        """Wait up to ``timeout`` seconds; drain every readable socket; return the ready fds
        among ``extra_fds``."""
        for fd in extra_fds:
            if fd not in self._extra:
                self.sel.register(fd, selectors.EVENT_READ)
                self._extra.add(fd)
        out = []
        for key, _ in self.sel.select(timeout):
            if key.fileobj is self.main:
                self._recv()
            elif key.fileobj in self._extra:
                if key.fileobj in extra_fds:
                    out.append(key.fileobj)
            else:
                self._recv(key.fileobj)     # nothing legitimate arrives here, but never leave it unread
        return out

    def step(self, max_wait=0.005, extra_fds=()):
        """One round: receive what is there, send what the endpoint wants, else sleep until the
        endpoint's next wake-up, a datagram, or ``max_wait``. Returns fds in ``extra_fds`` that
        are readable. Raises :class:`TransportError` when the transport cannot go on."""
        got = self._recv()
        sent = self._send(self.now()) if self.peer_port is not None else 0
        self._poll()
        if got or sent:
            return self._ready(0, extra_fds)
        now = self.now()
        wake = self.ep.next_wakeup(now)
        wait = max_wait if wake is None else min(max_wait, max(0.0, wake - now))
        ready = self._ready(wait, extra_fds)
        self._poll()
        return ready


# ---------------------------------------------------------------------------------------------
# Endpoint construction shared by both sides of `metaroce transfer`.

def make_endpoint(kind="metaroce", **cfg):
    """An endpoint for loopback: address 127.0.0.1, MTU and pacing suited to a software host."""
    if kind == "metaroce":
        from metaroce.models.endpoint import Endpoint as E
    else:
        from metaroce.models.rocev2 import RoceEndpoint as E
    return E(addr=LOOPBACK, **cfg)


def sockets_for(paths):
    """Send sockets per process for ``paths`` paths: one per path, at most 64 (MR-UDP-006)."""
    return max(1, min(64, paths))


def max_rss_kib():
    """This process's peak resident set size in KiB: ``VmHWM``, which starts afresh at exec
    (``ru_maxrss`` keeps the parent's peak across fork and exec)."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def _recv_main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m metaroce.sim.udp")
    ap.add_argument("--role", choices=["recv"], required=True)
    ap.add_argument("--bytes", type=int, required=True)
    ap.add_argument("--paths", type=int, default=8)
    ap.add_argument("--config", default="{}", help="endpoint configuration as JSON")
    ap.add_argument("--timeout", type=float, default=300.0)
    a = ap.parse_args(argv)
    try:
        return _serve(a)
    except MemoryError:
        msg = f"out of memory: the receive buffer needs {a.bytes} bytes ({a.bytes / (1 << 20):.1f} MiB)"
    except (TransportError, OSError, ValueError, TypeError, KeyError) as e:
        msg = f"{type(e).__name__}: {e}" if not isinstance(e, TransportError) else str(e)
    # One line on stderr: the sender relays it (MR-UDP-009).
    print(f"receiver: {msg}", file=sys.stderr, flush=True)
    return 1


def _serve(a):
    if not 0 < a.bytes < 1 << 32:
        raise ValueError(f"--bytes {a.bytes} is not in 1..2^32-1")
    cfg = json.loads(a.config)
    kind = cfg.pop("kind", "metaroce")
    ep = make_endpoint(kind, **cfg)
    mem = bytearray(a.bytes)
    key = ep.reg_mr(mem)
    host = UdpHost(ep, max_sockets=sockets_for(a.paths))
    try:
        print(json.dumps({"port": host.port, "rkey": key, "va": 0}), flush=True)
        stdin = sys.stdin.buffer
        line = stdin.readline()
        if not line:
            return 1
        peer = json.loads(line)
        host.peer_port = int(peer["port"])
        auth = bool(peer.get("auth", True))
        psk = bytes.fromhex(peer["psk"]) if peer.get("psk") else None
        server = hs.Server(hs.Config(paths=a.paths, mtu=ep.mtu, auth=auth, encrypt=bool(peer.get("encrypt")),
                                     psk=psk, max_conns=1))
        if auth:
            host.guard = AuthenticatedHost(ep)

        def on_handshake(f, now):
            # MR-CONN-100: answer on the wire; a new session opens the endpoint's connection.
            answer = server.receive(f, now)
            for sess in server.new_sessions:
                # MR-CONN-107: the handshake's random QPNs and initial PSNs
                # MR-SEC-153: an unauthenticated MetaRoCE connection proves receipt in its ACKs
                proof = {"receipt_key": sess.receipt_key()} if kind == "metaroce" and not auth else {}
                ep.connect(sess.local_qpn, LOOPBACK, sess.peer_qpn, paths=sess.paths,
                           init_psn=sess.local_psn, peer_init_psn=sess.peer_psn, **proof)
                if auth:
                    host.guard.add(sess.local_qpn, sess.peer_qpn, sess.channel())
            server.new_sessions.clear()
            if answer is not None:
                host.send_frame(answer)

        host.on_handshake = on_handshake
        deadline = time.monotonic() + a.timeout
        fd = stdin.fileno()
        while time.monotonic() < deadline:
            if host.step(extra_fds=(fd,)):
                msg = os.read(fd, 4096)
                if not msg or b"done" in msg:
                    break
        ep_stats = getattr(ep, "stats", {})
        if host.guard is not None:
            host.stats["auth_drops"] = dict(host.guard.drops)
        out = {"sha256": hashlib.sha256(mem).hexdigest(),
               "completions": [{"wr_id": c.wr_id, "status": str(c.status), "byte_len": c.byte_len}
                               for c in host.completions],
               "transport": host.stats,
               "endpoint": {k: v for k, v in ep_stats.items() if isinstance(v, (int, float))},
               "handshake_rejects": dict(server.rejects),
               "cpu_seconds": round(time.process_time(), 3),
               "max_rss_kib": max_rss_kib()}
        print(json.dumps(out), flush=True)
    finally:
        host.close()
    return 0


if __name__ == "__main__":
    sys.exit(_recv_main())
