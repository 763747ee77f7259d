"""The NIC engine's state records as fixed-width bit layouts (docs/spec/engine.md, MR-ENG-020..029).

Declared once here; the engine chapter's table, the reference endpoint's limits and the RTL
context table and retransmit unit are all derived from these layouts. ``StructLayout`` puts its
first field in the least significant bits (amaranth.lib.data); models/ never imports hdl/.

Times are unsigned nanosecond counters of :data:`TIME_BITS` bits compared in a half space (like
PSNs); durations (RTT, RTO) are :data:`DUR_BITS`-bit nanoseconds; byte counts of windows are
:data:`BYTES_BITS` bits (16 MiB, four BDPs at 400 Gb/s x 10 us is 2 MB).
"""
from __future__ import annotations

from dataclasses import dataclass

from amaranth.lib import data

from . import protocol as P

# -- instance sizing of the engine (MR-ENG-010) ---------------------------------------------------

#: Connections the engine holds in its on-chip context tables.
CONNS = 4096
#: Paths per connection in the dense path tables (hardware limit, MR-ENG-011).
PATHS = 8
#: Streams per connection in hardware (MR-ENG-011).
STREAMS = 8
#: Messages a connection may have started and not completed, per direction (MR-ENG-011).
TX_MSGS = 8
RX_MSGS = 8
#: Chunks of one message that may be outstanding beyond its lowest unacknowledged chunk
#: (MR-ENG-012): the width of the per-message chunk bitmaps.
CHUNK_WINDOW = 512
#: READ/atomic requests a connection has accepted and not finished answering (responder
#: resources, MR-VERB-005): the rows of the ``rsp`` table per connection.
RD_ATOMIC = 8
#: Outstanding-packet records shared by all paths of all connections (MR-ENG-013).
RTX_POOL = 16384
#: PSNs a path may have unresolved (MR-SEQ-006); the model's ring size per path.
PATH_RING = P.SEND_WINDOW

#: MR-ENG-299: the fewest bytes of a frame at the MAC (the 64-byte minimum less its FCS)
MIN_FRAME_BYTES = 60


def frame_interval(width):
    """MR-ENG-299: the fewest cycles between two frames at ``width`` bits a beat, one beat a
    cycle: a frame of :data:`MIN_FRAME_BYTES` is ``ceil(480 / width)`` beats (8 at 64 bits, 4
    at 128, 2 at 256, 1 at 512)."""
    return max(1, -(-MIN_FRAME_BYTES * 8 // width))


def interval_of(width, interval=None):
    """MR-ENG-300: the engine's frame interval, ``interval`` when given, else
    :func:`frame_interval` of ``width`` (the RTL engine, its model and their RX halves agree)."""
    return frame_interval(width) if interval is None else interval


class IntervalGate:
    """MR-ENG-299: a block's input taken at most once every ``interval`` cycles: after a record
    is taken at cycle t the input's ready is low in cycles t+1 .. t+interval-1 (``interval`` 1:
    never low). The cycle models' form of ``hdl.queue.interval_ready``: :attr:`open` is this
    cycle's gate, :meth:`step` ends the cycle with whether a record was taken."""

    def __init__(self, interval):
        assert interval >= 1
        self.interval, self.wait = interval, 0

    @property
    def open(self):
        return self.wait == 0

    def step(self, took):
        assert not (took and self.wait), "MR-ENG-299: taken while the gate was shut"
        self.wait = self.interval - 1 if took else max(0, self.wait - 1)


TIME_BITS = 32          # ns, wraps every 4.3 s, compared in a half space
DUR_BITS = 24           # ns, up to 16.7 ms (rto_max is 1 ms)
BYTES_BITS = 24         # bytes in flight / windows, up to 16 MiB
PSN_BITS = 24
SEQ_BITS = 32           # message and receive sequences (MR-CONN-002)
#: MR-TXS-490: a message's ring lap (MR-TXS-142): its ring position's top bits, the ring
#: pointers counting modulo 2^LAP_BITS x depth; with the slot it names one message of 2^LAP_BITS
#: x depth consecutive ones of its stream (a late report's message, MR-TXS-491)
LAP_BITS = 8
CHUNK_BITS = 20         # chunk index: 2^32-byte messages at 4 KiB MTU
RATE_BITS = 20          # Mb/s, up to 1,048 Gb/s (MRAH rate_mbps is 32 bits on the wire)
POOL_PTR_BITS = (RTX_POOL - 1).bit_length()
TX_SLOT_BITS = (TX_MSGS - 1).bit_length()
STREAM_BITS = (STREAMS - 1).bit_length()
PATH_BITS = (PATHS - 1).bit_length()


# -- the layouts (MR-ENG-020..027) ----------------------------------------------------------------

#: MR-ENG-020: per connection, sender half (read-modify-write on every send and every ACK).
CONN_TX = data.StructLayout({
    "valid": 1,
    "peer_qpn": 24,             # BTH DestQP of every packet to the peer
    "peer_index": 12,           # row of the peer table (IP, MAC; slow-path written)
    "n_paths_m1": PATH_BITS,
    "n_streams_m1": STREAM_BITS,
    "ack_loss": 16,             # MR-REL-011: lost-ACK fraction of all paths, Q16
    "path_rr": PATH_BITS,       # MR-CONN-004 round robin
    "stream_rr": STREAM_BITS,   # MR-ENG-030 stream scheduler pointer
    "inflight": BYTES_BITS,
    "window": BYTES_BITS,
    "ramp": BYTES_BITS,         # MR-CC-008 slow-start window
    "slow_start": 1,
    "rate_mbps": RATE_BITS,     # latest hint, 0 = no limit
    "pace_until": TIME_BITS,
    "last_ece": TIME_BITS,
    "retx_count": 12,           # entries in the resend FIFO (bounded by the pool share)
    "tx_slots_busy": TX_MSGS,   # one bit per message slot
    "cwnd_sum": BYTES_BITS,     # MR-CC-011: sum of the active paths' windows
    "cut_debt": BYTES_BITS,     # MR-CC-013: cut still to take from increases
    "cut_end": TIME_BITS,       # MR-CC-013: end of the connection's cut epoch
    "cut_left": BYTES_BITS,     # MR-CC-013: bytes the epoch may still cut
    "answered": 1,              # MR-CC-016: the receiver has answered (an ACK came back)
    "blind_t0": TIME_BITS,      # MR-CC-016: send time of the first frame sent before that
    "blind_bytes": BYTES_BITS,  # MR-CC-016: wire bytes (with WIRE_OVERHEAD) sent before that
})

#: MR-ENG-021: per connection, receiver half (MR-CC-009 hint bookkeeping).
CONN_RX = data.StructLayout({
    "rx_hint": RATE_BITS,
    "rx_hint_path": PATH_BITS,
    "rx_hint_psn": PSN_BITS,
    "rx_hint_sport": 16,
    "rx_slots_busy": RX_MSGS,
    "rx_iv_bytes": BYTES_BITS,  # MR-CC-012: wire bytes in the current share interval
    "rx_iv_prev": BYTES_BITS,   # MR-CC-012: ... and in the previous one
    "rx_iv_epoch": 8,           # MR-CC-012: interval number of rx_iv_bytes, mod 256
    "rx_hint_age": 2,           # MR-CC-017: intervals since the first non-zero hint, saturating
})

#: MR-ENG-022: per path, sender half: sequence, window, RTT, timer and path state.
PATH_TX = data.StructLayout({
    "entropy": 16,
    "gen": 8,
    "state": 2,                 # active, retired, probing
    "next_psn": PSN_BITS,
    "floor": PSN_BITS,
    "live": 9,                  # unresolved, not declared lost (< 256)
    "inflight": BYTES_BITS,
    "cwnd": BYTES_BITS,
    "srtt": DUR_BITS,
    "rttvar": DUR_BITS,
    "min_rtt": DUR_BITS,
    "backoff_log2": 3,          # 1..64
    "deadline": TIME_BITS,
    "timer_on": 1,
    "consec_to": 4,
    "last_ece": TIME_BITS,
    "last_ack": TIME_BITS,
    "next_dec": TIME_BITS,      # MR-CC-013: end of the observation window
    "ce_acc": 10,               # MR-CC-013: CE-marked / acknowledged packets in the window
    "ack_acc": 10,
    "since_req": 4,
    "xwit": TIME_BITS,
    "xslack": DUR_BITS,
    "xrun": 4,
    "collapsed": 1,
    "tail_probed": 1,           # MR-REL-010
    "probe_dl": TIME_BITS,      # MR-REL-010: the tail probe's ACK is overdue after this
    "retired_before": 1,
    "probe_log2": 3,
    "ring_head": POOL_PTR_BITS,     # RTL: oldest record of the path in the shared pool
})

#: MR-ENG-023: per path, receiver half: the SACK window and the ACK policy state.
PATH_RX = data.StructLayout({
    "cum": PSN_BITS,
    "sack": P.SACK_BITS,
    "high": PSN_BITS,
    "ce": 16,
    "pending": 4,
    "prev_ce": 1,
    "ack_timer": TIME_BITS,     # delayed-ACK deadline (MR-SEQ-009)
    "last_psn": PSN_BITS,
    "last_sport": 16,
})

#: MR-ENG-024: per stream, both halves (sequences, scheduler and queue pointers).
STREAM = data.StructLayout({
    "msg_next": SEQ_BITS,       # next message number to send
    "send_seq": SEQ_BITS,       # next MRSH recv_seq to send
    "sq_head": 16,              # host send-queue ring (WQEs in host memory)
    "sq_tail": 16,
    "rx_next_deliver": SEQ_BITS,
    "rq_head": 16,              # host receive-queue ring
    "rq_tail": 16,
    "recv_next": SEQ_BITS,
    "rx_aborted": RX_MSGS,      # MR-ERR-022: the last RX_MSGS delivered messages, aborted or not
    "flush_to": SEQ_BITS,       # MR-ERR-022: receives below belong to aborted sends
})

#: MR-ENG-025: per message being sent (TX_MSGS per connection). For a READ or atomic request
#: (one chunk, acknowledged by ``req_acked``) ``ack_base``/``ack_bits`` count the response chunks
#: placed; for a response, ``sq_index`` is its ``rsp`` row (MR-VERB-001, MR-VERB-003).
TX_MSG = data.StructLayout({
    "valid": 1,
    "stream": STREAM_BITS,
    "op": 3,                    # write, write+imm, send, send+imm, read, cmp_swap, fetch_add, response
    "msg": SEQ_BITS,
    "recv_seq": SEQ_BITS,
    "sq_index": 16,             # the WQE in host memory (buffer address, keys, wr_id)
    "length": 32,
    "nchunks": CHUNK_BITS + 1,
    "next_chunk": CHUNK_BITS + 1,
    "ack_base": CHUNK_BITS + 1,  # chunks below are acknowledged
    "ack_bits": CHUNK_WINDOW,    # chunk ack_base + i acknowledged
    "done": 1,
    "status": 5,
    "req_acked": 1,
    "abort": 2,                 # MR-ERR-020: none, pending (slot held), acknowledged
})

#: MR-ENG-026: per message being received (RX_MSGS per connection).
RX_MSG = data.StructLayout({
    "valid": 1,
    "stream": STREAM_BITS,
    "op": 3,
    "msg": SEQ_BITS,
    "msg_len": 32,
    "recv_seq": SEQ_BITS,
    "placed": 32,
    "chunk_base": CHUNK_BITS + 1,  # chunks below are placed
    "chunk_bits": CHUNK_WINDOW,    # chunk chunk_base + i placed
    "done": 1,
    "has_imm": 1,
    "imm": 32,
    "aborted": 1,               # MR-ERR-021
})

#: MR-ENG-031: per responder resource (RD_ATOMIC per connection): a READ or atomic request
#: accepted, keyed by (stream, msg), until its response is acknowledged (MR-VERB-005). After an
#: atomic executes, ``operand`` holds the original value (the response's payload).
RSP = data.StructLayout({
    "valid": 1,
    "op": 2,                    # read, cmp_swap, fetch_add
    "stream": STREAM_BITS,
    "msg": SEQ_BITS,
    "va": 64,
    "rkey": 32,
    "length": 32,
    "operand": 64,              # swap or add value; the original value once executed
    "compare": 64,
    "executed": 1,
    "error": 1,                 # MR-VERB-004: answered with an ERROR response
    "tx_slot": TX_SLOT_BITS,    # the response's tx_msg once started
    "started": 1,
})

#: MR-ENG-032, MR-SEC-153: per connection, the receipt key of an unauthenticated connection
#: (written by the slow path from the handshake), read once per ACK or NAK sent or received.
CONN_KEY = data.StructLayout({
    "valid": 1,                 # 0: no proof of receipt (authenticated, or configured without)
    "receipt_key": 128,
})

#: MR-ENG-027: per outstanding packet (one PSN sent and not resolved).
RTX = data.StructLayout({
    "tx_slot": TX_SLOT_BITS,
    "chunk": CHUNK_BITS,
    "t_sent": TIME_BITS,
    "nbytes": 13,
    "lost": 1,
    "probe": 1,
    "req": 1,
    "free": 1,
    "abort": 1,                 # MR-ERR-020: the message's abort packet, not a chunk
    "next": POOL_PTR_BITS,      # RTL: next record of the same path (FIFO in PSN order)
})


@dataclass(frozen=True)
class Table:
    """One state table of the engine (MR-ENG-028): a layout, its entry count and its memory."""
    name: str
    layout: data.StructLayout
    per: str
    count: int
    memory: str

    @property
    def width(self):
        return self.layout.size

    @property
    def total_bits(self):
        return self.width * self.count

    @property
    def blocks(self):
        """Memory primitives: URAM288 as 4,096 x 72, RAMB36 as 512 x 72 (UltraScale+)."""
        cols = -(-self.width // 72)
        if self.memory == "URAM":
            return cols * -(-self.count // 4096)
        if self.memory == "BRAM":
            return cols * -(-self.count // 512)
        return 0


#: MR-ENG-028: every per-packet state table, sized for CONNS connections x PATHS paths.
TABLES = (
    Table("conn_tx", CONN_TX, "connection", CONNS, "BRAM"),
    Table("conn_rx", CONN_RX, "connection", CONNS, "BRAM"),
    Table("path_tx", PATH_TX, "path", CONNS * PATHS, "URAM"),
    Table("path_rx", PATH_RX, "path", CONNS * PATHS, "URAM"),
    Table("stream", STREAM, "stream", CONNS * STREAMS, "URAM"),
    Table("tx_msg", TX_MSG, "message (send)", CONNS * TX_MSGS, "URAM"),
    Table("rx_msg", RX_MSG, "message (receive)", CONNS * RX_MSGS, "URAM"),
    Table("rtx", RTX, "outstanding packet (shared pool)", RTX_POOL, "URAM"),
    Table("rsp", RSP, "responder resource (READ/atomic)", CONNS * RD_ATOMIC, "BRAM"),
    Table("conn_key", CONN_KEY, "connection (receipt key)", CONNS, "BRAM"),
)


def table(name):
    return next(t for t in TABLES if t.name == name)


def total_bytes():
    return sum(t.total_bits for t in TABLES) // 8


def fits(layout, **values):
    """Pack ``values`` into ``layout`` as an integer; ValueError when a value does not fit its
    field (the check that a model's state is representable in the record, MR-ENG-029)."""
    fields = dict(layout)
    word = 0
    for name, v in values.items():
        if name not in fields:
            raise ValueError(f"{name} is not a field of this layout")
        f = fields[name]
        width = f.width
        v = int(v)
        if not 0 <= v < 1 << width:
            raise ValueError(f"{name}={v} does not fit {width} bits")
        word |= v << f.offset
    return word


def markdown_table():
    """The table of docs/spec/engine.md (MR-ENG-028), one row per state table."""
    rows = ["| table | per | bits | count | total KiB | memory | blocks |",
            "|---|---|---|---|---|---|---|"]
    for t in TABLES:
        rows.append(f"| `{t.name}` | {t.per} | {t.width} | {t.count:,} | {t.total_bits / 8192:,.0f} | "
                    f"{t.memory} | {t.blocks} |")
    rows.append(f"| total | | | | {total_bytes() / 1024:,.0f} | | |")
    return "\n".join(rows)


if __name__ == "__main__":
    print(markdown_table())
    for t in TABLES:
        print(t.name, [(n, f.width) for n, f in t.layout])
