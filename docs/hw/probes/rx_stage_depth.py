"""Depth probe of RX engine stages on their own (not part of the design): the generic flow of
MR-FLOW-010 on one helper of hdl/rx.py between registers.

    .venv/bin/python docs/hw/probes/rx_stage_depth.py addr_limbs addr_resolve piece_counter wide_counter
    .venv/bin/python docs/hw/probes/rx_stage_depth.py addr_limbs_sel seq_order
    .venv/bin/python docs/hw/probes/rx_stage_depth.py addr_csel16_plus addr_csel16 resolve_csel16

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
        limbs = R._address_limbs(m, base, va, off)
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
        m.d.sync += o[:68].eq(Cat(*R._address_limbs(m, base, va & w.replicate(64), off)))
    elif kind == "addr_limbs_enc":
        # the class as 2 bits (0 none, 1 write, 2 SEND, 3 READ) and va & write ^ offset,
        # va & write & offset registered with the record at take
        kb, rb, db = reg(64, "kbase"), reg(64, "rbase"), reg(64, "dbase")
        c, vx, va_ = reg(2, "cls"), reg(64, "vx"), reg(64, "va_")
        base = Mux(c[1], Mux(c[0], db, rb), Mux(c[0], kb, 0))
        x = base ^ vx
        y = Cat(Const(0, 1), (va_ | (base & vx))[:63])
        m.d.sync += o[:68].eq(Cat(*[R._add_prefix(x[k:k + 16], y[k:k + 16]) for k in range(0, 64, 16)]))
    elif kind == "addr_limbs_split":
        # S1: the write's limbs (key base + va + offset) and the others' (row base + offset)
        # apart, the class choosing between them in S2 with the carries
        kb, rb, db = reg(64, "kbase"), reg(64, "rbase"), reg(64, "dbase")
        rd, va, off = reg(1, "rd"), reg(64, "va"), reg(32, "off")
        m.d.sync += o[:68].eq(Cat(*R._address_limbs(m, kb, va, off)))
        m.d.sync += o[68:128].eq(Cat(*R._address_limbs(m, Mux(rd, db, rb), Const(0, 64), off))[:60])
    elif kind == "addr_resolve_sel":
        w = reg(1, "w")
        lw, lr = [reg(17, f"lw{k}") for k in range(4)], [reg(17, f"lr{k}") for k in range(4)]
        m.d.sync += o[:64].eq(R._address_resolve([Mux(w, a, b) for a, b in zip(lw, lr)]))
    elif kind == "addr_resolve_prefix":
        # each limb's increment as a prefix adder (_add_prefix with a carry in) instead of low + 1
        limbs = [reg(17, f"l{k}") for k in range(4)]
        out, carry = [], Const(0, 1)
        for s_ in limbs:
            low = s_[:16]
            out.append(Mux(carry, R._add_prefix(low, Const(0, 16), carry_in=1)[:16], low))
            carry = s_[16] | (low.all() & carry)
        m.d.sync += o[:64].eq(Cat(*out))
    elif kind == "addr_resolve_flat":
        # the carry into each limb as a flat OR of generate terms, each bit as low ^ (carry & all below)
        limbs = [reg(17, f"l{k}") for k in range(4)]
        alls = [s_[:16].all() for s_ in limbs]
        out = []
        for k, s_ in enumerate(limbs):
            terms = [Cat(limbs[j][16], *alls[j + 1:k]).all() for j in range(k)]
            carry = Cat(*terms).any() if terms else Const(0, 1)
            low = s_[:16]
            out.append(Cat(*[low[i] ^ (carry & (low[:i].all() if i else Const(1, 1))) for i in range(16)]))
        m.d.sync += o[:64].eq(Cat(*out))
    elif kind in ("addr_csel8", "addr_csel16", "addr_csel16_plus"):
        # S1 with the base select, each limb summed for a carry in of 0 and of 1 (carry select);
        # ``_plus``: the sums as Amaranth's ``a + b`` and ``a + b + 1`` (cheap for the simulator)
        n = 8 if kind == "addr_csel8" else 16
        kb, rb, db = reg(64, "kbase"), reg(64, "rbase"), reg(64, "dbase")
        w, snd, rd = reg(1, "w"), reg(1, "snd"), reg(1, "rd")
        va, off = reg(64, "va"), reg(32, "off")
        base = (rb & snd.replicate(64)) | (db & rd.replicate(64)) | (kb & w.replicate(64))
        vw, o32 = va & w.replicate(64), off.as_unsigned()
        x = base ^ vw ^ o32
        y = Cat(Const(0, 1), ((base & vw) | (base & o32) | (vw & o32))[:63])
        if kind.endswith("_plus"):
            sums = [Cat((x[k:k + n] + y[k:k + n])[:n + 1], (x[k:k + n] + y[k:k + n] + 1)[:n + 1])
                    for k in range(0, 64, n)]
        else:
            sums = [Cat(R._add_prefix(x[k:k + n], y[k:k + n]), R._add_prefix(x[k:k + n], y[k:k + n], carry_in=1))
                    for k in range(0, 64, n)]
        big = Signal(len(Cat(*sums))); ports.append(big)
        m.d.sync += big.eq(Cat(*sums))
    elif kind in ("resolve_csel8", "resolve_csel16"):
        n = 8 if kind == "resolve_csel8" else 16
        limbs = [reg(2 * (n + 1), f"l{k}") for k in range(64 // n)]
        out, carry = [], Const(0, 1)
        for s_ in limbs:
            s0, s1 = s_[:n + 1], s_[n + 1:]
            out.append(Mux(carry, s1[:n], s0[:n]))
            carry = Mux(carry, s1[n], s0[n])
        m.d.sync += o[:64].eq(Cat(*out))
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
