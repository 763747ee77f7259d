"""Golden model of the payload DMA, ``dma_read`` (docs/spec/hw-dma-read.md, MR-DMR-*).

Two layers:

* pure functions, the rules themselves: :func:`read_bursts` (a command split into AXI4 INCR
  read bursts, MR-DMR-010..012, the split rule of the placement DMA), :func:`r_beats` (the R
  beats a command reads), :func:`out_beats` (the payload beats it returns, packed from lane 0,
  MR-DMR-020/021) and :func:`realign` (one payload beat from the kept and the current R beat,
  MR-DMR-022);
* :class:`DmaReadCycleModel`: the block's timing around them, ``step(inputs) -> outputs`` once
  per clock with Verilog port names, for the lockstep harness (tb/lockstep.py), register by
  register as the RTL (MR-DMR-040..045).

The RTL/model contract (port layouts, queue depths, parameter checks) is declared here; the RTL
(hdl/dma_read.py) imports it. models/ never imports hdl/.
"""
from __future__ import annotations

import collections

from amaranth.lib import data

from . import records
from .dma_write import (AXI_4K, INCR, MAX_BURST, RESP_DECERR, RESP_EXOKAY, RESP_OKAY,
                        RESP_SLVERR, boundary, bursts, check_params)
from .dma_write import place_layout
from .frame_builder import payload_layout
from .fifo import SyncFifoBufferedModel, SyncFifoModel
from .rx import pack, unpack

__all__ = ["AXI_4K", "MAX_BURST", "CMD_DEPTH", "R_DEPTH", "DONE_DEPTH", "OUTSTANDING",
           "INTAKE_STAGES", "check_params", "boundary", "read_bursts", "r_beats", "out_beats",
           "rotr", "rotl", "lane_keep", "realign", "keep_mask", "cmd_layout", "LANE_BITS", "done_layout", "payload_layout",
           "DmaReadCycleModel", "dma_read_model", "RESP_OKAY", "RESP_EXOKAY", "RESP_SLVERR",
           "RESP_DECERR", "INCR", "pack", "unpack"]

#: MR-DMR-040: command queue slots, R beat slots, done slots; cycles from a command taken to
#: its queue entry (capture, two decode stages).
CMD_DEPTH = 8
INTAKE_STAGES = 3
R_DEPTH = 2
DONE_DEPTH = 2
#: MR-DMR-001: default commands in flight (first AR loaded, last R beat not yet taken).
OUTSTANDING = 256
U64 = (1 << 64) - 1
#: MR-TX-479/480: the command's ``lane`` with ``rotate`` (mod 64: every width's nb divides it).
LANE_BITS = 6


def cmd_layout(conns=records.CONNS, lane=False):
    """MR-DMR-002: ``s_cmd``, the placement DMA's record {conn, addr, length}; MR-TX-480:
    with ``lane``, a 6-bit ``lane`` after them (the beats' rotation, ``rotate``)."""
    lay = place_layout(conns)
    if not lane:
        return lay
    return data.StructLayout({**lay.members, "lane": LANE_BITS})


def done_layout(conns=records.CONNS):
    """MR-DMR-002: one ``m_done`` record per command (the placement DMA's layout)."""
    from .dma_write import done_layout as dl
    return dl(conns)


# ------------------------------------------------------------------ the rules

def read_bursts(addr, length, nb, max_burst=MAX_BURST):
    """MR-DMR-010..013: the read bursts of one command, in order: the placement DMA's split
    (MR-DMA-011: each burst ends at the command's end or the next :func:`boundary`, and runs
    from the beat holding its first byte to the beat holding its last); none for length 0."""
    return [] if length == 0 else bursts(addr, length, nb, max_burst)


def r_beats(addr, length, nb):
    """MR-DMR-020: the R beats a command reads: the bus words holding its bytes."""
    return 0 if length == 0 else -(-((addr % nb) + length) // nb)


def keep_mask(nbytes):
    """``keep`` of a beat holding ``nbytes`` bytes from lane 0."""
    return (1 << nbytes) - 1


def _lanes(keep, nb):
    return sum(0xFF << (8 * j) for j in range(nb) if keep >> j & 1)


def out_beats(payload, nb):
    """MR-DMR-021: the payload beats of a command reading ``payload``: ``ceil(len / nb)``
    beats, byte i in lane ``i mod nb`` of beat ``i div nb``, ``keep`` exactly the payload's
    lanes, lanes past the payload 0, ``last`` on the last. Returns ``(data, keep, last)``."""
    out = []
    n = -(-len(payload) // nb)
    for k in range(n):
        chunk = payload[k * nb:(k + 1) * nb]
        out.append((int.from_bytes(chunk, "little"), keep_mask(len(chunk)), int(k == n - 1)))
    return out


def rotr(value, o, nb):
    """``value`` (``nb`` bytes) rotated down by ``o`` byte lanes (lane j takes lane j + o)."""
    bits, sh = 8 * nb, 8 * o
    return ((value >> sh) | (value << (bits - sh))) & ((1 << bits) - 1) if sh else value


def rotl(value, s, nb):
    """``value`` (``nb`` bytes) rotated up by ``s`` byte lanes (lane j + s takes lane j)."""
    return rotr(value, (-s) % nb, nb)


def lane_keep(keep, s, nb):
    """MR-TX-480: ``keep`` (one bit a lane) rotated up by ``s`` lanes."""
    s %= nb
    return ((keep << s) | (keep >> (nb - s))) & ((1 << nb) - 1) if s else keep


def realign(held, cur, o, keep, nb, flush=False):
    """MR-DMR-022: one payload beat. ``held`` is the previous R beat rotated down by ``o``,
    ``cur`` the R beat taken now (anything in a flush, which takes none). Lane j takes ``held``
    when ``j < nb - o`` (or in a flush), ``cur`` rotated down by ``o`` otherwise; lanes
    without ``keep`` are 0. Returns ``(data, rotated cur)``."""
    rot = rotr(cur, o, nb)
    low = _lanes(keep_mask(nb if flush else nb - o), nb)
    word = (held & low) | (rot & ~low)
    return word & _lanes(keep, nb), rot


# ------------------------------------------------------------------ cycle timing

INPUTS = ("s_cmd__payload", "s_cmd__valid", "m_axi__arready", "m_axi__rid", "m_axi__rdata",
          "m_axi__rresp", "m_axi__rlast", "m_axi__rvalid", "m_data__ready", "m_done__ready")
OUTPUTS = ("s_cmd__ready", "m_axi__arid", "m_axi__araddr", "m_axi__arlen", "m_axi__arsize",
           "m_axi__arburst", "m_axi__arvalid", "m_axi__rready", "m_data__payload",
           "m_data__valid", "m_done__payload", "m_done__valid")


class _Cmd:
    """A command on the R side: what the RTL's in-flight entry holds."""
    __slots__ = ("conn", "length", "o", "left", "spill", "zero", "e_m1", "lane")

    def __init__(self, conn, addr, length, nb, lane=0):
        self.conn, self.length = conn, length
        self.lane = lane % nb                   # MR-TX-480: the beats' rotation
        self.o = addr % nb
        self.zero = length == 0
        n_out = -(-length // nb)
        self.left = n_out                   # payload beats not yet started (counts R beats)
        self.spill = r_beats(addr, length, nb) == n_out + 1
        self.e_m1 = (length - 1) % nb if length else 0

    def last_r(self):
        """The next R beat is the command's last (MR-DMR-020)."""
        return self.left == 0 if self.spill else self.left == 1


class DmaReadCycleModel:
    """The payload DMA's timing around the rules (MR-DMR-040..045): ``step(inputs)`` once per
    clock with every input port's value (names of :meth:`port_names`), returning every output
    port's value in the same cycle. Every output is a function of the state alone."""

    def __init__(self, width=512, conns=records.CONNS, *, max_burst=MAX_BURST,
                 outstanding=OUTSTANDING, id_width=4, axi_id=0, rotate=False):
        check_params(width, conns, max_burst, outstanding, id_width, axi_id)
        self.width, self.nb = width, width // 8
        self.max_burst, self.axi_id = max_burst, axi_id
        # MR-TX-480: each payload beat rotated up by its command's ``lane`` mod nb
        self.rotate = bool(rotate)
        self.cmd = cmd_layout(conns, lane=self.rotate)
        self.done = done_layout(conns)
        self.beat = payload_layout(width)
        self.size = (self.nb - 1).bit_length()
        self.intake = [None] * INTAKE_STAGES    # commands captured and being decoded
        self.ar_q = collections.deque()         # decoded commands waiting for the AR side
        self.ar_cmd = None                      # remaining bursts of the AR side's command
        self.ar_entry = None                    # its R-side entry
        self.ar_first = False
        self.ar = (0, 0, 0)                     # AR register: valid, addr, len
        self.flight = SyncFifoBufferedModel(outstanding)    # commands whose AR started
        self.r_q = collections.deque()          # R beats (data, bad)
        self.cur = None                         # the R side's command
        self.first = False                      # no R beat of it taken yet
        self.err = 0
        self.held = 0                           # the last R beat, rotated down by its o
        self.pend = None                        # (conn, length, err, e_m1, lane): a last beat owed
        self.out = (0, 0)                       # m_data register: valid, payload
        self.done_q = SyncFifoModel(DONE_DEPTH)
        self.log = []                           # done records in order, for tests

    @staticmethod
    def port_names():
        return {"inputs": list(INPUTS), "outputs": list(OUTPUTS)}

    def busy(self):
        return bool(any(x is not None for x in self.intake) or self.ar_q or self.ar_cmd is not None
                    or self.ar[0] or self.flight.inner or self.flight.out is not None or self.r_q
                    or self.cur is not None or self.pend is not None or self.out[0]
                    or self.done_q.level)

    def _done(self, conn, length, err):
        return pack(self.done, {"conn": conn, "length": length, "error": err})

    def outputs(self):
        """Every output port's value this cycle: a function of the state alone (MR-DMR-044), so
        a joined model (models/tx.py) reads it before stepping its neighbours."""
        inflight = sum(x is not None for x in self.intake)
        dq = self.done_q
        ar_valid, ar_addr, ar_len = self.ar
        out_valid, out_payload = self.out
        return {
            "s_cmd__ready": int(len(self.ar_q) + inflight < CMD_DEPTH),
            "m_axi__arid": self.axi_id, "m_axi__araddr": ar_addr, "m_axi__arlen": ar_len,
            "m_axi__arsize": self.size, "m_axi__arburst": INCR, "m_axi__arvalid": ar_valid,
            "m_axi__rready": int(len(self.r_q) < R_DEPTH),
            "m_data__payload": out_payload, "m_data__valid": out_valid,
            "m_done__payload": dq.head if dq.level else 0, "m_done__valid": int(dq.level > 0),
        }

    def step(self, inputs):
        g = inputs.get
        nb = self.nb
        out = self.outputs()
        cmd_ready, r_ready = out["s_cmd__ready"], out["m_axi__rready"]
        dq = self.done_q
        go = dq.level < DONE_DEPTH
        ar_valid, ar_addr, ar_len = self.ar
        out_valid, out_payload = self.out

        # R side (MR-DMR-020..031, MR-DMR-042): a flush of the owed last beat, an R beat taken
        load_ok = not out_valid or g("m_data__ready", 0)
        cur, pend = self.cur, self.pend
        flush = pend is not None and load_ok and go
        take = (cur is not None and not cur.zero and bool(self.r_q) and go
                and ((self.first and load_ok) if pend is not None else (self.first or load_ok)))
        emit = take and not self.first
        zero_done = cur is not None and cur.zero and pend is None and go
        done_push = None
        new_out = None
        cmd_end = False
        next_held = self.held
        if flush:
            conn, length, err, e_m1, lane = pend
            word, _ = realign(self.held, 0, 0, keep_mask(e_m1 + 1), nb, flush=True)
            new_out = {"data": rotl(word, lane, nb), "keep": lane_keep(keep_mask(e_m1 + 1), lane, nb),
                       "last": 1}
            done_push = self._done(conn, length, err)
            self.pend = None
        if take:
            rdata, bad = self.r_q[0]
            last_r = cur.last_r()
            final = last_r and cur.spill          # this beat completes the last payload beat
            keep = keep_mask(cur.e_m1 + 1) if final else keep_mask(nb)
            word, rot = realign(self.held, rdata, cur.o, keep, nb)
            next_held = rot
            err = self.err | bad
            if emit:
                new_out = {"data": rotl(word, cur.lane, nb), "keep": lane_keep(keep, cur.lane, nb),
                           "last": int(final)}
            if last_r:
                cmd_end = True
                self.err = 0
                if final:
                    done_push = self._done(cur.conn, cur.length, err)
                else:
                    self.pend = (cur.conn, cur.length, err, cur.e_m1, cur.lane)
            else:
                self.err = err
                cur.left -= 1
            self.first = False
        if zero_done:
            done_push = self._done(cur.conn, 0, 0)
            cmd_end = True
        self.held = next_held
        if new_out is not None:
            self.out = (1, pack(self.beat, new_out))
        elif out_valid and g("m_data__ready", 0):
            self.out = (0, out_payload)
        fl = self.flight
        flight_pop = False
        if cur is None or cmd_end:
            self.cur = None
            if fl.out is not None:
                self.cur = fl.out
                self.first = True
                flight_pop = True

        # AR side: one burst per cycle into the AR register (MR-DMR-041)
        ar_pop = False
        flight_push = None
        load_ok = not ar_valid or g("m_axi__arready", 0)
        need = self.ar_cmd is None
        if self.ar_cmd is not None and load_ok and (not self.ar_first or fl.w_rdy):
            if self.ar_first:
                flight_push = self.ar_entry
            self.ar_first = False
            if self.ar_cmd:
                b = self.ar_cmd.pop(0)
                self.ar = (1, b.addr, b.beats - 1)
                need = b.last
            else:                               # length 0: an entry, no burst (MR-DMR-013)
                if ar_valid and g("m_axi__arready", 0):
                    self.ar = (0, ar_addr, ar_len)
                need = True
        elif ar_valid and g("m_axi__arready", 0):
            self.ar = (0, ar_addr, ar_len)
        if need:
            self.ar_cmd = None
            if self.ar_q:
                conn, addr, length, lane = self.ar_q[0]
                ar_pop = True
                self.ar_cmd = read_bursts(addr, length, nb, self.max_burst)
                self.ar_entry = _Cmd(conn, addr, length, nb, lane)
                self.ar_first = True

        # queues at the clock edge
        if ar_pop:
            self.ar_q.popleft()
        decoded = self.intake[-1]
        if decoded is not None:
            self.ar_q.append(decoded)
        taken = None
        if cmd_ready and g("s_cmd__valid", 0):
            p = unpack(self.cmd, g("s_cmd__payload", 0))
            taken = (p["conn"], p["addr"], p["length"], p.get("lane", 0))
        self.intake = [taken] + self.intake[:-1]
        if take:
            self.r_q.popleft()
        if r_ready and g("m_axi__rvalid", 0):
            self.r_q.append((g("m_axi__rdata", 0) & ((1 << self.width) - 1),
                             (g("m_axi__rresp", 0) >> 1) & 1))
        fl.update(flight_pop, flight_push is not None, flight_push)
        if dq.level and g("m_done__ready", 0):
            self.log.append(dq.head)
        dq.update(dq.level and g("m_done__ready", 0), done_push is not None, done_push or 0)
        return out


def dma_read_model(width=512, **kw):
    """The model of :func:`metaroce.hdl.dma_read.DmaRead` with the same parameters."""
    return DmaReadCycleModel(width, **kw)
