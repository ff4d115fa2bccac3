"""What the ``asyncwifi webhooks serve`` command plugs into a receiver.

- :class:`JsonlSink`: a handler that appends each event's body to a JSON Lines file;
- :func:`load_handler`: a handler named ``"package.module:function"``;
- :func:`secrets_from_env`: the shared secrets from an environment variable (comma
  separated, for rotation), never from the command line, where ``ps`` would show them.
"""

from __future__ import annotations

import importlib
import os
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import IO, TYPE_CHECKING, Final, cast

from asyncwifi.errors import ConfigurationError
from asyncwifi.models import WebhookPayload
from asyncwifi.webhooks._receiver import Handler, WebhookContext

if TYPE_CHECKING:
    from asyncwifi.engine import PiiPolicy

__all__ = ["SECRET_ENV_VAR", "JsonlSink", "load_handler", "secrets_from_env"]

#: The environment variable the CLI reads the webhook secret(s) from.
SECRET_ENV_VAR: Final = "ASYNCWIFI_WEBHOOK_SECRET"


class JsonlSink:
    """A handler writing one event per line to ``path`` (appending), exactly as received.

    The line is the request body with its line breaks turned into spaces: JSON strings
    cannot hold a raw line break, so this changes only whitespace between tokens and keeps
    every field, known or not. Each line is flushed before the handler returns (a killed
    process loses none); ``fsync=True`` also syncs it to disk (survives a power loss, but
    blocks the event loop for the duration of the sync). Delivery being at least once,
    a consumer de-duplicates by ``event.nonce`` if it must. ``pii``: the PII policy applied
    to each line before it is written (issue 41; the line is then re-encoded JSON).
    """

    __slots__ = ("_file", "_lock", "fsync", "path", "pii")

    def __init__(
        self, path: str | os.PathLike[str], *, fsync: bool = False, pii: PiiPolicy | None = None
    ) -> None:
        self.path = Path(path)
        self.fsync = fsync
        self.pii = pii
        self._file: IO[bytes] | None = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"JsonlSink({str(self.path)!r}, fsync={self.fsync})"

    def __call__(self, payload: WebhookPayload, context: WebhookContext) -> None:
        body = self.pii.scrub(context.body) if self.pii else context.body
        line = body.replace(b"\r", b" ").replace(b"\n", b" ").strip() + b"\n"
        with self._lock:
            if self._file is None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self._file = open(self.path, "ab")  # noqa: SIM115 - closed in close()
            self._file.write(line)
            self._file.flush()
            if self.fsync:
                os.fsync(self._file.fileno())

    def close(self) -> None:
        """Close the file (it is reopened on the next event)."""
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None


def load_handler(spec: str) -> Handler:
    """Import the handler ``"package.module:function"`` (or ``module:object.attribute``)."""
    module_name, sep, qualname = spec.partition(":")
    if not sep or not module_name or not qualname:
        raise ConfigurationError(f"handler must look like 'package.module:function', not {spec!r}")
    try:
        target: object = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigurationError(f"cannot import handler module {module_name!r}: {exc}") from exc
    for part in qualname.split("."):
        try:
            target = getattr(target, part)
        except AttributeError:
            raise ConfigurationError(f"{module_name!r} has no attribute {qualname!r}") from None
    if not callable(target):
        raise ConfigurationError(f"handler {spec!r} is not callable")
    return cast(Handler, target)


def secrets_from_env(
    name: str = SECRET_ENV_VAR, *, environ: Mapping[str, str] | None = None
) -> list[str]:
    """The comma-separated secrets in ``$name`` (blanks dropped); an error if there are none.

    The error names the variable, never its value.
    """
    env = os.environ if environ is None else environ
    secrets = [part.strip() for part in env.get(name, "").split(",")]
    secrets = [s for s in secrets if s]
    if not secrets:
        raise ConfigurationError(f"set the webhook secret in the environment variable {name}")
    return secrets
