"""``python -m fabric_sim`` runs the demo (``make demo``)."""
import sys

from fabric_sim.demo import main

sys.exit(main())
