"""The reference setup from the literature: ConWeave's fabric, the published flow-size
distributions at real sizes, Poisson arrivals at a given load, and its place in ``--full``."""
import random
from pathlib import Path

import pytest

from fabric_sim import eval as ev
from fabric_sim.distributions import CDFS, mean_size, poisson_arrivals, sample_size

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("name", sorted(CDFS))
def test_published_cdfs_are_distributions(name):
    cdf = CDFS[name]
    assert cdf[0][1] == 0.0 and cdf[-1][1] == pytest.approx(1.0)
    assert all(x0 <= x1 and p0 <= p1 for (x0, p0), (x1, p1) in zip(cdf, cdf[1:]))


def test_sizes_follow_the_published_points():
    rng = random.Random(1)
    xs = sorted(sample_size(CDFS["alistorage"], rng) for _ in range(20000))
    # AliStorage2019: 69.21% of flows are at most 8 KB, 90.47% at most 32 KB
    assert sum(x <= 8000 for x in xs) / len(xs) == pytest.approx(0.6921, abs=0.015)
    assert sum(x <= 32000 for x in xs) / len(xs) == pytest.approx(0.9047, abs=0.01)
    assert mean_size(CDFS["alistorage"]) == pytest.approx(40870, rel=0.001)


def test_poisson_arrivals_offer_the_requested_load():
    hosts = [f"h{i}" for i in range(128)]
    window = 2000.0
    for load in (0.5, 0.8):
        arr = poisson_arrivals(hosts, "alistorage", load, window, seed=2)
        offered = sum(a.nbytes for a in arr) * 8 / (window * 1e3) / (len(hosts) * 100.0)
        assert offered == pytest.approx(load, rel=0.1)
        assert all(a.src != a.dst and 0 <= a.start_us <= window for a in arr)
    # negative control: the arrivals depend on the load asked for
    assert len(poisson_arrivals(hosts, "alistorage", 0.8, window, 2)) > 1.4 * len(
        poisson_arrivals(hosts, "alistorage", 0.5, window, 2))


def test_conweave_fabric_is_eight_by_eight_with_128_hosts_two_to_one():
    from control_plane.model import load_fabric

    f = load_fabric(ROOT / "fabrics" / "conweave.yaml")
    leaves = [s for s in f.switches.values() if s.role == "leaf"]
    assert len(f.hosts) == 128 and len(leaves) == 8
    assert sum(1 for s in f.switches.values() if s.role == "spine") == 8
    for leaf in leaves:
        down = sum(h.capacity_gbps for h in f.hosts.values() if h.leaf == leaf.name)
        up = sum(p.capacity_gbps for p in leaf.ports.values() if p.peer_switch is not None)
        assert down == 1600 and down / up == 2


def test_full_matrix_runs_the_reference_setup_on_its_fabric_only():
    specs = ev.specs_for(ev.FULL)
    cw = [s for s in specs if s.fabric == "conweave"]
    assert {s.workload for s in cw} == {"alistorage-50", "alistorage-80", "fbhdp-50", "fbhdp-80"}
    assert {s.mode for s in cw} == set(ev.CONWEAVE_MODES)
    assert len(cw) == 4 * len(ev.CONWEAVE_MODES) * 30
    assert all(s.duration_us == ev.CONWEAVE_WINDOW_US for s in cw)
    assert not any(s.workload.startswith(("alistorage", "fbhdp")) for s in specs if s.fabric != "conweave")
    assert not any(s.fabric == "conweave" for s in ev.specs_for(ev.QUICK))


def test_conweave_section_puts_reductions_beside_the_published_ones():
    rows = [{"fabric": "conweave", "scenario": "fbhdp-50/sym", "mode": m, "seed": s,
             "fct_slowdown_mean": v, "fct_slowdown_p99": 2 * v}
            for m, v in (("ecmp", 4.0), ("stellar", 3.0)) for s in (1, 2)]
    text = "\n".join(ev.conweave_section(rows))
    assert "42.3%" in text and "66.8%" in text
    assert "| fbhdp-50/sym | stellar | 2 | 3.00 | +25.0% | 6.00 | +25.0% |" in text
    assert "| fbhdp-50/sym | ecmp | 2 | 4.00 | +0.0% |" in text
