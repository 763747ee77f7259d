"""``metaroce cosim [SCENARIO]``: the engine's RTL in a closed loop with a model peer over the
model fabric (docs/spec/hw-engine.md, MR-ENG-120..124).

Today's engine is the receive half (``engine_rx_256x4``): a model sender endpoint (``--peer
model``, the default) writes ``--bytes`` through the fabric (``--loss`` on the link into the
engine, the scenario's multipath, reordering, duplication, ECN) into the RTL under Verilator,
whose ACK/NAK records go back as frames to the sender (:mod:`metaroce.models.cosim`). ``--peer
rtl`` (an RTL sender) needs the engine's TX half, which is not built yet: one line, exit 2.

``--json`` prints one object: ``ok``, ``sha256_match``, ``bytes``, ``goodput_vs_limit``,
``cycles``, ``mismatches`` (RTL/model lockstep mismatches with ``--lockstep``; null without,
where the cycle model does not run), then the details (fabric, sender, engine counters, the
configuration). Exit 1 when the run is not ``ok``.
"""
import json
import sys
import tempfile
from pathlib import Path

HELP = "closed-loop co-simulation: the engine's RTL with a model peer over the fabric simulator"

BLOCK = "engine_rx_256x4"

__all__ = ["run_rtl"]


def add_arguments(p):
    from metaroce.models.cosim import SCENARIOS
    p.add_argument("scenario", nargs="?", default="writes", choices=sorted(SCENARIOS),
                   metavar="SCENARIO",
                   help=("; ".join(f"{k}: {v[1]}" for k, v in SCENARIOS.items())
                         + " (default writes)").replace("%", "%%"))
    p.add_argument("--json", action="store_true", help="print the result as one JSON object")
    p.add_argument("--loss", type=float, default=0.01,
                   help="loss probability of data frames on the link into the engine (default 0.01)")
    p.add_argument("--bytes", type=int, default=256 * 1024, dest="nbytes",
                   help="bytes the sender writes (default 262144)")
    p.add_argument("--peer", choices=("model", "rtl"), default="model",
                   help="the sender: the model endpoint (default) or the RTL TX engine")
    p.add_argument("--width", type=int, default=64, choices=(64, 512),
                   help="datapath bits (default 64: the 10 Gb/s link at 156.25 MHz; 512: 80 Gb/s)")
    p.add_argument("--ack-every", type=int, default=1, dest="ack_every",
                   help="the engine's ACK policy: an ACK every N accepted packets of a path "
                        "(default 1: the receive half has no delayed-ACK timer, MR-ENG-123)")
    p.add_argument("--seed", type=int, default=1, help="seed of the fabric, data and layout (default 1)")
    p.add_argument("--lockstep", action="store_true",
                   help="run the engine's cycle model alongside and compare every output every "
                        "cycle (about ten times slower)")
    p.add_argument("--engine", choices=("rtl", "model"), default="rtl",
                   help="the receiver: the RTL under Verilator (default) or its cycle model alone")


def run_rtl(cfg, *, lockstep=False, log_dir=None):
    """One closed-loop run of the RTL (``tb/cosim.py``) on the cached Verilator build of the
    small instance at ``cfg.width``; returns the result dict (raises RuntimeError with the
    log's path when the simulation wrote none)."""
    from dataclasses import asdict

    from metaroce import blocks
    from metaroce.sim import verilator as vl
    from metaroce.tb import build as tb_build
    b = tb_build.build(blocks.get(BLOCK), cfg.width)
    raw = asdict(cfg)
    raw.pop("width")
    with tempfile.TemporaryDirectory(dir=log_dir or blocks.scratch_dir(), prefix="cosim-") as tmp:
        out = Path(tmp) / "result.json"
        log = Path(tmp) / "sim.log"
        env = {"COSIM_CONFIG": json.dumps(raw), "COSIM_OUT": str(out),
               "COSIM_LOCKSTEP": "1" if lockstep else "0"}
        vl.run(b, "metaroce.tb.cosim", extra_env=env, run_dir=Path(tmp) / "run", log_file=log,
               check=False)
        if not out.is_file():
            keep = blocks.scratch_dir() / "last-cosim-sim.log"
            try:
                keep.write_bytes(log.read_bytes())
            except OSError:
                keep = log
            lines = [ln for ln in log.read_text(errors="replace").splitlines() if "Error" in ln
                     or "assert" in ln.lower()] if log.is_file() else []
            why = lines[0].strip() if lines else "no results"
            raise RuntimeError(f"the simulation failed: {why[:300]} (log: {keep})")
        return json.loads(out.read_text())


def run(args):
    from metaroce.cli import CliError
    from metaroce.models import cosim
    if args.peer == "rtl":
        raise CliError("--peer rtl needs the engine's TX half, which is not built yet "
                       "(only the receive half, EngineRx, exists): use --peer model")
    if not 0 <= args.loss < 1:
        raise CliError("--loss must be in [0, 1)")
    if args.nbytes < 6 or args.nbytes > (1 << 30):
        raise CliError("--bytes must be in 6..1073741824")
    if args.seed < 0:
        raise CliError("--seed must be >= 0")
    if not 1 <= args.ack_every <= 15:
        raise CliError("--ack-every must be in 1..15")
    over, _ = cosim.SCENARIOS[args.scenario]
    cfg = cosim.Config(**{**over, "width": args.width, "nbytes": args.nbytes, "loss": args.loss,
                          "seed": args.seed, "ack_every": args.ack_every})
    cfg.validate()
    if args.engine == "model":
        if args.lockstep:
            raise CliError("--lockstep compares the RTL with the model: not with --engine model")
        res = cosim.run_model(cfg)
        res.update({"lockstep": False, "mismatches": None})
    else:
        if sys.stderr.isatty():
            print(f"metaroce cosim: Verilator build of {BLOCK} at {args.width} bits (cached after "
                  "the first, which takes minutes), then the closed loop", file=sys.stderr)
        from metaroce.sim import verilator as vl
        try:
            res = run_rtl(cfg, lockstep=args.lockstep)
        except vl.ToolchainError as e:
            raise CliError(str(e).splitlines()[0]) from None
        except RuntimeError as e:
            raise CliError(str(e)) from None
    ref = cosim.run_reference(cfg, timer=True, hints=False)
    res["reference"] = {"goodput_vs_limit": ref["goodput_vs_limit"], "ok": ref["ok"],
                        "what": "the same sender and fabric, a reference Endpoint receiving "
                                "(its delayed-ACK timer as the engine's, MR-RX-090; rate-hint "
                                "pushes off, as the RX engine)"}
    res = {"scenario": args.scenario, "peer": args.peer, "receiver": args.engine, **res}
    head = ["ok", "sha256_match", "bytes", "goodput_vs_limit", "cycles", "mismatches"]
    res = {**{k: res[k] for k in head}, **{k: v for k, v in res.items() if k not in head}}
    if args.json:
        print(json.dumps(res))
    else:
        eng = res["engine"]
        print(f"cosim {args.scenario}: {'ok' if res['ok'] else 'FAILED'}: {res['bytes']} bytes, "
              f"sha256 {'match' if res['sha256_match'] else 'MISMATCH'}, "
              f"WRs {'all completed' if res['wrs_completed_ok'] else 'NOT all completed'}")
        print(f"  goodput {res['goodput_gbps']:.3f} Gb/s = {res['goodput_vs_limit']:.3f} of the "
              f"payload limit {res['limit_gbps']:.3f} Gb/s ({res['link_gbps']:g} Gb/s link, "
              f"{res['width']} bits at {res['clock_mhz']:g} MHz), {res['cycles']} cycles; "
              f"reference receiver {res['reference']['goodput_vs_limit']:.3f}")
        fb, sd = res["fabric"], res["sender"]
        print(f"  fabric: {fb['lost']} lost, {fb['duplicated']} duplicated, {fb['delayed']} delayed, "
              f"{fb['ce_marked']} CE-marked; sender: {sd['frames']} frames, "
              f"{sd['retransmitted']} retransmitted, {sd['probes']} probes, {sd['timeouts']} timeouts")
        print(f"  engine: {eng['frames_in']} frames, {eng['ack_records']} ACKs, "
              f"{eng['nak_records']} NAKs, {eng['placements']} placements; lockstep mismatches: "
              f"{'not run' if res['mismatches'] is None else res['mismatches']}")
    return 0 if res["ok"] else 1
