"""MetaRoCE endpoint: the reference behavioural model of one host's transport.

Implements ``docs/endpoint-api.md`` on top of the pure functions of
:mod:`metaroce.models.protocol` (docs/spec/transport.md). One :class:`Endpoint` holds any
number of :class:`Connection` objects; each connection has many paths (own UDP source port,
own PSN sequence, own window and RTT estimate) and many ordered streams.

Sender: packets are sprayed over the paths round-robin (MR-CONN-004); each path numbers its
packets in order (MR-SEQ-001); a retransmission takes a new PSN on whichever path has room
(MR-REL-003). Receiver: every packet is placed directly where it belongs (MR-PLC-001), the
path's PSN enters a 256-bit SACK window (MR-SEQ-005) and an ACK per path carries cumulative
PSN, SACK, ECN echo and the receiver's fair-share rate hint (MR-SEQ-009, MR-CC-005).
Completions are exactly once and in message order per stream (MR-EXO-001..005).
"""
from __future__ import annotations

import heapq
import struct
from collections import Counter, deque
from dataclasses import dataclass
from enum import IntEnum

from . import protocol as P
from . import records as R
from .records import RTX_POOL
from .security import PROOF_ACK, PROOF_NAK, RKeyGenerator, join_proof, receipt_proof, split_proof
from .codec import BTH, IP, MRAH, MRDH, MRNH, MRSH, RETH, UDP, Eth, Frame, wire_len
from .wire import MR_ANNOUNCE, MrahFlag, MrdhFlag, NakReason, Op

# Module-level aliases of the enum members the per-packet paths compare and store (the same
# objects; an enum member looked up on its class costs several plain name lookups).
_OP_ACK = Op.MR_ACK
_OP_CMP_SWAP = Op.MR_CMP_SWAP
_OP_FETCH_ADD = Op.MR_FETCH_ADD
_OP_NAK = Op.MR_NAK
_OP_READ = Op.MR_READ
_OP_READ_RESP = Op.MR_READ_RESP
_OP_SEND = Op.MR_SEND
_OP_SEND_IMM = Op.MR_SEND_IMM
_OP_WRITE = Op.MR_WRITE
_OP_WRITE_IMM = Op.MR_WRITE_IMM
_MRDH_ERROR = MrdhFlag.ERROR
_MRDH_FIRST = MrdhFlag.FIRST
_MRDH_LAST = MrdhFlag.LAST
_MRDH_RETX = MrdhFlag.RETX
_MRAH_ECE = MrahFlag.ECE
_MRAH_FIRST_LOST = MrahFlag.FIRST_LOST     # MR-CC-027
_OP_ANNOUNCE = MR_ANNOUNCE     # MR-WIRE-084, MR-CC-021

# Per-packet frames are built as codec records without the dataclass constructors: an object and
# its field dict in declaration order (checked below against the dataclasses' fields and
# defaults). The Ethernet, IP and UDP headers of a connection's (path's) frames are one shared
# record each: nothing changes a frame's headers in place (a switch that marks CE, a fault that
# corrupts and the security layer copy first), so sharing them is invisible.
_new = object.__new__
_FRAME_FIELDS = ("eth", "ip", "udp", "bth", "reth", "aeth", "imm", "atomicack", "atomiceth", "mrdh",
                 "mrsh", "mrah", "mrnh", "mrsec", "mrch", "payload", "icrc", "icrc_ok")
_BTH_FIELDS = ("opcode", "se", "mig", "pad", "tver", "pkey", "fecn", "becn", "dest_qp", "ack_req", "psn")
_MRDH_FIELDS = ("version", "flags", "path", "stream", "msg", "offset", "msg_len")
_MRAH_FIELDS = ("version", "flags", "path", "ce_count", "cum_psn", "rate_mbps", "trigger_psn", "sack")


def _data_frame(eth, ip, udp, op, pkey, dest_qp, ack_req, psn, mrdh_flags, path, stream, msg, offset,
                msg_len, reth, mrsh, imm, payload):
    """``Frame(eth=eth, ip=ip, udp=udp, bth=BTH(opcode=op, pkey=pkey, dest_qp=dest_qp,
    ack_req=ack_req, psn=psn), mrdh=MRDH(1, mrdh_flags, path, stream, msg, offset, msg_len),
    reth=reth, mrsh=mrsh, imm=imm, payload=payload)``, built directly."""
    # Attribute stores in field order on a fresh object (CPython keeps them inline, without a
    # dict): several times faster than the constructor's keyword parsing.
    bth = _new(BTH)
    bth.opcode = op
    bth.se = bth.mig = bth.pad = bth.tver = 0
    bth.pkey = pkey
    bth.fecn = bth.becn = 0
    bth.dest_qp = dest_qp
    bth.ack_req = ack_req
    bth.psn = psn
    h = _new(MRDH)
    h.version = 1
    h.flags = mrdh_flags
    h.path = path
    h.stream = stream
    h.msg = msg
    h.offset = offset
    h.msg_len = msg_len
    f = _new(Frame)
    f.eth = eth
    f.ip = ip
    f.udp = udp
    f.bth = bth
    f.reth = reth
    f.aeth = None
    f.imm = imm
    f.atomicack = f.atomiceth = None
    f.mrdh = h
    f.mrsh = mrsh
    f.mrah = f.mrnh = f.mrsec = f.mrch = None
    f.payload = payload
    f.icrc = f.icrc_ok = None
    return f


def _check_fast_records():
    """The direct builders make exactly the codec's records (fields, defaults, order)."""
    import dataclasses
    for cls, names in ((Frame, _FRAME_FIELDS), (BTH, _BTH_FIELDS), (MRDH, _MRDH_FIELDS), (MRAH, _MRAH_FIELDS)):
        if tuple(fl.name for fl in dataclasses.fields(cls)) != names:
            raise ImportError(f"endpoint: codec.{cls.__name__} fields changed; update the fast builders")
    e, i, u = Eth(), IP(), UDP()
    ref = Frame(eth=e, ip=i, udp=u, bth=BTH(opcode=Op.MR_WRITE, pkey=7, dest_qp=9, ack_req=1, psn=5),
                mrdh=MRDH(1, 3, 2, 1, 4, 8, 16), reth=None, mrsh=None, imm=None, payload=b"x")
    got = _data_frame(e, i, u, Op.MR_WRITE, 7, 9, 1, 5, 3, 2, 1, 4, 8, 16, None, None, None, b"x")
    if got != ref or vars(got.bth) != vars(ref.bth) or list(vars(got)) != list(vars(ref)):
        raise ImportError("endpoint: the fast frame builder differs from the codec's records")


_check_fast_records()
_WL_HDR = {}        # opcode -> wire length of a data frame without payload and pad
_ACK_ETH = Eth()
_ACK_IP = {}        # (addr, peer_addr) -> the IP header of ACKs and NAKs (ECN 0)
_UDP_HDR = {}       # sport -> UDP header

ACCESS_LOCAL_WRITE = P.ACCESS_LOCAL_WRITE
ACCESS_REMOTE_WRITE = P.ACCESS_REMOTE_WRITE
ACCESS_REMOTE_READ = P.ACCESS_REMOTE_READ
ACCESS_REMOTE_ATOMIC = P.ACCESS_REMOTE_ATOMIC
ACCESS_ALL = P.ACCESS_ALL


class Status(IntEnum):
    """Completion status (verbs ``ibv_wc_status`` subset). ``SUCCESS`` is 0."""
    SUCCESS = 0
    LOC_PROT_ERR = 4
    REM_INV_REQ_ERR = 9
    REM_ACCESS_ERR = 10
    REM_OP_ERR = 11
    RETRY_EXC_ERR = 12
    RNR_RETRY_EXC_ERR = 13
    REM_ABORT_ERR = 16      # MR-ERR-021/022: the peer's sender abandoned the message


class WcOpcode(IntEnum):
    """Completion opcode (verbs ``ibv_wc_opcode`` subset)."""
    SEND = 0
    RDMA_WRITE = 1
    RDMA_READ = 2
    COMP_SWAP = 3
    FETCH_ADD = 4
    RECV = 128
    RECV_RDMA_WITH_IMM = 129


@dataclass
class Completion:
    """One completion queue entry. ``conn`` is the connection's local id."""
    wr_id: int
    status: Status
    opcode: WcOpcode
    byte_len: int
    conn: int
    stream: int
    imm: int | None = None


#: MR-ERR-003: the completion status a fatal NAK reason maps to.
NAK_STATUS = {
    NakReason.ACCESS: Status.REM_ACCESS_ERR,
    NakReason.BOUNDS: Status.REM_ACCESS_ERR,
    NakReason.INVALID_REQUEST: Status.REM_INV_REQ_ERR,
    NakReason.LENGTH: Status.REM_INV_REQ_ERR,
    NakReason.STREAM: Status.REM_INV_REQ_ERR,
    NakReason.NO_CONNECTION: Status.REM_OP_ERR,
    NakReason.ABORTED: Status.REM_ABORT_ERR,
}

_ACTIVE, _RETIRED, _PROBING = 0, 1, 2
NS = P.NS_PER_S
# MR-ENG-050: a time in seconds to integer ns is ``int(now * NS + 0.5)``, written
# ``(now * _NS_F + 0.5).__trunc__()``: NS as a float is exact, so the product is the same, and
# CPython 3.11 specialises the float-by-float multiply; ``float.__trunc__`` is what ``int()`` of a
# float runs, without the call of the ``int`` type (about 500 machine instructions less)
_NS_F = float(NS)
_NEVER = -(1 << 62)     # ns: "long ago" for last-event times (MR-ENG-050)
_XOK_NONE = 1 << 62     # _Path.xok: no due time (later than any send time)
_XOK_STALE = -(1 << 62)     # _Path.xok: not known
_IDLE, _BLOCKED, _PACED = 0, 1, 2
_DATA_OPS = frozenset((_OP_WRITE, _OP_WRITE_IMM, _OP_SEND, _OP_SEND_IMM, _OP_READ_RESP, _OP_READ,
                       _OP_CMP_SWAP, _OP_FETCH_ADD))
#: MR-VERB-001: requests answered by a response message (READ, atomics).
_REQ_OPS = frozenset({_OP_READ, _OP_CMP_SWAP, _OP_FETCH_ADD})
_RETH_OPS = frozenset({_OP_WRITE, _OP_WRITE_IMM, _OP_READ, _OP_CMP_SWAP, _OP_FETCH_ADD})
_WC_OP = {_OP_WRITE: WcOpcode.RDMA_WRITE, _OP_WRITE_IMM: WcOpcode.RDMA_WRITE,
          _OP_SEND: WcOpcode.SEND, _OP_SEND_IMM: WcOpcode.SEND, _OP_READ: WcOpcode.RDMA_READ,
          _OP_CMP_SWAP: WcOpcode.COMP_SWAP, _OP_FETCH_ADD: WcOpcode.FETCH_ADD}
RING_MASK = P.SEND_WINDOW - 1
_PSN_MASK = P.PSN_MASK
_PSN_HALF = P.PSN_HALF
_SEND_WINDOW = P.SEND_WINDOW
#: MR-ERR-020: the chunk index of a message's abort packet (the ``rtx`` record's abort bit).
ABORT = -1
_NO_ABORT, _ABORT_PENDING, _ABORT_DONE = 0, 1, 2
#: MR-CC-012: wire bytes of a data frame beyond its payload (headers to ICRC with RETH, and the
#: FCS, preamble and gap of MR-CC-006), for the receiver's per-sender byte counts.
_WIRE_HDR = 90 + P.WIRE_OVERHEAD
_DATA_HDR = 90          # MR-CC-023: a data frame's bytes beyond its payload (with RETH)
#: MR-CC-013: the per-path window counters saturate here (10-bit record fields).
_ACC_MAX = 1023


class _SMsg:
    """A message being sent: chunked at MTU boundaries; chunk ``i`` is bytes ``[i*mtu, ...)``."""
    __slots__ = ("stream", "msg", "op", "wr_id", "mv", "length", "va", "rkey", "recv_seq", "imm",
                 "nchunks", "next_chunk", "ack_base", "ack_bits", "nacked", "done", "status", "slot",
                 "rnr", "q", "rd", "rd_len", "dst", "req_acked", "err", "abort", "reth_hdr")

    def __init__(self, stream, msg, op, wr_id, mv, length, va, rkey, recv_seq, imm, mtu):
        self.stream, self.msg, self.op, self.wr_id = stream, msg, op, wr_id
        self.mv, self.length, self.va, self.rkey = mv, length, va, rkey
        self.recv_seq, self.imm = recv_seq, imm
        self.nchunks = max(1, -(-length // mtu))
        self.next_chunk = 0
        # MR-ENG-012, MR-ENG-025: chunks below ack_base are acknowledged; bit i of ack_bits is
        # chunk ack_base + i (CHUNK_WINDOW bits); no chunk at or beyond the window is sent.
        self.ack_base = 0
        self.ack_bits = 0
        self.nacked = 0
        self.done = False
        self.status = Status.SUCCESS
        self.slot = None            # tx_msg slot while started and not completed (MR-ENG-013)
        self.rnr = 0                # RNR NAKs of its lowest unacknowledged chunk (MR-ENG-041)
        self.q = stream             # scheduler queue: the stream, or the response queue (MR-VERB-003)
        # MR-VERB-001: a READ or atomic request is one chunk, acknowledged by req_acked; its
        # ack_base/ack_bits/nacked count the response chunks placed in dst (rd_len bytes).
        self.rd = op in _REQ_OPS
        self.rd_len = length
        self.dst = None
        self.req_acked = False
        self.err = False            # a response that ends its READ in error (MR-VERB-004)
        self.abort = _NO_ABORT      # MR-ERR-020: failed after it started: its abort packet's state
        self.reth_hdr = None        # the RETH of its data frames, built with the first

    def is_acked(self, i):
        if i == ABORT:
            return self.abort != _ABORT_PENDING
        if self.rd:
            return self.req_acked
        return i < self.ack_base or (self.ack_bits >> (i - self.ack_base)) & 1


class _Rec:
    """One transmitted PSN on a path, kept until an ACK resolves it (MR-REL-001).
    ``Connection._next_frame`` builds it field by field (every packet; no ``__init__``: a class
    without one is made by a plain ``_Rec()``, cheaper than ``object.__new__(_Rec)``): ``msg``,
    ``idx`` (chunk), ``t`` (send time, ns), ``nbytes``; ``lost`` (resolved, or declared lost: no
    longer in flight), ``probe``, ``req`` (sent with BTH AckReq: the receiver ACKs it at once),
    ``free`` (a first-window packet outside the hinted window, MR-CC-007), ``twin`` ((record,
    path) of a doubled resend's other copy, MR-REL-012). A new field goes there too."""
    __slots__ = ("msg", "idx", "t", "nbytes", "lost", "probe", "req", "free", "twin")


class _Path:
    __slots__ = ("conn", "idx", "entropy", "gen", "next_psn", "floor", "ring", "live", "inflight",
                 "cwnd", "srtt", "rttvar", "backoff", "deadline", "tstack", "consec_to", "state",
                 "last_ece", "last_ack", "next_dec", "since_req", "probe_token", "probe_interval",
                 "retired_before", "head", "collapsed", "tail_probed", "probe_dl", "probe_at", "min_rtt", "xwit", "xslack", "xrun",
                 "rx_cum", "rx_sack", "rx_high", "rx_ce", "rx_pending", "rx_ack_token", "rx_last",
                 "rx_prev_ce", "ce_acc", "ack_acc", "xcache", "xok", "udp_hdr")

    def __init__(self, conn, idx, entropy, cwnd, probe_interval):
        self.conn, self.idx, self.entropy, self.gen = conn, idx, entropy, 0
        self.next_psn = conn.init_psn           # MR-CONN-107: the local initial PSN
        self.floor = conn.init_psn
        self.ring = [None] * P.SEND_WINDOW    # MR-ENG-027: records by PSN mod 256
        self.live = 0               # records not marked lost
        self.inflight = 0           # bytes of live records
        self.cwnd = int(cwnd)       # MR-ENG-053: integer bytes
        self.srtt = None            # MR-ENG-052: RTT estimator in integer ns
        self.rttvar = 0
        self.backoff = 1
        self.deadline = None        # tail-loss timer (MR-REL-006)
        self.tstack = []            # deadlines queued in the endpoint heap, decreasing
        self.head = self.floor      # no live record below this PSN (MR-REL-006)
        self.tail_probed = False    # MR-REL-010: the timer's last expiry sent a tail probe
        self.probe_dl = 0           # MR-REL-010: when that probe's ACK is overdue (ns)
        self.probe_at = 0           # MR-CC-032: when the last probe goes (a paced turn) (ns)
        self.collapsed = False      # cwnd reset by a timeout that carried no information
        self.min_rtt = None         # lowest RTT sample of the path (MR-REL-009)
        self.xwit = _NEVER          # send time (ns) of the newest packet acked on another path
        self.xslack = 0             # ns: min RTT + queueing + reorder allowance (MR-REL-009)
        self.xrun = 0               # packets declared lost by MR-REL-009 since the last ACK
        self.consec_to = 0
        self.state = _ACTIVE
        self.last_ece = _NEVER      # MR-ENG-050: every time below is integer ns
        self.last_ack = _NEVER
        self.next_dec = 0           # MR-CC-013: end of the current observation window
        self.ce_acc = 0             # packets CE-marked / acknowledged in the window
        self.ack_acc = 0
        self.since_req = 0
        self.probe_token = 0
        self.probe_interval = probe_interval
        self.retired_before = False
        self.rx_cum = conn.peer_init_psn      # receiver: next PSN expected in order (MR-CONN-107)
        self.rx_sack = 0
        self.rx_high = conn.peer_init_psn     # receiver: one past the highest PSN seen
        self.rx_ce = 0
        self.rx_pending = 0
        self.rx_ack_token = 0       # delayed-ACK timer generation (MR-SEQ-009)
        self.rx_last = None         # (psn, sport) of the newest unacknowledged arrival
        self.rx_prev_ce = False     # the previous accepted packet was CE-marked
        # MR-REL-009: _xdue's answer, (need, send time or None), until the path's records
        # change (a record resolved or declared lost; one sent when the answer was None)
        self.xcache = None
        # _xpath's test of that answer in one compare: the cached send time (_XOK_NONE for
        # None) while the cache holds the connection's current ``need`` and the path is active,
        # else _XOK_STALE (the full test runs)
        self.xok = _XOK_STALE
        self.udp_hdr = None         # the UDP header of its frames (source port = entropy)

    def rec(self, psn):
        """The record of an unresolved ``psn``, or ``None`` (MR-ENG-027)."""
        # 0 <= psn_dist(floor, psn) < psn_dist(floor, next_psn), on the unsigned distances
        floor = self.floor
        if ((psn - floor) & _PSN_MASK) < ((self.next_psn - floor) & _PSN_MASK) < _PSN_HALF:
            return self.ring[psn & RING_MASK]
        return None

    def records(self, start=None):
        """Unresolved records from ``start`` (default the floor) in PSN order."""
        ring = self.ring
        psn = self.floor if start is None or P.psn_dist(self.floor, start) < 0 else start
        for _ in range(P.psn_dist(psn, self.next_psn)):
            r = ring[psn & RING_MASK]
            if r is not None:
                yield r
            psn = (psn + 1) & P.PSN_MASK

    def oldest_live(self):
        """The oldest live record (sent, unresolved, not lost), advancing ``head`` past the
        others; ``None`` when there is none."""
        ring = self.ring
        if ((self.head - self.floor) & _PSN_MASK) >= _PSN_HALF:    # psn_dist(floor, head) < 0
            self.head = self.floor
        h = self.head
        nxt = self.next_psn
        while h != nxt:
            r = ring[h & RING_MASK]
            if r is not None and not r.lost:
                self.head = h
                return r
            h = (h + 1) & P.PSN_MASK
        self.head = h
        return None


class _RxMsg:
    __slots__ = ("msg_len", "op", "chunk_base", "chunk_bits", "placed", "done", "imm", "recv_seq",
                 "stream", "msg", "req", "aborted")

    def __init__(self, msg_len, op, stream, msg):
        self.msg_len, self.op, self.stream, self.msg = msg_len, op, stream, msg
        # MR-EXO-002, MR-ENG-026: chunks below chunk_base are placed; bit i of chunk_bits is
        # chunk chunk_base + i (CHUNK_WINDOW bits).
        self.chunk_base = 0
        self.chunk_bits = 0
        self.placed = 0
        self.done = False
        self.imm = None
        self.recv_seq = None
        self.req = None             # READ/atomic: (va, rkey, dma_len, operands) (MR-VERB-002)
        self.aborted = False        # MR-ERR-021: ended by its sender's abort packet


class _RxStream:
    __slots__ = ("next_deliver", "recvs", "recv_next", "aborted", "flush_to")

    def __init__(self):
        self.next_deliver = 0
        self.recvs = {}             # recv_seq -> (lkey, loffset, length, wr_id); <= sq_depth
        self.recv_next = 0
        # MR-ERR-022: bit i set: message next_deliver - 1 - i was delivered aborted (max_rx_msgs
        # bits); receives with a sequence below flush_to belong to aborted sends.
        self.aborted = 0
        self.flush_to = 0


class Connection:
    """One MetaRoCE connection: many paths below, many ordered streams above (MR-CONN-001).

    Created by :meth:`Endpoint.connect`. The post methods queue work; packets leave through
    :meth:`Endpoint.next_packet`.
    """
    # Slots: a class whose instances hold more than 30 attributes gets a dict per instance, and
    # CPython 3.11 then cannot specialise a method lookup across instances (every ``self._x()``
    # of the per-packet paths went through the generic lookup). ``__dict__`` keeps any other
    # attribute possible (tests, probes).
    __slots__ = ("ack_loss", "announce_due", "answered", "blind_bytes", "blind_t0", "cut_debt",
                 "cut_end", "cut_left", "cwnd_sum", "ep", "free_slots", "head_twin", "held",
                 "in_ready", "inflight", "init_psn", "init_rd_atomic", "last_ece", "last_progress",
                 "last_tx", "last_wl", "local_id", "msg_next", "n_streams", "pace_until", "path_floor",
                 "paths", "peer_addr", "peer_id", "peer_init_psn", "pkey", "prog_armed", "pulled",
                 "ramp", "rate_bps", "rd_cap", "rd_out", "rd_slots", "receipt_key", "retx", "rr",
                 "rsp", "rsp_used", "rto_initial_ns", "rtt_last", "rx", "rx_hint", "rx_hint_age",
                 "rx_hint_path", "rx_hint_psn", "rx_hint_sport", "rx_iv_bytes", "rx_iv_epoch",
                 "rx_iv_prev", "rx_more", "rx_open", "s_active", "s_slots", "send_seq", "spread",
                 "spread_probe", "ss", "ssq", "stx", "t_answer", "tx_hdrs", "tx_msgs", "unsent",
                 "window", "xneed", "xok_need", "__dict__", "__weakref__")

    def __init__(self, ep, local_id, peer_addr, peer_id, paths, streams, pkey=0xFFFF,
                 init_psn=None, peer_init_psn=None, receipt_key=None, peer_offer=None):
        # MR-ENG-011: the engine's limits, checked by the slow path before any state exists.
        if not 1 <= paths <= ep.max_paths:
            raise ValueError(f"paths must be 1..{ep.max_paths}, got {paths}")
        if not 1 <= streams <= ep.max_streams:
            raise ValueError(f"streams must be 1..{ep.max_streams}, got {streams}")
        self.ep = ep
        self.local_id, self.peer_addr, self.peer_id = local_id, peer_addr, peer_id
        self.pkey = pkey
        self.receipt_key = receipt_key      # MR-SEC-153: None: no proof of receipt
        # MR-CONN-107: the paths send from the local initial PSN and expect the peer's.
        self.init_psn = ep.initial_psn if init_psn is None else init_psn
        self.peer_init_psn = ep.initial_psn if peer_init_psn is None else peer_init_psn
        self.n_streams = streams
        # MR-VERB-014/015: the requester's bounds agreed at the open from the peer's offer
        lim = P.open_limits(ep.max_tx_msgs, ep.max_init_rd_atomic, peer_offer)
        self.tx_msgs, self.init_rd_atomic = lim
        # MR-VERB-006 and MR-VERB-014 in one: READ/atomic requests holding slots stay below this
        self.rd_cap = lim.max_tx_msgs - 1 if lim.max_init_rd_atomic is None else min(
            lim.max_tx_msgs - 1, lim.max_init_rd_atomic)
        # MR-CC-011: a path's window may fall to MTU / paths, so that the connection's windows
        # together fall to one MTU, the floor of a single-path connection.
        self.path_floor = P.path_window_floor(ep.mtu, paths)
        cw = P.initial_path_window(self.path_floor, ep.bdp, ep.init_window_bdp, paths)
        self.paths = [_Path(self, i, P.entropy_for(local_id * 4099 + i * 131 + ep.seed * 7919), cw,
                            ep._probe_interval_ns) for i in range(paths)]
        # MR-CONN-004: each connection starts its rotation at its own path, so that an endpoint
        # serving connections round-robin spreads their first packets over paths and planes.
        self.rr = local_id % paths
        self.retx = deque()         # (msg, chunk) to resend (MR-REL-003); one per lost record
        self.ssq = [deque() for _ in range(streams)]   # per stream, posted, not completed (MR-EXO-004)
        # MR-ERR-020: per stream, completed messages whose slot waits for an earlier abort
        self.held = [deque() for _ in range(streams)]
        # per stream, chunks not yet sent once; queue ``streams`` holds READ/atomic responses
        # (MR-VERB-003), served as one more stream of the round robin
        self.stx = [deque() for _ in range(streams + 1)]
        self.s_active = deque()     # MR-ENG-030: streams with unsent chunks, round-robin order
        self.s_slots = [0] * (streams + 1)             # tx_msg slots each queue holds
        self.rd_out = {}            # requester: (stream, msg) -> started READ/atomic (MR-VERB-002)
        self.rsp = {}               # responder: (stream, msg) -> response message (MR-VERB-005)
        self.rsp_used = 0           # responder resources taken (accepted requests), MR-VERB-005
        self.rd_slots = 0           # message slots held by READ/atomic requests (MR-VERB-006)
        self.free_slots = list(range(self.tx_msgs - 1, -1, -1))   # MR-ENG-013
        self.rx_open = {}           # (stream, msg) -> _RxMsg; at most max_rx_msgs (MR-ENG-015)
        self.msg_next = [0] * streams
        self.send_seq = [0] * streams
        self.rx = [_RxStream() for _ in range(streams)]
        self.inflight = 0
        self.unsent = 0             # chunks posted and not yet sent once
        self.window = ep.bdp * ep.max_window_bdp      # per-connection window (MR-CC-001)
        # MR-CC-008: until the receiver has answered, a new connection sends a small first window
        # and grows it by slow start while the receiver reports no other sender.
        self.ss = ep.first_window > 0
        self.ramp = ep.first_window * ep.mtu
        if self.ss:
            self.window = min(self.window, self.ramp)
        self.rate_bps = ep.line_rate_bps
        # MR-CC-016: what was sent before the receiver's first answer (wire bytes + overhead)
        # and when its first frame left; the first answer's hint is charged for it.
        self.blind_t0 = _NEVER
        self.blind_bytes = 0
        self.answered = False
        self.t_answer = _NEVER      # MR-CC-027: when the receiver's first answer arrived
        self.pulled = 0             # MR-CC-027: pulled first-window resends, sent outside pacing
        self.announce_due = ep.announce     # MR-CC-021: announce before the first data packet
        self.spread = False         # MR-CC-023: announced, no data acknowledged yet
        self.spread_probe = ep.announce     # MR-CC-024: probes count against the pacing
        self.cwnd_sum = sum(p.cwnd for p in self.paths)     # MR-CC-011: active paths' windows
        self.cut_debt = 0           # MR-CC-013: bytes of cuts still to take from increases
        self.ack_loss = 0           # MR-REL-011: lost-ACK fraction of all paths, Q16
        self.xneed = (0, P.overdue_groups(0))       # (ack_loss, its overdue_groups), for _xpath
        self.xok_need = None        # the ``need`` of the paths' ``xok``
        self.rtt_last = 0           # MR-CC-015: the latest RTT sample (ns) of any path
        self.head_twin = None       # MR-REL-012: first copy of a doubled head-of-window resend
        # MR-CC-014: the timer before any RTT sample, spread over [1, 2) x rto_initial by the
        # connection, so that the senders of an incast whose first windows were dropped do not
        # all resend at once
        self.rto_initial_ns = P.initial_rto_ns(ep._rto_initial_ns, local_id, ep.seed)
        self.cut_end = 0            # MR-CC-013: end of the connection's cut epoch (one RTT) ...
        self.cut_left = 0           # ... and the bytes it may still cut in it
        self.last_ece = _NEVER      # MR-ENG-050: times in integer ns
        self.pace_until = 0
        self.last_tx = _NEVER       # send time and wire length of the last data frame (MR-CC-006)
        self.last_wl = 0
        self.in_ready = False
        self.last_progress = None   # MR-ENG-040: last ACK progress while work is outstanding
        self.prog_armed = False
        # receiver: the last ACK sent on this connection (MR-CC-009 hint updates)
        self.rx_hint = None
        self.rx_hint_age = 0        # MR-CC-017: share intervals ended since its first non-zero hint
        self.rx_hint_path = None
        self.rx_hint_psn = 0
        self.rx_hint_sport = 0
        # receiver: wire bytes that arrived in the current and the previous share interval
        # (MR-CC-012), and the interval number they belong to
        self.rx_iv_bytes = 0
        self.rx_iv_prev = 0
        self.rx_iv_epoch = -2
        self.rx_more = False        # MR-CC-026: its latest data packet left more of its message due
        self.tx_hdrs = None         # (Eth, IP) of its data frames, shared by them

    # -- verbs ---------------------------------------------------------------------------------

    def _stream(self, stream):
        if not 0 <= stream < self.n_streams:
            raise ValueError(f"stream {stream} out of range 0..{self.n_streams - 1}")

    def _post(self, stream, op, lkey, loffset, length, wr_id, va=0, rkey=0, imm=None, send=False):
        self._stream(stream)
        buf, _ = self.ep._local_mr(lkey, loffset, length)
        if length >= 1 << 32:
            raise ValueError("message longer than 2^32 - 1 bytes")
        if len(self.ssq[stream]) >= self.ep.sq_depth:
            # MR-ENG-014: the send queue is a bounded ring (verbs ENOMEM).
            raise ValueError(f"send queue of stream {stream} full ({self.ep.sq_depth} work requests)")
        rs = None
        if send:
            rs = self.send_seq[stream]
            self.send_seq[stream] = (rs + 1) & 0xFFFFFFFF
        m = _SMsg(stream, self.msg_next[stream], op, wr_id,
                  memoryview(buf)[loffset:loffset + length], length, va, rkey, rs, imm, self.ep.mtu)
        self.msg_next[stream] = (self.msg_next[stream] + 1) & 0xFFFFFFFF
        self.unsent += m.nchunks
        self.ssq[stream].append(m)
        if not self.stx[stream]:
            self.s_active.append(stream)
        self.stx[stream].append(m)
        self.ep._make_ready(self)
        return m

    def post_write(self, stream, lkey, loffset, length, remote_va, rkey, wr_id, imm=None):
        """RDMA write of ``length`` bytes to the peer's region ``rkey`` at byte ``remote_va``.

        Regions are zero-based (MR-PLC-002): ``remote_va`` is an offset into the peer's
        region. With ``imm`` the peer gets a ``RECV_RDMA_WITH_IMM`` completion (no receive
        consumed). The sender's completion means every byte was placed (MR-EXO-003).
        """
        op = _OP_WRITE if imm is None else _OP_WRITE_IMM
        self._post(stream, op, lkey, loffset, length, wr_id, remote_va, rkey, imm)

    def post_send(self, stream, lkey, loffset, length, wr_id, imm=None):
        """Send ``length`` bytes into the peer's next receive posted on ``stream`` (MR-PLC-004)."""
        op = _OP_SEND if imm is None else _OP_SEND_IMM
        self._post(stream, op, lkey, loffset, length, wr_id, imm=imm, send=True)

    def post_read(self, stream, lkey, loffset, length, remote_va, rkey, wr_id):
        """RDMA READ of ``length`` bytes at byte ``remote_va`` of the peer's region ``rkey``
        into the local buffer (MR-VERB-001..004). Completes ``RDMA_READ`` when every byte is
        placed, or with ``REM_ACCESS_ERR`` / ``REM_INV_REQ_ERR`` when the peer refuses it."""
        self._stream(stream)
        self._rd_check()
        buf, access = self.ep._local_mr(lkey, loffset, length)
        if not access & P.ACCESS_LOCAL_WRITE:
            raise ValueError("READ destination needs ACCESS_LOCAL_WRITE")
        if length >= 1 << 32:
            raise ValueError("message longer than 2^32 - 1 bytes")
        m = self._post(stream, _OP_READ, lkey, loffset, 0, wr_id, remote_va, rkey)
        m.rd_len = length
        m.dst = memoryview(buf)[loffset:loffset + length]
        return m

    def post_atomic(self, stream, kind, lkey, loffset, remote_va, rkey, wr_id, *, add=0,
                    compare=0, swap=0):
        """64-bit atomic on the peer's region ``rkey`` at ``remote_va`` (8-byte aligned):
        ``kind`` is ``"fetch_add"`` (adds ``add``) or ``"cmp_swap"`` (writes ``swap`` when the
        value equals ``compare``). The original value lands in the 8 local bytes at ``loffset``
        (little-endian, as in host memory). Executed exactly once (MR-VERB-010..013)."""
        if kind not in ("fetch_add", "cmp_swap"):
            raise ValueError(f"atomic kind must be 'fetch_add' or 'cmp_swap', got {kind!r}")
        for name, v in (("add", add), ("compare", compare), ("swap", swap)):
            if not 0 <= v <= P.U64_MASK:
                raise ValueError(f"{name} must be a 64-bit unsigned value")
        if self.ep.mtu < 16:
            raise ValueError("atomics need an mtu of at least 16 bytes")
        self._stream(stream)
        self._rd_check()
        buf, access = self.ep._local_mr(lkey, loffset, 8)
        if not access & P.ACCESS_LOCAL_WRITE:
            raise ValueError("atomic result buffer needs ACCESS_LOCAL_WRITE")
        cas = kind == "cmp_swap"
        # MR-WIRE-076: the operands are the payload, network order (swap or add, then compare)
        operands = struct.pack("!QQ", swap, compare) if cas else struct.pack("!Q", add)
        m = self._post(stream, _OP_CMP_SWAP if cas else _OP_FETCH_ADD, lkey, loffset, 0, wr_id,
                       remote_va, rkey)
        self.unsent -= m.nchunks
        m.mv, m.length = memoryview(operands), len(operands)
        m.nchunks = 1
        self.unsent += 1
        m.rd_len = 8
        m.dst = memoryview(buf)[loffset:loffset + 8]
        return m

    def _rd_check(self):
        if self.tx_msgs < 2:
            raise ValueError("READ and atomics need max_tx_msgs >= 2 (MR-VERB-006)")

    def post_recv(self, stream, lkey, loffset, length, wr_id):
        """Post a receive buffer; the ``k``-th receive on a stream matches its ``k``-th send."""
        self._stream(stream)
        self.ep._local_mr(lkey, loffset, length)
        st = self.rx[stream]
        if len(st.recvs) >= self.ep.sq_depth:
            raise ValueError(f"receive queue of stream {stream} full ({self.ep.sq_depth} receives)")  # MR-ENG-014
        if P.seq_lt32(st.recv_next, st.flush_to):
            # MR-ERR-022: its send was aborted before this receive was posted
            self._rx_complete(Completion(wr_id, Status.REM_ABORT_ERR, WcOpcode.RECV, 0, self.local_id,
                                         stream, None))
        else:
            st.recvs[st.recv_next] = (lkey, loffset, length, wr_id)
        st.recv_next = (st.recv_next + 1) & 0xFFFFFFFF

    # -- sender internals ------------------------------------------------------------------------

    def _slot_wanted(self, s):
        """Another stream with unsent work holds no message slot (MR-ENG-030)."""
        return any(t != s and not self.s_slots[t] for t in self.s_active)

    def _next_frame(self, now):
        if self.pace_until > now and not self.pulled:
            return _PACED
        ep = self.ep
        # The work: MR-REL-003: resends first; then MR-ENG-030: the streams with unsent chunks
        # in round robin, one packet per turn (``k``: the stream's position in ``s_active``).
        retx = self.retx
        while retx:
            m, i = retx[0]
            if m.is_acked(i) or (m.done and i != ABORT):
                retx.popleft()
                continue
            is_retx, k = True, -1
            break
        else:
            act = self.s_active
            k = 0
            while k < len(act):
                s = act[k]
                q = self.stx[s]
                m = q[0]
                if m.done:              # failed while being sent (MR-ERR-003)
                    q.popleft()
                    self.unsent -= m.nchunks - m.next_chunk
                    if not q:
                        del act[k]
                    continue
                k += 1
                if m.slot is None and (not self.free_slots or (
                        self.s_slots[s] and len(self.free_slots) < 2 and self._slot_wanted(s))):
                    # MR-ENG-013/030: no slot; a stream that holds one leaves the last one to a
                    # stream that holds none.
                    continue
                if m.next_chunk >= m.ack_base + ep.chunk_window:
                    continue            # MR-ENG-012: the message's chunk window is full
                if m.rd and m.slot is None and self.rd_slots >= self.rd_cap:
                    # MR-VERB-006: one slot stays for work that needs no peer slot; MR-VERB-014:
                    # the initiator depth (the request waits, unsent and not failed)
                    continue
                break
            else:
                return _IDLE
            i, is_retx, k = m.next_chunk, False, k - 1
        if self.announce_due:
            return self._announce_frame()
        unpaced = False
        if self.pulled:
            # MR-CC-027: the pulled first-window resends (at the front of the resends) go at
            # once and take no pacing turn; anything else waits for its turn
            if is_retx:
                unpaced = True
            else:
                self.pulled = 0
                if self.pace_until > now:
                    return _PACED
        off = i * ep.mtu if i != ABORT else 0
        nbytes = (ep.mtu if ep.mtu <= m.length - off else m.length - off) if i != ABORT else 0  # MR-WIRE-083: none
        if self.inflight and (self.inflight + nbytes > self.window or self.inflight + nbytes > (
                self.cwnd_sum if self.rate_bps >= ep.line_rate_bps else max(self.cwnd_sum, 2 * ep.mtu))):
            # MR-CC-001, MR-CC-011: the connection's windows; while hinted, at least the two
            # MTUs of MR-CC-007 (a share below a packet per RTT still has two in flight)
            return _BLOCKED
        if ep._rtx_used >= ep.max_outstanding:
            # MR-ENG-013: no outstanding-packet record free; an ACK on any connection frees one.
            ep.stats["rtx_pool_full"] += 1
            ep._pool_waiters[self.local_id] = self
            return _BLOCKED
        # The path, round robin from ``rr``. A path has room in its ring when psn_dist(floor,
        # next_psn) < SEND_WINDOW, written on the unsigned distance: not SEND_WINDOW <=
        # (next_psn - floor) mod 2^24 < 2^23.
        paths = self.paths
        npaths = len(paths)
        rr = self.rr
        p = None
        if npaths > 1 and self.inflight and self.rate_bps < ep.line_rate_bps:
            # MR-CC-011: a paced connection sprays in proportion to its windows: first skip the
            # paths that carry more than one packet beyond their window's share of the bytes
            # in flight, so a connection paced below its windows still moves its traffic off
            # the paths ECN has cut (with equal windows this is the plain round robin; without
            # pacing the windows themselves bind).
            total, inflight = self.cwnd_sum, self.inflight
            for j in range(npaths):
                q = paths[(rr + j) % npaths]
                if (q.state == _ACTIVE and q.inflight < q.cwnd
                        and (q.inflight - nbytes) * total <= q.cwnd * inflight
                        and not _SEND_WINDOW <= ((q.next_psn - q.floor) & _PSN_MASK) < _PSN_HALF):
                    self.rr = (rr + j + 1) % npaths
                    p = q
                    break
        if p is None:
            for j in range(npaths):
                q = paths[(rr + j) % npaths]
                qs = q.state
                if qs == _ACTIVE:
                    # MR-CC-011: a path with any room takes a packet; the connection's coupled
                    # window (the sum of the path windows) bounds the total (above).
                    if (q.inflight < q.cwnd
                            and not _SEND_WINDOW <= ((q.next_psn - q.floor) & _PSN_MASK) < _PSN_HALF):
                        self.rr = (rr + j + 1) % npaths
                        p = q
                        break
                elif qs == _PROBING and not is_retx:
                    # MR-PATH-005: one probe packet at a time on a path being tested; never a
                    # resend (MR-REL-003), which would risk a chunk twice on a failed route.
                    if q.live == 0 and not _SEND_WINDOW <= ((q.next_psn - q.floor) & _PSN_MASK) < _PSN_HALF:
                        self.rr = (rr + j + 1) % npaths
                        p = q
                        break
            else:
                return _BLOCKED
        twin = None
        if is_retx:
            self.retx.popleft()
            ep.stats["aborts_sent" if i == ABORT else "retransmitted"] += 1
            if ep.resend_twice and i != ABORT and not m.rd and not m.rnr:
                # MR-REL-012: not a message the receiver answered RNR (MR-ENG-041): its
                # resends wait for a receive, not for a loss, and each copy draws an RNR NAK
                twin = self._resend_twice(m, i, now)
        else:
            if m.slot is None:
                m.slot = self.free_slots.pop()
                self.s_slots[m.q] += 1
                if m.rd:
                    self.rd_out[(m.stream, m.msg)] = m      # MR-VERB-002
                    self.rd_slots += 1
            m.next_chunk += 1
            self.unsent -= 1
            act = self.s_active
            s = act[k]
            del act[k]
            if m.next_chunk >= m.nchunks:
                self.stx[s].popleft()
            if self.stx[s]:
                act.append(s)       # MR-ENG-030: to the back of the round robin
        if self.last_progress is None:
            self.last_progress = now        # MR-ENG-040: work outstanding from now
            if not self.prog_armed:
                self.prog_armed = True
                ep._push(now + ep._wr_timeout_ns, 5, self, 0)
        psn = p.next_psn
        p.next_psn = (psn + 1) & P.PSN_MASK
        rec = _Rec()                # every field set below (_Rec has no __init__)
        rec.msg = m
        rec.idx = i
        rec.t = now
        rec.nbytes = nbytes
        rec.lost = rec.probe = rec.req = rec.free = False
        rec.twin = None
        if twin is not None:
            if twin is True:
                self.head_twin = (rec, p)   # the first copy; the second follows (MR-REL-012)
            else:
                rec.twin, twin[0].twin = twin, (rec, p)
        p.ring[psn & RING_MASK] = rec
        ep._rtx_used += 1
        p.live += 1
        p.inflight += nbytes
        self.inflight += nbytes
        p.since_req += 1
        # MR-SEQ-009: ask for an ACK every ack_every packets of a path, when the path's window
        # is full, during the first window and slow start (MR-CC-008: the hint comes back
        # soonest), on a probing path, and on a path's last packet of a burst (fewer chunks left
        # than paths, so the round robin will not come back to this path).
        ack_req = (i == ABORT or p.since_req >= ep.ack_every or p.inflight + ep.mtu > p.cwnd
                   or self.ss or p.state == _PROBING
                   or self.unsent + len(self.retx) < len(self.paths))
        if ack_req:
            p.since_req = 0
            rec.req = True
        xc = p.xcache
        if xc is not None and xc[1] is None:
            # MR-REL-009: a record after the last changes _xdue's answer only when it found none
            # (its scan stops at a record before this one), so a found answer stays cached
            p.xcache = None
            p.xok = _XOK_STALE
        f = self._frame(m, i, off, nbytes, p, psn, is_retx, ack_req)
        if p.deadline is None:
            ep._arm(p, now + self._rto(p))
        self.last_tx = now
        k = _WL_HDR.get(f.bth.opcode)
        if k is None:
            k = _WL_HDR[f.bth.opcode] = wire_len(f) - nbytes - (-nbytes) % 4
        self.last_wl = wl = k + nbytes + (-nbytes) % 4      # = wire_len(f) (IPv4, untagged)
        if not self.answered:
            if self.blind_t0 == _NEVER:
                self.blind_t0 = now
            self.blind_bytes += wl + P.WIRE_OVERHEAD
        if unpaced:
            # MR-CC-027: sent at the receiver's pull, it takes the place of the next paced frame:
            # the connection's pacing runs from it (the pulls are spread over one gap)
            self.pulled -= 1
            self.pace_until = now + self._gap(wl)
        elif self.rate_bps < ep.line_rate_bps:
            self.pace_until = max(self.pace_until, now) + self._gap(wl)
        st = ep.stats
        st["packets_sent"] += 1
        st["data_packets_sent"] += 1
        return f

    def _announce_frame(self):
        """MR-CC-021, MR-WIRE-084: the connection is about to send its first data packet: a
        BTH-only announcement goes first, on the path that packet takes (its PSN field names the
        path), and nothing waits for an answer: the data frames are those of a connection that
        does not announce."""
        self.announce_due = False
        self.spread = True
        ep = self.ep
        p = self.paths[self.rr]
        ep.stats["packets_sent"] += 1
        ep.stats["announcements_sent"] += 1
        return Frame(eth=Eth(), ip=IP(src=ep.addr, dst=self.peer_addr, ecn=0), udp=UDP(sport=p.entropy),
                     bth=BTH(opcode=_OP_ANNOUNCE, pkey=self.pkey, dest_qp=self.peer_id, ack_req=1,
                             psn=p.idx))

    def _first_lost(self, p):
        """MR-CC-027: the receiver pulled this path's first window (its port fell quiet with
        nothing of it arrived): its packets sent before the first answer that are neither
        acknowledged nor already resent are declared lost and resent first, at once, outside
        the pacing (the blind release of MR-CC-016 priced them)."""
        ta = self.t_answer
        retx = self.retx
        got = []
        for rec in list(p.records()):
            m, i = rec.msg, rec.idx
            if rec.t >= ta or i == ABORT or m.done or m.is_acked(i):
                continue
            if not rec.lost:
                self._mark_lost(p, rec, requeue=False)
            elif (m, i) in retx:
                retx.remove((m, i))     # declared lost by its timer, still waiting for its turn
            else:
                continue
            got.append((m, i))
        if not got:
            return
        for w in reversed(got):
            retx.appendleft(w)
        if self.last_tx < self.t_answer:
            # nothing paced sent yet: the resends go now; once a paced frame has gone, they
            # take their turns (MR-CC-024), or the sender would exceed its share
            self.pulled += len(got)
        self.ep.stats["first_window_resends"] += len(got)
        self._rearm(p)
        self.ep._make_ready(self)

    def _resend_twice(self, m, i, now):
        """MR-REL-012: a resend whose loss would idle the connection goes out twice: the
        message's lowest unacknowledged chunk while the chunk window (MR-ENG-012) has less room
        than two rounds of the connection's window, or any chunk once the connection has nothing
        new to send; not while ECN was echoed in the last 4 RTTs (the loss is congestion).
        Returns ``True`` for the first copy (the second is queued at the front of the resends),
        the first copy's record for the second, ``None`` otherwise."""
        hw = self.head_twin
        if hw is not None and hw[0].msg is m and hw[0].idx == i:
            self.head_twin = None
            return None if hw[0].lost else hw
        ep = self.ep
        if now - self.last_ece < 4 * ep._base_rtt_ns:
            return None
        if self.unsent:
            if i != m.ack_base or m.next_chunk >= m.nchunks or not P.head_resend_twice(
                    (m.ack_base + ep.chunk_window - m.next_chunk) * ep.mtu,
                    min(self.window, self.cwnd_sum)):
                return None
        self.retx.appendleft((m, i))
        ep.stats["resends_doubled"] += 1
        return True

    def _frame(self, m, i, off, nbytes, p, psn, is_retx, ack_req):
        ep = self.ep
        if i == ABORT:
            # MR-WIRE-083: the message's headers, flag ERROR, offset 0, no payload
            return Frame(
                eth=Eth(), ip=IP(src=ep.addr, dst=self.peer_addr, ecn=2), udp=UDP(sport=p.entropy),
                bth=BTH(opcode=m.op, pkey=self.pkey, dest_qp=self.peer_id, ack_req=1, psn=psn),
                mrdh=MRDH(1, _MRDH_ERROR | _MRDH_FIRST | _MRDH_LAST, p.idx, m.stream, m.msg,
                          0, m.length),
                reth=RETH(m.va, m.rkey, m.rd_len) if m.op in _RETH_OPS else None,
                mrsh=MRSH(m.recv_seq) if m.recv_seq is not None else None,
                imm=m.imm, payload=b"")
        flags = 0
        if off + nbytes >= m.length:
            flags |= _MRDH_LAST
        if off == 0:
            flags |= _MRDH_FIRST
        if is_retx:
            flags |= _MRDH_RETX
        op = m.op
        if m.err:
            flags |= _MRDH_ERROR
        hdrs = self.tx_hdrs
        if hdrs is None or hdrs[1].src != ep.addr:
            hdrs = self.tx_hdrs = (Eth(), IP(src=ep.addr, dst=self.peer_addr, ecn=2))
        u = p.udp_hdr
        if u is None or u.sport != p.entropy:
            u = p.udp_hdr = UDP(sport=p.entropy)
        reth = m.reth_hdr
        if reth is None and op in _RETH_OPS:
            reth = m.reth_hdr = RETH(m.va, m.rkey, m.rd_len)
        return _data_frame(hdrs[0], hdrs[1], u, op, self.pkey, self.peer_id, 1 if ack_req else 0, psn,
                           flags, p.idx, m.stream, m.msg, off, m.length, reth,
                           MRSH(m.recv_seq) if m.recv_seq is not None else None, m.imm,
                           m.mv[off:off + nbytes].tobytes())     # = bytes(...), without the type's call

    def _rearm(self, p):
        """MR-REL-006: the timer runs from the send time of the path's oldest live packet;
        MR-REL-009: earlier when a later packet was acknowledged on another path."""
        head = p.oldest_live()
        if head is not None:
            dl = head.t + self._rto(p)
            if p.tail_probed:
                dl = max(dl, p.probe_dl)    # MR-REL-010: the tail probe's ACK gets one RTO
            t = self._xdue(p, None, True)
            if t is not None and t < p.xwit:
                dl = min(dl, t + p.xslack)
            self.ep._arm(p, dl)
        else:
            self.ep._disarm(p)

    def _rto(self, p):
        """MR-REL-006, MR-ENG-052: the path's timer in integer ns."""
        ep = self.ep
        return P.rto_value_ns(p.srtt, p.rttvar, min_rtts_q=ep._min_rtts_q, rto_min=ep._rto_min_ns,
                              rto_max=ep._rto_max_ns, initial=self.rto_initial_ns) * p.backoff

    def _release(self, mbps):
        """MR-CC-016: the blind release at ``mbps``; MR-CC-035 (``count_wait``, an announcing
        connection paced below the line rate): not within one base RTT of its first frame."""
        ep = self.ep
        if ep.count_wait and ep.announce and mbps * 1e6 < ep.line_rate_bps:
            return P.counted_release_ns(self.blind_t0, self.blind_bytes, mbps, ep._base_rtt_ns)
        return P.blind_release_ns(self.blind_t0, self.blind_bytes, mbps)

    def _gap(self, wire_bytes):
        """MR-CC-006, MR-ENG-053: the pacing gap after a frame, in integer ns of the hinted Mb/s;
        MR-CC-015, MR-CC-020: longer while the latest RTT sample exceeds 1.5 base RTTs."""
        mbps = max(1, int(self.rate_bps // 1e6))
        gap = P.pacing_gap_ns(wire_bytes, mbps)
        if self.rate_bps < self.ep.line_rate_bps:
            gap = P.queue_paced_gap_ns(gap, self.ep._base_rtt_ns, self.rtt_last)
        return gap

    def _srtt_ns(self, p):
        """The path's smoothed RTT in ns, the base RTT before any sample."""
        return self.ep._base_rtt_ns if p.srtt is None else p.srtt

    def _chunk_acked(self, m, i):
        # Kept a method (with _on_ack and _mark_lost): models/retransmit_cases.py wraps all three
        # to record the endpoint's decisions; written inline, those checks would see nothing.
        if i == ABORT:
            self._abort_done(m)
            return
        if m.rd:
            # MR-VERB-001: the request arrived; the READ/atomic completes with its response
            if m.req_acked:
                self.ep.stats["spurious_retransmits"] += 1
            m.req_acked = True
            return
        base = m.ack_base
        if i < base or (m.ack_bits >> (i - base)) & 1:      # m.is_acked(i) of a data chunk
            self.ep.stats["spurious_retransmits"] += 1   # MR-EXO-002: never double-counted
            return
        b = m.ack_bits | (1 << (i - base))
        t = (~b & (b + 1)).bit_length() - 1     # P.trailing_ones(b), inlined (every chunk)
        m.ack_base += t
        m.ack_bits = b >> t
        m.nacked += 1
        if m.nacked == m.nchunks and not m.done:
            m.done = True
            if m.q != m.stream:
                self._rsp_done(m)
            else:
                self._deliver_send(m.stream)

    def _fail(self, m, status, abort=True):
        if not m.done:
            m.done = True
            m.status = status
            if m.q != m.stream:
                self._rsp_done(m)
            else:
                if m.next_chunk and abort:
                    # MR-ERR-020: the peer may hold part of it: tell it the message is abandoned;
                    # the message keeps its slot until the abort is acknowledged.
                    m.abort = _ABORT_PENDING
                    self.retx.append((m, ABORT))
                    self.ep._make_ready(self)
                self._deliver_send(m.stream)

    def _abort_done(self, m, refused=False):
        """MR-ERR-020: the abort packet of ``m`` is acknowledged (or refused): its slot and those
        of later completed messages of its stream that waited for it are free."""
        if m.abort != _ABORT_PENDING:
            return
        m.abort = _ABORT_DONE
        self.ep.stats["aborts_refused" if refused else "aborts_acked"] += 1
        h = self.held[m.stream]
        while h and h[0].abort != _ABORT_PENDING:
            self._free_slot(h.popleft())

    def _free_slot(self, m):
        """MR-ENG-013: the message's slot is free (its completion is delivered and it has no
        abort pending)."""
        if m.slot is None:
            return
        if m.rd:
            self.rd_slots -= 1
        self.free_slots.append(m.slot)
        self.s_slots[m.q] -= 1
        m.slot = None
        if self.s_active:
            self.ep._make_ready(self)

    def _rsp_done(self, r):
        """MR-VERB-005: a response is acknowledged in full (or failed): its responder resource
        and message slot are free again."""
        del self.rsp[(r.stream, r.msg)]
        self.rsp_used -= 1
        r.mv = None
        if not self.rsp and not any(self.ssq):
            self.last_progress = None
        if r.slot is not None:
            self.free_slots.append(r.slot)
            self.s_slots[r.q] -= 1
            r.slot = None
        if self.s_active:
            self.ep._make_ready(self)

    def _deliver_send(self, stream):
        """MR-EXO-004: sender completions on a stream in posting order."""
        q = self.ssq[stream]
        ep = self.ep
        while q and q[0].done:
            m = q.popleft()
            ep._cq.append(Completion(m.wr_id, m.status, _WC_OP[m.op], m.rd_len, self.local_id,
                                     m.stream, None))
            ep.stats["completions"] += 1
            m.mv = None
            if m.rd:
                self.rd_out.pop((m.stream, m.msg), None)
                m.dst = None
            if not any(self.ssq) and not self.rsp:
                self.last_progress = None   # MR-ENG-040: nothing outstanding
            h = self.held[m.stream]
            if m.abort == _ABORT_PENDING or h:
                # MR-ERR-020: slots free in stream order, after every earlier abort is acknowledged
                # (until then the receiver may hold this message open, MR-ENG-015)
                h.append(m)
            else:
                self._free_slot(m)      # MR-ENG-013: the slot is free once completed

    def _mark_lost(self, p, rec, requeue=True):
        if not rec.lost:
            rec.lost = True
            p.xcache = None
            p.xok = _XOK_STALE
            p.live -= 1
            p.inflight -= rec.nbytes
            if not rec.free:
                self.inflight -= rec.nbytes
            m = rec.msg
            tw = rec.twin
            if tw is not None and not tw[0].lost:
                return      # MR-REL-012: the chunk's other copy is still in flight
            if requeue and not m.is_acked(rec.idx) and (not m.done or rec.idx == ABORT):
                self.retx.append((m, rec.idx))

    # -- sender: ACK and NAK ---------------------------------------------------------------------

    def _on_ack(self, a, now, bth_psn=0):
        ep = self.ep
        st = ep.stats
        if a.path >= len(self.paths):
            ep._drop("bad_ack")
            return
        p = self.paths[a.path]
        floor = p.floor
        n, acked = P.sack_resolve(floor, p.next_psn, a.cum_psn, a.sack)
        if n < 0:
            ep._drop("bad_ack")         # MR-SEC-151: covers a PSN not yet sent
            return
        if self.receipt_key is None:
            trigger = a.trigger_psn & 0xFFFFFF      # join_proof(...)[1]; no proof to check
        else:
            proof, trigger = join_proof(bth_psn, a.trigger_psn)
        if n and self.receipt_key is not None:
            # MR-SEC-154: an ACK that acknowledges anything names one of the PSNs it newly
            # acknowledges as its trigger and proves, with the receipt key, that it arrived.
            d = P.psn_dist(floor, trigger)
            if not (0 <= d < n and (acked >> d) & 1) or proof != receipt_proof(
                    self.receipt_key, PROOF_ACK, self.local_id, a.path, trigger, a):
                ep._drop("bad_proof")
                return
        st["acks_received"] += 1
        if n == 0:
            # MR-SEC-151: an ACK that resolves nothing carries no new ECE or RTT sample. Only a
            # repeat of the newest ACK (highest covered PSN = floor - 1) may bring a new rate
            # hint: that is how the receiver pushes hint updates (MR-CC-009). An older one is
            # stale or replayed and changes no state.
            dc = P.psn_dist(floor, a.cum_psn)
            if (dc + (a.sack & P.SACK_MASK).bit_length() + 1 if a.sack else dc) != 0:
                st["acks_stale"] += 1
                return
        ring = p.ring
        rec = p.rec(trigger) if n else None
        wit = None          # the witness for MR-REL-009: the send time of the packet timed here
        if rec is not None and not rec.probe:
            sample = now - rec.t
            if p.min_rtt is None or sample < p.min_rtt:
                p.min_rtt = sample
            if not rec.free:
                # MR-CC-016: a packet of the first window measured the queue the first windows
                # built, which the blind release already pays for: no MR-CC-015 slow-down
                if (self.last_tx >= 0 and self.pace_until > now
                        and self.rate_bps < ep.line_rate_bps):
                    # MR-CC-029: the wait after the last frame follows the latest sample (a
                    # stale sample would stretch a second gap by the queue it measured)
                    end = self.last_tx + self._gap(self.last_wl)
                    self.rtt_last = sample
                    if self.pace_until == end:
                        self.pace_until = self.last_tx + self._gap(self.last_wl)
                else:
                    self.rtt_last = sample
            p.srtt, p.rttvar = P.rtt_update_ns(p.srtt, p.rttvar, sample)   # MR-REL-005, MR-ENG-052
            p.backoff = 1
            wit = rec.t
            wit_q = sample - p.min_rtt      # the queueing delay it saw
        pkts = nbytes = 0
        d_trig = (trigger - floor) & _PSN_MASK     # = psn_dist(floor, trigger) wherever j below can equal it
        reqs_seen = reqs_lost = 0
        for j in range(n):
            ix = (floor + j) & RING_MASK
            rec = ring[ix]
            if rec is None:
                continue
            ring[ix] = None
            ep._rtx_used -= 1           # ep._rtx_free(), inlined
            if ep._pool_waiters:
                ep._wake_pool()
            if (acked >> j) & 1:
                if rec.req and not rec.probe:
                    # MR-REL-011: an AckReq packet is acknowledged by its own ACK or, when that
                    # one was lost, by a later one
                    if j == d_trig:
                        reqs_seen = 1
                    else:
                        reqs_lost += 1
                if not rec.lost:
                    rec.lost = True      # leave the live count below
                    p.live -= 1
                    p.inflight -= rec.nbytes
                    if not rec.free:
                        self.inflight -= rec.nbytes
                pkts += 1
                nbytes += rec.nbytes
                self._chunk_acked(rec.msg, rec.idx)
                tw = rec.twin
                if tw is not None and not tw[0].lost:
                    # MR-REL-012: the other copy is no longer waited for (nor timed)
                    self._mark_lost(tw[1], tw[0], requeue=False)
                    if tw[1] is not p:
                        self._rearm(tw[1])
            elif not rec.lost:
                st["gap_losses"] += 1      # MR-REL-002: a SACK gap proves the loss
                self._mark_lost(p, rec)
        p.floor = (floor + n) & P.PSN_MASK
        p.xcache = None
        p.xok = _XOK_STALE
        if reqs_lost or (reqs_seen and self.ack_loss):
            # MR-REL-011 (from 0, ACKs that arrive leave the estimate at 0: no call needed)
            self.ack_loss = P.ack_loss_update(self.ack_loss, reqs_seen, reqs_lost)
        # MR-CC-002/003: AIMD on the echoed CE fraction, at most one decrease per RTT.
        # MR-SEC-151: at most one CE mark per packet this ACK newly acknowledges.
        ce = min(a.ce_count, pkts) if a.flags & _MRAH_ECE else 0
        if ce:
            p.last_ece = self.last_ece = now
        # MR-CC-006: obey the receiver's fair-share hint. While a hint paces the connection, its
        # windows need not fall below the hinted rate's BDP (MR-CC-007): pacing already keeps
        # the rate, and a window collapsed by the ECN of a transient queue would idle the link.
        old_rate = self.rate_bps
        answered = self.answered
        # MR-SEC-151; no hint (0) is the line rate: clamp_hint_bps's first case, without the call
        self.rate_bps = P.clamp_hint_bps(a.rate_mbps, ep.line_rate_bps) if a.rate_mbps else ep.line_rate_bps
        if self.rate_bps != old_rate and self.last_tx >= 0:
            # MR-CC-006: a new rate applies from the last frame sent, not from the next one: a
            # lower one delays the next frame, a higher one (MR-CC-010) lets it go sooner.
            gap = self.last_tx + self._gap(self.last_wl)
            self.pace_until = max(self.pace_until, gap) if self.rate_bps < old_rate else \
                min(self.pace_until, gap)
        if not answered:
            self.t_answer = now
        self.answered = True
        if a.flags & _MRAH_FIRST_LOST and self.spread and not pkts:
            self._first_lost(p)         # MR-CC-027: the receiver's pull
        if a.rate_mbps and self.blind_bytes and (self.rate_bps != old_rate or not answered):
            # MR-CC-016: each hint prices what was sent blind, before the receiver's first
            # answer: the first window counts as paced at the hint from its first frame on, so
            # the queue that N first windows built drains before the senders add to it.
            self.pace_until = max(self.pace_until, self._release(max(1, int(self.rate_bps // 1e6))))
        if self.spread:
            if pkts:
                self.spread = False
                if (ep.ack_phase and a.rate_mbps and self.rate_bps < ep.line_rate_bps
                        and self.last_tx < self.t_answer):
                    # MR-CC-028: the bottleneck has served the first window; the next paced
                    # frame keeps that slot, one gap on, instead of the hashed phase
                    mbps = max(1, int(self.rate_bps // 1e6))
                    self.pace_until = max(self._release(mbps),
                        now - ep._base_rtt_ns + P.pacing_gap_ns(self.last_wl, mbps))
            elif a.rate_mbps and self.rate_bps < ep.line_rate_bps and (
                    self.rate_bps != old_rate or not answered) and not (
                    ep.spread_once and self.last_tx >= self.t_answer):
                # MR-CC-023: the answers to the announcements of an incast arrive within
                # nanoseconds of each other; each sender shifts its paced frames by its own
                # fraction of a gap, so that they do not arrive as one burst every gap.
                # MR-CC-034: only its first paced frame; after a frame (a resend, MR-CC-027/033)
                # the hint re-times from that frame (MR-CC-006 above).
                mbps = max(1, int(self.rate_bps // 1e6))
                rel = max(now, self._release(mbps))
                self.pace_until = max(self.pace_until, rel + P.phase_spread_ns(
                    P.pacing_gap_ns(ep.mtu + _DATA_HDR, mbps), self.local_id, ep.seed))
        # MR-CC-007: while hinted, the connection keeps at most 1.5 hinted BDPs in flight, so
        # a queue above half a base RTT slows every sender down (stale or too large hints
        # cannot fill the buffer); otherwise the connection window of MR-CC-001.
        target = (P.hinted_conn_window(self.rate_bps, ep.base_rtt, ep.mtu) if a.rate_mbps
                  else ep.bdp * ep.max_window_bdp)
        if self.ss:
            # MR-CC-008: the first hint or CE mark ends the first window; while the receiver
            # reports no other sender (hint 0) the window grows by SLOW_START_GAIN x the acked
            # bytes (x4 per RTT) up to the initial window, so a sender that was merely the first
            # of an incast to be seen does not answer "no limit" with a whole BDP at line rate.
            if a.rate_mbps or ce:
                self.ss = False
                if not a.rate_mbps:
                    self._ss_exit_windows()
                if a.rate_mbps:
                    # MR-CC-007: the hinted connection window bounds what is sent under the
                    # hint; the first window, sent before it, does not count against it.
                    for q in self.paths:
                        for r in q.records():
                            if not r.lost and not r.free:
                                r.free = True
                                self.inflight -= r.nbytes
            elif pkts:
                self.ramp += P.SLOW_START_GAIN * nbytes
                # MR-CC-008: the initial window is one BDP at the longest path's lowest RTT
                # (at least the base RTT); a path window grows with the ramp, up to its equal
                # share of it, so that the coupled windows (MR-CC-011) do not hold it back.
                rtt = ep._base_rtt_ns
                for q in self.paths:
                    if q.min_rtt is not None and q.min_rtt > rtt:
                        rtt = q.min_rtt
                share = self.ramp // len(self.paths)
                if self.ramp > self.cwnd_sum and p.cwnd < share:
                    p.cwnd = min(ep.cwnd_max, share, p.cwnd + P.SLOW_START_GAIN * nbytes)
                if self.ramp * ep._base_rtt_ns >= ep.bdp * ep.init_window_bdp * rtt:
                    self.ss = False
                    self._ss_exit_windows()
        self.window = min(self.ramp, target) if self.ss else target
        wmin = self.path_floor
        wmax = ep.cwnd_max
        sum_floor = 0
        if a.rate_mbps:
            hw = P.hinted_window(self.rate_bps, ep.base_rtt, len(self.paths))
            # MR-CC-007: while hinted, the paths' windows together are at least the hinted BDP
            # (restored after a cut, _hint_refill) and each within twice its share of it, so a
            # sender that started with a larger window (or a stale, larger hint) does not keep it.
            sum_floor = int(hw * len(self.paths))
            cap = wmax = P.hinted_window_cap(self.rate_bps, ep.base_rtt, len(self.paths), ep.mtu)
            if old_rate < self.rate_bps < ep.line_rate_bps and old_rate < ep.line_rate_bps:
                # MR-CC-010: a higher hint scales the windows with it, so a connection that was
                # held to a guessed, too low share keeps its place within the hinted band.
                up = self.rate_bps / old_rate
                for q in self.paths:
                    q.cwnd = int(q.cwnd * up)
            if self.rate_bps != old_rate:
                # a new hint moves every window into its band (its share of the hinted BDP)
                for q in self.paths:
                    if q.cwnd > cap:
                        q.cwnd = int(cap)
                    elif q.cwnd < hw:
                        q.cwnd = int(hw)
            elif p.cwnd > cap:
                p.cwnd = int(cap)
        elif p.collapsed and pkts and not ce:
            # The receiver is not shared and the path delivers again: back to the initial window.
            # (MR-CW-108: the block's setup write carries this share)
            wmin = P.initial_path_window(wmin, ep.bdp, ep.init_window_bdp, len(self.paths))
        if pkts:
            p.collapsed = False
        if p.cwnd < wmin:
            p.cwnd = int(wmin)
        multi = len(self.paths) > 1
        self._sum_windows()
        if pkts or ce:
            # MR-CC-013: once per path RTT, a window with marks cuts the connection by beta x
            # one MTU per CE-marked packet acknowledged in it (DCTCP's cut, beta x CE fraction x
            # window, counted per mark), from the path's window down to its floor and the rest
            # from the connection's next increases (cut_debt): however few packets a path
            # carries, the connection's paths together cut as one path would.
            # min(x, _ACC_MAX) written out (the builtin's call costs more than the test)
            p.ce_acc = ce_acc if (ce_acc := p.ce_acc + ce) <= _ACC_MAX else _ACC_MAX
            p.ack_acc = ack_acc if (ack_acc := p.ack_acc + pkts) <= _ACC_MAX else _ACC_MAX
            old = p.cwnd
            if now >= p.next_dec and p.ack_acc:
                if p.ce_acc:
                    if now >= self.cut_end:
                        # MR-CC-013: at most beta x the coupled window per connection RTT
                        self.cut_end = now + self._srtt_ns(p)
                        self.cut_left = (ep._beta_q * self.cwnd_sum) >> P.Q
                    p.cwnd, debt = P.coupled_cut_fx(p.cwnd, p.ce_acc, int(wmin), ep.mtu, ep._beta_q,
                                                    self.cut_left)
                    self.cut_left -= old - p.cwnd + debt
                    self.cut_debt = min(self.cwnd_sum, self.cut_debt + debt)
                p.ce_acc = p.ack_acc = 0
                p.next_dec = now + self._srtt_ns(p)
            if p.cwnd == old and not ce:
                # MR-CC-011: coupled increase: the connection's active paths together grow by
                # one MTU per RTT, as a single-path connection does; a cut's debt comes first.
                p.cwnd, _ = P.aimd_fx(p.cwnd, nbytes, 0, False,
                                      mtu=ep.mtu, cwnd_min=int(wmin), cwnd_max=int(wmax),
                                      beta_q=ep._beta_q, cwnd_sum=self.cwnd_sum if multi else None,
                                      sum_max=ep.cwnd_max if multi else None)  # MR-ENG-053
            if self.cut_debt and p.cwnd > wmin:
                # MR-CC-018: a cut's debt is taken from the window of the next path acknowledged,
                # down to its floor (increase included), so that a connection whose cut path was
                # at its floor is still cut within about an RTT, as one path would be.
                p.cwnd, self.cut_debt = P.debt_take(p.cwnd, int(wmin), self.cut_debt)
            if p.state == _ACTIVE:
                self.cwnd_sum += p.cwnd - old
            if self.cwnd_sum < sum_floor:
                self._hint_refill(p, sum_floor, int(wmax), now)
        if pkts:
            p.tail_probed = False
            if self.last_progress is not None:
                self.last_progress = now    # MR-ENG-040
            p.consec_to = 0
            p.xrun = 0
            p.last_ack = now
            if p.state == _PROBING:     # MR-PATH-005: probe answered, path restored
                p.state = _ACTIVE
                p.xok = _XOK_STALE
                p.cwnd = P.initial_path_window(self.path_floor, ep.bdp, ep.init_window_bdp,
                                               len(self.paths))     # MR-CW-109
                self._sum_windows()
                p.probe_interval = ep._probe_interval_ns
                st["paths_restored" if p.retired_before else "paths_cleared"] += 1
                p.retired_before = False
        if n > 0:
            self._rearm(p)
        if wit is not None and len(self.paths) > 1:
            self._xpath(p, wit, wit_q, now)
        if not self.in_ready:
            ep._make_ready(self)

    def _xpath(self, p, t_wit, qdelay, now):
        """MR-REL-009: a packet sent at ``t_wit`` on path ``p`` was just acknowledged. Every other
        path's oldest live packet sent before it is due by its own path's lowest RTT plus the
        queueing delay seen now (or the path's own smoothed queueing, whichever is larger) plus a
        reorder allowance; arm the path's timer for that time (or declare it lost now)."""
        ep = self.ep
        xn = self.xneed
        if xn[0] != self.ack_loss:
            xn = self.xneed = (self.ack_loss, P.overdue_groups(self.ack_loss))     # MR-REL-011
        need = xn[1]
        if need != self.xok_need:
            self.xok_need = need
            for q in self.paths:
                q.xok = _XOK_STALE
        for q in self.paths:
            if q.xok >= t_wit:
                continue        # the test below in one compare
            xc = q.xcache
            if (xc is not None and xc[0] == need and (xc[1] is None or xc[1] >= t_wit)
                    and q.state == _ACTIVE):
                continue        # the common case: an active path whose cached due time is later
            if q is p or not q.live or q.min_rtt is None:
                continue
            st = q.state
            if st == _RETIRED:
                continue
            if xc is not None and xc[0] == (1 if st == _PROBING else need):     # _xdue's cache
                t_due = xc[1]
            else:
                t_due = self._xdue(q, need)
            if t_due is None or t_due >= t_wit:
                continue
            # The allowance covers reordering and RTT variation; the receiver's ACK grouping is
            # covered by timing from the group's AckReq packet (_xdue).
            slack = P.xpath_deadline(0, q.min_rtt, max(qdelay, q.srtt - q.min_rtt),
                                     ep._reorder_allow_ns + 2 * q.rttvar)
            if t_wit > q.xwit:
                q.xwit = t_wit
            q.xslack = slack
            dl = t_due + slack
            if dl <= now:
                self._on_overdue(q, now)
            elif q.deadline is None or dl < q.deadline:
                ep._arm(q, dl)

    def _xdue(self, p, need=None, head_known=False):
        """MR-REL-009: the send time of the AckReq packet that closes the **second** ACK group at
        or after the path's oldest live packet (the first, for a probing path's one packet). The
        receiver acknowledges the oldest packet at the latest with the first group's ACK; if that
        ACK is lost, the next group's ACK repairs it (cumulative PSN and SACK), so only when that
        one is overdue too is the silence evidence of loss. ``None`` when there is none.
        ``need`` is ``P.overdue_groups(self.ack_loss)`` when the caller has it. Cached per path
        until its records change (``xcache``): every ACK asks it of every other path.
        ``head_known``: the caller has just run ``p.oldest_live()`` and found a record."""
        if p.state == _PROBING:
            need = 1
        elif need is None:
            xn = self.xneed         # P.overdue_groups(self.ack_loss), MR-REL-011, kept as _xpath keeps it
            if xn[0] != self.ack_loss:
                xn = self.xneed = (self.ack_loss, P.overdue_groups(self.ack_loss))
            need = xn[1]
        xc = p.xcache
        if xc is not None and xc[0] == need:
            return xc[1]
        t = None
        if head_known or p.oldest_live() is not None:
            # p.records(p.head), inlined
            ring = p.ring
            psn = p.head
            end = p.next_psn
            k = need
            while psn != end:
                rec = ring[psn & RING_MASK]
                if rec is not None and rec.req and not rec.lost:
                    k -= 1
                    if not k:
                        t = rec.t
                        break
                psn = (psn + 1) & _PSN_MASK
        p.xcache = (need, t)
        p.xok = (_XOK_NONE if t is None else t) if (
            need == self.xok_need and p.state == _ACTIVE) else _XOK_STALE
        return t

    def _on_overdue(self, p, now):
        """MR-REL-009: when the ACK groups of the path's oldest live packets are overdue by the
        cross-path bound, and so is the group after them (whose ACK would have repaired a lost
        ACK), the path is silent: every live packet is lost, as at a timeout, and the path is
        judged (MR-PATH-001). A single overdue group (one lost ACK) costs nothing."""
        need = 1 if p.state == _PROBING else P.overdue_groups(self.ack_loss)      # MR-REL-011
        k = n = 0
        grp = 0
        p.oldest_live()
        for rec in p.records(p.head):
            if rec.lost:
                continue
            grp += 1
            if not rec.req:
                continue
            if rec.t >= p.xwit or rec.t + p.xslack > now:
                break
            n += 1
            if n >= need:
                break
            k += grp
            grp = 0
        if n >= need:
            k += grp if need == 1 else 0
            self.ep.stats["xpath_losses"] += max(k, 1)
            p.xrun += 1
            for rec in list(p.records(p.head)):
                self._mark_lost(p, rec)
            self._verdict(p, now)
        self._rearm(p)
        self.ep._make_ready(self)

    def _on_nak(self, h, now, bth_psn=0):
        ep = self.ep
        proof, psn = join_proof(bth_psn, h.psn)
        # MR-SEC-151: a NAK for a path that does not exist or a PSN not yet sent is dropped.
        if h.path >= len(self.paths) or P.psn_dist(self.paths[h.path].next_psn, psn) >= 0:
            ep._drop("bad_nak")
            return
        if self.receipt_key is not None and proof != receipt_proof(
                self.receipt_key, PROOF_NAK, self.local_id, h.path, psn):
            ep._drop("bad_proof")       # MR-SEC-154
            return
        ep.stats["naks_received"] += 1
        ep.stats[f"nak_{NakReason(h.reason).name.lower()}" if h.reason in NakReason._value2member_map_
                 else "nak_unknown"] += 1
        p = self.paths[h.path]
        rec = p.rec(psn)
        if rec is None:
            return
        if rec.idx == ABORT:
            # MR-ERR-020: a refused abort is given up (a correct receiver refuses none); any
            # other NAK is a loss, and the abort is resent.
            if h.reason in P.FATAL_NAKS:
                self._abort_done(rec.msg, refused=True)
            else:
                self._mark_lost(p, rec)
        elif h.reason in P.FATAL_NAKS:
            # MR-ERR-003: the work request fails; its packets are not resent.
            self._fail(rec.msg, NAK_STATUS.get(NakReason(h.reason), Status.REM_OP_ERR))
        elif h.reason == NakReason.RNR:
            # MR-ENG-041: no receive posted: resend after rnr_delay; after rnr_retry RNR NAKs of
            # the message's lowest chunk the work request fails.
            m = rec.msg
            if rec.idx == m.ack_base and not rec.lost:
                m.rnr += 1
            if m.rnr > ep.rnr_retry:
                self._fail(m, Status.RNR_RETRY_EXC_ERR)
                ep.stats["rnr_retry_exceeded"] += 1
            elif not rec.lost:
                self._mark_lost(p, rec, requeue=False)
                ep._push(now + ep._rnr_delay_ns, 6, self, (m, rec.idx))
        else:
            # MR-ERR-004: PSN window: the packet was not taken; resend it.
            self._mark_lost(p, rec)
        ep._make_ready(self)

    def _on_progress_timer(self, now):
        """MR-ENG-040: no ACK has acknowledged anything for ``wr_timeout`` while work was
        outstanding: every posted work request of the connection completes RETRY_EXC_ERR."""
        self.prog_armed = False
        if self.last_progress is None:
            return
        ep = self.ep
        dl = self.last_progress + ep._wr_timeout_ns
        if dl > now:
            self.prog_armed = True
            ep._push(dl, 5, self, 0)
            return
        if any(self.ssq) or self.rsp:
            ep.stats["retry_exceeded"] += 1
        for s, q in enumerate(self.ssq):
            # MR-ERR-023: a stream's messages start in order, so those never sent are its last
            # ones: they give their message and receive sequence numbers back (the peer never
            # saw them) and need no abort.
            unsent = [m for m in q if not m.next_chunk]
            if unsent:
                self.msg_next[s] = unsent[0].msg
                seqs = [m.recv_seq for m in unsent if m.recv_seq is not None]
                if seqs:
                    self.send_seq[s] = seqs[0]
            for m in list(q):
                self._fail(m, Status.RETRY_EXC_ERR)
        for r in list(self.rsp.values()):
            self._fail(r, Status.RETRY_EXC_ERR)       # MR-VERB-005: the responses are dropped
        self.last_progress = None

    def _rnr_resend(self, m, idx):
        """MR-ENG-041: the RNR delay of a chunk is over: queue it for resend."""
        if not m.done and not m.is_acked(idx):
            self.retx.append((m, idx))
            self.ep._make_ready(self)

    # -- sender: timers --------------------------------------------------------------------------

    def _on_timeout(self, p, now):
        """MR-REL-006, MR-PATH-001..004: the path's tail-loss timer expired.

        Every live packet of the path is declared lost and queued for resend on any path.
        Loss with recent ECN echoes is congestion: halve the window. Without ECN the path
        gets a new entropy; if other paths are healthy it is a suspected failure: it carries
        one probe packet at a time and its window goes to the healthy paths; after
        ``retire_after`` timeouts in a row it is retired and probed every ``probe_interval``.
        If no path is healthy, nothing is known: the window restarts from one packet.
        """
        head = p.oldest_live()
        due = None if head is None else head.t + self._rto(p)
        if due is not None and p.tail_probed:
            due = max(due, p.probe_dl)      # MR-REL-010: the probe's ACK is not overdue yet
        if due is not None and due > now:
            self._on_overdue(p, now)        # MR-REL-009: the cross-path bound, not the RTO
            return
        if (head is not None and not p.tail_probed and p.state == _ACTIVE
                and self._healthy(p, now) and self._probe_same_psn(p, now)):
            # MR-REL-010: the path was working and another one still is: the silence may be one
            # lost ACK. Ask again (the newest PSN, as is) before declaring anything lost; a dead
            # path is still caught by the cross-path bound (MR-REL-009) meanwhile.
            p.tail_probed = True
            p.probe_dl = p.probe_at + self._rto(p)      # MR-CC-032: from when it goes
            self.ep.stats["tail_probes"] += 1
            return
        p.tail_probed = False
        self.ep.stats["timeouts"] += 1
        for rec in p.records(p.head):
            self._mark_lost(p, rec)
        self._verdict(p, now)

    def _verdict(self, p, now):
        """MR-PATH-001..004: what a timeout (or a silent path, MR-REL-009) means for the path."""
        ep = self.ep
        st = ep.stats
        p.consec_to += 1
        p.backoff = min(p.backoff * 2, 64)
        healthy = self._healthy(p, now)
        # ECN on this path or on the connection (a shared last hop, incast) means congestion.
        ecn = now < P.recent_until(max(p.last_ece, self.last_ece), self._srtt_ns(p))
        action = P.path_on_timeout(p.consec_to, ecn, bool(healthy), retire_after=ep.retire_after)
        if action == P.PATH_KEEP:
            p.cwnd = P.keep_window(p.cwnd, self.path_floor)     # MR-CW-107
        elif action == P.PATH_REROUTE:
            # No path is healthy (incast that lost whole windows before any ACK, a dead
            # receiver): nothing is known, so restart from one packet, like TCP after an RTO,
            # and try another route. The first hint or ACK restores the window (MR-CC-007).
            p.cwnd = ep.mtu
            p.collapsed = True
            self._reroute(p)
            if self.ss and all(q.last_ack == _NEVER for q in self.paths):
                # MR-CC-014: a first window lost whole: resend one packet until the receiver
                # answers (its hint then paces the rest), not the whole first window at once.
                self.ramp = min(self.ramp, ep.mtu)
                self.window = min(self.window, self.ramp)
            if (ep.lost_first_turn and self.spread and self.last_tx < self.t_answer
                        and 0 < self.rate_bps < ep.line_rate_bps and self.pace_until > now):
                # MR-CC-033: the first window was lost whole and nothing paced has gone since
                # the first answer; once its blind release has passed, the resend goes now:
                # the timer (MR-CC-014) is already spread, the phase spread (MR-CC-023) would
                # add up to one more gap of silence
                rel = self._release(max(1, int(self.rate_bps // 1e6)))
                if rel <= now:
                    self.pace_until = now
        elif action == P.PATH_RETIRE:
            if p.state == _ACTIVE:
                self._give_window(p, healthy)
            self._retire(p, now)
        else:
            self._reroute(p)
            if p.state == _ACTIVE:
                st["paths_suspected"] += 1
                self._give_window(p, healthy)
                p.state = _PROBING
                p.xok = _XOK_STALE
        if p.state != _RETIRED and not P.send_window_open(p.floor, p.next_psn):
            self._probe_same_psn(p, now)
        self._sum_windows()
        ep._make_ready(self)

    def _hint_refill(self, p, sum_floor, cap, now):
        """MR-CC-007, MR-CC-011: while hinted, a cut that takes the paths' windows together below
        the hinted BDP is given back, first to the paths without an ECN echo in their last RTT
        (each up to its cap), the rest to the cut path: the connection keeps the hinted rate's
        window and moves it off the congested paths."""
        short = sum_floor - self.cwnd_sum
        calm = [q for q in self.paths if q is not p and q.state == _ACTIVE and q.cwnd < cap
                and now - q.last_ece > self._srtt_ns(q)]
        for i, q in enumerate(calm):
            give = min(cap - q.cwnd, short // (len(calm) - i))
            q.cwnd += give
            short -= give
        if short > 0:
            p.cwnd += short
        self.cut_debt = 0
        self._sum_windows()

    def _ss_exit_windows(self):
        """MR-CC-019: slow start ends (not by a hint): the paths' windows become equal shares
        of the ramp, the window the connection had, whatever the paths it acknowledged."""
        share = P.ss_exit_path_window(self.ramp, len(self.paths), self.path_floor, self.ep.cwnd_max)
        for q in self.paths:
            q.cwnd = share
        self._sum_windows()

    def _sum_windows(self):
        """MR-CC-011: the sum of the active paths' windows, the connection's coupled window (the
        RTL keeps it in ``conn_tx.cwnd_sum``, updated with every path window change)."""
        total = 0
        for q in self.paths:
            if q.state == _ACTIVE:
                total += q.cwnd
        mtu = self.ep.mtu
        self.cwnd_sum = total if total >= mtu else mtu     # max(total, mtu)

    def _healthy(self, p, now):
        """Active paths other than ``p`` acknowledged within their last 4 RTTs (MR-PATH-001)."""
        return [q for q in self.paths if q.state == _ACTIVE and q is not p
                and now < P.recent_until(q.last_ack, self._srtt_ns(q))]

    def _give_window(self, p, healthy):
        """Keep the connection's total window when a path stops carrying data (MR-PATH-004):
        its window is shared out to the healthy paths."""
        ep = self.ep
        n = len(healthy)
        for q in healthy:
            q.cwnd = P.shared_window(q.cwnd, p.cwnd, n, ep.cwnd_max)     # MR-CW-111

    def _retire(self, p, now):
        """MR-PATH-003: stop using the path; probe it after ``probe_interval`` (doubling)."""
        ep = self.ep
        if p.state == _PROBING and p.retired_before:
            p.probe_interval = min(p.probe_interval * 2, ep._probe_interval_ns * 64)
        else:
            ep.stats["paths_retired"] += 1
        p.state = _RETIRED
        p.xok = _XOK_STALE
        p.retired_before = True
        ep._schedule_probe(p, now + p.probe_interval)

    def _reroute(self, p):
        """MR-PATH-002: a new UDP source port moves the path to another ECMP route."""
        p.gen += 1
        p.entropy = P.entropy_for(self.local_id * 4099 + p.idx * 131 + p.gen * 65537 + self.ep.seed * 7919)
        p.backoff = min(p.backoff, 4)       # a new route deserves a fresh, short timer
        self.ep.stats["path_reroutes"] += 1

    def _on_probe_timer(self, p, now):
        if p.state != _RETIRED:
            return
        p.state = _PROBING
        p.xok = _XOK_STALE
        self._reroute(p)
        if not P.send_window_open(p.floor, p.next_psn):
            self._probe_same_psn(p, now)
        self.ep._make_ready(self)

    def _probe_same_psn(self, p, now):
        """MR-REL-008: with the path's PSN window exhausted, re-send its newest PSN as is."""
        psn = (p.next_psn - 1) & P.PSN_MASK
        rec = p.rec(psn)
        if rec is None:
            return False
        if rec.msg.mv is None and rec.idx != ABORT:
            return False
        if (self.spread_probe and self.pace_until > now and self.ep.probe_turn
                and self.rate_bps < self.ep.line_rate_bps):
            # MR-CC-032: a paced connection's probe waits for the next paced turn and is that
            # turn's frame (sent now it would arrive beside the paced frame just sent: two
            # packets where the share allows one)
            if p.probe_at <= now:       # none of this path is waiting already
                self._probe_wait(p, psn, rec)
            return True
        p.probe_at = now
        self._probe_send(p, psn, rec, now)
        return True

    def _probe_turn(self, p, psn, rec, at, now):
        """MR-CC-032: a deferred probe's turn: sent unless its packet was resolved meanwhile
        (acknowledged, or declared lost and queued for resend); when another paced frame took
        the turn, the probe waits for the next one."""
        if at != p.probe_at or rec.lost or p.rec(psn) is not rec or p.state == _RETIRED:
            return
        if self.pace_until > now and self.rate_bps < self.ep.line_rate_bps:
            self._probe_wait(p, psn, rec)
            if p.tail_probed:
                p.probe_dl = p.probe_at + self._rto(p)
            return
        p.probe_at = now
        self._probe_send(p, psn, rec, now)

    def _probe_wait(self, p, psn, rec):
        """MR-CC-032: the probe of ``rec`` waits for the next paced turn, the path's timer
        from then."""
        p.probe_at = t = self.pace_until
        self.ep._push(t, 9, p, (psn, rec, t))
        self.ep._arm(p, t + self._rto(p))

    def _probe_send(self, p, psn, rec, now):
        """MR-REL-008/010: send the probe of ``rec`` (``psn`` on ``p``) now."""
        m = rec.msg
        off = rec.idx * self.ep.mtu if rec.idx != ABORT else 0
        rec.probe = True
        f = self._frame(m, rec.idx, off, rec.nbytes, p, psn, True, True)
        self.ep._ctrl.append(f)
        if self.spread_probe and self.rate_bps < self.ep.line_rate_bps:
            wl = wire_len(f)
            if rec.free:
                # MR-CC-024: a paced connection's probe of a first-window packet takes the next
                # paced frame's turn, so that the two do not arrive together, twice its share
                self.pace_until = max(self.pace_until, now) + self._gap(wl)
            else:
                # MR-CC-030: any other probe of a paced connection counts as a paced frame: the
                # next one leaves at least a gap after it
                self.pace_until = max(self.pace_until, now + self._gap(wl))
            if self.ep.probe_turn:
                # MR-CC-032: and is the last frame that a new hint (MR-CC-006) or RTT sample
                # (MR-CC-029) re-times the next one from
                self.last_tx = now
                self.last_wl = wl
        self.ep.stats["probes_sent"] += 1
        self.ep.stats["data_packets_sent"] += 1
        self.ep._arm(p, now + self._rto(p))

    # -- receiver --------------------------------------------------------------------------------

    def _on_data(self, f, now):
        ep = self.ep
        st = ep.stats
        h = f.mrdh
        if h.path >= len(self.paths):
            ep._nak(self, f, h.path & 0xFF, NakReason.INVALID_REQUEST)
            return
        p = self.paths[h.path]
        # MR-SEC-007: everything the packet alone decides (stream, chunk, key, bounds) is checked
        # before any sequence shortcut, so a forged duplicate is refused like any bad packet.
        op = f.bth.opcode
        abort = h.flags & _MRDH_ERROR and op != _OP_READ_RESP     # MR-WIRE-083
        if abort:
            # MR-ERR-021: an abort places nothing, so only the stream is checked (its write may
            # have failed on the very key it names); it carries no payload.
            reason = P.check_stream(h.stream, self.n_streams) or (
                NakReason.INVALID_REQUEST if f.payload else None)
        else:
            reason = self._validate(f)
        if reason is not None:
            if (reason == NakReason.ACCESS or reason == NakReason.BOUNDS) and f.bth.opcode in _REQ_OPS:
                # MR-VERB-002: a refused READ/atomic is answered in its stream's order by an ERROR
                # response (reliable, and later requests of the stream still execute); nothing
                # is read or written (the check is repeated at execution, MR-VERB-004).
                ep.stats["requests_refused"] += 1
            else:
                ep._nak(self, f, h.path, reason)
                return
        psn = f.bth.psn
        cls, cum, sack, ab = P.rx_admit(p.rx_cum, p.rx_sack, psn)     # stored once placed
        if cls == P.RX_OUT:
            ep._nak(self, f, h.path, NakReason.PSN_WINDOW)        # MR-SEC-003
            return
        if cls == P.RX_DUP:
            st["duplicates"] += 1
            ep._send_ack(self, p, psn, f.udp.sport)
            return
        reason = self._abort_rx(f) if abort else self._place(f)
        if reason is not None:
            ep._nak(self, f, h.path, reason)
            return
        if f.bth.opcode == _OP_READ_RESP and self.last_progress is not None:
            self.last_progress = now        # MR-ENG-040: response data is progress of a READ
        gap = psn != p.rx_high
        if ((psn - p.rx_high) & _PSN_MASK) < _PSN_HALF:      # psn_dist(rx_high, psn) >= 0
            p.rx_high = (psn + 1) & P.PSN_MASK
        p.rx_cum = cum
        p.rx_sack = sack
        if ab:
            st["abandoned_psns"] += ab
        st["rx_data_packets"] += 1
        ce = f.ip.ecn == 3
        onset = ce and not p.rx_prev_ce         # congestion starts: tell the sender at once
        p.rx_prev_ce = ce
        if ce:
            p.rx_ce += 1
            st["ce_received"] += 1
        p.rx_pending += 1
        # MR-SEQ-009: ACK policy.
        if f.bth.ack_req or gap or p.rx_pending >= ep.ack_every or onset:
            ep._send_ack(self, p, psn, f.udp.sport)
        else:
            p.rx_last = (psn, f.udp.sport)
            if p.rx_pending == 1:
                ep._push(now + ep._ack_delay_ns, 3, p, p.rx_ack_token)

    def _validate(self, f):
        """MR-SEC-007: the checks that depend only on the packet and the registrations:
        stream (MR-SEC-002), chunk (MR-PLC-003), and for writes the RETH length (LENGTH), key and
        bounds (MR-SEC-004, MR-SEC-005). ``None`` or the :class:`NakReason`."""
        ep = self.ep
        h = f.mrdh
        r = P.check_packet(h.stream, self.n_streams, h.offset, len(f.payload), h.msg_len, ep.mtu)
        if r is not None:
            return r
        op = f.bth.opcode
        if op == _OP_WRITE or op == _OP_WRITE_IMM:
            reth = f.reth
            if reth.dma_len != h.msg_len:
                return NakReason.LENGTH
            mr = ep._mrs.get(reth.rkey)
            # MR-SEC-005: the whole message must fit, so a bad write places no byte at all.
            return P.check_access(None if mr is None else len(mr[0]), 0 if mr is None else mr[1],
                                  P.ACCESS_REMOTE_WRITE, reth.va, h.msg_len)
        if op == _OP_READ_RESP:
            return self._validate_resp(h)
        if op in _REQ_OPS:
            return self._validate_req(op, h, f.reth)
        return None

    def _validate_req(self, op, h, reth):
        """MR-VERB-002, MR-VERB-011: a READ request carries no payload (msg_len 0) and its
        whole range must be readable; an atomic carries its operands (msg_len 16 or 8), names 8
        aligned bytes with ACCESS_REMOTE_ATOMIC. Checked before any shortcut (MR-SEC-007)."""
        if op == _OP_READ:
            if h.msg_len != 0:
                return NakReason.LENGTH
            need, length = P.ACCESS_REMOTE_READ, reth.dma_len
        else:
            if reth.dma_len != 8 or h.msg_len != (16 if op == _OP_CMP_SWAP else 8):
                return NakReason.LENGTH
            if reth.va % 8:
                return NakReason.INVALID_REQUEST
            need, length = P.ACCESS_REMOTE_ATOMIC, 8
        mr = self.ep._mrs.get(reth.rkey)
        return P.check_access(None if mr is None else len(mr[0]), 0 if mr is None else mr[1],
                              need, reth.va, length)

    def _validate_resp(self, h):
        """MR-VERB-003: a response names a READ/atomic this side started; its length is the
        request's (0 with ERROR). One for a request already completed is a duplicate."""
        m = self.rd_out.get((h.stream, h.msg))
        if m is None:
            return None if P.seq_lt32(h.msg, self.msg_next[h.stream]) else NakReason.INVALID_REQUEST
        if h.msg_len != (0 if h.flags & _MRDH_ERROR else m.rd_len):
            return NakReason.LENGTH
        return None

    def _place(self, f):
        """Place one validated data packet with a new PSN (MR-PLC-001..006, MR-SEC-006,
        MR-EXO-001..005, MR-ENG-012, MR-ENG-015).

        Returns ``None`` when the packet is placed (or is a duplicate of a placed chunk),
        else the :class:`NakReason`; a rejected packet changes no state and no memory.
        """
        ep = self.ep
        h = f.mrdh
        if f.bth.opcode == _OP_READ_RESP:
            return self._place_resp(f, h)
        n = len(f.payload)
        s = self.rx[h.stream]
        w = P.msg_window(h.msg, s.next_deliver, ep.max_rx_msgs)
        if w:
            if w == P.MSG_BEYOND:
                return NakReason.INVALID_REQUEST    # MR-SEC-006
            if self._was_aborted(s, h.msg):
                return NakReason.ABORTED            # MR-ERR-022: never acknowledged as placed
            ep.stats["duplicate_chunks"] += 1       # MR-EXO-005: message already delivered
            return None
        op = f.bth.opcode
        key = (h.stream, h.msg)
        m = self.rx_open.get(key)
        idx = h.offset // ep.mtu
        if m is not None:
            if m.aborted:
                return NakReason.ABORTED            # MR-ERR-022
            if m.msg_len != h.msg_len or m.op != op:
                return NakReason.LENGTH
            if (op == _OP_SEND or op == _OP_SEND_IMM) and m.recv_seq != f.mrsh.recv_seq:
                return NakReason.LENGTH
            if idx < m.chunk_base or (m.chunk_bits >> (idx - m.chunk_base)) & 1:
                ep.stats["duplicate_chunks"] += 1   # MR-EXO-002
                return None
            base = m.chunk_base
        else:
            if len(self.rx_open) >= ep.max_rx_msgs:
                return NakReason.INVALID_REQUEST    # MR-ENG-015: no receive message slot
            base = 0
        if idx >= base + ep.chunk_window:
            return NakReason.INVALID_REQUEST        # MR-ENG-012: beyond the chunk window
        if op == _OP_WRITE or op == _OP_WRITE_IMM:
            reth = f.reth
            va = reth.va + h.offset
            buf = ep._mrs[reth.rkey][0]
        elif op in _REQ_OPS:
            # MR-VERB-005: a new request takes a responder resource; none free: RNR (resent)
            if self.rsp_used >= ep.max_rd_atomic:
                ep.stats["rsp_full"] += 1
                return NakReason.RNR
            va, buf = 0, None
        else:
            rv = s.recvs.get(f.mrsh.recv_seq)
            if rv is None:
                return NakReason.RNR                # MR-PLC-005
            lkey, loff, rlen, _ = rv
            if h.msg_len > rlen:
                return NakReason.BOUNDS
            mr = ep._mrs.get(lkey)
            if mr is None or not mr[1] & P.ACCESS_LOCAL_WRITE:
                return NakReason.ACCESS
            va = loff + h.offset
            buf = mr[0]
        if m is None:
            m = self.rx_open[key] = _RxMsg(h.msg_len, op, h.stream, h.msg)
            if op == _OP_SEND or op == _OP_SEND_IMM:
                m.recv_seq = f.mrsh.recv_seq
            elif buf is None:
                r = f.reth
                m.req = (r.va, r.rkey, r.dma_len, bytes(f.payload))
                self.rsp_used += 1
        if n and buf is not None:
            buf[va:va + n] = f.payload
        if f.imm is not None:
            m.imm = f.imm
        b = m.chunk_bits | (1 << (idx - m.chunk_base))
        t = (~b & (b + 1)).bit_length() - 1     # P.trailing_ones(b), inlined (every chunk)
        m.chunk_base += t
        m.chunk_bits = b >> t
        m.placed += n
        ep.stats["bytes_placed"] += n
        if m.placed == m.msg_len and not m.done:
            # MR-EXO-001: all bytes placed; MR-EXO-003: a zero-length message has one packet.
            m.done = True
            self._deliver_rx(h.stream)
        return None

    def _abort_rx(self, f):
        """MR-ERR-021: an abort packet ends its message: not yet delivered and not complete (or
        a READ/atomic request not yet executed), it is marked aborted (taking a receive message slot if it had none) and delivered in stream
        order with an error; one for a message already delivered or complete is only
        acknowledged. ``None`` or the :class:`NakReason` (MR-SEC-006, MR-ENG-015)."""
        ep = self.ep
        h = f.mrdh
        s = self.rx[h.stream]
        w = P.msg_window(h.msg, s.next_deliver, ep.max_rx_msgs)
        if w == P.MSG_DELIVERED:
            ep.stats["aborts_duplicate"] += 1
            return None
        if w == P.MSG_BEYOND:
            return NakReason.INVALID_REQUEST        # MR-SEC-006
        key = (h.stream, h.msg)
        m = self.rx_open.get(key)
        if m is None:
            if len(self.rx_open) >= ep.max_rx_msgs:
                return NakReason.INVALID_REQUEST    # MR-ENG-015
            m = self.rx_open[key] = _RxMsg(h.msg_len, f.bth.opcode, h.stream, h.msg)
            if f.mrsh is not None:
                m.recv_seq = f.mrsh.recv_seq
        elif m.done and m.req is None:
            ep.stats["aborts_ignored"] += 1         # every byte is placed: it completes
            return None
        if m.req is not None:
            m.req = None                            # MR-VERB-005: never executed
            self.rsp_used -= 1
        m.aborted = m.done = True
        ep.stats["aborts_received"] += 1
        self._deliver_rx(h.stream)
        return None

    def _was_aborted(self, s, msg):
        """MR-ERR-022: message ``msg`` (before the stream's delivery point) was delivered aborted,
        as far as the stream's ``max_rx_msgs``-bit memory reaches."""
        back = (s.next_deliver - 1 - msg) & 0xFFFFFFFF
        return back < self.ep.max_rx_msgs and (s.aborted >> back) & 1

    def _rx_complete(self, cqe):
        self.ep._cq.append(cqe)
        self.ep.stats["completions"] += 1

    def _deliver_rx(self, stream):
        """MR-EXO-004: receiver completions on a stream in message order; MR-ENG-015: the
        message's slot is released."""
        s = self.rx[stream]
        ep = self.ep
        while True:
            key = (stream, s.next_deliver)
            m = self.rx_open.get(key)
            if m is None or not m.done:
                return
            del self.rx_open[key]
            s.next_deliver = (s.next_deliver + 1) & 0xFFFFFFFF
            s.aborted = ((s.aborted << 1) | m.aborted) & ((1 << ep.max_rx_msgs) - 1)
            if m.aborted:
                # MR-ERR-022: a send's receive (posted or not yet) and a write's immediate
                # complete REM_ABORT_ERR; a READ or atomic is not executed.
                if m.op == _OP_SEND or m.op == _OP_SEND_IMM:
                    rv = s.recvs.pop(m.recv_seq, None)
                    if rv is not None:
                        self._rx_complete(Completion(rv[3], Status.REM_ABORT_ERR, WcOpcode.RECV, 0,
                                                     self.local_id, stream, None))
                    elif not P.seq_lt32(m.recv_seq, s.flush_to):
                        s.flush_to = (m.recv_seq + 1) & 0xFFFFFFFF
                elif m.op == _OP_WRITE_IMM:
                    self._rx_complete(Completion(None, Status.REM_ABORT_ERR, WcOpcode.RECV_RDMA_WITH_IMM,
                                                 0, self.local_id, stream, None))
                continue
            if m.op == _OP_SEND or m.op == _OP_SEND_IMM:
                _, _, _, wr_id = s.recvs.pop(m.recv_seq)
                ep._cq.append(Completion(wr_id, Status.SUCCESS, WcOpcode.RECV, m.msg_len,
                                         self.local_id, stream, m.imm))
                ep.stats["completions"] += 1
            elif m.op == _OP_WRITE_IMM:
                ep._cq.append(Completion(None, Status.SUCCESS, WcOpcode.RECV_RDMA_WITH_IMM,
                                         m.msg_len, self.local_id, stream, m.imm))
                ep.stats["completions"] += 1
            elif m.req is not None:
                self._execute(m)

    def _execute(self, m):
        """MR-VERB-002, MR-VERB-010: run a READ or atomic request, once, when its stream's
        delivery reaches it (so it sees every earlier message of the stream), and queue its
        response. Key and bounds are checked again: a region deregistered meanwhile gives an
        ERROR response (MR-VERB-004)."""
        ep = self.ep
        va, rkey, length, operands = m.req
        m.req = None
        read = m.op == _OP_READ
        mr = ep._mrs.get(rkey)
        err = P.check_access(None if mr is None else len(mr[0]), 0 if mr is None else mr[1],
                             P.ACCESS_REMOTE_READ if read else P.ACCESS_REMOTE_ATOMIC, va,
                             length if read else 8)
        if err is not None:
            payload = b""
        elif read:
            payload = bytes(mr[0][va:va + length])      # the DMA read
        else:
            buf = mr[0]
            orig = int.from_bytes(buf[va:va + 8], "little")
            cas = m.op == _OP_CMP_SWAP
            operand = int.from_bytes(operands[:8], "big")
            compare = int.from_bytes(operands[8:16], "big") if cas else 0
            buf[va:va + 8] = P.atomic_apply(cas, orig, operand, compare).to_bytes(8, "little")
            payload = orig.to_bytes(8, "little")
            ep.stats["atomics_executed"] += 1
        r = _SMsg(m.stream, m.msg, _OP_READ_RESP, None, memoryview(payload), len(payload), 0, 0,
                  None, None, ep.mtu)
        r.q = q = self.n_streams
        r.err = err is not None
        self.rsp[(m.stream, m.msg)] = r
        self.unsent += r.nchunks
        if not self.stx[q]:
            self.s_active.append(q)
        self.stx[q].append(r)
        ep._make_ready(self)

    def _place_resp(self, f, h):
        """MR-VERB-003: place a READ/atomic response chunk at the requester's destination, each
        byte once (MR-EXO-002); the READ completes when every chunk is placed, in stream
        order (MR-EXO-004)."""
        ep = self.ep
        m = self.rd_out.get((h.stream, h.msg))
        if m is None or m.done:
            ep.stats["duplicate_chunks"] += 1
            return None
        idx = h.offset // ep.mtu
        if idx < m.ack_base or (m.ack_bits >> (idx - m.ack_base)) & 1:
            ep.stats["duplicate_chunks"] += 1
            return None
        if idx >= m.ack_base + ep.chunk_window:
            return NakReason.INVALID_REQUEST        # MR-ENG-012
        n = len(f.payload)
        if n:
            m.dst[h.offset:h.offset + n] = f.payload
        b = m.ack_bits | (1 << (idx - m.ack_base))
        t = P.trailing_ones(b)
        m.ack_base += t
        m.ack_bits = b >> t
        m.nacked += 1
        ep.stats["bytes_placed"] += n
        if h.flags & _MRDH_ERROR:
            # MR-VERB-004: the responder delivered the request and refused it: nothing to abort
            self._fail(m, Status.REM_ACCESS_ERR, abort=False)
        elif m.nacked == max(1, -(-m.rd_len // ep.mtu)):
            m.done = True
            self._deliver_send(m.stream)
        return None


def _check_config(cfg):
    """Endpoint constructor arguments: ValueError naming the argument and its valid range."""
    def need(ok, msg):
        if not ok:
            raise ValueError(msg)

    def num(name):
        v = cfg[name]
        need(isinstance(v, (int, float)) and not isinstance(v, bool) and v == v,
             f"{name} must be a number, got {v!r}")
        return v

    def opt_pos(name):
        if cfg[name] is not None:
            need(num(name) > 0, f"{name} must be > 0, got {cfg[name]}")

    def integer(name, lo, hi=None):
        v = cfg[name]
        need(isinstance(v, int) and not isinstance(v, bool) and v >= lo and (hi is None or v <= hi),
             f"{name} must be an integer in {lo}..{'' if hi is None else hi}, got {v!r}")

    integer("mtu", 4, 9216)
    need(cfg["mtu"] % 4 == 0, "mtu must be a positive multiple of 4")
    need(1e6 <= num("line_rate_bps") <= 1.6e13,
         f"line_rate_bps must be 1e6..1.6e13 (1 Mb/s to 16 Tb/s), got {cfg['line_rate_bps']}")
    need(0 < num("base_rtt") <= 1.0, f"base_rtt must be in (0, 1] seconds, got {cfg['base_rtt']}")
    integer("ack_every", 1, 255)
    for name in ("ack_delay", "rto_initial", "probe_interval", "share_interval", "reorder_allow",
                 "wr_timeout", "rnr_delay"):
        opt_pos(name)
    need(num("init_window_bdp") > 0, f"init_window_bdp must be > 0, got {cfg['init_window_bdp']}")
    need(num("max_window_bdp") > 0, f"max_window_bdp must be > 0, got {cfg['max_window_bdp']}")
    need(0 < num("beta") < 1, f"beta must be in (0, 1), got {cfg['beta']}")
    need(num("rto_min_rtts") >= 1, f"rto_min_rtts must be >= 1, got {cfg['rto_min_rtts']}")
    need(num("rto_min") > 0, f"rto_min must be > 0, got {cfg['rto_min']}")
    need(num("rto_max") > 0, f"rto_max must be > 0, got {cfg['rto_max']}")
    need(cfg["rto_min"] <= cfg["rto_max"], "rto_min must be <= rto_max")
    integer("retire_after", 1)
    integer("first_window", 0)
    integer("seed", 0)
    integer("initial_psn", 0, P.PSN_MASK)
    integer("max_rx_msgs", 1)
    integer("max_tx_msgs", 1)
    integer("max_outstanding", 1)
    integer("sq_depth", 1)
    integer("max_paths", 1, 256)
    integer("max_streams", 1, 65536)
    integer("retry_cnt", 1)
    integer("rnr_retry", 0)
    integer("max_rd_atomic", 1)
    if cfg["max_init_rd_atomic"] is not None:
        integer("max_init_rd_atomic", 1)
    if cfg["chunk_window"] is not None:
        integer("chunk_window", 1, 1 << 20)


class Stats(Counter):
    """An endpoint's ``stats``: a :class:`~collections.Counter` whose stores run the dict's own
    code. ``Counter.__delitem__`` is Python (no KeyError for a missing key), and with it CPython
    sends every store into the counter (``stats[k] += 1``, several per packet) through a
    Python-level slot and ``dict.__setitem__``: about 1,000 machine instructions each. Here
    ``del`` is the dict's (a missing key raises KeyError; nothing deletes these counters)."""
    __delitem__ = dict.__delitem__


class VerbsHost:
    """What every endpoint kind shares (the contract in ``docs/endpoint-api.md``): memory
    registration, the completion queue, the ready list the NIC serves, drop counters.
    ``Endpoint`` and ``rocev2.RoceEndpoint`` both build on it, so the verbs surface is one code."""

    def _init_host(self, rng=None):
        self._mrs = {}
        # MR-SEC-152: 32 random bits per registration; ``rng`` (a random.Random) makes them
        # reproducible for simulations, None draws them from ``secrets``.
        self._rkeys = RKeyGenerator(rng)
        self._cq = deque()
        self._ctrl = deque()
        self._ready = deque()
        self._timers = []
        self._tseq = 0
        self.stats = Stats()

    def reg_mr(self, buf, access=ACCESS_ALL):
        """Register ``buf`` (a bytearray) and return its key (rkey == lkey) (MR-PLC-002)."""
        if not isinstance(buf, bytearray):
            raise TypeError("reg_mr needs a bytearray")
        key = self._rkeys.new()         # MR-SEC-152
        self._mrs[key] = (buf, access)
        return key

    def dereg_mr(self, key):
        """Remove a registration; later accesses with the key are NAKed ACCESS (MR-SEC-004).
        The key may be issued again only after this (MR-SEC-152)."""
        if self._mrs.pop(key, None) is not None:
            self._rkeys.free(key)

    def _local_mr(self, lkey, loffset, length):
        """The registration ``(buf, access)`` of a local buffer a work request names; a bad
        key or range is the caller's error (ValueError), checked when the request is posted."""
        mr = self._mrs.get(lkey)
        if mr is None:
            raise ValueError(f"unknown lkey {lkey}")
        if loffset < 0 or length < 0 or loffset + length > len(mr[0]):
            raise ValueError("local buffer out of the registered region")
        return mr

    def poll_cq(self, max_entries=None):
        """Take up to ``max_entries`` completions (all when ``None``)."""
        cq = self._cq
        if not cq:
            return []       # the common case: polled after every frame
        n = len(cq) if max_entries is None else min(max_entries, len(cq))
        return [cq.popleft() for _ in range(n)]

    def next_packet(self, now):
        """The next frame to put on the wire now, or ``None``: control frames first, then the
        ready connections round robin (``_serve`` gives a connection's next frame or ``None``)."""
        self._run_timers(now)
        if self._ctrl:
            self.stats["packets_sent"] += 1
            return self._ctrl.popleft()
        ready = self._ready
        for _ in range(len(ready)):
            c = ready.popleft()
            f = self._serve(c, now)
            if f is not None:
                ready.append(c)
                return f
            c.in_ready = False
        return None

    def _drop(self, reason):
        self.stats["drops"] += 1
        self.stats["drop_" + reason] += 1

    def _make_ready(self, c):
        if not c.in_ready:
            c.in_ready = True
            self._ready.append(c)


class Endpoint(VerbsHost):
    """A MetaRoCE host transport (the contract in ``docs/endpoint-api.md``).

    ``Endpoint(addr, *, mtu=4096, line_rate_bps=400e9, **config)``. Keyword arguments:

    - ``mtu``: payload bytes per data packet (both ends of a connection must agree).
    - ``line_rate_bps``: the NIC's line rate; sets the BDP and the fair-share hint.
    - ``base_rtt`` (10e-6): expected base round trip, for the initial window and timer.
    - ``ack_every`` (4): the receiver ACKs a path at least every this many packets; the
      sender also asks for an ACK (BTH AckReq) on the last packet of a burst (MR-SEQ-009).
    - ``ack_delay`` (base_rtt / 4): a pending ACK goes out at the latest this long after the
      first unacknowledged arrival on its path (delayed ACK, MR-SEQ-009).
    - ``init_window_bdp`` (1.0): initial connection window in BDPs, split over the paths.
    - ``first_window`` (1): packets a new connection may have in flight before its first ACK
      (MR-CC-008); it then grows by slow start up to ``init_window_bdp`` while the receiver
      reports no other sender, or opens at once when a rate hint paces it (the first window then
      no longer counts against the hinted connection window). 0: no first window.
    - ``reorder_allow`` (base_rtt / 4): reordering allowance of the cross-path loss bound
      (MR-REL-009), on top of the path's lowest RTT, queueing delay and 2 x rttvar.
    - ``max_window_bdp`` (4.0): cap of the connection window and of each path's cwnd.
    - ``beta`` (0.5): AIMD multiplicative decrease at a CE fraction of 1 (MR-CC-003).
    - ``rto_min_rtts`` (1.5), ``rto_min`` (2e-6), ``rto_max`` (1e-3), ``rto_initial``
      (4 x base_rtt): the per-path tail-loss timer (MR-REL-006).
    - ``retire_after`` (3): consecutive timeouts before a path is retired (MR-PATH-003).
    - ``probe_interval`` (8 x base_rtt): wait before probing a retired path (MR-PATH-005).
    - ``share_interval`` (base_rtt): shortest interval over which the receiver counts active
      senders for its fair-share hint; it stretches to two MTU packet times per sender (MR-CC-005).
    - ``max_rx_msgs`` (8): messages a connection may have open at the receiver, and how far
      ahead of a stream's next delivery a message may be (MR-SEC-006, MR-ENG-015).
    - ``max_tx_msgs`` (8): messages a connection may have started and not completed (MR-ENG-013).
    - ``chunk_window`` (the connection window's cap in chunks, a power of two, 512 at
      400 Gb/s x 10 us): chunks of a message beyond its lowest unacknowledged one (MR-ENG-012).
    - ``max_outstanding`` (16,384): outstanding-packet records of the endpoint (MR-ENG-013).
    - ``resend_twice`` (None: the value of ``announce``): send twice a resend whose loss would
      idle the connection (MR-REL-012). On by default; off with ``announce`` off, the
      configuration of the RTL engine of this version, which does not double resends yet and
      whose frames the co-simulations compare with the endpoint's.
    - ``announce`` (True): a connection announces itself to the receiver before its first data
      packet (MR-CC-021) and the endpoint counts and answers its peers' announcements
      (MR-CC-022, MR-SEC-157), with MR-CC-023..025; False: none of them, as the RTL engine of
      this version, whose frames the co-simulations compare with the endpoint's.
    - ``announce_go`` (False): answer the only sender counted with the line rate, "go", which ends
      its first window at once instead of slow start (MR-CC-022; off: 1-path and 8-path
      connections starting together on one core link then share it 187 / 156 Gb/s).
    - ``pull_first_lost`` (True): as a receiver that takes announcements, pull the first windows
      lost at a quiet port (MR-CC-027); the sender side always takes a pull.
    - ``ack_phase`` (True): an announcing sender paced at a hint takes the phase of its next
      paced frame from its first data ACK, one gap after the bottleneck served its first
      window, instead of the hashed spread of MR-CC-023 (MR-CC-028).
    - ``probe_turn`` (True): an announcing sender paced at a hint sends a probe at its next paced
      turn, as that turn's frame, and re-times its next frame from it (MR-CC-032).
    - ``lost_first_turn`` (True): an announcing sender paced at a hint whose first window was
      lost whole resends it at its timer once its blind release has passed, without the phase
      spread of MR-CC-023 (MR-CC-033).
    - ``spread_once`` (True): the phase spread of MR-CC-023 applies only while the connection
      has sent nothing since the receiver's first answer; a later hint re-times its next frame
      from its last one (MR-CC-034; off, MR-CC-033 broke a held-out incast).
    - ``count_wait`` (True): an announcing sender paced below the line rate sends its first
      paced frame no sooner than one base RTT after its first frame: a hint that came sooner
      may be the count of the near senders only (MR-CC-035); and a receiver does not take its
      port for quiet (MR-CC-027) before one base RTT after the latest announcement it answered
      with a paced hint (MR-CC-036).
    - ``sq_depth`` (4,096): work requests per stream send queue, and receives per stream
      (MR-ENG-014). ``max_paths`` (256), ``max_streams`` (65,536): ``connect`` limits (MR-ENG-011).
    - ``retry_cnt`` (7), ``wr_timeout`` (retry_cnt x rto_max): without progress for this long,
      every posted work request of the connection completes RETRY_EXC_ERR (MR-ENG-040).
    - ``rnr_retry`` (7), ``rnr_delay`` (8 x base_rtt): RNR resends and their delay (MR-ENG-041).
    - ``max_rd_atomic`` (8): READ/atomic requests a connection accepts and has not finished
      answering (responder resources, MR-VERB-005); beyond them a request is NAKed RNR.
    - ``max_init_rd_atomic`` (8, the default peer's ``max_rd_atomic``): the initiator depth,
      READ/atomic requests of a connection started and not answered in full; a request beyond
      waits (MR-VERB-014). None: no bound but MR-VERB-006's. A connection opened with the
      peer's offer takes the smaller of this and the peer's ``max_rd_atomic``, and of
      ``max_tx_msgs`` and the peer's ``max_rx_msgs`` (``connect(peer_offer=)``, MR-VERB-015).
    Every argument is checked; a bad value is a ValueError naming it (MR-ENG-042).
    - ``seed`` (0): varies the initial path entropies.
    - ``rng`` (None): a ``random.Random`` the R_Keys are drawn from, for reproducible
      simulations; None draws them from ``secrets`` (MR-SEC-152).
    - ``initial_psn`` (0): first PSN of every path, both directions (both ends must agree,
      as RC QPs exchange their starting PSNs); exercises the 2^24 wrap (MR-SEQ-001). A
      connection's own ``init_psn``/``peer_init_psn`` override it (MR-CONN-107).

    ``stats`` (a ``Counter``, :class:`Stats`; counters only increase). Sender: ``packets_sent`` (all frames),
    ``data_packets_sent``, ``retransmitted``, ``gap_losses`` (MR-REL-002), ``timeouts``,
    ``spurious_retransmits`` (a chunk acknowledged twice, MR-REL-004), ``xpath_losses``
    (MR-REL-009), ``acks_received``, ``acks_stale`` (MR-SEC-151: resolved nothing, ignored),
    ``naks_received`` and ``nak_<reason>``, ``path_reroutes``, ``paths_suspected``,
    ``paths_retired``, ``paths_restored``, ``paths_cleared``, ``probes_sent`` (MR-PATH-006),
    ``completions``, ``tail_probes`` (MR-REL-010), ``resends_doubled`` (MR-REL-012),
    ``retry_exceeded``, ``rnr_retry_exceeded`` (MR-ENG-040/041), ``rtx_pool_full`` (MR-ENG-013),
    ``announcements_sent`` (MR-CC-021), ``aborts_sent``, ``aborts_acked``,
    ``aborts_refused`` (MR-ERR-020). Receiver: ``rx_data_packets``, ``bytes_placed``, ``duplicates`` (PSN seen
    before), ``duplicate_chunks`` (bytes already placed: every redundant copy, the exact count
    of wasted resends), ``abandoned_psns`` (MR-SEQ-008), ``aborts_received``, ``aborts_ignored``,
    ``aborts_duplicate`` (MR-ERR-021), ``ce_received``, ``acks_sent``,
    ``hint_updates`` (MR-CC-009: pushed ACKs, down and up), ``announcements_answered``
    (MR-CC-022; ``drop_announce_repeat``, ``drop_announce_path``: MR-SEC-157),
    ``first_window_pulls`` (receiver) and ``first_window_resends`` (sender) (MR-CC-027),
    ``naks_sent``, ``drops`` and ``drop_<reason>`` (MR-ERR-001, MR-ERR-005, MR-ERR-010,
    ``drop_bad_pkey`` MR-SEC-008, ``drop_bad_proof`` MR-SEC-154: an ACK or NAK without a valid proof
    of receipt on a connection with a ``receipt_key``).
    """

    # Slots for the attributes it sets itself (see Connection's); VerbsHost's stay in the
    # instance dict, few enough for CPython to keep them inline.
    __slots__ = ("_ack_delay_ns", "_base_rtt_ns", "_bcast_n", "_beta_q", "_conns", "_fresh",
                 "_fresh_ns", "_hint_key", "_hint_val", "_horizon_pkts", "_hosts", "_hosts_prev",
                 "_last_rx", "_lim_mbps", "_min_rtts_q", "_n_est", "_n_lim", "_pkt_bits_ns",
                 "_pool_waiters", "_probe_interval_ns", "_pull_iv", "_pulling", "_pullq",
                 "_last_announce", "_quiet_armed", "_rate", "_reorder_allow_ns", "_rnr_delay_ns", "_rto_initial_ns",
                 "_rto_max_ns", "_rto_min_ns", "_rtx_used", "_share_carry", "_share_ce",
                 "_share_ce_frac", "_share_eid", "_share_epoch", "_share_interval_ns",
                 "_share_iv", "_share_pkts", "_share_prev", "_share_prev_set", "_share_seen",
                 "_silent", "_wr_timeout_ns", "ack_delay", "ack_every", "ack_phase", "addr",
                 "announce", "announce_go", "base_rtt", "bdp", "beta", "chunk_window", "cwnd_max",
                 "count_wait", "first_window", "init_window_bdp", "initial_psn", "line_rate_bps",
                 "lost_first_turn", "max_outstanding", "spread_once", "max_init_rd_atomic", "max_paths",
                 "max_rd_atomic",
                 "max_rx_msgs", "max_streams", "max_tx_msgs", "max_window_bdp", "mtu",
                 "probe_interval", "probe_turn", "pull_first_lost", "reorder_allow",
                 "resend_twice", "retire_after", "retry_cnt", "rnr_delay", "rnr_retry",
                 "rto_initial", "rto_max", "rto_min", "rto_min_rtts", "seed", "share_interval",
                 "sq_depth", "wr_timeout")

    def __init__(self, addr="10.0.0.1", *, mtu=4096, line_rate_bps=400e9, base_rtt=10e-6,
                 ack_every=4, ack_delay=None, init_window_bdp=1.0, max_window_bdp=4.0, beta=0.5,
                 rto_min_rtts=1.5, rto_min=2e-6, rto_max=1e-3, rto_initial=None, retire_after=3,
                 probe_interval=None, share_interval=None, max_rx_msgs=8, seed=0,
                 initial_psn=0, first_window=1, reorder_allow=None, max_tx_msgs=8,
                 max_outstanding=RTX_POOL, sq_depth=4096, max_paths=256, max_streams=65536,
                 retry_cnt=7, wr_timeout=None, rnr_retry=7, rnr_delay=None, chunk_window=None,
                 max_rd_atomic=R.RD_ATOMIC, max_init_rd_atomic=R.RD_ATOMIC, resend_twice=None,
                 announce=True, announce_go=False,
                 pull_first_lost=True, ack_phase=True, probe_turn=True, lost_first_turn=True,
                 spread_once=True, count_wait=True, rng=None):
        _check_config(locals())
        self.addr = addr
        # MR-REL-012: on unless the endpoint runs as the RTL engine of this version (announce
        # off), which does not double resends yet and whose frames are compared with ours
        self.resend_twice = bool(announce if resend_twice is None else resend_twice)
        self.announce = bool(announce)      # MR-CC-021/022: send and answer announcements
        self.announce_go = bool(announce_go)    # MR-CC-022: answer a lone sender "go"
        self.pull_first_lost = bool(pull_first_lost)    # MR-CC-027: pull lost first windows
        self.ack_phase = bool(ack_phase)    # MR-CC-028: the first data ACK sets the phase
        self.probe_turn = bool(probe_turn)  # MR-CC-032: a paced probe waits for its turn
        self.lost_first_turn = bool(lost_first_turn)    # MR-CC-033: no phase after a lost start
        self.spread_once = bool(spread_once)    # MR-CC-034: the spread only before a frame
        self.count_wait = bool(count_wait)      # MR-CC-035: no paced frame in the first RTT
        self.mtu = mtu
        self.line_rate_bps = float(line_rate_bps)
        self.base_rtt = base_rtt
        self.ack_every = ack_every
        self.ack_delay = ack_delay if ack_delay is not None else base_rtt / 4
        self.bdp = self.line_rate_bps / 8 * base_rtt
        self.init_window_bdp = init_window_bdp
        if first_window < 0:
            raise ValueError("first_window must be >= 0")
        self.first_window = first_window
        self.reorder_allow = reorder_allow if reorder_allow is not None else base_rtt / 4
        self.max_window_bdp = max_window_bdp
        self.cwnd_max = max(2 * mtu, self.bdp * max_window_bdp)
        self.beta = beta
        self.rto_min_rtts, self.rto_min, self.rto_max = rto_min_rtts, rto_min, rto_max
        self.rto_initial = rto_initial if rto_initial is not None else 4 * base_rtt
        # MR-ENG-051..053: the per-packet arithmetic in integer ns and Q16 fixed point
        self._min_rtts_q = int(round(rto_min_rtts * P.Q_ONE))
        self._rto_min_ns, self._rto_max_ns = P.to_ns(rto_min), P.to_ns(rto_max)
        self._rto_initial_ns = P.to_ns(self.rto_initial)
        self._base_rtt_ns = P.to_ns(base_rtt)
        self._ack_delay_ns = P.to_ns(self.ack_delay)
        self._reorder_allow_ns = P.to_ns(self.reorder_allow)
        self._beta_q = int(round(beta * P.Q_ONE))
        self.retire_after = retire_after
        self.probe_interval = probe_interval if probe_interval is not None else 8 * base_rtt
        self.share_interval = share_interval if share_interval is not None else base_rtt
        self.max_rx_msgs = max_rx_msgs
        self.max_tx_msgs = max_tx_msgs
        # MR-ENG-012: by default the connection window's cap in chunks, as a power of two
        # (512 at 400 Gb/s x 10 us: the engine instance's CHUNK_WINDOW).
        self.chunk_window = chunk_window if chunk_window is not None else max(
            64, 1 << (int(-(-self.cwnd_max // mtu)) - 1).bit_length())
        self.max_outstanding = max_outstanding
        self.sq_depth = sq_depth
        self.max_paths, self.max_streams = max_paths, max_streams
        self.retry_cnt = retry_cnt
        # MR-ENG-040: a work request completes at the latest this long after the connection's
        # last progress: retry_cnt timers at their ceiling.
        self.wr_timeout = wr_timeout if wr_timeout is not None else retry_cnt * rto_max
        self.rnr_retry = rnr_retry
        self.rnr_delay = rnr_delay if rnr_delay is not None else 8 * base_rtt
        # MR-ENG-050: the timers run on integer ns; `now` is converted once per call
        self._probe_interval_ns = P.to_ns(self.probe_interval)
        self._share_interval_ns = P.to_ns(self.share_interval)
        self._wr_timeout_ns = P.to_ns(self.wr_timeout)
        self._rnr_delay_ns = P.to_ns(self.rnr_delay)
        self.max_rd_atomic = max_rd_atomic      # MR-VERB-005: responder resources per connection
        self.max_init_rd_atomic = max_init_rd_atomic    # MR-VERB-014: initiator depth (own)
        self._rtx_used = 0          # MR-ENG-013: outstanding-packet records in use
        self._pool_waiters = {}     # connections waiting for a free record
        self.seed = seed
        self.initial_psn = initial_psn & P.PSN_MASK
        self._init_host(rng)
        self._conns = {}
        self._share_epoch = 0
        self._share_seen = set()
        self._share_carry = set()      # MR-CC-026: counted from the last interval, not seen in this one
        self._share_prev = 0
        self._share_prev_set = set()
        self._bcast_n = 0
        self._fresh = deque()       # MR-CC-010: arrival times of new senders' first packets
        self._hosts = set()         # peer addresses active in the current / previous interval
        self._hosts_prev = set()
        self._n_est = 0
        self._share_pkts = self._share_ce = 0
        self._share_ce_frac = 0.0
        self._share_eid = 0         # MR-CC-012: interval number; limited senders of the last one
        self._n_lim = 0
        self._lim_mbps = 0
        self._hint_key = None       # _rate_hint's inputs and result
        self._hint_val = 0
        # MR-CC-005/010 in integer ns: k packet times are k * _pkt_bits_ns // _rate ns
        self._pkt_bits_ns = mtu * 8 * NS
        self._rate = int(self.line_rate_bps)
        self._fresh_ns = -(-P.NEW_SENDER_WINDOW * self._pkt_bits_ns // self._rate)
        self._horizon_pkts = P.NEW_SENDER_HORIZON * base_rtt * self.line_rate_bps / (mtu * 8)
        self._share_iv = self._share_iv_of(0)
        # MR-CC-027: announced connections with no data since (local id -> announced path), the
        # time of the latest frame that arrived, the connections to pull and whether a check of
        # the port's quiet is pending
        self._silent = {}
        self._last_rx = 0
        self._pullq = deque()
        self._pulling = set()
        self._pull_iv = 0
        self._quiet_armed = False
        self._last_announce = _NEVER    # MR-CC-036: the latest announcement answered paced

    # -- verbs -----------------------------------------------------------------------------------

    def open_offer(self):
        """MR-VERB-015: what this endpoint advertises when a connection opens: its responder
        resources ``max_rd_atomic`` (MR-VERB-005) and ``max_rx_msgs`` (MR-ENG-015)."""
        return P.OpenOffer(self.max_rd_atomic, self.max_rx_msgs)

    def connect(self, local_id, peer_addr, peer_id, *, paths=8, streams=1, pkey=0xFFFF,
                init_psn=None, peer_init_psn=None, receipt_key=None, peer_offer=None):
        """Open a connection (MR-CONN-001..003); the peer calls it with the ids mirrored.
        ``pkey``: the BTH P_Key of every packet both ways (MR-SEC-008). ``init_psn`` and
        ``peer_init_psn``: the first PSN every path sends and the first it expects from the
        peer (the handshake's, MR-CONN-107); ``None`` takes the endpoint's ``initial_psn``.
        ``receipt_key``: 16 bytes shared with the peer (the handshake's, MR-SEC-153): every ACK and
        NAK carries a proof of receipt and only ACKs and NAKs with a valid one are taken; None
        (the default, and on authenticated connections) disables it. ``peer_offer``: the peer's
        :class:`~metaroce.models.protocol.OpenOffer` (its ``open_offer()``, the handshake's,
        MR-VERB-015): the connection's ``tx_msgs`` and initiator depth ``init_rd_atomic`` are
        ``protocol.open_limits`` of the endpoint's own and the offer; None: the own values."""
        if peer_offer is not None and not isinstance(peer_offer, P.OpenOffer):
            raise ValueError(f"peer_offer must be a protocol.OpenOffer, got {peer_offer!r}")
        if not 0 <= local_id < 1 << 24 or not 0 <= peer_id < 1 << 24:
            raise ValueError("connection ids are 24-bit (BTH DestQP)")
        if not 0 <= pkey <= 0xFFFF:
            raise ValueError("pkey is 16-bit")
        for name, psn in (("init_psn", init_psn), ("peer_init_psn", peer_init_psn)):
            if psn is not None and (not isinstance(psn, int) or not 0 <= psn <= P.PSN_MASK):
                raise ValueError(f"{name} is 24-bit, got {psn!r}")
        if local_id in self._conns:
            raise ValueError(f"connection id {local_id} already in use")
        if receipt_key is not None and (not isinstance(receipt_key, bytes) or len(receipt_key) != 16):
            raise ValueError("receipt_key must be 16 bytes")
        c = Connection(self, local_id, peer_addr, peer_id, paths, streams, pkey, init_psn, peer_init_psn,
                       receipt_key, peer_offer)
        self._conns[local_id] = c
        return c

    # -- transport-facing ------------------------------------------------------------------------

    def _serve(self, c, now):
        r = c._next_frame(now)
        if type(r) is Frame:
            return r
        if r == _PACED:
            self._push(c.pace_until, 1, c, 0)
        return None

    def next_packet(self, now):
        """The next frame to put on the wire at ``now`` (seconds), or ``None``:
        ``VerbsHost.next_packet`` at ``now`` in integer ns (MR-ENG-050), with ``_serve`` inlined."""
        now = (now * _NS_F + 0.5).__trunc__()      # int(now * NS + 0.5), see _NS_F
        t = self._timers
        if t and t[0][0] <= now:
            self._run_timers(now)
        if self._ctrl:
            self.stats["packets_sent"] += 1
            return self._ctrl.popleft()
        ready = self._ready
        if not ready:
            return None
        turns = len(ready)          # each ready connection once (a counter: no range object)
        while turns:
            turns -= 1
            c = ready.popleft()
            r = c._next_frame(now)
            if type(r) is Frame:
                ready.append(c)
                return r
            if r == _PACED:
                self._push(c.pace_until, 1, c, 0)
            c.in_ready = False
        return None

    def next_wakeup(self, now):
        """Earliest time (seconds) something may change without input (timer or pacing), or
        ``None``."""
        if self._ctrl or self._ready:
            return now
        t = self._timers        # the earliest live timer (stale entries leave the heap)
        while t:
            d, _, kind, obj, tok = t[0]
            if kind == 0 and obj.deadline is None:
                heapq.heappop(t)
                obj.tstack.pop()
                continue
            if (kind == 2 and tok != obj.probe_token) or (kind == 3 and tok != obj.rx_ack_token):
                heapq.heappop(t)
                continue
            if kind == 5 and obj.last_progress is None:
                heapq.heappop(t)
                obj.prog_armed = False
                continue
            return d / NS if d > now * _NS_F else now
        return None

    def receive(self, frame, now):
        """A frame arrived from the wire (data, ACK or NAK) at ``now`` (seconds)
        (MR-ERR-001..002)."""
        now = (now * _NS_F + 0.5).__trunc__()      # MR-ENG-050: int(now * NS + 0.5), see _NS_F
        t = self._timers
        if t and t[0][0] <= now:
            self._run_timers(now)
        op = frame.bth.opcode
        self._last_rx = now         # MR-CC-027: the port is not quiet
        c = self._conns.get(frame.bth.dest_qp)
        if c is None:
            self._drop("no_connection")          # MR-SEC-001: no NAK to an unknown sender
            return
        if frame.ip.src != c.peer_addr:
            self._drop("bad_peer")               # MR-SEC-001
            return
        if frame.bth.pkey != c.pkey:
            self._drop("bad_pkey")               # MR-SEC-008: no NAK, as an RC QP does
            return
        if op in _DATA_OPS and frame.mrdh is not None:
            c.rx_more = not frame.mrdh.flags & _MRDH_LAST       # MR-CC-026
            if self._silent:
                self._silent.pop(c.local_id, None)      # MR-CC-027: its data arrives
            self._share_note(c, now, frame.ip.ecn == 3, len(frame.payload) + _WIRE_HDR)
            c._on_data(frame, now)
        elif op == _OP_ACK and frame.mrah is not None:
            c._on_ack(frame.mrah, now, frame.bth.psn)
        elif op == _OP_NAK and frame.mrnh is not None:
            c._on_nak(frame.mrnh, now, frame.bth.psn)
        elif op == _OP_ANNOUNCE and self.announce:
            self._on_announce(c, frame, now)
        else:
            self._drop("unexpected_opcode")

    # -- internals -------------------------------------------------------------------------------

    def _rtx_free(self):
        """MR-ENG-013: an outstanding-packet record is free again; wake its waiters."""
        self._rtx_used -= 1
        if self._pool_waiters:
            self._wake_pool()

    def _wake_pool(self):
        for c in self._pool_waiters.values():
            self._make_ready(c)
        self._pool_waiters.clear()

    def _push(self, deadline, kind, obj, tok):
        self._tseq += 1
        heapq.heappush(self._timers, (deadline, self._tseq, kind, obj, tok))

    def _arm(self, p, deadline):
        p.deadline = deadline
        if not p.tstack or deadline < p.tstack[-1]:
            p.tstack.append(deadline)
            self._push(deadline, 0, p, 0)

    def _disarm(self, p):
        p.deadline = None

    def _schedule_probe(self, p, when):
        p.probe_token += 1
        self._push(when, 2, p, p.probe_token)

    def _run_timers(self, now):
        t = self._timers
        while t and t[0][0] <= now:
            d, _, kind, obj, tok = heapq.heappop(t)
            if kind == 0:
                obj.tstack.pop()
                dl = obj.deadline
                if dl is None:
                    continue
                if dl > now:
                    if not obj.tstack or dl < obj.tstack[-1]:
                        obj.tstack.append(dl)
                        self._push(dl, 0, obj, 0)
                    continue
                obj.deadline = None
                obj.conn._on_timeout(obj, now)
            elif kind == 1:
                self._make_ready(obj)
            elif kind == 2:
                if tok == obj.probe_token:
                    obj.conn._on_probe_timer(obj, now)
            elif kind == 4:
                self._hint_check(None, now)      # MR-CC-010: a new sender left the window
            elif kind == 5:
                obj._on_progress_timer(now)
            elif kind == 6:
                obj._rnr_resend(*tok)
            elif kind == 7:
                self._quiet_check(now)          # MR-CC-027
            elif kind == 8:
                self._pull_next(now)            # MR-CC-027
            elif kind == 9:
                obj.conn._probe_turn(obj, *tok, now)     # MR-CC-032
            elif tok == obj.rx_ack_token and obj.rx_pending:
                self._send_ack(obj.conn, obj, *obj.rx_last)      # MR-SEQ-009: delayed ACK

    def _on_announce(self, c, f, now):
        """MR-CC-022: a connection announces that it starts sending: it is counted at once as an
        active sender of the current interval (MR-CC-005; not as an arrival of MR-CC-010, which
        its count replaces) and answered at once on the path the announcement names, with the
        hint of the new count; with ``announce_go``, the line rate when it is the only sender
        counted (the sender then leaves its first window at once, MR-CC-008). MR-SEC-157: only
        a connection from which nothing has arrived yet is counted and answered, once; a repeat
        or a path out of range is dropped and counted."""
        path = f.bth.psn
        if path >= len(c.paths):
            self._drop("announce_path")
            return
        if c.rx_iv_epoch != -2:
            self._drop("announce_repeat")       # announced, or data arrived, before
            return
        c.rx_more = True            # MR-CC-026: its data is due
        self._share_note(c, now, False, 0, True)
        p = c.paths[path]
        hint = self._rate_hint()
        if not hint and self.announce_go:
            hint = max(1, int(self.line_rate_bps // 1e6))       # MR-CC-022: "go"
        self._send_ack(c, p, (p.rx_cum - 1) & _PSN_MASK, f.udp.sport, hint)
        self.stats["announcements_answered"] += 1
        if not self.pull_first_lost:
            return
        self._silent[c.local_id] = (path, f.udp.sport)     # MR-CC-027: its data is due
        if 0 < hint < self.line_rate_bps // 1e6:
            self._last_announce = now   # MR-CC-036: answered with a paced hint
        if not self._quiet_armed:
            self._quiet_armed = True
            self._push(now + self._fresh_ns, 7, None, 0)

    def _quiet_check(self, now):
        """MR-CC-027: when no frame has arrived for ``NEW_SENDER_WINDOW`` MTU packet times (and,
        with ``count_wait``, MR-CC-036, one base RTT has passed since the latest announcement
        answered with a paced hint), the first data packet of every connection still silent since
        its announcement is lost: pull them, in the order of their announcements, one every MTU
        packet time (MR-CC-031)."""
        self._quiet_armed = False
        pending = [lid for lid in self._silent if lid not in self._pulling]
        if not pending:
            return
        quiet_at = self._last_rx + self._fresh_ns
        if self.count_wait:
            # MR-CC-036: first windows announced within the last base RTT may still be on
            # longer paths, behind queues that the receiver's port does not see
            quiet_at = max(quiet_at, self._last_announce + self._base_rtt_ns)
        if now < quiet_at:
            self._quiet_armed = True
            self._push(quiet_at, 7, None, 0)
            return
        start = not self._pullq
        self._pullq.extend(pending)
        self._pulling.update(pending)
        # MR-CC-031: one pull per MTU packet time at the line rate: each pulled sender paces
        # from its pull, so the pulls take the slots of the gap that the senders whose first
        # windows arrived (paced from their first ACK, MR-CC-028) left free
        self._pull_iv = self._pkt_bits_ns // self._rate
        if start:
            self._pull_next(now)

    def _pull_next(self, now):
        """MR-CC-027: pull the next connection whose first window was lost (an ACK of MR-CC-022
        on the announced path with FIRST_LOST), unless its data arrived meanwhile."""
        q = self._pullq
        while q:
            lid = q.popleft()
            self._pulling.discard(lid)
            ent = self._silent.pop(lid, None)
            c = self._conns.get(lid)
            if ent is None or c is None:
                continue
            p = c.paths[ent[0]]
            self._send_ack(c, p, (p.rx_cum - 1) & _PSN_MASK, ent[1], first_lost=True)
            self.stats["first_window_pulls"] += 1
            break
        if q:
            self._push(now + self._pull_iv, 8, None, 0)
        if self._silent and not self._quiet_armed:
            self._quiet_armed = True
            self._push(max(now, self._last_rx) + self._fresh_ns, 7, None, 0)

    def _share_note(self, c, now, ce, wire_bytes, announced=False):
        """MR-CC-005: count the senders active in the current interval.

        The interval is at least two packet times per sender counted last time, so that
        senders paced at their share (one packet per n packet times) are all seen.
        MR-CC-012: count each sender's wire bytes per interval; at the end of an interval find
        the demand-limited senders.
        """
        iv = self._share_iv
        if now - self._share_epoch >= iv:
            stale = now - self._share_epoch >= 2 * iv
            b0 = self._bcast_n
            self._demand_update(now - self._share_epoch, stale)
            self._share_prev = 0 if stale else len(self._share_seen)
            self._share_iv = self._share_iv_of(self._share_prev)
            self._share_prev_set = set() if stale else self._share_seen
            self._bcast_n = self._share_prev
            self._share_ce_frac = 0.0 if stale or not self._share_pkts else self._share_ce / self._share_pkts
            if stale:
                self._share_seen = set()
            else:
                # MR-CC-026: a sender seen in the interval with more of its message due (or
                # announced, nothing since) is counted in the next one too, seen or not: its
                # paced gaps stretch with the queue (MR-CC-020) beyond one interval, and a count
                # that lost it would raise every hint at once. Carried once only.
                conns = self._conns
                carry = self._share_carry
                self._share_seen = {lid for lid in self._share_seen
                                    if lid not in carry and lid in conns and conns[lid].rx_more}
            self._share_carry = set(self._share_seen)
            self._hosts_prev = set() if stale else self._hosts
            self._hosts = set()
            self._share_pkts = self._share_ce = 0
            self._share_epoch = now
            if self.announce and self._share_prev > b0 >= 2:
                # MR-CC-025: the count grew since the last update by less than half: the senders
                # hinted before it get the interval's count at its end
                self._bcast_n = self._share_prev
                self._hint_update(None)
        lid = c.local_id
        new = lid not in self._share_seen
        if new:
            self._share_seen.add(lid)
        elif lid in self._share_carry:
            self._share_carry.discard(lid)
        eid = self._share_eid
        if c.rx_iv_epoch != eid:
            c.rx_iv_prev = c.rx_iv_bytes if c.rx_iv_epoch == eid - 1 else 0
            c.rx_iv_bytes = 0
            c.rx_iv_epoch = eid
        c.rx_iv_bytes += wire_bytes
        if announced:               # MR-CC-022: counted, with no bytes, packets or prediction
            self._hosts.add(c.peer_addr)
            self._hint_check(c, now)
            return
        self._share_pkts += 1
        if ce:
            self._share_ce += 1
        # MR-CC-010: count the senders still to come at the rate new ones arrive. Only a new
        # host counts: connections of one host share its NIC, so they cannot outrun what the
        # receiver already sees of that host.
        host = c.peer_addr
        fresh_host = host not in self._hosts and host not in self._hosts_prev
        self._hosts.add(host)
        if new and fresh_host and lid not in self._share_prev_set:
            fr = self._fresh
            fr.append(now)
            if len(fr) >= 2:        # a prediction is made: recompute when each arrival leaves it
                w = self._fresh_ns
                if len(fr) == 2:
                    self._push(fr[0] + w, 4, None, 0)
                self._push(now + w, 4, None, 0)
        self._hint_check(c, now)

    def _share_iv_of(self, prev):
        """MR-CC-005: the share interval after one in which ``prev`` senders were counted."""
        return max(self._share_interval_ns, 2 * prev * self._pkt_bits_ns // self._rate)

    def _demand_update(self, iv_ns, stale):
        """MR-CC-012: the interval ``_share_eid`` (``iv_ns`` long) ends. A sender active in it or
        in the one before is demand-limited when the larger of its two byte counts is short of
        the level it was offered (``protocol.demand_limited``); a sender not seen in the earlier
        interval is not (its demand is not known yet). The limited senders' count and rate feed
        the water-filling hint (``protocol.fair_level_mbps``) of the next interval."""
        eid = self._share_eid
        self._share_eid = eid + 1
        self._n_lim = self._lim_mbps = 0
        if stale or iv_ns <= 0:
            return
        level = self._rate_hint() or self.line_rate_bps / 1e6 / max(1, len(self._share_seen))
        pkt = self.mtu + _WIRE_HDR
        conns = self._conns
        n_lim = lim = 0
        for lid in self._share_seen | self._share_prev_set:
            c = conns.get(lid)
            if c is None:
                continue
            known = P.demand_known(c.rx_hint_age)
            c.rx_hint_age = P.hint_age_next(c.rx_hint_age)
            if lid not in self._share_prev_set:
                continue            # first seen in this interval: demand unknown
            if not known:
                continue            # MR-CC-017: not yet two whole intervals under a hint
            if c.rx_iv_epoch == eid:
                now_b, prev_b = c.rx_iv_bytes, c.rx_iv_prev
            else:
                now_b, prev_b = 0, c.rx_iv_bytes if c.rx_iv_epoch == eid - 1 else 0
            used = max(now_b, prev_b)
            if P.demand_limited(used, int(level), iv_ns, pkt):
                n_lim += 1
                lim += used
        self._n_lim = n_lim
        self._lim_mbps = lim * 8000 // iv_ns

    def _hint_check(self, c, now):
        """MR-CC-009/010: recompute the predicted sender count; push hint updates when it grew
        by half (lower shares) or fell to two thirds (higher shares). Kept a method:
        models/rx_cases.py and models/cosim.py replace it to switch hint updates off."""
        fr = self._fresh        # MR-CC-010: new senders' arrivals within the window
        w = self._fresh_ns
        while fr and fr[0] <= now - w:
            fr.popleft()
        n = self._share_prev
        if n < (k := len(self._share_seen)):
            n = k
        if len(fr) >= 2:            # fewer new senders predict nothing (predicted_senders)
            n = P.predicted_senders(n, len(fr), P.NEW_SENDER_WINDOW, self._horizon_pkts)
        self._n_est = n
        b = self._bcast_n
        if c is not None and n >= 2 and 2 * n >= 3 * b:
            self._bcast_n = n
            self._hint_update(c)
        elif b >= 2 and 3 * n <= 2 * b:
            self._bcast_n = n
            self._hint_update(c, up=True)

    def _hint_update(self, newcomer, up=False):
        """MR-CC-009: the count of active senders grew by half since the last update: every other
        active sender whose last hint exceeds the new share by more than a quarter (or was 0, no
        limit) gets an ACK at once, on the path of its last ACK, carrying the new share.
        MR-CC-010: when the predicted count fell to two thirds (``up``), every sender whose last
        hint is below three quarters of the new share (or the new hint is 0) gets it at once."""
        hint = self._rate_hint()
        conns = self._conns
        for lid in self._share_seen | self._share_prev_set:
            c = conns.get(lid)
            if c is None or c is newcomer or c.rx_hint is None:
                continue
            h = c.rx_hint
            if (h != 0 and (hint == 0 or 4 * h < 3 * hint)) if up else (h == 0 or 4 * h > 5 * hint):
                p = c.rx_hint_path
                trig = (c.rx_hint_psn, c.rx_hint_sport)
                if c.receipt_key is not None and p.rx_pending and p.rx_last:
                    trig = p.rx_last    # MR-SEC-154: it acknowledges new packets: name the newest
                self._send_ack(c, p, *trig)
                self.stats["hint_updates"] += 1

    def _rate_hint(self):
        # MR-CC-005, MR-CC-012: the equal share, raised by what demand-limited senders leave;
        # kept until one of its inputs changes (it is asked for at every ACK)
        key = (self._n_est, self._share_ce_frac, self._n_lim, self._lim_mbps, self.line_rate_bps)
        if key != self._hint_key:
            self._hint_key = key
            self._hint_val = P.fair_level_mbps(self.line_rate_bps, self._n_est, self._share_ce_frac,
                                               min(self._n_lim, self._n_est - 1), self._lim_mbps)
        return self._hint_val

    def _send_ack(self, c, p, trigger_psn, sport, hint=None, first_lost=False):
        """MR-SEQ-009, MR-SEQ-010, MR-WIRE-073: one ACK for one path; ``hint``: the rate it
        carries instead of the fair share (MR-CC-022)."""
        ce = p.rx_ce
        if hint is None:
            hint = self._rate_hint()
        c.rx_hint, c.rx_hint_path, c.rx_hint_psn, c.rx_hint_sport = hint, p, trigger_psn, sport
        if hint and not c.rx_hint_age:
            c.rx_hint_age = 1       # MR-CC-017: the first non-zero hint
        p.rx_ce = 0
        p.rx_pending = 0
        p.rx_ack_token += 1
        self._ctrl.append(ack_frame(self.addr, c.peer_addr, c.pkey, c.peer_id, sport, p.idx, p.rx_cum,
                                    p.rx_sack, ce, hint, trigger_psn, c.receipt_key, first_lost))
        self.stats["acks_sent"] += 1

    def _nak(self, c, f, path, reason):
        """MR-ERR-001: NAK a bad request with its reason; the packet is dropped and counted."""
        self._drop(NakReason(reason).name.lower())
        self._ctrl.append(nak_frame(self.addr, c.peer_addr, c.pkey, c.peer_id, f.udp.sport, path, reason,
                                    f.bth.psn, c.receipt_key))
        self.stats["naks_sent"] += 1


def ack_frame(addr, peer_addr, pkey, peer_id, sport, path, cum, sack, ce, rate_mbps, trigger_psn,
              receipt_key=None, first_lost=False):
    """MR-SEQ-009, MR-SEQ-010, MR-WIRE-073: the ACK frame a receiver sends for one path from its
    state: cumulative PSN ``cum``, the SACK bitmap, ``ce`` CE-marked packets since the last ACK
    (ECE set when any), the rate hint (Mb/s, 0 none), the PSN and UDP source port of the packet
    that triggers it. With ``receipt_key`` the proof binds every field (MR-SEC-153). The one
    ACK encoding: the endpoint's ``_send_ack`` and the engine co-simulation
    (:mod:`metaroce.models.cosim`, from the RTL's ``m_ack`` records) both build ACKs here."""
    bth_psn = 0
    a = _new(MRAH)              # field by field, in order, as _data_frame builds its records
    a.version = 1
    a.flags = (_MRAH_ECE if ce else 0) | (_MRAH_FIRST_LOST if first_lost else 0)     # MR-CC-027
    a.path = path
    a.ce_count = ce if ce <= 0xFFFF else 0xFFFF      # min(ce, 0xFFFF), written out (every ACK)
    a.cum_psn = cum
    a.rate_mbps = rate_mbps
    a.trigger_psn = trigger_psn
    a.sack = sack
    if receipt_key is not None:       # MR-SEC-153: the proof binds every field of the ACK
        bth_psn, a.trigger_psn = split_proof(receipt_proof(receipt_key, PROOF_ACK, peer_id, path,
                                                           trigger_psn, a), trigger_psn)
    ip = _ACK_IP.get((addr, peer_addr))
    if ip is None:
        if len(_ACK_IP) > 1 << 16:
            _ACK_IP.clear()
        ip = _ACK_IP[(addr, peer_addr)] = IP(src=addr, dst=peer_addr, ecn=0)
    u = _UDP_HDR.get(sport)
    if u is None:
        u = _UDP_HDR[sport] = UDP(sport=sport)
    bth = _new(BTH)
    bth.opcode = _OP_ACK
    bth.se = bth.mig = bth.pad = bth.tver = 0
    bth.pkey = pkey
    bth.fecn = bth.becn = 0
    bth.dest_qp = peer_id
    bth.ack_req = 0
    bth.psn = bth_psn
    f = _new(Frame)
    f.eth = _ACK_ETH
    f.ip = ip
    f.udp = u
    f.bth = bth
    f.reth = f.aeth = f.imm = f.atomicack = f.atomiceth = f.mrdh = f.mrsh = None
    f.mrah = a
    f.mrnh = f.mrsec = f.mrch = None
    f.payload = b""
    f.icrc = f.icrc_ok = None
    return f


def nak_frame(addr, peer_addr, pkey, peer_id, sport, path, reason, psn, receipt_key=None):
    """MR-ERR-001, MR-WIRE-074: the NAK frame refusing the packet ``psn`` of ``path`` with
    ``reason`` (a :class:`NakReason`), to the request's UDP source port; with ``receipt_key`` the
    proof binds it (MR-SEC-153). Shared with :mod:`metaroce.models.cosim` as :func:`ack_frame`."""
    bth_psn = 0
    if receipt_key is not None:       # MR-SEC-153
        bth_psn, psn = split_proof(receipt_proof(receipt_key, PROOF_NAK, peer_id, path, psn), psn)
    return Frame(eth=Eth(), ip=IP(src=addr, dst=peer_addr, ecn=0), udp=UDP(sport=sport),
                 bth=BTH(opcode=_OP_NAK, pkey=pkey, dest_qp=peer_id, psn=bth_psn),
                 mrnh=MRNH(1, 0, path, int(reason), psn))


__all__ = ["Endpoint", "Connection", "Completion", "Status", "WcOpcode", "ack_frame", "nak_frame",
           "ACCESS_ALL", "ACCESS_LOCAL_WRITE", "ACCESS_REMOTE_WRITE", "ACCESS_REMOTE_READ", "ACCESS_REMOTE_ATOMIC"]
