"""The gateway in front of the simulated API: Kong's limits, faults and headers, per key.

Each request goes through the gateway middleware, in this order (gateway.md, spec §5, §7):

0. the organization whose quota it spends: a login's ``clientKey``, else the organization
   its bearer token claims (Kong counts per consumer); neither: the first organization;
1. faults decided for the request (drop before anything, inbound delay);
2. that organization's request limits (minute, day): a 429 here never reaches the API;
3. injected 5xx errors (counted by the gateway, nothing executed);
4. removed endpoints (410), unknown routes (404) and methods (405);
5. the bearer token, checked by that organization (403 ``Access Denied``), except on the
   login;
6. the API handler on that organization's state, then its per-object limits (a bodyless
   429 *after* execution);
7. headers on every response, truncation, added latency, drop after execution.
"""

from __future__ import annotations

import contextlib
import fnmatch
import math
import random
import secrets
from collections import Counter
from email.utils import formatdate
from typing import Any

from aiohttp import web

from asyncwifi._clock import Clock
from asyncwifi.testing._api import (
    LOGIN_PATH,
    OBJECTS,
    TOKEN,
    ApiFault,
    drop_connection,
    json_response,
)
from asyncwifi.testing._auth import TokenRejected
from asyncwifi.testing._faults import Fate, FaultPlan, Faults
from asyncwifi.testing._kong import UPSTREAM_MESSAGES, negotiate, render_error
from asyncwifi.testing._tenant import TENANT, Tenant, Tenants
from asyncwifi.testing._util import BadParameter

__all__ = ["ADMIN", "OPENAPI_PATH", "SENT_AT", "Gateway"]

#: path prefix of the simulator's own endpoints (not behind the gateway)
ADMIN = "/_simulator/"
#: where the API's OpenAPI definition is served (spec §9.4): no token, never counted
OPENAPI_PATH = "/openapi.json"
#: a test client's send time (clock seconds): the gateway counts at arrival, not at the time
#: a simulator starved of CPU gets round to the request
SENT_AT = "X-Sim-Sent-At"
_VIA = "1.1 kong/3.9.1"


class Gateway:
    """The gateway of one simulator: its faults, and each organization's limits and tokens.

    ``gone_paths`` are shell-style path patterns answered with 410 (spec §9).
    """

    def __init__(
        self, tenants: Tenants, clock: Clock, gone_paths: tuple[str, ...], faults: Faults | None
    ) -> None:
        self.tenants = tenants
        self.clock = clock
        self.gone_paths = gone_paths
        self._plan = FaultPlan(faults)
        self._competitor_next = math.inf
        self._arrived = -math.inf  # the latest arrival counted (arrivals never go back)
        # request ids identify one request, in logs too: unique across runs, not seeded data
        self._request_ids = random.Random(secrets.randbits(64))
        if faults is not None:
            self.faults = faults

    @property
    def faults(self) -> Faults:
        """The faults in force; assigning a new value restarts its seeded sequence."""
        return self._plan.faults

    @faults.setter
    def faults(self, value: Faults | None) -> None:
        self._plan = FaultPlan(value)
        rate = self._plan.faults.hidden_competitor
        self._competitor_next = self.clock.now() + 60.0 / rate if rate > 0 else math.inf

    def _competitor(self, now: float) -> None:
        """Spend the hidden competitor's requests due by ``now`` (a fault), on every key."""
        rate = self._plan.faults.hidden_competitor
        while self._competitor_next <= now:
            for tenant in self.tenants:  # one competitor per key
                if tenant.limiter.decide(self._competitor_next).allowed:
                    tenant.counters.competitor_hits += 1
            self._competitor_next += 60.0 / rate

    def _arrival(self, request: web.Request) -> float:
        """The clock time the gateway counts the request at: now, or (a test whose simulator
        process may be starved of CPU, and so read its clock late: tests/soak) the sender's
        ``X-Sim-Sent-At`` if earlier; never before the previous arrival."""
        now = self.clock.now()
        with contextlib.suppress(ValueError):
            now = min(now, float(request.headers.get(SENT_AT, "inf")))
        self._arrived = now = max(now, self._arrived)
        return now

    def _request_id(self) -> str:
        return f"{self._request_ids.getrandbits(128):032x}"

    @web.middleware
    async def middleware(self, request: web.Request, handler: Any) -> web.StreamResponse:
        """The aiohttp middleware: every request but the admin's goes through here."""
        if request.path.startswith(ADMIN) or request.path == OPENAPI_PATH:
            return await handler(request)  # type: ignore[no-any-return]
        tenant = request[TENANT] = await self.tenants.of_request(request)
        c = tenant.counters
        c.requests += 1
        resource = request.match_info.route.resource
        c.by_endpoint[f"{request.method} {resource.canonical if resource else request.path}"] += 1
        fate = self._plan.fate(request.method, request.path)
        if fate.drop_before:
            c.faults["drop_before"] += 1
            return drop_connection(request)
        if fate.inbound_delay:
            await self.clock.sleep(fate.inbound_delay)
        now = self._arrival(request)
        self._competitor(now)
        decision = tenant.limiter.decide(now, noise=fate.remaining_noise)
        request_id = self._request_id()
        if decision.allowed:
            c.admit(now)
            resp = await self._upstream(request, handler, fate, now, tenant)
        else:
            c.rate_limited += 1
            kind = "html" if fate.html_429 else negotiate(request.headers.get("Accept"))
            if fate.html_429:
                c.faults["html_429"] += 1
            body, ctype = render_error(kind, "API rate limit exceeded", request_id)
            resp = web.Response(status=429, body=body, content_type=ctype, charset="utf-8")
        headers = resp.headers
        if fate.date_429 and not decision.allowed:
            c.faults["date_429"] += 1
            headers["Retry-After"] = formatdate(now + decision.reset, usegmt=True)
        else:
            for name, value in decision.headers:
                headers[name] = value
        headers["X-Kong-Request-Id"] = request_id
        headers["Via"] = _VIA
        headers["X-Kong-Proxy-Latency"] = "0"
        if decision.allowed:
            headers["X-Kong-Upstream-Latency"] = "1"
        if fate.delay:
            if fate.spike:
                c.faults["spike"] += 1
            await self.clock.sleep(fate.delay)
        if fate.drop_after:
            c.faults["drop_after"] += 1
            return drop_connection(request)
        c.responses_by_status[resp.status] += 1
        return resp

    async def _upstream(
        self, request: web.Request, handler: Any, fate: Fate, now: float, tenant: Tenant
    ) -> web.Response:
        """Everything behind the request limits: errors, routing, auth, API, object limits
        (with ``tenant``'s tokens and limits)."""
        counters = tenant.counters
        if fate.error_status:
            counters.faults["error"] += 1
            status = fate.error_status
            if fate.error_empty:
                return web.Response(status=status)
            return json_response({"message": UPSTREAM_MESSAGES.get(status, "error")}, status)
        path = request.path
        if any(fnmatch.fnmatchcase(path, p) for p in self.gone_paths):
            return json_response({"message": "This endpoint has been removed"}, 410)
        problem = request.match_info.http_exception
        if problem is not None:
            if problem.status == 405:
                not_allowed = json_response({"message": "Method not allowed"}, 405)
                allow = problem.headers.get("Allow")
                if allow:
                    not_allowed.headers["Allow"] = allow
                return not_allowed
            return json_response({"message": "no Route matched with those values"}, 404)
        if path != LOGIN_PATH:
            revoke_every = self._plan.faults.revoke_tokens_every
            before = (now // revoke_every) * revoke_every if revoke_every else -math.inf
            try:
                request[TOKEN] = tenant.auth.verify(
                    request.headers.get("Authorization"), now, before
                )
            except TokenRejected as exc:
                counters.auth_failures[exc.reason] += 1
                if exc.reason == "revoked_early":
                    counters.faults["revocation"] += 1
                return json_response({"message": "Access Denied"}, 403)
        limits = tenant.object_limiter
        snapshot = limits.snapshot(now) if limits.limits else None
        try:
            resp: web.Response = await handler(request)
        except ApiFault as exc:
            resp = json_response({"message": exc.message}, exc.status)
        except BadParameter as exc:
            resp = json_response({"message": str(exc)}, 409)
        touched = request.get(OBJECTS, {}) if resp.status < 400 else {}
        # spec §8: what the API executed is the volume, a 429 put over it too; a kind (or
        # route) that exchanged nothing is not listed, as the client does not list it
        if exchanged := +Counter(touched):
            counters.objects_served.update(exchanged)
            route = request.match_info.route.resource
            endpoint = f"{request.method} {route.canonical if route else request.path}"
            counters.objects_by_endpoint[endpoint] += exchanged.total()
        if snapshot is not None:
            object_headers, stop = limits.settle(now, snapshot, touched)
            if stop:
                # gateway.md: executed, then replaced by a 429 with no body
                counters.object_limited += 1
                resp = web.Response(status=429)
            for name, value in object_headers:
                resp.headers[name] = value
        if fate.truncate_at and 200 <= resp.status < 300 and resp.body:
            body = bytes(resp.body)  # type: ignore[arg-type]
            counters.faults["truncated"] += 1
            resp.body = body[: max(1, int(len(body) * fate.truncate_at))]
        return resp
