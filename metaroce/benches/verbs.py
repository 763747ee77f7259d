"""``bench verbs``: RDMA READ goodput against WRITE goodput, MetaRoCE vs RoCEv2, under loss.

Two hosts through one switch (400 Gb/s, 10 us base RTT, 4 KiB MTU). Host 0 posts one ``--bytes``
READ of host 1's memory, or one WRITE of the same size to it. Loss hits data frames (WRITE data,
READ responses) on both hosts' links, so each operation sees it on the link its data crosses.
Rows: ``protocol``, ``op`` (read or write), ``loss``, ``goodput_gbps`` (bytes x 8 over posting to
the requester's completion), ``read_vs_write`` (READ goodput over WRITE goodput, same protocol
and loss), ``retransmitted`` (packets resent by either end, READ re-issues included),
``delivered_ok`` (destination equals the source, one successful completion), ``wall_s``
(MR-VERB-001..003, MR-GBN-020..022).
"""
from __future__ import annotations

from ._common import baseline_params, endpoint_cfg, parse_list, parse_size, two_hosts

HELP = "READ vs WRITE goodput under loss, MetaRoCE vs RoCEv2 (400 Gb/s, 10 us)"

LINK, RTT = 400e9, 10e-6


def add_arguments(p):
    p.add_argument("--bytes", default="16Mi", help="bytes of the READ / WRITE (default 16Mi)")
    p.add_argument("--losses", default="0,0.01", help="comma-separated data loss fractions (default 0,0.01)")
    p.add_argument("--paths", type=int, default=8, help="MetaRoCE paths per connection (default 8)")
    p.add_argument("--protocols", default="metaroce,rocev2")
    p.add_argument("--seed", type=int, default=1)


def one_run(job):
    import time

    import numpy as np

    proto, op, loss, n = job["protocol"], job["op"], job["loss"], job["bytes"]
    fab, s, d, c = two_hosts(proto, link_bps=LINK, rtt=RTT, seed=job["seed"], paths=job["paths"],
                             streams=1, loss=loss)
    rng = np.random.default_rng(job["seed"])
    src = bytearray(rng.bytes(n))
    dst = bytearray(n)
    if op == "read":            # host 0 reads host 1's src into its dst
        lkey, rkey = s.ep.reg_mr(dst), d.ep.reg_mr(src)
    else:
        lkey, rkey = s.ep.reg_mr(src), d.ep.reg_mr(dst)
    done = {}
    unexpected = [0]

    def on_completion(host, t, comp):
        if host is not s or comp.wr_id != 7 or done or int(comp.status):
            unexpected[0] += 1
            return
        done[7] = t
        fab.sim.stop()

    for h in (s, d):
        h.on_completion = on_completion

    def post(_):
        if op == "read":
            c.post_read(0, lkey, 0, n, 0, rkey, wr_id=7)
        else:
            c.post_write(0, lkey, 0, n, 0, rkey, wr_id=7)
        s.kick()

    fab.sim.at(0.0, post, None)
    t0 = time.perf_counter()
    fab.sim.run(until=job.get("until", 5.0))
    wall = time.perf_counter() - t0
    fab.sim.run(until=fab.sim.now + 4 * RTT)
    ok = len(done) == 1 and unexpected[0] == 0 and bytes(src) == bytes(dst)
    t = done.get(7)
    st = s.ep.stats + d.ep.stats
    return {"protocol": proto, "op": op, "loss": loss, "goodput_gbps": n * 8 / t / 1e9 if t else 0.0,
            "read_vs_write": None,
            "retransmitted": int(st.get("retransmitted", 0) + st.get("probes_sent", 0)),
            "delivered_ok": ok, "wall_s": round(wall, 3)}


def run(args, ui):
    from metaroce.cli import CliError
    try:
        n = parse_size(args.bytes)
        losses = parse_list(args.losses)
    except ValueError as e:
        raise CliError(str(e)) from None
    if n < 1:
        raise CliError("--bytes must be at least 1")
    if any(not 0 <= x < 1 for x in losses):
        raise CliError("--losses must be fractions in [0, 1)")
    if not 1 <= args.paths <= 256:
        raise CliError("--paths must be 1..256")
    protos = [p.strip() for p in args.protocols.split(",") if p.strip()]
    bad = [p for p in protos if p not in ("metaroce", "rocev2")]
    if bad or not protos:
        raise CliError(f"--protocols: metaroce and/or rocev2, got {args.protocols!r}")
    jobs = [{"protocol": p, "op": op, "loss": x, "bytes": n, "paths": args.paths, "seed": args.seed}
            for x in losses for p in protos for op in ("read", "write")]
    rows = ui.map(one_run, jobs, label="verbs runs")
    good = {(r["protocol"], r["op"], r["loss"]): r["goodput_gbps"] for r in rows}
    for r in rows:
        w = good.get((r["protocol"], "write", r["loss"]))
        if r["op"] == "read":
            r["read_vs_write"] = r["goodput_gbps"] / w if w else None
    summary = {}
    for x in losses:
        m, rv = good.get(("metaroce", "read", x)), good.get(("rocev2", "read", x))
        if m and rv:
            summary[f"read_loss{x:g}_metaroce_over_rocev2"] = m / rv
    return {"rows": rows,
            "title": f"bench verbs: one {n} B READ or WRITE, 400 Gb/s, 10 us, 2 hosts through one switch",
            "columns": ["protocol", "op", "loss", "goodput_gbps", "read_vs_write", "retransmitted",
                        "delivered_ok", "wall_s"],
            "params": {"fabric": {"link_gbps": 400, "rtt_us": 10, "topology": "2 hosts, 1 switch",
                                  "loss_on": "data frames on both hosts' links"},
                       "endpoint_config": {p: endpoint_cfg(p, LINK, RTT) for p in protos},
                       **({"rocev2_baseline": baseline_params(LINK, RTT)} if "rocev2" in protos else {})},
            "summary": summary}
