"""The base URL, judged by what answers there: a wrong one is a setting to fix, said at once.

Nothing here does I/O. A client's first contact tells a wrong base URL from an outage
(issue 33 item 9, issue 40): before anything has ever answered at the address, a refused
connection or a host name that does not resolve is a wrong URL at once, and a timeout or a
dropped connection is one at its second attempt (a network may lose one request; the
retry policy is for a server that answered before). A TLS failure is not one: a
certificate to look into, raised as the transport's error. A login route that is
not there (404, 405) and an answer that is not JSON (a proxy's sign-in page, a web site)
are wrong URLs too. Each is one :class:`~asyncwifi.errors.ConfigurationError` naming the
URL and where it was set, never a wait. A base URL ending with the API's version
(``/v1``) is refused before any request: every path of the API begins with it (spec §4),
so it would be doubled; any other path is allowed (a gateway may serve the API under a
prefix), and its 404 on the login says the path is the likely culprit.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from yarl import URL

from asyncwifi._auth import redact_url
from asyncwifi.errors import ApiError, ConfigurationError, DecodeError, TransportError

__all__ = ["FIRST_CONTACT_ATTEMPTS", "Address", "check_base_path", "media_type"]

#: the attempts a request that found nothing answering (a timeout, a dropped connection)
#: gets before anything ever answered at the base URL: then it is the URL's fault
FIRST_CONTACT_ATTEMPTS = 2
#: a path that ends with the API's version (``/v1``, ``/api/v2/``): spec §4's paths hold it
_VERSION_TAIL = re.compile(r"/v\d+/*$", re.IGNORECASE)
#: the statuses of a login route that is not there
_NO_ROUTE = (404, 405)


def _path_of(base_url: str) -> str:
    """The path of ``base_url`` (``""`` for the host alone or ``/``)."""
    try:
        path = URL(base_url).path
    except ValueError:
        return ""
    return "" if path in ("", "/") else path


def check_base_path(base_url: str, source: str) -> None:
    """``ConfigurationError`` for a base URL whose path ends with the API's version, before
    any request: ``/v1/sts/login/services`` would become ``/v1/v1/...``."""
    path = _path_of(base_url)
    if _VERSION_TAIL.search(path):
        raise ConfigurationError(
            f"the base URL {redact_url(base_url)} ends with the API's version ({path}): the "
            "API's paths begin with it (/v1/sts/login/services), so it would be doubled; "
            f"give the base URL without it (set by {source})"
        )


def media_type(headers: Mapping[str, str]) -> str | None:
    """The declared media type of a body that is not JSON (``text/html``); None when it is
    JSON (``application/json``, ``...+json``) or not declared at all."""
    declared = headers.get("Content-Type", "").split(";", 1)[0].strip().lower()
    if not declared or declared.endswith(("/json", "+json")):
        return None
    return declared


class Address:
    """A client's base URL and what its first answers said of it (one per client)."""

    __slots__ = ("_path", "answered", "shown", "source")

    def __init__(self, base_url: str, source: str) -> None:
        #: the URL as it may be shown (its password hidden)
        self.shown = redact_url(base_url.rstrip("/"))
        #: where the URL was set (``ASYNCWIFI_BASE_URL``, ``base_url``), named in each error
        self.source = source
        #: whether any response ever came back (then an unreachable host is an outage)
        self.answered = False
        self._path = _path_of(base_url)

    def _check(self) -> str:
        return f"check the base URL (set by {self.source})"

    def unreached(self, exc: TransportError, attempt: int, max_attempts: int) -> Exception | None:
        """The error to raise instead of ``exc`` (attempt ``attempt`` of at most
        ``max_attempts`` found nothing answering) when it shows a wrong base URL; None when
        something answered here before, or the attempt may be repeated first."""
        if self.answered:
            return None
        if exc.kind == "tls":
            return None
        at_once = exc.unreachable
        if not at_once and attempt < min(FIRST_CONTACT_ATTEMPTS, max_attempts):
            return None
        what = f"cannot reach the API at {self.shown} ({exc.message})"
        if not at_once:
            what = f"no answer from the API at {self.shown} in {attempt} attempts ({exc.message})"
        return ConfigurationError(f"{what} and nothing has ever answered there: {self._check()}")

    def not_json(self, method: str, path: str, headers: Mapping[str, str]) -> DecodeError | None:
        """The error for an answer that failed to decode and says it is not JSON (a proxy's
        page, a web site): not a body cut in transit, so not worth a retry. None otherwise."""
        declared = media_type(headers)
        if declared is None:
            return None
        error = DecodeError(
            f"the server answered {method} {self.shown}{path} with {declared}, not JSON "
            "(a proxy or a wrong base URL?)"
        )
        error.content_type = declared
        return error

    def login_refused(self, exc: Exception) -> ConfigurationError | None:
        """The error for a login that found no login route (404, 405) or an answer that is
        not JSON: the base URL is wrong, whatever answered there. None for other failures."""
        if isinstance(exc, DecodeError) and exc.content_type is not None:
            return ConfigurationError(f"{exc.message}: {self._check()}")
        if not (isinstance(exc, ApiError) and exc.status in _NO_ROUTE):
            return None
        hint = ""
        if self._path:
            hint = (
                f"; it has a path ({self._path}), and the API's paths (/v1/..., /v2/...) "
                "follow the base URL directly: it is usually the host alone"
            )
        return ConfigurationError(
            f"the API at {self.shown} has no login route: {exc.method} {exc.path} answered "
            f"{exc.status} ({exc.message}); {self._check()}{hint}"
        )

    def __repr__(self) -> str:
        return f"Address({self.shown!r}, answered={self.answered})"
