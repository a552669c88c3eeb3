"""P4_16 value semantics in the generated code: one test per rule."""
from irb import BOOL, assign, binop, bit, cast, if_, lit, sbit, slice_, un
from p4sim.frontend import ir
from rtkit import eval_fields


def op2(op, a, b, w=8, rw=None, signed=False):
    """r = a op b on w-bit fields (r is rw bits)."""
    rw = rw or w

    def body(f, blk):
        return [assign(f[2], binop(op, f[0], f[1]))]

    return eval_fields([w, w, rw], body, [a, b, 0], [signed, signed, signed])[2]


def test_add_wraps_around_at_width():
    assert op2("+", 250, 10) == 4


def test_sub_wraps_below_zero():
    assert op2("-", 3, 5) == 254


def test_mul_keeps_low_bits():
    assert op2("*", 20, 20) == 400 & 0xFF


def test_unsigned_div_and_mod():
    assert op2("/", 200, 7) == 28
    assert op2("%", 200, 7) == 4


def test_division_by_zero_gives_zero_instead_of_crashing():
    assert op2("/", 200, 0) == 0
    assert op2("%", 200, 0) == 0


def test_saturating_add_unsigned_clamps_at_max():
    assert op2("|+|", 250, 10) == 255
    assert op2("|+|", 20, 10) == 30  # no clamp when it fits


def test_saturating_sub_unsigned_clamps_at_zero():
    assert op2("|-|", 3, 10) == 0
    assert op2("|-|", 10, 3) == 7


def test_saturating_add_signed_clamps_to_int_range():
    assert op2("|+|", 100, 100, signed=True) == 127
    assert op2("|+|", (-100) & 0xFF, (-100) & 0xFF, signed=True) == 0x80  # -128


def test_saturating_sub_signed_clamps_to_int_range():
    assert op2("|-|", (-100) & 0xFF, 100, signed=True) == 0x80
    assert op2("|-|", 100, (-100) & 0xFF, signed=True) == 127


def test_shift_left_by_runtime_amount():
    assert op2("<<", 0b1011, 3) == 0b1011000
    assert op2("<<", 0xFF, 4) == 0xF0


def test_shift_left_by_width_or_more_gives_zero():
    assert op2("<<", 0xFF, 8) == 0
    assert op2("<<", 0xFF, 255) == 0


def test_shift_left_by_huge_runtime_amount_gives_zero():
    # a 32-bit shift amount of 2**32-1 must neither hang nor allocate a giant int
    def body(f, blk):
        return [assign(f[2], binop("<<", f[0], f[1]))]

    assert eval_fields([32, 32, 32], body, [0xFFFFFFFF, 0xFFFFFFFF, 0])[2] == 0


def test_shift_right_unsigned_past_width_gives_zero():
    assert op2(">>", 0xF0, 4) == 0x0F
    assert op2(">>", 0xF0, 200) == 0


def test_shift_right_signed_fills_with_sign_bit():
    assert op2(">>", (-16) & 0xFF, 2, signed=True) == (-4) & 0xFF
    assert op2(">>", (-16) & 0xFF, 100, signed=True) == 0xFF  # all sign bits
    assert op2(">>", 16, 100, signed=True) == 0


def cmp(op, a, b, signed):
    def body(f, blk):
        return [if_(binop(op, f[0], f[1]), assign(f[2], lit(1, 8)), assign(f[2], lit(2, 8)))]

    return eval_fields([8, 8, 8], body, [a, b, 0], [signed, signed, False])[2] == 1


def test_signed_comparison_uses_twos_complement():
    assert cmp("<", 0xFF, 1, signed=True)  # -1 < 1
    assert not cmp("<", 0xFF, 1, signed=False)  # 255 < 1 is false
    assert cmp(">=", 0x80, 0x80, signed=True)
    assert cmp(">", 1, 0x80, signed=True)  # 1 > -128


def test_equality_and_inequality():
    assert cmp("==", 7, 7, False) and not cmp("==", 7, 8, False)
    assert cmp("!=", 7, 8, False)


def test_bitwise_and_or_xor_and_complement():
    assert op2("&", 0b1100, 0b1010) == 0b1000
    assert op2("|", 0b1100, 0b1010) == 0b1110
    assert op2("^", 0b1100, 0b1010) == 0b0110

    def body(f, blk):
        return [assign(f[1], un("~", f[0])), assign(f[2], un("-", f[0]))]

    assert eval_fields([8, 8, 8], body, [5, 0, 0])[1:] == [0xFA, 0xFB]


def test_slice_reads_the_selected_bits():
    def body(f, blk):
        return [assign(f[1], slice_(f[0], 11, 4))]

    assert eval_fields([16, 8], body, [0xABCD, 0])[1] == 0xBC


def test_slice_assignment_writes_only_those_bits():
    def body(f, blk):
        return [assign(slice_(f[0], 11, 4), f[1])]

    assert eval_fields([16, 8], body, [0xABCD, 0x12])[0] == 0xA12D


def test_concat_puts_left_operand_in_high_bits():
    def body(f, blk):
        return [assign(f[2], binop("++", f[0], f[1]))]

    assert eval_fields([4, 8, 12], body, [0xA, 0xBC, 0])[2] == 0xABC


def test_cast_to_narrower_truncates():
    def body(f, blk):
        return [assign(f[1], cast(bit(8), f[0]))]

    assert eval_fields([16, 8], body, [0x1234, 0])[1] == 0x34


def test_cast_signed_to_wider_sign_extends():
    def body(f, blk):
        return [assign(f[1], cast(bit(16), cast(sbit(16), f[0])))]

    assert eval_fields([8, 16], body, [0xF0, 0], [True, False])[1] == 0xFFF0


def test_cast_unsigned_to_wider_zero_extends():
    def body(f, blk):
        return [assign(f[1], cast(bit(16), f[0]))]

    assert eval_fields([8, 16], body, [0xF0, 0])[1] == 0x00F0


def test_cast_between_bool_and_bit1():
    def body(f, blk):
        b = binop("==", f[0], lit(3, 8))
        return [assign(f[1], cast(bit(1), b)), assign(f[2], cast(bit(1), cast(BOOL, f[1])))]

    assert eval_fields([8, 1, 1], body, [3, 0, 0])[1:] == [1, 1]
    assert eval_fields([8, 1, 1], body, [4, 0, 0])[1:] == [0, 0]


def test_conditional_operator_picks_a_branch():
    def body(f, blk):
        return [assign(f[2], ir.Mux(bit(8), None, binop(">", f[0], f[1]), f[0], f[1]))]

    assert eval_fields([8, 8, 8], body, [9, 4, 0])[2] == 9
    assert eval_fields([8, 8, 8], body, [2, 4, 0])[2] == 4


def test_literal_wider_than_type_is_masked():
    def body(f, blk):
        return [assign(f[0], ir.Literal(bit(8), None, 0x1FF))]

    assert eval_fields([8], body, [0])[0] == 0xFF
