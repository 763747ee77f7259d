"""Area probe, not part of the design (serial47): where ``CwndControl``'s own LUTs are (2 x 4,
the band unit's submodule not counted), by dp44's method (``dp44_fb_by_sink.py``: each LUT
attributed to the registers it reaches through logic only, in ``metaroce synth``'s flow), the
register sets with the most LUTs first. ``--band-port``: the block with the band from a port
(MR-CW-146). Run from the repository root:

    nice -n 10 .venv/bin/python docs/hw/probes/cwnd_control_by_sink_47.py [--band-port] [--top N] 2>/dev/null"""
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))


def main():
    from dp44_fb_by_sink import by_sink, mapped_module
    from metaroce.hdl.cwnd import CwndControl
    from metaroce.models.cwnd import SMALL
    args = sys.argv[1:]
    top = int(args[args.index("--top") + 1]) if "--top" in args else 40
    mod = mapped_module(CwndControl(**SMALL, band_port="--band-port" in args), "cwnd_control",
                        "serial47-ctl-sink", "ctl")
    by, ffs = by_sink(mod)
    print(json.dumps({"luts_local": sum(by.values()), "ffs": sum(ffs.values())}))
    for k, n in by.most_common(top):
        print(f"{n:6d}  {k[:200]}")


if __name__ == "__main__":
    main()
