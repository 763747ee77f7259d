"""The host register block: an AXI4-Lite slave in front of the RX engine, with the parser's and
the TX half's counters (docs/spec/hw-regs.md, MR-REG-*; engine.md MR-ENG-006).

``Regs(*, conns=4096, paths=8, keys=1024, parser=True, tx=True, eng=False)`` serves the RX instance of the
same sizes, with the parser's and the TX half's counters or without (MR-REG-001). Ports
(MR-REG-002):

============== ===== =====================================================================
port           dir   meaning
============== ===== =====================================================================
s_axil         in    AXI4-Lite slave (AW, W, B, AR, R; 12-bit address, 32-bit data)
m_cfg          out   one ``s_cfg`` record of the RX engine per global write or row commit
reg_addr       out   the RX engine's counter select
reg_data       in    the RX engine's counter value, one cycle after ``reg_addr``
parser_reg_*   out/in the parser's counter select and value (with ``parser``)
tx_reg_*       out/in the TX half's counter select and value (with ``tx``)
eng_reg_*      out/in the whole engine's own counter select and value (with ``eng``, MR-ENG-143)
============== ===== =====================================================================

``wiring.connect(m, regs.m_cfg, rx.s_cfg)`` joins it to ``hdl.rx.Rx``; ``reg_addr``/``reg_data``
are wired to the engine's ports of the same names. The register map, the decode below and the
model all come from ``models.regs.register_map``. Golden model:
:class:`metaroce.models.regs.RegsCycleModel`.
"""
from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from .muxes import or_tree
from ..models.regs import ADDR_BITS, HINT_REG_OF, OKAY, RO, SLVERR, WO, ctr_base, register_map
from ..models.rx import COUNTER_BITS, GLOBAL, TABLE_GLOBAL, layouts

__all__ = ["Regs", "AxiLiteSignature", "regs_256x4", "regs_block"]


class AxiLiteSignature(wiring.Signature):
    """AXI4-Lite, from the master's side (no AxPROT: the block ignores it)."""

    def __init__(self, addr_width=ADDR_BITS, data_width=32):
        super().__init__({
            "awaddr": Out(addr_width), "awvalid": Out(1), "awready": In(1),
            "wdata": Out(data_width), "wstrb": Out(data_width // 8), "wvalid": Out(1), "wready": In(1),
            "bresp": In(2), "bvalid": In(1), "bready": Out(1),
            "araddr": Out(addr_width), "arvalid": Out(1), "arready": In(1),
            "rdata": In(data_width), "rresp": In(2), "rvalid": In(1), "rready": Out(1),
        })


class Regs(wiring.Component):
    """The host register block (docs/spec/hw-regs.md)."""

    def __init__(self, *, conns=4096, paths=8, keys=1024, parser=True, tx=True, eng=False,
                 pacing=False, hint=False):
        try:
            self.lay = lay = layouts(conns, paths, keys)
        except ValueError:
            self._MustUse__silence = True       # never built: no "unused" warning at exit
            raise
        self.pacing = bool(pacing)
        self.hint = bool(hint)          # MR-REG-073: the hint window
        self.map = register_map(lay, parser=parser, tx=tx, eng=eng, pacing=self.pacing, hint=self.hint)
        ports = {
            "s_axil": In(AxiLiteSignature()),
            "m_cfg": Out(stream.Signature(lay.cfg)),
            "reg_addr": Out(range(32)),
            "reg_data": In(COUNTER_BITS),
        }
        for src in self.map.sources[1:]:        # MR-REG-033/034, MR-ENG-143: 4-bit selects
            ports[f"{src}_reg_addr"] = Out(range(16))
            ports[f"{src}_reg_data"] = In(COUNTER_BITS)
        if self.pacing:
            # MR-REG-065: the pacer's write (hw-cwnd.md MR-CW-097's s_write) and its configuration
            from ..models.pacer import RATE_BITS, WL_BITS, frame_layouts
            ports.update({"m_pace": Out(stream.Signature(frame_layouts(conns)["write"])),
                          "pace_mtu_wl": Out(WL_BITS), "pace_line_mbps": Out(RATE_BITS)})
        if self.hint:
            # MR-REG-075: the hint window's registers out
            for port, name in HINT_REG_OF.items():
                ports[port] = Out(self.map.get(name).width)
        super().__init__(ports)

    @classmethod
    def for_rx(cls, rx, *, parser=False, tx=False, eng=False, pacing=False, hint=False):
        """The register block of the RX engine ``rx`` (an ``hdl.rx.Rx``): the same sizes; the
        parser's, the TX half's and the engine's own counters when asked; the pacing window."""
        lay = rx.lay
        return cls(conns=lay.conns, paths=lay.paths, keys=lay.keys, parser=parser, tx=tx, eng=eng,
                   pacing=pacing, hint=hint)

    def elaborate(self, platform):
        m = Module()
        bus = self.s_axil
        regs = self.map.regs

        # -- storage (MR-REG-011, MR-REG-020)
        store = {r.name: Signal(r.width, init=r.reset, name=r.name.lower()) for r in regs
                 if r.kind in ("store", "global")}
        error = Signal(3)
        latch_valid, latch_hi = Signal(), Signal(32)
        data_regs = [store[r.name] for r in regs if r.kind == "store" and r.name.startswith("CFG_DATA")]
        global_regs = [store[r.name] for r in regs if r.kind == "global"]

        # -- write channel: AW and W held in any order (MR-REG-040)
        aw_full = Signal()
        w_full, w_data, w_strb = Signal(), Signal(32), Signal(4)
        b_valid, b_resp = Signal(), Signal(2)
        cfg_valid, cfg_global = Signal(), Signal()
        m.d.comb += [bus.awready.eq(~aw_full), bus.wready.eq(~w_full),
                     bus.bvalid.eq(b_valid), bus.bresp.eq(b_resp)]

        # -- read channel (MR-REG-041)
        rd1, rd2, ar_addr = Signal(), Signal(), Signal(ADDR_BITS)
        r_valid, r_data, r_resp = Signal(), Signal(32), Signal(2)
        arready = ~(rd1 | rd2 | r_valid)
        m.d.comb += [bus.arready.eq(arready), bus.rvalid.eq(r_valid), bus.rdata.eq(r_data),
                     bus.rresp.eq(r_resp)]

        # -- the record (MR-REG-021/022): a function of registers, stable while valid
        cfg = self.m_cfg.payload
        m.d.comb += self.m_cfg.valid.eq(cfg_valid)
        with m.If(cfg_global):
            m.d.comb += [cfg.table.eq(TABLE_GLOBAL), cfg.addr.eq(0),
                         cfg.data.eq(Cat(*global_regs))]
            assert sum(f.width for _, f in GLOBAL) == sum(len(s) for s in global_regs)
        with m.Else():
            m.d.comb += [cfg.table.eq(store["CFG_TABLE"]), cfg.addr.eq(store["CFG_ADDR"]),
                         cfg.data.eq(Cat(*data_regs))]

        # -- read: the held address is decoded in stage 1 into registers (a one-hot select of
        # the other registers; per counter source a LO and a HI select; the latch's; a miss);
        # stage 2 only ANDs and ORs (MR-REG-041): the sources' values are registers of their
        # blocks, so a counter's path is one AND-OR level deep. The address and the latch do
        # not change between the two stages (one read at a time).
        sources = self.map.sources
        ctr_regs = [r for r in regs if r.kind in ("ctr_lo", "ctr_hi")]
        assert all(r.offset - ctr_base(r.source) == 8 * r.index + 4 * (r.kind == "ctr_hi") for r in ctr_regs)
        readable = [r for r in regs if r.access != WO and r not in ctr_regs]
        rd_hot = Signal(len(readable))
        rd_miss, rd_any_hi_latched = Signal(), Signal()
        hot = Signal.like(rd_hot)
        with m.Switch(ar_addr[2:]):
            for k, r in enumerate(readable):
                with m.Case(r.offset >> 2):
                    m.d.comb += hot.eq(1 << k)
        # MR-REG-031: the latch is of one counter of one source, named by the address bits [9:3]
        slot = ar_addr[3:10]
        assert all(ctr_base(s) >> 10 == 0 for s in sources)
        latch_slot = Signal.like(slot)
        latched = latch_valid & (latch_slot == slot)
        is_hi = ar_addr[2]
        src_data, src_lo, src_hi = [], [], []
        in_any = []
        for src in sources:
            n = self.map.n_counters(src)
            base = ctr_base(src)
            assert base % (256 if src == "rx" else 128) == 0     # a window is an address prefix
            if src == "rx":
                sel_port, data = self.reg_addr, self.reg_data
                win = ar_addr[8:] == base >> 8
                m.d.comb += sel_port.eq(ar_addr[3:8])
            else:
                sel_port, data = getattr(self, f"{src}_reg_addr"), getattr(self, f"{src}_reg_data")
                win = ar_addr[7:] == base >> 7
                m.d.comb += sel_port.eq(ar_addr[3:7])
            inside = win & (sel_port < n)
            lo, hi = Signal(name=f"rd_{src}_lo"), Signal(name=f"rd_{src}_hi")
            m.d.sync += [lo.eq(inside & ~is_hi), hi.eq(inside & is_hi & ~latched)]
            src_data.append(data)
            src_lo.append(lo)
            src_hi.append(hi)
            in_any.append(inside)
        in_ctr = Cat(*in_any).any()
        m.d.sync += [rd_hot.eq(hot), rd_miss.eq(~in_ctr & (hot == 0)),
                     rd_any_hi_latched.eq(in_ctr & is_hi & latched)]
        picked = []
        for k, r in enumerate(readable):
            value = (Const(r.reset, 32) if r.kind == "const" else error if r.kind == "error"
                     else store[r.name])
            picked.append(Mux(rd_hot[k], value, 0))
        for data, lo, hi in zip(src_data, src_lo, src_hi):
            picked += [Mux(lo, data[:32], 0), Mux(hi, data[32:], 0)]
        picked.append(Mux(rd_any_hi_latched, latch_hi, 0))
        rd_value, rd_resp, rd_err = Signal(32), Signal(2), Signal()
        m.d.comb += [rd_value.eq(or_tree(picked)), rd_resp.eq(Mux(rd_miss, SLVERR, OKAY)), rd_err.eq(rd_miss)]
        # a LO read latches the high half of the same sample of the same source
        lo_any = Cat(*src_lo).any()
        hi_of_lo = or_tree(Mux(lo, data[32:], 0) for data, lo in zip(src_data, src_lo))
        with m.If(rd2 & lo_any):
            m.d.sync += [latch_valid.eq(1), latch_slot.eq(slot), latch_hi.eq(hi_of_lo)]

        # -- write: the address is decoded when AW is taken (a one-hot select and a miss);
        # the write executes once both are held and no B or record is pending
        writable = [r for r in regs if r.access != RO]
        aw_hot, aw_miss = Signal(len(writable)), Signal()
        w_hot = Signal.like(aw_hot)
        with m.Switch(bus.awaddr[2:]):
            for k, r in enumerate(writable):
                with m.Case(r.offset >> 2):
                    m.d.comb += w_hot.eq(1 << k)
        execute = aw_full & w_full & ~b_valid & ~cfg_valid
        if self.pacing:
            # MR-REG-065: a pending pacer write holds the writes as a pending record does
            pace_valid, pace_set_time, emit_pace = Signal(), Signal(), Signal()
            execute = execute & ~pace_valid
        mask = Signal(32)
        m.d.comb += mask.eq(Cat(*(w_strb[i].replicate(8) for i in range(4))))
        wr_commit_err, emit_row, emit_global = Signal(), Signal(), Signal()
        err_clear = Signal(3)
        for k, r in enumerate(writable):
            sel = aw_hot[k]
            if r.kind == "error":
                m.d.comb += err_clear.eq(Mux(sel, w_data & mask, 0))
            elif r.kind == "commit":
                go = sel & w_strb[0] & w_data[0]
                to_global = store["CFG_TABLE"] == TABLE_GLOBAL
                m.d.comb += [wr_commit_err.eq(go & to_global), emit_row.eq(go & ~to_global)]
            elif r.kind == "pace_commit":
                # MR-REG-064: bit 0 (with its strobe) sends the write, bit 1 its set_time
                m.d.comb += emit_pace.eq(sel & w_strb[0] & w_data[0])
                with m.If(execute & sel & w_strb[0] & w_data[0]):
                    m.d.sync += pace_set_time.eq(w_data[1])
            else:
                # hw-rx.md MR-RX-315: each byte its own enable (its strobe), so a bit's D is the held
                # write data, not a mask mux over the register's own value (a LUT4 a bit)
                st = store[r.name]
                for lo in range(0, r.width, 8):
                    with m.If(execute & sel & w_strb[lo // 8]):
                        m.d.sync += st[lo:lo + 8].eq(w_data[lo:min(lo + 8, r.width)])
        m.d.comb += emit_global.eq(Cat(aw_hot[k] for k, r in enumerate(writable) if r.kind == "global").any())
        wr_err = aw_miss
        wr_resp = Mux(aw_miss | wr_commit_err, SLVERR, OKAY)

        # -- error bits (MR-REG-012): a set wins over a clear in the same cycle
        err_set = Cat(execute & wr_err, rd2 & rd_err, execute & wr_commit_err)
        m.d.sync += error.eq((error & ~Mux(execute, err_clear, 0)) | err_set)

        # -- B and m_cfg (MR-REG-040)
        with m.If(b_valid & bus.bready):
            m.d.sync += b_valid.eq(0)
        with m.If(cfg_valid & self.m_cfg.ready):
            m.d.sync += [cfg_valid.eq(0), b_valid.eq(1), b_resp.eq(OKAY)]
        if self.pacing:
            # MR-REG-063/065: the configuration and the pending write, registers only
            pw = self.m_pace.payload
            m.d.comb += [self.m_pace.valid.eq(pace_valid), pw.conn.eq(store["PACE_CONN"]),
                         pw.rate.eq(store["PACE_RATE"]), pw.set_time.eq(pace_set_time),
                         pw.time.eq(store["PACE_TIME"]),
                         self.pace_mtu_wl.eq(store["PACE_MTU_WL"]),
                         self.pace_line_mbps.eq(store["PACE_LINE_MBPS"])]
            with m.If(pace_valid & self.m_pace.ready):
                m.d.sync += [pace_valid.eq(0), b_valid.eq(1), b_resp.eq(OKAY)]
        if self.hint:
            # MR-REG-075: the hint window's registers on their ports
            m.d.comb += [getattr(self, port).eq(store[name]) for port, name in HINT_REG_OF.items()]
        with m.If(execute):
            m.d.sync += [aw_full.eq(0), w_full.eq(0)]
            with m.If(emit_row | emit_global):
                m.d.sync += [cfg_valid.eq(1), cfg_global.eq(emit_global)]
            if self.pacing:
                with m.Elif(emit_pace):
                    m.d.sync += pace_valid.eq(1)
            with m.Else():
                m.d.sync += [b_valid.eq(1), b_resp.eq(wr_resp)]
        with m.If(bus.awvalid & ~aw_full):
            m.d.sync += [aw_full.eq(1), aw_hot.eq(w_hot), aw_miss.eq(w_hot == 0)]
        with m.If(bus.wvalid & ~w_full):
            m.d.sync += [w_full.eq(1), w_data.eq(bus.wdata), w_strb.eq(bus.wstrb)]

        # -- R (MR-REG-041)
        with m.If(r_valid & bus.rready):
            m.d.sync += r_valid.eq(0)
        with m.If(rd2):
            m.d.sync += [r_valid.eq(1), r_data.eq(rd_value), r_resp.eq(rd_resp)]
        m.d.sync += [rd2.eq(rd1), rd1.eq(0)]
        with m.If(bus.arvalid & arready):
            m.d.sync += [rd1.eq(1), ar_addr.eq(bus.araddr)]
        return m


def regs_256x4(width=64):
    """The register block of the small RX instance (hdl.rx.rx_256x4); ``width`` (the RX
    datapath width) does not change it."""
    return Regs(conns=256, paths=4, keys=256)


def regs_block(width=64):
    """The register block of the engine's RX instance (hdl.rx.Rx defaults: 4,096 x 8, 1,024
    keys); ``width`` does not change it."""
    return Regs()
