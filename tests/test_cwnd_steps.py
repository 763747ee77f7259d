"""The congestion window block's arithmetic steps outside its FSM (docs/spec/hw-cwnd.md section
8.1, MR-CW-116/117): no named step of ``Cwnd``'s adds, compares and products is assigned in a
process of its RTLIL (a switch on the state), in every form of the block; the negative control
names a step inside an FSM state and finds it there. The block's values are its locksteps'
(tests/test_cwnd_*.py)."""
import re

import pytest
from amaranth.back import rtlil
from amaranth.hdl import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from metaroce.hdl.cwnd import Cwnd, _CwArith, _Unconditional

#: steps of MR-CW-032's trees (ACC's W against the MTU, PROD's can, VWIN's keep, DEBT's take)
STEPS = ("w_eff_a", "w_eff_b", "w_eff_g", "can_sub_p", "debt_take_g1", "cwnd3_sub")


def assigned_in_processes(text):
    """The wires a process of ``text`` (RTLIL) assigns: Amaranth writes a conditional
    assignment (under a state or an ``If``) as a process with a switch."""
    names = set()
    for body in re.findall(r"^\s*process .*?^\s*end$", text, re.S | re.M):
        names.update(re.findall(r"^\s*assign \\([\w$.]+)", body, re.M))
    return names


def wires(text):
    return set(re.findall(r"^\s*wire .*\\([\w$.]+)$", text, re.M))


@pytest.mark.parametrize("kw", [{}, {"verdicts": True}, {"hints": True}],
                         ids=["first_slice", "verdicts", "hints"])
def test_steps_not_under_the_fsm(kw):
    """MR-CW-116: the named steps are wires of the block, none assigned by a process."""
    text = rtlil.convert(Cwnd(64, **kw))
    steps = {w for w in wires(text) if any(w.startswith(s) for s in STEPS)}
    assert len(steps) >= len(STEPS)
    assert not steps & assigned_in_processes(text)
    extra = {"v_wsum", "keep_max_a", "raise_sub_a"} if kw.get("verdicts") else set()
    assert extra <= wires(text) and not extra & assigned_in_processes(text)


class _Gated(wiring.Component):
    """MR-CW-117's negative control: a step named inside an FSM state with the module itself
    as the helper's module (the form before MR-CW-116)."""
    a: In(16)
    b: In(16)
    go: In(1)
    y: Out(16)

    def __init__(self, unconditional):
        self.unconditional = unconditional
        super().__init__()

    def elaborate(self, platform):
        m = Module()
        steps = _Unconditional() if self.unconditional else m
        A = _CwArith(steps, False)
        r = Signal(16)
        with m.FSM():
            with m.State("IDLE"):
                with m.If(self.go):
                    m.next = "ACC"
            with m.State("ACC"):
                m.d.sync += r.eq(A.max(self.a, self.b, "w_eff"))
                m.next = "IDLE"
        if self.unconditional:
            m.d.comb += steps.stmts
        m.d.comb += self.y.eq(r)
        return m


def test_negative_control_step_in_a_state():
    """MR-CW-117: the step named in a state is assigned by a process (the check sees it);
    through ``_Unconditional`` it is not."""
    gated = rtlil.convert(_Gated(False))
    assert {"w_eff_a", "w_eff_b"} <= assigned_in_processes(gated)
    free = rtlil.convert(_Gated(True))
    assert {"w_eff_a", "w_eff_b"} <= wires(free)
    assert not {"w_eff_a", "w_eff_b"} & assigned_in_processes(free)
