"""Retransmit unit, first slice: the shared pool of outstanding-packet records, one linked FIFO
per path in PSN order, ACK resolution (cumulative PSN and 256-bit SACK) and the reports of
acknowledged and lost records (docs/spec/hw-tx.md, section "Retransmit unit", MR-TX-*).

``Retransmit(width=64, *, conns=4096, paths=8, pool=16384)`` (MR-TX-001). Ports (MR-TX-002),
all ``amaranth.lib.stream`` except the counter read port:

============== ====== ===================================================================
port           dir    meaning
============== ====== ===================================================================
s_sent         in     a data packet was sent {conn, path, psn, slot, chunk, nbytes, ...}
s_ack          in     an ACK/NAK of the peer (the RX engine's ``m_ack`` layout)
m_acked        out    a record acknowledged {conn, path, slot, chunk, abort, lap, late}
                      (``late``: a timeout had reported it lost, MR-TXS-445)
m_resend       out    a record proven lost by the SACK {conn, path, slot, chunk, abort, lap}
m_ackev        out    per resolving ACK, what it acknowledged on its path: the Cwnd block's
                      ``s_ack`` {conn, path, bytes, pkts, ce, now, srtt} (MR-TX-070/071)
m_probe        out    a tail probe: re-send the path's newest PSN as is {conn, path, psn}
                      (MR-TX-162..164; never valid with ``probes=False``, MR-TX-166)
reg_addr/data  in/out 64-bit counter read, one cycle after the address (MR-TX-040)
============== ====== ===================================================================

Structure (MR-TX-030..036): one path-table pipeline (take, S1 read-modify-write with
forwarding, S2 bitmap) handles one ACK or one sent packet per cycle; an ACK moves the path's
floor at once and leaves a walk job; the walker resolves the job's records from the path's
head at one record per cycle, freeing each into the free list. No two adds are in series
on a path (MR-TX-037: the SACK encoder and the new floor in S1a, MR-TX-039), carries and sign
bits are comparisons and S1's terms are computed on both candidate rows (MR-TX-038), S1b's
row write waits for the event's decision only through its enable (MR-TX-067), and the
counters count one cycle after their events (MR-TX-040).

``interval`` (MR-TX-453/454, default 1): MR-ENG-299's frame interval N; stage 0 then takes an
event at most every ``max(1, N // 2)`` cycles and the path-table and health forwards of events
closer than that are not built (the engine's instance: N = 8, no forward).

Golden model: :class:`metaroce.models.retransmit.RetransmitCycleModel`, cycle by cycle.
"""
from amaranth.hdl import Array, Cat, Const, Module, Mux, Shape, Signal, Value
from amaranth.lib import data, fifo, memory, stream, wiring
from amaranth.lib.wiring import In, Out

from ..models import protocol as P
from ..models import records
from ..models.cwnd import RATE_BITS
from ..models.retransmit import (CE_MAX, BACKOFF_MAX_LOG2, CONSEC_MAX, COUNTER_BITS, CTR, EST_CYCLES,
                                 EST_WRITE, INS_DEPTH, JOB_DEPTH, JOB_EXPIRE, JOB_RESTART, JOB_WALK,
                                 N_COUNTERS, OUT_DEPTH, RETIRE_AFTER, RETRY_LIMIT, RTO_DEPTH, RTO_MAX_NS,
                                 RTO_MIN_NS, SAMPLE_MAX, RTO_NS, SLOT_LOG2, SMALL,
                                 STATUS_RETRY_EXC, WHEEL_SLOTS, check_params, engine_params, layouts, srtt0,
                                 take_gap)
from .queue import HeadRegFIFO, interval_ready

__all__ = ["Retransmit", "retransmit_256x4", "retransmit_engine"]


def _top_index(m, bits, name):
    """``(any, index of the highest set bit)`` of ``bits`` (a power-of-two width) as a
    balanced tree of muxes: no adder on the path (the SACK's bit length, MR-TX-021)."""
    level = [(bits[i], Const(0, 0)) for i in range(len(bits))]
    while len(level) > 1:
        level = [(hi_any | lo_any, Mux(hi_any, Cat(hi_idx, Const(1, 1)), Cat(lo_idx, Const(0, 1))))
                 for (lo_any, lo_idx), (hi_any, hi_idx) in zip(level[0::2], level[1::2])]
    any_set, idx = Signal(name=f"{name}_any"), Signal(len(level[0][1]), name=f"{name}_idx")
    m.d.comb += [any_set.eq(level[0][0]), idx.eq(level[0][1])]
    return any_set, idx


def _add(m, a, b, width, name, carry_in=0):
    """``(a + b + carry_in) mod 2**width`` and the carry out (MR-TX-037)."""
    def fit(v):
        v = Value.cast(v)
        return v[:width] if len(v) >= width else Cat(v, Const(0, width - len(v)))
    full = Signal(width + 1, name=name + "_c")
    m.d.comb += full.eq(fit(a) + fit(b) + carry_in)
    total = Signal(width, name=name)
    m.d.comb += total.eq(full[:width])
    return total, full[width]


def _sub(m, a, b, width, name):
    """``(a - b) mod 2**width`` and ``a >= b`` (unsigned), as :func:`_add` of ``~b`` and 1."""
    b = Value.cast(b)
    b = b[:width] if len(b) >= width else Cat(b, Const(0, width - len(b)))
    return _add(m, a, ~b, width, name, 1)


def _fit(v, width):
    v = Value.cast(v)
    return v[:width] if len(v) >= width else Cat(v, Const(0, width - len(v)))


def _carry(a, b, width, carry_in=0):
    """The carry out of ``a + b + carry_in`` on ``width`` bits, as a comparison (MR-TX-038:
    ``a > ~b``, or ``a >= ~b`` with a carry in), which the generic flow maps to a shallow tree."""
    a, nb = _fit(a, width), ~_fit(b, width)
    if isinstance(carry_in, int):
        return (a >= nb) if carry_in else (a > nb)
    return Mux(carry_in, a >= nb, a > nb)


def _sum_bit(a, b, k, carry_in=0):
    """Bit ``k`` of ``a + b + carry_in`` without the sum's carry chain (MR-TX-038)."""
    a, b = Value.cast(a), Value.cast(b)
    below = _carry(a[:k], b[:k], k, carry_in) if k else carry_in
    return a[k] ^ b[k] ^ below


def _sum_is(a, b, k, width, carry_in=0):
    """``a + b + carry_in == k`` modulo ``2**width`` without a carry chain (MR-TX-038): bit i
    of ``a ^ b ^ k`` is the carry into bit i that gives ``k_i``, and bit i - 1 gives that
    carry exactly when it is ``a & b | (a | b) & ~k`` there."""
    a, b, k = _fit(a, width), _fit(b, width), _fit(k, width)
    gives = (a & b) | ((a | b) & ~k)
    return (a ^ b ^ k) == Cat(carry_in, gives[:width - 1])


def _cs_sum(m, a, b, width, name, carry_in=0, piece=8, carry_chain=False):
    """``(a + b + carry_in) mod 2**width`` by carry-select over two cycles (MR-TX-038 (3)): the
    pieces' sums with and without a carry in and the carries into them (comparisons) are
    registered in this cycle; the returned value, the selection (one mux level), is the sum of
    the previous cycle's ``a`` and ``b``. MR-TX-359: with ``carry_chain`` (an FPGA with a carry
    chain, the ECP5's CCU2C) the same value, the sum of the previous cycle's ``a`` and ``b``, as
    one plain add registered (one chain; an add with a carry in as ``a - ~b``)."""
    a, b = _fit(a, width), _fit(b, width)
    if carry_chain:
        total = Signal(width, name=name)
        m.d.sync += total.eq((a - ~b)[:width] if carry_in else (a + b)[:width])
        return total
    parts = []
    for lo in range(0, width, piece):
        hi = min(lo + piece, width)
        plain = Signal(hi - lo, name=f"{name}_{lo}_plain")
        plus = Signal(hi - lo, name=f"{name}_{lo}_plus")
        cin = Signal(name=f"{name}_{lo}_cin")
        m.d.sync += [plain.eq(a[lo:hi] + b[lo:hi]), plus.eq(a[lo:hi] + b[lo:hi] + 1),
                     cin.eq(_carry(a[:lo], b[:lo], lo, carry_in) if lo else carry_in)]
        parts.append(Mux(cin, plus, plain))
    return Cat(*parts)


def _recent(now, t, srtt, carry_chain=False):
    """MR-TX-203/204: an age is recent while ``now - t - 4 srtt < 0`` modulo ``2**len(now)``
    (``srtt`` unsigned, ``4 srtt < 2**(len(now) - 1)``). The generic form: a carry-save step and
    one sign (MR-TX-038 (1)). MR-TX-360, with ``carry_chain``: ``d = now - t`` (one chain), then
    recent is ``d``'s top bit xor ``d[:-1] < 4 srtt`` (the compare of ``d``'s bits 2 up, as 4 srtt
    has two low zeros: one chain of ``len(srtt)`` bits), no carry-save LUTs."""
    tw, n = len(now), len(srtt)
    assert n + 2 < tw
    if carry_chain:
        d = (now - _fit(t, tw))[:tw]
        return d[tw - 1] ^ ((d[n + 2:tw - 1] == 0) & (d[2:n + 2] < srtt))
    dsum, dcarry = _csa(now, ~_fit(t, tw), ~_fit(Cat(Const(0, 2), srtt), tw))
    return _sum_bit(dsum, Cat(Const(1, 1), dcarry[:tw - 1]), tw - 1, 1)


def _inc(x):
    """``x + 1`` modulo ``2**len(x)`` as logic (bit i flips when every bit below is set), not an
    adder cell: MR-TX-208, so that Yosys' ``opt_share`` does not merge it with another adder
    under a mux and put the mux's select in front of the carry chain."""
    x = Value.cast(x)
    return Cat(*((x[i] ^ x[:i].all()) if i else ~x[0] for i in range(len(x))))


def _behind_short(psn, nf, bits):
    """``psn - nf < 0`` when ``psn - nf`` is known to be in ``[-2**(bits-1), 2**(bits-1))``:
    the sign of the difference of the ``bits`` low bits (MR-TX-067)."""
    psn, nf = Value.cast(psn), Value.cast(nf)
    return _sum_bit(psn[:bits], ~nf[:bits], bits - 1, 1)


def _csa(x, y, z):
    """A carry-save step: ``x + y + z == sum + (carry << 1)`` (one LUT level)."""
    return x ^ y ^ z, (x & y) | (x & z) | (y & z)


def _piece_inc(x, en, piece=8):
    """``x + en`` modulo ``2**len(x)`` in ``piece``-bit adds, piece j's carry in ``en`` and the
    pieces below all ones (an AND of comparisons, no carry between pieces: MR-TX-038 (3))."""
    x = Value.cast(x)
    parts, carry = [], en
    for lo in range(0, len(x), piece):
        p = x[lo:lo + piece]
        parts.append((p + carry)[:len(p)])
        carry = carry & p.all()
    return Cat(*parts)


def _counter_bank(m, incs, addr, nbits, piece=8):
    """MR-TX-311: ``len(incs)`` counters of ``nbits`` (counter i adds 1 at each edge where
    ``incs[i]`` is set) and the value of counter ``addr`` in this cycle, exact (every increment
    of the edges before). Each counter's low ``piece`` bits are a register of its own; its carry
    out sets a pending flag. The upper ``nbits - piece`` bits of all the counters are one
    LUT-RAM row each, served by one shared increment that visits the counters in turn, one a
    cycle, writes the row plus 1 and clears the flag (a carry of that edge sets it again). A
    flag is served within ``len(incs)`` edges and the low piece wraps again after ``2**piece``
    increments at the earliest, so one carry a counter is pending at most. The value is the low
    register, then the row plus the flag (:func:`_piece_inc`)."""
    n = len(incs)
    assert n >= 2 and (1 << piece) >= n and nbits > piece
    lows = [Signal(piece, name=f"ctr{i}_low") for i in range(n)]
    pend = Signal(n, name="ctr_pend")
    m.submodules.ctr_high_mem = mem = memory.Memory(shape=nbits - piece, depth=n, init=[])
    wr = mem.write_port()
    rd_svc, rd_out = mem.read_port(domain="comb"), mem.read_port(domain="comb")
    svc = Signal(range(n), name="ctr_svc")
    m.d.sync += svc.eq(Mux(svc == n - 1, 0, svc + 1))
    served = Signal(n)
    m.d.comb += [served.eq(pend & (Const(1, n) << svc)), rd_svc.addr.eq(svc),
                 wr.addr.eq(svc), wr.data.eq(_piece_inc(rd_svc.data, 1, piece)), wr.en.eq(served.any())]
    wraps = Cat(*(inc & low.all() for inc, low in zip(incs, lows)))
    m.d.sync += pend.eq((pend & ~served) | wraps)
    m.d.sync += [low.eq(low + inc) for inc, low in zip(incs, lows)]
    m.d.comb += rd_out.addr.eq(addr)
    return Cat(Array(lows)[addr], _piece_inc(rd_out.data, pend.bit_select(addr, 1), piece))


def _stored_layout(lay, widths):
    """MR-TX-421: the layout a queue holds for items of ``lay``: each field of ``widths`` at its
    width there (0: not held, the reader has it elsewhere), the others as they are."""
    return data.StructLayout({k: widths.get(k, Shape.cast(f.shape).width) for k, f in lay
                              if widths.get(k, 1)})


def _copy_fields(m, dst, src, names):
    """``dst.f = src.f`` for each field ``f`` of ``names`` (zero-extended or truncated)."""
    m.d.comb += [dst[k].eq(src[k]) for k in names]


class Retransmit(wiring.Component):
    """The retransmit unit's first slice (docs/spec/hw-tx.md)."""

    def __init__(self, width=64, *, conns=4096, paths=8, pool=16384, rto_ns=RTO_NS,
                 retry_limit=RETRY_LIMIT, slot_log2=SLOT_LOG2, collision_garbage=None, probes=True,
                 ages=True, verdict_health=False, carry_chain=None, interval=1, forward_gap=None,
                 hints=False, psn_plain=False):
        if width not in (64, 128, 256, 512):
            raise ValueError(f"width must be 64, 128, 256 or 512, not {width!r}")
        check_params(conns, paths, pool, rto_ns, retry_limit, slot_log2)
        self.width = width
        # MR-TX-477, negative control only: an ACK's staleness and bound as plain unsigned
        # compares of the PSNs instead of modulo 2^24 (wrong across the wrap)
        self.psn_plain = bool(psn_plain)
        self.rto_ns, self.retry_limit, self.slot_log2 = rto_ns, retry_limit, slot_log2
        self.probes = bool(probes)      # MR-TX-166: tail probes on (the TX top keeps them off)
        self.ages = bool(ages)          # MR-TX-203/204: the health and ECN ages
        self.carry_chain = carry_chain  # MR-TX-359: the sums' form; None = the platform's
        # MR-TX-453: MR-ENG-299's frame interval; stage 0 takes an event at most every
        # ``take_gap`` cycles. MR-TX-454: the forwards of events closer than that are not
        # built (``forward_gap``, for a negative control only: the forwards built as for that
        # gap, whatever the take's)
        self.interval = interval
        self.take_gap = take_gap(interval)
        self.forward_gap = self.take_gap if forward_gap is None else forward_gap
        # MR-TX-066, for simulation only: the block-RAM tables' read data inverted in the cycle
        # after the read met a write of the same row ("same": what the block RAM may return under
        # MR-FLOW-028) or of another row ("other": a negative control); counted on
        # ``collision_hits`` (path table, records, links, free ring)
        if collision_garbage not in (None, "same", "other"):
            raise ValueError(f"collision_garbage must be None, 'same' or 'other', not {collision_garbage!r}")
        self.collision_garbage = collision_garbage
        self.collision_hits = {n: Signal(name=f"{n}_collision_hit")
                               for n in ("path", "rec", "link", "free")}
        # MR-TX-300: a verdict's m_probe item carries the health bits it was decided on
        self.verdict_health = bool(verdict_health)
        # MR-TX-491: an ACK's hint carried by its walk job to its event
        self.hints = bool(hints)
        self.lay = lay = layouts(conns, paths, pool, health=self.verdict_health, hints=self.hints)
        # MR-TX-306: an ACK event not yet out (the walker busy, the event of the walk that
        # ended last cycle, or one queued): not a port (the unit's lockstep is unchanged), read
        # by the TX's join, from registers only; driven with verdict_health
        self.ackev_busy = Signal(name="ackev_busy")
        # MR-TX-268: a health memory of two rows or fewer is flip-flops (the synthesis maps such
        # memories to logic): read at a registered address, so the take's select drives one
        # flip-flop, not a 2:1 mux per bit of the row
        self.health_read_in_ffs = conns <= 2
        super().__init__({
            "s_sent": In(stream.Signature(lay.sent)),
            "s_ack": In(stream.Signature(lay.ack)),
            "m_acked": Out(stream.Signature(lay.acked)),
            "m_resend": Out(stream.Signature(lay.resend)),
            "m_error": Out(stream.Signature(lay.error)),
            "m_ackev": Out(stream.Signature(lay.ackev)),
            "m_probe": Out(stream.Signature(lay.probe)),
            "now": In(records.TIME_BITS),
            "reg_addr": In(range(16)),
            "reg_data": Out(COUNTER_BITS),
        })

    def elaborate(self, platform):
        m = Module()
        lay = self.lay
        # MR-TX-359: the carry-select sums as plain adds where the target has a carry chain
        cc = (getattr(platform, "carry_chain", False) if self.carry_chain is None
              else bool(self.carry_chain))
        cb, pb, pw = lay.conn_bits, lay.path_bits, lay.ptr_bits
        rb = cb + pb
        rows = lay.conns * lay.paths
        psn_bits = P.wire.PSN_BITS
        now = self.now

        # MR-TX-066: a read meeting S1b's write of its row is replaced by that write (MR-TX-035),
        # so the table may read anything then (MR-FLOW-028: no collision logic in block RAM)
        m.submodules.path_mem = path_mem = memory.Memory(shape=lay.path.size, depth=rows, init=[],
                                                         attrs={"metaroce_collision": "x"})
        m.submodules.head_mem = head_mem = memory.Memory(shape=pw, depth=rows, init=[])
        m.submodules.wnext_mem = wnext_mem = memory.Memory(shape=rb, depth=rows, init=[])
        # MR-TX-066: the pool's records, links and free ring likewise (their reads that meet a
        # write of the same row are never used: tested in simulation with garbage data)
        m.submodules.rec_mem = rec_mem = memory.Memory(shape=lay.rec.size, depth=lay.pool, init=[],
                                                       attrs={"metaroce_collision": "x"})
        m.submodules.link_mem = link_mem = memory.Memory(shape=pw, depth=lay.pool, init=[],
                                                         attrs={"metaroce_collision": "x"})
        m.submodules.free_mem = free_mem = memory.Memory(shape=pw, depth=lay.pool,
                                                         init=list(range(lay.pool)),
                                                         attrs={"metaroce_collision": "x"})
        path_rd, path_wr = path_mem.read_port(), path_mem.write_port()
        head_wr = head_mem.write_port()
        head_rd = head_mem.read_port(transparent_for=(head_wr,))
        wnext_rd, wnext_wr = wnext_mem.read_port(), wnext_mem.write_port()
        rec_rd, rec_wr = rec_mem.read_port(), rec_mem.write_port()
        link_rd, link_wr = link_mem.read_port(), link_mem.write_port()
        free_wr = free_mem.write_port()
        free_rd = free_mem.read_port()

        def read_data(rd, wr, name):
            """``rd.data``, inverted in simulation after a collision (``collision_garbage``)."""
            if not self.collision_garbage:
                return rd.data
            hit, same = self.collision_hits[name], wr.addr == rd.addr
            m.d.sync += hit.eq(wr.en & (same if self.collision_garbage == "same" else ~same))
            return Mux(hit, ~rd.data, rd.data)
        rec_data, link_data = read_data(rec_rd, rec_wr, "rec"), read_data(link_rd, link_wr, "link")
        free_data = read_data(free_rd, free_wr, "free")

        # MR-TX-421: the queues hold a path's index in its pb bits (the reports' 8-bit field
        # is zero above them: every pushed item's path is a row's), a job no conn and path (its
        # row's), an ACK event its srtt in DUR_BITS (an estimate or srtt0)
        dur = records.DUR_BITS
        job_st = _stored_layout(lay.job, {"conn": 0, "path": 0})
        # MR-TXS-445: an acknowledged report's is the lost one's and `late` (its last bit)
        report_st = _stored_layout(lay.acked, {"path": pb})
        resend_st = _stored_layout(lay.resend, {"path": pb})
        error_st = _stored_layout(lay.error, {"path": pb})
        probe_st = _stored_layout(lay.probe, {"path": pb})
        ackev_st = _stored_layout(lay.ackev, {"srtt": dur})
        m.submodules.job_q = job_q = fifo.SyncFIFO(width=job_st.size, depth=JOB_DEPTH)
        # MR-TX-265: the insert queue's and the RTO queue's heads and r_rdy in flip-flops
        # (MR-TX-065's queue), so the take decision does not start at a level compare and the
        # RTO's row at a LUT-RAM read
        m.submodules.ins_q = ins_q = HeadRegFIFO(width=lay.insert.size, depth=INS_DEPTH)
        m.submodules.acked_q = acked_q = HeadRegFIFO(width=report_st.size, depth=OUT_DEPTH)
        m.submodules.resend_q = resend_q = HeadRegFIFO(width=resend_st.size, depth=OUT_DEPTH)
        m.submodules.error_q = error_q = HeadRegFIFO(width=error_st.size, depth=OUT_DEPTH)
        m.submodules.ackev_q = ackev_q = HeadRegFIFO(width=ackev_st.size, depth=OUT_DEPTH)
        m.submodules.probe_q = probe_q = HeadRegFIFO(width=probe_st.size, depth=OUT_DEPTH)
        # MR-TX-163: a connection's paths' health bits (set by progress, cleared by a timeout);
        # MR-TX-165: a record's probe bit (its ACK gives no RTT sample)
        # MR-TX-198: and above them the connection's ECN bit (its last resolving ACK echoed ECE)
        # MR-TX-203/204 (``ages``): above them each path's last progress time and srtt (xor
        # srtt0: 0 at reset is srtt0) and the connection's last ECE echo's time
        dur = records.DUR_BITS
        tw = records.TIME_BITS
        hw = lay.paths + 1 + (lay.paths * (tw + dur) + tw if self.ages else 0)
        m.submodules.health_mem = health_mem = memory.Memory(shape=hw, depth=lay.conns, init=[])
        # MR-TX-268: in flip-flops, read without a clock at the take's connection registered
        h_rd = health_mem.read_port(domain="comb" if self.health_read_in_ffs else "sync")
        h_wr = health_mem.write_port()
        m.submodules.prb_mem = prb_mem = memory.Memory(shape=1, depth=lay.pool, init=[])
        prb_rd, prb_wr = prb_mem.read_port(), prb_mem.write_port()
        # MR-TX-242: S1b's write of a probe bit (prb_s1) is made a cycle later from registers;
        # MR-TX-364: its address and bit by the event's kind (registered), its enable the OR of
        # a registered sent_ok and S2a's tail-probe flags (set below), not S1b's decision
        prb_s1 = Signal(data.StructLayout({"en": 1, "addr": pw, "data": 1}))
        prb_sent = Signal()
        m.d.sync += [prb_sent.eq(prb_s1.en), prb_wr.addr.eq(prb_s1.addr), prb_wr.data.eq(prb_s1.data)]
        # MR-TX-054: the estimator's RTOs to the path rows, and its memory (srtt, rttvar, valid)
        # MR-TX-203: with ``ages`` the RTO event carries the new srtt to the health memory
        rto_lay = data.StructLayout({"row": rb, "rto": dur, **({"srtt": dur} if self.ages else {})})
        m.submodules.rto_q = rto_q = HeadRegFIFO(width=rto_lay.size, depth=RTO_DEPTH)   # MR-TX-265
        est_lay = data.StructLayout({"srtt": dur, "rttvar": dur, "valid": 1})
        m.submodules.est_mem = est_mem = memory.Memory(shape=est_lay, depth=rows, init=[])
        est_rd, est_wr = est_mem.read_port(), est_mem.write_port()
        # MR-TX-071: the ACK event's srtt, read at the walk's last record (not transparent:
        # the estimator's write of that cycle is not seen)
        ev_rd = est_mem.read_port()

        # MR-TX-040: the increments are registered, then counted in 8-bit pieces (no carry
        # longer than a piece), so an event lands in its counter one cycle later; MR-TX-311:
        # the counters' upper pieces in LUT RAM, one shared increment (_counter_bank)
        inc = {n: Signal(name=f"inc_{n}") for n in CTR}
        inc_late = {n: Signal(name=f"inc_late_{n}") for n in CTR}
        m.d.sync += [inc_late[n].eq(inc[n]) for n in CTR]

        # -- the free list (MR-TX-031): a ring of free pool indices, full at reset
        free_wr_ptr = Signal(pw)
        free_level = Signal(pw + 1, init=lay.pool)      # every free record (MR-TX-031)
        free_pop = Signal()
        free_push = Signal()
        # MR-TX-038: the pointers and the levels select among neighbours computed from registers
        free_wr_next = Signal(pw)
        level_up, level_down = Signal(pw + 1), Signal(pw + 1)
        m.d.comb += [free_wr_next.eq(free_wr_ptr + 1),
                     level_up.eq(free_level + 1), level_down.eq(free_level - 1)]
        m.d.sync += [free_wr_ptr.eq(Mux(free_push, free_wr_next, free_wr_ptr)),
                     free_level.eq(Mux(free_push == free_pop, free_level,
                                       Mux(free_push, level_up, level_down)))]
        m.d.comb += [free_wr.en.eq(free_push), free_wr.addr.eq(free_wr_ptr)]
        # the free head comes from a prefetch of up to three indices in registers, filled from
        # the ring by reads whose address is a register: S1b's pop moves registers only, and
        # S1b takes the head from a register, not from the block RAM (MR-TX-031, MR-TX-038).
        # A record freed in cycle t is read in t + 1 at the latest after the records ahead of
        # it, in the prefetch in t + 3: no sooner than a sent packet taken in t + 1 reaches S1b.
        ring_left = Signal(pw + 1, init=lay.pool)        # written, not yet read into the prefetch
        issue_ptr = Signal(pw)
        rd_inflight = Signal()
        pf = [Signal(pw, name=f"free_pf{i}") for i in range(3)]
        pf_n = Signal(range(4))
        pf_room = Mux(rd_inflight, pf_n <= 1, pf_n <= 2)
        issue = (ring_left != 0) & pf_room
        left_up, left_down = Signal(pw + 1), Signal(pw + 1)
        m.d.comb += [left_up.eq(ring_left + 1), left_down.eq(ring_left - 1),
                     free_rd.addr.eq(issue_ptr)]
        m.d.sync += [ring_left.eq(Mux(free_push == issue, ring_left,
                                      Mux(free_push, left_up, left_down))),
                     issue_ptr.eq(Mux(issue, issue_ptr + 1, issue_ptr)),
                     rd_inflight.eq(issue)]
        # the prefetch's next contents with and without a pop, selected by the pop
        n_dec = Signal(range(4))
        m.d.comb += n_dec.eq(pf_n - 1)
        for i in range(3):
            keep = Mux(rd_inflight & (pf_n == i), free_data, pf[i])
            shift = Mux(rd_inflight & (n_dec == i), free_data, pf[i + 1] if i < 2 else pf[i])
            m.d.sync += pf[i].eq(Mux(free_pop, shift, keep))
        m.d.sync += pf_n.eq(Mux(free_pop, n_dec + rd_inflight, pf_n + rd_inflight))
        free_head = pf[0]

        # -- the walker's and the wheel's state (used by stage 0's arbitration)
        w_state = Signal(2)             # 0 idle, 1 start, 2 walk
        w_row = Signal(rb)
        w_conn = Signal(cb)
        w_path = Signal(8)
        w_n = Signal(9)
        w_skip = Signal(9)
        w_left = Signal(9)
        # MR-TX-038: w_skip == 0 and w_left == 1 kept as flags beside them, each set with its
        # register, so the walker's decision (advance, last, the next job's take) starts
        # from flip-flops
        w_skip_zero = Signal(init=1)
        w_left_one = Signal()
        # MR-TX-331: the job's SACK rotated up by one (bit j: SACK bit j - 1 mod 256), the next
        # bit's index from cum (i - (cum - floor): below 0 a 1, at 0 cum's 0, above the SACK's
        # bit at - 1), and the record's bit, fetched a cycle ahead (in the start state, then at
        # each record stepped over), so the walker's decision reads a flip-flop (MR-TX-073)
        w_sack = Signal(P.SACK_BITS)
        w_at = Signal(10)
        w_bit = Signal()
        w_smp = Signal()                # MR-TX-054: the trigger record is ahead in this walk
        w_trig = Signal(9)
        # MR-TX-073: the job's kind as the flag kind == JOB_EXPIRE, and w_trig == 0 as a flag
        # set with w_trig, so the walker's advance and the estimator's start begin at flip-flops
        w_expire = Signal()
        w_trig_zero = Signal(init=1)
        w_t_ack = Signal(records.TIME_BITS)
        w_ce = Signal(Shape.cast(lay.job["ce"].shape).width)
        w_hint = Signal(RATE_BITS) if self.hints else None      # MR-TX-491
        # MR-TX-070: the bytes and packets the walk's ACK acknowledged so far
        w_bytes = Signal(Shape.cast(lay.ackev["bytes"].shape).width)
        w_pkts = Signal(Shape.cast(lay.ackev["pkts"].shape).width)
        w_cursor = Signal(pw)
        tbits = records.TIME_BITS - self.slot_log2
        ct = Signal(tbits)
        ct_far = Signal(tbits, init=WHEEL_SLOTS - 1)    # ct + 63, kept beside ct (MR-TX-038)
        # the slots' list heads and tails: small memories read without a clock (LUT RAM)
        m.submodules.slot_head_mem = slot_head_mem = memory.Memory(shape=rb, depth=WHEEL_SLOTS, init=[])
        m.submodules.slot_tail_mem = slot_tail_mem = memory.Memory(shape=rb, depth=WHEEL_SLOTS, init=[])
        sh_wr, st_wr = slot_head_mem.write_port(), slot_tail_mem.write_port()
        sh_rd = slot_head_mem.read_port(domain="comb")
        st_rd_cur = slot_tail_mem.read_port(domain="comb")
        st_rd_ins = slot_tail_mem.read_port(domain="comb")
        slot_valid = Signal(WHEEL_SLOTS)
        # MR-TX-072: slot ct's valid bit as a register of its own, equal to slot_valid[ct]
        # in every cycle, so the take decision does not start with a 64-way read by ct
        cur_valid = Signal()
        pop_phase = Signal()
        pop_slot = Signal(range(WHEEL_SLOTS))
        cur = ct[:(WHEEL_SLOTS - 1).bit_length()]
        m.d.comb += [sh_rd.addr.eq(cur), st_rd_cur.addr.eq(cur)]
        cur_head = sh_rd.data
        ct_inc = Signal(tbits, init=1)                   # ct + 1, kept beside ct
        # now's slot is ahead of ct: a difference not zero, its sign bit clear (MR-TX-038);
        # registered (MR-TX-060): the flag of the next cycle on this cycle's clock and the
        # next ct (ct, ct + 1, or now's slot after a jump, then not due)
        now_slot = now[self.slot_log2:]
        wheel_due = Signal()
        due_at_ct = (now_slot != ct) & ~_sum_bit(now_slot, ~ct, tbits - 1, 1)
        due_at_inc = (now_slot != ct_inc) & ~_sum_bit(now_slot, ~ct_inc, tbits - 1, 1)

        # -- stage 0: take an ACK, an RTO, the wheel's check, a sent packet (MR-TX-033)
        s1a_valid = Signal()
        s1a_kind = Signal(2)            # 0 sent, 1 ack, 2 rto, 3 check
        s1_valid = Signal()             # S1b (the stage that applies the event to its row)
        s1_kind = Signal(2)
        s2_valid = Signal()             # S2a (something to push: MR-TX-212, not a register)
        s2b_valid = Signal()
        # level + in flight (S1a, S1b, S2a, S2b) < depth, as comparisons with constants
        # selected by the count (MR-TX-038)
        inflight = Signal(3)
        m.d.comb += inflight.eq(s1a_valid + s1_valid + s2_valid + s2b_valid)
        def room(level, depth):
            out = level < depth - 4
            for k in (3, 2, 1, 0):
                out = Mux(inflight == k, level < depth - k, out)
            return out
        # the credit is registered (MR-TX-033): computed a cycle ahead with room for one more
        # event, the one that cycle may take
        credit = Signal(init=1)
        m.d.sync += credit.eq(room(job_q.level, JOB_DEPTH - 1) & room(ins_q.level, INS_DEPTH - 1)
                              & room(error_q.level, OUT_DEPTH - 1)
                              & room(probe_q.level, OUT_DEPTH - 1))
        # MR-TX-453: the interval gate on the take of any event (none at a gap of 1)
        took = Signal(name="take_took") if self.take_gap > 1 else None
        gate = interval_ready(m, self.take_gap, took, "take_wait") if took is not None else None
        take_ok = credit if gate is None else credit & gate
        m.d.comb += self.s_ack.ready.eq(take_ok)
        ack_take = self.s_ack.valid & take_ok
        rto_req = rto_q.r_rdy
        rto_take = rto_req & ~ack_take if gate is None else rto_req & gate & ~ack_take
        qrto = data.View(rto_lay, rto_q.r_data)
        ins_r_valid = Signal()          # the insert registers behind the queue (MR-TX-060)
        ins_r2_valid = Signal()
        check_req = (~pop_phase & ~ins_r_valid & ~ins_r2_valid & ~ins_q.r_rdy & wheel_due
                     & cur_valid)
        check_take = check_req & take_ok & ~ack_take & ~rto_req
        # MR-TX-031: a free record for this packet and each sent packet in S1a and S1b
        sent_in = Signal(2)
        m.d.comb += sent_in.eq((s1a_valid & (s1a_kind == 0)) + (s1_valid & (s1_kind == 0)))
        m.d.comb += [
            self.s_sent.ready.eq(take_ok & ~self.s_ack.valid & ~rto_req & ~check_req
                                 & Mux(sent_in[1], free_level > 2,
                                       Mux(sent_in[0], free_level > 1, free_level != 0))),
            rto_q.r_en.eq(rto_take),
        ]
        sent_take = self.s_sent.valid & self.s_sent.ready
        if took is not None:
            m.d.comb += took.eq(rto_take | check_take | ack_take | sent_take)
        ina, ins = self.s_ack.payload, self.s_sent.payload
        rec = data.View(lay.rec, rec_data)
        # MR-TX-264: the take's four candidate rows, in the take's priority (MR-TX-033); the
        # read address is selected from them, and the hit flags below are compared on each
        # candidate and selected after the compare by the same decision
        take_rows = tuple(Value.cast(r)[:rb] for r in (Cat(ina.path[:pb], ina.conn), qrto.row,
                                                         cur_head, Cat(ins.path[:pb], ins.conn)))

        def by_take(ack_v, rto_v, check_v, sent_v):
            """The value of the event taken (the sent packet's when nothing is: the read
            address's default), as the take's priority (MR-TX-033). MR-TX-267: each select
            without the terms of the selects before it (rto_take is rto_req where no ACK is
            taken; check_take is check_req & credit where neither is)."""
            return Mux(ack_take, ack_v, Mux(rto_req, rto_v, Mux(check_req & credit, check_v, sent_v)))

        def hit(cand_eq):
            """``cand_eq(row)`` on the read address, as MR-TX-264's compare of every candidate
            row selected by the take after it."""
            return by_take(*(cand_eq(r) for r in take_rows))

        m.d.comb += path_rd.addr.eq(by_take(*take_rows))
        s1a_ack = Signal(lay.ack)
        s1a_sent = Signal(lay.sent)
        s1a_int_row = Signal(rb)
        s1a_rto = Signal(dur)
        s1a_srtt = Signal(dur)          # MR-TX-203: the RTO event's srtt (``ages``)
        m.d.sync += s1a_valid.eq(rto_take | check_take | ack_take | sent_take)
        # MR-TX-068: the SACK's top bit found at the take (from the port's payload), registered
        sack_any, sack_top = Signal(), Signal(range(P.SACK_BITS))
        in_any, in_top = _top_index(m, ina.sack, "sack_top")
        with m.If(ack_take):
            m.d.sync += [s1a_kind.eq(1), s1a_ack.eq(ina), sack_any.eq(in_any), sack_top.eq(in_top)]
        with m.Elif(rto_take):
            m.d.sync += [s1a_kind.eq(2), s1a_int_row.eq(qrto.row), s1a_rto.eq(qrto.rto)]
            if self.ages:
                m.d.sync += s1a_srtt.eq(qrto.srtt)
        with m.Elif(check_take):
            m.d.sync += [s1a_kind.eq(3), s1a_int_row.eq(cur_head)]
        with m.Elif(sent_take):
            m.d.sync += [s1a_kind.eq(0), s1a_sent.eq(ins)]

        def row_of(kind, sent, ack, int_row):
            return Mux(kind == 0, Cat(sent.path[:pb], sent.conn),
                       Mux(kind == 1, Cat(ack.path[:pb], ack.conn), int_row))

        # -- stage S1a (MR-TX-030, MR-TX-035): the row read from the memory, or the write of
        # the event two ahead (S1b in the take cycle, written at its end) when the rows are
        # equal (decided in the take cycle), registered: S1b starts from registers, not from
        # the block RAM's output. An ACK's new floor cum + e (MR-TX-037: e = bit_length + 1
        # or 0, from the SACK's top bit registered at the take, MR-TX-068) does not depend on
        # the row: computed here and registered (MR-TX-039), a 9-bit add and the high part
        # selected by its carry
        s1_ack = Signal(lay.ack)
        dist_bits = (P.SEND_WINDOW).bit_length()
        s1a_floor_low = Signal(dist_bits + 1)
        s1a_cum_high_inc = Signal(psn_bits - dist_bits)
        # cum + e with e = top + 2: cum's low bits + 2 beside the encoder's tree, so one carry
        # chain after the tree, not two in series (MR-TX-039; at most 511 + 2 + 255 < 2^10)
        s1a_cum_low2 = Signal(dist_bits + 1)
        m.d.comb += [s1a_cum_low2.eq(s1a_ack.cum[:dist_bits] + 2),
                     s1a_floor_low.eq(Mux(sack_any, s1a_cum_low2 + sack_top,
                                          s1a_ack.cum[:dist_bits])),
                     s1a_cum_high_inc.eq(s1a_ack.cum[dist_bits:] + 1)]
        s1_floor = Signal(psn_bits)     # the ACK's new floor cum + e (MR-TX-039)
        s1_sent = Signal(lay.sent)
        s1_rto = Signal(dur)
        s1_srtt = Signal(dur)
        s1a_row = Signal(rb)
        m.d.comb += s1a_row.eq(row_of(s1a_kind, s1a_sent, s1a_ack, s1a_int_row))
        m.d.sync += [s1_valid.eq(s1a_valid), s1_kind.eq(s1a_kind), s1_ack.eq(s1a_ack),
                     s1_floor.eq(Cat(s1a_floor_low[:dist_bits],
                                     Mux(s1a_floor_low[dist_bits], s1a_cum_high_inc,
                                         s1a_ack.cum[dist_bits:]))),
                     s1_sent.eq(s1a_sent),
                     s1_rto.eq(s1a_rto), s1_srtt.eq(s1a_srtt)]

        # -- stage S1b: the path row with forwarding (MR-TX-035)
        # MR-TX-314: S1b's row index a register loaded from S1a's (every S1 register above is
        # loaded from its S1a register on every edge, so it is the row of S1b's event),
        # not row_of's mux behind them; MR-TX-315: the path's one-hot bit beside it
        s1_row = Signal(rb)
        path_bit = Signal(lay.paths)
        m.d.sync += [s1_row.eq(s1a_row), path_bit.eq(Const(1, lay.paths) << s1a_row[:pb])]
        wb_valid = Signal()
        wb_addr = Signal(rb)
        wb_data = Signal(lay.path.size)
        path_rd_data = read_data(path_rd, path_wr, "path")
        s1a_same = Signal()             # the taken event's row is the row S1b holds (MR-TX-035)
        s1_same = Signal()              # S1b's row is the row S1b held a cycle before
        s1_base = Signal(lay.path.size)
        # MR-TX-240: the table is written a cycle late, from the forward register (wb_*), so
        # the take's read also misses the write of its own edge: wb_prev holds it in S1a and
        # s1a_same_prev says it hit the row read (decided in the take cycle, as s1a_same)
        wb_prev = Signal(lay.path.size)
        s1a_same_prev = Signal()
        # MR-TX-454: the forward of the event d ahead only where two takes may be d apart
        # (d = 1: S1b's; 2: S1a's; 3: the write's own edge, MR-TX-240)
        fwd1, fwd2, fwd3 = (self.forward_gap <= d for d in (1, 2, 3))
        base_in = path_rd_data
        if fwd3:
            m.d.sync += [s1a_same_prev.eq(wb_valid & hit(lambda r: r == wb_addr)),
                         wb_prev.eq(wb_data)]
            base_in = Mux(s1a_same_prev, wb_prev, base_in)
        if fwd2:
            m.d.sync += s1a_same.eq(s1_valid & hit(lambda r: r == s1_row))
            base_in = Mux(wb_valid & s1a_same, wb_data, base_in)
        m.d.sync += s1_base.eq(base_in)
        if fwd1:
            m.d.sync += s1_same.eq(s1_valid & s1a_valid & (s1a_row == s1_row))
            fwd = wb_valid & s1_same
            row = data.View(lay.path, Mux(fwd, wb_data, s1_base))
        else:
            row = data.View(lay.path, s1_base)
        # MR-TX-163: the connection's health bits, read and forwarded as the path row is
        # (MR-TX-035), by the connection's part of the row index
        hwb_valid, hwb_addr, hwb_data = Signal(), Signal(cb), Signal(hw)
        s1a_hsame, s1_hsame, h_base = Signal(), Signal(), Signal(hw)
        # MR-TX-241: the health memory written a cycle late from hwb_*, its read's own edge's
        # write forwarded from hwb_prev in S1a (as MR-TX-240's path table)
        hwb_prev, s1a_hsame_prev = Signal(hw), Signal()
        if self.health_read_in_ffs:
            # MR-TX-268: the row after the edge's write; MR-TX-313: so MR-TX-241's forward of
            # that write (hwb_prev) is not built
            h_rd_conn = Signal(cb)
            m.d.sync += h_rd_conn.eq(path_rd.addr[pb:])
            m.d.comb += h_rd.addr.eq(h_rd_conn)
            h_base_in = h_rd.data
        else:
            m.d.comb += h_rd.addr.eq(path_rd.addr[pb:])
            h_base_in = h_rd.data
            if fwd3:                                # MR-TX-454
                h_base_in = Mux(s1a_hsame_prev, hwb_prev, h_base_in)
                m.d.sync += [s1a_hsame_prev.eq(hwb_valid & hit(lambda r: r[pb:] == hwb_addr)),
                             hwb_prev.eq(hwb_data)]
        if fwd2:                                    # MR-TX-454
            h_base_in = Mux(hwb_valid & s1a_hsame, hwb_data, h_base_in)
            m.d.sync += s1a_hsame.eq(s1_valid & hit(lambda r: r[pb:] == s1_row[pb:]))
        m.d.sync += h_base.eq(h_base_in)
        health_row = Signal(hw)
        h_write, h_new = Signal(), Signal(hw)
        if fwd1:
            s1_hsame_next = s1_valid & s1a_valid & (s1a_row[pb:] == s1_row[pb:])
            m.d.sync += s1_hsame.eq(s1_hsame_next)
            h_fwd = hwb_valid & s1_hsame
            h_fwd_next = h_write & s1_hsame_next        # h_fwd after the edge (MR-TX-365)
            m.d.comb += health_row.eq(Mux(h_fwd, hwb_data, h_base))
        else:
            # MR-TX-454: no event a cycle ahead of S1b's: the read row alone
            m.d.comb += health_row.eq(h_base)
        health_raw, ecn_raw = health_row[:lay.paths], health_row[lay.paths]
        # MR-TX-241: S1b's decision ends at hwb_valid, not at the memory's write enable
        m.d.comb += [h_wr.en.eq(hwb_valid), h_wr.addr.eq(hwb_addr), h_wr.data.eq(hwb_data),
                     h_new.eq(health_row)]
        m.d.sync += [hwb_valid.eq(h_write), hwb_addr.eq(s1_row[pb:]), hwb_data.eq(h_new)]
        srtt0_c = Const(srtt0(self.rto_ns), dur)
        if self.ages:
            # MR-TX-203/204: the row's fields; an age is recent while now - t - 4 srtt < 0
            # (retransmit.recent: a carry-save step and one sign, as the timer's due test)
            t_off, s_off = lay.paths + 1, lay.paths + 1 + lay.paths * tw
            e_off = s_off + lay.paths * dur

            def t_ack_of(v, q):
                return v[t_off + q * tw:t_off + (q + 1) * tw]

            def srtt_x_of(v, q):
                return v[s_off + q * dur:s_off + (q + 1) * dur]

            # MR-TX-343/344: each age tested a cycle ahead, at the clock of S1a's cycle, on both
            # candidate rows (S1a's, h_base_in; S1b's write, h_new) and registered as one bit:
            # recent is now - t - 4 srtt < 0 (a carry-save step and one sign), so S1b's
            # decision starts at these flip-flops, not at a carry chain
            def recent_at(t, srtt_x):
                return _recent(now, t, srtt_x ^ srtt0_c, cc)      # MR-TX-360: the form

            def recent_bits(v):
                return Cat(*(recent_at(t_ack_of(v, q), srtt_x_of(v, q)) for q in range(lay.paths)))
            rec_base = Signal(lay.paths, name="h_rec_base")
            rec_base_in = Signal(lay.paths)
            m.d.comb += rec_base_in.eq(recent_bits(h_base_in))
            m.d.sync += rec_base.eq(rec_base_in)
            if fwd1:
                # MR-TX-454: the write's side only where S1b may forward it
                rec_wb = Signal(lay.paths, name="h_rec_wb")
                rec_wb_in = Signal(lay.paths)
                m.d.comb += rec_wb_in.eq(recent_bits(h_new))
                m.d.sync += rec_wb.eq(rec_wb_in)

            # MR-TX-211: the ages on the read row and on the previous write in parallel,
            # selected by the forward flag (MR-TX-038 (4)); "another path healthy" is ORed on
            # each side too. MR-TX-365: each side's OR and the select a cycle ahead, registered
            # (h_base_in and h_new are what h_base and hwb_data load, s1a_row's path what
            # path_bit loads, h_fwd_next what h_fwd is after the edge), so S1b's decision
            # starts at a flip-flop, not at hwb_valid's AND-OR across the chip
            s1a_path_bit = Const(1, lay.paths) << s1a_row[:pb]

            def others_of(v, rec):
                return (v[:lay.paths] & rec & ~s1a_path_bit).any()
            others_aged = Signal(name="h_others_aged")
            others_in = others_of(h_base_in, rec_base_in)
            if fwd1:
                others_in = Mux(h_fwd_next, others_of(h_new, rec_wb_in), others_in)
            m.d.sync += others_aged.eq(others_in)
            if self.verdict_health:
                # MR-TX-300: the same aged bits, each side, selected by the forward flag
                def aged_others(v, rec):
                    return v[:lay.paths] & rec & ~path_bit
                healthy_bits = aged_others(h_base, rec_base)
                if fwd1:
                    healthy_bits = Mux(h_fwd, aged_others(hwb_data, rec_wb), healthy_bits)
            # MR-TX-204, MR-TX-343: the ECN echo's age with the timed-out path's srtt, selected
            # and tested a cycle ahead (in S1a on the row S1b will start from, on S1b's write
            # for the row it forwards), registered
            erec_base, erec_wb = Signal(name="h_erec_base"), Signal(name="h_erec_wb")
            s1a_path = s1a_row[:pb]
            m.d.sync += erec_base.eq(recent_at(h_base_in[e_off:e_off + tw],
                                               Array(srtt_x_of(h_base_in, q) for q in range(lay.paths))[s1a_path]))
            ecn_fresh = erec_base
            if fwd1:                                # MR-TX-454
                m.d.sync += erec_wb.eq(recent_at(h_new[e_off:e_off + tw],
                                                 Array(srtt_x_of(h_new, q) for q in range(lay.paths))[s1a_path]))
                ecn_fresh = Mux(h_fwd, erec_wb, erec_base)
            ecn = ecn_raw & ecn_fresh
        else:
            ecn = ecn_raw
            others_aged = (health_raw & ~path_bit).any()
            healthy_bits = health_raw & ~path_bit
        # MR-TX-038: row-dependent terms on S1a's row and on the previous write in
        # parallel, selected by the registered forward flag
        mem_row, wb_row = data.View(lay.path, s1_base), data.View(lay.path, wb_data)

        def both(term):
            # MR-TX-454: on the read row alone where S1b forwards nothing
            return Mux(fwd, term(wb_row), term(mem_row)) if fwd1 else term(mem_row)
        # MR-TX-423: a term that only S2a's registers (the job's fields) and the row's write
        # load is computed once, on the selected row: its select in front of it, not behind
        nrow = Signal(lay.path)
        m.d.comb += nrow.eq(row)
        row_write = Signal()
        # floor <= lost_upto <= next_psn <= floor + 256 (MR-TX-020, MR-TX-052): these distances
        # fit in 9 bits
        def dist(hi, lo, name):
            out = Signal(dist_bits, name=name)
            m.d.comb += out.eq((row[hi][:dist_bits] - row[lo][:dist_bits])[:dist_bits])     # MR-TX-423
            return out
        lost_dist = dist("lost_upto", "floor", "lost_dist")
        # MR-TX-054: an ACK's trigger PSN from the floor: its 9 low bits and whether the rest
        # are 0 (carry-free, MR-TX-038); the walk job says whether it is below n
        trig = Signal(dist_bits)
        trig_near = Signal()
        tpsn = s1_ack.psn
        m.d.comb += [trig.eq((tpsn[:dist_bits] - row.floor[:dist_bits])[:dist_bits]),       # MR-TX-423
                     trig_near.eq(_sum_is(
                         tpsn[dist_bits:], ~row.floor[dist_bits:], 0, psn_bits - dist_bits,
                         _carry(tpsn[:dist_bits], ~row.floor[:dist_bits], dist_bits, 1)))]
        live_n = dist("next_psn", "lost_upto", "live_n")
        empty = row.floor == row.next_psn                   # MR-TX-423: a sent packet's terms
        no_live = row.lost_upto == row.next_psn
        is_sent = s1_valid & (s1_kind == 0)
        is_ack = s1_valid & (s1_kind == 1)
        is_rto = s1_valid & (s1_kind == 2)
        is_check = s1_valid & (s1_kind == 3)

        # the deadline of a timer (MR-TX-061) from the row's t_live and backoff, and of the new row
        tb = records.TIME_BITS

        def rto_now(r):
            # the row's rto x 2^backoff from its rto_x (MR-TX-038): xor with a constant
            return r.rto_x ^ Const(self.rto_ns, tb)

        # the row's rto_x after a timeout (MR-TX-061): doubled below the backoff's ceiling, a
        # shift between xors with a constant
        rto_x_doubled = ((((row.rto_x ^ Const(self.rto_ns, tb)) << 1) ^ Const(self.rto_ns, tb + 1))
                         [:tb])

        s2_kind = Signal(2)
        s2_row = Signal(rb)
        s2_conn = Signal(cb)
        s2_path = Signal(8)
        s2_n = Signal(9)
        s2_lost_dist = Signal(9)
        s2_moved = Signal()             # skip the lost prefix only, not n (MR-TX-052)
        s2_sack = Signal(P.SACK_BITS)
        s2_at = Signal(10)              # floor - cum: the walker's start in the SACK (MR-TX-331)
        s2_ptr = Signal(pw)
        s2_trig = Signal(dist_bits)
        s2_trig_near = Signal()
        s2_job = Signal()
        s2_ins = Signal()
        s2_err = Signal()
        push_job = Signal()
        push_ins = Signal()
        push_err = Signal()
        push_probe = Signal()
        s2_probe = Signal()
        s2_psn = Signal(psn_bits)       # MR-TX-162: the probe's PSN, the path's newest
        s2_to, s2_verdict = Signal(), Signal(2)     # MR-TX-197: a timeout's verdict instead

        s2_t_live = Signal(records.TIME_BITS)
        s2_rto_x = Signal(tb)
        s2_t_ack = Signal(tb)
        s2_ce = Signal(Shape.cast(lay.job["ce"].shape).width)   # MR-TX-070: the ACK's CE count, saturated
        m.d.sync += [s2_t_live.eq(nrow.t_live), s2_rto_x.eq(nrow.rto_x), s2_t_ack.eq(now),
                     s2_ce.eq(Mux(s1_ack.ece, Mux(s1_ack.ce_count[len(s2_ce):].any(), CE_MAX,
                                                  s1_ack.ce_count[:len(s2_ce)]), 0))]
        if self.hints:                  # MR-TX-491: the ACK's hint beside its CE count
            s2_hint = Signal(RATE_BITS)
            m.d.sync += s2_hint.eq(s1_ack.hint)

        # sent (MR-TX-020, MR-TX-052)
        # next_psn - floor < 256: bit 8 of the 9-bit distance clear (MR-TX-038)
        # MR-TX-471: a row's first packet (not `based`) is recorded at any PSN
        sent_ok = (((s1_sent.psn == row.next_psn) | ~row.based)
                   & ~_sum_bit(row.next_psn, ~row.floor, dist_bits - 1, 1)
                   & (s1_sent.path < lay.paths))                # MR-TX-423
        record = Signal(lay.rec)
        m.d.comb += [record.slot.eq(s1_sent.slot), record.chunk.eq(s1_sent.chunk),
                     record.t_sent.eq(s1_sent.t_sent), record.nbytes.eq(s1_sent.nbytes),
                     record.req.eq(s1_sent.req), record.abort.eq(s1_sent.abort),
                     record.lap.eq(s1_sent.lap)]                                # MR-TX-209
        m.d.comb += [rec_wr.addr.eq(free_head), rec_wr.data.eq(record),
                     link_wr.addr.eq(row.tail), link_wr.data.eq(free_head)]
        # MR-TX-364: the probe bit's address and value by the event's kind alone (a sent packet's
        # 0 at its record, a check's 1 at the row's tail), not by the tail probe's decision
        m.d.comb += [prb_s1.addr.eq(Mux(s1_kind == 3, row.tail, free_head)), prb_s1.data.eq(s1_kind == 3)]
        # MR-TX-067: the row's new fields are those of a recorded packet whatever sent_ok
        # says; sent_ok gates the write, the pool's writes and the pushes
        with m.If(is_sent):
            # MR-TX-471: the packet's PSN + 1 (the row's next PSN + 1 whenever it is recorded
            # but as a row's first); an empty row's floor and lost_upto the packet's PSN (as
            # they were, but for a row's first: its initial PSN)
            m.d.comb += [nrow.next_psn.eq(s1_sent.psn + 1), nrow.based.eq(1),
                         nrow.tail.eq(free_head), nrow.t_new.eq(s1_sent.t_sent)]
            with m.If(empty):
                m.d.comb += [nrow.floor.eq(s1_sent.psn), nrow.lost_upto.eq(s1_sent.psn)]
            with m.If(no_live):
                m.d.comb += [nrow.t_live.eq(s1_sent.t_sent), nrow.timer_on.eq(1),
                             nrow.listed.eq(1)]
            with m.If(sent_ok):
                m.d.comb += [free_pop.eq(1), rec_wr.en.eq(1), link_wr.en.eq(~empty), prb_s1.en.eq(1),
                             inc["sent"].eq(1), row_write.eq(1), push_job.eq(empty),
                             push_ins.eq(no_live & ~row.listed)]
            with m.Else():
                m.d.comb += inc["sent_bad"].eq(1)

        # ACK (MR-TX-021, MR-TX-052): protocol.sack_resolve on the row, as MR-TX-037 computes it:
        # n24 = new floor - floor (mod 2^24), the new floor cum + e registered in S1a
        # (MR-TX-039), so each test is a comparison of two registers
        cum = s1_ack.cum
        new_floor = s1_floor

        def ack_terms(r):
            """(stale, over, moved, to_next) for row ``r``: n24 = new floor - floor; its tests
            carry-free (MR-TX-037, MR-TX-038, MR-TX-039)."""
            nf, nfl = new_floor, ~r.floor
            low_carry = _carry(nf[:dist_bits], nfl[:dist_bits], dist_bits, 1)
            high_zero = _sum_is(nf[dist_bits:], nfl[dist_bits:], 0, psn_bits - dist_bits, low_carry)
            n_zero = nf == r.floor
            n_neg = _sum_bit(nf, nfl, psn_bits - 1, 1)
            cmf_neg = _sum_bit(cum, nfl, psn_bits - 1, 1)
            stale = n_zero | (cmf_neg & n_neg)                      # n <= 0

            def behind(psn):
                # psn - (cum + e) < 0: as n <= 256 once not stale, its sign bit; MR-TX-477's
                # control: a plain unsigned compare
                return psn < nf if self.psn_plain else _sum_bit(psn, ~nf, psn_bits - 1, 1)
            if self.psn_plain:                                      # MR-TX-477's control
                stale = nf <= r.floor
            over = ~high_zero | behind(r.next_psn)                  # n > next_psn - floor
            # MR-TX-067: used only for an ACK that resolves (0 < n <= next_psn - floor), so
            # lost_upto - (cum + e) is in [-256, 255] and next_psn - (cum + e) in [0, 255]:
            # their 9 low bits decide (a 9-bit sign, a 9-bit equality)
            moved = _behind_short(r.lost_upto, nf, dist_bits)
            to_next = r.next_psn[:dist_bits] != nf[:dist_bits]
            return Cat(stale, over, moved, to_next)

        terms = Signal(4)
        m.d.comb += terms.eq(both(ack_terms))
        stale, over, moved, to_next = terms[0], terms[1], terms[2], terms[3]
        # MR-TX-423: n (the records the ACK resolves) and floor - cum, for the job only
        n, fmc = Signal(dist_bits, name="ack_n"), Signal(10, name="ack_fmc")
        m.d.comb += [n.eq((new_floor[:dist_bits] + ~row.floor[:dist_bits] + 1)[:dist_bits]),
                     fmc.eq((row.floor[:10] - cum[:10])[:10])]
        with m.If(is_ack):
            # MR-TX-067: the row's new fields are those of an ACK that resolves, whatever the
            # ACK is; the decision (the 24-bit tests) gates the write and the pushes only
            m.d.comb += [nrow.floor.eq(new_floor), nrow.backoff.eq(0), nrow.rto_x.eq(row.rto),
                         nrow.consec.eq(0), nrow.probed.eq(0)]
            # MR-TX-052, MR-TX-055: the oldest live record resolved: the timer restarts
            # from the send time of the path's newest record if live records remain
            with m.If(moved):
                m.d.comb += nrow.lost_upto.eq(new_floor)
                with m.If(to_next):
                    m.d.comb += [nrow.t_live.eq(row.t_new), nrow.timer_on.eq(1),
                                 nrow.listed.eq(1)]
                with m.Else():
                    m.d.comb += nrow.timer_on.eq(0)
            with m.If(s1_ack.nak):
                m.d.comb += inc["naks"].eq(1)
            with m.Elif((s1_ack.path >= lay.paths) | (~stale & over)):
                m.d.comb += inc["acks_bad"].eq(1)
            with m.Elif(stale):
                m.d.comb += inc["acks_stale"].eq(1)
            with m.Else():
                m.d.comb += [inc["acks"].eq(1), push_job.eq(1), row_write.eq(1),
                             push_ins.eq(moved & to_next & ~row.listed),
                             h_write.eq(1)]

        # MR-TX-213: the health row's new value by the event's kind alone (what the event writes
        # if it writes); S1b's decisions give the write enable only, so the row's data and its
        # forward register do not wait for them
        with m.If(is_ack):
            # a resolving ACK (MR-TX-163)
            m.d.comb += h_new[:lay.paths].eq(health_raw | path_bit)
            if self.ages:
                # MR-TX-203: the path's progress dated; MR-TX-204: an ECE echo (with CE
                # marks) dated, the ECN bit kept
                for q in range(lay.paths):
                    with m.If(path_bit[q]):
                        m.d.comb += h_new[t_off + q * tw:t_off + (q + 1) * tw].eq(now)
                with m.If(s1_ack.ece & s1_ack.ce_count.any()):
                    m.d.comb += [h_new[lay.paths].eq(1), h_new[e_off:e_off + tw].eq(now)]
            else:
                m.d.comb += h_new[lay.paths].eq(s1_ack.ece)
        with m.Elif(is_rto):
            if self.ages:
                # MR-TX-203: the estimator's srtt to the health memory's copy
                for q in range(lay.paths):
                    with m.If(path_bit[q]):
                        m.d.comb += srtt_x_of(h_new, q).eq(s1_srtt ^ srtt0_c)
        with m.Elif(is_check):
            # a timeout (MR-TX-163)
            m.d.comb += h_new[:lay.paths].eq(health_raw & ~path_bit)

        # RTO (MR-TX-054): the estimator's new RTO; a timer not backed off uses it at once
        rto_field = Signal(dur)
        m.d.comb += rto_field.eq(s1_rto ^ Const(self.rto_ns, dur))
        with m.If(is_rto):
            m.d.comb += [row_write.eq(1), nrow.rto.eq(rto_field)]
            if self.ages:
                # MR-TX-203: the estimator's srtt to the health memory's copy
                m.d.comb += h_write.eq(1)
            with m.If(row.backoff == 0):                    # MR-TX-423: the row's write only
                m.d.comb += nrow.rto_x.eq(rto_field)

        # check (MR-TX-063, MR-TX-064): the wheel popped the path
        consec = Signal(4)
        m.d.comb += consec.eq(Mux(row.consec == CONSEC_MAX, CONSEC_MAX, row.consec + 1))
        # due: now - t_live - rto x 2^backoff >= 0 (modulo 2^32), a carry-save step and one add
        def due_of(r):
            dsum, dcarry = _csa(now, ~r.t_live, ~rto_now(r))
            return ~_sum_bit(dsum, Cat(Const(1, 1), dcarry[:tb - 1]), tb - 1, 1)
        due = both(due_of)
        # MR-TX-162: the expiry sends a tail probe: probes on, none sent at the last expiry, the
        # path active (no timeout since its progress) and another path of the connection healthy
        probe_go = (Const(int(self.probes), 1) & ~row.probed & (row.consec == 0)
                    & others_aged)
        # MR-TX-196: a timeout's path verdict (protocol.path_on_timeout on the consecutive
        # timeouts with this one, the ECN bit and the other paths' health)
        others = others_aged
        verdict = Signal(2)
        m.d.comb += verdict.eq(Mux(ecn, P.PATH_KEEP, Mux(~others, P.PATH_REROUTE, Mux(
            consec >= RETIRE_AFTER, P.PATH_RETIRE, P.PATH_SUSPECT))))
        s1_to = Signal()                # MR-TX-197: the push on m_probe is a verdict
        with m.If(is_check):
            m.d.comb += [row_write.eq(1), nrow.listed.eq(0)]
            with m.If(row.timer_on & due & probe_go):
                # the timer runs again from now (the insert's deadline: now + rto x 2^backoff)
                m.d.comb += [inc["tail_probes"].eq(1), push_probe.eq(1), push_ins.eq(1),
                             nrow.probed.eq(1), nrow.t_live.eq(now), nrow.listed.eq(1)]
            with m.Elif(row.timer_on & due):
                m.d.comb += [inc["timeouts"].eq(1), push_job.eq(1),
                             h_write.eq(1),
                             nrow.probed.eq(0), push_probe.eq(1), s1_to.eq(1),
                             nrow.lost_upto.eq(row.next_psn), nrow.timer_on.eq(0),
                             nrow.consec.eq(consec),
                             nrow.backoff.eq(Mux(row.backoff == BACKOFF_MAX_LOG2, BACKOFF_MAX_LOG2,
                                                 row.backoff + 1)),
                             nrow.rto_x.eq(Mux(row.backoff == BACKOFF_MAX_LOG2, row.rto_x,
                                               rto_x_doubled))]
                with m.If(consec == self.retry_limit + 1):
                    m.d.comb += [inc["errors"].eq(1), push_err.eq(1)]
            with m.Elif(row.timer_on):
                m.d.comb += [nrow.listed.eq(1), push_ins.eq(1)]

        # the job's fields are registered whatever the decision (only a pushed job reads
        # them), so the decision is not in front of them (MR-TX-038)
        m.d.sync += [s2_kind.eq(Mux(s1_kind == 0, JOB_RESTART,
                                    Mux(s1_kind == 1, JOB_WALK, JOB_EXPIRE))),
                     s2_ptr.eq(free_head), s2_n.eq(Mux(s1_kind == 1, n, live_n)),
                     s2_at.eq(fmc),
                     s2_sack.eq(s1_ack.sack),
                     s2_lost_dist.eq(lost_dist), s2_moved.eq((s1_kind != 1) | moved),
                     s2_trig.eq(trig), s2_trig_near.eq(trig_near)]
        # MR-TX-201: a verdict counted from its S2a registers (the decode off S1b's path)
        for v, name in ((P.PATH_KEEP, "path_keeps"), (P.PATH_REROUTE, "path_reroutes"),
                        (P.PATH_SUSPECT, "paths_suspected"), (P.PATH_RETIRE, "paths_retired")):
            m.d.comb += inc[name].eq(s2_probe & s2_to & (s2_verdict == v))
        # MR-TX-212: S2a's valid is the OR of its push flags after the registers, not a
        # register of the OR of S1b's decisions (one LUT level off S1b's deepest paths)
        m.d.comb += s2_valid.eq(s2_job | s2_ins | s2_err | s2_probe)
        m.d.sync += [s2_job.eq(push_job),
                     s2_ins.eq(push_ins), s2_err.eq(push_err), s2_row.eq(s1_row),
                     s2_probe.eq(push_probe), s2_psn.eq(row.next_psn - 1),
                     s2_to.eq(s1_to), s2_verdict.eq(verdict),
                     s2_conn.eq(s1_row[pb:]), s2_path.eq(s1_row[:pb])]
        if self.verdict_health:
            # MR-TX-300: the verdict's health bits through S2a and S2b beside its verdict
            s2_healthy, s2b_healthy = Signal(lay.paths), Signal(lay.paths)
            m.d.sync += [s2_healthy.eq(healthy_bits), s2b_healthy.eq(s2_healthy)]
        # MR-TX-240: the row's write from the forward register, a cycle after S1b
        m.d.comb += [path_wr.en.eq(wb_valid), path_wr.addr.eq(wb_addr), path_wr.data.eq(wb_data)]
        m.d.sync += [wb_valid.eq(row_write), wb_addr.eq(s1_row), wb_data.eq(nrow)]

        # -- stage S2a: the insert deadline's pieces (MR-TX-038), registered into S2b; the walk
        # job carries the ACK's SACK as it came and floor - cum, from which the walker reads the
        # bitmap of the resolved records (MR-TX-331: no shift of the SACK)
        walk = s2_kind == JOB_WALK
        job = Signal(job_st)
        m.d.comb += [job.kind.eq(s2_kind), job.row.eq(s2_row), job.n.eq(s2_n), job.skip.eq(Mux(s2_moved, s2_lost_dist, s2_n)), job.ptr.eq(s2_ptr),
                     job.sack.eq(s2_sack), job.at.eq(s2_at),
                     job.smp.eq(walk & s2_trig_near & (s2_trig < s2_n)), job.trig.eq(s2_trig),
                     job.t_ack.eq(s2_t_ack), job.ce.eq(s2_ce)]
        if self.hints:
            m.d.comb += job.hint.eq(s2_hint)
        # t_live + rto x 2^backoff by carry-select in 8-bit pieces: the sums with and
        # without a carry in and the carries (comparisons) in S2a, the selection in S2b
        dl_sum = _cs_sum(m, s2_t_live, s2_rto_x ^ Const(self.rto_ns, tb), tb, "dl", carry_chain=cc)
        s2b_job = Signal(job_st)
        s2b_row = Signal(rb)
        s2b_conn = Signal(cb)
        s2b_path = Signal(8)
        s2b_job_push, s2b_ins_push, s2b_err_push = Signal(), Signal(), Signal()
        s2b_probe_push, s2b_psn = Signal(), Signal(psn_bits)
        s2b_to, s2b_verdict = Signal(), Signal(2)
        m.d.sync += [s2b_valid.eq(s2_valid), s2b_job_push.eq(s2_job), s2b_ins_push.eq(s2_ins),
                     s2b_err_push.eq(s2_err), s2b_job.eq(job),
                     s2b_row.eq(s2_row), s2b_conn.eq(s2_conn),
                     s2b_path.eq(s2_path), s2b_probe_push.eq(s2_probe), s2b_psn.eq(s2_psn),
                     s2b_to.eq(s2_to), s2b_verdict.eq(s2_verdict)]
        # MR-TX-364: the probe bit's write enable from registers: a sent packet's (prb_sent) or
        # the tail probe S2a holds (a push on m_probe that is not a timeout's verdict)
        m.d.comb += prb_wr.en.eq(prb_sent | (s2_probe & ~s2_to))

        # -- stage S2b: the pushes
        m.d.comb += [job_q.w_en.eq(s2b_job_push), job_q.w_data.eq(s2b_job)]
        insert = Signal(lay.insert)
        m.d.comb += [insert.row.eq(s2b_row), insert.deadline.eq(dl_sum),
                     ins_q.w_en.eq(s2b_ins_push), ins_q.w_data.eq(insert)]
        err = Signal(error_st)
        m.d.comb += [err.conn.eq(s2b_conn), err.path.eq(s2b_path), err.status.eq(STATUS_RETRY_EXC),
                     error_q.w_en.eq(s2b_err_push), error_q.w_data.eq(err)]
        prb = Signal(probe_st)
        # MR-TX-197: a verdict's PSN 0, a probe's verdict 0 (selected after the registers, off
        # S1b's timeout decision)
        m.d.comb += [prb.conn.eq(s2b_conn), prb.path.eq(s2b_path),
                     prb.psn.eq(Mux(s2b_to, 0, s2b_psn)),
                     prb.to.eq(s2b_to), prb.verdict.eq(Mux(s2b_to, s2b_verdict, 0)),
                     probe_q.w_en.eq(s2b_probe_push), probe_q.w_data.eq(prb)]
        if self.verdict_health:
            m.d.comb += prb.healthy.eq(Mux(s2b_to, s2b_healthy, 0))

        # the estimator's state (MR-TX-054), the walker hands it the trigger record's sample
        e_stage = Signal(range(EST_CYCLES + 1))
        e_start = Signal()              # the walker hands a sample to the idle estimator
        e_row = Signal(rb)
        e_t_sent, e_t_ack = Signal(records.TIME_BITS), Signal(records.TIME_BITS)

        # -- the walker (MR-TX-032): one record per cycle from the path's head
        qjob = data.View(job_st, job_q.r_data)
        walk_addr = Signal(pw)
        m.d.comb += [rec_rd.addr.eq(walk_addr), link_rd.addr.eq(walk_addr), prb_rd.addr.eq(walk_addr),
                     head_rd.addr.eq(Mux(w_state == 1, w_row, qjob.row))]
        report = Signal(report_st)
        m.d.comb += [report.conn.eq(w_conn), report.path.eq(w_path), report.slot.eq(rec.slot),
                     report.chunk.eq(rec.chunk), report.abort.eq(rec.abort),
                     report.lap.eq(rec.lap),                                    # MR-TX-209
                     report.late.eq(~w_skip_zero),                              # MR-TXS-445
                     acked_q.w_data.eq(report), resend_q.w_data.eq(report.as_value()[:resend_st.size])]

        # MR-TX-071: the ACK event of the walk that ended last cycle, its srtt from ev_rd
        ev_valid = Signal()
        ev = Signal(lay.ackev)
        m.d.sync += ev_valid.eq(0)
        m.d.comb += ev_rd.addr.eq(w_row)
        ev_est = data.View(est_lay, ev_rd.data)
        ev_w = Signal(ackev_st)
        _copy_fields(m, ev_w, ev, [k for k, _ in ackev_st])
        m.d.comb += [ev_w.srtt.eq(Mux(ev_est.valid, ev_est.srtt, srtt0(self.rto_ns))),
                     ackev_q.w_en.eq(ev_valid), ackev_q.w_data.eq(ev_w)]

        if self.verdict_health:
            m.d.comb += self.ackev_busy.eq((w_state != 0) | ev_valid | ackev_q.r_rdy)

        # MR-TX-312: a job taken (in the idle state, or beside a walk's last record) and a
        # record stepped over by a walk: one flag each, the registers loaded or shifted after
        # the walker's states (a load wins), so each bit is one mux behind a clock enable
        w_take, w_shift = Signal(), Signal()

        def take_job():
            m.d.comb += w_take.eq(1)

        with m.Switch(w_state):
            with m.Case(0):
                with m.If(job_q.r_rdy):
                    m.d.comb += job_q.r_en.eq(1)
                    with m.If(qjob.kind == JOB_RESTART):
                        m.d.comb += [head_wr.en.eq(1), head_wr.addr.eq(qjob.row),
                                     head_wr.data.eq(qjob.ptr)]
                    with m.Else():
                        take_job()
            with m.Case(1):
                m.d.comb += walk_addr.eq(head_rd.data)
                m.d.sync += [w_cursor.eq(head_rd.data), w_left.eq(w_n), w_left_one.eq(w_n == 1),
                             w_state.eq(2), w_bytes.eq(0), w_pkts.eq(0)]
            with m.Case(2):
                expire = w_expire
                to_acked = ~expire & w_bit
                to_resend = ~to_acked & w_skip_zero
                # MR-TXS-445: an acknowledged record of the lost prefix (a timeout reported
                # it) is reported too, flagged late (`report.late`, w_skip not 0)
                # MR-TX-071: an ACK's last record waits for room for its event
                ev_room = expire | ~w_left_one | ackev_q.w_rdy
                advance = ((~to_acked & ~to_resend) | (to_acked & acked_q.w_rdy)
                           | (to_resend & resend_q.w_rdy)) & ev_room
                m.d.comb += walk_addr.eq(Mux(advance, link_data, w_cursor))
                last = Signal()
                with m.If(advance):
                    m.d.comb += [acked_q.w_en.eq(to_acked), resend_q.w_en.eq(to_resend),
                                 inc["acked"].eq(to_acked),
                                 inc["gap_losses"].eq(to_resend & ~expire),
                                 inc["timeout_losses"].eq(to_resend & expire)]
                    m.d.sync += w_cursor.eq(link_data)
                    with m.If(expire):
                        with m.If(~w_skip_zero):
                            m.d.sync += [w_skip.eq(w_skip - 1), w_skip_zero.eq(w_skip == 1)]
                        with m.Else():
                            m.d.sync += [w_left.eq(w_left - 1), w_left_one.eq(w_left == 2)]
                            m.d.comb += last.eq(w_left_one)
                    with m.Else():
                        # MR-TX-054: the trigger record, acknowledged: its sample to the
                        # estimator if it is idle
                        with m.If(w_smp & w_trig_zero):
                            m.d.sync += w_smp.eq(0)
                            # MR-TX-165: a probed record's ACK is ambiguous: no sample
                            m.d.comb += e_start.eq(to_acked & (e_stage == 0) & ~prb_rd.data)
                            with m.If(e_start):
                                m.d.sync += [e_row.eq(w_row),
                                             e_t_sent.eq(rec.t_sent), e_t_ack.eq(w_t_ack)]
                        m.d.sync += [w_trig.eq(w_trig - 1), w_trig_zero.eq(w_trig == 1)]
                        m.d.comb += [free_push.eq(1), free_wr.data.eq(w_cursor),
                                     last.eq(w_left_one)]
                        # MR-TX-070: the record's bytes and packet if acknowledged; at the
                        # last one the event is registered, pushed the next cycle (MR-TX-071)
                        ev_bytes = w_bytes + Mux(to_acked, rec.nbytes, 0)
                        ev_pkts = w_pkts + to_acked
                        m.d.sync += [w_bytes.eq(ev_bytes), w_pkts.eq(ev_pkts)]
                        with m.If(w_left_one):
                            m.d.sync += [ev_valid.eq(1), ev.conn.eq(w_conn), ev.path.eq(w_path),
                                         ev.bytes.eq(ev_bytes), ev.pkts.eq(ev_pkts),
                                         ev.ce.eq(w_ce), ev.now.eq(w_t_ack)]
                            if self.hints:
                                m.d.sync += ev.hint.eq(w_hint)
                        m.d.comb += w_shift.eq(1)
                        m.d.sync += [w_left.eq(w_left - 1),
                                     w_left_one.eq(w_left == 2),
                                     w_skip.eq(w_skip - ~w_skip_zero),
                                     w_skip_zero.eq(w_skip <= 1)]
                        with m.If(w_left_one):
                            m.d.comb += [head_wr.en.eq(1), head_wr.addr.eq(w_row),
                                         head_wr.data.eq(link_data)]
                    with m.If(last):
                        # the next walk job starts now: its head is read beside the last
                        # record (the head read is transparent to this cycle's head write)
                        with m.If(job_q.r_rdy & (qjob.kind != JOB_RESTART)):
                            m.d.comb += job_q.r_en.eq(1)
                            take_job()
                        with m.Else():
                            m.d.sync += w_state.eq(0)
        with m.If(w_take):
            m.d.sync += [w_state.eq(1), w_row.eq(qjob.row),
                         w_conn.eq(qjob.row[pb:]), w_path.eq(qjob.row[:pb]), w_n.eq(qjob.n),
                         w_skip.eq(qjob.skip), w_skip_zero.eq(qjob.skip == 0),
                         w_sack.eq(Cat(qjob.sack[-1], qjob.sack[:-1])), w_at.eq(qjob.at),
                         w_smp.eq(qjob.smp),
                         w_trig.eq(qjob.trig), w_t_ack.eq(qjob.t_ack), w_ce.eq(qjob.ce),
                         w_expire.eq(qjob.kind == JOB_EXPIRE), w_trig_zero.eq(qjob.trig == 0)]
            if self.hints:
                m.d.sync += w_hint.eq(qjob.hint)
        with m.Elif((w_state == 1) | w_shift):
            at_neg, at_zero = w_at[-1], w_at == 0
            m.d.sync += [w_bit.eq(Mux(at_neg | at_zero, at_neg, w_sack.bit_select(w_at[:8], 1))),
                         w_at.eq(w_at + 1)]

        # -- the RTT estimator (MR-TX-054): one sample at a time, a stage per cycle, each sum a
        # carry-select over two stages (MR-TX-038): (1) ACK time - send time; (2) the sample
        # saturated to 24 bits, the memory's row registered; (3) sample - srtt, srtt - sample,
        # rttvar - rttvar/4; (4) srtt + err/8, rttvar - rttvar/4 + |err|/4
        # (protocol.rtt_update_ns); (5) the new srtt and rttvar (or the first sample's) written,
        # srtt + srtt/2 and srtt + 4 rttvar (protocol.rto_value_ns); (6) the larger and the
        # bounds' tests; (7) the clamp, pushed (waiting while the RTO queue is full)
        tw = records.TIME_BITS
        m.d.comb += [est_rd.addr.eq(e_row), est_wr.addr.eq(e_row)]
        est = data.View(est_lay, est_rd.data)
        diff = _cs_sum(m, e_t_ack, ~e_t_sent, tw, "e_diff", 1, carry_chain=cc)
        e_sample = Signal(dur)
        e_first = Signal()
        e_old_srtt, e_old_var = Signal(dur), Signal(dur)
        # 25-bit two's complement differences, both signs, and rttvar - rttvar/4
        err = _cs_sum(m, e_sample, ~Cat(e_old_srtt, Const(0, 1)), dur + 1, "e_err", 1, carry_chain=cc)
        nerr = _cs_sum(m, e_old_srtt, ~Cat(e_sample, Const(0, 1)), dur + 1, "e_nerr", 1, carry_chain=cc)
        var_keep = _cs_sum(m, e_old_var, ~(e_old_var >> 2), dur, "e_keep", 1, carry_chain=cc)
        err_neg = err[dur]
        abs_err = Mux(err_neg, nerr, err)[:dur]
        srtt_new = _cs_sum(m, e_old_srtt, Cat(err[3:], err_neg, err_neg, err_neg), dur, "e_srtt",
                           carry_chain=cc)
        var_new = _cs_sum(m, var_keep, abs_err >> 2, dur, "e_var", carry_chain=cc)
        srtt_f, var_f = Signal(dur), Signal(dur)
        m.d.comb += [srtt_f.eq(Mux(e_first, e_sample, srtt_new)),
                     var_f.eq(Mux(e_first, e_sample >> 1, var_new))]
        tb2 = dur + 3
        term_a = _cs_sum(m, srtt_f, srtt_f >> 1, tb2, "e_a", carry_chain=cc)
        term_b = _cs_sum(m, srtt_f, Cat(Const(0, 2), var_f), tb2, "e_b", carry_chain=cc)
        e_a, e_b = Signal(tb2), Signal(tb2)
        e_a_big, e_a_lo, e_a_hi, e_b_lo, e_b_hi = (Signal(name=f"e_{n}") for n in
                                                   ("a_big", "a_lo", "a_hi", "b_lo", "b_hi"))
        larger = Mux(e_a_big, e_a, e_b)
        rto_w = Signal(rto_lay)
        if self.ages:
            # MR-TX-203: the new srtt, registered where it is written (stable until the push)
            e_srtt = Signal(dur)
            with m.If(e_stage == EST_WRITE):
                m.d.sync += e_srtt.eq(srtt_f)
            m.d.comb += rto_w.srtt.eq(e_srtt)
        if cc:
            # MR-TX-363: the bounds tested on the larger term in the push stage (its registers
            # hold from stage 6 until the push): two compares, not four
            rto_lo, rto_hi = larger < RTO_MIN_NS, larger > RTO_MAX_NS
        else:
            rto_lo, rto_hi = Mux(e_a_big, e_a_lo, e_b_lo), Mux(e_a_big, e_a_hi, e_b_hi)
        m.d.comb += [rto_w.row.eq(e_row),
                     rto_w.rto.eq(Mux(rto_lo, RTO_MIN_NS, Mux(rto_hi, RTO_MAX_NS, larger))),
                     rto_q.w_data.eq(rto_w)]
        with m.Switch(e_stage):
            # MR-TX-073: the start in the idle stage's case, so only bit 0 waits for it
            with m.Case(0):
                with m.If(e_start):
                    m.d.sync += e_stage.eq(1)
            with m.Case(1):
                m.d.sync += e_stage.eq(2)
            with m.Case(2):
                m.d.sync += [e_sample.eq(Mux(diff[tw - 1], 0,
                                             Mux(diff[dur:].any(), SAMPLE_MAX, diff[:dur]))),
                             e_first.eq(~est.valid), e_old_srtt.eq(est.srtt),
                             e_old_var.eq(est.rttvar), e_stage.eq(3)]
            with m.Case(3):
                m.d.sync += e_stage.eq(4)
            with m.Case(4):
                m.d.sync += e_stage.eq(5)
            with m.Case(EST_WRITE):
                m.d.comb += [est_wr.en.eq(1), est_wr.data.eq(Cat(srtt_f, var_f, Const(1, 1)))]
                m.d.sync += e_stage.eq(6)
            with m.Case(6):
                m.d.sync += [e_a.eq(term_a), e_b.eq(term_b), e_a_big.eq(term_a > term_b),
                             e_a_lo.eq(term_a < RTO_MIN_NS), e_a_hi.eq(term_a > RTO_MAX_NS),
                             e_b_lo.eq(term_b < RTO_MIN_NS), e_b_hi.eq(term_b > RTO_MAX_NS),
                             e_stage.eq(7)]
            with m.Case(EST_CYCLES):
                m.d.comb += rto_q.w_en.eq(1)
                with m.If(rto_q.w_rdy):
                    m.d.sync += e_stage.eq(0)

        # -- the timer wheel (MR-TX-060): a pop's second cycle, an insert, a pop, the next slot
        # the wheel takes an insert from a second register, not from the queue's LUT-RAM read
        # (MR-TX-038): the first register takes the queue's head when it is empty or moves
        # on, the second the first's with its slot, decided there (from registers)
        ins_r = Signal(lay.insert)
        ins_take = ~pop_phase & ins_r2_valid
        ins_move = ins_r_valid & (~ins_r2_valid | ins_take)
        m.d.comb += ins_q.r_en.eq(ins_q.r_rdy & (~ins_r_valid | ins_move))
        with m.If(ins_q.r_en):
            m.d.sync += [ins_r_valid.eq(1), ins_r.eq(ins_q.r_data)]
        with m.Elif(ins_move):
            m.d.sync += ins_r_valid.eq(0)
        # the slot of the deadline's distance ds = slot - ct (MR-TX-038): its sign bit and
        # whether ds >= WHEEL_SLOTS - 1 as carry-free tests; within the wheel the slot is the
        # deadline's own slot bits (ct + ds), beyond it ct - 1, already due ct. Decided in
        # the first register and registered with the insert, a cycle ahead of its write (ct
        # does not move while an insert waits in the queue or the first register, MR-TX-060),
        # as a slot and a one-hot
        sb = (WHEEL_SLOTS - 1).bit_length()
        dl_slot = ins_r.deadline[self.slot_log2:]
        late = _sum_bit(dl_slot, ~ct, tbits - 1, 1)
        far = ~_sum_bit(dl_slot, ~ct_far, tbits - 1, 1)       # slot - (ct + 63) >= 0
        cur_before = Signal(range(WHEEL_SLOTS))
        m.d.comb += cur_before.eq(cur - 1)
        ins_r2 = Signal(lay.insert)
        ins_slot = Signal(range(WHEEL_SLOTS))
        ins_onehot = Signal(WHEEL_SLOTS)
        # MR-TX-362: the slot selected, then decoded once (one decoder, not one a candidate)
        slot_sel = Signal(range(WHEEL_SLOTS))
        m.d.comb += slot_sel.eq(Mux(late, cur, Mux(far, cur_before, dl_slot[:sb])))
        with m.If(ins_move):
            m.d.sync += [ins_r2_valid.eq(1), ins_r2.eq(ins_r),
                         ins_slot.eq(slot_sel), ins_onehot.eq(Const(1, WHEEL_SLOTS) << slot_sel)]
        with m.Elif(ins_take):
            m.d.sync += ins_r2_valid.eq(0)
        qins = ins_r2
        m.d.comb += st_rd_ins.addr.eq(ins_slot)
        ins_slot_valid = (slot_valid & ins_onehot).any()
        m.d.comb += [wnext_rd.addr.eq(cur_head), wnext_wr.addr.eq(st_rd_ins.data),
                     wnext_wr.data.eq(qins.row)]
        with m.If(pop_phase):
            m.d.comb += [sh_wr.en.eq(1), sh_wr.addr.eq(pop_slot), sh_wr.data.eq(wnext_rd.data)]
            m.d.sync += pop_phase.eq(0)
        with m.Elif(ins_r2_valid):
            with m.If(ins_slot_valid):
                m.d.comb += wnext_wr.en.eq(1)
            with m.Else():
                m.d.comb += [sh_wr.en.eq(1), sh_wr.addr.eq(ins_slot), sh_wr.data.eq(qins.row)]
                m.d.sync += slot_valid.eq(slot_valid | ins_onehot)
            m.d.comb += [st_wr.en.eq(1), st_wr.addr.eq(ins_slot), st_wr.data.eq(qins.row)]
        with m.Elif(wheel_due):
            with m.If(~cur_valid):
                with m.If(~ins_q.r_rdy & ~ins_r_valid):
                    # MR-TX-208: the registers' increments as logic (no adder to share with
                    # now's, which would put slot_valid's OR before a carry chain)
                    m.d.sync += [ct.eq(Mux(slot_valid.any(), ct_inc, now_slot)),
                                 ct_inc.eq(Mux(slot_valid.any(), _inc(ct_inc), now_slot + 1)),
                                 ct_far.eq(Mux(slot_valid.any(), _inc(ct_far),
                                               now_slot + (WHEEL_SLOTS - 1)))]
            with m.Elif(check_take):
                with m.If(cur_head == st_rd_cur.data):
                    m.d.sync += slot_valid.bit_select(cur, 1).eq(0)
                with m.Else():
                    m.d.sync += [pop_phase.eq(1), pop_slot.eq(cur)]

        ct_moves = (~pop_phase & ~ins_r2_valid & ~ins_r_valid & ~ins_q.r_rdy & wheel_due
                    & ~cur_valid)
        m.d.sync += wheel_due.eq(Mux(ct_moves, slot_valid.any() & due_at_inc, due_at_ct))
        # MR-TX-072: slot ct's valid bit after the edge. ct moves only in a cycle with no insert,
        # pop or clear, to ct + 1 (whose bit is read from the registers: the 64-way read now
        # ends at a flip-flop's input) or, when no slot is valid, to now's slot (bit 0, as
        # slot_valid[ct + 1] then is); else slot ct's bit is set by an insert into it (decided
        # with the insert's slot, a register; set again if it was) and cleared by the pop of
        # its last path
        ins_sets_cur = ~pop_phase & ins_r2_valid & (ins_slot == cur)
        clears_cur = check_take & (cur_head == st_rd_cur.data)
        m.d.sync += cur_valid.eq(Mux(ct_moves, slot_valid.bit_select(ct_inc[:sb], 1),
                                     Mux(ins_sets_cur, 1, Mux(clears_cur, 0, cur_valid))))
        self.probe = {"slot_valid": slot_valid, "cur_valid": cur_valid, "ct": ct,
                      "w_trig": w_trig, "w_trig_zero": w_trig_zero, "w_expire": w_expire,
                      "w_state": w_state, "e_start": e_start, "e_stage": e_stage,
                      "job_r_en": job_q.r_en, "job_kind": qjob.kind,
                      **{f"{n}_{p}": getattr(q, p) for n, q in (
                          ("acked_q", acked_q), ("resend_q", resend_q), ("error_q", error_q),
                          ("ackev_q", ackev_q)) for p in ("w_rdy", "level")}}

        # -- outputs and counters (MR-TX-040)
        for q, st, port in ((acked_q, report_st, self.m_acked), (resend_q, resend_st, self.m_resend),
                            (error_q, error_st, self.m_error), (ackev_q, ackev_st, self.m_ackev),
                            (probe_q, probe_st, self.m_probe)):
            _copy_fields(m, port.payload, data.View(st, q.r_data), [k for k, _ in st])
        m.d.comb += [
            self.m_acked.valid.eq(acked_q.r_rdy),
            acked_q.r_en.eq(self.m_acked.ready),
            self.m_resend.valid.eq(resend_q.r_rdy),
            resend_q.r_en.eq(self.m_resend.ready),
            self.m_error.valid.eq(error_q.r_rdy),
            error_q.r_en.eq(self.m_error.ready),
            self.m_ackev.valid.eq(ackev_q.r_rdy),
            ackev_q.r_en.eq(self.m_ackev.ready),
            self.m_probe.valid.eq(probe_q.r_rdy),
            probe_q.r_en.eq(self.m_probe.ready),
        ]
        ctr_value = _counter_bank(m, [inc_late[n] for n in CTR], self.reg_addr[:(N_COUNTERS - 1).bit_length()],
                                  COUNTER_BITS, 8)
        m.d.sync += self.reg_data.eq(Mux(self.reg_addr < N_COUNTERS, ctr_value, 0))
        return m


def retransmit_256x4(width=64):
    """The small instance: 256 connections x 4 paths, a pool of 1,024 records (MR-TX-001)."""
    conns, paths, pool = SMALL
    return Retransmit(width, conns=conns, paths=paths, pool=pool)


def retransmit_engine(width=64):
    """MR-TX-456: the unit as ``Engine(width)`` builds it (2 x 4, a pool of 256, the engine's RTO,
    its frame interval: 8 at 64 bits)."""
    conns, paths, pool, kw = engine_params(width)
    return Retransmit(width, conns=conns, paths=paths, pool=pool, **kw)
