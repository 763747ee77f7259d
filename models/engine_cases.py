"""The receive half's one verification stack, simulator-independent part (MR-ENG-100..).

* :func:`engine_traffic`: the reference endpoint's real traffic (MR-RX-071's
  :func:`~metaroce.models.rx_cases.endpoint_traffic`: a sender endpoint through the model fabric
  with loss, reordering and duplication, forged writes among the frames) with the key regions
  moved into one host-memory window, plus a few frames that are not RoCE;
* :class:`Driver`: three phases on the engine's ports, cycle by cycle from one seed: the
  setup rows through AXI4-Lite (the register block's driver, :class:`regs_cases.Driver`); the
  frames as MAC beats with random idle cycles, random ready on every output (``m_ack``,
  ``m_done``, ``m_bypass``, AXI4 ``awready``/``wready``) and an AXI4 write slave with random B
  latency (:class:`dma_write_cases.HostMemory`); the RX engine's and the parser's counters read
  back through AXI4-Lite (MR-ENG-105; rows a run writes between its frames,
  :func:`counter_run`'s, are further AXI4-Lite and traffic phases);
* :func:`check`: the RTL-side results against the reference endpoint (the memory image and
  the ACK/NAK stream, byte-exact, MR-ENG-110) and against the blocks' packet-level models (the
  RX requests and counters, the parser's counters, the bypassed frames);
* :func:`run_model`: :class:`EngineRxModel` alone through the driver.
"""
from __future__ import annotations

import collections
import random
from dataclasses import dataclass

from . import regs_cases as rgc
from . import rx_cases as rc
from .dma_write import RESP_OKAY, apply, unpack as dunpack
from .dma_write_cases import HostMemory, Layout
from .driver import CounterReadout, run_alone
from .engine import AXIL, EngineRxModel
from .parser import N_COUNTERS as PARSER_COUNTERS, OVERFLOW_COUNTER, verdict
from .regs import register_map
from .rx import SMALL as RX_SMALL, TABLE_KEY, payload_layout

__all__ = ["Run", "engine_traffic", "bypass_frames", "line_rate_run", "check_line_rate", "counter_run",
           "check_counters", "Phases", "Driver", "check", "run_model", "ScriptedLoopback", "CounterLoop",
           "tx_counter_run", "check_counter_loop", "model_counters", "TX_COUNTER_RETRY_LIMIT",
           "atomic_hazard_run", "HAZARD_LATENCY"]

#: MR-ENG-110: B latencies of the host memory (cycles after a burst's last W beat).
LATENCY = (1, 40)


@dataclass
class Run:
    """One run's stimulus and reference: the RX setup (its writes, keys moved into the host
    window ``lay``), the MAC frames in order (``frames``), which of them are RoCE cases
    (``cases``, :class:`rx_cases.Case`) and which bypass (``bypass``), and the receiving
    endpoint's traffic record (:class:`rx_cases.Traffic`)."""
    setup: rc.Setup
    lay: Layout
    frames: list
    cases: list
    bypass: list
    traffic: rc.Traffic
    #: MR-ENG-161: the executor's result area's base in the host window (None: no executor)
    result_base: int | None = None


def with_result_area(run: Run):
    """MR-ENG-161, MR-ENG-167: the run's host window grown by the executor's result area (after
    the key regions, 4 KiB aligned); returns the run with ``result_base`` set."""
    from .atomic import result_area_bytes
    # MR-ENG-159: the regions' host bases 8-byte aligned (an atomic's host address must be)
    s = run.setup
    for k in s.keys:
        k.base &= ~7
    rows = {k.rkey & (s.lay.keys - 1): s.key_write(k) for k in s.keys}
    s.writes = [rows[w.addr] if w.table == TABLE_KEY else w for w in s.writes]
    base = run.lay.base
    rbase = base + ((run.lay.size + 4095) & ~4095)
    run.lay = Layout(rbase - base + result_area_bytes(run.setup.lay.conns))
    run.result_base = rbase
    return run


def bypass_frames(rng, n):
    """``n`` Ethernet frames that are not RoCE (ARP and IPv4/UDP to another port), which the
    parser passes intact on ``m_bypass`` (MR-HW-032)."""
    out = []
    for i in range(n):
        body = bytes(rng.getrandbits(8) for _ in range(rng.randint(46, 200)))
        ethertype = b"\x08\x06" if i % 2 == 0 else b"\x88\xb5"
        out.append(bytes.fromhex("ffffffffffff") + bytes(rng.getrandbits(8) for _ in range(6))
                   + ethertype + body)
    return out


def _host_window(s: rc.Setup, rng):
    """Lay the setup's key regions out one after another in one host-memory window (4 KiB
    apart plus a random lane offset) and rewrite their rows; returns the window."""
    lay = Layout(sum(k.length + 8192 for k in s.keys))
    at = lay.base
    for k in s.keys:
        k.base = at + rng.randrange(64)
        at = (k.base + k.length + 4096 + 4095) & ~4095
    rows = {k.rkey & (s.lay.keys - 1): s.key_write(k) for k in s.keys}
    s.writes = [rows[w.addr] if w.table == TABLE_KEY else w for w in s.writes]
    return lay


def engine_traffic(conns=256, paths=4, keys=256, *, streams=RX_SMALL["streams"], nbytes=8192, loss=0.05,
                   reorder=0.2, dup=0.05, seed=0, hostile=10, n_bypass=3, **kw):
    """MR-ENG-110: the stimulus of a run (:class:`Run`). The endpoint's key regions (random
    64-bit bases in :func:`rx_cases.endpoint_setup`) are laid out one after another, 4 KiB
    apart plus a random lane offset, in one host-memory window, and their rows rewritten; a
    placement's address is still base + VA + offset (MR-RX-032)."""
    s, tr = rc.endpoint_traffic(conns, paths, keys, streams=streams, nbytes=nbytes, loss=loss,
                                reorder=reorder, dup=dup, seed=seed, hostile=hostile, **kw)
    rng = random.Random(seed + 77)
    lay = _host_window(s, rng)
    frames, cases, bypass = [], [], []
    others = bypass_frames(rng, n_bypass)
    spots = sorted(rng.randrange(len(tr.cases) + 1) for _ in others)
    for i, c in enumerate(tr.cases + [None]):
        while spots and spots[0] == i:
            spots.pop(0)
            f = others[len(bypass)]
            bypass.append(f)
            frames.append(("bypass", f))
        if c is not None:
            frames.append(("case", c.frame))
            cases.append(c)
    return Run(s, lay, frames, cases, bypass, tr)


def atomic_traffic(nbytes, seed, *, executor=False):
    """MR-ENG-156: the endpoint's writes with atomic requests among them (5 % loss); returns the
    run and how many of its frames are atomic requests (MR_CMP_SWAP, MR_FETCH_ADD: the BTH
    opcode after the Ethernet, IPv4 and UDP headers). ``executor`` (MR-ENG-167): the host
    window grown by the executor's result area (:func:`with_result_area`)."""
    run = engine_traffic(nbytes=nbytes, seed=seed, loss=0.05, n_writes=12, atomic_reqs=0.5)
    if executor:
        with_result_area(run)
    return run, sum(1 for c in run.cases if c.frame[42] in (0xC8, 0xC9))


#: MR-ENG-220: the host memory's B latency of :func:`atomic_hazard_run` (slow: the placements
#: queue at the DMA's intake while the executor waits in FENCE).
HAZARD_LATENCY = (150, 300)


def atomic_hazard_run(seed=3):
    """MR-ENG-220: the endpoint's writes with 80 % of its messages atomic requests (5 % loss),
    the host window grown by the result area; with :data:`HAZARD_LATENCY` and session 25's fence
    (``atomic_cases.OldFence``) the receive half stops: three atomics are delivered while the
    executor waits for an empty intake, and a WRITE behind the third's operand capture is taken
    by the DMA before the intake empties (MR-ENG-162's hazard)."""
    run = engine_traffic(nbytes=8192, seed=seed, loss=0.05, n_writes=12, atomic_reqs=0.8)
    return with_result_area(run)


def line_rate_run(conns=256, paths=4, keys=256, *, streams=RX_SMALL["streams"], n=64, plen=64, seed=0):
    """MR-ENG-112: ``n`` in-order writes of one path, ``plen`` payload bytes each, back to back
    (:func:`rx_cases.burst_same_path`), as a :class:`Run` without an endpoint record."""
    s = rc.Setup(conns, paths, keys, streams=streams, seed=seed)
    lay = _host_window(s, random.Random(seed + 77))
    cases = rc.burst_same_path(s, n, plen=plen)
    return Run(s, lay, [("case", c.frame) for c in cases], cases, [], None)


def counter_run(conns=256, paths=4, keys=256, *, streams=RX_SMALL["streams"], seed=9):
    """MR-ENG-105, MR-REG-030/031: a :class:`Run` that moves every RX counter (MR-RX-050): the
    window and bad-input cases, SENDs against receives and READ responses against READs
    (MR-RX-100..112, RNR, RECV_BOUNDS, NO_READ among them) and the message cases (MR-RX-080..),
    whose receive and READ rows are written through AXI4-Lite between the frames, where the
    cases put them (``("cfg", CfgWrite)`` entries of ``frames``, each run of them a phase of
    :class:`Driver`). The keys are in one host window before the cases name their addresses.
    Then the frames that move the parser's counters but overflow (MR-HW-060, MR-ENG-105,
    MR-REG-033): one drop per parser reason (``parser_cases.drop_cases``' first of each; the MAC
    error a valid frame with ``tuser`` on its last beat, a ``("mac_error", bytes)`` entry) and
    two frames that are not RoCE (``("bypass", bytes)``). No endpoint record (``traffic``
    None): :func:`check_counters` checks it."""
    from .parser import pack_meta
    from .parser_cases import drop_cases
    from .wire import Reason
    s = rc.Setup(conns, paths, keys, streams=streams, seed=seed, n_conns=3)
    rng = random.Random(seed + 77)
    lay = _host_window(s, rng)
    items = (rc.window_cases(s) + rc.bad_cases(s) + rc.send_cases(s, conn=1) + rc.read_cases(s, conn=2)
             + rc.message_cases(s, conn=0, stream=1))
    frames = [("cfg", c) if isinstance(c, rc.CfgWrite) else ("case", c.frame) for c in items]
    seen = set()
    for c in drop_cases():
        if c.expect in seen or c.expect in (Reason.NONE, Reason.MAC_ERROR):
            continue
        rcase = rc.frame_case(f"parser-{c.name}", c.data)       # padded to 60 bytes as a MAC does
        if rcase is None or verdict(rcase.frame)[0] != c.expect:
            continue
        seen.add(c.expect)
        frames.append(("case", rcase.frame))
        items.append(rcase)
    good = rc.frame_case("mac-error", s.write(s.conns[1], path=0, plen=16, name="mac-error").frame)
    items.append(rc.Case("mac-error", pack_meta({"drop": 1, "reason": int(Reason.MAC_ERROR)}), b"",
                         rc.RxCode.PARSER_DROP, True, good.frame))
    frames.append(("mac_error", good.frame))
    assert seen == {Reason(r) for r in range(1, int(Reason.MAC_ERROR))}, seen
    bypass = bypass_frames(rng, 2)
    frames += [("bypass", f) for f in bypass]
    return Run(s, lay, frames, items, bypass, None)


def check_counters(run: Run, drv: "Driver"):
    """MR-ENG-105 on a :func:`counter_run`: every RX counter read back through AXI4-Lite (LO
    then HI, MR-REG-031) is the RX model's for the items in order (:func:`rx_cases.expected`)
    and not 0; the requests, completion records and placements are the model's, one OKAY done
    record per placement, the host memory the placements' image; the parser's counters those of
    the frames' verdicts. Returns the RX counters."""
    s = run.setup
    exp = rc.expected(s.writes + run.cases, s.lay.conns, s.lay.paths, s.lay.keys, s.lay.streams)
    got = drv.rx_counters
    assert got == exp["counters"], f"RX counters {got} != {exp['counters']}"
    # MR-RX-185: the RX's slot_nak is on in the engine: outcome MSG_SLOTS counts too
    zero = [i for i, v in enumerate(got) if v == 0]
    assert not zero, f"counters never moved: {zero}"
    assert drv.res["ack"] == exp["ack"], "the ACK/NAK requests are not the RX model's"
    assert drv.res["cqe"] == exp["cqe"], "completion records differ from the RX model's"
    done = [dunpack(_done_layout(s.lay), d) for d in drv.res["done"]]
    places = [rc.unpack(s.lay.place, p) for p in exp["place"]]
    assert [(d["conn"], d["length"], d["error"]) for d in done] == [
        (p["conn"], p["length"], RESP_OKAY) for p in places], "done records are not the placements"
    assert drv.mem.image == placed_image(run, exp), "the host memory is not the placements' image"
    want = [0] * PARSER_COUNTERS
    for kind, f in run.frames:
        if kind != "cfg":
            want[int(verdict(f + bytes(max(0, 60 - len(f))), mac_error=kind == "mac_error")[0])] += 1
    assert drv.parser_counters == want, f"parser counters {drv.parser_counters} != {want}"
    assert res_bypass_ok(run, drv)
    return got


def res_bypass_ok(run: Run, drv: "Driver"):
    """The bypassed frames left intact and in order (MR-HW-032)."""
    assert drv.res["bypass"] == run.bypass, "bypassed frames differ"
    return True


def check_line_rate(run: Run, drv: "Driver"):
    """MR-ENG-112: every MAC beat was taken in consecutive cycles (``s_axis`` never back-pressured
    with the outputs ready), every write accepted and placed (OKAY done records), and the placed
    bytes are the payloads. Returns the beats and the cycles they took."""
    taken = drv.res["beats_taken"]
    span = taken[-1] - taken[0] + 1
    assert span == len(taken), f"{len(taken)} MAC beats took {span} cycles"
    s = run.setup
    exp = rc.expected(s.writes + run.cases, s.lay.conns, s.lay.paths, s.lay.keys, s.lay.streams)
    assert all(o.code == rc.RxCode.ACCEPTED for o in exp["outcomes"])
    done = [dunpack(_done_layout(s.lay), d) for d in drv.res["done"]]
    assert len(done) == sum(1 for c in run.cases if c.payload) and not any(d["error"] for d in done)
    assert drv.mem.image == placed_image(run, exp), "the host memory is not the placements' image"
    return {"beats": len(taken), "cycles": span}


class _Traffic(CounterReadout):
    """Phase 2 of :class:`Driver`: the MAC source, the output sinks, the host memory (the
    counters are read afterwards through AXI4-Lite, MR-ENG-105)."""

    def __init__(self, width, run: Run, rng, *, p_idle, p_bp, latency, quiet_cycles=8, frames=None,
                 after=None):
        self.width, self.nb, self.rng = width, width // 8, rng
        self.p_idle, self.p_bp = p_idle, p_bp
        self.beats = []
        for kind, f in (run.frames if frames is None else frames):
            n = -(-len(f) // self.nb)
            for j in range(n):
                chunk = f[j * self.nb:(j + 1) * self.nb]
                last = int(j == n - 1)
                self.beats.append((int.from_bytes(chunk, "little"), (1 << len(chunk)) - 1, last,
                                   int(last and kind == "mac_error")))      # MR-HW-003: tuser
        if after is not None:
            # a later traffic phase (between AXI4-Lite writes): the same host memory and results
            self.mem = after.mem
        else:
            self.mem = HostMemory(run.lay, width, rng, p_bp=p_bp, latency=latency)
            self.mem.image = bytearray(run.lay.size)        # the endpoint's regions start zeroed
            self.mem.initial = bytes(self.mem.image)
        self.beat = payload_layout(width)
        self.n_counters = PARSER_COUNTERS
        self.quiet_cycles = quiet_cycles
        self.read_counters = False
        self.cycle = 0
        self.limit = 20000 + 40 * len(self.beats) * (1 + int(10 * p_bp))
        self._readout_reset()
        self._cur = bytearray()
        self.res = {"ack": [], "done": [], "bypass": [], "cqe": [], "counters": None, "cycles": 0,
                    "beats_taken": []} if after is None else after.res
        if after is not None:
            self.cycle = after.cycle
            self.limit += after.cycle

    @property
    def sent_all(self):
        return not self.beats

    def _stuck(self):
        return f"({len(self.beats)} MAC beats left)"

    def inputs(self):
        rng = self.rng
        inp = {"s_axis__tvalid": 0, "s_axis__tdata": 0, "s_axis__tkeep": 0, "s_axis__tlast": 0,
               "s_axis__tuser": 0, "m_bypass__tready": 1, "m_ack__ready": 1, "m_done__ready": 1,
               "m_cqe__ready": 1,
               **{"s_axil__" + n: 0 for n in AXIL}, "s_axil__bready": 1, "s_axil__rready": 1}
        if self.beats and (self.p_idle == 0 or rng.random() >= self.p_idle):
            data, keep, last, user = self.beats[0]
            inp.update({"s_axis__tvalid": 1, "s_axis__tdata": data, "s_axis__tkeep": keep,
                        "s_axis__tlast": last, "s_axis__tuser": user})
        for n in ("m_bypass__tready", "m_ack__ready", "m_done__ready", "m_cqe__ready"):
            inp[n] = int(rng.random() >= self.p_bp)
        self.mem.inputs(inp, self.cycle)
        return inp

    def observe(self, inp, out):
        self.mem.observe(inp, out, self.cycle)
        res = self.res
        if inp["s_axis__tvalid"] and out["s_axis__tready"]:
            self.beats.pop(0)
            res["beats_taken"].append(self.cycle)
        if out["m_ack__valid"] and inp["m_ack__ready"]:
            res["ack"].append(out["m_ack__payload"])
        if out["m_done__valid"] and inp["m_done__ready"]:
            res["done"].append(out["m_done__payload"])
        if out["m_cqe__valid"] and inp["m_cqe__ready"]:
            res["cqe"].append(out["m_cqe__payload"])
        if out["m_bypass__tvalid"] and inp["m_bypass__tready"]:
            n = out["m_bypass__tkeep"].bit_length()
            self._cur += out["m_bypass__tdata"].to_bytes(self.nb, "little")[:n]
            if out["m_bypass__tlast"]:
                res["bypass"].append(bytes(self._cur))
                self._cur.clear()
        self.cycle += 1

    def settle(self, busy):
        super().settle(lambda: (busy() if callable(busy) else busy) or not self.mem.idle)


class Phases:
    """The receive half driven in three phases, each running until it is done: the setup rows
    through AXI4-Lite (``setup``, a :class:`regs_cases.Driver`), the traffic (``traffic``, with
    ``inputs``, ``observe``, ``settle``, ``finished``, ``cycle`` and the host memory ``mem``),
    the RX counters through AXI4-Lite (``readout``) (MR-ENG-105). Outside the traffic the MAC is
    idle, every output ready, and the host memory keeps answering. Shared by :class:`Driver` and
    the closed loop (:class:`metaroce.models.cosim.Cosim`); a subclass calls :meth:`_start`."""

    IDLE = {"s_axis__tvalid": 0, "s_axis__tdata": 0, "s_axis__tkeep": 0, "s_axis__tlast": 0,
            "s_axis__tuser": 0, "m_bypass__tready": 1, "m_ack__ready": 1, "m_done__ready": 1,
            "m_cqe__ready": 1}

    def _start(self, setup, traffic, readout, more=()):
        """``more``: phases between the traffic and the readout, alternately AXI4-Lite writes
        (a :class:`regs_cases.Driver`) and more traffic sharing the first's host memory and
        results (``_Traffic(..., after=...)``): rows a host writes between frames."""
        self.setup, self.traffic, self.readout = setup, traffic, readout
        self.phases = [setup, traffic, *more, readout]
        self._traffic = {id(d) for d in (traffic, *more) if not isinstance(d, rgc.Driver)}
        self._last = traffic            # the traffic phase whose cycle the host memory follows
        self.i = 0
        self.cycles = 0
        self.setup_cycles = None        # cycles of the setup phase, once it is done
        self.mem = traffic.mem
        self.amem = getattr(self, "amem", None)     # MR-ENG-167: the executor's slave, if any

    @property
    def finished(self):
        return self.i >= len(self.phases)

    def _is_traffic(self, d):
        return id(d) in self._traffic

    def inputs(self):
        d = self.phases[self.i]
        if self._is_traffic(d):
            inp = d.inputs()
        else:
            inp = d.inputs()
            del inp["m_cfg__ready"], inp["reg_data"]
            inp.update(self.IDLE)
            self.mem.inputs(inp, self._last.cycle)
        if self.amem is not None:
            inp["atom_base"] = self.atom_base
            self.amem.inputs(inp, self.cycles)
        return inp

    def observe(self, inp, out):
        d = self.phases[self.i]
        if self.amem is not None:
            self.amem.observe(inp, out, self.cycles)
        self.cycles += 1
        if self._is_traffic(d):
            self._last = d
            d.observe(inp, out)
            return
        assert not out["m_ack__valid"] and not out["m_axi__awvalid"], "engine output outside traffic"
        d.observe(inp, {**out, "m_cfg__valid": 0, "m_cfg__payload": 0, "reg_addr": 0})

    def settle(self, busy):
        d = self.phases[self.i]
        d.settle(busy)
        if d.finished:
            if d is self.setup:
                self.setup_cycles = self.cycles
            self.i += 1


class Driver(Phases):
    """The engine's traffic driver (MR-ENG-110): :class:`Phases` with the MAC traffic of a
    :class:`Run`. Results: ``res`` (the traffic's: ``ack``, ``done``, ``bypass``, ``cycles``),
    ``mem`` (the host memory), ``rx_counters`` and ``parser_counters`` (read through
    AXI4-Lite, MR-ENG-105), ``cycles`` (all phases)."""

    def __init__(self, width, run: Run, *, seed=0, p_idle=0.2, p_bp=0.3, latency=LATENCY):
        self.run = run
        self.amem = None
        self.rmap = register_map(run.setup.lay)
        rng = random.Random(seed)
        rows = [w for cw in run.setup.writes
                for w in rgc.row_writes(self.rmap, cw.table, cw.addr, cw.value, name=cw.name)]
        # ("cfg", CfgWrite) entries of the frames: rows written through AXI4-Lite between the
        # frames before and after them (a host posting receives and READs), each run of them one
        # phase once the traffic before it has settled
        segments = [(False, [])]       # (rows?, entries); the first phase is traffic
        for kind, x in run.frames:
            if segments[-1][0] != (kind == "cfg"):
                segments.append((kind == "cfg", []))
            segments[-1][1].append((kind, x))
        first = _Traffic(width, run, rng, p_idle=p_idle, p_bp=p_bp, latency=latency,
                         frames=segments[0][1])
        more, last = [], first
        for k, (rows_seg, seg) in enumerate(segments[1:]):
            if rows_seg:
                items = [w for _, cw in seg
                         for w in rgc.row_writes(self.rmap, cw.table, cw.addr, cw.value, name=cw.name)]
                more.append(rgc.Driver(items, seed=seed + 10 + k, p_idle=p_idle, p_bp=p_bp))
            else:
                last = _Traffic(width, run, rng, p_idle=p_idle, p_bp=p_bp, latency=latency,
                                frames=seg, after=last)
                more.append(last)
        self._start(rgc.Driver(rows, seed=seed + 1, p_idle=p_idle, p_bp=p_bp), first,
                    rgc.Driver(rgc.counter_items(("rx", "parser")), seed=seed + 2, p_idle=p_idle,
                               p_bp=p_bp), more)
        self.res = self.traffic.res
        if run.result_base is not None:
            # MR-ENG-167: the executor's AXI4 slave over the same host memory
            from .atomic_cases import AtomSlave
            self.amem = AtomSlave([self.mem], width, random.Random(seed + 31), p_bp=p_bp, latency=latency)
            self.atom_base = run.result_base

    @property
    def rx_counters(self):
        return rgc.counters_by_source(self.rmap, self.readout)["rx"]

    @property
    def parser_counters(self):
        """MR-ENG-105, MR-REG-033: the parser's counters as read through AXI4-Lite."""
        return rgc.counters_by_source(self.rmap, self.readout)["parser"]


def placed_image(run: Run, exp):
    """The host window as the RX model's placements (``rx_cases.expected``'s ``data`` at each
    ``place`` address) leave it, from zero."""
    image = bytearray(run.lay.size)
    for data, p in zip(exp["data"], exp["place"]):
        apply(image, run.lay.base, rc.unpack(run.setup.lay.place, p)["addr"], data)
    return image


def region_images(run: Run, mem: HostMemory):
    """The key regions' bytes in the host memory, by R_Key (as ``Traffic.memory``)."""
    out = {}
    for k in run.setup.keys:
        off = k.base - run.lay.base
        out[k.rkey] = bytes(mem.image[off:off + k.length])
    return out


def check(run: Run, drv: Driver, *, executed=True):
    """MR-ENG-110: the results of a run. Byte-exact against the receiving endpoint: every key
    region of the host memory equals its memory, the ACK/NAK requests its ACK and NAK frames.
    Against the blocks' packet-level models: the requests and the RX counters (MR-RX-050) as
    :func:`rx_cases.expected` gives them for the parser's records of the frames, the parser's
    counters as the frames' verdicts count them (MR-HW-060), the bypassed frames intact and in
    order (MR-HW-032), one OKAY done record per placement and nothing in the host memory
    outside the regions. ``executed=False`` (MR-ENG-156: atomic requests in the traffic, and no
    executor at the engine): the host memory equals the placements' image instead, since the
    endpoint executed the atomics the engine takes and discards. Returns a summary dict."""
    s, tr, res = run.setup, run.traffic, drv.res
    lay = s.lay
    exp = rc.expected(s.writes + run.cases, lay.conns, lay.paths, lay.keys, lay.streams)
    for i, (g, w) in enumerate(zip(res["ack"], exp["ack"])):
        assert g == w, f"ack #{i}: got {rc.unpack(lay.ack, g)}, expected {rc.unpack(lay.ack, w)}"
    assert len(res["ack"]) == len(exp["ack"]), f"{len(res['ack'])} requests, expected {len(exp['ack'])}"
    acks_equal = rc.requests(s, res["ack"]) == tr.acks
    assert acks_equal, "the ACK/NAK stream is not the receiving endpoint's"
    assert res["cqe"] == exp["cqe"], "completion records differ from the RX model's"
    cqes_equal = rc.completions(s, res["cqe"]) == tr.cqes
    assert cqes_equal, "the completion records are not the receiving endpoint's completions"
    images = region_images(run, drv.mem)
    if executed:
        memory_equal = images == tr.memory
        assert memory_equal, "the host memory is not the receiving endpoint's"
    else:
        memory_equal = drv.mem.image == placed_image(run, exp)
        assert memory_equal, "the host memory is not the placements' image"
    rest = bytearray(drv.mem.image)
    for k in s.keys:
        off = k.base - run.lay.base
        rest[off:off + k.length] = bytes(k.length)
    rows_equal = None
    if run.result_base is not None:
        rows_equal = check_result_rows(run, drv.mem.image)
        off = run.result_base - run.lay.base
        rest[off:] = bytes(len(rest) - off)
    assert not any(rest), "bytes written outside the key regions"
    done = [dunpack(_done_layout(lay), d) for d in res["done"]]
    places = [rc.unpack(lay.place, p) for p in exp["place"]]
    assert [(d["conn"], d["length"], d["error"]) for d in done] == [
        (p["conn"], p["length"], RESP_OKAY) for p in places], "done records are not the placements"
    assert res["bypass"] == run.bypass, "bypassed frames differ"
    want = [0] * PARSER_COUNTERS
    for _, f in run.frames:
        want[int(verdict(f + bytes(max(0, 60 - len(f))))[0])] += 1
    assert want[OVERFLOW_COUNTER] == 0
    assert drv.parser_counters == want, f"parser counters {drv.parser_counters} != {want}"
    assert drv.rx_counters == exp["counters"], f"RX counters {drv.rx_counters} != {exp['counters']}"
    return {"frames": len(run.frames), "requests": len(res["ack"]), "placements": len(places),
            "placed_bytes": sum(p["length"] for p in places), "acks_equal": acks_equal,
            "cqes": len(res["cqe"]), "cqes_equal": cqes_equal,
            "memory_equal": memory_equal, "rows_equal": rows_equal,
            "outcomes": {c.name: sum(1 for o in exp["outcomes"] if o.code == c) for c in rc.RxCode},
            "traffic": tr.stats}


def check_result_rows(run: Run, image):
    """MR-ENG-161, MR-ENG-167: every result row holds the original value of the last atomic the
    receiving endpoint executed on that row (``Traffic.atoms``, MR-RX-157), the value the
    endpoint's response carried. Returns the number of rows checked."""
    from .atomic import result_row
    want = {}
    for conn, stream, msg, laddr, cas, err, operands, orig in run.traffic.atoms:
        if not err:
            want[result_row(run.result_base, conn, stream, msg)] = bytes(orig)
    base = run.lay.base
    got = {a: bytes(image[a - base:a - base + 8]) for a in want}
    assert got == want, "a result row does not hold the original value the endpoint answered"
    return len(want)


def _done_layout(lay):
    from .dma_write import done_layout
    return done_layout(lay.conns)


def run_model(width, run: Run, *, seed=0, executed=True, model_cls=None, **kw):
    """:class:`EngineRxModel` alone through the :class:`Driver`, then :func:`check`; with the
    executor (MR-ENG-158) when the run has a result area."""
    lay = run.setup.lay
    model = EngineRxModel(width, lay.conns, lay.paths, lay.keys, streams=lay.streams, outstanding=32,
                          atomics=run.result_base is not None)
    if model_cls is not None and model.atom is not None:       # a negative control's executor
        model.atom = model_cls(width, model.lay.atom, model.lay.rsp)
    drv = Driver(width, run, seed=seed, **kw)
    run_alone(model, drv)
    return drv, check(run, drv, executed=executed)


# ------------------------------------------------------------------ the whole engine's counters

class ScriptedLoopback:
    """MR-ENG-105's TX counter run: the engine's MAC looped back as ``cosim_engine.Loopback``,
    with faults at fixed places instead of at random: the data frames numbered in ``drop_data``
    (in sending order) are lost; after the ACK frame numbered ``replay_at`` the one before it is
    delivered again (a stale ACK); after the ACK frame numbered ``forge_at`` two forged frames
    follow it: a copy whose cumulative PSN lies beyond anything sent (a bad ACK) and a NAK of its
    path. A frame the engine marked bad (``tuser`` on its last beat, MR-TX-124) is dropped, as a
    MAC does: :meth:`mark_bad` before its ``send``."""

    idle = True

    def __init__(self, *, drop_data=(), replay_at=None, forge_at=None):
        self.drop_data, self.replay_at, self.forge_at = set(drop_data), replay_at, forge_at
        self.rx = collections.deque()
        self.n_data = self.n_ack = self.lost = self.bad = self.forged = 0
        self._bad_next = False
        self._prev_ack = None

    def can_send(self, t):
        return True

    def mark_bad(self):
        self._bad_next = True

    def send(self, raw, first=None):
        from dataclasses import replace
        from . import codec
        from .endpoint import nak_frame
        from .wire import NakReason, Op
        if self._bad_next:
            self._bad_next = False
            self.bad += 1
            return
        f = codec.decode(raw)
        if f.bth.opcode not in (Op.MR_ACK, Op.MR_NAK):
            k, self.n_data = self.n_data, self.n_data + 1
            if k in self.drop_data:
                self.lost += 1
            else:
                self.rx.append(raw)
            return
        k, self.n_ack = self.n_ack, self.n_ack + 1
        self.rx.append(raw)
        if k == self.replay_at and self._prev_ack is not None:
            self.rx.append(self._prev_ack)
        if k == self.forge_at and f.mrah is not None:
            bad = replace(f, mrah=replace(f.mrah, cum_psn=(f.mrah.cum_psn + 5000) & 0xFFFFFF), icrc=None)
            nak = replace(nak_frame(f.ip.src, f.ip.dst, f.bth.pkey, f.bth.dest_qp, f.udp.sport, f.mrah.path,
                                    NakReason.PSN_WINDOW, f.mrah.trigger_psn), eth=f.eth)
            self.rx += [codec.encode(bad), codec.encode(nak)]
            self.forged += 2
        self._prev_ack = raw


class CounterLoop:
    """MR-ENG-105 on the whole engine: a ``cosim_engine.EngineLoop`` run to its end, then every
    counter of the ``sources`` read through AXI4-Lite, LO then HI (:func:`regs_cases.counter_items`,
    a :class:`regs_cases.Driver`), the loop's memories and readies still running. A frame the
    engine marks bad (``tuser``) is dropped by the loop's MAC (``mark_bad``, when it has one).
    ``counters`` (after the run): ``{source: [values]}``."""

    def __init__(self, loop, *, sources=("rx", "parser", "tx", "eng"), seed=0, p_idle=0.2, p_bp=0.3):
        self.loop = loop
        self.readout = rgc.Driver(rgc.counter_items(sources), seed=seed, p_idle=p_idle, p_bp=p_bp)

    @property
    def finished(self):
        return self.loop.finished and self.readout.finished

    def inputs(self):
        inp = self.loop.inputs()
        if self.loop.finished:
            inp.update({k: v for k, v in self.readout.inputs().items() if k.startswith("s_axil__")})
        return inp

    def observe(self, inp, out):
        if (out["m_axis__tvalid"] and inp["m_axis__tready"] and out["m_axis__tlast"]
                and out["m_axis__tuser"] and hasattr(self.loop.mac, "mark_bad")):
            self.loop.mac.mark_bad()
        reading = self.loop.finished
        self.loop.observe(inp, out)
        if reading:
            self.readout.observe({**inp, "m_cfg__ready": 1, "reg_data": 0},
                                 {**out, "m_cfg__valid": 0, "m_cfg__payload": 0, "reg_addr": 0})

    def settle(self, busy):
        if not self.loop.finished:
            self.loop.settle(busy)
        else:
            self.readout.settle(False)

    @property
    def counters(self):
        """The values read, ``{source: [values]}`` (MR-REG-030/033/034, MR-ENG-143)."""
        return rgc.counters_by_source(register_map(eng=True), self.readout)


class HostWrites:
    """MR-ENG-308: a ``cosim_engine.EngineLoop`` run to its end, then the configuration ``rows``
    (``rx_cases.CfgWrite``) written through ``s_axil`` (:func:`regs_cases.row_writes`), the loop's
    memories and readies still running; wrap it in :class:`CounterLoop` to read the counters
    after them."""

    def __init__(self, loop, rows, rmap, *, seed=0, p_idle=0.2, p_bp=0.3):
        self.loop, self.mac = loop, loop.mac
        self.regs = rgc.Driver([w for cw in rows for w in rgc.row_writes(rmap, cw.table, cw.addr, cw.value,
                                                                         name=cw.name)],
                               seed=seed, p_idle=p_idle, p_bp=p_bp)

    @property
    def finished(self):
        return self.loop.finished and self.regs.finished

    def inputs(self):
        inp = self.loop.inputs()
        if self.loop.finished:
            inp.update({k: v for k, v in self.regs.inputs().items() if k.startswith("s_axil__")})
        return inp

    def observe(self, inp, out):
        writing = self.loop.finished and not self.regs.finished
        self.loop.observe(inp, out)
        if writing:
            self.regs.observe({**inp, "m_cfg__ready": 1, "reg_data": 0},
                              {**out, "m_cfg__valid": 0, "m_cfg__payload": 0, "reg_addr": 0})

    def settle(self, busy):
        if not self.loop.finished:
            self.loop.settle(busy)
        else:
            self.regs.settle(False)


class PsnInitLoop:
    """MR-ENG-309: the stimulus of ``hdl.engine.PsnInit`` against ``PsnInitModel`` alone: each
    cycle a random tap (a record of a random table 1..9, table 9 one time in three, random
    address and data), taken with probability 1/2, ``psn_ignored`` high with probability 1/4, a
    random ``reg_addr``; ``m_psn.ready`` random (a write waits for it, MR-ENG-316). ``n`` cycles."""

    def __init__(self, cfg_lay, n=400, seed=0):
        from .rx import TABLE_TX_PSN, pack
        self.rng, self.n, self.cycle = random.Random(seed), n, 0
        self.cfg_lay, self.table9, self.pack = cfg_lay, TABLE_TX_PSN, pack
        f = dict(cfg_lay)
        self.addr_bits, self.data_bits = f["addr"].width, f["data"].width
        self.writes = 0

    @property
    def finished(self):
        return self.cycle >= self.n

    def inputs(self):
        r = self.rng
        table = self.table9 if r.random() < 1 / 3 else r.randint(1, self.table9)
        tap = self.pack(self.cfg_lay, {"table": table, "addr": r.getrandbits(self.addr_bits),
                                       "data": r.getrandbits(min(64, self.data_bits))})
        return {"cfg_tap": tap, "cfg_tap_take": int(r.random() < 0.5), "psn_ignored": int(r.random() < 0.25),
                "reg_addr": r.randrange(16), "m_psn__ready": r.randrange(2)}

    def observe(self, inp, out):
        self.writes += out["m_psn__valid"] & inp["m_psn__ready"]
        self.cycle += 1

    def settle(self, busy):
        pass


class PsnInitCycleModel:
    """:class:`~metaroce.models.engine.PsnInitModel` on the ports of ``hdl.engine.PsnInit``
    (Verilog names), for MR-ENG-309's lockstep."""

    INPUTS = ["cfg_tap", "cfg_tap_take", "psn_ignored", "reg_addr", "m_psn__ready"]
    OUTPUTS = ["m_psn__valid", "m_psn__payload", "reg_data"]

    def __init__(self, conns, paths, cfg_lay, psn_lay):
        from .engine import PsnInitModel
        self.m = PsnInitModel(conns, paths, cfg_lay, psn_lay)

    def port_names(self):
        return {"inputs": list(self.INPUTS), "outputs": list(self.OUTPUTS)}

    def busy(self):
        return False

    def step(self, inputs):
        g = inputs.get
        v, rec, reg = self.m.out()
        self.m.step(g("cfg_tap_take", 0), g("cfg_tap", 0), g("psn_ignored", 0), g("reg_addr", 0),
                    g("m_psn__ready", 1))
        return {"m_psn__valid": v, "m_psn__payload": rec, "reg_data": reg}


#: MR-ENG-105: the TX half's retry limit in :func:`tx_counter_run` (two timeouts in a row on a
#: path report RETRY_EXC_ERR, so that ``errors`` moves within a short run).
TX_COUNTER_RETRY_LIMIT = 1


def tx_counter_run(width=64, *, nbytes=8192, seed=2, p_bp=0.2):
    """MR-ENG-105, MR-REG-034: a whole-engine loopback run (``cosim_engine.loopback_run``: the
    engine writes to itself; ACK every packet) in which every TX counter but ``sent_bad`` moves
    (``sent_bad`` counts a scheduler numbering PSNs wrongly, MR-TX-020: no traffic moves it):
    two WRITEs of ``nbytes`` and a third whose payload read fails (the read memory's error
    window: a frame marked bad, MR-TX-124, dropped by the MAC; a LOC_PROT_ERR completion), a
    :class:`ScriptedLoopback` losing data frames 1 (a gap, found by SACK), 7 and 10..15 (a tail,
    its probe and what follows: two timeouts in a row of one path, with
    :data:`TX_COUNTER_RETRY_LIMIT` a retry-limit report),
    replaying an ACK (stale) and forging a bad ACK and a NAK; then every counter read through
    AXI4-Lite (:class:`CounterLoop`). The engine takes ``retry_limit=TX_COUNTER_RETRY_LIMIT``.
    Returns ``(counter loop, setup, region, source, bad work request)``."""
    from .cosim_engine import loopback_run
    from .tx_sched import OP_WRITE
    from .tx_sched_cases import wr_item
    drv, s, region, source = loopback_run(width, nbytes, seed=seed, loss=0.0, n_writes=2, ack_every=1,
                                          p_bp=p_bp)
    c = s.conns[0]
    bad = wr_item(c.qp, 1, 48, wr_id=200, op=OP_WRITE, laddr=drv.rmem.lay.bad_base, va=nbytes,
                  rkey=region.rkey)
    drv.items.append(bad)
    # 1: a gap; 7: a tail, whose tail probe (10, MR-TX-179) and the frames after it (11..15)
    # are lost too: since the path verdicts (hw-tx-sched.md MR-TXS-114/117) a timed-out path
    # is probing and the resend goes on another path, so the loss runs on until a path times
    # out twice in a row (every path unhealthy: a reroute keeps it active; the retry limit)
    drv.mac = ScriptedLoopback(drop_data={1, 7, 10, 11, 12, 13, 14, 15}, replay_at=3, forge_at=4)
    return CounterLoop(drv, seed=seed + 5, p_bp=p_bp), s, region, source, bad


def model_counters(model):
    """The counters of an ``EngineModel`` by source, as its register block reads them."""
    from .atomic import ATOM_CTR
    from .tx import TX_CTR_BASE
    p = model.rx.parser
    # MR-TX-126, MR-TX-181: the unit's counters below TX_CTR_BASE (its tail_probes is not mapped)
    return {"rx": list(model.rx.rx.rx.counters),
            "parser": list(p.cnt) + [p.cnt_overflow],
            "tx": list(model.tx.rtx.counters)[:TX_CTR_BASE] + list(model.tx.counters),
            # MR-ENG-143; MR-ENG-226: the atomic executor's after the response join's
            "eng": list(model.rsp.ctr) + (list(model.rx.atom.ctr) if model.rx.atom is not None
                                          else [0] * len(ATOM_CTR)) + [model.psn.ctr]}      # MR-ENG-305


def check_counter_loop(cl: CounterLoop, model, region, source, bad):
    """MR-ENG-105 on :func:`tx_counter_run`: every RX, parser and TX counter read through AXI4-Lite
    (LO then HI) equals the model's at the end of the run, every TX counter but ``sent_bad``
    moved; every work request completed once, the failing read's with LOC_PROT_ERR (4), the
    retry-limit reports are the ``errors`` counter's, and the bytes of every work request that
    completed with success are in the region. Returns the counters read."""
    from .regs import tx_counter_names
    from .tx_cases import STATUS_LOC_PROT_ERR
    got, want = cl.counters, model_counters(model)
    assert got["rx"] == want["rx"], f"RX counters {got['rx']} != {want['rx']}"
    assert got["parser"] == want["parser"], f"parser counters {got['parser']} != {want['parser']}"
    assert got["tx"] == want["tx"], f"TX counters {got['tx']} != {want['tx']}"
    assert got["eng"] == want["eng"], f"engine counters {got['eng']} != {want['eng']}"
    tx = dict(zip(tx_counter_names(), got["tx"]))
    still = [n for n, v in tx.items() if v == 0 and n != "SENT_BAD"]
    assert not still, f"TX counters that never moved: {still}"
    loop = cl.loop
    done = {c["wr_id"]: c for _, c in loop.res["tx_cqe"]}
    assert sorted(done) == sorted(w["wr_id"] for w in loop.items) and len(done) == len(loop.res["tx_cqe"])
    assert done[bad["wr_id"]]["status"] == STATUS_LOC_PROT_ERR
    assert len(loop.res["errors"]) == tx["ERRORS"]
    from .cosim_engine import region_image
    image = region_image(loop, region, len(source))
    for w in loop.items:
        if done[w["wr_id"]]["status"] == 0:
            a = w["va"]
            assert image[a:a + w["length"]] == source[a:a + w["length"]], f"WR {w['wr_id']} not placed"
    return got


class AckInLoop:
    """MR-ENG-320: the stimulus of ``hdl.engine.AckIn`` (with hints) against ``AckInModel`` alone:
    each cycle a random metadata record (random bits; opcode MR_ACK or MR_NAK, the MRAH present
    three times in four, DestQP below ``conns`` seven times in eight, ``rate_mbps`` 0, below
    2^19 or above it), offered with probability 3/4; ``m_ack.ready`` random. ``n`` cycles."""

    def __init__(self, conns, n=400, seed=0):
        from .engine import _META_AT
        from .parser import META_LAYOUT
        from .wire import Op
        self.rng, self.n, self.cycle, self.conns = random.Random(seed), n, 0, conns
        self.at, self.bits = _META_AT, META_LAYOUT.size
        self.ops = (int(Op.MR_ACK), int(Op.MR_NAK))
        self.taken = self.hinted = self.saturated = 0

    def _set(self, v, path, x):
        off, mask = self.at[path]
        return (v & ~(mask << off)) | ((x & mask) << off)

    @property
    def finished(self):
        return self.cycle >= self.n

    def inputs(self):
        r = self.rng
        v = r.getrandbits(self.bits)
        v = self._set(v, ("bth", "opcode"), r.choice(self.ops))
        v = self._set(v, ("has", "mrah"), int(r.random() < 0.75))
        v = self._set(v, ("bth", "dest_qp"), r.randrange(self.conns) if r.random() < 7 / 8 else
                      r.randrange(self.conns, 1 << 24))
        for path in (("mrah", "trigger_psn"), ("mrah", "cum_psn"), ("mrnh", "psn")):
            v = self._set(v, path, r.getrandbits(24))        # the record's PSNs are 24 bits
        rate = r.choice((0, r.randrange(1, 1 << 19), r.randrange(1 << 19, 1 << 32)))
        v = self._set(v, ("mrah", "rate_mbps"), rate)
        return {"s_meta__valid": int(r.random() < 0.75), "s_meta__payload": v,
                "m_ack__ready": r.randrange(2)}

    def observe(self, inp, out):
        if inp["s_meta__valid"] and out["s_meta__ready"]:
            self.taken += 1
            from .engine import meta_field
            v = inp["s_meta__payload"]
            if meta_field(v, "has", "mrah") and meta_field(v, "bth", "dest_qp") < self.conns:
                rate = meta_field(v, "mrah", "rate_mbps")
                self.hinted += rate != 0
                self.saturated += rate >= 1 << 19
        self.cycle += 1

    def settle(self, busy):
        pass


class AckInCycleModel:
    """:class:`~metaroce.models.engine.AckInModel` on the ports of ``hdl.engine.AckIn`` (Verilog
    names), for MR-ENG-320's lockstep."""

    INPUTS = ["s_meta__valid", "s_meta__payload", "m_ack__ready"]
    OUTPUTS = ["s_meta__ready", "m_ack__valid", "m_ack__payload"]

    def __init__(self, conns, ack_layout, **kw):
        from .engine import AckInModel
        self.m = AckInModel(conns, ack_layout, **kw)

    def port_names(self):
        return {"inputs": list(self.INPUTS), "outputs": list(self.OUTPUTS)}

    def busy(self):
        return self.m.busy()

    def step(self, inputs):
        g = inputs.get
        ready = self.m.in_ready()
        v, head = self.m.out()
        self.m.step(g("s_meta__valid", 0), g("s_meta__payload", 0), g("m_ack__ready", 0))
        return {"s_meta__ready": ready, "m_ack__valid": v, "m_ack__payload": head}
