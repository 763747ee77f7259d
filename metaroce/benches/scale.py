"""``bench scale``: 4,000 connections over 1, 4 and 8 planes; the simulator's own speed.

``--pairs`` sender hosts (leaf 0) each write to one receiver host (leaf 1) over ``P`` planes;
each plane is a leaf-spine (2 leaves, ``--pairs`` spines, 400 Gb/s links, 10 us base RTT), so
the fabric is non-blocking and ECMP spreads the paths over the spines. ``--conns`` connections
are spread evenly over the pairs (consecutive connection ids per pair); each posts one write of ``--bytes-per-conn`` at time 0 and
sprays it over 8 paths (path i on plane i % P). Every host has one 400 Gb/s port per plane,
each with its own transmit FIFO (MR-FAB-021, ``params.nic_tx_fifo_frames``).
Rows: ``protocol``, ``planes``, ``connections``, ``goodput_gbps`` (all bytes x 8 / time to the
last completion), ``per_plane_gbps``, ``scaling`` (goodput over ``planes x`` the 1-plane
goodput), ``delivered_ok``, ``sim_packets``, ``wall_s``, ``sim_pkts_per_s`` (simulated packets,
data and ACKs, per wall-clock second), ``sim_events_per_s``.
"""
from __future__ import annotations

from ._common import endpoint_cfg, parse_list, parse_size, plt

HELP = "4,000 connections over 1, 4 and 8 planes: aggregate goodput and simulator speed"

RATE, RTT = 400e9, 10e-6


def add_arguments(p):
    p.add_argument("--planes", default="1,4,8", help="comma-separated plane counts")
    p.add_argument("--conns", type=int, default=4000, help="connections in total (default 4000)")
    p.add_argument("--pairs", type=int, default=4, help="sender/receiver host pairs (default 4)")
    p.add_argument("--bytes-per-conn", default="64Ki", help="write size per connection (default 64Ki)")
    p.add_argument("--protocols", default="metaroce")
    p.add_argument("--seed", type=int, default=1)


def one_run(job):
    from metaroce.sim.harness import Flow, run_writes
    from metaroce.sim.topology import Fabric

    P, n = job["planes"], job["pairs"]
    fab = Fabric(2 * n, planes=P, leaves=2, spines=n, rate_bps=RATE, rtt=RTT, seed=job["seed"])
    # Connection ids are consecutive per sender (the harness numbers flows 1, 2, ...); each
    # connection starts its path rotation at its id (MR-CONN-004), so planes (path % P) rotate too.
    per = -(-job["conns"] // n)
    flows = [Flow(2 * (c // per), 2 * (c // per) + 1, job["bytes"], paths=8) for c in range(job["conns"])]
    res = run_writes(fab, flows, job["protocol"], cfg=endpoint_cfg(job["protocol"], RATE, RTT, P),
                     seed=job["seed"], until=1.0)
    t = max((r.t_done or 0) for r in res.flows)
    total = job["bytes"] * job["conns"]
    g = total * 8 / t / 1e9 if t else 0.0
    return {"protocol": job["protocol"], "planes": P, "connections": job["conns"], "goodput_gbps": g,
            "per_plane_gbps": g / P, "scaling": None, "delivered_ok": bool(res.delivered_ok and res.all_done),
            "retransmitted": int(res.stats.get("retransmitted", 0)),
            "sim_packets": res.packets, "wall_s": round(res.wall, 2),
            "sim_pkts_per_s": round(res.pkts_per_wall_s), "sim_events_per_s": round(res.events / res.wall)}


def run(args, ui):
    from metaroce.cli import CliError
    try:
        planes = parse_list(args.planes, int)
        nbytes = parse_size(args.bytes_per_conn)
    except ValueError as e:
        raise CliError(str(e)) from None
    if any(p < 1 for p in planes) or args.conns < 1 or args.pairs < 1 or nbytes < 1:
        raise CliError("--planes, --conns, --pairs and --bytes-per-conn must be >= 1")
    protos = [p.strip() for p in args.protocols.split(",") if p.strip()]
    if any(p not in ("metaroce", "rocev2") for p in protos):
        raise CliError("--protocols takes metaroce and/or rocev2")
    jobs = [{"protocol": p, "planes": P, "conns": args.conns, "pairs": args.pairs, "bytes": nbytes,
             "seed": args.seed} for p in protos for P in planes]
    rows = ui.map(one_run, sorted(jobs, key=lambda j: -j["planes"]), label="scale runs")
    rows.sort(key=lambda r: (r["protocol"], r["planes"]))
    for proto in protos:
        one = next((r["goodput_gbps"] for r in rows if r["protocol"] == proto and r["planes"] == 1), None)
        for r in rows:
            if r["protocol"] == proto and one:
                r["scaling"] = r["goodput_gbps"] / (r["planes"] * one)

    def plot(path):
        p = plt()
        fig, ax = p.subplots(figsize=(6, 4))
        for proto in protos:
            pts = [(r["planes"], r["goodput_gbps"]) for r in rows if r["protocol"] == proto]
            ax.plot([a for a, _ in pts], [b for _, b in pts], marker="o", label=proto)
            one = next((b for a, b in pts if a == 1), None)
            if one:
                ax.plot([a for a, _ in pts], [a * one for a, _ in pts], ls="--", color="grey",
                        label=f"{proto}: planes x 1-plane")
        ax.set_xlabel("planes")
        ax.set_ylabel("aggregate goodput (Gb/s)")
        ax.set_title(f"{args.conns} connections, {args.pairs} host pairs")
        ax.grid(True, alpha=0.3)
        ax.legend()
        fig.tight_layout()
        fig.savefig(path, dpi=120)
        p.close(fig)

    from metaroce.sim.fabric import NIC_TX_FIFO_FRAMES
    return {"rows": rows,
            "title": f"bench scale: {args.conns} connections x {nbytes} B over {args.pairs} host pairs",
            "params": {"endpoint_config": {f"{p}_{P}planes": endpoint_cfg(p, RATE, RTT, P)
                                           for p in protos for P in planes},
                       "nic_tx_fifo_frames": NIC_TX_FIFO_FRAMES,
                       "target": "scaling >= 0.9 at 4 and 8 planes"},
            "plot": plot}
