"""Cycle-accurate golden model of the RX parser (hdl/parser.py, docs/spec/hw-parser.md).

``ParserModel(width)``: call ``step(inputs)`` once per clock cycle with the values of every
input port in this cycle (Verilog port names, see :meth:`ParserModel.port_names`; ``clk`` is
implied); it returns the values of every output port in this cycle and advances one cycle.
``m_meta__data`` is the flat integer of :data:`META_LAYOUT` (declared here; the RTL imports it);
:meth:`ParserModel.meta_to_dict` unpacks it.

The verdict and every field come from the codec (:func:`metaroce.models.codec.decode` on the
completed frame, which checks the ICRC with :mod:`metaroce.models.icrc`); this module only
adds the hardware's timing: the pipeline registers, the frame store and its reader, the meta
register and the counters (MR-HW-050..060), mirrored register by register.
"""
from __future__ import annotations

import collections
import ipaddress
from math import ceil

from amaranth.lib import data

from . import codec, wire
from .headers import TABLE as _H
from .wire import Reason


__all__ = ["ParserModel", "pack_meta", "unpack_meta", "frame_meta", "verdict", "beats_of",
           "META_LAYOUT", "EXT_NAMES", "HB", "ACT_DISCARD", "ACT_BYPASS", "ACT_PAYLOAD", "params"]


# ------------------------------------------------------------------ RTL/model contract
# The metadata layout and the derived sizes are declared here, on the model side, and the
# RTL (hdl/parser.py) imports them: the truth does not depend on what it judges.

#: Header buffer: bytes of the frame kept for parsing (headers end at byte 126 at most).
HB = 128
EXT_NAMES = ("reth", "aeth", "imm", "atomicack", "mrdh", "mrsh", "mrah", "mrnh")

ACT_DISCARD, ACT_BYPASS, ACT_PAYLOAD = 0, 1, 2


def _s(fields):
    return data.StructLayout(fields)


def _hdr(name):
    """A header's sub-layout: its fields in wire order, widths from the header table (MR-WIRE-003)."""
    return _s(_H[name].layout())


def _w(name, fld):
    return _H[name].width(fld)


#: MR-HW-010: the metadata record. First field in the least significant bits. Header fields
#: and widths come from the header table (MR-WIRE-003); ``eth`` and ``ip`` merge the fields
#: of Ethernet/802.1Q and of IPv4/IPv6 (addresses in 128 bits).
META_LAYOUT = _s({
    "drop": 1,
    "reason": 4,                # models.wire.Reason code
    "ipv6": 1,
    "vlan_present": 1,
    "has": _s({h: 1 for h in EXT_NAMES}),
    "frame_len": 16,            # bytes of the frame (no FCS)
    "payload_offset": 16,       # frame byte offset of the first payload byte
    "payload_len": 16,          # payload bytes (without pad and ICRC)
    "eth": _s({"dst": _w("eth", "dst"), "src": _w("eth", "src"), "pcp": _w("vlan", "pcp"),
               "dei": _w("vlan", "dei"), "vlan": _w("vlan", "vlan")}),
    "ip": _s({"dscp": _w("ipv4", "dscp"), "ecn": _w("ipv4", "ecn"), "ttl": _w("ipv4", "ttl"),
              "ident": _w("ipv4", "ident"), "flow_label": _w("ipv6", "flow_label"),
              "src": _w("ipv6", "src"), "dst": _w("ipv6", "dst")}),
    "udp": _s({"sport": _w("udp", "sport")}),
    "bth": _hdr("bth"),
    "reth": _hdr("reth"),
    "aeth": _hdr("aeth"),
    "imm": _w("imm", "imm"),    # a bare value, as in the codec
    "atomicack": _hdr("atomicack"),
    "mrdh": _hdr("mrdh"),
    "mrsh": _hdr("mrsh"),
    "mrah": _hdr("mrah"),
    "mrnh": _hdr("mrnh"),
})


def params(width, max_frame=9216):
    """Derived sizes shared by the RTL and the model (MR-HW-031)."""
    if width not in (64, 128, 256, 512):
        raise ValueError(f"width must be 64, 128, 256 or 512, not {width!r}")
    if not isinstance(max_frame, int) or not HB <= max_frame <= 16000:
        raise ValueError(f"max_frame must be an int in [{HB}, 16000], not {max_frame!r}")
    nb = width // 8
    max_beats = ceil(max_frame / nb)
    depth = 1
    while depth < max_beats + 16:
        depth *= 2
    return {"bytes": nb, "max_beats": max_beats, "depth": depth,
            "abits": depth.bit_length() - 1, "kbits": max_beats.bit_length()}


INPUTS = ("rst", "s_axis__tdata", "s_axis__tkeep", "s_axis__tvalid", "s_axis__tlast",
          "s_axis__tuser", "m_meta__ready", "m_payload__tready", "m_bypass__tready", "reg_addr")
OUTPUTS = ("s_axis__tready", "m_meta__data", "m_meta__valid",
           "m_payload__tdata", "m_payload__tkeep", "m_payload__tvalid", "m_payload__tlast",
           "m_bypass__tdata", "m_bypass__tkeep", "m_bypass__tvalid", "m_bypass__tlast",
           "reg_data")


def _flatten(layout, base=0, path=()):
    out = []
    for name, fld in layout:
        if isinstance(fld.shape, data.StructLayout):
            out += _flatten(fld.shape, base + fld.offset, path + (name,))
        else:
            out.append((path + (name,), base + fld.offset, fld.width))
    return out


#: (path, bit offset, width) of every leaf field of META_LAYOUT (introspected once: fast packing).
META_FIELDS = _flatten(META_LAYOUT)


def _pack(values):
    out = 0
    for path, off, width in META_FIELDS:
        v = values
        for name in path:
            v = v.get(name) if isinstance(v, dict) else None
            if v is None:
                break
        if v is None:
            continue
        v = int(v)
        if v < 0 or v >> width:
            raise ValueError(f"{'.'.join(path)}={v} does not fit {width} bits")
        out |= v << off
    return out


def _unpack(value):
    out = {}
    for path, off, width in META_FIELDS:
        d = out
        for name in path[:-1]:
            d = d.setdefault(name, {})
        d[path[-1]] = (value >> off) & ((1 << width) - 1)
    return out


def pack_meta(values):
    """Pack a nested dict (names of META_LAYOUT) into the flat ``m_meta__data`` integer."""
    return _pack(values)


def unpack_meta(value):
    """The nested dict of every META_LAYOUT field of a flat ``m_meta__data`` integer."""
    return _unpack(int(value))


def _mac(s):
    return int(s.replace(":", ""), 16)


def frame_meta(f, frame_len):
    """META_LAYOUT values (without drop/reason) of a decoded :class:`codec.Frame` (MR-HW-010)."""
    op = wire.Op(f.bth.opcode)
    ipv6 = f.ip.version == 6
    vlan = f.eth.vlan is not None
    off = (wire.ETH_HLEN + (wire.VLAN_HLEN if vlan else 0)
           + (wire.IPV6_HLEN if ipv6 else wire.IPV4_HLEN) + wire.UDP_HLEN + wire.BTH_LEN
           + wire.ext_len(op))
    ipcls = ipaddress.IPv6Address if ipv6 else ipaddress.IPv4Address
    vals = {
        "ipv6": int(ipv6), "vlan_present": int(vlan),
        "has": {h: int(getattr(f, h) is not None) for h in EXT_NAMES},
        "frame_len": frame_len, "payload_offset": off, "payload_len": len(f.payload),
        "eth": {"dst": _mac(f.eth.dst), "src": _mac(f.eth.src), "pcp": f.eth.pcp if vlan else 0,
                "dei": f.eth.dei if vlan else 0, "vlan": f.eth.vlan if vlan else 0},
        "ip": {"dscp": f.ip.dscp, "ecn": f.ip.ecn, "ttl": f.ip.ttl,
               "ident": 0 if ipv6 else f.ip.ident, "flow_label": f.ip.flow_label if ipv6 else 0,
               "src": int(ipcls(f.ip.src)), "dst": int(ipcls(f.ip.dst))},
        "udp": {"sport": f.udp.sport},
        "bth": {k: int(v) for k, v in vars(f.bth).items()},
        "imm": f.imm,
    }
    for h in ("reth", "aeth", "atomicack", "mrdh", "mrsh", "mrah", "mrnh"):
        hv = getattr(f, h)
        if hv is not None:
            vals[h] = dict(vars(hv))
    return vals


def verdict(frame_bytes, mac_error=False, oversize=False):
    """(reason, meta value) of a completed frame, as the RTL decides it (MR-HW-020).

    MAC error first, then oversize (``length``), then :func:`codec.decode`'s first failing
    check. Fields are kept for accepted frames and ICRC drops; other drops carry only
    ``drop`` and ``reason``.
    """
    frame = None
    if mac_error:
        reason = Reason.MAC_ERROR
    elif oversize:
        reason = Reason.LENGTH
    else:
        try:
            frame = codec.decode(frame_bytes)
            reason = Reason.NONE
        except codec.DecodeError as e:
            reason = e.reason
            frame = e.frame if reason == Reason.ICRC else None
    vals = frame_meta(frame, len(frame_bytes)) if frame is not None else {}
    vals["drop"] = int(reason != Reason.NONE)
    vals["reason"] = int(reason)
    return reason, pack_meta(vals), vals


def beats_of(frame_bytes, width, *, tuser_beat=None):
    """AXI beats ``(tdata, tkeep, tlast, tuser)`` of a frame (packed, byte 0 in tdata[7:0])."""
    nb = width // 8
    out = []
    n = max(1, -(-len(frame_bytes) // nb))
    for i in range(n):
        chunk = frame_bytes[i * nb:(i + 1) * nb]
        out.append((int.from_bytes(chunk, "little"), (1 << len(chunk)) - 1, int(i == n - 1),
                    int(tuser_beat == i)))
    return out


class ParserModel:
    """Register-level mirror of :class:`metaroce.hdl.parser.Parser` (MR-HW-050..060)."""

    def __init__(self, width=512, *, max_frame=9216, rdport_reset=False):
        p = params(width, max_frame)
        self.width = width
        self.rdport_reset = rdport_reset
        self.B = p["bytes"]
        self.LB = self.B.bit_length() - 1
        self.MAXB = p["max_beats"]
        self.D = p["depth"]
        self.KB = p["kbits"]
        self.ptr_mod = 2 * self.D
        self.data_mem = [0] * self.D
        self.rec_mem = [0] * self.D
        self.drp = 0
        self.rrp = 0
        self._power_on()
        self.reset()
        # The last verdicts, for tests and tools: (reason, meta dict) in verdict order.
        self.log = collections.deque(maxlen=4096)

    @staticmethod
    def port_names():
        """{"inputs": [...], "outputs": [...]} (Verilog names; clk implied)."""
        return {"inputs": list(INPUTS), "outputs": list(OUTPUTS)}

    @staticmethod
    def meta_to_dict(value):
        """Unpack ``m_meta__data`` for humans: present headers only, names as in the codec."""
        d = unpack_meta(value)
        out = {k: d[k] for k in ("drop", "reason", "ipv6", "vlan_present", "frame_len",
                                 "payload_offset", "payload_len", "eth", "ip", "udp", "bth")}
        out["reason"] = Reason(d["reason"]).label if d["reason"] <= max(Reason) else d["reason"]
        for h in EXT_NAMES:
            if d["has"][h]:
                out[h] = d[h]
        return out

    def _power_on(self):
        # Data registers without reset in the RTL start at 0 and keep their value on rst.
        self.d1 = (0, 0, 0, 0, 0, 0)            # valid, data, nb, last, k, user
        self.fstart_reg = 0
        self.meta_out = 0
        self.rec_cur = 0
        self.buf = bytearray()

    def reset(self):
        """Registers with a reset to their reset values (MR-HW-054); data registers and
        memories keep their contents, as in the RTL."""
        self.k = 0
        self.d1 = (0,) + tuple(self.d1[1:])
        self.wr_ptr = self.rd_ptr = self.commit_ptr = 0
        self.err_acc = 0
        self.s2 = None                          # (reason, meta, record, fstart, fend) or None
        self.s3 = None
        self.meta_valid = 0
        self.cnt = [0] * 9
        self.reg_data = 0
        self.r_valid = 0
        self.ri = 0

    # ------------------------------------------------------------------ record fields
    def _rec_fields(self, rec):
        kb = self.KB + 1
        action = rec & 3
        nbeats = (rec >> 2) & ((1 << kb) - 1)
        pstart = (rec >> (2 + kb)) & 0xFFFF
        pend = (rec >> (18 + kb)) & 0xFFFF
        return action, nbeats, pstart, pend

    def _record(self, action, nbeats, pstart=0, pend_incl=0):
        kb = self.KB + 1
        if action != ACT_PAYLOAD:
            pstart = pend_incl = 0
        return action | (nbeats << 2) | (pstart << (2 + kb)) | (pend_incl << (18 + kb))

    # ------------------------------------------------------------------ one clock cycle
    def step(self, inputs):
        g = inputs.get
        B, W, D = self.B, self.width, self.D
        tvalid = int(g("s_axis__tvalid", 0))
        meta_ready = int(g("m_meta__ready", 0))
        pay_ready = int(g("m_payload__tready", 0))
        byp_ready = int(g("m_bypass__tready", 0))

        # ---- combinational outputs
        used = (self.wr_ptr - self.rd_ptr) % self.ptr_mod
        s3_valid = self.s3 is not None
        adv = not (self.meta_valid and not meta_ready and s3_valid)
        tready = int(adv and used <= D - 2)
        accept = tvalid and tready

        rec = self.rrp if self.ri == 0 else self.rec_cur
        action, nbeats, pstart, pend_incl = self._rec_fields(rec)
        mask_kb = (1 << self.KB) - 1
        is_last = self.ri == ((nbeats - 1) & mask_kb)
        ps_beat, ps_lane = pstart >> self.LB, pstart & (B - 1)
        pe_beat, pe_lane = pend_incl >> self.LB, pend_incl & (B - 1)
        in_range = ps_beat <= self.ri <= pe_beat
        full = (1 << B) - 1
        keep_p = full
        if self.ri == ps_beat:
            keep_p &= full ^ ((1 << ps_lane) - 1)
        if self.ri == pe_beat:
            keep_p &= (1 << (pe_lane + 1)) - 1
        rdata = self.drp & ((1 << W) - 1)
        rnb = self.drp >> W
        keep_b = (1 << min(rnb, B)) - 1
        is_byp = action == ACT_BYPASS
        is_pay = action == ACT_PAYLOAD and in_range
        out = {
            "s_axis__tready": tready,
            "m_meta__data": self.meta_out, "m_meta__valid": self.meta_valid,
            "m_payload__tdata": rdata, "m_payload__tkeep": keep_p,
            "m_payload__tvalid": int(self.r_valid and is_pay), "m_payload__tlast": int(self.ri == pe_beat),
            "m_bypass__tdata": rdata, "m_bypass__tkeep": keep_b,
            "m_bypass__tvalid": int(self.r_valid and is_byp), "m_bypass__tlast": int(is_last),
            "reg_data": self.reg_data,
        }

        # ---- reader (reads before this cycle's writes: non-transparent ports)
        if is_byp:
            consume = self.r_valid and byp_ready
        elif is_pay:
            consume = self.r_valid and pay_ready
        else:
            consume = self.r_valid
        issue = self.rd_ptr != self.commit_ptr and (not self.r_valid or consume)
        old_rrp = self.rrp
        if issue:
            self.drp = self.data_mem[self.rd_ptr % D]
            self.rrp = self.rec_mem[self.rd_ptr % D]
            self.rd_ptr = (self.rd_ptr + 1) % self.ptr_mod
            self.r_valid = 1
        elif consume:
            self.r_valid = 0
        if consume:
            if self.ri == 0:
                self.rec_cur = old_rrp
            self.ri = 0 if is_last else (self.ri + 1) & mask_kb

        # ---- counters register read (old counter values)
        addr = int(g("reg_addr", 0))
        self.reg_data = self.cnt[addr] if addr < 9 else 0

        # ---- S3: verdict out, meta, record, counters
        s3 = self.s3
        if adv and s3 is not None:
            reason, meta, record, fstart, fend = s3
            if reason != Reason.NOT_ROCE:
                self.meta_valid = 1
                self.meta_out = meta
            elif meta_ready:
                self.meta_valid = 0
            self.rec_mem[fstart % D] = record
            self.commit_ptr = fend
            self.cnt[reason] = (self.cnt[reason] + 1) & 0xFFFFFFFF
        elif meta_ready:
            self.meta_valid = 0

        # ---- S2: the ICRC takes the last beat; the snapshot moves to S3
        if adv:
            self.s3 = self.s2

        # ---- S1: store, snapshot
        d1_valid, d1_data, d1_nb, d1_last, d1_k, d1_user = self.d1
        if adv:
            new_s2 = None
            if d1_valid:
                store = d1_k < self.MAXB
                fstart = self.wr_ptr if d1_k == 0 else self.fstart_reg
                if d1_k == 0:
                    self.fstart_reg = self.wr_ptr
                    self.buf = bytearray()
                if store:
                    self.data_mem[self.wr_ptr % D] = d1_data | (d1_nb << W)
                    self.buf += d1_data.to_bytes(B, "little")[:d1_nb]
                mac_err = self.err_acc or d1_user
                self.err_acc = 0 if d1_last else mac_err
                fend = (self.wr_ptr + store) % self.ptr_mod
                self.wr_ptr = fend
                if d1_last:
                    new_s2 = self._verdict(bytes(self.buf), mac_err, d1_k >= self.MAXB,
                                           min(d1_k + 1, self.MAXB), fstart, fend)
            self.s2 = new_s2

        # ---- S0: accept
        if adv:
            if accept:
                tlast = int(g("s_axis__tlast", 0))
                keep = int(g("s_axis__tkeep", 0))
                nb = B
                if tlast:
                    nb = 0
                    while nb < B and keep >> nb & 1:
                        nb += 1
                self.d1 = (1, int(g("s_axis__tdata", 0)), nb, tlast, self.k, int(g("s_axis__tuser", 0)))
                self.k = 0 if tlast else min(self.k + 1, self.MAXB)
            else:
                self.d1 = (0,) + self.d1[1:]
        if int(g("rst", 0)):
            # Synchronous reset: registers with a reset take their reset value; data
            # registers and memories took this cycle's update like any other cycle.
            self.reset()
            if self.rdport_reset and not issue:
                # The Amaranth simulator resets a memory read port's data register when the
                # port is not enabled; the generated Verilog (and Verilator) does not.
                self.drp = self.rrp = 0
        return out

    def _verdict(self, frame, mac_err, oversize, nbeats, fstart, fend):
        reason, meta, vals = verdict(frame, bool(mac_err), oversize)
        if reason == Reason.NOT_ROCE:
            record = self._record(ACT_BYPASS, nbeats)
        elif reason == Reason.NONE and vals["payload_len"]:
            ps = vals["payload_offset"]
            record = self._record(ACT_PAYLOAD, nbeats, ps, ps + vals["payload_len"] - 1)
        else:
            record = self._record(ACT_DISCARD, nbeats)
        self.log.append((reason, vals))
        return reason, meta, record, fstart, fend

    def busy(self):
        """True while a frame is anywhere in the pipeline, the store or the meta register."""
        return bool(self.d1[0] or self.s2 is not None or self.s3 is not None or self.meta_valid or self.r_valid
                    or self.rd_ptr != self.commit_ptr or self.wr_ptr != self.commit_ptr)
