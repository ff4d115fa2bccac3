"""``python -m asyncwifi.testing``: ``asyncwifi simulate`` (the simulator's one command line)."""

import sys

from asyncwifi.cli import main

raise SystemExit(main(["simulate", *sys.argv[1:]]))
