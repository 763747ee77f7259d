"""Golden model of the RX engine's first slice (docs/spec/hw-rx.md, MR-RX-*).

Two layers, both built on :mod:`metaroce.models.protocol` and :mod:`metaroce.models.records`:

* :class:`RxModel`: the transport semantics, one parsed packet per call
  (:meth:`RxModel.packet` takes a META_LAYOUT dict of :mod:`metaroce.models.parser` and
  returns an :class:`Outcome`: the drop reason or acceptance, the ACK or NAK request, the
  placement command and whether the payload is written). The checks are
  ``protocol.check_stream``/``check_chunk``/``check_access`` and the window is
  ``protocol.rx_classify``/``rx_accept`` (MR-RX-020..031).
* :class:`RxCycleModel`: the hardware's timing around it (``step(inputs) -> outputs`` once
  per clock, Verilog port names), for the lockstep harness (tb/lockstep.py): a packet taken
  in cycle t is checked against the connection and key rows as they were before cycle t (read
  in cycle t, registered in S0 at t+1; the MTU of cycle t+2), its window update (S4, cycle t+5
  when nothing holds the pipeline) sees every path-row write before it, its outputs are
  readable from cycle t+7 and its counters change at the end of cycle t+6; a slow window
  update (a filled gap or a slide) holds the pipeline for :data:`HOLD_CYCLES` more cycles
  (MR-RX-040..044, MR-RX-048).

The RTL/model contract (port layouts, derived sizes, counter indices) is declared here; the
RTL (hdl/rx.py) imports it. models/ never imports hdl/.
"""
from __future__ import annotations

import collections
from dataclasses import dataclass
from enum import IntEnum

from amaranth.lib import data

from . import protocol as P
from . import records
from .fifo import SyncFifoModel
from .parser import META_FIELDS
from .wire import NakReason, Op

__all__ = ["RxCode", "Outcome", "RxModel", "RxCycleModel", "Layouts", "layouts", "check_params",
           "COUNTER_BITS", "N_COUNTERS", "CTR_ACKS", "CTR_NAKS", "CTR_CE", "CTR_ABANDONED",
           "CTR_PLACED_BYTES", "FIFO_DEPTH", "TABLE_GLOBAL", "TABLE_CONN", "TABLE_KEY",
           "TABLE_PATH", "ACK_EVERY_RESET", "MTU_LOG2_RESET", "NAK_OF", "DATA_OPS", "CHECK_STAGES",
           "HOLD_CYCLES", "RING_BITS", "is_slow", "SERIAL_INTERVAL", "SERIAL_PIECE", "hold_cycles",
           "payload_layout", "pack", "unpack", "rx_model_256x4", "TABLE_MSG", "MSG_SLOTS",
           "CHUNK_RING", "EPOCH_BITS", "CTR_CQES", "CTR_DUP_CHUNKS", "CTR_MSG_REFUSED", "MsgCode",
           "WC_RECV_RDMA_WITH_IMM", "chunk_new", "ACK_DELAY_RESET", "TIMER_DEPTH", "GEN_BITS",
           "TIME_BITS", "TABLE_RECV", "RECV_SLOTS", "WC_RECV", "SEND_OPS", "WRITE_OPS", "LATE_CODES",
           "KIND_IMM", "KIND_SEND", "msg_kind",
           "TABLE_READ", "TABLE_INIT_DEPTH", "TABLE_TX_PSN", "RD_SLOTS", "WC_RDMA_READ", "KIND_READ", "READ_REQ_OP", "ATOMIC_OPS",
           "WC_COMP_SWAP", "WC_FETCH_ADD", "WC_REM_ACCESS_ERR", "RD_OP_READ", "RD_OP_CMP_SWAP",
           "RD_OP_FETCH_ADD", "RD_OP_WC", "KIND_CMP_SWAP", "KIND_FETCH_ADD", "MRDH_ERROR"]


class RxCode(IntEnum):
    """MR-RX-022: what the RX engine did with one metadata record; also its counter index."""
    ACCEPTED = 0
    DUPLICATE = 1
    NO_CONNECTION = 2
    BAD_PKEY = 3
    BAD_PATH = 4
    STREAM = 5
    CHUNK = 6
    LENGTH = 7
    ACCESS = 8
    BOUNDS = 9
    PSN_WINDOW = 10
    PARSER_DROP = 11
    NOT_HANDLED = 12
    RNR = 13            # MR-RX-102: a SEND's receive is not posted (a new PSN only)
    RECV_BOUNDS = 14    # MR-RX-102: a SEND longer than its receive buffer (a new PSN only)
    NO_READ = 15        # MR-RX-111: a READ response naming no outstanding READ
    MSG_SLOTS = 16      # MR-RX-167: a new PSN of a message beyond its stream's slots (MR-SEC-006)


#: MR-RX-023: the NAK reason of each drop that is answered with a NAK (the others are silent).
NAK_OF = {
    RxCode.BAD_PATH: NakReason.INVALID_REQUEST,
    RxCode.STREAM: NakReason.STREAM,
    RxCode.CHUNK: NakReason.INVALID_REQUEST,
    RxCode.LENGTH: NakReason.LENGTH,
    RxCode.ACCESS: NakReason.ACCESS,
    RxCode.BOUNDS: NakReason.BOUNDS,
    RxCode.PSN_WINDOW: NakReason.PSN_WINDOW,
    RxCode.RNR: NakReason.RNR,
    RxCode.RECV_BOUNDS: NakReason.BOUNDS,
    RxCode.NO_READ: NakReason.INVALID_REQUEST,
    RxCode.MSG_SLOTS: NakReason.INVALID_REQUEST,
}

#: MR-RX-102: the outcomes decided in the window stage for a new PSN only (after MR-RX-020's
#: checks and the sequence state, as the endpoint decides them); a duplicate is acknowledged.
#: MR-RX-167: the message-slot verdict's MSG_SLOTS too (its LENGTH is MR-RX-020's code).
LATE_CODES = (RxCode.RNR, RxCode.RECV_BOUNDS, RxCode.MSG_SLOTS)

#: MR-RX-021, MR-RX-100: the opcodes this slice places (writes and sends); every other opcode
#: is NOT_HANDLED.
WRITE_OPS = (int(Op.MR_WRITE), int(Op.MR_WRITE_IMM))
SEND_OPS = (int(Op.MR_SEND), int(Op.MR_SEND_IMM))
#: MR-RX-126: READ requests (the responder side) are handled too
READ_REQ_OP = int(Op.MR_READ)
#: MR-RX-151: atomic requests (the responder side) too
ATOMIC_OPS = (int(Op.MR_CMP_SWAP), int(Op.MR_FETCH_ADD))
DATA_OPS = WRITE_OPS + SEND_OPS + (int(Op.MR_READ_RESP), READ_REQ_OP) + ATOMIC_OPS
#: MR-RX-160: the MRDH flag of an ERROR response (MR-WIRE-076, MR-VERB-004)
MRDH_ERROR = 0x8

#: MR-RX-050: counters, 64 bits each: one per RxCode, then these.
COUNTER_BITS = 64
#: MR-RX-047: the counters' pieces (bits), none with a carry chain longer than this.
COUNTER_PIECE = 16
CTR_ACKS = len(RxCode)
CTR_NAKS = CTR_ACKS + 1
CTR_CE = CTR_ACKS + 2
CTR_ABANDONED = CTR_ACKS + 3
CTR_PLACED_BYTES = CTR_ACKS + 4
#: MR-RX-081/083: completion records made, chunks already placed (or of a delivered
#: message), chunks refused by the message table (beyond its slots, or not matching their message)
CTR_CQES = CTR_ACKS + 5
CTR_DUP_CHUNKS = CTR_ACKS + 6
CTR_MSG_REFUSED = CTR_ACKS + 7
N_COUNTERS = CTR_MSG_REFUSED + 1

#: MR-RX-040: stages that run the checks of MR-RX-020 (S1..S3, after the row stage S0) before
#: the window stage S4.
CHECK_STAGES = 3

#: MR-RX-048: the cycles a slow window update (a filled gap, a slide) holds the pipeline after
#: its window-stage cycle.
HOLD_CYCLES = 5

#: MR-RX-327: from this frame interval on the slow update's hold is serial: the run vector
#: scanned SERIAL_PIECE bits a cycle (the hold :func:`hold_cycles` long)
SERIAL_INTERVAL = 8
SERIAL_PIECE = 64

#: MR-RX-310: the path row's SACK ring in the RTL's path table (PSN-indexed, ``psn mod 256``:
#: one bit a PSN of the window ``cum+1 .. cum+256``; MR-RX-013's 512 withdrawn).
RING_BITS = P.SACK_BITS

#: MR-RX-041: slots of each output queue (ACK/NAK requests, placement commands, payload steering).
FIFO_DEPTH = 16
#: MR-RX-165: bits of the counters that order operand captures and atomic items (modulo, compared
#: in the half space: at most FIFO_DEPTH steering entries and FIFO_DEPTH bundles outstanding)
CAP_COUNT_BITS = 6
#: MR-RX-175: bits of the placement counter whose value an atomic bundle carries (``pmark``):
#: the executor compares it with its done records in the half space (hw-engine.md MR-ENG-216)
PLACE_MARK_BITS = 16

#: MR-RX-060: configuration tables (``s_cfg`` ``table`` field).
TABLE_GLOBAL, TABLE_CONN, TABLE_KEY, TABLE_PATH, TABLE_MSG, TABLE_RECV, TABLE_READ = 0, 1, 2, 3, 4, 5, 6
#: MR-RX-173 (RxModel with ``max_rd_atomic`` only, no RTL yet): a responder resource of
#: connection ``addr`` freed (the TX half's ``m_rsp_done``: a response acknowledged in full)
TABLE_RSP_FREE = 7
#: hw-engine.md MR-ENG-271/272 (cap29): the whole engine's per-connection initiator depth
#: (RdRows' cap, not the RX's: the RX takes a record of this table and ignores it)
TABLE_INIT_DEPTH = 8
#: hw-engine.md MR-ENG-301/302 (psneng46): the whole engine's initial send PSN of a path (the TX
#: half's ``s_psn``, not the RX's: the RX takes a record of this table and ignores it)
TABLE_TX_PSN = 9

#: MR-RX-110: outstanding-read rows per (connection, stream): READ ``msg`` lives in row
#: ``msg mod rd_slots``.
RD_SLOTS = 2

#: MR-RX-101: receive-table rows per (connection, stream): the receive ``recv_seq`` lives in
#: row ``recv_seq mod recv_slots``.
RECV_SLOTS = 2

#: MR-RX-080: message slots per (connection, stream) in the message table (a message's slot is
#: its number modulo this), and chunk-ring entries per slot (the sender's chunk window,
#: MR-ENG-012, must not exceed it); each entry holds a placed flag and EPOCH_BITS of the
#: chunk's index over the ring (MR-RX-082).
MSG_SLOTS = 2
CHUNK_RING = 16
EPOCH_BITS = 8

#: MR-RX-084: the completion opcode of a WRITE_IMM at the receiver (verbs
#: IBV_WC_RECV_RDMA_WITH_IMM, models.endpoint.WcOpcode); MR-RX-104: of a SEND (IBV_WC_RECV).
WC_RECV_RDMA_WITH_IMM = 129
WC_RECV = 128
#: MR-RX-112: the completion opcode of a READ at the requester (IBV_WC_RDMA_READ).
WC_RDMA_READ = 2
#: MR-RX-160, MR-VERB-013: an atomic's completion opcodes at the requester (IBV_WC_COMP_SWAP,
#: IBV_WC_FETCH_ADD) and the status of a request its responder refused (IBV_WC_REM_ACCESS_ERR)
WC_COMP_SWAP, WC_FETCH_ADD, WC_REM_ACCESS_ERR = 3, 4, 10
#: MR-RX-159: the outstanding-read row's ``op`` (what the request was), and its completion opcode
RD_OP_READ, RD_OP_CMP_SWAP, RD_OP_FETCH_ADD = 0, 1, 2
RD_OP_WC = (WC_RDMA_READ, WC_COMP_SWAP, WC_FETCH_ADD, WC_RDMA_READ)

#: MR-RX-104: a message slot's kind: bit 0 the message carries an immediate, bit 1 it is a
#: SEND; kind 0 (a plain WRITE) completes without a record. MR-RX-130: bit 2 a READ request
#: (its delivery is a response item on m_rsp, not a completion record).
KIND_IMM, KIND_SEND, KIND_READ = 1, 2, 4
#: MR-RX-153: an atomic request's slot: bit 2 (a request) with bit 0 (compare-and-swap) or bit 1
#: (fetch-and-add), which never meet bit 2 otherwise
KIND_CMP_SWAP, KIND_FETCH_ADD = KIND_READ | 1, KIND_READ | 2


def msg_kind(opcode):
    """MR-RX-104, MR-RX-130, MR-RX-153: the message-slot kind of a data opcode."""
    if opcode == Op.MR_CMP_SWAP:
        return KIND_CMP_SWAP
    if opcode == Op.MR_FETCH_ADD:
        return KIND_FETCH_ADD
    return (KIND_IMM * int(opcode in (Op.MR_WRITE_IMM, Op.MR_SEND_IMM))
            | KIND_SEND * int(opcode in SEND_OPS) | KIND_READ * int(opcode == READ_REQ_OP))


class MsgCode(IntEnum):
    """MR-RX-083: what the message stage did with an accepted chunk."""
    NEW = 0             # placed into its message's accounting
    DUP = 1             # already placed, or its message already delivered
    REFUSED = 2         # beyond the slots (MR-SEC-006) or its slot's message differs (with
    #                     slot_nak, MR-RX-167: decided before the sequence state, the record NAKed)
ACK_EVERY_RESET = 4
#: MR-RX-090: the delayed-ACK time in clock cycles; 0 (reset) switches the timer off.
ACK_DELAY_RESET = 0
#: MR-RX-091: entries of the delayed-ACK timer queue; bits of the path row's ACK generation
#: (the low bits of its ``ack_timer`` field); bits of the cycle counter.
TIMER_DEPTH = 64
GEN_BITS = 8
TIME_BITS = 16
MTU_LOG2_RESET = 12

GLOBAL = data.StructLayout({"ack_every": 4, "mtu_log2": 4, "ack_delay": TIME_BITS})


def check_params(conns, paths, keys, msg_slots=MSG_SLOTS, chunk_ring=CHUNK_RING, recv_slots=RECV_SLOTS,
                 rd_slots=RD_SLOTS, streams=records.STREAMS):
    """MR-RX-001: power-of-two table sizes (the row index is a concatenation of bits)."""
    for name, v, lo, hi in (("conns", conns, 2, 1 << 16), ("paths", paths, 2, 256),
                            ("keys", keys, 2, 1 << 16), ("msg_slots", msg_slots, 1, 8),
                            ("chunk_ring", chunk_ring, 2, 512), ("recv_slots", recv_slots, 1, 64),
                            ("rd_slots", rd_slots, 1, 64), ("streams", streams, 1, records.STREAMS)):
        if not isinstance(v, int) or v < lo or v > hi or v & (v - 1):
            raise ValueError(f"{name} must be a power of two in [{lo}, {hi}], not {v!r}")


@dataclass(frozen=True)
class Layouts:
    """The RX engine's record and port layouts for one instance (MR-RX-002, MR-RX-010)."""
    conns: int
    paths: int
    keys: int
    conn_bits: int
    path_bits: int
    key_bits: int
    conn: data.StructLayout
    key: data.StructLayout
    path: data.StructLayout
    path_mem: data.StructLayout
    ack: data.StructLayout
    place: data.StructLayout
    cfg: data.StructLayout
    msg_slots: int
    chunk_ring: int
    msg_slot: data.StructLayout     # MR-RX-080: one slot of a message-table row
    msg_row: data.StructLayout      # MR-RX-080: a message-table row ({connection, stream})
    cqe: data.StructLayout          # MR-RX-084: a completion record
    cqe_bundle: data.StructLayout   # MR-RX-085: the records one chunk delivers
    recv_slots: int
    recv_bits: int
    recv: data.StructLayout         # MR-RX-101: a receive-table row
    rd_slots: int
    rd_bits: int
    rd: data.StructLayout           # MR-RX-110: an outstanding READ (written by configuration)
    rd_state: data.StructLayout     # MR-RX-110: its placed bytes and chunk ring (the message stage's)
    rsp: data.StructLayout          # MR-RX-131: a READ request's response item (m_rsp)
    rsp_bundle: data.StructLayout   # MR-RX-131: the response items one chunk delivers
    atom: data.StructLayout         # MR-RX-155: an atomic request's execution item (m_atom)
    atom_bundle: data.StructLayout  # MR-RX-155: the execution items one chunk delivers
    atom_entry: data.StructLayout   # MR-RX-155: an item in the atomic queue (without its operands)
    streams: int = records.STREAMS  # MR-RX-001: stream rows per connection in the per-stream tables
    stream_bits: int = records.STREAM_BITS


def layouts(conns=records.CONNS, paths=records.PATHS, keys=1024, msg_slots=MSG_SLOTS,
            chunk_ring=CHUNK_RING, recv_slots=RECV_SLOTS, rd_slots=RD_SLOTS, streams=records.STREAMS):
    check_params(conns, paths, keys, msg_slots, chunk_ring, recv_slots, rd_slots, streams)
    cb, pb, kb = (conns - 1).bit_length(), max(1, (paths - 1).bit_length()), (keys - 1).bit_length()
    # MR-RX-010: what the RX pipeline reads per connection. The P_Key has no field in
    # records.CONN_TX/CONN_RX yet (see the spec's open points).
    conn = data.StructLayout({"valid": 1, "pkey": 16, "n_paths_m1": pb,
                              "n_streams_m1": records.STREAM_BITS})
    # MR-RX-011: one memory region per row, indexed by the R_Key's low bits.
    key = data.StructLayout({"valid": 1, "rkey": 32, "base": 64, "length": 32, "access": 4})
    path = records.PATH_RX
    # MR-RX-310: the row as the RTL's path table stores it: the SACK as a PSN-indexed ring.
    # MR-RX-241: of `ack_timer` only the ACK generation (its low GEN_BITS), the bits any port reads
    path_mem = data.StructLayout(dict(("ring", RING_BITS) if name == "sack" else
                                      ("ack_timer", GEN_BITS) if name == "ack_timer" else (name, f.shape)
                                      for name, f in path))
    ack = data.StructLayout({"nak": 1, "conn": cb, "path": 8, "psn": P.wire.PSN_BITS,
                             "reason": 8, "cum": P.wire.PSN_BITS, "sack": P.SACK_BITS,
                             "ce_count": 16, "ece": 1, "sport": 16})
    place = data.StructLayout({"conn": cb, "addr": 64, "length": 16})
    row_bits = max(GLOBAL.size, conn.size, key.size, path.size)
    # MR-RX-001: the per-stream tables' rows per connection (the record's stream field stays
    # records.STREAM_BITS wide; a stream >= streams is refused, MR-RX-020)
    sb = (streams - 1).bit_length()
    rb = (recv_slots - 1).bit_length()
    # MR-RX-101: one posted receive per {connection, stream, recv_seq mod recv_slots}
    recv = data.StructLayout({"valid": 1, "recv_seq": 32, "base": 64, "length": 32, "wr_id": 64})
    rdb = (rd_slots - 1).bit_length()
    # MR-RX-110: one outstanding READ per {connection, stream, msg mod rd_slots}
    # MR-RX-159: `op` what the request was (RD_OP_*: a READ or an atomic), its completion's opcode
    rd = data.StructLayout({"valid": 1, "msg": 32, "base": 64, "length": 32, "wr_id": 64, "op": 2})
    rd_state = data.StructLayout({"done": 1, "placed": 32, "ring": chunk_ring * (1 + EPOCH_BITS)})
    # the configuration address of a per-stream row keeps the record's stream field whole
    esb = records.STREAM_BITS
    # MR-ENG-272: 4 bits of table, the engine's own tables 8.. beyond the RX's 0..7
    cfg = data.StructLayout({"table": 4, "addr": max(cb + pb, kb, cb + esb + rb, cb + esb + rdb), "data": row_bits})
    # MR-RX-080..082: the message table's row: the stream's next message to deliver and one
    # slot per message number modulo msg_slots (placed bytes, the chunk ring)
    # MR-RX-130: a READ request's slot keeps its length in `imm`, its host address in `wr_id`
    # and its refusal (ACCESS or BOUNDS) in `err`
    msg_slot = data.StructLayout({"valid": 1, "done": 1, "kind": 3, "err": 1, "msg_len": 32, "placed": 32,
                                  "imm": 32, "wr_id": 64, "ring": chunk_ring * (1 + EPOCH_BITS)})
    msg_row = data.StructLayout({"next": records.SEQ_BITS,
                                 "slots": data.ArrayLayout(msg_slot, msg_slots)})
    cqe = data.StructLayout({"conn": cb, "stream": records.STREAM_BITS, "msg": records.SEQ_BITS, "status": 5,
                             "opcode": 8, "length": 32, "imm": 32, "with_imm": 1, "wr_id": 64})
    cqe_bundle = data.StructLayout({"ok": msg_slots,
                                    "cqes": data.ArrayLayout(cqe, msg_slots)})
    # MR-RX-131: the TX side's input s_rsp takes these field names and widths (branch tx22)
    rsp = data.StructLayout({"conn": cb, "stream": 16, "msg": 32, "laddr": 64, "length": 32, "err": 1})
    rsp_bundle = data.StructLayout({"ok": msg_slots,
                                    "rsps": data.ArrayLayout(rsp, msg_slots)})
    # MR-RX-155: an atomic executed at its delivery point: the requester's stream and message,
    # the host address of its 8 bytes (0 when refused), the operation, the refusal
    # MR-RX-164: and its operands, as values (the payload's big-endian words): the swap or add
    # value, the compare value (0 for fetch-and-add)
    atom_entry = data.StructLayout({"conn": cb, "stream": 16, "msg": 32, "laddr": 64, "cas": 1, "err": 1})
    # MR-RX-175: and the placement commands pushed up to its delivering record's (`pmark`)
    atom = data.StructLayout({**{n: f.shape for n, f in atom_entry}, "operand": 64, "compare": 64,
                              "pmark": PLACE_MARK_BITS})
    # MR-RX-155, MR-RX-165: the atomic queue's entry: the items without their operands, and
    # the count of operand captures that must be done before they are shown (`mark`);
    # MR-RX-175: the placement mark its items carry (`pmark`)
    atom_bundle = data.StructLayout({"ok": msg_slots,
                                     "atoms": data.ArrayLayout(atom_entry, msg_slots), "mark": CAP_COUNT_BITS,
                                     "pmark": PLACE_MARK_BITS})
    return Layouts(conns, paths, keys, cb, pb, kb, conn, key, path, path_mem, ack, place, cfg,
                   msg_slots, chunk_ring, msg_slot, msg_row, cqe, cqe_bundle, recv_slots, rb, recv,
                   rd_slots, rdb, rd, rd_state, rsp, rsp_bundle, atom, atom_bundle, atom_entry, streams, sb)


def payload_layout(width):
    """MR-RX-002: a payload beat between blocks (bytes packed from lane 0, as the parser's)."""
    return data.StructLayout({"data": width, "keep": width // 8, "last": 1})


# ------------------------------------------------------------------ packing helpers

_FIELDS = {}


def _fields(layout):
    """``{name: (offset, mask)}`` of a layout's top-level fields, computed once per layout (the
    lockstep steps the model every cycle; amaranth's layout properties are slow to ask)."""
    got = _FIELDS.get(id(layout))
    if got is None or got[0] is not layout:
        got = _FIELDS[id(layout)] = (layout, {n: (f.offset, (1 << f.width) - 1) for n, f in layout})
    return got[1]


def pack(layout, values):
    """A dict of top-level fields into the flat integer of ``layout``; ValueError when a value
    does not fit its field (as records.fits)."""
    fields = _fields(layout)
    word = 0
    for name, v in values.items():
        off, mask = fields[name]
        v = int(v)
        if v < 0 or v > mask:
            raise ValueError(f"{name}={v} does not fit {mask.bit_length()} bits")
        word |= v << off
    return word


def unpack(layout, value):
    return {n: (value >> off) & mask for n, (off, mask) in _fields(layout).items()}


#: The META_LAYOUT fields the RX engine reads (MR-RX-020): (path, offset, mask).
_META_USED = [(path, off, (1 << w) - 1) for path, off, w in META_FIELDS
              if path in {("drop",), ("payload_len",), ("ip", "ecn"), ("udp", "sport"), ("imm",)}
              or (path[0] == "bth" and path[1] in ("opcode", "pkey", "dest_qp", "ack_req", "psn"))
              or (path[0] == "mrdh" and path[1] in ("flags", "path", "stream", "msg", "offset", "msg_len"))
              or (path[0] == "reth" and path[1] in ("va", "rkey", "dma_len"))
              or path == ("mrsh", "recv_seq")]


def meta_fields(value):
    """The fields of a flat META_LAYOUT value the RX engine reads, as a nested dict."""
    out = {"bth": {}, "mrdh": {}, "reth": {}, "ip": {}, "udp": {}, "mrsh": {}}
    for path, off, mask in _META_USED:
        v = (value >> off) & mask
        if len(path) == 1:
            out[path[0]] = v
        else:
            out[path[0]][path[1]] = v
    return out


# ------------------------------------------------------------------ packet semantics

@dataclass
class Outcome:
    """What one metadata record does (MR-RX-022..031)."""
    code: RxCode
    ack: dict | None = None         # the ACK/NAK request (fields of Layouts.ack), or None
    place: dict | None = None       # the placement command (fields of Layouts.place), or None
    steer: int | None = None        # payload packet: 1 written, 0 discarded; None: no payload
    ce: int = 0                     # an accepted CE-marked packet
    abandoned: int = 0              # PSNs abandoned by a window slide (MR-SEQ-008)
    placed_bytes: int = 0
    msg: MsgCode | None = None      # the message stage's verdict on an accepted chunk (MR-RX-083)
    arm: tuple | None = None        # MR-RX-092: (path row, generation) of a delayed-ACK timer
    cqes: list | None = None        # completion records it delivers (dicts of Layouts.cqe)
    rsps: list | None = None        # MR-RX-131: READ requests it executes (dicts of Layouts.rsp)
    atoms: list | None = None       # MR-RX-155: atomics it executes (dicts of Layouts.atom)
    cap_row: int | None = None      # MR-RX-163: a new atomic: its operands' row (its payload captured)


@dataclass
class _Static:
    """The result of the checks that need no sequence state (MR-RX-020), as S1 hands it on."""
    code: RxCode | None
    conn: int
    path: int
    path_row: int
    psn: int
    ack_req: int
    ce: int
    sport: int
    plen: int
    addr: int
    steer: bool
    msg_row: int = 0        # MR-RX-080: {connection, stream}
    stream: int = 0
    msg: int = 0
    msg_len: int = 0
    chunk: int = 0          # the chunk's index: offset >> log2(MTU)
    kind: int = 0           # MR-RX-104: the message slot's kind (msg_kind)
    imm: int = 0
    late: RxCode | None = None  # MR-RX-102: RNR or RECV_BOUNDS, applied to a new PSN only
    stale: bool = False     # MR-RX-103: a SEND of a receive already reposted: accepted, not placed
    wr_id: int = 0          # MR-RX-104: the matched receive's
    rd_row: int | None = None   # MR-RX-111: a READ response's outstanding-read row
    err: int = 0            # MR-RX-128: a READ request whose key or range is refused;
    #                         MR-RX-160: an ERROR response
    atom: bool = False      # MR-RX-151: an atomic request (its operands are not placed)


class RxModel:
    """The RX engine's state and per-packet semantics (MR-RX-020..031)."""

    def __init__(self, conns=records.CONNS, paths=records.PATHS, keys=1024, msg_slots=MSG_SLOTS,
                 chunk_ring=CHUNK_RING, recv_slots=RECV_SLOTS, rd_slots=RD_SLOTS, streams=records.STREAMS,
                 slot_nak=True, max_rd_atomic=None, cfg_sack=True):
        self.lay = layouts(conns, paths, keys, msg_slots, chunk_ring, recv_slots, rd_slots, streams)
        # MR-RX-240: off, a configuration write of a path row clears its SACK (the field unread)
        self.cfg_sack = cfg_sack
        # MR-RX-173: responder resources per connection (MR-VERB-005); None: not bounded
        self.max_rd_atomic = max_rd_atomic
        self.rsp_used = {}
        # MR-RX-167: the message-slot verdict before the sequence state (NAKed); off: refused
        # after it, in the message stage (MR-RX-083)
        self.slot_nak = slot_nak
        self.conn = {}          # row index -> dict (absent rows read as zeros)
        self.key = {}
        self.recv = {}          # MR-RX-101: receive-table row ({conn, stream, slot}) -> dict
        self.rd = {}            # MR-RX-110: outstanding-read row ({conn, stream, slot}) -> dict
        self.rd_state = {}      # ... and its placed bytes and chunk ring
        self.path = {}
        self.msgs = {}          # message-table row ({conn, stream}) -> {"next", "slots"}
        self.ack_every = ACK_EVERY_RESET
        self.mtu_log2 = MTU_LOG2_RESET
        self.ack_delay = ACK_DELAY_RESET
        self.counters = [0] * N_COUNTERS

    # -- configuration (MR-RX-060)
    def write_cfg(self, table, addr, value):
        lay = self.lay
        if table == TABLE_GLOBAL:
            g = unpack(GLOBAL, value)
            self.ack_every, self.mtu_log2, self.ack_delay = g["ack_every"], g["mtu_log2"], g["ack_delay"]
        elif table == TABLE_CONN:
            self.conn[addr & (lay.conns - 1)] = unpack(lay.conn, value)
        elif table == TABLE_KEY:
            self.key[addr & (lay.keys - 1)] = unpack(lay.key, value)
        elif table == TABLE_PATH:
            row = unpack(lay.path, value)
            if not self.cfg_sack:
                row["sack"] = 0         # MR-RX-240
            self.path[addr & (lay.conns * lay.paths - 1)] = row
        elif table == TABLE_RSP_FREE:
            # MR-RX-173: a response acknowledged in full frees its connection's resource
            ci = addr & (lay.conns - 1)
            self.rsp_used[ci] = max(0, self.rsp_used.get(ci, 0) - 1)
        elif table in (TABLE_MSG, TABLE_RECV, TABLE_READ) and not self._stream_held(table, addr):
            pass        # MR-RX-060: a per-stream row of a stream beyond the instance's streams
        elif table == TABLE_MSG:
            # MR-RX-086: the stream's next message to deliver; every slot emptied
            self.msgs[addr & ((lay.conns << records.STREAM_BITS) - 1)] = {
                "next": value & 0xFFFFFFFF, "slots": [None] * lay.msg_slots}
        elif table == TABLE_RECV:
            # MR-RX-101: a receive posted (or its row emptied, valid 0)
            self.recv[addr & ((lay.conns << (records.STREAM_BITS + lay.recv_bits)) - 1)] = unpack(lay.recv, value)
        elif table == TABLE_READ:
            # MR-RX-110: the TX side sent a READ request: its row, accounting emptied
            i = addr & ((lay.conns << (records.STREAM_BITS + lay.rd_bits)) - 1)
            self.rd[i] = unpack(lay.rd, value)
            self.rd_state[i] = None

    def _stream_held(self, table, addr):
        """MR-RX-001/060: whether a per-stream table's configuration address names a stream
        below ``streams`` (the instance holds rows for those only)."""
        low = {TABLE_MSG: 0, TABLE_RECV: self.lay.recv_bits, TABLE_READ: self.lay.rd_bits}[table]
        return (addr >> low) & (records.STREAMS - 1) < self.lay.streams

    def conn_row(self, meta):
        return self.conn.get(meta["bth"]["dest_qp"] & (self.lay.conns - 1)) or unpack(self.lay.conn, 0)

    def key_row(self, meta):
        return self.key.get(meta["reth"]["rkey"] & (self.lay.keys - 1)) or unpack(self.lay.key, 0)

    def _stream_slot(self, meta, seq, bits):
        """The row of {connection, stream, seq mod 2^bits} (bits of the record)."""
        lay = self.lay
        sb = records.STREAM_BITS
        cs = ((meta["bth"]["dest_qp"] & (lay.conns - 1)) << sb) | (meta["mrdh"]["stream"] & ((1 << sb) - 1))
        return (cs << bits) | (seq & ((1 << bits) - 1))

    def recv_index(self, meta):
        """MR-RX-101: the receive-table row a packet names: {connection, stream, recv_seq mod
        recv_slots} (read for every record, used for a SEND)."""
        return self._stream_slot(meta, meta["mrsh"]["recv_seq"], self.lay.recv_bits)

    def recv_row(self, meta):
        return self.recv.get(self.recv_index(meta)) or unpack(self.lay.recv, 0)

    def rd_index(self, meta):
        """MR-RX-110: the outstanding-read row a packet names: {connection, stream, msg mod
        rd_slots}."""
        return self._stream_slot(meta, meta["mrdh"]["msg"], self.lay.rd_bits)

    def rd_row(self, meta):
        return self.rd.get(self.rd_index(meta)) or unpack(self.lay.rd, 0)

    def path_row(self, index):
        return self.path.get(index) or unpack(self.lay.path, 0)

    # -- the checks that need no sequence state (MR-RX-020, MR-SEC-007 order)
    def static(self, meta, conn=None, key=None, recv=None, rd=None):
        lay = self.lay
        conn = self.conn_row(meta) if conn is None else conn
        key = self.key_row(meta) if key is None else key
        recv = self.recv_row(meta) if recv is None else recv
        rd = self.rd_row(meta) if rd is None else rd
        bth, mrdh, reth = meta["bth"], meta["mrdh"], meta["reth"]
        plen = meta["payload_len"]
        qp = bth["dest_qp"]
        ci = qp & (lay.conns - 1)
        path = mrdh["path"]
        row = (ci << lay.path_bits) | (path & (lay.paths - 1))
        steer = not meta["drop"] and plen > 0
        mtu = 1 << self.mtu_log2
        send = bth["opcode"] in SEND_OPS
        read = bth["opcode"] == Op.MR_READ_RESP
        rreq = bth["opcode"] == READ_REQ_OP
        atom = bth["opcode"] in ATOMIC_OPS
        # MR-RX-160: an ERROR response (msg_len 0, no payload) ends its request in error
        error = int(read and bool(mrdh["flags"] & MRDH_ERROR))
        code, err = None, 0
        if meta["drop"]:
            code = RxCode.PARSER_DROP
        elif bth["opcode"] not in DATA_OPS:
            code = RxCode.NOT_HANDLED
        elif qp >= lay.conns or not conn["valid"]:
            code = RxCode.NO_CONNECTION                 # MR-SEC-001 (no NAK, MR-ERR-005)
        elif bth["pkey"] != conn["pkey"]:
            code = RxCode.BAD_PKEY                      # MR-SEC-008 (no NAK)
        elif path > conn["n_paths_m1"]:
            code = RxCode.BAD_PATH
        elif P.check_stream(mrdh["stream"], min(conn["n_streams_m1"] + 1, lay.streams)) is not None:
            code = RxCode.STREAM                        # MR-SEC-002
        elif P.check_chunk(mrdh["offset"], plen, mrdh["msg_len"], mtu) is not None:
            code = RxCode.CHUNK                         # MR-PLC-003
        elif send:
            pass                                        # MR-RX-100: no RETH to check
        elif read:
            # MR-RX-111: the READ it answers (the endpoint's _validate_resp)
            if rd["valid"] and rd["msg"] == mrdh["msg"]:
                if mrdh["msg_len"] != (0 if error else rd["length"]):
                    code = RxCode.LENGTH
            elif not (rd["valid"] and P.seq_lt32(mrdh["msg"], rd["msg"])):
                code = RxCode.NO_READ
        elif rreq:
            # MR-RX-127/128 (MR-VERB-002): a one-packet message without payload (msg_len 0,
            # else LENGTH); a key or range refused is no drop: the request is accepted and
            # answered in order by an ERROR response (err)
            if mrdh["msg_len"] != 0:
                code = RxCode.LENGTH
            else:
                hit = key["valid"] and key["rkey"] == reth["rkey"]
                err = int(P.check_access(key["length"] if hit else None, key["access"],
                                         P.ACCESS_REMOTE_READ, reth["va"], reth["dma_len"]) is not None)
        elif atom:
            # MR-RX-152 (MR-VERB-002, MR-VERB-011): the operands (msg_len 16 or 8) and 8 bytes
            # named (DMA length 8), else LENGTH; an 8-byte aligned VA, else INVALID_REQUEST
            # (counted as chunk); key, ACCESS_REMOTE_ATOMIC and range refused: err, as a READ's
            if reth["dma_len"] != 8 or mrdh["msg_len"] != (16 if bth["opcode"] == Op.MR_CMP_SWAP else 8):
                code = RxCode.LENGTH
            elif reth["va"] & 7:
                code = RxCode.CHUNK
            else:
                hit = key["valid"] and key["rkey"] == reth["rkey"]
                err = int(P.check_access(key["length"] if hit else None, key["access"],
                                         P.ACCESS_REMOTE_ATOMIC, reth["va"], 8) is not None)
        elif reth["dma_len"] != mrdh["msg_len"]:
            code = RxCode.LENGTH
        else:
            hit = key["valid"] and key["rkey"] == reth["rkey"]
            r = P.check_access(key["length"] if hit else None, key["access"],
                               P.ACCESS_REMOTE_WRITE, reth["va"], mrdh["msg_len"])
            if r == NakReason.ACCESS:
                code = RxCode.ACCESS                    # MR-SEC-004
            elif r == NakReason.BOUNDS:
                code = RxCode.BOUNDS                    # MR-SEC-005
        late, stale, wr_id = None, False, 0
        if send:
            # MR-RX-102/103: the receive row against the MRSH recv_seq: the same receive (its
            # length bounds the message), a later one (this receive was completed and its row
            # reposted: the message was delivered), else none posted (RNR)
            rseq = meta["mrsh"]["recv_seq"]
            if recv["valid"] and recv["recv_seq"] == rseq:
                late = RxCode.RECV_BOUNDS if mrdh["msg_len"] > recv["length"] else None
                wr_id = recv["wr_id"]
            elif recv["valid"] and P.seq_lt32(rseq, recv["recv_seq"]):
                stale = True
            else:
                late = RxCode.RNR
            addr = (recv["base"] + mrdh["offset"]) & P.U64_MASK
        elif read:
            # MR-RX-111: a response to a READ whose row was reused (its READ completed) is stale
            stale = not (rd["valid"] and rd["msg"] == mrdh["msg"])
            wr_id = 0 if stale else rd["wr_id"]
            addr = (rd["base"] + mrdh["offset"]) & P.U64_MASK
        else:
            addr = (key["base"] + reth["va"] + mrdh["offset"]) & P.U64_MASK
        imm = meta["imm"]
        kind = msg_kind(bth["opcode"])
        if rreq or atom:
            # MR-RX-130: the message slot keeps the request's host address (in wr_id) and length
            # (in imm: a READ request carries no immediate); MR-RX-153: an atomic's likewise
            wr_id, imm = addr, reth["dma_len"]
        elif read:
            # MR-RX-159/160: the READ stage's record takes the row's length (an ERROR response
            # has msg_len 0), its op and the ERROR flag
            imm, kind, err = rd["length"], rd["op"], error
        stream = mrdh["stream"] & ((1 << records.STREAM_BITS) - 1)
        return _Static(code, ci, path, row, bth["psn"], bth["ack_req"], int(meta["ip"]["ecn"] == 3),
                       meta["udp"]["sport"], plen, addr, steer,
                       msg_row=(ci << records.STREAM_BITS) | stream, stream=stream, msg=mrdh["msg"],
                       msg_len=mrdh["msg_len"], chunk=mrdh["offset"] >> self.mtu_log2,
                       kind=kind, imm=imm, late=late, stale=stale,
                       wr_id=wr_id, rd_row=self.rd_index(meta) if read else None, err=err, atom=atom)

    # -- the sequence state (MR-RX-024..031)
    def dynamic(self, st: _Static) -> Outcome:
        steer = 1 if st.steer else None
        if st.code is not None:
            out = Outcome(st.code, steer=0 if st.steer else None)
            if st.code in NAK_OF:
                out.ack = self._nak(st, NAK_OF[st.code])
            return out
        row = self.path_row(st.path_row)
        cls = P.rx_classify(row["cum"], row["sack"], st.psn)
        if cls == P.RX_OUT:
            return Outcome(RxCode.PSN_WINDOW, ack=self._nak(st, NakReason.PSN_WINDOW),
                           steer=0 if st.steer else None)
        if cls == P.RX_DUP:
            ack = self._ack(st, row, row["ce"])
            row = dict(row, ce=0, pending=0, ack_timer=_next_gen(row["ack_timer"]))
            self.path[st.path_row] = row
            return Outcome(RxCode.DUPLICATE, ack=ack, steer=0 if st.steer else None)
        if self.slot_nak and st.rd_row is None:
            # MR-RX-167/168: the message-slot verdict, before any sequence state changes (the
            # endpoint's MR-SEC-006 and LENGTH, ahead of its receive's RNR and BOUNDS)
            v = self.slot_verdict(st)
            if v is not None:
                return Outcome(v, ack=self._nak(st, NAK_OF[v]), steer=0 if st.steer else None,
                               msg=MsgCode.REFUSED)
        if self.max_rd_atomic is not None and self._takes_resource(st) and (
                self.rsp_used.get(st.conn, 0) >= self.max_rd_atomic):
            # MR-RX-173 (MR-VERB-005): a new READ or atomic request beyond the connection's
            # resources is NAKed RNR before the sequence state; the requester resends it
            return Outcome(RxCode.RNR, ack=self._nak(st, NakReason.RNR), steer=0 if st.steer else None)
        if st.late is not None:
            # MR-RX-102: RNR or a receive too short, for a new PSN: NAKed, the row unchanged
            return Outcome(st.late, ack=self._nak(st, NAK_OF[st.late]), steer=0 if st.steer else None)
        # new PSN: MR-SEQ-005..009
        gap = st.psn != row["high"]
        high = P.psn_add(st.psn, 1) if P.psn_dist(row["high"], st.psn) >= 0 else row["high"]
        cum, sack, abandoned = P.rx_accept(row["cum"], row["sack"], st.psn)
        onset = st.ce and not row["prev_ce"]
        ce = min(0xFFFF, row["ce"] + st.ce)
        pending = (row["pending"] + 1) & 0xF
        new = dict(row, cum=cum, sack=sack, high=high, prev_ce=st.ce)
        ack = None
        if st.ack_req or gap or pending >= self.ack_every or onset:
            ack = self._ack(st, new, ce)
            new.update(ce=0, pending=0, ack_timer=_next_gen(row["ack_timer"]))
        else:
            new.update(ce=ce, pending=pending, last_psn=st.psn, last_sport=st.sport)
        self.path[st.path_row] = new
        # MR-RX-154: an atomic's payload is its operands, not bytes to place
        placing = st.plen and not st.stale and not st.atom
        place = {"conn": st.conn, "addr": st.addr, "length": st.plen} if placing else None
        if st.stale or st.atom:
            steer = 0 if st.steer else None     # MR-RX-103: its buffer is another receive's now
        rsps, atoms = [], []
        if st.rd_row is not None:
            mcode, cqes = (MsgCode.DUP, []) if st.stale else self.read_chunk(st)
        else:
            mcode, cqes, rsps, atoms = self.message(st)
        # MR-RX-092: the first unacknowledged packet since the path's last ACK arms the timer
        arm = (st.path_row, row["ack_timer"] & GEN_MASK) if (
            ack is None and row["pending"] == 0 and self.ack_delay) else None
        # MR-RX-163: a new atomic's operands go to the operand table's row of its message slot
        cap_row = self.operand_row(st.conn, st.stream, st.msg) if st.atom and mcode == MsgCode.NEW else None
        return Outcome(RxCode.ACCEPTED, ack=ack, place=place, steer=steer, ce=st.ce, cap_row=cap_row,
                       abandoned=abandoned, placed_bytes=st.plen if placing else 0, msg=mcode,
                       cqes=cqes, arm=arm, rsps=rsps, atoms=atoms)

    def operand_row(self, conn, stream, msg):
        """MR-RX-163: the operand table's row of an atomic: {connection, stream, msg mod
        msg_slots} (its message slot's)."""
        lay = self.lay
        sb = (lay.msg_slots - 1).bit_length()
        return (((conn << lay.stream_bits) | (stream & (lay.streams - 1))) << sb) | (msg & (lay.msg_slots - 1))

    def timer(self, path_row, gen):
        """MR-RX-093: a delayed-ACK timer of path row ``path_row`` armed at ACK generation
        ``gen`` expires: when no ACK left the path since (same generation) and packets are
        pending, the path is acknowledged for its newest pending packet (MR-SEQ-009)."""
        lay = self.lay
        row = self.path_row(path_row)
        if (row["ack_timer"] & GEN_MASK) != gen or not row["pending"]:
            return Outcome(None)
        st = _Static(None, path_row >> lay.path_bits, path_row & (lay.paths - 1), path_row,
                     row["last_psn"], 0, 0, row["last_sport"], 0, 0, False)
        ack = self._ack(st, row, row["ce"])
        self.path[path_row] = dict(row, ce=0, pending=0, ack_timer=_next_gen(row["ack_timer"]))
        return Outcome(None, ack=ack)

    # -- the message stage (MR-RX-080..085)
    def slot_verdict(self, st):
        """MR-RX-167/168: the message table's verdict on a new PSN of a message chunk, taken in
        the window stage before the path row changes: ``None`` (a message delivered before, or
        within the stream's slots and consistent with the one its slot holds),
        :data:`RxCode.MSG_SLOTS` (``msg_slots`` or more ahead of the stream's next message,
        MR-SEC-006: NAK INVALID_REQUEST) or :data:`RxCode.LENGTH` (its slot holds the message
        with another ``msg_len`` or kind: NAK LENGTH), by ``protocol.msg_slot_verdict``. Within
        the slots, slot ``msg mod msg_slots`` can only hold message ``msg``."""
        n = self.lay.msg_slots
        row = self.msgs.get(st.msg_row)
        nxt = 0 if row is None else row["next"]
        slot = None if row is None else row["slots"][st.msg % n]
        held = slot is not None and (slot["msg_len"] != st.msg_len or slot["kind"] != st.kind)
        r = P.msg_slot_verdict(st.msg, nxt, n, held)
        return None if r is None else (RxCode.MSG_SLOTS if r == NakReason.INVALID_REQUEST else RxCode.LENGTH)

    def _takes_resource(self, st):
        """MR-RX-173: a READ or atomic request (a message-table record, kind bit 2) whose message
        is neither delivered nor open: it would take a fresh slot and a responder resource."""
        if st.rd_row is not None or not st.kind & KIND_READ:
            return False
        row = self.msgs.get(st.msg_row)
        nxt = 0 if row is None else row["next"]
        d = (st.msg - nxt) & 0xFFFFFFFF
        if P.seq_lt32(st.msg, nxt) or d >= self.lay.msg_slots:
            return False
        return row is None or row["slots"][st.msg % self.lay.msg_slots] is None

    def message(self, st):
        """An accepted chunk in its message: its slot, the chunk ring, the placed bytes, and
        the completion records of the messages it lets the stream deliver, in message order
        (MR-EXO-001, MR-EXO-002, MR-EXO-004), and the READ requests it executes (MR-RX-131).
        MR-RX-155: and the atomics it executes. Returns ``(MsgCode, [cqe dicts], [rsp dicts],
        [atom dicts])``."""
        lay = self.lay
        n = lay.msg_slots
        row = self.msgs.get(st.msg_row)
        if row is None:
            row = self.msgs[st.msg_row] = {"next": 0, "slots": [None] * n}
        d = (st.msg - row["next"]) & 0xFFFFFFFF
        if d >= 1 << 31:
            return MsgCode.DUP, [], [], []      # MR-EXO-005: its message is delivered
        if d >= n:
            return MsgCode.REFUSED, [], [], []  # MR-SEC-006: beyond the stream's slots
        k = st.msg % n
        slot = row["slots"][k]
        if slot is None:
            if self.max_rd_atomic is not None and st.kind & KIND_READ:
                self.rsp_used[st.conn] = self.rsp_used.get(st.conn, 0) + 1     # MR-RX-173
            slot = {"done": 0, "kind": st.kind, "err": st.err, "msg_len": st.msg_len, "placed": 0,
                    "imm": st.imm, "wr_id": st.wr_id, "ring": [0] * lay.chunk_ring}
        elif slot["msg_len"] != st.msg_len or slot["kind"] != st.kind:
            return MsgCode.REFUSED, [], [], []  # not the message its slot holds
        pos = st.chunk % lay.chunk_ring
        epoch = (st.chunk // lay.chunk_ring) & ((1 << EPOCH_BITS) - 1)
        if not chunk_new(slot["ring"][pos], epoch):
            return MsgCode.DUP, [], [], []      # MR-EXO-002: placed before
        # the endpoint keeps the immediate of the last new chunk (every chunk carries it)
        slot = dict(slot, ring=list(slot["ring"]), placed=slot["placed"] + st.plen, imm=st.imm)
        slot["ring"][pos] = (1 << EPOCH_BITS) | epoch
        slot["done"] = int(slot["placed"] == slot["msg_len"])
        row["slots"][k] = slot
        cqes, rsps, atoms = [], [], []
        if slot["done"] and d == 0:
            # MR-EXO-004: this message and the done ones after it deliver, in order
            nxt = row["next"]
            while True:
                j = nxt % n
                s = row["slots"][j]
                if s is None or not s["done"]:
                    break
                if s["kind"] in (KIND_CMP_SWAP, KIND_FETCH_ADD):
                    # MR-RX-155 (MR-VERB-012): an atomic executes here, once: its item names the
                    # 8 bytes; a refused one (err) is answered by an ERROR response
                    atoms.append({"conn": st.conn, "stream": st.stream, "msg": nxt,
                                  "laddr": 0 if s["err"] else s["wr_id"],
                                  "cas": int(s["kind"] == KIND_CMP_SWAP), "err": s["err"]})
                elif s["kind"] & KIND_READ:
                    # MR-RX-131: a READ request executes at its stream's delivery point; a
                    # refused one (err) is answered by an ERROR response and reads nothing
                    rsps.append({"conn": st.conn, "stream": st.stream, "msg": nxt,
                                 "laddr": 0 if s["err"] else s["wr_id"], "length": s["imm"],
                                 "err": s["err"]})
                elif s["kind"]:
                    # MR-RX-084, MR-RX-104: a WRITE_IMM's record, or a SEND's with its receive's wr_id
                    send = s["kind"] & KIND_SEND
                    cqes.append({"conn": st.conn, "stream": st.stream, "msg": nxt, "status": 0,
                                 "opcode": WC_RECV if send else WC_RECV_RDMA_WITH_IMM,
                                 "length": s["msg_len"], "imm": s["imm"],
                                 "with_imm": s["kind"] & KIND_IMM, "wr_id": s["wr_id"] if send else 0})
                row["slots"][j] = None
                nxt = (nxt + 1) & 0xFFFFFFFF
            row["next"] = nxt
        return MsgCode.NEW, cqes, rsps, atoms

    def read_chunk(self, st):
        """MR-RX-112: an accepted chunk of a READ response in its outstanding-read row: new
        (the chunk ring as MR-RX-082), its bytes counted; the READ completes when every byte is
        placed: a record with opcode RDMA_READ and the READ's wr_id, and the row is done."""
        lay = self.lay
        state = self.rd_state.get(st.rd_row)
        if state is None:
            state = {"done": 0, "placed": 0, "ring": [0] * lay.chunk_ring}
        if state["done"]:
            return MsgCode.DUP, []
        pos = st.chunk % lay.chunk_ring
        epoch = (st.chunk // lay.chunk_ring) & ((1 << EPOCH_BITS) - 1)
        if not chunk_new(state["ring"][pos], epoch):
            return MsgCode.DUP, []
        state = {"done": 0, "placed": state["placed"] + st.plen, "ring": list(state["ring"])}
        state["ring"][pos] = (1 << EPOCH_BITS) | epoch
        cqes = []
        if state["placed"] == st.msg_len:
            state["done"] = 1
            # MR-RX-159/160: the request's completion opcode and length (the row's), an ERROR
            # response's status REM_ACCESS_ERR
            cqes.append({"conn": st.conn, "stream": st.stream, "msg": st.msg,
                         "status": WC_REM_ACCESS_ERR if st.err else 0,
                         "opcode": RD_OP_WC[st.kind & 3], "length": st.imm, "imm": 0, "with_imm": 0,
                         "wr_id": st.wr_id})
        self.rd_state[st.rd_row] = state
        return MsgCode.NEW, cqes

    def _ack(self, st, row, ce):
        return {"nak": 0, "conn": st.conn, "path": st.path, "psn": st.psn, "reason": 0,
                "cum": row["cum"], "sack": row["sack"], "ce_count": ce, "ece": int(ce != 0),
                "sport": st.sport}

    def _nak(self, st, reason):
        return {"nak": 1, "conn": st.conn, "path": st.path, "psn": st.psn, "reason": int(reason),
                "cum": 0, "sack": 0, "ce_count": 0, "ece": 0, "sport": st.sport}

    def count(self, out: Outcome):
        """MR-RX-050: the counters one outcome increments."""
        c = self.counters
        mask = (1 << COUNTER_BITS) - 1
        for i, n in ((0 if out.code is None else int(out.code), int(out.code is not None)), (CTR_ACKS, int(out.ack is not None and not out.ack["nak"])),
                     (CTR_NAKS, int(out.ack is not None and out.ack["nak"])), (CTR_CE, out.ce),
                     (CTR_ABANDONED, out.abandoned), (CTR_PLACED_BYTES, out.placed_bytes),
                     (CTR_CQES, len(out.cqes or ())), (CTR_DUP_CHUNKS, int(out.msg == MsgCode.DUP)),
                     (CTR_MSG_REFUSED, int(out.msg == MsgCode.REFUSED))):
            c[i] = (c[i] + n) & mask

    def packet(self, meta) -> Outcome:
        """One parsed packet's metadata (a META_LAYOUT dict or its flat integer): checks, window
        and ACK policy, counted (MR-RX-020..031, MR-RX-050)."""
        if isinstance(meta, int):
            meta = meta_fields(meta)
        out = self.dynamic(self.static(meta))
        self.count(out)
        return out


# ------------------------------------------------------------------ cycle timing

INPUTS = ("s_meta__payload", "s_meta__valid", "s_payload__payload", "s_payload__valid",
          "s_cfg__payload", "s_cfg__valid", "m_ack__ready", "m_place__ready", "m_data__ready",
          "m_cqe__ready", "m_rsp__ready", "m_atom__ready", "reg_addr")
OUTPUTS = ("s_meta__ready", "s_payload__ready", "s_cfg__ready", "m_ack__payload", "m_ack__valid",
           "m_place__payload", "m_place__valid", "m_data__payload", "m_data__valid",
           "m_cqe__payload", "m_cqe__valid", "m_rsp__payload", "m_rsp__valid", "m_atom__payload",
           "m_atom__valid", "reg_data")


def pack_bundle(lay, cqes):
    """MR-RX-085, MR-RX-259: the completion records one chunk delivers as one queue entry, the
    records in entries 0.. and ``ok`` marking them (the RTL keeps each record in its run
    position; the entries shown, in order, are the same)."""
    word = pack(lay.cqe_bundle, {"ok": (1 << len(cqes)) - 1})
    off = lay.cqe_bundle["cqes"].offset
    for i, c in enumerate(cqes):
        word |= pack(lay.cqe, c) << (off + i * lay.cqe.size)
    return word


def pack_rsp_bundle(lay, rsps, bundle=None, item=None):
    """MR-RX-131: the response items one chunk delivers as one queue entry, as
    :func:`pack_bundle` (MR-RX-155: ``bundle`` and ``item`` the atomics' layouts)."""
    bundle = lay.rsp_bundle if bundle is None else bundle
    item = lay.rsp if item is None else item
    word = pack(bundle, {"ok": (1 << len(rsps)) - 1})
    off = bundle[next(n for n, _ in bundle if n != "ok")].offset
    for i, r in enumerate(rsps):
        word |= pack(item, r) << (off + i * item.size)
    return word


def bundle_entry(lay, word, i, bundle=None, item=None):
    """Record ``i`` (flat) of a bundle packed from entry 0 (:func:`pack_bundle`), and the
    bundle's last index (a completion bundle, or ``bundle`` of ``item`` records)."""
    bundle = lay.cqe_bundle if bundle is None else bundle
    item = lay.cqe if item is None else item
    off = bundle[next(n for n, _ in bundle if n != "ok")].offset + i * item.size
    ok = word >> bundle["ok"].offset & ((1 << bundle["ok"].width) - 1)
    return (word >> off) & ((1 << item.size) - 1), max(ok.bit_length() - 1, 0)


GEN_MASK = (1 << GEN_BITS) - 1
TIME_MASK = (1 << TIME_BITS) - 1


def _next_gen(ack_timer):
    """MR-RX-091: the path row's ACK generation (the low GEN_BITS of ``ack_timer``) advanced by
    one ACK; the field's other bits are kept."""
    return (ack_timer & ~GEN_MASK) | ((ack_timer + 1) & GEN_MASK)


def chunk_new(entry, epoch):
    """MR-RX-082: a chunk is new when its ring entry is empty or holds the chunk one ring
    length before it (epoch - 1); an entry of its own epoch or of a later one means it was
    placed (a sender keeps its chunks within one ring length of its lowest unacknowledged chunk,
    MR-ENG-012, so the entry holds the latest chunk placed at that position)."""
    placed = entry >> EPOCH_BITS & 1
    mask = (1 << EPOCH_BITS) - 1
    return not placed or (entry & mask) == (epoch - 1) & mask


def hold_cycles(interval=1):
    """MR-RX-048, MR-RX-327: the cycles a slow update holds the pipeline at frame interval
    ``interval``: :data:`HOLD_CYCLES` below :data:`SERIAL_INTERVAL`, from it one cycle per
    :data:`SERIAL_PIECE`-bit piece of the ring plus four (the first piece's turn, the last
    piece's scan, the clear's turn back loaded and turned, the write)."""
    if interval < SERIAL_INTERVAL:
        return HOLD_CYCLES
    return RING_BITS // SERIAL_PIECE + 4


def is_slow(cum, psn, new_cum):
    """MR-RX-048: an accepted PSN whose window update is slow: a slide (more than
    ``SACK_BITS`` ahead of ``cum``) or a filled gap (``cum`` advances by more than one)."""
    return P.psn_dist(cum, psn) > P.SACK_BITS or P.psn_dist(cum, new_cum) > 1


class RxCycleModel:
    """The RX engine's timing around :class:`RxModel` (MR-RX-040..044, MR-RX-048):
    ``step(inputs)`` once per clock with every input port's value (names of
    :meth:`port_names`), returning every output port's value in the same cycle.

    Stages: a record taken in cycle t is in S0 at t+1 (the row stage: the connection, key,
    receive and READ rows read at t, registered), in S1 at t+2 (its checks are decided with
    those rows and the MTU of this cycle), S2, S3, and S4 (the window stage,
    :meth:`RxModel.dynamic`) at t+5; S5 pushes its outputs into the queues and counts it at
    t+6. A slow window update holds S0..S5 and the input for :data:`HOLD_CYCLES` cycles after
    its S4 cycle (:func:`hold_cycles`: more from :data:`SERIAL_INTERVAL` on, MR-RX-327). MR-RX-319: with ``interval`` N a record, a timer's event or a configuration
    write is taken at most once every N cycles (``records.IntervalGate``)."""

    def __init__(self, width=512, conns=records.CONNS, paths=records.PATHS, keys=1024,
                 msg_slots=MSG_SLOTS, chunk_ring=CHUNK_RING, recv_slots=RECV_SLOTS, rd_slots=RD_SLOTS,
                 streams=records.STREAMS, slot_nak=True, max_rd_atomic=None, cfg_sack=True, interval=1):
        if width not in (64, 128, 256, 512):
            raise ValueError(f"width must be 64, 128, 256 or 512, not {width!r}")
        self.width = width
        # MR-RX-319: the pipeline's entry (a record, a timer's event, a configuration write)
        # taken at most once every `interval` cycles (MR-ENG-299's gate)
        self.interval = interval
        self.gate = records.IntervalGate(interval)
        # MR-RX-327: the hold's length at this interval (serial from SERIAL_INTERVAL on)
        self.hold_cycles = hold_cycles(interval)
        # MR-RX-186: the responder resources are decided in S4 from the packet model's count,
        # which S5's taking records (the message stage of S4's cycle) and the table 7 writes of
        # earlier cycles moved
        self.rx = RxModel(conns, paths, keys, msg_slots, chunk_ring, recv_slots, rd_slots, streams, slot_nak,
                          max_rd_atomic, cfg_sack)
        self.lay = self.rx.lay
        self.last_bit = width + width // 8
        self.ack_q, self.place_q, self.steer_q, self.cqe_q, self.rsp_q, self.atom_q = (
            SyncFifoModel(FIFO_DEPTH) for _ in range(6))
        # MR-RX-085, MR-RX-131, MR-RX-155: (completion, response, atomic bundle) pushed the
        # cycle after S5
        self.s6 = None
        self.cqe_sel = 0        # the record of the head bundle m_cqe shows
        self.rsp_sel = 0        # the item of the head bundle m_rsp shows
        self.atom_sel = 0       # the next item of the head bundle the output stage loads
        # MR-RX-163..166: the operand table, the capture of the head steering entry's beats,
        # the counters that order captures and items, and m_atom's output register
        self.opd = {}
        self.cap_acc = self.cap_beat = 0
        self.cap_in = self.cap_out = self.aq_in = self.aq_read = 0
        self.ao_valid, self.ao_entry, self.ao_opd = False, 0, 0
        # MR-RX-175: placement commands pushed (S5), and the shown item's placement mark
        self.place_in = self.ao_pmark = 0
        self.now = 0            # MR-RX-091: the cycle counter (TIME_BITS)
        self.timer_q = collections.deque()  # MR-RX-091: (path row, generation, due)
        self.t_due = False      # MR-RX-093: the head tested due in the cycle before
        self.s0 = None          # (meta dict, conn, key, recv, READ rows) taken last cycle (MR-RX-040)
        self.s1 = None          # the same, registered in S0 the cycle before
        self.checks = [None] * (CHECK_STAGES - 1)   # _Static in S2, S3
        self.s4 = None          # _Static waiting for the window stage
        self.s5 = None          # Outcome waiting for its push
        self.hold = 0           # cycles a slow update still holds the pipeline
        self.reg_data = 0
        self.log = []           # outcomes in order, for tests

    def _atom_payload(self):
        """MR-RX-164: m_atom's item: the output register's entry and the operands read with it
        (the payload's big-endian words)."""
        lay = self.lay
        opd = self.ao_opd
        operand = int.from_bytes((opd & ((1 << 64) - 1)).to_bytes(8, "little"), "big")
        compare = int.from_bytes((opd >> 64).to_bytes(8, "little"), "big")
        return (self.ao_entry | operand << lay.atom["operand"].offset
                | compare << lay.atom["compare"].offset | self.ao_pmark << lay.atom["pmark"].offset)

    def _capture(self, beat, last, row):
        """MR-RX-163: a beat of an atomic's payload into the capture register (its bytes by
        ``keep``, at the beat's place in the 16 operand bytes); its last beat writes the row."""
        nb = self.width // 8
        data = beat & ((1 << self.width) - 1)
        keep = (beat >> self.width) & ((1 << nb) - 1)
        mask = sum(0xFF << (8 * i) for i in range(nb) if keep >> i & 1)
        acc = (self.cap_acc | (data & mask) << (8 * nb * self.cap_beat)) & ((1 << 128) - 1)
        if last:
            self.opd[row] = acc
            self.cap_acc = self.cap_beat = 0
            self.cap_out = (self.cap_out + 1) & ((1 << CAP_COUNT_BITS) - 1)
        else:
            self.cap_acc, self.cap_beat = acc, self.cap_beat + 1

    @staticmethod
    def port_names():
        return {"inputs": list(INPUTS), "outputs": list(OUTPUTS)}

    def busy(self):
        return bool(self.s0 or self.s1 or any(self.checks) or self.s4 or self.s5 or self.hold
                    or self.s6 is not None or self.timer_q
                    or self.ack_q.level or self.place_q.level or self.steer_q.level or self.cqe_q.level
                    or self.rsp_q.level or self.atom_q.level or self.ao_valid)

    def _window(self, st):
        """S4: the window stage (:meth:`RxModel.dynamic`); sets the hold of a slow update."""
        rx = self.rx
        if isinstance(st, tuple):           # MR-RX-093: a timer event
            o = rx.timer(*st)
            self.log.append(o)
            return o
        before = rx.path_row(st.path_row)["cum"] if st.code is None else None
        o = rx.dynamic(st)
        self.log.append(o)
        if o.code == RxCode.ACCEPTED and is_slow(before, st.psn, rx.path[st.path_row]["cum"]):
            self.hold = self.hold_cycles
        return o

    def step(self, inputs):
        g = inputs.get
        rx, lay = self.rx, self.lay
        holding = self.hold > 0
        inflight = sum(x is not None for x in (self.s0, self.s1, *self.checks, self.s4, self.s5, self.s6))
        credits = not holding and all(q.level + inflight < FIFO_DEPTH
                                      for q in (self.ack_q, self.place_q, self.steer_q, self.cqe_q,
                                                self.rsp_q, self.atom_q))
        # MR-RX-093: a due timer enters the pipeline instead of a record
        tq = self.timer_q
        gate = self.gate.open         # MR-RX-319: shut for interval - 1 cycles after an entry
        fire = credits and self.t_due and gate
        meta_ready = int(credits and len(tq) + inflight < TIMER_DEPTH and not fire and gate)
        # the next cycle's due test: this head, if it stays, against now + 1
        t_due = bool(tq) and not fire and ((self.now + 1 - tq[0][2]) & TIME_MASK) < 1 << (TIME_BITS - 1)
        cfg_ready = int(not holding and not (self.s4 is not None and (isinstance(self.s4, tuple)
                                                                       or self.s4.code is None))
                        and not (self.s5 is not None and self.s5.code == RxCode.ACCEPTED) and gate)
        cqe_word, cqe_last = bundle_entry(lay, self.cqe_q.head, self.cqe_sel)
        rsp_word, rsp_last = bundle_entry(lay, self.rsp_q.head, self.rsp_sel, lay.rsp_bundle, lay.rsp)
        # MR-RX-165: the atomic queue's head bundle is shown once the captures it waits for are done
        cmask, chalf = (1 << CAP_COUNT_BITS) - 1, 1 << (CAP_COUNT_BITS - 1)
        a_head = self.atom_q.head
        a_entry, a_last = bundle_entry(lay, a_head, self.atom_sel, lay.atom_bundle, lay.atom_entry)
        a_mark = (a_head >> lay.atom_bundle["mark"].offset) & cmask
        a_load = (self.atom_q.level > 0 and ((self.cap_out - a_mark) & cmask) < chalf
                  and (not self.ao_valid or g("m_atom__ready", 0)))
        have = self.steer_q.level > 0
        head, cap, cap_row, cap_mark = self.steer_q.head if have else (0, 0, 0, 0)
        pay = g("s_payload__payload", 0)
        pay_valid = g("s_payload__valid", 0)
        data_ready = g("m_data__ready", 0)
        # MR-RX-163/166: a capture waits until every item pushed before it has read its operands
        pay_ready = int(have and (((self.aq_read - cap_mark) & cmask) < chalf if cap
                                  else (not head or bool(data_ready))))
        out = {
            "s_meta__ready": meta_ready, "s_payload__ready": pay_ready, "s_cfg__ready": cfg_ready,
            "m_ack__payload": self.ack_q.head, "m_ack__valid": int(self.ack_q.level > 0),
            "m_place__payload": self.place_q.head, "m_place__valid": int(self.place_q.level > 0),
            "m_data__payload": pay, "m_data__valid": int(have and head and bool(pay_valid)),
            "m_cqe__payload": cqe_word, "m_cqe__valid": int(self.cqe_q.level > 0),
            "m_rsp__payload": rsp_word, "m_rsp__valid": int(self.rsp_q.level > 0),
            "m_atom__payload": self._atom_payload(), "m_atom__valid": int(self.ao_valid),
            "reg_data": self.reg_data,
        }
        addr = g("reg_addr", 0)
        self.reg_data = rx.counters[addr] if addr < N_COUNTERS else 0

        ack = place = steer = arm = None
        bundle, rsp_bundle, atom_bundle = self.s6 or (None, None, None)
        steer_cap, steer_row = 0, 0
        self.s6 = None
        if holding:
            self.hold -= 1
        else:
            # S5: outputs into the queues, counters
            o = self.s5
            if o is not None:
                ack = None if o.ack is None else pack(lay.ack, o.ack)
                place = None if o.place is None else pack(lay.place, o.place)
                steer = o.steer
                steer_cap = int(o.cap_row is not None)
                steer_row = o.cap_row or 0
                if o.cqes or o.rsps or o.atoms:
                    # MR-RX-165: an atomic bundle waits for the captures pushed up to this S5
                    mark = (self.cap_in + steer_cap) & ((1 << CAP_COUNT_BITS) - 1)
                    # MR-RX-175: and for the placements pushed up to this S5, its own included
                    pmark = (self.place_in + int(place is not None)) & ((1 << PLACE_MARK_BITS) - 1)
                    self.s6 = (pack_bundle(lay, o.cqes) if o.cqes else None,
                               pack_rsp_bundle(lay, o.rsps) if o.rsps else None,
                               (pack_rsp_bundle(lay, o.atoms, lay.atom_bundle, lay.atom_entry)
                                | mark << lay.atom_bundle["mark"].offset
                                | pmark << lay.atom_bundle["pmark"].offset) if o.atoms else None)
                if o.arm is not None:
                    arm = (*o.arm, (self.now + rx.ack_delay) & TIME_MASK)
                rx.count(o)
            # S4: the window stage
            self.s5 = None if self.s4 is None else self._window(self.s4)
            # S1..S3: the checks (decided with S1's rows and MTU); S0 moves to S1; then the new
            # record is taken (its rows read now, S0 registers them: MR-RX-040)
            self.s4 = self.checks[-1]
            st = None
            if self.s1 is not None and self.s1[0] == "timer":
                st = self.s1[1:]
            elif self.s1 is not None:
                meta, conn, key, recv, rd = self.s1
                st = rx.static(meta, conn, key, recv, rd)
            self.checks = [st] + self.checks[:-1]
            self.s1, self.s0 = self.s0, None
            if fire:
                row, gen, _ = tq.popleft()
                self.s0 = ("timer", row, gen)
            elif meta_ready and g("s_meta__valid", 0):
                meta = meta_fields(g("s_meta__payload", 0))
                self.s0 = (meta, rx.conn_row(meta), rx.key_row(meta), rx.recv_row(meta), rx.rd_row(meta))
        # configuration write
        cfg_take = bool(cfg_ready and g("s_cfg__valid", 0))
        if cfg_take:
            c = unpack(lay.cfg, g("s_cfg__payload", 0))
            rx.write_cfg(c["table"], c["addr"], c["data"])
        # MR-RX-319: a record, a timer's event or a configuration write shuts the gate
        self.gate.step(bool(fire) or bool(meta_ready and g("s_meta__valid", 0)) or cfg_take)
        # queues
        pay_take = pay_ready and pay_valid
        self.ack_q.update(g("m_ack__ready", 0), ack is not None, ack or 0)
        self.place_q.update(g("m_place__ready", 0), place is not None, place or 0)
        self.place_in = (self.place_in + int(place is not None)) & ((1 << PLACE_MARK_BITS) - 1)
        pay_last = (pay >> self.last_bit) & 1
        if pay_take and cap:
            self._capture(pay, pay_last, cap_row)
        # MR-RX-166: a capture entry waits for the atomic bundles pushed up to this cycle
        pushed = int(atom_bundle is not None)
        self.steer_q.update(pay_take and pay_last, steer is not None,
                            (steer or 0, steer_cap, steer_row, (self.aq_in + pushed) & cmask))
        self.aq_in = (self.aq_in + pushed) & cmask
        self.cap_in = (self.cap_in + int(steer is not None and steer_cap)) & cmask
        # MR-RX-085: m_cqe shows the head bundle's records one by one
        cqe_take = self.cqe_q.level > 0 and g("m_cqe__ready", 0)
        if cqe_take:
            self.cqe_sel = 0 if self.cqe_sel == cqe_last else self.cqe_sel + 1
        self.cqe_q.update(cqe_take and self.cqe_sel == 0, bundle is not None, bundle or 0)
        # MR-RX-131: m_rsp likewise
        rsp_take = self.rsp_q.level > 0 and g("m_rsp__ready", 0)
        if rsp_take:
            self.rsp_sel = 0 if self.rsp_sel == rsp_last else self.rsp_sel + 1
        self.rsp_q.update(rsp_take and self.rsp_sel == 0, rsp_bundle is not None, rsp_bundle or 0)
        # MR-RX-164: m_atom's output register loads the head bundle's items one by one, each with
        # its operands read from the table
        if a_load:
            e = unpack(lay.atom_entry, a_entry)
            self.ao_entry = a_entry
            self.ao_opd = self.opd.get(rx.operand_row(e["conn"], e["stream"], e["msg"]), 0)
            self.ao_valid = True
            self.ao_pmark = (a_head >> lay.atom_bundle["pmark"].offset) & ((1 << PLACE_MARK_BITS) - 1)
            self.atom_sel = 0 if self.atom_sel == a_last else self.atom_sel + 1
            if self.atom_sel == 0:
                self.aq_read = (self.aq_read + 1) & cmask
        elif self.ao_valid and g("m_atom__ready", 0):
            self.ao_valid = False
        self.atom_q.update(a_load and self.atom_sel == 0, atom_bundle is not None, atom_bundle or 0)
        if arm is not None:
            tq.append(arm)
        self.t_due = t_due
        self.now = (self.now + 1) & TIME_MASK
        return out


#: MR-RX-001: the small instance (hdl.rx.rx_256x4): 256 connections x 4 paths, 256 keys, 4
#: streams per connection (its tables fit the ECP5-85's block RAM, rx-results.md).
SMALL = {"conns": 256, "paths": 4, "keys": 256, "streams": 4}


def rx_model_256x4(width=512):
    """The model of the small instance (hdl.rx.rx_256x4), :data:`SMALL`."""
    return RxCycleModel(width, **SMALL)


def rx_model_256x4_rsc(width=512):
    """The model of hdl.rx.rx_256x4_rsc: :data:`SMALL` with ``max_rd_atomic`` 1 (MR-RX-188)."""
    return RxCycleModel(width, **SMALL, max_rd_atomic=1)


