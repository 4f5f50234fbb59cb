"""The HTTP API of a tenure App: enqueue registered tasks by name, list, show,
retry and cancel tasks, read their events, the queue's figures and the live
workers, all under ``/api``, behind a bearer token. ``tenure serve`` runs it
under uvicorn; :func:`create_app` makes the ASGI application to mount anywhere.

Why Starlette rather than FastAPI: FastAPI would add pydantic and derive the
request checks and the OpenAPI document from type hints. Here both already
exist and must stay one: tenure validates every input at its own boundary
(:class:`~tenure.errors.InvalidInput`, naming the field), and a second layer of
models would disagree with it about limits and messages; and the document is a
contract, rendered (:mod:`tenure.http.openapi`) from tenure's own declarations
(one table of routes whose parameters each carry their schema beside the
reader that checks them, :mod:`tenure.http.surface`; the answers' schemas
derived from the dataclasses tenure serialises) and checked against the live
responses by schemathesis in the test suite, instead of whatever the
decorators happen to produce. What remains is routing, requests, responses and
middleware, which is Starlette (FastAPI's own foundation) with one dependency
of its own, anyio.

Needs the ``web`` extra: ``pip install 'tenure[web]'``.
"""

from __future__ import annotations

import importlib.util

if importlib.util.find_spec("starlette") is None:  # pragma: no cover - the web extra
    raise ImportError("the HTTP API needs the web extra: pip install 'tenure[web]'")

from tenure.http.server import create_app

__all__ = ["create_app"]
