"""RX parser: Ethernet / 802.1Q / IPv4 / IPv6 / UDP 4791 / BTH / RoCEv2 and MetaRoCE
extension headers, ICRC at line rate, drop with a reason (docs/spec/hw-parser.md, MR-HW-*).

``Parser(width=512, *, max_frame=9216, crc_impl="lib")``; ``width`` in {64, 128, 256, 512}
(MR-HW-001). ``crc_impl="xor"`` swaps lib.crc's processor for an equal one that the Amaranth
simulator runs faster (tests only).

Verilog ports (``amaranth.back.verilog.convert(Parser(w))``, MR-HW-002):

===================== ===== ===============================================================
port                  dir   meaning
===================== ===== ===============================================================
clk, rst              in    clock, synchronous reset (active high)
s_axis__tdata [W]     in    frame bytes, byte 0 of the frame in tdata[7:0]
s_axis__tkeep [W/8]   in    packed: all ones except on the last beat (run of ones from lane 0)
s_axis__tvalid        in
s_axis__tready        out
s_axis__tlast         in
s_axis__tuser         in    MAC error (any beat of the frame)
m_meta__data [1438]   out   :data:`META_LAYOUT` (MR-HW-010), one record per non-bypassed frame
m_meta__valid         out
m_meta__ready         in
m_payload__tdata [W]  out   payload of accepted frames, byte lanes as in the input frame
m_payload__tkeep      out   exactly the payload bytes (first/last beat partial)
m_payload__tvalid     out
m_payload__tready     in
m_payload__tlast      out
m_bypass__t*          out/in non-RoCE frames, intact (same tdata, tkeep, beats)
reg_addr [4]          in    counter index = models.wire.Reason code (0 accepted, 8 bypassed)
reg_data [32]         out   counter value, one cycle after reg_addr
===================== ===== ===============================================================

Golden model: :class:`metaroce.models.parser.ParserModel(width)` with ``step(inputs) ->
outputs`` (all ports above by name except clk; ``m_meta__data`` as a flat int), called once
per clock; ``ParserModel.meta_to_dict(int)``; ``ParserModel.port_names()``.

Pipeline (MR-HW-050): S0 accepts a beat into the header buffer ``hb`` (first 128 bytes of the
frame) and the register ``d1``; S1 writes ``d1`` into the frame store, masks it into the ICRC
register and, on the last beat, snapshots the parsed fields and the pre-ICRC verdict; S2 feeds
the CRC; S3 adds the ICRC verdict, loads the meta register (valid 4 cycles after the frame's
last beat), counts, and commits the frame to the reader, which sends it to ``m_bypass``, to
``m_payload`` (accepted frames, payload bytes only) or drops it. Store and forward: nothing of
a frame leaves before its verdict (MR-HW-030).
"""
from math import ceil

from amaranth.hdl import Array, Cat, Const, Module, Mux, Signal, signed, unsigned
from amaranth.lib import data, memory, wiring
from amaranth.lib.wiring import In, Out

from ..models import wire
from ..models.parser import (ACT_BYPASS, ACT_DISCARD, ACT_PAYLOAD, EXT_NAMES, HB,
                             META_LAYOUT, params)
from ..models.wire import Op, Reason
from . import icrc as icrc_hw

__all__ = ["Parser", "axis_signature", "meta_signature"]

def axis_signature(width, *, user=False):
    """AXI4-Stream source signature (flip it for a sink)."""
    members = {"tdata": Out(width), "tkeep": Out(width // 8), "tvalid": Out(1),
               "tready": In(1), "tlast": Out(1)}
    if user:
        members["tuser"] = Out(1)
    return wiring.Signature(members)


def meta_signature():
    return wiring.Signature({"data": Out(META_LAYOUT), "valid": Out(1), "ready": In(1)})


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


class Parser(wiring.Component):
    """RX parser (MR-HW-001..060). See the module docstring for ports and pipeline."""

    def __init__(self, width=512, *, max_frame=9216, crc_impl="lib"):
        try:
            p = params(width, max_frame)
            if crc_impl not in ("lib", "xor"):
                raise ValueError(f"crc_impl must be 'lib' or 'xor', not {crc_impl!r}")
        except ValueError:
            self._MustUse__silence = True   # a rejected design is not an unused one
            raise
        self.crc_impl = crc_impl
        self.width = width
        self.max_frame = max_frame
        self.p = p
        super().__init__({
            "s_axis": In(axis_signature(width, user=True)),
            "m_meta": Out(meta_signature()),
            "m_payload": Out(axis_signature(width)),
            "m_bypass": Out(axis_signature(width)),
            "reg_addr": In(4),
            "reg_data": Out(32),
        })

    def elaborate(self, platform):
        m = Module()
        W, B = self.width, self.p["bytes"]
        LB = B.bit_length() - 1             # log2(bytes per beat)
        MAXB, D, AB, KB = self.p["max_beats"], self.p["depth"], self.p["abits"], self.p["kbits"]
        NBB = (B).bit_length()              # bits of a byte count 0..B
        s, mo = self.s_axis, self.m_meta

        # ---------------------------------------------------------------- flow control
        wr_ptr = Signal(AB + 1)
        rd_ptr = Signal(AB + 1)
        commit_ptr = Signal(AB + 1)
        used = Signal(AB + 1)
        m.d.comb += used.eq(wr_ptr - rd_ptr)
        s2_valid = Signal()
        s3_valid = Signal()
        meta_valid = Signal()
        # MR-HW-051: the only stall is a full meta register with a frame waiting behind it.
        adv = Signal()
        m.d.comb += adv.eq(~(meta_valid & ~mo.ready & s3_valid))
        m.d.comb += s.tready.eq(adv & (used <= D - 2))
        accept = Signal()
        m.d.comb += accept.eq(s.tvalid & s.tready)

        # ---------------------------------------------------------------- S0: accept
        k = Signal(KB)                      # beat index in the frame, saturates at MAXB
        nb_in = Signal(range(B + 1))        # bytes in this beat: run of ones of tkeep from lane 0
        m.d.comb += nb_in.eq(Mux(s.tlast, _first_zero(s.tkeep, B), B))

        # Header buffer: byte j holds frame byte j once received. Bytes at or after the frame
        # length are stale (tkeep-masked lanes, earlier frames) but never decide anything: every
        # check that reads a field comes after the length check that covers it (MR-HW-022).
        hb = Signal(HB * 8, reset_less=True)
        hbb = [hb.word_select(j, 8) for j in range(HB)]
        with m.If(accept):
            for j in range(HB):
                beat, lane = divmod(j, B)
                with m.If(k == beat):
                    m.d.sync += hbb[j].eq(s.tdata.word_select(lane, 8))
            m.d.sync += k.eq(Mux(s.tlast, 0, Mux(k == MAXB, MAXB, k + 1)))

        d1_valid = Signal()
        d1_data = Signal(W, reset_less=True)
        d1_nb = Signal(range(B + 1), reset_less=True)
        d1_last = Signal(reset_less=True)
        d1_k = Signal(KB, reset_less=True)
        d1_user = Signal(reset_less=True)
        with m.If(adv):
            m.d.sync += d1_valid.eq(accept)
            with m.If(accept):
                m.d.sync += [d1_data.eq(s.tdata), d1_nb.eq(nb_in), d1_last.eq(s.tlast),
                             d1_k.eq(k), d1_user.eq(s.tuser)]

        # ---------------------------------------------------------------- header decode (comb, from hb)
        def be(off, n):
            return _be(hbb[off:off + n])

        etype0 = be(12, 2)
        vlan = Signal()
        m.d.comb += vlan.eq(etype0 == wire.VLAN_TPID)
        etype = Mux(vlan, be(16, 2), etype0)
        is4, is6 = Signal(), Signal()
        m.d.comb += [is4.eq(etype == wire.ETHERTYPE_IPV4), is6.eq(etype == wire.ETHERTYPE_IPV6)]

        def by_l3(fn):
            return Mux(vlan, fn(18), fn(14))

        def by_l4(fn):
            # l3 in {14, 18}; l4 = l3 + 20 (IPv4) or l3 + 40 (IPv6; chosen whenever not IPv4).
            return Mux(is6, Mux(vlan, fn(58), fn(54)), Mux(vlan, fn(38), fn(34)))

        l3 = Signal(5)
        l4 = Signal(6)
        m.d.comb += [l3.eq(Mux(vlan, 18, 14)), l4.eq(l3 + Mux(is6, 40, 20))]
        tot_len = Signal(16)
        plen = Signal(16)
        m.d.comb += [tot_len.eq(by_l3(lambda o: be(o + 2, 2))), plen.eq(by_l3(lambda o: be(o + 4, 2)))]
        ipl = Signal(signed(18))            # IP payload length (may be negative: tot_len < 20)
        m.d.comb += ipl.eq(Mux(is6, plen, tot_len - wire.IPV4_HLEN))
        l4_end = Signal(signed(19))
        m.d.comb += l4_end.eq(l4 + ipl)

        # ---------------------------------------------------------------- S1: store, ICRC, snapshot
        go1 = Signal()
        m.d.comb += go1.eq(adv & d1_valid)
        wp_mem = memory.Memory(shape=unsigned(W + NBB), depth=D, init=[])
        rec_layout = data.StructLayout({"action": 2, "nbeats": KB + 1, "pstart": 16, "pend_incl": 16})
        rec_mem = memory.Memory(shape=rec_layout, depth=D, init=[])
        m.submodules.frame_store = wp_mem
        m.submodules.frame_rec = rec_mem
        dwp = wp_mem.write_port()
        drp = wp_mem.read_port(domain="sync")
        rwp = rec_mem.write_port()
        rrp = rec_mem.read_port(domain="sync")

        store = Signal()
        m.d.comb += store.eq(go1 & (d1_k < MAXB))
        m.d.comb += [dwp.addr.eq(wr_ptr[:AB]), dwp.data.eq(Cat(d1_data, d1_nb)), dwp.en.eq(store)]
        m.d.sync += wr_ptr.eq(wr_ptr + store)
        fstart_reg = Signal(AB + 1, reset_less=True)
        fstart = Signal(AB + 1)
        m.d.comb += fstart.eq(Mux(d1_k == 0, wr_ptr, fstart_reg))
        with m.If(go1 & (d1_k == 0)):
            m.d.sync += fstart_reg.eq(wr_ptr)
        err_acc = Signal()
        mac_err = Signal()
        m.d.comb += mac_err.eq(err_acc | d1_user)
        with m.If(go1):
            m.d.sync += err_acc.eq(Mux(d1_last, 0, mac_err))

        # ICRC (MR-HW-040..044): S1 masks d1 into the checker's register, S2 feeds it.
        m.submodules.icrc = chk = icrc_hw.IcrcChecker(W, impl=self.crc_impl, kbits=KB)
        known = Signal()                    # IP length field already in hb
        m.d.comb += known.eq((d1_k + 1) * B >= l3 + 6)
        l4e_u = Signal(16)
        m.d.comb += l4e_u.eq(l4_end[:16])
        m.d.comb += [chk.en.eq(adv), chk.valid.eq(d1_valid), chk.data.eq(d1_data), chk.k.eq(d1_k),
                     chk.vlan.eq(vlan), chk.ipv6.eq(is6), chk.known.eq(known), chk.l4_end.eq(l4_end)]

        # Snapshot of fields and the pre-ICRC verdict (MR-HW-020).
        L = Signal(16)
        m.d.comb += L.eq(d1_k * B + d1_nb)
        # Data registers carry no reset (their valid bits do), so the FFs' reset pins can
        # zero fields for free (MR-HW-012).
        snap = Signal(META_LAYOUT, reset_less=True)
        s2_pre = Signal(4, reset_less=True)
        s2_res = Signal(32, reset_less=True)
        s2_fstart = Signal(AB + 1, reset_less=True)
        s2_fend = Signal(AB + 1, reset_less=True)
        s2_nbeats = Signal(KB + 1, reset_less=True)
        s2_pstart = Signal(16, reset_less=True)
        s2_pend_incl = Signal(16, reset_less=True)

        bth = [by_l4(lambda o, i=i: hbb[o + 8 + i]) for i in range(wire.BTH_LEN)]
        ext = [by_l4(lambda o, i=i: hbb[o + 20 + i]) for i in range(wire.MRAH_LEN)]
        opcode = Signal(8)
        m.d.comb += opcode.eq(bth[0])
        pad = Signal(2)
        tver = Signal(4)
        m.d.comb += [pad.eq(bth[1][4:6]), tver.eq(bth[1][0:4])]

        valid_op, payload_op, is_mr = Signal(), Signal(), Signal()
        hlen = Signal(8)
        with m.Switch(opcode):
            for op in Op:
                with m.Case(int(op)):
                    m.d.comb += [valid_op.eq(1), hlen.eq(wire.ext_len(op)),
                                 payload_op.eq(op in wire.PAYLOAD_OPS), is_mr.eq(op in wire.MR_OPS)]

        has = {}
        fields = {}
        for h in EXT_NAMES:
            present = Const(0, 1)
            val = None
            for off, ops in EXT_OFFSETS[h].items():
                hit = Signal(name=f"{h}_at{off}")
                m.d.comb += hit.eq(Cat(*[opcode == o for o in ops]).any())
                present = present | hit
                f = _ext_fields(h, ext[off:off + wire.HEADER_LEN[h]])
                flat = Cat(*f.values()) if isinstance(f, dict) else f
                val = flat if val is None else Mux(hit, flat, val)
            has[h] = Signal(name=f"has_{h}")
            m.d.comb += has[h].eq(present)
            fields[h] = val

        udp_len = by_l4(lambda o: be(o + 4, 2))
        dport = by_l4(lambda o: be(o + 2, 2))
        # IPv4 header checksum exactly as codec.ipv4_checksum_ok (MR-WIRE-023).
        words = [by_l3(lambda o, i=i: be(o + 2 * i, 2)) for i in range(10)]
        csum = Signal(20)
        m.d.comb += csum.eq(sum(words[i] for i in range(10) if i != 5))
        f1 = Signal(17)
        m.d.comb += f1.eq(csum[:16] + csum[16:])
        f2 = Signal(16)
        m.d.comb += f2.eq(f1[:16] + f1[16])
        ck_ok = Signal()
        m.d.comb += ck_ok.eq((~f2)[:16] == words[5])

        # First failing check in wire order decides (codec.decode, MR-WIRE-100; MR-HW-020).
        vihl = by_l3(lambda o: hbb[o])
        frag = by_l3(lambda o: be(o + 6, 2))
        proto = by_l3(lambda o: hbb[o + 9])
        nxt = by_l3(lambda o: hbb[o + 6])
        body = Signal(signed(19))
        m.d.comb += body.eq(ipl - (wire.BTH_LEN + wire.UDP_HLEN + wire.ICRC_LEN) - hlen)
        T, NR, LEN = Reason.TRUNCATED, Reason.NOT_ROCE, Reason.LENGTH
        chain = [
            (mac_err, Reason.MAC_ERROR),
            (d1_k >= MAXB, LEN),                            # oversize (MR-HW-031)
            (L < wire.ETH_HLEN, T),
            (vlan & (L < wire.ETH_HLEN + wire.VLAN_HLEN), T),
            (~is4 & ~is6, NR),
            (is4 & (L < l3 + 1), T),
            (is4 & (vihl != 0x45), NR),
            (is4 & (L < l3 + wire.IPV4_HLEN), T),
            (is4 & (frag[:14] != 0), NR),
            (is4 & (proto != wire.IPPROTO_UDP), NR),
            (is6 & (L < l3 + wire.IPV6_HLEN), T),
            (is6 & (vihl[4:8] != 6), NR),
            (is6 & (nxt != wire.IPPROTO_UDP), NR),
            (L < l4 + 4, T),
            (dport != wire.ROCE_PORT, NR),
            (L < l4 + wire.UDP_HLEN, T),
            (is4 & ~ck_ok, Reason.BAD_IP),
            (L < l4_end, T),
            (udp_len != ipl, LEN),
            (ipl < wire.UDP_HLEN + wire.BTH_LEN + wire.ICRC_LEN, LEN),
            (~valid_op, Reason.BAD_OPCODE),
            (tver != 0, Reason.BAD_VERSION),
            (is_mr & (ipl > wire.UDP_HLEN + wire.BTH_LEN + wire.ICRC_LEN)
             & (ext[0][4:8] != wire.MR_VERSION), Reason.BAD_VERSION),
            (body < 0, LEN),
            (body < pad, LEN),
            (~payload_op & (body != 0), LEN),
        ]
        pre = Const(Reason.NONE, 4)
        for cond, reason in reversed(chain):
            pre = Mux(cond, reason, pre)

        # MR-HW-042: expected register value, indexed by the zeroed tail bytes in the last fed beat.
        rom = Array(Const(x, 32) for x in icrc_hw.residue_table(B, icrc_hw.tail_fill(B)))
        n_tail = Signal(LB if LB else 1)
        m.d.comb += n_tail.eq(-l4e_u[:LB] if LB else 0)

        pstart = Signal(16)
        m.d.comb += pstart.eq(l4 + wire.UDP_HLEN + wire.BTH_LEN + hlen)
        pend = Signal(16)
        m.d.comb += pend.eq(l4e_u - wire.ICRC_LEN - pad)
        tc6 = by_l3(lambda o: be(o, 4))
        tos = Mux(is6, tc6[20:28], by_l3(lambda o: hbb[o + 1]))
        tci = be(14, 2)
        ipsrc = Mux(is6, by_l3(lambda o: be(o + 8, 16)), by_l3(lambda o: be(o + 12, 4)))
        ipdst = Mux(is6, by_l3(lambda o: be(o + 24, 16)), by_l3(lambda o: be(o + 16, 4)))
        values = {
            "ipv6": is6, "vlan_present": vlan,
            "has": dict(has),
            "frame_len": L, "payload_offset": pstart, "payload_len": pend - pstart,
            "eth": {"dst": be(0, 6), "src": be(6, 6), "pcp": Mux(vlan, tci[13:16], 0),
                    "dei": vlan & tci[12], "vlan": Mux(vlan, tci[0:12], 0)},
            "ip": {"dscp": tos[2:8], "ecn": tos[0:2],
                   "ttl": Mux(is6, by_l3(lambda o: hbb[o + 7]), by_l3(lambda o: hbb[o + 8])),
                   "ident": Mux(is6, 0, by_l3(lambda o: be(o + 4, 2))),
                   "flow_label": Mux(is6, tc6[0:20], 0), "src": ipsrc, "dst": ipdst},
            "udp": {"sport": by_l4(lambda o: be(o, 2))},
            "bth": {"opcode": opcode, "se": bth[1][7], "mig": bth[1][6], "pad": pad, "tver": tver,
                    "pkey": _be(bth[2:4]), "fecn": bth[4][7], "becn": bth[4][6],
                    "dest_qp": _be(bth[5:8]), "ack_req": bth[8][7], "psn": _be(bth[9:12])},
        }
        values.update({h: fields[h] for h in EXT_NAMES})
        with m.If(adv):
            m.d.sync += s2_valid.eq(d1_valid & d1_last)
        # MR-HW-011/012: fields of absent headers, and every field of a frame dropped before
        # its ICRC check, are zeroed here. Written as reset-over-enable so that each group's
        # zero condition is one shared flip-flop reset net, not a gate per bit.
        load1 = go1 & d1_last
        drop_fields = Signal()
        m.d.comb += drop_fields.eq(pre != Reason.NONE)
        for key, val in values.items():
            zero = Signal(name=f"zero_{key}")
            cond = drop_fields | ~has[key] if key in has else drop_fields
            m.d.comb += zero.eq(load1 & cond)
            view = getattr(snap, key)
            with m.If(zero):
                m.d.sync += view.eq(0)
            with m.Elif(load1):
                m.d.sync += _assign(snap, {key: val})
        with m.If(load1):
            m.d.sync += [
                s2_pre.eq(pre), s2_res.eq(rom[n_tail]),
                s2_fstart.eq(fstart), s2_fend.eq(wr_ptr + store),
                s2_nbeats.eq(Mux(d1_k < MAXB, d1_k + 1, MAXB)),
                s2_pstart.eq(pstart), s2_pend_incl.eq(pend - 1),
            ]

        # S2: the ICRC register takes the frame's last beat; the snapshot moves on to S3.
        s3_snap = Signal(META_LAYOUT, reset_less=True)
        s3 = {}
        for sig in (s2_pre, s2_res, s2_fstart, s2_fend, s2_nbeats, s2_pstart, s2_pend_incl):
            s3[sig.name] = Signal.like(sig, name="s3_" + sig.name[3:], reset_less=True)
        s3_pre, s3_res, s3_fstart, s3_fend, s3_nbeats, s3_pstart, s3_pend_incl = s3.values()
        with m.If(adv):
            m.d.sync += s3_valid.eq(s2_valid)
            with m.If(s2_valid):
                m.d.sync += s3_snap.eq(snap)
                m.d.sync += [s3[sig.name].eq(sig) for sig in
                             (s2_pre, s2_res, s2_fstart, s2_fend, s2_nbeats, s2_pstart, s2_pend_incl)]

        # ---------------------------------------------------------------- S3: verdict, meta, counters
        reason = Signal(4)
        m.d.comb += reason.eq(Mux(s3_pre != Reason.NONE, s3_pre,
                                  Mux(chk.crc != s3_res, Reason.ICRC, Reason.NONE)))
        go3 = Signal()
        m.d.comb += go3.eq(adv & s3_valid)
        accepted = reason == Reason.NONE
        bypass = reason == Reason.NOT_ROCE
        meta_out = Signal(META_LAYOUT, reset_less=True)
        with m.If(go3 & ~bypass):
            m.d.sync += [meta_valid.eq(1), meta_out.eq(s3_snap),
                         meta_out.drop.eq(~accepted), meta_out.reason.eq(reason)]
        with m.Elif(mo.ready):
            m.d.sync += meta_valid.eq(0)
        m.d.comb += [mo.valid.eq(meta_valid), mo.data.eq(meta_out)]

        action = Mux(bypass, ACT_BYPASS,
                     Mux(accepted & (s3_snap.payload_len != 0), ACT_PAYLOAD, ACT_DISCARD))
        m.d.comb += [rwp.addr.eq(s3_fstart[:AB]), rwp.en.eq(go3),
                     rwp.data.eq(Cat(action, s3_nbeats,
                                     Mux(action == ACT_PAYLOAD, Cat(s3_pstart, s3_pend_incl), 0)))]
        with m.If(go3):
            m.d.sync += commit_ptr.eq(s3_fend)

        # MR-HW-060: counters, one per Reason code, read through reg_addr/reg_data.
        cnt = Array(Signal(32, name=f"cnt{i}") for i in range(9))
        inc = Signal(32)
        m.d.comb += inc.eq(cnt[reason] + 1)
        with m.If(go3):
            for i in range(9):
                with m.If(reason == i):
                    m.d.sync += cnt[i].eq(inc)
        m.d.sync += self.reg_data.eq(Mux(self.reg_addr < 9, cnt[self.reg_addr], 0))

        # ---------------------------------------------------------------- reader (MR-HW-030)
        r_valid = Signal()
        ri = Signal(KB)
        rec_cur = Signal(rec_layout, reset_less=True)
        rec = Signal(rec_layout)
        m.d.comb += rec.eq(Mux(ri == 0, rrp.data, rec_cur))
        rnb = drp.data[W:]
        rdata = drp.data[:W]
        is_last = Signal()
        m.d.comb += is_last.eq(ri == (rec.nbeats - 1)[:KB])
        ps_beat, ps_lane = rec.pstart[LB:], rec.pstart[:LB]
        pe_beat, pe_lane = rec.pend_incl[LB:], rec.pend_incl[:LB]
        in_range = Signal()
        m.d.comb += in_range.eq((ri >= ps_beat) & (ri <= pe_beat))
        keep_p = Cat(*[((ri != ps_beat) | (lane >= ps_lane)) & ((ri != pe_beat) | (lane <= pe_lane))
                       for lane in range(B)])
        keep_b = Cat(*[lane < rnb for lane in range(B)])
        mp, mb = self.m_payload, self.m_bypass
        is_byp = rec.action == ACT_BYPASS
        is_pay = (rec.action == ACT_PAYLOAD) & in_range
        m.d.comb += [
            mb.tdata.eq(rdata), mb.tkeep.eq(keep_b), mb.tlast.eq(is_last),
            mb.tvalid.eq(r_valid & is_byp),
            mp.tdata.eq(rdata), mp.tkeep.eq(keep_p), mp.tlast.eq(ri == pe_beat),
            mp.tvalid.eq(r_valid & is_pay),
        ]
        consume = Signal()
        m.d.comb += consume.eq(r_valid & Mux(is_byp, mb.tready, Mux(is_pay, mp.tready, 1)))
        issue = Signal()
        m.d.comb += issue.eq((rd_ptr != commit_ptr) & (~r_valid | consume))
        m.d.comb += [drp.addr.eq(rd_ptr[:AB]), drp.en.eq(issue),
                     rrp.addr.eq(rd_ptr[:AB]), rrp.en.eq(issue)]
        m.d.sync += rd_ptr.eq(rd_ptr + issue)
        with m.If(issue):
            m.d.sync += r_valid.eq(1)
        with m.Elif(consume):
            m.d.sync += r_valid.eq(0)
        with m.If(consume):
            m.d.sync += ri.eq(Mux(is_last, 0, ri + 1))
            with m.If(ri == 0):
                m.d.sync += rec_cur.eq(rrp.data)
        return m
