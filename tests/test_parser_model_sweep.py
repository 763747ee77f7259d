"""The RX parser's cycle model alone (models/parser.py), driven cycle by cycle by the one
traffic driver (models/parser_cases.Driver) with random idle cycles, backpressure and tkeep
edge cases, over many more frames than the Verilator runs: every frame's verdict, fields,
payload and bypass bytes against the codec and scapy, and the counters read through the
registers (issue 4: "many more through the model"; MR-HW-003, MR-HW-010, MR-HW-020,
MR-HW-030, MR-HW-060, MR-HW-070, MR-WIRE-103, MR-WIRE-104).  Also checks that the one
checker catches wrong outputs.
"""
import copy
from dataclasses import replace

import pytest

from metaroce.models import parser_cases as pc
from metaroce.models.parser import pack_meta, unpack_meta
from metaroce.models.wire import Reason


@pytest.mark.parametrize("width,n,seed", [(64, 1500, 11), (512, 2500, 12)])
def test_model_sweep(width, n, seed):
    cases = pc.suite(n, n, seed=seed)
    res = pc.run_model(width, cases, seed=seed, p_idle=0.2, p_bp=0.35, check=False,
                       p_keep_noise=0.1, p_empty_last=0.3)
    problems, tally = pc.check(cases, res, width=width)
    assert not problems, "\n".join(problems[:20])
    # the case list really covers every outcome, and the tkeep edges were driven
    assert all(tally[int(x)] > 0 for x in Reason), tally
    assert sum(res["case_beats"]) > sum(-(-max(1, len(c.data)) // (width // 8)) for c in cases)


def _edit_meta(res, index, edit):
    d = unpack_meta(res["meta"][index])
    edit(d)
    res["meta"][index] = pack_meta(d)


def test_checker_catches_wrong_outputs():
    cases = (pc.valid_edge_cases()[:40] + pc.drop_edge_cases()[:10] + pc.bypass_edge_cases()[:5]
             + pc.scapy_cases()[:5])
    res = pc.run_model(64, cases, seed=1, check=False)
    assert not pc.check(cases, res, width=64)[0]

    def problems_after(edit, case_edit=None):
        r2 = copy.deepcopy(res)
        edit(r2)
        return pc.check(case_edit(cases) if case_edit else cases, r2, width=64)[0]

    def bump_psn(x):
        _edit_meta(x, 0, lambda d: d["bth"].update(psn=d["bth"]["psn"] ^ 1))

    def flip_payload(x):
        x["payload"][3] = bytes([x["payload"][3][0] ^ 1]) + x["payload"][3][1:]

    def wrong_reason(x):
        i = next(i for i, m in enumerate(x["meta"]) if unpack_meta(m)["drop"])
        _edit_meta(x, i, lambda d: d.update(reason=int(Reason.ICRC) if d["reason"] != Reason.ICRC
                                            else int(Reason.LENGTH)))

    def drop_bypass(x):
        x["bypass"].pop()

    def bad_counter(x):
        x["counters"][0] += 1

    def scapy_field(x):
        _edit_meta(x, -1, lambda d: d["ip"].update(src=d["ip"]["src"] ^ 1))

    for edit in (bump_psn, flip_payload, wrong_reason, drop_bypass, bad_counter, scapy_field):
        assert problems_after(edit), f"{edit.__name__} went unnoticed"

    # scapy's own values are checked apart from the codec: a wrong oracle is noticed
    def wrong_oracle(cs):
        last = cs[-1]
        oracle = copy.deepcopy(last.oracle)
        oracle["bth"]["dest_qp"] ^= 1
        return cs[:-1] + [replace(last, oracle=oracle)]
    found = problems_after(lambda x: None, wrong_oracle)
    assert found and all("scapy" in p for p in found), found
