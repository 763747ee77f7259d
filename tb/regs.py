"""cocotb testbench of the host register block (hdl/regs.py) against its cycle model
(models/regs.py), under Verilator (MR-REG-050, MR-REG-051).

cocotb tests here:

``regs_lockstep``
    the block's one driver (models/regs_cases.py: the map walk, counter pairs, RX rows, a
    random mix with random delays and backpressure on every channel; then overlapped read and
    write channels) through :func:`metaroce.tb.lockstep.drive` with ``registered_outputs``
    (MR-REG-043), then the one checker. Results to ``REGS_OUT`` (JSON) if set.
``regs_axil_master``
    cocotbext-axi's ``AxiLiteMaster`` (random pauses on AW, W, B, AR and R) and a random
    ``m_cfg.ready``, with the lockstep monitor comparing every cycle: registers written
    (whole words and single bytes) and read back, rows committed and global writes as
    records, SLVERR, counter pairs from a moving counter stand-in, reads and writes at once.

Instance: ``REGS_CONNS``, ``REGS_PATHS``, ``REGS_KEYS`` (default 256 x 4, 256 keys); seed
``REGS_SEED``; random accesses ``REGS_RANDOM``.
"""
from __future__ import annotations

import json
import logging
import os
import random
import time

import cocotb

from metaroce.models import regs_cases as rc
from metaroce.models.regs import (CTR_BASE, ID, OKAY, SLVERR, RegFile, RegsCycleModel, ctr_base,
                                  register_map)
from metaroce.models.rx import N_COUNTERS, TABLE_KEY, TABLE_PATH, pack, unpack

from .lockstep import Lockstep, drive, model_port_lists
from .streams import SEP, ReadyRandomiser, random_pause


def _instance():
    return tuple(int(os.environ.get(k, d)) for k, d in (("REGS_CONNS", 256), ("REGS_PATHS", 4),
                                                        ("REGS_KEYS", 256)))


@cocotb.test()
async def regs_lockstep(dut):
    inst = _instance()
    seed = int(os.environ.get("REGS_SEED", "1"))
    n_random = int(os.environ.get("REGS_RANDOM", "300"))
    model = RegsCycleModel(*inst)
    ins, outs = model_port_lists(model)
    h = Lockstep(dut, model, ins, outs)
    for name in ins:
        getattr(dut, name).value = 0
    await h.start(monitor=False)
    rm = register_map(model.lay)
    items = rc.standard_items(rm, seed=seed, n_random=n_random)
    drv = rc.Driver(items, seed=seed, p_idle=0.3, p_bp=0.4, sources=model.sources)
    t0 = time.perf_counter()
    n1 = await drive(h, drv, busy=model.busy, registered_outputs=True)
    wall = time.perf_counter() - t0
    rf = rc.check(drv.items, drv.res, drv.ctr, model.lay)
    # reads and writes at once on their own channels
    items2 = rc.random_accesses(rm, random.Random(seed + 1), n_random, safe_reads=True)
    drv2 = rc.Driver(items2, seed=seed + 1, p_idle=0.2, p_bp=0.3, overlap=True, sources=model.sources)
    n2 = await drive(h, drv2, busy=model.busy, registered_outputs=True)
    rc.check(drv2.items, drv2.res, drv2.ctr, model.lay, rf)     # from where the first run left it
    assert h.mismatches == 0
    out = os.environ.get("REGS_OUT")
    if out:
        with open(out, "w") as f:
            json.dump({"accesses": len(items) + len(items2), "cycles": n1 + n2,
                       "records": len(drv.res["cfg"]) + len(drv2.res["cfg"]),
                       "lockstep_cycles_per_s": round(n1 / wall) if wall else None,
                       "mismatches": h.mismatches}, f)


class _CounterStandIn:
    """The counter ports for the master test (the RX engine's, the parser's and the TX half's
    when the block has them): each ``reg_data`` is its source's counter ``reg_addr`` of the
    previous cycle (rc.Counters), written right after each rising edge."""

    def __init__(self, dut, seed, sources=("rx",)):
        self.dut = dut
        self.ctr = rc.Counters(random.Random(seed), sources=sources)
        self.cycle = 0
        self._task = cocotb.start_soon(self._run())

    async def _run(self):
        from cocotb.triggers import ReadOnly, RisingEdge
        edge, ro = RisingEdge(self.dut.clk), ReadOnly()
        while True:
            await ro
            addrs = {src: int(getattr(self.dut, ("" if src == "rx" else src + "_") + "reg_addr").value)
                     for src in self.ctr.sources}
            await edge
            self.ctr.clock(self.cycle, addrs)
            self.cycle += 1
            for name, v in self.ctr.inputs().items():
                getattr(self.dut, name).value = v


@cocotb.test()
async def regs_axil_master(dut):
    from cocotbext.axi import AxiLiteBus, AxiLiteMaster
    inst = _instance()
    seed = int(os.environ.get("REGS_SEED", "1"))
    rng = random.Random(seed)
    model = RegsCycleModel(*inst)
    ins, outs = model_port_lists(model)
    for name in ins:
        getattr(dut, name).value = 0
    h = Lockstep(dut, model, ins, outs, transfers=["m_cfg"])
    master = AxiLiteMaster(AxiLiteBus.from_prefix(dut, "s_axil", bus_separator=SEP), dut.clk, dut.rst)
    for lg in ("cocotb.regs_256x4.s_axil", "cocotb.regs.s_axil", f"cocotb.{dut._name}.s_axil"):
        logging.getLogger(lg).setLevel(logging.WARNING)
    wi, ri = master.write_if, master.read_if
    for k, ch in enumerate((wi.aw_channel, wi.w_channel, wi.b_channel, ri.ar_channel, ri.r_channel)):
        ch.set_pause_generator(random_pause(0.35, random.Random(seed * 10 + k)))
    ReadyRandomiser(dut.m_cfg__ready, dut.clk, pause=0.4, rng=random.Random(seed + 7))
    counters = _CounterStandIn(dut, seed + 11, model.sources)
    await h.start()

    rf = RegFile(model.lay)            # the expected register file, access by access
    rm = rf.map
    records = []

    async def write(addr, data: bytes):
        """One AxiLiteMaster write (strobes from the address and length) and its expectation."""
        resp = await master.write(addr, data)
        word, lane = addr & ~3, addr & 3
        strb = ((1 << len(data)) - 1) << lane
        value = int.from_bytes(data, "little") << (8 * lane)
        r, emit, es, ec = rf.write(word, value, strb)
        rf.apply_error(es, ec)
        if emit is not None:
            records.append(pack(model.lay.cfg, rf.record(emit == "global")))
        assert int(resp.resp) == r, f"write {addr:#x}: {resp.resp}, expected {r}"

    async def read(addr):
        first = counters.cycle
        resp = await master.read(addr, 4)
        last = counters.cycle
        return int(resp.resp), int.from_bytes(resp.data, "little"), first, last

    async def read_expect(addr):
        got = await read(addr)
        r, value, es = rf.read(addr, 0)
        rf.apply_error(es, 0)
        assert got[:2] == (r, value), f"read {addr:#x}: {got[:2]}, expected {(r, value)}"

    assert (await read(0))[:2] == (OKAY, ID)
    # a key row and a path row through the window, some words written byte by byte
    key = pack(model.lay.key, {"valid": 1, "rkey": 0xABCD_0003, "base": 0x1234_5678_9ABC_DEF0,
                               "length": 1 << 20, "access": 0xF})
    path = pack(model.lay.path, {"cum": 0xFFFFF0, "high": 0xFFFFF0})
    for table, row_addr, value in ((TABLE_KEY, 3, key), (TABLE_PATH, 9, path)):
        for w in rc.row_writes(rm, table, row_addr, value):
            if rng.random() < 0.3:
                for b in range(4):
                    await write(w.addr + b, bytes([(w.data >> (8 * b)) & 0xFF]))
            else:
                await write(w.addr, w.data.to_bytes(4, "little"))
        for i in range(rm.data_words):
            await read_expect(rm.get(f"CFG_DATA{i}").offset)
    await write(rm.get("GLOBAL_ACK_EVERY").offset, bytes([3]))
    await write(rm.get("GLOBAL_MTU_LOG2").offset + 1, bytes([0xFF]))    # byte 1: outside the field
    await read_expect(rm.get("GLOBAL_MTU_LOG2").offset)
    # SLVERR and the error bits
    await write(rm.get("ID").offset, b"\0\0\0\0")
    await read_expect(0xFF0)
    await read_expect(rm.get("CFG_COMMIT").offset)
    await read_expect(rm.get("ERROR").offset)
    await write(rm.get("ERROR").offset, bytes([3]))
    await read_expect(rm.get("ERROR").offset)
    # counter pairs against the stand-in's history (MR-REG-031)
    # (MR-REG-033/034: of every counter source the block has)
    ctrs = [(r.source, r.index) for r in rm.regs if r.kind == "ctr_lo"]
    for _ in range(15):
        src, k = rng.choice(ctrs)
        r1, lo, f1, l1 = await read(ctr_base(src) + 8 * k)
        r2, hi, _, _ = await read(ctr_base(src) + 8 * k + 4)
        assert r1 == r2 == OKAY
        held = counters.ctr.held(k, f1, l1, src)
        assert (hi << 32 | lo) in held, f"{src} counter {k}: {hi << 32 | lo:#x} not one of {[hex(v) for v in held]}"
    assert (await read(CTR_BASE + 8 * N_COUNTERS))[0] == SLVERR
    rf.apply_error(2, 0)
    # reads and writes in flight at once (constants only: their answers do not depend on order)
    tasks = []
    for i in range(12):
        tasks.append(cocotb.start_soon(master.read(rm.get("PARAMS").offset, 4)))
        tasks.append(cocotb.start_soon(master.write(rm.get("CFG_DATA0").offset, (i * 0x01010101).to_bytes(4, "little"))))
    for t in tasks:
        await t
    for t in tasks[0::2]:
        got = t.result()
        assert int.from_bytes(got.data, "little") == rm.get("PARAMS").reset and int(got.resp) == OKAY
    rf.write(rm.get("CFG_DATA0").offset, 11 * 0x01010101, 0xF)
    await read_expect(rm.get("CFG_DATA0").offset)
    await h.cycles(20)
    h.stop()
    h.check()
    assert h.mismatches == 0
    got = [t["payload"] for _, t in h.transfers["m_cfg"]]
    assert got == records, f"records {[unpack(model.lay.cfg, v) for v in got]}"
    assert len(records) == 4 and h.core.cycle > 200
