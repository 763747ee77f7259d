"""Scenario files: a fabric, a workload, faults and a protocol in one TOML file (docs/spec/scenario.md).

``run_scenario(dict_or_path, seed=None) -> dict`` is the library entry point (``metaroce sim`` and
the benchmarks call it). :func:`load_scenario` reads and checks a file; :func:`check_scenario`
checks a dict. Every problem is a :class:`ScenarioError` whose message is one line naming the file,
the key path and what is wrong (MR-SCN-001).
"""
from __future__ import annotations

import fnmatch
import math
import pathlib
import random
import time
import tomllib

import numpy as np

from metaroce.models.baselines import accepted_params, endpoint_class

from .fabric import Pfc
from .faults import Faults, GilbertElliott
from .topology import Fabric


class ScenarioError(ValueError):
    """A bad scenario: ``"FILE: KEY.PATH: what is wrong"`` (MR-SCN-001)."""


# -- schema ---------------------------------------------------------------------------------------
# A field is (type, default, check); check is None, ("range", lo, hi, lo_open) or ("choice", set).
# Types: "int", "float" (ints accepted), "bool", "str", "size" (int bytes or "64Ki"-style string),
# "list_str", "dict" (free-form, checked later).

_INF = math.inf


def _rng(lo, hi=_INF, lo_open=False):
    return ("range", lo, hi, lo_open)


def _choice(*xs):
    return ("choice", frozenset(xs))


SCHEMA = {
    "name": ("str", "", None),
    "seed": ("int", 1, _rng(0)),
    "until_us": ("float", 100_000.0, _rng(0, lo_open=True)),
    "topology": {
        "kind": ("str", "single", _choice("single", "leaf_spine", "fat_tree")),
        "hosts": ("int", 2, _rng(1, 1 << 16)),
        "planes": ("int", 1, _rng(1, 64)),
        "leaves": ("int", 2, _rng(1, 4096)),
        "spines": ("int", 2, _rng(1, 4096)),
        "k": ("int", 4, _rng(2, 64)),
        "rate_gbps": ("float", 400.0, _rng(0, lo_open=True)),
        "rtt_us": ("float", 10.0, _rng(0, lo_open=True)),
        "spine_skew_us": ("float", 0.0, _rng(0)),
    },
    "buffer": {
        "model": ("str", "static", _choice("static", "shared")),
        "port_bytes": ("size", None, _rng(1)),
        "shared_bytes": ("size", None, _rng(1)),
        "alpha": ("float", 1.0, _rng(0, lo_open=True)),
    },
    "ecn": {
        "mode": ("str", "step", _choice("step", "red", "off")),
        "threshold_bytes": ("size", None, _rng(0)),
        "kmin_bytes": ("size", None, _rng(0)),
        "kmax_bytes": ("size", None, _rng(1)),
        "pmax": ("float", 0.2, _rng(0, 1, lo_open=True)),
    },
    "pfc": {
        "enabled": ("bool", False, None),
        "xoff_bytes": ("size", None, _rng(1)),
        "xon_bytes": ("size", None, _rng(0)),
        "headroom_bytes": ("size", None, _rng(0)),
        "priorities": ("list_int", None, _rng(0, 7)),
    },
    "routing": {
        "reconverge_us": ("float", None, _rng(0)),
    },
    "switch": {
        "control_priority": ("bool", True, None),   # MR-FAB-019
    },
    "protocol": {
        "name": ("str", "metaroce", _choice("metaroce", "rocev2", "rocev2-adaptive", "rocev2-dcqcn", "irn")),
        "params": ("dict", {}, None),
    },
    "flows": [{
        "name": ("str", None, None),
        "src": ("str", None, None),
        "dst": ("str", None, None),
        "verb": ("str", "write", _choice("write", "send")),
        "size": ("size", None, _rng(1, 1 << 31)),
        "start_us": ("float", 0.0, _rng(0)),
        "streams": ("int", 1, _rng(1, 256)),
        "paths": ("int", 8, _rng(1, 256)),
        "repeat": ("int", 1, _rng(1, 100_000)),
        "interval_us": ("float", 0.0, _rng(0)),
        "count": ("int", 1, _rng(1, 100_000)),
    }],
    "faults": [{
        "links": ("list_str", None, None),
        "loss": ("float", 0.0, _rng(0, 1)),
        "direction": ("str", "data", _choice("data", "ack", "both")),
        "burst": {
            "p_gb": ("float", None, _rng(0, 1)),
            "p_bg": ("float", None, _rng(0, 1, lo_open=True)),
            "loss_good": ("float", 0.0, _rng(0, 1)),
            "loss_bad": ("float", 1.0, _rng(0, 1)),
        },
        "reorder": ("float", 0.0, _rng(0, 1)),
        "reorder_delay_us": ("float", 0.0, _rng(0)),
        "jitter_us": ("float", 0.0, _rng(0)),
        "duplicate": ("float", 0.0, _rng(0, 1)),
        "seed": ("int", None, _rng(0)),
    }],
    "failures": [{
        "link": ("str", None, None),
        "switch": ("str", None, None),
        "plane": ("int", None, _rng(0, 63)),
        "at_us": ("float", None, _rng(0)),
        "until_us": ("float", None, _rng(0)),
        "both_directions": ("bool", True, None),
    }],
}

#: Keys a list entry must have.
REQUIRED = {"flows": ("src", "dst", "size"), "faults": ("links",), "failures": ("at_us",)}
#: Sub-tables that are optional inside a list entry (absent: None).
OPTIONAL_TABLES = {"burst"}


def _parse_size(v):
    if isinstance(v, bool):
        raise ValueError
    if isinstance(v, int):
        return v
    from metaroce.commands.transfer import parse_size
    return parse_size(v)


_TYPE_NAMES = {"int": "an integer", "float": "a number", "bool": "true or false", "str": "a string",
               "size": "a size (bytes, or a string like \"64Ki\")", "list_str": "a list of strings",
               "list_int": "a list of integers", "dict": "a table"}


class _Checker:
    def __init__(self, source):
        self.source = source

    def fail(self, path, what):
        raise ScenarioError(f"{self.source}: {path or '(top level)'}: {what}")

    def value(self, path, spec, v):
        typ, _, check = spec
        if typ == "int":
            ok = isinstance(v, int) and not isinstance(v, bool)
        elif typ == "float":
            ok = isinstance(v, (int, float)) and not isinstance(v, bool)
            if ok:
                v = float(v)
                if not math.isfinite(v):
                    self.fail(path, f"{v} is not finite")
        elif typ == "bool":
            ok = isinstance(v, bool)
        elif typ == "str":
            ok = isinstance(v, str)
        elif typ == "size":
            try:
                v = _parse_size(v)
                ok = True
            except (ValueError, TypeError):
                ok = False
        elif typ == "list_str":
            ok = isinstance(v, list) and all(isinstance(x, str) for x in v)
        elif typ == "list_int":
            ok = isinstance(v, list) and all(isinstance(x, int) and not isinstance(x, bool) for x in v)
        elif typ == "dict":
            ok = isinstance(v, dict)
        else:                           # pragma: no cover - schema bug
            raise AssertionError(typ)
        if not ok:
            self.fail(path, f"expected {_TYPE_NAMES[typ]}, got {v!r}")
        if check is not None:
            items = v if typ.startswith("list_") else [v]
            for x in items:
                if check[0] == "range":
                    _, lo, hi, lo_open = check
                    if x < lo or x > hi or (lo_open and x == lo):
                        rng = f"{'(' if lo_open else '['}{lo}, {'inf)' if hi == _INF else f'{hi}]'}"
                        self.fail(path, f"{x!r} is out of range {rng}")
                elif x not in check[1]:
                    self.fail(path, f"{x!r} is not one of {', '.join(sorted(check[1]))}")
        return v

    def table(self, path, schema, data):
        if not isinstance(data, dict):
            self.fail(path, f"expected a table, got {data!r}")
        for k in data:
            if k not in schema:
                self.fail(f"{path}.{k}" if path else k,
                          f"unknown key (known: {', '.join(sorted(schema))})")
        out = {}
        for k, spec in schema.items():
            p = f"{path}.{k}" if path else k
            if isinstance(spec, dict):
                if k in data:
                    out[k] = self.table(p, spec, data[k])
                elif k in OPTIONAL_TABLES:
                    out[k] = None
                else:
                    out[k] = self.table(p, spec, {})
            elif isinstance(spec, list):
                items = data.get(k, [])
                if not isinstance(items, list):
                    self.fail(p, "expected an array of tables ([[" + k + "]])")
                out[k] = []
                for i, item in enumerate(items):
                    ip = f"{p}[{i}]"
                    if not isinstance(item, dict):
                        self.fail(ip, "expected a table")
                    for req in REQUIRED.get(k, ()):
                        if req not in item:
                            self.fail(f"{ip}.{req}", "missing required key")
                    out[k].append(self.table(ip, spec[0], item))
            elif k in data:
                out[k] = self.value(p, spec, data[k])
            else:
                out[k] = spec[1]
        return out


def check_scenario(data, source="<scenario>"):
    """Check a scenario dict against the schema; returns it with every default filled in."""
    ck = _Checker(source)
    sc = ck.table("", SCHEMA, data)
    sc["_source"] = source
    topo = sc["topology"]
    if topo["kind"] == "fat_tree":
        if topo["k"] % 2:
            ck.fail("topology.k", f"{topo['k']} is odd (a k-ary fat tree needs an even k)")
        cap = topo["k"] ** 3 // 4
        if topo["hosts"] > cap:
            ck.fail("topology.hosts", f"{topo['hosts']} hosts do not fit a k={topo['k']} fat tree (at most {cap})")
    buf = sc["buffer"]
    if buf["model"] == "shared" and buf["shared_bytes"] is None:
        ck.fail("buffer.shared_bytes", "missing (required with model = \"shared\")")
    ecn = sc["ecn"]
    if ecn["mode"] == "red":
        for key in ("kmin_bytes", "kmax_bytes"):
            if ecn[key] is None:
                ck.fail(f"ecn.{key}", "missing (required with mode = \"red\")")
        if ecn["kmin_bytes"] >= ecn["kmax_bytes"]:
            ck.fail("ecn.kmax_bytes", f"{ecn['kmax_bytes']} must be above kmin_bytes ({ecn['kmin_bytes']})")
    pfc = sc["pfc"]
    if pfc["enabled"]:
        if pfc["xoff_bytes"] is None:
            ck.fail("pfc.xoff_bytes", "missing (required when PFC is enabled)")
        if pfc["xon_bytes"] is not None and pfc["xon_bytes"] > pfc["xoff_bytes"]:
            ck.fail("pfc.xon_bytes", f"{pfc['xon_bytes']} is above xoff_bytes ({pfc['xoff_bytes']})")
    hosts = topo["hosts"]
    names = set()
    for i, fl in enumerate(sc["flows"]):
        for end in ("src", "dst"):
            _host_index(ck, f"flows[{i}].{end}", fl[end], hosts)
        if fl["src"] == fl["dst"]:
            ck.fail(f"flows[{i}].dst", f"same host as src ({fl['src']!r})")
        if fl["name"] is None:
            fl["name"] = f"f{i}"
        if fl["name"] in names:
            ck.fail(f"flows[{i}].name", f"duplicate flow name {fl['name']!r}")
        names.add(fl["name"])
    if not sc["flows"]:
        ck.fail("flows", "no flows (add at least one [[flows]] table)")
    for i, fa in enumerate(sc["faults"]):
        ge = fa["burst"]
        if ge is not None and ge["p_gb"] is None:
            ck.fail(f"faults[{i}].burst.p_gb", "missing required key")
    for i, fl in enumerate(sc["failures"]):
        if sum(fl[k] is not None for k in ("link", "switch", "plane")) != 1:
            ck.fail(f"failures[{i}]", "give exactly one of link, switch or plane")
        if fl["plane"] is not None and fl["plane"] >= topo["planes"]:
            ck.fail(f"failures[{i}].plane", f"unknown plane {fl['plane']} (planes are 0 .. {topo['planes'] - 1})")
        if fl["until_us"] is not None and fl["until_us"] <= fl["at_us"]:
            ck.fail(f"failures[{i}].until_us", f"{fl['until_us']} is not after at_us ({fl['at_us']})")
    proto = sc["protocol"]
    accepted = accepted_params(proto["name"])
    for k in proto["params"]:
        if k not in accepted:
            ck.fail(f"protocol.params.{k}", f"unknown parameter of {proto['name']} (known: {', '.join(sorted(accepted))})")
    return sc


def _host_index(ck, path, name, hosts):
    if not (name.startswith("h") and name[1:].isdigit()):
        ck.fail(path, f"unknown host {name!r} (hosts are h0 .. h{hosts - 1})")
    i = int(name[1:])
    if i >= hosts:
        ck.fail(path, f"unknown host {name!r} (hosts are h0 .. h{hosts - 1})")
    return i


def _endpoint_class(name):
    """The endpoint class of protocol ``name`` with its fixed arguments bound (MR-SCN-003)."""
    cls, fixed = endpoint_class(name)
    return lambda addr, **cfg: cls(addr, **dict(cfg, **fixed))


def load_scenario(path):
    """Read and check a TOML scenario file (MR-SCN-001)."""
    path = pathlib.Path(path)
    try:
        text = path.read_text()
    except OSError as e:
        raise ScenarioError(f"{path}: cannot read: {e.strerror or e}") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ScenarioError(f"{path}: not valid TOML: {e}") from None
    return check_scenario(data, str(path))


def shipped_scenarios():
    """Paths of the example scenarios shipped in the package (``metaroce/scenarios``)."""
    import metaroce
    base = pathlib.Path(metaroce.__file__).parent / "scenarios"
    return sorted(base.glob("*.toml"))


# -- building ---------------------------------------------------------------------------------


def build_fabric(sc, seed):
    """The :class:`Fabric` a checked scenario describes (MR-SCN-002)."""
    topo, buf, ecn, pfc = sc["topology"], sc["buffer"], sc["ecn"], sc["pfc"]
    kw = dict(planes=topo["planes"], rate_bps=topo["rate_gbps"] * 1e9, rtt=topo["rtt_us"] * 1e-6,
              spine_skew=topo["spine_skew_us"] * 1e-6, seed=seed)
    if topo["kind"] == "leaf_spine":
        kw.update(leaves=topo["leaves"], spines=topo["spines"])
    elif topo["kind"] == "fat_tree":
        kw.update(fat_tree_k=topo["k"])
    if buf["model"] == "shared":
        kw.update(shared_buffer=buf["shared_bytes"], alpha=buf["alpha"], buffer_bytes=buf["port_bytes"])
    elif buf["port_bytes"] is not None:
        kw.update(buffer_bytes=buf["port_bytes"])
    if ecn["mode"] == "red":
        kw.update(red=(ecn["kmin_bytes"], ecn["kmax_bytes"], ecn["pmax"]))
    elif ecn["mode"] == "off":
        kw.update(ecn_threshold=None)
    elif ecn["threshold_bytes"] is not None:
        kw.update(ecn_threshold=ecn["threshold_bytes"])
    if pfc["enabled"]:
        xon = pfc["xon_bytes"] if pfc["xon_bytes"] is not None else pfc["xoff_bytes"] // 2
        kw.update(pfc=Pfc(pfc["xoff_bytes"], xon, pfc["headroom_bytes"], pfc["priorities"]))
    if sc["routing"]["reconverge_us"] is not None:
        kw.update(reconverge=sc["routing"]["reconverge_us"] * 1e-6)
    fab = Fabric(topo["hosts"], control_priority=sc["switch"]["control_priority"], **kw)
    if ecn["mode"] == "off":
        for port in fab.ports.values():
            port.ecn_threshold = None
    ck = _Checker(sc["_source"])
    for i, fa in enumerate(sc["faults"]):
        names = []
        for j, pat in enumerate(fa["links"]):
            hit = [n for n in fab.links if fnmatch.fnmatchcase(n, pat)]
            if not hit:
                ck.fail(f"faults[{i}].links[{j}]", f"no link matches {pat!r} (links look like "
                        f"{_example_links(fab)})")
            names += [n for n in hit if n not in names]
        ge = fa["burst"]
        faults = Faults(loss=fa["loss"], direction=fa["direction"],
                        burst=None if ge is None else GilbertElliott(**ge),
                        reorder=fa["reorder"], reorder_delay=fa["reorder_delay_us"] * 1e-6,
                        jitter=fa["jitter_us"] * 1e-6, duplicate=fa["duplicate"],
                        seed=seed * 1000 + i if fa["seed"] is None else fa["seed"])
        fab.set_faults(faults, names)
    for i, fl in enumerate(sc["failures"]):
        at = fl["at_us"] * 1e-6
        until = None if fl["until_us"] is None else fl["until_us"] * 1e-6
        if fl["plane"] is not None:
            fab.plane_down(fl["plane"], at, until)
            continue
        if fl["switch"] is not None:
            if fl["switch"] not in fab.switches:
                ck.fail(f"failures[{i}].switch", f"unknown switch {fl['switch']!r} (switches look like "
                        f"{', '.join(list(fab.switches)[:3])})")
            fab.switch_down(fl["switch"], at, until)
            continue
        name = fl["link"]
        if name not in fab.links:
            ck.fail(f"failures[{i}].link", f"unknown link {name!r} (links look like {_example_links(fab)})")
        links = [name]
        a, _, b = name.partition(">")
        if fl["both_directions"] and f"{b}>{a}" in fab.links:
            links.append(f"{b}>{a}")
        for n in links:
            fab.link_down(n, at, until)
    return fab


def _example_links(fab):
    names = list(fab.links)
    return ", ".join(repr(n) for n in names[:1] + names[-1:])


# -- running ----------------------------------------------------------------------------------


def _status_name(code):
    from metaroce.models.endpoint import Status
    try:
        return Status(int(code)).name.lower()
    except ValueError:
        return f"status_{int(code)}"


def run_scenario(scenario, seed=None, setup=None):
    """Run a scenario (a path, or a dict as TOML would give it) and return its result dict
    (MR-SCN-003..006). ``seed`` overrides the file's ``seed``.

    ``setup(fabric, info)``, when given, is called just before the run with the built
    :class:`Fabric` (endpoints on its hosts, flows posted) and ``info = {"flows": [...],
    "flow_of": {(src addr, BTH DestQP): flow index}}``, so that a benchmark can attach its own
    taps (``rx_hook``, a port's ``drop_times`` or ``qlog``, ``Meter``...)."""
    if isinstance(scenario, (str, pathlib.Path)):
        sc = load_scenario(scenario)
    elif "_source" in scenario:
        sc = scenario
    else:
        sc = check_scenario(scenario)
    seed = sc["seed"] if seed is None else seed
    if seed < 0:
        raise ScenarioError(f"{sc['_source']}: seed: {seed} is out of range [0, inf)")
    fab = build_fabric(sc, seed)
    proto = sc["protocol"]
    kind = proto["name"]
    cls = _endpoint_class(kind)
    cfg = {"line_rate_bps": fab.rate_bps * fab.planes, "base_rtt": fab.rtt}
    cfg.update(proto["params"])
    try:
        for h in fab.hosts:
            # MR-SEC-152: R_Keys from a generator seeded by the run, so that a run repeats.
            h.ep = cls(h.addr, **cfg, rng=random.Random(f"{kind}/{h.addr}/{seed}"))
    except (TypeError, ValueError) as e:
        raise ScenarioError(f"{sc['_source']}: protocol.params: {e}") from None
    mtu = fab.hosts[0].ep.mtu
    sim = fab.sim
    rng = np.random.default_rng(seed)

    # Expand ``count`` (identical flows) into single flows.
    flows = []
    for fl in sc["flows"]:
        for c in range(fl["count"]):
            f = dict(fl)
            if fl["count"] > 1:
                f["name"] = f"{fl['name']}.{c}"
            flows.append(f)

    state = []                  # per flow: dict of buffers, counters
    qp_to_flow = {}             # (src addr, BTH DestQP) -> flow index
    next_id = 1
    for i, fl in enumerate(flows):
        s = fab.hosts[int(fl["src"][1:])]
        d = fab.hosts[int(fl["dst"][1:])]
        total = fl["size"] * fl["repeat"]
        src = bytearray(rng.bytes(total))
        dst = bytearray(total)
        lkey = s.ep.reg_mr(src)
        rkey = d.ep.reg_mr(dst)
        paths = fl["paths"] if kind == "metaroce" else 1
        cid = next_id
        next_id += fl["streams"]
        try:
            conn = s.ep.connect(cid, d.addr, cid, paths=paths, streams=fl["streams"])
            peer = d.ep.connect(cid, s.addr, cid, paths=paths, streams=fl["streams"])
        except ValueError as e:
            raise ScenarioError(f"{sc['_source']}: flows[{i}]: {e}") from None
        for q in range(cid, cid + fl["streams"]):
            qp_to_flow[(s.addr, q)] = i
        st = {"src_host": s, "dst_host": d, "src": src, "dst": dst, "conn": conn, "peer": peer,
              "lkey": lkey, "rkey": rkey, "expected": {}, "done_t": None, "errors": set(),
              "wrong": 0, "data_frames": 0, "last_t": None, "first_post": None}
        state.append(st)
        size, streams = fl["size"], fl["streams"]
        for m in range(fl["repeat"]):
            # Every message completes once at the sender; a send also at the receiver.
            st["expected"][(id(s), (i << 20) | m)] = 0
            if fl["verb"] == "send":
                wr = (1 << 40) | (i << 20) | m
                st["expected"][(id(d), wr)] = 0
                peer.post_recv(m % streams, rkey, m * size, size, wr)
    pending = [sum(len(st["expected"]) for st in state)]
    by_wr = {}
    for i, st in enumerate(state):
        for key in st["expected"]:
            by_wr[key] = i
    unexpected = [0]
    grace = [False]

    def on_completion(host, t, c):
        i = by_wr.get((id(host), c.wr_id))
        if i is None:
            unexpected[0] += 1
            return
        st = state[i]
        key = (id(host), c.wr_id)
        if grace[0] and not st["expected"][key]:
            return                      # after the time limit: too late to count as done
        st["expected"][key] += 1
        if st["expected"][key] > 1:
            st["wrong"] += 1            # completed twice
            return
        if int(c.status) != 0:
            st["errors"].add(_status_name(c.status))
        elif c.wr_id >> 40 and c.byte_len != flows[i]["size"]:
            st["wrong"] += 1
        st["last_t"] = t
        if all(v for v in st["expected"].values()):
            st["done_t"] = t
        pending[0] -= 1
        if pending[0] == 0:
            sim.stop()

    for h in fab.hosts:
        h.on_completion = on_completion

    def post(arg):
        i, m = arg
        fl, st = flows[i], state[i]
        size = fl["size"]
        if fl["verb"] == "write":
            st["conn"].post_write(m % fl["streams"], st["lkey"], m * size, size, m * size,
                                  st["rkey"], wr_id=(i << 20) | m)
        else:
            st["conn"].post_send(m % fl["streams"], st["lkey"], m * size, size, wr_id=(i << 20) | m)
        st["src_host"].kick()

    for i, fl in enumerate(flows):
        for m in range(fl["repeat"]):
            sim.at((fl["start_us"] + m * fl["interval_us"]) * 1e-6, post, (i, m))

    def tx_tap(frame, now):
        if frame.payload:
            i = qp_to_flow.get((frame.ip.src, frame.bth.dest_qp))
            if i is not None:
                state[i]["data_frames"] += 1

    for h in {st["src_host"] for st in state}:
        h.tx_hook = tx_tap

    if setup is not None:
        setup(fab, {"flows": flows, "flow_of": dict(qp_to_flow)})
    until = sc["until_us"] * 1e-6
    t0 = time.perf_counter()
    c0 = time.process_time()
    sim.run(until=until)
    wall = time.perf_counter() - t0
    cpu = time.process_time() - c0
    t_end = sim.now
    events = sim.events
    packets = sum(h.stats["tx"] for h in fab.hosts)
    # A grace period lets a duplicate completion (a bug) show up (as MR-FAB-051).
    grace[0] = True
    sim.run(until=sim.now + 4 * fab.rtt)
    return _result(sc, seed, fab, flows, state, unexpected[0], t_end, wall, cpu, events, packets, mtu)


def _result(sc, seed, fab, flows, state, unexpected, t_end, wall, cpu, events, packets, mtu):
    rows = []
    sources = {}
    for st in state:
        sources[id(st["src_host"])] = sources.get(id(st["src_host"]), 0) + 1
    for i, (fl, st) in enumerate(zip(flows, state)):
        total = fl["size"] * fl["repeat"]
        data_ok = bytes(st["dst"]) == bytes(st["src"])
        counts = st["expected"].values()
        once = all(v == 1 for v in counts)
        done = st["done_t"] is not None
        if st["errors"]:
            status = "error:" + ",".join(sorted(st["errors"]))
        elif not done:
            status = "incomplete"
        else:
            status = "success"
        start = fl["start_us"] * 1e-6
        fct = st["done_t"] - start if done else None
        min_frames = fl["repeat"] * max(1, -(-fl["size"] // mtu))
        ep_stats = st["src_host"].ep.stats
        alone = sources[id(st["src_host"])] == 1
        rows.append({
            "name": fl["name"], "src": fl["src"], "dst": fl["dst"], "verb": fl["verb"],
            "bytes": total, "messages": fl["repeat"], "streams": fl["streams"],
            "paths": fl["paths"] if sc["protocol"]["name"] == "metaroce" else 1,
            "start_s": start, "fct_s": fct,
            "goodput_gbps": (total * 8 / fct / 1e9) if fct else 0.0,
            "data_frames": st["data_frames"],
            "retransmits": max(0, st["data_frames"] - min_frames),
            "spurious": ep_stats.get("spurious_retransmits", 0) if alone else None,
            "timeouts": ep_stats.get("timeouts", 0) if alone else None,
            "status": status,
            "delivered_ok": bool(data_ok and once and status == "success" and st["wrong"] == 0),
        })
    links = []
    for name, ln in fab.links.items():
        s = ln.stats
        port = fab.ports.get(name)
        drops = port.stats["drops"] if port is not None else 0
        if not (s["frames"] or drops or s["pauses"]):
            continue
        busy = (s["bytes"] + s["frames"] * 24) * 8 / ln.rate
        links.append({
            "name": name, "utilisation": busy / t_end if t_end > 0 else 0.0,
            "frames": s["frames"], "drops": drops, "marks": port.stats["marked"] if port else 0,
            "pauses": s["pauses"], "lost": s["lost"], "down_drops": s["down_drops"],
            "peak_queue_bytes": port.stats["peak_bytes"] if port else 0,
        })
    done = [r["goodput_gbps"] for r in rows if r["fct_s"]]
    mean = sum(done) / len(done) if done else 0.0
    fairness = {
        "jain": (sum(done) ** 2 / (len(done) * sum(x * x for x in done))) if done and any(done) else 0.0,
        "min_share": min(done) / mean if mean else 0.0,
        "max_share": max(done) / mean if mean else 0.0,
        "flows": len(done),
    }
    host_stats = {}
    for h in fab.hosts:
        st = getattr(h.ep, "stats", {})
        if h.stats["tx"]:
            host_stats[h.name] = {k: st.get(k, 0) for k in ("retransmitted", "spurious_retransmits",
                                                           "timeouts", "naks_received")}
    params = dict(sc["protocol"]["params"])
    ep0 = fab.hosts[0].ep
    if hasattr(ep0, "params"):
        params = dict(ep0.params(), **params)
    return {
        "scenario": sc["name"] or pathlib.Path(str(sc["_source"])).stem,
        "source": str(sc["_source"]),
        "seed": seed,
        "protocol": {"name": sc["protocol"]["name"], "params": params},
        "sim_time_s": t_end, "wall_s": wall, "cpu_s": cpu, "events": events, "packets": packets,
        "all_done": all(r["fct_s"] is not None for r in rows),
        "delivered_ok": unexpected == 0 and all(r["delivered_ok"] for r in rows),
        "unexpected_completions": unexpected,
        "switch_drops": fab.switch_drops(), "marks": fab.marks(),
        "pauses": sum(ln.stats["pauses"] for ln in fab.links.values()),
        "route_updates": fab.route_updates - 1,
        "flows": rows, "links": links, "fairness": fairness, "hosts": host_stats,
    }
