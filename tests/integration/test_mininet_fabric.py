"""The lab fabric as a Mininet network of `p4sim run` processes on real interfaces (root only).

Skipped, with the reason printed, where Mininet cannot run: not root, Debian's mininet missing,
or no ping.  CI runs as root and installs both, so there it runs."""
import os
import re
import shutil
from pathlib import Path

import pytest

DEBIAN_MININET = Path("/usr/lib/python3/dist-packages/mininet")

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="Mininet needs root"),
    pytest.mark.skipif(not DEBIAN_MININET.is_dir(), reason="Debian's mininet package is not installed"),
    pytest.mark.skipif(shutil.which("ping") is None, reason="no ping (iputils-ping) on this machine"),
]


@pytest.fixture(scope="module")
def network(lab_fabric_full, stellar_files, tmp_path_factory):
    from bmv2_env.mininet_fabric import build_network, push

    net = build_network(lab_fabric_full, "p4sim", log_dir=tmp_path_factory.mktemp("mininet"))
    try:
        result = push(lab_fabric_full, stellar_files)
        assert result.ok, result.results
        yield net
    finally:
        net.stop()


def ping(net, src, dst_ip):
    out = net.get(src).cmd(f"ping -c 3 -W 2 {dst_ip}")
    sent, received = map(int, re.search(r"(\d+) packets transmitted, (\d+) received", out).groups())
    ttls = [int(t) for t in re.findall(r"ttl=(\d+)", out)]
    return sent, received, ttls


def test_hosts_on_different_leaves_reach_each_other_through_three_stellar_hops(network):
    sent, received, ttls = ping(network, "l1g1", "10.0.2.1")
    assert sent == received == 3
    assert set(ttls) == {64 - 3}  # leaf, spine and leaf each decrement the TTL


def test_hosts_on_one_leaf_take_one_hop(network):
    sent, received, ttls = ping(network, "l3g1", "10.0.3.2")
    assert sent == received == 3 and set(ttls) == {64 - 1}


def test_an_address_with_no_route_gets_no_answer(network):
    # negative control: 10.9.9.9 is in no leaf subnet, so routing.lpm misses and drops
    sent, received, _ = ping(network, "l1g1", "10.9.9.9")
    assert sent == 3 and received == 0
