"""Preprocessing: built-in includes, defines, conditionals and positions."""
import pytest

from p4sim.errors import CompileError
from p4sim.frontend import load_text
from p4sim.frontend.preprocess import LineMap, preprocess
from tests.frontend.conftest import make_program


def test_builtin_includes_resolve_and_define_v1model_version(tmp_path):
    p = tmp_path / "v.p4"
    p.write_text("#include <core.p4>\n#include <v1model.p4>\n"
                 "#if V1MODEL_VERSION == 20180101\nconst bit<8> OLD = 1;\n#endif\n")
    text = preprocess(p)
    assert "OLD" in text and "extern register" in text


def test_defines_and_ifdef_select_code(tmp_path, compile_src):
    src = make_program(decls="#ifdef WIDE\nconst bit<8> K = WIDTH;\n#else\nconst bit<8> K = 1;\n"
                             "#endif\n", ingress_apply="meta.x = K;")
    prog = compile_src(src, defines={"WIDE": None, "WIDTH": "42"})
    assert prog.blocks["ingress"].apply.stmts[0].rhs.value == 42
    prog = compile_src(src)
    assert prog.blocks["ingress"].apply.stmts[0].rhs.value == 1
    prog = compile_src(src, defines=["WIDE", "WIDTH=7"])
    assert prog.blocks["ingress"].apply.stmts[0].rhs.value == 7


def test_include_dirs(tmp_path, compile_src):
    inc = tmp_path / "inc"
    inc.mkdir()
    (inc / "consts.p4").write_text("const bit<8> FROM_INC = 9;\n")
    src = make_program(decls="#include <consts.p4>\n", ingress_apply="meta.x = FROM_INC;")
    prog = compile_src(src, include_dirs=[str(inc)])
    assert prog.blocks["ingress"].apply.stmts[0].rhs.value == 9


def test_missing_include_is_a_compile_error_with_position(tmp_path):
    p = tmp_path / "m.p4"
    p.write_text("#include <core.p4>\n  #include \"nothere.p4\"\n")
    with pytest.raises(CompileError) as ei:
        preprocess(p)
    e = ei.value
    assert "nothere.p4" in e.message
    assert e.pos.file.endswith("m.p4") and e.pos.line == 2 and e.pos.col == 13


def test_error_directive(tmp_path):
    p = tmp_path / "e.p4"
    p.write_text("#error stop here\n")
    with pytest.raises(CompileError, match="#error stop here"):
        preprocess(p)


def test_columns_survive_comments_and_macros(tmp_path, compile_src):
    src = make_program(decls="/* c */ const bit<8> Z = 1 + true;\n")
    with pytest.raises(CompileError) as ei:
        compile_src(src)
    assert ei.value.pos.col == 26  # the `1`, counted in the original line


def test_line_map_reads_gcc_style_markers():
    text = '# 10 "a.p4"\nx\n# 3 "b.p4" 1\ny\nz\n'
    lm = LineMap(text, "main.p4")
    assert lm.pos(2, 5).file == "a.p4" and lm.pos(2, 5).line == 10
    assert lm.pos(5, 1).file == "b.p4" and lm.pos(5, 1).line == 4


def test_load_text_of_preprocessed_output(tmp_path):
    p = tmp_path / "x.p4"
    p.write_text(make_program())
    prog = load_text(preprocess(p), "x.p4")
    assert prog.source == "x.p4" and "ingress" in prog.blocks


def test_predefined_macros_are_those_of_p4c_bm2_ss(tmp_path):
    # core.p4 guards with _CORE_P4_, v1model.p4 with _V1_MODEL_P4_ (p4c's p4include), and
    # p4c-bm2-ss predefines __TARGET_BMV2__; p4c defines no __p4c__ macro.
    p = tmp_path / "m.p4"
    p.write_text("#include <core.p4>\n#include <v1model.p4>\n"
                 "#ifdef _CORE_P4_\nconst bit<8> CORE = 1;\n#endif\n"
                 "#ifdef _V1_MODEL_P4_\nconst bit<8> V1 = 1;\n#endif\n"
                 "#ifdef __TARGET_BMV2__\nconst bit<8> BMV2 = 1;\n#endif\n"
                 "#ifdef __p4c__\nconst bit<8> P4C = 1;\n#endif\n")
    text = preprocess(p)
    assert "CORE = 1" in text and "V1 = 1" in text and "BMV2 = 1" in text
    assert "P4C = 1" not in text
    assert "__v1model_version" in text
    # negative control: without the target's predefined names the guard is off
    assert "BMV2 = 1" not in preprocess(p, predefined=())
