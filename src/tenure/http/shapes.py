"""The one shape of every refusal and failure of the HTTP API; what it answers
on success is :mod:`tenure.shapes`, shared with the command line's ``--json``."""

from __future__ import annotations

from typing import Any

JsonObject = dict[str, Any]


def error_json(field: str | None, message: str) -> JsonObject:
    """Every refusal and failure: what was wrong (a request field, a header, or
    ``None`` when nothing the client sent was) and why, in words."""
    return {"error": {"field": field, "message": message}}
