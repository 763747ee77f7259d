"""The atomic executor's verification stack, simulator-independent part (hw-engine.md MR-ENG-166..).

* :class:`SharedMemory`: one host-memory image behind an AXI4 read slave and an AXI4 write slave
  (``dma_read_cases.HostMemory`` and ``dma_write_cases.HostMemory`` on the same bytes, random
  ready, random R and B latency), under any port prefix (:class:`Renamed`);
* :func:`random_items`: execution items as the RX engine's ``m_atom`` gives them;
* :class:`Driver`: the items on ``s_atom`` (random idle), ``m_rsp.ready`` random, the memory, and
  a model of the placement DMA's intake (placements waiting, taken unless held, done records
  after a random delay) that checks MR-ENG-162/163's ordering at every read and write;
* :func:`oracle`: the items executed one after another on the initial image
  (``protocol.atomic_apply``): the final image, the response items, the result rows.
"""
from __future__ import annotations

import collections
import random

from . import protocol as P
from .atomic import AR, AWR, BR, BT, CNT_BITS, FENCE, AtomicExecModel, RESULT_SLOTS, result_area_bytes, result_row
from .dma_read_cases import HostMemory as ReadMemory
from .dma_write_cases import BASE, HostMemory as WriteMemory, Layout
from .driver import run_alone
from .rx import layouts, pack, unpack

__all__ = ["SharedMemory", "Renamed", "random_items", "Driver", "oracle", "run_model", "Reexecute", "NoFence", "OldFence", "check", "AtomSlave", "Twice"]


class SharedMemory:
    """An AXI4 slave of both directions over one image (``prefix`` ``m_axi__`` names): reads see
    every write whose burst completed before the read's AR."""

    def __init__(self, lay: Layout, width, rng, *, p_bp=0.3, latency=(1, 40), image=None):
        self.wmem = WriteMemory(lay, width, rng, p_bp=p_bp, latency=latency)
        if image is not None:
            self.wmem.image[:len(image)] = image
        self.rmem = ReadMemory(lay, width, rng, p_bp=p_bp, p_gap=p_bp, latency=latency)
        self.rmem.image = self.wmem.image           # one image
        self.image = self.wmem.image

    def inputs(self, inp, cycle):
        self.wmem.inputs(inp, cycle)
        self.rmem.inputs(inp, cycle)

    def observe(self, inp, out, cycle):
        self.wmem.observe(inp, out, cycle)
        self.rmem.observe(inp, out, cycle)

    @property
    def idle(self):
        return self.wmem.idle and self.rmem.idle


class Renamed:
    """A slave whose ports are ``m_axi__*`` seen under another prefix (``m_axi_at__``)."""

    def __init__(self, mem, prefix):
        self.mem, self.prefix = mem, prefix
        self._n = len(prefix)

    def _to(self, d):
        return {"m_axi__" + k[self._n:]: v for k, v in d.items() if k.startswith(self.prefix)}

    def inputs(self, inp, cycle):
        d = {}
        self.mem.inputs(d, cycle)
        inp.update({self.prefix + k[7:]: v for k, v in d.items()})

    def observe(self, inp, out, cycle):
        self.mem.observe(self._to(inp), self._to(out), cycle)

    @property
    def idle(self):
        return self.mem.idle


def random_items(rng, n, conns, lay: Layout, *, targets=6, p_err=0.1, p_match=0.4, image=None):
    """``n`` items (dicts of ``layouts().atom``): ``targets`` 8-byte aligned addresses in the
    window's first KiB, compare-and-swap or fetch-and-add, ``err`` with probability ``p_err``; a
    compare-and-swap's compare value the target's value before it (as the oracle runs them) with
    probability ``p_match`` (``image``: the initial bytes)."""
    addrs = [lay.base + 8 * rng.randrange(128) for _ in range(targets)]
    mem = bytearray(image) if image is not None else None
    items = []
    for k in range(n):
        a = rng.choice(addrs)
        err = int(rng.random() < p_err)
        cas = rng.getrandbits(1)
        it = {"conn": rng.randrange(conns), "stream": rng.randrange(8), "msg": rng.getrandbits(32),
              "laddr": 0 if err else a, "cas": cas, "err": err,
              "operand": rng.getrandbits(64), "compare": rng.getrandbits(64) if cas else 0}
        if mem is not None and not err:
            off = a - lay.base
            cur = int.from_bytes(mem[off:off + 8], "little")
            if cas and rng.random() < p_match:
                it["compare"] = cur
            new = P.atomic_apply(cas, cur, it["operand"], it["compare"])
            mem[off:off + 8] = new.to_bytes(8, "little")
        items.append(it)
    return items


def oracle(items, image, base, result_base, slots=RESULT_SLOTS):
    """The items executed in order on ``image`` (window at ``base``): ``(image, responses,
    rows)``, ``responses`` as ``(conn, stream, msg, laddr, length, err)``, ``rows`` the last
    original value written to each result row address."""
    mem = bytearray(image)
    rsps, rows = [], {}
    for it in items:
        if it["err"]:
            rsps.append((it["conn"], it["stream"], it["msg"], 0, 8, 1))
            continue
        off = it["laddr"] - base
        orig = int.from_bytes(mem[off:off + 8], "little")
        mem[off:off + 8] = P.atomic_apply(it["cas"], orig, it["operand"], it["compare"]).to_bytes(8, "little")
        row = result_row(result_base, it["conn"], it["stream"], it["msg"], slots)
        rows[row] = orig
        if 0 <= row - base < len(mem):          # the result row is in the same memory
            mem[row - base:row - base + 8] = orig.to_bytes(8, "little")
        rsps.append((it["conn"], it["stream"], it["msg"], row, 8, 0))
    return mem, rsps, rows


class Driver:
    """The executor's ports (module docstring). Results: ``rsps`` (tuples), ``violations``
    (MR-ENG-216/217/163 ordering broken), ``cycle``.

    The items are delivered one by one (at most ``ahead`` delivered and not yet taken), each
    with its placement mark ``pmark`` (MR-RX-175): the placements pushed up to its delivery.
    With ``p_stuck`` (MR-ENG-218, the hazard of MR-ENG-162), a placement pushed after ``j``
    deliveries is with that probability behind an operand capture that waits for the RX's
    atomic queue (MR-RX-166): its done record comes only once the executor has taken ``j - 1``
    items (the executor holds one, the RX's output register the next, so the capture of the
    third waits)."""

    def __init__(self, width, conns, items, lay: Layout, result_base, *, seed=0, p_idle=0.3,
                 p_bp=0.3, latency=(1, 40), p_place=0.3, image=None, p_stuck=0.0, ahead=4,
                 p_deliver=0.3, max_cycles=200_000):
        self.rng = random.Random(seed)
        self.lay = layouts(conns=conns)
        self.items = collections.deque(dict(it) for it in items)
        self.mem = SharedMemory(lay, width, random.Random(seed + 1), p_bp=p_bp, latency=latency,
                                image=image)
        self.base = result_base
        self.p_idle, self.p_bp, self.p_place = p_idle, p_bp, p_place
        self.p_stuck, self.ahead, self.p_deliver = p_stuck, ahead, p_deliver
        self.max_cycles = max_cycles
        self.cycle = 0
        self.rsps = []
        self.violations = []
        # the placement DMA's intake: placements waiting (their gates), taken ones with their
        # done cycle and gate
        self.waiting = collections.deque()
        self.in_dma = collections.deque()       # (done-from cycle, serial, gate)
        self.serial = self.done_serial = 0      # placements taken, done records taken
        self.delivered = self.taken_items = 0   # items delivered (pmark set), taken by the executor
        self.need = None                        # placements the current item must wait for
        self.holding = False                    # between the target read and its write's B
        self.quiet = 0
        self.finished = False
        self.stuck = 0                          # placements that were stuck (for the tests' figures)
        # this cycle's hold_place (a register: the model's, read before its step, as the engine's
        # comb path from the executor's register to the DMA's intake)
        self.hold_now = lambda: 0

    def pushed(self):
        return self.serial + len(self.waiting)

    def inputs(self):
        rng = self.rng
        inp = {"s_atom__valid": 0, "s_atom__payload": 0, "result_base": self.base,
               "m_rsp__ready": int(rng.random() >= self.p_bp),
               # MR-ENG-226: every counter select, the executor's and others (read as 0)
               "reg_addr": rng.randrange(16)}
        # an item delivered: its mark is the placements pushed so far (MR-RX-175)
        ahead = self.delivered - self.taken_items
        if ahead < min(self.ahead, len(self.items)) and (ahead == 0 or rng.random() < self.p_deliver):
            self.items[ahead]["pmark"] = self.pushed() & ((1 << CNT_BITS) - 1)
            self.delivered += 1
        if self.delivered > self.taken_items and rng.random() >= self.p_idle:
            inp.update({"s_atom__valid": 1, "s_atom__payload": pack(self.lay.atom, self.items[0])})
        # new placements arrive while there are items to come
        if self.items and rng.random() < self.p_place:
            stuck = rng.random() < self.p_stuck
            self.waiting.append(self.delivered - 1 if stuck else -1)
        inp["place_busy"] = int(bool(self.waiting))
        # the DMA's handshakes as the engine wires them (MR-ENG-163: the intake held): taken only
        # when this cycle's hold (a register) is 0
        take = not self.hold_now() and bool(self.waiting) and rng.random() >= self.p_bp
        done = (bool(self.in_dma) and self.in_dma[0][0] <= self.cycle
                and self.taken_items >= self.in_dma[0][2] and rng.random() >= self.p_bp)
        inp["place_taken"], inp["place_done"] = int(take), int(done)
        self.mem.inputs(inp, self.cycle)
        return inp

    def observe(self, inp, out):
        self.mem.observe(inp, out, self.cycle)
        take = inp["place_taken"]
        if take and out["hold_place"]:
            self.violations.append((self.cycle, "a placement taken while held"))
        if inp["s_atom__valid"] and out["s_atom__ready"]:
            it = self.items.popleft()
            self.taken_items += 1
            # every placement pushed before the item's delivery (its mark, exact in these runs)
            self.need = it["pmark"]
        if out["m_axi__arvalid"] and inp["m_axi__arready"]:
            if self.need is None or self.done_serial < self.need:
                self.violations.append((self.cycle, "read before the earlier placements were done"))
            self.holding = True
        if take and self.holding:
            self.violations.append((self.cycle, "a placement taken during the read-modify-write"))
        if inp["m_axi__bvalid"] and out["m_axi__bready"] and self.holding:
            self.holding = False
        if take:
            gate = self.waiting.popleft()
            self.stuck += gate >= 0
            self.serial += 1
            self.in_dma.append((self.cycle + self.rng.randint(1, 30), self.serial, gate))
        if inp["place_done"]:
            self.in_dma.popleft()
            self.done_serial += 1
        if out["m_rsp__valid"] and inp["m_rsp__ready"]:
            r = unpack(self.lay.rsp, out["m_rsp__payload"])
            self.rsps.append((r["conn"], r["stream"], r["msg"], r["laddr"], r["length"], r["err"]))
            self.need = None
        self.cycle += 1

    def settle(self, busy):
        if not self.items and not (busy() if callable(busy) else busy) and self.mem.rmem.idle and self.mem.wmem.idle:
            self.quiet += 1
            self.finished = self.quiet > 8
        else:
            self.quiet = 0
        if self.cycle > self.max_cycles:
            raise AssertionError(f"no progress: {len(self.items)} items left, {len(self.rsps)} responses")


class Reexecute(AtomicExecModel):
    """A negative control: an executor that reads the target again for a response (here: its
    result row gets the value after the write, the new value), as one that re-executed on a
    resend would answer (MR-VERB-012)."""

    def step(self, inputs):
        out = super().step(inputs)
        if self.state == AWR:
            self.orig = self.new
        return out



class NoFence(AtomicExecModel):
    """A negative control: an executor that reads the target as soon as it takes the item,
    without waiting for the earlier placements (MR-ENG-162)."""

    def step(self, inputs):
        out = super().step(inputs)
        if self.state == FENCE:
            self.state = AR
        return out


class OldFence(AtomicExecModel):
    """A negative control (MR-ENG-218): session 25's fence (MR-ENG-162 before MR-ENG-216): after
    taking an item, wait for a cycle with no placement waiting at the DMA's intake, latch the
    placements taken then, hold the intake and read once their done records are in. The
    placements taken include ones after the item; one behind an operand capture that waits for
    the executor never completes, and the executor and the RX wait for each other."""

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.old_fence = None

    def step(self, inputs):
        g = inputs.get
        if self.state != FENCE:
            st = self.state
            out = super().step(inputs)
            if st != FENCE and self.state == FENCE:
                self.hold = 0                       # no hold before the fence
            return out
        out = self.outputs()
        self.ctr[3] += 1
        taken_next = (self.taken + (1 if g("place_taken", 0) else 0)) & self.mask
        if self.old_fence is None:
            if not g("place_busy", 0):
                self.old_fence, self.hold = taken_next, 1
        elif self.done == self.old_fence:
            self.old_fence, self.state = None, AR
        self.row = self._row_of(g("result_base", 0))
        self.taken = taken_next
        if g("place_done", 0):
            self.done = (self.done + 1) & self.mask
        return out


def run_model(width=64, conns=4, n=40, *, seed=0, model_cls=AtomicExecModel, **kw):
    """The executor's model alone through the :class:`Driver`; returns ``(driver, expected)``."""
    rng = random.Random(seed)
    wl = Layout(max(4096, result_area_bytes(conns) + 2048))
    init = bytes(random.Random(seed + 5).getrandbits(8) for _ in range(wl.size))
    items = random_items(rng, n, conns, wl, image=init)
    rbase = BASE + 2048
    lay = layouts(conns=conns)
    model = model_cls(width, lay.atom, lay.rsp)
    drv = Driver(width, conns, items, wl, rbase, seed=seed, image=init, **kw)
    drv.hold_now = lambda: model.hold
    run_alone(model, drv)
    return drv, oracle(items, init, BASE, rbase), model


def check(drv, expected):
    """MR-ENG-166: the run's responses, memory and result rows are the oracle's, and the
    ordering held. Returns the number of items executed."""
    img, rsps, rows = expected
    assert not drv.violations, drv.violations[:3]
    assert drv.rsps == rsps, "response items differ from the oracle's"
    base = drv.mem.wmem.lay.base
    got = {a: int.from_bytes(drv.mem.image[a - base:a - base + 8], "little") for a in rows}
    assert got == rows, "a result row does not hold its request's original value"
    assert bytes(drv.mem.image) == bytes(img), "the memory is not the oracle's"
    return sum(1 for r in rsps if not r[5])


class AtomSlave:
    """MR-ENG-167: the executor's AXI4 slave in the engine's runs: single-beat bursts (the
    executor's) over the images of ``mems`` (objects with ``lay.base``, ``lay.size`` and
    ``image``, read at each access: the placement memory and, in the whole engine, the payload
    memory the TX half reads the result rows from), random ready, R and B after a random latency,
    in order. ``writes``: ``(cycle, address, 8 bytes)`` of every write, in order."""

    def __init__(self, mems, width, rng, *, p_bp=0.3, latency=(1, 40), prefix="m_axi_at__"):
        self.mems, self.nb, self.rng, self.p_bp, self.latency = list(mems), width // 8, rng, p_bp, latency
        self.p = prefix
        self.r = collections.deque()        # (release, rdata)
        self.aw = collections.deque()
        self.w = collections.deque()
        self.b = collections.deque()        # release
        self.last_r = self.last_b = 0
        self.writes = []

    def _where(self, addr, n):
        for mem in self.mems:
            off = addr - mem.lay.base
            if 0 <= off and off + n <= len(mem.image):
                return mem, off
        raise AssertionError(f"executor access outside the host memory at {addr:#x}")

    def inputs(self, inp, cycle):
        p, rng = self.p, self.rng
        for n in ("arready", "awready", "wready"):
            inp[p + n] = int(rng.random() >= self.p_bp)
        r = self.r and self.r[0][0] <= cycle
        inp.update({p + "rvalid": int(bool(r)), p + "rdata": self.r[0][1] if r else 0, p + "rresp": 0,
                    p + "rlast": int(bool(r)), p + "rid": 0})
        b = self.b and self.b[0] <= cycle
        inp.update({p + "bvalid": int(bool(b)), p + "bresp": 0, p + "bid": 0})

    def observe(self, inp, out, cycle):
        p = self.p
        if out[p + "arvalid"] and inp[p + "arready"]:
            addr = out[p + "araddr"]
            assert out[p + "arlen"] == 0 and out[p + "arsize"] == (self.nb - 1).bit_length()
            first = addr - addr % self.nb
            mem, off = self._where(first, self.nb)
            self.last_r = max(self.last_r, cycle + self.rng.randint(*self.latency))
            self.r.append((self.last_r, int.from_bytes(mem.image[off:off + self.nb], "little")))
        if out[p + "rready"] and inp[p + "rvalid"]:
            self.r.popleft()
        if out[p + "awvalid"] and inp[p + "awready"]:
            assert out[p + "awlen"] == 0
            self.aw.append(out[p + "awaddr"])
        if out[p + "wvalid"] and inp[p + "wready"]:
            assert out[p + "wlast"]
            self.w.append((out[p + "wdata"], out[p + "wstrb"]))
        while self.aw and self.w:
            addr, (data, strb) = self.aw.popleft(), self.w.popleft()
            first = addr - addr % self.nb
            raw = data.to_bytes(self.nb, "little")
            lanes = [j for j in range(self.nb) if strb >> j & 1]
            mem, off = self._where(first + lanes[0], len(lanes))
            for j in lanes:
                mem.image[off + j - lanes[0]] = raw[j]
            self.writes.append((cycle, first + lanes[0], bytes(raw[j] for j in lanes)))
            self.last_b = max(self.last_b, cycle + self.rng.randint(*self.latency))
            self.b.append(self.last_b)
        if out[p + "bready"] and inp[p + "bvalid"]:
            self.b.popleft()

    @property
    def idle(self):
        return not (self.r or self.aw or self.w or self.b)


class Twice(AtomicExecModel):
    """A negative control: an executor that executes an item twice (as one that re-executed a
    resent request would, MR-VERB-012): after its target write it reads and writes again."""

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.again = False

    def step(self, inputs):
        st = self.state
        out = super().step(inputs)
        if st == BT and self.state == AWR and not self.again:       # once more
            self.again, self.state, self.hold = True, AR, 1
        elif st == BR and self.state != BR:                          # the item done
            self.again = False
        return out
