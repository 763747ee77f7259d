"""cov43: what the TX coverage run left uncovered, by signal and by field: the named toggle
points (after ``tb.coverage.tx_exclusions`` and the structural constants, as ``metaroce coverage
tx`` counts them) not covered in a kept ``coverage.dat`` (``--keep DIR``), grouped.

    .venv/bin/python docs/hw/probes/cov43_uncovered.py DIR [DIR2 ...] [--top N] [--grep RE]

With several DIRs their ``coverage.dat`` files are merged point by point (the shapes' runs) and
their ``counter_max`` taken as the largest. Prints the figures, then the uncovered points per
signal (largest first) and per field (the name's last ``__02e`` part, every copy together).
"""
import json
import re
import sys
from collections import Counter
from pathlib import Path

from metaroce.tb import coverage as cov


def load(dirs):
    acc, cmax = Counter(), {}
    for d in dirs:
        d = Path(d)
        cov.dat_counts(d / "coverage_tx_w64.dat", acc)
        res = json.loads((d / "coverage_tx_w64.json").read_text())
        for name, vals in res.get("counter_max", {}).items():
            top = cmax.get(name, [0] * len(vals))
            cmax[name] = [max(a, b) for a, b in zip(top, vals)]
    out = Path(dirs[0]) / "merged_probe.dat"
    cov.write_dat(acc, out)
    return cov.read_coverage_dat(out), cmax


#: the uncovered fields whose values count packets, messages or chunks from 0 at reset (no
#: port sets them): their high bits need 2^k packets, messages or chunks in one run
RUN_BOUND = {
    "PSNs": r"psn|floor|lost_upto|(^|_)cum($|_)",
    "message numbers": r"msg(?!_len)|seq_mem|seq_rd|(^|_)seq($|_)",
    "receive sequence numbers": r"rseq|recv_seq",
    "chunk indices and offsets": r"chunk|mrdh_offset|nchm1|ack_base|next_chunk",
}


def main(argv):
    top, pat = 60, None
    if "--top" in argv:
        i = argv.index("--top")
        top = int(argv[i + 1])
        del argv[i:i + 2]
    if "--grep" in argv:
        i = argv.index("--grep")
        pat = re.compile(argv[i + 1])
        del argv[i:i + 2]
    points, cmax = load(argv)
    s = cov.summarise(points, None, cov.tx_exclusions(points, cmax), max_list=10 ** 7,
                      constant_bits=cov.constant_bits_of(points, named=True))
    for k in ("line", "toggle", "toggle_named", "toggle_temporaries", "toggle_all_points"):
        v = s[k]
        print(f"{k}: {v['covered']} / {v['total']} ({v['percent']} %)")
    un = s["toggle_named"]["uncovered"]
    by_sig, by_field = Counter(), Counter()
    for t in un:
        if pat and not pat.search(t):
            continue
        name = cov._split(t)[0]
        by_sig[name] += 1
        by_field[name.rsplit("__02e", 1)[-1] if "__02e" in name else name] += 1
    fam = Counter()
    for t in un:
        name = cov._split(t)[0]
        for f, rx in RUN_BOUND.items():
            if re.search(rx, name):
                fam[f] += 1
                break
    print(f"\nrun-bound families (uncovered named points, a point counted once): {dict(fam)}, "
          f"total {sum(fam.values())}")
    print(f"\nuncovered named points: {len(un)}; by signal (top {top}):")
    for n, c in by_sig.most_common(top):
        print(f"  {c:6d}  {n}")
    print(f"\nby field (top {top}):")
    for n, c in by_field.most_common(top):
        print(f"  {c:6d}  {n}")


if __name__ == "__main__":
    main(sys.argv[1:])
