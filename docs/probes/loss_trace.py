"""Where a lossy write's time goes: the sender's idle spans and its first RTTs, for one seed of
``bench loss`` (single switch, i.i.d. loss on every frame, 64 MiB; docs/benchmarks.md, "loss").

    .venv/bin/python docs/probes/loss_trace.py SEED [LOSS]

Prints the FCT in base RTTs, every idle span of the sender's link longer than half a base RTT
(the initial timer of MR-CC-014 shows as 4.2 RTTs), the data frames sent in each of the first 8
RTTs (slow start, MR-CC-008) and the idle time between frames in the middle of the write.
"""
import sys

import numpy as np

from metaroce.benches import loss
from metaroce.sim.scenario import run_scenario

RTT = 10e-6


def main():
    seed = int(sys.argv[1])
    rate = float(sys.argv[2]) if len(sys.argv) > 2 else 0.1
    sc = loss.build({"protocol": "metaroce", "topology": "single", "loss": rate, "direction": "both",
                     "pattern": "iid", "seed": seed, "nbytes": 64 << 20, "until_us": 50000.0})
    sends = []

    def setup(fab, info):
        fab.hosts[0].tx_hook = lambda frame, now: sends.append(now) if frame.payload else None
    res = run_scenario(sc, setup=setup)
    fct = res["flows"][0]["fct_s"]
    t = np.array(sends)
    gaps = np.diff(t)
    idle = np.nonzero(gaps > 0.5 * RTT)[0]
    print(f"seed {seed}: FCT {fct / RTT:.1f} RTTs, {len(t)} data frames, idle spans over half an RTT "
          f"{gaps[idle].sum() / RTT:.2f} RTTs")
    for i in idle:
        print(f"  idle from {t[i] / RTT:7.2f} for {gaps[i] / RTT:.2f} RTTs (after frame {i} of {len(t)})")
    print("  frames sent in each of the first 8 RTTs:", np.bincount((t / RTT).astype(int))[:8].tolist())
    frame_time = (4096 + 114) * 8 / 400e9
    mid = gaps[(t[1:] > 10 * RTT) & (t[1:] < t[-1] - 5 * RTT)]
    print(f"  from 10 RTTs to 5 RTTs before the end: idle between frames {(mid - frame_time)[mid > 1.01 * frame_time].sum() / RTT:.2f} RTTs")


if __name__ == "__main__":
    main()
