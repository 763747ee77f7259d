"""``bench fairness``: sharing one bottleneck, on scenario files shipped in the package.

Cases (``metaroce/scenarios/``, run with ``metaroce sim`` as well):

- ``trickle_bulk`` (``fair_trickle_bulk``): a bulk writer and a trickle (4 KiB every 10 us) into
  one receiver; max-min fair is the trickle's demand for the trickle and the rest for the bulk.
- ``core_1v8`` / ``core_1v64`` (``fair_core_paths``; the 64-path case sets the multipath flow's
  ``paths`` to 64): a 1-path and a multipath connection share one core link, each to its own
  receiver.
- ``core_n4`` (``fair_core_n``): four connections share one core link.

``--set heldout`` runs the held-out scenarios instead (``heldout_*``: other rates, RTTs, counts,
path mixes and topologies, never used to choose a constant), ``--set all`` both.

Each flow's rate is measured from its payload arrivals at the receiver between 20 base RTTs after
the last flow started and 1 base RTT before the first flow completed (every flow active).
Rows: ``case``, ``protocol``, ``flows`` (``name``, ``paths``, ``gbps``), ``jain`` (Jain's index
of each flow's rate over its max-min fair share: 1.0 = max-min fair), ``bulk_vs_ideal`` (the
bulk flows' total over the bottleneck's payload capacity less what the trickle flows got),
``window_us``, ``delivered_ok``. The max-min shares come from water-filling the bottleneck's
payload capacity with the trickle flows' demands (message size / interval).
"""
from __future__ import annotations

import copy

from ._common import jain, payload_rate

HELP = "fairness: trickle + bulk, 1 vs 8 vs 64 paths on a core link, N flows on one bottleneck"

#: (case, scenario file stem, {flow name: {key: value}} overrides)
CASES = (
    ("trickle_bulk", "fair_trickle_bulk", {}),
    ("core_1v8", "fair_core_paths", {}),
    ("core_1v64", "fair_core_paths", {"multi_path": {"paths": 64}}),
    ("core_n4", "fair_core_n", {}),
)
HELDOUT = (
    ("ho_trickle_3bulk", "heldout_trickle_3bulk", {}),
    ("ho_core_1v4v16", "heldout_core_paths", {}),
    ("ho_core_n8_mixed", "heldout_core_n", {}),
    ("ho_fat_tree_recv", "heldout_fat_tree_recv", {}),
)
WARMUP_RTTS = 20


def add_arguments(p):
    p.add_argument("--set", choices=("main", "heldout", "all"), default="main",
                   help="main cases, the held-out scenarios, or both")
    p.add_argument("--protocols", default="metaroce,rocev2")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--scale", type=float, default=1.0,
                   help="multiply every bulk flow's size (and the trickle's message count)")


def _scenario(stem, overrides, protocol, scale):
    from metaroce.sim.scenario import load_scenario, shipped_scenarios
    (path,) = [p for p in shipped_scenarios() if p.stem == stem]
    sc = copy.deepcopy(load_scenario(path))
    sc["protocol"]["name"] = protocol
    for fl in sc["flows"]:
        fl.update(overrides.get(fl["name"], {}))
        if fl["repeat"] > 1 and fl["interval_us"] > 0:
            fl["repeat"] = max(2, int(fl["repeat"] * scale))
        else:
            fl["size"] = max(4096, int(fl["size"] * scale))
    return sc


def max_min(capacity, demands):
    """Water-filling: the max-min fair shares of ``capacity`` for ``demands`` (None: no limit)."""
    share = [0.0] * len(demands)
    left = list(range(len(demands)))
    cap = capacity
    while left:
        level = cap / len(left)
        low = [i for i in left if demands[i] is not None and demands[i] < level]
        if not low:
            for i in left:
                share[i] = level
            break
        for i in low:
            share[i] = demands[i]
            cap -= demands[i]
        left = [i for i in left if i not in low]
    return share


def one_run(job):
    from metaroce.sim.scenario import run_scenario

    sc = _scenario(job["stem"], job["overrides"], job["protocol"], job["scale"])
    rtt = sc["topology"]["rtt_us"] * 1e-6
    rate = sc["topology"]["rate_gbps"] * 1e9
    bin_w = 1e-6
    flows_bins = []

    def setup(fab, info):
        key = info["flow_of"]
        flows_bins.extend({} for _ in info["flows"])

        def hook(frame, now):
            if frame.payload:
                i = key.get((frame.ip.src, frame.bth.dest_qp))
                if i is not None:
                    d = flows_bins[i]
                    b = int(now / bin_w)
                    d[b] = d.get(b, 0) + len(frame.payload)
        for h in fab.hosts:
            h.rx_hook = hook

    res = run_scenario(sc, seed=job["seed"], setup=setup)
    rows = res["flows"]
    t_a = max(r["start_s"] for r in rows) + WARMUP_RTTS * rtt
    ends = [r["start_s"] + r["fct_s"] for r in rows if r["fct_s"]]
    t_b = (min(ends) if ends else res["sim_time_s"]) - rtt
    b_a, b_b = int(t_a / bin_w), int(t_b / bin_w)
    span = (b_b - b_a) * bin_w
    mtu = 4096
    cap = payload_rate(rate, mtu) / 1e9
    trickle = [fl["repeat"] > 1 and fl["interval_us"] > 0 for fl in sc["flows"]]
    demands = [fl["size"] * 8 / (fl["interval_us"] * 1e3) if t else None
               for fl, t in zip(sc["flows"], trickle)]
    out = []
    for i, r in enumerate(rows):
        got = sum(v for b, v in flows_bins[i].items() if b_a <= b < b_b) if span > 0 else 0
        out.append({"name": r["name"], "paths": r["paths"], "gbps": got * 8 / span / 1e9 if span > 0 else 0.0})
    fair = max_min(cap, demands)
    norm = [f["gbps"] / s for f, s in zip(out, fair) if s > 0]
    trickle_got = sum(f["gbps"] for f, t in zip(out, trickle) if t)
    bulk_got = sum(f["gbps"] for f, t in zip(out, trickle) if not t)
    return {"case": job["case"], "protocol": job["protocol"], "flows": out,
            "jain": jain(norm) if span > 0 else 0.0,
            "bulk_vs_ideal": bulk_got / (cap - trickle_got) if span > 0 else 0.0,
            "fair_gbps": [round(s, 3) for s in fair], "window_us": span * 1e6,
            "scenario": job["stem"], "heldout": job["heldout"],
            "delivered_ok": bool(res["delivered_ok"] and res["all_done"]), "cpu_s": round(res["cpu_s"], 2)}


def run(args, ui):
    from metaroce.cli import CliError
    protos = [p.strip() for p in args.protocols.split(",") if p.strip()]
    if not protos or any(p not in ("metaroce", "rocev2") for p in protos):
        raise CliError("--protocols: metaroce and/or rocev2")
    if args.scale <= 0:
        raise CliError("--scale must be > 0")
    cases = [(c, False) for c in CASES] if args.set in ("main", "all") else []
    cases += [(c, True) for c in HELDOUT] if args.set in ("heldout", "all") else []
    jobs = [{"case": c, "stem": stem, "overrides": ov, "protocol": p, "seed": args.seed,
             "scale": args.scale, "heldout": ho}
            for (c, stem, ov), ho in cases for p in protos]
    rows = ui.map(one_run, jobs, label="fairness runs")
    for r in rows:
        r["rates"] = " ".join(f"{f['name']}({f['paths']}p)={f['gbps']:.1f}" for f in r["flows"])
    params = {"measurement": f"payload arrivals per flow from {WARMUP_RTTS} base RTTs after the last "
                             "start to 1 base RTT before the first completion",
              "jain": "Jain's index of rate / max-min fair share",
              "bulk_vs_ideal": "bulk flows' total / (payload capacity - trickle flows' rates)",
              "targets": "jain >= 0.95 in every case; trickle_bulk: bulk_vs_ideal >= 0.95"}
    return {"rows": rows, "title": "bench fairness", "params": params,
            "columns": ["case", "protocol", "rates", "jain", "bulk_vs_ideal", "window_us", "delivered_ok"]}
