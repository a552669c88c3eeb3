"""``python -m p4sim`` == the ``p4sim`` console script."""
from p4sim.cli import main

raise SystemExit(main())
