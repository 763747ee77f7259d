"""``bench failover``: a path, then a whole plane, fails mid-transfer; MetaRoCE vs RoCEv2.

Scenario ``path``: one plane, 2 leaves x 4 spines, 400 Gb/s, 10 us base RTT; one write from a
host on leaf 0 to a host on leaf 1. At ``--fail-at`` RTTs the leaf-0 uplink that carries the
sender's path 0 (MetaRoCE) or its only path (RoCEv2) goes down for good: every path hashed onto
that spine fails. Scenario ``plane``: 4 planes (one switch each), the host has one 400 Gb/s port
per plane; plane 1 goes down for good. It carries MetaRoCE paths 1 and 5 of the
connection (plane = path % 4) and the RoCEv2 QP 1 (plane 1 % 4).
The receiver's arrival rate is measured per RTT. ``before_gbps`` is the rate over the 5 RTTs
before the failure; the expected rate afterwards is ``before`` (path) or ``before x 3/4``
(plane). ``recover_rtts``: from the failure to the end of the first 1-RTT window from which the
rate stays at least 0.9 x expected for 5 RTTs (or until the write completes); ``null`` if never.
``during_gbps``: mean arrival rate from the failure to the recovery. Also ``goodput_gbps``
(whole write), ``retransmitted``, ``timeouts``, ``delivered_ok``.
"""
from __future__ import annotations

from ._common import baseline_params, parse_size, plt
from ._common import endpoint_cfg as _cfg

HELP = "failover: one path, then one of 4 planes, fails mid-transfer: RTTs to recover, goodput"

RATE, RTT = 400e9, 10e-6


def add_arguments(p):
    p.add_argument("--bytes", default="32Mi", help="write size for the path scenario (plane: x4)")
    p.add_argument("--fail-at", type=float, default=20.0, help="failure time in RTTs (default 20)")
    p.add_argument("--scenarios", default="path,plane")
    p.add_argument("--protocols", default="metaroce,rocev2")
    p.add_argument("--seed", type=int, default=1)


def endpoint_cfg(protocol, planes):
    return _cfg(protocol, RATE, RTT, planes)


def one_run(job):
    from metaroce.sim.fabric import ecmp_hash
    from metaroce.sim.harness import Flow, run_writes
    from metaroce.sim.topology import Fabric

    proto, scen = job["protocol"], job["scenario"]
    t_fail = job["fail_at"] * RTT
    if scen == "path":
        planes = 1
        fab = Fabric(2, leaves=2, spines=4, rate_bps=RATE, rtt=RTT, seed=job["seed"])
        nbytes = job["nbytes"]
        last = {}

        def tap(f, now):
            if f.payload and (f.mrdh is None or f.mrdh.path == 0):
                last["f"] = f
        fab.hosts[0].tx_hook = tap
        failed = {}

        def fail(_):
            leaf = fab.switches["p0.leaf0"]
            hops = leaf.routes[fab.hosts[1].addr]
            port = hops[ecmp_hash(last["f"], leaf.seed) % len(hops)]
            port.link.up = False
            failed["name"] = port.link.name
        fab.sim.at(t_fail, fail)
        expect = 1.0
    else:
        planes = 4
        fab = Fabric(2, planes=4, rate_bps=RATE, rtt=RTT, seed=job["seed"])
        nbytes = job["nbytes"] * 4
        fab.plane_down(1, at=t_fail)
        failed = {"name": "plane 1"}
        expect = 3 / 4
    bin_w = RTT / 4
    res = run_writes(fab, [Flow(0, 1, nbytes, paths=8)], proto, cfg=endpoint_cfg(proto, planes),
                     seed=job["seed"], until=0.05, meter_bin=bin_w)
    fr = res.flows[0]
    bins = res.meter.bins[0]
    per = round(RTT / bin_w)
    t_end = fr.t_done if fr.t_done is not None else res.sim_time

    def rate(t0, t1):
        b0, b1 = int(round(t0 / bin_w)), int(round(t1 / bin_w))
        return sum(bins.get(b, 0) for b in range(b0, b1)) * 8 / max(t1 - t0, bin_w)

    before = rate(t_fail - 5 * RTT, t_fail)
    target = 0.9 * expect * before
    rec = None
    k = 1
    finished_ok = fr.t_done is not None and fr.data_ok and fr.ok_status
    while True:
        w_end = t_fail + k * RTT
        if w_end > t_end:
            rec = k if finished_ok else None     # completing the write counts as recovered
            break
        if all(rate(w - RTT, w) >= target
               for w in (t_fail + (k + j) * RTT for j in range(5)) if w <= t_end):
            rec = k
            break
        k += 1
    during = rate(t_fail, t_fail + rec * RTT) if rec else rate(t_fail, t_end)
    st = res.stats
    return {"protocol": proto, "scenario": scen, "planes": planes, "failed": failed.get("name"),
            "before_gbps": before / 1e9, "recover_rtts": rec, "during_gbps": during / 1e9,
            "goodput_gbps": fr.goodput_bps / 1e9, "retransmitted": int(st.get("retransmitted", 0)),
            "timeouts": int(st.get("timeouts", 0)), "paths_retired": int(st.get("paths_retired", 0)),
            "delivered_ok": bool(res.delivered_ok and res.all_done), "wall_s": round(res.wall, 2),
            "_series": [(b / per, v * 8 / bin_w / 1e9) for b, v in sorted(bins.items())]}


def run(args, ui):
    from metaroce.cli import CliError
    try:
        nbytes = parse_size(args.bytes)
    except ValueError as e:
        raise CliError(str(e)) from None
    scens = [s.strip() for s in args.scenarios.split(",") if s.strip()]
    if any(s not in ("path", "plane") for s in scens):
        raise CliError("--scenarios takes path and/or plane")
    if args.fail_at < 6:
        raise CliError("--fail-at must be at least 6 RTTs (the rate before is measured over 5)")
    protos = [p.strip() for p in args.protocols.split(",") if p.strip()]
    jobs = [{"protocol": p, "scenario": s, "nbytes": nbytes, "fail_at": args.fail_at, "seed": args.seed}
            for s in scens for p in protos]
    rows = ui.map(one_run, jobs, label="failover runs")
    series = {(r["protocol"], r["scenario"]): r.pop("_series") for r in rows}

    def plot(path):
        p = plt()
        fig, axes = p.subplots(1, len(scens), figsize=(6 * len(scens), 4), squeeze=False)
        for ax, s in zip(axes[0], scens):
            for proto in protos:
                pts = series.get((proto, s), [])
                # per-RTT averages of the quarter-RTT bins
                agg = {}
                for t, v in pts:
                    agg.setdefault(int(t), []).append(v)
                xs = sorted(agg)
                ax.plot(xs, [sum(agg[x]) / 4 for x in xs], label=proto)
            ax.axvline(args.fail_at, color="r", lw=0.8, ls="--", label="failure")
            ax.set_xlabel("time (RTTs)")
            ax.set_ylabel("arrival rate (Gb/s, per RTT)")
            ax.set_title("one path fails" if s == "path" else "one of 4 planes fails")
            ax.grid(True, alpha=0.3)
            ax.legend()
        fig.tight_layout()
        fig.savefig(path, dpi=120)
        p.close(fig)

    return {"rows": rows, "title": "bench failover: recovery from a path and a plane failure",
            "params": {"endpoint_config": {f"{p}_{s}": endpoint_cfg(p, 1 if s == "path" else 4)
                                           for p in protos for s in scens},
                       **({"rocev2_baseline": baseline_params(RATE, RTT)} if "rocev2" in protos else {}),
                       "target": "MetaRoCE recovers within 3 RTTs"},
            "plot": plot}
