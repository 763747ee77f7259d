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

:func:`residue_table` derives the table from :mod:`metaroce.models.icrc` (the one software
definition of the ICRC) at elaboration time.
"""
from amaranth.hdl import Cat, Const, Elaboratable, Module, Mux, Signal, signed
from amaranth.lib import crc

from ..models import icrc as icrc_model

__all__ = ["ALGORITHM", "raw_crc", "residue_table", "processor", "IcrcProcessor", "matrices",
           "IcrcChecker", "ones_positions", "seed_injection"]

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


def residue_table(nbytes):
    """``RESIDUE[n]`` for n in ``range(nbytes)`` (MR-HW-042).

    ``RESIDUE[0]`` is the register after a good frame fed as described in the module
    docstring; ``RESIDUE[n]`` is that value advanced by n zero bytes. Computed from
    :func:`metaroce.models.icrc.icrc_bytes` on two reference packets, which must agree.
    """
    table = None
    for ipv6 in (False, True):
        l3 = _good_l3(ipv6)
        fed = b"\xff" * 4 + icrc_model.mask_variant_fields(l3) + icrc_model.icrc_bytes(l3)
        t = [raw_crc(fed + bytes(n)) for n in range(nbytes)]
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


class IcrcProcessor(Elaboratable):
    """Drop-in for ``ALGORITHM(data_width=width).create()`` (same ``start``, ``data``,
    ``valid``, ``crc``), each register bit one XOR reduction of the rows of :func:`matrices`.

    ``lib.crc.Processor`` chains its XORs one by one; the Python simulator recurses through
    the chain at 512 bits and yosys/ABC map a flat reduction into fewer LUTs (MR-HW-040).
    """

    def __init__(self, width):
        self.width = width
        self.start = Signal()
        self.data = Signal(width)
        self.valid = Signal()
        self.crc = Signal(32)

    def elaborate(self, platform):
        m = Module()
        f, g = matrices(self.width)
        reg = Signal(32)
        src = Signal(32)
        m.d.comb += [src.eq(Mux(self.start, 0, reg)), self.crc.eq(reg)]
        nxt = []
        for b in range(32):
            terms = [src[i] for i in range(32) if f[i] >> b & 1]
            terms += [self.data[j] for j in range(self.width) if g[j] >> b & 1]
            nxt.append(Cat(*terms).xor())
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


def _solve(cols, target):
    """x with XOR of cols[i] for set bits i == target (cols: 32 independent 32-bit ints)."""
    rows = [(c, 1 << i) for i, c in enumerate(cols)]
    basis = {}
    for v, comb in rows:
        for bit in reversed(range(32)):
            if not v >> bit & 1:
                continue
            if bit in basis:
                bv, bc = basis[bit]
                v, comb = v ^ bv, comb ^ bc
            else:
                basis[bit] = (v, comb)
                break
    x = 0
    for bit in reversed(range(32)):
        if target >> bit & 1:
            if bit not in basis:
                raise ValueError("singular")
            bv, bc = basis[bit]
            target ^= bv
            x ^= bc
    assert target == 0
    return x


def seed_injection(vlan, ipv6, length=128):
    """The 4 bytes (little-endian int) that, fed at frame positions 0..3 instead of zeros, add
    to the register exactly what the ones of :func:`ones_positions` add (MR-HW-044).

    The CRC register is linear in the fed bytes, and both contributions are the operator
    "advance by N bytes" applied to a constant, so one injection serves every frame length.
    """
    ones = bytearray(length)
    for p, mask in ones_positions(vlan, ipv6):
        ones[p] |= mask
    target = raw_crc(ones)
    cols = [raw_crc((1 << i).to_bytes(4, "little") + bytes(length - 4)) for i in range(32)]
    return _solve(cols, target)


class IcrcChecker(Elaboratable):
    """The ICRC datapath of the parser (MR-HW-040..044): masks the S1 beat into the register
    ``cin`` and feeds it to the CRC processor in the next cycle.

    Inputs (combinational, in the cycle the beat is in S1): ``en`` (the pipeline advances),
    ``valid`` (a beat is in S1), ``data``, ``k`` (its beat index), ``vlan``, ``ipv6`` (frame
    class from the header buffer), ``known`` (IP length field received), ``l4_end`` (signed).
    Output: ``crc``, the processor's register: a beat in S1 at cycle t is in ``cin`` at t+1
    and in ``crc`` at t+2.

    ``impl="lib"`` uses ``amaranth.lib.crc.Processor``; ``impl="xor"`` the same function as
    flat XOR reductions (:class:`IcrcProcessor`), which the Python simulator runs much faster.

    At 32 bytes per beat and more the class is known in beat 0, so the ones are not fed in
    place: those bytes are fed as zeros (flip-flop resets, no logic per bit) and the four
    always-zero bytes 0..3 of beat 0 carry :func:`seed_injection` instead (MR-HW-044).
    Narrower beats OR the ones in place.
    """

    def __init__(self, width, impl="lib", kbits=16):
        if impl not in ("lib", "xor"):
            self._MustUse__silence = True
            raise ValueError(f"impl must be 'lib' or 'xor', not {impl!r}")
        self.width = width
        self.impl = impl
        self.en = Signal()
        self.valid = Signal()
        self.data = Signal(width)
        self.k = Signal(kbits)
        self.vlan = Signal()
        self.ipv6 = Signal()
        self.known = Signal()
        self.l4_end = Signal(signed(19))
        self.crc = Signal(32)

    def elaborate(self, platform):
        m = Module()
        W, B = self.width, self.width // 8
        LB = B.bit_length() - 1
        k = self.k
        proc = processor(W) if self.impl == "lib" else IcrcProcessor(W)
        m.submodules.proc = proc
        inject = B >= 32
        l4e = self.l4_end[:16]
        tail_lane, tail_beat = l4e[:LB], l4e[LB:]
        feed = ~self.known | ((k * B) < self.l4_end)
        at_beat = {}

        def at(beat):
            # "this cycle loads beat ``beat``": every zero term carries en, so a stalled cycle
            # never resets the held beat.
            if beat not in at_beat:
                at_beat[beat] = Signal(name=f"at_beat{beat}")
                m.d.comb += at_beat[beat].eq(self.en & (k == beat))
            return at_beat[beat]

        # Lanes at or after l4_end in its beat: lane >= tail_lane, split as lane = 8 * hi + lo
        # so each lane needs one 3-input term (MR-HW-040).
        tail_now = Signal()
        m.d.comb += tail_now.eq(self.en & self.known & (k == tail_beat))
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
        inj = {(vl, v6): seed_injection(vl, v6) for vl in (0, 1) for v6 in (0, 1)}

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
                if p < 10 and not (inject and p < 4):
                    zero = zero | at(beat)
                elif 10 <= p < 14:
                    zero = zero | (at(beat) & self.vlan)
            zero = zero | hi_gt[lane // 8] | (hi_eq[lane // 8] & lo_ge[lane % 8])
            hits = [(p, cond, mask) for p, conds in ones.items() if p % B == lane
                    for cond, mask in conds]
            dst = cin.word_select(lane, 8)
            if inject:
                # Ones become zeros, per nibble (the IPv6 version/TC byte masks only its low one).
                for nib in (0, 1):
                    z = zero
                    for p, cond, mask in hits:
                        if mask >> (4 * nib) & 0xF:
                            z = z | (at(p // B) & cond)
                    val = byte[4 * nib:4 * nib + 4]
                    if lane < 4:
                        sel = {key: (v >> (8 * lane + 4 * nib)) & 0xF for key, v in inj.items()}
                        cls = Mux(self.vlan, Mux(self.ipv6, sel[1, 1], sel[1, 0]),
                                  Mux(self.ipv6, sel[0, 1], sel[0, 0]))
                        val = Mux(k == 0, cls, val)
                    zn = Signal(name=f"zero_l{lane}_n{nib}")
                    m.d.comb += zn.eq(z)
                    with m.If(zn):
                        m.d.sync += dst[4 * nib:4 * nib + 4].eq(0)
                    with m.Elif(self.en):
                        m.d.sync += dst[4 * nib:4 * nib + 4].eq(val)
            else:
                o = Const(0, 8)
                for p, cond, mask in hits:
                    o = o | Mux(at(p // B) & cond, mask, 0)
                with m.If(self.en):
                    m.d.sync += dst.eq(Mux(zero, 0, byte | o))
        m.d.comb += [proc.data.eq(cin), proc.valid.eq(self.en & cin_valid),
                     proc.start.eq(self.en & cin_start), self.crc.eq(proc.crc)]
        return m
