"""Where a whole-engine run's goodput goes (docs/hw/engine-results.md, branch eng13): the engine
as its cycle model (``EngineModel``; the RTL equals it, 0 lockstep mismatches) in a two-engine
run (MR-ENG-138) or against the reference endpoint (MR-ENG-139), next to the reference
endpoints with the run's own writes both ways (``cosim_engine.run_reference_pair``).

    .venv/bin/python docs/hw/probes/engine_goodput.py writes peer --bytes 1048576
    .venv/bin/python docs/hw/probes/engine_goodput.py writes endpoint --direction rx --back 0
    .venv/bin/python docs/hw/probes/engine_goodput.py writes peer --mac store-and-forward --chunk-window 16
    .venv/bin/python docs/hw/probes/engine_goodput.py writes peer --reference-only --bytes 16777216

``--reference-only --mtu-log2 N`` runs the reference endpoints at another MTU (the engine's TX
half has 1,024 only). One line of JSON.
"""
import argparse
import json
import time

from metaroce.models import cosim, cosim_engine, cosim_tx


def run_arguments():
    """The arguments that name a run (scenario, kind, direction, size, back, loss, seed); shared
    with ``engine_trace.py``."""
    p = argparse.ArgumentParser()
    p.add_argument("scenario", choices=sorted(cosim.SCENARIOS))
    p.add_argument("kind", choices=("peer", "endpoint"))
    p.add_argument("--direction", choices=("rx", "tx"), default="rx")
    p.add_argument("--bytes", type=int, default=1 << 20)
    p.add_argument("--back", type=int, default=None)
    p.add_argument("--loss", type=float, default=0.01)
    p.add_argument("--seed", type=int, default=1)
    return p


def main():
    p = run_arguments()
    p.add_argument("--mac", choices=("cut-through", "store-and-forward"), default="cut-through")
    p.add_argument("--chunk-window", type=int, default=None)
    p.add_argument("--reference-only", action="store_true")
    p.add_argument("--mtu-log2", type=int, default=None)
    a = p.parse_args()
    cfg = cosim.Config(**{**cosim.SCENARIOS[a.scenario][0], **cosim_tx.TX_CONFIG, "n_conns": 1,
                          "back": a.back, "nbytes": a.bytes, "loss": a.loss, "seed": a.seed,
                          "mac_cut_through": a.mac == "cut-through", "chunk_window": a.chunk_window})
    out = {"scenario": a.scenario, "kind": a.kind, "direction": a.direction, "bytes": a.bytes,
           "back": a.back, "mac": a.mac, "chunk_window": cosim_engine.engine_chunk_window(cfg)}
    t0 = time.time()
    if not a.reference_only:
        r = (cosim_engine.run_peer_model(cfg, pair=True) if a.kind == "peer"
             else cosim_engine.run_endpoint_model(cfg, a.direction))
        out.update({"ok": r["ok"], "goodput_vs_limit": r["goodput_vs_limit"], "cycles": r["cycles"]})
    writes, back = cosim_engine.reference_writes(cfg, a.kind, a.direction)
    if a.mtu_log2 is not None:
        cfg.mtu_log2 = a.mtu_log2
        cfg.validate()
        cosim_engine.check_config = lambda c: c.validate()      # the endpoints take any MTU
        out["mtu"] = 1 << a.mtu_log2
    ref = cosim_engine.run_reference_pair(cfg, writes, back)
    out.update({"reference_same_writes": ref["goodput_vs_limit"],
                "stream_bytes_h0": [sum(n for s, _, n in writes if s == k) for k in (0, 1)],
                "wall_s": round(time.time() - t0)})
    print(json.dumps(out))


if __name__ == "__main__":
    main()
