"""The header table: every header's fields declared once (MR-WIRE-003).

One :class:`Header` per header of the wire format (docs/spec/wire.md). A header is a tuple of
:class:`Field` (name, bit offset, width) that tiles it exactly, reserved bits included.

Bit order is network order: bit offset 0 is the most significant bit of the header's byte 0
(the spec's "byte 0, bit 7"), and a field's value is the big-endian integer of its bits. A field
whose name starts with ``reserved`` is sent as zeros and ignored on receipt.

Everything else derives from this table or is checked against it (tests/test_headers.py):

- header lengths (``models/wire.py``: ``BTH_LEN``, ``HEADER_LEN``, ...);
- the codec's packing and unpacking (:meth:`Header.packer`, :meth:`Header.unpacker`: struct
  formats and closures compiled once at import, nothing interpreted per packet);
- the RX parser's metadata layout (:meth:`Header.layout`, ``models/parser.py``) and the RTL's
  field extraction (``hdl/parser.py``);
- the scapy layers (``models/scapy_layers.py``); the Lua dissector and scapy.contrib.roce are
  checked against it.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass

__all__ = ["Field", "Header", "TABLE", "header"]


@dataclass(frozen=True)
class Field:
    """One field: ``offset`` and ``width`` in bits, network order (MR-WIRE-003)."""
    name: str
    offset: int
    width: int

    @property
    def reserved(self):
        return self.name.startswith("reserved")

    @property
    def byte_aligned(self):
        return self.offset % 8 == 0 and self.width % 8 == 0


@dataclass(frozen=True)
class Header:
    """A header: its name (as in ``models/wire.HEADERS`` and the codec), the spec IDs that
    define it, and its fields in wire order."""
    name: str
    spec: tuple
    fields: tuple

    def __post_init__(self):
        pos = 0
        for f in self.fields:
            if f.offset != pos or f.width <= 0:
                raise ValueError(f"{self.name}.{f.name}: offset {f.offset}, expected {pos} "
                                 "(fields must tile)")
            pos += f.width
        if pos % 8:
            raise ValueError(f"{self.name}: {pos} bits is not whole bytes")
        names = [f.name for f in self.fields]
        if len(set(names)) != len(names):
            raise ValueError(f"{self.name}: duplicate field names")

    @property
    def length(self):
        """Bytes."""
        return sum(f.width for f in self.fields) // 8

    @property
    def names(self):
        """Names of the fields that carry a value (reserved ones left out), in wire order."""
        return tuple(f.name for f in self.fields if not f.reserved)

    def field(self, name):
        for f in self.fields:
            if f.name == name:
                return f
        raise KeyError(f"{self.name} has no field {name!r}")

    def width(self, name):
        return self.field(name).width

    def layout(self):
        """``{name: width}`` of the fields that carry a value, in wire order: the shape of this
        header in an ``amaranth.lib.data.StructLayout`` (first field in the least significant bits)."""
        return {f.name: f.width for f in self.fields if not f.reserved}

    # ------------------------------------------------------------------ compiled codecs
    def packer(self, fields=None, *, const=None, raw=(), from_attrs=False):
        """A function that packs this header into bytes.

        ``fields`` (default :attr:`names`) are its arguments, in that order, or with
        ``from_attrs`` the attributes of its one argument. ``const`` gives fixed values of other
        fields; every other field must be reserved (sent as 0). Fields in ``raw`` are passed as
        ``bytes`` of their exact length (addresses) instead of ints. Values are not range-checked.
        """
        fields = tuple(self.names if fields is None else fields)
        const = dict(const or {})
        given = set(fields) | set(const)
        for f in self.fields:
            if f.name not in given and not f.reserved:
                raise ValueError(f"{self.name}.{f.name}: neither an argument nor a constant")
        units = _units(self, raw)
        fmt, exprs = "!", []
        for start, end, members in units:
            n = end - start
            live = [f for f in members if f.name in given]
            if not live:
                fmt += f"{n}x"
                continue
            if len(members) == 1 and members[0].name in raw:
                fmt += f"{n}s"
                exprs.append(members[0].name if not from_attrs else f"h.{members[0].name}")
                continue
            bits, const_bits, terms = 8 * n, 0, []
            for f in live:
                shift = bits - (f.offset - 8 * start) - f.width
                if f.name in const:
                    const_bits |= int(const[f.name]) << shift
                else:
                    v = f"h.{f.name}" if from_attrs else f.name
                    terms.append(f"({v} << {shift})" if shift else v)
            if const_bits or not terms:
                terms.append(str(const_bits))
            expr = " | ".join(terms) if len(terms) > 1 else terms[0]
            if n in _CODES:
                fmt += _CODES[n]
                exprs.append(expr)
            else:
                fmt += f"{n}s"
                exprs.append(f"({expr}).to_bytes({n}, 'big')")
        args = "h" if from_attrs else ", ".join(f for f in fields if f not in const)
        src = f"def pack({args}):\n    return _s.pack({', '.join(exprs)})\n"
        return _compile(src, "pack", struct.Struct(fmt), None, f"{self.name}.pack")

    def unpacker(self, fields=None, *, make=None, raw=()):
        """A function ``unpack(buf, offset=0)`` reading ``fields`` (default :attr:`names`) of
        this header from ``buf`` at byte ``offset``.

        It returns ``make(*values)``, or the tuple of values, or the one value when ``fields``
        names one field. Fields in ``raw`` come back as ``bytes``. The buffer needs to reach only
        the last byte that holds a requested field.
        """
        fields = tuple(self.names if fields is None else fields)
        for name in fields:
            self.field(name)
        units = _units(self, raw)
        last = max(i for i, (_, _, ms) in enumerate(units) if any(f.name in fields for f in ms))
        fmt, outs, value = "!", [], {}
        for i, (start, end, members) in enumerate(units[:last + 1]):
            n = end - start
            live = [f for f in members if f.name in fields]
            if not live:
                fmt += f"{n}x"
                continue
            u = f"u{len(outs)}"
            outs.append(u)
            if len(members) == 1 and members[0].name in raw:
                fmt += f"{n}s"
                value[members[0].name] = u
                continue
            if n in _CODES:
                fmt += _CODES[n]
                word = u
            else:
                fmt += f"{n}s"
                word = f"_int({u}, 'big')"
            bits = 8 * n
            for f in live:
                shift = bits - (f.offset - 8 * start) - f.width
                v = f"({word} >> {shift})" if shift else word
                if shift + f.width < bits:
                    v = f"({v} & {(1 << f.width) - 1:#x})"
                value[f.name] = v
        vals = [value[name] for name in fields]
        if make:
            ret = f"_make({', '.join(vals)})"
        else:
            ret = vals[0] if len(vals) == 1 else f"({', '.join(vals)},)"
        src = (f"def unpack(buf, offset=0):\n    ({', '.join(outs)},) = _s.unpack_from(buf, offset)\n"
               f"    return {ret}\n")
        return _compile(src, "unpack", struct.Struct(fmt), make, f"{self.name}.unpack")


_CODES = {1: "B", 2: "H", 4: "I", 8: "Q"}


def _compile(src, name, st, make, filename):
    ns = {"_s": st, "_make": make, "_int": int.from_bytes}
    exec(compile(src, f"<headers {filename}>", "exec"), ns)
    fn = ns[name]
    fn.source = src
    fn.struct = st
    return fn


def _units(hdr, raw):
    """The struct items of a header: ``[(first byte, end byte, fields)]``.

    Byte-aligned field starts cut the header into segments (no field crosses one); adjacent
    segments are merged where that saves work (a 3-byte PSN with its flag byte becomes one
    32-bit word), choosing by dynamic programming over a small cost model: one struct item
    per unit, two operations per field that shares its unit, four for a conversion between
    bytes and int, two more for a shared 64-bit word.
    """
    cuts = [f.offset // 8 for f in hdr.fields if f.offset % 8 == 0] + [hdr.length]
    segs = []
    for a, b in zip(cuts, cuts[1:]):
        segs.append((a, b, tuple(f for f in hdr.fields if a * 8 <= f.offset < b * 8)))

    def cost(i, j):
        start, end = segs[i][0], segs[j - 1][1]
        n = end - start
        members = tuple(f for s in segs[i:j] for f in s[2])
        live = [f for f in members if not f.reserved]
        if j - i > 1 and n > 8:
            return None
        if any(f.name in raw for f in members) and len(members) > 1:
            return None
        if not live:
            return 0
        if len(members) == 1:
            return 1 if members[0].name in raw or n in _CODES else 4
        # A merged 64-bit word costs more: its values are multi-digit Python ints.
        return (1 if n in _CODES else 4) + 2 * len(live) + (2 if n == 8 else 0)

    best = [(0, [])] + [None] * len(segs)
    for j in range(1, len(segs) + 1):
        for i in range(j):
            c = cost(i, j)
            if c is None or best[i] is None:
                continue
            total = best[i][0] + c
            if best[j] is None or total < best[j][0]:
                unit = (segs[i][0], segs[j - 1][1], tuple(f for s in segs[i:j] for f in s[2]))
                best[j] = (total, best[i][1] + [unit])
    return best[-1][1]


def header(name, spec, *fields):
    return Header(name, tuple(spec.split()), tuple(Field(*f) for f in fields))


# ---------------------------------------------------------------------------------------------
# The table. Offsets are bit offsets from the header's first bit (network order); the comments
# give the spec's "byte: bits" notation (bit 7 = most significant bit of a byte).

TABLE = {h.name: h for h in (
    header("eth", "MR-WIRE-010",
           ("dst", 0, 48),                  # bytes 0-5
           ("src", 48, 48),                 # bytes 6-11
           ("ethertype", 96, 16)),          # bytes 12-13 (0x8100: a "vlan" tag follows)
    # The 802.1Q tag as it follows an Ethernet header whose EtherType is the TPID 0x8100
    # (frame bytes 14-17): the TCI, then the EtherType of the IP packet.
    header("vlan", "MR-WIRE-011",
           ("pcp", 0, 3),                   # byte 0: 7-5
           ("dei", 3, 1),                   # byte 0: 4
           ("vlan", 4, 12),                 # byte 0: 3-0, byte 1 (the VID)
           ("ethertype", 16, 16)),          # bytes 2-3
    header("ipv4", "MR-WIRE-020 MR-WIRE-021 MR-WIRE-022 MR-WIRE-023",
           ("version", 0, 4),
           ("ihl", 4, 4),
           ("dscp", 8, 6),                  # TOS: DSCP then ECN
           ("ecn", 14, 2),
           ("total_len", 16, 16),
           ("ident", 32, 16),
           ("reserved", 48, 1),
           ("df", 49, 1),
           ("mf", 50, 1),
           ("frag_offset", 51, 13),
           ("ttl", 64, 8),
           ("proto", 72, 8),
           ("checksum", 80, 16),
           ("src", 96, 32),
           ("dst", 128, 32)),
    header("ipv6", "MR-WIRE-030",
           ("version", 0, 4),
           ("dscp", 4, 6),                  # traffic class: DSCP then ECN
           ("ecn", 10, 2),
           ("flow_label", 12, 20),
           ("payload_len", 32, 16),
           ("next_header", 48, 8),
           ("hop_limit", 56, 8),
           ("src", 64, 128),
           ("dst", 192, 128)),
    header("udp", "MR-WIRE-040 MR-WIRE-041 MR-WIRE-042",
           ("sport", 0, 16),
           ("dport", 16, 16),
           ("length", 32, 16),
           ("checksum", 48, 16)),
    header("bth", "MR-WIRE-050 MR-WIRE-053 MR-WIRE-054 MR-WIRE-055",
           ("opcode", 0, 8),                # byte 0
           ("se", 8, 1),                    # byte 1: 7
           ("mig", 9, 1),                   # byte 1: 6
           ("pad", 10, 2),                  # byte 1: 5-4 (PadCnt)
           ("tver", 12, 4),                 # byte 1: 3-0
           ("pkey", 16, 16),                # bytes 2-3
           ("fecn", 32, 1),                 # byte 4: 7
           ("becn", 33, 1),                 # byte 4: 6
           ("reserved1", 34, 6),            # byte 4: 5-0
           ("dest_qp", 40, 24),             # bytes 5-7
           ("ack_req", 64, 1),              # byte 8: 7
           ("reserved2", 65, 7),            # byte 8: 6-0
           ("psn", 72, 24)),                # bytes 9-11
    header("reth", "MR-WIRE-060",
           ("va", 0, 64),
           ("rkey", 64, 32),
           ("dma_len", 96, 32)),
    header("aeth", "MR-WIRE-061",
           ("syndrome", 0, 8),
           ("msn", 8, 24)),
    # IBTA AtomicETH, in RC COMPARE_SWAP / FETCH_ADD (RoCEv2 baseline atomics)
    header("atomiceth", "MR-WIRE-065",
           ("va", 0, 64),
           ("rkey", 64, 32),
           ("swap", 96, 64),                # swap value (COMPARE_SWAP) or value to add (FETCH_ADD)
           ("compare", 160, 64)),
    header("imm", "MR-WIRE-062",
           ("imm", 0, 32)),
    header("atomicack", "MR-WIRE-063",
           ("orig", 0, 64)),
    header("cnp", "MR-WIRE-064",
           ("reserved", 0, 128)),
    header("mrdh", "MR-WIRE-001 MR-WIRE-071",
           ("version", 0, 4),               # byte 0: 7-4
           ("flags", 4, 4),                 # byte 0: 3-0
           ("path", 8, 8),
           ("stream", 16, 16),
           ("msg", 32, 32),
           ("offset", 64, 32),
           ("msg_len", 96, 32)),
    header("mrsh", "MR-WIRE-072",
           ("recv_seq", 0, 32)),
    header("mrah", "MR-WIRE-001 MR-WIRE-073",
           ("version", 0, 4),
           ("flags", 4, 4),
           ("path", 8, 8),
           ("ce_count", 16, 16),
           ("cum_psn", 32, 32),
           ("rate_mbps", 64, 32),
           ("trigger_psn", 96, 32),
           ("sack", 128, 256)),             # bytes 16-47; bit 0 of the SACK = lsb of byte 47
    header("mrnh", "MR-WIRE-001 MR-WIRE-074",
           ("version", 0, 4),
           ("flags", 4, 4),
           ("path", 8, 8),
           ("reason", 16, 8),
           ("reserved", 24, 8),
           ("psn", 32, 32)),
    # MR-SEC-110: the security header of an authenticated frame (opcode MR_SEC), right after
    # the BTH; the frame's own opcode moves to next_op and its headers follow.
    header("mrsec", "MR-WIRE-001 MR-WIRE-082",
           ("version", 0, 4),
           ("flags", 4, 4),                 # SecFlag: bit 0 ENCRYPTED
           ("next_op", 8, 8),               # the protected frame's opcode
           ("path", 16, 8),                 # nonce input (MR-SEC-120)
           ("epoch", 24, 8),                # key epoch (MR-SEC-130)
           ("reserved", 32, 32),            # sent as 0 (a future SPI)
           ("seq", 64, 64)),                # per-path security sequence number (MR-SEC-120)
    # MR-SEC-111: the integrity tag that ends an MR_SEC frame's payload, before pad and ICRC.
    header("mrtag", "MR-WIRE-077",
           ("tag", 0, 128)),
    # MR-CONN-101: the connection handshake header (MR_CONN_REQ / _ACC / _REJ).
    header("mrch", "MR-WIRE-001 MR-WIRE-078",
           ("version", 0, 4),
           ("flags", 4, 4),                 # ConnFlag: bit 0 AUTH, bit 1 ENCRYPT
           ("reason", 8, 8),                # RejectReason (reject only; 0 otherwise)
           ("paths", 16, 8),
           ("attempt", 24, 8),              # retry number of the request it answers
           ("reserved1", 32, 8),
           ("src_qpn", 40, 24),             # the sender's QPN for this connection
           ("reserved2", 64, 8),
           ("dst_qpn", 72, 24),             # the peer's QPN (0 in a request)
           ("reserved3", 96, 8),
           ("init_psn", 104, 24),           # the sender's initial PSN
           ("mtu", 128, 16),
           ("reserved4", 144, 16),
           ("nonce", 160, 128)),            # bytes 20-35: random, fresh per request/accept
    # MR-CONN-102: the key-exchange block, the payload of a handshake request or accept.
    header("mrkx", "MR-WIRE-079",
           ("pubkey", 0, 256),              # X25519 public key (RFC 7748)
           ("confirm", 256, 128)),          # HMAC-SHA256/128 over the transcript (MR-CONN-104)
)}
