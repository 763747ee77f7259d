"""The TX engine's one verification stack, simulator-independent part (MR-TX-150..152).

* :func:`traffic`: seeded work requests (the scheduler's :func:`~metaroce.models.tx_sched_cases.traffic`,
  their payload placed in a host memory image) and the connections' templates;
* :class:`Driver`: the template writes first, then the work requests with idle cycles; random
  backpressure on ``m_axis``, ``m_cqe`` and ``m_error``; a host memory on ``m_axi`` with random
  ``arready``, R latency and R gaps (:class:`~metaroce.models.dma_read_cases.HostMemory`); and
  the loop: every frame on ``m_axis`` is decoded, delivered to a lossy receiver
  (``protocol.rx_accept``) per path, whose ACK records (the RX engine's ``m_ack`` layout) come
  back on ``s_ack``; when the engine falls quiet with work requests open, every path is ACKed,
  and then the clock jumps by an RTO so that the retransmit unit's timers find the tail losses;
* :func:`check`: what the engine emitted against the work requests and the host memory;
* :func:`data_requests`, :class:`DataDriver`, :func:`expected_data_frames`: the data path alone
  (join stage, DMA, frame builder) on frame requests (MR-TX-151);
* :func:`endpoint_frames` and :func:`endpoint_lossy`: the reference endpoint's frames and the
  engine's inputs for the same writes, to compare byte for byte (MR-TX-152);
* :class:`BenchDriver`, :class:`AckBurstDriver`: ``metaroce bench tx`` (MR-TX-153).
"""
from __future__ import annotations

import random
from collections import defaultdict, deque

from . import codec
from . import protocol as P
from .dma_read_cases import HostMemory, Layout
from .driver import CounterReadout, run_alone
from .rx import pack, unpack
from .tx import template_of
from .tx_sched import (ATOMIC_LEN, OP_CMP_SWAP, OP_FETCH_ADD, OP_READ, OP_SEND, OP_SEND_IMM, OP_WRITE,
                       OP_WRITE_IMM, STATUS_LOC_PROT_ERR, STATUS_OK, STATUS_RETRY_EXC_ERR, TxSchedModel, atomic_operands, has_imm,
                       is_atomic, is_read, is_send, msg_len, wire_op)
from .tx_sched_cases import atomic_rng, kind_rng, read_rng, recv_seqs
from .tx_sched_cases import responses as sched_responses
from .tx_sched_cases import traffic as sched_traffic
from .wire import MrdhFlag, Op

__all__ = ["templates", "traffic", "Driver", "run_model", "check", "frames_of_beats",
           "endpoint_frames", "endpoint_template", "endpoint_lossy", "endpoint_responses", "responses", "data_requests",
           "expected_data_frames", "expected_data_errors", "late_fail_batch", "watch_late_fails", "read_fails", "wr_status",
           "check_counters", "DataDriver", "BenchDriver", "AckBurstDriver", "ack_record"]


#: MR-TX-457: the room a sparse layout keeps after a payload (a read's last burst's beat, and
#: never the top of the address space: ``laddr + offset`` does not wrap)
SPARSE_MARGIN = 4096


def _mix64(x):
    """splitmix64's finaliser: the sparse host memory's 8 bytes at the 8-aligned address ``x``."""
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9 & 0xFFFF_FFFF_FFFF_FFFF
    x = (x ^ (x >> 27)) * 0x94D049BB133111EB & 0xFFFF_FFFF_FFFF_FFFF
    return x ^ (x >> 31)


class SparseHostMemory(HostMemory):
    """MR-TX-457: :class:`HostMemory` over the whole 64-bit address space: every byte a fixed
    function of its address (no image), the bursts in the layout's error ranges answered with
    an error as the flat memory's error window."""

    def __init__(self, lay, width, rng, *, image=None, **kw):
        assert image is None, "a sparse host memory has no image"
        super().__init__(lay, width, rng, image=b"", **kw)

    def read(self, addr, n):
        assert 0 <= addr and addr + n <= 1 << 64, f"read outside the address space at {addr:#x}"
        a0 = addr & ~7
        buf = b"".join(_mix64(a).to_bytes(8, "little") for a in range(a0, addr + n, 8))
        return buf[addr - a0:addr - a0 + n]


class SparseLayout:
    """MR-TX-457: where the coverage run's payloads lie: anywhere in the 64-bit address space
    (:meth:`address`), the failing reads' payloads in error ranges (:meth:`add_bad`);
    ``memory_class`` the driver's host memory (:class:`SparseHostMemory`)."""
    memory_class = SparseHostMemory
    size = 0

    def __init__(self):
        self.bad = []

    @staticmethod
    def address(rng, length):
        """A payload's address: any byte alignment, its bits uniform (half of them below 2^32,
        so that the upper word's bits toggle between payloads), its last byte at least
        :data:`SPARSE_MARGIN` below 2^64."""
        top = (1 << (64 if rng.random() < 0.5 else 32)) - length - SPARSE_MARGIN
        return rng.randrange(SPARSE_MARGIN, top)

    def add_bad(self, start, length):
        self.bad.append((start - SPARSE_MARGIN, start + length + SPARSE_MARGIN))

    def in_bad(self, addr):
        return any(a <= addr < b for a, b in self.bad)


def templates(conns, paths):
    """One template per connection (MR-TX-121): distinct MACs, addresses, QPs and source ports."""
    return [template_of(c, eth_dst=0x02_00_00_00_10_00 + c, eth_src=0x02_00_00_00_20_00 + c,
                        ip_src=f"10.0.1.{c + 1}", ip_dst=f"10.0.2.{c + 1}",
                        sports=[0xC000 + 16 * c + p for p in range(paths)],
                        pkey=0xFFFF - c, dest_qp=0x100 + c, ip_dscp=26, ip_ecn=2, ip_ttl=64)
            for c in range(conns)]


def traffic(sem: TxSchedModel, n, *, seed=0, max_len=None, bad=True, bad_reads=0):
    """``n`` work requests for the instance of ``sem``, their ``laddr`` inside a host memory
    (returned): ``(items, memory layout)``; every ``bad_reads``-th in the memory's error window
    (its reads fail, MR-TX-124)."""
    return _place(sched_traffic(sem, n, seed=seed, bad=bad, max_len=max_len), seed, bad_reads)


def responses(sem: TxSchedModel, n, mem_layout, *, seed=0, err=0.2, max_len=None):
    """MR-TX-171: ``n`` READ responses for ``s_rsp`` (the scheduler's
    :func:`~metaroce.models.tx_sched_cases.responses`), their bytes inside the host memory's
    good window (the engine reads them from ``laddr + offset``)."""
    rs = sched_responses(sem, n, seed=seed, err=err, max_len=max_len)
    rng = random.Random(seed + 77)
    if isinstance(mem_layout, SparseLayout):
        # MR-TX-457: each response's bytes at an address anywhere in the 64-bit space;
        # MR-TX-462: the requester's stream any of MRDH's 16 bits (keys kept distinct)
        keys = set()
        for r in rs:
            r["laddr"] = mem_layout.address(rng, r["length"])
            while (r["conn"], r["stream"], r["msg"]) in keys or r["stream"] < 2:
                r["stream"] = rng.randrange(1 << 16)
            keys.add((r["conn"], r["stream"], r["msg"]))
        return rs
    for r in rs:
        r["length"] = min(r["length"], mem_layout.size)
        r["laddr"] = mem_layout.base + rng.randrange(mem_layout.size - r["length"] + 1)
    return rs


def wr_status(sem: TxSchedModel, w, mem_layout, dead=()):
    """MR-TX-150: the status a work request completes with: the scheduler's refusal
    (MR-TXS-011); LOC_PROT_ERR when its payload reads fail (MR-TX-124); RETRY_EXC_ERR on a
    connection whose every frame is lost (``dead``: the retry limit's error, MR-TX-125); else
    0 (as the reference endpoint's ``Status``). A READ request reads no payload (MR-TX-161), nor
    does an atomic (its payload is its operands, MR-TX-191)."""
    st = sem.wr_status(w)
    if st:
        return st
    if msg_len(w["op"], w["length"]) and not is_atomic(w["op"]) and mem_layout.in_bad(w["laddr"]):
        return STATUS_LOC_PROT_ERR
    return STATUS_RETRY_EXC_ERR if w["conn"] in dead else STATUS_OK


def _offer_template(drv, inp):
    """MR-TX-121: the templates first, one write at a time with idle cycles (``drv.tmpls``,
    ``ci`` the next, ``cfg_offer`` the one offered); True while some are left."""
    if drv.ci >= len(drv.tmpls):
        return False
    if drv.cfg_offer is None and drv.rng.random() >= drv.p_idle:
        drv.cfg_offer = drv.tmpls[drv.ci]
    if drv.cfg_offer is not None:
        inp["s_cfg__valid"] = 1
        inp["s_cfg__payload"] = pack(drv.lay.cfg, drv.cfg_offer)
    return True


def _template_taken(drv, out):
    if drv.cfg_offer is not None and out["s_cfg__ready"]:
        drv.cfg_offer = None
        drv.ci += 1


class _Rx(dict):
    """(conn, path) -> the receiver's [cum, sack], a path's first at its initial PSN (MR-TX-475)."""

    def __init__(self, init):
        super().__init__()
        self.init = init

    def __missing__(self, key):
        v = self[key] = [self.init.get(key, 0), 0]
        return v


def psn_writes(init_psns):
    """MR-TX-469: the ``s_psn`` writes of ``{(conn, path): initial PSN}``."""
    return [{"conn": c, "path": p, "psn": v} for (c, p), v in sorted(init_psns.items())]


def near_wrap(conns, paths, seed, below=(1, 6)):
    """MR-TX-475: every path's initial PSN a few packets below 2^24 (``below``: how many, drawn
    per path), so that a run crosses the wrap on each."""
    rng = random.Random(seed ^ 0x1B5)
    return {(c, p): P.PSN_MOD - rng.randrange(*below) for c in range(conns) for p in range(paths)}


class Driver(CounterReadout):
    """Sources for ``s_cfg``, ``s_wr`` and ``s_ack``, sinks for ``m_axis``, ``m_cqe`` and
    ``m_error``, the host memory and the lossy receiver, all from one seed (module docstring)."""

    #: quiet cycles (nothing moving, work open) before the driver ACKs every path, then moves
    #: ``now`` on past the retransmit unit's timers
    QUIET = 60
    #: the clock's jump then (ns): past a retransmit timer at its first RTO (MR-REL-006)
    jump_ns = 2 * 40_000

    def __init__(self, lay, width, items, mem_layout, tmpls, *, seed=0, p_idle=0.2, p_bp=0.3,
                 loss=0.1, p_ack=0.3, p_axi=0.3, latency=(1, 40), ns_per_cycle=4, image=None,
                 acks=True, expect_frames=None, dead=(), counters=False, cw_setups=(), cc=None,
                 ce_paths=(), ack_delay=0, rsps=(), down=None, init_psns=None, late_psn=False):
        self.lay, self.nb = lay, width // 8
        # MR-TX-469/475: {(conn, path): initial PSN}, written on s_psn before anything else
        # (the receiver's paths start there too)
        self.init_psns = dict(init_psns or {})
        self.psn_w, self.psn_i = psn_writes(self.init_psns), 0
        # MR-TX-470/476: with ``late_psn``, after the first frame one more write per connection
        # (path 0, PSN 0x5A5A5A): each is ignored (its connection has started)
        self.late_psn = late_psn
        # MR-TX-171: READ responses on s_rsp and m_rsp_done's backpressure, from a generator
        # of their own (the other draws are those of a run without responses)
        self.rsps, self.rsp_i, self.rsp_offer = list(rsps), 0, None
        self.rsp_rng = random.Random(seed ^ 0x8E5D)
        self.rng = random.Random(seed)
        self.items = list(items)
        self.tmpls = list(tmpls)
        self.p_idle, self.p_bp, self.loss, self.p_ack = p_idle, p_bp, loss, p_ack
        self.acks = acks
        self.dead = frozenset(dead)             # connections whose every frame is lost
        self.expect_frames = expect_frames      # MR-TX-152 (a): done after this many frames
        self.now, self.ns_per_cycle = 0, ns_per_cycle
        # MR-TX-457: a sparse layout brings its own memory (every address's bytes)
        self.mem = getattr(mem_layout, "memory_class", HostMemory)(
            mem_layout, width, random.Random(seed + 1), p_bp=p_axi, p_gap=p_axi, latency=latency,
            image=image)
        self.i = self.ci = 0
        self.presenting = self.cfg_offer = self.ack_offer = None
        self.cycle = 0
        self.n_counters = 16 if counters else 0         # MR-TX-040, MR-TX-126: every address
        self.read_counters = counters
        self.quiet_cycles = 3
        self.limit = 40_000 + 3_000 * (len(self.items) + len(self.rsps))
        self._readout_reset()
        self.qp_conn = {t["dest_qp"]: t["conn"] for t in self.tmpls}
        # MR-TX-105..107: the windows' setup writes, offered before the templates, each as
        # soon as the last is taken; the configuration (``cc``: cc_on, cc_beta_q, cc_cap);
        # the paths {(conn, path)} whose every ACK echoes ECE with a CE count of 255
        self.cw_setups, self.cw_i = list(cw_setups), 0
        self.cc = dict(cc or {})
        self.ce_paths = frozenset(ce_paths)
        # MR-TX-259: {(conn, path): (first cycle, last cycle)}: the path's route down then, its
        # frames and their ACKs lost
        self.down = dict(down or {})
        # MR-TX-107: each ACK offered ``ack_delay`` cycles after its frame (a path's packets
        # in flight then follow its window)
        self.ack_delay, self.ack_later = ack_delay, deque()
        self.rx = _Rx(self.init_psns)                  # (conn, path) -> receiver cum, sack
        self.ack_q = deque()
        self.beats = []
        self.silent = 0
        self.flushed = False
        self.res = {"frames": [], "raw": [], "cqe": [], "errors": [], "cycles": 0, "lost": 0,
                    "acks": 0, "timeouts": 0, "counters": None, "taken": [], "ack_taken": [],
                    "bad_frames": [], "emitted": [], "rsp_done": []}

    @property
    def sent_all(self):
        if self.expect_frames is not None:
            return self.i >= len(self.items) and len(self.res["frames"]) >= self.expect_frames
        return (self.i >= len(self.items) and self.presenting is None
                and len(self.res["cqe"]) == len(self.items)
                and len(self.res["rsp_done"]) == len(self.rsps))

    def is_down(self, conn, path):
        """MR-TX-259: the path's route is down in this cycle."""
        span = self.down.get((conn, path))
        return span is not None and span[0] <= self.cycle <= span[1]

    def _ack(self, conn, path):
        if self.is_down(conn, path):
            return
        cum, sack = self.rx[(conn, path)]
        ce = (conn, path) in self.ce_paths
        q = self.ack_q
        if self.ack_delay:
            q = self.ack_later
            q.append(self.cycle + self.ack_delay)
        q.append({"nak": 0, "conn": conn, "path": path, "psn": 0, "reason": 0, "cum": cum,
                           "sack": sack, "ce_count": 255 if ce else 0, "ece": int(ce), "sport": 0})

    def inputs(self):
        rng = self.rng
        inp = {"s_wr__valid": 0, "s_wr__payload": 0, "s_ack__valid": 0, "s_ack__payload": 0,
               "s_cfg__valid": 0, "s_cfg__payload": 0, "now": self.now, "reg_addr": 0,
               "m_axis__tready": 1, "m_cqe__ready": 1, "m_error__ready": 1,
               "s_cw_setup__valid": 0, "s_cw_setup__payload": 0, "s_rsp__valid": 0,
               "s_rsp__payload": 0, "m_rsp_done__ready": 1, "s_psn__valid": 0, "s_psn__payload": 0}
        self.mem.inputs(inp, self.cycle)
        inp.update(self.cc)
        if self._phase:
            inp["reg_addr"] = self._readout_addr()
            return inp
        if self.psn_i < len(self.psn_w):
            # MR-TX-469: the initial PSNs first
            inp["s_psn__valid"] = 1
            inp["s_psn__payload"] = pack(self.lay.sched.psn, self.psn_w[self.psn_i])
            if not self.late_psn or not self.res["frames"]:
                return inp
        if self.cw_i < len(self.cw_setups):
            inp["s_cw_setup__valid"] = 1
            inp["s_cw_setup__payload"] = pack(self.lay.cw.setup, self.cw_setups[self.cw_i])
            return inp
        if not _offer_template(self, inp) and self.presenting is None and self.i < len(self.items) and rng.random() >= self.p_idle:
            self.presenting = self.items[self.i]
        if self.presenting is not None:
            inp["s_wr__valid"] = 1
            inp["s_wr__payload"] = pack(self.lay.sched.wr, self.presenting)
        while self.ack_later and self.ack_later[0] <= self.cycle:
            self.ack_later.popleft()
            self.ack_q.append(self.ack_later.popleft())
        if self.ack_offer is None and self.ack_q and rng.random() >= self.p_idle:
            self.ack_offer = self.ack_q.popleft()
        if self.ack_offer is not None:
            inp["s_ack__valid"] = 1
            inp["s_ack__payload"] = pack(self.lay.rtx.ack, self.ack_offer)
        for name in ("m_axis__tready", "m_cqe__ready", "m_error__ready"):
            inp[name] = int(rng.random() >= self.p_bp)
        rr = self.rsp_rng
        if self.rsps and self.ci >= len(self.tmpls):
            if self.rsp_offer is None and self.rsp_i < len(self.rsps) and rr.random() >= 0.7:
                self.rsp_offer = self.rsps[self.rsp_i]
            if self.rsp_offer is not None:
                inp["s_rsp__valid"] = 1
                inp["s_rsp__payload"] = pack(self.lay.sched.rsp, self.rsp_offer)
            inp["m_rsp_done__ready"] = int(rr.random() >= self.p_bp)
        return inp

    def _frame(self, raw, tuser=0):
        res = self.res
        f = codec.decode(raw)
        res["emitted"].append((f, tuser))
        if tuser:
            # MR-TX-124: marked bad towards the MAC, which drops it (the peer never sees it)
            res["bad_frames"].append(f)
            return
        res["raw"].append(raw)
        res["frames"].append(f)
        res.setdefault("frame_cycles", []).append(self.cycle)
        if not self.acks or f.mrdh is None:
            return
        conn, path = self.qp_conn[f.bth.dest_qp], f.mrdh.path
        key = (conn, path)
        if conn not in self.dead and self.rng.random() >= self.loss and not self.is_down(conn, path):
            cum, sack = self.rx[key]
            if P.rx_classify(cum, sack, f.bth.psn) == P.RX_NEW:
                self.rx[key][0], self.rx[key][1], _ = P.rx_accept(cum, sack, f.bth.psn)
        else:
            res["lost"] += 1
        if f.bth.ack_req or self.rng.random() < self.p_ack:
            self._ack(conn, path)

    def observe(self, inp, out):
        self.mem.observe(inp, out, self.cycle)
        self.now = (self.now + self.ns_per_cycle) & P.TIME_MASK
        if self._readout_observe(out):
            return
        res = self.res
        if inp.get("s_psn__valid"):
            # MR-TX-469/500: the register scheduler's s_psn is always ready, the rows' when
            # their register is free or taken: a write is held until taken (counted)
            self.psn_i += int(bool(out["s_psn__ready"]))
            res["psn_waits"] = res.get("psn_waits", 0) + int(not out["s_psn__ready"])
        # MR-TX-470: the writes ignored (a cycle after each)
        res["psn_ignored"] = res.get("psn_ignored", 0) + int(bool(out.get("psn_ignored")))
        if self.late_psn and res["frames"] and self.psn_i == len(self.psn_w):
            self.psn_w += [{"conn": c, "path": 0, "psn": 0x5A5A5A} for c in range(self.lay.conns)]
            self.late_psn = False
        if self.cw_i < len(self.cw_setups):
            self.cw_i += int(bool(inp.get("s_cw_setup__valid") and out["s_cw_setup__ready"]))
        _template_taken(self, out)
        if self.presenting is not None and out["s_wr__ready"]:
            self.presenting = None
            self.i += 1
            res["taken"].append(self.cycle)
        if self.ack_offer is not None and out["s_ack__ready"]:
            res["acks"] += 1
            res["ack_taken"].append(self.cycle)
            self.ack_offer = None
        active = False
        if out["m_axis__tvalid"] and inp["m_axis__tready"]:
            active = True
            self.beats.append((out["m_axis__tdata"], out["m_axis__tkeep"]))
            if out["m_axis__tlast"]:
                self._frame(frames_of_beats(self.beats, self.nb)[0], out["m_axis__tuser"])
                self.beats = []
        if out["m_cqe__valid"] and inp["m_cqe__ready"]:
            active = True
            res["cqe"].append(unpack(self.lay.sched.cqe, out["m_cqe__payload"]))
        if out["m_error__valid"] and inp["m_error__ready"]:
            res["errors"].append(unpack(self.lay.rtx.error, out["m_error__payload"]))
        if self.rsp_offer is not None and out.get("s_rsp__ready"):
            self.rsp_offer = None
            self.rsp_i += 1
        if out.get("m_rsp_done__valid") and inp["m_rsp_done__ready"]:
            active = True
            res["rsp_done"].append(unpack(self.lay.sched.rsp_done, out["m_rsp_done__payload"]))
        pending = self.ack_q or self.ack_later or self.ack_offer is not None or not self.mem.idle
        self.silent = 0 if active or pending else self.silent + 1
        # quiet with work requests open, or with the retransmit unit's timers still running
        # after the last completion (a lost tail PSN whose chunk was acknowledged through its
        # resend): ACK every path, then let the timers expire
        if self.acks and self.silent > self.QUIET:
            if not self.flushed:
                # every path's state, to resolve what the SACKs show lost (MR-REL-002)
                for (conn, path) in list(self.rx):
                    self._ack(conn, path)
                self.flushed = True
            else:
                # the tail losses: let the retransmit unit's timers expire (MR-REL-006)
                self.now = (self.now + self.jump_ns) & P.TIME_MASK
                res["timeouts"] += 1
                self.flushed = False
            self.silent = 0
        if active:
            self.flushed = False
        self.cycle += 1

    def _stuck(self):
        return (f"(work request {self.i} of {len(self.items)}, {len(self.res['cqe'])} completions, "
                f"{len(self.res['frames'])} frames)")


def wrap_summary(drv):
    """MR-TX-475: a run's frames past the 24-bit wrap (PSN below 2^10 on a path that started
    near 2^24), those with RETX among them, the paths that crossed, the ignored writes."""
    past = [f for f in drv.res["frames"] if f.mrdh is not None and f.bth.psn < 1024]
    starts = drv.init_psns
    crossed = {(drv.qp_conn[f.bth.dest_qp], f.mrdh.path) for f in past}
    return {"wrap_frames": len(past),
            "wrap_resends": sum(1 for f in past if f.mrdh.flags & MrdhFlag.RETX),
            "wrap_paths": len({k for k in crossed if starts.get(k, 0) >= P.PSN_MOD - 1024}),
            "psn_ignored": drv.res.get("psn_ignored", 0)}


def frames_of_beats(beats, nb):
    """The frames' bytes from ``(tdata, tkeep)`` beats (MR-TXF-044: ``tkeep`` a run from lane 0)."""
    out, cur = [], bytearray()
    for data_, keep in beats:
        n = bin(keep).count("1")
        cur += data_.to_bytes(nb, "little")[:n]
    out.append(bytes(cur))
    return out


def run_model(model, items, mem_layout, tmpls, *, seed=0, **kw):
    """:class:`~metaroce.models.tx.TxCycleModel` alone through the driver; the driver's results."""
    drv = Driver(model.lay, model.width, items, mem_layout, tmpls, seed=seed, **kw)
    run_alone(model, drv)
    return drv


def check(sem: TxSchedModel, items, drv, rsps=()):
    """MR-TX-150: every work request completes once with its status (:func:`wr_status`), the
    queued ones in posting order per stream; every frame not marked bad decodes (IPv4 checksum
    and ICRC good), carries its connection's template and its work request's fields, and its
    payload is the host memory's bytes at ``laddr + offset``; the frames marked bad are those of
    the failing reads; PSNs run 0, 1, ... per path, but a tail probe's, which re-sends its
    path's newest packet as it was with AckReq and RETX (MR-TX-179); every chunk of every message that completes
    with status 0 is sent. A connection that is not ``dead`` may still reach a path's retry
    limit when the random losses take a path's packets across its timeouts: a work request of a
    connection whose retry limit's error left on ``m_error`` may complete RETRY_EXC_ERR
    (MR-TX-125) instead of its status."""
    res = drv.res
    mtu = sem.mtu
    mem_lay = drv.mem.lay
    by_id = {w["wr_id"]: w for w in items}
    assert len(res["cqe"]) == len(items), "one completion per work request"
    assert sorted(c["wr_id"] for c in res["cqe"]) == sorted(by_id), "each work request completes once"
    order, posted = defaultdict(list), defaultdict(list)
    failed = {e["conn"] for e in res["errors"] if e["status"] == STATUS_RETRY_EXC_ERR}
    status = {}
    for c in res["cqe"]:
        w = by_id[c["wr_id"]]
        want = wr_status(sem, w, mem_lay, drv.dead)
        status[c["wr_id"]] = c["status"]
        assert c["status"] == want or (w["conn"] in failed and c["status"] == STATUS_RETRY_EXC_ERR), \
            f"work request {c['wr_id']}: status {c['status']}, want {want}"
        if not sem.wr_status(w):
            order[(w["conn"], w["stream"])].append(c["wr_id"])
    for w in items:
        if not sem.wr_status(w):
            posted[(w["conn"], w["stream"])].append(w["wr_id"])
    assert dict(order) == dict(posted), "completions in posting order per stream (MR-EXO-004)"
    msg_of = {(k[0], k[1], n): by_id[wid] for k, ids in posted.items() for n, wid in enumerate(ids)}
    rseq = recv_seqs(items, sem)
    tm = {t["dest_qp"]: t for t in drv.tmpls}
    # MR-TX-475: each path's PSNs from its initial PSN (0 unless written), modulo 2^24
    init = getattr(drv, "init_psns", {})
    next_psn = {}
    first = {}                          # (conn, path) -> its newest frame (a probe's packet)
    probes = 0
    chunks = defaultdict(set)
    retx = 0
    # MR-TX-171..173: the READ responses: one m_rsp_done record each, their frames' fields and
    # the host memory's bytes at laddr + offset
    rsp_of = {(r["conn"], r["stream"], r["msg"]): r for r in rsps}
    assert sorted((d["conn"], d["stream"], d["msg"]) for d in res["rsp_done"]) == sorted(rsp_of)
    assert all(d["status"] == STATUS_OK for d in res["rsp_done"])
    rsp_chunks = defaultdict(set)
    gen_seen = defaultdict(int)
    # a frame marked bad: a failing read's (MR-TX-124); its PSN is taken all the same
    for f in res["bad_frames"]:
        w = msg_of[(tm[f.bth.dest_qp]["conn"], f.mrdh.stream, f.mrdh.msg)]
        assert wr_status(sem, w, mem_lay) == STATUS_LOC_PROT_ERR, "only failing reads are marked bad"
    for f, bad in res["emitted"]:
        t = tm[f.bth.dest_qp]
        conn, path = t["conn"], f.mrdh.path
        assert f.ip.src == _ip(t["ip_src"]) and f.ip.dst == _ip(t["ip_dst"])
        assert f.eth.dst == _mac(t["eth_dst"]) and f.eth.src == _mac(t["eth_src"])
        # MR-TXS-121: the path's port after its new routes, generations never going back
        # (a frame decided before a verdict leaves before those decided after it)
        gens = {P.entropy_next((t["sport"] >> 16 * path) & 0xFFFF, g): g for g in range(16)}
        assert f.udp.sport in gens and gens[f.udp.sport] >= gen_seen[(conn, path)]
        gen_seen[(conn, path)] = gens[f.udp.sport]
        assert f.bth.pkey == t["pkey"]
        assert (f.ip.dscp, f.ip.ecn, f.ip.ttl) == (t["ip_dscp"], t["ip_ecn"], t["ip_ttl"])
        if f.bth.psn != next_psn.get((conn, path), init.get((conn, path), 0)):
            # MR-TX-179, MR-TXS-080: a tail probe re-sends its path's newest packet as it was,
            # with AckReq and RETX set (no new PSN)
            f0, bad0 = first[(conn, path)]
            assert f.bth.psn == f0.bth.psn, "PSNs in order per path (MR-SEQ-001), or a probe"
            assert f.bth.ack_req == 1 and f.mrdh.flags == f0.mrdh.flags | MrdhFlag.RETX
            assert ((f.bth.opcode, f.mrdh.stream, f.mrdh.msg, f.mrdh.offset, f.mrdh.msg_len,
                     f.reth, f.mrsh, f.imm, len(f.payload))
                    == (f0.bth.opcode, f0.mrdh.stream, f0.mrdh.msg, f0.mrdh.offset,
                        f0.mrdh.msg_len, f0.reth, f0.mrsh, f0.imm, len(f0.payload))), "the probe's packet"
            # MR-TX-452: the same bytes read again: the same outcome; a failed read's bytes
            # (the frame marked bad, MR-TX-124) are the memory's error data, not compared
            assert bad == bad0, "a probe's read fails as its packet's did"
            assert bad or f.payload == f0.payload, "the probe's payload"
            probes += 1
            continue
        next_psn[(conn, path)] = P.psn_add(f.bth.psn, 1)
        first[(conn, path)] = (f, bad)
        if bad:
            continue
        if f.bth.opcode == Op.MR_READ_RESP:
            r = rsp_of[(conn, f.mrdh.stream, f.mrdh.msg)]
            ml, off = 0 if r["err"] else r["length"], f.mrdh.offset
            want = ((MrdhFlag.FIRST if off == 0 else 0) | (MrdhFlag.ERROR if r["err"] else 0)
                    | (MrdhFlag.LAST if off + len(f.payload) >= ml else 0))
            assert (f.reth, f.mrsh, f.imm, f.mrdh.msg_len) == (None, None, None, ml)
            assert f.mrdh.flags & ~MrdhFlag.RETX == want, "response flags (MR-TXS-068)"
            assert len(f.payload) == P.chunk_bytes(ml, off // mtu, mtu)
            assert f.payload == drv.mem.read(r["laddr"] + off, len(f.payload)), "response bytes"
            rsp_chunks[(conn, f.mrdh.stream, f.mrdh.msg)].add(off // mtu)
            retx += bool(f.mrdh.flags & MrdhFlag.RETX)
            continue
        w = msg_of[(conn, f.mrdh.stream, f.mrdh.msg)]
        off = f.mrdh.offset
        # MR-TX-155: the opcode 0xC0 + op; a send's MRSH (its rank among its stream's good
        # sends) and no RETH, a write's RETH; the immediate of an _IMM opcode on every packet;
        # MR-TX-161: a READ request MR_READ, its RETH, message length 0, no payload
        assert f.bth.opcode == wire_op(w["op"])
        ml = msg_len(w["op"], w["length"])
        if is_send(w["op"]):
            assert f.reth is None and f.mrsh.recv_seq == rseq[w["wr_id"]], "MRSH (MR-TXS-058)"
            assert f.mrdh.msg_len == w["length"]
        else:
            assert f.mrsh is None and (f.reth.va, f.reth.rkey, f.reth.dma_len, f.mrdh.msg_len) == (
                w["va"], w["rkey"], w["length"], ml)
        assert not (is_read(w["op"]) or is_atomic(w["op"])) or (off, f.mrdh.flags & ~MrdhFlag.RETX) == (
            0, MrdhFlag.FIRST | MrdhFlag.LAST)
        assert f.imm == (w["imm"] if has_imm(w["op"]) else None)
        assert len(f.payload) == P.chunk_bytes(ml, off // mtu, mtu)
        if is_atomic(w["op"]):
            # MR-TX-191: an atomic's payload is its operands, in network order
            assert f.payload == atomic_operands(w["op"], w["swap"], w["compare"]), "operands"
        else:
            assert f.payload == drv.mem.read(w["laddr"] + off, len(f.payload)), "payload from host memory"
        chunks[(conn, f.mrdh.stream, f.mrdh.msg)].add(off // mtu)
        retx += bool(f.mrdh.flags & MrdhFlag.RETX)
    for k, w in msg_of.items():
        if status[w["wr_id"]] == STATUS_OK:
            assert chunks[k] == set(range(P.chunk_count(msg_len(w["op"], w["length"]), mtu))), \
                f"every chunk of {w['wr_id']}"
    for k, r in rsp_of.items():
        assert rsp_chunks[k] == set(range(P.chunk_count(0 if r["err"] else r["length"], mtu)))
    return {"retransmits": retx, "frames": len(res["frames"]), "responses": len(rsps),
            "probes": probes, "new_routes": sum(1 for g in gen_seen.values() if g)}


def check_counters(drv, probes=0):
    """MR-TX-040, MR-TX-126: the counters read at the end (``Driver(counters=True)``) against
    what the driver saw: frames, frames marked bad, resends, completions, error completions;
    the retransmit unit's ``sent`` is the frames' count less the tail probes' (``probes``)."""
    from .retransmit import CTR
    from .tx import TX_CTR, TX_CTR_BASE
    res = drv.res
    got = {n: res["counters"][TX_CTR_BASE + i] for n, i in TX_CTR.items()}
    want = {"frames": len(res["emitted"]), "frames_bad": len(res["bad_frames"]),
            "resends": sum(1 for f, _ in res["emitted"] if f.mrdh.flags & MrdhFlag.RETX),
            "completions": len(res["cqe"]),
            "completions_err": sum(1 for c in res["cqe"] if c["status"])}
    assert got == want, f"counters {got}, want {want}"
    # MR-TX-181: a tail probe's frame is no packet the scheduler reports sent (``probes``:
    # check()'s count of them)
    assert res["counters"][CTR["sent"]] == want["frames"] - probes
    return got


def _ip(v):
    import ipaddress
    return str(ipaddress.IPv4Address(v))


def _mac(v):
    return ":".join(f"{b:02x}" for b in v.to_bytes(6, "big"))


# ------------------------------------------------------------------ the reference endpoint

def endpoint_template(a, ca, conn, paths):
    """MR-TX-152: the template of the endpoint connection ``ca`` of endpoint ``a``: its frames'
    Ethernet addresses (codec defaults), IPv4 addresses, peer QP, P_Key and path entropies."""
    f = codec.Eth()
    ip = codec.IP()
    return template_of(conn, eth_dst=f.dst, eth_src=f.src, ip_src=a.addr, ip_dst=ca.peer_addr,
                       sports=[p.entropy for p in ca.paths][:paths], pkey=ca.pkey,
                       dest_qp=ca.peer_id, ip_dscp=ip.dscp, ip_ecn=2, ip_ttl=ip.ttl)


def endpoint_frames(seed=0, *, streams=2, depth=4, paths=4, conn=1, conns=2, **ep_kw):
    """MR-TX-152 (a), MR-TXS-051 (a): the endpoint's writes drawn until it blocks (no ACK).
    Returns ``(expected frame bytes, work requests, memory layout, image, templates, scheduler
    parameters)`` for driving the engine on the same writes."""
    from .endpoint import Frame
    from .tx_sched_cases import endpoint_writes, post_msg
    w = endpoint_writes(seed, paths=paths, streams=streams, depth=depth, conn=conn, conns=conns,
                        **ep_kw)
    a, ca, msgs, src, sem = w.a, w.ca, w.msgs, w.src, w.sem
    lay = Layout(sum(m[1] for m in msgs) + 4096)
    items, off = [], 0
    for k, m in enumerate(msgs):
        items.append(post_msg(w, conn, k, m, off, laddr=lay.base + off))     # MR-TX-155
        off += m[1]
    want, t = [], 0.0
    while isinstance(f := a.next_packet(t), Frame):
        want.append(codec.encode(f))
        t += 1e-9
    tm = [template_of(c, eth_dst=0, eth_src=0, ip_src=0, ip_dst=0, sports=[0] * paths)
          for c in range(conns)]
    tm[conn] = endpoint_template(a, ca, conn, paths)
    params = dict(conns=conns, streams=streams, paths=paths, depth=depth,
                  chunk_window=sem.chunk_window, mtu=sem.mtu, cwnd=sem.cwnd,
                  conn_window=sem.conn_window, path_pkts=sem.path_pkts, ack_every=sem.ack_every,
                  resend_depth=sem.resend_depth)
    return want, items, lay, bytes(src), tm, params


def endpoint_lossy(seed, *, conns=2, atomics=0.0):
    """MR-TX-152 (b), MR-TXS-051 (b): the endpoint's writes over the lossy loopback (as
    tests/test_tx_sched_model.py's, windows that do not bind); the scheduler's semantics, with
    the retransmit unit's between them on the ACKs the endpoint processed, give the endpoint's
    frame requests frame by frame, resends included (``endpoint_compare`` asserts each). Returns
    ``(frame requests with laddr in the host memory, the endpoint's frame bytes, templates,
    memory layout, image)``."""
    from .tx_sched_cases import endpoint_compare
    rng = random.Random(seed)
    # MR-TX-155: writes and sends mixed (the kind from a generator of its own)
    kind = kind_rng(seed)
    rd = read_rng(seed)             # MR-TX-161: and READs
    msgs = [(s, rng.randrange(30_000, 60_000), rng.choice([None, 7]), kind.random() < 0.5)
            for s in range(2) for _ in range(4)]
    msgs = [(s, n, None, "read") if rd.random() < 0.25 else (s, n, i, k) for s, n, i, k in msgs]
    if atomics:
        # MR-TX-193: and atomics (from a generator of their own)
        at = atomic_rng(seed)
        msgs = [(m[0], ATOMIC_LEN, None, at.choice(("cas", "fadd"))) if at.random() < atomics
                else m for m in msgs]
    r = endpoint_compare(seed, msgs=msgs, loopback=True, loss=0.05, drop_until=40e-6,
                         init_window_bdp=100.0, max_window_bdp=100.0)
    return _data_inputs(r, r["src"], conns)


def endpoint_probes(seed, *, paths=2, conns=2):
    """MR-TX-180, MR-TXS-093: the endpoint's writes and sends over a loopback losing data
    frames and ACKs (:func:`~metaroce.models.tx_sched_cases.endpoint_probes`, which asserts the
    scheduler's frame requests field by field, tail probes included); the data path's inputs
    as :func:`endpoint_lossy`'s."""
    from .tx_sched_cases import endpoint_probes as compare
    r = compare(seed, paths=paths)
    return _data_inputs(r, r["src"], conns)


def _data_inputs(r, image, conns):
    """A comparison ``r``'s frame requests for the data path (``laddr`` in a host memory
    holding ``image``), the endpoint's frame bytes, the templates (the endpoint connection's
    at its index), the memory layout and ``image``."""
    ep, c = r["endpoint"]
    lay = Layout(len(image) + 4096)
    reqs = [dict(q, laddr=lay.base + q["laddr"]) for q in r["requests"]]
    tm = [template_of(k, eth_dst=0, eth_src=0, ip_src=0, ip_dst=0, sports=[0] * r["paths"])
          for k in range(conns)]
    conn = reqs[0]["conn"]
    tm[conn] = endpoint_template(ep, c, conn, r["paths"])
    return reqs, [codec.encode(f) for f in r["endpoint_frames"]], tm, lay, image


def endpoint_responses(seed, *, conns=2, **kw):
    """MR-TX-172, MR-TXS-071: the endpoint as the responder of a peer's READs over the loopback
    (:func:`~metaroce.models.tx_sched_cases.endpoint_responses`, which asserts the scheduler's
    frame requests field by field); its response frames and the frame requests with ``laddr``
    in a host memory holding the responder's region. Returns ``(frame requests, the endpoint's
    frame bytes, templates, memory layout, image, the comparison's result)``."""
    from .tx_sched_cases import endpoint_responses as compare
    r = compare(seed, conns=conns, **kw)
    return (*_data_inputs(r, r["region"], conns), r)


def data_requests(lay, n, mem_layout, *, seed=0, max_len=2000, bad_every=0, atomics=0.0):
    """``n`` random frame requests for the data path (MR-TX-151): every connection and path,
    WRITE, WRITE_IMM, SEND and SEND_IMM (MR-TX-155; the kind from a generator of its own),
    payloads 0..``max_len`` bytes anywhere in the host memory (any alignment); laddr + offset is
    the payload's address; every ``bad_every``-th in the host memory's error window
    (MR-TX-124); a share ``atomics`` MR_CMP_SWAP or MR_FETCH_ADD with random operands, their
    payload the operands (MR-TX-191/192; from a generator of its own); half of them with a path
    entropy generation 1..15 (MR-TXS-121: the join stage's UDP source port
    ``protocol.entropy_next``; from a generator of its own)."""
    rng = random.Random(seed)
    kind = kind_rng(seed)
    at = random.Random(seed ^ 0xA70C)
    gr = random.Random(seed ^ 0x6E7)
    out = []
    for i in range(n):
        ln = rng.choice([0, 1, 7, 8, 9, rng.randrange(max_len + 1), rng.randrange(max_len + 1)])
        bad = bool(bad_every) and i % bad_every == bad_every - 1
        addr = (mem_layout.bad_base if bad else mem_layout.base) + rng.randrange(mem_layout.size - ln + 1)
        off = rng.choice([rng.randrange(1 << 20), rng.randrange(1 << 32)])     # carries into laddr[32:]
        op = rng.choice([int(Op.MR_WRITE), int(Op.MR_WRITE_IMM)])
        send = kind.random() < 0.5          # MR-TX-155: MR_SEND / MR_SEND_IMM
        out.append({"conn": rng.randrange(lay.conns), "laddr": (addr - off) % (1 << 64),
                    "bth_opcode": op, "bth_ack_req": rng.randrange(2),
                    "bth_psn": rng.randrange(1 << 24), "mrdh_flags": rng.randrange(16),
                    "mrdh_path": rng.randrange(lay.paths), "mrdh_stream": rng.randrange(1 << 16),
                    "mrdh_msg": rng.randrange(1 << 32), "mrdh_offset": off,
                    "mrdh_msg_len": rng.randrange(1 << 32), "reth_va": rng.randrange(1 << 64),
                    "reth_rkey": rng.randrange(1 << 32), "reth_dma_len": rng.randrange(1 << 32),
                    "imm_imm": rng.randrange(1 << 32) if op == Op.MR_WRITE_IMM else 0,
                    "mrsh_recv_seq": 0, "payload_len": ln})
        out[-1]["slot"] = out[-1]["mrdh_msg"] % (lay.sched.streams * lay.sched.depth)     # MR-TXS-069
        out[-1]["lap"] = out[-1]["mrdh_msg"] // (lay.sched.streams * lay.sched.depth) & 1  # MR-TX-451
        out[-1]["gen"] = gr.randrange(1, 16) if gr.random() < 0.5 else 0                 # MR-TXS-121
        if send:
            out[-1].update(bth_opcode=op + 2, mrsh_recv_seq=kind.getrandbits(32))
        if at.random() < atomics:
            cas = at.random() < 0.5
            out[-1].update(bth_opcode=int(Op.MR_CMP_SWAP if cas else Op.MR_FETCH_ADD),
                           payload_len=16 if cas else 8, mrdh_msg_len=16 if cas else 8,
                           reth_dma_len=8, imm_imm=0, mrsh_recv_seq=0,
                           swap=at.getrandbits(64), compare=at.getrandbits(64) if cas else 0)
    return out


def expected_data_frames(reqs, tmpls, mem, paths):
    """MR-TX-151: each request's frame: the frame builder's bytes (codec.encode) of the join
    stage's descriptor, the payload read from the host memory at laddr + offset; a frame whose
    read fails (MR-TX-124) is None (its payload is whatever the bus gave)."""
    from .frame_builder import DESC_LAYOUT, builder_bytes
    from .tx import cmd_of, desc_of, is_atomic_frame
    by_conn = {t["conn"]: t for t in tmpls}
    out = []
    for fr in reqs:
        d = unpack(DESC_LAYOUT, pack(DESC_LAYOUT, desc_of(fr, by_conn[fr["conn"]], paths)))
        c = cmd_of(fr)
        if is_atomic_frame(fr):
            # MR-TX-191: the operands are the payload, no read
            out.append(builder_bytes(d, atomic_operands(
                OP_CMP_SWAP if fr["bth_opcode"] == Op.MR_CMP_SWAP else OP_FETCH_ADD,
                fr["swap"], fr["compare"])))
            continue
        out.append(None if read_fails(mem.lay, c) else builder_bytes(d, mem.read(c["addr"], c["length"])))
    return out


def read_fails(mem_layout, cmd):
    """MR-TX-124: a read command of the host memory's error window (and some payload) fails."""
    return cmd["length"] > 0 and mem_layout.in_bad(cmd["addr"])


def expected_data_errors(reqs, mem_layout, streams, depth):
    """MR-TX-124: per frame its ``tuser`` bit, and the ``m_fail`` reports in order."""
    from .tx import cmd_of, slot_of
    from .tx_sched import STATUS_LOC_PROT_ERR
    bad = [read_fails(mem_layout, cmd_of(fr)) for fr in reqs]
    fails = [{"conn": fr["conn"], "slot": slot_of(fr, streams, depth), "status": STATUS_LOC_PROT_ERR,
              "lap": fr.get("lap", 0)}                          # MR-TX-451: the request's lap
             for fr, b in zip(reqs, bad) if b]
    return [int(b) for b in bad], fails


class DataDriver(CounterReadout):
    """The data path's driver (MR-TX-151): template writes first, then the frame requests on
    ``s_frame`` with idle cycles; random backpressure on ``m_axis``; the host memory on
    ``m_axi`` (random ``arready``, R latency and gaps). Collects the frames' bytes."""

    def __init__(self, lay, width, reqs, mem_layout, tmpls, *, seed=0, p_idle=0.2, p_bp=0.3,
                 p_axi=0.3, latency=(1, 40), image=None):
        self.lay, self.nb = lay, width // 8
        self.rng = random.Random(seed)
        self.reqs, self.tmpls = list(reqs), list(tmpls)
        self.p_idle, self.p_bp = p_idle, p_bp
        # MR-TX-457: a sparse layout brings its own memory (every address's bytes)
        self.mem = getattr(mem_layout, "memory_class", HostMemory)(
            mem_layout, width, random.Random(seed + 1), p_bp=p_axi, p_gap=p_axi, latency=latency,
            image=image)
        self.i = self.ci = 0
        self.offer = self.cfg_offer = None
        self.cycle = 0
        self.n_counters = 0
        self.read_counters = False
        self.quiet_cycles = 3
        self.limit = 20_000 + 2_000 * len(self.reqs)
        self._readout_reset()
        self.beats = []
        self.res = {"raw": [], "tuser": [], "fail": [], "cycles": 0, "counters": None}

    @property
    def sent_all(self):
        return self.i >= len(self.reqs) and len(self.res["raw"]) == len(self.reqs)

    def inputs(self):
        rng = self.rng
        inp = {"s_frame__valid": 0, "s_frame__payload": 0, "s_cfg__valid": 0, "s_cfg__payload": 0,
               "m_axis__tready": 1, "m_fail__ready": 1}
        self.mem.inputs(inp, self.cycle)
        if self._phase:
            return inp
        if not _offer_template(self, inp) and self.offer is None and self.i < len(self.reqs) and rng.random() >= self.p_idle:
            self.offer = self.reqs[self.i]
        if self.offer is not None:
            inp["s_frame__valid"] = 1
            inp["s_frame__payload"] = pack(self.lay.sched.frame, self.offer)
        inp["m_axis__tready"] = int(rng.random() >= self.p_bp)
        inp["m_fail__ready"] = int(rng.random() >= self.p_bp)
        return inp

    def observe(self, inp, out):
        self.mem.observe(inp, out, self.cycle)
        if self._readout_observe(out):
            return
        _template_taken(self, out)
        if self.offer is not None and out["s_frame__ready"]:
            self.offer = None
            self.i += 1
        if out["m_axis__tvalid"] and inp["m_axis__tready"]:
            self.beats.append((out["m_axis__tdata"], out["m_axis__tkeep"]))
            if out["m_axis__tlast"]:
                self.res["raw"].append(frames_of_beats(self.beats, self.nb)[0])
                self.res["tuser"].append(out["m_axis__tuser"])
                self.beats = []
        if out["m_fail__valid"] and inp["m_fail__ready"]:
            self.res["fail"].append(unpack(self.lay.sched.fail, out["m_fail__payload"]))
        self.cycle += 1

    def _stuck(self):
        return f"(request {self.i} of {len(self.reqs)}, {len(self.res['raw'])} frames)"


# ------------------------------------------------------------------ measurement (bench tx)

class BenchDriver(Driver):
    """``metaroce bench tx`` (MR-TX-153): no idle cycles, no backpressure, an AXI read latency
    of one cycle without gaps; ``n`` WRITE work requests of ``nbytes`` each (one packet each)
    over every connection and stream in turn, posted back to back, every frame ACKed by a lossless receiver
    (``p_ack`` 1: an ACK per frame, offered as soon as the frame's last beat is out). Records the
    cycles of every frame's first and last beat, each work request's take, each ACK's take."""

    def __init__(self, lay, width, n, nbytes, *, paths):
        from .tx_sched import OP_WRITE
        from .tx_sched_cases import wr_item
        mem = Layout(n * nbytes + 4096)
        items = [wr_item(k % lay.conns, k // lay.conns % lay.sched.streams, nbytes, wr_id=k,
                         op=OP_WRITE, laddr=mem.base + k * nbytes, va=k * nbytes, rkey=1)
                 for k in range(n)]
        super().__init__(lay, width, items, mem, templates(lay.conns, paths), seed=1, p_idle=0.0,
                         p_bp=0.0, loss=0.0, p_ack=1.0, p_axi=0.0, latency=(1, 1))
        self.first_beats, self.last_beats = [], []
        self.in_frame = False

    def observe(self, inp, out):
        if not self._phase and out["m_axis__tvalid"] and inp["m_axis__tready"]:
            if not self.in_frame:
                self.first_beats.append(self.cycle)
            self.in_frame = not out["m_axis__tlast"]
            if out["m_axis__tlast"]:
                self.last_beats.append(self.cycle)
        super().observe(inp, out)

    def row(self, width, nbytes):
        """The bench row's measured fields (MR-TX-153)."""
        # steady state: from the second frame's first beat (the first waits for its payload's
        # read latency behind its header) to the last frame's last beat
        fb, lb = self.first_beats, self.last_beats
        n = len(lb)
        beats = sum(len(r) for r in self.res["raw"])
        nb = width // 8
        nbeats = sum(-(-len(r) // nb) for r in self.res["raw"][1:])
        span = lb[-1] - fb[1] + 1 if n > 1 else 0
        n -= 1
        acks = self.res["ack_taken"]
        lat = min(f - t for f, t in zip(fb, self.res["taken"])) if n else None
        return {"packets": n + 1, "packets_per_cycle": round(n / span, 4) if span else None,
                "beats_per_cycle": round(nbeats / span, 4) if span else None,
                "frame_bytes": beats // n if n else None,
                "latency_cycles": lat,
                "acks": len(acks),
                "acks_per_cycle": round(len(acks) / (acks[-1] - acks[0] + 1), 4) if len(acks) > 1 else None}


class AckBurstDriver(BenchDriver):
    """MR-TX-153 ``acks_per_cycle``: the frames of ``n`` one-packet work requests (at most one
    ring's worth per stream, 16 in the small instance) go out without ACKs (the receiver holds
    them), then one cumulative ACK per frame is offered back to back,
    in PSN order per path: the cycles from the first ACK taken to the last."""

    def __init__(self, lay, width, n, nbytes, *, paths):
        n = min(n, lay.conns * lay.sched.streams * lay.sched.depth)
        super().__init__(lay, width, n, nbytes, paths=paths)
        self.acks = False
        self.held = []

    def _frame(self, raw, tuser=0):
        super()._frame(raw, tuser)
        f = self.res["emitted"][-1][0]
        path = f.mrdh.path
        self.held.append({"nak": 0, "conn": self.qp_conn[f.bth.dest_qp], "path": path, "psn": f.bth.psn, "reason": 0,
                          "cum": P.psn_add(f.bth.psn, 1), "sack": 0, "ce_count": 0, "ece": 0,
                          "sport": 0})
        if len(self.held) == len(self.items):
            self.ack_q.extend(self.held)


# ------------------------------------------------------------------ replay (metaroce replay tx)

class ReplayError(ValueError):
    """A replay input that cannot be used (one line, for the CLI)."""


def ack_record(f, conn):
    """MR-TX-003: the ``s_ack`` record (the RX engine's ``m_ack`` layout) of the peer's ACK frame
    ``f`` (its MRAH: path, cumulative PSN, SACK, CE count and ECE, the trigger PSN) or NAK frame
    (its MRNH: path, reason, PSN) of connection ``conn``, with the frame's UDP source port. An
    MR_NAK that carries an MRAH (``replay tx``'s files may) is read as the ACK fields."""
    a = f.mrah
    if a is not None:
        return {"nak": int(f.bth.opcode == Op.MR_NAK), "conn": conn, "path": a.path,
                "psn": a.trigger_psn & P.PSN_MASK, "reason": 0, "cum": a.cum_psn & P.PSN_MASK,
                "sack": a.sack, "ce_count": min(a.ce_count, 0xFFFF), "ece": int(a.ce_count != 0),
                "sport": f.udp.sport}
    n = f.mrnh
    return {"nak": 1, "conn": conn, "path": n.path, "psn": n.psn & P.PSN_MASK, "reason": n.reason & 0xFF,
            "cum": 0, "sack": 0, "ce_count": 0, "ece": 0, "sport": f.udp.sport}


def replay_inputs(spec, ack_frames, lay, *, paths):
    """``metaroce replay tx`` (MR-TX-154): the work-request file's object ``spec`` and the ACK
    frames' bytes into ``(items, memory layout, image, templates, ACK records)``.

    ``spec``: ``{"connections": [{"conn", "eth_dst", "eth_src", "ip_src", "ip_dst", "dest_qp",
    "pkey", "sports": [one per path], "local_qp", "dscp", "ttl"}], "work_requests": [{"conn",
    "stream", "op": "write" | "write_imm" | "send" | "send_imm" | "read" | "cmp_swap" |
    "fetch_add", "length", "va", "rkey", "imm", "swap", "compare"}], "seed"}``: each work
    request's payload is bytes of ``random.Random(seed)``, placed one after the other in the
    host memory (a READ request, MR-TXS-061, reads none: its ``length`` is the READ's, its ``va``
    and ``rkey`` the peer's; an atomic, MR-TX-195, none either: its payload is its operands
    ``swap`` (the add value of a fetch_add) and ``compare``, its ``length`` 8 by default; it
    takes its operands' 16 or 8 bytes of the host memory, unread). Each ACK frame (MR_ACK or MR_NAK with its MRAH) names its connection by
    its destination QP (a connection's ``local_qp``, default its index)."""
    if not isinstance(spec, dict) or not isinstance(spec.get("work_requests"), list):
        raise ReplayError("the work-request file needs a \"work_requests\" list")
    conns = spec.get("connections") or []
    tm = [template_of(c, eth_dst=0, eth_src=0, ip_src=0, ip_dst=0, sports=[0] * paths)
          for c in range(lay.conns)]
    local = {}
    for c in conns:
        try:
            k = int(c["conn"])
            if not 0 <= k < lay.conns:
                raise ReplayError(f"connection {k} beyond the instance ({lay.conns} connections)")
            sp = list(c.get("sports", [])) + [0xC000 + i for i in range(len(c.get("sports", [])), paths)]
            tm[k] = template_of(k, eth_dst=c.get("eth_dst", "02:00:00:00:00:02"),
                                eth_src=c.get("eth_src", "02:00:00:00:00:01"),
                                ip_src=c.get("ip_src", "10.0.0.1"), ip_dst=c.get("ip_dst", "10.0.0.2"),
                                sports=sp[:paths], pkey=int(c.get("pkey", 0xFFFF)),
                                dest_qp=int(c.get("dest_qp", 0)), ip_dscp=int(c.get("dscp", 26)),
                                ip_ecn=2, ip_ttl=int(c.get("ttl", 64)))
            local[int(c.get("local_qp", k))] = k
        except (KeyError, TypeError, ValueError) as e:
            if isinstance(e, ReplayError):
                raise
            raise ReplayError(f"bad connection {c!r} ({e})") from None
    for k in range(lay.conns):
        local.setdefault(k, k)
    rng = random.Random(int(spec.get("seed", 1)))
    ops = {"write": 0, "write_imm": OP_WRITE_IMM, "send": OP_SEND, "send_imm": OP_SEND_IMM,
           "read": OP_READ, "cmp_swap": OP_CMP_SWAP, "fetch_add": OP_FETCH_ADD}
    items, total = [], 0
    for k, w in enumerate(spec["work_requests"]):
        try:
            op = ops[w.get("op", "write")]
            length = int(w["length"] if "length" in w or not is_atomic(op) else ATOMIC_LEN)
            if not 0 <= length < 1 << 24:
                raise ReplayError(f"work request {k}: length {length} outside 0..16 MiB")
            items.append({"op": op, "conn": int(w.get("conn", 0)), "stream": int(w.get("stream", 0)),
                          "wr_id": k & 0xFFFF, "laddr": total, "va": int(w.get("va", 0)),
                          "rkey": int(w.get("rkey", 0)), "length": length,
                          "imm": int(w.get("imm", 0)) if has_imm(op) else 0,
                          # MR-TX-195: an atomic's operands (64 bits each)
                          "swap": int(w.get("swap", 0)) & ((1 << 64) - 1) if is_atomic(op) else 0,
                          "compare": int(w.get("compare", 0)) & ((1 << 64) - 1)
                          if op == OP_CMP_SWAP else 0})
            total += msg_len(op, length)
        except (KeyError, TypeError, ValueError) as e:
            if isinstance(e, ReplayError):
                raise
            raise ReplayError(f"bad work request {k}: {w!r} ({e})") from None
        if not 0 <= items[-1]["conn"] < lay.conns:
            raise ReplayError(f"work request {k}: connection beyond the instance")
    mem = Layout(total + 4096)
    for w in items:
        w["laddr"] += mem.base
    image = rng.randbytes(total)
    acks = []
    for i, raw in enumerate(ack_frames, 1):
        try:
            f = codec.decode(raw)
        except codec.DecodeError as e:
            raise ReplayError(f"ACK frame {i}: {e}") from None
        if f.mrah is None or f.bth.opcode not in (Op.MR_ACK, Op.MR_NAK):
            raise ReplayError(f"ACK frame {i}: not a MetaRoCE ACK or NAK")
        conn = local.get(f.bth.dest_qp)
        if conn is None:
            raise ReplayError(f"ACK frame {i}: destination QP {f.bth.dest_qp} names no connection")
        acks.append(ack_record(f, conn))
    return items, mem, image, tm, acks


class ReplayDriver(Driver):
    """MR-TX-154: the replay's driver. With ACK records, each is offered once the engine has sent
    every PSN it covers on its path (its cumulative PSN, its highest SACK bit), in file order; the
    receiver sends none of its own. Without, a lossless receiver ACKs every frame that asks
    (AckReq) and every path when the engine falls quiet."""

    def __init__(self, lay, width, items, mem, tmpls, acks, *, image, seed=1, idle=0.0, bp=0.0):
        super().__init__(lay, width, items, mem, tmpls, seed=seed, p_idle=idle, p_bp=bp, loss=0.0,
                         p_ack=0.0, p_axi=bp, latency=(1, 8), image=image, acks=not acks)
        self.given = deque(acks)
        self.sent = defaultdict(int)          # (conn, path) -> PSNs sent (one past the highest)
        if acks:
            self.limit = 40_000 + 3_000 * len(items)

    def _frame(self, raw, tuser=0):
        super()._frame(raw, tuser)
        f = self.res["emitted"][-1][0]
        if f.mrdh is not None:
            key = (self.qp_conn.get(f.bth.dest_qp, 0), f.mrdh.path)
            self.sent[key] = max(self.sent[key], f.bth.psn + 1)
        while self.given:
            a = self.given[0]
            top = a["cum"] + (a["sack"].bit_length())
            if top > self.sent[(a["conn"], a["path"])]:
                break
            self.ack_q.append(self.given.popleft())

    @property
    def sent_all(self):
        if not self.acks:
            # the given ACKs decide: done when every one is taken and the engine is quiet
            return self.i >= len(self.items) and not self.given and not self.ack_q \
                and self.ack_offer is None
        return super().sent_all


def replay_result(drv, mismatches, reports=()):
    """The replay's result object (MR-TX-154): every frame's bytes (hex), the completions, the
    retry-limit reports, the ACKs taken, mismatches and cycles."""
    return {"frames": [r.hex() for r in drv.res["raw"]], "cqe": drv.res["cqe"],
            "errors": drv.res["errors"], "acks": drv.res["acks"], "cycles": drv.cycle,
            "mismatches": mismatches, "mismatch_reports": list(reports)[:3],
            "completed": len(drv.res["cqe"]), "work_requests": len(drv.items)}


# ------------------------------------------------------------------ the congestion windows

#: MR-TX-107: the directed run: connection 0's windows set up, every ACK of path 1 echoing CE,
#: beta = 1, each ACK 3,000 cycles after its frame (12 us at 4 ns a cycle: the windows bind).
CC_CONN, CC_MARKED, CC_ACK_DELAY, CC_CAP = 0, 1, 3000, 1 << 20


def cc_setups(params, conn=CC_CONN):
    """MR-CW-014: a connection opened by one setup write per path slot, the first with
    ``open``, all ``fresh`` and active, each at the scheduler's reset window with the path
    floor (MR-CC-011) and ``multi``."""
    paths = params["paths"]
    floor = P.path_window_floor(params["mtu"], paths)
    return [{"conn": conn, "path": p, "cwnd": params["cwnd"], "active": 1, "open": int(p == 0),
             "fresh": 1, "floor": floor, "multi": 1} for p in range(paths)]


def cc_work(params, n=8, length=12 * 1024, conn=CC_CONN):
    """``n`` WRITEs of ``length`` bytes on ``conn`` over its streams, and their host memory."""
    from .tx_sched_cases import wr_item
    items, pos = [], 0
    for k in range(n):
        w = wr_item(conn, k % params["streams"], length, wr_id=k)
        w["laddr"] = pos
        pos += length
        items.append(w)
    lay = Layout(pos + 4096)
    for w in items:
        w["laddr"] += lay.base
    return items, lay


def cc_driver_kw(params, cc_on=True, seed=3):
    """The driver's arguments of the directed run (no idle cycles, backpressure or loss)."""
    return dict(seed=seed, p_idle=0.0, p_bp=0.0, loss=0.0, p_ack=0.0, cw_setups=cc_setups(params),
                cc={"cc_on": int(cc_on), "cc_beta_q": P.Q_ONE, "cc_cap": CC_CAP},
                ce_paths={(CC_CONN, CC_MARKED)}, ack_delay=CC_ACK_DELAY)


# ------------------------------------------------------------------ coverage (MR-TX-416..)

#: MR-TX-417: the coverage run's traffic shapes: (idle-cycle probability of the inputs,
#: backpressure probability of every output and of the host memory's AXI read port).
SHAPES = {"none": (0.0, 0.0), "idle": (0.3, 0.0), "bp": (0.0, 0.4), "both": (0.2, 0.3)}

#: MR-TX-417: the batches of a shape (:func:`coverage_batches`), in order
BATCHES = ("traffic", "dead", "windows")


def shape_index(shape):
    """A shape's place in :data:`SHAPES` (its batches' seeds)."""
    return list(SHAPES).index(shape)


#: MR-TX-417: the ACK kinds the coverage driver adds to its receiver's: each ``(kind,
#: probability per ACK)``.
ACK_EXTRAS = (("duplicate", 0.1), ("stale", 0.08), ("nak", 0.06), ("bad", 0.03))
#: MR-TX-462: the wide batches' ACK kinds: bad ACKs (their random SACK bits, PSNs and cums)
#: four times as often, stale ones twice (the draws of the bad ones left none in a shape)
ACK_EXTRAS_WIDE = (("duplicate", 0.1), ("stale", 0.16), ("nak", 0.06), ("bad", 0.12))


def random_templates(conns, paths, seed=0):
    """MR-TX-417: one template per connection with every field random (MACs, addresses, DSCP,
    ECN, TTL, P_Key, source ports; distinct destination QPs, which name the connection)."""
    rng = random.Random(seed ^ 0x7E3)
    qps = rng.sample(range(1 << 24), conns)
    return [template_of(c, eth_dst=rng.randrange(1 << 48), eth_src=rng.randrange(1 << 48),
                        ip_src=rng.randrange(1 << 32), ip_dst=rng.randrange(1 << 32),
                        sports=[rng.randrange(1 << 16) for _ in range(paths)], pkey=rng.randrange(1 << 16),
                        dest_qp=qps[c], ip_dscp=rng.randrange(64), ip_ecn=rng.randrange(4),
                        ip_ttl=rng.randrange(256)) for c in range(conns)]


def coverage_traffic(sem: TxSchedModel, n, *, seed=0, max_len=None, bad_reads=5, wide=True):
    """MR-TX-417: ``n`` random work requests (:func:`traffic`'s, with bad ones) and, at random
    places among them, one directed request of each good opcode (WRITE, WRITE_IMM, SEND,
    SEND_IMM, READ, CMP_SWAP, FETCH_ADD) and of each refusal (an opcode the slice does not send
    and a stream beyond the instance: LOC_QP_OP_ERR; a message longer than a chunk index names
    and an atomic not of 8 bytes: LOC_LEN_ERR), so that every opcode and status is offered
    whatever the seed; every ``bad_reads``-th request's payload in the host memory's error
    window (LOC_PROT_ERR). ``(items, memory layout)`` as :func:`traffic`. ``wide``
    (MR-TX-457, MR-TX-458; without it the traffic of cov40, which :func:`late_fail_batch`
    keeps): the payloads anywhere in the 64-bit space (:func:`_place_sparse`), half the good
    READs and one directed READ of lengths up to the largest a READ may name, the wr_ids
    distinct and random over their 16 bits."""
    from .tx_sched_cases import wr_item
    items = sched_traffic(sem, n, seed=seed, max_len=max_len)
    rng = random.Random(seed ^ 0xC0E4)
    mtu = sem.mtu
    directed = []
    for op in (OP_WRITE, OP_WRITE_IMM, OP_SEND, OP_SEND_IMM, OP_READ, OP_CMP_SWAP, OP_FETCH_ADD):
        length = ATOMIC_LEN if is_atomic(op) else rng.choice([1, mtu, mtu + 7, 3 * mtu - 1])
        directed.append(wr_item(rng.randrange(sem.conns), rng.randrange(sem.streams), length, wr_id=0,
                                op=op, va=rng.randrange(1 << 61) << 3, rkey=rng.randrange(1 << 32),
                                imm=rng.randrange(1 << 32), swap=rng.randrange(1 << 64),
                                compare=rng.randrange(1 << 64)))
    directed += [wr_item(0, 0, 64, wr_id=0, op=7),                              # not sent
                 wr_item(1, sem.streams + 3, 64, wr_id=0),                      # no such stream
                 wr_item(0, 1, ((1 << 20) * mtu) + 1, wr_id=0, op=OP_WRITE),    # too many chunks
                 wr_item(1, 1, 16, wr_id=0, op=OP_CMP_SWAP)]                    # atomic not 8 bytes
    for w in directed:
        items.insert(rng.randrange(len(items) + 1), w)
    if not wide:
        for k, w in enumerate(items):
            w["wr_id"] = k
        return _place(items, seed, bad_reads)
    wr = random.Random(seed ^ 0x51DE)
    big = largest_read(sem)
    for w in items:
        if w["op"] == OP_READ and sem.wr_status(w) == STATUS_OK and wr.random() < 0.5:
            w["length"] = wr.randrange(big + 1)
    items.insert(wr.randrange(len(items) + 1),
                 wr_item(wr.randrange(sem.conns), wr.randrange(sem.streams), big, wr_id=0, op=OP_READ,
                         va=wr.randrange(1 << 64), rkey=wr.randrange(1 << 32)))
    # MR-TX-462: atomics enough that each operand bit takes both values
    for op in (OP_CMP_SWAP, OP_FETCH_ADD) * WIDE_ATOMICS:
        items.insert(wr.randrange(len(items) + 1),
                     wr_item(wr.randrange(sem.conns), wr.randrange(sem.streams), ATOMIC_LEN, wr_id=0,
                             op=op, va=wr.randrange(1 << 61) << 3, rkey=wr.randrange(1 << 32),
                             swap=wr.randrange(1 << 64), compare=wr.randrange(1 << 64)))
    _random_wr_ids(wr, items)
    return _place_sparse(items, seed, bad_reads)


#: MR-TX-462: the wide traffic's directed atomics, of each kind
WIDE_ATOMICS = 3


def largest_read(sem: TxSchedModel):
    """MR-TX-458: the longest READ the scheduler takes (its chunks' count a chunk index names,
    MR-TXS-011; no payload is read or sent for it, MR-TXS-062)."""
    from .records import CHUNK_BITS
    return min((1 << CHUNK_BITS) * sem.mtu, (1 << 32) - 1)


def _random_wr_ids(rng, items):
    """MR-TX-457: distinct random wr_ids over the field's 16 bits."""
    for w, i in zip(items, rng.sample(range(1 << 16), len(items))):
        w["wr_id"] = i


def dead_traffic(sem: TxSchedModel, *, seed=0, wide=True):
    """MR-TX-417: the ``dead`` batch's work: 6 random requests (:func:`traffic`'s, every third
    payload read failing). ``wide`` (MR-TX-458): with a WRITE and a SEND_IMM on the dead
    connection 1 of random lengths between half the longest message and the longest (a chunk
    index's 2^20 chunks: their message lengths' high bits; only their first chunks are sent
    before the retry limit fails them), on :func:`_place_sparse`'s memory, wr_ids random."""
    from .tx_sched_cases import wr_item
    if not wide:
        return traffic(sem, 6, seed=seed, max_len=1200, bad_reads=3)
    items = sched_traffic(sem, 6, seed=seed, max_len=1200)
    r = random.Random(seed ^ 0xDEAD)
    big = largest_read(sem)
    for op in (OP_WRITE, OP_SEND_IMM):
        items.insert(r.randrange(len(items) + 1),
                     wr_item(1, r.randrange(sem.streams), r.randrange(big // 2, big + 1), wr_id=0, op=op,
                             va=r.randrange(1 << 64), rkey=r.randrange(1 << 32), imm=r.randrange(1 << 32)))
    _random_wr_ids(r, items)
    return _place_sparse(items, seed, 3)


def _place_sparse(items, seed, bad_reads):
    """MR-TX-457: :func:`_place` on a :class:`SparseLayout`: each request's payload at an
    address of its own anywhere in the 64-bit space, every ``bad_reads``-th in an error range."""
    rng = random.Random(seed + 99)
    lay = SparseLayout()
    taken = []                              # every payload's span with its margins
    for i, w in enumerate(items):
        ln = msg_len(w["op"], w["length"]) if w["length"] <= 1 << 31 else 0
        while True:                         # a span of its own: no good payload in an error range
            a = lay.address(rng, ln)
            span = (a - SPARSE_MARGIN, a + ln + SPARSE_MARGIN)
            if not any(x < span[1] and span[0] < y for x, y in taken):
                break
        taken.append(span)
        w["laddr"] = a
        if bad_reads and i % bad_reads == bad_reads - 1:
            lay.add_bad(a, ln)
    return items, lay


def _place(items, seed, bad_reads):
    """:func:`traffic`'s host memory: each request's ``laddr`` after the last's payload."""
    rng = random.Random(seed + 99)
    pos = 0
    for i, w in enumerate(items):
        ln = w["length"] if w["length"] < 1 << 20 else 0
        pos += rng.randrange(64)
        w["laddr"] = pos
        w["_bad_read"] = bool(bad_reads) and i % bad_reads == bad_reads - 1
        pos += ln
    lay = Layout(pos + 4096)
    for w in items:
        w["laddr"] += lay.bad_base if w.pop("_bad_read") else lay.base
    return items, lay


class CoverageDriver(Driver):
    """MR-TX-417: :class:`Driver` with ACK kinds its lossless-in-order receiver never sends,
    drawn from a generator of their own (``extras``: :data:`ACK_EXTRAS`): after an ACK, the
    same ACK again (duplicate), an older ACK of the path (stale: a lower ``cum``), a NAK of the
    path (a random reason and PSN), or a bad ACK (a path beyond the instance, or SACK bits past
    every PSN sent; random ``ce_count`` and source port). ``ack_kinds`` counts the ACK records
    the engine took, by the kind offered (``ack``: the receiver's own). ``wide`` (MR-TX-459):
    the receiver's ACK names the PSN of the frame that prompted it (its RTT sample's record,
    MR-TX-054), a NAK a random PSN, and a bad ACK a random PSN and, as a third kind, a
    cumulative PSN of at least 2^16, past every PSN the run sends (MR-ERR-010) or more than
    half the PSN space behind (a stale ACK)."""

    def __init__(self, *args, paths, extras=ACK_EXTRAS, wide=False, **kw):
        super().__init__(*args, **kw)
        self.paths = paths
        self.wide = wide
        self.trigger = None                     # MR-TX-459: the PSN of the frame being taken
        self.extras = tuple(extras)
        self.x_rng = random.Random(kw.get("seed", 0) ^ 0xAC4)
        self.hist = defaultdict(list)           # (conn, path) -> the ACK records sent
        self.kind_of = {}                       # id(record) -> kind
        self.ack_kinds = defaultdict(int)
        self.sem = None                         # the model's scheduler state, for window_waits
        self.waits = defaultdict(int)           # cycles each wait of window_waits held

    def _ack(self, conn, path):
        q = self.ack_later if self.ack_delay else self.ack_q
        before = len(q)
        super()._ack(conn, path)
        if len(q) == before:
            return                                  # the path's route down: no ACK
        a = q[-1]
        if self.wide and self.trigger is not None:
            a["psn"] = self.trigger
        self.kind_of[id(a)] = "ack"
        hist = self.hist[(conn, path)]
        r = self.x_rng
        for kind, p in self.extras:
            if r.random() >= p:
                continue
            if kind == "duplicate":
                x = dict(a)
            elif kind == "stale":
                older = [h for h in hist if h["cum"] != a["cum"]]
                if not older:
                    continue
                x = dict(r.choice(older))
            elif kind == "nak":
                x = dict(a, nak=1, psn=P.psn_add(a["cum"], r.randrange(8)),
                         reason=r.choice([int(v) for v in P.NakReason]), sack=0)
                if self.wide:
                    x["psn"] = r.randrange(P.PSN_MOD)
            else:
                x = dict(a, ce_count=r.randrange(1 << 16), sport=r.randrange(1 << 16))
                v = r.random()
                if self.wide:
                    x["psn"] = r.randrange(P.PSN_MOD)
                    v *= 1.5
                if v < 0.5:
                    x["path"] = r.randrange(self.paths, 256)
                elif v < 1:
                    x["sack"] = r.randrange(1, 1 << 256) | (1 << 255)
                else:
                    # MR-TX-459: a run sends fewer than 2^16 PSNs a path (and a path has at
                    # most 256 unresolved), so this cum resolves none
                    # (MR-TX-478: from the path's initial PSN)
                    x["cum"] = P.psn_add(self.init_psns.get((conn, path), 0),
                                         r.randrange(1 << 16, P.PSN_MOD))
                    x["sack"] = 0
            if self.ack_delay:
                q.append(self.cycle + self.ack_delay)
            q.append(x)
            self.kind_of[id(x)] = kind
        hist.append(a)

    def _frame(self, raw, tuser=0):
        if self.wide:
            f = codec.decode(raw)
            self.trigger = f.bth.psn if f.mrdh is not None else None
        super()._frame(raw, tuser)
        self.trigger = None

    def observe(self, inp, out):
        offer = self.ack_offer
        if self.sem is not None and not self._phase:
            for kind in window_waits(self.sem):
                self.waits[kind] += 1
        super().observe(inp, out)
        if offer is not None and self.ack_offer is None:
            self.ack_kinds[self.kind_of.pop(id(offer), "ack")] += 1


def window_waits(sem: TxSchedModel):
    """MR-TX-418: what holds the scheduler's connections back in its semantic state ``sem`` (the
    cycle model's ``sched.sem``) now: ``chunk_window`` (a stream's next chunk beyond its chunk
    window, MR-TXS-0xx's ``chunk_window_open``), ``conn_window`` (the connection's bytes in flight
    and the packet's above its window, MR-CC-001), ``path_window`` (no path takes the packet:
    each full, at its packet bound, probing or retired, MR-TXS-025); a set of those."""
    out = set()
    for c in range(sem.conns):
        cand = sem._candidate(c)
        if cand is None:
            for s in range(sem.streams):
                q = sem.q[sem.qi(c, s)]
                if q["send"] != q["tail"]:
                    e = q["ring"][q["send"] % sem.depth]
                    if not e["status"] and not P.chunk_window_open(e["next_chunk"], e["ack_base"],
                                                                   sem.chunk_window):
                        out.add("chunk_window")
            continue
        kind, w = cand
        if kind == "drop":
            continue
        qi, i, chunk = w
        e = sem.q[qi]["ring"][i]
        nbytes = P.chunk_bytes(msg_len(e["op"], e["length"]), chunk, sem.mtu)
        cs = sem.conn[c]
        if cs["inflight"] and cs["inflight"] + nbytes > sem.conn_window:
            out.add("conn_window")
        elif sem._path(c, kind == "resend") is None:
            out.add("path_window")
    return out


def coverage_batches(sem: TxSchedModel, params, lay, width, shape, n, *, seed=0, wide=True,
                     psn_wrap=False):
    """MR-TX-417: the coverage run's batches of one traffic shape (:data:`SHAPES`) on the
    instance ``params`` (models.tx.SMALL; ``sem`` its scheduler's model, ``lay`` the engine
    model's layouts), each on a fresh engine: ``[(name, items, rsps, driver)]``.

    ``traffic``: :func:`coverage_traffic`'s ``n`` requests on :func:`random_templates`,
    ``max(4, n // 5)`` READ responses (a fifth refused, the last always), 15 % of the frames
    lost; with idle cycles in the shape, both connections' windows set up, the congestion
    control on and one path's ACKs echoing CE. ``dead``: 6 requests with connection 1's every
    frame lost (its paths' retry limit, MR-TX-125) and every third payload read failing, the
    clock jumping 1.28 ms (32 RTOs) when the engine falls quiet, so that the backed-off timers
    expire at once. Both with the extra ACK kinds of :class:`CoverageDriver` and 40 ns a cycle
    (an RTO 1,000 cycles: timers expire while traffic runs, tail probes among them).
    ``windows``: :func:`window_work` with connection 0's path windows at two MTUs and every ACK
    :data:`WINDOW_ACK_DELAY` cycles late (the waits of :func:`window_waits`). Every batch reads
    the counters at its end. ``wide`` (MR-TX-457..460; without it cov40's batches, which
    :func:`late_fail_batch` keeps): :func:`coverage_traffic`'s, :func:`dead_traffic`'s and
    :func:`window_work`'s wide work, the ACKs of :class:`CoverageDriver`'s ``wide``, every
    batch on :func:`random_templates` and its clock (``now``) starting short of its wrap
    (:func:`clock_start`). ``psn_wrap`` (MR-TX-478): every batch's paths start a few PSNs
    below 2^24 (:func:`near_wrap`, written on ``s_psn`` first)."""
    p_idle, p_bp = SHAPES[shape]
    paths = params["paths"]
    tmpls = templates(params["conns"], paths)
    d_tmpls = random_templates(params["conns"], paths, seed + 7) if wide else tmpls
    w_tmpls = random_templates(params["conns"], paths, seed + 11) if wide else tmpls
    items, mem = coverage_traffic(sem, n, seed=seed, max_len=2500, wide=wide)
    rsps = responses(sem, max(8, n // 2) if wide else max(4, n // 5), mem, seed=seed, max_len=2500)
    rsps[0]["err"], rsps[-1]["err"] = 0, 1          # one served and one refused, whatever the seed
    kw = dict(p_idle=p_idle, p_bp=p_bp, p_axi=p_bp, counters=True, paths=paths, ns_per_cycle=40,
              wide=wide, extras=ACK_EXTRAS_WIDE if wide else ACK_EXTRAS)
    # MR-TX-105..107: in the shapes with idle cycles, both connections' windows set up, the
    # congestion control on and one path's every ACK echoing CE (tx_cc's configuration)
    cc = {}
    if p_idle:
        cc = dict(cw_setups=cc_setups(params, 0) + cc_setups(params, 1), ce_paths={(CC_CONN, CC_MARKED)},
                  cc={"cc_on": 1, "cc_beta_q": P.Q_ONE, "cc_cap": CC_CAP})
        if wide:
            cc.update(wide_windows(params, seed))
    out = [("traffic", items, rsps, CoverageDriver(lay, width, items, mem, random_templates(params["conns"], paths, seed),
                                                   seed=seed, loss=0.15, rsps=rsps, **cc, **kw))]
    d_items, d_mem = dead_traffic(sem, seed=seed + 7, wide=wide)
    dead = CoverageDriver(lay, width, d_items, d_mem, d_tmpls, seed=seed + 7, loss=0.1, dead=(1,), **kw)
    dead.jump_ns = 32 * 40_000
    out.append(("dead", d_items, [], dead))
    w_items, w_mem = window_work(params, seed=seed + 11 if wide else None)
    setups = [dict(x, cwnd=2 * params["mtu"]) for x in cc_setups(params, 0)]
    win = CoverageDriver(lay, width, w_items, w_mem, w_tmpls, seed=seed + 11, loss=0.0, p_ack=0.0,
                         cw_setups=setups, ack_delay=WINDOW_ACK_DELAY,
                         cc={"cc_on": 1, "cc_beta_q": P.Q_ONE, "cc_cap": CC_CAP},
                         ce_paths={(CC_CONN, CC_MARKED)}, **dict(kw, ns_per_cycle=4, extras=()))
    out.append(("windows", w_items, [], win))
    if wide:
        for (name, _, _, drv), span in zip(out, CLOCK_SPANS):
            drv.now = clock_start(seed, name, drv.ns_per_cycle * span)
    if psn_wrap:
        for k, (_, _, _, drv) in enumerate(out):
            drv.init_psns = near_wrap(params["conns"], paths, seed * 7 + k)
            drv.psn_w, drv.rx = psn_writes(drv.init_psns), _Rx(drv.init_psns)
    return out


def wide_windows(params, seed):
    """MR-TX-461: the wide traffic batch's congestion windows: the cap (MR-CW-005: below 2^24)
    and beta (at most 1, Q16) random, each path's window set up at a random size between its
    floor (MR-CC-011) and the cap; ``{cw_setups, cc}`` for :class:`Driver`."""
    from .cwnd import WIN_BITS
    r = random.Random(seed ^ 0xC3D)
    cap = r.randrange(CC_CAP, 1 << WIN_BITS)
    setups = [dict(x, cwnd=r.randrange(x["floor"], cap + 1))
              for x in cc_setups(params, 0) + cc_setups(params, 1)]
    return {"cw_setups": setups,
            "cc": {"cc_on": 1, "cc_beta_q": r.randrange(P.Q_ONE // 8, P.Q_ONE + 1), "cc_cap": cap}}


#: MR-TX-460: how far short of its wrap (in cycles of the batch) each batch's clock starts:
#: the traffic, dead and windows batches (their lengths: about 4,000-6,000, 5,000-11,000 with
#: 1.28 ms jumps, and 10,000 cycles)
CLOCK_SPANS = (2_000, 20_000, 5_000)


def clock_start(seed, name, span_ns):
    """MR-TX-460: a batch's first ``now``: 1 to ``span_ns`` ns short of the 32-bit clock's wrap
    (MR-ENG-050), so that every time field's high bits are set and the run crosses the wrap."""
    return P.TIME_MASK + 1 - random.Random(f"{seed}/{name}").randrange(1, span_ns)


def late_fail_batch(sem: TxSchedModel, params, lay, width, *, seed=6, n=20, ns_per_cycle=400):
    """MR-TX-452: :func:`coverage_batches`' ``traffic`` batch of the shape ``none`` at
    ``ns_per_cycle`` (400: an RTO of 100 cycles, shorter than a payload read's trip through a
    loaded data path): tail probes and resends of packets whose reads fail, a read error
    reported after its message completed and its slot was taken again (MR-TXS-412);
    ``(items, rsps, driver)``. MR-TXS-447: seed 6 at 400 ns completes with two such read
    errors; while a late ACK's chunk was not counted (late44 to live46) many runs this short an
    RTO never completed (seed 1 at 200 ns, the run until late44, stopped at 25 of 31
    completions); since MR-TXS-491 they do."""
    for name, items, rsps, drv in coverage_batches(sem, params, lay, width, "none", n, seed=seed,
                                                   wide=False):
        if name == "traffic":
            drv.ns_per_cycle = ns_per_cycle
            return items, rsps, drv
    raise AssertionError("coverage_batches has a traffic batch")


def watch_late_fails(sem: TxSchedModel, *, ignore_lap=False):
    """MR-TXS-412: wrap the scheduler model ``sem``'s ``fail_targets`` (this instance's) to
    record the read errors whose slot names a live entry of the other lap (a report of the
    slot's previous message, ignored); returns that list. With ``ignore_lap`` such an error is
    applied to the slot's entry whatever its lap (the wrong form of MR-TXS-412)."""
    late, orig = [], sem.fail_targets

    def fail_targets(fail=None, error=None):
        if fail is not None:
            e = sem.entry_of(fail["conn"], fail["slot"])
            if e is not None and e["lap"] != fail["lap"]:
                late.append(fail)
                if ignore_lap:
                    fail = dict(fail, lap=e["lap"])
        return orig(fail, error)
    sem.fail_targets = fail_targets
    return late


#: MR-TX-418: the windows batch's ACK delay (cycles): longer than 16 chunks take to leave at
#: 64 bits (2,048 cycles), so that a message's chunk window closes
WINDOW_ACK_DELAY = 2500


def window_work(params, seed=None):
    """MR-TX-418: the windows batch's work: connection 1 one WRITE of 17 chunks (its chunk
    window, 16, closes while the ACKs are delayed), connection 0 one WRITE of 12 chunks (its
    paths' windows set to two MTUs close); ``(items, memory layout)``. With a ``seed``
    (MR-TX-457): on :func:`_place_sparse`'s memory, wr_ids random."""
    from .tx_sched_cases import wr_item
    mtu = params["mtu"]
    items = [wr_item(1, 0, 17 * mtu, wr_id=0), wr_item(0, 1, 12 * mtu, wr_id=1)]
    if seed is not None:
        _random_wr_ids(random.Random(seed ^ 0x3D0), items)
        return _place_sparse(items, seed, 0)
    items[1]["laddr"] = 17 * mtu
    lay = Layout(29 * mtu + 4096)
    for w in items:
        w["laddr"] += lay.base
    return items, lay


def coverage_counts(model, drv, summary):
    """MR-TX-418: one batch's events for the functional bins, from the model (the retransmit
    unit's and the engine's counters, the frames, completions and errors the engine gave, which
    the lockstep proves the RTL's) and the driver (the ACK kinds the engine took):
    ``{bin name: count}``, names as :func:`metaroce.tb.coverage.tx_bins`."""
    from .retransmit import CTR
    from .tx_sched import STATUS_LOC_LEN_ERR, STATUS_LOC_QP_OP_ERR
    res = drv.res
    c = defaultdict(int)
    ops = {wire_op(o): name for o, name in ((0, "write"), (1, "write_imm"), (2, "send"), (3, "send_imm"),
                                             (4, "read"), (5, "cmp_swap"), (6, "fetch_add"))}
    ops[Op.MR_READ_RESP] = "read_resp"
    for f, bad in res["emitted"]:
        name = ops.get(f.bth.opcode)
        c[f"op:{name}" if name else "op:other"] += 1
        if f.mrdh is not None and f.mrdh.flags & MrdhFlag.RETX:
            c["resend:frame"] += 1
        if bad:
            c["frame:read_error"] += 1
        if f.bth.opcode == Op.MR_READ_RESP and f.mrdh.flags & MrdhFlag.ERROR:
            c["rsp:refused"] += 1
    names = {STATUS_OK: "ok", STATUS_LOC_LEN_ERR: "loc_len_err", STATUS_LOC_QP_OP_ERR: "loc_qp_op_err",
             STATUS_LOC_PROT_ERR: "loc_prot_err", STATUS_RETRY_EXC_ERR: "retry_exc_err"}
    for q in res["cqe"]:
        c[f"status:{names.get(q['status'], q['status'])}"] += 1
    ctr = model.rtx.counters
    for bin_, name in (("resend:sack_gap", "gap_losses"), ("resend:timeout", "timeout_losses"),
                       ("resend:tail_probe", "tail_probes"), ("timer:timeout", "timeouts"),
                       ("ack:new", "acks"), ("ack:no_progress", "acks_stale"), ("ack:bad", "acks_bad"),
                       ("ack:nak", "naks"), ("error:retry_limit", "errors")):
        c[bin_] += ctr[CTR[name]]
    for kind, n in drv.ack_kinds.items():
        if kind != "ack":
            c[f"ack_offered:{kind}"] += n
    c["probe:frame"] += summary.get("probes", 0)
    for kind, n in getattr(drv, "waits", {}).items():
        c[f"wait:{kind}"] += n
    return dict(c)
