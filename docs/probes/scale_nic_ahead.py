"""Where the 8-plane run of ``bench scale`` loses its time: a sender host's NIC ports, and how the
depth of each port's transmit FIFO (``sim.fabric.NIC_TX_FIFO_FRAMES``, MR-FAB-021: frames a port
holds behind the one it sends; the host's transmit engine stalls when a frame finds its own port's
FIFO full) changes the goodput (docs/benchmarks.md, "scale").

    .venv/bin/python docs/probes/scale_nic_ahead.py PLANES [FIFO_FRAMES]

Prints the goodput of ``bench scale``'s run (4,000 connections x 64 KiB, 4 host pairs, seed 1)
and, for sender host 0, the fraction of the run in which every port was busy, some port was free
while the host had nothing to send, and some port was free while the host's transmit engine was
stalled by another port's full FIFO.
"""
import sys

from metaroce.benches._common import endpoint_cfg
from metaroce.sim import fabric as FB
from metaroce.sim.harness import Flow, run_writes
from metaroce.sim.topology import Fabric

RATE, RTT = 400e9, 10e-6


def main():
    planes = int(sys.argv[1])
    if len(sys.argv) > 2:
        FB.NIC_TX_FIFO_FRAMES = int(sys.argv[2])
    pairs, conns, nbytes = 4, 4000, 65536
    fab = Fabric(2 * pairs, planes=planes, leaves=2, spines=pairs, rate_bps=RATE, rtt=RTT, seed=1)
    per = -(-conns // pairs)
    flows = [Flow(2 * (c // per), 2 * (c // per) + 1, nbytes, paths=8) for c in range(conns)]
    h0 = fab.hosts[0]
    span = {"all ports busy": 0.0, "a port free, nothing to send": 0.0,
            "a port free, engine stalled by a full FIFO": 0.0}
    state = {"t": 0.0, "now": None}
    pump = FB.Host.pump

    def traced(self):
        pump(self)
        if self is h0:
            now = self.sim.now
            if state["now"] is not None:
                span[state["now"]] += now - state["t"]
            state["t"] = now
            if self._free == 0:
                state["now"] = "all ports busy"
            elif self._stalled is not None:
                state["now"] = "a port free, engine stalled by a full FIFO"
            else:
                state["now"] = "a port free, nothing to send"
    FB.Host.pump = traced
    res = run_writes(fab, flows, "metaroce", cfg=endpoint_cfg("metaroce", RATE, RTT, planes), seed=1,
                     until=1.0)
    t = max((r.t_done or 0) for r in res.flows)
    print(f"planes {planes}, FIFO {FB.NIC_TX_FIFO_FRAMES} frames per port: {conns * nbytes * 8 / t / 1e9:,.0f} Gb/s, "
          f"last completion {t / RTT:.2f} RTTs, delivered_ok {res.delivered_ok and res.all_done}")
    for k, v in span.items():
        print(f"  host 0: {k}: {v / t:.3f} of the run")
    busy = [(ln.stats["bytes"] + ln.stats["frames"] * FB.FRAME_OVERHEAD) * 8 / ln.rate / t
            for name, ln in fab.links.items() if name.startswith("h0>")]
    print(f"  host 0's ports busy: {min(busy):.3f} .. {max(busy):.3f} of the run")


if __name__ == "__main__":
    main()
