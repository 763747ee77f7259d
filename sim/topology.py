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

from .fabric import Host, Link, OutPort, Red, SharedBuffer, Sim, Switch


def host_addr(i):
    """IPv4 address of host ``i``: 10.0.0.1, 10.0.0.2, ... (10.x.y.z beyond 254)."""
    n = i + 1
    return f"10.{(n >> 16) & 0xFF}.{(n >> 8) & 0xFF}.{n & 0xFF}"


class Fabric:
    """A simulated fabric: ``sim``, ``hosts``, ``switches``, ``links`` (by name), ``ports``.

    ``buffer_bytes`` and ``ecn_threshold`` apply to every switch output port; defaults are two
    and one fifth of the bandwidth-delay product of one link at ``rtt``.

    Optional switch features (docs/spec/fabric.md): ``fat_tree_k`` builds a 3-tier k-ary fat
    tree instead of a leaf-spine (MR-FAB-016); ``shared_buffer`` (bytes per switch) with
    ``alpha`` gives every switch a dynamic-threshold shared buffer (MR-FAB-013; ``buffer_bytes``
    then caps each port only when given); ``red=(kmin, kmax, pmax)`` replaces step marking
    (MR-FAB-014); ``pfc`` (a :class:`~metaroce.sim.fabric.Pfc`) makes the fabric lossless
    (MR-FAB-015); ``reconverge`` (seconds) makes switches route around dead links and switches
    that long after a change (MR-FAB-017); ``control_priority`` (default True) serves every
    protocol's acknowledgements, NAKs, CNPs and announcements before the data at every switch
    port (MR-FAB-019).
    """

    def __init__(self, n_hosts=2, *, planes=1, leaves=1, spines=0, rate_bps=400e9, rtt=10e-6,
                 buffer_bytes=None, ecn_threshold=None, spine_skew=0.0, seed=0, fat_tree_k=None,
                 shared_buffer=None, alpha=1.0, red=None, pfc=None, reconverge=None,
                 control_priority=True):
        if n_hosts < 1 or planes < 1 or leaves < 1 or spines < 0:
            raise ValueError("need n_hosts >= 1, planes >= 1, leaves >= 1, spines >= 0")
        if leaves > 1 and spines == 0 and fat_tree_k is None:
            raise ValueError("several leaves need at least one spine")
        if fat_tree_k is not None:
            if fat_tree_k < 2 or fat_tree_k % 2:
                raise ValueError("fat_tree_k must be an even number >= 2")
            if n_hosts > fat_tree_k ** 3 // 4:
                raise ValueError(f"a k={fat_tree_k} fat tree holds at most {fat_tree_k ** 3 // 4} hosts")
        if reconverge is not None and reconverge < 0:
            raise ValueError("reconverge must be >= 0")
        self.sim = sim = Sim()
        self.planes = planes
        self.rate_bps = rate_bps
        self.rtt = rtt
        self.seed = seed
        bdp = rate_bps * rtt / 8
        if shared_buffer is None:
            self.buffer_bytes = int(2 * bdp) if buffer_bytes is None else buffer_bytes
        else:
            self.buffer_bytes = buffer_bytes
        self.shared_buffer = shared_buffer
        self.alpha = alpha
        self.red = None if red is None else Red(*red)
        self.ecn_threshold = int(bdp / 5) if ecn_threshold is None else ecn_threshold
        self.pfc = pfc
        self.control_priority = bool(control_priority)     # MR-FAB-019
        self.reconverge = reconverge
        hops = 2 if (spines == 0 and fat_tree_k is None) else (4 if fat_tree_k is None else 6)
        self.link_delay = rtt / (2 * hops)
        self.spine_skew = spine_skew
        self.hosts = [Host(sim, f"h{i}", host_addr(i)) for i in range(n_hosts)]
        self.switches = {}
        self.links = {}
        self.ports = {}         # link name -> OutPort (switch side)
        self.plane_links = [[] for _ in range(planes)]
        self.switch_links = {}  # switch name -> links into and out of it
        self.pcaps = []
        self._view = {}         # link -> up, as the routing protocol last saw it (MR-FAB-017)
        self.route_updates = 0
        for p in range(planes):
            if fat_tree_k is not None:
                self._build_fat_tree(p, fat_tree_k, seed)
            else:
                self._build_plane(p, leaves, spines, seed)
        self.compute_routes()

    def _switch(self, name, seed, mix=False):
        sw = Switch(self.sim, name, seed, pfc=self.pfc, mix=mix)
        sw.buffer = None if self.shared_buffer is None else SharedBuffer(self.shared_buffer, self.alpha)
        self.switches[name] = sw
        self.switch_links[name] = []
        return sw

    def _link(self, name, plane, dst, dst_port=0, extra_delay=0.0, src=None):
        ln = Link(self.sim, name, self.rate_bps, self.link_delay + extra_delay, dst, dst_port,
                  plane=plane)
        if isinstance(dst, Switch):
            ln.dst_port = ln        # the switch learns the ingress link (PFC accounting)
            self.switch_links[dst.name].append(ln)
        if src is not None:
            self.switch_links[src.name].append(ln)
        self.links[name] = ln
        self.plane_links[plane].append(ln)
        return ln

    def _port(self, sw, link):
        port = sw.add_port(OutPort(self.sim, link, self.buffer_bytes, self.ecn_threshold,
                                   shared=sw.buffer, red=self.red, seed=self.seed,
                                   control=self.control_priority))
        self.ports[link.name] = port
        return port

    def _cable(self, a, b, plane, extra_delay=0.0):
        """Two links between switches ``a`` and ``b`` (a port on each)."""
        self._port(a, self._link(f"{a.name}>{b.name}", plane, b, extra_delay=extra_delay, src=a))
        self._port(b, self._link(f"{b.name}>{a.name}", plane, a, extra_delay=extra_delay, src=b))

    def _attach(self, host, sw, plane):
        host.add_nic(self._link(f"{host.name}>{sw.name}", plane, sw))
        self._port(sw, self._link(f"{sw.name}>{host.name}", plane, host, src=sw))

    def _build_plane(self, p, n_leaves, n_spines, seed):
        leaves = [self._switch(f"p{p}.leaf{j}", seed) for j in range(n_leaves)]
        spines = [self._switch(f"p{p}.spine{k}", seed) for k in range(n_spines)]
        for i, h in enumerate(self.hosts):
            self._attach(h, leaves[i % n_leaves], p)
        # Port order (hosts, then spines in order) fixes the ECMP order (MR-FAB-012).
        for leaf in leaves:
            for k, s in enumerate(spines):
                self._port(leaf, self._link(f"{leaf.name}>{s.name}", p, s,
                                            extra_delay=k * self.spine_skew, src=leaf))
        for k, s in enumerate(spines):
            for leaf in leaves:
                self._port(s, self._link(f"{s.name}>{leaf.name}", p, leaf,
                                         extra_delay=k * self.spine_skew, src=s))

    def _build_fat_tree(self, p, k, seed):
        """A k-ary fat tree (MR-FAB-016): k pods of k/2 edge and k/2 aggregation switches,
        (k/2)^2 cores; host i on edge switch i // (k/2) (pod-major); aggregation switch j of
        every pod links to cores j*k/2 .. j*k/2 + k/2 - 1."""
        half = k // 2
        edges = [[self._switch(f"p{p}.pod{a}.edge{j}", seed, True) for j in range(half)] for a in range(k)]
        aggs = [[self._switch(f"p{p}.pod{a}.agg{j}", seed, True) for j in range(half)] for a in range(k)]
        cores = [self._switch(f"p{p}.core{c}", seed, True) for c in range(half * half)]
        for i, h in enumerate(self.hosts):
            self._attach(h, edges[i // (half * half)][(i // half) % half], p)
        for a in range(k):
            for e in edges[a]:
                for g in aggs[a]:
                    self._cable(e, g, p)
            for j, g in enumerate(aggs[a]):
                for c in range(half):
                    self._cable(g, cores[j * half + c], p)

    # -- routing -------------------------------------------------------------------------------

    def compute_routes(self):
        """Shortest-path ECMP routes over the links the routing view holds up (all, initially):
        for every switch and host address, the ports on a shortest live path, in port order."""
        view = self._view
        into = {}               # node -> links arriving at it
        for ln in self.links.values():
            into.setdefault(id(ln.dst), []).append(ln)
        src_of = {}
        for sw in self.switches.values():
            for port in sw.ports:
                src_of[id(port.link)] = sw
        for h in self.hosts:
            dist = {id(h): 0}
            frontier = [h]
            while frontier:
                nxt = []
                for node in frontier:
                    for ln in into.get(id(node), ()):
                        if not view.get(ln, True):
                            continue
                        sw = src_of.get(id(ln))
                        if sw is None or id(sw) in dist:
                            continue            # hosts do not forward
                        dist[id(sw)] = dist[id(node)] + 1
                        nxt.append(sw)
                frontier = nxt
            for sw in self.switches.values():
                d = dist.get(id(sw))
                hops = [] if d is None else [
                    port for port in sw.ports
                    if view.get(port.link, True) and dist.get(id(port.link.dst)) == d - 1
                    and (port.link.dst is h or isinstance(port.link.dst, Switch))]
                if hops:
                    sw.add_route(h.addr, hops)
                else:
                    sw.drop_route(h.addr)
        self.route_updates += 1

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

    def switch_down(self, name, at, until=None):
        """Take switch ``name`` down at ``at`` (every link into and out of it), up at ``until``."""
        self._updown(self.switch_links[name], at, until)

    def _updown(self, links, at, until):
        links = list(links)

        def set_(state):
            for ln in links:
                ln.up = state
            if self.reconverge is not None:
                # Switches learn the change ``reconverge`` seconds later (MR-FAB-017).
                self.sim.at(self.sim.now + self.reconverge, learn, state)

        def learn(state):
            for ln in links:
                self._view[ln] = state
            self.compute_routes()

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
