"""``python -m fabric_sim run ...`` runs one study run (``fabric_sim.cli``); anything else is the
demo (``make demo``: ``python -m fabric_sim [--arch tna] [--quick]``)."""
import sys

if sys.argv[1:2] == ["run"]:
    from fabric_sim.cli import main

    sys.exit(main(sys.argv[2:]))

from fabric_sim.demo import main  # noqa: E402 - the demo is the default command

sys.exit(main())
