"""Area probe, not part of the design (dp44): fb41's TX data path as the engine builds it
(``fb41_txdata_engine_ecp5.py``: ``TxData(64, ack_desc=True)`` at the engine's parameters with
``AckOut`` before ``s_ack_desc``, packed with the ECP5 build's flow), with this tree's
``hdl/tx.py`` (``cur``) or with the form before dp44 (``base``: the join's template read
combinationally at S1's request, MR-TX-463's two lines as before, and the frame builder without
``ipv4_only``, MR-TX-467), by a source replacement of hdl/tx.py. Prints fb41's ``ROW`` line.
Run from the repository root:

    nice -n 5 .venv/bin/python docs/hw/probes/dp44_txdata_engine_ecp5.py OUT cur|base"""
import runpy
import sys
import types
from pathlib import Path

BASE = [("rd = tmpl.read_port(transparent_for=(wr,))", 'rd = tmpl.read_port(domain="comb")'),
        ("m.d.comb += rd.addr.eq(Mux(in_valid & s1_free, inp.conn, fr.conn))",
         "m.d.comb += rd.addr.eq(fr.conn)"),
        ("FrameBuilder(self.width, ipv4_only=True)", "FrameBuilder(self.width)")]

if __name__ == "__main__":
    out, form = sys.argv[1], sys.argv[2]
    if form == "base":
        import importlib.util
        spec = importlib.util.find_spec("metaroce.hdl.tx")
        src = Path(spec.origin).read_text()
        for old, new in BASE:
            assert src.count(old) == 1, old
            src = src.replace(old, new)
        mod = types.ModuleType("metaroce.hdl.tx")
        mod.__package__ = "metaroce.hdl"
        exec(compile(src, spec.origin, "exec", dont_inherit=True), mod.__dict__)
        sys.modules["metaroce.hdl.tx"] = mod
    sys.argv = [sys.argv[0], out]
    runpy.run_path(str(Path(__file__).with_name("fb41_txdata_engine_ecp5.py")), run_name="__main__")
