"""Sends mail through the company's relay; tests replace ``send``."""

from __future__ import annotations

import smtplib
import uuid
from email.message import EmailMessage

RELAY = "localhost"


def send(address: str, subject: str, body: str) -> str:
    """Send one message; returns its Message-ID."""
    message = EmailMessage()
    message["From"], message["To"], message["Subject"] = "hello@example.com", address, subject
    message["Message-ID"] = f"<{uuid.uuid4()}@example.com>"
    message.set_content(body)
    with smtplib.SMTP(RELAY) as relay:
        relay.send_message(message)
    return str(message["Message-ID"])
