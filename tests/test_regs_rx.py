"""The register block and the RX engine together in the Amaranth simulator (MR-REG-060): a
test-only top joins ``regs.m_cfg`` to ``rx.s_cfg`` with ``wiring.connect`` and the counter port
wire to wire. A connection, its paths and keys are set up by AXI4-Lite writes only; a valid
packet is accepted and placed; the counters read back through AXI4-Lite are the RX model's;
the connection is torn down by writing its row with valid 0, and the next packet of it is
dropped as no_connection.
"""
import dataclasses

from amaranth.hdl import ClockDomain, Module
from amaranth.lib import wiring
from amaranth.sim import Simulator

from metaroce.hdl.regs import Regs
from metaroce.hdl.rx import rx_256x4
from metaroce.models import rx_cases as rxc
from metaroce.models.regs import CTR_BASE, OKAY, register_map
from metaroce.models.regs_cases import row_writes
from metaroce.models.rx import N_COUNTERS, SMALL, TABLE_CONN, RxCode, pack, payload_layout, unpack

WIDTH = 64




def _top():
    m = Module()
    m.domains.sync = ClockDomain()
    m.submodules.rx = rx = rx_256x4(WIDTH)
    m.submodules.regs = regs = Regs.for_rx(rx)
    wiring.connect(m, regs.m_cfg, rx.s_cfg)
    m.d.comb += [rx.reg_addr.eq(regs.reg_addr), regs.reg_data.eq(rx.reg_data)]
    return m, regs, rx


async def axil_write(ctx, bus, addr, data, strb=0xF):
    """One AXI4-Lite write: AW and W together, then the response."""
    ctx.set(bus.awaddr, addr)
    ctx.set(bus.awvalid, 1)
    ctx.set(bus.wdata, data)
    ctx.set(bus.wstrb, strb)
    ctx.set(bus.wvalid, 1)
    ctx.set(bus.bready, 1)
    aw = w = False
    while True:
        aw |= bool(ctx.get(bus.awready))
        w |= bool(ctx.get(bus.wready))
        b = ctx.get(bus.bvalid)
        resp = ctx.get(bus.bresp)
        await ctx.tick()
        if aw:
            ctx.set(bus.awvalid, 0)
        if w:
            ctx.set(bus.wvalid, 0)
        if b:
            ctx.set(bus.bready, 0)
            return resp


async def axil_read(ctx, bus, addr):
    ctx.set(bus.araddr, addr)
    ctx.set(bus.arvalid, 1)
    ctx.set(bus.rready, 1)
    while True:
        ar = ctx.get(bus.arready)
        r = ctx.get(bus.rvalid)
        resp, data = ctx.get(bus.rresp), ctx.get(bus.rdata)
        await ctx.tick()
        if ar:
            ctx.set(bus.arvalid, 0)
        if r:
            ctx.set(bus.rready, 0)
            return resp, data


async def read_counters(ctx, bus):
    out = []
    for i in range(N_COUNTERS):
        r1, lo = await axil_read(ctx, bus, CTR_BASE + 8 * i)
        r2, hi = await axil_read(ctx, bus, CTR_BASE + 8 * i + 4)
        assert r1 == r2 == OKAY
        out.append(hi << 32 | lo)
    return out


async def send_packet(ctx, rx, case):
    """The case's metadata record, then its payload beats (if the parser forwards them)."""
    ctx.set(rx.s_meta.payload.as_value(), case.meta)
    ctx.set(rx.s_meta.valid, 1)
    while not ctx.get(rx.s_meta.ready):
        await ctx.tick()
    await ctx.tick()
    ctx.set(rx.s_meta.valid, 0)
    beat = payload_layout(WIDTH)
    nb = WIDTH // 8
    chunks = [case.payload[i:i + nb] for i in range(0, len(case.payload), nb)] if not case.drop else []
    for j, chunk in enumerate(chunks):
        ctx.set(rx.s_payload.payload.as_value(), pack(beat, {"data": int.from_bytes(chunk, "little"),
                                                 "keep": (1 << len(chunk)) - 1,
                                                 "last": int(j == len(chunks) - 1)}))
        ctx.set(rx.s_payload.valid, 1)
        while not ctx.get(rx.s_payload.ready):
            await ctx.tick()
        await ctx.tick()
    ctx.set(rx.s_payload.valid, 0)
    for _ in range(10):             # the pipeline drains (MR-RX-040, MR-RX-061)
        await ctx.tick()


def test_setup_packet_counters_teardown():
    """MR-REG-060, MR-REG-020..024, MR-REG-030/031, MR-ENG-006: connection setup and teardown
    through AXI4-Lite writes only, counters read back through AXI4-Lite equal the RX model's."""
    m, regs, rx = _top()
    lay = rx.lay
    rmap = register_map(lay)
    s = rxc.Setup(**SMALL, seed=7, n_conns=2)
    conn = s.conns[0]
    # the first chunk of a two-chunk message: accepted only with the MTU (256) written over
    # AXI4-Lite through GLOBAL_MTU_LOG2, not the reset one (4,096)
    first = s.write(conn, path=0, offset=0, plen=s.mtu, msg_len=2 * s.mtu, expect=RxCode.ACCEPTED,
                    name="first")
    assert s.mtu == 256
    teardown = rxc.CfgWrite(TABLE_CONN, conn.qp, 0, "teardown")
    after = s.write(conn, path=0, plen=24, expect=RxCode.NO_CONNECTION, name="after-teardown")
    got = {}
    placed, data, acks = [], [], []

    async def monitor(ctx):
        ctx.set(rx.m_ack.ready, 1)
        ctx.set(rx.m_place.ready, 1)
        ctx.set(rx.m_data.ready, 1)
        ctx.set(rx.m_cqe.ready, 1)
        async for _, _, pv, pp, dv, dp, av, ap in ctx.tick().sample(
                rx.m_place.valid, rx.m_place.payload.as_value(), rx.m_data.valid,
                rx.m_data.payload.as_value(), rx.m_ack.valid, rx.m_ack.payload.as_value()):
            if pv:
                placed.append(unpack(lay.place, pp))
            if dv:
                data.append(unpack(payload_layout(WIDTH), dp))
            if av:
                acks.append(ap)

    async def bench(ctx):
        bus = regs.s_axil
        for cw in s.writes:
            for w in row_writes(rmap, cw.table, cw.addr, cw.value, name=cw.name):
                assert await axil_write(ctx, bus, w.addr, w.data, w.strb) == OKAY, w
        await send_packet(ctx, rx, first)
        got["after_first"] = await read_counters(ctx, bus)
        for w in row_writes(rmap, teardown.table, teardown.addr, teardown.value, name="teardown"):
            assert await axil_write(ctx, bus, w.addr, w.data, w.strb) == OKAY, w
        await send_packet(ctx, rx, after)
        got["after_teardown"] = await read_counters(ctx, bus)

    sim = Simulator(m)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.add_process(monitor)
    sim.run()
    assert "after_teardown" in got, "the test bench did not finish"

    exp1 = rxc.expected(s.writes + [first], **SMALL)
    assert exp1["outcomes"][-1].code == RxCode.ACCEPTED
    assert got["after_first"] == exp1["counters"]
    assert got["after_first"][RxCode.ACCEPTED] == 1
    exp2 = rxc.expected(s.writes + [first, teardown, after], **SMALL)
    assert exp2["outcomes"][-1].code == RxCode.NO_CONNECTION
    assert got["after_teardown"] == exp2["counters"]
    assert got["after_teardown"][RxCode.NO_CONNECTION] == 1
    # the accepted packet was placed, with its bytes; the dropped one was not
    assert [pack(lay.place, p) for p in placed] == exp2["place"] and len(placed) == 1
    nb = WIDTH // 8
    written = b"".join(b["data"].to_bytes(nb, "little")[:b["keep"].bit_length()] for b in data)
    assert written == first.payload
    assert acks == exp2["ack"]


def test_top_in_lockstep_with_both_models():
    """MR-REG-060, MR-REG-043, MR-REG-050, MR-REG-023, MR-RX-070: the top (registers + RX
    engine) against the two cycle models joined as the top joins them, every output of both
    blocks (also ``m_cfg`` and the counter port between them) compared every cycle, with random
    idle cycles and backpressure: setup over AXI4-Lite, the RX engine's window and bad-input
    cases, every counter read over AXI4-Lite, teardown of a connection and a key, their packets
    refused, the counters again; then the RX checker over it all."""
    from amaranth.hdl import Value
    from metaroce.models.regs_cases import (Driver, PhasedDriver, RegsRxModel, counter_items,
                                            counters_read)
    from metaroce.tb.lockstep import Core, drive_amaranth, model_port_lists

    m, regs, rx = _top()
    lay = rx.lay
    rmap = register_map(lay)
    s = rxc.Setup(**SMALL, seed=9, n_conns=3)
    conn = s.conns[0]
    setup = [w for cw in s.writes for w in row_writes(rmap, cw.table, cw.addr, cw.value, name=cw.name)]
    cases1 = rxc.window_cases(s) + rxc.bad_cases(s) + rxc.burst_same_path(s, 10, plen=9)
    teardown = rxc.CfgWrite(TABLE_CONN, conn.qp, 0, "teardown")
    revoke = dataclasses.replace(s.key_write(s.keys[0], valid=0), name="revoke")
    cases2 = [s.write(conn, path=p % conn.n_paths, plen=8, expect=RxCode.NO_CONNECTION, name=f"dead{p}")
              for p in range(4)] + [s.write(s.conns[1], path=0, plen=8, key=s.keys[0],
                                            expect=RxCode.ACCESS, name="revoked-key")]
    kw = {"p_idle": 0.3, "p_bp": 0.4}
    phases = [Driver(setup, seed=1, **kw),
              rxc.Driver(WIDTH, cases1, lay.cfg, seed=2, read_counters=False, poll_regs=False, **kw),
              Driver(counter_items(), seed=3, **kw),
              Driver([w for cw in (teardown, revoke)
                      for w in row_writes(rmap, cw.table, cw.addr, cw.value, name=cw.name)], seed=4, **kw),
              rxc.Driver(WIDTH, cases2, lay.cfg, seed=5, read_counters=False, poll_regs=False, **kw),
              Driver(counter_items(), seed=6, **kw)]
    model = RegsRxModel(WIDTH, **SMALL)
    ins, outs = model_port_lists(model)

    def signal(name):
        obj = regs if name.startswith(("s_axil", "m_cfg")) or name == "reg_addr" else rx
        for part in name.split("__"):
            obj = getattr(obj, part)
        return Value.cast(obj)

    sig = {n: signal(n) for n in ins + outs}
    drv = PhasedDriver(phases)
    core = Core(model, ins, outs, {n: len(v) for n, v in sig.items()})
    sim = Simulator(m)
    sim.add_clock(1e-8)
    drive_amaranth(sim, core, drv, sig, busy=model.busy)
    sim.run()
    assert core.mismatches == 0 and core.cycle > 1000

    for d in (phases[0], phases[3]):
        assert [resp for _, resp in d.res["b"]] == [OKAY] * len(d.items)
    before = rxc.expected(s.writes + cases1, **SMALL)["counters"]
    assert counters_read(rmap, phases[2]) == before
    items = s.writes + cases1 + [teardown, revoke] + cases2
    res = {k: phases[1].res[k] + phases[4].res[k] for k in ("ack", "place", "data", "cqe")}
    res["counters"] = counters_read(rmap, phases[5])
    exp = rxc.check(items, res, **SMALL)
    assert [o.code for o in exp["outcomes"][-5:]] == [RxCode.NO_CONNECTION] * 4 + [RxCode.ACCESS]
    assert res["counters"][RxCode.NO_CONNECTION] == before[RxCode.NO_CONNECTION] + 4
