"""Fixtures: a P4Runtime server on a free loopback port, backed by the fake switch."""
from __future__ import annotations

import pytest

from testkit.p4rt_harness import Harness


@pytest.fixture
def harness():
    h = Harness()
    yield h
    h.close()


@pytest.fixture
def real_harness():
    """The same server in-process on the real p4sim core (push a real program yourself)."""
    h = Harness(real=True)
    yield h
    h.close()
