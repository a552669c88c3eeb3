"""``python -m fabric_sim run``: one run from the command line, the same row as the Python entry."""
import json
import subprocess
import sys

import pytest

from fabric_sim.cli import main, size
from fabric_sim.experiment import ROOT, RunSpec, run


def test_sizes_read_as_nccl_tests_writes_them():
    assert size("4M") == 4 << 20 and size("512K") == 512 << 10 and size("65536") == 65536
    assert size("1.5K") == 1536 and size("4MiB") == 4 << 20
    for bad in ("4Q", "-1", "0", "0.3"):
        with pytest.raises(Exception):
            size(bad)


def test_a_run_from_the_command_line_prints_the_python_entrys_row(capsys):
    assert main(["--workload", "a2a", "--topo", "sym", "--mode", "drill", "--seed", "3",
                 "--message-bytes", "8K", "--set", "duration_us=50", "--json"]) == 0
    row = json.loads(capsys.readouterr().out)
    same = run(RunSpec("a2a", "sym", "drill", 3, nbytes=8192, duration_us=50.0))
    assert {k: v for k, v in row.items() if k != "wall_s"} == {k: v for k, v in same.items() if k != "wall_s"}


def test_bad_input_is_a_clear_error_without_a_traceback():
    cmd = [sys.executable, "-m", "fabric_sim", "run", "--workload", "a2a", "--mode", "nonsense"]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=300,
                          env={"PYTHONPATH": str(ROOT), "PATH": ""})
    assert proc.returncode == 2 and "unknown baseline 'nonsense'" in proc.stderr
    assert "Traceback" not in proc.stderr
    with pytest.raises(SystemExit):
        main(["--workload", "a2a", "--mode", "ecmp", "--set", "colour=blue"])
