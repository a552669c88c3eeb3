"""Gray links in ``stellarctl stats`` and ``watch`` (issue 32, item 4): the controller names a link
that silently drops 1% of its frames, from the two ends' port counters and the data plane's
retransmission counter, on the lab fabric in p4sim (fabric_sim.demo.Lab: six switches serving
P4Runtime, the entries pushed, RoCE hosts with go-back-N) and on the virtual clock, with either
program (v1model, and TNA on p4sim's Tofino pipe).

Control: the same traffic without the loss names no link.  The pure functions of
control_plane.graylinks (path -> link on either program, thresholds) are checked beside.
"""
from __future__ import annotations

import io
import re
from pathlib import Path

import pytest

from control_plane import feedback
from control_plane.cli import main as stellarctl
from control_plane.graylinks import (MIN_FRAMES, GrayLink, format_gray_links, gray_links, path_losses,
                                     wire_losses)
from control_plane.model import load_fabric

ROOT = Path(__file__).resolve().parents[2]
LAB = ROOT / "fabrics" / "lab.yaml"
GRAY = {"leaf1:9 -> spine1:1", "spine1:1 -> leaf1:9"}    # the two directions of leaf1-spine1


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    return stellarctl(list(argv), out, err), out.getvalue(), err.getvalue()


@pytest.fixture(scope="module", params=["v1model", "tna"])
def arch(request) -> str:
    return request.param


@pytest.fixture(scope="module")
def files(arch, tmp_path_factory):
    pytest.importorskip("p4sim")
    from fabric_sim.demo import build_program

    return build_program(tmp_path_factory.mktemp(f"stellar_{arch}"), arch)


def _lab_after_traffic(files, tmp: Path, loss: float, arch: str = "v1model"):
    """The lab in Stellar's demo mode, leaf1-spine1 dropping ``loss`` of its frames both ways,
    after a permutation of 1 MB per host has run to completion; the lab YAML with its addresses."""
    from fabric_sim.demo import Lab
    from fabric_sim.rdma import RdmaNetwork
    from fabric_sim.workloads import hosts_of, permutation

    fabric = load_fabric(str(LAB))
    lab = Lab(fabric, files, "stellar", arch)
    if loss:
        lab.sim.gray_fail("leaf1", "spine1", loss)
    net = RdmaNetwork(lab.sim, lab.fabric)
    transfers = permutation(net, hosts_of(lab.fabric), 1 << 20, seed=1)
    net.start()
    lab.sim.run(until_us=200_000)
    assert all(t.done_us is not None for t in transfers)
    text = LAB.read_text()
    for name, sw in fabric.switches.items():
        text = text.replace(f"p4runtime: {sw.p4runtime}", f"p4runtime: {lab.addresses[name]}")
    path = tmp / "lab.yaml"
    path.write_text(text)
    return lab, path, sum(t.retransmits for t in net.transfers)


@pytest.fixture(scope="module")
def lossy(arch, files, tmp_path_factory):
    lab, path, retransmits = _lab_after_traffic(files, tmp_path_factory.mktemp("gray"), 0.01, arch)
    yield lab, path, retransmits
    lab.close()


@pytest.fixture(scope="module")
def clean(arch, files, tmp_path_factory):
    lab, path, retransmits = _lab_after_traffic(files, tmp_path_factory.mktemp("clean"), 0.0, arch)
    yield lab, path, retransmits
    lab.close()


def _named(output: str) -> dict[str, tuple[int, int, int]]:
    """{link: (lost, sent, retransmissions)} of every GRAY line."""
    return {m[1]: (int(m[2]), int(m[3]), int(m[4])) for m in
            re.finditer(r"GRAY (\S+ -> \S+)  lost (\d+) of (\d+) frames \([\d.]+%\)  retransmissions (\d+)", output)}


def test_stats_names_the_link_that_drops_one_percent(lossy, arch) -> None:
    lab, path, retransmits = lossy
    assert lab.sim.dropped_gray > 0 and retransmits > 0
    code, out, err = run("stats", str(path), "--arch", arch)
    assert code == 0, out + err
    named = _named(out)
    assert "leaf1:9 -> spine1:1" in named and set(named) <= GRAY, out[-2000:]
    # the frames lost on the wire are the ones the simulated link dropped (a direction that
    # lost fewer than MIN_FRAMES stays unnamed)
    lost = sum(lost for lost, _, _ in named.values())
    assert lab.sim.dropped_gray - (MIN_FRAMES - 1) <= lost <= lab.sim.dropped_gray
    # the hosts resent what was lost: the data plane's loss signal is beside the link
    assert sum(retx for _, _, retx in named.values()) > 0 and "via spine1" in out.split("gray links (")[1]


def test_watch_names_the_link_then_nothing_new_while_the_fabric_is_quiet(lossy, arch) -> None:
    _, path, _ = lossy
    code, out, err = run("watch", str(path), "--count", "2", "--interval", "0", "--arch", arch)
    assert code == 0, out + err
    first, second = out.split("congestion map (")[1:]
    assert _named(first) and set(_named(first)) <= GRAY
    # watch reports what was lost since the previous map: nothing moved in between
    assert _named(second) == {} and "gray links: none (16 directed links checked" in second


def test_control_without_the_loss_no_link_is_named(clean, arch) -> None:
    lab, path, _ = clean
    assert lab.sim.dropped_gray == 0
    code, out, err = run("stats", str(path), "--arch", arch)
    assert code == 0, out + err
    assert _named(out) == {} and "gray links: none (16 directed links checked" in out
    code, out, err = run("watch", str(path), "--count", "1", "--interval", "0", "--arch", arch)
    assert code == 0 and "gray links: none (16 directed links checked" in out


# ------------------------------------------------------------------ the pure functions
def test_a_path_maps_to_its_two_links_on_either_program() -> None:
    fabric = load_fabric(str(LAB))
    leaf2 = feedback.leaf_ids(fabric)["leaf2"]
    # v1model: position 0 of leaf1's routing set to leaf2 is its first member (spine1, port 9);
    # TNA: uplink index 1 is leaf1's second uplink (port 10, spine2)
    v1 = path_losses(fabric, {"leaf1": {leaf2 << 3 | 0: 5}}, "v1model")
    assert set(v1) == {("leaf1", 9), ("spine1", 2)} and v1[("leaf1", 9)][0].retransmits == 5
    tna = path_losses(fabric, {"leaf1": {leaf2 << 3 | 1: 4}}, "tna")
    assert set(tna) == {("leaf1", 10), ("spine2", 2)}
    # a leaf's own id or a path it has not are nobody's link
    assert path_losses(fabric, {"leaf1": {feedback.leaf_ids(fabric)["leaf1"] << 3: 9, leaf2 << 3 | 7: 9}},
                       "tna") == {}


def test_thresholds_and_in_flight_frames() -> None:
    fabric = load_fabric(str(LAB))
    tx = {("leaf1", 9): 1000, ("leaf2", 9): 1000, ("leaf3", 9): 100_000}
    rx = {("spine1", 1): 990, ("spine1", 2): 998, ("spine1", 3): 100_000 - 50}
    links = gray_links(fabric, tx, rx, {})
    # 10 of 1000 (1%) is named; 2 frames are under min_frames; 50 of 100000 (0.05%) is in-flight noise
    assert [(g.switch, g.port, g.lost) for g in links] == [("leaf1", 9, 10)]
    assert wire_losses(fabric, {("leaf1", 9): 5}, {("spine1", 1): 9}) == {("leaf1", 9): (5, 0)}
    assert gray_links(fabric, tx, {}, {}) == []          # the far end unread: nothing is claimed
    text = format_gray_links([GrayLink("leaf1", 9, "spine1", 1, 1000, 10)], 16)
    assert "GRAY leaf1:9 -> spine1:1  lost 10 of 1000 frames (1.00%)  retransmissions 0" in text


def test_a_switch_without_the_counters_is_left_unchecked_not_missing() -> None:
    """An older program (no rx or retransmission counter) still gets its congestion map: the
    reader skips what the switch does not have, and its links are not claimed."""
    from control_plane.graylinks import GrayLinkReader

    class Older:
        def read_counters(self, names, indexes=None):
            if names != ["StellarEgress.telemetry.tx_port"]:
                raise KeyError(f"no counter named {names[0]!r} in the switch's P4Info")
            return {names[0]: {p: (100, 0) for p in indexes}}

    fabric = load_fabric(str(LAB))
    reader = GrayLinkReader(fabric)
    reader.start()
    for name in fabric.switches:
        reader.read(name, Older())
    assert reader.report().startswith("gray links: none (0 directed links checked")
