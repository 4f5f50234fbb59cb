"""The SQLite store's flow control: the backend methods behind
:class:`~tenure.store.flowcontrol.FlowControl`, each a statement in its own
transaction."""

from __future__ import annotations

import json
import sqlite3
from contextlib import AbstractContextManager
from datetime import datetime

from tenure.clock import epoch_or_now, from_epoch
from tenure.store.flowcontrol import EXPIRED, PausedTopic, TopicAgeing, TopicLimit, TopicRate
from tenure.store.sqlite import rows
from tenure.store.sqlite.schema import Q
from tenure.store.types import WorkerInfo

EXPIRED_JSON = json.dumps(EXPIRED.stored())


class SQLiteFlowControl:
    """Mixed into :class:`~tenure.store.sqlite.SQLiteStore`, which provides its
    connections."""

    def _use(self) -> AbstractContextManager[sqlite3.Connection]:
        raise NotImplementedError

    def _write(self) -> AbstractContextManager[sqlite3.Connection]:
        raise NotImplementedError

    def _topic_pause(self, topic: str, now: datetime | None) -> PausedTopic:
        with self._write() as conn:
            row = conn.execute(
                Q["topic_pause"], {"topic": topic, "now": epoch_or_now(now)}
            ).fetchone()
        return PausedTopic(row["topic"], from_epoch(row["paused_at"]))

    def _topic_resume(self, topic: str) -> bool:
        with self._write() as conn:
            return bool(conn.execute(Q["topic_resume"], {"topic": topic}).fetchall())

    def _task_expire(self, limit: int, now: datetime | None) -> list[str]:
        params = {"limit": limit, "now": epoch_or_now(now), "error": EXPIRED_JSON}
        with self._write() as conn:
            return [row["id"] for row in conn.execute(Q["expire_tasks"], params).fetchall()]

    def _topic_limit_set(self, topic: str, most: int, now: datetime | None) -> TopicLimit:
        params = {"topic": topic, "max_running": most, "now": epoch_or_now(now)}
        with self._write() as conn:
            row = conn.execute(Q["topic_limit_set"], params).fetchone()
        return TopicLimit(row["topic"], row["max_running"], from_epoch(row["set_at"]))

    def _topic_limit_clear(self, topic: str) -> bool:
        with self._write() as conn:
            return bool(conn.execute(Q["topic_limit_clear"], {"topic": topic}).fetchall())

    def _topic_limits(self) -> list[TopicLimit]:
        with self._use() as conn:
            rows = conn.execute(Q["topic_limits"]).fetchall()
        return [TopicLimit(r["topic"], r["max_running"], from_epoch(r["set_at"])) for r in rows]

    def _topic_rate_set(self, topic: str, most: int, per: float, now: datetime | None) -> TopicRate:
        params = {"topic": topic, "max_starts": most, "per": per, "now": epoch_or_now(now)}
        with self._write() as conn:
            row = conn.execute(Q["topic_rate_set"], params).fetchone()
        return _rate(row)

    def _topic_rate_clear(self, topic: str) -> bool:
        with self._write() as conn:
            return bool(conn.execute(Q["topic_rate_clear"], {"topic": topic}).fetchall())

    def _topic_rates(self) -> list[TopicRate]:
        with self._use() as conn:
            return [_rate(row) for row in conn.execute(Q["topic_rates"]).fetchall()]

    def _rate_prune(self, now: datetime | None) -> int:
        with self._write() as conn:
            return len(conn.execute(Q["prune_rate_starts"], {"now": epoch_or_now(now)}).fetchall())

    def _topic_ageing_set(
        self, topic: str, every: float, most: int, now: datetime | None
    ) -> TopicAgeing:
        params = {"topic": topic, "every": every, "most": most, "now": epoch_or_now(now)}
        with self._write() as conn:
            row = conn.execute(Q["topic_ageing_set"], params).fetchone()
        return _ageing(row)

    def _topic_ageing_clear(self, topic: str) -> bool:
        with self._write() as conn:
            return bool(conn.execute(Q["topic_ageing_clear"], {"topic": topic}).fetchall())

    def _topic_ageings(self) -> list[TopicAgeing]:
        with self._use() as conn:
            return [_ageing(row) for row in conn.execute(Q["topic_ageings"]).fetchall()]

    def _worker_scale(self, worker_id: str, concurrency: int) -> WorkerInfo | None:
        params = {"id": worker_id, "concurrency": concurrency}
        with self._write() as conn:
            found = conn.execute(Q["worker_scale"], params).fetchone()
        return None if found is None else rows.worker(found)

    def _topics_paused(self) -> list[PausedTopic]:
        with self._use() as conn:
            rows = conn.execute(Q["topics_paused"]).fetchall()
        return [PausedTopic(row["topic"], from_epoch(row["paused_at"])) for row in rows]


def _rate(row: sqlite3.Row) -> TopicRate:
    return TopicRate(row["topic"], row["max_starts"], row["per_seconds"], from_epoch(row["set_at"]))


def _ageing(row: sqlite3.Row) -> TopicAgeing:
    return TopicAgeing(row["topic"], row["every_seconds"], row["most"], from_epoch(row["set_at"]))
