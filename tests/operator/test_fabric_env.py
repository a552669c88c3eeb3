"""``python -m bmv2_env up FABRIC``: every switch of the lab fabric as a p4sim process, links
wired over nanomsg, then the operator's path on it -- push, traffic, stats, fail-link twice,
restore, down -- end to end through the command lines (issue 33, item 6).  The YAML's addresses
are moved to free ports, so this runs beside a real lab fabric."""
from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from control_plane.cli import main as stellarctl
from control_plane.linkstate import default_state_path
from testkit.p4sim_process import REPO, free_port

LAB = REPO / "fabrics" / "lab.yaml"


def env_cli(*args: str, timeout: float = 180) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "bmv2_env", *args], cwd=REPO, capture_output=True, text=True,
                          timeout=timeout, env=dict(os.environ, PYTHONPATH=str(REPO)))


def ctl(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    return stellarctl(list(argv), out, err), out.getvalue(), err.getvalue()


def traffic(fabric: Path, state: Path, *extra: str) -> dict[tuple[str, str], tuple[int, int]]:
    res = env_cli("traffic", str(fabric), "--state-dir", str(state), "--packets", "20", *extra)
    assert res.returncode == 0, res.stdout + res.stderr
    rows = re.findall(r"(\S+) -> (\S+)\s+sent\s+(\d+)\s+delivered\s+(\d+)", res.stdout)
    return {(a, b): (int(s), int(d)) for a, b, s, d in rows}


@pytest.fixture
def lab_up(tmp_path):
    text = LAB.read_text()
    for addr in sorted(set(re.findall(r"p4runtime: (\S+)", text))):
        text = text.replace(f"p4runtime: {addr}", f"p4runtime: 127.0.0.1:{free_port()}")
    fabric = tmp_path / "lab.yaml"
    fabric.write_text(text)
    state = tmp_path / "fabric-state"
    res = env_cli("up", str(fabric), "--state-dir", str(state))
    try:
        assert res.returncode == 0, res.stdout + res.stderr
        yield fabric, state, res.stdout
    finally:
        env_cli("down", str(fabric), "--state-dir", str(state))


def test_up_push_traffic_stats_fail_restore_down(lab_up) -> None:
    fabric, state, up_out = lab_up
    assert up_out.count("P4Runtime 127.0.0.1:") == 6 and "next: python -m control_plane push" in up_out
    code, out, err = ctl("push", str(fabric), "-q")
    assert code == 0 and out == "", out + err
    delivered = traffic(fabric, state)
    assert len(delivered) == 16 and all(d == (20, 20) for d in delivered.values()), delivered
    code, out, err = ctl("stats", str(fabric), "--json")
    stats = json.loads(out)
    assert code == 0 and sum(v[0] for v in stats["spine1"]["tx"].values()) + \
        sum(v[0] for v in stats["spine2"]["tx"].values()) == 16 * 20            # every frame crossed a spine
    # fail-link twice: leaf1 is cut off; its pairs deliver nothing, the others all
    assert ctl("fail-link", str(fabric), "leaf1", "spine1")[0] == 0
    code, out, err = ctl("fail-link", str(fabric), "leaf1", "spine2")
    assert code == 0 and "leaf1 is PARTITIONED" in out, out + err
    delivered = traffic(fabric, state)
    cut = {pair: d for pair, d in delivered.items() if "l1" in pair[0][:2] + pair[1][:2]}
    assert cut and all(d[1] == 0 for d in cut.values()), cut
    assert all(d == (20, 20) for pair, d in delivered.items() if pair not in cut), delivered
    code, out, err = ctl("fail-link", str(fabric), "--restore", "--all")
    assert code == 0, out + err
    assert all(d == (20, 20) for d in traffic(fabric, state).values())
    # a failure left recorded when the fabric goes down goes with it
    assert ctl("fail-link", str(fabric), "leaf2", "spine2")[0] == 0
    record = default_state_path(fabric)
    assert record.exists()
    pids = [s["pid"] for s in json.loads((state / "lab" / "fabric.json").read_text())["switches"].values()]
    res = env_cli("down", str(fabric), "--state-dir", str(state))
    assert res.returncode == 0 and f"removed failed-links record {record}" in res.stdout, res.stdout + res.stderr
    assert not record.exists() and not list((state / "lab").glob("*.ipc"))
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


def test_a_second_fabric_on_the_same_addresses_is_refused(lab_up, tmp_path) -> None:
    """Its switches cannot take the addresses (no port sharing): up fails, naming the address,
    and leaves nothing running."""
    fabric, _, _ = lab_up
    res = env_cli("up", str(fabric), "--state-dir", str(tmp_path / "second"))
    assert res.returncode == 1 and "address already in use" in res.stderr, res.stdout + res.stderr
    assert not (tmp_path / "second" / "lab" / "fabric.json").exists()
