"""Cycle model of the row scheduler (docs/spec/hw-tx-sched.md "The row scheduler",
MR-TXS-200..237): the TX scheduler's per-connection state in block-RAM rows of fixed width,
one operation per cycle through a read / register / apply-and-write-back pipeline with
forwarding, and queues of active connections (to schedule) and of connections with a
completion (to complete).

The semantics of an operation on a connection are those of
:class:`~metaroce.models.tx_sched.TxSchedModel` (one source of truth): the connection's row is
unpacked into a one-connection instance of it, the operation is applied there, and the row is
packed back (MR-TXS-201..205: every field a fixed number of bits, checked at every pack). What
this model adds is the storage (rows, a descriptor memory), the order of operations (the
arbiter, MR-TXS-210; the queues, MR-TXS-212..216) and their timing (MR-TXS-220..224).

Same ports and stream interface as :class:`~metaroce.models.tx_sched.TxSchedCycleModel`
(``step(inputs) -> outputs``, the layouts of :func:`~metaroce.models.tx_sched.layouts`), so the
block's driver (models/tx_sched_cases.py) runs it unchanged. Tail probes on ``s_probe`` are
operations of their own (MR-TXS-270..279); ``restores=True`` gives ``m_restore``
(MR-TXS-284..289); ``rd_rows=True`` gives ``m_rd`` (MR-TXS-325..330). Not in this increment
(MR-TXS-235): pacing.
"""
from __future__ import annotations

from collections import deque

from amaranth.lib import data

from . import protocol as P
from . import records
from .fifo import SyncFifoModel
from .retransmit import OUT_DEPTH as RTX_OUT_DEPTH
from .rx import pack, unpack
from . import pacer as pacer_model
from .tx_sched import (INPUTS, OUT_DEPTH, OUTPUTS, PATH_ACTIVE, PSN_INPUTS, PSN_OUTPUTS,
                       RESTORE_INPUTS, RESTORE_OUTPUTS, SMALL, GEN_BITS, TxSchedModel,
                       check_params, cqe_entry, cqe_outputs, is_atomic, is_read, late_cap_of,
                       layouts,
                       restore_layout, rsp_item)

__all__ = ["row_layouts", "RowLayouts", "pack_row", "unpack_row", "TxSchedRowsModel",
           "OP_KINDS", "PACE_KINDS", "FWD_DISTANCE", "PIPE_STAGES", "rows_restore_layout",
           "PACE_INPUTS", "PACE_OUTPUTS"]

#: MR-TXS-220: an operation is taken (its row read) in cycle t, registered in t+1 (S1), applied
#: and written back in t+2 (S2)
PIPE_STAGES = 2
#: MR-TXS-221: the read of cycle t misses the writes of the two operations ahead
FWD_DISTANCE = 2
#: MR-TXS-210: the operations, in the arbiter's priority
OP_KINDS = ("verdict", "cwnd", "fail", "acked", "lost", "complete", "wr", "probe", "sched")
#: MR-TXS-337: with pacing, three more kinds (codes after OP_KINDS'): a turn back from the
#: pacer, a re-timing write, a late connection's wake; turn and retime first in the arbiter's
#: priority, wake after the completion (MR-TXS-340)
PACE_KINDS = ("turn", "retime", "wake")
#: MR-TXS-337: the pacing ports of TxSched(pacing=True) (MR-TXS-159/167/177)
PACE_INPUTS = ["m_pace__ready", "s_turn__valid", "s_turn__payload", "s_retime__valid",
               "s_retime__payload", "line_mbps"]
PACE_OUTPUTS = ["m_pace__valid", "m_pace__payload", "s_turn__ready", "s_retime__ready"]

_CHUNK = records.CHUNK_BITS
_BYTES = records.BYTES_BITS
_SLOT = records.TX_SLOT_BITS


#: MR-TXS-497: the acknowledged reports a lost report may overtake: the unit's queue (hw-tx.md
#: MR-TX-505) and the boundary register
HUSH = RTX_OUT_DEPTH + 1


def _bits(n):
    """Bits of an index below ``n`` (at least 1)."""
    return max(1, (n - 1).bit_length())


class RowLayouts:
    """MR-TXS-201..205: the row scheduler's fixed-width records of one instance."""

    def __init__(self, conns, streams, paths, depth, chunk_window, resend_depth, pacing=False,
                 late_cap=None):
        self.conns, self.streams, self.paths, self.depth = conns, streams, paths, depth
        self.late_cap = late_cap_of(depth, late_cap)
        self.resend_depth = resend_depth
        # ring positions mod 2^LAP_BITS x depth (MR-TXS-490)
        ptr = ((1 << records.LAP_BITS) * depth - 1).bit_length()
        # MR-TXS-201: the connection's own fields
        # MR-TXS-337: with pacing, the pacing condition's (a turn asked for and not back, the
        # time moved, paced, the last turn's time, in the late queue)
        pace = ({"pend": 1, "armed": 1, "paced": 1, "seen": P.TIME_BITS, "inlq": 1}
                if pacing else {})
        self.conn = data.StructLayout({
            "rr": _bits(paths), "srr": _bits(streams), "inflight": _BYTES,
            "unsent": _CHUNK + _SLOT + 1, "rhead": _bits(resend_depth),
            "rcount": resend_depth.bit_length(), "inq": 1, "incq": 1,
            # MR-TXS-482: a work request or READ response applied since reset
            "started": 1, **pace})
        # MR-TXS-202: per stream, its ring's pointers and sequence numbers
        self.stream = data.StructLayout({"tail": ptr, "send": ptr, "done": ptr, "msg_next": 32,
                                         "send_seq": 32})
        # MR-TXS-203: per message entry, what a decision reads (the descriptor is elsewhere)
        self.entry = data.StructLayout({
            "op": 3, "length": 32, "nchunks": _CHUNK + 1, "next_chunk": _CHUNK + 1,
            "ack_base": _CHUNK + 1, "ack_bits": chunk_window, "status": 5,
            "out": (paths * (P.SEND_WINDOW - 1)).bit_length(), "lap": records.LAP_BITS,
            "rsp": 1, "err": 1,
            # MR-TXS-256: its chunks lost and not queued, bit chunk mod chunk_window
            "lnq": chunk_window})
        # MR-TXS-204: per path
        self.path = data.StructLayout({
            "next_psn": 24, "inflight": _BYTES, "pkts": (P.SEND_WINDOW - 1).bit_length(),
            "since_req": 4, "cwnd": _BYTES, "state": 2, "col": 1, "gen": GEN_BITS,
            "tail_ok": 1, "tail_slot": _SLOT, "tail_chunk": _CHUNK,
            "tail_lap": records.LAP_BITS,
            # MR-TXS-495: the connection's completions since the path's last acknowledged
            # report not late, saturating at the cap
            "quiet": self.late_cap.bit_length()})
        # MR-TXS-201: the resend FIFO's entries (message slot, chunk); MR-TXS-460: stale once
        # the message completed
        self.retx = data.StructLayout({"slot": _SLOT, "chunk": _CHUNK, "stale": 1})
        # MR-TXS-200: the row, one read and one write per cycle
        self.row = data.StructLayout({
            "conn": self.conn,
            "streams": data.ArrayLayout(self.stream, streams),
            "entries": data.ArrayLayout(self.entry, streams * depth),
            "paths": data.ArrayLayout(self.path, paths),
            "retx": data.ArrayLayout(self.retx, resend_depth)})
        # MR-TXS-205: the descriptor memory's record, one per (connection, message slot)
        self.desc = data.StructLayout({"laddr": 64, "va": 64, "rkey": 32, "imm": 32, "swap": 64,
                                       "compare": 64, "wr_id": 16, "msg": 32, "recv_seq": 32})


def rows_restore_layout(conns=SMALL["conns"], paths=SMALL["paths"]):
    """MR-TXS-316: the rows' ``m_restore`` record ``{conn, path, kept}``: ``kept`` 1 for a
    verdict taken as a reroute (MR-TXS-266), 0 for a restore; MR-TXS-348: the register
    scheduler's record (``restore_layout``), one record for both."""
    return restore_layout(conns, paths)


def row_layouts(conns=SMALL["conns"], streams=SMALL["streams"], paths=SMALL["paths"],
                depth=SMALL["depth"], chunk_window=SMALL["chunk_window"],
                resend_depth=SMALL["resend_depth"], pacing=False, late_cap=None):
    """MR-TXS-200..205: the records of an instance (MR-TXS-337: ``pacing``'s fields)."""
    return RowLayouts(conns, streams, paths, depth, chunk_window, resend_depth, pacing,
                      late_cap)


def late_layout(conns):
    """MR-TXS-339: a late queue's entry ``{conn, seen}``."""
    return data.StructLayout({"conn": _bits(conns), "seen": P.TIME_BITS})


def ask_layout(conns):
    """MR-TXS-338: an ask queue's entry ``{conn, now, wl}`` (``m_pace``'s fields but ``force``,
    always 1)."""
    return data.StructLayout({"conn": _bits(conns), "now": P.TIME_BITS,
                              "wl": pacer_model.WL_BITS})


def _w(shape):
    """The width of a layout's field shape (a layout, or an int / Shape)."""
    if isinstance(shape, data.Layout):
        return shape.size
    from amaranth.hdl import Shape
    return Shape.cast(shape).width


def _pack(layout, value):
    """A nested dict (lists for arrays) into the flat integer of ``layout``; ValueError when a
    value does not fit its field (MR-TXS-200: a row's fields are bounded)."""
    if isinstance(layout, data.ArrayLayout):
        w = _w(layout.elem_shape)
        return sum(_pack(layout.elem_shape, v) << (k * w) for k, v in enumerate(value))
    if isinstance(layout, data.StructLayout):
        word = 0
        for name, field in layout:
            word |= _pack(field.shape, value[name]) << field.offset
        return word
    width = _w(layout)
    v = int(value)
    if v < 0 or v >> width:
        raise ValueError(f"{v} does not fit {width} bits")
    return v


def _unpack(layout, word):
    if isinstance(layout, data.ArrayLayout):
        w = _w(layout.elem_shape)
        m = (1 << w) - 1
        return [_unpack(layout.elem_shape, (word >> (k * w)) & m) for k in range(layout.length)]
    if isinstance(layout, data.StructLayout):
        out = {}
        for name, field in layout:
            sz = _w(field.shape)
            out[name] = _unpack(field.shape, (word >> field.offset) & ((1 << sz) - 1))
        return out
    return word


def pack_row(rl, row):
    """MR-TXS-200: a connection's row (nested dict) as its memory word."""
    return _pack(rl.row, row)


def unpack_row(rl, word):
    return _unpack(rl.row, word)


class RowPipe:
    """MR-TXS-220/221: the row memory and the pipeline, generic over the operation: an
    operation (any object with ``conn`` and a writable ``row``) taken in cycle t has its row
    read at the edge ending t (the memory before that edge's write), is registered in S1 (t+1)
    and applied in S2 (t+2), where ``apply(op, word) -> (new word, ...)`` gives the row written
    at the edge ending t+2. Forwarding (``forward``): at the edge into S2 the row written at the
    previous edge replaces the read when the connections are equal (the op two ahead); in S2 the
    row written at the previous edge replaces the registered row (the op just ahead). The RTL's
    form is hdl/tx_sched_rows.py ``RowPipe``."""

    def __init__(self, init, *, forward=True):
        self.mem = list(init)
        self.forward = forward
        self.s1 = self.s2 = None
        self.wb = None                  # (conn, word): the write at the last edge

    def ops(self):
        return [o for o in (self.s1, self.s2) if o is not None]

    def edge(self, take, apply):
        """One clock edge; ``take`` the op taken in this cycle (or None). Returns ``(op applied
        in S2 or None, apply's result)``."""
        rd = self.mem[take.conn] if take is not None else None      # before this edge's write
        x, res, new_wb = self.s2, None, None
        if x is not None:
            word = x.row
            if self.forward and self.wb is not None and self.wb[0] == x.conn:
                word = self.wb[1]
            res = apply(x, word)
            self.mem[x.conn] = res[0]
            new_wb = (x.conn, res[0])
        y = self.s1
        if y is not None and self.forward and self.wb is not None and self.wb[0] == y.conn:
            y.row = self.wb[1]
        self.s2 = y
        if take is not None:
            take.row = rd
        self.s1 = take
        self.wb = new_wb
        return x, res


class _Op:
    """An operation in the pipeline: its kind, connection, payload, and the row it carries."""
    __slots__ = ("kind", "conn", "f", "row")

    def __init__(self, kind, conn, f):
        self.kind, self.conn, self.f, self.row = kind, conn, f, None


class TxSchedRowsModel:
    """The row scheduler cycle by cycle (MR-TXS-200..237). ``forward=False`` (negative controls
    only) leaves out MR-TXS-221's forwarding: an operation then reads its row without the writes
    of the two operations ahead. ``work_filter=False`` (for the figures): MR-TXS-213's entry on
    any operation, without the work term. ``lost_waits=True`` (negative control only, MR-TXS-261):
MR-TXS-217's old rule, a lost report refused while its resend FIFO is full (rdl32: it is kept in
its entry's ``lnq`` bits and refilled by a popping schedule op, MR-TXS-256..259; ``refills``
counts them, each logged as a ``"refill"`` event after its schedule op). ``last_active_kept``
(MR-TXS-266; False: the rule before, negative controls only): a SUSPECT or RETIRE verdict on a
connection's last active path acts as a REROUTE (MR-TXS-290), decided on the row the verdict op
applies to. ``restores``: ``m_restore`` through a restore queue (MR-TXS-284..287);
``restore_hold=False`` (negative control only) leaves out MR-TXS-286's hold of ``s_probe``;
with restores a verdict taken as a reroute leaves on ``m_restore`` too (``kept``, MR-TXS-316;
``kept_out=False``, negative control only, leaves it out). The readies before the edge, for
the TX model: ``resend_ready`` .. ``restore_outputs`` (MR-TXS-315).
``rd_rows``: ``m_rd``, the good READ or atomic on ``s_wr`` with its message number
(MR-TXS-325..328; ``rd_held``/``rd_stale`` count the cycles one waited for ``m_rd.ready`` / for
its number's read, each taken logged as an ``"rd"`` event).
``s_psn`` (MR-TXS-481..485): a path's initial PSN, an operation of its own (kind ``"psn"``, the
window write's place in the arbiter, before it), landing on its row while the row's ``started``
bit is 0 (no work request or READ response of the connection applied before it), else ignored
(``psn_ignored`` the cycle after its write-back).
``sched_hold`` (MR-TXS-470; False: the timing before, negative controls only): a schedule op
is not taken while S1 holds an operation of its connection (``sched_waits`` counts the cycles
in which the hold alone kept the schedule op from being taken). ``events`` logs every applied
operation in the order of its write-back: ``(kind, conn, payload, action or completion, frame,
sent, completion, now)``."""

    def __init__(self, width=64, conns=SMALL["conns"], streams=SMALL["streams"],
                 paths=SMALL["paths"], depth=SMALL["depth"], *, forward=True, work_filter=True,
                 lost_waits=False, last_active_kept=True, restores=False, restore_hold=True,
                 kept_out=True, rd_rows=False, pacing=False, pace_ignored=False,
                 pace_full_only=False, late_queue=True, retime_hold=True, sched_hold=True,
                 psn_wrong=None, **kw):
        if width not in (64, 128, 256, 512):
            raise ValueError(f"width must be 64, 128, 256 or 512, not {width!r}")
        prm = dict(SMALL, conns=conns, streams=streams, paths=paths, depth=depth)
        prm.update(kw)
        # MR-TXS-200: conns up to 4,096 (the bound of MR-TXS-001 is the register scheduler's)
        if not (isinstance(conns, int) and 2 <= conns <= 4096 and not conns & (conns - 1)):
            raise ValueError(f"conns must be a power of two in [2, 4096], not {conns!r}")
        check_params(**dict(prm, conns=2))
        self.width, self.forward = width, forward
        # MR-TXS-261 (negative control only): MR-TXS-217's old rule, a lost report refused and
        # held while its FIFO is full (no kept chunks, no refills)
        self.lost_waits = bool(lost_waits)
        self._refill = None
        self.refills = 0                                 # MR-TXS-258: chunks refilled
        # MR-TXS-213: enter the active queue only with work (False: on any operation)
        self.work_filter = work_filter
        self.prm = prm
        self.conns, self.streams, self.paths, self.depth = conns, streams, paths, depth
        # MR-TXS-337..346: pacing in the rows (pace_ignored, pace_full_only: TxSchedModel's
        # negative controls, MR-TXS-165/178)
        self.pacing = bool(pacing)
        self.pace_ignored, self.pace_full_only = bool(pace_ignored), bool(pace_full_only)
        # MR-TXS-343 (negative control only): late_queue=False pushes nothing into the late
        # queue (a late connection is never woken)
        self.late_queue = bool(late_queue)
        # MR-TXS-372: a schedule op held while a write with a time of its connection is in
        # flight (retime_hold=False, negative control only: MR-TXS-371's early packets)
        self.retime_hold = bool(retime_hold)
        self.held_sched, self._held = 0, False
        # MR-TXS-470: no schedule op right behind an operation of its connection
        self.sched_hold = bool(sched_hold)
        self.sched_waits = 0
        # MR-TXS-497: acknowledged reports still to take that zero no quiet count (a lost
        # report overtook an acknowledged one held by MR-TXS-285/287)
        self.hush = 0
        self.overtakes = 0              # lost reports that overtook one (for tests)
        # MR-TXS-485 (negative controls only): "always", an initial PSN lands after its
        # connection started; "dropped", it never lands
        assert psn_wrong in (None, "always", "dropped")
        self.psn_wrong = psn_wrong
        self.rl = row_layouts(conns, streams, paths, depth, prm["chunk_window"],
                              prm["resend_depth"], self.pacing, prm.get("late_cap"))
        self.lay = layouts(conns, streams, paths, depth)
        # one connection's semantics (TxSchedModel), loaded from and stored to a row per op
        self.last_active_kept = bool(last_active_kept)
        self.sem = TxSchedModel(2, streams, paths, depth, last_active_kept=self.last_active_kept,
                                pacing=self.pacing, pace_ignored=self.pace_ignored,
                                pace_full_only=self.pace_full_only,
                                **{k: v for k, v in prm.items()
                                   if k not in ("conns", "streams", "paths", "depth")})
        if self.pacing:
            # MR-TXS-337: the pacer's ports (TxSched(pacing=True)'s layouts)
            self.pace_lay = pacer_model.frame_layouts(conns)
            self.late_lay, self.ask_lay = late_layout(conns), ask_layout(conns)
        # MR-TXS-338/339: the ask queue {conn, now, wl} (m_pace its head) and the late queue
        # (conn, seen); now_r: last cycle's now (the wake's compare, on registers)
        self.asks, self.late = deque(), deque()
        self.now_r = 0
        self._ask = self._late = None
        # MR-TXS-200: the row memory at reset; MR-TXS-205: the descriptor memory (read here at
        # S2, the current records: what the RTL's read with the row and its forwards give)
        self.pipe = RowPipe([self._reset_row(c) for c in range(conns)], forward=forward)
        self.mem = self.pipe.mem
        self.desc = [0] * (conns * streams * depth)
        # MR-TXS-212/215: the active queue and the completion queue (connection numbers)
        self.active, self.done = deque(), deque()
        # MR-TXS-211: the ports' boundary registers
        self.b = {k: None for k in ("verdict", "cwnd", "fail", "acked", "lost", "wr", "turn",
                                    "retime", "psn")}
        self.psn_ign = 0                # MR-TXS-484: the write applied last edge was ignored
        self.blocked = {"wr": False, "lost": False}      # MR-TXS-217: refused, waiting
        self.in_flight = {"wr": False, "lost": False}
        self.frame_q = SyncFifoModel(OUT_DEPTH)
        self.sent_q = SyncFifoModel(OUT_DEPTH)
        self.cqe_q = SyncFifoModel(OUT_DEPTH)
        # MR-TXS-284..287: with restores, an acknowledged report's restore of a probing path
        # leaves on m_restore through a queue; restore_hold=False (negative control only)
        # leaves out MR-TXS-286's hold of s_probe
        self.restores, self.restore_hold = bool(restores), bool(restore_hold)
        self.rst_q = SyncFifoModel(OUT_DEPTH)
        self.pwait = 0                                   # MR-TXS-287: s_probe refused last cycle
        # MR-TXS-316: with restores, a verdict taken as a reroute leaves on m_restore too
        # (``kept`` 1); kept_out=False (negative control only) leaves it out
        self.kept_out = bool(kept_out)
        if self.restores:
            self.restore_lay = rows_restore_layout(conns, paths)
        # MR-TXS-325..327: with rd_rows, m_rd offers the good READ or atomic on s_wr with the
        # message number it takes, read a cycle ahead from the message numbers' memory (each
        # (connection, stream)'s msg_next: the row's, written with it); rd_addr the address read
        # last cycle, rd_msg its data (the memory after the last edge)
        self.rd_rows = bool(rd_rows)
        self.rd_addr, self.rd_msg = (0, 0), 0
        self.rd_held = 0                                 # cycles a READ waited for m_rd.ready
        self.rd_stale = 0                                # and for its message number's read
        self._msg_at = [self.rl.row["streams"].offset + s * self.rl.stream.size
                        + self.rl.stream["msg_next"].offset for s in range(streams)]
        self.events = []
        # operations applied, per kind (MR-TXS-482: "psn", the initial PSNs' writes)
        self.counts = {k: 0 for k in OP_KINDS + PACE_KINDS + ("psn",)}
        self.idle_sched = 0                              # MR-TXS-214: schedule ops that found nothing
        self.kept = 0                                    # MR-TXS-266: verdicts taken as reroutes

    def port_names(self):
        # MR-TXS-481: the initial-PSN port, as the register scheduler's
        ins, outs = [*INPUTS, *PSN_INPUTS], [*OUTPUTS, *PSN_OUTPUTS]
        if self.rd_rows:
            ins, outs = ins + ["m_rd__ready"], outs + ["m_rd__payload", "m_rd__valid"]
        if self.restores:
            ins, outs = ins + RESTORE_INPUTS, outs + RESTORE_OUTPUTS
        if self.pacing:
            ins, outs = ins + PACE_INPUTS, outs + PACE_OUTPUTS
        return {"inputs": ins, "outputs": outs}

    # ------------------------------------------------------------ m_rd (MR-TXS-325..327)
    def _rd_addr(self, f):
        """MR-TXS-326: a work request's address in the message numbers' memory: (connection,
        stream modulo ``streams``)."""
        return f["conn"], f["stream"] & (self.streams - 1)

    def rd_fresh(self, payload):
        """MR-TXS-326: the message number read last cycle is ``payload``'s stream's (last
        cycle's read was at its address; the read sees the write at the last edge)."""
        return self._rd_addr(unpack(self.lay.wr, payload)) == self.rd_addr

    def rd_request(self, payload):
        """MR-TXS-325 (``TxSchedCycleModel.rd_request``'s contract): ``m_rd``'s fields for the
        work request ``payload`` on ``s_wr`` when it is a good READ or atomic (None otherwise),
        its message number the one read last cycle (its stream's ``msg_next`` when
        :meth:`rd_fresh`); on registers and the port only."""
        f = unpack(self.lay.wr, payload)
        if not self.rd_rows or not (is_read(f["op"]) or is_atomic(f["op"])) \
                or self.sem.wr_status(f):
            return None
        return {"conn": f["conn"], "stream": f["stream"], "msg": self.rd_msg,
                "laddr": f["laddr"], "length": f["length"], "wr_id": f["wr_id"]}

    def _rd_msg_of(self, conn, s):
        """MR-TXS-326: stream ``s``'s ``msg_next`` in the row of ``conn`` in memory (what the
        message numbers' memory holds)."""
        return (self.mem[conn] >> self._msg_at[s]) & 0xFFFFFFFF

    # ------------------------------------------------------------ rows <-> semantics
    def _reset_row(self, c):
        """MR-TXS-206: a connection's row at reset (TxSchedModel's reset state; MR-CONN-004: its
        path rotation starts at ``c mod paths``)."""
        S, D, Pn, rl = self.streams, self.depth, self.paths, self.rl
        row = {"conn": {"rr": c % Pn, "srr": 0, "inflight": 0, "unsent": 0, "rhead": 0,
                        "rcount": 0, "inq": 0, "incq": 0, "started": 0,
                        **({"pend": 0, "armed": 0, "paced": 0, "seen": 0, "inlq": 0}
                           if self.pacing else {})},
               "streams": [{"tail": 0, "send": 0, "done": 0, "msg_next": 0, "send_seq": 0}
                           for _ in range(S)],
               "entries": [_unpack(rl.entry, 0) for _ in range(S * D)],
               "paths": [{"next_psn": 0, "inflight": 0, "pkts": 0, "since_req": 0,
                          "cwnd": self.prm["cwnd"], "state": 0, "col": 0, "gen": 0, "tail_ok": 0,
                          "tail_slot": 0, "tail_chunk": 0, "tail_lap": 0, "quiet": 0}
                         for _ in range(Pn)],
               "retx": [{"slot": 0, "chunk": 0, "stale": 0}
                        for _ in range(self.prm["resend_depth"])]}
        return pack_row(rl, row)

    def _load(self, c, word, now=None):
        """The row ``word`` of connection ``c`` into connection 0 of ``self.sem``; returns the
        unpacked row (its flags and resend pointer are the row's own). MR-TXS-337: with pacing,
        `late` is the row's `armed` while ``now`` (default: last cycle's) is before `seen`."""
        sem, rl, S, D = self.sem, self.rl, self.streams, self.depth
        row = unpack_row(rl, word)
        cr = row["conn"]
        if self.pacing:
            now = self.now_r if now is None else now
            sem.pace[0] = {"pend": cr["pend"], "ask": 0, "seen": cr["seen"], "t_ask": 0,
                           "wl": 0, "paced": cr["paced"],
                           "late": int(bool(cr["armed"]) and P.time_lt(now, cr["seen"]))}
        R = self.prm["resend_depth"]
        retx = deque(tuple(row["retx"][(cr["rhead"] + k) % R][f] for f in ("slot", "chunk",
                                                                           "stale"))
                     for k in range(cr["rcount"]))
        sem.conn[0] = {"rr": cr["rr"], "srr": cr["srr"], "inflight": cr["inflight"],
                       "unsent": cr["unsent"], "retx": retx}
        ents = {}
        for s in range(S):
            st = row["streams"][s]
            q = {"ring": [None] * D, "tail": st["tail"], "send": st["send"], "done": st["done"],
                 "msg_next": st["msg_next"], "send_seq": st["send_seq"]}
            sem.q[s] = q
            for i in range(D):
                if sem.live(s, i):
                    e = dict(row["entries"][s * D + i])
                    e["lnq"] = self._lnq_set(e)
                    d = _unpack(rl.desc, self.desc[(c * S + s) * D + i])
                    e.update(d, conn=c, stream=s)
                    if e["rsp"]:
                        e["stream"] = S - 1
                    q["ring"][i] = e
                    ents[s * D + i] = e
        for p in range(self.paths):
            pr = row["paths"][p]
            e = ents.get(pr["tail_slot"])
            tail = ((e, pr["tail_slot"], pr["tail_chunk"])
                    if pr["tail_ok"] and e is not None and e["lap"] == pr["tail_lap"] else None)
            sem.path[p] = {k: pr[k] for k in ("next_psn", "inflight", "pkts", "since_req",
                                              "cwnd", "state", "col", "gen", "quiet")}
            sem.path[p].update(tail=tail, rst=0)
        return row

    def _store(self, c, row, popped, now=0, refused=False):
        """``self.sem``'s connection 0 back into the row of ``c`` (and its descriptors);
        ``popped``: the operation took the resend FIFO's head (MR-TXS-201); MR-TXS-337: `armed`
        the `late` left at ``now`` (a refused op's as read)."""
        sem, rl, S, D = self.sem, self.rl, self.streams, self.depth
        R = self.prm["resend_depth"]
        cs = sem.conn[0]
        cr = row["conn"]
        head = (cr["rhead"] + int(popped)) % R
        if len(cs["retx"]) > R:
            raise ValueError("the resend FIFO overflows its row (MR-TXS-217 refuses first)")
        for k, (slot, chunk, stale) in enumerate(cs["retx"]):
            row["retx"][(head + k) % R] = {"slot": slot, "chunk": chunk, "stale": stale}
        cr.update(rr=cs["rr"], srr=cs["srr"], inflight=cs["inflight"], unsent=cs["unsent"],
                  rhead=head, rcount=len(cs["retx"]))
        if self.pacing:
            # MR-TXS-337: `armed` stored as the `late` the op leaves (0 once `now` is not
            # before `seen`: never a `seen` 2^31 ns old read as ahead)
            ps = sem.pace[0]
            armed = cr["armed"] if refused else int(bool(ps["late"]) and P.time_lt(now, ps["seen"]))
            cr.update(pend=ps["pend"], armed=armed, paced=ps["paced"], seen=ps["seen"])
        for s in range(S):
            q = sem.q[s]
            row["streams"][s] = {k: q[k] for k in ("tail", "send", "done", "msg_next",
                                                    "send_seq")}
            for i in range(D):
                e = q["ring"][i]
                if e is None:
                    continue            # a free entry keeps its old bits (never read)
                row["entries"][s * D + i] = {k: int(e.get(k, 0)) for k in rl.entry.members
                                             if k != "lnq"}
                row["entries"][s * D + i]["lnq"] = self._lnq_bits(e)
                self.desc[(c * S + s) * D + i] = _pack(
                    rl.desc, {k: int(e.get(k, 0)) for k in rl.desc.members})
        for p in range(self.paths):
            ps = sem.path[p]
            t = ps["tail"]
            pr = {k: ps[k] for k in ("next_psn", "inflight", "pkts", "since_req", "cwnd",
                                     "state", "col", "gen", "quiet")}
            if t is None:
                pr.update(tail_ok=0, tail_slot=0, tail_chunk=0, tail_lap=0)
            else:
                pr.update(tail_ok=1, tail_slot=t[1], tail_chunk=t[2], tail_lap=t[0]["lap"])
            row["paths"][p] = pr
        return pack_row(rl, row)

    def _lnq_set(self, e):
        """MR-TXS-256: an entry's lost-not-queued bits as the chunks they name: bit ``b`` the
        chunk in ``[ack_base, ack_base + chunk_window)`` that is ``b`` modulo the window."""
        W, base = self.prm["chunk_window"], e["ack_base"]
        return {base + (b - base) % W for b in range(W) if e["lnq"] >> b & 1}

    def _lnq_bits(self, e):
        """MR-TXS-256: the set as its bits; every chunk in it lies in the entry's window."""
        W, base = self.prm["chunk_window"], e["ack_base"]
        assert all(base <= k < base + W for k in e.get("lnq", ())), "MR-TXS-256"
        return sum(1 << (k % W) for k in set(e.get("lnq", ())))

    def _refill_pick(self):
        """MR-TXS-258: the loaded connection's chunk to refill, or None: with room in its FIFO,
        its lowest live entry not failed with a kept chunk, that entry's lowest bit (the
        register scheduler's ``refill_pick`` on one connection)."""
        sem = self.sem
        if len(sem.conn[0]["retx"]) >= self.prm["resend_depth"]:
            return None
        for slot in range(self.streams * self.depth):
            e = sem.entry_of(0, slot)
            if e is not None and e["lnq"] and not e["status"]:
                return slot, min(e["lnq"], key=lambda k: k % self.prm["chunk_window"])
        return None

    # ------------------------------------------------------------ one operation (S2)
    def _completes(self):
        """MR-TXS-215: some stream of the loaded connection completes (its oldest message)."""
        return any(self.sem.completes(s) for s in range(self.streams))

    def _apply(self, op, word, now):
        """MR-TXS-207..209: operation ``op`` on the row ``word`` of its connection: ``(new word,
        frame, sent, completion, enters the active queue, enters the completion queue,
        refused, result)`` (MR-TXS-213/215/217; ``result``: a schedule op's action, a verdict's
        "taken as a reroute" (MR-TXS-316), else the completion)."""
        c, kind, f = op.conn, op.kind, op.f
        sem = self.sem
        row = self._load(c, word, now)
        self._ask, self._held = None, False
        restored = False
        cr = row["conn"]
        frame = sent = cqe = None
        popped = refused = False
        act = None
        landed = False
        if kind == "wr":
            g = dict(f, conn=0)
            if not sem.wr_room(g):
                refused = True
            else:
                cr["started"] = 1                   # MR-TXS-482
                cqe = sem.wr(g)
                if cqe is not None:
                    cqe["conn"] = c
        elif kind == "psn":
            # MR-TXS-482/483: lands on a row that has started nothing (its connection has no
            # work, so no decision has read the row's PSNs), else changes nothing
            landed = {None: not cr["started"], "always": True,
                      "dropped": False}[self.psn_wrong]
            if landed:
                sem.path[f["path"]]["next_psn"] = f["psn"]
        elif kind in ("acked", "lost"):
            g = dict(f, conn=0)
            if kind == "lost" and self.lost_waits and not sem.resend_room(g):
                refused = True                  # MR-TXS-217's old rule (MR-TXS-261's control)
            else:
                sem.report(g, lost=kind == "lost")
                # MR-TXS-284: an acknowledged report restored a probing path (TxSchedModel's
                # pending bit, 0 at every load)
                restored = kind == "acked" and f["path"] < self.paths and bool(
                    sem.path[f["path"]]["rst"])
        elif kind == "complete":
            qi = next(s for s in range(self.streams) if sem.completes(s))
            cqe = sem.complete(qi)
            cqe["conn"] = c
        elif kind == "cwnd":
            sem.set_cwnd(0, f["path"], f["cwnd"])
        elif kind == "verdict":
            # MR-TXS-266: MR-TXS-290's fact read on the row this op applies to (serialised, so
            # every op of the connection before it is in the row)
            restored = sem.verdict_taken(dict(f, conn=0)) != f["verdict"]
            if restored:
                self.kept += 1
            sem.path_event(dict(f, conn=0))
        elif kind == "fail":
            fl, er = f
            sem.fail(sem.fail_targets(dict(fl, conn=0) if fl else None,
                                      dict(er, conn=0) if er else None))
        elif kind == "probe":
            # MR-TXS-270/271: the path's newest packet rebuilt from its tail fields and the
            # descriptor (TxSchedModel.probe: AckReq, RETX, the path's generation now), or a
            # drop; no state changes
            frame = sem.probe(dict(f, conn=0))
            if frame is not None:
                frame["conn"] = c
        elif kind == "sched" and self._time_write_in_flight(c):
            # MR-TXS-372: the op acts as one that found nothing (the write's own op re-queues
            # the connection, MR-TXS-339); logged as held for the replay (MR-TXS-373)
            self.held_sched, self._held = self.held_sched + 1, True
        elif kind == "sched":
            act = sem.decide_conn(0)
            if act is None:
                self.idle_sched += 1
            else:
                popped = act[0] == "drop" or act[2] == "resend"
                was_pend = self.pacing and sem.pace[0]["pend"]
                r = sem.apply(act, now)
                if r is not None:
                    frame, sent = dict(r[0], conn=c), dict(r[1], conn=c)
                act = (act[0], c) + tuple(act[2:])
                if self.pacing and sem.pace[0]["ask"] and not (was_pend and self.pace_ignored):
                    # MR-TXS-338: the charge (MR-TXS-161/176) into the ask queue at write-back
                    # (pace_ignored, negative control only: a packet taken with a turn asked for
                    # charges nothing, so the queue still holds one ask per connection)
                    ps = sem.pace[0]
                    self._ask = {"conn": c, "now": ps["t_ask"], "wl": ps["wl"]}
                if self.pacing:
                    sem.pace[0]["ask"] = 0
        elif kind == "turn":
            # MR-TXS-162 on the one connection (pend cleared, seen, late when the time moved)
            sem.pace_edge(now, turn=dict(f, conn=0))
        elif kind == "retime":
            # MR-TXS-167/177 on the one connection (`paced`; with set_time and no turn asked
            # for, seen and late); the line rate as it was when the write was taken
            sem.pace_edge(now, retime=dict(f, conn=0), line_mbps=f["line"])
        elif kind == "wake":
            row["conn"]["inlq"] = 0           # MR-TXS-339: out of the late queue (re-tested below)
        # MR-TXS-258: a schedule op that took its FIFO's head refills one kept chunk (only a
        # pop makes room: MR-TXS-259's invariant, checked below)
        self._refill = None
        if popped and not self.lost_waits:
            self._refill = self._refill_pick()
            if self._refill is not None:
                sem.refill((0,) + self._refill)
        if not refused and not self.lost_waits:
            assert self._refill_pick() is None, \
                f"MR-TXS-259: conn {c} has room and a kept chunk after a {kind} op"
        # MR-TXS-213/214: the active queue: a schedule op keeps its connection in it when it
        # acted and work is left, else lets it go; every other op (unless refused) puts it in
        # when it has work: chunks not sent once or resends queued (without, no action)
        cs = sem.conn[0]
        work = bool(cs["unsent"] or cs["retx"]) or not self.work_filter
        # MR-TXS-339: with pacing, a connection enters the active queue only when due on the
        # row the op leaves (not waiting for a turn, not late at this now): a turn, or the late
        # queue's wake, brings it back
        due, late_new = True, False
        if self.pacing:
            ps = sem.pace[0]
            late_new = bool(ps["late"]) and P.time_lt(now, ps["seen"])
            due = self.pace_ignored or not (ps["pend"] or late_new)
        push_active = False
        if kind == "sched":
            if act is None or not work or not due:
                cr["inq"] = 0
            else:
                push_active = True
        elif kind == "probe":
            pass                # MR-TXS-273: the row unchanged, the queues' rules hold as before
        elif not refused and not cr["inq"] and work and due:
            cr["inq"], push_active = 1, True
        # MR-TXS-339: a connection left late goes into the late queue (at most once: inlq)
        self._late = None
        if self.pacing and not refused:
            if late_new and not cr["inlq"] and self.late_queue:
                cr["inlq"], self._late = 1, (c, sem.pace[0]["seen"])
            assert not late_new or cr["inlq"] or not self.late_queue, \
                f"MR-TXS-339: conn {c} late, not in the late queue"
        # MR-TXS-215: the completion queue, on the new row
        push_done = False
        if kind == "complete":
            cr["incq"] = 0
        if not refused and kind != "probe" and not cr["incq"] and self._completes():
            cr["incq"], push_done = 1, True
        new = self._store(c, row, popped, now, refused)
        res = (act if kind == "sched" else (frame is not None) if kind == "probe"
               else restored if kind in ("acked", "verdict") else landed if kind == "psn"
               else cqe)
        return new, frame, sent, cqe, push_active, push_done, refused, res

    def _time_write_in_flight(self, c):
        """MR-TXS-372: a write with a time of connection ``c`` the pacer has taken and the
        rows not yet applied: in ``s_retime``'s register (the arbiter's pick in this cycle
        included) or in S1 (read at S2's edge, before the pipeline moves)."""
        if not (self.pacing and self.retime_hold):
            return False
        b, s1 = self.b["retime"], self.pipe.s1
        return bool((b is not None and b["set_time"] and b["conn"] == c)
                    or (s1 is not None and s1.kind == "retime" and s1.f["set_time"]
                        and s1.conn == c))

    # ------------------------------------------------------------ the arbiter (S0)
    def _room(self, q, kinds):
        n = sum(1 for o in self.pipe.ops() if o.kind in kinds)
        return q.level + n < OUT_DEPTH

    def _ack_ok(self):
        """MR-TXS-285/287: with restores, an acknowledged report is taken while the restore
        queue has room for it and the acknowledged reports in flight, and not in the cycle after
        ``s_probe`` was refused (so a verdict held by MR-TXS-286 gets in)."""
        if not self.restores:
            return True
        return self._room(self.rst_q, ("acked",)) and not (self.pwait and self.restore_hold)

    def _cqe_room(self):
        n = sum(1 for o in self.pipe.ops() if (
            o.kind == "complete" or (o.kind == "wr" and self.sem.wr_status(o.f))))
        return self.cqe_q.level + n < OUT_DEPTH

    def _pick(self):
        """MR-TXS-210: the operation taken in this cycle, on registers (None: none)."""
        b = self.b
        # MR-TXS-340: a turn and a re-timing write first (each register free the cycle after
        # it is loaded: the pacer never offers both in one cycle, nor a turn the cycle after
        # its write)
        for k in ("turn", "retime"):
            if b[k] is not None:
                return _Op(k, b[k]["conn"], b[k])
        if b["verdict"] is not None and b["verdict"].get("to"):
            return _Op("verdict", b["verdict"]["conn"], b["verdict"])
        # MR-TXS-482: an initial PSN in the window write's place, before it
        if b["psn"] is not None:
            return _Op("psn", b["psn"]["conn"], b["psn"])
        if b["cwnd"] is not None:
            return _Op("cwnd", b["cwnd"]["conn"], b["cwnd"])
        if b["fail"] is not None:
            fl, er = b["fail"]
            return _Op("fail", (fl or er)["conn"], b["fail"])
        if b["acked"] is not None and self._ack_ok():
            return _Op("acked", b["acked"]["conn"], b["acked"])
        if b["lost"] is not None and not self.in_flight["lost"] and not self.blocked["lost"]:
            return _Op("lost", b["lost"]["conn"], b["lost"])
        if self.done and self._cqe_room():
            return _Op("complete", self.done[0], None)
        # MR-TXS-339: the late queue's head, once last cycle's now is not before its seen
        if self.late and not P.time_lt(self.now_r, self.late[0][1]):
            return _Op("wake", self.late[0][0], None)
        w = b["wr"]
        if (w is not None and not self.in_flight["wr"] and not self.blocked["wr"]
                and (not self.sem.wr_status(w) or self._cqe_room())):
            return _Op("wr", w["conn"], w)
        # MR-TXS-272: a tail probe after the work request, before the schedule op, with room
        # in the frame queue for it and the frames in flight (a probe has no sent event)
        pb = b["verdict"]
        if pb is not None and not pb.get("to") and self._room(self.frame_q, ("sched", "probe")):
            return _Op("probe", pb["conn"], pb)
        if (self.active and self._room(self.frame_q, ("sched", "probe"))
                and self._room(self.sent_q, ("sched",)) and not self._sched_waits()):
            return _Op("sched", self.active[0], None)
        return None

    def _held_by_hold(self):
        """Whether the pick would be the schedule op without MR-TXS-470's hold."""
        if not self._sched_waits():
            return False
        self.sched_hold = False
        try:
            alt = self._pick()
        finally:
            self.sched_hold = True
        return alt is not None and alt.kind == "sched"

    def _sched_waits(self):
        """MR-TXS-470: the active queue's head waits while S1 holds an operation of its
        connection (the op that would be just ahead of its schedule op in S2)."""
        s1 = self.pipe.s1
        return bool(self.sched_hold and self.active and s1 is not None
                    and s1.conn == self.active[0])

    # ------------------------------------------------------------ the readies before the edge
    def _free(self, k, taken):
        """MR-TXS-211: boundary register ``k`` is ready when empty or taken in this cycle (the
        work request's and the lost report's stay until applied, MR-TXS-217); MR-TXS-272:
        s_probe's register holds a verdict or a tail probe, freed by either."""
        b = self.b
        return b[k] is None or (taken == k and k not in ("wr", "lost")) or (
            k == "verdict" and taken == "probe")

    def _taken(self):
        pick = self._pick()
        return pick.kind if pick is not None else None

    def pace_outputs(self, taken=None):
        """MR-TXS-338/340: ``m_pace`` (the ask queue's head, ``force`` 1) and the readies of
        ``s_turn`` and ``s_retime`` before the edge (their registers free or taken)."""
        taken = self._taken() if taken is None else taken
        a = self.asks[0] if self.asks else {"conn": 0, "now": 0, "wl": 0}
        return {"m_pace__valid": int(bool(self.asks)),
                "m_pace__payload": pack(self.pace_lay["frame"], dict(a, force=1)),
                "s_turn__ready": int(self._free("turn", taken)),
                "s_retime__ready": int(self._free("retime", taken))}

    def retime_ready(self):
        """MR-TXS-340: ``s_retime.ready`` before the edge (the join gates the pacer's writes
        with it)."""
        return int(self._free("retime", self._taken()))

    def resend_ready(self):
        """MR-TX-316: ``s_resend.ready`` before the edge (the lost report's register empty)."""
        return int(self.b["lost"] is None)

    def acked_ready(self):
        """MR-TX-316: ``s_acked.ready`` before the edge, on registers (the arbiter's pick)."""
        return int(self._free("acked", self._taken()))

    def fail_ready(self):
        """MR-TX-316: ``s_fail.ready`` (= ``s_error.ready``) before the edge."""
        return int(self._free("fail", self._taken()))

    def cwnd_ready(self):
        """MR-TX-316: ``s_cwnd.ready`` before the edge."""
        return int(self._free("cwnd", self._taken()))

    def psn_ready(self):
        """MR-TXS-481: ``s_psn.ready`` before the edge (its register free or taken)."""
        return int(self._free("psn", self._taken()))

    def _probe_ready(self, taken):
        if not self._free("verdict", taken):
            return 0
        # MR-TXS-286: s_probe holds while a restore is queued or an acknowledged report is in
        # the pipeline or taken in this cycle
        if self.restores and self.restore_hold and (self.rst_q.level or taken == "acked" or any(
                o.kind == "acked" for o in self.pipe.ops())):
            return 0
        return 1

    def probe_ready(self):
        """MR-TX-316: ``s_probe.ready`` before the edge (MR-TXS-286's hold included)."""
        return self._probe_ready(self._taken())

    def restore_outputs(self):
        """MR-TX-316: ``(m_restore valid, payload)`` before the edge: the restore queue's head
        (MR-TXS-284)."""
        if not self.restores or not self.rst_q.level:
            return 0, 0
        return 1, self.rst_q.head

    def busy(self):
        return bool(self.frame_q.level or self.sent_q.level or self.cqe_q.level or self.rst_q.level
                    or self.pipe.ops() or self.active or self.done or self.asks or self.late
                    or any(v is not None for v in self.b.values()))

    # ------------------------------------------------------------ one clock
    def step(self, inputs):
        g = inputs.get
        lay, b = self.lay, self.b
        pick = self._pick()
        taken = pick.kind if pick is not None else None
        # MR-TXS-497: a lost report taken while an acknowledged one waits in its register
        # overtakes it and perhaps those behind it in the unit's queue (HUSH at most): the
        # next HUSH acknowledged reports zero no quiet count (MR-TXS-495)
        if taken == "lost" and self.b["acked"] is not None:
            self.hush = HUSH
            self.overtakes += 1
        elif taken == "acked":
            pick.f = dict(pick.f, hush=int(self.hush > 0))
            self.hush = max(0, self.hush - 1)
        if pick is None or pick.kind != "sched":
            self.sched_waits += self._held_by_hold()
        def free(k):
            return self._free(k, taken)
        rsp_valid = g("s_rsp__valid", 0)
        wr_free = b["wr"] is None
        cq_pay, cq_valid, done_pay, done_valid, cq_rsp = cqe_outputs(lay, self.cqe_q.head,
                                                                     self.cqe_q.level)
        fail_free = free("fail")
        # MR-TXS-325/327: a good READ or atomic on s_wr waits at the port for m_rd (and for its
        # message number read, MR-TXS-326)
        rd, rd_ok = None, 1
        if self.rd_rows:
            wpay = g("s_wr__payload", 0)
            rd = self.rd_request(wpay)
            rd_ok = int(rd is None or (self.rd_fresh(wpay) and bool(g("m_rd__ready", 0))))
        out = {"s_wr__ready": int(wr_free and not rsp_valid and rd_ok),
               "s_rsp__ready": int(wr_free),
               "s_acked__ready": int(free("acked")), "s_resend__ready": int(b["lost"] is None),
               "s_fail__ready": int(fail_free), "s_error__ready": int(fail_free),
               "s_cwnd__ready": int(free("cwnd")), "s_probe__ready": self._probe_ready(taken),
               # MR-TXS-481/484
               "s_psn__ready": int(free("psn")), "psn_ignored": self.psn_ign,
               "m_rsp_done__payload": done_pay, "m_rsp_done__valid": done_valid,
               "m_frame__payload": self.frame_q.head, "m_frame__valid": int(self.frame_q.level > 0),
               "m_sent__payload": self.sent_q.head, "m_sent__valid": int(self.sent_q.level > 0),
               "m_cqe__payload": cq_pay, "m_cqe__valid": cq_valid}
        rd_take = False
        if self.rd_rows:
            f = unpack(lay.wr, wpay)
            rd_valid = int(rd is not None and self.rd_fresh(wpay) and bool(g("s_wr__valid", 0))
                           and wr_free and not rsp_valid)
            out["m_rd__valid"] = rd_valid
            out["m_rd__payload"] = pack(lay.rd, {
                "conn": f["conn"], "stream": f["stream"], "msg": self.rd_msg,
                "laddr": f["laddr"], "length": f["length"], "wr_id": f["wr_id"]})
            rd_take = bool(rd_valid and g("m_rd__ready", 0))
            self.rd_held += bool(rd_valid and not rd_take)
            self.rd_stale += bool(rd is not None and g("s_wr__valid", 0) and wr_free
                                  and not rsp_valid and not self.rd_fresh(wpay))
        if self.restores:
            # MR-TXS-284: the restore queue's head (MR-TXS-286's hold is in _probe_ready)
            out["m_restore__valid"] = int(self.rst_q.level > 0)
            out["m_restore__payload"] = self.rst_q.head
        ask_take = False
        if self.pacing:
            # MR-TXS-338: m_pace the ask queue's head (force 1); MR-TXS-340: s_turn and
            # s_retime ready while their registers are free or taken
            out.update(self.pace_outputs(taken))
            ask_take = bool(out["m_pace__valid"] and g("m_pace__ready", 0))
        # ---- the edge: S2 applies (MR-TXS-220/221), S1 moves to S2, the op taken is read
        frame = sent = cqe = None
        self.pwait = int(bool(g("s_probe__valid", 0)) and not out["s_probe__ready"])
        x, r = self.pipe.edge(pick, lambda op, word: self._apply(op, word, g("now", 0)))
        rst_push = None
        self.psn_ign = 0
        if x is not None:
            new, frame, sent, cqe, p_act, p_done, refused, res = r
            # MR-TXS-484: an initial PSN ignored, said in the next cycle
            self.psn_ign = int(x.kind == "psn" and not res)
            if x.kind in self.in_flight:
                self.in_flight[x.kind] = False
                if refused:
                    self.blocked[x.kind] = True          # MR-TXS-217
                else:
                    b[x.kind] = None
            if not refused:
                if x.kind == "acked" and res and self.restores:
                    rst_push = {"conn": x.conn, "path": x.f["path"], "kept": 0}
                elif x.kind == "verdict" and res and self.restores and self.kept_out:
                    # MR-TXS-316: the verdict taken as a reroute, for the TX top's windows
                    rst_push = {"conn": x.conn, "path": x.f["path"], "kept": 1}
                self.counts[x.kind] += 1
                # MR-TXS-373: a held schedule op logged with {"held": 1} (its payload else None)
                self.events.append((x.kind, x.conn, {"held": 1} if self._held else x.f, res,
                                    frame, sent, cqe, g("now", 0)))
                if self._refill is not None:
                    # MR-TXS-258: the schedule op's refill, logged after it for the replay
                    self.refills += 1
                    self.events.append(("refill", x.conn, self._refill, None, None, None, None,
                                        g("now", 0)))
                if self.pacing and self._ask is not None:
                    # MR-TXS-338: the charge, logged after its schedule op for the replay
                    self.events.append(("ask", x.conn, self._ask, None, None, None, None,
                                        g("now", 0)))
                # MR-TXS-217: a completion frees a ring entry, a schedule op the resend head
                for k, unblock in (("wr", "complete"), ("lost", "sched")):
                    if (self.blocked[k] and x.kind == unblock and b[k] is not None
                            and b[k]["conn"] == x.conn):
                        self.blocked[k] = False
            if p_act:
                self.active.append(x.conn)
            if p_done:
                self.done.append(x.conn)
        if self.pacing:
            if ask_take:
                self.asks.popleft()
            if x is not None and self._ask is not None:
                self.asks.append(self._ask)
            if x is not None and self._late is not None:
                self.late.append(self._late)
            assert len(self.asks) <= self.conns and len(self.late) <= self.conns
        if pick is not None:
            if pick.kind == "wake":
                self.late.popleft()
            elif pick.kind == "sched":
                self.active.popleft()
            elif pick.kind == "complete":
                self.done.popleft()
            elif pick.kind in self.in_flight:
                self.in_flight[pick.kind] = True
            else:
                b["verdict" if pick.kind == "probe" else pick.kind] = None
        # the ports into the boundary registers (MR-TXS-211)
        if out["s_rsp__ready"] and rsp_valid:
            b["wr"] = rsp_item(unpack(lay.rsp, g("s_rsp__payload", 0)), self.streams)
        elif out["s_wr__ready"] and g("s_wr__valid", 0):
            b["wr"] = unpack(lay.wr, g("s_wr__payload", 0))
            if rd_take:
                # MR-TXS-328: the transfer on m_rd, logged for the replay
                self.events.append(("rd", rd["conn"], rd, None, None, None, None, g("now", 0)))
        if self.rd_rows:
            # MR-TXS-326: the address read in this cycle (s_wr's payload, valid or not) and
            # its data after this edge's writes (the read is transparent to them)
            self.rd_addr = self._rd_addr(unpack(lay.wr, g("s_wr__payload", 0)))
            self.rd_msg = self._rd_msg_of(*self.rd_addr)
        if b["wr"] is None:
            self.blocked["wr"] = False
        if out["s_acked__ready"] and g("s_acked__valid", 0):
            b["acked"] = unpack(lay.acked, g("s_acked__payload", 0))
        if out["s_resend__ready"] and g("s_resend__valid", 0):
            b["lost"] = unpack(lay.report, g("s_resend__payload", 0))
            self.blocked["lost"] = False
        if out["s_cwnd__ready"] and g("s_cwnd__valid", 0):
            b["cwnd"] = unpack(lay.cwnd, g("s_cwnd__payload", 0))
        if out["s_psn__ready"] and g("s_psn__valid", 0):
            b["psn"] = unpack(lay.psn, g("s_psn__payload", 0))
        if fail_free and (g("s_fail__valid", 0) or g("s_error__valid", 0)):
            fl = unpack(lay.fail, g("s_fail__payload", 0)) if g("s_fail__valid", 0) else None
            er = unpack(lay.error, g("s_error__payload", 0)) if g("s_error__valid", 0) else None
            if fl and er and fl["conn"] != er["conn"]:
                raise NotImplementedError("a message and a connection failure of two "
                                          "connections in one cycle (MR-TXS-235)")
            b["fail"] = (fl, er)
        if out["s_probe__ready"] and g("s_probe__valid", 0):
            b["verdict"] = unpack(lay.probe, g("s_probe__payload", 0))   # a verdict or a probe
        if self.pacing:
            if out["s_turn__ready"] and g("s_turn__valid", 0):
                b["turn"] = unpack(self.pace_lay["turn"], g("s_turn__payload", 0))
            if out["s_retime__ready"] and g("s_retime__valid", 0):
                # MR-TXS-177: the line rate kept with the write (static: the RTL keeps the
                # compare's bit)
                b["retime"] = dict(unpack(self.pace_lay["write"], g("s_retime__payload", 0)),
                                   line=g("line_mbps", 0))
            self.now_r = g("now", 0) & P.TIME_MASK
        self.frame_q.update(g("m_frame__ready", 0), frame is not None,
                            pack(lay.frame, frame) if frame else 0)
        self.sent_q.update(g("m_sent__ready", 0), sent is not None,
                           pack(lay.sent, sent) if sent else 0)
        self.cqe_q.update(g("m_rsp_done__ready" if cq_rsp else "m_cqe__ready", 0),
                          cqe is not None, cqe_entry(lay, dict(cqe)) if cqe else 0)
        if self.restores:
            # MR-TXS-285/316: a restore or kept record always finds room
            assert rst_push is None or self.rst_q.level < OUT_DEPTH, "restore queue full"
            self.rst_q.update(g("m_restore__ready", 0), rst_push is not None,
                              pack(self.restore_lay, rst_push) if rst_push else 0)
        return out


def replay(model):
    """MR-TXS-230: the row scheduler's applied operations (``model.events``, in write-back
    order) given to :class:`~metaroce.models.tx_sched.TxSchedModel` (every connection in
    registers) in the same order: each schedule op must find the same action, each packet the
    same frame request and sent event, each completion the same record. Returns ``{conn:
    [frame requests]}`` and ``{conn: [completions]}``; AssertionError at the first difference."""
    prm = model.prm
    pacing = getattr(model, "pacing", False)
    ref = TxSchedModel(prm["conns"], prm["streams"], prm["paths"], prm["depth"],
                       last_active_kept=model.last_active_kept, pacing=pacing,
                       pace_ignored=getattr(model, "pace_ignored", False),
                       pace_full_only=getattr(model, "pace_full_only", False),
                       **{k: v for k, v in prm.items()
                          if k not in ("conns", "streams", "paths", "depth")})
    S = model.streams
    frames, cqes = {}, {}
    rd = None               # MR-TXS-328: the READ taken on m_rd, not yet applied
    ask = None              # MR-TXS-341: the charge the last schedule op made, not yet logged
    held = set()            # MR-TXS-373: connections whose schedule op was held, write not seen
    started = set()         # MR-TXS-482: connections with a work request or response applied
    for n, (kind, c, f, res, frame, sent, cqe, now) in enumerate(model.events):
        where = f"op {n} ({kind}, conn {c})"
        got = None
        if pacing:
            # MR-TXS-341: the connection's `late` as the register scheduler keeps it (falls at
            # the first edge whose now is not before `seen`), at this op's now
            ps = ref.pace[c]
            ps["late"] = int(bool(ps["late"]) and P.time_lt(now & P.TIME_MASK, ps["seen"]))
            assert ask is None or kind in ("ask", "refill"), f"{where}: charge {ask} not logged"
        if kind == "ask":
            # MR-TXS-341: the charge is the register scheduler's (its time and wire length)
            assert ask == (c, f["now"], f["wl"]), f"{where}: charge {f}, the scheduler's {ask}"
            ref.pace[c]["ask"], ask = 0, None
        elif kind == "turn":
            ref.pace_edge(now, turn=f)
        elif kind == "retime":
            ref.pace_edge(now, retime=f, line_mbps=f["line"])
            if f["set_time"]:
                held.discard(c)
        elif kind == "wake":
            pass                # MR-TXS-339: no state of the semantics (the row's queue bits)
        elif kind == "rd":
            assert rd is None, f"{where}: taken on m_rd before {rd} was applied"
            rd = f
        elif kind == "wr":
            assert ref.wr_room(f), f"{where}: taken without room"
            if getattr(model, "rd_rows", False) and not f.get("rsp") and (
                    is_read(f["op"]) or is_atomic(f["op"])) and not ref.wr_status(f):
                # MR-TXS-328: a good READ or atomic was offered on m_rd when taken, with the
                # message number it takes here (its stream's msg_next)
                want = {"conn": c, "stream": f["stream"],
                        "msg": ref.q[ref.qi(c, f["stream"])]["msg_next"],
                        "laddr": f["laddr"], "length": f["length"], "wr_id": f["wr_id"]}
                assert rd == want, f"{where}: m_rd {rd}, the scheduler's {want}"
                rd = None
            got = ref.wr(f)
            assert got == cqe, f"{where}: completion {cqe}, the scheduler's {got}"
            started.add(c)
        elif kind == "psn":
            # MR-TXS-482/483: landed exactly while no request of c was applied before it
            assert bool(res) == (c not in started), f"{where}: landed {res}, started {c in started}"
            if res:
                ref.path[c * ref.paths + f["path"]]["next_psn"] = f["psn"]
        elif kind in ("acked", "lost"):
            if kind == "acked":
                # MR-TXS-284: a restore exactly where the register scheduler restores a path
                # (an acknowledged report of a path not active)
                was = f["path"] < ref.paths and ref.path[c * ref.paths + f["path"]]["state"] \
                    != PATH_ACTIVE
                assert bool(res) == was, f"{where}: restore {res}, the scheduler's {was}"
            # MR-TXS-257: a lost report on a full FIFO is kept in its entry's set, in both
            ref.report(f, lost=kind == "lost")
        elif kind == "complete":
            qi = next((c * S + s for s in range(S) if ref.completes(c * S + s)), None)
            assert qi is not None, f"{where}: nothing completes in the scheduler"
            got = ref.complete(qi)
            assert got == cqe, f"{where}: completion {cqe}, the scheduler's {got}"
        elif kind == "refill":
            # MR-TXS-258/260: the row's refill is the register scheduler's pick on connection c
            slot, chunk = f
            assert ref.resend_room({"conn": c}), f"{where}: refill without room"
            e = ref.entry_of(c, slot)
            assert e is not None and chunk in e["lnq"] and not e["status"], \
                f"{where}: chunk {chunk} of slot {slot} not kept"
            assert all(ref.entry_of(c, k) is None or not ref.entry_of(c, k)["lnq"]
                       or ref.entry_of(c, k)["status"] for k in range(slot)), \
                f"{where}: a lower entry keeps a chunk"
            assert chunk % ref.chunk_window == min(k % ref.chunk_window for k in e["lnq"])
            ref.refill((c, slot, chunk))
        elif kind == "cwnd":
            ref.set_cwnd(c, f["path"], f["cwnd"])
        elif kind == "verdict":
            ref.path_event(f)
        elif kind == "probe":
            # MR-TXS-274: the register scheduler's probe on the same state (its frame or a drop)
            want = ref.probe(f)
            assert frame == want, f"{where}: probe frame {frame}, the scheduler's {want}"
        elif kind == "fail":
            ref.fail(ref.fail_targets(*f))
        elif kind == "sched" and f and f.get("held"):
            # MR-TXS-373: held (a write with a time of c in flight): nothing taken, and that
            # write's op comes before c's next schedule op
            assert res is None and frame is None and sent is None, f"{where}: held, acted"
            assert c not in held, f"{where}: held twice without its write"
            held.add(c)
        elif kind == "sched":
            assert c not in held, f"{where}: held, then scheduled before its write was applied"
            act = ref.decide_conn(c)
            norm = None if act is None else (act[:2] if act[0] == "drop" else
                                             act[:3] + (act[3] % S,) + act[4:])
            assert norm == res, f"{where}: action {res}, the scheduler's {norm}"
            if act is not None:
                want = ref.apply(act, now) or (None, None)
                assert frame == want[0], f"{where}: frame {frame}, the scheduler's {want[0]}"
                assert sent == want[1], f"{where}: sent {sent}, the scheduler's {want[1]}"
                if pacing and ref.pace[c]["ask"]:
                    ask = (c, ref.pace[c]["t_ask"], ref.pace[c]["wl"])
        if frame is not None:
            frames.setdefault(c, []).append(frame)
        if cqe is not None:
            cqes.setdefault(c, []).append(cqe)
    assert rd is None, f"m_rd took {rd}, never applied"
    assert ask is None, f"charge {ask} never logged"
    assert not held, f"schedule ops of {sorted(held)} held, their writes never applied"
    return frames, cqes



# ------------------------------------------------------------------ the pipeline alone

#: MR-TXS-237: the pipeline check's row (4 lanes of 8 bits) and operation
LANES, LANE_BITS = 4, 8


def lane_layouts(rows):
    """MR-TXS-237: ``s_op`` ``{conn, lane, add}`` and ``m_wb`` ``{conn, row}``."""
    cb = _bits(rows)
    return (data.StructLayout({"conn": cb, "lane": _bits(LANES), "add": LANE_BITS}),
            data.StructLayout({"conn": cb, "row": LANES * LANE_BITS}))


def lane_init(rows):
    """MR-TXS-237: row ``c`` at reset: every lane ``c`` (mod 256)."""
    return [sum((c & 0xFF) << (LANE_BITS * k) for k in range(LANES)) for c in range(rows)]


def lane_add(word, lane, add):
    """MR-TXS-237: the pipeline check's operation: lane ``lane`` of the row plus ``add``
    (mod 256)."""
    sh = LANE_BITS * lane
    m = (1 << LANE_BITS) - 1
    v = ((word >> sh) + add) & m
    return (word & ~(m << sh)) | v << sh


class RowPipeLaneModel:
    """MR-TXS-237: :class:`RowPipe` as a block with ports, for the RTL's lockstep: an
    operation on ``s_op`` (taken when valid, every cycle) adds to a lane of its row; ``m_wb``
    shows the row written at the last edge (its payload kept while not valid)."""

    def __init__(self, rows=4, *, forward=True):
        self.rows = rows
        self.op_lay, self.wb_lay = lane_layouts(rows)
        self.pipe = RowPipe(lane_init(rows), forward=forward)
        self.payload = 0

    @staticmethod
    def port_names():
        return {"inputs": ["s_op__valid", "s_op__payload"],
                "outputs": ["m_wb__valid", "m_wb__payload"]}

    def busy(self):
        return bool(self.pipe.ops())

    def step(self, inputs):
        wb = self.pipe.wb
        out = {"m_wb__valid": int(wb is not None), "m_wb__payload": self.payload}
        take = None
        if inputs.get("s_op__valid", 0):
            f = unpack(self.op_lay, inputs.get("s_op__payload", 0))
            take = _Op("lane", f["conn"], f)
        x, _ = self.pipe.edge(take, lambda op, w: (lane_add(w, op.f["lane"], op.f["add"]),))
        if x is not None:
            self.payload = pack(self.wb_lay, {"conn": x.conn, "row": self.pipe.wb[1]})
        return out
