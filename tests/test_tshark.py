"""Wireshark (tshark) as an independent dissector of the codec's frames (MR-WIRE-002, -050..074).

tshark decodes RoCEv2 on UDP port 4791 by default: its BTH, RETH, AETH and ImmDt fields must be
the codec's. With the project's Lua post-dissector (metaroce/dissector/metaroce.lua, shipped in
the package) it also shows the MetaRoCE headers, which must again be the codec's.
"""
import importlib.resources
import shutil
import subprocess

import pytest

from metaroce.models import codec, pcap, wire
from metaroce.models.codec import AETH, BTH, IP, MRAH, MRDH, MRNH, MRSH, RETH, UDP, AtomicAck, AtomicETH, Eth
from metaroce.models.wire import Op

TSHARK = shutil.which("tshark")

def needs_tshark(test):
    skip = pytest.mark.skipif(TSHARK is None,
                              reason="tshark is not installed (apt-get install tshark; .ci/run installs it)")
    return pytest.mark.tshark(skip(test))


PSN_EDGES = [0, (1 << 23) - 1, 1 << 23, (1 << 24) - 1]
LUA = importlib.resources.files("metaroce") / "dissector" / "metaroce.lua"


# Upper-layer protocols whose heuristics claim RDMA SEND payloads (e.g. RPC-over-RDMA takes one
# that starts with zeros); disabled so that the payload stays visible as data.
RDMA_ULPS = ["smc", "smb_direct", "rpcordma", "nvme-rdma", "lnet", "iser", "infiniband_sdp", "fcoib"]


def tshark_fields(path, fields, *extra):
    cmd = [TSHARK, "-n", "-r", str(path), *extra]
    for p in RDMA_ULPS:
        cmd += ["--disable-protocol", p]
    cmd += [ "-T", "fields", "-E", "separator=|", "-E", "occurrence=f"]
    for f in fields:
        cmd += ["-e", f]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return [dict(zip(fields, line.split("|"))) for line in r.stdout.splitlines()]


def num(s):
    """A tshark field value as an int (booleans print as 1/0 or True/False depending on version)."""
    if s in ("True", "False"):
        return int(s == "True")
    return int(s, 0) if s.startswith("0x") else int(s)


def rc_frames():
    """Codec-built RoCEv2 frames: every RC opcode, IPv4/IPv6, VLAN or not, PSN edge values, pad 0-3."""
    out = []
    i = 0
    for op in Op:
        if op in wire.MR_OPS:
            continue
        for version, vlan in [(4, None), (6, None), (4, 10), (6, 4000)]:
            psn = PSN_EDGES[i % 4]
            hdrs = {"reth": RETH(0x0001020304050607 + i, 0xA0B0C0D0 + i, 1000 + i), "aeth": AETH(0x60 + i % 4, 500 + i),
                    "imm": 0xF00D0000 + i, "atomicack": AtomicAck(i),
                    "atomiceth": AtomicETH(0x1000 + 8 * i, 0xB0C0D0E0 + i, 5 + i, 7 + i)}
            ip = IP(4, "10.0.0.1", f"10.0.1.{i % 250}") if version == 4 else IP(6, "fd00::1", f"fd00::{i + 2:x}")
            payload = bytes(range(i % 7)) if op in wire.PAYLOAD_OPS else b""
            f = codec.make(op, payload, eth=Eth(vlan=vlan), ip=ip, udp=UDP(sport=0xC000 + i),
                           bth=BTH(se=i % 2, mig=(i // 2) % 2, pkey=0xFFFF - i, dest_qp=(i * 0x10101) & 0xFFFFFF,
                                   ack_req=(i // 3) % 2, psn=psn),
                           **{n: hdrs[n] for n in wire.HEADERS[op] if n != "cnp"})
            out.append(f)
            i += 1
    return out


BTH_FIELDS = ["frame.number", "infiniband.bth.opcode", "infiniband.bth.se", "infiniband.bth.m",
              "infiniband.bth.padcnt", "infiniband.bth.tver", "infiniband.bth.p_key", "infiniband.bth.destqp",
              "infiniband.bth.a", "infiniband.bth.psn", "infiniband.invariant.crc", "infiniband.reth.va",
              "infiniband.reth.r_key", "infiniband.reth.dmalen", "infiniband.aeth.syndrome", "infiniband.aeth.msn",
              "infiniband.immdt", "vlan.id", "ip.dst", "ipv6.dst", "udp.srcport", "udp.dstport", "data.data"]


@needs_tshark
def test_tshark_dissects_codec_rocev2_frames(tmp_path):
    """MR-WIRE-002, MR-WIRE-050, MR-WIRE-060, MR-WIRE-061, MR-WIRE-062, MR-WIRE-093: tshark reads the codec's
    RoCEv2 frames with the same BTH, RETH, AETH and ImmDt fields and the same ICRC bytes."""
    frames = rc_frames()
    datas = [codec.encode(f) for f in frames]
    path = tmp_path / "rc.pcap"
    pcap.write(path, datas)
    rows = tshark_fields(path, BTH_FIELDS)
    assert len(rows) == len(frames)
    for f, data, row in zip(frames, datas, rows):
        b = f.bth
        got = {k.split(".")[-1]: row[k] for k in BTH_FIELDS if k.startswith("infiniband.bth.")}
        assert num(got["opcode"]) == b.opcode
        assert (num(got["se"]), num(got["m"]), num(got["padcnt"]), num(got["tver"])) == (b.se, b.mig, b.pad, 0)
        assert (num(got["p_key"]), num(got["destqp"]), num(got["a"]), num(got["psn"])) == \
            (b.pkey, b.dest_qp, b.ack_req, b.psn)
        if row["infiniband.invariant.crc"]:
            # tshark shows the four ICRC bytes as a big-endian number.
            assert num(row["infiniband.invariant.crc"]) == int.from_bytes(data[-4:], "big")
        if f.reth is not None:
            assert (num(row["infiniband.reth.va"]), num(row["infiniband.reth.r_key"]),
                    num(row["infiniband.reth.dmalen"])) == (f.reth.va, f.reth.rkey, f.reth.dma_len)
        if f.aeth is not None:
            assert (num(row["infiniband.aeth.syndrome"]), num(row["infiniband.aeth.msn"])) == \
                (f.aeth.syndrome, f.aeth.msn)
        if f.imm is not None:
            assert int(row["infiniband.immdt"].replace(":", ""), 16) == f.imm
        assert row["vlan.id"] == ("" if f.eth.vlan is None else str(f.eth.vlan))
        assert row["ip.dst" if f.ip.version == 4 else "ipv6.dst"] == f.ip.dst
        assert (num(row["udp.srcport"]), num(row["udp.dstport"])) == (f.udp.sport, 4791)
        if f.payload:
            assert bytes.fromhex(row["data.data"].replace(":", "")) == f.payload + bytes(b.pad)
    # The ICRC was present for every opcode tshark knows beyond CNP.
    assert sum(1 for r in rows if r["infiniband.invariant.crc"]) >= len(frames) - 4


def mr_frames():
    out = []
    for i, op in enumerate(sorted(wire.MR_OPS) * 2):
        version = 4 if i < 6 else 6
        mrdh = MRDH(flags=(i % 8), path=(i * 40) % 256, stream=1000 + i, msg=(0xFFFFFFF0 + i) & 0xFFFFFFFF, offset=4096 * i,
                    msg_len=65536 + i)
        hdrs = {"mrdh": mrdh, "reth": RETH(0xAABBCCDD00000000 + i, 0x1000 + i, 64 + i), "mrsh": MRSH(i * 3),
                "imm": 0x12340000 + i,
                "mrah": MRAH(flags=i % 2, path=i, ce_count=i * 7, cum_psn=PSN_EDGES[i % 4], rate_mbps=25000 * i,
                             trigger_psn=PSN_EDGES[(i + 1) % 4], sack=((1 << 256) - 1) >> i | 1 << i),
                "mrnh": MRNH(path=i, reason=1 + i % 8, psn=PSN_EDGES[i % 4]),
                "mrsec": codec.MRSEC(flags=i % 2, next_op=0xC0 + i % 6, path=i, epoch=i * 3, seq=(1 << 63) + i),
                "mrch": codec.MRCH(flags=i % 4, reason=i % 7, paths=i + 1, attempt=i, src_qpn=0xABC000 + i,
                                   dst_qpn=0x123000 + i, init_psn=PSN_EDGES[i % 4], mtu=4096 - i,
                                   nonce=(1 << 127) + i)}
        ip = IP(4, "10.0.0.1", "10.0.0.2") if version == 4 else IP(6, "fd00::1", "fd00::2")
        payload = bytes(range(3 + i)) if op in wire.PAYLOAD_OPS else b""
        out.append(codec.make(op, payload, ip=ip, eth=Eth(vlan=7 if i % 3 == 0 else None),
                              bth=BTH(dest_qp=0x400 + i, psn=PSN_EDGES[i % 4]),
                              **{n: hdrs[n] for n in wire.HEADERS[op]}))
    return out


MR_FIELDS = {
    "mrdh": ["version", "flags", "path", "stream", "msg", "offset", "msg_len"],
    "reth": ["va", "rkey", "dma_len"],
    "mrsh": ["recv_seq"],
    "mrah": ["version", "flags", "path", "ce_count", "cum_psn", "rate_mbps", "trigger_psn", "sack"],
    "mrnh": ["version", "flags", "path", "reason", "psn"],
    "mrsec": ["version", "flags", "next_op", "path", "epoch", "seq"],
    "mrch": ["version", "flags", "reason", "paths", "attempt", "src_qpn", "dst_qpn", "init_psn", "mtu", "nonce"],
}


def test_lua_dissector_ships_in_package():
    """The dissector is package data (pyproject: package-data metaroce = dissector/*.lua)."""
    assert LUA.is_file() and "register_postdissector" in LUA.read_text()


@needs_tshark
def test_lua_dissector_metaroce_fields(tmp_path):
    """MR-WIRE-070, MR-WIRE-071, MR-WIRE-072, MR-WIRE-073, MR-WIRE-074, MR-WIRE-076, MR-WIRE-078, MR-WIRE-080, MR-WIRE-082:
    with metaroce.lua, tshark
    shows the codec's MetaRoCE headers field for field; RoCEv2 frames get no MetaRoCE tree."""
    frames = mr_frames()
    rc = codec.make(Op.RC_SEND_ONLY, b"plain")
    path = tmp_path / "mr.pcap"
    pcap.write(path, [codec.encode(f) for f in frames] + [codec.encode(rc)])
    names = ["frame.number", "infiniband.bth.opcode", "infiniband.bth.psn", "infiniband.bth.destqp",
             "metaroce.opcode", "metaroce.imm", "metaroce.payload_len", "metaroce.payload",
             "metaroce.mrah.sack_count", "metaroce.mrdh.flags.last", "metaroce.mrah.flags.ece"]
    names += [f"metaroce.{h}.{k}" for h, ks in MR_FIELDS.items() for k in ks]
    rows = tshark_fields(path, names, "-X", f"lua_script:{LUA}")
    assert len(rows) == len(frames) + 1
    for f, row in zip(frames, rows):
        assert num(row["metaroce.opcode"]) == f.bth.opcode == num(row["infiniband.bth.opcode"])
        assert (num(row["infiniband.bth.psn"]), num(row["infiniband.bth.destqp"])) == (f.bth.psn, f.bth.dest_qp)
        for h in wire.HEADERS[Op(f.bth.opcode)]:
            if h == "imm":
                assert num(row["metaroce.imm"]) == f.imm
                continue
            for k in MR_FIELDS[h]:
                got = row[f"metaroce.{h}.{k}"]
                want = getattr(getattr(f, h), k)
                if k == "sack":
                    assert bytes.fromhex(got.replace(":", "")) == want.to_bytes(32, "big")
                elif k == "nonce":
                    assert bytes.fromhex(got.replace(":", "")) == want.to_bytes(16, "big")
                else:
                    assert num(got) == want, (h, k)
        for h in set(MR_FIELDS) - set(wire.HEADERS[Op(f.bth.opcode)]):
            assert row[f"metaroce.{h}.{MR_FIELDS[h][0]}"] == "", h
        if f.bth.opcode in wire.PAYLOAD_OPS:
            assert num(row["metaroce.payload_len"]) == len(f.payload)
            assert bytes.fromhex(row["metaroce.payload"].replace(":", "")) == f.payload
            if f.mrdh is not None:
                assert num(row["metaroce.mrdh.flags.last"]) == f.mrdh.flags & 1
        if f.mrah is not None:
            assert num(row["metaroce.mrah.sack_count"]) == bin(f.mrah.sack).count("1")
            assert num(row["metaroce.mrah.flags.ece"]) == f.mrah.flags & 1
    assert rows[-1]["metaroce.opcode"] == "" and num(rows[-1]["infiniband.bth.opcode"]) == Op.RC_SEND_ONLY


@needs_tshark
def test_lua_dissector_flags_malformed(tmp_path):
    """MR-WIRE-075, MR-WIRE-081: a MetaRoCE header with version 2 or one cut short is marked with an
    expert item, and the dissector does not fail on it."""
    good = codec.encode(codec.make(Op.MR_ACK, mrah=MRAH(path=1)))
    bth = 14 + 20 + 8
    bad_version = bytearray(good)
    bad_version[bth + 12] = 0x21
    # An MRAH cut to 20 bytes, with IP/UDP lengths kept consistent by the codec's own encoder:
    # encode an MR_NAK frame (8-byte header) and relabel its opcode as MR_ACK.
    nak = bytearray(codec.encode(codec.make(Op.MR_NAK, mrnh=MRNH(path=1))))
    nak[bth] = Op.MR_ACK
    path = tmp_path / "bad.pcap"
    pcap.write(path, [good, bytes(bad_version), bytes(nak)])
    lua = ["-X", f"lua_script:{LUA}"]
    rows = tshark_fields(path, ["frame.number"], *lua, "-Y", "metaroce.bad_version")
    assert [r["frame.number"] for r in rows] == ["2"]
    rows = tshark_fields(path, ["frame.number"], *lua, "-Y", "metaroce.length")
    assert [r["frame.number"] for r in rows] == ["3"]
    rows = tshark_fields(path, ["frame.number", "metaroce.mrah.path"], *lua, "-Y", "metaroce")
    assert [r["frame.number"] for r in rows] == ["1", "2", "3"] and rows[0]["metaroce.mrah.path"] == "1"


@needs_tshark
def test_lua_dissector_survives_mutated_frames(tmp_path):
    """MR-WIRE-105 (for the dissector): truncated and corrupted MetaRoCE frames never make the Lua
    dissector fail; every frame is still listed."""
    import random

    rnd = random.Random(2026)
    base = [codec.encode(f) for f in mr_frames()]
    frames = []
    for _ in range(600):
        b = bytearray(rnd.choice(base))
        kind = rnd.randrange(3)
        if kind == 0:
            b = b[:rnd.randrange(40, len(b))]
        elif kind == 1:
            for _ in range(3):
                b[rnd.randrange(42, len(b))] = rnd.randrange(256)
        else:
            del b[rnd.randrange(54, len(b))]
        frames.append(bytes(b))
    path = tmp_path / "fuzz.pcap"
    pcap.write(path, frames)
    r = subprocess.run([TSHARK, "-n", "-X", f"lua_script:{LUA}", "-r", str(path), "-V"], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "Lua Error" not in r.stdout and "Lua Error" not in r.stderr
    assert r.stdout.count("\nFrame ") + r.stdout.startswith("Frame ") == len(frames)
    assert r.stdout.count("\nMetaRoCE\n") > len(frames) // 2
