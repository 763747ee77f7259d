"""Helpers shared by the benchmarks: parallel runs with a progress bar, settings, plots."""
from __future__ import annotations

import multiprocessing as mp
import os


class UI:
    """What a benchmark's ``run(args, ui)`` gets: ``ui.map`` and the worker count."""

    def __init__(self, jobs=1):
        self.jobs = jobs

    def map(self, fn, jobs, label="runs"):
        """``[fn(j) for j in jobs]`` over ``self.jobs`` processes, with a progress bar on
        stderr (shown only on a terminal). Results keep the order of ``jobs``."""
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        jobs = list(jobs)
        out = [None] * len(jobs)
        err = Console(stderr=True)
        with Progress(TextColumn(label), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                      console=err, transient=True, disable=not err.is_terminal) as bar:
            task = bar.add_task(label, total=len(jobs))
            if self.jobs <= 1 or len(jobs) <= 1:
                for i, j in enumerate(jobs):
                    out[i] = fn(j)
                    bar.advance(task)
                return out
            ctx = mp.get_context("fork" if hasattr(os, "fork") else "spawn")
            with ctx.Pool(min(self.jobs, len(jobs))) as pool:
                for i, r in pool.imap_unordered(_Indexed(fn), list(enumerate(jobs))):
                    out[i] = r
                    bar.advance(task)
        return out


class _Indexed:
    def __init__(self, fn):
        self.fn = fn

    def __call__(self, ij):
        i, j = ij
        return i, self.fn(j)



def verilator_rows(block, width, test, env, *, out_var):
    """Run cocotb test ``test`` of ``block``'s testbench on its cached Verilator build at
    ``width``, with ``env`` and ``out_var`` naming the JSON file the test writes; returns
    that file's ``rows``. Shared by the hardware blocks' benches."""
    import json
    import tempfile
    from metaroce import blocks
    from metaroce.sim import verilator as vl
    from metaroce.tb import build as tb_build
    blk = blocks.get(block)
    b = tb_build.build(blk, width)
    with tempfile.TemporaryDirectory(dir=blocks.scratch_dir(), prefix=f"bench-{block}-w{width}-") as tmp:
        out = os.path.join(tmp, "rows.json")
        env = dict(env, **{out_var: out, "COCOTB_TEST_FILTER": f"{test}$"})
        vl.run(b, blk.tb, extra_env=env, seed=1, run_dir=os.path.join(tmp, "run"),
               log_file=os.path.join(tmp, "sim.log"))
        with open(out) as fh:
            return json.load(fh)["rows"]

def parse_list(text, conv=float):
    """``"0,0.1,1"`` -> ``[0.0, 0.1, 1.0]``; raises ValueError with a clear message."""
    try:
        return [conv(x) for x in str(text).split(",") if x.strip()]
    except ValueError:
        raise ValueError(f"bad list {text!r}: expected comma-separated numbers") from None


#: The data widths of the hardware blocks' benches (bits).
WIDTHS = (64, 128, 256, 512)


def check_widths(ws, widths=WIDTHS):
    """A one-line CliError for a width in ``ws`` that is not one of ``widths``."""
    from ..cli import CliError
    for w in ws:
        if w not in widths:
            raise CliError(f"width {w} not supported (use {', '.join(map(str, widths))})")


def widths_and_sizes(args, lo, hi, what="payload size", widths=WIDTHS):
    """``args.widths`` and ``args.sizes`` as lists of ints, each width one of ``widths`` and each
    size in ``lo..hi`` bytes (``what`` names it); a one-line CliError otherwise."""
    from ..cli import CliError
    try:
        ws = parse_list(args.widths, int)
        sizes = parse_list(args.sizes, int)
    except ValueError as e:
        raise CliError(str(e)) from None
    check_widths(ws, widths)
    for s in sizes:
        if not lo <= s <= hi:
            raise CliError(f"{what} {s} outside {lo}..{hi} bytes")
    return ws, sizes


def parse_size(text):
    from metaroce.commands.transfer import parse_size as ps
    return ps(text)


def jain(xs):
    """Jain's fairness index of the values ``xs`` (1.0 = perfectly fair)."""
    xs = list(xs)
    s = sum(xs)
    q = sum(x * x for x in xs)
    return (s * s) / (len(xs) * q) if q > 0 else 0.0


def payload_rate(link_bps, mtu, ext=16 + 16):
    """Line rate available to payload: MTU over MTU plus every per-frame byte (headers from
    Ethernet to ICRC, FCS, preamble, inter-frame gap)."""
    from metaroce.sim.fabric import FRAME_OVERHEAD
    hdr = 14 + 20 + 8 + 12 + ext + 4
    return link_bps * mtu / (mtu + hdr + FRAME_OVERHEAD)


def plt():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as p
    return p


#: Extra MetaRoCE keyword arguments for every benchmark (printed with the results). Empty: the
#: endpoint's defaults. (Earlier endpoint versions needed ``ack_every=2`` at 64 paths; see
#: docs/benchmarks.md.)
METAROCE_TUNING = {}


def endpoint_cfg(protocol, link_bps, rtt, planes=1, mtu=4096):
    """The configuration every benchmark passes to an endpoint of ``protocol``."""
    cfg = {"mtu": mtu, "line_rate_bps": link_bps * planes, "base_rtt": rtt}
    if protocol == "metaroce":
        cfg.update(METAROCE_TUNING)
    return cfg


def baseline_params(link_bps, rtt, planes=1):
    """The RoCEv2 baseline's parameters as the endpoint reports them."""
    from metaroce.sim.harness import make_endpoint
    ep = make_endpoint("rocev2", "10.0.0.1", **endpoint_cfg("rocev2", link_bps, rtt, planes))
    return dict(ep.params())


def two_hosts(protocol, *, link_bps, rtt, seed, paths, streams, loss=0.0):
    """Two hosts through one switch with one connection between them (host 0 -> host 1):
    ``(fabric, sender host, receiver host, sender's connection)``. MetaRoCE gets ``paths``
    paths, RoCEv2 one; ``loss`` hits data frames on both hosts' links."""
    from metaroce.sim.faults import Faults
    from metaroce.sim.harness import make_endpoint
    from metaroce.sim.topology import Fabric

    fab = Fabric(2, rate_bps=link_bps, rtt=rtt, seed=seed)
    if loss:
        fab.set_faults(Faults(loss=loss, seed=seed), ["h0>p0.leaf0", "h1>p0.leaf0"])
    cfg = endpoint_cfg(protocol, link_bps, rtt)
    s, d = fab.hosts
    for h in (s, d):
        h.ep = make_endpoint(protocol, h.addr, **cfg)
    n_paths = paths if protocol == "metaroce" else 1
    conn = s.ep.connect(1, d.addr, 1, paths=n_paths, streams=streams)
    d.ep.connect(1, s.addr, 1, paths=n_paths, streams=streams)
    return fab, s, d, conn


def dma_bench_arguments(p, latency_kind):
    """The DMA benches' common options (``bench dma_write`` and ``bench dma_read``)."""
    p.add_argument("--widths", default="64,512", help="comma-separated widths (default 64,512)")
    p.add_argument("--sizes", default="64,1500,4096", help="bytes per command (default 64,1500,4096)")
    p.add_argument("--offsets", default="0,5", help="start lanes (default 0,5)")
    p.add_argument("--latencies", default="200",
                   help=f"{latency_kind} latencies in cycles (default 200)")
    p.add_argument("--commands", type=int, default=256, help="commands per run (default 256)")


DMA_WIDTHS = WIDTHS


def dma_bench_run(args, ui, *, block, test, env_prefix):
    """Check the DMA benches' options and run one cached Verilator build per width: the rows
    of ``test`` with the sweep in ``<env_prefix>_SIZES``, ``_OFFSETS``, ``_LATENCIES``,
    ``_COMMANDS`` and the rows in ``_OUT``."""
    from ..cli import CliError
    widths, sizes = widths_and_sizes(args, 1, 65535, "command size", DMA_WIDTHS)
    try:
        offsets = parse_list(args.offsets, int)
        latencies = parse_list(args.latencies, int)
    except ValueError as e:
        raise CliError(str(e)) from None
    if any(o < 0 for o in offsets):
        raise CliError("offsets must be 0 or more")
    if any(not 1 <= x <= 100000 for x in latencies):
        raise CliError("latencies must be in 1..100000 cycles")
    if args.commands < 2:
        raise CliError("--commands must be 2 or more")
    env = {f"{env_prefix}_SIZES": ",".join(map(str, sizes)),
           f"{env_prefix}_OFFSETS": ",".join(map(str, offsets)),
           f"{env_prefix}_LATENCIES": ",".join(map(str, latencies)),
           f"{env_prefix}_COMMANDS": str(args.commands)}
    jobs = [(block, w, test, env, f"{env_prefix}_OUT") for w in widths]
    return [r for rs in ui.map(_dma_bench_one, jobs, label=f"{block} runs") for r in rs]


def _dma_bench_one(job):
    block, width, test, env, out_var = job
    return verilator_rows(block, width, test, env, out_var=out_var)


def model_or_amaranth(model, drv, sim, make_dut, busy):
    """Run a block bench's driver ``drv`` to its end: against ``model`` alone when ``sim`` is
    "model" (returns None), else with the RTL ``make_dut()`` beside it in the Amaranth
    simulator, every output compared every cycle (returns the lockstep core's mismatches)."""
    if sim == "model":
        while not drv.finished:
            inp = drv.inputs()
            drv.observe(inp, model.step(inp))
            drv.settle(busy)
        return None
    from metaroce.tb.lockstep import run_amaranth
    return run_amaranth(make_dut(), model, drv, busy=busy).mismatches
