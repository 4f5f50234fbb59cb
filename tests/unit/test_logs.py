"""The ``tenure`` command's logging: records are queued for a thread that writes
them, and nothing a line carries, nor any line, is lost on the way."""

from __future__ import annotations

import io
import json
import logging
import os
import subprocess
import sys
import textwrap
import threading
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

from tenure import logs
from tenure.worker.worker import flush_logs

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def root() -> Iterator[logging.Logger]:
    """The root logger, its handlers and level put back afterwards (closing the
    handlers a test installed, which stops their writing threads)."""
    logger = logging.getLogger()
    handlers, level = list(logger.handlers), logger.level
    yield logger
    for handler in list(logger.handlers):
        logger.removeHandler(handler)
        if handler not in handlers:
            handler.close()
    for handler in handlers:
        logger.addHandler(handler)
    logger.setLevel(level)


def json_lines(stream: io.StringIO) -> list[dict[str, object]]:
    flush_logs()
    return [json.loads(line) for line in stream.getvalue().splitlines()]


def test_configure_installs_a_queue_handler_that_writes_on_its_own_thread(
    root: logging.Logger,
) -> None:
    stream = io.StringIO()
    logs.configure("info", "text", stream)
    [handler] = root.handlers
    assert isinstance(handler, logs.Queued)
    logging.getLogger("tenure.worker").info("from %s", "here")
    flush_logs()
    assert stream.getvalue().endswith(" INFO tenure.worker from here\n")


def test_a_records_extra_fields_and_traceback_reach_the_json_line(
    root: logging.Logger,
) -> None:
    stream = io.StringIO()
    logs.configure("info", "json", stream)
    log = logging.getLogger("tenure.worker")
    fields = {"task_id": "t1", "task_name": "n", "topic": "q", "attempt": 2, "duration": 0.5}
    log.error("task %s failed", "t1", extra={**fields, "status": "failed", "traceback": "Tb!"})
    try:
        raise ValueError("bad input")
    except ValueError:
        log.exception("hook %s raised", "h", extra={"task_id": "t2"})
    failed, raised = json_lines(stream)
    assert failed["message"] == "task t1 failed" and failed["level"] == "error"
    assert {k: failed[k] for k in fields} == fields
    assert failed["status"] == "failed" and failed["traceback"] == "Tb!"
    assert raised["message"] == "hook h raised" and raised["task_id"] == "t2"
    assert isinstance(raised["traceback"], str)
    assert 'raise ValueError("bad input")' in raised["traceback"]


def test_text_lines_carry_the_traceback_and_the_standard_time(root: logging.Logger) -> None:
    stream = io.StringIO()
    logs.configure("info", "text", stream)
    log = logging.getLogger("tenure.worker")
    log.warning("retrying", extra={"traceback": "Traceback (most recent call last):\n  x\n"})
    try:
        raise KeyError("k")
    except KeyError:
        log.exception("oops")
    flush_logs()
    text = stream.getvalue()
    assert "WARNING tenure.worker retrying\nTraceback (most recent call last):\n  x\n" in text
    assert "ERROR tenure.worker oops\nTraceback" in text and "KeyError: 'k'" in text
    record = logging.makeLogRecord({"created": 1_700_000_000.0421, "msecs": 42.1})
    assert logs.TextFormatter().formatTime(record) == logging.Formatter().formatTime(record)


def test_a_message_is_formatted_as_its_arguments_were_when_it_was_logged() -> None:
    handler = logs.Queued(logging.StreamHandler(io.StringIO()))
    try:
        held = ["a"]
        record = logging.LogRecord("t", logging.INFO, __file__, 1, "held %s", (held,), None)
        queued = handler.prepare(record)
        held.append("b")
        assert (queued.msg, queued.args) == ("held ['a']", None)
        assert record.args == (held,)  # other handlers still get the record as it was
        plain = logging.LogRecord("t", logging.INFO, __file__, 1, "%s %d %.1f", ("a", 1, 2.0), None)
        assert handler.prepare(plain) is plain  # formatted later, on the writing thread
    finally:
        handler.close()


def test_lines_are_written_in_order_and_none_lost_when_configured_again(
    root: logging.Logger,
) -> None:
    first, second = io.StringIO(), io.StringIO()
    logs.configure("info", "text", first)
    log = logging.getLogger("tenure.worker")
    for number in range(2000):
        log.info("line %d", number)
    logs.configure("info", "text", second)  # closes the first handler: all written
    log.info("after")
    flush_logs()
    numbers = [int(line.rsplit(" ", 1)[1]) for line in first.getvalue().splitlines()]
    assert numbers == list(range(2000))
    assert second.getvalue().endswith("after\n") and len(root.handlers) == 1


def test_lines_for_a_stream_closed_under_the_handler_are_dropped_without_a_report(
    root: logging.Logger, capsys: pytest.CaptureFixture[str]
) -> None:
    """A test's captured stderr is closed after the test while a handler that
    an in-process ``configure`` installed still holds it: each line is
    dropped, not reported as a logging error (by the writing thread, or
    written directly once the handler is closed)."""
    stream = io.StringIO()
    logs.configure("info", "text", stream)
    [handler] = root.handlers
    log = logging.getLogger("tenure.scheduler")
    log.info("written")
    handler.flush()
    assert stream.getvalue().endswith("written\n")
    stream.close()
    log.info("retention caught up")  # queued, for the writing thread
    handler.flush()
    handler.close()
    log.info("after the close")  # written directly
    handler.flush()
    assert capsys.readouterr().err == ""


class FullDisk(io.StringIO):
    def write(self, text: str) -> int:
        raise OSError(28, "No space left on device")


def test_a_stream_that_fails_otherwise_is_still_reported(
    root: logging.Logger, capsys: pytest.CaptureFixture[str]
) -> None:
    logs.configure("info", "text", FullDisk())
    [handler] = root.handlers
    logging.getLogger("tenure.worker").info("lost")
    handler.flush()
    err = capsys.readouterr().err
    assert "--- Logging error ---" in err and "No space left on device" in err
    assert "lost" in err


FACTS = {"task_id": "t1", "task_name": "n", "topic": "q", "attempt": 1, "duration": 0.25}


@pytest.mark.parametrize("formatter", [logs.TextFormatter(), logs.JsonFormatter()])
@pytest.mark.parametrize("trace", [None, "Traceback (most recent call last):\n  x\n"])
def test_a_line_reads_as_the_record_holding_the_same_facts_would(
    formatter: logging.Formatter, trace: str | None
) -> None:
    facts = {**FACTS, "status": "done"} if trace is None else {**FACTS, "traceback": trace}
    created = 1_700_000_000.0421
    line = logs.Line(
        created, logging.INFO, "tenure.worker", "task %s %s in %.3fs", ("t1", "n", 0.25), facts
    )
    record = logging.makeLogRecord(
        {
            "name": "tenure.worker",
            "levelno": logging.INFO,
            "levelname": "INFO",
            "msg": line.msg,
            "args": line.args,
            "created": created,
            "msecs": 42.1,
            **facts,
        }
    )
    assert isinstance(formatter, logs.TextFormatter | logs.JsonFormatter)
    assert formatter.line(line) == formatter.format(record)


@pytest.fixture
def worker_log() -> Iterator[tuple[logging.Logger, logs.Queued, io.StringIO]]:
    """A logger under one of its own with tenure's handler, outside the process's
    logging tree (whose loggers other tests may have given handlers): what the
    ``tenure`` command sets up, alone."""
    stream = io.StringIO()
    target = logging.StreamHandler(stream)
    target.setFormatter(logs.JsonFormatter())
    handler = logs.Queued(target)
    top, log = logging.Logger("top"), logging.Logger("top.worker")
    top.addHandler(handler)
    log.parent = top
    yield log, handler, stream
    handler.close()


def test_write_line_queues_lines_in_order_with_the_records(
    worker_log: tuple[logging.Logger, logs.Queued, io.StringIO],
) -> None:
    log, handler, stream = worker_log
    for number in range(300):
        if number % 2:
            log.info("record %d", number)
        else:
            assert logs.write_line(log, logging.INFO, "line %d", (number,), dict(FACTS))
    handler.flush()
    written = json_lines(stream)
    assert [int(line["message"].rsplit(" ", 1)[1]) for line in written] == list(range(300))
    assert {key: written[0][key] for key in FACTS} == FACTS


class Seen(logging.Filter):
    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def filter(self, record: logging.LogRecord) -> bool:
        self.records.append(record)
        return True


@pytest.mark.parametrize("where", ["logger filter", "handler filter", "another handler", "closed"])
def test_write_line_leaves_a_line_to_logging_when_more_than_its_writer_would_see_it(
    worker_log: tuple[logging.Logger, logs.Queued, io.StringIO], where: str
) -> None:
    log, handler, stream = worker_log
    assert logs._sole_handler(log, logging.INFO) is handler  # alone, it would take the line
    seen = Seen()
    if where == "logger filter":
        log.addFilter(seen)
    elif where == "handler filter":
        handler.addFilter(seen)
    elif where == "another handler":
        assert log.parent is not None
        log.parent.addHandler(logging.NullHandler())
    else:
        handler.close()
    assert not logs.write_line(log, logging.INFO, "line %d", (1,), dict(FACTS))
    handler.flush()
    assert stream.getvalue() == "" and not seen.records


def test_a_closed_handler_writes_directly(root: logging.Logger) -> None:
    stream = io.StringIO()
    logs.configure("info", "text", stream)
    handler = root.handlers[0]
    handler.close()
    logging.getLogger("tenure.worker").info("late")
    assert stream.getvalue().endswith("late\n")  # at once: no thread is left to write it


class Stuck(io.StringIO):
    """A stream whose writes wait until it is let go."""

    def __init__(self) -> None:
        super().__init__()
        self.writing, self.go = threading.Event(), threading.Event()

    def write(self, text: str) -> int:
        self.writing.set()
        self.go.wait(10)
        return super().write(text)


def test_a_stuck_stream_slows_the_loggers_down_instead_of_filling_memory(
    root: logging.Logger,
) -> None:
    stream = Stuck()
    handler = logs.Queued(logging.StreamHandler(stream), capacity=5)
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    log = logging.getLogger("t")
    log.info("first")
    assert stream.writing.wait(5)  # the writer holds "first", stuck in the write
    for number in range(5):
        log.info("queued %d", number)  # room for the capacity's worth
    late = threading.Thread(target=log.info, args=("one too many",), daemon=True)
    late.start()
    late.join(0.3)
    assert late.is_alive()  # waits for room
    stream.go.set()
    late.join(5)
    assert not late.is_alive()
    handler.close()
    assert stream.getvalue().splitlines()[-1].endswith("one too many")
    assert len(stream.getvalue().splitlines()) == 7


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork only")
def test_a_forked_child_writes_its_own_lines(root: logging.Logger, tmp_path: Path) -> None:
    path = tmp_path / "log.txt"
    with path.open("w") as stream:
        logs.configure("info", "text", stream)
        flush_logs()
        with warnings.catch_warnings():  # forking with threads: what is tested here
            warnings.simplefilter("ignore", DeprecationWarning)
            pid = os.fork()
        if pid == 0:  # the child has no writing thread: it writes directly
            logging.getLogger("child").info("from the child")
            os._exit(0)
        os.waitpid(pid, 0)
        logging.getLogger("parent").info("from the parent")
        flush_logs()
    text = path.read_text()
    assert "INFO child from the child" in text and "INFO parent from the parent" in text


def run_python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
        check=False,
    )


def test_lines_logged_just_before_exit_are_written() -> None:
    done = run_python(
        """
        import logging, sys
        from tenure import logs
        logs.configure("info", "text")
        log = logging.getLogger("tenure.worker")
        for number in range(5000):
            log.info("line %d", number)
        log.info("worker w stopped")
        sys.exit(3)
        """
    )
    lines = done.stderr.splitlines()
    assert done.returncode == 3
    assert len(lines) == 5001 and lines[-1].endswith("INFO tenure.worker worker w stopped")


def test_a_fatal_error_and_the_lines_before_it_are_written() -> None:
    done = run_python(
        """
        import logging
        from tenure import logs
        logs.configure("info", "json")
        log = logging.getLogger("tenure.worker")
        for number in range(1000):
            log.info("line %d", number)
        try:
            raise RuntimeError("the store is gone")
        except RuntimeError:
            log.critical("worker failed", exc_info=True)
            raise
        """
    )
    assert done.returncode == 1
    lines = done.stderr.splitlines()
    entries = [json.loads(line) for line in lines if line.startswith("{")]
    assert len(entries) == 1001
    # Python's traceback comes after the queued lines, not among them
    assert lines.index("Traceback (most recent call last):") == len(entries)
    assert entries[-1]["message"] == "worker failed"
    assert "RuntimeError: the store is gone" in entries[-1]["traceback"]
    assert "\nRuntimeError: the store is gone" in done.stderr  # Python's own traceback


def test_a_threads_uncaught_exception_is_printed_after_the_queued_lines() -> None:
    done = run_python(
        """
        import logging, threading
        from tenure import logs
        logs.configure("info", "json")
        def work():
            for number in range(500):
                logging.getLogger("tenure.worker").info("line %d", number)
            raise RuntimeError("the thread broke")
        thread = threading.Thread(target=work, name="busy")
        thread.start()
        thread.join()
        """
    )
    lines = done.stderr.splitlines()
    entries = [line for line in lines if line.startswith("{")]
    assert len(entries) == 500
    assert lines.index("Exception in thread busy:") == 500
    assert lines[-1] == "RuntimeError: the thread broke"
