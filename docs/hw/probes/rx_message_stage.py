"""Depth probe of the RX engine's message stage (hw-rx.md MR-RX-080..085) on its own, not part
of the design: the same logic as hdl/rx.py's message stage (forwarding mux -> slot and ring
entry -> chunk verdict, placed bytes, done -> delivery run -> row write-back and the bundle),
its record inputs registered, on a 64-row message table. Run from the repository root:

    .venv/bin/python docs/hw/probes/rx_message_stage.py

prints the LUT levels (generic flow of MR-FLOW-010), the LUT count and the deepest path."""
from amaranth.hdl import Array, Cat, Const, Module, Mux, Signal
from amaranth.back import verilog
from amaranth.lib import data, memory
from metaroce.sim import synth
from metaroce.models.rx import EPOCH_BITS, WC_RECV_RDMA_WITH_IMM, layouts


def build():
    m = Module()
    lay = layouts(256, 4, 256)
    n_slots, ring_n = lay.msg_slots, lay.chunk_ring
    slot_bits, pos_bits = (n_slots - 1).bit_length(), (ring_n - 1).bit_length()
    carry = data.StructLayout({"conn": 8, "stream": 3, "msg": 32, "msg_len": 32, "imm": 32,
                               "imm_op": 1, "plen": 16, "chunk": pos_bits + EPOCH_BITS})
    ports = []
    i_mc, i_step, i_addr = Signal(carry), Signal(), Signal(6)
    ports += [i_mc.as_value(), i_step, i_addr]
    mc, m_step = Signal(carry), Signal()
    m.d.sync += [mc.eq(i_mc), m_step.eq(i_step)]
    m.submodules.mem = mem = memory.Memory(shape=lay.msg_row.size, depth=64, init=[])
    rd, wr = mem.read_port(), mem.write_port()
    m.d.comb += rd.addr.eq(i_addr)
    m_fwd, m_wb = Signal(), Signal(lay.msg_row.size)
    mrow = data.View(lay.msg_row, Mux(m_fwd, m_wb, rd.data))
    m_msg_minus = [Signal(32, name=f"m_msg_minus{j}") for j in range(n_slots)]
    m_rest = Signal(32)
    m.d.sync += [*[r.eq(i_mc.msg - j) for j, r in enumerate(m_msg_minus)], m_rest.eq(i_mc.msg_len - i_mc.plen)]
    m_eq = [Signal(name=f"m_eq{j}") for j in range(n_slots)]
    for j in range(n_slots):
        m.d.comb += m_eq[j].eq(m_msg_minus[j] == mrow.next)
    m_in_slots = Cat(*m_eq).any()
    m_next_plus = [Signal(32, name=f"m_next_plus{k}") for k in range(n_slots + 1)]
    for k in range(n_slots + 1):
        m.d.comb += m_next_plus[k].eq(mrow.next + k)
    m_k = mc.msg[:slot_bits]
    slot = Signal(lay.msg_slot)
    m.d.comb += slot.eq(mrow.slots[m_k])
    m_fresh = ~slot.valid
    m_mismatch = slot.valid & ((slot.msg_len != mc.msg_len) | (slot.imm_op != mc.imm_op))
    ent_w = 1 + EPOCH_BITS
    m_pos, m_epoch = mc.chunk[:pos_bits], mc.chunk[pos_bits:]
    entry = Signal(ent_w)
    m.d.comb += entry.eq(Mux(m_fresh, 0, slot.ring.word_select(m_pos, ent_w)))
    epoch_prev = Signal(EPOCH_BITS)
    m.d.comb += epoch_prev.eq(m_epoch - 1)
    chunk_new = ~entry[EPOCH_BITS] | (entry[:EPOCH_BITS] == epoch_prev)
    m_new = m_in_slots & ~m_mismatch & chunk_new
    nslot = Signal(lay.msg_slot)
    m_placed = Signal(32)
    m.d.comb += m_placed.eq(Mux(m_fresh, 0, slot.placed) + mc.plen)
    m.d.comb += [nslot.valid.eq(1), nslot.imm_op.eq(mc.imm_op), nslot.msg_len.eq(mc.msg_len),
                 nslot.imm.eq(mc.imm), nslot.placed.eq(m_placed), nslot.done.eq(Mux(m_fresh, 0, slot.placed) == m_rest)]
    for j in range(ring_n):
        old_e = Mux(m_fresh, 0, slot.ring[j * ent_w:(j + 1) * ent_w])
        m.d.comb += nslot.ring[j * ent_w:(j + 1) * ent_w].eq(Mux(m_pos == j, Cat(m_epoch, Const(1, 1)), old_e))
    slots_new = [Signal(lay.msg_slot, name=f"m_slot{j}") for j in range(n_slots)]
    for j in range(n_slots):
        m.d.comb += slots_new[j].eq(Mux(m_k == j, nslot, mrow.slots[j]))
    m_start = mrow.next[:slot_bits]
    prev = nslot.done & m_eq[0]
    run, order = [], []
    for i in range(n_slots):
        sel_slot = Signal(lay.msg_slot, name=f"m_ord{i}")
        m.d.comb += sel_slot.eq(Array([x.as_value() for x in slots_new])[(m_start + i)[:slot_bits]])
        bit = Signal(name=f"m_run{i}")
        m.d.comb += bit.eq(prev & sel_slot.valid & sel_slot.done)
        prev = bit
        run.append(bit)
        order.append(sel_slot)
    n_deliver = Signal(range(n_slots + 1))
    m.d.comb += n_deliver.eq(sum(run))
    new_row = Signal(lay.msg_row)
    m.d.comb += new_row.next.eq(Array(m_next_plus)[n_deliver])
    for j in range(n_slots):
        cleared = Cat(*[run[i] & ((m_start + i)[:slot_bits] == j) for i in range(n_slots)]).any()
        m.d.comb += [new_row.slots[j].eq(slots_new[j]), new_row.slots[j].valid.eq(slots_new[j].valid & ~cleared)]
    rec_ok = [run[i] & order[i].imm_op for i in range(n_slots)]
    bundle = Signal(lay.cqe_bundle)
    n_rec = Signal(range(n_slots + 1))
    m.d.comb += [n_rec.eq(sum(rec_ok)), bundle.last.eq(n_rec - 1)]
    for p in range(n_slots):
        with m.Switch(Cat(*rec_ok)):
            for pattern in range(1 << n_slots):
                ones = [i for i in range(n_slots) if pattern >> i & 1]
                if p < len(ones):
                    i = ones[p]
                    with m.Case(pattern):
                        m.d.comb += [bundle.cqes[p].conn.eq(mc.conn), bundle.cqes[p].stream.eq(mc.stream),
                                     bundle.cqes[p].msg.eq(m_next_plus[i]),
                                     bundle.cqes[p].opcode.eq(WC_RECV_RDMA_WITH_IMM),
                                     bundle.cqes[p].length.eq(order[i].msg_len),
                                     bundle.cqes[p].imm.eq(order[i].imm)]
    w_addr = Signal(6)
    m.d.sync += w_addr.eq(i_addr)
    m.d.comb += [wr.en.eq(m_step & m_new), wr.addr.eq(w_addr), wr.data.eq(new_row.as_value())]
    m.d.sync += [m_fwd.eq(wr.en & (wr.addr == i_addr)), m_wb.eq(wr.data)]
    o_bundle, o_valid = Signal(lay.cqe_bundle.size), Signal()
    m.d.sync += [o_bundle.eq(bundle), o_valid.eq(m_step & m_new & (n_rec != 0))]
    ports += [o_bundle, o_valid]
    return verilog.convert(m, name="top", ports=ports)


r = synth.lut_levels(build(), "top", use_cache=False)
print("message_stage", r.reg_to_reg, r.luts, " ".join(r.path), flush=True)
