"""P4_16 language rules through the real front end (tests/runtime/p4/lang.p4)."""
from pathlib import Path

import pytest

import p4sim

LANG = Path(__file__).parent / "p4" / "lang.p4"


@pytest.fixture(scope="module")
def sw():
    return p4sim.Switch(p4sim.compile(str(LANG)))


def run(sw, op, a=0, b=0, stack=b""):
    """Returns (r1, r2, r16, the emitted stack bytes).  The parser reads the stack when b != 0."""
    if b and not stack:
        stack = b"\x00"  # b also switches the stack parser on: give it its terminator
    sw.send(0, bytes([op, a, b or (1 if stack else 0), 0, 0, 0, 0]) + stack)
    [(_, out)] = sw.take_output()
    return out[3], out[4], int.from_bytes(out[5:7], "big"), out[7:]


def test_stack_push_front_shifts_elements_and_invalidates_the_new_slot(sw):
    # push_front(1) drops the last element; setValid + write fills slot 0
    assert run(sw, 1, stack=bytes([5, 6, 0]))[3] == bytes([0xAA, 5, 6])


def test_stack_pop_front_shifts_elements_down(sw):
    assert run(sw, 2, stack=bytes([5, 6, 0]))[3] == bytes([6, 0])


def test_function_returns_a_value_and_copies_out_its_out_parameter(sw):
    assert run(sw, 3, a=200, b=100)[:2] == ((300 & 0xFF), 1)
    assert run(sw, 3, a=20, b=10)[:2] == (30, 0)


def test_action_inout_argument_is_copied_back(sw):
    assert run(sw, 4)[0] == 2


def test_switch_on_a_value_with_shared_labels_and_default(sw):
    assert [run(sw, 5, a=x)[0] for x in (1, 2, 3, 4)] == [10, 23, 23, 99]


def test_header_assignment_copies_the_value(sw):
    assert run(sw, 6, stack=bytes([9, 0]))[:2] == (9, 5)


def test_header_equality_compares_validity_and_fields(sw):
    assert run(sw, 7, stack=bytes([4, 4, 0]))[0] == 1
    assert run(sw, 7, stack=bytes([4, 3, 0]))[0] == 0
    assert run(sw, 7, stack=bytes([4, 0]))[0] == 0  # s[1] valid (v=0) vs ... s[0] v=4


def test_signed_shift_right_keeps_the_sign(sw):
    assert run(sw, 8, a=0xF0)[:2] == (0xF8, 1)  # -16 >> 1 = -8
    assert run(sw, 8, a=0x10)[:2] == (0x08, 0)


def test_control_locals_are_reinitialised_on_every_apply(sw):
    assert run(sw, 9)[0] == 1
    assert run(sw, 9)[0] == 1


def test_return_in_apply_ends_the_control(sw):
    assert run(sw, 10)[0] == 1


def test_exit_in_an_action_ends_the_control(sw):
    assert run(sw, 16)[0] == 7


def test_stack_last_index_is_next_index_minus_one(sw):
    assert run(sw, 11, stack=bytes([1, 2, 0]))[0] == 2


def test_set_invalid_removes_a_stack_element_from_the_output(sw):
    assert run(sw, 12, stack=bytes([1, 2, 0]))[3] == bytes([1, 0])


def test_error_values_compare(sw):
    assert run(sw, 13)[0] == 1


def test_struct_assignment_copies_and_struct_equality_compares_all_fields(sw):
    r1, r2, r16, _ = run(sw, 14, stack=bytes([1, 0]))
    assert (r1, r2, r16) == (3, 0, 1)


def test_concatenation_of_two_fields(sw):
    assert run(sw, 15, a=0xAB, b=0xCD)[2] == 0xABCD


def test_top_level_register_is_shared_by_ingress_and_egress(sw):
    assert run(sw, 17, a=0x5A)[1] == 0x5A
    assert sw.register_read("shared", 2) == 0x5A
