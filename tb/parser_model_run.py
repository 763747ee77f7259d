"""Drive the RX parser's cycle model alone, in pure Python (no simulator): the same case
list and the same checks as the Verilator testbench (tb/parser.py), many more frames.

:func:`run_model` plays the AXI4-Stream source (random idle cycles between beats, valid held
until accepted), the sinks and the meta ready (random backpressure) and the counter reads,
cycle by cycle, through ``ParserModel.step``; :func:`metaroce.tb.parser.check_batch`
then checks every frame against the codec / scapy and the counters.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field

from .streams import to_beats


@dataclass
class ModelRun:
    max_frame: int
    cases: list
    metas: list = field(default_factory=list)
    byps: list = field(default_factory=list)
    pays: list = field(default_factory=list)
    counters: list | None = None
    cycles: int = 0
    accept_log: list = field(default_factory=list)
    outcomes: list = field(default_factory=list)
    extra: tuple = (0, 0, 0)

    @property
    def run(self):  # check_batch reads batch.run.max_frame
        return self


def run_model(cases, width: int, *, idle: float = 0.0, bp: float = 0.0, seed: int = 1,
              timeout_per_frame: int = 4000) -> ModelRun:
    from metaroce.models.parser import ParserModel

    from .parser import N_COUNTERS, match_outputs
    rng = random.Random(seed)
    model = ParserModel(width)
    nb = width // 8
    beats = []
    for case in cases:
        bs = to_beats(case.data, width)
        for i, (d, k, last) in enumerate(bs):
            beats.append((d, k, last, int(case.mac_error and last)))
    res = ModelRun(getattr(model, "max_frame", 9216), list(cases))
    inp = {n: 0 for n in model.port_names()["inputs"]}
    inp["rst"] = 1
    model.step(inp)                     # one reset cycle
    inp["rst"] = 0
    bi = 0
    presenting = False
    pay_buf = bytearray()
    byp_buf = bytearray()
    frames_out = 0
    n = len(cases)
    limit = timeout_per_frame * max(1, n) + 4 * sum(len(c.data) for c in cases)
    cycle = 0
    while True:
        # inputs for this cycle (the drivers' choices, as after a rising edge)
        if not presenting and bi < len(beats) and not (idle and rng.random() < idle):
            presenting = True
        if presenting:
            d, k, last, user = beats[bi]
            inp.update({"s_axis__tdata": d, "s_axis__tkeep": k, "s_axis__tvalid": 1,
                        "s_axis__tlast": last, "s_axis__tuser": user})
        else:
            inp.update({"s_axis__tdata": 0, "s_axis__tkeep": 0, "s_axis__tvalid": 0,
                        "s_axis__tlast": 0, "s_axis__tuser": 0})
        for r in ("m_meta__ready", "m_payload__tready", "m_bypass__tready"):
            inp[r] = int(not (bp and rng.random() < bp))
        inp["reg_addr"] = rng.randrange(16)
        out = model.step(inp)
        if presenting and out["s_axis__tready"]:
            res.accept_log.append((cycle, beats[bi][2]))
            bi += 1
            presenting = False
        if out["m_meta__valid"] and inp["m_meta__ready"]:
            res.metas.append(model.meta_to_dict(out["m_meta__data"]))
            frames_out += 1
        for prefix, buf, lst in (("m_payload", pay_buf, res.pays), ("m_bypass", byp_buf, res.byps)):
            if out[f"{prefix}__tvalid"] and inp[f"{prefix}__tready"]:
                raw = out[f"{prefix}__tdata"].to_bytes(nb, "little")
                keep = out[f"{prefix}__tkeep"]
                buf += bytes(raw[i] for i in range(nb) if keep >> i & 1)
                if out[f"{prefix}__tlast"]:
                    lst.append(bytes(buf))
                    buf.clear()
                    if prefix == "m_bypass":
                        frames_out += 1
        cycle += 1
        if bi >= len(beats) and frames_out >= n and len(res.pays) >= sum(
                1 for m in res.metas if not m["drop"] and m["payload_len"]):
            break
        if cycle > limit:
            raise TimeoutError(f"model: {frames_out} of {n} frames out after {cycle} cycles")
    # read every counter: reg_data follows reg_addr one cycle later
    inp.update({"s_axis__tvalid": 0, "m_meta__ready": 1, "m_payload__tready": 1, "m_bypass__tready": 1})
    res.counters = []
    for i in range(N_COUNTERS):
        inp["reg_addr"] = i
        model.step(inp)
        res.counters.append(model.step(inp)["reg_data"])
    res.cycles = cycle
    res.outcomes, res.extra = match_outputs(res.cases, res.metas, res.byps, res.pays, res.max_frame)
    return res
