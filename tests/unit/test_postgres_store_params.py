"""A PostgreSQL store URL's own parameters (``tenure.store.postgres.params``),
taken out of the URL before libpq reads it: ``listen=``, the direct connection
its listeners use behind a pooler, refused in one line when it cannot be a
PostgreSQL URL; and ``schema=``, where tenure's tables live, refused in one line
when it is not a plain SQL name."""

from __future__ import annotations

from urllib.parse import quote

import pytest

from tenure import ConfigError
from tenure.store.postgres.params import store_params
from tenure.store.url import redact

POOLED = "postgresql://app@pgbouncer:6432/jobs"


def split_listen(url: str) -> tuple[str, str | None]:
    params = store_params(url)
    return params.url, params.listen


DIRECT = "postgresql://app@db:5432/jobs"


@pytest.mark.parametrize(
    ("url", "rest", "listen"),
    [
        (POOLED, POOLED, None),
        (f"{POOLED}?sslmode=disable", f"{POOLED}?sslmode=disable", None),
        (f"{POOLED}?listen={DIRECT}", POOLED, DIRECT),
        (f"{POOLED}?listen={quote(DIRECT, safe='')}", POOLED, DIRECT),
        (
            f"{POOLED}?connect_timeout=3&listen={quote(DIRECT + '?sslmode=require', safe='')}"
            "&options=-c%20work_mem%3D64MB",
            f"{POOLED}?connect_timeout=3&options=-c%20work_mem%3D64MB",
            f"{DIRECT}?sslmode=require",
        ),
        ("host=pgbouncer port=6432 dbname=jobs", "host=pgbouncer port=6432 dbname=jobs", None),
        (
            "host=pgbouncer port=6432 listen='host=db port=5432 dbname=jobs' dbname=jobs",
            "host=pgbouncer port=6432 dbname=jobs",
            "host=db port=5432 dbname=jobs",
        ),
        ("host=pgbouncer listen=" + DIRECT, "host=pgbouncer", DIRECT),
    ],
)
def test_listen_is_taken_out_and_the_rest_kept_as_written(
    url: str, rest: str, listen: str | None
) -> None:
    assert split_listen(url) == (rest, listen)


@pytest.mark.parametrize(
    ("url", "says"),
    [
        (f"{POOLED}?listen=", "listen= is empty"),
        (f"{POOLED}?listen=%20", "listen= is empty"),
        (f"{POOLED}?listen={DIRECT}&listen={DIRECT}", "more than once"),
        (f"{POOLED}?listen=mysql://app@db/jobs", "listen= is not a PostgreSQL URL"),
        (f"{POOLED}?listen=db:5432", "listen= is not a PostgreSQL URL"),
        (f"{POOLED}?listen=postgresql://app@db/jobs%3Fcolour%3Dred", "listen= does not parse"),
        ("host=pgbouncer listen='host=db' listen='host=db2'", "more than once"),
        ("host=pgbouncer listen=''", "listen= is empty"),
    ],
)
def test_a_listen_that_cannot_be_a_direct_url_is_refused_in_one_line(url: str, says: str) -> None:
    with pytest.raises(ConfigError, match=says) as refused:
        split_listen(url)
    assert "\n" not in str(refused.value)
    if "not a PostgreSQL URL" in says or "empty" in says:
        assert "listen=postgresql://" in str(refused.value)  # says what to write


def test_a_refusal_never_shows_a_password() -> None:
    with pytest.raises(ConfigError, match="does not parse") as refused:
        split_listen(f"{POOLED}?listen=postgresql://app:s3cret@db/jobs%3Fcolour%3Dred")
    assert "s3cret" not in str(refused.value)


def test_log_lines_show_no_password_of_the_listen_url() -> None:
    encoded = quote("postgresql://app:inner@db:5432/jobs?password=again", safe="")
    shown = redact(f"postgresql://app:outer@pgbouncer:6432/jobs?listen={encoded}&sslmode=disable")
    assert not {"outer", "inner", "again"} & set(shown.replace("@", " ").replace("=", " ").split())
    assert shown.count("***") == 3 and "listen=postgresql://app:***@db:5432/jobs" in shown


@pytest.mark.parametrize(
    ("url", "rest", "schema"),
    [
        (DIRECT, DIRECT, "tenure"),
        (f"{DIRECT}?schema=jobs", DIRECT, "jobs"),
        (f"{DIRECT}?sslmode=disable&schema=app_queue", f"{DIRECT}?sslmode=disable", "app_queue"),
        ("host=db dbname=jobs schema=public", "host=db dbname=jobs", "public"),
        (f"{DIRECT}?schema=jobs&listen={quote(DIRECT, safe='')}", DIRECT, "jobs"),
    ],
)
def test_the_schema_is_taken_out_of_the_url(url: str, rest: str, schema: str) -> None:
    params = store_params(url)
    assert (params.url, params.schema) == (rest, schema)


def test_the_schema_comes_from_the_environment_unless_the_url_names_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TENURE_SCHEMA", "from_env")
    assert store_params(DIRECT).schema == "from_env"
    assert store_params(f"{DIRECT}?schema=from_url").schema == "from_url"


@pytest.mark.parametrize(
    "schema", ["Jobs", "1jobs", "jobs;drop", 'jo"bs', "pg_catalog", "x" * 64, "", "my-jobs"]
)
def test_a_schema_that_is_not_a_plain_name_is_refused_in_one_line(schema: str) -> None:
    with pytest.raises(ConfigError, match="not a plain lower-case SQL name") as raised:
        store_params(f"{DIRECT}?schema={quote(schema, safe='')}")
    assert "\n" not in str(raised.value)


def test_a_schema_given_twice_is_refused() -> None:
    with pytest.raises(ConfigError, match="schema= more than once"):
        store_params(f"{DIRECT}?schema=a&schema=b")
