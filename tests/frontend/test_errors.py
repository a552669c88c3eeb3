"""Positions and messages of syntax errors, type errors and unsupported constructs."""
import pytest

from p4sim.errors import CompileError, Unsupported
from tests.frontend.conftest import HEADER, make_program

DECL_LINE = HEADER.count("\n") + 1  # decls snippets start on this line


def _err(compile_src, text, exc=CompileError):
    with pytest.raises(exc) as ei:
        compile_src(text)
    return ei.value


def test_syntax_error_position_and_text(compile_src):
    e = _err(compile_src, make_program(decls="const bit<8> X = 1 +;\n"))
    assert e.pos.line == DECL_LINE and e.pos.col == 21
    assert str(e) == f"{e.pos.file}:{DECL_LINE}:21: error: syntax error: unexpected ';'"


def test_syntax_error_at_end_of_input(compile_src):
    e = _err(compile_src, HEADER + "control C(inout m_t m) { apply {")
    assert "unexpected end of input" in e.message


def test_error_in_included_file_points_into_that_file(compile_src, tmp_path):
    (tmp_path / "inc.p4").write_text("// helper\n\nconst bit<8> BAD = 1 + true;\n")
    e = _err(compile_src, make_program(decls='#include "inc.p4"\n'))
    assert e.pos.file.endswith("inc.p4") and e.pos.line == 3
    assert "cannot use a value of type int where bool is expected" in e.message
    assert e.pos.col == 20


@pytest.mark.parametrize("decls,what,col", [
    ("action_selector(HashAlgorithm.crc16, 16, 8) sel;\n", "action_selector", 1),
    ("bit<8> ident<T>(in bit<8> x) { return x; }\n", "generic functions", 13),
    ("extern Foo { void bar(); }\n", "extern declarations in user programs", 1),
    ("struct G<T> { T f; }\n", "generic struct declarations", 9),
    ('@p4runtime_translation("p4.org/port", 32) type bit<9> pid_t;\n',
     "@p4runtime_translation", 1),
    ("struct A { bit<8>[4] a; }\n", "arrays of bit<8>", 12),
])
def test_unsupported_declarations(compile_src, decls, what, col):
    e = _err(compile_src, make_program(decls=decls), Unsupported)
    assert what in e.message and e.message.startswith("unsupported by p4sim: ")
    assert (e.pos.line, e.pos.col) == (DECL_LINE, col)


def test_unsupported_value_set(compile_src):
    src = make_program(parser_body="value_set<bit<16>>(4) vs;\n"
                                   "state start { transition accept; }")
    e = _err(compile_src, src, Unsupported)
    assert "value_set" in e.message and e.pos.col == 1


def test_unsupported_table_implementation(compile_src):
    src = make_program(ingress_locals="action a() { }\n"
                       "table t { key = { meta.x : exact; } actions = { a; }\n"
                       "  implementation = 3; }")
    e = _err(compile_src, src, Unsupported)
    assert "action profiles/selectors" in e.message and e.pos.col == 3


def test_unsupported_selector_match_kind(compile_src):
    src = make_program(ingress_locals="action a() { }\n"
                       "table t { key = { meta.x : selector; } actions = { a; } }")
    e = _err(compile_src, src, Unsupported)
    assert "selector match kind" in e.message


def test_unsupported_parser_instantiation_in_a_control(compile_src):
    src = make_program(decls="parser Sub(packet_in p) { state start { transition accept; } }\n",
                       ingress_locals="Sub() s;")
    e = _err(compile_src, src, Unsupported)
    assert "instantiating parser/control 'Sub'" in e.message


def test_const_entries_cannot_have_priorities(compile_src):
    # p4c (entryPriorities.cpp): "Table with 'const' entries cannot have priorities"
    src = make_program(ingress_locals="action a() { }\n"
                       "table t { key = { meta.x : ternary; } actions = { a; }\n"
                       "  const entries = { priority = 3 : 1 : a(); } }")
    e = _err(compile_src, src)
    assert "cannot give entries a priority" in e.message


def test_priorities_on_a_table_that_needs_none_are_an_error(compile_src):
    src = make_program(ingress_locals="action a() { }\n"
                       "table t { key = { meta.x : exact; } actions = { a; }\n"
                       "  entries = { priority = 3 : 1 : a(); } }")
    e = _err(compile_src, src)
    assert "do not use priorities" in e.message


def test_extract_with_a_size_needs_a_header_with_a_varbit(compile_src):
    # p4c: the two-argument extract is for headers with a varbit field, and only for them
    src = make_program(parser_body="state start { pkt.extract(hdr.h, 32); transition accept; }")
    e = _err(compile_src, src)
    assert "varbit" in e.message


def test_unsupported_v1model_field_list_forms(compile_src):
    e = _err(compile_src, make_program(ingress_apply="resubmit({ meta.x });"), Unsupported)
    assert "resubmit_preserving_field_list" in e.message


def test_typed_register_index_needs_newer_v1model(compile_src):
    e = _err(compile_src, make_program(decls="register<bit<8>, bit<4>>(16) r;\n"))
    assert "takes 1 type argument(s), not 2" in e.message


def test_missing_package_is_reported(compile_src):
    e = _err(compile_src, HEADER)
    assert "no package instance" in e.message


def test_wrong_block_kind_in_package(compile_src):
    src = make_program().replace("V1Switch(P(), VC(),", "V1Switch(VC(), VC(),")
    e = _err(compile_src, src)
    assert "must be a parser" in e.message


def test_duplicate_declaration(compile_src):
    e = _err(compile_src, make_program(ingress_locals="bit<8> a; bit<16> a;"))
    assert "'a' is already declared" in e.message


@pytest.mark.parametrize("decls,what", [
    ("struct T2 { tuple<bit<8>, bit<8>> t; }\n", "fields of type tuple<bit<8>, bit<8>>"),
    ("bit<8> f(in int x) { return 1; }\n", "parameters of type int"),
])
def test_unsupported_types_in_declarations(compile_src, decls, what):
    e = _err(compile_src, make_program(decls=decls), Unsupported)
    assert what in e.message and e.pos.line == DECL_LINE


def test_unsupported_tuple_variable_with_a_composite_element(compile_src):
    e = _err(compile_src, make_program(ingress_apply="tuple<h_t> t;"), Unsupported)
    assert "tuple variables" in e.message


def test_unsupported_abstract_instantiation(compile_src):
    e = _err(compile_src, make_program(
        decls="register<bit<8>>(1) r = { void run() { } };\n"), Unsupported)
    assert "abstract method implementations" in e.message and e.pos.line == DECL_LINE


def test_control_instantiated_in_a_parser_is_unsupported(compile_src):
    src = make_program(decls="control Sub(inout m_t m) { apply { } }\n",
                       parser_body="Sub() s;\nstate start { transition accept; }")
    e = _err(compile_src, src, Unsupported)
    assert "instantiating parser/control 'Sub' here" in e.message


def test_sub_control_in_parameter_is_read_only(compile_src):
    src = make_program(decls="control Sub(in m_t m) { apply { m.x = 2; } }\n",
                       ingress_locals="Sub() s;", ingress_apply="s.apply(meta);")
    e = _err(compile_src, src)
    assert "read-only parameter 'm'" in e.message


def test_compound_assignment_operator_with_a_space_is_a_syntax_error(compile_src):
    # p4c lexes '+=' as one token: 'x + = 1' does not parse there either
    _err(compile_src, make_program(ingress_apply="meta.x + = 1;"))
    compile_src(make_program(ingress_apply="meta.x += 1; meta.x >>= 1; meta.x |+|= 1;"))


def test_entry_annotations_go_after_the_action_as_in_p4c(compile_src):
    table = ("action a() { }\ntable t { key = { meta.x : ternary; } actions = { a; }\n"
             "  const entries = { %s } }")
    compile_src(make_program(ingress_locals=table % "1 : a() @priority(1);"))
    _err(compile_src, make_program(ingress_locals=table % "@priority(1) 1 : a();"))


@pytest.mark.parametrize("op", ["/", "%"])
def test_division_on_signed_values_is_an_error_as_in_p4c(compile_src, op):
    # p4c's unsBinaryArith: "Cannot operate on signed values" -- a P4 error, not a p4sim limit
    e = _err(compile_src, make_program(ingress_apply=f"meta.s = meta.s {op} 8s3;"))
    assert not isinstance(e, Unsupported) and "cannot operate on signed values" in e.message
    compile_src(make_program(ingress_apply=f"meta.x = meta.x {op} 4;"))  # bit<W> by 2^k: a shift/mask


@pytest.mark.parametrize("op", ["/", "%"])
def test_run_time_division_is_an_error_as_in_p4c(compile_src, op):
    # p4c-bm2-ss: "could not evaluate expression at compilation time" unless it folds the
    # expression or the divisor is a constant power of two (checked against p4c 1.2.5)
    e = _err(compile_src, make_program(ingress_apply=f"meta.x = meta.x {op} 3;"))
    assert not isinstance(e, Unsupported) and "could not evaluate expression at compilation time" in e.message
    assert e.pos.line is not None and e.pos.col is not None
    compile_src(make_program(ingress_apply=f"meta.x = 12 {op} 3;"))  # folded: fine
