"""Events per simulated packet of a ``bench simspeed`` run, by callback, with the event queue's
heap pushes and pops (docs/benchmarks.md, "simspeed", seventh pass). Deterministic.

    .venv/bin/python docs/probes/sim_event_count.py [MODE] [PACKETS]    # default metaroce 2000

Counts every event :meth:`Sim.run` runs by its callback's class and name, and every push and
pop of the heap of event times (a new distinct time costs one push and one pop; an event at a
time already queued only appends to that time's bucket).
"""
import heapq
import sys

import metaroce.sim.fabric as fabric
from metaroce.benches import simspeed


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else "metaroce"
    packets = int(sys.argv[2]) if len(sys.argv) > 2 else 2000
    counts = {"push": 0, "pop": 0}
    by_fn = {}
    push, pop = heapq.heappush, heapq.heappop

    def counting_push(h, t):
        counts["push"] += 1
        push(h, t)

    def counting_pop(h):
        counts["pop"] += 1
        return pop(h)

    def name(fn):
        s = getattr(fn, "__self__", None)
        return f"{type(s).__name__}.{fn.__name__}" if s is not None else getattr(fn, "__qualname__", repr(fn))

    class Counted(list):
        """A bucket that books each event as the loop iterates it."""

        def __iter__(self):
            for fn, arg in list.__iter__(self):
                k = name(fn)
                by_fn[k] = by_fn.get(k, 0) + 1
                yield fn, arg

    class Buckets(dict):
        def pop(self, t, *d):
            b = dict.pop(self, t, *d)
            return Counted(b) if isinstance(b, list) else b

    fabric.heappush = counting_push
    heapq.heappush = counting_push
    heapq.heappop = counting_pop
    init = fabric.Sim.__init__

    def sim_init(self):
        init(self)
        self._b = Buckets()
    fabric.Sim.__init__ = sim_init
    row = simspeed.one_run({"mode": mode, "hosts": 8, "packets": packets})
    heapq.heappush, heapq.heappop = push, pop
    n = row["packets"]
    ev = sum(by_fn.values())
    print(f"{mode}: {n} packets, {row['events']} events ({row['events'] / n:.3f} per packet), "
          f"heap pushes {counts['push'] / n:.3f} and pops {counts['pop'] / n:.3f} per packet")
    for k, v in sorted(by_fn.items(), key=lambda kv: -kv[1]):
        print(f"  {k:40s} {v / n:7.3f} per packet  ({100 * v / ev:5.1f} %)")


if __name__ == "__main__":
    main()
