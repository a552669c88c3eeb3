"""`python -m control_plane ...` is `stellarctl ...`."""
import sys

from .cli import main

sys.exit(main())
