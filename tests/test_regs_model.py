"""The register map (models/regs.py): the spec's table is the code's, the C header and the CLI,
the register file's semantics access by access, and the cycle model through the block's driver."""
import pathlib
import random
import re
import shutil
import subprocess
import sys

import pytest

from metaroce.models import regs as R
from metaroce.models import regs_cases as rc
from metaroce.models.rx import CTR_PLACED_BYTES, GLOBAL, N_COUNTERS, TABLE_CONN, TABLE_KEY, layouts, pack, unpack

ROOT = pathlib.Path(__file__).resolve().parents[1]
SMALL = layouts(256, 4, 256)


def _doc_table():
    text = (ROOT / "docs" / "spec" / "hw-regs.md").read_text()
    m = re.search(r"<!-- regs-table:.*?-->\n(.*?)\n<!-- /regs-table -->", text, re.S)
    assert m, "hw-regs.md lost its generated register table"
    return m.group(1).strip()


def test_doc_table_matches_map():
    """MR-REG-003: the table in hw-regs.md is generated from the one register map."""
    assert _doc_table() == R.markdown_table()


@pytest.mark.parametrize("inst", [(256, 4, 256), (4096, 8, 1024), (65536, 256, 65536)])
def test_map_covers_the_rx_instance(inst):
    """MR-REG-001, MR-REG-003, MR-REG-010, MR-REG-020, MR-REG-030: aligned unique offsets in the
    4 KiB window; the data words hold the widest row; CFG_ADDR the row index; PARAMS the sizes;
    one LO/HI pair per RX counter."""
    lay = layouts(*inst)
    rm = R.register_map(lay)
    offs = [r.offset for r in rm.regs]
    assert len(set(offs)) == len(offs) and all(o % 4 == 0 and o < 4096 for o in offs)
    cfg = dict(lay.cfg)
    data = [r for r in rm.regs if r.name.startswith("CFG_DATA")]
    assert sum(r.width for r in data) == cfg["data"].width
    assert rm.get("CFG_ADDR").width == cfg["addr"].width
    p = rm.get("PARAMS").reset
    assert [1 << (p >> s & 0xFF) for s in (0, 8, 16)] == list(inst) and p >> 24 == len(data)
    assert len([r for r in rm.regs if r.kind == "ctr_lo" and r.source == "rx"]) == N_COUNTERS
    assert rm.get("CTR_ACCEPTED_LO").offset == R.CTR_BASE and rm.get("CTR_PLACED_BYTES_HI").offset == R.CTR_BASE + 8 * CTR_PLACED_BYTES + 4
    assert [r.reset for r in rm.regs if r.kind == "global"] == [4, 12, 0]     # MR-RX-090: timer off


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "metaroce", *args], capture_output=True, text=True, timeout=120)


def test_c_header(tmp_path):
    """MR-REG-005: ``metaroce regs --c-header`` gives every register's offset; a C compiler, if
    present, accepts it."""
    r = _cli("regs", "--c-header")
    assert r.returncode == 0, r.stderr
    defs = dict(re.findall(r"#define MR_REG_(\w+)\s+0x([0-9A-F]+)u", r.stdout))
    for reg in R.register_map().regs:
        assert int(defs[reg.name], 16) == reg.offset
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc:
        (tmp_path / "t.c").write_text('#include "regs.h"\nint main(void){return MR_REG_CFG_COMMIT == 0x48 ? 0 : 1;}\n')
        (tmp_path / "regs.h").write_text(r.stdout)
        assert subprocess.run([cc, "-Wall", "-Werror", "-o", str(tmp_path / "t"), str(tmp_path / "t.c")]).returncode == 0
        assert subprocess.run([str(tmp_path / "t")]).returncode == 0


def test_cli_table_json_and_errors():
    """MR-REG-005, MR-CLI-001: the table, JSON, and a bad instance as one line on stderr."""
    r = _cli("regs", "--json", "--conns", "256", "--paths", "4", "--keys", "256")
    assert r.returncode == 0, r.stderr
    import json
    j = json.loads(r.stdout)
    assert [x["name"] for x in j["registers"]] == [x.name for x in R.register_map(SMALL).regs]
    r = _cli("regs", "--paths", "3")
    assert r.returncode != 0 and len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr


def _w(rf, name, data, strb=0xF):
    resp, emit, es, ec = rf.write(rf.map.get(name).offset, data, strb)
    rf.apply_error(es, ec)
    return resp, emit


def _r(rf, name_or_addr, counter=0):
    addr = rf.map.get(name_or_addr).offset if isinstance(name_or_addr, str) else name_or_addr
    resp, data, es = rf.read(addr, counter)
    rf.apply_error(es, 0)
    return resp, data


def test_strobes_and_widths():
    """MR-REG-003, MR-REG-004: only strobed bytes change; bits above a register's width read 0."""
    rf = R.RegFile(SMALL)
    assert _w(rf, "CFG_DATA0", 0x11223344) == (R.OKAY, None)
    assert _w(rf, "CFG_DATA0", 0xAABBCCDD, 0b0101) == (R.OKAY, None)
    assert _r(rf, "CFG_DATA0") == (R.OKAY, 0x11BB33DD)
    _w(rf, "CFG_ADDR", 0xFFFFFFFF)
    assert _r(rf, "CFG_ADDR") == (R.OKAY, (1 << dict(SMALL.cfg)["addr"].width) - 1)
    assert _r(rf, R.register_map(SMALL).get("CFG_DATA0").offset | 3) == (R.OKAY, 0x11BB33DD)


def test_slverr_and_error_bits():
    """MR-REG-004, MR-REG-012: unmapped, RO-write and WO-read accesses are SLVERR, change nothing
    and set ERROR bits; W1C clears only the strobed ones written 1; a set wins over a clear."""
    rf = R.RegFile(SMALL)
    assert _w(rf, "ID", 0) == (R.SLVERR, None) and _r(rf, "ID") == (R.OKAY, R.ID)
    assert _r(rf, "CFG_COMMIT") == (R.SLVERR, 0)
    assert _r(rf, 0xFFC) == (R.SLVERR, 0)
    assert _r(rf, "ERROR") == (R.OKAY, R.ERR_WRITE | R.ERR_READ)
    _w(rf, "ERROR", R.ERR_READ, 0x0)                # no strobe: no clear
    assert _r(rf, "ERROR")[1] == R.ERR_WRITE | R.ERR_READ
    _w(rf, "ERROR", R.ERR_READ)
    assert _r(rf, "ERROR")[1] == R.ERR_WRITE
    rf.apply_error(R.ERR_WRITE, R.ERR_WRITE)
    assert rf.error == R.ERR_WRITE


def test_row_window_commit_and_global():
    """MR-REG-020..023: staging is invisible until the commit; the commit sends {table, addr,
    data}; staging persists; table 0 is refused; a global register write sends the global row."""
    rf = R.RegFile(SMALL)
    row = pack(SMALL.key, {"valid": 1, "rkey": 0x1234_5601, "base": 0xDEAD_BEEF_0000, "length": 4096, "access": 2})
    writes = rc.row_writes(rf.map, TABLE_KEY, 0x01, row)
    assert isinstance(writes[-1], rc.Write) and writes[-1].addr == rf.map.get("CFG_COMMIT").offset
    emits = [rf.write(w.addr, w.data, w.strb)[1] for w in writes]
    assert emits == [None] * (len(writes) - 1) + ["row"]
    assert rf.record(False) == {"table": TABLE_KEY, "addr": 1, "data": row}
    assert _w(rf, "CFG_COMMIT", 0b10) == (R.OKAY, None)      # bit 0 clear
    assert _w(rf, "CFG_COMMIT", 1, 0b10) == (R.OKAY, None)   # no strobe on byte 0
    _w(rf, "CFG_TABLE", TABLE_CONN)
    assert _w(rf, "CFG_COMMIT", 1) == (R.OKAY, "row") and rf.record(False)["data"] == row
    _w(rf, "CFG_TABLE", 0)
    assert _w(rf, "CFG_COMMIT", 1) == (R.SLVERR, None) and rf.error == R.ERR_COMMIT
    assert _w(rf, "GLOBAL_MTU_LOG2", 9) == (R.OKAY, "global")
    assert rf.record(True) == {"table": 0, "addr": 0, "data": pack(GLOBAL, {"ack_every": 4, "mtu_log2": 9})}
    # teardown: a connection row of zeros
    td = rc.row_writes(rf.map, TABLE_CONN, 5, 0)
    for w in td:
        rf.write(w.addr, w.data, w.strb)
    assert rf.record(False) == {"table": TABLE_CONN, "addr": 5, "data": 0}
    assert unpack(SMALL.conn, rf.record(False)["data"])["valid"] == 0


def test_counter_latch():
    """MR-REG-030, MR-REG-031: LO latches the same sample's high half; HI of the latched counter
    returns it, HI of another counter a new sample."""
    rf = R.RegFile(SMALL)
    lo3, hi3, lo4 = (R.CTR_BASE + 8 * 3, R.CTR_BASE + 8 * 3 + 4, R.CTR_BASE + 8 * 4 + 4)
    assert _r(rf, lo3, 0x0000_0005_FFFF_FFFF) == (R.OKAY, 0xFFFF_FFFF)
    assert _r(rf, hi3, 0x0000_0006_0000_0000) == (R.OKAY, 5)
    assert _r(rf, lo4, 0x0000_0009_0000_0000) == (R.OKAY, 9)
    assert _r(rf, R.CTR_BASE + 8 * N_COUNTERS) == (R.SLVERR, 0)


def test_parser_and_tx_counter_windows():
    """MR-REG-013, MR-REG-033, MR-REG-034, MR-REG-001: the parser's counters at 0x200 + 8i in
    MR-HW-060's order, the TX half's at 0x280 + 8i (the retransmit unit's, then the TX half's
    own, MR-TX-040/126); CTR_COUNTS says how many of each; without ``parser`` or ``tx`` their
    windows are unmapped and CTR_COUNTS says 0."""
    from metaroce.models.parser import N_COUNTERS as N_PARSER, OVERFLOW_COUNTER
    from metaroce.models.retransmit import CTR
    from metaroce.models.tx import TX_CTR, TX_CTR_BASE
    from metaroce.models.wire import Reason
    rm = R.register_map(SMALL)
    assert rm.sources == ("rx", "parser", "tx")
    assert rm.get("PARSER_ACCEPTED_LO").offset == 0x200 and rm.get("PARSER_ICRC_HI").offset == 0x204 + 8 * Reason.ICRC
    assert rm.get("PARSER_BYPASSED_LO").offset == 0x200 + 8 * Reason.NOT_ROCE
    assert rm.get("PARSER_OVERFLOW_LO").offset == 0x200 + 8 * OVERFLOW_COUNTER
    assert rm.get("TX_GAP_LOSSES_LO").offset == 0x280 + 8 * CTR["gap_losses"]
    assert rm.get("TX_RESENDS_HI").offset == 0x284 + 8 * (TX_CTR_BASE + TX_CTR["resends"])
    assert rm.get("TX_COMPLETIONS_ERR_HI").offset == 0x2FC
    assert rm.get("CTR_COUNTS").reset == N_COUNTERS | N_PARSER << 8 | 16 << 16
    assert R.VERSION == 2
    rf = R.RegFile(SMALL)
    assert _r(rf, "CTR_COUNTS") == (R.OKAY, N_COUNTERS | N_PARSER << 8 | 16 << 16)
    assert _r(rf, 0x200 + 8 * N_PARSER) == (R.SLVERR, 0)                 # beyond the parser's
    for parser, tx in ((False, True), (True, False), (False, False)):
        rf = R.RegFile(SMALL, parser=parser, tx=tx)
        assert _r(rf, "CTR_COUNTS")[1] == N_COUNTERS | (N_PARSER * parser) << 8 | (16 * tx) << 16
        assert _r(rf, 0x200)[0] == (R.OKAY if parser else R.SLVERR)
        assert _r(rf, 0x2FC)[0] == (R.OKAY if tx else R.SLVERR)
        ins, outs = R.port_lists(parser, tx)
        assert ("parser_reg_addr" in outs) == parser and ("tx_reg_data" in ins) == tx


def test_counter_latch_is_one_sources():
    """MR-REG-031, MR-REG-033/034: the latch is of one counter of one source: HI of the parser's
    or the TX half's counter 3 after the RX engine's LO 3 reads a new sample, HI after its own
    LO the latched half."""
    rf = R.RegFile(SMALL)
    assert _r(rf, R.CTR_BASE + 8 * 3, 0x5_0000_0001) == (R.OKAY, 1)
    assert _r(rf, R.PARSER_CTR_BASE + 8 * 3 + 4, 0x7_0000_0000) == (R.OKAY, 7)
    assert _r(rf, R.TX_CTR_BASE + 8 * 3 + 4, 0x8_0000_0000) == (R.OKAY, 8)
    assert _r(rf, R.CTR_BASE + 8 * 3 + 4, 0x9_0000_0000) == (R.OKAY, 5)
    assert _r(rf, R.TX_CTR_BASE + 8 * 3, 0xA_0000_0002) == (R.OKAY, 2)
    assert _r(rf, R.TX_CTR_BASE + 8 * 3 + 4, 0xB_0000_0000) == (R.OKAY, 0xA)


def test_cycle_model_reads_each_sources_port():
    """MR-REG-032..034, MR-REG-050: the cycle model through the driver with a moving stand-in on
    each of the three counter ports: every counter of every source read (pairs, HI alone, HI
    after another source's LO) is a value of that source's counter. Negative control: the same
    run with the parser's and the TX half's ports swapped (a mis-wired block) fails the checker."""
    rm = R.register_map(SMALL)
    items = rc.counter_reads(rm, random.Random(3), n=40)
    assert {it.addr >> 7 for it in items} >= {2, 3, 4, 5}          # every window read
    drv = rc.run_model(items, seed=3, p_idle=0.3, p_bp=0.3)
    assert len(drv.res["r"]) == len(items)

    class Swapped(rc.Driver):
        def inputs(self):
            inp = super().inputs()
            inp["parser_reg_data"], inp["tx_reg_data"] = inp["tx_reg_data"], inp["parser_reg_data"]
            return inp

    from metaroce.models.driver import run_alone
    model = R.RegsCycleModel(256, 4, 256)
    bad = Swapped(items, seed=3, p_idle=0.3, p_bp=0.3, sources=model.sources)
    run_alone(model, bad)
    with pytest.raises(AssertionError, match="LO .* not a value counter"):
        rc.check(bad.items, bad.res, bad.ctr, model.lay)


@pytest.mark.parametrize("shape", ["none", "both"])
def test_cycle_model_through_driver(shape):
    """MR-REG-040..042, MR-REG-050: the cycle model alone through the driver and the checker."""
    rm = R.register_map(SMALL)
    p_idle, p_bp = rc.SHAPES[shape]
    drv = rc.run_model(rc.standard_items(rm, seed=6, n_random=100), seed=6, p_idle=p_idle, p_bp=p_bp)
    assert drv.res["cfg"]


def test_timing_of_one_write_and_one_read():
    """MR-REG-024, MR-REG-040, MR-REG-041: with everything ready, B is valid 2 cycles after AW/W, a record
    write's B one cycle after the record is taken, R 3 cycles after AR."""
    m = R.RegsCycleModel(256, 4, 256)
    A = "s_axil__"
    idle = {A + "bready": 1, A + "rready": 1, "m_cfg__ready": 1}
    outs = [m.step({**idle, A + "awvalid": 1, A + "awaddr": 0x80, A + "wvalid": 1, A + "wdata": 7, A + "wstrb": 0xF})]
    outs += [m.step(idle) for _ in range(4)]
    assert [o[A + "bvalid"] for o in outs[:4]] == [0, 0, 1, 0]
    outs = [m.step({**idle, A + "awvalid": 1, A + "awaddr": 0x10, A + "wvalid": 1, A + "wdata": 3, A + "wstrb": 0xF})]
    outs += [m.step(idle) for _ in range(4)]
    assert [o["m_cfg__valid"] for o in outs[:4]] == [0, 0, 1, 0]
    assert [o[A + "bvalid"] for o in outs[:5]] == [0, 0, 0, 1, 0]
    outs = [m.step({**idle, A + "arvalid": 1, A + "araddr": 0x80})] + [m.step(idle) for _ in range(4)]
    assert [o[A + "rvalid"] for o in outs] == [0, 0, 0, 1, 0] and outs[3][A + "rdata"] == 7
    assert [o[A + "arready"] for o in outs] == [1, 0, 0, 0, 1]


def test_checker_catches_a_torn_counter_read():
    """MR-REG-031, MR-REG-050: a HI answered from a later sample than its LO fails the checker."""
    rm = R.register_map(SMALL)
    items = rc.counter_reads(rm, random.Random(1))
    drv = rc.run_model(items, seed=1, checked=False)
    res = dict(drv.res)
    lo_idx = next(i for i, it in enumerate(items) if it.name == "pair0.lo")
    r = [list(x) for x in res["r"]]
    for x in r:
        if x[0] == lo_idx + 1:
            x[2] ^= 1
    res["r"] = [tuple(x) for x in r]
    with pytest.raises(AssertionError, match="HI"):
        rc.check(items, res, drv.ctr, SMALL)


def test_blocks_and_verilog(tmp_path):
    """MR-REG-001, MR-REG-002: ``regs`` and ``regs_256x4`` are blocks whose models have their RX
    instance's sizes; ``metaroce verilog regs_256x4`` writes a module with the model's ports."""
    from metaroce import blocks
    for name, conns in (("regs", 4096), ("regs_256x4", 256)):
        model = blocks.get(name).make_model(64)
        assert isinstance(model, R.RegsCycleModel) and model.lay.conns == conns
    r = _cli("verilog", "regs_256x4", "--width", "64", "-o", str(tmp_path))
    assert r.returncode == 0, r.stderr
    text = (tmp_path / "regs_256x4_w64.v").read_text()
    assert "module regs_256x4(" in text
    for port in R.INPUTS + R.OUTPUTS:
        assert port in text
