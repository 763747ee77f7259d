"""Depth probe of the RX engine's message stage (hw-rx.md MR-RX-080..085) on its own, not part
of the design: hdl/rx.py's own ``_message_update`` (forwarding mux -> slot and ring entry ->
chunk verdict, placed bytes, done -> delivery run -> row write-back and the bundle) between
registers, with the forwarded write-back loop of hdl/rx.py, on a 64-row message table. Run
from the repository root:

    .venv/bin/python docs/hw/probes/rx_message_stage.py

prints the LUT levels (generic flow of MR-FLOW-010), the LUT count and the deepest path."""
from amaranth.hdl import Module, Mux, Signal
from amaranth.back import verilog
from amaranth.lib import data, memory
from metaroce.sim import synth
from metaroce.hdl import rx as R
from metaroce.models.rx import EPOCH_BITS, layouts


def build():
    m = Module()
    lay = layouts(256, 4, 256)
    n_slots, ring_n = lay.msg_slots, lay.chunk_ring
    pos_bits = (ring_n - 1).bit_length()
    carry = data.StructLayout({"conn": 8, "stream": 3, "msg": 32, "msg_len": 32, "imm": 32,
                               "kind": 2, "wr_id": 64, "plen": 16, "chunk": pos_bits + EPOCH_BITS})
    i_mc, i_step, i_addr = Signal(carry), Signal(), Signal(6)
    ports = [i_mc.as_value(), i_step, i_addr]
    mc, m_step = Signal(carry), Signal()
    m.d.sync += [mc.eq(i_mc), m_step.eq(i_step)]
    m.submodules.mem = mem = memory.Memory(shape=lay.msg_row.size, depth=64, init=[])
    rd, wr = mem.read_port(), mem.write_port()
    m.d.comb += rd.addr.eq(i_addr)
    m_fwd, m_wb = Signal(), Signal(lay.msg_row.size)
    mrow = data.View(lay.msg_row, Mux(m_fwd, m_wb, rd.data))
    m_msg_minus = [Signal(32, name=f"m_msg_minus{j}") for j in range(n_slots)]
    m_msg_plus = [mc.msg] + [Signal(32, name=f"m_msg_plus{k}") for k in range(1, n_slots + 1)]
    m_rest = Signal(32)
    m.d.sync += [*[r.eq(i_mc.msg - j) for j, r in enumerate(m_msg_minus)],
                 *[r.eq(i_mc.msg + k) for k, r in enumerate(m_msg_plus) if k], m_rest.eq(i_mc.msg_len - i_mc.plen)]
    m_pos, m_epoch = mc.chunk[:pos_bits], mc.chunk[pos_bits:]
    epoch_prev = Signal(EPOCH_BITS)
    m.d.comb += epoch_prev.eq(m_epoch - 1)
    mu = R._message_update(m, lay, mrow, mc, m_msg_minus, m_msg_plus, m_rest, m_pos, m_epoch, epoch_prev)
    w_addr = Signal(6)
    m.d.sync += w_addr.eq(i_addr)
    m.d.comb += [wr.en.eq(m_step & mu.new), wr.addr.eq(w_addr), wr.data.eq(mu.new_row.as_value())]
    hit, hit_new = Signal(), Signal()
    m.d.sync += [hit.eq(m_step & (w_addr == i_addr)), hit_new.eq(mu.new), m_wb.eq(wr.data)]
    m.d.comb += m_fwd.eq(hit & hit_new)
    o_bundle, o_flags = Signal(lay.cqe_bundle.size), Signal(3)
    m.d.sync += [o_bundle.eq(mu.bundle), o_flags.eq(Mux(m_step, mu.dup | (mu.refused << 1) | ((mu.n_rec != 0) << 2), 0))]
    ports += [o_bundle, o_flags]
    return verilog.convert(m, name="top", ports=ports)


if __name__ == "__main__":
    r = synth.lut_levels(build(), "top", use_cache=False)
    print("message_stage", r.reg_to_reg, r.luts, " ".join(r.path), flush=True)
