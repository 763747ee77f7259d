"""The seed arguments of the probes' sweeps (tx_sched_stall.py, tx_sched_rows_stall.py,
tx_sched_probing_stall.py): each argument a seed (``5``), a range (``1-100``, both ends in) or a
list (``3,6,7``); options (``--...``) are the caller's. Imported from the probe's own directory
(on ``sys.path`` when a probe runs as a script)."""


def parse_seeds(args, default):
    """The seeds named by ``args`` in order (``default`` when none is)."""
    seeds = []
    for a in args:
        if a.startswith("--"):
            continue
        for part in a.split(","):
            if "-" in part:
                lo, hi = part.split("-")
                seeds.extend(range(int(lo), int(hi) + 1))
            elif part:
                seeds.append(int(part))
    return seeds or list(default)


if __name__ == "__main__":
    assert parse_seeds(["1-3", "--old", "7,9"], [5]) == [1, 2, 3, 7, 9]
    assert parse_seeds(["--old"], [5]) == [5]
    print("ok")
