"""TX frame builder: its model against the codec, and the RTL (hdl/frame_builder.py) against the
model in the Amaranth simulator, every output compared every cycle (docs/spec/hw-tx-frame.md).

One verification stack (models/frame_builder_cases.py): the same cases, driver and checker as
the Verilator testbench (tb/frame_builder.py, tests/test_frame_builder_rtl.py).
"""
import random
import zlib

import pytest
from amaranth.hdl import Module
from amaranth.sim import Simulator

from metaroce import blocks
from metaroce.hdl import icrc as icrc_hw
from metaroce.hdl.frame_builder import E4, T0, FrameBuilder, icrc_start_mod4, pack_header, unadvance_matrices
from metaroce.models import codec, wire
from metaroce.models import frame_builder_cases as fc
from metaroce.models.frame_builder import (DESC_FIELDS, HDR_STAGES, FrameBuilderModel, builder_bytes, ck_stages,
                                           desc_of_frame, expected_bytes, frame_of_desc, pack_desc, unpack_desc)
from metaroce.models.headers import TABLE
from metaroce.models.wire import Op
from metaroce.tb.lockstep import Mismatch, model_port_lists, run_amaranth, verilog_ports, wrong_form


def run_model(width, cases, **kw):
    model = FrameBuilderModel(width)
    drv = fc.Driver(width, cases, **kw)
    while not drv.finished:
        ins = drv.inputs()
        outs = model.step(ins)
        drv.observe(ins, outs)
        drv.settle(model.busy)
    return drv.res


def run_rtl(width, cases, **kw):
    dut = FrameBuilder(width)
    model = FrameBuilderModel(width)
    drv = fc.Driver(width, cases, **kw)
    core = run_amaranth(dut, model, drv, busy=model.busy)
    assert core.mismatches == 0
    return drv.res


# ------------------------------------------------------------------ descriptor, model, codec

def test_descriptor_fields_from_header_table():
    """MR-TXF-002, MR-TXF-003: the descriptor holds every field of BTH (but PadCnt) and of every
    extension header, with the header table's widths; it round-trips through pack/unpack."""
    names = dict(DESC_FIELDS)
    for h in ("reth", "aeth", "imm", "atomicack", "atomiceth", "mrdh", "mrsh", "mrah", "mrnh", "mrsec", "mrch"):
        for n, w in TABLE[h].layout().items():
            assert names[f"{h}_{n}"] == w
    assert "bth_pad" not in names and names["bth_psn"] == 24 and names["payload_len"] == 14
    rng = random.Random(1)
    d = {n: rng.getrandbits(w) for n, w in DESC_FIELDS}
    assert unpack_desc(pack_desc(d)) == d
    with pytest.raises(ValueError):
        pack_desc({"payload_len": 1 << 14})


@pytest.mark.parametrize("case", fc.endpoint_ops_cases(64) + fc.opcode_cases(64), ids=lambda c: c.name)
def test_descriptor_round_trip_is_codec(case):
    """MR-TXF-010, MR-TXF-011, MR-TXF-012, MR-TXF-021: the frame a descriptor describes is the frame it was
    taken from; the builder's bytes are codec.encode, IPv6 UDP checksum included (MR-TXF-022,
    MR-WIRE-042: the ones' complement sum of the pseudo-header and the datagram, checksum
    included, is 0xFFFF, and the checksum is never 0)."""
    got = builder_bytes(case.desc, case.payload)
    want = expected_bytes(case.desc, case.payload)
    assert got == want
    if case.desc["ipv6"]:
        l3 = 14 + 4 * case.desc["vlan_en"]
        udp = got[l3 + 40:]
        assert got[l3 + 46:l3 + 48] != b"\0\0"
        words = got[l3 + 8:l3 + 40] + len(udp).to_bytes(4, "big") + bytes([0, 0, 0, 17]) + udp
        total = sum(int.from_bytes(words[i:i + 2], "big") for i in range(0, len(words), 2))
        while total >> 16:
            total = (total & 0xFFFF) + (total >> 16)
        assert total == 0xFFFF
    if case.desc["bth_opcode"] in [int(o) for o in wire.HEADERS]:
        f = frame_of_desc(case.desc, case.payload)
        assert codec.encode(f) == want
        assert desc_of_frame(f) == case.desc


def test_unknown_opcode_has_no_extension_headers():
    """MR-TXF-012: an opcode outside the header table gets no extension headers; the ICRC
    covers the frame as sent."""
    c = [c for c in fc.opcode_cases(64) if c.name.startswith("unknown")][0]
    b = builder_bytes(c.desc, c.payload)
    l3 = 14 + 4 * c.desc["vlan_en"]
    l4 = l3 + (40 if c.desc["ipv6"] else 20)
    assert b[l4 + 8] == c.desc["bth_opcode"]
    assert b[l4 + 8 + 12:l4 + 8 + 12 + len(c.payload)] == c.payload
    from metaroce.models.icrc import icrc_bytes
    assert icrc_bytes(b[l3:-4]) == b[-4:]


def test_pack_header_is_the_codec_packing():
    """MR-TXF-020: the RTL's header packing, generated from the header table, gives the codec's
    bytes for every header (constant field values, evaluated in the simulator)."""
    rng = random.Random(3)
    checks = []
    for name, cls in codec.RECORDS.items():
        vals = {n: rng.getrandbits(w) for n, w in TABLE[name].layout().items()}
        checks.append((pack_header(name, vals), codec.encode_bth(cls(**vals)) if name == "bth"
                       else codec.encode_ext(name, cls(**vals))))
    vals = {"imm": rng.getrandbits(32)}
    checks.append((pack_header("imm", vals), codec.encode_ext("imm", vals["imm"])))
    m = Module()
    sim = Simulator(m)
    seen = []

    async def bench(ctx):
        for hw, want in checks:
            seen.append(bytes(ctx.get(b) for b in hw) == want)
    sim.add_testbench(bench)
    sim.run()
    assert seen and all(seen)


@pytest.mark.parametrize("width", [64, 512])
def test_unadvance_matrices(width):
    """MR-TXF-031: M_t takes the CRC register back over t zero bytes, for every t < beat bytes."""
    mats = unadvance_matrices(width // 8)
    rng = random.Random(width)
    for t, cols in enumerate(mats):
        data = rng.randbytes(rng.randrange(1, 40))
        after = icrc_hw.raw_crc(data + bytes(t))
        back = 0
        for i in range(32):
            if after >> i & 1:
                back ^= cols[i]
        assert back == icrc_hw.raw_crc(data)
    assert icrc_hw.raw_crc(b"") == 0 and zlib.crc32(b"") == 0


def _unadv_u(frame, width):
    """MR-TXF-067: ``u`` of a frame: the zero lanes after its ICRC region in its last fed beat
    are T0 + 4u."""
    t = -(len(frame) - wire.ICRC_LEN) % (width // 8)
    assert t % 4 == T0
    return t // 4


def test_icrc_offset_mod4_every_frame():
    """MR-TXF-066, MR-TXF-068: the ICRC's byte offset is E4 = 2 mod 4 in every frame the builder makes:
    every class, every opcode of the header table and two outside it, payload lengths 0..4,096
    (the model's frames, the codec's bytes); and the lockstep cases of ``test_rtl_lockstep``
    meet every u at 64 and 512 bits (MR-TXF-067)."""
    assert icrc_start_mod4() == E4 == 2 and T0 == 2
    for width in (64, 512):
        cases = fc.endpoint_ops_cases(width) + fc.opcode_cases(width) + fc.length_cases(width)
        assert {(len(c.expected()) - wire.ICRC_LEN) % 4 for c in cases} == {E4}
        assert {(c.desc["ipv6"], c.desc["vlan_en"]) for c in cases} == {(0, 0), (0, 1), (1, 0), (1, 1)}
        lock = (fc.endpoint_ops_cases(width) + fc.opcode_cases(width)
                + [c for c in fc.length_cases(width) if len(c.payload) <= 300 or width >= 256])
        assert {_unadv_u(c.expected(), width) for c in lock} == set(range(width // 32))


def _icrc_run(cls, width=512):
    """MR-TXF-067: ``cls`` (the builder or a wrong form) in lockstep with the model at
    ``width`` on one short case per value of u (IPv4 and IPv6, with and without VLAN, among
    them), idle cycles and backpressure; every frame checked (the codec's bytes, a good ICRC)."""
    by_u = {}
    for c in fc.length_cases(width) + fc.opcode_cases(width):
        u = _unadv_u(c.expected(), width)
        if u not in by_u or len(c.payload) < len(by_u[u].payload):
            by_u[u] = c
    cases = [by_u[u] for u in sorted(by_u, reverse=True)]      # t = width/8 - 2 first
    assert len(cases) == width // 32
    drv = fc.Driver(width, cases, seed=11, p_idle=0.2, p_bp=0.3)
    model = FrameBuilderModel(width)
    core = run_amaranth(cls(width), model, drv, busy=model.busy)
    fc.check(cases, drv.res, width)
    return core


#: MR-TXF-067's wrong forms: the map of one value of u (the last: t = width/8 - 2) the identity
#: (the register not taken back there); the ICRC bytes placed as if E were 0 mod 4
UNADV_WRONG = {
    "one_u_not_taken_back": ("sel = [mats[T0 + 4 * x] for x in range(NB // 4)]",
                             "sel = [mats[T0 + 4 * x] for x in range(NB // 4 - 1)] + [mats[0]]"),
    "insertion_lanes": ("sel = (j - E4) % 4", "sel = j % 4"),
}


# slow (15 s each): test_rtl_lockstep meets every u too (test_icrc_offset_mod4_every_frame; [64] in
# the default run, [512] slow)
@pytest.mark.slow
@pytest.mark.parametrize("wrong", [None] + sorted(UNADV_WRONG))
def test_rtl_icrc_every_u(wrong):
    """MR-TXF-066..068: the builder's one-stage take-back at 512 bits, one frame per
    value of u: 0 mismatches and every frame's ICRC good; each wrong form (one u's map, the
    insertion's lanes) mismatches."""
    if wrong is None:
        assert _icrc_run(FrameBuilder).mismatches == 0
    else:
        cls = wrong_form("frame_builder", *UNADV_WRONG[wrong]).FrameBuilder
        with pytest.raises((Mismatch, AssertionError)):
            _icrc_run(cls)


@pytest.mark.parametrize("width", [64, 128, 256, 512])
def test_model_every_case(width):
    """MR-TXF-010, MR-TXF-013, MR-TXF-044, MR-TXF-051: the model alone, every case set, idle
    cycles and backpressure; the checker compares each frame with the codec."""
    cases = (fc.endpoint_ops_cases(width) + fc.opcode_cases(width) + fc.length_cases(width)
             + fc.random_cases(60, seed=width))
    res = run_model(width, cases, seed=width, p_idle=0.3, p_bp=0.4)
    fc.check(cases, res, width)


def test_model_scapy_icrc_oracle():
    """MR-TXF-030: scapy.contrib.roce computes the same ICRC over the model's frames."""
    cases = [c for c in fc.endpoint_ops_cases(64) + fc.opcode_cases(64) if c.desc["udp_dport"] == 4791]
    res = run_model(64, cases, seed=3, p_idle=0.0, p_bp=0.0)
    fc.check(cases, res, 64)
    for c, (frame, _, _) in zip(cases, res["frames"]):
        assert fc.scapy_icrc(frame) == frame[-4:], c.name


def test_model_endpoint_traffic():
    """MR-TXF-051: the reference endpoint's frames of a real write (data and ACKs) come out of
    the builder as codec.encode of the captured frames."""
    cases = fc.endpoint_cases(8000)
    assert {Op.MR_WRITE, Op.MR_ACK} <= {c.desc["bth_opcode"] for c in cases}
    res = run_model(512, cases, seed=1)
    fc.check(cases, res, 512)


@pytest.mark.parametrize("width,plen,ipv6", [(512, 256, 0), (512, 256, 1), (512, 1024, 0),
                                             (512, 1024, 1), (256, 256, 1), (64, 256, 0),
                                             (64, 256, 1), (64, 0, 0), (64, 0, 1)])
def test_model_line_rate(width, plen, ipv6):
    """MR-TXF-046, MR-TXF-063: back-to-back frames of one connection without idle or
    backpressure leave at one beat per cycle (frames of two beats and more), IPv4 frames cut
    through the output FIFO, IPv6 frames (here of equal lengths) after the first one's wait."""
    cases = [c for c in fc.length_cases(width) if len(c.payload) == plen
             and c.desc["ipv6"] == ipv6] * 6
    assert len(cases) >= 6
    res = run_model(width, cases, seed=1, p_idle=0.0, p_bp=0.0)
    fc.check(cases, res, width)
    bc = res["beat_cycles"]
    assert len(bc) == bc[-1] - bc[0] + 1


def test_model_latency():
    """MR-TXF-040, MR-TXF-063: an idle builder puts an IPv4 descriptor's first beat on m_axis
    16 cycles after it took the descriptor; an IPv6 frame of n beats 12 + n + ck_stages cycles
    after (its last beat in the output FIFO, then its checksum record)."""
    for width in (64, 512):
        nb = width // 8
        for v6 in (0, 1):
            for c in [c for c in fc.length_cases(width) if c.desc["ipv6"] == v6][:4]:
                res = run_model(width, [c], seed=1, p_idle=0.0, p_bp=0.0)
                n = -(-len(c.expected()) // nb)
                want = 12 + n + ck_stages(width) if v6 else 16
                assert res["beat_cycles"][0] - res["desc_cycles"][0] == want


def test_model_payload_beats_counted_not_flagged():
    """MR-TXF-004, MR-TXF-005: payload beats are counted from payload_len; keep and last are
    not consulted, and bytes past payload_len in the last beat are not sent."""
    width = 64
    by_len = {len(c.payload): c for c in fc.length_cases(width)}
    cases = [by_len[5], by_len[13]]
    drv = fc.Driver(width, cases, seed=1, p_idle=0.0, p_bp=0.0)
    nb = width // 8
    beats = []
    for b in drv.beats:         # keep and last cleared, garbage in the lanes past the payload
        n = bin(b >> width & ((1 << nb) - 1)).count("1")
        data_ = b & ((1 << width) - 1)
        beats.append(data_ | (((1 << width) - 1) >> (8 * n) << (8 * n) & ~((1 << (8 * n)) - 1)))
    assert beats != [b & ((1 << width) - 1) for b in drv.beats]
    drv.beats = beats
    model = FrameBuilderModel(width)
    while not drv.finished:
        ins = drv.inputs()
        outs = model.step(ins)
        drv.observe(ins, outs)
        drv.settle(model.busy)
    fc.check(cases, drv.res, width)


def test_model_one_beat_frames_every_other_cycle():
    """MR-TXF-046: at 512 bits a frame of one beat (58..64 bytes) leaves every second cycle."""
    cases = [c for c in fc.length_cases(512, ops=(Op.RC_SEND_MIDDLE,)) if len(c.payload) <= 2
             and not c.desc["ipv6"]]
    cases = [c for c in cases if len(c.expected()) <= 64] * 4
    assert len(cases) >= 4
    res = run_model(512, cases, seed=1, p_idle=0.0, p_bp=0.0)
    bc = res["beat_cycles"]
    assert len(bc) == len(cases) and all(b - a == 2 for a, b in zip(bc, bc[1:]))


# ------------------------------------------------------------------ RTL in the Amaranth simulator

def test_verilog_ports_are_the_model_ports():
    """MR-TXF-002: the Verilog ports are the model's ports plus clk and rst."""
    ports = verilog_ports(FrameBuilder(64), "frame_builder")
    model = FrameBuilderModel(64)
    ins, outs = model_port_lists(model)
    assert ports == set(ins) | set(outs) | {"clk", "rst"}


def test_block_registered():
    """MR-TXF-001: ``frame_builder`` is a block of metaroce/blocks.py at 64..512 bits."""
    blk = blocks.get("frame_builder")
    assert blk.widths == (64, 128, 256, 512)
    assert isinstance(blk.make_model(128), FrameBuilderModel)
    with pytest.raises(ValueError):
        FrameBuilder(96)


@pytest.mark.parametrize("width", [64, pytest.param(128, marks=pytest.mark.slow),
                                   pytest.param(256, marks=pytest.mark.slow), 512])
def test_rtl_lockstep(width):
    """MR-TXF-040..046, MR-TXF-050, MR-TXF-022, MR-TXF-060..064, MR-TX-436..439, MR-TXF-069, MR-TXF-070: the RTL in
    lockstep with the model (every output, every cycle), idle cycles and backpressure; every
    frame the codec's, IPv6 UDP checksums included."""
    cases = (fc.endpoint_ops_cases(width) + fc.opcode_cases(width)
             + [c for c in fc.length_cases(width) if len(c.payload) <= 300 or width >= 256]
             + fc.random_cases(20, seed=width, max_payload=300))
    res = run_rtl(width, cases, seed=width, p_idle=0.3, p_bp=0.4)
    fc.check(cases, res, width)


def test_rtl_endpoint_traffic_and_scapy():
    """MR-TXF-030, MR-TXF-051: the reference endpoint's frames through the RTL (512 bits) equal
    codec.encode of the captured frames, and scapy computes the same ICRC."""
    cases = fc.endpoint_cases(6000)
    res = run_rtl(512, cases, seed=2, p_idle=0.2, p_bp=0.3)
    fc.check(cases, res, 512)
    for c, (frame, _, _) in zip(cases, res["frames"]):
        assert fc.scapy_icrc(frame) == frame[-4:], c.name


@pytest.mark.slow
def test_rtl_line_rate_512():
    """MR-TXF-046: 256-byte payloads back to back at 512 bits: one beat per cycle for IPv4
    frames; IPv6 frames of non-increasing lengths at one beat per cycle once the first has left
    (it waits for its checksum). (Mixed, a longer IPv6 frame after a shorter one waits for its
    own checksum: not line rate, as MR-TXF-046 says; the test mixed them until session 41.)"""
    same = [c for c in fc.length_cases(512) if len(c.payload) == 256]
    v4 = [c for c in same if not c.desc["ipv6"]] * 4
    res = run_rtl(512, v4, seed=1, p_idle=0.0, p_bp=0.0)
    fc.check(v4, res, 512)
    bc = res["beat_cycles"]
    assert len(v4) >= 8 and len(bc) == bc[-1] - bc[0] + 1
    v6 = sorted([c for c in same if c.desc["ipv6"]] * 4, key=lambda c: -len(c.expected()))
    res = run_rtl(512, v6, seed=1, p_idle=0.0, p_bp=0.0)
    fc.check(v6, res, 512)
    first = -(-len(v6[0].expected()) // 64)         # the first frame's beats
    bc = res["beat_cycles"][first - 1:]             # from its last beat on
    assert len(v6) >= 4 and len(bc) == bc[-1] - bc[0] + 1


def test_bench_frame_builder_bad_arguments(capsys):
    """``metaroce bench frame_builder`` refuses a bad width, size or frame count with one line
    on stderr and exit status 2 (MR-TXF-001, MR-TXF-004)."""
    from metaroce.cli import main
    for args in (["--widths", "96"], ["--sizes", "16384"], ["--frames", "1"]):
        assert main(["bench", "frame_builder", *args]) == 2
        err = capsys.readouterr().err.strip()
        assert err and "\n" not in err and "Traceback" not in err


@pytest.mark.parametrize("width", [64, 512])
def test_model_largest_payloads(width):
    """MR-TXF-004, MR-TXF-013: payloads up to the 14-bit maximum (16,383 bytes), IPv4 and IPv6."""
    rng = random.Random(width)
    cases = [fc.case_of_frame(fc._rand_frame(rng, Op.MR_WRITE_IMM, plen, ipv6, rng.randrange(2)))
             for plen in (16383, 16382, 9000) for ipv6 in (0, 1)]
    res = run_model(width, cases, seed=width, p_idle=0.1, p_bp=0.2)
    fc.check(cases, res, width)


# ------------------------------------------------------------------ IPv6 UDP checksum

@pytest.mark.parametrize("vlan", [0, 1])
def test_udp6_masks_are_the_checksum(vlan):
    """MR-TXF-061: the summed-byte mask of a class, over the header, then every byte to the
    frame's end, plus 17, folded and complemented, is the codec's checksum; the patch mask
    marks exactly its two bytes; IPv4 classes have neither."""
    from metaroce.hdl.frame_builder import udp6_masks
    rng = random.Random(vlan)
    assert udp6_masks(vlan, 0, 192) == (0, 0)
    for op in (Op.MR_WRITE, Op.MR_ACK, Op.RC_SEND_MIDDLE):
        for plen in (0, 1, 7, 300):
            c = fc.case_of_frame(fc._rand_frame(rng, op, plen, 1, vlan))
            frame = bytearray(c.expected())
            l3 = 14 + 4 * vlan
            at = l3 + 46
            sent = bytes(frame[at:at + 2])
            frame[at:at + 2] = b"\0\0"
            summed, patch = udp6_masks(vlan, 1, len(frame))
            assert patch == 3 << at
            total = 17
            for p in range(0, len(frame), 2):
                if summed >> p & 1:
                    assert summed >> (p + 1) & 1
                    total += frame[p] << 8 | frame[p + 1]
            while total >> 16:
                total = (total & 0xFFFF) + (total >> 16)
            assert ((~total & 0xFFFF) or 0xFFFF).to_bytes(2, "big") == sent


def test_rtl_ipv6_records_and_fifo():
    """MR-TXF-060, MR-TXF-062..064: short IPv6 frames behind heavy m_axis backpressure fill
    the checksum records up to the limit (the pipeline waits), IPv4 frames between them; every frame the
    codec's, RTL in lockstep with the model. hw-parser.md MR-HW-091: the output FIFO a
    BufferedQueue, its cycles SyncFIFOBuffered's."""
    from metaroce.models.frame_builder import REC_DEPTH
    rng = random.Random(5)
    cases = [fc.case_of_frame(fc._rand_frame(rng, Op.MR_WRITE, rng.randrange(40), int(i % 5 != 4),
                                             rng.randrange(2))) for i in range(40)]
    dut = FrameBuilder(64)
    model = FrameBuilderModel(64)
    most = [0]
    step = model.step

    def watched(inputs):
        most[0] = max(most[0], model.rec_used)
        return step(inputs)
    model.step = watched
    drv = fc.Driver(64, cases, seed=5, p_idle=0.0, p_bp=0.85)
    core = run_amaranth(dut, model, drv, busy=model.busy)
    assert core.mismatches == 0
    fc.check(cases, drv.res, 64)
    assert REC_DEPTH - 1 <= most[0] <= REC_DEPTH      # the record limit held the pipeline


# ------------------------------------------------------------------ MR-TXF-065: header register enables

def _ipv6_burst_cases(n, seed=5):
    """Short writes, four in five over IPv6: behind heavy backpressure their checksum records
    run out and the pipeline waits (``en`` low) with frames in F."""
    rng = random.Random(seed)
    return [fc.case_of_frame(fc._rand_frame(rng, Op.MR_WRITE, rng.randrange(40), int(i % 5 != 4),
                                            rng.randrange(2))) for i in range(n)]


# the runs that move every term: payload beats arriving after their header's last beat (512
# bits, a one- or two-beat header), and the pipeline waiting with a frame in F (64 bits)
HDR_RUNS = {
    "payload_waits_512": lambda: (512, fc.endpoint_ops_cases(512), dict(seed=3, p_idle=0.5, p_bp=0.3)),
    "records_full_64": lambda: (64, _ipv6_burst_cases(24), dict(seed=5, p_idle=0.0, p_bp=0.85)),
}


def _hdr_terms_run(run, dut_cls=FrameBuilder, observe=True):
    """One of ``HDR_RUNS`` in lockstep: ``(core, bad, seen)``, ``bad`` the cycles whose
    registered terms differ from their definitions on the RTL's own state, ``seen`` counts
    of the cycles that exercise them. Raises ``Mismatch`` on the first output mismatch."""
    width, cases, kw = HDR_RUNS[run]()
    dut = dut_cls(width)
    model = FrameBuilderModel(width)
    drv = fc.Driver(width, cases, **kw)
    bad, seen = [], dict.fromkeys(("cycles", "active", "stalled", "beat0_waits", "loads_at_last",
                                   "a_to_e_full"), 0)

    async def watch(ctx):
        pr = dut.probe
        async for _ in ctx.tick().sample():
            v = {k: ctx.get(s) for k, s in pr.items()}
            pv = ctx.get(dut.s_payload.valid)
            want = {"go_np": v["en"] & v["active"] & (1 - v["need"]),
                    "go_p": v["en"] & v["need"],
                    "hdr_ld": (1 - v["active"]) | v["last_part"],
                    "hdr_ce_x": (1 - v["active"]) | (v["en"] & v["active"] & (1 - v["need"]))}
            if any(v[k] != want[k] for k in want):
                bad.append((seen["cycles"], v))
            seen["cycles"] += 1
            seen["active"] += v["active"]
            seen["stalled"] += v["active"] & (1 - v["en"])
            seen["beat0_waits"] += v["go_p"] & (1 - pv)
            seen["loads_at_last"] += v["active"] & v["last_part"] & v["en"]
            seen["a_to_e_full"] += v["a_to_e_valid"] == (1 << (HDR_STAGES - 1)) - 1
    core = run_amaranth(dut, model, drv, busy=model.busy, background=[watch] if observe else [])
    fc.check(cases, drv.res, width)
    return core, bad, seen


@pytest.mark.parametrize("run", sorted(HDR_RUNS))
def test_header_register_terms_registered_exact(run):
    """MR-TXF-065, MR-TXF-042, MR-TXF-043, MR-TX-436: the registered terms of ``go`` and of the
    header register's load (``go_np``, ``go_p``, ``hdr_ld``, ``hdr_ce_x``) equal their definitions on the RTL's own state in every cycle, under runs
    where the payload beat comes after its header's last beat (512 bits) and where the
    pipeline waits with a frame in F (checksum records full, 64 bits); the lockstep with the
    model has 0 mismatches and every frame is the codec's."""
    core, bad, seen = _hdr_terms_run(run)
    assert core.mismatches == 0
    assert not bad, bad[:3]
    assert seen["active"] > 100 and seen["loads_at_last"] > 10, seen
    if run == "payload_waits_512":
        assert seen["beat0_waits"] > 10, seen
    else:
        assert seen["stalled"] > 20, seen
        # MR-TXF-071: stages A..E all full (the descriptor ring's most slots in use)
        assert seen["a_to_e_full"] > 20, seen


# MR-TXF-065's and MR-TX-436's wrong forms, each loaded in place of the RTL by replacing its
# text in hdl/frame_builder.py, with the run that reaches it: the header loaded without its
# payload beat at the last beat, no load at a frame's last beat, the beat select moving while
# the pipeline waits, the terms registered from this cycle's state instead of the next
HDR_WRONG = {
    "beat0_not_waiting_for_payload": (("ce0.eq(hdr_ce_x | (go_p & self.s_payload.valid))",
                                       "ce0.eq(hdr_ce_x | go_p)"), "payload_waits_512"),
    "no_load_at_last_beat": (('hdr_ld.eq(~active_next | part_next("last"))', "hdr_ld.eq(~active_next)"),
                             "payload_waits_512"),
    "beat_select_moves_while_waiting": (("with m.Elif(go):\n            m.d.sync += hdr_beat.eq(",
                                         "with m.Elif(en):\n            m.d.sync += hdr_beat.eq("),
                                        "payload_waits_512"),
    "terms_a_cycle_late": (("go_np.eq(en_next & active_next & ~need_next)", "go_np.eq(en & active & ~need)"),
                           "payload_waits_512"),
    # MR-TX-439: the current beat's register loaded with the beat it holds, not the next
    "header_beat_register_not_next": (("hdr_reg[(k + 1) * W:(k + 2) * W]", "hdr_reg[k * W:(k + 1) * W]"),
                                      "records_full_64"),
    # MR-TX-437: a boundary's "next beat" flag compared with the beat after
    "boundary_one_a_beat_late": (("one[nme].eq(beat2 == at)", "one[nme].eq(beat2 == at + 1)"),
                                 "records_full_64"),
}


# the four of 6-7 CPU s each run in the slow set (the default run's budget, tests/conftest.py)
HDR_WRONG_SLOW = {"no_load_at_last_beat", "terms_a_cycle_late", "beat_select_moves_while_waiting",
                  "beat0_not_waiting_for_payload"}


@pytest.mark.parametrize("wrong", [pytest.param(w, marks=pytest.mark.slow) if w in HDR_WRONG_SLOW
                                   else w for w in sorted(HDR_WRONG)])
def test_header_register_terms_wrong_forms_fail(wrong):
    """MR-TXF-065, MR-TX-436..439: each wrong form of the registered terms and the header
    registers (the header loaded at the last beat without its payload beat, no load of the
    next header at a frame's last beat, the beat select moving while the pipeline waits, the
    terms registered from this cycle's state, a boundary's next-beat flag a beat late, the
    current beat's register loaded with its own beat), loaded in place of the RTL, fails the
    lockstep with the model or the frames' check (no invariant observer)."""
    (old, new), run = HDR_WRONG[wrong]
    cls = wrong_form("frame_builder", old, new).FrameBuilder
    with pytest.raises((Mismatch, AssertionError)):
        _hdr_terms_run(run, cls, observe=False)


# MR-TXF-070/071's wrong forms of the descriptor ring, with the run that fills stages A..E: the
# read pointer moved when E is empty, the read at the write pointer, two slots fewer than A..E hold
RING_WRONG = {
    "read_moves_without_e": ("ring_get = take[S - 1] & valid[S - 2]", "ring_get = take[S - 1]"),
    "read_at_write_pointer": ("ring_r.addr.eq(rd_ptr)]", "ring_r.addr.eq(wr_ptr)]"),
    "too_few_slots": ("slots = DESC_RING", "slots = HDR_STAGES - 2"),
}


@pytest.mark.parametrize("wrong", [w if w == "read_at_write_pointer" else pytest.param(w, marks=pytest.mark.slow)
                                   for w in sorted(RING_WRONG)])
def test_desc_ring_wrong_forms_fail(wrong):
    """MR-TXF-070, MR-TXF-071 (negative controls): each wrong form of the descriptor ring (its
    read pointer moved while E is empty, its read at the write pointer, HDR_STAGES - 2 slots),
    loaded in place of the RTL, fails the lockstep with the model or the frames' check on the
    run that fills stages A..E (checksum records full, 64 bits)."""
    cls = wrong_form("frame_builder", *RING_WRONG[wrong]).FrameBuilder
    with pytest.raises((Mismatch, AssertionError)):
        _hdr_terms_run("records_full_64", cls, observe=False)


def _ipv4_only_run(model_ipv4_only=True):
    """MR-TX-466: ``FrameBuilder(64, ipv4_only=True)`` in lockstep with the model (with
    ``ipv4_only`` as given) on descriptors of every class, idle cycles and backpressure."""
    cases = [c for c in fc.endpoint_ops_cases(64) if len(c.payload) <= 200]
    cases = [c for i, c in enumerate(cases) if i % 3 == 0]
    assert {(c.desc["ipv6"], c.desc["vlan_en"]) for c in cases} == {(0, 0), (0, 1), (1, 0), (1, 1)}
    drv = fc.Driver(64, cases, seed=3, p_idle=0.3, p_bp=0.4)
    model = FrameBuilderModel(64, ipv4_only=model_ipv4_only)
    core = run_amaranth(FrameBuilder(64, ipv4_only=True), model, drv, busy=model.busy)
    return cases, core, drv.res


def _prerotated_run(rtl_prerotated=True):
    """MR-TX-482: the TX's builder, ``FrameBuilderModel(64, ipv4_only=True, prerotated=True)``,
    in lockstep with the RTL (``ipv4_only``, ``prerotated`` as given) on descriptors of every
    class (taken as IPv4 without VLAN, MR-TX-466) and opcode, each payload beat rotated up by
    its frame's header length mod 8 as the TX's DMA rotates it (MR-TX-479/480), idle cycles and
    backpressure."""
    from metaroce.models.frame_builder import header_len
    cases = [c for c in fc.endpoint_ops_cases(64) if 0 < len(c.payload) <= 200]
    cases = [c for i, c in enumerate(cases) if i % 3 == 1]
    assert {(c.desc["ipv6"], c.desc["vlan_en"]) for c in cases} == {(0, 0), (0, 1), (1, 0), (1, 1)}

    def lane(d):
        return header_len(dict(d, vlan_en=0, ipv6=0))
    assert len({lane(c.desc) % 8 for c in cases}) > 1
    drv = fc.Driver(64, cases, seed=5, p_idle=0.3, p_bp=0.4, lane_of=lane)
    model = FrameBuilderModel(64, ipv4_only=True, prerotated=True)
    core = run_amaranth(FrameBuilder(64, ipv4_only=True, prerotated=rtl_prerotated), model, drv,
                        busy=model.busy)
    return cases, core, drv.res


def test_rtl_prerotated():
    """MR-TX-466, MR-TX-468, MR-TX-482, MR-TX-484: the TX's builder (``ipv4_only``,
    ``prerotated``: no payload rotator), RTL and model, on payload beats rotated up by their
    frame's header length mod the beat: 0 mismatches, every frame the codec's bytes of its
    descriptor with ``vlan_en`` and ``ipv6`` 0 and its payload."""
    cases, core, res = _prerotated_run()
    assert core.mismatches == 0
    fc.check([fc.Case(dict(c.desc, vlan_en=0, ipv6=0), c.payload, c.name) for c in cases], res, 64)


@pytest.mark.slow
def test_rtl_prerotated_with_rotator_fails():
    """MR-TX-482 (negative control): the builder that rotates (``prerotated`` False) against
    the ``prerotated`` model on the same rotated beats mismatches."""
    with pytest.raises(Mismatch):
        _prerotated_run(rtl_prerotated=False)


@pytest.mark.slow
def test_rtl_ipv4_only():
    """MR-TX-466, MR-TX-468: with ``ipv4_only`` the RTL and the model take every descriptor as IPv4
    without VLAN: IPv6 and VLAN descriptors among IPv4 ones, 0 mismatches, and every frame the
    codec's bytes of its descriptor with ``vlan_en`` and ``ipv6`` 0."""
    cases, core, res = _ipv4_only_run()
    assert core.mismatches == 0
    fc.check([fc.Case(dict(c.desc, vlan_en=0, ipv6=0), c.payload, c.name) for c in cases], res, 64)


@pytest.mark.slow
def test_rtl_ipv4_only_against_full_model_fails():
    """MR-TX-466 (negative control): the ``ipv4_only`` RTL against the model of every class
    mismatches on the same descriptors."""
    with pytest.raises(Mismatch):
        _ipv4_only_run(model_ipv4_only=False)


#: MR-TXF-072: a user's fields: the TX's without ``ip_ident`` and most extension headers (the
#: builder takes the class, the identification and the rest as 0)
GIVEN = ("eth_dst", "eth_src", "ip_dscp", "ip_ecn", "ip_ttl", "ip_src", "ip_dst", "udp_sport",
         "udp_dport", "bth_opcode", "bth_psn", "bth_dest_qp", "bth_ack_req", "bth_pkey",
         "reth_va", "reth_rkey", "reth_dma_len", "mrdh_msg", "mrdh_offset", "payload_len")


def _desc_fields_run(model_given=True):
    """MR-TXF-072: ``FrameBuilder(64, desc_fields=GIVEN)`` in lockstep with the model (with or
    without ``desc_fields``) on random descriptors, every field set, idle cycles and
    backpressure."""
    cases = fc.random_cases(24, seed=9, max_payload=200)
    drv = fc.Driver(64, cases, seed=9, p_idle=0.3, p_bp=0.4)
    model = FrameBuilderModel(64, desc_fields=GIVEN if model_given else None)
    core = run_amaranth(FrameBuilder(64, desc_fields=GIVEN), model, drv, busy=model.busy)
    return cases, core, drv.res


@pytest.mark.slow
def test_rtl_desc_fields():
    """MR-TXF-072: with ``desc_fields`` the RTL and the model take every other field as 0: 0
    mismatches, and every frame the codec's bytes of its descriptor with those fields 0."""
    cases, core, res = _desc_fields_run()
    assert core.mismatches == 0
    fc.check([fc.Case({n: v if n in GIVEN else 0 for n, v in c.desc.items()}, c.payload, c.name)
              for c in cases], res, 64)


@pytest.mark.slow
def test_rtl_desc_fields_against_full_model_fails():
    """MR-TXF-072 (negative control): the RTL with ``desc_fields`` against the model of every
    field mismatches on the same descriptors."""
    with pytest.raises(Mismatch):
        _desc_fields_run(model_given=False)


def test_desc_fields_checked():
    """MR-TXF-072: a name that is not a descriptor field is refused by the RTL and the model."""
    with pytest.raises(ValueError, match="not descriptor fields"):
        FrameBuilder(64, desc_fields=("eth_dst", "ip_source"))
    with pytest.raises(ValueError, match="not descriptor fields"):
        FrameBuilderModel(64, desc_fields=("bth_op",))
