"""``metaroce decode`` on captures of frames built by scapy, an independent implementation
(MR-WIRE-110, MR-WIRE-120).

The expected JSON objects are computed here from the scapy packets' own fields and the spec's
header layouts, not from the codec.
"""
import json
import struct
import subprocess
import sys
import tracemalloc

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
        "ok": True, "error": None, "detail": None,
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
    """(frame bytes, expected error label, fields that must be reported); ``detail`` is the
    decoder's text, written here from the spec's checks."""
    good, _ = case(4, None, 0xC0, struct.pack("!BBHIII", 0x10, 0, 0, 0, 0, 0) + bytes(16), payload=b"abcd")
    corrupt = bytearray(good)
    corrupt[-6] ^= 0xFF
    eth = Ether(src=MAC1, dst=MAC2)
    return [
        (bytes(eth / ARP()), "not_roce", {"ip": None, "udp": None, "bth": None, "detail": "ethertype 0x0806"}),
        (bytes(eth / IP(src="1.2.3.4") / TCP() / Raw(bytes(30))), "not_roce",
         {"udp": None, "detail": "IP protocol 6"}),
        (bytes(eth / IP() / UDP(sport=4791, dport=53) / Raw(bytes(30))), "not_roce",
         {"udp": {"sport": 4791, "dport": 53}, "bth": None, "detail": "UDP destination port 53"}),
        (good[:50], "truncated", {"bth": None, "payload_len": None}),
        (bytes(corrupt), "icrc", {"payload_len": 4, "detail": "ICRC mismatch"}),
        (bytes(eth / IP() / UDP(dport=4791) / SBTH(opcode=0x15, psn=77) / Raw(bytes(28))), "bad_opcode",
         {"detail": "opcode 0x15"}),
        (bytes(eth / IPv6() / UDP(dport=4791) / SBTH(opcode=0x11, version=3) / SAETH()), "bad_version",
         {"detail": "BTH TVer 3"}),
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
    """MR-WIRE-100, MR-WIRE-101, MR-WIRE-102, MR-WIRE-110, MR-WIRE-123: malformed frames give `ok` false,
    the reason, its detail, and the fields reached."""
    cases = bad_cases()
    objs = run_json(capsys, write_capture(tmp_path / "bad.pcap", [d for d, _, _ in cases]))
    assert len(objs) == len(cases)
    for obj, (data, label, fields) in zip(objs, cases):
        assert obj["ok"] is False and obj["error"] == label and obj["icrc_ok"] is False
        assert list(obj)[:4] == ["frame", "ok", "error", "detail"] and obj["detail"]
        assert obj["eth"] == {"src": MAC1, "dst": MAC2, "vlan": None}
        for k, v in fields.items():
            assert obj[k] == v, (label, k)
    assert objs[1]["ip"]["src"] == "1.2.3.4"
    assert objs[5]["bth"]["opcode"] == 0x15 and objs[5]["bth"]["psn"] == 77 and objs[5]["payload_len"] is None
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


def qinq_frame():
    """An 802.1ad outer tag (ethertype 0x88A8) around an 802.1Q tag: not a frame MetaRoCE takes."""
    return bytes(Ether(src=MAC1, dst=MAC2, type=0x88A8) / Dot1Q(vlan=5) / Dot1Q(vlan=7) / IP() /
                 UDP(dport=4791) / Raw(bytes(40)))


def test_text_output_names_the_error_detail(tmp_path, capsys):
    """MR-WIRE-123: a QinQ frame's text line says why it is not RoCE, as its JSON object does."""
    path = write_capture(tmp_path / "qinq.pcap", [qinq_frame(), good_cases()[0][0]])
    assert main(["decode", path]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].endswith("ERROR not_roce (ethertype 0x88a8)")
    assert lines[1].endswith(" OK")
    (obj, ok) = run_json(capsys, path)
    assert (obj["error"], obj["detail"]) == ("not_roce", "ethertype 0x88a8") and ok["detail"] is None


def _decode_cli(*args):
    return subprocess.run([sys.executable, "-m", "metaroce", "decode", *args], capture_output=True, text=True,
                          timeout=60)


@pytest.mark.parametrize("as_json", [False, True])
def test_truncated_capture_prints_good_frames_then_error(tmp_path, as_json):
    """MR-WIRE-122: every good frame before a truncated record is printed, then one stderr line
    with the damage, exit status 2."""
    frames = [d for d, _ in good_cases()]
    path = tmp_path / "cut.pcap"
    write_capture(path, frames)
    blob = path.read_bytes()
    path.write_bytes(blob[:-7])                              # the last record loses 7 bytes
    r = _decode_cli(str(path), *(["--json"] if as_json else []))
    assert r.returncode == 2
    lines = r.stdout.splitlines()
    assert len(lines) == len(frames) - 1
    if as_json:
        assert [json.loads(x)["frame"] for x in lines] == list(range(1, len(frames)))
        assert all(json.loads(x)["ok"] for x in lines)
    else:
        assert all(x.endswith(" OK") for x in lines)
    err = r.stderr.strip().splitlines()
    assert len(err) == 1 and "truncated record at byte" in err[0] and "Traceback" not in r.stderr


def test_dev_zero_one_line_error():
    """MR-WIRE-121: decoding /dev/zero ends at once with one line, not by exhausting memory."""
    r = _decode_cli("/dev/zero")
    assert r.returncode == 2 and r.stdout == ""
    err = r.stderr.strip().splitlines()
    assert len(err) == 1 and "bad magic" in err[0]


class EndlessRecords:
    """A capture file object that serves ``count`` copies of one record; counts bytes served."""

    def __init__(self, frame, count):
        self.head = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)
        self.rec = struct.pack("<IIII", 1, 0, len(frame), len(frame)) + frame
        self.left = count
        self.buf = self.head
        self.served = 0
        self.name = "synthetic"

    def read(self, n):
        while len(self.buf) < n and self.left:
            self.buf += self.rec
            self.left -= 1
        out, self.buf = self.buf[:n], self.buf[n:]
        self.served += len(out)
        return out


class CountingSink:
    def __init__(self):
        self.lines = 0

    def write(self, text):
        self.lines += text.count("\n")

    def flush(self):
        pass


@pytest.mark.parametrize("as_json", [False, True])
def test_decode_memory_bounded(as_json):
    """MR-WIRE-121/122: decoding 4 MiB of 4 KiB MetaRoCE writes keeps the traced peak below
    1 MiB: frames are read, decoded and printed one at a time."""
    from metaroce.commands.decode import decode_stream, frame_json
    from metaroce.models import pcap as mpcap
    frame, _ = case(4, None, 0xC0, struct.pack("!BBHIII", 0x10, 1, 0, 0, 0, 4096) + struct.pack("!QII", 0, 1, 4096),
                    payload=bytes(range(256)) * 16)
    assert frame_json(1, frame)["ok"]
    count = (4 << 20) // len(frame)
    src = EndlessRecords(frame, count)
    sink = CountingSink()
    tracemalloc.start()
    try:
        n = decode_stream(mpcap.iter_records(src), sink, as_json)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert n == count and sink.lines == count and src.served == 24 + count * (16 + len(frame))
    assert peak < 1 << 20, peak
