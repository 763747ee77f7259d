"""Read and write classic libpcap files (Ethernet link type) (MR-WIRE-120)."""
from __future__ import annotations

import struct
from dataclasses import dataclass

LINKTYPE_ETHERNET = 1
_MAGIC_US = 0xA1B2C3D4
_MAGIC_NS = 0xA1B23C4D
_PCAPNG = 0x0A0D0D0A


class PcapError(Exception):
    """The file is not a pcap file this project can read."""


@dataclass
class Record:
    ts: float
    data: bytes
    orig_len: int


def write(path, frames, *, snaplen=65535):
    """Write ``frames`` (bytes, or (timestamp_seconds, bytes) pairs) to a microsecond pcap."""
    with open(path, "wb") as fh:
        w = Writer(fh, snaplen=snaplen)
        for i, fr in enumerate(frames):
            ts, data = fr if isinstance(fr, tuple) else (i * 1e-6, fr)
            w.write(data, ts)


class Writer:
    """Streaming pcap writer over an open binary file."""

    def __init__(self, fh, *, snaplen=65535):
        self.fh = fh
        fh.write(struct.pack("<IHHiIII", _MAGIC_US, 2, 4, 0, 0, snaplen, LINKTYPE_ETHERNET))

    def write(self, data, ts=0.0):
        sec = int(ts)
        usec = int(round((ts - sec) * 1e6))
        if usec >= 1_000_000:
            sec, usec = sec + 1, usec - 1_000_000
        self.fh.write(struct.pack("<IIII", sec, usec, len(data), len(data)))
        self.fh.write(data)


def read(path):
    """Return the :class:`Record` list of a pcap file; raise :class:`PcapError` otherwise."""
    try:
        with open(path, "rb") as fh:
            blob = fh.read()
    except OSError as e:
        raise PcapError(f"cannot read {path}: {e.strerror}") from None
    return parse(blob, name=str(path))


def parse(blob, name="input"):
    if len(blob) < 24:
        raise PcapError(f"{name}: not a pcap file (only {len(blob)} bytes)")
    magic_le = struct.unpack("<I", blob[:4])[0]
    if magic_le == _PCAPNG:
        raise PcapError(f"{name}: pcapng is not supported; convert with 'editcap -F pcap'")
    for endian in "<>":
        magic = struct.unpack(endian + "I", blob[:4])[0]
        if magic in (_MAGIC_US, _MAGIC_NS):
            break
    else:
        raise PcapError(f"{name}: not a pcap file (bad magic {blob[:4].hex()})")
    scale = 1e-6 if magic == _MAGIC_US else 1e-9
    _, _, _, _, _, linktype = struct.unpack(endian + "HHiIII", blob[4:24])
    if linktype & 0xFFFF != LINKTYPE_ETHERNET:
        raise PcapError(f"{name}: link type {linktype} is not Ethernet")
    out = []
    off = 24
    while off < len(blob):
        if off + 16 > len(blob):
            raise PcapError(f"{name}: truncated record header at byte {off}")
        sec, frac, incl, orig = struct.unpack(endian + "IIII", blob[off:off + 16])
        off += 16
        if off + incl > len(blob):
            raise PcapError(f"{name}: truncated record at byte {off}")
        out.append(Record(sec + frac * scale, blob[off:off + incl], orig))
        off += incl
    return out
