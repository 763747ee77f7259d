"""Depth probe of RX engine stages on their own (not part of the design): the generic flow of
MR-FLOW-010 on one helper of hdl/rx.py between registers.

    .venv/bin/python docs/hw/probes/rx_stage_depth.py addr_limbs addr_resolve piece_counter wide_counter
    .venv/bin/python docs/hw/probes/rx_stage_depth.py addr_limbs_sel seq_order

``addr_limbs_sel``: S1's address limbs with the base chosen among the key, receive and READ
rows by the registered opcode class (MR-RX-104, MR-RX-112); ``seq_order``: S1's receive/READ
match and the 32-bit order's limbs (MR-RX-102, MR-RX-111).
"""
import sys
from amaranth.hdl import *
from amaranth.back import verilog
from metaroce.sim import synth
from metaroce.hdl import rx as R

def build(kind):
    m = Module()
    ports = []
    def reg(w, name):
        i, r = Signal(w, name="i_" + name), Signal(w, name=name)
        m.d.sync += r.eq(i); ports.append(i); return r
    o = Signal(128); ports.append(o)
    if kind == "addr_limbs":
        base, va, off = reg(64, "base"), reg(64, "va"), reg(32, "off")
        limbs = R._address_limbs(base, va, off)
        m.d.sync += o[:68].eq(Cat(*limbs))
    elif kind == "addr_resolve":
        limbs = [reg(17, f"l{k}") for k in range(4)]
        m.d.sync += o[:64].eq(R._address_resolve(limbs))
    elif kind == "piece_counter":
        inc = reg(1, "inc")
        c, _ = R._piece_counter(m, "ctr", 64, inc)
        m.d.comb += o[:64].eq(c)
    elif kind == "addr_limbs_sel":
        kb, rb, db = reg(64, "kbase"), reg(64, "rbase"), reg(64, "dbase")
        w, snd, rd = reg(1, "w"), reg(1, "snd"), reg(1, "rd")
        va, off = reg(64, "va"), reg(32, "off")
        base = (rb & snd.replicate(64)) | (db & rd.replicate(64)) | (kb & w.replicate(64))
        m.d.sync += o[:68].eq(Cat(*R._address_limbs(base, va & w.replicate(64), off)))
    elif kind == "seq_order":
        snd, rd, valid = reg(1, "snd"), reg(1, "rd"), reg(1, "valid")
        rseq, msg, rrow, drow = reg(32, "rseq"), reg(32, "msg"), reg(32, "rrow"), reg(32, "drow")
        a, b = Mux(snd, rseq, msg), ~Mux(snd, rrow, drow)
        lo = R._add_prefix(a[:16], b[:16], carry_in=1)
        hi0, hi1 = R._add_prefix(a[16:], b[16:]), R._add_prefix(a[16:], b[16:], carry_in=1)
        m.d.sync += o[:55].eq(Cat(lo, hi0, hi1, snd & valid & (rrow == rseq), a[:31] != ~b[:31],
                                  rd & valid & (drow == msg)))
    elif kind == "wide_counter":
        inc = reg(16, "inc"); push = reg(1, "push")
        v = R._wide_inc_counter(m, "ctr", 64, Mux(push, inc, 0))
        m.d.sync += o[:64].eq(v)
    return verilog.convert(m, name="top", ports=ports)

for k in sys.argv[1:]:
    r = synth.lut_levels(build(k), "top", use_cache=False)
    print(k, r.reg_to_reg, r.luts, " ".join(r.path), flush=True)
