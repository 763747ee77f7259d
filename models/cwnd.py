"""Golden model of the congestion window block, first slice (docs/spec/hw-cwnd.md, MR-CW-*):
the per-path window table and its update on ACK events, the core of MR-CC-002/003/011/013/018.

Two layers, both built on :mod:`metaroce.models.protocol` (``aimd_fx``, ``coupled_cut_fx``,
``debt_take``, ``time_lt``):

* :class:`CwndModel`: the semantics, one record per call (a setup write, an ACK event), with
  the RTL's tables (a path record per connection and path, a connection record per
  connection); this is the packet-level model the endpoint trace is compared with.
* :class:`CwndCycleModel`: the block cycle by cycle, ``step(inputs) -> outputs`` with the
  Verilog port names, for the lockstep harness (tb/lockstep.py): one record at a time, the
  fixed latencies of MR-CW-030.

The port layouts are declared here and imported by the RTL (hdl/cwnd.py); models/ never
imports hdl/.

The second slice (MR-CW-050..056) is :class:`CwndModel`'s unsplit semantics; the hinted block
(MR-CW-060..066) is ``CwndModel(split=True)`` with :class:`CwndControl`, its control path.
"""
from __future__ import annotations

from dataclasses import dataclass

from amaranth.lib import data

from . import protocol as P
from .rx import pack, unpack

__all__ = ["SMALL", "LARGE", "TRACE", "cwnd_model_hinted_trace", "Layouts", "layouts", "check_params", "CwndModel", "CwndCycleModel", "Closed",
           "ACC_MAX", "WIN_BITS", "BYTES_BITS", "PKTS_BITS", "MTU_BITS", "BETA_BITS",
           "QUOT_BITS", "DIV_BITS", "lat_ack", "LAT_ACK", "LAT_SETUP", "INPUTS", "OUTPUTS", "cwnd_model_small",
           "inc_divisor", "band_layouts", "band_model", "LAT_BAND", "CwndBandCycleModel",
           "band_model_cycles", "band_move", "refill_windows", "CwndControl", "LAT_MOVE",
           "lat_hint", "HINT_INPUTS", "cwnd_model_hinted_small", "VERDICT_INPUTS",
           "VERDICT_OUTPUTS", "LAT_PATH", "LAT_RAISE", "cwnd_model_verdicts_small"]

#: MR-CW-001: the small and the large instance.
SMALL = dict(conns=2, paths=4)
LARGE = dict(conns=4096, paths=8)
#: MR-CW-065: the hinted block's instance for both incast traces (4 x 4 and 6 x 2 paths).
TRACE = dict(conns=8, paths=4)
#: MR-CW-011: the CE and ACK accumulators saturate here (the endpoint's ``_ACC_MAX``).
ACC_MAX = 1023
ACC_BITS = 10
#: MR-CW-002: field widths. Windows, floors and the cap in bytes below 2^24 (16 MiB: 4 BDPs of
#: 400 Gb/s x 30 us); an ACK acknowledges at most SEND_WINDOW packets of one MTU.
WIN_BITS = 24
MTU_BITS = 13                        # MTU <= 4096
BYTES_BITS = 21                      # SEND_WINDOW x 4096 = 2^20
PKTS_BITS = 9                        # <= SEND_WINDOW = 256
BETA_BITS = 17                       # Q16, at most Q_ONE
TIME_BITS = P.TIME_BITS
#: MR-CW-031: quotient bits of the increase's division (``DIV_BITS`` per cycle); a larger
#: quotient saturates, as the window it adds to is capped below 2^WIN_BITS anyway.
QUOT_BITS = WIN_BITS + 2
DIV_BITS = 2
#: MR-CW-030: cycles from the accepting cycle of a record to the first cycle its update is
#: valid on ``m_update``: ACK events (read; records registered; accumulators; products in 3
#: (MR-CW-032); cut in 3; divide; increase in 2; debt in 3; writes) and setup writes (read;
#: records registered; window and W in 2; writes).
LAT_SETUP = 5
#: MR-CW-051: the configuration of the hinted band, the endpoint's defaults (400 Gb/s, 10 us).
LINE_MBPS = 400_000
BASE_RTT_NS = 10_000


def lat_ack(div_bits=DIV_BITS):
    """MR-CW-030: an ACK event's latency with ``div_bits`` quotient bits per divider cycle."""
    return QUOT_BITS // div_bits + 15


LAT_ACK = lat_ack()
#: MR-CW-064: a refused event (a hint change found: read; LOAD; HINT) and the extra cycles of
#: a hinted event (HINT, REQ, the band unit's LAT_BAND, the band taken, CLAMP).
LAT_MOVE = 3


def lat_hint(div_bits=DIV_BITS, cached=False):
    """MR-CW-064/066: a hinted event's latency: the band unit's result before the event's
    update, or (``cached``) the connection record's band."""
    return lat_ack(div_bits) + (2 if cached else 32)

INPUTS = ["s_ack__valid", "s_ack__payload", "s_setup__valid", "s_setup__payload",
          "m_update__ready", "mtu", "beta_q", "cap"]
OUTPUTS = ["s_ack__ready", "s_setup__ready", "m_update__valid", "m_update__payload"]
#: MR-CW-060: the hinted block's inputs (the band's configuration added).
HINT_INPUTS = INPUTS + ["line_mbps", "base_rtt_ns"]
#: MR-CW-106: the path verdicts' port.
VERDICT_INPUTS = ["s_path__valid", "s_path__payload"]
VERDICT_OUTPUTS = ["s_path__ready"]
#: MR-CW-112: a verdict's or restore's update, as a setup write's (read; LOAD; the window; W;
#: the writes).
LAT_PATH = 5
#: MR-CW-108: the extra cycles of an ACK event on a collapsed path (RAISE1/2).
LAT_RAISE = 2
#: MR-CW-118: the share-out's divider (one quotient bit a cycle), then per healthy path from the
#: previous update taken to its update valid
LAT_SHARE_DIV = WIN_BITS
LAT_SHARE = 7


def _pow2(name, v, lo, hi):
    if not (lo <= v <= hi) or v & (v - 1):
        raise ValueError(f"{name}={v}: a power of two in {lo}..{hi}")


def check_params(conns, paths):
    """MR-CW-001: connections and paths are powers of two (1..65,536 and 1..8)."""
    _pow2("conns", conns, 1, 1 << 16)
    _pow2("paths", paths, 1, 8)


@dataclass
class Layouts:
    conns: int
    paths: int
    conn_bits: int
    path_bits: int
    sum_bits: int
    ack: data.StructLayout
    setup: data.StructLayout
    update: data.StructLayout
    path_rec: data.StructLayout
    conn_rec: data.StructLayout
    hints: bool = False
    verdict: data.StructLayout = None      # MR-CW-106: the s_path record (``verdicts``)
    verdicts: bool = False


def layouts(conns=SMALL["conns"], paths=SMALL["paths"], hints=False, verdicts=False):
    """MR-CW-002..004: port and table record layouts; ``hints`` (MR-CW-060): the hinted
    block's added fields; ``verdicts`` (MR-CW-106): the path verdicts' port and fields."""
    check_params(conns, paths)
    cb = max(1, (conns - 1).bit_length())
    pb = max(1, (paths - 1).bit_length())
    sb = WIN_BITS + (paths - 1).bit_length()        # the sum of ``paths`` windows
    ack = {"conn": cb, "path": pb, "bytes": BYTES_BITS, "pkts": PKTS_BITS,
           "ce": PKTS_BITS, "now": TIME_BITS, "srtt": TIME_BITS}
    setup = {"conn": cb, "path": pb, "cwnd": WIN_BITS, "active": 1, "open": 1,
             "fresh": 1, "floor": WIN_BITS, "multi": 1}
    update = {"conn": cb, "path": pb, "cwnd": WIN_BITS, "wsum": sb, "debt": sb}
    path_rec = {"cwnd": WIN_BITS, "ce_acc": ACC_BITS, "ack_acc": ACC_BITS,
                "next_dec": TIME_BITS, "active": 1}
    conn_rec = {"wsum": sb, "cut_end": TIME_BITS, "cut_left": sb, "cut_debt": sb,
                "floor": WIN_BITS, "multi": 1}
    if hints:                                   # MR-CW-060
        ack["hint"] = RATE_BITS
        setup.update(move=1, rate=RATE_BITS, debt0=1)
        update.update(rate=RATE_BITS, move=1, refill=1, cwin=WIN_BITS)
        # MR-CW-066: the band of the connection's rate and path count, kept
        conn_rec.update(rate=RATE_BITS, n_paths=4, bvalid=1, bcap=WIN_BITS, bsum=WIN_BITS,
                        bwin=WIN_BITS)
    verdict = None
    if verdicts:                                # MR-CW-106
        setup["share"] = WIN_BITS
        path_rec["collapsed"] = 1
        conn_rec["share"] = WIN_BITS
        verdict = data.StructLayout({"conn": cb, "path": pb, "verdict": 2, "restore": 1,
                                     "healthy": paths})
    S = data.StructLayout
    return Layouts(conns, paths, cb, pb, sb, S(ack), S(setup), S(update), S(path_rec),
                   S(conn_rec), hints, verdict, verdicts)


#: MR-CW-059: the hinted band unit's widths: a rate in Mb/s (at most 524,287: 400 Gb/s fits),
#: the base RTT in ns (at most about 1 ms), r x base RTT, its quotient by 8,000 x n (n <= 8).
RATE_BITS = 19
RTT_BITS = 20
BAND_X_BITS = RATE_BITS + RTT_BITS + 1          # even: two quotient bits a cycle
BAND_Q_BITS = BAND_X_BITS - 12                  # x / 8,000 < 2^(X - 12.9)
#: MR-CW-127: the control path's serial divisions, one quotient bit a cycle: the move's
#: dividend w x r and the refill's shortfall (here, not in models.cwnd_control, so that the
#: RTL's source closure holds no test driver)
MOVE_DIV_BITS = WIN_BITS + RATE_BITS
REFILL_DIV_BITS = BAND_Q_BITS + 3
BAND_D_BITS = 16                                # 8,000 x 8 = 64,000
#: MR-CW-059: cycles from a request taken to its result valid (clamp; the product in three;
#: the division; five corrections).
LAT_BAND = 4 + BAND_X_BITS // 2 + 5


@dataclass
class BandLayouts:
    req: data.StructLayout
    band: data.StructLayout


def band_layouts():
    """MR-CW-059: the hinted band unit's request and result."""
    qb = BAND_Q_BITS
    return BandLayouts(
        data.StructLayout({"hint": RATE_BITS, "n": 4}),
        data.StructLayout({"rate": RATE_BITS, "hw": qb, "cap": qb + 1, "sum_floor": qb + 3,
                           "conn_window": qb + 4}))


def band_model(hint, n, *, line_mbps, base_rtt_ns, mtu):
    """MR-CW-059: the band unit's result: MR-CW-051's integer forms (``protocol``)."""
    r = P.clamp_hint_mbps(hint, line_mbps)
    return {"rate": r, "hw": P.hinted_window_fx(r, base_rtt_ns, n),
            "cap": P.hinted_window_cap_fx(r, base_rtt_ns, n, mtu),
            "sum_floor": r * base_rtt_ns // 8000,
            "conn_window": P.hinted_conn_window_fx(r, base_rtt_ns, mtu)}


def band_move(windows, old_rate, rate, hw, cap, line_mbps):
    """MR-CW-053: a hint change's move of every path window of a connection: scaled by
    rate / old rate (keeping its place in the band) when the rate rose and both are below the
    line rate, then moved into [hw, cap]. Returns the new windows."""
    ws = list(windows)
    if old_rate < rate < line_mbps and old_rate < line_mbps:
        ws = [w * rate // old_rate for w in ws]
    return [min(cap, max(hw, w)) for w in ws]


def refill_windows(windows, p, calm, short, cap):
    """MR-CW-054: the refill of a shortfall ``short``: to the calm paths ``calm`` (indices, in
    path order), each min(cap - window, what is left / paths still to serve); the rest to the
    acknowledged path ``p`` (even above the cap). Returns the new windows."""
    ws = list(windows)
    for i, k in enumerate(calm):
        give = min(cap - ws[k], short // (len(calm) - i))
        ws[k] += give
        short -= give
    if short > 0:
        ws[p] += short
    return ws


def calm_paths(paths, p, cap, now):
    """MR-CW-054: the connection's other active paths below the cap whose latest CE echo (if
    any) is more than their smoothed RTT before ``now``; ``paths`` dicts with ``cwnd``,
    ``active``, ``ece_seen``, ``last_ece``, ``srtt``."""
    return [k for k, q in enumerate(paths) if k != p and q["active"] and q["cwnd"] < cap
            and (not q["ece_seen"]
                 or P.time_lt((q["last_ece"] + q["srtt"]) & P.TIME_MASK, now))]


def inc_divisor(cwnd, wsum_eff, multi):
    """MR-CW-012: the divisor of the increase, as ``protocol.aimd_fx`` takes it: the larger of
    the window and the connection's W when coupled, the window alone (at least 1) when not."""
    return max(cwnd, wsum_eff) if multi else max(1, cwnd)


class CwndModel:
    """The block's semantics (MR-CW-010..016): ``setup(rec)`` and ``ack(ev)`` take a record as
    a dict of the layout's fields and return the update ``{conn, path, cwnd, wsum, debt}``.
    ``mtu``, ``beta_q`` and ``cap`` are the configuration inputs (MR-CW-005).

    ``split`` (MR-CW-060..062): the hinted block's own semantics, without the control path's
    moves: a hint change refuses the event (``move``), a refill is only reported (``refill``),
    move writes; its updates carry ``rate``, ``move`` and ``refill``. Unsplit (the default),
    the block and its control path together (MR-CW-050..055).

    ``verdict(rec)`` (MR-CW-106..112): a path verdict or restore on the ``s_path`` port
    (``verdicts``: the layouts with the port and the ``share``/``collapsed`` fields).
    ``share_out`` (MR-CW-111): a suspected or retired path's window is shared out to the
    healthy paths (the endpoint's ``_give_window``); without it (the block's RTL, MR-CW-112)
    the path only leaves W."""

    def __init__(self, conns=SMALL["conns"], paths=SMALL["paths"], *, mtu=4096,
                 beta_q=P.Q_ONE // 2, cap=(1 << WIN_BITS) - 1, line_mbps=LINE_MBPS,
                 base_rtt_ns=BASE_RTT_NS, split=False, verdicts=False, share_out=True):
        self.split = split
        self.share_out = share_out
        self.lay = layouts(conns, paths, hints=split, verdicts=verdicts)
        self.conns, self.paths = conns, paths
        self.mtu, self.beta_q, self.cap = mtu, beta_q, cap
        self.line_mbps, self.base_rtt_ns = line_mbps, base_rtt_ns
        z = {n: 0 for n in ("cwnd", "ce_acc", "ack_acc", "next_dec", "active", "srtt",
                            "last_ece", "ece_seen", "collapsed")}
        self.path = [[dict(z) for _ in range(paths)] for _ in range(conns)]
        self.conn = [{n: 0 for n in ("wsum", "cut_end", "cut_left", "cut_debt", "floor", "multi",
                                     "n_paths", "rate", "hinted", "bvalid", "bcap", "bsum",
                                     "share")}
                     for _ in range(conns)]
        self.cached = False      # MR-CW-066: the latest hinted event found its band kept

    def config(self, mtu, beta_q, cap, line_mbps=None, base_rtt_ns=None):
        """MR-CW-005, MR-CW-051: the configuration inputs (the line rate and the base RTT keep
        their values when not given)."""
        self.mtu, self.beta_q, self.cap = mtu, beta_q, cap
        if line_mbps is not None:
            self.line_mbps = line_mbps
        if base_rtt_ns is not None:
            self.base_rtt_ns = base_rtt_ns

    def _update(self, c, p, move=0, refill=0, rate=None, cwin=0):
        cs = self.conn[c]
        u = {"conn": c, "path": p, "cwnd": self.path[c][p]["cwnd"], "wsum": self.w_eff(c),
             "debt": cs["cut_debt"]}
        if self.split:                               # MR-CW-061
            u.update(rate=cs["rate"] if rate is None else rate, move=move, refill=refill,
                     cwin=cwin)
        return u

    def w_eff(self, c):
        """MR-CW-012: the connection's W as the endpoint uses it: max(sum of the active paths'
        windows, MTU)."""
        return max(self.conn[c]["wsum"], self.mtu)

    def setup(self, r):
        """MR-CW-014: write a path's window (at least the floor), its active bit and the
        connection's floor and coupling; ``open`` starts the connection afresh (W and the cut
        state from 0); ``open`` or ``fresh``: the slot's old window is not in W (it was not the
        connection's), else an active old window leaves W for the new one."""
        c, p = r["conn"], r["path"]
        cs, ps = self.conn[c], self.path[c][p]
        if self.split and r.get("move"):
            # MR-CW-062: a move write: the window as written, W follows, the rate; the debt
            # cleared with debt0; the rest of both records kept
            if ps["active"]:
                cs["wsum"] += r["cwnd"] - ps["cwnd"]
            ps["cwnd"] = r["cwnd"]
            cs["bvalid"] &= int(r["rate"] == cs["rate"])     # MR-CW-066: kept for its rate
            cs["rate"] = r["rate"]
            if r["debt0"]:
                cs["cut_debt"] = 0
            return self._update(c, p)
        cwnd = max(r["cwnd"], r["floor"])
        cs["bvalid"] = 0                             # MR-CW-066: the path count may change
        old = ps["cwnd"] if ps["active"] and not (r["open"] or r["fresh"]) else 0
        if r["open"]:
            # MR-CW-052: a new connection is not hinted (its rate is the line rate)
            cs.update(wsum=0, cut_end=0, cut_left=0, cut_debt=0, n_paths=0,
                      rate=self.line_mbps, hinted=0)
        cs["floor"], cs["multi"] = r["floor"], r["multi"]
        cs["share"] = max(r.get("share", 0), r["floor"])       # MR-CW-108: at least the floor
        cs["wsum"] = cs["wsum"] - old + (cwnd if r["active"] else 0)
        if (r["open"] or r["fresh"]) and r["active"]:
            # MR-CW-052: the connection's path count (4 bits, MR-CW-060)
            cs["n_paths"] = (cs["n_paths"] + 1) & 15
        ps.update(cwnd=cwnd, ce_acc=0, ack_acc=0, next_dec=0, active=r["active"],
                  srtt=self.base_rtt_ns, ece_seen=0, last_ece=0, collapsed=0)
        return self._update(c, p)

    def conn_window(self, c):
        """MR-CW-055: the connection window while hinted (``protocol.hinted_conn_window_fx``);
        ``None`` when the latest ACK carried no hint (the connection window of MR-CC-001 is then
        the host's configuration, outside this block)."""
        cs = self.conn[c]
        if not cs["hinted"]:
            return None
        return P.hinted_conn_window_fx(cs["rate"], self.base_rtt_ns, self.mtu)

    def _band(self, c, p, hint):
        """MR-CW-053: the hinted band. Takes the ACK's hint as the connection's rate; while
        hinted, returns ``(hw, cap, sum_floor)`` after moving the windows into the band (every
        path's on a changed hint, scaled up first by a higher one; the acknowledged path's
        otherwise); ``None`` when not hinted."""
        cs, paths = self.conn[c], self.path[c]
        line = self.line_mbps
        old_rate = cs["rate"]
        rate = cs["rate"] = P.clamp_hint_mbps(hint, line)
        cs["hinted"] = int(hint != 0)
        if not hint:
            return None
        n = max(1, cs["n_paths"])
        hw = P.hinted_window_fx(rate, self.base_rtt_ns, n)
        cap = P.hinted_window_cap_fx(rate, self.base_rtt_ns, n, self.mtu)
        sum_floor = rate * self.base_rtt_ns // 8000
        if self.split:                               # MR-CW-066: the band kept, or kept now
            self.cached = bool(cs["bvalid"])
            win = P.hinted_conn_window_fx(rate, self.base_rtt_ns, self.mtu)
            if cs["bvalid"]:
                cap, sum_floor, win = cs["bcap"], cs["bsum"], cs["bwin"]
            cs.update(bvalid=1, bcap=cap, bsum=sum_floor, bwin=win)
        if rate != old_rate:                         # (the split block refused it before)
            for q, w in zip(paths, band_move([q["cwnd"] for q in paths], old_rate, rate, hw,
                                             cap, line)):
                q["cwnd"] = w
            cs["wsum"] = sum(q["cwnd"] for q in paths if q["active"])
        elif paths[p]["cwnd"] > cap:                 # MR-CW-061 (c): W loses the excess
            if paths[p]["active"]:
                cs["wsum"] -= paths[p]["cwnd"] - cap
            paths[p]["cwnd"] = cap
        return hw, cap, sum_floor

    def _refill(self, c, p, short, cap, now):
        """MR-CW-054 (MR-CC-007): a cut that took W ``short`` below the hinted BDP is given back:
        first to the other active paths below the cap without an ECN echo within their smoothed
        RTT (in path order, each an equal part of what is left, up to the cap), the rest to this
        path; the cut debt is forgiven."""
        cs, paths = self.conn[c], self.path[c]
        new = refill_windows([q["cwnd"] for q in paths], p, calm_paths(paths, p, cap, now),
                             short, cap)
        for q, w in zip(paths, new):
            q["cwnd"] = w
        cs["cut_debt"] = 0
        cs["wsum"] = sum(q["cwnd"] for q in paths if q["active"])

    def ack(self, e):
        """MR-CW-010..016, MR-CW-050..055: one ACK event, as the endpoint's ``_on_ack`` updates
        the windows (MR-CC-002/003/007/011/013/018) with slow start and path states left out."""
        c, p = e["conn"], e["path"]
        cs, ps = self.conn[c], self.path[c][p]
        mtu, beta_q, now = self.mtu, self.beta_q, e["now"]
        pkts = e["pkts"]
        ce = min(e["ce"], pkts)                      # MR-SEC-151: one mark per packet at most
        ps["srtt"] = e["srtt"]                       # MR-CW-054: the path's, for the refill
        if ce:
            ps["last_ece"], ps["ece_seen"] = now, 1
        hint = e.get("hint", 0)
        if self.split:
            r = P.clamp_hint_mbps(hint, self.line_mbps)
            if hint and r != cs["rate"]:             # MR-CW-061 (b): refused, a move is due
                return self._update(c, p, move=1, rate=r)
            if not hint:
                cs["bvalid"] = 0                     # MR-CW-066: the line rate's band not kept
        band = self._band(c, p, hint)                # MR-CW-053
        # MR-CW-067: a hinted event's update carries the connection window
        cwin = cs["bwin"] if self.split and band else 0
        if not pkts:
            return self._update(c, p, cwin=cwin)     # MR-CW-010: resolves nothing, changes nothing
        cap = band[1] if band else self.cap
        floor = cs["floor"]
        if ps["collapsed"]:
            # MR-CW-108: a collapsed path's next ACK with packets clears the bit; without a CE
            # mark or a hint its floor for this event is the initial share (the endpoint's
            # wmin), the window raised to it first (W with it)
            ps["collapsed"] = 0
            if not band and not ce:
                floor = cs["share"]
                if ps["cwnd"] < floor:
                    if ps["active"]:
                        cs["wsum"] += floor - ps["cwnd"]
                    ps["cwnd"] = floor
        w = self.w_eff(c)
        ps["ce_acc"] = min(ACC_MAX, ps["ce_acc"] + ce)       # MR-CW-011
        ps["ack_acc"] = min(ACC_MAX, ps["ack_acc"] + pkts)
        old = cwnd = ps["cwnd"]
        if not P.time_lt(now, ps["next_dec"]):
            if ps["ce_acc"]:                         # MR-CW-013: the coupled cut
                if not P.time_lt(now, cs["cut_end"]):
                    cs["cut_end"] = (now + e["srtt"]) & P.TIME_MASK
                    cs["cut_left"] = (beta_q * w) >> P.Q
                cwnd, debt = P.coupled_cut_fx(cwnd, ps["ce_acc"], floor, mtu, beta_q,
                                              cs["cut_left"])
                cs["cut_left"] -= old - cwnd + debt
                cs["cut_debt"] = min(w, cs["cut_debt"] + debt)
            ps["ce_acc"] = ps["ack_acc"] = 0
            ps["next_dec"] = (now + e["srtt"]) & P.TIME_MASK
        if cwnd == old and not ce:                   # MR-CW-012: the coupled increase
            multi = bool(cs["multi"])
            cwnd, _ = P.aimd_fx(cwnd, e["bytes"], 0, False, mtu=mtu, cwnd_min=floor,
                                cwnd_max=cap, beta_q=beta_q,
                                cwnd_sum=w if multi else None, sum_max=self.cap if multi else None)
        if cs["cut_debt"] and cwnd > floor:          # MR-CW-015: the debt from this window
            cwnd, cs["cut_debt"] = P.debt_take(cwnd, floor, cs["cut_debt"])
        if ps["active"]:
            cs["wsum"] += cwnd - old
        ps["cwnd"] = cwnd
        # MR-CW-054: W as the endpoint has it here: the event's W (at least an MTU) plus the
        # window's change, not max(sum, MTU) after it
        w_end = w + (cwnd - old if ps["active"] else 0)
        if band and w_end < band[2]:
            if self.split:                           # MR-CW-061 (c): the control path's
                return self._update(c, p, refill=1, cwin=cwin)
            self._refill(c, p, band[2] - w_end, band[1], now)
        return self._update(c, p, cwin=cwin)


    def verdict(self, r):
        """MR-CW-106..112: a path verdict (the retransmit unit's, MR-TX-197: KEEP, REROUTE,
        SUSPECT, RETIRE) or, with ``restore``, the scheduler's restore of the path (MR-TXS-116);
        W follows the window of an active path. Returns the path's update."""
        c, p = r["conn"], r["path"]
        cs, ps = self.conn[c], self.path[c][p]
        old, on = ps["cwnd"], ps["active"]
        self.shared = []                             # MR-CW-118: (path, change of W) each
        if r["restore"]:
            # MR-CW-109 (MR-PATH-005): active again with the initial share; hw-tx.md
            # MR-TX-321: a restore with REROUTE (a suspicion the scheduler took as a reroute,
            # MR-TXS-316) active again, one MTU, collapsed (MR-CW-108's window)
            kept = r["verdict"] == P.PATH_REROUTE
            new = self.mtu if kept else cs["share"]
            ps.update(cwnd=new, active=1, collapsed=int(kept))
            cs["wsum"] += new - (old if on else 0)
            return self._update(c, p)
        v = r["verdict"]
        if v == P.PATH_KEEP:                         # MR-CW-107: halved, down to the floor
            new = P.keep_window(old, cs["floor"])
        elif v == P.PATH_REROUTE:                    # MR-CW-108: one MTU, collapsed
            new = self.mtu
            ps["collapsed"] = 1
        else:
            # MR-CW-110/111 (MR-PATH-004): an active path leaves W; its window shared out to
            # the healthy paths (the endpoint's _give_window), each at most the cap
            if on:
                if self.share_out:
                    healthy = [k for k in range(self.paths) if k != p and r["healthy"] >> k & 1]
                    for k in healthy:
                        q = self.path[c][k]
                        w = P.shared_window(q["cwnd"], old, len(healthy), self.cap)
                        self.shared.append((k, w - q["cwnd"] if q["active"] else 0))
                        if q["active"]:
                            cs["wsum"] += w - q["cwnd"]
                        q["cwnd"] = w
                ps["active"] = 0
                cs["wsum"] -= old
            return self._update(c, p)
        if on:
            cs["wsum"] += new - old
        ps["cwnd"] = new
        return self._update(c, p)

    def verdict_updates(self, r):
        """MR-CW-118: the block's updates of an ``s_path`` record: :meth:`verdict`'s, and after
        a share-out (MR-CW-111) first the path's with W without its window (before the
        shares), then one per healthy path in path order, each with W after its share."""
        c, p = r["conn"], r["path"]
        w = self.conn[c]["wsum"] - self.path[c][p]["cwnd"]
        u = self.verdict(r)
        if not self.shared:
            return [u]
        out = [dict(u, wsum=max(w, self.mtu))]
        for k, dw in self.shared:
            w += dw
            out.append({"conn": c, "path": k, "cwnd": self.path[c][k]["cwnd"],
                        "wsum": max(w, self.mtu), "debt": self.conn[c]["cut_debt"]})
        return out


class CwndCycleModel:
    """The block cycle by cycle (MR-CW-030): idle, it takes a setup write (first) or an ACK
    event; the update is valid ``LAT_SETUP`` or ``LAT_ACK`` cycles after, held until taken; the
    cycle after, the block is idle again. ``m_update.payload`` holds the last update.
    ``hints`` (MR-CW-060..064): the hinted block (``CwndModel(split=True)``; a refused event's
    update ``LAT_MOVE`` after, a hinted event's ``lat_hint``)."""

    def __init__(self, width=64, conns=SMALL["conns"], paths=SMALL["paths"], div_bits=DIV_BITS,
                 hints=False, verdicts=False, share_out=False):
        self.lat_ack = lat_ack(div_bits)
        self.div_bits = div_bits
        self.hints = hints
        self.verdicts = verdicts
        # MR-CW-112: the block does not share a window out; MR-CW-118: with share_out it does
        if share_out and not verdicts:
            raise ValueError("share_out needs verdicts")
        self.share_out = share_out
        self.sem = CwndModel(conns, paths, split=hints, verdicts=verdicts, share_out=share_out)
        self.queue = []          # MR-CW-118: the share-out's updates still to come
        self.shares_started = False
        self.lay = self.sem.lay
        if hints or verdicts:                        # the instance's port list (lockstep)
            self.port_names = self.ports
        self.wait = 0            # cycles until the pending update is valid
        self.pending = None      # the update being computed (packed)
        self.valid = 0
        self.payload = 0

    @staticmethod
    def port_names():
        return {"inputs": list(INPUTS), "outputs": list(OUTPUTS)}

    def ports(self):
        """The instance's ports (MR-CW-060: the hinted block has the band's configuration;
        MR-CW-106: the verdicts' port)."""
        ins = list(HINT_INPUTS if self.hints else INPUTS)
        outs = list(OUTPUTS)
        if self.verdicts:
            ins += VERDICT_INPUTS
            outs += VERDICT_OUTPUTS
        return {"inputs": ins, "outputs": outs}

    def busy(self):
        return self.pending is not None or bool(self.valid)

    def step(self, inputs):
        g = inputs.get
        idle = self.pending is None and not self.valid
        setup_valid = g("s_setup__valid", 0)
        path_valid = g("s_path__valid", 0) if self.verdicts else 0
        out = {"s_ack__ready": int(idle and not setup_valid and not path_valid),
               "s_setup__ready": int(idle),
               "m_update__valid": self.valid, "m_update__payload": self.payload}
        if self.verdicts:                            # MR-CW-106: after setup, before ACKs
            out["s_path__ready"] = int(idle and not setup_valid)
        sem, lay = self.sem, self.lay
        if self.hints:
            sem.config(g("mtu", 0), g("beta_q", 0), g("cap", 0), g("line_mbps", 0),
                       g("base_rtt_ns", 0))
        else:
            sem.config(g("mtu", 0), g("beta_q", 0), g("cap", 0))
        if self.valid:
            if g("m_update__ready", 0):
                self.valid = 0
                if self.queue:                       # MR-CW-118: the next share's update
                    self.pending = pack(lay.update, self.queue.pop(0))
                    lat = LAT_SHARE + (0 if self.shares_started else LAT_SHARE_DIV)
                    self.shares_started = True
                    self.wait = lat - 1
        elif self.pending is not None:
            self.wait -= 1
            if self.wait == 0:
                self.valid, self.payload, self.pending = 1, self.pending, None
        elif setup_valid:
            self.pending = pack(lay.update, sem.setup(unpack(lay.setup, g("s_setup__payload", 0))))
            self.wait = LAT_SETUP - 1
        elif path_valid:
            r = unpack(lay.verdict, g("s_path__payload", 0))
            ups = sem.verdict_updates(r) if self.share_out else [sem.verdict(r)]
            self.pending = pack(lay.update, ups[0])
            self.queue, self.shares_started = ups[1:], False
            self.wait = LAT_PATH - 1
        elif g("s_ack__valid", 0):
            ev = unpack(lay.ack, g("s_ack__payload", 0))
            # MR-CW-108: a collapsed path's event takes two cycles more (RAISE1/2)
            lat = self.lat_ack + (LAT_RAISE if sem.path[ev["conn"]][ev["path"]]["collapsed"]
                                  else 0)
            upd = sem.ack(ev)
            self.pending = pack(lay.update, upd)
            if self.hints and ev["hint"]:         # MR-CW-064
                lat = LAT_MOVE if upd["move"] else lat_hint(self.div_bits, sem.cached)
            self.wait = lat - 1
        return out


def cwnd_model_small(width=64):
    return CwndCycleModel(width, **SMALL)


def cwnd_model_hinted_small(width=64):
    """MR-CW-060: the hinted block's small instance."""
    return CwndCycleModel(width, **SMALL, hints=True)


def cwnd_model_verdicts_small(width=64):
    """MR-CW-106: the small instance with the path verdicts' port."""
    return CwndCycleModel(width, **SMALL, verdicts=True)


def cwnd_model_hinted_trace(width=64):
    """MR-CW-065: the hinted block's instance for the incast traces."""
    return CwndCycleModel(width, **TRACE, hints=True)


class CwndControl:
    """MR-CW-063: the hinted block's control path. Keeps a shadow of each connection's path
    windows (from every update), each path's smoothed RTT and latest CE echo (from the events
    offered), rate, path count, active bits and floor (from the setup writes made); answers a
    refused event (``move``) and a due refill (``refill``) with move writes computed by
    ``band_move`` and ``refill_windows``. ``record(kind, rec)`` before a record is offered;
    ``answer(kind, rec, update)`` after its update: the records to offer next."""

    def __init__(self, conns, paths, *, mtu, line_mbps, base_rtt_ns, **_):
        self.paths = paths
        self.mtu, self.line_mbps, self.base_rtt_ns = mtu, line_mbps, base_rtt_ns
        z = {"cwnd": 0, "active": 0, "srtt": 0, "last_ece": 0, "ece_seen": 0}
        self.path = [[dict(z) for _ in range(paths)] for _ in range(conns)]
        self.conn = [{"rate": line_mbps, "n_paths": 0} for _ in range(conns)]
        self.moves = {"move": 0, "refill": 0, "writes": 0}

    def record(self, kind, r):
        c, p = r["conn"], r["path"]
        ps, cs = self.path[c][p], self.conn[c]
        if kind == "ack":                            # MR-CW-052: the path state it keeps
            ps["srtt"] = r["srtt"]
            if min(r["ce"], r["pkts"]):
                ps["last_ece"], ps["ece_seen"] = r["now"], 1
        elif not r.get("move"):
            if r["open"]:
                cs["n_paths"] = 0
            if (r["open"] or r["fresh"]) and r["active"]:
                cs["n_paths"] += 1
            ps.update(active=r["active"], srtt=self.base_rtt_ns, ece_seen=0, last_ece=0)

    def _band(self, c, rate):
        n = max(1, self.conn[c]["n_paths"])
        return band_model(rate, n, line_mbps=self.line_mbps, base_rtt_ns=self.base_rtt_ns,
                          mtu=self.mtu)

    def _writes(self, c, p, old, new, rate, debt0):
        """Move writes for each changed window, the acknowledged path's always, last."""
        ks = [k for k in range(self.paths) if k != p and new[k] != old[k]] + [p]
        self.moves["writes"] += len(ks)
        return [("setup", {"conn": c, "path": k, "cwnd": new[k], "move": 1, "rate": rate,
                           "debt0": debt0}) for k in ks]

    def answer(self, kind, r, u):
        c, p = u["conn"], u["path"]
        paths, cs = self.path[c], self.conn[c]
        old_p = paths[p]["cwnd"]
        wsum_before = sum(q["cwnd"] for q in paths if q["active"])
        paths[p]["cwnd"] = u["cwnd"]
        if kind != "ack" or not (u["move"] or u["refill"]):
            cs["rate"] = u["rate"]
            return []
        old = [q["cwnd"] for q in paths]
        if u["move"]:                                # MR-CW-053: the hint change's move
            self.moves["move"] += 1
            b = self._band(c, u["rate"])
            # MR-CW-127: whether the windows are scaled (the sequencer's divisions)
            self.scaled = cs["rate"] < u["rate"] < self.line_mbps and cs["rate"] < self.line_mbps
            new = band_move(old, cs["rate"], u["rate"], b["hw"], b["cap"], self.line_mbps)
            return self._writes(c, p, old, new, u["rate"], 0) + [("ack", r)]
        # MR-CW-054: the refill, on W' as the block had it: the event's W (after the clamp of
        # the acknowledged window, at least an MTU) plus the window's change
        self.moves["refill"] += 1
        cs["rate"] = u["rate"]
        b = self._band(c, u["rate"])
        start = min(old_p, b["cap"])
        w = wsum_before - (old_p - start if paths[p]["active"] else 0)
        w_end = max(w, self.mtu) + (u["cwnd"] - start if paths[p]["active"] else 0)
        calm = calm_paths(paths, p, b["cap"], r["now"])
        self.calm = len(calm)                        # MR-CW-127: the sequencer's divisions
        new = refill_windows(old, p, calm, b["sum_floor"] - w_end, b["cap"])
        return self._writes(c, p, old, new, u["rate"], 1)


BAND_INPUTS = ["s_req__valid", "s_req__payload", "m_band__ready", "line_mbps", "base_rtt_ns",
               "mtu"]
BAND_OUTPUTS = ["s_req__ready", "m_band__valid", "m_band__payload"]


class Closed:
    """MR-CW-063/065: the records with the control path in the loop: each record's update is
    awaited; the control path's answer (move writes, the refused event again) goes first. After
    each of ``items`` and the control path's records for it, ``after`` gets ``(index of the
    item, the connection's shadow windows, the last update, the update of its latest ACK
    event)``."""

    def __init__(self, items, control):
        self.items, self.control = list(items), control
        self.i = 0                      # the next item
        self.queue = []                 # the control path's records, first
        self.flight = None              # the record taken, its update awaited
        self.ack_upd = None             # the latest ACK event's update
        self.after = []

    @property
    def done(self):
        return self.i >= len(self.items) and not self.queue and self.flight is None

    def peek(self):
        """The record to offer next, or None (one in flight, or none left)."""
        if self.flight is not None:
            return None
        if self.queue:
            return self.queue[0]
        return self.items[self.i] if self.i < len(self.items) else None

    def take(self):
        kind, rec = self.flight = self.peek()
        if self.queue:
            self.queue.pop(0)
        else:
            self.i += 1
        self.control.record(kind, rec)

    def answer(self, upd):
        kind, rec = self.flight
        self.flight = None
        if kind == "ack":
            self.ack_upd = upd
        self.queue[:0] = self.control.answer(kind, rec, upd)
        if not self.queue:
            c = upd["conn"]
            self.after.append((self.i - 1, [q["cwnd"] for q in self.control.path[c]], upd,
                               self.ack_upd))


class CwndBandCycleModel:
    """MR-CW-059, cycle by cycle: idle, the unit takes a request; its result is valid
    ``LAT_BAND`` cycles after, held until taken; idle again the cycle after. ``m_band.payload``
    holds the last result."""

    def __init__(self, width=64):
        self.lay = band_layouts()
        self.wait = 0
        self.pending = None
        self.valid = 0
        self.payload = 0

    @staticmethod
    def port_names():
        return {"inputs": list(BAND_INPUTS), "outputs": list(BAND_OUTPUTS)}

    def busy(self):
        return self.pending is not None or bool(self.valid)

    def step(self, inputs):
        g = inputs.get
        idle = self.pending is None and not self.valid
        out = {"s_req__ready": int(idle), "m_band__valid": self.valid,
               "m_band__payload": self.payload}
        if self.valid:
            if g("m_band__ready", 0):
                self.valid = 0
        elif self.pending is not None:
            self.wait -= 1
            if self.wait == 0:
                self.valid, self.payload, self.pending = 1, self.pending, None
        elif g("s_req__valid", 0):
            req = unpack(self.lay.req, g("s_req__payload", 0))
            self.pending = pack(self.lay.band, band_model(
                req["hint"], req["n"], line_mbps=g("line_mbps", 0),
                base_rtt_ns=g("base_rtt_ns", 0), mtu=g("mtu", 0)))
            self.wait = LAT_BAND - 1
        return out


def band_model_cycles(width=64):
    return CwndBandCycleModel(width)
