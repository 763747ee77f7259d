"""Frame-trace digests of simulator runs: a change that should leave results bit for bit the same
(a speed-up of the fabric or the endpoint) must leave every digest unchanged
(docs/benchmarks.md, "simspeed").

    .venv/bin/python docs/probes/sim_trace_digest.py [RUN ...]     # default: every run below

A run is a shipped scenario's name (``metaroce sim --list``), ``writes:KIND:HOSTS:PACKETS``
(``bench simspeed``'s workload: KIND metaroce or rocev2, PACKETS per sender) or one of the
``custom:`` runs (every fault kind, pcap capture, ``Host.wire_bytes``, the connection handshake,
shared buffer with RED). Each digest covers every frame a host sends and every frame delivered to
a host (time, host, every header field, a hash of the payload), every link, port, switch, host and
endpoint counter, every completion with its time, and the run's result without its timing.

Masked, as they are random by design: R_Keys in scenario runs (drawn from ``secrets``), the
payloads of handshake (MRCH) and sealed (MRSEC) frames. To compare against another commit, run
this file with that commit's tree first on the path (``git archive C | tar -x -C DIR``, then a
``DIR/pkg/metaroce`` holding ``DIR/metaroce`` with ``hdl``, ``models``, ``sim``, ``tb`` linked in,
and ``PYTHONPATH=DIR/pkg``).
"""
import hashlib
import json
import os
import pathlib
import sys

import metaroce
import metaroce.sim.fabric as fabric
import metaroce.sim.topology as topology

CUSTOM = ["faults", "faults_rocev2", "pcap", "wirebytes", "wirebytes_rocev2", "handshake",
          "red_shared", "red_shared_rocev2"]
SCENARIOS = pathlib.Path(metaroce.__file__).parent / "scenarios"

_fabs = []
_state = {"hash": None, "frames": 0, "scenario": False}
_init = topology.Fabric.__init__
_run = fabric.Sim.run


def _fabric_init(self, *a, **k):
    _init(self, *a, **k)
    _fabs.append(self)


def rec(x):
    """A canonical text of a value: records by their public fields (and ``_wl``), bytes by hash."""
    if x is None or isinstance(x, (int, float, str, bool)):
        return repr(x)
    if isinstance(x, (bytes, bytearray, memoryview)):
        return "b:" + hashlib.sha1(bytes(x)).hexdigest()
    if isinstance(x, (list, tuple)):
        return "[" + ",".join(rec(v) for v in x) + "]"
    if isinstance(x, dict):
        return "{" + ",".join(f"{k}:{rec(v)}" for k, v in sorted(x.items(), key=lambda kv: str(kv[0]))) + "}"
    d = getattr(x, "__dict__", None)
    if d is None:
        return repr(x)
    sealed = d.get("mrch") is not None or d.get("mrsec") is not None

    def field(k, v):
        if (k == "rkey" and _state["scenario"]) or (k == "payload" and sealed):
            return "X"
        return rec(v)
    return type(x).__name__ + "(" + ",".join(f"{k}={field(k, v)}" for k, v in sorted(d.items())
                                              if not k.startswith("_") or k == "_wl") + ")"


def _note(line):
    _state["hash"].update(line.encode() + b"\n")


def _sim_run(self, *a, **k):
    if not getattr(self, "_traced", False):
        self._traced = True
        for fab in _fabs:
            if fab.sim is not self:
                continue
            for h in fab.hosts:
                def tx(frame, now, _h=h.name):
                    _state["frames"] += 1
                    _note(f"T {now!r} {_h} {rec(frame)}")
                prev = h.rx_hook

                def rx(frame, now, _h=h.name, _prev=prev):
                    _state["frames"] += 1
                    _note(f"R {now!r} {_h} {rec(frame)}")
                    if _prev is not None:
                        _prev(frame, now)
                h.tx_hook, h.rx_hook = tx, rx
    return _run(self, *a, **k)


def _counters():
    for fab in _fabs:
        for n, ln in sorted(fab.links.items()):
            _note(f"L {n} {rec(ln.stats)}")
        for n, p in sorted(fab.ports.items()):
            _note(f"P {n} {rec(p.stats)} q={p.qbytes}")
        for n, sw in sorted(fab.switches.items()):
            _note(f"S {n} {rec(sw.stats)}")
        for h in fab.hosts:
            _note(f"H {h.name} {rec(h.stats)} {rec(h.completions)}")
            ep = getattr(h.ep, "ep", h.ep)          # a HandshakeHost wraps the endpoint
            _note(f"E {h.name} {rec(getattr(ep, 'stats', None))}")
        _note(f"SIM now={fab.sim.now!r} events={fab.sim.events}")


def _untimed(x):
    if isinstance(x, dict):
        return {k: _untimed(v) for k, v in x.items()
                if k not in ("source", "wall_s", "cpu_s") and not k.endswith("_per_s")}
    if isinstance(x, list):
        return [_untimed(v) for v in x]
    return x


def _custom(kind):
    import tempfile

    from metaroce.benches._common import endpoint_cfg
    from metaroce.sim.faults import Faults, GilbertElliott
    from metaroce.sim.harness import Flow, run_writes
    proto = "rocev2" if kind.endswith("_rocev2") else "metaroce"
    kw = {}
    if kind.startswith("red_shared"):
        kw = dict(shared_buffer=600_000, alpha=1.0, red=(20_000, 200_000, 0.2))
    fab = topology.Fabric(6, leaves=2, spines=3, rate_bps=100e9, rtt=8e-6, spine_skew=0.3e-6, **kw)
    pcap = None
    if kind.startswith("faults"):
        fab.set_faults(Faults(loss=0.01, reorder=0.05, reorder_delay=5e-6, jitter=0.5e-6, duplicate=0.01,
                              corrupt=0.005, seed=3, direction="both"))
        fab.set_faults(Faults(burst=GilbertElliott(0.01, 0.3), seed=4, direction="data"),
                       links=["p0.leaf1>p0.spine2"])
    if kind == "pcap":
        fd, pcap = tempfile.mkstemp(suffix=".pcap")
        os.close(fd)
        fab.set_faults(Faults(loss=0.01, corrupt=0.01, seed=5, direction="both"), links=["p0.spine0>p0.leaf1"])
        fab.capture("p0.spine0>p0.leaf1", pcap)
    if kind.startswith("wirebytes"):
        for h in fab.hosts:
            h.wire_bytes = True
        fab.set_faults(Faults(loss=0.02, seed=6, direction="both"))
    if kind.startswith("red_shared"):
        flows = [Flow(i, 5, 1 << 20, paths=4) for i in range(5)]
    else:
        flows = [Flow(0, 1, 2 << 20, paths=6), Flow(2, 3, 1 << 20, start=20e-6), Flow(4, 1, 1 << 20, start=5e-6)]
    res = run_writes(fab, flows, proto, cfg=endpoint_cfg(proto, 100e9, 8e-6), until=0.2,
                     handshake={} if kind == "handshake" else None)
    out = {"flows": [(r.t_done, r.completions, r.ok_status, r.data_ok) for r in res.flows],
           "packets": res.packets, "events": res.events, "stats": res.stats, "sim_time": res.sim_time}
    if pcap:
        fab.close()
        out["pcap"] = hashlib.sha256(pathlib.Path(pcap).read_bytes()).hexdigest()
        os.unlink(pcap)
    return out


def digest(name):
    """``(frames traced, digest)`` of one run."""
    _fabs.clear()
    _state.update(hash=hashlib.sha256(), frames=0, scenario=":" not in name)
    if name.startswith("custom:"):
        result = _custom(name.split(":", 1)[1])
    elif name.startswith("writes:"):
        from metaroce.benches._common import endpoint_cfg
        from metaroce.sim.harness import Flow, run_writes
        _, kind, hosts, packets = name.split(":")
        fab = topology.Fabric(int(hosts), leaves=2, spines=4, rate_bps=400e9, rtt=10e-6)
        flows = [Flow(i, i + 1, int(packets) * 4096, paths=8) for i in range(0, int(hosts) - 1, 2)]
        res = run_writes(fab, flows, kind, cfg=endpoint_cfg(kind, 400e9, 10e-6), until=1.0)
        result = {"flows": [(r.t_done, r.completions, r.ok_status, r.data_ok) for r in res.flows],
                  "packets": res.packets, "events": res.events, "stats": res.stats}
    else:
        from metaroce.sim.scenario import run_scenario
        result = _untimed(run_scenario(str(SCENARIOS / f"{name}.toml")))
    _counters()
    _note(json.dumps(result, sort_keys=True, default=repr))
    return _state["frames"], _state["hash"].hexdigest()


def main():
    topology.Fabric.__init__ = _fabric_init
    fabric.Sim.run = _sim_run
    names = sys.argv[1:] or ([p.stem for p in sorted(SCENARIOS.glob("*.toml"))]
                             + ["writes:metaroce:8:300", "writes:rocev2:8:300", "writes:metaroce:8:2000"]
                             + [f"custom:{k}" for k in CUSTOM])
    for name in names:
        frames, d = digest(name)
        print(f"{name} frames={frames} digest={d}", flush=True)


if __name__ == "__main__":
    main()
