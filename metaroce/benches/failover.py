"""``bench failover``: a path, then a whole plane, fails mid-transfer; MetaRoCE and its four
baselines, built on the shipped scenarios ``failover_leaf_spine`` and ``failover_planes``.

``path``: 2 leaves x 4 spines, 400 Gb/s, 10 us; one write h0 -> h1. At ``--fail-at`` RTTs the
leaf-0 uplink that carries the connection's path 0 (MetaRoCE) or its only path (a RoCE QP) goes
down, both directions, for good (it replaces the scenario's own failure), and switches never
reconverge. ``path_reconverge``: the same, and switches take the link out of ECMP
``routing.reconverge_us`` (the scenario's 100 us = 10 RTTs) after it failed. ``plane``: 4 planes,
plane 1 goes down at ``--fail-at`` RTTs (MetaRoCE paths 1 and 5, a RoCE QP 1's only plane).
``rocev2-dcqcn`` runs on the deployed fabric (PFC and RED tables of ``pfc_dcqcn_incast``).

The receiver's arrival rate is measured in quarter-RTT bins. ``before_gbps``: mean over the 5 RTTs
before the failure; the expected rate after it is ``before`` (path) or ``before x 3/4``
(plane). ``recover_rtts``: from the failure to the end of the first 1-RTT window from which the
rate stays at least 0.9 x expected for 5 RTTs (or until the write completes); ``null`` if never.
``during_gbps``: mean arrival rate from the failure to the recovery. Also ``goodput_gbps``
(whole write), ``retransmitted``, ``timeouts``, ``status``, ``delivered_ok``.
"""
from __future__ import annotations

from ._common import parse_size, plt
from .loss import deployed_fabric, load_shipped

HELP = "failover: one path (with/without reconvergence), then one of 4 planes, fails mid-transfer"

PROTOCOLS = ("metaroce", "rocev2", "rocev2-adaptive", "rocev2-dcqcn", "irn")
SCENARIOS = {"path": "failover_leaf_spine", "path_reconverge": "failover_leaf_spine",
             "plane": "failover_planes"}


def add_arguments(p):
    p.add_argument("--bytes", default=None, help="write size (default: the scenario's, 32Mi / 64Mi)")
    p.add_argument("--fail-at", type=float, default=20.0, help="failure time in RTTs (default 20)")
    p.add_argument("--scenarios", default="path,path_reconverge,plane")
    p.add_argument("--protocols", default=",".join(PROTOCOLS))
    p.add_argument("--seed", type=int, default=1)


def one_run(job):
    from metaroce.sim.fabric import ecmp_hash, fmix32
    from metaroce.sim.scenario import run_scenario

    proto, scen = job["protocol"], job["scenario"]
    sc = load_shipped(SCENARIOS[scen])
    sc["seed"] = job["seed"]
    sc["protocol"] = {"name": proto}
    if proto == "rocev2-dcqcn":
        deployed_fabric(sc)
    if job["nbytes"]:
        sc["flows"][0]["size"] = job["nbytes"]
    rtt = sc["topology"]["rtt_us"] * 1e-6
    t_fail = job["fail_at"] * rtt
    path = scen.startswith("path")
    if path:
        sc["failures"] = []
        if scen == "path":
            sc["routing"] = {}
    else:
        sc["failures"][0]["at_us"] = t_fail * 1e6
    bin_w = rtt / 4
    bins = {}
    failed = {} if path else {"name": "plane 1"}

    def setup(fab, info):
        src, dst = fab.hosts[0], fab.hosts[1]

        def rx(f, now):
            if f.payload and f.ip.src == src.addr:
                b = int(now / bin_w)
                bins[b] = bins.get(b, 0) + len(f.payload)
        dst.rx_hook = rx
        if not path:
            return
        last = {}
        counted = src.tx_hook

        def tx(f, now):
            counted(f, now)
            if f.payload and (f.mrdh is None or f.mrdh.path == 0):
                last["f"] = f
        src.tx_hook = tx

        def fail(_):
            leaf = fab.switches["p0.leaf0"]
            hops = leaf.routes[dst.addr]
            h = ecmp_hash(last["f"], leaf.seed)
            port = hops[(fmix32(h) if leaf.mix else h) % len(hops)]
            name = port.link.name
            a, _, b = name.partition(">")
            fab.link_down(name, fab.sim.now)
            fab.link_down(f"{b}>{a}", fab.sim.now)
            failed["name"] = name
        fab.sim.at(t_fail, fail)

    res = run_scenario(sc, setup=setup)
    (fr,) = res["flows"]
    expect = 1.0 if path else 3 / 4
    per = 4
    t_end = fr["fct_s"] if fr["fct_s"] is not None else res["sim_time_s"]

    def rate(t0, t1):
        b0, b1 = int(round(t0 / bin_w)), int(round(t1 / bin_w))
        return sum(bins.get(b, 0) for b in range(b0, b1)) * 8 / max(t1 - t0, bin_w)

    before = rate(t_fail - 5 * rtt, t_fail)
    target = 0.9 * expect * before
    finished_ok = fr["status"] == "success" and fr["delivered_ok"]
    rec = None
    k = 1
    while True:
        w_end = t_fail + k * rtt
        if w_end > t_end:
            rec = k if finished_ok else None     # completing the write counts as recovered
            break
        if all(rate(w - rtt, w) >= target
               for w in (t_fail + (k + j) * rtt for j in range(5)) if w <= t_end):
            rec = k
            break
        k += 1
    during = rate(t_fail, t_fail + rec * rtt) if rec else rate(t_fail, t_end)
    host = res["hosts"].get("h0", {})
    return {"protocol": proto, "scenario": scen, "planes": sc["topology"].get("planes", 1),
            "reconverge_us": (sc.get("routing") or {}).get("reconverge_us"),
            "failed": failed.get("name"), "before_gbps": before / 1e9, "recover_rtts": rec,
            "during_gbps": during / 1e9, "goodput_gbps": fr["goodput_gbps"],
            "retransmitted": host.get("retransmitted", 0), "timeouts": host.get("timeouts", 0),
            "status": fr["status"], "delivered_ok": bool(res["delivered_ok"] and res["all_done"]),
            "wall_s": round(res["wall_s"], 2), "_params": res["protocol"]["params"],
            "_series": [(b / per, v * 8 / bin_w / 1e9) for b, v in sorted(bins.items())]}


def run(args, ui):
    from metaroce.cli import CliError
    try:
        nbytes = parse_size(args.bytes) if args.bytes else None
    except ValueError as e:
        raise CliError(str(e)) from None
    scens = [s.strip() for s in args.scenarios.split(",") if s.strip()]
    if not scens or any(s not in SCENARIOS for s in scens):
        raise CliError(f"--scenarios takes {', '.join(SCENARIOS)}")
    if args.fail_at < 6:
        raise CliError("--fail-at must be at least 6 RTTs (the rate before is measured over 5)")
    protos = [p.strip() for p in args.protocols.split(",") if p.strip()]
    if not protos or any(p not in PROTOCOLS for p in protos):
        raise CliError(f"--protocols takes {', '.join(PROTOCOLS)}")
    jobs = [{"protocol": p, "scenario": s, "nbytes": nbytes, "fail_at": args.fail_at, "seed": args.seed}
            for s in scens for p in protos]
    rows = ui.map(one_run, jobs, label="failover runs")
    series = {(r["protocol"], r["scenario"]): r.pop("_series") for r in rows}
    params = {}
    for r in rows:
        params.setdefault(r["protocol"], r.pop("_params"))
        r.pop("_params", None)
    summary = {}
    for s in scens:
        here = {r["protocol"]: r for r in rows if r["scenario"] == s}
        if "metaroce" in here:
            summary[f"{s}_metaroce_recover_rtts"] = here["metaroce"]["recover_rtts"]
        rec = {p: r["recover_rtts"] for p, r in here.items() if p != "metaroce" and r["recover_rtts"] is not None}
        if rec:
            best = min(rec, key=rec.get)
            summary[f"{s}_best_baseline"] = best
            summary[f"{s}_best_baseline_recover_rtts"] = rec[best]

    def plot(path):
        p = plt()
        fig, axes = p.subplots(1, len(scens), figsize=(6 * len(scens), 4), squeeze=False)
        for ax, s in zip(axes[0], scens):
            for proto in protos:
                agg = {}
                for t, v in series.get((proto, s), []):
                    agg.setdefault(int(t), []).append(v)
                xs = sorted(agg)
                ax.plot(xs, [sum(agg[x]) / 4 for x in xs], label=proto)
            ax.axvline(args.fail_at, color="r", lw=0.8, ls="--", label="failure")
            ax.set_xlabel("time (RTTs)")
            ax.set_ylabel("arrival rate (Gb/s, per RTT)")
            ax.set_title({"path": "one path fails", "path_reconverge": "one path fails, switches reconverge",
                          "plane": "one of 4 planes fails"}[s], fontsize=9)
            ax.grid(True, alpha=0.3)
            ax.legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(path, dpi=120)
        p.close(fig)

    return {"rows": rows, "title": "bench failover: recovery from a path and a plane failure",
            "columns": ["protocol", "scenario", "planes", "reconverge_us", "failed", "before_gbps",
                        "recover_rtts", "during_gbps", "goodput_gbps", "retransmitted", "timeouts",
                        "status", "delivered_ok", "wall_s"],
            "params": {"scenarios": {s: SCENARIOS[s] for s in scens}, "protocols": params,
                       "target": "recover within 3 RTTs, with and without reconvergence"},
            "summary": summary, "plot": plot}
