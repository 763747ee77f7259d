"""``metaroce decode FILE.pcap``: one summary line, or one JSON object, per frame (MR-WIRE-110)."""
import json
import sys

HELP = "decode a pcap capture of RoCEv2 / MetaRoCE frames"


def add_arguments(p):
    p.add_argument("file", help="a pcap file (Ethernet link type)")
    p.add_argument("--json", action="store_true", help="one JSON object per frame per line")


def run(args):
    from ..cli import CliError
    from metaroce.models import codec, pcap

    try:
        records = pcap.read(args.file)
    except pcap.PcapError as e:
        raise CliError(str(e)) from None
    out = sys.stdout
    for i, rec in enumerate(records, 1):
        obj = codec.decode_json(i, rec.data)
        out.write((json.dumps(obj) if args.json else codec.summary(i, obj)) + "\n")
    return 0
