"""The connection handshake (models/handshake.py, docs/spec/security.md MR-CONN-100..107)."""
import copy
from dataclasses import replace

import pytest

from metaroce.models import codec, wire
from metaroce.models.codec import decode, encode
from metaroce.models.handshake import Client, Config, HandshakeError, Server, random_psn, random_qpn
from metaroce.models.wire import Op, RejectReason

PSK = b"0123456789abcdef0123456789abcdef"


def w(f):
    """Through the wire: encode, decode with the ICRC checked."""
    return decode(encode(copy.deepcopy(f)))


def connect(ccfg=Config(), scfg=Config()):
    c, s = Client(ccfg), Server(scfg)
    acc = s.receive(w(c.start(0.0)), 0.0)
    return c, s, acc


def test_establish():
    """MR-CONN-100, MR-CONN-101, MR-CONN-102, MR-CONN-103, MR-WIRE-078, MR-WIRE-079: request and
    accept cross the wire; both sides agree on QPNs, initial PSNs, the minimum paths and MTU, the
    mode and the master secret; their channels interoperate."""
    c, s, acc = connect(Config(paths=8, mtu=4096), Config(paths=4, mtu=1024))
    assert acc.bth.opcode == Op.MR_CONN_ACC and acc.bth.dest_qp == c.qpn and len(acc.payload) == wire.MRKX_LEN
    sc = c.receive(w(acc), 0.0)
    ss = s.new_sessions[0]
    assert c.state == "established"
    assert (sc.local_qpn, sc.peer_qpn, sc.local_psn, sc.peer_psn) == \
        (ss.peer_qpn, ss.local_qpn, ss.peer_psn, ss.local_psn)
    assert (sc.paths, sc.mtu, ss.paths, ss.mtu) == (4, 1024, 4, 1024)
    assert sc.master == ss.master and len(sc.master) == 32 and (sc.direction, ss.direction) == (0, 1)
    f = codec.make(Op.MR_ACK, mrah=codec.MRAH(path=3))
    assert ss.channel().open(w(sc.channel().seal(f))).mrah == f.mrah
    assert sc.channel().open(w(ss.channel().seal(f))).mrah == f.mrah


def test_sessions_differ():
    """MR-CONN-102, MR-CONN-107: every handshake has fresh keys, QPNs and PSNs."""
    masters = set()
    for _ in range(4):
        c, s, acc = connect()
        masters.add(c.receive(w(acc), 0.0).master)
    assert len(masters) == 4
    qpns = {random_qpn() for _ in range(2000)}
    assert len(qpns) > 1990 and all(0 < q < 1 << 24 for q in qpns)
    psns = {random_psn() for _ in range(2000)}
    assert len(psns) > 1990 and max(psns) >= 1 << 23


def test_forged_accept_is_ignored():
    """MR-CONN-104, MR-SEC-102: an accept replayed from another handshake (its QPN rewritten to
    the client's) or a real accept with a changed field fails the confirm and is ignored, and the
    real one still establishes the connection. Without a PSK an on-path attacker who saw the
    request can complete a handshake of its own (unauthenticated Diffie-Hellman, as the threat
    model says); with a PSK it cannot (test_pre_shared_key)."""
    c, s, acc = connect()
    _, _, old = connect()
    replayed = replace(old, mrch=replace(old.mrch, dst_qpn=c.qpn), bth=replace(old.bth, dest_qp=c.qpn))
    assert c.receive(w(replayed), 0.0) is None and c.state == "requesting"
    changed = replace(acc, mrch=replace(acc.mrch, init_psn=(acc.mrch.init_psn + 1) % (1 << 24)))
    assert c.receive(w(changed), 0.0) is None
    assert c.ignored["bad_confirm"] == 2
    assert c.receive(w(acc), 0.0) is not None and c.state == "established"
    c2 = Client(Config())
    req = c2.start(0.0)
    assert c2.receive(w(Server(Config()).receive(w(req), 0.0)), 0.0) is not None     # the documented limit


def test_retransmitted_and_replayed_request():
    """MR-CONN-105: a retransmitted request (same nonce, next attempt) gets the same accept and no
    new session; once the connection is closed the same request is a replay and is rejected."""
    c = Client(Config())
    s = Server(Config())
    req = c.start(0.0)
    acc1 = s.receive(w(req), 0.0)
    assert c.poll(0.1) is None
    req2 = c.poll(0.25)
    assert req2.mrch.attempt == 1 and req2.mrch.nonce == req.mrch.nonce
    acc2 = s.receive(w(req2), 0.25)
    assert acc2.mrch.attempt == 1 and acc2.mrch.src_qpn == acc1.mrch.src_qpn and acc2.payload == acc1.payload
    assert len(s.sessions) == 1
    assert c.receive(w(acc2), 0.3) is not None             # the retry's accept verifies
    s.close(acc1.mrch.src_qpn)
    rej = s.receive(w(req), 1.0)
    assert rej.bth.opcode == Op.MR_CONN_REJ and rej.mrch.reason == RejectReason.REPLAY
    assert not s.sessions and s.rejects["replay"] == 1


def test_retries_then_timeout():
    """MR-CONN-105: without an answer the client resends max_attempts - 1 times, then fails."""
    c = Client(Config(max_attempts=3, timeout=0.5))
    c.start(0.0)
    assert c.poll(0.6).mrch.attempt == 1
    assert c.poll(1.2).mrch.attempt == 2
    with pytest.raises(HandshakeError, match="timed out after 3 attempts"):
        c.poll(1.8)
    assert c.state == "failed"


def test_pre_shared_key():
    """MR-CONN-103, MR-CONN-104: with a PSK on both sides the handshake succeeds; a server with a
    PSK rejects a request without it (bad_confirm); a man in the middle with another PSK cannot
    make an accept the client takes."""
    c, s, acc = connect(Config(psk=PSK), Config(psk=PSK))
    assert c.receive(w(acc), 0.0) is not None
    c2, s2, rej = connect(Config(), Config(psk=PSK))
    assert rej.bth.opcode == Op.MR_CONN_REJ and rej.mrch.reason == RejectReason.BAD_CONFIRM
    with pytest.raises(HandshakeError) as e:
        c2.receive(w(rej), 0.0)
    assert e.value.reason == RejectReason.BAD_CONFIRM
    c3 = Client(Config(psk=PSK))
    mitm = Server(Config(psk=b"x" * 32))
    req = c3.start(0.0)
    assert mitm.receive(w(req), 0.0).bth.opcode == Op.MR_CONN_REJ        # it cannot even accept
    no_psk_mitm = Server(Config())
    forged = no_psk_mitm.receive(w(replace(req, payload=req.payload)), 0.0)
    assert c3.receive(w(forged), 0.0) is None and c3.ignored["bad_confirm"] == 1


@pytest.mark.parametrize("ccfg, scfg, reason", [
    (Config(auth=True), Config(auth=False), RejectReason.AUTH_MISMATCH),
    (Config(auth=True, encrypt=True), Config(auth=True), RejectReason.AUTH_MISMATCH),
    (Config(max_conns=1), Config(max_conns=0 + 1), None),
])
def test_rejects(ccfg, scfg, reason):
    """MR-CONN-106: a mode mismatch is rejected with its reason, and the client fails with it."""
    c, s, ans = connect(ccfg, scfg)
    if reason is None:
        assert ans.bth.opcode == Op.MR_CONN_ACC
        c2 = Client(ccfg)
        ans = s.receive(w(c2.start(0.0)), 0.0)
        reason, c = RejectReason.NO_RESOURCES, c2
    assert ans.bth.opcode == Op.MR_CONN_REJ and ans.mrch.reason == reason and not ans.payload
    with pytest.raises(HandshakeError, match=reason.name.lower()):
        c.receive(w(ans), 0.0)


def test_bad_params_and_mismatched_reject():
    """MR-CONN-106: paths 0 or an MTU below 256 are bad parameters; a reject that does not echo
    the pending request's nonce is ignored (an off-path attacker cannot end the handshake)."""
    s = Server(Config())
    c = Client(Config())
    req = c.start(0.0)
    for bad in (dict(paths=0), dict(mtu=100)):
        g = replace(req, mrch=replace(req.mrch, nonce=req.mrch.nonce + 1 + len(bad), **bad))
        assert s.receive(w(g), 0.0).mrch.reason == RejectReason.BAD_PARAMS
    rej = s.receive(w(replace(req, mrch=replace(req.mrch, paths=0, nonce=7))), 0.0)
    assert c.receive(w(rej), 0.0) is None and c.ignored["reject_mismatch"] == 1 and c.state == "requesting"


# ---------------------------------------------------------------------------------------------
# The handshake through the simulated fabric (MR-CONN-108)

def _fabric(loss=0.0, n=4):
    from metaroce.sim.faults import Faults
    from metaroce.sim.topology import Fabric
    fab = Fabric(n, rate_bps=100e9, rtt=4e-6)
    if loss:
        fab.set_faults(Faults(loss=loss, direction="both", seed=3))
    return fab


@pytest.mark.parametrize("auth", [False, True])
def test_fabric_connects_through_handshake_with_loss(auth):
    """MR-CONN-108, MR-CONN-105, MR-CONN-107: with 20 % loss on every frame of every link, the
    harness opens each flow's connection by the handshake carried through the fabric (lost
    requests and accepts are resent), both ends agree on the random QPNs and initial PSNs, the
    endpoints' connections use them, and every write is delivered intact."""
    from metaroce.sim.harness import Flow, run_writes
    fab = _fabric(loss=0.2)
    flows = [Flow(0, 1, 256 << 10, paths=4), Flow(2, 1, 128 << 10, paths=2, start=5e-6),
             Flow(1, 3, 64 << 10, paths=8)]
    res = run_writes(fab, flows, until=0.05, handshake={"auth": auth}, seed=2)
    assert res.delivered_ok and res.all_done
    assert res.stats["handshakes_established"] == 3 and res.stats["handshakes_failed"] == 0
    clients = [(t, s, c) for h in fab.hosts for t, role, s, c in h.ep.connected if role == "client"]
    servers = {(s.local_qpn, s.peer_qpn): (s, c) for h in fab.hosts
               for _, role, s, c in h.ep.connected if role == "server"}
    assert len(clients) == 3 and len(servers) == 3
    for _, s, c in clients:
        ss, sc = servers[(s.peer_qpn, s.local_qpn)]
        assert (s.local_psn, s.peer_psn) == (ss.peer_psn, ss.local_psn) and s.paths == ss.paths
        assert (c.local_id, c.peer_id, c.init_psn, c.peer_init_psn) == \
            (s.local_qpn, s.peer_qpn, s.local_psn, s.peer_psn)
        assert (sc.init_psn, sc.peer_init_psn) == (ss.local_psn, ss.peer_psn)
        assert s.auth == auth
    # the loss cost retries: some connection took longer than one handshake timeout
    assert max(t for t, _, _ in clients) > 20e-6
    assert sorted(s.paths for _, s, _ in clients) == [2, 4, 8]


def test_fabric_handshake_reject_and_timeout():
    """MR-CONN-108, MR-CONN-106, MR-CONN-105: through the fabric, a client that requires
    authentication is rejected AUTH_MISMATCH by a server that refuses it, and a client whose peer
    does not listen fails "handshake timed out" after max_attempts timeouts; no connection is
    opened on either side."""
    import random as _random

    from metaroce.models.endpoint import Endpoint
    from metaroce.models.handshake import HandshakeHost
    fab = _fabric()
    eps = [HandshakeHost(Endpoint(h.addr, mtu=1024, line_rate_bps=100e9, base_rtt=4e-6), auth=a,
                         listen=listen, timeout=10e-6, max_attempts=3, rng=_random.Random(i))
           for i, (h, a, listen) in enumerate(zip(fab.hosts, (True, False, True, True),
                                                  (True, True, True, False)))]
    for h, ep in zip(fab.hosts, eps):
        h.ep = ep
    eps[0].connect(fab.hosts[1].addr, paths=2)        # auth on -> auth off: rejected
    eps[2].connect(fab.hosts[3].addr, paths=2)        # nobody listens on host 3
    for h in fab.hosts:
        h.kick()
    fab.sim.run(until=1e-3)
    (t0, peer0, e0), = eps[0].failed
    assert peer0 == fab.hosts[1].addr and e0.reason == RejectReason.AUTH_MISMATCH and t0 < 10e-6
    (t2, peer2, e2), = eps[2].failed
    assert e2.reason is None and "timed out" in str(e2) and 3 * 10e-6 <= t2 < 4 * 10e-6
    assert eps[1].server.rejects["auth_mismatch"] == 1
    assert all(not ep.connected and not ep.ep._conns for ep in eps)


def test_seeded_handshake_is_reproducible():
    """MR-CONN-108: with a seeded generator, a simulation's QPNs, initial PSNs and nonces repeat
    from run to run (the X25519 keys do not, and need not)."""
    import random as _random
    a = Client(Config(), rng=_random.Random(7))
    b = Client(Config(), rng=_random.Random(7))
    assert (a.qpn, a.psn, a.nonce) == (b.qpn, b.psn, b.nonce)
    s1, s2 = Server(Config(), rng=_random.Random(9)), Server(Config(), rng=_random.Random(9))
    h1 = s1.receive(w(a.start(0.0)), 0.0).mrch
    h2 = s2.receive(w(b.start(0.0)), 0.0).mrch
    assert (h1.src_qpn, h1.init_psn, h1.nonce) == (h2.src_qpn, h2.init_psn, h2.nonce)
