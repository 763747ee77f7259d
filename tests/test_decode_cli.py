"""``metaroce decode`` on captures of frames built by scapy, an independent implementation
(MR-WIRE-110, MR-WIRE-120).

The expected JSON objects are computed here from the scapy packets' own fields and the spec's
header layouts, not from the codec.
"""
import json
import struct
import subprocess
import sys

import pytest
from scapy.contrib.roce import AETH as SAETH
from scapy.contrib.roce import BTH as SBTH
from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import ARP, Dot1Q, Ether
from scapy.packet import Raw

from metaroce.cli import main
from metaroce.models import pcap

MAC1, MAC2 = "02:11:22:33:44:55", "02:66:77:88:99:aa"
SACK = (1 << 255) | (1 << 100) | 0b1011


def bth_json(b):
    return {"opcode": b.opcode, "se": b.solicited, "mig": b.migreq, "pad": b.padcount, "tver": b.version,
            "pkey": b.pkey, "fecn": b.fecn, "becn": b.becn, "dest_qp": b.dqpn, "ack_req": b.ackreq, "psn": b.psn}


def base(version, vlan, tos=0x6A):
    l2 = Ether(src=MAC1, dst=MAC2)
    if vlan is not None:
        l2 = l2 / Dot1Q(vlan=vlan)
    if version == 4:
        return l2 / IP(src="10.9.8.7", dst="10.6.5.4", tos=tos, flags="DF")
    return l2 / IPv6(src="2001:db8:1::7", dst="2001:db8:2::4", tc=tos)


def case(version, vlan, opcode, ext=b"", headers=None, payload=b"", psn=0, sport=0xC001, **bth):
    """A scapy frame and the JSON object `metaroce decode --json` must print for it."""
    pad = (-len(payload)) % 4
    pkt = base(version, vlan) / UDP(sport=sport, dport=4791) / SBTH(opcode=opcode, padcount=pad, psn=psn, **bth)
    if ext or payload:
        pkt = pkt / Raw(ext + payload + bytes(pad))
    p = Ether(bytes(pkt))
    ip = p[IP] if version == 4 else p[IPv6]
    tos = ip.tos if version == 4 else ip.tc
    want = {
        "ok": True, "error": None,
        "eth": {"src": MAC1, "dst": MAC2, "vlan": vlan},
        "ip": {"version": version, "src": ip.src, "dst": ip.dst, "dscp": tos >> 2, "ecn": tos & 3},
        "udp": {"sport": sport, "dport": 4791},
        "bth": bth_json(p[SBTH]),
        **(headers or {}),
        "payload_len": len(payload), "icrc_ok": True,
    }
    return bytes(pkt), want


def good_cases():
    va, rkey = 0xFFFF_0000_1234_5678, 0x89ABCDEF
    mrdh = {"version": 1, "flags": 0b101, "path": 200, "stream": 65535, "msg": 4_000_000_000, "offset": 12,
            "msg_len": 4096}
    mrdh_b = struct.pack("!BBHIII", 0x15, 200, 65535, 4_000_000_000, 12, 4096)
    mrah = {"version": 1, "flags": 1, "path": 3, "ce_count": 17, "cum_psn": 0xFFFFFF, "rate_mbps": 12500,
            "trigger_psn": 0x7FFFFF, "sack": SACK}
    mrah_b = struct.pack("!BBHIII", 0x11, 3, 17, 0xFFFFFF, 12500, 0x7FFFFF) + SACK.to_bytes(32, "big")
    return [
        case(4, None, 0x04, payload=b"hi", psn=0, dqpn=0x10),
        case(6, None, 0x0A, struct.pack("!QII", va, rkey, 3), {"reth": {"va": va, "rkey": rkey, "dma_len": 3}},
             b"abc", psn=(1 << 23) - 1, dqpn=0xFFFFFF, solicited=1),
        case(4, 100, 0x0B, struct.pack("!QII", 1, 2, 4) + struct.pack("!I", 0xCAFEBABE),
             {"reth": {"va": 1, "rkey": 2, "dma_len": 4}, "imm": 0xCAFEBABE}, b"wxyz", psn=1 << 23, ackreq=1),
        case(6, 4095, 0x11, struct.pack("!I", (0x60 << 24) | 99), {"aeth": {"syndrome": 0x60, "msn": 99}},
             psn=(1 << 24) - 1, fecn=1, becn=1),
        case(4, None, 0xC0, mrdh_b + struct.pack("!QII", va, rkey, 4096),
             {"mrdh": mrdh, "reth": {"va": va, "rkey": rkey, "dma_len": 4096}}, bytes(range(13)), psn=5),
        case(6, 7, 0xC3, mrdh_b + struct.pack("!I", 42) + struct.pack("!I", 7),
             {"mrdh": mrdh, "mrsh": {"recv_seq": 42}, "imm": 7}, b"x", psn=6),
        case(4, None, 0xC4, mrah_b, {"mrah": mrah}, dqpn=0x000ABC),
        case(6, None, 0xC5, struct.pack("!BBBxI", 0x10, 2, 5, 1234),
             {"mrnh": {"version": 1, "flags": 0, "path": 2, "reason": 5, "psn": 1234}}),
    ]


def bad_cases():
    """(frame bytes, expected error label, fields that must be reported)."""
    good, _ = case(4, None, 0xC0, struct.pack("!BBHIII", 0x10, 0, 0, 0, 0, 0) + bytes(16), payload=b"abcd")
    corrupt = bytearray(good)
    corrupt[-6] ^= 0xFF
    eth = Ether(src=MAC1, dst=MAC2)
    return [
        (bytes(eth / ARP()), "not_roce", {"ip": None, "udp": None, "bth": None}),
        (bytes(eth / IP(src="1.2.3.4") / TCP() / Raw(bytes(30))), "not_roce", {"udp": None}),
        (bytes(eth / IP() / UDP(sport=4791, dport=53) / Raw(bytes(30))), "not_roce",
         {"udp": {"sport": 4791, "dport": 53}, "bth": None}),
        (good[:50], "truncated", {"bth": None, "payload_len": None}),
        (bytes(corrupt), "icrc", {"payload_len": 4}),
        (bytes(eth / IP() / UDP(dport=4791) / SBTH(opcode=0x13, psn=77) / Raw(bytes(28))), "bad_opcode", {}),
        (bytes(eth / IPv6() / UDP(dport=4791) / SBTH(opcode=0x11, version=3) / SAETH()), "bad_version", {}),
    ]


def write_capture(path, frames):
    pcap.write(path, frames)
    return str(path)


def run_json(capsys, path):
    rc = main(["decode", path, "--json"])
    out, err = capsys.readouterr()
    assert rc == 0 and err == ""
    return [json.loads(line) for line in out.splitlines()]


def check_ints(obj):
    """MR-WIRE-110: integers are JSON numbers (not strings, not booleans) in every header."""
    for k, v in obj.items():
        if k in ("ok", "icrc_ok", "error"):
            continue
        if isinstance(v, dict):
            check_ints(v)
        elif k not in ("src", "dst") and v is not None:
            assert type(v) is int, (k, v)


def test_json_field_for_field(tmp_path, capsys):
    """MR-WIRE-110: scapy-built RoCEv2 and MetaRoCE frames (IPv4/IPv6, VLAN, PSN edges) decode
    to the documented JSON names and values, frame numbers 1-based."""
    cases = good_cases()
    objs = run_json(capsys, write_capture(tmp_path / "good.pcap", [d for d, _ in cases]))
    assert len(objs) == len(cases)
    for i, (obj, (_, want)) in enumerate(zip(objs, cases), 1):
        assert obj == {"frame": i, **want}
        check_ints(obj)


def test_json_errors_with_partial_fields(tmp_path, capsys):
    """MR-WIRE-100, MR-WIRE-101, MR-WIRE-102, MR-WIRE-110: malformed frames give `ok` false, the reason, and
    the fields reached."""
    cases = bad_cases()
    objs = run_json(capsys, write_capture(tmp_path / "bad.pcap", [d for d, _, _ in cases]))
    assert len(objs) == len(cases)
    for obj, (data, label, fields) in zip(objs, cases):
        assert obj["ok"] is False and obj["error"] == label and obj["icrc_ok"] is False
        assert obj["eth"] == {"src": MAC1, "dst": MAC2, "vlan": None}
        for k, v in fields.items():
            assert obj[k] == v, (label, k)
    assert objs[1]["ip"]["src"] == "1.2.3.4"
    assert objs[5]["bth"]["opcode"] == 0x13 and objs[5]["bth"]["psn"] == 77 and objs[5]["payload_len"] is None
    assert objs[6]["bth"]["tver"] == 3 and objs[6]["ip"]["version"] == 6
    assert objs[4]["bth"]["opcode"] == 0xC0 and objs[4]["mrdh"]["version"] == 1


def test_human_readable_one_line_per_frame(tmp_path, capsys):
    """MR-WIRE-110: without --json, one summary line per frame with its verdict."""
    frames = [d for d, _ in good_cases()] + [d for d, _, _ in bad_cases()]
    path = write_capture(tmp_path / "all.pcap", frames)
    assert main(["decode", path]) == 0
    out, _ = capsys.readouterr()
    lines = out.splitlines()
    assert len(lines) == len(frames)
    n_good = len(good_cases())
    for i, line in enumerate(lines, 1):
        assert line.startswith(f"#{i} ")
        assert line.endswith("OK") == (i <= n_good)
    assert "MR_ACK" in lines[6] and "ERROR icrc" in lines[n_good + 4]


def test_empty_capture(tmp_path, capsys):
    """MR-WIRE-120: a capture without frames prints nothing and succeeds."""
    assert run_json(capsys, write_capture(tmp_path / "empty.pcap", [])) == []


@pytest.mark.parametrize("content,needle", [(b"not a capture\n" * 3, "not a pcap"),
                                            (b"\x0a\x0d\x0d\x0a" + bytes(40), "pcapng"),
                                            (b"", "not a pcap")])
def test_not_a_pcap_in_process(tmp_path, capsys, content, needle):
    """MR-WIRE-120: a file that is not a pcap gets one line on stderr and a non-zero exit."""
    path = tmp_path / "bad.pcap"
    path.write_bytes(content)
    rc = main(["decode", str(path), "--json"])
    out, err = capsys.readouterr()
    assert rc != 0 and out == ""
    assert len(err.strip().splitlines()) == 1 and needle in err


def test_missing_file(tmp_path, capsys):
    rc = main(["decode", str(tmp_path / "nope.pcap")])
    out, err = capsys.readouterr()
    assert rc != 0 and out == "" and len(err.strip().splitlines()) == 1


def test_subprocess_json(tmp_path):
    """MR-WIRE-110: `python -m metaroce decode --json` prints the same objects as in-process."""
    cases = good_cases()
    path = write_capture(tmp_path / "good.pcap", [d for d, _ in cases] + [bad_cases()[4][0]])
    r = subprocess.run([sys.executable, "-m", "metaroce", "decode", path, "--json"], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    objs = [json.loads(line) for line in r.stdout.splitlines()]
    assert objs[:-1] == [{"frame": i, **w} for i, (_, w) in enumerate(cases, 1)]
    assert objs[-1]["error"] == "icrc"


def test_subprocess_not_a_pcap(tmp_path):
    """MR-WIRE-120: one clear stderr line, non-zero exit, no traceback."""
    path = tmp_path / "notes.txt"
    path.write_text("this is text\n")
    r = subprocess.run([sys.executable, "-m", "metaroce", "decode", str(path)], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode != 0 and r.stdout == ""
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr
    assert "not a pcap" in r.stderr
