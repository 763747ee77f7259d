"""``bench streams``: does a small message on one stream wait behind another stream's backlog?

Two hosts through one switch (400 Gb/s, 10 us base RTT, no loss). One MetaRoCE connection with
two streams (8 paths); RoCEv2 gets one RC QP per stream. At time 0 a ``--big`` write (64 MiB) is
posted on stream 0 and right after it a ``--small`` write (4 KiB) on stream 1 (MR-CONN-002,
MR-ENG-030).
Rows: ``protocol``, ``small_fct_us`` (posting to the sender's completion of the small write; ``--small-at``
posts it that many us after the big one),
``base_rtt_us``, ``small_fct_rtts`` (small_fct over the base RTT), ``big_goodput_gbps`` (the big
write's bytes x 8 over its completion time), ``big_vs_payload_rate`` (against the link's payload
limit at 4 KiB MTU), ``delivered_ok`` (both regions equal their sources, one successful
completion each), ``wall_s``.
Target: ``small_fct_us`` <= 3 base RTTs + the small write's serialization, and the big write at
>= 95 % of the link.
"""
from __future__ import annotations

from ._common import baseline_params, endpoint_cfg, parse_size, payload_rate, two_hosts

HELP = "a 4 KiB write on stream 1 posted right after a 64 MiB write on stream 0: its completion time"

LINK, RTT = 400e9, 10e-6


def add_arguments(p):
    p.add_argument("--big", default="64Mi", help="bytes of the write on stream 0 (default 64Mi)")
    p.add_argument("--small", default="4Ki", help="bytes of the write on stream 1 (default 4Ki)")
    p.add_argument("--small-at", type=float, default=0.0,
                   help="us after the big write that the small one is posted (default 0: right after)")
    p.add_argument("--paths", type=int, default=8, help="MetaRoCE paths per connection (default 8)")
    p.add_argument("--protocols", default="metaroce,rocev2")
    p.add_argument("--seed", type=int, default=1)


def one_run(job):
    import time

    import numpy as np

    proto = job["protocol"]
    fab, s, d, c = two_hosts(proto, link_bps=LINK, rtt=RTT, seed=job["seed"], paths=job["paths"],
                             streams=2)
    rng = np.random.default_rng(job["seed"])
    sizes = (job["big"], job["small"])
    srcs = [bytearray(rng.bytes(n)) for n in sizes]
    dsts = [bytearray(n) for n in sizes]
    lkeys = [s.ep.reg_mr(b) for b in srcs]
    rkeys = [d.ep.reg_mr(b) for b in dsts]
    done = {}
    unexpected = [0]

    def on_completion(host, t, comp):
        if host is not s or comp.wr_id not in (0, 1) or comp.wr_id in done or int(comp.status):
            unexpected[0] += 1
            return
        done[comp.wr_id] = t
        if len(done) == 2:
            fab.sim.stop()

    for h in (s, d):
        h.on_completion = on_completion

    def post(stream):
        c.post_write(stream, lkeys[stream], 0, sizes[stream], 0, rkeys[stream], wr_id=stream)
        s.kick()

    t_small0 = job["small_at"] * 1e-6
    fab.sim.at(0.0, post, 0)
    fab.sim.at(t_small0, post, 1)
    t0 = time.perf_counter()
    fab.sim.run(until=1.0)
    wall = time.perf_counter() - t0
    fab.sim.run(until=fab.sim.now + 4 * RTT)       # duplicate completions would show here
    ok = (len(done) == 2 and unexpected[0] == 0
          and all(bytes(a) == bytes(b) for a, b in zip(srcs, dsts)))
    t_big = done.get(0)
    t_small = done[1] - t_small0 if 1 in done else None
    big_gbps = sizes[0] * 8 / t_big / 1e9 if t_big else 0.0
    return {"protocol": proto, "small_fct_us": t_small * 1e6 if t_small else None,
            "base_rtt_us": RTT * 1e6,
            "small_fct_rtts": t_small / RTT if t_small else None,
            "big_goodput_gbps": big_gbps,
            "big_vs_payload_rate": big_gbps * 1e9 / payload_rate(LINK, 4096),
            "delivered_ok": ok, "wall_s": round(wall, 3)}


def run(args, ui):
    from metaroce.cli import CliError
    try:
        big, small = parse_size(args.big), parse_size(args.small)
    except ValueError as e:
        raise CliError(str(e)) from None
    if big < 1 or small < 1:
        raise CliError("--big and --small must be at least 1 byte")
    if args.small_at < 0:
        raise CliError("--small-at must be >= 0")
    if not 1 <= args.paths <= 256:
        raise CliError("--paths must be 1..256")
    protos = [p.strip() for p in args.protocols.split(",") if p.strip()]
    bad = [p for p in protos if p not in ("metaroce", "rocev2")]
    if bad or not protos:
        raise CliError(f"--protocols: metaroce and/or rocev2, got {args.protocols!r}")
    jobs = [{"protocol": p, "big": big, "small": small, "paths": args.paths, "seed": args.seed,
             "small_at": args.small_at}
            for p in protos]
    rows = ui.map(one_run, jobs, label="streams runs")
    target_us = 3 * RTT * 1e6 + (small + 114) * 8 / LINK * 1e6
    return {"rows": rows,
            "title": f"bench streams: {small} B write on stream 1 right after a {big} B write on "
                     f"stream 0, 400 Gb/s, 10 us",
            "params": {"fabric": {"link_gbps": 400, "rtt_us": 10, "topology": "2 hosts, 1 switch"},
                       "endpoint_config": {p: endpoint_cfg(p, LINK, RTT) for p in protos},
                       **({"rocev2_baseline": baseline_params(LINK, RTT)} if "rocev2" in protos else {})},
            "summary": {"target_small_fct_us": round(target_us, 3), "target_big_vs_payload_rate": 0.95}}
