"""``metaroce cosim [SCENARIO]``: the engine's RTL in a closed loop over the model fabric
(docs/spec/hw-engine.md, MR-ENG-120..127, MR-ENG-138).

``--direction rx`` (the default): a model sender endpoint (``--peer model``) writes
``--bytes`` through the fabric (``--loss`` on the link into the engine, the scenario's
multipath, reordering, duplication, ECN) into the receive half (``engine_rx_256x4``), whose
ACK/NAK records go back as frames to the sender (:mod:`metaroce.models.cosim`).
``--direction tx``: the TX half (the block ``tx``) writes to a model receiver endpoint whose
ACK/NAK frames drive it (:mod:`metaroce.models.cosim_tx`). ``--peer rtl``: two whole engines
(the block ``engine``), both the RTL under Verilator in one simulation (the pair build,
:func:`metaroce.tb.build.pair_build`; :mod:`metaroce.models.cosim_engine`). ``--engine model``
runs the engines under test as their cycle model instead of the RTL under Verilator.

``--json`` prints one object: ``ok``, ``sha256_match``, ``bytes``, ``goodput_vs_limit``,
``cycles``, ``mismatches`` (RTL/model lockstep mismatches with ``--lockstep``; null without,
where the cycle model does not run), then the details. Exit 1 when the run is not ``ok``.
"""
import json
import sys
import tempfile
from pathlib import Path

HELP = "closed-loop co-simulation: the engine's RTL with a model peer over the fabric simulator"

#: the build and the cocotb test of each direction
BLOCKS = {"rx": ("engine_rx_256x4", "engine_cosim"), "tx": ("tx", "engine_tx_cosim"),
          "peer": ("engine", "engine_peer_cosim"), "pair": ("engine", "engine_pair_cosim"),
          "endpoint": ("engine", "engine_endpoint_cosim")}

__all__ = ["run_rtl"]


#: MR-ENG-123/127: what the reference run of each direction is
REFERENCE = {
    "rx": ("the same sender and fabric, a reference Endpoint receiving (its delayed-ACK timer as "
           "the engine's, MR-RX-090; rate-hint pushes off, as the RX engine)"),
    "tx": ("model <-> model: a reference Endpoint sending (its MTU, chunk window, adaptive "
           "windows and probes) to the same receiver over the same fabric"),
    "peer": ("model <-> model: reference Endpoints on both hosts, the same writes both ways "
             "(h0's and h1's back traffic), fabric, MTU 1,024, the engine's chunk window and ACK policy"),
    "endpoint": ("model <-> model: reference Endpoints on both hosts, the same writes both ways "
                 "(h0's and h1's back traffic), fabric, MTU 1,024, the engine's chunk window and ACK policy"),
}


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
    p.add_argument("--peer", choices=("model", "rtl", "endpoint"), default="model",
                   help="the other host: the model endpoint against one half of the engine "
                        "(default); rtl: a second whole engine, both the RTL (or both the cycle "
                        "model with --engine model) (MR-ENG-138); endpoint: the model endpoint "
                        "against the whole engine, data both ways, --direction rx: the endpoint "
                        "sends --bytes, tx: the engine does (MR-ENG-139)")
    p.add_argument("--back", type=int, default=None,
                   help="with --peer rtl or endpoint: the bytes h1 writes back to h0 at the same "
                        "time (default an eighth of --bytes; 0: none)")
    p.add_argument("--verb", choices=("write", "read"), default="write",
                   help="with --peer rtl or endpoint: each side WRITEs its bytes to the other "
                        "(default) or READs the other's (MR-ENG-146: the data's receiver posts the "
                        "READs, the sender's engine answers them)")
    p.add_argument("--writes", type=int, default=None, dest="n_writes",
                   help="with --peer rtl or endpoint: the work requests each side's bytes are cut "
                        "into (WRITEs, or READs with --verb read; WR i on stream i mod 2; default 6)")
    p.add_argument("--init-psn", type=int, default=None, dest="init_psn", metavar="PSN",
                   help="with --peer rtl or endpoint: every path's initial PSN, both directions "
                        "(the engines' table 9 rows, MR-ENG-306; e.g. 16777208 crosses the 24-bit "
                        "wrap; default 0)")
    p.add_argument("--hints", type=int, default=None, metavar="MBPS",
                   help="with --peer rtl or endpoint: the engines with the receiver's rate hints "
                        "end to end (the block engine_hints: the peer's MRAH hint into the TX "
                        "half's hinted windows), each engine's ACKs carrying MBPS (its host's "
                        "receive rate; 0: no limit), the endpoint's hint pushes on (MR-ENG-319)")
    p.add_argument("--rx-hint", action="store_true", dest="rx_hint",
                   help="with --hints: each engine computes its own hint (the block engine_rx_hint: "
                        "its senders counted, MR-CC-005's share of the link; MR-ENG-341); MBPS unused")
    p.add_argument("--mac", choices=("cut-through", "store-and-forward"), default="cut-through",
                   help="the engine's MAC streams a frame as it crosses the wire, both ways "
                        "(default), or store and forward (the earlier harness): a frame sent is "
                        "handed to the host's NIC at its last beat, which serialises it again, "
                        "and a frame received enters s_axis after its last bit")
    p.add_argument("--width", type=int, default=64, choices=(64, 512),
                   help="datapath bits (default 64: the 10 Gb/s link at 156.25 MHz; 512: 80 Gb/s)")
    p.add_argument("--ack-every", type=int, default=None, dest="ack_every",
                   help="the receiver's ACK policy: an ACK every N accepted packets of a path, "
                        "else after the delayed-ACK time (default 1 for rx, MR-ENG-123; 4 for tx)")
    p.add_argument("--seed", type=int, default=1, help="seed of the fabric, data and layout (default 1)")
    p.add_argument("--lockstep", action="store_true",
                   help="run the engine's cycle model alongside and compare every output every "
                        "cycle (about ten times slower)")
    p.add_argument("--engine", choices=("rtl", "model"), default="rtl",
                   help="the engine's half under test: the RTL under Verilator (default) or its "
                        "cycle model alone")
    p.add_argument("--direction", choices=("rx", "tx"), default="rx",
                   help="rx (default): a model sender writes into the engine's receive half; "
                        "tx: the engine's TX half writes to a model receiver, whose ACKs drive it "
                        "(MTU 1,024 and 2 connections: the block tx; --ack-every defaults to 4)")


def run_rtl(cfg, *, lockstep=False, log_dir=None, direction="rx", endpoint_direction="rx", p_bp=0.0,
            rows=False):
    """One closed-loop run of the RTL (``tb/cosim.py``) on the cached Verilator build of the
    small instance at ``cfg.width`` (``direction`` rx: ``engine_rx_256x4`` receiving; tx: the
    block ``tx`` sending; peer: the block ``engine`` on h1, its model on h0; pair: two
    ``engine`` instances, :func:`metaroce.tb.build.pair_build`; endpoint: one ``engine`` of the
    pair build against a model endpoint, ``endpoint_direction`` rx or tx, MR-ENG-139; ``p_bp``:
    with peer or pair, the engines' outputs and host memories back-pressured at that
    probability, MR-ENG-153; ``rows``: with peer, pair or endpoint the block ``engine_rows``
    and its model, MR-ENG-298); returns
    the result dict (raises RuntimeError with the log's path when the simulation wrote none)."""
    from dataclasses import asdict

    from metaroce import blocks
    from metaroce.sim import verilator as vl
    from metaroce.tb import build as tb_build
    block, test = BLOCKS[direction]
    if rows:
        if block != "engine":
            raise ValueError("rows is a whole engine's option (peer, pair or endpoint)")
        block = "engine_rows"           # MR-ENG-298
    if cfg.hints is not None:
        if block != "engine" or rows:
            raise ValueError("hints is a whole engine's option (peer, pair or endpoint), not with rows")
        block = "engine_rx_hint" if cfg.rx_hint else "engine_hints"        # MR-ENG-319, MR-ENG-341
    blk = blocks.get(block)
    pair = direction in ("pair", "endpoint")
    b = tb_build.pair_build(blk, cfg.width) if pair else tb_build.build(blk, cfg.width)
    raw = asdict(cfg)
    raw.pop("width")
    with tempfile.TemporaryDirectory(dir=log_dir or blocks.scratch_dir(), prefix="cosim-") as tmp:
        out = Path(tmp) / "result.json"
        log = Path(tmp) / "sim.log"
        env = {"COSIM_CONFIG": json.dumps(raw), "COSIM_OUT": str(out),
               "COSIM_LOCKSTEP": "1" if lockstep else "0", "COSIM_DIRECTION": endpoint_direction,
               "COSIM_P_BP": str(p_bp), "COSIM_ROWS": "1" if rows else "0"}
        vl.run(b, "metaroce.tb.cosim", testcase=test, extra_env=env, run_dir=Path(tmp) / "run", log_file=log,
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
    from metaroce.models import cosim, cosim_engine, cosim_tx
    peer = args.peer == "rtl"
    endpoint = args.peer == "endpoint"
    if peer and args.direction != "rx":
        raise CliError("--peer rtl runs two whole engines (both directions): not with --direction tx")
    if not 0 <= args.loss < 1:
        raise CliError("--loss must be in [0, 1)")
    if args.nbytes < 6 or args.nbytes > (1 << 30):
        raise CliError("--bytes must be in 6..1073741824")
    if args.seed < 0:
        raise CliError("--seed must be >= 0")
    if args.back is not None and not (peer or endpoint):
        raise CliError("--back is h1's writes back: only with --peer rtl or endpoint")
    if args.verb != "write" and not (peer or endpoint):
        raise CliError("--verb read runs READs between whole engines: only with --peer rtl or endpoint")
    if args.n_writes is not None and not (peer or endpoint):
        raise CliError("--writes cuts a whole engine's work requests: only with --peer rtl or endpoint")
    if args.n_writes is not None and not 1 <= args.n_writes <= 4096:
        raise CliError("--writes must be in 1..4096")
    if args.init_psn is not None and not (peer or endpoint):
        raise CliError("--init-psn sets a whole engine's initial PSNs: only with --peer rtl or endpoint")
    if args.init_psn is not None and not 0 <= args.init_psn < 1 << 24:
        raise CliError("--init-psn must be in 0..16777215")
    if args.hints is not None and not (peer or endpoint):
        raise CliError("--hints runs whole engines with the rate hints: only with --peer rtl or endpoint")
    if args.hints is not None and not 0 <= args.hints < 1 << 19:
        raise CliError("--hints must be in 0..524287 (Mb/s)")
    if args.rx_hint and args.hints is None:
        raise CliError("--rx-hint needs --hints")
    if args.back is not None and not 0 <= args.back <= (1 << 30):
        raise CliError("--back must be in 0..1073741824")
    whole = peer or endpoint                    # the whole engine: its TX half's MTU and connections
    tx = args.direction == "tx" or whole
    if args.ack_every is None:
        args.ack_every = cosim_tx.TX_CONFIG["ack_every"] if tx else 1
    if not 1 <= args.ack_every <= 15:
        raise CliError("--ack-every must be in 1..15")
    over, _ = cosim.SCENARIOS[args.scenario]
    cfg = cosim.Config(**{**over, **(cosim_tx.TX_CONFIG if tx else {}),
                          **({"n_conns": 1, "back": args.back, "verb": args.verb} if whole else {}),
                          **({"n_writes": args.n_writes} if args.n_writes is not None else {}),
                          **({"init_psn": args.init_psn} if args.init_psn is not None else {}),
                          **({"hints": args.hints} if args.hints is not None else {}),
                          **({"rx_hint": True} if args.rx_hint else {}),
                          "mac_cut_through": args.mac == "cut-through",
                          "width": args.width,
                          "nbytes": args.nbytes, "loss": args.loss, "seed": args.seed,
                          "ack_every": args.ack_every})
    try:
        cosim_tx.check_config(cfg) if tx else cfg.validate()
    except ValueError as e:
        raise CliError(str(e)) from None
    if args.engine == "model":
        if args.lockstep:
            raise CliError("--lockstep compares the RTL with the model: not with --engine model")
        if endpoint:
            res = cosim_engine.run_endpoint_model(cfg, args.direction)
        else:
            res = (cosim_engine.run_peer_model(cfg) if peer else (cosim_tx if tx else cosim).run_model(cfg))
        res.update({"lockstep": False, "mismatches": None})
    else:
        kind = "pair" if peer else "endpoint" if endpoint else args.direction
        block = BLOCKS[kind][0] + (" (two instances)" if kind in ("pair", "endpoint") else "")
        if sys.stderr.isatty():
            print(f"metaroce cosim: Verilator build of {block} at {args.width} bits (cached after "
                  "the first, which takes minutes), then the closed loop", file=sys.stderr)
        from metaroce.sim import verilator as vl
        try:
            res = run_rtl(cfg, lockstep=args.lockstep, direction=kind, endpoint_direction=args.direction)
        except vl.ToolchainError as e:
            raise CliError(str(e).splitlines()[0]) from None
        except RuntimeError as e:
            raise CliError(str(e)) from None
    if whole:       # MR-ENG-138/139: the run's own writes both ways
        ref = cosim_engine.run_reference_pair(
            cfg, *cosim_engine.reference_writes(cfg, "peer" if peer else "endpoint", args.direction))
    else:
        ref = cosim.run_reference(cfg, timer=True, hints=False)
    res["reference"] = {"goodput_vs_limit": ref["goodput_vs_limit"], "ok": ref["ok"],
                        "what": REFERENCE["peer" if peer else "endpoint" if endpoint else args.direction]
                        .replace("same writes", "same READs" if args.verb == "read" else "same writes")}
    if whole:       # MR-ENG-202: each host's completions (per stream, in order) as a digest
        res["reference"]["completions_digest"] = {f"h{h}": d for h, d in enumerate(ref["completions_digest"])}
    res = {"scenario": args.scenario, "direction": args.direction, "peer": args.peer,
           "engine_sim": args.engine, **({} if tx else {"receiver": args.engine}), **res}
    head = ["ok", "sha256_match", "bytes", "goodput_vs_limit", "cycles", "mismatches"]
    res = {**{k: res[k] for k in head}, **{k: v for k, v in res.items() if k not in head}}
    if args.json:
        print(json.dumps(res))
    elif whole:
        who = ("two engines" if peer else f"engine <-> endpoint, {args.direction}") + (
            ", READs" if args.verb == "read" else "")
        print(f"cosim {args.scenario} ({who}): {'ok' if res['ok'] else 'FAILED'}: "
              f"{res['bytes']} bytes h0 -> h1 and {res['bytes_back']} back, sha256 "
              f"{'match' if res['sha256_match'] else 'MISMATCH'}, WRs "
              f"{'all completed' if res['wrs_completed_ok'] else 'NOT all completed'}; goodput "
              f"{res['goodput_vs_limit']:.3f} of the payload limit, {res['cycles']} cycles"
              + (f" ({res['cycles_per_s']} a second)" if res.get("cycles_per_s") else "")
              + f"; reference {res['reference']['goodput_vs_limit']:.3f}")
    else:
        eng = res["engine"]
        print(f"cosim {args.scenario} ({args.direction}): {'ok' if res['ok'] else 'FAILED'}: {res['bytes']} bytes, "
              f"sha256 {'match' if res['sha256_match'] else 'MISMATCH'}, "
              f"WRs {'all completed' if res['wrs_completed_ok'] else 'NOT all completed'}")
        print(f"  goodput {res['goodput_gbps']:.3f} Gb/s = {res['goodput_vs_limit']:.3f} of the "
              f"payload limit {res['limit_gbps']:.3f} Gb/s ({res['link_gbps']:g} Gb/s link, "
              f"{res['width']} bits at {res['clock_mhz']:g} MHz), {res['cycles']} cycles; "
              f"reference {res['reference']['goodput_vs_limit']:.3f}")
        fb = res["fabric"]
        lost = (f"  fabric: {fb['lost']} lost, {fb['duplicated']} duplicated, {fb['delayed']} "
                f"delayed, {fb['ce_marked']} CE-marked; ")
        mism = f"lockstep mismatches: {'not run' if res['mismatches'] is None else res['mismatches']}"
        if tx:
            rv, ctr = res["receiver"], eng["retransmit_counters"]
            print(lost + f"receiver: {rv['data_packets']} data frames, {rv['acks_sent']} ACKs, "
                  f"{rv['duplicates']} duplicates")
            print(f"  engine: {eng['frames']} frames ({eng['retransmits']} resent), "
                  f"{eng['acks_taken']} ACKs and {eng['naks_taken']} NAKs taken, "
                  f"{ctr.get('gap_losses', 0)} gap losses, {ctr.get('timeouts', 0)} timeouts; {mism}")
        else:
            sd = res["sender"]
            print(lost + f"sender: {sd['frames']} frames, {sd['retransmitted']} retransmitted, "
                  f"{sd['probes']} probes, {sd['timeouts']} timeouts")
            print(f"  engine: {eng['frames_in']} frames, {eng['ack_records']} ACKs, "
                  f"{eng['nak_records']} NAKs, {eng['placements']} placements; {mism}")
    return 0 if res["ok"] else 1
