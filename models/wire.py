"""Wire-format constants: the single table of opcodes, header sets and reason codes.

Everything here is normative and cited from ``docs/spec/wire.md``. Header fields and lengths
are declared in the header table (:mod:`metaroce.models.headers`, MR-WIRE-003); the sizes here
are read from it. The codec, the endpoints, the cycle models and the HDL all read these
tables; nothing re-derives them.
"""
from enum import IntEnum

from .headers import TABLE as HEADER_TABLE

_T = HEADER_TABLE     # MR-WIRE-003: every header's fields, declared once

#: MR-WIRE-001: version of the project's own MetaRoCE wire format, carried in the
#: high nibble of the first byte of every MetaRoCE extension header.
MR_VERSION = 1

# Header lengths (bytes) come from the header table, the single declaration of every
# header's fields (models/headers.py, MR-WIRE-003).
ETH_HLEN = _T["eth"].length             # MR-WIRE-010
VLAN_TPID = 0x8100      # MR-WIRE-011
VLAN_HLEN = _T["vlan"].length
ETHERTYPE_IPV4 = 0x0800  # MR-WIRE-020
ETHERTYPE_IPV6 = 0x86DD  # MR-WIRE-030
IPV4_HLEN = _T["ipv4"].length
IPV6_HLEN = _T["ipv6"].length
IPPROTO_UDP = 17
UDP_HLEN = _T["udp"].length
ROCE_PORT = 4791        # MR-WIRE-040
BTH_LEN = _T["bth"].length              # MR-WIRE-050
ICRC_LEN = 4            # MR-WIRE-090

# Extension header lengths (bytes).
RETH_LEN = _T["reth"].length            # MR-WIRE-060
AETH_LEN = _T["aeth"].length            # MR-WIRE-061
IMM_LEN = _T["imm"].length              # MR-WIRE-062
ATOMICACK_LEN = _T["atomicack"].length  # MR-WIRE-063
CNP_PAD_LEN = _T["cnp"].length          # MR-WIRE-064
ATOMICETH_LEN = _T["atomiceth"].length  # MR-WIRE-065
MRDH_LEN = _T["mrdh"].length            # MR-WIRE-071
MRSH_LEN = _T["mrsh"].length            # MR-WIRE-072
MRAH_LEN = _T["mrah"].length            # MR-WIRE-073
MRNH_LEN = _T["mrnh"].length            # MR-WIRE-074
MRSEC_LEN = _T["mrsec"].length          # MR-WIRE-082
TAG_LEN = _T["mrtag"].length            # MR-WIRE-077
MRCH_LEN = _T["mrch"].length            # MR-WIRE-078
MRKX_LEN = _T["mrkx"].length            # MR-WIRE-079

SACK_BITS = _T["mrah"].width("sack")  # MR-WIRE-073
PSN_BITS = _T["bth"].width("psn")  # MR-WIRE-055
PSN_MOD = 1 << PSN_BITS


class Op(IntEnum):
    """BTH opcodes the project sends or accepts (MR-WIRE-051, MR-WIRE-070)."""
    RC_SEND_FIRST = 0x00
    RC_SEND_MIDDLE = 0x01
    RC_SEND_LAST = 0x02
    RC_SEND_LAST_IMM = 0x03
    RC_SEND_ONLY = 0x04
    RC_SEND_ONLY_IMM = 0x05
    RC_WRITE_FIRST = 0x06
    RC_WRITE_MIDDLE = 0x07
    RC_WRITE_LAST = 0x08
    RC_WRITE_LAST_IMM = 0x09
    RC_WRITE_ONLY = 0x0A
    RC_WRITE_ONLY_IMM = 0x0B
    RC_READ_REQUEST = 0x0C
    RC_READ_RESP_FIRST = 0x0D
    RC_READ_RESP_MIDDLE = 0x0E
    RC_READ_RESP_LAST = 0x0F
    RC_READ_RESP_ONLY = 0x10
    RC_ACK = 0x11
    RC_ATOMIC_ACK = 0x12
    RC_CMP_SWAP = 0x13      # MR-WIRE-065 (IBTA COMPARE_SWAP)
    RC_FETCH_ADD = 0x14     # MR-WIRE-065 (IBTA FETCH_ADD)
    CNP = 0x81
    MR_WRITE = 0xC0
    MR_WRITE_IMM = 0xC1
    MR_SEND = 0xC2
    MR_SEND_IMM = 0xC3
    MR_ACK = 0xC4
    MR_NAK = 0xC5
    # MR-WIRE-076: RDMA READ and atomics
    MR_READ = 0xC6
    MR_READ_RESP = 0xC7
    MR_CMP_SWAP = 0xC8
    MR_FETCH_ADD = 0xC9
    MR_SEC = 0xCA           # an authenticated frame (MR-WIRE-082, MR-SEC-110)
    MR_CONN_REQ = 0xCB      # connection handshake (MR-WIRE-078, MR-CONN-101)
    MR_CONN_ACC = 0xCC
    MR_CONN_REJ = 0xCD


#: MR-WIRE-052: the extension headers that follow the BTH, in order, for each opcode.
#: The opcode alone fixes the header set, so a parser knows every offset from byte 0 of the BTH.
HEADERS = {
    Op.RC_SEND_FIRST: (),
    Op.RC_SEND_MIDDLE: (),
    Op.RC_SEND_LAST: (),
    Op.RC_SEND_LAST_IMM: ("imm",),
    Op.RC_SEND_ONLY: (),
    Op.RC_SEND_ONLY_IMM: ("imm",),
    Op.RC_WRITE_FIRST: ("reth",),
    Op.RC_WRITE_MIDDLE: (),
    Op.RC_WRITE_LAST: (),
    Op.RC_WRITE_LAST_IMM: ("imm",),
    Op.RC_WRITE_ONLY: ("reth",),
    Op.RC_WRITE_ONLY_IMM: ("reth", "imm"),
    Op.RC_READ_REQUEST: ("reth",),
    Op.RC_READ_RESP_FIRST: ("aeth",),
    Op.RC_READ_RESP_MIDDLE: (),
    Op.RC_READ_RESP_LAST: ("aeth",),
    Op.RC_READ_RESP_ONLY: ("aeth",),
    Op.RC_ACK: ("aeth",),
    Op.RC_ATOMIC_ACK: ("aeth", "atomicack"),
    Op.RC_CMP_SWAP: ("atomiceth",),
    Op.RC_FETCH_ADD: ("atomiceth",),
    Op.CNP: ("cnp",),
    Op.MR_WRITE: ("mrdh", "reth"),
    Op.MR_WRITE_IMM: ("mrdh", "reth", "imm"),
    Op.MR_SEND: ("mrdh", "mrsh"),
    Op.MR_SEND_IMM: ("mrdh", "mrsh", "imm"),
    Op.MR_ACK: ("mrah",),
    Op.MR_NAK: ("mrnh",),
    # MR-WIRE-076: READ request (RETH: remote VA, R_Key, read length; MRDH msg_len 0), READ
    # response (MRDH: the request's stream and msg, offset into the requester's buffer), atomics
    # (RETH: VA, R_Key, DMA length 8; the 64-bit operands are the payload).
    Op.MR_READ: ("mrdh", "reth"),
    Op.MR_READ_RESP: ("mrdh",),
    Op.MR_CMP_SWAP: ("mrdh", "reth"),
    Op.MR_FETCH_ADD: ("mrdh", "reth"),
    Op.MR_SEC: ("mrsec",),
    Op.MR_CONN_REQ: ("mrch",),
    Op.MR_CONN_ACC: ("mrch",),
    Op.MR_CONN_REJ: ("mrch",),
}

#: Bytes of each extension header (models/headers.py, MR-WIRE-003).
HEADER_LEN = {h: _T[h].length for h in
              ("reth", "aeth", "imm", "atomicack", "atomiceth", "cnp", "mrdh", "mrsh", "mrah", "mrnh",
               "mrsec", "mrch")}

#: Opcodes that carry payload after their headers (MR-WIRE-081). Others must carry none.
PAYLOAD_OPS = frozenset({
    Op.RC_SEND_FIRST, Op.RC_SEND_MIDDLE, Op.RC_SEND_LAST, Op.RC_SEND_LAST_IMM,
    Op.RC_SEND_ONLY, Op.RC_SEND_ONLY_IMM, Op.RC_WRITE_FIRST, Op.RC_WRITE_MIDDLE,
    Op.RC_WRITE_LAST, Op.RC_WRITE_LAST_IMM, Op.RC_WRITE_ONLY, Op.RC_WRITE_ONLY_IMM,
    Op.RC_READ_RESP_FIRST, Op.RC_READ_RESP_MIDDLE, Op.RC_READ_RESP_LAST,
    Op.RC_READ_RESP_ONLY, Op.MR_WRITE, Op.MR_WRITE_IMM, Op.MR_SEND, Op.MR_SEND_IMM,
    Op.MR_READ_RESP, Op.MR_CMP_SWAP, Op.MR_FETCH_ADD,
    # MR_SEC: the protected frame's headers and payload, then the tag (MR-WIRE-082/077);
    # handshake request/accept: the key-exchange block (MR-WIRE-079).
    Op.MR_SEC, Op.MR_CONN_REQ, Op.MR_CONN_ACC,
})

MR_OPS = frozenset({Op.MR_WRITE, Op.MR_WRITE_IMM, Op.MR_SEND, Op.MR_SEND_IMM, Op.MR_ACK, Op.MR_NAK,
                    Op.MR_READ, Op.MR_READ_RESP, Op.MR_CMP_SWAP, Op.MR_FETCH_ADD,
                    Op.MR_SEC, Op.MR_CONN_REQ, Op.MR_CONN_ACC, Op.MR_CONN_REJ})
#: MR-CONN-101: the handshake opcodes.
CONN_OPS = frozenset({Op.MR_CONN_REQ, Op.MR_CONN_ACC, Op.MR_CONN_REJ})

#: MR-WIRE-084: the sender announcement (MR-CC-021), BTH only, no payload. An optional opcode:
#: kept out of ``Op`` and ``HEADERS``, the RX parser's tables, so that a receiver that does
#: not implement it (the RTL parser of this version) drops it as ``bad_opcode`` (MR-WIRE-100).
MR_ANNOUNCE = 0xCE
#: MR-WIRE-084: opcodes a receiver MAY implement, with their extension headers (none).
OPTIONAL_HEADERS = {MR_ANNOUNCE: ()}


def headers_of(opcode):
    """MR-WIRE-052, MR-WIRE-084: the extension headers of ``opcode``, optional ones included."""
    h = OPTIONAL_HEADERS.get(opcode)
    return HEADERS[Op(opcode)] if h is None else h


_EXT_LEN = {}


def ext_len(opcode):
    """Bytes of extension headers after the BTH for ``opcode`` (MR-WIRE-052); memoised, as
    every frame the simulator sends asks for it."""
    n = _EXT_LEN.get(opcode)
    if n is None:
        n = sum(HEADER_LEN[h] for h in headers_of(opcode))
        _EXT_LEN[opcode] = n
    return n


class MrdhFlag(IntEnum):
    """MRDH flag bits (MR-WIRE-071)."""
    LAST = 0x1      # the packet ends its message (offset + length == msg_len)
    RETX = 0x2      # the packet is a retransmission (informational)
    FIRST = 0x4     # offset == 0
    ERROR = 0x8     # the message ends in error, no payload: a READ response (MR-VERB-004), or
    # on any other data opcode the sender's abort of the message (MR-WIRE-083, MR-ERR-020)


class MrahFlag(IntEnum):
    """MRAH flag bits (MR-WIRE-073)."""
    ECE = 0x1       # at least one packet since the previous ACK on this path was CE-marked
    NAK_PRESENT = 0x2  # reserved for a future NAK summary; sent as 0
    FIRST_LOST = 0x4   # the receiver's pull of a first window lost at a quiet port (MR-CC-027)


class NakReason(IntEnum):
    """MRNH reason codes (MR-WIRE-074)."""
    PSN_WINDOW = 0x01       # PSN outside the receiver's 256-entry window
    INVALID_REQUEST = 0x02  # unknown opcode or malformed request
    ACCESS = 0x03           # R_Key unknown or without the needed right
    BOUNDS = 0x04           # write outside the registered region / receive buffer
    RNR = 0x05              # no receive posted for this stream and receive sequence (yet)
    NO_CONNECTION = 0x06    # BTH DestQP names no open connection
    LENGTH = 0x07           # message length disagrees with an earlier packet of the message
    STREAM = 0x08           # stream id out of range for the connection
    ABORTED = 0x09          # the message was ended by an abort packet (MR-ERR-022)


class SecFlag(IntEnum):
    """MRSEC flag bits (MR-WIRE-082)."""
    ENCRYPTED = 0x1     # the protected payload is encrypted; else it is authenticated only


class ConnFlag(IntEnum):
    """MRCH flag bits (MR-WIRE-078)."""
    AUTH = 0x1          # every later frame of the connection is an MR_SEC frame (MR-SEC-100)
    ENCRYPT = 0x2       # ... with its payload encrypted (MR-SEC-112)


class RejectReason(IntEnum):
    """MRCH reason codes of a handshake reject (MR-CONN-106)."""
    BAD_VERSION = 0x01      # a version this side does not speak
    BAD_PARAMS = 0x02       # paths or MTU outside what this side supports
    NO_RESOURCES = 0x03     # no free connection record
    AUTH_MISMATCH = 0x04    # authentication required by one side, refused by the other
    BAD_CONFIRM = 0x05      # the transcript MAC does not verify (wrong pre-shared key, forgery)
    REPLAY = 0x06           # a request nonce seen before


class Reason(IntEnum):
    """Why a frame is not accepted (MR-WIRE-100). Numeric codes are the RX parser's drop codes."""
    NONE = 0
    TRUNCATED = 1
    BAD_IP = 2
    LENGTH = 3
    BAD_OPCODE = 4
    BAD_VERSION = 5
    ICRC = 6
    MAC_ERROR = 7
    NOT_ROCE = 8        # not a drop: the frame goes to the bypass stream

    @property
    def label(self):
        return self.name.lower()


#: MR-WIRE-041: UDP source ports used as path entropy: 0xC000-0xFFFF (the IANA dynamic range).
ENTROPY_BASE = 0xC000
ENTROPY_MASK = 0x3FFF
