"""Fast memory initialisers in Amaranth's RTLIL back end (sim/meminit.py): the same RTLIL and
Verilog as Amaranth's own emitter, and the synthesis text the same as MR-FLOW-011's."""
from metaroce.sim import meminit, synth
from metaroce.sim.verilator import generate_verilog


def _mem_design():
    """Memories of odd widths: all zero, nonzero rows, signed rows (negative init), one row."""
    from amaranth.hdl import Module, Signal, signed
    from amaranth.lib import memory
    m = Module()
    mems = {
        "zero": memory.Memory(shape=13, depth=64, init=[]),
        "rows": memory.Memory(shape=7, depth=5, init=[0, 5, 127, 0, 1]),
        "neg": memory.Memory(shape=signed(9), depth=6, init=[-1, 3, -256, 0, 255, -2]),
        "one": memory.Memory(shape=70, depth=1, init=[(1 << 69) | 3]),
    }
    addr, out = Signal(6), Signal(80)
    total = 0
    for name, mem in mems.items():
        m.submodules[name] = mem
        rd = mem.read_port()
        m.d.comb += rd.addr.eq(addr)
        total = total + rd.data
        wr = mem.write_port()
        m.d.comb += [wr.addr.eq(addr), wr.data.eq(addr), wr.en.eq(addr[5])]
    m.d.comb += out.eq(total)
    return m, [addr, out]


def _rtlil(fast, drop_zero=False):
    from amaranth.back import rtlil
    m, ports = _mem_design()
    if not fast:
        return rtlil.convert(m, name="top", ports=ports, emit_src=False)
    with meminit.fast_meminit(drop_zero=drop_zero):
        return rtlil.convert(m, name="top", ports=ports, emit_src=False)


def test_fast_meminit_writes_amaranths_rtlil():
    """MR-FLOW-045: the fast emitter writes the very RTLIL text of Amaranth's own, for zero,
    nonzero, signed and single-row memories, and Amaranth's method is back afterwards."""
    from amaranth.back import rtlil
    before = rtlil.ModuleEmitter.emit_memory
    slow, fast = _rtlil(False), _rtlil(True)
    assert fast == slow and fast.count("$meminit_v2") == 4
    assert rtlil.ModuleEmitter.emit_memory is before


def test_fast_meminit_check_bites(monkeypatch):
    """Negative control of the check above: rows written in the wrong order (row 0 in the high
    bits) give another text."""
    def rows_reversed(init, width):
        mask = (1 << width) - 1
        bits = "".join(format(row & mask, f"0{width}b") for row in init)
        return f"{len(bits)}'{bits}"
    monkeypatch.setattr(meminit, "meminit_data", rows_reversed)
    assert _rtlil(True) != _rtlil(False)


def test_meminit_data_layout():
    """MR-FLOW-045: row 0 in the low bits, most significant bit first, rows masked."""
    assert meminit.meminit_data((1, 2), 3) == "6'010001"
    assert meminit.meminit_data((-1,), 4) == "4'1111"


def test_drop_zero_init_same_as_verilog_drop():
    """MR-FLOW-046: with ``drop_zero_init`` the Verilog is the one MR-FLOW-011's text filter made
    from the full Verilog: the all-zero memory's initialiser gone, the others kept."""
    m, ports = _mem_design()
    full = generate_verilog(m, "top", ports=ports)
    m, ports = _mem_design()
    dropped = generate_verilog(m, "top", ports=ports, drop_zero_init=True)
    old, n = synth.drop_zero_memory_init(full)
    assert n == 1 and dropped == old
    assert "zero[0] =" in full and "zero[0] =" not in dropped and "rows[1] =" in dropped


def test_block_verilog_unchanged():
    """MR-FLOW-045/046: a real block's Verilog is the old flow's: the simulation text (`metaroce
    verilog`, the Verilator builds: so their cache keys stay) Amaranth's own emitter's, and the
    synthesis text (`metaroce synth`, `pnr`) that one through MR-FLOW-011's filter."""
    from amaranth.back import verilog
    from metaroce import blocks
    from metaroce.commands.verilog import make_verilog
    from metaroce.sim.verilator import constant_always_to_initial
    blk = blocks.get("dma_write")
    old = constant_always_to_initial(verilog.convert(blk.make_component(64), name=blk.name,
                                                     emit_src=False))
    assert make_verilog(blk, 64) == old
    old_syn, dropped = synth.drop_zero_memory_init(old)
    assert dropped >= 1 and make_verilog(blk, 64, for_synthesis=True) == old_syn


def test_tx_rows_4096x8_block():
    """MR-FLOW-047: the TX engine's default-size block: the row scheduler at 4,096 x 8, the
    retransmit unit's 16,384 records, 256 reads outstanding."""
    from metaroce import blocks
    blk = blocks.get("tx_rows_4096x8")
    from metaroce.hdl.board_top import _silence_unused
    tx = blk.make_component(512)
    _silence_unused(tx)             # built for its parameters only, not elaborated
    assert tx.rows and (tx.sched.conns, tx.sched.paths, tx.sched.streams) == (4096, 8, 2)
    assert blocks.TX_4096X8 == dict(conns=4096, paths=8, pool=16384, outstanding=256)
    assert blk.tb == "" and set(blk.shares) == {"sched", "rtx", "join", "dma", "fb"}
