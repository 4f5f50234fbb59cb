"""tenure's HTTP API, metrics and dashboard inside an ASGI application of your
own, under ``/queue``: the recipe of ``docs/how-to/http-api.md``, which the test
suite mounts as it is here (``tests/integration/test_http_mounted.py``).

Everything under ``/queue`` asks for the token, as it does at a server's root:
the API and ``/metrics`` a bearer token, the dashboard a login with it. The
dashboard's links, forms, redirects and cookies stay under ``/queue``; the rest
of your application is untouched.
"""

from __future__ import annotations

from fastapi import FastAPI
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Mount, Route

from tenure import App
from tenure.http import create_app


async def home(request: Request) -> PlainTextResponse:
    """A page of your own application."""
    return PlainTextResponse("the shop")


def starlette_site(queue: App, token: str) -> Starlette:
    """A Starlette application with tenure's under ``/queue``."""
    return Starlette(
        routes=[
            Route("/", home),
            Mount("/queue", app=create_app(queue, token=token)),
        ]
    )


def fastapi_site(queue: App, token: str) -> FastAPI:
    """A FastAPI application with tenure's under ``/queue``."""
    site = FastAPI()
    site.add_api_route("/", home, response_class=PlainTextResponse)
    site.mount("/queue", create_app(queue, token=token))
    return site
