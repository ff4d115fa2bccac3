"""The one table of defaults: every value more than one module (or the command line, a
configuration file and a class) would otherwise write, written once here.

As httpx's ``DEFAULT_*`` objects and openai-python's ``_constants``: a class, an option or a
file key that takes one of these leaves it ``None`` ("unset": the owner's default) or reads
its name from here, never the number. A leaf module (the standard library only), so that
every package may read it without a loop. ``tests/unit/test_defaults.py`` fails when one of
the distinctive values below is written as a literal elsewhere in ``asyncwifi``.

Durations are clock seconds (the simulator's, under a fast clock) unless said real.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Final

__all__ = [
    "CONNECT_TIMEOUT",
    "EMBEDDED_CONTACTS",
    "EMBEDDED_EVENTS_PER_DAY",
    "EMBEDDED_SPEED",
    "EVENTS_PAGE_SIZE",
    "FIRST_RUN",
    "FLEET_DEV_POLL",
    "FLEET_RUN",
    "HEARTBEAT_TIMEOUT",
    "HOLD_TTL",
    "HOTSPOTS_CHANGED",
    "IDLE_TRANSACTION_TIMEOUT",
    "LEASE_TTL",
    "LOOKBACK",
    "MODIFIED_FROM",
    "MODIFIED_TO",
    "NONCE_PREFIX",
    "NONCE_TTL",
    "OBJECT_SHARE",
    "POLL_INTERVAL",
    "RATE_PREFIX",
    "REDIS_TIMEOUT",
    "REQUEST_SHARE",
    "RETRY_INITIAL",
    "RETRY_MAX",
    "SETTLE",
    "SIMULATOR_PORT",
    "SIMULATOR_SEED",
    "TIMEOUT",
    "WEBHOOKS_PORT",
]

# -- the sync's cadence: SyncOptions, ``asyncwifi sync``, fleet.toml, the fleet's workflow,
#    EventFeed and the dlt source read these
#: between polls for new events (a daemon; the object plan may choose a longer one)
POLL_INTERVAL: Final = 60.0
#: events newer than this are left for the next poll (late writes upstream still land)
SETTLE: Final = 60.0
#: how late an event may appear and still be stored (Airbyte's lookback, dlt's lag)
LOOKBACK: Final = 600.0
#: how far back a first run reads events when no ``since`` says where
FIRST_RUN: Final = timedelta(days=7)
#: events per request (spec §8: up to 10,000)
EVENTS_PAGE_SIZE: Final = 10_000

# -- shares of the quota: requests a day, objects a month (never confused: two names)
#: the share of the day's requests a sync (or a fleet's organization) may use
REQUEST_SHARE: Final = 1.0
#: the share of the month's object allowance a sync plans to spend (the rest: other users
#: of the key, webhooks, and room to grow before the next plan)
OBJECT_SHARE: Final = 0.9

# -- the contacts' and hotspots' change filters: the vendor's exist, their names are not
#    shown (ours, by default; ``--modified-from-param`` overrides)
MODIFIED_FROM: Final = "modifiedFrom"
MODIFIED_TO: Final = "modifiedTo"
#: spec §4.3's "date greater than", read as "changed since"
HOTSPOTS_CHANGED: Final = "dateGt"

# -- a destination's lease (one sync per organization and database)
#: a lease not renewed for this long is free for another holder
LEASE_TTL: Final = 60.0

# -- the client and its retries (real seconds)
#: a request's timeout (``Client(timeout=)``, ``ASYNCWIFI_TIMEOUT``, ``timeout`` in config.toml)
TIMEOUT: Final = 30.0
#: a connection's timeout (HTTP, PostgreSQL)
CONNECT_TIMEOUT: Final = 10.0
#: the first and the longest wait between retries: the client's requests
#: (``RetryPolicy.backoff_base``/``backoff_max``) and the copy loop's database
#: (``CopyOptions.retry_initial``/``retry_max``)
RETRY_INITIAL: Final = 0.5
RETRY_MAX: Final = 30.0

# -- Redis (``asyncwifi.ratelimit.redis_client``: the one connection factory)
#: each Redis call's timeout, connecting included (real seconds): the rate store's, the
#: webhook nonces', the fleet worker's pool
REDIS_TIMEOUT: Final = 1.0
#: the key prefix of the shared rate limiter (``RedisStore``; the key's name is its own)
RATE_PREFIX: Final = "asyncwifi:rl:"
#: a reservation of objects lapses this long after it was made if never settled
HOLD_TTL: Final = 300.0
#: the webhook receivers' nonces: their key prefix and how long one is remembered
NONCE_PREFIX: Final = "asyncwifi:webhooks:nonce:"
NONCE_TTL: Final = 3_600.0

# -- the fleet (Temporal)
#: an activity that has not heartbeaten for this long is retried elsewhere (real seconds)
HEARTBEAT_TIMEOUT: Final = 30.0
#: how long one fleet activity runs an organization's sync (the daemon's loop, its state
#: kept) before it returns to its workflow, which takes stock and starts the next (real s)
FLEET_RUN: Final = 3_600.0
#: a PostgreSQL transaction idle this long is aborted by the server (real seconds)
IDLE_TRANSACTION_TIMEOUT: Final = 90.0
#: ``fleet dev``: its simulated organizations are polled faster than a real one, so that a
#: person trying it sees passes within seconds
FLEET_DEV_POLL: Final = 10.0

# -- the simulator (``Simulator.DEFAULTS`` is its whole set, typed; the command line's
#    ``--simulate`` reads these without loading the simulator)
#: the seed of the data ``Simulator()``, ``asyncwifi simulate`` and ``--simulate`` serve
SIMULATOR_SEED: Final = 0
#: ``--simulate``'s clock speed: it runs the command's client in this process on the
#: simulator's clock, for a person trying a command: a day of quota (the reset a spent day
#: waits for) passes in 864 real seconds instead of a day. The data is the same.
EMBEDDED_SPEED: Final = 100.0
#: ``--simulate``'s data, generated over the command's own range (a week by default): a
#: busy organization's day of events and its contacts, so that a person's first backfill
#: or export shows pages, progress and the quota at work (the README's example: 70,000
#: events); the standalone simulator serves a fixed total instead
EMBEDDED_EVENTS_PER_DAY: Final = 10_000
EMBEDDED_CONTACTS: Final = 2_000

# -- servers: two on one machine never share a port by default
#: ``asyncwifi simulate`` / ``SimulatorProcess``
SIMULATOR_PORT: Final = 8080
#: ``asyncwifi webhooks serve`` / ``webhooks.serve``
WEBHOOKS_PORT: Final = 8090
