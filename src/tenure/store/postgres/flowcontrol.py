"""The PostgreSQL store's flow control: the backend methods behind
:class:`~tenure.store.flowcontrol.FlowControl`, each one statement."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from tenure.store.flowcontrol import EXPIRED, PausedTopic, TopicAgeing, TopicLimit, TopicRate
from tenure.store.postgres import rows
from tenure.store.postgres.rows import Row
from tenure.store.types import WorkerInfo


class PostgresFlowControl:
    """Mixed into :class:`~tenure.store.postgres.PostgresStore`, which runs its
    schema's statements."""

    def _read(self, query: str, params: dict[str, Any]) -> list[Row]:
        raise NotImplementedError

    def _topic_pause(self, topic: str, now: datetime | None) -> PausedTopic:
        [row] = self._read("topic_pause", {"topic": topic, "now": now})
        return paused(row)

    def _topic_resume(self, topic: str) -> bool:
        return bool(self._read("topic_resume", {"topic": topic}))

    def _task_expire(self, limit: int, now: datetime | None) -> list[str]:
        params = {"limit": limit, "now": now, "error": json.dumps(EXPIRED.stored())}
        return [row["id"] for row in self._read("expire_tasks", params)]

    def _topics_paused(self) -> list[PausedTopic]:
        return [paused(row) for row in self._read("topics_paused", {})]

    def _topic_limit_set(self, topic: str, most: int, now: datetime | None) -> TopicLimit:
        params = {"topic": topic, "max_running": most, "now": now}
        [row] = self._read("topic_limit_set", params)
        return limit(row)

    def _topic_limit_clear(self, topic: str) -> bool:
        return bool(self._read("topic_limit_clear", {"topic": topic}))

    def _topic_limits(self) -> list[TopicLimit]:
        return [limit(row) for row in self._read("topic_limits", {})]

    def _topic_rate_set(self, topic: str, most: int, per: float, now: datetime | None) -> TopicRate:
        params = {"topic": topic, "max_starts": most, "per": per, "now": now}
        [row] = self._read("topic_rate_set", params)
        return rate(row)

    def _topic_rate_clear(self, topic: str) -> bool:
        return bool(self._read("topic_rate_clear", {"topic": topic}))

    def _topic_rates(self) -> list[TopicRate]:
        return [rate(row) for row in self._read("topic_rates", {})]

    def _rate_prune(self, now: datetime | None) -> int:
        return len(self._read("prune_rate_starts", {"now": now}))

    def _topic_ageing_set(
        self, topic: str, every: float, most: int, now: datetime | None
    ) -> TopicAgeing:
        params = {"topic": topic, "every": every, "most": most, "now": now}
        [row] = self._read("topic_ageing_set", params)
        return ageing(row)

    def _topic_ageing_clear(self, topic: str) -> bool:
        return bool(self._read("topic_ageing_clear", {"topic": topic}))

    def _topic_ageings(self) -> list[TopicAgeing]:
        return [ageing(row) for row in self._read("topic_ageings", {})]

    def _worker_scale(self, worker_id: str, concurrency: int) -> WorkerInfo | None:
        found = self._read("worker_scale", {"id": worker_id, "concurrency": concurrency})
        return rows.worker(found[0]) if found else None


def limit(row: Row) -> TopicLimit:
    at: datetime = row["set_at"]
    return TopicLimit(row["topic"], row["max_running"], at.astimezone(UTC))


def rate(row: Row) -> TopicRate:
    at: datetime = row["set_at"]
    return TopicRate(row["topic"], row["max_starts"], row["per_seconds"], at.astimezone(UTC))


def ageing(row: Row) -> TopicAgeing:
    at: datetime = row["set_at"]
    return TopicAgeing(row["topic"], row["every_seconds"], row["most"], at.astimezone(UTC))


def paused(row: Row) -> PausedTopic:
    at: datetime = row["paused_at"]
    return PausedTopic(row["topic"], at.astimezone(UTC))
