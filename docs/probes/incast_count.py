"""The receiver's count of senders and its hint over one ``bench incast`` run (the
instrumentation behind MR-CC-026 in docs/benchmarks.md, "incast-mr-cc-026").

    .venv/bin/python docs/probes/incast_count.py SENDERS [single|fat_tree] [STAGGER_US] [BYTES] [UNTIL_RTTS]

Runs the bench's run (400 Gb/s, 10 us, buffer 2 BDP, 8 paths, seed 1; ``bench incast``'s size per
sender unless BYTES) and prints, each time it changes, the receiver's predicted count (MR-CC-010),
the previous interval's count, the current interval's count so far, the interval (base RTTs), the
hint (Mb/s), the CE fraction and the demand-limited senders; and every hint update it pushes
(MR-CC-009: ``up`` when the count fell), up to UNTIL_RTTS (default 10).
"""
import sys

from metaroce.benches import incast
from metaroce.models import endpoint as E
from metaroce.sim.harness import Flow, run_writes
from metaroce.sim.topology import Fabric

RTT, RATE = incast.RTT, incast.RATE
n = int(sys.argv[1])
topo = sys.argv[2] if len(sys.argv) > 2 else "single"
stagger = float(sys.argv[3]) if len(sys.argv) > 3 else 0.0
size = int(sys.argv[4]) if len(sys.argv) > 4 else max((64 << 20) // n, 1 << 20)
until = float(sys.argv[5]) if len(sys.argv) > 5 else 10.0
log, now_ns = [], [0]
hint_check, hint_update, share_note = E.Endpoint._hint_check, E.Endpoint._hint_update, E.Endpoint._share_note


def note_arrival(self, c, now, *a, **kw):
    now_ns[0] = now
    return share_note(self, c, now, *a, **kw)


def note_check(self, c, now):
    now_ns[0] = now
    hint_check(self, c, now)
    if len(self._conns) > 1:            # the receiver (a sender has one connection)
        st = (self._n_est, self._share_prev, len(self._share_seen), round(self._share_iv / (RTT * 1e9), 2),
              self._rate_hint(), round(self._share_ce_frac, 2), self._n_lim)
        if not log or log[-1][1] != st:
            log.append((now, st))


def note_update(self, newcomer, up=False):
    hint_update(self, newcomer, up)
    log.append((now_ns[0], ("update", "up" if up else "down", self._n_est, self._rate_hint())))


E.Endpoint._hint_check, E.Endpoint._hint_update, E.Endpoint._share_note = note_check, note_update, note_arrival
if topo == "fat_tree":
    k = 4
    while k ** 3 // 4 < n + 1:
        k += 2
    fab = Fabric(n + 1, rate_bps=RATE, rtt=RTT, seed=1, fat_tree_k=k)
else:
    fab = Fabric(n + 1, rate_bps=RATE, rtt=RTT, seed=1)
flows = [Flow(i, n, size, start=i * stagger * 1e-6, paths=8) for i in range(n)]
run_writes(fab, flows, "metaroce", cfg=incast.endpoint_cfg("metaroce"), seed=1, until=1.0, meter_bin=RTT / 4)
print("RTTs     (predicted, previous interval, this interval, interval RTTs, hint Mb/s, CE fraction, limited)")
for t, st in log:
    if t / (RTT * 1e9) > until:
        break
    print(f"{t / (RTT * 1e9):7.3f}  {st}")
