"""Compile p4src/tna/stellar.p4 with an installed bf-p4c and print what the Tofino back end says.

    python bench/tofino_resources.py [--targets tofino,tofino2] [--profiles full,no-dre]
                                     [--out build/tofino] [--from-logs]

What is compiled and read: testkit/tofino_resources.py.
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from testkit.tofino_resources import main  # noqa: E402  (after the path insert)

if __name__ == "__main__":
    sys.exit(main())
