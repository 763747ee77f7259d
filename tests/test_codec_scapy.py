"""scapy's ``scapy.contrib.roce`` as an independent oracle for the codec (docs/spec/wire.md).

Frames built by scapy decode field for field with a good ICRC; frames the codec builds are parsed
by scapy with the same fields, and scapy recomputes the same ICRC, IPv4 header checksum and IPv6
UDP checksum. Extension headers that scapy lacks (RETH, ImmDt, MetaRoCE) are written here with
``struct`` from the spec tables, not with the codec or the project's scapy layers. Comparisons
read the bytes after scapy's BTH, so they do not depend on which scapy layers are bound.
"""
import struct

import pytest
from scapy.contrib.roce import AETH as SAETH
from scapy.contrib.roce import BTH as SBTH
from scapy.contrib.roce import CNPPadding
from scapy.layers.inet import IP as SIP
from scapy.layers.inet import TCP
from scapy.layers.inet import UDP as SUDP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import ARP, Dot1Q, Ether
from scapy.packet import Raw

from metaroce.models import codec
from metaroce.models.codec import BTH, IP, MRAH, MRDH, MRNH, MRSH, RETH, UDP, AETH, DecodeError, Eth
from metaroce.models.wire import Op, Reason

PSN_EDGES = [0, (1 << 23) - 1, 1 << 23, (1 << 24) - 1]
MAC_A, MAC_B = "0a:00:00:00:00:0a", "0b:00:00:00:00:0b"


def ext_bytes(op, i=1):
    """(spec layout, expected codec attributes) for the extension headers of ``op``."""
    va, rkey, dlen, imm = 0x1122334455667788 + i, 0x0BADCAFE, 4096 + i, 0xA5A5A5A5 ^ i
    mrdh = struct.pack("!BBHIII", 0x10 | 0x5, 3, 0x0102, 77 + i, 256 * i, 65536)
    mrah_b = struct.pack("!BBHIII", 0x11, 9, 2, 0x00FFFFFF, 40000, 0x00800000) + ((1 << 255) | 3).to_bytes(32, "big")
    table = {
        "reth": (struct.pack("!QII", va, rkey, dlen), RETH(va, rkey, dlen)),
        "imm": (struct.pack("!I", imm), imm),
        "aeth": (struct.pack("!I", (0x1F << 24) | 0x123456), AETH(0x1F, 0x123456)),
        "mrdh": (mrdh, MRDH(1, 5, 3, 0x0102, 77 + i, 256 * i, 65536)),
        "mrsh": (struct.pack("!I", 0xFFFFFFFF - i), MRSH(0xFFFFFFFF - i)),
        "mrah": (mrah_b, MRAH(1, 1, 9, 2, 0x00FFFFFF, 40000, 0x00800000, (1 << 255) | 3)),
        "mrnh": (struct.pack("!BBBxI", 0x10, 4, 5, 0x00ABCDEF), MRNH(1, 0, 4, 5, 0x00ABCDEF)),
        "cnp": (bytes(16), None),
    }
    names = {
        Op.RC_SEND_ONLY: (), Op.RC_SEND_ONLY_IMM: ("imm",), Op.RC_WRITE_ONLY: ("reth",),
        Op.RC_WRITE_ONLY_IMM: ("reth", "imm"), Op.RC_READ_REQUEST: ("reth",), Op.RC_ACK: ("aeth",),
        Op.RC_READ_RESP_FIRST: ("aeth",), Op.RC_WRITE_MIDDLE: (), Op.CNP: ("cnp",),
        Op.MR_WRITE: ("mrdh", "reth"), Op.MR_WRITE_IMM: ("mrdh", "reth", "imm"),
        Op.MR_SEND: ("mrdh", "mrsh"), Op.MR_SEND_IMM: ("mrdh", "mrsh", "imm"),
        Op.MR_ACK: ("mrah",), Op.MR_NAK: ("mrnh",),
    }[op]
    return b"".join(table[n][0] for n in names), {n: table[n][1] for n in names if n != "cnp"}


HAS_PAYLOAD = {Op.RC_SEND_ONLY, Op.RC_SEND_ONLY_IMM, Op.RC_WRITE_ONLY, Op.RC_WRITE_ONLY_IMM,
               Op.RC_READ_RESP_FIRST, Op.RC_WRITE_MIDDLE, Op.MR_WRITE, Op.MR_WRITE_IMM, Op.MR_SEND,
               Op.MR_SEND_IMM}
OPS = sorted(HAS_PAYLOAD | {Op.RC_READ_REQUEST, Op.RC_ACK, Op.CNP, Op.MR_ACK, Op.MR_NAK})


def scapy_frame(op, version=4, vlan=None, psn=0x345678, payload=b"hello", *, fecn=0, becn=0, tos=0x6A):
    """A RoCEv2 frame built by scapy, with the spec's extension header bytes."""
    if op not in HAS_PAYLOAD:
        payload = b""
    pad = (-len(payload)) % 4
    ext, _ = ext_bytes(op)
    l2 = Ether(src=MAC_A, dst=MAC_B)
    if vlan is not None:
        l2 = l2 / Dot1Q(vlan=vlan, prio=3)
    if version == 4:
        l3 = SIP(src="10.1.2.3", dst="10.4.5.6", tos=tos, ttl=31, id=0x777, flags="DF")
    else:
        l3 = IPv6(src="2001:db8::a", dst="2001:db8::b", tc=tos, fl=0x12345, hlim=9)
    bth = SBTH(opcode=int(op), solicited=1, migreq=1, padcount=pad, pkey=0x7FFF, fecn=fecn, becn=becn,
               dqpn=0xFEDCBA, ackreq=1, psn=psn)
    if op == Op.RC_ACK:
        upper = bth / SAETH(syndrome=0x1F, msn=0x123456)
    elif op == Op.CNP:
        upper = bth / CNPPadding()
    else:
        upper = bth / Raw(ext + payload + bytes(pad)) if ext or payload else bth
    return l2 / l3 / SUDP(sport=0xC123, dport=4791) / upper


def assert_matches_scapy(f, pkt, op, payload):
    """The decoded frame ``f`` has the fields scapy put into ``pkt``."""
    assert f.eth.src == MAC_A and f.eth.dst == MAC_B
    if Dot1Q in pkt:
        assert f.eth.vlan == pkt[Dot1Q].vlan and f.eth.pcp == pkt[Dot1Q].prio
    else:
        assert f.eth.vlan is None
    if SIP in pkt:
        ip = pkt[SIP]
        assert (f.ip.version, f.ip.src, f.ip.dst, f.ip.ttl, f.ip.ident) == (4, ip.src, ip.dst, ip.ttl, ip.id)
        tos = ip.tos
    else:
        ip = pkt[IPv6]
        assert (f.ip.version, f.ip.src, f.ip.dst, f.ip.ttl, f.ip.flow_label) == (6, ip.src, ip.dst, ip.hlim, ip.fl)
        tos = ip.tc
    assert (f.ip.dscp, f.ip.ecn) == (tos >> 2, tos & 3)
    assert (f.udp.sport, f.udp.dport) == (pkt[SUDP].sport, 4791)
    b = pkt[SBTH]
    assert (f.bth.opcode, f.bth.se, f.bth.mig, f.bth.pad, f.bth.tver, f.bth.pkey, f.bth.fecn, f.bth.becn,
            f.bth.dest_qp, f.bth.ack_req, f.bth.psn) == \
        (b.opcode, b.solicited, b.migreq, b.padcount, b.version, b.pkey, b.fecn, b.becn, b.dqpn, b.ackreq, b.psn)
    _, want = ext_bytes(op)
    for name in ("reth", "aeth", "imm", "mrdh", "mrsh", "mrah", "mrnh"):
        assert getattr(f, name) == want.get(name), name
    assert f.payload == (payload if op in HAS_PAYLOAD else b"")
    assert f.icrc_ok is True


def scapy_icrc_bytes(data):
    """The ICRC scapy computes for the frame ``data`` (wire byte order)."""
    p = Ether(data)
    p[SBTH].icrc = None
    return bytes(p)[-4:] if SIP not in p else _ip_end(p)


def _ip_end(p):
    b = bytes(p)
    end = (18 if Dot1Q in p else 14) + p[SIP].len
    return b[end - 4:end]


CASES = [(v, vlan, psn, n) for v in (4, 6) for vlan in (None, 42) for psn in PSN_EDGES for n in range(4)]


@pytest.mark.parametrize("version,vlan,psn,n", CASES)
def test_scapy_built_frames_decode(version, vlan, psn, n):
    """MR-WIRE-010, MR-WIRE-011, MR-WIRE-020, MR-WIRE-030, MR-WIRE-040, MR-WIRE-050, MR-WIRE-080, MR-WIRE-091,
    MR-WIRE-092, MR-WIRE-093: scapy-built frames (IPv4/IPv6, with and without VLAN, PSN edge values, pad
    0-3) decode field for field with a good ICRC."""
    payload = bytes(range(100, 108 + n))  # 8 + n bytes: pad (-n) mod 4
    for op in (Op.RC_SEND_ONLY, Op.RC_WRITE_ONLY_IMM, Op.MR_WRITE):
        pkt = scapy_frame(op, version, vlan, psn, payload)
        data = bytes(pkt)
        f = codec.decode(data)
        assert_matches_scapy(f, Ether(data), op, payload)
        assert f.bth.pad == (-len(payload)) % 4
        # The ICRC the codec read is the one scapy computed (little-endian on the wire, MR-WIRE-093).
        assert f.icrc.to_bytes(4, "little") == struct.pack("!I", Ether(data)[SBTH].icrc)


@pytest.mark.parametrize("op", OPS, ids=lambda o: o.name)
@pytest.mark.parametrize("version,vlan", [(4, None), (6, None), (4, 4094), (6, 1)])
def test_scapy_built_every_header_decodes(op, version, vlan):
    """MR-WIRE-060, MR-WIRE-061, MR-WIRE-062, MR-WIRE-064, MR-WIRE-070, MR-WIRE-071, MR-WIRE-072, MR-WIRE-073,
    MR-WIRE-074: RETH, AETH, ImmDt, CNP and MetaRoCE headers written by scapy/struct decode."""
    pkt = scapy_frame(op, version, vlan, payload=b"abc")
    data = bytes(pkt)
    f = codec.decode(data)
    assert_matches_scapy(f, Ether(data), op, b"abc")


@pytest.mark.parametrize("version", [4, 6])
@pytest.mark.parametrize("tos", [0, 1, 2, 3, 0xFF])
def test_scapy_ecn_and_fecn_becn(version, tos):
    """MR-WIRE-022, MR-WIRE-092: any ECN/DSCP and FECN/BECN values (masked from the ICRC) decode."""
    pkt = scapy_frame(Op.MR_SEND, version, psn=5, fecn=1, becn=1, tos=tos)
    f = codec.decode(bytes(pkt))
    assert (f.ip.dscp, f.ip.ecn, f.bth.fecn, f.bth.becn) == (tos >> 2, tos & 3, 1, 1)


def codec_frame(op, version, vlan, psn, payload):
    _, hdrs = ext_bytes(op)
    ip = IP(4, "172.16.0.1", "172.16.0.2", dscp=26, ecn=2, ttl=7, ident=99) if version == 4 else \
        IP(6, "fe80::1", "fe80::2", dscp=26, ecn=2, ttl=7, flow_label=0xFFFFF)
    return codec.make(op, payload if op in HAS_PAYLOAD else b"", eth=Eth(dst=MAC_B, src=MAC_A, vlan=vlan),
                      ip=ip, udp=UDP(sport=0xFFFF), bth=BTH(se=1, pkey=0x1234, becn=1, dest_qp=0x000001,
                                                             ack_req=1, psn=psn), **hdrs)


@pytest.mark.parametrize("version,vlan,psn,n", CASES)
def test_codec_built_frames_parse_in_scapy(version, vlan, psn, n):
    """MR-WIRE-010, MR-WIRE-011, MR-WIRE-020, MR-WIRE-023, MR-WIRE-030, MR-WIRE-042, MR-WIRE-050, MR-WIRE-080,
    MR-WIRE-091, MR-WIRE-092, MR-WIRE-093: codec-built frames parse in scapy with the same fields, and
    scapy recomputes the same ICRC, IPv4 header checksum and IPv6 UDP checksum."""
    payload = bytes(range(1, 1 + 4 + n))
    for op in (Op.RC_WRITE_ONLY, Op.MR_SEND_IMM, Op.MR_ACK):
        f = codec_frame(op, version, vlan, psn, payload)
        data = codec.encode(f)
        p = Ether(data)
        assert Raw not in p or SBTH in p
        assert_matches_scapy(codec.decode(data), p, op, payload)
        b = p[SBTH]
        assert (b.opcode, b.psn, b.padcount, b.dqpn, b.becn, b.pkey) == (op, psn, (-len(payload)) % 4 if op in HAS_PAYLOAD else 0, 1, 1, 0x1234)
        ext, _ = ext_bytes(op)
        pay = payload if op in HAS_PAYLOAD else b""
        assert bytes(b.payload) == ext + pay + bytes((-len(pay)) % 4)
        # scapy recomputes the ICRC and the checksums to the same bytes.
        q = Ether(data)
        q[SBTH].icrc = None
        if version == 4:
            q[SIP].chksum = None
            q[SIP].len = None
        else:
            q[SUDP].chksum = None
            q[IPv6].plen = None
        q[SUDP].len = None
        assert bytes(q) == data


@pytest.mark.parametrize("op", OPS, ids=lambda o: o.name)
def test_codec_built_every_header_in_scapy(op):
    """MR-WIRE-052, MR-WIRE-060, MR-WIRE-061, MR-WIRE-062, MR-WIRE-064, MR-WIRE-071, MR-WIRE-072, MR-WIRE-073,
    MR-WIRE-074: every header set, byte for byte against the spec layout, and scapy's ICRC over the codec's
    frame is the codec's."""
    f = codec_frame(op, 6, 9, 77, b"xyz")
    data = codec.encode(f)
    p = Ether(data)
    ext, _ = ext_bytes(op)
    pay = b"xyz\0" if op in HAS_PAYLOAD else b""
    assert bytes(p[SBTH].payload) == ext + pay
    assert scapy_icrc_bytes(data) == data[-4:]


# ---------------------------------------------------------------------------------------------
# Error reasons on scapy-built frames (MR-WIRE-100, MR-WIRE-101, MR-WIRE-102)

def reason(data):
    with pytest.raises(DecodeError) as ei:
        codec.decode(bytes(data))
    return ei.value.reason


def test_scapy_not_roce():
    """MR-WIRE-040, MR-WIRE-101: ARP, TCP, UDP to another port, and UDP from port 4791 are `not_roce`."""
    eth = Ether(src=MAC_A, dst=MAC_B)
    assert reason(eth / ARP(psrc="10.0.0.1", pdst="10.0.0.2")) == Reason.NOT_ROCE
    assert reason(eth / SIP() / TCP(dport=4791) / Raw(bytes(40))) == Reason.NOT_ROCE
    assert reason(eth / SIP() / SUDP(dport=4790) / SBTH() / Raw(b"abcd")) == Reason.NOT_ROCE
    assert reason(eth / IPv6() / SUDP(sport=4791, dport=53) / Raw(bytes(20))) == Reason.NOT_ROCE
    assert reason(eth / IPv6() / TCP() / Raw(bytes(20))) == Reason.NOT_ROCE
    assert reason(eth / SIP(options=[b"\x01\x01\x01\x00"]) / SUDP(dport=4791) / SBTH()) == Reason.NOT_ROCE
    assert reason(eth / SIP(flags="MF") / SUDP(dport=4791) / SBTH()) == Reason.NOT_ROCE


def test_scapy_bad_ip_checksum():
    """MR-WIRE-023: scapy frame with a wrong IPv4 header checksum is `bad_ip`."""
    pkt = scapy_frame(Op.MR_WRITE)
    good = bytes(pkt)
    ck = Ether(good)[SIP].chksum
    pkt[SIP].chksum = ck ^ 0x0100
    assert reason(pkt) == Reason.BAD_IP


@pytest.mark.parametrize("opcode", [0x15, 0x16, 0x20, 0x2A, 0x40, 0x64, 0x65, 0xCF, 0xDF, 0xE0])
def test_scapy_bad_opcode(opcode):
    """MR-WIRE-051: unassigned RC, UC/RD/UD and unassigned manufacturer opcodes are `bad_opcode`."""
    assert reason(Ether() / SIP() / SUDP(dport=4791) / SBTH(opcode=opcode) / Raw(bytes(28))) == Reason.BAD_OPCODE


def test_scapy_bad_version():
    """MR-WIRE-050, MR-WIRE-075: BTH TVer 1 and a MetaRoCE header version 2 are `bad_version`."""
    assert reason(Ether() / SIP() / SUDP(dport=4791) / SBTH(opcode=4, version=1) / Raw(b"abcd")) == Reason.BAD_VERSION
    mrdh_v2 = struct.pack("!BBHIII", 0x20, 0, 0, 0, 0, 0)
    assert reason(Ether() / IPv6() / SUDP(dport=4791) / SBTH(opcode=0xC0) / Raw(mrdh_v2 + bytes(16))) == \
        Reason.BAD_VERSION


def test_scapy_length():
    """MR-WIRE-101: UDP length disagreeing with the IP length, a short header, trailing bytes
    after an ACK and a pad larger than the payload are `length`."""
    pkt = scapy_frame(Op.RC_SEND_ONLY, payload=b"abcdefgh")
    good = bytes(pkt)
    pkt[SUDP].len = Ether(good)[SUDP].len - 4
    assert reason(pkt) == Reason.LENGTH
    short_mrah = struct.pack("!BBHIII", 0x10, 0, 0, 0, 0, 0)
    assert reason(Ether() / SIP() / SUDP(dport=4791) / SBTH(opcode=0xC4) / Raw(short_mrah)) == Reason.LENGTH
    assert reason(Ether() / SIP() / SUDP(dport=4791) / SBTH(opcode=0x11) / SAETH() / Raw(b"\0\0\0\0")) == Reason.LENGTH
    assert reason(Ether() / SIP() / SUDP(dport=4791) / SBTH(opcode=0x11, padcount=2) / SAETH()) == Reason.LENGTH


def test_scapy_icrc():
    """MR-WIRE-093: a scapy frame with a wrong ICRC is `icrc`; the same frame with scapy's
    computed ICRC is accepted."""
    pkt = scapy_frame(Op.MR_SEND_IMM, 6, 7)
    good = bytes(pkt)
    assert codec.decode(good).icrc_ok
    pkt[SBTH].icrc = Ether(good)[SBTH].icrc ^ 1
    assert reason(pkt) == Reason.ICRC


@pytest.mark.parametrize("version,vlan", [(4, None), (6, 99)])
def test_scapy_truncated(version, vlan):
    """MR-WIRE-102: every prefix of a scapy-built frame is `truncated`."""
    data = bytes(scapy_frame(Op.MR_WRITE_IMM, version, vlan))
    for n in range(len(data)):
        assert reason(data[:n]) == Reason.TRUNCATED, n
