"""Golden model of the TX scheduler (docs/spec/hw-tx-sched.md, MR-TXS-*): work requests in,
per-stream queues, round robin over connections and streams, resends first, chunking at the
MTU, a PSN per path, path choice by window room; frame requests and sent events out. READ
responses (the responder side, MR-TXS-066..072) come on ``s_rsp`` into the last stream's ring
and leave a record on ``m_rsp_done``.

Two layers, both built on :mod:`metaroce.models.protocol` (``chunk_count``, ``chunk_bytes``,
``chunk_ack``, ``chunk_window_open``, ``psn_add``):

* :class:`TxSchedModel`: the semantics, one event per call (a work request, an acknowledged or
  lost record reported by the retransmit unit, a completion, one scheduling decision). It keeps
  the RTL's structures (a ring of message entries per stream, pointers, per-path counters), so
  the RTL mirrors it field by field.
* :class:`TxSchedCycleModel`: the block cycle by cycle, ``step(inputs) -> outputs`` with the
  Verilog port names, for the lockstep harness (tb/lockstep.py): one action per cycle in a fixed
  priority (MR-TXS-030) and the output queues.

The port layouts are declared here and imported by the RTL (hdl/tx_sched.py); models/ never
imports hdl/.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from amaranth.lib import data

from . import pacer as pacer_model
from . import protocol as P
from . import records
from . import retransmit as rtx_model
from .fifo import SyncFifoModel
from .rx import pack, unpack
from .wire import MrdhFlag, Op

__all__ = ["Layouts", "layouts", "check_params", "TxSchedModel", "TxSchedCycleModel", "SMALL",
           "OP_WRITE", "OP_WRITE_IMM", "OP_SEND", "OP_SEND_IMM", "OP_READ", "is_send", "has_imm",
           "OP_READ_RESP", "is_read", "is_rsp", "msg_len", "wire_op", "rsp_item", "WIRE_HDR",
           "packet_wl",
           "OP_CMP_SWAP", "OP_FETCH_ADD", "ATOMIC_LEN", "is_atomic", "atomic_operands",
           "STATUS_OK", "STATUS_LOC_LEN_ERR", "STATUS_LOC_QP_OP_ERR",
           "STATUS_LOC_PROT_ERR", "STATUS_RETRY_EXC_ERR", "OUT_DEPTH", "tx_sched_model_small",
           "INPUTS", "OUTPUTS", "PATH_ACTIVE", "PATH_PROBING", "PATH_RETIRED", "path_state_after",
           "restore_layout", "RESTORE_INPUTS", "RESTORE_OUTPUTS"]

#: MR-TXS-002, MR-TXS-057, MR-TXS-061, MR-TXS-096: work-request opcodes (records.TX_MSG ``op``:
#: write, write with immediate, send, send with immediate, READ, compare-and-swap, fetch-and-add;
#: 7 is refused).
OP_WRITE, OP_WRITE_IMM, OP_SEND, OP_SEND_IMM, OP_READ = 0, 1, 2, 3, 4
OP_CMP_SWAP, OP_FETCH_ADD = 5, 6
#: MR-TXS-096: an atomic's length (its RETH DMA length, the 8 bytes of the original value it
#: returns, MR-VERB-010); a work request of another length is refused (LOC_LEN_ERR)
ATOMIC_LEN = 8
#: MR-TXS-066: a READ response's entry (records.TX_MSG's "response"); it comes on ``s_rsp``,
#: never from ``s_wr`` (where op 7 stays refused, MR-TXS-011)
OP_READ_RESP = 7
#: MR-TXS-011: completion statuses (verbs IBV_WC_* numbers, as endpoint.Status).
STATUS_OK = 0
STATUS_LOC_LEN_ERR = 1          # the message has more chunks than a chunk index names
STATUS_LOC_QP_OP_ERR = 2        # an opcode this slice does not send, or a stream beyond the instance
#: MR-TXS-027: failed messages (endpoint.Status): a payload read came back with an error; the
#: connection's retry limit (MR-ENG-040).
STATUS_LOC_PROT_ERR = 4
STATUS_RETRY_EXC_ERR = 12
#: MR-TXS-113: a path's state (MR-PATH-002/003): active, probing (one packet at a time, no
#: resend, until an acknowledged report of the path); retired (no data) is designed, not
#: entered in this slice (MR-TXS-120)
PATH_ACTIVE, PATH_PROBING, PATH_RETIRED = 0, 1, 2
#: MR-TXS-121: a path's entropy generation, counted modulo 16
GEN_BITS = 4

#: MR-TXS-031: slots of each output queue.
OUT_DEPTH = 4
#: MR-TXS-001: the small instance's parameters.
SMALL = dict(conns=2, streams=2, paths=4, depth=4, chunk_window=16, mtu=1024, cwnd=12_500,
             conn_window=50_000, path_pkts=32, ack_every=4, resend_depth=8)
#: MR-TXS-057: the wire opcode of each work-request opcode is 0xC0 + op
#: (MR-TXS-063: and READ's is MR_READ 0xC6, the RTL's 0xC0 | {op2, op1 | op2, op0};
#: MR-TXS-098: the atomics' MR_CMP_SWAP 0xC8 and MR_FETCH_ADD 0xC9, the RTL's 0xC8 | op1)
_WIRE_OP = {OP_WRITE: int(Op.MR_WRITE), OP_WRITE_IMM: int(Op.MR_WRITE_IMM),
            OP_SEND: int(Op.MR_SEND), OP_SEND_IMM: int(Op.MR_SEND_IMM), OP_READ: int(Op.MR_READ),
            OP_CMP_SWAP: int(Op.MR_CMP_SWAP), OP_FETCH_ADD: int(Op.MR_FETCH_ADD)}
assert all(v == (int(Op.MR_CMP_SWAP) | (k >> 1 & 1) if k >> 2 & 1 and (k ^ k >> 1) & 1
                 else int(Op.MR_WRITE) | (k & 1) | ((k >> 1 | k >> 2) & 1) << 1 | (k >> 2) << 2)
           for k, v in {**_WIRE_OP, OP_READ_RESP: int(Op.MR_READ_RESP)}.items())


#: MR-TXS-175: a packet's wire bytes beyond its payload (padded to 4), per work-request op: the
#: endpoint's ``wire_len`` of its frame (Ethernet, IPv4 untagged, UDP, BTH, the opcode's
#: extension headers, ICRC; the template's form that the pacer's ``mtu_wl`` assumes too)
def _wire_hdr(op):
    from . import wire
    return (wire.ETH_HLEN + wire.IPV4_HLEN + wire.UDP_HLEN + wire.BTH_LEN
            + wire.ext_len(wire_op(op)) + wire.ICRC_LEN)


def packet_wl(op, nbytes):
    """MR-TXS-175: the wire length of a packet of ``nbytes`` payload bytes of a work request of
    ``op``: :data:`WIRE_HDR` and the payload padded to 4 bytes (the endpoint's ``wire_len``)."""
    return WIRE_HDR[op] + nbytes + (-nbytes) % 4


def wire_op(op):
    """MR-TXS-057, MR-TXS-063: the BTH opcode of a work request's packets; MR-TXS-068: a READ
    response's MR_READ_RESP (0xC7, the same formula)."""
    return int(Op.MR_READ_RESP) if op == OP_READ_RESP else _WIRE_OP[op]


WIRE_HDR = {op: _wire_hdr(op) for op in range(8)}


def is_rsp(f):
    """MR-TXS-066: a READ response's entry (taken from ``s_rsp``)."""
    return bool(f.get("rsp"))


def rsp_item(r, streams):
    """MR-TXS-066/067: a READ response ``r`` of ``s_rsp`` (``{conn, stream, msg, laddr, length,
    err}``) as the work-request register holds it: op READ_RESP in the ring of the last stream
    (``streams - 1``, MR-TXS-067), the requester's stream in ``wr_id``'s place and its message
    number in ``msg``; no VA, key or immediate; an ``err`` response a message of length 0
    (one packet, flag ERROR, MR-VERB-004)."""
    return {"op": OP_READ_RESP, "conn": r["conn"], "stream": streams - 1, "wr_id": r["stream"],
            "laddr": r["laddr"], "va": 0, "rkey": 0, "length": 0 if r["err"] else r["length"],
            "imm": 0, "rsp": 1, "msg": r["msg"], "err": r["err"]}


def path_state_after(state, verdict):
    """MR-TXS-114: a path's state after a timeout's verdict (hw-tx.md MR-TX-197, the endpoint's
    ``_verdict``): suspected, probing; MR-TXS-120: retired, probing too (without the unit's
    probe timer, hw-tx.md section 1.5c, a retired path would never be probed); a reroute or congestion
    keeps the state."""
    if verdict in (P.PATH_SUSPECT, P.PATH_RETIRE):
        return PATH_PROBING
    return state


def is_read(op):
    """MR-TXS-061: a READ work request."""
    return op == OP_READ


def is_atomic(op):
    """MR-TXS-096: a compare-and-swap or fetch-and-add work request."""
    return op in (OP_CMP_SWAP, OP_FETCH_ADD)


def atomic_operands(op, swap, compare):
    """MR-TXS-098, MR-WIRE-076: an atomic request's payload, its operands in network order
    (the swap or add value, then a compare-and-swap's compare value), as the reference
    endpoint's ``post_atomic`` builds it; ``b""`` for any other op."""
    if op == OP_CMP_SWAP:
        return swap.to_bytes(8, "big") + compare.to_bytes(8, "big")
    return swap.to_bytes(8, "big") if op == OP_FETCH_ADD else b""


def msg_len(op, length):
    """MR-TXS-062: the length of the message a work request sends: a READ request carries no
    payload (its ``length`` is the READ's, RETH's DMA length); MR-TXS-097: an atomic its
    operands (16 bytes for compare-and-swap, 8 for fetch-and-add); every other op its
    ``length``."""
    if is_atomic(op):
        return len(atomic_operands(op, 0, 0))
    return 0 if op == OP_READ else length


def is_send(op):
    """MR-TXS-057: a SEND or SEND_IMM work request (op's bit 1 of the four sent ops)."""
    return op in (OP_SEND, OP_SEND_IMM)


def has_imm(op):
    """MR-TXS-059: a WRITE_IMM or SEND_IMM (op's bit 0): its packets carry the immediate."""
    return op in (OP_WRITE_IMM, OP_SEND_IMM)


_STREAM_FIELD = 16              # MRDH stream is 16 bits (MR-WIRE-071)


def _pow2(name, v, lo, hi):
    if not isinstance(v, int) or v < lo or v > hi or v & (v - 1):
        raise ValueError(f"{name} must be a power of two in [{lo}, {hi}], not {v!r}")


def late_cap_of(depth, late_cap=None):
    """MR-TXS-495: the quiet count at which a path's late reports stop counting their chunks:
    by default 2^LAP_BITS x depth - depth + 1, the fewest completions of a stream after which
    its slot's present message can have a late report's lap and not be its message
    (MR-TXS-496); ``late_cap`` a smaller one (tests: the same bound reached sooner)."""
    full = (1 << records.LAP_BITS) * depth - depth + 1
    return full if late_cap is None else late_cap


def check_params(conns, streams, paths, depth, chunk_window, mtu, cwnd, conn_window, path_pkts,
                 ack_every, resend_depth, late_cap=None):
    """MR-TXS-001: sizes are powers of two (an index is a concatenation of bits); a message
    slot (stream, ring entry) fits the 3-bit ``tx_slot`` of the retransmit record; windows fit
    the 24-bit byte counters with one MTU to spare."""
    _pow2("conns", conns, 2, 256)
    _pow2("streams", streams, 2, 8)
    _pow2("paths", paths, 2, 16)
    _pow2("depth", depth, 2, 4)
    _pow2("chunk_window", chunk_window, 2, 64)
    _pow2("mtu", mtu, 256, 4096)
    _pow2("resend_depth", resend_depth, 2, 64)
    if streams * depth > records.TX_MSGS:
        raise ValueError(f"streams x depth must be at most {records.TX_MSGS} (the 3-bit message "
                         f"slot), not {streams * depth}")
    lim = (1 << records.BYTES_BITS) - 1 - mtu
    for name, v in (("cwnd", cwnd), ("conn_window", conn_window)):
        if not isinstance(v, int) or not 1 <= v <= lim:
            raise ValueError(f"{name} must be in [1, {lim}], not {v!r}")
    if not isinstance(path_pkts, int) or not 1 <= path_pkts < P.SEND_WINDOW:
        raise ValueError(f"path_pkts must be in [1, {P.SEND_WINDOW - 1}], not {path_pkts!r}")
    if not isinstance(ack_every, int) or not 1 <= ack_every <= 15:
        raise ValueError(f"ack_every must be in [1, 15], not {ack_every!r}")
    # MR-TXS-495: a smaller cap is as safe (fewer late chunks counted); a larger one is not
    full = late_cap_of(depth)
    if late_cap is not None and (not isinstance(late_cap, int) or not 1 <= late_cap <= full):
        raise ValueError(f"late_cap must be in [1, {full}], not {late_cap!r}")


@dataclass(frozen=True)
class Layouts:
    conns: int
    streams: int
    paths: int
    depth: int
    conn_bits: int
    wr: data.StructLayout
    cqe: data.StructLayout
    frame: data.StructLayout
    sent: data.StructLayout
    report: data.StructLayout
    fail: data.StructLayout
    error: data.StructLayout
    cwnd: data.StructLayout
    rsp: data.StructLayout
    rsp_done: data.StructLayout
    probe: data.StructLayout
    rd: data.StructLayout
    acked: data.StructLayout    # MR-TXS-445: s_acked's, ``report`` and ``late``
    psn: data.StructLayout      # MR-TXS-465: an initial-PSN write {conn, path, psn}


def layouts(conns=SMALL["conns"], streams=SMALL["streams"], paths=SMALL["paths"],
            depth=SMALL["depth"]):
    """The block's port layouts (MR-TXS-002)."""
    cb = (conns - 1).bit_length()
    rl = rtx_model.layouts(conns, paths, 1024)
    # MR-TXS-096: an atomic's operands after the fields of the other ops (whose bits stay)
    wr = data.StructLayout({"op": 3, "conn": cb, "stream": _STREAM_FIELD, "wr_id": 16,
                            "laddr": 64, "va": 64, "rkey": 32, "length": 32, "imm": 32,
                            "swap": 64, "compare": 64})
    cqe = data.StructLayout({"conn": cb, "stream": _STREAM_FIELD, "wr_id": 16, "status": 5,
                             "op": 3, "length": 32})
    # MR-TXS-040: the fields named as the frame builder's descriptor (models/frame_builder.py
    # DESC_LAYOUT) have its widths; the per-connection template supplies the rest
    frame = data.StructLayout({"conn": cb, "laddr": 64, "bth_opcode": 8, "bth_ack_req": 1,
                               "bth_psn": 24, "mrdh_flags": 4, "mrdh_path": 8,
                               "mrdh_stream": _STREAM_FIELD, "mrdh_msg": 32, "mrdh_offset": 32,
                               "mrdh_msg_len": 32, "reth_va": 64, "reth_rkey": 32,
                               "reth_dma_len": 32, "mrsh_recv_seq": 32, "imm_imm": 32,
                               "payload_len": 14,
                               # MR-TXS-069: the message slot (not a descriptor field): the
                               # data path's read errors name it (m_fail)
                               "slot": 3,
                               # MR-TXS-098: an atomic's operands (not descriptor fields: the
                               # join stage makes them its payload, hw-tx.md MR-TX-191)
                               "swap": 64, "compare": 64,
                               # MR-TXS-121: the path's entropy generation (the join stage's
                               # UDP source port, protocol.entropy_next)
                               "gen": GEN_BITS,
                               # MR-TXS-411: the slot's entry's lap (MR-TXS-142), which the
                               # data path's read errors return (m_fail); last, so that every
                               # other field keeps its bits
                               "lap": records.LAP_BITS})
    # MR-TXS-027: a message's failure (the data path's read error) and a connection's (the
    # retransmit unit's ``m_error``)
    # MR-TXS-411: with the lap of the frame request whose read failed
    fail = data.StructLayout({"conn": cb, "slot": 3, "status": 5, "lap": records.LAP_BITS})
    # MR-TXS-028: a path's window, the fields conn, path, cwnd of the Cwnd block's m_update
    cwnd = data.StructLayout({"conn": cb, "path": (paths - 1).bit_length(),
                              "cwnd": records.BYTES_BITS})
    # MR-TXS-066: a READ response to send (the RX's, at the READ's delivery point); MR-TXS-070:
    # its last chunk acknowledged (or its failure), the responder resource to free
    rsp = data.StructLayout({"conn": cb, "stream": _STREAM_FIELD, "msg": 32, "laddr": 64,
                             "length": 32, "err": 1})
    rsp_done = data.StructLayout({"conn": cb, "stream": _STREAM_FIELD, "msg": 32, "status": 5})
    # MR-TXS-106: a READ queued (``rd_rows=True``): its outstanding-read row's fields
    rd = data.StructLayout({"conn": cb, "stream": _STREAM_FIELD, "msg": 32, "laddr": 64,
                            "length": 32, "wr_id": 16})
    # MR-TXS-079: a tail probe, the retransmit unit's m_probe {conn, path, psn}
    # MR-TXS-465: a path row's initial PSN (MR-CONN-107), the widths of ``s_cwnd``'s fields
    psn = data.StructLayout({"conn": cb, "path": (paths - 1).bit_length(), "psn": 24})
    return Layouts(conns, streams, paths, depth, cb, wr, cqe, frame, rl.sent, rl.resend, fail,
                   rl.error, cwnd, rsp, rsp_done, rl.probe, rd, rl.acked, psn)


def restore_layout(conns=SMALL["conns"], paths=SMALL["paths"]):
    """MR-TXS-183: ``m_restore``'s record ``{conn, path}``, the widths of ``s_cwnd``'s fields;
    MR-TXS-348: and ``kept`` (its top bit), 1 for a verdict taken as a reroute (MR-TXS-347), the
    rows' record too (MR-TXS-316)."""
    return data.StructLayout({"conn": (conns - 1).bit_length(),
                              "path": (paths - 1).bit_length(), "kept": 1})


class TxSchedModel:
    """The scheduler's semantics, one event per call (MR-TXS-010..014, MR-TXS-020..026)."""

    def __init__(self, conns=SMALL["conns"], streams=SMALL["streams"], paths=SMALL["paths"],
                 depth=SMALL["depth"], *, chunk_window=SMALL["chunk_window"], mtu=SMALL["mtu"],
                 cwnd=SMALL["cwnd"], conn_window=SMALL["conn_window"],
                 path_pkts=SMALL["path_pkts"], ack_every=SMALL["ack_every"],
                 resend_depth=SMALL["resend_depth"], pacing=False, pace_ignored=False,
                 pace_full_only=False, last_active_kept=False, late_cap=None, late_guard=True):
        check_params(conns, streams, paths, depth, chunk_window, mtu, cwnd, conn_window,
                     path_pkts, ack_every, resend_depth, late_cap)
        self.conns, self.streams, self.paths, self.depth = conns, streams, paths, depth
        # MR-TXS-490: ring positions modulo 2^LAP_BITS x depth (an entry's lap its top bits)
        self.ring_mod = (1 << records.LAP_BITS) * depth
        # MR-TXS-495: a path's quiet count saturates here; its late reports count no chunk then
        self.late_cap = late_cap_of(depth, late_cap)
        # MR-TXS-486 (negative control only): late_guard=False, live46's rule (no quiet count)
        self.late_guard = bool(late_guard)
        self.late_refused = 0           # MR-TXS-495: late reports refused by the count (tests)
        # MR-TXS-290: a suspicion or retirement of a connection's last active path is a reroute
        # (the register scheduler's cycle model and the endpoint replay set it; the row
        # scheduler, section 16, keeps the rule before it, and False is MR-TXS-296's control)
        self.last_active_kept = bool(last_active_kept)
        # MR-TXS-159/160: with pacing, per connection the pacing condition's state (a turn asked
        # for and not back, the m_pace request, waiting for `seen`, the charged packet's time);
        # ``pace_ignored`` (negative controls only): the condition left out of the decision;
        # MR-TXS-175/176: the charged packet's wire length and whether the connection is paced;
        # ``pace_full_only`` (negative controls only): the full-MTU packets charged only
        self.pace = ([{"pend": 0, "ask": 0, "late": 0, "seen": 0, "t_ask": 0, "wl": 0,
                       "paced": 0} for _ in range(conns)] if pacing else None)
        self.pace_ignored, self.pace_full_only = pace_ignored, pace_full_only
        self.chunk_window, self.mtu, self.cwnd, self.conn_window = chunk_window, mtu, cwnd, conn_window
        self.path_pkts, self.ack_every, self.resend_depth = path_pkts, ack_every, resend_depth
        self.lay = layouts(conns, streams, paths, depth)
        # MR-TXS-012: one ring of message entries per (connection, stream)
        # MR-TXS-058: and its receive sequence, the recv_seq of its next SEND
        self.q = [{"ring": [None] * depth, "tail": 0, "send": 0, "done": 0, "msg_next": 0,
                   "send_seq": 0} for _ in range(conns * streams)]
        # MR-TXS-013: per connection; MR-CONN-004: each starts its path rotation at conn mod paths;
        # MR-TXS-460: a resend FIFO entry is (slot, chunk, stale), stale set when its message
        # completes
        self.conn = [{"rr": c % paths, "srr": 0, "inflight": 0, "unsent": 0, "retx": deque()}
                     for c in range(conns)]
        # MR-TXS-014: per path; MR-TXS-028: its window, from the cwnd parameter at reset;
        # MR-TXS-080: its newest packet's record (entry, slot, chunk), for a tail probe
        # MR-TXS-113: its state and its collapsed bit (a reroute's window of one MTU, MR-TXS-115)
        self.path = [{"next_psn": 0, "inflight": 0, "pkts": 0, "since_req": 0, "cwnd": cwnd,
                      "tail": None, "state": PATH_ACTIVE, "col": 0, "gen": 0,
                      # MR-TXS-184: a restore not yet given on m_restore (``restores`` only);
                      # MR-TXS-347: a kept verdict's record not yet given (the cycle model's)
                      "rst": 0, "kpt": 0,
                      # MR-TXS-495: the connection's completions since the path's last
                      # acknowledged report not late (saturating at late_cap)
                      "quiet": 0}
                     for _ in range(conns * paths)]
        self.cwnd_max = (1 << records.BYTES_BITS) - 1 - mtu
        self.conn_rr = 0
        self.pending = None             # MR-TXS-036: (entry, chunk) acknowledged, not yet counted

    # -- helpers
    def qi(self, conn, stream):
        return conn * self.streams + stream

    def _count(self, q):
        return (q["tail"] - q["done"]) % self.ring_mod

    def live(self, qi, idx):
        """Ring entry ``idx`` holds a message posted and not completed (MR-TXS-012)."""
        q = self.q[qi]
        return (idx - q["done"]) % self.depth < self._count(q)

    def entry_of(self, conn, slot, lap=None):
        """The entry a report's message slot names (slot = stream x depth + ring index,
        MR-TXS-012), or None; with ``lap``, None also when the entry's ring lap is not ``lap``
        (MR-TXS-142: a late report of the slot's previous message)."""
        s, i = divmod(slot, self.depth)
        if s >= self.streams or not self.live(self.qi(conn, s), i):
            return None
        e = self.q[self.qi(conn, s)]["ring"][i]
        return None if lap is not None and e["lap"] != lap else e

    def chunk_acked(self, e, chunk):
        d = chunk - e["ack_base"]
        return d < 0 or bool((e["ack_bits"] >> d) & 1)

    # -- work requests (MR-TXS-010, MR-TXS-011)
    def wr_status(self, f):
        if is_rsp(f):
            return STATUS_OK            # MR-TXS-067: a response is never refused
        if f["op"] not in _WIRE_OP or f["stream"] >= self.streams:
            return STATUS_LOC_QP_OP_ERR
        if is_atomic(f["op"]):
            # MR-TXS-096: an atomic names 8 bytes
            return STATUS_LOC_LEN_ERR if f["length"] != ATOMIC_LEN else STATUS_OK
        if P.chunk_count(f["length"], self.mtu) > 1 << records.CHUNK_BITS:
            return STATUS_LOC_LEN_ERR
        return STATUS_OK

    def wr_room(self, f):
        """A good work request needs a free entry in its stream's ring (MR-TXS-010)."""
        if self.wr_status(f):
            return True
        return self._count(self.q[self.qi(f["conn"], f["stream"])]) < self.depth

    def cqe_of(self, f, status):
        if is_rsp(f):
            # MR-TXS-070: the responder's record, in the completion queue's entry (the
            # requester's stream in both stream and wr_id, the message number in length's place)
            return {"conn": f["conn"], "stream": f["wr_id"], "wr_id": f["wr_id"],
                    "status": status, "op": OP_READ_RESP, "length": f["msg"], "rsp": 1}
        return {"conn": f["conn"], "stream": f["stream"], "wr_id": f["wr_id"], "status": status,
                "op": f["op"], "length": f["length"]}

    def wr(self, f):
        """Take a work request: a bad one returns its error completion at once (MR-TXS-011); a
        good one is queued (returns None), a SEND or SEND_IMM with its stream's next receive
        sequence (MR-TXS-058)."""
        st = self.wr_status(f)
        if st:
            return self.cqe_of(f, st)
        q = self.q[self.qi(f["conn"], f["stream"])]
        n = P.chunk_count(msg_len(f["op"], f["length"]), self.mtu)       # MR-TXS-062: a READ 1
        rs = 0
        rsp = is_rsp(f)
        if rsp:
            # MR-TXS-067: the requester's message number, not the stream's; a response
            # is not counted in the chunk index bound (MR-TXS-061 bounds the READ)
            if n > 1 << records.CHUNK_BITS:
                raise ValueError(f"a READ response of {f['length']} bytes exceeds the chunk index")
        elif is_send(f["op"]):
            rs = q["send_seq"]
            q["send_seq"] = (rs + 1) & 0xFFFFFFFF
        # MR-TXS-142: ``lap``, the entry's ring lap (its position's top bits, tail being kept
        # mod 2^LAP_BITS x depth, MR-TXS-490), carried by its packets' records and their reports
        q["ring"][q["tail"] % self.depth] = dict(
            f, msg=f["msg"] if rsp else q["msg_next"], recv_seq=rs, nchunks=n, next_chunk=0,
            ack_base=0, ack_bits=0, status=0, out=0, lap=q["tail"] // self.depth,
            lnq=set())                  # MR-TXS-241: its chunks lost, not queued
        q["tail"] = (q["tail"] + 1) % self.ring_mod
        if not rsp:
            q["msg_next"] = (q["msg_next"] + 1) & 0xFFFFFFFF
        self.conn[f["conn"]]["unsent"] += n
        return None

    # -- reports of the retransmit unit (MR-TXS-020, MR-TXS-021)
    def resend_room(self, f, held=0):
        """Room in the report's connection's resend FIFO, ``held`` entries already promised."""
        return len(self.conn[f["conn"]]["retx"]) + held < self.resend_depth

    def report(self, f, lost, window=True):
        """An acknowledged (``lost`` False) or lost record: its bytes leave the path's and the
        connection's flight; an acknowledged chunk is counted (``chunk_ack``); a lost chunk not
        yet acknowledged is queued for resend. A report whose slot, chunk or path names nothing
        sent is ignored. Returns True when it changed state. With ``window`` False the
        acknowledged chunk is not counted here: ``self.pending`` holds ``(entry, chunk)`` for
        :meth:`apply_window` (MR-TXS-036)."""
        c, p = f["conn"], f["path"]
        if p < self.paths and not lost:
            # MR-TXS-116: an ACK acknowledged a packet of the path (whatever its message's state
            # now): active, its window its own; MR-TXS-184: a probing path's restore is pending
            ps = self.path[c * self.paths + p]
            if ps["state"] != PATH_ACTIVE:
                ps["rst"] = 1
            ps.update(state=PATH_ACTIVE, col=0)
        e = self.entry_of(c, f["slot"], f.get("lap", 0))
        if p >= self.paths or e is None or f["chunk"] >= e["next_chunk"]:
            return False
        ps = self.path[c * self.paths + p]
        if f.get("late"):
            # MR-TXS-491: a late report (its record a timeout reported lost) of the slot's
            # present message (its lap the entry's, MR-TXS-490) counts its chunk acknowledged
            # and releases nothing (its packet left the flight with the lost report, MR-TXS-447)
            # MR-TXS-495: only while its path's quiet count is below the cap (else the entry
            # may be a later message with the report's lap: nothing, as before MR-TXS-491)
            if self.late_guard and ps["quiet"] >= self.late_cap:
                self.late_refused += 1
                return False
            if not window:
                self.pending = (e, f["chunk"])
            else:
                self.apply_window((e, f["chunk"]))
            if "lnq" in e:
                e["lnq"].discard(f["chunk"])
            return True
        nbytes = P.chunk_bytes(msg_len(e["op"], e["length"]), f["chunk"], self.mtu)
        cs = self.conn[c]
        if not lost and not f.get("hush"):
            # MR-TXS-495: an acknowledged report not late: its ACK resolved its path's whole
            # lost prefix (MR-TX-504), so no record of it sent before can be reported late
            # (``hush``: taken after a lost report that overtook it, MR-TXS-497: no zero)
            ps["quiet"] = 0
        ps["inflight"] = max(0, ps["inflight"] - nbytes)
        ps["pkts"] = max(0, ps["pkts"] - 1)
        cs["inflight"] = max(0, cs["inflight"] - nbytes)
        e["out"] = max(0, e["out"] - 1)
        if not lost and "lnq" in e:
            # MR-TXS-242: acknowledged, not to resend (the row scheduler's entries have no set:
            # its lost reports wait for room, MR-TXS-217)
            e["lnq"].discard(f["chunk"])
        if not lost and not window:
            self.pending = (e, f["chunk"])
        elif not lost:
            self.apply_window((e, f["chunk"]))
        elif not self.chunk_acked(e, f["chunk"]) and not e["status"]:
            if len(cs["retx"]) < self.resend_depth:
                cs["retx"].append((f["slot"], f["chunk"], 0))
            else:
                # MR-TXS-241: the FIFO full: its flight is released all the same (above), the
                # chunk kept in its entry's lost-not-queued set until the FIFO has room
                e["lnq"].add(f["chunk"])
        return True

    def refill_pick(self):
        """MR-TXS-243: the lost-not-queued chunk to move into its connection's resend FIFO, or
        None: the lowest connection whose FIFO has room with a live entry that is not failed
        and has one, its lowest such entry (slot order), that entry's chunk lowest modulo
        ``chunk_window`` (its bit in the RTL's per-entry set): ``(conn, slot, chunk)``."""
        for c, cs in enumerate(self.conn):
            if len(cs["retx"]) >= self.resend_depth:
                continue
            for slot in range(self.streams * self.depth):
                e = self.entry_of(c, slot)
                if e is not None and e["lnq"] and not e["status"]:
                    return c, slot, min(e["lnq"], key=lambda k: k % self.chunk_window)
        return None

    def refill(self, pick):
        """MR-TXS-243: ``refill_pick``'s chunk leaves its entry's set for the FIFO's tail."""
        c, slot, chunk = pick
        self.entry_of(c, slot)["lnq"].remove(chunk)
        self.conn[c]["retx"].append((slot, chunk, 0))

    def apply_window(self, pending):
        """MR-EXO-002/003: an acknowledged chunk ``(entry, chunk)`` counted in its entry's
        window (``chunk_ack``)."""
        e, chunk = pending
        e["ack_base"], e["ack_bits"], _ = P.chunk_ack(e["ack_base"], e["ack_bits"], chunk,
                                                      self.chunk_window)

    # -- path windows (MR-TXS-028)
    def set_cwnd(self, conn, path, cwnd):
        """MR-TXS-028: path ``path`` of ``conn`` takes window ``cwnd`` (bytes), a window above
        the bound of MR-TXS-001 as that bound."""
        self.path[conn * self.paths + path]["cwnd"] = min(cwnd, self.cwnd_max)

    # -- failures (MR-TXS-027)
    def fail_targets(self, fail=None, error=None):
        """The live entries a message failure ``fail`` ({conn, slot, status}) and a connection
        failure ``error`` ({conn, path, status}) name, with their statuses: ``[(entry, status)]``,
        the message's first."""
        out = []
        if fail is not None:
            # MR-TXS-412: a failure of the slot's previous message (its lap not the entry's) is
            # ignored, as a late report is (MR-TXS-142)
            e = self.entry_of(fail["conn"], fail["slot"], fail.get("lap", 0))
            if e is not None:
                out.append((e, fail["status"]))
        if error is not None:
            c = error["conn"]
            for s in range(self.streams):
                for i in range(self.depth):
                    if self.live(self.qi(c, s), i):
                        out.append((self.q[self.qi(c, s)]["ring"][i], error["status"]))
        return out

    @staticmethod
    def fail(targets):
        """Mark the entries failed; the first status an entry gets stays."""
        for e, status in targets:
            if e is not None and not e["status"]:
                e["status"] = status

    # -- completions (MR-TXS-022)
    def completes(self, qi):
        """Stream queue ``qi``'s oldest message completes: every chunk acknowledged, or failed,
        with nothing in flight (MR-TXS-022, MR-TXS-027, MR-TXS-492)."""
        q = self.q[qi]
        if not self._count(q):
            return False
        e = q["ring"][q["done"] % self.depth]
        # MR-TXS-492: and with success only once none of its packets is in flight (a late
        # report may count a chunk whose resend is still to be reported)
        return bool(not e["out"] and (e["status"] or e["ack_base"] >= e["nchunks"]))

    def completions(self):
        """The stream queues (in index order) whose oldest message completes."""
        return [qi for qi in range(len(self.q)) if self.completes(qi)]

    def completion(self):
        """The first stream queue (in index order) whose oldest message has every chunk
        acknowledged, or None."""
        return next(iter(self.completions()), None)

    def complete(self, qi):
        """MR-TXS-022, MR-TXS-027: the oldest entry's completion; a failed message not sent to
        its end takes the send pointer with it and its unsent chunks leave the count."""
        q = self.q[qi]
        e = q["ring"][q["done"] % self.depth]
        q["ring"][q["done"] % self.depth] = None
        # MR-TXS-460: the resends queued for this message are stale, whatever takes its slot next
        cs = self.conn[qi // self.streams]
        slot = (qi % self.streams) * self.depth + q["done"] % self.depth
        cs["retx"] = deque((s, k, int(st or s == slot)) for s, k, st in cs["retx"])
        if q["send"] == q["done"]:
            q["send"] = (q["send"] + 1) % self.ring_mod
            self.conn[qi // self.streams]["unsent"] -= e["nchunks"] - e["next_chunk"]
        q["done"] = (q["done"] + 1) % self.ring_mod
        # MR-TXS-495: every path of the connection counts the completion (saturating)
        c = qi // self.streams
        for ps in self.path[c * self.paths:(c + 1) * self.paths]:
            ps["quiet"] = min(ps["quiet"] + 1, self.late_cap)
        return self.cqe_of(e, e["status"])

    # -- scheduling (MR-TXS-023..026)
    def _candidate(self, c):
        """The connection's next work: ("drop", None) for a resend head that is stale
        (MR-REL-004), ("resend", (qi, idx, chunk)), ("new", (qi, idx, chunk)), or None.
        MR-TXS-461: the head is dropped when its message completed since it was queued (its
        stale bit, :meth:`complete`), failed, or its chunk was acknowledged; never on the
        slot's present entry alone (a later message may hold the slot)."""
        cs = self.conn[c]
        if cs["retx"]:
            slot, chunk, stale = cs["retx"][0]
            if stale:
                return ("drop", None)
            s, i = divmod(slot, self.depth)
            e = self.entry_of(c, slot)
            # a queued chunk was sent by its message, which is live until it completes
            assert e is not None and chunk < e["next_chunk"], "MR-TXS-460"
            if self.chunk_acked(e, chunk) or e["status"]:
                return ("drop", None)
            return ("resend", (self.qi(c, s), i, chunk))
        for k in range(self.streams):
            s = (cs["srr"] + k) % self.streams
            qi = self.qi(c, s)
            q = self.q[qi]
            if q["send"] == q["tail"]:
                continue
            i = q["send"] % self.depth
            e = q["ring"][i]
            if e["status"]:
                continue                                # MR-TXS-027: a failed message sends no more
            if P.chunk_window_open(e["next_chunk"], e["ack_base"], self.chunk_window):
                return ("new", (qi, i, e["next_chunk"]))
        return None

    def window(self, ps):
        """MR-TXS-115: a path's window: one MTU while collapsed by a reroute, else its own."""
        return self.mtu if ps["col"] else ps["cwnd"]

    def path_ok(self, ps, retx):
        """MR-TXS-025, MR-TXS-117: the path takes the packet: active with room (bytes in flight
        below its window, packets below the bound); probing with no packet in flight and the
        packet not a resend (MR-PATH-005); retired never."""
        if ps["state"] == PATH_PROBING:
            return not ps["pkts"] and not retx
        return (ps["state"] == PATH_ACTIVE and ps["inflight"] < self.window(ps)
                and ps["pkts"] < self.path_pkts)

    def _path(self, c, retx=False):
        """MR-CONN-004, MR-CC-001, MR-SEQ-006, MR-TXS-028: the first path from the rotation
        that takes the packet (:meth:`path_ok`)."""
        cs = self.conn[c]
        for k in range(self.paths):
            p = (cs["rr"] + k) % self.paths
            if self.path_ok(self.path[c * self.paths + p], retx):
                return p
        return None

    def others_active(self, c, p):
        """MR-TXS-290: a path of connection ``c`` other than ``p`` is active."""
        return any(self.path[c * self.paths + q]["state"] == PATH_ACTIVE
                   for q in range(self.paths) if q != p)

    def verdict_taken(self, pr, others=None):
        """MR-TXS-290: the verdict the path's state takes: a suspicion or retirement is a
        reroute when no other path of the connection is active (``others``: that fact, else
        read on the present state), as the endpoint suspects or retires a path only while
        another is healthy (MR-PATH-001/004); unchanged without ``last_active_kept``."""
        v = pr["verdict"]
        if self.last_active_kept and v in (P.PATH_SUSPECT, P.PATH_RETIRE):
            if not (self.others_active(pr["conn"], pr["path"]) if others is None else others):
                return P.PATH_REROUTE
        return v

    def path_event(self, pr, others=None):
        """MR-TXS-114/115: a timeout's verdict ``pr`` ({conn, path, verdict}, hw-tx.md
        MR-TX-197): the path's state after it, and a reroute collapses its window to one MTU
        until its next acknowledged report. A path beyond the instance is ignored. MR-TXS-290:
        the verdict taken is :meth:`verdict_taken`'s (``others``: the cycle model's fact from
        the state before the cycle's action)."""
        if pr["path"] >= self.paths:
            return
        ps = self.path[pr["conn"] * self.paths + pr["path"]]
        v = self.verdict_taken(pr, others)
        ps["state"] = path_state_after(ps["state"], v)
        if v in (P.PATH_SUSPECT, P.PATH_RETIRE):
            # MR-TXS-185/347: the verdict after it wins; its restore and kept record go
            ps["rst"] = ps["kpt"] = 0
        if v == P.PATH_REROUTE:
            ps["col"] = 1
        if v != P.PATH_KEEP:
            # MR-TXS-121: a new entropy (the endpoint's _reroute; a retired path's at its probe)
            ps["gen"] = (ps["gen"] + 1) % (1 << GEN_BITS)

    def decide_conn(self, c):
        """Connection ``c``'s scheduling action: None, ("drop", c) or ("packet", c, kind, qi,
        idx, chunk, path) (MR-TXS-023..025)."""
        cand = self._candidate(c)
        if cand is None:
            return None
        kind, w = cand
        if kind == "drop":
            return ("drop", c)
        if self.pace is not None and not self.pace_ignored and not self.due(c):
            return None                                 # MR-TXS-160: its turn is not due
        qi, i, chunk = w
        e = self.q[qi]["ring"][i]
        nbytes = P.chunk_bytes(msg_len(e["op"], e["length"]), chunk, self.mtu)
        cs = self.conn[c]
        if cs["inflight"] and cs["inflight"] + nbytes > self.conn_window:
            return None                                 # MR-CC-001: the connection window
        p = self._path(c, kind == "resend")
        if p is None:
            return None
        return ("packet", c, kind, qi, i, chunk, p)

    def decide(self, eligible=None):
        """The next scheduling action: the first connection's from ``conn_rr`` in round robin
        (MR-TXS-023) with one; ``eligible``, if given, maps a connection to its action (the
        cycle model's registered candidates, MR-TXS-033)."""
        for k in range(self.conns):
            c = (self.conn_rr + k) % self.conns
            act = self.decide_conn(c) if eligible is None else eligible.get(c)
            if act is not None:
                return act
        return None

    def apply(self, act, now=0):
        """Carry out a decision: None for a drop, else ``(frame, sent)`` (MR-TXS-024..026)."""
        if act[0] == "drop":
            self.conn[act[1]]["retx"].popleft()
            return None
        _, c, kind, qi, i, chunk, p = act
        cs = self.conn[c]
        q = self.q[qi]
        e = q["ring"][i]
        s = qi % self.streams
        nbytes = P.chunk_bytes(msg_len(e["op"], e["length"]), chunk, self.mtu)
        ps = self.path[c * self.paths + p]
        psn = ps["next_psn"]
        ps["next_psn"] = P.psn_add(psn, 1)
        ps["inflight"] += nbytes
        ps["pkts"] += 1
        ps["since_req"] += 1
        cs["inflight"] += nbytes
        e["out"] += 1
        if kind == "resend":
            cs["retx"].popleft()
        else:
            e["next_chunk"] += 1
            if e["next_chunk"] == e["nchunks"]:
                q["send"] = (q["send"] + 1) % self.ring_mod
            cs["unsent"] -= 1
            cs["srr"] = (s + 1) % self.streams
        cs["rr"] = (p + 1) % self.paths
        self.conn_rr = (c + 1) % self.conns
        # MR-SEQ-009: AckReq every ack_every packets of a path, on the packet that fills the
        # path's window (its own, MR-TXS-028; MR-TXS-115: one MTU while collapsed), while fewer
        # chunks than paths are left to send, and on a probing path's packet (MR-TXS-117)
        req = (ps["since_req"] >= self.ack_every or ps["inflight"] + self.mtu > self.window(ps)
               or cs["unsent"] + len(cs["retx"]) < self.paths or ps["state"] == PATH_PROBING)
        if req:
            ps["since_req"] = 0
        slot = s * self.depth + i
        ps["tail"] = (e, slot, chunk)                   # MR-TXS-080
        frame = self._frame(c, e, slot, chunk, p, psn, req, kind == "resend")
        self.last_wl = packet_wl(e["op"], nbytes)       # MR-TXS-175 (recorded for the checks)
        if self.pace is not None and self.charged(c, nbytes):
            # MR-TXS-161, MR-TXS-176: a charged packet charges the pacer with its time and its
            # wire length (MR-TXS-175)
            self.pace[c].update(pend=1, ask=1, t_ask=now & P.TIME_MASK, wl=self.last_wl)
        sent = {"conn": c, "path": p, "psn": psn, "slot": slot, "chunk": chunk, "nbytes": nbytes,
                "req": int(req), "abort": 0, "t_sent": now & P.TIME_MASK, "lap": e["lap"]}
        return frame, sent

    # -- pacing (MR-TXS-159..163)
    def due(self, c):
        """MR-TXS-160: connection ``c``'s paced turn is due (no turn asked for and not back, not
        waiting for its next send time)."""
        ps = self.pace[c]
        return not ps["pend"] and not ps["late"]

    def charged(self, c, nbytes):
        """MR-TXS-176: a packet of connection ``c`` of ``nbytes`` charges the pacer: a full MTU,
        or shorter of a connection that is ``paced`` (MR-TXS-177; a connection at the line rate
        is not held for its short packets' turns: its time does not move)."""
        return nbytes == self.mtu or bool(self.pace[c]["paced"] and not self.pace_full_only)

    def pace_request(self):
        """MR-TXS-161, MR-TXS-175: ``m_pace``'s (valid, fields): the lowest connection with a
        turn to ask for, ``{conn, now: t_ask, force: 1, wl}`` (connection 0's fields when
        none)."""
        c = next((c for c, ps in enumerate(self.pace) if ps["ask"]), None)
        ps = self.pace[c or 0]
        return c is not None, {"conn": c or 0, "now": ps["t_ask"], "force": 1, "wl": ps["wl"]}

    def pace_edge(self, now, turn=None, taken=None, retime=None, line_mbps=0):
        """MR-TXS-161/162, at the edge after the cycle's action: ``taken`` (a connection) its
        request taken by the pacer; ``turn`` (``{conn, ok, pace_until}``) a turn back: `pend`
        clears, `late` when the time moved; MR-TXS-167:
        ``retime`` (the pacer's write ``{conn, rate, set_time, time}`` taken in the cycle) with
        ``set_time``, of a connection without a turn asked for (after this cycle's packet):
        `seen` its time, `late` while ``now`` is before it; every other connection stays late
        only while ``now`` is before its `seen`. MR-TXS-177: ``retime`` (any write) sets its
        connection's `paced`: its clamped rate below ``line_mbps``."""
        now &= P.TIME_MASK
        if taken is not None:
            self.pace[taken]["ask"] = 0
        if retime is not None:
            self.pace[retime["conn"]]["paced"] = int(
                P.clamp_hint_mbps(retime["rate"], line_mbps) < line_mbps)
        for c, ps in enumerate(self.pace):
            if turn is not None and turn["conn"] == c:
                pu = turn["pace_until"]
                # late when the time moved (a moved time is after the charged packet's, or the
                # compare of the next edge clears it)
                ps.update(pend=0, late=int(pu != ps["seen"]), seen=pu)
            elif (retime is not None and retime["set_time"] and retime["conn"] == c
                  and not ps["pend"]):
                ps.update(seen=retime["time"], late=int(P.time_lt(now, retime["time"])))
            else:
                ps["late"] = int(ps["late"] and P.time_lt(now, ps["seen"]))

    def _frame(self, c, e, slot, chunk, p, psn, req, retx):
        """MR-TXS-040: the frame request of chunk ``chunk`` of entry ``e`` (message slot
        ``slot``) on path ``p`` with PSN ``psn``, AckReq ``req`` and flag RETX ``retx``."""
        ml = msg_len(e["op"], e["length"])
        nbytes = P.chunk_bytes(ml, chunk, self.mtu)
        off = chunk * self.mtu
        flags = ((MrdhFlag.FIRST if off == 0 else 0) | (MrdhFlag.LAST if off + nbytes >= ml else 0)
                 | (MrdhFlag.RETX if retx else 0)
                 | (MrdhFlag.ERROR if e.get("err") else 0))         # MR-TXS-068
        # MR-TXS-059: a send names no remote address (RETH VA and R_Key 0) and its receive
        # sequence (MRSH) on every packet; the immediate of either _IMM opcode on every packet;
        # MR-TXS-063: a READ request MR_READ with message length 0, its RETH's DMA length the READ's
        send_op = is_send(e["op"])
        return {"conn": c, "laddr": e["laddr"],
                "bth_opcode": wire_op(e["op"]), "bth_ack_req": int(req), "bth_psn": psn,
                "mrdh_flags": int(flags), "mrdh_path": p,
                "mrdh_stream": e["wr_id"] if is_rsp(e) else slot // self.depth, "mrdh_msg": e["msg"],
                "mrdh_offset": off, "mrdh_msg_len": ml,
                "reth_va": 0 if send_op else e["va"], "reth_rkey": 0 if send_op else e["rkey"],
                "reth_dma_len": e["length"], "mrsh_recv_seq": e["recv_seq"] if send_op else 0,
                "imm_imm": e["imm"] if has_imm(e["op"]) else 0, "payload_len": nbytes,
                "slot": slot, "lap": e["lap"],                      # MR-TXS-411
                # MR-TXS-098: an atomic's operands (the compare value a compare-and-swap's)
                "swap": e.get("swap", 0) if is_atomic(e["op"]) else 0,
                "compare": e.get("compare", 0) if e["op"] == OP_CMP_SWAP else 0,
                "gen": self.path[c * self.paths + p]["gen"]}

    # -- tail probes (MR-TXS-080..082)
    def probe(self, pr):
        """MR-TXS-080..082: the retransmit unit's tail probe ``pr`` ({conn, path, psn}; MR-TXS-114:
        a verdict, ``to`` set, is :meth:`path_event`'s and never a frame): the frame
        request re-sending the path's newest packet as is (its PSN, path, chunk and fields,
        RETX and AckReq set; no sent event, no count changes), or None (dropped) when the path
        is beyond the instance, ``psn`` is not the path's newest PSN, the path has no packet in
        flight (the probed packet was resolved meanwhile), or the packet's message has
        completed or failed since it was sent."""
        c, p = pr["conn"], pr["path"]
        if p >= self.paths or pr.get("to"):
            return None
        ps = self.path[c * self.paths + p]
        t = ps["tail"]
        if (t is None or P.psn_add(pr["psn"], 1) != ps["next_psn"] or not ps["pkts"]
                or self.entry_of(c, t[1]) is not t[0] or t[0]["status"]):
            return None
        e, slot, chunk = t
        return self._frame(c, e, slot, chunk, p, pr["psn"], True, True)


# ------------------------------------------------------------------ cycle timing

INPUTS = ("s_wr__payload", "s_wr__valid", "s_acked__payload", "s_acked__valid",
          "s_resend__payload", "s_resend__valid", "m_frame__ready", "m_sent__ready",
          "m_cqe__ready", "now", "s_fail__payload", "s_fail__valid", "s_error__payload",
          "s_error__valid", "s_cwnd__payload", "s_cwnd__valid", "s_rsp__payload", "s_rsp__valid",
          "m_rsp_done__ready", "s_probe__payload", "s_probe__valid")
OUTPUTS = ("s_wr__ready", "s_acked__ready", "s_resend__ready", "m_frame__payload",
           "m_frame__valid", "m_sent__payload", "m_sent__valid", "m_cqe__payload", "m_cqe__valid",
           "s_fail__ready", "s_error__ready", "s_cwnd__ready", "s_rsp__ready",
           "m_rsp_done__payload", "m_rsp_done__valid", "s_probe__ready")
#: MR-TXS-465: the initial-PSN port's names (MR-TXS-481: the rows' too)
PSN_INPUTS = ["s_psn__payload", "s_psn__valid"]
PSN_OUTPUTS = ["s_psn__ready", "psn_ignored"]
#: MR-TXS-183: the restore port's names (``restores``)
RESTORE_INPUTS = ["m_restore__ready"]
RESTORE_OUTPUTS = ["m_restore__payload", "m_restore__valid"]


def cqe_entry(lay, cqe):
    """MR-TXS-070: the completion queue's entry: the completion's bits and, above them, whether
    it is a READ response's record (for ``m_rsp_done``) rather than a completion."""
    rsp = cqe.pop("rsp", 0)
    return pack(lay.cqe, cqe) | rsp << lay.cqe.size


def cqe_outputs(lay, head, level):
    """MR-TXS-070: the completion queue's head split between ``m_cqe`` and ``m_rsp_done``:
    ``(cqe payload, cqe valid, rsp_done payload, rsp_done valid, is a response)``."""
    c = unpack(lay.cqe, head)
    rsp = (head >> lay.cqe.size) & 1
    done = pack(lay.rsp_done, {"conn": c["conn"], "stream": c["stream"], "msg": c["length"],
                               "status": c["status"]})
    return (head & ((1 << lay.cqe.size) - 1), int(level > 0 and not rsp), done,
            int(level > 0 and bool(rsp)), rsp)


class TxSchedCycleModel:
    """The block cycle by cycle (MR-TXS-030, MR-TXS-031): ``step(inputs)`` once per clock.

    One action per cycle, in this priority: the report taken the cycle before (``rep``,
    MR-TXS-034: from the boundary registers ``ba``/``br`` of MR-TXS-046, loaded from the ports
    a cycle earlier; an acknowledged-record report, else a lost-record report, MR-TXS-240),
    a refill (``lq``, MR-TXS-244: a lost, not queued chunk into its connection's resend FIFO,
    decided the cycle before), a completion (when the completion queue has room), the work request in the register (``wq``, MR-TXS-037: taken from ``s_wr`` in an
    earlier cycle), a scheduling step (when the frame and sent queues both have room).
    The completion is the one decided in the previous cycle (``comp``, MR-TXS-035), picked then
    among the streams that completed on the state of the cycle before (``qcomp``, MR-TXS-045), and the
    scheduling step takes the connections' actions decided in the previous cycle (``cand``,
    MR-TXS-033), each but those of connections whose state the previous cycle's action or
    failures changed (``touched``). ``events`` logs every action in order."""

    def __init__(self, width=64, conns=SMALL["conns"], streams=SMALL["streams"],
                 paths=SMALL["paths"], depth=SMALL["depth"], *, rd_rows=False, restores=False,
                 lost_waits=False, last_active_kept=True, kept_out=True, interval=1,
                 mem_head=False, **kw):
        if width not in (64, 128, 256, 512):
            raise ValueError(f"width must be 64, 128, 256 or 512, not {width!r}")
        self.width = width
        # MR-TXS-413/414: the frame interval (MR-ENG-299); above 1 s_cwnd takes a write at most
        # once every `interval` cycles and only with no write in its pipe (cw_b, cw_d)
        self.interval = int(interval)
        if self.interval < 1:
            raise ValueError(f"interval must be at least 1, not {interval!r}")
        self.cw_gate = records.IntervalGate(self.interval)
        self.cw_holds = 0               # MR-TXS-415: cycles a write waited in cw_d (for tests)
        # MR-TXS-419: with mem_head (interval above 1 only) the output queues' memory heads only
        self.mem_head = bool(mem_head)
        if self.mem_head and self.interval == 1:
            raise ValueError("MR-TXS-419: mem_head needs an interval above 1")
        # MR-TXS-347/350: with restores, a verdict taken as a reroute leaves a kept record on
        # m_restore; kept_out=False (negative control only) leaves it out (the block before)
        self.kept_out = bool(kept_out)
        # MR-TXS-246 (negative control only): the rule before MR-TXS-240, a lost report waits in
        # its boundary register for its connection's FIFO room (and so holds its flight)
        self.lost_waits = bool(lost_waits)
        # MR-TXS-183: with restores, the acknowledged reports' restores of probing paths leave
        # on m_restore (the TX top's windows, hw-tx.md MR-TX-256)
        self.restores = bool(restores)
        # MR-TXS-106: with rd_rows, a READ is queued only with m_rd.ready (the engine's row)
        self.rd_rows = bool(rd_rows)
        if self.rd_rows:
            self.port_names = lambda: {"inputs": [*INPUTS, *PSN_INPUTS, "m_rd__ready"],
                                       "outputs": [*OUTPUTS, *PSN_OUTPUTS, "m_rd__payload",
                                                   "m_rd__valid"]}
        self.sem = TxSchedModel(conns, streams, paths, depth, last_active_kept=last_active_kept,
                                **kw)
        self.lay = self.sem.lay
        if self.interval > 1 and self.sem.pace is not None:
            raise ValueError("MR-TXS-413: an interval above 1 with pacing is not built")
        if self.sem.pace is not None:
            # MR-TXS-159: the pacer's ports (hw-cwnd.md MR-CW-097's s_frame and m_turn)
            self.pace_lay = pacer_model.frame_layouts(conns)
            names = self.port_names()
            self.port_names = lambda: {
                "inputs": [*names["inputs"], "m_pace__ready", "s_turn__valid", "s_turn__payload",
                           "s_retime__valid", "s_retime__payload", "line_mbps"],
                "outputs": [*names["outputs"], "m_pace__valid", "m_pace__payload", "s_turn__ready",
                            "s_retime__ready"]}
        if self.restores:
            names2 = self.port_names()
            self.port_names = lambda: {"inputs": [*names2["inputs"], *RESTORE_INPUTS],
                                       "outputs": [*names2["outputs"], *RESTORE_OUTPUTS]}
            self.restore_lay = restore_layout(conns, paths)
        self.frame_q = SyncFifoModel(OUT_DEPTH)
        self.sent_q = SyncFifoModel(OUT_DEPTH)
        # MR-TXS-419: with mem_head the queues' stages (the decision's frame and sent event,
        # packed), written into the rings a cycle later; the ports show the rings only
        self.fr_stage = self.sent_stage = None
        self.cqe_q = SyncFifoModel(OUT_DEPTH)
        self.cand = {}                  # MR-TXS-033: connection -> action, decided last cycle
        self.touched = set()            # connections changed at the last edge
        self.comp = None                # MR-TXS-035: the stream whose completion was decided last cycle
        self.qcomp = []                 # MR-TXS-045: the streams that completed on last cycle's state
        self.win = None                 # MR-TXS-036: (conn, (entry, chunk)) to count at this edge
        self.rep = None                 # MR-TXS-034: (lost, report) taken last cycle
        self.ba = None                  # MR-TXS-046: the boundary registers' reports (acked, lost)
        self.br = None
        self.rs = None                  # MR-TXS-156: the lost report in the skid before br
        self.wq = None                  # MR-TXS-037: the work request held in the register
        self.cw_b = None                # MR-TXS-029: a window write taken from s_cwnd last cycle
        self.cw_d = None                # and the one taken the cycle before, written at this edge
        self.pb = None                  # MR-TXS-086: the tail probe in its boundary register
        self.pd = None                  # MR-TXS-086: its decision, made last cycle: (frame or None,)
        self.lq = None                  # MR-TXS-244: the refill decided last cycle (conn, slot, chunk)
        # MR-TXS-465/466: per connection, a work request or READ response entered the register
        # since reset (its paths' initial PSNs are then fixed); an ignored write, registered
        self.started = [0] * conns
        self.psn_ign = 0
        self.events = []

    @staticmethod
    def port_names():
        return {"inputs": [*INPUTS, *PSN_INPUTS], "outputs": [*OUTPUTS, *PSN_OUTPUTS]}

    def busy(self):
        sem = self.sem
        return bool(self.frame_q.level or self.sent_q.level or self.cqe_q.level or self.cand
                    or self.fr_stage is not None or self.sent_stage is not None
                    or self.rep is not None or self.ba is not None or self.br is not None
                    or self.rs is not None
                    or self.comp is not None or self.win is not None
                    or self.qcomp
                    or self.wq is not None
                    or self.cw_b is not None or self.cw_d is not None
                    or self.pb is not None
                    or self.lq is not None or sem.refill_pick() is not None     # MR-TXS-243
                    or (self.restores and any(ps["rst"] or ps["kpt"]            # MR-TXS-184
                                              for ps in sem.path))                 # and 347
                    or (sem.pace is not None
                        and any(p["pend"] or p["ask"] or p["late"] for p in sem.pace))
                    or sem.completion() is not None or sem.decide() is not None)

    def take_lost(self):
        """MR-TXS-034/046, MR-TXS-240: the lost report's boundary register is taken into the
        report register before this edge when no acknowledged report is in its boundary
        register, whatever its connection's resend FIFO holds (``lost_waits``, a negative
        control: and room in that FIFO counting a lost report of the same connection in the
        report register, the rule before MR-TXS-240)."""
        f = self.br
        if f is None or self.ba is not None:
            return False
        if not self.lost_waits:
            return True
        held = self.rep is not None and self.rep[0] and self.rep[1]["conn"] == f["conn"]
        return self.sem.resend_room(f, held)

    def cwnd_ready(self):
        """MR-TXS-414: ``s_cwnd.ready`` before the edge (registers only): always at interval 1;
        above, the interval gate open and no write in the pipe (``cw_b``, ``cw_d``)."""
        if self.interval == 1:
            return 1
        return int(self.cw_gate.open and self.cw_b is None and self.cw_d is None)

    def cw_held(self, w, held, pkt_row):
        """MR-TXS-415: at an interval above 1, the write ``w`` in ``cw_d`` waits at this edge
        when the report in the report register (``held``: ``(lost, report)``) names its
        ``{conn, path}`` (the path's low bits) or this cycle's packet (``pkt_row``: its
        ``(conn, path)``) leaves on its row."""
        if self.interval == 1:
            return False
        row = (w["conn"], w["path"])
        if held is not None and (held[1]["conn"], held[1]["path"] & (self.sem.paths - 1)) == row:
            return True
        return pkt_row == row

    def fill_go(self):
        """MR-TXS-244: the refill decided last cycle is this cycle's action: no report in the
        report register, its connection untouched at the edge since (registers only)."""
        return self.rep is None and self.lq is not None and self.lq[0] not in self.touched

    def resend_ready(self):
        """MR-TXS-156: ``s_resend.ready`` before the edge: the skid before the lost report's
        boundary register is empty (a register)."""
        return int(self.rs is None)

    def _sched_terms(self):
        """MR-TXS-030: ``(busy, comp, take_wr, sched)`` before the edge, on registers."""
        sem = self.sem
        busy = self.rep is not None
        fill = self.fill_go()           # MR-TXS-244: second in MR-TXS-030's priority
        comp = self.comp
        cqe_room = self.cqe_q.level < OUT_DEPTH
        if busy or fill or not cqe_room or (comp is not None and comp // sem.streams in self.touched):
            comp = None
        wr = self.wq
        take_wr = (wr is not None and not busy and not fill and comp is None
                   and (cqe_room if sem.wr_status(wr) else sem.wr_room(wr)))
        sched = (not busy and not fill and comp is None and not take_wr
                 and self.frame_q.level + (self.fr_stage is not None) < OUT_DEPTH
                 and self.sent_q.level + (self.sent_stage is not None) < OUT_DEPTH)
        return busy, comp, take_wr, sched

    def rd_port(self, inputs):
        """MR-TXS-106: ``m_rd``'s payload as the RTL drives it in every cycle (valid or not): the
        fields of the request entering the register (a response's as MR-TXS-067 maps it) and
        its stream's next message number (one further as in :meth:`rd_request`)."""
        g, sem = inputs.get, self.sem
        if g("s_rsp__valid", 0):
            f = rsp_item(unpack(self.lay.rsp, g("s_rsp__payload", 0)), sem.streams)
        else:
            f = unpack(self.lay.wr, g("s_wr__payload", 0))
        qi = sem.qi(f["conn"], f["stream"] & (sem.streams - 1))
        w = self.wq
        hit = (w is not None and self._sched_terms()[2] and not is_rsp(w) and not sem.wr_status(w)
               and sem.qi(w["conn"], w["stream"] & (sem.streams - 1)) == qi)
        return pack(self.lay.rd, {"conn": f["conn"], "stream": f["stream"],
                                  "msg": (sem.q[qi]["msg_next"] + hit) & 0xFFFFFFFF,
                                  "laddr": f["laddr"], "length": f["length"], "wr_id": f["wr_id"]})

    def rd_request(self, payload):
        """MR-TXS-106: the outstanding-read row's fields of the work request ``payload`` on
        ``s_wr`` when it is a good READ (None otherwise), with the message number it takes: its
        stream's ``msg_next``, one further when the register's request of the same stream is
        acted on in this cycle (on registers and the port only)."""
        sem = self.sem
        f = unpack(self.lay.wr, payload)
        # MR-TXS-141: an atomic's row too (its response is a READ response of the row)
        if not self.rd_rows or not (is_read(f["op"]) or is_atomic(f["op"])) or sem.wr_status(f):
            return None
        q = sem.q[sem.qi(f["conn"], f["stream"])]
        w = self.wq
        hit = (w is not None and self._sched_terms()[2] and not is_rsp(w) and not sem.wr_status(w)
               and (w["conn"], w["stream"]) == (f["conn"], f["stream"]))
        return {"conn": f["conn"], "stream": f["stream"], "msg": (q["msg_next"] + hit) & 0xFFFFFFFF,
                "laddr": f["laddr"], "length": f["length"], "wr_id": f["wr_id"]}

    def probe_go(self):
        """MR-TXS-086: the probe in the boundary register may act: decided last cycle, its
        connection untouched at the edge since (its decision is the present state's)."""
        return (self.pb is not None and self.pd is not None and not self.pb["to"]
                and self.pb["conn"] not in self.touched)

    def verdict_act(self):
        """MR-TXS-118: the boundary register holds a timeout's verdict: it acts in this cycle,
        whatever the cycle's action."""
        return self.pb is not None and bool(self.pb["to"])

    def restore_row(self):
        """MR-TXS-184: the path row ``m_restore`` offers before the edge (None: not valid): the
        lowest row with a pending restore or kept record (MR-TXS-348), but not one whose
        verdict is in the boundary register (MR-TXS-185: it acts at the next edge and wins);
        registers only."""
        if not self.restores:
            return None
        sem = self.sem
        vrow = (self.pb["conn"] * sem.paths + self.pb["path"]
                if self.verdict_act() and self.pb["path"] < sem.paths else None)
        return next((r for r, ps in enumerate(sem.path)
                     if (ps["rst"] or ps["kpt"]) and r != vrow), None)

    def restore_outputs(self):
        """MR-TXS-183: ``(m_restore valid, payload)`` before the edge; MR-TXS-348: a row's
        restore before its kept record (``kept`` 1 only without a pending restore)."""
        r = self.restore_row()
        if r is None:
            return 0, 0
        return 1, pack(self.restore_lay, {"conn": r // self.sem.paths, "path": r % self.sem.paths,
                                          "kept": int(not self.sem.path[r]["rst"])})

    def probe_ready(self):
        """MR-TXS-086: ``s_probe.ready`` before the edge: the boundary register empty or its
        probe acted on in this cycle (on registers only); MR-TXS-186: with ``restores``, not
        while ``m_restore`` offers a restore (a verdict never passes a restore before it)."""
        if self.restore_row() is not None:
            return 0
        return int(self.pb is None or self.verdict_act()
                   or (self.probe_go() and self._sched_terms()[3]))

    def step(self, inputs):
        g = inputs.get
        lay, sem = self.lay, self.sem
        # MR-TXS-106: the READ on s_wr and its row (before the registers move)
        rd = self.rd_request(g("s_wr__payload", 0)) if self.rd_rows else None
        rd_pay = self.rd_port(inputs) if self.rd_rows else 0
        rd_ready = g("m_rd__ready", 0) if self.rd_rows else 1
        take_lost = self.take_lost()
        fill = self.fill_go()
        resend_ready = self.resend_ready()
        br_free = self.br is None or take_lost
        # MR-TXS-030: the cycle's action's terms, on registers (before the registers move)
        busy, comp, take_wr, sched = self._sched_terms()
        # MR-TXS-034: the report taken last cycle is this cycle's action; this cycle's (from a
        # boundary register, MR-TXS-046) waits
        held = self.rep
        if self.ba is not None:
            self.rep = (False, self.ba)
        else:
            self.rep = (True, self.br) if take_lost else None
        # MR-TXS-046: the ports into the boundary registers
        self.ba = unpack(lay.acked, g("s_acked__payload", 0)) if g("s_acked__valid", 0) else None
        # MR-TXS-156/157: the boundary register, emptied or taken, loads from the skid when it
        # holds a report, else from the port; the port's report waits in the skid otherwise
        if take_lost:
            self.br = None
        port = (unpack(lay.report, g("s_resend__payload", 0))
                if resend_ready and g("s_resend__valid", 0) else None)
        src = self.rs if self.rs is not None else port
        if br_free:
            if src is not None:
                self.br, self.rs = src, None
        elif port is not None:
            self.rs = port
        # MR-TXS-035: last cycle's completion (comp), unless its connection changed at the edge
        # MR-TXS-045: the next completion picked among the streams that completed on last
        # cycle's state, but those of connections changed at the edge and the register's own
        # stream; this cycle's streams that complete, for the next pick
        S = sem.streams
        comp_next = next((qi for qi in self.qcomp
                          if qi // S not in self.touched and qi != self.comp), None)
        qcomp_next = sem.completions()
        # MR-TXS-244: the refill decided on this cycle's state, for the next
        lq_next = sem.refill_pick()
        # MR-TXS-037: the work request in the register is the action (its room on this cycle's
        # state); the port takes the next one when the register empties or is taken this cycle
        wr = self.wq
        wr_ready = int(wr is None or take_wr)
        if take_wr:
            self.wq = None
        # MR-TXS-067: a READ response on s_rsp goes into the register before a work request
        rsp_valid = g("s_rsp__valid", 0)
        # MR-TXS-107: a READ whose row is not free waits at the port
        rd_valid = int(bool(rd is not None and wr_ready and not rsp_valid and g("s_wr__valid", 0)))
        port_ready = int(wr_ready and not rsp_valid and (rd is None or rd_ready))
        # MR-TXS-465/466: an initial-PSN write sets its path row's next PSN when its
        # connection has started nothing (the register at the cycle's start), else is ignored
        ign = 0
        if g("s_psn__valid", 0):
            pw = unpack(lay.psn, g("s_psn__payload", 0))
            if self.started[pw["conn"]]:
                ign = 1
            else:
                sem.path[pw["conn"] * sem.paths + pw["path"]]["next_psn"] = pw["psn"]
        psn_ign, self.psn_ign = self.psn_ign, ign
        if wr_ready and rsp_valid:
            self.wq = rsp_item(unpack(lay.rsp, g("s_rsp__payload", 0)), sem.streams)
        elif port_ready and g("s_wr__valid", 0):
            self.wq = unpack(lay.wr, g("s_wr__payload", 0))
        if self.wq is not None and self.wq is not wr:
            self.started[self.wq["conn"]] = 1
        # MR-TXS-086: the probe decided last cycle goes before the scheduling step; the port
        # loads the boundary register when it empties; the probe held is decided again on this
        # cycle's state for the next
        probe_act = sched and self.probe_go()
        v_act = self.verdict_act()
        # MR-TXS-290: whether another path of the verdict's connection is active, on the state
        # before this cycle's action (registers: a restore at the same edge is not seen)
        v_others = (v_act and self.pb["path"] < sem.paths
                    and sem.others_active(self.pb["conn"], self.pb["path"]))
        # MR-TXS-183/186: the restore offered (registers), and no probe taken while it is
        r_row = self.restore_row()
        r_out = self.restore_outputs()      # before the boundary register loads below
        probe_ready = int((self.pb is None or probe_act or v_act) and r_row is None)
        pb = self.pb
        pd_next = None if pb is None or probe_act or v_act else (sem.probe(pb),)
        if probe_ready and g("s_probe__valid", 0):
            self.pb = unpack(lay.probe, g("s_probe__payload", 0))
        elif probe_act or v_act:
            self.pb = None
        # MR-TXS-027: failures are always taken; they mark the entries live before the edge
        fail = unpack(lay.fail, g("s_fail__payload", 0)) if g("s_fail__valid", 0) else None
        error = unpack(lay.error, g("s_error__payload", 0)) if g("s_error__valid", 0) else None
        targets = sem.fail_targets(fail, error)
        # MR-TXS-033: every connection's action on this cycle's state, for the next cycle
        cand = {c: a for c in range(sem.conns) if (a := sem.decide_conn(c)) is not None}
        # MR-TXS-045: nor those of connections with a stream that completed on last cycle's state
        comp_conns = {qi // S for qi in self.qcomp}
        eligible = {c: a for c, a in self.cand.items()
                    if c not in self.touched and c not in comp_conns}
        if sem.pace is not None and not sem.pace_ignored:
            # MR-TXS-167: a packet's candidate also needs its connection due in this cycle (a
            # re-timing write may have set `late` at the edge since its decision)
            eligible = {c: a for c, a in eligible.items() if a[0] == "drop" or sem.due(c)}
        touched = {x["conn"] for x in (fail, error) if x is not None}
        cq_pay, cq_valid, done_pay, done_valid, cq_rsp = cqe_outputs(lay, self.cqe_q.head,
                                                                     self.cqe_q.level)
        out = {"s_wr__ready": port_ready, "s_rsp__ready": wr_ready,
               "s_psn__ready": 1, "psn_ignored": psn_ign,
               "m_rsp_done__payload": done_pay, "m_rsp_done__valid": done_valid,
               "s_acked__ready": 1, "s_resend__ready": resend_ready,
               "s_fail__ready": 1, "s_error__ready": 1, "s_cwnd__ready": 1,
               "s_probe__ready": probe_ready,
               "m_frame__payload": self.frame_q.head, "m_frame__valid": int(self.frame_q.level > 0),
               "m_sent__payload": self.sent_q.head, "m_sent__valid": int(self.sent_q.level > 0),
               "m_cqe__payload": cq_pay, "m_cqe__valid": cq_valid}
        if self.rd_rows:
            out.update({"m_rd__valid": rd_valid, "m_rd__payload": rd_pay})
        if self.restores:
            out["m_restore__valid"], out["m_restore__payload"] = r_out
            if r_row is not None and g("m_restore__ready", 0):
                # MR-TXS-184: taken, cleared at this edge (before this cycle's report, whose
                # restore of another probing path may set a bit at the same edge); MR-TXS-348:
                # the restore, else the kept record
                ps = sem.path[r_row]
                ps["rst" if ps["rst"] else "kpt"] = 0
        if sem.pace is not None:
            # MR-TXS-161: the request on registers, before the edge
            pace_valid, pace_req = sem.pace_request()
            out.update({"m_pace__valid": int(pace_valid),
                        "m_pace__payload": pack(self.pace_lay["frame"], pace_req),
                        "s_turn__ready": 1, "s_retime__ready": 1})
        frame = sent = cqe = None
        cw_ready = self.cwnd_ready()            # MR-TXS-414: before the registers move
        out["s_cwnd__ready"] = cw_ready
        pkt_row = None                          # MR-TXS-415: the row of this cycle's packet
        # MR-TXS-036: last cycle's acknowledged chunk counted at this edge (after this cycle's
        # decisions above, before this cycle's report: the forward); its connection is touched
        if self.win is not None:
            touched.add(self.win[0])
            sem.apply_window(self.win[1])
            self.win = None
        if held is not None:
            lost, f = held
            self.events.append(("resend" if lost else "acked", f))
            sem.report(f, lost=lost, window=False)
            if sem.pending is not None:
                self.win, sem.pending = (f["conn"], sem.pending), None
            touched.add(f["conn"])
        elif fill:
            # MR-TXS-243/244: a lost-not-queued chunk into its connection's FIFO; touched
            self.events.append(("refill", self.lq))
            sem.refill(self.lq)
            touched.add(self.lq[0])
        elif comp is not None:
            self.events.append(("complete", comp))
            cqe = sem.complete(comp)
            touched.add(comp // sem.streams)
        elif take_wr:
            self.events.append(("wr", wr))
            cqe = sem.wr(wr)
            touched.add(wr["conn"])
        elif probe_act:
            # MR-TXS-080..082: the probed packet's frame request as it was (or a drop); no
            # sent event, no state changes, its connection untouched
            self.events.append(("probe", pb, self.pd[0] is not None))
            frame = self.pd[0]
        elif sched:
            act = sem.decide(eligible)
            if act is not None:
                self.events.append(act)
                touched.add(act[1])
                if act[0] == "packet":
                    pkt_row = (act[1], act[6])
                r = sem.apply(act, g("now", 0))
                if r is not None:
                    frame, sent = r
        # MR-TXS-118: a verdict changes its path's state at this edge, after this cycle's action
        # (a report's restore of the same path included); its connection is touched
        if v_act:
            self.events.append(("verdict", pb))
            kept = pb["path"] < sem.paths and sem.verdict_taken(pb, v_others) != pb["verdict"]
            if kept:
                self.events.append(("kept", pb))        # MR-TXS-290: the last active path
            sem.path_event(pb, v_others)
            if kept and self.restores and self.kept_out:
                # MR-TXS-347: its record for the TX top's windows (which took the verdict)
                sem.path[pb["conn"] * sem.paths + pb["path"]]["kpt"] = 1
            touched.add(pb["conn"])
        # MR-TXS-029: the window write taken two cycles ago changes its path's window at this
        # edge, after this cycle's action (whose AckReq was decided on the old window); its
        # connection is touched; the port is always ready
        # MR-TXS-415: at an interval above 1 it waits while this cycle's action changes its row
        cw_hold = self.cw_d is not None and self.cw_held(self.cw_d, held, pkt_row)
        self.cw_holds += cw_hold
        if self.cw_d is not None and not cw_hold:
            w = self.cw_d
            self.events.append(("cwnd", w))
            sem.set_cwnd(w["conn"], w["path"], w["cwnd"])
            touched.add(w["conn"])
        if sem.pace is not None:
            # MR-TXS-161/162: the request taken and the turn back, after the cycle's action
            sem.pace_edge(g("now", 0),
                          unpack(self.pace_lay["turn"], g("s_turn__payload", 0))
                          if g("s_turn__valid", 0) else None,
                          pace_req["conn"] if pace_valid and g("m_pace__ready", 0) else None,
                          # MR-TXS-167: a re-timing write the pacer took in this cycle
                          unpack(self.pace_lay["write"], g("s_retime__payload", 0))
                          if g("s_retime__valid", 0) else None, g("line_mbps", 0))
        if cw_hold:
            assert self.cw_b is None, "MR-TXS-414: no write behind a held one"
        else:
            self.cw_d = self.cw_b
        cw_take = bool(cw_ready and g("s_cwnd__valid", 0))
        self.cw_b = unpack(lay.cwnd, g("s_cwnd__payload", 0)) if cw_take else None
        self.cw_gate.step(cw_take)
        self.cand, self.touched, self.comp, self.qcomp = cand, touched, comp_next, qcomp_next
        self.pd = pd_next
        self.lq = lq_next
        if targets:
            self.events.append(("fail", [(e["wr_id"], st) for e, st in targets]))
        sem.fail(targets)
        fr_word = pack(lay.frame, frame) if frame else None
        sent_word = pack(lay.sent, sent) if sent else None
        if self.mem_head:
            # MR-TXS-419: the stages written into the rings at this edge, this cycle's into them
            (fr_word, self.fr_stage), (sent_word, self.sent_stage) = \
                (self.fr_stage, fr_word), (self.sent_stage, sent_word)
        self.frame_q.update(g("m_frame__ready", 0), fr_word is not None, fr_word or 0)
        self.sent_q.update(g("m_sent__ready", 0), sent_word is not None, sent_word or 0)
        self.cqe_q.update(g("m_rsp_done__ready" if cq_rsp else "m_cqe__ready", 0), cqe is not None,
                          cqe_entry(lay, cqe) if cqe else 0)
        return out


def tx_sched_model_small(width=64):
    """The model of the small instance (hdl.tx_sched.tx_sched_small, MR-TXS-001)."""
    return TxSchedCycleModel(width, **SMALL)
