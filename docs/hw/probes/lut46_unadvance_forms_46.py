"""Area probe, not part of the design (lut46): the frame builder's ICRC take-back alone (a
32-bit register and the zero-lane count in registers, the result registered) in the forms
compared for MR-TXF-067, with ``metaroce synth``'s flow (``synth_xilinx -family xcup`` LUTs,
generic 6-LUT levels reg to reg). Forms: ``cur`` MR-TXF-031's three 4-way matrix stages (the
base); ``mux1`` one stage, a select of width/32 XOR trees by u (t = 2 + 4u); ``rows2`` one stage,
each bit an XOR of "two register bits AND a table of u" (the form kept); ``rows1`` the same a bit
at a time. Prints ``width form LUTs FFs levels``. Run from the repository root:

    nice -n 10 .venv/bin/python docs/hw/probes/lut46_unadvance_forms_46.py 512|64 cur|mux1|rows2|rows1 2>/dev/null"""
import sys
from amaranth.hdl import Array, Cat, Const, Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out
from metaroce.hdl.frame_builder import unadvance_matrices
from metaroce.hdl import icrc as icrc_hw
from metaroce.sim import synth
from metaroce.sim.verilator import generate_rtlil

class U(wiring.Component):
    def __init__(self, nb, form):
        self.nb, self.form = nb, form
        lg = nb.bit_length() - 1
        super().__init__({"reg": In(32), "n": In(lg), "en": In(1), "out": Out(32)})
    def elaborate(self, p):
        m = Module(); NB = self.nb; LG = NB.bit_length() - 1
        mats = unadvance_matrices(NB)
        rin = Signal(32); n = Signal(LG)
        m.d.sync += [rin.eq(self.reg), n.eq(self.n)]
        reg = rin
        if self.form == "cur":
            for i in range((LG + 1) // 2):
                digit = Cat(*[n[b] if b < LG else Const(0, 1) for b in (2 * i, 2 * i + 1)])
                opts = []
                for d in range(4):
                    t = d << (2 * i)
                    if t >= NB:
                        opts.append(reg); continue
                    cols = mats[t]
                    opts.append(Cat(*[icrc_hw.xor_tree([reg[c] for c in range(32) if cols[c] >> b & 1]) for b in range(32)]))
                u = Signal(32, name=f"u{i}")
                m.d.sync += u.eq(Array(opts)[digit]); reg = u
        elif self.form == "mux1":     # one stage: Array over NB/4 XOR-tree options, t = 2 + 4u
            u = n[2:]
            opts = [Cat(*[icrc_hw.xor_tree([reg[c] for c in range(32) if mats[2 + 4 * k][c] >> b & 1]) for b in range(32)]) for k in range(NB // 4)]
            r = Signal(32); m.d.sync += r.eq(Array(opts)[u] if len(opts) > 1 else opts[0]); reg = r
        elif self.form.startswith("rows"):   # one stage: each term reg pair AND a table of u
            k = int(self.form[4:] or 2)
            u = n[2:]; U = NB // 4
            sel = [mats[2 + 4 * x] for x in range(U)]
            outs = []
            for b in range(32):
                terms = []
                for c0 in range(0, 32, k):
                    tab = [sum((sel[x][c0 + q] >> b & 1) << q for q in range(k) if c0 + q < 32) for x in range(U)]
                    if not any(tab): continue
                    s = Const(tab[0], k) if len(set(tab)) == 1 else Array(Const(t, k) for t in tab)[u]
                    terms.append((s & reg[c0:c0 + k]).xor())
                outs.append(icrc_hw.xor_tree(terms))
            r = Signal(32); m.d.sync += r.eq(Cat(*outs)); reg = r
        m.d.comb += self.out.eq(reg)
        return m

nb, form = int(sys.argv[1]) // 8, sys.argv[2]
text = generate_rtlil(U(nb, form), "unadv", drop_zero_init=True)
rep = synth.synthesize(text, "unadv", lang="rtlil")
lv = synth.lut_levels(text, "unadv", lang="rtlil")
print(sys.argv[1], form, rep.luts, rep.ffs, lv.lut_levels)
