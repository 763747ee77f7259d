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
"""
from __future__ import annotations

from dataclasses import dataclass

from amaranth.lib import data

from . import protocol as P
from .rx import pack, unpack

__all__ = ["SMALL", "LARGE", "Layouts", "layouts", "check_params", "CwndModel", "CwndCycleModel",
           "ACC_MAX", "WIN_BITS", "BYTES_BITS", "PKTS_BITS", "MTU_BITS", "BETA_BITS",
           "QUOT_BITS", "DIV_BITS", "lat_ack", "LAT_ACK", "LAT_SETUP", "INPUTS", "OUTPUTS", "cwnd_model_small",
           "inc_divisor", "band_layouts", "band_model", "LAT_BAND", "CwndBandCycleModel",
           "band_model_cycles"]

#: MR-CW-001: the small and the large instance.
SMALL = dict(conns=2, paths=4)
LARGE = dict(conns=4096, paths=8)
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
#: valid on ``m_update``: ACK events (read; records registered; accumulators; products; cut in
#: 3; divide; increase in 2; debt in 3; writes) and setup writes (read; records registered;
#: window and W in 2; writes).
LAT_SETUP = 5
#: MR-CW-051: the configuration of the hinted band, the endpoint's defaults (400 Gb/s, 10 us).
LINE_MBPS = 400_000
BASE_RTT_NS = 10_000


def lat_ack(div_bits=DIV_BITS):
    """MR-CW-030: an ACK event's latency with ``div_bits`` quotient bits per divider cycle."""
    return QUOT_BITS // div_bits + 13


LAT_ACK = lat_ack()

INPUTS = ["s_ack__valid", "s_ack__payload", "s_setup__valid", "s_setup__payload",
          "m_update__ready", "mtu", "beta_q", "cap"]
OUTPUTS = ["s_ack__ready", "s_setup__ready", "m_update__valid", "m_update__payload"]


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


def layouts(conns=SMALL["conns"], paths=SMALL["paths"]):
    """MR-CW-002..004: port and table record layouts."""
    check_params(conns, paths)
    cb = max(1, (conns - 1).bit_length())
    pb = max(1, (paths - 1).bit_length())
    sb = WIN_BITS + (paths - 1).bit_length()        # the sum of ``paths`` windows
    ack = data.StructLayout({"conn": cb, "path": pb, "bytes": BYTES_BITS, "pkts": PKTS_BITS,
                             "ce": PKTS_BITS, "now": TIME_BITS, "srtt": TIME_BITS})
    setup = data.StructLayout({"conn": cb, "path": pb, "cwnd": WIN_BITS, "active": 1, "open": 1,
                               "fresh": 1, "floor": WIN_BITS, "multi": 1})
    update = data.StructLayout({"conn": cb, "path": pb, "cwnd": WIN_BITS, "wsum": sb,
                                "debt": sb})
    path_rec = data.StructLayout({"cwnd": WIN_BITS, "ce_acc": ACC_BITS, "ack_acc": ACC_BITS,
                                  "next_dec": TIME_BITS, "active": 1})
    conn_rec = data.StructLayout({"wsum": sb, "cut_end": TIME_BITS, "cut_left": sb,
                                  "cut_debt": sb, "floor": WIN_BITS, "multi": 1})
    return Layouts(conns, paths, cb, pb, sb, ack, setup, update, path_rec, conn_rec)


#: MR-CW-059: the hinted band unit's widths: a rate in Mb/s (at most 524,287: 400 Gb/s fits),
#: the base RTT in ns (at most about 1 ms), r x base RTT, its quotient by 8,000 x n (n <= 8).
RATE_BITS = 19
RTT_BITS = 20
BAND_X_BITS = RATE_BITS + RTT_BITS + 1          # even: two quotient bits a cycle
BAND_Q_BITS = BAND_X_BITS - 12                  # x / 8,000 < 2^(X - 12.9)
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


def inc_divisor(cwnd, wsum_eff, multi):
    """MR-CW-012: the divisor of the increase, as ``protocol.aimd_fx`` takes it: the larger of
    the window and the connection's W when coupled, the window alone (at least 1) when not."""
    return max(cwnd, wsum_eff) if multi else max(1, cwnd)


class CwndModel:
    """The block's semantics (MR-CW-010..016): ``setup(rec)`` and ``ack(ev)`` take a record as
    a dict of the layout's fields and return the update ``{conn, path, cwnd, wsum, debt}``.
    ``mtu``, ``beta_q`` and ``cap`` are the configuration inputs (MR-CW-005)."""

    def __init__(self, conns=SMALL["conns"], paths=SMALL["paths"], *, mtu=4096,
                 beta_q=P.Q_ONE // 2, cap=(1 << WIN_BITS) - 1, line_mbps=LINE_MBPS,
                 base_rtt_ns=BASE_RTT_NS):
        self.lay = layouts(conns, paths)
        self.conns, self.paths = conns, paths
        self.mtu, self.beta_q, self.cap = mtu, beta_q, cap
        self.line_mbps, self.base_rtt_ns = line_mbps, base_rtt_ns
        z = {n: 0 for n in ("cwnd", "ce_acc", "ack_acc", "next_dec", "active", "srtt",
                            "last_ece", "ece_seen")}
        self.path = [[dict(z) for _ in range(paths)] for _ in range(conns)]
        self.conn = [{n: 0 for n in ("wsum", "cut_end", "cut_left", "cut_debt", "floor", "multi",
                                     "n_paths", "rate", "hinted")}
                     for _ in range(conns)]

    def config(self, mtu, beta_q, cap, line_mbps=None, base_rtt_ns=None):
        """MR-CW-005, MR-CW-051: the configuration inputs (the line rate and the base RTT keep
        their values when not given)."""
        self.mtu, self.beta_q, self.cap = mtu, beta_q, cap
        if line_mbps is not None:
            self.line_mbps = line_mbps
        if base_rtt_ns is not None:
            self.base_rtt_ns = base_rtt_ns

    def _update(self, c, p):
        cs = self.conn[c]
        return {"conn": c, "path": p, "cwnd": self.path[c][p]["cwnd"], "wsum": self.w_eff(c),
                "debt": cs["cut_debt"]}

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
        cwnd = max(r["cwnd"], r["floor"])
        old = ps["cwnd"] if ps["active"] and not (r["open"] or r["fresh"]) else 0
        if r["open"]:
            # MR-CW-052: a new connection is not hinted (its rate is the line rate)
            cs.update(wsum=0, cut_end=0, cut_left=0, cut_debt=0, n_paths=0,
                      rate=self.line_mbps, hinted=0)
        cs["floor"], cs["multi"] = r["floor"], r["multi"]
        cs["wsum"] = cs["wsum"] - old + (cwnd if r["active"] else 0)
        if (r["open"] or r["fresh"]) and r["active"]:
            cs["n_paths"] += 1                       # MR-CW-052: the connection's path count
        ps.update(cwnd=cwnd, ce_acc=0, ack_acc=0, next_dec=0, active=r["active"],
                  srtt=self.base_rtt_ns, ece_seen=0, last_ece=0)
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
        if old_rate < rate < line and old_rate < line:
            for q in paths:                          # MR-CC-007: keep the place in the band
                q["cwnd"] = q["cwnd"] * rate // old_rate
        if rate != old_rate:
            for q in paths:
                q["cwnd"] = min(cap, max(hw, q["cwnd"]))
        elif paths[p]["cwnd"] > cap:
            paths[p]["cwnd"] = cap
        cs["wsum"] = sum(q["cwnd"] for q in paths if q["active"])
        return hw, cap, rate * self.base_rtt_ns // 8000

    def _refill(self, c, p, short, cap, now):
        """MR-CW-054 (MR-CC-007): a cut that took W ``short`` below the hinted BDP is given back:
        first to the other active paths below the cap without an ECN echo within their smoothed
        RTT (in path order, each an equal part of what is left, up to the cap), the rest to this
        path; the cut debt is forgiven."""
        cs, paths = self.conn[c], self.path[c]
        calm = [q for k, q in enumerate(paths) if k != p and q["active"] and q["cwnd"] < cap
                and (not q["ece_seen"] or P.time_lt((q["last_ece"] + q["srtt"]) & P.TIME_MASK, now))]
        for i, q in enumerate(calm):
            give = min(cap - q["cwnd"], short // (len(calm) - i))
            q["cwnd"] += give
            short -= give
        if short > 0:
            paths[p]["cwnd"] += short
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
        band = self._band(c, p, e.get("hint", 0))    # MR-CW-053
        if not pkts:
            return self._update(c, p)                # MR-CW-010: resolves nothing, changes nothing
        cap = band[1] if band else self.cap
        w = self.w_eff(c)
        floor = cs["floor"]
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
            self._refill(c, p, band[2] - w_end, band[1], now)
        return self._update(c, p)


class CwndCycleModel:
    """The block cycle by cycle (MR-CW-030): idle, it takes a setup write (first) or an ACK
    event; the update is valid ``LAT_SETUP`` or ``LAT_ACK`` cycles after, held until taken; the
    cycle after, the block is idle again. ``m_update.payload`` holds the last update."""

    def __init__(self, width=64, conns=SMALL["conns"], paths=SMALL["paths"], div_bits=DIV_BITS):
        self.lat_ack = lat_ack(div_bits)
        self.sem = CwndModel(conns, paths)
        self.lay = self.sem.lay
        self.wait = 0            # cycles until the pending update is valid
        self.pending = None      # the update being computed (packed)
        self.valid = 0
        self.payload = 0

    @staticmethod
    def port_names():
        return {"inputs": list(INPUTS), "outputs": list(OUTPUTS)}

    def busy(self):
        return self.pending is not None or bool(self.valid)

    def step(self, inputs):
        g = inputs.get
        idle = self.pending is None and not self.valid
        setup_valid = g("s_setup__valid", 0)
        out = {"s_ack__ready": int(idle and not setup_valid), "s_setup__ready": int(idle),
               "m_update__valid": self.valid, "m_update__payload": self.payload}
        sem, lay = self.sem, self.lay
        sem.config(g("mtu", 0), g("beta_q", 0), g("cap", 0))
        if self.valid:
            if g("m_update__ready", 0):
                self.valid = 0
        elif self.pending is not None:
            self.wait -= 1
            if self.wait == 0:
                self.valid, self.payload, self.pending = 1, self.pending, None
        elif setup_valid:
            self.pending = pack(lay.update, sem.setup(unpack(lay.setup, g("s_setup__payload", 0))))
            self.wait = LAT_SETUP - 1
        elif g("s_ack__valid", 0):
            self.pending = pack(lay.update, sem.ack(unpack(lay.ack, g("s_ack__payload", 0))))
            self.wait = self.lat_ack - 1
        return out


def cwnd_model_small(width=64):
    return CwndCycleModel(width, **SMALL)


BAND_INPUTS = ["s_req__valid", "s_req__payload", "m_band__ready", "line_mbps", "base_rtt_ns",
               "mtu"]
BAND_OUTPUTS = ["s_req__ready", "m_band__valid", "m_band__payload"]


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
