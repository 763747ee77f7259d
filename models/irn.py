"""IRN-style selective-repeat RoCE (Mittal et al., "Revisiting Network Support for RDMA",
SIGCOMM 2018) as a baseline, with the RoCEv2 endpoint's interface (MR-GBN-050..055).

What is modelled, on top of :mod:`metaroce.models.rocev2` (RC opcodes, one path per QP):

- The responder accepts packets out of order within ``rx_window`` PSNs and places each at once:
  IRN puts the RETH in every WRITE packet, and a SEND packet carries its receive's number and
  offset. Here that placement information rides with the frame as ``frame.irn`` (16 bytes IRN
  adds to a packet are not charged on the wire: 0.4 % at 4 KiB, in IRN's favour).
- Every out-of-order packet is answered by a NACK (AETH 0x60, BTH PSN = the expected PSN, so
  the cumulative acknowledgement) that selectively acknowledges that packet (``frame.irn_sack``,
  IRN's extra NACK field). Message effects (MSN, receive completions) happen in PSN order.
- The requester keeps the SACKed PSNs. On the first NACK it enters loss recovery until the
  cumulative acknowledgement passes the highest PSN sent at that moment; meanwhile a packet
  below the highest SACKed PSN and not SACKed is lost and resent once, ahead of new packets.
- BDP-FC: at most ``window_bdp`` BDPs of PSNs outstanding (cumulative ACK to highest sent).
- Timeout: ``rto_low`` (100 us) while at most ``rto_low_pkts`` (3) packets are outstanding,
  else ``rto_high`` (320 us); on expiry every outstanding packet not SACKed is resent.
- No PFC and no congestion control beyond BDP-FC (IRN's "without explicit CC" setting).

READ and atomics recover as in RC (MR-GBN-055): the responder executes a request only at its
expected PSN, read responses are accepted in order (a gap re-issues the READ, MR-GBN-022), and a
lost request is resent like a lost packet.
"""
from __future__ import annotations

from . import protocol as P
from .codec import BTH, IP, RETH, UDP, AtomicETH, Eth, Frame
from .endpoint import Completion, Status, WcOpcode
from .rocev2 import (_ATOMIC_OPS, _IMMS, _LASTS, _SEND_SET, _WRITE_SET, AETH_ACK, AETH_NAK_ACCESS,
                     AETH_NAK_INV, AETH_NAK_SEQ, AETH_RNR, RoceEndpoint, _Qp)
from .wire import Op


class _IrnQp(_Qp):
    def __init__(self, *args):
        super().__init__(*args)
        # requester
        self.sacked = set()         # PSNs above una the responder has selectively acknowledged
        self.high_sack = None       # highest SACKed PSN of this recovery
        self.recover = None         # recovery ends when una reaches this PSN (MR-GBN-052)
        self.rtx_next = 0           # next PSN the loss scan looks at
        self.sends = 0              # sends started (their receive numbers)
        # responder
        self.rx_seen = {}           # PSN ahead of epsn -> its in-order effect (MR-GBN-050)
        self.rq_base = 0            # receive number of rq[0]

    # -- requester -----------------------------------------------------------------------------

    def _data_frame(self, w, i, psn):
        f = super()._data_frame(w, i, psn)
        if w.write:
            f.irn = (w.va + i * self.ep.mtu, w.rkey, w.length, w.sseq)
        else:
            if w.sseq is None:      # the first packet of a send is sent first
                w.sseq = self.sends
                self.sends += 1
            f.irn = (i * self.ep.mtu, None, w.length, w.sseq)
        return f

    def rto(self):
        """MR-GBN-054: RTO_low while few packets are outstanding, else RTO_high."""
        ep = self.ep
        return ep.rto_low if P.psn_dist(self.una, self.max_psn) <= ep.rto_low_pkts else ep.rto_high

    def _next_lost(self):
        """MR-GBN-052: the next PSN below the highest SACKed one that is not SACKed; the PSNs
        of a READ's responses are not the requester's to resend (MR-GBN-055)."""
        hi = self.high_sack
        if hi is None:
            return None
        p = self.rtx_next
        if P.psn_dist(p, self.una) > 0:
            p = self.una
        while P.psn_dist(p, hi) > 0:
            if p not in self.sacked:
                w, k = self._locate_wr(p)
                if w is not None and w.read and k:
                    p = (w.start + w.npkts) & P.PSN_MASK
                    continue
                self.rtx_next = (p + 1) & P.PSN_MASK
                return p
            p = (p + 1) & P.PSN_MASK
        self.rtx_next = p
        return None

    def _resend_request(self, w):
        """MR-GBN-055: a lost READ REQUEST (for the responses not yet placed) or atomic, again."""
        ep = self.ep
        ip, udp = IP(src=ep.addr, dst=self.peer_addr, ecn=2), UDP(sport=self.entropy)
        if w.read:
            off = w.got * ep.mtu
            return Frame(eth=Eth(), ip=ip, udp=udp,
                         bth=BTH(opcode=Op.RC_READ_REQUEST, dest_qp=self.peer_qpn, ack_req=1,
                                 psn=(w.start + w.got) & P.PSN_MASK),
                         reth=RETH(w.va + off, w.rkey, w.length - off))
        return Frame(eth=Eth(), ip=ip, udp=udp,
                     bth=BTH(opcode=w.atomic, dest_qp=self.peer_qpn, ack_req=1, psn=w.start),
                     atomiceth=AtomicETH(w.va, w.rkey, w.swap, w.compare))

    def _locate_wr(self, psn):
        for w in self.sq:
            if w.start is None:
                break
            k = P.psn_dist(w.start, psn)
            if 0 <= k < w.npkts:
                return w, k
        return None, 0

    def next_frame(self, now):
        ep = self.ep
        if not self.rsp and not self.after_rsp and not self.error and now >= self.rnr_until:
            while True:
                psn = self._next_lost()
                if psn is None:
                    break
                w, i = self._locate_wr(psn)
                if w is None:
                    continue
                if w.read or w.atomic is not None:
                    f = self._resend_request(w)
                else:
                    saved = self.since_req
                    self.since_req = ep.ack_req_every    # a resend always asks for an ACK
                    f = self._data_frame(w, i, psn)
                    self.since_req = saved
                ep.stats["retransmitted"] += 1
                ep.stats["packets_sent"] += 1
                ep.stats["data_packets_sent"] += 1
                if self.deadline is None:
                    ep._arm(self, now + self.rto())
                return f
        return super().next_frame(now)

    def on_ack(self, f, now):
        syn = f.aeth.syndrome
        if syn >> 5 and syn != AETH_NAK_SEQ:
            super().on_ack(f, now)                      # RNR and fatal NAKs as in RC
            return
        ep = self.ep
        ep.stats["acks_received"] += 1
        nak = syn == AETH_NAK_SEQ
        if nak:
            ep.stats["naks_received"] += 1
        progress = self._acked_through((f.bth.psn - 1) & P.PSN_MASK if nak else f.bth.psn)
        sack = getattr(f, "irn_sack", None)
        if sack is not None and P.psn_dist(self.una, sack) > 0 and P.psn_dist(sack, self.max_psn) > 0:
            self.sacked.add(sack)
            if self.recover is None:                    # MR-GBN-052: enter loss recovery
                self.recover = self.max_psn
                self.rtx_next = self.una
                ep.stats["irn_recoveries"] += 1
            if self.high_sack is None or P.psn_dist(self.high_sack, sack) > 0:
                self.high_sack = sack
        if progress:
            una = self.una
            self.sacked = {p for p in self.sacked if P.psn_dist(una, p) > 0}
            if self.recover is not None and P.psn_dist(self.recover, una) >= 0:
                self.recover = self.high_sack = None    # recovery over
            self._rearm(now)
        ep._make_ready(self)

    def on_timeout(self, now):
        """MR-GBN-054: every outstanding packet not SACKed is resent."""
        ep = self.ep
        ep.stats["timeouts"] += 1
        if P.psn_dist(self.una, self.max_psn) <= 0:
            return
        if not self._retry(now):
            return
        self.recover = self.max_psn
        self.high_sack = self.max_psn
        self.rtx_next = self.una
        self.rtt_psn = None
        ep._arm(self, now + self.rto())
        ep._make_ready(self)

    # -- responder -----------------------------------------------------------------------------

    def on_data(self, f, now):
        op = f.bth.opcode
        if op == Op.RC_READ_REQUEST or op in _ATOMIC_OPS:
            # MR-GBN-055: executed at the expected PSN only, as in RC; ahead of it, dropped
            # (not SACKed: the requester resends it as lost)
            if P.psn_dist(self.epsn, f.bth.psn) > 0:
                self.ep._drop("out_of_sequence")
                return
            super().on_data(f, now)
            if self._drain():
                self.ep._send_aeth(self, AETH_ACK, (self.epsn - 1) & P.PSN_MASK, f)
            return
        ep = self.ep
        st = ep.stats
        psn = f.bth.psn
        d = P.psn_dist(self.epsn, psn)
        if d < 0 or psn in self.rx_seen:
            st["duplicates"] += 1
            if d < 0 and f.bth.ack_req:
                ep._send_aeth(self, AETH_ACK, (self.epsn - 1) & P.PSN_MASK, f)
            elif d > 0:
                self._nack(psn, f)
            return
        if d >= ep.rx_window:
            ep._drop("beyond_window")
            return
        r = self._place_any(f)
        if not isinstance(r, tuple):
            if r == AETH_RNR:
                ep._drop("rnr")
                ep._send_aeth(self, AETH_RNR | 1, self.epsn, f)
            else:
                ep._drop("access" if r == AETH_NAK_ACCESS else "invalid_request")
                ep._send_aeth(self, r, self.epsn, f)
            return
        st["rx_data_packets"] += 1
        if f.ip.ecn == 3:
            st["ce_received"] += 1
        if d > 0:                                       # MR-GBN-051: placed, NACK with SACK
            self.rx_seen[psn] = r
            self._nack(psn, f)
            return
        self._in_order(r)
        self.epsn = (psn + 1) & P.PSN_MASK
        if self._drain() or f.bth.ack_req:
            ep._send_aeth(self, AETH_ACK, (self.epsn - 1) & P.PSN_MASK, f)

    def _drain(self):
        """Apply the in-order effects of packets placed ahead, up to the next gap."""
        filled = False
        while self.epsn in self.rx_seen:
            self._in_order(self.rx_seen.pop(self.epsn))
            self.epsn = (self.epsn + 1) & P.PSN_MASK
            filled = True
        return filled

    def _nack(self, psn, f):
        ep = self.ep
        ep._send_aeth(self, AETH_NAK_SEQ, self.epsn, f).irn_sack = psn

    def _place_any(self, f):
        """MR-GBN-050: place one packet wherever it falls; returns its in-order effect
        ``(op, length, receive number, imm)`` or an AETH syndrome."""
        ep = self.ep
        op = f.bth.opcode
        info = getattr(f, "irn", None)
        n = len(f.payload)
        if info is None or (op not in _WRITE_SET and op not in _SEND_SET):
            return AETH_NAK_INV
        where, rkey, length, sseq = info
        last = op in _LASTS
        if op in _WRITE_SET:
            mr = ep._mrs.get(rkey)
            chk = P.check_access(None if mr is None else len(mr[0]), 0 if mr is None else mr[1],
                                 P.ACCESS_REMOTE_WRITE, where, n)
            if chk is not None:
                return AETH_NAK_ACCESS
            mr[0][where:where + n] = f.payload
        else:
            k = sseq - self.rq_base
            if not 0 <= k < len(self.rq):
                return AETH_RNR
            _, lkey, loff, rlen = self.rq[k]
            mr = ep._mrs.get(lkey)
            if mr is None:
                return AETH_NAK_ACCESS
            if where + n > rlen or length > rlen:
                return AETH_NAK_INV
            mr[0][loff + where:loff + where + n] = f.payload
        ep.stats["bytes_placed"] += n
        return (op, length, sseq, f.imm if op in _IMMS else None, last)

    def _in_order(self, effect):
        """Message effects in PSN order: MSN, receive completions (MR-GBN-050)."""
        op, length, sseq, imm, last = effect
        if not last:
            return
        ep = self.ep
        self.msn = (self.msn + 1) & 0xFFFFFF
        if op in _WRITE_SET:
            if op in _IMMS:
                ep._cq.append(Completion(None, Status.SUCCESS, WcOpcode.RECV_RDMA_WITH_IMM, length,
                                         self.conn.local_id, self.stream, imm))
                ep.stats["completions"] += 1
            return
        wr_id = self.rq.popleft()[0]
        self.rq_base += 1
        ep._cq.append(Completion(wr_id, Status.SUCCESS, WcOpcode.RECV, length, self.conn.local_id,
                                 self.stream, imm))
        ep.stats["completions"] += 1


class IrnEndpoint(RoceEndpoint):
    """IRN-style selective-repeat RoCE (MR-GBN-050..055); the RoCEv2 endpoint's interface.

    Keyword arguments, IRN's published values as defaults, plus every
    :class:`~metaroce.models.rocev2.RoceEndpoint` argument (``timeout_exp`` is not used):

    - ``rto_low`` (100 us), ``rto_high`` (320 us), ``rto_low_pkts`` (3): MR-GBN-054.
    - ``window_bdp`` (1.0): BDP-FC, PSNs outstanding in BDPs (MR-GBN-053).
    - ``ack_req_every`` (1): the responder acknowledges every packet, as IRN's does.
    - ``rx_window`` (the requester's window x 2): PSNs ahead of the expected one the responder
      accepts.
    """

    NAME = "irn"
    #: RoceEndpoint arguments IRN does not use (its timeout is MR-GBN-054's).
    UNUSED_PARAMS = ("adaptive_rto", "rto_min", "rto_initial", "timeout_exp")
    QP_CLASS = _IrnQp

    def __init__(self, addr="10.0.0.1", *, rto_low=100e-6, rto_high=320e-6, rto_low_pkts=3,
                 window_bdp=1.0, ack_req_every=1, rx_window=None, **config):
        super().__init__(addr, window_bdp=window_bdp, ack_req_every=ack_req_every, **config)
        if not 0 < rto_low <= rto_high:
            raise ValueError("IRN needs 0 < rto_low <= rto_high")
        if not isinstance(rto_low_pkts, int) or rto_low_pkts < 0:
            raise ValueError("IRN rto_low_pkts must be an integer >= 0")
        self.rto_low, self.rto_high, self.rto_low_pkts = float(rto_low), float(rto_high), rto_low_pkts
        self.rx_window = 2 * self.window_pkts if rx_window is None else int(rx_window)
        if not 1 <= self.rx_window < P.PSN_HALF:
            raise ValueError("IRN rx_window is 1 .. 2^23 - 1")

    def params(self):
        out = super().params()
        for k in ("ack_timeout_us", "timeout_exp"):
            out.pop(k, None)
        out.update(protocol="irn-selective-repeat", rto_low_us=self.rto_low * 1e6,
                   rto_high_us=self.rto_high * 1e6, rto_low_pkts=self.rto_low_pkts,
                   bdp_fc_window_pkts=self.window_pkts, rx_window=self.rx_window, pfc=False,
                   models="IRN (Mittal et al. SIGCOMM 2018): SACK NACK per out-of-order packet, "
                          "selective resend, BDP-FC, RTO_low/RTO_high; no explicit CC")
        return out


__all__ = ["IrnEndpoint"]
