"""The cycle models' output and job queues: ``amaranth.lib.fifo.SyncFIFO`` as the blocks' RTL
uses it (shared by :mod:`metaroce.models.rx` and :mod:`metaroce.models.retransmit`)."""


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
