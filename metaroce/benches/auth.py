"""``bench auth``: what per-packet authentication costs (docs/spec/security.md, MR-SEC-110..112).

Three modes: ``off`` (plain frames), ``auth`` (AES-128-GCM tag over headers and payload) and
``encrypt`` (payload encrypted too). For each:

- ``seal_open_us``: CPU microseconds to seal and open one ``--mtu`` packet in this process
  (the `cryptography` package's AES-GCM, plus the model's framing);
- ``wire_overhead``: bytes on the wire per data packet relative to ``off`` (MRSEC + tag);
- ``sim_us``: completion time of one ``--bytes`` write in the in-memory fabric at 100 Gb/s
  (simulated time: the model does not charge the crypto's time, so it shows the wire overhead);
- ``udp_mbps``, ``sender_cpu_s``, ``receiver_cpu_s``, ``cpu_us_per_pkt``: one `metaroce transfer`
  over loopback (``--udp-bytes``; CPU seconds of the sender's transfer loop and of the whole
  receiver process). Loopback timing is noisy on a shared machine: compare CPU, not wall time.

Each mode runs at every ``--losses`` point (i.i.d. loss on data and on ACKs/NAKs alike, in the
simulation; on data at the UDP sender, as ``transfer --loss`` does), so the rows show the cost
of authentication under loss too; ``sim_vs_off`` is the mode's simulated goodput over ``off``'s
at the same loss.
"""
from __future__ import annotations

import os
import random
import time

HELP = "cost of per-packet authentication (AES-GCM): CPU per packet, wire overhead, transfer speed"


def add_arguments(p):
    p.add_argument("--bytes", default="8Mi", help="simulated write size (default 8Mi)")
    p.add_argument("--seeds", type=int, default=5, help="simulated runs per point, seeds 1..N (default 5)")
    p.add_argument("--udp-bytes", default="8Mi", help="loopback transfer size (default 8Mi; 0 skips it)")
    p.add_argument("--mtu", type=int, default=4096)
    p.add_argument("--packets", type=int, default=3000, help="packets for the seal/open measurement")
    p.add_argument("--losses", default="0,0.01,0.05",
                   help="comma-separated loss fractions, data and ACKs (default 0,0.01,0.05)")


def _seal_open_us(mode, mtu, packets):
    from metaroce.models.codec import MRDH, RETH, make
    from metaroce.models.security import SecureChannel
    from metaroce.models.wire import Op
    if mode == "off":
        return 0.0
    m = os.urandom(32)
    tx, rx = SecureChannel(m, 0, 8, encrypt=mode == "encrypt"), SecureChannel(m, 1, 8, encrypt=mode == "encrypt")
    f = make(Op.MR_WRITE, payload=os.urandom(mtu), mrdh=MRDH(path=1, msg_len=mtu), reth=RETH(0, 1, mtu))
    t = time.process_time()
    for _ in range(packets):
        rx.open(tx.seal(f))
    return (time.process_time() - t) / packets * 1e6


def _sim(mode, nbytes, mtu, loss=0.0, seed=1):
    from metaroce.models import codec
    from metaroce.models.endpoint import Endpoint
    from metaroce.models.loopback import Loopback
    from metaroce.models.security import AuthenticatedHost, SecureChannel
    kw = dict(mtu=mtu, line_rate_bps=100e9, base_rtt=4e-6)
    a, b = Endpoint("10.0.0.1", **kw), Endpoint("10.0.0.2", **kw)
    ca = a.connect(10, "10.0.0.2", 20, paths=8)
    b.connect(20, "10.0.0.1", 10, paths=8)
    src = bytearray(random.Random(1).randbytes(nbytes))
    dst = bytearray(nbytes)
    ca.post_write(0, a.reg_mr(src), 0, nbytes, 0, b.reg_mr(dst), wr_id=1)
    if mode != "off":
        m = os.urandom(32)
        enc = mode == "encrypt"
        a = AuthenticatedHost(a, {10: (20, SecureChannel(m, 0, 8, encrypt=enc))})
        b = AuthenticatedHost(b, {20: (10, SecureChannel(m, 1, 8, encrypt=enc))})
    sizes = []
    faults = None
    from metaroce.models.loopback import LoopFaults
    faults = LoopFaults(loss=loss, drop_if=lambda f, now: sizes.append(codec.wire_len(f)) and False)
    lb = Loopback(a, b, faults_ab=faults, faults_ba=LoopFaults(ctrl_loss=loss), seed=seed)
    lb.run(until=1.0)
    return lb.last_completion, dst == src, max(sizes)


def run(args, ui):
    from metaroce.cli import CliError
    from metaroce.commands.transfer import parse_size, transfer
    nbytes = parse_size(args.bytes)
    udp_bytes = parse_size(args.udp_bytes)
    try:
        losses = [float(x) for x in args.losses.split(",")]
    except ValueError:
        raise CliError(f"--losses: not a list of numbers: {args.losses!r}") from None
    if args.seeds < 1:
        raise CliError("--seeds must be at least 1")
    if not all(0 <= x < 1 for x in losses):
        raise CliError(f"--losses: each loss must be in [0, 1): {args.losses!r}")
    rows = []
    base_len = None
    for loss in losses:
        off_gbps = None
        for mode in ("off", "auth", "encrypt"):
            runs = [_sim(mode, nbytes, args.mtu, loss, seed) for seed in range(1, args.seeds + 1)]
            t = sum(r[0] for r in runs) / len(runs)
            ok = all(r[1] for r in runs)
            frame_len = max(r[2] for r in runs)
            base_len = base_len or frame_len
            gbps = nbytes * 8 / t / 1e9
            off_gbps = off_gbps or gbps
            row = {"mode": mode, "loss": loss,
                   "seal_open_us": _seal_open_us(mode, args.mtu, args.packets) if loss == losses[0] else None,
                   "wire_overhead": frame_len / base_len - 1, "sim_us": t * 1e6,
                   "sim_gbps": gbps, "sim_vs_off": gbps / off_gbps, "delivered_ok": ok}
            if udp_bytes:
                r = transfer(udp_bytes, loss=loss, paths=8, seed=1, mtu=args.mtu, timeout=300,
                             auth=mode != "off", encrypt=mode == "encrypt")
                pkts = r["packets"]
                row.update(udp_mbps=r["goodput_mbps"], sender_cpu_s=r["sender_cpu_seconds"],
                           receiver_cpu_s=r["receiver_cpu_seconds"],
                           cpu_us_per_pkt=r["sender_cpu_seconds"] / pkts * 1e6,
                           delivered_ok=ok and r["ok"])
            rows.append(row)
    return {"title": "per-packet authentication: cost", "rows": rows,
            "params": {"bytes": nbytes, "seeds": args.seeds, "udp_bytes": udp_bytes, "mtu": args.mtu, "aead": "AES-128-GCM",
                       "losses": losses},
            "notes": ["sim_us is simulated time (crypto not charged), mean over the seeds; udp columns are one loopback run",
                      "cpu_us_per_pkt: sender transfer-loop CPU per data packet sent",
                      "seal_open_us is measured once per mode (first loss point)"]}
