"""The project's scapy layers (models/scapy_layers.py) against the codec (MR-WIRE-052, -060..074).

Packets crafted the usual scapy way with the layers decode with the codec field for field (with
the ICRC scapy's BTH computed), and codec-built frames dissect into the layers field for field.
"""
import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scapy.layers.inet import IP as SIP
from scapy.layers.inet import UDP as SUDP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import Dot1Q, Ether
from scapy.packet import Raw

from metaroce.models import codec, wire
from metaroce.models.codec import BTH, IP, MRAH, MRCH, MRDH, MRNH, MRSEC, MRSH, RETH, AETH, AtomicAck, Eth, UDP
from metaroce.models.codec import AtomicETH as CAtomicETH
from metaroce.models.scapy_layers import AETH as SAETH
from metaroce.models.scapy_layers import BTH as SBTH
from metaroce.models.scapy_layers import CNPPadding
from metaroce.models.scapy_layers import MRAH as LMRAH
from metaroce.models.scapy_layers import MRDH as LMRDH
from metaroce.models.scapy_layers import MRNH as LMRNH
from metaroce.models.scapy_layers import MRCH as LMRCH
from metaroce.models.scapy_layers import MRSEC as LMRSEC
from metaroce.models.scapy_layers import MRSH as LMRSH
from metaroce.models.scapy_layers import RETH as LRETH
from metaroce.models.scapy_layers import AtomicAckETH, AtomicETH, ImmDt, pad_payload
from metaroce.models.wire import Op

LAYER = {"reth": LRETH, "aeth": SAETH, "imm": ImmDt, "atomicack": AtomicAckETH, "atomiceth": AtomicETH,
         "cnp": CNPPadding, "mrdh": LMRDH, "mrsh": LMRSH, "mrah": LMRAH, "mrnh": LMRNH,
         "mrsec": LMRSEC, "mrch": LMRCH}

SAMPLE = {
    "reth": RETH(0xFEDCBA9876543210, 0x01234567, 0x89ABCDEF),
    "aeth": AETH(0x61, 0xFFFFFF),
    "imm": 0x0BADF00D,
    "atomicack": AtomicAck(0x1122334455667788),
    "atomiceth": CAtomicETH(0x8877665544332211, 0xA5A5A5A5, 0x0102030405060708, 0xF0E0D0C0B0A09080),
    "mrdh": MRDH(1, 0b0111, 254, 4242, 0xFFFFFFFF, 0x10000, 0x20000),
    "mrsh": MRSH(0x80000001),
    "mrah": MRAH(1, 1, 17, 65535, 0x00FFFFFF, 400000, 0x00000001, (1 << 256) - 1 - (1 << 7)),
    "mrnh": MRNH(1, 0, 31, int(wire.NakReason.BOUNDS), 0x00C0FFEE),
    "mrsec": MRSEC(1, 1, 0xC2, 3, 200, 0x0102030405060708),
    "mrch": MRCH(1, 3, 0, 8, 1, 0x00ABCD, 0x000123, 0xFFFFFF, 1500, (1 << 128) - 2),
}


def fields(h):
    return {"imm": h} if isinstance(h, int) else dataclasses.asdict(h)


def craft(op, version=4, vlan=None, payload=b"", psn=0x654321, headers=SAMPLE):
    """An MR or RC frame crafted with the layers, the way a scapy user would."""
    padcount, padded = pad_payload(payload if op in wire.PAYLOAD_OPS else b"")
    l2 = Ether(src="02:00:00:00:00:aa", dst="02:00:00:00:00:bb")
    if vlan is not None:
        l2 = l2 / Dot1Q(vlan=vlan)
    l3 = SIP(src="10.0.0.1", dst="10.0.0.2", tos=0x6A) if version == 4 else IPv6(src="fd00::1", dst="fd00::2", tc=0x6A)
    pkt = l2 / l3 / SUDP(sport=0xC042, dport=4791) / SBTH(opcode=int(op), dqpn=0x00BEEF, psn=psn, padcount=padcount)
    for name in wire.HEADERS[op]:
        pkt = pkt / (CNPPadding() if name == "cnp" else LAYER[name](**fields(headers[name])))
    if padded:
        pkt = pkt / Raw(padded)
    return pkt


@pytest.mark.parametrize("op", list(Op), ids=lambda o: o.name)
@pytest.mark.parametrize("version,vlan", [(4, None), (6, 300)])
def test_crafted_with_layers_decode(op, version, vlan):
    """MR-WIRE-052, MR-WIRE-060, MR-WIRE-061, MR-WIRE-062, MR-WIRE-063, MR-WIRE-064, MR-WIRE-070, MR-WIRE-071,
    MR-WIRE-072, MR-WIRE-073, MR-WIRE-074, MR-WIRE-065, MR-WIRE-093: layer-crafted frames of every opcode decode field
    for field with the ICRC computed by scapy's BTH."""
    payload = b"metaroce!"
    data = bytes(craft(op, version, vlan, payload))
    f = codec.decode(data)
    assert f.icrc_ok is True
    assert f.bth.opcode == op and f.bth.psn == 0x654321 and f.bth.dest_qp == 0xBEEF
    assert f.eth.vlan == vlan and f.ip.version == version
    for name in ("reth", "aeth", "imm", "atomicack", "mrdh", "mrsh", "mrah", "mrnh"):
        want = SAMPLE[name] if name in wire.HEADERS[op] else None
        assert getattr(f, name) == want, name
    assert f.payload == (payload if op in wire.PAYLOAD_OPS else b"")


@pytest.mark.parametrize("op", list(Op), ids=lambda o: o.name)
@pytest.mark.parametrize("version", [4, 6])
def test_codec_frames_dissect_into_layers(op, version):
    """MR-WIRE-052, MR-WIRE-060, MR-WIRE-061, MR-WIRE-062, MR-WIRE-063, MR-WIRE-064, MR-WIRE-070, MR-WIRE-071,
    MR-WIRE-072, MR-WIRE-073, MR-WIRE-074: codec-built frames dissect into the layers, in the header order
    of the opcode, with the same field values."""
    hdrs = {n: SAMPLE[n] for n in wire.HEADERS[op] if n != "cnp"}
    ip = IP(4, "10.0.0.1", "10.0.0.2") if version == 4 else IP(6, "fd00::1", "fd00::2")
    f = codec.make(op, b"abcde" if op in wire.PAYLOAD_OPS else b"", ip=ip, eth=Eth(vlan=5),
                   udp=UDP(sport=0xD000), bth=BTH(dest_qp=77, psn=(1 << 24) - 1), **hdrs)
    p = Ether(codec.encode(f))
    assert p[SBTH].opcode == op and p[SBTH].psn == (1 << 24) - 1 and p[SBTH].dqpn == 77
    layer = p[SBTH].payload
    for name in wire.HEADERS[op]:
        if op == Op.RC_ATOMIC_ACK and name == "atomicack":
            # scapy's own AETH does not chain further; the bytes parse as AtomicAckETH.
            layer = AtomicAckETH(bytes(layer))
        assert isinstance(layer, LAYER[name]), (name, type(layer))
        if name != "cnp":
            for k, v in fields(SAMPLE[name]).items():
                assert int(getattr(layer, k)) == v, (name, k)
        layer = layer.payload
    if op in wire.PAYLOAD_OPS:
        assert isinstance(layer, Raw) and layer.load == b"abcde\0\0\0"
    else:
        assert not layer or not bytes(layer)


def test_opcode_names_and_flags():
    """MR-WIRE-070, MR-WIRE-071, MR-WIRE-073: the MR opcodes have names in BTH, and flag fields take names."""
    assert SBTH(opcode="MR_ACK").opcode == 0xC4
    assert "MR_WRITE_IMM" in repr(SBTH(opcode=0xC1))
    assert int(LMRDH(flags="FIRST+LAST").flags) == wire.MrdhFlag.FIRST | wire.MrdhFlag.LAST
    assert int(LMRAH(flags="ECE").flags) == wire.MrahFlag.ECE
    assert LMRDH().version == wire.MR_VERSION and len(LMRDH()) == wire.MRDH_LEN
    assert len(LMRAH()) == wire.MRAH_LEN and len(LMRNH()) == wire.MRNH_LEN and len(LMRSH()) == wire.MRSH_LEN
    assert len(LRETH()) == wire.RETH_LEN and len(ImmDt()) == wire.IMM_LEN and len(AtomicAckETH()) == 8


def test_sack_bit_order():
    """MR-WIRE-073: SACK bit 0 is the least significant bit of MRAH byte 47."""
    raw = bytes(LMRAH(sack=1))
    assert raw[47] == 1 and sum(raw[16:47]) == 0
    raw = bytes(LMRAH(sack=1 << 255))
    assert raw[16] == 0x80 and sum(raw[17:48]) == 0


def test_pad_payload():
    """MR-WIRE-080: the helper gives PadCnt and zero pad."""
    assert [pad_payload(b"x" * n) for n in range(5)] == [
        (0, b""), (3, b"x\0\0\0"), (2, b"xx\0\0"), (1, b"xxx\0"), (0, b"xxxx")]


def u(bits):
    return st.integers(0, (1 << bits) - 1)


@settings(max_examples=60, deadline=None)
@given(mrdh=st.builds(MRDH, st.just(1), u(4), u(8), u(16), u(32), u(32), u(32)),
       reth=st.builds(RETH, u(64), u(32), u(32)),
       mrsh=st.builds(MRSH, u(32)), imm=u(32),
       mrah=st.builds(MRAH, st.just(1), u(4), u(8), u(16), u(32), u(32), u(32), u(256)),
       mrnh=st.builds(MRNH, st.just(1), u(4), u(8), u(8), u(32)),
       mrsec=st.builds(MRSEC, st.just(1), u(4), u(8), u(8), u(8), u(64)),
       mrch=st.builds(MRCH, st.just(1), u(4), u(8), u(8), u(8), u(24), u(24), u(24), u(16), u(128)),
       op=st.sampled_from(sorted(wire.MR_OPS)), payload=st.binary(max_size=24), psn=u(24),
       version=st.sampled_from([4, 6]))
def test_property_layers_and_codec_agree(mrdh, reth, mrsh, imm, mrah, mrnh, mrsec, mrch, op, payload, psn,
                                        version):
    """MR-WIRE-071, MR-WIRE-072, MR-WIRE-073, MR-WIRE-074: random MetaRoCE header values agree between the
    layers and the codec, in both directions."""
    hdrs = {"mrdh": mrdh, "reth": reth, "mrsh": mrsh, "imm": imm, "mrah": mrah, "mrnh": mrnh,
            "mrsec": mrsec, "mrch": mrch}
    data = bytes(craft(op, version, payload=payload, psn=psn, headers=hdrs))
    f = codec.decode(data)
    assert f.icrc_ok
    for name in wire.HEADERS[op]:
        assert getattr(f, name) == hdrs[name]
    if version == 6:  # over IPv4 the codec always sets DF, which this scapy frame does not
        assert codec.encode(f) == data
    p = Ether(codec.encode(f))
    for name in wire.HEADERS[op]:
        for k, v in fields(hdrs[name]).items():
            assert int(getattr(p[LAYER[name]], k)) == v


def test_docs_tools_examples_run(tmp_path, monkeypatch):
    """docs/tools.md: the scapy examples run as written, and every frame they build is accepted
    by the codec with the fields the text describes (MR-WIRE-071, MR-WIRE-073, MR-WIRE-074)."""
    import pathlib
    import re

    from metaroce.models import pcap

    md = (pathlib.Path(__file__).resolve().parents[1] / "docs" / "tools.md").read_text()
    code = "\n".join(re.findall(r"```python\n(.*?)```", md, re.S))
    monkeypatch.chdir(tmp_path)
    exec(compile(code, "docs/tools.md", "exec"), {"print": lambda *a: None})
    frames = [codec.decode(r.data) for r in pcap.read(tmp_path / "mr.pcap")]
    assert [f.bth.opcode for f in frames] == [Op.MR_WRITE, Op.MR_SEND_IMM, Op.MR_ACK, Op.MR_NAK]
    assert all(f.icrc_ok for f in frames)
    w, s, a, n = frames
    assert (w.mrdh.path, w.mrdh.offset, w.mrdh.flags, w.payload) == (2, 4090, wire.MrdhFlag.LAST, b"hello!")
    assert (s.eth.vlan, s.mrsh.recv_seq, s.imm, s.payload) == (10, 0, 0xCAFE, b"ping")
    assert (a.mrah.cum_psn, a.mrah.sack, a.mrah.flags) == (101, 0b1010, wire.MrahFlag.ECE)
    assert (n.mrnh.reason, n.mrnh.psn) == (wire.NakReason.RNR, 100)
