"""``python -m chaos`` (what ``make chaos`` runs): every scenario on every store,
one figure line each; exit code 1 if any invariant was violated, a check could
not say (it raised: ``unknown``) or a scenario could not be run (one this
machine cannot run, for want of root or a program, is said in one line and
skipped).

    python -m chaos [--quick] [--stores sqlite,postgres] [--only NAME[,NAME]]
                    [--postgres URL] [--keep]

PostgreSQL scenarios run in a database of their own, created on the server of
``--postgres`` (default ``$TENURE_TEST_POSTGRES_URL``, else the local server)
and dropped afterwards; pg-crash makes a private cluster instead (it needs
Debian's postgresql-15 binaries). Each run's journals and logs are kept when it
fails, or with ``--keep``, and their folder is printed.
"""

from __future__ import annotations

import argparse
import logging
import os
import shutil
import sys
import tempfile
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import NoReturn
from urllib.parse import urlsplit, urlunsplit

from chaos import CannotRunHere, ChaosError
from chaos.scenarios import SCENARIOS, STORES, Outcome, Profile, run

SHARED = os.environ.get("TENURE_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/postgres")
SHOWN_VIOLATIONS = 20


class Parser(argparse.ArgumentParser):
    """A mistake on the command line is one line on stderr, exit code 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"python -m chaos: {message} (see --help)\n")


def parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = Parser(prog="python -m chaos", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the quick profile (minutes in all)")
    parser.add_argument("--stores", default=",".join(STORES), help="comma-separated stores")
    parser.add_argument("--only", help="comma-separated scenarios (default: all)")
    parser.add_argument("--postgres", default=SHARED, help="a server where databases are made")
    parser.add_argument("--keep", action="store_true", help="keep every run's journals and logs")
    args = parser.parse_args(argv)
    args.stores = _choices(parser, args.stores, STORES, "store")
    args.only = _choices(parser, args.only or ",".join(SCENARIOS), tuple(SCENARIOS), "scenario")
    if not any(store in SCENARIOS[name].stores for name in args.only for store in args.stores):
        parser.error(f"{', '.join(args.only)} never runs on {', '.join(args.stores)}")
    return args


def _choices(parser: Parser, given: str, known: tuple[str, ...], what: str) -> list[str]:
    chosen = [part.strip() for part in given.split(",") if part.strip()]
    for part in chosen:
        if part not in known:
            parser.error(f"unknown {what} {part!r}; choose from {', '.join(known)}")
    if not chosen:
        parser.error(f"no {what} given")
    return chosen


@contextmanager
def shared_database(admin_url: str) -> Iterator[str]:
    """A database of its own on the server of ``admin_url``, dropped afterwards
    (tables never go in the database the URL names)."""
    import psycopg  # noqa: PLC0415 - PostgreSQL only
    from psycopg import sql  # noqa: PLC0415

    dbname = f"tenure_chaos_{uuid.uuid4().hex[:12]}"
    try:
        admin = psycopg.connect(admin_url, autocommit=True, connect_timeout=5)
    except psycopg.OperationalError as exc:
        first = str(exc).strip().splitlines()[0]
        raise ChaosError(f"PostgreSQL unreachable at {admin_url}: {first}") from None
    with admin:
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(dbname)))
    try:
        yield urlunsplit(urlsplit(admin_url)._replace(path="/" + dbname))
    finally:
        with psycopg.connect(admin_url, autocommit=True) as admin:
            admin.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(dbname))
            )


def run_one(name: str, store: str, profile: Profile, args: argparse.Namespace) -> Outcome:
    folder = Path(tempfile.mkdtemp(prefix=f"tenure-chaos-{name}-{store}-"))
    own_database = store == "postgres" and name != "pg-crash"
    try:
        with shared_database(args.postgres) if own_database else nullcontext(None) as url:
            outcome = run(name, store, profile, folder, url=url)
    except ChaosError as exc:
        if any(folder.iterdir()):
            raise ChaosError(f"{str(exc).splitlines()[0]} (logs in {folder})") from exc
        shutil.rmtree(folder, ignore_errors=True)
        raise
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    if outcome.verdict.valid is True and not args.keep:
        shutil.rmtree(folder, ignore_errors=True)
    return outcome


def main(argv: Sequence[str] | None = None) -> int:
    args = parse(argv)
    logging.basicConfig(level=logging.ERROR, format="%(message)s")
    # The harness's own pool replaces connections a restart broke: not news.
    logging.getLogger("psycopg.pool").setLevel(logging.ERROR)
    profile: Profile = "quick" if args.quick else "full"
    failed = False
    for name in args.only:
        for store in (s for s in args.stores if s in SCENARIOS[name].stores):
            try:
                outcome = run_one(name, store, profile, args)
            except CannotRunHere as exc:
                print(f"{name} {store}: not run here: {exc}", file=sys.stderr)
                continue
            except ChaosError as exc:
                print(f"{name} {store}: not run: {str(exc).splitlines()[0]}", file=sys.stderr)
                failed = True
                continue
            print(outcome.line(), flush=True)
            for violation in outcome.verdict.violations[:SHOWN_VIOLATIONS]:
                print(f"  {violation}")
            for check, error in outcome.verdict.unknown.items():
                print(f"  check {check} raised: {error}")
            passed = outcome.verdict.valid is True
            if not passed or args.keep:
                print(f"  journals and logs: {outcome.folder}")
            failed = failed or not passed
    return 1 if failed else 0


if __name__ == "__main__":
    try:
        raise SystemExit(main())
    except KeyboardInterrupt:
        print("python -m chaos: interrupted", file=sys.stderr)
        raise SystemExit(130) from None
