"""``metaroce transfer``: move a buffer between two processes over loopback UDP (MR-UDP-*).

The sender (this process) and a receiver subprocess (``python -m metaroce.sim.udp --role recv``)
each run a MetaRoCE endpoint over :class:`metaroce.sim.udp.UdpHost`. The sender registers a
seeded random buffer and posts one RDMA write of it to the receiver's registered memory; data
frames are dropped at the sender with probability ``--loss``. When the write completes, the sender
asks the receiver for the SHA-256 of its memory and compares. The run is bounded by ``--timeout``
and the subprocess is always reaped. Each process holds one copy of the data (MR-UDP-010); every
failure is one line on stderr and a non-zero exit (MR-UDP-009).

The two processes connect with the handshake on the wire (MR-CONN-100..107): random QPNs and
initial PSNs, X25519 key agreement under a pre-shared key that the sender gives the receiver over
its stdin pipe. With ``--auth on`` (the default) every frame is sealed with AES-GCM and checked
before the endpoint sees it (MR-SEC-110/111/112, MR-SEC-120/121, MR-SEC-130/131, MR-SEC-140/141); ``--auth off`` is the unauthenticated,
RoCEv2-compatible mode and says so on stderr (MR-SEC-100).
"""
import hashlib
import json
import math
import os
import random
import secrets
import signal
import subprocess
import sys
import time

HELP = "move a buffer between two processes over loopback UDP with injected loss"

MAX_BYTES = (1 << 32) - 1       # a message's length is 32 bits on the wire (MRDH msg_len)
MAX_TIMEOUT = 1e6               # seconds; select() and deadlines need a finite number
_CHUNK = 1 << 18


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
    p.add_argument("--auth", choices=["on", "off"], default="on",
                   help="per-packet authentication with AES-GCM (default on); off is the "
                        "unauthenticated RoCEv2-compatible mode")
    p.add_argument("--encrypt", action="store_true", help="also encrypt payloads (needs --auth on)")
    p.add_argument("--json", action="store_true", help="print one JSON object")


_SUFFIX = {"": 1, "k": 1000, "ki": 1024, "m": 1000 ** 2, "mi": 1024 ** 2, "g": 1000 ** 3, "gi": 1024 ** 3}


def parse_size(text):
    s = str(text).strip().lower().removesuffix("b")
    num = s.rstrip("kmgi")
    suf = s[len(num):]
    if not num.isdigit() or suf not in _SUFFIX:
        raise ValueError(f"bad size {text!r} (examples: 4096, 64Mi, 1Gi)")
    return int(num) * _SUFFIX[suf]


def format_size(n):
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} bytes"


# MR-UDP-011: how long a loopback peer may make no progress before the work request fails.
# A process on a loaded machine can be descheduled for hundreds of milliseconds; a stall is
# not a lost network, so the bound is seconds (the endpoint's own default is 7 x rto_max).
LOOPBACK_STALL_S = 10.0
ROCEV2_LOOPBACK_TIMEOUT_EXP = 16        # 4.096 us x 2^16 = 268 ms; 8 tries: 2.1 s
HANDSHAKE_TRIES, HANDSHAKE_WAIT_S = 20, 0.5     # the handshake gives up after 10 s, not 5 x 0.2 s


def endpoint_config(mtu, protocol="metaroce"):
    """MR-UDP-011: endpoint configuration for a software host on loopback. A Python endpoint
    handles some thousands of packets per second, so round trips are milliseconds (mostly the
    receiver's queue), not the fabric's microseconds: a modest line rate and base RTT, and a
    timer cap of 50 ms instead of 1 ms (with the 1 ms cap every RTT above it is a spurious
    timeout). A work request fails only after ``LOOPBACK_STALL_S`` without progress, not the
    endpoint's default 7 x 50 ms, which a descheduled receiver exceeds on a loaded machine. The
    RoCEv2 baseline's ACK timeout is 4.096 us x 2^16 = 268 ms for the same reason (its
    ``retry_cnt`` of 7 consecutive timeouts is IBTA's and cannot grow)."""
    if protocol == "rocev2":
        return {"kind": "rocev2", "mtu": mtu, "line_rate_bps": 1e9, "base_rtt": 200e-6,
                "timeout_exp": ROCEV2_LOOPBACK_TIMEOUT_EXP}
    return {"mtu": mtu, "line_rate_bps": 1e9, "base_rtt": 200e-6, "rto_max": 0.05,
            "wr_timeout": LOOPBACK_STALL_S}


def make_data(nbytes, seed):
    """The seeded buffer, filled 256 KiB at a time into one bytearray: no second copy (MR-UDP-010).
    Raises ``MemoryError`` when it cannot be allocated."""
    data = bytearray(nbytes)
    view = memoryview(data)
    rng = random.Random(seed)
    for off in range(0, nbytes, _CHUNK):
        n = min(_CHUNK, nbytes - off)
        view[off:off + n] = rng.randbytes(n)
    view.release()
    return data


class ReceiverDied(RuntimeError):
    """The receiver subprocess ended before the transfer did (MR-UDP-009)."""


class _Receiver:
    """The receiver subprocess. Its end is an event: its stdout reaches end of file, which the
    sender's event loop watches, so a dead receiver is noticed at once, not at ``--timeout``."""

    def __init__(self, argv):
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE)
        self.fd = self.proc.stdout.fileno()
        self.buf = b""

    def died(self, when):
        """The :class:`ReceiverDied` to raise: exit status or signal, and its last stderr line."""
        try:
            code = self.proc.wait(timeout=30)       # a backstop: its output has already ended
        except subprocess.TimeoutExpired:
            return ReceiverDied(f"receiver stopped answering {when}")
        lines = self.proc.stderr.read().decode(errors="replace").strip().splitlines()
        if code < 0:
            try:
                how = f"killed by {signal.Signals(-code).name}"
            except ValueError:
                how = f"killed by signal {-code}"
        else:
            how = f"exit status {code}"
        return ReceiverDied(f"receiver exited {when} ({how})" + (f": {lines[-1]}" if lines else ""))

    def on_readable(self, when):
        chunk = os.read(self.fd, 65536)
        if not chunk:
            raise self.died(when)
        self.buf += chunk

    def read_json(self, deadline, when):
        import select
        while b"\n" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"receiver did not answer {when}")
            r, _, _ = select.select([self.fd], [], [], left)
            if r:
                self.on_readable(when)
        line, self.buf = self.buf.split(b"\n", 1)
        try:
            return json.loads(line)
        except ValueError:
            raise ReceiverDied(f"receiver sent something that is not JSON {when}") from None

    def send(self, text, when):
        try:
            self.proc.stdin.write(text.encode() + b"\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, ConnectionResetError):
            raise self.died(when) from None

    def close(self):
        p = self.proc
        if p.poll() is None:
            try:
                p.stdin.close()
            except OSError:
                pass
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        for fh in (p.stdin, p.stdout, p.stderr):
            try:
                fh.close()
            except OSError:
                pass


def _check_hello(hello):
    """The receiver's first line: its port, and the key and address of its buffer."""
    if not isinstance(hello, dict) or not all(isinstance(hello.get(k), int) for k in ("port", "rkey", "va")):
        raise ReceiverDied(f"receiver sent a malformed hello: {hello!r}")
    if not 0 < hello["port"] < 1 << 16:
        raise ReceiverDied(f"receiver sent port {hello['port']}")
    return hello


def handshake(host, rx, cfg, deadline):
    """MR-CONN-100..105: connect as the client over ``host``; returns the Session. Raises
    :class:`metaroce.models.handshake.HandshakeError` (rejected, or no answer after the retries)
    and ``TimeoutError`` at ``deadline``."""
    from metaroce.models import handshake as hs

    client = hs.Client(cfg)
    host.on_handshake = client.receive
    host.send_frame(client.start(host.now()))
    while client.session is None:
        if host.step(max_wait=0.01, extra_fds=(rx.fd,)):
            rx.on_readable("during the handshake")
        again = client.poll(host.now())
        if again is not None:
            host.send_frame(again)
        if time.monotonic() > deadline:
            raise TimeoutError("the handshake got no answer before --timeout")
    host.on_handshake = None        # late duplicates of the accept are dropped
    return client.session, client


def transfer(nbytes, *, loss=0.0, paths=8, seed=1, mtu=4096, timeout=300.0, progress=None, extra_cfg=None,
             pcap_path=None, protocol="metaroce", auth=True, encrypt=False, attack=None):
    """Run one transfer; returns the result dict (``ok``, ``bytes``, ``sha256_match``, ...).

    ``auth``/``encrypt``: the connection's mode (MR-SEC-100). ``attack``: optional callable
    ``attack(host)`` called once per event-loop round of the sender (tests drive hostile traffic
    with it). Raises ``ValueError`` for a bad configuration, ``MemoryError`` when the buffer
    cannot be allocated, :class:`ReceiverDied`, ``TimeoutError`` (the receiver does not answer),
    :class:`metaroce.models.handshake.HandshakeError` and
    :class:`metaroce.sim.udp.TransportError` (the peer is unreachable)."""
    from metaroce.models import handshake as hs
    from metaroce.models.security import AuthenticatedHost
    from metaroce.sim.udp import LOOPBACK, TransportError, UdpHost, make_endpoint, max_rss_kib, sockets_for

    cfg = dict(endpoint_config(mtu, protocol), **(extra_cfg or {}))
    local_cfg = dict(cfg)
    try:
        ep = make_endpoint(local_cfg.pop("kind", "metaroce"), **local_cfg)   # bad settings fail here
    except (TypeError, ValueError) as e:
        raise ValueError(f"endpoint configuration: {e}") from None
    data = make_data(nbytes, seed)          # before the receiver starts: no memory, no child
    t_start = time.monotonic()
    deadline = t_start + timeout
    try:
        pcap_fh = open(pcap_path, "wb") if pcap_path else None
    except OSError as e:
        raise OSError(f"cannot write {pcap_path}: {e.strerror}") from None
    rx = _Receiver([sys.executable, "-m", "metaroce.sim.udp", "--role", "recv", "--bytes", str(nbytes),
                    "--paths", str(paths), "--config", json.dumps(cfg), "--timeout", str(timeout)])
    host = None
    try:
        hello = _check_hello(rx.read_json(deadline, "before the transfer"))
        lkey = ep.reg_mr(data)
        host = UdpHost(ep, peer_port=hello["port"], loss=loss, seed=seed, max_sockets=sockets_for(paths))
        if pcap_fh is not None:
            from metaroce.models.pcap import Writer
            host.pcap = Writer(pcap_fh)
        # The pre-shared key goes over the pipe, which no other local process can read (MR-CONN-104).
        psk = secrets.token_bytes(32) if auth else None
        rx.send(json.dumps({"port": host.port, "auth": auth, "encrypt": encrypt,
                            "psk": psk.hex() if psk else None}), "before the transfer")
        session, client = handshake(host, rx, hs.Config(paths=paths, mtu=mtu, auth=auth, encrypt=encrypt, psk=psk,
                                              max_attempts=HANDSHAKE_TRIES, timeout=HANDSHAKE_WAIT_S),
                                    deadline)
        # MR-CONN-107: the handshake's random QPNs and initial PSNs
        # MR-SEC-153: an unauthenticated MetaRoCE connection proves receipt in its ACKs and NAKs
        proof = {"receipt_key": session.receipt_key()} if cfg.get("kind", "metaroce") == "metaroce" and not auth else {}
        conn = ep.connect(session.local_qpn, LOOPBACK, session.peer_qpn, paths=session.paths,
                          init_psn=session.local_psn, peer_init_psn=session.peer_psn, **proof)
        if auth:
            host.guard = AuthenticatedHost(ep, {session.local_qpn: (session.peer_qpn, session.channel())})
        t0 = time.monotonic()
        cpu0 = time.process_time()
        try:
            host.post_write(conn, 0, lkey, 0, nbytes, hello["va"], hello["rkey"], wr_id=1)
        except ValueError as e:
            raise ReceiverDied(f"receiver's buffer cannot be written: {e}") from None
        timed_out = False
        try:
            while not host.completions:
                if host.step(extra_fds=(rx.fd,)):
                    rx.on_readable("during the transfer")
                if progress is not None:
                    progress(ep)
                if attack is not None:
                    attack(host)
                if time.monotonic() > deadline:
                    timed_out = True
                    break
        except TransportError:
            # A closed peer port mostly means the receiver died: say so when it did.
            if rx.proc.poll() is not None or _exits_soon(rx.proc):
                raise rx.died("during the transfer") from None
            raise
        seconds = time.monotonic() - t0
        cpu = time.process_time() - cpu0
        rx.send("done", "after the transfer")
        report = rx.read_json(time.monotonic() + 30, "after the transfer")
        comps = host.completions
        ok_status = len(comps) == 1 and comps[0].wr_id == 1 and _status_ok(comps[0].status)
        match = report.get("sha256") == hashlib.sha256(data).hexdigest()
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
            "auth": "on" if auth else "off",
            "encrypt": bool(encrypt),
            "qpns": [session.local_qpn, session.peer_qpn],
            "handshake_attempts": client.attempt + 1,
            "sender_cpu_seconds": round(cpu, 3),
            "receiver_cpu_seconds": report.get("cpu_seconds"),
            "completions": len(comps),
            "status": _status_name(comps[0].status) if comps else None,
            "sender": {"loss_drops": host.stats["loss_drops"], "send_drops": host.stats["send_drops"],
                       "frames_received": host.stats["rx"], "decode_drops": host.stats["decode_drops"],
                       "auth_drops": dict(host.guard.drops) if host.guard is not None else {},
                       "sockets_open_max": host.stats["sockets_open_max"],
                       "max_rss_mib": round(max_rss_kib() / 1024, 1),
                       "endpoint": {k: v for k, v in st.items() if isinstance(v, (int, float))}},
            "receiver": {"completions": len(report["completions"]), "rx": report["transport"]["rx"],
                         "decode_drops": report["transport"]["decode_drops"],
                         "auth_drops": report["transport"].get("auth_drops", {}),
                         "sockets_open_max": report["transport"].get("sockets_open_max"),
                         "max_rss_mib": round(report.get("max_rss_kib", 0) / 1024, 1)},
        }
    finally:
        if pcap_fh is not None:
            pcap_fh.close()
        if host is not None:
            host.close()
        rx.close()


def _exits_soon(proc):
    """Whether the process ends within a short backstop (a killed receiver closes its sockets
    while it exits, so the sender may see the closed port a moment before the exit status)."""
    try:
        proc.wait(timeout=5)
        return True
    except subprocess.TimeoutExpired:
        return False


def _status_name(status):
    return getattr(status, "name", str(status))


def _status_ok(status):
    v = getattr(status, "value", status)
    return v in (0, "ok", "OK", "success", "SUCCESS") or str(status).lower().endswith(("ok", "success"))


def _check_args(args):
    """Every argument checked before anything starts (MR-UDP-009); returns the byte count."""
    from ..cli import CliError

    try:
        nbytes = parse_size(args.bytes)
    except ValueError as e:
        raise CliError(str(e)) from None
    if not 1 <= nbytes <= MAX_BYTES:
        raise CliError(f"--bytes must be between 1 and 4Gi - 1 (a message length is 32 bits), not {nbytes}")
    if not 0.0 <= args.loss < 1.0:             # also refuses NaN
        raise CliError(f"--loss must be in [0, 1), not {args.loss}")
    if not 1 <= args.paths <= 256:
        raise CliError(f"--paths must be 1..256, not {args.paths}")
    if not 256 <= args.mtu <= 8192:
        raise CliError(f"--mtu must be 256..8192, not {args.mtu}")
    if args.protocol == "rocev2" and args.mtu not in (256, 512, 1024, 2048, 4096):
        raise CliError("--protocol rocev2 needs --mtu 256, 512, 1024, 2048 or 4096")
    if not (math.isfinite(args.timeout) and 0 < args.timeout <= MAX_TIMEOUT):
        raise CliError(f"--timeout must be a number of seconds in (0, {MAX_TIMEOUT:g}], not {args.timeout}")
    if args.seed < 0:
        raise CliError(f"--seed must be 0 or more, not {args.seed}")
    if args.encrypt and args.auth == "off":
        raise CliError("--encrypt needs --auth on")
    return nbytes


def failure(res):
    """The one-line reason a finished transfer failed, or None when it succeeded."""
    if res["ok"]:
        return None
    if res["timed_out"]:
        return f"timed out after {res['seconds']} s without the write's completion"
    if res["completions"] != 1:
        return f"{res['completions']} completions for one write"
    if res["status"] is not None and not _status_ok(res["status"]):
        return f"the write completed with status {res['status']}"
    return "the receiver's memory does not match the data sent (SHA-256)"


def run(args):
    from ..cli import CliError
    from metaroce.models.handshake import HandshakeError
    from metaroce.sim.udp import TransportError

    nbytes = _check_args(args)
    if args.auth == "off":
        # MR-SEC-100: the unauthenticated mode is flagged wherever it is chosen.
        print("metaroce transfer: warning: --auth off: unauthenticated (RoCEv2-compatible) mode; "
              "any local process can forge frames", file=sys.stderr)
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
                           protocol=args.protocol, auth=args.auth == "on", encrypt=args.encrypt)
        except MemoryError:
            raise CliError(f"out of memory: --bytes {args.bytes} needs {format_size(nbytes)} for the buffer "
                           f"in each of the two processes, plus about 60 MiB each") from None
        except ValueError as e:
            raise CliError(str(e).replace("endpoint configuration: ", "--endpoint-config: ", 1)) from None
        except (TimeoutError, RuntimeError, TransportError, OSError, HandshakeError) as e:
            raise CliError(str(e) or type(e).__name__) from None
        except Exception as e:          # a bug: still one line (MR-UDP-009), with where it happened
            tb = e.__traceback__
            while tb.tb_next is not None:
                tb = tb.tb_next
            where = f"{os.path.basename(tb.tb_frame.f_code.co_filename)}:{tb.tb_lineno}"
            raise CliError(f"internal error: {type(e).__name__}: {e} ({where})") from None
    if args.json:
        print(json.dumps(res), flush=True)
    else:
        from rich.table import Table
        t = Table(title="metaroce transfer (loopback UDP, two processes)")
        cols = ("ok", "bytes", "sha256_match", "seconds", "goodput_mbps", "packets", "retransmitted",
                "loss", "paths", "auth")
        for k in cols:
            t.add_column(k)
        t.add_row(*(str(res[k]) for k in cols))
        Console().print(t)
    why = failure(res)
    if why is not None:
        print(f"metaroce transfer: error: {why}", file=sys.stderr)
        return 1
    return 0
