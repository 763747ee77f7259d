"""Trace one single-switch incast run: drops, the receiver port's queue and the senders' aggregate
sending rate over time (the instrumentation behind MR-CC-020 in docs/benchmarks.md, "incast").

    .venv/bin/python docs/probes/incast_trace.py SENDERS BYTES_PER_SENDER [--no-release] [--rate-form] [--seed S]

``--no-release`` disables the blind release of MR-CC-016; ``--rate-form`` restores the pacing of
MR-CC-015 before MR-CC-020 (the gap stretched by the sample / 1.5 base RTTs, uncapped). The run
is the one of ``bench incast`` (400 Gb/s, 10 us, buffer 2 BDP, 8 paths, seed 1) with the given
size per sender (seed 1 unless ``--seed``); it is deterministic.
"""
import argparse

import numpy as np

from metaroce.benches import incast
from metaroce.models import protocol as P
from metaroce.sim.harness import Flow, run_writes
from metaroce.sim.topology import Fabric

RTT = incast.RTT


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("senders", type=int)
    ap.add_argument("bytes", type=int)
    ap.add_argument("--no-release", action="store_true")
    ap.add_argument("--rate-form", action="store_true")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    if a.no_release:
        P.blind_release_ns = lambda t_first_ns, wire_bytes, rate_mbps: 0
    if a.rate_form:
        from metaroce.models.endpoint import Connection

        def rate_form_gap(self, wire_bytes):       # models/endpoint.py before MR-CC-020
            mbps = max(1, int(self.rate_bps // 1e6))
            base, rtt = self.ep._base_rtt_ns, self.rtt_last
            if self.rate_bps < self.ep.line_rate_bps and 2 * rtt > 3 * base:
                mbps = max(P.MIN_RATE_MBPS, mbps * 3 * base // (2 * rtt))
            return P.pacing_gap_ns(wire_bytes, mbps)
        Connection._gap = rate_form_gap
    n = a.senders
    fab = Fabric(n + 1, rate_bps=incast.RATE, rtt=RTT, seed=a.seed)
    (port,) = [pt for name, pt in fab.ports.items() if name.endswith(f">h{n}")]
    port.drop_times, port.qlog = [], []
    sends = []
    for h in fab.hosts[:n]:
        h.tx_hook = lambda frame, now: sends.append(now) if frame.payload else None
    flows = [Flow(i, n, a.bytes, start=0, paths=8) for i in range(n)]
    res = run_writes(fab, flows, "metaroce", cfg=incast.endpoint_cfg("metaroce"), seed=a.seed, until=1.0,
                     meter_bin=RTT / 4)
    t_first = min(r.t_done for r in res.flows if r.t_done is not None)
    fair = incast.payload_rate(incast.RATE, incast.MTU) / n
    t_conv, _, lo, hi = incast.analyse(res.meter, n, 0.0, t_first, fair, RTT / 4)
    print(f"converge_rtts {None if t_conv is None else t_conv / RTT}  drops {port.stats['drops']}  "
          f"first completion at {t_first / RTT:.1f} RTTs  min/max share {lo and round(lo, 3)} "
          f"{hi and round(hi, 3)}")
    edges = [0, 1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 1 << 20]
    hist = np.histogram(np.array(port.drop_times) / RTT, bins=edges)[0]
    print("drops from RTT:", "  ".join(f"{e}: {c}" for e, c in zip(edges, hist) if c))
    t = np.array(sends) / RTT
    q = np.array(port.qlog)
    end = int(t_first / RTT)
    print("RTTs      data frames sent per RTT (mean, std, min, max)   peak queue KB")
    for lo, hi in [(10, 20), (20, 60), (60, 100), (100, 150), (150, 250), (250, 400), (400, 600)]:
        if hi > end:
            break
        c = np.bincount(np.floor(t[(t >= lo) & (t < hi)] - lo).astype(int), minlength=hi - lo)
        m = (q[:, 0] >= lo * RTT) & (q[:, 0] < hi * RTT)
        print(f"{lo:4d}-{hi:<4d}  {c.mean():6.1f} {c.std():6.1f} {c.min():5d} {c.max():5d}"
              f"   {q[m, 1].max() / 1024 if m.any() else 0:8.0f}")


if __name__ == "__main__":
    main()
