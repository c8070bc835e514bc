"""The one way brainevent runs a compiler (ninja, the preprocessor, NVRTC's worker). A compile gets
``BRAINEVENT_COMPILE_TIMEOUT`` seconds; past it, on Ctrl-C or any other exception, it is stopped with
everything it started before the exception goes on, so the caller's locks and staging unwind at once."""

from __future__ import annotations

import contextlib
import logging
import math
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol, TypeVar

from .. import config
from ..errors import CompileError

log = logging.getLogger("brainevent.build")

# Without verbose=True a long compile says it is still running, this often (seconds).
PROGRESS_INTERVAL_S = 10.0


class Job(Protocol):
    """A compile in progress: ``wait`` says within ``seconds`` (a signal wakes it) whether it
    finished, ``stop`` ends it and all it started, ``output`` is what it printed so far."""

    def wait(self, seconds: float) -> bool: ...
    def stop(self) -> None: ...
    def output(self) -> str: ...


J = TypeVar("J", bound=Job)


def supervise(start: Callable[[], J], what: str, **data: Any) -> J:
    """The job ``start()`` starts (compiling ``what``), once finished; ``CompileError``
    (``timed_out``, with ``data``) past the timeout. Anything raised meanwhile (KeyboardInterrupt)
    stops the job first."""
    timeout = config.COMPILE_TIMEOUT.get()
    started = time.monotonic()
    deadline = math.inf if timeout is None else started + timeout
    next_note = started + PROGRESS_INTERVAL_S
    job: J | None = None
    try:  # from the start: an interrupt while the job starts must stop it too
        job = start()
        while not job.wait(min(max(min(next_note, deadline) - time.monotonic(), 0.01), 1.0)):
            now = time.monotonic()
            if now >= deadline:
                break
            if now >= next_note:
                log.info("still compiling %s (%.0f s)", what, now - started)
                next_note += PROGRESS_INTERVAL_S
        else:
            return job
    except BaseException:
        if job is not None:
            job.stop()
        raise
    job.stop()
    message = (
        f"compiling {what} timed out: it did not finish within {timeout:g} s and was stopped. A compiler "
        f"may be hanging; if the compile is just slow, raise BRAINEVENT_COMPILE_TIMEOUT (now {timeout:g}), "
        "in seconds."
    )
    raise CompileError(message, log=job.output(), timed_out=True, timeout_s=timeout, **data)


class ProcessJob:
    """A command in a session of its own (so that stopping it stops what it started), its
    output (stderr with stdout) collected by a thread as it comes; ``verbose`` logs each line."""

    def __init__(self, command: Sequence[str], cwd: Path, verbose: bool = False) -> None:
        self.lines: list[str] = []
        self.proc = subprocess.Popen(
            command,
            cwd=cwd,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        self.reader = threading.Thread(target=self._pump, args=(verbose,), daemon=True)
        self.reader.start()

    def _pump(self, verbose: bool) -> None:
        assert self.proc.stdout is not None
        for raw in iter(self.proc.stdout.readline, b""):
            line = raw.decode("utf-8", "replace")
            self.lines.append(line)
            if verbose:
                log.info("%s", line.rstrip())

    def wait(self, seconds: float) -> bool:
        # Joins the reader, which wakes as soon as the output ends (Popen.wait polls, 25 ms
        # late); a second at most: the command may exit while a process it started (a
        # compiler server) still holds its output open.
        self.reader.join(timeout=seconds)
        if self.reader.is_alive() and self.proc.poll() is None:
            return False
        self.proc.wait()
        self.reader.join(timeout=1.0)
        return True

    def stop(self) -> None:
        """SIGTERM to its session (ninja passes it on to its commands), SIGKILL if it lingers."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        self.reader.join(timeout=10)

    def output(self) -> str:
        return "".join(self.lines)

    @property
    def returncode(self) -> int | None:
        return self.proc.returncode
