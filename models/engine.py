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
counter value and the parser's counter value (MR-ENG-105: the parser's counter select is the
register block's, a function of its state).

The whole engine (MR-ENG-130..): :class:`EngineModel` composes ``EngineRxModel(peer_acks=True)``,
:class:`~metaroce.models.tx.TxCycleModel` (``ack_desc=True``: its one frame builder takes the
ACK descriptors too, MR-ENG-282..), :class:`AckInModel`, :class:`AckOutModel`, stepped in
MR-ENG-136's order, and :class:`RspJoinModel` (the READ responses from the receive half to the
TX half, MR-ENG-140..144).

models/ never imports hdl/.
"""
from __future__ import annotations

from . import records
from .atomic import ATOM_CTR, ATOM_CTR_BASE, AXI_IN as ATOM_AXI_IN, AXI_OUT as ATOM_AXI_OUT, AtomicExecModel
from .dma_write import OUTSTANDING, DmaWriteCycleModel
from .parser import ParserModel
from .regs import HINT_OUTPUTS, HINT_REG_OF, PACE_INPUTS, PACE_OUTPUTS, RegsCycleModel
from .rx_hint import rx_hint_model, seen_layout, seen_of_meta
from .rx import (CHUNK_RING, RD_OP_CMP_SWAP, RD_OP_FETCH_ADD, RD_OP_READ, SMALL as RX_SMALL, TABLE_READ,
                 TABLE_RSP_FREE, TABLE_INIT_DEPTH, TABLE_TX_PSN,
                 WC_COMP_SWAP, WC_FETCH_ADD, WC_RDMA_READ, RxCycleModel, bundle_entry, pack, payload_layout)
from .fifo import SyncFifoModel
from .frame_builder import pack_desc
from .parser import META_FIELDS
from .rx import unpack
from .tx_sched import OP_CMP_SWAP, OP_FETCH_ADD, OP_READ, STATUS_LOC_LEN_ERR, STATUS_LOC_QP_OP_ERR
from .wire import ROCE_PORT, Op

__all__ = ["PackModel", "EngineRxModel", "engine_rx_model", "engine_rx_model_256x4", "INPUTS",
           "OUTPUTS", "rotate_down", "meta_field", "is_peer_ack", "peer_ack_record", "ack_desc",
           "AckInModel", "AckOutModel", "RspJoinModel", "RdRowsModel", "CqJoinModel", "CQ_DEPTH",
           "CQ_RD_OPS", "CQ_RX_OPCODES", "CQ_REFUSED", "WC_OF_OP", "host_completion", "rd_row_write",
           "init_depth_write", "init_depth_of", "engine_tx_msgs", "engine_tx_msgs_within",
           "RSP_FIFO_DEPTH", "ENG_CTR", "PSN_IGNORED_CTR", "PsnInitModel", "tx_psn_write", "rsp_free_write", "rsp_free_depth", "EngineModel", "engine_model_small",
           "ACK_FIFO_DEPTH", "WR_FIFO_DEPTH", "ENGINE_TX_NAMES", "engine_layouts", "engine_tx_params", "ENGINE_RTO_NS", "ENGINE_CFG_SACK", "ENGINE_TX_DEPTH",
           "ENGINE_CHUNK_WINDOW", "ENGINE_CWND", "ENGINE_CONN_WINDOW",
           "PAIR_PREFIXES", "PairPorts", "EnginePairModel", "HINT_BITS", "HINT_MAX", "hint_of_rate",
           "check_ack_hint_options", "check_engine_hint_options", "engine_model_hints_small",
           "check_rx_hint_options", "engine_model_rx_hint_small"]

AXIL = ("awaddr", "awvalid", "wdata", "wstrb", "wvalid", "bready", "araddr", "arvalid", "rready")
AXIL_OUT = ("awready", "wready", "bresp", "bvalid", "arready", "rdata", "rresp", "rvalid")
AXI_IN = ("awready", "wready", "bid", "bresp", "bvalid")
AXI_OUT = ("awid", "awaddr", "awlen", "awsize", "awburst", "awvalid", "wdata", "wstrb", "wlast",
           "wvalid", "bready")

#: MR-ENG-101: the ports of the joined block, by Verilog name.
INPUTS = (("s_axis__tdata", "s_axis__tkeep", "s_axis__tvalid", "s_axis__tlast", "s_axis__tuser",
           "m_bypass__tready", "m_ack__ready", "m_done__ready", "m_cqe__ready")
          + tuple("m_axi__" + n for n in AXI_IN) + tuple("s_axil__" + n for n in AXIL))
OUTPUTS = (("s_axis__tready", "m_bypass__tdata", "m_bypass__tkeep", "m_bypass__tvalid",
            "m_bypass__tlast", "m_ack__payload", "m_ack__valid", "m_done__payload", "m_done__valid",
            "m_cqe__payload", "m_cqe__valid")
           + tuple("m_axi__" + n for n in AXI_OUT) + tuple("s_axil__" + n for n in AXIL_OUT))


_META_AT = {path: (off, (1 << w) - 1) for path, off, w in META_FIELDS}
_ACK_OPS = (int(Op.MR_ACK), int(Op.MR_NAK))


def meta_field(value, *path):
    """One field of a flat ``META_LAYOUT`` integer (``meta_field(v, "bth", "opcode")``)."""
    off, mask = _META_AT[path]
    return (value >> off) & mask


def is_peer_ack(meta):
    """MR-ENG-131: the record of a peer's ACK or NAK frame: not dropped, BTH opcode MR_ACK or
    MR_NAK."""
    return not meta_field(meta, "drop") and meta_field(meta, "bth", "opcode") in _ACK_OPS


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
                 streams=records.STREAMS, chunk_ring=CHUNK_RING, max_frame=9216, outstanding=OUTSTANDING,
                 peer_acks=False, tx_counters=False, responses=False, rd_rows=False, atomics=False,
                 max_rd_atomic=None, pacing=False, cfg_sack=True, interval=1, hint_regs=False):
        self.width = width
        # MR-ENG-338/339: the register block's hint window out, and the arrivals the RX takes
        self.hint_regs = bool(hint_regs)
        self.interval = interval        # MR-RX-319: the RX's frame interval (MR-ENG-300)
        self.pacing = pacing            # MR-ENG-259: the register block's pacing window
        self.rd_rows = rd_rows
        self.atomics = atomics
        self.peer_acks = peer_acks
        self.tx_counters = tx_counters
        self.responses = responses
        self.parser = ParserModel(width, max_frame=max_frame)
        self.pack = PackModel(width)
        # MR-ENG-239: the responder resources (hw-rx.md MR-RX-186), freed by table 7 writes on
        # s_cfg_eng (the whole engine's, MR-ENG-240)
        self.rx = RxCycleModel(width, conns, paths, keys, streams=streams, chunk_ring=chunk_ring,
                               max_rd_atomic=max_rd_atomic, cfg_sack=cfg_sack, interval=interval)
        self.dma = DmaWriteCycleModel(width, conns, outstanding=outstanding)
        # MR-ENG-105: the register block reads the parser's counters (and the TX half's)
        self.regs = RegsCycleModel(conns, paths, keys, parser=True, tx=tx_counters, eng=responses,
                                   pacing=pacing, hint=self.hint_regs)
        self.conns = conns
        self.lay = self.rx.lay
        self.keep_mask = (1 << width // 8) - 1
        # MR-ENG-158: the atomic executor beside the placement DMA
        self.atom = AtomicExecModel(width, self.lay.atom, self.lay.rsp) if atomics else None

    def port_names(self):
        ins, outs = list(INPUTS), list(OUTPUTS)
        if self.tx_counters:
            ins.append("tx_reg_data")
            outs.append("tx_reg_addr")
        if self.peer_acks:
            ins.append("m_peer_ack__ready")
            outs += ["m_peer_ack__payload", "m_peer_ack__valid"]
        if self.responses:
            ins += ["m_rsp__ready", "eng_reg_data"]
            outs += ["m_rsp__payload", "m_rsp__valid", "eng_reg_addr"]
        if self.rd_rows:
            ins += ["s_cfg_eng__payload", "s_cfg_eng__valid"]
            # MR-ENG-272: the record the RX engine takes on its s_cfg, for RdRows' depths
            outs += ["s_cfg_eng__ready", "cfg_tap", "cfg_tap_take"]
        if self.atomics:
            # MR-ENG-165: the executor's AXI4 master and its result area's base
            ins += ["m_axi_at__" + n for n in ATOM_AXI_IN] + ["atom_base"]
            outs += ["m_axi_at__" + n for n in ATOM_AXI_OUT]
        if self.pacing:
            ins += list(PACE_INPUTS)
            outs += list(PACE_OUTPUTS)
        if self.hint_regs:
            outs += list(HINT_OUTPUTS) + ["m_seen__valid", "m_seen__payload"]
        return {"inputs": ins, "outputs": outs}

    def busy(self):
        return (self.parser.busy() or self.pack.busy() or self.rx.busy() or self.dma.busy()
                or self.regs.busy() or (self.atom is not None and self.atom.busy()))

    def step(self, inputs):
        g = inputs.get
        po, ko, do, ro = (self.parser.outputs(), self.pack.outputs(), self.dma.outputs(),
                          self.regs.outputs())
        # MR-ENG-131: the peer's ACK and NAK records leave on m_peer_ack instead of s_meta
        to_ack = self.peer_acks and is_peer_ack(po["m_meta__payload"])
        # MR-ENG-149: the engine's own row writes go before the host's
        eng_cfg = bool(self.rd_rows and g("s_cfg_eng__valid", 0))
        at = self.atom
        if at is not None:
            # MR-ENG-160..163: the executor's outputs are functions of its state
            ao = at.outputs()
            hold = ao["hold_place"]
        else:
            ao, hold = None, 0
        cfg_valid, cfg_pay = ((1, g("s_cfg_eng__payload", 0)) if eng_cfg
                              else (ro["m_cfg__valid"], ro["m_cfg__payload"]))
        rx_out = self.rx.step({
            "s_meta__payload": po["m_meta__payload"],
            "s_meta__valid": po["m_meta__valid"] and not to_ack,
            "s_payload__payload": ko["payload"], "s_payload__valid": ko["valid"],
            "s_cfg__payload": cfg_pay, "s_cfg__valid": cfg_valid,
            "m_ack__ready": g("m_ack__ready", 0),
            "m_place__ready": int(bool(do["s_place__ready"] and not hold)),
            "m_data__ready": do["s_data__ready"], "m_cqe__ready": g("m_cqe__ready", 0),
            # MR-RX-131, MR-ENG-140: the TX half's in the whole engine; the receive half alone
            # takes and drops them
            "m_rsp__ready": g("m_rsp__ready", 0) if self.responses else 1,
            # MR-ENG-156 without the executor: atomic items are taken and discarded, never held
            "m_atom__ready": ao["s_atom__ready"] if at is not None else 1,
            "reg_addr": ro["reg_addr"]})
        pay_ready = self.pack.step(po["m_payload__tvalid"], po["m_payload__tdata"],
                                   po["m_payload__tkeep"], po["m_payload__tlast"],
                                   rx_out["s_payload__ready"])
        self.parser.step({
            "s_axis__tdata": g("s_axis__tdata", 0), "s_axis__tkeep": g("s_axis__tkeep", 0),
            "s_axis__tvalid": g("s_axis__tvalid", 0), "s_axis__tlast": g("s_axis__tlast", 0),
            "s_axis__tuser": g("s_axis__tuser", 0),
            "m_meta__ready": g("m_peer_ack__ready", 0) if to_ack else rx_out["s_meta__ready"],
            "m_payload__tready": pay_ready, "m_bypass__tready": g("m_bypass__tready", 0),
            "reg_addr": ro["parser_reg_addr"]})
        place_valid = int(bool(rx_out["m_place__valid"] and not hold))
        if at is not None:
            # MR-ENG-160..163: the item, the placement handshakes, the merged responses' ready
            rsp_ready = g("m_rsp__ready", 0) if self.responses else 1
            at.step({"s_atom__valid": rx_out["m_atom__valid"], "s_atom__payload": rx_out["m_atom__payload"],
                     "m_rsp__ready": int(bool(rsp_ready and not (self.responses and rx_out["m_rsp__valid"]))),
                     "result_base": g("atom_base", 0), "place_busy": rx_out["m_place__valid"],
                     "place_taken": int(bool(place_valid and do["s_place__ready"])),
                     "place_done": int(bool(do["m_done__valid"] and g("m_done__ready", 0))),
                     "reg_addr": ro["eng_reg_addr"] if self.responses else 0,
                     **{"m_axi__" + n: g("m_axi_at__" + n, 0) for n in ATOM_AXI_IN}})
        self.dma.step({
            "s_place__payload": rx_out["m_place__payload"], "s_place__valid": place_valid,
            "s_data__payload": rx_out["m_data__payload"], "s_data__valid": rx_out["m_data__valid"],
            "m_done__ready": g("m_done__ready", 0),
            **{"m_axi__" + n: g("m_axi__" + n, 0) for n in AXI_IN}})
        self.regs.step({**{"s_axil__" + n: g("s_axil__" + n, 0) for n in AXIL},
                        "m_cfg__ready": int(rx_out["s_cfg__ready"] and not eng_cfg),
                        "reg_data": rx_out["reg_data"],
                        "parser_reg_data": po["reg_data"], "tx_reg_data": g("tx_reg_data", 0),
                        # MR-ENG-226: the executor's counters in the engine's window beside the
                        # response join's (each 0 outside its own indices)
                        "eng_reg_data": g("eng_reg_data", 0) | (ao["reg_data"] if at is not None else 0),
                        "m_pace__ready": g("m_pace__ready", 0)})
        out = {n: po[n] for n in ("s_axis__tready", "m_bypass__tdata", "m_bypass__tkeep",
                                  "m_bypass__tvalid", "m_bypass__tlast")}
        out.update({"m_ack__payload": rx_out["m_ack__payload"], "m_ack__valid": rx_out["m_ack__valid"],
                    "m_done__payload": do["m_done__payload"], "m_done__valid": do["m_done__valid"],
                    "m_cqe__payload": rx_out["m_cqe__payload"], "m_cqe__valid": rx_out["m_cqe__valid"]})
        if self.tx_counters:
            out["tx_reg_addr"] = ro["tx_reg_addr"]
        out.update({"m_axi__" + n: do["m_axi__" + n] for n in AXI_OUT})
        out.update({"s_axil__" + n: ro["s_axil__" + n] for n in AXIL_OUT})
        if self.peer_acks:
            out.update({"m_peer_ack__payload": po["m_meta__payload"],
                        "m_peer_ack__valid": int(bool(po["m_meta__valid"] and to_ack))})
        if self.responses:
            out.update({"m_rsp__payload": rx_out["m_rsp__payload"], "m_rsp__valid": rx_out["m_rsp__valid"],
                        "eng_reg_addr": ro["eng_reg_addr"]})
            if at is not None and not rx_out["m_rsp__valid"]:
                # MR-ENG-160: the executor's items when the RX offers none
                out.update({"m_rsp__payload": ao["m_rsp__payload"], "m_rsp__valid": ao["m_rsp__valid"]})
        if at is not None:
            out.update({"m_axi_at__" + n: ao["m_axi__" + n] for n in ATOM_AXI_OUT})
        if self.rd_rows:
            out["s_cfg_eng__ready"] = rx_out["s_cfg__ready"]
            out["cfg_tap"] = cfg_pay
            out["cfg_tap_take"] = int(bool(cfg_valid and rx_out["s_cfg__ready"]))
        if self.pacing:
            out.update({n: ro[n] for n in PACE_OUTPUTS})
        if self.hint_regs:
            # MR-ENG-338: the arrival of the record the RX takes this cycle; MR-ENG-339: the window
            seen = (seen_of_meta(po["m_meta__payload"], self.conns)
                    if po["m_meta__valid"] and not to_ack and rx_out["s_meta__ready"] else None)
            out.update({n: ro[n] for n in HINT_OUTPUTS})
            out["m_seen__valid"] = int(seen is not None)
            out["m_seen__payload"] = (pack(seen_layout(self.conns), dict(zip(("conn", "ce", "more"), seen)))
                                      if seen else 0)
        return out


def engine_rx_model(width=512):
    """The model of ``hdl.engine.EngineRx(width)`` (4,096 connections x 8 paths, 1,024 keys)."""
    return EngineRxModel(width)


def engine_rx_model_256x4(width=512, **kw):
    """The model of the small instance ``hdl.engine.engine_rx_256x4`` (``models.rx.SMALL``: 256 x
    4, 256 keys, 4 streams; 32 bursts outstanding)."""
    return EngineRxModel(width, **RX_SMALL, outstanding=32, **kw)


def rx_model_of_engine(width=64, interval=None):
    """MR-RX-321: the model of ``hdl.engine.rx_of_engine``: the RX as ``Engine(width)`` builds it
    (2 connections x 4 paths, 256 keys, 4 streams, the chunk window, the responder bound, no
    SACK in path writes), at ``interval`` (default the width's frame interval, MR-ENG-299)."""
    from .rx import RxCycleModel
    return RxCycleModel(width, 2, 4, 256, streams=RX_SMALL["streams"], chunk_ring=ENGINE_CHUNK_WINDOW,
                        max_rd_atomic=records.RD_ATOMIC, cfg_sack=ENGINE_CFG_SACK,
                        interval=records.interval_of(width, interval))


# ------------------------------------------------------------------ the whole engine (MR-ENG-130..)

#: MR-ENG-132: slots of AckIn's FIFO (one record a frame; a second slot only adds a read mux).
ACK_FIFO_DEPTH = 1


#: MR-ENG-312/313: the engine's hints in Mb/s: the TX's ``hint`` field (``cwnd.RATE_BITS``, MR-TX-490)
HINT_BITS = 19
HINT_MAX = (1 << HINT_BITS) - 1


def hint_of_rate(rate_mbps, hint_wrong=None):
    """MR-ENG-313: the ``s_ack`` record's ``hint`` of an MRAH's ``rate_mbps``: saturated at
    :data:`HINT_MAX` (MR-TX-490). ``hint_wrong`` (negative controls only, MR-ENG-322): "drop"
    gives 0, "trunc" the low :data:`HINT_BITS` bits."""
    if hint_wrong == "drop":
        return 0
    if hint_wrong == "trunc":
        return rate_mbps & HINT_MAX
    return min(rate_mbps, HINT_MAX)


def check_ack_hint_options(hints, hint_wrong):
    """MR-ENG-322: ``hint_wrong`` is None, "drop" or "trunc", and only with ``hints``."""
    if hint_wrong not in (None, "drop", "trunc"):
        raise ValueError(f"hint_wrong must be None, 'drop' or 'trunc', not {hint_wrong!r}")
    if hint_wrong is not None and not hints:
        raise ValueError("hint_wrong needs hints")
    return bool(hints), hint_wrong


def check_rx_hint_options(hints, rx_hint, rx_hint_wrong, rx_hint_form=None):
    """MR-ENG-340: ``rx_hint`` needs ``hints``; ``rx_hint_wrong`` (negative controls only,
    MR-ENG-336's forms) needs ``rx_hint``; MR-ENG-361: ``rx_hint_form`` (one of
    ``HINT_FORMS``, None: by the connections) needs ``rx_hint``."""
    from .rx_hint import HINT_FORMS, HINT_WRONG
    if rx_hint and not hints:
        raise ValueError("rx_hint needs hints")
    if rx_hint_wrong not in HINT_WRONG or (rx_hint_wrong is not None and not rx_hint):
        raise ValueError(f"rx_hint_wrong must be one of {HINT_WRONG}, and only with rx_hint")
    if rx_hint_form not in (None,) + HINT_FORMS or (rx_hint_form is not None and not rx_hint):
        raise ValueError(f"rx_hint_form must be one of {HINT_FORMS}, and only with rx_hint")
    return bool(rx_hint)


def check_engine_hint_options(hints, hint_wrong, *, pacing, rows):
    """MR-ENG-311: the engine's ``hints`` not with ``pacing`` nor ``rows`` (the TX's hinted
    windows are not built with them, MR-TX-489); :func:`check_ack_hint_options`."""
    hints, hint_wrong = check_ack_hint_options(hints, hint_wrong)
    if hints and (pacing or rows):
        raise ValueError("hints with pacing or rows is not built (MR-TX-489)")
    return hints, hint_wrong


def peer_ack_record(meta, conns, hints=False, hint_wrong=None):
    """MR-ENG-132: the TX half's ``s_ack`` record (MR-TX-003) of a peer's ACK or NAK metadata
    record, or None when its DestQP names no connection. ``hints`` (MR-ENG-313): the record's
    ``hint`` from the MRAH's ``rate_mbps`` (:func:`hint_of_rate`; 0 for a NAK)."""
    qp = meta_field(meta, "bth", "dest_qp")
    if qp >= conns:
        return None
    f = lambda *p: meta_field(meta, *p)          # noqa: E731
    sport = f("udp", "sport")
    if f("has", "mrah"):
        ce = f("mrah", "ce_count")
        rec = {"nak": int(f("bth", "opcode") == Op.MR_NAK), "conn": qp, "path": f("mrah", "path"),
               "psn": f("mrah", "trigger_psn"), "reason": 0, "cum": f("mrah", "cum_psn"),
               "sack": f("mrah", "sack"), "ce_count": ce, "ece": int(ce != 0), "sport": sport}
        if hints:
            rec["hint"] = hint_of_rate(f("mrah", "rate_mbps"), hint_wrong)
        return rec
    rec = {"nak": 1, "conn": qp, "path": f("mrnh", "path"), "psn": f("mrnh", "psn"),
           "reason": f("mrnh", "reason"), "cum": 0, "sack": 0, "ce_count": 0, "ece": 0,
           "sport": sport}
    if hints:
        rec["hint"] = 0
    return rec


def ack_desc(rec, row, hint=0):
    """MR-ENG-133: the frame builder's descriptor (a dict) of the RX engine's ACK/NAK request
    ``rec`` for the connection whose template row is ``row`` (the TX half's ``cfg`` fields):
    ``desc_of_frame`` of the endpoint's ``ack_frame`` / ``nak_frame`` in every field the
    opcode's headers have; the MRAH and MRNH fields both carry the record whatever the opcode
    (the builder reads only the opcode's headers, MR-TXF-003)."""
    d = {"eth_dst": row["eth_dst"], "eth_src": row["eth_src"], "ip_dscp": row["ip_dscp"],
         "ip_ttl": row["ip_ttl"], "ip_src": row["ip_src"], "ip_dst": row["ip_dst"],
         "udp_sport": rec["sport"], "udp_dport": ROCE_PORT, "bth_pkey": row["pkey"],
         "bth_dest_qp": row["dest_qp"]}
    # both headers from the record, whatever the opcode (the builder reads only the opcode's,
    # MR-TXF-003)
    d.update({"bth_opcode": int(Op.MR_NAK if rec["nak"] else Op.MR_ACK),
              "mrnh_version": 1, "mrnh_path": rec["path"], "mrnh_reason": rec["reason"],
              "mrnh_psn": rec["psn"],
              "mrah_version": 1, "mrah_flags": int(rec["ce_count"] != 0), "mrah_path": rec["path"],
              "mrah_ce_count": rec["ce_count"], "mrah_cum_psn": rec["cum"],
              "mrah_trigger_psn": rec["psn"], "mrah_sack": rec["sack"],
              "mrah_rate_mbps": hint})                # MR-ENG-312: the host's hint (0 without)
    return d


#: MR-ENG-155: the work requests' FIFO in front of the TX half's s_wr
WR_FIFO_DEPTH = 1


class _AckFifo:
    """AckIn's (and RspJoin's) SyncFIFO: ``ready`` not full, ``valid`` not empty (both of its
    state only), the head read without a register."""

    def __init__(self, depth=ACK_FIFO_DEPTH):
        self.q = SyncFifoModel(depth)

    def busy(self):
        return self.q.level > 0

    def in_ready(self):
        return int(self.q.level < self.q.depth)

    def out(self):
        return int(self.q.level > 0), self.q.head


class AckInModel(_AckFifo):
    """MR-ENG-132: the peer's ACK/NAK metadata records into ``s_ack`` records."""

    def __init__(self, conns, ack_layout, *, hints=False, hint_wrong=None):
        super().__init__()
        self.conns, self.lay = conns, ack_layout
        self.hints, self.hint_wrong = check_ack_hint_options(hints, hint_wrong)      # MR-ENG-313

    def step(self, in_valid, meta, out_ready):
        rec = (peer_ack_record(meta, self.conns, self.hints, self.hint_wrong)
               if in_valid and self.in_ready() else None)
        self.q.update(out_ready, rec is not None, pack(self.lay, rec) if rec is not None else 0)


#: MR-ENG-141: slots of RspJoin's FIFO (a READ request is a frame of at least two beats, so one
#: item a frame passes; as AckIn's).
RSP_FIFO_DEPTH = 1
#: MR-ENG-143: the whole engine's own counters (``eng_reg_addr`` numbers them): READ response
#: items handed from the RX engine to the TX half, responses completed (status 0) and failed.
ENG_CTR = {"rsp_items": 0, "rsp_done": 1, "rsp_failed": 2}


def rsp_free_write(cfg_lay, conn):
    """MR-ENG-240: the RX's configuration write (``s_cfg``, table 7 ``TABLE_RSP_FREE``,
    hw-rx.md MR-RX-173) that frees one responder resource of connection ``conn``."""
    return pack(cfg_lay, {"table": TABLE_RSP_FREE, "addr": conn, "data": 0})


def rsp_free_depth(conns, max_rd_atomic):
    """MR-ENG-241: the depth of RspJoin's queue of frees: ``conns x max_rd_atomic``, the
    resources the RX can hold at once (a free waiting in the queue is a resource still counted
    at the RX, so the queue is never full when a record comes)."""
    return conns * max_rd_atomic


def engine_offer(max_rd_atomic=records.RD_ATOMIC, msg_slots=None):
    """MR-ENG-253: what the engine advertises when a connection opens (MR-VERB-015): its build
    parameters, the RX's responder resources ``max_rd_atomic`` (MR-ENG-239; None: built without
    the count, no bound) and its message slots ``msg_slots`` (per stream, MR-ENG-157; None: the
    RX's ``MSG_SLOTS``) as ``max_rx_msgs``: a peer within them per connection is within them
    per stream."""
    from .protocol import OpenOffer
    from .rx import MSG_SLOTS
    return OpenOffer(max_rd_atomic, MSG_SLOTS if msg_slots is None else msg_slots)


def engine_init_rd_atomic(streams, rd_slots):
    """MR-ENG-256: the engine's initiator depth, its build's: RdRows' rows of a connection
    (``streams x rd_slots``, MR-ENG-150), READ and atomic requests in flight at most."""
    return streams * rd_slots


def engine_peer_check(offer, streams, rd_slots):
    """MR-ENG-274 (was MR-ENG-256's refusal): the engine's initiator depth on a connection from a
    peer's offer at its open (MR-VERB-015): the smaller of its build's
    (:func:`engine_init_rd_atomic`) and the peer's ``max_rd_atomic`` (None: no bound, the build's),
    which the host writes as the connection's table 8 row (:func:`init_depth_write`) when it is
    below the build's. A peer offering 0 responder resources is refused (ValueError, MR-VERB-015's
    bound below 1): the engine has no depth 0 (its table 8 value 0 is the full depth). Returns the
    agreed depth."""
    from .protocol import open_limits
    depth = engine_init_rd_atomic(streams, rd_slots)
    return open_limits(1, depth, offer).max_init_rd_atomic


def engine_tx_msgs(streams, depth):
    """MR-ENG-280: the messages of a connection the engine's TX half may hold started and not
    completed: its scheduler's rings (``depth`` a stream, hw-tx-sched.md MR-TXS-012)."""
    return streams * depth


def engine_tx_msgs_within(offer, streams, depth):
    """MR-ENG-280: whether the engine's TX half stays within a peer's ``max_rx_msgs`` (None or
    no offer: no bound) without a cap: no register lowers :func:`engine_tx_msgs`."""
    lim = None if offer is None else offer.max_rx_msgs
    return lim is None or engine_tx_msgs(streams, depth) <= lim


class RspJoinModel(_AckFifo):
    """MR-ENG-140..143: the RX engine's READ response items (``m_rsp``) into the TX half's
    ``s_rsp`` through a 1-entry FIFO (both sides' handshake of its state only); the TX half's
    ``m_rsp_done`` records always taken and counted (:data:`ENG_CTR`, 64 bits each); the counter
    ``reg_addr`` selects is ``reg_data`` in the next cycle (a register, MR-REG-041).
    MR-ENG-240..242: with ``free_depth`` (and ``cfg_lay``, the RX's ``s_cfg`` layout) each
    record's connection also enters a queue of frees whose head is a table 7 write
    (:func:`rsp_free_write`, ``free_out``), popped by ``step``'s ``free_ready``."""

    def __init__(self, done_layout, *, cfg_lay=None, free_depth=0):
        super().__init__(RSP_FIFO_DEPTH)
        self.done_lay = done_layout
        self.ctr = [0] * len(ENG_CTR)
        self.reg_data = 0
        self.cfg_lay = cfg_lay
        self.free_q = SyncFifoModel(free_depth) if free_depth else None
        self.frees = 0                  # table 7 writes taken by the RX (for the runs' figures)
        self.free_max = 0               # the queue's highest level (MR-ENG-241)

    def busy(self):
        return super().busy() or (self.free_q is not None and self.free_q.level > 0)

    def free_out(self):
        """MR-ENG-240: ``(valid, payload)`` of the queue's head table 7 write (both of state)."""
        if self.free_q is None:
            return 0, 0
        return int(self.free_q.level > 0), rsp_free_write(self.cfg_lay, self.free_q.head)

    def _free_push(self, conn):
        """MR-ENG-241: the queue is never full when a record comes (a model error otherwise)."""
        assert self.free_q.level < self.free_q.depth, "MR-ENG-241: RspJoin's free queue overflows"
        return conn

    def step(self, in_valid, item, out_ready, done_valid, done, reg_addr, free_ready=0):
        """One clock: the RX engine's item, the TX half's ``s_rsp.ready``, its ``m_rsp_done``
        record, the register block's counter select and the RX's ready for the queue's head
        free (``s_cfg_eng.ready`` and no row write of RdRows before it, MR-ENG-242)."""
        self.reg_data = self.ctr[reg_addr] if reg_addr < len(self.ctr) else 0
        push = bool(in_valid) and self.in_ready()
        self.q.update(out_ready, push, item)
        mask = (1 << 64) - 1
        if push:
            self.ctr[ENG_CTR["rsp_items"]] = (self.ctr[ENG_CTR["rsp_items"]] + 1) & mask
        rec = unpack(self.done_lay, done) if done_valid else None
        if done_valid:
            k = ENG_CTR["rsp_failed"] if rec["status"] else ENG_CTR["rsp_done"]
            self.ctr[k] = (self.ctr[k] + 1) & mask
        if self.free_q is not None:
            pop = bool(free_ready) and self.free_q.level > 0
            self.frees += int(pop)
            conn = self._free_push(rec["conn"]) if done_valid else 0
            self.free_q.update(pop, done_valid, conn)
            self.free_max = max(self.free_max, self.free_q.level)


#: MR-ENG-305 (psneng46): the engine counter window's index of the count of initial-PSN writes the
#: TX half ignored (``psn_ignored``), after the atomic executor's (MR-ENG-226)
PSN_IGNORED_CTR = ATOM_CTR_BASE + len(ATOM_CTR)
#: MR-ENG-302: the bits of a table 9 row's ``data`` that are the initial PSN
PSN_BITS = 24


def tx_psn_write(cfg_lay, paths, conn, path, psn):
    """MR-ENG-302: the configuration record (``s_cfg``, table 9 ``TABLE_TX_PSN``) that sets path
    ``path`` of connection ``conn``'s initial send PSN, ``addr = conn x paths + path`` as the
    RX's path rows (table 3)."""
    return pack(cfg_lay, {"table": TABLE_TX_PSN, "addr": conn * paths + path, "data": psn % (1 << PSN_BITS)})


class PsnInitModel:
    """MR-ENG-302..305: the engine's initial-PSN join (``hdl.engine.PsnInit``). A table 9 record
    the RX takes (``cfg_tap``/``cfg_tap_take``, MR-ENG-272) becomes, one cycle later, one write
    ``{conn, path, psn}`` on the TX half's ``s_psn`` (a register and its payload registers, held
    until ``ready``; a table 9 record while a write waits is dropped and counted, MR-ENG-316);
    the TX half's ``psn_ignored`` cycles are counted in a 64-bit
    counter read at the engine's counter index :data:`PSN_IGNORED_CTR` (``reg_data`` a register,
    the previous cycle's select, as RspJoin's)."""

    def __init__(self, conns, paths, cfg_lay, psn_lay):
        f = dict(psn_lay)
        self.cfg_lay, self.psn_lay = cfg_lay, psn_lay
        self.pb, self.cmask = f["path"].width, (1 << f["conn"].width) - 1
        assert 1 << self.pb == paths, "MR-ENG-302: the row address splits at the paths, a power of two"
        self.valid, self.rec, self.ctr, self.reg_data = 0, 0, 0, 0
        self.writes = 0                 # figures: the writes sent to the TX half

    def out(self):
        """``(s_psn valid, s_psn payload, reg_data)``: registers only."""
        return self.valid, self.rec, self.reg_data

    def step(self, tap_take, tap, ignored, reg_addr, ready=1):
        self.reg_data = self.ctr if reg_addr == PSN_IGNORED_CTR else 0
        t = unpack(self.cfg_lay, tap)
        take = bool(tap_take) and t["table"] == TABLE_TX_PSN
        waiting = self.valid and not ready            # MR-ENG-316
        self.ctr = (self.ctr + int(bool(ignored)) + int(take and waiting)) & ((1 << 64) - 1)
        if waiting:
            return
        self.valid = int(take)
        if take:
            a = t["addr"]
            self.rec = pack(self.psn_lay, {"conn": (a >> self.pb) & self.cmask, "path": a & ((1 << self.pb) - 1),
                                           "psn": t["data"] & ((1 << PSN_BITS) - 1)})
            self.writes += 1


def _field_offset(layout, name):
    """The bit offset of a top-level field of an Amaranth layout."""
    for n, f in layout:
        if n == name:
            return f.offset
    raise KeyError(name)


def rd_row_write(rx_lay, conn, stream, msg, base, length, wr_id, op=OP_READ):
    """MR-ENG-148: the RX's configuration write (``s_cfg``, table 6, MR-RX-060/110) of a READ's
    outstanding-read row: address ``(conn x 8 + stream) x rd_slots + msg mod rd_slots``;
    MR-ENG-168: an atomic's (``op`` the work request's) with the row's ``op`` (MR-RX-159)."""
    addr = (((conn << records.STREAM_BITS) | stream) << rx_lay.rd_bits) | (msg & (rx_lay.rd_slots - 1))
    rop = {OP_CMP_SWAP: RD_OP_CMP_SWAP, OP_FETCH_ADD: RD_OP_FETCH_ADD}.get(op, RD_OP_READ)
    row = pack(rx_lay.rd, {"valid": 1, "msg": msg, "base": base, "length": length, "wr_id": wr_id,
                           "op": rop})
    return pack(rx_lay.cfg, {"table": TABLE_READ, "addr": addr, "data": row})


def init_depth_write(cfg_lay, conn, depth):
    """MR-ENG-272: the configuration write (``s_cfg`` record, table 8 ``TABLE_INIT_DEPTH``)
    that sets connection ``conn``'s initiator depth: ``data`` bits [7:0] the depth, 0 the
    build's full depth (the reset value, and a torn-down row's)."""
    if not 0 <= depth <= 0xFF:
        raise ValueError(f"an initiator depth is 0..255, not {depth!r}")
    return pack(cfg_lay, {"table": TABLE_INIT_DEPTH, "addr": conn, "data": depth})


def init_depth_of(value, full):
    """MR-ENG-273: the depth a table 8 row's ``data`` [7:0] gives a connection of ``full`` rows:
    0 and every value from ``full`` up are the full depth, 1..full-1 itself."""
    v = value & 0xFF
    return full if v == 0 or v >= full else v


class RdRowsModel:
    """MR-ENG-148..152: the engine's writer of the RX's outstanding-read rows. Per row
    ``{conn, stream, msg mod rd_slots}`` of the TX half's streams: ``busy``, the READ's ``msg``
    and ``wr_id``. ``ready(rd)`` (the scheduler's ``m_rd.ready``, on state and the register's
    READ only): the row not busy and no write pending; a READ taken makes its row busy and its
    write pending (``m_cfg``, one register) until the RX takes it; a row is freed by the RX's
    RDMA_READ record of its READ (``m_cqe`` taken, the same ``msg``) or by the TX half's failure
    record of it (``m_tx_cqe`` taken, op READ, status not 0, the same ``wr_id``)."""

    def __init__(self, conns, streams, rx_lay, rd_lay, cqe_lay, tx_cqe_lay, *, join=False):
        self.conns, self.streams = conns, streams
        # MR-ENG-203: with the completion join a row is freed by the join (``step``'s ``free``)
        self.join = join
        self.rx_lay, self.rd_lay, self.cqe_lay, self.tx_cqe_lay = rx_lay, rd_lay, cqe_lay, tx_cqe_lay
        self.slots = rx_lay.rd_slots
        self.busy = {}                  # row index -> (msg, wr_id)
        self.pend = None                # the row write waiting for the RX's s_cfg
        self.writes = 0                 # rows written (for the runs' figures)
        self.waits = 0                  # cycles a READ waited for its row
        self.pend_wait = self.pend_max = 0      # cycles a row write waited for the RX (MR-ENG-152)
        # MR-ENG-271..274: each connection's initiator depth (rows it may hold), the full depth
        # (streams x rd_slots) at reset; a table 8 record the RX takes sets it
        self.full = streams * self.slots
        self.depth = [self.full] * conns
        self.cap = True                 # False: the negative control's RdRows (the depth ignored)
        self.cap_waits = 0              # cycles a READ waited for its connection's depth
        self.peak = [0] * conns         # rows of a connection held at once, the most seen

    def index(self, conn, stream, msg):
        return (conn * self.streams + stream) * self.slots + (msg % self.slots)

    def busy_any(self):
        return self.pend is not None

    def held(self, conn):
        """MR-ENG-273: the rows connection ``conn`` holds (its READs and atomics in flight)."""
        lo = conn * self.streams * self.slots
        return sum(1 for k in self.busy if lo <= k < lo + self.full)

    def under_depth(self, conn):
        """MR-ENG-273: connection ``conn`` holds fewer rows than its depth."""
        return not self.cap or self.held(conn) < self.depth[conn]

    def ready(self, rd):
        """``m_rd.ready`` for the scheduler's register's READ ``rd`` (a dict or None): MR-ENG-150's
        row free, and MR-ENG-273's connection under its depth."""
        return int(self.pend is None and (rd is None or (
            self.index(rd["conn"], rd["stream"], rd["msg"]) not in self.busy
            and self.under_depth(rd["conn"] % self.conns))))

    def out(self):
        return int(self.pend is not None), self.pend or 0

    def step(self, rd_valid, rd, rd_ready, cfg_ready, cqe_take, cqe, tx_cqe_take, tx_cqe, op=OP_READ,
             free=None, tap_take=0, tap=0):
        """One clock: the scheduler's ``m_rd`` (packed) and the ready given it, the RX's
        ``s_cfg_eng.ready``, the RX's ``m_cqe`` and the TX half's ``m_cqe`` records taken;
        ``op`` the work request's on ``s_wr`` (MR-ENG-168); with ``join`` (MR-ENG-203) instead
        of the records the row ``free`` the join frees; ``tap_take``/``tap`` the record the RX
        took on its ``s_cfg`` (MR-ENG-272: a table 8 one sets its connection's depth)."""
        if rd_valid and not rd_ready and rd is not None:
            r = unpack(self.rd_lay, rd)
            if (self.pend is None and self.index(r["conn"], r["stream"], r["msg"]) not in self.busy
                    and not self.under_depth(r["conn"] % self.conns)):
                self.cap_waits += 1
        if tap_take:
            c = unpack(self.rx_lay.cfg, tap)
            if c["table"] == TABLE_INIT_DEPTH:
                self.depth[c["addr"] % self.conns] = init_depth_of(c["data"], self.full)
        if self.pend is not None:
            self.pend_max = max(self.pend_max, self.pend_wait)
            self.pend_wait = 0 if cfg_ready else self.pend_wait + 1
            if cfg_ready:
                self.pend = None
        if rd_valid and not rd_ready:
            self.waits += 1
        if rd_valid and rd_ready:
            r = unpack(self.rd_lay, rd)
            self.busy[self.index(r["conn"], r["stream"], r["msg"])] = (r["msg"], r["wr_id"])
            self.pend = rd_row_write(self.rx_lay, r["conn"], r["stream"], r["msg"], r["laddr"],
                                     r["length"], r["wr_id"], op)
            self.writes += 1
            c = r["conn"] % self.conns
            self.peak[c] = max(self.peak[c], self.held(c))
        if self.join:
            if free is not None:
                del self.busy[free]
            return
        if cqe_take:
            c = unpack(self.cqe_lay, cqe)
            if c["opcode"] in (WC_RDMA_READ, WC_COMP_SWAP, WC_FETCH_ADD) and c["stream"] < self.streams:
                k = self.index(c["conn"], c["stream"], c["msg"])
                if self.busy.get(k, (None,))[0] == c["msg"]:
                    del self.busy[k]
        if tx_cqe_take:
            c = unpack(self.tx_cqe_lay, tx_cqe)
            if c["op"] in (OP_READ, OP_CMP_SWAP, OP_FETCH_ADD) and c["status"] and c["stream"] < self.streams:
                for j in range(self.slots):
                    k = (c["conn"] * self.streams + c["stream"]) * self.slots + j
                    if self.busy.get(k, (None, None))[1] == c["wr_id"]:
                        del self.busy[k]


# ------------------------------------------------------------------ the completion join (MR-ENG-196..)

#: MR-ENG-199: slots of each stream's queue of the completion join, and the bound of the work
#: requests of a stream taken and not yet completed to the host (``s_wr`` held at it)
CQ_DEPTH = 8
#: MR-ENG-198: the work requests whose completion is the RX's record: a READ, and the atomics
#: (MR-ENG-211), which the TX half offers on ``m_rd`` as READs (MR-TXS-141)
CQ_RD_OPS = (OP_READ, OP_CMP_SWAP, OP_FETCH_ADD)
#: MR-ENG-197: the RX's requester records (MR-RX-112/159), taken by the join, not the host
CQ_RX_OPCODES = (WC_RDMA_READ, WC_COMP_SWAP, WC_FETCH_ADD)
#: MR-ENG-200: the statuses of a work request the TX half refused (MR-TXS-011: no ring entry,
#: no row); a READ failed with any other status (MR-TXS-027) owned a row
CQ_REFUSED = (STATUS_LOC_LEN_ERR, STATUS_LOC_QP_OP_ERR)
#: MR-ENG-202: the verbs completion opcode (models.endpoint.WcOpcode) of a work request's op
#: (records.TX_MSG): WRITE/WRITE_IMM RDMA_WRITE, SEND/SEND_IMM SEND, READ RDMA_READ, the atomics
WC_OF_OP = {0: 1, 1: 1, 2: 0, 3: 0, 4: 2, 5: 3, 6: 4}


def host_completion(rec):
    """MR-ENG-202: the host's work completion of a record of the engine's ``m_tx_cqe`` (a dict):
    ``(stream, wr_id, status, opcode, byte_len)`` as the reference endpoint's ``Completion``."""
    return (rec["stream"], rec["wr_id"], rec["status"], WC_OF_OP.get(rec["op"], -1), rec["length"])


class CqJoinModel:
    """MR-ENG-196..205: the engine's completion join. Every record of the TX half's ``m_cqe`` is
    taken in the cycle it is offered and queued in its stream's queue (``conns x streams``
    queues of :data:`CQ_DEPTH`, the stream's low bits); a READ's (:data:`CQ_RD_OPS`, not
    refused) takes its stream's oldest READ row (``order``, pushed as the READ entered the TX
    half on ``m_rd``) and, successful, waits at its queue's head until the RX's record of that
    row (``rows``: pending, ``msg``, RX record in, its status), which the join takes from the
    RX's ``m_cqe`` (:data:`CQ_RX_OPCODES`). The output register ``m_cqe`` (the engine's
    ``m_tx_cqe``) loads, when empty or taken, the first head that may leave from the queue after
    the last one served (round robin); a READ's record leaves with the RX's status, and its row
    is freed (``free``, for ``RdRows``). ``hold(head)``: the stream of the work request at the
    engine's ``s_wr`` FIFO head has :data:`CQ_DEPTH` work requests taken and not yet dequeued."""

    def __init__(self, conns, streams, rd_slots, cqe_lay, rx_cqe_lay, rd_lay, wr_lay, *,
                 depth=CQ_DEPTH, rd_ops=CQ_RD_OPS):
        assert streams & (streams - 1) == 0 and rd_slots & (rd_slots - 1) == 0
        self.conns, self.streams, self.slots, self.depth = conns, streams, rd_slots, depth
        self.cqe_lay, self.rx_lay, self.rd_lay, self.wr_lay = cqe_lay, rx_cqe_lay, rd_lay, wr_lay
        self.rd_ops = tuple(rd_ops)
        self.nq = conns * streams
        self.q = [SyncFifoModel(depth) for _ in range(self.nq)]         # (record, own, wait, row)
        self.order = [SyncFifoModel(rd_slots) for _ in range(self.nq)]  # READ rows in posting order
        self.count = [0] * self.nq
        self.rows = [None] * (self.nq * rd_slots)       # [msg, rx_in, rx_status] of a pending READ
        self.rr = 0
        self.out = (0, 0)
        self.free = None                # the row freed by the last step
        self.unmatched = 0              # RX records matching no pending READ (dropped, counted)
        self.joined = self.holds = self.level_max = 0

    def qi(self, conn, stream):
        return conn * self.streams + (stream & (self.streams - 1))

    def busy(self):
        return bool(self.out[0] or any(q.level for q in self.q))

    def hold(self, wr_head):
        """``s_wr`` held: the head's stream at its bound (on state only)."""
        f = unpack(self.wr_lay, wr_head)
        return int(self.count[self.qi(f["conn"], f["stream"])] >= self.depth)

    def outputs(self):
        return self.out

    def _may_leave(self, k):
        q = self.q[k]
        if not q.level:
            return False
        _, _, wait, row = q.head
        return not wait or self.rows[k * self.slots + row][1] == 1

    def step(self, wr_take, wr_head, rd_take, rd, tx_valid, tx_rec, rx_valid, rx_rec, out_ready):
        """One clock: the work request taken by the TX half (its packed ``s_wr`` payload), the
        READ taken on ``m_rd``, the TX half's and the RX's records (always taken) and the host's
        ``m_tx_cqe.ready``."""
        pops, pushes = [False] * self.nq, [None] * self.nq
        self.free = None
        # the RX's record of a pending READ (on the state before the edge)
        rx_hit = None
        if rx_valid:
            c = unpack(self.rx_lay, rx_rec)
            i = self.qi(c["conn"], c["stream"]) * self.slots + (c["msg"] & (self.slots - 1))
            row = self.rows[i] if c["stream"] < self.streams and c["conn"] < self.conns else None
            if row is not None and row[0] == c["msg"]:
                rx_hit = (i, c["status"])
            else:
                self.unmatched = (self.unmatched + 1) & 0xFFFFFFFF
        # the output register
        if not self.out[0] or out_ready:
            order = [j % self.nq for j in range(self.rr, self.rr + self.nq)]     # round robin
            k = next((j for j in order if self._may_leave(j)), None)
            if k is None:
                self.out = (0, self.out[1])
            else:
                rec, own, wait, row = self.q[k].head
                if own:
                    i = k * self.slots + row
                    if wait:
                        rec = pack(self.cqe_lay, {**unpack(self.cqe_lay, rec), "status": self.rows[i][2]})
                        self.joined += 1
                    self.free = i
                self.out = (1, rec)
                self.rr = (k + 1) % self.nq
                self.count[k] -= 1
                pops[k] = True
        # the TX half's record into its stream's queue; a READ's takes its row
        order_pop = [False] * self.nq
        if tx_valid:
            r = unpack(self.cqe_lay, tx_rec)
            k = self.qi(r["conn"], r["stream"])
            own = r["op"] in self.rd_ops and r["status"] not in CQ_REFUSED and self.order[k].level > 0
            row = self.order[k].head if own else 0
            pushes[k] = (tx_rec, int(own), int(own and r["status"] == 0), row)
            order_pop[k] = own
        order_push = [None] * self.nq
        if rd_take:
            r = unpack(self.rd_lay, rd)
            k = self.qi(r["conn"], r["stream"])
            row = r["msg"] & (self.slots - 1)
            order_push[k] = row
            self.rows[k * self.slots + row] = [r["msg"], 0, 0]
        if rx_hit is not None:
            self.rows[rx_hit[0]][1:] = [1, rx_hit[1]]
        if self.free is not None:
            self.rows[self.free] = None
        if wr_take:
            f = unpack(self.wr_lay, wr_head)
            self.count[self.qi(f["conn"], f["stream"])] += 1
        for k in range(self.nq):
            self.q[k].update(pops[k], pushes[k] is not None, pushes[k])
            self.order[k].update(order_pop[k], order_push[k] is not None, order_push[k] or 0)
            self.level_max = max(self.level_max, self.q[k].level)
            assert self.count[k] <= self.depth and self.q[k].level <= self.count[k]


class AckOutModel:
    """MR-ENG-133: the RX engine's ACK/NAK requests into frame descriptors, no queue (the
    descriptor is combinational, straight into the ACK frame builder); the template rows written
    by ``s_cfg`` (seen from the next cycle)."""

    def __init__(self, conns, ack_layout, cfg_layout):
        self.lay, self.cfg_lay = ack_layout, cfg_layout
        self.tmpl = [unpack(cfg_layout, 0) for _ in range(conns)]

    def desc(self, rec, hint=0):
        """The packed descriptor of the packed request ``rec`` (this cycle's template rows;
        ``hint`` the engine's ``ack_hint_mbps``, MR-ENG-312)."""
        r = unpack(self.lay, rec)
        return pack_desc(ack_desc(r, self.tmpl[r["conn"]], hint))

    def step(self, cfg_valid, cfg):
        if cfg_valid:
            c = unpack(self.cfg_lay, cfg)
            self.tmpl[c["conn"]] = c


#: MR-ENG-135: the TX half's ports the engine names otherwise
ENGINE_TX_NAMES = {"m_axi": "m_axi_rd", "m_cqe": "m_tx_cqe"}
#: MR-ENG-105, MR-ENG-135: the halves' ports joined inside the engine
_RX_INTERNAL = ("m_ack__", "m_peer_ack__", "tx_reg_", "m_rsp__", "eng_reg_", "s_cfg_eng__", "m_pace__",
                "pace_", "cfg_tap", "m_seen__", "hint_", "cc_")
# MR-ENG-140: the TX half's READ responses are fed by the receive half, their records counted;
# MR-ENG-259: its pacer's writes and configuration from the register block
_TX_INTERNAL = ("s_ack__", "s_ack_desc__", "reg_addr", "reg_data", "s_rsp__", "m_rsp_done__", "m_rd__",
                "s_pace_write__", "mtu_wl", "line_mbps", "s_psn__", "psn_ignored")


def _tx_name(n):
    """The engine's name of a TX-half port (Verilog name ``port__member`` or ``port``)."""
    head, sep, tail = n.partition("__")
    return ENGINE_TX_NAMES.get(head, head) + sep + tail


class EngineModel:
    """MR-ENG-130..136: the whole engine, cycle by cycle on every port of ``hdl.engine.Engine``;
    ``pacing`` (MR-ENG-258/259) and ``rows`` (MR-ENG-291) as the RTL's."""

    def __init__(self, width=64, conns=2, paths=4, keys=256, *, rx_streams=RX_SMALL["streams"], max_frame=9216,
                 outstanding=32, cq_join=True, max_rd_atomic=records.RD_ATOMIC, pacing=False,
                 ack_first=True, rows=False, interval=None, hints=False, hint_wrong=None, rx_hint=False,
                 rx_hint_wrong=None, rx_hint_form=None, **tx_kw):
        from .tx import TxCycleModel
        kw = engine_tx_params(tx_kw)
        # MR-ENG-311: the rate hints end to end, as Engine's
        self.hints, self.hint_wrong = check_engine_hint_options(hints, hint_wrong, pacing=pacing, rows=rows)
        # MR-ENG-338..340: the receiver computes its hint, the configuration in the hint window
        self.rx_hint = check_rx_hint_options(self.hints, rx_hint, rx_hint_wrong, rx_hint_form)
        if self.hints:
            kw.update(hints=True, control=True)
        self.width = width
        # MR-ENG-299/300: the frame interval, as Engine's
        self.interval = records.interval_of(width, interval)
        # MR-ENG-291: the TX half's row scheduler (TxCycleModel(rows=True, rd_rows=True))
        self.rows = bool(rows)
        # MR-ENG-258: the TX half paced (TxCycleModel(pacing=True)), its pacer set through s_axil
        self.pacing = bool(pacing)
        # MR-ENG-239: the responder resources at the RX (None: unbounded, no frees, as before)
        self.max_rd_atomic = max_rd_atomic
        self.rx = EngineRxModel(width, conns, paths, keys, streams=rx_streams,
                                chunk_ring=kw["chunk_window"], max_frame=max_frame,
                                outstanding=outstanding, peer_acks=True, tx_counters=True,
                                responses=True, rd_rows=True, atomics=True, max_rd_atomic=max_rd_atomic,
                                pacing=self.pacing, cfg_sack=ENGINE_CFG_SACK, interval=self.interval,
                                hint_regs=self.rx_hint)
        # MR-ENG-361: the form Engine's RxHint takes (by the connections unless given)
        self.hint_block = rx_hint_model(conns, rx_hint_wrong, rx_hint_form) if self.rx_hint else None
        self.seen_log = []          # MR-ENG-342: (now, conn, ce, more) of every arrival counted
        streams = kw.pop("streams")
        # MR-ENG-282: the ACK descriptors into the TX half's one frame builder (``ack_first``
        # False: after the data descriptors, MR-ENG-286's negative control only)
        # MR-TXS-417, MR-TX-455: the TX half's interval (its scheduler's and retransmit unit's);
        # 1 with pacing or the row scheduler, which do not take one
        tx_interval = 1 if self.pacing or self.rows or self.hints else self.interval     # MR-ENG-311
        # MR-TXS-444: above interval 1 the scheduler's output queues show their memory's head
        # only (MR-TXS-419), unless ``mem_head=False`` is given
        kw.setdefault("mem_head", tx_interval > 1)
        self.tx = TxCycleModel(width, conns, streams, paths, kw.pop("depth"), rd_rows=True,
                               pacing=self.pacing, ack_desc=True, ack_first=ack_first,
                               rows=self.rows, interval=tx_interval, **kw)
        lay = self.tx.lay
        self.ack_in = AckInModel(conns, lay.rtx.ack, hints=self.hints, hint_wrong=self.hint_wrong)
        # MR-ENG-240/241: the TX half's m_rsp_done records also free the RX's resources
        self.rsp = (RspJoinModel(lay.sched.rsp_done, cfg_lay=self.rx.lay.cfg,
                                 free_depth=rsp_free_depth(conns, max_rd_atomic))
                    if max_rd_atomic is not None else RspJoinModel(lay.sched.rsp_done))
        # MR-ENG-148: the outstanding-read rows written by the engine
        self.rd = RdRowsModel(conns, streams, self.rx.lay, lay.sched.rd, self.rx.lay.cqe, lay.sched.cqe,
                              join=cq_join)
        # MR-ENG-196..: one host completion per work request (the READs' joined with the RX's)
        self.cq_join = cq_join
        self.cq = (CqJoinModel(conns, streams, self.rx.lay.rd_slots, lay.sched.cqe, self.rx.lay.cqe,
                               lay.sched.rd, lay.sched.wr) if cq_join else None)
        self.wr_q = _AckFifo(WR_FIFO_DEPTH)     # MR-ENG-155
        self.wr_op_at = _field_offset(lay.sched.wr, "op")
        self.ack_out = AckOutModel(conns, self.rx.lay.ack, lay.cfg)
        # MR-ENG-302..305: the host's table 9 rows to the TX half's s_psn, its ignored writes counted
        self.psn = PsnInitModel(conns, paths, self.rx.lay.cfg, lay.sched.psn)
        self.lay = lay

    def open_offer(self):
        """MR-ENG-253: the engine's offer at a connection's open, from this build."""
        return engine_offer(self.max_rd_atomic, self.rx.lay.msg_slots)

    @property
    def init_rd_atomic(self):
        """MR-ENG-256: this build's initiator depth (RdRows' rows of a connection)."""
        return engine_init_rd_atomic(self.rd.streams, self.rd.slots)

    def check_peer(self, offer):
        """MR-ENG-274: :func:`engine_peer_check` of this build against a peer's offer (the
        connection's agreed initiator depth)."""
        return engine_peer_check(offer, self.rd.streams, self.rd.slots)

    def port_names(self):
        rx = self.rx.port_names()
        tx = self.tx.port_names()
        ins = [n for n in rx["inputs"] if not n.startswith(_RX_INTERNAL)]
        outs = [n for n in rx["outputs"] if not n.startswith(_RX_INTERNAL)]
        ins += [_tx_name(n) for n in tx["inputs"] if not n.startswith(_TX_INTERNAL)]
        outs += [_tx_name(n) for n in tx["outputs"] if not n.startswith(_TX_INTERNAL)]
        if self.rx_hint:
            # MR-ENG-340: the windows' configuration from the hint window, no ack_hint_mbps
            ins = [n for n in ins if n not in HINT_REG_OF]
        elif self.hints:
            ins.append("ack_hint_mbps")         # MR-ENG-312
        return {"inputs": ins, "outputs": outs}

    def busy(self):
        return (self.rx.busy() or self.tx.busy() or self.ack_in.busy()
                or self.rsp.busy() or self.rd.busy_any() or self.wr_q.busy()
                or (self.cq_join and self.cq.busy()))

    def active(self):
        """Work in flight, not counting the retransmit unit's running timers."""
        return (self.rx.busy() or self.tx.active() or self.ack_in.busy()
                or self.rsp.busy() or self.rd.busy_any() or self.wr_q.busy()
                or (self.cq_join and self.cq.busy()))

    def _rx_cqe_to_join(self):
        """MR-ENG-197: the RX's ``m_cqe`` head is a requester record (the join's, not the
        host's): on the RX's state (its completion queue's head bundle and record index)."""
        rx = self.rx.rx
        if not rx.cqe_q.level:
            return False
        word, _ = bundle_entry(rx.lay, rx.cqe_q.head, rx.cqe_sel)
        return unpack(rx.lay.cqe, word)["opcode"] in CQ_RX_OPCODES

    def step(self, inputs):
        g = inputs.get
        # MR-ENG-283: the RX engine's ACK request (its queue's head, state) through AckOut's
        # descriptor (the template rows before this cycle's s_cfg write) into the TX half
        aq = self.rx.rx.ack_q
        ack_valid, ack_head = int(aq.level > 0), aq.head
        hb = self.hint_block
        # MR-ENG-312, MR-ENG-340: the host's hint, or the receiver's own (a register)
        hint_now = hb.hint if hb is not None else g("ack_hint_mbps", 0) if self.hints else 0
        ack_d = self.ack_out.desc(ack_head, hint_now) if ack_valid else 0
        in_valid, in_head = self.ack_in.out()
        rsp_valid, rsp_head = self.rsp.out()
        ro = self.rx.regs.outputs()
        # the TX half first (MR-ENG-136): its inputs are state only (AckIn's and RspJoin's
        # heads, the RX engine's ACK request, the register block's counter select), and its counter
        # value is the register block's input
        tx_in = {n: g(_tx_name(n), 0) for n in self.tx.port_names()["inputs"]}
        if hb is not None:
            # MR-ENG-340: the windows' configuration from the hint window's registers
            tx_in.update({n: ro[n] for n in HINT_REG_OF if n in tx_in})
        tx_in.update({"s_ack__valid": in_valid, "s_ack__payload": in_head,
                      "s_ack_desc__valid": ack_valid, "s_ack_desc__payload": ack_d,
                      "reg_addr": ro["tx_reg_addr"],
                      "s_rsp__valid": rsp_valid, "s_rsp__payload": rsp_head, "m_rsp_done__ready": 1})
        # MR-ENG-303: the initial-PSN write of the table 9 record taken the cycle before (registers)
        psn_valid, psn_rec, psn_reg = self.psn.out()
        tx_in.update({"s_psn__valid": psn_valid, "s_psn__payload": psn_rec})
        if self.pacing:
            # MR-ENG-259: the pacing window's write and configuration (registers, MR-REG-065)
            tx_in.update({"s_pace_write__valid": ro["m_pace__valid"],
                          "s_pace_write__payload": ro["m_pace__payload"],
                          "mtu_wl": ro["pace_mtu_wl"], "line_mbps": ro["pace_line_mbps"]})
        # MR-ENG-150: the READ's row ready, on s_wr's READ (its message number from the
        # scheduler's registers) and RdRows' state
        wr_valid, wr_head = self.wr_q.out()
        wr_in_ready = self.wr_q.in_ready()
        # MR-ENG-199: the work request waits in the FIFO while its stream is at the join's bound
        if self.cq_join and wr_valid and self.cq.hold(wr_head):
            wr_valid = 0
            self.cq.holds += 1
        tx_in.update({"s_wr__valid": wr_valid, "s_wr__payload": wr_head})
        rd_ready = self.rd.ready(self.tx.sched.rd_request(wr_head))
        tx_in["m_rd__ready"] = rd_ready
        rx_cqe_ready = g("m_cqe__ready", 0)
        if self.cq_join:
            # MR-ENG-197: the TX half's records all to the join; the RX's requester records too
            tx_in["m_cqe__ready"] = 1
            cq_out = self.cq.outputs()
            to_join = self._rx_cqe_to_join()
            rx_cqe_ready = 1 if to_join else rx_cqe_ready
        tx_out = self.tx.step(tx_in)
        cfg_valid, cfg_pay = self.rd.out()
        # MR-ENG-242: RdRows' row write first, then the queue's head free (both of state)
        free_valid, free_pay = self.rsp.free_out()
        free_first = bool(free_valid and not cfg_valid)
        if free_first:
            cfg_valid, cfg_pay = free_valid, free_pay
        rx_out = self.rx.step({**inputs, "m_peer_ack__ready": self.ack_in.in_ready(),
                               "m_ack__ready": tx_out["s_ack_desc__ready"],
                               "tx_reg_data": tx_out["reg_data"],
                               "m_rsp__ready": self.rsp.in_ready(),
                               "eng_reg_data": self.rsp.reg_data | psn_reg,      # MR-ENG-305
                               "s_cfg_eng__valid": cfg_valid, "s_cfg_eng__payload": cfg_pay,
                               "m_cqe__ready": rx_cqe_ready,
                               "m_pace__ready": tx_out.get("s_pace_write__ready", 0)})
        wr_take = wr_valid and tx_out["s_wr__ready"]
        self.wr_q.q.update(wr_take, g("s_wr__valid", 0) and wr_in_ready, g("s_wr__payload", 0))
        rd_take = tx_out["m_rd__valid"] and rd_ready
        if self.cq_join:
            self.cq.step(wr_take, wr_head, rd_take, tx_out["m_rd__payload"],
                         tx_out["m_cqe__valid"], tx_out["m_cqe__payload"],
                         rx_out["m_cqe__valid"] and to_join, rx_out["m_cqe__payload"],
                         g("m_tx_cqe__ready", 0))
        self.rd.step(tx_out["m_rd__valid"], tx_out["m_rd__payload"], rd_ready,
                     rx_out["s_cfg_eng__ready"] and not free_first,
                     rx_out["m_cqe__valid"] and g("m_cqe__ready", 0), rx_out["m_cqe__payload"],
                     tx_out["m_cqe__valid"] and g("m_tx_cqe__ready", 0), tx_out["m_cqe__payload"],
                     (wr_head >> self.wr_op_at) & 7,       # MR-ENG-168: s_wr's op
                     free=self.cq.free if self.cq_join else None,
                     tap_take=rx_out["cfg_tap_take"], tap=rx_out["cfg_tap"])     # MR-ENG-272
        self.ack_in.step(rx_out["m_peer_ack__valid"], rx_out["m_peer_ack__payload"],
                         tx_out["s_ack__ready"])
        self.psn.step(rx_out["cfg_tap_take"], rx_out["cfg_tap"], tx_out["psn_ignored"], ro["eng_reg_addr"],
                      tx_out["s_psn__ready"])
        self.rsp.step(rx_out["m_rsp__valid"], rx_out["m_rsp__payload"], tx_out["s_rsp__ready"],
                      tx_out["m_rsp_done__valid"], tx_out["m_rsp_done__payload"], ro["eng_reg_addr"],
                      free_ready=free_first and rx_out["s_cfg_eng__ready"])
        assert rx_out["m_ack__valid"] == ack_valid and rx_out["m_ack__payload"] == ack_head
        if hb is not None:
            # MR-ENG-338/339: the arrival the RX took, the engine's clock, the window's configuration
            sv = rx_out["m_seen__valid"]
            rec = unpack(seen_layout(hb.conns), rx_out["m_seen__payload"])
            if sv:
                self.seen_log.append((g("now", 0), rec["conn"], rec["ce"], rec["more"]))
            hb.step(sv, rec["conn"], rec["ce"], rec["more"], g("now", 0), ro["hint_line_mbps"],
                    ro["hint_share_ns"], ro["hint_mtu"])
        self.ack_out.step(g("s_cfg__valid", 0), g("s_cfg__payload", 0))
        out = {n: v for n, v in rx_out.items() if not n.startswith(_RX_INTERNAL)}
        out.update({_tx_name(n): v for n, v in tx_out.items() if not n.startswith(_TX_INTERNAL)})
        out["s_wr__ready"] = wr_in_ready
        if self.cq_join:
            # MR-ENG-197: the host's work completions from the join; m_cqe the receive records
            out["m_tx_cqe__valid"], out["m_tx_cqe__payload"] = cq_out
            out["m_cqe__valid"] = int(bool(rx_out["m_cqe__valid"]) and not to_join)
        return out


#: MR-ENG-138: the port prefixes of the two engines of the pair build (``h0`` and ``h1``).
PAIR_PREFIXES = ("h0__", "h1__")


class PairPorts:
    """MR-ENG-138: one engine's ports (``names``) under each host's prefix of the pair build
    (:data:`PAIR_PREFIXES`): ``split`` a pair's dict into the two engines' (a name absent counts
    0), ``join`` the two engines' dicts into the pair's. The one mapping of the pair's names, for
    :class:`EnginePairModel` and the drivers (``models/cosim_engine.py``)."""

    def __init__(self, names):
        self.names = [[(p + n, n) for n in names] for p in PAIR_PREFIXES]

    def split(self, d):
        g = d.get
        return [{n: g(pn, 0) for pn, n in ns} for ns in self.names]

    def split_full(self, d):
        """``split`` of a dict that holds every name (an output dict): no default looked up."""
        return [{n: d[pn] for pn, n in ns} for ns in self.names]

    def join(self, parts):
        out = {}
        for ns, part in zip(self.names, parts):
            g = part.get
            out.update({pn: g(n, 0) for pn, n in ns})
        return out

    @classmethod
    def of_engine(cls, width=64, **kw):
        """``(inputs, outputs)``: the :class:`PairPorts` of ``EngineModel(width, **kw)``'s ports."""
        names = EngineModel(width, **kw).port_names()
        return cls(names["inputs"]), cls(names["outputs"])


class EnginePairModel:
    """MR-ENG-138: two :class:`EngineModel` side by side, every port of each prefixed with its
    host (:data:`PAIR_PREFIXES`): the model of the Verilator pair build (``tb/build.py``
    ``pair_build``: two ``engine`` instances under one top, nothing shared but the clock and
    reset)."""

    def __init__(self, width=64, **kw):
        self.engines = tuple(EngineModel(width, **kw) for _ in PAIR_PREFIXES)
        names = self.engines[0].port_names()
        self.ports_in, self.ports_out = PairPorts(names["inputs"]), PairPorts(names["outputs"])

    def port_names(self):
        return {"inputs": [pn for ns in self.ports_in.names for pn, _ in ns],
                "outputs": [pn for ns in self.ports_out.names for pn, _ in ns]}

    def step(self, inputs):
        return self.ports_out.join([e.step(i) for e, i in zip(self.engines, self.ports_in.split(inputs))])

    def busy(self):
        return any(e.busy() for e in self.engines)

    def active(self):
        return any(e.active() for e in self.engines)


#: MR-ENG-130: the whole engine's chunk window (its TX half's ``chunk_window``, its RX engine's
#: chunk ring): 32 chunks, 32 KiB a message at MTU 1,024, not the TX block's 16: at 10 Gb/s and
#: a 10 us base RTT 16 KiB is about the bandwidth-delay product, so a lost packet stalled its
#: message (docs/hw/engine-results.md: the reference endpoints 0.850 -> 0.966 at 16 MiB in
#: MR-ENG-123's ``writes``).
ENGINE_CHUNK_WINDOW = 32

#: MR-ENG-130: the whole engine's initial RTO (the TX half's ``rto_ns``, a path's RTO before its
#: first RTT sample, MR-TX-054): 160 us, not the TX block's 40 us (docs/hw/engine-results.md).
ENGINE_RTO_NS = 160_000


#: MR-ENG-288: the whole engine's RX takes no SACK from a path row's configuration write (hw-rx.md
#: MR-RX-240: the write clears the row's SACK ring), so the RX builds no rotator for it: the
#: engine's path rows are written when a connection is set up or reopened, with no SACK state
#: to restore (docs/hw/fpga-build.md "fit32").
ENGINE_CFG_SACK = False

#: MR-ENG-289: the whole engine's TX ring depth (the scheduler's ``depth``, messages a stream
#: posted and not completed, hw-tx-sched.md MR-TXS-012): 2, not the TX block's 4. A peer engine's
#: RX holds 2 message slots a stream (MR-ENG-157/253), so a third message of a stream started
#: before the first completes is refused there (MR-ENG-280); the scheduler's per-entry state in
#: registers halves (docs/hw/fpga-build.md "fit32").
ENGINE_TX_DEPTH = 2

#: MR-ENG-130: the whole engine's fixed windows (the TX half's ``cwnd`` a path and
#: ``conn_window``): 6,250 bytes a path, 25,000 a connection, about twice the bandwidth-delay
#: product of 10 Gb/s at MR-ENG-123's 10 us base RTT, not the TX block's 12,500 and 50,000: the
#: MAC is the bottleneck, so every byte a window allows beyond what the link and the fabric
#: hold waits inside the TX half, committed to its path, and a resend found by an ACK left
#: about 20 us after it (docs/hw/engine-results.md).
ENGINE_CWND = 6_250
ENGINE_CONN_WINDOW = 25_000


def engine_tx_params(tx_kw):
    """MR-ENG-130: the TX half's parameters besides ``conns`` and ``paths``: ``models.tx.SMALL``'s,
    ``rto_ns`` :data:`ENGINE_RTO_NS`, ``chunk_window`` :data:`ENGINE_CHUNK_WINDOW`, ``cwnd``
    :data:`ENGINE_CWND`, ``conn_window`` :data:`ENGINE_CONN_WINDOW`, ``depth`` :data:`ENGINE_TX_DEPTH`
    (MR-ENG-289), then ``tx_kw``."""
    from .tx import SMALL
    kw = {k: v for k, v in SMALL.items() if k not in ("conns", "paths")}
    kw["rto_ns"] = ENGINE_RTO_NS
    kw["chunk_window"] = ENGINE_CHUNK_WINDOW
    kw["cwnd"] = ENGINE_CWND
    kw["conn_window"] = ENGINE_CONN_WINDOW
    kw["depth"] = ENGINE_TX_DEPTH
    kw.update(tx_kw)
    return kw


def engine_layouts(conns=2, paths=4, hints=False, **tx_kw):
    """The TX half's layouts of ``Engine(conns=conns, paths=paths, hints=hints, **tx_kw)``
    (``models.tx.layouts``)."""
    from .tx import layouts
    kw = engine_tx_params(tx_kw)
    return layouts(conns, kw["streams"], paths, kw["depth"], kw["pool"], hints=hints)


def engine_model_small(width=64):
    """The model of ``hdl.engine.engine_small`` (MR-ENG-130)."""
    return EngineModel(width)


def engine_model_hints_small(width=64):
    """MR-ENG-311: the model of ``hdl.engine.engine_hints_small``."""
    return EngineModel(width, hints=True)


def engine_model_rx_hint_small(width=64):
    """MR-ENG-340: the model of ``hdl.engine.engine_rx_hint_small``."""
    return EngineModel(width, hints=True, rx_hint=True)


def engine_model_rows_small(width=64):
    """The model of ``hdl.engine.engine_rows_small`` (MR-ENG-295)."""
    return EngineModel(width, rows=True)
