"""Running the simulator on its own: from the command line, or in a separate process.

``asyncwifi simulate --port 8080`` (also ``python -m asyncwifi.cli simulate``: its options are
defined once, in ``asyncwifi.cli``) calls :func:`run_simulator`, which serves until
interrupted and prints the base URL, the credentials and the events' range.
:class:`SimulatorProcess` starts that command as a child process, reads the first line it
prints (JSON) and stops it on exit: load generators and benchmarks must not share an event
loop with the server they measure.

A child shares the parent's scaled time line through the system-wide monotonic clock: the
parent passes its clock's reading and the monotonic instant of that reading, and the child
runs an :class:`AnchoredClock` from them.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import TracebackType
from typing import IO, Any, Self

import aiohttp

from asyncwifi._clock import Clock, ScaledClock, SystemClock
from asyncwifi._protocol import require_positive
from asyncwifi.errors import ClientStateError, ConfigurationError
from asyncwifi.testing._defaults import SIMULATOR_DEFAULTS as D
from asyncwifi.testing._faults import Faults
from asyncwifi.testing._fleet_toml import write_fleet_toml
from asyncwifi.testing._server import Simulator
from asyncwifi.testing._tenant import Credentials
from asyncwifi.testing._util import iso_z

__all__ = ["AnchoredClock", "SimulatorProcess", "run_simulator", "serve_forever"]


class AnchoredClock:
    """A clock running ``speed`` times real time, reading ``start`` at monotonic ``anchor``.

    ``time.monotonic()`` is system-wide on Linux, so two processes given the same three
    numbers read the same time line (a :class:`~asyncwifi.ScaledClock` in the parent and
    this clock in the child).
    """

    __slots__ = ("anchor", "speed", "start")

    def __init__(self, speed: float, start: float, anchor: float) -> None:
        require_positive(speed, "speed", error=ConfigurationError)
        self.speed = float(speed)
        self.start = float(start)
        self.anchor = float(anchor)

    @classmethod
    def describe(cls, clock: Clock) -> tuple[float, float, float]:
        """``(speed, start, anchor)`` of ``clock`` now: what a child needs to share it."""
        if isinstance(clock, ScaledClock | AnchoredClock):
            speed = clock.speed
        elif isinstance(clock, SystemClock):
            speed = 1.0
        else:
            raise ConfigurationError(f"cannot share {clock!r} with another process")
        anchor = time.monotonic()
        return speed, clock.now(), anchor

    def now(self) -> float:
        return self.start + (time.monotonic() - self.anchor) * self.speed

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(max(0.0, seconds) / self.speed)

    def real(self, seconds: float) -> float:
        return max(0.0, seconds) / self.speed

    def __repr__(self) -> str:
        return f"AnchoredClock(speed={self.speed:g}, start={self.start:.3f})"


def _describe(sim: Simulator, speed: float) -> dict[str, Any]:
    limiter = sim.limiter
    organizations = [o._asdict() for o in sim.organizations]
    return {
        "base_url": sim.base_url,
        "client_key": sim.client_key,
        "client_secret": sim.client_secret,
        "organization": sim.organization,
        "pid": os.getpid(),
        "speed": speed,
        "mode": limiter.mode,
        "limits": limiter.limits,
        "events": len(sim.data.events),
        "events_start": iso_z(sim.data.events.start),
        "events_end": iso_z(sim.data.events.end),
        "contacts": len(sim.data.contacts),
        "organizations": organizations,
    }


def _banner(info: dict[str, Any], speed: float, minute: float, fleet: Path | None) -> str:
    """The human summary ``asyncwifi simulate`` prints on start."""
    orgs = info["organizations"]
    many = len(orgs) > 1
    each = " each" if many else ""
    lines = [
        f"asyncwifi simulator listening on {info['base_url']}",
        f"  organization:  {info['organization']}"
        + (f" (the first of {len(orgs)})" if many else ""),
        f"  client key:    {info['client_key']}",
        f"  client secret: {info['client_secret']}",
        f"  limits:        {info['limits']['minute']}/minute, {info['limits']['day']}/day "
        f"({info['mode']}){each}",
        f"  clock speed:   {speed:g} (a minute lasts {minute:g} s)",
        f"  data:          {info['contacts']} contacts, {info['events']} events "
        f"from {info['events_start']} to {info['events_end']}{each}",
        "Point the SDK or the asyncwifi command at it:",
        f"  export ASYNCWIFI_BASE_URL={info['base_url']} ASYNCWIFI_ALLOW_HTTP=1 "
        f"ASYNCWIFI_ORGANIZATION={info['organization']}",
        f"  export ASYNCWIFI_CLIENT_KEY={info['client_key']} "
        f"ASYNCWIFI_CLIENT_SECRET={info['client_secret']}",
        f"  asyncwifi events backfill --since {info['events_start'][:10]} "
        f"--until {info['events_end'][:10]} --out events.jsonl",
    ]
    if fleet is not None:
        lines.append(f"The {len(orgs)} organizations' fleet.toml: {fleet}")
    elif many:
        lines.append(f"The other {len(orgs) - 1} organizations, each its own key and limits:")
        lines += [
            f"  export ASYNCWIFI_ORGANIZATION={o['organization']} "
            f"ASYNCWIFI_CLIENT_KEY={o['client_key']} ASYNCWIFI_CLIENT_SECRET={o['client_secret']}"
            for o in orgs[1:]
        ]
    lines.append("Press Ctrl+C to stop.")
    return "\n".join(lines) + "\n"


async def serve_forever(
    *,
    host: str = D.host,
    port: int = D.port,
    speed: float = D.speed,
    clock: Clock | None = None,
    json_output: bool = False,
    warm: bool = False,
    fleet_toml: str | os.PathLike[str] | None = None,
    out: IO[str] | None = None,
    **options: Any,
) -> None:
    """Serve a :class:`Simulator` until cancelled, after printing where and with what.

    ``speed`` > 1 runs a :class:`~asyncwifi.ScaledClock` (``speed=100``: a minute lasts
    0.6 s) unless ``clock`` is given; ``warm`` encodes every event before serving;
    ``json_output`` prints one JSON line (for programs) instead of the human summary;
    ``fleet_toml`` writes the organizations' fleet.toml there; ``options`` are
    :class:`Simulator` keywords (``organizations=N`` serves N).
    """
    if clock is None:
        clock = ScaledClock(speed) if speed != 1.0 else SystemClock()
    stream = out or sys.stdout
    sim = Simulator(clock=clock, host=host, port=port, **options)
    if warm:
        for tenant in sim.tenants:
            tenant.data.events.warm(hold=True)
    async with sim:
        info = _describe(sim, speed)
        fleet = None
        if fleet_toml is not None:
            try:
                fleet = write_fleet_toml(fleet_toml, sim.base_url, sim.organizations)
            except OSError as exc:
                raise ConfigurationError(
                    f"cannot write the fleet.toml {fleet_toml}: {exc.strerror or exc}"
                ) from None
            info["fleet_toml"] = str(fleet)
        if json_output:
            stream.write(json.dumps(info) + "\n")
        else:
            stream.write(_banner(info, speed, clock.real(60.0), fleet))
        stream.flush()
        await asyncio.Event().wait()


def run_simulator(
    port: int = D.port, host: str = D.host, speed: float = D.speed, **options: Any
) -> None:
    """Blocking entry point for the CLI: :func:`serve_forever` until Ctrl+C or SIGTERM."""

    async def runner() -> None:
        task = asyncio.current_task()
        loop = asyncio.get_running_loop()
        if task is not None:
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.add_signal_handler(sig, task.cancel)
        with contextlib.suppress(asyncio.CancelledError):
            await serve_forever(host=host, port=port, speed=speed, **options)

    asyncio.run(runner())


# -- a simulator in a child process ----------------------------------------------------------

_FLAGS = {
    "seed": "--seed",
    "contacts": "--contacts",
    "hotspots": "--hotspots",
    "segments": "--segments",
    "events": "--events",
    "events_start": "--events-start",
    "events_end": "--events-end",
    "organization": "--organization",
    "client_key": "--client-key",
    "client_secret": "--client-secret",
    "minute_limit": "--minute-limit",
    "day_limit": "--day-limit",
    "rate_limit_mode": "--rate-limit-mode",
    "scroll_ttl": "--scroll-ttl",
    "contacts_max_size": "--contacts-max-size",
    "event_shape": "--event-shape",
    "token_ttl": "--token-ttl",
    "organizations": "--orgs",
    "live_events_per_second": "--live-events-per-second",
    "fleet_toml": "--fleet-toml",
    "host": "--host",
    "port": "--port",
}
_SWITCHES = {
    "count_refused": "--count-refused",
    "scroll_single_use": "--scroll-single-use",
    "warm": "--warm",
}


class SimulatorProcess:
    """A :class:`Simulator` in a child process (``python -m asyncwifi.cli simulate``, which is
    ``asyncwifi simulate``: it needs the ``cli`` extra; an in-process :class:`Simulator`
    needs nothing).

    Use ``with SimulatorProcess(...) as proc:`` or ``async with``; then ``proc.base_url``,
    ``proc.client_key``, ``proc.client_secret``, ``proc.organization`` and ``proc.clock``
    (the parent's clock, whose time line the child shares). Keywords are those of
    :class:`Simulator` (data sizes, limits, mode, faults, ``organizations``, ...) plus
    ``warm`` and ``fleet_toml`` (a path: the child writes the organizations' fleet.toml);
    ``proc.organizations`` lists each organization's credentials.
    """

    def __init__(
        self,
        *,
        clock: Clock | None = None,
        speed: float | None = None,
        python: str = sys.executable,
        startup_timeout: float = 60.0,
        **options: Any,
    ) -> None:
        if clock is None:
            clock = ScaledClock(speed) if speed not in (None, 1.0) else SystemClock()
        #: the parent's clock; the child reads the same time line
        self.clock = clock
        self.python = python
        self.startup_timeout = startup_timeout
        self.options = options
        self.base_url = ""
        self.client_key = ""
        self.client_secret = ""
        self.organization = ""
        #: each organization's (organization, client_key, client_secret), the first first
        self.organizations: list[Credentials] = []
        #: everything the child printed on start (base URL, credentials, limits, sizes)
        self.info: dict[str, Any] = {}
        self._proc: subprocess.Popen[str] | None = None

    def __repr__(self) -> str:
        pid = self._proc.pid if self._proc else None
        return f"<SimulatorProcess pid={pid} {self.base_url or 'not started'}>"

    @property
    def pid(self) -> int | None:
        """The child's process id while it runs."""
        return self._proc.pid if self._proc else None

    def command(self) -> list[str]:
        """The child's command line."""
        speed, start, anchor = AnchoredClock.describe(self.clock)
        cmd = [self.python, "-m", "asyncwifi.cli", "simulate", "--format", "json", "--port", "0"]
        cmd += [
            "--speed",
            repr(speed),
            "--clock-start",
            repr(start),
            "--clock-anchor",
            repr(anchor),
        ]
        # as a Simulator: whole-second resets unless asked (the command's default follows speed)
        fractional = self.options.get("fractional_reset", False)
        cmd.append("--fractional-reset" if fractional else "--whole-reset")
        for key, value in self.options.items():
            if key == "fractional_reset":
                continue
            if key in _FLAGS:
                cmd += [_FLAGS[key], str(value)]
            elif key in _SWITCHES:
                if value:
                    cmd.append(_SWITCHES[key])
            elif key == "object_limits":
                for name, count in dict(value).items():
                    cmd += ["--object-limit", f"{name}={count}"]
            elif key == "gone_paths":
                for pattern in value:
                    cmd += ["--gone-path", pattern]
            elif key == "faults":
                if value is not None:
                    cmd += ["--faults", json.dumps(dataclasses.asdict(value))]
            else:
                raise ConfigurationError(f"SimulatorProcess does not support the option {key!r}")
        return cmd

    def start(self) -> None:
        """Start the child and wait for its first line (blocking)."""
        if self._proc is not None:
            return
        proc = subprocess.Popen(
            self.command(),
            stdout=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        self._proc = proc
        assert proc.stdout is not None
        deadline = time.monotonic() + self.startup_timeout
        line = ""
        while not line:
            left = deadline - time.monotonic()
            ready = select.select([proc.stdout], [], [], max(0.0, left))[0] if left > 0 else []
            if not ready:
                self.stop()
                raise ClientStateError("the simulator process did not start in time")
            line = proc.stdout.readline().strip()
            if not line and proc.poll() is not None:
                self.stop()
                raise ClientStateError(f"the simulator process exited ({proc.returncode})")
        self.info = json.loads(line)
        self.base_url = self.info["base_url"]
        self.client_key = self.info["client_key"]
        self.client_secret = self.info["client_secret"]
        self.organization = self.info["organization"]
        self.organizations = [Credentials(**o) for o in self.info["organizations"]]

    def stop(self) -> None:
        """Stop the child (SIGTERM, then SIGKILL after 5 s) and reap it."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()

    async def _admin(
        self,
        method: str,
        what: str,
        organization: str | int | None = None,
        *,
        body: Any = None,
        **params: Any,
    ) -> Any:
        """Call the child's ``/_simulator/`` endpoint ``what``; its JSON answer."""
        query = {k: str(v) for k, v in params.items()}
        if organization is not None:
            query["organization"] = str(organization)
        url = f"{self.base_url}/_simulator/{what}"
        async with (
            aiohttp.ClientSession() as session,
            session.request(method, url, params=query, json=body) as resp,
        ):
            resp.raise_for_status()
            return await resp.json()

    async def counters(self, organization: str | int | None = None) -> dict[str, Any]:
        """The child's counters of one organization (id or index; default the first) as a
        dict (fetched over HTTP, outside the gateway)."""
        summary: dict[str, Any] = await self._admin("GET", "counters", organization)
        return summary

    async def revoke_key(self, organization: str | int) -> None:
        """Revoke one organization's key in the child (like ``sim.revoke_key``)."""
        await self._admin("POST", "revoke-key", organization)

    async def add_events(
        self, count: int, organization: str | int | None = None
    ) -> dict[str, list[str]]:
        """Add ``count`` events now to one organization, or to each when ``None`` (like
        ``sim.add_events``); the new ids by organization."""
        added: dict[str, list[str]] = await self._admin(
            "POST", "events", "*" if organization is None else organization, count=count
        )
        return added

    async def set_faults(self, faults: Faults) -> None:
        """Replace the child's faults (like ``sim.faults = faults``)."""
        await self._admin("PUT", "faults", body=dataclasses.asdict(faults))

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    async def __aenter__(self) -> Self:
        await asyncio.to_thread(self.start)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await asyncio.to_thread(self.stop)
