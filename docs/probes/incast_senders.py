"""Per-sender timeline of one ``bench incast`` run (the instrumentation behind MR-CC-027 in
docs/benchmarks.md, "incast-mr-cc-027"): the receiver port's queue per half RTT, its drops, the
timeouts, the receiver's pulls (MR-CC-027) and the first and second arrival of every sender by
RTT, and for the senders named, their ACKs (time, path, hint, cum PSN), pacing gaps (last send,
gap, hint, latest RTT sample) and timeouts, all in base RTTs.

    .venv/bin/python docs/probes/incast_senders.py SENDERS single|fat_tree STAGGER_US BYTES [S1,S2,...]

EP (environment) sets endpoint options (``EP=lost_first_turn=1``), SEED the seed (default 1); NLOG bounds the events printed
per sender (default 40). 400 Gb/s, 10 us,
buffer 2 BDP, 8 paths, as the bench.
"""

import sys, numpy as np
from metaroce.benches import incast
from metaroce.sim.harness import Flow, run_writes
from metaroce.models import endpoint as E
RTT, RATE, MTU = incast.RTT, incast.RATE, incast.MTU
n = int(sys.argv[1]); topo = sys.argv[2]; stagger = float(sys.argv[3]); size = int(sys.argv[4])
watch = [int(x) for x in sys.argv[5].split(",") if x] if len(sys.argv) > 5 else []
SEED = int(__import__("os").environ.get("SEED", "1"))    # the bench's --seed
fab, port = incast.fabric(n, topo, SEED)
port.qlog = []
log = {}
og = E.Connection._gap
def gap(self, wl):
    g = og(self, wl)
    if self.local_id - 1 in watch:
        log.setdefault(self.local_id - 1, []).append(("gap", round(self.last_tx / 1e4, 2), round(g / 1e4, 2), int(self.rate_bps // 1e6), round(self.rtt_last / 1e4, 2)))
    return g
E.Connection._gap = gap
oto = E.Connection._on_timeout
TO=[]
def to(self, p, now):
    TO.append(now)
    if self.local_id - 1 in watch:
        log.setdefault(self.local_id - 1, []).append(("TIMEOUT", round(now / 1e4, 2), p.idx))
    return oto(self, p, now)
E.Connection._on_timeout = to
oack = E.Connection._on_ack
def ack(self, a, now, bth_psn=0):
    if self.local_id - 1 in watch:
        log.setdefault(self.local_id - 1, []).append(("ack", round(now / 1e4, 2), a.path, a.rate_mbps, a.cum_psn))
    return oack(self, a, now, bth_psn)
E.Connection._on_ack = ack
PULLS=[]
opn = E.Endpoint._pull_next
def pn(self, now):
    PULLS.append(now)
    return opn(self, now)
E.Endpoint._pull_next = pn
flows = [Flow(i, n, size, start=i * stagger * 1e-6, paths=8) for i in range(n)]
cfg = dict(incast.endpoint_cfg("metaroce"))
for kv in filter(None, __import__("os").environ.get("EP", "").split(",")):
    cfg[kv.split("=")[0]] = int(kv.split("=")[1])     # EP="lost_first_turn=1": endpoint options
bin_w = RTT / 4
res = run_writes(fab, flows, "metaroce", cfg=cfg, seed=SEED, until=1.0, meter_bin=bin_w)
t_last = max(f.start for f in flows)
t_first = min(r.t_done for r in res.flows if r.t_done is not None)
fair = incast.payload_rate(RATE, MTU) / n
t_conv, j, lo, hi = incast.analyse(res.meter, n, t_last, t_first, fair, bin_w)
print("conv", (t_conv - t_last) / RTT, "drops", port.stats["drops"], "t_first", t_first / RTT, "stats", {k: v for k, v in res.stats.items() if k in ("timeouts", "gap_losses", "hint_updates", "retransmitted", "spurious_retransmits", "first_window_pulls", "first_window_resends")})
q = port.qlog
for t in np.arange(0, 16, 0.5):
    vals = [b for (tt, b) in q if t * RTT <= tt < (t + 0.5) * RTT]
    print(f"t={t:5.1f} q_max={max(vals) / 1e3 if vals else 0:7.1f}KB n={len(vals)}")
print("drop times", [round(t / RTT, 2) for t in port.drop_times][:60])
for s in watch:
    bins = sorted(res.meter.bins[s].items())
    print("sender", s, "arrivals (RTT)", [round(b / 4, 2) for b, v in bins if b / 4 < 20])
    for e in log.get(s, [])[:int(__import__("os").environ.get("NLOG", "40"))]:
        print("   ", e)

import collections
print("timeouts by RTT", sorted(collections.Counter(int(t/1e4) for t in TO).items()))
fa = collections.Counter(); sa = collections.Counter()
for s_ in range(n):
    bs = sorted(b for b, v in res.meter.bins[s_].items() if v)
    if bs: fa[int(bs[0]/4)] += 1
    if len(bs) > 1: sa[int(bs[1]/4)] += 1
print("first arrival by RTT", sorted(fa.items()))
print("second arrival by RTT", sorted(sa.items()))

print("pulls by RTT", sorted(collections.Counter(int(t/1e4) for t in PULLS).items()))
