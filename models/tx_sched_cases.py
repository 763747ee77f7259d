"""The TX scheduler's one verification stack, simulator-independent part (MR-TXS-*).

* :func:`traffic`: a seeded list of work requests (WRITE, WRITE_IMM, SEND and SEND_IMM of many
  lengths over the connections and streams, with bad ones: an opcode this slice does not send, a stream beyond the instance,
  a message with more chunks than a chunk index names);
* :class:`Driver`: offers the work requests with idle cycles, random backpressure on every
  output, and closes the loop: every sent event the block emits goes into the retransmit unit's
  semantics (:class:`~metaroce.models.retransmit.RetransmitModel`) and a lossy receiver
  (``protocol.rx_accept``), whose ACKs produce the acknowledged and lost records offered back on
  ``s_acked`` and ``s_resend``; when the block falls quiet with records unresolved, the paths
  are ACKed and their remaining (lost) records timed out; with ``p_probe`` it offers tail
  probes on ``s_probe`` (MR-TXS-092: the unit's decision at that timeout, a probe where
  another path is healthy, and random probes of a path's newest or an older PSN, some with
  an ACK of the path at the same time, so that the packet may be resolved before the
  scheduler takes the probe), and delivers the probe frames to the lossy receiver;
* :func:`check`: what the block emitted, against the work requests (MR-TXS-050);
* :func:`endpoint_compare`: the reference endpoint's sender and :class:`TxSchedModel` (with the
  retransmit unit's semantics between them) on the same work requests (MR-TXS-051);
* :func:`responses`, :func:`check_responses`: READ responses for ``s_rsp`` and their check
  (MR-TXS-066..071); :func:`endpoint_responses`: the endpoint as the responder of a peer's
  READs and :class:`TxSchedModel` on the same responses (MR-TXS-071).
"""
from __future__ import annotations

import random
from collections import defaultdict, deque
from types import SimpleNamespace

from . import protocol as P
from .driver import CounterReadout, run_alone
from .retransmit import RetransmitModel
from .rx import pack, unpack
from .tx_sched import (ATOMIC_LEN, GEN_BITS, OP_CMP_SWAP, OP_FETCH_ADD, OP_READ, OP_READ_RESP,
                       OP_SEND, OP_SEND_IMM, OP_WRITE, OP_WRITE_IMM, STATUS_OK, TxSchedModel,
                       atomic_operands, has_imm, is_atomic, is_read, is_send, msg_len, wire_op)
from .wire import MrdhFlag, Op


def wr_item(conn, stream, length, *, wr_id, op=OP_WRITE, laddr=0, va=0, rkey=0, imm=0, swap=0,
            compare=0):
    return {"op": op, "conn": conn, "stream": stream, "wr_id": wr_id, "laddr": laddr, "va": va,
            "rkey": rkey, "length": length, "imm": imm, "swap": swap, "compare": compare}


def kind_rng(seed):
    """MR-TXS-057: the generator that draws which work requests are sends, apart from the
    workload's own (so a workload's other draws are those of a workload of writes)."""
    return random.Random(seed ^ 0x5E4D)


def read_rng(seed):
    """MR-TXS-061: the generator that draws which work requests are READs, apart from the
    workload's and the sends' (so the other draws are those of a workload without READs)."""
    return random.Random(seed ^ 0x4EAD)


def atomic_rng(seed):
    """MR-TXS-104: the generator that draws which work requests are atomics and their operands,
    apart from the others (so the other draws are those of a workload without atomics)."""
    return random.Random(seed ^ 0xA70C)


def atomic_variant(rng, w, atomics, bad_len=0.1):
    """MR-TXS-104: work request ``w`` turned, with probability ``atomics``, into a
    compare-and-swap or a fetch-and-add of length 8 (of another length, refused with
    LOC_LEN_ERR, with probability ``bad_len``) with random operands, drawn from ``rng``."""
    if rng.random() >= atomics:
        return w
    op = rng.choice((OP_CMP_SWAP, OP_FETCH_ADD))
    length = rng.choice((0, 16, rng.randrange(1 << 32))) if rng.random() < bad_len else ATOMIC_LEN
    return dict(w, op=op, length=length, va=rng.randrange(1 << 61) << 3,
                swap=rng.randrange(1 << 64), compare=rng.randrange(1 << 64))


def send_variant(rng, op, sends):
    """MR-TXS-057: WRITE or WRITE_IMM ``op`` turned into SEND or SEND_IMM with probability
    ``sends``, drawn from ``rng`` (a generator of its own, so a workload's other draws are those
    of a workload of writes)."""
    return op + OP_SEND if rng.random() < sends else op


def traffic(sem, n, *, seed=0, bad=True, max_len=None, sends=0.5, reads=0.15, atomics=0.1,
            atomic_bad_len=0.1):
    """``n`` work requests for the instance of ``sem`` (a :class:`TxSchedModel`), wr_id 0..n-1;
    a share ``sends`` of the good opcodes are SEND or SEND_IMM (MR-TXS-057), then a share
    ``reads`` of them READ (MR-TXS-061), then a share ``atomics`` of those left atomics
    (MR-TXS-104), a share ``atomic_bad_len`` of those of a length other than 8."""
    rng = random.Random(seed)
    send_rng = kind_rng(seed)
    rd_rng = read_rng(seed)
    at_rng = atomic_rng(seed)
    mtu = sem.mtu
    max_len = max_len or 5 * mtu
    items = []
    for k in range(n):
        conn = rng.randrange(sem.conns)
        stream = rng.randrange(sem.streams)
        r = rng.random()
        length = rng.choice([0, 1, mtu - 1, mtu, mtu + 1, rng.randrange(max_len + 1),
                             rng.randrange(max_len + 1)])
        op = send_variant(send_rng, OP_WRITE_IMM if rng.random() < 0.4 else OP_WRITE, sends)
        if rd_rng.random() < reads:
            op = OP_READ
        if bad and r < 0.04:
            # MR-TXS-011: opcode 7, not sent (the atomics 5 and 6 are, MR-TXS-096). The draw is
            # rd20's ``5 + rng.randrange(2, 8) % 3``, so a seed's workload stays.
            rng.randrange(6)
            op = OP_READ_RESP
        elif bad and r < 0.07:
            stream = sem.streams + rng.randrange(16)         # beyond the instance
        elif bad and r < 0.09:
            length = rng.randrange(((1 << 20) * mtu) + 1, 1 << 32) if (1 << 20) * mtu < (1 << 32) \
                else length
        w = wr_item(conn, stream, length, wr_id=k, op=op, laddr=rng.randrange(1 << 64),
                    va=rng.randrange(1 << 64), rkey=rng.randrange(1 << 32),
                    imm=rng.randrange(1 << 32))
        # MR-TXS-104: the good requests' share of atomics (a refused one stays as drawn)
        items.append(atomic_variant(at_rng, w, atomics if sem.wr_status(w) == STATUS_OK else 0,
                                    atomic_bad_len))
    return items


def responses(sem, n, *, seed=0, err=0.2, max_len=None):
    """MR-TXS-066: ``n`` READ responses for ``s_rsp`` of the instance of ``sem``, from a
    generator of their own: a requester's stream and a message number (unique per connection
    and stream), a local address, lengths of 0, around the MTU and random; a share ``err`` of
    them refused (``err``, flag ERROR, no payload)."""
    rng = random.Random(seed ^ 0x8E5)
    mtu = sem.mtu
    max_len = max_len or 5 * mtu
    out, keys = [], set()
    while len(out) < n:
        conn, stream, msg = rng.randrange(sem.conns), rng.randrange(sem.streams), rng.randrange(1 << 32)
        if (conn, stream, msg) in keys:
            continue
        keys.add((conn, stream, msg))
        length = rng.choice([0, 1, mtu - 1, mtu, mtu + 1, rng.randrange(max_len + 1)])
        out.append({"conn": conn, "stream": stream, "msg": msg, "laddr": rng.randrange(1 << 64),
                    "length": length, "err": int(rng.random() < err)})
    return out


class Driver(CounterReadout):
    """Sources for ``s_wr``, ``s_acked`` and ``s_resend``, sinks for ``m_frame``, ``m_sent``
    and ``m_cqe``, and the loop through the retransmit unit's semantics and a lossy receiver,
    all from one seed (see the module docstring)."""

    def __init__(self, lay, items, *, seed=0, p_idle=0.2, p_bp=0.3, loss=0.1, p_ack=0.3,
                 p_report_idle=0.2, ns_per_cycle=4, p_cwnd=0.0, cwnd_hi=50_000, rsps=(),
                 p_probe=0.0, p_fail=0.0, cw_hold=False, late_acks=False, init_psns=None,
                 late_psn=False):
        self.lay = lay
        # MR-TXS-465/481: {(conn, path): initial PSN} written on s_psn before anything else
        # (each held until taken); with ``late_psn`` one more write per connection after that
        # connection's first frame (it has started: ignored, MR-TXS-466/483)
        self.init_psns = dict(init_psns or {})
        self.psn_w = [{"conn": c, "path": p, "psn": v}
                      for (c, p), v in sorted(self.init_psns.items())]
        self.psn_i, self.late_psn, self._late_done = 0, bool(late_psn), set()
        self.psn_port = bool(self.psn_w or self.late_psn)
        # MR-TXS-445/446: every other flush (the first too) times the paths out before it ACKs them, so that
        # records the receiver has are reported lost and then acknowledged late (flagged)
        self.late_acks, self.flushes = bool(late_acks), 0
        self.la_rng = random.Random(seed ^ 0x1A7E)
        # MR-TXS-027, MR-TXS-253: message and connection failures offered on s_fail / s_error
        # (one connection's, alone or together) in a fraction p_fail of the cycles, from a
        # generator of their own (the other draws are those of a run without them)
        self.p_fail, self.fail_offer, self.fl_rng = p_fail, None, random.Random(seed ^ 0xFA11)
        # MR-TXS-092: tail probes offered on s_probe and the probe frames' fate, from a
        # generator of their own (the other draws are those of a run without probes)
        self.p_probe, self.probe_q, self.probe_offer = p_probe, deque(), None
        self.pr_rng = random.Random(seed ^ 0x9B0E)
        self.psn_seen = defaultdict(int)            # (conn, path) -> next PSN among frames
        # MR-TXS-066: READ responses offered on s_rsp, and m_rsp_done's backpressure, from a
        # generator of their own (the other draws are those of a run without responses)
        self.rsps, self.rsp_i, self.rsp_offer = list(rsps), 0, None
        self.rsp_rng = random.Random(seed ^ 0x8E5D)
        self.rng = random.Random(seed)
        # MR-TXS-028: window writes on s_cwnd in a fraction p_cwnd of the cycles until every
        # work request has completed, from a generator of their own (the other draws are those
        # of a run without writes): 0, above the bound (taken as the bound), or below cwnd_hi
        self.p_cwnd, self.cwnd_hi = p_cwnd, cwnd_hi
        self.cw_rng = random.Random(seed ^ 0x5CC)
        # MR-TXS-418: with cw_hold a write offered is held until s_cwnd takes it (where the
        # port is always ready, as the register scheduler's at interval 1, the draws are those
        # of a run without); else offered for one cycle (the drivers before)
        self.cw_offer, self.cw_hold = None, bool(cw_hold)
        self.items = list(items)
        self.p_idle, self.p_bp, self.loss, self.p_ack = p_idle, p_bp, loss, p_ack
        self.p_report_idle = p_report_idle
        self.now, self.ns_per_cycle = 0, ns_per_cycle
        self.i = 0
        self.presenting = None
        self.cycle = 0
        self.n_counters = 0
        self.read_counters = False
        self.quiet_cycles = 3
        self.limit = 20_000 + 400 * (len(self.items) + len(self.rsps))
        self._readout_reset()
        self.rtx = RetransmitModel(lay.conns, lay.paths, 1 << 14)
        self.rx = defaultdict(lambda: [0, 0])              # (conn, path) -> receiver cum, sack
        for key, v in self.init_psns.items():
            self.rx[key], self.psn_seen[key] = [v, 0], v
        self.acked_q, self.resend_q = deque(), deque()
        self.offer = {"acked": None, "resend": None}
        self.silent = 0
        self.res = {"frames": [], "sent": [], "cqe": [], "taken": [], "reports": [], "cycles": 0,
                    "counters": None, "timeouts": 0, "lost": 0, "cwnd_writes": [],
                    "rsp_done": [], "probes": [], "probe_frames": 0, "unit_probes": 0,
                    "verdicts": defaultdict(int), "late": 0,
                    "init_psns": dict(self.init_psns), "psn_ignored": 0, "psn_waits": 0}

    @property
    def sent_all(self):
        return (self.i >= len(self.items) and self.presenting is None
                and len(self.res["cqe"]) == len(self.items)
                and len(self.res["rsp_done"]) == len(self.rsps))

    def _ack(self, conn, path):
        cum, sack = self.rx[(conn, path)]
        a = {"nak": 0, "conn": conn, "path": path, "psn": 0, "reason": 0, "cum": cum, "sack": sack,
             "ce_count": 0, "ece": 0, "sport": 0}
        for d in self.rtx.ack(a):
            rep = {"conn": d.conn, "path": d.path, "slot": d.slot, "chunk": d.chunk, "abort": d.abort, "lap": d.lap}
            if d.kind == "acked":
                self.acked_q.append(dict(rep, late=d.late))         # MR-TXS-445
                self.res["late"] += d.late
            else:
                self.resend_q.append(rep)

    def _flush(self):
        """The block is quiet with records unresolved: ACK every path, then time out the paths
        whose remaining records were all lost (the tail losses a timer finds, MR-REL-006). With
        ``late_acks`` every other flush (the first, third, ...) times out first and ACKs after
        (late ACKs)."""
        self.flushes += 1
        late = self.late_acks and self.flushes % 2 == 1
        for row, st in list(self.rtx.path.items()):
            if st["floor"] == st["next_psn"]:
                continue
            conn, path = row >> self.rtx.lay.path_bits, row & (self.lay.paths - 1)
            if not late:
                self._ack(conn, path)
            self._expire(conn, path, st)
            if late:
                self._ack(conn, path)

    def _expire(self, conn, path, st):
        """The path's timer expires (its records unresolved): a probe or a timeout."""
        if st["floor"] != st["next_psn"] and st["timer_on"]:
            if self.p_probe and self.rtx.probes_now(conn, path):
                # MR-TX-162: the unit's first expiry with another path healthy: a probe
                psn = self.rtx.probe(conn, path, self.now)
                self.probe_q.append({"conn": conn, "path": path, "psn": psn})
                self.res["unit_probes"] += 1
                return
            # MR-TXS-119: the timeout's path verdict follows on s_probe (the unit's m_probe)
            self.probe_q.append({"conn": conn, "path": path, "psn": 0, "to": 1,
                                 "verdict": self.rtx.verdict_now(conn, path)})
            self.res["verdicts"][self.probe_q[-1]["verdict"]] += 1
            out, _ = self.rtx.timeout(conn, path)
            self.res["timeouts"] += 1
            for d in out:
                self.resend_q.append({"conn": d.conn, "path": d.path, "slot": d.slot,
                                      "chunk": d.chunk, "abort": d.abort, "lap": d.lap})

    def inputs(self):
        rng = self.rng
        inp = {"s_wr__valid": 0, "s_wr__payload": 0, "s_acked__valid": 0, "s_acked__payload": 0,
               "s_resend__valid": 0, "s_resend__payload": 0, "now": self.now,
               "m_frame__ready": 1, "m_sent__ready": 1, "m_cqe__ready": 1,
               "s_cwnd__valid": 0, "s_cwnd__payload": 0, "s_rsp__valid": 0, "s_rsp__payload": 0,
               "s_probe__valid": 0, "s_probe__payload": 0,
               "m_rsp_done__ready": 1}
        if self._phase:
            return inp
        if self.psn_port:
            # MR-TXS-481: driven low when nothing is written (the simulators hold an input)
            inp["s_psn__valid"] = int(self.psn_i < len(self.psn_w))
            inp["s_psn__payload"] = (pack(self.lay.psn, self.psn_w[self.psn_i])
                                     if inp["s_psn__valid"] else 0)
            if inp["s_psn__valid"] and self.psn_i < len(self.init_psns):
                return inp
        rr = self.rsp_rng
        if self.rsps:
            if self.rsp_offer is None and self.rsp_i < len(self.rsps) and rr.random() >= 0.7:
                self.rsp_offer = self.rsps[self.rsp_i]
            if self.rsp_offer is not None:
                inp["s_rsp__valid"] = 1
                inp["s_rsp__payload"] = pack(self.lay.rsp, self.rsp_offer)
            inp["m_rsp_done__ready"] = int(rr.random() >= self.p_bp)
        if self.presenting is None and self.i < len(self.items) and rng.random() >= self.p_idle:
            self.presenting = self.items[self.i]
        if self.presenting is not None:
            inp["s_wr__valid"] = 1
            inp["s_wr__payload"] = pack(self.lay.wr, self.presenting)
        for kind, q in (("acked", self.acked_q), ("resend", self.resend_q)):
            if self.offer[kind] is None and q and rng.random() >= self.p_report_idle:
                self.offer[kind] = q.popleft()
            if self.offer[kind] is not None:
                inp[f"s_{kind}__valid"] = 1
                inp[f"s_{kind}__payload"] = pack(self.lay.acked if kind == "acked" else self.lay.report,
                                                 self.offer[kind])
        for name in ("m_frame__ready", "m_sent__ready", "m_cqe__ready"):
            inp[name] = int(rng.random() >= self.p_bp)
        if self.p_probe or self.probe_q or self.probe_offer is not None:   # MR-TXS-119: verdicts too
            self._offer_probe(inp)
        if self.p_fail:
            self._offer_fail(inp)
        if self.cw_offer is None:
            self.cw_offer = self._cw_next()
        if self.cw_offer is not None:
            inp["s_cwnd__valid"], inp["s_cwnd__payload"] = 1, pack(self.lay.cwnd, self.cw_offer)
        return inp

    def _cw_next(self):
        """MR-TXS-028: the next window write to offer, or None (a fraction ``p_cwnd`` of the
        cycles until every work request has completed)."""
        if self.p_cwnd and not self.sent_all and self.cw_rng.random() < self.p_cwnd:
            cr = self.cw_rng
            r = cr.random()
            return {"conn": cr.randrange(self.lay.conns), "path": cr.randrange(self.lay.paths),
                    "cwnd": 0 if r < 0.1 else (1 << 24) - 1 if r < 0.15 else cr.randrange(self.cwnd_hi)}
        return None

    def _offer_fail(self, inp):
        """MR-TXS-253: a message failure (a random slot; status 0 one time in three, which
        fails nothing), a connection failure (RETRY_EXC_ERR), or both of one connection, held
        on its port(s) until taken."""
        fr = self.fl_rng
        inp.update(s_fail__valid=0, s_fail__payload=0, s_error__valid=0, s_error__payload=0)
        if self.fail_offer is None and fr.random() < self.p_fail:
            c, k = fr.randrange(self.lay.conns), fr.random()
            # MR-TXS-412: a random lap (the slot's entry's or its previous message's)
            fl = ({"conn": c, "slot": fr.randrange(8), "status": fr.choice([0, 4, 4]),
                   "lap": fr.randrange(2)} if k < 0.7 else None)
            er = {"conn": c, "path": 0, "status": 12} if k > 0.5 else None
            self.fail_offer = (fl, er)
        if self.fail_offer is not None:
            fl, er = self.fail_offer
            if fl:
                inp.update(s_fail__valid=1, s_fail__payload=pack(self.lay.fail, fl))
            if er:
                inp.update(s_error__valid=1, s_error__payload=pack(self.lay.error, er))

    def _offer_probe(self, inp):
        """MR-TXS-092: a probe from the queue (the unit's), or now and then a random one of a
        path with records unresolved: its newest PSN, or (one in five) an older one (to be
        dropped), with (one in two) an ACK of the path at once."""
        pr = self.pr_rng
        if self.probe_offer is None and not self.probe_q and pr.random() < self.p_probe:
            rows = [row for row, st in self.rtx.path.items() if st["floor"] != st["next_psn"]]
            if rows:
                row = pr.choice(sorted(rows))
                st = self.rtx.path[row]
                conn, path = row >> self.rtx.lay.path_bits, row & (self.lay.paths - 1)
                back = 1 if pr.random() >= 0.2 else 1 + pr.randrange(1, 4)
                self.probe_q.append({"conn": conn, "path": path,
                                     "psn": P.psn_add(st["next_psn"], -back)})
                if pr.random() < 0.5:
                    self._ack(conn, path)
        if self.probe_offer is None and self.probe_q:
            self.probe_offer = self.probe_q.popleft()
        if self.probe_offer is not None:
            inp["s_probe__valid"] = 1
            inp["s_probe__payload"] = pack(self.lay.probe, self.probe_offer)

    def _probe_frame(self, fr):
        """MR-TXS-092: a probe's frame (a PSN sent before on its path) reaches the lossy
        receiver, which acknowledges it (AckReq)."""
        key = (fr["conn"], fr["mrdh_path"])
        self.res["probe_frames"] += 1
        if self.pr_rng.random() >= self.loss:
            cum, sack = self.rx[key]
            if P.rx_classify(cum, sack, fr["bth_psn"]) == P.RX_NEW:
                self.rx[key][0], self.rx[key][1], _ = P.rx_accept(cum, sack, fr["bth_psn"])
        self._ack(*key)

    def observe(self, inp, out):
        self.now = (self.now + self.ns_per_cycle) & P.TIME_MASK
        if self._readout_observe(out):
            return
        res, rng = self.res, self.rng
        if self.psn_port:
            if inp.get("s_psn__valid"):
                self.psn_i += int(bool(out["s_psn__ready"]))
                res["psn_waits"] += int(not out["s_psn__ready"])
            res["psn_ignored"] += int(bool(out.get("psn_ignored")))
        if self.presenting is not None and out["s_wr__ready"]:
            self.presenting = None
            self.i += 1
            res["taken"].append(self.cycle)
        for kind in ("acked", "resend"):
            if self.offer[kind] is not None and out[f"s_{kind}__ready"]:
                res["reports"].append((kind, self.offer[kind]))
                self.offer[kind] = None
        if self.fail_offer is not None and out.get("s_fail__ready"):
            res.setdefault("fails", []).append(self.fail_offer)
            self.fail_offer = None
        if self.probe_offer is not None and out.get("s_probe__ready"):
            res["probes"].append(self.probe_offer)
            self.probe_offer = None
        if self.cw_offer is not None and (out.get("s_cwnd__ready", 1) or not self.cw_hold):
            res["cwnd_writes"].append(self.cw_offer)        # MR-TXS-418: taken (or let go)
            self.cw_offer = None
        if out["m_frame__valid"] and inp["m_frame__ready"]:
            fr = unpack(self.lay.frame, out["m_frame__payload"])
            res["frames"].append(fr)
            key = (fr["conn"], fr["mrdh_path"])
            if fr["bth_psn"] != self.psn_seen[key]:
                self._probe_frame(fr)
            else:
                self.psn_seen[key] = P.psn_add(fr["bth_psn"], 1)
            if self.late_psn and fr["conn"] not in self._late_done:
                # MR-TXS-483: a write to a connection that has sent a frame (started)
                self._late_done.add(fr["conn"])
                self.psn_w.append({"conn": fr["conn"], "path": 0, "psn": 0x5A5A5A})
        if out["m_cqe__valid"] and inp["m_cqe__ready"]:
            res["cqe"].append(unpack(self.lay.cqe, out["m_cqe__payload"]))
        if self.rsp_offer is not None and out.get("s_rsp__ready"):
            self.rsp_offer = None
            self.rsp_i += 1
        if out.get("m_rsp_done__valid") and inp["m_rsp_done__ready"]:
            res["rsp_done"].append(unpack(self.lay.rsp_done, out["m_rsp_done__payload"]))
        active = (out["m_frame__valid"] or out["m_sent__valid"] or out["m_cqe__valid"]
                  or out.get("m_rsp_done__valid"))
        if out["m_sent__valid"] and inp["m_sent__ready"]:
            s = unpack(self.lay.sent, out["m_sent__payload"])
            res["sent"].append(s)
            assert self.rtx.sent(s), f"the retransmit unit refuses sent packet {s}"
            key = (s["conn"], s["path"])
            if rng.random() >= self.loss:
                cum, sack = self.rx[key]
                if P.rx_classify(cum, sack, s["psn"]) == P.RX_NEW:
                    self.rx[key][0], self.rx[key][1], _ = P.rx_accept(cum, sack, s["psn"])
            else:
                res["lost"] += 1
            if s["req"] or rng.random() < self.p_ack:
                # MR-TXS-445: with ``late_acks`` half the ACKs are lost (a generator of their
                # own), so a flush finds records the receiver has and times them out first
                if not (self.late_acks and self.la_rng.random() < 0.5):
                    self._ack(*key)
        pending = (self.acked_q or self.resend_q or any(v is not None for v in self.offer.values())
                   or self.probe_q or self.probe_offer is not None)
        self.silent = 0 if (active or pending or out["s_wr__ready"] and inp["s_wr__valid"]
                            or out.get("s_rsp__ready") and inp["s_rsp__valid"]) else self.silent + 1
        if self.silent > 12:
            self._flush()
            self.silent = 0
        self.cycle += 1

    def _stuck(self):
        return (f"(work request {self.i} of {len(self.items)}, {len(self.res['cqe'])} completions, "
                f"{len(self.res['sent'])} packets)")


class WindowSchedule(Driver):
    """The driver with window writes at given cycles (MR-TXS-028/029): ``writes`` maps a cycle
    to a write ``{conn, path, cwnd}`` offered on ``s_cwnd`` in that cycle."""

    def __init__(self, lay, items, writes, **kw):
        super().__init__(lay, items, **kw)
        self.writes = dict(writes)
        self.cw_due = deque()       # MR-TXS-418: writes due and not yet offered, in order

    def inputs(self):
        w = self.writes.get(self.cycle)
        if w is not None and not self._phase:
            self.cw_due.append(w)
        return super().inputs()

    def _cw_next(self):
        return self.cw_due.popleft() if self.cw_due else None


class VerdictStorm(Driver):
    """MR-TXS-267: the driver with path verdicts of its own on ``s_probe`` besides the unit's:
    in a fraction ``p_verdict`` of the cycles until every work request is taken, with the port
    free, a verdict (SUSPECT twice as often as RETIRE or REROUTE) on a random path of the
    instance, from a generator of its own (the other draws are those of a run without), so that
    a connection's paths are suspected together and its last active path meets a verdict
    (MR-TXS-290), which the unit's timeouts alone rarely do."""

    def __init__(self, lay, items, *, p_verdict=0.1, **kw):
        super().__init__(lay, items, **kw)
        self.p_verdict, self.v_rng = p_verdict, random.Random(kw.get("seed", 0) ^ 0x5EED)

    def inputs(self):
        vr = self.v_rng
        if (self.probe_offer is None and not self.probe_q and not self.sent_all
                and vr.random() < self.p_verdict):
            v = vr.choice([P.PATH_SUSPECT, P.PATH_SUSPECT, P.PATH_RETIRE, P.PATH_REROUTE])
            self.probe_q.append({"conn": vr.randrange(self.lay.conns),
                                 "path": vr.randrange(self.lay.paths), "psn": 0, "to": 1,
                                 "verdict": v})
            self.res["verdicts"][v] += 1
        return super().inputs()


def window_schedule_case(sem, *, shrink_at=20, grow_at=60):
    """MR-TXS-028/029, MR-CC-001: work requests on both connections and a schedule that closes
    path 2 of connection 0 (window 0) in cycle ``shrink_at`` and reopens it (1 MiB) in cycle
    ``grow_at``: ``(items, writes)``."""
    keys = [(c, s) for c in range(sem.conns) for s in range(sem.streams) for _ in range(3)]
    items = [wr_item(c, s, 5 * sem.mtu, wr_id=k) for k, (c, s) in enumerate(keys)]
    writes = {shrink_at: {"conn": 0, "path": 2, "cwnd": 0},
              grow_at: {"conn": 0, "path": 2, "cwnd": 1 << 20}}
    return items, writes


def window_storm_case(sem, *, seed=0, start=10, stop=300, p_write=0.45):
    """MR-TXS-029, MR-TXS-052: connection 0 on path 0 alone (its other paths' windows written 0
    in cycles 0..2), path 0's window rewritten in a share ``p_write`` of the cycles from
    ``start`` to ``stop`` (runs of consecutive writes among them) with values around a few
    MTUs, so that writes act at the edges of that path's packets and reports, follow each other
    on one path, and bind; connection 1 untouched. ``(items, writes)``."""
    rng = random.Random(seed)
    mtu = sem.mtu
    keys = [(c, s) for c in range(sem.conns) for s in range(sem.streams) for _ in range(3)]
    items = [wr_item(c, s, 5 * mtu, wr_id=k) for k, (c, s) in enumerate(keys)]
    writes = {k - 1: {"conn": 0, "path": p, "cwnd": 0} for k, p in enumerate(range(1, sem.paths), 1)}
    values = [0, mtu // 2, mtu, mtu + mtu // 2, 2 * mtu, 3 * mtu - 1, 4 * mtu, 6 * mtu, (1 << 24) - 1]
    for k in range(start, stop):
        if rng.random() < p_write:
            writes[k] = {"conn": 0, "path": 0, "cwnd": rng.choice(values)}
    return items, writes


def packets_by_cycle(model, drv):
    """Step the cycle model ``model`` through the driver ``drv`` alone; ``[(cycle, conn,
    path)]`` of every packet the scheduling step took (MR-TXS-033's action of that cycle)."""
    out = []
    while not drv.finished:
        inp = drv.inputs()
        n = len(model.events)
        o = model.step(inp)
        out += [(drv.cycle, e[1], e[6]) for e in model.events[n:] if e[0] == "packet"]
        drv.observe(inp, o)
        drv.settle(model.busy)
    return out


def recv_seqs(items, sem):
    """MR-TXS-058: each good SEND's or SEND_IMM's ``recv_seq`` by ``wr_id``: its rank among the
    good sends of its (connection, stream) in posting order (writes and refused requests not
    counted), modulo 2^32."""
    n = defaultdict(int)
    out = {}
    for w in items:
        if is_send(w["op"]) and sem.wr_status(w) == STATUS_OK:
            key = (w["conn"], w["stream"])
            out[w["wr_id"]] = n[key] & 0xFFFFFFFF
            n[key] += 1
    return out


def run_model(model, items, *, seed=0, **kw):
    """:class:`TxSchedCycleModel` alone through the driver; returns the driver's results."""
    drv = Driver(model.lay, items, seed=seed, **kw)
    run_alone(model, drv)
    return drv.res


def check_responses(sem, rsps, res):
    """MR-TXS-066..070: every READ response's frames (MR_READ_RESP, the requester's stream and
    message number, its chunks' offsets and lengths, FIRST and LAST, flag ERROR and no payload
    for a refused one, message length the length, no RETH, MRSH or immediate, the response's
    local address) and one record on ``m_rsp_done`` per response (status 0 here: no failures
    are offered)."""
    mtu = sem.mtu
    by_key = {(r["conn"], r["stream"], r["msg"]): r for r in rsps}
    done = [(d["conn"], d["stream"], d["msg"]) for d in res["rsp_done"]]
    assert sorted(done) == sorted(by_key), "one m_rsp_done record per response (MR-TXS-070)"
    assert all(d["status"] == 0 for d in res["rsp_done"])
    chunks = defaultdict(set)
    for fr in res["frames"]:
        if fr["bth_opcode"] != int(Op.MR_READ_RESP):
            continue
        r = by_key[(fr["conn"], fr["mrdh_stream"], fr["mrdh_msg"])]
        ml = 0 if r["err"] else r["length"]
        off = fr["mrdh_offset"]
        chunk = off // mtu
        assert off == chunk * mtu and fr["payload_len"] == P.chunk_bytes(ml, chunk, mtu)
        want_flags = ((MrdhFlag.FIRST if off == 0 else 0)
                      | (MrdhFlag.LAST if off + fr["payload_len"] >= ml else 0)
                      | (MrdhFlag.ERROR if r["err"] else 0))
        assert fr["mrdh_flags"] & ~MrdhFlag.RETX == want_flags, "response flags (MR-TXS-068)"
        assert (fr["mrdh_msg_len"], fr["reth_va"], fr["reth_rkey"], fr["reth_dma_len"],
                fr["mrsh_recv_seq"], fr["imm_imm"], fr["laddr"]) == (ml, 0, 0, ml, 0, 0, r["laddr"])
        chunks[(r["conn"], r["stream"], r["msg"])].add(chunk)
    for key, r in by_key.items():
        assert chunks[key] == set(range(P.chunk_count(0 if r["err"] else r["length"], mtu))), \
            f"every chunk of response {key} sent"
    return len(rsps)


def check(sem, items, res, rsps=()):
    """MR-TXS-050: the block's output against the work requests. ``sem``: a
    :class:`TxSchedModel` of the instance (parameters only). Every work request completes once
    (bad ones with their error, good ones with success, in posting order per stream, MR-EXO-004);
    every frame is its message's chunk with the fields of its work request; every message's
    chunks go out once in order and again only after a lost report; PSNs run 0, 1, ... per path;
    frame requests and sent events pair up."""
    mtu = sem.mtu
    by_id = {w["wr_id"]: w for w in items}
    assert len(res["cqe"]) == len(items), "one completion per work request"
    assert sorted(c["wr_id"] for c in res["cqe"]) == sorted(by_id), "each work request completes once"
    order = defaultdict(list)
    for c in res["cqe"]:
        w = by_id[c["wr_id"]]
        want = sem.wr_status(w)
        assert c["status"] == want, f"work request {c['wr_id']}: status {c['status']}, want {want}"
        assert (c["conn"], c["stream"], c["op"], c["length"]) == (w["conn"], w["stream"], w["op"],
                                                                  w["length"])
        if want == STATUS_OK:
            order[(w["conn"], w["stream"])].append(c["wr_id"])
    posted = defaultdict(list)
    for w in items:
        if sem.wr_status(w) == STATUS_OK:
            posted[(w["conn"], w["stream"])].append(w["wr_id"])
    assert dict(order) == dict(posted), "completions in posting order per stream (MR-EXO-004)"
    # message numbers: the good work requests of a stream, 0, 1, ... (MR-CONN-002)
    msg_of = {}
    for key, ids in posted.items():
        for k, wid in enumerate(ids):
            msg_of[(key[0], key[1], k)] = by_id[wid]
    rseq = recv_seqs(items, sem)
    frames = check_probes(res)
    assert len(frames) == len(res["sent"]), "a sent event per frame request (none per probe)"
    n_rsp = check_responses(sem, rsps, res)
    # MR-TXS-465/481: each path's PSNs from its initial PSN
    next_psn = defaultdict(int, res.get("init_psns", {}))
    sent_chunks = defaultdict(list)
    lost = defaultdict(int)
    reports = iter(res["reports"])
    for fr, s in zip(frames, res["sent"]):
        key = (fr["conn"], fr["mrdh_path"])
        assert fr["bth_psn"] == s["psn"] == next_psn[key], "PSNs in order per path (MR-SEQ-001)"
        next_psn[key] = P.psn_add(next_psn[key], 1)
        assert (s["conn"], s["path"], s["nbytes"], s["req"]) == (fr["conn"], fr["mrdh_path"],
                                                                  fr["payload_len"], fr["bth_ack_req"])
        assert fr["slot"] == s["slot"], "the frame request names its slot (MR-TXS-069)"
        if fr["bth_opcode"] == int(Op.MR_READ_RESP):
            continue                                    # check_responses
        w = msg_of[(fr["conn"], fr["mrdh_stream"], fr["mrdh_msg"])]
        off = fr["mrdh_offset"]
        chunk = off // mtu
        assert off == chunk * mtu == s["chunk"] * mtu
        ml = msg_len(w["op"], w["length"])
        assert fr["payload_len"] == P.chunk_bytes(ml, chunk, mtu), "chunk length (MR-CONN-005)"
        want_flags = ((MrdhFlag.FIRST if off == 0 else 0)
                      | (MrdhFlag.LAST if off + fr["payload_len"] >= ml else 0))
        assert fr["mrdh_flags"] & ~MrdhFlag.RETX == want_flags
        # MR-TXS-057..059: the opcode 0xC0 + op; a send's RETH VA and R_Key 0 and its receive
        # sequence; the immediate of either _IMM opcode; MR-TXS-063: a READ request MR_READ,
        # FIRST and LAST, no payload, message length 0, its RETH's DMA length the READ's
        assert fr["bth_opcode"] == wire_op(w["op"])
        assert not is_read(w["op"]) or (off, fr["payload_len"], want_flags) == (
            0, 0, MrdhFlag.FIRST | MrdhFlag.LAST)
        # MR-TXS-097/098: an atomic one packet of its operands (16 or 8 bytes, message length
        # the same), its RETH's DMA length 8; the operands in the frame request, 0 otherwise
        atomic = is_atomic(w["op"])
        assert not atomic or (off, want_flags) == (0, MrdhFlag.FIRST | MrdhFlag.LAST)
        assert (fr["swap"], fr["compare"]) == (
            w["swap"] if atomic else 0, w["compare"] if w["op"] == OP_CMP_SWAP else 0), \
            "atomic operands (MR-TXS-098)"
        snd = is_send(w["op"])
        assert (fr["reth_va"], fr["reth_rkey"], fr["reth_dma_len"], fr["mrdh_msg_len"]) == (
            0 if snd else w["va"], 0 if snd else w["rkey"], w["length"], ml)
        assert fr["mrsh_recv_seq"] == (rseq[w["wr_id"]] if snd else 0), "MRSH recv_seq (MR-TXS-058)"
        assert fr["imm_imm"] == (w["imm"] if has_imm(w["op"]) else 0)
        assert fr["laddr"] == w["laddr"]
        mk = (fr["conn"], fr["mrdh_stream"], fr["mrdh_msg"])
        if fr["mrdh_flags"] & MrdhFlag.RETX:
            assert chunk in sent_chunks[mk], "a resend of a chunk sent before"
        else:
            assert chunk == len(set(sent_chunks[mk])), "new chunks in order (MR-ENG-012)"
            assert chunk not in sent_chunks[mk]
        sent_chunks[mk].append(chunk)
    for kind, r in reports:
        if kind == "resend":
            lost[(r["conn"], r["slot"], r["chunk"])] += 1
    n_retx = sum(1 for fr in frames if fr["mrdh_flags"] & MrdhFlag.RETX)
    assert n_retx <= sum(lost.values()), "no resend without a lost report (MR-REL-003)"
    for (conn, stream, msg), w in msg_of.items():
        got = set(sent_chunks[(conn, stream, msg)])
        assert got == set(range(P.chunk_count(msg_len(w["op"], w["length"]), mtu))), \
            f"every chunk of {w['wr_id']} sent"
    return {"retransmits": n_retx, "responses": n_rsp, "probes": len(res["frames"]) - len(frames)}


def probe_generations(res):
    """MR-TXS-121, MR-TXS-248: the probes taken on ``s_probe`` (``res["probes"]``, in the port's
    order), per path ``(conn, path)`` a queue of ``(psn, gen)``: ``gen`` the path's generation
    when the probe is decided, counted here from the port alone (not the scheduler's state):
    0 at reset, one up (modulo 16) at every verdict but KEEP taken on the port before it. The
    port is one boundary register, its items act in order and a verdict's write precedes the
    decision of the probe behind it (MR-TXS-086/118), so the order of the port is the order of
    the generations."""
    gen, taken = defaultdict(int), defaultdict(deque)
    for pr in res.get("probes", ()):
        key = (pr["conn"], pr["path"])
        if pr.get("to"):                    # MR-TXS-119: a verdict is no probe
            if pr["verdict"] != P.PATH_KEEP:
                gen[key] = (gen[key] + 1) % (1 << GEN_BITS)
        else:
            taken[key].append((pr["psn"], gen[key]))
    return taken


def check_probes(res):
    """MR-TXS-080..082, MR-TXS-092, MR-TXS-248: the probe frames among ``res["frames"]``: a frame
    whose PSN is not its path's next is a probe's, and it re-sends its path's newest packet as
    it was (every field of that packet's frame request, AckReq and RETX set) but ``gen``, the
    path's generation at the probe (:func:`probe_generations`, MR-TXS-121), for a probe taken on
    ``s_probe`` (no more frames of a PSN than probes of it). A path's probe frames are its
    taken probes in order less the dropped ones (MR-TXS-082): a probe of another PSN before the
    frame's own was dropped. Returns the other frames (each with its sent event)."""
    taken = probe_generations(res)
    last, first, out = {}, {}, []
    for fr in res["frames"]:
        key = (fr["conn"], fr["mrdh_path"])
        psn = fr["bth_psn"]
        if key in last and psn != P.psn_add(last[key], 1):
            k3 = (*key, psn)
            q = taken[key]
            while q and q[0][0] != psn:     # dropped (MR-TXS-082)
                q.popleft()
            assert q, f"a frame of PSN {psn} of path {key} again without a probe"
            _, gen = q.popleft()
            assert psn == last[key], "a probe re-sends its path's newest packet (MR-TXS-080)"
            want = dict(first[k3], bth_ack_req=1,
                        mrdh_flags=first[k3]["mrdh_flags"] | MrdhFlag.RETX, gen=gen)
            assert fr == want, f"the probe of {k3}: {fr}, want {want}"
            continue
        assert psn == (P.psn_add(last[key], 1) if key in last
                       else res.get("init_psns", {}).get(key, 0))
        last[key] = psn
        first[(*key, psn)] = fr
        out.append(fr)
    return out


# ------------------------------------------------------------------ the reference endpoint

def _endpoint_pair(paths, streams, *, first_window=0, init_window_bdp=1.0, max_window_bdp=4.0,
                   chunk_window=16, conn_id=1, initial_psn=0):
    from .endpoint import Endpoint
    # MR-CONN-107, MR-TX-475: ``initial_psn``, every path's first PSN, both directions
    kw = {"mtu": 1024, "line_rate_bps": 100e9, "base_rtt": 4e-6, "first_window": first_window,
          "initial_psn": initial_psn,
          "chunk_window": chunk_window, "init_window_bdp": init_window_bdp,
          "max_window_bdp": max_window_bdp,
          "announce": False}        # the TX engine sends no announcement (hw-engine.md section 6)
    a, b = Endpoint("10.0.0.1", **kw), Endpoint("10.0.0.2", **kw)
    ca = a.connect(conn_id, "10.0.0.2", 20, paths=paths, streams=streams)
    cb = b.connect(20, "10.0.0.1", conn_id, paths=paths, streams=streams)
    return a, b, ca, cb


def _model_for(a, ca, conns, streams, depth):
    """A :class:`TxSchedModel` with the endpoint connection's constants: its MTU, chunk window,
    ACK policy, the path windows and the connection window as they start (MR-CC-001)."""
    cwnd = ca.paths[0].cwnd
    assert all(p.cwnd == cwnd for p in ca.paths)
    return TxSchedModel(conns, streams, len(ca.paths), depth, chunk_window=a.chunk_window,
                        mtu=a.mtu, cwnd=int(cwnd), conn_window=int(min(ca.window, ca.cwnd_sum)),
                        path_pkts=P.SEND_WINDOW - 1, ack_every=a.ack_every, resend_depth=64,
                        last_active_kept=True)         # MR-TXS-290, as the scheduler's


def endpoint_writes(seed, *, paths, streams, depth, conn, conns, msgs=None, sends=0.5,
                    reads=0.2, **ep_kw):
    """The endpoint pair of a comparison and its writes, sends and READs (MR-TXS-051,
    MR-TX-152), a namespace of ``rng, a, b, ca, cb, msgs, src, dst, ks, kd, sem``: ``msgs``
    ``(stream, length, imm or None, kind)``, ``kind`` False for a write, True for a send,
    ``"read"`` for a READ (random: 1 to ``depth`` per stream, a share ``sends`` of them sends,
    MR-TXS-057, then a share ``reads`` READs, MR-TXS-061, each drawn from a generator of its
    own; a 3-tuple is a write), sorted by stream
    (MR-ENG-030: streams enter the endpoint's round robin in the order of their first post);
    ``src``, ``dst`` the source (random bytes) and destination buffers, ``ks``, ``kd`` their
    memory keys; ``sem`` the scheduler's model with the endpoint's constants."""
    rng = random.Random(seed)
    send_rng = kind_rng(seed)
    explicit = msgs is not None
    a, b, ca, cb = _endpoint_pair(paths, streams, conn_id=conn, **ep_kw)
    msgs = msgs or [(s, rng.choice([0, 1, 1023, 1024, 1025, rng.randrange(20_000)]),
                     rng.choice([None, rng.randrange(1 << 32)]))
                    for s in range(streams) for _ in range(rng.randrange(1, depth + 1))]
    msgs = [m if len(m) == 4 else (*m, send_rng.random() < sends) for m in msgs]
    if reads and not explicit:
        rd = read_rng(seed)
        msgs = [(m[0], m[1], None, "read") if rd.random() < reads else m for m in msgs]
    total = sum(m[1] for m in msgs)
    src = bytearray(rng.randbytes(total + 1))
    dst = bytearray(len(src))
    ks, kd = a.reg_mr(src), b.reg_mr(dst)
    # MR-TXS-104: the atomics' targets, 8-byte aligned slots of a region of the peer's own
    abuf = bytearray(8 * len(msgs))
    return SimpleNamespace(rng=rng, a=a, b=b, ca=ca, cb=cb, msgs=sorted(msgs, key=lambda m: m[0]),
                           src=src, dst=dst, ks=ks, kd=kd, abuf=abuf, ka=b.reg_mr(abuf),
                           atomics=[], sem=_model_for(a, ca, conns, streams, depth))


def post_msg(w, conn, k, m, off, *, laddr):
    """Post message ``m`` = ``(stream, length, imm or None, kind)`` of ``endpoint_writes``'s
    namespace ``w`` on the endpoint, its source at ``off`` of ``src``: a write to ``off`` of
    ``dst``, or a send (MR-PLC-004) whose receive the peer posts first, at ``off`` of ``dst``
    (so no send meets a missing receive, MR-TXS-060), or a READ (MR-TXS-061) of ``off`` of the
    peer's ``dst`` (first filled with bytes of its own) into ``off`` of ``src``, or an atomic
    (``"cas"`` or ``"fadd"``, length 8, MR-TXS-104) on slot ``k`` of the peer's ``abuf`` (a
    random value), its original value landing at ``off`` of ``src`` (``dst`` there holds that
    value first; ``w.atomics`` gets the slot and its value after the atomic), so that after a
    run ``src == dst`` holds for every kind. Returns the scheduler's work request (wr_id ``k``,
    host address ``laddr``)."""
    stream, length, imm, send = m
    if send in ("cas", "fadd"):
        assert length == ATOMIC_LEN
        r = random.Random(off * 31 + k)
        orig = r.getrandbits(64)
        cas = send == "cas"
        operand = r.getrandbits(64)
        compare = orig if r.random() < 0.5 else r.getrandbits(64)
        w.abuf[8 * k:8 * k + 8] = orig.to_bytes(8, "little")
        w.dst[off:off + 8] = orig.to_bytes(8, "little")
        w.ca.post_atomic(stream, "cmp_swap" if cas else "fetch_add", w.ks, off, 8 * k, w.ka,
                         wr_id=k, add=operand, swap=operand, compare=compare)
        w.atomics.append((8 * k, P.atomic_apply(cas, orig, operand, compare)))
        return wr_item(conn, stream, ATOMIC_LEN, wr_id=k, op=OP_CMP_SWAP if cas else OP_FETCH_ADD,
                       laddr=laddr, va=8 * k, rkey=w.ka, swap=operand,
                       compare=compare if cas else 0)
    if send == "read":
        w.dst[off:off + length] = random.Random(off * 31 + k).randbytes(length)
        w.ca.post_read(stream, w.ks, off, length, off, w.kd, wr_id=k)
        return wr_item(conn, stream, length, wr_id=k, op=OP_READ, laddr=laddr, va=off, rkey=w.kd)
    if send:
        w.cb.post_recv(stream, w.kd, off, length, wr_id=k)
        w.ca.post_send(stream, w.ks, off, length, wr_id=k, imm=imm)
        op = OP_SEND if imm is None else OP_SEND_IMM
        return wr_item(conn, stream, length, wr_id=k, op=op, laddr=laddr, imm=imm or 0)
    w.ca.post_write(stream, w.ks, off, length, off, w.kd, wr_id=k, imm=imm)
    return wr_item(conn, stream, length, wr_id=k, op=OP_WRITE if imm is None else OP_WRITE_IMM,
                   laddr=laddr, va=off, rkey=w.kd, imm=imm or 0)


def _fields(frame):
    from .frame_builder import desc_of_frame
    return desc_of_frame(frame)


def compare_frame(ours, f):
    """The frame request's fields that the frame builder's descriptor has, against the endpoint's
    frame (``desc_of_frame``; the template's fields are not the scheduler's)."""
    d = _fields(f)
    diff = {k: (v, d.get(k, 0)) for k, v in ours.items() if k in d or k == "imm_imm"
            if v != d.get(k, 0)}
    # MR-TXS-098: an atomic's operands are the endpoint frame's payload
    op = {int(Op.MR_CMP_SWAP): OP_CMP_SWAP, int(Op.MR_FETCH_ADD): OP_FETCH_ADD}.get(ours["bth_opcode"])
    if op is not None and atomic_operands(op, ours["swap"], ours["compare"]) != f.payload:
        diff["operands"] = (atomic_operands(op, ours["swap"], ours["compare"]), f.payload)
    return diff


def _record(c, conn):
    """The events of endpoint connection ``c`` in order, as a list it fills: ``("frame",
    frame)`` per data frame it builds, ``("ack", record)`` per ACK it processes (the RX
    engine's ``m_ack`` layout, for the retransmit unit's semantics); MR-TXS-093: ``("expire",
    {path, now, kind})`` per expiry of a path's tail-loss timer (``kind`` "probe", "timeout",
    "xpath" for a silent-path verdict, MR-REL-009, or None when nothing was due) and
    ``("probe", frame)`` per tail probe it sends (MR-REL-010, after its expiry). MR-TX-206: an
    ACK's record carries the time it was processed (``now``) and ``events.t_sent`` maps each
    data frame's index in ``events`` to its send time (the retransmit unit's ages and RTT
    samples)."""
    events = _Events()
    orig_frame, orig_ack = c._frame, c._on_ack
    orig_timeout, orig_probe_send = c._on_timeout, c._probe_send
    state = {"probing": False}

    def frame(*args):
        f = orig_frame(*args)
        if not state["probing"]:
            p, psn = args[4], args[5]
            events.t_sent[len(events)] = p.ring[psn & (P.SEND_WINDOW - 1)].t & P.TIME_MASK
        events.append(("probe" if state["probing"] else "frame", f))
        return f

    def on_timeout(p, now):
        st = c.ep.stats
        keys = ("tail_probes", "timeouts", "xpath_losses")
        before = [st.get(k, 0) for k in keys]
        ex = {"conn": conn, "path": p.idx, "now": int(now) & P.TIME_MASK, "kind": None}
        events.append(("expire", ex))
        try:
            return orig_timeout(p, now)
        finally:
            after = [st.get(k, 0) for k in keys]
            ex["kind"] = next((n for n, b, a in zip(("probe", "timeout", "xpath"), before, after)
                               if a != b), None)

    def probe_send(*args):
        state["probing"] = True
        try:
            return orig_probe_send(*args)
        finally:
            state["probing"] = False

    def on_ack(ack, now, bth_psn=0):
        events.append(("ack", {"nak": 0, "conn": conn, "path": ack.path, "psn": ack.trigger_psn,
                               "reason": 0, "cum": ack.cum_psn, "sack": ack.sack, "ce_count": 0,
                               "ece": 0, "sport": 0, "now": int(now) & P.TIME_MASK}))
        return orig_ack(ack, now, bth_psn)

    c._frame, c._on_ack = frame, on_ack
    c._on_timeout, c._probe_send = on_timeout, probe_send
    return events


class _Events(list):
    """:func:`_record`'s events, with ``t_sent``: event index -> a data frame's send time."""

    def __init__(self):
        super().__init__()
        self.t_sent = {}


class Diverged(AssertionError):
    """MR-TXS-093: the scheduler (or the unit's semantics before it) departs from the endpoint:
    ``kind`` "decision" (an expiry the unit decides otherwise, MR-TX-163) or "frame", after
    ``timeouts`` of the endpoint's timeouts (path verdicts, MR-PATH-002, not in this slice)."""

    def __init__(self, msg, kind, timeouts):
        super().__init__(msg)
        self.kind, self.timeouts = kind, timeouts


def _replay(sem, events, ep, collect=False, ages=True, late_counted=False):
    """MR-TXS-051, MR-TXS-071: the endpoint ``ep``'s recorded ``events`` given to the scheduler
    ``sem`` in order: an ACK through the retransmit unit's semantics to reports, a READ
    response (``"rsp"``) to ``s_rsp``'s item, and at each frame the scheduler's next packet,
    whose descriptor fields must be the frame's. ``(frame requests, frames, completions)``,
    the completions taken after each ACK when ``collect``. MR-TXS-447: a late report (MR-TXS-445)
    goes to the scheduler as the unit sends it, flagged, and the replay parts (:class:`Diverged`
    "late") at the first frame that differs after one whose chunk the scheduler had not yet
    acknowledged; ``late_counted``: such a report goes unflagged (the scheduler counts the chunk
    as the endpoint does, MR-EXO-002: the unit before stl43), to compare what follows."""
    from .tx_sched import rsp_item
    # MR-TX-206: the unit's health and ECN ages (MR-TX-203/204) on its own RTT samples
    rtx = RetransmitModel(sem.conns, sem.paths, 1 << 14, ages=ages, samples=True)
    requests, frames, done = [], [], []
    probe = None                # MR-TXS-093: the frame request of the unit's last tail probe
    timeouts = 0

    # MR-TXS-447: the late reports whose chunk the scheduler had not acknowledged when they came:
    # the endpoint counts such a chunk (MR-EXO-002), the scheduler waits for its resend's report
    late_uncounted = []

    def report(ds):
        for d in ds:
            e = sem.entry_of(d.conn, d.slot, d.lap)
            sem.report({"conn": d.conn, "path": d.path, "slot": d.slot, "chunk": d.chunk,
                        "abort": d.abort, "lap": d.lap,
                        "late": 0 if late_counted else d.late},           # MR-TXS-445
                       lost=d.kind == "resend")
            # MR-TXS-491: since live46 the scheduler counts a late report's chunk of the slot's
            # present message; a late chunk still not acknowledged after its report is one the
            # endpoint counted and the scheduler did not
            if (d.kind == "acked" and d.late and not late_counted and e is not None
                    and d.chunk < e["next_chunk"] and not sem.chunk_acked(e, d.chunk)):
                late_uncounted.append({"conn": d.conn, "path": d.path, "slot": d.slot,
                                       "chunk": d.chunk, "frame": len(frames)})

    t_sent = getattr(events, "t_sent", {})
    for k, (kind, ev) in enumerate(events):
        if kind == "rsp":
            assert sem.wr(rsp_item(ev, sem.streams)) is None
            continue
        if kind == "ack":
            report(rtx.ack(ev, ev.get("now", 0)))
            while collect and (qi := sem.completion()) is not None:
                done.append(sem.complete(qi))
            continue
        if kind == "expire":
            # MR-TXS-093: the unit's decision at the endpoint's expiry (MR-TX-162): a probe to
            # the scheduler's s_probe, or a timeout whose lost records are reported; the
            # endpoint's silent-path verdict (MR-REL-009, not in the unit) as a timeout
            if ev["kind"] is None:
                continue
            conn = ev["conn"]
            st = rtx.state(rtx.row(conn, ev["path"]))
            assert st["timer_on"], f"expiry {ev}: the unit's timer is not running"
            if ev["kind"] == "xpath":
                v = rtx.verdict_now(conn, ev["path"], ev["now"])
                res = ("timeout",) + rtx.timeout(conn, ev["path"], ev["now"]) + (v,)
            else:
                res = rtx.expire(conn, ev["path"], ev["now"])
            if res[0] != ev["kind"]:
                raise Diverged(f"expiry {ev}: the unit decides {res[0]} (MR-TX-163)",
                               "decision", timeouts)
            if res[0] == "probe":
                probe = sem.probe({"conn": conn, "path": ev["path"], "psn": res[1]})
                assert probe is not None, f"expiry {ev}: the scheduler drops the probe"
            else:
                timeouts += 1
                report(res[1])
                # MR-TXS-114/115: the unit's verdict (MR-TX-196/197) to the path's state
                sem.path_event({"conn": conn, "path": ev["path"], "verdict": res[3]})
            continue
        if kind == "probe":
            assert probe is not None, "the endpoint probed, the unit did not"
            diff = compare_frame(probe, ev)
            assert not diff, f"probe after frame {len(frames)}: {diff}"
            requests.append(probe)
            frames.append(ev)
            probe = None
            continue
        act = sem.decide()
        while act is not None and act[0] == "drop":
            sem.apply(act)
            act = sem.decide()
        def parted(what):
            # MR-TXS-447: the two part after a late ACK whose chunk the endpoint counted
            return Diverged(f"frame {len(frames)}: {what}, after the late report "
                            f"{late_uncounted[0]} (the endpoint counted its chunk acknowledged, "
                            f"the scheduler waits for its resend's report, MR-TXS-446)",
                            "late", timeouts)
        if act is None and late_uncounted:
            raise parted("the scheduler has nothing to send")
        assert act is not None, (f"frame {len(frames)}: the endpoint sent, the scheduler has "
                                 f"nothing ({dict(ep.stats)})")
        ours, sent = sem.apply(act)
        diff = compare_frame(ours, ev)
        if diff and late_uncounted:
            raise parted(str(diff))
        if diff:
            raise Diverged(f"frame {len(frames)}: {diff} ({dict(ep.stats)})", "frame", timeouts)
        if k in t_sent:
            sent = dict(sent, t_sent=t_sent[k])     # MR-TX-206: the endpoint's send time
        assert rtx.sent(sent)
        requests.append(ours)
        frames.append(ev)
    return requests, frames, done


def endpoint_compare(seed=0, *, paths=4, streams=2, msgs=None, loss=0.0, loopback=True,
                     drop_until=60e-6, depth=4, conn=1, conns=2, ack_loss=0.0, unit_ages=True,
                     late_counted=False, **ep_kw):
    """MR-TXS-051: the reference endpoint's sender and :class:`TxSchedModel` on the same writes.

    Without ``loopback`` the endpoint's frames are drawn until it blocks (no ACK comes back: the
    windows and the chunk window bind). With it, the writes run over the loopback with data
    frames sent before ``drop_until`` lost with probability ``loss``; every ACK the endpoint's
    sender processed goes through the retransmit unit's semantics (RetransmitModel), whose
    acknowledged and lost records are reported to the scheduler in the same order. At each
    frame of the endpoint the scheduler's next packet must carry the same descriptor fields
    (path, PSN, offset, length, flags, stream, message, opcode, AckReq, RETH, MRSH, immediate).
    Writes and sends (MR-TXS-060). Returns the number of frames compared and the retransmissions among them.
    ``late_counted``: :func:`_replay`'s (MR-TXS-447)."""
    from .endpoint import Frame
    from .loopback import LoopFaults, Loopback

    w = endpoint_writes(seed, paths=paths, streams=streams, depth=depth, conn=conn, conns=conns,
                        msgs=msgs, **ep_kw)
    a, b, ca, msgs, src, dst, sem = (w.a, w.b, w.ca, w.msgs, w.src, w.dst, w.sem)
    total = sum(m[1] for m in msgs)
    off = 0
    counts = defaultdict(int)
    for k, m in enumerate(msgs):
        assert counts[m[0]] < depth, "the comparison posts at most `depth` messages per stream"
        counts[m[0]] += 1
        cqe = sem.wr(post_msg(w, conn, k, m, off, laddr=off))
        assert cqe is None
        off += m[1]

    events = _record(ca, conn)
    if loopback:
        drop_rng = random.Random(seed + 1)

        def drop_if(f, now):
            return f.mrdh is not None and now < drop_until and drop_rng.random() < loss

        # MR-TXS-093: with ack_loss, ACKs lost on the way back (the endpoint's tail probes)
        lb = Loopback(a, b, faults_ab=LoopFaults(drop_if=drop_if), seed=seed, delay=1.5e-6,
                      faults_ba=LoopFaults(ctrl_loss=ack_loss) if ack_loss else None)
        lb.run(until=0.02)
        assert dst[:total] == src[:total], "the endpoint's transfer completed"
        for slot, new in w.atomics:
            assert int.from_bytes(w.abuf[slot:slot + 8], "little") == new, "the atomic executed"
    else:
        t = 0.0
        while True:
            f = a.next_packet(t)
            if not isinstance(f, Frame):
                break
            t += 1e-9

    requests, frames, _ = _replay(sem, events, a, ages=unit_ages, late_counted=late_counted)
    n_frames = len(frames)
    n_retx = sum(1 for q in requests if q["mrdh_flags"] & MrdhFlag.RETX)
    n_probes = sum(1 for k, _ in events if k == "probe")
    if not loopback:
        act = sem.decide()
        assert act is None, f"the endpoint blocked after {n_frames} frames, the scheduler did not"
    # the frame requests and the endpoint's frames, for the frame-level comparison (MR-TX-152)
    return {"frames": n_frames, "retransmits": n_retx, "probes": n_probes, "events": events,
            "stats": dict(a.stats),
            "requests": requests, "endpoint_frames": frames, "endpoint": (a, ca), "src": bytes(src),
            "paths": paths}


#: MR-TXS-093: the lost-ACK runs: 3 % of the data frames and 30 % of the ACKs lost throughout
#: (so the endpoint's timers expire and send tail probes), windows that neither bind nor grow
PROBE_RUN = dict(loss=0.03, drop_until=1.0, ack_loss=0.3, init_window_bdp=100.0,
                 max_window_bdp=100.0)


def endpoint_probes(seed=0, *, paths=2, streams=2, **kw):
    """MR-TXS-093: :func:`endpoint_compare` on a lost-ACK run (:data:`PROBE_RUN`): three writes
    or sends of 8 to 40 kB per stream; at each expiry of the endpoint's timer the unit's
    semantics decide (a probe to the scheduler's ``probe``, or a timeout), and each probe
    frame of the endpoint must be the scheduler's probe's. Raises :class:`Diverged` where the
    two part."""
    rng = random.Random(seed)
    msgs = [(s, rng.randrange(8000, 40_000), None) for s in range(streams) for _ in range(3)]
    return endpoint_compare(seed, paths=paths, streams=streams, msgs=msgs,
                            **dict(PROBE_RUN, **kw))


def resends_on_probed_paths(events):
    """MR-TXS-083: of the endpoint's resends (RETX frames, not probes), those it sent on a path
    between that path's tail probe and its next ACK (the path still tail-probed):
    ``(resends, on probed paths)``."""
    probed, n, on = set(), 0, 0
    for kind, ev in events:
        if kind == "expire" and ev["kind"] == "probe":
            probed.add(ev["path"])
        elif kind == "expire" and ev["kind"] in ("timeout", "xpath") or kind == "ack":
            probed.discard(ev["path"])
        elif kind == "frame" and ev.mrdh.flags & MrdhFlag.RETX:
            n += 1
            on += ev.mrdh.path in probed
    return n, on


def endpoint_probe_sweep(seeds, paths=(2, 4)):
    """MR-TXS-093: :func:`endpoint_probes` over ``seeds`` for each path count: the runs that
    agree frame for frame (``agree``, with their ``frames`` and ``probes``), and those that
    part, by why: ``health`` (the endpoint times out where the unit probes: its 4-RTT health
    age, MR-TX-163), ``late`` (after a late ACK whose chunk the endpoint counts, MR-TXS-447),
    ``after_timeout`` (the frames part after an endpoint timeout: its path verdicts,
    MR-PATH-002, are not in this slice), ``other``."""
    n = defaultdict(int)
    for p in paths:
        for seed in seeds:
            try:
                r = endpoint_probes(seed, paths=p)
            except Diverged as e:
                n["health" if e.kind == "decision" else "late" if e.kind == "late"
                  else "after_timeout" if e.timeouts else "other"] += 1
                continue
            n["agree"] += 1
            n["frames"] += r["frames"]
            n["probes"] += r["probes"]
    return dict(n)


def endpoint_responses(seed=0, *, paths=4, streams=2, depth=4, conns=2, reads=None, bad=(),
                       loss=0.0, drop_until=60e-6, **ep_kw):
    """MR-TXS-071: the reference endpoint as the responder and :class:`TxSchedModel` on the
    same READ responses. Endpoint ``a`` posts ``reads`` ``(stream, length)`` (random: two per
    stream) to endpoint ``b``, whose region holds random bytes; those of index in ``bad`` name a
    key ``b`` does not have (``b`` answers them ERROR, MR-VERB-004). Over the loopback (``b``'s
    data frames lost with probability ``loss`` before ``drop_until``), ``b`` executes each READ
    at its stream's delivery point; each execution becomes an ``s_rsp`` item
    ``{conn, stream, msg, laddr, length, err}`` (``laddr`` the offset of the bytes in ``b``'s
    region) given to the scheduler at that point, and every ACK ``b`` processed goes through
    the retransmit unit's semantics to the scheduler. At each frame of ``b`` the scheduler's
    next packet must carry the same descriptor fields. Returns the number of frames, the frame
    requests, ``b``'s frames, its endpoint and connection, its region's bytes and the
    responses' completion records."""
    from .loopback import LoopFaults, Loopback

    rng = random.Random(seed)
    a, b, ca, cb = _endpoint_pair(paths, streams, **ep_kw)
    conn = cb.local_id % conns
    assert conn % paths == cb.local_id % paths, "the path rotation starts alike (MR-CONN-004)"
    reads = reads or [(s, rng.choice([0, 1, 1023, 1024, 1025, rng.randrange(6000)]))
                      for s in range(streams) for _ in range(2)]
    assert len(reads) <= depth, "the responses share the last stream's ring (MR-TXS-067)"
    region = bytearray(rng.randbytes(sum(n for _, n in reads) + 1))
    local = bytearray(len(region))
    kl, kr = a.reg_mr(local), b.reg_mr(region)
    off = 0
    for k, (s, n) in enumerate(reads):
        ca.post_read(s, kl, off, n, off, kr + 1000 if k in bad else kr, wr_id=k)
        off += n
    sem = _model_for(b, cb, conns, streams, depth)

    events = _record(cb, conn)
    orig_exec = cb._execute

    def execute(m):
        va, _, length, _ = m.req
        orig_exec(m)
        r = cb.rsp[(m.stream, m.msg)]
        events.append(("rsp", {"conn": conn, "stream": m.stream, "msg": m.msg, "laddr": va,
                               "length": length, "err": int(r.err)}))

    cb._execute = execute
    drop_rng = random.Random(seed + 1)

    def drop_if(f, now):
        return f.mrdh is not None and now < drop_until and drop_rng.random() < loss

    lb = Loopback(a, b, faults_ba=LoopFaults(drop_if=drop_if), seed=seed, delay=1.5e-6)
    lb.run(until=0.02)
    good = [k for k in range(len(reads)) if k not in bad]
    for k in good:
        o = sum(n for _, n in reads[:k])
        assert local[o:o + reads[k][1]] == region[o:o + reads[k][1]], "the READs completed"

    requests, frames, done = _replay(sem, events, b, collect=True)
    return {"frames": len(frames), "requests": requests, "endpoint_frames": frames,
            "endpoint": (b, cb), "region": bytes(region), "paths": paths, "done": done,
            "reads": reads}
