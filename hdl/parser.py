"""RX parser: Ethernet / 802.1Q / IPv4 / IPv6 / UDP 4791 / BTH / RoCEv2 and MetaRoCE
extension headers, ICRC at line rate, drop with a reason (docs/spec/hw-parser.md, MR-HW-*).

``Parser(width=512, *, max_frame=9216, crc_impl="xor", drop_on_full=False)``; ``width`` in
{64, 128, 256, 512} (MR-HW-001). ``crc_impl="xor"`` (default) is lib.crc's CRC as XOR trees
(5 LUT levels at 512 bits); ``"lib"`` is ``lib.crc.Processor`` itself (its XOR chains map 14
deep), proven equal. ``drop_on_full=True`` never back-pressures
the MAC and drops whole frames that do not fit (MR-HW-080..082).

Verilog ports (``amaranth.back.verilog.convert(Parser(w))``, MR-HW-002); every output is a
flip-flop (MR-HW-055):

===================== ===== ===============================================================
port                  dir   meaning
===================== ===== ===============================================================
clk, rst              in    clock, synchronous reset (active high)
s_axis__tdata [W]     in    frame bytes, byte 0 of the frame in tdata[7:0]
s_axis__tkeep [W/8]   in    packed: all ones except on the last beat (run of ones from lane 0)
s_axis__tvalid        in
s_axis__tready        out   registered (MR-HW-051); 1 with drop_on_full
s_axis__tlast         in
s_axis__tuser         in    MAC error (any beat of the frame)
m_meta__payload [1438]   out   :data:`META_LAYOUT` (MR-HW-010), one record per non-bypassed frame
m_meta__valid         out
m_meta__ready         in
m_payload__tdata [W]  out   payload of accepted frames, byte lanes as in the input frame
m_payload__tkeep      out   exactly the payload bytes (first/last beat partial)
m_payload__tvalid     out
m_payload__tready     in
m_payload__tlast      out
m_bypass__t*          out/in non-RoCE frames, intact (same tdata, tkeep, beats)
reg_addr [4]          in    counter index = models.wire.Reason code (0 accepted, 8 bypassed,
                            9 overflow drops)
reg_data [64]         out   counter value, one cycle after reg_addr
===================== ===== ===============================================================

Golden model: :class:`metaroce.models.parser.ParserModel(width)` with ``step(inputs) ->
outputs`` (all ports above by name except clk; ``m_meta__payload`` as a flat int), called once
per clock; ``ParserModel.meta_to_dict(int)``; ``ParserModel.port_names()``.

Pipeline (MR-HW-050), no stall after S0: S0 takes a beat into the header buffer ``hb``, the
register ``d1`` and the class/length/opcode captures; S1 writes ``d1`` into the frame store and,
on the last beat, the fields into the meta queue (MR-HW-013) and the checks into the verdict
pipeline; S2 masks the beat into the ICRC register; S2..S6 compute and order the checks (the
IPv4 checksum over S2..S5, the ICRC compare in S4); S7 writes the verdict queue and the
reader's record queue and counts. ``s_axis.tready`` is a register computed from reservations of
the store and of the meta queue (MR-HW-051). Store and forward: nothing of a frame leaves before
its verdict (MR-HW-030).

Structure: :class:`Parser` joins four ``wiring.Component`` blocks with ``wiring.connect``;
between them every interface is an ``amaranth.lib.stream`` (always ready: nothing behind S0
stalls) or a memory port, AXI4-Stream only at the boundary::

    s_axis -> Front (S0, S1) --facts--> VerdictPipeline (S2..S7, IcrcChecker) --verdict--> MetaOutput -> m_meta
                  |   +--fields (meta queue)--------------------------------------------------^
                  |                                 +--record--> Reader -> m_payload, m_bypass
                  +--store write--> frame_store <--store read--+

``Front.issue``/``Front.pop`` take the reader's and the meta output's frees back to the
reservations; the counters (MR-HW-060) count the verdict stream in :class:`Parser`.
"""
from math import ceil

from amaranth.hdl import Array, Cat, Const, Module, Mux, Signal, Value, signed, unsigned
from amaranth.lib import data, memory, stream, wiring
from amaranth.lib.wiring import In, Out

from ..models import wire
from ..models.parser import (ACT_BYPASS, ACT_DISCARD, ACT_PAYLOAD, COUNTER_BITS, EXT_NAMES, HB, META_DEPTH, N_COUNTERS,
                             N_REASON_COUNTERS, OVERFLOW_COUNTER,
                             META_LAYOUT, params)
from ..models.wire import Op, Reason
from . import icrc as icrc_hw
from .counters import counter_ram, wide_counter

__all__ = ["Parser", "Front", "VerdictPipeline", "MetaOutput", "Reader", "axis_signature",
           "meta_signature", "facts_layout", "record_layout", "VERDICT_LAYOUT"]

def axis_signature(width, *, user=False):
    """AXI4-Stream source signature (flip it for a sink)."""
    members = {"tdata": Out(width), "tkeep": Out(width // 8), "tvalid": Out(1),
               "tready": In(1), "tlast": Out(1)}
    if user:
        members["tuser"] = Out(1)
    return wiring.Signature(members)


def meta_signature():
    """The ``m_meta`` port: a ``lib.stream`` of META_LAYOUT records (MR-HW-004), the signature the
    RX engine's ``s_meta`` flips, so the two join with ``wiring.connect``."""
    return stream.Signature(META_LAYOUT)


def _ext_offsets():
    """{header: {offset after BTH: [opcodes]}} from wire.HEADERS (MR-WIRE-052)."""
    offs = {h: {} for h in EXT_NAMES}
    for op, names in wire.HEADERS.items():
        off = 0
        for h in names:
            if h in offs:
                offs[h].setdefault(off, []).append(int(op))
            off += wire.HEADER_LEN[h]
    return offs


EXT_OFFSETS = _ext_offsets()


def _be(byts):
    """Big-endian value of a list of byte Values (network order)."""
    return Cat(*reversed(byts))


def _ext_fields(name, b):
    """{field: Value} of header ``name`` from its bytes ``b`` (network order), for every field of
    the header table that carries a value (MR-WIRE-003): a slice of the big-endian value of the
    bytes that hold the field. Works for any header of the table, as codec.decode_ext does."""
    out = {}
    for fld in wire.HEADER_TABLE[name].fields:
        if not fld.reserved:
            first, end = fld.offset // 8, -(-(fld.offset + fld.width) // 8)
            lsb = 8 * end - fld.offset - fld.width
            out[fld.name] = _be(b[first:end])[lsb:lsb + fld.width]
    return out


def _first_zero(bits, n):
    """Index of the lowest 0 in ``bits[:n]`` (``n`` if none), as a balanced tree."""
    if n == 1:
        return Mux(bits[0], 1, 0)
    h = n // 2
    lo, hi = bits[:h], bits[h:n]
    return Mux(lo.all(), h + _first_zero(hi, n - h), _first_zero(lo, h))


def _assign(view, values):
    """Statements assigning a nested dict of Values to a View."""
    stmts = []
    for k, v in values.items():
        if isinstance(v, dict):
            stmts += _assign(getattr(view, k), v)
        else:
            stmts.append(getattr(view, k).eq(v))
    return stmts


def _sel4(vlan, is6, c4u, c4v, c6u, c6v):
    """Per-class choice, as ``by_l4``: IPv6 whenever ``is6``, else the IPv4 variant."""
    return Mux(is6, Mux(vlan, c6v, c6u), Mux(vlan, c4v, c4u))


def _first_set(m, name, conds):
    """(any, code) of the first true condition of ``[(cond, code)]`` (a priority encoder)."""
    any_ = Signal(name=f"{name}_any")
    code = Signal(4, name=f"{name}_code")
    val = Const(0, 4)
    for cond, c in reversed(conds):
        val = Mux(cond, c, val)
    m.d.comb += [any_.eq(Cat(*[c for c, _ in conds]).any()), code.eq(val)]
    return any_, code


def _sum_is(a, b, const, nbits):
    """``(a + b) % 2**nbits == const`` without a carry chain: the sum equals ``const`` iff
    the carries ``const`` implies are the carries ``a`` and ``b`` generate (one LUT per bit,
    then a reduction)."""
    a, b, k = a[:nbits], b[:nbits], Const(const % (1 << nbits), nbits)
    carries = Cat(Const(0, 1), ((a & b) | ((a | b) & ~k))[:nbits - 1])
    return (a ^ b ^ k ^ carries) == 0


#: Per-frame verdict from the verdict pipeline to the meta output (MR-HW-013, MR-HW-020):
#: the reason, whether the fields are zeroed (drop before the ICRC), which extension headers
#: are zeroed, the payload length.
VERDICT_LAYOUT = data.StructLayout({"reason": 4, "drop_fields": 1, "zero": len(EXT_NAMES),
                                    "plen": 16})

#: The meta record's fields loaded from the meta queue, zeroed per group (MR-HW-011/012).
FIELD_GROUPS = [n for n, _ in META_LAYOUT if n not in ("drop", "reason", "payload_len")]


def record_layout(kbits):
    """The reader's per-frame record (MR-HW-030): action, last beat index, payload bounds;
    ``single`` (last == 0), ``ps0``/``pe0`` (the payload starts/ends in beat 0) are stored so
    that no logic follows the record memory."""
    return data.StructLayout({"action": 2, "last": kbits, "pstart": 16, "pend_incl": 16,
                              "single": 1, "ps0": 1, "pe0": 1})


def facts_layout(width, p):
    """What S1 hands the verdict pipeline for every beat (MR-HW-050): the beat and its index
    for the ICRC, and on a frame's last beat (``frame_end``) its class, lengths, opcode facts
    and header bytes for the checks."""
    kbits = p["kbits"]
    return data.StructLayout({
        "vlan": 1, "is4": 1, "is6": 1, "len": 16, "mac": 1, "over": 1, "ipl": signed(18),
        "l4_end": signed(19), "pad": 2, "nbeats_m1": kbits, "vihl": 8, "frag_bad": 1,
        "proto_bad": 1, "nxt_bad": 1, "dport_bad": 1, "udp_len": 16, "tver_bad": 1,
        "mrver_bad": 1, "op_valid": 1, "op_payload": 1, "op_mr": 1, "c_body": 8, "pstart": 8,
        "c_body_pad": 9, "sub_plen": 9, "sub_pend": 4, "has": len(EXT_NAMES), "known": 1,
        "k": kbits, "data": width, "tail": 1, "before_end": 1, "words": 160, "frame_end": 1})


FACTS_NAMES = [n for n, _ in facts_layout(64, params(64))]


#: BTH opcode byte positions (l4 + 8) for the four classes (untagged/tagged x IPv4/IPv6).
_OP_POS = {(0, 0): 42, (1, 0): 46, (0, 1): 62, (1, 1): 66}


class Front(wiring.Component):
    """S0 and S1 of the parser (MR-HW-050, MR-HW-051): accepts beats, writes them to the frame
    store, captures the header and selects the fields by class, and hands the verdict
    pipeline one ``facts`` record per beat.

    ============ ===== ====================================================================
    port         dir   meaning
    ============ ===== ====================================================================
    s_axis       in    AXI4-Stream sink of the parser (the MAC boundary, MR-HW-002)
    store        out   frame store write port (beat data and tkeep), MR-HW-030
    fields       out   stream of :data:`META_LAYOUT`: a frame's fields, into the meta queue
                       (MR-HW-013)
    facts        out   stream of :func:`facts_layout`, one per beat (MR-HW-050)
    overflow     out   a frame dropped on overflow has its last beat in S1 (MR-HW-082)
    issue        in    the reader takes a beat out of the store (frees a beat, MR-HW-051)
    pop          in    the meta output frees a meta-queue slot (MR-HW-051)
    ============ ===== ====================================================================
    """

    def __init__(self, width, p, *, drop_on_full=False):
        self.width, self.p, self.drop_on_full = width, p, drop_on_full
        super().__init__({
            "s_axis": In(axis_signature(width, user=True)),
            "store": Out(memory.WritePort.Signature(addr_width=p["abits"],
                                                    shape=unsigned(width + p["bytes"])).flip()),
            "fields": Out(stream.Signature(META_LAYOUT, always_ready=True)),
            "facts": Out(stream.Signature(facts_layout(width, p), always_ready=True)),
            "overflow": Out(1),
            "issue": In(1),
            "pop": In(1),
        })

    def elaborate(self, platform):
        m = Module()
        width, nbytes = self.width, self.p["bytes"]
        max_beats, depth = self.p["max_beats"], self.p["depth"]
        abits, kbits = self.p["abits"], self.p["kbits"]
        mq_depth = self.p["meta_depth"]
        mq_bits = mq_depth.bit_length() - 1
        s = self.s_axis

        # ------------------------------------------------------------ S0: accept (MR-HW-051)
        # tready is a register: the frame store and the meta queue are reserved ahead, so the
        # pipeline behind S0 never stalls.
        tready = Signal(init=1)
        accept = Signal()
        if self.drop_on_full:
            # MR-HW-080: the MAC is never back-pressured.
            m.d.comb += [s.tready.eq(1), accept.eq(s.tvalid)]
        else:
            m.d.comb += [s.tready.eq(tready), accept.eq(s.tvalid & tready)]
        k = Signal(kbits)                   # beat index in the frame, saturates at max_beats
        space = Signal(abits + 1)            # beats accepted for the store and not yet read
        slots = Signal(mq_bits + 1)          # frames whose last beat was accepted, not yet out
        need = k < max_beats                 # beats past max_beats are not stored (MR-HW-031)
        fits = Signal()
        ovf = Signal()                       # the frame being received overflowed
        fr_cnt = Signal(kbits + 1)           # its beats reserved in the store
        if self.drop_on_full:
            # MR-HW-081: a beat that finds the store full, or a last beat that finds the meta
            # queue full, drops its whole frame: the frame's stored beats are given back.
            m.d.comb += fits.eq(~ovf & (~need | (space < depth)) & (~s.tlast | (slots < mq_depth)))
            with m.If(accept):
                m.d.sync += [ovf.eq(~fits & ~s.tlast),
                             fr_cnt.eq(Mux(s.tlast, 0, fr_cnt + (need & fits)))]
        else:
            m.d.comb += fits.eq(1)
        store_in = accept & need & fits
        rewind_in = accept & ~fits & ~ovf
        nb_in = Signal(range(nbytes + 1))
        m.d.comb += nb_in.eq(Mux(s.tlast, _first_zero(s.tkeep, nbytes), nbytes))
        keep_in = Signal(nbytes)
        m.d.comb += keep_in.eq(Cat(*[lane < nb_in for lane in range(nbytes)]))

        # at_beat[j] == (k == j) for the header beats, kept one-hot in flip-flops.
        n_hdr = HB // nbytes
        at_beat = Signal(n_hdr, init=1)
        with m.If(accept):
            m.d.sync += k.eq(Mux(s.tlast, 0, Mux(k == max_beats, max_beats, k + 1)))
            m.d.sync += at_beat.eq(Mux(s.tlast, 1, at_beat << 1))

        # Header buffer and captures load a presented beat whether or not it is taken: a beat
        # not taken is presented again at the same index before anything reads them, and the
        # load enables then carry no tready (MR-HW-051).
        hb = Signal(HB * 8, reset_less=True)
        hbb = [hb.word_select(j, 8) for j in range(HB)]
        for j in range(HB):
            beat, lane = divmod(j, nbytes)
            with m.If(s.tvalid & at_beat[beat]):
                m.d.sync += hbb[j].eq(s.tdata.word_select(lane, 8))

        def at_input(pos, n):
            """Big-endian value of input bytes pos..pos+n-1 (one beat) and its load strobe."""
            beat, lane = divmod(pos, nbytes)
            assert (pos + n - 1) // nbytes == beat
            val = _be([s.tdata.word_select(lane + i, 8) for i in range(n)])
            return val, s.tvalid & at_beat[beat]

        # Values captured as their bytes arrive (MR-HW-050), so S1 only selects by class.
        # Stale when the frame is shorter: then a length check decides first (MR-HW-022).
        # Frame class: the EtherType at byte 12, or at byte 16 behind a VLAN tag; a tagged frame
        # too short for byte 16 is truncated before the class is read (MR-WIRE-101 order).
        vlan, is4, is6 = (Signal(name=n, reset_less=True) for n in ("vlan", "is4", "is6"))
        e0, ld0 = at_input(12, 2)
        e1, ld1 = at_input(16, 2)
        tagged = e0 == wire.VLAN_TPID
        if 12 // nbytes == 16 // nbytes:
            with m.If(ld0):
                m.d.sync += [vlan.eq(tagged), is4.eq(Mux(tagged, e1, e0) == wire.ETHERTYPE_IPV4),
                             is6.eq(Mux(tagged, e1, e0) == wire.ETHERTYPE_IPV6)]
        else:
            with m.If(ld0):
                m.d.sync += [vlan.eq(tagged), is4.eq(e0 == wire.ETHERTYPE_IPV4),
                             is6.eq(e0 == wire.ETHERTYPE_IPV6)]
            with m.If(ld1 & vlan):
                m.d.sync += [is4.eq(e1 == wire.ETHERTYPE_IPV4), is6.eq(e1 == wire.ETHERTYPE_IPV6)]
        # Inverted copies of vlan and is6 for the extension-header selection: half the fanout
        # each (an inverted copy is not merged back by synthesis).
        n_vlan, n_is6 = Signal(reset_less=True), Signal(reset_less=True)
        m.d.sync += [n_vlan.eq(~Mux(ld0, tagged, vlan))]
        if 12 // nbytes == 16 // nbytes:
            m.d.sync += n_is6.eq(~Mux(ld0, Mux(tagged, e1, e0) == wire.ETHERTYPE_IPV6, is6))
        else:
            m.d.sync += n_is6.eq(~Mux(ld0, e0 == wire.ETHERTYPE_IPV6,
                                      Mux(ld1 & vlan, e1 == wire.ETHERTYPE_IPV6, is6)))
        # IP payload length and end of the IP packet for each class.
        ipl_c, l4e_c = {}, {}
        for cls, pos in {(0, 0): 16, (1, 0): 20, (0, 1): 18, (1, 1): 22}.items():
            vl, v6 = cls
            l4 = 14 + 4 * vl + (wire.IPV6_HLEN if v6 else wire.IPV4_HLEN)
            ipl_c[cls] = Signal(signed(18), name=f"ipl_{vl}{v6}", reset_less=True)
            l4e_c[cls] = Signal(signed(19), name=f"l4e_{vl}{v6}", reset_less=True)
            val, ld = at_input(pos, 2)
            with m.If(ld):
                ipl = val if v6 else val - wire.IPV4_HLEN
                m.d.sync += [ipl_c[cls].eq(ipl), l4e_c[cls].eq(ipl + l4)]
        # Opcode facts at each class's BTH position.
        pairs = [(h, off) for h in EXT_NAMES for off in EXT_OFFSETS[h]]
        op_layout = data.StructLayout({
            "valid": 1, "payload": 1, "mr": 1, "hits": len(pairs),
            "c_body": 8,                    # UDP + BTH + ICRC + extension headers: ipl - c_body = body
            "pstart": 8})                   # first payload byte
        def load_op(reg, opcode, pstart_base):
            """``reg`` loaded with the facts of ``opcode``; ``pstart_base(hl)``: the first payload
            byte after extension headers of ``hl`` bytes."""
            with m.Switch(opcode):
                for op in Op:
                    with m.Case(int(op)):
                        hits = [int(op) in EXT_OFFSETS[h][off] for h, off in pairs]
                        hl = wire.ext_len(op)
                        m.d.sync += reg.eq(Cat(
                            1, int(op in wire.PAYLOAD_OPS), int(op in wire.MR_OPS),
                            Const(sum(b << i for i, b in enumerate(hits)), len(pairs)),
                            Const(wire.UDP_HLEN + wire.BTH_LEN + wire.ICRC_LEN + hl, 8),
                            pstart_base(hl)))
                with m.Default():
                    m.d.sync += reg.eq(0)

        d1_valid = Signal()
        d1_data = Signal(width, reset_less=True)
        d1_keep = Signal(nbytes, reset_less=True)
        d1_nb = Signal(range(nbytes + 1), reset_less=True)
        d1_last = Signal(reset_less=True)
        d1_k = Signal(kbits, reset_less=True)
        d1_user = Signal(reset_less=True)
        d1_store = Signal(reset_less=True)
        d1_rewind = Signal(reset_less=True)
        d1_drop = Signal(reset_less=True)
        m.d.sync += d1_valid.eq(accept)
        with m.If(s.tvalid):
            m.d.sync += [d1_data.eq(s.tdata), d1_keep.eq(keep_in), d1_nb.eq(nb_in),
                         d1_last.eq(s.tlast), d1_k.eq(k), d1_user.eq(s.tuser),
                         d1_store.eq(need & fits), d1_rewind.eq(~fits & ~ovf), d1_drop.eq(~fits)]

        # MR-HW-101: the bytes from the UDP header on (UDP, BTH, the extension headers' 48 bytes)
        # captured by their offset from the class's UDP header as they arrive, so S1 reads them
        # without the 4-way class select: byte i of the buffer loads at the beat and from the
        # lane where byte i after the UDP header of the frame's class arrives (at 64 bits two
        # lanes). The class registers are final by then where every class's UDP header starts
        # in a beat after the EtherTypes' (widths up to 256 bits); else S1 selects from hb.
        l4_pos = {cls: 14 + 4 * cls[0] + (wire.IPV6_HLEN if cls[1] else wire.IPV4_HLEN)
                  for cls in _OP_POS}
        l4_len = wire.UDP_HLEN + wire.BTH_LEN + wire.MRAH_LEN
        l4_early = min(l4_pos.values()) // nbytes > 17 // nbytes
        op = Signal(op_layout, name="op_facts", reset_less=True)
        if l4_early:
            assert (max(l4_pos.values()) + l4_len - 1) // nbytes < n_hdr
            cls_is = {cls: (vlan == cls[0]) & (is6 == cls[1]) for cls in l4_pos}
            l4b = [Signal(8, name=f"l4b{i}", reset_less=True) for i in range(l4_len)]
            for i in range(l4_len):
                by_lane = {}
                for cls, pos in l4_pos.items():
                    by_lane.setdefault((pos + i) % nbytes, []).append(cls)
                lanes = sorted(by_lane.items())
                byte = s.tdata.word_select(lanes[-1][0], 8)
                for lane, classes in lanes[:-1]:
                    byte = Mux(Cat(*[cls_is[c] for c in classes]).any(),
                               s.tdata.word_select(lane, 8), byte)
                load = Cat(*[cls_is[cls] & at_beat[(pos + i) // nbytes]
                             for cls, pos in l4_pos.items()]).any()
                with m.If(s.tvalid & load):
                    m.d.sync += l4b[i].eq(byte)
                    if i == wire.UDP_HLEN:
                        # MR-HW-101: the opcode's facts decoded once, from the byte the buffer
                        # loads, the first payload byte by the (final) class
                        load_op(op, byte, lambda hl: _sel4(vlan, is6, *(Const(pos + wire.UDP_HLEN + wire.BTH_LEN + hl, 8)
                                                                      for pos in l4_pos.values())))
        else:
            # Opcode facts at each class's BTH position, selected by class at S1.
            op_c = {}
            for cls, pos in _OP_POS.items():
                op_c[cls] = Signal(op_layout, name=f"op_{cls[0]}{cls[1]}", reset_less=True)
                opcode, ld = at_input(pos, 1)
                with m.If(ld):
                    load_op(op_c[cls], opcode, lambda hl, pos=pos: Const(pos + wire.BTH_LEN + hl, 8))

        # ------------------------------------------------------------ S1: store, ICRC, snapshot

        def sel_x(c):
            return _sel4(~n_vlan, ~n_is6, c[(0, 0)], c[(1, 0)], c[(0, 1)], c[(1, 1)])

        def sel(c):
            return _sel4(vlan, is6, c[(0, 0)], c[(1, 0)], c[(0, 1)], c[(1, 1)])

        def be(off, n):
            return _be(hbb[off:off + n])

        def by_l3(fn):
            return Mux(vlan, fn(18), fn(14))

        def l4(off, n=1, ext_sel=False):
            """Big-endian value of the ``n`` bytes ``off`` after the class's UDP header
            (MR-HW-101's buffer, or hb by class; ``ext_sel``: hb selected by the inverted copies)."""
            if l4_early:
                return _be(l4b[off:off + n])
            c = {cls: _be(hbb[pos + off:pos + off + n]) for cls, pos in l4_pos.items()}
            return sel_x(c) if ext_sel else sel(c)

        ipl = Signal(signed(18))
        l4_end = Signal(signed(19))
        m.d.comb += [ipl.eq(sel(ipl_c)), l4_end.eq(sel(l4e_c))]
        if not l4_early:
            m.d.comb += op.eq(sel_x(op_c))

        wr_ptr = Signal(abits)
        store = Signal()
        m.d.comb += store.eq(d1_valid & d1_store)
        m.d.comb += [self.store.addr.eq(wr_ptr), self.store.data.eq(Cat(d1_data, d1_keep)),
                     self.store.en.eq(store)]
        if self.drop_on_full:
            # MR-HW-081: an overflowing frame's beats are taken back (write pointer rewound).
            fstart_reg = Signal(abits, reset_less=True)
            fstart = Mux(d1_k == 0, wr_ptr, fstart_reg)
            with m.If(d1_valid & (d1_k == 0)):
                m.d.sync += fstart_reg.eq(wr_ptr)
            m.d.sync += wr_ptr.eq(Mux(d1_valid & d1_rewind, fstart, wr_ptr + store))
        else:
            m.d.sync += wr_ptr.eq(wr_ptr + store)
        err_acc = Signal()
        mac_err = Signal()
        m.d.comb += mac_err.eq(err_acc | d1_user)
        with m.If(d1_valid):
            m.d.sync += err_acc.eq(Mux(d1_last, 0, mac_err))

        known = Signal()                    # IP length field already received
        m.d.comb += known.eq(Mux(vlan, d1_k >= ceil(24 / nbytes) - 1, d1_k >= ceil(20 / nbytes) - 1))

        load1 = Signal()
        m.d.comb += load1.eq(d1_valid & d1_last & ~d1_drop)
        frame_len = Signal(16)
        m.d.comb += frame_len.eq(d1_k * nbytes + d1_nb)

        # Fields of the snapshot, selected by class; absent headers and drops are zeroed at
        # the output (MR-HW-011/012).
        bth = [l4(wire.UDP_HLEN + i) for i in range(wire.BTH_LEN)]
        ext = [l4(wire.UDP_HLEN + wire.BTH_LEN + i, ext_sel=True) for i in range(wire.MRAH_LEN)]
        hits = {pair: op.hits[i] for i, pair in enumerate(pairs)}
        has = {}
        fields = {}
        for h in EXT_NAMES:
            val = None
            for off in EXT_OFFSETS[h]:
                f = _ext_fields(h, ext[off:off + wire.HEADER_LEN[h]])
                flat = Cat(*f.values()) if isinstance(f, dict) else f
                val = flat if val is None else Mux(hits[(h, off)], flat, val)
            has[h] = Cat(*[hits[(h, off)] for off in EXT_OFFSETS[h]]).any()
            fields[h] = val
        tc6 = by_l3(lambda o: be(o, 4))
        tos = Mux(is6, tc6[20:28], by_l3(lambda o: hbb[o + 1]))
        tci = be(14, 2)
        ipsrc = Mux(is6, by_l3(lambda o: be(o + 8, 16)), by_l3(lambda o: be(o + 12, 4)))
        ipdst = Mux(is6, by_l3(lambda o: be(o + 24, 16)), by_l3(lambda o: be(o + 16, 4)))
        pad = Signal(2)
        m.d.comb += pad.eq(bth[1][4:6])
        values = {
            "ipv6": is6, "vlan_present": vlan,
            "has": dict(has),
            "frame_len": frame_len, "payload_offset": op.pstart,
            "eth": {"dst": be(0, 6), "src": be(6, 6), "pcp": Mux(vlan, tci[13:16], 0),
                    "dei": vlan & tci[12], "vlan": Mux(vlan, tci[0:12], 0)},
            "ip": {"dscp": tos[2:8], "ecn": tos[0:2],
                   "ttl": Mux(is6, by_l3(lambda o: hbb[o + 7]), by_l3(lambda o: hbb[o + 8])),
                   "ident": Mux(is6, 0, by_l3(lambda o: be(o + 4, 2))),
                   "flow_label": Mux(is6, tc6[0:20], 0), "src": ipsrc, "dst": ipdst},
            "udp": {"sport": l4(0, 2)},
            "bth": {"opcode": bth[0], "se": bth[1][7], "mig": bth[1][6], "pad": pad,
                    "tver": bth[1][0:4], "pkey": _be(bth[2:4]), "fecn": bth[4][7],
                    "becn": bth[4][6], "dest_qp": _be(bth[5:8]), "ack_req": bth[8][7],
                    "psn": _be(bth[9:12])},
        }
        values.update({h: fields[h] for h in EXT_NAMES})
        snap = Signal(META_LAYOUT)
        m.d.comb += _assign(snap, values)
        # The meta queue (MR-HW-013): one slot per frame, written in S2 from a register (the
        # field selection and the memory write each get a cycle), read at the output.
        snap_r = Signal(META_LAYOUT, reset_less=True)
        snap_load = Signal()
        m.d.sync += [snap_r.eq(snap), snap_load.eq(load1)]
        m.d.comb += [self.fields.valid.eq(snap_load), self.fields.payload.eq(snap_r)]


        facts = {
            "vlan": vlan, "is4": is4, "is6": is6, "len": frame_len, "mac": mac_err,
            "over": d1_k >= max_beats, "ipl": ipl, "l4_end": l4_end, "pad": pad,
            "nbeats_m1": Mux(d1_k < max_beats, d1_k, max_beats - 1),
            "vihl": by_l3(lambda o: hbb[o]),
            "frag_bad": by_l3(lambda o: be(o + 6, 2))[:14] != 0,
            "proto_bad": by_l3(lambda o: hbb[o + 9]) != wire.IPPROTO_UDP,
            "nxt_bad": by_l3(lambda o: hbb[o + 6]) != wire.IPPROTO_UDP,
            "dport_bad": l4(2, 2) != wire.ROCE_PORT,
            "udp_len": l4(4, 2),
            "tver_bad": bth[1][0:4] != 0,
            "mrver_bad": ext[0][4:8] != wire.MR_VERSION,
            "op_valid": op.valid, "op_payload": op.payload, "op_mr": op.mr,
            "c_body": op.c_body, "pstart": op.pstart, "c_body_pad": op.c_body + pad,
            # What the payload bounds subtract from l4_end (MR-HW-010): ICRC, pad, and the
            # first payload byte for the length; ICRC, pad and one for the last byte.
            "sub_plen": wire.ICRC_LEN + pad + op.pstart, "sub_pend": wire.ICRC_LEN + 1 + pad,
            "has": Cat(*[has[h] for h in EXT_NAMES]),
            "known": known, "k": d1_k, "data": d1_data,
            **dict(zip(("tail", "before_end"), icrc_hw.IcrcChecker.beat_facts(width, d1_k, l4_end))),
            "words": Cat(*[by_l3(lambda o, i=i: be(o + 2 * i, 2)) for i in range(10)]),
            "frame_end": d1_last & ~d1_drop,
        }
        m.d.comb += self.facts.valid.eq(d1_valid)
        m.d.comb += _assign(self.facts.payload, facts)
        m.d.comb += self.overflow.eq(d1_valid & d1_last & d1_drop)

        # ------------------------------------------------------------ reservations (MR-HW-051)
        # tready for the next cycle: room for one more beat in the store and one more frame in
        # the meta queue after this cycle's changes.
        issue, pop = self.issue, self.pop
        space_in = store_in
        m.d.sync += space.eq(space + space_in - issue - Mux(rewind_in, fr_cnt, 0))
        slot_in = accept & s.tlast & fits
        slot_out = pop
        m.d.sync += slots.eq(slots + slot_in - slot_out)
        space_ok = Mux(space_in & ~issue, space < depth - 1, Mux(~space_in & issue, 1, space < depth))
        slot_ok = Mux(slot_in & ~slot_out, slots < mq_depth - 1,
                      Mux(~slot_in & slot_out, 1, slots < mq_depth))
        m.d.sync += tready.eq(space_ok & slot_ok)
        return m

class VerdictPipeline(wiring.Component):
    """S2 to S7 of the parser (MR-HW-050, MR-HW-020): the checks of each frame in wire order,
    the IPv4 header checksum (MR-WIRE-023), the ICRC (:class:`~metaroce.hdl.icrc.IcrcChecker`,
    MR-HW-040..044), then one verdict and one reader record per frame. No stall.

    ======== ===== ========================================================================
    port     dir   meaning
    ======== ===== ========================================================================
    i        in    stream of :func:`facts_layout`, one per beat in S1
    verdict  out   stream of :data:`VERDICT_LAYOUT`, one per frame in S7 (MR-HW-013)
    record   out   stream of :func:`record_layout`, one per frame in S7 (MR-HW-030)
    ======== ===== ========================================================================
    """

    def __init__(self, width, p, *, crc_impl="xor"):
        self.width, self.p, self.crc_impl = width, p, crc_impl
        super().__init__({
            "i": In(stream.Signature(facts_layout(width, p), always_ready=True)),
            "verdict": Out(stream.Signature(VERDICT_LAYOUT, always_ready=True)),
            "record": Out(stream.Signature(record_layout(p["kbits"]), always_ready=True)),
        })

    def elaborate(self, platform):
        m = Module()
        width, nbytes = self.width, self.p["bytes"]
        lane_bits = nbytes.bit_length() - 1
        kbits = self.p["kbits"]
        facts = self.i

        # ------------------------------------------------------------ verdict pipeline S2..S7
        # MR-HW-050: every stage is a plain register stage (no stall); each frame's checks are
        # computed as booleans, combined in order in S4..S6 (MR-HW-020).
        def stage(name, sigs):
            """Registers ``sigs`` ({name: value}) into the next stage; returns {name: reg}."""
            out = {}
            for n, v in sigs.items():
                v = Value.cast(v)
                r = Signal(v.shape(), name=f"{name}_{n}", reset_less=True)
                m.d.sync += r.eq(v)
                out[n] = r
            return out

        valid = [facts.valid & facts.payload.frame_end]
        for i in range(6):
            v = Signal(name=f"v{i + 2}_valid")
            m.d.sync += v.eq(valid[-1])
            valid.append(v)
        v2 = stage("v2", {n: getattr(facts.payload, n) for n in FACTS_NAMES})
        # The ICRC checker takes each beat in S2, from registered class and IP length
        # (MR-HW-041): it masks the beat into its register in S2, the processor takes it in S3,
        # and the compare has its own stage, S4 (MR-HW-042).
        m.submodules.icrc = chk = icrc_hw.IcrcChecker(width, impl=self.crc_impl, kbits=kbits)
        d2_valid = Signal()
        m.d.sync += d2_valid.eq(facts.valid)
        m.d.comb += [chk.i.valid.eq(d2_valid), chk.i.payload.data.eq(v2["data"]),
                     chk.i.payload.k.eq(v2["k"]), chk.i.payload.vlan.eq(v2["vlan"]),
                     chk.i.payload.ipv6.eq(v2["is6"]), chk.i.payload.known.eq(v2["known"]),
                     chk.i.payload.l4_end.eq(v2["l4_end"]), chk.i.payload.tail.eq(v2["tail"]),
                     chk.i.payload.before_end.eq(v2["before_end"])]
        rom = Array(Const(x, 32) for x in icrc_hw.residue_table(nbytes, icrc_hw.tail_fill(nbytes)))
        n_tail = Signal(lane_bits)
        m.d.comb += n_tail.eq(-v2["l4_end"][:lane_bits])
        words = [v2["words"][16 * i:16 * i + 16] for i in range(10)]
        length = v2["len"]
        v2_l3 = Mux(v2["vlan"], 18, 14)
        v2_l4 = _sel4(v2["vlan"], v2["is6"], 34, 38, 54, 58)
        T, NR, LEN = Reason.TRUNCATED, Reason.NOT_ROCE, Reason.LENGTH
        v2_ipl = v2["ipl"]
        # The payload bounds (MR-HW-010) are l4_end minus a small number, split in bytes: the
        # low byte and its borrow in S2, the high byte in S3 (no 16-bit carry chain).
        l4e_lo = v2["l4_end"][:8]
        plen_lo = Signal(9)
        pend_lo = Signal(9)
        m.d.comb += [plen_lo.eq(Cat(l4e_lo, 1) - v2["sub_plen"][:8]),
                     pend_lo.eq(Cat(l4e_lo, 1) - v2["sub_pend"])]
        # The IPv4 header checksum (MR-WIRE-023) as two byte sums, each a tree of 8..12-bit
        # adders over S2..S4: bytes 0, 2, .. of the ten words and bytes 1, 3, ...
        hi_bytes = [w[8:16] for w in words]
        lo_bytes = [w[0:8] for w in words]
        v3 = stage("v3", {
            # Checks before the IPv4 checksum (MR-WIRE-101 order), then after it.
            "hi": Cat(
                v2["mac"], v2["over"],
                length < wire.ETH_HLEN,
                v2["vlan"] & (length < wire.ETH_HLEN + wire.VLAN_HLEN),
                ~v2["is4"] & ~v2["is6"],
                v2["is4"] & (length < v2_l3 + 1),
                v2["is4"] & (v2["vihl"] != 0x45),
                v2["is4"] & (length < v2_l3 + wire.IPV4_HLEN),
                v2["is4"] & v2["frag_bad"],
                v2["is4"] & v2["proto_bad"],
                v2["is6"] & (length < v2_l3 + wire.IPV6_HLEN),
                v2["is6"] & (v2["vihl"][4:8] != 6),
                v2["is6"] & v2["nxt_bad"],
                length < v2_l4 + 4,
                v2["dport_bad"],
                length < v2_l4 + wire.UDP_HLEN),
            "lo": Cat(
                length < v2["l4_end"],
                v2["udp_len"] != v2_ipl,
                v2_ipl < wire.UDP_HLEN + wire.BTH_LEN + wire.ICRC_LEN,
                ~v2["op_valid"],
                v2["tver_bad"],
                v2["op_mr"] & (v2_ipl > wire.UDP_HLEN + wire.BTH_LEN + wire.ICRC_LEN) & v2["mrver_bad"],
                v2_ipl < v2["c_body"],
                v2_ipl < v2["c_body_pad"],
                ~v2["op_payload"] & (v2_ipl != v2["c_body"])),
            "is4": v2["is4"], "w5_ones": words[5] == 0xFFFF,
            "p_hi": Cat(*[hi_bytes[2 * i] + hi_bytes[2 * i + 1] for i in range(5)]),
            "p_lo": Cat(*[lo_bytes[2 * i] + lo_bytes[2 * i + 1] for i in range(5)]),
            "res": rom[n_tail], "has": v2["has"], "nbeats_m1": v2["nbeats_m1"],
            "pstart": v2["pstart"], "l4e_hi": v2["l4_end"][8:16],
            "plen_lo": plen_lo[:8], "plen_borrow": ~plen_lo[8], "plen_sub_hi": v2["sub_plen"][8],
            "pend_lo": pend_lo[:8], "pend_borrow": ~pend_lo[8],
        })
        hi_codes = [Reason.MAC_ERROR, LEN, T, T, NR, T, NR, T, NR, NR, T, NR, NR, T, NR, T]
        lo_codes = [T, LEN, LEN, Reason.BAD_OPCODE, Reason.BAD_VERSION, Reason.BAD_VERSION,
                    LEN, LEN, LEN]
        hi_any, hi_code = _first_set(m, "hi", [(v3["hi"][i], c) for i, c in enumerate(hi_codes)])
        lo_any, lo_code = _first_set(m, "lo", [(v3["lo"][i], c) for i, c in enumerate(lo_codes)])
        p_hi = [v3["p_hi"][9 * i:9 * i + 9] for i in range(5)]
        p_lo = [v3["p_lo"][9 * i:9 * i + 9] for i in range(5)]
        payload_len = Signal(16)
        pend_incl = Signal(16)
        m.d.comb += [
            payload_len.eq(Cat(v3["plen_lo"],
                               v3["l4e_hi"] - v3["plen_sub_hi"] - v3["plen_borrow"])),
            pend_incl.eq(Cat(v3["pend_lo"], v3["l4e_hi"] - v3["pend_borrow"]))]
        v4 = stage("v4", {
            "hi_any": hi_any, "hi_code": hi_code, "lo_any": lo_any, "lo_code": lo_code,
            "res": v3["res"], "is4": v3["is4"], "w5_ones": v3["w5_ones"],
            "q0_hi": p_hi[0] + p_hi[1], "q1_hi": p_hi[2] + p_hi[3], "q2_hi": p_hi[4],
            "q0_lo": p_lo[0] + p_lo[1], "q1_lo": p_lo[2] + p_lo[3], "q2_lo": p_lo[4],
            "has": v3["has"], "nbeats_m1": v3["nbeats_m1"], "pstart": v3["pstart"],
            "pend_incl": pend_incl, "plen": payload_len,
        })
        v5 = stage("v5", {
            **{n: v4[n] for n in ("hi_any", "hi_code", "lo_any", "lo_code", "is4",
                                  "w5_ones", "has", "nbeats_m1", "pstart", "pend_incl", "plen")},
            "crc_bad": chk.crc != v4["res"],
            "sum_hi": (v4["q0_hi"] + v4["q1_hi"] + v4["q2_hi"])[:12],
            "sum_lo": (v4["q0_lo"] + v4["q1_lo"] + v4["q2_lo"])[:12],
        })
        # IPv4 header checksum exactly as codec.ipv4_checksum_ok (MR-WIRE-023): with T the
        # sum of all ten words, the folded sum of the other nine is ~checksum iff T is 0xFFFF,
        # or the checksum is not 0xFFFF and T is 2..9 times 0xFFFF. T = 256 sum_hi + sum_lo,
        # compared without adding them.
        total = (Cat(Const(0, 8), v5["sum_hi"]), v5["sum_lo"])
        multiples = Cat(*[_sum_is(*total, n * 0xFFFF, 20) for n in range(2, 10)]).any()
        ck_ok = _sum_is(*total, 0xFFFF, 20) | (~v5["w5_ones"] & multiples)
        v6 = stage("v6", {
            **{n: v5[n] for n in ("hi_any", "hi_code", "lo_any", "lo_code", "crc_bad",
                                  "has", "nbeats_m1", "pstart", "pend_incl", "plen")},
            "ip_bad": v5["is4"] & ~ck_ok, "plen_nz": v5["plen"] != 0,
            # The payload's first and last beat are beat 0, for the reader's flags.
            "ps_beat0": v5["pstart"][lane_bits:] == 0, "pe_beat0": v5["pend_incl"][lane_bits:] == 0,
        })
        reason = Mux(v6["hi_any"], v6["hi_code"],
                     Mux(v6["ip_bad"], Reason.BAD_IP,
                         Mux(v6["lo_any"], v6["lo_code"],
                             Mux(v6["crc_bad"], Reason.ICRC, Reason.NONE))))
        drop_fields = v6["hi_any"] | v6["ip_bad"] | v6["lo_any"]
        action = Mux(v6["hi_any"] & (v6["hi_code"] == NR), ACT_BYPASS,
                     Mux(~drop_fields & ~v6["crc_bad"] & v6["plen_nz"], ACT_PAYLOAD, ACT_DISCARD))
        pay = action == ACT_PAYLOAD
        v7 = stage("v7", {
            "reason": reason, "drop_fields": drop_fields,
            "zero": Cat(*[drop_fields | ~v6["has"][i] for i in range(len(EXT_NAMES))]),
            "plen": Mux(drop_fields, 0, v6["plen"]),
            "rec": Cat(action.as_unsigned()[:2], v6["nbeats_m1"],
                       Mux(pay, Cat(v6["pstart"], Const(0, 8), v6["pend_incl"]), 0),
                       v6["nbeats_m1"] == 0, ~pay | v6["ps_beat0"], ~pay | v6["pe_beat0"]),
        })

        m.d.comb += [self.verdict.valid.eq(valid[6]), self.verdict.payload.reason.eq(v7["reason"]),
                     self.verdict.payload.drop_fields.eq(v7["drop_fields"]),
                     self.verdict.payload.zero.eq(v7["zero"]), self.verdict.payload.plen.eq(v7["plen"]),
                     self.record.valid.eq(valid[6]), self.record.payload.eq(v7["rec"])]
        return m

class MetaOutput(wiring.Component):
    """The meta queue and the ``m_meta`` output (MR-HW-010..013): a frame's fields wait in the
    meta queue (read synchronously, one cycle ahead: a block RAM) for its verdict; the head verdict is held in registers; the
    output register loads the fields, zeroed as the verdict says, or skips a bypassed frame.

    ======== ===== ========================================================================
    port     dir   meaning
    ======== ===== ========================================================================
    fields   in    stream of :data:`META_LAYOUT`, one per frame (from S1, registered)
    verdict  in    stream of :data:`VERDICT_LAYOUT`, one per frame (from S7)
    o        out   the parser's ``m_meta`` (payload, valid, ready), registered (MR-HW-055)
    pop      out   a meta-queue slot is freed (for the reservations, MR-HW-051)
    ======== ===== ========================================================================
    """
    fields: In(stream.Signature(META_LAYOUT, always_ready=True))
    verdict: In(stream.Signature(VERDICT_LAYOUT, always_ready=True))
    o: Out(stream.Signature(META_LAYOUT))
    pop: Out(1)

    def elaborate(self, platform):
        m = Module()
        mq_depth = META_DEPTH
        mq_bits = mq_depth.bit_length() - 1
        mo = self.o
        NR = Reason.NOT_ROCE

        # The meta queue (MR-HW-013): one slot per frame, written from the registered fields.
        # A slot is never read in the cycle it is written (below), so a read that meets a write
        # of its row may read anything: the ECP5 build then adds no collision logic (MR-FLOW-028).
        mq_mem = memory.Memory(shape=unsigned(META_LAYOUT.size), depth=mq_depth, init=[],
                               attrs={"metaroce_collision": "x"})
        m.submodules.meta_queue = mq_mem
        mq_wp = mq_mem.write_port()
        # Read synchronously at the next head slot (MR-HW-013): a slot is read only once its
        # frame's verdict is in the head registers, cycles after its write, so the data equals
        # an asynchronous read at the head slot, and the queue can be a block RAM (MR-FLOW-026).
        mq_rp = mq_mem.read_port(domain="sync", transparent_for=())
        mq_wr = Signal(mq_bits)
        m.d.comb += [mq_wp.addr.eq(mq_wr), mq_wp.data.eq(self.fields.payload.as_value()),
                     mq_wp.en.eq(self.fields.valid)]
        with m.If(self.fields.valid):
            m.d.sync += mq_wr.eq(mq_wr + 1)

        # Verdicts for the meta queue, slot by slot.
        vq_layout = VERDICT_LAYOUT
        vq_mem = memory.Memory(shape=vq_layout, depth=mq_depth, init=[])
        m.submodules.verdict_queue = vq_mem
        vq_wp = vq_mem.write_port()
        vq_rp = vq_mem.read_port(domain="comb")
        vq_wr = Signal(mq_bits)
        m.d.comb += [vq_wp.addr.eq(vq_wr), vq_wp.en.eq(self.verdict.valid),
                     vq_wp.data.eq(self.verdict.payload)]
        with m.If(self.verdict.valid):
            m.d.sync += vq_wr.eq(vq_wr + 1)


        # ------------------------------------------------------------ meta output (MR-HW-013)
        # The head verdict is held in registers (hd), so that the output register's load and
        # zero conditions come from flip-flops; the meta queue is read at the head's slot.
        mq_rd = Signal(mq_bits)              # slot of the head
        vq_rd = Signal(mq_bits)              # next verdict after the head
        m.d.comb += vq_rp.addr.eq(vq_rd)
        hd_valid = Signal()
        hd = Signal(vq_layout, reset_less=True)
        hd_bypass = Signal(reset_less=True)
        skip = Signal()
        take = Signal()
        meta_valid = Signal()
        meta_out = Signal(META_LAYOUT, reset_less=True)
        m.d.comb += [skip.eq(hd_valid & hd_bypass),
                     take.eq(hd_valid & ~hd_bypass & (~meta_valid | mo.ready))]
        pop = skip | take
        load_hd = (vq_rd != vq_wr) & (~hd_valid | pop)
        # Pointers count under an enable: a late enable is then not the carry-in of the chain.
        with m.If(pop):
            m.d.sync += mq_rd.eq(mq_rd + 1)
        m.d.comb += mq_rp.addr.eq(Mux(pop, mq_rd + 1, mq_rd))
        with m.If(load_hd):
            m.d.sync += vq_rd.eq(vq_rd + 1)
        m.d.sync += hd_valid.eq(load_hd | (hd_valid & ~pop))
        with m.If(load_hd):
            m.d.sync += [hd.eq(vq_rp.data), hd_bypass.eq(vq_rp.data.reason == NR)]
        m.d.sync += meta_valid.eq(take | (meta_valid & ~mo.ready))
        m.d.comb += [mo.valid.eq(meta_valid), mo.payload.eq(meta_out)]
        q = Signal(META_LAYOUT)
        m.d.comb += q.eq(mq_rp.data)
        with m.If(take):
            m.d.sync += [meta_out.drop.eq(hd.reason != Reason.NONE),
                         meta_out.reason.eq(hd.reason), meta_out.payload_len.eq(hd.plen)]
        # Zeroing as reset-over-enable: one shared condition per group, from the head.
        for key in FIELD_GROUPS:
            if key in EXT_NAMES:
                zero = take & hd.zero[EXT_NAMES.index(key)]
            else:
                zero = take & hd.drop_fields
            with m.If(zero):
                m.d.sync += getattr(meta_out, key).eq(0)
            with m.Elif(take):
                m.d.sync += getattr(meta_out, key).eq(getattr(q, key))
        m.d.comb += self.pop.eq(pop)
        return m

class Reader(wiring.Component):
    """The reader (MR-HW-030..033): takes each frame's record, reads its beats from the frame
    store at one beat per cycle, and sends payload beats to ``payload`` (tkeep trimmed to the
    payload bytes) and bypassed frames to ``bypass``, through registered outputs (MR-HW-055).

    ======== ===== ========================================================================
    port     dir   meaning
    ======== ===== ========================================================================
    record   in    stream of :func:`record_layout`, one per frame (from S7)
    store    out   frame store read port (synchronous: data one cycle after en)
    payload  out   AXI4-Stream source, the parser's ``m_payload``
    bypass   out   AXI4-Stream source, the parser's ``m_bypass``
    issue    out   a beat is read out of the store (for the reservations, MR-HW-051)
    ======== ===== ========================================================================
    """

    def __init__(self, width, p):
        self.width, self.p = width, p
        super().__init__({
            "record": In(stream.Signature(record_layout(p["kbits"]), always_ready=True)),
            "store": Out(memory.ReadPort.Signature(addr_width=p["abits"],
                                                   shape=unsigned(width + p["bytes"])).flip()),
            "payload": Out(axis_signature(width)),
            "bypass": Out(axis_signature(width)),
            "issue": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        width, nbytes = self.width, self.p["bytes"]
        lane_bits = nbytes.bit_length() - 1
        depth, abits, kbits = self.p["depth"], self.p["abits"], self.p["kbits"]

        # ------------------------------------------------------------ reader (MR-HW-030)
        rec_layout = record_layout(kbits)
        rec_mem = memory.Memory(shape=rec_layout, depth=depth, init=[])
        m.submodules.frame_rec = rec_mem
        rwp = rec_mem.write_port()
        rrp = rec_mem.read_port(domain="sync")
        rq_wr = Signal(abits + 1)
        rq_rd = Signal(abits + 1)
        m.d.comb += [rwp.addr.eq(rq_wr[:abits]), rwp.en.eq(self.record.valid),
                     rwp.data.eq(self.record.payload)]
        with m.If(self.record.valid):
            m.d.sync += rq_wr.eq(rq_wr + 1)

        mp, mb = self.payload, self.bypass
        o_pvalid, o_bvalid = Signal(), Signal()
        o_data = Signal(width, reset_less=True)
        o_keep_p = Signal(nbytes, reset_less=True)
        o_keep_b = Signal(nbytes, reset_less=True)
        o_last = Signal(reset_less=True)
        m.d.comb += [mp.tdata.eq(o_data), mp.tkeep.eq(o_keep_p), mp.tlast.eq(o_last),
                     mp.tvalid.eq(o_pvalid),
                     mb.tdata.eq(o_data), mb.tkeep.eq(o_keep_b), mb.tlast.eq(o_last),
                     mb.tvalid.eq(o_bvalid)]
        s_valid = Signal()
        s_kind = Signal(2, reset_less=True)         # ACT_* of the beat (discard: not sent)
        s_keep = Signal(nbytes, reset_less=True)
        s_last = Signal(reset_less=True)
        a_valid = Signal()                           # rrp.data holds the next record
        cur_valid = Signal()
        cur = Signal(rec_layout, reset_less=True)
        rd_ptr = Signal(abits)

        o_free = Signal()
        m.d.comb += o_free.eq(~(o_pvalid | o_bvalid) | (o_pvalid & mp.tready) | (o_bvalid & mb.tready))
        s_move = Signal()
        m.d.comb += s_move.eq(s_valid & (o_free | (s_kind == ACT_DISCARD)))
        issue = Signal()
        m.d.comb += issue.eq(cur_valid & (~s_valid | s_move))
        # is_last == (ri == cur.last), kept in a register with a down-counter of the beats left.
        is_last = Signal(reset_less=True)
        left = Signal(kbits, reset_less=True)
        take_rec = Signal()
        m.d.comb += take_rec.eq(a_valid & (~cur_valid | (issue & is_last)))
        rec_rd = Signal()
        m.d.comb += rec_rd.eq((rq_rd != rq_wr) & (~a_valid | take_rec))
        m.d.comb += [rrp.addr.eq(rq_rd[:abits]), rrp.en.eq(rec_rd),
                     self.store.addr.eq(rd_ptr), self.store.en.eq(issue)]
        with m.If(rec_rd):
            m.d.sync += rq_rd.eq(rq_rd + 1)
        with m.If(issue):
            m.d.sync += rd_ptr.eq(rd_ptr + 1)
        m.d.sync += a_valid.eq(rec_rd | (a_valid & ~take_rec))
        # The beat being issued against the payload bounds, as flags: with ri the beat index,
        # at_ps == (ri == first payload beat), at_pe == (ri == last), ge_ps == (ri >= first),
        # le_pe == (ri <= last), kept from down-counters of the beats left to each bound (no
        # comparator after the record register). For beat 0 (``fresh``) they are the record's
        # own ps0/pe0 bits, loaded without logic (a BRAM output goes straight to a register).
        ps_left, pe_left = (Signal(16 - lane_bits, name=n, reset_less=True)
                            for n in ("ps_left", "pe_left"))
        fresh = Signal(reset_less=True)
        ps0, pe0 = Signal(reset_less=True), Signal(reset_less=True)
        at_ps_n, at_pe_n, ge_ps_n, le_pe_n = (Signal(name=n, reset_less=True)
                                              for n in ("at_ps_n", "at_pe_n", "ge_ps_n", "le_pe_n"))
        at_ps, at_pe = Mux(fresh, ps0, at_ps_n), Mux(fresh, pe0, at_pe_n)
        ge_ps, le_pe = Mux(fresh, ps0, ge_ps_n), Mux(fresh, 1, le_pe_n)
        with m.If(take_rec):
            m.d.sync += [ps0.eq(rrp.data.ps0), pe0.eq(rrp.data.pe0)]
        with m.If(take_rec):
            m.d.sync += [cur.eq(rrp.data), cur_valid.eq(1),
                         left.eq(rrp.data.last), is_last.eq(rrp.data.single),
                         ps_left.eq(rrp.data.pstart[lane_bits:]),
                         pe_left.eq(rrp.data.pend_incl[lane_bits:]), fresh.eq(1)]
        with m.Elif(issue):
            m.d.sync += [left.eq(left - 1), is_last.eq(left == 1),
                         ps_left.eq(ps_left - 1), pe_left.eq(pe_left - 1), fresh.eq(0),
                         at_ps_n.eq(ps_left == 1), at_pe_n.eq(pe_left == 1),
                         ge_ps_n.eq(ge_ps | (ps_left == 1)), le_pe_n.eq(le_pe & ~at_pe)]
            with m.If(is_last):
                m.d.sync += cur_valid.eq(0)

        ps_lane, pe_lane = cur.pstart[:lane_bits], cur.pend_incl[:lane_bits]
        keep_p = Cat(*[(~at_ps | (lane >= ps_lane)) & (~at_pe | (lane <= pe_lane))
                       for lane in range(nbytes)])
        kind = Mux(cur.action == ACT_BYPASS, ACT_BYPASS,
                   Mux((cur.action == ACT_PAYLOAD) & ge_ps & le_pe, ACT_PAYLOAD, ACT_DISCARD))
        with m.If(issue):
            m.d.sync += [s_valid.eq(1), s_kind.eq(kind), s_keep.eq(keep_p),
                         s_last.eq(Mux(cur.action == ACT_BYPASS, is_last, at_pe))]
        with m.Elif(s_move):
            m.d.sync += s_valid.eq(0)
        with m.If(s_move & (s_kind != ACT_DISCARD)):
            m.d.sync += [o_data.eq(self.store.data[:width]), o_keep_b.eq(self.store.data[width:]),
                         o_keep_p.eq(s_keep), o_last.eq(s_last),
                         o_pvalid.eq(s_kind == ACT_PAYLOAD), o_bvalid.eq(s_kind == ACT_BYPASS)]
        with m.Elif(o_free):
            m.d.sync += [o_pvalid.eq(0), o_bvalid.eq(0)]
        m.d.comb += self.issue.eq(issue)
        return m

class Parser(wiring.Component):
    """RX parser (MR-HW-001..082): :class:`Front`, :class:`VerdictPipeline`,
    :class:`MetaOutput` and :class:`Reader` joined with ``wiring.connect``, the frame store
    between the front and the reader, the counters (MR-HW-060). See the module docstring for
    the ports, the pipeline and the structure."""

    def __init__(self, width=512, *, max_frame=9216, crc_impl="xor", drop_on_full=False):
        try:
            p = params(width, max_frame)
            if crc_impl not in ("lib", "xor"):
                raise ValueError(f"crc_impl must be 'lib' or 'xor', not {crc_impl!r}")
            if not isinstance(drop_on_full, bool):
                raise ValueError(f"drop_on_full must be a bool, not {drop_on_full!r}")
        except ValueError:
            self._MustUse__silence = True   # a rejected design is not an unused one
            raise
        self.crc_impl = crc_impl
        self.drop_on_full = drop_on_full
        self.width = width
        self.max_frame = max_frame
        self.p = p
        super().__init__({
            "s_axis": In(axis_signature(width, user=True)),
            "m_meta": Out(meta_signature()),
            "m_payload": Out(axis_signature(width)),
            "m_bypass": Out(axis_signature(width)),
            "reg_addr": In(4),
            "reg_data": Out(COUNTER_BITS),
        })

    def elaborate(self, platform):
        m = Module()
        width, p = self.width, self.p
        m.submodules.front = front = Front(width, p, drop_on_full=self.drop_on_full)
        m.submodules.verdicts = verdicts = VerdictPipeline(width, p, crc_impl=self.crc_impl)
        m.submodules.meta = meta = MetaOutput()
        m.submodules.reader = reader = Reader(width, p)
        # The frame store (MR-HW-030): S1 writes, the reader reads.
        m.submodules.frame_store = store = memory.Memory(
            shape=unsigned(width + p["bytes"]), depth=p["depth"], init=[])
        wiring.connect(m, wiring.flipped(self.s_axis), front.s_axis)
        wiring.connect(m, front.store, store.write_port())
        wiring.connect(m, reader.store, store.read_port(domain="sync"))
        wiring.connect(m, front.facts, verdicts.i)
        wiring.connect(m, front.fields, meta.fields)
        wiring.connect(m, verdicts.verdict, meta.verdict)
        wiring.connect(m, verdicts.record, reader.record)
        wiring.connect(m, meta.o, wiring.flipped(self.m_meta))
        wiring.connect(m, reader.payload, wiring.flipped(self.m_payload))
        wiring.connect(m, reader.bypass, wiring.flipped(self.m_bypass))
        m.d.comb += [front.issue.eq(reader.issue), front.pop.eq(meta.pop)]

        # S7: counters (MR-HW-060) and their read port.
        # MR-HW-060: 64-bit counters, one per Reason code.
        # MR-HW-100: the reason counters in LUT RAM, a verdict's read-modify-write of its row
        assert N_REASON_COUNTERS <= OVERFLOW_COUNTER < N_COUNTERS <= 16
        # 8-bit pieces: a piece's + 1 and its carry's select within 2 LUT levels of the memory
        # (16-bit pieces: 7 levels in MR-FLOW-010's flow, 5 on main)
        value = counter_ram(m, verdicts.verdict.valid, verdicts.verdict.payload.reason,
                             self.reg_addr, 16, COUNTER_BITS, piece=8)
        if self.drop_on_full:
            # MR-HW-082: frames dropped on overflow, counted when their last beat is in S1 (in
            # the cycle of a verdict too: a register of its own)
            ovf_cnt = wide_counter(m, f"cnt{OVERFLOW_COUNTER}", COUNTER_BITS, front.overflow)
            value = Mux(self.reg_addr == OVERFLOW_COUNTER, ovf_cnt, value)
        # rows N_REASON_COUNTERS.. are never written: they read 0 (address 9 without drop_on_full)
        m.d.sync += self.reg_data.eq(value)

        return m
