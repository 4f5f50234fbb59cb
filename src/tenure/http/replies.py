"""How the API answers: JSON, never cached (every answer is the queue as it is
now, and may carry task data). Shared by every route."""

from __future__ import annotations

from collections.abc import Mapping

from starlette.responses import JSONResponse

NO_STORE = {"Cache-Control": "no-store"}
"""Every answer is the queue as it is now, and may carry task data: never cached."""


def reply(
    content: object, status: int = 200, headers: Mapping[str, str] | None = None
) -> JSONResponse:
    """A JSON answer, never cached."""
    return JSONResponse(content, status, headers={**NO_STORE, **(headers or {})})
