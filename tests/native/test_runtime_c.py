"""The C runtime's hash and checksum algorithms give p4sim.runtime.hashing's results (BMv2's)
on bytes of every length, including odd lengths and inputs longer than 8 bytes (identity)."""
from __future__ import annotations

import random

import pytest

from p4sim.native import load_native
from p4sim.native.cgen import HASH_ORDER
from p4sim.runtime import hashing
from testkit.native_workloads import L3_P4, program


@pytest.fixture(scope="module")
def lib():
    native = load_native(program(str(L3_P4)))
    assert native is not None
    return native.mod.lib


@pytest.mark.parametrize("algo", HASH_ORDER)
def test_hashes_match_the_reference(lib, algo):
    rnd = random.Random(algo)
    ref = hashing.ALGORITHMS[algo]
    for n in list(range(0, 20)) + [64, 65, 1500]:
        for _ in range(5):
            data = bytes(rnd.getrandbits(8) for _ in range(n))
            assert lib.p4n_hash_bytes(HASH_ORDER.index(algo), data, n) == ref(data), (algo, data.hex())


def test_catalogue_check_values(lib):
    """The published check values of the catalogue algorithms (input "123456789")."""
    data = b"123456789"
    assert lib.p4n_hash_bytes(HASH_ORDER.index("crc16"), data, 9) == 0xBB3D
    assert lib.p4n_hash_bytes(HASH_ORDER.index("crc32"), data, 9) == 0xCBF43926


def test_a_wrong_algorithm_is_caught(lib):
    """Negative control: crc16 is not crc32's answer, so the comparison above can fail."""
    data = b"123456789"
    assert lib.p4n_hash_bytes(HASH_ORDER.index("crc16"), data, 9) != hashing.ALGORITHMS["crc32"](data)
