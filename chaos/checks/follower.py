"""The event followers' checks (:data:`CHECKS`), over the
journals of :mod:`chaos.follower` and the store's event log read after the drain.

The event log's contract (:mod:`tenure.events`): every committed event is
delivered, in commit order, exactly once within one follow, and at least once
across restarts for a follower that resumes after the cursor of the last event
it handled. A follower here journals each event and its cursor in one write, so
nothing it handled can be unsaved: resuming after its last line, it must get
neither a duplicate nor a gap.

- **F** every event of the log was delivered to every follower slot, and no
  follower was handed an event the log does not have (one that never
  committed, say, across a server crash); every follower alive at the end
  began to follow (journaled its ``resume``).
- **G** in order, without gap or duplicate: within one life of a follower, each
  event delivered is the one right after the previous in the log (so each
  task's events come in the order they happened); a follower started after a
  kill resumes after the last cursor its slot journaled, and its first event is
  the one right after that cursor.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from chaos.evidence import Evidence
from chaos.journal import Record
from chaos.verdict import Check

if TYPE_CHECKING:
    from chaos.verdict import Bounds, Result

SHOWN = 10
"""Events named one by one per slot and check; the rest are counted in one line."""


def deliveries(ev: Evidence, _: Bounds, out: Result) -> None:
    index = {cursor: at for at, cursor in enumerate(ev.log)}
    for slot, records in sorted(ev.deliveries.items()):
        seen = [str(r["cursor"]) for r in records if r["k"] == "seen"]
        out.figures.delivered += len(seen)
        out.figures.lag += [float(r.get("lag", 0.0)) for r in records if r["k"] == "seen"]
        delivered = set(seen)
        missing = [c for c in ev.log if c not in delivered]
        out.figures.undelivered += len(missing)
        _name(out, "F", slot, [f"event {c} never delivered" for c in missing])
        phantoms = [f"event {c} delivered, not in the store's log" for c in seen if c not in index]
        _name(out, "F", slot, phantoms)
        _in_order(slot, records, index, out)
    resumed = {r.get("pid") for records in ev.deliveries.values() for r in records}
    for life in ev.lives:
        if life.role == "follower" and life.killed is None and life.pid not in resumed:
            out.add("F", None, f"follower pid {life.pid}, alive at the end, never followed")
    out.figures.followers = len(ev.deliveries)
    out.figures.follower_kills = sum(
        1 for life in ev.lives if life.role == "follower" and life.killed is not None
    )


def _in_order(slot: int, records: list[Record], index: dict[str, int], out: Result) -> None:
    """G over one slot's journal: each life's events consecutive in the log,
    each life resuming right after the previous life's last event."""
    last: str | None = None  # the slot's last cursor journaled
    previous = -1  # its place in the log (-1: before the first)
    wrong: list[str] = []
    for record in records:
        if record["k"] == "resume":
            if record.get("after") != last:
                wrong.append(f"resumed after {record.get('after')}, its last event was {last}")
            continue
        cursor = str(record["cursor"])
        at = index.get(cursor)
        if at is not None:  # else not in the log: F names it, the order is judged without it
            if at != previous + 1:
                skipped = f"{at - previous - 1} event(s) skipped"
                why = "delivered again" if at <= previous else skipped
                wrong.append(f"event {cursor} came right after {last} ({why})")
                out.figures.redelivered += at <= previous
            previous = at
        last = cursor
    _name(out, "G", slot, wrong)


def _name(out: Result, code: str, slot: int, found: list[str]) -> None:
    for item in found[:SHOWN]:
        out.add(code, None, f"follower {slot}: {item}")
    if len(found) > SHOWN:
        out.add(code, None, f"follower {slot}: and {len(found) - SHOWN} more like these")


CHECKS = (Check("deliveries", ("F", "G"), deliveries),)
