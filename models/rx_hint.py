"""The receiver's rate hint (docs/spec/hw-engine.md section 5q, MR-ENG-328..): the engine's RX
counts its active senders per share interval and computes MR-CC-005's fair share for its ACKs.

``RxHintModel(conns)`` is the cycle model of ``hdl.rx_hint.RxHint``'s flip-flop form and
``RxHintMemModel(conns)`` of its memory form (section 5r, MR-ENG-346..): one arrival record per
data packet the RX takes (``s_seen``: connection, CE mark, more of the message due), the
engine's nanosecond clock ``now`` and the static configuration (``line_mbps``, ``share_ns``,
``mtu``); the output ``hint`` (Mb/s, a register) and ``senders`` (the count the hint is for).
The endpoint's ``_share_note`` / ``_hint_check`` / ``_rate_hint`` (models/endpoint.py) are the
reference: MR-ENG-330 says on which inputs they agree.

models/ never imports hdl/.
"""
from __future__ import annotations

from . import protocol as P
from .parser import META_FIELDS
from .records import TIME_BITS
from .rx import unpack
from .wire import MrdhFlag, Op

__all__ = ["HINT_BITS", "PKT_BITS", "DIV_CYCLES", "PREP_CYCLES", "JOB_CYCLES", "NUM_BITS", "seen_layout", "RxHintModel",
           "RxHintMemModel", "RxHintCycleModel", "HINT_WRONG", "MEM_WRONG", "HINT_FORMS", "MEM_FROM",
           "EPOCH_BITS", "hint_form", "rx_hint_model", "SEEN_OPS", "seen_of_meta",
           "rx_hint_model_small", "rx_hint_model_mem_small", "rx_hint_model_4096", "MEM_SMALL"]

#: MR-ENG-328: the hint's width (the MRAH's hint as the TX half takes it, MR-TX-490)
HINT_BITS = 19
#: MR-ENG-332: the interval's arrival and CE counters (saturating)
PKT_BITS = 16
#: MR-ENG-333: the divider's numerator bits; one quotient bit per cycle
NUM_BITS = 40
DIV_CYCLES = NUM_BITS
#: MR-ENG-363: a divider job's cycles before its first quotient bit (its operands, then their
#: products' limbs, registered): a job's result is written JOB_CYCLES cycles after its start
PREP_CYCLES = 2
JOB_CYCLES = DIV_CYCLES + PREP_CYCLES
#: MR-ENG-336: negative controls only: "count" (the current interval's senders only, not the
#: larger of the two intervals' counts), "drain" (no drain term)
HINT_WRONG = (None, "count", "drain")
#: MR-ENG-346: the two forms of the per-connection state: bits in flip-flops, rows in a memory
HINT_FORMS = ("flops", "memory")
#: MR-ENG-346: the memory form from this many connections on (when the form is not given)
MEM_FROM = 64
#: MR-ENG-347: the interval number's bits, in the register and in every row
EPOCH_BITS = 32
#: MR-ENG-352: the memory form's negative controls too: "forward" (no forward of the row written
#: in the cycle before), "epoch" (rows and interval number of 2 bits: an idle row aliases),
#: "reset" (the RTL only, MR-ENG-354: the interval number kept through a reset, as the rows
#: are; the model's reset is a new model)
MEM_WRONG = HINT_WRONG + ("forward", "epoch", "reset")
_TIME_MASK = (1 << TIME_BITS) - 1


#: MR-ENG-338: the data opcodes an arrival is counted for (the endpoint's ``_DATA_OPS``)
SEEN_OPS = tuple(int(o) for o in (Op.MR_WRITE, Op.MR_WRITE_IMM, Op.MR_SEND, Op.MR_SEND_IMM, Op.MR_READ,
                                  Op.MR_READ_RESP, Op.MR_CMP_SWAP, Op.MR_FETCH_ADD))
_META_AT = {path: (off, (1 << w) - 1) for path, off, w in META_FIELDS}


def _field(meta, *path):
    off, mask = _META_AT[path]
    return (meta >> off) & mask


def seen_of_meta(meta, conns):
    """MR-ENG-338: the arrival record ``(conn, ce, more)`` of a metadata record the RX takes, or
    None: a record not dropped, with an MRDH, of a data opcode (:data:`SEEN_OPS`), whose DestQP
    names a connection; ``ce`` its ECN is CE (3), ``more`` its MRDH's LAST flag is clear."""
    if _field(meta, "drop") or not _field(meta, "has", "mrdh") or _field(meta, "bth", "opcode") not in SEEN_OPS:
        return None
    conn = _field(meta, "bth", "dest_qp")
    if conn >= conns:
        return None
    return conn, int(_field(meta, "ip", "ecn") == 3), int(not _field(meta, "mrdh", "flags") & MrdhFlag.LAST)


def conn_bits(conns):
    return max(1, (conns - 1).bit_length())


def seen_layout(conns):
    """MR-ENG-328: the arrival record: the connection, the packet's CE mark (ECN 3) and whether
    more of its message is due (the MRDH's LAST flag clear, MR-CC-026)."""
    from amaranth.lib import data
    return data.StructLayout({"conn": conn_bits(conns), "ce": 1, "more": 1})


def hint_form(conns, form=None):
    """MR-ENG-346: ``form`` checked, or the default: flip-flops below :data:`MEM_FROM`
    connections, the memory from it."""
    if form is None:
        return "memory" if conns >= MEM_FROM else "flops"
    if form not in HINT_FORMS:
        raise ValueError(f"form must be one of {HINT_FORMS}")
    return form


def check_wrong(form, wrong):
    if wrong not in (MEM_WRONG if form == "memory" else HINT_WRONG):
        raise ValueError(f"wrong must be one of {MEM_WRONG if form == 'memory' else HINT_WRONG}")


class RxHintModel:
    """MR-ENG-328..334: the state and its per-cycle update (``step``); ``hint`` and ``senders``
    are functions of the state (read before ``step``). The flip-flop form: a bit per connection
    for seen, carried and more due."""

    form = "flops"

    def __init__(self, conns, wrong=None):
        if conns < 1:
            raise ValueError("conns must be at least 1")
        check_wrong(self.form, wrong)
        self.conns, self.wrong = conns, wrong
        self.seen = self.carry = self.more = 0      # bit per connection
        self.prev = 0               # senders counted in the previous interval
        self.epoch = 0              # the current interval's start (ns)
        self.iv_extra = 0           # two MTU packet times per sender counted last time (ns)
        self.pkts = self.ce = 0     # this interval's arrivals and CE marks
        self.f_pkts = self.f_ce = 0     # the previous interval's (the drain term's)
        self.iv_dirty = self.hint_dirty = 0
        self.cnt = 0                # divider cycles left (0: idle)
        self.job = None             # ("iv" | "hint", result)
        self.hint = 0
        self.rollovers = self.stale = self.carried = self.jobs = 0

    def senders(self):
        """MR-ENG-329: N, the larger of the previous interval's count and the current one's."""
        cur = bin(self.seen).count("1")
        return cur if self.wrong == "count" else max(self.prev, cur)

    def interval(self, share_ns):
        return max(share_ns, self.iv_extra)

    def _result(self, line_mbps, mtu):
        kind = self.job_kind
        if kind == "iv":
            q = 16_000 * mtu * self.prev // line_mbps if line_mbps else (1 << NUM_BITS) - 1
            return min(q, _TIME_MASK)
        n = self.senders()
        if not line_mbps:
            return 0                # MR-ENG-339: no capacity configured, no hint
        if self.wrong == "drain":
            return P.fair_share_fx(line_mbps, n)
        return P.fair_share_fx(line_mbps, n, self.f_ce, self.f_pkts)

    def step(self, valid, conn, ce, more, now, line_mbps, share_ns, mtu):
        start = self._divide(line_mbps, mtu)
        set_iv = set_hint = 0
        if valid and conn < self.conns:
            set_iv, set_hint = self._arrive(conn, ce, more, now, share_ns)
        self._dirty(start, set_iv, set_hint)

    def _divide(self, line_mbps, mtu):
        # the divider: a job ends or starts, on this cycle's state; MR-ENG-353: an ended job's
        # result is written at the cycle's end (``_dirty``), so this cycle's arrival is judged
        # on the interval's length before it
        start = self.ended = None
        if self.cnt:
            self.cnt -= 1
            if not self.cnt:
                self.ended = self.job
        elif self.iv_dirty or self.hint_dirty:
            start = "iv" if self.iv_dirty else "hint"
            self.job_kind = start
            self.job = (start, self._result(line_mbps, mtu))
            self.cnt = JOB_CYCLES
            self.jobs += 1
        return start

    def _roll(self, now, share_ns, cur):
        """MR-ENG-331: whether the arrival at ``now`` ends the interval, and whether it is
        stale; if it ends, the previous interval's count (``cur``, this one's), drain counts and
        start move on."""
        t = (now - self.epoch) & _TIME_MASK
        iv = self.interval(share_ns)
        if t < iv:
            return False, False
        self.rollovers += 1
        stale = t >= 2 * iv
        self.stale += stale
        self.prev = 0 if stale else cur
        self.f_pkts, self.f_ce = (0, 0) if stale else (self.pkts, self.ce)
        self.pkts = self.ce = 0
        self.epoch = now & _TIME_MASK
        return True, stale

    def _count(self, ce):
        if self.pkts < (1 << PKT_BITS) - 1:      # MR-ENG-332: saturating, CE with it
            self.pkts += 1
            self.ce += 1 if ce else 0

    def _dirty(self, start, set_iv, set_hint):
        if self.ended is not None:
            kind, res = self.ended
            if kind == "iv":
                self.iv_extra = res
            else:
                self.hint = res
        self.iv_dirty = int(bool((self.iv_dirty and start != "iv") or set_iv))
        self.hint_dirty = int(bool((self.hint_dirty and start != "hint") or set_hint))

    def _arrive(self, conn, ce, more, now, share_ns):
        set_iv = set_hint = 0
        bit = 1 << conn
        more_now = (self.more & ~bit) | (bit if more else 0)
        roll, stale = self._roll(now, share_ns, bin(self.seen).count("1"))
        if roll:                # MR-ENG-331: the interval ends at this arrival
            self.seen = 0 if stale else self.seen & ~self.carry & more_now
            self.carry = self.seen
            self.carried += bin(self.carry).count("1")
            set_iv = set_hint = 1
        if not self.seen & bit:
            self.seen |= bit
            set_hint = 1
        else:
            self.carry &= ~bit
        self.more = more_now
        self._count(ce)
        return set_iv, set_hint

    def busy(self):
        return bool(self.cnt or self.iv_dirty or self.hint_dirty)


class RxHintMemModel(RxHintModel):
    """MR-ENG-346..351: the memory form. Per connection one row ``(a, m)``: the number of the
    interval of its latest arrival (:data:`EPOCH_BITS` bits, modulo) and its more-due bit; the
    current interval's number ``E``, whether it began stale, the count ``cur`` of its senders
    and the count ``mc`` of its arrived senders with more due (the next interval's carried).
    An arrival is taken one cycle after its record (the row's read): the outputs in cycle t + 1
    are the flip-flop form's in cycle t (MR-ENG-349)."""

    form = "memory"

    def __init__(self, conns, wrong=None):
        super().__init__(conns, wrong)
        self.ebits = 2 if wrong == "epoch" else EPOCH_BITS
        self.emask = (1 << self.ebits) - 1
        self.E = 0
        self.stale_in = 0           # the current interval began with a stale end
        self.cur = self.mc = 0
        # MR-ENG-347: every row starts two intervals old (not seen, not carried)
        self.rows = [(self.emask - 1, 0)] * conns
        self.pending = None         # the record taken this cycle, counted the next
        self.last = None            # the previous count's connection and its row before it

    def senders(self):
        return self.cur if self.wrong == "count" else max(self.prev, self.cur)

    def step(self, valid, conn, ce, more, now, line_mbps, share_ns, mtu):
        start = self._divide(line_mbps, mtu)
        set_iv = set_hint = 0
        last, self.last = self.last, None
        if self.pending is not None:
            set_iv, set_hint = self._arrive(*self.pending, share_ns, last)
        self.pending = (conn, ce, more, now) if valid and conn < self.conns else None
        self._dirty(start, set_iv, set_hint)

    def _arrive(self, conn, ce, more, now, share_ns, last=None):
        a, m_old = self.rows[conn]
        if self.wrong == "forward" and last is not None and last[0] == conn:
            a, m_old = last[1]      # the row as read, before the previous cycle's write
        E, more = self.E, int(bool(more))
        here = a == E               # arrived in this interval
        carried = a == (E - 1) & self.emask and m_old and not self.stale_in
        set_iv = set_hint = 0
        roll, stale = self._roll(now, share_ns, self.cur)
        if roll:
            # MR-ENG-348: the carried are the arrived with more due (this one's bit the new);
            # this one is in the new interval, carried or not
            kept = 0 if stale else self.mc - (here and m_old)
            self.carried += kept + (not stale and here and more)
            self.cur = kept + 1
            self.mc = more
            self.E = (E + 1) & self.emask
            self.stale_in = int(stale)
            set_iv = set_hint = 1
        else:
            if not (here or carried):
                self.cur += 1       # a new sender of this interval
                set_hint = 1
            self.mc += more - (here and m_old)
        self.last = (conn, self.rows[conn])
        self.rows[conn] = (self.E, more)
        self._count(ce)
        return set_iv, set_hint

    def busy(self):
        return bool(self.pending is not None or super().busy())


def rx_hint_model(conns, wrong=None, form=None):
    """MR-ENG-346: the model of ``RxHint(conns, wrong=wrong, form=form)``."""
    return (RxHintMemModel if hint_form(conns, form) == "memory" else RxHintModel)(conns, wrong)


class RxHintCycleModel:
    """:class:`RxHintModel` on the ports of ``hdl.rx_hint.RxHint`` (Verilog names)."""

    INPUTS = ["s_seen__valid", "s_seen__payload", "now", "line_mbps", "share_ns", "mtu"]
    OUTPUTS = ["hint", "senders"]

    def __init__(self, conns, wrong=None, form=None):
        self.m = rx_hint_model(conns, wrong, form)
        self.lay = seen_layout(conns)

    def port_names(self):
        return {"inputs": list(self.INPUTS), "outputs": list(self.OUTPUTS)}

    def busy(self):
        return self.m.busy()

    def step(self, inputs):
        g = inputs.get
        out = {"hint": self.m.hint, "senders": self.m.senders()}
        r = unpack(self.lay, g("s_seen__payload", 0))
        self.m.step(g("s_seen__valid", 0), r["conn"], r["ce"], r["more"], g("now", 0),
                    g("line_mbps", 0), g("share_ns", 0), g("mtu", 0))
        return out


def rx_hint_model_small(width=64):
    """MR-ENG-344: the model of ``hdl.rx_hint.rx_hint_small``."""
    return RxHintCycleModel(2)


#: MR-ENG-357: the connections of the block ``rx_hint_mem`` (the memory form, small)
MEM_SMALL = 16


def rx_hint_model_mem_small(width=64):
    """MR-ENG-357: the model of ``hdl.rx_hint.rx_hint_mem_small``."""
    return RxHintCycleModel(MEM_SMALL, form="memory")


def rx_hint_model_4096(width=64):
    """MR-ENG-344: the model of ``hdl.rx_hint.rx_hint_4096``."""
    return RxHintCycleModel(4096)
