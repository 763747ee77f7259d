"""The header table (models/headers.py) is the single declaration of every header's fields
(MR-WIRE-003): what is generated from it is checked against the definition, and what is written
by hand elsewhere (the spec's tables, the Lua dissector, scapy's own layers) is checked against it.
"""
import pathlib
import random
import re

import pytest
from amaranth.hdl import Module, Signal
from amaranth.lib import data
from amaranth.sim import Simulator
from hypothesis import given, settings
from hypothesis import strategies as st

from metaroce.hdl.parser import _ext_fields
from metaroce.models import codec, scapy_layers, wire
from metaroce.models.headers import TABLE, header
from metaroce.models.parser import META_LAYOUT

ROOT = pathlib.Path(__file__).resolve().parents[1]


def reference_pack(hdr, values):
    """Bytes of ``hdr`` from {field: int}, by the definition: each field's bits at its offset
    from the most significant bit, reserved bits zero (MR-WIRE-003)."""
    word = 0
    for f in hdr.fields:
        word |= values.get(f.name, 0) << (8 * hdr.length - f.offset - f.width)
    return word.to_bytes(hdr.length, "big")


def field_values(hdr):
    return st.fixed_dictionaries({f.name: st.integers(0, (1 << f.width) - 1)
                                  for f in hdr.fields if not f.reserved})


# ---------------------------------------------------------------------------------------------
# The table itself

def test_table_covers_every_header():
    """MR-WIRE-003, MR-WIRE-052: one entry per header of the frame, each citing its spec IDs;
    every extension header of wire.HEADERS is there, and wire's lengths are the table's."""
    assert set(TABLE) == {"eth", "vlan", "ipv4", "ipv6", "udp", "bth", "reth", "aeth", "imm",
                          "atomicack", "atomiceth", "cnp", "mrdh", "mrsh", "mrah", "mrnh", "mrsec",
                          "mrtag", "mrch", "mrkx"}
    assert {h for names in wire.HEADERS.values() for h in names} <= set(TABLE)
    ids = set(re.findall(r"\*\*(MR-WIRE-\d{3})", (ROOT / "docs/spec/wire.md").read_text()))
    for h in TABLE.values():
        assert h.spec and set(h.spec) <= ids, h.name
    assert wire.HEADER_LEN == {n: TABLE[n].length for n in wire.HEADER_LEN}
    assert (wire.ETH_HLEN, wire.VLAN_HLEN, wire.IPV4_HLEN, wire.IPV6_HLEN, wire.UDP_HLEN, wire.BTH_LEN) == \
        tuple(TABLE[n].length for n in ("eth", "vlan", "ipv4", "ipv6", "udp", "bth"))
    # The MetaRoCE headers carry the version in the high nibble of byte 0 (MR-WIRE-001).
    for n in ("mrdh", "mrah", "mrnh", "mrsec", "mrch"):
        assert TABLE[n].fields[0] == TABLE["mrdh"].fields[0]
        assert (TABLE[n].field("version").offset, TABLE[n].width("version")) == (0, 4)


@pytest.mark.parametrize("fields, why", [
    ([("a", 0, 4), ("b", 5, 3)], "tile"),               # a gap
    ([("a", 0, 4), ("b", 3, 5)], "tile"),               # an overlap
    ([("a", 0, 4), ("b", 4, 2)], "whole bytes"),
    ([("a", 0, 4), ("a", 4, 4)], "duplicate"),
])
def test_bad_declarations_refused(fields, why):
    """MR-WIRE-003: a declaration whose fields do not tile whole bytes exactly is refused at import."""
    with pytest.raises(ValueError, match=why):
        header("x", "MR-WIRE-003", *fields)


# ---------------------------------------------------------------------------------------------
# Codec: compiled packers against the definition

@pytest.mark.parametrize("name", sorted(TABLE))
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_compiled_packing_matches_definition(name, data):
    """MR-WIRE-003: every header's compiled packer and unpacker agree with the bit-level
    definition, for random values of every field and for any requested subset of fields."""
    hdr = TABLE[name]
    values = data.draw(field_values(hdr))
    want = reference_pack(hdr, values)
    assert len(want) == hdr.length
    assert hdr.packer()(*[values[n] for n in hdr.names]) == want
    if not hdr.names:           # the CNP padding: all reserved
        assert want == bytes(hdr.length)
        return
    got = hdr.unpacker()(b"\xee" + want, 1)
    expect = tuple(values[n] for n in hdr.names)
    assert (got if isinstance(got, tuple) else (got,)) == expect
    # Reserved bits are ignored on receipt.
    ones = int.from_bytes(want, "big")
    for f in hdr.fields:
        if f.reserved:
            ones |= ((1 << f.width) - 1) << (8 * hdr.length - f.offset - f.width)
    assert hdr.unpacker(make=lambda *v: v)(ones.to_bytes(hdr.length, "big")) == expect
    if hdr.names:
        some = data.draw(st.lists(st.sampled_from(hdr.names), min_size=1, unique=True))
        part = hdr.unpacker(some, make=lambda *v: v)(want)
        assert part == tuple(values[n] for n in some)
        # The buffer needs to reach only the struct item that holds the last requested field.
        last = max(hdr.field(n).offset + hdr.field(n).width for n in some)
        size = hdr.unpacker(some).struct.size
        assert -(-last // 8) <= size <= hdr.length
        assert hdr.unpacker(some, make=lambda *v: v)(want[:size]) == part


def test_constants_and_raw_fields():
    """MR-WIRE-003, MR-WIRE-020: constants fold into the packer, raw fields pass as bytes, and a
    field left out of both is refused."""
    ipv4 = TABLE["ipv4"]
    pack = ipv4.packer(("dscp", "ecn", "total_len", "ident", "ttl", "proto", "src", "dst"),
                       const={"version": 4, "ihl": 5, "df": 1, "mf": 0, "frag_offset": 0, "checksum": 0},
                       raw=("src", "dst"))
    got = pack(26, 2, 60, 7, 64, 17, bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2]))
    assert got == reference_pack(ipv4, {"version": 4, "ihl": 5, "dscp": 26, "ecn": 2, "total_len": 60,
                                        "ident": 7, "df": 1, "ttl": 64, "proto": 17,
                                        "src": 0x0A000001, "dst": 0x0A000002})
    with pytest.raises(ValueError, match="ipv4.version"):
        ipv4.packer(("dscp",))
    # The PSN and its flag byte share one 32-bit word instead of three bytes of shifts.
    assert TABLE["bth"].packer().struct.format == "!BBHII"


def test_codec_records_and_widths_are_the_table():
    """MR-WIRE-003, MR-WIRE-050, MR-WIRE-060, MR-WIRE-061, MR-WIRE-062, MR-WIRE-063, MR-WIRE-071,
    MR-WIRE-072, MR-WIRE-073, MR-WIRE-074: the codec's dataclasses name the table's fields in wire
    order, and the widths encode checks are the table's."""
    for name, cls in codec.RECORDS.items():
        assert tuple(codec._WIDTHS[cls]) == TABLE[name].names
        assert codec._WIDTHS[cls] == TABLE[name].layout()
    # The IP record is shared by IPv4 and IPv6: its fields have one width in both.
    for v4, v6 in (("dscp", "dscp"), ("ecn", "ecn"), ("ttl", "hop_limit"), ("proto", "next_header")):
        assert TABLE["ipv4"].width(v4) == TABLE["ipv6"].width(v6) == codec._WIDTHS[codec.IP][v4]


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(sorted(codec.RECORDS)), st.data())
def test_codec_headers_match_definition(name, data):
    """MR-WIRE-003, MR-WIRE-050, MR-WIRE-060, MR-WIRE-061, MR-WIRE-062, MR-WIRE-063, MR-WIRE-071,
    MR-WIRE-072, MR-WIRE-073, MR-WIRE-074: encode_bth/encode_ext and their decoders against the
    bit-level definition."""
    hdr = TABLE[name]
    values = data.draw(field_values(hdr))
    h = codec.RECORDS[name](**values)
    want = reference_pack(hdr, values)
    if name == "bth":
        assert codec.encode_bth(h) == want and codec.decode_bth(want) == h
    else:
        assert codec.encode_ext(name, h) == want and codec.decode_ext(name, want) == h


# ---------------------------------------------------------------------------------------------
# The RX parser's metadata layout and the RTL's extraction

def _s(fields):
    return data.StructLayout(fields)


#: META_LAYOUT as written by hand before the header table (the layout the RTL was verified with).
META_LAYOUT_BEFORE = _s({
    "drop": 1, "reason": 4, "ipv6": 1, "vlan_present": 1,
    "has": _s({h: 1 for h in ("reth", "aeth", "imm", "atomicack", "mrdh", "mrsh", "mrah", "mrnh")}),
    "frame_len": 16, "payload_offset": 16, "payload_len": 16,
    "eth": _s({"dst": 48, "src": 48, "pcp": 3, "dei": 1, "vlan": 12}),
    "ip": _s({"dscp": 6, "ecn": 2, "ttl": 8, "ident": 16, "flow_label": 20, "src": 128, "dst": 128}),
    "udp": _s({"sport": 16}),
    "bth": _s({"opcode": 8, "se": 1, "mig": 1, "pad": 2, "tver": 4, "pkey": 16, "fecn": 1,
               "becn": 1, "dest_qp": 24, "ack_req": 1, "psn": 24}),
    "reth": _s({"va": 64, "rkey": 32, "dma_len": 32}),
    "aeth": _s({"syndrome": 8, "msn": 24}),
    "imm": 32,
    "atomicack": _s({"orig": 64}),
    "mrdh": _s({"version": 4, "flags": 4, "path": 8, "stream": 16, "msg": 32, "offset": 32, "msg_len": 32}),
    "mrsh": _s({"recv_seq": 32}),
    "mrah": _s({"version": 4, "flags": 4, "path": 8, "ce_count": 16, "cum_psn": 32, "rate_mbps": 32,
                "trigger_psn": 32, "sack": 256}),
    "mrnh": _s({"version": 4, "flags": 4, "path": 8, "reason": 8, "psn": 32}),
})


def test_meta_layout_generated_from_table():
    """MR-WIRE-003, MR-HW-010: the metadata record generated from the header table has exactly
    the bit layout it had when written by hand, and each header's sub-layout is the table's."""
    assert META_LAYOUT == META_LAYOUT_BEFORE
    assert META_LAYOUT.size == 1438
    for name in ("bth", "reth", "aeth", "atomicack", "mrdh", "mrsh", "mrah", "mrnh"):
        sub = META_LAYOUT.members[name]
        assert [(n, f.width) for n, f in sub] == list(TABLE[name].layout().items()), name


@pytest.mark.parametrize("name", sorted(n for n in TABLE if TABLE[n].names))
def test_rtl_extraction_matches_codec(name):
    """MR-WIRE-003, MR-HW-010: the RTL's generic field extractor (hdl/parser.py), simulated on
    random header bytes, gives every field the codec's unpacker gives."""
    hdr = TABLE[name]
    byts = [Signal(8, name=f"b{i}") for i in range(hdr.length)]
    fields = _ext_fields(name, byts)
    assert list(fields) == list(hdr.names)
    outs = {n: Signal(len(v), name=f"f_{n}") for n, v in fields.items()}
    m = Module()
    m.d.comb += [outs[n].eq(v) for n, v in fields.items()]
    rng = random.Random(name)
    vectors = [bytes(rng.getrandbits(8) for _ in range(hdr.length)) for _ in range(8)]
    vectors += [bytes(hdr.length), bytes([0xFF]) * hdr.length]
    unpack = hdr.unpacker(make=lambda *v: v)
    seen = []

    async def bench(ctx):
        for vec in vectors:
            for sig, b in zip(byts, vec):
                ctx.set(sig, b)
            seen.append(tuple(ctx.get(outs[n]) for n in hdr.names))

    sim = Simulator(m)
    sim.add_testbench(bench)
    sim.run()
    assert seen == [unpack(v) for v in vectors]


# ---------------------------------------------------------------------------------------------
# scapy: the project's layers (generated) and scapy's own (an independent oracle)

def _scapy_spans(layer, length):
    """[(name, bit offset, width)] of a scapy layer's fields up to ``length`` bytes."""
    out, pos = [], 0
    for f in layer.fields_desc:
        if pos >= 8 * length:
            break
        width = round(f.sz * 8)
        out.append((f.name, pos, width))
        pos += width
    return out


def check_scapy_layer(layer, name, rename=None, skip=()):
    """Mismatches between a scapy layer and the table's ``name``: each scapy field must cover
    exactly the table fields it is mapped to (by name, or ``rename``: a name or a tuple of
    names), and together they must cover every table field."""
    hdr = TABLE[name]
    rename = rename or {}
    bad, covered = [], set()
    for fname, off, width in _scapy_spans(layer, hdr.length):
        if fname in skip:
            continue
        want = rename.get(fname, fname)
        want = want if isinstance(want, tuple) else (want,)
        try:
            fs = [hdr.field(n) for n in want]
        except KeyError as e:
            bad.append(f"{layer.__name__}.{fname}: {e}")
            continue
        span = (fs[0].offset, sum(f.width for f in fs))
        if (off, width) != span:
            bad.append(f"{layer.__name__}.{fname}: bits {off}+{width}, table {want} at {span[0]}+{span[1]}")
        covered |= set(want)
    missing = {f.name for f in hdr.fields} - covered - set(skip)
    if missing:
        bad.append(f"{layer.__name__}: table fields {sorted(missing)} not in the layer")
    return bad


def test_project_scapy_layers_match_table():
    """MR-WIRE-003, MR-WIRE-060, MR-WIRE-062, MR-WIRE-063, MR-WIRE-071, MR-WIRE-072, MR-WIRE-073,
    MR-WIRE-065, MR-WIRE-074, MR-WIRE-078, MR-WIRE-082: the project's scapy layers have the table's fields, field for field, with their
    offsets and widths."""
    layers = {"reth": scapy_layers.RETH, "imm": scapy_layers.ImmDt, "atomicack": scapy_layers.AtomicAckETH,
              "atomiceth": scapy_layers.AtomicETH,
              "mrdh": scapy_layers.MRDH, "mrsh": scapy_layers.MRSH, "mrah": scapy_layers.MRAH,
              "mrnh": scapy_layers.MRNH, "mrsec": scapy_layers.MRSEC, "mrch": scapy_layers.MRCH}
    for name, layer in layers.items():
        assert check_scapy_layer(layer, name) == []
        assert [f.name for f in layer.fields_desc] == [f.name for f in TABLE[name].fields]
        assert len(layer()) == TABLE[name].length


def test_scapy_own_layers_match_table():
    """MR-WIRE-003, MR-WIRE-010, MR-WIRE-011, MR-WIRE-020, MR-WIRE-030, MR-WIRE-040, MR-WIRE-050,
    MR-WIRE-061, MR-WIRE-064: scapy's own layers (written independently, not generated) agree
    with the table on every field's offset and width."""
    from scapy.contrib.roce import AETH, BTH, CNPPadding
    from scapy.layers.inet import IP, UDP
    from scapy.layers.inet6 import IPv6
    from scapy.layers.l2 import Dot1Q, Ether

    bad = []
    bad += check_scapy_layer(Ether, "eth", {"type": "ethertype"})
    bad += check_scapy_layer(Dot1Q, "vlan", {"prio": "pcp", "id": "dei", "type": "ethertype"})
    bad += check_scapy_layer(IP, "ipv4", {"tos": ("dscp", "ecn"), "len": "total_len", "id": "ident",
                                          "flags": ("reserved", "df", "mf"), "frag": "frag_offset",
                                          "chksum": "checksum"})
    bad += check_scapy_layer(IPv6, "ipv6", {"tc": ("dscp", "ecn"), "fl": "flow_label", "plen": "payload_len",
                                            "nh": "next_header", "hlim": "hop_limit"})
    bad += check_scapy_layer(UDP, "udp", {"len": "length", "chksum": "checksum"})
    bad += check_scapy_layer(BTH, "bth", {"solicited": "se", "migreq": "mig", "padcount": "pad",
                                          "version": "tver", "resv6": "reserved1", "dqpn": "dest_qp",
                                          "ackreq": "ack_req", "resv7": "reserved2"})
    bad += check_scapy_layer(AETH, "aeth")
    assert bad == []
    assert sum(w for _, _, w in _scapy_spans(CNPPadding, 99)) == 8 * TABLE["cnp"].length


def test_scapy_checker_sees_a_mismatch():
    """The scapy check itself can fail: a layer with a field one bit off is reported."""
    from scapy.fields import BitField, IntField
    from scapy.packet import Packet

    class Bad(Packet):
        fields_desc = [BitField("syndrome", 0, 7), BitField("msn", 0, 25)]

    class Short(Packet):
        fields_desc = [IntField("recv_seq", 0)]

    assert len(check_scapy_layer(Bad, "aeth")) == 2
    assert check_scapy_layer(Short, "mrsh") == []
    assert "not in the layer" in check_scapy_layer(Short, "aeth", {"recv_seq": "syndrome"})[-1]


# ---------------------------------------------------------------------------------------------
# The Wireshark Lua dissector (written by hand, checked here)

LUA = ROOT / "metaroce" / "dissector" / "metaroce.lua"
_UINT = {"uint8": 8, "uint16": 16, "uint24": 24, "uint32": 32, "uint64": 64}
#: Lua fields that are not header fields: the opcode shown again, generated values, the payload.
_LUA_DERIVED = {"metaroce.opcode", "metaroce.mrah.sack_count", "metaroce.payload", "metaroce.payload_len"}
_FLAGS = {"mrdh": wire.MrdhFlag, "mrah": wire.MrahFlag}


def _lua_table(text, name):
    m = re.search(rf"^local {name} = (\{{.*?\}})$", text, re.S | re.M)
    assert m, name
    return m.group(1)


def lua_mismatches(text):
    """Every disagreement between the Lua dissector's text and the header table / wire.py."""
    bad = []
    # Constants and the per-opcode tables (MR-WIRE-001, -050, -052, -081, -090).
    consts = dict(re.findall(r"^local (\w+) = (\d+)$", text, re.M))
    if int(consts.get("MR_VERSION", -1)) != wire.MR_VERSION:
        bad.append("MR_VERSION")
    m = re.search(r"^local BTH_LEN, ICRC_LEN = (\d+), (\d+)$", text, re.M)
    if not m or (int(m[1]), int(m[2])) != (TABLE["bth"].length, wire.ICRC_LEN):
        bad.append("BTH_LEN, ICRC_LEN")
    hlen = {k: int(v) for k, v in re.findall(r"(\w+) = (\d+)", _lua_table(text, "hlen"))}
    for k, v in hlen.items():
        if TABLE[k].length != v:
            bad.append(f"hlen.{k} = {v}, table {TABLE[k].length}")
    lua_headers = {int(op, 16): tuple(re.findall(r'"(\w+)"', names)) for op, names in
                   re.findall(r"\[(0x[0-9A-F]+)\] = \{([^}]*)\}", _lua_table(text, "headers"))}
    if lua_headers != {int(op): wire.HEADERS[op] for op in wire.MR_OPS}:
        bad.append(f"headers table {lua_headers}")
    payload = {int(op, 16) for op in re.findall(r"\[(0x[0-9A-F]+)\] = true", _lua_table(text, "carries_payload"))}
    if payload != {int(op) for op in wire.MR_OPS & wire.PAYLOAD_OPS}:
        bad.append("carries_payload")
    reasons = {int(k, 16) for k in re.findall(r"\[(0x[0-9A-F]+)\] =", _lua_table(text, "nak_reasons"))}
    if reasons != {int(r) for r in wire.NakReason}:
        bad.append("nak_reasons")

    # ProtoField declarations: key -> (abbrev, type, mask).
    decl = {}
    for key, typ, args in re.findall(r"^\s*(\w+) = ProtoField\.(\w+)\((.*)\),?$", _lua_table(text, "f"), re.M):
        parts = [a.strip() for a in args.split(",")]
        mask = int(parts[4], 16) if len(parts) > 4 else None
        decl[key] = (parts[0].strip('"'), typ, mask)

    def table_field(abbrev):
        parts = abbrev.split(".")[1:]
        if parts == ["imm"]:
            return "imm", TABLE["imm"].field("imm")
        if len(parts) == 2 and parts[0] in TABLE:
            try:
                return parts[0], TABLE[parts[0]].field(parts[1])
            except KeyError:
                return parts[0], None
        return None, None

    seen = set()

    def check_add(key, hname, byte, length):
        abbrev, typ, mask = decl[key]
        if abbrev in _LUA_DERIVED:
            return
        if abbrev == f"metaroce.{hname}" and typ == "none":
            if (byte, length) != (0, TABLE[hname].length):
                bad.append(f"{abbrev}: subtree spans {byte}+{length}")
            return
        if typ == "bool":           # a flag bit inside the header's flags field
            flags = TABLE[hname].field("flags")
            lsb = 8 * (byte + length) - flags.offset - flags.width
            enum = _FLAGS[hname]
            name = abbrev.rsplit(".", 1)[1].upper()
            if mask >> lsb << lsb != mask or name not in enum.__members__ or mask >> lsb != enum[name]:
                bad.append(f"{abbrev}: mask {mask:#x}")
            return
        fh, fld = table_field(abbrev)
        if fld is None or fh != hname:
            bad.append(f"{abbrev}: not a field of the table's {hname}")
            return
        if mask is not None:
            width = bin(mask).count("1")
            off = 8 * byte + 8 * length - mask.bit_length()
            if mask != ((1 << width) - 1) << (mask.bit_length() - width):
                bad.append(f"{abbrev}: mask {mask:#x} not contiguous")
        else:
            off, width = 8 * byte, 8 * length
        if (off, width) != (fld.offset, fld.width):
            bad.append(f"{abbrev}: bits {off}+{width}, table {fld.offset}+{fld.width}")
        if typ in _UINT and _UINT[typ] != 8 * length:
            bad.append(f"{abbrev}: {typ} over {length} bytes")
        seen.add((hname, fld.name))

    # Every read of the header's bytes in add_<header> lies on field boundaries; every add()
    # places its field where the table does.
    funcs = dict(re.findall(r"^local function add_(\w+)\(t, tvb, off\)\n(.*?)^end$", text, re.S | re.M))
    for hname, body in funcs.items():
        hdr = TABLE[hname]
        bounds = {f.offset for f in hdr.fields} | {8 * hdr.length}
        for byte, length in re.findall(r"tvb\(off(?: \+ (\d+))?, (\d+)\)", body):
            byte, length = int(byte or 0), int(length)
            if 8 * byte not in bounds or 8 * (byte + length) not in bounds:
                bad.append(f"add_{hname}: reads bytes {byte}+{length} across a field")
        for key, byte, length in re.findall(r":add\(f\.(\w+), tvb\(off(?: \+ (\d+))?, (\d+)\)", body):
            check_add(key, hname, int(byte or 0), int(length))
    # ImmDt is added inline; the info column reads the BTH's DestQP and PSN.
    for key, byte, length in re.findall(r"t:add\(f\.(imm), tvb\(off(?: \+ (\d+))?, (\d+)\)\)", text):
        check_add(key, "imm", int(byte or 0), int(length))
    bth = TABLE["bth"]
    for byte, length in re.findall(r"tvb\(bth_off(?: \+ (\d+))?, (\d+)\)", text):
        byte, length = int(byte or 0), int(length)
        if not any((f.offset, f.width) == (8 * byte, 8 * length) for f in bth.fields):
            bad.append(f"BTH read {byte}+{length} is not a BTH field")
    # Every field that carries a value of every header the dissector decodes is shown.
    for hname in hlen:
        for n in TABLE[hname].names:
            if (hname, n) not in seen:
                bad.append(f"{hname}.{n} is not dissected")
    return bad


def test_lua_dissector_matches_table():
    """MR-WIRE-003, MR-WIRE-052, MR-WIRE-062, MR-WIRE-071, MR-WIRE-072, MR-WIRE-073, MR-WIRE-074:
    the Lua dissector's header lengths, opcode tables, field offsets, widths, masks and flag bits
    are the header table's and wire.py's."""
    assert lua_mismatches(LUA.read_text()) == []


@pytest.mark.parametrize("old, new, why", [
    ("st:add(f.mrdh_stream, tvb(off + 2, 2))", "st:add(f.mrdh_stream, tvb(off + 3, 2))", "mrdh.stream"),
    ('"metaroce.mrnh.version", "Version", base.DEC, nil, 0xF0',
     '"metaroce.mrnh.version", "Version", base.DEC, nil, 0x70', "mrnh.version"),
    ('mrah_ece = ProtoField.bool("metaroce.mrah.flags.ece", "ECE", 8, nil, 0x01)',
     'mrah_ece = ProtoField.bool("metaroce.mrah.flags.ece", "ECE", 8, nil, 0x02)', "flags.ece"),
    ("mrah = 48", "mrah = 44", "hlen.mrah"),
    ("  st:add(f.mrsh_recv_seq, tvb(off, 4))\n", "", "mrsh.recv_seq is not dissected"),
    ("tvb(bth_off + 9, 3)", "tvb(bth_off + 8, 3)", "BTH read"),
    ('[0xC1] = { "mrdh", "reth", "imm" }', '[0xC1] = { "mrdh", "reth" }', "headers table"),
])
def test_lua_checker_sees_a_mismatch(old, new, why):
    """The Lua check itself can fail: one wrong offset, mask, flag, length or table is reported."""
    text = LUA.read_text()
    assert old in text
    assert any(why in b for b in lua_mismatches(text.replace(old, new, 1)))


# ---------------------------------------------------------------------------------------------
# The spec's own tables (docs/spec/wire.md) against the table

_SPEC_NAMES = {"OpCode": "opcode", "SE": "se", "M": "mig", "PadCnt": "pad", "TVer": "tver",
               "P_Key": "pkey", "FECN": "fecn", "BECN": "becn", "DestQP": "dest_qp",
               "AckReq": "ack_req", "PSN": "psn"}


def spec_tables():
    """{header: [(field, bit offset, width)]} from the byte/bit tables of docs/spec/wire.md."""
    text = (ROOT / "docs/spec/wire.md").read_text()
    heads = {"BTH": "bth", "MRDH": "mrdh", "MRAH": "mrah", "MRNH": "mrnh"}
    out = {}
    for block in re.split(r"\n(?=#+ |\*\*MR-WIRE-\d{3} )", text):
        first = block.split("\n", 1)[0]
        name = next((h for k, h in heads.items() if re.search(rf"\b{k}\b", first)), None)
        rows = re.findall(r"^\| ([\d-]+) \|\s*([\d-]*)\s*\| (\w+) \|", block, re.M)
        if name is None or not rows:
            continue
        spans = []
        for byts, bits, fname in rows:
            a, _, b = byts.partition("-")
            a, b = int(a), int(b or a)
            if bits:
                hi, _, lo = bits.partition("-")
                hi, lo = int(hi), int(lo or hi)
                spans.append((_SPEC_NAMES.get(fname, fname), 8 * a + 7 - hi, hi - lo + 1))
            else:
                spans.append((_SPEC_NAMES.get(fname, fname), 8 * a, 8 * (b - a + 1)))
        out[name] = spans
    return out


def test_spec_tables_match_table():
    """MR-WIRE-003, MR-WIRE-050, MR-WIRE-071, MR-WIRE-073, MR-WIRE-074: the byte/bit tables of the
    wire chapter show exactly the header table's fields, offsets and widths; the lengths the
    chapter states are the table's."""
    tables = spec_tables()
    assert set(tables) == {"bth", "mrdh", "mrah", "mrnh"}
    for name, spans in tables.items():
        want = [(("reserved" if f.reserved else f.name), f.offset, f.width) for f in TABLE[name].fields]
        assert spans == want, name
    text = (ROOT / "docs/spec/wire.md").read_text()
    stated = {"bth": r"\(BTH\), (\d+) bytes", "reth": r"RETH, (\d+) bytes", "aeth": r"AETH, (\d+) bytes",
              "imm": r"ImmDt, (\d+) bytes", "atomicack": r"AtomicAckETH, (\d+) bytes",
              "atomiceth": r"AtomicETH, (\d+) bytes",
              "cnp": r"carries (\d+) reserved bytes", "mrdh": r"MRDH — [^*]*, (\d+) bytes",
              "mrsh": r"MRSH — [^*]*, (\d+) bytes", "mrah": r"MRAH — [^*]*, (\d+) bytes",
              "mrnh": r"MRNH — [^*]*, (\d+) bytes", "ipv4": r"IPv4 header is exactly (\d+) bytes",
              "ipv6": r"the (\d+)-byte fixed header"}
    for name, pattern in stated.items():
        m = re.search(pattern, text)
        assert m and int(m.group(1)) == TABLE[name].length, name
