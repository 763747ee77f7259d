"""Where the CPU time of a ``bench simspeed`` run goes, by part of the simulator, by sampling
(docs/benchmarks.md, "simspeed"). ``--where`` counts bytecodes, which do not weigh C-level work
(allocation, dict and heap operations, big-int arithmetic, calls of builtins); this samples the
stack every ``INTERVAL`` of CPU time (``setitimer(ITIMER_PROF)``) and books each sample to the
same parts as ``--where``: the innermost simulator frame's class for the fabric, the endpoint's
entry point (``receive`` of a data frame or of an ACK, ``next_packet``, the idle calls) when the
host is inside its endpoint.

    .venv/bin/python docs/probes/sim_time_split.py [MODE] [PACKETS]    # default metaroce 20000

Prints the share of the samples per part and the CPU microseconds per packet it stands for.
Under load the microseconds are upper bounds; the shares are the steadier figure.
"""
import signal
import sys
import time

from metaroce.benches import simspeed

INTERVAL = 0.0005


def _part(frame):
    """The part a sample of the stack ending in ``frame`` belongs to."""
    entry = None
    fab = None
    f = frame
    while f is not None:
        code = f.f_code
        in_fabric = code.co_filename.endswith("fabric.py")
        if fab is None and in_fabric:
            fab = f
        back = f.f_back
        if (code.co_name in simspeed._ENTRY and not in_fabric and back is not None
                and back.f_code.co_filename.endswith("fabric.py")):
            entry = f           # the outermost such frame wins: keep walking
        f = back
    if entry is not None:
        name = entry.f_code.co_name
        if name == "receive":
            return "endpoint: data received" if simspeed._is_data(entry.f_locals.get("frame")) \
                else "endpoint: ACK received"
        if name == "next_packet":
            return "endpoint: next_packet (data and ACKs sent, idle polls)"
        return "endpoint: idle polls (next_wakeup, poll_cq)"
    if fab is not None:
        slf = fab.f_locals.get("self")
        return simspeed._FABRIC_PART.get(type(slf).__name__, "other")
    return "other (set-up, workload)"


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else "metaroce"
    packets = int(sys.argv[2]) if len(sys.argv) > 2 else 20000
    counts = {}

    def sample(signum, frame):
        k = _part(frame)
        counts[k] = counts.get(k, 0) + 1

    signal.signal(signal.SIGPROF, sample)
    c0 = time.process_time()
    signal.setitimer(signal.ITIMER_PROF, INTERVAL, INTERVAL)
    try:
        row = simspeed.one_run({"mode": mode, "hosts": 8, "packets": packets})
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0, 0)
    cpu = time.process_time() - c0
    inside = {k: v for k, v in counts.items() if not k.startswith("other (")}
    n = sum(inside.values())
    print(f"{mode}: {row['packets']} packets, sim.run {row['cpu_s']} CPU s "
          f"({1e6 * row['cpu_s'] / row['packets']:.1f} us/packet), {n} samples inside the run "
          f"of {sum(counts.values())} ({cpu:.2f} CPU s in all)")
    for k, v in sorted(inside.items(), key=lambda kv: -kv[1]):
        print(f"  {k:58s} {100 * v / n:5.1f} %  {1e6 * row['cpu_s'] * v / n / row['packets']:5.1f} us/packet")


if __name__ == "__main__":
    main()
