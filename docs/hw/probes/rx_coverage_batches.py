"""The batches of ``metaroce coverage rx_256x4`` (tb/rx.py ``rx_coverage``) on the RX cycle model
alone, each batch checked by ``rx_cases.check`` against the packet-level expectation.

A problem it found (2026-12-01, fixed the same day): the batches after the first pair run on a
model whose previous setup was torn down through ``s_cfg`` and a new setup reopened QPs; the
cycle model and the RTL (0 lockstep mismatches between them) counted chunks of the new setup's
messages as duplicates and completed fewer messages than the expectation, which starts every
batch from a fresh engine. Both were right by the spec: a stream is opened by its table-4 write
(MR-RX-086), and the receive and READ rows by theirs (MR-RX-101, MR-RX-110); ``Setup.teardown``
closed connections and keys but did not put the streams' rows back. It now does. Expected
output: every line "ok".

    .venv/bin/python docs/hw/probes/rx_coverage_batches.py
"""
from metaroce.models import rx_cases as rc
from metaroce.models.rx import SMALL, RxCycleModel


def main(width=64, seed=1, n_random=150):
    conns, paths, keys, streams = (SMALL[k] for k in ("conns", "paths", "keys", "streams"))
    model = RxCycleModel(width, conns, paths, keys, streams=streams)
    batches = rc.Batches(width)
    for k, shape in enumerate(("none", "idle", "bp", "both")):
        p_idle, p_bp = rc.SHAPES[shape]
        s = rc.Setup(conns, paths, keys, streams=streams, seed=seed * 100 + k)
        s2, tr = rc.endpoint_traffic(conns, paths, keys, streams=streams, nbytes=8192, loss=0.05, reorder=0.2,
                                     dup=0.05, seed=seed * 100 + k, hostile=10, imm=0.5, sends=0.4, reads=0.3,
                                     recv_delay=3e-5)
        for which, (setup, cases) in (("suite", (s, rc.coverage_suite(s, n_random))), ("endpoint", (s2, tr.items))):
            drv = batches.run(setup, cases, model=model, seed=seed * 1000 + k, p_idle=p_idle, p_bp=p_bp)
            try:
                rc.check(drv.items, drv.res, conns, paths, keys, streams, place_base=drv.place_base)
                print(shape, which, "ok")
            except AssertionError as e:
                print(shape, which, "problem:", str(e).splitlines()[0][:240])


if __name__ == "__main__":
    main()
