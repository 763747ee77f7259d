"""The whole engine's traffic driver (docs/spec/hw-engine.md MR-ENG-137..): every port of
``Engine`` (``EngineModel.port_names()``) driven from one seed, the MAC attached to a
:class:`Loopback` (the engine writes to itself) or, for two engines, to a fabric host.

:class:`EngineLoop`: phase 0 writes the receive half's rows through AXI4-Lite (``setup``'s
writes, :class:`~metaroce.models.regs_cases.Driver`) and the connections' templates on
``s_cfg``; phase 1 posts the work requests on ``s_wr`` and runs the MAC both ways: the frames of
``mac.rx`` become ``s_axis`` beats, every frame leaving ``m_axis`` goes to ``mac.send``; the
placement memory is an AXI4 write slave (:class:`~metaroce.models.dma_write_cases.HostMemory`),
the payload memory an AXI4 read slave (:class:`~metaroce.models.dma_read_cases.HostMemory`);
random backpressure on every output. Finished when every work request has completed and the
engine and the MAC have been quiet for a while.

:func:`loopback_run` builds a loopback run: one connection whose template sends to itself
(the receive half's row of the same connection takes its writes, its ACKs come back to the TX
half), WRITEs of a source buffer to a key region, a share of the frames lost.

models/ never imports hdl/.
"""
from __future__ import annotations

import collections
import hashlib
import random
from dataclasses import asdict

from . import codec
from . import protocol as P
from .cosim import (CLOCK_HZ, INTO, Config, FabricMac, RtlPeer, build_fabric, fabric_to, link_into, run_loop,
                    write_bounds)
from .cosim_tx import check_config
from . import regs_cases as rgc
from .dma_read_cases import HostMemory as ReadMemory
from .dma_read_cases import Layout as ReadLayout
from .dma_write import RESP_OKAY, done_layout
from .dma_write_cases import HostMemory as WriteMemory
from .engine import (AXIL, CQ_RD_OPS, CQ_RX_OPCODES, WC_OF_OP, PairPorts, engine_layouts, engine_offer,
                     engine_init_rd_atomic, engine_peer_check, engine_tx_params, host_completion)
from .engine_cases import _host_window
from .regs import HINT_REG_OF, register_map
from .atomic import result_area_bytes
from .atomic_cases import AtomSlave
from .rx import (MSG_SLOTS as RX_MSG_SLOTS, SMALL as RX_SMALL, WC_COMP_SWAP, WC_FETCH_ADD, WC_RDMA_READ, pack,
                 unpack)
from .rx import RD_SLOTS as RX_RD_SLOTS, TABLE_INIT_DEPTH, TABLE_KEY, TABLE_TX_PSN
from .rx_cases import LOCAL_ADDR, PEER_ADDR, CfgWrite, Setup
from .tx import SMALL, template_of
from .tx_cases import frames_of_beats
from .tx_sched import OP_CMP_SWAP, OP_FETCH_ADD, OP_READ, OP_WRITE
from .tx_sched_cases import wr_item
from .wire import MrdhFlag, Op

__all__ = ["pace_writes", "tx_psn_rows", "psn_first", "psn_wrap_summary", "Loopback", "FabricMac", "EngineLoop", "loopback_run", "check", "atomic_plan", "check_atomics", "run_endpoint_atomics_model", "PeerCosim",
           "run_peer_model", "EndpointCosim", "run_endpoint_model", "ENDPOINT_QP"]


class Loopback:
    """The engine's MAC looped back: every frame sent is received, unless lost (probability
    ``loss``, data frames and ACKs alike)."""

    def __init__(self, loss, rng):
        self.loss, self.rng = loss, rng
        self.rx = collections.deque()
        self.lost = 0

    def can_send(self, t):
        return True

    def send(self, raw, first=None):
        if self.rng.random() < self.loss:
            self.lost += 1
        else:
            self.rx.append(raw)

    idle = True


#: the BTH opcode's byte in a frame the engine sends (Ethernet, IPv4 without options, UDP)
_BTH_OPCODE = 14 + 20 + 8


def _count_hint(counter, raw):
    """MR-ENG-319: an MR_ACK frame's MRAH ``rate_mbps`` (bytes 8..11 after the BTH) counted."""
    if len(raw) > _BTH_OPCODE + 24 and raw[_BTH_OPCODE] == Op.MR_ACK:
        counter[int.from_bytes(raw[_BTH_OPCODE + 20:_BTH_OPCODE + 24], "big")] += 1


def hint_summary(drv):
    """MR-ENG-319: an engine's ACK hints in and out (``{Mb/s: frames}``, keys as strings)."""
    return {k: {str(h): n for h, n in sorted(drv.res[k].items())} for k in ("hints_in", "hints_out")}


class EngineLoop:
    """MR-ENG-137: one engine's ports (module docstring). ``lay``: the engine's layouts (the TX
    half's, ``EngineModel.lay``); ``setup``: the receive half's rows; ``wlay``: the placement
    window; ``tmpls``: the templates; ``items``: the work requests (``laddr`` in ``rlay``, the
    payload memory holding ``image``); ``mac``: ``rx`` (a deque of frames' bytes), ``send(raw)``,
    ``idle``."""

    QUIET = 64

    def __init__(self, width, lay, setup, wlay, tmpls, items, rlay, image, mac, *, seed=0,
                 p_bp=0.2, latency=(1, 40), limit=None, pace=None, hints=None):
        self.width, self.nb, self.lay, self.wlay = width, width // 8, lay, wlay
        # MR-ENG-318: a hinted engine's static inputs (the windows' configuration and the
        # hint its ACKs carry) and its path windows' setup writes, taken before the work
        self.hints = hints
        self.cw_setups, self.cw_i = list(hints["setups"]) if hints else [], 0
        self.rng = random.Random(seed)
        self.p_bp = p_bp
        rmap = register_map(setup.lay)
        rows = [w for cw in setup.writes
                for w in rgc.row_writes(rmap, cw.table, cw.addr, cw.value, name=cw.name)]
        # MR-ENG-260: a paced engine's pacer set up through s_axil after the rows (pace_writes)
        self.pace = pace
        if pace is not None:
            rows += pace_writes(setup.lay, **pace)
        # MR-ENG-341: the receiver's own hint: its and the windows' configuration through the
        # hint window after the rows, the windows' setup writes after them
        self.rx_hint = bool(hints and hints.get("rx_hint"))
        if self.rx_hint:
            rows += hint_writes(setup.lay, hints)
        self.regs = rgc.Driver(rows, seed=seed + 1, p_idle=0.0, p_bp=0.0)
        self.cfg_writes = list(setup.writes)        # the rows written, for the runs' checks
        self.wmem = WriteMemory(wlay, width, random.Random(seed + 2), p_bp=p_bp, latency=latency)
        self.wmem.image = bytearray(wlay.size)
        self.wmem.initial = bytes(self.wmem.image)
        self.rmem = ReadMemory(rlay, width, random.Random(seed + 3), p_bp=p_bp, p_gap=p_bp,
                               latency=latency, image=image)
        # MR-ENG-167: the atomic executor's slave: targets in the placement memory, result rows
        # (MR-ENG-161) in the payload memory beyond the placement window's size (the two test
        # memories share their base), where the TX half reads its responses' 8 bytes
        self.rmem.image = bytearray(self.rmem.image)
        self.atom_base = rlay.base + ((max(len(self.rmem.image), wlay.size) + 4095) & ~4095)
        self.rmem.image.extend(bytes(self.atom_base - rlay.base + result_area_bytes(setup.lay.conns)
                                     - len(self.rmem.image)))
        self.amem = AtomSlave([self.wmem, self.rmem], width, random.Random(seed + 4), p_bp=p_bp,
                              latency=latency)
        self.tmpls, self.items, self.mac = list(tmpls), list(items), mac
        self.done_layout = done_layout(setup.lay.conns)
        self.rx_lay = setup.lay
        self.mtu = setup.mtu
        # MR-ENG-145: the READs this engine answers, {(stream, msg): (host address, length)}
        # (None: no check), and the offsets of each one's response frames seen on m_axis
        self.served = None
        self.rsp_seen = collections.defaultdict(set)
        self.psns = collections.defaultdict(set)       # MR-ENG-307: {UDP source port: data PSNs}
        self.cycle = 0
        self.phase = 0
        self.ci = self.wi = 0
        self.beats = collections.deque()
        self.out_beats = []
        self.quiet = 0
        self._rd_names = None
        self.limit = limit if limit is not None else 200_000 + 50 * sum(w["length"] for w in items)
        self.res = {"frames_out": 0, "frames_in": 0, "tx_cqe": [], "rx_cqe": [], "done": 0,
                    "done_errors": 0, "errors": [], "bypass": 0, "peak_mac_beats": 0,
                    "read_cqe": [], "rsp_frames": 0, "rsp_errors": [], "requester_on_cqe": 0}
        # MR-ENG-196: the engine joins a READ's two records into one on m_tx_cqe (EngineModel's
        # and Engine's default); False: the earlier two records (the READ's on m_cqe)
        self.cq_join = True
        self._idle = {"s_axis__tdata": 0, "s_axis__tkeep": 0, "s_axis__tvalid": 0, "s_axis__tlast": 0,
                      "s_axis__tuser": 0,
                      "s_wr__valid": 0, "s_wr__payload": 0, "s_cfg__valid": 0, "s_cfg__payload": 0,
                      **{"s_axil__" + n: 0 for n in AXIL}, "s_axil__bready": 1, "s_axil__rready": 1}
        if hints:
            self._idle.update({"s_cw_setup__valid": 0, "s_cw_setup__payload": 0})
            if not self.rx_hint:
                self._idle.update({**hints["cc"], "ack_hint_mbps": hints["hint"]})
            # MR-ENG-319: the MRAH hints of the ACK frames in and out, {Mb/s: frames}
            self.res.update(cw_setups=0, hints_in=collections.Counter(), hints_out=collections.Counter())

    @property
    def finished(self):
        return self.phase == 2

    def _mac_in(self):
        rx = self.mac.rx
        nb = self.nb
        while rx:
            f = rx.popleft()
            self.res["frames_in"] += 1
            if self.hints is not None:
                _count_hint(self.res["hints_in"], f)
            n = -(-len(f) // nb)
            for j in range(n):
                chunk = f[j * nb:(j + 1) * nb]
                self.beats.append((int.from_bytes(chunk, "little"), (1 << len(chunk)) - 1, int(j == n - 1)))
        if len(self.beats) > self.res["peak_mac_beats"]:
            self.res["peak_mac_beats"] = len(self.beats)

    def inputs(self):
        if self.mac.rx:
            self._mac_in()
        rng = self.rng
        inp = self._idle.copy()
        inp["now"] = (self.cycle * 32 // 5) & P.TIME_MASK        # 6.4 ns a cycle (MR-ENG-121)
        if self.phase == 0 and not self.regs.finished:
            r = self.regs.inputs()
            inp.update({k: v for k, v in r.items() if k.startswith("s_axil__")})
        if self.cw_i < len(self.cw_setups) and (not self.rx_hint or self.regs.finished):
            # MR-ENG-318: the windows opened first (MR-ENG-341: once configured)
            inp.update({"s_cw_setup__valid": 1,
                        "s_cw_setup__payload": pack(self.lay.cw.setup, self.cw_setups[self.cw_i])})
        if self.ci < len(self.tmpls):
            inp.update({"s_cfg__valid": 1, "s_cfg__payload": pack(self.lay.cfg, self.tmpls[self.ci])})
        elif self.phase == 1 and self.wi < len(self.items):
            inp.update({"s_wr__valid": 1, "s_wr__payload": pack(self.lay.sched.wr, self.items[self.wi])})
        if self.beats:
            d, k, last = self.beats[0]
            inp.update({"s_axis__tvalid": 1, "s_axis__tdata": d, "s_axis__tkeep": k, "s_axis__tlast": last})
        for n in ("m_axis__tready", "m_bypass__tready", "m_done__ready", "m_cqe__ready",
                  "m_tx_cqe__ready", "m_error__ready"):
            inp[n] = int(rng.random() >= self.p_bp)
        if not self.mac.can_send(self.cycle / CLOCK_HZ):
            inp["m_axis__tready"] = 0
        self.wmem.inputs(inp, self.cycle)
        inp["atom_base"] = self.atom_base
        self.amem.inputs(inp, self.cycle)
        rd = {}
        self.rmem.inputs(rd, self.cycle)
        inp.update({"m_axi_rd__" + k[7:]: v for k, v in rd.items()})
        return inp

    def observe(self, inp, out):
        self.wmem.observe(inp, out, self.cycle)
        self.amem.observe(inp, out, self.cycle)
        if self._rd_names is None:      # the read port's names, once (per cycle it cost the most)
            self._rd_names = [[(k, "m_axi__" + k[10:]) for k in d if k.startswith("m_axi_rd__")]
                              for d in (inp, out)]
        (ri, ro), g, go = self._rd_names, inp.get, out.get
        self.rmem.observe({n: g(k) for k, n in ri}, {n: go(k) for k, n in ro}, self.cycle)
        res = self.res
        if self.phase == 0 and not self.regs.finished:
            self.regs.observe({**inp, "m_cfg__ready": 1, "reg_data": 0},
                              {**out, "m_cfg__valid": 0, "m_cfg__payload": 0, "reg_addr": 0})
        if inp["s_cfg__valid"] and out["s_cfg__ready"]:
            self.ci += 1
        if inp.get("s_cw_setup__valid") and out["s_cw_setup__ready"]:
            self.cw_i += 1
            res["cw_setups"] += 1
        if inp["s_wr__valid"] and out["s_wr__ready"]:
            self.wi += 1
            res.setdefault("wr_at", inp["now"])     # MR-ENG-261: the first work request's now
        if inp["s_axis__tvalid"] and out["s_axis__tready"]:
            self.beats.popleft()
        if out["m_axis__tvalid"] and inp["m_axis__tready"]:
            self.out_beats.append((out["m_axis__tdata"], out["m_axis__tkeep"]))
            if out["m_axis__tlast"]:
                res["frames_out"] += 1
                raw = frames_of_beats(self.out_beats, self.nb)[0]
                if self.hints is not None:
                    _count_hint(res["hints_out"], raw)
                if raw[_BTH_OPCODE] not in (Op.MR_ACK, Op.MR_NAK):
                    # MR-ENG-261: a data frame's connection (its DestQP, the loopback's
                    # templates') and the now of the cycle its last beat left, and its length
                    qp = int.from_bytes(raw[_BTH_OPCODE + 5:_BTH_OPCODE + 8], "big")
                    res.setdefault("left", []).append((qp, inp["now"], len(raw)))
                    # MR-ENG-307: each path's (UDP source port's) data PSNs, for the wrap runs
                    sport = int.from_bytes(raw[_BTH_OPCODE - 8:_BTH_OPCODE - 6], "big")
                    self.psns[sport].add(int.from_bytes(raw[_BTH_OPCODE + 9:_BTH_OPCODE + 12], "big"))
                if self.served is not None and len(raw) > _BTH_OPCODE and raw[_BTH_OPCODE] == Op.MR_READ_RESP:
                    self._check_response(raw)
                self.mac.send(raw, (self.cycle - len(self.out_beats) + 1) / CLOCK_HZ)
                self.out_beats = []
        if out["m_tx_cqe__valid"] and inp["m_tx_cqe__ready"]:
            c = unpack(self.lay.sched.cqe, out["m_tx_cqe__payload"])
            res["tx_cqe"].append((self.cycle, c))
            if self.cq_join and c["op"] in CQ_RD_OPS:     # MR-ENG-198: the READ's one completion
                res["read_cqe"].append((self.cycle, c))
        if out["m_cqe__valid"] and inp["m_cqe__ready"]:
            res["rx_cqe"].append(out["m_cqe__payload"])
            c = unpack(self.rx_lay.cqe, out["m_cqe__payload"])
            if self.cq_join and c["opcode"] in CQ_RX_OPCODES:
                res["requester_on_cqe"] += 1        # MR-ENG-197: the join's, never the host's
            # MR-RX-112: a READ of this engine completed; MR-RX-159: an atomic
            elif c["opcode"] in (WC_RDMA_READ, WC_COMP_SWAP, WC_FETCH_ADD):
                res["read_cqe"].append((self.cycle, c))
        if out["m_done__valid"] and inp["m_done__ready"]:
            res["done"] += 1
            if unpack(self.done_layout, out["m_done__payload"])["error"] != RESP_OKAY:
                res["done_errors"] += 1
        if out["m_error__valid"] and inp["m_error__ready"]:
            res["errors"].append(out["m_error__payload"])
        if out["m_bypass__tvalid"] and inp["m_bypass__tready"] and out["m_bypass__tlast"]:
            res["bypass"] += 1
        self.cycle += 1

    @property
    def reads(self):
        """The READ work requests among the items (each completes twice: its request's delivery
        on ``m_tx_cqe``, MR-TXS-064, and the READ on ``m_cqe``, MR-RX-112)."""
        return [w for w in self.items if w["op"] in (OP_READ, OP_CMP_SWAP, OP_FETCH_ADD)]

    def serve(self, entries):
        """MR-ENG-145: check every READ response frame the engine sends against ``entries``
        ``{(stream, msg): (host address, length)}``: the READs the peer posts to it."""
        self.served = dict(entries)

    def _check_response(self, raw):
        """One MR_READ_RESP frame leaving ``m_axis``: it answers a READ the peer posted, its
        message length is the READ's, its payload the payload memory's bytes at the READ's
        address + its offset, FIRST and LAST where the message starts and ends."""
        res = self.res
        res["rsp_frames"] += 1
        f = codec.decode(raw)
        key = (f.mrdh.stream, f.mrdh.msg)
        if key not in self.served:
            res["rsp_errors"].append(f"a response to no READ {key}")
            return
        addr, length = self.served[key]
        off, pay = f.mrdh.offset, bytes(f.payload)
        first, last = f.mrdh.flags & MrdhFlag.FIRST, f.mrdh.flags & MrdhFlag.LAST
        why = ("message length" if f.mrdh.msg_len != length else
               "beyond the READ" if off + len(pay) > length or off % self.mtu else
               "FIRST/LAST flags" if bool(first) != (off == 0) or bool(last) != (off + len(pay) == length) else
               "payload bytes" if pay != bytes(self.rmem.read(addr + off, len(pay))) else None)
        if why:
            res["rsp_errors"].append(f"READ {key} offset {off}: {why}")
        self.rsp_seen[key].add(off)

    def responses_ok(self):
        """MR-ENG-145: no bad response frame, and every served READ's chunks all sent."""
        if self.served is None:
            return True
        want = {k: set(range(0, n, self.mtu)) or {0} for k, (_, n) in self.served.items()}
        return not self.res["rsp_errors"] and all(self.rsp_seen[k] >= v for k, v in want.items())

    def wrs_ok(self):
        """Every work request completed once with success on ``m_tx_cqe``, each stream's in
        posting order (MR-EXO-004, MR-ENG-201), and every READ once with success and its length
        (with the join, MR-ENG-198: its one record on ``m_tx_cqe``, no requester record on
        ``m_cqe``; without, on ``m_cqe``, MR-RX-112)."""
        res = self.res
        ok = (sorted(c["wr_id"] for _, c in res["tx_cqe"]) == sorted(w["wr_id"] for w in self.items)
              and all(c["status"] == 0 for _, c in res["tx_cqe"]) and self.posting_order_ok()
              and res["requester_on_cqe"] == 0)
        reads = {w["wr_id"]: w["length"] for w in self.reads}
        got = [(c["wr_id"], c["length"], c["status"]) for _, c in res["read_cqe"]]
        return ok and sorted(got) == sorted((w, n, 0) for w, n in reads.items())

    def completions(self):
        """MR-ENG-202: the host's work completions in the order taken from ``m_tx_cqe``:
        ``[(stream, wr_id, status, opcode, byte_len)]`` (:func:`host_completion`)."""
        return [host_completion(c) for _, c in self.res["tx_cqe"]]

    def posting_order_ok(self):
        """MR-ENG-201: each stream's completions are its work requests' ``wr_id``s in posting
        order."""
        posted = completions_by_stream([(w["stream"], w["wr_id"]) for w in self.items], ids=True)
        return completions_by_stream(self.completions(), ids=True) == posted

    @property
    def all_done(self):
        if self.cq_join:
            return len(self.res["tx_cqe"]) >= len(self.items)
        return (len(self.res["tx_cqe"]) >= len(self.items)
                and len(self.res["read_cqe"]) >= len(self.reads))

    def settle(self, busy):
        if self.phase == 0:
            if not self.regs.finished:
                self.regs.settle(False)
            if self.regs.finished and self.ci >= len(self.tmpls) and self.cw_i >= len(self.cw_setups):
                self.phase = 1
            return
        if self.phase == 2:
            return
        if (self.all_done and not self.beats and not self.mac.rx and self.mac.idle and self.wmem.idle
                and self.rmem.idle and self.amem.idle and not (busy() if callable(busy) else busy)):
            self.quiet += 1
            if self.quiet > self.QUIET:
                self.phase = 2
        else:
            self.quiet = 0
        if self.cycle > self.limit:
            raise AssertionError(f"no progress after {self.cycle} cycles: {len(self.res['tx_cqe'])} of "
                                 f"{len(self.items)} work requests completed, {self.res['frames_out']} frames out")


def pace_writes(rx_lay, *, mtu_wl, line_mbps, rates):
    """MR-ENG-260: the host's AXI4-Lite writes that set up a paced engine's pacer (the pacing
    window, hw-regs.md MR-REG-062..064): the static configuration first (a rate's gap is
    computed when the rate is written, MR-CW-097), then per connection of ``rates`` ``{conn:
    Mb/s}`` (0: the line rate) its open: the rate with ``set_time``, the next send time 0."""
    rmap = register_map(rx_lay, pacing=True)
    off = lambda name: rmap.get(name).offset            # noqa: E731
    out = [rgc.Write(off("PACE_MTU_WL"), mtu_wl, name="pace.mtu_wl"),
           rgc.Write(off("PACE_LINE_MBPS"), line_mbps, name="pace.line_mbps")]
    for conn, rate in rates.items():
        out += [rgc.Write(off("PACE_CONN"), conn, name=f"pace.{conn}.conn"),
                rgc.Write(off("PACE_RATE"), rate, name=f"pace.{conn}.rate"),
                rgc.Write(off("PACE_TIME"), 0, name=f"pace.{conn}.time"),
                rgc.Write(off("PACE_COMMIT"), 0b11, name=f"pace.{conn}.open")]
    return out


def completions_by_stream(comps, ids=False):
    """MR-ENG-202: completions ``[(stream, wr_id, ...)]`` per stream, each stream's in the order
    given (``ids``: the ``wr_id``s only): the order verbs defines (MR-EXO-004), streams being
    independent."""
    out = collections.defaultdict(list)
    for c in comps:
        out[c[0]].append(c[1] if ids else tuple(c))
    return dict(out)


def completions_digest(comps):
    """MR-ENG-202: a digest of ``completions_by_stream(comps)`` (the streams in order), equal for
    two hosts whose every stream completed the same work requests in the same order with the
    same status, opcode and length."""
    per = completions_by_stream(comps)
    return hashlib.sha256(repr(sorted(per.items())).encode()).hexdigest()[:16]


def tx_psn_rows(qp, psn, paths=SMALL["paths"]):
    """MR-ENG-306: the table 9 rows (MR-ENG-302) that start every path of connection ``qp``'s
    sends at ``psn``, written through the register block's row window with the setup's rows."""
    return [CfgWrite(TABLE_TX_PSN, qp * paths + p, psn, f"txpsn{qp}.{p}") for p in range(paths)]


def psn_wrap_summary(drv, init_psn):
    """MR-ENG-307: an engine's data frames by path (UDP source port) around the 24-bit wrap of a
    run whose paths start at ``init_psn``: ``{"paths", "wrapped", "frames_before", "frames_after"}``
    (``wrapped``: paths that sent both 2^24 - 1 and a PSN below ``init_psn``, i.e. crossed it)."""
    top = (1 << 24) - 1
    before = sum(sum(1 for q in ps if q >= init_psn) for ps in drv.psns.values())
    after = sum(sum(1 for q in ps if q < init_psn) for ps in drv.psns.values())
    wrapped = sum(1 for ps in drv.psns.values() if top in ps and any(q < init_psn for q in ps))
    return {"paths": len(drv.psns), "wrapped": wrapped, "frames_before": before, "frames_after": after}


def psn_first(init_psn):
    """MR-ENG-306: a run's first PSN of every path (None: 0, the engines' reset)."""
    return 0 if init_psn is None else init_psn


#: MR-ENG-318: the hinted engine's windows' configuration: beta 1/2, the windows' cap, the 10 Gb/s
#: line of 64 bits at 6.4 ns a cycle (MR-ENG-121), MR-ENG-123's base RTT of 10 us
HINT_CC = {"cc_on": 1, "cc_beta_q": P.Q_ONE // 2, "cc_cap": 1 << 20, "cc_line_mbps": 10_000,
           "cc_base_rtt_ns": 10_000}


def hint_inputs(hint, conns=(1,), rx_hint=None, **cc):
    """MR-ENG-318: ``EngineLoop``'s ``hints``: the windows' configuration (:data:`HINT_CC`,
    ``cc`` overriding), ``hint`` (Mb/s, 0: none) on the engine's ACKs (``ack_hint_mbps``), and
    the path windows of ``conns`` opened by setup writes (``tx_cases.cc_setups`` at the
    engine's window). ``rx_hint`` (MR-ENG-341: ``EngineModel(rx_hint=True)``): the receiver's
    own hint, ``{"line_mbps", "share_ns", "mtu"}`` its configuration; with it ``hint`` is
    unused and everything is written through the hint window (:func:`hint_writes`)."""
    from .engine import engine_tx_params
    from .tx_cases import cc_setups
    params = {**engine_tx_params({}), "conns": SMALL["conns"], "paths": SMALL["paths"]}
    out = {"cc": {**HINT_CC, **cc}, "hint": hint,
           "setups": [w for c in conns for w in cc_setups(params, c)]}
    if rx_hint is not None:
        out.update(rx_hint=True, rx=dict(rx_hint))
    return out


def hint_writes(rx_lay, hints):
    """MR-ENG-341: the host's AXI4-Lite writes of the hint window (hw-regs.md MR-REG-073..075):
    the receiver's hint block's configuration (``hints["rx"]``) and the windows'
    (``hints["cc"]``), each register once."""
    rmap = register_map(rx_lay, eng=True, hint=True)
    vals = {"hint_line_mbps": hints["rx"]["line_mbps"], "hint_share_ns": hints["rx"]["share_ns"],
            "hint_mtu": hints["rx"]["mtu"], **hints["cc"]}
    return [rgc.Write(rmap.get(HINT_REG_OF[n]).offset, v, name=f"hint.{n}") for n, v in vals.items()]


def loopback_run(width, nbytes, *, seed=0, loss=0.05, n_writes=3, p_bp=0.2, latency=(1, 40),
                 ack_every=4, ack_delay=390, verb="write", pace=None, init_depth=None, init_psn=None,
                 hints=None):
    """MR-ENG-137: an engine that writes to itself. Returns ``(driver, setup, region, source)``:
    connection 1 (the one row ``Setup`` gives two connections), 4 paths, 2 streams, PSNs from 0,
    MTU 1,024 (the TX half's); its template addresses the engine itself (DestQP 1); ``n_writes``
    WRITEs of the source to the region of key 0, lost frames (both ways) at ``loss``.

    ``verb`` ``read`` (MR-ENG-145): the engine READs its own memory instead: ``n_writes`` READs
    (:func:`read_plan`; the engine writes their outstanding-read rows, MR-ENG-148) of the source, which its payload
    memory holds at key 0's region, into the region of key 1 (``region``); its receive half
    executes each request and its TX half sends the response, whose frames are checked as
    they leave ``m_axis`` (:meth:`EngineLoop.serve`) and placed by its receive half.

    ``pace`` (MR-ENG-260, WRITEs only): the paced engine's pacer set up through ``s_axil``
    (:func:`pace_writes`' arguments). Every run keeps its data frames (``res["left"]``:
    DestQP, ``now`` of the last beat, length) and the ``now`` its first work request was taken
    (``res["wr_at"]``).
    ``init_depth``: the connection's table 8 row (MR-ENG-272) written at its setup (None: none).
    ``init_psn`` (MR-ENG-306): every path's first PSN, the TX half's through table 9 rows
    (:func:`tx_psn_rows`) and the RX's expected one through the path rows (None: 0, no rows).
    ``hints`` (MR-ENG-318, WRITEs only; :func:`hint_inputs`): the hinted engine's inputs and its
    windows' setup writes."""
    rng = random.Random(seed)
    lay = engine_layouts(hints=hints is not None)
    s = Setup(SMALL["conns"], SMALL["paths"], 256, streams=RX_SMALL["streams"], seed=seed, n_conns=1,
              mtu_log2=10, ack_every=ack_every, ack_delay=ack_delay, uniform_psn=True, n_streams=SMALL["streams"],
              first_psn=psn_first(init_psn))
    s.keys[0].length = max(s.keys[0].length, nbytes + 64)
    if verb == "read":
        s.keys[1].length = max(s.keys[1].length, nbytes + 64)
    wlay = _host_window(s, random.Random(seed + 77))
    c = s.conns[0]
    if init_depth is not None:
        s.writes.append(CfgWrite(TABLE_INIT_DEPTH, c.qp, init_depth, f"depth{c.qp}"))
    if init_psn is not None:
        s.writes += tx_psn_rows(c.qp, init_psn)
    region = s.keys[0]
    eth = 0x02_00_00_00_00_02
    tmpls = [template_of(k, eth_dst=eth, eth_src=eth, ip_src=LOCAL_ADDR, ip_dst=LOCAL_ADDR,
                         sports=rng.sample(range(0xC000, 0x10000), SMALL["paths"]),
                         pkey=c.pkey if k == c.qp else 0xFFFF, dest_qp=k)
             for k in range(SMALL["conns"])]
    source = rng.randbytes(nbytes)
    rlay = ReadLayout(nbytes + 4096)
    cuts = sorted(rng.sample(range(1, nbytes), n_writes - 1)) if n_writes > 1 else []
    bounds = [0, *cuts, nbytes]
    mac = Loopback(loss, random.Random(seed + 9))
    if verb == "atomic":
        items, plan = atomic_plan(s, c.qp, n_writes, random.Random(seed + 5))
        drv = EngineLoop(width, lay, s, wlay, tmpls, items, rlay, source, mac, seed=seed, p_bp=p_bp,
                         latency=latency)
        for addr, value in plan["initial"].items():
            off = addr - wlay.base
            drv.wmem.image[off:off + 8] = value.to_bytes(8, "little")
        return drv, s, plan, None
    if verb == "read":
        pieces = [(i % SMALL["streams"], a, b - a) for i, (a, b) in enumerate(zip(bounds, bounds[1:]))]
        dst = s.keys[1]
        items = read_plan(s, c.qp, pieces, dst, region.rkey)
        drv = EngineLoop(width, lay, s, wlay, tmpls, items, rlay, served_image(region, rlay, source), mac,
                         seed=seed, p_bp=p_bp, latency=latency)
        drv.serve(served_reads(pieces, region))
        return drv, s, dst, source
    items = [wr_item(c.qp, i % SMALL["streams"], b - a, wr_id=100 + i, op=OP_WRITE,
                     laddr=rlay.base + a, va=a, rkey=region.rkey)
             for i, (a, b) in enumerate(zip(bounds, bounds[1:]))]
    drv = EngineLoop(width, lay, s, wlay, tmpls, items, rlay, source, mac, seed=seed, p_bp=p_bp,
                     latency=latency, pace=pace, hints=hints)
    return drv, s, region, source


def _align_keys(setup):
    """MR-ENG-159: the regions' host bases 8-byte aligned, their rows rewritten."""
    for k in setup.keys:
        k.base &= ~7
    rows = {k.rkey & (setup.lay.keys - 1): setup.key_write(k) for k in setup.keys}
    setup.writes = [rows[w.addr] if w.table == TABLE_KEY else w for w in setup.writes]


def atomic_plan(setup, qp, n, rng, wr_base=100):
    """MR-ENG-169: ``n`` atomics (CMP_SWAP or FETCH_ADD, random operands, a compare value that
    matches half the time) of the engine's connection ``qp`` on key 0's region: stream ``i mod``
    the TX half's streams, each stream on one 8-byte target of its own (VA ``8 x stream``), so
    that its atomics run in its message order; atomic ``i``'s original value lands at key 1's
    region + ``8 i``. The regions' host bases are made 8-byte aligned (MR-ENG-159). Returns the
    work requests and the plan ``{initial, targets, final, origs}`` (``origs`` by ``wr_id``:
    ``(laddr, original value, op)``)."""
    _align_keys(setup)
    tgt, dst = setup.keys[0], setup.keys[1]
    streams = SMALL["streams"]
    cur = {st: rng.getrandbits(64) for st in range(streams)}
    initial = {tgt.base + 8 * st: v for st, v in cur.items()}
    items, origs = [], {}
    for i in range(n):
        st = i % streams
        op = rng.choice((OP_CMP_SWAP, OP_FETCH_ADD))
        swap = rng.getrandbits(64)
        compare = (cur[st] if rng.random() < 0.5 else rng.getrandbits(64)) if op == OP_CMP_SWAP else 0
        laddr = dst.base + 8 * i
        items.append(wr_item(qp, st, 8, wr_id=wr_base + i, op=op, laddr=laddr, va=8 * st,
                             rkey=tgt.rkey, swap=swap, compare=compare))
        origs[wr_base + i] = (laddr, cur[st], op)
        cur[st] = P.atomic_apply(op == OP_CMP_SWAP, cur[st], swap, compare)
    final = {tgt.base + 8 * st: v for st, v in cur.items()}
    return items, {"initial": initial, "final": final, "origs": origs, "targets": set(final)}


def check_atomics(drv, plan):
    """MR-ENG-169: every atomic completed once on ``m_tx_cqe`` (its request's delivery) and once
    on ``m_cqe`` (COMP_SWAP / FETCH_ADD, status 0, length 8), its original value placed at its
    ``laddr``, every target's final value the plan's, and each atomic executed once (one write
    of the executor per atomic to the targets, whatever the losses and resends). Returns a
    summary."""
    res = drv.res
    assert drv.wrs_ok(), "every atomic completes once with success on m_tx_cqe and m_cqe"
    # the RX's record (``opcode``), or with the join its one record on m_tx_cqe (``op``, MR-ENG-211)
    ops = {c["wr_id"]: c["opcode"] if "opcode" in c else WC_OF_OP.get(c["op"]) for _, c in res["read_cqe"]}
    img, base = drv.wmem.image, drv.wlay.base
    for wr, (laddr, orig, op) in plan["origs"].items():
        assert ops[wr] == (WC_COMP_SWAP if op == OP_CMP_SWAP else WC_FETCH_ADD), f"wr {wr}: opcode"
        got = int.from_bytes(img[laddr - base:laddr - base + 8], "little")
        assert got == orig, f"wr {wr}: original value {got:#x}, expected {orig:#x}"
    for addr, v in plan["final"].items():
        assert int.from_bytes(img[addr - base:addr - base + 8], "little") == v, f"target {addr:#x}"
    target_writes = [w for w in drv.amem.writes if w[1] in plan["targets"]]
    assert len(target_writes) == len(plan["origs"]), (
        f"{len(target_writes)} executions of {len(plan['origs'])} atomics")
    return {"cycles": drv.cycle, "atomics": len(plan["origs"]), "executions": len(target_writes),
            "lost": drv.mac.lost if hasattr(drv.mac, "lost") else None, "frames_out": res["frames_out"]}


def _msg_numbers(pieces):
    """The message number each piece's work request takes on its stream (every work request of
    the stream a READ: MR-TXS-010 numbers a stream's messages from 0)."""
    seen = collections.Counter()
    out = []
    for stream, _, _ in pieces:
        out.append(seen[stream])
        seen[stream] += 1
    return out


def read_plan(setup, qp, pieces, dst, rkey, wr_base=100):
    """MR-ENG-145: READ work requests (op 4) of ``pieces`` ``[(stream, offset, length)]`` of the
    peer's region ``rkey`` (VA = offset), READ ``i`` landing at ``dst.base`` + offset. Their
    outstanding-read rows (table 6, MR-RX-110) are the engine's to write as each READ is queued
    (MR-ENG-148): the host writes none, so a stream has any number of READs in a run.
    ``setup`` is the engine's rows (unchanged)."""
    return [wr_item(qp, stream, n, wr_id=wr_base + i, op=OP_READ, laddr=dst.base + a, va=a, rkey=rkey)
            for i, (stream, a, n) in enumerate(pieces)]


def served_reads(pieces, region):
    """MR-ENG-145: the READs a peer posts of ``pieces`` of ``region`` as
    :meth:`EngineLoop.serve` takes them: ``{(stream, msg): (host address, length)}``."""
    return {(stream, msg): (region.base + a, n) for (stream, a, n), msg in zip(pieces, _msg_numbers(pieces))}


def served_image(region, rlay, source):
    """The payload memory's image of an engine that answers READs of ``source`` at ``region``:
    the source at the region's address (the TX half reads a response's bytes at the RX's
    ``base + va``, MR-RX-131)."""
    off = region.base - rlay.base
    assert 0 <= off and off + len(source) <= 2 * rlay.size
    return bytes(off) + source


def check(drv, region, source):
    """MR-ENG-137: the region holds the source byte for byte, every work request completed once
    with success (a READ also on ``m_cqe``), every READ response frame sent right and every
    chunk of each (MR-ENG-145), every placement OKAY, no retry-limit report, nothing bypassed.
    Returns a summary."""
    got = region_image(drv, region, len(source))
    assert got == source, "the placed bytes are not the source"
    res = drv.res
    wrs = sorted(c["wr_id"] for _, c in res["tx_cqe"])
    assert wrs == sorted(w["wr_id"] for w in drv.items), "every work request completes once"
    assert all(c["status"] == 0 for _, c in res["tx_cqe"]), "with success"
    assert drv.wrs_ok(), "every READ completes once with success (MR-RX-112)"
    assert drv.responses_ok(), f"READ responses: {res['rsp_errors'][:3]} or chunks never sent"
    assert res["done_errors"] == 0 and not res["errors"] and res["bypass"] == 0
    return {"cycles": drv.cycle, "frames_out": res["frames_out"], "frames_in": res["frames_in"],
            "lost": drv.mac.lost if hasattr(drv.mac, "lost") else None, "placements": res["done"],
            "rsp_frames": res["rsp_frames"], "reads": len(res["read_cqe"])}


def engine_kw(cfg):
    """``EngineModel``'s arguments besides the width for ``cfg`` (its ``chunk_window``; with
    ``cfg.hints``, MR-ENG-319, ``hints``)."""
    kw = {} if cfg.chunk_window is None else {"chunk_window": cfg.chunk_window}
    if cfg.hints is not None:
        kw["hints"] = True
        if cfg.rx_hint:
            kw["rx_hint"] = True            # MR-ENG-341
    return kw


def engine_chunk_window(cfg):
    """MR-ENG-130: the whole engine's chunk window in the run of ``cfg``."""
    return engine_tx_params(engine_kw(cfg))["chunk_window"]


def _writes_of(cfg, nbytes, rng):
    """The WRITEs of ``nbytes`` one side posts, ``[(stream, offset, length)]``: ``cfg.n_writes``
    consecutive pieces of its source (:func:`~metaroce.models.cosim.write_bounds`), WR ``i`` on
    stream ``i mod`` the TX half's streams, each to the same offset of the peer's region. In a
    ``read`` run (MR-ENG-146) the pieces the peer READs (any number: the engine writes their
    outstanding-read rows, MR-ENG-148)."""
    if not nbytes:
        return []
    bounds = write_bounds(Config(nbytes=nbytes, n_writes=min(cfg.n_writes, nbytes)), rng)
    return [(i % SMALL["streams"], a, b - a) for i, (a, b) in enumerate(zip(bounds, bounds[1:]))]


def _side_plan(cfg, seed, nbytes):
    """An engine side's random choices from its ``seed``: each connection's UDP source ports (its
    template) and its WRITEs (:func:`_writes_of`)."""
    rng = random.Random(seed)
    sports = [rng.sample(range(0xC000, 0x10000), SMALL["paths"]) for _ in range(SMALL["conns"])]
    return sports, _writes_of(cfg, nbytes, rng)


def _endpoint_writes(cfg, nbytes):
    """MR-ENG-139: the endpoint's WRITEs (:func:`_writes_of` from ``cfg.seed + 10``)."""
    return _writes_of(cfg, nbytes, random.Random(cfg.seed + 10))


def _engine_side(cfg, seed, nbytes, addr, peer_addr, src_seed, host, *, p_bp, latency,
                 peer_qp=None, peer_rkey=None, into=None, reads=None, served=None, align8=False,
                 init_depth=None):
    """One engine of MR-ENG-138: its rows (``Setup`` of ``cfg.seed``: the same connection and
    keys on both sides), its template towards the peer, its WRITEs of ``nbytes`` to the peer's
    region of key 0, its MAC on ``host``. ``peer_qp``, ``peer_rkey``: the peer's connection id
    and region key when the peer is not an engine of the same rows (MR-ENG-139). Returns
    ``(driver, setup, region, source)``.

    ``cfg.verb`` ``read`` (MR-ENG-146): its ``nbytes`` of source are in its payload memory at
    key 0's region, where the peer READs ``served`` (``[(stream, offset, length)]``, checked on
    ``m_axis``, :meth:`EngineLoop.serve`); it READs ``reads`` of the peer's region (key 0, or
    ``peer_rkey``) into its region of key 1, the returned ``region``. ``init_depth``: the
    connection's initiator depth agreed at the open (MR-ENG-274), written as its table 8 row
    (MR-ENG-272) when below the build's; None: no row (the full depth)."""
    read = cfg.verb == "read"
    s = Setup(SMALL["conns"], SMALL["paths"], 256, streams=RX_SMALL["streams"], seed=cfg.seed, n_conns=1,
              mtu_log2=10, ack_every=cfg.ack_every, ack_delay=cfg.ack_delay_cycles, uniform_psn=True,
              n_streams=SMALL["streams"], first_psn=psn_first(cfg.init_psn))
    s.keys[0].length = max(s.keys[0].length, cfg.nbytes + 64)
    if read:
        s.keys[1].length = max(s.keys[1].length, cfg.nbytes + 64)
    wlay = _host_window(s, random.Random(cfg.seed + 77))
    if align8:
        _align_keys(s)          # MR-ENG-159: atomics need 8-byte aligned host addresses
    c = s.conns[0]
    if init_depth is not None and init_depth < engine_init_rd_atomic(SMALL["streams"], RX_RD_SLOTS):
        s.writes.append(CfgWrite(TABLE_INIT_DEPTH, c.qp, init_depth, f"depth{c.qp}"))
    if cfg.init_psn is not None:
        s.writes += tx_psn_rows(c.qp, cfg.init_psn)      # MR-ENG-306: the sends' first PSN
    eth = codec.Eth()
    sports, writes = _side_plan(cfg, seed, nbytes)
    tmpls = [template_of(k, eth_dst=eth.dst, eth_src=eth.src, ip_src=addr, ip_dst=peer_addr,
                         sports=sports[k], pkey=c.pkey if k == c.qp else 0xFFFF,
                         dest_qp=peer_qp if k == c.qp and peer_qp is not None else k)
             for k in range(SMALL["conns"])]
    source = random.Random(src_seed).randbytes(nbytes)
    rlay = ReadLayout(nbytes + 4096)
    rkey = s.keys[0].rkey if peer_rkey is None else peer_rkey
    mac = FabricMac(host, cfg.mac_cut_through, into=into, width=cfg.width)
    # MR-ENG-319: a hinted engine's windows opened on its connection, its ACKs' hint cfg.hints
    hints = None
    if cfg.hints is not None:
        hints = hint_inputs(cfg.hints, conns=(c.qp,), cc_line_mbps=round(cfg.link_bps / 1e6),
                            cc_base_rtt_ns=round(cfg.rtt * 1e9),
                            # MR-ENG-341: the receiver's capacity the link, its interval the RTT
                            rx_hint={"line_mbps": round(cfg.link_bps / 1e6), "share_ns": round(cfg.rtt * 1e9),
                                     "mtu": s.mtu} if cfg.rx_hint else None)
    lay = engine_layouts(hints=hints is not None)
    if read:
        items = read_plan(s, c.qp, reads, s.keys[1], rkey)
        drv = EngineLoop(cfg.width, lay, s, wlay, tmpls, items, rlay,
                         served_image(s.keys[0], rlay, source), mac, seed=seed, p_bp=p_bp,
                         latency=latency, limit=float("inf"), hints=hints)
        drv.serve(served_reads(served, s.keys[0]))
        return drv, s, s.keys[1], source
    items = [wr_item(c.qp, stream, length, wr_id=100 + i, op=OP_WRITE, laddr=rlay.base + a, va=a,
                     rkey=rkey)
             for i, (stream, a, length) in enumerate(writes)]
    drv = EngineLoop(cfg.width, lay, s, wlay, tmpls, items, rlay, source,
                     mac, seed=seed, p_bp=p_bp, latency=latency, limit=float("inf"), hints=hints)
    return drv, s, s.keys[0], source


#: MR-ENG-139: the endpoint's connection id (the engine's data and ACKs carry it as DestQP)
ENDPOINT_QP = 0x800001


class EndpointCosim:
    """MR-ENG-139: the whole engine and a reference :class:`~metaroce.models.endpoint.Endpoint`
    over MR-ENG-123's fabric, data both ways. ``direction`` ``rx``: the endpoint on ``h0``
    writes ``cfg.nbytes`` to the engine on ``h1``; ``tx``: the engine on ``h0`` writes them to
    the endpoint on ``h1``; the other side writes ``cfg.back`` bytes (None: an eighth) back at
    the same time. The driver's ports are the engine's (``EngineModel.port_names()``); with
    ``pair`` those of the pair build (:class:`PairPorts`), the engine under test the instance of
    its host and the other instance idle (every input 0): one Verilator build for MR-ENG-138 and
    MR-ENG-139. ``offer``: the engine's :class:`~metaroce.models.protocol.OpenOffer` the
    endpoint connects with (MR-VERB-015, MR-ENG-254); None: the default build's
    (:func:`~metaroce.models.engine.engine_offer`, the RX's ``MSG_SLOTS``). ``ep_max_rd_atomic``:
    the endpoint's responder resources (None: its default, 8); the engine's initiator depth on
    the connection is the agreement's (MR-ENG-274), its table 8 row written when below 4."""

    def __init__(self, cfg: Config, direction="rx", *, p_bp=0.0, pair=False, atomics=0, offer=None,
                 ep_max_rd_atomic=None):
        from metaroce.sim.topology import host_addr
        from .cosim import reference_receiver
        if direction not in ("rx", "tx"):
            raise ValueError(f"direction must be rx or tx, not {direction!r}")
        if atomics and cfg.verb != "write":
            raise ValueError("atomics go with the write verb")
        check_config(cfg)
        self.cfg, self.direction = cfg, direction
        back = cfg.nbytes // 8 if cfg.back is None else cfg.back
        # h0 sends cfg.nbytes, h1 sends back
        self.ep_host, self.eng_host = (0, 1) if direction == "rx" else (1, 0)
        addrs = (PEER_ADDR, LOCAL_ADDR)
        assert (host_addr(0), host_addr(1)) == addrs
        ep_bytes, eng_bytes = (cfg.nbytes, back) if direction == "rx" else (back, cfg.nbytes)
        self.fab = fab = build_fabric(cfg)
        ep_addr, eng_addr = addrs[self.ep_host], addrs[self.eng_host]
        # MR-ENG-253/254: the endpoint's bounds agreed at the open from the engine's offer (its
        # build's: the RX's message slots per stream, MR-ENG-157, and max_rd_atomic, MR-ENG-244)
        self.offer = engine_offer(msg_slots=RX_MSG_SLOTS) if offer is None else offer
        # MR-ENG-319: with cfg.hints the endpoint's hint pushes on (its ACKs carry hints anyway)
        ep = reference_receiver(cfg, timer=True, hints=cfg.hints is not None, addr=ep_addr,
                                chunk_window=engine_chunk_window(cfg),
                                **({} if ep_max_rd_atomic is None else {"max_rd_atomic": ep_max_rd_atomic}))
        # MR-ENG-274: the engine's own initiator depth agreed from the endpoint's offer
        self.init_depth = engine_peer_check(ep.open_offer(), SMALL["streams"], RX_RD_SLOTS)
        self.ep = ep
        self.ep_dst = bytearray(max(eng_bytes, 1))
        fab.hosts[self.eng_host].ep = RtlPeer(eng_addr)
        fab.hosts[self.ep_host].ep = ep
        if cfg.verb == "read":
            self._setup_reads(cfg, ep, ep_bytes, eng_bytes, eng_addr, ep_addr, p_bp)
        else:
            ep_rkey = ep.reg_mr(self.ep_dst)
            self.eng, s, self.region, self.eng_src = _engine_side(
                cfg, cfg.seed + 20, eng_bytes, eng_addr, ep_addr, cfg.seed + 4, fab.hosts[self.eng_host],
                p_bp=p_bp, latency=cfg.latency, peer_qp=ENDPOINT_QP, peer_rkey=ep_rkey,
                into=link_into(fab, fab.hosts[self.eng_host]), align8=bool(atomics),
                init_depth=self.init_depth)
            conn = self._connect(ep, s, eng_addr, self.offer, cfg.init_psn)
            self.ep_src = random.Random(cfg.seed + 3).randbytes(ep_bytes)
            lkey = ep.reg_mr(bytearray(self.ep_src))
            self.ep_writes = writes = _endpoint_writes(cfg, ep_bytes)
            self.ep_wrs = len(writes)
            for i, (stream, a, length) in enumerate(writes):
                conn.post_write(stream, lkey, a, length, a, self.region.rkey, wr_id=100 + i)
            self.atomics = None
            if atomics:
                self._setup_atomics(cfg, ep, conn, s, atomics)
        self.ep_done = []

        def completion(host, t, comp):
            self.ep_done.append((t, int(comp.status)))
        fab.hosts[self.ep_host].on_completion = completion
        fab.hosts[self.ep_host].kick()
        self.period = 1.0 / CLOCK_HZ
        self.cycle = 0
        ideal = cfg.nbytes * 8 / cfg.limit_bps
        self.max_time = cfg.max_time if cfg.max_time is not None else 50 * ideal + 2000 * cfg.rtt
        self.pair = pair
        if pair:
            self.ports_in, self.ports_out = PairPorts.of_engine(cfg.width, **engine_kw(cfg))

    @staticmethod
    def _connect(ep, s, eng_addr, offer, init_psn=None):
        """The endpoint's connection to the engine's (the paths start at ``init_psn`` both ways,
        MR-ENG-306, None: 0 as the engine's reset, MR-TX-012), with the engine's ``offer``
        (MR-VERB-015)."""
        c = s.conns[0]
        psn = psn_first(init_psn)
        return ep.connect(ENDPOINT_QP, eng_addr, c.qp, paths=c.n_paths, streams=c.n_streams,
                          pkey=c.pkey, init_psn=psn, peer_init_psn=psn, peer_offer=offer)

    def _setup_atomics(self, cfg, ep, conn, s, n):
        """MR-ENG-170: the endpoint posts ``n`` atomics to the engine among its WRITEs: on the
        engine's region of key 2 (VA ``8 x stream``: each stream's on one target of its own, so
        they run in its message order; random initial values), CMP_SWAP or FETCH_ADD with random
        operands, half the compare values matching; atomic ``i``'s original value lands in the
        endpoint's result buffer at ``8 i``. The plan (``self.atomics``) is the sequential
        oracle's."""
        rng = random.Random(cfg.seed + 41)
        tgt = s.keys[2]
        streams = s.conns[0].n_streams
        cur = {st: rng.getrandbits(64) for st in range(streams)}
        wlay, img = self.eng.wlay, self.eng.wmem.image
        for st, v in cur.items():
            off = tgt.base + 8 * st - wlay.base
            img[off:off + 8] = v.to_bytes(8, "little")
        self.ep_res = bytearray(8 * n)
        res_key = ep.reg_mr(self.ep_res)
        origs = []
        for i in range(n):
            st = i % streams
            cas = rng.random() < 0.5
            swap = rng.getrandbits(64)
            compare = (cur[st] if rng.random() < 0.5 else rng.getrandbits(64)) if cas else 0
            conn.post_atomic(st, "cmp_swap" if cas else "fetch_add", res_key, 8 * i, 8 * st, tgt.rkey,
                             wr_id=1000 + i, swap=swap, compare=compare, add=swap)
            origs.append(cur[st])
            cur[st] = P.atomic_apply(cas, cur[st], swap, compare)
        self.ep_wrs += n
        self.atomics = {"origs": origs, "final": {tgt.base + 8 * st: v for st, v in cur.items()}}

    def atomics_result(self):
        """MR-ENG-170: the endpoint's original values, the engine's targets and its executions
        against the plan. Returns ``{ok, originals_equal, targets_equal, executions, atomics}``."""
        a, eng = self.atomics, self.eng
        got = [int.from_bytes(self.ep_res[8 * i:8 * i + 8], "little") for i in range(len(a["origs"]))]
        base, img = eng.wlay.base, eng.wmem.image
        targets = {t: int.from_bytes(img[t - base:t - base + 8], "little") for t in a["final"]}
        execs = sum(1 for w in eng.amem.writes if w[1] in a["final"])
        ok_o, ok_t = got == a["origs"], targets == a["final"]
        return {"ok": ok_o and ok_t and execs == len(got), "originals_equal": ok_o,
                "targets_equal": ok_t, "executions": execs, "atomics": len(got)}

    def _setup_reads(self, cfg, ep, ep_bytes, eng_bytes, eng_addr, ep_addr, p_bp):
        """MR-ENG-146: each side READs the other's bytes: the engine READs the endpoint's source
        (its pieces :func:`_endpoint_writes`, the endpoint's region of it) into its region of
        key 1; the endpoint READs the engine's (the engine's pieces, its region of key 0) into
        ``ep_dst``; the engine checks every response frame it sends."""
        fab = self.fab
        self.ep_src = random.Random(cfg.seed + 3).randbytes(ep_bytes)
        src_key = ep.reg_mr(bytearray(self.ep_src))
        eng_pieces = _side_plan(cfg, cfg.seed + 20, eng_bytes)[1]
        self.ep_writes = _endpoint_writes(cfg, ep_bytes)
        self.eng, s, self.region, self.eng_src = _engine_side(
            cfg, cfg.seed + 20, eng_bytes, eng_addr, ep_addr, cfg.seed + 4, fab.hosts[self.eng_host],
            p_bp=p_bp, latency=cfg.latency, peer_qp=ENDPOINT_QP, peer_rkey=src_key,
            into=link_into(fab, fab.hosts[self.eng_host]), reads=self.ep_writes, served=eng_pieces,
            init_depth=self.init_depth)
        conn = self._connect(ep, s, eng_addr, self.offer, cfg.init_psn)
        dst_key = ep.reg_mr(self.ep_dst)
        self.ep_wrs = len(eng_pieces)
        for i, (stream, a, n) in enumerate(eng_pieces):
            conn.post_read(stream, dst_key, a, n, a, s.keys[0].rkey, wr_id=100 + i)

    @property
    def finished(self):
        return self.eng.finished and len(self.ep_done) >= self.ep_wrs

    def inputs(self):
        fabric_to(self.fab, self.cycle)
        if self.pair:
            parts = [{}, {}]
            parts[self.eng_host] = self._inp = self.eng.inputs()
            return self.ports_in.join(parts)
        return self.eng.inputs()

    def observe(self, inp, out):
        if self.pair:
            self.eng.observe(self._inp, self.ports_out.split_full(out)[self.eng_host])
        else:
            self.eng.observe(inp, out)
        self.cycle += 1

    def settle(self, busy):
        self.eng.settle(busy)
        if self.cycle * self.period > self.max_time:
            raise AssertionError(
                f"engine <-> endpoint loop stuck after {self.cycle} cycles: the engine "
                f"{len(self.eng.res['tx_cqe'])} of {len(self.eng.items)} WRs, the endpoint "
                f"{len(self.ep_done)} of {self.ep_wrs}")

    def result(self):
        """MR-ENG-139: both memories against their sources, every WR of both sides complete
        with success; goodput of the ``cfg.nbytes`` direction (its last completion's time)."""
        cfg, eng = self.cfg, self.eng
        got_eng = region_image(eng, self.region, len(self.ep_src))
        got_ep = bytes(self.ep_dst[:len(self.eng_src)])
        sha = lambda x: hashlib.sha256(x).hexdigest()      # noqa: E731
        eng_ok = eng.wrs_ok() and eng.responses_ok()
        ep_ok = len(self.ep_done) == self.ep_wrs and all(st == 0 for _, st in self.ep_done)
        # the last completion of the cfg.nbytes: the sender's WRITEs or the receiver's READs
        # (MR-ENG-146)
        ep_last = max((t for t, _ in self.ep_done), default=None)
        eng_done = eng.res["tx_cqe"] if cfg.verb == "write" else eng.res["read_cqe"]
        cyc = max((cyc for cyc, _ in eng_done), default=None)
        eng_last = cyc * self.period if cyc is not None else None
        if self.direction == "rx":
            t = ep_last if cfg.verb == "write" else eng_last
            got, src = got_eng, self.ep_src
        else:
            t = eng_last if cfg.verb == "write" else ep_last
            got, src = got_ep, self.eng_src
        goodput = cfg.nbytes * 8 / t if t else 0.0
        match = got_eng == self.ep_src and got_ep == self.eng_src
        errors = len(eng.res["errors"]) + eng.res["done_errors"]
        st = self.ep.stats
        return {"ok": bool(match and eng_ok and ep_ok and not errors), "sha256_match": match,
                "bytes": cfg.nbytes, "goodput_vs_limit": round(goodput / cfg.limit_bps, 4),
                "cycles": self.cycle, "sha256": sha(got), "sha256_source": sha(src),
                "bytes_back": len(self.eng_src) if self.direction == "rx" else len(self.ep_src),
                "wrs_completed_ok": eng_ok and ep_ok,
                "wrs": {"engine": len(eng.items), "endpoint": self.ep_wrs},
                **_figures(cfg, self.fab, goodput, t),
                "engine": {"host": f"h{self.eng_host}", "frames_out": eng.res["frames_out"],
                           "frames_in": eng.res["frames_in"], "placements": eng.res["done"],
                           "errors": len(eng.res["errors"]), "bypass": eng.res["bypass"],
                           "completions_digest": completions_digest(eng.completions()),
                           **({"psn_wrap": psn_wrap_summary(eng, cfg.init_psn)}
                              if cfg.init_psn is not None else {}),
                           **(hint_summary(eng) if cfg.hints is not None else {}),
                           **({"reads_completed": len(eng.res["read_cqe"]),
                               "response_frames": eng.res["rsp_frames"],
                               "response_errors": eng.res["rsp_errors"][:5]}
                              if cfg.verb == "read" else {})},
                "endpoint": {"host": f"h{self.ep_host}", "retransmitted": st.get("retransmitted", 0),
                             "acks_sent": st.get("acks_sent", 0), "naks_sent": st.get("naks_sent", 0),
                             "timeouts": st.get("timeouts", 0)},
                "config": _config_of(cfg)}


def run_endpoint_atomics_model(cfg: Config, n, *, model_cls=None, **kw):
    """MR-ENG-170: the reference endpoint posting ``n`` atomics (among its WRITEs) to
    :class:`EngineModel` over the fabric; ``model_cls`` a negative control's executor. Returns
    ``(result, atomics_result)``."""
    from .engine import EngineModel
    m = EngineModel(cfg.width, **engine_kw(cfg))
    if model_cls is not None:
        m.rx.atom = model_cls(cfg.width, m.rx.lay.atom, m.rx.lay.rsp)
    d = EndpointCosim(cfg, "rx", atomics=n, **kw)
    run_loop(d, m, m.active)
    return d.result(), d.atomics_result()


def run_endpoint_model(cfg: Config, direction="rx", *, pair=False, **kw):
    """MR-ENG-139 with the engine as :class:`EngineModel` (no simulator); ``pair``: as the pair
    build drives it (:class:`EnginePairModel`, the other engine idle)."""
    from .engine import EngineModel, EnginePairModel
    m = EnginePairModel(cfg.width, **engine_kw(cfg)) if pair else EngineModel(cfg.width, **engine_kw(cfg))
    return run_loop(EndpointCosim(cfg, direction, pair=pair, **kw), m, m.active).result()


class PeerCosim:
    """MR-ENG-138: two whole engines over the fabric. The engine under test on ``h1`` (this
    driver's ports: ``inputs``, ``observe``, ``settle``, ``finished``), the peer engine on
    ``h0`` as :class:`~metaroce.models.engine.EngineModel`, stepped inside the driver each
    cycle. ``h0`` writes ``cfg.nbytes`` to ``h1``; ``h1`` writes ``back`` bytes to ``h0``.

    ``pair``: both engines under test, the driver's ports those of the pair
    (:class:`~metaroce.models.engine.EnginePairModel`: ``h0__``/``h1__`` prefixes), no engine
    stepped inside; the same traffic, fabric and checks."""

    #: cycles between two calls of ``progress`` (when set)
    PROGRESS_CYCLES = 1 << 16

    def __init__(self, cfg: Config, *, back=None, p_bp=0.0, pair=False, progress=None):
        from metaroce.sim.topology import host_addr
        from .engine import EngineModel
        check_config(cfg)
        self.cfg = cfg
        if back is None:
            back = cfg.nbytes // 8 if cfg.back is None else cfg.back
        self.back = back
        self.fab = fab = build_fabric(cfg)
        h0, h1 = fab.hosts
        h0.ep, h1.ep = RtlPeer(PEER_ADDR), RtlPeer(LOCAL_ADDR)
        assert (host_addr(0), host_addr(1)) == (PEER_ADDR, LOCAL_ADDR)
        lat = cfg.latency
        # MR-ENG-146: in a read run h1 READs h0's pieces and h0 h1's (the back traffic)
        plan_a, plan_b = reference_writes(cfg, "peer")
        self.a, _, self.region_a, self.src_a = _engine_side(
            cfg, cfg.seed + 10, cfg.nbytes, PEER_ADDR, LOCAL_ADDR, cfg.seed + 3, h0, p_bp=p_bp, latency=lat,
            into=link_into(fab, h0), reads=plan_b, served=plan_a)
        self.b, _, self.region_b, self.src_b = _engine_side(
            cfg, cfg.seed + 20, self.back, LOCAL_ADDR, PEER_ADDR, cfg.seed + 4, h1, p_bp=p_bp, latency=lat,
            into=link_into(fab, h1), reads=plan_a, served=plan_b)
        self.pair = pair
        self.progress = progress
        self.peer_model = None if pair else EngineModel(cfg.width, **engine_kw(cfg))
        if pair:
            self.ports_in, self.ports_out = PairPorts.of_engine(cfg.width, **engine_kw(cfg))
        self.period = 1.0 / CLOCK_HZ
        self.cycle = 0
        ideal = cfg.nbytes * 8 / cfg.limit_bps
        self.max_time = cfg.max_time if cfg.max_time is not None else 50 * ideal + 2000 * cfg.rtt

    @property
    def finished(self):
        return self.a.finished and self.b.finished

    def inputs(self):
        fabric_to(self.fab, self.cycle)
        a, m = self.a, self.peer_model
        if self.pair:
            # each engine's inputs kept for observe (the pair's dict is made of them)
            self._parts = (a.inputs(), self.b.inputs())
            return self.ports_in.join(self._parts)
        ia = a.inputs()
        a.observe(ia, m.step(ia))
        a.settle(m.active)
        return self.b.inputs()

    def observe(self, inp, out):
        if self.pair:
            for d, i, o in zip((self.a, self.b), self._parts, self.ports_out.split_full(out)):
                d.observe(i, o)
        else:
            self.b.observe(inp, out)
        self.cycle += 1

    def settle(self, busy):
        if self.pair:
            self.a.settle(busy)
        self.b.settle(busy)
        if self.progress is not None and not self.cycle % self.PROGRESS_CYCLES:
            self.progress(self.snapshot())
        if self.cycle * self.period > self.max_time:
            raise AssertionError(
                f"two-engine loop stuck after {self.cycle} cycles: h0 {len(self.a.res['tx_cqe'])} of "
                f"{len(self.a.items)} WRs, h1 {len(self.b.res['tx_cqe'])} of {len(self.b.items)}")

    def snapshot(self):
        """Where a long run is: its cycle, the WRs completed on each side, the placements and
        frames of each engine (``progress``'s argument)."""
        return {"cycle": self.cycle, "wrs_done": [len(d.res["tx_cqe"]) for d in (self.a, self.b)],
                "wrs": [len(self.a.items), len(self.b.items)],
                "placements": [d.res["done"] for d in (self.a, self.b)],
                "frames_out": [d.res["frames_out"] for d in (self.a, self.b)]}

    def result(self):
        """MR-ENG-138: both regions against their sources, every WR of both engines complete
        with success; goodput of ``h0``'s writes (its last completion's time)."""
        cfg = self.cfg
        got_b = region_image(self.b, self.region_b, len(self.src_a))
        got_a = region_image(self.a, self.region_a, len(self.src_b))
        sha = lambda x: hashlib.sha256(x).hexdigest()      # noqa: E731
        ok_wrs = [d.wrs_ok() and d.responses_ok() for d in (self.a, self.b)]
        # the last completion of the cfg.nbytes into h1: h0's WRITEs, or h1's READs
        done = self.a.res["tx_cqe"] if cfg.verb == "write" else self.b.res["read_cqe"]
        t_done = max((cyc for cyc, _ in done), default=None)
        t = t_done * self.period if t_done is not None else None
        goodput = cfg.nbytes * 8 / t if t else 0.0
        match = sha(got_b) == sha(self.src_a) and got_a == self.src_b
        errors = sum(len(d.res["errors"]) + d.res["done_errors"] for d in (self.a, self.b))
        return {"ok": bool(match and all(ok_wrs) and not errors), "sha256_match": match,
                "bytes": cfg.nbytes, "goodput_vs_limit": round(goodput / cfg.limit_bps, 4),
                "cycles": self.cycle, "sha256": sha(got_b), "bytes_back": self.back,
                "wrs_completed_ok": all(ok_wrs), "wrs": [len(self.a.items), len(self.b.items)],
                **_figures(cfg, self.fab, goodput, t),
                "engines": {name: {"frames_out": d.res["frames_out"], "frames_in": d.res["frames_in"],
                                   "placements": d.res["done"], "errors": len(d.res["errors"]),
                                   "peak_mac_beats": d.res["peak_mac_beats"],
                                   "completions_digest": completions_digest(d.completions()),
                                   **({"psn_wrap": psn_wrap_summary(d, cfg.init_psn)}
                                      if cfg.init_psn is not None else {}),
                                   **(hint_summary(d) if cfg.hints is not None else {}),
                                   **({"reads_completed": len(d.res["read_cqe"]),
                                       "response_frames": d.res["rsp_frames"],
                                       "response_errors": d.res["rsp_errors"][:5]}
                                      if cfg.verb == "read" else {})}
                            for name, d in (("h0", self.a), ("h1", self.b))},
                "config": _config_of(cfg)}


def _figures(cfg, fab, goodput, t):
    """The rates, the clock and the fabric's counters of a run's result (MR-ENG-138/139)."""
    link = fab.links[INTO].stats
    return {"goodput_gbps": round(goodput / 1e9, 4), "limit_gbps": round(cfg.limit_bps / 1e9, 4),
            "link_gbps": cfg.link_bps / 1e9, "clock_mhz": CLOCK_HZ / 1e6, "width": cfg.width,
            "sim_time_s": t,
            "fabric": {"lost": link["lost"], "duplicated": link["duplicated"], "delayed": link["delayed"],
                       "ce_marked": fab.marks(), "switch_drops": fab.switch_drops()}}


def _config_of(cfg):
    return {k: (list(v) if isinstance(v, tuple) else v) for k, v in asdict(cfg).items()}


def region_image(drv, region, n):
    """The first ``n`` bytes of ``region`` in an engine's placement memory."""
    off = region.base - drv.wlay.base
    return bytes(drv.wmem.image[off:off + n])


def run_peer_model(cfg: Config, *, pair=False, **kw):
    """MR-ENG-138 with the engine under test as :class:`EngineModel` too (model <-> model);
    ``pair``: both engines as one :class:`EnginePairModel` stepped by the loop (the driver of
    the RTL pair build)."""
    from .engine import EngineModel, EnginePairModel
    m = EnginePairModel(cfg.width, **engine_kw(cfg)) if pair else EngineModel(cfg.width, **engine_kw(cfg))
    return run_loop(PeerCosim(cfg, pair=pair, **kw), m, m.active).result()


def reference_writes(cfg: Config, kind, direction="rx"):
    """MR-ENG-138/139: the WRITEs of ``h0`` and of ``h1`` (``[(stream, offset, length)]``) in the
    run of ``kind`` ``peer`` (two engines, :class:`PeerCosim`) or ``endpoint``
    (:class:`EndpointCosim` of ``direction``): ``h0`` writes ``cfg.nbytes``, ``h1`` the back
    traffic. In a ``read`` run (MR-ENG-146) the pieces of each side's bytes the other READs."""
    back = cfg.nbytes // 8 if cfg.back is None else cfg.back
    if kind == "peer":
        return _side_plan(cfg, cfg.seed + 10, cfg.nbytes)[1], _side_plan(cfg, cfg.seed + 20, back)[1]
    if direction == "rx":
        return _endpoint_writes(cfg, cfg.nbytes), _side_plan(cfg, cfg.seed + 20, back)[1]
    return _side_plan(cfg, cfg.seed + 20, cfg.nbytes)[1], _endpoint_writes(cfg, back)


def run_reference_pair(cfg: Config, writes, back_writes):
    """MR-ENG-138/139: the reference of a whole-engine run: reference Endpoints on both hosts
    (:func:`~metaroce.models.cosim.reference_receiver`: the engine's MTU, ACK policy,
    delayed-ACK time and chunk window, rate-hint pushes off), one connection of the engine's 4
    paths and 2 streams, PSNs from 0, over the same fabric; ``h0`` posts ``writes`` and ``h1``
    ``back_writes`` at time 0, as the engines do. Returns ``{"ok", "goodput_vs_limit",
    "goodput_gbps", "sim_time_s"}``: the goodput of ``h0``'s bytes (its last completion). In a
    ``read`` run (MR-ENG-146) each host READs the other's pieces instead, and the goodput is of
    ``h1``'s READs of ``h0``'s bytes."""
    from .cosim import reference_receiver
    check_config(cfg)
    fab = build_fabric(cfg)
    addrs = (PEER_ADDR, LOCAL_ADDR)
    qps = (0x800001, 0x000001)
    eps = [reference_receiver(cfg, timer=True, hints=False, addr=a, chunk_window=engine_chunk_window(cfg))
           for a in addrs]
    plans = (writes, back_writes)
    srcs = [random.Random(cfg.seed + 3 + h).randbytes(sum(n for _, _, n in w)) for h, w in enumerate(plans)]
    dsts = [bytearray(max(1, len(srcs[1 - h]))) for h in range(2)]
    rkeys = [ep.reg_mr(d) for ep, d in zip(eps, dsts)]
    read = cfg.verb == "read"
    # MR-ENG-146: in a read run host h READs the other's pieces from the other's source
    src_keys = [ep.reg_mr(bytearray(src)) for ep, src in zip(eps, srcs)] if read else None
    posted = [plans[1 - h] if read else plans[h] for h in range(2)]
    done = ([], [])
    comps = ([], [])                # MR-ENG-202: each host's completions, in the order made
    for h, ep in enumerate(eps):
        fab.hosts[h].ep = ep
        conn = ep.connect(qps[h], addrs[1 - h], qps[1 - h], paths=SMALL["paths"], streams=SMALL["streams"],
                          init_psn=psn_first(cfg.init_psn), peer_init_psn=psn_first(cfg.init_psn))
        if read:
            for i, (stream, a, n) in enumerate(posted[h]):
                conn.post_read(stream, rkeys[h], a, n, a, src_keys[1 - h], wr_id=100 + i)
        else:
            lkey = ep.reg_mr(bytearray(srcs[h]))
            for i, (stream, a, n) in enumerate(plans[h]):
                conn.post_write(stream, lkey, a, n, a, rkeys[1 - h], wr_id=100 + i)

        def completion(host, t, c, h=h):
            done[h].append((t, int(c.status)))
            comps[h].append((c.stream, c.wr_id, int(c.status), int(c.opcode), c.byte_len))
            if all(len(d) >= len(p) for d, p in zip(done, posted)):
                fab.sim.stop()
        fab.hosts[h].on_completion = completion
    for host in fab.hosts:
        host.kick()
    ideal = cfg.nbytes * 8 / cfg.limit_bps
    fab.sim.run(until=cfg.max_time if cfg.max_time is not None else 50 * ideal + 2000 * cfg.rtt)
    t = max((d[0] for d in done[1 if read else 0]), default=None)
    ok = (all(len(d) == len(p) and all(st == 0 for _, st in d) for d, p in zip(done, posted))
          and all(bytes(dsts[1 - h][:len(srcs[h])]) == srcs[h] for h in range(2)))
    goodput = cfg.nbytes * 8 / t if t and ok else 0.0
    return {"ok": ok, "goodput_vs_limit": round(goodput / cfg.limit_bps, 4),
            "goodput_gbps": round(goodput / 1e9, 4), "sim_time_s": t,
            "completions": list(comps), "completions_digest": [completions_digest(c) for c in comps]}
