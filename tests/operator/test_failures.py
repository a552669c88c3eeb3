"""Failures an operator can stack and undo (issue 33, item 2), over P4Runtime to in-process p4sim
switches running the lab fabric (tests/control_plane/test_fail_link_state.py's fixture).

Lab: leaf1's uplinks are port 9 (spine1) and 10 (spine2).  Failing both cuts leaf1 off; a third
failure (leaf2-spine1) stacks on top; each is undone one by one or all at once.
"""
from __future__ import annotations

import json
import time

import pytest

from control_plane.linkstate import FailedLinks, default_state_path, legacy_state_path
from tests.control_plane.test_fail_link_state import compiled, lab, member_ports, run, state_dir  # noqa: F401


@pytest.fixture(scope="module")
def arch():
    return "v1model"


def in_sync(path, *extra) -> tuple[bool, str]:
    code, out, err = run("diff", str(path), *extra)
    return code == 0, out + err


def test_the_state_lives_under_the_state_dir_never_beside_the_fabric(lab, state_dir) -> None:
    _, path, _, _ = lab
    code, out, err = run("fail-link", str(path), "leaf1", "spine1")
    assert code == 0, out + err
    assert not legacy_state_path(path).exists()                  # not in the fabric's directory
    state = default_state_path(path)
    assert state.parent == state_dir and state.exists() and f"state: {state}" in out
    doc = json.loads(state.read_text())
    assert doc["fabric"] == str(path.resolve()) and doc["links"] == [["leaf1", "spine1"]]
    code, out, err = run("fail-link", str(path), "leaf1", "spine1", "--restore")
    assert code == 0 and not state.exists(), out + err
    # --state-dir names another directory
    other = state_dir.parent / "elsewhere"
    code, out, err = run("fail-link", str(path), "leaf1", "spine1", "--state-dir", str(other))
    assert code == 0 and default_state_path(path, other).exists() and not default_state_path(path).exists()


def test_a_file_left_beside_the_fabric_is_reported_and_ignored(lab) -> None:
    _, path, _, _ = lab
    legacy = legacy_state_path(path)
    legacy.write_text(json.dumps({"format": "stellar-failed-links/1", "links": [["leaf1", "spine1"]]}))
    code, out, err = run("fail-link", str(path), "leaf1", "spine2")
    assert code == 0, out + err
    assert f"{legacy} is a failed-links file an older stellarctl left" in err
    assert "failed links now: leaf1-spine2" in out                # the old record was not composed in


def test_two_and_three_failures_stack_a_partitioned_leaf_is_reported_and_all_come_back(lab) -> None:
    fabric, path, _, _ = lab
    state = default_state_path(path)
    code, out, err = run("fail-link", str(path), "leaf1", "spine1")
    assert code == 0 and "PARTITIONED" not in out, out + err
    assert in_sync(path)[0] and in_sync(path, "--state", str(state))[0]   # diff agrees with fail-link
    # the second failure cuts leaf1 off: reported with what it still reaches, no traceback
    code, out, err = run("fail-link", str(path), "leaf1", "spine2")
    assert code == 0, out + err
    assert "leaf1 is PARTITIONED: no uplink left; cannot reach leaf2, leaf3, leaf4; still reaches no other leaf " \
           "and its own hosts (l1g1, l1g2" in out
    assert "leaf2 is" not in out            # that leaf2 cannot reach leaf1 is the same fact
    assert member_ports(fabric, "leaf1", "v1model").isdisjoint({9, 10})
    ok, text = in_sync(path)
    assert ok, text
    # a third failure stacks on the two
    code, out, err = run("fail-link", str(path), "leaf2", "spine1")
    assert code == 0, out + err
    assert FailedLinks.load(state).links == [("leaf1", "spine1"), ("leaf1", "spine2"), ("leaf2", "spine1")]
    assert 9 not in member_ports(fabric, "leaf2", "v1model") and in_sync(path)[0]
    # negative control: the intact fabric is not what the switches hold now
    assert not in_sync(path, "--ignore-state")[0]
    # one comes back, then the rest at once
    code, out, err = run("fail-link", str(path), "leaf1", "spine2", "--restore")
    assert code == 0 and "leaf1 is" not in out
    assert "leaf2 is CUT OFF from" not in out                # leaf1 and leaf2 still share spine2
    assert 10 in member_ports(fabric, "leaf1", "v1model") and in_sync(path)[0]
    code, out, err = run("fail-link", str(path), "--restore", "--all")
    assert code == 0, out + err
    assert out.count("fail-link --restore") == 2 and not state.exists()
    assert {9, 10} <= member_ports(fabric, "leaf1", "v1model")
    ok, text = in_sync(path, "--ignore-state")
    assert ok, text
    code, out, err = run("fail-link", str(path), "--restore", "--all")
    assert code == 0 and "nothing to restore" in out


def test_a_stale_record_is_reported_and_not_composed(lab) -> None:
    """The record says leaf1-spine1 failed, but the switches route over it (restarted and
    re-pushed since): a new failure of leaf1-spine2 must not take leaf1's last uplink."""
    fabric, path, _, _ = lab
    state = default_state_path(path)
    FailedLinks([("leaf1", "spine1")], fabric=str(path.resolve())).save(state)
    code, out, err = run("fail-link", str(path), "leaf1", "spine2")
    assert code == 0, out + err
    assert "records leaf1-spine1 as failed" in err and "stale record is dropped" in err
    assert "failed links now: leaf1-spine2" in out and "PARTITIONED" not in out
    assert 9 in member_ports(fabric, "leaf1", "v1model")


def test_a_record_of_another_fabric_file_is_refused(lab, tmp_path) -> None:
    _, path, _, _ = lab
    state = default_state_path(path)
    FailedLinks([("leaf1", "spine1")], fabric=str(tmp_path / "other" / "lab.yaml")).save(state)
    code, out, err = run("fail-link", str(path), "leaf1", "spine2")
    assert code == 1 and "records the failed links of" in err and "--state-dir" in err


def test_push_to_a_stopped_switch_gives_up_at_once_and_names_it(lab, tmp_path) -> None:
    _, path, _, _ = lab
    import socket

    with socket.socket() as s:           # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        dead = s.getsockname()[1]
    text = path.read_text()
    leaf3 = [line for line in text.splitlines() if "p4runtime:" in line][4]   # spine1, spine2, leaf1.. leaf3
    broken = tmp_path / "broken.yaml"
    broken.write_text(text.replace(leaf3, leaf3.split("p4runtime:")[0] + f"p4runtime: 127.0.0.1:{dead}"))
    started = time.monotonic()
    code, out, err = run("push", str(broken), "--no-pipeline", "--ignore-state")
    took = time.monotonic() - started
    assert code == 1 and took < 5, (took, out + err)
    assert f"leaf3  127.0.0.1:{dead}" in out and "connection refused" in out
    assert out.count("+0 ~0 -0") == 5                    # the other five were reconciled
    code, out, err = run("push", str(broken), "--no-pipeline", "--ignore-state", "-q")
    assert code == 1 and out == "" and "switch leaf3" in err and "connection refused" in err
    code, out, err = run("push", str(path), "--no-pipeline", "--ignore-state", "-q")
    assert code == 0 and out == "" and err == ""         # -q: silent on success


def test_watch_keeps_the_others_and_marks_the_missing_switch(lab, tmp_path) -> None:
    _, path, _, _ = lab
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = s.getsockname()[1]
    text = path.read_text()
    spine2 = [line for line in text.splitlines() if "p4runtime:" in line][1]
    broken = tmp_path / "broken.yaml"
    broken.write_text(text.replace(spine2, spine2.split("p4runtime:")[0] + f"p4runtime: 127.0.0.1:{dead}"))
    code, out, err = run("watch", str(broken), "--count", "2", "--interval", "0", "--top", "20")
    assert code == 0, out + err
    maps = out.split("congestion map (")[1:]
    assert len(maps) == 2
    for one in maps:
        assert one.startswith("12 directed links)")          # 16 minus spine2's four
        assert "spine2: MISSING" in one and "connection refused" in one
        assert "spine1:1 -> leaf1" in one and "spine2:" not in one.split("MISSING")[0].replace("spine2: ", "")


def test_placement_of_a_partitioned_fabric_names_the_flows_it_cannot_place() -> None:
    """paths.assign_jobs (the render's placement) with leaf1 cut off: no IndexError in the ECMP
    estimate; the flows with no path are listed, the others placed."""
    from control_plane.model import load_fabric
    from control_plane.paths import assign_jobs
    from tests.control_plane.test_fail_link_state import LAB

    fabric = load_fabric(str(LAB))
    intact = assign_jobs(fabric)
    assert not intact.unroutable                                   # control: every flow has a path
    cut = assign_jobs(FailedLinks([("leaf1", "spine1"), ("leaf1", "spine2")]).apply(fabric))
    assert cut.unroutable and all("leaf1" in (f.src_leaf, f.dst_leaf) for f in cut.unroutable)
    assert "have no path and are not placed (the fabric is partitioned)" in cut.notes[0]
    assert all("leaf1" not in (f.src_leaf, f.dst_leaf) for f in cut.placement.paths_of)


def test_two_leaves_without_a_common_spine_are_reported_once() -> None:
    from control_plane.linkstate import describe_partition
    from control_plane.model import load_fabric
    from tests.control_plane.test_fail_link_state import LAB

    fabric = load_fabric(str(LAB))
    assert describe_partition(fabric, FailedLinks([("leaf1", "spine1")])) == []      # control: still joined
    (line,) = describe_partition(fabric, FailedLinks([("leaf1", "spine1"), ("leaf2", "spine2")]))
    assert line.startswith("leaf1 is CUT OFF from leaf2: uplinks left to spine2; cannot reach leaf2; "
                           "still reaches leaf3, leaf4 and its own hosts")
