"""How tenure's long-running commands log: readable text on a terminal, or one JSON
object per line for log pipelines.

Library code only calls :mod:`logging`; this module is what the ``tenure`` command
installs. Task log records carry their facts as attributes (``task_id``,
``task_name``, ``topic``, ``attempt``, ``duration``, ``status``, ``error`` and, for a
failure, ``traceback`` — the text of the exception's traceback, which may come from
another process), so both formats say the same thing and a failure's traceback is
never lost.

A worker logs a line per task: formatted and written on the threads that run and
complete tasks, its lines would cost them more than the tasks themselves, and
the handler's lock would make them wait on each other and on the stream. So the
handler :func:`configure` installs only queues each record, as it is (its
``extra`` attributes and ``exc_info`` intact), and one thread formats and writes
them, a burst in one write. The queue is bounded: a stream that cannot keep up
slows the loggers down instead of filling memory. ``flush()`` waits until what
was queued is written (a worker flushes before it returns), and closing the
handler — :func:`logging.shutdown` does it at exit — writes the rest and stops
the thread. An uncaught exception's traceback is printed after the lines queued
before it, never in the middle of them. A process killed by SIGKILL loses the
lines still queued; one forked from a logging process writes its own lines
directly.

A worker's most frequent line, a task's success, may skip the record altogether
(:func:`write_line`): when nothing but this handler would see it (no filter on
the way, no other handler), its facts are queued as a :class:`Line` and the
writing thread formats it as it would the record. Making the record and passing
it through :mod:`logging` was most of what a line cost, and a worker's threads
share one interpreter lock: at INFO, a drain ran 17% slower than at WARNING.
"""

from __future__ import annotations

import contextlib
import copy
import json
import logging
import os
import queue
import sys
import threading
import time
import weakref
from datetime import UTC, datetime
from logging.handlers import QueueHandler, QueueListener
from typing import TYPE_CHECKING, Any, NamedTuple, TextIO

if TYPE_CHECKING:
    Stream = logging.StreamHandler[TextIO]

LEVELS = ("debug", "info", "warning", "error", "critical")
FORMATS = ("text", "json")

TASK_FIELDS = ("task_id", "task_name", "topic", "attempt", "duration", "status", "error")
"""Record attributes a task's log lines may carry, in the order JSON lines show them."""

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s %(message)s"

CAPACITY = 10_000
"""Records queued for the writing thread before loggers wait for room."""
BURST = 512
"""Lines written at most in one write."""
YIELD_EVERY = 16
"""Lines formatted between two moments the writing thread lets go of the
interpreter lock. A thread that wants the lock otherwise waits for the holder
to be asked to let go, every 5 ms (``sys.getswitchinterval()``): formatting a
burst, the writer held up a worker's fetching and completing threads, and a
drain at INFO ran 13-16% slower than at WARNING even after the lines' cost was
halved; yielding every 16 lines, within the noise of it."""
GATHER = 0.02
"""Seconds the writing thread lets records gather after each write: woken once
per burst, not once per record (a lone record is written at once)."""
ROOM_PAUSE = 0.001
"""Seconds between looks for room in a full queue."""
WAIT = 5.0
"""Seconds ``flush`` and ``close`` wait for the writing thread, which may be
stuck on a stream nobody reads: a worker's exit is never held up for good."""

_JSON = json.JSONEncoder(default=str)
"""``json.dumps(..., default=str)``, its encoder made once instead of per line."""

_PLAIN = frozenset({str, int, float, bool, type(None)})
"""Argument types a message can be formatted from later: they never change."""


class Line(NamedTuple):
    """A log line queued without a record (:func:`write_line`): what the record
    would have held that the formatters print."""

    created: float
    levelno: int
    name: str
    msg: str
    args: tuple[Any, ...]
    fields: dict[str, Any]
    """The record's ``extra`` attributes (a task's, see :data:`TASK_FIELDS`)."""

    def message(self) -> str:
        """The message, as ``LogRecord.getMessage`` makes it."""
        return self.msg % self.args if self.args else self.msg


if TYPE_CHECKING:
    Records = queue.SimpleQueue[logging.LogRecord | Line | None]


class TextFormatter(logging.Formatter):
    """The usual one-line format, followed by a failed task's traceback."""

    def __init__(self) -> None:
        super().__init__(TEXT_FORMAT)
        self._second: tuple[int, str] = (-1, "")

    def format(self, record: logging.LogRecord) -> str:
        if record.exc_info or record.exc_text or record.stack_info:
            text = super().format(record)
        else:  # what ``super().format`` makes of TEXT_FORMAT, in a third of its time
            record.message = record.getMessage()
            record.asctime = self.formatTime(record)
            text = f"{record.asctime} {record.levelname} {record.name} {record.message}"
        return _traced(text, getattr(record, "traceback", None))

    def line(self, line: Line) -> str:
        """What :meth:`format` makes of a record that holds what ``line`` does."""
        asctime = self._asctime(line.created, (line.created - int(line.created)) * 1000)
        text = f"{asctime} {logging.getLevelName(line.levelno)} {line.name} {line.message()}"
        return _traced(text, line.fields.get("traceback"))

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:  # noqa: N802
        """The standard ``asctime``, its seconds formatted once per second: a
        worker writes thousands of lines in each."""
        if datefmt is not None:
            return super().formatTime(record, datefmt)
        return self._asctime(record.created, record.msecs)

    def _asctime(self, created: float, msecs: float) -> str:
        whole = int(created)
        second, text = self._second
        if second != whole:
            text = time.strftime(self.default_time_format, self.converter(created))
            self._second = (whole, text)
        return f"{text},{int(msecs):03d}"  # as logging's default_msec_format


def _traced(text: str, trace: str | None) -> str:
    """A line followed by a failed task's traceback, if it has one."""
    return f"{text}\n{trace.rstrip()}" if trace else text


class JsonFormatter(logging.Formatter):
    """One JSON object per record: time, level, logger, message, the task's fields
    that the record carries, and a traceback when there is one."""

    def format(self, record: logging.LogRecord) -> str:
        trace = getattr(record, "traceback", None)
        if record.exc_info:
            trace = self.formatException(record.exc_info)
        elif record.exc_text:
            trace = record.exc_text
        facts = Line(
            record.created, record.levelno, record.name, record.getMessage(), (), vars(record)
        )
        return _json_line(facts, trace)

    def line(self, line: Line) -> str:
        """What :meth:`format` makes of a record that holds what ``line`` does."""
        return _json_line(line, line.fields.get("traceback"))


def _json_line(line: Line, trace: str | None) -> str:
    found: dict[str, Any] = {
        "time": datetime.fromtimestamp(line.created, UTC).isoformat(),
        "level": logging.getLevelName(line.levelno).lower(),
        "logger": line.name,
        "message": line.message(),
    }
    for field in TASK_FIELDS:
        value = line.fields.get(field)
        if value is not None:
            found[field] = value
    if trace:
        found["traceback"] = trace
    return _JSON.encode(found)


class _Flush(logging.LogRecord):
    """Queued by ``flush``: set once the writer has written what came before it."""

    def __init__(self) -> None:
        super().__init__(__name__, logging.NOTSET, __file__, 0, "", None, None)
        self.done = threading.Event()


class _Writer(QueueListener):
    """The thread that formats the queued records and writes them to the target's
    stream: a burst of lines in one write and one flush."""

    def __init__(self, records: Records, target: Stream) -> None:
        super().__init__(records, target)
        self.records = records
        self.target = target
        self._lines: list[str] = []

    def start(self) -> None:
        super().start()
        if self._thread is not None:
            self._thread.name = "tenure-log-writer"

    def dequeue(self, block: bool) -> logging.LogRecord:
        """The next record; once none is queued, what was gathered is written
        and more records are let gather before the thread waits for them."""
        try:
            return self.records.get_nowait()  # type: ignore[return-value]
        except queue.Empty:
            self.write()
        time.sleep(GATHER)
        return self.records.get(block)  # type: ignore[return-value]

    def handle(self, record: logging.LogRecord | Line) -> None:
        if isinstance(record, _Flush):
            self.write()
            record.done.set()
            return
        try:
            text = self._format(record)
            self._lines.append(text + self.target.terminator)
        except Exception:  # a record that cannot be formatted: said, then skipped
            self.target.handleError(_as_record(record))
        if len(self._lines) >= BURST:
            self.write()
        elif len(self._lines) % YIELD_EVERY == 0:
            time.sleep(0)  # lets a thread that waits for the interpreter lock have it

    def _format(self, record: logging.LogRecord | Line) -> str:
        if not isinstance(record, Line):
            return self.target.format(record)
        formatter = self.target.formatter
        if isinstance(formatter, TextFormatter | JsonFormatter):
            return formatter.line(record)
        return self.target.format(_as_record(record))  # a formatter set since it was queued

    def write(self) -> None:
        if not self._lines:
            return
        text, self._lines = "".join(self._lines), []
        target = self.target
        with target.lock or contextlib.nullcontext():
            if closed(target.stream):
                return
            try:
                target.stream.write(text)
                target.stream.flush()
            except Exception:  # the stream failed (a full disk, a broken pipe): as logging says it
                target.handleError(logging.makeLogRecord({"msg": text.rstrip()}))

    def stop(self) -> None:
        self.finish()

    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def finish(self, timeout: float = WAIT) -> bool:
        """Write what is queued and end the thread; ``False`` if it did not end
        within ``timeout`` seconds (its stream blocks)."""
        thread = self._thread
        if thread is None:
            return True
        self.enqueue_sentinel()
        thread.join(timeout)
        if thread.is_alive():
            return False
        self._thread = None
        while True:  # queued after the sentinel, by threads that raced the close
            try:
                record = self.records.get_nowait()
            except queue.Empty:
                break
            if record is not None:
                self.handle(record)
        self.write()
        return True


class Queued(QueueHandler):
    """Queues each record for the writing thread: the logging call returns without
    formatting or writing anything. Records are passed on as they are, so the
    formatters see every ``extra`` attribute and the exception; a message whose
    arguments could change before it is written (anything but strings, numbers
    and ``None``) is formatted at once. The writing thread's own records, those
    of a forked child, and those logged after :meth:`close` are written by the
    caller."""

    def __init__(self, target: Stream, capacity: int = CAPACITY) -> None:
        records: Records = queue.SimpleQueue()
        super().__init__(records)
        self.records = records
        self.target = target
        self.capacity = capacity
        self._writer = _Writer(records, target)
        self._writer.start()
        self._writer_id = self._writer_thread()
        self._direct = False
        _LIVE.add(self)

    def _writer_thread(self) -> int | None:
        thread = self._writer._thread
        return None if thread is None else thread.ident

    def prepare(self, record: logging.LogRecord) -> logging.LogRecord:
        if type(record.msg) is str and _formats_later(record.args):
            return record
        settled = copy.copy(record)  # other handlers keep the record as it was
        settled.msg, settled.args = record.getMessage(), None
        return settled

    def emit(self, record: logging.LogRecord) -> None:
        queueing = not self._direct and threading.get_ident() != self._writer_id
        if queueing and (self.records.qsize() < self.capacity or self._room()):
            try:
                self.records.put(self.prepare(record))
            except Exception:
                self.handleError(record)
            return
        if not closed(self.target.stream):
            self.target.handle(record)

    def put_line(self, line: Line) -> bool:
        """Queue ``line`` for the writing thread, as :meth:`emit` would its
        record; ``False`` (nothing queued) where :meth:`emit` would write
        directly, or the handler's formatter is not one of tenure's."""
        if not isinstance(self.target.formatter, TextFormatter | JsonFormatter):
            return False
        if not _formats_later(line.args):
            line = line._replace(msg=line.message(), args=())
        with self.lock or contextlib.nullcontext():
            if self._direct or threading.get_ident() == self._writer_id:
                return False
            if self.records.qsize() >= self.capacity and not self._room():
                return False
            self.records.put(line)
        return True

    def _room(self) -> bool:
        """Wait until the writer, behind (a slow stream, or one nobody reads),
        makes room, as a direct write to that stream would wait, instead of
        queueing without bound; ``False`` (write directly from now on) if the
        writer is gone."""
        while self.records.qsize() >= self.capacity:
            if not self._writer.alive():
                self._direct = True
                return False
            time.sleep(ROOM_PAUSE)
        return True

    def flush(self) -> None:
        """Return once every record queued before is written (at most ``WAIT`` s)."""
        if self._direct or not self._writer.alive() or threading.get_ident() == self._writer_id:
            if not closed(self.target.stream):
                self.target.flush()
            return
        mark = _Flush()
        self.records.put(mark)
        mark.done.wait(WAIT)

    def close(self) -> None:
        """Write what is queued, stop the thread; later records are written directly."""
        with self.lock or contextlib.nullcontext():
            self._direct = True
        self._writer.finish()
        super().close()

    def write_directly(self) -> None:
        """From now on, write each record in the logging thread (a forked child,
        which has no writing thread)."""
        self._direct = True


def closed(stream: object) -> bool:
    """Whether ``stream`` was closed under the handler: what is written to it
    is dropped, not reported. A closed stream never opens again, so each
    record would be one more report of the same error, printed where the
    lines could not go. It happens to a test's captured stderr, closed after
    the test while an in-process ``configure`` still holds it (a scheduler
    thread logs on), and to a process whose stderr its parent closed. Any
    other failure of the stream (a full disk, a broken pipe) is still
    reported, as :mod:`logging` reports it."""
    return bool(getattr(stream, "closed", False))


def _formats_later(args: object) -> bool:
    """Whether a message can be formatted from ``args`` on the writing thread:
    none, or a tuple of values that never change (:data:`_PLAIN`)."""
    return not args or (type(args) is tuple and _PLAIN.issuperset(map(type, args)))


def write_line(
    logger: logging.Logger, level: int, msg: str, args: tuple[Any, ...], fields: dict[str, Any]
) -> bool:
    """Queue a line of ``logger`` at ``level`` (enabled: the caller asked) for
    tenure's writing thread without making a record, if that thread is all that
    would see it: no filter on the way, no disabled logger, and a
    :class:`Queued` handler the only one the record would reach. ``False``:
    nothing was written, and the caller logs the line as usual."""
    handler = _sole_handler(logger, level)
    return isinstance(handler, Queued) and handler.put_line(
        Line(time.time(), level, logger.name, msg, args, fields)
    )


def _sole_handler(logger: logging.Logger, level: int) -> logging.Handler | None:
    """The one handler a record of ``logger`` at ``level`` would reach, if
    nothing else would look at it on the way."""
    found: logging.Handler | None = None
    current: logging.Logger | None = logger
    while current is not None:
        if current.filters or current.disabled:
            return None
        for handler in current.handlers:
            if found is not None or handler.filters or level < handler.level:
                return None
            found = handler
        current = current.parent if current.propagate else None
    return found


def _as_record(item: logging.LogRecord | Line) -> logging.LogRecord:
    """``item`` as a record (a :class:`Line`'s, for a formatter or an error report)."""
    if isinstance(item, logging.LogRecord):
        return item
    return logging.makeLogRecord(
        {
            **item.fields,
            "name": item.name,
            "levelno": item.levelno,
            "levelname": logging.getLevelName(item.levelno),
            "msg": item.msg,
            "args": item.args,
            "created": item.created,
            "msecs": (item.created - int(item.created)) * 1000,
        }
    )


_LIVE: weakref.WeakSet[Queued] = weakref.WeakSet()
"""Every :class:`Queued` handler, for a forked child to write directly."""


def _after_fork() -> None:
    for handler in list(_LIVE):
        handler.write_directly()


os.register_at_fork(after_in_child=_after_fork)


def _flush_all() -> None:
    for handler in list(_LIVE):
        handler.flush()


def _print_after_flush(excepthook: Any) -> Any:
    """``excepthook``, run once the queued lines are written: Python prints an
    uncaught exception's traceback in pieces, and the writing thread's lines
    would otherwise land among them, on the same stream."""

    def hook(*info: Any) -> None:
        _flush_all()
        excepthook(*info)

    hook.flushes_logs = True  # type: ignore[attr-defined]
    return hook


def _hook_uncaught() -> None:
    if not getattr(sys.excepthook, "flushes_logs", False):
        sys.excepthook = _print_after_flush(sys.excepthook)
    if not getattr(threading.excepthook, "flushes_logs", False):
        threading.excepthook = _print_after_flush(threading.excepthook)


def configure(level: str = "info", fmt: str = "text", stream: TextIO | None = None) -> None:
    """Send every log record at ``level`` or above to ``stream`` (stderr) in
    ``fmt``, through a writing thread (see above); replaces handlers installed
    before, so it may be called again."""
    target = logging.StreamHandler(stream or sys.stderr)
    target.setFormatter(JsonFormatter() if fmt == "json" else TextFormatter())
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
        if isinstance(old, Queued):
            old.close()
    root.addHandler(Queued(target))
    root.setLevel(level.upper())
    _hook_uncaught()
    # The connection pool warns of each failed reconnection attempt, a dozen
    # times per outage; tenure reports the operations that fail, in its words.
    # The pool's errors still show.
    logging.getLogger("psycopg.pool").setLevel(logging.ERROR)
