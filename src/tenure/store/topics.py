"""Paused topics: an operator's stop on a topic's new starts, kept in the store.

A pause is a row the reserve statements read themselves: no worker reserves a
task of a paused topic from the moment the pause commits, on every machine that
shares the store, and across restarts. Tasks running when it comes run on to
their end; pending ones wait, and spend no attempt. A resume deletes the row,
and workers take the topic's tasks again at their next poll.
"""

from __future__ import annotations

from abc import abstractmethod
from dataclasses import dataclass
from datetime import datetime

from tenure.store import validate


@dataclass(frozen=True, slots=True)
class PausedTopic:
    """A topic whose tasks no worker starts, since ``paused_at``."""

    topic: str
    paused_at: datetime


class Topics:
    """The store's paused topics (mixed into :class:`~tenure.store.Store`)."""

    def topic_pause(self, topic: str, *, now: datetime | None = None) -> PausedTopic:
        """Stop workers reserving ``topic``'s tasks; pausing it again keeps
        the first pause's time."""
        return self._topic_pause(validate.text(topic, "topic"), validate.moment(now, "now"))

    def topic_resume(self, topic: str) -> bool:
        """Let workers reserve ``topic``'s tasks again; ``False`` if it was
        not paused."""
        return self._topic_resume(validate.text(topic, "topic"))

    def topics_paused(self) -> list[PausedTopic]:
        """The paused topics, by name."""
        return self._topics_paused()

    @abstractmethod
    def _topic_pause(self, topic: str, now: datetime | None) -> PausedTopic: ...

    @abstractmethod
    def _topic_resume(self, topic: str) -> bool: ...

    @abstractmethod
    def _topics_paused(self) -> list[PausedTopic]: ...
