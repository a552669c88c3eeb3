"""P4_16 evaluation order, short-circuit and copy-in/copy-out (tests/runtime/p4/order.p4).

Each test is named after the rule it checks; the expected values are the P4_16 specification's
(§8 expressions left to right, §8.6/§8.7 short-circuit, §6.8 copy-in/copy-out), which is also
what BMv2 does after p4c's side-effect-ordering and copy-in/copy-out passes."""
from pathlib import Path

import pytest

import p4sim

ORDER = Path(__file__).parent / "p4" / "order.p4"


@pytest.fixture(scope="module")
def sw():
    return p4sim.Switch(p4sim.compile(str(ORDER)))


def run(sw, op: int, a: int = 0) -> tuple[int, int, int, int]:
    """r1..r4 of the output packet (the program always forwards to port 1)."""
    sw.send(0, bytes([op, a, 0, 0, 0, 0]))
    out = sw.take_output()
    assert len(out) == 1 and out[0][0] == 1, (out, sw.stats)
    return tuple(out[0][1][2:6])


def test_operands_are_evaluated_left_to_right_including_side_effects(sw):
    # a + bump(a): a is read (5) before bump changes it to 6; bump returns 0
    assert run(sw, 1, a=5)[:2] == (5, 6)


def test_lvalue_index_is_evaluated_before_the_right_hand_side(sw):
    # st[i].v = set_index(i) with i = 0: the write goes to st[0] although the call sets i = 1
    assert run(sw, 2)[:2] == (9, 0)


def test_call_arguments_are_evaluated_left_to_right(sw):
    assert run(sw, 3, a=5)[:2] == (5, 6)


def test_or_does_not_evaluate_its_right_operand_when_the_left_is_true(sw):
    assert run(sw, 4, a=0)[:3] == (0, 1, 0)
    # negative control: left false -> the right operand runs (once); `true || ...` never runs it
    assert run(sw, 4, a=5)[:3] == (6, 1, 6)


def test_and_does_not_evaluate_its_right_operand_when_the_left_is_false(sw):
    assert run(sw, 5, a=0)[:3] == (0, 0, 0)
    assert run(sw, 5, a=5)[:3] == (6, 1, 6)


def test_conditional_operator_evaluates_only_the_chosen_branch(sw):
    assert run(sw, 6, a=0)[:2] == (10, 10)
    assert run(sw, 6, a=5)[:2] == (4, 4)


def test_condition_with_a_call_is_evaluated_left_to_right_and_short_circuits(sw):
    assert run(sw, 11, a=0)[:2] == (1, 1)
    assert run(sw, 11, a=5)[:2] == (0, 5)


def test_headers_are_passed_by_value_copy_in_copy_out(sw):
    # x.r1 = 5 is copied out; the direct write hdr.c.r2 = 9 is overwritten by x's r2 (0);
    # reading hdr.c.r1 inside the action sees the caller's value (1), not x's 5
    assert run(sw, 7)[:3] == (5, 0, 1)


def test_exit_inside_an_action_still_copies_back_inout_scalar(sw):
    assert run(sw, 8)[0] == 42


def test_exit_inside_an_action_still_copies_back_inout_header(sw):
    assert run(sw, 9)[1] == 43


def test_self_assignment_of_a_struct_keeps_its_value(sw):
    # sm = sm must keep egress_spec (run() asserts the packet left on port 1)
    assert run(sw, 10)[:2] == (3, 4)


def test_function_with_only_a_header_out_parameter_returns_its_value(sw):
    assert run(sw, 12, a=0)[0] == 1
    assert run(sw, 12, a=1)[:2] == (1, 1)  # short-circuited: d untouched
