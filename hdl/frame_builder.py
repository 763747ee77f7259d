"""TX frame builder: descriptor + payload beats in, Ethernet frames out (docs/spec/hw-tx-frame.md).

``FrameBuilder(width)`` (64, 128, 256 or 512 bits, MR-TXF-001; the TX's ``ipv4_only`` and
``prerotated``, hw-tx.md MR-TX-466 and MR-TX-482: with ``prerotated`` the payload beats come
rotated up by the header length mod the beat, and the merge has no rotator). Ports (MR-TXF-002):

============== ===== =====================================================================
port           dir   meaning
============== ===== =====================================================================
s_desc         in    ``lib.stream`` of :data:`~metaroce.models.frame_builder.DESC_LAYOUT`:
                     the connection's header template and the packet's fields
s_payload      in    ``lib.stream`` of payload beats {data, keep, last}, payload byte 0 in
                     lane 0 of the first beat (as a DMA read engine delivers them)
m_axis         out   AXI4-Stream frames to the MAC (tdata, tkeep, tvalid, tready, tlast,
                     tuser = 0), Ethernet header to ICRC, no FCS
============== ===== =====================================================================

Pipeline (MR-TXF-040..045): the descriptor goes through six stages A..G (lengths, beat
counts and the IPv4 header checksum, one narrow adder per stage), each carrying only the fields
it reads, the whole descriptor in a LUT-RAM ring from A's load to G's (MR-TXF-069/070); the
frame register F packs
G's fields into the header bytes (generated from the header table, MR-TXF-020) with the
frame class's ICRC masks (one keep and one ones bit per nibble); the merge stage M takes header
lanes from F and payload lanes from the payload beat rotated by the header length mod the beat
width, zero-fills pad and tail, and builds the masked copy of the beat; the ICRC processor of
the RX parser (:class:`metaroce.hdl.icrc.IcrcProcessor`) takes that copy; D1 takes the register back over the zero bytes that followed the ICRC
region in its last beat in one step (2 + 4u of them, MR-TXF-031, MR-TXF-066/067), D2 and D3
carry it; D4 inserts the ICRC; the beats go into an output FIFO
while a sum pipeline computes each IPv6 frame's UDP checksum, and an IPv6 frame leaves the FIFO
only once its checksum is known, patched into its header (MR-TXF-060..064; IPv4 frames cut
through); a two-entry skid buffer drives ``m_axis`` from registers.

Golden model: :class:`metaroce.models.frame_builder.FrameBuilderModel`, cycle by cycle.
"""
from amaranth.hdl import Array, Cat, Const, Module, Mux, Signal
from amaranth.lib import data, fifo, memory, stream, wiring
from amaranth.lib.wiring import In, Out

from ..models import wire
from ..models.frame_builder import (DESC_FIELDS, DESC_LAYOUT, DESC_RING, HDR_MAX, HDR_STAGES,
                                    ICRC_STAGES, PAYLOAD_BITS, REC_DEPTH, check_desc_fields, ext_seq,
                                    out_fifo_depth, payload_layout)
from ..models.headers import TABLE as _H
from . import icrc as icrc_hw
from .parser import axis_signature
from .queue import BufferedQueue

__all__ = ["FrameBuilder", "unadvance_matrices", "pack_header", "icrc_start_mod4",
           "DESC_A_FIELDS", "DESC_A_LAYOUT", "ring_fields"]

#: MR-TXF-069: stage A's fields besides the class, those stage B reads (the opcode table, the
#: rounded length and beats, the IPv4 checksum's pairs: the addresses' low 32 bits); (name, bits
#: kept from the descriptor's field).
DESC_A_FIELDS = (("payload_len", PAYLOAD_BITS),
                 ("bth_opcode", 8), ("ip_dscp", 6), ("ip_ecn", 2), ("ip_ttl", 8), ("ip_ident", 16),
                 ("ip_src", 32), ("ip_dst", 32))
DESC_A_LAYOUT = data.StructLayout(dict(DESC_A_FIELDS))
#: MR-TX-466: the fields only the IPv6 or VLAN classes' headers read
_V6_VLAN_ONLY = ("vlan_pcp", "vlan_dei", "vlan_vlan", "ip_flow_label")


def ring_fields(desc_fields=None, ipv4_only=False):
    """MR-TXF-070, MR-TXF-072: the descriptor ring's columns, (name, bits kept from the field):
    the fields in ``desc_fields`` (every field for None) but the class (carried by the
    stages); with ``ipv4_only`` not the fields only IPv6 or VLAN headers read, and of the
    addresses their low 32 bits."""
    names = check_desc_fields(desc_fields)
    out = []
    for n, w in DESC_FIELDS:
        if n in ("vlan_en", "ipv6") or names is not None and n not in names:
            continue
        if ipv4_only and n in _V6_VLAN_ONLY:
            continue
        out.append((n, 32 if ipv4_only and n in ("ip_src", "ip_dst") else w))
    return tuple(out)


# ------------------------------------------------------------------ ICRC arithmetic (MR-TXF-031)

def _apply(cols, v):
    out = 0
    i = 0
    while v:
        if v & 1:
            out ^= cols[i]
        v >>= 1
        i += 1
    return out


def unadvance_matrices(nmax):
    """``[M_0 .. M_{nmax-1}]``: column lists of the GF(2) maps that take the ICRC register
    (:data:`metaroce.hdl.icrc.ALGORITHM`) back over ``t`` zero bytes: ``M_t(reg after data +
    t zeros) == reg after data``. Derived from ``lib.crc``'s software model
    (:func:`metaroce.hdl.icrc.matrices`)."""
    adv, _ = icrc_hw.matrices(8)              # one zero byte: column i = image of bit i
    inv = [icrc_hw._solve(adv, 1 << j) for j in range(32)]     # A x = e_j
    inv = [_apply_cols_combo(adv, x, j) for j, x in enumerate(inv)]
    out = [[1 << i for i in range(32)]]
    for _ in range(1, nmax):
        out.append([_apply(inv, c) for c in out[-1]])
    return out


def _apply_cols_combo(adv, combo, j):
    # _solve returns the combination of columns of A that gives e_j: that combination, as a
    # vector, is column j of A^-1.
    if _apply(adv, combo) != 1 << j:
        raise AssertionError("GF(2) inverse of the CRC advance failed")
    return combo


# ------------------------------------------------------------------ header packing (MR-TXF-020)

def pack_header(name, values):
    """The bytes of header ``name`` in network order, as a list of 8-bit Values, from the
    header table: ``values`` maps a field name to a Value or int; a reserved field or one
    not given is 0."""
    hdr = _H[name]
    bits = []                                 # network order: bits[0] = MSB of byte 0
    for f in hdr.fields:
        v = values.get(f.name, 0)
        if isinstance(v, int):
            v = Const(v, f.width)
        bits += [v[f.width - 1 - i] for i in range(f.width)]
    return [Cat(*reversed(bits[8 * b:8 * b + 8])) for b in range(hdr.length)]


def crc_masks(vlan, ipv6, nbytes):
    """(keep, ones): one bit per nibble of the header bytes (bit 2p: low nibble of byte p) of
    a frame class: the ICRC feed of a header byte is its keep nibbles, then its ones nibbles
    set (MR-TXF-030, MR-WIRE-092): zeros before L3 - 4, ones in the four bytes before L3 and
    in the variant fields (:func:`metaroce.hdl.icrc.ones_positions`)."""
    l3 = wire.ETH_HLEN + wire.VLAN_HLEN * vlan
    keep = ones = 0
    forced = dict(icrc_hw.ones_positions(vlan, ipv6))
    for p in range(nbytes):
        mask = forced.get(p, 0)
        kb = 0 if p < l3 - 4 else 0xFF & ~mask
        for n in range(2):
            if kb >> (4 * n) & 0xF:
                keep |= 1 << (2 * p + n)
            if mask >> (4 * n) & 0xF:
                ones |= 1 << (2 * p + n)
    return keep, ones


def udp6_masks(vlan, ipv6, nbytes):
    """(sum, patch): one bit per header byte of a frame class (MR-TXF-061): the bytes the IPv6
    UDP checksum sums (the payload length, which is the pseudo-header's UDP length, and
    everything from the source address on) and the two checksum bytes it is patched into;
    both 0 for IPv4."""
    if not ipv6:
        return 0, 0
    l3 = wire.ETH_HLEN + wire.VLAN_HLEN * vlan
    ck = sum(1 << p for p in range(nbytes) if p in (l3 + 4, l3 + 5) or p >= l3 + 8)
    at = l3 + wire.IPV6_HLEN + 6
    return ck, (1 << at) | (1 << (at + 1))


SEQS = sorted(set(ext_seq(op) for op in range(256)), key=lambda s: (len(s), s))


def icrc_start_mod4():
    """E mod 4 (E: the ICRC's byte offset in the frame), one value for every frame the builder
    makes (MR-TXF-066): E is L3 + UDP + BTH + the opcode's extension headers + the payload
    rounded up to 4 (the BTH pad), and every one of those but L3 is a multiple of 4 in every
    class and opcode of the header table; checked here over all of them."""
    l3s = {wire.ETH_HLEN + wire.VLAN_HLEN * vl + (wire.IPV6_HLEN if v6 else wire.IPV4_HLEN)
           for vl in (0, 1) for v6 in (0, 1)}
    ends = {(l3 + wire.UDP_HLEN + wire.BTH_LEN + sum(wire.HEADER_LEN[h] for h in seq)) % 4
            for l3 in l3s for seq in SEQS}
    if len(ends) != 1:
        raise AssertionError(f"the ICRC's offset mod 4 depends on the frame: {sorted(ends)}")
    return ends.pop()


#: MR-TXF-066: E mod 4, and the zero lanes after the ICRC region in its last fed beat mod 4
E4 = icrc_start_mod4()
T0 = -E4 % 4


class FrameBuilder(wiring.Component):
    """The TX frame builder (docs/spec/hw-tx-frame.md)."""

    def __init__(self, width=512, *, ipv4_only=False, prerotated=False, desc_fields=None):
        if width not in (64, 128, 256, 512):
            self._MustUse__silence = True   # a rejected design is not an unused one
            raise ValueError(f"width must be 64, 128, 256 or 512, not {width!r}")
        self.width = width
        # MR-TX-466: IPv4 frames without VLAN only (the TX's descriptors are, MR-TX-467)
        self.ipv4_only = bool(ipv4_only)
        # MR-TX-482: payload beats rotated up by the frame's header length mod the beat (the
        # TX's DMA rotates them, MR-TX-480): no rotator here
        self.prerotated = bool(prerotated)
        # MR-TXF-072: the descriptor fields the user drives; every other one taken as 0
        try:
            self.desc_fields = check_desc_fields(desc_fields)
        except ValueError:
            self._MustUse__silence = True
            raise
        super().__init__({
            "s_desc": In(stream.Signature(DESC_LAYOUT)),
            "s_payload": In(stream.Signature(payload_layout(width))),
            "m_axis": Out(axis_signature(width, user=True)),
        })

    def elaborate(self, platform):
        m = Module()
        W = self.width
        NB = W // 8
        LG = NB.bit_length() - 1
        NBEATS_HDR = -(-HDR_MAX // NB)

        # ---------------------------------------------------------------- descriptor pipeline
        # MR-TXF-041: stages A, B, C, D, E, G; stage i loads from i-1 when some stage from i to
        # G is empty (its ready depends on registers only); G empties into the frame register.
        S = HDR_STAGES
        valid = [Signal(name=f"h{i}_valid") for i in range(S)]
        # take[i] = "some stage from i to G is empty", kept as a register computed from the
        # stages' next valid bits: it enables every stage's registers, so it comes straight
        # from a flip-flop rather than through a chain of the valid bits.
        take = [Signal(name=f"h{i}_take", init=1) for i in range(S)]
        valid_next = [Signal(name=f"h{i}_valid_next") for i in range(S)]
        go_g = Signal()
        m.d.comb += self.s_desc.ready.eq(take[0])
        for i in range(S):
            prev_v = self.s_desc.valid if i == 0 else valid[i - 1]
            hold = valid[i] & ~go_g if i == S - 1 else valid[i]
            m.d.comb += valid_next[i].eq(Mux(take[i], prev_v, hold))
            m.d.sync += [valid[i].eq(valid_next[i]),
                         take[i].eq(Cat(*[~v for v in valid_next[i:]]).any())]
        # MR-TXF-069: stage A holds only the fields B reads, B and C the class and the payload
        # length, D and E the class; the whole descriptor waits in the ring (LUT RAM, written
        # as A takes it, read in order as E moves into G) and G holds it for the packing.
        given = self.desc_fields
        # A signal, not a view of the Cat: each field read of a view would slice (and the
        # netlist builder emit) the whole ~1,000-bit Cat again
        sd = Signal(DESC_LAYOUT, name="s_desc_given")
        m.d.comb += sd.eq(Cat(*[Const(0, w) if given is not None and n not in given
                                else self.s_desc.payload[n] for n, w in DESC_FIELDS]))
        a = Signal(DESC_A_LAYOUT, name="h0_a")
        cls = [Signal(2, name=f"h{i}_cls") for i in range(S)]       # Cat(vlan_en, ipv6)
        plen = [Signal(len(sd.payload_len), name=f"h{i}_plen") for i in range(3)]
        with m.If(take[0]):
            m.d.sync += [a.eq(Cat(*[sd[n][:w] for n, w in DESC_A_FIELDS])),
                         cls[0].eq(Cat(sd.vlan_en, sd.ipv6))]
            if self.ipv4_only:
                # MR-TX-466: the class a constant (flip-flops of constant 0: Yosys folds the
                # class's muxes, masks and the IPv6 checksum pipeline away)
                m.d.sync += cls[0].eq(0)
        m.d.comb += plen[0].eq(a.payload_len)
        for i in range(1, S):
            with m.If(take[i]):
                m.d.sync += cls[i].eq(cls[i - 1])
                if i < 3:
                    m.d.sync += plen[i].eq(plen[i - 1])
        # MR-TXF-070: DESC_RING slots, at least the descriptors A..E hold (5), so a slot is
        # written again at the earliest as its descriptor moves into G. Read combinationally,
        # so that the memory policy (MR-FLOW-026) leaves it in LUT RAM; G is the read's register.
        slots = DESC_RING
        cols = ring_fields(given, self.ipv4_only)
        ring_lay = data.StructLayout(dict(cols))
        m.submodules.desc_ring = ring = memory.Memory(shape=ring_lay, depth=slots, init=[])
        ring_w = ring.write_port()
        ring_r = ring.read_port(domain="comb")
        wr_ptr = Signal(range(slots), name="ring_wr")
        rd_ptr = Signal(range(slots), name="ring_rd")
        ring_put = take[0] & self.s_desc.valid
        ring_get = take[S - 1] & valid[S - 2]
        m.d.comb += [ring_w.addr.eq(wr_ptr), ring_w.en.eq(ring_put),
                     ring_w.data.eq(Cat(*[sd[n][:w] for n, w in cols])),
                     ring_r.addr.eq(rd_ptr)]
        with m.If(ring_put):
            m.d.sync += wr_ptr.eq(Mux(wr_ptr == slots - 1, 0, wr_ptr + 1))
        with m.If(ring_get):
            m.d.sync += rd_ptr.eq(Mux(rd_ptr == slots - 1, 0, rd_ptr + 1))
        g_ring = Signal(ring_lay, name="h5_desc")
        with m.If(take[S - 1]):
            m.d.sync += g_ring.eq(ring_r.data)
        # G's descriptor as the packing reads it: the ring's columns, 0 elsewhere
        kept = dict(cols)
        gd = Signal(DESC_LAYOUT, name="h5_gd")
        m.d.comb += gd.eq(Cat(*[Const(0, w) if n not in kept else
                                Cat(g_ring[n], Const(0, w - kept[n])) for n, w in DESC_FIELDS]))

        def stage_reg(i, name, width, value):
            """A register of stage i loaded with ``value`` (computed from stage i-1)."""
            r = Signal(width, name=f"h{i}_{name}")
            with m.If(take[i]):
                m.d.sync += r.eq(value)
            return r

        # ---- B: opcode table, rounded payload length, payload beats, checksum pairs
        P = a.payload_len
        nk = len(SEQS)
        kind = Signal(nk)
        ext24 = Signal(8)
        ext44 = Signal(8)
        extl = Signal(7)
        with m.Switch(a.bth_opcode):
            for op in range(256):
                seq = ext_seq(op)
                k = SEQS.index(seq)
                n = sum(wire.HEADER_LEN[h] for h in seq)
                if k == 0:
                    continue
                with m.Case(op):
                    m.d.comb += [kind.eq(1 << k), extl.eq(n),
                                 ext24.eq(wire.UDP_HLEN + wire.BTH_LEN + n + wire.ICRC_LEN),
                                 ext44.eq(wire.IPV4_HLEN + wire.UDP_HLEN + wire.BTH_LEN + n + wire.ICRC_LEN)]
            with m.Default():
                m.d.comb += [kind.eq(1), extl.eq(0), ext24.eq(wire.UDP_HLEN + wire.BTH_LEN + wire.ICRC_LEN),
                             ext44.eq(wire.IPV4_HLEN + wire.UDP_HLEN + wire.BTH_LEN + wire.ICRC_LEN)]
        tos = Cat(a.ip_ecn, a.ip_dscp)
        src, dst = a.ip_src, a.ip_dst
        byte = lambda v, i: v[8 * i:8 * i + 8]   # noqa: E731 (little-endian byte i of a Value)
        b_kind = stage_reg(1, "kind", nk, kind)
        b_ext = stage_reg(1, "ext", 7, extl)
        b_ext24 = stage_reg(1, "ext24", 8, ext24)
        b_ext44 = stage_reg(1, "ext44", 8, ext44)
        b_pr = stage_reg(1, "pr", 15, Cat(Const(0, 2), P[2:] + (P[:2] != 0)))
        b_npb = stage_reg(1, "npb", 15 - LG, P[LG:] + (P[:LG] != 0))
        hi = [a.ip_ttl + byte(src, 3), byte(src, 1) + byte(dst, 3), byte(dst, 1) + a.ip_ident[8:]]
        lo = [tos + byte(src, 2), byte(src, 0) + byte(dst, 2), byte(dst, 0) + a.ip_ident[:8]]
        b_hi = [stage_reg(1, f"hi{j}", 9, v) for j, v in enumerate(hi)]
        b_lo = [stage_reg(1, f"lo{j}", 9, v) for j, v in enumerate(lo)]

        # ---- C: UDP length, IPv4 total length, header length, checksum quads
        base = Array([Const(wire.ETH_HLEN + wire.VLAN_HLEN * vl + (wire.IPV6_HLEN if v6 else wire.IPV4_HLEN)
                            + wire.UDP_HLEN + wire.BTH_LEN, 8)
                      for v6 in (0, 1) for vl in (0, 1)])
        c_udp = stage_reg(2, "udp_len", 16, b_pr + b_ext24)
        c_tot = stage_reg(2, "ip_total", 16, b_pr + b_ext44)
        c_h = stage_reg(2, "hlen", 8, base[cls[1]] + b_ext)
        c_npb = stage_reg(2, "npb", 15 - LG, b_npb)
        c_kind = stage_reg(2, "kind", nk, b_kind)
        c_hi = [stage_reg(2, "hi_q0", 10, b_hi[0] + b_hi[1]), stage_reg(2, "hi_q1", 10, b_hi[2] + 0x85)]
        c_lo = [stage_reg(2, "lo_q0", 10, b_lo[0] + b_lo[1]), stage_reg(2, "lo_q1", 10, b_lo[2] + 17)]

        # ---- D: frame boundaries (bytes), checksum octets
        l3ip = Array([Const(wire.ETH_HLEN + wire.VLAN_HLEN * vl + (wire.IPV6_HLEN if v6 else wire.IPV4_HLEN), 7)
                      for v6 in (0, 1) for vl in (0, 1)])[cls[2]]
        d_pe = stage_reg(3, "pe", 16, c_h + plen[2])
        d_l = stage_reg(3, "l", 16, c_udp + l3ip)
        d_lm1 = stage_reg(3, "lm1", 16, c_udp + (l3ip - 1))
        d_e = stage_reg(3, "e", 16, c_udp + (l3ip - wire.ICRC_LEN))
        d_em1 = stage_reg(3, "em1", 16, c_udp + (l3ip - wire.ICRC_LEN - 1))
        d_hnp = stage_reg(3, "hnp", 16 - LG, c_h[LG:] + c_npb)
        d_h = stage_reg(3, "hlen", 8, c_h)
        d_udp = stage_reg(3, "udp_len", 16, c_udp)
        d_tot = stage_reg(3, "ip_total", 16, c_tot)
        d_kind = stage_reg(3, "kind", nk, c_kind)
        d_hi = stage_reg(3, "hi_o", 11, c_hi[0] + c_hi[1])
        d_lo = stage_reg(3, "lo_o", 11, c_lo[0] + c_lo[1])

        # ---- E: checksum byte columns; beat indices
        e_sh = stage_reg(4, "sh", 12, d_hi + d_tot[8:16])
        e_sl = stage_reg(4, "sl", 12, d_lo + d_tot[0:8])
        carry_e = {}
        for nme, sig in (("h", d_h), ("pe", d_pe), ("e", d_e), ("l", d_l)):
            carry_e[nme] = stage_reg(4, nme, 16, sig)
        e_hnp = stage_reg(4, "hnp", 16 - LG, d_hnp)
        e_fb = stage_reg(4, "fb", 16 - LG, d_em1[LG:])
        e_last = stage_reg(4, "last", 16 - LG, d_lm1[LG:])
        e_udp = stage_reg(4, "udp_len", 16, d_udp)
        e_tot = stage_reg(4, "ip_total", 16, d_tot)
        e_kind = stage_reg(4, "kind", nk, d_kind)

        # ---- G: checksum end-around sum, both carry-ins (MR-TXF-021)
        x = Cat(e_sl[0:8], e_sh[0:8])
        y = Cat(e_sh[8:12], Const(0, 4), e_sl[8:12])
        g_t0 = stage_reg(5, "t0", 17, x + y)
        g_t1 = stage_reg(5, "t1", 17, (Cat(Const(1, 1), x) + Cat(Const(1, 1), y))[1:])
        g = {nme: stage_reg(5, nme, 16, sig) for nme, sig in carry_e.items()}
        g_hnp = stage_reg(5, "hnp", 16 - LG, e_hnp)
        g_fb = stage_reg(5, "fb", 16 - LG, e_fb)
        g_last = stage_reg(5, "last", 16 - LG, e_last)
        g_udp = stage_reg(5, "udp_len", 16, e_udp)
        g_tot = stage_reg(5, "ip_total", 16, e_tot)
        g_kind = stage_reg(5, "kind", nk, e_kind)

        # ---------------------------------------------------------------- header bytes (MR-TXF-020)
        cksum = ~Mux(g_t0[16], g_t1[:16], g_t0[:16])
        hdr_bytes, crc_keep, crc_ones = self._pack(m, gd, cls[S - 1], g_udp, g_tot, cksum, g_kind)
        nbytes_hdr = -(-HDR_MAX // NB) * NB
        masks = [udp6_masks(c & 1, c >> 1, nbytes_hdr) for c in range(4)]

        # ---------------------------------------------------------------- frame register F
        # MR-TXF-042: per boundary X (header end H, payload end PE, ICRC start E, frame end L)
        # X's beat (MR-TX-437) with "before it" (full) and "in it" (part) flags and the lane
        # mask of X's beat; plus the payload-beat, last-fed and last beats.
        en = Signal()
        en_next = Signal()
        active = Signal()
        hdr_reg = Signal(NBEATS_HDR * W)
        f_v6, f_vlan = Signal(), Signal()
        shift = Signal(LG)
        n_zero = Signal(max(1, LG - 2))
        first = Signal()
        bounds = {}
        for nme in ("h", "pe", "e", "l", "np", "fb", "last"):
            bounds[nme] = (Signal(16 - LG, name=f"f_{nme}_at"), Signal(name=f"f_{nme}_full"),
                           Signal(name=f"f_{nme}_part"))
        # MR-TX-437: one beat counter for all boundaries (``beat2`` = F's beat + 2) and per
        # boundary its beat (``f_X_at``, loaded at go_g) and ``f_X_one`` = "X's beat is the
        # next one" (a down counter of beats to X at 1), a flip-flop: no counter a boundary
        beat2 = Signal(16 - LG, name="f_beat2")
        one = {nme: Signal(name=f"f_{nme}_one") for nme in bounds}
        thermo = {nme: Signal(NB, name=f"f_{nme}_lanes") for nme in ("h", "pe", "e", "l")}
        rot_prev = Signal(W)

        h_full, h_part = bounds["h"][1:]
        need = Signal()
        m.d.comb += need.eq(active & ~h_full & bounds["np"][1])
        # MR-TXF-065: the terms of go and of the header register's load are flip-flops,
        # loaded with their values for the next cycle (from the next state below): go_np and
        # go_p split go by whether it waits for a payload beat, so go is one LUT of two
        # flip-flops and s_payload.valid; hdr_ld and hdr_ce_x make the header register's
        # enable (MR-TX-436) with one LUT.
        go_np = Signal(name="go_np")                      # en & active & ~need
        go_p = Signal(name="go_p")                        # en & need
        hdr_ld = Signal(name="hdr_ld", init=1)            # ~active | last beat: may load
        hdr_ce_x = Signal(name="hdr_ce_x", init=1)        # ~active | go_np: beat 0 moves
        go = Signal()
        m.d.comb += [go.eq(go_np | (go_p & self.s_payload.valid)),
                     self.s_payload.ready.eq(go_p),
                     go_g.eq(en & valid[S - 1] & (~active | (go & bounds["last"][2])))]
        # the next state of active, en and the boundaries' flags the terms read
        active_next = Signal()
        m.d.comb += active_next.eq(Mux(go_g, 1, Mux(go & bounds["last"][2], 0, active)))
        g_beats = {"h": g["h"][LG:], "pe": g["pe"][LG:], "e": g["e"][LG:], "l": g["l"][LG:],
                   "np": g_hnp, "fb": g_fb, "last": g_last}

        def full_next(nme):
            _, full, _ = bounds[nme]
            return Mux(go_g, g_beats[nme] != 0, Mux(go, full & ~one[nme], full))

        def part_next(nme):
            _, full, part = bounds[nme]
            return Mux(go_g, g_beats[nme] == 0, Mux(go, full & one[nme], part))
        need_next = Signal()
        m.d.comb += need_next.eq(active_next & ~full_next("h") & full_next("np"))
        m.d.sync += [go_np.eq(en_next & active_next & ~need_next),
                     go_p.eq(en_next & need_next),
                     hdr_ld.eq(~active_next | part_next("last")),
                     hdr_ce_x.eq(~active_next | (en_next & active_next & ~need_next))]

        # MR-TX-436: the header register holds the frame's whole header, loaded with G's at
        # hdr_ld & ce0 (no frame in F, or F's last beat as it moves: go_g's load is one of them,
        # and no beat still to be read changes), never shifted; the beat F is at is a one-hot
        # register ``hdr_beat`` (beat 0 at go_g, the next at each go) that selects its bytes and
        # its ICRC and checksum masks (constants of the frame's class) as an AND-OR: no load
        # mux per header bit.
        ce0 = Signal()
        m.d.comb += ce0.eq(hdr_ce_x | (go_p & self.s_payload.valid))
        hdr_load = Signal()
        m.d.comb += hdr_load.eq(hdr_ld & ce0)
        with m.If(hdr_load):
            m.d.sync += hdr_reg.eq(Cat(*hdr_bytes))
        hdr_beat = Signal(NBEATS_HDR, init=1)
        with m.If(go_g):
            m.d.sync += hdr_beat.eq(1)
        with m.Elif(go):
            m.d.sync += hdr_beat.eq(hdr_beat << 1)

        def or_tree(vals):
            vals = list(vals)
            if not vals:
                return Const(0, 1)
            while len(vals) > 1:
                vals = [vals[i] | vals[i + 1] if i + 1 < len(vals) else vals[i]
                        for i in range(0, len(vals), 2)]
            return vals[0]

        def at_beat(beats):
            """The bits of F's current header beat from ``beats`` (one Value a beat)."""
            return or_tree(Mux(hdr_beat[k], v, 0) for k, v in enumerate(beats))

        def class_masks(masks, bits):
            """Per beat, the class's constant mask (``masks[c]``: an int over the header)."""
            cls = Cat(f_vlan, f_v6)
            return at_beat(Array(Const(mk >> (k * bits) & ((1 << bits) - 1), bits) for mk in masks)[cls]
                           for k in range(NBEATS_HDR))
        # MR-TX-439: the current beat's bytes in a register (the old shift register's beat 0,
        # same load and enable), loaded with the next beat's AND-OR: the merge reads flip-flops
        hdr_sr = Signal(W, name="hdr_cur")
        nxt_beat = or_tree(Mux(hdr_beat[k], hdr_reg[(k + 1) * W:(k + 2) * W], 0)
                           for k in range(NBEATS_HDR - 1))
        with m.If(ce0):
            m.d.sync += hdr_sr.eq(Mux(hdr_ld, Cat(*hdr_bytes)[:W], nxt_beat))
        keep_sr = class_masks(crc_keep, 2 * NB)
        ones_sr = class_masks(crc_ones, 2 * NB)
        sum_sr = class_masks([mk[0] for mk in masks], NB)
        patch_sr = class_masks([mk[1] for mk in masks], NB)
        # for tests: the registered terms and the state they stand for (MR-TXF-065)
        self.probe = {"go_np": go_np, "go_p": go_p, "hdr_ld": hdr_ld, "hdr_ce_x": hdr_ce_x, "en": en, "active": active, "need": need,
                      "last_part": bounds["last"][2], "a_to_e_valid": Cat(*valid[:S - 1])}
        with m.If(go_g):
            m.d.sync += [active.eq(1), first.eq(1), f_v6.eq(cls[S - 1][1]),
                         f_vlan.eq(cls[S - 1][0]),
                         shift.eq(g["h"][:LG]), n_zero.eq(~g["e"][2:LG])]
            m.d.sync += beat2.eq(2)
            for nme, (at, full, part) in bounds.items():
                xb = g_beats[nme]
                m.d.sync += [at.eq(xb), full.eq(xb != 0), part.eq(xb == 0), one[nme].eq(xb == 1)]
            for nme, th in thermo.items():
                m.d.sync += th.eq(Cat(*[g[nme][:LG] > j for j in range(NB)]))
        with m.Elif(go):
            m.d.sync += first.eq(0)
            m.d.sync += beat2.eq(beat2 + 1)
            for nme, (at, full, part) in bounds.items():
                m.d.sync += [full.eq(full & ~one[nme]), part.eq(full & one[nme]),
                             one[nme].eq(beat2 == at)]
            with m.If(bounds["last"][2]):
                m.d.sync += active.eq(0)

        # ---------------------------------------------------------------- merge M (MR-TXF-042)
        # rot_cur lane j = payload lane (j - shift) mod NB: lanes >= shift continue the payload
        # of this beat, lanes below it end the previous beat's (rot_prev).
        rot = self.s_payload.payload.data
        for b in range(0 if self.prerotated else LG):
            step = 8 << b
            rot = Mux(shift[b], Cat(rot[W - step:], rot[:W - step]), rot)
        rot_cur = Signal(W)
        m.d.comb += rot_cur.eq(rot)
        with m.If(go & need):
            m.d.sync += rot_prev.eq(rot_cur)

        def lanes(nme):
            full, part = bounds[nme][1], bounds[nme][2]
            return [full | (part & thermo[nme][j]) for j in range(NB)]

        hdr_lane, dat_lane, keep, e_lane = lanes("h"), lanes("pe"), lanes("l"), lanes("e")
        m_valid = Signal()
        m_data = Signal(W)
        m_crc = Signal(W)
        m_keep = Signal(NB)
        m_icrc = Signal(NB)
        m_last = Signal()
        m_feed = Signal()
        m_first = Signal()
        m_fb = Signal()
        m_n = Signal(len(n_zero))
        m_sum = Signal(NB)
        m_patch, m_v6, m_vlan = Signal(), Signal(), Signal()
        with m.If(en):
            m.d.sync += m_valid.eq(go)
        with m.If(go):
            dat, crc = [], []
            for j in range(NB):
                pb = Mux(thermo["h"][j], rot_prev.word_select(j, 8), rot_cur.word_select(j, 8))
                pb = Mux(dat_lane[j], pb, 0)
                dat.append(Mux(hdr_lane[j], hdr_sr.word_select(j, 8), pb))
                hb_ = hdr_sr.word_select(j, 8)
                kn = Cat(keep_sr[2 * j].replicate(4), keep_sr[2 * j + 1].replicate(4))
                on = Cat(ones_sr[2 * j].replicate(4), ones_sr[2 * j + 1].replicate(4))
                crc.append(Mux(hdr_lane[j], (hb_ & kn) | on, pb))
            m.d.sync += [m_data.eq(Cat(*dat)), m_crc.eq(Cat(*crc)), m_keep.eq(Cat(*keep)),
                         m_icrc.eq(Cat(*[keep[j] & ~e_lane[j] for j in range(NB)])),
                         m_last.eq(bounds["last"][2]),
                         m_feed.eq(bounds["e"][1] | bounds["e"][2]),
                         m_first.eq(first), m_fb.eq(bounds["fb"][2]), m_n.eq(n_zero),
                         m_sum.eq(Cat(*[keep[j] & (~hdr_lane[j] | sum_sr[j]) for j in range(NB)])),
                         m_patch.eq(Cat(*[hdr_lane[j] & patch_sr[j] for j in range(NB)]).any()),
                         m_v6.eq(f_v6), m_vlan.eq(f_vlan)]

        # ---------------------------------------------------------------- ICRC (MR-TXF-030, 031)
        proc = icrc_hw.IcrcProcessor(W)
        m.submodules.icrc = proc
        m.d.comb += [proc.data.eq(m_crc), proc.valid.eq(en & m_valid & m_feed),
                     proc.start.eq(en & m_valid & m_first)]
        # Delay line D1..D4, each {valid, data, keep, icrc lanes, last, fb, n}.
        dl = []
        prev = dict(valid=m_valid, data=m_data, keep=m_keep, icrc=m_icrc, last=m_last, fb=m_fb,
                    n=m_n, sum=m_sum, patch=m_patch, v6=m_v6, vlan=m_vlan, first=m_first)
        for i in range(ICRC_STAGES):
            cur = {k: Signal(len(v), name=f"d{i + 1}_{k}") for k, v in prev.items()}
            with m.If(en):
                m.d.sync += [cur[k].eq(prev[k]) for k in cur]
            dl.append(cur)
            prev = cur
        # MR-TXF-066/067: the zero lanes number t = T0 + 4u (u = ``n``); one stage takes the
        # register back by M_t, each bit an XOR of terms "two register bits AND a table of u"
        # (one LUT each); the two stages after it carry the value to D4.
        mats = unadvance_matrices(NB)
        sel = [mats[T0 + 4 * x] for x in range(NB // 4)]
        reg = proc.crc
        for i in range(ICRC_STAGES - 1):
            if i == 0:
                uu = dl[0]["n"]
                bits = []
                for b in range(32):
                    terms = []
                    for c0 in range(0, 32, 2):
                        tab = [(s_[c0] >> b & 1) | (s_[c0 + 1] >> b & 1) << 1 for s_ in sel]
                        if not any(tab):
                            continue
                        row = Const(tab[0], 2) if len(set(tab)) == 1 else Array(Const(t, 2) for t in tab)[uu]
                        terms.append((row & reg[c0:c0 + 2]).xor())
                    bits.append(icrc_hw.xor_tree(terms))
                value = Cat(*bits)
            else:
                value = reg
            u = Signal(32, name=f"unadv{i + 1}")
            with m.If(en & dl[i]["valid"] & dl[i]["fb"]):
                m.d.sync += u.eq(value)
            reg = u
        icrc = ~reg

        # ---------------------------------------------------------------- ICRC insertion, skid
        d4 = dl[-1]
        ins = []
        for j in range(NB):
            sel = (j - E4) % 4                        # MR-TXF-066: E's lane mod 4 is E4
            byte_ = icrc[8 * sel:8 * sel + 8]
            ins.append(Mux(d4["icrc"][j], byte_, d4["data"].word_select(j, 8)))
        in_data = Cat(*ins)
        w_beat = Signal(W)
        m.d.comb += w_beat.eq(in_data)
        v0, v1 = Signal(), Signal()
        push, in_data, in_keep, in_last = self._udp6(m, en, en_next, d4, w_beat, ~v1)
        e0_data, e0_keep, e0_last = Signal(W), Signal(NB), Signal()
        e1_data, e1_keep, e1_last = Signal(W), Signal(NB), Signal()
        pop = Signal()
        m.d.comb += pop.eq(v0 & self.m_axis.tready)
        load0 = lambda d, k, l_: [e0_data.eq(d), e0_keep.eq(k), e0_last.eq(l_)]  # noqa: E731
        with m.If(v1):
            with m.If(pop):
                m.d.sync += load0(e1_data, e1_keep, e1_last) + [v1.eq(0)]
        with m.Elif(v0):
            with m.If(pop & push):
                m.d.sync += load0(in_data, in_keep, in_last)
            with m.Elif(pop):
                m.d.sync += v0.eq(0)
            with m.Elif(push):
                m.d.sync += [e1_data.eq(in_data), e1_keep.eq(in_keep), e1_last.eq(in_last),
                             v1.eq(1)]
        with m.Else():
            with m.If(push):
                m.d.sync += load0(in_data, in_keep, in_last) + [v0.eq(1)]
        m.d.comb += [self.m_axis.tvalid.eq(v0), self.m_axis.tdata.eq(e0_data),
                     self.m_axis.tkeep.eq(e0_keep), self.m_axis.tlast.eq(e0_last),
                     self.m_axis.tuser.eq(0)]
        return m

    # ------------------------------------------------------------------------------------------
    def _udp6(self, m, en, en_next, d4, beat, skid_room):
        """MR-TXF-060..064: D4's beats into the output FIFO; the ones' complement sum of each
        IPv6 frame from its beats as written (byte columns, an adder tree, an accumulator, five
        folding stages) into a record queue; the FIFO's head beat leaves (into the skid buffer,
        when ``skid_room``) once it is an IPv4 beat or its frame's record is there, the
        checksum patched into its two bytes. Drives ``en`` and its next value ``en_next``;
        returns (push, data, keep, last)."""
        W = self.width
        NB = W // 8
        depth = out_fifo_depth(W)
        ent = data.StructLayout({"data": W, "keep": NB, "last": 1, "v6": 1, "patch": 1, "vlan": 1})
        m.submodules.out_fifo = ofifo = BufferedQueue(width=ent.size, depth=depth)   # MR-HW-091
        m.submodules.rec_q = rec_q = fifo.SyncFIFO(width=16, depth=REC_DEPTH)
        rec_used = Signal(range(REC_DEPTH + 1))
        # en is a flip-flop (it enables most of the pipeline): set when, before this cycle's
        # write, a slot and a record would be left after one more write
        room = Signal(init=1)
        m.d.comb += en_next.eq((ofifo.level < depth - 2) & (rec_used < REC_DEPTH - 1))
        m.d.sync += room.eq(en_next)
        m.d.comb += en.eq(room)
        write = en & d4["valid"]
        w = Signal(ent)
        m.d.comb += [w.data.eq(beat), w.keep.eq(d4["keep"]), w.last.eq(d4["last"]),
                     w.v6.eq(d4["v6"]), w.patch.eq(d4["patch"]), w.vlan.eq(d4["vlan"]),
                     ofifo.w_data.eq(w), ofifo.w_en.eq(write)]

        # sum pipeline (MR-TXF-062): never stalls; byte column hi (even lanes) and lo (odd)
        cols = []
        for par in (0, 1):
            cols.append([Mux(d4["sum"][j], beat.word_select(j, 8), 0) for j in range(par, NB, 2)])
        flags = {"valid": write & d4["v6"], "first": d4["first"], "last": d4["last"]}
        stage = 0
        while len(cols[0]) > 1:
            stage += 1
            nxt = []
            for col in cols:
                out = []
                for i in range(0, len(col), 2):
                    r = Signal(len(col[i]) + 1, name=f"ck{stage}_{len(nxt)}_{i // 2}")
                    m.d.sync += r.eq(col[i] + col[i + 1])
                    out.append(r)
                nxt.append(out)
            cols = nxt
            nf = {}
            for k, v in flags.items():
                nf[k] = Signal(name=f"ck{stage}_{k}")
                m.d.sync += nf[k].eq(v)
            flags = nf
        acc_bits = 16 + 8
        acc_hi, acc_lo = Signal(acc_bits), Signal(acc_bits)
        acc_done = Signal()
        with m.If(flags["valid"]):
            m.d.sync += [acc_hi.eq(Mux(flags["first"], 0, acc_hi) + cols[0][0]),
                         acc_lo.eq(Mux(flags["first"], 0, acc_lo) + cols[1][0])]
        m.d.sync += acc_done.eq(flags["valid"] & flags["last"])
        # folding mod 0xFFFF (end-around carry), hi column times 256 is a byte rotation
        f1_hi, f1_lo, f1 = Signal(17), Signal(17), Signal()
        m.d.sync += [f1_hi.eq(acc_hi[:16] + acc_hi[16:]), f1_lo.eq(acc_lo[:16] + acc_lo[16:]),
                     f1.eq(acc_done)]
        f2_hi, f2_lo, f2 = Signal(16), Signal(16), Signal()
        m.d.sync += [f2_hi.eq(f1_hi[:16] + f1_hi[16]), f2_lo.eq(f1_lo[:16] + f1_lo[16]), f2.eq(f1)]
        f3, f3_v = Signal(18), Signal()
        m.d.sync += [f3.eq(Cat(f2_hi[8:], f2_hi[:8]) + f2_lo + wire.IPPROTO_UDP), f3_v.eq(f2)]
        f4, f4_v = Signal(17), Signal()
        m.d.sync += [f4.eq(f3[:16] + f3[16:]), f4_v.eq(f3_v)]
        f5, f5_v = Signal(16), Signal()
        m.d.sync += [f5.eq(f4[:16] + f4[16]), f5_v.eq(f4_v)]
        ck = Signal(16)
        m.d.comb += [ck.eq(Mux(f5 == 0xFFFF, 0xFFFF, ~f5)),      # 0 is sent as 0xFFFF
                     rec_q.w_en.eq(f5_v), rec_q.w_data.eq(ck)]

        # read side (MR-TXF-063/064): the FIFO's head first moves into a register, so that the
        # block RAM's output feeds only data (its clock-to-out is most of a cycle on ECP5)
        head = data.View(ent, ofifo.r_data)
        r_valid = Signal()
        r = Signal(ent)
        rd = r_valid & skid_room & (~r.v6 | rec_q.r_rdy)
        fill = ofifo.r_rdy & (~r_valid | rd)
        m.d.comb += [ofifo.r_en.eq(fill), rec_q.r_en.eq(rd & r.v6 & r.last)]
        with m.If(fill):
            m.d.sync += [r.eq(head), r_valid.eq(1)]
        with m.Elif(rd):
            m.d.sync += r_valid.eq(0)
        head = r
        done_v6 = rd & head.v6 & head.last
        new_v6 = write & d4["v6"] & d4["last"]
        with m.If(new_v6 & ~done_v6):
            m.d.sync += rec_used.eq(rec_used + 1)
        with m.Elif(done_v6 & ~new_v6):
            m.d.sync += rec_used.eq(rec_used - 1)
        at = [(wire.ETH_HLEN + wire.VLAN_HLEN * vl + wire.IPV6_HLEN + 6) % NB for vl in (0, 1)]
        ck_bytes = (rec_q.r_data[8:16], rec_q.r_data[:8])                 # network order
        out = []
        for j in range(NB):
            b = head.data.word_select(j, 8)
            for vl in (0, 1):
                for i in (0, 1):
                    if j == at[vl] + i:
                        b = Mux(head.patch & (head.vlan == vl), ck_bytes[i], b)
            out.append(b)
        return rd, Cat(*out), head.keep, head.last

    def _pack(self, m, d, cls, udp_len, ip_total, cksum, kind):
        """(header bytes in network order, ICRC keep and ones masks of each class (ints, class
        ``vlan + 2 ipv6``), one bit per nibble) (MR-TXF-020, MR-TXF-030)."""
        NB = self.width // 8
        nbytes = -(-HDR_MAX // NB) * NB
        ip4 = {"version": 4, "ihl": 5, "dscp": d.ip_dscp, "ecn": d.ip_ecn, "total_len": ip_total,
               "ident": d.ip_ident, "df": 1, "ttl": d.ip_ttl, "proto": wire.IPPROTO_UDP,
               "checksum": cksum, "src": d.ip_src[:32], "dst": d.ip_dst[:32]}
        ip6 = {"version": 6, "dscp": d.ip_dscp, "ecn": d.ip_ecn, "flow_label": d.ip_flow_label,
               "payload_len": udp_len, "next_header": wire.IPPROTO_UDP, "hop_limit": d.ip_ttl,
               "src": d.ip_src, "dst": d.ip_dst}
        udp = {"sport": d.udp_sport, "dport": d.udp_dport, "length": udp_len, "checksum": 0}
        pad = (-d.payload_len[:2])[:2]
        bth = {f.name: getattr(d, f"bth_{f.name}") for f in _H["bth"].fields
               if not f.reserved and f.name != "pad"}
        bth["pad"] = pad
        vlan = {"pcp": d.vlan_pcp, "dei": d.vlan_dei, "vlan": d.vlan_vlan}
        # Extension header sequences, one per kind (one-hot ``kind``). A byte of the extension
        # region is the same header byte in every kind that has that header at that offset:
        # one term per (header, byte) with the OR of those kinds, not one per kind.
        ext_len = max(sum(wire.HEADER_LEN[h] for h in s) for s in SEQS)
        packed = {h: pack_header(h, {f.name: getattr(d, f"{h}_{f.name}") for f in _H[h].fields
                                     if not f.reserved})
                  for s in SEQS for h in s if h != "cnp"}
        groups = [{} for _ in range(ext_len)]       # position -> {(header, byte): [kinds]}
        for k, seq in enumerate(SEQS):
            off = 0
            for h in seq:
                if h != "cnp":
                    for lb in range(wire.HEADER_LEN[h]):
                        groups[off + lb].setdefault((h, lb), []).append(k)
                off += wire.HEADER_LEN[h]
        ext = [Const(0, 8)] * ext_len
        for i, grp in enumerate(groups):
            if not grp:
                continue
            v = Const(0, 8)
            for (h, lb), kinds in grp.items():
                v = v | Mux(Cat(*[kind[k] for k in kinds]).any(), packed[h][lb], 0)
            sig = Signal(8, name=f"ext_b{i}")
            m.d.comb += sig.eq(v)
            ext[i] = sig
        hdr_cls = []
        for v6 in (0, 1):
            for vl in (0, 1):
                et = wire.ETHERTYPE_IPV6 if v6 else wire.ETHERTYPE_IPV4
                eth = pack_header("eth", {"dst": d.eth_dst, "src": d.eth_src,
                                          "ethertype": wire.VLAN_TPID if vl else et})
                if vl:
                    eth += pack_header("vlan", dict(vlan, ethertype=et))
                ipb = pack_header("ipv6", ip6) if v6 else pack_header("ipv4", ip4)
                base = eth + ipb + pack_header("udp", udp) + pack_header("bth", bth)
                hdr_cls.append((base + ext + [Const(0, 8)] * nbytes)[:nbytes])
        hdr = [Array([hdr_cls[c][i] for c in range(4)])[cls] for i in range(nbytes)]
        keep, ones = [], []
        for c in range(4):
            k, o = crc_masks(vlan=c & 1, ipv6=c >> 1, nbytes=nbytes)
            keep.append(k)
            ones.append(o)
        return hdr, keep, ones
