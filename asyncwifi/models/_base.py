"""The one base of every model, and the helpers all resources share.

Every model is a msgspec ``Struct`` with camelCase wire names, keyword-only construction,
defaults on every field (a field the server omits never fails decoding), unknown fields
tolerated (msgspec ignores them by default), ``omit_defaults`` so request bodies carry only
what the caller set, and ``gc=False`` because models never form reference cycles.
"""

from __future__ import annotations

import msgspec

__all__ = ["KeyValue", "Model"]


class Model(msgspec.Struct, rename="camel", kw_only=True, omit_defaults=True, gc=False):
    """Base of every asyncwifi model (see the module docstring for why each option)."""


class KeyValue(Model):
    """A ``{key, value}`` pair (custom fields, geofence metadata)."""

    key: str | None = None
    #: a string in the documented shapes; numbers and booleans are accepted too, since a
    #: dashboard-defined custom field or geofence metadata may carry them (spec §6.2: not shown)
    value: str | int | float | bool | None = None
