"""ICRC checker pieces for the RX parser (MR-HW-040..043).

The parser checks the RoCEv2 ICRC with ``amaranth.lib.crc`` configured as a reflected
CRC-32 (polynomial 0x04C11DB7) with initial value 0 and no output XOR, fed whole beats:

* bytes before ``l3 - 4`` are fed as zeros (a zero register stays zero), the four bytes
  right before L3 as 0xFF: with init 0 this equals the standard seed of eight bytes of ones;
* the variant fields are fed as ones (:func:`metaroce.models.icrc.mask_variant_fields`);
* the received ICRC bytes are fed too, every byte at or after the end of the IP packet
  (``l4_end``) in the beat holding it is fed as zero, and no later beat is fed;
* the frame is good iff the register equals ``RESIDUE[n]``, ``n`` being the number of such
  zeroed tail bytes in the last fed beat.

At 256 and 512 bits the checker feeds per-lane constants instead (:func:`lane_fill`,
MR-HW-044), which leave the same register; the tail bytes then carry the fill, and
``residue_table(B, tail_fill(B))`` gives the matching table.

:func:`residue_table` derives the table from :mod:`metaroce.models.icrc` (the one software
definition of the ICRC) at elaboration time.
"""
from functools import lru_cache

from amaranth.hdl import Cat, Const, Module, Mux, Signal, signed
from amaranth.lib import crc, data, stream, wiring
from amaranth.lib.wiring import In, Out

from ..models import icrc as icrc_model

__all__ = ["ALGORITHM", "raw_crc", "residue_table", "processor", "IcrcProcessor", "matrices",
           "IcrcChecker", "xor_tree", "ones_positions", "forced_positions", "lane_fill",
           "tail_fill"]

#: Reflected CRC-32, init 0, no output XOR: the register the RTL keeps (MR-HW-040).
ALGORITHM = crc.Algorithm(crc_width=32, polynomial=0x04C11DB7, initial_crc=0,
                          reflect_input=True, reflect_output=True, xor_output=0)


def raw_crc(data, init=0):
    """Software value of the RTL register (``Processor.crc``) after feeding ``data`` bytes."""
    import zlib
    return zlib.crc32(bytes(data), init ^ 0xFFFFFFFF) ^ 0xFFFFFFFF


def _good_l3(ipv6):
    # Two different well-formed L3 packets (IP..BTH..payload), ICRC from the software model.
    if ipv6:
        hdr = bytes([0x60, 0x12, 0x34, 0x56, 0, 36, 17, 64]) + bytes(range(32))
    else:
        hdr = bytes([0x45, 0x68, 0, 56, 0, 1, 0x40, 0, 64, 17, 0x12, 0x34]) + bytes(range(8))
    udp = bytes([0xC0, 0x00, 0x12, 0xB7, 0, 36, 0xAB, 0xCD])
    l4 = bytes([0x04, 0x00, 0xFF, 0xFF, 0xC0, 0, 0, 7, 0x80, 0, 0, 42]) + bytes(range(12))
    return hdr + udp + l4


def residue_table(nbytes, fill=None):
    """``RESIDUE[n]`` for n in ``range(nbytes)`` (MR-HW-042).

    ``RESIDUE[0]`` is the register after a good frame fed as described in the module
    docstring; ``RESIDUE[n]`` is that value advanced by the n tail bytes: zeros, or with
    ``fill`` (one constant per lane, :func:`lane_fill`) lanes ``nbytes - n ..`` of it.
    Computed from :func:`metaroce.models.icrc.icrc_bytes` on two reference packets, which
    must agree.
    """
    fill = bytes(nbytes) if fill is None else bytes(fill)
    table = None
    for ipv6 in (False, True):
        l3 = _good_l3(ipv6)
        fed = b"\xff" * 4 + icrc_model.mask_variant_fields(l3) + icrc_model.icrc_bytes(l3)
        t = [raw_crc(fed + fill[nbytes - n:]) for n in range(nbytes)]
        if table is not None and t != table:
            raise AssertionError("ICRC residue depends on the packet: the masking is wrong")
        table = t
    return table


def processor(width):
    """A ``lib.crc`` processor of :data:`ALGORITHM` over ``width``-bit beats (byte 0 in LSBs)."""
    return ALGORITHM(data_width=width).create()


def _reflect(v, n):
    return int(f"{v:0{n}b}"[::-1], 2)


def matrices(width):
    """(F, G): column lists of the CRC update ``crc' = F*crc ^ G*data`` of :data:`ALGORITHM`
    over ``width``-bit words, derived from ``lib.crc``'s software model (``Parameters.compute``).
    ``crc`` is the value of ``Processor.crc`` (the reflected register)."""
    zero = ALGORITHM(data_width=width)
    f = []
    for i in range(32):
        alg = crc.Algorithm(crc_width=32, polynomial=ALGORITHM.polynomial,
                            initial_crc=_reflect(1 << i, 32), reflect_input=True,
                            reflect_output=True, xor_output=0)
        f.append(alg(data_width=width).compute([0]))
    g = [zero.compute([1 << j]) for j in range(width)]
    return f, g


def xor_tree(bits, arity=6):
    """XOR of ``bits`` as a tree of ``arity``-input XORs: each node one 6-input LUT, so
    ``ceil(log6(n))`` levels and about ``n / 5`` LUTs (a binary tree maps to 4-input cuts)."""
    bits = list(bits)
    if not bits:
        return Const(0, 1)
    while len(bits) > 1:
        bits = [Cat(*bits[i:i + arity]).xor() for i in range(0, len(bits), arity)]
    return bits[0]


class IcrcProcessor(wiring.Component):
    """Drop-in for ``ALGORITHM(data_width=width).create()`` (same ``start``, ``data``,
    ``valid``, ``crc``), each register bit an XOR tree (:func:`xor_tree`) over the rows of
    :func:`matrices`, which come from ``lib.crc``'s own software model (MR-HW-040).

    ``lib.crc.Processor`` chains its XORs one by one: at 512 bits yosys/ABC map that chain
    14 LUTs deep, and the Python simulator recurses through it. The tree is 5 deep at 512
    bits, in fewer LUTs; the default of :class:`~metaroce.hdl.parser.Parser`.

    ===== ===== ==========================================================
    port  dir   meaning
    ===== ===== ==========================================================
    start in    restart from 0 (the beat, if ``valid``, is the first one)
    data  in    ``width`` bits, byte 0 in the least significant bits
    valid in    feed ``data`` this cycle
    crc   out   the register (as ``lib.crc.Processor.crc``)
    ===== ===== ==========================================================
    """

    def __init__(self, width):
        self.width = width
        super().__init__({"start": In(1), "data": In(width), "valid": In(1), "crc": Out(32)})

    def elaborate(self, platform):
        m = Module()
        f, g = matrices(self.width)
        reg = Signal(32)
        m.d.comb += self.crc.eq(reg)
        # MR-HW-105: the register's share is the data's share of its first 32 bits (column i
        # of F is column i of G: the register is XORed into the first bits the CRC takes), so
        # the register goes into those bits once (``start`` feeds a zero register) and each
        # register bit is one XOR tree over ``width`` inputs, not ``width + 32``.
        if any(f[i] != g[i] for i in range(32)):
            raise AssertionError("the CRC register is not the first data bits' share")
        fed = Signal(self.width, name="fed")
        m.d.comb += fed.eq(self.data ^ (reg & ~self.start.replicate(32)))
        nxt = [xor_tree([fed[j] for j in range(self.width) if g[j] >> b & 1]) for b in range(32)]
        with m.If(self.valid):
            m.d.sync += reg.eq(Cat(*nxt))
        with m.Elif(self.start):
            m.d.sync += reg.eq(0)
        return m


# ---------------------------------------------------------------------------------------------
# Masking (MR-HW-040, MR-HW-041)

def ones_positions(vlan, ipv6):
    """[(frame byte position, bit mask)] fed as ones for a frame of this class: the four seed
    bytes before L3 and the variant fields of MR-WIRE-092."""
    l3 = 14 + 4 * vlan
    out = [(p, 0xFF) for p in range(l3 - 4, l3)]
    if ipv6:
        out.append((l3, 0x0F))
        out += [(l3 + o, 0xFF) for o in (1, 2, 3, 7)]
        l4 = l3 + 40
    else:
        out += [(l3 + o, 0xFF) for o in (1, 8, 10, 11)]
        l4 = l3 + 20
    out += [(l4 + o, 0xFF) for o in (6, 7, 8 + 4)]
    return out


def _solve(cols, target, nbits=32):
    """x such that the XOR of ``cols[j]`` for the set bits j of x is ``target`` (GF(2)
    elimination on ``nbits``-bit columns); ValueError when there is none."""
    basis = {}                  # leading bit -> (vector, combination of columns)
    for j, v in enumerate(cols):
        comb = 1 << j
        for bit in reversed(range(nbits)):
            if not v >> bit & 1:
                continue
            if bit in basis:
                bv, bc = basis[bit]
                v, comb = v ^ bv, comb ^ bc
            else:
                basis[bit] = (v, comb)
                break
    x, t = 0, target
    for bit in reversed(range(nbits)):
        if t >> bit & 1:
            if bit not in basis:
                raise ValueError("no solution")
            bv, bc = basis[bit]
            t, x = t ^ bv, x ^ bc
    return x


CLASSES = [(vl, v6) for vl in (0, 1) for v6 in (0, 1)]


def forced_positions(vlan, ipv6):
    """{frame position: byte the standard feed (MR-HW-040) has there in every good frame} for
    the bytes it does not take from the frame: zeros before ``l3 - 4``, the seed, the variant
    fields; the IPv6 byte at l3 is 0x6F (version 6, checked before the ICRC counts, and the
    traffic-class nibble fed as ones)."""
    l3 = 14 + 4 * vlan
    out = {p: 0 for p in range(l3 - 4)}
    for p, mask in ones_positions(vlan, ipv6):
        out[p] = 0x60 | mask if mask == 0x0F else mask
    return out


def _contrib(p, v, length=128):
    # Register contribution of byte value v at frame position p, at a reference length: every
    # contribution is "advance by the bytes after it" of a constant, so an identity between
    # sums of them at one length holds at every length.
    return raw_crc(bytes(p) + bytes([v]) + bytes(length - p - 1))


@lru_cache(maxsize=None)
def lane_fill(nbytes):
    """Per-lane byte constants ``F`` for beats of ``nbytes`` >= 32 (MR-HW-044), as bytes.

    The checker loads lane L of its register with ``F[L]`` (flip-flop set/reset pins, no logic
    per bit) wherever :func:`forced_positions` of the frame's class has a byte, and in the tail
    (at or after ``l4_end``). ``F`` solves, over GF(2), "for every class the forced lanes add to
    the register exactly what the standard feed's bytes there add"; the tail fill is absorbed
    by :func:`residue_table`. Checked here on reference frames of every class."""
    B = nbytes
    lanes = sorted({p % B for c in CLASSES for p in forced_positions(*c)})
    # Columns: unknown bit (lane, i) -> its 128-bit effect (32 bits per class).
    cols, target = [], 0
    for ci, c in enumerate(CLASSES):
        for p, s in forced_positions(*c).items():
            target ^= _contrib(p, s) << (32 * ci)
    for lane in lanes:
        for i in range(8):
            v = 0
            for ci, c in enumerate(CLASSES):
                for p in forced_positions(*c):
                    if p % B == lane:
                        v ^= _contrib(p, 1 << i) << (32 * ci)
            cols.append(v)
    try:
        x = _solve(cols, target, 32 * len(CLASSES))
    except ValueError:
        raise ValueError(f"no lane fill for {B}-byte beats") from None
    fill = bytearray(B)
    for j in range(len(cols)):
        if x >> j & 1:
            lane, i = lanes[j // 8], j % 8
            fill[lane] |= 1 << i
    fill = bytes(fill)
    # Reference frames: the hardware feed (forced lanes get F, the rest the frame) leaves the
    # same register as the standard feed, for every class and several lengths.
    for vl, v6 in CLASSES:
        l3 = _good_l3(v6)
        full = l3 + icrc_model.icrc_bytes(l3)
        eth = bytes(range(12)) + (bytes([0x81, 0, 0x20, 0x05]) if vl else b"")
        frame = eth + (b"\x86\xdd" if v6 else b"\x08\x00") + full
        hdr = len(eth) + 2
        std = bytes(hdr - 4) + b"\xff" * 4 + icrc_model.mask_variant_fields(full[:-4]) + full[-4:]
        forced = forced_positions(vl, v6)
        hw = bytes(fill[p % B] if p in forced else frame[p] for p in range(len(frame)))
        for n in range(0, 3 * B, 7):
            if raw_crc(hw + bytes(n)) != raw_crc(std + bytes(n)):
                raise AssertionError("lane fill does not reproduce the ICRC feed")
    return fill



def beat_layout(width, kbits):
    """One beat for :class:`IcrcChecker` with its frame's class and IP packet end."""
    return data.StructLayout({"data": width, "k": kbits, "vlan": 1, "ipv6": 1, "known": 1,
                              "l4_end": signed(19), "tail": 1, "before_end": 1})


class IcrcChecker(wiring.Component):
    """The ICRC datapath of the parser (MR-HW-040..044): masks a beat into the register
    ``cin`` and feeds it to the CRC processor in the next cycle.

    ===== ===== ===========================================================================
    port  dir   meaning
    ===== ===== ===========================================================================
    i     in    stream of :func:`beat_layout` (always ready): ``data``, ``k`` (its beat
                index), ``vlan``, ``ipv6`` (frame class), ``known`` (IP length field
                received), ``l4_end`` (signed), ``tail``, ``before_end`` (:meth:`beat_facts`)
    crc   out   the processor's register: a beat taken at cycle t is in ``cin`` at t+1 and
                in ``crc`` at t+2
    ===== ===== ===========================================================================

    ``impl="lib"`` uses ``amaranth.lib.crc.Processor``; ``impl="xor"`` the same function as
    flat XOR reductions (:class:`IcrcProcessor`), which the Python simulator runs much faster.

    At 32 bytes per beat and more (256/512 bits) the class and the IP length are known in beat
    0, so no byte is masked in place: each lane of ``cin`` is loaded with the constant
    :func:`lane_fill` (flip-flop set/reset pins, no logic per bit) at the positions
    :func:`forced_positions` names for the frame's class and in the tail; the register ends
    where MR-HW-040's feed leaves it, the tail fill being in :func:`tail_fill` (MR-HW-044).
    Narrower beats zero and OR the ones in place.
    """

    def __init__(self, width, impl="xor", kbits=16):
        if impl not in ("lib", "xor"):
            self._MustUse__silence = True
            raise ValueError(f"impl must be 'lib' or 'xor', not {impl!r}")
        self.width = width
        self.impl = impl
        super().__init__({"i": In(stream.Signature(beat_layout(width, kbits), always_ready=True)),
                          "crc": Out(32)})
        # The fields of ``i`` by name (``before_end``: k * B < l4_end; ``tail``: this beat
        # holds l4_end; both precomputed a stage earlier by the caller, for timing). The
        # parser never stalls, so ``en`` (the pipeline advances) is 1.
        beat = self.i.payload
        self.en = Const(1, 1)
        self.valid = self.i.valid
        self.data, self.k, self.vlan, self.ipv6 = beat.data, beat.k, beat.vlan, beat.ipv6
        self.known, self.l4_end, self.tail, self.before_end = (beat.known, beat.l4_end, beat.tail,
                                                               beat.before_end)

    @staticmethod
    def beat_facts(width, k, l4_end):
        """``(tail, before_end)`` of a beat with index ``k`` in a frame whose IP packet ends
        at ``l4_end``: the values the checker's ``tail`` and ``before_end`` take."""
        lane_bits = (width // 8).bit_length() - 1
        l4e = l4_end[:16]
        if width >= 256:
            tail = k == l4e[lane_bits:lane_bits + len(k)]
        else:
            tail = k == l4e[lane_bits:]
        return tail, (k * (width // 8)) < l4_end

    def elaborate(self, platform):
        if self.width >= 256:
            return self._elaborate_forced()
        m = Module()
        W, B = self.width, self.width // 8
        LB = B.bit_length() - 1
        proc = processor(W) if self.impl == "lib" else IcrcProcessor(W)
        m.submodules.proc = proc
        l4e = self.l4_end[:16]
        tail_lane = l4e[:LB]
        feed = ~self.known | self.before_end
        at = self._beat_strobes(m)

        # Lanes at or after l4_end in its beat: lane >= tail_lane, split as lane = 8 * hi + lo
        # so each lane needs one 3-input term (MR-HW-040).
        tail_now = Signal()
        m.d.comb += tail_now.eq(self.en & self.known & self.tail)
        t_lo, t_hi = tail_lane[:3], tail_lane[3:]
        n_hi = max(1, B // 8)
        hi_gt = [Signal(name=f"tail_hi_gt{h}") for h in range(n_hi)]
        hi_eq = [Signal(name=f"tail_hi_eq{h}") for h in range(n_hi)]
        lo_ge = [Signal(name=f"tail_lo_ge{lo}") for lo in range(8)]
        for h in range(n_hi):
            m.d.comb += [hi_gt[h].eq(tail_now & (h > t_hi)), hi_eq[h].eq(tail_now & (t_hi == h))]
        for lo in range(8):
            m.d.comb += lo_ge[lo].eq(lo >= t_lo)

        ones = {}                       # position -> [(cond, mask)]
        for vl in (0, 1):
            for v6 in (0, 1):
                cond = (self.vlan == vl) & (self.ipv6 == v6)
                for p, mask in ones_positions(vl, v6):
                    ones.setdefault(p, []).append((cond, mask))

        cin = Signal(W, reset_less=True)
        cin_valid = Signal()
        cin_start = Signal()
        with m.If(self.en):
            m.d.sync += [cin_valid.eq(self.valid & feed), cin_start.eq(self.valid & at(0))]
        for lane in range(B):
            byte = self.data.word_select(lane, 8)
            # Zero: bytes before l3 - 4 (in beat 0 or 1), and at or after l4_end in its beat.
            zero = Const(0, 1)
            for beat in range((18 + B - 1) // B):
                p = beat * B + lane
                if p < 10:
                    zero = zero | at(beat)
                elif 10 <= p < 14:
                    zero = zero | (at(beat) & self.vlan)
            zero = zero | hi_gt[lane // 8] | (hi_eq[lane // 8] & lo_ge[lane % 8])
            hits = [(p, cond, mask) for p, conds in ones.items() if p % B == lane
                    for cond, mask in conds]
            dst = cin.word_select(lane, 8)
            o = Const(0, 8)
            for p, cond, mask in hits:
                o = o | Mux(at(p // B) & cond, mask, 0)
            with m.If(self.en):
                m.d.sync += dst.eq(Mux(zero, 0, byte | o))
        m.d.comb += [proc.data.eq(cin), proc.valid.eq(self.en & cin_valid),
                     proc.start.eq(self.en & cin_start), self.crc.eq(proc.crc)]
        return m

    def _beat_strobes(self, m):
        """``at(beat)``: a signal "this cycle loads beat ``beat``", made once per beat. Every
        zero/constant term carries ``en``, so a stalled cycle never touches the held beat."""
        strobes = {}

        def at(beat):
            if beat not in strobes:
                strobes[beat] = Signal(name=f"at_beat{beat}")
                m.d.comb += strobes[beat].eq(self.en & (self.k == beat))
            return strobes[beat]
        return at

    def _elaborate_forced(self):
        # MR-HW-044: 256/512 bits. The class is known in beat 0 and the IP length too (so
        # ``known`` is always 1 here), so each lane of ``cin`` needs one load-constant
        # condition: forced position of the frame's class, or tail.
        m = Module()
        W, B = self.width, self.width // 8
        LB = B.bit_length() - 1
        k = self.k
        proc = processor(W) if self.impl == "lib" else IcrcProcessor(W)
        m.submodules.proc = proc
        fill = lane_fill(B)
        l4e = self.l4_end[:16]
        # Good frames end within the frame store, so the tail beat fits in ``k``.
        tail_lane = l4e[:LB]
        is_tail = Signal()
        m.d.comb += is_tail.eq(self.tail)
        # feed == (k * B < l4_end) for every frame whose ICRC counts (l4_end > 0 and fixed by
        # beat 0): beats before the tail beat, the tail beat unless it starts at l4_end, none
        # after it (``past``: the tail beat of this frame went by).
        past = Signal()
        feed = ((k == 0) | ~past) & ~(is_tail & (tail_lane == 0))
        with m.If(self.en & self.valid):
            m.d.sync += past.eq(is_tail | (past & (k != 0)))
        at = self._beat_strobes(m)

        tail_now = Signal()
        m.d.comb += tail_now.eq(self.en & is_tail)
        t_lo = tail_lane[:3]
        # The high part of the tail lane, or 8 (past every lane) when this is not the tail beat:
        # each lane's condition then reads 4 bits, one lo_ge bit and its forcing net.
        t_hi = Signal(4, name="tail_hi")
        m.d.comb += t_hi.eq(Mux(tail_now, tail_lane[3:], 8))
        lo_ge = [Signal(name=f"tail_lo_ge{lo}") for lo in range(8)]
        for lo in range(8):
            m.d.comb += lo_ge[lo].eq(lo >= t_lo)

        forced = {c: forced_positions(*c) for c in CLASSES}
        cls = {c: (self.vlan == c[0]) & (self.ipv6 == c[1]) for c in CLASSES}
        cin = Signal(W, reset_less=True)
        cin_valid = Signal()
        cin_start = Signal()
        with m.If(self.en):
            m.d.sync += [cin_valid.eq(self.valid & feed), cin_start.eq(self.valid & at(0))]
        nbeats = (max(p for f in forced.values() for p in f) + B) // B
        patterns = {}                   # which classes force the lane, per beat -> shared net
        for lane in range(B):
            hi, lo = divmod(lane, 8)
            # Tail: lane >= tail_lane, i.e. hi > t_hi, or hi == t_hi and lo >= t_lo.
            load = (t_hi < hi) | ((t_hi == hi) & lo_ge[lo])
            pat = tuple(tuple(c for c in CLASSES if beat * B + lane in forced[c])
                        for beat in range(nbeats))
            if any(pat):
                if pat not in patterns:
                    hdr = Const(0, 1)
                    for beat, members in enumerate(pat):
                        if len(members) == len(CLASSES):
                            hdr = hdr | at(beat)
                        elif members:
                            cond = cls[members[0]]
                            for c in members[1:]:
                                cond = cond | cls[c]
                            hdr = hdr | (at(beat) & cond)
                    patterns[pat] = Signal(name=f"force{len(patterns)}")
                    m.d.comb += patterns[pat].eq(hdr)
                load = load | patterns[pat]
            ld = Signal(name=f"load_l{lane}")
            m.d.comb += ld.eq(load)
            dst = cin.word_select(lane, 8)
            with m.If(ld):
                m.d.sync += dst.eq(fill[lane])
            with m.Elif(self.en):
                m.d.sync += dst.eq(self.data.word_select(lane, 8))
        m.d.comb += [proc.data.eq(cin), proc.valid.eq(self.en & cin_valid),
                     proc.start.eq(self.en & cin_start), self.crc.eq(proc.crc)]
        return m


def tail_fill(nbytes):
    """What the checker loads into the tail lanes of a beat of ``nbytes``: zeros below 32
    bytes, :func:`lane_fill` from 32 on (argument ``fill`` of :func:`residue_table`)."""
    return lane_fill(nbytes) if nbytes >= 32 else bytes(nbytes)
