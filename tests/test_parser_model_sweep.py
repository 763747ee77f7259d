"""The RX parser's cycle model alone (models/parser.py), driven cycle by cycle in Python
with random idle cycles and backpressure, over many more frames than the Verilator runs:
every frame's verdict, fields, payload and bypass bytes against the codec and scapy, and
the counters (issue 4: "many more through the model"; MR-HW-010, MR-HW-020, MR-HW-030,
MR-HW-060, MR-HW-070, MR-WIRE-103, MR-WIRE-104).  Also checks that the checker itself catches wrong outputs.
"""
import copy

import pytest

from metaroce.models.wire import Reason
from metaroce.tb import parser_cases as pc
from metaroce.tb.parser import check_batch, check_counters, match_outputs
from metaroce.tb.parser_model_run import run_model


@pytest.mark.parametrize("width,n,seed", [(64, 1500, 11), (512, 2500, 12)])
def test_model_sweep(width, n, seed):
    cases = pc.all_cases(n, n, seed=seed)
    r = run_model(cases, width, idle=0.2, bp=0.35, seed=seed)
    problems, tally = check_batch(r)
    problems += check_counters(r, tally)
    assert not problems, "\n".join(problems[:20])
    # the case list really covers every outcome
    assert all(tally[int(x)] > 0 for x in Reason), tally


def test_checker_catches_wrong_outputs():
    cases = pc.valid_cases()[:40] + pc.drop_cases()[:10] + pc.bypass_cases()[:5] + pc.scapy_cases()[:5]
    r = run_model(cases, 64, seed=1)
    assert not check_batch(r)[0]

    def problems_after(edit):
        r2 = copy.deepcopy(r)
        edit(r2)
        r2.outcomes, r2.extra = match_outputs(r2.cases, r2.metas, r2.byps, r2.pays, r2.max_frame)
        p, tally = check_batch(r2)
        return p + check_counters(r2, tally)

    def bump_psn(x):
        x.metas[0]["bth"]["psn"] ^= 1

    def flip_payload(x):
        x.pays[3] = bytes([x.pays[3][0] ^ 1]) + x.pays[3][1:]

    def wrong_reason(x):
        i = next(i for i, m in enumerate(x.metas) if m["drop"])
        x.metas[i]["reason"] = "icrc" if x.metas[i]["reason"] != "icrc" else "length"

    def drop_bypass(x):
        x.byps.pop()

    def bad_counter(x):
        x.counters[0] += 1

    def scapy_field(x):
        x.metas[-1]["ip"]["src"] ^= 1

    for edit in (bump_psn, flip_payload, wrong_reason, drop_bypass, bad_counter, scapy_field):
        assert problems_after(edit), f"{edit.__name__} went unnoticed"
