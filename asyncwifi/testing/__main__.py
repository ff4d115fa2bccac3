"""``python -m asyncwifi.testing``: serve the simulator until interrupted (``--help``)."""

from asyncwifi.testing._process import main

raise SystemExit(main())
