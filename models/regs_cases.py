"""The register block's one verification stack, simulator-independent part (MR-REG-*).

* items: :class:`Write` and :class:`Read` (one AXI4-Lite access each);
* traffic: :func:`row_writes` (an RX configuration write as the host does it through the row
  window), :func:`map_walk`, :func:`counter_reads`, :func:`random_accesses`;
* :class:`Driver`: an AXI4-Lite master cycle by cycle from one seed (AW and W in random order
  and delays, random BREADY/RREADY and ``m_cfg`` ready), with a stand-in for the RX engine's
  counter port whose counters keep moving (so a torn 64-bit read shows);
* :func:`check`: the collected responses and records against :class:`RegFile` replaying the
  accesses one at a time, the counter reads against the counters' history;
* :func:`run_model`: :class:`RegsCycleModel` alone through the driver;
* with the RX engine (MR-REG-060): :class:`RegsRxModel` (both cycle models joined as the RTL
  joins the blocks) and :class:`PhasedDriver` (register and RX drivers in turn).
"""
from __future__ import annotations

import random
from dataclasses import dataclass

from . import records
from .driver import CounterReadout, run_alone
from .regs import (ADDR_BITS, OKAY, RegFile, RegsCycleModel, ctr_base, parser_counter_names,
                   tx_counter_names)
from .rx import GLOBAL, N_COUNTERS, TABLE_GLOBAL, pack, unpack

AXIL = "s_axil__"
U32 = 0xFFFFFFFF


@dataclass(frozen=True)
class Write:
    addr: int
    data: int
    strb: int = 0xF
    name: str = ""


@dataclass(frozen=True)
class Read:
    addr: int
    name: str = ""


def row_writes(rmap, table, addr, value, *, name="row"):
    """MR-REG-020..022: one row as the host writes it: the data words, the table and row index,
    then the commit (the last word; nothing reaches the engine before it). A global row
    (table 0) is its registers (MR-REG-021): the last write sends it."""
    if table == TABLE_GLOBAL:
        g = unpack(GLOBAL, value)
        return [Write(rmap.get(f"GLOBAL_{n.upper()}").offset, g[n], name=f"{name}.{n}") for n, _ in GLOBAL]
    out = [Write(rmap.get(f"CFG_DATA{i}").offset, (value >> (32 * i)) & U32, name=f"{name}.d{i}")
           for i in range(rmap.data_words)]
    out += [Write(rmap.get("CFG_TABLE").offset, table, name=f"{name}.table"),
            Write(rmap.get("CFG_ADDR").offset, addr, name=f"{name}.addr"),
            Write(rmap.get("CFG_COMMIT").offset, 1, name=f"{name}.commit")]
    return out


def _unmapped(rmap, rng):
    used = {r.offset >> 2 for r in rmap.regs}
    while True:
        w = rng.randrange(1 << (ADDR_BITS - 2))
        if w not in used:
            return w << 2


def map_walk(rmap, rng):
    """MR-REG-004, MR-REG-010/011/012, MR-REG-020/021/022: every register read at reset; every writable register
    written with random data and strobes and read back; writes to RO and reads of WO registers
    and of unmapped addresses (SLVERR, ERROR bits); the W1C clear; commits with table 0 (refused)
    and without bit 0 or its strobe (nothing sent); unaligned addresses."""
    out = [Read(r.offset, f"reset.{r.name}") for r in rmap.regs]
    for r in rmap.regs:
        if r.access in ("RW",):
            out.append(Write(r.offset, rng.getrandbits(32), rng.choice([0xF, 0xF, 0x1, 0x6, 0x8, 0x0]),
                             f"w.{r.name}"))
            out.append(Read(r.offset | rng.randrange(4), f"r.{r.name}"))
    ro = [r for r in rmap.regs if r.access == "RO"]
    for r in rng.sample(ro, 4):
        out += [Write(r.offset, rng.getrandbits(32), name=f"ro.{r.name}"), Read(r.offset, f"ro-back.{r.name}")]
    for _ in range(3):
        a = _unmapped(rmap, rng)
        out += [Write(a, rng.getrandbits(32), name="unmapped.w"), Read(a, "unmapped.r")]
    commit = rmap.get("CFG_COMMIT").offset
    table = rmap.get("CFG_TABLE").offset
    error = rmap.get("ERROR").offset
    out += [Read(commit, "read-WO"), Read(error, "error-all"),
            Write(error, 0x2, name="w1c-read-bit"), Read(error, "error-after-clear"),
            Write(table, 0, name="table0"), Write(commit, 1, name="commit-table0"),
            Read(error, "error-commit"), Write(error, 0xFFFFFFFF, 0x1, name="w1c-all"),
            Read(error, "error-clear"),
            Write(table, 2, name="table2"), Write(commit, 0, name="commit-bit0-clear"),
            Write(commit, 1, 0x2, name="commit-no-strobe"), Write(commit, 3, name="commit"),
            Read(rmap.get("CFG_ADDR").offset, "addr-back")]
    return out


def counter_reads(rmap, rng, n=12):
    """MR-REG-030..034: LO then HI of one counter (an atomic pair), HI alone, HI after the LO of
    another counter of the same source and of the same index of another source (the latch is
    one counter's), every counter's LO once, each source's window beyond its last counter."""
    out = []
    ctrs = [(r.source, r.index) for r in rmap.regs if r.kind == "ctr_lo"]
    n_of = {src: rmap.n_counters(src) for src in rmap.sources}
    for src, i in ctrs:
        out.append(Read(ctr_base(src) + 8 * i, f"lo.{src}{i}"))
    for k in range(n):
        src, i = rng.choice(ctrs)
        out += [Read(ctr_base(src) + 8 * i, f"pair{k}.lo"), Read(ctr_base(src) + 8 * i + 4, f"pair{k}.hi")]
        if k % 3 == 1:
            j = (i + 1) % n_of[src]
            out.append(Read(ctr_base(src) + 8 * j + 4, f"other{k}.hi"))
        if k % 3 == 2 and len(rmap.sources) > 1:
            other = [s for s in rmap.sources if s != src and i < n_of[s]]
            if other:
                out.append(Read(ctr_base(rng.choice(other)) + 8 * i + 4, f"source{k}.hi"))
    # beyond the last counter of each window: unmapped
    for src in rmap.sources:
        if n_of[src] < (32 if src == "rx" else 16):
            out.append(Read(ctr_base(src) + 8 * n_of[src], f"beyond.{src}"))
    return out


def random_accesses(rmap, rng, n=200, *, safe_reads=False):
    """A random mix over the whole map and unmapped addresses. ``safe_reads``: reads only of
    registers no write changes (constants, counters), for overlapped read and write channels."""
    regs = rmap.regs
    out = []
    consts = [r for r in regs if r.kind in ("const", "ctr_lo", "ctr_hi")]
    for i in range(n):
        if rng.random() < 0.5:
            r = rng.choice(consts if safe_reads else regs)
            addr = r.offset if safe_reads or rng.random() < 0.95 else _unmapped(rmap, rng)
            out.append(Read(addr | rng.randrange(4), f"rr{i}"))
        else:
            if rng.random() < 0.05:
                out.append(Write(_unmapped(rmap, rng), rng.getrandbits(32), name=f"rw{i}"))
                continue
            r = rng.choice(regs)
            data = rng.getrandbits(32)
            if r.name == "CFG_TABLE" and rng.random() < 0.7:
                data = rng.randrange(1, 4)
            out.append(Write(r.offset, data, rng.choice([0xF, 0xF, 0xF, rng.getrandbits(4)]), f"rw{i}"))
    return out


# ------------------------------------------------------------------ driver

SHAPES = {"none": (0.0, 0.0), "idle": (0.4, 0.0), "bp": (0.0, 0.5), "both": (0.3, 0.4)}


def n_source_counters(source):
    """How many counters a source's port has (MR-RX-050, MR-HW-060, MR-TX-040/126, MR-ENG-143)."""
    from .regs import eng_counter_names
    return {"rx": N_COUNTERS, "parser": len(parser_counter_names()), "tx": len(tx_counter_names()),
            "eng": len(eng_counter_names())}[source]


class Counters:
    """A stand-in for the counter ports of the ``sources`` (the RX engine's, MR-RX-050; the
    parser's and the TX half's, MR-REG-033/034): a source's ``reg_data`` is its counter
    ``reg_addr`` of the previous cycle (0 beyond its counters); the counters grow by random
    steps that carry into the high word every few cycles. ``history[source][i]``:
    ``[(first cycle, value)]``; ``reg_data`` is the RX engine's, ``data[source]`` each
    source's."""

    def __init__(self, rng, p_step=0.5, sources=("rx",)):
        self.rng = rng
        self.p_step = p_step
        self.sources = tuple(sources)
        self.values = {src: [rng.choice([0, (1 << 32) - rng.randrange(1 << 20), rng.getrandbits(40)])
                             for _ in range(n_source_counters(src))] for src in self.sources}
        self.value = self.values[self.sources[0]]
        self.history = {src: [[(0, v)] for v in vals] for src, vals in self.values.items()}
        self.data = {src: 0 for src in self.sources}
        self.reg_data = 0

    def inputs(self):
        """The ``reg_data`` inputs of the register block, by Verilog name."""
        return {("" if src == "rx" else src + "_") + "reg_data": v for src, v in self.data.items()}

    def clock(self, cycle, reg_addr):
        """The edge ending ``cycle``: the read registers, then the counters move. ``reg_addr``:
        the RX engine's select, or a dict of every source's by source."""
        addrs = reg_addr if isinstance(reg_addr, dict) else {"rx": reg_addr}
        for src, vals in self.values.items():
            a = addrs.get(src, 0)
            self.data[src] = vals[a] if a < len(vals) else 0
        self.reg_data = self.data[self.sources[0]]
        for src, vals in self.values.items():
            hist = self.history[src]
            for i in range(len(vals)):
                if self.rng.random() < self.p_step:
                    vals[i] = (vals[i] + self.rng.randrange(1, 1 << 31)) & ((1 << 64) - 1)
                    hist[i].append((cycle + 1, vals[i]))

    @staticmethod
    def addrs(out):
        """Every source's ``reg_addr`` among the register block's outputs ``out``."""
        return {src: out[("" if src == "rx" else src + "_") + "reg_addr"] for src in ("rx", "parser", "tx")
                if ("" if src == "rx" else src + "_") + "reg_addr" in out}

    def held(self, i, first, last, source="rx"):
        """The values counter ``i`` of ``source`` held in cycles ``first..last``."""
        h = self.history[source][i]
        out = []
        for k, (c, v) in enumerate(h):
            end = h[k + 1][0] - 1 if k + 1 < len(h) else 1 << 62
            if c <= last and end >= first:
                out.append(v)
        return out


class Driver(CounterReadout):
    """An AXI4-Lite master, a ``m_cfg`` sink and the counter stand-in, cycle by cycle from one
    seed (MR-REG-002, MR-REG-040..043).

    ``items``: :class:`Write`/:class:`Read` in order. Without ``overlap`` an access starts when
    the previous one has its response; with it, writes and reads go on their own channels at
    once (each channel in order). Per access AW and W (or AR) turn valid after independent random
    delays (``p_idle``); BREADY, RREADY and ``m_cfg`` ready are low with probability ``p_bp``.
    Results in ``res``: ``b`` ``[(item index, resp)]``, ``r`` ``[(item index, resp, data)]``,
    ``cfg`` (flat records taken), ``span`` ``{item index: (start cycle, end cycle)}``,
    ``cycles``."""

    def __init__(self, items, *, seed=0, p_idle=0.3, p_bp=0.4, overlap=False, quiet_cycles=4,
                 sources=("rx",), pacing=False):
        self.items = list(items)
        self.pacing = pacing            # MR-REG-065: a random-ready sink on m_pace
        self.rng = random.Random(seed)
        self.p_idle, self.p_bp = p_idle, p_bp
        self.overlap = overlap
        self.ctr = Counters(random.Random(seed + 1000), sources=sources)
        self.quiet_cycles = quiet_cycles
        self.cycle = 0
        self.read_counters = False          # counters are read as AXI4-Lite items
        self._readout_reset()
        self.limit = 1000 + 60 * len(self.items) * (1 + int(10 * p_bp))
        self.wq = [i for i, it in enumerate(self.items) if isinstance(it, Write)]
        self.rq = [i for i, it in enumerate(self.items) if isinstance(it, Read)]
        self.next_item = 0          # without overlap: the next item to start
        self.w = None               # [index, aw_at, w_at, aw_done, w_done]
        self.r = None               # [index, ar_at, ar_done]
        self.res = {"b": [], "r": [], "cfg": [], "pace": [], "span": {}, "cycles": 0}

    def _delay(self):
        if self.p_idle == 0:
            return 0
        return 0 if self.rng.random() >= self.p_idle else self.rng.choice([1, 1, 2, 3, 5])

    def _start(self):
        c = self.cycle
        if self.overlap:
            if self.w is None and self.wq:
                i = self.wq.pop(0)
                self.w = [i, c + self._delay(), c + self._delay(), False, False]
                self.res["span"][i] = [c, None]
            if self.r is None and self.rq:
                i = self.rq.pop(0)
                self.r = [i, c + self._delay(), False]
                self.res["span"][i] = [c, None]
            return
        if self.w is None and self.r is None and self.next_item < len(self.items):
            i = self.next_item
            self.next_item += 1
            if isinstance(self.items[i], Write):
                self.w = [i, c + self._delay(), c + self._delay(), False, False]
            else:
                self.r = [i, c + self._delay(), False]
            self.res["span"][i] = [c, None]

    @property
    def sent_all(self):
        if self.overlap:
            return not self.wq and not self.rq and self.w is None and self.r is None
        return self.next_item >= len(self.items) and self.w is None and self.r is None

    def inputs(self):
        self._start()
        c, rng = self.cycle, self.rng
        inp = {AXIL + n: 0 for n in ("awaddr", "awvalid", "wdata", "wstrb", "wvalid", "araddr", "arvalid")}
        if self.w is not None:
            i, aw_at, w_at, aw_done, w_done = self.w
            it = self.items[i]
            if not aw_done and c >= aw_at:
                inp[AXIL + "awvalid"], inp[AXIL + "awaddr"] = 1, it.addr
            if not w_done and c >= w_at:
                inp[AXIL + "wvalid"], inp[AXIL + "wdata"], inp[AXIL + "wstrb"] = 1, it.data, it.strb
        if self.r is not None:
            i, ar_at, ar_done = self.r
            if not ar_done and c >= ar_at:
                inp[AXIL + "arvalid"], inp[AXIL + "araddr"] = 1, self.items[i].addr
        for n in (AXIL + "bready", AXIL + "rready", "m_cfg__ready") + (("m_pace__ready",) if self.pacing else ()):
            inp[n] = int(self.p_bp == 0 or rng.random() >= self.p_bp)
        inp.update(self.ctr.inputs())
        return inp

    def observe(self, inp, out):
        res, c = self.res, self.cycle
        if self.w is not None:
            if inp[AXIL + "awvalid"] and out[AXIL + "awready"]:
                self.w[3] = True
            if inp[AXIL + "wvalid"] and out[AXIL + "wready"]:
                self.w[4] = True
            if out[AXIL + "bvalid"] and inp[AXIL + "bready"]:
                assert self.w[3] and self.w[4], "B before AW and W were taken"
                res["b"].append((self.w[0], out[AXIL + "bresp"]))
                res["span"][self.w[0]][1] = c
                self.w = None
        elif out[AXIL + "bvalid"] and inp[AXIL + "bready"]:
            raise AssertionError(f"cycle {c}: a B response without a write")
        if self.r is not None:
            if inp[AXIL + "arvalid"] and out[AXIL + "arready"]:
                self.r[2] = True
            if out[AXIL + "rvalid"] and inp[AXIL + "rready"]:
                assert self.r[2], "R before AR was taken"
                res["r"].append((self.r[0], out[AXIL + "rresp"], out[AXIL + "rdata"]))
                res["span"][self.r[0]][1] = c
                self.r = None
        elif out[AXIL + "rvalid"] and inp[AXIL + "rready"]:
            raise AssertionError(f"cycle {c}: an R response without a read")
        if out["m_cfg__valid"] and inp["m_cfg__ready"]:
            res["cfg"].append(out["m_cfg__payload"])
        if self.pacing and out["m_pace__valid"] and inp["m_pace__ready"]:
            res["pace"].append(out["m_pace__payload"])
        self.ctr.clock(c, Counters.addrs(out))
        self.cycle += 1

    def _stuck(self):
        return f"(write {self.w}, read {self.r}, item {self.next_item}/{len(self.items)})"


# ------------------------------------------------------------------ checker

def check(items, res, ctr: Counters, lay, rf: RegFile | None = None):
    """The one checker (MR-REG-004, MR-REG-010/011/012, MR-REG-020..024, MR-REG-030/031/032): every access's response and read data and
    every record sent, against :class:`RegFile` replaying the accesses in item order; counter
    reads against what the counter held while the read was in flight, a LO/HI pair as one
    64-bit value. ``rf``: the register file as an earlier run left it (default: reset). Returns
    the replayed register file."""
    rf = rf or RegFile(lay)
    pacing = any(r.kind == "pace_commit" for r in rf.map.regs)
    if pacing:
        from .pacer import frame_layouts
        pace_lay = frame_layouts(lay.conns)["write"]
    paces = []
    b = dict((i, resp) for i, resp in res["b"])
    r = dict((i, (resp, data)) for i, resp, data in res["r"])
    assert len(b) + len(r) == len(items), f"{len(b) + len(r)} responses for {len(items)} accesses"
    records = []
    pair = {}                   # counter -> candidate 64-bit values of its last LO read
    for i, it in enumerate(items):
        if isinstance(it, Write):
            resp, emit, es, ec = rf.write(it.addr, it.data, it.strb)
            rf.apply_error(es, ec)
            if emit == "pace":
                paces.append(pack(pace_lay, rf.pace_record()))      # MR-REG-064
            elif emit is not None:
                records.append(pack(lay.cfg, rf.record(emit == "global")))
            assert b[i] == resp, f"access {i} {it}: BRESP {b[i]}, expected {resp}"
            continue
        got_resp, got = r[i]
        reg = rf.decode(it.addr)
        first, last = res["span"][i]
        if reg is not None and reg.kind in ("ctr_lo", "ctr_hi"):
            k = (reg.source, reg.index)
            held = ctr.held(reg.index, first, last, reg.source)
            if reg.kind == "ctr_lo":
                cand = [v for v in held if v & U32 == got]
                assert cand, f"access {i} {it}: LO {got:#x} not a value counter {k} held {[hex(v) for v in held]}"
                pair[k] = cand
                rf.read(it.addr, cand[0])
            else:
                latched = rf.latch_valid and rf.latch_key == k
                pool = pair[k] if latched else held
                assert any(v >> 32 == got for v in pool), (
                    f"access {i} {it}: HI {got:#x} not the high half of {'the LO read' if latched else 'a value held'}: "
                    f"{[hex(v) for v in pool]}")
                if latched:
                    pair[k] = [v for v in pool if v >> 32 == got]
            assert got_resp == OKAY
            continue
        resp, want, es = rf.read(it.addr, 0)
        rf.apply_error(es, 0)
        assert (got_resp, got) == (resp, want), (
            f"access {i} {it}: read {got_resp}/{got:#x}, expected {resp}/{want:#x}")
    assert res["cfg"] == records, (
        f"records sent: {[unpack(lay.cfg, v) for v in res['cfg']]}, expected {[unpack(lay.cfg, v) for v in records]}")
    if pacing:
        assert res["pace"] == paces, (
            f"pacer writes sent: {[unpack(pace_lay, v) for v in res['pace']]}, "
            f"expected {[unpack(pace_lay, v) for v in paces]}")
    return rf


def pace_items(rmap, rng, n=40):
    """MR-REG-062..065: accesses of the pacing window: the configuration and the write window's
    registers written (random data and strobes) and read back, commits with and without bit 0
    and bit 1 (set_time), reads of the WO commit (SLVERR), in a random order."""
    regs = [r for r in rmap.regs if r.name.startswith("PACE_")]
    commit = rmap.get("PACE_COMMIT")
    out = []
    for _ in range(n):
        r = commit if rng.random() < 0.3 else rng.choice(regs)
        if r is commit:
            out.append(Write(r.offset, rng.choice([1, 3, 3, 2, 0, rng.getrandbits(32)]),
                             rng.choice([0xF, 0xF, 0xF, 0x1, 0xE]), name="pace.commit"))
        elif rng.random() < 0.6:
            out.append(Write(r.offset, rng.getrandbits(32), rng.choice([0xF, 0xF, 0x3, 0xC, 0x5]),
                             name=r.name.lower()))
        if rng.random() < 0.5:
            out.append(Read(rng.choice(regs).offset, name="pace.read"))
    return out


def run_model(items, lay_args=(256, 4, 256), *, seed=0, checked=True, parser=True, tx=True, **kw):
    """:class:`RegsCycleModel` alone through the :class:`Driver`; returns the driver."""
    model = RegsCycleModel(*lay_args, parser=parser, tx=tx)
    drv = Driver(items, seed=seed, sources=model.sources, **kw)
    run_alone(model, drv)
    if checked:
        check(drv.items, drv.res, drv.ctr, model.lay, RegFile(model.lay, parser=parser, tx=tx))
    return drv


# ------------------------------------------------------------------ with the RX engine

class RegsRxModel:
    """The model of a top joining the register block and the RX engine as hdl does
    (``m_cfg`` -> ``s_cfg``, ``reg_addr`` and ``reg_data`` wire to wire): both cycle models,
    the register block's outputs known before its inputs (MR-REG-043), so that each cycle the
    RX model steps with them and the register block with the RX model's (MR-REG-060). Inputs:
    the AXI4-Lite port and the RX engine's; outputs: every output of both blocks."""

    def __init__(self, width, conns, paths, keys, streams=records.STREAMS):
        from .rx import RxCycleModel
        self.regs = RegsCycleModel(conns, paths, keys, parser=False, tx=False)
        self.rx = RxCycleModel(width, conns, paths, keys, streams=streams)

    @staticmethod
    def port_names():
        from .regs import port_lists
        from .rx import RxCycleModel
        rx = RxCycleModel.port_names()
        INPUTS, OUTPUTS = port_lists(parser=False, tx=False)
        return {"inputs": [n for n in INPUTS if n not in ("m_cfg__ready", "reg_data")]
                + [n for n in rx["inputs"] if n not in ("s_cfg__payload", "s_cfg__valid", "reg_addr")],
                "outputs": list(OUTPUTS) + rx["outputs"]}

    def busy(self):
        return self.regs.busy() or self.rx.busy()

    def step(self, inputs):
        ro = self.regs.outputs()
        rx_out = self.rx.step({**inputs, "s_cfg__valid": ro["m_cfg__valid"],
                               "s_cfg__payload": ro["m_cfg__payload"], "reg_addr": ro["reg_addr"]})
        ro = self.regs.step({**inputs, "m_cfg__ready": rx_out["s_cfg__ready"], "reg_data": rx_out["reg_data"]})
        return {**ro, **rx_out}


class PhasedDriver:
    """Drives the top of :class:`RegsRxModel` with one driver after another: a register
    :class:`Driver` (AXI4-Lite accesses; the RX side idle, its outputs drained) or an RX
    ``rx_cases.Driver`` (packets; the AXI4-Lite side idle). Each runs until it is finished."""

    AXI_IDLE = {AXIL + n: 0 for n in ("awaddr", "awvalid", "wdata", "wstrb", "wvalid", "araddr", "arvalid")}
    RX_IDLE = {"s_meta__valid": 0, "s_meta__payload": 0, "s_payload__valid": 0, "s_payload__payload": 0,
               "m_ack__ready": 1, "m_place__ready": 1, "m_data__ready": 1, "m_cqe__ready": 1}

    def __init__(self, phases):
        self.phases = list(phases)
        self.i = 0

    @property
    def finished(self):
        return self.i >= len(self.phases)

    def _is_regs(self, d):
        return isinstance(d, Driver)

    def inputs(self):
        d = self.phases[self.i]
        inp = d.inputs()
        if self._is_regs(d):
            inp.pop("m_cfg__ready")
            inp.pop("reg_data")
            return {**inp, **self.RX_IDLE}
        for n in ("s_cfg__valid", "s_cfg__payload", "reg_addr"):
            inp.pop(n)
        return {**inp, **self.AXI_IDLE, AXIL + "bready": 1, AXIL + "rready": 1}

    def observe(self, inp, out):
        d = self.phases[self.i]
        if self._is_regs(d):
            d.observe({**inp, "m_cfg__ready": out["s_cfg__ready"]}, out)
        else:
            d.observe(inp, out)

    def settle(self, busy):
        d = self.phases[self.i]
        d.settle(busy)
        if d.finished:
            self.i += 1


def counters_read(rmap, driver: Driver):
    """The 64-bit counters a register driver of :func:`counter_items` read (LO, HI pairs)."""
    r = {i: (resp, data) for i, resp, data in driver.res["r"]}
    out = []
    for k in range(0, len(driver.items), 2):
        (r1, lo), (r2, hi) = r[k], r[k + 1]
        assert r1 == r2 == OKAY
        out.append(hi << 32 | lo)
    return out


def counters_by_source(rmap, driver: Driver):
    """:func:`counters_read` of a driver of :func:`counter_items`, as ``{source: [values]}``
    (each read's source decoded from its address with ``rmap``)."""
    out = {}
    for k, v in zip(range(0, len(driver.items), 2), counters_read(rmap, driver)):
        reg = rmap.by_word()[driver.items[k].addr >> 2]
        assert reg.kind == "ctr_lo" and len(out.get(reg.source, [])) == reg.index
        out.setdefault(reg.source, []).append(v)
    return out


def counter_items(sources=("rx",)):
    """LO then HI of every counter of the ``sources`` (MR-REG-030/031/033/034), source by source."""
    return [Read(ctr_base(src) + 8 * i + 4 * h, f"{src}{i}.{'hi' if h else 'lo'}")
            for src in sources for i in range(n_source_counters(src)) for h in (0, 1)]


def standard_items(rmap, seed=0, n_random=150):
    """The cases of a lockstep run: the map walk, counter reads, rows of an RX setup, a random mix."""
    from . import rx_cases as rc
    rng = random.Random(seed)
    lay = rmap.lay
    s = rc.Setup(lay.conns, lay.paths, lay.keys, seed=seed, n_conns=2)
    rows = [w for cw in s.writes[:6] for w in row_writes(rmap, cw.table, cw.addr, cw.value, name=cw.name)]
    return map_walk(rmap, rng) + counter_reads(rmap, rng) + rows + random_accesses(rmap, rng, n_random)


__all__ = ["Write", "Read", "row_writes", "map_walk", "counter_reads", "random_accesses", "Counters",
           "Driver", "check", "run_model", "standard_items", "SHAPES", "RegsRxModel", "PhasedDriver",
           "counter_items", "counters_read", "counters_by_source", "n_source_counters"]
