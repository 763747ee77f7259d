"""``bench spray``: spurious retransmissions when spraying over many paths with reordering.

Fabric: one leaf-spine plane (2 leaves, ``--spines`` spines, 400 Gb/s, 10 us base RTT); spine
``k``'s links are ``k x --skew`` longer, so packets sprayed over paths that hash to different
spines arrive out of order (by up to ``(spines - 1) x skew x 2``); queueing between the
``--senders`` concurrent flows adds more. ``--jitter`` adds a random per-frame delay on the spine
links (reordering inside one path too, which a real FIFO path does not do). No loss.
MetaRoCE sprays each write over 8 and 64 paths; the RoCEv2 baseline (one path per QP, it cannot
spray) runs on the same fabric for reference.
Rows: ``protocol``, ``paths``, ``packets_sent`` (data), ``retransmitted``,
``spurious_retransmits``, ``spurious_per_packet``, ``goodput_gbps`` (aggregate), ``delivered_ok``.
"""
from __future__ import annotations

from ._common import baseline_params, endpoint_cfg, parse_list, parse_size

HELP = "spurious retransmissions when spraying over 8 and 64 paths with reordering, no loss"


def add_arguments(p):
    p.add_argument("--paths", default="8,64", help="comma-separated path counts (default 8,64)")
    p.add_argument("--bytes", default="16Mi", help="bytes per write (default 16Mi)")
    p.add_argument("--senders", type=int, default=4, help="concurrent sender/receiver pairs (default 4)")
    p.add_argument("--spines", type=int, default=8)
    p.add_argument("--skew", type=float, default=1.0, help="extra one-way delay per spine index, us (default 1)")
    p.add_argument("--jitter", type=float, default=0.0, help="random extra delay on spine links, us (default 0)")
    p.add_argument("--protocols", default="metaroce,rocev2")
    p.add_argument("--seed", type=int, default=1)


def one_run(job):
    from metaroce.sim.faults import Faults
    from metaroce.sim.harness import Flow, run_writes
    from metaroce.sim.topology import Fabric

    n = job["senders"]
    fab = Fabric(2 * n, leaves=2, spines=job["spines"], rate_bps=400e9, rtt=10e-6,
                 spine_skew=job["skew"] * 1e-6, seed=job["seed"])
    if job["jitter"]:
        fab.set_faults(Faults(jitter=job["jitter"] * 1e-6, seed=job["seed"]),
                       [k for k in fab.links if ".spine" in k])
    # Hosts 0, 2, 4, ... are on leaf 0 and send to hosts 1, 3, 5, ... on leaf 1.
    flows = [Flow(2 * i, 2 * i + 1, job["nbytes"], paths=job["paths"]) for i in range(n)]
    cfg = endpoint_cfg(job["protocol"], 400e9, 10e-6)
    res = run_writes(fab, flows, job["protocol"], cfg=cfg, seed=job["seed"], until=1.0)
    st = res.stats
    sent = int(st.get("data_packets_sent", 0))
    spur = int(st.get("spurious_retransmits", 0))
    t = max((r.t_done or 0) for r in res.flows)
    return {"protocol": job["protocol"], "paths": job["paths"] if job["protocol"] == "metaroce" else 1,
            "packets_sent": sent, "retransmitted": int(st.get("retransmitted", 0)),
            "spurious_retransmits": spur, "spurious_per_packet": spur / sent if sent else None,
            "goodput_gbps": n * job["nbytes"] * 8 / t / 1e9 if t else 0.0,
            "delivered_ok": bool(res.delivered_ok and res.all_done), "wall_s": round(res.wall, 3)}


def run(args, ui):
    from metaroce.cli import CliError
    try:
        nbytes = parse_size(args.bytes)
        paths = parse_list(args.paths, int)
    except ValueError as e:
        raise CliError(str(e)) from None
    if any(not 1 <= p <= 256 for p in paths):
        raise CliError("--paths must be 1..256")
    if args.senders < 1 or args.spines < 1 or args.skew < 0 or args.jitter < 0:
        raise CliError("--senders and --spines must be >= 1; --skew and --jitter >= 0")
    protos = [p.strip() for p in args.protocols.split(",") if p.strip()]
    base = {"nbytes": nbytes, "senders": args.senders, "spines": args.spines, "skew": args.skew,
            "jitter": args.jitter, "seed": args.seed}
    jobs = []
    if "metaroce" in protos:
        jobs += [dict(base, protocol="metaroce", paths=p) for p in paths]
    if "rocev2" in protos:
        jobs.append(dict(base, protocol="rocev2", paths=1))
    rows = ui.map(one_run, jobs, label="spray runs")
    worst = max((r["spurious_per_packet"] or 0) for r in rows if r["protocol"] == "metaroce") \
        if "metaroce" in protos else None
    return {"rows": rows,
            "title": f"bench spray: {args.senders} x {nbytes} B writes over 2 leaves x {args.spines} spines, "
                     f"spine skew {args.skew} us, jitter {args.jitter} us, no loss",
            "params": {"fabric": {"link_gbps": 400, "rtt_us": 10, "spines": args.spines, "skew_us": args.skew,
                                  "jitter_us": args.jitter},
                       "endpoint_config": {p: endpoint_cfg(p, 400e9, 10e-6) for p in protos},
                       **({"rocev2_baseline": baseline_params(400e9, 10e-6)} if "rocev2" in protos else {})},
            "summary": {"metaroce_worst_spurious_per_packet": worst, "target": "< 0.001"}}
