"""The sign-up service's tasks: register a user, then welcome them by mail."""

from __future__ import annotations

from signup import mail
from tenure import App, Backoff, InvalidInput

app = App()

USERS: dict[str, str] = {}
"""Registered users by address (a real service keeps them in its database)."""


@app.task(retries=3, backoff=Backoff(base=60))
def send_welcome(address: str, name: str) -> str:
    """Mail the welcome message; a relay that is down is tried again later."""
    return mail.send(address, f"Welcome, {name}!", f"Hello {name}, your account is ready.")


@app.task
def register(address: str, name: str) -> str:
    """Record the user and queue their welcome message."""
    if "@" not in address:
        raise InvalidInput("address", f"not an email address: {address!r}")
    USERS[address] = name
    send_welcome.enqueue(address, name)
    return address.lower()


@app.task
async def count_users() -> int:
    return len(USERS)
