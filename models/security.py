"""Per-packet authentication: seal and open MR_SEC frames (docs/spec/security.md).

:class:`SecureChannel` holds one connection's keys: the sending direction's epoch and per-path
sequence numbers, and the receiving direction's keys and bounded replay windows. ``seal`` turns
a frame into an MR_SEC frame (MR-SEC-110..112); ``open`` checks one in the order of MR-SEC-140
and returns the protected frame, or raises :class:`Drop` with the reason, having changed
nothing but counters (MR-SEC-141).

:class:`AuthenticatedHost` wraps an endpoint for the simulated fabric: frames from
``next_packet`` are sealed, frames for ``receive`` are opened first, so nothing unauthenticated
reaches the endpoint. :class:`RKeyGenerator` gives R_Keys with 32 random bits (MR-SEC-152).
"""
from __future__ import annotations

import collections
import hashlib
import secrets
import struct
from dataclasses import replace

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDFExpand

from . import codec, wire
from .wire import Op, SecFlag

__all__ = ["Drop", "ReplayWindow", "SecureChannel", "AuthenticatedHost", "RKeyGenerator",
           "epoch_key", "nonce", "receipt_key", "receipt_proof", "split_proof", "join_proof",
           "PROOF_ACK", "PROOF_NAK", "REPLAY_WINDOW", "SEQ_LIMIT", "DROP_REASONS"]

#: MR-SEC-121: sequence numbers remembered per (direction, path).
REPLAY_WINDOW = 1024
#: MR-SEC-130: frames sealed per key and path before the sender moves to the next epoch.
SEQ_LIMIT = 1 << 32
TAG_LEN = wire.TAG_LEN
KEY_LEN = 16        # AES-128-GCM (MR-SEC-111)

#: MR-SEC-140: why a frame was dropped, in check order.
DROP_REASONS = ("unauthenticated", "unexpected_sec", "no_connection", "malformed", "bad_path",
                "stale_epoch", "replay", "bad_tag")

_INNER_BAD = frozenset({Op.MR_SEC}) | wire.CONN_OPS


class Drop(Exception):
    """A frame refused before it reached the endpoint (MR-SEC-140); ``reason`` in DROP_REASONS."""

    def __init__(self, reason):
        super().__init__(reason)
        self.reason = reason


def epoch_key(master, direction, epoch):
    """MR-SEC-130: the AES key of ``direction`` (0 client to server) in full epoch ``epoch``."""
    info = b"metaroce v1 key" + struct.pack("!BI", direction, epoch)
    return HKDFExpand(hashes.SHA256(), KEY_LEN, info).derive(master)


# -- proof of receipt for unauthenticated connections (MR-SEC-153..156) ------------------------

PROOF_ACK, PROOF_NAK = 1, 2     # MR-SEC-153: an ACK's proof is never a NAK's, and back
_PROOF_MSG = struct.Struct("!IBHB")     # connection id (24 bits in 32), path, PSN high 16, then low 8


def receipt_key(master):
    """MR-SEC-153: the connection's 16-byte receipt key, from the handshake's master secret."""
    return HKDFExpand(hashes.SHA256(), 16, b"metaroce v1 receipt").derive(master)


P_SACK_MASK = (1 << 256) - 1
_PROOF_ACK_FIELDS = struct.Struct("!BHII")     # flags, ce_count, cum_psn, rate_mbps; then the SACK


def receipt_proof(key, kind, conn_id, path, psn, ack=None):
    """MR-SEC-153: the 32-bit proof that the peer holding ``key`` received the data packet
    ``psn`` of path ``path`` sent by connection ``conn_id`` (``kind`` PROOF_ACK or PROOF_NAK):
    the first 4 bytes, big-endian, of keyed BLAKE2s (RFC 7693) over kind, connection id, path
    and PSN, then, for an ACK (``ack``, its MRAH), everything else the ACK says: flags, CE
    count, cumulative PSN, rate hint and the 256-bit SACK, so that no field can be changed
    without the key."""
    msg = _PROOF_MSG.pack((kind << 24) | (conn_id & 0xFFFFFF), path & 0xFF, (psn >> 8) & 0xFFFF,
                          psn & 0xFF)
    if ack is not None:
        msg += _PROOF_ACK_FIELDS.pack(ack.flags & 0xF, ack.ce_count & 0xFFFF, ack.cum_psn & 0xFFFFFFFF,
                                      ack.rate_mbps & 0xFFFFFFFF) + (ack.sack & P_SACK_MASK).to_bytes(32, "big")
    return int.from_bytes(hashlib.blake2s(msg, digest_size=4, key=key).digest(), "big")


def split_proof(proof, psn):
    """MR-WIRE-073/074: (BTH PSN, 32-bit PSN field) carrying ``proof`` next to ``psn``: the
    proof's low 24 bits in the BTH PSN of the ACK or NAK, its high 8 bits in the high byte of
    MRAH ``trigger_psn`` / MRNH ``psn``."""
    return proof & 0xFFFFFF, (proof >> 24) << 24 | (psn & 0xFFFFFF)


def join_proof(bth_psn, psn_field):
    """The inverse of :func:`split_proof`: ``(proof, psn)``."""
    return (psn_field >> 24) << 24 | (bth_psn & 0xFFFFFF), psn_field & 0xFFFFFF


_NONCE = struct.Struct("!BBHQ")


def nonce(direction, epoch, path, seq):
    """MR-SEC-120: direction (8) || epoch (8, its low bits) || path (16) || seq (64)."""
    return _NONCE.pack(direction, epoch & 0xFF, path, seq)


def path_of(frame):
    """The path a frame belongs to (MRDH/MRAH/MRNH ``path``; 0 for frames without one)."""
    for h in (frame.mrdh, frame.mrah, frame.mrnh):
        if h is not None:
            return h.path
    return 0


def _aad_bth(bth):
    # MR-SEC-111: byte 4 (FECN, BECN, reserved) changes in flight, and PadCnt follows the length.
    return codec.encode_bth(replace(bth, opcode=Op.MR_SEC, pad=0, fecn=0, becn=0))


class ReplayWindow:
    """MR-SEC-121: the highest sequence number verified and a bitmap of the 1,024 below it."""
    __slots__ = ("top", "bits")

    def __init__(self):
        self.top = -1
        self.bits = 0

    def fresh(self, seq):
        """Whether ``seq`` may still be accepted (not seen, not too old). Changes nothing."""
        if seq > self.top:
            return True
        back = self.top - seq
        return back < REPLAY_WINDOW and not (self.bits >> back) & 1

    def mark(self, seq):
        """Record ``seq`` as accepted (only after its tag verified)."""
        if seq > self.top:
            shift = seq - self.top
            self.bits = ((self.bits << shift) | 1) & ((1 << REPLAY_WINDOW) - 1) if shift < REPLAY_WINDOW else 1
            self.top = seq
        else:
            self.bits |= 1 << (self.top - seq)


class _RxEpoch:
    __slots__ = ("epoch", "aead", "windows")

    def __init__(self, master, direction, epoch, paths):
        self.epoch = epoch
        self.aead = AESGCM(epoch_key(master, direction, epoch))
        self.windows = [ReplayWindow() for _ in range(paths)]


class SecureChannel:
    """One connection's security association (MR-SEC-110/111/112, MR-SEC-120/121, MR-SEC-130/131, MR-SEC-140/141).

    ``master``: the 32-byte secret from the handshake (MR-CONN-103); ``direction``: this side's
    sending direction (0 for the client, 1 for the server); ``paths``: the connection's path
    count (bounds the replay state); ``encrypt``: payload encryption (MR-SEC-112).
    """

    def __init__(self, master, direction, paths, *, encrypt=False, seq_limit=SEQ_LIMIT):
        if direction not in (0, 1):
            raise ValueError(f"direction must be 0 or 1, not {direction!r}")
        if not 1 <= paths <= 256:
            raise ValueError(f"paths must be 1..256, not {paths!r}")
        if len(master) != 32:
            raise ValueError("the master secret is 32 bytes")
        self.master = bytes(master)
        self.direction = direction
        self.paths = paths
        self.encrypt = encrypt
        self.seq_limit = seq_limit
        self.tx_epoch = 0
        self._tx_aead = AESGCM(epoch_key(master, direction, 0))
        self._tx_seq = [0] * paths
        rx_dir = 1 - direction
        # MR-SEC-131: previous (for frames in flight), current and next epoch.
        self._rx = {0: _RxEpoch(master, rx_dir, 0, paths), 1: _RxEpoch(master, rx_dir, 1, paths)}
        self.rx_epoch = 0
        self.sealed = 0
        self.opened = 0
        self.drops = collections.Counter()

    # ------------------------------------------------------------------ send
    def rekey(self):
        """MR-SEC-130: move the sending direction to the next epoch; every path's seq restarts."""
        self.tx_epoch += 1
        self._tx_aead = AESGCM(epoch_key(self.master, self.direction, self.tx_epoch))
        self._tx_seq = [0] * self.paths

    def seal(self, frame):
        """The MR_SEC frame that carries ``frame`` (MR-SEC-110..112, MR-SEC-120)."""
        op = Op(frame.bth.opcode)
        if op in _INNER_BAD:
            raise ValueError(f"{op.name} frames are not sealed")
        path = path_of(frame)
        if path >= self.paths:
            raise ValueError(f"path {path} beyond the connection's {self.paths}")
        if self._tx_seq[path] >= self.seq_limit:
            self.rekey()
        seq = self._tx_seq[path]
        self._tx_seq[path] = seq + 1
        names = wire.HEADERS[op]
        hdrs = b"".join([codec.encode_ext(n, None if n == "cnp" else getattr(frame, n)) for n in names])
        sec = codec.MRSEC(flags=SecFlag.ENCRYPTED if self.encrypt else 0, next_op=int(op), path=path,
                          epoch=self.tx_epoch & 0xFF, seq=seq)
        bth = replace(frame.bth, opcode=Op.MR_SEC)
        aad = _aad_bth(bth) + codec.encode_ext("mrsec", sec) + hdrs
        iv = nonce(self.direction, self.tx_epoch, path, seq)
        payload = bytes(frame.payload)
        if self.encrypt:
            body = hdrs + self._tx_aead.encrypt(iv, payload, aad)
        else:
            body = b"".join((hdrs, payload, self._tx_aead.encrypt(iv, b"", aad + payload)))
        self.sealed += 1
        return codec.Frame(eth=frame.eth, ip=frame.ip, udp=frame.udp, bth=bth, mrsec=sec, payload=body)

    # ------------------------------------------------------------------ receive
    def _rx_state(self, wire_epoch):
        """The receive epoch whose low 8 bits are ``wire_epoch`` among previous, current, next."""
        for e in (self.rx_epoch, self.rx_epoch + 1, self.rx_epoch - 1):
            if e >= 0 and (e & 0xFF) == wire_epoch and e in self._rx:
                return self._rx[e]
        return None

    def open(self, frame):
        """The protected frame inside MR_SEC ``frame``, or :class:`Drop` (MR-SEC-140). Nothing
        but the drop counter changes before the tag has verified (MR-SEC-141)."""
        try:
            return self._open(frame)
        except Drop as d:
            self.drops[d.reason] += 1
            raise

    def _open(self, g):
        sec = g.mrsec
        if sec is None or g.bth.opcode != Op.MR_SEC:
            raise Drop("unauthenticated")
        try:
            op = Op(sec.next_op)
        except ValueError:
            raise Drop("malformed") from None
        body = g.payload
        hlen = wire.ext_len(op)
        if op in _INNER_BAD or len(body) < hlen + TAG_LEN or \
                bool(sec.flags & SecFlag.ENCRYPTED) != self.encrypt or \
                (op not in wire.PAYLOAD_OPS and len(body) != hlen + TAG_LEN):
            raise Drop("malformed")
        if sec.path >= self.paths:
            raise Drop("bad_path")
        st = self._rx_state(sec.epoch)
        if st is None:
            raise Drop("stale_epoch")
        window = st.windows[sec.path]
        if not window.fresh(sec.seq):
            raise Drop("replay")
        hdrs = body[:hlen]
        aad = _aad_bth(g.bth) + codec.encode_ext("mrsec", sec) + hdrs
        iv = nonce(1 - self.direction, st.epoch, sec.path, sec.seq)
        try:
            if self.encrypt:
                payload = st.aead.decrypt(iv, body[hlen:], aad)
            else:
                payload = body[hlen:-TAG_LEN]
                st.aead.decrypt(iv, body[-TAG_LEN:], aad + payload)
        except InvalidTag:
            raise Drop("bad_tag") from None
        # Authentic: now (and only now) state changes.
        window.mark(sec.seq)
        if st.epoch == self.rx_epoch + 1:
            self._advance()
        self.opened += 1
        inner = codec.Frame(eth=g.eth, ip=g.ip, udp=g.udp, bth=replace(g.bth, opcode=op), payload=payload,
                            icrc_ok=g.icrc_ok)
        off = 0
        for name in wire.HEADERS[op]:
            n = wire.HEADER_LEN[name]
            if name != "cnp":
                setattr(inner, name, codec.decode_ext(name, hdrs[off:off + n]))
            off += n
        return inner

    def _advance(self):
        # MR-SEC-131: the next epoch becomes current; keep the previous, forget the one before.
        self.rx_epoch += 1
        self._rx.pop(self.rx_epoch - 2, None)
        nxt = self.rx_epoch + 1
        self._rx[nxt] = _RxEpoch(self.master, 1 - self.direction, nxt, self.paths)


class AuthenticatedHost:
    """An endpoint behind per-packet authentication, for the simulated fabric (MR-SEC-140/141).

    Frames the endpoint sends are sealed with the channel of the peer connection they are
    addressed to (BTH DestQP = the peer's QPN); frames that arrive are opened with the channel of
    the local connection they name, and only authentic ones reach ``ep.receive``. Everything
    else is delegated to the endpoint. ``channels``: ``{local QPN: (peer QPN, SecureChannel)}``.
    """

    def __init__(self, ep, channels=None):
        self.ep = ep
        self._by_local = {}
        self._by_peer = {}
        self.drops = collections.Counter()
        for local, (peer, ch) in (channels or {}).items():
            self.add(local, peer, ch)

    def add(self, local_qpn, peer_qpn, channel):
        self._by_local[local_qpn] = channel
        self._by_peer[peer_qpn] = channel

    def __getattr__(self, name):
        return getattr(self.ep, name)

    def next_packet(self, now):
        f = self.ep.next_packet(now)
        if f is not None and f.bth.opcode == wire.MR_ANNOUNCE:
            # MR-SEC-157: MR_SEC does not carry the announcement (MR-WIRE-084): not sent
            f = self.ep.next_packet(now)
        return None if f is None else self.seal(f)

    def seal(self, frame):
        """The MR_SEC frame for ``frame``, or None when no channel leads to its DestQP:
        nothing leaves unsealed toward an authenticated peer (counted as ``unsealed``). An
        announcement (MR-WIRE-084) is not sent: MR_SEC does not carry it (MR-SEC-157)."""
        if frame.bth.opcode == wire.MR_ANNOUNCE:
            return None
        ch = self._by_peer.get(frame.bth.dest_qp)
        if ch is None:
            self.drops["unsealed"] += 1
            return None
        return ch.seal(frame)

    def receive(self, frame, now):
        """Open ``frame`` and hand the protected frame to the endpoint; drop it otherwise."""
        inner = self.open(frame)
        if inner is not None:
            self.ep.receive(inner, now)

    def open(self, frame):
        """The protected frame, or None (dropped and counted by reason)."""
        if frame.bth.opcode != Op.MR_SEC:
            self.drops["unauthenticated"] += 1
            return None
        ch = self._by_local.get(frame.bth.dest_qp)
        if ch is None:
            self.drops["no_connection"] += 1
            return None
        try:
            return ch.open(frame)
        except Drop as d:
            self.drops[d.reason] += 1
            return None


class RKeyGenerator:
    """MR-SEC-152: R_Keys of 32 random bits, unique among the keys it has issued and not freed."""

    def __init__(self, rng=None):
        self._rand = rng.getrandbits if rng is not None else secrets.randbits
        self.live = set()

    def new(self):
        while True:
            k = self._rand(32)
            if k and k not in self.live:
                self.live.add(k)
                return k

    def free(self, key):
        self.live.discard(key)
