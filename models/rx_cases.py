"""The RX engine's one verification stack, simulator-independent part (MR-RX-*).

* :class:`Setup`: the configuration writes (global, connection, key and path rows) a run
  starts with, and the connections, keys and paths it made;
* :class:`Case`: one parsed packet (the parser's metadata, from a frame built by the codec and
  judged by :func:`metaroce.models.parser.verdict`, so the record is exactly what the parser
  emits), its payload bytes, and the outcome its generator built it for (``expect``, or None
  when it depends on the packets before); a :class:`CfgWrite` item changes a row mid-traffic;
* traffic: :func:`burst_same_path`, :func:`window_cases`, :func:`bad_cases`,
  :func:`random_traffic`;
* :class:`Driver`: meta, payload and configuration sources with idle cycles, random
  backpressure on the three outputs, counter reads, all from a seed;
* :func:`expected`: the same items through :class:`RxModel` one packet at a time (no timing);
  :func:`check`: the collected outputs and counters against it, and every case's ``expect``;
* :func:`run_model`: :class:`RxCycleModel` alone through the driver.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field, replace

from . import codec, protocol as P, records
from .codec import BTH, IP, MRDH, MRSH, RETH, UDP
from .driver import CounterReadout, run_alone
from .parser import verdict
from .rx import (ACK_EVERY_RESET, PLACE_MARK_BITS, CHUNK_RING, CTR_PLACED_BYTES, MSG_SLOTS, N_COUNTERS, SEND_OPS, TABLE_CONN, TABLE_GLOBAL,
                 TABLE_KEY, TABLE_PATH, TABLE_READ, TABLE_RECV, TABLE_RSP_FREE, MRDH_ERROR, ATOMIC_OPS, RD_OP_WC, RD_OP_CMP_SWAP, RD_OP_FETCH_ADD, RD_OP_READ, WC_RECV, GLOBAL, RxCode, RxCycleModel, RxModel, layouts,
                 meta_fields, pack, payload_layout, unpack)
from .wire import NakReason, Op

#: MR-RX-061: cycles in a row with ``s_meta.ready`` high and no record taken before a
#: configuration write (every record in flight has passed the window stage).
CFG_QUIET = 5


@dataclass(frozen=True)
class CfgWrite:
    table: int
    addr: int
    value: int
    name: str = "cfg"


@dataclass(frozen=True)
class Idle:
    """``cycles`` cycles in which the driver offers no record and no configuration write (the
    payload beats already owed still flow): room for the delayed-ACK timer (MR-RX-093)."""
    cycles: int
    name: str = "idle"


@dataclass(frozen=True)
class Case:
    name: str
    meta: int                   # flat META_LAYOUT
    payload: bytes
    expect: RxCode | None = None
    drop: bool = False          # the parser dropped it (no payload beats follow)
    frame: bytes = field(default=b"", repr=False, compare=False)


@dataclass
class Conn:
    qp: int
    pkey: int
    n_paths: int
    n_streams: int
    psn: list = field(default_factory=list)     # next PSN to send per path (sender's view)
    msg: dict = field(default_factory=dict)     # next message number per stream


@dataclass
class Key:
    rkey: int
    base: int
    length: int
    access: int


class Setup:
    """Connections, keys and paths of one run, and the writes that configure them (MR-RX-060)."""

    def __init__(self, conns=256, paths=4, keys=256, *, seed=0, n_conns=6, mtu_log2=8, ack_every=4,
                 regions=None, uniform_psn=False, n_streams=None, ack_delay=0, first_psn=None,
                 streams=records.STREAMS):
        """``regions``: ``[(rkey, length, access)]`` of existing registrations (an endpoint's)
        to use as the four keys; ``uniform_psn``: every path of a connection starts at the
        same PSN (as ``Endpoint.connect(peer_init_psn=...)`` opens them); ``first_psn``: that
        PSN for every connection (with ``uniform_psn``; the TX engine's paths start at 0);
        ``streams``: the instance's streams per connection (MR-RX-001), which bounds every
        connection's."""
        self.lay = layouts(conns, paths, keys, streams=streams)
        self.rng = rng = random.Random(seed)
        self.mtu = 1 << mtu_log2
        self.ack_every = ack_every
        self.ack_delay = ack_delay
        self.writes = [CfgWrite(TABLE_GLOBAL, 0, pack(GLOBAL, {"ack_every": ack_every,
                                                               "mtu_log2": mtu_log2,
                                                               "ack_delay": ack_delay}), "global")]
        self.conns = []
        used = set()
        for i in range(n_conns):
            qp = rng.choice([q for q in range(1, conns) if q not in used])
            used.add(qp)
            c = Conn(qp, rng.choice([0xFFFF, rng.getrandbits(16)]),
                     paths if i % 2 == 0 else rng.randint(1, paths), min(rng.choice([8, 2, 1]), streams))
            if n_streams is not None:
                if n_streams > streams:
                    raise ValueError(f"n_streams {n_streams} > the instance's {streams} streams")
                c.n_streams = n_streams
            self.conns.append(c)
            self.writes.append(CfgWrite(TABLE_CONN, qp, pack(self.lay.conn, {
                "valid": 1, "pkey": c.pkey, "n_paths_m1": c.n_paths - 1,
                "n_streams_m1": c.n_streams - 1}), f"conn{qp}"))
            first = rng.choice([0, rng.getrandbits(24), P.PSN_MASK - rng.randrange(8)])
            if first_psn is not None:
                first = first_psn
            for p in range(paths):
                psn = first if uniform_psn else rng.choice([0, rng.getrandbits(24), P.PSN_MASK - rng.randrange(8)])
                c.psn.append(psn)
                self.writes.append(self.path_write(qp, p, psn))
        self.free_qp = next((q for q in range(1, conns) if q not in used), None)     # never written
        self.keys = []
        kused = set()
        for i in range(4):
            if regions is not None:
                rkey, length, access = regions[i]
                if rkey & (keys - 1) in kused:
                    raise ValueError("two regions share a key row")
                kused.add(rkey & (keys - 1))
                k = Key(rkey, rng.getrandbits(64), length, access)
                self.keys.append(k)
                self.writes.append(self.key_write(k))
                continue
            idx = rng.choice([k for k in range(keys) if k not in kused])
            kused.add(idx)
            k = Key((rng.getrandbits(32 - self.lay.key_bits) << self.lay.key_bits) | idx,
                    rng.getrandbits(64), rng.choice([1 << 20, 1 << 16]),
                    P.ACCESS_ALL if i < 3 else P.ACCESS_REMOTE_READ)
            self.keys.append(k)
            self.writes.append(self.key_write(k))

    def path_write(self, qp, path, psn):
        """A path row as the slow path opens it: ``cum`` and ``high`` at the initial PSN."""
        row = (qp << self.lay.path_bits) | path
        return CfgWrite(TABLE_PATH, row, pack(self.lay.path, {"cum": psn, "high": psn}), f"path{qp}.{path}")

    def key_write(self, k, valid=1):
        return CfgWrite(TABLE_KEY, k.rkey & (self.lay.keys - 1), pack(self.lay.key, {
            "valid": valid, "rkey": k.rkey, "base": k.base, "length": k.length,
            "access": k.access}), f"key{k.rkey:#x}")

    # -- packets
    def write(self, conn: Conn, *, path=0, psn=None, stream=0, offset=0, msg_len=None, plen=None,
              key: Key | None = None, va=None, dma_len=None, pkey=None, qp=None, ack_req=0, ecn=2,
              sport=None, op=Op.MR_WRITE, expect=None, name="write", corrupt=False, mrdh_path=None,
              msg=None, recv_seq=0, payload=None, flags=0):
        """One MR_WRITE packet as the parser emits it (meta from the frame's verdict). ``msg``:
        the MRDH message number; by default the next one of (connection, stream) for a packet
        that may be accepted, 0 for one built to fail (the endpoint never reads it then). With
        a SEND ``op`` the packet carries an MRSH (``recv_seq``) instead of the RETH."""
        rng = self.rng
        key = key or self.keys[0]
        if plen is None:
            plen = rng.choice([0, 1, 7, 8, 33, 64, 100])
        if msg_len is None:
            msg_len = offset + plen
        if psn is None:
            psn = conn.psn[path]
            conn.psn[path] = P.psn_add(psn, 1)
        if va is None:
            va = rng.randrange(0, max(1, key.length - msg_len)) if msg_len <= key.length else 0
        if payload is None:
            payload = bytes(rng.getrandbits(8) for _ in range(plen))
        if msg is None:
            # MR-RX-183: a frame built corrupt never reaches the message table (the parser
            # drops it), so it takes no message number of its stream
            if (expect is None or expect == RxCode.ACCEPTED) and not corrupt:
                msg = conn.msg.get(stream, 0)
                conn.msg[stream] = msg + 1
            else:
                msg = 0
        kw = {"mrdh": MRDH(path=path if mrdh_path is None else mrdh_path, stream=stream,
                           msg=msg, offset=offset, msg_len=msg_len, flags=flags)}
        if op in SEND_OPS:
            kw["mrsh"] = MRSH(recv_seq)
        elif op == Op.MR_READ_RESP:
            pass                    # MR-RX-111: named by its stream and message only
        else:
            kw["reth"] = RETH(va, key.rkey, msg_len if dma_len is None else dma_len)
        if op in (Op.MR_WRITE_IMM, Op.MR_SEND_IMM):
            kw["imm"] = rng.getrandbits(32)
        f = codec.make(op, payload, ip=IP(ecn=ecn),
                       udp=UDP(sport=0xC000 | rng.getrandbits(14) if sport is None else sport),
                       bth=BTH(pkey=conn.pkey if pkey is None else pkey,
                               dest_qp=conn.qp if qp is None else qp, ack_req=ack_req, psn=psn), **kw)
        return self._case(f, name, expect, corrupt)

    def send(self, conn: Conn, recv_seq, **kw):
        """One MR_SEND (``imm``: MR_SEND_IMM) packet naming receive ``recv_seq`` (MR-RX-100)."""
        op = Op.MR_SEND_IMM if kw.pop("imm", False) else Op.MR_SEND
        return self.write(conn, op=op, recv_seq=recv_seq, **kw)

    def recv_write(self, qp, stream, recv_seq, base, length, wr_id, valid=1):
        """MR-RX-101: a receive posted in its receive-table row (``valid`` 0: the row emptied)."""
        row = (((qp << 3) | stream) << self.lay.recv_bits) | (recv_seq & (self.lay.recv_slots - 1))
        return CfgWrite(TABLE_RECV, row, pack(self.lay.recv, {
            "valid": valid, "recv_seq": recv_seq, "base": base, "length": length, "wr_id": wr_id}),
            f"recv{qp}.{stream}.{recv_seq}")

    def read_write(self, qp, stream, msg, base, length, wr_id, valid=1, op=0):
        """MR-RX-110: an outstanding READ's row, as the TX side writes it when the request leaves
        (MR-RX-159: ``op`` an atomic's, RD_OP_*; its ``length`` 8)."""
        row = (((qp << 3) | stream) << self.lay.rd_bits) | (msg & (self.lay.rd_slots - 1))
        return CfgWrite(TABLE_READ, row, pack(self.lay.rd, {
            "valid": valid, "msg": msg, "base": base, "length": length, "wr_id": wr_id, "op": op}),
            f"read{qp}.{stream}.{msg}")

    def other(self, op, *, name=None, expect=RxCode.NOT_HANDLED, plen=16, corrupt=False):
        """A packet of another opcode (a SEND, an ACK...): not handled by this slice."""
        payload = bytes(self.rng.getrandbits(8) for _ in range(plen)) if op in (Op.MR_SEND, Op.MR_SEND_IMM) else b""
        f = codec.make(op, payload, bth=BTH(dest_qp=self.conns[0].qp, pkey=self.conns[0].pkey))
        return self._case(f, name or op.name, expect, corrupt)

    def teardown(self):
        """Configuration writes that invalidate this setup's connection and key rows (the slow
        path closing them, MR-RX-060) and put its streams' message, receive and READ rows back
        at their reset values (MR-RX-086, MR-RX-101, MR-RX-110: a stream is opened by these
        writes, which reset does for the first setup only), so that another setup can follow
        on the same engine and reuse the connection numbers."""
        from .rx import TABLE_MSG
        lay = self.lay
        streams = [(c.qp, st) for c in self.conns for st in range(lay.streams)]
        return ([CfgWrite(TABLE_CONN, c.qp, 0, f"close{c.qp}") for c in self.conns]
                + [CfgWrite(TABLE_KEY, k.rkey & (lay.keys - 1), 0, f"revoke{k.rkey:#x}")
                   for k in self.keys]
                + [CfgWrite(TABLE_MSG, (qp << 3) | st, 0, f"stream{qp}.{st}") for qp, st in streams]
                + [self.recv_write(qp, st, seq, 0, 0, 0, valid=0) for qp, st in streams
                   for seq in range(lay.recv_slots)]
                + [self.read_write(qp, st, msg, 0, 0, 0, valid=0) for qp, st in streams
                   for msg in range(lay.rd_slots)])

    def _case(self, f, name, expect, corrupt):
        b = bytearray(codec.encode(f))
        b += bytes(max(0, 60 - len(b)))
        if corrupt:
            b[len(b) - 1 if len(b) > 60 else 50] ^= 0x40     # breaks the ICRC
        reason, meta, vals = verdict(bytes(b))
        drop = bool(vals["drop"])
        return Case(name, meta, b"" if drop else bytes(f.payload), RxCode.PARSER_DROP if drop else expect,
                    drop, bytes(b))


def frame_case(name, frame: bytes):
    """A captured frame as the parser hands it to the RX engine (MR-RX-071, MR-RX-072): its
    META_LAYOUT record from the parser's golden model (:func:`metaroce.models.parser.verdict`)
    and the payload bytes it forwards (none for a dropped frame); None for a frame the parser
    bypasses (not RoCE: no record). Frames shorter than 60 bytes are padded as a MAC does."""
    from .codec import DecodeError, decode
    from .wire import Reason
    b = bytes(frame) + bytes(max(0, 60 - len(frame)))
    reason, meta, vals = verdict(b)
    if reason == Reason.NOT_ROCE:
        return None
    drop = bool(vals["drop"])
    payload = b""
    if not drop:
        try:
            payload = bytes(decode(b).payload)
        except DecodeError:         # the verdict said it decodes
            raise AssertionError(f"{name}: the parser accepts a frame the codec refuses") from None
    return Case(name, meta, payload, RxCode.PARSER_DROP if drop else None, drop, b)


# ------------------------------------------------------------------ traffic

def burst_same_path(s: Setup, n=64, plen=0):
    """MR-RX-043: ``n`` in-order packets of one path, back to back."""
    c = s.conns[0]
    return [s.write(c, path=0, plen=plen, expect=RxCode.ACCEPTED, name=f"burst{i}") for i in range(n)]


def burst_slow(s: Setup, n=32, *, kind="slide", plen=0):
    """MR-RX-048: ``n`` packets of one path back to back, each a slow update: ``slide`` (every
    PSN 257 ahead of ``cum``: PSN ``cum + 257``, then one more each, so that each slides by one)
    or ``fill`` (pairs ``cum + 1``, ``cum``: every second packet fills a gap)."""
    c = s.conns[0]
    base = c.psn[0]
    if kind == "slide":
        ds = [257 + i for i in range(n)]
    else:
        ds = [d for i in range(0, n, 2) for d in (i + 1, i)][:n]
    c.psn[0] = P.psn_add(base, max(ds) + 1)
    return [s.write(c, path=0, psn=P.psn_add(base, d), plen=plen, expect=RxCode.ACCEPTED,
                    name=f"{kind}{i}") for i, d in enumerate(ds)]


def ring_alias_cases(s: Setup, path=0):
    """MR-RX-310: the PSNs that alias in the 256-bit ring (bit ``psn mod 256``), on rows of a
    path of connection 0 written with their SACK (stored as the ring): a whole window received,
    then the PSN at ``cum`` (``cum + 256``'s bit is ``cum``'s; a filled gap of 257) or a slide
    to ``cum + 257`` whose run passes the arrival (``cum`` one past it: its bit stays clear);
    ``cum + 256`` alone received, then the PSN at ``cum`` (a fast update) and ``cum + 256``
    again (a duplicate); slides whose aliased PSN (``psn - 256``) was received and was not,
    over random SACKs. Each row followed by a few packets of every kind."""
    rng, c, lay = s.rng, s.conns[0], s.lay
    full = (1 << P.SACK_BITS) - 1
    rows = [(full, [0, 256 + 2, 1, 256]), (full, [257, 258 + 256, 258, 258 + 256]),
            (1 << 255, [0, 256, 1 + 256, 257]), (1 << 43, [300, 45 + 256, 44]),
            ((1 << 43) ^ full, [300, 2]), (0, [259, 3 + 256, 3])]
    rows += [(rng.getrandbits(P.SACK_BITS), [rng.choice([0, 257, 256 + rng.randrange(1, 257)]), rng.randrange(1, 257)])
             for _ in range(6)]
    out = []
    for sack, ds in rows:
        base = rng.getrandbits(24)
        out.append(CfgWrite(TABLE_PATH, (c.qp << lay.path_bits) | path,
                            pack(lay.path, {"cum": base, "sack": sack, "high": base}), f"alias-row{path}"))
        out += [s.write(c, path=path, psn=P.psn_add(base, d), plen=0, name=f"alias+{d}") for d in ds]
    out.append(s.path_write(c.qp, path, c.psn[path]))
    return out


def serial_hold_cases(s: Setup, path=0, piece=64, *, by_packets=False):
    """MR-RX-327: the slow updates whose runs and bases end at and beside the serial hold's
    ``piece``-bit boundaries, on rows of a path of connection 0 written with their SACK: filled
    gaps whose run is ``t`` long (PSNs ``cum + 1 .. cum + t - 1`` received) for ``t`` at every
    boundary and one beside it (up to 257, the whole window); slides by 257..512 whose base
    (``d - 256`` PSNs from ``cum``) ends at and beside a boundary, over SACKs whose received
    PSNs continue the run past the base, or leave holes in the base (counted as not abandoned);
    slides beyond the window (513, 600: outside); bases a few PSNs below the 24-bit wrap. Each
    row's slow packet is followed by the PSN at the new ``cum`` and one more (the written ring
    and ``cum`` read back). ``by_packets`` (an RX whose path writes carry no SACK, MR-RX-240:
    the engine's): the row written with ``cum`` only and its SACK's PSNs sent as packets, in a
    random order, before the slow one. Stream 0's messages reopened first (MR-RX-086) at its
    next message, so the packets reach the window whatever ran before."""
    from .rx import TABLE_MSG
    rng, c, lay = s.rng, s.conns[0], s.lay
    full = (1 << P.SACK_BITS) - 1
    ends = sorted({e for b in range(piece, P.SACK_BITS + 1, piece) for e in (b - 1, b, b + 1)} | {1, 2})
    rows = [((1 << (t - 1)) - 1, [0]) for t in ends if 1 <= t <= P.SACK_BITS + 1]
    for base in ends:
        if not 1 <= base <= P.SACK_BITS:
            continue
        run = rng.choice(ends)                           # received PSNs after the base
        holes = rng.getrandbits(P.SACK_BITS) & ((1 << max(0, base - 1)) - 1)
        sack = (((1 << run) - 1) << max(0, base - 1)) & full
        rows.append((sack | holes, [256 + base]))
    rows += [(rng.getrandbits(P.SACK_BITS), [rng.choice([513, 600])]), (full, [512]), (0, [512]), (full, [257])]
    out = [CfgWrite(TABLE_MSG, c.qp << records.STREAM_BITS, c.msg.get(0, 0), "serial-reopen")]
    for i, (sack, ds) in enumerate(rows):
        base = rng.choice([rng.getrandbits(24), (1 << 24) - rng.randrange(1, 300)])
        out.append(CfgWrite(TABLE_PATH, (c.qp << lay.path_bits) | path,
                            pack(lay.path, {"cum": base, "sack": 0 if by_packets else sack, "high": base}),
                            f"serial-row{i}"))
        if by_packets:
            got = [j for j in range(P.SACK_BITS) if sack >> j & 1]
            rng.shuffle(got)
            out += [s.write(c, path=path, psn=P.psn_add(base, 1 + j), plen=0, name="serial-sack") for j in got]
        out += [s.write(c, path=path, psn=P.psn_add(base, d), plen=0, name=f"serial+{d}") for d in ds]
        # the PSN the new cum names, then one past it: the written row read back
        m = rx_model_after(base, sack, ds)
        out += [s.write(c, path=path, psn=P.psn_add(m, k), plen=0, name=f"serial-next+{k}") for k in (0, 1)]
    out.append(s.path_write(c.qp, path, c.psn[path]))
    return out


def rx_model_after(cum, sack, ds):
    """The window's ``cum`` after PSNs ``cum + d`` (``d`` in ``ds``) are taken on a row of
    ``cum`` and ``sack`` (bit ``j``: PSN ``cum + 1 + j`` received), as MR-RX-024..029 move it:
    for the stimulus of :func:`serial_hold_cases` (which PSN to send next), not a check."""
    got = {P.psn_add(cum, 1 + j) for j in range(P.SACK_BITS) if sack >> j & 1}
    for d in ds:
        if d > 2 * P.SACK_BITS:
            continue                                    # outside the window
        got.add(P.psn_add(cum, d))
        if d > P.SACK_BITS:
            cum = P.psn_add(cum, d - P.SACK_BITS)       # the slide's base abandoned
        while cum in got:
            got.discard(cum)
            cum = P.psn_add(cum, 1)
    return cum


def ring_residue_cases(s: Setup, path=0, rounds=2):
    """MR-RX-073, MR-RX-310: duplicates at every residue of the 256-bit ring. A row of a path of
    connection 0 written with every SACK bit set at a random base, then each PSN of its window
    again: S4's lookups (the ring's bit at the PSN and at PSN + 1, ANDed with the one-hots) hit
    at every bit, which duplicates of random traffic reach only at some residues."""
    rng, c, lay = s.rng, s.conns[0], s.lay
    full = (1 << P.SACK_BITS) - 1
    out = []
    for _ in range(rounds):
        base = rng.getrandbits(24)
        out.append(CfgWrite(TABLE_PATH, (c.qp << lay.path_bits) | path,
                            pack(lay.path, {"cum": base, "sack": full, "high": P.psn_add(base, P.SACK_BITS + 1)}),
                            f"residue-row{path}"))
        out += [s.write(c, path=path, psn=P.psn_add(base, d), plen=0, name=f"residue+{d}")
                for d in range(1, P.SACK_BITS + 1)]
    out.append(s.path_write(c.qp, path, c.psn[path]))
    return out


def path_forward_cases(s: Setup, rounds=4):
    """MR-RX-117: records of one path at distances 1 and 2 in record order (the path row's
    write of the same cycle, then of the cycle before, forwarded into the row S3 registers)
    and 3 behind two other paths' (MR-RX-138: the write in the port's registers), filled gaps
    (slow updates) followed by their path's next record at distance 1 (S4's row register
    takes the hold's write), at distance 2 behind another path's (S3's re-read during the
    hold) and at distance 3 behind two (the hold's write in the port's registers), and a path-row configuration write taken while its path's record is in
    S3 (two accepted records, two bad ones, then the record: ``cfg_ready`` opens just then).
    For a lockstep run without idle cycles or backpressure and with ``quiet_cfg=False``."""
    c = s.conns[0]
    out = []
    for r in range(rounds):
        out += [s.write(c, path=0, plen=4, name=f"b2b{r}.{i}") for i in range(3)]
        for i in range(3):
            out += [s.write(c, path=0, plen=4, name=f"alt{r}.{i}"), s.write(c, path=1, plen=4, name=f"alt{r}.{i}'")]
        # MR-RX-138: distance 3 behind other paths' records (the write still in the port's
        # registers when the read is made)
        for i in range(2):
            out += [s.write(c, path=p, plen=4, name=f"d3{r}.{i}.{p}") for p in (0, 1, 2)]
        out.append(s.write(c, path=0, plen=4, name=f"d3{r}.end"))
        for other in range(3):
            base = c.psn[0]
            c.psn[0] = P.psn_add(base, 3)
            out += [s.write(c, path=0, psn=P.psn_add(base, 1), plen=4, name=f"gap{r}"),
                    s.write(c, path=0, psn=base, plen=4, name=f"fill{r}")]
            out += [s.write(c, path=p, plen=4, name=f"between{r}.{p}") for p in range(1, other + 1)]
            out.append(s.write(c, path=0, psn=P.psn_add(base, 2), plen=4, name=f"after{r}"))
        out += [s.write(c, path=0, plen=4, name=f"acc{r}.{i}") for i in range(2)]
        out += [s.write(c, path=0, plen=4, pkey=c.pkey ^ 1, expect=RxCode.BAD_PKEY, name=f"bad{r}.{i}")
                for i in range(2)]
        # MR-RX-183: a message delivered before (a duplicate chunk when accepted): whether the
        # row's write beside it lands before its window stage is the driver's timing, and a
        # new message refused there would leave its stream behind its slots
        out.append(s.write(c, path=2, plen=4, name=f"cfg_race{r}", msg=max(0, c.msg.get(0, 0) - 1)))
        out.append(s.path_write(c.qp, 2, c.psn[2]))
    return out


def own_write_cases(s: Setup, rounds=2, *, path=0):
    """MR-RX-117, MR-RX-120, MR-RX-121: records of one path back to back, each needing S4's
    own write of the cycle before as S4's lookups see it through the row register: a PSN off cum then the same PSN (the
    ring bit S4 sets: a duplicate at distance 1), PSNs ahead (``high`` moved: the next one is no
    gap), duplicates of a PSN set one cycle before, filled gaps (the bit at PSN + 1: a slow
    update), then PSNs in order at ``cum`` (``cum`` moved; the count test of ``ack_every``
    against the ``pending`` S4 leaves) and one behind. For a lockstep run without idle cycles
    or backpressure and with ``ack_every`` > 1."""
    c = s.conns[0]
    acc, dup = RxCode.ACCEPTED, RxCode.DUPLICATE
    steps = [(2, acc), (2, dup), (4, acc), (5, acc), (4, dup), (1, acc), (0, acc), (3, acc), (3, dup)]
    steps += [(d, acc) for d in range(6, 15)] + [(13, dup)]
    out = []
    for r in range(rounds):
        base = c.psn[path]
        out += [s.write(c, path=path, psn=P.psn_add(base, d), plen=4, expect=e, name=f"own{r}+{d}")
                for d, e in steps]
        c.psn[path] = P.psn_add(base, 15)
    return out


def window_cases(s: Setup, *, op=Op.MR_WRITE, conn=0):
    """MR-RX-024..029: reordering, gaps, duplicates, the slide beyond 256, the 512 limit, behind
    (writes of opcode ``op`` on connection ``s.conns[conn]``)."""
    c = s.conns[conn]
    out = []
    base = c.psn[1]
    seq = [0, 2, 1, 1, 3, 5, 4, 300, 7, 6, 513 + 300, 299, 100, 40, 800, 9, 1000]
    # MR-RX-183: a new message number only for a PSN the window takes as new (the path fresh at
    # ``base``), so that every message completes at once and the stream stays within its slots;
    # a duplicate or out-of-window PSN names the message before (it never reaches the table)
    cum, sack = base, 0
    for d in seq:
        psn = P.psn_add(base, d)
        new = P.rx_classify(cum, sack, psn) == P.RX_NEW
        if new:
            cum, sack, _ = P.rx_accept(cum, sack, psn)
        msg = None if new else max(0, c.msg.get(0, 0) - 1)
        out.append(s.write(c, path=1, psn=psn, plen=8, name=f"win+{d}", op=op, msg=msg))
    c.psn[1] = P.psn_add(base, 1001)
    out.append(s.write(c, path=1, psn=P.psn_add(base, 1001 + 513), plen=8, expect=RxCode.PSN_WINDOW,
                       name="beyond512", op=op))
    out.append(s.write(c, path=1, psn=P.psn_add(base, -5), plen=8, expect=RxCode.DUPLICATE, name="behind",
                       op=op))
    # CE marks: onset, run, ack_req
    for i, ecn in enumerate([3, 3, 3, 2, 3, 3, 2, 2]):
        out.append(s.write(c, path=2 % s.lay.paths, ecn=ecn, ack_req=int(i == 5), plen=4,
                           name=f"ce{i}", expect=RxCode.ACCEPTED, op=op))
    return out


def bad_cases(s: Setup, *, op=Op.MR_WRITE):
    """MR-RX-020..023: every bad-input class, one or more of each (writes of opcode ``op``)."""
    rng = s.rng
    c = s.conns[0]
    small = next((x for x in s.conns if x.n_paths < s.lay.paths), None)
    one_stream = next((x for x in s.conns if x.n_streams == 1), None)
    mtu = s.mtu
    k_noacc = s.keys[3]
    out = [
        s.write(c, qp=s.free_qp, expect=RxCode.NO_CONNECTION, name="no-conn-row", psn=1, op=op),
        s.write(c, qp=s.lay.conns + rng.randrange(1 << 10), expect=RxCode.NO_CONNECTION,
                name="qp-beyond-table", psn=1, op=op),
        s.write(c, pkey=c.pkey ^ 0x0101, expect=RxCode.BAD_PKEY, name="bad-pkey", psn=2, op=op),
        s.write(c, mrdh_path=s.lay.paths + 3, expect=RxCode.BAD_PATH, name="path-beyond", psn=3, op=op),
        s.write(c, stream=9, expect=RxCode.STREAM, name="stream-beyond", psn=4, op=op),
        s.write(c, offset=mtu // 2, plen=mtu // 2, msg_len=mtu, expect=RxCode.CHUNK, name="chunk-misaligned", psn=5, op=op),
        s.write(c, offset=0, plen=mtu // 2, msg_len=2 * mtu, expect=RxCode.CHUNK, name="chunk-short", psn=6, op=op),
        s.write(c, offset=mtu, plen=mtu, msg_len=mtu, expect=RxCode.CHUNK, name="chunk-past-end", psn=7, op=op),
        s.write(c, offset=0, plen=0, msg_len=mtu, expect=RxCode.CHUNK, name="chunk-empty", psn=8, op=op),
        s.write(c, plen=8, dma_len=9, expect=RxCode.LENGTH, name="reth-length", psn=9, op=op),
        s.write(c, key=Key(s.keys[0].rkey ^ (1 << 31), 0, 0, 0), va=0, expect=RxCode.ACCESS,
                name="unknown-rkey", psn=10, op=op),
        s.write(c, key=Key(s.keys[0].rkey + 1, 0, 0, 0), va=0, expect=RxCode.ACCESS,
                name="empty-key-row", psn=11, op=op),
        s.write(c, key=k_noacc, va=0, expect=RxCode.ACCESS, name="no-write-right", psn=12, op=op),
        s.write(c, va=s.keys[0].length - 4, plen=8, expect=RxCode.BOUNDS, name="bounds-end", psn=13, op=op),
        s.write(c, va=(1 << 64) - 4, plen=8, expect=RxCode.BOUNDS, name="bounds-wrap", psn=14, op=op),
        s.write(c, corrupt=True, name="parser-drop", plen=40, psn=15, op=op),
        s.other(Op.MR_NAK), s.other(Op.MR_ACK), s.other(Op.RC_WRITE_ONLY),
    ]
    if small is not None:
        out.append(s.write(small, mrdh_path=small.n_paths, expect=RxCode.BAD_PATH, name="path-beyond-conn", psn=16, op=op))
    if one_stream is not None:
        out.append(s.write(one_stream, stream=1, expect=RxCode.STREAM, name="stream-beyond-conn", psn=17, op=op))
    # a forged duplicate: a good packet, then the same PSN with a bad key is ACCESS, not DUPLICATE
    good = s.write(c, path=0, plen=8, name="good-then-forged", expect=RxCode.ACCEPTED, op=op)
    psn = P.psn_add(c.psn[0], -1)
    out += [good, s.write(c, path=0, psn=psn, key=k_noacc, va=0, expect=RxCode.ACCESS, name="forged-dup", op=op),
            s.write(c, path=0, psn=psn, plen=8, expect=RxCode.DUPLICATE, name="true-dup", op=op)]
    return out


def stream_bound_cases(s: Setup):
    """MR-RX-001, MR-RX-020, MR-RX-060: on an instance of fewer than records.STREAMS streams, a
    connection configured with all of them: a packet of stream ``streams`` is refused (STREAM),
    and a receive posted for that stream is not stored (its row would alias stream 0's: the
    SEND on stream 0 after it finds no receive, RNR). None on an instance of every stream."""
    c, lay = s.conns[0], s.lay
    if lay.streams == records.STREAMS:
        return []
    conn = {"valid": 1, "pkey": c.pkey, "n_paths_m1": c.n_paths - 1}
    beyond = lay.streams
    return [CfgWrite(TABLE_CONN, c.qp, pack(lay.conn, dict(conn, n_streams_m1=records.STREAMS - 1)), "all-streams"),
            s.write(c, stream=beyond, psn=c.psn[0], plen=8, expect=RxCode.STREAM, name="stream-beyond-instance"),
            s.recv_write(c.qp, beyond, 0, s.keys[0].base, 64, 77),
            s.send(c, 0, stream=0, psn=c.psn[0], plen=8, expect=RxCode.RNR, name="recv-beyond-instance-not-stored"),
            CfgWrite(TABLE_CONN, c.qp, pack(lay.conn, dict(conn, n_streams_m1=c.n_streams - 1)), "streams-back")]


def message_cases(s: Setup, *, conn=0, stream=0, slot_nak=True):
    """MR-RX-080..086: messages of one stream: chunks out of order and resent (duplicate
    chunks), a message done before the one ahead of it (two records in one bundle), a
    plain WRITE between WRITE_IMMs (no record), a zero-length WRITE_IMM, a message of more
    chunks than the ring (epochs), a chunk of a delivered message, a message beyond the slots
    and a chunk whose message length differs (refused), the stream reopened at another
    message number (table 4)."""
    from .rx import TABLE_MSG
    c = s.conns[conn]
    mtu = s.mtu
    k = s.keys[0]
    rng = s.rng
    row = (c.qp << 3) | stream
    nxt = [c.msg.get(stream, 0)]
    out = []

    def chunks(msg, nchunks, *, op=Op.MR_WRITE_IMM, last=None, order=None, name="m"):
        msg_len = (nchunks - 1) * mtu + (rng.randint(1, mtu) if last is None else last)
        if nchunks == 1 and last == 0:
            msg_len = 0
        va = rng.randrange(0, k.length - msg_len - 1)
        pk = {}
        for j in range(nchunks):
            off = j * mtu
            pk[j] = lambda j=j, off=off: s.write(c, path=rng.randrange(c.n_paths), stream=stream,
                                                 offset=off, plen=min(mtu, msg_len - off),
                                                 msg_len=msg_len, key=k, va=va, op=op, msg=msg,
                                                 expect=RxCode.ACCEPTED, name=f"{name}{msg}.{j}")
        return [pk[j]() for j in (order if order is not None else range(nchunks))]

    base = nxt[0]
    # reordered, one chunk resent
    out += chunks(base, 3, order=[2, 0, 0, 1], name="reord")
    # message base+2 done before base+1: both leave in one bundle
    out += chunks(base + 2, 2, name="ahead")
    out += chunks(base + 1, 1, name="behind")
    # a plain WRITE, then a WRITE_IMM behind it
    out += chunks(base + 4, 1, name="imm-after-write")
    out += chunks(base + 3, 2, op=Op.MR_WRITE, name="plain")
    # zero length
    out += chunks(base + 5, 1, last=0, name="zero")
    # more chunks than the ring, two resent
    n = 2 * (s.lay.chunk_ring if hasattr(s.lay, "chunk_ring") else 16) + 3
    order = list(range(n))
    order.insert(20, 3)
    order.insert(30, 18)
    out += chunks(base + 6, n, order=order, name="long")
    # a chunk of a delivered message; a message beyond the slots; a length mismatch
    out += chunks(base + 1, 1, name="stale")
    beyond = chunks(base + 7 + s.lay.msg_slots, 1, name="beyond")
    out += [replace(b, expect=RxCode.MSG_SLOTS if slot_nak else RxCode.ACCEPTED) for b in beyond]   # MR-RX-167
    first = s.write(c, stream=stream, offset=0, plen=mtu, msg_len=2 * mtu, key=k, va=0, msg=base + 7,
                    op=Op.MR_WRITE_IMM, expect=RxCode.ACCEPTED, name="mismatch.0")
    other = s.write(c, stream=stream, offset=mtu, plen=8, msg_len=mtu + 8, key=k, va=0, msg=base + 7,
                    op=Op.MR_WRITE_IMM, expect=RxCode.LENGTH if slot_nak else RxCode.ACCEPTED,
                    name="mismatch.1")      # MR-RX-168
    rest = s.write(c, stream=stream, offset=mtu, plen=mtu, msg_len=2 * mtu, key=k, va=0, msg=base + 7,
                   op=Op.MR_WRITE_IMM, expect=RxCode.ACCEPTED, name="mismatch.fix")
    out += [first, other, rest]
    # reopened at message 1000: the old numbers are then beyond the slots
    out.append(CfgWrite(TABLE_MSG, row, 1000, f"stream{row}"))
    out += chunks(1000, 2, name="reopened")
    out += chunks(base + 8, 1, name="old-number")
    c.msg[stream] = 1001
    return out


def slot_cases(s: Setup, *, conn=0, stream=0):
    """MR-RX-167..170 (with ``slot_nak``): a sender beyond its stream's message slots, against
    the endpoint's MR-SEC-006 bound of ``msg_slots`` on one stream: a WRITE_IMM ``msg_slots``
    ahead (MSG_SLOTS, NAK INVALID_REQUEST, its PSN not accepted) and resent with the same PSN
    once the stream delivered (accepted, not a duplicate); a chunk of an open message with
    another msg_len (LENGTH) right behind the chunk that opened it; a message ``msg_slots``
    ahead right behind the chunk whose delivery brings it within the slots (accepted), and one
    ``msg_slots + 1`` ahead there (refused); a message 2^31 ahead (refused, as the endpoint's
    seq_lt32); a READ request and a SEND beyond the slots (refused before the SEND's RNR);
    duplicates of refused PSNs are not duplicates. Messages are numbered from the stream's
    next."""
    c = s.conns[conn]
    mtu = s.mtu
    k = s.keys[0]
    rng = s.rng
    n = s.lay.msg_slots
    base = c.msg.get(stream, 0)
    path = 0

    def w(msg, *, offset=0, plen=None, msg_len=None, expect=RxCode.ACCEPTED, name="sl", **kw):
        plen = rng.randint(1, mtu) if plen is None else plen
        msg_len = offset + plen if msg_len is None else msg_len
        return s.write(c, path=path, stream=stream, offset=offset, plen=plen, msg_len=msg_len, key=k,
                       va=rng.randrange(0, k.length - msg_len - 1), op=Op.MR_WRITE_IMM, msg=msg & 0xFFFFFFFF,
                       expect=expect, name=f"{name}{msg - base}", **kw)
    out = []
    far = w(base + n, expect=RxCode.MSG_SLOTS, name="beyond")
    out.append(far)
    # message base+1: its first chunk opens the slot, a chunk of another length right behind
    out.append(w(base + 1, plen=mtu, msg_len=mtu + 8, name="open"))
    out.append(w(base + 1, offset=mtu, plen=16, msg_len=mtu + 16, expect=RxCode.LENGTH, name="other-len"))
    # a READ request and a SEND beyond the slots; a message 2^31 ahead
    out.append(read_request(s, c, (base + n + 1) & 0xFFFFFFFF, path=path, stream=stream, expect=RxCode.MSG_SLOTS,
                            name="rq-beyond", length=8))
    out.append(s.send(c, 0, path=path, stream=stream, plen=8, msg=(base + n + 1) & 0xFFFFFFFF,
                      expect=RxCode.MSG_SLOTS, name="send-beyond"))
    out.append(w(base + (1 << 31), expect=RxCode.MSG_SLOTS, name="half"))
    # message base delivers itself (base+1 still open): base+n is now within, base+n+1 not
    out.append(w(base, name="deliver"))
    out.append(replace(far, expect=RxCode.ACCEPTED, name="beyond-resent"))    # the same PSN: new
    out.append(w(base + n + 1, plen=8, expect=RxCode.MSG_SLOTS, name="beyond2"))
    # base+1's last chunk delivers base+1 and base+n: base+n+1 right behind it is within
    out.append(w(base + 1, offset=mtu, plen=8, msg_len=mtu + 8, name="close"))
    out.append(w(base + n + 1, plen=8, name="within"))
    c.msg[stream] = base + n + 2
    return out


def rsp_free(c: Conn, stream, msg):
    """MR-RX-173: the TX half's free of the responder resource of request ``msg`` of
    ``stream`` (its response acknowledged in full) as a configuration write of
    ``TABLE_RSP_FREE`` (the RX model reads the connection; the endpoint the request)."""
    from .rx import TABLE_RSP_FREE
    return CfgWrite(TABLE_RSP_FREE, c.qp, (stream << 32) | (msg & 0xFFFFFFFF), f"free{c.qp}.{stream}.{msg}")


def resource_cases(s: Setup, *, conn=0, stream=0):
    """MR-RX-173 (``RxModel(max_rd_atomic=1)``): READ and atomic requests beyond the
    connection's responder resources: a READ executed at once holds the one resource; the next
    request (a READ) is NAKed RNR and not accepted; a copy of the first (delivered) is a
    duplicate chunk, no resource; after the free the second, resent with the same PSN, is
    accepted; an atomic beyond it RNR until the second's free."""
    c = s.conns[conn]
    base = c.msg.get(stream, 0)
    path = 0

    def rq(m, **kw):
        kw.setdefault("expect", RxCode.ACCEPTED)
        kw.setdefault("name", f"res-rq{m - base}")
        return read_request(s, c, m, path=path, stream=stream, length=8, **kw)
    first = rq(base)
    second = rq(base + 1, expect=RxCode.RNR)
    atom = atomic_request(s, c, base + 2, path=path, stream=stream, expect=RxCode.RNR, name="res-at")
    out = [first, second, rq(base, name="res-copy"), rsp_free(c, stream, base),
           replace(second, expect=RxCode.ACCEPTED, name="res-rq1-resent"), atom,
           rsp_free(c, stream, base + 1), replace(atom, expect=RxCode.ACCEPTED, name="res-at-resent"),
           rsp_free(c, stream, base + 2)]
    c.msg[stream] = base + 3
    return out


def random_resource_traffic(s: Setup, n=30, *, p_free=0.2):
    """MR-RX-186/187: random READ and atomic requests (:func:`random_read_requests`,
    :func:`random_atomics`, outcomes the model's) with frees of a random connection's
    resource (table 7, :func:`rsp_free`) among them, for a small ``max_rd_atomic``: requests
    NAKed RNR, frees meeting requests of their connection in flight, frees of nothing held."""
    rng = s.rng
    items = [replace(c, expect=None) if isinstance(c, Case) else c
             for c in random_read_requests(s, n) + random_atomics(s, n // 2)]
    rng.shuffle(items)
    out = []
    for it in items:
        out.append(it)
        if rng.random() < p_free:
            out.append(rsp_free(rng.choice(s.conns), 0, 0))
    return out


def send_cases(s: Setup, *, conn=0, stream=0):
    """MR-RX-100..105: SENDs of one stream against its receive rows: no receive posted (RNR,
    twice, the second a resend under a new PSN), a SEND too long for its receive (RECV_BOUNDS),
    a duplicate PSN naming no receive (acknowledged, not RNR), a single-chunk SEND, a SEND_IMM
    of three chunks out of order with a chunk resent, a zero-length SEND, a receive row
    reposted (recv_seq + recv_slots) and then a late chunk of the delivered message naming the
    old receive (accepted, not placed), a SEND beyond the posted receives (RNR) and the
    checks before the sequence state (stream, chunk) on a SEND without a receive. Receives are
    posted in recv_seq order (as :meth:`Connection.post_recv`), each slot only after its
    previous receive completed."""
    c = s.conns[conn]
    k = s.keys[0]
    mtu = s.mtu
    rng = s.rng
    n_slots = s.lay.recv_slots
    out = []
    nxt_va = [rng.randrange(64)]

    def post(recv_seq, length):
        va = nxt_va[0]
        nxt_va[0] += length + rng.randrange(1, 64)
        out.append(s.recv_write(c.qp, stream, recv_seq, k.base + va, length, rng.getrandbits(64)))

    def msg_no():
        return c.msg.get(stream, 0)

    def take_msg():
        m = msg_no()
        c.msg[stream] = m + 1
        return m

    def send(recv_seq, msg, nchunks=1, *, msg_len=None, order=None, imm=False, expect=RxCode.ACCEPTED, name="s"):
        if msg_len is None:
            msg_len = (nchunks - 1) * mtu + rng.randint(1, mtu)
        # each packet built when sent: a chunk resent goes under a new PSN, with its bytes
        data = [bytes(rng.getrandbits(8) for _ in range(min(mtu, msg_len - j * mtu))) for j in range(nchunks)]
        return [s.send(c, recv_seq, path=rng.randrange(c.n_paths), stream=stream, offset=j * mtu,
                       plen=len(data[j]), payload=data[j], msg_len=msg_len, msg=msg, imm=imm,
                       expect=expect, name=f"{name}{msg}.{j}")
                for j in (order if order is not None else range(nchunks))]

    m0 = msg_no()
    out += send(0, m0, expect=RxCode.RNR, name="rnr")           # nothing posted
    out += send(0, m0, expect=RxCode.RNR, name="rnr-again")     # resent: a new PSN
    post(0, 3 * mtu)
    psn = c.psn[0]
    m = take_msg()
    out.append(s.send(c, 0, path=0, stream=stream, plen=mtu // 2, msg=m, expect=RxCode.ACCEPTED,
                      name=f"one{m}"))
    out.append(replace(out[-1], expect=RxCode.DUPLICATE, name="one-dup"))
    # the same PSN naming a receive never posted: a duplicate, acknowledged (not RNR)
    out.append(s.send(c, 1 << 30, path=0, psn=psn, stream=stream, plen=8, msg=m,
                      expect=RxCode.DUPLICATE, name="dup-no-recv"))
    if n_slots > 1:
        post(1, 2 * mtu + 8)
    m1 = msg_no()
    if n_slots > 1:
        out += send(1, m1, 3, msg_len=2 * mtu + 9, expect=RxCode.RECV_BOUNDS, name="too-long")[:1]
        out += send(1, take_msg(), 3, msg_len=2 * mtu + 8, imm=True, order=[2, 0, 0, 1], name="imm")
    # the receive of m0 completed: its slot reposted with recv_seq + n_slots; a late chunk of
    # m0 (a new PSN) names the old receive
    post(n_slots, mtu)
    out += send(0, m0, msg_len=mtu // 2, name="stale")
    out += send(n_slots, take_msg(), msg_len=0, name="zero")
    out += send(2 * n_slots, msg_no(), expect=RxCode.RNR, name="ahead")
    out += [s.send(c, 7, stream=9, plen=8, expect=RxCode.STREAM, name="send-stream"),
            s.send(c, 7, stream=stream, offset=mtu // 2, plen=8, msg_len=mtu, expect=RxCode.CHUNK,
                   name="send-chunk")]
    return out


def read_cases(s: Setup, *, conn=0, stream=0):
    """MR-RX-110..112: READ responses against the outstanding-read rows: a READ of three chunks
    answered out of order with a chunk resent (one completion record), a duplicate PSN, a
    response to a READ never issued (NO_READ), one of another length (LENGTH), a chunk after
    the READ completed (accepted, a duplicate chunk), a zero-length READ, the row reused by a
    later READ and then a late chunk of the old one (stale: accepted, not placed), and the
    checks before the row (stream, chunk)."""
    c = s.conns[conn]
    k = s.keys[1]
    mtu = s.mtu
    rng = s.rng
    n_slots = s.lay.rd_slots
    base_msg = rng.getrandbits(31)
    out = []
    va = [rng.randrange(64)]

    def issue(msg, length):
        out.append(s.read_write(c.qp, stream, msg, k.base + va[0], length, rng.getrandbits(64)))
        va[0] += length + rng.randrange(1, 64)

    def resp(msg, msg_len, j, expect=RxCode.ACCEPTED, name="rd", **kw):
        kw.setdefault("stream", stream)
        return s.write(c, op=Op.MR_READ_RESP, path=rng.randrange(c.n_paths), offset=j * mtu,
                       plen=min(mtu, msg_len - j * mtu), msg_len=msg_len, msg=msg, expect=expect,
                       name=f"{name}{msg}.{j}", **kw)

    m0, m1 = base_msg, base_msg + 1
    n0 = 2 * mtu + 8
    issue(m0, n0)
    data = [bytes(rng.getrandbits(8) for _ in range(min(mtu, n0 - j * mtu))) for j in range(3)]
    for j in (2, 0, 0, 1):
        out.append(resp(m0, n0, j, payload=data[j]))
    out.append(replace(out[-1], expect=RxCode.DUPLICATE, name="rd-dup-psn"))
    out.append(resp(m0 + n_slots, 8, 0, expect=RxCode.NO_READ, name="rd-none"))
    out.append(resp(m0, n0 + 1, 0, expect=RxCode.LENGTH, name="rd-length"))
    out.append(resp(m0, n0, 1, payload=data[1], name="rd-after-done"))
    if n_slots > 1:
        issue(m1, 0)
        out.append(resp(m1, 0, 0, name="rd-zero"))
    issue(m0 + n_slots, mtu)
    out.append(resp(m0, n0, 0, payload=data[0], name="rd-stale"))
    out.append(resp(m0 + n_slots, mtu, 0, name="rd-reused"))
    out += [resp(m0, 8, 0, stream=9, expect=RxCode.STREAM, name="rd-stream"),
            s.write(c, op=Op.MR_READ_RESP, stream=stream, offset=mtu // 2, plen=8, msg_len=mtu, msg=m0,
                    expect=RxCode.CHUNK, name="rd-chunk")]
    return out


def atomic_response_cases(s: Setup, *, conn=0, stream=0):
    """MR-RX-159..161: atomic responses (MR_READ_RESP of 8 bytes) and ERROR responses against the
    outstanding-read rows: a compare-and-swap's and a fetch-and-add's 8 bytes (placed, completed
    COMP_SWAP / FETCH_ADD with byte_len 8), a duplicate PSN and a resent copy after completion
    (a duplicate chunk), a response of another length (LENGTH), an ERROR response to an atomic
    and to a READ (nothing placed, completed REM_ACCESS_ERR with the request's length), an ERROR
    response with payload length (LENGTH) and one after completion (a duplicate chunk)."""
    c = s.conns[conn]
    k = s.keys[1]
    rng = s.rng
    base_msg = rng.getrandbits(31)
    out = []

    def issue(msg, length, op):
        out.append(s.read_write(c.qp, stream, msg, k.base + 8 * rng.randrange(k.length // 8 - 8),
                                length, rng.getrandbits(64), op=op))

    def resp(msg, msg_len, expect=RxCode.ACCEPTED, name="at", **kw):
        kw.setdefault("stream", stream)
        return s.write(c, op=Op.MR_READ_RESP, path=rng.randrange(c.n_paths), offset=0, plen=kw.pop("plen", msg_len),
                       msg_len=msg_len, msg=msg, expect=expect, name=f"{name}{msg}", **kw)
    m = base_msg
    issue(m, 8, RD_OP_CMP_SWAP)
    out.append(resp(m, 8, name="at-cas"))
    out.append(replace(out[-1], expect=RxCode.DUPLICATE, name="at-dup-psn"))
    out.append(resp(m, 8, name="at-after-done"))
    issue(m + 1, 8, RD_OP_FETCH_ADD)
    out.append(resp(m + 1, 16, expect=RxCode.LENGTH, name="at-length"))
    out.append(resp(m + 1, 8, name="at-fadd"))
    # ERROR responses (MRDH ERROR, msg_len 0, no payload): an atomic's, a READ's
    issue(m + 2, 8, RD_OP_FETCH_ADD)
    out.append(resp(m + 2, 8, plen=0, flags=MRDH_ERROR, expect=RxCode.CHUNK, name="at-err-chunk"))
    out.append(resp(m + 2, 0, flags=MRDH_ERROR, name="at-error"))
    issue(m + 3, 3 * s.mtu, RD_OP_READ)
    out.append(resp(m + 3, 0, flags=MRDH_ERROR, name="rd-error"))
    out.append(resp(m + 3, 0, flags=MRDH_ERROR, name="rd-error-again"))
    return out


def _request_maker(s: Setup, conn, stream, make):
    """The request cases' start (MR-RX-133, MR-RX-157): the connection, eight message numbers
    of the stream taken (the first returned), and ``req(m, **kw)``: ``make(s, c, m, ...)`` on
    that stream, a random path, built to be accepted unless told."""
    c = s.conns[conn]
    msg = c.msg.get(stream, 0)
    c.msg[stream] = msg + 8

    def req(m, **kw):
        kw.setdefault("stream", stream)
        kw.setdefault("path", s.rng.randrange(c.n_paths))
        kw.setdefault("expect", RxCode.ACCEPTED)
        return make(s, c, m, **kw)
    return c, msg, req


def _refused_before_sequence(s: Setup, c: Conn, req, msg, prefix):
    """The request cases refused before the sequence state and the message table (MR-SEC-007):
    stream, path, no connection, P_Key, PSN window, parser drop."""
    far = P.psn_add(c.psn[0], 1 << 22)
    return [req(msg, stream=9, expect=RxCode.STREAM, name=f"{prefix}-stream"),
            req(msg, mrdh_path=s.lay.paths + 3, expect=RxCode.BAD_PATH, name=f"{prefix}-path"),
            req(msg, qp=s.free_qp, psn=1, expect=RxCode.NO_CONNECTION, name=f"{prefix}-no-conn"),
            req(msg, pkey=c.pkey ^ 0x0101, psn=2, expect=RxCode.BAD_PKEY, name=f"{prefix}-pkey"),
            req(msg, path=0, psn=far, expect=RxCode.PSN_WINDOW, name=f"{prefix}-window"),
            req(msg, corrupt=True, psn=3, expect=None, name=f"{prefix}-parser-drop")]


def atomic_request(s: Setup, c: Conn, msg, *, cas=True, key: Key | None = None, va=None,
                   operand=None, compare=None, **kw):
    """One atomic request (MR_CMP_SWAP or MR_FETCH_ADD: MRDH, RETH with the 8 bytes' VA, R_Key
    and DMA length 8, the operands as payload, 64-bit big-endian: swap then compare, or the
    value to add; MR-WIRE-076) as message ``msg`` of its stream (MR-RX-151)."""
    key = key or s.keys[1]
    rng = s.rng
    if va is None:
        va = 8 * rng.randrange(max(1, key.length // 8 - 1))
    operand = rng.getrandbits(64) if operand is None else operand
    payload = operand.to_bytes(8, "big")
    if cas:
        payload += (rng.getrandbits(64) if compare is None else compare).to_bytes(8, "big")
    kw.setdefault("plen", len(payload))
    kw.setdefault("msg_len", len(payload))
    kw.setdefault("dma_len", 8)
    kw.setdefault("name", f"{'cas' if cas else 'fadd'}{msg}")
    kw.setdefault("payload", payload[:kw["plen"]] + bytes(max(0, kw["plen"] - len(payload))))
    return s.write(c, op=Op.MR_CMP_SWAP if cas else Op.MR_FETCH_ADD, key=key, va=va, msg=msg, **kw)


def atomic_request_cases(s: Setup, *, conn=0, stream=0):
    """MR-RX-151..157: atomic requests at the responder, messages of their stream: a
    fetch-and-add at the delivery point; a compare-and-swap behind a WRITE_IMM of two chunks that
    writes its 8 bytes (it executes after that message, in one delivery with its completion, and
    its compare value is what the write put there); a refused key, range and right (accepted,
    ERROR items in order); two atomics delivered by one chunk; a duplicate PSN and a resend after
    execution (not executed again); the malformed ones (DMA length, msg_len, misaligned VA,
    stream, path, no connection, P_Key, PSN window, parser drop)."""
    rng = s.rng
    mtu = s.mtu
    k = s.keys[1]
    c, msg, at = _request_maker(s, conn, stream, atomic_request)

    def path():
        return rng.randrange(c.n_paths)
    out = [at(msg, cas=False, name="at-now", ack_req=1)]
    wlen = mtu + 8
    va = 8 * rng.randrange((k.length - wlen) // 8)
    data = bytes(rng.getrandbits(8) for _ in range(wlen))
    wr = [s.write(c, op=Op.MR_WRITE_IMM, path=path(), stream=stream, offset=j * mtu,
                  plen=min(mtu, wlen - j * mtu), msg_len=wlen, key=k, va=va, msg=msg + 1,
                  payload=data[j * mtu:(j + 1) * mtu], expect=RxCode.ACCEPTED, name=f"at-w{j}")
          for j in range(2)]
    tgt = va + mtu          # in the write's second chunk: its bytes reach memory last
    cmp = int.from_bytes(data[mtu:mtu + 8], "little")
    out += [wr[0], at(msg + 2, va=tgt, compare=cmp, name="at-behind"), wr[1]]
    out += [at(msg + 4, va=k.length, name="at-range"),
            at(msg + 3, key=Key(k.rkey ^ (1 << 31), 0, 0, 0), va=0, cas=False, name="at-key")]
    out += [at(msg + 6, cas=False, name="at-two-b"), at(msg + 5, name="at-two-a")]
    ro = s.keys[3] if len(s.keys) > 3 and not s.keys[3].access & P.ACCESS_REMOTE_ATOMIC else None
    if ro is not None:
        out.append(at(msg + 7, key=ro, va=0, cas=False, name="at-no-right"))
    else:
        out.append(at(msg + 7, cas=False, name="at-last"))
    out.append(replace(out[0], expect=RxCode.DUPLICATE, name="at-dup-psn"))
    out.append(at(msg, cas=False, name="at-resent"))
    out += [at(msg + 8, dma_len=4, expect=RxCode.LENGTH, name="at-dma-len"),
            at(msg + 8, cas=False, plen=16, msg_len=16, expect=RxCode.LENGTH, name="at-msg-len"),
            at(msg + 8, va=8 * rng.randrange(64) + 4, expect=RxCode.CHUNK, name="at-misaligned")]
    return out + _refused_before_sequence(s, c, at, msg + 8, "at")


def _with_meta(meta, values):
    """A flat META_LAYOUT record with some fields replaced (``{path tuple: value}``)."""
    from .parser import META_FIELDS
    for path, off, width in META_FIELDS:
        if path in values:
            meta = (meta & ~(((1 << width) - 1) << off)) | (values[path] << off)
    return meta


def read_request(s: Setup, c: Conn, msg, *, key: Key | None = None, va=None, length=None, **kw):
    """One READ request (MR_READ: MRDH with msg_len 0, RETH with the READ's VA, R_Key and
    length, no payload) as message ``msg`` of its stream (MR-RX-126)."""
    key = key or s.keys[1]
    if length is None:
        length = s.rng.randint(0, 3 * s.mtu)
    if va is None:
        va = s.rng.randrange(0, max(1, key.length - length))
    kw.setdefault("plen", 0)
    kw.setdefault("msg_len", 0)
    kw.setdefault("name", f"rq{msg}")
    return s.write(c, op=Op.MR_READ, key=key, va=va, dma_len=length, msg=msg, **kw)


def read_request_cases(s: Setup, *, conn=0, stream=0):
    """MR-RX-126..133: READ requests at the responder, their stream's messages: one at the
    delivery point (executed at once); one behind a WRITE_IMM of two chunks whose last chunk
    comes after it (executed after that message, in one delivery with its completion); a
    refused key, a refused range and a region without the right (accepted, answered by ERROR
    items, in order); two READs
    delivered by one chunk (a bundle of two items); a duplicate PSN (acknowledged) and a resend
    with a new PSN after execution (a duplicate chunk, not executed again); the malformed
    ones (LENGTH, CHUNK, STREAM, path, no connection, P_Key, PSN window), which are NAKed or
    dropped before the sequence state and the message table."""
    rng = s.rng
    mtu = s.mtu
    k = s.keys[1]
    c, msg, rq = _request_maker(s, conn, stream, read_request)

    def path():
        return rng.randrange(c.n_paths)
    out = [rq(msg, name="rq-now", ack_req=1)]
    # a WRITE_IMM of two chunks (message msg+1) and a READ (msg+2) that waits for it
    wlen = mtu + 8
    va = rng.randrange(0, k.length - wlen)
    wr = [s.write(c, op=Op.MR_WRITE_IMM, path=path(), stream=stream, offset=j * mtu,
                  plen=min(mtu, wlen - j * mtu), msg_len=wlen, key=k, va=va, msg=msg + 1,
                  expect=RxCode.ACCEPTED, name=f"rq-w{j}") for j in range(2)]
    out += [wr[0], rq(msg + 2, name="rq-behind"), wr[1]]
    # a refused key and a refused range (MR-VERB-002): accepted, ERROR items in order; the
    # range one first (d = 1), the key one at the delivery point delivers both
    out += [rq(msg + 4, va=k.length - 4, length=0xFFFFFFF0 | rng.getrandbits(4), name="rq-range"),
            rq(msg + 3, key=Key(k.rkey ^ (1 << 31), 0, 0, 0), va=0, length=16, name="rq-key")]
    # two READs delivered by one chunk: msg+6 first, then msg+5
    two = [rq(msg + 6, length=0, name="rq-zero"), rq(msg + 5, va=(1 << 32) + 8, length=8, name="rq-va-high")]
    out += two
    # a region without ACCESS_REMOTE_READ (written for this case, revoked after it): refused
    kb = s.lay.key_bits
    idx = next(i for i in range(s.lay.keys) if i not in {x.rkey & (s.lay.keys - 1) for x in s.keys})
    wk = Key((rng.getrandbits(32 - kb) << kb) | idx, rng.getrandbits(64), 1 << 16,
             P.ACCESS_REMOTE_WRITE | P.ACCESS_LOCAL_WRITE)
    out += [s.key_write(wk), rq(msg + 7, key=wk, va=0, length=8, name="rq-no-right"), s.key_write(wk, valid=0)]
    # a duplicate PSN (acknowledged) and the same request resent with a new PSN (a duplicate chunk)
    out.append(replace(out[0], expect=RxCode.DUPLICATE, name="rq-dup-psn"))
    out.append(rq(msg, name="rq-resent", va=0, length=8))
    # malformed ones (nothing executes, no message slot taken)
    # with payload the parser drops it (its LENGTH, a record without fields); the RX's own
    # LENGTH check (msg_len 0) sees such a record only when another source makes it: forged
    # here past the parser
    good = rq(msg + 8, expect=None, name="rq-length")
    forged = replace(good, meta=_with_meta(good.meta, {("mrdh", "msg_len"): 8, ("payload_len",): 8}),
                     payload=bytes(rng.getrandbits(8) for _ in range(8)), expect=RxCode.LENGTH)
    out += [forged, rq(msg + 8, msg_len=8, expect=RxCode.CHUNK, name="rq-chunk")]
    return out + _refused_before_sequence(s, c, rq, msg + 8, "rq")


def _random_pairs(s: Setup, n, pool, packet):
    """Random request traffic's shape (MR-RX-133, MR-RX-157): ``n`` times two consecutive
    messages of a random stream of a connection of ``pool``, each ``packet(i, c, stream, msg, r,
    path)`` (``r`` uniform in [0, 1)), swapped with probability 0.4, one of them again with the
    same PSN with probability 0.2. Yields ``(i, c, stream, pkts, out)``: the pair, and the
    packets to send."""
    rng = s.rng
    for i in range(n):
        c = rng.choice(pool)
        stream = rng.randrange(c.n_streams)
        msgs = []
        for _ in range(2):
            m = c.msg.get(stream, 0)
            c.msg[stream] = m + 1
            msgs.append(m)
        pkts = [packet(i, c, stream, m, rng.random(), rng.randrange(c.n_paths)) for m in msgs]
        if rng.random() < 0.4:
            pkts.reverse()
        out = list(pkts)
        if rng.random() < 0.2:
            out.append(replace(rng.choice(pkts), expect=None))          # the same PSN again
        yield i, c, stream, pkts, out


def random_read_requests(s: Setup, n=40):
    """MR-RX-126..133: random READ requests among each connection's streams, in order and out
    of order (two messages of a stream swapped), on random paths, some refused (key or range),
    some duplicated (the same PSN, or resent with a new one), with plain writes between them."""
    rng = s.rng

    def packet(i, c, stream, m, r, p):
        if r < 0.3:
            k = rng.choice(s.keys[:3])
            return s.write(c, path=p, stream=stream, key=k, plen=rng.randint(0, 40), msg=m, name=f"rr{i}.w{m}")
        kw = {}
        if r < 0.4:
            kw = {"key": Key(s.keys[0].rkey ^ (1 << 30), 0, 0, 0), "va": 0, "length": 8}
        elif r < 0.5:
            k = rng.choice(s.keys)
            kw = {"key": k, "va": k.length - rng.randint(0, 8), "length": rng.randint(9, 64)}
        else:
            kw = {"key": rng.choice(s.keys)}
        return read_request(s, c, m, path=p, stream=stream, name=f"rr{i}.r{m}", **kw)
    return [pkt for *_, out in _random_pairs(s, n, s.conns, packet) for pkt in out]


def random_atomics(s: Setup, n=40, *, conns=None):
    """MR-RX-151..166: random atomic requests, two messages of a stream at a time (in order or
    swapped), on random paths, some refused (key or range), some with a WRITE between them,
    some duplicated (the same PSN, or resent with a new PSN after execution): consecutive
    messages of a stream reuse its message slots, so an item waiting on ``m_atom`` meets the
    capture of the next atomic of its slot (MR-RX-166). ``conns``: the connections to use."""
    rng = s.rng

    def packet(i, c, stream, m, r, p):
        if r < 0.2:
            return s.write(c, path=p, stream=stream, key=s.keys[1], plen=rng.randint(0, 40), msg=m, name=f"ra{i}.w{m}")
        kw = {}
        if r < 0.3:
            kw = {"key": Key(s.keys[1].rkey ^ (1 << 30), 0, 0, 0), "va": 0}
        elif r < 0.35:
            kw = {"va": s.keys[1].length}
        return atomic_request(s, c, m, cas=rng.random() < 0.5, path=p, stream=stream, name=f"ra{i}.a{m}",
                              expect=RxCode.ACCEPTED, **kw)
    pool = [s.conns[i] for i in conns] if conns is not None else s.conns
    result = []
    for i, c, stream, pkts, out in _random_pairs(s, n, pool, packet):
        result += out
        if rng.random() < 0.1:
            mt = meta_fields(pkts[0].meta)
            if mt["bth"]["opcode"] in ATOMIC_OPS:     # resent with a new PSN: not executed again
                result.append(atomic_request(s, c, mt["mrdh"]["msg"], cas=mt["bth"]["opcode"] == Op.MR_CMP_SWAP,
                                             stream=stream, name=f"ra{i}.resent", expect=RxCode.ACCEPTED))
    return result


def random_traffic(s: Setup, n=300, *, cfg=True, bad=True):
    """A random mix over every connection and path: in order, reordered, lost (skipped PSNs),
    duplicated, CE-marked, AckReq, bad packets; with ``cfg`` a few rows rewritten mid-traffic
    (a key revoked, a path reopened at a new PSN)."""
    rng = s.rng
    out = []
    recent = []
    bad = bad_cases(s) if bad else []
    for i in range(n):
        r = rng.random()
        c = rng.choice(s.conns)
        path = rng.randrange(c.n_paths)
        if r < 0.08 and recent:
            out.append(rng.choice(recent))                    # duplicate of an earlier packet
        elif r < 0.13 and bad:
            # re-sent later, a bad case's outcome may depend on what came before (a key
            # revoked, its PSN since received): the checker then takes the model's word
            out.append(replace(rng.choice(bad), expect=None))
        elif r < 0.16:
            c.psn[path] = P.psn_add(c.psn[path], rng.randint(1, 6))    # lost packets
            out.append(s.write(c, path=path, ecn=rng.choice([2, 3]), name=f"r{i}"))
        elif r < 0.19 and cfg:
            if rng.random() < 0.5:
                k = rng.choice(s.keys[:3])
                out.append(s.key_write(k, valid=int(rng.random() < 0.5)))
            else:
                psn = rng.getrandbits(24)
                c.psn[path] = psn
                out.append(s.path_write(c.qp, path, psn))
        else:
            stream = rng.randrange(c.n_streams)
            nchunks = rng.choice([1, 1, 1, 2, 3])
            msg_len = (nchunks - 1) * s.mtu + rng.randint(0, s.mtu) if nchunks > 1 else rng.randint(0, 64)
            k = rng.choice(s.keys[:3])
            va = rng.randrange(0, k.length - msg_len)
            msg = c.msg.get(stream, 0)
            c.msg[stream] = msg + 1
            pkts = []
            for j in range(nchunks):
                off = j * s.mtu
                plen = min(s.mtu, msg_len - off)
                pkts.append(s.write(c, path=rng.randrange(c.n_paths), stream=stream, offset=off,
                                    plen=plen, msg_len=msg_len, key=k, va=va,
                                    ack_req=int(rng.random() < 0.1), ecn=rng.choice([2, 2, 2, 3]),
                                    msg=msg, name=f"r{i}.{j}"))
            if rng.random() < 0.3:
                rng.shuffle(pkts)
            out += pkts
            recent = (recent + pkts)[-16:]
    return out


def within_slots(s: Setup, items, before=()):
    """MR-RX-183: the items as a sender within MR-ENG-011 sends them (MR-RX-083's
    precondition, which ``slot_nak`` NAKs otherwise, MR-RX-167): before a record that would
    reach the message table as a new PSN beyond its stream's ``msg_slots``, or of another
    length or kind than the open message its slot holds, the slow path reopens the stream
    (table 4, MR-RX-086) at ``msg``, as after an abort (MR-ERR-020): the messages before it
    are never completed, a copy of their chunks later is a duplicate chunk. What the random generators send (writes with a
    chunk refused or lost and never resent, rows rewritten mid-traffic, bad cases consuming
    message numbers) opens such messages. Decided by :class:`RxModel` without ``slot_nak``
    from ``s.writes`` on (then ``before``, the items sent ahead, taken as they are), whose path
    state does not depend on message numbers; with the reopens inserted, the items' outputs
    with and without ``slot_nak`` are the same."""
    from .rx import TABLE_MSG
    lay = s.lay
    rx = RxModel(lay.conns, lay.paths, lay.keys, streams=lay.streams)
    for w in s.writes:
        rx.write_cfg(w.table, w.addr, w.value)
    for it in before:
        if isinstance(it, CfgWrite):
            rx.write_cfg(it.table, it.addr, it.value)
        elif isinstance(it, Case):
            rx.packet(it.meta)
    out = []
    for it in items:
        if isinstance(it, CfgWrite):
            rx.write_cfg(it.table, it.addr, it.value)
        elif isinstance(it, Case):
            meta = meta_fields(it.meta)
            st = rx.static(meta)
            if st.code is None and st.rd_row is None:
                row = rx.path_row(st.path_row)
                cls = P.rx_classify(row["cum"], row["sack"], st.psn)
                v = rx.slot_verdict(st) if cls not in (P.RX_OUT, P.RX_DUP) else None
                if v is not None:
                    w = CfgWrite(TABLE_MSG, st.msg_row, st.msg, f"reopen{st.msg_row}@{st.msg}")
                    rx.write_cfg(w.table, w.addr, w.value)
                    out.append(w)
            rx.packet(meta)
        out.append(it)
    return out


# ------------------------------------------------------------------ driver

SHAPES = {"none": (0.0, 0.0), "idle": (0.3, 0.0), "bp": (0.0, 0.5), "both": (0.25, 0.4)}


class Driver(CounterReadout):
    """Sources for ``s_meta``, ``s_payload`` and ``s_cfg``, sinks for ``m_ack``, ``m_place`` and
    ``m_data``, and ``reg_addr``, cycle by cycle from one seed (MR-RX-002).

    ``items``: the setup writes, then cases and mid-traffic writes, in order. A configuration
    write waits until ``s_meta.ready`` was high and no record was taken for :data:`CFG_QUIET`
    cycles in a row, and no record is
    offered until it is taken (MR-RX-061). Payload beats of each case the parser forwards
    follow on ``s_payload`` (``p_idle`` idle cycles there too). Each output ready is low with
    probability ``p_bp`` (or ``p_bp[port]``, a dict by ready signal name). ``quiet_cfg=False`` offers writes at once (lockstep only: the order
    against records in flight is then the hardware's, which :func:`expected` does not model).
    Results in ``res``: ``ack``, ``place`` (flat payloads), ``data`` (bytes per packet),
    ``meta_taken``, ``payload_taken`` and ``ack_cycles`` (cycles of those transfers),
    ``cycles``, ``counters``. ``cfg_beside``: configuration writes offered on ``s_cfg`` in every
    cycle a record is offered on ``s_meta`` (and no write of ``items``), one after another
    round and round, each until taken, so a write and a record can be taken in one cycle
    (MR-RX-042, MR-RX-119; lockstep only: rewrites of rows with the values they hold leave
    every outcome as it was); ``res["beside_taken"]`` counts the ones taken.
    """

    def __init__(self, width, items, cfg_layout, *, seed=0, p_idle=0.2, p_bp=0.3, quiet_cfg=True,
                 read_counters=True, poll_regs=True, cfg_beside=()):
        self.width = width
        self.nb = width // 8
        self.rng = random.Random(seed)
        self.rng_rsp = random.Random(seed + 0x525350)
        self.rng_atom = random.Random(seed + 0x41544F)
        self.p_idle, self.p_bp = p_idle, p_bp
        outs = ("m_ack__ready", "m_place__ready", "m_data__ready", "m_cqe__ready", "m_rsp__ready",
                "m_atom__ready")
        self.p_bp_of = dict.fromkeys(outs, p_bp if not isinstance(p_bp, dict) else 0.0)
        if isinstance(p_bp, dict):
            self.p_bp_of.update(p_bp)
        self.quiet_cfg = quiet_cfg
        self.read_counters = read_counters
        self.poll_regs = poll_regs
        self.items = list(items)
        self.cfg_layout = cfg_layout
        self.beat = payload_layout(width)
        self.i = 0                  # next item
        self.beats = []             # payload beats waiting (flat payloads)
        self.presenting = None      # ("meta"|"cfg", value)
        self.idle_left = None       # cycles left of an Idle item
        self.since_take = CFG_QUIET
        self.cycle = 0
        self.n_counters = N_COUNTERS
        self.quiet_cycles = 3
        self._readout_reset()
        self._cur = bytearray()
        self.limit = 2000 + 200 * len(self.items) * (1 + int(10 * max(self.p_bp_of.values())))
        self.limit += sum(it.cycles for it in self.items if isinstance(it, Idle))
        self.res = {"ack": [], "place": [], "data": [], "cqe": [], "rsp": [], "atom": [], "meta_taken": [],
                    "payload_taken": [],
                    "ack_cycles": [], "cycles": 0, "counters": None, "beside_taken": 0}
        self.cfg_beside = list(cfg_beside)
        self.beside_next = 0        # the next of cfg_beside
        self.beside_offered = False

    @property
    def sent_all(self):
        return self.i >= len(self.items) and self.presenting is None and not self.beats

    def _beats_of(self, payload):
        nb = self.nb
        n = -(-len(payload) // nb)
        out = []
        for j in range(n):
            chunk = payload[j * nb:(j + 1) * nb]
            out.append(pack(self.beat, {"data": int.from_bytes(chunk, "little"),
                                        "keep": (1 << len(chunk)) - 1, "last": int(j == n - 1)}))
        return out

    def inputs(self):
        rng = self.rng
        inp = {"s_meta__valid": 0, "s_meta__payload": 0, "s_cfg__valid": 0, "s_cfg__payload": 0,
               "s_payload__valid": 0, "s_payload__payload": 0}
        self.beside_offered = False
        if self._phase:
            inp.update({"m_ack__ready": 1, "m_place__ready": 1, "m_data__ready": 1,
                        "m_cqe__ready": 1, "m_rsp__ready": 1, "m_atom__ready": 1,
                        "reg_addr": self._readout_addr()})
            return inp
        if self.presenting is None and self.i < len(self.items) and isinstance(self.items[self.i], Idle):
            it = self.items[self.i]
            self.idle_left = it.cycles if self.idle_left is None else self.idle_left - 1
            if self.idle_left <= 0:
                self.idle_left = None
                self.i += 1
        elif self.presenting is None and self.i < len(self.items):
            it = self.items[self.i]
            if isinstance(it, CfgWrite):
                if not self.quiet_cfg or self.since_take >= CFG_QUIET:
                    self.presenting = ("cfg", it)
            elif self.p_idle == 0 or rng.random() >= self.p_idle:
                self.presenting = ("meta", it)
        if self.presenting is not None:
            kind, it = self.presenting
            if kind == "cfg":
                inp["s_cfg__valid"] = 1
                inp["s_cfg__payload"] = pack(self.cfg_layout, {"table": it.table, "addr": it.addr,
                                                                   "data": it.value})
            else:
                inp["s_meta__valid"] = 1
                inp["s_meta__payload"] = it.meta
                if self.cfg_beside:
                    w = self.cfg_beside[self.beside_next]
                    inp["s_cfg__valid"] = 1
                    inp["s_cfg__payload"] = pack(self.cfg_layout, {"table": w.table, "addr": w.addr,
                                                                       "data": w.value})
        self.beside_offered = bool(inp["s_cfg__valid"]) and self.presenting[0] == "meta"
        if self.beats and (self.p_idle == 0 or rng.random() >= self.p_idle):
            inp["s_payload__valid"] = 1
            inp["s_payload__payload"] = self.beats[0]
        for n in ("m_ack__ready", "m_place__ready", "m_data__ready", "m_cqe__ready"):
            inp[n] = int(rng.random() >= self.p_bp_of[n])
        # MR-RX-131: from a generator of its own, so that the other inputs' stimulus is unchanged
        inp["m_rsp__ready"] = int(self.rng_rsp.random() >= self.p_bp_of["m_rsp__ready"])
        inp["m_atom__ready"] = int(self.rng_atom.random() >= self.p_bp_of["m_atom__ready"])
        inp["reg_addr"] = rng.randrange(32) if self.poll_regs else 0
        return inp

    def observe(self, inp, out):
        res = self.res
        if self._readout_observe(out):
            return
        self.since_take = self.since_take + 1 if out["s_meta__ready"] else 0
        if self.beside_offered and out["s_cfg__ready"]:
            self.beside_next = (self.beside_next + 1) % len(self.cfg_beside)
            res["beside_taken"] += 1
        if self.presenting is not None:
            kind, it = self.presenting
            if kind == "cfg" and out["s_cfg__ready"]:
                self.presenting = None
                self.i += 1
            elif kind == "meta" and out["s_meta__ready"]:
                self.presenting = None
                self.i += 1
                self.since_take = 0
                res["meta_taken"].append(self.cycle)
                if not it.drop and it.payload:
                    self.beats += self._beats_of(it.payload)
        if inp["s_payload__valid"] and out["s_payload__ready"]:
            self.beats.pop(0)
            res["payload_taken"].append(self.cycle)
        if out["m_ack__valid"] and inp["m_ack__ready"]:
            res["ack"].append(out["m_ack__payload"])
            res["ack_cycles"].append(self.cycle)
        if out["m_place__valid"] and inp["m_place__ready"]:
            res["place"].append(out["m_place__payload"])
        if out.get("m_cqe__valid") and inp.get("m_cqe__ready"):
            res["cqe"].append(out["m_cqe__payload"])
        if out.get("m_rsp__valid") and inp.get("m_rsp__ready"):
            res["rsp"].append(out["m_rsp__payload"])
        if out.get("m_atom__valid") and inp.get("m_atom__ready"):
            res["atom"].append(out["m_atom__payload"])
        if out["m_data__valid"] and inp["m_data__ready"]:
            b = unpack(self.beat, out["m_data__payload"])
            n = b["keep"].bit_length()
            self._cur += b["data"].to_bytes(self.nb, "little")[:n]
            if b["last"]:
                res["data"].append(bytes(self._cur))
                self._cur.clear()
        self.cycle += 1

    def _stuck(self):
        return f"({self.i}/{len(self.items)} items)"


def expected(items, conns, paths, keys, streams=records.STREAMS, *, slot_nak=True, max_rd_atomic=None,
             place_base=0):
    """The items through :class:`RxModel`, one packet at a time (no timing): the outcomes, the
    ACK/NAK and placement payloads, the written payloads and the counters (MR-RX-020..033, MR-RX-050).
    ``slot_nak``: the model's MR-RX-167 switch; ``max_rd_atomic``: MR-RX-173's bound;
    ``place_base``: the placements the engine pushed before these items (a batch after others
    on one engine, :class:`Batches`: MR-RX-175's mark counts from reset)."""
    rx = RxModel(conns, paths, keys, streams=streams, slot_nak=slot_nak, max_rd_atomic=max_rd_atomic)
    outs, acks, places, data, cqes, rsps, atoms = [], [], [], [], [], [], []
    opd = {}        # MR-RX-163: the operand table: row -> the captured payload
    for it in items:
        if isinstance(it, CfgWrite):
            rx.write_cfg(it.table, it.addr, it.value)
            continue
        if isinstance(it, Idle):
            continue
        o = rx.packet(it.meta)
        outs.append(o)
        if o.ack is not None:
            acks.append(pack(rx.lay.ack, o.ack))
        if o.place is not None:
            places.append(pack(rx.lay.place, o.place))
        if o.steer:
            data.append(it.payload)
        cqes += [pack(rx.lay.cqe, c) for c in o.cqes or ()]
        rsps += [pack(rx.lay.rsp, r) for r in o.rsps or ()]
        if o.cap_row is not None:
            opd[o.cap_row] = it.payload
        for r in o.atoms or ():
            # MR-RX-164: the item with its operands, the payload's big-endian words
            p = opd[rx.operand_row(r["conn"], r["stream"], r["msg"])]
            # MR-RX-175: the placements pushed up to its delivering record's, its own included
            atoms.append(pack(rx.lay.atom, dict(r, operand=int.from_bytes(p[:8], "big"),
                                                compare=int.from_bytes(p[8:16], "big"),
                                                pmark=(place_base + len(places)) & ((1 << PLACE_MARK_BITS) - 1))))
    return {"outcomes": outs, "ack": acks, "place": places, "data": data, "cqe": cqes, "rsp": rsps, "atom": atoms,
            "counters": list(rx.counters)}


def check(items, res, conns, paths, keys, streams=records.STREAMS, *, slot_nak=True, max_rd_atomic=None,
          place_base=0):
    """The one checker: every case's intended outcome, then the collected streams and the
    counters against :func:`expected` (MR-RX-020..033, MR-RX-050; ``place_base`` as there)."""
    exp = expected(items, conns, paths, keys, streams, slot_nak=slot_nak, max_rd_atomic=max_rd_atomic,
                   place_base=place_base)
    cases = [it for it in items if isinstance(it, Case)]
    for c, o in zip(cases, exp["outcomes"]):
        if c.expect is not None:
            assert o.code == c.expect, f"case {c.name}: model says {o.code.name}, built for {c.expect.name}"
    lay = layouts(conns, paths, keys, streams=streams)
    for name in ("ack", "place", "cqe", "rsp", "atom"):
        got, want = res.get(name, []), exp[name]
        for i, (g, w) in enumerate(zip(got, want)):
            if g != w:
                layout = {"ack": lay.ack, "place": lay.place, "cqe": lay.cqe, "rsp": lay.rsp, "atom": lay.atom}[name]
                raise AssertionError(f"{name} #{i}: got {unpack(layout, g)}, expected {unpack(layout, w)}")
        assert len(got) == len(want), f"{name}: {len(got)} transfers, expected {len(want)}"
    assert res["data"] == exp["data"], "written payload bytes differ"
    if res["counters"] is not None:
        assert res["counters"] == exp["counters"], (
            f"counters {res['counters']} != expected {exp['counters']}")
    assert exp["counters"][CTR_PLACED_BYTES] == sum(len(d) for d in exp["data"])
    return exp


def make_driver(width, setup: Setup, cases, **kw):
    return Driver(width, setup.writes + list(cases), setup.lay.cfg, **kw)


class Batches:
    """Setups run one after another on one engine (MR-RX-060, MR-RX-086, MR-RX-101, MR-RX-110):
    a batch's items are the previous setup's teardown, then its setup's writes, then its
    cases; :meth:`counted` turns the driver's running counters into the batch's own (the
    increase since the batch before, modulo 2^64). The caller runs each driver (the model
    alone, or the RTL in lockstep); :meth:`run` is :meth:`driver`, a run, :meth:`counted`.
    A driver's ``place_base`` is the placements of the batches before it, for :func:`check`
    (MR-RX-175: an atomic item's placement mark counts from reset). :attr:`placed_bound`
    bounds every ``placed`` value the engine can hold in these batches (MR-RX-222)."""

    def __init__(self, width, *, prev=()):
        self.width = width
        self.prev = list(prev)
        self.before = [0] * N_COUNTERS
        self.places = 0
        self.slot_bytes = {}        # (connection row, msg mod slots, table) -> payload bytes
        self.max_plen = 0

    @property
    def placed_bound(self) -> int:
        """MR-RX-222: a bound on every message slot's ``placed`` value (or that plus a record's
        payload length) in the batches so far: a slot's ``placed`` starts at 0 (reset, a table
        write, a fresh slot) and grows only by the payload length of a record of its
        connection row and message number modulo the slots, so it is at most those records'
        sum; a stage may add another row's record's length (the forwarded row of another
        record), so the largest record is added. MR-RX-229: a READ response never writes the
        message table, so its bytes count in :attr:`read_placed_bound` only."""
        return self._bound("msg")

    @property
    def read_placed_bound(self) -> int:
        """MR-RX-226, MR-RX-229: the same bound on every READ accounting row's ``placed``, from
        the READ responses alone (only they write that row), by connection and message
        modulo the READ slots, plus the largest record."""
        return self._bound("rd")

    def _bound(self, table):
        return max((v for k, v in self.slot_bytes.items() if k[2] == table), default=0) + self.max_plen

    def _account(self, lay, items):
        for it in items:
            if isinstance(it, Case):
                mt = meta_fields(it.meta)
                conn = mt["bth"]["dest_qp"] & (lay.conns - 1)
                plen = mt["payload_len"]
                self.max_plen = max(self.max_plen, plen)
                # MR-RX-229: a READ response's bytes reach the READ row only, another record's
                # the message table only
                table = "rd" if mt["bth"]["opcode"] == Op.MR_READ_RESP else "msg"
                n = lay.rd_slots if table == "rd" else lay.msg_slots
                key = (conn, mt["mrdh"]["msg"] % n, table)
                self.slot_bytes[key] = self.slot_bytes.get(key, 0) + plen

    def driver(self, setup: Setup, cases, **kw) -> Driver:
        """The next batch's driver (its items in ``driver.items``)."""
        items = self.prev + setup.writes + list(cases)
        self.prev = setup.teardown()
        self._account(setup.lay, items)
        drv = Driver(self.width, items, setup.lay.cfg, **kw)
        drv.place_base = self.places
        return drv

    def counted(self, drv: Driver) -> Driver:
        self.places += len(drv.res["place"])
        total = drv.res["counters"]
        drv.res["counters"] = [(a - b) % (1 << 64) for a, b in zip(total, self.before)]
        self.before = total
        return drv

    def run(self, setup: Setup, cases, run=run_alone, model=None, **kw) -> Driver:
        """One batch run by ``run(model, driver)`` (default: the model alone)."""
        drv = self.driver(setup, cases, **kw)
        run(model, drv)
        return self.counted(drv)


def run_model(width, setup: Setup, cases, *, seed=0, check_outputs=True, slot_nak=True, max_rd_atomic=None,
              interval=1, **kw):
    """:class:`RxCycleModel` alone (at frame interval ``interval``) through the :class:`Driver`;
    returns the driver's results."""
    lay = setup.lay
    model = RxCycleModel(width, lay.conns, lay.paths, lay.keys, streams=lay.streams, slot_nak=slot_nak,
                         max_rd_atomic=max_rd_atomic, interval=interval)
    drv = make_driver(width, setup, cases, seed=seed, **kw)
    run_alone(model, drv)
    if check_outputs:
        check(setup.writes + list(cases), drv.res, lay.conns, lay.paths, lay.keys, lay.streams, slot_nak=slot_nak,
              max_rd_atomic=max_rd_atomic)
    return drv.res


# ------------------------------------------------------------------ the reference endpoint

PEER_ADDR, LOCAL_ADDR = "10.0.0.1", "10.0.0.2"


def key_withdrawn_run(request, dims, **collect):
    """MR-RX-134/162's difference: ``request(s, conn, key)`` (message 1 of stream 0, on key 1)
    delivered behind a WRITE_IMM of two chunks (message 0), the key's row written invalid
    between the request and the write's last chunk. Runs the reference endpoint over the same
    cases with the region's rights withdrawn in the same place (its lists given as ``collect``,
    e.g. ``rsps=[]``); returns the setup, the connection, the key and the RX's expectation
    (checked at arrival)."""
    ep, s = endpoint_setup(seed=8, n_streams=1, max_rd_atomic=1 << 20)
    c, k, wk = s.conns[0], s.keys[1], s.keys[0]
    w = [s.write(c, op=Op.MR_WRITE_IMM, offset=j * s.mtu, plen=s.mtu if j == 0 else 8,
                 msg_len=s.mtu + 8, key=wk, va=0, msg=0, expect=RxCode.ACCEPTED, name=f"w{j}")
         for j in range(2)]
    cases = [w[0], request(s, c, k), s.key_write(k, valid=0), w[1]]
    exp = expected(s.writes + cases, *dims)
    endpoint_reference(ep, s, cases[:2], **collect)
    ep._mrs[k.rkey] = (ep._mrs[k.rkey][0], 0)     # the region's rights withdrawn meanwhile
    endpoint_reference(ep, s, cases[3:], **collect)
    return s, c, k, exp


def endpoint_setup(conns=256, paths=4, keys=256, *, streams=records.STREAMS, seed=0, mtu_log2=8, ack_every=4, n_conns=6,
                   addr=LOCAL_ADDR, n_streams=None, ack_delay_cycles=0, max_rx_msgs=1 << 20, **ep_kw):
    """The reference transport (:class:`metaroce.models.endpoint.Endpoint`) as a receiver and a
    :class:`Setup` with the same connections (ids, P_Keys, paths, streams, initial PSNs) and
    the same registrations (its random R_Keys, lengths, rights). Its message bound is lifted
    (the RX slice tracks no messages) and its rate-hint updates (MR-CC-009: ACKs to other
    senders when the count of senders grows, which also reset those paths' ACK counters) are
    switched off on this instance: the slice makes neither (hw-rx.md, not in this slice).
    ``ep_kw``: further Endpoint arguments (the traffic runs' ``ack_delay``, rates)."""
    from .endpoint import Endpoint
    rng = random.Random(seed)
    ep = Endpoint(addr, mtu=1 << mtu_log2, ack_every=ack_every, max_rx_msgs=max_rx_msgs,
                  rng=random.Random(seed + 1), announce=False, **ep_kw)   # as the engine: MR-CC-021
    ep._hint_check = lambda c, now: None
    regions, rows = [], set()
    while len(regions) < 4:
        access = P.ACCESS_ALL if len(regions) < 3 else P.ACCESS_REMOTE_READ
        length = rng.choice([1 << 16, 1 << 20])
        key = ep.reg_mr(bytearray(length), access)
        if key & (keys - 1) not in rows:        # a key sharing a row stays registered, unused
            rows.add(key & (keys - 1))
            regions.append((key, length, access))
    s = Setup(conns, paths, keys, streams=streams, seed=seed, regions=regions, uniform_psn=True, n_conns=n_conns,
              mtu_log2=mtu_log2, ack_every=ack_every, n_streams=n_streams, ack_delay=ack_delay_cycles)
    for c in s.conns:
        ep.connect(c.qp, PEER_ADDR, c.qp | 0x800000, paths=c.n_paths, streams=c.n_streams,
                   pkey=c.pkey, peer_init_psn=c.psn[0])
    return ep, s


def _norm_frame(g):
    """An endpoint's ACK or NAK frame as a tuple comparable with :func:`requests`: the fields
    the RX slice's ``m_ack`` carries (MR-RX-030/031; the connection from the peer id)."""
    from .wire import MrahFlag
    qp = g.bth.dest_qp & 0x7FFFFF
    if g.bth.opcode == Op.MR_ACK:
        a = g.mrah
        return ("ack", qp, a.path, a.trigger_psn, a.cum_psn, a.sack, a.ce_count,
                int(bool(a.flags & MrahFlag.ECE)), g.udp.sport)
    if g.bth.opcode == Op.MR_NAK:
        n = g.mrnh
        return ("nak", qp, n.path, n.reason, n.psn, g.udp.sport)
    raise AssertionError(f"unexpected frame from the endpoint: {g.bth.opcode:#x}")


def _norm_request(lay, value):
    a = unpack(lay.ack, value)
    if a["nak"]:
        return ("nak", a["conn"], a["path"], a["reason"], a["psn"], a["sport"])
    return ("ack", a["conn"], a["path"], a["psn"], a["cum"], a["sack"], a["ce_count"], a["ece"],
            a["sport"])


def post_of(s: Setup, w: CfgWrite):
    """MR-RX-101: a receive-table write as the endpoint's post: ``(qp, stream, lkey, loffset,
    length, wr_id)`` (the region the receive's base falls in)."""
    r = unpack(s.lay.recv, w.value)
    qp = w.addr >> (3 + s.lay.recv_bits)
    stream = (w.addr >> s.lay.recv_bits) & 7
    for k in s.keys:
        off = (r["base"] - k.base) % (1 << 64)
        if off + r["length"] <= k.length:
            return qp, stream, k.rkey, off, r["length"], r["wr_id"]
    raise ValueError(f"receive {r} outside every region")


def record_responses(ep, key_base, atoms=None):
    """MR-RX-131: the READ requests the endpoint ``ep`` executes (``_execute``, MR-VERB-002..004),
    as tuples comparable with :func:`responses`: ``(conn, stream, msg, laddr, length, err)``,
    ``laddr`` the region's host address of the READ's VA (``key_base``: R_Key -> base), 0 when
    refused. Returns the list the endpoint's connections append to. MR-RX-157: the atomics it
    executes are appended to ``atoms`` (when given) as :func:`atomics` tuples followed by the
    operands and the original value the response carries: ``(conn, stream, msg, laddr, cas,
    err, operands, orig)``."""
    got = []
    for qp, c in ep._conns.items():
        def execute(m, c=c, qp=qp, run=c._execute):
            va, rkey, length, operands = m.req
            op = m.op
            run(m)
            r = c.rsp[(m.stream, m.msg)]
            laddr = 0 if r.err else (key_base[rkey] + va) % (1 << 64)
            if op == Op.MR_READ:
                got.append((qp, m.stream, m.msg, laddr, length, int(r.err)))
            elif atoms is not None:
                atoms.append((qp, m.stream, m.msg, laddr, int(op == Op.MR_CMP_SWAP), int(r.err),
                              bytes(operands), bytes(r.mv) if not r.err else b""))
        c._execute = execute
    return got


def atomics(s: Setup, items):
    """MR-RX-155: the RX engine's atomic execution items (flat ``m_atom`` payloads) as tuples
    ``(conn, stream, msg, laddr, cas, err)``."""
    out = []
    for v in items:
        r = unpack(s.lay.atom, v)
        out.append((r["conn"], r["stream"], r["msg"], r["laddr"], r["cas"], r["err"]))
    return out


def execute_atomics(s: Setup, exp, cases):
    """MR-RX-156: the executor's side of the atomics, as a test oracle: the memory image of the
    placements with each atomic item applied at its point in the RX's output order (after the
    placements of its record and of every earlier record: the delivery point), its operands
    taken from its request's payload (``cases``, keyed by connection, stream, message), with
    ``protocol.atomic_apply`` on 64-bit little-endian memory. Returns ``(memory, [(item tuple,
    original 8 bytes or b"" when refused)])``."""
    ops = {}
    for c in cases:
        if isinstance(c, Case) and not c.drop:
            mt = meta_fields(c.meta)
            if mt["bth"]["opcode"] in (Op.MR_CMP_SWAP, Op.MR_FETCH_ADD):
                ops.setdefault((mt["bth"]["dest_qp"], mt["mrdh"]["stream"], mt["mrdh"]["msg"]), c.payload)
    bufs = {k.rkey: bytearray(k.length) for k in s.keys}
    done = []
    data = iter(exp["data"])
    for o in exp["outcomes"]:
        if o.place is not None:
            d = next(data)
            buf, off = _locate(s, bufs, o.place["addr"], len(d))
            buf[off:off + len(d)] = d
        for a in o.atoms or ():
            t = (a["conn"], a["stream"], a["msg"], a["laddr"], a["cas"], a["err"])
            p = ops[(a["conn"], a["stream"], a["msg"])]
            done.append((t, _apply_atomic(s, bufs, dict(a, operand=int.from_bytes(p[:8], "big"),
                                                           compare=int.from_bytes(p[8:16], "big")))))
    return {k: bytes(b) for k, b in bufs.items()}, done


def _locate(s: Setup, bufs, addr, n):
    """The region buffer of ``bufs`` and the offset of host address ``addr`` (``n`` bytes)."""
    for k in s.keys:
        off = (addr - k.base) % (1 << 64)
        if off + n <= k.length:
            return bufs[k.rkey], off
    raise AssertionError(f"{addr:#x} outside every region")


def _apply_atomic(s: Setup, bufs, item):
    """MR-RX-156: one execution item (a dict of ``Layouts.atom``) on ``bufs`` (rkey ->
    bytearray): ``protocol.atomic_apply`` on the 8 little-endian bytes at ``laddr``; returns the
    original 8 bytes (b"" for a refused item, which touches nothing)."""
    if item["err"]:
        return b""
    buf, off = _locate(s, bufs, item["laddr"], 8)
    orig = int.from_bytes(buf[off:off + 8], "little")
    new = P.atomic_apply(bool(item["cas"]), orig, item["operand"], item["compare"] if item["cas"] else 0)
    buf[off:off + 8] = new.to_bytes(8, "little")
    return orig.to_bytes(8, "little")


def apply_atomics(s: Setup, memory, items):
    """MR-RX-156/157: the executor on a memory image (rkey -> bytes, as :func:`memory_image`):
    the ``m_atom`` items (flat payloads, with their operands) applied in their order; returns the
    new image and each item's original 8 bytes (b"" when refused)."""
    bufs = {k: bytearray(v) for k, v in memory.items()}
    origs = [_apply_atomic(s, bufs, unpack(s.lay.atom, v)) for v in items]
    return {k: bytes(b) for k, b in bufs.items()}, origs


def responses(s: Setup, rsps):
    """The RX engine's response items (flat ``m_rsp`` payloads) as tuples (MR-RX-131)."""
    out = []
    for v in rsps:
        r = unpack(s.lay.rsp, v)
        out.append((r["conn"], r["stream"], r["msg"], r["laddr"], r["length"], r["err"]))
    return out


def endpoint_reference(ep, s: Setup, cases, rsps=None, atoms=None):
    """Feed the frames of ``cases`` the RX slice handles (MR_WRITE/MR_WRITE_IMM/MR_SEND/
    MR_SEND_IMM/MR_READ the parser kept) to the endpoint at one instant (no timer fires), a receive
    posted (table 5) as the endpoint's ``post_recv``; return its ACK/NAK frames as tuples
    comparable with :func:`requests` and its registered buffers. With ``rsps`` (a list), the
    READ requests the endpoint executes are appended to it (:func:`record_responses`); with
    ``atoms`` (a list) the atomics it executes, with their operands and original values
    (MR-RX-157); the response frames it sends are not returned."""
    from .codec import decode
    out = []
    got_atoms = []
    if rsps is not None or atoms is not None:
        got = record_responses(ep, {k.rkey: k.base for k in s.keys}, got_atoms)
    for c in cases:
        if isinstance(c, CfgWrite) and c.table == TABLE_RSP_FREE:
            # MR-RX-173: the response of (stream, msg) acknowledged in full (MR-VERB-005)
            conn = ep._conns[c.addr]
            conn._rsp_done(conn.rsp[(c.value >> 32, c.value & 0xFFFFFFFF)])
            continue
        if isinstance(c, CfgWrite) and c.table == TABLE_RECV:
            qp, stream, lkey, off, length, wr_id = post_of(s, c)
            ep._conns[qp].post_recv(stream, lkey, off, length, wr_id)
            continue
        if not isinstance(c, Case) or c.drop:
            continue
        f = decode(c.frame)
        if f.bth.opcode not in (Op.MR_WRITE, Op.MR_WRITE_IMM, Op.MR_SEND, Op.MR_SEND_IMM, Op.MR_READ,
                                Op.MR_CMP_SWAP, Op.MR_FETCH_ADD):
            continue
        msg_len = meta_fields(c.meta)["mrdh"]["msg_len"]
        if len(c.payload) != len(f.payload) or msg_len != f.mrdh.msg_len:
            # a record forged past the parser (read_request_cases): the frame it describes
            f = replace(f, payload=c.payload, mrdh=replace(f.mrdh, msg_len=msg_len))
        ep.receive(f, 0.0)
        while (g := ep.next_packet(0.0)) is not None:
            if g.bth.opcode == Op.MR_READ_RESP:
                continue                # MR-VERB-003: the response data (the TX side's)
            r = _norm_frame(g)
            assert r[1] == f.bth.dest_qp, "an ACK to another connection (a hint update?)"
            out.append(r)
    if rsps is not None:
        rsps.extend(got)
    if atoms is not None:
        atoms.extend(got_atoms)
    return out, {k.rkey: bytes(ep._mrs[k.rkey][0]) for k in s.keys}


def timed_bursts(s: Setup, n_bursts=4, per_burst=12, *, gap=2500, seed=0):
    """MR-RX-094: bursts of writes (several connections and paths, a few reordered, no AckReq)
    separated by :class:`Idle` gaps longer than the delayed-ACK time plus the pipeline, so that
    every timer armed in a burst expires in the gap after it."""
    import random as _r
    rng = _r.Random(seed)
    out = []
    for b in range(n_bursts):
        burst = []
        for i in range(per_burst):
            c = rng.choice(s.conns[:3])
            burst.append(s.write(c, path=rng.randrange(c.n_paths), plen=rng.choice([0, 8, 40]),
                                 expect=RxCode.ACCEPTED, name=f"b{b}.{i}"))
        if rng.random() < 0.5:
            j = rng.randrange(len(burst) - 1)
            burst[j], burst[j + 1] = burst[j + 1], burst[j]
        out += burst + [Idle(gap, f"gap{b}")]
    return out


def endpoint_reference_timed(ep, s: Setup, items, cycle_s):
    """MR-RX-094: the items' frames to the endpoint, a burst at one instant and each
    :class:`Idle` advancing the time by its cycles x ``cycle_s`` (the endpoint's delayed-ACK
    timers fire in the gaps); returns its ACK/NAK frames as :func:`requests` tuples."""
    from .codec import decode
    out = []
    t = 0.0

    def drain():
        while (g := ep.next_packet(t)) is not None:
            out.append(_norm_frame(g))
    for it in items:
        if isinstance(it, Idle):
            t += it.cycles * cycle_s
            drain()
        elif isinstance(it, Case) and not it.drop:
            ep.receive(decode(it.frame), t)
            drain()
    return out


def requests(s: Setup, acks):
    """The RX engine's ACK/NAK requests (flat ``m_ack`` payloads) as comparable tuples."""
    return [_norm_request(s.lay, v) for v in acks]


def memory_image(s: Setup, places, data):
    """The registered buffers after the RX engine's placements (commands and their bytes)."""
    bufs = {k.rkey: bytearray(k.length) for k in s.keys}
    assert len(places) == len(data)
    for v, d in zip(places, data):
        p = unpack(s.lay.place, v)
        assert p["length"] == len(d)
        for k in s.keys:
            off = (p["addr"] - k.base) % (1 << 64)
            if off + len(d) <= k.length:
                bufs[k.rkey][off:off + len(d)] = d
                break
        else:
            raise AssertionError(f"placement {p} outside every region")
    return {k: bytes(b) for k, b in bufs.items()}


# ------------------------------------------------------------------ the reference endpoint's traffic

@dataclass
class Traffic:
    """One transfer between two reference endpoints over the model fabric, as the receiving
    host saw it (MR-RX-071): ``cases`` are the frames that reached it, in arrival order, each
    through the parser's golden model; ``acks`` the receiving endpoint's ACK and NAK frames in
    the order it made them (tuples as :func:`requests`); ``memory`` its registered regions after
    the run; ``sources`` what each write carried ``(rkey, va, bytes)``; ``stats`` what the
    fabric and the endpoints did (lost, delayed, duplicated, marked, resent, completed)."""
    cases: list
    acks: list
    memory: dict
    sources: list
    stats: dict
    times: list = field(default_factory=list)      # arrival time of each case's frame (s)
    #: the receiving endpoint's completions in the order it made them (tuples as
    #: :func:`completions`, MR-RX-087)
    cqes: list = field(default_factory=list)
    #: MR-RX-105: receives the receiving host posted, as ``(frames arrived before, CfgWrite)``
    posts: list = field(default_factory=list)
    #: MR-RX-133: the READ requests the receiving endpoint executed, in order (tuples as
    #: :func:`responses`)
    rsps: list = field(default_factory=list)
    #: MR-RX-157: the atomics the receiving endpoint executed, in order (tuples as
    #: :func:`record_responses`' ``atoms``: the item, the operands, the original value)
    atoms: list = field(default_factory=list)

    @property
    def items(self):
        """The cases with the receive-table writes of the receiving host's posts among them,
        each after the frames that had arrived when it was posted."""
        out, j = [], 0
        for i, c in enumerate(self.cases):
            while j < len(self.posts) and self.posts[j][0] <= i:
                out.append(self.posts[j][1])
                j += 1
            out.append(c)
        return out + [w for _, w in self.posts[j:]]

    def write_pcap(self, path):
        """The frames the receiving host got, with their arrival times (a pcap, MR-WIRE-120)."""
        from .pcap import write
        write(path, list(zip(self.times, (c.frame for c in self.cases))))


#: MR-RX-071: the delayed-ACK timer of the receiving endpoint in the traffic runs (seconds):
#: longer than any run, so it never fires (the slice has no timer, hw-rx.md section 9).
NO_ACK_DELAY = 1.0


def forged_writes(s: Setup, n):
    """``n`` forged MR_WRITEs from the sender's address, one of each bad-input class in turn
    (no connection, P_Key, path, stream, chunk, DMA length, unknown R_Key, no write right,
    bounds, a PSN beyond the window), a SEND beyond the message slots and a READ response to no READ, for
    :func:`endpoint_traffic`'s ``hostile``. Their PSNs lie 2^22 (the SEND's 400) ahead of the
    connection's first: a NAK naming one is a PSN the sender has not sent, which it drops
    (MR-SEC-151), so the transfer goes on."""
    c = s.conns[0]
    far = P.psn_add(c.psn[0], 1 << 22)
    mtu = s.mtu
    k_noacc = s.keys[3]
    make = [
        lambda: s.write(c, qp=s.free_qp, psn=far, plen=8, expect=RxCode.NO_CONNECTION),
        lambda: s.write(c, pkey=c.pkey ^ 0x0101, psn=far, plen=8, expect=RxCode.BAD_PKEY),
        lambda: s.write(c, mrdh_path=s.lay.paths + 1, psn=far, plen=8, expect=RxCode.BAD_PATH),
        lambda: s.write(c, stream=c.n_streams, psn=far, plen=8, expect=RxCode.STREAM),
        lambda: s.write(c, offset=mtu // 2, plen=8, msg_len=mtu, psn=far, expect=RxCode.CHUNK),
        lambda: s.write(c, plen=8, dma_len=9, psn=far, expect=RxCode.LENGTH),
        lambda: s.write(c, key=Key(s.keys[0].rkey ^ (1 << 31), 0, 0, 0), va=0, psn=far, plen=8,
                        expect=RxCode.ACCESS),
        lambda: s.write(c, key=k_noacc, va=0, psn=far, plen=8, expect=RxCode.ACCESS),
        lambda: s.write(c, va=s.keys[0].length - 4, plen=8, psn=far, expect=RxCode.BOUNDS),
        lambda: s.write(c, path=0, psn=far, plen=8, expect=RxCode.PSN_WINDOW),
        # a SEND naming a receive never posted, at a new PSN within the window that the sender
        # does not reach, of a message 2^19 ahead of the stream: beyond the slots before RNR
        # (MR-RX-167, MR-RX-184: both the RX and the endpoint NAK it INVALID_REQUEST)
        lambda: s.send(c, 1 << 30, path=0, psn=P.psn_add(c.psn[0], 400), plen=8, msg=1 << 19,
                       expect=RxCode.MSG_SLOTS),
        # MR-RX-111: a READ response to no READ
        lambda: s.write(c, op=Op.MR_READ_RESP, psn=far, plen=8, msg=1 << 19, expect=RxCode.NO_READ),
    ]
    return [replace(make[i % len(make)](), name=f"forged{i}") for i in range(n)]


def endpoint_traffic(conns=256, paths=4, keys=256, *, streams=records.STREAMS, nbytes=16384, loss=0.0, reorder=0.0, dup=0.0,
                     seed=0, n_conns=3, n_writes=6, mtu_log2=8, ack_every=4, rtt=10e-6,
                     rate_bps=100e9, bottleneck=0.5, ecn_packets=4, until=0.05, hostile=0,
                     imm=0.0, n_streams=None, ack_delay=None, sends=0.0, recv_delay=0.0, reads=0.0,
                     read_reqs=0.0, atomics=0.0, atomic_reqs=0.0):
    """The reference endpoint's real traffic (MR-RX-071): a sender :class:`Endpoint` (host 0,
    ``PEER_ADDR``) writes ``nbytes`` in ``n_writes`` RDMA WRITEs, spread over the connections,
    their streams and the three writable regions, to a receiver :class:`Endpoint` (host 1,
    ``LOCAL_ADDR``) through one switch of the model fabric (:class:`metaroce.sim.topology.Fabric`).
    The switch's link to the receiver carries the data direction's faults (``loss``, ``reorder``
    with up to one ``rtt`` of extra delay, ``dup``; :class:`metaroce.sim.faults.Faults`) and runs
    at ``bottleneck`` x the rate, with ECN marking above ``ecn_packets`` MTU packets queued, so
    that CE marks occur; ACKs travel back without faults. ``hostile`` forged writes
    (:func:`forged_writes`, every bad-input class the endpoint and the slice both check) reach
    the receiver at random times during the transfer, from the sender's address. A Host
    ``rx_hook`` captures the frames that reach the receiver, in arrival order; a ``tx_hook`` its
    ACKs and NAKs.

    The receiver is :func:`endpoint_setup`'s (same connections, keys, initial PSNs as the
    returned :class:`Setup`), with two things the slice does not have switched off so that its
    ACK stream is the slice's: the delayed-ACK timer (``ack_delay`` = :data:`NO_ACK_DELAY`) and
    the rate-hint pushes (MR-CC-009). A fraction ``imm`` of the writes carry an immediate
    (WRITE_IMM: the receiver completes them, MR-RX-087); ``n_streams`` fixes every connection's
    streams (1: consecutive messages of a connection share a stream, so that message order
    matters). The sender keeps each message's chunks within the RX engine's chunk ring
    (``chunk_window`` = :data:`~metaroce.models.rx.CHUNK_RING`, MR-RX-082). A fraction ``sends``
    of the messages are SENDs (half of them SEND_IMM when ``imm``; MR-RX-105): the receiving
    host posts one receive per SEND (a buffer in the regions, the SEND's length plus up to 64
    bytes) in the stream's order, at most ``recv_slots`` not yet completed per stream, the first
    ones ``recv_delay`` seconds after the start (before: RNR), each later one when a receive of
    its stream completes; every post is a receive-table write in ``traffic.items``. Returns
    ``(setup, traffic)``; raises when the transfer did not complete (every message once, with
    success) or the receiver's memory is not the data. A fraction ``reads`` of the messages are
    RDMA READs the receiving endpoint posts to the sender (MR-RX-113): it reads the piece of
    the sender's source into its region; each READ request's first send is an
    outstanding-read write (table 6) in ``traffic.items``; the receiving endpoint keeps one
    READ per connection in flight (``max_tx_msgs`` = 2, MR-VERB-006). A fraction ``read_reqs``
    are RDMA READs the sender posts to the receiver (MR-RX-133): READ requests among the frames
    that reach the receiver, which executes them and sends the responses back (the READ's bytes
    land in the sender's source piece); ``traffic.rsps`` records the requests it executed. A
    fraction ``atomics`` are atomics the receiving endpoint posts to the sender (MR-RX-159: their
    responses reach the receiver, each request's first send an outstanding-read write with its
    ``op``; the original 8 bytes land in 8 bytes of the receiver's region), a fraction
    ``atomic_reqs`` atomics the sender posts to the receiver on 8 bytes of its regions reserved
    for each (MR-RX-157: ``traffic.atoms`` records the ones it executed, in order)."""
    from metaroce.sim.faults import Faults
    from metaroce.sim.topology import Fabric, host_addr
    from .codec import encode
    from .endpoint import Endpoint
    if not (0 <= loss < 1 and 0 <= reorder <= 1 and 0 <= dup <= 1):
        raise ValueError("loss in [0, 1), reorder and dup in [0, 1]")
    assert (host_addr(0), host_addr(1)) == (PEER_ADDR, LOCAL_ADDR)
    mtu = 1 << mtu_log2
    fab = Fabric(2, rate_bps=rate_bps, rtt=rtt, seed=seed, ecn_threshold=ecn_packets * mtu)
    into_rx = "p0.leaf0>h1"
    fab.links[into_rx].rate = rate_bps * bottleneck
    fab.set_faults(Faults(loss=loss, reorder=reorder, reorder_delay=rtt, duplicate=dup,
                          direction="data", seed=seed), links=[into_rx])
    ep_kw = {"line_rate_bps": rate_bps, "base_rtt": rtt}
    rx, s = endpoint_setup(conns, paths, keys, streams=streams, seed=seed, mtu_log2=mtu_log2, ack_every=ack_every,
                           n_conns=n_conns, ack_delay=NO_ACK_DELAY if ack_delay is None else ack_delay,
                           n_streams=n_streams, **({"max_tx_msgs": MSG_SLOTS} if reads or atomics else {}),
                           max_rx_msgs=MSG_SLOTS, **ep_kw)
    # MR-RX-184: the sender keeps at most MSG_SLOTS messages of a connection started and not
    # completed (MR-ENG-011/013), so of each stream: MR-RX-083's precondition, which the RX's
    # slot verdict (MR-RX-167, on by default) NAKs INVALID_REQUEST otherwise; agreed at each
    # connection's open from the receiver's offer (its max_rx_msgs MSG_SLOTS, MR-VERB-015)
    tx = Endpoint(PEER_ADDR, mtu=mtu, ack_every=ack_every, rng=random.Random(seed + 2),
                  chunk_window=CHUNK_RING, announce=False,      # the engine sends none (MR-CC-021)
                  **ep_kw)
    sender, receiver = fab.hosts
    sender.ep, receiver.ep = tx, rx
    rng = random.Random(seed + 3)
    src = bytes(rng.getrandbits(8) for _ in range(nbytes))
    lkey = tx.reg_mr(bytearray(src))
    # MR-RX-157/159: the sender's 8-byte words for the receiver's atomics, and for the results
    # of its own (apart from the source, which its writes read while they are sent)
    tx_words = tx.reg_mr(bytearray(rng.getrandbits(8) for _ in range(512))) if atomics or atomic_reqs else None
    tconn = {c.qp: tx.connect(c.qp | 0x800000, LOCAL_ADDR, c.qp, paths=c.n_paths,
                              streams=c.n_streams, pkey=c.pkey, init_psn=c.psn[0],
                              peer_offer=rx.open_offer())
             for c in s.conns}
    # the writes: consecutive pieces of the source, each to its own range of a region
    cuts = sorted(rng.sample(range(1, nbytes), min(n_writes, nbytes) - 1)) if n_writes > 1 else []
    bounds = [0, *cuts, nbytes]
    fill = {k.rkey: 0 for k in s.keys[:3]}
    sources, posted = [], []
    for i, (a, b) in enumerate(zip(bounds, bounds[1:])):
        c = s.conns[i % len(s.conns)]
        fits = [k for k in s.keys[:3] if fill[k.rkey] + 64 + (b - a) <= k.length]
        if not fits:
            raise ValueError("nbytes too large for the regions")
        k = s.keys[i % 3] if s.keys[i % 3] in fits else fits[0]
        va = fill[k.rkey] + rng.randrange(0, 64)
        fill[k.rkey] = va + (b - a)
        stream = rng.randrange(c.n_streams)
        r = rng.random()
        send = sends and r < sends
        if reads and not send and r < sends + reads:
            send = "read"
        elif read_reqs and not send and r < sends + reads + read_reqs:
            send = "rreq"
        elif atomics and not send and r < sends + reads + read_reqs + atomics:
            send = "atomic"
        elif atomic_reqs and not send and r < sends + reads + read_reqs + atomics + atomic_reqs:
            send = "areq"
        if send in ("atomic", "areq"):
            # 8 aligned bytes of the piece's range: the result, or the atomic's target
            va = (va + 7) & ~7
            fill[k.rkey] = max(fill[k.rkey], va + 8)
        value = rng.getrandbits(32) if imm and rng.random() < (0.5 if send else imm) else None
        posted.append((c.qp, stream, a, b - a, va, k.rkey, 100 + i, value, send))
        if send not in ("rreq", "atomic", "areq"):
            sources.append((k.rkey, va, src[a:b]))
    recvs = {}          # (qp, stream) -> receives still to post, in order: (rkey, va, length, wr_id)
    rd_rows = {}        # (qp, stream, msg) -> the READ's (base, length, wr_id, op)
    key_base0 = {k.rkey: k.base for k in s.keys}
    for qp, stream, a, n, va, rkey, wr, value, send in posted:
        if send == "read":
            m = rx._conns[qp].post_read(stream, rkey, va, n, a, lkey, wr)
            rd_rows[(qp, stream, m.msg)] = (key_base0[rkey] + va, n, wr, RD_OP_READ)
        elif send == "rreq":
            # MR-RX-133: the sender reads the receiver's region into its source piece
            tconn[qp].post_read(stream, lkey, a, n, va, rkey, wr)
        elif send in ("atomic", "areq"):
            cas = rng.random() < 0.5
            kw = {"swap": rng.getrandbits(64), "compare": rng.getrandbits(64)} if cas else {"add": rng.getrandbits(64)}
            word = 8 * (wr % 64)
            if send == "atomic":
                # MR-RX-159: the receiver's atomic on the sender's word, its result at va
                m = rx._conns[qp].post_atomic(stream, "cmp_swap" if cas else "fetch_add", rkey, va, word,
                                              tx_words, wr, **kw)
                rd_rows[(qp, stream, m.msg)] = (key_base0[rkey] + va, 8, wr, RD_OP_CMP_SWAP if cas else RD_OP_FETCH_ADD)
            else:
                # MR-RX-157: the sender's atomic on the receiver's 8 bytes at va
                tconn[qp].post_atomic(stream, "cmp_swap" if cas else "fetch_add", tx_words, word, va, rkey, wr, **kw)
        elif send:
            tconn[qp].post_send(stream, lkey, a, n, wr_id=wr, imm=value)
            room = next(k.length for k in s.keys if k.rkey == rkey) - va
            recvs.setdefault((qp, stream), []).append((rkey, va, min(room, n + rng.randrange(65)), 1000 + wr))
        else:
            tconn[qp].post_write(stream, lkey, a, n, va, rkey, wr_id=wr, imm=value)
    posts = []
    executed_atoms = []
    executed = record_responses(rx, {k.rkey: k.base for k in s.keys}, executed_atoms)
    next_recv = dict.fromkeys(recvs, 0)
    open_recvs = dict.fromkeys(recvs, 0)
    key_base = {k.rkey: k.base for k in s.keys}

    def post_recvs(qp, stream):
        """The receiving host posts its stream's next receives while fewer than recv_slots are open."""
        q = recvs.get((qp, stream), [])
        while next_recv[(qp, stream)] < len(q) and open_recvs[(qp, stream)] < s.lay.recv_slots:
            seq = next_recv[(qp, stream)]
            rkey, va, length, wr = q[seq]
            rx._conns[qp].post_recv(stream, rkey, va, length, wr)
            posts.append((len(frames), s.recv_write(qp, stream, seq, key_base[rkey] + va, length, wr)))
            next_recv[(qp, stream)] += 1
            open_recvs[(qp, stream)] += 1
    frames, acks = [], []
    times = []

    def arrived(f, now):
        frames.append(encode(f))
        times.append(now)
    receiver.rx_hook = arrived
    rd_sent = set()

    def sent(f, now):
        op = f.bth.opcode
        if op in (Op.MR_READ, Op.MR_CMP_SWAP, Op.MR_FETCH_ADD):
            # MR-RX-110: the TX side writes the outstanding-read row when the request first
            # leaves (MR-RX-159: an atomic's with its op)
            k = (f.bth.dest_qp & 0x7FFFFF, f.mrdh.stream, f.mrdh.msg)
            if k not in rd_sent:
                rd_sent.add(k)
                base, length, wr, rop = rd_rows[k]
                posts.append((len(frames), s.read_write(*k, base, length, wr, op=rop)))
        elif op in (Op.MR_ACK, Op.MR_NAK):
            acks.append(_norm_frame(f))
    receiver.tx_hook = sent
    done = []
    n_reads = sum(1 for p in posted if p[8] == "read")
    rx_cqes = []

    def on_completion(host, t, c):
        if host is receiver:
            rx_cqes.append(cq_tuple(c))
            if c.opcode == WC_RECV:
                open_recvs[(c.conn, c.stream)] -= 1
                post_recvs(c.conn, c.stream)
            if c.opcode not in RD_OP_WC:
                return
        done.append((host.name, c.wr_id, int(c.status)))
        if len(done) == len(posted):
            fab.sim.stop()
    for h in fab.hosts:
        h.on_completion = on_completion
    from .codec import decode
    for case in forged_writes(s, hostile):
        fab.sim.at(rng.random() * 5 * rtt, lambda f: receiver.receive(f, 0), decode(case.frame))
    for qp, stream in recvs:
        fab.sim.at(recv_delay, lambda qs: post_recvs(*qs), (qp, stream))
    sender.kick()
    receiver.kick()
    fab.sim.run(until=until)
    fab.sim.run(until=fab.sim.now + 8 * rtt)        # the last ACKs and any late copies
    want = sorted((receiver.name if p[8] in ("read", "atomic") else sender.name, p[6], 0) for p in posted)
    if sorted(done) != want:
        raise AssertionError(f"transfer incomplete or failed: completions {sorted(done)}")
    assert not rx._ctrl, "ACKs left unsent"
    memory = {k.rkey: bytes(rx._mrs[k.rkey][0]) for k in s.keys}
    for rkey, va, data in sources:
        assert memory[rkey][va:va + len(data)] == data, "the receiver's memory is not the data"
    cases = [frame_case(f"rx{i}", b) for i, b in enumerate(frames)]
    assert None not in cases, "a frame the parser bypasses reached the receiving endpoint"
    link = fab.links[into_rx].stats
    stats = {"frames": len(frames), "acks": sum(1 for a in acks if a[0] == "ack"),
             "naks": sum(1 for a in acks if a[0] == "nak"), "lost": link["lost"],
             "delayed": link["delayed"], "duplicated": link["duplicated"],
             "ce_marked": fab.ports[into_rx].stats["marked"],
             "retransmitted": tx.stats["retransmitted"], "duplicates": rx.stats["duplicates"],
             "abandoned_psns": rx.stats["abandoned_psns"], "forged": hostile,
             "sim_time": fab.sim.now}
    stats["sends"] = sum(1 for p in posted if p[8] is True)
    stats["reads"] = n_reads
    stats["read_reqs"] = sum(1 for p in posted if p[8] == "rreq")
    stats["atomics"] = sum(1 for p in posted if p[8] == "atomic")
    stats["atomic_reqs"] = sum(1 for p in posted if p[8] == "areq")
    stats["rnr_naks"] = sum(1 for a in acks if a[0] == "nak" and a[3] == NakReason.RNR)
    return s, Traffic(cases, acks, memory, sources, stats, times, rx_cqes, posts, executed, executed_atoms)


def same_completions(got, want):
    """MR-RX-087, MR-RX-104, MR-RX-112: the engine's completion records against an endpoint's:
    the receive side's (RECV, RECV_RDMA_WITH_IMM) in order; the READs' (RDMA_READ) as a set,
    since the endpoint completes a requester's work in its send-queue order, which the TX side
    keeps, not the RX engine."""
    def split(cs):          # MR-RX-159: an atomic's completion is the requester's too
        return ([c for c in cs if c[3] not in RD_OP_WC], sorted(c for c in cs if c[3] in RD_OP_WC))
    return split(got) == split(want)


def cq_tuple(c):
    """An endpoint completion as :func:`completions` gives the RX engine's records."""
    return (c.conn, c.stream, int(c.status), int(c.opcode), c.byte_len, c.imm, c.wr_id)


def completions(s: Setup, cqes):
    """The RX engine's completion records (flat ``m_cqe`` payloads) as tuples comparable with an
    endpoint's completions ``(conn, stream, status, opcode, byte_len, imm, wr_id)`` (MR-RX-087,
    MR-RX-104: ``imm`` None without an immediate, ``wr_id`` None but for a SEND's)."""
    out = []
    for v in cqes:
        c = unpack(s.lay.cqe, v)
        out.append((c["conn"], c["stream"], c["status"], c["opcode"], c["length"],
                    c["imm"] if c["with_imm"] else None,
                    c["wr_id"] if c["opcode"] == WC_RECV or c["opcode"] in RD_OP_WC else None))
    return out


# ------------------------------------------------------------------ configuration of a replay

#: MR-RX-072: a key row the capture names, without a configuration file: the whole 32-bit
#: range with every right, at base 0 (a placement's address is then the RETH VA + offset).
INFERRED_KEY = {"base": 0, "length": (1 << 32) - 1, "access": P.ACCESS_ALL}


class ConfigError(ValueError):
    """A replay configuration that the RX engine cannot take (one line, for the CLI)."""


def _writes_of(cases):
    """The decoded MR_WRITE/MR_WRITE_IMM frames among ``cases`` that the parser kept."""
    from .codec import DecodeError, decode
    out = []
    for c in cases:
        if c.drop:
            continue
        try:
            f = decode(c.frame)
        except DecodeError:
            continue
        if f.bth.opcode in (Op.MR_WRITE, Op.MR_WRITE_IMM) and f.mrdh is not None and f.reth is not None:
            out.append(f)
    return out


def capture_config(cases, lay, given=None):
    """MR-RX-072: the configuration a replay runs with, as an explicit dict (the JSON of
    ``metaroce replay rx --config``): ``ack_every``, ``mtu``, ``connections`` (``qp``, ``pkey``,
    ``paths``, ``streams``, ``psn``: one initial PSN per path) and ``keys`` (``rkey``, ``base``,
    ``length``, ``access``). What ``given`` (a parsed configuration file) names is taken as it
    is; the rest is learned from the capture's writes (the MR_WRITE/MR_WRITE_IMM frames the
    parser keeps), in frame order:

    * every destination QP below the instance's connection count is a connection (the slice
      has no peer table: two source addresses writing to one QP share it); P_Key of its first
      write; paths and streams one more than the largest MRDH path and stream seen (at most the
      instance's paths and the stream field's range); the initial PSN of each path the lowest
      of that path's PSNs (the half-space order around its first one), of a path never seen
      the connection's first PSN;
    * every R_Key is a key row (the first R_Key of a row wins; the others then read as
      unknown keys), :data:`INFERRED_KEY`;
    * ``mtu``: the largest write payload rounded up to a power of two (at least 64);
      ``ack_every``: the reset value, 4.
    """
    given = dict(given or {})
    unknown = set(given) - {"ack_every", "mtu", "connections", "keys"}
    if unknown:
        raise ConfigError(f"configuration: unknown entries {sorted(unknown)}")
    writes = _writes_of(cases)
    flows = {}
    for f in writes:
        qp = f.bth.dest_qp
        if qp >= lay.conns:
            continue
        fl = flows.setdefault(qp, {"pkey": f.bth.pkey, "path": 0, "stream": 0, "psn": {}})
        fl["path"] = max(fl["path"], f.mrdh.path)
        fl["stream"] = max(fl["stream"], f.mrdh.stream)
        psns = fl["psn"]
        first = psns.setdefault(f.mrdh.path, f.bth.psn)
        if P.psn_dist(first, f.bth.psn) < 0:
            psns[f.mrdh.path] = f.bth.psn

    def inferred_conn(qp):
        fl = flows.get(qp)
        if fl is None:
            return {"qp": qp, "pkey": 0xFFFF, "paths": lay.paths, "streams": 1, "psn": [0] * lay.paths}
        n_paths = min(fl["path"] + 1, lay.paths)
        start = next(iter(fl["psn"].values()))
        return {"qp": qp, "pkey": fl["pkey"], "paths": n_paths,
                "streams": min(fl["stream"] + 1, lay.streams),
                "psn": [fl["psn"].get(p, start) for p in range(lay.paths)]}

    out = {"ack_every": given.get("ack_every", ACK_EVERY_RESET)}
    biggest = max((len(f.payload) for f in writes), default=0)
    out["mtu"] = given.get("mtu", max(64, 1 << max(0, biggest - 1).bit_length()))
    if "connections" in given:
        conns = []
        for i, c in enumerate(given["connections"]):
            if not isinstance(c, dict) or not isinstance(c.get("qp"), int):
                raise ConfigError(f"configuration: connection #{i} needs an integer qp")
            conns.append({**inferred_conn(c["qp"]), **c})
    else:
        conns = [inferred_conn(qp) for qp in flows]
    for c in conns:
        if isinstance(c.get("psn"), int):
            c["psn"] = [c["psn"]] * lay.paths
    out["connections"] = conns
    if "keys" in given:
        out["keys"] = [{**INFERRED_KEY, **k} if isinstance(k, dict) else k for k in given["keys"]]
    else:
        rows = {}
        for f in writes:
            rows.setdefault(f.reth.rkey & (lay.keys - 1), {"rkey": f.reth.rkey, **INFERRED_KEY})
        out["keys"] = list(rows.values())
    config_writes(out, lay)         # validates
    return out



def config_writes(cfg, lay):
    """MR-RX-060, MR-RX-072: the ``s_cfg`` writes of an explicit replay configuration
    (:func:`capture_config`); :class:`ConfigError` for a value the instance cannot hold."""

    def need(ok, msg):
        if not ok:
            raise ConfigError(f"configuration: {msg}")

    def integer(v, lo, hi, what):
        need(isinstance(v, int) and not isinstance(v, bool) and lo <= v <= hi,
             f"{what} must be an integer in {lo}..{hi}, not {v!r}")
        return v

    ack_every = integer(cfg["ack_every"], 1, 15, "ack_every")
    mtu = integer(cfg["mtu"], 1, 1 << 15, "mtu")
    need(mtu & (mtu - 1) == 0, f"mtu must be a power of two (the engine holds its log2), not {mtu}")
    writes = [CfgWrite(TABLE_GLOBAL, 0, pack(GLOBAL, {"ack_every": ack_every,
                                                      "mtu_log2": mtu.bit_length() - 1}), "global")]
    seen = set()
    for c in cfg["connections"]:
        need(isinstance(c, dict), "a connection must be an object")
        qp = integer(c.get("qp"), 0, lay.conns - 1, "a connection's qp")
        need(qp not in seen, f"connection {qp} given twice")
        seen.add(qp)
        paths = integer(c.get("paths"), 1, lay.paths, f"connection {qp}: paths")
        streams = integer(c.get("streams"), 1, lay.streams, f"connection {qp}: streams")
        pkey = integer(c.get("pkey"), 0, 0xFFFF, f"connection {qp}: pkey")
        psns = c.get("psn")
        need(isinstance(psns, list) and len(psns) == lay.paths,
             f"connection {qp}: psn must be one integer or a list of {lay.paths}")
        writes.append(CfgWrite(TABLE_CONN, qp, pack(lay.conn, {
            "valid": 1, "pkey": pkey, "n_paths_m1": paths - 1, "n_streams_m1": streams - 1}), f"conn{qp}"))
        for p, psn in enumerate(psns):
            integer(psn, 0, P.PSN_MASK, f"connection {qp}: psn")
            row = (qp << lay.path_bits) | p
            writes.append(CfgWrite(TABLE_PATH, row, pack(lay.path, {"cum": psn, "high": psn}),
                                   f"path{qp}.{p}"))
    rows = set()
    for k in cfg["keys"]:
        need(isinstance(k, dict), "a key must be an object")
        rkey = integer(k.get("rkey"), 0, (1 << 32) - 1, "a key's rkey")
        row = rkey & (lay.keys - 1)
        need(row not in rows, f"key {rkey:#x}: its row {row} is another key's")
        rows.add(row)
        writes.append(CfgWrite(TABLE_KEY, row, pack(lay.key, {
            "valid": 1, "rkey": rkey, "base": integer(k.get("base"), 0, P.U64_MASK, f"key {rkey:#x}: base"),
            "length": integer(k.get("length"), 0, (1 << 32) - 1, f"key {rkey:#x}: length"),
            "access": integer(k.get("access"), 0, 15, f"key {rkey:#x}: access")}), f"key{rkey:#x}"))
    return writes


def setup_config(s: Setup):
    """A :class:`Setup`'s connections, keys, MTU and ``ack_every`` as an explicit replay
    configuration (MR-RX-072), e.g. to replay a capture of :func:`endpoint_traffic`."""
    return {"ack_every": s.ack_every, "mtu": s.mtu,
            "connections": [{"qp": c.qp, "pkey": c.pkey, "paths": c.n_paths, "streams": c.n_streams,
                             "psn": [unpack(s.lay.path, w.value)["cum"] for w in s.writes
                                     if w.table == TABLE_PATH and w.addr >> s.lay.path_bits == c.qp]}
                            for c in s.conns],
            "keys": [{"rkey": k.rkey, "base": k.base, "length": k.length, "access": k.access}
                     for k in s.keys]}


def replay_items(frames, lay, given=None):
    """MR-RX-072: a capture's frames as a replay drives them: ``(config, items, cases)``, the
    explicit configuration (:func:`capture_config`), its writes followed by the records of
    the frames the parser does not bypass, and per frame its :class:`Case` or None."""
    cases = [frame_case(f"frame-{i}", b) for i, b in enumerate(frames, 1)]
    kept = [c for c in cases if c is not None]
    cfg = capture_config(kept, lay, given)
    return cfg, config_writes(cfg, lay) + kept, cases


# ------------------------------------------------------------------ functional coverage

#: MR-RX-073: opcode classes of the functional bins (``none``: a parser drop without fields).
OPCODE_CLASSES = ("write", "write_imm", "send", "read_resp", "read_req", "atomic", "mr_other", "rc", "none")


def opcode_class(case: Case):
    """The opcode class of a record (MR-RX-073): MR_WRITE, MR_WRITE_IMM, a SEND, a READ
    response, a READ request, an atomic request (MR-RX-220: MR_CMP_SWAP, MR_FETCH_ADD), another
    MetaRoCE opcode, a RoCEv2 opcode, or ``none`` for a parser drop whose record carries no
    fields."""
    from .parser import unpack_meta
    from .wire import Reason
    m = unpack_meta(case.meta)
    if m["drop"] and m["reason"] != int(Reason.ICRC):
        return "none"
    op = m["bth"]["opcode"]
    if op == Op.MR_WRITE:
        return "write"
    if op == Op.MR_WRITE_IMM:
        return "write_imm"
    if op in SEND_OPS:
        return "send"
    if op == Op.MR_READ_RESP:
        return "read_resp"
    if op == Op.MR_READ:
        return "read_req"
    if op in ATOMIC_OPS:
        return "atomic"
    return "mr_other" if op >= 0xC0 else "rc"


def toggle_cases(s: Setup):
    """MR-RX-073: stimulus that moves every bit the engine reads through both values: every
    ``ack_every`` and MTU the global row holds; bad packets whose fields (QP, P_Key, path,
    stream, offset, message and DMA lengths, VA, R_Key, PSN, source port) take random values
    of their whole width; a window filled bit by bit, cleared by its missing first PSN and
    then slid by a whole window (256 PSNs abandoned); path rows written with random contents
    (window, CE count, pending count, timer) and then used; payloads up to 8 KiB (an MTU of
    8,192 for a while). Outcomes are the model's."""
    rng = s.rng
    lay = s.lay
    out = []
    glob = lambda every, log2: CfgWrite(TABLE_GLOBAL, 0, pack(GLOBAL, {"ack_every": every, "mtu_log2": log2}),
                                        f"global{every}/{log2}")
    c = s.conns[0]
    mtu = s.mtu
    k0 = s.keys[0]
    for v in range(16):         # and a misaligned chunk at each MTU: the offset's low bits
        out.append(glob(v, v))
        out.append(s.write(c, offset=rng.getrandbits(32), plen=8, msg_len=rng.getrandbits(32),
                           psn=rng.getrandbits(24), name=f"chunk-mtu{v}"))
    out.append(glob(s.ack_every, s.mtu.bit_length() - 1))
    for _ in range(6):
        msg_len = rng.getrandbits(32) | mtu
        off = rng.randrange(msg_len // mtu) * mtu
        out += [
            s.write(c, qp=rng.getrandbits(24) | lay.conns, psn=rng.getrandbits(24), name="qp-any"),
            s.write(c, pkey=rng.getrandbits(16), psn=rng.getrandbits(24), sport=rng.getrandbits(16),
                    name="pkey-any"),
            s.write(c, mrdh_path=rng.getrandbits(8) | lay.paths, psn=rng.getrandbits(24), name="path-any"),
            s.write(c, stream=rng.getrandbits(16) | 8, psn=rng.getrandbits(24), name="stream-any"),
            s.write(c, offset=rng.getrandbits(32) | 1, plen=8, msg_len=rng.getrandbits(32),
                    psn=rng.getrandbits(24), name="chunk-any"),
            s.write(c, offset=(1 << 32) - mtu, plen=mtu, msg_len=(1 << 32) - 1, psn=rng.getrandbits(24),
                    name="chunk-top"),
            s.write(c, offset=off, plen=min(mtu, msg_len - off), msg_len=msg_len, va=rng.getrandbits(64),
                    psn=rng.getrandbits(24), name="bounds-any"),
            s.write(c, plen=8, dma_len=rng.getrandbits(32), psn=rng.getrandbits(24), name="length-any"),
            s.write(c, key=Key(rng.getrandbits(32), 0, 0, 0), va=0, psn=rng.getrandbits(24), name="rkey-any"),
            s.write(c, path=0, psn=rng.getrandbits(24), plen=4, name="psn-any"),
            s.write(c, path=0, ecn=rng.choice([0, 1]), plen=4, name="not-ect"),
        ]
    # a window filled bit by bit then cleared by its missing first PSN; another filled and
    # then slid by a whole window over the received PSNs (the abandoned-hole popcount)
    c2 = next((x for x in s.conns if x.n_paths > 1), s.conns[0])
    # (and windows filled at random, then slid: popcounts of every size in every group)
    fills = [(0, 255, 0, 1.0), (1 % c2.n_paths, 256, 512, 1.0), (0, 0, 512, 1.0)]
    fills += [(k % c2.n_paths, 256, 257 + rng.randrange(256), rng.choice([0.3, 0.5, 0.8, 0.95]))
              for k in range(6)]
    for p, last, then, density in fills:
        base = rng.getrandbits(24)
        out.append(s.path_write(c2.qp, p, base))
        out += [s.write(c2, path=p, psn=P.psn_add(base, d), plen=0, name=f"fill{p}+{d}")
                for d in range(1, last + 1) if density == 1.0 or rng.random() < density]
        out.append(s.write(c2, path=p, psn=P.psn_add(base, then), plen=0, name=f"fill{p}-end"))
        out.append(s.path_write(c2.qp, p, c2.psn[p]))
    # path rows with random contents, then packets on them (ACKs every 15 packets meanwhile,
    # so that an in-order packet of a row with a high pending count is not acknowledged)
    out.append(glob(15, s.mtu.bit_length() - 1))
    for p in range(lay.paths):
        cum = rng.getrandbits(24)
        quiet = p % 2 == 0          # the next packet is in order and asks no ACK: CE count kept
        row = {"cum": cum, "sack": rng.getrandbits(256), "high": cum if quiet else rng.getrandbits(24),
               "ce": rng.getrandbits(16), "pending": rng.randrange(14) if quiet else rng.getrandbits(4),
               "prev_ce": 1 if quiet else rng.getrandbits(1),
               "ack_timer": rng.getrandbits(32), "last_psn": rng.getrandbits(24),
               "last_sport": rng.getrandbits(16)}
        out.append(CfgWrite(TABLE_PATH, (c.qp << lay.path_bits) | p, pack(lay.path, row), f"path-any{p}"))
        for d in (0, 1, 2, 5, 255, 300):
            out.append(s.write(c, path=p, psn=P.psn_add(row["cum"], d), plen=4, ecn=rng.choice([2, 3]),
                               sport=rng.getrandbits(16), name=f"row-any{p}+{d}"))
        out.append(s.path_write(c.qp, p, c.psn[p]))
    out.append(glob(s.ack_every, s.mtu.bit_length() - 1))
    # the in-order run after cum of every length class: a row whose SACK holds t received
    # PSNs after a hole at cum, then cum arrives (cum advances by t + 1)
    for i in range(48):
        p = i % lay.paths
        t = rng.choice([rng.randrange(256), rng.randrange(16), 255 - rng.randrange(16)])
        cum = rng.getrandbits(24)
        sack = ((1 << t) - 1) | ((rng.getrandbits(256) << (t + 1)) & ((1 << 256) - 1))
        out.append(CfgWrite(TABLE_PATH, (c.qp << lay.path_bits) | p,
                            pack(lay.path, {"cum": cum, "sack": sack, "high": P.psn_add(cum, t + 1)}),
                            f"run{t}"))
        out.append(s.write(c, path=p, psn=cum, plen=0, name=f"run{t}"))
    for p in range(lay.paths):
        out.append(s.path_write(c.qp, p, c.psn[p]))
    # payloads up to 8 KiB
    out.append(glob(s.ack_every, 13))
    for plen in (8192, 4096 + 3, 2048 + 1024 + 7, 1536):
        out.append(s.write(c, path=1 % c.n_paths, plen=plen, key=k0, name=f"big{plen}"))
    out.append(glob(s.ack_every, s.mtu.bit_length() - 1))
    return out


def long_read_cases(s: Setup, *, conn=-1, stream=0):
    """MR-RX-110..112 with more chunks than the ring (MR-RX-082's epochs on the READ
    accounting row): a READ of ``2 * chunk_ring + 3`` chunks answered in order, with two chunks
    resent after the ring moved past them (a chunk of the epoch before). Outcomes are the
    model's."""
    c = s.conns[conn]
    k = s.keys[1]
    mtu = s.mtu
    rng = s.rng
    ring = s.lay.chunk_ring if hasattr(s.lay, "chunk_ring") else CHUNK_RING
    n = 2 * ring + 3
    msg = rng.getrandbits(32)
    msg_len = (n - 1) * mtu + rng.randint(1, mtu)
    out = [s.read_write(c.qp, stream, msg, k.base + rng.randrange(64), msg_len, rng.getrandbits(64))]
    order = list(range(n))
    order.insert(20, 3)
    order.insert(30, 18)
    for j in order:
        out.append(s.write(c, op=Op.MR_READ_RESP, path=rng.randrange(c.n_paths), stream=stream, offset=j * mtu,
                           plen=min(mtu, msg_len - j * mtu), msg_len=msg_len, msg=msg, name=f"rd-long{j}"))
    return out


def _wide_key(s):
    """A key at a free index of the key table covering every 32-bit length from address 0
    (the wide-field stimulus' messages of a random 32-bit length, MR-RX-073/225)."""
    lay, rng = s.lay, s.rng
    used = {k.rkey & (lay.keys - 1) for k in s.keys}
    idx = next(i for i in range(lay.keys) if i not in used)
    return Key((rng.getrandbits(32 - lay.key_bits) << lay.key_bits) | idx, rng.getrandbits(63),
               (1 << 32) - 1, P.ACCESS_ALL)


def message_toggle_cases(s: Setup, rounds=6):
    """MR-RX-073: stimulus for the message stage's wide fields (MR-RX-080..086, MR-RX-100..105):
    a stream reopened at a random 32-bit message number (table 4), then two WRITE_IMMs done in
    one bundle (the later message first: a bundle's second record) and two SENDs on receives
    posted at random sequence numbers with random ``wr_id`` (the later one a SEND_IMM), a SEND
    naming a random receive never posted, and the first chunk of a message of a random 32-bit
    length under a key that covers it (the message left open, the stream reopened after). The
    stream is reopened at its message number before at the end. Outcomes are the model's."""
    from .rx import TABLE_MSG
    rng = s.rng
    mtu = s.mtu
    c = s.conns[-1]
    stream = c.n_streams - 1
    row = (c.qp << 3) | stream
    big = _wide_key(s)
    out = [s.key_write(big)]
    before = c.msg.get(stream, 0)
    for i in range(rounds):
        n = rng.getrandbits(32) - 8 if i % 2 else rng.getrandbits(31)
        n = max(n, 0)
        out.append(CfgWrite(TABLE_MSG, row, n, f"mt-open{i}"))
        k = s.keys[0]
        one = lambda msg, plen, op=Op.MR_WRITE_IMM, name="mt": s.write(
            c, path=rng.randrange(c.n_paths), stream=stream, offset=0, plen=plen, msg_len=plen, key=k,
            va=rng.randrange(0, k.length - plen), op=op, msg=msg, name=f"{name}{i}")
        out += [one(n + 1, rng.randint(1, mtu), name="mt-ahead"), one(n, rng.randint(0, mtu), name="mt-behind")]
        r = rng.getrandbits(31) & ~1
        for q in (r, r + 1):
            out.append(s.recv_write(c.qp, stream, q, k.base + rng.randrange(1 << 12), mtu, rng.getrandbits(64)))
        sends = lambda q, msg, imm, name: s.send(c, q, path=rng.randrange(c.n_paths), stream=stream, offset=0,
                                                 plen=rng.randint(1, mtu), msg=msg, imm=imm, name=f"{name}{i}")
        out += [sends(r + 1, n + 3, True, "mt-send-ahead"), sends(r, n + 2, False, "mt-send-behind"),
                sends(rng.getrandbits(32), n + 4, False, "mt-send-none")]
        msg_len = rng.getrandbits(32) | (2 * mtu)
        out.append(s.write(c, path=rng.randrange(c.n_paths), stream=stream, offset=0, plen=mtu, msg_len=msg_len,
                           key=big, va=0, op=Op.MR_WRITE_IMM, msg=n + 5, name=f"mt-long{i}"))
    out += [CfgWrite(TABLE_MSG, row, before, "mt-reopen"), s.key_write(big, valid=0)]
    return out


def long_message_cases(s: Setup, *, conn=1, stream=0, chunks=(8, 2, 8)):
    """MR-RX-221: messages above 16 KiB at an MTU of 8,192 (the global row's ``mtu_log2`` 13
    for these cases, put back after): a WRITE_IMM of ``chunks[0]`` full chunks and a short
    last one, its chunks out of order (completed with its byte count, bits 14 to 16 of the
    message slot's ``placed`` and of the completion's ``length``; under a key of the setup
    that covers it, or one written for it and revoked after); a SEND of ``chunks[1]``
    full chunks and a short one into a receive posted at a random sequence number; a READ of
    ``chunks[2]`` full chunks and a short one answered in order (the READ accounting row's
    ``placed``; MR-RX-227: eight, above 64 KiB). Outcomes are the model's."""
    rng = s.rng
    c = s.conns[conn]
    mtu_log2 = 13
    mtu = 1 << mtu_log2
    glob = lambda log2: CfgWrite(TABLE_GLOBAL, 0, pack(GLOBAL, {"ack_every": s.ack_every, "mtu_log2": log2}),
                                 f"global{s.ack_every}/{log2}")
    out = [glob(mtu_log2)]

    def take_msg():
        m = c.msg.get(stream, 0)
        c.msg[stream] = m + 1
        return m

    def lengths(n):
        msg_len = n * mtu + rng.randint(1, mtu // 64)
        return msg_len, [min(mtu, msg_len - j * mtu) for j in range(n + 1)]
    msg_len, plens = lengths(chunks[0])
    k = next((x for x in s.keys[:3] if x.length >= msg_len), None)
    big = None
    if k is None:           # a region for it in an unused key row, revoked after
        used = {x.rkey & (s.lay.keys - 1) for x in s.keys}
        idx = next(i for i in range(s.lay.keys) if i not in used)
        k = big = Key((rng.getrandbits(32 - s.lay.key_bits) << s.lay.key_bits) | idx, rng.getrandbits(63),
                      1 << 20, P.ACCESS_ALL)
        out.append(s.key_write(big))
    va = rng.randrange(0, k.length - msg_len)
    m = take_msg()
    order = list(range(len(plens)))
    rng.shuffle(order)
    out += [s.write(c, op=Op.MR_WRITE_IMM, path=rng.randrange(c.n_paths), stream=stream, offset=j * mtu,
                    plen=plens[j], msg_len=msg_len, key=k, va=va, msg=m, name=f"long-w{j}") for j in order]
    msg_len, plens = lengths(chunks[1])
    q = rng.getrandbits(31)
    out.append(s.recv_write(c.qp, stream, q, s.keys[0].base + rng.randrange(1 << 12), msg_len + rng.randrange(64),
                            rng.getrandbits(64)))
    m = take_msg()
    out += [s.send(c, q, path=rng.randrange(c.n_paths), stream=stream, offset=j * mtu, plen=plens[j],
                   msg_len=msg_len, msg=m, imm=True, name=f"long-s{j}") for j in range(len(plens))]
    msg_len, plens = lengths(chunks[2])
    rd_msg = rng.getrandbits(31)
    out.append(s.read_write(c.qp, stream, rd_msg, s.keys[1].base + rng.randrange(64), msg_len, rng.getrandbits(64)))
    out += [s.write(c, op=Op.MR_READ_RESP, path=rng.randrange(c.n_paths), stream=stream, offset=j * mtu,
                    plen=plens[j], msg_len=msg_len, msg=rd_msg, name=f"long-r{j}") for j in range(len(plens))]
    out.append(glob(s.mtu.bit_length() - 1))
    if big is not None:
        out.append(s.key_write(big, valid=0))
    return out


def epoch_cases(s: Setup):
    """MR-RX-225: chunks at high epochs (bits 2 and up of a chunk ring entry's epoch, chunk
    numbers of 64 ring lengths and more): on the last connection's last stream, reopened at a
    random message number, a WRITE_IMM in each message slot of a random 32-bit length under a
    key that covers it, one chunk in every ring position at an epoch with bits 2 to 7 set
    (four of them again at the next epoch), the messages left open and the stream reopened at
    its message number before; a READ of a random 32-bit length answered the same way, then
    its row reused by a one-chunk READ answered in full (the row cleared, completed). Outcomes
    are the model's."""
    from .rx import EPOCH_BITS, TABLE_MSG
    rng = s.rng
    lay = s.lay
    mtu = s.mtu
    ring = lay.chunk_ring
    c = s.conns[-1]
    stream = c.n_streams - 1
    row = (c.qp << 3) | stream
    big = _wide_key(s)
    top = (1 << EPOCH_BITS) - 1

    def chunks():
        """(chunk number, ring position) at high epochs, the first four positions again one
        epoch later (the epoch wrapping to 0 after the top one)."""
        ep = [top ^ rng.getrandbits(2) for _ in range(ring)]
        first = [(e * ring + pos, pos) for pos, e in enumerate(ep)]
        rng.shuffle(first)
        return first + [(((ep[pos] + 1) & top) * ring + pos, pos) for pos in range(4)]

    def msg_len_for(most):
        return max(rng.getrandbits(32), (most + 1) * mtu)
    before = c.msg.get(stream, 0)
    n = rng.getrandbits(31)
    out = [s.key_write(big), CfgWrite(TABLE_MSG, row, n, "ep-open")]
    for j in range(lay.msg_slots):
        todo = chunks()
        msg_len = msg_len_for(max(k for k, _ in todo))
        out += [s.write(c, path=rng.randrange(c.n_paths), stream=stream, offset=k * mtu, plen=mtu, msg_len=msg_len,
                        key=big, va=0, op=Op.MR_WRITE_IMM, msg=n + j, name=f"ep-w{j}.{k}") for k, _ in todo]
    out += [CfgWrite(TABLE_MSG, row, before, "ep-reopen"), s.key_write(big, valid=0)]
    m = rng.getrandbits(31)
    todo = chunks()
    msg_len = msg_len_for(max(k for k, _ in todo))
    out.append(s.read_write(c.qp, stream, m, s.keys[1].base, msg_len, rng.getrandbits(64)))
    out += [s.write(c, op=Op.MR_READ_RESP, path=rng.randrange(c.n_paths), stream=stream, offset=k * mtu, plen=mtu,
                    msg_len=msg_len, msg=m, name=f"ep-r{k}") for k, _ in todo]
    m2 = m + lay.rd_slots
    out.append(s.read_write(c.qp, stream, m2, s.keys[1].base + rng.randrange(64), 8, rng.getrandbits(64)))
    out.append(s.write(c, op=Op.MR_READ_RESP, path=rng.randrange(c.n_paths), stream=stream, offset=0, plen=8,
                       msg_len=8, msg=m2, name="ep-r-reused"))
    return out


def high_request_cases(s: Setup, rounds=3):
    """MR-RX-257: the responder's requests at high message numbers and addresses, two in one
    delivery: on the last connection's last stream, reopened (table 4) at a random 31-bit message number each round, under a key at a random 8-aligned
    64-bit base (its low word below 2^31) covering every
    32-bit length, a fetch-and-add one message ahead then a compare-and-swap at the
    delivery point (one atomic bundle of two items), and two READ requests of random 31-bit
    lengths the same way (one response bundle of two items); the stream reopened at its
    message number before, the key withdrawn. They move the high bits of the items'
    message number, stream and host address. Outcomes are the model's."""
    from .rx import TABLE_MSG
    rng = s.rng
    c = s.conns[-1]
    stream = c.n_streams - 1
    row = (c.qp << 3) | stream
    wide = _wide_key(s)
    # bits 32..63 random, the low word's sum with any VA and length below 2^32
    key = Key(wide.rkey, (rng.getrandbits(32) << 32) | (rng.getrandbits(31) & ~7), wide.length, wide.access)
    before = c.msg.get(stream, 0)
    out = [s.key_write(key)]
    for r in range(rounds):
        n = rng.getrandbits(31)
        out.append(CfgWrite(TABLE_MSG, row, n, f"hq-open{r}"))

        def req(make, m, **kw):
            return make(s, c, m, key=key, stream=stream, path=rng.randrange(c.n_paths),
                        expect=RxCode.ACCEPTED, **kw)
        out += [req(atomic_request, n + 1, cas=False, va=8 * rng.getrandbits(28), name=f"hq-fadd{r}"),
                req(atomic_request, n, va=8 * rng.getrandbits(28), name=f"hq-cas{r}")]
        out += [req(read_request, n + 3, va=0, length=rng.getrandbits(31), name=f"hq-rd-b{r}"),
                req(read_request, n + 2, va=rng.getrandbits(31), length=rng.getrandbits(31), name=f"hq-rd-a{r}")]
    return out + [CfgWrite(TABLE_MSG, row, before, "hq-reopen"), s.key_write(key, valid=0)]


def request_cases(s: Setup, n_random=30):
    """MR-RX-220: the responder's request classes and the atomic responses in the coverage
    suite: the atomic request cases (:func:`atomic_request_cases`) on connection 4's last
    stream, the atomic response cases (:func:`atomic_response_cases`) on connection 3's (2's
    paths are left far ahead by the window cases),
    ``n_random`` random READ requests and ``2 * n_random // 3`` random atomics (connections
    4 and 5), as ``rx_lockstep`` sends them. Outcomes are the model's."""
    return (atomic_request_cases(s, conn=4, stream=s.conns[4].n_streams - 1)
            + atomic_response_cases(s, conn=3, stream=s.conns[3].n_streams - 1)
            + random_read_requests(s, n_random) + random_atomics(s, 2 * n_random // 3, conns=(4, 5)))


def coverage_suite(s: Setup, n_random=150):
    """MR-RX-073: the cases of one coverage batch: the window and bad-input cases with both
    write opcodes, a same-path burst, other opcodes kept and dropped by the parser, the SEND
    cases and SENDs of every check before the receive match (MR-RX-100..104), the READ
    response cases and responses of every check before the READ row (MR-RX-110..112), the
    message cases (:func:`message_cases`) and a READ of more chunks than the ring
    (:func:`long_read_cases`), the toggle stimulus (:func:`toggle_cases`,
    :func:`message_toggle_cases`), the request classes (:func:`request_cases`, MR-RX-220),
    messages above 16 KiB (:func:`long_message_cases`, MR-RX-221) and the random mix (with
    rows rewritten mid-traffic); chunks at high epochs (:func:`epoch_cases`, MR-RX-225);
    requests at high message numbers and addresses (:func:`high_request_cases`, MR-RX-257);
    duplicates at every residue of the ring (:func:`ring_residue_cases`)."""
    others = [s.other(op, corrupt=corrupt, expect=None if corrupt else RxCode.NOT_HANDLED,
                      name=f"{op.name}{'-bad' if corrupt else ''}")
              for op in (Op.MR_ACK, Op.MR_NAK, Op.RC_WRITE_ONLY,
                         Op.RC_SEND_ONLY, Op.RC_ACK) for corrupt in (False, True)]
    head = (stream_bound_cases(s) + window_cases(s) + window_cases(s, op=Op.MR_WRITE_IMM, conn=2) + bad_cases(s)
            + bad_cases(s, op=Op.MR_WRITE_IMM) + burst_same_path(s, 24, plen=9) + others)
    c = s.conns[0]
    far = P.psn_add(c.psn[0], 1 << 22)
    sends = send_cases(s, conn=1) + [
        s.send(c, 0, qp=s.free_qp, psn=1, plen=8, expect=RxCode.NO_CONNECTION, name="send-no-conn"),
        s.send(c, 0, pkey=c.pkey ^ 0x0101, psn=2, plen=8, expect=RxCode.BAD_PKEY, name="send-pkey"),
        s.send(c, 0, mrdh_path=s.lay.paths + 3, psn=3, plen=8, expect=RxCode.BAD_PATH, name="send-path"),
        s.send(c, 0, psn=far, plen=8, expect=RxCode.PSN_WINDOW, name="send-window"),
        s.send(c, 0, corrupt=True, psn=4, plen=40, name="send-parser-drop")]
    rsp = lambda **kw: s.write(c, op=Op.MR_READ_RESP, plen=8, msg=1, **kw)
    reads = read_cases(s, conn=1) + [
        s.read_write(c.qp, 0, 1, s.keys[1].base, 8, 0),
        rsp(qp=s.free_qp, psn=1, expect=RxCode.NO_CONNECTION, name="rd-no-conn"),
        rsp(pkey=c.pkey ^ 0x0101, psn=2, expect=RxCode.BAD_PKEY, name="rd-pkey"),
        rsp(mrdh_path=s.lay.paths + 3, psn=3, expect=RxCode.BAD_PATH, name="rd-path"),
        rsp(psn=far, expect=RxCode.PSN_WINDOW, name="rd-window"),
        rsp(corrupt=True, psn=4, name="rd-parser-drop")]
    # MR-RX-183: within the slots but for the message cases' own chunks beyond them
    first = within_slots(s, head + sends + reads + read_request_cases(s, conn=3)) + message_cases(s, conn=4)
    return first + within_slots(s, long_read_cases(s) + toggle_cases(s) + message_toggle_cases(s)
                                + ring_residue_cases(s)
                                + request_cases(s) + long_message_cases(s) + epoch_cases(s) + high_request_cases(s)
                                + random_traffic(s, n_random),
                                before=first)
