"""The real compiler accepts our programs, and p4sim's P4Info equals p4c's.

Runs only where `p4c-bm2-ss` is installed (on PATH, in /opt/p4c/bin or /opt/p4tools/bin, see /work/notes/P4C.md on
the build machine); elsewhere the tests are skipped with that reason.  Every P4 file must be valid
for p4c, and controllers must work unchanged against either target, so both checks matter.
"""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from google.protobuf import text_format
from p4.config.v1 import p4info_pb2

from testkit.leaf import REPO

P4C = shutil.which("p4c-bm2-ss") or next(
    (p for p in ("/opt/p4c/bin/p4c-bm2-ss", "/opt/p4tools/bin/p4c-bm2-ss") if Path(p).is_file()), None)
PROGRAMS = [REPO / "p4src" / "v1model" / "stellar.p4", REPO / "p4src" / "baselines" / "lb.p4",
            REPO / "p4src" / "examples" / "l3.p4", REPO / "ptf_tests" / "p4" / "ptf_basic.p4"]

pytestmark = pytest.mark.skipif(P4C is None, reason="p4c-bm2-ss (real p4c) is not installed here")


def _p4c(program: Path, out: Path) -> p4info_pb2.P4Info:
    info = out / f"{program.stem}.p4info.txtpb"
    proc = subprocess.run([P4C, "--arch", "v1model", "-I", str(REPO / "p4src"),
                           "-o", str(out / f"{program.stem}.json"), "--p4runtime-files", str(info),
                           str(program)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    warnings = [line for line in proc.stderr.splitlines()
                if "warning" in line.lower() and "unused" not in line.lower()]
    assert not warnings, "\n".join(warnings)
    return text_format.Parse(info.read_text(), p4info_pb2.P4Info())


def _entities(info) -> dict[tuple[str, str], tuple]:
    out: dict[tuple[str, str], tuple] = {}
    for t in info.tables:
        out["table", t.preamble.name] = (
            t.preamble.id, t.size, [a.id for a in t.action_refs],
            [(m.id, m.name, m.bitwidth, m.match_type) for m in t.match_fields])
    for a in info.actions:
        out["action", a.preamble.name] = (a.preamble.id, [(p.id, p.name, p.bitwidth) for p in a.params])
    for r in info.registers:
        out["register", r.preamble.name] = (r.preamble.id, r.size, r.type_spec.bitstring.bit.bitwidth)
    for c in info.counters:
        out["counter", c.preamble.name] = (c.preamble.id, c.size, c.spec.unit)
    for c in info.direct_counters:
        out["direct_counter", c.preamble.name] = (c.preamble.id, c.direct_table_id, c.spec.unit)
    for m in info.meters:
        out["meter", m.preamble.name] = (m.preamble.id, m.size, m.spec.unit)
    for d in info.digests:
        members = info.type_info.structs[d.preamble.name].members
        out["digest", d.preamble.name] = (d.preamble.id, [(m.name, m.type_spec.bitstring.bit.bitwidth)
                                                           for m in members])
    return out


@pytest.mark.parametrize("program", PROGRAMS, ids=[p.name for p in PROGRAMS])
def test_p4c_accepts_the_program_and_p4sim_p4info_matches(program, tmp_path):
    import p4sim
    real = _entities(_p4c(program, tmp_path))
    ours = _entities(p4sim.compile(str(program)).p4info)
    assert real, "p4c produced an empty P4Info"
    assert ours == real


# Every other v1model program in the repository (the simulator's own test programs): p4c must
# accept them too, or p4sim would be tested on P4 the real compiler refuses.
TEST_PROGRAMS = sorted(p for d in ("tests", "ptf_tests") for p in (REPO / d).rglob("*.p4")
                       if "#include <v1model.p4>" in p.read_text() and p not in PROGRAMS)


@pytest.mark.parametrize("program", TEST_PROGRAMS, ids=[p.name for p in TEST_PROGRAMS])
def test_p4c_accepts_every_v1model_test_program(program, tmp_path):
    proc = subprocess.run([P4C, "--arch", "v1model", "-o", str(tmp_path / "out.json"), str(program)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
