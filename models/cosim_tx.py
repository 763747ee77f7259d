"""Closed-loop co-simulation in the transmit direction (docs/spec/hw-engine.md MR-ENG-125..127):
the engine's TX half (``Tx``, the RTL under Verilator or its cycle model
:class:`~metaroce.models.tx.TxCycleModel`) is the sender on host ``h0``, a reference
:class:`~metaroce.models.endpoint.Endpoint` receives on ``h1`` across the same fabric as the
receive direction's (:func:`~metaroce.models.cosim.build_fabric`: multipath, loss, reordering
and duplication of data frames on the link into ``h1``), and the receiver's ACK and NAK frames
come back through the fabric into the engine's ``s_ack`` (:func:`~metaroce.models.tx_cases.ack_record`).
What the engine sends next depends on those ACKs: the loop is closed.

Time as MR-ENG-121: cycle ``n`` is fabric time ``n / CLOCK_HZ``, the link ``width x CLOCK_HZ``;
the engine's ``now`` is the cycle's time in integer nanoseconds. Each cycle the fabric runs up
to the cycle's time; the ACK frames that reached ``h0`` are decoded into ``s_ack`` records and
offered one per cycle in arrival order (an ACK counts from its last bit). The MAC
(:class:`~metaroce.models.cosim.FabricMac`, ``cfg.mac_cut_through``) puts a frame on ``h0``'s
link from its first beat on ``m_axis``, ``m_axis.tready`` low while the link is behind (the
per-frame overhead); with ``mac_cut_through`` False (the earlier harness) a frame whose last
beat leaves ``m_axis`` in cycle ``n`` is handed to ``h0``'s NIC then, which serialises it again,
and ``m_axis.tready`` is low while one frame waits beyond the NIC's own queue.

:class:`TxCosim` is a traffic driver (``inputs``, ``observe``, ``settle``, ``finished``) for the
lockstep loop of :mod:`metaroce.tb.lockstep` or :func:`run_model`: the connections' templates on
``s_cfg``, then the work requests on ``s_wr`` (all posted at time 0), the loop, then the
retransmit unit's counters through ``reg_addr``. :meth:`TxCosim.result` checks (MR-ENG-126)
and summarises with the fields of the receive direction's result.

models/ never imports hdl/.
"""
from __future__ import annotations

import collections
import hashlib
import random
from dataclasses import asdict

from . import codec
from . import protocol as P
from .cosim import (CLOCK_HZ, INTO, Config, FabricMac, RtlPeer, _source, build_fabric, fabric_to,
                    reference_receiver, run_loop, write_bounds)
from .dma_read_cases import HostMemory, Layout
from .driver import CounterReadout
from .retransmit import CTR
from .tx import TX_CTR_BASE
from .rx import pack, unpack
from .rx_cases import LOCAL_ADDR, PEER_ADDR
from .tx import SMALL, TxCycleModel, layouts, template_of
from .tx_cases import ack_record, frames_of_beats
from .tx_sched import OP_WRITE
from .tx_sched_cases import wr_item
from .wire import MrdhFlag

__all__ = ["TX_CONFIG", "TxCosim", "run_model", "tx_model", "QP_RX", "QP_TX"]

#: MR-ENG-125: what the TX direction's Config takes from the engine's small instance: its MTU
#: (models.tx.SMALL, 1,024 bytes) and its two connections; the receiver ACKs every 4 packets
#: of a path, or after its delayed-ACK time.
TX_CONFIG = {"mtu_log2": SMALL["mtu"].bit_length() - 1, "n_conns": SMALL["conns"], "ack_every": 4}
#: the receiver's connection ids (the engine's ``dest_qp``) and the engine's (its ACKs' DestQP)
QP_RX, QP_TX = 0x100, 0x800100


def tx_model(width):
    """The engine's TX half as built for the loop: the block ``tx`` (models.tx.SMALL)."""
    return TxCycleModel(width, **SMALL)


def check_config(cfg: Config):
    """MR-ENG-125: a TX-direction run's Config fits the instance (``ValueError`` otherwise)."""
    cfg.validate()
    if 1 << cfg.mtu_log2 != SMALL["mtu"]:
        raise ValueError(f"the TX engine's MTU is {SMALL['mtu']} bytes: mtu_log2 must be "
                         f"{TX_CONFIG['mtu_log2']}, not {cfg.mtu_log2}")
    if not 1 <= cfg.n_conns <= SMALL["conns"]:
        raise ValueError(f"the TX engine has {SMALL['conns']} connections: n_conns must be in "
                         f"1..{SMALL['conns']}")


class _TxLoop(CounterReadout):
    """The loop, cycle by cycle: the templates and work requests, the fabric, the ACK path into
    ``s_ack``, the frames out of ``m_axis``, the host memory on ``m_axi``; then the retransmit
    unit's counters (``reg_addr``/``reg_data``)."""

    QUIET = 64

    def __init__(self, cfg, fab, items, tmpls, mem, lay):
        self.cfg, self.fab, self.items, self.tmpls, self.mem, self.lay = cfg, fab, items, tmpls, mem, lay
        self.host = fab.hosts[0]
        self.peer = self.host.ep
        # MR-ENG-125: m_axis into the host's link (the ACKs reach s_ack whole, at their last bit)
        self.mac = FabricMac(self.host, cfg.mac_cut_through, width=cfg.width)
        self.nb = cfg.width // 8
        self.period = 1.0 / CLOCK_HZ
        self.cycle = 0
        self.ci = self.wi = 0
        self.acks = collections.deque()
        self.beats = []
        self.cqe = []                   # (time, record)
        self.errors = []
        self.res = {"frames": 0, "retransmits": 0, "acks_taken": 0, "naks_taken": 0, "ack_frames": 0,
                    "mac_stalls": 0, "peak_acks_queued": 0, "counters": None, "cycles": 0}
        self.qp_conn = {QP_TX + t["conn"]: t["conn"] for t in tmpls}
        self.t_done = None
        # the unit's counters the TX top maps (MR-TX-181: not tail_probes, the address is 4 bits)
        self.n_counters = TX_CTR_BASE
        self.read_counters = True
        self.quiet_cycles = self.QUIET
        self.limit = float("inf")      # the fabric time bound below instead
        ideal = cfg.nbytes * 8 / cfg.limit_bps
        self.max_time = cfg.max_time if cfg.max_time is not None else 50 * ideal + 2000 * cfg.rtt
        self._readout_reset()

    @property
    def all_done(self):
        return len(self.cqe) >= len(self.items)

    @property
    def sent_all(self):
        return self.all_done and not self.acks and not self.beats and not self.peer.tx and self.mem.idle

    def _acks_in(self):
        rx = self.peer.rx
        while rx:
            f = codec.decode(rx.popleft())
            self.res["ack_frames"] += 1
            conn = self.qp_conn.get(f.bth.dest_qp)
            if conn is not None and (f.mrah is not None or f.mrnh is not None):
                self.acks.append(ack_record(f, conn))
        if len(self.acks) > self.res["peak_acks_queued"]:
            self.res["peak_acks_queued"] = len(self.acks)

    def inputs(self):
        fabric_to(self.fab, self.cycle)
        if self.peer.rx:
            self._acks_in()
        lay = self.lay
        inp = {"s_wr__valid": 0, "s_wr__payload": 0, "s_ack__valid": 0, "s_ack__payload": 0,
               "s_cfg__valid": 0, "s_cfg__payload": 0, "m_cqe__ready": 1, "m_error__ready": 1,
               "now": (self.cycle * 32 // 5) & P.TIME_MASK,        # 6.4 ns a cycle (MR-ENG-121)
               "reg_addr": self._readout_addr() if self._phase else 0,
               "m_axis__tready": int(self.mac.can_send(self.cycle * self.period))}
        if self.ci < len(self.tmpls):
            inp.update({"s_cfg__valid": 1, "s_cfg__payload": pack(lay.cfg, self.tmpls[self.ci])})
        elif self.wi < len(self.items):
            inp.update({"s_wr__valid": 1, "s_wr__payload": pack(lay.sched.wr, self.items[self.wi])})
        if self.acks:
            inp.update({"s_ack__valid": 1, "s_ack__payload": pack(lay.rtx.ack, self.acks[0])})
        self.mem.inputs(inp, self.cycle)
        return inp

    def observe(self, inp, out):
        self.mem.observe(inp, out, self.cycle)
        if self._readout_observe(out):
            return
        if inp["s_cfg__valid"] and out["s_cfg__ready"]:
            self.ci += 1
        if inp["s_wr__valid"] and out["s_wr__ready"]:
            self.wi += 1
        if inp["s_ack__valid"] and out["s_ack__ready"]:
            a = self.acks.popleft()
            self.res["naks_taken" if a["nak"] else "acks_taken"] += 1
        if out["m_axis__tvalid"]:
            if inp["m_axis__tready"]:
                self.beats.append((out["m_axis__tdata"], out["m_axis__tkeep"]))
                if out["m_axis__tlast"]:
                    self._frame(frames_of_beats(self.beats, self.nb)[0],
                                (self.cycle - len(self.beats) + 1) * self.period)
                    self.beats = []
            else:
                self.res["mac_stalls"] += 1
        if out["m_cqe__valid"] and inp["m_cqe__ready"]:
            self.cqe.append((self.cycle * self.period, unpack(self.lay.sched.cqe, out["m_cqe__payload"])))
            if self.all_done and self.t_done is None:
                self.t_done = self.cycle * self.period
        if out["m_error__valid"] and inp["m_error__ready"]:
            self.errors.append(unpack(self.lay.rtx.error, out["m_error__payload"]))
        self.cycle += 1

    def _frame(self, raw, first):
        f = codec.decode(raw)
        self.res["frames"] += 1
        if f.mrdh is not None and f.mrdh.flags & MrdhFlag.RETX:
            self.res["retransmits"] += 1
        self.mac.send(raw, first, frame=f)

    def settle(self, busy):
        super().settle(busy)
        if not self._phase and self.cycle * self.period > self.max_time:
            raise AssertionError(
                f"closed loop stuck: {len(self.cqe)} of {len(self.items)} WRs completed after "
                f"{self.cycle} cycles ({self.cycle * self.period * 1e3:.3f} ms simulated), "
                f"{self.res['frames']} frames sent, {len(self.acks)} ACKs queued")


class TxCosim:
    """The TX direction's closed-loop driver (MR-ENG-125): the engine (``h0``) writes the source
    buffer in ``cfg.n_writes`` WRITEs over ``cfg.n_conns`` connections and both streams to a
    reference receiver (``h1``). After ``finished``, :meth:`result`."""

    def __init__(self, cfg: Config):
        from metaroce.sim.topology import host_addr
        check_config(cfg)
        self.cfg = cfg
        assert (host_addr(0), host_addr(1)) == (PEER_ADDR, LOCAL_ADDR)
        rng = random.Random(cfg.seed)
        self.fab = fab = build_fabric(cfg)
        # the receiver: the reference endpoint, its rate-hint pushes off (the TX engine takes no hint)
        self.receiver = rx = reference_receiver(cfg, timer=True, hints=False)
        self.dst = bytearray(cfg.nbytes)
        rkey = rx.reg_mr(self.dst)
        eth = codec.Eth()
        streams, paths = SMALL["streams"], SMALL["paths"]
        self.tmpls = []
        for c in range(cfg.n_conns):
            pkey = 0x8000 | rng.getrandbits(15)
            rx.connect(QP_RX + c, PEER_ADDR, QP_TX + c, paths=paths, streams=streams, pkey=pkey,
                       peer_init_psn=0)            # the engine's paths start at PSN 0 (MR-TX-012)
            # MR-CONN-004: each path's entropy a UDP source port, drawn distinct
            sports = rng.sample(range(0xC000, 0x10000), paths)
            self.tmpls.append(template_of(c, eth_dst=eth.dst, eth_src=eth.src, ip_src=PEER_ADDR,
                                          ip_dst=LOCAL_ADDR, sports=sports, pkey=pkey,
                                          dest_qp=QP_RX + c, ip_dscp=codec.IP().dscp, ip_ecn=2,
                                          ip_ttl=codec.IP().ttl))
        self.source = _source(random.Random(cfg.seed + 3), cfg.nbytes)
        mem_lay = Layout(cfg.nbytes + 4096)
        mem = HostMemory(mem_lay, cfg.width, random.Random(cfg.seed + 5), p_bp=cfg.axi_bp,
                         p_gap=cfg.axi_bp, latency=cfg.latency, image=self.source)
        bounds = write_bounds(cfg, rng)
        self.items = []
        for i, (a, b) in enumerate(zip(bounds, bounds[1:])):
            conn = i % cfg.n_conns
            stream = (i // cfg.n_conns) % streams
            self.items.append(wr_item(conn, stream, b - a, wr_id=100 + i, op=OP_WRITE,
                                      laddr=mem_lay.base + a, va=a, rkey=rkey))
        fab.hosts[0].ep = RtlPeer(PEER_ADDR)
        fab.hosts[1].ep = rx
        self.lay = layouts(*(SMALL[k] for k in ("conns", "streams", "paths", "depth", "pool")))
        self.loop = _TxLoop(cfg, fab, self.items, self.tmpls, mem, self.lay)
        self.mem = mem

    @property
    def finished(self):
        return self.loop.finished

    def inputs(self):
        return self.loop.inputs()

    def observe(self, inp, out):
        self.loop.observe(inp, out)

    def settle(self, busy):
        self.loop.settle(busy)

    def counters(self):
        """The retransmit unit's counters (MR-TX-040) by name, read after the loop."""
        got = self.loop.res["counters"] or []
        return {name: got[i] for name, i in CTR.items() if i < len(got)}

    def result(self):
        """MR-ENG-126: the run's checks and figures, the receive direction's fields first. ``ok``:
        the receiver's memory equals the source (``sha256_match``), every WR completed once with
        success, no retry-limit report, every frame the engine sent decoded."""
        cfg, loop = self.cfg, self.loop
        got = bytes(self.dst)
        sha_src = hashlib.sha256(self.source).hexdigest()
        sha_dst = hashlib.sha256(got).hexdigest()
        wrs = sorted(c["wr_id"] for _, c in loop.cqe)
        wrs_ok = (wrs == sorted(w["wr_id"] for w in self.items)
                  and all(c["status"] == 0 for _, c in loop.cqe))
        t = loop.t_done
        goodput = cfg.nbytes * 8 / t if t else 0.0
        limit = cfg.limit_bps
        link = self.fab.links[INTO].stats
        rst = self.receiver.stats
        ok = sha_src == sha_dst and wrs_ok and not loop.errors
        return {
            "ok": bool(ok), "sha256_match": sha_src == sha_dst, "bytes": cfg.nbytes,
            "goodput_vs_limit": round(goodput / limit, 4), "cycles": loop.cycle,
            "sha256": sha_dst, "wrs": len(self.items), "wrs_completed_ok": wrs_ok,
            "goodput_gbps": round(goodput / 1e9, 4), "limit_gbps": round(limit / 1e9, 4),
            "link_gbps": cfg.link_bps / 1e9, "clock_mhz": CLOCK_HZ / 1e6, "width": cfg.width,
            "sim_time_s": t,
            "fabric": {"lost": link["lost"], "duplicated": link["duplicated"], "delayed": link["delayed"],
                       "ce_marked": self.fab.marks(), "switch_drops": self.fab.switch_drops()},
            "receiver": {"data_packets": rst.get("rx_data_packets", 0), "acks_sent": rst.get("acks_sent", 0),
                         "naks_sent": rst.get("naks_sent", 0), "duplicates": rst.get("duplicates", 0),
                         "duplicate_chunks": rst.get("duplicate_chunks", 0), "drops": rst.get("drops", 0)},
            "engine": {"frames": loop.res["frames"], "retransmits": loop.res["retransmits"],
                       "acks_taken": loop.res["acks_taken"], "naks_taken": loop.res["naks_taken"],
                       "mac_stall_cycles": loop.res["mac_stalls"],
                       "peak_acks_queued": loop.res["peak_acks_queued"],
                       "retry_errors": len(loop.errors), "retransmit_counters": self.counters()},
            "config": {k: (list(v) if isinstance(v, tuple) else v) for k, v in asdict(cfg).items()},
        }


def run_model(cfg: Config, *, max_cycles=None):
    """The TX-direction loop with :class:`~metaroce.models.tx.TxCycleModel` as the engine (no
    simulator): returns :meth:`TxCosim.result`."""
    model = tx_model(cfg.width)
    return run_loop(TxCosim(cfg), model, model.active, max_cycles=max_cycles).result()
