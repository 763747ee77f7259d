"""``metaroce transfer``: move a buffer between two processes over loopback UDP (MR-UDP-*).

The sender (this process) and a receiver subprocess (``python -m metaroce.sim.udp --role recv``)
each run a MetaRoCE endpoint over :class:`metaroce.sim.udp.UdpHost`. The sender registers a
seeded random buffer and posts one RDMA write of it to the receiver's registered memory; data
frames are dropped at the sender with probability ``--loss``. When the write completes, the sender
asks the receiver for the SHA-256 of its memory and compares. The run is bounded by ``--timeout``
and the subprocess is always reaped.
"""
import hashlib
import json
import os
import select
import subprocess
import sys
import time

HELP = "move a buffer between two processes over loopback UDP with injected loss"


def add_arguments(p):
    p.add_argument("--bytes", default="64Mi",
                   help="buffer size: an integer with an optional Ki/Mi/Gi suffix (default 64Mi)")
    p.add_argument("--loss", type=float, default=0.0, help="data frame loss at the sender, 0..<1")
    p.add_argument("--paths", type=int, default=8, help="paths (UDP source ports) 1..256")
    p.add_argument("--seed", type=int, default=1, help="seed of the buffer and the loss draws")
    p.add_argument("--mtu", type=int, default=4096, help="payload bytes per packet (default 4096)")
    p.add_argument("--protocol", choices=["metaroce", "rocev2"], default="metaroce",
                   help="endpoint kind at both ends (default metaroce; rocev2 is the go-back-N baseline)")
    p.add_argument("--timeout", type=float, default=300.0, help="give up after this many seconds")
    p.add_argument("--pcap", metavar="FILE",
                   help="write the sender's datagrams (sent and received) as Ethernet frames to a pcap")
    p.add_argument("--endpoint-config", metavar="JSON", default=None,
                   help="extra endpoint keyword arguments as a JSON object (both ends)")
    p.add_argument("--json", action="store_true", help="print one JSON object")


_SUFFIX = {"": 1, "k": 1000, "ki": 1024, "m": 1000 ** 2, "mi": 1024 ** 2, "g": 1000 ** 3, "gi": 1024 ** 3}


def parse_size(text):
    s = str(text).strip().lower().removesuffix("b")
    num = s.rstrip("kmgi")
    suf = s[len(num):]
    if not num.isdigit() or suf not in _SUFFIX:
        raise ValueError(f"bad size {text!r} (examples: 4096, 64Mi, 1Gi)")
    return int(num) * _SUFFIX[suf]


def endpoint_config(mtu, protocol="metaroce"):
    """Endpoint configuration for a software host on loopback. A Python endpoint handles some
    thousands of packets per second, so round trips are milliseconds (mostly the receiver's
    queue), not the fabric's microseconds: a modest line rate and base RTT, and a timer cap of
    50 ms instead of 1 ms (with the 1 ms cap every RTT above it is a spurious timeout). The
    RoCEv2 baseline gets an ACK timeout of 4.096 us x 2^12 = 16.8 ms for the same reason."""
    if protocol == "rocev2":
        return {"kind": "rocev2", "mtu": mtu, "line_rate_bps": 1e9, "base_rtt": 200e-6, "timeout_exp": 12}
    return {"mtu": mtu, "line_rate_bps": 1e9, "base_rtt": 200e-6, "rto_max": 0.05}


def _read_line(proc, deadline):
    buf = b""
    fd = proc.stdout.fileno()
    while not buf.endswith(b"\n"):
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("receiver did not answer in time")
        r, _, _ = select.select([fd], [], [], left)
        if r:
            chunk = os.read(fd, 65536)
            if not chunk:
                lines = proc.stderr.read().decode(errors="replace").strip().splitlines()
                raise RuntimeError("receiver exited: " + (lines[-1] if lines else f"status {proc.wait()}"))
            buf += chunk
    return json.loads(buf.decode().strip().splitlines()[-1])


def transfer(nbytes, *, loss=0.0, paths=8, seed=1, mtu=4096, timeout=300.0, progress=None, extra_cfg=None,
             pcap_path=None, protocol="metaroce"):
    """Run one transfer; returns the result dict (``ok``, ``bytes``, ``sha256_match``, ...)."""
    import numpy as np

    from metaroce.sim.udp import LOOPBACK, UdpHost, make_endpoint

    cfg = dict(endpoint_config(mtu, protocol), **(extra_cfg or {}))
    probe = dict(cfg)
    make_endpoint(probe.pop("kind", "metaroce"), **probe)     # a bad key fails here, not in the child
    t_start = time.monotonic()
    deadline = t_start + timeout
    proc = subprocess.Popen(
        [sys.executable, "-m", "metaroce.sim.udp", "--role", "recv", "--bytes", str(nbytes),
         "--paths", str(paths), "--config", json.dumps(cfg), "--timeout", str(timeout)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    host = None
    pcap_fh = None
    try:
        hello = _read_line(proc, deadline)
        data = bytearray(np.random.default_rng(seed).bytes(nbytes))
        local_cfg = dict(cfg)
        ep = make_endpoint(local_cfg.pop("kind", "metaroce"), **local_cfg)
        lkey = ep.reg_mr(data)
        conn = ep.connect(1, LOOPBACK, 2, paths=paths)
        host = UdpHost(ep, peer_port=hello["port"], loss=loss, seed=seed)
        if pcap_path:
            from metaroce.models.pcap import Writer
            pcap_fh = open(pcap_path, "wb")
            host.pcap = Writer(pcap_fh)
        proc.stdin.write((json.dumps({"port": host.port}) + "\n").encode())
        proc.stdin.flush()
        t0 = time.monotonic()
        conn.post_write(0, lkey, 0, nbytes, hello["va"], hello["rkey"], wr_id=1)
        timed_out = False
        while not host.completions:
            host.step()
            if progress is not None:
                progress(ep)
            if time.monotonic() > deadline:
                timed_out = True
                break
        seconds = time.monotonic() - t0
        proc.stdin.write(b"done\n")
        proc.stdin.flush()
        report = _read_line(proc, time.monotonic() + 30)
        comps = host.completions
        ok_status = len(comps) == 1 and comps[0].wr_id == 1 and _status_ok(comps[0].status)
        match = report["sha256"] == hashlib.sha256(data).hexdigest()
        st = getattr(ep, "stats", {})
        return {
            "ok": bool(match and ok_status and not timed_out),
            "bytes": nbytes,
            "sha256_match": match,
            "seconds": round(seconds, 4),
            "packets": host.stats["tx"] + host.stats["loss_drops"] + host.stats["send_drops"],
            "retransmitted": int(st.get("retransmitted", 0)),
            "loss": loss,
            "paths": paths,
            "protocol": protocol,
            "mtu": mtu,
            "goodput_mbps": round(nbytes * 8 / seconds / 1e6, 1) if seconds > 0 else None,
            "timed_out": timed_out,
            "completions": len(comps),
            "sender": {"loss_drops": host.stats["loss_drops"], "send_drops": host.stats["send_drops"],
                       "frames_received": host.stats["rx"], "decode_drops": host.stats["decode_drops"],
                       "endpoint": {k: v for k, v in st.items() if isinstance(v, (int, float))}},
            "receiver": {"completions": len(report["completions"]), "rx": report["transport"]["rx"],
                         "decode_drops": report["transport"]["decode_drops"]},
        }
    finally:
        if pcap_fh is not None:
            pcap_fh.close()
        if host is not None:
            host.close()
        if proc.poll() is None:
            try:
                proc.stdin.close()
            except OSError:
                pass
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        for fh in (proc.stdout, proc.stderr):
            fh.close()


def _status_ok(status):
    v = getattr(status, "value", status)
    return v in (0, "ok", "OK", "success", "SUCCESS") or str(status).lower().endswith(("ok", "success"))


def run(args):
    from ..cli import CliError

    try:
        nbytes = parse_size(args.bytes)
    except ValueError as e:
        raise CliError(str(e)) from None
    if nbytes <= 0 or nbytes > 1 << 32:
        raise CliError(f"--bytes must be between 1 and 4Gi, not {nbytes}")
    if not 0.0 <= args.loss < 1.0:
        raise CliError(f"--loss must be in [0, 1), not {args.loss}")
    if not 1 <= args.paths <= 256:
        raise CliError(f"--paths must be 1..256, not {args.paths}")
    if not 256 <= args.mtu <= 8192:
        raise CliError(f"--mtu must be 256..8192, not {args.mtu}")
    if args.protocol == "rocev2" and args.mtu not in (256, 512, 1024, 2048, 4096):
        raise CliError("--protocol rocev2 needs --mtu 256, 512, 1024, 2048 or 4096")
    if args.timeout <= 0:
        raise CliError("--timeout must be positive")
    extra = None
    if args.endpoint_config:
        try:
            extra = json.loads(args.endpoint_config)
        except ValueError:
            raise CliError("--endpoint-config is not valid JSON") from None
        if not isinstance(extra, dict):
            raise CliError("--endpoint-config must be a JSON object")
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    err = Console(stderr=True)
    with Progress(TextColumn("transfer"), BarColumn(), TextColumn("{task.percentage:>3.0f}%"),
                  TimeElapsedColumn(), console=err, transient=True,
                  disable=not err.is_terminal) as bar:
        task = bar.add_task("transfer", total=nbytes)

        def progress(ep):
            # New data packets sent so far (an estimate: the endpoint does not expose acked bytes).
            st = ep.stats
            sent = (st.get("data_packets_sent", 0) - st.get("retransmitted", 0)) * args.mtu
            bar.update(task, completed=min(sent, nbytes))

        try:
            res = transfer(nbytes, loss=args.loss, paths=args.paths, seed=args.seed, mtu=args.mtu,
                           timeout=args.timeout, progress=progress, extra_cfg=extra, pcap_path=args.pcap,
                           protocol=args.protocol)
        except (TimeoutError, RuntimeError) as e:
            raise CliError(str(e)) from None
        except TypeError as e:
            raise CliError(f"--endpoint-config: {e}") from None
    if args.json:
        print(json.dumps(res))
    else:
        from rich.table import Table
        t = Table(title="metaroce transfer (loopback UDP, two processes)")
        for k in ("ok", "bytes", "sha256_match", "seconds", "goodput_mbps", "packets", "retransmitted",
                  "loss", "paths"):
            t.add_column(k)
        t.add_row(*(str(res[k]) for k in ("ok", "bytes", "sha256_match", "seconds", "goodput_mbps",
                                          "packets", "retransmitted", "loss", "paths")))
        Console().print(t)
    return 0 if res["ok"] else 1
