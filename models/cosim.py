"""Closed-loop co-simulation of the engine's receive half with a model sender (MR-ENG-120..).

A sender :class:`~metaroce.models.endpoint.Endpoint` (host ``h0``) writes a source buffer with
RDMA WRITEs through the model fabric (:class:`metaroce.sim.topology.Fabric`: two leaves and
``spines`` spines, so a connection's paths take different routes and arrive out of order;
loss, reordering and duplication on the link into the receiving host; ECN marking in the
switches) to the engine's receive half (``EngineRx``, the RTL under Verilator or its cycle
model :class:`~metaroce.models.engine.EngineRxModel`) on host ``h1``. The engine's ``m_ack``
records become real ACK and NAK frames through the endpoint's own encoding
(:func:`~metaroce.models.endpoint.ack_frame`, :func:`~metaroce.models.endpoint.nak_frame`) and
travel back through the fabric to the sender, which retransmits from them. The loop is closed:
what the sender sends next depends on the RTL's ACKs.

Time (MR-ENG-121): clock cycle ``n`` of the traffic phase is fabric time ``n * period``, with
``period = 1 / CLOCK_HZ`` and the link rate ``width * CLOCK_HZ`` (64 bits at 156.25 MHz: the
10 Gb/s link; 512 bits: 80 Gb/s): one MAC beat per cycle is the link's rate. Each cycle the
fabric runs up to the cycle's time; the frames that reached ``h1`` by then queue as MAC beats
for ``s_axis`` (one beat per cycle while ``tready``): with ``cfg.mac_cut_through`` (the default,
:func:`stream_into`) a frame reaches ``h1`` its beats less one cycle before its last bit, so its
last beat enters ``s_axis`` as its last bit arrives; without, at its last bit (the earlier
harness). An ACK or NAK the engine gives in a cycle leaves ``h1`` at that cycle's time.

:class:`Cosim` is a traffic driver like :class:`~metaroce.models.engine_cases.Driver` (``inputs``,
``observe``, ``settle``, ``finished``), simulator-independent: three phases, the setup rows
through AXI4-Lite, the closed loop, then the RX counters through AXI4-Lite. The host memory is
an AXI4 write slave (:class:`~metaroce.models.dma_write_cases.HostMemory`). :meth:`Cosim.result`
checks and summarises: the host memory's window of the written region against the source
buffer (sha256, byte-exact), every WR of the sender completed once with success, nothing
written outside the region, goodput against the link's payload limit
(:func:`payload_limit_bps`). :func:`run_model` runs the loop with the cycle model alone.

models/ never imports hdl/.
"""
from __future__ import annotations

import collections
import hashlib
import random
from dataclasses import asdict, dataclass

from . import protocol as P
from . import regs_cases as rgc
from . import codec
from .codec import encode
from .dma_write import RESP_OKAY, done_layout, unpack as dunpack
from .dma_write_cases import HostMemory
from .rx import CHUNK_RING, SMALL as RX_SMALL
from .endpoint import ack_frame, nak_frame
from .engine import AXIL, EngineRxModel
from .engine_cases import Phases, _host_window
from .regs import register_map
from .rx import CTR_ACKS, CTR_CE, CTR_NAKS, CTR_PLACED_BYTES, RxCode, unpack
from .rx_cases import LOCAL_ADDR, PEER_ADDR, Setup

__all__ = ["CLOCK_HZ", "SCENARIOS", "Config", "RtlPeer", "Cosim", "payload_limit_bps", "run_model",
           "run_loop", "fabric_to", "build_fabric", "write_bounds", "reference_receiver", "run_reference", "INTO",
           "FabricMac", "stream_into", "link_into"]

#: MR-ENG-123: the link into the receiving host ``h1``, where the faults are.
INTO = "p0.leaf1>h1"

#: MR-ENG-121: the core clock of the co-simulation; the link runs at ``width * CLOCK_HZ``.
CLOCK_HZ = 156.25e6


def payload_limit_bps(link_bps, mtu):
    """The link model's payload limit: the line rate times MTU payload bytes over everything one
    MTU-sized write frame occupies on the link (headers from Ethernet to ICRC with MRDH and RETH,
    plus the fabric's per-frame overhead: FCS, preamble, inter-frame gap), as the loss benchmark
    defines it (``metaroce.benches._common.payload_rate``)."""
    from metaroce.sim.fabric import FRAME_OVERHEAD
    hdr = 14 + 20 + 8 + 12 + 16 + 16 + 4
    return link_bps * mtu / (mtu + hdr + FRAME_OVERHEAD)


@dataclass
class Config:
    """One closed-loop run. ``width``: datapath bits; ``nbytes`` written in ``n_writes`` WRITEs
    spread over ``n_conns`` connections and their streams; fabric: ``spines`` spines (paths),
    ``loss``, ``reorder`` (held back up to ``reorder_delay_rtt`` RTTs), ``dup`` on the link into
    the engine's host (data frames only), ECN marking above ``ecn_packets`` MTU frames queued,
    base RTT ``rtt``; engine instance ``conns`` x ``paths``, ``keys``; ``mtu_log2``,
    ``ack_every``; host memory ``axi_bp`` (AWREADY/WREADY low) and B latency ``latency``;
    ``ack_bp``: ``m_ack`` ready low with that probability; ``bottleneck``: the link into the
    engine's host runs at that fraction of the link rate (queues build in the last switch, which
    marks CE; the payload limit is then the bottleneck's); ``max_time``: fabric seconds before
    the run is declared stuck (default from the size)."""
    width: int = 64
    nbytes: int = 256 * 1024
    loss: float = 0.02
    reorder: float = 0.0
    reorder_delay_rtt: float = 0.5
    dup: float = 0.005
    seed: int = 1
    spines: int = 4
    rtt: float = 10e-6
    ecn_packets: int = 8
    conns: int = 256
    paths: int = 4
    keys: int = 256
    #: MR-RX-001: the RX engine's streams per connection (``engine_rx_256x4``'s, models.rx.SMALL)
    streams: int = RX_SMALL["streams"]
    mtu_log2: int = 12
    ack_every: int = 1
    n_conns: int = 3
    n_writes: int = 6
    axi_bp: float = 0.0
    latency: tuple = (1, 40)
    ack_bp: float = 0.0
    bottleneck: float = 1.0
    max_time: float | None = None
    #: MR-RX-090: the receiver's delayed-ACK time in seconds (None: the endpoint's default,
    #: base RTT / 4; 0: no timer), the engine's ``ack_delay`` register in cycles of CLOCK_HZ
    ack_delay: float | None = None
    #: MR-ENG-138: the bytes ``h1``'s engine writes back to ``h0`` in a two-engine run (None:
    #: an eighth of ``nbytes``)
    back: int | None = None
    #: MR-ENG-120/125/138: the engine's MAC streams frames as they cross the wire
    #: (:class:`FabricMac`); False: the earlier store-and-forward hand-over at the frame's last
    #: bit (receiving) and last beat (sending)
    mac_cut_through: bool = True
    #: MR-ENG-130: the whole engine's chunk window (its TX half's ``chunk_window`` and its RX
    #: chunk ring; None: the instance's, ``engine_tx_params``); model runs only (the RTL is the
    #: block ``engine`` as built)
    chunk_window: int | None = None
    #: MR-ENG-146: the whole-engine runs' verb: ``write`` (each side WRITEs its bytes to the
    #: peer) or ``read`` (each side READs the peer's bytes: the data's receiver posts READs and
    #: the data's sender answers them)
    verb: str = "write"
    #: hw-engine.md MR-ENG-306 (psneng46): every path's initial PSN, both directions, in the
    #: whole-engine runs (the engines' table 9 rows, the RX's expected PSNs, the endpoints'
    #: ``init_psn``/``peer_init_psn``); None: 0, as before
    init_psn: int | None = None
    #: hw-engine.md MR-ENG-319 (hinteng47): the whole-engine runs with the rate hints end to end:
    #: the engines ``EngineModel(hints=True)`` (their windows on, the peer's MRAH hint decoded),
    #: each engine's ACKs carrying this hint in Mb/s (0: none; its host's receive rate), the
    #: reference endpoint's hint pushes on; None: no hints, as before
    hints: int | None = None
    #: hw-engine.md MR-ENG-341 (rxhint48): with ``hints``, each engine computes its own hint
    #: (``EngineModel(rx_hint=True)``: the block ``engine_rx_hint``), its capacity the link rate,
    #: its share interval the base RTT; ``hints`` is then unused
    rx_hint: bool = False

    @property
    def ack_delay_s(self):
        return self.rtt / 4 if self.ack_delay is None else self.ack_delay

    @property
    def ack_delay_cycles(self):
        return min(0xFFFF, round(self.ack_delay_s * CLOCK_HZ))

    def validate(self):
        if self.width not in (64, 128, 256, 512):
            raise ValueError(f"width must be 64, 128, 256 or 512, not {self.width}")
        if not (0 <= self.loss < 1 and 0 <= self.reorder <= 1 and 0 <= self.dup <= 1):
            raise ValueError("loss must be in [0, 1), reorder and dup in [0, 1]")
        if self.nbytes < max(1, self.n_writes):
            raise ValueError(f"bytes must be at least {max(1, self.n_writes)}")
        if self.nbytes > (1 << 31):
            raise ValueError("bytes must be at most 2 GiB (one key region)")
        if self.back is not None and not 0 <= self.back <= (1 << 31):
            raise ValueError("back must be in 0..2 GiB")
        if not 0 < self.bottleneck <= 1:
            raise ValueError("bottleneck must be in (0, 1]")
        if self.hints is not None and not 0 <= self.hints < 1 << 19:
            raise ValueError("hints must be in 0..524287 Mb/s")
        if self.rx_hint and self.hints is None:
            raise ValueError("rx_hint needs hints")
        if not 1 <= self.spines <= 16:
            raise ValueError("spines must be in 1..16")
        if not 1 <= self.ack_every <= 15:
            raise ValueError("ack_every must be in 1..15")
        if not 8 <= self.mtu_log2 <= 13:
            raise ValueError("mtu_log2 must be in 8..13 (frames up to the parser's 9,216 bytes)")
        if self.verb not in ("write", "read"):
            raise ValueError(f"verb must be write or read, not {self.verb!r}")
        if self.init_psn is not None and not 0 <= self.init_psn < 1 << 24:
            raise ValueError("init_psn must be in 0..16777215 (a 24-bit PSN)")

    @property
    def link_bps(self):
        return self.width * CLOCK_HZ

    @property
    def limit_bps(self):
        """The payload limit of the path into the engine (MR-ENG-122)."""
        return payload_limit_bps(self.link_bps * self.bottleneck, 1 << self.mtu_log2)


#: MR-ENG-123: the named scenarios of ``metaroce cosim`` (Config fields over the defaults).
SCENARIOS = {
    "writes": ({}, "WRITEs over 4 spines (multipath), loss and 0.5 % duplication on the link into "
                   "the engine"),
    "reorder": ({"reorder": 0.1, "reorder_delay_rtt": 0.5},
                "as writes, and 10 % of the data frames held back up to half an RTT"),
    "ecn": ({"bottleneck": 0.5, "ecn_packets": 2},
            "as writes, the link into the engine at half the rate: queues, CE marks, rate control"),
    "single-path": ({"spines": 1}, "as writes over one spine (every path one route)"),
    "pod": ({"rtt": 5e-6}, "as writes with a base RTT of 5 us (hosts in one pod; a 16 KiB chunk "
                           "window at MTU 1,024 covers the BDP with room for loss recovery)"),
}


def fabric_to(fab, cycle):
    """MR-ENG-121: run the fabric up to the time of clock cycle ``cycle`` (``cycle / CLOCK_HZ``)."""
    t = cycle / CLOCK_HZ
    if fab.sim.now < t:
        fab.sim.run(until=t)


def build_fabric(cfg: Config):
    """MR-ENG-123: the loop's fabric: ``h0`` on leaf 0, ``h1`` on leaf 1, every spine a route
    (ECMP on the entropy, the spines' delays skewed by RTT/40), ECN marking above
    ``ecn_packets`` MTU frames; the link into ``h1`` at ``bottleneck`` of the rate, with the
    loss, reordering and duplication of data frames."""
    from metaroce.sim.faults import Faults
    from metaroce.sim.topology import Fabric
    fab = Fabric(2, leaves=2, spines=cfg.spines, rate_bps=cfg.link_bps, rtt=cfg.rtt, seed=cfg.seed,
                 ecn_threshold=cfg.ecn_packets << cfg.mtu_log2, spine_skew=cfg.rtt / 40)
    fab.links[INTO].rate = cfg.link_bps * cfg.bottleneck
    fab.set_faults(Faults(loss=cfg.loss, reorder=cfg.reorder,
                          reorder_delay=cfg.reorder_delay_rtt * cfg.rtt, duplicate=cfg.dup,
                          direction="data", seed=cfg.seed), links=[INTO])
    return fab


def write_bounds(cfg: Config, rng):
    """The WRITEs' pieces of the source: ``n_writes`` consecutive ranges ``[a, b)``, each written
    to the same offset of the region, as the bounds ``[0, cut, ..., nbytes]``."""
    n_writes = min(cfg.n_writes, cfg.nbytes)
    cuts = sorted(rng.sample(range(1, cfg.nbytes), n_writes - 1)) if n_writes > 1 else []
    return [0, *cuts, cfg.nbytes]


def reference_receiver(cfg: Config, *, timer=True, hints=True, addr=LOCAL_ADDR, chunk_window=None,
                       max_tx_msgs=8, max_rd_atomic=None):
    """MR-ENG-123: a receiving :class:`Endpoint` on ``h1``: ``cfg``'s MTU, ACK policy and link,
    its delayed-ACK timer ``cfg.ack_delay_s`` (``timer`` False: none within the run) and its
    rate-hint pushes (``hints`` False: off, MR-CC-009; its ACKs still carry the hint); ``addr``
    its host's address, ``chunk_window`` its chunk window when it sends (MR-ENG-139) and
    ``max_tx_msgs`` its message bound when it sends (MR-ENG-157: the engine's RX's per stream);
    ``max_rd_atomic`` its responder resources (None: the endpoint's default, MR-VERB-005)."""
    from .endpoint import Endpoint
    from .rx_cases import NO_ACK_DELAY
    rx = Endpoint(addr, mtu=1 << cfg.mtu_log2, ack_every=cfg.ack_every, max_rx_msgs=1 << 20,
                  chunk_window=chunk_window, announce=False,    # as the engine: MR-CC-021
                  max_tx_msgs=max_tx_msgs,
                  **({} if max_rd_atomic is None else {"max_rd_atomic": max_rd_atomic}),
                  rng=random.Random(cfg.seed + 1), line_rate_bps=cfg.link_bps, base_rtt=cfg.rtt,
                  ack_delay=cfg.ack_delay_s if timer and cfg.ack_delay_cycles else NO_ACK_DELAY)
    if not hints:
        rx._hint_check = lambda c, now: None
    return rx


class RtlPeer:
    """The engine's host on the fabric: the endpoint contract a fabric :class:`Host` drives
    (``receive``, ``next_packet``, ``next_wakeup``, ``poll_cq``). Frames that arrive are
    encoded (``rx``: bytes, in arrival order, for the MAC); frames to send are the ACKs and
    NAKs built from the engine's records (``tx``)."""

    def __init__(self, addr):
        self.addr = addr
        self.rx = collections.deque()
        self.tx = collections.deque()
        self.stats = {"frames_in": 0, "bytes_in": 0, "acks_out": 0, "naks_out": 0}

    def receive(self, frame, now):
        b = encode(frame)
        self.rx.append(b)
        self.stats["frames_in"] += 1
        self.stats["bytes_in"] += len(b)

    def next_packet(self, now):
        return self.tx.popleft() if self.tx else None

    def next_wakeup(self, now):
        return None

    def poll_cq(self, max_entries=None):
        return []


class _NoFaults:
    """A link's faults that do nothing (``sim.fabric.Link.carry``'s interface)."""
    corrupt = duplicate = 0

    def lose(self, rng, opcode):
        return False

    def extra_delay(self, rng):
        return 0


def stream_into(link, width):
    """MR-ENG-138: a MAC receiving as the frame streams in on ``link`` (the link into its host):
    each frame reaches the host its ``width``-bit beats less one cycle before its last bit, so
    its last beat enters ``s_axis`` as its last bit arrives."""
    if link.faults is None:
        link.faults = _NoFaults()       # the switch port then calls carry (no inlined path)
    carry, nb, period = link.carry, width // 8, 1.0 / CLOCK_HZ

    def early(frame, ser, start=None):
        wl = getattr(frame, "_wl", 0)
        carry(frame, max(0.0, ser - (-(-wl // nb) - 1) * period), start)
    link.carry = early


class FabricMac:
    """MR-ENG-138: an engine's MAC on a fabric host whose endpoint is an :class:`RtlPeer`: the
    frames that reached the host (bytes, in arrival order) go to ``s_axis`` (the whole engine's;
    the TX half's loop, MR-ENG-125, sends through it too).

    ``cut_through`` (the default): a MAC that streams frames as they cross the wire, as a
    10 Gb/s MAC does. Transmit: a frame's time on the host's link starts at its first beat on
    ``m_axis`` (``first``, seconds), or when the link has sent the frame before, and lasts its
    bytes and the fabric's per-frame overhead at the link's rate; it arrives the link's delay
    after its last bit; ``can_send`` is false while the link is more than :data:`FIFO_BYTES`
    behind (the overhead of back-to-back frames). Receive (``into``: the link into the host):
    a frame reaches ``rx`` its beats less one cycle (``width`` bits a beat) before its last bit
    arrives, so its last beat enters ``s_axis`` as its last bit arrives (its bytes stream at
    the line rate from then on). Otherwise (the earlier harness, store and forward both ways):
    a frame is handed to the host's NIC at its last beat, which serialises it again, and the
    MAC holds one frame beyond the NIC's queue (``can_send`` false while one waits, as
    MR-ENG-125); a frame reaches ``rx`` at its last bit and streams into ``s_axis`` after."""

    #: the cut-through MAC's transmit FIFO: bytes the link may be behind ``m_axis``
    FIFO_BYTES = 32

    def __init__(self, host, cut_through=True, *, into=None, width=64):
        self.host, self.peer = host, host.ep
        self.rx = self.peer.rx
        self.cut_through = cut_through
        if cut_through and into is not None:
            stream_into(into, width)
        link = host.nics[0].link
        self.link, self.byte_s = link, 8.0 / link.rate
        from metaroce.sim.fabric import FRAME_OVERHEAD, frame_len
        self._overhead, self._frame_len = FRAME_OVERHEAD, frame_len
        self.wire_free = 0.0            # when the link has sent every frame handed to it

    def send(self, raw, first=None, frame=None):
        """Send the frame ``raw`` (bytes; ``frame``: already decoded) whose first beat left at
        ``first`` (seconds; None: hand it to the host's NIC now)."""
        f = codec.decode(raw) if frame is None else frame
        host = self.host
        if not self.cut_through or first is None:
            self.peer.tx.append(f)
            host.pump()
            return
        now = host.sim.now
        f._wl = self._frame_len(f)
        start = max(first, self.wire_free)
        self.wire_free = end = start + (f._wl + self._overhead) * self.byte_s
        host.tx += 1
        if host.tx_hook is not None:
            host.tx_hook(f, now)
        self.link.carry(f, end - now)       # arrives end + delay (end > now: the tail is on the wire)

    def can_send(self, t):
        """``m_axis.tready`` at time ``t`` (seconds)."""
        if self.cut_through:
            return self.wire_free - t <= self.FIFO_BYTES * self.byte_s
        return not self.peer.tx

    @property
    def idle(self):
        return not self.peer.tx


def link_into(fab, host):
    """The fabric's link whose far end is ``host``."""
    return next(link for link in fab.links.values() if link.dst is host)


def _source(rng, n):
    return rng.randbytes(n) if hasattr(rng, "randbytes") else bytes(rng.getrandbits(8) for _ in range(n))


class _Loop:
    """Phase 2 of :class:`Cosim`: the fabric, the sender, the MAC source, the ACK path and the
    host memory, cycle by cycle."""

    QUIET = 64

    def __init__(self, cfg: Config, s: Setup, conns, lay, region, fabric, sender_host, peer_host,
                 posted, rng):
        self.cfg, self.s, self.conns, self.lay, self.region = cfg, s, conns, lay, region
        self.fab, self.sender_host, self.peer_host = fabric, sender_host, peer_host
        self.peer = peer_host.ep
        self.posted = posted
        self.nb = cfg.width // 8
        self.period = 1.0 / CLOCK_HZ
        self.rng = rng
        self.done_layout = done_layout(cfg.conns)
        self.mem = HostMemory(lay, cfg.width, random.Random(cfg.seed + 5), p_bp=cfg.axi_bp,
                              latency=cfg.latency)
        self.mem.image = bytearray(lay.size)
        self.mem.initial = bytes(self.mem.image)
        self.beats = collections.deque()
        self.backlog = 0                # bytes queued for s_axis
        self.cycle = 0
        self.done = []                  # sender completions (t, wr_id, status)
        self.res = {"ack_records": 0, "nak_records": 0, "done": 0, "done_errors": 0, "bypass": 0,
                    "beats": 0, "peak_backlog": 0, "ece_mismatch": 0, "nak_reasons": {}}
        self.quiet = 0
        self.finished = False
        self._idle = {"s_axis__tvalid": 0, "s_axis__tdata": 0, "s_axis__tkeep": 0, "s_axis__tlast": 0,
                      "s_axis__tuser": 0, "m_bypass__tready": 1, "m_done__ready": 1, "m_ack__ready": 1, "m_cqe__ready": 1,
                      **{"s_axil__" + n: 0 for n in AXIL}, "s_axil__bready": 1, "s_axil__rready": 1}
        ideal = cfg.nbytes * 8 / cfg.limit_bps
        self.max_time = cfg.max_time if cfg.max_time is not None else 50 * ideal + 2000 * cfg.rtt
        self.t_done = None
        sender_host.on_completion = self._completion
        peer_host.on_completion = lambda host, t, c: None

    def _completion(self, host, t, c):
        self.done.append((t, c.wr_id, int(c.status)))
        if len(self.done) >= len(self.posted) and self.t_done is None:
            self.t_done = t

    @property
    def all_done(self):
        return len(self.done) >= len(self.posted)

    def _frames_in(self):
        nb = self.nb
        rx = self.peer.rx
        while rx:
            f = rx.popleft()
            n = -(-len(f) // nb)
            self.backlog += len(f)
            for j in range(n):
                chunk = f[j * nb:(j + 1) * nb]
                self.beats.append((int.from_bytes(chunk, "little"), (1 << len(chunk)) - 1,
                                   int(j == n - 1), len(chunk)))
        if self.backlog > self.res["peak_backlog"]:
            self.res["peak_backlog"] = self.backlog

    def inputs(self):
        fabric_to(self.fab, self.cycle)
        if self.peer.rx:
            self._frames_in()
        inp = self._idle.copy()
        if self.cfg.ack_bp:
            inp["m_ack__ready"] = int(self.rng.random() >= self.cfg.ack_bp)
        if self.beats:
            data, keep, last, _ = self.beats[0]
            inp.update({"s_axis__tvalid": 1, "s_axis__tdata": data, "s_axis__tkeep": keep,
                        "s_axis__tlast": last})
        self.mem.inputs(inp, self.cycle)
        return inp

    def _ack(self, value):
        a = unpack(self.s.lay.ack, value)
        c = self.conns[a["conn"]]
        peer = self.peer
        if a["nak"]:
            self.res["nak_records"] += 1
            r = self.res["nak_reasons"]
            r[a["reason"]] = r.get(a["reason"], 0) + 1
            f = nak_frame(LOCAL_ADDR, PEER_ADDR, c.pkey, c.qp | 0x800000, a["sport"], a["path"],
                          a["reason"], a["psn"])
            peer.stats["naks_out"] += 1
        else:
            self.res["ack_records"] += 1
            if a["ece"] != int(a["ce_count"] != 0):
                self.res["ece_mismatch"] += 1
            # the RX slice has no rate hint (MR-CC-005 is the TX side's): hint 0, none
            f = ack_frame(LOCAL_ADDR, PEER_ADDR, c.pkey, c.qp | 0x800000, a["sport"], a["path"],
                          a["cum"], a["sack"], a["ce_count"], 0, a["psn"])
            peer.stats["acks_out"] += 1
        peer.tx.append(f)
        self.peer_host.pump()

    def observe(self, inp, out):
        self.mem.observe(inp, out, self.cycle)
        if inp["s_axis__tvalid"] and out["s_axis__tready"]:
            b = self.beats.popleft()
            self.backlog -= b[3]
            self.res["beats"] += 1
        if out["m_ack__valid"] and inp["m_ack__ready"]:
            self._ack(out["m_ack__payload"])
        if out["m_done__valid"] and inp["m_done__ready"]:
            self.res["done"] += 1
            if dunpack(self.done_layout, out["m_done__payload"])["error"] != RESP_OKAY:
                self.res["done_errors"] += 1
        if out["m_bypass__tvalid"] and inp["m_bypass__tready"] and out["m_bypass__tlast"]:
            self.res["bypass"] += 1
        self.cycle += 1

    def settle(self, busy):
        if self.finished:
            return
        if self.all_done and not self.beats and not self.peer.rx and self.mem.idle \
                and not (busy() if callable(busy) else busy):
            self.quiet += 1
            if self.quiet > self.QUIET:
                self.finished = True
        else:
            self.quiet = 0
        if self.cycle * self.period > self.max_time:
            raise AssertionError(
                f"closed loop stuck: {len(self.done)} of {len(self.posted)} WRs completed after "
                f"{self.cycle} cycles ({self.cycle * self.period * 1e3:.3f} ms simulated), "
                f"{len(self.beats)} MAC beats queued")


class Cosim(Phases):
    """The closed-loop driver (MR-ENG-120): the setup rows through AXI4-Lite, the closed loop
    (:class:`_Loop`), the RX counters through AXI4-Lite. After ``finished``, :meth:`result`."""

    def __init__(self, cfg: Config):
        from metaroce.sim.topology import host_addr
        from .endpoint import Endpoint
        cfg.validate()
        self.cfg = cfg
        rng = random.Random(cfg.seed)
        mtu = 1 << cfg.mtu_log2
        assert (host_addr(0), host_addr(1)) == (PEER_ADDR, LOCAL_ADDR)
        # the engine's host: one writable region holding the whole transfer, three small ones
        key_bits = (cfg.keys - 1).bit_length()
        rows = rng.sample(range(cfg.keys), 4)
        length = -(-(cfg.nbytes + 64) // 4096) * 4096
        regions = [((rng.getrandbits(32 - key_bits) << key_bits) | r,
                    length if i == 0 else 4096, P.ACCESS_ALL if i < 3 else P.ACCESS_REMOTE_READ)
                   for i, r in enumerate(rows)]
        s = Setup(cfg.conns, cfg.paths, cfg.keys, streams=cfg.streams, seed=cfg.seed, regions=regions,
                  uniform_psn=True, n_conns=cfg.n_conns, mtu_log2=cfg.mtu_log2, ack_every=cfg.ack_every,
                  ack_delay=cfg.ack_delay_cycles)
        self.lay = lay = _host_window(s, random.Random(cfg.seed + 77))
        self.setup = s
        self.region = s.keys[0]
        self.fab = fab = build_fabric(cfg)
        sender_host, peer_host = fab.hosts
        if cfg.mac_cut_through:         # MR-ENG-120: the MAC streams each frame into s_axis
            stream_into(link_into(fab, peer_host), cfg.width)
        # the sender's chunk window within the engine's chunk ring (MR-RX-082)
        tx = Endpoint(PEER_ADDR, mtu=mtu, ack_every=cfg.ack_every, rng=random.Random(cfg.seed + 2),
                      line_rate_bps=cfg.link_bps, base_rtt=cfg.rtt, chunk_window=CHUNK_RING,
                      announce=False)       # the engine neither sends nor answers MR-CC-021's
        self.sender = tx
        sender_host.ep = tx
        peer_host.ep = RtlPeer(LOCAL_ADDR)
        self.source = _source(random.Random(cfg.seed + 3), cfg.nbytes)
        lkey = tx.reg_mr(bytearray(self.source))
        tconn = {c.qp: tx.connect(c.qp | 0x800000, LOCAL_ADDR, c.qp, paths=c.n_paths,
                                  streams=c.n_streams, pkey=c.pkey, init_psn=c.psn[0])
                 for c in s.conns}
        bounds = write_bounds(cfg, rng)
        self.posted = []
        for i, (a, b) in enumerate(zip(bounds, bounds[1:])):
            c = s.conns[i % len(s.conns)]
            stream = rng.randrange(c.n_streams)
            tconn[c.qp].post_write(stream, lkey, a, b - a, a, self.region.rkey, wr_id=100 + i)
            self.posted.append((c.qp, stream, a, b - a, 100 + i))
        conns = {c.qp: c for c in s.conns}
        self.loop = _Loop(cfg, s, conns, lay, self.region, fab, sender_host, peer_host, self.posted,
                          random.Random(cfg.seed + 9))
        sender_host.kick()
        # the phases: setup rows, the loop, the RX counters
        self.rmap = register_map(s.lay)
        items = [w for cw in s.writes
                 for w in rgc.row_writes(self.rmap, cw.table, cw.addr, cw.value, name=cw.name)]
        self._start(rgc.Driver(items, seed=cfg.seed + 1, p_idle=0.0, p_bp=0.0), self.loop,
                    rgc.Driver(rgc.counter_items(), seed=cfg.seed + 2, p_idle=0.0, p_bp=0.0))

    # -- results

    def rx_counters(self):
        return rgc.counters_read(self.rmap, self.readout)

    def result(self):
        """MR-ENG-122: the run's checks and figures (a JSON-ready dict). ``ok``: the host memory
        window of the region equals the source buffer (``sha256_match``), nothing was written
        outside it, every WR completed once with success, every placement's B response was OKAY,
        no frame was bypassed and the RX counters' placed bytes cover the data."""
        cfg, loop = self.cfg, self.loop
        k = self.region
        off = k.base - self.lay.base
        image = self.mem.image
        got = bytes(image[off:off + cfg.nbytes])
        sha_src = hashlib.sha256(self.source).hexdigest()
        sha_mem = hashlib.sha256(got).hexdigest()
        rest = bytearray(image)
        rest[off:off + cfg.nbytes] = bytes(cfg.nbytes)
        outside = any(rest)
        wrs = sorted(w for _, w, _ in loop.done)
        wrs_ok = wrs == sorted(p[4] for p in self.posted) and all(st == 0 for _, _, st in loop.done)
        ctr = self.rx_counters()
        limit = cfg.limit_bps
        t = loop.t_done
        goodput = cfg.nbytes * 8 / t if t else 0.0
        st = self.sender.stats
        link = self.fab.links[INTO].stats
        ok = (sha_src == sha_mem and not outside and wrs_ok and loop.res["done_errors"] == 0
              and loop.res["bypass"] == 0 and loop.res["ece_mismatch"] == 0
              and ctr[CTR_PLACED_BYTES] >= cfg.nbytes)
        return {
            "ok": bool(ok), "sha256_match": sha_src == sha_mem, "bytes": cfg.nbytes,
            "goodput_vs_limit": round(goodput / limit, 4),
            "cycles": loop.cycle,
            "sha256": sha_mem, "written_outside": outside, "wrs": len(self.posted),
            "wrs_completed_ok": wrs_ok,
            "goodput_gbps": round(goodput / 1e9, 4), "limit_gbps": round(limit / 1e9, 4),
            "link_gbps": cfg.link_bps / 1e9, "clock_mhz": CLOCK_HZ / 1e6, "width": cfg.width,
            "sim_time_s": t, "setup_cycles": self.setup_cycles,
            "fabric": {"lost": link["lost"], "duplicated": link["duplicated"], "delayed": link["delayed"],
                       "ce_marked": self.fab.marks(), "switch_drops": self.fab.switch_drops()},
            "sender": {"frames": self.fab.hosts[0].stats["tx"], "retransmitted": st.get("retransmitted", 0),
                       "probes": st.get("probes_sent", 0), "timeouts": st.get("timeouts", 0)},
            "engine": {"frames_in": self.loop.peer.stats["frames_in"], "mac_beats": loop.res["beats"],
                       "ack_records": loop.res["ack_records"], "nak_records": loop.res["nak_records"],
                       "nak_reasons": {str(r): n for r, n in loop.res["nak_reasons"].items()},
                       "placements": loop.res["done"], "placement_errors": loop.res["done_errors"],
                       "bypassed": loop.res["bypass"], "peak_mac_backlog_bytes": loop.res["peak_backlog"],
                       "rx_counters": {"accepted": ctr[RxCode.ACCEPTED], "duplicate": ctr[RxCode.DUPLICATE],
                                       "psn_window": ctr[RxCode.PSN_WINDOW], "acks": ctr[CTR_ACKS],
                                       "naks": ctr[CTR_NAKS], "ce": ctr[CTR_CE],
                                       "placed_bytes": ctr[CTR_PLACED_BYTES]}},
            "config": {k2: (list(v) if isinstance(v, tuple) else v) for k2, v in asdict(cfg).items()},
        }


def run_model(cfg: Config, *, max_cycles=None):
    """The closed loop with :class:`EngineRxModel` as the engine (no simulator): returns
    :meth:`Cosim.result`."""
    model = EngineRxModel(cfg.width, cfg.conns, cfg.paths, cfg.keys, streams=cfg.streams, outstanding=32)
    return run_loop(Cosim(cfg), model, model.busy, max_cycles=max_cycles).result()


def run_loop(drv, model, busy, *, max_cycles=None):
    """A closed-loop driver stepped with a cycle model alone (no simulator) until it finishes;
    returns the driver."""
    n = 0
    while not drv.finished:
        inp = drv.inputs()
        drv.observe(inp, model.step(inp))
        drv.settle(busy)
        n += 1
        if max_cycles is not None and n > max_cycles:
            raise AssertionError(f"not finished after {n} cycles")
    return drv


def run_reference(cfg: Config, *, timer=True, hints=True):
    """MR-ENG-122: the same sender, writes and fabric with a reference :class:`Endpoint` as the
    receiver instead of the engine (no clock: the fabric alone), for the goodput the transport
    reaches on this fabric. ``timer``: the receiver's delayed-ACK timer (the RX slice has none:
    ``False`` sets it beyond the run); ``hints``: its rate hints (the slice sends none: ``False``
    switches off their pushes, MR-CC-009; its ACKs still carry the hint). Returns ``{"ok",
    "goodput_vs_limit", "goodput_gbps", "sim_time_s", "sender": {...}, "fabric": {...}}``."""
    from .endpoint import Endpoint
    cfg.validate()
    rng = random.Random(cfg.seed)
    mtu = 1 << cfg.mtu_log2
    kw = {"line_rate_bps": cfg.link_bps, "base_rtt": cfg.rtt}
    rx = reference_receiver(cfg, timer=timer, hints=hints)
    dst = bytearray(cfg.nbytes)
    rkey = rx.reg_mr(dst)
    s = Setup(cfg.conns, cfg.paths, cfg.keys, streams=cfg.streams, seed=cfg.seed, uniform_psn=True, n_conns=cfg.n_conns,
              mtu_log2=cfg.mtu_log2, ack_every=cfg.ack_every)
    fab = build_fabric(cfg)
    tx = Endpoint(PEER_ADDR, mtu=mtu, ack_every=cfg.ack_every, rng=random.Random(cfg.seed + 2),
                  chunk_window=CHUNK_RING, announce=False, **kw)    # as the engine: MR-CC-021
    fab.hosts[0].ep, fab.hosts[1].ep = tx, rx
    src = _source(random.Random(cfg.seed + 3), cfg.nbytes)
    lkey = tx.reg_mr(bytearray(src))
    tconn = {}
    for c in s.conns:
        rx.connect(c.qp, PEER_ADDR, c.qp | 0x800000, paths=c.n_paths, streams=c.n_streams, pkey=c.pkey,
                   peer_init_psn=c.psn[0])
        tconn[c.qp] = tx.connect(c.qp | 0x800000, LOCAL_ADDR, c.qp, paths=c.n_paths, streams=c.n_streams,
                                 pkey=c.pkey, init_psn=c.psn[0])
    bounds = write_bounds(cfg, rng)
    for i, (a, b) in enumerate(zip(bounds, bounds[1:])):
        c = s.conns[i % len(s.conns)]
        tconn[c.qp].post_write(rng.randrange(c.n_streams), lkey, a, b - a, a, rkey, wr_id=100 + i)
    done = []

    def completion(host, t, c):
        done.append((t, int(c.status)))
        if len(done) == len(bounds) - 1:
            fab.sim.stop()
    fab.hosts[0].on_completion = completion
    fab.hosts[0].kick()
    ideal = cfg.nbytes * 8 / cfg.limit_bps
    fab.sim.run(until=cfg.max_time if cfg.max_time is not None else 50 * ideal + 2000 * cfg.rtt)
    t = max((d[0] for d in done), default=None)
    ok = len(done) == len(bounds) - 1 and all(st == 0 for _, st in done) and bytes(dst) == src
    goodput = cfg.nbytes * 8 / t if t and ok else 0.0
    st = tx.stats
    link = fab.links[INTO].stats
    return {"ok": ok, "goodput_vs_limit": round(goodput / cfg.limit_bps, 4), "goodput_gbps": round(goodput / 1e9, 4),
            "sim_time_s": t,
            "sender": {"frames": fab.hosts[0].stats["tx"], "retransmitted": st.get("retransmitted", 0),
                       "probes": st.get("probes_sent", 0), "timeouts": st.get("timeouts", 0)},
            "fabric": {"lost": link["lost"], "duplicated": link["duplicated"], "ce_marked": fab.marks()}}
