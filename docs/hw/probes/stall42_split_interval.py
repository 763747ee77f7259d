"""The engine model's atomics loopback over seeds at a frame interval (issue 13, session 42),
optionally with the RX at another interval than the TX half (``RXI``: a configuration the engine
does not build, by replacing ``models.engine.EngineRxModel`` in this process only) and another
cycle budget than the driver's ``200,000 + 50 x bytes`` (``LIMIT``). Prints each seed's check or
the driver's error.

    .venv/bin/python -W ignore docs/hw/probes/stall42_split_interval.py INTERVAL N LOSS SEED...
    RXI=1 LIMIT=2000000 .venv/bin/python -W ignore docs/hw/probes/stall42_split_interval.py 8 16 0.15 2

Session 42: ``RXI=1 LIMIT=2000000 ... 8 16 0.15 2`` stops at 13 of 16 work requests with 79
frames out after 2,000,001 cycles, the same 79 as at 206,401: nothing is resent, a real stall
(two paths of connection 1 keep 8 bytes and one packet in flight in the scheduler, every queue
empty); with the engine's configuration (``RXI`` unset) seeds 1..12 complete at 15 % loss.
``VERB=write`` runs WRITEs instead of atomics. ``MEM_HEAD=0`` or ``1``: MR-TXS-419's output
queues off or on (default the engine's: on above interval 1 since stl43, MR-TXS-444).

Session 43 (stl43): the stall's cause was a second report of one packet (a timed-out record's
late ACK, MR-TXS-440); with the unit fixed seeds 1..12 complete at 15 % with ``RXI=1`` and
without, with ``MEM_HEAD`` 0 and 1 (docs/hw/tx-results.md, stl43). Session 44 (late44): the
late ACK reported flagged instead (MR-TXS-445/446): every run of seeds 1..12, RX at 8 and at 1,
the same to the field as with stl43's ``once`` (docs/hw/tx-results.md, late44).
"""
import os
import sys

import metaroce.models.engine as engine_models
from metaroce.models import cosim_engine as ce
from metaroce.models.cosim import run_loop

_rx_model = engine_models.EngineRxModel


def _rx_at(*args, **kw):
    if "RXI" in os.environ:
        kw["interval"] = int(os.environ["RXI"])
    return _rx_model(*args, **kw)


def main(argv):
    interval, n, loss = int(argv[0]), int(argv[1]), float(argv[2])
    engine_models.EngineRxModel = _rx_at
    for seed in [int(x) for x in argv[3:]]:
        drv, _, plan, _ = ce.loopback_run(64, 64, seed=seed, loss=loss,
                                          verb=os.environ.get("VERB", "atomic"), n_writes=n)
        mh = {"mem_head": os.environ["MEM_HEAD"] == "1"} if "MEM_HEAD" in os.environ else {}
        m = engine_models.EngineModel(64, interval=interval, **mh)
        if "LIMIT" in os.environ:
            drv.limit = int(os.environ["LIMIT"])
        try:
            run_loop(drv, m, m.busy)
            atomic = os.environ.get("VERB", "atomic") == "atomic"
            print(seed, "ok", ce.check_atomics(drv, plan) if atomic else f"{drv.cycle} cycles")
        except AssertionError as e:
            print(seed, "FAIL", str(e)[:300])
        sys.stdout.flush()


if __name__ == "__main__":
    main(sys.argv[1:])
