"""``hdl/queue.py``'s queues against Amaranth's, cycle for cycle, by one driver: ``SyncQueue``
(MR-HW-083..086; 086 the figures of docs/hw/probes/rxq36_queue_ecp5.py), ``HeadRegQueue``
(MR-HW-092..094; MR-HW-096 the figures of docs/hw/probes/qt38_queue_ecp5.py) and ``HeadRegFIFO``
(hw-tx.md MR-TX-065, MR-TX-073, MR-TX-265; MR-HW-095 its block-RAM form) against
``lib.fifo.SyncFIFO``, ``BufferedQueue``
(MR-HW-088) against ``lib.fifo.SyncFIFOBuffered``, each with its wrong forms (MR-HW-087)."""
import random

import pytest
from amaranth.hdl import Module
from amaranth.lib import fifo
from amaranth.sim import Simulator

from metaroce.hdl.queue import BufferedQueue, HeadRegFIFO, HeadRegQueue, SyncQueue
from metaroce.models.fifo import SyncFifoBufferedModel, SyncFifoModel
from metaroce.tb.lockstep import wrong_form

# (width, depth): the engine's shapes in small (16 and 64 deep, 29 not a power of two, 4 the RTO
# queue's; 32 and 16 the DMAs' in-flight queues) and the edges (1 and 2 deep; HeadRegFIFO and
# BufferedQueue take 2 and more)
SHAPES = {"sync_queue": [(8, 16), (5, 29), (6, 64), (3, 1), (4, 2), (7, 4)],
          "head_reg": [(8, 16), (5, 29), (4, 2), (7, 4), (6, 5)],
          "buffered": [(8, 32), (6, 16), (4, 2), (3, 3), (7, 5)],
          "head_reg_queue": [(8, 16), (5, 29), (6, 64), (3, 1), (4, 2), (7, 3), (6, 4)],
          "head_reg_block": [(8, 16), (5, 29), (4, 2), (7, 4), (6, 5)]}
#: each queue's reference, its class in hdl/queue.py and its cycle model
KINDS = {"sync_queue": (fifo.SyncFIFO, "SyncQueue", SyncFifoModel),
         "head_reg": (fifo.SyncFIFO, "HeadRegFIFO", SyncFifoModel),
         "buffered": (fifo.SyncFIFOBuffered, "BufferedQueue", SyncFifoBufferedModel),
         "head_reg_queue": (fifo.SyncFIFO, "HeadRegQueue", SyncFifoModel),
         "head_reg_block": (fifo.SyncFIFO, "HeadRegFIFO", SyncFifoModel)}
#: MR-HW-092: the queues whose ``r_data`` is compared only while ``r_rdy`` (a head register's old
#: content while empty, not the ring slot's)
DATA_WHILE_VALID = {"head_reg_queue"}

# MR-HW-087: each queue's wrong forms, each loaded in place of hdl/queue.py's text (``old`` ->
# ``new``, tb.lockstep.wrong_form), and the output its comparison must fail on
WRONG = {
    # MR-HW-085: the read port not transparent to the write (SyncQueue(late=True)'s form): a
    # word written into an empty queue shows a cycle late
    ("sync_queue", "late_read"): ("r_data", None),
    # room while full when the cycle pops (SyncFIFO's w_rdy is level != depth, read or not)
    ("sync_queue", "room_with_pop"): ("w_rdy", ("self.w_rdy.eq(self.level != depth)",
                                                "self.w_rdy.eq((self.level != depth) | self.r_en)")),
    # the write does not become the head when it meets the pop of the one entry held
    ("head_reg", "one_pop_push"): ("r_data", ("Mux(do_r, level == 1, ~nonempty)", "~nonempty")),
    # MR-TX-073: a write that fills the last slot keeps the room
    ("head_reg", "fill_keeps_room"): ("w_rdy", ("Mux(do_w & ~do_r, level != depth - 1, ",
                                                "Mux(do_w & ~do_r, 1, ")),
    # MR-HW-088: the ring read in every cycle it holds an entry, so the output changes under a
    # head not taken
    ("buffered", "read_while_held"): ("r_data", ("r_port.en.eq(do_inner_read)", "r_port.en.eq(inner_r_rdy)")),
    # room while the ring is full when the cycle takes the head (SyncFIFOBuffered's w_rdy is the
    # ring's room, read or not; counting the output register's entry, level != depth, is the same
    # function: the ring is never full while the output is empty)
    ("buffered", "room_with_pop"): ("w_rdy", ("self.w_rdy.eq(inner_level != inner_depth)",
                                              "self.w_rdy.eq((inner_level != inner_depth) | self.r_en)")),
    # MR-HW-092: two head registers: a pop's refill lands too late for a pop every cycle
    ("head_reg_queue", "two_heads"): ("r_data", ("HEADS = 3", "HEADS = 2")),
    # MR-HW-093: a refill issued without counting the read in flight (a word lands on no head)
    ("head_reg_queue", "credit_past_flight"): ("r_data", ("(occ_n + issue < n_h)", "(occ_n < n_h)")),
    # the room register loaded from the level before the edge (a cycle late)
    ("head_reg_queue", "late_room"): ("w_rdy", ("w_rdy.eq(level_n != depth)", "w_rdy.eq(self.level != depth)")),
    # MR-HW-095: the block RAM's read not transparent to the write (the entry written behind a
    # lone head comes up a cycle late), and addressed with the slot after the head before the pop
    ("head_reg_block", "late_read"): ("r_data", ("ring.read_port(transparent_for=(wr,))", "ring.read_port()")),
    ("head_reg_block", "addr_before_pop"): ("r_data", ("Mux(do_r, step(r_next), r_next) if self.block",
                                                       "r_next if self.block")),
}


def _queue(kind, width, depth, wrong=None):
    """The queue of ``kind``, or its wrong form ``wrong`` (a key of WRONG's)."""
    if wrong == "late_read" and kind == "sync_queue":
        return SyncQueue(width=width, depth=depth, late=True)
    name = KINDS[kind][1]
    mod = wrong_form("queue", *WRONG[kind, wrong][1]) if wrong else None
    cls = getattr(mod, name) if mod else {"SyncQueue": SyncQueue, "HeadRegFIFO": HeadRegFIFO,
                                          "BufferedQueue": BufferedQueue, "HeadRegQueue": HeadRegQueue}[name]
    return cls(width=width, depth=depth, **({"block": True} if kind == "head_reg_block" else {}))


def _first_mismatch(kind, width, depth, seed, wrong=None, stop=True):
    """Drive the reference (``KINDS``) and the queue of ``kind`` (or its wrong form) with the same random
    ``w_en``/``w_data``/``r_en`` (rates drawn anew every phase of 2 x depth + 20 cycles, so the
    queues fill and drain) and compare every output every cycle, ``r_data`` while empty too, with
    the reference's and with its cycle model's (``r_data`` where the model has it); every output is also
    checked not to follow the cycle's inputs (each is a flip-flop or a function of flip-flops).
    BufferedQueue's and HeadRegQueue's ``collision`` (an enabled read of the row written) is
    counted in the cases seen; HeadRegQueue's ``r_data`` is compared while ``r_rdy`` only. ``stop=False`` runs on past differences. Returns ``(first difference or None, cases
    seen)``."""
    m = Module()
    ref_cls, _, model_cls = KINDS[kind]
    m.submodules.ref = ref = ref_cls(width=width, depth=depth)
    m.submodules.dut = dut = _queue(kind, width, depth, wrong)
    model = model_cls(depth)
    rng = random.Random(seed)
    outs = ("w_rdy", "r_rdy", "r_data", "level") + (("w_level", "r_level") if kind not in ("head_reg", "head_reg_block") else ())
    phase = 2 * depth + 20
    cycles = max(600, 12 * phase)
    found = []
    seen = {"full": 0, "empty_pop_push": 0, "one_pop_push": 0, "collision": 0}

    async def bench(ctx):
        p_w = p_r = 0.5
        for cyc in range(cycles):
            if cyc % phase == 0:
                p_w, p_r = rng.choice([0.1, 0.5, 0.9, 1.0]), rng.choice([0.0, 0.1, 0.5, 0.9, 1.0])
            w_en, r_en, w_data = rng.random() < p_w, rng.random() < p_r, rng.getrandbits(width)
            before = [ctx.get(getattr(dut, name)) for name in outs]
            for q in (ref, dut):
                ctx.set(q.w_en, w_en)
                ctx.set(q.r_en, r_en)
                ctx.set(q.w_data, w_data)
            if kind == "buffered":
                valid = model.out is not None
                exp_model = {"w_rdy": int(model.w_rdy), "r_rdy": int(valid),
                             "level": len(model.inner) + valid, **({"r_data": model.out} if valid else {})}
            else:
                exp_model = {"w_rdy": int(model.level < depth), "r_rdy": int(model.level > 0),
                             "r_data": model.head, "level": model.level}
            if kind in DATA_WHILE_VALID and not model.level:
                exp_model.pop("r_data")
            for name, b in zip(outs, before):
                a, got = ctx.get(getattr(ref, name)), ctx.get(getattr(dut, name))
                loose = name == "r_data" and kind in DATA_WHILE_VALID and not ctx.get(ref.r_rdy)
                if got != b:
                    found.append((cyc, name, "follows the inputs", b, got))
                elif loose:
                    pass
                elif a != got or exp_model.get(name, a) != a:
                    found.append((cyc, name, a, got, exp_model.get(name)))
                if found and stop:
                    return
            level, r_rdy = ctx.get(ref.level), ctx.get(ref.r_rdy)
            seen["full"] += level == depth
            seen["empty_pop_push"] += level == 0 and w_en and r_en
            seen["one_pop_push"] += level == 1 and w_en and r_en
            seen["collision"] += kind in ("buffered", "head_reg_queue") and ctx.get(dut.collision)
            await ctx.tick()
            model.update(r_en and r_rdy, w_en, w_data)

    sim = Simulator(m)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    return (found[0] if found else None), seen


@pytest.mark.parametrize("kind,width,depth", [(k, w, d) for k, shapes in SHAPES.items() for w, d in shapes])
def test_queue_same_cycles_as_sync_fifo(kind, width, depth):
    """MR-HW-083, MR-HW-084, MR-HW-087 (SyncQueue); MR-TX-065, MR-TX-073, MR-TX-265 (HeadRegFIFO; MR-HW-095 its block-RAM form);
    MR-HW-088 (BufferedQueue); MR-HW-092, MR-HW-094 (HeadRegQueue, ``r_data`` while ``r_rdy``):
    the queue's outputs equal its reference's and cycle model's every
    cycle (``r_data`` while empty too, ``w_rdy`` against ``level != depth``; BufferedQueue's against
    SyncFIFOBuffered's, ``r_data`` while not valid too), none following the cycle's inputs, under random
    writes and reads that fill it, drain it, and write into it empty or with one entry popped."""
    for seed in range(2):
        diff, seen = _first_mismatch(kind, width, depth, seed)
        assert diff is None, (kind, width, depth, seed, diff)
        assert seen["full"] and seen["empty_pop_push"] and (depth == 1 or seen["one_pop_push"]), seen
        assert seen["collision"] == 0, seen       # MR-HW-088's collision mark holds


@pytest.mark.parametrize("kind,wrong", list(WRONG))
def test_queue_wrong_form_fails(kind, wrong):
    """MR-HW-085, MR-HW-087, MR-HW-094, MR-HW-095 (negative controls): each wrong form of each queue fails the
    comparison of ``test_queue_same_cycles_as_sync_fifo``, on the output it breaks, at a 16-deep
    and a 2-deep shape (HeadRegQueue: a 4-deep one, the least that reaches its block RAM)."""
    for width, depth in ((8, 16), (6, 4) if kind == "head_reg_queue" else (4, 2)):
        diff, _ = _first_mismatch(kind, width, depth, 0, wrong=wrong)
        assert diff is not None and diff[1] == WRONG[kind, wrong][0], (width, depth, diff)


def test_buffered_queue_collision_flag_bites():
    """MR-HW-088 (negative control of the collision check): with room given while the ring is
    full and the head is taken (``room_with_pop``'s wrong form) an enabled read meets the write
    of its row, and ``collision`` says so."""
    _, seen = _first_mismatch("buffered", 8, 16, 0, wrong="room_with_pop", stop=False)
    assert seen["collision"] > 0, seen
