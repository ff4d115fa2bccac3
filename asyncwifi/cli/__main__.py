"""``python -m asyncwifi.cli``: the ``asyncwifi`` command (what ``SimulatorProcess`` runs as
``python -m asyncwifi.cli simulate``)."""

import sys

from asyncwifi.cli import main

raise SystemExit(main(sys.argv[1:]))
