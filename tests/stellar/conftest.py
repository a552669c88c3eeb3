"""Fixtures: stellar.p4 compiled once per session by p4sim, and a freshly configured leaf per test.

The tests need p4sim's in-process API (``p4sim.compile`` and ``p4sim.Switch``).  If the installed
p4sim does not offer it, the whole directory is skipped with that reason printed, instead of
failing on an import error; a program that p4sim cannot compile is a failure, not a skip.
"""
from __future__ import annotations

import pytest

from testkit.leaf import STELLAR_P4, Leaf

try:
    import p4sim
    _API = all(hasattr(p4sim, name) for name in ("compile", "Switch"))
except ImportError:  # pragma: no cover - depends on the checkout
    p4sim = None
    _API = False


def pytest_collection_modifyitems(config, items):
    if _API:
        return
    skip = pytest.mark.skip(reason="p4sim in-process API (p4sim.compile / p4sim.Switch) not available")
    for item in items:
        if "tests/stellar/" in str(item.fspath).replace("\\", "/"):
            item.add_marker(skip)


@pytest.fixture(scope="session")
def stellar_program():
    return p4sim.compile(str(STELLAR_P4))


@pytest.fixture
def leaf(stellar_program) -> Leaf:
    return Leaf(p4sim, stellar_program)
