"""The web dashboard of ``tenure serve``: the queue at a glance, its tasks, their
timelines, groups, workers, locks, periodic tasks and reports, with retry and
cancel, on the same server, store and token as the HTTP API.

Server-rendered (Jinja2), a small script of its own for live updates (server-sent
events driven by the event log) and selections, charts drawn as SVG on the
server: no build step, and nothing loaded from anywhere but this server.
"""

from tenure.http.dashboard.site import Site

__all__ = ["Site"]
