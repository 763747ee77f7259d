"""Fast memory initialisers in Amaranth's RTLIL back end (MR-FLOW-045..047).

Amaranth 0.5's ``back.rtlil`` writes each ``lib.memory.Memory``'s ``$meminit_v2`` cell by
making one ``nir.Net`` object per bit of the initial contents and joining them one by one
(``ModuleEmitter.emit_memory``): about 20 us a bit, so the RX engine's 4,096 x 8 tables
(79.8 Mbit) took most of the hour-plus that ``metaroce synth rx`` spent in Amaranth's Verilog
generation (profile: docs/hw/fpga-build.md, "big40"). :func:`fast_meminit` replaces that one
method, while it is active, by one that writes the same RTLIL text from the rows directly
(MR-FLOW-045), or, with ``drop_zero``, writes no ``$meminit_v2`` cell at all for a memory
whose rows are all zero (MR-FLOW-046: what :func:`metaroce.sim.synth.drop_zero_memory_init`
did to the Verilog afterwards, MR-FLOW-011, so the synthesis netlist is the same).
"""
from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

__all__ = ["meminit_data", "fast_meminit"]

_lock = threading.Lock()


def meminit_data(init, width: int) -> str:
    """The RTLIL constant Amaranth writes as a ``$meminit_v2``'s ``DATA``: ``N'bits``, the most
    significant bit first, row 0 in the low bits (MR-FLOW-045)."""
    mask = (1 << width) - 1
    bits = "".join(format(row & mask, f"0{width}b") for row in reversed(init))
    return f"{len(bits)}'{bits}"


@contextlib.contextmanager
def fast_meminit(*, drop_zero: bool = False) -> Iterator[None]:
    """While active, ``amaranth.back.rtlil`` writes memory initialisers with
    :func:`meminit_data` (the same text, MR-FLOW-045); with ``drop_zero``, none for an all-zero
    memory (MR-FLOW-046). Not reentrant across threads (the method is patched on the class)."""
    from amaranth.back import rtlil
    from amaranth.hdl import _nir

    original = rtlil.ModuleEmitter.emit_memory

    def emit_memory(self, cell_idx, cell):
        if cell.width == 0 or cell.depth == 0:
            return original(self, cell_idx, cell)
        if drop_zero and not any(row & ((1 << cell.width) - 1) for row in cell.init):
            return None
        memory_info = self.memories[cell_idx]
        self.builder.cell("$meminit_v2", ports={
            "ADDR": self.sigspec(),
            "DATA": meminit_data(cell.init, cell.width),
            "EN": self.sigspec(_nir.Value.ones(cell.width)),
        }, parameters={
            "MEMID": memory_info.memid,
            "ABITS": 0,
            "WIDTH": cell.width,
            "WORDS": cell.depth,
            "PRIORITY": 0,
        }, src_loc=cell.src_loc)

    with _lock:
        rtlil.ModuleEmitter.emit_memory = emit_memory
        try:
            yield
        finally:
            rtlil.ModuleEmitter.emit_memory = original
