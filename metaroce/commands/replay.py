"""``metaroce replay BLOCK FILE.pcap``: run a capture through a block's RTL under Verilator
in lockstep with its cycle model (issue 4, item 6).

The simulation runs in a subprocess (the cocotb runner); the pcap path and options go to
the cocotb test (``<block>_replay`` in the block's testbench module) through environment
variables, and its results come back as a JSON file.  With ``--json``: one object per
frame, named as ``metaroce decode --json`` (MR-WIRE-110) plus ``drop`` (null, or the
reason label the RTL gave) and ``bypass`` (true when the RTL sent it out on the bypass
stream), then one summary object (``"summary": true``) with ``frames``, ``accepted``,
``bypassed``, ``dropped`` (per reason), ``mismatches`` (cycles where RTL and model
differed), ``problems`` (frames whose outcome or fields disagree with the codec),
``cycles``, ``beats_per_cycle``.  Exit status 1 when there are mismatches or problems.

``metaroce replay rx|rx_256x4 FILE.pcap`` (MR-RX-072): the frames go through the parser's
golden model (its metadata records and payload beats) into the RX engine's RTL, in lockstep
with its model.  The engine is configured before the first frame: connections, keys, MTU
and ``ack_every`` from ``--config FILE.json`` where it names them, the rest learned from the
capture (every destination QP a connection with the P_Key of its first write, its paths and
streams as seen and each path's lowest PSN as the initial one; every R_Key a key at base 0
covering the 32-bit range with every right; the MTU the largest payload rounded up to a power
of two; ``ack_every`` 4); ``--write-config`` saves the configuration used.  With ``--json``:
one object per frame (``metaroce decode --json``'s, plus ``rx``: the RX outcome, ``bypassed``
when the parser sends the frame to its bypass, ``ack``/``place``: the ACK or NAK request and
the placement command it makes), then a summary.
"""
import json
import shutil
import sys
import tempfile
from pathlib import Path

from . import lockstep_status

HELP = "replay a pcap through a block's RTL (Verilator) in lockstep with its model"


def add_arguments(p):
    p.add_argument("block", help="block name, e.g. parser")
    p.add_argument("file", help="pcap file (Ethernet link type)")
    p.add_argument("--width", type=int, default=512, help="datapath width in bits (default 512)")
    p.add_argument("--waves", metavar="FILE", help="write a waveform (.fst, or .vcd)")
    p.add_argument("--json", action="store_true", help="one JSON object per frame, then a summary")
    p.add_argument("--idle", type=float, default=0.0,
                   help="probability of an idle cycle between input beats (default 0)")
    p.add_argument("--backpressure", type=float, default=0.0,
                   help="probability of ready low on each output per cycle (default 0)")
    p.add_argument("--seed", type=int, default=1, help="seed of the idle/backpressure pattern")
    p.add_argument("--config", metavar="FILE.json",
                   help="rx blocks: connections, keys, MTU, ack_every as JSON ({\"ack_every\": 4, "
                        "\"mtu\": 256, \"connections\": [{\"qp\", \"pkey\", \"paths\", "
                        "\"streams\", \"psn\": one or one per path}], \"keys\": [{\"rkey\", "
                        "\"base\", \"length\", \"access\"}]}); what it leaves out is learned from "
                        "the capture: every destination QP a connection (P_Key of its first "
                        "write, the paths and streams seen, each path's lowest PSN as its "
                        "first), every R_Key a key at base 0 spanning 32 bits with every right, "
                        "the MTU the largest payload rounded up to a power of two, ack_every 4 "
                        "(docs/spec/hw-rx.md, MR-RX-072)")
    p.add_argument("--write-config", metavar="FILE.json",
                   help="rx blocks: write the configuration the replay runs with")
    p.add_argument("--acks", metavar="ACKS.pcap",
                   help="tx: the peer's ACK/NAK frames, offered in order, each once the engine "
                        "has sent the PSNs it covers (default: a lossless receiver ACKs every "
                        "frame that asks); FILE is then the work-request JSON "
                        "(docs/spec/cli.md, MR-TX-154)")
    p.add_argument("--out", metavar="FRAMES.pcap", help="tx: write the frames the engine sent")
    p.add_argument("--sim", choices=("verilator", "amaranth"), default="verilator",
                   help="tx: the RTL simulator (default verilator)")


def _wave_format(path):
    suffix = Path(path).suffix.lower()
    if suffix not in (".fst", ".vcd"):
        raise ValueError(f"--waves {path}: name a .fst or .vcd file")
    return suffix[1:]


def simulate(blk, width, pcap_path, *, waves=None, idle=0.0, backpressure=0.0, seed=1,
             extra_env=None):
    """Run the replay test; return its result dict (see tb/parser.py ``parser_replay``)."""
    from .. import blocks
    from ..cli import CliError
    from metaroce.sim import verilator as vl
    fmt = None
    if waves:
        try:
            fmt = _wave_format(waves)
        except ValueError as e:
            raise CliError(str(e)) from None
        if fmt == "fst" and (problem := vl.fst_support_problem()):
            raise CliError(f"{problem}; or ask for a .vcd file")
    if sys.stderr.isatty():
        print(f"metaroce replay: Verilator build of {blk.name} at {width} bits (cached after the "
              "first, which takes about a minute), then the simulation", file=sys.stderr)
    try:
        from metaroce.tb import build as tb_build
        b = tb_build.build(blk, width, waves=fmt or False)
    except vl.ToolchainError as e:
        raise CliError(str(e).splitlines()[0]) from None
    with tempfile.TemporaryDirectory(dir=blocks.scratch_dir(), prefix=f"replay-{blk.name}-") as tmp:
        out = Path(tmp) / "result.json"
        env = {"METAROCE_REPLAY_PCAP": str(Path(pcap_path).resolve()),
               "METAROCE_REPLAY_OUT": str(out),
               "METAROCE_REPLAY_IDLE": str(idle),
               "METAROCE_REPLAY_BACKPRESSURE": str(backpressure),
               "COCOTB_TEST_FILTER": f"{blk.tb.rsplit('.', 1)[-1]}_replay$", **(extra_env or {})}
        log = Path(tmp) / "sim.log"
        run_dir = Path(tmp) / "run"
        try:
            vl.run(b, blk.tb, extra_env=env, seed=seed, waves=bool(fmt), run_dir=run_dir,
                   log_file=log)
        except (vl.SimulationError, AssertionError) as e:
            raise CliError(f"the simulation failed: {str(e).splitlines()[0]} "
                           f"(log: {_keep_log(log)})") from None
        if not out.is_file():
            raise CliError(f"the simulation wrote no results (log: {_keep_log(log)})")
        result = json.loads(out.read_text())
        if fmt:
            src = run_dir / b.waves_file
            if not src.is_file():
                raise CliError(f"the simulation wrote no waveform {src.name}")
            Path(waves).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, waves)
    return result


def _keep_log(log):
    """Copy a failed run's log out of the temporary directory; return its path."""
    from .. import blocks
    dst = blocks.scratch_dir() / "last-replay-sim.log"
    try:
        shutil.copyfile(log, dst)
    except OSError:
        return "none"
    return str(dst)


def run(args):
    from ..cli import CliError
    from .verilog import block_and_width
    from metaroce.models import codec, pcap
    blk = block_and_width(args)
    if blk.tb == "metaroce.tb.tx":
        return run_tx(args, blk)
    if args.acks or args.out:
        raise CliError("--acks and --out are for the tx block")
    if blk.tb not in ("metaroce.tb.parser", "metaroce.tb.rx"):
        raise CliError(f"block {blk.name!r} has no replay (the parser, the RX engine and the TX "
                       "engine have one)")
    for name, v in (("--idle", args.idle), ("--backpressure", args.backpressure)):
        if not 0.0 <= v < 1.0:
            raise CliError(f"{name} must be in [0, 1)")
    if blk.tb == "metaroce.tb.rx":
        return run_rx(args, blk)
    if args.config or args.write_config:
        raise CliError("--config and --write-config are for the rx blocks")
    try:
        records = pcap.read(args.file)
    except pcap.PcapError as e:
        raise CliError(str(e)) from None
    if not records:
        raise CliError(f"{args.file}: no frames")
    res = simulate(blk, args.width, args.file, waves=args.waves, idle=args.idle,
                   backpressure=args.backpressure, seed=args.seed)
    frames = res["frames"]
    if len(frames) != len(records):
        raise CliError(f"the simulation reported {len(frames)} frames for {len(records)} records")
    accepted = bypassed = 0
    dropped = {}
    out = sys.stdout
    for i, (rec, fr) in enumerate(zip(records, frames), 1):
        obj = codec.decode_json(i, rec.data)
        verdict = fr["verdict"]
        drop = None
        if verdict == "accepted":
            accepted += 1
        elif verdict == "bypassed":
            bypassed += 1
        elif verdict == "dropped":
            drop = fr["reason"]
        else:                               # "missing" (a bug) or "empty" (not sent)
            drop = fr["expected"] or "truncated" if verdict == "empty" else "missing"
        if drop is not None:
            dropped[drop] = dropped.get(drop, 0) + 1
        obj["drop"] = drop
        obj["bypass"] = verdict == "bypassed"
        if args.json:
            out.write(json.dumps(obj) + "\n")
        else:
            rtl = {"accepted": "accepted", "bypassed": "bypassed"}.get(verdict, f"dropped {drop}")
            out.write(f"{codec.summary(i, obj)} -> RTL {rtl}\n")
    summary = {"summary": True, "block": blk.name, "width": args.width, "frames": len(records),
               "accepted": accepted, "bypassed": bypassed, "dropped": dict(sorted(dropped.items())),
               "mismatches": res["mismatches"], "problems": len(res["problems"]),
               "cycles": res["cycles"], "beats": res["beats"],
               "beats_per_cycle": None if res["beats_per_cycle"] is None else round(res["beats_per_cycle"], 4),
               "counters": res["counters"]}
    if args.waves:
        summary["waves"] = str(args.waves)
    if args.json:
        out.write(json.dumps(summary) + "\n")
    else:
        out.write(f"{len(records)} frames: {accepted} accepted, {bypassed} bypassed, "
                  f"{sum(dropped.values())} dropped {dict(sorted(dropped.items()))}; "
                  f"{res['mismatches']} RTL/model mismatches, {len(res['problems'])} problems; "
                  f"{res['cycles']} cycles, {summary['beats_per_cycle']} beats/cycle\n")
    return lockstep_status(res)


def run_rx(args, blk):
    """``metaroce replay rx FILE.pcap`` (MR-RX-072)."""
    from ..cli import CliError
    from metaroce.models import codec, pcap
    from metaroce.models import rx_cases as rc
    from metaroce.models.rx import RxCode, unpack
    from metaroce.models.wire import NakReason, Reason
    try:
        records = pcap.read(args.file)
    except pcap.PcapError as e:
        raise CliError(str(e)) from None
    if not records:
        raise CliError(f"{args.file}: no frames")
    given = None
    if args.config:
        try:
            with open(args.config) as f:
                given = json.load(f)
        except OSError as e:
            raise CliError(f"{args.config}: {e.strerror or e}") from None
        except ValueError as e:
            raise CliError(f"{args.config}: not JSON ({e})") from None
        if not isinstance(given, dict):
            raise CliError(f"{args.config}: the configuration must be a JSON object")
    model = blk.make_model(args.width)
    lay = model.lay
    try:
        cfg, items, cases = rc.replay_items([r.data for r in records], lay, given)
    except rc.ConfigError as e:
        raise CliError(f"{args.config or args.file}: {e}") from None
    except (KeyError, TypeError, ValueError) as e:
        raise CliError(f"{args.config}: bad configuration ({e})") from None
    if args.write_config:
        try:
            Path(args.write_config).write_text(json.dumps(cfg, indent=1) + "\n")
        except OSError as e:
            raise CliError(f"{args.write_config}: {e.strerror or e}") from None
    exp = rc.expected(items, lay.conns, lay.paths, lay.keys, lay.streams)
    with tempfile.TemporaryDirectory(prefix="replay-rx-cfg-") as tmp:
        cfg_path = Path(tmp) / "config.json"
        cfg_path.write_text(json.dumps(cfg))
        res = simulate(blk, args.width, args.file, waves=args.waves, idle=args.idle,
                       backpressure=args.backpressure, seed=args.seed,
                       extra_env={"METAROCE_REPLAY_RX_CONFIG": str(cfg_path),
                                  "RX_CONNS": str(lay.conns), "RX_PATHS": str(lay.paths),
                                  "RX_KEYS": str(lay.keys), "RX_STREAMS": str(lay.streams)})
    outcomes = iter(exp["outcomes"])
    tally = {}
    out = sys.stdout
    for i, (rec, case) in enumerate(zip(records, cases), 1):
        obj = codec.decode_json(i, rec.data)
        ack = place = None
        if case is None:
            rx = "bypassed"
        else:
            o = next(outcomes)
            rx = o.code.name.lower()
            if o.code == RxCode.PARSER_DROP:
                obj["parser_drop"] = Reason(unpack_reason(case.meta)).label
            if o.ack is not None:
                a = o.ack
                ack = ({"nak": True, "path": a["path"], "psn": a["psn"],
                        "reason": NakReason(a["reason"]).name.lower(), "sport": a["sport"]}
                       if a["nak"] else
                       {"nak": False, "path": a["path"], "psn": a["psn"], "cum": a["cum"],
                        "sack": f"{a['sack']:#066x}", "ce_count": a["ce_count"], "ece": a["ece"],
                        "sport": a["sport"]})
            if o.place is not None:
                place = {"addr": f"{o.place['addr']:#018x}", "length": o.place["length"]}
        tally[rx] = tally.get(rx, 0) + 1
        obj.update(rx=rx, ack=ack, place=place)
        if args.json:
            out.write(json.dumps(obj) + "\n")
        else:
            extra = "" if ack is None else (" NAK " + ack["reason"] if ack["nak"] else f" ACK cum={ack['cum']}")
            out.write(f"{codec.summary(i, obj)} -> RX {rx}{extra}\n")
    counters = res["counters"] or []
    summary = {"summary": True, "block": blk.name, "width": args.width, "frames": len(records),
               "records": res["records"], "outcomes": dict(sorted(tally.items())),
               "acks": sum(1 for a in exp["ack"] if not unpack(lay.ack, a)["nak"]),
               "naks": sum(1 for a in exp["ack"] if unpack(lay.ack, a)["nak"]),
               "placed_bytes": sum(len(d) for d in exp["data"]),
               "connections": len(cfg["connections"]), "keys": len(cfg["keys"]), "mtu": cfg["mtu"],
               "mismatches": res["mismatches"], "problems": len(res["problems"]),
               "cycles": res["cycles"], "counters": counters}
    if args.waves:
        summary["waves"] = str(args.waves)
    if args.json:
        out.write(json.dumps(summary) + "\n")
    else:
        out.write(f"{len(records)} frames, {res['records']} records: {summary['outcomes']}; "
                  f"{summary['acks']} ACKs, {summary['naks']} NAKs, {summary['placed_bytes']} bytes "
                  f"placed; {res['mismatches']} RTL/model mismatches, {len(res['problems'])} "
                  f"problems; {res['cycles']} cycles\n")
    return lockstep_status(res)


def unpack_reason(meta):
    from metaroce.models.parser import unpack_meta
    return unpack_meta(meta)["reason"]


def run_tx(args, blk):
    """``metaroce replay tx WORK.json [--acks ACKS.pcap]`` (MR-TX-154): the work requests and
    the peer's ACKs through the TX engine's RTL in lockstep with its model; one object per frame
    sent (``metaroce decode --json``'s), then a summary."""
    from ..cli import CliError
    from metaroce.models import codec, pcap
    from metaroce.models import tx_cases as xc
    from metaroce.models.tx import SMALL
    for name, v in (("--idle", args.idle), ("--backpressure", args.backpressure)):
        if not 0.0 <= v < 1.0:
            raise CliError(f"{name} must be in [0, 1)")
    if args.config or args.write_config:
        raise CliError("--config and --write-config are for the rx blocks")
    try:
        with open(args.file) as f:
            spec = json.load(f)
    except OSError as e:
        raise CliError(f"{args.file}: {e.strerror or e}") from None
    except ValueError as e:
        raise CliError(f"{args.file}: not JSON ({e})") from None
    frames = []
    if args.acks:
        try:
            frames = [r.data for r in pcap.read(args.acks)]
        except pcap.PcapError as e:
            raise CliError(str(e)) from None
    model = blk.make_model(args.width)
    try:
        items, mem, image, tm, acks = xc.replay_inputs(spec, frames, model.lay, paths=SMALL["paths"])
    except xc.ReplayError as e:
        raise CliError(f"{e}") from None
    if not items:
        raise CliError(f"{args.file}: no work requests")
    if args.sim == "amaranth":
        from metaroce.tb.lockstep import model_port_lists, port_values, Core, drive_amaranth
        from amaranth.hdl import ClockDomain, Module
        from amaranth.sim import Simulator
        dut = blk.make_component(args.width)
        drv = xc.ReplayDriver(model.lay, args.width, items, mem, tm, acks, image=image,
                              seed=args.seed, idle=args.idle, bp=args.backpressure)
        top = Module()
        top.domains.sync = ClockDomain()
        top.submodules.dut = dut
        ins, outs = model_port_lists(model)
        sig = port_values(dut, ins + outs)
        core = Core(model, ins, outs, {n: len(v) for n, v in sig.items()}, stop_on_mismatch=False)
        sim = Simulator(top)
        sim.add_clock(1e-8)
        drive_amaranth(sim, core, drv, sig, busy=model.active)
        sim.run()
        res = xc.replay_result(drv, core.mismatches, core.reports)
    else:
        extra = {"METAROCE_REPLAY_SEED": str(args.seed)}
        if args.acks:
            extra["METAROCE_REPLAY_TX_ACKS"] = str(Path(args.acks).resolve())
        res = simulate(blk, args.width, args.file, waves=args.waves, idle=args.idle,
                       backpressure=args.backpressure, seed=args.seed, extra_env=extra)
    raw = [bytes.fromhex(h) for h in res["frames"]]
    if args.out:
        try:
            pcap.write(args.out, raw)
        except OSError as e:
            raise CliError(f"{args.out}: {e.strerror or e}") from None
    out = sys.stdout
    for i, data in enumerate(raw, 1):
        obj = codec.decode_json(i, data)
        out.write((json.dumps(obj) if args.json else codec.summary(i, obj)) + "\n")
    statuses = {}
    for c in res["cqe"]:
        statuses[c["status"]] = statuses.get(c["status"], 0) + 1
    summary = {"summary": True, "block": blk.name, "width": args.width, "sim": args.sim,
               "work_requests": res["work_requests"], "completed": res["completed"],
               "statuses": {str(k): v for k, v in sorted(statuses.items())},
               "frames": len(raw), "acks_given": len(acks), "acks_taken": res["acks"],
               "errors": len(res["errors"]), "mismatches": res["mismatches"],
               "cycles": res["cycles"]}
    if args.json:
        out.write(json.dumps(summary) + "\n")
    else:
        out.write(f"{res['work_requests']} work requests, {res['completed']} completed "
                  f"{summary['statuses']}; {len(raw)} frames; {res['acks']} ACKs taken; "
                  f"{res['mismatches']} RTL/model mismatches; {res['cycles']} cycles\n")
    for line in res["mismatch_reports"][:3]:
        print(line, file=sys.stderr)
    return 1 if res["mismatches"] else 0
