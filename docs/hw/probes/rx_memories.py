"""The RX engine's memories per instance (issue 11: the ECP5-85 holds 208 EBR of 18 Kbit).

For every memory of the elaborated ``hdl.rx.Rx`` (tables and the output/timer FIFOs): depth x
width, bits, and the ECP5 EBR count of its best single-port-width shape (DP16KD: 16384 x 1 ..
1024 x 18; PDPW16KD: 512 x 36), as Yosys' memory_libmap picks for a one-read one-write memory;
memories of 64 rows or fewer are LUT RAM (TRELLIS_DPR16X4). Not a synthesis: the P&R run's
``brams`` is the measure (rx-results.md).

    .venv/bin/python docs/hw/probes/rx_memories.py [rx_256x4|rx] [WIDTH] [STREAMS]

(STREAMS: the instance with another ``streams``, e.g. 8 for rx_256x4 before it had 4.)
"""
import math
import sys

from amaranth.hdl import Fragment, Shape

from metaroce import blocks

EBR_SHAPES = ((16384, 1), (8192, 2), (4096, 4), (2048, 9), (1024, 18), (512, 36))


def ebr(depth, width):
    if depth <= 64:
        return 0
    return min(math.ceil(depth / d) * math.ceil(width / w) for d, w in EBR_SHAPES)


def memories(dut):
    """(name, depth, width) of every memory of ``dut``'s elaborated fragment tree."""
    def walk(f, path):
        for sub, name, *_ in f.subfragments:
            yield from walk(sub, path + (str(name),))
        if type(f).__name__ == "MemoryInstance":
            yield ".".join(path), f._data.depth, Shape.cast(f._data.shape).width
    return list(walk(Fragment.get(dut, None), ()))


def main(argv):
    name = argv[1] if len(argv) > 1 else "rx_256x4"
    width = int(argv[2]) if len(argv) > 2 else 64
    if len(argv) > 3:
        from metaroce.hdl.rx import Rx
        lay = blocks.get(name).make_model(width).lay
        dut = Rx(width, conns=lay.conns, paths=lay.paths, keys=lay.keys, streams=int(argv[3]))
    else:
        dut = blocks.get(name).make_component(width)
    total_bits = total_ebr = 0
    print(f"{name} at {width} bits (streams {dut.lay.streams})")
    print(f"{'memory':24} {'depth':>7} {'width':>6} {'Kbit':>8} {'EBR':>5}")
    for mem, depth, w in memories(dut):
        n = ebr(depth, w)
        total_bits += depth * w
        total_ebr += n
        print(f"{mem:24} {depth:7} {w:6} {depth * w / 1024:8.1f} {n:5}")
    print(f"{'total':24} {'':7} {'':6} {total_bits / 1024:8.1f} {total_ebr:5}  (ECP5-85: 208)")


if __name__ == "__main__":
    main(sys.argv)
