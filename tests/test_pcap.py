"""pcap reader and writer (MR-WIRE-120), checked against hand-crafted headers and scapy."""
import io
import struct
import tracemalloc

import pytest
from scapy.layers.l2 import Ether
from scapy.utils import PcapNgWriter, rdpcap, wrpcap

from metaroce.models import pcap
from metaroce.models.pcap import PcapError

FRAMES = [bytes(range(i, i + 60 + i)) for i in range(5)]


def craft(endian="<", magic=0xA1B2C3D4, linktype=1, records=(), version=(2, 4)):
    """A classic pcap file built byte by byte (libpcap file format)."""
    out = struct.pack(endian + "IHHiIII", magic, version[0], version[1], 0, 0, 65535, linktype)
    for sec, frac, data in records:
        out += struct.pack(endian + "IIII", sec, frac, len(data), len(data) + 3) + data
    return out


def test_write_read_round_trip(tmp_path):
    """MR-WIRE-120: frames and microsecond timestamps survive write then read."""
    path = tmp_path / "x.pcap"
    stamps = [0.0, 1.5, 2.000001, 1234567.999999, 3.9999996]
    pcap.write(path, list(zip(stamps, FRAMES)))
    recs = pcap.read(path)
    assert [r.data for r in recs] == FRAMES
    assert [r.orig_len for r in recs] == [len(f) for f in FRAMES]
    for r, ts in zip(recs, stamps):
        assert r.ts == pytest.approx(ts, abs=1e-6)
    # Rounding up to a whole second carries into the seconds field.
    raw = path.read_bytes()
    last = raw[24 + sum(16 + len(f) for f in FRAMES[:4]):]
    assert struct.unpack("<II", last[:8]) == (4, 0)


def test_write_without_timestamps(tmp_path):
    """MR-WIRE-120: bare frames get increasing timestamps."""
    path = tmp_path / "x.pcap"
    pcap.write(path, FRAMES)
    recs = pcap.read(path)
    assert [r.data for r in recs] == FRAMES
    assert [r.ts for r in recs] == sorted(r.ts for r in recs)


def test_scapy_reads_our_file_and_we_read_scapys(tmp_path):
    """MR-WIRE-120: an independent pcap implementation agrees in both directions."""
    ours = tmp_path / "ours.pcap"
    pcap.write(ours, [(10.25, f) for f in FRAMES])
    pkts = rdpcap(str(ours))
    assert [bytes(p) for p in pkts] == FRAMES
    assert [float(p.time) for p in pkts] == [10.25] * len(FRAMES)
    theirs = tmp_path / "theirs.pcap"
    wrpcap(str(theirs), [Ether(f) for f in FRAMES])
    assert [r.data for r in pcap.read(theirs)] == FRAMES
    nano = tmp_path / "theirs_ns.pcap"
    p = Ether(FRAMES[0])
    p.time = 5.123456789
    wrpcap(str(nano), [p], nano=True)
    (rec,) = pcap.read(nano)
    assert rec.data == FRAMES[0] and rec.ts == pytest.approx(5.123456789, abs=1e-9)


@pytest.mark.parametrize("endian", ["<", ">"])
@pytest.mark.parametrize("magic,scale", [(0xA1B2C3D4, 1e-6), (0xA1B23C4D, 1e-9)])
def test_byte_order_and_resolution(tmp_path, endian, magic, scale):
    """MR-WIRE-120: microsecond and nanosecond files in either byte order."""
    frac = 123456 if scale == 1e-6 else 123456789
    path = tmp_path / "x.pcap"
    path.write_bytes(craft(endian, magic, records=[(7, frac, FRAMES[0]), (8, 0, FRAMES[1])]))
    recs = pcap.read(path)
    assert [r.data for r in recs] == FRAMES[:2]
    assert recs[0].ts == pytest.approx(7 + frac * scale, abs=1e-9)
    assert recs[1].ts == 8
    assert recs[0].orig_len == len(FRAMES[0]) + 3


def test_empty_capture(tmp_path):
    """MR-WIRE-120: a header without records is an empty capture."""
    path = tmp_path / "x.pcap"
    path.write_bytes(craft())
    assert pcap.read(path) == []


def test_pcapng_refused(tmp_path):
    """MR-WIRE-120: pcapng gets one clear message naming the format."""
    path = tmp_path / "x.pcapng"
    w = PcapNgWriter(str(path))
    w.write(Ether(FRAMES[0]))
    w.close()
    with pytest.raises(PcapError, match="pcapng"):
        pcap.read(path)


@pytest.mark.parametrize("cut", [0, 1, 4, 23, 24 + 1, 24 + 15, 24 + 16, 24 + 16 + 10, -1])
def test_truncated_file(tmp_path, cut):
    """MR-WIRE-120: a file cut inside the global header, a record header or a record is refused."""
    blob = craft(records=[(1, 0, FRAMES[2])])
    path = tmp_path / "x.pcap"
    path.write_bytes(blob[:cut])
    with pytest.raises(PcapError):
        pcap.read(path)


def test_not_a_pcap(tmp_path):
    """MR-WIRE-120: bad magic, a non-Ethernet link type and a missing file are PcapError."""
    path = tmp_path / "x.txt"
    path.write_bytes(b"hello, this is not a capture file at all\n")
    with pytest.raises(PcapError, match="not a pcap"):
        pcap.read(path)
    path.write_bytes(craft(linktype=101))
    with pytest.raises(PcapError, match="link type"):
        pcap.read(path)
    with pytest.raises(PcapError):
        pcap.read(tmp_path / "missing.pcap")


class SyntheticCapture(io.RawIOBase):
    """A capture produced as it is read: a header, then ``count`` copies of ``record`` (forever
    when ``count`` is None), then ``tail``. Counts the bytes handed out, so a test can see how far
    a reader got without a file on disk."""

    def __init__(self, header, record=b"", count=None, tail=b""):
        self.header, self.record, self.count, self.tail = header, record, count, tail
        self.consumed = 0
        self._pending = memoryview(header)
        self._emitted = 0

    def readable(self):
        return True

    def readinto(self, buf):
        n = 0
        while n < len(buf):
            if not self._pending:
                if self.count is None or self._emitted < self.count:
                    self._pending = memoryview(self.record)
                    self._emitted += 1
                elif self.tail is not None:
                    self._pending, self.tail = memoryview(self.tail), None
                else:
                    break
                if not self._pending:
                    continue
            k = min(len(buf) - n, len(self._pending))
            buf[n:n + k] = self._pending[:k]
            self._pending = self._pending[k:]
            n += k
        self.consumed += n
        return n


def record_bytes(data, sec=1, frac=0):
    return struct.pack("<IIII", sec, frac, len(data), len(data)) + data


def test_reader_consumes_incrementally():
    """MR-WIRE-121: each record is yielded after reading only its own bytes, from an endless
    capture, so the reader never needs the whole file."""
    rec = record_bytes(FRAMES[3])
    src = SyntheticCapture(craft(), rec)                    # endless
    it = pcap.iter_records(src)
    for k in range(1, 6):
        r = next(it)
        assert r.data == FRAMES[3]
        assert src.consumed == 24 + k * len(rec)


def test_reader_memory_bounded_on_a_large_capture():
    """MR-WIRE-121: 64 MiB of records stream through with a small, size-independent peak."""
    payload = bytes(range(256)) * 16                         # 4 KiB
    count = (64 << 20) // len(payload)
    src = SyntheticCapture(craft(), record_bytes(payload), count)
    tracemalloc.start()
    try:
        n = 0
        for r in pcap.iter_records(io.BufferedReader(src, 1 << 16)):
            n += 1
            assert len(r.data) == len(payload)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert n == count
    assert peak < 1 << 20, peak


def test_dev_zero_ends_with_an_error():
    """MR-WIRE-121: an endless file of zeros is refused at its header (bad magic)."""
    with pytest.raises(PcapError, match="bad magic 00000000"):
        list(pcap.iter_records("/dev/zero"))


def test_impossible_record_length_refused_before_reading():
    """MR-WIRE-121: a record longer than 262,144 bytes is refused without reading it, even when
    the file goes on forever; records within the limit but above the snaplen are read."""
    big = struct.pack("<IIII", 0, 0, pcap.MAX_RECORD + 1, pcap.MAX_RECORD + 1)
    src = SyntheticCapture(craft() + record_bytes(FRAMES[0]) + big, b"\0" * 4096)   # zeros forever
    it = pcap.iter_records(src)
    assert next(it).data == FRAMES[0]
    with pytest.raises(PcapError, match=r"claims 262145 bytes.*corrupt"):
        next(it)
    assert src.consumed < 24 + 16 + len(FRAMES[0]) + 16 + 4096
    header = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 64, 1)                 # snaplen 64
    frame = bytes(pcap.MAX_RECORD)
    assert [r.data for r in pcap.iter_records(io.BytesIO(header + record_bytes(frame)))] == [frame]


def test_truncated_record_after_good_ones():
    """MR-WIRE-121: the good records come first, then the error names the damage and offset."""
    blob = craft(records=[(1, 0, FRAMES[0]), (2, 0, FRAMES[1]), (3, 0, FRAMES[2])])
    got = []
    with pytest.raises(PcapError, match=r"truncated record at byte \d+ \(10 of 62 bytes\)"):
        for r in pcap.iter_records(io.BytesIO(blob[:-(len(FRAMES[2]) - 10)])):
            got.append(r.data)
    assert got == FRAMES[:2]


def test_short_reads_are_joined():
    """MR-WIRE-121: a source that returns a few bytes per read (a pipe) still parses."""
    class Trickle(io.RawIOBase):
        def __init__(self, blob):
            self.blob = blob

        def readable(self):
            return True

        def readinto(self, buf):
            k = min(3, len(buf), len(self.blob))
            buf[:k] = self.blob[:k]
            self.blob = self.blob[k:]
            return k

    blob = craft(records=[(1, 0, f) for f in FRAMES])
    assert [r.data for r in pcap.iter_records(Trickle(blob))] == FRAMES
