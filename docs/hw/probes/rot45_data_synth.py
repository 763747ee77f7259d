"""Area probe, not part of the design (rot45): the TX's data path ``TxData(W)`` (the small
instance's parameters, 2 connections, 16 reads outstanding) and its payload blocks, with
``metaroce synth``'s flow (Amaranth's RTLIL, ``synth_xilinx -family xcup`` resources, which do
not flatten: each block's LUTs are its module's; with ``levels`` also the generic 6-LUT levels
run, MR-FLOW-010). Targets: ``txdata`` (``TxData(W)``: the join, the DMA, the frame builder as
the TX builds them), ``dma`` (``DmaRead(W, conns=2, outstanding=16)`` with ``rotate`` as
``TxData`` builds it at the tree), ``fb`` (``FrameBuilder(W, ipv4_only=True)`` with
``prerotated`` as ``TxData`` builds it). ``--at COMMIT``: the same run on a commit's tree
(``git archive`` into a directory under ``$METAROCE_SYNTH_DIR`` or ``~/.cache``, imported in
place of this tree's ``metaroce``): the before of a before/after table. Prints one JSON object.
Run from the repository root:

    nice -n 5 .venv/bin/python docs/hw/probes/rot45_data_synth.py 512|64 txdata|dma|fb [levels] [--at c20974f] 2>/dev/null"""
import json
import os
import subprocess
import sys
from pathlib import Path


def at_commit(commit, argv):
    """Re-run this probe with ``commit``'s tree as ``metaroce`` (its hdl/, models/, sim/ and
    tb/ linked under its metaroce/ as the editable install maps them)."""
    root = Path(os.environ.get("METAROCE_SYNTH_DIR", Path.home() / ".cache")) / "rot45_trees" / commit
    if not (root / "metaroce").is_dir():
        root.mkdir(parents=True, exist_ok=True)
        tar = subprocess.run(["git", "archive", commit], check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(root)], input=tar, check=True)
        for d in ("hdl", "models", "sim", "tb"):
            (root / "metaroce" / d).symlink_to(f"../{d}")
    env = dict(os.environ, PYTHONPATH=str(root))
    return subprocess.run([sys.executable, __file__, *argv], env=env).returncode


def run(width, target, levels=False):
    from metaroce.hdl import tx as tx_hdl
    from metaroce.hdl.dma_read import DmaRead
    from metaroce.hdl.frame_builder import FrameBuilder
    from metaroce.sim import synth
    from metaroce.sim.verilator import generate_rtlil
    import inspect
    src = inspect.getsource(tx_hdl.TxData)
    rotate, pre = "rotate=True" in src, "prerotated=True" in src
    if target == "txdata":
        design, name = tx_hdl.TxData(width), "tx_data"
    elif target == "dma":
        design, name = DmaRead(width, conns=2, outstanding=16, **({"rotate": True} if rotate else {})), "dma_read"
    else:
        design, name = FrameBuilder(width, ipv4_only=True, **({"prerotated": True} if pre else {})), "frame_builder"
    text = generate_rtlil(design, name, drop_zero_init=True)
    rep = synth.synthesize(text, name, lang="rtlil")
    out = {"width": width, "target": target, "rotate": rotate, "prerotated": pre,
           "luts": rep.luts, "ffs": rep.ffs, "lutram": rep.total.lutram, "brams": rep.brams,
           "seconds": round(rep.seconds), "modules": {k: v.luts for k, v in rep.modules.items()}}
    if levels:
        lv = synth.lut_levels(text, name, lang="rtlil")
        out.update(lut_levels=lv.lut_levels, levels_path=lv.path)
    return out


if __name__ == "__main__":
    args = sys.argv[1:]
    if "--at" in args:
        i = args.index("--at")
        commit = args[i + 1]
        sys.exit(at_commit(commit, args[:i] + args[i + 2:]))
    print(json.dumps(run(int(args[0]), args[1], "levels" in args[2:])))
