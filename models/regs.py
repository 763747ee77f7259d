"""The host register block: AXI4-Lite registers in front of the RX engine, with the parser's and
the TX half's counters (docs/spec/hw-regs.md, MR-REG-*; engine.md MR-ENG-006).

The register map is declared once here (:func:`register_map`, one :class:`Reg` per 32-bit
register: name, byte offset, width, access, reset, description); the RTL's address decode
(hdl/regs.py), this model, the table of docs/spec/hw-regs.md (:func:`markdown_table`) and the C
header (:func:`c_header`) are made from it.

Two layers, as for the RX engine:

* :class:`RegFile`: the registers' semantics, one AXI4-Lite access per call
  (:meth:`RegFile.write` and :meth:`RegFile.read` return the response and what the access did:
  the ``s_cfg`` record a write emits, the error bits it sets or clears);
* :class:`RegsCycleModel`: the hardware's timing around it, ``step(inputs) -> outputs`` once per
  clock with the Verilog port names (MR-REG-040..043), for the lockstep harness.

models/ never imports hdl/.
"""
from __future__ import annotations

from dataclasses import dataclass

from . import records
from . import rx as _rx
from .rx import (ACK_EVERY_RESET, CTR_ABANDONED, CTR_ACKS, CTR_CE, CTR_CQES, CTR_DUP_CHUNKS,
                 CTR_MSG_REFUSED, CTR_NAKS, CTR_PLACED_BYTES,
                 GLOBAL, MTU_LOG2_RESET, N_COUNTERS, TABLE_GLOBAL, RxCode, layouts, pack)

__all__ = ["Reg", "RegMap", "register_map", "RegFile", "RegsCycleModel", "markdown_table",
           "c_header", "counter_names", "parser_counter_names", "tx_counter_names", "regs_model",
           "regs_model_256x4", "ADDR_BITS", "OKAY", "SLVERR", "ID",
           "VERSION", "ERR_WRITE", "ERR_READ", "ERR_COMMIT", "CTR_BASE", "PARSER_CTR_BASE",
           "TX_CTR_BASE", "CFG_DATA_BASE", "MAX_DATA_WORDS", "INPUTS", "OUTPUTS", "SOURCES",
           "ctr_base", "port_lists", "ENG_CTR_BASE", "eng_counter_names", "PACE_BASE",
           "PACE_INPUTS", "PACE_OUTPUTS",
           "HINT_BASE", "HINT_OUTPUTS", "HINT_REG_OF", "hint_registers"]

#: MR-REG-002: byte address bits of the AXI4-Lite port (a 4 KiB window).
ADDR_BITS = 12
#: MR-REG-004: AXI4-Lite responses.
OKAY, SLVERR = 0b00, 0b10
#: MR-REG-010: the ID register's value ("MRRG") and the map's version (2: the parser's and
#: the TX half's counters, MR-REG-013/033/034).
ID = 0x4D525247
VERSION = 2
#: MR-REG-012: ERROR bits.
ERR_WRITE, ERR_READ, ERR_COMMIT = 1 << 0, 1 << 1, 1 << 2
#: MR-REG-020/030: where the row window's data words and the counters start.
CFG_DATA_BASE = 0x080
MAX_DATA_WORDS = 32
CTR_BASE = 0x100
#: MR-REG-033/034: the parser's and the TX half's counter windows (16 counters each at most:
#: their ``reg_addr`` is 4 bits, the held address's bits [6:3]).
PARSER_CTR_BASE = 0x200
TX_CTR_BASE = 0x280
#: MR-ENG-143: the whole engine's own counters (its READ responses' join), after the TX half's
ENG_CTR_BASE = 0x300
#: MR-REG-062: the pacing window (with ``pacing``): after the engine's counter window
PACE_BASE = 0x380
#: MR-REG-065: the ports the pacing window adds (the pacer's write, its static configuration)
PACE_INPUTS = ("m_pace__ready",)
PACE_OUTPUTS = ("m_pace__payload", "m_pace__valid", "pace_mtu_wl", "pace_line_mbps")
#: MR-REG-073: the hint window (with ``hint``): after the pacing window
HINT_BASE = 0x3A0
#: MR-REG-074/075: the ports the hint window adds (each a register's value) and their registers
HINT_REG_OF = {"hint_line_mbps": "HINT_LINE_MBPS", "hint_share_ns": "HINT_SHARE_NS",
               "hint_mtu": "HINT_MTU", "cc_on": "CC_ON", "cc_beta_q": "CC_BETA_Q", "cc_cap": "CC_CAP",
               "cc_line_mbps": "CC_LINE_MBPS", "cc_base_rtt_ns": "CC_BASE_RTT_NS"}
HINT_OUTPUTS = tuple(HINT_REG_OF)
#: MR-REG-030/033/034: the counter sources, their windows and their ports' name prefixes
#: (``<prefix>reg_addr`` out, ``<prefix>reg_data`` in).
SOURCES = ("rx", "parser", "tx", "eng")
_BASE = {"rx": CTR_BASE, "parser": PARSER_CTR_BASE, "tx": TX_CTR_BASE, "eng": ENG_CTR_BASE}
_PREFIX = {"rx": "", "parser": "parser_", "tx": "tx_", "eng": "eng_"}
_ADDR_BITS = {"rx": 5, "parser": 4, "tx": 4, "eng": 4}
#: MR-REG-011: the global registers' reset values, by GLOBAL field: the RX engine's
#: ``<FIELD>_RESET`` constant (0 for a field without one).
GLOBAL_RESET = {name: getattr(_rx, f"{name.upper()}_RESET", 0) for name, _ in GLOBAL}
assert GLOBAL_RESET["ack_every"] == ACK_EVERY_RESET and GLOBAL_RESET["mtu_log2"] == MTU_LOG2_RESET

RO, RW, WO, W1C = "RO", "RW", "WO", "W1C"


@dataclass(frozen=True)
class Reg:
    """One 32-bit register of the map (MR-REG-003)."""
    name: str
    offset: int             # byte offset, a multiple of 4
    width: int              # implemented bits [width-1:0]; the others read 0, writes ignore them
    access: str             # RO, RW, WO or W1C
    reset: int
    desc: str
    kind: str               # what the RTL builds for it: const, store, global, error, commit, ctr_lo, ctr_hi
    index: int = 0          # data word, GLOBAL field or counter index
    source: str = ""        # a counter's source (SOURCES): rx, parser or tx

    @property
    def mask(self):
        return (1 << self.width) - 1


def counter_names():
    """MR-REG-030: the RX engine's counters by index (MR-RX-050)."""
    names = [c.name for c in RxCode]
    for i, n in ((CTR_ACKS, "ACKS"), (CTR_NAKS, "NAKS"), (CTR_CE, "CE"),
                 (CTR_ABANDONED, "ABANDONED"), (CTR_PLACED_BYTES, "PLACED_BYTES"),
                 (CTR_CQES, "CQES"), (CTR_DUP_CHUNKS, "DUP_CHUNKS"), (CTR_MSG_REFUSED, "MSG_REFUSED")):
        assert i == len(names)
        names.append(n)
    assert len(names) == N_COUNTERS
    return names


def parser_counter_names():
    """MR-REG-033: the parser's counters by index (MR-HW-060, MR-HW-082): one per ``Reason``
    code (NONE is ACCEPTED, NOT_ROCE is BYPASSED), then OVERFLOW."""
    from .parser import N_COUNTERS as N_PARSER, OVERFLOW_COUNTER
    from .wire import Reason
    names = ["ACCEPTED" if c == Reason.NONE else "BYPASSED" if c == Reason.NOT_ROCE else c.name
             for c in sorted(Reason)]
    assert [int(c) for c in sorted(Reason)] == list(range(len(names))) and OVERFLOW_COUNTER == len(names)
    names.append("OVERFLOW")
    assert len(names) == N_PARSER
    return names


def tx_counter_names():
    """MR-REG-034: the TX half's counters by index: the retransmit unit's (MR-TX-040), then the
    TX half's own (MR-TX-126), as its ``reg_addr`` numbers them."""
    from .retransmit import CTR
    from .tx import TX_CTR, TX_CTR_BASE as TX_OWN
    # the unit's counters below the TX's own (MR-TX-181: its tail_probes is not mapped)
    names = [n.upper() for n, i in sorted(CTR.items(), key=lambda kv: kv[1]) if i < TX_OWN]
    assert len(names) == TX_OWN
    names += [n.upper() for n, _ in sorted(TX_CTR.items(), key=lambda kv: kv[1])]
    assert len(names) <= 1 << _ADDR_BITS["tx"]
    return names


def eng_counter_names():
    """MR-ENG-143: the whole engine's own counters (``models.engine.ENG_CTR``): the READ
    responses handed from the RX engine to the TX half, those completed and those failed; then
    (MR-ENG-226, MR-REG-061) the atomic executor's (``models.atomic.ATOM_CTR``, from
    ``ATOM_CTR_BASE``); then (MR-REG-070) PSN_IGNORED, the initial-PSN writes the TX half ignored
    (hw-engine.md MR-ENG-305, ``models.engine.PSN_IGNORED_CTR``)."""
    from .atomic import ATOM_CTR, ATOM_CTR_BASE
    from .engine import ENG_CTR, PSN_IGNORED_CTR
    names = [n.upper() for n, _ in sorted(ENG_CTR.items(), key=lambda kv: kv[1])]
    assert len(names) == ATOM_CTR_BASE
    names += [n.upper() for n, _ in sorted(ATOM_CTR.items(), key=lambda kv: kv[1])]
    assert len(names) == PSN_IGNORED_CTR
    names.append("PSN_IGNORED")
    assert len(names) <= 1 << _ADDR_BITS["eng"]
    return names


_NAMES = {"rx": counter_names, "parser": parser_counter_names, "tx": tx_counter_names,
          "eng": eng_counter_names}
_REG_PREFIX = {"rx": "CTR_", "parser": "PARSER_", "tx": "TX_", "eng": "ENG_"}
_WHAT = {"rx": "RX counter", "parser": "parser counter", "tx": "TX counter", "eng": "engine counter"}


def ctr_base(source):
    """MR-REG-030/033/034: the byte offset of a source's counter 0."""
    return _BASE[source]


def port_lists(parser=True, tx=True, eng=False, pacing=False, hint=False):
    """MR-REG-002: ``(inputs, outputs)``, the Verilog names of the block's ports with the parser's
    and the TX half's counter ports or without (and the engine's own, MR-ENG-143; the pacing
    window's, MR-REG-065)."""
    srcs = [s for s, on in (("parser", parser), ("tx", tx), ("eng", eng)) if on]
    return (_INPUTS + tuple(_PREFIX[s] + "reg_data" for s in srcs) + (PACE_INPUTS if pacing else ()),
            _OUTPUTS + tuple(_PREFIX[s] + "reg_addr" for s in srcs) + (PACE_OUTPUTS if pacing else ())
            + (HINT_OUTPUTS if hint else ()))


@dataclass(frozen=True)
class RegMap:
    """The register map of one RX instance."""
    lay: object             # models.rx.Layouts
    regs: tuple
    data_words: int
    sources: tuple = ("rx",)    # the counter sources it has (SOURCES)

    def n_counters(self, source):
        return sum(1 for r in self.regs if r.kind == "ctr_lo" and r.source == source)

    def by_word(self):
        return {r.offset >> 2: r for r in self.regs}

    def get(self, name):
        return next(r for r in self.regs if r.name == name)


def _log2(n):
    return (n - 1).bit_length()


def register_map(lay=None, *, parser=True, tx=True, eng=False, pacing=False, hint=False) -> RegMap:
    """MR-REG-010..013, MR-REG-020, MR-REG-030/033/034: the registers of the block serving the RX
    instance ``lay`` (``models.rx.layouts(...)``; default the engine's instance), with the
    parser's and the TX half's counter windows or without (MR-REG-001); ``eng``: the whole
    engine's own counters at 0x300 (MR-ENG-143); ``pacing``: the pacing window at 0x380
    (MR-REG-062..064); ``hint``: the hint window at 0x3A0 (MR-REG-073..075)."""
    lay = lay or layouts()
    sources = [s for s, on in (("rx", True), ("parser", parser), ("tx", tx), ("eng", eng)) if on]
    names = {s: _NAMES[s]() for s in sources}
    cfg = dict(lay.cfg)
    data_bits, addr_bits = cfg["data"].width, cfg["addr"].width
    words = -(-data_bits // 32)
    if words > MAX_DATA_WORDS:
        raise ValueError(f"a {data_bits}-bit row needs {words} data words; the window has {MAX_DATA_WORDS}")
    params = _log2(lay.conns) | _log2(lay.paths) << 8 | _log2(lay.keys) << 16 | words << 24
    regs = [
        Reg("ID", 0x000, 32, RO, ID, 'identifies the block: 0x4D525247 ("MRRG")', "const"),
        Reg("VERSION", 0x004, 32, RO, VERSION, "version of this register map", "const"),
        Reg("PARAMS", 0x008, 32, RO, params,
            "instance: [7:0] log2 connections, [15:8] log2 paths, [23:16] log2 keys, "
            "[31:24] CFG_DATA words", "const"),
        Reg("ERROR", 0x00C, 3, W1C, 0,
            "sticky: [0] a write answered SLVERR, [1] a read answered SLVERR, "
            "[2] a commit of table 0 refused", "error"),
        # MR-ENG-143: bits [31:24] the engine's own counters (at 0x300), in the map that has them
        Reg("CTR_COUNTS", 0x03C, 32 if eng else 24, RO,
            len(names["rx"]) | len(names.get("parser", ())) << 8 | len(names.get("tx", ())) << 16
            | len(names.get("eng", ())) << 24,
            "counters: [7:0] RX (at 0x100), [15:8] parser (at 0x200), [23:16] TX (at 0x280)"
            + (", [31:24] engine (at 0x300)" if eng else "") + "; 0: none (MR-REG-013)", "const"),
    ]
    for i, (name, f) in enumerate(GLOBAL):
        regs.append(Reg(f"GLOBAL_{name.upper()}", 0x010 + 4 * i, f.width, RW, GLOBAL_RESET.get(name, 0),
                        f"RX global row field `{name}`; a write sends the global row (MR-REG-021)",
                        "global", i))
    regs += [
        Reg("CFG_TABLE", 0x040, cfg["table"].width, RW, 0,
            "row window: table (1 connection, 2 key, 3 path, 4 message-table stream row, 5 receive row, 6 outstanding READ, 8 initiator depth, 9 initial send PSN; 0 is refused)", "store"),
        Reg("CFG_ADDR", 0x044, addr_bits, RW, 0, "row window: row index in that table", "store"),
        Reg("CFG_COMMIT", 0x048, 1, WO, 0,
            "row window: writing 1 to bit 0 sends {CFG_TABLE, CFG_ADDR, CFG_DATA} as one row (MR-REG-022)",
            "commit"),
    ]
    for i in range(words):
        w = min(32, data_bits - 32 * i)
        regs.append(Reg(f"CFG_DATA{i}", CFG_DATA_BASE + 4 * i, w, RW, 0,
                        f"row window: row bits [{32 * i + w - 1}:{32 * i}]", "store", i))
    for src in sources:
        base, pre, what = _BASE[src], _REG_PREFIX[src], _WHAT[src]
        assert len(names[src]) <= 1 << _ADDR_BITS[src]
        for i, n in enumerate(names[src]):
            regs.append(Reg(f"{pre}{n}_LO", base + 8 * i, 32, RO, 0,
                            f"{what} {i} bits [31:0]; latches bits [63:32] (MR-REG-031)", "ctr_lo", i, src))
            regs.append(Reg(f"{pre}{n}_HI", base + 8 * i + 4, 32, RO, 0,
                            f"{what} {i} bits [63:32] (MR-REG-031)", "ctr_hi", i, src))
    if pacing:
        regs += pace_registers(lay.conns)
    if hint:
        regs += hint_registers()
    offsets = [r.offset for r in regs]
    assert len(set(offsets)) == len(offsets) and all(o % 4 == 0 and o < 1 << ADDR_BITS for o in offsets)
    return RegMap(lay, tuple(regs), words, tuple(sources))


def pace_registers(conns):
    """MR-REG-062..064: the pacing window's registers (the engine's pacer, hw-cwnd.md MR-CW-097:
    its static configuration and its write ``{conn, rate, set_time, time}``). Resets 0: with
    ``PACE_LINE_MBPS`` 0 no rate is below the line rate, so nothing is paced until configured."""
    from .pacer import RATE_BITS, WL_BITS
    cb = max(1, _log2(conns))
    b = PACE_BASE
    return [
        Reg("PACE_MTU_WL", b, WL_BITS, RW, 0,
            "pacer: a full-MTU data frame's wire length in bytes (static; write before the rates, MR-REG-063)",
            "store"),
        Reg("PACE_LINE_MBPS", b + 0x4, RATE_BITS, RW, 0,
            "pacer: the line rate in Mb/s (static; 0: nothing paced, MR-REG-063)", "store"),
        Reg("PACE_CONN", b + 0x8, cb, RW, 0, "pacer write window: the connection", "store"),
        Reg("PACE_RATE", b + 0xC, RATE_BITS, RW, 0,
            "pacer write window: the connection's rate in Mb/s (0: the line rate)", "store"),
        Reg("PACE_TIME", b + 0x10, 32, RW, 0,
            "pacer write window: the next send time (ns), taken with set_time", "store"),
        Reg("PACE_COMMIT", b + 0x14, 2, WO, 0,
            "pacer write window: writing bit 0 sends {PACE_CONN, PACE_RATE, set_time = bit 1, "
            "PACE_TIME} as one pacer write (MR-REG-064)", "pace_commit"),
    ]


def hint_registers():
    """MR-REG-073..075: the hint window's registers: the receiver's hint block's configuration
    (hw-engine.md MR-ENG-339) and the hinted TX half's windows' (MR-ENG-314, formerly ports), all
    RW, static, reset 0 (``HINT_LINE_MBPS`` 0: no hint computed, the ACKs carry 0; ``CC_ON`` 0:
    the windows off)."""
    from .cwnd import BETA_BITS, RATE_BITS, RTT_BITS, WIN_BITS
    b = HINT_BASE
    rows = [("HINT_LINE_MBPS", RATE_BITS, "receiver's hint: its capacity in Mb/s shared among its senders "
             "(0: no hint, MR-ENG-339)"),
            ("HINT_SHARE_NS", 32, "receiver's hint: the shortest share interval in ns (MR-CC-005)"),
            ("HINT_MTU", 13, "receiver's hint: the MTU in bytes (two MTU packet times per sender, MR-CC-005)"),
            ("CC_ON", 1, "windows: the ACK events drive the congestion windows (MR-ENG-314)"),
            ("CC_BETA_Q", BETA_BITS, "windows: beta in Q16 (MR-ENG-314)"),
            ("CC_CAP", WIN_BITS, "windows: the window cap in bytes (MR-ENG-314)"),
            ("CC_LINE_MBPS", RATE_BITS, "windows: the line rate in Mb/s (MR-ENG-314)"),
            ("CC_BASE_RTT_NS", RTT_BITS, "windows: the base RTT in ns (MR-ENG-314)")]
    return [Reg(name, b + 4 * i, w, RW, 0, desc, "store") for i, (name, w, desc) in enumerate(rows)]


def markdown_table(rmap: RegMap | None = None):
    """MR-REG-003: the register table of docs/spec/hw-regs.md (the engine's instance)."""
    rmap = rmap or register_map()
    rows = ["| offset | name | bits | access | reset | description |", "|---|---|---|---|---|---|"]
    for r in rmap.regs:
        rows.append(f"| `0x{r.offset:03X}` | `{r.name}` | {r.width} | {r.access} | `0x{r.reset:X}` | {r.desc} |")
    return "\n".join(rows)


def c_header(rmap: RegMap | None = None):
    """MR-REG-005: the map as C ``#define``s (offsets, widths, resets)."""
    rmap = rmap or register_map()
    lay = rmap.lay
    out = ["/* MetaRoCE host registers (docs/spec/hw-regs.md), generated by `metaroce regs --c-header`.",
           f" * Instance: {lay.conns} connections x {lay.paths} paths, {lay.keys} keys. */",
           "#ifndef METAROCE_REGS_H", "#define METAROCE_REGS_H", ""]
    for r in rmap.regs:
        out.append(f"#define MR_REG_{r.name:<24} 0x{r.offset:03X}u  /* {r.access}, {r.width} bits, "
                   f"reset 0x{r.reset:X} */")
    out += ["", f"#define MR_REG_CFG_DATA_WORDS {rmap.data_words}u",
            f"#define MR_REG_N_COUNTERS {N_COUNTERS}u",
            f"#define MR_REG_N_PARSER_COUNTERS {rmap.n_counters('parser')}u",
            f"#define MR_REG_N_TX_COUNTERS {rmap.n_counters('tx')}u",
            f"#define MR_REG_ERR_WRITE 0x{ERR_WRITE:X}u", f"#define MR_REG_ERR_READ 0x{ERR_READ:X}u",
            f"#define MR_REG_ERR_COMMIT 0x{ERR_COMMIT:X}u", "", "#endif"]
    return "\n".join(out) + "\n"


def strobe_mask(strb):
    """The bit mask of a 4-bit WSTRB (MR-REG-004)."""
    return sum(0xFF << (8 * i) for i in range(4) if strb >> i & 1)


# ------------------------------------------------------------------ semantics

class RegFile:
    """The registers' state and the effect of one access (MR-REG-004, MR-REG-010/011/012, MR-REG-020..024, MR-REG-030/031)."""

    def __init__(self, lay=None, *, parser=True, tx=True, eng=False, pacing=False, hint=False):
        self.map = register_map(lay, parser=parser, tx=tx, eng=eng, pacing=pacing, hint=hint)
        self.pace_set_time = 0          # MR-REG-064: the last pacing commit's bit 1
        self.lay = self.map.lay
        self.words = self.map.by_word()
        self.value = {r.name: r.reset for r in self.map.regs if r.kind in ("store", "global")}
        self.error = 0
        self.latch_valid = 0
        self.latch_key = None           # (source, index) of the counter the last LO read
        self.latch_hi = 0
        self._data_regs = [r.name for r in self.map.regs if r.kind == "store" and r.name.startswith("CFG_DATA")]
        self._global_regs = [r for r in self.map.regs if r.kind == "global"]

    def decode(self, addr):
        return self.words.get((addr >> 2) & ((1 << (ADDR_BITS - 2)) - 1))

    def row_data(self):
        return sum(self.value[n] << (32 * i) for i, n in enumerate(self._data_regs))

    def global_row(self):
        return pack(GLOBAL, {name: self.value[r.name] for (name, _), r in zip(GLOBAL, self._global_regs)})

    def record(self, is_global):
        """MR-REG-021/022: the ``s_cfg`` record the window (or the global registers) sends."""
        if is_global:
            return {"table": TABLE_GLOBAL, "addr": 0, "data": self.global_row()}
        return {"table": self.value["CFG_TABLE"], "addr": self.value["CFG_ADDR"], "data": self.row_data()}

    def pace_record(self):
        """MR-REG-064: the pacer write the pacing window sends ``{conn, rate, set_time, time}``."""
        v = self.value
        return {"conn": v["PACE_CONN"], "rate": v["PACE_RATE"], "set_time": self.pace_set_time,
                "time": v["PACE_TIME"]}

    def write(self, addr, data, strb):
        """One write: ``(resp, emit, err_set, err_clear)``; ``emit`` is None, ``"global"``,
        ``"row"`` (the record to send, :meth:`record`) or ``"pace"`` (:meth:`pace_record`). Storage changes at once; the error bits
        are the caller's to apply (MR-REG-012: a clear and a set in one cycle keep the set)."""
        r = self.decode(addr)
        mask = strobe_mask(strb)
        if r is None or r.access == RO:
            return SLVERR, None, ERR_WRITE, 0
        if r.kind == "error":
            return OKAY, None, 0, data & mask & r.mask
        if r.kind == "commit":
            if not (strb & 1 and data & 1):
                return OKAY, None, 0, 0
            if self.value["CFG_TABLE"] == TABLE_GLOBAL:
                return SLVERR, None, ERR_COMMIT, 0
            return OKAY, "row", 0, 0
        if r.kind == "pace_commit":
            # MR-REG-064: bit 0 (with its strobe) sends the write; bit 1 is its set_time
            if not (strb & 1 and data & 1):
                return OKAY, None, 0, 0
            self.pace_set_time = data >> 1 & 1
            return OKAY, "pace", 0, 0
        old = self.value[r.name]
        self.value[r.name] = ((old & ~mask) | (data & mask)) & r.mask
        return OKAY, ("global" if r.kind == "global" else None), 0, 0

    def read(self, addr, counter):
        """One read: ``(resp, data, err_set)``; ``counter`` is the 64-bit value of the counter
        the address selects as its source returns it (MR-REG-031). Updates the latch."""
        r = self.decode(addr)
        if r is None or r.access == WO:
            return SLVERR, 0, ERR_READ
        if r.kind == "const":
            return OKAY, r.reset, 0
        if r.kind == "error":
            return OKAY, self.error, 0
        if r.kind in ("store", "global"):
            return OKAY, self.value[r.name], 0
        if r.kind == "ctr_lo":
            self.latch_valid, self.latch_key, self.latch_hi = 1, (r.source, r.index), counter >> 32 & 0xFFFFFFFF
            return OKAY, counter & 0xFFFFFFFF, 0
        assert r.kind == "ctr_hi"
        if self.latch_valid and self.latch_key == (r.source, r.index):
            return OKAY, self.latch_hi, 0
        return OKAY, counter >> 32 & 0xFFFFFFFF, 0

    def apply_error(self, err_set, err_clear):
        self.error = ((self.error & ~err_clear) | err_set) & 0x7


    def counter_port(self, addr):
        """MR-REG-032: the ``reg_data`` input (its Verilog name) whose value a read of ``addr``
        returns, or None when the address is no counter's."""
        r = self.decode(addr)
        return _PREFIX[r.source] + "reg_data" if r is not None and r.kind in ("ctr_lo", "ctr_hi") else None


def counter_index(addr, source="rx"):
    """MR-REG-032: the counter a source's ``reg_addr`` selects for a read address: bits [7:3]
    (the RX engine's) or [6:3] (the parser's and the TX half's)."""
    return (addr >> 3) & ((1 << _ADDR_BITS[source]) - 1)


# ------------------------------------------------------------------ cycle timing

AXIL = "s_axil__"
_INPUTS = tuple(AXIL + n for n in ("awaddr", "awvalid", "wdata", "wstrb", "wvalid", "bready",
                                   "araddr", "arvalid", "rready")) + ("m_cfg__ready", "reg_data")
_OUTPUTS = tuple(AXIL + n for n in ("awready", "wready", "bresp", "bvalid", "arready", "rdata",
                                    "rresp", "rvalid")) + ("m_cfg__payload", "m_cfg__valid", "reg_addr")
#: MR-REG-002: the ports of the block with every counter source (the default).
INPUTS, OUTPUTS = port_lists()


class RegsCycleModel:
    """The register block's timing around :class:`RegFile` (MR-REG-040..043): ``step(inputs)``
    once per clock with every input port's value, returning every output port's value in the
    same cycle. Every output is a register or a function of registers only."""

    def __init__(self, conns=records.CONNS, paths=records.PATHS, keys=1024, *, parser=True, tx=True,
                 eng=False, pacing=False, hint=False):
        self.rf = RegFile(layouts(conns, paths, keys), parser=parser, tx=tx, eng=eng, pacing=pacing, hint=hint)
        self.lay = self.rf.lay
        self.parser, self.tx, self.eng, self.pacing = parser, tx, eng, pacing
        self.hint = bool(hint)          # MR-REG-073: the hint window
        if pacing:
            from .pacer import frame_layouts
            self.pace_lay = frame_layouts(self.lay.conns)["write"]
        self.pace_valid = 0             # MR-REG-065: the pacer write pending on m_pace
        self.sources = self.rf.map.sources
        self.aw_full = self.w_full = 0
        self.aw_addr = self.w_data = self.w_strb = 0
        self.b_valid = self.b_resp = 0
        self.cfg_valid = self.cfg_global = 0
        self.rd1 = self.rd2 = 0         # read: address held (reg_addr out), counter value in
        self.ar_addr = 0
        self.r_valid = self.r_data = self.r_resp = 0
        self.log = []                   # (kind, ...) per completed access, for tests

    def port_names(self):
        ins, outs = port_lists(self.parser, self.tx, self.eng, self.pacing, self.hint)
        return {"inputs": list(ins), "outputs": list(outs)}

    def busy(self):
        return bool(self.aw_full or self.w_full or self.b_valid or self.cfg_valid or self.rd1
                    or self.rd2 or self.r_valid or self.pace_valid)

    def outputs(self):
        """This cycle's outputs (MR-REG-043: from registers only, so known before the inputs)."""
        out = {
            AXIL + "awready": 1 - self.aw_full, AXIL + "wready": 1 - self.w_full,
            AXIL + "bresp": self.b_resp, AXIL + "bvalid": self.b_valid,
            AXIL + "arready": int(not (self.rd1 or self.rd2 or self.r_valid)),
            AXIL + "rdata": self.r_data, AXIL + "rresp": self.r_resp, AXIL + "rvalid": self.r_valid,
            "m_cfg__payload": pack(self.lay.cfg, self.rf.record(self.cfg_global)),
            "m_cfg__valid": self.cfg_valid,
            "reg_addr": counter_index(self.ar_addr),
        }
        for src in self.sources[1:]:
            out[_PREFIX[src] + "reg_addr"] = counter_index(self.ar_addr, src)
        if self.pacing:
            # MR-REG-063/065: the static configuration and the pending write, all registers
            v = self.rf.value
            out.update({"m_pace__payload": pack(self.pace_lay, self.rf.pace_record()),
                        "m_pace__valid": self.pace_valid,
                        "pace_mtu_wl": v["PACE_MTU_WL"], "pace_line_mbps": v["PACE_LINE_MBPS"]})
        if self.hint:
            # MR-REG-075: the hint window's registers on their ports
            out.update({n: self.rf.value[r] for n, r in HINT_REG_OF.items()})
        return out

    def step(self, inputs):
        g = inputs.get
        rf = self.rf
        out = self.outputs()
        awready, wready, arready = out[AXIL + "awready"], out[AXIL + "wready"], out[AXIL + "arready"]
        err_set = err_clear = 0
        # read stage 2 (before the write: it reads the registers as they were, MR-REG-042)
        rd_done = None
        if self.rd2:
            port = rf.counter_port(self.ar_addr)
            resp, value, e = rf.read(self.ar_addr, g(port, 0) if port else 0)
            err_set |= e
            rd_done = (resp, value)
        # write: executes once address and data are held and nothing is pending (MR-REG-040)
        execute = (self.aw_full and self.w_full and not self.b_valid and not self.cfg_valid
                   and not self.pace_valid)
        emit = None
        if execute:
            resp, emit, e, c = rf.write(self.aw_addr, self.w_data, self.w_strb)
            err_set |= e
            err_clear |= c
            self.log.append(("write", self.aw_addr, self.w_data, self.w_strb, resp, emit))
        rf.apply_error(err_set, err_clear)
        # B and m_cfg
        if self.b_valid and g(AXIL + "bready", 0):
            self.b_valid = 0
        if self.cfg_valid and g("m_cfg__ready", 0):
            self.cfg_valid = 0
            self.b_valid, self.b_resp = 1, OKAY
        if self.pace_valid and g("m_pace__ready", 0):
            # MR-REG-065: B once the pacer write was taken, as MR-REG-024's
            self.pace_valid = 0
            self.b_valid, self.b_resp = 1, OKAY
        if execute:
            if emit is None:
                self.b_valid, self.b_resp = 1, resp
            elif emit == "pace":
                self.pace_valid = 1
            else:
                self.cfg_valid, self.cfg_global = 1, int(emit == "global")
        # AW and W
        if execute:
            self.aw_full = self.w_full = 0
        if awready and g(AXIL + "awvalid", 0):
            self.aw_full, self.aw_addr = 1, g(AXIL + "awaddr", 0)
        if wready and g(AXIL + "wvalid", 0):
            self.w_full, self.w_data, self.w_strb = 1, g(AXIL + "wdata", 0), g(AXIL + "wstrb", 0)
        # read path
        if self.r_valid and g(AXIL + "rready", 0):
            self.r_valid = 0
        if rd_done is not None:
            self.r_valid = 1
            self.r_resp, self.r_data = rd_done
            self.log.append(("read", self.ar_addr, rd_done[0], rd_done[1]))
        self.rd2, self.rd1 = self.rd1, 0
        if arready and g(AXIL + "arvalid", 0):
            self.rd1, self.ar_addr = 1, g(AXIL + "araddr", 0)
        return out


def regs_model_256x4(width=64):
    """The model of the register block of the small RX instance (256 x 4, 256 keys); ``width``
    (the RX datapath width) does not change it."""
    return RegsCycleModel(256, 4, 256)


def regs_model(width=64):
    """The model of the register block of the engine's RX instance (4,096 x 8, 1,024 keys)."""
    return RegsCycleModel()
