"""``metaroce decode FILE.pcap``: one summary line, or one JSON object, per frame (MR-WIRE-110).

The capture is read one record at a time, so memory stays bounded whatever its size; frames are
printed as they are read, and a damaged record ends the run after the good frames before it
(MR-WIRE-121, MR-WIRE-122).
"""
import json
import sys

HELP = "decode a pcap capture of RoCEv2 / MetaRoCE frames"


def add_arguments(p):
    p.add_argument("file", help="a pcap file (Ethernet link type)")
    p.add_argument("--json", action="store_true", help="one JSON object per frame per line")


def frame_json(frame_no, data):
    """The JSON object of one frame with the decode error's detail after its reason
    (MR-WIRE-110, MR-WIRE-123); never raises."""
    from metaroce.models import codec

    try:
        obj = codec.to_json(frame_no, codec.decode(data))
        detail = None
    except codec.DecodeError as e:
        obj = codec.to_json(frame_no, e.frame, e.reason)
        detail = e.detail or None
    out = {}
    for k, v in obj.items():
        out[k] = v
        if k == "error":
            out["detail"] = detail
    return out


def summary(obj):
    """One text line: the codec's summary, with the error detail after the reason."""
    from metaroce.models import codec

    line = codec.summary(obj["frame"], obj)
    return f"{line} ({obj['detail']})" if obj.get("detail") else line


def decode_stream(records, out, as_json):
    """Write one line per record of the iterable ``records``; returns the frame count. A
    :class:`~metaroce.models.pcap.PcapError` from ``records`` propagates after the lines of the
    good records before it are written and flushed."""
    n = 0
    try:
        for n, rec in enumerate(records, 1):
            obj = frame_json(n, rec.data)
            out.write((json.dumps(obj) if as_json else summary(obj)) + "\n")
    finally:
        out.flush()
    return n


def run(args):
    from ..cli import CliError
    from metaroce.models import pcap

    try:
        decode_stream(pcap.iter_records(args.file), sys.stdout, args.json)
    except pcap.PcapError as e:
        raise CliError(str(e)) from None
    return 0
