"""RX parser cycle model: verdicts and fields against the codec and scapy, line rate,
latency, backpressure and counters (docs/spec/hw-parser.md).

The model is checked here against independent references (codec, scapy); the RTL is
checked against the model cycle by cycle in tests/test_parser_amaranth.py.
"""
import random
import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from metaroce.hdl.parser import Parser
from metaroce.models.parser import META_LAYOUT, params
from metaroce.models import codec, wire
from metaroce.models import parser_cases as pc
from metaroce.models.parser import ParserModel, beats_of, pack_meta, unpack_meta, verdict
from metaroce.models.wire import Op, Reason

WIDTHS = [64, 128, 256, 512]


def test_port_names_and_meta_width():
    """MR-HW-002, MR-HW-010: the model's port list and the meta layout width."""
    names = ParserModel.port_names()
    assert "s_axis__tdata" in names["inputs"] and "m_meta__payload" in names["outputs"]
    assert set(names["inputs"]) & set(names["outputs"]) == set()
    assert META_LAYOUT.size == 1438
    out = ParserModel(64).step({})
    assert set(out) == set(names["outputs"])


@pytest.mark.parametrize("bad", [0, 32, 100, 1024, "512"])
def test_width_checked(bad):
    """MR-HW-001: the width is checked with ValueError (RTL and model)."""
    with pytest.raises(ValueError):
        Parser(bad)
    with pytest.raises(ValueError):
        ParserModel(bad)


def test_max_frame_checked():
    """MR-HW-001."""
    with pytest.raises(ValueError):
        Parser(64, max_frame=10)
    assert params(512)["depth"] == 256 and params(64)["depth"] == 2048


def test_case_verdicts_match_codec():
    """MR-HW-020: every shared case gets the reason it is built for, which is the codec's."""
    seen = set()
    for c in pc.all_cases():
        reason, meta, vals = verdict(c.data, c.mac_error_beat is not None)
        assert reason == c.expect, c.name
        d = unpack_meta(meta)
        assert d["drop"] == (reason != Reason.NONE) and d["reason"] == reason
        seen.add(reason)
    assert seen == set(Reason), "every reason (and bypass) is covered"


def test_meta_roundtrip_and_zeroing():
    """MR-HW-010, MR-HW-011, MR-HW-012: packing, absent headers 0, non-ICRC drops carry no fields."""
    rng = random.Random(3)
    for op in Op:
        b = pc.random_valid(rng, op)
        reason, meta, vals = verdict(b)
        assert reason == Reason.NONE
        d = unpack_meta(meta)
        assert pack_meta(d) == meta
        for h in ("reth", "aeth", "atomicack", "mrdh", "mrsh", "mrah", "mrnh", "imm"):
            assert d["has"][h] == (h in wire.HEADERS[op])
            if h not in wire.HEADERS[op]:
                assert not d[h] or d[h] == dict.fromkeys(d[h], 0)
        f = codec.decode(b)
        assert d["bth"]["psn"] == f.bth.psn and d["payload_len"] == len(f.payload)
        assert b[d["payload_offset"]:d["payload_offset"] + d["payload_len"]] == f.payload
    bad = bytearray(pc.random_valid(rng, Op.MR_WRITE, ipv6=False, vlan=False))
    bad[14 + 10] ^= 1
    reason, meta, _ = verdict(bytes(bad))
    assert reason == Reason.BAD_IP and meta == (1 | Reason.BAD_IP << 1)
    bad = bytearray(pc.random_valid(rng, Op.MR_WRITE, ipv6=False, vlan=False, plen=8))
    bad[-1] ^= 1
    reason, meta, vals = verdict(bytes(bad))
    assert reason == Reason.ICRC and unpack_meta(meta)["bth"]["opcode"] == Op.MR_WRITE


def test_pack_meta_is_the_reference_packing():
    """MR-HW-010: the compiled packing (a fast path for complete records, the general path
    otherwise) gives the field-by-field reference's value, or its error, for records with
    missing structs and members, None, bools, floats, strings, negative and too-wide values."""
    from metaroce.models import parser as mp
    rng = random.Random(7)
    odd = [-1, 1 << 200, None, True, 2.5, "7", "x", [], 5]
    for _ in range(3000):
        d = unpack_meta(rng.getrandbits(META_LAYOUT.size))
        for k in list(d):
            x = rng.random()
            if x < 0.1:
                del d[k]
            elif x < 0.15:
                d[k] = rng.choice(odd)
            elif isinstance(d[k], dict) and x < 0.25:
                d[k][rng.choice(list(d[k]))] = rng.choice(odd)
            elif isinstance(d[k], dict) and x < 0.3:
                del d[k][rng.choice(list(d[k]))]
        got = []
        for pack in (mp._pack_loop, pack_meta):
            try:
                got.append(pack(d))
            except Exception as e:  # the same error, with the same text
                got.append((type(e), str(e)))
        assert got[0] == got[1], d
    for c in pc.valid_cases()[:20]:
        vals = verdict(c.data)[2]
        assert pack_meta(vals) == mp._pack_loop(vals)


def test_meta_to_dict():
    """MR-HW-070: meta_to_dict shows the present headers only, reason as a label."""
    b = pc.random_valid(random.Random(1), Op.MR_ACK)
    _, meta, _ = verdict(b)
    d = ParserModel.meta_to_dict(meta)
    assert d["reason"] == "none" and "mrah" in d and "reth" not in d
    assert d["mrah"]["sack"] == codec.decode(b).mrah.sack


# ------------------------------------------------------------------ scapy as an independent oracle

def _scapy_frames(rng, n):
    from scapy.contrib.roce import AETH as SAETH, BTH as SBTH
    from scapy.layers.inet import IP as SIP, UDP as SUDP
    from scapy.layers.inet6 import IPv6 as SIP6
    from scapy.layers.l2 import Dot1Q, Ether
    from scapy.packet import Raw
    out = []
    for i in range(n):
        op = rng.choice([Op.RC_SEND_ONLY, Op.RC_SEND_FIRST, Op.RC_WRITE_ONLY, Op.RC_WRITE_ONLY_IMM,
                         Op.RC_ACK, Op.RC_READ_RESP_ONLY, Op.RC_SEND_ONLY_IMM, Op.MR_WRITE,
                         Op.MR_SEND, Op.MR_ACK, Op.MR_NAK])
        plen = rng.randrange(0, 200) if op in wire.PAYLOAD_OPS else 0
        pad = (-plen) % 4
        payload = bytes(rng.getrandbits(8) for _ in range(plen))
        exp = {"psn": rng.getrandbits(24), "dqpn": rng.getrandbits(24), "pkey": rng.getrandbits(16),
               "se": rng.randrange(2), "mig": rng.randrange(2), "ackreq": rng.randrange(2),
               "fecn": rng.randrange(2), "becn": rng.randrange(2),
               "sport": 0xC000 | rng.getrandbits(14), "tos": rng.getrandbits(8), "ttl": rng.randrange(1, 256),
               "vlan": rng.randrange(4096) if rng.random() < 0.4 else None}
        # Extension headers the scapy module lacks are packed here with struct, from the
        # field definitions of docs/spec/wire.md (not with the codec).
        ext = b""
        fields = {}
        for h in wire.HEADERS[op]:
            if h == "reth":
                va, rk, ln = rng.getrandbits(64), rng.getrandbits(32), rng.getrandbits(32)
                ext += struct.pack("!QII", va, rk, ln)
                fields["reth"] = {"va": va, "rkey": rk, "dma_len": ln}
            elif h == "imm":
                v = rng.getrandbits(32)
                ext += struct.pack("!I", v)
                fields["imm"] = v
            elif h == "mrdh":
                vals = [rng.getrandbits(b) for b in (4, 8, 16, 32, 32, 32)]
                ext += struct.pack("!BBHIII", 0x10 | vals[0], *vals[1:])
                fields["mrdh"] = dict(zip(("flags", "path", "stream", "msg", "offset", "msg_len"), vals))
            elif h == "mrsh":
                v = rng.getrandbits(32)
                ext += struct.pack("!I", v)
                fields["mrsh"] = {"recv_seq": v}
            elif h == "mrah":
                vals = [rng.getrandbits(b) for b in (4, 8, 16, 32, 32, 32)]
                sack = rng.getrandbits(256)
                ext += struct.pack("!BBHIII", 0x10 | vals[0], *vals[1:]) + sack.to_bytes(32, "big")
                fields["mrah"] = dict(zip(("flags", "path", "ce_count", "cum_psn", "rate_mbps", "trigger_psn"), vals), sack=sack)
            elif h == "mrnh":
                vals = [rng.getrandbits(b) for b in (4, 8, 8, 32)]
                ext += struct.pack("!BBBxI", 0x10 | vals[0], *vals[1:])
                fields["mrnh"] = dict(zip(("flags", "path", "reason", "psn"), vals))
        bth = SBTH(opcode=int(op), solicited=exp["se"], migreq=exp["mig"], padcount=pad,
                   pkey=exp["pkey"], fecn=exp["fecn"], becn=exp["becn"], dqpn=exp["dqpn"],
                   ackreq=exp["ackreq"], psn=exp["psn"])
        if "aeth" in wire.HEADERS[op]:
            syn, msn = rng.getrandbits(8), rng.getrandbits(24)
            fields["aeth"] = {"syndrome": syn, "msn": msn}
            l4 = bth / SAETH(syndrome=syn, msn=msn) / Raw(ext + payload + bytes(pad))
        else:
            l4 = bth / Raw(ext + payload + bytes(pad))
        if rng.random() < 0.5:
            ip = SIP(src="10.9.8.%d" % rng.randrange(256), dst="10.7.6.5", tos=exp["tos"], ttl=exp["ttl"])
            udp = SUDP(sport=exp["sport"], dport=4791, chksum=0)
        else:
            ip = SIP6(src="fd00::%x" % rng.getrandbits(16), dst="fd00::99", tc=exp["tos"], hlim=exp["ttl"],
                      fl=rng.getrandbits(20))
            udp = SUDP(sport=exp["sport"], dport=4791)
        eth = Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")
        if exp["vlan"] is not None:
            pkt = eth / Dot1Q(vlan=exp["vlan"]) / ip / udp / l4
        else:
            pkt = eth / ip / udp / l4
        out.append((pc.pad_eth(bytes(pkt)), op, payload, exp, fields, ip))
    return out


def test_scapy_oracle_fields():
    """MR-HW-010, MR-HW-011, MR-HW-040: frames built by scapy (its own ICRC) are accepted with
    every field as scapy wrote it."""
    rng = random.Random(11)
    for data, op, payload, exp, fields, ip in _scapy_frames(rng, 200):
        reason, meta, _ = verdict(data)
        assert reason == Reason.NONE, (op, reason)
        d = unpack_meta(meta)
        b = d["bth"]
        assert (b["opcode"], b["psn"], b["dest_qp"], b["pkey"], b["se"], b["mig"], b["ack_req"],
                b["fecn"], b["becn"]) == (op, exp["psn"], exp["dqpn"], exp["pkey"], exp["se"],
                                          exp["mig"], exp["ackreq"], exp["fecn"], exp["becn"])
        assert d["udp"]["sport"] == exp["sport"]
        assert (d["ip"]["dscp"] << 2 | d["ip"]["ecn"]) == exp["tos"] and d["ip"]["ttl"] == exp["ttl"]
        assert d["vlan_present"] == (exp["vlan"] is not None)
        if exp["vlan"] is not None:
            assert d["eth"]["vlan"] == exp["vlan"]
        assert d["payload_len"] == len(payload)
        assert data[d["payload_offset"]:d["payload_offset"] + len(payload)] == payload
        for h, want in fields.items():
            got = d[h]
            if isinstance(want, dict):
                got = {k: got[k] for k in want}
            assert got == want, h
        assert d["eth"]["src"] == 0x020000000001


def scapy_cases(n=40, seed=12):
    return [pc.Case(f"scapy{i}", x[0]) for i, x in enumerate(_scapy_frames(random.Random(seed), n))]


# ------------------------------------------------------------------ the model in traffic

@pytest.mark.parametrize("width", WIDTHS)
def test_model_streams_all_cases(width):
    """MR-HW-012, MR-HW-030, MR-HW-032, MR-HW-033, MR-HW-060: meta, payload, bypass and counters
    of every shared case, with idle cycles and backpressure."""
    pc.run_model(width, pc.all_cases() + scapy_cases(), seed=width)


@pytest.mark.parametrize("width", [64, 512])
def test_model_mutated_frames(width):
    """MR-HW-020, MR-HW-053: thousands of mutated frames, every verdict the codec's, no hang."""
    rng = random.Random(width)
    base = pc.all_cases()
    cases = []
    for i in range(1500):
        d = pc.mutate(rng.choice(base).data, rng)
        if rng.random() < 0.5:
            d = pc.mutate(d, rng)
        mb = rng.randrange(4) if rng.random() < 0.03 else None
        cases.append(pc.Case(f"mut{i}", d, mb, verdict(d, mb is not None)[0]))
    res = pc.run_model(width, cases, seed=width, p_idle=0.1, p_bp=0.2)
    assert sum(res["counters"]) == len(cases)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(min_size=0, max_size=200), st.integers(0, 3), st.booleans())
def test_model_arbitrary_bytes(prefix, which, mac):
    """MR-HW-020, MR-HW-053: arbitrary bytes (alone and spliced into a good frame) never hang the
    model and always get the codec's verdict."""
    good = pc.valid_cases()[which * 7].data
    data = [prefix, good[:14] + prefix, good[:40] + prefix, prefix + good][which]
    c = pc.Case("hyp", data, 0 if mac else None, verdict(data, mac)[0])
    pc.run_model(64, [c, pc.valid_cases()[0]], seed=len(prefix))


def test_oversize_dropped():
    """MR-HW-031: a frame longer than max_frame is dropped as length, the next frame is fine."""
    rng = random.Random(4)
    big = pc.random_valid(rng, Op.MR_WRITE, plen=400)
    small = pc.random_valid(rng, Op.MR_WRITE, plen=10)
    cases = [pc.Case("big", big, expect=Reason.LENGTH), pc.Case("small", small),
             pc.Case("big-arp", pc.pad_eth(bytes(14)) + bytes(400), expect=Reason.LENGTH),
             pc.Case("exactly-max", _frame_of_size(rng, 256)),
             pc.Case("max-plus-one", _frame_of_size(rng, 257), expect=Reason.LENGTH)]
    for width in WIDTHS:
        pc.run_model(width, cases, max_frame=256, seed=1)


# ------------------------------------------------------------------ line rate, latency, backpressure

def line_rate(width, sizes, reps=3):
    """Back-to-back frames, no backpressure: cycles in which tvalid was high and tready low."""
    rng = random.Random(width)
    cases = []
    for size in sizes:
        for _ in range(reps):
            cases.append(pc.Case(f"s{size}", _frame_of_size(rng, size)))
    res = pc.run_model(width, cases, p_idle=0, p_bp=0)
    return res, sum(len(beats_of(c.data, width)) for c in cases)


def _frame_of_size(rng, size):
    """A valid RC_SEND_ONLY IPv4 frame of exactly ``size`` bytes (>= 60), Ethernet padding
    after the IP packet filling what a 4-byte multiple of payload cannot."""
    plen = max(0, size - 58) // 4 * 4
    b = pc.random_valid(rng, Op.RC_SEND_ONLY, ipv6=False, vlan=False, plen=plen)
    b += bytes(size - len(b))
    assert len(b) == size, (len(b), size)
    return b


LINE_SIZES = [60, 61, 62, 63, 64, 65, 66, 67, 68, 71, 72, 100, 127, 128, 129, 255, 256, 257,
              511, 512, 513, 1500, 1514, 4096, 9000]


@pytest.mark.parametrize("width", WIDTHS)
def test_line_rate_model(width):
    """MR-HW-052: one beat per cycle, back to back, 60 to 9000 bytes, every width."""
    res, beats = line_rate(width, LINE_SIZES, reps=2)
    assert res["tready_low"] == 0
    assert res["accepted_beats"] == beats
    # Store and forward: the output runs one frame plus the pipeline latency behind the input.
    last = -(-LINE_SIZES[-1] // (width // 8))
    assert res["cycles"] <= beats + last + 16


def test_latency_model():
    """MR-HW-050: meta valid 10 cycles after the last beat; first bypass beat at +12."""
    for width in WIDTHS:
        frame = pc.valid_cases()[0].data
        arp = pc.bypass_cases()[0].data
        for data, kind in ((frame, "meta"), (arp, "bypass")):
            model = ParserModel(width)
            beats = beats_of(data, width)
            last_cycle = None
            for cyc in range(len(beats) + 20):
                inp = {"m_meta__ready": 1, "m_payload__tready": 1, "m_bypass__tready": 1}
                if cyc < len(beats):
                    d, k, last, _ = beats[cyc]
                    inp.update({"s_axis__tvalid": 1, "s_axis__tdata": d, "s_axis__tkeep": k,
                                "s_axis__tlast": last})
                out = model.step(inp)
                if cyc < len(beats):
                    assert out["s_axis__tready"]
                    last_cycle = cyc
                if out[f"m_{kind}__{'valid' if kind == 'meta' else 'tvalid'}"]:
                    assert cyc - last_cycle == (10 if kind == "meta" else 12), (width, kind)
                    break
            else:
                raise AssertionError("no output")
        assert pc.meta_latency(width) == 10, width     # what the Verilator bench compares with


def test_backpressure_holds_everything():
    """MR-HW-051: long backpressure on every output fills the store, drops tready, loses nothing."""
    rng = random.Random(9)
    cases = [pc.Case("f", pc.random_valid(rng, Op.MR_WRITE, plen=rng.randrange(0, 900))) for _ in range(60)]
    cases += pc.bypass_cases()
    res = pc.run_model(64, cases, p_idle=0, p_bp=0.97, seed=2)
    assert res["tready_low"] > 100


def test_counters_via_registers():
    """MR-HW-060: counters read back through reg_addr/reg_data with one cycle latency."""
    model = ParserModel(128)
    pc_cases = pc.all_cases()
    drv = pc.Driver(128, pc_cases, seed=5, p_idle=0.1, p_bp=0.1)
    while not drv.sent_all or model.busy():
        inp = drv.inputs()
        drv.observe(inp, model.step(inp))
    want = [0] * 9
    for c in pc_cases:
        want[c.expect] += 1
    got = []
    for addr in list(range(16)) + [0]:
        out = model.step({"reg_addr": addr})
        got.append(out["reg_data"])
    assert got[1:10] == want and got[10:] == [0] * 7


@pytest.mark.parametrize("width", [64, 512])
def test_drop_on_full_model(width):
    """MR-HW-080..082: tready stays 1; under heavy output backpressure frames overflow, are
    dropped whole (never truncated into another frame) and counted; the kept frames come out
    exactly as the codec says, and reg_addr 9 reads the overflow counter."""
    rng = random.Random(width + 1)
    cases = [pc.Case(f"f{i}", pc.random_valid(rng, Op.MR_WRITE, plen=rng.randrange(0, 400)))
             for i in range(120)] + pc.bypass_cases()
    rng.shuffle(cases)
    tready_low = []

    def watch(cyc, inp, out):
        if not out["s_axis__tready"]:
            tready_low.append(cyc)
    res = pc.run_model(width, cases, seed=3, p_idle=0, p_bp=0.9, max_frame=512,
                       drop_on_full=True, check=False, on_cycle=watch)
    assert not tready_low
    assert 0 < res["overflow"] < len(cases)
    check_frames_kept(cases, res, width=width, max_frame=512)
    assert res["counters"][pc.OVERFLOW_COUNTER] == res["overflow"]      # read at reg_addr 9


def check_frames_kept(cases, res, *, width, max_frame):
    """The frames not dropped on overflow, in order, produce exactly the codec's outputs;
    every frame is either kept or counted as an overflow drop (MR-HW-081, MR-HW-082)."""
    log = res["log"]
    assert len(log) == len(cases)
    kept_at = [i for i, (reason, _) in enumerate(log) if reason != "overflow"]
    kept = [cases[i] for i in kept_at]
    assert res["overflow"] == len(cases) - len(kept) and kept
    beats = res["case_beats"]
    pc.check_streams(kept, dict(res, case_beats=[beats[i] for i in kept_at]),
                     max_frame=max_frame, width=width)
