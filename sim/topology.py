"""Topologies for the fabric simulator (docs/spec/fabric.md, "Topologies").

:class:`Fabric` builds ``planes`` identical, independent planes. Each plane is either one switch
(``spines=0``: every host on it; two hosts through one switch, or N senders to one receiver) or a
two-tier leaf-spine (``leaves`` leaf switches, ``spines`` spine switches, every leaf linked to every
spine, host ``i`` on leaf ``i % leaves``), where traffic between leaves is spread by ECMP over the
spines, so the path's entropy decides its route. Every host has one NIC port per plane
(MR-FAB-020). Links in a plane have the same rate; ``rtt`` is the base round-trip time (propagation
only) of the longest host-to-host path, split evenly over its hops; ``spine_skew`` adds
``k * spine_skew`` seconds to both links of spine ``k`` (unequal path delays, so that sprayed
packets arrive out of order across paths while each path stays in order).

Link names: ``h3>p0.leaf1`` (host 3's NIC port on plane 0), ``p0.leaf1>h3``,
``p0.leaf0>p0.spine2``, ``p0.spine2>p0.leaf0``; a single-switch plane's switch is ``p0.leaf0``.
"""
from __future__ import annotations

from .fabric import Host, Link, OutPort, Sim, Switch


def host_addr(i):
    """IPv4 address of host ``i``: 10.0.0.1, 10.0.0.2, ... (10.x.y.z beyond 254)."""
    n = i + 1
    return f"10.{(n >> 16) & 0xFF}.{(n >> 8) & 0xFF}.{n & 0xFF}"


class Fabric:
    """A simulated fabric: ``sim``, ``hosts``, ``switches``, ``links`` (by name), ``ports``.

    ``buffer_bytes`` and ``ecn_threshold`` apply to every switch output port; defaults are two
    and one fifth of the bandwidth-delay product of one link at ``rtt``.
    """

    def __init__(self, n_hosts=2, *, planes=1, leaves=1, spines=0, rate_bps=400e9, rtt=10e-6,
                 buffer_bytes=None, ecn_threshold=None, spine_skew=0.0, seed=0):
        if n_hosts < 1 or planes < 1 or leaves < 1 or spines < 0:
            raise ValueError("need n_hosts >= 1, planes >= 1, leaves >= 1, spines >= 0")
        if leaves > 1 and spines == 0:
            raise ValueError("several leaves need at least one spine")
        self.sim = sim = Sim()
        self.planes = planes
        self.rate_bps = rate_bps
        self.rtt = rtt
        bdp = rate_bps * rtt / 8
        self.buffer_bytes = int(2 * bdp) if buffer_bytes is None else buffer_bytes
        self.ecn_threshold = int(bdp / 5) if ecn_threshold is None else ecn_threshold
        hops = 2 if spines == 0 else 4
        self.link_delay = rtt / (2 * hops)
        self.spine_skew = spine_skew
        self.hosts = [Host(sim, f"h{i}", host_addr(i)) for i in range(n_hosts)]
        self.switches = {}
        self.links = {}
        self.ports = {}         # link name -> OutPort (switch side)
        self.plane_links = [[] for _ in range(planes)]
        self.pcaps = []
        for p in range(planes):
            self._build_plane(p, leaves, spines, seed)

    def _link(self, name, plane, dst, dst_port=0, extra_delay=0.0):
        ln = Link(self.sim, name, self.rate_bps, self.link_delay + extra_delay, dst, dst_port,
                  plane=plane)
        self.links[name] = ln
        self.plane_links[plane].append(ln)
        return ln

    def _port(self, sw, link):
        port = sw.add_port(OutPort(self.sim, link, self.buffer_bytes, self.ecn_threshold))
        self.ports[link.name] = port
        return port

    def _build_plane(self, p, n_leaves, n_spines, seed):
        leaves = [Switch(self.sim, f"p{p}.leaf{j}", seed) for j in range(n_leaves)]
        spines = [Switch(self.sim, f"p{p}.spine{k}", seed) for k in range(n_spines)]
        for sw in leaves + spines:
            self.switches[sw.name] = sw
        for i, h in enumerate(self.hosts):
            leaf = leaves[i % n_leaves]
            h.add_nic(self._link(f"{h.name}>{leaf.name}", p, leaf))
            leaf.add_route(h.addr, [self._port(leaf, self._link(f"{leaf.name}>{h.name}", p, h))])
        up = {}
        for leaf in leaves:
            up[leaf.name] = [self._port(leaf, self._link(f"{leaf.name}>{s.name}", p, s,
                                                         extra_delay=k * self.spine_skew))
                             for k, s in enumerate(spines)]
        down = {}
        for k, s in enumerate(spines):
            down[s.name] = {leaf.name: self._port(s, self._link(f"{s.name}>{leaf.name}", p, leaf,
                                                                extra_delay=k * self.spine_skew))
                            for leaf in leaves}
        for i, h in enumerate(self.hosts):
            home = leaves[i % n_leaves]
            for leaf in leaves:
                if leaf is not home:
                    leaf.add_route(h.addr, up[leaf.name])
            for s in spines:
                s.add_route(h.addr, [down[s.name][home.name]])

    # -- faults and events ---------------------------------------------------------------------

    def set_faults(self, faults, links=None):
        """Attach ``faults`` (a :class:`~metaroce.sim.faults.Faults`) to the named links (all
        links when ``links`` is None). Each link gets its own copy and its own generator."""
        for name in (self.links if links is None else links):
            self.links[name].set_faults(faults)

    def link_down(self, name, at, until=None):
        """Take link ``name`` down at time ``at`` and (optionally) back up at ``until``."""
        self._updown([self.links[name]], at, until)

    def plane_down(self, plane, at, until=None):
        """Take every link of ``plane`` (hosts' ports included) down at ``at``, up at ``until``."""
        self._updown(self.plane_links[plane], at, until)

    def _updown(self, links, at, until):
        def set_(state):
            for ln in links:
                ln.up = state
        self.sim.at(at, set_, False)
        if until is not None:
            self.sim.at(until, set_, True)

    def capture(self, link_name, path):
        """Write every frame that link ``link_name`` delivers to pcap file ``path`` (with its
        arrival time); corrupted frames appear with their flipped bit. Call :meth:`close`."""
        from metaroce.models.pcap import Writer
        fh = open(path, "wb")
        self.pcaps.append(fh)
        self.links[link_name].pcap = Writer(fh)

    def close(self):
        for fh in self.pcaps:
            fh.close()
        self.pcaps = []
        for ln in self.links.values():
            ln.pcap = None

    # -- summaries -----------------------------------------------------------------------------

    def peak_queue(self):
        """Largest queue (bytes) any switch port reached."""
        return max((p.stats["peak_bytes"] for p in self.ports.values()), default=0)

    def switch_drops(self):
        return sum(p.stats["drops"] for p in self.ports.values())

    def marks(self):
        return sum(p.stats["marked"] for p in self.ports.values())
