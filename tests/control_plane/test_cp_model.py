"""The example fabrics load into the model they describe; the generator output is current."""
from __future__ import annotations

import ipaddress
import subprocess
import sys
from pathlib import Path

import pytest

from control_plane.model import load_fabric

FABRICS = Path(__file__).resolve().parents[2] / "fabrics"


@pytest.mark.parametrize("name,spines,leaves,hosts,jobs,tenants", [
    ("lab", 2, 4, 16, 2, 2),
    ("pod", 4, 8, 64, 4, 1),
    ("cluster512", 8, 32, 512, 4, 2),
])
def test_example_fabrics_load(name: str, spines: int, leaves: int, hosts: int, jobs: int, tenants: int) -> None:
    fabric = load_fabric(FABRICS / f"{name}.yaml")
    assert fabric.name == name
    assert (len(fabric.spines), len(fabric.leaves)) == (spines, leaves)
    assert len(fabric.hosts) == hosts and len(fabric.jobs) == jobs and len(fabric.tenants) == tenants
    assert len(fabric.links) == spines * leaves  # full mesh, one link per leaf-spine pair
    ips = [h.ip for h in fabric.hosts.values()]
    macs = [h.mac for h in fabric.hosts.values()] + [s.mac for s in fabric.switches.values()]
    assert len(set(ips)) == len(ips) and len(set(macs)) == len(macs)
    for host in fabric.hosts.values():
        leaf = fabric.switches[host.leaf]
        assert leaf.role == "leaf" and host.ip in leaf.subnet
        assert leaf.ports[host.port].host == host.name
        assert host.tenant is not None  # every example GPU belongs to a tenant
    for job in fabric.jobs.values():
        if job.tenant:
            assert all(fabric.hosts[h].tenant == job.tenant for h in job.hosts)


def test_lab_details() -> None:
    lab = load_fabric(FABRICS / "lab.yaml")
    leaf1 = lab.switches["leaf1"]
    assert leaf1.subnet == ipaddress.IPv4Network("10.0.1.0/24")
    assert [(p.number, p.peer_switch, p.peer_port) for p in leaf1.uplinks] == [(9, "spine1", 1), (10, "spine2", 1)]
    assert [p.host for p in leaf1.host_ports] == ["l1g1", "l1g2", "l1g3", "l1g4"]
    link = lab.link("leaf3", "spine2")
    assert (link.leaf_port, link.spine_port, link.capacity_gbps, link.delay_us) == (10, 3, 100.0, 1.0)
    assert lab.hosts["l2g3"].tenant == "batch" and lab.hosts["l2g1"].tenant == "llm"
    assert lab.jobs["moe"].collective == "AlltoAll" and lab.jobs["dense"].collective == "AllReduce"
    classes = {c.name: c for c in lab.dataplane.classes}
    assert classes["critical"].dscp == (63,) and classes["critical"].elephant_queue == 5
    assert lab.switches["spine1"].mac == "02:53:00:00:00:65"  # derived from device id 101
    assert lab.hosts["l1g1"].delay_us == 0.5 and leaf1.ports[1].delay_us == 0.5  # defaults.host_link


def test_generated_fabrics_are_current() -> None:
    """pod.yaml and cluster512.yaml are exactly what gen_cluster.py writes (nobody hand-edited)."""
    done = subprocess.run([sys.executable, str(FABRICS / "gen_cluster.py"), "--check"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_generator_check_notices_a_stale_file(tmp_path: Path) -> None:
    """Negative control for the test above."""
    subprocess.run([sys.executable, str(FABRICS / "gen_cluster.py"), "--out-dir", str(tmp_path)], check=True,
                   capture_output=True)
    (tmp_path / "pod.yaml").write_text((tmp_path / "pod.yaml").read_text() + "# edited\n")
    done = subprocess.run([sys.executable, str(FABRICS / "gen_cluster.py"), "--check", "--out-dir", str(tmp_path)],
                          capture_output=True, text=True)
    assert done.returncode == 1 and "pod.yaml" in done.stderr
