"""The generic shape for responses whose body the spec does not show.

Contacts get/events/devices/accountings, policies and logout (spec §4.1, §4.2) have bodies
marked "not shown". Rather than invent a model, they decode to a plain JSON object:
``GenericResponse`` is ``dict[str, Any]``. An empty body gives ``{}``; a body that is
JSON but not an object (an array, a scalar) is wrapped as ``{"data": <value>}`` so callers
always get a mapping and nothing is dropped.
"""

from __future__ import annotations

from typing import Any, TypeAlias

__all__ = ["GenericResponse"]

#: a "not shown" response body, decoded as a plain JSON object
GenericResponse: TypeAlias = dict[str, Any]
