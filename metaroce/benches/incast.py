"""``bench incast``: N senders write to one receiver at once (8 to 1,024), MetaRoCE vs RoCEv2.

N + 1 hosts on one switch (``single``) or on the smallest 3-tier k-ary fat tree that holds them
(``fat_tree``, receiver h<N>, senders spread over every pod), 400 Gb/s, 10 us base RTT (the
longest path), switch buffer 2 BDP per port, ECN marking above BDP/5. Every sender posts one write of ``max(--total / N, --min-bytes)`` bytes at ``i x --stagger``.
Convergence is measured from the receiver's arrivals (every copy that arrives, per sender, in
quarter-RTT bins) between the last sender's start and one RTT before the first completion: a
sender is within its fair share ``payload capacity / N`` over a window of L RTTs when its
arrivals differ from the share by at most 10 % plus one packet (the resolution of counting
packets: at 128 senders the share is about one packet per RTT); windows of 1, 2, 4, ..., 64 RTTs
start at every quarter RTT (see :func:`analyse`).
Rows: ``protocol``, ``senders``, ``converge_rtts`` (from the last sender's start to the time
from which every window of every sender is within its share; ``null`` if never), ``jain``
(Jain's index of the senders' bytes from convergence to the measurement end), ``min_share`` /
``max_share`` (lowest / highest sender rate over that span relative to the share), ``peak_queue_kb`` (receiver port), ``drops`` (receiver port),
``drops_after_converged``, ``drop_fraction`` (drops at every switch port over the data frames
the senders sent), ``topology``, ``goodput_gbps`` (aggregate), ``retransmitted``, ``delivered_ok``.
"""
from __future__ import annotations

from ._common import baseline_params, jain, parse_list, parse_size, payload_rate, plt
from ._common import endpoint_cfg as _cfg

HELP = "incast of 8 to 1,024 senders to one receiver (one switch, fat tree): convergence, drops"

RATE, RTT, MTU = 400e9, 10e-6, 4096


def add_arguments(p):
    p.add_argument("--senders", default="8,16,32,64,128,256,512,1024", help="comma-separated sender counts")
    p.add_argument("--topologies", default="single,fat_tree", help="single and/or fat_tree")
    p.add_argument("--rocev2-max", type=int, default=128,
                   help="run the RoCEv2 baseline only up to this many senders (default 128: without "
                        "congestion control it drops most packets beyond, and its runs take hours)")
    p.add_argument("--total", default="64Mi", help="bytes written in total, split over the senders")
    p.add_argument("--min-bytes", default="1Mi",
                   help="at least this many bytes per sender (default 1Mi, two BDPs, so that no sender "
                        "finishes within its first window)")
    p.add_argument("--stagger", type=float, default=0.0, help="start of sender i is i x this many us")
    p.add_argument("--protocols", default="metaroce,rocev2")
    p.add_argument("--seed", type=int, default=1)


def endpoint_cfg(protocol):
    return _cfg(protocol, RATE, RTT, mtu=MTU)


#: Window lengths (RTTs) over which every sender's arrivals must match its fair share.
WINDOWS_RTTS = (1, 2, 4, 8, 16, 32, 64)


def analyse(meter, n, t_last_start, t_first_done, fair_bps, bin_w):
    """Convergence time and Jain index from a :class:`~metaroce.sim.harness.Meter` (arrivals).

    A sender is within its fair share over a window of length ``L`` when the payload bytes that
    arrived from it in the window differ from ``fair_bps x L`` by at most 10 % of that plus one
    packet (one packet is the resolution of counting arrivals: at 128 senders the share is
    about one packet per RTT). Windows of every length in :data:`WINDOWS_RTTS` that fit before
    the measurement end start at every quarter RTT. Converged at ``t`` when every window of every
    sender starting at ``t`` or later passes. Returns ``(t_conv, jain, lo, hi)``: ``lo``/``hi``
    the lowest/highest sender rate over the converged span relative to the fair share.
    """
    import numpy as np
    b0 = int(round(t_last_start / bin_w))
    b_end = int((t_first_done - RTT) / bin_w)      # the first sender's last data arrived ~1 RTT before
    nbin = max(0, b_end - b0)
    if nbin <= 0:
        return None, 0.0, None, None
    a = np.zeros((n, nbin))
    for f in range(n):
        for b, v in meter.bins[f].items():
            if b0 <= b < b_end:
                a[f, b - b0] = v
    cum = np.concatenate([np.zeros((n, 1)), np.cumsum(a, axis=1)], axis=1)
    per_bin = fair_bps / 8 * bin_w
    bad = np.zeros(nbin, dtype=bool)          # some window starting at this bin fails
    for L in WINDOWS_RTTS:
        nb = int(round(L * RTT / bin_w))
        if nb > nbin:
            break
        got = cum[:, nb:] - cum[:, :-nb]       # windows starting at bins 0 .. nbin - nb
        want = per_bin * nb
        fail = (np.abs(got - want) > 0.1 * want + MTU).any(axis=0)
        bad[:nbin - nb + 1] |= fail
    idx = np.nonzero(bad)[0]
    k = 0 if idx.size == 0 else int(idx[-1]) + 1
    if k > nbin - int(round(RTT / bin_w)):        # not even one 1-RTT window left to check
        return None, jain(cum[:, -1]), None, None
    per = cum[:, -1] - cum[:, k]
    share = per / (per_bin * (nbin - k))
    return (b0 + k) * bin_w, jain(per), float(share.min()), float(share.max())


def fabric(n, topo="single", seed=1, **opts):
    """The incast fabric for ``n`` senders and receiver h<n>: one switch, or the smallest
    3-tier fat tree (even k) with room for them; returns it and the receiver's port.
    ``opts``: more :class:`~metaroce.sim.topology.Fabric` arguments (probes)."""
    from metaroce.sim.topology import Fabric

    if topo == "fat_tree":
        k = 4
        while k ** 3 // 4 < n + 1:
            k += 2
        fab = Fabric(n + 1, rate_bps=RATE, rtt=RTT, seed=seed, fat_tree_k=k, **opts)
    else:
        fab = Fabric(n + 1, rate_bps=RATE, rtt=RTT, seed=seed, **opts)
    (port,) = [pt for name, pt in fab.ports.items() if name.endswith(f">h{n}")]
    port.drop_times = []
    return fab, port


def one_run(job):
    from metaroce.sim.harness import Flow, run_writes

    n = job["senders"]
    topo = job.get("topology", "single")
    fab, port = fabric(n, topo, job["seed"])
    sent = [0]

    def tx_tap(frame, now):
        if frame.payload:
            sent[0] += 1
    for h in fab.hosts[:n]:
        h.tx_hook = tx_tap
    size = max(job["total"] // n, job["min_bytes"])
    flows = [Flow(i, n, size, start=i * job["stagger"] * 1e-6, paths=8) for i in range(n)]
    bin_w = RTT / 4
    res = run_writes(fab, flows, job["protocol"], cfg=endpoint_cfg(job["protocol"]), seed=job["seed"],
                     until=1.0, meter_bin=bin_w)
    t_last = max(f.start for f in flows)
    done = [r.t_done for r in res.flows if r.t_done is not None]
    t_first = min(done) if done else res.sim_time
    fair = payload_rate(RATE, MTU) / n
    t_conv, j, lo, hi = analyse(res.meter, n, t_last, t_first, fair, bin_w)
    t_all = max(done) if len(done) == n else None
    return {"protocol": job["protocol"], "topology": topo, "senders": n,
            "converge_rtts": None if t_conv is None else (t_conv - t_last) / RTT,
            "jain": j, "min_share": lo, "max_share": hi,
            "peak_queue_kb": port.stats["peak_bytes"] / 1024, "drops": port.stats["drops"],
            "drops_after_converged": None if t_conv is None else sum(1 for t in port.drop_times if t >= t_conv),
            "drop_fraction": fab.switch_drops() / max(1, sent[0]),
            "bytes_per_sender": size,
            "goodput_gbps": size * n * 8 / t_all / 1e9 if t_all else 0.0,
            "retransmitted": int(res.stats.get("retransmitted", 0)),
            "delivered_ok": bool(res.delivered_ok and res.all_done), "wall_s": round(res.wall, 2),
            "_series": _series(res.meter, n, bin_w, fair)}


def _series(meter, n, bin_w, fair):
    """Min/max sender rate relative to the fair share over windows of 1 RTT, or as many RTTs as
    hold 10 packets per sender at the fair share (for the plot only), per RTT."""
    step = max(1, round(RTT / bin_w))
    pkt_time = (MTU + 90 + 24) * 8 / RATE
    nb = max(step, round(max(RTT, 10 * n * pkt_time) / bin_w))
    last = max((max(d) for d in meter.bins if d), default=0)
    out = []
    for b in range(0, last - nb + 2, step):
        rates = [sum(meter.bins[f].get(x, 0) for x in range(b, b + nb)) * 8 / (nb * bin_w) / fair
                 for f in range(n)]
        out.append((b * bin_w / RTT, min(rates), max(rates)))
    return out


def run(args, ui):
    from metaroce.cli import CliError
    try:
        ns = parse_list(args.senders, int)
        total = parse_size(args.total)
        min_bytes = parse_size(args.min_bytes)
    except ValueError as e:
        raise CliError(str(e)) from None
    if any(n < 1 for n in ns) or args.stagger < 0:
        raise CliError("--senders must be >= 1 and --stagger >= 0")
    topos = [t.strip() for t in args.topologies.split(",") if t.strip()]
    if not topos or any(t not in ("single", "fat_tree") for t in topos):
        raise CliError("--topologies: single and/or fat_tree")
    if min_bytes < 1 and any(total // n < 1 for n in ns):
        raise CliError("--total too small for that many senders")
    protos = [p.strip() for p in args.protocols.split(",") if p.strip()]
    jobs = [{"protocol": p, "senders": n, "total": total, "min_bytes": min_bytes, "stagger": args.stagger,
             "seed": args.seed, "topology": t}
            for t in topos for n in ns for p in protos if p != "rocev2" or n <= args.rocev2_max]
    rows = ui.map(one_run, sorted(jobs, key=lambda j: -j["senders"]), label="incast runs")
    rows.sort(key=lambda r: (r["topology"] != "single", r["senders"], r["protocol"]))
    series = {(r["protocol"], r["senders"]): r.pop("_series") for r in rows if r["topology"] == topos[0]}

    def plot(path):
        p = plt()
        fig, axes = p.subplots(1, len(ns), figsize=(5 * len(ns), 4), squeeze=False)
        for ax, n in zip(axes[0], ns):
            for proto in protos:
                s = series.get((proto, n), [])
                if s:
                    ax.fill_between([x for x, _, _ in s], [a for _, a, _ in s], [b for _, _, b in s],
                                    alpha=0.35, label=f"{proto} min..max")
            mr = series.get(("metaroce", n))
            if mr:      # RoCEv2's millisecond timeouts would squeeze MetaRoCE's curve
                ax.set_xlim(0, mr[-1][0] * 1.2 + 5)
            ax.axhline(1.0, color="k", lw=0.8)
            ax.axhspan(0.9, 1.1, color="g", alpha=0.1)
            ax.set_ylim(0, 3)
            ax.set_xlabel("time (RTTs)")
            ax.set_ylabel("sender rate / fair share")
            w = max(1.0, 10 * n * (MTU + 114) * 8 / RATE / RTT)
            ax.set_title(f"incast {n} -> 1 (rate over {w:.3g} RTTs from t)")
            ax.legend()
        fig.tight_layout()
        fig.savefig(path, dpi=120)
        p.close(fig)

    params = {"fabric": {"link_gbps": RATE / 1e9, "rtt_us": RTT * 1e6, "buffer_bytes": int(2 * RATE * RTT / 8),
                         "ecn_threshold_bytes": int(RATE * RTT / 8 / 5)},
              "endpoint_config": {p: endpoint_cfg(p) for p in protos},
              **({"rocev2_baseline": baseline_params(RATE, RTT)} if "rocev2" in protos else {}),
              "convergence": "every sender's arrivals within 10 % of its fair share plus one packet, "
                             f"over every window of {', '.join(map(str, WINDOWS_RTTS))} RTTs that "
                             "starts at or after the convergence time (quarter-RTT steps)",
              "targets": "converge <= 3 RTTs, drop_fraction <= 0.01, jain >= 0.95, no drops after convergence"}
    return {"rows": rows, "title": f"bench incast: N -> 1 through one switch, {total} B in total",
            "params": params, "plot": plot}
