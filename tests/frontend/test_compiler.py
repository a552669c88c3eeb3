"""compile_files outputs and device configs."""
import json

import pytest
from google.protobuf import json_format, text_format
from p4.config.v1 import p4info_pb2

from p4sim.compiler import compile_files, load_device_config
from p4sim.errors import CompileError
from tests.frontend.conftest import make_program


@pytest.fixture
def src(tmp_path):
    p = tmp_path / "prog.p4"
    p.write_text(make_program(ingress_locals="action a() { }\n"
                              "table t { key = { meta.x : exact; } actions = { a; } }",
                              ingress_apply="t.apply();"))
    return p


@pytest.mark.parametrize("ext", [".txtpb", ".txt", ".json", ".bin"])
def test_p4info_format_follows_extension(src, tmp_path, ext):
    out = tmp_path / f"p{ext}"
    compile_files(src, p4info_out=out)
    data = out.read_bytes()
    info = p4info_pb2.P4Info()
    if ext == ".json":
        json_format.Parse(data.decode(), info)
    elif ext == ".bin":
        info.ParseFromString(data)
    else:
        text_format.Parse(data.decode(), info)
    assert [t.preamble.name for t in info.tables] == ["I.t"]


def test_device_config_is_self_contained_and_reloads(src, tmp_path):
    out = tmp_path / "prog.json"
    compile_files(src, out_json=out)
    doc = json.loads(out.read_text())
    assert doc["format"] == "p4sim-program/1" and doc["source"] == "prog.p4"
    src.unlink()  # the config must not need the source any more
    prog = load_device_config(out.read_bytes())
    assert "t" in prog.blocks["ingress"].tables


def test_failed_compile_writes_nothing(tmp_path):
    bad = tmp_path / "bad.p4"
    bad.write_text(make_program(ingress_apply="meta.x = nope;"))
    out = tmp_path / "bad.json"
    with pytest.raises(CompileError):
        compile_files(bad, out_json=out, p4info_out=tmp_path / "bad.txtpb")
    assert not out.exists() and not (tmp_path / "bad.txtpb").exists()


@pytest.mark.parametrize("data,msg", [
    (b"\xff\xfe", "not p4sim JSON"),
    (b"[1, 2]", "expected 'p4sim-program/1'"),
    (json.dumps({"format": "bmv2"}).encode(), "format is 'bmv2'"),
    (json.dumps({"format": "p4sim-program/1"}).encode(), "no 'program'"),
])
def test_bad_device_configs(data, msg):
    with pytest.raises(CompileError, match=msg):
        load_device_config(data)


def test_device_config_with_broken_program_reports_position():
    doc = {"format": "p4sim-program/1", "source": "x.p4",
           "program": '#line 1 "x.p4"\nconst bit<8> A = ;\n'}
    with pytest.raises(CompileError) as ei:
        load_device_config(json.dumps(doc).encode())
    assert str(ei.value).startswith("x.p4:1:18: error: syntax error")
