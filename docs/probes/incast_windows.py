"""Which senders fail which convergence window of one ``bench incast`` run, and when (the
instrumentation behind MR-CC-023..025 in docs/benchmarks.md, "incast-announce").

    .venv/bin/python docs/probes/incast_windows.py SENDERS [single|fat_tree] [ANNOUNCE 1|0] [STAGGER_US] [BYTES]

Runs the bench's run (400 Gb/s, 10 us, buffer 2 BDP, 8 paths, seed SEED) with the endpoint's
``announce`` on or off and prints the convergence time, the receiver port's drops, and for each
window length of :func:`metaroce.benches.incast.analyse` the last window start that fails, with
up to five failing senders, their packets in it and the packets due. Environment: ``EP`` sets
endpoint options (``EP=ack_phase=0``), ``FAB`` the fabric's (``FAB=control_priority=0``), ``SEED`` the seed (default 1).
"""
import sys, numpy as np
from metaroce.benches import incast
from metaroce.sim.harness import Flow, run_writes
RTT, RATE, MTU = incast.RTT, incast.RATE, incast.MTU
n = int(sys.argv[1]); topo = sys.argv[2] if len(sys.argv) > 2 else "single"
ann = (sys.argv[3] != "0") if len(sys.argv) > 3 else True
stagger = float(sys.argv[4]) if len(sys.argv) > 4 else 0.0
size = max((64 << 20) // n, 1 << 20) if len(sys.argv) <= 5 else int(sys.argv[5])
SEED = int(__import__("os").environ.get("SEED", "1"))    # the bench's --seed
fab, port = incast.fabric(n, topo, SEED, **{kv.split("=")[0]: int(kv.split("=")[1]) for kv in
                                      filter(None, __import__("os").environ.get("FAB", "").split(","))})
flows = [Flow(i, n, size, start=i * stagger * 1e-6, paths=8) for i in range(n)]
cfg = dict(incast.endpoint_cfg("metaroce")); cfg["announce"] = ann
# EP="ack_phase=0,pull_first_lost=1": endpoint options; FAB="control_priority=0": fabric's
for kv in filter(None, __import__("os").environ.get("EP", "").split(",")):
    k, v = kv.split("="); cfg[k] = int(v)
bin_w = RTT / 4
res = run_writes(fab, flows, "metaroce", cfg=cfg, seed=SEED, until=1.0, meter_bin=bin_w)
t_last = max(f.start for f in flows)
done = [r.t_done for r in res.flows if r.t_done is not None]
t_first = min(done)
fair = incast.payload_rate(RATE, MTU) / n
t_conv, j, lo, hi = incast.analyse(res.meter, n, t_last, t_first, fair, bin_w)
print("conv", (t_conv - t_last) / RTT, "drops", port.stats["drops"], "drop times (RTT)", [round(t / RTT, 2) for t in port.drop_times][:40])
print("stats", {k: v for k, v in res.stats.items() if "announce" in k or k in ("timeouts", "gap_losses", "hint_updates", "retransmitted", "first_window_pulls", "first_window_resends", "spurious_retransmits")})
b0 = int(round(t_last / bin_w)); b_end = int((t_first - RTT) / bin_w); nbin = b_end - b0
a = np.zeros((n, nbin))
for f in range(n):
    for b, v in res.meter.bins[f].items():
        if b0 <= b < b_end: a[f, b - b0] = v
cum = np.concatenate([np.zeros((n, 1)), np.cumsum(a, axis=1)], axis=1)
per_bin = fair / 8 * bin_w
last = {}
for L in incast.WINDOWS_RTTS:
    nb = int(round(L * RTT / bin_w))
    if nb > nbin: break
    got = cum[:, nb:] - cum[:, :-nb]; want = per_bin * nb
    fail = np.abs(got - want) > 0.1 * want + MTU
    for s in range(nbin - nb + 1):
        if fail[:, s].any():
            last[L] = (s, np.nonzero(fail[:, s])[0][:5].tolist(), (got[fail[:, s], s] / MTU)[:5].round(1).tolist(), round(want / MTU, 2))
for L, (s, who, got, want) in sorted(last.items()):
    print(f"L={L}: last failing start {s * bin_w / RTT:.2f} RTT senders {who} got {got} pkts want {want}")
# pkts per RTT per sender, first 12 RTTs, for senders failing
