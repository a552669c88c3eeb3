"""PFC on the packet-level fabric (SimFabric + p4sim's shared buffer + reacting NICs): under an
incast, the lossless mode loses nothing and pauses upstream ports and NICs; the lossy mode (the
negative control) drops at the dynamic threshold and never pauses."""
import pytest

from fabric_sim.experiment import RunSpec, run

INCAST = dict(nbytes=512 * 1024, dcqcn="off")  # 15 x 512 KB into one 100G port, no rate control


@pytest.fixture(scope="module")
def lossless():
    return run(RunSpec("incast", "sym", "ecmp", 3, buffer="lossless", **INCAST))


@pytest.fixture(scope="module")
def lossy():
    return run(RunSpec("incast", "sym", "ecmp", 3, buffer="lossy", **INCAST))


def test_lossless_incast_loses_nothing_and_pauses(lossless):
    assert lossless["incomplete"] == 0
    assert lossless["drops_tail"] == lossless["drops_buffer"] == lossless["drops_headroom"] == 0
    assert lossless["retransmits"] == lossless["timeouts"] == 0
    assert lossless["xoff_sent"] > 0 and lossless["pause_us_total"] > 0
    assert lossless["pause_us_by_port"]  # switch ports upstream of the hot spot were paused


def test_lossy_incast_drops_and_never_pauses(lossy):
    assert lossy["drops_buffer"] > 0 and lossy["drops_tail"] > 0
    assert lossy["xoff_sent"] == 0 and lossy["pause_us_total"] == 0
    assert lossy["retransmits"] > 0


def test_pause_time_is_reported_per_port(lossless):
    ports = lossless["pause_us_by_port"]
    assert all(":" in k and v > 0 for k, v in ports.items())
    assert lossless["pause_us_max_port"] >= max(ports.values())
