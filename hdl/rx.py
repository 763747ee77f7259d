"""RX engine, first slice: connection and path context, per-packet checks, receive window and
SACK, ACK/NAK requests, placement commands and payload steering (docs/spec/hw-rx.md, MR-RX-*).

``Rx(width=512, *, conns=4096, paths=8, keys=1024)`` (MR-RX-001). Ports (MR-RX-002), all
``amaranth.lib.stream`` except the counter read port:

============== ===== =====================================================================
port           dir   meaning
============== ===== =====================================================================
s_meta         in    parser metadata (models.parser.META_LAYOUT), one record per frame
s_payload      in    parser payload beats {data, keep, last} of frames with payload
s_cfg          in    configuration writes {table, addr, data} (MR-RX-060)
m_ack          out   ACK/NAK requests for the TX side (MR-RX-030, MR-RX-031)
m_place        out   placement commands {conn, addr, length} of accepted writes (MR-RX-032)
m_data         out   the payload beats of accepted writes, in command order (MR-RX-033)
m_cqe          out   completion records: WRITE_IMM, SEND, READ, atomics (MR-RX-084/085, MR-RX-104, MR-RX-112,
                     MR-RX-159/160)
m_rsp          out   READ requests executed, for the TX side's responses (MR-RX-131)
m_atom         out   atomics at their execution point, with their operands (MR-RX-155, MR-RX-164)
reg_addr/data  in/out 64-bit counter read, one cycle after the address (MR-RX-050)
============== ===== =====================================================================

Pipeline (MR-RX-040): the cycle a record is taken its connection, key, receive and READ rows
are read (the addresses are bits of the record) and S0 registers them; S1..S3 run the checks (MR-RX-049) and the placement address
(MR-RX-046), S2 reads the path row and S3 registers it with the path-row writes the read
missed forwarded (MR-RX-042, MR-RX-117); S4, the window stage, classifies the PSN against
the PSN-indexed SACK ring (MR-RX-013), decides the ACK and writes the row back; S5 pushes the outputs into their queues and counts.
Fast updates go one per cycle, also back to back on one path (MR-RX-043); a slide or a filled
gap holds the pipeline for HOLD_CYCLES (MR-RX-048). Beside S5, the message stage (MR-RX-080..085)
reads the message table row of the record's {connection, stream} (read in S3, registered in S4
with the writes of those two cycles forwarded, MR-RX-115), accounts the
chunk, delivers the stream's completed messages in order and hands their completion records to
S6, which queues them for ``m_cqe``; its decision (a new chunk, the delivery run) is taken in S4
and registered, so S4's verdict selects by registers (MR-RX-204).

Golden model: :class:`metaroce.models.rx.RxCycleModel`, cycle by cycle on every port.
"""
from amaranth.hdl import Array, Cat, Const, Module, Mux, Signal
from amaranth.lib import data, fifo, memory, stream, wiring
from amaranth.lib.wiring import In, Out

from ..models import protocol as P
from ..models import records
from ..models.parser import META_LAYOUT
from ..models.rx import (ACK_DELAY_RESET, GEN_BITS, TIME_BITS, TIMER_DEPTH, ACK_EVERY_RESET, CHUNK_RING, COUNTER_BITS, COUNTER_PIECE, CTR_ABANDONED, CTR_ACKS, CTR_CE,
                         CTR_CQES, CTR_DUP_CHUNKS, CTR_MSG_REFUSED, CTR_NAKS, CTR_PLACED_BYTES,
                         EPOCH_BITS, FIFO_DEPTH, HOLD_CYCLES, MSG_SLOTS, MTU_LOG2_RESET, SERIAL_INTERVAL,
                         SERIAL_PIECE, hold_cycles,
                         N_COUNTERS, RING_BITS, WC_RECV_RDMA_WITH_IMM, WC_RECV, RECV_SLOTS,
                         LATE_CODES, NAK_OF, TABLE_CONN, TABLE_GLOBAL, TABLE_KEY, TABLE_MSG,
                         TABLE_PATH, TABLE_RECV, TABLE_READ, TABLE_RSP_FREE, RD_SLOTS, SMALL, CAP_COUNT_BITS,
                         PLACE_MARK_BITS, RD_OP_WC, WC_REM_ACCESS_ERR, RxCode, layouts,
                         payload_layout)
from ..models.wire import Op
from .arith import _named, _prefix_sum
from .muxes import pick as _pick
from .counters import counter_ram
from .queue import HeadRegFIFO, SyncQueue, interval_ready

#: MR-RX-125: the hold cycle (the value of ``hold``) in which sl_row takes the slow record's
#: new row from the path table's write register: H1, the hold's first cycle, the one cycle
#: that register holds it
SL_ROW_LOAD = HOLD_CYCLES

#: MR-RX-310: the ring's index bits (bit ``psn mod RING_BITS``), the rotator's amount bits
RING_LOG2 = RING_BITS.bit_length() - 1
assert RING_BITS == 1 << RING_LOG2 == P.SACK_BITS
#: MR-RX-310: the hold's run vector, PSNs cum + 0 .. cum + 263: the ring's 256 (cum + 256 at
#: the ring's bit of cum), a slide's arrival at cum + 257 and zeros to a whole group of 8
RUN_BITS = RING_BITS + 8

#: MR-RX-320: from this frame interval on the pipeline holds one entry at a time (a record, a
#: timer's event, S0 .. S5 in six cycles; a configuration write beside it) and every row it reads
#: is written before the read: the RX is generated without the forwards between entries
#: (a test sets it to 1 for the negative control: the RTL without forwards at interval 1)
ALONE_INTERVAL = 6

#: MR-RX-300: the outcome counters 0..15 are one LUT-RAM bank (a row each); msg_slots (16), the
#: 17th outcome, a register of its own (a 16-row LUT RAM is one DPR16X4 per 4 bits)
BANK_ROWS = 16
assert len(RxCode) == BANK_ROWS + 1 and RxCode.MSG_SLOTS == BANK_ROWS

__all__ = ["Rx", "rx_256x4"]


def _thermometer_index(prefix):
    """The index of the lowest 0 of a group, modulo ``2 ** (len(prefix) - 1).bit_length()``,
    from its prefix-AND (``prefix[k]``: bits 0..k all ones, a thermometer): the count of ones
    is ``m`` where ``prefix[m - 1] & ~prefix[m]``, so each bit of the index is an OR of those
    edges, no adder nor mux tree (MR-RX-048's H2)."""
    n = len(prefix)
    t = [Const(1, 1)] + [prefix[k] for k in range(n)] + [Const(0, 1)]
    edges = [t[k] & ~t[k + 1] for k in range(n + 1)]    # edges[c]: exactly c leading ones
    return Cat(*[Cat(*[edges[c] for c in range(n + 1) if c >> j & 1]).any()
                 for j in range((n - 1).bit_length())])


def _lead_ones(bits):
    """MR-RX-327: the serial hold's scan of a piece: whether all its bits are ones, and the
    count of its leading ones (the index of its lowest 0) when not; groups of 8 as H2/H3's
    (each group's all-ones and first 0, then the first group with a 0, one-hot), no adder."""
    groups = len(bits) // 8
    full = [bits[8 * g:8 * g + 8].all() for g in range(groups)]
    first = [_thermometer_index(Cat(*[bits[8 * g:8 * g + k + 1].all() for k in range(8)])) for g in range(groups)]
    onehot = [Cat(Const(1, 1), *full[:g]).all() & ~full[g] for g in range(groups)]
    group_index = Cat(*[Cat(*[onehot[g] for g in range(groups) if g >> j & 1]).any()
                        for j in range((groups - 1).bit_length())])
    inner = Cat(*[Cat(*[onehot[g] & first[g][j] for g in range(groups)]).any() for j in range(3)])
    return Cat(*full).all(), Cat(inner, group_index)


def _below(value, n, lo_bits=4):
    """``Cat(k < value for k in range(n))``, a thermometer of an unsigned ``value``, from its
    nibbles' predecoded compares (a 4-input function a bit, as the slide's fill of MR-RX-048)."""
    hi = value[lo_bits:]
    groups = (n + (1 << lo_bits) - 1) >> lo_bits
    hi_gt = [hi > j for j in range(groups)]
    hi_eq = [hi == j for j in range(groups)]
    lo_gt = [value[:lo_bits] > j for j in range(1 << lo_bits)]
    return Cat(*[hi_gt[k >> lo_bits] | (hi_eq[k >> lo_bits] & lo_gt[k & ((1 << lo_bits) - 1)]) for k in range(n)])


def _words(value, width):
    """``value`` cut into ``width``-bit words, for :func:`_pick`."""
    return [value[i:i + width] for i in range(0, len(value), width)]


def _popcount(bits):
    vals = [bits[i] for i in range(len(bits))]
    while len(vals) > 1:
        vals = [vals[i] + vals[i + 1] if i + 1 < len(vals) else vals[i] for i in range(0, len(vals), 2)]
    return vals[0]


def _popcount_sum(values):
    """The sum of a list of Values as a balanced adder tree."""
    while len(values) > 1:
        values = [values[i] + values[i + 1] if i + 1 < len(values) else values[i]
                  for i in range(0, len(values), 2)]
    return values[0]


def _add_prefix(a, b, carry_in=0, chain=False, *, m=None, name="add"):
    """``a + b + carry_in`` (``len(a) + 1`` bits, ``carry_in`` 0 or 1) with a Kogge-Stone carry
    tree instead of a ripple chain: log2(n) prefix steps, 5 LUT levels at 16 bits where the
    generic flow's ripple adder takes 7 (MR-RX-046). MR-RX-316: with ``chain`` (a target with a
    carry chain: the ECP5's CCU2C, ``platform.carry_chain``) a plain ``+``, one chain of
    ``len(a) + 1`` bits (the carry in as a low bit of 1 in both operands): the same function.
    MR-RX-350: given the module ``m``, the tree is ``hdl.arith``'s :func:`_prefix_sum`, its
    operands and each prefix step signals named after ``name``; without ``m`` (probes, the
    forms' test) one expression of bits, in which every carry re-expands the steps below it
    and every bit re-reads its operand's whole expression: the same function."""
    n = len(a)
    if chain:
        if carry_in:
            return (Cat(Const(1, 1), a.as_unsigned()) + Cat(Const(1, 1), b[:n].as_unsigned()))[1:n + 2]
        return (a.as_unsigned() + b[:n].as_unsigned())[:n + 1]
    if m is not None:
        return _prefix_sum(m, a.as_unsigned(), b[:n], carry_in, name)
    g = [a[i] & b[i] for i in range(n)]
    p = [a[i] ^ b[i] for i in range(n)]
    if carry_in:
        g[0] = a[0] | b[0]
        p[0] = ~p[0]
    G, Pp = list(g), list(p)
    d = 1
    while d < n:
        G, Pp = ([G[i] | (Pp[i] & G[i - d]) if i >= d else G[i] for i in range(n)],
                 [Pp[i] & Pp[i - d] if i >= d else Pp[i] for i in range(n)])
        d *= 2
    carries = [Const(0, 1)] + G
    return Cat(*[p[i] ^ carries[i] for i in range(n)], carries[n])


def _sub_prefix(a, subs, chain=False, *, m=None, name="sub"):
    """MR-RX-326: ``a - sum(subs)`` modulo ``2 ** len(a)`` (one or two subtrahends, each at most
    ``len(a)`` bits) by one :func:`_add_prefix`: ``a + ~b + 1``; for two, a carry-save step
    first (``a + ~b + ~c`` is ``x + 2y``, the bitwise sum and majority), then ``x + 2y + 2`` as
    ``x + (2y | 1)`` with a carry in of 1: the same function as Amaranth's ``-``, one prefix
    tree (or one carry chain) in place of one or two ripple subtracts. With ``m``
    (MR-RX-350) the carry-save pair and the tree are signals."""
    n = len(a)
    nots = [~Cat(b, Const(0, n - len(b))) if len(b) < n else ~b[:n] for b in subs]
    if len(nots) == 1:
        return _add_prefix(a, nots[0], 1, chain=chain, m=m, name=name)[:n]
    assert len(nots) == 2
    b, c = nots
    x = a ^ b ^ c
    y = (a & b) | (a & c) | (b & c)
    if m is not None:
        x, y = _named(m, x[:n], f"{name}_x"), _named(m, y[:n], f"{name}_y")
    return _add_prefix(x, Cat(Const(1, 1), y[:n - 1]), 1, chain=chain, m=m, name=name)[:n]


def _rotate(m, value, amount, *, left, name="rot"):
    """``value`` rotated by ``amount`` bits (a Value), one 2:1 mux stage per bit of ``amount``
    (two stages fit one 6-LUT): the PSN-indexed SACK ring's moves (MR-RX-013). Each stage is a
    signal, so that the expression does not double with every stage."""
    for k in range(len(amount)):
        step = (1 << k) % len(value)
        stage = Signal(len(value), name=f"{name}{k}")
        m.d.comb += stage.eq(Mux(amount[k], value.rotate_left(step) if left else value.rotate_right(step), value))
        value = stage
    return value


#: MR-RX-298: the ring rotator's stages in multipliers (ECP5 MULT18X18D), no LUT muxes for them:
#: 0 all stages 2:1 muxes (MR-RX-013's form), 1 the four low stages (a turn by 0..15) in one
#: multiplier per 16 bits, 2 also the next four (a turn by 16 x 0..15) in one per 16 bits of the
#: ring's bit-planes. The same function (a rotate), fewer LUT4s (docs/hw/rx-results.md, rxa38).
ROT_DSP = 2
#: MR-RX-298: the bits one multiplier turns (a 16 x 17 unsigned product fits a MULT18X18D)
ROT_DSP_CHUNK = 16
#: MR-RX-342: from this frame interval on (the serial hold's) the ring rotator is 2:1 mux stages
#: in LUTs, not MR-RX-298's multipliers (two MULT18X18D stages in the DSP rows were the routed RX's
#: critical path), and MR-RX-333's bits to clear come from a register of the rotator's output
ROT_MUX_INTERVAL = SERIAL_INTERVAL


def _ring_rotator_mux(m, ring, amount):
    """MR-RX-342: the ring rotator at ``ROT_MUX_INTERVAL``: ``ring`` turned right by ``amount``,
    one 2:1 mux stage per bit of the amount (:func:`_rotate`; a test turns it one bit off)."""
    return _rotate(m, ring, amount, left=False, name="ring_rot")


def _rotr_chunks_mul(m, value, amount, name):
    """MR-RX-298: ``value`` (a multiple of 16 bits) rotated right by ``amount`` (4 bits, 0..15),
    one multiply a 16-bit chunk: chunk ``i`` times ``2 ** (16 - amount)`` puts its bits from
    ``amount`` up in the product's high half, and chunk ``i + 1``'s product's low half holds the
    bits that come in above them; the two halves never overlap, so an OR joins them."""
    c = ROT_DSP_CHUNK
    n = len(value) // c
    assert len(value) == n * c and len(amount) == 4
    scale = Signal(c + 1, name=f"{name}_scale")
    m.d.comb += scale.eq(Const(1 << c, c + 1) >> amount)
    prods = []
    for i in range(n):
        p = Signal(2 * c + 1, name=f"{name}_p{i}")
        m.d.comb += p.eq(value[c * i:c * i + c] * scale)
        prods.append(p)
    return Cat(*[prods[(i + 1) % n][:c] | prods[i][c:2 * c] for i in range(n)])


def _rotate_right_dsp(m, value, amount, *, name):
    """MR-RX-298: ``_rotate(m, value, amount, left=False)``, the turn by ``amount``'s low four bits
    in multipliers (:func:`_rotr_chunks_mul`), with ``ROT_DSP == 2`` also the turn by 16 x its
    next four bits: bit ``b`` of each 16-bit word makes a plane (``len(value) // 16`` bits, one
    per word), each plane turned by those four bits in multipliers as well; the bits above as
    2:1 mux stages (:func:`_rotate`)."""
    c = ROT_DSP_CHUNK
    x = Signal(len(value), name=f"{name}_lo")
    m.d.comb += x.eq(_rotr_chunks_mul(m, value, amount[:4], f"{name}_lo"))
    if ROT_DSP < 2:
        for k in range(4, len(amount)):       # the stages above: 2:1 muxes, turns of 16, 32, ..
            stage = Signal(len(value), name=f"{name}{k}")
            m.d.comb += stage.eq(Mux(amount[k], x.rotate_right((1 << k) % len(value)), x))
            x = stage
        return x
    words = len(value) // c
    out = [None] * len(value)
    for b in range(c):
        plane = Cat(*[x[c * w + b] for w in range(words)])
        turned = _rotr_chunks_mul(m, plane, amount[4:8], f"{name}_pl{b}")
        for k in range(8, len(amount)):       # a turn of 256 x 2 ** (k - 8): the plane by 16 x ..
            stage = Signal(words, name=f"{name}_pl{b}_{k}")
            m.d.comb += stage.eq(Mux(amount[k], turned.rotate_right((c << (k - 8)) % words), turned))
            turned = stage
        for w in range(words):
            out[c * w + b] = turned[w]
    return Cat(*out)


LIMB = 16


def _address_limbs(m, base, va, offset, chain=False):
    """MR-RX-046, first half (S1): ``base + va + offset`` as a carry-save pair (one LUT level),
    then each 16-bit limb of that pair summed on its own for a carry in of 0 and of 1 (carry
    select): per limb ``Cat(sum0, sum1)``, each 17 bits with its carry out; S2 picks one by the
    carry from below (:func:`_address_resolve`). The pair is two signals in ``m``: the
    simulator expands every expression tree in full, and prefix trees whose leaves were slices
    of the pair's expression (the base select included) made the RX sync function 73 MB of
    bytecode (docs/hw/rx-results.md); the netlist is the same."""
    off = offset.as_unsigned()
    x, y = Signal(64, name="addr_sum"), Signal(64, name="addr_carry")
    m.d.comb += [x.eq(base ^ va ^ off), y.eq(Cat(Const(0, 1), ((base & va) | (base & off) | (va & off))[:63]))]
    return [Cat(_add_prefix(x[k:k + LIMB], y[k:k + LIMB], chain=chain, m=m, name=f"addr_limb{k}_c0"),
                _add_prefix(x[k:k + LIMB], y[k:k + LIMB], carry_in=1, chain=chain, m=m, name=f"addr_limb{k}_c1"))
            for k in range(0, 64, LIMB)]


def _address_resolve(limbs):
    """MR-RX-046, second half (S2): each limb's sum for the carry out of the limbs below it,
    that carry chosen limb by limb the same way (2:1 muxes, no adder)."""
    out = []
    carry = Const(0, 1)
    for s in limbs:
        s0, s1 = s[:LIMB + 1], s[LIMB + 1:]
        out.append(Mux(carry, s1[:LIMB], s0[:LIMB]))
        carry = Mux(carry, s1[LIMB], s0[LIMB])
    return Cat(*out)


def _cum_tests(psn, psn_hi_m1, cum):
    """MR-RX-024: ``psn`` against a row's ``cum``: in the window (``psn - cum`` in
    [0, 512] without a 24-bit subtraction; ``psn_hi_m1`` is ``psn[9:] - 1``), behind (bit 23
    of ``psn - cum``), at ``cum``. Returns ``Cat(in_win, behind, at_cum)``."""
    psn_hi, psn_lo, cum_hi, cum_lo = psn[9:], psn[:9], cum[9:], cum[:9]
    in_win = ((psn_hi == cum_hi) & (psn_lo >= cum_lo)) | ((psn_hi_m1 == cum_hi) & (psn_lo <= cum_lo))
    behind = psn[23] ^ cum[23] ^ (psn[:23] < cum[:23])
    return Cat(in_win, behind, psn == cum)


def _psn_neighbours(psn):
    """MR-RX-122: ``psn[9:] - 1`` (15 bits) and ``psn + 1`` (24 bits), the operands
    :func:`_cum_tests` and S4's new ``cum``/``high`` take from a PSN, computed a stage ahead of
    their use and registered as the record moves, so S4's compares and new row start from
    registers."""
    return (psn[9:] - 1)[:15], (psn + 1)[:24]


def _window_tests(psn, psn_hi_m1, cum, high):
    """MR-RX-024..029: S4's window compares of ``psn`` against a row's ``cum`` and
    ``high``: ``Cat(in_win, behind, at_cum, gap, ahead)`` (gap: ``psn != high``; ahead: bit
    23 of ``psn - high`` clear)."""
    return Cat(_cum_tests(psn, psn_hi_m1, cum), psn != high, ~(psn[23] ^ high[23] ^ (psn[:23] < high[:23])))


#: MR-RX-356: ``_window_tests`` of all-zero operands (in_win, at_cum, ahead), the initial value of
#: S4's registered window terms (those of its all-zero psn, row and psn[9:] - 1)
WIN_TESTS_OF_ZEROS = 0b10101


def _near_slide(in_win, dist_lo, psn_hi, cum_hi):
    """MR-RX-311, MR-RX-024/025: S4's ``Cat(near, slide)`` for a PSN in the window (``in_win``
    of :func:`_cum_tests`, ``dist_lo`` = ``psn[:9] - cum[:9]``): ``near``, ``psn - cum`` in
    1 .. 256 (the ring lookup counts); ``slide``, ``psn - cum`` in 257 .. 512. MR-RX-323: the
    two never hold together, nor ``near`` at ``cum`` (``dist_lo`` 0)."""
    near = in_win & (dist_lo != 0) & (~dist_lo[8] | (dist_lo[:8] == 0))
    slide = in_win & ((dist_lo[8] & dist_lo[:8].any()) | ((dist_lo == 0) & (psn_hi != cum_hi)))
    return Cat(near, slide)


#: MR-RX-119, MR-FLOW-028: the tables whose read data is never used from a cycle that writes
#: the row read: each is read only through :func:`_registered_row`, which takes that cycle's
#: write instead. The connection, key, receive and READ tables are not among them: a record
#: taken in the cycle a configuration write changes its row uses the old row (MR-RX-042).
COLLISION_X_TABLES = frozenset({"path", "msg", "rds", "slotv"})
# MR-RX-201: S3's verdict terms for S5's write take its run's length (False: a wrong form that
# ignores it, for the negative control)
SV_S5_RUN = True
# MR-RX-206: S4's decision terms for S5 take S5's write of this cycle as the row when it writes
# S4's record's row (False: a wrong form that always takes the read, for the negative control)
NX_FWD = True
# MR-RX-242: the fields of S4's path row register H5's write reaches (MR-RX-139): those the slow
# update changes; the others already hold H5's row (S4's forward of the slow record's own write,
# MR-RX-117). A wrong form that leaves out `cum` is the negative control's.
SLOW_FWD_FIELDS = ("cum", "ring")
# MR-RX-310: S4's ring lookup counts for a PSN near cum only (psn - cum in 1 .. 256), and H5
# sets a slide's arrival only when the run did not pass it (False: wrong forms, MR-RX-013's
# 512-bit ones, for the negative controls)
RING_NEAR = True
RING_PAST = True
# MR-RX-323, MR-RX-324: `slow`, S4's new `cum` and `ring` and the rotator's amount from S4's
# verdict terms without the ring lookup (False: from `accepted`, the same function, for the depth
# comparison; only with RING_NEAR, whose wrong form the lookup-free terms do not reproduce)
LOOKUP_FREE = True
# MR-RX-205: the forwarded candidate's message-done test from S4's rest less S5's plen
# (False: through S5's placed-bytes adder, the same function, for the depth comparison)
NX_DONE = True
# MR-RX-338: from this frame interval on S4's two ring lookups select the ring's bit by the PSN's
# low bits (a mux tree on 8 select wires) in place of the AND-OR with a registered one-hot (256
# more wires into the row's tiles); below it the one-hot form (interval 1's Verilog as before)
RING_INDEX_INTERVAL = ALONE_INTERVAL
# MR-RX-347: from this frame interval on S4's two ring lookups by index are made in S3 on the
# path row's read data (what the row register loads) and registered with the record (the
# 8-level mux tree off S4's cone, the routed RX's critical path after MR-RX-342)
RING_S3_INTERVAL = SERIAL_INTERVAL
# MR-RX-356: from this frame interval on S4's window terms (the compares of the PSN against the
# path row's cum and high, psn[:9] - cum[:9], near, slide) are made in S3 on the path row's read
# data and registered with the record (S4's window cone, the routed RX's critical path after
# MR-RX-352)
WIN_S3_INTERVAL = SERIAL_INTERVAL
# MR-RX-352: from this frame interval on S5's READ-state verdict `r_new` is made in S4 from the
# READ-state table's read data (what S5's row register loads) and registered with the record (the
# entry pick and epoch compare off S5's cone, the routed RX's critical path after MR-RX-347)
RNEW_S4_INTERVAL = SERIAL_INTERVAL
# MR-RX-269: the message table read in S2 and registered as the record enters S4 (False: the
# read in S3 of MR-RX-115, the same function, for the depth and route comparison)
MSG_READ_S2 = True
# MR-RX-270: S4's message row register takes the write of S3's cycle to S3's row (False: a wrong
# form without it, for the negative control)
MSG4_NOW = True
# MR-RX-280: the ring rotator turns by a register of its own (`rot_amt`: S5's cum, the slow
# update's cum before its step during the hold), so H1 and H4 take its output as it is (False:
# MR-RX-048's form, the amount S5's cum and H1/H4 turning the output back by `sl_step`, for the
# LUT comparison; the same function)
ROT_AMT = True
# MR-RX-282: S4's decision terms on S5's written row take S4's slot and chunk entry from the read
# candidate's picks (msg4_row's, equal to S5's row whenever S5 writes S4's row) with S5's write
# applied to them, not from picks of the written row (False: those picks, the same function)
NXW_SHARED = True
# MR-RX-284: a table-4 write clears `next`'s and the slots' `valid` bits of S5's write data only,
# the slots' other fields written as S5's (never read from an empty slot) (False: MR-RX-080's
# row of zeros, a select for every bit)
MSG_CFG_VALID_ONLY = True


def _msg_cfg_valid(s5_msg_rec, valid):
    """MR-RX-284: a slot's `valid` as the message table's write data has it: S5's when S5's
    record writes, 0 for a configuration write (a wrong form keeps S5's: MR-RX-285, no stimulus
    catches it yet)."""
    return s5_msg_rec & valid


# MR-RX-286: a table-6 write clears the READ accounting's done, placed bytes and chunk entries'
# valid bits of S5's write data only, the entries' epochs written as S5's (never read from an
# invalid entry) (False: MR-RX-110's row of zeros, a select for every bit)
RDS_CFG_VALID_ONLY = True


def _rds_cfg_valid(s5_rd_rec, valid):
    """MR-RX-286: a READ accounting chunk entry's valid bit as the table's write data has it:
    S5's when S5's record writes, 0 for a configuration write (a wrong form keeps S5's, the
    negative control's)."""
    return s5_rd_rec & valid


def _nxw_entry(set5, s5_entry, clear5, read):
    """MR-RX-282: S4's chunk entry on S5's written row: S5's entry when S5 set it, 0 when S5's
    slot was fresh (its ring emptied), else the read candidate's (a wrong form that takes the read
    candidate's always is the negative control's)."""
    return Mux(set5, s5_entry, Mux(clear5, 0, read))
# MR-RX-272: S3's verdict terms on the read candidate compare the table's `next` with S3's
# registered msg - j (False: through the subtractor msg - next, the same function, for the
# depth comparison)
SV_BASE_EQ = True
# MR-RX-273: a wrong form for the negative control: msg - j registered from the record ahead
# (S3's as it leaves for S4) instead of S2's
SV_MINUS_WRONG = False
# MR-RX-293: "S5's record writes S4's record's message row" (y_take: S5 accepted, not a READ
# response, a new chunk, the same {connection, stream}) registered as S4's record enters S5, from
# S4's decision and the next pair's address equality, so S4's verdict and S5's row forward
# select by one flip-flop, not by a LUT over S5's registers (False: that LUT, the same function)
Y_TAKE_REG = True
# MR-RX-295: S4's message-slot verdict taken for both outcomes of S5's write (its run as S5's
# registers hold it, and none), y_take the last select (False: the run masked by y_take first,
# the same function). Off (MR-RX-297): on the ECP5 it cost 1,665 mapped LUT4 for a deeper loop
# than MR-RX-293 alone gives; with y_take a register the masked run is one AND of two registers
SV_LATE_SEL = False
# MR-RX-294: a wrong form for the negative control: the register loaded with the address equality
# of the pair ahead (this cycle's S5 and S4) instead of the next pair's (S4 and S3)
Y_TAKE_WRONG = False


def _table(m, name, shape, depth, *, collision_x, poison, collided, comb_port=None):
    """A table ``{name}_mem`` with one synchronous read port and one write port; returns the
    ports and the read data the design uses. A table in ``collision_x`` carries MR-FLOW-028's
    attribute. With ``poison`` (simulation only, MR-RX-119) such a table's read data is
    inverted in the cycle after a read that met a write of its row, and ``collided[name]``
    is that cycle's flag. ``comb_port`` (a list): an asynchronous read port appended to it."""
    marked = name in collision_x
    mem = memory.Memory(shape=shape, depth=depth, init=[],
                        attrs={"metaroce_collision": "x"} if marked else {})
    m.submodules[f"{name}_mem"] = mem
    rd, wr = mem.read_port(), mem.write_port()
    if comb_port is not None:
        comb_port.append(mem.read_port(domain="comb"))
    if not (poison and marked):
        return rd, wr, rd.data
    hit = collided[name]
    data = Signal(len(rd.data), name=f"{name}_rd_data")
    m.d.sync += hit.eq(rd.en & wr.en & (wr.addr == rd.addr))
    m.d.comb += data.eq(Mux(hit, ~rd.data, rd.data))
    return rd, wr, data


def _registered_row(m, name, rd, wr, addr, advance, now, *, reread=False, load=None, rd_data=None, late=None,
                    parts=None, load_slices=None, forward=True):
    """MR-RX-115, MR-RX-117: a row read one stage ahead of its use (``addr``, the reading
    record's) and registered as the record moves, so the stage that uses it starts from a
    register. The row register takes the first write of this cycle in ``now`` (pairs of a
    condition and the data written, each condition meaning a write of this cycle to the same
    row), else the write of the cycle before when it hit the address read (any writer), else
    the read data. With ``reread`` the read and its forward run every cycle (the caller's
    ``addr`` names the waiting record's row during a hold), else only when ``advance``. The
    register loads when ``advance`` or ``load`` (a write of a hold cycle, in ``now``).
    MR-RX-138: with ``late`` (``(en, addr, data)``, this cycle's write, which the port's
    registers perform in the next cycle) the write of the cycle before is ``late``'s when it hit
    the address read, else the port's (``late``'s of two cycles before), chosen as the read is
    made: one forward register either way. MR-RX-200: ``parts`` (a list) receives the value the
    register loads before this cycle's writes (from registers and the read) and with them.
    MR-RX-242: with ``load_slices`` (``(lo, hi)`` bit ranges) ``load``'s write (``now``'s first
    pair, whose condition is ``load``) reaches those bits only, the only ones that load in a
    cycle that does not advance; the rest hold. MR-RX-320: without ``forward`` (one entry in the
    pipeline at a time) the register takes the read data alone: no forward, ``now``, ``late``,
    ``load`` nor ``load_slices``."""
    row = Signal(len(rd.data), name=f"{name}_row")
    if not forward:
        m.d.comb += [rd.addr.eq(addr), rd.en.eq(Const(1, 1) if reread else advance)]
        value = rd.data if rd_data is None else rd_data
        if parts is not None:
            parts += [value, value]
        with m.If(advance):
            m.d.sync += row.eq(value)
        return row
    fwd_prev, fwd_data = Signal(name=f"{name}_fwd_prev"), Signal(len(wr.data), name=f"{name}_fwd_data")
    read = Const(1, 1) if reread else advance
    m.d.comb += [rd.addr.eq(addr), rd.en.eq(read)]
    hit, data = wr.en & (wr.addr == addr), wr.data
    if late is not None:
        late_en, late_addr, late_data = late
        late_hit = late_en & (late_addr == addr)
        hit, data = late_hit | hit, Mux(late_hit, late_data, data)
    with m.If(read):
        m.d.sync += [fwd_prev.eq(hit), fwd_data.eq(data)]
    value = Mux(fwd_prev, fwd_data, rd.data if rd_data is None else rd_data)
    base = value
    held = now[:1] if load_slices is not None else []
    for cond, wdata in reversed(now[len(held):]):
        value = Mux(cond, wdata, value)
    if parts is not None:
        parts += [base, value]
    if held:
        (cond, wdata), = held
        assert cond is load
        # each group of bits with its own enable; `load`'s mux the last before the slices, its
        # select a register, as before (MR-RX-139)
        cuts = sorted({0, len(row), *[b for sl in load_slices for b in sl]})
        for lo, hi in zip(cuts, cuts[1:]):
            if any(a <= lo and hi <= b for a, b in load_slices):
                with m.If(advance | load):
                    m.d.sync += row[lo:hi].eq(Mux(load, wdata[lo:hi], value[lo:hi]))
            else:
                with m.If(advance):
                    m.d.sync += row[lo:hi].eq(value[lo:hi])
        return row
    with m.If(advance if load is None else advance | load):
        m.d.sync += row.eq(value)
    return row


def _ring_lookup(ring, index):
    """MR-RX-338: the ring's bit ``index`` (the PSN's low bits), a mux tree on the index's wires
    (MR-RX-340's negative control replaces it by a wrong index)."""
    return ring.bit_select(index, 1)


def _same_row(m, name, addr, advance):
    """Whether S5's record and S4's name the same row (MR-RX-115): the S3 address registered
    with its record, and its equality with the S3 address registered as the records move.
    Returns that flag and S4's address."""
    addr_s4, same = Signal(len(addr), name=f"{name}_addr_s4"), Signal(name=f"{name}_same")
    with m.If(advance):
        m.d.sync += [addr_s4.eq(addr), same.eq(addr_s4 == addr)]
    return same, addr_s4


def _piece_counter(m, name, nbits, inc, piece=COUNTER_PIECE):
    """An ``nbits`` counter adding 1 in the cycles ``inc`` is true, in ``piece``-bit pieces: a
    piece counts when ``inc`` and every lower piece is all ones, read from registered flags, so
    no carry crosses a piece (MR-RX-047). Returns the count and the all-ones flags."""
    count = Signal(nbits, name=name)
    ones = []
    for j, lo in enumerate(range(0, nbits, piece)):
        part = count[lo:lo + piece]
        carry_in = Cat(inc, *ones).all()
        with m.If(carry_in):
            m.d.sync += part.eq(part + 1)
        if lo + piece < nbits:
            full = Signal(name=f"{name}_ones{j}")
            with m.If(carry_in):
                m.d.sync += full.eq(part == (1 << len(part)) - 2)
            ones.append(full)
    return count, ones


def _wide_inc_counter(m, name, nbits, inc, piece=COUNTER_PIECE, chain=False):
    """An ``nbits`` counter adding ``inc`` (at most ``piece`` bits) every cycle (MR-RX-047):
    the low piece adds it with a prefix adder; its carry is registered and counted into the
    upper pieces (:func:`_piece_counter`) in the next cycle. The value read adds the carry
    still pending, piece by piece with the upper pieces' all-ones flags, so a read always sees
    every increment of the cycles before."""
    low = Signal(piece, name=f"{name}_low")
    carry = Signal(name=f"{name}_carry")
    total = _add_prefix(low, Cat(inc, Const(0, piece))[:piece], chain=chain, m=m, name=f"{name}_add")
    m.d.sync += [low.eq(total[:piece]), carry.eq(total[piece])]
    high, ones = _piece_counter(m, f"{name}_high", nbits - piece, carry, piece)
    parts = [low]
    en = carry
    for j, lo in enumerate(range(0, nbits - piece, piece)):
        part = high[lo:lo + piece]
        parts.append(Mux(en, (part + 1)[:len(part)], part))
        if j < len(ones):
            en = en & ones[j]
    return Cat(*parts)


def _rot_amt_next(slow, cum, new_cum):
    """MR-RX-280: what the rotator's amount register loads as S4's record enters S5: the row's
    cum before the update for a slow record (H1's and H4's turns, ``sl_cum``), else S4's new
    cum (S5's, for the SACK read-out)."""
    return Mux(slow, cum, new_cum)


def _serial_capture(holding, hold, hold_n, pieces):
    """MR-RX-327: the serial hold's capture cycles, H1 .. H1 + pieces - 1 (``hold`` counts
    ``hold_n`` down to 1): the rotator shows piece ``sr_j`` and the piece register takes it."""
    return holding & (hold > hold_n - pieces)


def _serial_clear(turned):
    """MR-RX-333: the serial hold's bits to clear in H5's write, from the rotator's output in
    hold 1 (the run turned back by ``cum``: a right rotate of the run bit-reversed, reversed)."""
    return turned[::-1]


def _s5_ring_load(advance, slow_write):
    """MR-RX-260: the cycles S5's ring register takes the path table's write data."""
    return advance | slow_write


def _bundle(m, layout, ok, items):
    """MR-RX-259: a queue entry of ``layout`` ({ok, the items}) holding item ``i`` in entry
    ``i`` (unpacked: no select over the ``ok`` patterns), ``ok`` which entries are items."""
    bundle = Signal(layout)
    entries = bundle[next(name for name, _ in layout if name != "ok")]
    m.d.comb += bundle.ok.eq(ok)
    for i, item in enumerate(items):
        m.d.comb += entries[i].eq(item)
    return bundle


def _first_ok(m, name, ok, sel, n):
    """MR-RX-259: the index of a bundle's first ``ok`` entry at or after ``sel`` (the entry
    shown), and whether no ``ok`` entry follows it (the bundle's last item)."""
    at, last = Signal(range(n), name=f"{name}_at"), Signal(name=f"{name}_last")
    m.d.comb += at.eq(n - 1)
    for i in reversed(range(n - 1)):
        with m.If(ok[i] & (sel <= i)):
            m.d.comb += at.eq(i)
    m.d.comb += last.eq(~Cat(*[ok[j] & (at < j) for j in range(1, n)]).any())
    return at, last


def _bundle_out(m, name, layout, q, port, n):
    """A bundle queue's head shown on ``port`` one item after another (an index register, the
    next entry to look at); the bundle leaves the queue with its last item (MR-RX-085,
    MR-RX-131, MR-RX-259)."""
    sel = Signal(range(n), name=f"{name}_sel")
    head = data.View(layout, q.r_data)
    entries = head[next(f for f, _ in layout if f != "ok")]
    take = q.r_rdy & port.ready
    at, at_last = _first_ok(m, name, head.ok, sel, n)
    with m.If(take):
        m.d.sync += sel.eq(Mux(at_last, 0, at + 1))
    m.d.comb += [port.valid.eq(q.r_rdy), port.payload.eq(_pick([entries[i].as_value() for i in range(n)], at)),
                 q.r_en.eq(take & at_last)]


class Rx(wiring.Component):
    """The RX engine's first slice (docs/spec/hw-rx.md). ``collision_x``: the tables with
    MR-FLOW-028's attribute (MR-RX-119; :data:`COLLISION_X_TABLES`); ``poison`` (simulation
    only): their reads that met a write of the row read return inverted data, flagged in
    ``collided``. ``interval`` (MR-RX-319, hw-engine.md MR-ENG-299): the pipeline takes a
    record, a timer's event or a configuration write at most once every ``interval`` cycles;
    from :data:`ALONE_INTERVAL` on it is built without the forwards between entries (MR-RX-320,
    ``alone``)."""

    def __init__(self, width=512, *, conns=4096, paths=8, keys=1024, msg_slots=MSG_SLOTS,
                 chunk_ring=CHUNK_RING, recv_slots=RECV_SLOTS, rd_slots=RD_SLOTS, streams=records.STREAMS,
                 collision_x=COLLISION_X_TABLES, poison=False, slot_nak=True, max_rd_atomic=None,
                 cfg_sack=True, carry_chain=None, interval=1):
        if width not in (64, 128, 256, 512):
            raise ValueError(f"width must be 64, 128, 256 or 512, not {width!r}")
        # MR-RX-188: the responder resources need the slot verdict (a fresh slot is a verdict's)
        if max_rd_atomic is not None and (not slot_nak or not 1 <= max_rd_atomic <= 255):
            raise ValueError("max_rd_atomic is 1..255, with slot_nak")
        self.max_rd_atomic = max_rd_atomic
        # MR-RX-316: the adders' form: None, the platform's (`carry_chain`); True or False forced
        self.carry_chain = carry_chain
        # MR-RX-319: the pipeline's entries (records, timer events, configuration writes) at most
        # one every `interval` cycles (hw-engine.md MR-ENG-299); MR-RX-320: from ALONE_INTERVAL
        # on, one entry in the pipeline at a time, no forwards between entries
        if not isinstance(interval, int) or interval < 1:
            raise ValueError(f"interval must be an int >= 1, not {interval!r}")
        self.interval = interval
        self.alone = interval >= ALONE_INTERVAL
        # MR-RX-327: from SERIAL_INTERVAL on the slow update's hold scans the run SERIAL_PIECE
        # bits a cycle, over hold_cycles(interval) cycles (the model's)
        self.serial = interval >= SERIAL_INTERVAL
        self.hold_n = hold_cycles(interval)
        self.ring_index = interval >= RING_INDEX_INTERVAL               # MR-RX-338
        self.rot_mux = interval >= ROT_MUX_INTERVAL                     # MR-RX-342
        # MR-RX-348: only without forwards (the row register then loads S3's read data alone)
        self.ring_s3 = self.alone and interval >= RING_S3_INTERVAL     # MR-RX-347
        # MR-RX-357: likewise only without forwards (the row register loads S3's read data alone)
        self.win_s3 = self.alone and interval >= WIN_S3_INTERVAL       # MR-RX-356
        self.r_new_s4 = self.alone and interval >= RNEW_S4_INTERVAL     # MR-RX-352, MR-RX-353
        # MR-RX-240: off, a configuration write of a path row clears its SACK ring (the field
        # is not read), and the ring rotator that places it in the ring is not built
        self.cfg_sack = bool(cfg_sack)
        self.width = width
        # MR-RX-167: the message-slot verdict in S4, before the sequence state (off: MR-RX-083's
        # refusal after it, in the message stage)
        self.slot_nak = slot_nak
        # MR-RX-119: the tables with MR-FLOW-028's attribute; with `poison` (simulation only)
        # their reads that met a write of the row return inverted data, flagged in `collided`
        self.collision_x, self.poison = frozenset(collision_x), poison
        self.collided = {name: Signal(name=f"{name}_collided") for name in sorted(self.collision_x)}
        self.lay = lay = layouts(conns, paths, keys, msg_slots, chunk_ring, recv_slots, rd_slots, streams)
        beat = payload_layout(width)
        super().__init__({
            "s_meta": In(stream.Signature(META_LAYOUT)),
            "s_payload": In(stream.Signature(beat)),
            "s_cfg": In(stream.Signature(lay.cfg)),
            "m_ack": Out(stream.Signature(lay.ack)),
            "m_place": Out(stream.Signature(lay.place)),
            "m_data": Out(stream.Signature(beat)),
            "m_cqe": Out(stream.Signature(lay.cqe)),
            "m_rsp": Out(stream.Signature(lay.rsp)),
            "m_atom": Out(stream.Signature(lay.atom)),
            "reg_addr": In(range(32)),
            "reg_data": Out(COUNTER_BITS),
        })

    def elaborate(self, platform):
        m = Module()
        lay = self.lay
        cb, pb, kb = lay.conn_bits, lay.path_bits, lay.key_bits
        # MR-RX-316: the adders as the target's carry chain where it has one (the ECP5 build's
        # platform), else MR-RX-046's prefix trees (the generic flow, the simulators)
        chain = getattr(platform, "carry_chain", False) if self.carry_chain is None else self.carry_chain

        def add(a, b, carry_in=0, name="add"):
            return _add_prefix(a, b, carry_in, chain=chain, m=m, name=name)
        row_bits = cb + pb

        def table(name, shape, depth, comb_port=None):
            return _table(m, name, shape, depth, collision_x=self.collision_x, poison=self.poison,
                          collided=self.collided, comb_port=comb_port)
        conn_rd, conn_wr, conn_data = table("conn", lay.conn.size, lay.conns)
        key_rd, key_wr, key_data = table("key", lay.key.size, lay.keys)
        path_rd, path_wr, path_data = table("path", lay.path_mem.size, lay.conns * lay.paths)

        m.submodules.ack_q = ack_q = SyncQueue(width=lay.ack.size, depth=FIFO_DEPTH)   # MR-RX-288
        m.submodules.place_q = place_q = fifo.SyncFIFO(width=lay.place.size, depth=FIFO_DEPTH)
        # MR-RX-033, MR-RX-163: a steering entry: the beats out on m_data (keep), or an atomic's
        # operands captured into the operand table's row, after the atomic bundles pushed up to
        # its own push have read theirs (mark)
        n_slots = lay.msg_slots
        opd_row_bits = cb + lay.stream_bits + (n_slots - 1).bit_length()
        steer_entry = data.StructLayout({"keep": 1, "cap": 1, "row": max(1, opd_row_bits), "mark": CAP_COUNT_BITS})
        m.submodules.steer_q = steer_q = fifo.SyncFIFO(width=steer_entry.size, depth=FIFO_DEPTH)
        m.submodules.cqe_q = cqe_q = HeadRegFIFO(width=lay.cqe_bundle.size, depth=FIFO_DEPTH, block=True)   # MR-RX-290
        # MR-RX-131: the response items of READ requests, one bundle per delivery as m_cqe's
        m.submodules.rsp_q = rsp_q = HeadRegFIFO(width=lay.rsp_bundle.size, depth=FIFO_DEPTH, block=True)   # MR-RX-290
        # MR-RX-155: the atomics' execution items, likewise
        m.submodules.atom_q = atom_q = fifo.SyncFIFO(width=lay.atom_bundle.size, depth=FIFO_DEPTH)
        # MR-RX-001: the per-stream tables hold `streams` rows per connection (index bits sb)
        sb, esb = lay.stream_bits, records.STREAM_BITS

        def cfg_stream_row(low):
            """A per-stream row's index from its configuration address {connection, stream
            (esb bits), low}, and whether the stream is one the tables hold (MR-RX-060)."""
            a = cfg.addr
            return (Cat(a[:low], a[low:low + sb], a[low + esb:low + esb + cb]),
                    a[low + sb:low + esb] == 0)
        n_slots, ring_n = lay.msg_slots, lay.chunk_ring
        slot_bits, pos_bits = (n_slots - 1).bit_length(), (ring_n - 1).bit_length()
        msg_rd, msg_wr, msg_data = table("msg", lay.msg_row.size, lay.conns << sb)
        # MR-RX-101: the receive table, {connection, stream, recv_seq mod recv_slots}
        rb = lay.recv_bits
        recv_rd, recv_wr, recv_data = table("recv", lay.recv.size, lay.conns << (sb + rb))
        # MR-RX-110: the outstanding READs {connection, stream, msg mod rd_slots}: the row the TX
        # side writes (read in the take cycle) and its accounting (read in S3, registered in S4, written in S5: MR-RX-115)
        rdb = lay.rd_bits
        rd_rd, rd_wr, rd_data = table("rd", lay.rd.size, lay.conns << (sb + rdb))
        rds_rd, rds_wr, rds_data = table("rds", lay.rd_state.size, lay.conns << (sb + rdb))

        # -- global registers (MR-RX-060)
        ack_every = Signal(4, init=ACK_EVERY_RESET)
        mtu_log2 = Signal(4, init=MTU_LOG2_RESET)
        ack_delay = Signal(TIME_BITS, init=ACK_DELAY_RESET)
        # -- the delayed-ACK timer (MR-RX-090..093): a cycle counter and a queue of armed
        # timers {path row, generation, due}, due in arming order (one delay for all)
        now = Signal(TIME_BITS)
        m.d.sync += now.eq(now + 1)
        timer_entry = data.StructLayout({"row": lay.conn_bits + lay.path_bits, "gen": GEN_BITS, "due": TIME_BITS})
        m.submodules.timer_q = timer_q = SyncQueue(width=timer_entry.size, depth=TIMER_DEPTH)   # MR-RX-288
        t_head = data.View(timer_entry, timer_q.r_data)
        # MR-RX-093: the head's due test registered, against now + 1 for a head that stays
        t_late, t_due = Signal(TIME_BITS), Signal()
        m.d.comb += t_late.eq(now + 1 - t_head.due)

        # -- the hold of a slow window update (MR-RX-048): S1..S5 and the input stand still
        # `holding` (hold != 0) and `slow_write` (hold == 1) are registers of their own, loaded
        # with hold's next value's tests: each drives hundreds of enables and write-data muxes
        # from a flip-flop, not through a compare (the routed critical path of 98fe31a started
        # at `hold`)
        hold = Signal(range(self.hold_n + 1))
        holding, slow_write = Signal(), Signal()
        advance = ~holding

        # -- input: credits for every queue (MR-RX-041), row reads from the record's bits
        valid = [Signal(name=f"s{i}_valid") for i in range(0, 7)]
        s0_valid, s1_valid, s2_valid, s3_valid, s4_valid, s5_valid, s6_valid = valid
        inflight = Signal(3)
        m.d.comb += inflight.eq(sum(valid))
        meta_ready = Signal()
        credits = Signal()
        fire = Signal()
        m.d.comb += credits.eq(advance & (ack_q.level + inflight < FIFO_DEPTH)
                               & (place_q.level + inflight < FIFO_DEPTH)
                               & (steer_q.level + inflight < FIFO_DEPTH)
                               & (cqe_q.level + inflight < FIFO_DEPTH)
                               & (rsp_q.level + inflight < FIFO_DEPTH)
                               & (atom_q.level + inflight < FIFO_DEPTH))
        # MR-RX-319: the entry gate, shut for interval - 1 cycles after a record, a timer's event
        # or a configuration write is taken (`entry_took`, driven below); interval 1: no gate
        entry_took, entry_open, gate_open = Signal(), credits, Const(1, 1)
        if self.interval > 1:
            entry_open, gate_open = Signal(), Signal()
            m.d.comb += [gate_open.eq(interval_ready(m, self.interval, entry_took, name="entry_wait")),
                         entry_open.eq(credits & gate_open)]
        # MR-RX-093: a due timer enters the pipeline in place of a record
        m.d.comb += [fire.eq(entry_open & t_due),
                     meta_ready.eq(entry_open & (timer_q.level + inflight < TIMER_DEPTH) & ~fire),
                     timer_q.r_en.eq(fire)]
        m.d.sync += t_due.eq(timer_q.r_rdy & ~fire & ~t_late[TIME_BITS - 1])
        m.d.comb += self.s_meta.ready.eq(meta_ready)
        take = self.s_meta.valid & meta_ready
        inm = self.s_meta.payload
        # The reads run every cycle (a plain synchronous read port, which Yosys's memory_dff
        # merges, so MR-FLOW-026 can put the table in block RAM); during a hold they read the
        # address of the last cycle that advanced again. Same data as a read enabled by
        # `advance`: nothing writes these tables in a hold nor in the cycle before one (a slow
        # update needs a good record in S4, which keeps s_cfg waiting). S0 registers the read
        # data as its record moves on (MR-RX-040), so S1's checks start from flip-flops, not
        # from the block RAM's clock-to-out.
        for port, addr in ((conn_rd, inm.bth.dest_qp[:cb]), (key_rd, inm.reth.rkey[:kb]),
                           (recv_rd, Cat(inm.mrsh.recv_seq[:rb], inm.mrdh.stream[:sb], inm.bth.dest_qp[:cb])),
                           (rd_rd, Cat(inm.mrdh.msg[:rdb], inm.mrdh.stream[:sb], inm.bth.dest_qp[:cb]))):
            held = Signal(len(port.addr), name=f"{port.addr.name}_held")
            with m.If(advance):
                m.d.sync += held.eq(addr)
            m.d.comb += [port.addr.eq(Mux(advance, addr, held)), port.en.eq(1)]

        # S0, the row stage (MR-RX-040): the record taken, its rows being read
        s0 = Signal(META_LAYOUT)
        s0_write, s0_send, s0_read, s0_rreq = Signal(), Signal(), Signal(), Signal()
        s0_atom = Signal()      # MR-RX-151: MR_CMP_SWAP or MR_FETCH_ADD
        s0_timer, s0_trow, s0_tgen = Signal(), Signal(lay.conn_bits + lay.path_bits), Signal(GEN_BITS)
        with m.If(advance):
            # the record's bits load whenever the stage advances, taken or not (their value is
            # used only with s0_valid): `take` (the credits' level sums and compares) enables
            # the valid and class flip-flops only, not the record's 600-odd
            op_in = inm.bth.opcode
            m.d.sync += [s0_valid.eq(take | fire), s0_timer.eq(fire), s0_trow.eq(t_head.row),
                         s0_tgen.eq(t_head.gen), s0.eq(inm),
                         # the opcode's class, registered with the record: S1's row muxes and
                         # checks start from a register, not from an opcode compare (MR-RX-049)
                         s0_write.eq(take & ((op_in == Op.MR_WRITE) | (op_in == Op.MR_WRITE_IMM))),
                         s0_send.eq(take & ((op_in == Op.MR_SEND) | (op_in == Op.MR_SEND_IMM))),
                         s0_read.eq(take & (op_in == Op.MR_READ_RESP)),
                         s0_rreq.eq(take & (op_in == Op.MR_READ)),
                         s0_atom.eq(take & ((op_in == Op.MR_CMP_SWAP) | (op_in == Op.MR_FETCH_ADD)))]
        # S1: the record and its four rows, registered as S0 moves on
        s1 = Signal(META_LAYOUT)
        # is_rreq: a READ request (MR-RX-126)
        is_write, is_send, is_read, is_rreq = Signal(), Signal(), Signal(), Signal()
        is_atom = Signal()
        s1_timer, s1_trow, s1_tgen = Signal(), Signal(lay.conn_bits + lay.path_bits), Signal(GEN_BITS)
        conn_row, key_row = Signal(lay.conn.size), Signal(lay.key.size)
        recv_row, rd_row = Signal(lay.recv.size), Signal(lay.rd.size)
        with m.If(advance):
            m.d.sync += [s1_valid.eq(s0_valid), s1_timer.eq(s0_timer), s1_trow.eq(s0_trow),
                         s1_tgen.eq(s0_tgen), s1.eq(s0), is_write.eq(s0_write), is_send.eq(s0_send),
                         is_read.eq(s0_read), is_rreq.eq(s0_rreq), is_atom.eq(s0_atom),
                         conn_row.eq(conn_data), key_row.eq(key_data),
                         recv_row.eq(recv_data), rd_row.eq(rd_data)]

        # what every stage hands on besides its checks
        carry = data.StructLayout({"conn": cb, "path": 8, "row": row_bits, "psn": 24, "ack_req": 1,
                                   "ce": 1, "sport": 16, "plen": 16, "steer": 1,
                                   # the message stage's (MR-RX-080..083)
                                   "stream": esb, "msg": 32, "msg_len": 32, "imm": 32, "kind": 3,
                                   "wr_id": 64, "read": 1,
                                   # MR-RX-128: a READ request refused (key, right or range)
                                   "err": 1,
                                   "chunk": pos_bits + EPOCH_BITS,
                                   # a timer event's (MR-RX-093)
                                   "timer": 1, "gen": GEN_BITS})

        # -- S1: the checks' flags and limb sums (MR-RX-020, MR-RX-049)
        conn = data.View(lay.conn, conn_row)
        key = data.View(lay.key, key_row)
        bth, mrdh, reth = s1.bth, s1.mrdh, s1.reth
        plen = s1.payload_len
        mtu = Signal(17)
        m.d.comb += mtu.eq(Const(1, 17) << mtu_log2)
        # MR-RX-100..102: a SEND's receive row against its recv_seq (the order of the 32-bit
        # half space, the difference's sign, is finished in S2 from 16-bit limbs)
        recv = data.View(lay.recv, recv_row)
        rseq = s1.mrsh.recv_seq
        r_match = Signal()
        m.d.comb += r_match.eq(is_send & recv.valid & (recv.recv_seq == rseq))
        # MR-RX-111: a READ response's outstanding-read row (its msg against the response's)
        rd = data.View(lay.rd, rd_row)
        rd_match = Signal()
        m.d.comb += rd_match.eq(is_read & rd.valid & (rd.msg == mrdh.msg))
        # MR-RX-160: an ERROR response (its length 0); MR-RX-152: an atomic's operation
        rd_error = is_read & mrdh.flags[3]
        cas = bth.opcode[0] == (Op.MR_CMP_SWAP & 1)
        # the order of the 32-bit sequence space (protocol.seq_lt32): recv_seq against the
        # receive row's, a response's msg against the READ row's
        ord_a, ord_b = Signal(32), Signal(32)
        m.d.comb += [ord_a.eq(Mux(is_send, rseq, mrdh.msg)), ord_b.eq(~Mux(is_send, recv.recv_seq, rd.msg))]
        s1_carry = Signal(carry)
        m.d.comb += [s1_carry.conn.eq(bth.dest_qp[:cb]), s1_carry.path.eq(mrdh.path),
                     s1_carry.row.eq(Cat(mrdh.path[:pb], bth.dest_qp[:cb])), s1_carry.psn.eq(bth.psn),
                     s1_carry.ack_req.eq(bth.ack_req), s1_carry.ce.eq(s1.ip.ecn == 3),
                     s1_carry.sport.eq(s1.udp.sport), s1_carry.plen.eq(plen),
                     s1_carry.steer.eq(~s1.drop & (plen != 0)),
                     s1_carry.stream.eq(mrdh.stream[:sb]), s1_carry.msg.eq(mrdh.msg),
                     s1_carry.msg_len.eq(mrdh.msg_len),
                     # MR-RX-130: a READ request's slot keeps its length in imm
                     # MR-RX-153: an atomic's likewise; MR-RX-159: a READ response's the row's
                     # length (an ERROR response has msg_len 0)
                     s1_carry.imm.eq(Mux(is_rreq | is_atom, reth.dma_len, Mux(is_read, rd.length, s1.imm))),
                     # MR-RX-153: an atomic's kind 5 or 6; MR-RX-159: a READ response's the row's op
                     s1_carry.kind.eq(Mux(is_read, rd.op, Cat(
                         ((bth.opcode == Op.MR_WRITE_IMM) | (bth.opcode == Op.MR_SEND_IMM)) | (is_atom & cas),
                         is_send | (is_atom & ~cas), is_rreq | is_atom))),
                     s1_carry.wr_id.eq(Mux(r_match, recv.wr_id, Mux(rd_match, rd.wr_id, 0))),
                     s1_carry.read.eq(is_read),
                     s1_carry.chunk.eq((mrdh.offset >> mtu_log2)[:pos_bits + EPOCH_BITS]),
                     s1_carry.timer.eq(s1_timer), s1_carry.gen.eq(s1_tgen)]
        with m.If(s1_timer):
            m.d.comb += [s1_carry.row.eq(s1_trow), s1_carry.conn.eq(s1_trow[pb:]),
                         s1_carry.path.eq(s1_trow[:pb]), s1_carry.steer.eq(0), s1_carry.plen.eq(0),
                         s1_carry.ack_req.eq(0), s1_carry.ce.eq(0)]
        hit = key.valid & (key.rkey == reth.rkey)
        assert P.ACCESS_REMOTE_WRITE == 1 << 1 and P.ACCESS_REMOTE_READ == 1 << 2
        # MR-RX-020's flags in its order; chunk and bounds are finished in S3; the RETH's only
        # for a write (MR-RX-100); a SEND's receive match (MR-RX-102)
        flags = data.StructLayout({"drop": 1, "op": 1, "conn": 1, "pkey": 1, "path": 1, "stream": 1,
                                   "align": 1, "short": 1, "empty": 1, "length": 1, "access": 1,
                                   "va_high": 1, "write": 1, "send": 1, "r_valid": 1, "r_match": 1,
                                   "read": 1, "rd_valid": 1, "rd_match": 1, "ord_ne": 1,
                                   # MR-RX-127/128: a READ request; its key, right or VA refused
                                   "rreq": 1, "rq_refused": 1,
                                   # MR-RX-152: an atomic; its VA not 8-byte aligned.
                                   # MR-RX-160: an ERROR response
                                   "atom": 1, "misalign": 1, "rerr": 1})
        s1_flags = Signal(flags)
        m.d.comb += [
            s1_flags.drop.eq(s1.drop), s1_flags.op.eq(~is_write & ~is_send & ~is_read & ~is_rreq & ~is_atom),
            s1_flags.conn.eq((bth.dest_qp[cb:] != 0) | ~conn.valid),
            s1_flags.pkey.eq(bth.pkey != conn.pkey),
            s1_flags.path.eq(mrdh.path > conn.n_paths_m1),
            s1_flags.stream.eq((mrdh.stream > conn.n_streams_m1) | (mrdh.stream[sb:] != 0)),
            s1_flags.align.eq((mrdh.offset & (mtu - 1)) != 0),
            s1_flags.short.eq(plen != mtu),
            s1_flags.empty.eq((plen == 0) & (mrdh.msg_len != 0)),
            s1_flags.length.eq((is_write & (reth.dma_len != mrdh.msg_len))
                               | (rd_match & (Mux(rd_error, 0, rd.length) != mrdh.msg_len))
                               | (is_rreq & (mrdh.msg_len != 0))
                               | (is_atom & ((reth.dma_len != 8) | (mrdh.msg_len != Mux(cas, 16, 8))))),
            s1_flags.atom.eq(is_atom), s1_flags.misalign.eq(is_atom & (reth.va[:3] != 0)),
            s1_flags.rerr.eq(rd_error),
            s1_flags.access.eq(is_write & (~hit | ~key.access[1])),
            s1_flags.va_high.eq(is_write & (reth.va[32:] != 0)),
            s1_flags.write.eq(is_write), s1_flags.send.eq(is_send), s1_flags.r_valid.eq(recv.valid),
            s1_flags.r_match.eq(r_match), s1_flags.read.eq(is_read), s1_flags.rd_valid.eq(rd.valid),
            s1_flags.rd_match.eq(rd_match), s1_flags.rreq.eq(is_rreq),
            s1_flags.rq_refused.eq((is_rreq & (~hit | ~key.access[2] | (reth.va[32:] != 0)))
                                   | (is_atom & (~hit | ~key.access[3] | (reth.va[32:] != 0)))),
            # protocol.seq_lt32: the difference's sign, and not exactly 2^31 apart
            s1_flags.ord_ne.eq(ord_a[:31] != ~ord_b[:31]),
        ]
        # end = offset + plen against msg_len; va + msg_len against the key's length: the low
        # limb's sum, the high limb for a carry of 0 and of 1
        limb_sums = data.StructLayout({"lo": LIMB + 1, "hi0": LIMB + 1, "hi1": LIMB + 1, "ref": 32})
        s1_end, s1_bnd = Signal(limb_sums), Signal(limb_sums)
        m.d.comb += [
            s1_end.lo.eq(add(mrdh.offset[:LIMB], plen, name="s1_end_lo")), s1_end.hi0.eq(mrdh.offset[LIMB:32]),
            s1_end.hi1.eq(add(mrdh.offset[LIMB:32], Const(1, LIMB), name="s1_end_hi1")), s1_end.ref.eq(mrdh.msg_len),
            # the RETH's DMA length: a READ request's range (MR-RX-128); a write's equals
            # msg_len whenever the bounds decide (LENGTH comes first)
            s1_bnd.lo.eq(add(reth.va[:LIMB], reth.dma_len[:LIMB], name="s1_bnd_lo")),
            s1_bnd.hi0.eq(add(reth.va[LIMB:32], reth.dma_len[LIMB:32], name="s1_bnd_hi0")),
            s1_bnd.hi1.eq(add(reth.va[LIMB:32], reth.dma_len[LIMB:32], carry_in=1, name="s1_bnd_hi1")),
            s1_bnd.ref.eq(key.length),
        ]
        # MR-RX-102: msg_len against the receive's length (compared in S2/S3 as the bounds);
        # recv_seq - row.recv_seq (a READ response: msg - row.msg, MR-RX-111), its sign
        # finished in S2
        s1_rlen = Signal(limb_sums)
        s1_rdiff = Signal(limb_sums)
        m.d.comb += [
            s1_rlen.lo.eq(mrdh.msg_len[:LIMB]), s1_rlen.hi0.eq(mrdh.msg_len[LIMB:32]), s1_rlen.ref.eq(recv.length),
            s1_rdiff.lo.eq(add(ord_a[:LIMB], ord_b[:LIMB], carry_in=1, name="s1_rdiff_lo")),
            s1_rdiff.hi0.eq(add(ord_a[LIMB:], ord_b[LIMB:], name="s1_rdiff_hi0")),
            s1_rdiff.hi1.eq(add(ord_a[LIMB:], ord_b[LIMB:], carry_in=1, name="s1_rdiff_hi1")),
        ]

        s2_carry, s2_flags = Signal(carry), Signal(flags)
        s2_end, s2_bnd, s2_rlen, s2_rdiff = Signal(limb_sums), Signal(limb_sums), Signal(limb_sums), Signal(limb_sums)
        s2_addr_limbs = [Signal(2 * (LIMB + 1), name=f"s2_addr_limb{k}") for k in range(64 // LIMB)]
        # MR-RX-122: S2's PSN's psn[9:] - 1, registered again in S3 for S4's window compares
        s2_psn_hi_m1 = Signal(24 - 9)
        with m.If(advance):
            m.d.sync += [
                s2_valid.eq(s1_valid), s2_carry.eq(s1_carry), s2_flags.eq(s1_flags),
                s2_psn_hi_m1.eq(_psn_neighbours(s1_carry.psn)[0]),
                s2_end.eq(s1_end), s2_bnd.eq(s1_bnd), s2_rlen.eq(s1_rlen), s2_rdiff.eq(s1_rdiff),
                # MR-RX-104: a SEND's address is its receive's base + offset
                # MR-RX-112: a READ response's is its READ's destination + offset
                *[r.eq(v) for r, v in zip(s2_addr_limbs, _address_limbs(m,
                    (recv.base & is_send.replicate(64)) | (rd.base & is_read.replicate(64))
                    | (key.base & (is_write | is_rreq | is_atom).replicate(64)),
                    reth.va & (is_write | is_rreq | is_atom).replicate(64),
                    mrdh.offset, chain))],
            ]

        # -- S2: the limbs' compares; the placement address's limb carries (MR-RX-046)
        compares = data.StructLayout({"carry": 1, "lo_gt": 1, "lo_eq": 1, "gt0": 1, "eq0": 1,
                                      "gt1": 1, "eq1": 1})

        def limb_compares(sums):
            ref_lo, ref_hi = sums.ref[:LIMB], sums.ref[LIMB:]
            out = Signal(compares)
            m.d.comb += [out.carry.eq(sums.lo[LIMB]), out.lo_gt.eq(sums.lo[:LIMB] > ref_lo),
                         out.lo_eq.eq(sums.lo[:LIMB] == ref_lo),
                         out.gt0.eq(sums.hi0 > ref_hi), out.eq0.eq(sums.hi0 == ref_hi),
                         out.gt1.eq(sums.hi1 > ref_hi), out.eq1.eq(sums.hi1 == ref_hi)]
            return out

        s3_carry, s3_flags = Signal(carry), Signal(flags)
        s3_end, s3_bnd, s3_rlen = Signal(compares), Signal(compares), Signal(compares)
        s3_addr = Signal(64)
        s3_r_behind = Signal()      # recv_seq before the row's (32-bit half space)
        with m.If(advance):
            m.d.sync += [s3_valid.eq(s2_valid), s3_carry.eq(s2_carry), s3_flags.eq(s2_flags),
                         s3_end.eq(limb_compares(s2_end)), s3_bnd.eq(limb_compares(s2_bnd)),
                         s3_rlen.eq(limb_compares(s2_rlen)),
                         s3_r_behind.eq(s2_flags.ord_ne & Mux(s2_rdiff.lo[LIMB], s2_rdiff.hi1[LIMB - 1],
                                                              s2_rdiff.hi0[LIMB - 1])),
                         s3_addr.eq(_address_resolve(s2_addr_limbs))]

        # -- S3: the compares' carries, MR-RX-020's priority; the path row registered; the ring's
        # one-hots for S4 (MR-RX-013)
        def greater_equal(c):
            gt = Mux(c.carry, c.gt1, c.gt0) | (Mux(c.carry, c.eq1, c.eq0) & c.lo_gt)
            eq = Mux(c.carry, c.eq1, c.eq0) & c.lo_eq
            return gt, eq

        end_gt, end_eq = greater_equal(s3_end)
        bnd_gt, _ = greater_equal(s3_bnd)
        f = s3_flags
        chunk_bad = f.align | end_gt | (f.short & ~end_eq) | f.empty
        checks = [
            (f.drop, RxCode.PARSER_DROP), (f.op, RxCode.NOT_HANDLED), (f.conn, RxCode.NO_CONNECTION),
            (f.pkey, RxCode.BAD_PKEY), (f.path, RxCode.BAD_PATH), (f.stream, RxCode.STREAM),
            (chunk_bad, RxCode.CHUNK), (f.length, RxCode.LENGTH),
            # MR-RX-152: a misaligned atomic, INVALID_REQUEST, counted as chunk
            (f.misalign, RxCode.CHUNK), (f.access, RxCode.ACCESS),
            (f.va_high | (f.write & bnd_gt), RxCode.BOUNDS),
            # MR-RX-111: no READ in the row, nor an earlier one it replaced
            (f.read & ~f.rd_match & ~(f.rd_valid & s3_r_behind), RxCode.NO_READ),
        ]
        # MR-RX-102/103: decided here, applied by S4 to a new PSN only
        rlen_gt, _ = greater_equal(s3_rlen)
        s3_stale = (f.send & f.r_valid & ~f.r_match & s3_r_behind) | (f.read & ~f.rd_match)
        s3_rnr = f.send & ~f.r_match & ~s3_stale
        s3_rbounds = f.r_match & rlen_gt
        s3_code = Signal(4)
        s3_bad = Signal()
        with m.If(checks[0][0]):
            m.d.comb += [s3_bad.eq(1), s3_code.eq(checks[0][1])]
        for cond, code in checks[1:]:
            with m.Elif(cond):
                m.d.comb += [s3_bad.eq(1), s3_code.eq(code)]
        with m.If(s3_carry.timer):
            m.d.comb += s3_bad.eq(0)
        s3_static_nak = Signal()
        s3_nak_reason = Signal(8)
        with m.Switch(s3_code):
            for code, reason in NAK_OF.items():
                if code != RxCode.PSN_WINDOW and code not in LATE_CODES:
                    with m.Case(code):
                        m.d.comb += [s3_static_nak.eq(1), s3_nak_reason.eq(reason)]

        s4_carry = Signal(carry)
        s4_bad, s4_code, s4_static_nak, s4_nak_reason = Signal(), Signal(4), Signal(), Signal(8)
        s4_addr = Signal(64)
        s4_oh = Signal(RING_BITS)
        # MR-RX-338: psn + 1's one-hot only for the one-hot lookup
        s4_oh_next = None if self.ring_index else Signal(RING_BITS)
        s4_psn_p1 = Signal(24)
        s4_psn_hi_m1 = Signal(24 - 9)
        s4_late, s4_late_code, s4_late_reason, s4_stale = Signal(), Signal(4), Signal(8), Signal()
        s3_psn = s3_carry.psn
        # MR-RX-122: S3's PSN's psn[9:] - 1 and psn + 1, registered from S2's as the records
        # move, so S4's window compares and new cum/high start from registers
        s3_psn_hi_m1, s3_psn_p1 = Signal(24 - 9), Signal(24)
        with m.If(advance):
            m.d.sync += [s3_psn_hi_m1.eq(s2_psn_hi_m1), s3_psn_p1.eq(_psn_neighbours(s2_carry.psn)[1])]
        s3_oh = Signal(RING_BITS)
        # the one-hot of psn mod RING_BITS (MR-RX-310) from three predecoded fields of up to 3
        # bits (a 3-input AND per bit; the shift of a constant 1 maps to a larger tree)
        s3_oh_part = [Signal(1 << min(3, RING_LOG2 - 3 * i), name=f"s3_oh_part{i}") for i in range(3)]
        for i, part in enumerate(s3_oh_part):
            m.d.comb += part.eq(Const(1, len(part)) << s3_psn[3 * i:min(3 * i + 3, RING_LOG2)])
        m.d.comb += s3_oh.eq(Cat(*[s3_oh_part[0][k & 7] & s3_oh_part[1][k >> 3 & 7] & s3_oh_part[2][k >> 6]
                                   for k in range(RING_BITS)]))
        with m.If(advance):
            m.d.sync += [
                s4_valid.eq(s3_valid), s4_carry.eq(s3_carry), s4_bad.eq(s3_bad), s4_code.eq(s3_code),
                s4_static_nak.eq(s3_static_nak), s4_nak_reason.eq(s3_nak_reason), s4_addr.eq(s3_addr),
                # psn + 1's one-hot is psn's rotated by one: one decoder for both
                s4_oh.eq(s3_oh), *([] if s4_oh_next is None else [s4_oh_next.eq(s3_oh.rotate_left(1))]),
                s4_psn_p1.eq(s3_psn_p1), s4_psn_hi_m1.eq(s3_psn_hi_m1),
                # MR-RX-154: an atomic is not placed either (its payload is its operands)
                s4_late.eq(s3_rnr | s3_rbounds), s4_stale.eq(s3_stale | f.atom),
                s4_late_code.eq(Mux(s3_rnr, RxCode.RNR, RxCode.RECV_BOUNDS)),
                s4_late_reason.eq(Mux(s3_rnr, NAK_OF[RxCode.RNR], NAK_OF[RxCode.RECV_BOUNDS])),
                # MR-RX-128, MR-RX-130: a READ request's refusal, and its host address into the
                # slot's wr_id (both from S3's registers; nothing of S4 reads them)
                # MR-RX-153: an atomic's likewise; MR-RX-160: an ERROR response's flag
                s4_carry.err.eq(((f.rreq | f.atom) & (f.rq_refused | bnd_gt)) | f.rerr),
                s4_carry.wr_id.eq(Mux(f.rreq | f.atom, s3_addr, s3_carry.wr_id)),
            ]

        # driven by the message stage: S5's record writes S4's record's row in this cycle (a new
        # chunk of the same stream), and the run of messages it delivers (a prefix: k of them)
        # (y_run_if: the run as S5's registers hold it, S5's delivery if it writes S4's row)
        y_take, y_run, y_run_if = Signal(), Signal(n_slots), Signal(n_slots)
        sv_refused, sv_beyond = Const(0, 1), Const(0, 1)
        if self.slot_nak:
            # MR-RX-167..171: the message-slot verdict, taken in S4 before the path row changes.
            # The verdict table (`slotv`: the message table's `next` and each slot's valid, kind and
            # msg_len, written with it) is read in S2 and registered as the record enters S4 with the
            # writes of that cycle and of the one before forwarded (MR-RX-115's form one stage
            # earlier); the write S5's record makes in S4's cycle (the record just ahead) is applied
            # in S4 from relations registered with the records and its delivery run.
            sv_slot_lay = data.StructLayout({"valid": 1, "kind": 3, "msg_len": 32})
            sv_lay = data.StructLayout({"next": 32, "slots": data.ArrayLayout(sv_slot_lay, n_slots)})
            sv_rd, sv_wr, sv_data = table("slotv", sv_lay.size, lay.conns << sb)

            def sv_of(value):
                r = data.View(lay.msg_row, value)
                return Cat(r.next, *[Cat(r.slots[j].valid, r.slots[j].kind, r.slots[j].msg_len)
                                     for j in range(n_slots)])
            sv_addr2 = Cat(s2_carry.stream[:sb], s2_carry.conn)
            sv_addr3 = Cat(s3_carry.stream[:sb], s3_carry.conn)
            m.d.comb += [sv_wr.en.eq(msg_wr.en), sv_wr.addr.eq(msg_wr.addr), sv_wr.data.eq(sv_of(msg_wr.data))]
            # this cycle's write of S3's row: S5's record's (the record two ahead) or a configuration
            # write (never both, MR-RX-060's cfg_ready)
            sv_parts = []
            if self.alone:
                # MR-RX-320: no write of S3's row while it is read and registered
                _registered_row(m, "slotv", sv_rd, sv_wr, Mux(advance, sv_addr2, sv_addr3), advance, [],
                                reread=True, rd_data=sv_data, parts=sv_parts, forward=False)
            else:
                sv_now = msg_wr.en & (msg_wr.addr == sv_addr3)
                _registered_row(m, "slotv", sv_rd, sv_wr, Mux(advance, sv_addr2, sv_addr3), advance,
                                [(sv_now, sv_of(msg_wr.data))], reread=True, rd_data=sv_data, parts=sv_parts)
            sv_base = data.View(sv_lay, sv_parts[0])
            # MR-RX-200..203: the verdict's terms, taken in S3 from the row as it is registered
            # (the relations the S4 form took from that register) and registered with the record,
            # so S4 only selects among registers by S5's run. S3's record against the row's next:
            # d = msg - next; equal to j (j < 2 msg_slots), to 2^31 + i (i <= msg_slots), its
            # sign; and the slot of S3's message: valid, another msg_len or kind. Per candidate
            # row (the forward or the read; this cycle's write: S5's, whose next is S5's row's
            # next + its run's length k, so d - k per k, or a configuration write's), the write's
            # select applied last (MR-RX-201)
            s3_msg = s3_carry.msg
            if not self.alone:
                sv_s5_rec, sv_s5_next, sv_cfg_next = Signal(), Signal(32), Signal(32)     # driven below
                sv_s5_len = Signal(n_slots + 1)     # S5's run's length, one-hot (driven below)
                sv_d_base, sv_d_cfg, sv_d_s5 = Signal(32), Signal(32), Signal(32)
                m.d.comb += [sv_d_base.eq(s3_msg - sv_base.next), sv_d_cfg.eq(s3_msg - sv_cfg_next),
                             sv_d_s5.eq(s3_msg - sv_s5_next)]
                lens = [(k, sv_s5_len[k] if SV_S5_RUN else Const(int(k == 0), 1)) for k in range(n_slots + 1)]
                sv_wr_row = data.View(sv_lay, sv_of(msg_wr.data))

            def sv_slot_of(row):
                return data.View(sv_slot_lay, _pick([row.slots[j].as_value() for j in range(n_slots)],
                                                    s3_msg[:slot_bits]) if slot_bits else row.slots[0].as_value())

            def sv_slot_terms(row):
                slot = sv_slot_of(row)
                return Cat(slot.valid, (slot.msg_len != s3_carry.msg_len) | (slot.kind != s3_carry.kind))

            # MR-RX-272: S3's msg - j (j < 2 msg_slots) registered as the record enters S3, so the
            # read candidate's equalities compare the verdict table's `next` with registers: no
            # subtractor after the block RAM's output (d == j: next == msg - j; d == 2^31 + i:
            # next == (msg - i) with bit 31 flipped)
            s3_msg_minus = [Signal(32, name=f"s3_msg_minus{j}") for j in range(2 * n_slots)]
            with m.If(advance):
                m.d.sync += [r.eq((s3_carry if SV_MINUS_WRONG else s2_carry).msg - j)
                             for j, r in enumerate(s3_msg_minus)]

            def sv_term(test, base=None):
                """The term per candidate, chosen last by this cycle's write (the deep selects):
                S5's write's per its run's length k, a configuration write's, else the base's
                (``base``: the read candidate's term, when given, in place of ``test``'s).
                MR-RX-320: alone, the base's only."""
                if self.alone:
                    assert base is not None and SV_BASE_EQ
                    return base
                s5 = Cat(*[on & test(sv_d_s5, k) for k, on in lens]).any()
                return Mux(sv_now, Mux(sv_s5_rec, s5, test(sv_d_cfg, 0)),
                           test(sv_d_base, 0) if base is None or not SV_BASE_EQ else base)
            sv_eq = [Signal(name=f"sv_eq{j}") for j in range(2 * n_slots)]
            sv_eqh = [Signal(name=f"sv_eqh{i}") for i in range(n_slots + 1)]
            sv_neg, sv_valid, sv_ne = Signal(), Signal(), Signal()
            flip31 = Const(1 << 31, 32)
            # the read candidate's sign of d = msg - next by halves (carry select): the low half's
            # borrow picks the high half's difference less 0 or 1, two 16-bit chains side by side
            d_lo = Signal(17)
            d_hi0, d_hi1 = Signal(16), Signal(16)
            m.d.comb += [d_lo.eq(s3_msg[:16] - sv_base.next[:16]),
                         d_hi0.eq(s3_msg[16:] - sv_base.next[16:]),
                         d_hi1.eq(s3_msg[16:] + ~sv_base.next[16:])]
            sv_neg_base = Mux(d_lo[16], d_hi1[15], d_hi0[15])
            with m.If(advance):
                m.d.sync += [*[e.eq(sv_term(lambda d, k, j=j: d == j + k, sv_base.next == s3_msg_minus[j]))
                               for j, e in enumerate(sv_eq)],
                             *[e.eq(sv_term(lambda d, k, i=i: d == (1 << 31) + i + k,
                                            sv_base.next == (s3_msg_minus[i] ^ flip31)))
                               for i, e in enumerate(sv_eqh)],
                             sv_neg.eq(sv_term(lambda d, k: (d - k)[31], sv_neg_base)),
                             Cat(sv_valid, sv_ne).eq(sv_slot_terms(sv_base) if self.alone else
                                                     Mux(sv_now, sv_slot_terms(sv_wr_row), sv_slot_terms(sv_base)))]
            if not self.alone:
                # S4's record against S5's (the record ahead): the same message, another msg_len or kind
                y_msg_eq, y_hdr_ne = Signal(), Signal()
                with m.If(advance):
                    m.d.sync += [y_msg_eq.eq(s3_carry.msg == s4_carry.msg),
                                 y_hdr_ne.eq((s3_carry.msg_len != s4_carry.msg_len) | (s3_carry.kind != s4_carry.kind))]
            def sv_verdict(take, yrun):
                """The verdict given S5's write (``take``) and its delivery run (``yrun``);
                MR-RX-320: ``take`` None, no write of S5 (alone, ``yrun`` zeros)."""
                # after S5's write: next' = next + k, d' = d - k. Delivered (seq_lt32(msg, next')): d < k,
                # or d in (2^31 + k, 2^32); within the slots: k <= d < k + msg_slots
                sv_lt_k = Cat(*[sv_eq[j] & yrun[j] for j in range(n_slots)]).any()
                sv_edge = Cat(*[sv_eqh[i] & (Const(1, 1) if i == 0 else yrun[i - 1]) for i in range(n_slots + 1)]).any()
                sv_behind = sv_lt_k | (sv_neg & ~sv_edge)
                sv_win = Cat(*[sv_eq[j] & ~yrun[j] if j < n_slots else sv_eq[j] & yrun[j - n_slots]
                               for j in range(2 * n_slots)]).any()
                # within the slots and at or after next (not freed by S5's delivery): the slot's message
                # (S5's record's when it is the same message) against S4's msg_len and kind
                sv_old = Cat(*[sv_eq[j] & ~yrun[j] for j in range(n_slots)]).any()
                sv_mism = sv_valid & sv_ne if take is None else Mux(take & y_msg_eq, y_hdr_ne, sv_valid & sv_ne)
                sv_beyond = ~sv_behind & ~sv_win
                # a READ response has no message slot (MR-RX-112); a timer event none either
                return dict(refused=~s4_carry.read & (sv_beyond | (sv_old & sv_mism)), beyond=sv_beyond,
                            # MR-RX-188: a fresh slot: within the slots after S5's write and the slot
                            # empty (neither held in the table nor taken by S5's record of the same message)
                            fresh=sv_win & ~(sv_old & (sv_valid if take is None else sv_valid | (take & y_msg_eq))))
            if self.alone:
                sv_v = sv_verdict(None, Const(0, n_slots))
            elif SV_LATE_SEL:
                # MR-RX-295: both outcomes from S4's registers and S5's registered run, S5's write
                # (y_take, MR-RX-293's register) the last select
                v1, v0 = sv_verdict(Const(1, 1), y_run_if), sv_verdict(Const(0, 1), Const(0, n_slots))
                sv_v = {key: Mux(y_take, v1[key], v0[key]) for key in v1}
            else:
                sv_v = sv_verdict(y_take, y_run)
            sv_refused, sv_beyond = sv_v["refused"], sv_v["beyond"]

        # MR-RX-188..190: responder resources (MR-VERB-005). A count per connection (`rsc`) of
        # READ and atomic requests taken and not yet answered in full, read in S2 and registered
        # into S4 as the verdict table (this cycle's write of S3's row and the cycle before's
        # forwarded); S5's record's increment of S4's cycle applied in S4 from the registered
        # equality of their connections. A request whose message takes a fresh slot (within the
        # slots after S5's write, its slot empty) finding the count at max_rd_atomic is RNR.
        rsc_rnr, rsc_take, rsc_cnt_next = Const(0, 1), Const(0, 1), None
        if self.max_rd_atomic is not None:
            n_rsc = self.max_rd_atomic
            rsc_bits = n_rsc.bit_length()
            rsc_comb = []
            rsc_rd, rsc_wr, rsc_data = table("rsc", rsc_bits, lay.conns, comb_port=rsc_comb)
            rsc_cfg_rd = rsc_comb[0]
            rsc_addr3 = s3_carry.conn
            rsc_s5_inc = Signal()       # S5's record takes a resource in this cycle (driven below)
            if self.alone:
                # MR-RX-320: no write of S3's count, and no S5 record ahead
                rsc_cnt = _registered_row(m, "rsc", rsc_rd, rsc_wr, Mux(advance, s2_carry.conn, rsc_addr3), advance,
                                          [], reread=True, rd_data=rsc_data, forward=False)
                rsc_ahead = Const(0, 1)
                rsc_full = rsc_cnt >= n_rsc
            else:
                rsc_now = rsc_wr.en & (rsc_wr.addr == rsc_addr3)
                rsc_cnt = _registered_row(m, "rsc", rsc_rd, rsc_wr, Mux(advance, s2_carry.conn, rsc_addr3), advance,
                                          [(rsc_now, rsc_wr.data)], reread=True, rd_data=rsc_data)
                rsc_same, _ = _same_row(m, "rsc", rsc_addr3, advance)
                rsc_ahead = rsc_same & rsc_s5_inc
                rsc_full = Mux(rsc_ahead, rsc_cnt >= n_rsc - 1, rsc_cnt >= n_rsc)
            rsc_fresh = sv_v["fresh"]
            rsc_req = ~s4_carry.read & ~s4_carry.timer & s4_carry.kind[2] & rsc_fresh
            rsc_rnr = rsc_req & ~sv_refused & rsc_full
            rsc_take = rsc_req
            rsc_cnt_next = Signal(rsc_bits)
            m.d.comb += rsc_cnt_next.eq(rsc_cnt + 1 if self.alone else rsc_cnt + 1 + rsc_ahead)

        # -- S4: the window stage (MR-RX-024..029, MR-RX-013, MR-RX-042, MR-RX-048). The row
        # is a register: read in S2, registered in S3 with the writes forwarded (MR-RX-117)
        s4_row = Signal(lay.path_mem.size)
        row = data.View(lay.path_mem, s4_row)
        psn, cum = s4_carry.psn, row.cum
        psn_hi, psn_lo, cum_hi, cum_lo = psn[9:], psn[:9], cum[9:], cum[:9]
        # the window compares, ring lookups and ACK count test from the row register (MR-RX-120/121's
        # per-candidate forms in S3 are withdrawn: their fan-out of the row's bits did not route)
        dist_lo = Signal(9)
        near, slide = Signal(), Signal()
        if self.win_s3:
            # MR-RX-356: the same terms made in S3 on the row the register loads (the read data
            # alone, MR-RX-320) by S3's psn and psn[9:] - 1, registered with them; the initial
            # values are the terms of the registers' initial values (psn, cum, high, psn[9:] - 1
            # all 0: in the window, at cum, not a gap, ahead)
            s4_win = Signal(5, name="s4_win", init=WIN_TESTS_OF_ZEROS)
            f_cum, f_high = lay.path_mem["cum"], lay.path_mem["high"]
            rd_cum = path_data[f_cum.offset:f_cum.offset + f_cum.width]
            rd_high = path_data[f_high.offset:f_high.offset + f_high.width]
            s3_win, s3_dist_lo = Signal(5), Signal(9)
            m.d.comb += [s3_win.eq(_window_tests(s3_psn, s3_psn_hi_m1, rd_cum, rd_high)),
                         s3_dist_lo.eq(s3_psn[:9] - rd_cum[:9])]
            with m.If(advance):
                m.d.sync += [s4_win.eq(s3_win), dist_lo.eq(s3_dist_lo),
                             Cat(near, slide).eq(_near_slide(s3_win[0], s3_dist_lo, s3_psn[9:], rd_cum[9:]))]
        else:
            s4_win = Signal(5)
            m.d.comb += s4_win.eq(_window_tests(psn, s4_psn_hi_m1, cum, row.high))
        in_win, behind, at_cum, gap, ahead = s4_win[0], s4_win[1], s4_win[2], s4_win[3], s4_win[4]
        if self.ring_s3:
            # MR-RX-347: the same lookups made in S3 on the row the register loads (the read
            # data alone, MR-RX-320) by S3's psn and psn + 1, registered with them
            ring_bit, next_bit = Signal(name="s4_ring_bit"), Signal(name="s4_next_bit")
            ring_field = lay.path_mem["ring"]
            rd_ring = path_data[ring_field.offset:ring_field.offset + ring_field.width]
            with m.If(advance):
                m.d.sync += [ring_bit.eq(_ring_lookup(rd_ring, s3_psn[:RING_LOG2])),
                             next_bit.eq(_ring_lookup(rd_ring, s3_psn_p1[:RING_LOG2]))]
        elif self.ring_index:
            # MR-RX-338: the bits of psn and psn + 1 (both PSNs' low bits are registers)
            ring_bit = _ring_lookup(row.ring, psn[:RING_LOG2])
            next_bit = _ring_lookup(row.ring, s4_psn_p1[:RING_LOG2])
        else:
            ring_bit = (row.ring & s4_oh).any()
            next_bit = (row.ring & s4_oh_next).any()
        # MR-RX-310: the ring holds cum+1 .. cum+256 only (bit psn mod 256): the PSN at cum and
        # a slide's (cum+257 .. cum+512) alias onto window bits, so the lookup counts only for
        # a PSN `near` (psn - cum in 1 .. 256)
        if not self.win_s3:
            m.d.comb += [dist_lo.eq(psn_lo - cum_lo),
                         Cat(near, slide).eq(_near_slide(in_win, dist_lo, psn_hi, cum_hi))]
        ring_hit = (near if RING_NEAR else in_win) & ring_bit
        new = in_win & ~ring_hit
        dup = behind | ring_hit
        outside = ~behind & ~in_win
        ce_bit = s4_carry.ce
        onset = ce_bit & ~row.prev_ce
        ce_new = Signal(16)
        m.d.comb += ce_new.eq(Mux(row.ce.all(), row.ce, (row.ce + ce_bit)[:16]))
        pending = Signal(4)
        m.d.comb += pending.eq(row.pending + 1)
        ack_now = s4_carry.ack_req | gap | (pending >= ack_every) | onset

        # without `advance`: every use of these terms is a register loaded on `advance` or the
        # path table's write, whose enable takes it (`hold` -> `advance` was the head of the
        # routed critical path into the path table's write data)
        ok = s4_valid & ~s4_bad
        tmr = s4_carry.timer
        # MR-RX-102: RNR and RECV_BOUNDS only for a new PSN, one more input of this AND
        # MR-RX-167/168: the message-slot verdict before RNR and RECV_BOUNDS (the endpoint's order)
        accepted = ok & new & ~tmr & ~s4_late & ~sv_refused & ~rsc_rnr
        late_nak = ok & new & ~tmr & (s4_late | sv_refused | rsc_rnr)
        sv_nak = ok & new & ~tmr & sv_refused
        duplicate = ok & dup & ~tmr
        out_nak = ok & outside & ~tmr
        # MR-RX-093: a timer event acknowledges the path when no ACK left it since it was armed
        gen = row.ack_timer[:GEN_BITS]
        t_fire = ok & tmr & (gen == s4_carry.gen) & (row.pending != 0)
        gen_next = Signal(GEN_BITS)
        m.d.comb += gen_next.eq(gen + 1)
        arm = accepted & ~ack_now & (row.pending == 0) & (ack_delay != 0)
        # MR-RX-323: a PSN at cum or a slide is never `near`, so for it `new` is `in_win`, which
        # at_cum and slide imply: `slow` takes S4's verdict terms without the ring lookup
        # (accepted's, the same function; the lookup out of `hold`'s cone)
        lookup_free = LOOKUP_FREE and RING_NEAR
        slow_ok = ok & ~tmr & ~s4_late & ~sv_refused & ~rsc_rnr
        slow_in = slow_ok if lookup_free else accepted
        slow_fill = slow_in & at_cum & next_bit     # a filled gap (S4 moves cum; a slide's stays)
        slow = slow_fill | (slow_in & slide)
        nrow = Signal(lay.path_mem)
        m.d.comb += nrow.eq(row)
        with m.If(duplicate | t_fire):
            m.d.comb += [nrow.ce.eq(0), nrow.pending.eq(0), nrow.ack_timer[:GEN_BITS].eq(gen_next)]
        with m.Elif(accepted):
            m.d.comb += [nrow.cum.eq(Mux(at_cum, s4_psn_p1, cum)),
                         # MR-RX-310: only a PSN `near` sets its bit here; a slide's is set
                         # by the hold after the abandoned bits are cleared (H5)
                         nrow.ring.eq(row.ring | Mux(near, s4_oh, 0)),
                         nrow.high.eq(Mux(ahead, s4_psn_p1, row.high)), nrow.prev_ce.eq(ce_bit)]
            with m.If(ack_now):
                m.d.comb += [nrow.ce.eq(0), nrow.pending.eq(0), nrow.ack_timer[:GEN_BITS].eq(gen_next)]
            with m.Else():
                m.d.comb += [nrow.ce.eq(ce_new), nrow.pending.eq(pending),
                             nrow.last_psn.eq(psn), nrow.last_sport.eq(s4_carry.sport)]
        if lookup_free:
            # MR-RX-324 (the same function): at cum `accepted` is `slow_ok` (never near, never a
            # duplicate); a looked-up bit that is set is the arrival's own, so setting it again
            # changes nothing: `cum` and `ring` without the lookup (after the chain: these win)
            m.d.comb += [nrow.cum.eq(Mux(slow_ok & at_cum, s4_psn_p1, cum)),
                         nrow.ring.eq(row.ring | Mux(slow_ok & near, s4_oh, 0))]
        is_nak = (s4_valid & s4_bad & s4_static_nak) | out_nak | late_nak
        send_ack = duplicate | (accepted & ack_now) | t_fire
        final = Mux(s4_bad, s4_code, Mux(outside, RxCode.PSN_WINDOW,
                                         Mux(dup, RxCode.DUPLICATE,
                                             Mux(sv_refused, Mux(sv_beyond, RxCode.MSG_SLOTS, RxCode.LENGTH),
                                                 Mux(rsc_rnr | s4_late, Mux(rsc_rnr, RxCode.RNR, s4_late_code),
                                                     RxCode.ACCEPTED)))))

        # -- the slow update (MR-RX-048), over the hold's cycles: H1 rotates the ring to cum
        # and fills the slide's base, H2 finds the all-ones groups of 8 and counts the holes in
        # groups of 16, H3 the first group with a 0 and the run of ones from cum, H4 the
        # advance and the bits to clear (the run rotated back), H5 writes the row.
        # the row as the fast update left it (cum before the slow update's advance); loaded in
        # H1 from the path table's write register, not from S4's new row (MR-RX-125)
        sl_row = Signal(lay.path_mem)
        sl_cum = Signal(24)
        sl_addr = Signal(row_bits)
        sl_cum_hi_p1 = Signal(15)
        sl_dist = Signal(9)
        sl_slide = Signal()
        sl_oh = Signal(RING_BITS)       # MR-RX-310: the slow record's one-hot (a slide's arrival)
        # sl_step: S5's cum is sl_cum + 1 (the slow update at cum), else sl_cum: without
        # ROT_AMT the shared rotator turns by S5's cum, H1 and H4 turn its output back by
        # sl_step (see below)
        sl_step = Signal()
        # MR-RX-280: the rotator's amount, S5's cum (low 9 bits) in a cycle that advances, the
        # slow record's cum before its update (sl_cum's) in the hold, H5's new cum from H5 on
        rot_amt = Signal(9)
        assert HOLD_CYCLES >= 4
        if not self.serial:
            with m.If(advance):
                m.d.sync += [sl_cum.eq(cum), sl_addr.eq(s4_carry.row), sl_cum_hi_p1.eq((cum_hi + 1)[:15]),
                             sl_dist.eq(dist_lo), sl_slide.eq(slide), sl_step.eq(at_cum), sl_oh.eq(s4_oh),
                             # MR-RX-324: a slide leaves S4's cum as it is, so the fill's `slow` selects
                             rot_amt.eq(_rot_amt_next(slow_fill if lookup_free else slow, cum[:9], nrow.cum[:9])),
                             hold.eq(Mux(slow, HOLD_CYCLES, 0)), holding.eq(slow), slow_write.eq(0)]
            with m.Else():
                m.d.sync += [hold.eq(hold - 1), holding.eq(hold != 1), slow_write.eq(hold == 2)]
            sl_cum_lo = sl_cum[:9]
            # H1: the ring rotated to cum (bit k: PSN cum + k); the slide's base (PSNs cum ..
            # psn - 257) filled; bit 0 (cum itself) set
            n_fill = P.SACK_BITS
            fill = Signal(n_fill)
            # bit k: the slide fills PSN cum + k (sl_dist == 0: all 256, else sl_dist[:8] > k), the
            # thermometer from its two nibbles' predecoded compares (a 3-input function per bit)
            fill_hi_gt, fill_hi_eq, fill_lo_gt = Signal(16), Signal(16), Signal(16)
            m.d.comb += [fill_hi_gt.eq(Cat(*[sl_slide & ((sl_dist[4:8] > j) | (sl_dist == 0)) for j in range(16)])),
                         fill_hi_eq.eq(Cat(*[sl_slide & (sl_dist[4:8] == j) for j in range(16)])),
                         fill_lo_gt.eq(Cat(*[sl_dist[:4] > j for j in range(16)])),
                         fill.eq(Cat(*[fill_hi_gt[k >> 4] | (fill_hi_eq[k >> 4] & fill_lo_gt[k & 15])
                                       for k in range(n_fill)]))]
            # the ring rotator's output (without ROT_AMT turned back by sl_step, a register): in
            # H1's turn sl_row's ring rotated right by sl_cum_lo, in H4's the run's likewise
            ring_rot = Signal(RING_BITS)
            rel = Signal(RING_BITS)
            m.d.comb += rel.eq(ring_rot if ROT_AMT else Mux(sl_step, ring_rot.rotate_left(1), ring_rot))
            # MR-RX-310: bit k of the run vector is PSN cum + k: rel's bits 1..255, rel's bit 0 (the
            # ring's bit of cum holds cum + 256) at 256, a slide to cum + 257 (not yet in the ring,
            # H5 sets it) at 257; bit 0 (cum itself) set
            h1_acc = Signal(RUN_BITS)
            h1_holes = Signal(n_fill)     # received PSNs among the abandoned base, cum excluded
            h1_base = Signal(9)           # PSNs in the base: psn - 256 - cum
            m.d.sync += [h1_acc.eq(Cat(Cat(Const(1, 1), rel[1:]) | fill, rel[0], sl_slide & (sl_dist == 257))),
                         h1_holes.eq(Cat(Const(0, 1), rel[1:n_fill] & fill[1:])),
                         h1_base.eq(Mux(sl_slide, Mux(sl_dist == 0, P.SACK_BITS, sl_dist[:8]), 0))]
            # H2: groups of 8: all ones, the prefix-AND inside, the first zero; popcounts of 16
            n_groups = RUN_BITS // 8
            h2_full = Signal(n_groups)
            h2_prefix = Signal(RUN_BITS)
            h2_first = [Signal(3, name=f"h2_first{g}") for g in range(n_groups)]
            h2_pop = [Signal(5, name=f"h2_pop{g}") for g in range(n_fill // 16)]
            h2_base = Signal(9)
            for g in range(n_groups):
                grp = h1_acc[8 * g:8 * g + 8]
                prefix = Cat(*[grp[:k + 1].all() for k in range(8)])
                m.d.sync += [h2_full[g].eq(grp.all()), h2_first[g].eq(_thermometer_index(prefix)),
                             h2_prefix[8 * g:8 * g + 8].eq(prefix)]
            m.d.sync += [*[p.eq(_popcount(h1_holes[16 * i:16 * i + 16])) for i, p in enumerate(h2_pop)],
                         h2_base.eq(h1_base)]
            # H3: the first group with a 0 (one-hot) and the run of ones from bit 0
            h3_first_group = Signal(n_groups)
            h3_run = Signal(RUN_BITS)     # H3's run of ones, loaded into S5's ring register
            h3_pop = [Signal(7, name=f"h3_pop{i}") for i in range(len(h2_pop) // 4)]
            h3_base = Signal(9)
            # all groups below g full: the full eights of groups below g's eight, then g's own
            eights = [h2_full[8 * j:8 * j + 8].all() for j in range((n_groups + 7) // 8)]
            before = [Cat(Const(1, 1), *eights[:g // 8], h2_full[8 * (g // 8):g]).all() for g in range(n_groups)]
            m.d.comb += [h3_run[8 * g + k].eq(before[g] & h2_prefix[8 * g + k]) for g in range(n_groups)
                         for k in range(8)]
            # MR-RX-310: the run reached the arrival at cum + 257 (cum passes it: not set in H5)
            h3_past = Signal()
            m.d.sync += [*[h3_first_group[g].eq(before[g] & ~h2_full[g]) for g in range(n_groups)],
                         h3_past.eq(h3_run[RING_BITS + 1]),
                         *[p.eq(_popcount_sum(h2_pop[4 * i:4 * i + 4])) for i, p in enumerate(h3_pop)],
                         h3_base.eq(h2_base)]
            # H4: the advance; the bits to clear (the run after cum, in ring positions)
            h4_advance = Signal(9)
            h4_clear = Signal(RING_BITS)
            h4_abandoned = Signal(9)
            h4_set = Signal()       # MR-RX-310: H5 sets the slide's arrival (sl_oh)
            group_index = Cat(*[Cat(*[h3_first_group[g] for g in range(n_groups) if g >> j & 1]).any()
                                for j in range(6)])
            inner = Cat(*[Cat(*[h3_first_group[g] & h2_first[g][j] for g in range(n_groups)]).any()
                          for j in range(3)])
            m.d.sync += [h4_advance.eq(Cat(inner, group_index)),
                         # H4's turn: the run rotated left by sl_cum_lo (the rotator's right
                         # rotate of it bit-reversed, reversed)
                         h4_clear.eq(rel[::-1]), h4_set.eq(sl_slide & ~(h3_past if RING_PAST else 0)),
                         h4_abandoned.eq(h3_base - _popcount_sum(h3_pop))]
        else:
            hn = self.hold_n
            pieces = RING_BITS // SERIAL_PIECE
            lb = SERIAL_PIECE.bit_length() - 1
            assert ROT_AMT and SERIAL_PIECE == 1 << lb and RING_BITS % SERIAL_PIECE == 0 and hn == pieces + 4
            # MR-RX-327: the slide's base (PSNs cum .. psn - 257: psn - 256 - cum of them) and
            # whether it reaches cum + 257 (the arrival the run can pass), registered as the
            # record enters S5 in place of its distance
            sl_base = Signal(9)
            sl_b257 = Signal()
            sl_slide_regs = [sl_base.eq(Mux(slide, Mux(dist_lo == 0, P.SACK_BITS, dist_lo[:8]), 0)),
                             sl_b257.eq(slide & (dist_lo == 257))]
            sr_j = Signal(range(pieces), name="sr_j")     # the piece the rotator shows
            sr_alive = Signal(name="sr_alive")              # the run has not met a 0 yet
            sr_t = Signal(9, name="sr_t")                   # the run's length (the advance)
            sr_ab = Signal(9, name="sr_ab")                 # the base less its received PSNs
            sr_pop = Signal(lb + 1, name="sr_pop")          # the received PSNs of the piece scanned
            with m.If(advance):
                m.d.sync += [sr_j.eq(0), sr_alive.eq(1), sr_pop.eq(0),
                             sr_ab.eq(Mux(slide, Mux(dist_lo == 0, P.SACK_BITS, dist_lo[:8]), 0))]
                m.d.sync += [sl_cum.eq(cum), sl_addr.eq(s4_carry.row), sl_cum_hi_p1.eq((cum_hi + 1)[:15]),
                             *sl_slide_regs, sl_slide.eq(slide), sl_step.eq(at_cum), sl_oh.eq(s4_oh),
                             # MR-RX-324: a slide leaves S4's cum as it is, so the fill's `slow` selects
                             rot_amt.eq(_rot_amt_next(slow_fill if lookup_free else slow, cum[:9], nrow.cum[:9])),
                             hold.eq(Mux(slow, self.hold_n, 0)), holding.eq(slow), slow_write.eq(0)]
            with m.Else():
                m.d.sync += [hold.eq(hold - 1), holding.eq(hold != 1), slow_write.eq(hold == 2)]
            sl_cum_lo = sl_cum[:9]
            # the turn's piece: the rotator's amount is sl_cum + SERIAL_PIECE x sr_j in the
            # capture cycles (H1 .. H1 + pieces - 1), so its low bits are the run's bits
            # SERIAL_PIECE x sr_j .. + SERIAL_PIECE - 1 (bit k: PSN cum + k); after the last
            # capture the amount is sl_cum's again (the pieces make one turn)
            ring_rot = Signal(RING_BITS)
            rel = ring_rot
            capt = _serial_capture(holding, hold, hn, pieces)
            with m.If(capt):
                m.d.sync += [sr_j.eq(sr_j + 1),
                             rot_amt[lb:RING_LOG2].eq(rot_amt[lb:RING_LOG2] + 1)]
            # the base's bits in the piece: run bit SERIAL_PIECE x sr_j + i below sl_base
            base_hi = sl_base[lb:]
            in_base = Cat(*[(base_hi > sr_j) | ((base_hi == sr_j) & lo) for lo in _below(sl_base[:lb], SERIAL_PIECE)])
            first = sr_j == 0
            sr_piece = Signal(SERIAL_PIECE, name="sr_piece")     # run bits, base filled, cum's set
            sr_holes = Signal(SERIAL_PIECE, name="sr_holes")     # received PSNs in the base, cum not
            sr_v, sr_pj = Signal(name="sr_v"), Signal(range(pieces), name="sr_pj")
            sr_b256 = Signal(name="sr_b256")                     # the ring's bit of cum: cum + 256
            piece = rel[:SERIAL_PIECE]
            m.d.sync += [sr_piece.eq(Cat(piece[0] | in_base[0] | first, piece[1:] | in_base[1:])),
                         sr_holes.eq(Cat(piece[0] & in_base[0] & ~first, piece[1:] & in_base[1:])),
                         sr_v.eq(capt), sr_pj.eq(sr_j)]
            with m.If(capt & first):
                m.d.sync += sr_b256.eq(rel[0])
            # the scan, the cycle after each capture: the run's length where its first 0 is,
            # RING_BITS and cum + 256 / cum + 257 when every piece is all ones
            full, lead = _lead_ones(sr_piece)
            with m.If(sr_v & sr_alive):
                with m.If(~full):
                    m.d.sync += [sr_t.eq(Cat(lead, sr_pj)), sr_alive.eq(0)]
                with m.Elif(sr_pj == pieces - 1):
                    m.d.sync += [sr_t.eq(Cat(sr_b256 & ~sl_b257, sr_b256 & sl_b257, Const(0, 6), 1)),
                                 sr_alive.eq(0)]
            with m.If(~advance):
                m.d.sync += [sr_pop.eq(Mux(sr_v, _popcount(sr_holes), 0)), sr_ab.eq(sr_ab - sr_pop)]
            # the run as a vector (bit k: k < sr_t), for the turn back: loaded into S5's ring
            # in hold 3 (see below) as H3's run
            h3_run = Signal(RUN_BITS)
            m.d.comb += h3_run.eq(Cat(_below(sr_t[:8], RING_BITS) | sr_t[8].replicate(RING_BITS),
                                      sr_t[8] & (sr_t[:8] != 0), sr_t[8] & (sr_t[:8] > 1), Const(0, RUN_BITS - RING_BITS - 2)))
            h4_advance = sr_t
            # MR-RX-333: the bits to clear straight from the rotator in hold 1 (MR-RX-343: from a
            # register of it): S5's ring holds the run from hold 3 to H5's write and the amount
            # is sl_cum's from hold 4 to it, so the rotator shows hold 2's turn back again
            h4_clear = Signal(RING_BITS, name="sr_clear")
            if self.rot_mux:
                # MR-RX-343: registered every cycle, so hold 1's write takes hold 2's turn back
                # (the rotator shows the same turn in both) from a register, not the rotator
                m.d.sync += h4_clear.eq(_serial_clear(rel))
            else:
                m.d.comb += h4_clear.eq(_serial_clear(rel))
            h4_abandoned = sr_ab
            h4_set = Signal()
            m.d.sync += h4_set.eq(sl_slide & ~((sr_t == RING_BITS + 2) if RING_PAST else 0))
        # H5: the new cum and ring
        new_lo = Signal(10)
        m.d.comb += new_lo.eq(sl_cum_lo + h4_advance)
        slow_row = Signal(lay.path_mem)
        m.d.comb += [slow_row.eq(sl_row), slow_row.cum.eq(Cat(new_lo[:9], Mux(new_lo[9], sl_cum_hi_p1, sl_cum[9:]))),
                     # MR-RX-310: the abandoned and the run cleared, then the slide's arrival set
                     slow_row.ring.eq((sl_row.ring & ~h4_clear) | Mux(h4_set, sl_oh, 0))]

        # -- configuration writes and the path-row write port (MR-RX-060, MR-RX-042, MR-RX-013)
        cfg = self.s_cfg.payload
        s5_accepted = Signal()
        cfg_ready = advance & ~(s4_valid & ~s4_bad) & ~(s5_valid & s5_accepted)
        if self.interval > 1:
            # MR-RX-319: a configuration write is an entry: it waits for the records' gate and
            # shuts it as a record does
            cfg_ready = advance & gate_open & ~(s4_valid & ~s4_bad) & ~(s5_valid & s5_accepted)
        m.d.comb += self.s_cfg.ready.eq(cfg_ready)
        cfg_take = self.s_cfg.valid & cfg_ready
        if self.interval > 1:
            m.d.comb += entry_took.eq(take | fire | cfg_take)
        msg_cfg_row, msg_cfg_held = cfg_stream_row(0)
        recv_cfg_row, recv_cfg_held = cfg_stream_row(rb)
        rd_cfg_row, rd_cfg_held = cfg_stream_row(rdb)
        with m.If(cfg_take & (cfg.table == TABLE_GLOBAL)):
            m.d.sync += [ack_every.eq(cfg.data[0:4]), mtu_log2.eq(cfg.data[4:8]),
                         ack_delay.eq(cfg.data[8:8 + TIME_BITS])]
        cfg_path = data.View(lay.path, cfg.data[:lay.path.size])
        cfg_row = Signal(lay.path_mem)
        for name, _ in lay.path:
            if name == "sack" and not self.cfg_sack:
                m.d.comb += cfg_row.ring.eq(0)          # MR-RX-240
            elif name == "sack":
                # bit psn mod 256 for the PSNs cum+1 .. cum+256 (MR-RX-310): SACK bit j at
                # cum + 1 + j, the SACK turned left by one, then by cum
                m.d.comb += cfg_row.ring.eq(_rotate(m, cfg_path.sack.rotate_left(1),
                                                    cfg_path.cum[:RING_LOG2], left=True, name="cfg_rot"))
            else:
                m.d.comb += cfg_row[name].eq(cfg_path[name])
        # MR-RX-117: the path row read in S2 (S3's row again during a hold) and registered for
        # S4; this cycle's write forwarded when it is S4's to S3's row (a registered equality)
        # or a configuration write to S3's row; the slow update's write into S4's row register
        # when S5's record (the slow one) and S4's share the row
        if not self.alone:
            path_same, _ = _same_row(m, "path", s2_carry.row, advance)
            path_same_s5 = Signal()
            with m.If(advance):
                m.d.sync += path_same_s5.eq(path_same)
            cfg_path_hit = cfg_take & (cfg.table == TABLE_PATH) & (cfg.addr[:row_bits] == s3_carry.row)
        # this cycle's write outside a hold: S4's or a configuration write, never both
        # (cfg_ready), so one mux serves the write and the forward of either
        path_wdata = Signal(lay.path_mem.size)
        m.d.comb += path_wdata.eq(Mux(ok, nrow.as_value(), cfg_row.as_value()))
        # MR-RX-138 (for timing, not behaviour): the table is written a cycle late from the
        # write registers (`path_wb_*`: this cycle's write, S4's, the configuration's or H5's),
        # so no write-data select reaches the block RAM's inputs
        path_we, path_wa, path_wd = Signal(), Signal(row_bits), Signal(lay.path_mem.size)
        m.d.comb += [
            path_we.eq((ok & advance) | slow_write | (cfg_take & (cfg.table == TABLE_PATH))),
            path_wa.eq(Mux(slow_write, sl_addr, Mux(ok, s4_carry.row, cfg.addr[:row_bits]))),
            path_wd.eq(Mux(slow_write, slow_row.as_value(), path_wdata)),
        ]
        path_wb_en, path_wb_addr = Signal(), Signal(row_bits)
        path_wb_prev = Signal(lay.path_mem.size)
        m.d.sync += [path_wb_en.eq(path_we), path_wb_addr.eq(path_wa), path_wb_prev.eq(path_wd)]
        # MR-RX-139: H5's write into S4's row register has a mux of its own, the last before the
        # register, its condition a register (`hold == 2` in H4 and S5's row S4's), so
        # `slow_write`'s select of the write data is on no forward into the row register; in
        # `cum` and `ring` only (MR-RX-242: the other fields hold H5's row already)
        if self.alone:
            # MR-RX-320: no entry in S3 while another is in S4 or holds: the read alone
            path_row = _registered_row(m, "path", path_rd, path_wr, Mux(holding, s3_carry.row, s2_carry.row),
                                       advance, [], reread=True, rd_data=path_data, forward=False)
        else:
            slow_fwd = Signal()
            with m.If(advance):
                m.d.sync += slow_fwd.eq(0)
            with m.Else():
                m.d.sync += slow_fwd.eq((hold == 2) & path_same_s5)
            path_row = _registered_row(
                m, "path", path_rd, path_wr, Mux(holding, s3_carry.row, s2_carry.row),
                advance, [(slow_fwd, slow_row.as_value()), ((ok & path_same) | cfg_path_hit, path_wdata)],
                reread=True, load=slow_fwd, rd_data=path_data, late=(path_we, path_wa, path_wd),
                load_slices=[(lay.path_mem[f].offset, lay.path_mem[f].offset + lay.path_mem[f].width)
                             for f in SLOW_FWD_FIELDS])
        # MR-RX-125 (for timing, not behaviour): the slow record's new row reaches sl_row a cycle
        # later, in H1, from the write register (the table's write data of the cycle that
        # started the hold: S4's new row, as the hold starts only after an accepted record, no
        # hold write, no configuration write), so S4's update cone no longer drives sl_row's
        # 653 flip-flops; sl_row is read only in H5
        with m.If(hold == SL_ROW_LOAD + self.hold_n - HOLD_CYCLES):
            m.d.sync += sl_row.eq(path_wb_prev)
        m.d.comb += s4_row.eq(path_row)
        m.d.comb += [
            conn_wr.en.eq(cfg_take & (cfg.table == TABLE_CONN)), conn_wr.addr.eq(cfg.addr[:cb]),
            conn_wr.data.eq(cfg.data[:lay.conn.size]),
            key_wr.en.eq(cfg_take & (cfg.table == TABLE_KEY)), key_wr.addr.eq(cfg.addr[:kb]),
            key_wr.data.eq(cfg.data[:lay.key.size]),
            recv_wr.en.eq(cfg_take & (cfg.table == TABLE_RECV) & recv_cfg_held), recv_wr.addr.eq(recv_cfg_row),
            recv_wr.data.eq(cfg.data[:lay.recv.size]),
            path_wr.en.eq(path_wb_en), path_wr.addr.eq(path_wb_addr), path_wr.data.eq(path_wb_prev),
        ]

        # -- S5: the outputs into their queues, the counters (MR-RX-030..033, MR-RX-050)
        s5_carry = Signal(carry)
        s5_addr = Signal(64)
        s5_nak, s5_reason, s5_ack_en = Signal(), Signal(8), Signal()
        s5_cum, s5_ring, s5_ce_count = Signal(24), Signal(RING_BITS), Signal(16)
        s5_place, s5_steer_en, s5_steer = Signal(), Signal(), Signal()
        s5_ce, s5_placed, s5_abandoned = Signal(), Signal(16), Signal(9)
        # MR-RX-300: S4's outcome as the bank's row, whether the bank counts it, whether msg_slots does
        s5_code, s5_bank, s5_slots = Signal(4), Signal(), Signal()
        s5_ack = Signal()
        s5_arm, s5_gen = Signal(), Signal(GEN_BITS)
        s5_stale = Signal()
        s5_sv_nak = Signal()
        with m.If(advance):
            m.d.sync += [
                s5_valid.eq(s4_valid), s5_carry.eq(s4_carry), s5_addr.eq(s4_addr), s5_accepted.eq(accepted),
                s5_stale.eq(s4_stale), s5_sv_nak.eq(sv_nak),
                s5_arm.eq(arm), s5_gen.eq(gen),
                s5_nak.eq(is_nak), s5_reason.eq(Mux(out_nak, NAK_OF[RxCode.PSN_WINDOW],
                                                    Mux(s4_bad, s4_nak_reason,
                                                        Mux(sv_refused, Mux(sv_beyond, NAK_OF[RxCode.MSG_SLOTS],
                                                                            NAK_OF[RxCode.LENGTH]),
                                                            Mux(rsc_rnr, NAK_OF[RxCode.RNR], s4_late_reason))))),
                s5_ack_en.eq(is_nak | send_ack), s5_ack.eq(send_ack),
                s5_cum.eq(nrow.cum), s5_ce_count.eq(Mux(dup | tmr, row.ce, ce_new)),
                # MR-RX-103: a stale SEND is accepted, not placed
                s5_place.eq(accepted & ~s4_stale & (s4_carry.plen != 0)), s5_steer_en.eq(s4_carry.steer),
                s5_steer.eq(accepted & ~s4_stale), s5_code.eq(final[:4]), s5_bank.eq(~tmr & (final < BANK_ROWS)),
                s5_slots.eq(~tmr & (final == RxCode.MSG_SLOTS)),
                s5_ce.eq(accepted & ce_bit), s5_placed.eq(Mux(accepted & ~s4_stale, s4_carry.plen, 0)),
                s5_abandoned.eq(0),
            ]
        with m.Elif(slow_write):
            m.d.sync += [s5_cum.eq(slow_row.cum), s5_abandoned.eq(h4_abandoned), rot_amt.eq(slow_row.cum[:9])]
        # MR-RX-260 (for LUTs, not behaviour): S5's ring takes the path table's write data
        # (`path_wd`, the write registers' select): S4's new row in a cycle that advances (a
        # record whose ring S5 reads, for an ACK's SACK or H1's turn, is `ok`), H5's row in
        # `slow_write` (never in a cycle that advances)
        ring_field = lay.path_mem["ring"]
        with m.If(_s5_ring_load(advance, slow_write)):
            m.d.sync += s5_ring.eq(path_wd[ring_field.offset:ring_field.offset + ring_field.width])
        with m.Elif(hold == (3 if self.serial else HOLD_CYCLES - 2)):
            # H3: the run (bit-reversed, cum's bit cleared) into S5's ring register for H4's
            # rotate: no hold outside an ACK push reads S5's ring after H1's turn. MR-RX-310:
            # PSN cum + 256's bit is the ring's bit of cum (cum + 257's is cum + 1's, in the run
            # whenever cum + 257 is)
            m.d.sync += s5_ring.eq(Cat(h3_run[RING_BITS], h3_run[1:RING_BITS])[::-1])
        with m.If(advance & tmr):
            # the ACK of a timer names the path's newest pending packet (MR-SEQ-009)
            m.d.sync += [s5_carry.psn.eq(row.last_psn), s5_carry.sport.eq(row.last_sport)]
        push = s5_valid & advance
        # One ring rotator (MR-RX-310, MR-RX-048) for H1's rotate to cum (hold ==
        # HOLD_CYCLES), H4's rotate back of the run (hold == HOLD_CYCLES - 3) and S5's SACK read-out (the ACK
        # is pushed only in a cycle that advances, no hold): never two in one cycle. H1's and
        # H4's registers take its output every cycle; only their own turn's value is used (H2
        # reads H1's in the next cycle, H5 H4's). A left rotate is the right rotate of the value
        # bit-reversed, reversed. Its input and amount are S5's ring and cum registers, no
        # select: the ACK queue's write data is the rotator from registers, `hold` only in its
        # enable. In H1's turn S5's ring holds sl_row's ring (both took S4's new row in the cycle
        # that started the hold); H3 loads the run into it for H4's turn. MR-RX-280: the amount
        # is `rot_amt`, S5's cum outside the hold and sl_cum in it, so H1 and H4 take the output
        # as it is (without ROT_AMT: S5's cum, sl_cum + sl_step in both turns, and H1 and H4 turn
        # the output left by sl_step, 256 2:1 muxes).
        ring_amt = (rot_amt if ROT_AMT else s5_cum)[:RING_LOG2]
        if self.rot_mux:
            # MR-RX-342: mux stages from the serial hold's interval on (no multiplier on its paths)
            ring_rot_in = _ring_rotator_mux(m, s5_ring, ring_amt)
        elif ROT_DSP:
            # MR-RX-298: its low stages in multipliers (the same rotate, about 3,100 fewer LUT4s)
            ring_rot_in = _rotate_right_dsp(m, s5_ring, ring_amt, name="ring_rot")
        else:
            ring_rot_in = _rotate(m, s5_ring, ring_amt, left=False, name="ring_rot")
        m.d.comb += ring_rot.eq(ring_rot_in)
        # the SACK: the ring from cum + 1 (MR-RX-310: cum + 256's bit is the ring's bit of cum)
        s5_sack = Cat(ring_rot[1:], ring_rot[0])
        ackw = Signal(lay.ack)
        m.d.comb += [ackw.conn.eq(s5_carry.conn), ackw.path.eq(s5_carry.path), ackw.psn.eq(s5_carry.psn),
                     ackw.sport.eq(s5_carry.sport)]
        with m.If(s5_nak):
            m.d.comb += [ackw.nak.eq(1), ackw.reason.eq(s5_reason)]
        with m.Else():
            m.d.comb += [ackw.cum.eq(s5_cum), ackw.sack.eq(s5_sack),
                         ackw.ce_count.eq(s5_ce_count), ackw.ece.eq(s5_ce_count != 0)]
        m.d.comb += [ack_q.w_en.eq(push & s5_ack_en), ack_q.w_data.eq(ackw)]
        # MR-RX-092: the timer armed by this record, due ack_delay cycles from its push
        tw = Signal(timer_entry)
        m.d.comb += [tw.row.eq(s5_carry.row), tw.gen.eq(s5_gen), tw.due.eq(now + ack_delay),
                     timer_q.w_en.eq(push & s5_arm), timer_q.w_data.eq(tw)]
        placew = Signal(lay.place)
        m.d.comb += [placew.conn.eq(s5_carry.conn), placew.addr.eq(s5_addr), placew.length.eq(s5_carry.plen),
                     place_q.w_data.eq(placew), place_q.w_en.eq(push & s5_place),
                     steer_q.w_en.eq(push & s5_steer_en)]

        # -- the message stage beside S5 (MR-RX-080..085): the row of {connection, stream} read in
        # S3 and registered in S4 with the writes of both cycles forwarded (MR-RX-115), the chunk accounted, the
        # stream's completed messages delivered in order; their records go to S6
        msg_addr = Signal(cb + sb)
        m.d.comb += msg_addr.eq(Cat(s3_carry.stream[:sb], s3_carry.conn))
        if not self.alone:
            m_same, msg_addr_s4 = _same_row(m, "msg", msg_addr, advance)
        m_fwd_now, new_row = Signal(), Signal(lay.msg_row)
        msg_parts = []
        if self.alone:
            # MR-RX-320: read in S2 and registered as the record enters S4 (MR-RX-269), then S5's
            # register: no write of the row between the read and S5 (one entry at a time)
            assert MSG_READ_S2
            msg_addr2 = Cat(s2_carry.stream[:sb], s2_carry.conn)
            msg4 = _registered_row(m, "msg4", msg_rd, msg_wr, Mux(advance, msg_addr2, msg_addr), advance, [],
                                   reread=True, rd_data=msg_data, forward=False)
            msg_parts.append(msg4)
            msg5 = Signal(lay.msg_row.size, name="msg_row")
            with m.If(advance):
                m.d.sync += msg5.eq(msg4)
            mrow = data.View(lay.msg_row, msg5)
        elif MSG_READ_S2:
            # MR-RX-269: read in S2 (S3's row again during a hold) and registered as the record
            # enters S4 (`msg4_row`), the write of S3's cycle to S3's row (S5's record's, the
            # record two ahead, or a configuration write) taken there and the write of S2's
            # cycle forwarded, so S4's decision terms start from a register, not the block
            # RAM's output; S5's row register (`msg_row`) takes that register or S5's write of
            # S4's cycle (MR-RX-115's last forward)
            msg_addr2 = Cat(s2_carry.stream[:sb], s2_carry.conn)
            msg_now3 = msg_wr.en & (msg_wr.addr == msg_addr)
            msg4 = _registered_row(m, "msg4", msg_rd, msg_wr, Mux(advance, msg_addr2, msg_addr), advance,
                                   [(msg_now3, msg_wr.data)] if MSG4_NOW else [], reread=True, rd_data=msg_data)
            msg_parts.append(msg4)
            msg5 = Signal(lay.msg_row.size, name="msg_row")
            with m.If(advance):
                m.d.sync += msg5.eq(Mux(m_fwd_now, new_row.as_value(), msg4))
            mrow = data.View(lay.msg_row, msg5)
        else:
            # read every cycle, S4's row again during a hold (a plain synchronous read port, for
            # MR-FLOW-026's block RAM; as the path row's)
            mrow = data.View(lay.msg_row, _registered_row(m, "msg", msg_rd, msg_wr, Mux(advance, msg_addr, msg_addr_s4),
                                                          advance, [(m_fwd_now, new_row.as_value())], reread=True,
                                                          rd_data=msg_data, parts=msg_parts))
        mc = s5_carry
        # MR-RX-204: the record's msg - j and msg_len - plen registered as it enters S4 (for S4's
        # decision terms, MR-RX-205) and moved into S5 with it
        s4_msg_minus = [Signal(32, name=f"s4_msg_minus{j}") for j in range(n_slots)]
        s4_rest = Signal(32)
        m_msg_minus = [Signal(32, name=f"m_msg_minus{j}") for j in range(n_slots)]
        m_rest = Signal(32)
        with m.If(advance):
            m.d.sync += [*[r.eq(s3_carry.msg - j) for j, r in enumerate(s4_msg_minus)],
                         # MR-RX-326: the prefix form (the generic flow's ripple subtract was 10+ levels)
                         s4_rest.eq(_sub_prefix(s3_carry.msg_len, [s3_carry.plen], chain, m=m, name="s4_rest")),
                         *[r.eq(r4) for r, r4 in zip(m_msg_minus, s4_msg_minus)], m_rest.eq(s4_rest)]

        ent_w = 1 + EPOCH_BITS

        def msg_stage(mrow, mc, m_msg_minus, m_rest, pfx, given=None, done_of=None, slot_of=None):
            """The message stage of record ``mc`` on message row ``mrow`` (MR-RX-080..083): its
            decision (new chunk, message done, the delivery run) and the row it writes. With
            ``given`` (``(new, done, run)``, registers: MR-RX-205) the decision is those registers,
            so the row written follows from registers and one adder. ``done_of(fresh)``: the
            message-done test in place of the row's placed bytes against ``m_rest``.
            ``slot_of(slot)`` (MR-RX-282): drives the record's slot's valid, kind, msg_len and
            placed and returns its chunk entry before the fresh test, in place of the picks from
            ``mrow``."""
            m_dist = Signal(32, name=f"{pfx}_dist")
            m.d.comb += m_dist.eq(mc.msg - mrow.next)
            m_behind = m_dist[31]                   # only the counters read it (MR-RX-123)
            # the loop's compares are equalities against registered operands: msg - j == next for
            # each slot distance j; placed == msg_len - plen; next + k computed beside the decision
            m_eq = [Signal(name=f"{pfx}_eq{j}") for j in range(n_slots)]
            for j in range(n_slots):
                m.d.comb += m_eq[j].eq(m_msg_minus[j] == mrow.next)
            m_in_slots = Cat(*m_eq).any()
            m_next_plus = [Signal(32, name=f"{pfx}_next_plus{k}") for k in range(n_slots + 1)]
            for k in range(n_slots + 1):
                m.d.comb += m_next_plus[k].eq(mrow.next + k)
            m_k = mc.msg[:slot_bits] if slot_bits else Const(0, 1)
            slot = Signal(lay.msg_slot, name=f"{pfx}_slot")
            m_pos = mc.chunk[:pos_bits]
            entry_read = Signal(ent_w, name=f"{pfx}_entry_read")     # the entry at m_pos, fresh or not
            if slot_of is None:
                m.d.comb += [slot.eq(_pick([mrow.slots[j].as_value() for j in range(n_slots)], m_k)),
                             entry_read.eq(_pick(_words(slot.ring, ent_w), m_pos))]
            else:
                m.d.comb += entry_read.eq(slot_of(slot))
            m_fresh = ~slot.valid
            m_mismatch = slot.valid & ((slot.msg_len != mc.msg_len) | (slot.kind != mc.kind))
            m_epoch = mc.chunk[pos_bits:]
            entry = Signal(ent_w, name=f"{pfx}_entry")
            m.d.comb += entry.eq(Mux(m_fresh, 0, entry_read))
            epoch_prev = Signal(EPOCH_BITS, name=f"{pfx}_epoch_prev")
            m.d.comb += epoch_prev.eq(m_epoch - 1)
            chunk_new = ~entry[EPOCH_BITS] | (entry[:EPOCH_BITS] == epoch_prev)
            m_refused = (~m_behind & ~m_in_slots) | (m_in_slots & m_mismatch)
            m_new = m_in_slots & ~m_mismatch & chunk_new
            m_placed = Signal(32, name=f"{pfx}_placed")
            # MR-RX-124: a prefix adder, as the row's write data and forward follow it
            m.d.comb += m_placed.eq(add(Mux(m_fresh, 0, slot.placed), Cat(mc.plen, Const(0, 16)), name=f"{pfx}_placed_add")[:32])
            m_done = Signal(name=f"{pfx}_done")     # the record's message is complete with this chunk
            m.d.comb += m_done.eq(Mux(m_fresh, 0, slot.placed) == m_rest if done_of is None else done_of(m_fresh))
            if given is not None:
                m_new, m_done, run_given = given
            # each slot's new value from its own old one (the record's slot: its chunk entry set,
            # emptied first when fresh): not from the picked slot, so no pick feeds the wide fields
            slots_new = [Signal(lay.msg_slot, name=f"{pfx}_slot{j}") for j in range(n_slots)]
            for j in range(n_slots):
                old_slot, hit = mrow.slots[j], (m_k == j) if slot_bits else Const(1, 1)
                clear = hit & m_fresh
                m.d.comb += [slots_new[j].valid.eq(hit | old_slot.valid),
                             slots_new[j].kind.eq(Mux(hit, mc.kind, old_slot.kind)),
                             slots_new[j].err.eq(Mux(clear, mc.err, old_slot.err)),
                             slots_new[j].msg_len.eq(Mux(hit, mc.msg_len, old_slot.msg_len)),
                             slots_new[j].imm.eq(Mux(hit, mc.imm, old_slot.imm)),
                             slots_new[j].wr_id.eq(Mux(clear, mc.wr_id, old_slot.wr_id)),
                             slots_new[j].placed.eq(Mux(hit, m_placed, old_slot.placed)),
                             slots_new[j].done.eq(Mux(hit, m_done, old_slot.done))]
                for i in range(ring_n):
                    m.d.comb += slots_new[j].ring[i * ent_w:(i + 1) * ent_w].eq(
                        Mux(hit & (m_pos == i), Cat(m_epoch, Const(1, 1)),
                            Mux(clear, 0, old_slot.ring[i * ent_w:(i + 1) * ent_w])))
            # delivery: the run of done slots from the stream's next message (only when this chunk
            # completed that message)
            m_start = mrow.next[:slot_bits] if slot_bits else Const(0, 1)
            deliver_ok = m_done & m_eq[0]
            run = []
            prev = deliver_ok
            order = []
            for i in range(n_slots):
                sel_slot = Signal(lay.msg_slot, name=f"{pfx}_ord{i}")
                m.d.comb += sel_slot.eq(_pick([x.as_value() for x in slots_new], (m_start + i)[:slot_bits])
                                        if slot_bits else slots_new[0])
                bit = Signal(name=f"{pfx}_run{i}")
                m.d.comb += bit.eq(run_given[i] if given is not None else prev & sel_slot.valid & sel_slot.done)
                prev = bit
                run.append(bit)
                order.append(sel_slot)
            slots_out = [Signal(lay.msg_slot, name=f"{pfx}_out{j}") for j in range(n_slots)]
            for j in range(n_slots):
                cleared = Cat(*[run[i] & ((m_start + i)[:slot_bits] == j if slot_bits else Const(1, 1))
                                for i in range(n_slots)]).any()
                m.d.comb += [slots_out[j].eq(slots_new[j]), slots_out[j].valid.eq(slots_new[j].valid & ~cleared)]
            # the run is a prefix (run[i] implies run[i - 1]): next + (its length) by priority
            next_out = m_next_plus[0]
            for i in range(n_slots):
                next_out = Mux(run[i], m_next_plus[i + 1], next_out)
            return dict(new=m_new, done=m_done, run=run, refused=m_refused, order=order, slots_out=slots_out,
                        next_out=next_out, next_plus=m_next_plus, pos=m_pos, epoch_prev=epoch_prev,
                        slot=slot, entry_read=entry_read, fresh=m_fresh, placed=m_placed)

        # MR-RX-204..206: S5's decision (a new chunk, its message done, the delivery run) taken in
        # S4 for S4's record, on each row the message row register may load (the read, or S5's
        # write of this cycle: the run that S4's verdict selects by is then a register, not the
        # message stage behind S5's registers), and registered with the record
        nx_new, nx_done, nx_run = Signal(), Signal(), Signal(n_slots)
        m_stage = msg_stage(mrow, mc, m_msg_minus, m_rest, "m", given=(nx_new, nx_done, nx_run))
        run, order, m_new = m_stage["run"], m_stage["order"], m_stage["new"]
        m_refused, m_next_plus, m_pos = m_stage["refused"], m_stage["next_plus"], m_stage["pos"]
        epoch_prev, m_epoch = m_stage["epoch_prev"], mc.chunk[pos_bits:]
        m_dup = ~m_refused & ~m_new
        m.d.comb += [new_row.next.eq(m_stage["next_out"])]
        for j in range(n_slots):
            m.d.comb += new_row.slots[j].eq(m_stage["slots_out"][j])
        s4_rec = s4_carry
        nx_base = msg_stage(data.View(lay.msg_row, msg_parts[0]), s4_rec, s4_msg_minus, s4_rest, "nxr")
        if self.alone:
            # MR-RX-320: S5 never writes S4's row (S4 is empty when S5 holds a record): the
            # decision on the read row only
            with m.If(advance):
                m.d.sync += [nx_new.eq(nx_base["new"]), nx_done.eq(nx_base["done"]),
                             nx_run.eq(Cat(*nx_base["run"]))]
        else:
            # on S5's written row, S4's slot holds S5's placed bytes (old + S5's plen, an adder)
            # when both name one slot: S4's message is done when old == S4's rest - S5's plen,
            # registered as the records move, so no adder precedes the compare (MR-RX-205)
            s4_rest_m5 = Signal(32)
            with m.If(advance):
                m.d.sync += s4_rest_m5.eq(_sub_prefix(s3_carry.msg_len, [s3_carry.plen, s4_carry.plen], chain, m=m, name="s4_rest_m5"))
            k4 = s4_rec.msg[:slot_bits] if slot_bits else Const(0, 1)
            k5 = mc.msg[:slot_bits] if slot_bits else Const(0, 1)
            if NXW_SHARED:
                # MR-RX-282: S5's row (msg_row) equals msg4_row whenever S5 writes S4's row (the
                # only cycles nx_wrow is used), so S4's slot on it is the read candidate's pick
                old4 = nx_base["slot"]
            else:
                old4 = data.View(lay.msg_slot, _pick([mrow.slots[j].as_value() for j in range(n_slots)], k4)
                                 if slot_bits else mrow.slots[0].as_value())
            same_slot = (k4 == k5) if slot_bits else Const(1, 1)

            def nxw_slot(slot):
                """MR-RX-282: S4's slot on S5's written row from the read candidate's (``old4``) with
                S5's write applied: kind, msg_len and placed S5's when both name one slot, valid the
                written row's (S5's delivery clears it), the chunk entry at S4's position S5's when
                S5 set that entry, cleared when S5's slot was fresh."""
                m.d.comb += [slot.valid.eq(_pick([new_row.slots[j].valid for j in range(n_slots)], k4)
                                           if slot_bits else new_row.slots[0].valid),
                             slot.kind.eq(Mux(same_slot, mc.kind, old4.kind)),
                             slot.msg_len.eq(Mux(same_slot, mc.msg_len, old4.msg_len)),
                             slot.placed.eq(Mux(same_slot, m_stage["placed"], old4.placed))]
                return _nxw_entry(same_slot & (s4_rec.chunk[:pos_bits] == m_pos), Cat(m_epoch, Const(1, 1)),
                                  same_slot & m_stage["fresh"], nx_base["entry_read"])

            def nxw_done(fresh):
                return Mux(fresh, s4_rest == 0, Mux(k4 == k5, Mux(old4.valid, old4.placed, 0) == s4_rest_m5,
                                                    old4.placed == s4_rest))
            nx_wrow = msg_stage(new_row, s4_rec, s4_msg_minus, s4_rest, "nxw", done_of=nxw_done if NX_DONE else None,
                                slot_of=nxw_slot if NXW_SHARED else None)
            nx_new_d = Signal()     # nx_new as S4's record enters S5
            m.d.comb += nx_new_d.eq(Mux(m_fwd_now if NX_FWD else 0, nx_wrow["new"], nx_base["new"]))
            with m.If(advance):
                m.d.sync += [nx_new.eq(nx_new_d),
                             nx_done.eq(Mux(m_fwd_now if NX_FWD else 0, nx_wrow["done"], nx_base["done"]))]
                m.d.sync += nx_run.eq(Mux(m_fwd_now if NX_FWD else 0, Cat(*nx_wrow["run"]), Cat(*nx_base["run"])))
        # the records: which of the run make one (S6 packs them, MR-RX-116); which are READ
        # requests executed (a response item each, MR-RX-131)
        # MR-RX-155: kind bit 2 with bit 0 or 1 an atomic (an execution item on m_atom)
        rec_ok = [run[i] & ~order[i].kind[2] & order[i].kind[:2].any() for i in range(n_slots)]
        rsp_ok = [run[i] & order[i].kind[2] & ~order[i].kind[:2].any() for i in range(n_slots)]
        atom_ok = [run[i] & order[i].kind[2] & order[i].kind[:2].any() for i in range(n_slots)]
        any_rsp = Cat(*rsp_ok).any()
        any_atom = Cat(*atom_ok).any()
        n_rec = Signal(range(n_slots + 1))
        m.d.comb += n_rec.eq(sum(rec_ok))
        m_step = push & s5_accepted & ~mc.read
        msg_cfg = cfg_take & (cfg.table == TABLE_MSG)
        # a table-4 write sets `next` and empties the slots (MR-RX-080): the rest of the row is
        # a constant 0, not a named signal (its 1,232 bits at 256 x 4 were toggle points no
        # stimulus can move)
        next_field = lay.msg_row["next"]
        assert next_field.offset == 0
        cfg_msg_row = Cat(cfg.data[:next_field.width], Const(0, lay.msg_row.size - next_field.width))
        # the write's address and data chosen by S5's registers, not by `msg_cfg` (which waits
        # for `hold` through cfg_ready): a configuration write never goes beside an accepted S5
        # record (cfg_ready), so S5's accepted message record is the stage's write when enabled
        s5_msg_rec = s5_valid & s5_accepted & ~mc.read
        if MSG_CFG_VALID_ONLY:
            # MR-RX-284: only `next` and the slots' `valid` take the configuration's select; an
            # empty slot's other fields are never read (each use of a slot's field is under its
            # `valid`, or the field is set when the slot is taken), so S5's are written
            msg_wdata = Signal(lay.msg_row, name="msg_wdata")
            m.d.comb += [msg_wdata.eq(new_row), msg_wdata.next.eq(Mux(s5_msg_rec, new_row.next, cfg.data[:32]))]
            for j in range(n_slots):
                m.d.comb += msg_wdata.slots[j].valid.eq(_msg_cfg_valid(s5_msg_rec, new_row.slots[j].valid))
            msg_wdata = msg_wdata.as_value()
        else:
            msg_wdata = Mux(s5_msg_rec, new_row.as_value(), cfg_msg_row)
        m.d.comb += [
            msg_wr.en.eq((m_step & m_new) | (msg_cfg & msg_cfg_held)),
            msg_wr.addr.eq(Mux(s5_msg_rec, Cat(mc.stream[:sb], mc.conn), msg_cfg_row)),
            msg_wr.data.eq(msg_wdata),
        ]
        # the configuration never writes beside an accepted S5 record (cfg_ready), so the
        # stage's write is the only one S4's record can need from this cycle
        if self.alone:
            pass                # MR-RX-320: S5 never writes S4's row: y_take stays 0
        elif Y_TAKE_REG:
            # MR-RX-293: S5's `push & s5_accepted & ~mc.read & m_new & m_same` as a register: each
            # term is a register loaded as the records move (S4's accepted, read, nx_new, and the
            # address equality m_same takes), so the register equals `s5_valid &` that AND in
            # every cycle (accepted implies S4's valid) and `advance &` it is the old term. S4's
            # verdict takes it without `advance`: every use of the verdict is a register loaded
            # on `advance` or the path table's write, whose enable takes it
            y_take_r = Signal(name="y_take_r")
            same_next = m_same if Y_TAKE_WRONG else (msg_addr_s4 == msg_addr)
            with m.If(advance):
                m.d.sync += y_take_r.eq(accepted & ~s4_carry.read & nx_new_d & same_next)
            m.d.comb += [m_fwd_now.eq(advance & y_take_r), y_take.eq(y_take_r)]
        else:
            m.d.comb += [m_fwd_now.eq(m_step & m_new & m_same), y_take.eq(m_step & m_new & m_same)]
        # MR-RX-169: this write and its delivery run, for S4's slot verdict
        if not self.alone:
            m.d.comb += [y_run.eq(Cat(*[r & y_take for r in run])), y_run_if.eq(Cat(*run))]
        if self.slot_nak and not self.alone:
            # MR-RX-201: S5's write for the verdict's S3 terms: its row's next and run length (a
            # prefix: one-hot from adjacent bits), and a configuration write's next
            m.d.comb += [sv_s5_rec.eq(s5_msg_rec), sv_s5_next.eq(mrow.next), sv_cfg_next.eq(cfg.data[:32]),
                         sv_s5_len.eq(Cat(*[(Const(1, 1) if k == 0 else run[k - 1]) & (Const(1, 1) if k == n_slots
                                                                                      else ~run[k])
                                            for k in range(n_slots + 1)]))]
        if self.max_rd_atomic is not None:
            # MR-RX-189: the count table's one write port: S5's taking record (count + 1, from S4's
            # register) or a table 7 write (count - 1, not below 0, from the asynchronous read
            # at its connection); never both in a cycle (cfg_ready: no accepted S5 record)
            s5_rtake, s5_rcnt = Signal(), Signal(rsc_bits)
            with m.If(advance):
                m.d.sync += [s5_rtake.eq(accepted & rsc_take), s5_rcnt.eq(rsc_cnt_next)]
            free_take = cfg_take & (cfg.table == TABLE_RSP_FREE)
            m.d.comb += [rsc_cfg_rd.addr.eq(cfg.addr[:cb]), rsc_s5_inc.eq(push & s5_rtake)]
            m.d.comb += [
                rsc_wr.en.eq((push & s5_rtake) | (free_take & (rsc_cfg_rd.data != 0))),
                rsc_wr.addr.eq(Mux(s5_rtake, s5_carry.conn, cfg.addr[:cb])),
                rsc_wr.data.eq(Mux(s5_rtake, s5_rcnt, rsc_cfg_rd.data - 1)),
            ]
        # -- the READ stage beside S5 (MR-RX-112): the outstanding READ's accounting, read in S3
        # and registered in S4 as the message row (MR-RX-115), the chunk ring as the message slot's, the record
        # when every byte is placed
        rds_addr = Signal(cb + sb + rdb)
        m.d.comb += rds_addr.eq(Cat(s3_carry.msg[:rdb], s3_carry.stream[:sb], s3_carry.conn))
        rs_fwd_now, nstate = Signal(), Signal(lay.rd_state)
        if self.alone:
            # MR-RX-320: no write of the row between its read and S5 (one entry at a time)
            rds_addr_s4 = Signal(len(rds_addr), name="rds_addr_s4")
            with m.If(advance):
                m.d.sync += rds_addr_s4.eq(rds_addr)
            rstate = data.View(lay.rd_state, _registered_row(m, "rds", rds_rd, rds_wr, Mux(advance, rds_addr, rds_addr_s4),
                                                             advance, [], reread=True, rd_data=rds_data, forward=False))
        else:
            rs_same, rds_addr_s4 = _same_row(m, "rds", rds_addr, advance)
            rstate = data.View(lay.rd_state, _registered_row(m, "rds", rds_rd, rds_wr, Mux(advance, rds_addr, rds_addr_s4),
                                                             advance, [(rs_fwd_now, nstate.as_value())], reread=True,
                                                             rd_data=rds_data))
        r_entry = Signal(ent_w)
        m.d.comb += r_entry.eq(_pick(_words(rstate.ring, ent_w), m_pos))
        if self.r_new_s4:
            # MR-RX-352: the same terms in S4 from the read data S5's row register loads (the read
            # data alone, MR-RX-320), S4's chunk and stale flag, registered with them
            rd_now = data.View(lay.rd_state, rds_data)
            s4_entry = Signal(ent_w, name="s4_rd_entry")
            m.d.comb += s4_entry.eq(_pick(_words(rd_now.ring, ent_w), s4_carry.chunk[:pos_bits]))
            s4_epoch_prev = (s4_carry.chunk[pos_bits:] - 1)[:EPOCH_BITS]
            r_new = Signal(name="s5_r_new")
            with m.If(advance):
                m.d.sync += r_new.eq(~s4_stale & ~rd_now.done
                                     & (~s4_entry[EPOCH_BITS] | (s4_entry[:EPOCH_BITS] == s4_epoch_prev)))
        else:
            r_new = ~s5_stale & ~rstate.done & (~r_entry[EPOCH_BITS] | (r_entry[:EPOCH_BITS] == epoch_prev))
        r_done = rstate.placed == m_rest
        m.d.comb += [nstate.done.eq(r_done),     # MR-RX-124: a prefix adder, as the message row's
                     nstate.placed.eq(add(rstate.placed, Cat(mc.plen, Const(0, 16)), name="nstate_placed_add")[:32])]
        for j in range(ring_n):
            m.d.comb += nstate.ring[j * ent_w:(j + 1) * ent_w].eq(
                Mux(m_pos == j, Cat(m_epoch, Const(1, 1)), rstate.ring[j * ent_w:(j + 1) * ent_w]))
        r_step = push & s5_accepted & mc.read
        s5_rd_rec = s5_valid & s5_accepted & mc.read
        rd_cfg = cfg_take & (cfg.table == TABLE_READ)
        if RDS_CFG_VALID_ONLY:
            # MR-RX-286: done, placed and each entry's valid bit take the configuration's 0; an
            # invalid entry's epoch is never read (a chunk at an invalid entry is new), so S5's
            rds_wdata = Signal(lay.rd_state, name="rds_wdata")
            m.d.comb += [rds_wdata.eq(nstate), rds_wdata.done.eq(s5_rd_rec & nstate.done),
                         rds_wdata.placed.eq(Mux(s5_rd_rec, nstate.placed, 0))]
            for j in range(ring_n):
                vb = j * ent_w + EPOCH_BITS         # the entry's valid bit (Cat(epoch, 1))
                m.d.comb += rds_wdata.ring[vb].eq(_rds_cfg_valid(s5_rd_rec, nstate.ring[vb]))
            rds_wdata = rds_wdata.as_value()
        else:
            rds_wdata = Mux(s5_rd_rec, nstate.as_value(), 0)
        m.d.comb += [
            rd_wr.en.eq(rd_cfg & rd_cfg_held), rd_wr.addr.eq(rd_cfg_row), rd_wr.data.eq(cfg.data[:lay.rd.size]),
            rds_wr.en.eq((r_step & r_new) | (rd_cfg & rd_cfg_held)),
            # chosen by S5's registers as the message table's write (cfg_ready)
            rds_wr.addr.eq(Mux(s5_rd_rec, Cat(mc.msg[:rdb], mc.stream[:sb], mc.conn), rd_cfg_row)),
            rds_wr.data.eq(rds_wdata),
        ]
        if not self.alone:
            m.d.comb += rs_fwd_now.eq(r_step & r_new & rs_same)
        r_cqe = r_step & r_new & r_done
        # S6: the bundle into its queue (MR-RX-085). MR-RX-116: S5 registers the delivery's
        # pieces (which of the run make a record, their slots, their message numbers) and S6
        # packs them, so the message stage and the packing are in different cycles
        rec_fields = data.StructLayout({"kind": 2, "msg_len": 32, "imm": 32, "wr_id": 64, "msg": 32, "err": 1})
        s6_rec_ok, s6_read = Signal(n_slots), Signal()
        s6_cqe, s6_rsp, s6_rsp_ok = Signal(), Signal(), Signal(n_slots)
        s6_atom, s6_atom_ok = Signal(), Signal(n_slots)
        s6_mark = Signal(CAP_COUNT_BITS)    # MR-RX-165: the captures its atomic bundle waits for
        s6_rec = [Signal(rec_fields, name=f"s6_rec{i}") for i in range(n_slots)]
        s6_conn, s6_stream = Signal(cb), Signal(esb)
        s6_rd = Signal(rec_fields)
        # s6_valid (the records in flight, MR-RX-041) counts a record whose delivery makes a
        # completion bundle, a response bundle or both once: each queue takes one entry of it
        m.d.sync += [s6_cqe.eq((m_step & m_new & (n_rec != 0)) | r_cqe),
                     s6_rsp.eq(m_step & m_new & any_rsp), s6_atom.eq(m_step & m_new & any_atom),
                     s6_valid.eq((m_step & m_new & ((n_rec != 0) | any_rsp | any_atom)) | r_cqe),
                     s6_rec_ok.eq(Cat(*rec_ok)), s6_rsp_ok.eq(Cat(*rsp_ok)), s6_atom_ok.eq(Cat(*atom_ok)),
                     s6_read.eq(mc.read), s6_conn.eq(mc.conn), s6_stream.eq(mc.stream),
                     # MR-RX-159/160: a READ response's record: the row's length (in imm), op
                     # (in kind) and the ERROR flag (in err)
                     s6_rd.msg_len.eq(mc.imm), s6_rd.wr_id.eq(mc.wr_id), s6_rd.msg.eq(mc.msg),
                     s6_rd.kind.eq(mc.kind[:2]), s6_rd.err.eq(mc.err)]
        for i in range(n_slots):
            m.d.sync += [s6_rec[i].kind.eq(order[i].kind[:2]), s6_rec[i].err.eq(order[i].err),
                         s6_rec[i].msg_len.eq(order[i].msg_len),
                         s6_rec[i].imm.eq(order[i].imm), s6_rec[i].wr_id.eq(order[i].wr_id),
                         s6_rec[i].msg.eq(m_next_plus[i])]
        cqe_items = []
        for i, rec in enumerate(s6_rec):
            item = Signal(lay.cqe, name=f"s6_cqe{i}")
            m.d.comb += [item.conn.eq(s6_conn), item.stream.eq(s6_stream), item.msg.eq(rec.msg),
                         item.opcode.eq(Mux(rec.kind[1], WC_RECV, WC_RECV_RDMA_WITH_IMM)),
                         item.length.eq(rec.msg_len), item.imm.eq(rec.imm), item.with_imm.eq(rec.kind[0]),
                         item.wr_id.eq(Mux(rec.kind[1], rec.wr_id, 0))]
            cqe_items.append(item)
        bundle = _bundle(m, lay.cqe_bundle, s6_rec_ok, cqe_items)
        # MR-RX-131: the response items of the READ requests the delivery executed: the slot's
        # host address (none when refused) and length, the stream's message number
        rsp_items = []
        for i, rec in enumerate(s6_rec):
            item = Signal(lay.rsp, name=f"s6_rsp{i}")
            m.d.comb += [item.conn.eq(s6_conn), item.stream.eq(s6_stream), item.msg.eq(rec.msg),
                         item.laddr.eq(Mux(rec.err, 0, rec.wr_id)), item.length.eq(rec.imm), item.err.eq(rec.err)]
            rsp_items.append(item)
        m.d.comb += [rsp_q.w_en.eq(s6_rsp), rsp_q.w_data.eq(_bundle(m, lay.rsp_bundle, s6_rsp_ok, rsp_items))]
        # MR-RX-155: the execution items of the atomics the delivery reached: the 8 bytes' host
        # address (none when refused), compare-and-swap or fetch-and-add, the refusal
        atom_items = []
        for i, rec in enumerate(s6_rec):
            item = Signal(lay.atom_entry, name=f"s6_atom{i}")
            m.d.comb += [item.conn.eq(s6_conn), item.stream.eq(s6_stream), item.msg.eq(rec.msg),
                         item.laddr.eq(Mux(rec.err, 0, rec.wr_id)), item.cas.eq(rec.kind[0]), item.err.eq(rec.err)]
            atom_items.append(item)
        atom_w = Signal(lay.atom_bundle)
        m.d.comb += [atom_w.eq(_bundle(m, lay.atom_bundle, s6_atom_ok, atom_items)), atom_q.w_en.eq(s6_atom),
                     atom_q.w_data.eq(atom_w)]
        # MR-RX-159/160: the request's opcode (RD_OP_WC) and length, REM_ACCESS_ERR for an ERROR;
        # MR-RX-259: in entry 0 with only that entry marked, the other entries the delivery's
        # (not shown), so only entry 0 and `ok` take a select
        rd_cqe = Signal(lay.cqe)
        m.d.comb += [rd_cqe.conn.eq(s6_conn), rd_cqe.stream.eq(s6_stream), rd_cqe.msg.eq(s6_rd.msg),
                     rd_cqe.opcode.eq(Array([Const(w, 8) for w in RD_OP_WC])[s6_rd.kind]),
                     rd_cqe.status.eq(Mux(s6_rd.err, WC_REM_ACCESS_ERR, 0)),
                     rd_cqe.length.eq(s6_rd.msg_len), rd_cqe.wr_id.eq(s6_rd.wr_id)]
        cqe_w = Signal(lay.cqe_bundle)
        m.d.comb += [cqe_w.eq(bundle), cqe_q.w_en.eq(s6_cqe), cqe_q.w_data.eq(cqe_w)]
        with m.If(s6_read):
            m.d.comb += [cqe_w.ok.eq(1), cqe_w.cqes[0].eq(rd_cqe)]
        _bundle_out(m, "cqe", lay.cqe_bundle, cqe_q, self.m_cqe, n_slots)
        _bundle_out(m, "rsp", lay.rsp_bundle, rsp_q, self.m_rsp, n_slots)
        # -- MR-RX-163..166: the atomics' operands and m_atom's output stage
        opd_rd, opd_wr, opd_data = table("opd", 128, lay.conns << (sb + slot_bits))
        cap_in, cap_out = Signal(CAP_COUNT_BITS), Signal(CAP_COUNT_BITS)
        aq_in, aq_read = Signal(CAP_COUNT_BITS), Signal(CAP_COUNT_BITS)
        # an accepted new atomic (kind 5 or 6) captures its payload into its slot's row
        mc_atom = mc.kind[2] & mc.kind[:2].any()
        s5_cap = Signal()
        m.d.comb += s5_cap.eq(m_step & m_new & mc_atom)
        steer_w = Signal(steer_entry)
        m.d.comb += [steer_w.keep.eq(s5_steer), steer_w.cap.eq(s5_cap),
                     steer_w.row.eq(Cat(mc.msg[:slot_bits], mc.stream[:sb], mc.conn)),
                     steer_w.mark.eq(aq_in + s6_atom), steer_q.w_data.eq(steer_w)]
        m.d.sync += [cap_in.eq(cap_in + (steer_q.w_en & s5_cap)), aq_in.eq(aq_in + s6_atom),
                     s6_mark.eq(cap_in + s5_cap)]
        # MR-RX-175: the placement commands pushed (S5); a bundle's pmark is the count after its
        # delivering record's S5, that record's own placement included, registered into S6
        place_in, s6_pmark = Signal(PLACE_MARK_BITS), Signal(PLACE_MARK_BITS)
        m.d.sync += [place_in.eq(place_in + place_q.w_en), s6_pmark.eq(place_in + place_q.w_en)]
        m.d.comb += [atom_w.mark.eq(s6_mark), atom_w.pmark.eq(s6_pmark)]
        # the output register: the head bundle's items one by one once its captures are done,
        # each loaded with its operand row's read
        a_head = data.View(lay.atom_bundle, atom_q.r_data)
        a_sel = Signal(range(n_slots), name="atom_sel")
        a_entry = Signal(lay.atom_entry)
        a_at, a_last = _first_ok(m, "atom", a_head.ok, a_sel, n_slots)
        m.d.comb += a_entry.eq(_pick([a_head.atoms[i].as_value() for i in range(n_slots)], a_at))
        a_load = Signal()
        ao_valid, ao_entry = Signal(), Signal(lay.atom_entry)
        ao_pmark = Signal(PLACE_MARK_BITS)      # MR-RX-175: the shown item's placement mark
        m.d.comb += [a_load.eq(atom_q.r_rdy & ~(cap_out - a_head.mark)[CAP_COUNT_BITS - 1]
                               & (~ao_valid | self.m_atom.ready)),
                     opd_rd.addr.eq(Cat(a_entry.msg[:slot_bits], a_entry.stream[:sb], a_entry.conn)),
                     opd_rd.en.eq(a_load), atom_q.r_en.eq(a_load & a_last)]
        with m.If(a_load):
            m.d.sync += [ao_valid.eq(1), ao_entry.eq(a_entry), ao_pmark.eq(a_head.pmark),
                         a_sel.eq(Mux(a_last, 0, a_at + 1))]
        with m.Elif(self.m_atom.ready):
            m.d.sync += ao_valid.eq(0)
        m.d.sync += aq_read.eq(aq_read + (a_load & a_last))

        def big_endian(word):
            return Cat(*[word[8 * (7 - i):8 * (8 - i)] for i in range(8)])
        m.d.comb += [self.m_atom.valid.eq(ao_valid),
                     self.m_atom.payload.eq(Cat(ao_entry, big_endian(opd_data[:64]), big_endian(opd_data[64:]),
                                                ao_pmark))]

        # -- outputs
        m.d.comb += [
            self.m_ack.valid.eq(ack_q.r_rdy), self.m_ack.payload.eq(ack_q.r_data),
            ack_q.r_en.eq(self.m_ack.ready),
            self.m_place.valid.eq(place_q.r_rdy), self.m_place.payload.eq(place_q.r_data),
            place_q.r_en.eq(self.m_place.ready),
        ]
        # payload steering (MR-RX-033): each payload packet's beats go out or are dropped, or
        # (MR-RX-163) an atomic's are captured once the items before it have read their operands
        have = steer_q.r_rdy
        hd = data.View(steer_entry, steer_q.r_data)
        pay = self.s_payload
        cap_ok = ~(aq_read - hd.mark)[CAP_COUNT_BITS - 1]
        m.d.comb += [
            pay.ready.eq(have & Mux(hd.cap, cap_ok, ~hd.keep | self.m_data.ready)),
            self.m_data.valid.eq(have & hd.keep & pay.valid),
            self.m_data.payload.eq(pay.payload),
            steer_q.r_en.eq(pay.valid & pay.ready & pay.payload.last),
        ]
        cap_acc, cap_beat = Signal(128), Signal()
        masked = Signal(self.width)
        m.d.comb += masked.eq(pay.payload.data & Cat(*[k.replicate(8) for k in pay.payload.keep]))
        cap_new = Signal(128)
        if self.width == 64:
            m.d.comb += cap_new.eq(Mux(cap_beat, Cat(cap_acc[:64], masked), Cat(masked, Const(0, 64))))
        else:
            m.d.comb += cap_new.eq(Mux(cap_beat, cap_acc, masked[:128]))
        cap_take = pay.valid & pay.ready & hd.cap
        with m.If(cap_take):
            m.d.sync += [cap_acc.eq(cap_new), cap_beat.eq(~pay.payload.last)]
        m.d.comb += [opd_wr.en.eq(cap_take & pay.payload.last), opd_wr.addr.eq(hd.row), opd_wr.data.eq(cap_new)]
        m.d.sync += cap_out.eq(cap_out + (cap_take & pay.payload.last))

        # MR-RX-047: no 64-bit carry chain in a counter. A +1 counter counts in 16-bit pieces,
        # a piece counting when every lower piece is all ones (registered flags); a counter with
        # a wide increment adds it into its low piece and hands that add's carry to its upper
        # pieces (a +1 counter) in the next cycle; its read-out adds a carry still pending.
        # MR-RX-300: the outcomes 0..15 (one a record, S5) in one LUT RAM (MR-HW-100), 8-bit pieces;
        # MR-RX-306: the others count beside an outcome, or add wide increments: registers
        bank = counter_ram(m, push & s5_bank, s5_code, self.reg_addr[:4], BANK_ROWS, COUNTER_BITS, piece=8)
        values = [None] * N_COUNTERS
        values[BANK_ROWS] = _piece_counter(m, f"ctr{BANK_ROWS}", COUNTER_BITS, push & s5_slots)[0]
        for i, inc in ((CTR_ACKS, s5_ack), (CTR_NAKS, s5_nak), (CTR_CE, s5_ce)):
            values[i] = _piece_counter(m, f"ctr{i}", COUNTER_BITS, push & inc)[0]
        for i, inc in ((CTR_ABANDONED, s5_abandoned), (CTR_PLACED_BYTES, s5_placed)):
            values[i] = _wide_inc_counter(m, f"ctr{i}", COUNTER_BITS, Mux(push, inc, 0), chain=chain)
        # MR-RX-083: the message stage's counters
        values[CTR_CQES] = _wide_inc_counter(m, f"ctr{CTR_CQES}", COUNTER_BITS,
                                             Mux(m_step & m_new, n_rec, Mux(r_cqe, 1, 0)), chain=chain)
        values[CTR_DUP_CHUNKS] = _piece_counter(m, f"ctr{CTR_DUP_CHUNKS}", COUNTER_BITS,
                                                (m_step & m_dup) | (r_step & ~r_new))[0]
        # MR-RX-167/168: the chunks the message table refused, NAKed in S4 (none reaches S5 accepted)
        values[CTR_MSG_REFUSED] = _piece_counter(m, f"ctr{CTR_MSG_REFUSED}", COUNTER_BITS,
                                                 push & s5_sv_nak if self.slot_nak else m_step & m_refused)[0]
        # one flat select by the address (the bank's read at 0..15, the registers at 16..24):
        # a 2:1 mux after a select of the registers took one LUT level more into reg_data
        with m.Switch(self.reg_addr):
            with m.Case(*range(BANK_ROWS)):
                m.d.sync += self.reg_data.eq(bank)
            for i in range(BANK_ROWS, N_COUNTERS):
                with m.Case(i):
                    m.d.sync += self.reg_data.eq(values[i])
            with m.Default():
                m.d.sync += self.reg_data.eq(0)
        return m


def rx_256x4(width=512):
    """The small instance (MR-RX-001, ``models.rx.SMALL``): 256 connections x 4 paths, 256
    keys, 4 streams per connection."""
    return Rx(width, **SMALL)


def rx_256x4_rsc(width=512):
    """The small instance with responder resources (MR-RX-188, ``max_rd_atomic`` 1), for its
    Verilator lockstep (``tb.rx.rx_resources``) and measurement (docs/hw/rx-results.md, slot26)."""
    return Rx(width, **SMALL, max_rd_atomic=1)


def rx_256x4_no_slot_nak(width=512):
    """The small instance without MR-RX-167's message-slot verdict (``slot_nak`` off, the
    default before MR-RX-183), for its resource and depth measurement beside :func:`rx_256x4`
    (docs/hw/rx-results.md, slot26)."""
    return Rx(width, **SMALL, slot_nak=False)
