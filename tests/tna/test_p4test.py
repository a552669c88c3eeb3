"""p4c's p4test accepts the TNA program in every profile (Tofino-1 and Tofino2, with and without
the DRE), against the tna.p4/t2na.p4 of the open-source Tofino back end.  p4test is the real
front and mid end without a back end, so a construct only p4sim accepts fails here even where
bf-p4c is not installed.  Needs ``p4test`` on PATH and a p4c source tree with the Tofino back end
(P4C_SRC, default /opt/p4tools/src/p4c); skipped, saying which is missing, elsewhere (CI)."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
P4TEST = shutil.which("p4test")
P4C = Path(os.environ.get("P4C_SRC", "/opt/p4tools/src/p4c"))
TOFINO_INCLUDE = P4C / "backends" / "tofino" / "bf-p4c" / "p4include"

pytestmark = [
    pytest.mark.skipif(P4TEST is None, reason="p4test (real p4c) is not on PATH"),
    pytest.mark.skipif(not (TOFINO_INCLUDE / "tna.p4").exists(),
                       reason=f"no p4c source tree with the Tofino back end at {P4C}"),
]

PROFILES = {"tofino-full": ["-D__TARGET_TOFINO__=1"],
            "tofino-no-dre": ["-D__TARGET_TOFINO__=1", "-DSTELLAR_NO_DRE=1"],
            "tofino2-full": ["-D__TARGET_TOFINO__=2"],
            "tofino2-no-dre": ["-D__TARGET_TOFINO__=2", "-DSTELLAR_NO_DRE=1"]}


@pytest.mark.parametrize("profile", sorted(PROFILES))
def test_p4test_accepts_the_tna_program(profile):
    proc = subprocess.run([P4TEST, "-I", str(TOFINO_INCLUDE), *PROFILES[profile],
                           str(REPO / "p4src" / "tna" / "stellar.p4")],
                          capture_output=True, text=True, timeout=600, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    assert "error" not in proc.stderr.lower(), proc.stderr
