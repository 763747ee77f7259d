"""The per-test CPU record of a run (``METAROCE_CPU_TIMES=FILE``, tests/conftest.py, MR-FLOW-038)
summed per file, and two runs compared (MR-FLOW-039)::

    .venv/bin/python tests/cpu_times.py BEFORE.jsonl [AFTER.jsonl] [--top N]

prints a Markdown table of CPU seconds (the workers' and their children's) per test file, the
files under 1 % of the run's total as one row, and the whole run; with ``--top N`` the N
costliest tests of the last file; with ``--longest-first N`` its N costliest default-run tests
split in two groups by longest processing time first (tests/conftest.py's LONGEST_FIRST).
"""
import argparse
import collections
import json


def load(path):
    """{nodeid: CPU seconds (worker + children)} of a record (a test run twice: summed)."""
    out = collections.Counter()
    with open(path) as f:
        for line in f:
            if line.strip():
                row = json.loads(line)
                out[row["nodeid"]] += row["cpu_s"] + row["children_s"]
    return out


def per_file(costs):
    """{test file: CPU seconds} of :func:`load`'s mapping."""
    out = collections.Counter()
    for nodeid, s in costs.items():
        out[nodeid.split("::", 1)[0]] += s
    return out


def table(*runs, share=0.01):
    """Markdown rows: per file, the runs' CPU seconds (and the change of the last against the
    first), the files under ``share`` of every run's total as "other files", then the total."""
    files = [per_file(r) for r in runs]
    totals = [sum(f.values()) for f in files]
    names = sorted(set().union(*files), key=lambda n: -max(f[n] for f in files))
    big = [n for n in names if any(f[n] >= share * t for f, t in zip(files, totals))]
    rest = [sum(f[n] for n in names if n not in big) for f in files]
    counts = [len(r) for r in runs]

    def row(name, values):
        cells = [f"{v:,.0f}" for v in values]
        if len(values) > 1:
            cells.append(f"{(values[-1] - values[0]) / values[0]:+.0%}" if values[0] else "")
        return f"| {name} | " + " | ".join(cells) + " |"
    head = ["file", *(f"run {i + 1} CPU s" for i in range(len(runs)))] + (["change"] if len(runs) > 1 else [])
    lines = ["| " + " | ".join(head) + " |", "|---|" + "---:|" * (len(head) - 1)]
    lines += [row(n, [f[n] for f in files]) for n in big]
    lines.append(row("other files", rest))
    lines.append(row(f"**all** ({' / '.join(map(str, counts))} tests)", totals))
    return "\n".join(lines)


def longest_first(costs, n, groups=2, exclude=()):
    """MR-FLOW-041: the ``n`` costliest tests of ``costs`` (but ``exclude``) dealt, costliest
    first, to the group of least total so far: ``groups`` tuples of node ids, each costliest
    first."""
    out = [[] for _ in range(groups)]
    totals = [0.0] * groups
    for nodeid, s in [kv for kv in costs.most_common() if kv[0] not in exclude][:n]:
        k = totals.index(min(totals))
        out[k].append(nodeid)
        totals[k] += s
    return tuple(tuple(g) for g in out)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("records", nargs="+")
    ap.add_argument("--top", type=int, default=0)
    ap.add_argument("--longest-first", type=int, default=0)
    a = ap.parse_args(argv)
    runs = [load(p) for p in a.records]
    print(table(*runs))
    for nodeid, s in runs[-1].most_common(a.top):
        print(f"{s:8.1f}  {nodeid}")
    if a.longest_first:
        for group in longest_first(runs[-1], a.longest_first):
            print("(" + "\n ".join(f'"{nodeid}",  # {runs[-1][nodeid]:.0f} s' for nodeid in group) + "),")


if __name__ == "__main__":
    main()
