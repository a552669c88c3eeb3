"""The architecture registry's hooks the code generator asks (p4sim.runtime.archs)."""
from __future__ import annotations

import dataclasses
import re
import sys
from pathlib import Path

import p4sim
from p4sim.runtime import archs

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tna"))
import tnakit  # noqa: E402

OPTIONAL = ",\n           inout egress_intrinsic_metadata_for_output_port_t eg_oport_md"


def classes(path: Path) -> set[str]:
    """The struct/header classes of the generated code of the template whose egress control
    leaves out its last (@optional) parameter."""
    src = tnakit.source()
    assert OPTIONAL in src
    path.write_text(src.replace(OPTIONAL, ""))
    prog = p4sim.compile(str(path))
    return {m.group(1) for m in re.finditer(r"^class C\d+_(\w+)", prog.generated_source, re.M)}


def test_builds_intrinsic_types_makes_a_class_for_every_intrinsic_struct(tmp_path):
    """TNA's switch builds every intrinsic struct, so each has a class whether a block names
    it or not; negative control: the hook off, a struct no block names has none."""
    unused = "egress_intrinsic_metadata_for_output_port_t"
    assert archs.get("tna").builds_intrinsic_types and not archs.get("v1model").builds_intrinsic_types
    assert unused in classes(tmp_path / "on.p4")
    tna = archs.get("tna")
    archs.register(dataclasses.replace(tna, builds_intrinsic_types=False))
    try:
        off = classes(tmp_path / "off.p4")
    finally:
        archs.register(tna)
    assert unused not in off and "egress_intrinsic_metadata_t" in off
