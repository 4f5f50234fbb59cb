"""``make bench-compare``: tenure's workload, side by side, on PgQueuer and Huey.

The same enqueue, drain and pickup measurements as ``make bench`` (its sizes,
from ``benchmarks.suite.config``), run in one go on:

- ``tenure-sqlite`` and ``tenure-postgres``: :mod:`.tenure_system`;
- ``pgqueuer-postgres``: PgQueuer 1.6 (:mod:`.pgqueuer_system`);
- ``huey-sqlite`` and ``huey-redis``: Huey 3.5 (:mod:`.huey_system`).

Each module's docstring says the setup chosen and why: each system in the
setup its documentation recommends. The competitors are installed from PyPI
into a virtual environment of their own (``.venv-compare``, pinned in
``requirements.txt``), used as installed packages only; :mod:`.runner` drives
them all through :class:`.system.System` and :mod:`.report` prints the table
(with tenure's ratio to each competitor) and writes the JSON document.
"""
