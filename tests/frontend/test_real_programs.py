"""The project's own P4 programs go through the front end and P4Info generation."""
import time
from pathlib import Path

import pytest

from p4sim.frontend import ir, load
from p4sim.p4info import build_p4info

ROOT = Path(__file__).resolve().parents[2]
L3 = ROOT / "p4src" / "examples" / "l3.p4"
STELLAR = ROOT / "p4src" / "v1model" / "stellar.p4"


@pytest.mark.skipif(not L3.exists(), reason="p4src/examples/l3.p4 not present")
def test_l3_example_compiles_with_tutorial_ids():
    prog = load(L3)
    info = build_p4info(prog)
    tables = {t.preamble.name: t for t in info.tables}
    actions = {a.preamble.name: a.preamble.id for a in info.actions}
    assert tables["MyIngress.ipv4_lpm"].preamble.id == 37375156
    assert actions["MyIngress.ipv4_forward"] == 28792405
    assert actions["MyIngress.drop"] == 25652968
    assert actions["NoAction"] == 21257015
    assert len(info.direct_counters) == 1


@pytest.mark.skipif(not STELLAR.exists(), reason="Stellar program not present")
def test_stellar_program_compiles_quickly():
    start = time.perf_counter()
    prog = load(STELLAR, include_dirs=[str(STELLAR.parent.parent / "include"),
                                       str(STELLAR.parent / "include")])
    info = build_p4info(prog)
    elapsed = time.perf_counter() - start
    assert set(prog.blocks) == set(ir.V1MODEL_ROLES)
    assert info.tables and info.actions and info.registers
    # every table and extern lives under one of the package's blocks
    blocks = {b.name for b in prog.blocks.values()}
    for t in info.tables:
        assert t.preamble.name.split(".")[0] in blocks
    assert elapsed < 10, f"compiling Stellar took {elapsed:.1f}s"
