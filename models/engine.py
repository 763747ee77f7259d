"""The engine's receive half as one cycle model (docs/spec/hw-engine.md, MR-ENG-100..): the
cycle models of the blocks it joins, stepped as the RTL (hdl/engine.py) wires them.

``EngineRxModel(width, conns, paths, keys)`` composes :class:`~metaroce.models.parser.ParserModel`,
:class:`PackModel` (the payload repacker between the parser and the RX engine, MR-ENG-104),
:class:`~metaroce.models.rx.RxCycleModel`, :class:`~metaroce.models.dma_write.DmaWriteCycleModel`
and :class:`~metaroce.models.regs.RegsCycleModel`. It is not a second description of any
block: each block's timing is its own model's.

One clock (MR-ENG-103): the parser's, the repacker's, the DMA's and the register block's outputs
are functions of their state (``outputs()``), so they are read first; the RX model steps with
them (its ``s_payload`` ready and ``m_data`` valid pass straight through); then the repacker
steps with the RX model's ``s_payload`` ready (its own input ready follows it in the same
cycle), the parser with the RX model's and the repacker's readies, the DMA with the RX model's
placements and payload beats, the register block with the RX model's configuration ready and
counter value.

models/ never imports hdl/.
"""
from __future__ import annotations

from . import records
from .dma_write import OUTSTANDING, DmaWriteCycleModel
from .parser import ParserModel
from .regs import RegsCycleModel
from .rx import RxCycleModel, pack, payload_layout

__all__ = ["PackModel", "EngineRxModel", "engine_rx_model", "engine_rx_model_256x4", "INPUTS",
           "OUTPUTS", "rotate_down"]

AXIL = ("awaddr", "awvalid", "wdata", "wstrb", "wvalid", "bready", "araddr", "arvalid", "rready")
AXIL_OUT = ("awready", "wready", "bresp", "bvalid", "arready", "rdata", "rresp", "rvalid")
AXI_IN = ("awready", "wready", "bid", "bresp", "bvalid")
AXI_OUT = ("awid", "awaddr", "awlen", "awsize", "awburst", "awvalid", "wdata", "wstrb", "wlast",
           "wvalid", "bready")

#: MR-ENG-101: the ports of the joined block, by Verilog name.
INPUTS = (("s_axis__tdata", "s_axis__tkeep", "s_axis__tvalid", "s_axis__tlast", "s_axis__tuser",
           "m_bypass__tready", "m_ack__ready", "m_done__ready", "m_cqe__ready")
          + tuple("m_axi__" + n for n in AXI_IN) + tuple("s_axil__" + n for n in AXIL)
          + ("parser_reg_addr",))
OUTPUTS = (("s_axis__tready", "m_bypass__tdata", "m_bypass__tkeep", "m_bypass__tvalid",
            "m_bypass__tlast", "m_ack__payload", "m_ack__valid", "m_done__payload", "m_done__valid",
            "m_cqe__payload", "m_cqe__valid")
           + tuple("m_axi__" + n for n in AXI_OUT) + tuple("s_axil__" + n for n in AXIL_OUT)
           + ("parser_reg_data",))


def rotate_down(value, lanes, nb):
    """``value`` (``nb`` byte lanes) rotated down by ``lanes``: lane i takes lane i + lanes."""
    bits = 8 * nb
    sh = 8 * (lanes % nb)
    return ((value >> sh) | (value << (bits - sh))) & ((1 << bits) - 1)


class PackModel:
    """MR-ENG-104: the payload repacker. The parser's payload beats keep the frame's byte lanes
    (MR-HW-030: the first beat starts at lane ``s``); the RX engine and the DMA take the bytes
    packed from lane 0 (MR-RX-002, MR-DMA-020). Every input beat is rotated down by the packet's
    ``s``; the bytes not yet sent wait in ``acc`` (``acc_n`` of them, from lane 0); a beat goes
    out when ``nb`` bytes are there or the packet ends. A last input beat whose bytes do not all
    fit leaves its rest in ``acc``, and that rest goes out next cycle while the input waits.

    The output ``{data, keep, last}`` is a register; the input ready is ``not flush and (output
    register empty or taken)``, so it follows the output ready in the same cycle."""

    def __init__(self, width):
        self.width, self.nb = width, width // 8
        self.beat = payload_layout(width)
        self.full = (1 << self.nb) - 1
        self.acc = 0
        self.acc_n = 0
        self.shift = 0
        self.first = 1
        self.flush = 0
        self.out = (0, 0, 0, 0)         # valid, data, keep, last

    def outputs(self):
        valid, data, keep, last = self.out
        return {"valid": valid, "payload": pack(self.beat, {"data": data, "keep": keep, "last": last})}

    def busy(self):
        return bool(self.acc_n or self.flush or self.out[0])

    def step(self, valid, data, keep, last, ready):
        """One clock: the input beat (``tvalid``, ``tdata``, ``tkeep``, ``tlast``) and the output
        ready; returns the input ready of this cycle."""
        nb = self.nb
        free = not self.out[0] or ready
        in_ready = int(not self.flush and free)
        if self.flush:
            if free:
                self.out = (1, self.acc, (1 << self.acc_n) - 1, 1)
                self.flush, self.acc_n, self.first = 0, 0, 1
            return in_ready
        if free:
            self.out = (0,) + self.out[1:]
        if not (valid and in_ready):
            return in_ready
        lo = (keep & -keep).bit_length() - 1 if keep else 0
        s = lo if self.first else self.shift
        n = keep.bit_length() - lo
        rot = rotate_down(data, s, nb)
        low = (1 << 8 * self.acc_n) - 1
        comb = (self.acc & low) | (rot & ~low & ((1 << self.width) - 1))
        total = self.acc_n + n
        self.shift = s
        self.first = int(bool(last))
        if total >= nb or last:
            self.out = (1, comb, self.full if total >= nb else (1 << total) - 1, int(bool(last) and total <= nb))
            if total >= nb:
                self.acc, self.acc_n = rot, total - nb
            else:
                self.acc, self.acc_n = comb, 0
            if last and total > nb:
                self.flush, self.first = 1, 0
            elif last:
                self.acc_n = 0
        else:
            self.acc, self.acc_n = comb, total
        return in_ready


class EngineRxModel:
    """The receive half of the engine, cycle by cycle on every port of ``hdl.engine.EngineRx``
    (MR-ENG-101..104): ``step(inputs) -> outputs`` once per clock with the Verilog port names."""

    def __init__(self, width=512, conns=records.CONNS, paths=records.PATHS, keys=1024, *,
                 max_frame=9216, outstanding=OUTSTANDING):
        self.width = width
        self.parser = ParserModel(width, max_frame=max_frame)
        self.pack = PackModel(width)
        self.rx = RxCycleModel(width, conns, paths, keys)
        self.dma = DmaWriteCycleModel(width, conns, outstanding=outstanding)
        self.regs = RegsCycleModel(conns, paths, keys)
        self.lay = self.rx.lay
        self.keep_mask = (1 << width // 8) - 1

    @staticmethod
    def port_names():
        return {"inputs": list(INPUTS), "outputs": list(OUTPUTS)}

    def busy(self):
        return (self.parser.busy() or self.pack.busy() or self.rx.busy() or self.dma.busy()
                or self.regs.busy())

    def step(self, inputs):
        g = inputs.get
        po, ko, do, ro = (self.parser.outputs(), self.pack.outputs(), self.dma.outputs(),
                          self.regs.outputs())
        rx_out = self.rx.step({
            "s_meta__payload": po["m_meta__payload"], "s_meta__valid": po["m_meta__valid"],
            "s_payload__payload": ko["payload"], "s_payload__valid": ko["valid"],
            "s_cfg__payload": ro["m_cfg__payload"], "s_cfg__valid": ro["m_cfg__valid"],
            "m_ack__ready": g("m_ack__ready", 0), "m_place__ready": do["s_place__ready"],
            "m_data__ready": do["s_data__ready"], "m_cqe__ready": g("m_cqe__ready", 0),
            "reg_addr": ro["reg_addr"]})
        pay_ready = self.pack.step(po["m_payload__tvalid"], po["m_payload__tdata"],
                                   po["m_payload__tkeep"], po["m_payload__tlast"],
                                   rx_out["s_payload__ready"])
        self.parser.step({
            "s_axis__tdata": g("s_axis__tdata", 0), "s_axis__tkeep": g("s_axis__tkeep", 0),
            "s_axis__tvalid": g("s_axis__tvalid", 0), "s_axis__tlast": g("s_axis__tlast", 0),
            "s_axis__tuser": g("s_axis__tuser", 0), "m_meta__ready": rx_out["s_meta__ready"],
            "m_payload__tready": pay_ready, "m_bypass__tready": g("m_bypass__tready", 0),
            "reg_addr": g("parser_reg_addr", 0)})
        self.dma.step({
            "s_place__payload": rx_out["m_place__payload"], "s_place__valid": rx_out["m_place__valid"],
            "s_data__payload": rx_out["m_data__payload"], "s_data__valid": rx_out["m_data__valid"],
            "m_done__ready": g("m_done__ready", 0),
            **{"m_axi__" + n: g("m_axi__" + n, 0) for n in AXI_IN}})
        self.regs.step({**{"s_axil__" + n: g("s_axil__" + n, 0) for n in AXIL},
                        "m_cfg__ready": rx_out["s_cfg__ready"], "reg_data": rx_out["reg_data"]})
        out = {n: po[n] for n in ("s_axis__tready", "m_bypass__tdata", "m_bypass__tkeep",
                                  "m_bypass__tvalid", "m_bypass__tlast")}
        out.update({"m_ack__payload": rx_out["m_ack__payload"], "m_ack__valid": rx_out["m_ack__valid"],
                    "m_done__payload": do["m_done__payload"], "m_done__valid": do["m_done__valid"],
                    "m_cqe__payload": rx_out["m_cqe__payload"], "m_cqe__valid": rx_out["m_cqe__valid"],
                    "parser_reg_data": po["reg_data"]})
        out.update({"m_axi__" + n: do["m_axi__" + n] for n in AXI_OUT})
        out.update({"s_axil__" + n: ro["s_axil__" + n] for n in AXIL_OUT})
        return out


def engine_rx_model(width=512):
    """The model of ``hdl.engine.EngineRx(width)`` (4,096 connections x 8 paths, 1,024 keys)."""
    return EngineRxModel(width)


def engine_rx_model_256x4(width=512):
    """The model of the small instance ``hdl.engine.engine_rx_256x4`` (256 x 4, 256 keys, 32
    bursts outstanding)."""
    return EngineRxModel(width, 256, 4, 256, outstanding=32)
