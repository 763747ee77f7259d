"""Golden model of the placement DMA, ``dma_write`` (docs/spec/hw-dma.md, MR-DMA-*).

Two layers:

* pure functions, the rules themselves: :func:`boundary` (the byte boundary no burst crosses),
  :func:`bursts` (a command split into AXI4 INCR bursts, MR-DMA-010..012), :func:`w_beats`
  (the write beats of a command: which input beat each uses, its byte strobes and ``wlast``,
  MR-DMA-020..022), :func:`realign` (one write beat's data from the input beats, MR-DMA-021)
  and :func:`apply` (the host memory after a command, MR-DMA-030);
* :class:`DmaWriteCycleModel`: the block's timing around them, ``step(inputs) -> outputs`` once
  per clock with Verilog port names, for the lockstep harness (tb/lockstep.py). It holds, per
  command, the lists the pure functions return and plays them out one burst and one beat per
  cycle under the handshakes (MR-DMA-040..044).

The RTL/model contract (port layouts, queue depths, parameter checks) is declared here; the RTL
(hdl/dma_write.py) imports it. models/ never imports hdl/.
"""
from __future__ import annotations

import collections
from dataclasses import dataclass

from amaranth.lib import data

from . import records
from .rx import layouts as rx_layouts
from .rx import pack, payload_layout, unpack

__all__ = ["AXI_4K", "MAX_BURST", "CMD_DEPTH", "DATA_DEPTH", "DONE_DEPTH", "OUTSTANDING",
           "Burst", "Beat", "check_params", "boundary", "bursts", "w_beats", "rotl", "realign",
           "apply", "place_layout", "done_layout", "payload_layout", "DmaWriteCycleModel",
           "RESP_OKAY", "RESP_EXOKAY", "RESP_SLVERR", "RESP_DECERR", "INCR"]

#: MR-DMA-010: no burst crosses a 4 KiB boundary (AXI4); at most 256 beats.
AXI_4K = 4096
MAX_BURST = 256
#: MR-DMA-040: command queue slots (each of the AW and W sides), input beat slots, done slots;
#: cycles from a command taken to its queue entries (capture, two decode stages).
CMD_DEPTH = 8
INTAKE_STAGES = 3
DATA_DEPTH = 2
DONE_DEPTH = 2
#: MR-DMA-001: default bursts in flight (AW taken, B not yet back).
OUTSTANDING = 256
#: AXI4 burst type and responses.
INCR = 1
RESP_OKAY, RESP_EXOKAY, RESP_SLVERR, RESP_DECERR = 0, 1, 2, 3
U64 = (1 << 64) - 1


def check_params(width, conns, max_burst, outstanding, id_width, axi_id):
    """MR-DMA-001: the parameters, ``ValueError`` on a bad one."""
    if width not in (64, 128, 256, 512):
        raise ValueError(f"width must be 64, 128, 256 or 512, not {width!r}")
    if not isinstance(max_burst, int) or not 1 <= max_burst <= MAX_BURST or max_burst & (max_burst - 1):
        raise ValueError(f"max_burst must be a power of two in [1, {MAX_BURST}], not {max_burst!r}")
    if not isinstance(outstanding, int) or not 2 <= outstanding <= 4096:
        raise ValueError(f"outstanding must be in [2, 4096], not {outstanding!r}")
    if not isinstance(id_width, int) or not 1 <= id_width <= 16:
        raise ValueError(f"id_width must be in [1, 16], not {id_width!r}")
    if not isinstance(axi_id, int) or not 0 <= axi_id < 1 << id_width:
        raise ValueError(f"axi_id must fit id_width bits, not {axi_id!r}")
    rx_layouts(conns, 2, 2)     # conns: the RX engine's rule (MR-RX-001)


def place_layout(conns=records.CONNS):
    """MR-DMA-002: ``s_place`` is the RX engine's ``m_place`` record (MR-RX-032)."""
    return rx_layouts(conns, 2, 2).place


def done_layout(conns=records.CONNS):
    """MR-DMA-002: one ``m_done`` record per command."""
    cb = rx_layouts(conns, 2, 2).conn_bits
    return data.StructLayout({"conn": cb, "length": 16, "error": 1})


# ------------------------------------------------------------------ the rules

def boundary(nb, max_burst=MAX_BURST):
    """MR-DMA-010: the byte boundary no burst crosses: 4 KiB, or ``max_burst`` beats of
    ``nb`` bytes when that is smaller (both powers of two, so a burst that stays inside one
    such block never has more than ``max_burst`` beats)."""
    return min(AXI_4K, max_burst * nb)


@dataclass(frozen=True)
class Burst:
    addr: int       # awaddr: the first byte's address (not aligned down)
    nbytes: int     # payload bytes it writes
    beats: int      # awlen + 1
    last: bool      # the command's last burst


def bursts(addr, length, nb, max_burst=MAX_BURST):
    """MR-DMA-011/012: the bursts of one command, in order. A burst ends at the command's end
    or at the next :func:`boundary`; its beats run from the beat holding its first byte to the
    beat holding its last. A zero-length command is one one-beat burst (MR-DMA-013)."""
    bound = boundary(nb, max_burst)
    out = []
    a, rem = addr & U64, length
    while True:
        n = min(rem, bound - a % bound)
        beats = (a % nb + max(n, 1) - 1) // nb + 1
        rem -= n
        out.append(Burst(a, n, beats, rem == 0))
        a = (a + n) & U64
        if rem == 0:
            return out


@dataclass(frozen=True)
class Beat:
    src: int | None     # the input beat (index in the command) this beat consumes, or None
    strobe: int         # wstrb
    last: bool          # wlast


def w_beats(addr, length, nb, max_burst=MAX_BURST):
    """MR-DMA-020/022: the write beats of one command. Beat k covers the bus word ``k`` after
    the one holding ``addr``; its strobes are exactly the lanes of the command's bytes; it
    consumes input beat k while there is one (input beats carry the payload from lane 0,
    ``ceil(length / nb)`` of them); ``wlast`` where a burst of :func:`bursts` ends."""
    bound = boundary(nb, max_burst)
    o = addr % nb
    start = (addr - o) & U64
    n_out = max(1, -(-(o + length) // nb))
    n_in = -(-length // nb)
    out = []
    for k in range(n_out):
        lo = max(0, o - k * nb)
        hi = min(nb, o + length - k * nb)
        strobe = ((1 << hi) - 1) & ~((1 << lo) - 1) if hi > lo else 0
        last = k == n_out - 1 or (start + (k + 1) * nb) % bound == 0
        out.append(Beat(k if k < n_in else None, strobe, last))
    return out


def rotl(value, o, nb):
    """``value`` (``nb`` bytes) rotated up by ``o`` byte lanes."""
    bits, sh = 8 * nb, 8 * o
    return ((value << sh) | (value >> (bits - sh))) & ((1 << bits) - 1) if sh else value


def _lanes(strobe, nb):
    return sum(0xFF << (8 * j) for j in range(nb) if strobe >> j & 1)


def realign(held, cur, o, strobe, nb):
    """MR-DMA-021: one write beat's ``wdata``. ``held`` is the previous input beat of the
    command rotated by ``o`` lanes, ``cur`` the input beat this write beat consumes (anything
    when it consumes none). Lane j takes ``cur`` rotated by ``o`` when ``j >= o``, ``held``
    below; lanes without strobe are 0. Returns ``(wdata, rotated cur)``."""
    rot = rotl(cur, o, nb)
    low = (1 << (8 * o)) - 1
    word = (rot & ~low) | (held & low)
    return word & _lanes(strobe, nb), rot


def apply(memory, base, addr, payload):
    """MR-DMA-030: host memory (a bytearray holding ``base``..) after a command placed."""
    off = addr - base
    memory[off:off + len(payload)] = payload


# ------------------------------------------------------------------ cycle timing

INPUTS = ("s_place__payload", "s_place__valid", "s_data__payload", "s_data__valid",
          "m_axi__awready", "m_axi__wready", "m_axi__bid", "m_axi__bresp", "m_axi__bvalid",
          "m_done__ready")
OUTPUTS = ("s_place__ready", "s_data__ready", "m_axi__awid", "m_axi__awaddr", "m_axi__awlen",
           "m_axi__awsize", "m_axi__awburst", "m_axi__awvalid", "m_axi__wdata", "m_axi__wstrb",
           "m_axi__wlast", "m_axi__wvalid", "m_axi__bready", "m_done__payload", "m_done__valid")


class _Buffered:
    """``amaranth.lib.fifo.SyncFIFOBuffered`` by its visible behaviour: an inner queue of
    ``depth - 1`` entries and an output register; an entry written at one edge is readable two
    cycles later."""

    def __init__(self, depth):
        self.inner = collections.deque()
        self.cap = depth - 1
        self.out = None

    @property
    def w_rdy(self):
        return len(self.inner) != self.cap

    def update(self, pop, push, value=None):
        inner_read = bool(self.inner) and (self.out is None or pop)
        got = self.inner.popleft() if inner_read else None
        if push and len(self.inner) + int(inner_read) != self.cap:
            self.inner.append(value)
        if inner_read:
            self.out = got
        elif pop:
            self.out = None


class DmaWriteCycleModel:
    """The placement DMA's timing around the rules (MR-DMA-040..044): ``step(inputs)`` once per
    clock with every input port's value (names of :meth:`port_names`), returning every output
    port's value in the same cycle. Every output is a function of the state alone."""

    def __init__(self, width=512, conns=records.CONNS, *, max_burst=MAX_BURST,
                 outstanding=OUTSTANDING, id_width=4, axi_id=0):
        check_params(width, conns, max_burst, outstanding, id_width, axi_id)
        self.width, self.nb = width, width // 8
        self.max_burst, self.axi_id = max_burst, axi_id
        self.place = place_layout(conns)
        self.done = done_layout(conns)
        self.size = (self.nb - 1).bit_length()
        self.intake = [None] * INTAKE_STAGES  # commands captured and being decoded
        self.aw_q = collections.deque()     # commands waiting for the AW side
        self.w_q = collections.deque()      # commands waiting for the W side
        self.d_q = collections.deque()      # input beats (data only)
        self.aw_cmd = None                  # remaining bursts of the AW side's command
        self.aw_info = None                 # (conn, length) of that command
        self.aw = (0, 0, 0)                 # AW register: valid, addr, len
        self.w_cmd = None                   # remaining Beats of the W side's command
        self.w_o = 0
        self.held = 0
        self.w = (0, 0, 0, 0)               # W register: valid, data, strb, last
        self.burst_q = _Buffered(outstanding)
        self.done_q = collections.deque()
        self.err = 0
        self.log = []                       # done records in order, for tests

    @staticmethod
    def port_names():
        return {"inputs": list(INPUTS), "outputs": list(OUTPUTS)}

    def busy(self):
        return bool(any(self.intake) or self.aw_q or self.w_q or self.d_q or self.aw_cmd
                    or self.w_cmd or self.aw[0]
                    or self.w[0] or self.burst_q.inner or self.burst_q.out is not None
                    or self.done_q)

    def outputs(self):
        """This cycle's outputs: a function of the state alone (MR-DMA-040), so known before
        the inputs (a top joining the DMA to other blocks' models reads them first)."""
        inflight = sum(x is not None for x in self.intake)
        aw_valid, aw_addr, aw_len = self.aw
        w_valid, w_data, w_strb, w_last = self.w
        return {
            "s_place__ready": int(len(self.aw_q) + inflight < CMD_DEPTH
                                  and len(self.w_q) + inflight < CMD_DEPTH),
            "s_data__ready": int(len(self.d_q) < DATA_DEPTH),
            "m_axi__awid": self.axi_id, "m_axi__awaddr": aw_addr, "m_axi__awlen": aw_len,
            "m_axi__awsize": self.size, "m_axi__awburst": INCR, "m_axi__awvalid": aw_valid,
            "m_axi__wdata": w_data, "m_axi__wstrb": w_strb, "m_axi__wlast": w_last,
            "m_axi__wvalid": w_valid,
            "m_axi__bready": int(self.burst_q.out is not None and len(self.done_q) < DONE_DEPTH),
            "m_done__payload": self.done_q[0] if self.done_q else 0,
            "m_done__valid": int(bool(self.done_q)),
        }

    def step(self, inputs):
        g = inputs.get
        nb = self.nb
        bq = self.burst_q
        aw_valid, aw_addr, aw_len = self.aw
        w_valid, w_data, w_strb, w_last = self.w
        out = self.outputs()
        place_ready, data_ready, b_ready = out["s_place__ready"], out["s_data__ready"], out["m_axi__bready"]

        # B: the head burst's response; the command's record after its last burst (MR-DMA-030)
        b_take = b_ready and g("m_axi__bvalid", 0)
        done_push = None
        if b_take:
            last, conn, length = bq.out
            bad = (g("m_axi__bresp", 0) >> 1) & 1
            if last:
                done_push = pack(self.done, {"conn": conn, "length": length, "error": self.err | bad})
                self.err = 0
            else:
                self.err |= bad

        # AW side: one burst per cycle into the AW register (MR-DMA-041)
        aw_pop = False
        burst_push = None
        load_ok = (not aw_valid or g("m_axi__awready", 0)) and bq.w_rdy
        need = self.aw_cmd is None
        if self.aw_cmd is not None and load_ok:
            b = self.aw_cmd.pop(0)
            self.aw = (1, b.addr, b.beats - 1)
            burst_push = (b.last, *self.aw_info)
            need = b.last
        elif aw_valid and g("m_axi__awready", 0):
            self.aw = (0, aw_addr, aw_len)
        if need:
            self.aw_cmd = None
            if self.aw_q:
                conn, addr, length = self.aw_q[0]
                aw_pop = True
                self.aw_cmd = bursts(addr, length, nb, self.max_burst)
                self.aw_info = (conn, length)

        # W side: one beat per cycle into the W register (MR-DMA-042)
        w_pop = d_pop = False
        need = self.w_cmd is None
        if self.w_cmd is not None:
            beat = self.w_cmd[0]
            have = beat.src is None or bool(self.d_q)
            if have and (not w_valid or g("m_axi__wready", 0)):
                self.w_cmd.pop(0)
                word, rot = realign(self.held, self.d_q[0] if self.d_q else 0, self.w_o, beat.strobe, nb)
                if beat.src is not None:
                    self.held = rot
                    d_pop = True
                self.w = (1, word, beat.strobe, int(beat.last))
                need = not self.w_cmd
            elif w_valid and g("m_axi__wready", 0):
                self.w = (0, w_data, w_strb, w_last)
        elif w_valid and g("m_axi__wready", 0):
            self.w = (0, w_data, w_strb, w_last)
        if need:
            self.w_cmd = None
            if self.w_q:
                addr, length = self.w_q[0]
                w_pop = True
                self.w_cmd = w_beats(addr, length, nb, self.max_burst)
                self.w_o = addr % nb

        # queues at the clock edge
        if aw_pop:
            self.aw_q.popleft()
        if w_pop:
            self.w_q.popleft()
        if d_pop:
            self.d_q.popleft()
        decoded = self.intake[-1]
        if decoded is not None:
            conn, addr, length = decoded
            self.aw_q.append((conn, addr, length))
            self.w_q.append((addr, length))
        taken = None
        if place_ready and g("s_place__valid", 0):
            p = unpack(self.place, g("s_place__payload", 0))
            taken = (p["conn"], p["addr"], p["length"])
        self.intake = [taken] + self.intake[:-1]
        if data_ready and g("s_data__valid", 0):
            self.d_q.append(g("s_data__payload", 0) & ((1 << self.width) - 1))
        bq.update(b_take, burst_push is not None, burst_push)
        if self.done_q and g("m_done__ready", 0):
            self.log.append(self.done_q.popleft())
        if done_push is not None:
            self.done_q.append(done_push)
        return out


def dma_write_model(width=512, **kw):
    """The model of :func:`metaroce.hdl.dma_write.DmaWrite` with the same parameters."""
    return DmaWriteCycleModel(width, **kw)
