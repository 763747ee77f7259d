"""RoCEv2 RC go-back-N baseline with the same interface as :class:`metaroce.models.endpoint.Endpoint`.

An honest IBTA Reliable Connection model (docs/spec/transport.md, MR-GBN-001..012): one path per
QP (fixed UDP source port), one PSN sequence per QP, RC opcodes (WRITE FIRST/MIDDLE/LAST/ONLY
with RETH on FIRST/ONLY, SEND ..., ACK with AETH). The responder accepts only the expected PSN;
on the first gap it sends one PSN sequence-error NAK (AETH syndrome 0x60) and silently drops
out-of-order packets until the expected PSN arrives; the requester rewinds to the NAK's PSN.
ACKs are coalesced (the requester sets AckReq on a message's last packet and every
``ack_req_every`` packets; the responder acknowledges those). The local ACK timeout is
4.096 us x 2^t; after ``retry_cnt`` retries without progress the work request fails with
``RETRY_EXC_ERR``. The window is at least one BDP and the NIC paces at line rate. No DCQCN,
and no penalty the IBTA specification does not impose.

A connection with ``streams = k`` is ``k`` RC QPs with QPNs ``local_id .. local_id + k - 1``
(RC has one ordered stream per QP); ``paths`` is ignored (RC has one path per QP).
"""
from __future__ import annotations

import heapq
from collections import deque

from . import protocol as P
from .codec import AETH, BTH, IP, RETH, UDP, AtomicAck, AtomicETH, Eth, Frame
from .endpoint import Completion, Status, VerbsHost, WcOpcode
from .wire import Op

#: MR-GBN-003: AETH syndromes (IBTA 9.7.5.1).
AETH_ACK = 0x00
AETH_RNR = 0x20
AETH_NAK_SEQ = 0x60
AETH_NAK_INV = 0x61
AETH_NAK_ACCESS = 0x62
AETH_NAK_OP = 0x63

_FIRST, _MIDDLE, _LAST, _ONLY = 0, 1, 2, 3
_WRITE_OPS = {(_FIRST, False): Op.RC_WRITE_FIRST, (_MIDDLE, False): Op.RC_WRITE_MIDDLE,
              (_LAST, False): Op.RC_WRITE_LAST, (_LAST, True): Op.RC_WRITE_LAST_IMM,
              (_ONLY, False): Op.RC_WRITE_ONLY, (_ONLY, True): Op.RC_WRITE_ONLY_IMM}
_SEND_OPS = {(_FIRST, False): Op.RC_SEND_FIRST, (_MIDDLE, False): Op.RC_SEND_MIDDLE,
             (_LAST, False): Op.RC_SEND_LAST, (_LAST, True): Op.RC_SEND_LAST_IMM,
             (_ONLY, False): Op.RC_SEND_ONLY, (_ONLY, True): Op.RC_SEND_ONLY_IMM}
_WRITE_SET = frozenset(_WRITE_OPS.values())
_SEND_SET = frozenset(_SEND_OPS.values())
_FIRSTS = frozenset({Op.RC_WRITE_FIRST, Op.RC_WRITE_ONLY, Op.RC_WRITE_ONLY_IMM, Op.RC_SEND_FIRST,
                     Op.RC_SEND_ONLY, Op.RC_SEND_ONLY_IMM})
_LASTS = frozenset({Op.RC_WRITE_LAST, Op.RC_WRITE_LAST_IMM, Op.RC_WRITE_ONLY, Op.RC_WRITE_ONLY_IMM,
                    Op.RC_SEND_LAST, Op.RC_SEND_LAST_IMM, Op.RC_SEND_ONLY, Op.RC_SEND_ONLY_IMM})
_IMMS = frozenset({Op.RC_WRITE_LAST_IMM, Op.RC_WRITE_ONLY_IMM, Op.RC_SEND_LAST_IMM, Op.RC_SEND_ONLY_IMM})
_READ_RESP_OPS = {_FIRST: Op.RC_READ_RESP_FIRST, _MIDDLE: Op.RC_READ_RESP_MIDDLE,
                  _LAST: Op.RC_READ_RESP_LAST, _ONLY: Op.RC_READ_RESP_ONLY}
_READ_RESP_SET = frozenset(_READ_RESP_OPS.values())
_ATOMIC_OPS = frozenset({Op.RC_CMP_SWAP, Op.RC_FETCH_ADD})


class _Wr:
    __slots__ = ("write", "wr_id", "mv", "length", "va", "rkey", "imm", "npkts", "start", "done",
                 "status", "stream", "read", "got", "rewound", "atomic", "swap", "compare", "sseq")

    def __init__(self, write, wr_id, mv, length, va, rkey, imm, mtu, stream, read=False):
        self.write, self.wr_id, self.mv, self.length = write, wr_id, mv, length
        self.va, self.rkey, self.imm, self.stream = va, rkey, imm, stream
        # MR-GBN-020: a READ spans one PSN per response packet; mv is its local destination
        self.npkts = max(1, -(-length // mtu))
        self.start = None           # PSN of the first packet, fixed when first sent
        self.done = False
        self.status = Status.SUCCESS
        self.read = read
        self.atomic = None          # MR-GBN-023: RC_CMP_SWAP or RC_FETCH_ADD; mv is the 8-byte result
        self.swap = self.compare = 0
        self.got = 0                # READ/atomic: response packets placed, in order
        self.rewound = -1           # READ: the response index a re-issue was made for
        self.sseq = None            # IRN: the send's number among the QP's sends (models/irn.py)


class _Qp:
    """One RC queue pair: requester and responder halves."""

    def __init__(self, ep, conn, qpn, peer_addr, peer_qpn, stream, init_psn=0, peer_init_psn=0):
        self.ep, self.conn, self.qpn = ep, conn, qpn
        self.peer_addr, self.peer_qpn, self.stream = peer_addr, peer_qpn, stream
        self.entropy = P.entropy_for(qpn * 2654435761 + ep.seed)     # MR-GBN-001: fixed
        # requester
        self.sq = deque()           # posted, not completed
        # IBTA sq_psn / rq_psn, given when the QP is connected (MR-CONN-107)
        self.una = init_psn         # oldest unacknowledged PSN
        self.psn = init_psn         # next PSN to transmit (rewinds on NAK/timeout)
        self.max_psn = init_psn     # one past the highest PSN ever sent
        self.cur = 0                # index in sq of the message holding self.psn
        self.cur_pkt = 0
        self.deadline = None
        self.tq = False
        self.retries = ep.retry_cnt
        self.rnr_left = ep.rnr_retry
        self.since_req = 0
        self.rnr_until = 0.0
        self.error = False
        self.in_ready = False
        # MR-GBN-030/031: adaptive timeout state (used with adaptive_rto only)
        self.srtt = self.rttvar = None
        self.rtt_psn = self.rtt_t = None
        self.backoff = 0
        # responder
        self.epsn = peer_init_psn
        self.msn = 0
        self.nak_sent = False
        self.rx_write = None        # (buf, va, length, offset) of the write in progress
        self.rx_send = None         # [wr_id, buf, base, length, offset] of the send in progress
        self.rq = deque()
        # READ responses: [data, first PSN, packets to send, next, packets, re-issued] (MR-GBN-021)
        self.rsp = deque()
        self.after_rsp = deque()    # MR-GBN-025: ACKs/NAKs held behind queued READ responses
        # MR-GBN-024: (PSN, original value) of the last max_rd_atomic atomics executed
        self.atomic_saved = deque(maxlen=ep.max_rd_atomic)

    # -- requester -----------------------------------------------------------------------------

    def _locate(self, psn):
        """Point the send cursor at ``psn`` (MR-GBN-005: go back N)."""
        for k, w in enumerate(self.sq):
            if w.start is None:
                break
            off = P.psn_dist(w.start, psn)
            if 0 <= off < w.npkts:
                self.cur, self.cur_pkt, self.psn = k, off, psn
                return
        self.cur, self.cur_pkt, self.psn = len(self.sq), 0, psn
        for k, w in enumerate(self.sq):
            if w.start is None:
                self.cur = k
                break

    def next_frame(self, now):
        ep = self.ep
        if self.rsp:
            return self._next_resp()
        if self.after_rsp:                  # MR-GBN-025
            ep.stats["packets_sent"] += 1
            return self.after_rsp.popleft()
        if self.error or now < self.rnr_until:
            return None
        if self.cur >= len(self.sq):
            return None
        if P.psn_dist(self.una, self.psn) >= ep.window_pkts:
            return None
        w = self.sq[self.cur]
        i = self.cur_pkt
        if w.start is None:
            w.start = self.psn
        if w.read:
            return self._read_request(w, i, now)
        if w.atomic is not None:
            return self._atomic_request(w, now)
        psn = self.psn
        retx = P.psn_dist(psn, self.max_psn) > 0
        f = self._data_frame(w, i, psn)
        self.psn = (psn + 1) & P.PSN_MASK
        if not retx:
            self.max_psn = self.psn
            if f.bth.ack_req and self.rtt_psn is None:
                self.rtt_psn, self.rtt_t = psn, now       # MR-GBN-030: one timed PSN at a time
        else:
            ep.stats["retransmitted"] += 1
        self.cur_pkt += 1
        if self.cur_pkt >= w.npkts:
            self.cur += 1
            self.cur_pkt = 0
        if self.deadline is None:
            ep._arm(self, now + self.rto())
        ep.stats["packets_sent"] += 1
        ep.stats["data_packets_sent"] += 1
        return f

    def _data_frame(self, w, i, psn):
        """Packet ``i`` of WRITE/SEND ``w`` with PSN ``psn`` (MR-GBN-002, AckReq MR-GBN-011)."""
        ep = self.ep
        off = i * ep.mtu
        n = min(ep.mtu, w.length - off)
        pos = _ONLY if w.npkts == 1 else _FIRST if i == 0 else _LAST if i == w.npkts - 1 else _MIDDLE
        imm = w.imm is not None and pos in (_LAST, _ONLY)
        op = (_WRITE_OPS if w.write else _SEND_OPS)[(pos, imm)]
        self.since_req += 1
        ack_req = pos in (_LAST, _ONLY) or self.since_req >= ep.ack_req_every
        if ack_req:
            self.since_req = 0
        return Frame(eth=Eth(), ip=IP(src=ep.addr, dst=self.peer_addr, ecn=2), udp=UDP(sport=self.entropy),
                     bth=BTH(opcode=op, dest_qp=self.peer_qpn, ack_req=1 if ack_req else 0, psn=psn),
                     reth=RETH(w.va, w.rkey, w.length) if w.write and pos in (_FIRST, _ONLY) else None,
                     imm=w.imm if imm else None, payload=bytes(w.mv[off:off + n]))

    def rto(self):
        """The ACK timeout the QP arms now: the IBTA's fixed 4.096 us x 2^t (MR-GBN-006), or
        the adaptive one (MR-GBN-030/031)."""
        ep = self.ep
        if not ep.adaptive_rto:
            return ep.ack_timeout
        base = ep.rto_initial if self.srtt is None else max(ep.rto_min, self.srtt + 4 * self.rttvar)
        return min(ep.ack_timeout, base * (1 << self.backoff))

    def _rtt_sample(self, now):
        """MR-GBN-030: the timed PSN is acknowledged: one RTT sample (RFC 6298 estimator)."""
        r = now - self.rtt_t
        self.rtt_psn = None
        if self.srtt is None:
            self.srtt, self.rttvar = r, r / 2
        else:
            self.rttvar += (abs(self.srtt - r) - self.rttvar) / 4
            self.srtt += (r - self.srtt) / 8
        self.ep.stats["rtt_samples"] += 1

    def _request_sent(self, f, now):
        """Bookkeeping after a one-packet request (READ REQUEST, atomic): the work request is
        fully sent, the next one starts with a fresh AckReq count, and the ACK timer runs."""
        ep = self.ep
        self.cur += 1
        self.cur_pkt = 0
        self.since_req = 0
        if self.deadline is None:
            ep._arm(self, now + self.rto())
        ep.stats["packets_sent"] += 1
        ep.stats["data_packets_sent"] += 1
        return f

    def _read_request(self, w, i, now):
        """MR-GBN-020: one READ REQUEST covers the READ's remaining response PSNs; a re-issue
        from response ``i`` asks for the rest only (VA and length moved on)."""
        ep = self.ep
        psn = self.psn
        off = i * ep.mtu
        retx = P.psn_dist(psn, self.max_psn) > 0
        f = Frame(eth=Eth(), ip=IP(src=ep.addr, dst=self.peer_addr, ecn=2), udp=UDP(sport=self.entropy),
                  bth=BTH(opcode=Op.RC_READ_REQUEST, dest_qp=self.peer_qpn, ack_req=1, psn=psn),
                  reth=RETH(w.va + off, w.rkey, w.length - off))
        self.psn = (psn + w.npkts - i) & P.PSN_MASK
        if P.psn_dist(self.max_psn, self.psn) > 0:
            self.max_psn = self.psn
        if retx:
            ep.stats["retransmitted"] += 1
        return self._request_sent(f, now)

    def _atomic_request(self, w, now):
        """MR-GBN-023: COMPARE_SWAP / FETCH_ADD with AtomicETH, one PSN, AckReq set."""
        ep = self.ep
        psn = self.psn
        retx = P.psn_dist(psn, self.max_psn) > 0
        f = Frame(eth=Eth(), ip=IP(src=ep.addr, dst=self.peer_addr, ecn=2), udp=UDP(sport=self.entropy),
                  bth=BTH(opcode=w.atomic, dest_qp=self.peer_qpn, ack_req=1, psn=psn),
                  atomiceth=AtomicETH(w.va, w.rkey, w.swap, w.compare))
        self.psn = (psn + 1) & P.PSN_MASK
        if retx:
            ep.stats["retransmitted"] += 1
        else:
            self.max_psn = self.psn
        return self._request_sent(f, now)

    def on_atomic_ack(self, f, now):
        """MR-GBN-023: the ATOMIC ACKNOWLEDGE of the atomic at its PSN carries the original
        value; it implies the ACK of every PSN before it. Any other is a duplicate."""
        ep = self.ep
        psn = f.bth.psn
        if f.atomicack is None or P.psn_dist(self.una, psn) < 0 or P.psn_dist(psn, self.max_psn) <= 0:
            ep._drop("duplicate_atomic_ack")
            return
        w = None
        for x in self.sq:
            if x.start is None:
                break
            if x.start == psn:
                w = x
                break
        if w is None or w.atomic is None:
            ep._drop("unexpected_atomic_ack")
            return
        if not w.got:               # a repeated result (resent from the saved one) places nothing
            w.mv[0:8] = f.atomicack.orig.to_bytes(8, "little")
            w.got = 1
        ep.stats["acks_received"] += 1
        self._acked_through(psn)
        self._rearm(now)
        ep._make_ready(self)

    def _acked_through(self, psn):
        """Everything up to ``psn`` inclusive is acknowledged: complete WRs (MR-GBN-007).
        MR-GBN-022: an ACK never covers READ responses that have not arrived; the READ is
        re-issued from its first missing response instead."""
        nxt = (psn + 1) & P.PSN_MASK
        if P.psn_dist(self.una, nxt) <= 0:
            return False
        if P.psn_dist(nxt, self.max_psn) < 0:
            self.ep._drop("bad_ack")
            return False
        ep = self.ep
        missing = None
        while self.sq:
            w = self.sq[0]
            if w.start is None:
                break
            if (w.read or w.atomic is not None) and w.got < w.npkts:
                gap = (w.start + w.got) & P.PSN_MASK
                if P.psn_dist(gap, nxt) > 0:
                    nxt = missing = gap
                break
            if P.psn_dist(nxt, (w.start + w.npkts) & P.PSN_MASK) > 0:
                break
            self.sq.popleft()
            self.cur -= 1
            ep._complete(self, w)
        if P.psn_dist(self.una, nxt) <= 0 and missing is None:
            return False
        if P.psn_dist(self.una, nxt) > 0:
            self.una = nxt
        if missing is not None:
            self.sq[0].rewound = self.sq[0].got
            self._locate(missing)
        if self.cur < 0:
            self.cur, self.cur_pkt = 0, 0
        if P.psn_dist(self.psn, self.una) > 0:
            self._locate(self.una)
        self.retries = ep.retry_cnt
        self.rnr_left = ep.rnr_retry
        return True

    def on_read_resp(self, f, now):
        """MR-GBN-021, MR-GBN-022: READ responses are accepted in PSN order only; each implies
        the ACK of every PSN before it. The first response out of order makes the requester
        re-issue the READ from its first missing response (go-back-N); later ones are dropped."""
        ep = self.ep
        psn = f.bth.psn
        if P.psn_dist(self.una, psn) < 0 or P.psn_dist(psn, self.max_psn) <= 0:
            ep._drop("duplicate_read_response")
            return
        w = None
        for x in self.sq:
            if x.start is None:
                break
            if 0 <= P.psn_dist(x.start, psn) < x.npkts:
                w = x
                break
        if w is None or not w.read:
            ep._drop("unexpected_read_response")
            return
        k = P.psn_dist(w.start, psn)
        if k != w.got:
            if k > w.got:
                ep._drop("out_of_sequence")
                if w.rewound != w.got:
                    w.rewound = w.got
                    gap = (w.start + w.got) & P.PSN_MASK
                    self._acked_through((gap - 1) & P.PSN_MASK)
                    ep.stats["read_reissued"] += 1
                    if not self._retry(now):
                        return
                    self._locate(gap)
                    ep._make_ready(self)
            else:
                ep._drop("duplicate_read_response")
            return
        mtu = ep.mtu
        n = len(f.payload)
        last = k == w.npkts - 1
        ends = f.bth.opcode == Op.RC_READ_RESP_LAST or f.bth.opcode == Op.RC_READ_RESP_ONLY
        if n != (w.length - k * mtu if last else mtu) or ends != last:
            ep._drop("bad_read_response")
            return
        w.mv[k * mtu:k * mtu + n] = f.payload
        w.got += 1
        ep.stats["bytes_placed"] += n
        ep.stats["rx_data_packets"] += 1
        self._acked_through(psn)
        self._rearm(now)
        ep._make_ready(self)

    def on_ack(self, f, now):
        ep = self.ep
        syn = f.aeth.syndrome
        psn = f.bth.psn
        ep.stats["acks_received"] += 1
        if syn >> 5 == 0:
            progress = self._acked_through(psn)
        elif syn == AETH_NAK_SEQ:
            # MR-GBN-005: PSN is the responder's expected PSN; all before it arrived.
            ep.stats["naks_received"] += 1
            ep.stats["nak_psn_sequence"] += 1
            progress = self._acked_through((psn - 1) & P.PSN_MASK)
            if P.psn_dist(self.una, self.max_psn) > 0 and not self._retry(now):
                return
            self._locate(self.una)
            self.rtt_psn = None         # Karn: the timed PSN may be sent again
            progress = True
        elif syn >> 5 == 1:
            ep.stats["naks_received"] += 1
            ep.stats["nak_rnr"] += 1
            progress = self._acked_through((psn - 1) & P.PSN_MASK)
            if ep.rnr_retry < 7:            # MR-GBN-013: 7 means retry for ever (IBTA)
                self.rnr_left -= 1
                if self.rnr_left < 0:
                    self._fail_all(Status.RNR_RETRY_EXC_ERR)
                    return
            self._locate(self.una)
            self.rnr_until = now + ep.rnr_delay
            ep._push(self.rnr_until, 1, self)
        else:
            ep.stats["naks_received"] += 1
            ep.stats["nak_fatal"] += 1
            self._acked_through((psn - 1) & P.PSN_MASK)
            status = Status.REM_ACCESS_ERR if syn == AETH_NAK_ACCESS else \
                Status.REM_INV_REQ_ERR if syn == AETH_NAK_INV else Status.REM_OP_ERR
            self._fail_all(status)
            return
        if progress:
            self._rearm(now)
        ep._make_ready(self)

    def _rearm(self, now):
        """After progress: the ACK timer restarts while PSNs are outstanding, else stops."""
        if self.rtt_psn is not None and P.psn_dist(self.rtt_psn, self.una) > 0:
            self._rtt_sample(now)
        self.backoff = 0                # MR-GBN-031: progress ends the backoff
        if P.psn_dist(self.una, self.max_psn) > 0:
            self.ep._arm(self, now + self.rto())
        else:
            self.deadline = None

    def _retry(self, now):
        self.retries -= 1
        if self.retries < 0:
            self._fail_all(Status.RETRY_EXC_ERR)   # MR-GBN-008
            return False
        return True

    def _fail_all(self, status):
        """MR-GBN-009: the QP enters the error state; outstanding WRs complete in error."""
        self.error = True
        self.deadline = None
        first = True
        while self.sq:
            w = self.sq.popleft()
            w.status = status if first else Status.REM_OP_ERR
            first = False
            self.ep._complete(self, w)
        self.cur = self.cur_pkt = 0

    def on_timeout(self, now):
        """MR-GBN-006: local ACK timeout: go back to the oldest unacknowledged PSN."""
        ep = self.ep
        ep.stats["timeouts"] += 1
        if P.psn_dist(self.una, self.max_psn) <= 0:
            return
        if not self._retry(now):
            return
        self._locate(self.una)
        self.rtt_psn = None             # Karn: no sample across a resend
        if ep.adaptive_rto and self.rto() < ep.ack_timeout:
            self.backoff += 1           # MR-GBN-031: doubles up to the IBTA timeout
        ep._arm(self, now + self.rto())
        ep._make_ready(self)

    # -- responder -----------------------------------------------------------------------------

    def on_data(self, f, now):
        ep = self.ep
        st = ep.stats
        psn = f.bth.psn
        d = P.psn_dist(self.epsn, psn)
        if f.bth.opcode == Op.RC_READ_REQUEST and d <= 0:
            self._on_read_request(f, d < 0)
            return
        if f.bth.opcode in _ATOMIC_OPS and d <= 0:
            self._on_atomic(f, d < 0)
            return
        if d < 0:
            st["duplicates"] += 1              # MR-GBN-004: duplicate: re-acknowledge
            if f.bth.ack_req:
                ep._send_aeth(self, AETH_ACK, (self.epsn - 1) & P.PSN_MASK, f)
            return
        if d > 0:
            ep._drop("out_of_sequence")        # MR-GBN-004: one NAK, then silent drops
            if not self.nak_sent:
                self.nak_sent = True
                ep._send_aeth(self, AETH_NAK_SEQ, self.epsn, f)
            return
        syn = self._place(f)
        if syn is not None:
            if syn == AETH_RNR:
                ep._drop("rnr")
                ep._send_aeth(self, AETH_RNR | 1, self.epsn, f)
            else:
                ep._drop("access" if syn == AETH_NAK_ACCESS else "invalid_request")
                ep._send_aeth(self, syn, self.epsn, f)
            return
        self.epsn = (self.epsn + 1) & P.PSN_MASK
        self.nak_sent = False
        st["rx_data_packets"] += 1
        if f.ip.ecn == 3:
            st["ce_received"] += 1
        if f.bth.ack_req:
            ep._send_aeth(self, AETH_ACK, psn, f)

    def _on_read_request(self, f, dup):
        """MR-GBN-021: the responder checks key and bounds (NAK remote access error), reads the
        memory and queues the responses, PSNs from the request's; the expected PSN moves past
        them. A duplicate request (the requester re-issued it) is executed again from its own
        PSN, VA and length, and replaces any queued responses from that PSN on."""
        ep = self.ep
        r = f.reth
        mr = ep._mrs.get(r.rkey)
        psn = f.bth.psn
        chk = P.check_access(None if mr is None else len(mr[0]), 0 if mr is None else mr[1],
                             P.ACCESS_REMOTE_READ, r.va, r.dma_len)
        if chk is not None:
            ep._drop("access")
            if not dup:
                ep._send_aeth(self, AETH_NAK_ACCESS, self.epsn, f)
            return
        n = max(1, -(-r.dma_len // ep.mtu))
        if dup:
            ep.stats["duplicates"] += 1
            for e in list(self.rsp):            # responses from psn on are replaced
                k = P.psn_dist(e[1], psn)
                if k <= 0:
                    self.rsp.remove(e)
                elif k < e[2]:
                    e[2] = k
        else:
            self.epsn = (psn + n) & P.PSN_MASK
            self.msn = (self.msn + 1) & 0xFFFFFF
            self.nak_sent = False
            ep.stats["rx_data_packets"] += 1
        self.rsp.append([bytes(mr[0][r.va:r.va + r.dma_len]), psn, n, 0, n, dup])
        ep._make_ready(self)

    def _on_atomic(self, f, dup):
        """MR-GBN-023, MR-GBN-024: an atomic at the expected PSN is checked (8-byte aligned VA,
        else NAK invalid request; key with ACCESS_REMOTE_ATOMIC and bounds, else NAK remote
        access error), executed, and answered by an ATOMIC ACKNOWLEDGE; its result is saved. A
        duplicate atomic is never executed again: its saved result is sent again; if the result
        is no longer saved (older than the last ``max_rd_atomic`` atomics of the QP) it is NAKed
        invalid request."""
        ep = self.ep
        psn = f.bth.psn
        if dup:
            ep.stats["duplicates"] += 1
            for p, orig in self.atomic_saved:
                if p == psn:
                    ep.stats["atomic_results_resent"] += 1
                    ep._send_atomic_ack(self, psn, orig, f)
                    return
            ep._drop("atomic_result_gone")
            ep._send_aeth(self, AETH_NAK_INV, psn, f)
            return
        a = f.atomiceth
        mr = ep._mrs.get(a.rkey)
        if a.va % 8:
            syn = AETH_NAK_INV
        elif P.check_access(None if mr is None else len(mr[0]), 0 if mr is None else mr[1],
                            P.ACCESS_REMOTE_ATOMIC, a.va, 8) is not None:
            syn = AETH_NAK_ACCESS
        else:
            syn = None
        if syn is not None:
            ep._drop("access" if syn == AETH_NAK_ACCESS else "invalid_request")
            ep._send_aeth(self, syn, self.epsn, f)
            return
        buf = mr[0]
        orig = int.from_bytes(buf[a.va:a.va + 8], "little")
        new = P.atomic_apply(f.bth.opcode == Op.RC_CMP_SWAP, orig, a.swap, a.compare)
        buf[a.va:a.va + 8] = new.to_bytes(8, "little")
        ep.stats["atomics_executed"] += 1
        self.atomic_saved.append((psn, orig))
        self.epsn = (psn + 1) & P.PSN_MASK
        self.msn = (self.msn + 1) & 0xFFFFFF
        self.nak_sent = False
        ep.stats["rx_data_packets"] += 1
        ep._send_atomic_ack(self, psn, orig, f)

    def _next_resp(self):
        """MR-GBN-021: the next READ response packet (FIRST/MIDDLE/LAST with AETH on FIRST and
        LAST, or ONLY), ahead of the QP's own requests."""
        ep = self.ep
        e = self.rsp[0]
        data, start, n, i, full, again = e
        mtu = ep.mtu
        # positions within the whole response; a truncated one (replaced) ends without its LAST
        pos = _ONLY if full == 1 else _FIRST if i == 0 else _LAST if i == full - 1 else _MIDDLE
        f = Frame(eth=Eth(), ip=IP(src=ep.addr, dst=self.peer_addr, ecn=2), udp=UDP(sport=self.entropy),
                  bth=BTH(opcode=_READ_RESP_OPS[pos], dest_qp=self.peer_qpn, psn=(start + i) & P.PSN_MASK),
                  aeth=AETH(AETH_ACK, self.msn) if pos != _MIDDLE else None,
                  payload=data[i * mtu:(i + 1) * mtu])
        e[3] = i + 1
        if e[3] >= n:
            self.rsp.popleft()
        ep.stats["packets_sent"] += 1
        ep.stats["data_packets_sent"] += 1
        ep.stats["read_responses_sent"] += 1
        if again:
            ep.stats["retransmitted"] += 1     # a response sent again for a re-issued READ
        return f

    def _place(self, f):
        ep = self.ep
        op = f.bth.opcode
        n = len(f.payload)
        if op in _WRITE_SET:
            if op in _FIRSTS:
                if self.rx_write is not None or self.rx_send is not None:
                    return AETH_NAK_INV
                r = f.reth
                mr = ep._mrs.get(r.rkey)
                chk = P.check_access(None if mr is None else len(mr[0]), 0 if mr is None else mr[1],
                                     P.ACCESS_REMOTE_WRITE, r.va, r.dma_len)
                if chk is not None:
                    return AETH_NAK_ACCESS
                ctx = [mr[0], r.va, r.dma_len, 0]
            else:
                ctx = self.rx_write
                if ctx is None:
                    return AETH_NAK_INV
            buf, va, length, off = ctx
            last = op in _LASTS
            if off + n > length or (not last and n != ep.mtu) or (last and off + n != length):
                return AETH_NAK_INV
            buf[va + off:va + off + n] = f.payload
            ctx[3] = off + n
            st = ep.stats
            st["bytes_placed"] += n
            self.rx_write = None if last else ctx
            if last:
                self.msn = (self.msn + 1) & 0xFFFFFF
                if op in _IMMS:
                    ep._cq.append(Completion(None, Status.SUCCESS, WcOpcode.RECV_RDMA_WITH_IMM, length,
                                             self.conn.local_id, self.stream, f.imm))
                    st["completions"] += 1
            return None
        if op in _SEND_SET:
            if op in _FIRSTS:
                if self.rx_write is not None or self.rx_send is not None:
                    return AETH_NAK_INV
                if not self.rq:
                    return AETH_RNR
                wr_id, lkey, loff, rlen = self.rq[0]
                mr = ep._mrs.get(lkey)
                if mr is None:
                    return AETH_NAK_ACCESS
                ctx = [wr_id, mr[0], loff, rlen, 0]
            else:
                ctx = self.rx_send
                if ctx is None:
                    return AETH_NAK_INV
            wr_id, buf, base, rlen, off = ctx
            last = op in _LASTS
            if off + n > rlen or (not last and n != ep.mtu):
                return AETH_NAK_INV
            if op in _FIRSTS:
                self.rq.popleft()
            buf[base + off:base + off + n] = f.payload
            ctx[4] = off + n
            ep.stats["bytes_placed"] += n
            self.rx_send = None if last else ctx
            if last:
                self.msn = (self.msn + 1) & 0xFFFFFF
                ep._cq.append(Completion(wr_id, Status.SUCCESS, WcOpcode.RECV, off + n,
                                         self.conn.local_id, self.stream, f.imm if op in _IMMS else None))
                ep.stats["completions"] += 1
            return None
        return AETH_NAK_INV


class RoceConnection:
    """A group of RC QPs, one per stream, behind the MetaRoCE connection interface."""

    def __init__(self, ep, local_id, peer_addr, peer_id, streams, init_psn=0, peer_init_psn=0):
        self.ep, self.local_id, self.peer_addr, self.peer_id = ep, local_id, peer_addr, peer_id
        self.qps = [ep.QP_CLASS(ep, self, local_id + s, peer_addr, peer_id + s, s, init_psn, peer_init_psn)
                    for s in range(streams)]

    def _qp(self, stream):
        if not 0 <= stream < len(self.qps):
            raise ValueError(f"stream {stream} out of range 0..{len(self.qps) - 1}")
        return self.qps[stream]

    def post_write(self, stream, lkey, loffset, length, remote_va, rkey, wr_id, imm=None):
        qp = self._qp(stream)
        buf, _ = self.ep._local_mr(lkey, loffset, length)
        qp.sq.append(_Wr(True, wr_id, memoryview(buf)[loffset:loffset + length], length, remote_va,
                         rkey, imm, self.ep.mtu, stream))
        self.ep._make_ready(qp)

    def post_send(self, stream, lkey, loffset, length, wr_id, imm=None):
        qp = self._qp(stream)
        buf, _ = self.ep._local_mr(lkey, loffset, length)
        qp.sq.append(_Wr(False, wr_id, memoryview(buf)[loffset:loffset + length], length, 0, 0, imm,
                         self.ep.mtu, stream))
        self.ep._make_ready(qp)

    def post_read(self, stream, lkey, loffset, length, remote_va, rkey, wr_id):
        """RDMA READ (MR-GBN-020): ``length`` bytes at ``remote_va`` of region ``rkey``."""
        qp = self._qp(stream)
        buf, access = self.ep._local_mr(lkey, loffset, length)
        if not access & P.ACCESS_LOCAL_WRITE:
            raise ValueError("READ destination needs ACCESS_LOCAL_WRITE")
        qp.sq.append(_Wr(False, wr_id, memoryview(buf)[loffset:loffset + length], length, remote_va,
                         rkey, None, self.ep.mtu, stream, read=True))
        self.ep._make_ready(qp)

    def post_atomic(self, stream, kind, lkey, loffset, remote_va, rkey, wr_id, *, add=0, compare=0,
                    swap=0):
        """IBTA COMPARE_SWAP / FETCH_ADD (MR-GBN-023); the same arguments as MetaRoCE's."""
        if kind not in ("fetch_add", "cmp_swap"):
            raise ValueError(f"atomic kind must be 'fetch_add' or 'cmp_swap', got {kind!r}")
        for name, v in (("add", add), ("compare", compare), ("swap", swap)):
            if not 0 <= v <= P.U64_MASK:
                raise ValueError(f"{name} must be a 64-bit unsigned value")
        qp = self._qp(stream)
        buf, access = self.ep._local_mr(lkey, loffset, 8)
        if not access & P.ACCESS_LOCAL_WRITE:
            raise ValueError("atomic result buffer needs ACCESS_LOCAL_WRITE")
        w = _Wr(False, wr_id, memoryview(buf)[loffset:loffset + 8], 8, remote_va, rkey, None,
                self.ep.mtu, stream)
        cas = kind == "cmp_swap"
        w.atomic = Op.RC_CMP_SWAP if cas else Op.RC_FETCH_ADD
        w.swap, w.compare = (swap, compare) if cas else (add, 0)
        qp.sq.append(w)
        self.ep._make_ready(qp)

    def post_recv(self, stream, lkey, loffset, length, wr_id):
        qp = self._qp(stream)
        self.ep._local_mr(lkey, loffset, length)
        qp.rq.append((wr_id, lkey, loffset, length))


class RoceEndpoint(VerbsHost):
    """RoCEv2 RC go-back-N endpoint (MR-GBN-001..012), same interface as ``Endpoint``.

    ``RoceEndpoint(addr, *, mtu=4096, line_rate_bps=400e9, **config)``. Keyword arguments:

    - ``base_rtt`` (10e-6): for the window size only.
    - ``window_bdp`` (2.0): outstanding PSN window in BDPs (at least 1, MR-GBN-010).
    - ``timeout_exp`` (8): local ACK timeout 4.096 us x 2^timeout_exp (IBTA; 8 gives 1.05 ms,
      well below the 14-20 that deployments commonly configure) (MR-GBN-006).
    - ``retry_cnt`` (7): retries without progress before ``RETRY_EXC_ERR`` (MR-GBN-008).
    - ``ack_req_every`` (16): AckReq on every this many packets and on each message's last.
    - ``rnr_delay`` (10e-6): wait after an RNR NAK.
    - ``rnr_retry`` (7): RNR NAKs without progress before RNR_RETRY_EXC_ERR; 7 means for ever,
      as in the IBTA (MR-GBN-013).
    - ``seed`` (0): varies the QPs' fixed entropy.
    - ``rng`` (None): a ``random.Random`` for the R_Keys (MR-SEC-152); None: ``secrets``.
    - ``max_rd_atomic`` (16): atomic results a responder QP keeps for duplicate requests
      (MR-GBN-024).
    - ``adaptive_rto`` (False): the vendor NICs' short, adaptive ACK timeout instead of the fixed
      IBTA one (MR-GBN-030, MR-GBN-031): ``max(rto_min, srtt + 4 x rttvar)`` from measured ACK
      round trips, ``rto_initial`` before the first sample, doubled per timeout without
      progress, never above the IBTA timeout (``timeout_exp``).
    - ``rto_min`` (4.096 us x 2^2 = 16.4 us), ``rto_initial`` (4.096 us x 2^3 = 32.8 us).
    """

    #: The protocol name the baseline reports (scenario files and benchmarks).
    NAME = "rocev2"
    QP_CLASS = _Qp
    CONNECTION_CLASS = RoceConnection

    def __init__(self, addr="10.0.0.1", *, mtu=4096, line_rate_bps=400e9, base_rtt=10e-6,
                 window_bdp=2.0, timeout_exp=8, retry_cnt=7, ack_req_every=16, rnr_delay=10e-6,
                 rnr_retry=7, seed=0, max_rd_atomic=16, rng=None, adaptive_rto=False,
                 rto_min=4.096e-6 * 4, rto_initial=4.096e-6 * 8):
        if mtu not in (256, 512, 1024, 2048, 4096):
            raise ValueError("RoCEv2 path MTU is 256, 512, 1024, 2048 or 4096")
        if not 0 <= timeout_exp <= 31:
            raise ValueError("timeout_exp is 0..31 (IBTA 5-bit field)")
        if not 0 <= retry_cnt <= 7:
            raise ValueError("retry_cnt is 0..7 (IBTA 3-bit field)")
        if not isinstance(max_rd_atomic, int) or not 1 <= max_rd_atomic <= 255:
            raise ValueError("max_rd_atomic is 1..255")
        if not 0 <= rnr_retry <= 7:
            raise ValueError("rnr_retry is 0..7 (IBTA 3-bit field, 7 = for ever)")
        self.addr = addr
        self.mtu = mtu
        self.line_rate_bps = float(line_rate_bps)
        self.base_rtt = base_rtt
        bdp_pkts = self.line_rate_bps / 8 * base_rtt / mtu
        self.window_pkts = min(P.PSN_HALF - 1, max(int(-(-bdp_pkts * window_bdp // 1)), int(bdp_pkts) + 1, 2))
        self.timeout_exp = timeout_exp
        self.ack_timeout = 4.096e-6 * (1 << timeout_exp)
        self.retry_cnt = retry_cnt
        self.ack_req_every = ack_req_every
        self.rnr_delay = rnr_delay
        self.rnr_retry = rnr_retry
        self.max_rd_atomic = max_rd_atomic
        if not 0 < rto_min <= rto_initial:
            raise ValueError("adaptive timeout needs 0 < rto_min <= rto_initial")
        self.adaptive_rto = bool(adaptive_rto)
        self.rto_min, self.rto_initial = float(rto_min), float(rto_initial)
        self.seed = seed
        self._init_host(rng)      # MR-SEC-152: R_Keys from rng (None: secrets)
        self._qps = {}

    def params(self):
        """The baseline's parameters, printed with benchmark results (MR-GBN-012)."""
        out = {"protocol": "rocev2-rc-gbn", "mtu": self.mtu, "window_pkts": self.window_pkts,
               "ack_timeout_us": self.ack_timeout * 1e6, "timeout_exp": self.timeout_exp,
               "retry_cnt": self.retry_cnt, "ack_req_every": self.ack_req_every, "dcqcn": False}
        if self.adaptive_rto:
            out.update(protocol="rocev2-rc-gbn-adaptive-rto", adaptive_rto=True,
                       rto_min_us=self.rto_min * 1e6, rto_initial_us=self.rto_initial * 1e6,
                       rto="max(rto_min, srtt + 4 rttvar) x 2^timeouts, <= ack_timeout",
                       models="NVIDIA ConnectX adaptive retransmission (ADP): short initial "
                              "timeout, doubled per retry, capped by the QP's ack_timeout")
        return out

    def connect(self, local_id, peer_addr, peer_id, *, paths=1, streams=1, init_psn=None, peer_init_psn=None):
        """Connect ``streams`` RC QPs. ``init_psn``/``peer_init_psn``: the QPs' sq_psn and rq_psn
        (MR-CONN-107; ``None``: 0)."""
        for name, psn in (("init_psn", init_psn), ("peer_init_psn", peer_init_psn)):
            if psn is not None and (not isinstance(psn, int) or not 0 <= psn <= P.PSN_MASK):
                raise ValueError(f"{name} is 24-bit, got {psn!r}")
        for s in range(streams):
            if local_id + s in self._qps:
                raise ValueError(f"QPN {local_id + s} already in use")
        if local_id + streams > 1 << 24 or peer_id + streams > 1 << 24:
            raise ValueError("QPNs are 24-bit")
        c = self.CONNECTION_CLASS(self, local_id, peer_addr, peer_id, streams, init_psn or 0, peer_init_psn or 0)
        for qp in c.qps:
            self._qps[qp.qpn] = qp
        return c

    def _serve(self, qp, now):
        return qp.next_frame(now)

    def next_wakeup(self, now):
        if self._ctrl or self._ready:
            return now
        t = self._timers
        while t:
            d, _, kind, qp = t[0]
            if kind == 0 and qp.deadline is None:
                heapq.heappop(t)
                qp.tq = False
                continue
            return max(d, now)
        return None

    def receive(self, frame, now):
        self._run_timers(now)
        qp = self._qps.get(frame.bth.dest_qp)
        if qp is None:
            self._drop("no_connection")
            return
        if frame.ip.src != qp.peer_addr:
            self._drop("bad_peer")
            return
        op = frame.bth.opcode
        if op == Op.RC_ACK and frame.aeth is not None:
            qp.on_ack(frame, now)
        elif op in _READ_RESP_SET:
            qp.on_read_resp(frame, now)
        elif op == Op.RC_ATOMIC_ACK and frame.aeth is not None:
            qp.on_atomic_ack(frame, now)
        elif op in _WRITE_SET or op in _SEND_SET or op == Op.RC_READ_REQUEST or op in _ATOMIC_OPS:
            qp.on_data(frame, now)
        else:
            self._drop("unexpected_opcode")

    # -- internals -------------------------------------------------------------------------------

    def _push(self, t, kind, qp):
        self._tseq += 1
        heapq.heappush(self._timers, (t, self._tseq, kind, qp))

    def _arm(self, qp, deadline):
        qp.deadline = deadline
        if not qp.tq:
            qp.tq = True
            self._push(deadline, 0, qp)

    def _run_timers(self, now):
        t = self._timers
        while t and t[0][0] <= now:
            _, _, kind, qp = heapq.heappop(t)
            if kind == 1:
                self._make_ready(qp)
                continue
            qp.tq = False
            dl = qp.deadline
            if dl is None:
                continue
            if dl > now:
                qp.tq = True
                self._push(dl, 0, qp)
                continue
            qp.deadline = None
            qp.on_timeout(now)

    def _complete(self, qp, w):
        op = WcOpcode.RDMA_READ if w.read else WcOpcode.RDMA_WRITE if w.write else WcOpcode.SEND
        if w.atomic is not None:
            op = WcOpcode.COMP_SWAP if w.atomic == Op.RC_CMP_SWAP else WcOpcode.FETCH_ADD
        self._cq.append(Completion(w.wr_id, w.status, op, w.length, qp.conn.local_id, qp.stream, None))
        self.stats["completions"] += 1

    def _respond(self, qp, frame):
        """MR-GBN-025: a responder's ACKs, NAKs and ATOMIC ACKs leave after the READ responses
        it queued before them (each implies the acknowledgement of every PSN before its own)."""
        if qp.rsp:
            qp.after_rsp.append(frame)
            self._make_ready(qp)
        else:
            self._ctrl.append(frame)
        return frame

    def _send_atomic_ack(self, qp, psn, orig, f):
        """MR-GBN-023: ATOMIC ACKNOWLEDGE (0x12): AETH and AtomicAckETH with the original value."""
        self.stats["acks_sent"] += 1
        return self._respond(qp, Frame(eth=Eth(), ip=IP(src=self.addr, dst=qp.peer_addr, ecn=0),
                                       udp=UDP(sport=f.udp.sport),
                                       bth=BTH(opcode=Op.RC_ATOMIC_ACK, dest_qp=qp.peer_qpn, psn=psn),
                                       aeth=AETH(AETH_ACK, qp.msn), atomicack=AtomicAck(orig)))

    def _send_aeth(self, qp, syndrome, psn, f):
        """MR-GBN-003: ACK/NAK with AETH (syndrome, MSN); BTH PSN is the PSN acknowledged/expected."""
        if syndrome >> 5:
            self.stats["naks_sent"] += 1
        else:
            self.stats["acks_sent"] += 1
        return self._respond(qp, Frame(eth=Eth(), ip=IP(src=self.addr, dst=qp.peer_addr, ecn=0),
                                       udp=UDP(sport=f.udp.sport),
                                       bth=BTH(opcode=Op.RC_ACK, dest_qp=qp.peer_qpn, psn=psn),
                                       aeth=AETH(syndrome, qp.msn)))


__all__ = ["RoceEndpoint", "RoceConnection"]
