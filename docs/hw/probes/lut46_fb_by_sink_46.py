"""Area probe, not part of the design (lut46): where the TX's frame builder's LUTs are, as
``TxData`` builds it (``FrameBuilder(W, ipv4_only=True, prerotated=True)``), by dp44's method
(``dp44_fb_by_sink.py``: each LUT of the block's own module attributed to the registers it
reaches through logic only; the ICRC processor's submodule not counted), then summed by part
(the sinks' register families, grouped by name). ``--at COMMIT``: the same on a commit's tree
(rot45_data_synth.py's ``git archive``). Run from the repository root:

    nice -n 10 .venv/bin/python docs/hw/probes/lut46_fb_by_sink_46.py 512|64 [--top N] [--at 07757f2] 2>/dev/null"""
import json
import re
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

PARTS = [("un-advance", r"^unadv"), ("merge m_data", r"^m_data"), ("ICRC copy m_crc", r"^m_crc"),
         ("header beat hdr_cur", r"^hdr_cur"), ("header register", r"^hdr_reg"),
         ("delay line d*", r"^d[1-4]_"), ("output FIFO head r", r"^r(\.|$)|^r_"),
         ("skid e0/e1", r"^e[01]_|^\$signal"), ("descriptor stages h*", r"^h[0-5]_"),
         ("frame register f_*", r"^f_"), ("rot_prev", r"^rot_prev")]


def part_of(key):
    fams = [w for w in key.split() if not w.endswith(":") and not w.isdigit() and w != "..."]
    hits = {name for name, rx in PARTS for f in fams if re.search(rx, f)}
    return " + ".join(sorted(hits)) if hits else "other"


def run(width, top):
    from dp44_fb_by_sink import by_sink, mapped_module
    from metaroce.hdl.frame_builder import FrameBuilder
    mod = mapped_module(FrameBuilder(width, ipv4_only=True, prerotated=True), "frame_builder",
                        f"lut46-fb-sink-{width}", "fb")
    by, ffs = by_sink(mod)
    parts = Counter()
    for k, n in by.items():
        parts[part_of(k)] += n
    print(json.dumps({"width": width, "luts_local": sum(by.values()), "ffs": sum(ffs.values()),
                      "parts": dict(parts.most_common())}))
    for k, n in by.most_common(top):
        print(f"{n:6d}  {k[:200]}")


if __name__ == "__main__":
    args = sys.argv[1:]
    if "--at" in args:
        from rot45_data_synth import at_commit
        i = args.index("--at")
        at_commit.__globals__["__file__"] = __file__
        sys.exit(at_commit(args[i + 1], args[:i] + args[i + 2:]))
    top = int(args[args.index("--top") + 1]) if "--top" in args else 30
    run(int(args[0]), top)
