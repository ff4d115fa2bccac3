"""What the gateway itself says: error bodies negotiated by ``Accept``, its 5xx messages.

gateway.md: "The 429 body follows the Accept header (JSON, HTML, XML or text)"; JSON is the
default (no header, ``*/*``, or nothing the gateway can produce).
"""

from __future__ import annotations

from html import escape

import msgspec

__all__ = ["UPSTREAM_MESSAGES", "negotiate", "render_error"]

#: the gateway's default messages for upstream failures
UPSTREAM_MESSAGES = {
    500: "An unexpected error occurred",
    502: "An invalid response was received from the upstream server",
    503: "Service Temporarily Unavailable",
    504: "The upstream server is timing out",
}

_TYPES = {
    "application/json": "json",
    "text/html": "html",
    "application/xhtml+xml": "html",
    "application/xml": "xml",
    "text/xml": "xml",
    "text/plain": "text",
}


def negotiate(accept: str | None) -> str:
    """``json``, ``html``, ``xml`` or ``text``: the highest-q type of ``accept`` we produce."""
    if not accept:
        return "json"
    best, best_q = "json", -1.0
    for order, item in enumerate(accept.split(",")):
        mime, *params = (p.strip() for p in item.split(";"))
        q = 1.0
        for param in params:
            if param.startswith("q="):
                try:
                    q = float(param[2:])
                except ValueError:
                    q = 0.0
        kind = "json" if mime in ("*/*", "application/*") else _TYPES.get(mime.lower())
        # ties keep the earlier entry, as listed by the client
        if kind is not None and q > 0 and q - order * 1e-9 > best_q:
            best, best_q = kind, q - order * 1e-9
    return best


def render_error(kind: str, message: str, request_id: str) -> tuple[bytes, str]:
    """The gateway's error body in ``kind`` and its content type."""
    if kind == "html":
        text = (
            '<!doctype html>\n<html>\n  <head>\n    <meta charset="utf-8">\n'
            "    <title>Error</title>\n  </head>\n  <body>\n    <h1>Error</h1>\n"
            f"    <p>{escape(message)}.</p>\n    <p>request_id: {escape(request_id)}</p>\n"
            "  </body>\n</html>\n"
        )
        return text.encode(), "text/html"
    if kind == "xml":
        text = (
            '<?xml version="1.0" encoding="UTF-8"?>\n<error>\n'
            f"  <message>{escape(message)}</message>\n"
            f"  <requestid>{escape(request_id)}</requestid>\n</error>\n"
        )
        return text.encode(), "application/xml"
    if kind == "text":
        return f"{message}\nrequest_id: {request_id}\n".encode(), "text/plain"
    return msgspec.json.encode({"message": message}), "application/json"
