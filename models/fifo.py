"""The cycle models' output and job queues: ``amaranth.lib.fifo.SyncFIFO`` as the blocks' RTL
uses it (shared by :mod:`metaroce.models.rx` and :mod:`metaroce.models.retransmit`), and
``SyncFIFOBuffered`` (the DMAs' in-flight queues, the frame builder's output FIFO)."""
import collections


class SyncFifoModel:
    """A ring whose head is read without a register, so ``head`` shows the slot's old content
    while empty (an output queue's payload is compared every cycle, valid or not)."""

    def __init__(self, depth):
        self.mem = [0] * depth
        self.depth = depth
        self.produce = self.consume = self.level = 0

    @property
    def head(self):
        return self.mem[self.consume]

    def update(self, pop, push, value=0):
        """One clock edge: ``pop`` (r_en & r_rdy) and ``push`` (w_en & w_rdy)."""
        pop = bool(pop) and self.level > 0
        push = bool(push) and self.level < self.depth
        if push:
            self.mem[self.produce] = value
            self.produce = (self.produce + 1) % self.depth
        if pop:
            self.consume = (self.consume + 1) % self.depth
        self.level += int(push) - int(pop)


class SyncFifoBufferedModel:
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
