"""The P4Runtime server fixtures of tests/p4rt (a server on a free loopback port, on the fake
switch or on the real p4sim core) for the robustness campaign."""
from tests.p4rt.conftest import harness, real_harness  # noqa: F401 - re-exported fixtures
