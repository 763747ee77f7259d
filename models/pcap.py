"""Read and write classic libpcap files (Ethernet link type) (MR-WIRE-120); the reader streams
(MR-WIRE-121)."""
from __future__ import annotations

import io
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


MAX_RECORD = 262_144
"""Largest record this reader accepts (MR-WIRE-121): Wireshark's limit for Ethernet. A bigger
length is a corrupt file, refused before anything that size is read or allocated."""


def read(path):
    """Return the :class:`Record` list of a pcap file; raise :class:`PcapError` otherwise.
    Holds the whole capture: use :func:`iter_records` for a capture of any size."""
    return list(iter_records(path))


def parse(blob, name="input"):
    """The :class:`Record` list of a pcap file held in memory."""
    return list(iter_records(io.BytesIO(blob), name=name))


def iter_records(source, name=None, *, max_record=MAX_RECORD):
    """Yield the :class:`Record` of each frame of a pcap file, one at a time (MR-WIRE-121).

    ``source`` is a path or a binary file object. Only the current record is held, so memory
    stays bounded whatever the file's size (a pipe or ``/dev/zero`` included). Records before a
    damaged one are yielded first; then :class:`PcapError` names the damage and its byte offset.
    A file object passed in is not closed.
    """
    if hasattr(source, "read"):
        yield from _records(source, name or getattr(source, "name", "input"), max_record)
        return
    name = name or str(source)
    try:
        fh = open(source, "rb")
    except OSError as e:
        raise PcapError(f"cannot read {name}: {e.strerror}") from None
    with fh:
        yield from _records(fh, name, max_record)


def _read_exact(fh, n, name):
    """Up to ``n`` bytes; fewer only at the end of the file (a raw file or pipe may return
    short reads)."""
    try:
        chunk = fh.read(n)
        if chunk is None or len(chunk) == n or not chunk:
            return chunk or b""
        parts = [chunk]
        got = len(chunk)
        while got < n:
            more = fh.read(n - got)
            if not more:
                break
            parts.append(more)
            got += len(more)
        return b"".join(parts)
    except OSError as e:
        raise PcapError(f"cannot read {name}: {e.strerror or e}") from None


def _records(fh, name, max_record):
    head = _read_exact(fh, 24, name)
    if len(head) >= 4 and struct.unpack("<I", head[:4])[0] == _PCAPNG:
        raise PcapError(f"{name}: pcapng is not supported; convert with 'editcap -F pcap'")
    if len(head) < 24:
        raise PcapError(f"{name}: not a pcap file (only {len(head)} bytes)")
    for endian in "<>":
        magic = struct.unpack(endian + "I", head[:4])[0]
        if magic in (_MAGIC_US, _MAGIC_NS):
            break
    else:
        raise PcapError(f"{name}: not a pcap file (bad magic {head[:4].hex()})")
    scale = 1e-6 if magic == _MAGIC_US else 1e-9
    _, _, _, _, _, linktype = struct.unpack(endian + "HHiIII", head[4:24])
    if linktype & 0xFFFF != LINKTYPE_ETHERNET:
        raise PcapError(f"{name}: link type {linktype} is not Ethernet")
    rec_hdr = struct.Struct(endian + "IIII")
    off = 24
    while True:
        hdr = _read_exact(fh, 16, name)
        if not hdr:
            return
        if len(hdr) < 16:
            raise PcapError(f"{name}: truncated record header at byte {off}")
        sec, frac, incl, orig = rec_hdr.unpack(hdr)
        if incl > max_record:
            raise PcapError(f"{name}: record at byte {off} claims {incl} bytes, more than the "
                            f"{max_record} a frame can have (corrupt file)")
        off += 16
        data = _read_exact(fh, incl, name)
        if len(data) < incl:
            raise PcapError(f"{name}: truncated record at byte {off} ({len(data)} of {incl} bytes)")
        yield Record(sec + frac * scale, data, orig)
        off += incl
