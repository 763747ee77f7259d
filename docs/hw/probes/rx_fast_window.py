"""Depth probe of the planned fast window loop (docs/spec/hw-rx.md section 9), not part of the
design: forwarding mux -> window test / ring lookups -> row update -> write-data mux -> write-back,
as one register loop on a 1,024-row table. Run from the repository root:

    .venv/bin/python docs/hw/probes/rx_fast_window.py

prints the LUT levels (generic flow of MR-FLOW-010) and the deepest path."""
from amaranth.hdl import *
from amaranth.back import verilog
from amaranth.lib import memory
from metaroce.sim import synth

def build():
    m = Module()
    RING = 512
    # inputs registered (precomputed in the stage before)
    i_psn, i_oh, i_ohn, i_ack_every = Signal(24), Signal(RING), Signal(RING), Signal(4)
    i_ce, i_ack_req, i_fwd, i_ok = Signal(), Signal(), Signal(), Signal()
    psn, oh, ohn = Signal(24), Signal(RING), Signal(RING)
    ce_bit, ack_req, fwd, ok, ack_every = Signal(), Signal(), Signal(), Signal(), Signal(4)
    psn_p1, ph_m1 = Signal(24), Signal(15)
    m.d.sync += [psn.eq(i_psn), oh.eq(i_oh), ohn.eq(i_ohn), ce_bit.eq(i_ce), ack_req.eq(i_ack_req),
                 fwd.eq(i_fwd), ok.eq(i_ok), ack_every.eq(i_ack_every), psn_p1.eq(i_psn + 1),
                 ph_m1.eq(i_psn[9:] - 1)]
    W = 24 + RING + 24 + 16 + 4 + 1
    mem = memory.Memory(shape=W, depth=1024, init=[])
    m.submodules.mem = mem
    rd, wr = mem.read_port(), mem.write_port()
    i_addr = Signal(10)
    m.d.comb += rd.addr.eq(i_addr)
    wb = Signal(W)
    row = Mux(fwd, wb, rd.data)
    cum, ring, high, ce, pending, prev_ce = (row[0:24], row[24:24 + RING], row[536:560],
                                            row[560:576], row[576:580], row[580])
    ph, pl, ch, cl = psn[9:], psn[:9], cum[9:], cum[:9]
    in_win = ((ph == ch) & (pl >= cl)) | ((ph_m1 == ch) & (pl <= cl))
    behind = psn[23] ^ cum[23] ^ (psn[:23] < cum[:23])
    ringbit = (ring & oh).any()
    nextbit = (ring & ohn).any()
    d0 = psn == cum
    new = in_win & ~ringbit
    dup = behind | (in_win & ringbit)
    setbit = new & ~d0
    gap = psn != high
    ahead = ~(psn[23] ^ high[23] ^ (psn[:23] < high[:23]))
    onset = ce_bit & ~prev_ce
    pend1 = (pending + 1)[:4]
    ack_now = ack_req | gap | (pend1 >= ack_every) | onset
    ce_new = Mux(ce.all(), ce, (ce + ce_bit)[:16])
    n_cum = Mux(new & d0, psn_p1, cum)
    n_ring = ring | Mux(setbit, oh, 0)
    n_high = Mux(new & ahead, psn_p1, high)
    n_ce = Mux(dup, 0, Mux(new, Mux(ack_now, 0, ce_new), ce))
    n_pend = Mux(dup, 0, Mux(new, Mux(ack_now, 0, pend1), pending))
    n_prev = Mux(new, ce_bit, prev_ce)
    nrow = Cat(n_cum, n_ring, n_high, n_ce, n_pend, n_prev)
    slow = Signal()
    d9 = Signal(9)
    m.d.comb += d9.eq(pl - cl)
    slide = in_win & ((d9 >= 257) | ((d9 == 0) & (ph != ch)))
    m.d.sync += slow.eq((d0 & nextbit) | slide)
    other = Signal(W)
    sel = Signal()
    m.d.comb += [wr.en.eq(ok | sel), wr.addr.eq(i_addr), wr.data.eq(Mux(sel, other, nrow))]
    m.d.sync += wb.eq(wr.data)
    o = Signal(4)
    m.d.sync += o.eq(Cat(slow, new, dup, behind))
    return m, [i_psn, i_oh, i_ohn, i_ack_every, i_ce, i_ack_req, i_fwd, i_ok, i_addr, other, sel, o]

m, ports = build()
v = verilog.convert(m, ports=ports, name="fastloop")
r = synth.lut_levels(v, "fastloop", use_cache=False)
print("reg_to_reg", r.reg_to_reg, "luts", r.luts)
print(" ".join(r.path))
