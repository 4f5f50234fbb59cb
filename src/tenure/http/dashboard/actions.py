"""What the dashboard's forms send, read within bounds, and what retry and
cancel did, told once.

A form is read only as ``application/x-www-form-urlencoded`` (what the pages'
forms send) and only up to :data:`MAX_FORM` bytes, before anything else is
looked at: a POST from anyone (the login page takes them) can neither make the
server hold a large body in memory nor spool a file to disk. A bulk action
names at most :data:`MAX_SELECTION` tasks, or changes none; it tries each
named task, and its notice counts the tasks changed, those refused (gone, or in
a status that does not allow it) and those not tried because the store failed
halfway.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from urllib.parse import parse_qsl

from starlette.datastructures import FormData, UploadFile
from starlette.exceptions import HTTPException
from starlette.requests import Request

from tenure.admin import TaskAdmin
from tenure.errors import StoreError, TenureError

log = logging.getLogger("tenure.http")

MAX_FORM = 1024 * 1024
"""Bytes a form may have: the largest selection of the longest ids fits."""

MAX_FIELDS = 2000
"""Fields a form may have."""

MAX_SELECTION = 500
"""Tasks one bulk action may name."""

ACTIONS = ("retry", "cancel")

FORM_TYPE = "application/x-www-form-urlencoded"


async def read_form(request: Request) -> FormData:
    """The request's form, read as it arrives; ``HTTPException`` (415, 413,
    400) if it is not a urlencoded form of at most :data:`MAX_FORM` bytes and
    :data:`MAX_FIELDS` fields."""
    kind = request.headers.get("content-type", "").partition(";")[0].strip().lower()
    if kind not in (FORM_TYPE, ""):  # an empty form may come without a type
        raise HTTPException(415, f"This form must be sent as {FORM_TYPE}.")
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_FORM:
            raise HTTPException(413, f"This form is over the limit of {MAX_FORM:,} bytes.")
    pairs: list[tuple[str, str | UploadFile]] = []
    try:
        # As browsers send it: percent-escapes in UTF-8, anything else byte for byte.
        pairs += parse_qsl(
            body.decode("latin-1"), keep_blank_values=True, max_num_fields=MAX_FIELDS,
            encoding="utf-8", errors="replace",
        )  # fmt: skip
    except ValueError:
        raise HTTPException(400, f"This form has more than {MAX_FIELDS} fields.") from None
    return FormData(pairs)


def selection(form: FormData) -> list[str]:
    """The ids a bulk action names, each once, in their order; ``HTTPException``
    (400) past :data:`MAX_SELECTION`, so that nothing is changed."""
    ids = list(dict.fromkeys(str(value) for value in form.getlist("id")))
    if len(ids) > MAX_SELECTION:
        message = f"At most {MAX_SELECTION} tasks at once ({len(ids)} chosen); none was changed."
        raise HTTPException(400, message)
    return ids


@dataclass(frozen=True)
class Outcome:
    """What a retry or cancel of some tasks did."""

    action: str
    changed: int = 0
    refused: int = 0
    untried: int = 0

    def cookie(self) -> str:
        """The notice's cookie value: counts, never text, so that nobody can
        make the page say something of their own by planting the cookie."""
        return f"{self.action}-{self.changed}-{self.refused}-{self.untried}"

    @classmethod
    def of_cookie(cls, value: str) -> Outcome | None:
        found = re.fullmatch(r"(retry|cancel)-([0-9]{1,6})-([0-9]{1,6})-([0-9]{1,6})", value)
        if found is None:
            return None
        action, changed, refused, untried = found.groups()
        return cls(action, int(changed), int(refused), int(untried))

    def notice(self) -> str:
        """The outcome in a sentence or three."""
        done = "Retried" if self.action == "retry" else "Cancelled"
        notice = f"{done} {self.changed} task{'s' * (self.changed != 1)}."
        if self.refused:
            notice += f" {self.refused} could not be: gone, or a status that does not allow it."
        if self.untried:
            notice += (
                f" {self.untried} {'was' if self.untried == 1 else 'were'} not tried:"
                " the store failed (the server's log says why); try again."
            )
        return notice


def apply(admin: Callable[[], TaskAdmin], action: str, ids: Sequence[str]) -> Outcome:
    """Retry or cancel each task, one after the other: a task in a status that
    does not allow it, or gone, is refused and the next one tried; once the
    store fails, the rest are counted as not tried."""
    changed = refused = 0
    for done, task_id in enumerate(ids):
        try:
            tasks = admin()
            (tasks.retry if action == "retry" else tasks.cancel)(task_id)
            changed += 1
        except StoreError as exc:
            log.warning("dashboard %s stopped at %d of %d tasks: %s", action, done, len(ids), exc)
            return Outcome(action, changed, refused, len(ids) - done)
        except TenureError:
            refused += 1
        except Exception:
            log.exception("dashboard %s failed after %d of %d tasks", action, done, len(ids))
            return Outcome(action, changed, refused, len(ids) - done)
    return Outcome(action, changed, refused)
