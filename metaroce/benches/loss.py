"""``bench loss``: goodput of one 64 MiB write under random data loss, MetaRoCE vs RoCEv2.

Two hosts through one switch, 4 KiB MTU, loss on the sender's link applied to data frames only
(ACKs and NAKs pass). Settings: 400 Gb/s with a 10 us base RTT (default) and 100 Gb/s with 8 us.
Each (setting, loss, protocol) is an independent run; runs are spread over ``--jobs`` processes.
Rows: ``protocol``, ``link_gbps``, ``rtt_us``, ``loss`` (fraction of data frames),
``goodput_gbps`` (bytes x 8 / time from post to the sender's completion), ``goodput_vs_lossless``
(against the same protocol and setting at loss 0), ``retransmitted``, ``spurious_retransmits``,
``delivered_ok`` (receiver memory equals the source and every completion exactly once), and
``timeouts``, ``packets``, ``wall_s``, ``loss_on``, ``spurious_per_packet``, ``paths_suspected``,
``lost_acks`` (with ``--loss-on acks``: every frame on the receiver's link is lost, which carries
only ACKs and NAKs; MR-REL-010).
"""
from __future__ import annotations

from ._common import baseline_params as _bp
from ._common import endpoint_cfg as _cfg
from ._common import parse_list, parse_size, plt

HELP = "goodput under random loss, MetaRoCE vs RoCEv2 go-back-N, at 400G/10us and 100G/8us"

SETTINGS = {"400g": (400.0, 10.0), "100g": (100.0, 8.0)}
LOSSES = [0.0, 0.001, 0.01, 0.02, 0.05, 0.10]


def add_arguments(p):
    p.add_argument("--bytes", default="64Mi", help="write size (default 64Mi)")
    p.add_argument("--losses", default=",".join(str(x) for x in LOSSES),
                   help="comma-separated loss fractions (default 0,0.001,0.01,0.02,0.05,0.1)")
    p.add_argument("--settings", default="400g,100g", help="400g (400 Gb/s, 10 us), 100g (100 Gb/s, 8 us)")
    p.add_argument("--protocols", default="metaroce,rocev2")
    p.add_argument("--paths", type=int, default=8, help="MetaRoCE paths per connection")
    p.add_argument("--loss-on", choices=("data", "acks"), default="data",
                   help="data: data frames on the sender's link (default); acks: every frame on the "
                        "receiver's link, which carries only ACKs and NAKs")
    p.add_argument("--seed", type=int, default=1)


def endpoint_cfg(protocol, link_gbps, rtt_us):
    """The configuration passed to each endpoint kind (printed with the results)."""
    return _cfg(protocol, link_gbps * 1e9, rtt_us * 1e-6)


def one_run(job):
    from metaroce.sim.faults import Faults
    from metaroce.sim.harness import Flow, run_writes
    from metaroce.sim.topology import Fabric

    proto, link, rtt, loss = job["protocol"], job["link_gbps"], job["rtt_us"], job["loss"]
    fab = Fabric(2, rate_bps=link * 1e9, rtt=rtt * 1e-6, seed=job["seed"])
    on_acks = job.get("loss_on") == "acks"
    if loss and on_acks:
        fab.set_faults(Faults(loss=loss, data_only=False, seed=job["seed"]), ["h1>p0.leaf0"])
    elif loss:
        fab.set_faults(Faults(loss=loss, seed=job["seed"]), ["h0>p0.leaf0"])
    res = run_writes(fab, [Flow(0, 1, job["nbytes"], paths=job["paths"])], proto,
                     cfg=endpoint_cfg(proto, link, rtt), seed=job["seed"], until=job.get("until", 5.0),
                     max_wall=job.get("max_wall", 600.0))
    fr = res.flows[0]
    st = res.stats
    return {"protocol": proto, "link_gbps": link, "rtt_us": rtt, "loss": loss,
            "goodput_gbps": fr.goodput_bps / 1e9, "goodput_vs_lossless": None,
            "retransmitted": int(st.get("retransmitted", 0)),
            "spurious_retransmits": int(st.get("spurious_retransmits", 0)),
            "delivered_ok": bool(res.delivered_ok and res.all_done),
            "timeouts": int(st.get("timeouts", 0)), "packets": res.packets,
            "loss_on": "acks" if on_acks else "data",
            "spurious_per_packet": int(st.get("spurious_retransmits", 0)) / max(1, int(st.get("data_packets_sent", 0))),
            "paths_suspected": int(st.get("paths_suspected", 0)),
            "lost_acks": int(st.get("acks_sent", 0) - st.get("acks_received", 0)) if on_acks else 0,
            "wall_s": round(res.wall, 3), "sim_pkts_per_s": round(res.pkts_per_wall_s)}


def baseline_params(link_gbps, rtt_us):
    return _bp(link_gbps * 1e9, rtt_us * 1e-6)


def run(args, ui):
    from metaroce.cli import CliError
    try:
        nbytes = parse_size(args.bytes)
        losses = parse_list(args.losses)
    except ValueError as e:
        raise CliError(str(e)) from None
    if any(not 0 <= x < 1 for x in losses):
        raise CliError("--losses must be fractions in [0, 1)")
    settings = [s.strip() for s in args.settings.split(",") if s.strip()]
    bad = [s for s in settings if s not in SETTINGS]
    if bad:
        raise CliError(f"unknown setting {bad[0]!r}; choose from {', '.join(SETTINGS)}")
    protos = [p.strip() for p in args.protocols.split(",") if p.strip()]
    if any(p not in ("metaroce", "rocev2") for p in protos):
        raise CliError("--protocols takes metaroce and/or rocev2")
    if 0.0 not in losses:
        losses = [0.0] + losses
    jobs = [{"protocol": p, "link_gbps": SETTINGS[s][0], "rtt_us": SETTINGS[s][1], "loss": x,
             "nbytes": nbytes, "paths": args.paths, "seed": args.seed, "loss_on": args.loss_on}
            for s in settings for x in losses for p in protos]
    # Longest runs first (RoCEv2 at high loss) so two workers finish together.
    order = sorted(range(len(jobs)), key=lambda i: -(jobs[i]["loss"] * (10 if jobs[i]["protocol"] == "rocev2" else 1)))
    done = ui.map(one_run, [jobs[i] for i in order], label="loss runs")
    rows = [None] * len(jobs)
    for k, i in enumerate(order):
        rows[i] = done[k]
    base = {(r["protocol"], r["link_gbps"]): r["goodput_gbps"] for r in rows if r["loss"] == 0}
    for r in rows:
        b = base.get((r["protocol"], r["link_gbps"]))
        r["goodput_vs_lossless"] = r["goodput_gbps"] / b if b else None
    summary = {}
    for s in settings:
        link = SETTINGS[s][0]
        for x in losses:
            g = {r["protocol"]: r["goodput_gbps"] for r in rows if r["link_gbps"] == link and r["loss"] == x}
            if "metaroce" in g and "rocev2" in g and g["rocev2"] > 0:
                summary[f"{s}_loss{x:g}_metaroce_over_rocev2"] = g["metaroce"] / g["rocev2"]
    params = {"workload": {"bytes": nbytes, "mtu": 4096, "topology": "2 hosts, 1 switch",
                           "loss_on": "data frames on the sender's link" if args.loss_on == "data" else
                           "every frame on the receiver's link (ACKs and NAKs)", "metaroce_paths": args.paths}}
    if "rocev2" in protos:
        params["rocev2_baseline"] = {s: baseline_params(*SETTINGS[s]) for s in settings}
    if "metaroce" in protos:
        params["metaroce_config"] = {s: endpoint_cfg("metaroce", *SETTINGS[s]) for s in settings}

    def plot(path):
        p = plt()
        fig, axes = p.subplots(1, len(settings), figsize=(6 * len(settings), 4), squeeze=False)
        for ax, s in zip(axes[0], settings):
            link, rtt = SETTINGS[s]
            for proto in protos:
                pts = [(r["loss"] * 100, r["goodput_gbps"]) for r in rows
                       if r["protocol"] == proto and r["link_gbps"] == link]
                ax.plot([a for a, _ in pts], [b for _, b in pts], marker="o", label=proto)
            ax.set_xscale("symlog", linthresh=0.1)
            ticks = [x * 100 for x in losses]
            ax.set_xticks(ticks)
            ax.set_xticklabels([f"{t:g}" for t in ticks])
            ax.set_xlabel(f"{args.loss_on} loss (%)")
            ax.set_ylabel("goodput (Gb/s)")
            ax.set_title(f"{link:g} Gb/s, {rtt:g} us base RTT")
            ax.grid(True, alpha=0.3)
            ax.legend()
        fig.tight_layout()
        fig.savefig(path, dpi=120)
        p.close(fig)

    return {"rows": rows, "title": f"bench loss: one {nbytes} B write, 2 hosts through one switch",
            "columns": ["protocol", "link_gbps", "rtt_us", "loss", "goodput_gbps", "goodput_vs_lossless",
                        "retransmitted", "spurious_retransmits", "timeouts", "delivered_ok", "wall_s"]
            + (["lost_acks", "spurious_per_packet", "paths_suspected"] if args.loss_on == "acks" else []),
            "params": params, "summary": summary, "plot": plot}
