"""Golden model of the retransmit unit (docs/spec/hw-tx.md, section "Retransmit unit", MR-TX-*).

Two layers, both built on :mod:`metaroce.models.protocol` (``sack_resolve``, PSN arithmetic)
and :mod:`metaroce.models.records` (the ``rtx`` record's fields, MR-ENG-027):

* :class:`RetransmitModel`: the semantics, one event per call: :meth:`RetransmitModel.sent`
  (a packet was sent) and :meth:`RetransmitModel.ack` (an ACK or NAK arrived) return what the
  unit reports: the acknowledged records (``acked``) and the records proven lost
  (``resend``), in PSN order (MR-TX-020..024). Per path it keeps the records in PSN order
  (a deque: the same content as the RTL's linked FIFO in the shared pool).
* :class:`RetransmitCycleModel`: the hardware's timing around the same rules, ``step(inputs)
  -> outputs`` once per clock with the Verilog port names, for the lockstep harness
  (tb/lockstep.py). It keeps the RTL's structures (the shared pool, its free list, one linked
  FIFO per path, the walk-job queue) so that pool exhaustion and every stall happen in the
  same cycle as in the RTL (MR-TX-030..036).

The RTL/model contract (port layouts, counter indices, queue depths) is declared here; the
RTL (hdl/retransmit.py) imports it. models/ never imports hdl/.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from amaranth.lib import data

from . import protocol as P
from . import records
from . import rx as rx_model
from .rx import pack, unpack

__all__ = ["Layouts", "layouts", "check_params", "RetransmitModel", "RetransmitCycleModel",
           "Decision", "JOB_DEPTH", "OUT_DEPTH", "COUNTER_BITS", "N_COUNTERS", "CTR",
           "retransmit_model_256x4", "SMALL"]

#: MR-TX-001: the small instance (connections, paths, pool records).
SMALL = (256, 4, 1024)

#: MR-TX-034: slots of the walk-job queue and of each output queue.
JOB_DEPTH = 16
OUT_DEPTH = 16

#: MR-TX-040: 64-bit counters, by index.
COUNTER_BITS = 64
CTR = {name: i for i, name in enumerate((
    "sent", "sent_bad", "acks", "acks_stale", "acks_bad", "naks", "acked", "gap_losses"))}
N_COUNTERS = len(CTR)


def check_params(conns, paths, pool):
    """MR-TX-001: powers of two (a row index is a concatenation of bits)."""
    for name, v, lo, hi in (("conns", conns, 2, 1 << 16), ("paths", paths, 2, 256),
                            ("pool", pool, 16, 1 << 20)):
        if not isinstance(v, int) or v < lo or v > hi or v & (v - 1):
            raise ValueError(f"{name} must be a power of two in [{lo}, {hi}], not {v!r}")


@dataclass(frozen=True)
class Layouts:
    conns: int
    paths: int
    pool: int
    conn_bits: int
    path_bits: int
    ptr_bits: int
    sent: data.StructLayout
    ack: data.StructLayout
    acked: data.StructLayout
    resend: data.StructLayout
    rec: data.StructLayout
    path: data.StructLayout
    job: data.StructLayout


def layouts(conns=records.CONNS, paths=records.PATHS, pool=records.RTX_POOL):
    """The unit's port and state layouts for one instance (MR-TX-002, MR-TX-010..012)."""
    check_params(conns, paths, pool)
    cb, pb = (conns - 1).bit_length(), max(1, (paths - 1).bit_length())
    ptr = (pool - 1).bit_length()
    rtx = dict(records.RTX)
    slot_bits, chunk_bits = rtx["tx_slot"].width, rtx["chunk"].width
    # MR-TX-002: what the scheduler reports for every data packet it sent
    sent = data.StructLayout({"conn": cb, "path": 8, "psn": P.wire.PSN_BITS, "slot": slot_bits,
                              "chunk": chunk_bits, "nbytes": rtx["nbytes"].width, "req": 1,
                              "abort": 1, "t_sent": records.TIME_BITS})
    # MR-TX-003: the peer RX engine's ACK/NAK request, as it arrives (models/rx.py, MR-RX-030/031)
    ack = rx_model.layouts(conns, paths, 2).ack
    report = data.StructLayout({"conn": cb, "path": 8, "slot": slot_bits, "chunk": chunk_bits,
                                "abort": 1})
    # MR-TX-010: a pool record: the fields of records.RTX the unit keeps (its `next` is the
    # separate link memory, MR-TX-011)
    rec = data.StructLayout({"slot": slot_bits, "chunk": chunk_bits, "t_sent": records.TIME_BITS,
                             "nbytes": rtx["nbytes"].width, "req": 1, "abort": 1})
    # MR-TX-012: the unit's part of path_tx (MR-ENG-022)
    path = data.StructLayout({"floor": P.wire.PSN_BITS, "next_psn": P.wire.PSN_BITS, "tail": ptr})
    # MR-TX-032: a walk job: resolve n records from the path's head, or restart the path's FIFO
    job = data.StructLayout({"restart": 1, "row": cb + pb, "conn": cb, "path": 8, "n": 9,
                             "acked": P.SACK_BITS, "ptr": ptr})
    return Layouts(conns, paths, pool, cb, pb, ptr, sent, ack, report, report, rec, path, job)


@dataclass(frozen=True)
class Decision:
    """One record resolved (MR-TX-022..024): ``kind`` "acked" or "resend"."""
    kind: str
    conn: int
    path: int
    slot: int
    chunk: int
    abort: int = 0


class RetransmitModel:
    """The unit's semantics, one event at a time (MR-TX-020..024)."""

    def __init__(self, conns=records.CONNS, paths=records.PATHS, pool=records.RTX_POOL):
        self.lay = layouts(conns, paths, pool)
        self.path = {}          # row -> [floor, next_psn, deque of record dicts in PSN order]
        self.used = 0
        self.counters = [0] * N_COUNTERS

    def row(self, conn, path):
        return (conn << self.lay.path_bits) | (path & (self.lay.paths - 1))

    def state(self, row):
        st = self.path.get(row)
        if st is None:
            st = self.path[row] = [0, 0, deque()]
        return st

    def _count(self, name, n=1):
        self.counters[CTR[name]] = (self.counters[CTR[name]] + n) % (1 << COUNTER_BITS)

    def sent_ok(self, s, row):
        """MR-TX-020: a sent packet is recorded when its PSN is the path's next PSN, the path's
        window has room (MR-SEQ-006) and a record is free."""
        floor, nxt, _ = self.state(row)
        return (s["psn"] == nxt and s["path"] < self.lay.paths
                and P.send_window_open(floor, nxt))

    def sent(self, s):
        """A packet was sent: allocate a record and append it to its path (MR-TX-020).
        Returns True when recorded, False when refused (counted ``sent_bad``)."""
        row = self.row(s["conn"], s["path"])
        if self.used >= self.lay.pool:
            # MR-TX-031: the hardware takes no sent packet while the pool is empty
            raise ValueError("no free record: the scheduler must wait (MR-TX-031)")
        if not self.sent_ok(s, row):
            self._count("sent_bad")
            return False
        st = self.state(row)
        st[1] = P.psn_add(st[1], 1)
        st[2].append({k: s[k] for k in ("slot", "chunk", "t_sent", "nbytes", "req", "abort")})
        self.used += 1
        self._count("sent")
        return True

    def ack(self, a):
        """An ACK or NAK (the fields of ``Layouts.ack``): the decisions it produces, in PSN order
        (MR-TX-021..024)."""
        if a["nak"]:
            self._count("naks")
            return []
        if a["path"] >= self.lay.paths:
            self._count("acks_bad")
            return []
        row = self.row(a["conn"], a["path"])
        st = self.state(row)
        n, acked = P.sack_resolve(st[0], st[1], a["cum"], a["sack"])
        if n < 0:
            self._count("acks_bad")         # MR-ERR-010: covers a PSN never sent
            return []
        if n == 0:
            self._count("acks_stale")
            return []
        self._count("acks")
        st[0] = P.psn_add(st[0], n)
        out = []
        for j in range(n):
            r = st[2].popleft()
            self.used -= 1
            kind = "acked" if (acked >> j) & 1 else "resend"
            self._count("acked" if kind == "acked" else "gap_losses")
            out.append(Decision(kind, a["conn"], a["path"], r["slot"], r["chunk"], r["abort"]))
        return out


# ------------------------------------------------------------------ cycle timing

class _Fifo:
    """amaranth.lib.fifo.SyncFIFO as the RTL uses it: a ring whose head is read without a
    register, so ``head`` shows the slot's old content while empty (an output queue's payload
    is compared every cycle, valid or not)."""

    def __init__(self, depth):
        self.mem = [0] * depth
        self.depth = depth
        self.produce = self.consume = self.level = 0

    @property
    def head(self):
        return self.mem[self.consume]

    def update(self, pop, push, value=0):
        """One clock edge: ``pop`` (r_en & r_rdy) and ``push`` (w_en & w_rdy)."""
        pop = bool(pop) and self.level > 0
        push = bool(push) and self.level < self.depth
        if push:
            self.mem[self.produce] = value
            self.produce = (self.produce + 1) % self.depth
        if pop:
            self.consume = (self.consume + 1) % self.depth
        self.level += int(push) - int(pop)


INPUTS = ("s_sent__payload", "s_sent__valid", "s_ack__payload", "s_ack__valid",
          "m_acked__ready", "m_resend__ready", "reg_addr")
OUTPUTS = ("s_sent__ready", "s_ack__ready", "m_acked__payload", "m_acked__valid",
           "m_resend__payload", "m_resend__valid", "reg_data")

_IDLE, _START, _WALK = 0, 1, 2


class RetransmitCycleModel:
    """The retransmit unit cycle by cycle (MR-TX-030..036): ``step(inputs)`` once per clock with
    every input port's value, returning every output port's value in that cycle."""

    def __init__(self, width=64, conns=records.CONNS, paths=records.PATHS, pool=records.RTX_POOL):
        if width not in (64, 128, 256, 512):
            raise ValueError(f"width must be 64, 128, 256 or 512, not {width!r}")
        self.width = width
        self.lay = lay = layouts(conns, paths, pool)
        self.sem = RetransmitModel(conns, paths, pool)     # counters and decision rules
        self.path = {}                  # row -> {"floor", "next_psn", "tail"}
        self.rec = {}                   # pool index -> record dict (MR-TX-010)
        self.link = {}                  # pool index -> next pool index (MR-TX-011)
        self.head = {}                  # row -> pool index of the path's oldest record
        # the free list (MR-TX-031): a ring holding every free pool index, full at reset
        self.free_mem = list(range(pool))
        self.free_rd = self.free_wr = 0
        self.free_level = pool
        self.s1 = None                  # ("ack"|"sent", fields) taken last cycle
        self.s2 = None                  # job dict to push, or None
        self.job_q = _Fifo(JOB_DEPTH)
        self.acked_q = _Fifo(OUT_DEPTH)
        self.resend_q = _Fifo(OUT_DEPTH)
        self.w_state = _IDLE
        self.w_job = None
        self.w_cursor = 0
        self.w_left = 0
        self.w_acked = 0
        self.reg_data = 0
        self.log = []                   # decisions in output order, for tests

    @staticmethod
    def port_names():
        return {"inputs": list(INPUTS), "outputs": list(OUTPUTS)}

    def busy(self):
        return bool(self.s1 or self.s2 or self.job_q.level or self.w_state != _IDLE
                    or self.acked_q.level or self.resend_q.level)

    @property
    def counters(self):
        return self.sem.counters

    def _row(self, row):
        r = self.path.get(row)
        return r if r is not None else {"floor": 0, "next_psn": 0, "tail": 0}

    def step(self, inputs):
        g = inputs.get
        lay, sem = self.lay, self.sem
        # -- stage 0: what may be taken (MR-TX-033): an ACK first, then a sent packet
        inflight = int(self.s1 is not None) + int(self.s2 is not None)
        credit = self.job_q.level + inflight < JOB_DEPTH
        ack_valid = g("s_ack__valid", 0)
        ack_ready = int(credit)
        s1_sent = self.s1 is not None and self.s1[0] == "sent"
        sent_ready = int(credit and not ack_valid and self.free_level > int(s1_sent))
        out = {
            "s_sent__ready": sent_ready, "s_ack__ready": ack_ready,
            "m_acked__payload": self.acked_q.head,
            "m_acked__valid": int(self.acked_q.level > 0),
            "m_resend__payload": self.resend_q.head,
            "m_resend__valid": int(self.resend_q.level > 0),
            "reg_data": self.reg_data,
        }
        addr = g("reg_addr", 0)
        self.reg_data = sem.counters[addr] if addr < N_COUNTERS else 0

        # -- stage 2: push the job
        job_push = self.s2
        # -- the walker (MR-TX-032)
        job_pop = False
        acked_push = resend_push = None
        free_push = None
        if self.w_state == _IDLE:
            if self.job_q.level:
                job_pop = True
                j = self.job_q.head
                if j["restart"]:
                    self.head[j["row"]] = j["ptr"]
                else:
                    self.w_job = j
                    self.w_state = _START
        elif self.w_state == _START:
            self.w_cursor = self.head.get(self.w_job["row"], 0)
            self.w_left = self.w_job["n"]
            self.w_acked = self.w_job["acked"]
            self.w_state = _WALK
        else:
            j = self.w_job
            r = self.rec.get(self.w_cursor) or unpack(lay.rec, 0)
            is_acked = self.w_acked & 1
            q = self.acked_q if is_acked else self.resend_q
            if q.level < OUT_DEPTH:
                d = Decision("acked" if is_acked else "resend", j["conn"], j["path"], r["slot"],
                             r["chunk"], r["abort"])
                self.log.append(d)
                word = pack(lay.acked, {"conn": d.conn, "path": d.path, "slot": d.slot,
                                        "chunk": d.chunk, "abort": d.abort})
                if is_acked:
                    acked_push = word
                else:
                    resend_push = word
                sem._count("acked" if is_acked else "gap_losses")
                free_push = self.w_cursor
                nxt = self.link.get(self.w_cursor, 0)
                self.w_cursor = nxt
                self.w_acked >>= 1
                self.w_left -= 1
                if self.w_left == 0:
                    self.head[j["row"]] = nxt
                    self.w_state = _IDLE

        # -- stage 1: the path row (MR-TX-020, MR-TX-021)
        s2 = None
        free_pop = False
        if self.s1 is not None:
            kind, f = self.s1
            row_i = (f["conn"] << lay.path_bits) | (f["path"] & (lay.paths - 1))
            row = self._row(row_i)
            if kind == "sent":
                ok = (f["psn"] == row["next_psn"] and f["path"] < lay.paths
                      and P.send_window_open(row["floor"], row["next_psn"]))
                if ok:
                    ptr = self.free_mem[self.free_rd]
                    free_pop = True
                    self.rec[ptr] = {k: f[k] for k in ("slot", "chunk", "t_sent", "nbytes", "req",
                                                       "abort")}
                    if row["floor"] == row["next_psn"]:
                        s2 = {"restart": 1, "row": row_i, "conn": 0, "path": 0, "n": 0,
                              "acked": 0, "ptr": ptr}
                    else:
                        self.link[row["tail"]] = ptr
                    self.path[row_i] = dict(row, next_psn=P.psn_add(row["next_psn"], 1), tail=ptr)
                    sem._count("sent")
                else:
                    sem._count("sent_bad")
            else:
                if f["nak"]:
                    sem._count("naks")
                elif f["path"] >= lay.paths:
                    sem._count("acks_bad")
                else:
                    n, acked = P.sack_resolve(row["floor"], row["next_psn"], f["cum"], f["sack"])
                    if n < 0:
                        sem._count("acks_bad")
                    elif n == 0:
                        sem._count("acks_stale")
                    else:
                        sem._count("acks")
                        self.path[row_i] = dict(row, floor=P.psn_add(row["floor"], n))
                        s2 = {"restart": 0, "row": row_i, "conn": f["conn"], "path": f["path"],
                              "n": n, "acked": acked, "ptr": 0}
        self.s2 = s2
        # -- stage 0: take
        self.s1 = None
        if ack_ready and ack_valid:
            self.s1 = ("ack", unpack(lay.ack, g("s_ack__payload", 0)))
        elif sent_ready and g("s_sent__valid", 0):
            self.s1 = ("sent", unpack(lay.sent, g("s_sent__payload", 0)))
        # -- queues and the free list at the clock edge
        self.job_q.update(job_pop, job_push is not None, job_push)
        self.acked_q.update(g("m_acked__ready", 0), acked_push is not None, acked_push)
        self.resend_q.update(g("m_resend__ready", 0), resend_push is not None, resend_push)
        if free_push is not None:
            self.free_mem[self.free_wr] = free_push
            self.free_wr = (self.free_wr + 1) % lay.pool
        if free_pop:
            self.free_rd = (self.free_rd + 1) % lay.pool
        self.free_level += int(free_push is not None) - int(free_pop)
        return out


def retransmit_model_256x4(width=64):
    """The model of the small instance (hdl.retransmit.retransmit_256x4)."""
    return RetransmitCycleModel(width, *SMALL)
