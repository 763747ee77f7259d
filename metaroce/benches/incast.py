"""``bench incast``: N senders write to one receiver at once (8, 32, 128), MetaRoCE vs RoCEv2.

N + 1 hosts on one switch, 400 Gb/s, 10 us base RTT, switch buffer 2 BDP per port, ECN marking
above BDP/5. Every sender posts one write of ``max(--total / N, --min-bytes)`` bytes at ``i x --stagger``.
The receiver's arrival rate from each sender is measured in sliding windows of ``window`` (at
least 2 RTTs and long enough for 20 packets per sender at the fair share, so that one packet
more or less is within the 10 % tolerance), stepped by one RTT, from the last sender's start to
one RTT before the first sender's completion (when its last data arrived).
Rows: ``protocol``, ``senders``, ``converge_rtts`` (from the last sender's start to the start of
the first window after which every window has every sender within 10 % of the fair share
``payload capacity / N``; ``null`` if never), ``window_rtts``, ``jain`` (Jain's index of the
senders' bytes from convergence, or the last start when never converged, to the first
completion), ``peak_queue_kb`` (receiver port), ``drops`` (receiver port),
``drops_after_converged``, ``goodput_gbps`` (aggregate), ``retransmitted``, ``delivered_ok``.
"""
from __future__ import annotations

from ._common import baseline_params, jain, parse_list, parse_size, payload_rate, plt
from ._common import endpoint_cfg as _cfg

HELP = "incast of 8, 32 and 128 senders to one receiver: convergence, fairness, queue, drops"

RATE, RTT, MTU = 400e9, 10e-6, 4096


def add_arguments(p):
    p.add_argument("--senders", default="8,32,128", help="comma-separated sender counts")
    p.add_argument("--total", default="64Mi", help="bytes written in total, split over the senders")
    p.add_argument("--min-bytes", default="1Mi",
                   help="at least this many bytes per sender (default 1Mi, two BDPs, so that no sender "
                        "finishes within its first window)")
    p.add_argument("--stagger", type=float, default=0.0, help="start of sender i is i x this many us")
    p.add_argument("--protocols", default="metaroce,rocev2")
    p.add_argument("--seed", type=int, default=1)


def endpoint_cfg(protocol):
    return _cfg(protocol, RATE, RTT, mtu=MTU)


def analyse(meter, n, t_last_start, t_first_done, fair_bps, bin_w):
    """Convergence time, window and Jain index from a :class:`~metaroce.sim.harness.Meter`."""
    pkt_time = (MTU + 90 + 24) * 8 / RATE
    window = max(2 * RTT, 20 * n * pkt_time)
    nb = max(1, round(window / bin_w))
    step = max(1, round(RTT / bin_w))
    b0 = int(t_last_start / bin_w)
    # The first sender's last data arrived about one RTT before its completion.
    b_end = int((t_first_done - RTT) / bin_w)
    starts = list(range(b0, b_end - nb + 1, step))
    good = []
    for b in starts:
        ok = True
        for f in range(n):
            d = meter.bins[f]
            r = sum(d.get(x, 0) for x in range(b, b + nb)) * 8 / (nb * bin_w)
            if abs(r - fair_bps) > 0.1 * fair_bps:
                ok = False
                break
        good.append(ok)
    t_conv = None
    for k in range(len(starts)):
        if all(good[k:]):
            t_conv = starts[k] * bin_w
            break
    t_from = t_conv if t_conv is not None else t_last_start
    f0, f1 = int(t_from / bin_w), b_end
    per = [sum(v for b, v in meter.bins[f].items() if f0 <= b < f1) for f in range(n)]
    return t_conv, window, jain(per) if sum(per) else 0.0


def one_run(job):
    from metaroce.sim.harness import Flow, run_writes
    from metaroce.sim.topology import Fabric

    n = job["senders"]
    fab = Fabric(n + 1, rate_bps=RATE, rtt=RTT, seed=job["seed"])
    port = fab.ports[f"p0.leaf0>h{n}"]
    port.drop_times = []
    size = max(job["total"] // n, job["min_bytes"])
    flows = [Flow(i, n, size, start=i * job["stagger"] * 1e-6, paths=8) for i in range(n)]
    bin_w = RTT / 4
    res = run_writes(fab, flows, job["protocol"], cfg=endpoint_cfg(job["protocol"]), seed=job["seed"],
                     until=1.0, meter_bin=bin_w)
    t_last = max(f.start for f in flows)
    done = [r.t_done for r in res.flows if r.t_done is not None]
    t_first = min(done) if done else res.sim_time
    fair = payload_rate(RATE, MTU) / n
    t_conv, window, j = analyse(res.meter, n, t_last, t_first, fair, bin_w)
    t_all = max(done) if len(done) == n else None
    return {"protocol": job["protocol"], "senders": n,
            "converge_rtts": None if t_conv is None else (t_conv - t_last) / RTT,
            "window_rtts": window / RTT, "jain": j,
            "peak_queue_kb": port.stats["peak_bytes"] / 1024, "drops": port.stats["drops"],
            "drops_after_converged": None if t_conv is None else sum(1 for t in port.drop_times if t >= t_conv),
            "bytes_per_sender": size,
            "goodput_gbps": size * n * 8 / t_all / 1e9 if t_all else 0.0,
            "retransmitted": int(res.stats.get("retransmitted", 0)),
            "delivered_ok": bool(res.delivered_ok and res.all_done), "wall_s": round(res.wall, 2),
            "_series": _series(res.meter, n, bin_w, fair, window)}


def _series(meter, n, bin_w, fair, window):
    """Min/max sender rate relative to the fair share over the measurement window, per RTT."""
    step = max(1, round(RTT / bin_w))
    nb = max(1, round(window / bin_w))
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
    if min_bytes < 1 and any(total // n < 1 for n in ns):
        raise CliError("--total too small for that many senders")
    protos = [p.strip() for p in args.protocols.split(",") if p.strip()]
    jobs = [{"protocol": p, "senders": n, "total": total, "min_bytes": min_bytes, "stagger": args.stagger,
             "seed": args.seed}
            for n in ns for p in protos]
    rows = ui.map(one_run, sorted(jobs, key=lambda j: -j["senders"]), label="incast runs")
    rows.sort(key=lambda r: (r["senders"], r["protocol"]))
    series = {(r["protocol"], r["senders"]): r.pop("_series") for r in rows}

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
            w = next((r["window_rtts"] for r in rows if r["senders"] == n), 0)
            ax.set_title(f"incast {n} -> 1 (window {w:.3g} RTTs, starting at t)")
            ax.legend()
        fig.tight_layout()
        fig.savefig(path, dpi=120)
        p.close(fig)

    params = {"fabric": {"link_gbps": RATE / 1e9, "rtt_us": RTT * 1e6, "buffer_bytes": int(2 * RATE * RTT / 8),
                         "ecn_threshold_bytes": int(RATE * RTT / 8 / 5)},
              "endpoint_config": {p: endpoint_cfg(p) for p in protos},
              **({"rocev2_baseline": baseline_params(RATE, RTT)} if "rocev2" in protos else {}),
              "targets": "converge <= 2 RTTs, jain >= 0.95, no drops after convergence"}
    return {"rows": rows, "title": f"bench incast: N -> 1 through one switch, {total} B in total",
            "params": params, "plot": plot}
