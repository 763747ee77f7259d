"""``metaroce verilog BLOCK --width W -o DIR``: write a hardware block's Verilog."""
import sys
from pathlib import Path

HELP = "write the Verilog of a hardware block (e.g. parser) at a data width"


def add_arguments(p):
    p.add_argument("block", help="block name (see metaroce/blocks.py), e.g. parser")
    p.add_argument("--width", type=int, default=512, help="datapath width in bits (default 512)")
    p.add_argument("-o", "--output", default=".", metavar="DIR",
                   help="output directory (created if needed; default: current directory)")
    p.add_argument("--src", action="store_true", help="keep Amaranth source-location attributes")


def block_and_width(args):
    """Resolve ``args.block`` / ``args.width`` or raise a one-line CliError (shared by
    the verilog, synth and replay commands)."""
    from .. import blocks
    from ..cli import CliError
    try:
        blk = blocks.get(args.block)
        blk.check_width(args.width)
    except (KeyError, ValueError) as e:
        raise CliError(str(e).strip("'\"")) from None
    return blk


def _component(blk, width):
    """``blk``'s component at ``width``; a block whose factory cannot be imported is a CLI error."""
    from ..cli import CliError
    try:
        factory = blk.component_factory()
    except (ImportError, AttributeError) as e:
        raise CliError(f"block {blk.name!r} is not available: {e}") from None
    return factory(width)


def make_verilog(blk, width, *, emit_src=False, for_synthesis=False, platform=None):
    """Verilog text of ``blk`` at ``width`` (top module named after the block); with
    ``for_synthesis`` without the all-zero memory initialisers (MR-FLOW-011: not written at
    all, MR-FLOW-046); ``platform``
    is passed to every ``elaborate`` (``metaroce pnr``: :data:`metaroce.sim.pnr.ECP5`)."""
    from metaroce.sim.verilator import generate_verilog
    text = generate_verilog(_component(blk, width), blk.name, emit_src=emit_src, platform=platform,
                            drop_zero_init=for_synthesis)
    if for_synthesis:
        from metaroce.sim.synth import drop_zero_memory_init
        text, _ = drop_zero_memory_init(text)
    return text


def make_rtlil(blk, width, *, platform=None):
    """Amaranth's RTLIL text of ``blk`` at ``width`` for synthesis (MR-FLOW-048: read with
    ``read_rtlil``), without the all-zero memory initialisers (MR-FLOW-046): the design
    :func:`make_verilog` (``for_synthesis``) writes as Verilog."""
    from metaroce.sim.verilator import generate_rtlil
    return generate_rtlil(_component(blk, width), blk.name, platform=platform, drop_zero_init=True)


def run(args):
    from ..cli import CliError
    blk = block_and_width(args)
    text = make_verilog(blk, args.width, emit_src=args.src)
    out_dir = Path(args.output)
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        path = out_dir / f"{blk.name}_w{args.width}.v"
        path.write_text(text)
    except OSError as e:
        raise CliError(f"cannot write to {out_dir}: {e.strerror or e}") from None
    print(path, file=sys.stdout)
    return 0
