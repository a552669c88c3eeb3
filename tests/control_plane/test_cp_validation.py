"""Fabric validation: every mistake is reported with file, line, key path and reason."""
from __future__ import annotations

from pathlib import Path

import pytest

from control_plane.errors import FabricError, Problem
from control_plane.model import load_fabric

MINI = """\
name: mini
switches:
  - name: spine1
    role: spine
    device_id: 100
    p4runtime: 127.0.0.1:9600
    ports:
      1: {peer: "leaf1:9"}
      2: {peer: "leaf2:9"}
  - name: leaf1
    role: leaf
    device_id: 1
    p4runtime: 127.0.0.1:9501
    subnet: 10.0.1.0/24
    ports:
      9: {peer: "spine1:1"}
  - name: leaf2
    role: leaf
    device_id: 2
    p4runtime: 127.0.0.1:9502
    subnet: 10.0.2.0/24
    ports:
      9: {peer: "spine1:2"}
dataplane:
  ecn: {kmin_us: 4, kmax_us: 32, pmax: 0.2}
tenants:
  - name: t1
    guaranteed_share: 0.5
    subnets: [10.0.1.0/24, 10.0.2.0/24]
hosts:
  - {name: h1, ip: 10.0.1.1, mac: "02:00:00:00:01:01", leaf: leaf1, port: 1}
  - {name: h2, ip: 10.0.2.1, mac: "02:00:00:00:02:01", leaf: leaf2, port: 1}
jobs:
  - name: j1
    collective: AllReduce
    bandwidth_gbps: 10
    hosts: [h1, h2]
"""


def line_of(text: str, needle: str, occurrence: int = 1) -> int:
    """1-based line of the `occurrence`-th line containing `needle`."""
    hits = [i for i, line in enumerate(text.splitlines(), start=1) if needle in line]
    assert len(hits) >= occurrence, f"{needle!r} not in fabric text"
    return hits[occurrence - 1]


def problems_of(tmp_path: Path, text: str) -> tuple[Path, list[Problem]]:
    path = tmp_path / "fabric.yaml"
    path.write_text(text)
    with pytest.raises(FabricError) as caught:
        load_fabric(path)
    return path, caught.value.problems


def only(problems: list[Problem], key: str) -> Problem:
    matching = [p for p in problems if p.key == key]
    assert len(matching) == 1, f"expected one problem at {key}, got {[str(p) for p in problems]}"
    return matching[0]


def edit(old: str, new: str, occurrence: int = 1) -> str:
    parts = MINI.split(old)
    assert len(parts) > occurrence, f"{old!r} occurs fewer than {occurrence} times"
    return old.join(parts[:occurrence]) + new + old.join(parts[occurrence:])


def test_the_base_fabric_is_valid(tmp_path: Path) -> None:
    """Control for every test below: the unmodified snippet loads."""
    path = tmp_path / "ok.yaml"
    path.write_text(MINI)
    fabric = load_fabric(path)
    assert sorted(fabric.switches) == ["leaf1", "leaf2", "spine1"]
    assert fabric.hosts["h2"].tenant == "t1"


def test_problem_text_is_file_line_key_reason() -> None:
    problem = Problem("f.yaml", 7, "hosts[1].ip", "duplicate IP 10.0.0.1")
    assert str(problem) == "f.yaml:7: hosts[1].ip: duplicate IP 10.0.0.1"


def test_unknown_key_names_the_typo_and_allowed_keys(tmp_path: Path) -> None:
    text = edit('9: {peer: "spine1:1"}', '9: {peer: "spine1:1", capacity_gpbs: 100}')
    path, problems = problems_of(tmp_path, text)
    problem = only(problems, "switches[1].ports.9.capacity_gpbs")
    assert problem.file == str(path)
    assert problem.line == line_of(text, "capacity_gpbs")
    assert "unknown key" in problem.reason and "capacity_gbps" in problem.reason


def test_wrong_type(tmp_path: Path) -> None:
    text = edit("device_id: 1\n", "device_id: one\n")
    _, problems = problems_of(tmp_path, text)
    problem = only(problems, "switches[1].device_id")
    assert problem.line == line_of(text, "device_id: one")
    assert "expected an integer" in problem.reason and "'one'" in problem.reason


def test_missing_required_key_points_at_the_parent(tmp_path: Path) -> None:
    text = edit("    role: leaf\n", "", occurrence=1)
    _, problems = problems_of(tmp_path, text)
    problem = only(problems, "switches[1]")
    assert "missing required key 'role'" in problem.reason
    assert problem.line == line_of(text, "name: leaf1")


def test_duplicate_ip(tmp_path: Path) -> None:
    text = edit("ip: 10.0.2.1,", "ip: 10.0.1.1,")
    _, problems = problems_of(tmp_path, text)
    ip = [p for p in problems if p.key == "hosts[1].ip" and "duplicate IP" in p.reason]
    assert len(ip) == 1
    assert ip[0].line == line_of(text, "name: h2")
    assert "h1" in ip[0].reason


def test_duplicate_mac_and_device_id(tmp_path: Path) -> None:
    text = edit('mac: "02:00:00:00:02:01"', 'mac: "02:00:00:00:01:01"').replace("device_id: 2", "device_id: 1")
    _, problems = problems_of(tmp_path, text)
    mac = only(problems, "hosts[1].mac")
    assert "duplicate MAC" in mac.reason and mac.line == line_of(text, "name: h2")
    dev = only(problems, "switches[2].device_id")
    assert "duplicate device_id 1" in dev.reason and "leaf1" in dev.reason
    assert dev.line == line_of(text, "device_id: 1", occurrence=3)  # the 1st is "device_id: 100"


def test_dangling_peer(tmp_path: Path) -> None:
    text = edit('9: {peer: "spine1:1"}', '9: {peer: "spine9:1"}')
    _, problems = problems_of(tmp_path, text)
    problem = only(problems, "switches[1].ports.9.peer")
    assert "spine9" in problem.reason and "does not exist" in problem.reason
    assert problem.line == line_of(text, "spine9:1")


def test_asymmetric_peer(tmp_path: Path) -> None:
    # leaf2 claims spine1 port 1, which points back to leaf1
    text = edit('9: {peer: "spine1:2"}', '9: {peer: "spine1:1"}')
    _, problems = problems_of(tmp_path, text)
    problem = only(problems, "switches[2].ports.9.peer")
    assert "asymmetric link" in problem.reason and "leaf1:9" in problem.reason
    assert problem.line == line_of(text, "9: {peer: \"spine1:1\"}", occurrence=2)


def test_asymmetric_capacity(tmp_path: Path) -> None:
    text = edit('1: {peer: "leaf1:9"}', '1: {peer: "leaf1:9", capacity_gbps: 400}')
    _, problems = problems_of(tmp_path, text)
    problem = only(problems, "switches[1].ports.9.capacity_gbps")
    assert "asymmetric link" in problem.reason and "400" in problem.reason and "100" in problem.reason


def test_host_on_spine(tmp_path: Path) -> None:
    text = edit("leaf: leaf2, port: 1}", "leaf: spine1, port: 7}")
    _, problems = problems_of(tmp_path, text)
    problem = only(problems, "hosts[1].leaf")
    assert "spine" in problem.reason and "leaves only" in problem.reason
    assert problem.line == line_of(text, "name: h2")


def test_host_on_fabric_port_and_outside_subnet(tmp_path: Path) -> None:
    text = edit("ip: 10.0.2.1, mac: \"02:00:00:00:02:01\", leaf: leaf2, port: 1}",
                "ip: 10.0.9.1, mac: \"02:00:00:00:02:01\", leaf: leaf2, port: 9}")
    _, problems = problems_of(tmp_path, text)
    assert "outside leaf leaf2's subnet" in only(problems, "hosts[1].ip").reason
    assert "fabric port" in only(problems, "hosts[1].port").reason


@pytest.mark.parametrize("old,new,key,reason", [
    ("pmax: 0.2", "pmax: 1.5", "dataplane.ecn.pmax", "above the maximum 1.0"),
    ("kmin_us: 4", "kmin_us: 40", "dataplane.ecn.kmin_us", "must be below kmax_us"),
    ("kmin_us: 4,", "window_us: 4, kmin_us: 4,", "dataplane.ecn.window_us", "below the minimum 5 us"),
    ("bandwidth_gbps: 10", "bandwidth_gbps: -3", "jobs[0].bandwidth_gbps", "greater than 0"),
    ("guaranteed_share: 0.5", "guaranteed_share: 2", "tenants[0].guaranteed_share", "above the maximum 1.0"),
])
def test_out_of_range_parameters(tmp_path: Path, old: str, new: str, key: str, reason: str) -> None:
    text = edit(old, new)
    _, problems = problems_of(tmp_path, text)
    problem = only(problems, key)
    assert reason in problem.reason
    assert problem.line == line_of(text, new.split(":")[0] + ":" + new.split(":")[1])


def test_port_number_out_of_range(tmp_path: Path) -> None:
    text = edit('9: {peer: "spine1:1"}', '600: {peer: "spine1:1"}')
    _, problems = problems_of(tmp_path, text)
    problem = only(problems, "switches[1].ports.600")
    assert "0..510" in problem.reason and problem.line == line_of(text, "600:")


def test_duplicate_yaml_key(tmp_path: Path) -> None:
    text = edit("    device_id: 100\n", "    device_id: 100\n    device_id: 101\n")
    _, problems = problems_of(tmp_path, text)
    problem = only(problems, "switches[0].device_id")
    assert "duplicate key" in problem.reason
    assert problem.line == line_of(text, "device_id: 101")
    assert f"line {line_of(text, 'device_id: 100')}" in problem.reason


def test_yaml_syntax_error_has_a_line(tmp_path: Path) -> None:
    text = MINI.replace("hosts: [h1, h2]", "hosts: [h1, h2")
    path, problems = problems_of(tmp_path, text)
    assert len(problems) == 1
    assert problems[0].file == str(path) and "YAML syntax error" in problems[0].reason
    assert problems[0].line >= line_of(text, "hosts: [h1, h2")


def test_job_references(tmp_path: Path) -> None:
    text = edit("hosts: [h1, h2]", "hosts: [h1, h9]\n    root: h1")
    _, problems = problems_of(tmp_path, text)
    assert "'h9' does not exist" in only(problems, "jobs[0].hosts[1]").reason
    assert "only Broadcast and ParameterServer" in only(problems, "jobs[0].root").reason


def test_tenant_shares_must_not_exceed_one(tmp_path: Path) -> None:
    text = MINI.replace("hosts:\n  - {name: h1",
                        "  - name: t2\n    guaranteed_share: 0.6\n    subnets: [10.9.0.0/16]\nhosts:\n  - {name: h1")
    _, problems = problems_of(tmp_path, text)
    problem = only(problems, "tenants[1].guaranteed_share")
    assert "add up to 1.1" in problem.reason


def test_overlapping_tenant_subnets(tmp_path: Path) -> None:
    text = MINI.replace("hosts:\n  - {name: h1",
                        "  - name: t2\n    guaranteed_share: 0.1\n    subnets: [10.0.1.128/25]\nhosts:\n  - {name: h1")
    _, problems = problems_of(tmp_path, text)
    problem = only(problems, "tenants[1].subnets[0]")
    assert "overlaps 10.0.1.0/24 of tenant 't1'" in problem.reason
    assert problem.line == line_of(text, "10.0.1.128/25")


def test_leaves_without_a_common_spine(tmp_path: Path) -> None:
    text = MINI.replace('      2: {peer: "leaf2:9"}\n', "").replace(
        '      9: {peer: "spine1:2"}\n', "")
    _, problems = problems_of(tmp_path, text)
    problem = only(problems, "switches[2].ports")
    assert "shares no spine with leaf leaf1" in problem.reason


def test_all_problems_are_reported_together(tmp_path: Path) -> None:
    text = (MINI.replace("ip: 10.0.2.1,", "ip: 10.0.1.1,")
            .replace("pmax: 0.2", "pmax: 7")
            .replace('9: {peer: "spine1:1"}', '9: {peer: "nowhere:1"}'))
    _, problems = problems_of(tmp_path, text)
    keys = {p.key for p in problems}
    assert {"hosts[1].ip", "dataplane.ecn.pmax", "switches[1].ports.9.peer"} <= keys
    assert [p.line for p in problems] == sorted(p.line for p in problems)  # file order


def test_unquoted_mac_that_yaml_reads_as_a_number_is_still_a_mac(tmp_path: Path) -> None:
    """YAML 1.1 reads 10:20:30:40:50:01 as a base-60 integer; the loader uses the typed text."""
    text = MINI.replace('mac: "02:00:00:00:01:01"', "mac: 10:20:30:40:50:01")
    path = tmp_path / "mac.yaml"
    path.write_text(text)
    assert load_fabric(path).hosts["h1"].mac == "10:20:30:40:50:01"


def test_bad_mac_and_ip_text(tmp_path: Path) -> None:
    text = MINI.replace('mac: "02:00:00:00:01:01"', 'mac: "02:00:00:00:01"').replace(
        "ip: 10.0.2.1,", "ip: 10.0.2.300,")
    _, problems = problems_of(tmp_path, text)
    assert "not a MAC address" in only(problems, "hosts[0].mac").reason
    assert "not an IPv4 address" in only(problems, "hosts[1].ip").reason


def test_empty_and_unreadable_files(tmp_path: Path) -> None:
    _, problems = problems_of(tmp_path, "")
    assert "empty" in problems[0].reason
    with pytest.raises(FabricError) as caught:
        load_fabric(tmp_path / "missing.yaml")
    assert "cannot read file" in str(caught.value)


def test_wrong_shapes(tmp_path: Path) -> None:
    _, problems = problems_of(tmp_path, "- just\n- a list\n")
    assert problems[0].key == "<document>" and "expected a mapping, got list" in problems[0].reason
    text = MINI.replace("hosts:\n  - {name: h1", "hosts:\n  h0: 1\nxhosts:\n  - {name: h1")
    _, problems = problems_of(tmp_path, text)
    assert "expected a list, got mapping" in only(problems, "hosts").reason
    assert "unknown key" in only(problems, "xhosts").reason


def test_render_refuses_an_ecn_window_under_5_us_built_in_code() -> None:
    # The YAML path refuses it with file:line:key (above); a model changed in code must not
    # reach a switch either.
    from dataclasses import replace

    from control_plane.model import load_fabric
    from control_plane.render import RenderError, render_fabric

    lab = load_fabric(Path(__file__).resolve().parents[2] / "fabrics" / "lab.yaml")
    short = replace(lab, dataplane=replace(lab.dataplane, ecn=replace(lab.dataplane.ecn, window_us=4)))
    with pytest.raises(RenderError, match="below the minimum 5 us"):
        render_fabric(short)
    render_fabric(replace(lab, dataplane=replace(lab.dataplane, ecn=replace(lab.dataplane.ecn, window_us=5))))


def test_tna_profile_is_one_the_program_has(tmp_path: Path) -> None:
    # the TNA program's profiles (contract.TNA_PROFILES); a typo is the fabric's error, at its line
    text = edit("dataplane:\n", "dataplane:\n  tna_profile: no_dre\n")
    _, problems = problems_of(tmp_path, text)
    problem = only(problems, "dataplane.tna_profile")
    assert "no-dre" in problem.reason and "full" in problem.reason
    assert problem.line == line_of(text, "tna_profile: no_dre")
    ok = tmp_path / "ok.yaml"
    ok.write_text(edit("dataplane:\n", "dataplane:\n  tna_profile: no-dre\n"))
    assert load_fabric(ok).dataplane.tna_profile == "no-dre"
